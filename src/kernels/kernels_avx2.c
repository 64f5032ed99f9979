/* kernels_avx2.c — the kernel table for x86 CPUs with AVX2, FMA and F16C (Haswell, Zen 1-3 and later).
 * Compiled with -mavx2 -mfma -mf16c; kernels.c only hands this table out after cpuid/xgetbv say the CPU
 * and OS support them. Must match kernels_ref.c (tests/test_kernels.c). */
#include <math.h>
#include <immintrin.h>
#include <string.h>

#include "common.h"
#include "kernels.h"
#include "qtypes.h"

#define INLINE static inline __attribute__((always_inline))

/* Activation rows per register tile (16 YMM registers: 4 float and 4 integer accumulators plus the
 * decoded weights). Larger batches take several tiles over a chunk of rows that stays in L2. */
#define TB 4
/* Blocks per K chunk: per tile, the q8_0 / q8_s activation scales as floats (8 KB of stack), and for
 * Q4_1 / Q5_1 each scale times its block's sum (8 KB more). */
#define NBC 512
#define ROW_CHUNK_BYTES (256 * 1024)
/* Bytes ahead of the current position at which weights are prefetched (see kernels_avx512.c). */
#define PREFETCH 4096

static int64_t row_chunk(size_t w_row_bytes, int B, int64_t rows, int rb) {
    if (B <= TB) return rows;
    int64_t n = (int64_t)(ROW_CHUNK_BYTES / (w_row_bytes ? w_row_bytes : 1)) / rb * rb;
    return n < rb ? rb : n;
}

INLINE float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INLINE int hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

INLINE __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

/* ---------------------------------------------------------------- activation quantization */

/* 8 floats -> 8 int32 with the same rounding as the reference (cvtps2dq: nearest even). The clamp only
 * matters for NaN input, which converts to INT_MIN: the matmuls rely on activations never holding -128. */
INLINE __m256i q8_round(const float *v, __m256 s) {
    return _mm256_max_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(v), s)), _mm256_set1_epi32(-127));
}

/* 32 floats -> 32 int8, and optionally the sums of each 16. */
INLINE __m256i q8x32(const float *v, __m256 s, __m256i *sum16) {
    __m256i q0 = q8_round(v, s), q1 = q8_round(v + 8, s), q2 = q8_round(v + 16, s), q3 = q8_round(v + 24, s);
    if (sum16) sum16[0] = _mm256_add_epi32(q0, q1), sum16[1] = _mm256_add_epi32(q2, q3);
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* The largest |v[j]| of n floats (n a multiple of 8). */
INLINE float amax8(const float *v, int n) {
    __m256 m = abs_ps(_mm256_loadu_ps(v));
    for (int j = 8; j < n; j += 8) m = _mm256_max_ps(m, abs_ps(_mm256_loadu_ps(v + j)));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    return _mm_cvtss_f32(m4);
}

/* One q8_0 block: 32 floats to int8 at qs; returns the fp16 scale and, if sum is not NULL, the sum of
 * the quants (block_q8_s). */
INLINE qt_half q8_0_block(const float *v, int8_t *qs, int *sum) {
    float d = amax8(v, QK8_0) / 127, id = d ? 1 / d : 0;
    __m256i s16[2];
    _mm256_storeu_si256((__m256i *)qs, q8x32(v, _mm256_set1_ps(id), sum ? s16 : NULL));
    if (sum) *sum = hsum_epi32(_mm256_add_epi32(s16[0], s16[1]));
    return f32_to_fp16(d);
}

/* q8_0_block out of line, for kn_q8_act_row (one call per 32 activations) */
static qt_half q8_0_block_fn(const float *x, int8_t *qs, int *sum) { return q8_0_block(x, qs, sum); }

static void avx2_quantize_act(uint32_t wtype, const float *x, void *xq, int64_t K) {
    if (kn_q8_act_row(wtype, x, xq, K, q8_0_block_fn)) return;
    switch (wtype) {
    case QT_Q2_K:
    case QT_Q3_K:
    case QT_Q4_K:
    case QT_Q5_K:
    case QT_Q6_K:
        for (int64_t i = 0; i < K / QK_K; i++) {
            block_q8_K *b = (block_q8_K *)xq + i;
            const float *v = x + QK_K * i;
            float d = amax8(v, QK_K) / 127, id = d ? 1 / d : 0;
            b->d = d;
            __m256 s = _mm256_set1_ps(id);
            for (int j = 0; j < QK_K; j += 32) {
                __m256i sums[2];
                _mm256_storeu_si256((__m256i *)(b->qs + j), q8x32(v + j, s, sums));
                b->bsums[j / 16] = (int16_t)hsum_epi32(sums[0]);
                b->bsums[j / 16 + 1] = (int16_t)hsum_epi32(sums[1]);
            }
        }
        return;
    default: kn_ref_ops.quantize_act(wtype, x, xq, K); return;
    }
}

/* ---------------------------------------------------------------- F32 / F16 / BF16 weights */

#define FR 2
#define FB 4

INLINE __m256 load_w(uint32_t wt, const uint8_t *row, int64_t k) {
    if (wt == QT_F32) return _mm256_loadu_ps((const float *)row + k);
    __m128i h = _mm_loadu_si128((const __m128i *)(row + 2 * k));
    if (wt == QT_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

INLINE void f_tile(uint32_t wt, int nb, const uint8_t *const *w, const float *const *x, int64_t K,
                   float out[FB][FR]) {
    __m256 acc[FB][FR];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
#pragma GCC unroll 2
        for (int r = 0; r < FR; r++) acc[b][r] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 wv[FR];
#pragma GCC unroll 2
        for (int r = 0; r < FR; r++) {
            _mm_prefetch((const char *)w[r] + PREFETCH + k * (wt == QT_F32 ? 4 : 2), _MM_HINT_T0);
            wv[r] = load_w(wt, w[r], k);
        }
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            __m256 xv = _mm256_loadu_ps(x[b] + k);
#pragma GCC unroll 2
            for (int r = 0; r < FR; r++) acc[b][r] = _mm256_fmadd_ps(wv[r], xv, acc[b][r]);
        }
    }
    if (k < K) { /* tail: zero-padded copies, so no load crosses the end of a row */
        int n = (int)(K - k), es = wt == QT_F32 ? 4 : 2;
        uint8_t wt_buf[FR][32] = {{0}};
        float xt[8] = {0};
        __m256 wv[FR];
#pragma GCC unroll 2
        for (int r = 0; r < FR; r++) memcpy(wt_buf[r], w[r] + es * k, (size_t)(es * n)), wv[r] = load_w(wt, wt_buf[r], 0);
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            memcpy(xt, x[b] + k, (size_t)n * 4);
            __m256 xv = _mm256_loadu_ps(xt);
#pragma GCC unroll 2
            for (int r = 0; r < FR; r++) acc[b][r] = _mm256_fmadd_ps(wv[r], xv, acc[b][r]);
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
#pragma GCC unroll 2
        for (int r = 0; r < FR; r++) out[b][r] = hsum_ps(acc[b][r]);
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

/* ---------------------------------------------------------------- 32-element blocks x q8_0 / q8_s */

/* Q4_1 / Q5_1: unsigned q plus a float minimum, paired with q8_s activations (whose sums carry it). */
INLINE int with_min(uint32_t wt) { return wt == QT_Q4_1 || wt == QT_Q5_1; }

INLINE size_t blk32_bytes(uint32_t wt) {
    switch (wt) {
    case QT_Q8_0: return sizeof(block_q8_0);
    case QT_Q4_1: return sizeof(block_q4_1);
    case QT_Q5_0: return sizeof(block_q5_0);
    case QT_Q5_1: return sizeof(block_q5_1);
    default: return sizeof(block_q4_0); /* Q4_0, IQ4_NL */
    }
}

/* The 32 nibbles of 16 packed bytes in element order (qt_block_ints): low nibbles, then high ones. */
INLINE __m256i nibbles32(const uint8_t *qs) {
    __m128i q = _mm_loadu_si128((const __m128i *)qs);
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
    return _mm256_and_si256(v, _mm256_set1_epi8(15));
}

/* Byte j is 0xff where bit j of the little-endian 32-bit word at p is set, else 0: byte j / 8 of the word
 * is spread to bytes 8 (j / 8) .. +7, and or-ing in all bits but j % 8 leaves 0xff exactly where it is set. */
INLINE __m256i bit_bytes32(const uint8_t *p) {
    uint32_t x;
    memcpy(&x, p, 4);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                                                  0x0101010101010101, 0));
    v = _mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(v, _mm256_set1_epi8(-1));
}

/* A block's 32 q as bytes in element order, its scale d and (Q4_1 / Q5_1) its minimum m. Signed q for
 * Q8_0, Q4_0, Q5_0 and IQ4_NL (never -128); unsigned for Q4_1 and Q5_1. */
INLINE __m256i blk32_decode(uint32_t wt, const uint8_t *blk, float *d, float *m) {
    switch (wt) {
    case QT_Q8_0: {
        const block_q8_0 *p = (const block_q8_0 *)blk;
        *d = _cvtsh_ss(p->d);
        return _mm256_loadu_si256((const __m256i *)p->qs);
    }
    case QT_Q4_1: {
        const block_q4_1 *p = (const block_q4_1 *)blk;
        *d = _cvtsh_ss(p->d), *m = _cvtsh_ss(p->m);
        return nibbles32(p->qs);
    }
    case QT_Q5_0: { /* q - 16 is the nibble where bit 4 is set, else the nibble with 0xf0 or-ed in */
        const block_q5_0 *p = (const block_q5_0 *)blk;
        *d = _cvtsh_ss(p->d);
        return _mm256_or_si256(nibbles32(p->qs), _mm256_andnot_si256(bit_bytes32(p->qh), _mm256_set1_epi8((char)0xf0)));
    }
    case QT_Q5_1: {
        const block_q5_1 *p = (const block_q5_1 *)blk;
        *d = _cvtsh_ss(p->d), *m = _cvtsh_ss(p->m);
        return _mm256_or_si256(nibbles32(p->qs), _mm256_and_si256(bit_bytes32(p->qh), _mm256_set1_epi8(0x10)));
    }
    case QT_IQ4_NL: { /* the sixteen levels are one pshufb table */
        const block_iq4_nl *p = (const block_iq4_nl *)blk;
        *d = _cvtsh_ss(p->d);
        return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kIQ4NL)), nibbles32(p->qs));
    }
    default: { /* Q4_0 */
        const block_q4_0 *p = (const block_q4_0 *)blk;
        *d = _cvtsh_ss(p->d);
        return _mm256_sub_epi8(nibbles32(p->qs), _mm256_set1_epi8(8));
    }
    }
}

/* maddubs multiplies unsigned by signed bytes and saturates 16-bit pair sums. Signed weights go in as |w|
 * with w's sign moved onto the activations; the sums stay within 2 * 128 * 127, exact, because
 * activations never hold -128. Q4_1 / Q5_1's q go in as they are, and their minimum adds m * (da * sum(a))
 * per block in a scalar chain (ds holds da * sum(a)). */
INLINE void blk32_tile(uint32_t wt, int nb, const uint8_t *w, const uint8_t *const *a, const float *da,
                       const float *ds, int64_t nk, float *res) {
    const __m256i ones = _mm256_set1_epi16(1);
    const size_t bsz = blk32_bytes(wt), asz = with_min(wt) ? sizeof(block_q8_s) : sizeof(block_q8_0);
    const size_t qoff = with_min(wt) ? offsetof(block_q8_s, qs) : offsetof(block_q8_0, qs);
    __m256 acc[TB];
    float macc[TB];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) acc[b] = _mm256_setzero_ps(), macc[b] = 0;
    for (int64_t i = 0; i < nk; i++) {
        _mm_prefetch((const char *)w + PREFETCH + i * bsz, _MM_HINT_T0);
        float dw, mw = 0;
        __m256i wv = blk32_decode(wt, w + i * bsz, &dw, &mw);
        __m256i wu = with_min(wt) ? wv : _mm256_sign_epi8(wv, wv);
        __m256 dwv = _mm256_set1_ps(dw);
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            __m256i av = _mm256_loadu_si256((const __m256i *)(a[b] + i * asz + qoff));
            if (!with_min(wt)) av = _mm256_sign_epi8(av, wv);
            __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wu, av), ones);
            __m256 s = _mm256_mul_ps(dwv, _mm256_broadcast_ss(&da[b * NBC + i]));
            acc[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), s, acc[b]);
            if (with_min(wt)) macc[b] += mw * ds[b * NBC + i];
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) res[b] = with_min(wt) ? hsum_ps(acc[b]) + macc[b] : hsum_ps(acc[b]);
}

INLINE void mm_blk32(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb, int B, int64_t K,
                     int64_t r0, int64_t r1, float *y, size_t ldy) {
    const size_t bsz = blk32_bytes(wt), asz = with_min(wt) ? sizeof(block_q8_s) : sizeof(block_q8_0);
    const int64_t nb_k = K / 32;
    float da[TB * NBC], ds[TB * NBC];
    int64_t rc = row_chunk(wrb, B, r1 - r0, 1);
    for (int64_t c0 = r0; c0 < r1; c0 += rc) {
        int64_t c1 = LAYA_MIN(r1, c0 + rc);
        for (int b0 = 0; b0 < B; b0 += TB) {
            int nb = LAYA_MIN(TB, B - b0);
            for (int64_t k0 = 0; k0 < nb_k; k0 += NBC) {
                int64_t nk = LAYA_MIN(NBC, nb_k - k0);
                const uint8_t *a[TB];
                for (int t = 0; t < nb; t++) {
                    a[t] = act + (size_t)(b0 + t) * arb + (size_t)k0 * asz;
                    for (int64_t i = 0; i < nk; i++) {
                        if (with_min(wt)) {
                            const block_q8_s *q = (const block_q8_s *)a[t] + i;
                            da[t * NBC + i] = _cvtsh_ss(q->d);
                            ds[t * NBC + i] = da[t * NBC + i] * (float)q->sum;
                        } else {
                            da[t * NBC + i] = _cvtsh_ss(((const block_q8_0 *)a[t] + i)->d);
                        }
                    }
                }
                for (int64_t r = c0; r < c1; r++) {
                    const uint8_t *w = W + (size_t)r * wrb + (size_t)k0 * bsz;
                    float res[TB];
                    switch (nb) {
                    case 1: blk32_tile(wt, 1, w, a, da, ds, nk, res); break;
                    case 2: blk32_tile(wt, 2, w, a, da, ds, nk, res); break;
                    case 3: blk32_tile(wt, 3, w, a, da, ds, nk, res); break;
                    default: blk32_tile(wt, 4, w, a, da, ds, nk, res); break;
                    }
                    for (int t = 0; t < nb; t++) {
                        float *yp = y + (size_t)(b0 + t) * ldy + (size_t)r;
                        *yp = k0 > 0 ? *yp + res[t] : res[t];
                    }
                }
            }
        }
    }
}

/* ---------------------------------------------------------------- K-quant weights x q8_K */

/* How the tile sees the K types (element orders and scale packings: qt_block_ints in quant.c). Q4_K and
 * Q5_K: 32-element sub-blocks with 6-bit scales and mins. Q2_K, Q3_K and Q6_K: 16-element sub-blocks with
 * one integer scale each, and either a min (Q2_K) or an offset taken off every q (Q3_K 4, Q6_K 32). The
 * weights always enter maddubs unsigned (Q3_K as q + 4, Q6_K as q + 32); minimums and offsets come off
 * afterwards through the activations' 16-element sums. */
INLINE size_t k_bytes(uint32_t wt) {
    switch (wt) {
    case QT_Q2_K: return sizeof(block_q2_K);
    case QT_Q3_K: return sizeof(block_q3_K);
    case QT_Q4_K: return sizeof(block_q4_K);
    case QT_Q5_K: return sizeof(block_q5_K);
    default: return sizeof(block_q6_K);
    }
}
INLINE int k_with_min(uint32_t wt) { return wt == QT_Q2_K || wt == QT_Q4_K || wt == QT_Q5_K; }

/* Q4_K / Q5_K's eight 6-bit scales (bytes 0-7) and mins (8-15). */
INLINE __m128i q4k_scales(const uint8_t *s) {
    uint32_t w0, w1, w2;
    memcpy(&w0, s, 4), memcpy(&w1, s + 4, 4), memcpy(&w2, s + 8, 4);
    uint32_t s_lo = w0 & 0x3f3f3f3f, m_lo = w1 & 0x3f3f3f3f;
    uint32_t s_hi = (w2 & 0x0f0f0f0f) | ((w0 >> 2) & 0x30303030);
    uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0f) | ((w1 >> 2) & 0x30303030);
    return _mm_setr_epi32((int)s_lo, (int)s_hi, (int)m_lo, (int)m_hi);
}

/* Q3_K's sixteen scales as signed bytes: the low nibbles of bytes 0-7 (scales 0-7) and their high
 * nibbles (8-15), bits 2 (s / 4) and up of byte 8 + s % 4 on top (a variable shift per four), minus 32. */
INLINE __m128i q3k_scales(const uint8_t *s) {
    uint32_t w2;
    memcpy(&w2, s + 8, 4);
    __m128i lo = _mm_loadl_epi64((const __m128i *)s);
    lo = _mm_and_si128(_mm_unpacklo_epi64(lo, _mm_srli_epi16(lo, 4)), _mm_set1_epi8(15));
    __m128i hi = _mm_srlv_epi32(_mm_set1_epi32((int)w2), _mm_setr_epi32(0, 2, 4, 6));
    hi = _mm_slli_epi16(_mm_and_si128(hi, _mm_set1_epi8(3)), 4);
    return _mm_sub_epi8(_mm_or_si128(lo, hi), _mm_set1_epi8(32));
}

/* pshufb controls: j spreads bytes 2j and 2j + 1 over the low and high eight, so that cvtepi8_epi16 gives
 * the int16 scales of 32 elements (sub-blocks 2j and 2j + 1) in maddubs's lanes. */
static const uint8_t g_sub_ctl[8][16] __attribute__((aligned(16))) = {
#define C(j) {2 * j, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1}
    C(0), C(1), C(2), C(3), C(4), C(5), C(6), C(7),
#undef C
};

INLINE __m256i sub_scales(__m128i sc8, int j) {
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc8, _mm_load_si128((const __m128i *)g_sub_ctl[j])));
}

/* The weights of a super-block are decoded 64 elements at a time (two YMM, chunk c = elements 64c ..
 * 64c + 63) and used for every activation row before the next 64, keeping the register count within 16.
 * Per chunk: Q4_K / Q5_K take 32 bytes of nibbles; Q2_K / Q3_K and Q6_K one half's 2-bit or 4-bit fields,
 * two shifts at a time; Q5_K's fifth and Q3_K's third bit come from bits 2c, 2c + 1 of the 32 bytes of qh
 * or hmask, which are shifted down by 2 after every chunk. The scales are one vector of sixteen bytes per
 * super-block (Q4_K / Q5_K: each of their eight twice). */
INLINE void k_tile(uint32_t wt, int nb, const uint8_t *w, const block_q8_K *const *a, int64_t nsb, float *res) {
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30), m3 = _mm256_set1_epi8(3);
    const __m256i hbit = _mm256_set1_epi8(wt == QT_Q5_K ? 0x10 : 4);
    const int hpos = wt == QT_Q5_K ? 4 : 2; /* where the high bit goes */
    __m256 acc[TB];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) acc[b] = _mm256_setzero_ps();
    const size_t bsz = k_bytes(wt);
    for (int64_t i = 0; i < nsb; i++) {
#pragma GCC unroll 4
        for (size_t o = 0; o < bsz; o += 64) _mm_prefetch((const char *)w + PREFETCH + i * bsz + o, _MM_HINT_T0);
        __m256i isum[TB];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) isum[b] = _mm256_setzero_si256();
        const uint8_t *blk = w + i * bsz;
        const block_q2_K *p2 = (const block_q2_K *)blk;
        const block_q3_K *p3 = (const block_q3_K *)blk;
        const block_q4_K *p4 = (const block_q4_K *)blk;
        const block_q5_K *p5 = (const block_q5_K *)blk;
        const block_q6_K *p6 = (const block_q6_K *)blk;
        __m128i sc8, mn8 = _mm_setzero_si128(); /* scales per 16 elements; the mins (Q2_K: per 16, else 32) */
        __m256i H = _mm256_setzero_si256(), Q = _mm256_setzero_si256();
        switch (wt) {
        case QT_Q2_K: {
            __m128i v = _mm_loadu_si128((const __m128i *)p2->scales);
            sc8 = _mm_and_si128(v, _mm_set1_epi8(15));
            mn8 = _mm_and_si128(_mm_srli_epi16(v, 4), _mm_set1_epi8(15));
            break;
        }
        case QT_Q3_K:
            sc8 = q3k_scales(p3->scales);
            H = _mm256_loadu_si256((const __m256i *)p3->hmask);
            break;
        case QT_Q4_K:
        case QT_Q5_K:
            mn8 = q4k_scales(wt == QT_Q4_K ? p4->scales : p5->scales);
            sc8 = _mm_unpacklo_epi8(mn8, mn8);
            if (wt == QT_Q5_K) H = _mm256_loadu_si256((const __m256i *)p5->qh);
            break;
        default: sc8 = _mm_loadu_si128((const __m128i *)p6->scales); break;
        }
        for (int c = 0; c < 4; c++) {
            __m256i w0, w1;
            if (wt == QT_Q4_K || wt == QT_Q5_K) {
                __m256i v = _mm256_loadu_si256((const __m256i *)((wt == QT_Q4_K ? p4->qs : p5->qs) + 32 * c));
                w0 = _mm256_and_si256(v, m4);
                w1 = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            } else if (wt == QT_Q6_K) {
                /* chunk c = half h, quarters k = 2(c & 1) and +1 */
                int h = c / 2, hi = c & 1;
                __m256i L0 = _mm256_loadu_si256((const __m256i *)(p6->ql + 64 * h));
                __m256i L1 = _mm256_loadu_si256((const __m256i *)(p6->ql + 64 * h + 32));
                __m256i H6 = _mm256_loadu_si256((const __m256i *)(p6->qh + 32 * h));
                if (!hi) {
                    w0 = _mm256_or_si256(_mm256_and_si256(L0, m4), _mm256_and_si256(_mm256_slli_epi16(H6, 4), m30));
                    w1 = _mm256_or_si256(_mm256_and_si256(L1, m4), _mm256_and_si256(_mm256_slli_epi16(H6, 2), m30));
                } else {
                    w0 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(L0, 4), m4), _mm256_and_si256(H6, m30));
                    w1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(L1, 4), m4),
                                         _mm256_and_si256(_mm256_srli_epi16(H6, 2), m30));
                }
            } else { /* Q2_K, Q3_K: bits 4(c & 1) .. +3 of the half's 32 bytes, two at a time */
                Q = c & 1 ? _mm256_srli_epi16(Q, 4) : _mm256_loadu_si256((const __m256i *)((wt == QT_Q2_K ? p2->qs : p3->qs) + 16 * c));
                w0 = _mm256_and_si256(Q, m3);
                w1 = _mm256_and_si256(_mm256_srli_epi16(Q, 2), m3);
            }
            if (wt == QT_Q3_K || wt == QT_Q5_K) { /* bits 2c and 2c + 1 of each byte, now bits 0 and 1 */
                w0 = _mm256_or_si256(w0, _mm256_and_si256(_mm256_slli_epi16(H, hpos), hbit));
                w1 = _mm256_or_si256(w1, _mm256_and_si256(_mm256_slli_epi16(H, hpos - 1), hbit));
                H = _mm256_srli_epi16(H, 2);
            }
            __m256i s0 = sub_scales(sc8, 2 * c), s1 = sub_scales(sc8, 2 * c + 1);
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++) {
                const int8_t *q = a[b][i].qs + 64 * c;
                __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(w0, _mm256_loadu_si256((const __m256i *)q)), s0);
                __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(w1, _mm256_loadu_si256((const __m256i *)(q + 32))), s1);
                isum[b] = _mm256_add_epi32(isum[b], _mm256_add_epi32(p0, p1));
            }
        }
        /* per 16-element sub-block: the min (multiplied by dmin) or the scale (by the offset) */
        float d, dmin = 0;
        __m256i m16;
        switch (wt) {
        case QT_Q2_K: d = _cvtsh_ss(p2->d), dmin = _cvtsh_ss(p2->dmin), m16 = _mm256_cvtepu8_epi16(mn8); break;
        case QT_Q3_K: d = _cvtsh_ss(p3->d), m16 = _mm256_cvtepi8_epi16(sc8); break;
        case QT_Q4_K:
        case QT_Q5_K:
            d = _cvtsh_ss(wt == QT_Q4_K ? p4->d : p5->d), dmin = _cvtsh_ss(wt == QT_Q4_K ? p4->dmin : p5->dmin);
            m16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(mn8, mn8));
            break;
        default: d = _cvtsh_ss(p6->d), m16 = _mm256_cvtepi8_epi16(sc8); break;
        }
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            const block_q8_K *ab = a[b] + i;
            __m256i bs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)ab->bsums), m16);
            if (k_with_min(wt)) {
                acc[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[b]), _mm256_set1_ps(d * ab->d), acc[b]);
                acc[b] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(bs), _mm256_set1_ps(dmin * ab->d), acc[b]);
            } else {
                __m256i t = _mm256_sub_epi32(isum[b], _mm256_slli_epi32(bs, wt == QT_Q3_K ? 2 : 5));
                acc[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(d * ab->d), acc[b]);
            }
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) res[b] = hsum_ps(acc[b]);
}

INLINE void mm_k(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb, int B, int64_t K,
                 int64_t r0, int64_t r1, float *y, size_t ldy) {
    const int64_t nsb = K / QK_K;
    int64_t rc = row_chunk(wrb, B, r1 - r0, 1);
    for (int64_t c0 = r0; c0 < r1; c0 += rc) {
        int64_t c1 = LAYA_MIN(r1, c0 + rc);
        for (int b0 = 0; b0 < B; b0 += TB) {
            int nb = LAYA_MIN(TB, B - b0);
            const block_q8_K *a[TB];
            for (int t = 0; t < nb; t++) a[t] = (const block_q8_K *)(act + (size_t)(b0 + t) * arb);
            for (int64_t r = c0; r < c1; r++) {
                const uint8_t *w = W + (size_t)r * wrb;
                float res[TB];
                switch (nb) {
                case 1: k_tile(wt, 1, w, a, nsb, res); break;
                case 2: k_tile(wt, 2, w, a, nsb, res); break;
                case 3: k_tile(wt, 3, w, a, nsb, res); break;
                default: k_tile(wt, 4, w, a, nsb, res); break;
                }
                for (int t = 0; t < nb; t++) y[(size_t)(b0 + t) * ldy + (size_t)r] = res[t];
            }
        }
    }
}

/* ---------------------------------------------------------------- MLX affine weights x F32 */

/* Groups per K chunk: per tile, the sums of x per group and activation row go into a stack array
 * (TB * NGC floats) and are reused by every weight row; per row, the scales as floats (NGC). */
#define NGC 256

/* Scales or biases i .. i+7 as floats. */
static inline __m256 sb_load8(uint32_t t, const void *p, int64_t i) {
    if (t == QT_F32) return _mm256_loadu_ps((const float *)p + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    if (t == QT_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline float sb_get(uint32_t t, const void *p, int64_t i) {
    if (t == QT_F32) {
        float f;
        memcpy(&f, (const uint8_t *)p + 4 * i, 4); /* tensors in safetensors files need not be aligned */
        return f;
    }
    uint16_t h;
    memcpy(&h, (const uint8_t *)p + 2 * i, 2);
    return t == QT_F16 ? _cvtsh_ss(h) : bf16_to_f32(h);
}

/* 4-bit decoding: 16 bytes (32 weights) are broadcast to both halves of a YMM; for piece p (weights
 * 8p .. 8p+7) a byte shuffle puts byte 4p + j/2 into the low byte of lane j, and a mask keeps the low
 * nibble in even lanes and the high nibble in odd ones. Odd lanes so hold 16 q: instead of shifting
 * them, their sums are scaled by 1/16 at the end (exact, a power of two). That leaves a shuffle, an and
 * and a convert per 8 weights, like the obvious word-broadcast and variable shift (vpsrlvd), but the
 * shuffle runs on the port that the converts and FMAs leave free: measured 1.6x faster at one row. */
static const uint8_t g_nib_ctl[4][32] __attribute__((aligned(32))) = {
#define L(i) i, 128, 128, 128, i, 128, 128, 128, i + 1, 128, 128, 128, i + 1, 128, 128, 128
    {L(0), L(2)}, {L(4), L(6)}, {L(8), L(10)}, {L(12), L(14)},
#undef L
};

/* One weight row against nb activation rows over ng groups. Each 32-weight step is decoded once and
 * multiplied into two partial sums per activation row, which are scaled once per group. Each group's
 * partial sums start afresh, so the out-of-order core overlaps the FMA chains of consecutive groups and
 * two chains per row suffice even for a single row. The bias terms are added by the caller. */
INLINE void mlx_tile(int bits, int nb, int group, const uint32_t *w, const float *sf, const float *const *x,
                     int64_t ng, __m256 *res) {
    const int na = 2;
    const __m256i nib = _mm256_setr_epi32(0x0f, 0xf0, 0x0f, 0xf0, 0x0f, 0xf0, 0x0f, 0xf0);
    __m256 acc[TB];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) acc[b] = _mm256_setzero_ps();
    for (int64_t g = 0; g < ng; g++) {
        const uint32_t *wg = w + g * (group * bits / 32);
        const int64_t kg = g * group;
        _mm_prefetch((const char *)wg + PREFETCH, _MM_HINT_T0);
        if (bits * group > 512) _mm_prefetch((const char *)wg + PREFETCH + 64, _MM_HINT_T0);
        __m256 part[TB][2];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++)
#pragma GCC unroll 2
            for (int u = 0; u < na; u++) part[b][u] = _mm256_setzero_ps();
        for (int c = 0; c < group / 32; c++) {
            __m256 wv[4];
            if (bits == 4) {
                __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(wg + 4 * c)));
#pragma GCC unroll 4
                for (int p = 0; p < 4; p++)
                    wv[p] = _mm256_cvtepi32_ps(
                        _mm256_and_si256(_mm256_shuffle_epi8(v, _mm256_load_si256((const __m256i *)g_nib_ctl[p])), nib));
            } else {
#pragma GCC unroll 4
                for (int p = 0; p < 4; p++)
                    wv[p] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(wg + 8 * c + 2 * p))));
            }
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++)
#pragma GCC unroll 4
                for (int b = 0; b < nb; b++)
                    part[b][p % na] = _mm256_fmadd_ps(wv[p], _mm256_loadu_ps(x[b] + kg + 32 * c + 8 * p), part[b][p % na]);
        }
        __m256 s = _mm256_broadcast_ss(sf + g);
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            __m256 t = part[b][0];
#pragma GCC unroll 2
            for (int u = 1; u < na; u++) t = _mm256_add_ps(t, part[b][u]);
            acc[b] = _mm256_fmadd_ps(t, s, acc[b]);
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) res[b] = acc[b];
}

INLINE void mm_mlx(int bits, int group, uint32_t sbt, const uint32_t *W, const void *scales, const void *biases,
                   const float *x, size_t x_stride, int B, int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    const int64_t words = K * bits / 32, ng_row = K / group;
    const size_t sbs = sbt == QT_F32 ? 4 : 2;
    /* undoes the 16 q of odd lanes in the 4-bit decoding */
    const __m256 lane_scale = bits == 4 ? _mm256_setr_ps(1, 0.0625f, 1, 0.0625f, 1, 0.0625f, 1, 0.0625f) : _mm256_set1_ps(1);
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
                        __m256 v = _mm256_loadu_ps(xs[t] + g * group);
                        for (int k = 8; k < group; k += 8) v = _mm256_add_ps(v, _mm256_loadu_ps(xs[t] + g * group + k));
                        sx[t][g] = hsum_ps(v);
                    }
                }
                for (int64_t r = c0; r < c1; r++) {
                    const uint32_t *w = W + (size_t)r * (size_t)words + (size_t)(g0 * group * bits / 32);
                    size_t si = ((size_t)r * (size_t)ng_row + (size_t)g0) * sbs;
                    const void *sc = (const uint8_t *)scales + si, *bi = (const uint8_t *)biases + si;
                    /* the scales as floats, and the bias terms: sum over groups of bias * sum(x) */
                    __m256 bt[TB];
                    float btail[TB] = {0};
                    for (int t = 0; t < nb; t++) bt[t] = _mm256_setzero_ps();
                    int64_t g = 0;
                    for (; g + 8 <= ng; g += 8) {
                        _mm256_storeu_ps(sf + g, sb_load8(sbt, sc, g));
                        __m256 bv = sb_load8(sbt, bi, g);
                        for (int t = 0; t < nb; t++) bt[t] = _mm256_fmadd_ps(bv, _mm256_loadu_ps(sx[t] + g), bt[t]);
                    }
                    for (; g < ng; g++) {
                        sf[g] = sb_get(sbt, sc, g);
                        float bv = sb_get(sbt, bi, g);
                        for (int t = 0; t < nb; t++) btail[t] += bv * sx[t][g];
                    }
                    __m256 res[TB];
                    switch (nb) {
                    case 1: mlx_tile(bits, 1, group, w, sf, xs, ng, res); break;
                    case 2: mlx_tile(bits, 2, group, w, sf, xs, ng, res); break;
                    case 3: mlx_tile(bits, 3, group, w, sf, xs, ng, res); break;
                    default: mlx_tile(bits, 4, group, w, sf, xs, ng, res); break;
                    }
                    for (int t = 0; t < nb; t++) {
                        float v = hsum_ps(_mm256_fmadd_ps(res[t], lane_scale, bt[t])) + btail[t];
                        float *yp = y + (size_t)(b0 + t) * ldy + (size_t)r;
                        *yp = g0 > 0 ? *yp + v : v;
                    }
                }
            }
        }
    }
}

/* bits and the group size become constants in each instantiation (the inner loops unroll fully); the
 * scale type is only looked at once per 8 groups. */
static void avx2_matmul_mlx(int bits, int group, const uint32_t *W, const void *scales, const void *biases,
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

static void avx2_matmul(uint32_t wtype, const void *W, size_t w_row_bytes, const void *act, size_t act_row_bytes,
                        int B, int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    if (B <= 0 || r1 <= r0) return;
    switch (wtype) {
    case QT_F32: mm_float(QT_F32, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_F16: mm_float(QT_F16, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_BF16: mm_float(QT_BF16, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
#define BLK32(t) mm_blk32(t, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy)
#define KQ(t) mm_k(t, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy)
    case QT_Q8_0: BLK32(QT_Q8_0); return;
    case QT_Q4_0: BLK32(QT_Q4_0); return;
    case QT_Q4_1: BLK32(QT_Q4_1); return;
    case QT_Q5_0: BLK32(QT_Q5_0); return;
    case QT_Q5_1: BLK32(QT_Q5_1); return;
    case QT_IQ4_NL: BLK32(QT_IQ4_NL); return;
    case QT_Q2_K: KQ(QT_Q2_K); return;
    case QT_Q3_K: KQ(QT_Q3_K); return;
    case QT_Q4_K: KQ(QT_Q4_K); return;
    case QT_Q5_K: KQ(QT_Q5_K); return;
    case QT_Q6_K: KQ(QT_Q6_K); return;
#undef BLK32
#undef KQ
    default: kn_ref_ops.matmul(wtype, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    }
}

static float avx2_dot_f32(const float *a, const float *b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static void avx2_axpy_f32(float *y, float a, const float *x, int64_t n) {
    __m256 av = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

/* exp(d) as in kernels_avx512.c: 2^k * (degree-6 Taylor polynomial of r); d below -87 gives 0. */
static inline __m256 exp256(__m256 d) {
    const __m256 lo = _mm256_set1_ps(-87.0f);
    __m256 keep = _mm256_cmp_ps(d, lo, _CMP_GE_OQ);
    d = _mm256_max_ps(d, lo);
    __m256 k = _mm256_round_ps(_mm256_mul_ps(d, _mm256_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693145752f), d);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(1.42860677e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(k), 23);
    return _mm256_and_ps(keep, _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e)));
}

static float avx2_exp_sum(const float *x, float shift, float *y, int64_t n) {
    __m256 sv = _mm256_set1_ps(shift), acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), sv));
        if (y) _mm256_storeu_ps(y + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    float t[8], s = 0;
    _mm256_storeu_ps(t, acc);
    for (int j = 0; j < 8; j++) s += t[j];
    if (i < n) { /* the tail through the same polynomial, so every element is computed the same way */
        float xin[8] = {0}, eo[8];
        for (int j = 0; j < 8; j++) xin[j] = i + j < n ? x[i + j] - shift : -INFINITY;
        _mm256_storeu_ps(eo, exp256(_mm256_loadu_ps(xin)));
        for (int j = 0; i + j < n; j++) {
            if (y) y[i + j] = eo[j];
            s += eo[j];
        }
    }
    return s;
}

/* As the AVX-512 table's: -g clamped to 88 (exp256 has no overflow path); the tail through a copy, so
 * every element takes the same arithmetic. */
static inline __m256 silu_mul8(__m256 x, __m256 y) {
    __m256 e = exp256(_mm256_min_ps(_mm256_sub_ps(_mm256_setzero_ps(), x), _mm256_set1_ps(88.0f)));
    return _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), y);
}

static void avx2_silu_mul(float *g, const float *u, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(g + i, silu_mul8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
    if (i < n) {
        float x[8] = {0}, y[8] = {0};
        memcpy(x, g + i, (size_t)(n - i) * sizeof(float));
        memcpy(y, u + i, (size_t)(n - i) * sizeof(float));
        _mm256_storeu_ps(x, silu_mul8(_mm256_loadu_ps(x), _mm256_loadu_ps(y)));
        memcpy(g + i, x, (size_t)(n - i) * sizeof(float));
    }
}

/* Up to 2 heads x 32 columns in 8 accumulators; each value row is read once per such tile. */
static void avx2_attn_v(const float *w, size_t w_stride, int nh, const float *v0, int64_t n0, const float *v,
                        size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride) {
    int64_t dv = d / 32 * 32;
    for (int h0 = 0; h0 < nh; h0 += 2) {
        int hn = nh - h0 < 2 ? nh - h0 : 2;
        for (int64_t j0 = 0; j0 < dv; j0 += 32) {
            __m256 acc[2][4];
            for (int h = 0; h < 2; h++)
                for (int c = 0; c < 4; c++) acc[h][c] = _mm256_setzero_ps();
            for (int64_t p = 0; p < npos; p++) {
                const float *vr = (p < n0 ? v0 : v) + (size_t)p * v_stride + (size_t)j0;
                __m256 x0 = _mm256_loadu_ps(vr), x1 = _mm256_loadu_ps(vr + 8), x2 = _mm256_loadu_ps(vr + 16),
                       x3 = _mm256_loadu_ps(vr + 24);
                for (int h = 0; h < hn; h++) {
                    __m256 a = _mm256_broadcast_ss(w + (size_t)(h0 + h) * w_stride + (size_t)p);
                    acc[h][0] = _mm256_fmadd_ps(a, x0, acc[h][0]);
                    acc[h][1] = _mm256_fmadd_ps(a, x1, acc[h][1]);
                    acc[h][2] = _mm256_fmadd_ps(a, x2, acc[h][2]);
                    acc[h][3] = _mm256_fmadd_ps(a, x3, acc[h][3]);
                }
            }
            for (int h = 0; h < hn; h++) {
                float *o = out + (size_t)(h0 + h) * out_stride + (size_t)j0;
                for (int c = 0; c < 4; c++) _mm256_storeu_ps(o + 8 * c, acc[h][c]);
            }
        }
        for (int h = 0; h < hn && dv < d; h++) { /* columns past the last 32: plain loops */
            float *o = out + (size_t)(h0 + h) * out_stride;
            for (int64_t j = dv; j < d; j++) o[j] = 0;
            for (int64_t p = 0; p < npos; p++) {
                float a = w[(size_t)(h0 + h) * w_stride + (size_t)p];
                const float *vr = (p < n0 ? v0 : v) + (size_t)p * v_stride;
                for (int64_t j = dv; j < d; j++) o[j] += a * vr[j];
            }
        }
    }
}

/* One block of 16 positions (two vectors) for up to two heads at a time, the key block read once per pair;
 * a partial last block is computed whole from a zero-padded copy. Then scaled, with the maxima. */
static void avx2_attn_qk(const float *q, size_t q_stride, int nh, const float *kt, size_t kt_stride, int64_t npos,
                         int64_t d, float scale, float *s, size_t s_stride, float *mx) {
    for (int64_t p0 = 0; p0 < npos; p0 += 16) {
        const float *kb = kt + (size_t)(p0 / 16) * kt_stride;
        int np = npos - p0 < 16 ? (int)(npos - p0) : 16;
        for (int h0 = 0; h0 < nh; h0 += 2) {
            int hn = nh - h0 < 2 ? nh - h0 : 2;
            __m256 acc[2][2] = {{_mm256_setzero_ps(), _mm256_setzero_ps()}, {_mm256_setzero_ps(), _mm256_setzero_ps()}};
            for (int64_t j = 0; j < d; j++) {
                __m256 k0, k1;
                if (np == 16) {
                    k0 = _mm256_loadu_ps(kb + j * 16), k1 = _mm256_loadu_ps(kb + j * 16 + 8);
                } else {
                    float t[16] = {0};
                    memcpy(t, kb + j * 16, (size_t)np * sizeof(float));
                    k0 = _mm256_loadu_ps(t), k1 = _mm256_loadu_ps(t + 8);
                }
                for (int h = 0; h < hn; h++) {
                    __m256 a = _mm256_broadcast_ss(q + (size_t)(h0 + h) * q_stride + (size_t)j);
                    acc[h][0] = _mm256_fmadd_ps(a, k0, acc[h][0]);
                    acc[h][1] = _mm256_fmadd_ps(a, k1, acc[h][1]);
                }
            }
            for (int h = 0; h < hn; h++) {
                float t[16];
                _mm256_storeu_ps(t, acc[h][0]);
                _mm256_storeu_ps(t + 8, acc[h][1]);
                memcpy(s + (size_t)(h0 + h) * s_stride + (size_t)p0, t, (size_t)np * sizeof(float));
            }
        }
    }
    kn_scale_max(s, s_stride, nh, npos, scale, mx);
}

const kn_ops kn_avx2_ops = {"avx2", avx2_quantize_act, avx2_matmul, avx2_dot_f32, avx2_axpy_f32, avx2_matmul_mlx,
                            avx2_exp_sum, avx2_attn_v,
                            avx2_attn_qk, avx2_silu_mul, 0};
