/* bench_step.c — where a decode step stands against the memory: one process, rounds alternating between
 *   kernel jobs   the step's matmul passes (q/k/v, wo, gate/up, down per layer, then the output layer) run
 *                 as pool jobs with the packed kernels, B activation rows, each matrix's 16-row panels
 *                 split evenly between the threads, as a packed decode splits them (KN_STREAM as there);
 *   read jobs     the same jobs, each thread reading its panels' bytes with a plain two-stream loop;
 *   one read      one two-stream loop a thread over the whole packed copy (those matrices and any others
 *                 packed), split in halves;
 *   step          laya_decode of one token for each of B sequences forked from a 64-token prompt
 *                 (attention, norms, residual adds, the threads' learned shares: everything).
 * kernel jobs / read jobs is what the kernels cost beyond reading; read jobs / one read what cutting the
 * weights into 97 jobs costs; step / kernel jobs what the rest of the step adds. Medians and p10 over the
 * rounds, ms. Needs weights the loader packs (Q8_0, Q4_0, ... on AVX-512; laya_model_params.pack_weights)
 * and an x86-64 with AVX-512. Not part of `make`; build by hand after `make`:
 *   cc -O2 -mavx512f -D_GNU_SOURCE -DLAYA_BUILD -Iinclude -Isrc bench/bench_step.c build/liblaya.a \
 *      -lm -lpthread -o /tmp/bench_step && /tmp/bench_step MODEL.gguf [ROUNDS [B]]
 * (ROUNDS 1-256, default 8; B 1-8, default 1). */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "laya.h"
#include "engine/model.h"
#include "base/pool.h"

#define MAX_ROUNDS 256

typedef struct {
    const lm_mat *w[3];
    const void *act[3]; /* each matrix's activation row, in its P16 type's format */
    int n;
} pass;

static pass *g_pass;
static int g_npass, g_read, g_B = 1;
static uint32_t g_stream; /* KN_STREAM where the packed set is larger than KN_STREAM_BYTES, as in a step */
static const kn_ops *g_kn;
static float *g_y;
static volatile long long g_sink[64 * 8];

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* n bytes from p as two streams (its halves side by side), each line also asked for 4 KB ahead: the
 * floor's fastest loop from DRAM (tools/cmd_bench.c) */
static long long read2(const char *p, size_t n) {
    const size_t h = n / 128 * 64;
    const char *q = p + h;
    __m512i s0 = _mm512_setzero_si512(), s1 = s0;
    for (size_t i = 0; i < h; i += 64) {
        _mm_prefetch(p + i + 4096, _MM_HINT_T0);
        _mm_prefetch(q + i + 4096, _MM_HINT_T0);
        s0 = _mm512_add_epi32(s0, _mm512_loadu_si512(p + i));
        s1 = _mm512_add_epi32(s1, _mm512_loadu_si512(q + i));
    }
    return _mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));
}

static void pass_job(void *arg, int chunk, int n_chunks, int tid) {
    const pass *ps = arg;
    for (int i = 0; i < ps->n; i++) {
        const lm_mat *w = ps->w[i];
        const int64_t nblk = (w->rows + 15) / 16, b0 = nblk * chunk / n_chunks, b1 = nblk * (chunk + 1) / n_chunks;
        if (b0 >= b1) continue;
        if (g_read) {
            const size_t pb = kn_pack_panel_bytes(w->ptype, w->cols);
            g_sink[tid * 8] += read2((const char *)w->pdata + (size_t)b0 * pb, (size_t)(b1 - b0) * pb);
        } else {
            g_kn->matmul(w->ptype | g_stream, w->pdata, w->row_bytes, ps->act[i],
                         kn_act_row_bytes(w->ptype, w->cols), g_B, w->cols, b0 * 16, LAYA_MIN(w->rows, b1 * 16), g_y,
                         (size_t)w->rows);
        }
    }
}

typedef struct {
    const char *p;
    size_t n;
} span;

static void span_job(void *arg, int chunk, int n_chunks, int tid) {
    const span *s = arg;
    const size_t part = s->n / (size_t)n_chunks / 128 * 128;
    g_sink[tid * 8] += read2(s->p + part * (size_t)chunk, part);
}

/* Adds matrix w to the pass being built; 0 when it is not packed. */
static int add_mat(pass *ps, const lm_mat *w, size_t *bytes) {
    if (!w->pdata) return 0;
    const size_t arb = kn_act_row_bytes(w->ptype, w->cols);
    float *x = malloc((size_t)w->cols * sizeof *x);
    void *a = aligned_alloc(64, (arb * (size_t)g_B + 63) / 64 * 64);
    if (!x || !a) return 0;
    for (int b = 0; b < g_B; b++) {
        for (int64_t i = 0; i < w->cols; i++) x[i] = (float)((i * 7919 + b * 13) % 101 - 50) / 50.0f;
        g_kn->quantize_act(w->ptype, x, (char *)a + arb * (size_t)b, w->cols);
    }
    free(x);
    ps->w[ps->n] = w;
    ps->act[ps->n++] = a;
    *bytes += (size_t)((w->rows + 15) / 16) * kn_pack_panel_bytes(w->ptype, w->cols);
    return 1;
}

static void report(const char *name, double *t, int n, size_t bytes) {
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    printf("%-12s median %8.3f ms  p10 %8.3f  (%5.1f GB/s)\n", name, t[n / 2], t[n / 10],
           (double)bytes / t[n / 2] / 1e6);
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: bench_step MODEL [ROUNDS [B]]\n"), 2;
    const int rounds = argc > 2 ? LAYA_MAX(1, LAYA_MIN(MAX_ROUNDS, atoi(argv[2]))) : 8;
    g_B = argc > 3 ? LAYA_MAX(1, LAYA_MIN(8, atoi(argv[3]))) : 1;
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 2;
    laya_model *m;
    char err[256];
    if (laya_model_load(argv[1], mp, &m, err, sizeof err)) return fprintf(stderr, "bench_step: %s\n", err), 1;
    laya_model_wait_ready(m);
    g_kn = m->kn;
    g_stream = m->packed_bytes > KN_STREAM_BYTES ? KN_STREAM : 0;
    g_pass = calloc((size_t)m->hp.n_layer * 4 + 1, sizeof *g_pass);
    g_y = aligned_alloc(64, ((size_t)g_B * m->hp.n_vocab * sizeof(float) + 63) / 64 * 64);
    if (!g_pass || !g_y) return fprintf(stderr, "bench_step: out of memory\n"), 1;
    size_t bytes = 0;
    int ok = 1;
    for (int l = 0; l < m->hp.n_layer; l++) {
        const lm_layer *L = &m->layers[l];
        pass *p = &g_pass[g_npass];
        ok &= add_mat(p, &L->wq, &bytes) & add_mat(p, &L->wk, &bytes) & add_mat(p, &L->wv, &bytes);
        ok &= add_mat(&g_pass[++g_npass], &L->wo, &bytes);
        p = &g_pass[++g_npass];
        ok &= add_mat(p, &L->w_gate, &bytes) & add_mat(p, &L->w_up, &bytes);
        ok &= add_mat(&g_pass[++g_npass], &L->w_down, &bytes);
        g_npass++;
    }
    ok &= add_mat(&g_pass[g_npass++], &m->output, &bytes);
    if (!ok) return fprintf(stderr, "bench_step: every matrix must be packed (a P16 type on this CPU)\n"), 1;

    /* the packed copy itself, so that the one loop reads the same pages as the jobs */
    span whole = {m->packed, m->packed_bytes};

    laya_context_params cp = laya_context_default_params();
    cp.n_seq = g_B;
    cp.max_kv_size = 512;
    laya_context *c;
    if (laya_context_create(m, cp, &c, err, sizeof err)) return fprintf(stderr, "bench_step: %s\n", err), 1;
    laya_token tok[64];
    int32_t seq[64] = {0}, bseq[8];
    laya_token btok[8];
    for (int i = 0; i < 64; i++) tok[i] = (laya_token)((i * 131) % 1000 + 10);
    if (laya_decode(c, (laya_batch){64, tok, seq, NULL}))
        return fprintf(stderr, "bench_step: %s\n", laya_context_error(c)), 1;

    /* four of each a round; the library's context has its own pool, whose worker sleeps while this one runs */
    static double t[4][MAX_ROUNDS * 4];
    int nt[4] = {0};
    for (int r = 0, step = 0; r < rounds; r++) {
        lp_pool *pool;
        if (lp_create(2, &pool) != LAYA_OK) return fprintf(stderr, "bench_step: no threads\n"), 1;
        for (int rep = 0; rep < 4; rep++) {
            for (g_read = 0; g_read < 2; g_read++) {
                double t0 = now_ms();
                for (int i = 0; i < g_npass; i++) lp_run(pool, pass_job, &g_pass[i], 2);
                t[g_read][nt[g_read]++] = now_ms() - t0;
            }
            double t0 = now_ms();
            lp_run(pool, span_job, &whole, 2);
            t[2][nt[2]++] = now_ms() - t0;
        }
        lp_free(pool);
        for (int s = 0; s < 4; s++, step++) {
            if (s == 0) { /* each round's steps: B sequences forked from the 64-token prompt */
                laya_seq_truncate(c, 0, 64);
                for (int b = 1; b < g_B; b++)
                    if (laya_seq_fork(c, 0, b, 64)) return fprintf(stderr, "bench_step: %s\n", laya_context_error(c)), 1;
            }
            for (int b = 0; b < g_B; b++) bseq[b] = b, btok[b] = (laya_token)((step * 37 + b * 11) % 1000 + 5);
            double t0 = now_ms();
            if (laya_decode(c, (laya_batch){g_B, btok, bseq, NULL}))
                return fprintf(stderr, "bench_step: %s\n", laya_context_error(c)), 1;
            t[3][nt[3]++] = now_ms() - t0;
        }
    }
    printf("%s: %d matmul passes, %.1f MB, %d rounds\n", argv[1], g_npass, (double)bytes / 1e6, rounds);
    report("kernel jobs", t[0], nt[0], bytes);
    report("read jobs", t[1], nt[1], bytes);
    report("one read", t[2], nt[2], m->packed_bytes);
    report("step", t[3], nt[3], bytes);
    for (int i = 0; i < g_npass; i++)
        for (int k = 0; k < g_pass[i].n; k++) free((void *)g_pass[i].act[k]);
    free(g_pass);
    free(g_y);
    laya_context_free(c);
    laya_model_free(m);
    return 0;
}
