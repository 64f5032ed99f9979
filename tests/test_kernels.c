/* test_kernels.c — every kernel table this CPU can run (avx2, avx512, neon) against the scalar reference
 * on random data and odd shapes, and the reference itself against a naive double-precision
 * dequantize-then-dot, for the GGUF block types and MLX affine weights. Weights are random bytes rather
 * than quantizer output, so every field takes its full range (Q8_0 -128, negative scales, all 6-bit Q4_K
 * scales and mins, every MLX q from 0 to 2^bits - 1). Each table is also checked against itself for
 * batch invariance: a row's outputs alone and inside a batch must be the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/common.h"
#include "kernels/kernels.h"
#include "io/qtypes.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float frnd(void) { return (float)rnd() / 4294967296.0f * 2 - 1; } /* [-1, 1) */

/* A random scale in +-[lo, hi), as fp16. */
static qt_half rnd_scale(float lo, float hi, int allow_negative) {
    float v = lo + (hi - lo) * (frnd() * 0.5f + 0.5f);
    if (allow_negative && (rnd() & 1)) v = -v;
    return f32_to_fp16(v);
}

static void fill_weights(uint32_t type, uint8_t *w, int64_t N, int64_t K) {
    size_t rb = qt_row_bytes(type, K);
    for (int64_t r = 0; r < N; r++) {
        uint8_t *row = w + (size_t)r * rb;
        int64_t nb = K / qt_get(type)->block;
        for (int64_t i = 0; i < nb; i++) {
            switch (type) {
            case QT_F32: ((float *)row)[i] = frnd(); break;
            case QT_F16: ((uint16_t *)row)[i] = f32_to_fp16(frnd()); break;
            case QT_BF16: ((uint16_t *)row)[i] = f32_to_bf16(frnd()); break;
            case QT_Q8_0: {
                block_q8_0 *b = (block_q8_0 *)row + i;
                b->d = rnd_scale(1e-3f, 2e-2f, 1);
                for (int j = 0; j < 32; j++) b->qs[j] = (int8_t)rnd();
                break;
            }
            case QT_Q4_0: {
                block_q4_0 *b = (block_q4_0 *)row + i;
                b->d = rnd_scale(1e-3f, 2e-1f, 1);
                for (int j = 0; j < 16; j++) b->qs[j] = (uint8_t)rnd();
                break;
            }
            case QT_Q4_K: {
                block_q4_K *b = (block_q4_K *)row + i;
                b->d = rnd_scale(1e-4f, 5e-3f, 0);
                b->dmin = rnd_scale(1e-4f, 5e-3f, 1);
                for (int j = 0; j < 12; j++) b->scales[j] = (uint8_t)rnd();
                for (int j = 0; j < 128; j++) b->qs[j] = (uint8_t)rnd();
                break;
            }
            case QT_Q4_1:
            case QT_Q5_0:
            case QT_Q5_1:
            case QT_IQ4_NL: { /* d first; Q4_1 / Q5_1: m second; then random bytes */
                uint8_t *b = row + (size_t)i * (size_t)qt_get(type)->bytes;
                qt_half d = rnd_scale(1e-3f, 1e-1f, 1), m = rnd_scale(1e-3f, 1.0f, 1);
                memcpy(b, &d, 2);
                int first = 2;
                if (type == QT_Q4_1 || type == QT_Q5_1) memcpy(b + 2, &m, 2), first = 4;
                for (int j = first; j < qt_get(type)->bytes; j++) b[j] = (uint8_t)rnd();
                break;
            }
            case QT_Q2_K: {
                block_q2_K *b = (block_q2_K *)row + i;
                for (int j = 0; j < 16; j++) b->scales[j] = (uint8_t)rnd();
                for (int j = 0; j < 64; j++) b->qs[j] = (uint8_t)rnd();
                b->d = rnd_scale(1e-4f, 5e-3f, 1), b->dmin = rnd_scale(1e-4f, 5e-3f, 1);
                break;
            }
            case QT_Q3_K: {
                block_q3_K *b = (block_q3_K *)row + i;
                for (int j = 0; j < 32; j++) b->hmask[j] = (uint8_t)rnd();
                for (int j = 0; j < 64; j++) b->qs[j] = (uint8_t)rnd();
                for (int j = 0; j < 12; j++) b->scales[j] = (uint8_t)rnd();
                b->d = rnd_scale(1e-4f, 5e-3f, 1);
                break;
            }
            case QT_Q5_K: {
                block_q5_K *b = (block_q5_K *)row + i;
                b->d = rnd_scale(1e-4f, 5e-3f, 1), b->dmin = rnd_scale(1e-4f, 5e-3f, 1);
                for (int j = 0; j < 12; j++) b->scales[j] = (uint8_t)rnd();
                for (int j = 0; j < 32; j++) b->qh[j] = (uint8_t)rnd();
                for (int j = 0; j < 128; j++) b->qs[j] = (uint8_t)rnd();
                break;
            }
            case QT_Q6_K: {
                block_q6_K *b = (block_q6_K *)row + i;
                b->d = rnd_scale(1e-5f, 5e-4f, 1);
                for (int j = 0; j < 128; j++) b->ql[j] = (uint8_t)rnd();
                for (int j = 0; j < 64; j++) b->qh[j] = (uint8_t)rnd();
                for (int j = 0; j < 16; j++) b->scales[j] = (int8_t)rnd();
                break;
            }
            }
        }
    }
}

/* Activation row kinds: ordinary, wide dynamic range, an outlier per block, all zero. */
static void fill_act(float *x, int64_t K, int kind) {
    float s = ldexpf(1, (int)(rnd() % 8) - 4);
    for (int64_t k = 0; k < K; k++) {
        switch (kind) {
        case 0: x[k] = frnd() * s; break;
        case 1: x[k] = frnd() * ldexpf(1, (int)(rnd() % 24) - 12); break;
        case 2: x[k] = k % 32 == 7 ? 50 * s : frnd() * s * 0.01f; break;
        default: x[k] = 0; break;
        }
    }
}

/* The activation row as the kernels see it, in double. */
static void act_values(uint32_t wtype, const void *xq, const float *x, int64_t K, double *out) {
    switch (wtype) {
    case QT_Q8_0:
    case QT_Q4_0:
    case QT_Q5_0:
    case QT_IQ4_NL:
        for (int64_t k = 0; k < K; k++) {
            const block_q8_0 *b = (const block_q8_0 *)xq + k / 32;
            out[k] = (double)fp16_to_f32(b->d) * b->qs[k % 32];
        }
        break;
    case QT_Q4_1:
    case QT_Q5_1:
        for (int64_t k = 0; k < K; k++) {
            const block_q8_s *b = (const block_q8_s *)xq + k / 32;
            out[k] = (double)fp16_to_f32(b->d) * b->qs[k % 32];
        }
        break;
    case QT_Q2_K:
    case QT_Q3_K:
    case QT_Q4_K:
    case QT_Q5_K:
    case QT_Q6_K:
        for (int64_t k = 0; k < K; k++) {
            const block_q8_K *b = (const block_q8_K *)xq + k / QK_K;
            out[k] = (double)b->d * b->qs[k % QK_K];
        }
        break;
    default:
        for (int64_t k = 0; k < K; k++) out[k] = x[k];
    }
}

static const uint32_t g_types[] = {QT_F32,  QT_F16,  QT_BF16,   QT_Q8_0, QT_Q4_0, QT_Q4_1, QT_Q5_0, QT_Q5_1,
                                   QT_IQ4_NL, QT_Q2_K, QT_Q3_K, QT_Q4_K, QT_Q5_K, QT_Q6_K};
static int is_k_type(uint32_t t) { return qt_get(t)->block == QK_K; }
static const kn_ops *g_tables[4];
static int g_ntables;

#define SENTINEL 12345.5f

/* Checks quantize_act of every table against the reference: the bytes must be identical, and the
 * quantization error within half a step (plus the fp16 rounding of the q8_0 scale and the float
 * rounding of x / d). */
static void check_quantize_act(uint32_t wtype, const float *x, int64_t K, const void *xq_ref) {
    size_t ab = kn_act_row_bytes(wtype, K);
    uint8_t *xq = malloc(ab);
    for (int t = 1; t < g_ntables; t++) {
        memset(xq, 0x5a, ab);
        g_tables[t]->quantize_act(wtype, x, xq, K);
        CHECK(!memcmp(xq, xq_ref, ab), "%s quantize_act %s K=%lld differs from the reference", g_tables[t]->name,
              qt_get(wtype)->name, (long long)K);
    }
    free(xq);
    if (wtype == QT_F32 || wtype == QT_F16 || wtype == QT_BF16) return;
    int blk = is_k_type(wtype) ? QK_K : 32;
    double *v = malloc((size_t)K * sizeof *v);
    act_values(wtype, xq_ref, x, K, v);
    int bad = 0, bad_sums = 0;
    for (int64_t b0 = 0; b0 < K; b0 += blk) {
        float amax = 0;
        for (int j = 0; j < blk; j++) amax = fmaxf(amax, fabsf(x[b0 + j]));
        double d = amax / 127.0, bound = d * (0.5 + (blk == 32 ? 127 * ldexp(1, -11) : 0) + 1e-4) + 1e-30;
        for (int j = 0; j < blk; j++) bad += !(fabs(v[b0 + j] - x[b0 + j]) <= bound);
        if (blk == QK_K) {
            const block_q8_K *q = (const block_q8_K *)xq_ref + b0 / QK_K;
            for (int s = 0; s < 16; s++) {
                int sum = 0;
                for (int j = 0; j < 16; j++) sum += q->qs[16 * s + j], bad += q->qs[16 * s + j] == -128;
                bad_sums += sum != q->bsums[s];
            }
        } else if (wtype == QT_Q4_1 || wtype == QT_Q5_1) {
            const block_q8_s *q = (const block_q8_s *)xq_ref + b0 / 32;
            int sum = 0;
            for (int j = 0; j < 32; j++) sum += q->qs[j], bad += q->qs[j] == -128;
            bad_sums += sum != q->sum;
        } else {
            const block_q8_0 *q = (const block_q8_0 *)xq_ref + b0 / 32;
            for (int j = 0; j < 32; j++) bad += q->qs[j] == -128;
        }
    }
    CHECK(bad == 0 && bad_sums == 0, "activation quantization %s K=%lld: %d values, %d sums wrong",
          qt_get(wtype)->name, (long long)K, bad, bad_sums);
    free(v);
}

/* One shape: the reference against the naive double product, then every table against the reference. */
static void check_case(uint32_t type, int64_t K, int64_t N, int B, int64_t r0, int64_t r1) {
    size_t wrb = qt_row_bytes(type, K), arb = kn_act_row_bytes(type, K), ldy = (size_t)N + 3;
    uint8_t *W = malloc(wrb * (size_t)N);
    float *x = malloc((size_t)B * (size_t)K * sizeof(float));
    uint8_t *act = malloc(arb * (size_t)B);
    float *wf = malloc((size_t)K * sizeof(float));
    double *av = malloc((size_t)K * B * sizeof(double));
    double *exact = malloc((size_t)B * (size_t)N * sizeof(double)), *mag = malloc((size_t)B * (size_t)N * sizeof(double));
    double *mag_off = calloc((size_t)B * (size_t)N, sizeof(double));
    float *yref = malloc((size_t)B * ldy * sizeof(float)), *y = malloc((size_t)B * ldy * sizeof(float));
    fill_weights(type, W, N, K);
    for (int b = 0; b < B; b++) {
        fill_act(x + (size_t)b * K, K, b == 2 ? 3 : (int)(rnd() % 3));
        kn_ref_ops.quantize_act(type, x + (size_t)b * K, act + (size_t)b * arb, K);
        act_values(type, act + (size_t)b * arb, x + (size_t)b * K, K, av + (size_t)b * K);
    }
    for (int64_t r = 0; r < N; r++) {
        qt_dequantize_row(type, W + (size_t)r * wrb, wf, K);
        for (int b = 0; b < B; b++) {
            double s = 0, m = 0;
            for (int64_t k = 0; k < K; k++) s += wf[k] * av[(size_t)b * K + k], m += fabs(wf[k] * av[(size_t)b * K + k]);
            exact[(size_t)b * N + r] = s, mag[(size_t)b * N + r] = m;
        }
        /* A SIMD kernel may feed the weights in unsigned (q + 8, q + 128) and subtract offset * sum(a)
         * per block; then its float lanes carry terms of that size, and so do its rounding errors. */
        /* Q4_1 / Q5_1: the kernels take d * sum(q a) and m * sum(a) apart, and round each */
        for (int64_t i = 0; (type == QT_Q4_1 || type == QT_Q5_1) && i < K / 32; i++) {
            int q[32];
            float d, m;
            qt_block_ints(type, W + (size_t)r * wrb + (size_t)i * (size_t)qt_get(type)->bytes, q, NULL, NULL, &d, &m);
            for (int b = 0; b < B; b++) {
                const block_q8_s *ab = (const block_q8_s *)(act + (size_t)b * arb) + i;
                double qa = 0;
                for (int j = 0; j < 32; j++) qa += q[j] * ab->qs[j];
                mag[(size_t)b * N + r] += fabs(fp16_to_f32(ab->d)) * (fabs(d * qa) + fabs(m * (double)ab->sum));
            }
        }
        int off = type == QT_Q4_0 ? 8 : type == QT_Q5_0 ? 16 : type == QT_Q8_0 || type == QT_IQ4_NL ? 128 : 0;
        for (int64_t i = 0; off && i < K / 32; i++) {
            int q[32];
            float d, dmin;
            qt_block_ints(type, W + (size_t)r * wrb + (size_t)i * (size_t)qt_get(type)->bytes, q, NULL, NULL, &d, &dmin);
            double dw = fabs(d);
            for (int b = 0; b < B; b++) {
                const block_q8_0 *ab = (const block_q8_0 *)(act + (size_t)b * arb) + i;
                double sa = 0;
                for (int j = 0; j < 32; j++) sa += abs(ab->qs[j]);
                mag_off[(size_t)b * N + r] += dw * fabs(fp16_to_f32(ab->d)) * off * sa;
            }
        }
    }
    const char *name = qt_get(type)->name;
    for (int t = 0; t < g_ntables; t++) {
        float *out = t == 0 ? yref : y;
        for (size_t i = 0; i < (size_t)B * ldy; i++) out[i] = SENTINEL;
        g_tables[t]->matmul(type, W, wrb, act, arb, B, K, r0, r1, out, ldy);
        int bad = 0, stray = 0;
        double worst = 0;
        for (int b = 0; b < B; b++)
            for (size_t r = 0; r < ldy; r++) {
                float v = out[(size_t)b * ldy + r];
                if ((int64_t)r < r0 || (int64_t)r >= r1) {
                    stray += v != SENTINEL;
                    continue;
                }
                /* integer sums are exact in every table: only float rounding and summation order differ */
                double want = t == 0 ? exact[(size_t)b * N + r] : yref[(size_t)b * ldy + r];
                double tol = 2e-5 * mag[(size_t)b * N + r] + (t ? 4e-6 * mag_off[(size_t)b * N + r] : 0) + 1e-30;
                double err = fabs(v - want);
                if (!(err <= tol)) bad++;
                if (err / tol > worst) worst = err / tol;
            }
        CHECK(bad == 0 && stray == 0,
              "%s %s K=%lld N=%lld B=%d rows [%lld,%lld): %d wrong (worst %.2f x tol), %d stray writes",
              g_tables[t]->name, name, (long long)K, (long long)N, B, (long long)r0, (long long)r1, bad, worst, stray);
    }
    for (int b = 0; b < B && b < 3; b++) check_quantize_act(type, x + (size_t)b * K, K, act + (size_t)b * arb);
    free(W), free(x), free(act), free(wf), free(av), free(exact), free(mag), free(mag_off), free(yref), free(y);
}

static void test_matmul(void) {
    static const int64_t k_float[] = {1, 7, 32, 33, 64, 96, 100, 256, 512, 768, 4864};
    static const int64_t k_q8[] = {32, 64, 96, 256, 512, 768, 4864};
    static const int64_t k_k[] = {256, 512, 768, 4864};
    static const int64_t Ns[] = {1, 3, 17, 64};
    static const int Bs[] = {1, 2, 3, 4, 5, 8, 13};
    for (size_t ti = 0; ti < sizeof g_types / sizeof *g_types; ti++) {
        uint32_t type = g_types[ti];
        const int64_t *Ks = k_float;
        size_t nk = sizeof k_float / sizeof *k_float;
        if (qt_get(type)->block == 32) Ks = k_q8, nk = sizeof k_q8 / sizeof *k_q8;
        if (is_k_type(type)) Ks = k_k, nk = sizeof k_k / sizeof *k_k;
        for (size_t ki = 0; ki < nk; ki++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                for (size_t bi = 0; bi < sizeof Bs / sizeof *Bs; bi++) {
                    int64_t K = Ks[ki], N = Ns[ni];
                    if (K >= 4096 && N > 17 && Bs[bi] > 5) continue; /* keeps the run short */
                    check_case(type, K, N, Bs[bi], 0, N);
                    if (N >= 3) check_case(type, K, N, Bs[bi], N / 3, N - 1);
                }
        /* batches beyond a register tile over more rows than one L2 chunk */
        int64_t K = type == QT_F32 ? 1024 : type == QT_F16 || type == QT_BF16 ? 2048 : 4864;
        check_case(type, K, 230, 11, 1, 229);
        check_case(type, K, 230, 17, 0, 230);
        if (qt_get(type)->block == 32) { /* the AVX2 kernel's 8-row halves: one row alone in its half, a range from a half */
            check_case(type, 96, 25, 3, 0, 25);
            check_case(type, 64, 41, 5, 24, 41);
            check_case(type, 64, 40, 1, 8, 33);
            check_case(type, 64, 40, 2, 23, 40);
        }
    }
    /* K beyond one chunk of converted activation scales */
    check_case(QT_Q8_0, 16480, 5, 9, 0, 5);
    check_case(QT_Q4_0, 16480, 5, 3, 1, 4);
    check_case(QT_Q4_0, 16480, 19, 7, 1, 18);
    /* the AVX-512 rows-in-lanes kernel (5 <= B < 16): more than one 8-row tile, partial 16-row panels */
    check_case(QT_Q4_0, 896, 40, 15, 3, 37);
    check_case(QT_Q8_0, 2080, 33, 12, 0, 33);
    /* prefill-sized batches (the AVX-512 16-row panel path): partial panels, ranges off the 16-row grid,
     * several K chunks, more activation rows than one shared panel serves */
    for (int q = 0; q < 2; q++) {
        uint32_t t = q ? QT_Q8_0 : QT_Q4_0;
        check_case(t, 4864, 40, 20, 3, 37);
        check_case(t, 2080, 33, 16, 0, 33);
        check_case(t, 96, 17, 70, 1, 17);
    }
    check_case(QT_Q8_0, 16480, 5, 18, 0, 5);
    /* empty ranges write nothing */
    check_case(QT_Q4_0, 64, 3, 2, 2, 2);
    check_case(QT_Q6_K, 256, 3, 2, 3, 3);
}

/* ---- MLX affine weights */

/* A random scale or bias of sb_type, stored at p[i], and its value. */
static double mlx_rnd_sb(uint32_t t, void *p, size_t i, float lo, float hi) {
    float v = lo + (hi - lo) * (frnd() * 0.5f + 0.5f);
    if (rnd() & 1) v = -v;
    if (t == QT_F32) return ((float *)p)[i] = v;
    if (t == QT_F16) return fp16_to_f32(((uint16_t *)p)[i] = f32_to_fp16(v));
    return bf16_to_f32(((uint16_t *)p)[i] = f32_to_bf16(v));
}

/* Element k of a row, read a second way: the words as little-endian bytes; with 4 bits byte k / 2 holds
 * element k in its low nibble when k is even, in its high nibble when odd. */
static int mlx_q_at(int bits, const uint32_t *row, int64_t k) {
    const uint8_t *bytes = (const uint8_t *)row; /* the test runs on little-endian machines only */
    if (bits == 8) return bytes[k];
    return k % 2 ? bytes[k / 2] >> 4 : bytes[k / 2] & 15;
}

static const char *sb_name(uint32_t t) { return t == QT_F32 ? "F32" : t == QT_F16 ? "F16" : "BF16"; }

/* One shape: the reference against a naive double product of the dequantized weights, then every table
 * against the reference. Tolerances are relative to the size of the terms the kernels actually add,
 * sum over groups of |s| sum q|x| + |b| sum |x|, since the bias term can cancel the scale term. */
static void check_mlx_case(int bits, int group, uint32_t sbt, int64_t K, int64_t N, int B, int64_t r0, int64_t r1,
                           size_t x_stride) {
    const int64_t words = K * bits / 32, ng = K / group;
    const size_t ldy = (size_t)N + 3, sbs = sbt == QT_F32 ? 4 : 2;
    uint32_t *W = malloc((size_t)(words * N) * 4);
    uint8_t *sc = malloc((size_t)(ng * N) * sbs), *bi = malloc((size_t)(ng * N) * sbs);
    double *scd = malloc((size_t)(ng * N) * sizeof(double)), *bid = malloc((size_t)(ng * N) * sizeof(double));
    float *x = malloc((size_t)B * x_stride * sizeof(float));
    double *exact = malloc((size_t)B * (size_t)N * sizeof(double)), *mag = malloc((size_t)B * (size_t)N * sizeof(double));
    float *yref = malloc((size_t)B * ldy * sizeof(float)), *y = malloc((size_t)B * ldy * sizeof(float));
    for (int64_t i = 0; i < words * N; i++) W[i] = rnd();
    for (int64_t i = 0; i < ng * N; i++) {
        /* scales of either sign (MLX's are negative when the max is the edge), biases up to 16 steps */
        scd[i] = mlx_rnd_sb(sbt, sc, (size_t)i, 1e-3f, 2e-2f);
        bid[i] = mlx_rnd_sb(sbt, bi, (size_t)i, 0, 0.3f);
    }
    for (int b = 0; b < B; b++) {
        fill_act(x + (size_t)b * x_stride, K, b == 2 ? 3 : (int)(rnd() % 3));
        for (int64_t k = K; k < (int64_t)x_stride; k++) x[(size_t)b * x_stride + (size_t)k] = NAN; /* never read */
    }
    for (int64_t r = 0; r < N; r++)
        for (int b = 0; b < B; b++) {
            const float *xb = x + (size_t)b * x_stride;
            double sum = 0, m = 0;
            for (int64_t k = 0; k < K; k++) {
                size_t gi = (size_t)(r * ng + k / group);
                int q = mlx_q_at(bits, W + r * words, k);
                sum += (scd[gi] * q + bid[gi]) * xb[k];
                m += (fabs(scd[gi]) * q + fabs(bid[gi])) * fabs(xb[k]);
            }
            exact[(size_t)b * N + r] = sum, mag[(size_t)b * N + r] = m;
        }
    for (int t = 0; t < g_ntables; t++) {
        float *out = t == 0 ? yref : y;
        for (size_t i = 0; i < (size_t)B * ldy; i++) out[i] = SENTINEL;
        g_tables[t]->matmul_mlx(bits, group, W, sc, bi, sbt, x, x_stride, B, K, r0, r1, out, ldy);
        int bad = 0, stray = 0;
        double worst = 0;
        for (int b = 0; b < B; b++)
            for (size_t r = 0; r < ldy; r++) {
                float v = out[(size_t)b * ldy + r];
                if ((int64_t)r < r0 || (int64_t)r >= r1) {
                    stray += v != SENTINEL;
                    continue;
                }
                double want = t == 0 ? exact[(size_t)b * N + r] : yref[(size_t)b * ldy + r];
                double tol = 2e-5 * mag[(size_t)b * N + r] + 1e-30, err = fabs(v - want);
                if (!(err <= tol)) bad++;
                if (err / tol > worst) worst = err / tol;
            }
        CHECK(bad == 0 && stray == 0,
              "%s MLX %d-bit g%d %s K=%lld N=%lld B=%d rows [%lld,%lld): %d wrong (worst %.2f x tol), %d stray writes",
              g_tables[t]->name, bits, group, sb_name(sbt), (long long)K, (long long)N, B, (long long)r0,
              (long long)r1, bad, worst, stray);
    }
    free(W), free(sc), free(bi), free(scd), free(bid), free(x), free(exact), free(mag), free(yref), free(y);
}

static void test_matmul_mlx(void) {
    static const int64_t Ks[] = {128, 256, 384, 896, 4864};
    static const int64_t Ns[] = {1, 3, 17, 64};
    static const int Bs[] = {1, 2, 3, 4, 5, 8, 13};
    static const uint32_t sbts[] = {QT_F16, QT_BF16, QT_F32};
    for (int bits = 4; bits <= 8; bits += 4)
        for (int group = 32; group <= 128; group *= 2)
            for (size_t si = 0; si < 3; si++)
                for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++)
                    for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                        for (size_t bi = 0; bi < sizeof Bs / sizeof *Bs; bi++) {
                            int64_t K = Ks[ki], N = Ns[ni];
                            int B = Bs[bi];
                            if (K % group) continue;
                            if (K >= 4096 && N > 17 && B > 5) continue; /* keeps the run short */
                            /* x rows padded (odd strides, unaligned rows) in every other case */
                            size_t xs = (size_t)K + ((ni + bi) % 2 ? 5 : 0);
                            check_mlx_case(bits, group, sbts[si], K, N, B, 0, N, xs);
                            if (N >= 3) check_mlx_case(bits, group, sbts[si], K, N, B, N / 3, N - 1, xs);
                        }
    /* batches beyond a register tile over more rows than one L2 chunk */
    check_mlx_case(4, 64, QT_BF16, 4864, 230, 11, 1, 229, 4864);
    check_mlx_case(8, 32, QT_F16, 4864, 230, 17, 0, 230, 4867);
    /* K beyond one chunk of x sums (259 groups of 32) */
    check_mlx_case(4, 32, QT_F16, 8288, 5, 9, 0, 5, 8288);
    check_mlx_case(8, 32, QT_F32, 8288, 3, 2, 1, 3, 8291);
    /* empty ranges write nothing */
    check_mlx_case(4, 64, QT_F16, 128, 3, 2, 2, 2, 128);
    check_mlx_case(8, 128, QT_BF16, 256, 3, 0, 0, 3, 256);
}

/* ---- batch invariance */

/* Every output of a table must depend only on its weight row and its activation row, bit for bit: not on
 * B, on the row's place in the batch (which register tile, which path: the AVX-512 16-row panel serves
 * B >= 16 only) or on the row range a thread was given. The forward pass relies on it: a prompt decoded
 * as one batch must give the logits of the same tokens decoded one at a time, and with q8 activations a
 * one-ulp difference in one product changes a later quantized byte, which moves the logits by ~0.1 on
 * the bundled model. Checked for each table against itself: the batch of B rows in one call (over the
 * whole range, then over three 16-aligned ranges and an unaligned split, as threads get them) against
 * each row alone. */
static int invariance_bad(const float *yb, const float *y1, int B, int64_t N) {
    int bad = 0;
    for (size_t i = 0; i < (size_t)B * (size_t)N; i++) bad += yb[i] != y1[i];
    return bad;
}

static void ranges_call(const kn_ops *k, uint32_t type, const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb,
                        int B, int64_t K, int64_t N, int split, float *y) {
    /* split 0: one call; 1: 16-row blocks in three parts (as forward.c's mm_worker); 2: at row 5 */
    int64_t cut[4] = {0, N, N, N};
    if (split == 1) {
        int64_t nblk = (N + 15) / 16;
        for (int c = 1; c < 3; c++) cut[c] = LAYA_MIN(N, nblk * c / 3 * 16);
    } else if (split == 2) {
        cut[1] = LAYA_MIN(N, 5);
    }
    for (int c = 0; c < 3; c++)
        if (cut[c] < cut[c + 1]) k->matmul(type, W, wrb, act, arb, B, K, cut[c], cut[c + 1], y, (size_t)N);
}

static void check_invariance(uint32_t type, int64_t K, int64_t N, int B) {
    size_t wrb = qt_row_bytes(type, K), arb = kn_act_row_bytes(type, K);
    uint8_t *W = malloc(wrb * (size_t)N), *act = malloc(arb * (size_t)B);
    float *x = malloc((size_t)K * sizeof(float));
    float *y1 = malloc((size_t)B * (size_t)N * sizeof(float)), *yb = malloc((size_t)B * (size_t)N * sizeof(float));
    fill_weights(type, W, N, K);
    for (int b = 0; b < B; b++) {
        fill_act(x, K, b % 5 == 3 ? 3 : (int)(rnd() % 3));
        kn_ref_ops.quantize_act(type, x, act + (size_t)b * arb, K);
    }
    for (int t = 0; t < g_ntables; t++) {
        const kn_ops *k = g_tables[t];
        for (int b = 0; b < B; b++)
            k->matmul(type, W, wrb, act + (size_t)b * arb, arb, 1, K, 0, N, y1 + (size_t)b * N, (size_t)N);
        for (int split = 0; split < 3; split++) {
            for (size_t i = 0; i < (size_t)B * (size_t)N; i++) yb[i] = SENTINEL;
            ranges_call(k, type, W, wrb, act, arb, B, K, N, split, yb);
            int bad = invariance_bad(yb, y1, B, N);
            CHECK(bad == 0, "%s %s K=%lld N=%lld: %d of %d outputs of a batch of %d (split %d) differ from the rows alone",
                  k->name, qt_get(type)->name, (long long)K, (long long)N, bad, B * (int)N, B, split);
        }
    }
    free(W), free(act), free(x), free(y1), free(yb);
}

static void check_invariance_mlx(int bits, int group, uint32_t sbt, int64_t K, int64_t N, int B) {
    const int64_t words = K * bits / 32, ng = K / group;
    const size_t sbs = sbt == QT_F32 ? 4 : 2;
    uint32_t *W = malloc((size_t)(words * N) * 4);
    uint8_t *sc = malloc((size_t)(ng * N) * sbs), *bi = malloc((size_t)(ng * N) * sbs);
    float *x = malloc((size_t)B * (size_t)K * sizeof(float));
    float *y1 = malloc((size_t)B * (size_t)N * sizeof(float)), *yb = malloc((size_t)B * (size_t)N * sizeof(float));
    for (int64_t i = 0; i < words * N; i++) W[i] = rnd();
    for (int64_t i = 0; i < ng * N; i++) {
        mlx_rnd_sb(sbt, sc, (size_t)i, 1e-3f, 2e-2f);
        mlx_rnd_sb(sbt, bi, (size_t)i, 0, 0.3f);
    }
    for (int b = 0; b < B; b++) fill_act(x + (size_t)b * K, K, b % 5 == 3 ? 3 : (int)(rnd() % 3));
    for (int t = 0; t < g_ntables; t++) {
        const kn_ops *k = g_tables[t];
        for (int b = 0; b < B; b++)
            k->matmul_mlx(bits, group, W, sc, bi, sbt, x + (size_t)b * K, (size_t)K, 1, K, 0, N, y1 + (size_t)b * N,
                          (size_t)N);
        for (size_t i = 0; i < (size_t)B * (size_t)N; i++) yb[i] = SENTINEL;
        k->matmul_mlx(bits, group, W, sc, bi, sbt, x, (size_t)K, B, K, 0, 5, yb, (size_t)N);
        k->matmul_mlx(bits, group, W, sc, bi, sbt, x, (size_t)K, B, K, 5, N, yb, (size_t)N);
        int bad = invariance_bad(yb, y1, B, N);
        CHECK(bad == 0, "%s MLX %d-bit g%d %s K=%lld N=%lld: %d of %d outputs of a batch of %d differ from the rows alone",
              k->name, bits, group, sb_name(sbt), (long long)K, (long long)N, bad, B * (int)N, B);
    }
    free(W), free(sc), free(bi), free(x), free(y1), free(yb);
}

/* The attention kernels: each head's scores and sums are the same whether it comes alone (nh = 1) or
 * among others (forward.c gives a call up to 16 heads, fewer for the last heads or a smaller batch). The
 * keys as forward.c stores them (kn_ops.attn_qk): blocks of 16 positions, dimension-major, 16 * D floats
 * apart, the last block partial; the values as rows. */
static void check_invariance_attn(void) {
    enum { NH = 16, D = 64, NP = 45, NBLK = (NP + 15) / 16 };
    static float q[NH * D], kt[NBLK * 16 * D], v[NP * D], s1[NH * NP], sb[NH * NP], o1[NH * D], ob[NH * D];
    static float mx1[NH], mxb[NH];
    for (int i = 0; i < NH * D; i++) q[i] = frnd();
    for (int i = 0; i < NBLK * 16 * D; i++) kt[i] = frnd();
    for (int i = 0; i < NP * D; i++) v[i] = frnd();
    for (int t = 0; t < g_ntables; t++) {
        const kn_ops *kn = g_tables[t];
        for (int h = 0; h < NH; h++)
            kn->attn_qk(q + h * D, D, 1, kt, 16 * D, NP, D, 0.125f, s1 + h * NP, NP, mx1 + h);
        static const int nhs[] = {NH, 7}; /* all, and a partial 4-head tile */
        int bad = 0;
        for (int i = 0; i < 2; i++) {
            int nh = nhs[i];
            kn->attn_qk(q, D, nh, kt, 16 * D, NP, D, 0.125f, sb, NP, mxb);
            bad += invariance_bad(sb, s1, nh, NP) + invariance_bad(mxb, mx1, nh, 1);
        }
        /* the scores as softmax weights for attn_v */
        for (int h = 0; h < NH; h++) kn->attn_v(s1 + h * NP, NP, 1, v, 0, v, D, NP, D, o1 + h * D, D);
        for (int i = 0; i < 2; i++) {
            kn->attn_v(s1, NP, nhs[i], v, 0, v, D, NP, D, ob, D);
            bad += invariance_bad(ob, o1, nhs[i], D);
        }
        CHECK(bad == 0, "%s attention: %d values of 16 or 7 heads in one call differ from each head alone", kn->name,
              bad);
    }
}

static void test_invariance(void) {
    /* Q8_0 / Q4_0: the bundled model's K (512, 1536), partial 4-block groups, several 32-block panel chunks,
     * more than one 192-block chunk of the decode kernel and of the rows-in-lanes kernel; every B of the
     * AVX-512 rows-in-lanes kernel's range (RL_MIN_B .. 15: one and two 8-row tiles), B around the 16-row
     * panel threshold, across PSUPER (64) */
    static const int64_t k_q8[] = {32, 96, 512, 1536, 2080, 6176};
    static const int Bs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 40, 70};
    for (int q = 0; q < 2; q++)
        for (size_t ki = 0; ki < sizeof k_q8 / sizeof *k_q8; ki++)
            for (size_t bi = 0; bi < sizeof Bs / sizeof *Bs; bi++) {
                if (k_q8[ki] > 2080 && Bs[bi] > 17) continue; /* keeps the run short */
                check_invariance(q ? QT_Q8_0 : QT_Q4_0, k_q8[ki], 37, Bs[bi]);
            }
    check_invariance(QT_Q8_0, 16480, 37, 9); /* more than one 512-block chunk of the AVX2 Q8_0 kernels */
    check_invariance(QT_F32, 100, 19, 13);
    check_invariance(QT_F16, 512, 19, 17);
    check_invariance(QT_BF16, 96, 19, 9);
    check_invariance(QT_Q4_K, 512, 19, 13);
    check_invariance(QT_Q6_K, 768, 19, 13);
    static const uint32_t more[] = {QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_IQ4_NL, QT_Q2_K, QT_Q3_K, QT_Q5_K};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++) {
        check_invariance(more[i], is_k_type(more[i]) ? 512 : 896, 37, 13);
        check_invariance(more[i], is_k_type(more[i]) ? 4864 : 4864, 19, 5);
    }
    for (int bits = 4; bits <= 8; bits += 4)
        for (int group = 32; group <= 128; group *= 2) check_invariance_mlx(bits, group, QT_F16, 512, 19, 13);
    check_invariance_mlx(4, 64, QT_BF16, 896, 19, 6);
    check_invariance_mlx(8, 64, QT_F32, 896, 19, 17);
    check_invariance_attn();
}

/* ---- packed weights (P16, kernels.h) */

/* A P16 matrix must give every output the bits its source matrix gives, in the tables that ask for P16
 * (kn_ops.packs) and in the reference, for any B, any row range (an unaligned cut included) and N not a
 * multiple of 16; and each table's q8 split activations must be the reference's bytes. */
static void check_p16(uint32_t type, int64_t K, int64_t N, int B) {
    const uint32_t pt = kn_p16_type(type);
    size_t wrb = qt_row_bytes(type, K), arb = kn_act_row_bytes(type, K), prb = kn_act_row_bytes(pt, K);
    size_t pbytes = kn_pack_bytes(pt, N, K);
    CHECK(pbytes == (size_t)((N + 15) / 16) * kn_pack_panel_bytes(pt, K) && pbytes % 64 == 0, "P16 size");
    uint8_t *W = malloc(wrb * (size_t)N), *P = aligned_alloc(64, pbytes);
    uint8_t *act = malloc(arb * (size_t)B), *pact = malloc(prb * (size_t)B), *pk = malloc(prb);
    float *x = malloc((size_t)K * sizeof(float));
    float *ys = malloc((size_t)B * (size_t)N * sizeof(float)), *yp = malloc((size_t)B * (size_t)N * sizeof(float));
    fill_weights(type, W, N, K);
    /* packed in two pieces, as the loader's threads may do it */
    int64_t np = (N + 15) / 16;
    kn_pack(pt, W, wrb, N, K, 0, np / 2, P);
    kn_pack(pt, W, wrb, N, K, np / 2, np, P);
    /* every block comes back as its source bytes, every row as its source row's values */
    int bad_blk = 0, bad_row = 0;
    float *wr = malloc((size_t)K * sizeof(float)), *wp = malloc((size_t)K * sizeof(float));
    for (int64_t r = 0; r < N; r++) {
        for (int64_t i = 0; i < K / qt_get(type)->block; i++) {
            uint8_t blk[256];
            kn_p16_block(pt, P, K, r, i, blk);
            bad_blk += memcmp(blk, W + (size_t)r * wrb + (size_t)i * (size_t)qt_get(type)->bytes, (size_t)qt_get(type)->bytes) != 0;
        }
        qt_dequantize_row(type, W + (size_t)r * wrb, wr, K);
        kn_p16_row(pt, P, K, r, wp);
        bad_row += memcmp(wr, wp, (size_t)K * sizeof(float)) != 0;
    }
    CHECK(bad_blk == 0 && bad_row == 0, "P16 %s K=%lld: %d blocks, %d rows do not read back", qt_get(type)->name,
          (long long)K, bad_blk, bad_row);
    free(wr), free(wp);
    for (int b = 0; b < B; b++) {
        fill_act(x, K, b % 5 == 3 ? 3 : (int)(rnd() % 3));
        kn_ref_ops.quantize_act(type, x, act + (size_t)b * arb, K);
        kn_ref_ops.quantize_act(pt, x, pact + (size_t)b * prb, K);
        for (int t = 1; t < g_ntables; t++) {
            g_tables[t]->quantize_act(pt, x, pk, K);
            CHECK(!memcmp(pk, pact + (size_t)b * prb, prb), "%s quantize_act P16 K=%lld differs from the reference",
                  g_tables[t]->name, (long long)K);
        }
    }
    float *y0 = malloc((size_t)B * (size_t)N * sizeof(float)), *y1 = malloc((size_t)B * (size_t)N * sizeof(float));
    const kn_ops *first = NULL;
    for (int t = 0; t < g_ntables; t++) {
        const kn_ops *k = g_tables[t];
        if (t > 0 && !(k->packs & KN_PACKS(type))) continue; /* P16 falls back to the reference there */
        for (size_t i = 0; i < (size_t)B * (size_t)N; i++) ys[i] = SENTINEL;
        k->matmul(type, W, wrb, act, arb, B, K, 0, N, ys, (size_t)N);
        /* the K types' packing tables compute in the reference's float order: the scalar table's bits */
        /* the 32-element types' packing tables share one float order: one another's bits */
        if (t == 0) memcpy(y0, ys, (size_t)B * (size_t)N * sizeof(float));
        else if (qt_get(type)->block == QK_K)
            CHECK(invariance_bad(ys, y0, B, N) == 0, "%s %s K=%lld B=%d: not the scalar table's bits", k->name,
                  qt_get(type)->name, (long long)K, B);
        else if (!first) first = k, memcpy(y1, ys, (size_t)B * (size_t)N * sizeof(float));
        else
            CHECK(invariance_bad(ys, y1, B, N) == 0, "%s %s K=%lld B=%d: not the %s table's bits", k->name,
                  qt_get(type)->name, (long long)K, B, first->name);
        /* splits 3-5: those of 0-2 with the KN_STREAM hint (the AVX-512 kernel's two-panel tiles) */
        for (int split = 0; split < 6; split++) {
            for (size_t i = 0; i < (size_t)B * (size_t)N; i++) yp[i] = SENTINEL;
            ranges_call(k, split >= 3 ? pt | KN_STREAM : pt, P, 0, pact, prb, B, K, N, split % 3, yp);
            int bad = invariance_bad(yp, ys, B, N);
            CHECK(bad == 0, "%s P16 %s K=%lld N=%lld B=%d (split %d): %d of %d outputs differ from the source matrix's",
                  k->name, qt_get(type)->name, (long long)K, (long long)N, B, split, bad, B * (int)N);
        }
    }
    free(W), free(P), free(act), free(pact), free(pk), free(x), free(ys), free(yp), free(y0), free(y1);
}

static void test_p16(void) {
    CHECK(kn_p16_type(QT_Q4_0) == KN_P16_Q4_0 && kn_p16_source(KN_P16_Q8_0) == QT_Q8_0 && !kn_p16_type(QT_Q5_K) &&
              kn_p16_type(QT_Q4_K) == KN_P16_Q4_K && !kn_pack_panel_bytes(KN_P16_Q6_K, 512 + 32) &&
              !kn_pack_panel_bytes(KN_P16_Q4_0, 48) && kn_p16_type(QT_Q5_1) == KN_P16_Q5_1 &&
              kn_p16_source(KN_P16_IQ4_NL) == QT_IQ4_NL && !kn_p16_source(0x100 | QT_Q5_K) && !kn_p16_source(QT_Q4_0),
          "P16 type mapping");
    /* the panel sizes, in pairs of blocks: 22 bytes per row and block for Q5_0, plus the fp16 minimums for
     * Q5_1; an odd block count rounds up to a whole pair */
    CHECK(kn_pack_panel_bytes(KN_P16_Q5_0, 64) == 2 * 5 * 64 + 64 && kn_pack_panel_bytes(KN_P16_Q5_1, 4864) == 152 * 320 + 2 * 4864 &&
              kn_pack_panel_bytes(KN_P16_IQ4_NL, 96) == 2 * (2 * 256 + 64),
          "P16 panel bytes");
    static const uint32_t more[] = {QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_IQ4_NL};
    static const int64_t ks_more[] = {32, 896, 1056, 4864};
    static const int Bs_more[] = {1, 3, 4, 9, 17};
    for (size_t ti = 0; ti < sizeof more / sizeof *more; ti++)
        for (size_t ki = 0; ki < sizeof ks_more / sizeof *ks_more; ki++)
            for (size_t bi = 0; bi < sizeof Bs_more / sizeof *Bs_more; bi++)
                check_p16(more[ti], ks_more[ki], bi % 2 ? 37 : 48, Bs_more[bi]);
    /* Q4_K and Q6_K: super-blocks of 256, the 0.5B and 1B shapes' K */
    static const int64_t ks_k[] = {256, 512, 1536, 4864};
    for (int q = 0; q < 2; q++)
        for (size_t ki = 0; ki < sizeof ks_k / sizeof *ks_k; ki++)
            for (size_t bi = 0; bi < sizeof Bs_more / sizeof *Bs_more; bi++)
                check_p16(q ? QT_Q6_K : QT_Q4_K, ks_k[ki], bi % 2 ? 37 : 48, Bs_more[bi]);
    /* K: one block, 4-block groups cut short, several 32-block chains, the 0.5B shapes (896, 4864), over
     * the decode kernel's 192-block chunk; B: each tile size, two tiles, the panel kernel's range */
    static const int64_t ks[] = {32, 96, 512, 896, 2080, 4864, 6176};
    static const int Bs[] = {1, 2, 3, 4, 5, 8, 9, 13, 16, 17, 40};
    /* pass 1: the AVX-512 Q4_0 kernel's other way to its activation words (kn_p16_q4_shuf: the CPU picks
     * one), where that table runs; pass 2: Q8_0 */
    const int avx512 = kn_by_name("avx512") != NULL, shuf = atomic_load(&kn_p16_q4_shuf);
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1 && !avx512) continue;
        atomic_store(&kn_p16_q4_shuf, pass == 1 ? !shuf : shuf);
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
            for (size_t bi = 0; bi < sizeof Bs / sizeof *Bs; bi++) {
                if (ks[ki] > 2080 && Bs[bi] > 9) continue; /* keeps the run short */
                check_p16(pass == 2 ? QT_Q8_0 : QT_Q4_0, ks[ki], bi % 2 ? 37 : 48, Bs[bi]);
            }
    }
    atomic_store(&kn_p16_q4_shuf, shuf);
    /* eight panels and a part: the AVX-512 kernels' pairs of panels from two halves of a range (B = 1
     * with the stream hint; the tail of B = 9), every P16 type */
    static const uint32_t all[] = {QT_Q4_0, QT_Q8_0, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_IQ4_NL, QT_Q4_K, QT_Q6_K};
    for (size_t q = 0; q < sizeof all / sizeof *all; q++)
        for (int b = 1; b <= 9; b += 8) check_p16(all[q], is_k_type(all[q]) ? 512 : 96, 16 * 8 + 5, b);
}

static void test_f32_ops(void) {
    static const int64_t ns[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 63, 64, 65, 100, 1000, 4867};
    float *a = malloc(5000 * sizeof(float)), *b = malloc(5000 * sizeof(float));
    float *y0 = malloc(5000 * sizeof(float)), *y1 = malloc(5000 * sizeof(float));
    for (int i = 0; i < 5000; i++) a[i] = frnd(), b[i] = frnd() * 3;
    for (int t = 1; t < g_ntables; t++)
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
            int64_t n = ns[i];
            double mag = 0;
            for (int64_t k = 0; k < n; k++) mag += fabs((double)a[k] * b[k]);
            float d0 = kn_ref_ops.dot_f32(a, b, n), d1 = g_tables[t]->dot_f32(a, b, n);
            CHECK(fabs(d0 - d1) <= 1e-5 * mag, "%s dot_f32 n=%lld: %g vs %g", g_tables[t]->name, (long long)n, d1, d0);
            for (int k = 0; k < 5000; k++) y0[k] = y1[k] = b[k];
            kn_ref_ops.axpy_f32(y0, 0.7f, a, n);
            g_tables[t]->axpy_f32(y1, 0.7f, a, n);
            int bad = 0;
            for (int k = 0; k < 5000; k++)
                bad += k < n ? !(fabsf(y0[k] - y1[k]) <= 1e-6f * (fabsf(a[k]) + fabsf(b[k]))) : y1[k] != b[k];
            CHECK(bad == 0, "%s axpy_f32 n=%lld: %d wrong", g_tables[t]->name, (long long)n, bad);
        }
    free(a), free(b), free(y0), free(y1);
}

/* exp_sum: every table's exponentials within 1e-6 relative of the reference's expf (absolute 1e-12 near
 * zero), the same zeros below -87 and for -inf, and the sum within 1e-5; y NULL writes nothing. */
static void test_exp_sum(void) {
    static const int64_t ns[] = {0, 1, 3, 7, 8, 15, 16, 17, 31, 64, 100, 1000, 16384};
    const int64_t N = 16384;
    float *x = malloc(N * sizeof(float)), *y0 = malloc(N * sizeof(float)), *y1 = malloc(N * sizeof(float));
    for (int64_t i = 0; i < N; i++) x[i] = frnd() * 40 - 5;
    x[3] = -INFINITY, x[5] = -200.0f, x[9] = -86.9f, x[10] = -87.1f, x[11] = 0, x[12] = 30.0f;
    float mx = -INFINITY;
    for (int64_t i = 0; i < N; i++) mx = x[i] > mx ? x[i] : mx;
    for (int t = 1; t < g_ntables; t++)
        for (size_t c = 0; c < sizeof ns / sizeof *ns; c++) {
            int64_t n = ns[c];
            for (int pass = 0; pass < 2; pass++) {
                float shift = pass ? mx : 0.0f; /* pass 0: values above 0 too (up to e^30) */
                for (int64_t i = 0; i < N; i++) y0[i] = y1[i] = -1.0f;
                float s0 = kn_ref_ops.exp_sum(x, shift, y0, n), s1 = g_tables[t]->exp_sum(x, shift, y1, n);
                int bad = 0;
                for (int64_t i = 0; i < N; i++) {
                    if (i >= n) bad += y1[i] != -1.0f;
                    else bad += !(fabsf(y0[i] - y1[i]) <= 1e-6f * y0[i] + 1e-12f);
                }
                CHECK(bad == 0, "%s exp_sum n=%lld shift %g: %d wrong", g_tables[t]->name, (long long)n, shift, bad);
                CHECK(fabsf(s0 - s1) <= 1e-5f * s0 + 1e-12f, "%s exp_sum n=%lld: sum %g vs %g", g_tables[t]->name,
                      (long long)n, s1, s0);
                float s2 = g_tables[t]->exp_sum(x, shift, NULL, n);
                CHECK(s2 == s1, "%s exp_sum without y: %g vs %g", g_tables[t]->name, s2, s1);
            }
        }
    /* the reference itself against libm */
    float e[4];
    float xs[4] = {0.0f, -1.0f, -INFINITY, -100.0f};
    float sum = kn_ref_ops.exp_sum(xs, 0.0f, e, 4);
    CHECK(e[0] == 1.0f && fabsf(e[1] - 0.36787944f) < 1e-7f && e[2] == 0 && e[3] == 0 && fabsf(sum - 1.36787944f) < 1e-6f,
          "reference exp_sum: %g %g %g %g", e[0], e[1], e[2], e[3]);
    free(x), free(y0), free(y1);
}

/* silu_mul: every table within 2e-6 relative of the reference (plus a tiny absolute slack for the values
 * near 0 that silu(g) * u takes), over the FFN's range and its extremes (g = +-100, +-88.5, 0, -0); an
 * element's bits do not depend on where a call starts or how long it is (tails included); nothing past n
 * is written. */
static void test_silu(void) {
    enum { N = 1003 };
    float g[N], u[N], y0[N + 16], y1[N + 16], y2[N + 16];
    for (int i = 0; i < N; i++) g[i] = frnd() * 24, u[i] = frnd() * 4;
    g[0] = 100, g[1] = -100, g[2] = 88.5f, g[3] = -88.5f, g[4] = 0, g[5] = -0.0f, g[6] = 1e-30f, g[7] = -20;
    for (int t = 0; t < g_ntables; t++) {
        const kn_ops *k = g_tables[t];
        memcpy(y0, g, sizeof g), memcpy(y1, g, sizeof g);
        for (int i = N; i < N + 16; i++) y1[i] = SENTINEL;
        kn_ref_ops.silu_mul(y0, u, N);
        k->silu_mul(y1, u, N);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += !(fabsf(y1[i] - y0[i]) <= 2e-6f * fabsf(y0[i]) + 1e-30f);
        for (int i = N; i < N + 16; i++) bad += y1[i] != SENTINEL;
        CHECK(bad == 0, "%s silu_mul: %d of %d differ from the reference", k->name, bad, N);
        /* the same elements through calls that start elsewhere and end in tails */
        memcpy(y2, g, sizeof g);
        for (int a = 0; a < N;) {
            int n = 1 + (a * 7) % 37;
            n = LAYA_MIN(n, N - a);
            k->silu_mul(y2 + a, u + a, n);
            a += n;
        }
        CHECK(!memcmp(y1, y2, sizeof g), "%s silu_mul: an element's bits depend on the call", k->name);
    }
    float r[2] = {-100, 2}, ur[2] = {1, 3};
    kn_ref_ops.silu_mul(r, ur, 2);
    CHECK(r[0] == 0 && fabsf(r[1] - 2 / (1 + expf(-2)) * 3) < 1e-6f, "reference silu_mul: %g %g", r[0], r[1]);
}

/* attn_v: every table's weighted sums of value rows equal the reference's (relative to the sum of |terms|)
 * for head counts and widths around the tile sizes; rows past nh and columns past d are not written. */
static void test_attn_v(void) {
    static const int nhs[] = {1, 2, 3, 4, 5, 7, 8};
    static const int64_t ds[] = {1, 8, 16, 31, 32, 64, 65, 80, 128};
    static const int64_t nps[] = {0, 1, 2, 17, 300};
    const size_t ws = 320, vs = 160, os = 160;
    float *w = malloc(8 * ws * sizeof(float)), *v = malloc(300 * vs * sizeof(float));
    float *o0 = malloc(9 * os * sizeof(float)), *o1 = malloc(9 * os * sizeof(float));
    for (size_t i = 0; i < 8 * ws; i++) w[i] = frnd();
    for (size_t i = 0; i < 300 * vs; i++) v[i] = frnd() * 2;
    for (int t = 1; t < g_ntables; t++)
        for (size_t a = 0; a < sizeof nhs / sizeof *nhs; a++)
            for (size_t b = 0; b < sizeof ds / sizeof *ds; b++)
                for (size_t c = 0; c < sizeof nps / sizeof *nps; c++) {
                    int nh = nhs[a];
                    int64_t d = ds[b], np = nps[c];
                    for (size_t i = 0; i < 9 * os; i++) o0[i] = o1[i] = 7.0f;
                    kn_ref_ops.attn_v(w, ws, nh, v, 0, v, vs, np, d, o0, os);
                    g_tables[t]->attn_v(w, ws, nh, v, 0, v, vs, np, d, o1, os);
                    int bad = 0;
                    for (int h = 0; h < 9; h++)
                        for (int64_t j = 0; j < (int64_t)os; j++) {
                            size_t k = (size_t)h * os + (size_t)j;
                            if (h >= nh || j >= d) {
                                bad += o1[k] != 7.0f;
                                continue;
                            }
                            double mag = 0;
                            for (int64_t p = 0; p < np; p++) mag += fabs((double)w[(size_t)h * ws + (size_t)p] * v[(size_t)p * vs + (size_t)j]);
                            bad += !(fabs((double)o0[k] - o1[k]) <= 1e-5 * mag + 1e-7);
                        }
                    CHECK(bad == 0, "%s attn_v nh=%d d=%lld npos=%lld: %d wrong", g_tables[t]->name, nh, (long long)d,
                          (long long)np, bad);
                    /* each head alone gives the same bits as among the others */
                    int diff = 0;
                    for (int h = 0; h < nh; h++) {
                        float one[160];
                        g_tables[t]->attn_v(w + (size_t)h * ws, ws, 1, v, 0, v, vs, np, d, one, 160);
                        for (int64_t j = 0; j < d; j++) diff += one[j] != o1[(size_t)h * os + (size_t)j];
                    }
                    CHECK(diff == 0, "%s attn_v nh=%d d=%lld npos=%lld: %d values differ from the heads alone",
                          g_tables[t]->name, nh, (long long)d, (long long)np, diff);
                }
    /* Rows below n0 from one buffer and the rest from another (a sequence's shared positions, then its
     * own) give the bits of one buffer: each buffer is NaN where the other one is read. */
    float *lo = malloc(300 * vs * sizeof(float)), *hi = malloc(300 * vs * sizeof(float));
    static const int64_t n0s[] = {0, 1, 7, 16, 64, 299, 300};
    for (int t = 0; t < g_ntables; t++)
        for (size_t c = 0; c < sizeof n0s / sizeof *n0s; c++) {
            int64_t n0 = n0s[c];
            for (int64_t p = 0; p < 300; p++)
                for (size_t j = 0; j < vs; j++) {
                    lo[(size_t)p * vs + j] = p < n0 ? v[(size_t)p * vs + j] : NAN;
                    hi[(size_t)p * vs + j] = p >= n0 ? v[(size_t)p * vs + j] : NAN;
                }
            g_tables[t]->attn_v(w, ws, 5, v, 0, v, vs, 300, 80, o0, os);
            g_tables[t]->attn_v(w, ws, 5, lo, n0, hi, vs, 300, 80, o1, os);
            int diff = 0;
            for (int h = 0; h < 5; h++)
                for (int j = 0; j < 80; j++) diff += memcmp(&o0[h * os + j], &o1[h * os + j], sizeof(float)) != 0;
            CHECK(diff == 0, "%s attn_v split at %lld: %d values differ", g_tables[t]->name, (long long)n0, diff);
        }
    free(lo), free(hi);
    free(w), free(v), free(o0), free(o1);
}

/* attn_qk: every table's scaled scores equal the reference's (relative to the sum of |terms|) and so does
 * each head's maximum, for head counts around the 4-head tiles, head sizes, and position counts around the
 * 16- and 64-wide tiles (keys in blocks of 16 positions, dimension-major: dimension j of position p at
 * k[(p / 16) * ks + j * 16 + p % 16]); nothing past nh heads or npos positions is written. */
static void test_attn_qk(void) {
    static const int nhs[] = {1, 2, 3, 4, 5, 7, 16};
    static const int64_t ds[] = {1, 3, 8, 16, 31, 64, 65, 128};
    static const int64_t nps[] = {0, 1, 2, 15, 16, 17, 33, 63, 64, 65, 129, 300};
    const size_t qs = 160, ks = 16 * 128 + 16, ss = 320, nblk = 19; /* 300 positions */
    float *q = malloc(17 * qs * sizeof(float)), *k = malloc(nblk * ks * sizeof(float));
    float *s0 = malloc(17 * ss * sizeof(float)), *s1 = malloc(17 * ss * sizeof(float));
    for (size_t i = 0; i < 17 * qs; i++) q[i] = frnd();
    for (size_t i = 0; i < nblk * ks; i++) k[i] = frnd() * 2;
    for (int t = 1; t < g_ntables; t++)
        for (size_t a = 0; a < sizeof nhs / sizeof *nhs; a++)
            for (size_t b = 0; b < sizeof ds / sizeof *ds; b++)
                for (size_t c = 0; c < sizeof nps / sizeof *nps; c++) {
                    int nh = nhs[a];
                    int64_t d = ds[b], np = nps[c];
                    float m0[17], m1[17];
                    for (int h = 0; h < 17; h++) m0[h] = m1[h] = 7.0f;
                    for (size_t i = 0; i < 17 * ss; i++) s0[i] = s1[i] = 7.0f;
                    kn_ref_ops.attn_qk(q, qs, nh, k, ks, np, d, 0.125f, s0, ss, m0);
                    g_tables[t]->attn_qk(q, qs, nh, k, ks, np, d, 0.125f, s1, ss, m1);
                    int bad = 0;
                    for (int h = 0; h < 17; h++) {
                        double mmag = 0;
                        for (int64_t p = 0; p < (int64_t)ss; p++) {
                            size_t i = (size_t)h * ss + (size_t)p;
                            if (h >= nh || p >= np) {
                                bad += s1[i] != 7.0f;
                                continue;
                            }
                            double mag = 0;
                            for (int64_t j = 0; j < d; j++) mag += fabs((double)q[(size_t)h * qs + (size_t)j] * k[(size_t)(p / 16) * ks + (size_t)j * 16 + (size_t)(p % 16)]);
                            mag *= 0.125;
                            mmag = mag > mmag ? mag : mmag;
                            bad += !(fabs((double)s0[i] - s1[i]) <= 1e-5 * mag + 1e-7);
                        }
                        if (h >= nh) bad += m1[h] != 7.0f;
                        else if (np == 0) bad += !(m0[h] == -INFINITY && m1[h] == -INFINITY);
                        else bad += !(fabs((double)m0[h] - m1[h]) <= 1e-5 * mmag + 1e-7);
                    }
                    CHECK(bad == 0, "%s attn_qk nh=%d d=%lld npos=%lld: %d wrong", g_tables[t]->name, nh, (long long)d,
                          (long long)np, bad);
                    /* each head alone gives the same bits as among the others (the batch decides nh) */
                    int diff = 0;
                    for (int h = 0; h < nh; h++) {
                        float one[300], m1h;
                        g_tables[t]->attn_qk(q + (size_t)h * qs, qs, 1, k, ks, np, d, 0.125f, one, 300, &m1h);
                        for (int64_t p = 0; p < np; p++) diff += one[p] != s1[(size_t)h * ss + (size_t)p];
                        diff += np > 0 && m1h != m1[h];
                    }
                    CHECK(diff == 0, "%s attn_qk nh=%d d=%lld npos=%lld: %d values differ from the heads alone",
                          g_tables[t]->name, nh, (long long)d, (long long)np, diff);
                }
    /* Positions [0, a) and [a, npos) in two calls, a a multiple of KN_QK_SPLIT, give the bits of one call
     * (forward.c splits a sequence's shared positions from its own there). */
    for (int t = 0; t < g_ntables; t++)
        for (int64_t np = 1; np <= 300; np += 37)
            for (int64_t a = 0; a < np; a += KN_QK_SPLIT) {
                float m0[7], ma[7], mb[7];
                g_tables[t]->attn_qk(q, qs, 7, k, ks, np, 64, 0.125f, s0, ss, m0);
                if (a) g_tables[t]->attn_qk(q, qs, 7, k, ks, a, 64, 0.125f, s1, ss, ma);
                g_tables[t]->attn_qk(q, qs, 7, k + (size_t)(a / 16) * ks, ks, np - a, 64, 0.125f, s1 + a, ss, mb);
                int diff = 0;
                for (int h = 0; h < 7; h++) {
                    for (int64_t p = 0; p < np; p++)
                        diff += memcmp(&s0[(size_t)h * ss + (size_t)p], &s1[(size_t)h * ss + (size_t)p], sizeof(float)) != 0;
                    float m = a && ma[h] > mb[h] ? ma[h] : mb[h];
                    diff += m != m0[h];
                }
                CHECK(diff == 0, "%s attn_qk split at %lld of %lld: %d values differ", g_tables[t]->name, (long long)a,
                      (long long)np, diff);
            }
    free(q), free(k), free(s0), free(s1);
}

/* Garbage in must not break the invariant the integer kernels rely on: no activation byte is -128. */
static void test_nan_act(void) {
    float x[512];
    for (int i = 0; i < 512; i++) x[i] = frnd();
    x[3] = NAN, x[300] = -NAN, x[40] = INFINITY, x[41] = -INFINITY;
    block_q8_0 q0[16];
    block_q8_K qk[2];
    for (int t = 0; t < g_ntables; t++) {
        g_tables[t]->quantize_act(QT_Q4_0, x, q0, 512);
        g_tables[t]->quantize_act(QT_Q6_K, x, qk, 512);
        int bad = 0;
        for (int i = 0; i < 512; i++) bad += q0[i / 32].qs[i % 32] == -128 || qk[i / 256].qs[i % 256] == -128;
        CHECK(bad == 0, "%s: %d activation bytes are -128 after NaN/inf input", g_tables[t]->name, bad);
    }
}

/* The activation quantizers take runs of 16 blocks together where a table can (kn_q8_group_fn): every
 * format, a row of two whole runs and a block more, with blocks at the edges of the rule (all zero, a
 * lone -0, subnormal scales, scales that round to fp16 infinity or to its largest finite value, values
 * on rounding ties) must come out byte for byte as the reference's; a run holding NaN or infinity may
 * go the block way but must not store -128. */
static void test_act_groups(void) {
    enum { K = 33 * 32 };
    float x[K];
    for (int i = 0; i < K; i++) x[i] = frnd() * 3;
    for (int j = 0; j < 32; j++) {
        x[2 * 32 + j] = 0;                                  /* amax 0: d = 0, id = 0 */
        x[5 * 32 + j] = frnd() * 1e-39f;                    /* subnormal d */
        x[6 * 32 + j] = frnd() * 1e-33f;                    /* d an fp16 subnormal's neighbourhood */
        x[7 * 32 + j] = frnd() * 8.3e6f;                    /* d near 65504 */
        x[8 * 32 + j] = frnd() * 3e7f;                      /* d rounds to fp16 infinity */
        x[10 * 32 + j] = (float)(j - 16) * 0.5f;            /* x * (1 / d) on ties */
        x[17 * 32 + j] = frnd() * 1e-20f;
        x[30 * 32 + j] = (float)(j % 7) - 3;
    }
    x[9 * 32] = -0.0f;
    for (int j = 1; j < 32; j++) x[9 * 32 + j] = 0;
    x[7 * 32 + 3] = 65504.0f * 127, x[8 * 32 + 4] = 65520.0f * 127;
    x[5 * 32 + 1] = 0, x[5 * 32 + 2] = -0.0f; /* 0 * (1 / d) = NaN when 1 / d overflows: the rule says 0 */
    const uint32_t types[] = {QT_Q8_0, QT_Q4_0, QT_Q4_1, QT_Q5_1, QT_IQ4_NL, kn_p16_type(QT_Q4_0),
                              kn_p16_type(QT_Q4_1), kn_p16_type(QT_Q8_0)};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        for (int64_t k = 512; k <= K; k += K - 512) {
            size_t ab = kn_act_row_bytes(types[t], k);
            uint8_t *ref = malloc(ab);
            uint8_t *got = malloc(ab);
            kn_ref_ops.quantize_act(types[t], x + K - k, ref, k);
            for (int tb = 1; tb < g_ntables; tb++) {
                memset(got, 0x5a, ab);
                g_tables[tb]->quantize_act(types[t], x + K - k, got, k);
                CHECK(!memcmp(got, ref, ab), "%s quantize_act of type %#x, K=%lld, edge blocks: not the reference's bytes",
                      g_tables[tb]->name, (unsigned)types[t], (long long)k);
            }
            free(ref);
            free(got);
        }
    }
    float y[1024];
    for (int i = 0; i < 1024; i++) y[i] = frnd();
    y[7] = NAN, y[600] = INFINITY, y[900] = -INFINITY;
    block_q8_0 q0[32];
    block_q8_K qk[4], qkr[4];
    for (int i = 0; i < 256; i++) x[i] = frnd() * 1e-38f; /* a super-block whose 1 / d overflows */
    x[5] = 0;
    kn_ref_ops.quantize_act(QT_Q6_K, x, qkr, 256);
    for (int tb = 1; tb < g_ntables; tb++) {
        g_tables[tb]->quantize_act(QT_Q6_K, x, qk, 256);
        CHECK(!memcmp(qk, qkr, sizeof qk[0]), "%s quantize_act Q6_K, 1 / d overflowing: not the reference's bytes",
              g_tables[tb]->name);
    }
    for (int tb = 0; tb < g_ntables; tb++) {
        g_tables[tb]->quantize_act(QT_Q8_0, y, q0, 1024);
        int bad = 0;
        for (int i = 0; i < 1024; i++) bad += q0[i / 32].qs[i % 32] == -128;
        CHECK(bad == 0, "%s: %d activation bytes are -128 after NaN/inf in a run of 16 blocks", g_tables[tb]->name, bad);
    }
}

/* The F16 KV cache's kernels (kn_ops.attn_qk16, attn_v16, to_f16): every table's F16 call gives, bit for
 * bit, what the same table's F32 kernel gives on the converted cache (the elements are converted exactly
 * and then take the F32 path), across head counts, dimensions, position counts and the shared / own
 * split of attn_v; to_f16 rounds as f32_to_fp16 does for every finite value and infinity. */
static void test_attn_f16(void) {
    static const int nhs[] = {1, 2, 3, 4, 7, 16};
    static const int64_t ds[] = {3, 16, 31, 64, 65, 128};
    static const int64_t nps[] = {1, 2, 15, 16, 17, 63, 64, 65, 129, 300};
    const size_t qs = 160, ks = 16 * 128 + 16, ss = 320, nblk = 19, vs = 136;
    float *q = malloc(17 * qs * sizeof(float)), *k = malloc(nblk * ks * sizeof(float)), *kf = malloc(nblk * ks * sizeof(float));
    float *v = malloc(300 * vs * sizeof(float)), *vf = malloc(300 * vs * sizeof(float));
    uint16_t *kh = malloc(nblk * ks * sizeof(uint16_t)), *vh = malloc(300 * vs * sizeof(uint16_t));
    float *s0 = malloc(17 * ss * sizeof(float));
    float *o0 = malloc(17 * vs * sizeof(float)), *o1 = malloc(17 * vs * sizeof(float));
    for (size_t i = 0; i < 17 * qs; i++) q[i] = frnd();
    for (size_t i = 0; i < nblk * ks; i++) k[i] = frnd() * 3;
    for (size_t i = 0; i < 300 * vs; i++) v[i] = frnd() * 3;
    for (size_t i = 0; i < 17 * ss; i++) s0[i] = frnd() * 0.01f + 0.003f; /* softmax-like weights */
    for (int t = 0; t < g_ntables; t++) {
        const kn_ops *kn = g_tables[t];
        CHECK(kn->attn_qk16 && kn->attn_v16 && kn->to_f16, "%s has the F16 cache's kernels", kn->name);
        if (!kn->attn_qk16 || !kn->attn_v16 || !kn->to_f16) continue;
        kn->to_f16(k, kh, (int64_t)(nblk * ks));
        kn->to_f16(v, vh, (int64_t)(300 * vs));
        int conv = 0;
        for (size_t i = 0; i < nblk * ks; i++) conv += kh[i] != f32_to_fp16(k[i]), kf[i] = fp16_to_f32(kh[i]);
        for (size_t i = 0; i < 300 * vs; i++) conv += vh[i] != f32_to_fp16(v[i]), vf[i] = fp16_to_f32(vh[i]);
        CHECK(conv == 0, "%s to_f16: %d values not f32_to_fp16's", kn->name, conv);
        int bad = 0, cases = 0;
        for (size_t a = 0; a < sizeof nhs / sizeof *nhs; a++)
            for (size_t b = 0; b < sizeof ds / sizeof *ds; b++)
                for (size_t c = 0; c < sizeof nps / sizeof *nps; c++) {
                    int nh = nhs[a];
                    int64_t d = ds[b], np = nps[c];
                    float m0[17], m1[17];
                    float e32[16 * 300], e16[16 * 300];
                    kn->attn_qk(q, qs, nh, kf, ks, np, d, 0.125f, e32, 300, m0);
                    kn->attn_qk16(q, qs, nh, kh, ks, np, d, 0.125f, e16, 300, m1);
                    for (int h = 0; h < nh; h++) {
                        bad += memcmp(e32 + (size_t)h * 300, e16 + (size_t)h * 300, (size_t)np * sizeof(float)) != 0;
                        bad += m0[h] != m1[h];
                    }
                    if (d <= (int64_t)vs)
                        for (int64_t n0 = 0; n0 <= np; n0 += np > 64 ? 64 : np ? np : 1) {
                            /* shared rows [0, n0) from the second half of the value buffer */
                            kn->attn_v(s0, ss, nh, vf + 150 * vs, n0, vf, vs, np > 150 ? 150 : np, d, o0, vs);
                            kn->attn_v16(s0, ss, nh, vh + 150 * vs, n0, vh, vs, np > 150 ? 150 : np, d, o1, vs);
                            for (int h = 0; h < nh; h++)
                                bad += memcmp(o0 + (size_t)h * vs, o1 + (size_t)h * vs, (size_t)d * sizeof(float)) != 0;
                            cases++;
                        }
                    cases++;
                }
        CHECK(bad == 0, "%s: %d F16 attention results not the F32 kernel's bits on the converted cache (%d cases)",
              kn->name, bad, cases);
        /* rounding at the edges: ties, subnormals, the largest finite, overflow to infinity */
        float e[] = {0.0f, -0.0f, 1.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 1e-8f, 3e-8f, -6e-8f, 5.96e-8f,
                     6.1e-5f, 6.2e-5f, 65504.0f, 65519.9f, 65520.0f, -70000.0f, 1e30f, INFINITY, -INFINITY, 2.9802322e-08f,
                     1.7881393e-07f, 0.33333334f};
        uint16_t eh[32];
        int n = (int)(sizeof e / sizeof *e), ebad = 0;
        kn->to_f16(e, eh, n);
        for (int i = 0; i < n; i++) ebad += eh[i] != f32_to_fp16(e[i]);
        CHECK(ebad == 0, "%s to_f16: %d edge values not f32_to_fp16's", kn->name, ebad);
    }
    free(q), free(k), free(kf), free(v), free(vf), free(kh), free(vh), free(s0), free(o0), free(o1);
}

static void test_dispatch(void) {
    CHECK(kn_by_name("scalar") == &kn_ref_ops, "scalar table");
    CHECK(kn_by_name("nonsense") == NULL && kn_by_name(NULL) == NULL, "unknown table");
    const kn_ops *best = kn_best();
    CHECK(best != NULL && best == kn_best(), "kn_best is stable");
    CHECK(kn_act_row_bytes(QT_Q4_0, 64) == 68 && kn_act_row_bytes(QT_Q6_K, 512) == 584 &&
              kn_act_row_bytes(QT_F16, 5) == 20, "act row bytes");
    CHECK(kn_act_row_bytes(QT_Q8_0, 33) == 0 && kn_act_row_bytes(23, 256) == 0 && kn_act_row_bytes(QT_F32, 0) == 0,
          "act row bytes of bad shapes");
}

int main(void) {
    static const char *const names[] = {"avx2", "avxvnni", "avx512", "neon", "neondot"};
    /* kn_best caches its first answer, so the override is checked before anything else asks */
    setenv("LAYA_KERNELS", "scalar", 1);
    CHECK(kn_best() == &kn_ref_ops, "LAYA_KERNELS=scalar forces the reference table");
    g_tables[g_ntables++] = &kn_ref_ops;
    printf("test_kernels: tables:");
    printf(" %s", kn_ref_ops.name);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const kn_ops *k = kn_by_name(names[i]);
        if (k) g_tables[g_ntables++] = k, printf(" %s", k->name);
    }
    printf("\n");
    test_dispatch();
    test_f32_ops();
    test_exp_sum();
    test_silu();
    test_attn_v();
    test_attn_qk();
    test_attn_f16();
    test_nan_act();
    test_act_groups();
    test_matmul();
    test_matmul_mlx();
    test_invariance();
    test_p16();
    return DONE("test_kernels");
}
