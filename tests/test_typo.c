/* test_typo.c — typo candidates: keyboard adjacency, the costs of each kind of slip on real misspellings,
 * the list (duplicates, file loading, sorted insertion, refused words), the step bound, no allocation per
 * query, and the trie walk checked against brute-force Damerau-Levenshtein over a dense random list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc_hooks.h"
#include "check.h"
#include "typing/typo.h"

static const char *WORDS[] = {"the", "then", "there", "hello", "help", "world", "word", "quick", "brown",
                              "fox", "fax", "box", "café", "naïve", "occasion", "receive", "English", "a",
                              "ab", "definitely", "separate", "their", "weird", "Straße", "μήλο"};

static ty_list *make_list(void) {
    ty_list *l = NULL;
    CHECK(ty_list_create(&l) == LAYA_OK, "create");
    if (!l) return NULL;
    CHECK(ty_list_add_words(l, WORDS, sizeof WORDS / sizeof *WORDS, 10) == LAYA_OK, "add words");
    CHECK(ty_list_add(l, "the", 3, 90) == LAYA_OK, "add duplicate");
    CHECK(ty_list_finish(l) == LAYA_OK, "finish");
    return l;
}

/* The first candidate for typed, and its edits and cost. */
static int best(const ty_list *l, const char *typed, const char *want, int edits) {
    ty_cand c[8];
    size_t n = 0;
    laya_status st = ty_candidates(l, typed, strlen(typed), NULL, c, 8, &n);
    int ok = st == LAYA_OK && n > 0 && c[0].len == strlen(want) && memcmp(c[0].word, want, c[0].len) == 0 &&
             c[0].edits == edits;
    CHECK(ok, "%s -> %s (%d edits): got %.*s (%d edits, cost %.2f), %zu found", typed, want, edits,
          n ? (int)c[0].len : 4, n ? c[0].word : "none", n ? c[0].edits : -1, n ? c[0].cost : 0.0, n);
    return ok;
}

static void test_keys(void) {
    CHECK(ty_keys_adjacent('q', 'w') && ty_keys_adjacent('a', 's') && ty_keys_adjacent('s', 'e') &&
              ty_keys_adjacent('g', 'h') && ty_keys_adjacent('z', 'a') && ty_keys_adjacent('A', 's') &&
              ty_keys_adjacent('1', 'q') && ty_keys_adjacent('m', 'n') && ty_keys_adjacent('l', 'p'),
          "neighbours");
    CHECK(!ty_keys_adjacent('q', 'p') && !ty_keys_adjacent('a', 'l') && !ty_keys_adjacent('q', 's') &&
              !ty_keys_adjacent('a', 'a') && !ty_keys_adjacent('e', 0xE9) && !ty_keys_adjacent('z', 'd'),
          "not neighbours");
}

static void test_slips(void) {
    ty_list *l = make_list();
    if (!l) return;
    uint32_t count = 0;
    CHECK(ty_list_size(l) == sizeof WORDS / sizeof *WORDS, "duplicates merged: %zu", ty_list_size(l));
    CHECK(ty_list_find(l, "the", 3, &count) && count == 100, "the: %u", count);
    CHECK(!ty_list_find(l, "th", 2, NULL) && !ty_list_find(l, "thee", 4, NULL), "find misses");
    best(l, "teh", "the", 1);            /* transposition */
    best(l, "helo", "hello", 1);         /* an undoubled letter beats help's o/p neighbour */
    best(l, "hrllo", "hello", 1);        /* neighbouring key */
    best(l, "helllo", "hello", 1);       /* a letter typed twice */
    best(l, "cafe", "café", 1);          /* accent */
    best(l, "english", "English", 0);    /* case only */
    best(l, "ocasion", "occasion", 1);
    best(l, "recieve", "receive", 1);
    best(l, "definately", "definitely", 1);
    best(l, "seperate", "separate", 1);
    best(l, "thier", "their", 1);
    best(l, "wierd", "weird", 1);
    best(l, "qiuck", "quick", 1);
    best(l, "qukc", "quick", 2);
    best(l, "strasse", "Straße", 2);
    best(l, "μηλο", "μήλο", 1);
    best(l, "ΜΉΛΟ", "μήλο", 0);
    /* The typed word itself is not a candidate; its neighbours are. */
    ty_cand c[32];
    size_t n = 0;
    CHECK(ty_candidates(l, "fox", 3, NULL, c, 32, &n) == LAYA_OK, "fox");
    int self = 0, box = 0;
    for (size_t i = 0; i < n && i < 32; i++) {
        self += c[i].len == 3 && memcmp(c[i].word, "fox", 3) == 0;
        box += c[i].len == 3 && memcmp(c[i].word, "box", 3) == 0;
        CHECK(c[i].edits <= 2 && c[i].cost <= 2.0f, "bounds");
        if (i) CHECK(c[i - 1].cost <= c[i].cost, "cheapest first");
    }
    CHECK(!self && box, "fox: self %d box %d", self, box);
    ty_params p = ty_default_params();
    p.max_edits = 1;
    CHECK(ty_candidates(l, "qukc", 4, &p, c, 32, &n) == LAYA_OK && n == 0, "max_edits 1: %zu", n);
    /* Output smaller than what qualifies. */
    p = ty_default_params();
    p.max_cost = 10;
    CHECK(ty_candidates(l, "fo", 2, &p, c, 2, &n) == LAYA_OK && n > 2 && c[0].cost <= c[1].cost, "cap 2: %zu", n);
    CHECK(ty_candidates(l, "fo", 2, &p, NULL, 0, &n) == LAYA_OK && n > 2, "count only");
    /* The step bound. */
    p.max_steps = 3;
    CHECK(ty_candidates(l, "hello", 5, &p, c, 32, &n) == LAYA_ERR_CAPACITY, "step bound");
    /* Odd inputs: no candidates, no crash. */
    CHECK(ty_candidates(l, "\xff\xfe", 2, NULL, c, 32, &n) == LAYA_OK && n == 0, "invalid UTF-8");
    CHECK(ty_candidates(l, "", 0, NULL, c, 32, &n) == LAYA_OK && n == 0, "empty");
    char longw[200];
    memset(longw, 'a', sizeof longw);
    CHECK(ty_candidates(l, longw, sizeof longw, NULL, c, 32, &n) == LAYA_OK && n == 0, "too long");
    p = ty_default_params();
    p.max_edits = 3;
    CHECK(ty_candidates(l, "teh", 3, &p, c, 32, &n) == LAYA_ERR_INVALID_ARG, "max_edits 3");
    /* No allocation per query. */
    ta_install(0);
    for (int i = 0; i < 10; i++) ty_candidates(l, "recieve", 7, NULL, c, 32, &n);
    long allocs = ta_count;
    laya_set_alloc_hooks(NULL);
    CHECK(allocs == 0, "queries allocated %ld times", allocs);
    /* A user word inserted into the finished list. */
    CHECK(ty_list_insert(l, "Zanzibar", 8, 1) == LAYA_OK && ty_list_find(l, "Zanzibar", 8, NULL), "insert");
    CHECK(ty_list_insert(l, "the", 3, 5) == LAYA_OK && ty_list_find(l, "the", 3, &count) && count == 105, "insert dup");
    best(l, "Zanzibra", "Zanzibar", 1);
    for (size_t i = 1; i < ty_list_size(l); i++) {
        size_t la, lb;
        const char *a = ty_list_word(l, i - 1, &la, NULL), *b = ty_list_word(l, i, &lb, NULL);
        int cmp = memcmp(a, b, la < lb ? la : lb);
        CHECK(cmp < 0 || (cmp == 0 && la < lb), "sorted at %zu", i);
    }
    /* Refused words. */
    CHECK(ty_list_add(l, "a b", 3, 1) == LAYA_ERR_INVALID_ARG && ty_list_add(l, "\xc3", 1, 1) == LAYA_ERR_INVALID_ARG &&
              ty_list_add(l, "", 0, 1) == LAYA_ERR_INVALID_ARG && ty_list_add(l, longw, TY_WORD_MAX + 1, 1) == LAYA_ERR_INVALID_ARG,
          "refused words");
    ty_list_free(l);
    ty_list *u = NULL;
    ty_list_create(&u);
    ty_list_add(u, "x", 1, 1);
    CHECK(ty_candidates(u, "y", 1, NULL, c, 4, &n) == LAYA_ERR_INVALID_ARG, "query before finish");
    ty_list_free(u);
}

static void test_load(void) {
    char path[] = "/tmp/laya_typo_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return;
    const char text[] = "# a word list\nthe\t100\nquick 7\nbrown\nbad count x\n\xff\xfe\t3\n\nfox\t2\r\n"
                        "the 5\n";
    CHECK(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1), "write");
    close(fd);
    ty_list *l = NULL;
    ty_list_create(&l);
    size_t skipped = 0;
    char err[LAYA_ERR_MSG_MAX];
    CHECK(ty_list_load(l, path, &skipped, err, sizeof err) == LAYA_OK, "load: %s", err);
    ty_list_finish(l);
    uint32_t c = 0;
    CHECK(ty_list_size(l) == 4 && skipped == 2, "size %zu skipped %zu", ty_list_size(l), skipped);
    CHECK(ty_list_find(l, "the", 3, &c) && c == 105 && ty_list_find(l, "brown", 5, &c) && c == 1 &&
              ty_list_find(l, "fox", 3, &c) && c == 2 && ty_list_total(l) == 115,
          "counts");
    CHECK(ty_list_load(l, "/nonexistent/words.txt", NULL, err, sizeof err) == LAYA_ERR_IO, "missing file");
    ty_list_free(l);
    unlink(path);
}

/* Optimal string alignment distance (what ty_ computes), ASCII. */
static int osa(const char *a, int na, const char *b, int nb) {
    int d[40][40];
    for (int i = 0; i <= na; i++) d[i][0] = i;
    for (int j = 0; j <= nb; j++) d[0][j] = j;
    for (int i = 1; i <= na; i++)
        for (int j = 1; j <= nb; j++) {
            int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[na][nb];
}

static void test_brute_force(void) {
    enum { NW = 4000 };
    static char words[NW][12];
    ty_list *l = NULL;
    ty_list_create(&l);
    srand(7);
    for (int i = 0; i < NW; i++) { /* a small alphabet makes many close neighbours */
        int n = 1 + rand() % 9;
        for (int k = 0; k < n; k++) words[i][k] = "abcdeqwsz"[rand() % 9];
        words[i][n] = 0;
        ty_list_add(l, words[i], (size_t)n, (uint32_t)(rand() % 100));
    }
    ty_list_finish(l);
    size_t nl = ty_list_size(l);
    ty_params p = ty_default_params();
    p.max_cost = 100; /* the edit bound alone */
    p.max_steps = 10000000;
    static ty_cand c[NW];
    int wrong = 0;
    for (int q = 0; q < 300; q++) {
        char typed[12];
        int n = 1 + rand() % 10;
        for (int k = 0; k < n; k++) typed[k] = "abcdeqwszx"[rand() % 10];
        for (int maxd = 1; maxd <= 2; maxd++) {
            p.max_edits = maxd;
            size_t found = 0;
            ty_candidates(l, typed, (size_t)n, &p, c, NW, &found);
            size_t want = 0;
            for (size_t i = 0; i < nl; i++) {
                size_t wl;
                const char *w = ty_list_word(l, i, &wl, NULL);
                int d = osa(w, (int)wl, typed, n);
                if (d <= maxd && !((int)wl == n && memcmp(w, typed, wl) == 0)) want++;
            }
            int ok = found == want;
            for (size_t i = 0; i < found && ok; i++) ok = osa(c[i].word, (int)c[i].len, typed, n) == c[i].edits;
            wrong += !ok;
        }
    }
    CHECK(wrong == 0, "%d queries differ from brute force", wrong);
    /* Timing on a dense list (prints; a real vocabulary is sparser). */
    p = ty_default_params();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t found = 0;
    for (int q = 0; q < 200; q++) ty_candidates(l, words[q], strlen(words[q]), &p, c, 16, &found);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("typo: %.1f us per query on a dense list of %zu words\n",
           ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 200 / 1e3, nl);
    ty_list_free(l);
}

int main(void) {
    test_keys();
    test_slips();
    test_load();
    test_brute_force();
    return DONE("test_typo");
}
