/* test_userdict.c — the user dictionary: round trip, prefix lookups without allocation, forget (gone from
 * the file's bytes too), invalid words, caps and eviction, every truncation and every flipped byte of a
 * file, recovery, two handles and concurrent processes, out-of-memory injection, and kill -9 of a learning
 * process at random moments (every learn that returned must survive). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc_hooks.h"
#include "check.h"
#include "typing/userdict.h"

static char dir[256];

static void path_of(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

static long file_read(const char *p, unsigned char **buf) {
    FILE *f = fopen(p, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc((size_t)n + 1);
    if (fread(*buf, 1, (size_t)n, f) != (size_t)n) n = -1;
    fclose(f);
    return n;
}

static void file_write(const char *p, const unsigned char *b, long n) {
    FILE *f = fopen(p, "wb");
    if (!f) return;
    fwrite(b, 1, (size_t)n, f);
    fclose(f);
}

static ud_dict *open_ok(const char *p, const ud_params *prm) {
    ud_dict *d = NULL;
    char err[LAYA_ERR_MSG_MAX];
    laya_status st = ud_open(p, prm, &d, err, sizeof err);
    CHECK(st == LAYA_OK && d, "ud_open(%s): %s (%s)", p, laya_status_str(st), err);
    return d;
}

static laya_status learn(ud_dict *d, const char *s) { return ud_learn(d, s, strlen(s)); }
static const ud_entry *look(ud_dict *d, const char *s) { return ud_lookup(d, s, strlen(s)); }

static void test_roundtrip(void) {
    char p[300];
    path_of(p, sizeof p, "rt.dict");
    ud_dict *d = open_ok(p, NULL);
    if (!d) return;
    CHECK(ud_count(d) == 0, "new dictionary not empty");
    CHECK(learn(d, "hello") == LAYA_OK, "learn: %s", ud_error(d));
    CHECK(learn(d, " hello, ") == LAYA_OK, "learn: %s", ud_error(d));
    CHECK(learn(d, "café") == LAYA_OK, "learn: %s", ud_error(d));
    CHECK(learn(d, "日本語") == LAYA_OK, "learn: %s", ud_error(d));
    CHECK(learn(d, "\"New   York\" city.") == LAYA_OK, "learn: %s", ud_error(d));
    CHECK(ud_add(d, "Laya", 4, 2.5f) == LAYA_OK, "add: %s", ud_error(d));
    const ud_entry *e = look(d, "hello");
    CHECK(e && e->count == 2 && !(e->flags & UD_F_USER), "hello count %u", e ? e->count : 0);
    e = look(d, "New York\" city");
    CHECK(e && (e->flags & UD_F_PHRASE), "phrase learned with inner punctuation kept");
    CHECK(look(d, "New") && look(d, "York") && look(d, "city"), "each word of a phrase learned");
    e = look(d, "Laya");
    CHECK(e && (e->flags & UD_F_USER) && e->boost == 2.5f, "user word");
    size_t n = ud_count(d);
    ud_entry saved[16];
    for (size_t i = 0; i < n && i < 16; i++) saved[i] = *ud_at(d, i);
    for (size_t i = 1; i < n; i++) {
        const ud_entry *a = ud_at(d, i - 1), *b = ud_at(d, i);
        int c = memcmp(a->word, b->word, a->len < b->len ? a->len : b->len);
        CHECK(c < 0 || (c == 0 && a->len < b->len), "order at %zu", i);
    }
    ud_free(d);
    d = open_ok(p, NULL);
    if (!d) return;
    CHECK(ud_count(d) == n, "reloaded %zu entries, had %zu", ud_count(d), n);
    for (size_t i = 0; i < n && i < 16; i++) {
        const ud_entry *r = ud_at(d, i);
        CHECK(r && memcmp(r, &saved[i], sizeof *r) == 0, "entry %zu differs after reload", i);
    }
    /* Lookups allocate nothing. */
    ta_install(0);
    const ud_entry *top[4];
    size_t first;
    size_t k = ud_prefix(d, "N", 1, &first);
    size_t kt = ud_prefix_top(d, "h", 1, top, 4);
    const ud_entry *x = look(d, "café");
    long allocs = ta_count;
    laya_set_alloc_hooks(NULL);
    CHECK(allocs == 0, "lookups allocated %ld times", allocs);
    CHECK(k == 2 && x, "prefix N: %zu", k);
    CHECK(kt == 1 && top[0]->count == 2, "prefix_top h");
    ud_free(d);
}

static void test_prefix(void) {
    char p[300];
    path_of(p, sizeof p, "prefix.dict");
    ud_params prm = ud_default_params();
    prm.no_fsync = 1;
    ud_dict *d = open_ok(p, &prm);
    if (!d) return;
    const char *words[] = {"the", "then", "there", "therefore", "thermal", "theta", "tha", "thf", "t", "u"};
    for (int i = 0; i < 10; i++) learn(d, words[i]);
    for (int r = 0; r < 3; r++) learn(d, "there");
    learn(d, "thermal");
    size_t first, n = ud_prefix(d, "the", 3, &first);
    CHECK(n == 6, "prefix the: %zu", n);
    for (size_t i = first; i < first + n; i++) CHECK(memcmp(ud_at(d, i)->word, "the", 3) == 0, "in range");
    n = ud_prefix(d, "", 0, &first);
    CHECK(n == 10 && first == 0, "empty prefix covers all");
    CHECK(ud_prefix(d, "thx", 3, &first) == 0, "no match");
    CHECK(ud_prefix(d, "thereforex", 10, &first) == 0, "longer than every word");
    const ud_entry *top[3];
    n = ud_prefix_top(d, "the", 3, top, 3);
    CHECK(n == 3 && top[0]->len == 5 && memcmp(top[0]->word, "there", 5) == 0 && top[0]->count == 4 &&
              memcmp(top[1]->word, "thermal", 7) == 0,
          "top by count");
    ud_free(d);
}

/* 1 if the bytes of the file at p contain s. */
static int file_has(const char *p, const char *s) {
    unsigned char *b = NULL;
    long n = file_read(p, &b);
    int has = n > 0 && memmem(b, (size_t)n, s, strlen(s)) != NULL;
    free(b);
    return has;
}

static void test_forget(void) {
    char p[300];
    path_of(p, sizeof p, "forget.dict");
    ud_dict *d = open_ok(p, NULL);
    if (!d) return;
    learn(d, "Zebediah");
    learn(d, "meet Zebediah tomorrow");
    learn(d, "Zebediahs");
    learn(d, "keep");
    CHECK(file_has(p, "Zebediah"), "written");
    CHECK(ud_forget(d, "Zebediah", 8) == LAYA_OK, "forget: %s", ud_error(d));
    CHECK(!look(d, "Zebediah") && !look(d, "meet Zebediah tomorrow"), "forgotten in memory");
    CHECK(look(d, "Zebediahs") && look(d, "keep") && look(d, "meet"), "other words kept");
    CHECK(ud_forget(d, "Zebediah", 8) == LAYA_ERR_NOT_FOUND, "forget twice");
    ud_forget(d, "Zebediahs", 9);
    CHECK(!file_has(p, "Zebediah"), "the word is still in the file's bytes");
    ud_free(d);
    d = open_ok(p, NULL);
    CHECK(d && !look(d, "Zebediah") && look(d, "keep"), "forgotten after reload");
    CHECK(d && ud_clear(d) == LAYA_OK && ud_count(d) == 0 && !file_has(p, "keep"), "clear");
    ud_free(d);
}

static void test_invalid(void) {
    char p[300];
    path_of(p, sizeof p, "invalid.dict");
    ud_dict *d = open_ok(p, NULL);
    if (!d) return;
    const char *bad[] = {"\xff", "ab\xc3", "\xc0\xaf", "\xed\xa0\x80", "a\x01", "x\x7f", "\xf4\x90\x80\x80"};
    for (int i = 0; i < 7; i++) {
        CHECK(ud_learn(d, bad[i], strlen(bad[i])) == LAYA_ERR_INVALID_ARG, "learn bad %d", i);
        CHECK(ud_add(d, bad[i], strlen(bad[i]), 0) == LAYA_ERR_INVALID_ARG, "add bad %d", i);
    }
    CHECK(ud_learn(d, "ok \xff", 4) == LAYA_ERR_INVALID_ARG && ud_count(d) == 0, "all or nothing");
    char w[UD_WORD_MAX + 2];
    memset(w, 'a', sizeof w);
    CHECK(ud_add(d, w, UD_WORD_MAX + 1, 0) == LAYA_ERR_INVALID_ARG, "word over the cap");
    CHECK(ud_learn(d, w, UD_WORD_MAX + 1) == LAYA_ERR_INVALID_ARG, "learn over the cap");
    CHECK(ud_add(d, w, UD_WORD_MAX, 0) == LAYA_OK, "word at the cap");
    CHECK(ud_add(d, " a", 2, 0) == LAYA_ERR_INVALID_ARG && ud_add(d, "a  b", 4, 0) == LAYA_ERR_INVALID_ARG &&
              ud_add(d, "", 0, 0) == LAYA_ERR_INVALID_ARG,
          "spaces");
    CHECK(ud_add(d, "a b", 3, 1.0f / 0.0f) == LAYA_ERR_INVALID_ARG, "infinite boost");
    CHECK(learn(d, "  ,.; ") == LAYA_ERR_INVALID_ARG, "no word");
    CHECK(ud_forget(d, "\xff", 1) == LAYA_ERR_INVALID_ARG, "forget bad");
    CHECK(ud_count(d) == 1, "only the valid word stored");
    /* A long text: phrase too long to learn whole, words still learned. */
    CHECK(learn(d, "one two three four five six seven eight nine ten eleven twelve thirteen") == LAYA_OK &&
              ud_count(d) == 14,
          "long phrase skipped: %zu", ud_count(d));
    ud_free(d);
    ud_dict *x = NULL;
    char q[300];
    path_of(q, sizeof q, "no/such/dir/d");
    CHECK(ud_open(q, NULL, &x, NULL, 0) == LAYA_ERR_IO && !x, "missing directory");
    ud_params prm = ud_default_params();
    prm.max_entries = UD_LIMIT_ENTRIES + 1;
    CHECK(ud_open(p, &prm, &x, NULL, 0) == LAYA_ERR_INVALID_ARG, "max_entries over the limit");
}

static void test_caps(void) {
    char p[300];
    path_of(p, sizeof p, "caps.dict");
    ud_params prm = ud_default_params();
    prm.max_entries = 10;
    prm.no_fsync = 1;
    ud_dict *d = open_ok(p, &prm);
    if (!d) return;
    ud_add(d, "mine", 4, 1);
    learn(d, "often");
    learn(d, "often");
    char w[32];
    for (int i = 0; i < 40; i++) {
        snprintf(w, sizeof w, "word%d", i);
        CHECK(learn(d, w) == LAYA_OK, "learn %s: %s", w, ud_error(d));
        CHECK(ud_count(d) <= 10, "over the cap: %zu", ud_count(d));
    }
    CHECK(look(d, "mine") && look(d, "often") && look(d, "word39"), "user word, frequent word, newest word kept");
    CHECK(!look(d, "word0"), "oldest evicted");
    for (int i = 0; i < 9; i++) {
        snprintf(w, sizeof w, "user%d", i);
        CHECK(ud_add(d, w, strlen(w), 0) == LAYA_OK, "add %s", w);
    }
    CHECK(ud_add(d, "extra", 5, 0) == LAYA_ERR_CAPACITY, "all user words: no room");
    CHECK(learn(d, "learned") == LAYA_ERR_CAPACITY && !look(d, "learned"), "learn refused too");
    ud_free(d);
    d = open_ok(p, &prm);
    CHECK(d && ud_count(d) == 10, "reloaded within the cap");
    ud_free(d);
}

/* Builds a file with a snapshot and a journal; returns its size and the record boundaries in bounds[]. */
static long build_journal_file(const char *p, long *bounds, size_t *counts, int *nb, long *snap_end) {
    unlink(p);
    ud_params prm = ud_default_params();
    prm.no_fsync = 1;
    ud_dict *d = open_ok(p, &prm);
    if (!d) return -1;
    learn(d, "alpha");
    learn(d, "beta gamma");
    ud_compact(d);
    ud_info in;
    ud_get_info(d, &in);
    *snap_end = (long)in.file_bytes;
    *nb = 0;
    bounds[*nb] = (long)in.file_bytes;
    counts[(*nb)++] = ud_count(d);
    const char *more[] = {"delta", "alpha", "épsilon", "zeta eta", "theta"};
    for (int i = 0; i < 5; i++) {
        learn(d, more[i]);
        ud_get_info(d, &in);
        bounds[*nb] = (long)in.file_bytes;
        counts[(*nb)++] = ud_count(d);
    }
    ud_free(d);
    return bounds[*nb - 1];
}

static void test_corrupt(void) {
    char p[300], q[300];
    path_of(p, sizeof p, "src.dict");
    path_of(q, sizeof q, "bad.dict");
    long bounds[8], snap_end = 0;
    size_t counts[8];
    int nb = 0;
    long size = build_journal_file(p, bounds, counts, &nb, &snap_end);
    unsigned char *b = NULL;
    CHECK(size > 0 && file_read(p, &b) == size, "source file");
    if (!b) return;
    /* Every truncation: inside the header or snapshot it is an error; inside the journal the last record is
     * torn (a crash during an append), the load keeps the complete records and reports the torn bytes. */
    int bad_status = 0, bad_count = 0;
    for (long len = 0; len < size; len++) {
        file_write(q, b, len);
        ud_dict *d = NULL;
        char err[LAYA_ERR_MSG_MAX] = "";
        laya_status st = ud_open(q, NULL, &d, err, sizeof err);
        if (len < snap_end) {
            bad_status += st != LAYA_ERR_FORMAT || d != NULL || !strstr(err, "bad.dict");
        } else {
            int k = 0;
            while (k + 1 < nb && bounds[k + 1] <= len) k++;
            ud_info in = {0};
            if (d) ud_get_info(d, &in);
            bad_status += st != LAYA_OK;
            bad_count += !d || ud_count(d) != counts[k] || in.torn_bytes != (uint64_t)(len - bounds[k]);
        }
        ud_free(d);
    }
    CHECK(bad_status == 0 && bad_count == 0, "truncations: %d wrong statuses, %d wrong contents", bad_status,
          bad_count);
    /* Every flipped byte: an error; in the last call's records it may instead read as a torn tail. */
    int flips_bad = 0;
    for (long i = 0; i < size; i++) {
        b[i] ^= 0x5A;
        file_write(q, b, size);
        b[i] ^= 0x5A;
        ud_dict *d = NULL;
        laya_status st = ud_open(q, NULL, &d, NULL, 0);
        if (i < bounds[nb - 2]) flips_bad += st != LAYA_ERR_FORMAT;
        else flips_bad += st != LAYA_ERR_FORMAT && (st != LAYA_OK || ud_count(d) != counts[nb - 2]);
        ud_free(d);
    }
    CHECK(flips_bad == 0, "%d flipped bytes misread", flips_bad);
    /* Other garbage: empty, foreign, future version. */
    ud_dict *d = NULL;
    file_write(q, b, 0);
    CHECK(ud_open(q, NULL, &d, NULL, 0) == LAYA_ERR_FORMAT, "empty file");
    file_write(q, (const unsigned char *)"GGUF and then some more bytes to be long enough for a header", 60);
    CHECK(ud_open(q, NULL, &d, NULL, 0) == LAYA_ERR_FORMAT, "foreign file");
    /* A torn tail is cut off by the next writer. */
    file_write(q, b, bounds[nb - 1] - 3);
    d = open_ok(q, NULL);
    if (d) {
        CHECK(learn(d, "fresh") == LAYA_OK, "learn after torn tail: %s", ud_error(d));
        ud_free(d);
        d = open_ok(q, NULL);
        ud_info in = {0};
        if (d) ud_get_info(d, &in);
        CHECK(d && look(d, "fresh") && look(d, "zeta eta") && !look(d, "theta") && in.torn_bytes == 0,
              "torn tail replaced");
        ud_free(d);
    }
    /* Recovery: a record in the middle is corrupt; the records before it are kept, the file set aside. */
    b[bounds[2] + 5] ^= 1;
    file_write(q, b, size);
    char err[LAYA_ERR_MSG_MAX] = "";
    d = NULL;
    CHECK(ud_open(q, NULL, &d, err, sizeof err) == LAYA_ERR_FORMAT && strstr(err, "corrupt"), "corrupt: %s", err);
    ud_params prm = ud_default_params();
    prm.recover = 1;
    d = open_ok(q, &prm);
    ud_info in = {0};
    if (d) ud_get_info(d, &in);
    char qc[320];
    snprintf(qc, sizeof qc, "%s.corrupt", q);
    struct stat sb;
    CHECK(d && in.recovered && ud_count(d) == counts[1] && stat(qc, &sb) == 0, "recovered");
    ud_free(d);
    d = open_ok(q, NULL);
    CHECK(d && ud_count(d) == counts[1], "recovered file reads back");
    ud_free(d);
    /* A bad header in recover mode: start empty. */
    b[2] ^= 1;
    file_write(q, b, size);
    d = open_ok(q, &prm);
    CHECK(d && ud_count(d) == 0, "bad header recovered empty");
    ud_free(d);
    free(b);
}

static void test_two_handles(void) {
    char p[300];
    path_of(p, sizeof p, "two.dict");
    ud_params prm = ud_default_params();
    prm.no_fsync = 1;
    ud_dict *a = open_ok(p, &prm), *b = open_ok(p, &prm);
    if (!a || !b) return;
    learn(a, "apple");
    CHECK(!look(b, "apple"), "b has not refreshed yet");
    learn(b, "banana");
    CHECK(look(b, "apple") && look(b, "banana"), "b caught up when it wrote");
    CHECK(ud_refresh(a) == LAYA_OK && look(a, "banana"), "a refreshed");
    learn(a, "apple");
    ud_compact(b); /* rewrites the file under a new inode: a must notice */
    learn(b, "cherry");
    CHECK(ud_refresh(a) == LAYA_OK && look(a, "cherry") && look(a, "apple")->count == 2, "a after b compacted");
    ud_forget(a, "banana", 6);
    learn(b, "date");
    CHECK(!look(b, "banana") && look(b, "date"), "b saw the forget");
    ud_free(a);
    ud_free(b);
}

static void test_oom(void) {
    char p[300];
    path_of(p, sizeof p, "oom.dict");
    ud_params prm = ud_default_params();
    prm.no_fsync = 1;
    ud_dict *d = open_ok(p, &prm);
    if (d) {
        learn(d, "seed words here");
        ud_free(d);
    }
    int leaks = 0, bad = 0;
    for (long f = 1; f < 40; f++) {
        ta_install(f);
        d = NULL;
        laya_status st = ud_open(p, &prm, &d, NULL, 0);
        if (st == LAYA_OK) {
            st = learn(d, "more words");
            bad += st != LAYA_OK && st != LAYA_ERR_NOMEM;
            if (st == LAYA_OK) bad += !look(d, "more");
            ud_free(d);
        } else {
            bad += st != LAYA_ERR_NOMEM || d != NULL;
        }
        leaks += ta_live != 0;
        laya_set_alloc_hooks(NULL);
        d = open_ok(p, &prm); /* the file is intact whatever failed */
        ud_free(d);
    }
    CHECK(leaks == 0 && bad == 0, "out of memory: %d leaks, %d bad statuses", leaks, bad);
}

/* Child: learn unique words (and sometimes forget one of its own) until killed, reporting through fd:
 * "+w" after learn returned, "?w" before a forget, "-w" after it returned. */
static void child_learn(const char *p, int fd, int iter, int use_fsync) {
    ud_params prm = ud_default_params();
    prm.max_entries = UD_LIMIT_ENTRIES;
    prm.no_fsync = !use_fsync;
    prm.write_chunk = iter % 2 ? 3 : 0; /* odd iterations: kills land inside records too */
    ud_dict *d = NULL;
    if (ud_open(p, &prm, &d, NULL, 0) != LAYA_OK) _exit(3);
    if (write(fd, "R\n", 2) != 2) _exit(5);
    char w[64], line[80];
    for (int i = 0;; i++) {
        snprintf(w, sizeof w, "k%dw%d", iter, i);
        if (i % 7 == 3) snprintf(w, sizeof w, "k%dw%d next%d", iter, i, i);
        if (learn(d, w) != LAYA_OK) _exit(4);
        int n = snprintf(line, sizeof line, "+%s\n", w);
        if (write(fd, line, (size_t)n) != n) _exit(5);
        if (i % 29 == 28 && (i - 5) % 7 != 3) { /* a plain word, not the start of a phrase */
            snprintf(w, sizeof w, "k%dw%d", iter, i - 5);
            n = snprintf(line, sizeof line, "?%s\n", w);
            if (write(fd, line, (size_t)n) != n) _exit(5);
            if (ud_forget(d, w, strlen(w)) != LAYA_OK) _exit(6);
            n = snprintf(line, sizeof line, "-%s\n", w);
            if (write(fd, line, (size_t)n) != n) _exit(5);
        }
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_kill9(int iterations, int use_fsync) {
    char p[300];
    path_of(p, sizeof p, use_fsync ? "kill_fsync.dict" : "kill.dict");
    static char buf[1 << 20];
    srand(12345);
    long checked = 0, missing = 0, resurrected = 0, load_errors = 0, torn_seen = 0;
    for (int it = 0; it < iterations; it++) {
        int pfd[2];
        if (pipe(pfd) < 0) return;
        pid_t pid = fork();
        if (pid == 0) {
            close(pfd[0]);
            child_learn(p, pfd[1], it, use_fsync);
            _exit(0);
        }
        close(pfd[1]);
        /* A random moment: odd iterations (writing in small pieces) 0 to 5 ms after the child opened the
         * dictionary, even ones 0.2 to 15 ms after the fork (the kill may land during the open). */
        size_t n = 0;
        if (it % 2) {
            char c;
            while (read(pfd[0], &c, 1) == 1 && c != '\n') {}
        }
        struct timespec ts = {0, (it % 2 ? rand() % 5000 : 200 + rand() % 15000) * 1000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        ssize_t r;
        while (n < sizeof buf - 1 && (r = read(pfd[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
        close(pfd[0]);
        buf[n] = 0;
        if (WIFEXITED(status)) {
            CHECK(0, "child exited with %d before the kill", WEXITSTATUS(status));
            continue;
        }
        ud_dict *d = NULL;
        char err[LAYA_ERR_MSG_MAX];
        ud_params prm = ud_default_params();
        prm.max_entries = UD_LIMIT_ENTRIES;
        if (ud_open(p, &prm, &d, err, sizeof err) != LAYA_OK) {
            load_errors++;
            fprintf(stderr, "after kill %d: %s\n", it, err);
            continue;
        }
        ud_info in;
        ud_get_info(d, &in);
        torn_seen += in.torn_bytes != 0;
        /* Walk the report: a word learned (and not since under forget) must be there; a forgotten one not. */
        for (char *line = buf; *line;) {
            char *nl = strchr(line, '\n');
            if (!nl) break; /* a line cut by the kill */
            *nl = 0;
            const char *w = line + 1;
            if (line[0] == 'R') {
            } else if (line[0] == '+' || line[0] == '-') {
                int forget_later = 0, forgot = line[0] == '-';
                for (char *l2 = nl + 1; *l2 && !forgot; l2 = strchr(l2, '\n') ? strchr(l2, '\n') + 1 : l2 + strlen(l2)) {
                    char *e2 = strchr(l2, '\n');
                    size_t len2 = e2 ? (size_t)(e2 - l2) : strlen(l2);
                    if (len2 == strlen(w) + 1 && l2[0] != '+' && memcmp(l2 + 1, w, len2 - 1) == 0) forget_later = 1;
                }
                if (!forgot && !forget_later) {
                    checked++;
                    missing += look(d, w) == NULL;
                } else if (forgot) {
                    resurrected += look(d, w) != NULL;
                }
            }
            line = nl + 1;
        }
        ud_free(d);
    }
    CHECK(load_errors == 0, "%ld loads failed after kill -9", load_errors);
    CHECK(missing == 0, "%ld of %ld committed words lost", missing, checked);
    CHECK(resurrected == 0, "%ld forgotten words came back", resurrected);
    CHECK(checked > iterations / 10, "too few words committed to test anything (%ld)", checked);
    printf("kill -9 x%d (%s): %ld committed words checked, %ld loads saw a torn tail\n", iterations,
           use_fsync ? "fsync" : "no fsync", checked, torn_seen);
}

/* Several processes learning at once (and compacting) on one file: nothing lost. */
static void test_concurrent(void) {
    char p[300];
    path_of(p, sizeof p, "conc.dict");
    enum { NPROC = 3, NWORDS = 150 };
    pid_t pids[NPROC];
    for (int c = 0; c < NPROC; c++) {
        pids[c] = fork();
        if (pids[c] == 0) {
            ud_params prm = ud_default_params();
            prm.no_fsync = 1;
            ud_dict *d = NULL;
            if (ud_open(p, &prm, &d, NULL, 0) != LAYA_OK) _exit(3);
            char w[32];
            for (int i = 0; i < NWORDS; i++) {
                snprintf(w, sizeof w, "p%dw%d", c, i);
                if (learn(d, w) != LAYA_OK || learn(d, "shared") != LAYA_OK) _exit(4);
                if (i % 40 == 39 && ud_compact(d) != LAYA_OK) _exit(5);
            }
            ud_free(d);
            _exit(0);
        }
    }
    int ok = 1;
    for (int c = 0; c < NPROC; c++) {
        int st;
        waitpid(pids[c], &st, 0);
        ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    CHECK(ok, "a concurrent writer failed");
    ud_dict *d = open_ok(p, NULL);
    if (!d) return;
    int missing = 0;
    char w[32];
    for (int c = 0; c < NPROC; c++)
        for (int i = 0; i < NWORDS; i++) {
            snprintf(w, sizeof w, "p%dw%d", c, i);
            missing += look(d, w) == NULL;
        }
    const ud_entry *s = look(d, "shared");
    CHECK(missing == 0 && s && s->count == NPROC * NWORDS, "concurrent: %d missing, shared count %u", missing,
          s ? s->count : 0);
    ud_free(d);
}

static void rm_rf(const char *d) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", d);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/laya_ud_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    double t0 = now_s();
    test_roundtrip();
    test_prefix();
    test_forget();
    test_invalid();
    test_caps();
    test_corrupt();
    test_two_handles();
    test_oom();
    test_concurrent();
    test_kill9(300, 0);
    test_kill9(30, 1);
    printf("userdict tests took %.1f s\n", now_s() - t0);
    rm_rf(dir);
    return DONE("test_userdict");
}
