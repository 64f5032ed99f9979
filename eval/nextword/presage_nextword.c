/* Next-word accuracy of Presage on a text file, through Presage's C API (libpresage-dev).
 *
 *   presage_nextword CONFIG.xml FILE [MAX_WORDS]
 *
 * At every word start in FILE (a word is a run of letters, digits and '_'; each CJK character is a word
 * of its own, as in `laya eval`), Presage is given all text before it (the last 4000 bytes) and asked
 * for its suggestions; top-1 / top-3 count the words that are its first / among its first three.
 * A 0x1E byte separates documents; the context never crosses it.
 * Presage lower-cases what it learns, so the comparison ignores ASCII case (in Presage's favour).
 * Prints one JSON object. Build: cc -O2 presage_nextword.c -o presage_nextword -lpresage */
#include <presage.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "words.h"

#define CTX 4000

static char past[CTX + 1];

static const char *get_past(void *arg) { (void)arg; return past; }
static const char *get_future(void *arg) { (void)arg; return ""; }

static uint32_t cp_at(const unsigned char *s, size_t n, size_t i, size_t *len) {
    unsigned c = s[i];
    size_t l = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (i + l > n) l = 1;
    uint32_t v = l == 1 ? c : l == 2 ? c & 0x1F : l == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < l; k++) v = (v << 6) | (s[i + k] & 0x3F);
    *len = l;
    return v;
}


int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: presage_nextword CONFIG.xml FILE [MAX_WORDS]\n");
        return 2;
    }
    long max_words = argc > 3 ? atol(argv[3]) : 1L << 40;
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "read failed\n"); return 1; }
    fclose(f);
    presage_t p;
    if (presage_new_with_config(get_past, NULL, get_future, NULL, argv[1], &p) != PRESAGE_OK) {
        fprintf(stderr, "presage_new_with_config failed\n");
        return 1;
    }
    long words = 0, top1 = 0, top3 = 0;
    double secs = 0;
    uint32_t prev = ' ';
    for (size_t i = 0; i < (size_t)n && words < max_words;) {
        size_t l;
        uint32_t c = cp_at(s, (size_t)n, i, &l);
        int start = is_word(c) && (is_cjk(c) || !is_word(prev) || is_cjk(prev));
        if (start) {
            size_t j = i + l, wl;
            if (!is_cjk(c))
                while (j < (size_t)n && is_word(cp_at(s, (size_t)n, j, &wl)) && !is_cjk(cp_at(s, (size_t)n, j, &wl)))
                    j += wl;
            size_t from = i > CTX ? i - CTX : 0;
            for (size_t q = i; q > from; q--)
                if (s[q - 1] == 0x1e) { /* documents are separated by 0x1E: context stays in its document */
                    from = q;
                    break;
                }
            memcpy(past, s + from, i - from);
            past[i - from] = 0;
            char **pred = NULL;
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            presage_error_code_t e = presage_predict(p, &pred);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            secs += (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
            if (e == PRESAGE_OK && pred) {
                for (int k = 0; k < 3 && pred[k]; k++) {
                    if (strlen(pred[k]) == j - i && !strncasecmp(pred[k], (const char *)s + i, j - i)) {
                        if (k == 0) top1++;
                        top3++;
                        break;
                    }
                }
                presage_free_string_array(pred);
            }
            words++;
        }
        prev = c;
        i += l;
    }
    printf("{\"words\":%ld,\"next_word_top1\":%.4f,\"next_word_top3\":%.4f,\"ms_per_prediction\":%.3f}\n", words,
           words ? (double)top1 / words : 0, words ? (double)top3 / words : 0, words ? secs * 1e3 / words : 0);
    presage_free(p);
    free(s);
    return 0;
}
