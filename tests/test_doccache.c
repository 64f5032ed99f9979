/* test_doccache.c — the document cache: counts and pairs by hand, and after every kind of edit (typing,
 * backspace across words, paste, an edit far back, the window moving on) the same contents as a fresh
 * cache given the same text; probabilities; top words by prefix and after a context word; bad input. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "typing/doccache.h"

static uint64_t fresh_digest(size_t window, const char *t, size_t n) {
    dc_cache *f = NULL;
    if (dc_create(window, &f)) return 0;
    dc_update(f, t, n, 0);
    uint64_t d = dc_digest(f);
    dc_free(f);
    return d;
}

static void test_counts(void) {
    dc_cache *c = NULL;
    CHECK(dc_create(4096, &c) == LAYA_OK, "create");
    const char *t = "The whale, the whale! Queequeg's harpoon. Don't fear the whal";
    dc_update(c, t, strlen(t), 0);
    CHECK(dc_count(c, "whale", 5) == 2, "whale %u", dc_count(c, "whale", 5));
    CHECK(dc_count(c, "the", 3) == 2, "the %u", dc_count(c, "the", 3));
    CHECK(dc_count(c, "Queequeg's", 10) == 1, "apostrophe inside a word");
    CHECK(dc_count(c, "Don't", 5) == 1, "Don't");
    CHECK(dc_count(c, "whal", 4) == 0, "the word being typed is not counted");
    CHECK(dc_total(c) == 9, "total %llu", (unsigned long long)dc_total(c));
    size_t ws, we;
    CHECK(dc_word_start(t, strlen(t)) == strlen(t) - 4, "word start");
    CHECK(dc_prev_word(t, strlen(t) - 4, &ws, &we) && we - ws == 3 && !memcmp(t + ws, "the", 3), "prev word");
    CHECK(!dc_prev_word("whale. Th", 7, &ws, &we), "no pair across a sentence end");
    CHECK(dc_word_start("I don'", 6) == 2, "an apostrophe being typed stays in the word");
    {
        dc_cache *z = NULL;
        CHECK(dc_create(4096, &z) == LAYA_OK, "create");
        const char *nz = "the \xEF\xBC\xAC\xEF\xBD\x89" "c\xE2\x80\x8B" "ense   fee and the License. ";
        dc_update(z, nz, strlen(nz), 0);
        CHECK(dc_count(z, "License", 7) == 2, "full-width and zero-width fold to the normalized word");
        dc_set_context(z, "the", 3);
        CHECK(dc_prob(z, "License", 7) > 0.6, "a space run still pairs (%g)", dc_prob(z, "License", 7));
        dc_free(z);
    }
    /* pairs: "the" is followed by "whale" once ("The" is another word, and "the whal" is not finished) */
    dc_set_context(c, "the", 3);
    double p = dc_prob(c, "whale", 5), q = dc_prob(c, "harpoon", 7);
    CHECK(p > 0.5 && q > 0 && q < p, "pair probability %g %g", p, q);
    dc_set_context(c, NULL, 0);
    CHECK(dc_prob(c, "whale", 5) > 0.22 && dc_prob(c, "whale", 5) < 0.23, "unigram %g", dc_prob(c, "whale", 5));
    CHECK(dc_prob(c, "absent", 6) == 0, "unseen word");
    dc_hit h[4];
    size_t k = dc_top(c, "wh", 2, h, 4);
    CHECK(k == 1 && h[0].len == 5 && !memcmp(h[0].word, "whale", 5), "top by prefix");
    k = dc_top(c, "whale", 5, h, 4);
    CHECK(k == 0, "only longer words");
    dc_set_context(c, "the", 3);
    k = dc_top(c, NULL, 0, h, 4);
    CHECK(k == 1 && !memcmp(h[0].word, "whale", 5), "top after the context word (%zu)", k); /* "whale!": a sentence end */
    dc_free(c);
}

static void test_edits(size_t window, unsigned seed) {
    /* a text of varied words long enough to move a small window many times */
    static char longw[200], longgap[80];
    memset(longw, 'w', sizeof longw - 1); /* a run longer than any word the cache counts */
    memset(longgap, ' ', sizeof longgap - 1);
    const char *words[] = {"whale", "ship", "sea", "Ahab", "the", "a", "of", "harpoon", "don't", "Queequeg's",
                           "Nantucket", "é-accent", "naïve", "x", "1851", "spouter", "inn", "said", longw};
    const char *seps[] = {" ", " ", "' ", ", ", ". ", "\n", " -- ", "\xe2\x80\x99", longgap, "'"};
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap), *doc = malloc(cap);
    if (!text || !doc) return;
    srand(seed);
    while (n < cap - 512) { /* room for the longest word and separator */
        const char *w = words[rand() % 19], *s = seps[rand() % 10];
        size_t a = strlen(w), b = strlen(s);
        memcpy(text + n, w, a);
        memcpy(text + n + a, s, b);
        n += a + b;
    }
    dc_cache *c = NULL;
    CHECK(dc_create(window, &c) == LAYA_OK, "create");
    size_t len = 0;
    int bad = 0, ops = 0;
    for (int step = 0; step < 4000 && !bad; step++) {
        int r = rand() % 100;
        if (r < 70 && len < n) { /* type one to a few characters */
            size_t m = 1 + (size_t)(rand() % 4);
            if (len + m > n) m = n - len;
            memcpy(doc + len, text + len, m);
            len += m;
        } else if (r < 85) { /* backspace a few */
            size_t m = (size_t)(rand() % 12);
            len = m > len ? 0 : len - m;
            memcpy(doc, text, len);
        } else if (r < 90 && len < n) { /* paste a long piece */
            size_t m = (size_t)(rand() % 3000);
            if (len + m > n) m = n - len;
            memcpy(doc + len, text + len, m);
            len += m;
        } else if (r < 95 && len > 10) { /* an edit far back: change one byte, then put it back next time */
            size_t at = (size_t)rand() % len;
            doc[at] = (char)(rand() % 3 ? 'q' : 0x80 + rand() % 80); /* a letter, or a byte of UTF-8 */
            dc_update(c, doc, len, 0);
            uint64_t d1 = dc_digest(c), d2 = fresh_digest(window, doc, len);
            if (d1 != d2) bad = 1, fprintf(stderr, "after an edit at %zu of %zu\n", at, len);
            doc[at] = text[at];
        } else { /* the caller passes only its tail */
            size_t span = dc_span(c), base = len > span ? len - span : 0;
            dc_update(c, doc + base, len - base, base);
            uint64_t d1 = dc_digest(c), d2 = fresh_digest(window, doc, len);
            if (d1 != d2) bad = 1, fprintf(stderr, "tail at %zu\n", len);
            ops++;
            continue;
        }
        dc_update(c, doc, len, 0);
        ops++;
        uint64_t d1 = dc_digest(c), d2 = fresh_digest(window, doc, len);
        if (d1 != d2) bad = 1, fprintf(stderr, "step %d r %d len %zu\n", step, r, len);
    }
    CHECK(!bad, "an incrementally kept cache equals a fresh one (%d updates)", ops);
    /* invalid UTF-8 and a word far longer than the limit: no crash, and the same as fresh */
    char junk[3000];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)(i % 7 == 0 ? 0xC3 : i % 11 == 0 ? ' ' : 0x80 + i % 50);
    dc_update(c, junk, sizeof junk, 0);
    CHECK(dc_digest(c) == fresh_digest(window, junk, sizeof junk), "invalid UTF-8");
    memset(junk, 'a', sizeof junk);
    junk[sizeof junk - 1] = ' ';
    dc_update(c, junk, sizeof junk, 0);
    CHECK(dc_total(c) == 0, "a word longer than DC_WORD_MAX is skipped");
    { /* typing on at the end of 1 MiB without a space: the same as fresh, and cheap (no timing here) */
        size_t big = 1 << 20;
        char *g = malloc(big + 16);
        if (g) {
            memcpy(g, "Ahab and the sea ", 17);
            memset(g + 17, 'q', big - 17);
            for (size_t k = 0; k < 8; k++) dc_update(c, g, big - 8 + k, 0);
            CHECK(dc_digest(c) == fresh_digest(window, g, big), "a megabyte-long word");
            CHECK(dc_count(c, "Ahab", 4) == (window >= big ? 1u : 0u) || window < big, "words before it");
            free(g);
        }
    }
    dc_update(c, NULL, 0, 0);
    CHECK(dc_total(c) == 0, "empty text");
    dc_free(c);
    free(text);
    free(doc);
}

int main(void) {
    dc_cache *c = NULL;
    CHECK(dc_create(10, &c) == LAYA_ERR_INVALID_ARG && !c, "tiny window refused");
    CHECK(dc_create(4096, NULL) == LAYA_ERR_INVALID_ARG, "NULL out");
    dc_free(NULL);
    test_counts();
    test_edits(1024, 7);
    test_edits(256, 8);
    test_edits(4096, 9);
    return DONE("test_doccache");
}
