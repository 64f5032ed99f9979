/* kernels_ref.c — the scalar reference kernels: plain C, no intrinsics, always built. They define what
 * every kernel means (the SIMD tables must match them) and are the fallback on CPUs without a SIMD table.
 * Written to be read, not to be fast. */
#include <math.h>
#include <string.h>

#include "base/common.h"
#include "kernels/kernels.h"
#include "io/qtypes.h"

/* Round to nearest, ties to even, for |v| < 2^22: adding 1.5 * 2^23 pushes the fraction out of the
 * mantissa under the default rounding mode. Chosen over roundf because every SIMD table rounds this way
 * (cvtps2dq, fcvtns), so all tables produce identical activation bytes. */
static float round_even(float v) { return (v + 12582912.0f) - 12582912.0f; }

/* Activation quantization: d = amax / 127, q = round_even(x * (1 / d)); q is always in [-127, 127], which
 * the SIMD kernels rely on (their sign trick cannot negate -128). */
static int8_t q8(float v) {
    float r = round_even(v);
    if (!(r == r)) return 0; /* NaN input: keep the conversion defined */
    return (int8_t)(r > 127 ? 127 : r < -127 ? -127 : r);
}

static float amax_of(const float *x, int n) {
    float m = 0;
    for (int i = 0; i < n; i++) {
        float a = x[i] < 0 ? -x[i] : x[i];
        if (a > m) m = a;
    }
    return m;
}

/* 32 activations at v to int8 at qs; returns the block's fp16 scale, and *sum (if not NULL) the sum of
 * the stored values. */
static qt_half q8_block(const float *v, int8_t *qs, int *sum) {
    float d = amax_of(v, QK8_0) / 127, id = d ? 1 / d : 0;
    int s = 0;
    for (int j = 0; j < QK8_0; j++) s += qs[j] = q8(v[j] * id);
    if (sum) *sum = s;
    return f32_to_fp16(d);
}

static void ref_quantize_act(uint32_t wtype, const float *x, void *xq, int64_t K) {
    if (kn_q8_act_row(wtype, x, xq, K, q8_block, NULL)) return;
    switch (wtype) {
    case QT_F32:
    case QT_F16:
    case QT_BF16: memcpy(xq, x, (size_t)K * sizeof(float)); return;
    case QT_Q2_K:
    case QT_Q3_K:
    case QT_Q4_K:
    case QT_Q5_K:
    case QT_Q6_K:
        for (int64_t i = 0; i < K / QK_K; i++) {
            block_q8_K *b = (block_q8_K *)xq + i;
            const float *v = x + i * QK_K;
            float d = amax_of(v, QK_K) / 127, id = d ? 1 / d : 0;
            b->d = d;
            for (int j = 0; j < QK_K; j++) b->qs[j] = q8(v[j] * id);
            for (int s = 0; s < QK_K / 16; s++) {
                int sum = 0;
                for (int j = 0; j < 16; j++) sum += b->qs[16 * s + j];
                b->bsums[s] = (int16_t)sum;
            }
        }
        return;
    case KN_P16_Q4_K:
    case KN_P16_Q6_K: { /* the q8_K split format (kernels.h): block_q8_K's numbers, in arrays */
        for (int64_t i = 0; i < K / QK_K; i++) {
            block_q8_K b;
            ref_quantize_act(QT_Q4_K, x + i * QK_K, &b, QK_K);
            kn_q8k_split_put(&b, i, K, xq);
        }
        return;
    }
    }
}

/* One super-block's part of a K-type dot product, added to *sum: d * da * (exact sum over sub-blocks of
 * scale * integer dot) - dmin * da * (exact sum of minimum * the activations' 16-element sums). */
static void ksuper_dot(uint32_t wtype, const uint8_t *wblk, const int8_t *aq, float da, const int *bsums, float *sum) {
    int q[QK_K], sc[16], mn[16], isum = 0, msum = 0;
    float d, dmin;
    qt_block_ints(wtype, wblk, q, sc, mn, &d, &dmin);
    for (int s = 0; s < 16; s++) {
        int t = 0;
        for (int l = 0; l < 16; l++) t += q[16 * s + l] * aq[16 * s + l];
        isum += sc[s] * t;
        msum += mn[s] * bsums[s];
    }
    *sum += d * da * (float)isum - dmin * da * (float)msum;
}

/* One 32-element block's part of a dot product, added to *sum: dw * da * (exact integer dot), then for
 * Q4_1 / Q5_1 m * da * (the activations' quant sum). */
static void block32_dot(uint32_t wtype, const uint8_t *wblk, const int8_t *aq, float da, int asum, float *sum) {
    int q[32], isum = 0;
    float dw, mw;
    qt_block_ints(wtype, wblk, q, NULL, NULL, &dw, &mw);
    for (int j = 0; j < 32; j++) isum += q[j] * aq[j];
    *sum += dw * da * (float)isum;
    if (wtype == QT_Q4_1 || wtype == QT_Q5_1) *sum += mw * da * (float)asum;
}

/* For the block formats: per block an exact integer dot product, then one float multiply-add with the
 * product of the two scales (qt_block_ints gives the integers; the K types weight each 16-element
 * sub-block's dot by its integer scale, and their minimums, and Q4_1 / Q5_1's, use the activations'
 * sums). Every SIMD table computes the same integers and only sums floats in another order. */
static void ref_matmul(uint32_t wtype, const void *W, size_t w_row_bytes, const void *act,
                       size_t act_row_bytes, int B, int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    wtype &= ~KN_STREAM;
    const uint8_t *wbase = W, *abase = act;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *w = wbase + (size_t)r * w_row_bytes;
        for (int b = 0; b < B; b++) {
            const uint8_t *a = abase + (size_t)b * act_row_bytes;
            float sum = 0;
            switch (wtype) {
            case QT_F32:
                for (int64_t k = 0; k < K; k++) sum += ((const float *)w)[k] * ((const float *)a)[k];
                break;
            case QT_F16:
                for (int64_t k = 0; k < K; k++) sum += fp16_to_f32(((const uint16_t *)w)[k]) * ((const float *)a)[k];
                break;
            case QT_BF16:
                for (int64_t k = 0; k < K; k++) sum += bf16_to_f32(((const uint16_t *)w)[k]) * ((const float *)a)[k];
                break;
            case QT_Q8_0:
            case QT_Q4_0:
            case QT_Q4_1:
            case QT_Q5_0:
            case QT_Q5_1:
            case QT_IQ4_NL: {
                const int with_min = wtype == QT_Q4_1 || wtype == QT_Q5_1;
                const size_t ab_bytes = with_min ? sizeof(block_q8_s) : sizeof(block_q8_0);
                for (int64_t i = 0; i < K / 32; i++) {
                    const uint8_t *ab = a + (size_t)i * ab_bytes;
                    const block_q8_s *as = (const block_q8_s *)ab;
                    const block_q8_0 *a0 = (const block_q8_0 *)ab;
                    block32_dot(wtype, w + (size_t)i * (size_t)qt_get(wtype)->bytes, with_min ? as->qs : a0->qs,
                                fp16_to_f32(with_min ? as->d : a0->d), with_min ? as->sum : 0, &sum);
                }
                break;
            }
            case QT_Q2_K:
            case QT_Q3_K:
            case QT_Q4_K:
            case QT_Q5_K:
            case QT_Q6_K:
                for (int64_t i = 0; i < K / QK_K; i++) {
                    const block_q8_K *ab = (const block_q8_K *)a + i;
                    int bs[16];
                    for (int t = 0; t < 16; t++) bs[t] = ab->bsums[t];
                    ksuper_dot(wtype, w + (size_t)i * (size_t)qt_get(wtype)->bytes, ab->qs, ab->d, bs, &sum);
                }
                break;
            case KN_P16_Q4_K:
            case KN_P16_Q6_K: { /* w is unused: the row's lane of its panel, as the source's super-blocks */
                const int8_t *aq = (const int8_t *)a;
                const float *ad = (const float *)(aq + K);
                const int32_t *bs = (const int32_t *)(ad + K / QK_K);
                for (int64_t i = 0; i < K / QK_K; i++) {
                    uint8_t blk[sizeof(block_q6_K)];
                    int b16[16];
                    for (int t = 0; t < 16; t++) b16[t] = bs[16 * i + t];
                    kn_p16_block(wtype, wbase, K, r, i, blk);
                    ksuper_dot(kn_p16_source(wtype), blk, aq + QK_K * i, ad[i], b16, &sum);
                }
                break;
            }
            case KN_P16_Q4_0:
            case KN_P16_Q4_1:
            case KN_P16_Q5_0:
            case KN_P16_Q5_1:
            case KN_P16_Q8_0:
            case KN_P16_IQ4_NL: { /* w is unused: the row's lane of its panel, as the source's blocks */
                const int64_t nb = K / 32;
                const int8_t *aq = (const int8_t *)a;
                const float *ad = (const float *)(aq + nb * 32);
                const int32_t *c4 = (const int32_t *)(ad + nb);
                for (int64_t i = 0; i < nb; i++) {
                    uint8_t blk[sizeof(block_q8_0)];
                    kn_p16_block(wtype, wbase, K, r, i, blk);
                    block32_dot(kn_p16_source(wtype), blk, aq + 32 * i, ad[i], -c4[i] / 8, &sum);
                }
                break;
            }
            default: return; /* unsupported types never reach the kernels: the loader rejects them */
            }
            y[(size_t)b * ldy + (size_t)r] = sum;
        }
    }
}

static float ref_dot_f32(const float *a, const float *b, int64_t n) {
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static void ref_axpy_f32(float *y, float a, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* MLX affine weights (layout in kernels.h and quant.c). Per group, sum_q = sum(q * x) and
 * sum_x = sum(x), then y += scale * sum_q + bias * sum_x: the same as the dot product with the
 * dequantized row, up to float rounding. Every table groups the arithmetic this way, though the SIMD
 * tables take sum_x once per activation row rather than once per weight row. */
static void ref_matmul_mlx(int bits, int group, const uint32_t *W, const void *scales, const void *biases,
                           uint32_t sb_type, const float *x, size_t x_stride, int B, int64_t K, int64_t r0,
                           int64_t r1, float *y, size_t ldy) {
    const int per_word = 32 / bits;
    const uint32_t mask = (1u << bits) - 1;
    const int64_t words = K / per_word, groups = K / group;
    for (int64_t r = r0; r < r1; r++) {
        const uint32_t *w = W + (size_t)r * (size_t)words;
        for (int b = 0; b < B; b++) {
            const float *xb = x + (size_t)b * x_stride;
            float sum = 0;
            for (int64_t g = 0; g < groups; g++) {
                float sum_q = 0, sum_x = 0;
                for (int64_t k = g * group; k < (g + 1) * group; k++) {
                    uint32_t word;
                    memcpy(&word, w + k / per_word, 4);
                    uint32_t q = (word >> (bits * (k % per_word))) & mask;
                    sum_q += (float)q * xb[k];
                    sum_x += xb[k];
                }
                size_t i = (size_t)r * (size_t)groups + (size_t)g;
                sum += mlx_sb_get(sb_type, scales, (int64_t)i) * sum_q + mlx_sb_get(sb_type, biases, (int64_t)i) * sum_x;
            }
            y[(size_t)b * ldy + (size_t)r] = sum;
        }
    }
}

static float ref_exp_sum(const float *x, float shift, float *y, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        float d = x[i] - shift, e = d < -87.0f ? 0.0f : expf(d);
        if (y) y[i] = e;
        s += e;
    }
    return (float)s;
}

/* An element of a KV cache of either type (kn_ops.attn_qk16: F16 elements converted exactly). */
static float kv_get(const void *p, size_t i, int f16) {
    return f16 ? fp16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void attn_v_any(const float *w, size_t w_stride, int nh, const void *v0, int64_t n0, const void *v,
                       size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride, int f16) {
    for (int h = 0; h < nh; h++) {
        float *o = out + (size_t)h * out_stride;
        for (int64_t j = 0; j < d; j++) o[j] = 0;
        for (int64_t p = 0; p < npos; p++) {
            float a = w[(size_t)h * w_stride + (size_t)p];
            for (int64_t j = 0; j < d; j++) o[j] += a * kv_get(p < n0 ? v0 : v, (size_t)p * v_stride + (size_t)j, f16);
        }
    }
}

static void ref_attn_v(const float *w, size_t w_stride, int nh, const float *v0, int64_t n0, const float *v,
                       size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride) {
    attn_v_any(w, w_stride, nh, v0, n0, v, v_stride, npos, d, out, out_stride, 0);
}

static void ref_attn_v16(const float *w, size_t w_stride, int nh, const uint16_t *v0, int64_t n0, const uint16_t *v,
                         size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride) {
    attn_v_any(w, w_stride, nh, v0, n0, v, v_stride, npos, d, out, out_stride, 1);
}

static void ref_silu_mul(float *g, const float *u, int64_t n) {
    for (int64_t i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void kn_scale_max(float *s, size_t s_stride, int nh, int64_t npos, float scale, float *mx) {
    for (int h = 0; h < nh; h++) {
        float *sh = s + (size_t)h * s_stride, m = -INFINITY;
        for (int64_t p = 0; p < npos; p++) {
            sh[p] *= scale;
            if (sh[p] > m) m = sh[p];
        }
        mx[h] = m;
    }
}

static void attn_qk_any(const float *q, size_t q_stride, int nh, const void *kt, size_t kt_stride, int64_t npos,
                        int64_t d, float scale, float *s, size_t s_stride, float *mx, int f16) {
    for (int h = 0; h < nh; h++) {
        const float *qh = q + (size_t)h * q_stride;
        float m = -INFINITY;
        for (int64_t p = 0; p < npos; p++) {
            float acc = 0;
            size_t kb = (size_t)(p / 16) * kt_stride + (size_t)(p % 16);
            for (int64_t j = 0; j < d; j++) acc += qh[j] * kv_get(kt, kb + (size_t)j * 16, f16);
            float v = scale * acc;
            s[(size_t)h * s_stride + (size_t)p] = v;
            if (v > m) m = v;
        }
        mx[h] = m;
    }
}

static void ref_attn_qk(const float *q, size_t q_stride, int nh, const float *kt, size_t kt_stride, int64_t npos,
                        int64_t d, float scale, float *s, size_t s_stride, float *mx) {
    attn_qk_any(q, q_stride, nh, kt, kt_stride, npos, d, scale, s, s_stride, mx, 0);
}

static void ref_attn_qk16(const float *q, size_t q_stride, int nh, const uint16_t *kt, size_t kt_stride, int64_t npos,
                          int64_t d, float scale, float *s, size_t s_stride, float *mx) {
    attn_qk_any(q, q_stride, nh, kt, kt_stride, npos, d, scale, s, s_stride, mx, 1);
}

static void ref_to_f16(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = f32_to_fp16(x[i]);
}

const kn_ops kn_ref_ops = {"scalar", ref_quantize_act, ref_matmul, ref_dot_f32, ref_axpy_f32, ref_matmul_mlx,
                           ref_exp_sum, ref_attn_v, ref_attn_qk, ref_silu_mul, 0, ref_attn_v16, ref_attn_qk16,
                           ref_to_f16};
