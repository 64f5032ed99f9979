/* bench_kernels.c — micro benchmark of the matmul kernels: every table this CPU runs, on the matrix shapes
 * of a 0.5B model (hidden 896, FFN 4864, vocabulary 151936), printing GB/s of weight bytes read (median of
 * repeats, and the best run: this machine may be shared), on one thread and on two. Not part of `make`; build by hand, e.g.
 *   cc -std=c11 -O2 -D_GNU_SOURCE -DLAYA_BUILD -Iinclude -Isrc bench/bench_kernels.c src/base/common.c src/io/quant.c \
 *      src/kernels/kernels.c src/kernels/kernels_ref.c build/src/kernels/x86/kernels_avx*.o -lm -lpthread
 * Arguments (optional): "all" adds Q4_K, Q6_K (as the file holds them and packed, P16), F16 and the other MLX group sizes and scale types; "mlx" runs
 * only the MLX kernels; a table name limits the run to it. MLX weights count their scales and biases as
 * read bytes, so MLX 4-bit group 64 with F16 scales (0.5625 bytes per weight) compares directly with Q4_0,
 * and 8-bit with Q8_0 (1.0625). "typing" takes the 30M typing model's shapes (hidden 512, FFN 1536, vocabulary
 * 16384) and the decode batch sizes 1, 2, 4, 8 instead, and after each type sums one typing decode
 * step's matrices per batch size (typing_step). "P16 Q4_0" and "P16 Q8_0" are the matrices the
 * loader packs for a table with kn_ops.packs (kernels.h), timed on those tables and counting the packed
 * bytes. "vnni" first prints this core's rate of the operations that bound the P16 kernel at B > 1:
 * vpdpbusd with a broadcast memory operand (its form there) and fma, per ns, on independent chains. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/common.h"
#include "kernels/kernels.h"
#include "io/qtypes.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One matmul call, as the forward pass makes it. bits != 0 marks an MLX call: W holds the words, act the
 * F32 rows (K floats apart), and scales / biases of type sbt. */
typedef struct job {
    const kn_ops *k;
    uint32_t type;
    const uint8_t *W;
    size_t wrb;
    const uint8_t *act;
    size_t arb;
    int B;
    int64_t K, r0, r1;
    float *y;
    size_t ldy;
    int bits, group;
    uint32_t sbt;
    const void *scales, *biases;
} job;

static void run_job(const job *j) {
    if (j->bits)
        j->k->matmul_mlx(j->bits, j->group, (const uint32_t *)j->W, j->scales, j->biases, j->sbt,
                         (const float *)j->act, (size_t)j->K, j->B, j->K, j->r0, j->r1, j->y, j->ldy);
    else
        j->k->matmul(j->type, j->W, j->wrb, j->act, j->arb, j->B, j->K, j->r0, j->r1, j->y, j->ldy);
}

/* A second thread that spins on a generation counter, so a two-thread call costs no thread start. It runs
 * only while two-thread calls are timed: spinning during the one-thread runs would steal the second core. */
static job g_job2;
static atomic_int g_gen, g_done, g_quit;

static void *worker(void *arg) {
    int seen = (int)(intptr_t)arg; /* the generation current when it was started */
    for (;;) {
        int g;
        while ((g = atomic_load(&g_gen)) == seen)
            if (atomic_load(&g_quit)) return NULL;
        seen = g;
        run_job(&g_job2);
        atomic_store(&g_done, g);
    }
}

static double time_call(const job *j, int threads) {
    double t0 = now();
    if (threads == 1) {
        run_job(j);
    } else {
        job a = *j;
        int64_t mid = j->r0 + (j->r1 - j->r0) / 2;
        a.r1 = mid;
        g_job2 = *j;
        g_job2.r0 = mid;
        int g = atomic_fetch_add(&g_gen, 1) + 1;
        run_job(&a);
        while (atomic_load(&g_done) != g) {}
    }
    return now() - t0;
}

/* One weight format to time: a GGUF type, or MLX (bits != 0) with a group size and scale type. */
typedef struct variant {
    const char *name;
    uint32_t type;
    int bits, group;
    uint32_t sbt;
} variant;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* vpdpbusd zmm with a {1to16} memory operand on 12 independent chains, and vfmadd231ps zmm on 12, per ns */
__attribute__((target("avx512f,avx512vnni"), noinline)) static void vnni_rates(void) {
    static uint8_t mem[4096] __attribute__((aligned(64)));
    for (int i = 0; i < 4096; i++) mem[i] = (uint8_t)i;
    /* named variables, not arrays: each chain stays in its register */
    __m512i w = _mm512_set1_epi8(3), a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
            a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
    __m512 m = _mm512_set1_ps(1.0000001f), f0 = _mm512_set1_ps(1), f1 = _mm512_set1_ps(2), f2 = _mm512_set1_ps(3),
           f3 = _mm512_set1_ps(4), f4 = _mm512_set1_ps(5), f5 = _mm512_set1_ps(6), f6 = _mm512_set1_ps(7),
           f7 = _mm512_set1_ps(8), f8 = _mm512_set1_ps(9), f9 = _mm512_set1_ps(10), f10 = _mm512_set1_ps(11),
           f11 = _mm512_set1_ps(12);
    const long n = 20000000;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        const uint8_t *p = mem + (i & 31) * 64;
#define DPB(x, k) __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(x) : "v"(w), "m"(*(const int32_t(*)[1])(p + 4 * (k))))
        DPB(a0, 0); DPB(a1, 1); DPB(a2, 2); DPB(a3, 3); DPB(a4, 4); DPB(a5, 5);
        DPB(a6, 6); DPB(a7, 7); DPB(a8, 8); DPB(a9, 9); DPB(a10, 10); DPB(a11, 11);
#undef DPB
    }
    double t1 = now();
    for (long i = 0; i < n; i++) {
#define FMA(x) x = _mm512_fmadd_ps(x, m, m)
        FMA(f0); FMA(f1); FMA(f2); FMA(f3); FMA(f4); FMA(f5); FMA(f6); FMA(f7); FMA(f8); FMA(f9); FMA(f10); FMA(f11);
#undef FMA
    }
    double t2 = now();
    __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(a0, a1), _mm512_add_epi32(a2, a3)),
                                 _mm512_add_epi32(_mm512_add_epi32(a4, a5), _mm512_add_epi32(a6, a7)));
    s = _mm512_add_epi32(s, _mm512_add_epi32(_mm512_add_epi32(a8, a9), _mm512_add_epi32(a10, a11)));
    __m512 fs = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(f0, f1), _mm512_add_ps(f2, f3)),
                              _mm512_add_ps(_mm512_add_ps(f4, f5), _mm512_add_ps(f6, f7)));
    fs = _mm512_add_ps(fs, _mm512_add_ps(_mm512_add_ps(f8, f9), _mm512_add_ps(f10, f11)));
    printf("vpdpbusd zmm, m32bcst: %.2f per ns; vfmadd231ps zmm: %.2f per ns (checksums %d %g)\n",
           12.0 * n / (t1 - t0) * 1e-9, 12.0 * n / (t2 - t1) * 1e-9, _mm512_reduce_add_epi32(s),
           (double)_mm512_reduce_add_ps(fs));
}
#endif

static const int g_bs_05b[] = {1, 4, 64, 0}, g_bs_typing[] = {1, 2, 4, 8, 0}; /* 64: the prefill panel path */
static const int *Bs = g_bs_05b;

static const char *const g_names[] = {"scalar", "avx2", "avxvnni", "avx512", "neon", "neondot"};
#define N_TABLES (int)(sizeof g_names / sizeof *g_names)
/* Medians (s) of the last variant's calls by table, batch size, shape and thread count: typing_step sums them. */
static double g_med[N_TABLES][8][4][2];

/* Times every selected table on one variant and shape (si: its index in the shape list), printing a line
 * per batch size. */
static void bench_shape(const variant *v, int64_t N, int64_t K, int si, const char *only) {
    size_t wrb, arb, sbs = v->sbt == QT_F32 ? 4 : 2, sb_bytes = 0;
    if (v->bits) {
        if (K % v->group) return;
        wrb = (size_t)K * (size_t)v->bits / 8, arb = (size_t)K * sizeof(float);
        sb_bytes = (size_t)(K / v->group) * sbs * (size_t)N; /* each of scales and biases */
    } else {
        uint32_t src = kn_p16_source(v->type) ? kn_p16_source(v->type) : v->type;
        wrb = qt_row_bytes(src, K), arb = kn_act_row_bytes(v->type, K);
        if (!wrb) return;
    }
    size_t wbytes = wrb * (size_t)N, read_bytes = wbytes + 2 * sb_bytes;
    uint32_t p16_src = v->bits ? 0 : kn_p16_source(v->type);
    uint8_t *W = laya_aligned_alloc(64, wbytes);
    uint8_t *sc = sb_bytes ? laya_aligned_alloc(64, sb_bytes) : NULL, *bi = sb_bytes ? laya_aligned_alloc(64, sb_bytes) : NULL;
    float *x = malloc((size_t)K * 64 * sizeof(float));
    uint8_t *act = laya_aligned_alloc(64, arb * 64);
    float *y = malloc((size_t)N * 64 * sizeof(float));
    /* real blocks: quantize random rows, then repeat them (quantizing 150k rows takes a while) */
    float *row = malloc((size_t)K * sizeof(float));
    size_t sb_row = (size_t)(v->bits ? K / v->group : 0) * sbs;
    for (int64_t r = 0; r < N; r++) {
        if (r < 64) {
            for (int64_t k = 0; k < K; k++) row[k] = (float)rand() / (float)RAND_MAX - 0.5f;
            if (v->bits)
                mlx_quantize_row(v->bits, v->group, row, (uint32_t *)(W + (size_t)r * wrb), sc + (size_t)r * sb_row,
                                 bi + (size_t)r * sb_row, v->sbt, K);
            else
                qt_quantize_row(p16_src ? p16_src : v->type, row, W + (size_t)r * wrb, K);
        } else {
            memcpy(W + (size_t)r * wrb, W + (size_t)(r % 64) * wrb, wrb);
            if (v->bits) {
                memcpy(sc + (size_t)r * sb_row, sc + (size_t)(r % 64) * sb_row, sb_row);
                memcpy(bi + (size_t)r * sb_row, bi + (size_t)(r % 64) * sb_row, sb_row);
            }
        }
    }
    for (int64_t k = 0; k < 64 * K; k++) x[k] = (float)rand() / (float)RAND_MAX - 0.5f;
    uint8_t *Wsrc = W;
    if (p16_src) { /* the loader's copy (model.c pack_weights), which the kernel reads instead */
        read_bytes = kn_pack_bytes(v->type, N, K);
        W = laya_aligned_alloc(64, read_bytes);
        kn_pack(v->type, Wsrc, wrb, N, K, 0, (N + 15) / 16, W);
        laya_free(Wsrc);
    }
    for (size_t ni = 0; ni < N_TABLES; ni++) {
        const kn_ops *kn = kn_by_name(g_names[ni]);
        if (!kn || (only && strcmp(only, g_names[ni])) || (!only && !strcmp(g_names[ni], "scalar"))) continue;
        if (p16_src && !(kn->packs & KN_PACKS(p16_src)) && strcmp(g_names[ni], "scalar")) continue; /* only where the loader packs */
        if (v->bits) memcpy(act, x, (size_t)K * 64 * sizeof(float));
        else for (int b = 0; b < 64; b++) kn->quantize_act(v->type, x + b * K, act + b * arb, K);
        for (size_t bi_ = 0; Bs[bi_]; bi_++) {
            job j = {kn, v->type, W, wrb, act, arb, Bs[bi_], K, 0, N, y, (size_t)N, v->bits, v->group, v->sbt, sc, bi};
            double med[2], best = 0;
            pthread_t th;
            for (int threads = 1; threads <= 2; threads++) {
                if (threads == 2) {
                    atomic_store(&g_quit, 0);
                    pthread_create(&th, NULL, worker, (void *)(intptr_t)atomic_load(&g_gen));
                }
                double t[201];
                int n = 0;
                double start = now();
                time_call(&j, threads); /* warm the caches and page tables */
                while (n < 201 && (n < 7 || now() - start < 0.4)) t[n++] = time_call(&j, threads);
                qsort(t, (size_t)n, sizeof *t, cmp_d);
                med[threads - 1] = t[n / 2];
                if (threads == 1) best = t[0];
            }
            atomic_store(&g_quit, 1);
            pthread_join(th, NULL);
            g_med[ni][bi_][si][0] = med[0], g_med[ni][bi_][si][1] = med[1];
            char shape[32];
            snprintf(shape, sizeof shape, "%lldx%lld", (long long)N, (long long)K);
            printf("%-7s %-13s %-14s %2d %9.3f %9.2f %9.2f %9.2f\n", kn->name, v->name, shape, Bs[bi_], med[0] * 1e3,
                   read_bytes / med[0] * 1e-9, read_bytes / best * 1e-9, read_bytes / med[1] * 1e-9);
            fflush(stdout);
        }
    }
    laya_free(W), laya_free(sc), laya_free(bi), laya_free(act), free(x), free(y), free(row);
}

/* The matrices of one typing decode step from the last variant's medians: 8 layers of q and o (512 x 512),
 * k and v (256 x 512: together one 512 x 512), gate and up (1536 x 512), down (512 x 1536), then the
 * output layer (16384 x 512). "ideal 2t" is the one-thread sum halved: the step's kernels split evenly over
 * two threads with nothing between them, the least a two-thread step can spend in its matrices. */
static void typing_step(const variant *v) {
    static const double mult[4] = {8 * 3, 8 * 2, 8, 1};
    for (int ni = 0; ni < N_TABLES; ni++) {
        double one = 0;
        for (size_t bi = 0; Bs[bi]; bi++) {
            double t[2] = {0, 0};
            for (int si = 0; si < 4; si++)
                for (int th = 0; th < 2; th++) t[th] += mult[si] * g_med[ni][bi][si][th];
            if (t[0] <= 0) continue;
            if (bi == 0) one = t[0];
            printf("%-7s %-13s a typing step's matrices, B %d: one thread %.3f ms, ideal 2t %.3f, measured 2t %.3f; "
                   "x%.2f B = 1's\n", g_names[ni], v->name, Bs[bi], t[0] * 1e3, t[0] * 0.5e3, t[1] * 1e3, one > 0 ? t[0] / one : 0);
        }
    }
}

int main(int argc, char **argv) {
    int all = 0, mlx_only = 0, typing = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "all")) all = 1;
        else if (!strcmp(argv[i], "mlx")) mlx_only = 1;
        else if (!strcmp(argv[i], "typing")) typing = 1;
        else if (!strcmp(argv[i], "vnni")) {
#if defined(__x86_64__) && defined(__GNUC__)
            if (__builtin_cpu_supports("avx512vnni")) vnni_rates();
            else printf("vnni: this CPU has no AVX-512 VNNI\n");
#endif
        }
        else only = argv[i];
    }
    static const int64_t shapes_05b[4][2] = {{896, 896}, {4864, 896}, {896, 4864}, {151936, 896}}; /* rows N x cols K */
    static const int64_t shapes_typing[4][2] = {{512, 512}, {1536, 512}, {512, 1536}, {16384, 512}};
    const int64_t(*shapes)[2] = typing ? shapes_typing : shapes_05b;
    if (typing) Bs = g_bs_typing;
    static const variant base[] = {
        {"P16 Q4_0", KN_P16_Q4_0, 0, 0, 0},
        {"P16 Q8_0", KN_P16_Q8_0, 0, 0, 0},
        {"Q4_0", QT_Q4_0, 0, 0, 0},
        {"MLX4 g64 F16", 0, 4, 64, QT_F16},
        {"Q8_0", QT_Q8_0, 0, 0, 0},
        {"MLX8 g64 F16", 0, 8, 64, QT_F16},
    };
    static const variant extra[] = {
        {"P16 Q4_K", KN_P16_Q4_K, 0, 0, 0},   {"P16 Q6_K", KN_P16_Q6_K, 0, 0, 0},
        {"Q4_K", QT_Q4_K, 0, 0, 0},           {"Q6_K", QT_Q6_K, 0, 0, 0},
        {"F16", QT_F16, 0, 0, 0},             {"MLX4 g32 F16", 0, 4, 32, QT_F16},
        {"MLX4 g128 F16", 0, 4, 128, QT_F16}, {"MLX4 g64 BF16", 0, 4, 64, QT_BF16},
        {"MLX8 g32 BF16", 0, 8, 32, QT_BF16}, {"MLX8 g128 F32", 0, 8, 128, QT_F32},
    };
    const variant *vs[24];
    int nv = 0;
    for (size_t i = 0; i < sizeof base / sizeof *base; i++) vs[nv++] = &base[i];
    for (size_t i = 0; all && i < sizeof extra / sizeof *extra; i++) vs[nv++] = &extra[i];

    printf("%-7s %-13s %-14s %2s %9s %9s %9s %9s\n", "table", "type", "N x K", "B", "ms(1t)", "GB/s(1t)", "best(1t)",
           "GB/s(2t)");
    for (int vi = 0; vi < nv; vi++) {
        if (mlx_only && !vs[vi]->bits) continue;
        memset(g_med, 0, sizeof g_med);
        for (int si = 0; si < 4; si++)
            bench_shape(vs[vi], shapes[si][0], shapes[si][1], si, only);
        if (typing) typing_step(vs[vi]);
    }
    return 0;
}
