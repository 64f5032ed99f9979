/* kernels_neon.c — the kernel tables for aarch64 (NEON is part of the base architecture). As "neon", plain
 * NEON only: widening multiplies (smull/smlal2) and pairwise adds, so it runs on every ARMv8 core.
 * kernels_neondot.c compiles this file again with KN_NEON_DOT and the dot product extension (ARMv8.2
 * dotprod: Cortex-A55/A75 and later, every phone core since about 2018, Apple M1), as the "neondot" table:
 * one sdot per 16 byte products in place of three instructions (kernels.c checks HWCAP_ASIMDDP). The
 * integer sums stay exact; their lanes group other products, so the two tables' float bits differ, each
 * batch-invariant. Must match kernels_ref.c. */
#include <float.h>
#include <math.h>
#include <arm_neon.h>
#include <string.h>

#include "base/common.h"
#include "kernels/kernels.h"
#include "io/qtypes.h"

#define INLINE static inline __attribute__((always_inline))

/* Activation rows per register tile; larger batches take several tiles over a chunk of rows that stays
 * in L2. */
#define TB 4
#define ROW_CHUNK_BYTES (256 * 1024)

static int64_t row_chunk(size_t w_row_bytes, int B, int64_t rows, int rb) {
    if (B <= TB) return rows;
    int64_t n = (int64_t)(ROW_CHUNK_BYTES / (w_row_bytes ? w_row_bytes : 1)) / rb * rb;
    return n < rb ? rb : n;
}

/* ---------------------------------------------------------------- activation quantization */

/* 16 floats -> 16 int8; fcvtns rounds to nearest even like the reference. Returns their sum too. */
INLINE int8x16_t q8x16(const float *v, float id, int32_t *sum) {
    int32x4_t q0 = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(v), id));
    int32x4_t q1 = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(v + 4), id));
    int32x4_t q2 = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(v + 8), id));
    int32x4_t q3 = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(v + 12), id));
    *sum = vaddvq_s32(vaddq_s32(vaddq_s32(q0, q1), vaddq_s32(q2, q3)));
    int16x8_t lo = vcombine_s16(vqmovn_s32(q0), vqmovn_s32(q1)), hi = vcombine_s16(vqmovn_s32(q2), vqmovn_s32(q3));
    return vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi));
}

INLINE float amax_n(const float *v, int n) {
    float32x4_t m = vdupq_n_f32(0);
    for (int j = 0; j < n; j += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(v + j)));
    return vmaxvq_f32(m);
}

/* One q8_0 block (the rule of kernels_ref.c), for kn_q8_act_row. */
static qt_half neon_q8_block(const float *v, int8_t *qs, int *sum) {
    int32_t s0, s1;
    float d = amax_n(v, 32) / 127, id = d ? 1 / d : 0;
    if (id > FLT_MAX) return kn_q8_block_ref(v, qs, sum); /* fcvtns would give -128 for -inf */
    vst1q_s8(qs, q8x16(v, id, &s0));
    vst1q_s8(qs + 16, q8x16(v + 16, id, &s1));
    if (sum) *sum = s0 + s1;
    return f32_to_fp16(d);
}

static void neon_quantize_act(uint32_t wtype, const float *x, void *xq, int64_t K) {
    int32_t s0;
    if (kn_q8_act_row(wtype, x, xq, K, neon_q8_block, NULL)) return;
    switch (wtype) {
    case QT_Q2_K:
    case QT_Q3_K:
    case QT_Q4_K:
    case QT_Q5_K:
    case QT_Q6_K:
        for (int64_t i = 0; i < K / QK_K; i++) {
            block_q8_K *b = (block_q8_K *)xq + i;
            const float *v = x + QK_K * i;
            float d = amax_n(v, QK_K) / 127, id = d ? 1 / d : 0;
            if (id > FLT_MAX) { /* kn_q8_block_ref's case */
                kn_ref_ops.quantize_act(QT_Q4_K, v, b, QK_K);
                continue;
            }
            b->d = d;
            for (int j = 0; j < QK_K; j += 16) {
                vst1q_s8(b->qs + j, q8x16(v + j, id, &s0));
                b->bsums[j / 16] = (int16_t)s0;
            }
        }
        return;
    default: kn_ref_ops.quantize_act(wtype, x, xq, K); return;
    }
}

/* ---------------------------------------------------------------- F32 / F16 / BF16 weights */

#define FR 2
#define FB 4

INLINE float32x4_t load_w(uint32_t wt, const uint8_t *row, int64_t k) {
    if (wt == QT_F32) return vld1q_f32((const float *)row + k);
    uint16x4_t h = vld1_u16((const uint16_t *)row + k);
    if (wt == QT_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

INLINE float load_w1(uint32_t wt, const uint8_t *row, int64_t k) {
    if (wt == QT_F32) return ((const float *)row)[k];
    uint16_t h;
    memcpy(&h, row + 2 * k, 2);
    return wt == QT_F16 ? fp16_to_f32(h) : bf16_to_f32(h);
}

INLINE void f_tile(uint32_t wt, int nb, const uint8_t *const *w, const float *const *x, int64_t K,
                   float out[FB][FR]) {
    float32x4_t acc[FB][FR];
    for (int b = 0; b < nb; b++)
        for (int r = 0; r < FR; r++) acc[b][r] = vdupq_n_f32(0);
    int64_t k = 0;
    for (; k + 4 <= K; k += 4) {
        float32x4_t wv[FR];
        for (int r = 0; r < FR; r++) wv[r] = load_w(wt, w[r], k);
        for (int b = 0; b < nb; b++) {
            float32x4_t xv = vld1q_f32(x[b] + k);
            for (int r = 0; r < FR; r++) acc[b][r] = vfmaq_f32(acc[b][r], wv[r], xv);
        }
    }
    for (int b = 0; b < nb; b++)
        for (int r = 0; r < FR; r++) {
            float s = vaddvq_f32(acc[b][r]);
            for (int64_t j = k; j < K; j++) s += load_w1(wt, w[r], j) * x[b][j];
            out[b][r] = s;
        }
}

INLINE void mm_float(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb, int B,
                     int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    int64_t rc = row_chunk(wrb, B, r1 - r0, FR);
    for (int64_t c0 = r0; c0 < r1; c0 += rc) {
        int64_t c1 = LAYA_MIN(r1, c0 + rc);
        for (int b0 = 0; b0 < B; b0 += FB) {
            int nb = LAYA_MIN(FB, B - b0);
            const float *x[FB];
            for (int t = 0; t < FB; t++) x[t] = (const float *)(act + (size_t)(b0 + LAYA_MIN(t, nb - 1)) * arb);
            for (int64_t r = c0; r < c1; r += FR) {
                const uint8_t *w[FR];
                for (int j = 0; j < FR; j++) w[j] = W + (size_t)LAYA_MIN(r + j, c1 - 1) * wrb;
                float out[FB][FR];
                switch (nb) {
                case 1: f_tile(wt, 1, w, x, K, out); break;
                case 2: f_tile(wt, 2, w, x, K, out); break;
                case 3: f_tile(wt, 3, w, x, K, out); break;
                default: f_tile(wt, 4, w, x, K, out); break;
                }
                for (int t = 0; t < nb; t++)
                    for (int j = 0; j < FR && r + j < c1; j++) y[(size_t)(b0 + t) * ldy + (size_t)(r + j)] = out[t][j];
            }
        }
    }
}

/* ---------------------------------------------------------------- block weights x q8 activations */

/* The 32-element types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) take one block of 32 at a time, the K types
 * (Q2_K .. Q6_K) a super-block of 256 in eight pieces of 32; either way the block's quants are decoded once
 * into signed bytes (qt_block_ints's values and order) and used for every activation row of the tile. */
INLINE int is_k(uint32_t wt) {
    return wt == QT_Q2_K || wt == QT_Q3_K || wt == QT_Q4_K || wt == QT_Q5_K || wt == QT_Q6_K;
}

INLINE size_t blk_bytes(uint32_t wt) {
    switch (wt) {
    case QT_Q8_0: return sizeof(block_q8_0);
    case QT_Q4_0: return sizeof(block_q4_0);
    case QT_Q4_1: return sizeof(block_q4_1);
    case QT_Q5_0: return sizeof(block_q5_0);
    case QT_Q5_1: return sizeof(block_q5_1);
    case QT_IQ4_NL: return sizeof(block_iq4_nl);
    case QT_Q2_K: return sizeof(block_q2_K);
    case QT_Q3_K: return sizeof(block_q3_K);
    case QT_Q4_K: return sizeof(block_q4_K);
    case QT_Q5_K: return sizeof(block_q5_K);
    default: return sizeof(block_q6_K);
    }
}

/* fcvt: exact, the value fp16_to_f32 gives, without its branches. */
INLINE float h2f(qt_half h) {
    __fp16 v;
    memcpy(&v, &h, sizeof v);
    return (float)v; /* one scalar fcvt */
}

/* 16 signed byte products summed into four int32 lanes. sdot: lane j gets bytes 4j..4j+3. Otherwise smull
 * + smlal2 put two products in each 16-bit lane (bytes j and j + 8: at most 2 * 128 * 127, exact, because
 * activations never hold -128) and the pairwise add takes two of those per lane. */
INLINE int32x4_t dot16(int8x16_t w, int8x16_t a, int32x4_t acc) {
#ifdef KN_NEON_DOT
    return vdotq_s32(acc, w, a);
#else
    int16x8_t p = vmull_s8(vget_low_s8(w), vget_low_s8(a));
    p = vmlal_high_s8(p, w, a);
    return vpadalq_s16(acc, p);
#endif
}

/* Each byte of v shifted left by `by` (right when negative), then masked: moves a bit field in place. */
INLINE uint8x16_t bitfield(uint8x16_t v, int by, uint8_t mask) {
    return vandq_u8(vshlq_u8(v, vdupq_n_s8((int8_t)by)), vdupq_n_u8(mask));
}

/* Block i of a 32-element row: elements 0-15 in *w0 (the low nibbles of qs), 16-31 in *w1 (the high ones),
 * its scale and its minimum (Q4_1 / Q5_1; 0 for the others). */
INLINE void q32_block(uint32_t wt, const uint8_t *w, int64_t i, int8x16_t *w0, int8x16_t *w1, float *dw, float *mw) {
    const uint8_t *p = w + (size_t)i * blk_bytes(wt), *qs, *qh = NULL;
    qt_half hd, hm = 0;
    switch (wt) {
    case QT_Q8_0: {
        const block_q8_0 *b = (const void *)p;
        *w0 = vld1q_s8(b->qs), *w1 = vld1q_s8(b->qs + 16), *dw = h2f(b->d), *mw = 0;
        return;
    }
    case QT_Q4_0: { const block_q4_0 *b = (const void *)p; hd = b->d, qs = b->qs; break; }
    case QT_Q4_1: { const block_q4_1 *b = (const void *)p; hd = b->d, hm = b->m, qs = b->qs; break; }
    case QT_Q5_0: { const block_q5_0 *b = (const void *)p; hd = b->d, qs = b->qs, qh = b->qh; break; }
    case QT_Q5_1: { const block_q5_1 *b = (const void *)p; hd = b->d, hm = b->m, qs = b->qs, qh = b->qh; break; }
    default: { const block_iq4_nl *b = (const void *)p; hd = b->d, qs = b->qs; break; }
    }
    uint8x16_t v = vld1q_u8(qs), lo = vandq_u8(v, vdupq_n_u8(15)), hi = vshrq_n_u8(v, 4);
    if (qh) { /* bit j of the little-endian word qh is bit 4 of element j: qh[j / 8] tested with 1 << j % 8 */
        const uint8x16_t bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull));
        uint8x16_t h0 = vcombine_u8(vdup_n_u8(qh[0]), vdup_n_u8(qh[1]));
        uint8x16_t h1 = vcombine_u8(vdup_n_u8(qh[2]), vdup_n_u8(qh[3]));
        lo = vorrq_u8(lo, vandq_u8(vtstq_u8(h0, bit), vdupq_n_u8(16)));
        hi = vorrq_u8(hi, vandq_u8(vtstq_u8(h1, bit), vdupq_n_u8(16)));
    }
    if (wt == QT_IQ4_NL) {
        const int8x16_t lut = vld1q_s8(kIQ4NL);
        *w0 = vqtbl1q_s8(lut, lo), *w1 = vqtbl1q_s8(lut, hi);
    } else {
        const int8x16_t off = vdupq_n_s8(wt == QT_Q4_0 ? 8 : wt == QT_Q5_0 ? 16 : 0);
        *w0 = vsubq_s8(vreinterpretq_s8_u8(lo), off), *w1 = vsubq_s8(vreinterpretq_s8_u8(hi), off);
    }
    *dw = h2f(hd), *mw = h2f(hm);
}

/* Activations block_q8_0, or block_q8_s for Q4_1 / Q5_1, whose minimum adds m * da * sum(a) per block; that
 * term is summed apart (macc) as the reference rounds it apart. */
INLINE void q8_tile(uint32_t wt, int nb, const uint8_t *w, const uint8_t *const *a, int64_t nk, float *res) {
    const int with_min = wt == QT_Q4_1 || wt == QT_Q5_1;
    float32x4_t acc[TB];
    float macc[TB];
    for (int b = 0; b < nb; b++) acc[b] = vdupq_n_f32(0), macc[b] = 0;
    for (int64_t i = 0; i < nk; i++) {
        int8x16_t w0, w1;
        float dw, mw;
        q32_block(wt, w, i, &w0, &w1, &dw, &mw);
        /* unrolled, so the tile's accumulators stay in registers */
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            const block_q8_0 *a0 = (const block_q8_0 *)a[b] + i;
            const block_q8_s *as = (const block_q8_s *)a[b] + i;
            const int8_t *aq = with_min ? as->qs : a0->qs;
            float da = h2f(with_min ? as->d : a0->d);
            int32x4_t s = dot16(w1, vld1q_s8(aq + 16), dot16(w0, vld1q_s8(aq), vdupq_n_s32(0)));
            acc[b] = vfmaq_n_f32(acc[b], vcvtq_f32_s32(s), dw * da);
            if (with_min) macc[b] += mw * da * (float)as->sum;
        }
    }
    for (int b = 0; b < nb; b++) res[b] = with_min ? vaddvq_f32(acc[b]) + macc[b] : vaddvq_f32(acc[b]);
}

INLINE void q4k_scales(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t w0, w1, w2;
    memcpy(&w0, s, 4), memcpy(&w1, s + 4, 4), memcpy(&w2, s + 8, 4);
    uint32_t s_lo = w0 & 0x3f3f3f3f, m_lo = w1 & 0x3f3f3f3f;
    uint32_t s_hi = (w2 & 0x0f0f0f0f) | ((w0 >> 2) & 0x30303030);
    uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0f) | ((w1 >> 2) & 0x30303030);
    memcpy(sc, &s_lo, 4), memcpy(sc + 4, &s_hi, 4), memcpy(mn, &m_lo, 4), memcpy(mn + 4, &m_hi, 4);
}

/* Q3_K's sixteen 6-bit scales, a word of four at a time: sub-block s takes its low four bits from the low
 * (s < 8) or high nibble of byte s % 8, its top two from bits 2 (s / 4) of byte 8 + s % 4; minus 32. */
INLINE void q3k_scales(const uint8_t *s, int8_t sc[16]) {
    uint32_t w0, w1, w2, v[4];
    memcpy(&w0, s, 4), memcpy(&w1, s + 4, 4), memcpy(&w2, s + 8, 4);
    v[0] = (w0 & 0x0f0f0f0f) | ((w2 & 0x03030303) << 4);
    v[1] = (w1 & 0x0f0f0f0f) | (((w2 >> 2) & 0x03030303) << 4);
    v[2] = ((w0 >> 4) & 0x0f0f0f0f) | (((w2 >> 4) & 0x03030303) << 4);
    v[3] = ((w1 >> 4) & 0x0f0f0f0f) | (((w2 >> 6) & 0x03030303) << 4);
    uint8x16_t u = vld1q_u8((const uint8_t *)v);
    vst1q_s8(sc, vsubq_s8(vreinterpretq_s8_u8(u), vdupq_n_s8(32)));
}

/* A super-block's scales as qt_block_ints gives them: sc[s] of 16-element sub-block s, and for the types
 * with mins (Q2_K, Q4_K, Q5_K) the mins of sub-blocks 0-7 and 8-15 as int16 lanes, for the bsums. */
typedef struct {
    int8_t sc[16];
    int16x8_t mlo, mhi;
    float d, dmin;
} k_scales;

INLINE void k_head(uint32_t wt, const uint8_t *p, k_scales *h) {
    h->mlo = h->mhi = vdupq_n_s16(0), h->dmin = 0;
    switch (wt) {
    case QT_Q4_K:
    case QT_Q5_K: { /* one scale and min per 32 elements: each twice */
        const block_q4_K *p4 = (const block_q4_K *)p;
        const block_q5_K *p5 = (const block_q5_K *)p;
        uint8_t s8[8], m8[8];
        q4k_scales(wt == QT_Q4_K ? p4->scales : p5->scales, s8, m8);
        uint8x8_t sv = vld1_u8(s8), mv = vld1_u8(m8);
        vst1q_s8(h->sc, vreinterpretq_s8_u8(vcombine_u8(vzip1_u8(sv, sv), vzip2_u8(sv, sv))));
        h->mlo = vreinterpretq_s16_u16(vmovl_u8(vzip1_u8(mv, mv)));
        h->mhi = vreinterpretq_s16_u16(vmovl_u8(vzip2_u8(mv, mv)));
        h->d = h2f(wt == QT_Q4_K ? p4->d : p5->d), h->dmin = h2f(wt == QT_Q4_K ? p4->dmin : p5->dmin);
        return;
    }
    case QT_Q2_K: { /* scale in the low nibble, min in the high one */
        const block_q2_K *b = (const block_q2_K *)p;
        uint8x16_t v = vld1q_u8(b->scales), m = vshrq_n_u8(v, 4);
        vst1q_s8(h->sc, vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(15))));
        h->mlo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m)));
        h->mhi = vreinterpretq_s16_u16(vmovl_high_u8(m));
        h->d = h2f(b->d), h->dmin = h2f(b->dmin);
        return;
    }
    case QT_Q3_K:
        q3k_scales(((const block_q3_K *)p)->scales, h->sc);
        h->d = h2f(((const block_q3_K *)p)->d);
        return;
    default:
        memcpy(h->sc, ((const block_q6_K *)p)->scales, 16);
        h->d = h2f(((const block_q6_K *)p)->d);
        return;
    }
}

/* Elements 32j .. 32j + 31 of a super-block as signed bytes (element orders: qt_block_ints). */
INLINE void k_quants(uint32_t wt, const uint8_t *p, int j, int8x16_t *w0, int8x16_t *w1) {
    uint8x16_t v0, v1;
    int off = 0;
    switch (wt) {
    case QT_Q4_K:
    case QT_Q5_K: { /* nibble j & 1 of qs[32 (j / 2) + l]; Q5_K: bit j of qh[l] as bit 4 */
        const block_q5_K *p5 = (const block_q5_K *)p;
        const uint8_t *q = (wt == QT_Q4_K ? ((const block_q4_K *)p)->qs : p5->qs) + 32 * (j / 2);
        v0 = bitfield(vld1q_u8(q), -4 * (j & 1), 15), v1 = bitfield(vld1q_u8(q + 16), -4 * (j & 1), 15);
        if (wt == QT_Q5_K) {
            v0 = vorrq_u8(v0, bitfield(vld1q_u8(p5->qh), 4 - j, 0x10));
            v1 = vorrq_u8(v1, bitfield(vld1q_u8(p5->qh + 16), 4 - j, 0x10));
        }
        break;
    }
    case QT_Q2_K:
    case QT_Q3_K: { /* bits 2k, 2k + 1 of qs[32h + l] (j = 4h + k); Q3_K: bit j of hmask[l] as bit 2, minus 4 */
        const block_q3_K *p3 = (const block_q3_K *)p;
        const uint8_t *q = (wt == QT_Q2_K ? ((const block_q2_K *)p)->qs : p3->qs) + 32 * (j / 4);
        v0 = bitfield(vld1q_u8(q), -2 * (j % 4), 3), v1 = bitfield(vld1q_u8(q + 16), -2 * (j % 4), 3);
        if (wt == QT_Q3_K) {
            v0 = vorrq_u8(v0, bitfield(vld1q_u8(p3->hmask), 2 - j, 4));
            v1 = vorrq_u8(v1, bitfield(vld1q_u8(p3->hmask + 16), 2 - j, 4));
            off = 4;
        }
        break;
    }
    default: { /* Q6_K, quarter k of half h: the low four bits from ql, bits 2k, 2k + 1 of qh as bits 4-5 */
        const block_q6_K *p6 = (const block_q6_K *)p;
        int h = j / 4, k = j % 4;
        const uint8_t *ql = p6->ql + 64 * h + 32 * (k & 1), *qh = p6->qh + 32 * h;
        v0 = vorrq_u8(bitfield(vld1q_u8(ql), -4 * (k >= 2), 15), bitfield(vld1q_u8(qh), 4 - 2 * k, 0x30));
        v1 = vorrq_u8(bitfield(vld1q_u8(ql + 16), -4 * (k >= 2), 15), bitfield(vld1q_u8(qh + 16), 4 - 2 * k, 0x30));
        off = 32;
        break;
    }
    }
    *w0 = vsubq_s8(vreinterpretq_s8_u8(v0), vdupq_n_s8((int8_t)off));
    *w1 = vsubq_s8(vreinterpretq_s8_u8(v1), vdupq_n_s8((int8_t)off));
}

/* Decoded 32 elements (two vectors) at a time and used for every activation row before the next 32: per
 * 16-element sub-block an exact dot times its integer scale, then per super-block d * isum - dmin * msum
 * (msum: the mins against the activations' bsums). */
INLINE void k_tile(uint32_t wt, int nb, const uint8_t *w, const uint8_t *const *a, int64_t nsb, float *res) {
    const int with_min = wt == QT_Q2_K || wt == QT_Q4_K || wt == QT_Q5_K;
    float32x4_t acc[TB];
    for (int b = 0; b < nb; b++) acc[b] = vdupq_n_f32(0);
    for (int64_t i = 0; i < nsb; i++) {
        const uint8_t *p = w + (size_t)i * blk_bytes(wt);
        k_scales h;
        k_head(wt, p, &h);
        int32x4_t isum[TB];
        for (int b = 0; b < nb; b++) isum[b] = vdupq_n_s32(0);
        for (int j = 0; j < 8; j++) {
            int8x16_t w0, w1;
            k_quants(wt, p, j, &w0, &w1);
            for (int b = 0; b < nb; b++) {
                const int8_t *q = ((const block_q8_K *)a[b] + i)->qs + 32 * j;
                int32x4_t t0 = dot16(w0, vld1q_s8(q), vdupq_n_s32(0));
                int32x4_t t1 = dot16(w1, vld1q_s8(q + 16), vdupq_n_s32(0));
                isum[b] = vmlaq_n_s32(vmlaq_n_s32(isum[b], t0, h.sc[2 * j]), t1, h.sc[2 * j + 1]);
            }
        }
        for (int b = 0; b < nb; b++) {
            const block_q8_K *ab = (const block_q8_K *)a[b] + i;
            acc[b] = vfmaq_n_f32(acc[b], vcvtq_f32_s32(isum[b]), h.d * ab->d);
            if (with_min) {
                int16x8_t b0 = vld1q_s16(ab->bsums), b1 = vld1q_s16(ab->bsums + 8);
                int32x4_t ms = vmull_s16(vget_low_s16(b0), vget_low_s16(h.mlo));
                ms = vmlal_high_s16(ms, b0, h.mlo);
                ms = vmlal_s16(ms, vget_low_s16(b1), vget_low_s16(h.mhi));
                ms = vmlal_high_s16(ms, b1, h.mhi);
                acc[b] = vfmsq_n_f32(acc[b], vcvtq_f32_s32(ms), h.dmin * ab->d);
            }
        }
    }
    for (int b = 0; b < nb; b++) res[b] = vaddvq_f32(acc[b]);
}

/* Every block type: one pass over each weight row for a tile of up to TB activation rows. A row's output
 * takes the same arithmetic whatever nb is, so the batch does not change its bits. */
INLINE void mm_blocks(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb, int B,
                      int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    const int64_t n = K / (is_k(wt) ? QK_K : QK8_0);
    int64_t rc = row_chunk(wrb, B, r1 - r0, 1);
    for (int64_t c0 = r0; c0 < r1; c0 += rc) {
        int64_t c1 = LAYA_MIN(r1, c0 + rc);
        for (int b0 = 0; b0 < B; b0 += TB) {
            int nb = LAYA_MIN(TB, B - b0);
            const uint8_t *a[TB];
            for (int t = 0; t < nb; t++) a[t] = act + (size_t)(b0 + t) * arb;
            for (int64_t r = c0; r < c1; r++) {
                const uint8_t *w = W + (size_t)r * wrb;
                float res[TB];
#define TILE(k) (is_k(wt) ? k_tile(wt, k, w, a, n, res) : q8_tile(wt, k, w, a, n, res))
                switch (nb) {
                case 1: TILE(1); break;
                case 2: TILE(2); break;
                case 3: TILE(3); break;
                default: TILE(4); break;
                }
#undef TILE
                for (int t = 0; t < nb; t++) y[(size_t)(b0 + t) * ldy + (size_t)r] = res[t];
            }
        }
    }
}

/* ---------------------------------------------------------------- MLX affine weights x F32 */

/* Groups per K chunk: per tile, the sums of x per group and activation row go into a stack array
 * (TB * NGC floats) and are reused by every weight row; per row, the scales as floats (NGC). */
#define NGC 256

/* Scales or biases i .. i+3 as floats. */
static inline float32x4_t sb_load4(uint32_t t, const void *p, int64_t i) {
    if (t == QT_F32) return vld1q_f32((const float *)p + i);
    uint16x4_t h = vld1_u16((const uint16_t *)p + i);
    if (t == QT_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

static inline float sb_get(uint32_t t, const void *p, int64_t i) {
    if (t == QT_F32) {
        float f;
        memcpy(&f, (const uint8_t *)p + 4 * i, 4); /* tensors in safetensors files need not be aligned */
        return f;
    }
    uint16_t h;
    memcpy(&h, (const uint8_t *)p + 2 * i, 2);
    return t == QT_F16 ? fp16_to_f32(h) : bf16_to_f32(h);
}

/* Byte k of a 16-byte table into the low byte of each 32-bit lane (tbl yields 0 for index 255): with
 * the bytes in weight order, this widens 4 weights to uint32 in one instruction instead of two. */
static const uint8_t g_widen[4][16] __attribute__((aligned(16))) = {
#define L(i) i, 255, 255, 255, i + 1, 255, 255, 255, i + 2, 255, 255, 255, i + 3, 255, 255, 255
    {L(0)}, {L(4)}, {L(8)}, {L(12)},
#undef L
};

/* One weight row against nb activation rows over ng groups. Per 16 weights: 4 bits are split into low
 * and high nibbles and zipped back into weight order (two instructions per 16 weights), then each 4 are
 * widened by a tbl and converted; 8 bits need only the tbl and the convert. The products go into two
 * partial sums per activation row, scaled once per group. Each group's partial sums start afresh, so
 * the out-of-order core overlaps the FMA chains of consecutive groups, as in kernels_avx2.c. The count
 * is the same for every nb: with four for a single row and two otherwise, a row's sum was rounded
 * differently alone than in a batch (kernels.h). The bias terms are added by the caller. */
INLINE void mlx_tile(int bits, int group, int nb, const uint32_t *w, const float *sf, const float *const *x,
                     int64_t ng, float32x4_t *res) {
    const int na = 2;
    uint8x16_t widen[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) widen[j] = vld1q_u8(g_widen[j]);
    float32x4_t acc[TB];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) acc[b] = vdupq_n_f32(0);
    for (int64_t g = 0; g < ng; g++) {
        const uint8_t *wg = (const uint8_t *)(w + g * (group * bits / 32));
        const int64_t kg = g * group;
        float32x4_t part[TB][2];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++)
#pragma GCC unroll 4
            for (int u = 0; u < na; u++) part[b][u] = vdupq_n_f32(0);
#pragma GCC unroll 8
        for (int c = 0; c < group / 16; c++) { /* 16 weights */
            uint8x16_t e;
            if (bits == 4) {
                uint8x16_t v = vld1q_u8(wg + 16 * (c / 2));
                uint8x16_t lo = vandq_u8(v, vdupq_n_u8(15)), hi = vshrq_n_u8(v, 4);
                e = c & 1 ? vzip2q_u8(lo, hi) : vzip1q_u8(lo, hi);
            } else {
                e = vld1q_u8(wg + 16 * c);
            }
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                float32x4_t wv = vcvtq_f32_u32(vreinterpretq_u32_u8(vqtbl1q_u8(e, widen[j])));
                int u = (4 * c + j) % na;
#pragma GCC unroll 4
                for (int b = 0; b < nb; b++) part[b][u] = vfmaq_f32(part[b][u], wv, vld1q_f32(x[b] + kg + 16 * c + 4 * j));
            }
        }
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            float32x4_t t = part[b][0];
#pragma GCC unroll 4
            for (int u = 1; u < na; u++) t = vaddq_f32(t, part[b][u]);
            acc[b] = vfmaq_n_f32(acc[b], t, sf[g]);
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) res[b] = acc[b];
}

INLINE void mm_mlx(int bits, int group, uint32_t sbt, const uint32_t *W, const void *scales, const void *biases,
                   const float *x, size_t x_stride, int B, int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    const int64_t words = K * bits / 32, ng_row = K / group;
    const size_t sbs = sbt == QT_F32 ? 4 : 2;
    float sx[TB][NGC], sf[NGC];
    int64_t rc = row_chunk((size_t)K * (size_t)bits / 8, B, r1 - r0, 1);
    for (int64_t c0 = r0; c0 < r1; c0 += rc) {
        int64_t c1 = LAYA_MIN(r1, c0 + rc);
        for (int b0 = 0; b0 < B; b0 += TB) {
            int nb = LAYA_MIN(TB, B - b0);
            for (int64_t g0 = 0; g0 < ng_row; g0 += NGC) {
                int64_t ng = LAYA_MIN(NGC, ng_row - g0);
                const float *xs[TB];
                for (int t = 0; t < nb; t++) {
                    xs[t] = x + (size_t)(b0 + t) * x_stride + (size_t)(g0 * group);
                    for (int64_t g = 0; g < ng; g++) {
                        float32x4_t v = vld1q_f32(xs[t] + g * group);
                        for (int k = 4; k < group; k += 4) v = vaddq_f32(v, vld1q_f32(xs[t] + g * group + k));
                        sx[t][g] = vaddvq_f32(v);
                    }
                }
                for (int64_t r = c0; r < c1; r++) {
                    const uint32_t *w = W + (size_t)r * (size_t)words + (size_t)(g0 * group * bits / 32);
                    size_t si = ((size_t)r * (size_t)ng_row + (size_t)g0) * sbs;
                    const void *sc = (const uint8_t *)scales + si, *bi = (const uint8_t *)biases + si;
                    /* the scales as floats, and the bias terms: sum over groups of bias * sum(x) */
                    float32x4_t bt[TB];
                    float btail[TB] = {0};
                    for (int t = 0; t < nb; t++) bt[t] = vdupq_n_f32(0);
                    int64_t g = 0;
                    for (; g + 4 <= ng; g += 4) {
                        vst1q_f32(sf + g, sb_load4(sbt, sc, g));
                        float32x4_t bv = sb_load4(sbt, bi, g);
                        for (int t = 0; t < nb; t++) bt[t] = vfmaq_f32(bt[t], bv, vld1q_f32(sx[t] + g));
                    }
                    for (; g < ng; g++) {
                        sf[g] = sb_get(sbt, sc, g);
                        float bv = sb_get(sbt, bi, g);
                        for (int t = 0; t < nb; t++) btail[t] += bv * sx[t][g];
                    }
                    float32x4_t res[TB];
                    switch (nb) {
                    case 1: mlx_tile(bits, group, 1, w, sf, xs, ng, res); break;
                    case 2: mlx_tile(bits, group, 2, w, sf, xs, ng, res); break;
                    case 3: mlx_tile(bits, group, 3, w, sf, xs, ng, res); break;
                    default: mlx_tile(bits, group, 4, w, sf, xs, ng, res); break;
                    }
                    for (int t = 0; t < nb; t++) {
                        float v = vaddvq_f32(vaddq_f32(res[t], bt[t])) + btail[t];
                        float *yp = y + (size_t)(b0 + t) * ldy + (size_t)r;
                        *yp = g0 > 0 ? *yp + v : v;
                    }
                }
            }
        }
    }
}

/* bits and the group size become constants in each instantiation (the inner loops unroll fully). */
static void neon_matmul_mlx(int bits, int group, const uint32_t *W, const void *scales, const void *biases,
                            uint32_t sb_type, const float *x, size_t x_stride, int B, int64_t K, int64_t r0,
                            int64_t r1, float *y, size_t ldy) {
    if (B <= 0 || r1 <= r0) return;
#define MLX_CALL(b, g) mm_mlx(b, g, sb_type, W, scales, biases, x, x_stride, B, K, r0, r1, y, ldy)
    switch (bits * 1000 + group) {
    case 4032: MLX_CALL(4, 32); return;
    case 4064: MLX_CALL(4, 64); return;
    case 4128: MLX_CALL(4, 128); return;
    case 8032: MLX_CALL(8, 32); return;
    case 8064: MLX_CALL(8, 64); return;
    case 8128: MLX_CALL(8, 128); return;
    default: kn_ref_ops.matmul_mlx(bits, group, W, scales, biases, sb_type, x, x_stride, B, K, r0, r1, y, ldy); return;
    }
#undef MLX_CALL
}

/* ---------------------------------------------------------------- table */

static void neon_matmul(uint32_t wtype, const void *W, size_t w_row_bytes, const void *act, size_t act_row_bytes,
                        int B, int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    if (B <= 0 || r1 <= r0) return;
    wtype &= ~KN_STREAM;
    switch (wtype) {
    case QT_F32: mm_float(QT_F32, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_F16: mm_float(QT_F16, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_BF16: mm_float(QT_BF16, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
#define MM(t) mm_blocks(t, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy)
    case QT_Q8_0: MM(QT_Q8_0); return;
    case QT_Q4_0: MM(QT_Q4_0); return;
    case QT_Q4_1: MM(QT_Q4_1); return;
    case QT_Q5_0: MM(QT_Q5_0); return;
    case QT_Q5_1: MM(QT_Q5_1); return;
    case QT_IQ4_NL: MM(QT_IQ4_NL); return;
    case QT_Q2_K: MM(QT_Q2_K); return;
    case QT_Q3_K: MM(QT_Q3_K); return;
    case QT_Q4_K: MM(QT_Q4_K); return;
    case QT_Q5_K: MM(QT_Q5_K); return;
    case QT_Q6_K: MM(QT_Q6_K); return;
#undef MM
    default: kn_ref_ops.matmul(wtype, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    }
}

static float neon_dot_f32(const float *a, const float *b, int64_t n) {
    float32x4_t s0 = vdupq_n_f32(0), s1 = vdupq_n_f32(0), s2 = vdupq_n_f32(0), s3 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
        s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
        s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
    }
    for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    float s = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static void neon_axpy_f32(float *y, float a, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
    for (; i < n; i++) y[i] += a * x[i];
}

/* exp(d) as in kernels_avx512.c: 2^k * (degree-6 Taylor polynomial of r); d below -87 gives 0. */
static inline float32x4_t exp_neon(float32x4_t d) {
    const float32x4_t lo = vdupq_n_f32(-87.0f);
    uint32x4_t keep = vcgeq_f32(d, lo);
    d = vmaxq_f32(d, lo);
    float32x4_t k = vrndnq_f32(vmulq_n_f32(d, 1.44269504f));
    float32x4_t r = vfmsq_n_f32(d, k, 0.693145752f);
    r = vfmsq_n_f32(r, k, 1.42860677e-6f);
    float32x4_t p = vdupq_n_f32(1.0f / 720);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    int32x4_t e = vshlq_n_s32(vcvtq_s32_f32(k), 23);
    return vreinterpretq_f32_u32(vandq_u32(keep, vreinterpretq_u32_s32(vaddq_s32(vreinterpretq_s32_f32(p), e))));
}

static float neon_exp_sum(const float *x, float shift, float *y, int64_t n) {
    float32x4_t sv = vdupq_n_f32(shift), acc = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t e = exp_neon(vsubq_f32(vld1q_f32(x + i), sv));
        if (y) vst1q_f32(y + i, e);
        acc = vaddq_f32(acc, e);
    }
    float s = vaddvq_f32(acc);
    if (i < n) {
        float xin[4], eo[4];
        for (int j = 0; j < 4; j++) xin[j] = i + j < n ? x[i + j] - shift : -INFINITY;
        vst1q_f32(eo, exp_neon(vld1q_f32(xin)));
        for (int j = 0; i + j < n; j++) {
            if (y) y[i + j] = eo[j];
            s += eo[j];
        }
    }
    return s;
}

/* As the AVX-512 table's: -g clamped to 88 (exp_neon has no overflow path); the tail through a copy, so
 * every element takes the same arithmetic. */
static inline float32x4_t silu_mul4(float32x4_t x, float32x4_t y) {
    float32x4_t e = exp_neon(vminq_f32(vnegq_f32(x), vdupq_n_f32(88.0f)));
    return vmulq_f32(vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e)), y);
}

static void neon_silu_mul(float *g, const float *u, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(g + i, silu_mul4(vld1q_f32(g + i), vld1q_f32(u + i)));
    if (i < n) {
        float x[4] = {0}, y[4] = {0};
        memcpy(x, g + i, (size_t)(n - i) * sizeof(float));
        memcpy(y, u + i, (size_t)(n - i) * sizeof(float));
        vst1q_f32(x, silu_mul4(vld1q_f32(x), vld1q_f32(y)));
        memcpy(g + i, x, (size_t)(n - i) * sizeof(float));
    }
}

/* acc[0..3] += (x0, x1, x2, x3) * a: sixteen lanes, the attention kernels' inner step */
static inline void fma16(float32x4_t acc[4], float32x4_t x0, float32x4_t x1, float32x4_t x2, float32x4_t x3, float a) {
    acc[0] = vfmaq_n_f32(acc[0], x0, a);
    acc[1] = vfmaq_n_f32(acc[1], x1, a);
    acc[2] = vfmaq_n_f32(acc[2], x2, a);
    acc[3] = vfmaq_n_f32(acc[3], x3, a);
}

/* Keys and values in the context's KV type, F32 or F16 (kn_ops.attn_qk16): element i at p, one of them,
 * and 4 from i on, as floats (F16 converted exactly, so the arithmetic after the load is the F32 path's). */
INLINE const void *kv_at(const void *p, size_t i, int f16) { return (const char *)p + i * (f16 ? 2 : 4); }
INLINE float kv_get(const void *p, size_t i, int f16) {
    return f16 ? fp16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
INLINE float32x4_t kv_load4(const void *p, size_t i, int f16) {
    if (f16) return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)p + i)));
    return vld1q_f32((const float *)p + i);
}

/* Up to 2 heads x 16 columns in 8 accumulators; each value row is read once per such tile. */
INLINE void v_all(const float *w, size_t w_stride, int nh, const void *v0, int64_t n0, const void *v, size_t v_stride,
                  int64_t npos, int64_t d, float *out, size_t out_stride, int f16) {
    int64_t dv = d / 16 * 16;
    for (int h0 = 0; h0 < nh; h0 += 2) {
        int hn = nh - h0 < 2 ? nh - h0 : 2;
        for (int64_t j0 = 0; j0 < dv; j0 += 16) {
            float32x4_t acc[2][4];
            for (int h = 0; h < 2; h++)
                for (int c = 0; c < 4; c++) acc[h][c] = vdupq_n_f32(0);
            for (int64_t p = 0; p < npos; p++) {
                const void *vr = kv_at(p < n0 ? v0 : v, (size_t)p * v_stride + (size_t)j0, f16);
                float32x4_t x0 = kv_load4(vr, 0, f16), x1 = kv_load4(vr, 4, f16), x2 = kv_load4(vr, 8, f16),
                            x3 = kv_load4(vr, 12, f16);
                for (int h = 0; h < hn; h++) fma16(acc[h], x0, x1, x2, x3, w[(size_t)(h0 + h) * w_stride + (size_t)p]);
            }
            for (int h = 0; h < hn; h++) {
                float *o = out + (size_t)(h0 + h) * out_stride + (size_t)j0;
                for (int c = 0; c < 4; c++) vst1q_f32(o + 4 * c, acc[h][c]);
            }
        }
        for (int h = 0; h < hn && dv < d; h++) { /* columns past the last 16: plain loops */
            float *o = out + (size_t)(h0 + h) * out_stride;
            for (int64_t j = dv; j < d; j++) o[j] = 0;
            for (int64_t p = 0; p < npos; p++) {
                float a = w[(size_t)(h0 + h) * w_stride + (size_t)p];
                const void *vr = kv_at(p < n0 ? v0 : v, (size_t)p * v_stride, f16);
                for (int64_t j = dv; j < d; j++) o[j] += a * kv_get(vr, (size_t)j, f16);
            }
        }
    }
}

static void neon_attn_v(const float *w, size_t w_stride, int nh, const float *v0, int64_t n0, const float *v,
                        size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride) {
    v_all(w, w_stride, nh, v0, n0, v, v_stride, npos, d, out, out_stride, 0);
}

static void neon_attn_v16(const float *w, size_t w_stride, int nh, const uint16_t *v0, int64_t n0, const uint16_t *v,
                          size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride) {
    v_all(w, w_stride, nh, v0, n0, v, v_stride, npos, d, out, out_stride, 1);
}

/* One block of 16 positions (four vectors) for up to two heads at a time, the key block read once per pair;
 * a partial last block is computed whole from a zero-padded copy. Then scaled, with the maxima. */
INLINE void qk_all(const float *q, size_t q_stride, int nh, const void *kt, size_t kt_stride, int64_t npos, int64_t d,
                   float scale, float *s, size_t s_stride, float *mx, int f16) {
    for (int64_t p0 = 0; p0 < npos; p0 += 16) {
        const void *kb = kv_at(kt, (size_t)(p0 / 16) * kt_stride, f16);
        int np = npos - p0 < 16 ? (int)(npos - p0) : 16;
        for (int h0 = 0; h0 < nh; h0 += 2) {
            int hn = nh - h0 < 2 ? nh - h0 : 2;
            float32x4_t acc[2][4];
            for (int h = 0; h < 2; h++)
                for (int c = 0; c < 4; c++) acc[h][c] = vdupq_n_f32(0);
            for (int64_t j = 0; j < d; j++) {
                float t[16] = {0};
                const void *kr = kv_at(kb, (size_t)j * 16, f16);
                int kf = f16;
                if (np < 16) {
                    for (int e = 0; e < np; e++) t[e] = kv_get(kr, (size_t)e, f16);
                    kr = t, kf = 0;
                }
                float32x4_t k0 = kv_load4(kr, 0, kf), k1 = kv_load4(kr, 4, kf), k2 = kv_load4(kr, 8, kf),
                            k3 = kv_load4(kr, 12, kf);
                for (int h = 0; h < hn; h++) fma16(acc[h], k0, k1, k2, k3, q[(size_t)(h0 + h) * q_stride + (size_t)j]);
            }
            for (int h = 0; h < hn; h++) {
                float t[16];
                for (int c = 0; c < 4; c++) vst1q_f32(t + 4 * c, acc[h][c]);
                memcpy(s + (size_t)(h0 + h) * s_stride + (size_t)p0, t, (size_t)np * sizeof(float));
            }
        }
    }
    kn_scale_max(s, s_stride, nh, npos, scale, mx);
}

static void neon_attn_qk(const float *q, size_t q_stride, int nh, const float *kt, size_t kt_stride, int64_t npos,
                         int64_t d, float scale, float *s, size_t s_stride, float *mx) {
    qk_all(q, q_stride, nh, kt, kt_stride, npos, d, scale, s, s_stride, mx, 0);
}

static void neon_attn_qk16(const float *q, size_t q_stride, int nh, const uint16_t *kt, size_t kt_stride, int64_t npos,
                           int64_t d, float scale, float *s, size_t s_stride, float *mx) {
    qk_all(q, q_stride, nh, kt, kt_stride, npos, d, scale, s, s_stride, mx, 1);
}

/* fcvtn rounds by FPCR, nearest even unless a caller changed it: f32_to_fp16's bits for finite values */
static void neon_to_f16(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    for (; i < n; i++) y[i] = f32_to_fp16(x[i]);
}

#ifdef KN_NEON_DOT
#define NEON_TABLE kn_neondot_ops
#define NEON_NAME "neondot"
#else
#define NEON_TABLE kn_neon_ops
#define NEON_NAME "neon"
#endif
const kn_ops NEON_TABLE = {NEON_NAME,    neon_quantize_act, neon_matmul,   neon_dot_f32,  neon_axpy_f32, neon_matmul_mlx,
                           neon_exp_sum, neon_attn_v,       neon_attn_qk,  neon_silu_mul, 0,
                           neon_attn_v16, neon_attn_qk16,   neon_to_f16};
