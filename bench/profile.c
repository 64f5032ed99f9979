/* profile.c — `make profile`: where a decode step's time goes, phase by phase (engine/fwprof.h), for
 * B = 1 and B = 4 after a 64-token prompt, as `laya bench` runs its steps. Built against the library
 * objects compiled with -DLAYA_PROFILE (build/prof/); the shipped library has no timers. Not a test.
 *   build/prof/laya-profile -m MODEL.gguf [--threads N] [--reps N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/fwprof.h"
#include "laya.h"

#ifndef LAYA_PROFILE
#error "bench/profile.c needs the profiled library: make profile"
#endif

#define PREFIX 64
#define MAX_KV 512
#define N_TOK 512

static const int k_batch[2] = {1, 4};

static int usage(void) {
    fputs("usage: laya-profile -m MODEL [--threads N] [--reps N]\n"
          "  mean ms per decode step by phase, B = 1 and B = 4, after a 64-token prompt\n"
          "  (steps: 4 x reps, at least 8; threads: 0 = every online CPU)\n",
          stderr);
    return 2;
}

static int fail(laya_context *c, const char *what) {
    fprintf(stderr, "laya-profile: %s: %s\n", what, laya_context_error(c));
    return 1;
}

/* Sequences 0..B-1 hold the prompt (forked from sequence 0), then `steps` decode steps of one token each;
 * with timing on (prof) the phase sums are read into ms, per step. */
static int run_steps(laya_context *c, int B, int steps, const laya_token *tok, int prof, double ms[FP_N]) {
    int32_t bseq[4];
    laya_token btok[4];
    int8_t want[4] = {1, 1, 1, 1};
    laya_seq_truncate(c, 0, PREFIX);
    for (int j = 0; j < B; j++) {
        bseq[j] = j;
        if (j && laya_seq_fork(c, 0, j, PREFIX)) return fail(c, "fork");
    }
    for (int step = -1; step < steps; step++) {
        if (step == 0 && prof) fw_profile_enable(c, 1); /* the first step (-1) untimed, as laya bench */
        for (int j = 0; j < B; j++) btok[j] = tok[(PREFIX + step + 1 + j * 7) % N_TOK];
        if (laya_decode(c, (laya_batch){B, btok, bseq, want})) return fail(c, "decode");
    }
    if (prof) {
        int64_t nd;
        fw_profile_read(c, ms, &nd);
        fw_profile_enable(c, 0);
        for (int f = 0; f < FP_N; f++) ms[f] /= (double)(nd ? nd : 1);
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *model = NULL;
    long threads = 0, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = strtol(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = strtol(argv[++i], NULL, 10);
        else return usage();
    }
    if (!model || threads < 0 || threads > 64 || reps < 1 || reps > 10000) return usage();

    char err[LAYA_ERR_MSG_MAX] = "";
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = (int32_t)threads;
    laya_model *m = NULL;
    if (laya_model_load(model, mp, &m, err, sizeof err)) {
        fprintf(stderr, "laya-profile: cannot load %s: %s\n", model, err);
        return 1;
    }
    laya_context_params cp = laya_context_default_params();
    cp.n_seq = 4;
    cp.max_kv_size = MAX_KV;
    cp.max_batch = N_TOK;
    cp.max_logits = 4;
    laya_context *c = NULL;
    if (laya_context_create(m, cp, &c, err, sizeof err)) {
        fprintf(stderr, "laya-profile: cannot create a context: %s\n", err);
        laya_model_free(m);
        return 1;
    }
    /* ids spread over the vocabulary; their values do not change the work done */
    laya_token tok[N_TOK];
    int32_t seq[N_TOK] = {0};
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < N_TOK; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (laya_token)((s >> 33) % (uint64_t)laya_n_vocab(m));
    }
    int rc = 0;
    const int steps = (int)(4 * reps < 8 ? 8 : 4 * reps > MAX_KV - PREFIX - 1 ? MAX_KV - PREFIX - 1 : 4 * reps);
    laya_model_wait_ready(m); /* the packed weights, which a steady-state step uses */
    if (laya_decode(c, (laya_batch){PREFIX, tok, seq, NULL})) rc = fail(c, "prompt");
    double ms[2][FP_N] = {{0}};
    for (int k = 0; k < 2 && !rc; k++) {
        rc = run_steps(c, k_batch[k], steps, tok, 0, ms[k]); /* warm-up: caches, the threads' row shares */
        if (!rc) rc = run_steps(c, k_batch[k], steps, tok, 1, ms[k]);
    }
    if (!rc) {
        laya_model_info info;
        laya_model_get_info(m, &info);
        printf("model %s, backend %s, %d threads, %d decode steps\n", model, laya_cpu_backend(), info.n_threads,
               steps);
        printf("decode step by phase (mean ms)  %10s %10s\n", "B=1", "B=4");
        double tot[2] = {0, 0};
        for (int f = 0; f < FP_N; f++) {
            printf("  %-31s %10.3f %10.3f\n", fw_prof_names[f], ms[0][f], ms[1][f]);
            if (f != FP_SYNC) tot[0] += ms[0][f], tot[1] += ms[1][f];
        }
        printf("  %-31s %10.3f %10.3f\n", "total", tot[0], tot[1]);
    }
    laya_context_free(c);
    laya_model_free(m);
    return rc;
}
