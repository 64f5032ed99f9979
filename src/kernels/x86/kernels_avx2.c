/* kernels_avx2.c — the kernel table for x86 CPUs with AVX2, FMA and F16C (Haswell, Zen 1-3 and later).
 * Compiled with -mavx2 -mfma -mf16c; kernels.c only hands this table out after cpuid/xgetbv say the CPU
 * and OS support them. Must match kernels_ref.c (tests/test_kernels.c).
 * kernels_avxvnni.c compiles this file a second time with KN_AVXVNNI and -mavxvnni, as the "avxvnni"
 * table for CPUs with AVX-VNNI (the VEX vpdpbusd) but no AVX-512: Intel's client cores since Alder Lake,
 * and Zen 5. Only the packed 32-element kernel differs (vpdpbusd in place of maddubs and its sums). */
#include <float.h>
#include <math.h>
#include <immintrin.h>
#include <string.h>

#include "base/common.h"
#include "kernels/kernels.h"
#include "io/qtypes.h"

#define INLINE static inline __attribute__((always_inline))

/* Activation rows per register tile (16 YMM registers: 4 float and 4 integer accumulators plus the
 * decoded weights). Larger batches take several tiles over a chunk of rows that stays in L2. */
#define TB 4
#define ROW_CHUNK_BYTES (256 * 1024)
/* Bytes ahead of the current position at which weights are prefetched (see kernels_avx512.c). */
#define PREFETCH 4096
/* The packed (P16) panels' quants are also asked into L2 this far ahead, as the AVX-512 table does
 * (P16_PF_L2): the hardware prefetchers alone keep too few lines in flight from DRAM. The row-at-a-time
 * Q8_0 kernel (q8_tile) gained nothing from it, so it has none; 16 KB ahead beat 8 KB and 32 KB. */
#ifndef P2_PF_L2
#define P2_PF_L2 16384
#endif

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
    if (id > FLT_MAX) return kn_q8_block_ref(v, qs, sum);
    __m256i s16[2];
    _mm256_storeu_si256((__m256i *)qs, q8x32(v, _mm256_set1_ps(id), sum ? s16 : NULL));
    if (sum) *sum = hsum_epi32(_mm256_add_epi32(s16[0], s16[1]));
    return f32_to_fp16(d);
}

/* q8_0_block out of line, for kn_q8_act_row (one call per 32 activations) */
static qt_half q8_0_block_fn(const float *x, int8_t *qs, int *sum) { return q8_0_block(x, qs, sum); }

/* Eight vectors reduced lane-wise at once: lane j of the result is the maximum (red8_max) or the integer
 * sum (red8_add) of v[j]'s 8 lanes; exact in any order, so one reduction per vector's result. The last
 * permute undoes the order the rounds leave (vector 2m + l ends in lane 4l + m). */
#define RED8(NAME, OP)                                                                                         \
    INLINE __m256 NAME(__m256 *v) {                                                                           \
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)                                                   \
            v[k] = OP(_mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x20), _mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x31)); \
        _Pragma("GCC unroll 2") for (int k = 0; k < 2; k++)                                                   \
            v[k] = OP(_mm256_shuffle_ps(v[2 * k], v[2 * k + 1], 0x44), _mm256_shuffle_ps(v[2 * k], v[2 * k + 1], 0xee)); \
        __m256 r = OP(_mm256_shuffle_ps(v[0], v[1], 0x88), _mm256_shuffle_ps(v[0], v[1], 0xdd));             \
        return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));                       \
    }
INLINE __m256 max_ps2(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
INLINE __m256 add_epi32_as_ps(__m256 a, __m256 b) {
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(a), _mm256_castps_si256(b)));
}
RED8(red8_max, max_ps2)
RED8(red8_add, add_epi32_as_ps)
#undef RED8

/* kn_q8_group_fn: q8_0_block's arithmetic for 16 blocks, the horizontal steps (amax, sums), divisions
 * and fp16 conversions done for eight blocks at once. Declines a group with a non-finite amax or a scale
 * whose inverse overflows, as the AVX-512 one does. */
static int q8_0_group_fn(const float *x, int8_t *qs, size_t stride, qt_half d16[16], float dq[16], int sum[16]) {
    float idv[16];
    const __m256 inf = _mm256_set1_ps(INFINITY);
    for (int g = 0; g < 2; g++) {
        __m256 m[8];
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            const float *v = x + 32 * (8 * g + j);
            m[j] = _mm256_max_ps(_mm256_max_ps(abs_ps(_mm256_loadu_ps(v)), abs_ps(_mm256_loadu_ps(v + 8))),
                                 _mm256_max_ps(abs_ps(_mm256_loadu_ps(v + 16)), abs_ps(_mm256_loadu_ps(v + 24))));
        }
        __m256 amax = red8_max(m);
        if (_mm256_movemask_ps(_mm256_cmp_ps(amax, inf, _CMP_LT_OQ)) != 0xff) return 0;
        __m256 d = _mm256_div_ps(amax, _mm256_set1_ps(127.0f));
        __m256 id = _mm256_and_ps(_mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_NEQ_OQ), _mm256_div_ps(_mm256_set1_ps(1.0f), d));
        if (_mm256_movemask_ps(_mm256_cmp_ps(id, inf, _CMP_EQ_OQ))) return 0; /* kn_q8_block_ref's case */
        /* f32_to_fp16's rounding for finite input: nearest even */
        __m128i h = _mm256_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(d16 + 8 * g), h);
        _mm256_storeu_ps(dq + 8 * g, _mm256_cvtph_ps(h));
        _mm256_storeu_ps(idv + 8 * g, id);
    }
    __m256 sv[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) {
        __m256i s16[2];
        _mm256_storeu_si256((__m256i *)(qs + (size_t)j * stride), q8x32(x + 32 * j, _mm256_set1_ps(idv[j]), sum ? s16 : NULL));
        if (sum) sv[j] = _mm256_castsi256_ps(_mm256_add_epi32(s16[0], s16[1]));
    }
    if (sum) {
        _mm256_storeu_si256((__m256i *)sum, _mm256_castps_si256(red8_add(sv)));
        _mm256_storeu_si256((__m256i *)(sum + 8), _mm256_castps_si256(red8_add(sv + 8)));
    }
    return 1;
}

static void avx2_quantize_act(uint32_t wtype, const float *x, void *xq, int64_t K) {
    if (kn_q8_act_row(wtype, x, xq, K, q8_0_block_fn, q8_0_group_fn)) return;
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
            if (id > FLT_MAX) { /* kn_q8_block_ref's case */
                kn_ref_ops.quantize_act(QT_Q4_K, v, b, QK_K);
                continue;
            }
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

/* ---------------------------------------------------------------- Q8_0 rows x q8_0 (without AVX-VNNI) */

#ifndef KN_AVXVNNI
/* Without vpdpbusd the table keeps Q8_0 matrices as the file has them and reads them a row at a time:
 * each block's 32 signed q go into maddubs as |q| against the activations with q's sign, one madd, one
 * convert and one fma per block and activation row, in eight float lanes summed at the end. Packed
 * (P16), the signed bytes cost a sign, a maddubs, a madd and an add per four elements and activation row
 * on eight rows at a time, and that measured slower. */
#define NBC 512 /* blocks per K chunk: per tile, the activation scales as floats (8 KB of stack) */

INLINE void q8_tile(int nb, const uint8_t *w, const uint8_t *const *a, const float *da, int64_t nk, float *res) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[TB];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) acc[b] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nk; i++) {
        const block_q8_0 *p = (const block_q8_0 *)w + i;
        _mm_prefetch((const char *)p + PREFETCH, _MM_HINT_T0);
        const __m256i wv = _mm256_loadu_si256((const __m256i *)p->qs), wu = _mm256_sign_epi8(wv, wv);
        const __m256 dwv = _mm256_set1_ps(_cvtsh_ss(p->d));
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            const __m256i av = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)((const block_q8_0 *)a[b] + i)->qs), wv);
            const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wu, av), ones);
            acc[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dwv, _mm256_broadcast_ss(&da[b * NBC + i])), acc[b]);
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) res[b] = hsum_ps(acc[b]);
}

/* Batches above TB (a prompt): two weight rows by up to TB activation rows per tile, so each activation
 * vector serves two rows, and the products dw * da come from a table made per row pair (one 4-lane
 * multiply per row and block for the whole tile) instead of a multiply per block and activation row.
 * The weight scales of a chunk of rows are converted once for all its tiles. Per output the arithmetic is
 * q8_tile's (the same integer dots, the same IEEE products, fma in block order into the same lanes, the
 * same NBC chunks), so the bits are those of the decode path: batch invariance (kernels.h). The loop is
 * bound by about two vector operations per cycle here, and this takes one of six per block and activation
 * row out of it, which pays for prompts (B = 64 and more). */
/* dwf's size: a chunk's rows x a K chunk's blocks is at most ROW_CHUNK_BYTES / 34 when row_chunk sizes the
 * chunk by bytes, and 2 x NBC when rows are so long that it gives its minimum of two */
#define Q8_DWF (ROW_CHUNK_BYTES / sizeof(block_q8_0) + 2 * NBC)

INLINE void q8_tile2(int nb, const uint8_t *w0, const uint8_t *w1, const uint8_t *const *a, const float *sc,
                     int64_t nk, float res[2][TB]) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc0[TB], acc1[TB];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) acc0[b] = acc1[b] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nk; i++) {
        const block_q8_0 *p0 = (const block_q8_0 *)w0 + i, *p1 = (const block_q8_0 *)w1 + i;
        _mm_prefetch((const char *)p0 + PREFETCH, _MM_HINT_T0);
        _mm_prefetch((const char *)p1 + PREFETCH, _MM_HINT_T0);
        const __m256i v0 = _mm256_loadu_si256((const __m256i *)p0->qs), u0 = _mm256_sign_epi8(v0, v0);
        const __m256i v1 = _mm256_loadu_si256((const __m256i *)p1->qs), u1 = _mm256_sign_epi8(v1, v1);
        const float *si = sc + i * 2 * TB;
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            const __m256i av = _mm256_loadu_si256((const __m256i *)((const block_q8_0 *)a[b] + i)->qs);
            const __m256i x0 = _mm256_madd_epi16(_mm256_maddubs_epi16(u0, _mm256_sign_epi8(av, v0)), ones);
            const __m256i x1 = _mm256_madd_epi16(_mm256_maddubs_epi16(u1, _mm256_sign_epi8(av, v1)), ones);
            acc0[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(x0), _mm256_broadcast_ss(si + b), acc0[b]);
            acc1[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(x1), _mm256_broadcast_ss(si + TB + b), acc1[b]);
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
        res[0][b] = hsum_ps(acc0[b]);
        res[1][b] = hsum_ps(acc1[b]);
    }
}

/* noinline: its 59 KB of stack (the chunk's weight scales, the tile's activation scales and products)
 * stay out of the decode path's frame */
__attribute__((noinline)) static void mm_q8_batch(const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb,
                                                  int B, int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    const int64_t nb_k = K / 32;
    float dwf[Q8_DWF];                                      /* [row - c0][block - k0] */
    float da4[NBC * TB] __attribute__((aligned(16)));       /* [block][activation row] */
    float sc[NBC * 2 * TB] __attribute__((aligned(16)));    /* [block][row of the pair][activation row] */
    int64_t rc = row_chunk(wrb, B, r1 - r0, 2);
    for (int64_t c0 = r0; c0 < r1; c0 += rc) {
        int64_t c1 = LAYA_MIN(r1, c0 + rc);
        for (int64_t k0 = 0; k0 < nb_k; k0 += NBC) {
            int64_t nk = LAYA_MIN(NBC, nb_k - k0);
            for (int b0 = 0; b0 < B; b0 += TB) {
                int nb = LAYA_MIN(TB, B - b0);
                const uint8_t *a[TB];
                for (int t = 0; t < TB; t++) { /* rows past nb: zero scales (their products go unused) */
                    if (t < nb) a[t] = act + (size_t)(b0 + t) * arb + (size_t)k0 * sizeof(block_q8_0);
                    for (int64_t i = 0; i < nk; i++)
                        da4[i * TB + t] = t < nb ? _cvtsh_ss(((const block_q8_0 *)a[t] + i)->d) : 0.0f;
                }
                for (int64_t r = c0; r < c1; r += 2) {
                    /* an odd last row is paired with itself (computed twice, stored once) */
                    const int64_t rr = LAYA_MIN(r + 1, c1 - 1);
                    float *d0 = dwf + (r - c0) * nk, *d1 = dwf + (rr - c0) * nk;
                    /* the first tile converts the weight scales as it reaches the rows (a pass of its own
                     * ahead of the tiles would read the chunk from memory with nothing to overlap) */
                    for (int64_t i = 0; b0 == 0 && i < nk; i++) {
                        d0[i] = _cvtsh_ss(((const block_q8_0 *)(W + (size_t)r * wrb) + k0 + i)->d);
                        d1[i] = _cvtsh_ss(((const block_q8_0 *)(W + (size_t)rr * wrb) + k0 + i)->d);
                    }
                    for (int64_t i = 0; i < nk; i++) {
                        const __m128 dv = _mm_load_ps(da4 + i * TB);
                        _mm_store_ps(sc + i * 2 * TB, _mm_mul_ps(_mm_set1_ps(d0[i]), dv));
                        _mm_store_ps(sc + i * 2 * TB + TB, _mm_mul_ps(_mm_set1_ps(d1[i]), dv));
                    }
                    const uint8_t *w0 = W + (size_t)r * wrb + (size_t)k0 * sizeof(block_q8_0);
                    const uint8_t *w1 = W + (size_t)rr * wrb + (size_t)k0 * sizeof(block_q8_0);
                    float res[2][TB];
                    switch (nb) {
                    case 1: q8_tile2(1, w0, w1, a, sc, nk, res); break;
                    case 2: q8_tile2(2, w0, w1, a, sc, nk, res); break;
                    case 3: q8_tile2(3, w0, w1, a, sc, nk, res); break;
                    default: q8_tile2(4, w0, w1, a, sc, nk, res); break;
                    }
                    for (int j = 0; j < 2 && r + j < c1; j++)
                        for (int t = 0; t < nb; t++) {
                            float *yp = y + (size_t)(b0 + t) * ldy + (size_t)(r + j);
                            *yp = k0 > 0 ? *yp + res[j][t] : res[j][t];
                        }
                }
            }
        }
    }
}

/* A decode step (B <= TB): one tile of activation rows over all rows, which stream from memory once. */
static void mm_q8_row(const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb, int B, int64_t K, int64_t r0,
                      int64_t r1, float *y, size_t ldy) {
    if (B > TB) {
        mm_q8_batch(W, wrb, act, arb, B, K, r0, r1, y, ldy);
        return;
    }
    const int64_t nb_k = K / 32;
    float da[TB * NBC];
    for (int64_t k0 = 0; k0 < nb_k; k0 += NBC) {
        int64_t nk = LAYA_MIN(NBC, nb_k - k0);
        const uint8_t *a[TB];
        for (int t = 0; t < B; t++) {
            a[t] = act + (size_t)t * arb + (size_t)k0 * sizeof(block_q8_0);
            for (int64_t i = 0; i < nk; i++) da[t * NBC + i] = _cvtsh_ss(((const block_q8_0 *)a[t] + i)->d);
        }
        for (int64_t r = r0; r < r1; r++) {
            const uint8_t *w = W + (size_t)r * wrb + (size_t)k0 * sizeof(block_q8_0);
            float res[TB];
            switch (B) {
            case 1: q8_tile(1, w, a, da, nk, res); break;
            case 2: q8_tile(2, w, a, da, nk, res); break;
            case 3: q8_tile(3, w, a, da, nk, res); break;
            default: q8_tile(4, w, a, da, nk, res); break;
            }
            for (int t = 0; t < B; t++) {
                float *yp = y + (size_t)t * ldy + (size_t)r;
                *yp = k0 > 0 ? *yp + res[t] : res[t];
            }
        }
    }
}
#endif

/* ---------------------------------------------------------------- 32-element blocks packed at load (P16) */

/* The P16 layout (kernels.h) read 8 rows at a time: the low 32 bytes of each 64-byte vector are rows
 * 0-7 of the panel, the high 32 rows 8-15, so each half of a panel is an independent group of eight
 * outputs, one per 32-bit lane, and no horizontal sums are needed. Per block, half and activation row:
 * eight maddubs (four activation bytes broadcast from memory per lane) into int16 sums, one madd, one
 * convert, one multiply and one fma serve eight rows; the decoded weights are shared by up to P2_B
 * activation rows.
 * The unsigned weights of Q4_0 / Q4_1 (0..15) and the Q5 types (0..31) enter maddubs as they are: eight
 * (four) products of pairs fit an int16 (8 * 2 * 15 * 127 = 30480), and the offsets come off through the
 * q8 split corrections. Q8_0's bytes (q + 128) and IQ4_NL's levels would saturate it, so they go in
 * signed, |w| against the activations with w's sign (exact: activations never hold -128). With
 * AVX-VNNI one vpdpbusd per vector replaces maddubs and its sums, for every type as on AVX-512.
 *
 * Float order, per output: the AVX-512 table's P16 kernel's, on purpose: each block's exact integer dot
 * times dw * da by fma into the chain of the even or the odd blocks, and every P2_KB blocks from block 0
 * the running sum gets even + odd. So the avx2, avxvnni and avx512 tables give these matrices the same
 * bits (plain AVX2 keeps Q8_0 in rows, mm_q8_row, so for it only avxvnni and avx512 agree;
 * tests/test_kernels.c checks it where they run; attention and the activation functions still round in
 * each table's own way, so whole-model logits differ in their last bits). */
#ifdef KN_AVXVNNI
#define P2_VNNI 1
#else
#define P2_VNNI 0
#endif
#define P2_B 4     /* activation rows per tile: with each half's two chains, 8 of the 16 YMM */
#define P2_KB 32   /* blocks per float chunk: the AVX-512 table's PKB */

INLINE int p2_qv(uint32_t pt) { return pt == KN_P16_Q8_0 ? 8 : pt == KN_P16_Q5_0 || pt == KN_P16_Q5_1 ? 5 : 4; }
INLINE int p2_min(uint32_t pt) { return pt == KN_P16_Q4_1 || pt == KN_P16_Q5_1; }
INLINE int p2_signed_src(uint32_t pt) { return pt == KN_P16_Q8_0 || pt == KN_P16_IQ4_NL; }
/* Whether the weights enter as signed bytes (maddubs cannot take them unsigned: they would saturate it) */
INLINE int p2_signed(uint32_t pt) { return !P2_VNNI && p2_signed_src(pt); }

#if P2_VNNI
/* IQ4_NL's levels + 128, as unsigned bytes (vpdpbusd's unsigned operand; the -128 * sum correction). */
static const uint8_t g_iq4nl_u8[16] __attribute__((aligned(16))) = {1, 24, 45, 63, 79, 93, 106, 118,
                                                                  129, 141, 153, 166, 181, 197, 217, 241};
#endif

/* The activation rows' q8 split arrays (kernels.h), with their integer corrections: -8 * sum for Q4_0's
 * nibbles (q + 8), twice that for Q5_0 (q + 16), and with vpdpbusd -128 * sum for Q8_0 and IQ4_NL (their
 * bytes q + 128, as the AVX-512 table takes them). */
typedef struct p2_act {
    const int8_t *qa[P2_B];
    const float *da[P2_B], *dsum[P2_B];
    const int32_t *c4[P2_B], *c8[P2_B];
} p2_act;

INLINE __m256i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Vector t < 8 of half h of a block's weights (v: the block's first vector, plus 32 h), whose lanes
 * hold elements 4t .. 4t + 3 of their rows, so that it always meets the activations' bytes 4t ..: Q8_0's
 * bytes 4t.. (q + 128; signed q without vpdpbusd); for the nibble types the low nibbles of vector t for
 * t < 4 and the high ones of vector t - 4 (elements 16 + 4(t - 4) = 4t on), the Q5 types with bit 4 from
 * vector 4 (kernels.h), IQ4_NL's levels (+ 128 for vpdpbusd). */
/* IQ4_NL's levels of 32 nibbles (+ 128 as unsigned bytes for vpdpbusd, signed for maddubs). */
INLINE __m256i p2_iq4_levels(__m256i nib) {
#if P2_VNNI
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)g_iq4nl_u8)), nib);
#else
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kIQ4NL)), nib);
#endif
}

INLINE __m256i p2_wvec(uint32_t pt, const uint8_t *v, int t) {
    if (pt == KN_P16_Q8_0) {
        __m256i x = _mm256_load_si256((const __m256i *)(v + 64 * t));
        return P2_VNNI ? x : _mm256_xor_si256(x, _mm256_set1_epi8((char)0x80));
    }
    const __m256i m4 = _mm256_set1_epi8(15), x = _mm256_load_si256((const __m256i *)(v + 64 * (t & 3)));
    __m256i w = t < 4 ? _mm256_and_si256(x, m4) : _mm256_and_si256(_mm256_srli_epi16(x, 4), m4);
    if (pt == KN_P16_Q5_0 || pt == KN_P16_Q5_1) {
        const __m256i H = _mm256_load_si256((const __m256i *)(v + 256));
        w = _mm256_or_si256(w, _mm256_and_si256(t < 4 ? _mm256_srli_epi32(H, t) : _mm256_slli_epi32(H, 8 - t),
                                                _mm256_set1_epi8(16)));
    }
    return pt == KN_P16_IQ4_NL ? p2_iq4_levels(w) : w;
}

/* Weight vector t (wu: |w| for the signed types) against one activation row's four bytes a, into that
 * row's integer sums s[0], s[1]. */
INLINE void p2_step(uint32_t pt, __m256i *s, int t, __m256i w, __m256i wu, __m256i a) {
#if P2_VNNI
    (void)pt, (void)wu;
    s[t & 1] = _mm256_dpbusd_avx_epi32(s[t & 1], w, a);
#else
    if (p2_signed(pt)) /* int32: |w| * a pairs reach 2 * 128 * 127 */
        s[0] = _mm256_add_epi32(s[0], _mm256_madd_epi16(_mm256_maddubs_epi16(wu, _mm256_sign_epi8(a, w)), _mm256_set1_epi16(1)));
    else if (pt == KN_P16_Q5_0 || pt == KN_P16_Q5_1) /* four pair sums of at most 2 * 31 * 127 fit an int16 */
        s[t / 4] = _mm256_add_epi16(s[t / 4], _mm256_maddubs_epi16(w, a));
    else /* eight of at most 2 * 15 * 127 */
        s[0] = _mm256_add_epi16(s[0], _mm256_maddubs_epi16(w, a));
#endif
}

/* Block i's eight weight vectors w (as p2_wvec gives them), scales dw and minimums mw against nb
 * activation rows, into chain[b]: the rows' exact integer dot products (one per lane; with vpdpbusd two
 * chains per row, whose latency would otherwise bound B = 1), the offset correction included, then the
 * float step. (Decoding one vector at a time and meeting every activation row with it before the next,
 * to keep fewer registers live, measured the same.) */
INLINE void p2_rows_dot(uint32_t pt, int nb, const __m256i *w, __m256 dw, __m256 mw, const p2_act *A, int64_t i,
                        __m256 *chain) {
    __m256i s[P2_B][2]; /* vpdpbusd: two chains; maddubs int16: Q5 elements 0-15 and 16-31; signed: [0] */
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) s[b][0] = s[b][1] = _mm256_setzero_si256();
    __m256i wu[8];
#pragma GCC unroll 8
    for (int t = 0; t < 8; t++) wu[t] = p2_signed(pt) ? _mm256_abs_epi8(w[t]) : w[t];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
#pragma GCC unroll 8
        for (int t = 0; t < 8; t++) p2_step(pt, s[b], t, w[t], wu[t], bcast4(A->qa[b] + (size_t)i * 32 + 4 * t));
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
        __m256i sum;
#if P2_VNNI
        sum = _mm256_add_epi32(s[b][0], s[b][1]);
#else
        const __m256i ones = _mm256_set1_epi16(1);
        if (p2_signed(pt)) sum = s[b][0];
        else if (pt == KN_P16_Q5_0 || pt == KN_P16_Q5_1) sum = _mm256_add_epi32(_mm256_madd_epi16(s[b][0], ones), _mm256_madd_epi16(s[b][1], ones));
        else sum = _mm256_madd_epi16(s[b][0], ones);
#endif
        /* the unsigned weights' offsets: Q4_0 q + 8, Q5_0 q + 16, with vpdpbusd Q8_0 / IQ4_NL + 128 */
        if (pt == KN_P16_Q4_0 || pt == KN_P16_Q5_0 || (P2_VNNI && p2_signed_src(pt)))
            sum = _mm256_add_epi32(sum, _mm256_set1_epi32(pt == KN_P16_Q5_0 ? 2 * A->c4[b][i]
                                                          : pt == KN_P16_Q4_0 ? A->c4[b][i] : A->c8[b][i]));
        chain[b] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, _mm256_set1_ps(A->da[b][i])), chain[b]);
        if (p2_min(pt)) chain[b] = _mm256_fmadd_ps(mw, _mm256_set1_ps(A->dsum[b][i]), chain[b]);
    }
}

/* Block i of half h of the panel into chain[b] for nb activation rows (software prefetch on the first
 * half's pass: the second reads the chunk from L1). */
INLINE void p2_block(uint32_t pt, int nb, const uint8_t *P, int64_t i, int h, const p2_act *A, __m256 *chain) {
    const size_t qbytes = (size_t)p2_qv(pt) * 64;
    const uint8_t *v = P + kn_p16_q_at(p2_qv(pt), p2_min(pt), i) + 32 * h;
    const uint8_t *S = P + kn_p16_s_at(p2_qv(pt), p2_min(pt), i), *M = S + 64;
    if (h == 0) {
        /* the lines ahead of this block's: a pair's second block has the pair's scales after its vectors */
        const size_t span = qbytes + ((i & 1) ? (p2_min(pt) ? 128 : 64) : 0);
#pragma GCC unroll 8
        for (size_t q = 0; q < span; q += 64) _mm_prefetch((const char *)v + PREFETCH + q, _MM_HINT_T0);
#pragma GCC unroll 8
        for (size_t q = 0; q < span; q += 64) _mm_prefetch((const char *)v + P2_PF_L2 + q, _MM_HINT_T1);
    }
    __m256i w[8];
#pragma GCC unroll 8
    for (int t = 0; t < 8; t++) w[t] = p2_wvec(pt, v, t);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(S + 16 * h)));
    const __m256 mw = p2_min(pt) ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(M + 16 * h)))
                                 : _mm256_setzero_ps();
    p2_rows_dot(pt, nb, w, dw, mw, A, i, chain);
}

/* Blocks [k0, k1) (k0 a multiple of P2_KB) of a panel of nbk blocks against nb activation rows (q8 split
 * rows arb bytes apart): run[2 * b + h] is half h's eight outputs of row b. A float chunk's blocks are
 * read once per half, the second time from L1. */
/* Blocks [k0, k1) (k0 a multiple of P2_KB) of a panel of nbk blocks against nb activation rows (q8 split
 * rows arb bytes apart): run[2 * b + h] is half h's eight outputs of row b. A float chunk's blocks are
 * read once per half, the second time from L1. The weights are the packed panel P, or (src, a source
 * type) the panel's sixteen source rows, rows[r] pointing at block k0 of row r; only the halves in
 * hmask (bit h) are computed. */
/* The 4 x 4 dwords at off of each of eight rows' blocks, transposed: x[d] lane r = dword d of row r. */
INLINE void p2_tr4(const uint8_t *const *row, size_t off, __m256i *x) {
    __m256i y[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        y[j] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(row[j] + off))),
                                       _mm_loadu_si128((const __m128i *)(row[j + 4] + off)), 1);
    const __m256i t0 = _mm256_unpacklo_epi32(y[0], y[1]), t1 = _mm256_unpacklo_epi32(y[2], y[3]);
    const __m256i t2 = _mm256_unpackhi_epi32(y[0], y[1]), t3 = _mm256_unpackhi_epi32(y[2], y[3]);
    x[0] = _mm256_unpacklo_epi64(t0, t1), x[1] = _mm256_unpackhi_epi64(t0, t1);
    x[2] = _mm256_unpacklo_epi64(t2, t3), x[3] = _mm256_unpackhi_epi64(t2, t3);
}

/* The source types the kernel reads straight from their rows (the Q5 types' high bits would need the
 * P16 bit order built per block, so those are packed on the stack instead), and their block bytes. */
INLINE int p2_direct(uint32_t wt) { return (P2_VNNI && wt == QT_Q8_0) || wt == QT_Q4_0 || wt == QT_Q4_1 || wt == QT_IQ4_NL; }
INLINE size_t p2_src_bytes(uint32_t wt) {
    return wt == QT_Q8_0 ? sizeof(block_q8_0) : wt == QT_Q4_1 ? sizeof(block_q4_1) : sizeof(block_q4_0);
}

/* Block i of eight source rows (row[r] at block 0 of the call; off: their offsets from row[0]) into
 * chain[b]: the weight vectors p2_wvec would read from the packed panel, made by transposing the rows'
 * quants, and their scales (and Q4_1's minimums, the next fp16 of each block) by one gather. */
INLINE void p2_block_rows(uint32_t wt, int nb, const uint8_t *const *row, __m256i off, int64_t i, const p2_act *A,
                          __m256 *chain) {
    const uint32_t pt = kn_p16_type(wt);
    const size_t bsz = p2_src_bytes(wt), at = (size_t)i * bsz, qoff = at + (wt == QT_Q4_1 ? 4 : 2);
    if (!(i & 3)) {
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) _mm_prefetch((const char *)row[r] + at + 16 * bsz, _MM_HINT_T0);
    }
    __m256i w[8];
    if (wt == QT_Q8_0) {
        p2_tr4(row, qoff, w), p2_tr4(row, qoff + 16, w + 4);
        if (P2_VNNI) /* q + 128, as in the panel */
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) w[t] = _mm256_xor_si256(w[t], _mm256_set1_epi8((char)0x80));
    } else {
        __m256i x[4];
        p2_tr4(row, qoff, x);
        const __m256i m4 = _mm256_set1_epi8(15);
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            w[t] = _mm256_and_si256(x[t], m4), w[4 + t] = _mm256_and_si256(_mm256_srli_epi16(x[t], 4), m4);
            if (wt == QT_IQ4_NL) w[t] = p2_iq4_levels(w[t]), w[4 + t] = p2_iq4_levels(w[4 + t]);
        }
    }
    /* each lane's first 32 bits of its block: d, and Q4_1's m above it; packed to 8 fp16 each */
    const __m256i g = _mm256_i32gather_epi32((const int *)(row[0] + at), off, 1);
    const __m256i dh = _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_and_si256(g, _mm256_set1_epi32(0xffff)), g), 0x08);
    const __m256 dw = _mm256_cvtph_ps(_mm256_castsi256_si128(dh));
    __m256 mw = _mm256_setzero_ps();
    if (wt == QT_Q4_1)
        mw = _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_srli_epi32(g, 16), g), 0x08)));
    p2_rows_dot(pt, nb, w, dw, mw, A, i, chain);
}

INLINE void p2_tile_any(uint32_t pt, uint32_t src, const uint8_t *const *rows, int hmask, int nb, const uint8_t *P,
                        int64_t nbk, int64_t k0, int64_t k1, const uint8_t *act, size_t arb, __m256 *run) {
    p2_act A;
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
        A.qa[b] = (const int8_t *)(act + (size_t)b * arb);
        A.da[b] = (const float *)(A.qa[b] + nbk * 32);
        A.c4[b] = (const int32_t *)(A.da[b] + nbk);
        A.c8[b] = A.c4[b] + nbk;
        A.dsum[b] = (const float *)(A.c4[b] + 2 * nbk);
        run[2 * b] = run[2 * b + 1] = _mm256_setzero_ps();
    }
    for (int64_t c0 = k0; c0 < k1; c0 += P2_KB) {
        const int64_t c1 = LAYA_MIN(k1, c0 + P2_KB);
        for (int h = 0; h < 2; h++) {
            if (!(hmask >> h & 1)) continue;
            __m256i off = _mm256_setzero_si256();
            if (src) { /* the eight rows' offsets from the first, for the scale gathers */
                const uint8_t *const *rw = rows + 8 * h;
#define OFF(r) (int)(rw[r] - rw[0])
                off = _mm256_setr_epi32(0, OFF(1), OFF(2), OFF(3), OFF(4), OFF(5), OFF(6), OFF(7));
#undef OFF
            }
            __m256 ev[P2_B], od[P2_B];
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++) ev[b] = _mm256_setzero_ps(), od[b] = _mm256_setzero_ps();
            int64_t i = c0;
            for (; i + 1 < c1; i += 2) {
                if (src) {
                    p2_block_rows(src, nb, rows + 8 * h, off, i, &A, ev);
                    p2_block_rows(src, nb, rows + 8 * h, off, i + 1, &A, od);
                } else {
                    p2_block(pt, nb, P, i, h, &A, ev);
                    p2_block(pt, nb, P, i + 1, h, &A, od);
                }
            }
            if (i < c1) {
                if (src) p2_block_rows(src, nb, rows + 8 * h, off, i, &A, ev);
                else p2_block(pt, nb, P, i, h, &A, ev);
            }
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++) run[2 * b + h] = _mm256_add_ps(run[2 * b + h], _mm256_add_ps(ev[b], od[b]));
        }
    }
}

INLINE void p2_tile(uint32_t pt, int nb, const uint8_t *P, int64_t nbk, int64_t k0, int64_t k1, const uint8_t *act,
                    size_t arb, __m256 *run) {
    p2_tile_any(pt, 0, NULL, 3, nb, P, nbk, k0, k1, act, arb, run);
}

INLINE void p2_tile_nb(uint32_t pt, int nb, const uint8_t *P, int64_t nbk, int64_t k0, int64_t k1, const uint8_t *act,
                       size_t arb, __m256 *run) {
    switch (nb) {
    case 1: p2_tile(pt, 1, P, nbk, k0, k1, act, arb, run); break;
    case 2: p2_tile(pt, 2, P, nbk, k0, k1, act, arb, run); break;
    case 3: p2_tile(pt, 3, P, nbk, k0, k1, act, arb, run); break;
    default: p2_tile(pt, 4, P, nbk, k0, k1, act, arb, run); break;
    }
}

/* A tile's sums, rows [r0, r1) of the panel at row 16p, stored to y (or added to y's values). */
INLINE void p2_store(const __m256 *run, int nb, int64_t p, int64_t r0, int64_t r1, float *y, size_t ldy, int add) {
    const int64_t lo = LAYA_MAX(r0 - 16 * p, 0), hi = LAYA_MIN(r1 - 16 * p, 16);
    for (int b = 0; b < nb; b++) {
        float t[16], *o = y + (size_t)b * ldy + (size_t)(16 * p);
        _mm256_storeu_ps(t, run[2 * b]);
        _mm256_storeu_ps(t + 8, run[2 * b + 1]);
        if (lo == 0 && hi == 16 && !add) {
            memcpy(o, t, sizeof t);
            continue;
        }
        for (int64_t j = lo; j < hi; j++) o[j] = add ? o[j] + t[j] : t[j];
    }
}

/* One tile: a panel's whole K in registers. Several: per panel, one float chunk of P2_KB blocks (8-16 KB,
 * from L1) for every tile in turn, each chunk's sums added to the outputs in K order (the bits of one
 * pass, as in mm_p2_src), faster for prompts than whole panels per tile from L2. */
INLINE void mm_p2_t(uint32_t pt, const uint8_t *W, const uint8_t *act, size_t arb, int B, int64_t K, int64_t r0,
                    int64_t r1, float *y, size_t ldy) {
    const size_t pb = kn_pack_panel_bytes(pt, K);
    const int64_t nbk = K / 32;
    for (int64_t p = r0 / 16; p < (r1 + 15) / 16; p++) {
        const uint8_t *P = W + (size_t)p * pb;
        __m256 run[2 * P2_B];
        if (B <= P2_B) {
            p2_tile_nb(pt, B, P, nbk, 0, nbk, act, arb, run);
            p2_store(run, B, p, r0, r1, y, ldy, 0);
            continue;
        }
        for (int64_t k0 = 0; k0 < nbk; k0 += P2_KB)
            for (int b0 = 0; b0 < B; b0 += P2_B) {
                const int nb = LAYA_MIN(P2_B, B - b0);
                p2_tile_nb(pt, nb, P, nbk, k0, LAYA_MIN(nbk, k0 + P2_KB), act + (size_t)b0 * arb, arb, run);
                p2_store(run, nb, p, r0, r1, y + (size_t)b0 * ldy, ldy, k0 > 0);
            }
    }
}

__attribute__((noinline)) static void mm_p2(uint32_t pt, const uint8_t *W, const uint8_t *act, size_t arb, int B,
                                            int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    switch (pt) {
    case KN_P16_Q4_0: mm_p2_t(KN_P16_Q4_0, W, act, arb, B, K, r0, r1, y, ldy); return;
    case KN_P16_Q4_1: mm_p2_t(KN_P16_Q4_1, W, act, arb, B, K, r0, r1, y, ldy); return;
    case KN_P16_Q5_0: mm_p2_t(KN_P16_Q5_0, W, act, arb, B, K, r0, r1, y, ldy); return;
    case KN_P16_Q5_1: mm_p2_t(KN_P16_Q5_1, W, act, arb, B, K, r0, r1, y, ldy); return;
    case KN_P16_IQ4_NL: mm_p2_t(KN_P16_IQ4_NL, W, act, arb, B, K, r0, r1, y, ldy); return;
    default: mm_p2_t(KN_P16_Q8_0, W, act, arb, B, K, r0, r1, y, ldy); return;
    }
}

/* nb activation rows (arb bytes apart) of kn blocks of absz bytes (block_q8_0 or block_q8_s, whose
 * quants follow the fp16 scale) into the q8 split format of kn blocks (kernels.h), rows sarb apart. */
static void p2_regroup(const uint8_t *act, size_t arb, size_t absz, int nb, int kn, uint8_t *buf, size_t sarb) {
    const __m256i one8 = _mm256_set1_epi8(1);
    for (int b = 0; b < nb; b++) {
        int8_t *qs = (int8_t *)(buf + (size_t)b * sarb);
        float *ds = (float *)(qs + kn * 32), *dsum = (float *)((int32_t *)(ds + kn) + 2 * kn);
        int32_t *c4 = (int32_t *)(ds + kn), *c8 = c4 + kn;
        for (int i = 0; i < kn; i++) {
            const uint8_t *ab = act + (size_t)b * arb + (size_t)i * absz;
            const __m256i q = _mm256_loadu_si256((const __m256i *)(ab + absz - 32));
            _mm256_store_si256((__m256i *)(qs + 32 * i), q);
            /* the sum of the quants: maddubs by ones pairs them exactly, madd by ones sums the pairs */
            const int sum = hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(one8, q), _mm256_set1_epi16(1)));
            ds[i] = _cvtsh_ss(*(const qt_half *)ab);
            c4[i] = -8 * sum, c8[i] = -128 * sum, dsum[i] = ds[i] * (float)sum;
        }
    }
}

/* Matrices of the types p2_direct names that were not packed at load (decodes before the copy is made,
 * LAYA_PACK=0, or no memory for it), with their own activation formats (block_q8_0 / block_q8_s): per
 * tile of activation rows and piece of P2_KB blocks, the activations are regrouped once into the q8
 * split format of the piece, and every panel of rows goes through the P16 kernel reading the rows
 * themselves. Each piece is one of the kernel's float chunks and is added to the outputs in K order, so
 * the outputs are the bits the packed matrix gives. Rows past r1 are not read (the last is repeated,
 * its lanes not stored). */
static void mm_p2_rows(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb, int B, int64_t K,
                       int64_t r0, int64_t r1, float *y, size_t ldy) {
    const uint32_t pt = kn_p16_type(wt);
    const int64_t nbk = K / 32;
    const size_t bsz = p2_src_bytes(wt), absz = p2_min(pt) ? sizeof(block_q8_s) : sizeof(block_q8_0);
    const size_t sarb = P2_KB * (32 + 16); /* one piece's q8 split row */
    uint8_t abuf[P2_B * P2_KB * (32 + 16)] __attribute__((aligned(32)));
    for (int b0 = 0; b0 < B; b0 += P2_B) {
        const int nb = LAYA_MIN(P2_B, B - b0);
        for (int64_t k0 = 0; k0 < nbk; k0 += P2_KB) {
            const int kn = (int)LAYA_MIN(P2_KB, nbk - k0);
            p2_regroup(act + (size_t)b0 * arb + (size_t)k0 * absz, arb, absz, nb, kn, abuf, sarb);
            for (int64_t p = r0 / 16; p < (r1 + 15) / 16; p++) {
                const uint8_t *rows[16];
                for (int r = 0; r < 16; r++)
                    rows[r] = W + (size_t)LAYA_MIN(16 * p + r, r1 - 1) * wrb + (size_t)k0 * bsz;
                const int hmask = (LAYA_MAX(r0, 16 * p) < 16 * p + 8 ? 1 : 0) | (r1 > 16 * p + 8 ? 2 : 0);
                __m256 run[2 * P2_B];
                switch (wt * 8 + nb) {
#define P2R(t, n) case t * 8 + n: p2_tile_any(kn_p16_type(t), t, rows, hmask, n, NULL, kn, 0, kn, abuf, sarb, run); break
#if P2_VNNI
                P2R(QT_Q8_0, 1); P2R(QT_Q8_0, 2); P2R(QT_Q8_0, 3); P2R(QT_Q8_0, 4);
#endif
                P2R(QT_Q4_0, 1); P2R(QT_Q4_0, 2); P2R(QT_Q4_0, 3); P2R(QT_Q4_0, 4);
                P2R(QT_Q4_1, 1); P2R(QT_Q4_1, 2); P2R(QT_Q4_1, 3); P2R(QT_Q4_1, 4);
                P2R(QT_IQ4_NL, 1); P2R(QT_IQ4_NL, 2); P2R(QT_IQ4_NL, 3); P2R(QT_IQ4_NL, 4);
#undef P2R
                default: break;
                }
                p2_store(run, nb, p, r0, r1, y + (size_t)b0 * ldy, ldy, k0 > 0);
            }
        }
    }
}

/* Q5_0 / Q5_1 matrices that were not packed at load (the other types: mm_p2_rows), with
 * their own activation formats (block_q8_0 / block_q8_s): each 16-row panel is packed here P2_KB blocks
 * of K at a time into a stack buffer, the activations of up to P2_B rows regrouped into the q8 split
 * format of those blocks, and both go through the P16 kernel. Each piece is one of that kernel's float
 * chunks and is added to the output in K order, so the outputs are the bits the packed matrix gives.
 * Slower than the packed matrix: the packing is redone on every call. */
static void mm_p2_src(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb, int B, int64_t K,
                      int64_t r0, int64_t r1, float *y, size_t ldy) {
    const uint32_t pt = kn_p16_type(wt);
    const int64_t nbk = K / 32;
    const size_t bsz = (size_t)qt_get(wt)->bytes, absz = p2_min(pt) ? sizeof(block_q8_s) : sizeof(block_q8_0);
    const size_t sarb = P2_KB * (32 + 16); /* one piece's q8 split row */
    uint8_t wbuf[P2_KB * 5 * 64 + 2 * P2_KB * 32] __attribute__((aligned(64))); /* the Q5 types: 5 vectors */
    uint8_t abuf[P2_B * P2_KB * (32 + 16)] __attribute__((aligned(32)));
    for (int64_t p = r0 / 16; p < (r1 + 15) / 16; p++) {
        const int64_t rows = LAYA_MIN(r1, 16 * p + 16) - 16 * p;
        for (int64_t k0 = 0; k0 < nbk; k0 += P2_KB) {
            const int kn = (int)LAYA_MIN(P2_KB, nbk - k0);
            kn_pack(pt, W + (size_t)(16 * p) * wrb + (size_t)k0 * bsz, wrb, rows, 32 * kn, 0, 1, wbuf);
            for (int b0 = 0; b0 < B; b0 += P2_B) {
                const int nb = LAYA_MIN(P2_B, B - b0);
                p2_regroup(act + (size_t)b0 * arb + (size_t)k0 * absz, arb, absz, nb, kn, abuf, sarb);
                __m256 run[2 * P2_B];
                if (pt == KN_P16_Q5_0) p2_tile_nb(KN_P16_Q5_0, nb, wbuf, kn, 0, kn, abuf, sarb, run);
                else p2_tile_nb(KN_P16_Q5_1, nb, wbuf, kn, 0, kn, abuf, sarb, run);
                p2_store(run, nb, p, r0, r1, y + (size_t)b0 * ldy, ldy, k0 > 0);
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
    wtype &= ~KN_STREAM;
    switch (wtype) {
    case QT_F32: mm_float(QT_F32, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_F16: mm_float(QT_F16, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_BF16: mm_float(QT_BF16, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
#define KQ(t) mm_k(t, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy)
#ifndef KN_AVXVNNI
    case QT_Q8_0: mm_q8_row(W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
#else
    case QT_Q8_0:
#endif
    case QT_Q4_0:
    case QT_Q4_1:
    case QT_Q5_0:
    case QT_Q5_1:
    case QT_IQ4_NL:
        if (p2_direct(wtype)) mm_p2_rows(wtype, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy);
        else mm_p2_src(wtype, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy);
        return;
    case KN_P16_Q8_0:
    case KN_P16_Q4_0:
    case KN_P16_Q4_1:
    case KN_P16_Q5_0:
    case KN_P16_Q5_1:
    case KN_P16_IQ4_NL: mm_p2(wtype, W, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_Q2_K: KQ(QT_Q2_K); return;
    case QT_Q3_K: KQ(QT_Q3_K); return;
    case QT_Q4_K: KQ(QT_Q4_K); return;
    case QT_Q5_K: KQ(QT_Q5_K); return;
    case QT_Q6_K: KQ(QT_Q6_K); return;
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

/* Keys and values in the context's KV type, F32 or F16 (kn_ops.attn_qk16): element i at p, one of them,
 * and 8 from i on, as floats (F16 converted exactly, so the arithmetic after the load is the F32 path's). */
INLINE const void *kv_at(const void *p, size_t i, int f16) { return (const char *)p + i * (f16 ? 2 : 4); }
INLINE float kv_get(const void *p, size_t i, int f16) {
    return f16 ? fp16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
INLINE __m256 kv_load8(const void *p, size_t i, int f16) {
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)));
    return _mm256_loadu_ps((const float *)p + i);
}

/* hn heads x nc vectors of 8 columns (hn * nc = 8 accumulators: two heads x 32 columns, or one head x
 * 64, so that a single head also has eight multiply-add chains); each value row is read once per tile.
 * Every output is summed in position order, so the bits do not depend on the tiling. */
INLINE void v_tile8(const float *w, size_t w_stride, int hn, int nc, const void *v0, int64_t n0, const void *v,
                    size_t v_stride, int64_t npos, int64_t j0, float *out, size_t out_stride, int f16) {
    __m256 acc[2][8];
#pragma GCC unroll 2
    for (int h = 0; h < hn; h++)
#pragma GCC unroll 8
        for (int c = 0; c < nc; c++) acc[h][c] = _mm256_setzero_ps();
    for (int64_t p = 0; p < npos; p++) {
        const void *vr = kv_at(p < n0 ? v0 : v, (size_t)p * v_stride + (size_t)j0, f16);
        __m256 x[8];
#pragma GCC unroll 8
        for (int c = 0; c < nc; c++) x[c] = kv_load8(vr, (size_t)(8 * c), f16);
#pragma GCC unroll 2
        for (int h = 0; h < hn; h++) {
            const __m256 a = _mm256_broadcast_ss(w + (size_t)h * w_stride + (size_t)p);
#pragma GCC unroll 8
            for (int c = 0; c < nc; c++) acc[h][c] = _mm256_fmadd_ps(a, x[c], acc[h][c]);
        }
    }
#pragma GCC unroll 2
    for (int h = 0; h < hn; h++)
#pragma GCC unroll 8
        for (int c = 0; c < nc; c++) _mm256_storeu_ps(out + (size_t)h * out_stride + (size_t)j0 + 8 * c, acc[h][c]);
}

INLINE void v_all(const float *w, size_t w_stride, int nh, const void *v0, int64_t n0, const void *v, size_t v_stride,
                  int64_t npos, int64_t d, float *out, size_t out_stride, int f16) {
    for (int h0 = 0; h0 < nh; h0 += 2) {
        const int hn = nh - h0 < 2 ? nh - h0 : 2;
        const float *wh = w + (size_t)h0 * w_stride;
        float *oh = out + (size_t)h0 * out_stride;
        int64_t j0 = 0;
        if (hn == 1)
            for (; j0 + 64 <= d; j0 += 64) v_tile8(wh, w_stride, 1, 8, v0, n0, v, v_stride, npos, j0, oh, out_stride, f16);
        for (; j0 + 32 <= d; j0 += 32) {
            if (hn == 1) v_tile8(wh, w_stride, 1, 4, v0, n0, v, v_stride, npos, j0, oh, out_stride, f16);
            else v_tile8(wh, w_stride, 2, 4, v0, n0, v, v_stride, npos, j0, oh, out_stride, f16);
        }
        for (int h = 0; h < hn && j0 < d; h++) { /* columns past the last 32: plain loops */
            float *o = oh + (size_t)h * out_stride;
            for (int64_t j = j0; j < d; j++) o[j] = 0;
            for (int64_t p = 0; p < npos; p++) {
                float a = wh[(size_t)h * w_stride + (size_t)p];
                const void *vr = kv_at(p < n0 ? v0 : v, (size_t)p * v_stride, f16);
                for (int64_t j = j0; j < d; j++) o[j] += a * kv_get(vr, (size_t)j, f16);
            }
        }
    }
}

static void avx2_attn_v(const float *w, size_t w_stride, int nh, const float *v0, int64_t n0, const float *v,
                        size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride) {
    v_all(w, w_stride, nh, v0, n0, v, v_stride, npos, d, out, out_stride, 0);
}

static void avx2_attn_v16(const float *w, size_t w_stride, int nh, const uint16_t *v0, int64_t n0, const uint16_t *v,
                          size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride) {
    v_all(w, w_stride, nh, v0, n0, v, v_stride, npos, d, out, out_stride, 1);
}

/* Raw scores of hn heads (1..3) against nb blocks of 16 positions (kb: the first block, blocks
 * kt_stride apart; np: the positions of the last block, 16 but for the call's last): for each key
 * dimension, each block's two vectors are loaded once and multiplied by every head's q[j], the even
 * and the odd dimensions into two accumulator sets (added at the end). The sets never depend on hn or
 * nb, so a head's scores are the same bits alone or beside others, and whichever tile its block is in;
 * one head takes two blocks at a time, so that there are eight chains. A partial block is read with
 * masked loads (the positions past the end are never touched) and stored in part. */
INLINE void qk_tile8(const float *q, size_t q_stride, int hn, const void *kb, size_t kt_stride, int nb, int np,
                     int64_t d, float *s, size_t s_stride, int f16) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(np), lane);
    const __m256i m2 = _mm256_cmpgt_epi32(_mm256_set1_epi32(np - 8), lane);
    __m256 acc[2][3][4];
#pragma GCC unroll 2
    for (int u = 0; u < 2; u++)
#pragma GCC unroll 3
        for (int h = 0; h < hn; h++)
#pragma GCC unroll 4
            for (int c = 0; c < 2 * nb; c++) acc[u][h][c] = _mm256_setzero_ps();
    for (int64_t j = 0; j < d; j++) {
        const int u = (int)(j & 1);
        __m256 kv[4];
#pragma GCC unroll 2
        for (int b = 0; b < nb; b++) {
            const size_t kr = (size_t)b * kt_stride + (size_t)j * 16;
            if (f16) { /* a whole block is always there (the cache holds whole blocks); the lanes past np zeroed */
                kv[2 * b] = kv_load8(kb, kr, 1), kv[2 * b + 1] = kv_load8(kb, kr + 8, 1);
                if (b == nb - 1 && np < 16)
                    kv[2 * b] = _mm256_and_ps(kv[2 * b], _mm256_castsi256_ps(m1)),
                    kv[2 * b + 1] = _mm256_and_ps(kv[2 * b + 1], _mm256_castsi256_ps(m2));
            } else if (b == nb - 1 && np < 16) {
                kv[2 * b] = _mm256_maskload_ps((const float *)kb + kr, m1);
                kv[2 * b + 1] = _mm256_maskload_ps((const float *)kb + kr + 8, m2);
            } else {
                kv[2 * b] = kv_load8(kb, kr, 0), kv[2 * b + 1] = kv_load8(kb, kr + 8, 0);
            }
        }
#pragma GCC unroll 3
        for (int h = 0; h < hn; h++) {
            const __m256 a = _mm256_broadcast_ss(q + (size_t)h * q_stride + (size_t)j);
#pragma GCC unroll 4
            for (int c = 0; c < 2 * nb; c++) {
                if (u) acc[1][h][c] = _mm256_fmadd_ps(a, kv[c], acc[1][h][c]);
                else acc[0][h][c] = _mm256_fmadd_ps(a, kv[c], acc[0][h][c]);
            }
        }
    }
#pragma GCC unroll 3
    for (int h = 0; h < hn; h++)
#pragma GCC unroll 2
        for (int b = 0; b < nb; b++) {
            float t[16];
            _mm256_storeu_ps(t, _mm256_add_ps(acc[0][h][2 * b], acc[1][h][2 * b]));
            _mm256_storeu_ps(t + 8, _mm256_add_ps(acc[0][h][2 * b + 1], acc[1][h][2 * b + 1]));
            memcpy(s + (size_t)h * s_stride + (size_t)b * 16, t, (size_t)(b == nb - 1 ? np : 16) * sizeof(float));
        }
}

/* Heads in threes against one block of 16 positions at a time (a single head: two blocks), then
 * scaled, with the maxima. */
INLINE void qk_all(const float *q, size_t q_stride, int nh, const void *kt, size_t kt_stride, int64_t npos, int64_t d,
                   float scale, float *s, size_t s_stride, float *mx, int f16) {
    for (int h0 = 0; h0 < nh; h0 += 3) {
        const int hn = nh - h0 < 3 ? nh - h0 : 3;
        const float *qh = q + (size_t)h0 * q_stride;
        float *sh = s + (size_t)h0 * s_stride;
        for (int64_t p0 = 0; p0 < npos;) {
            const int64_t left = npos - p0;
            const int nb = hn == 1 && left > 16 ? 2 : 1;
            const int np = (int)LAYA_MIN(16, left - 16 * (nb - 1));
            const void *kb = kv_at(kt, (size_t)(p0 / 16) * kt_stride, f16);
            switch (hn * 2 + nb) {
            case 3: qk_tile8(qh, q_stride, 1, kb, kt_stride, 1, np, d, sh + p0, s_stride, f16); break;
            case 4: qk_tile8(qh, q_stride, 1, kb, kt_stride, 2, np, d, sh + p0, s_stride, f16); break;
            case 5: qk_tile8(qh, q_stride, 2, kb, kt_stride, 1, np, d, sh + p0, s_stride, f16); break;
            default: qk_tile8(qh, q_stride, 3, kb, kt_stride, 1, np, d, sh + p0, s_stride, f16); break;
            }
            p0 += 16 * (nb - 1) + np;
        }
    }
    kn_scale_max(s, s_stride, nh, npos, scale, mx);
}

static void avx2_attn_qk(const float *q, size_t q_stride, int nh, const float *kt, size_t kt_stride, int64_t npos,
                         int64_t d, float scale, float *s, size_t s_stride, float *mx) {
    qk_all(q, q_stride, nh, kt, kt_stride, npos, d, scale, s, s_stride, mx, 0);
}

static void avx2_attn_qk16(const float *q, size_t q_stride, int nh, const uint16_t *kt, size_t kt_stride, int64_t npos,
                           int64_t d, float scale, float *s, size_t s_stride, float *mx) {
    qk_all(q, q_stride, nh, kt, kt_stride, npos, d, scale, s, s_stride, mx, 1);
}

static void avx2_to_f16(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) y[i] = f32_to_fp16(x[i]);
}

#ifdef KN_AVXVNNI
#define P2_PACKS (KN_PACKS(QT_Q8_0) | KN_PACKS(QT_Q4_0) | KN_PACKS(QT_Q4_1) | KN_PACKS(QT_Q5_0) | KN_PACKS(QT_Q5_1) | KN_PACKS(QT_IQ4_NL))
#else /* Q8_0 stays in the file's rows (mm_q8_row) */
#define P2_PACKS (KN_PACKS(QT_Q4_0) | KN_PACKS(QT_Q4_1) | KN_PACKS(QT_Q5_0) | KN_PACKS(QT_Q5_1) | KN_PACKS(QT_IQ4_NL))
#endif
#ifdef KN_AVXVNNI
const kn_ops kn_avxvnni_ops = {"avxvnni",
#else
const kn_ops kn_avx2_ops = {"avx2",
#endif
                            avx2_quantize_act, avx2_matmul, avx2_dot_f32, avx2_axpy_f32, avx2_matmul_mlx,
                            avx2_exp_sum, avx2_attn_v,
                            avx2_attn_qk, avx2_silu_mul,
                            P2_PACKS, avx2_attn_v16, avx2_attn_qk16, avx2_to_f16};
