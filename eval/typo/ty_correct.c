/* ty_correct.c — the baseline typo corrector for the evaluation: ty_ candidates ranked by unigram frequency
 * (a noisy channel: log count - lambda * cost). Reads one typed word per line on stdin, writes the word it
 * would leave (itself, or a correction) per line, in the typed word's case pattern. Not part of the library.
 * Usage: ty_correct WORDS.tsv [--lambda L] [--known N] [--margin M] [--stats] */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "typing/typo.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: ty_correct WORDS.tsv [--lambda L] [--known N] [--margin M] [--stats]\n");
        return 2;
    }
    double lambda = 4.0, margin = 0.0;
    unsigned known = 20;
    int stats = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--lambda") && i + 1 < argc) lambda = atof(argv[++i]);
        else if (!strcmp(argv[i], "--known") && i + 1 < argc) known = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--margin") && i + 1 < argc) margin = atof(argv[++i]);
        else if (!strcmp(argv[i], "--stats")) stats = 1;
    }
    ty_list *l = NULL;
    char err[256];
    size_t skipped = 0;
    if (ty_list_create(&l) != LAYA_OK || ty_list_load(l, argv[1], &skipped, err, sizeof err) != LAYA_OK ||
        ty_list_finish(l) != LAYA_OK) {
        fprintf(stderr, "ty_correct: cannot load %s: %s\n", argv[1], err);
        return 1;
    }
    ty_params p = ty_default_params();
    ty_cand c[64];
    char line[512], low[512];
    double t_total = 0;
    long nq = 0;
    while (fgets(line, sizeof line, stdin)) {
        size_t n = strcspn(line, "\r\n");
        line[n] = 0;
        for (size_t i = 0; i <= n; i++) low[i] = (char)tolower((unsigned char)line[i]);
        uint32_t cnt = 0;
        int in = ty_list_find(l, low, n, &cnt);
        const char *out = line;
        size_t out_n = n;
        if (n && !(in && cnt >= known)) {
            size_t found = 0;
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            ty_candidates(l, low, n, &p, c, 64, &found);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            t_total += (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
            nq++;
            double best = in ? log(cnt + 1.0) + margin : -1e30;
            size_t kmax = found < 64 ? found : 64;
            for (size_t k = 0; k < kmax; k++) {
                double s = log(c[k].count + 1.0) - lambda * c[k].cost;
                if (s > best) {
                    best = s;
                    out = c[k].word;
                    out_n = c[k].len;
                }
            }
        }
        /* Keep the typed case pattern: Capitalized or ALL CAPS. */
        char res[512];
        memcpy(res, out, out_n);
        res[out_n] = 0;
        if (out != line && n) {
            int all_up = n > 1, first_up = isupper((unsigned char)line[0]);
            for (size_t i = 0; i < n; i++) all_up &= !islower((unsigned char)line[i]);
            for (size_t i = 0; i < out_n; i++)
                if (all_up || (i == 0 && first_up)) res[i] = (char)toupper((unsigned char)res[i]);
        }
        printf("%s\n", res);
    }
    if (stats)
        fprintf(stderr, "ty_correct: %zu words (%zu lines skipped), %ld searches, %.1f us per search\n",
                ty_list_size(l), skipped, nq, nq ? t_total / nq * 1e6 : 0.0);
    ty_list_free(l);
    return 0;
}
