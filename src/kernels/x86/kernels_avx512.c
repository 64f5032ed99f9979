/* kernels_avx512.c — the kernel table for x86 CPUs with AVX-512 F/BW/VL/DQ, VNNI and VBMI (Ice Lake,
 * Sapphire Rapids, Zen 4 and later; Cascade Lake, without VBMI, gets the AVX2 table). Compiled with those
 * -m flags; kernels.c only hands this table out after cpuid/xgetbv say the CPU and OS support them. Must
 * match kernels_ref.c (tests/test_kernels.c). */
#include <immintrin.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "base/common.h"
#include "kernels/kernels.h"
#include "io/qtypes.h"

/* VBMI (vpermb, vpermt2b) gathers Q4_0/Q8_0 blocks; set here rather than in the Makefile so the file
 * carries its own requirement. kernels.c hands the table out only when cpuid reports it. */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512vbmi"))), apply_to = function)
#define KN_POP_TARGET 1
#else
#pragma GCC target("avx512vbmi")
#endif

#define INLINE static inline __attribute__((always_inline))

/* Activation rows per register tile: each weight block is loaded and decoded once, then used for up to
 * TB activation rows. Larger batches take several tiles over a chunk of rows that stays in L2. */
#define TB 8
/* Weight bytes per row chunk when B > TB: the chunk is reread from L2 by each tile, not from memory. */
#define ROW_CHUNK_BYTES (512 * 1024)
/* Bytes ahead of the current position at which weights are prefetched: on the 2-core virtualized Xeon
 * (Emerald Rapids) this was measured on, the hardware prefetcher alone left a matmul streaming from DRAM
 * at under half the bandwidth of a plain read loop; 4 KB ahead doubled it. */
#ifndef PREFETCH
#define PREFETCH 4096
#endif

static int64_t row_chunk(size_t w_row_bytes, int B, int64_t rows, int rb) {
    if (B <= TB) return rows;
    int64_t n = (int64_t)(ROW_CHUNK_BYTES / (w_row_bytes ? w_row_bytes : 1)) / rb * rb;
    return n < rb ? rb : n;
}

INLINE float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
INLINE float hsum_lo(__m512 v) { return hsum256(_mm512_castps512_ps256(v)); }
INLINE float hsum_hi(__m512 v) { return hsum256(_mm512_extractf32x8_ps(v, 1)); }

INLINE void put(float *p, float v, int add) { *p = add ? *p + v : v; }

/* ---------------------------------------------------------------- activation quantization */

/* Element order back from lane-wise packs: 32-bit word w of the result is word (w % 4) * 4 + w / 4 */
static const int32_t g_unperm[16] __attribute__((aligned(64))) = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};

INLINE float amax16(__m512 a, __m512 b) { return _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b))); }

/* Same arithmetic as the reference (d = amax / 127, q = round_even(x * (1 / d))), so the bytes match;
 * cvtps2dq rounds to nearest even under the default MXCSR. The clamp only matters for NaN input, which
 * converts to INT_MIN: the matmuls rely on activations never holding -128. */
INLINE __m512i q8_round(__m512 v, __m512 s) {
    return _mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(v, s)), _mm512_set1_epi32(-127));
}

/* 32 activations at x to int8 at qs; returns the block's fp16 scale, and *sum (if not NULL) the sum of the
 * stored bytes (the pack saturates above 127). */
INLINE qt_half q8_block(const float *x, int8_t *qs, int *sum) {
    __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    float d = amax16(v0, v1) / 127, id = d ? 1 / d : 0;
    if (id > FLT_MAX) return kn_q8_block_ref(x, qs, sum);
    __m512 sc = _mm512_set1_ps(id);
    __m512i q0 = q8_round(v0, sc), q1 = q8_round(v1, sc);
    _mm_storeu_si128((__m128i *)qs, _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(qs + 16), _mm512_cvtsepi32_epi8(q1));
    if (sum) {
        const __m512i hi = _mm512_set1_epi32(127);
        *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_min_epi32(q0, hi), _mm512_min_epi32(q1, hi)));
    }
    return f32_to_fp16(d);
}

/* q8_block out of line, for kn_q8_act_row (one call per 32 activations) */
static qt_half q8_block_fn(const float *x, int8_t *qs, int *sum) { return q8_block(x, qs, sum); }

/* Sixteen vectors reduced lane-wise at once: lane j of the result is the maximum (or, for red16_add, the
 * integer sum) of v[j]'s 16 lanes. Four rounds of pairwise shuffles halve the lanes each vector keeps,
 * 46 operations for the 16 reductions where one _mm512_reduce_* is 8 on a dependent chain; both
 * operations are exact in any order, so the result is that of one reduction per vector. The last
 * permute undoes the 4 x 4 transpose the rounds leave (vector 4m + l ends in lane 4l + m). */
#define RED16(NAME, OP)                                                                                        \
    INLINE __m512 NAME(__m512 *v) {                                                                           \
        _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++)                                                   \
            v[k] = OP(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x44), _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xee)); \
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)                                                   \
            v[k] = OP(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x88), _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xdd)); \
        _Pragma("GCC unroll 2") for (int k = 0; k < 2; k++)                                                   \
            v[k] = OP(_mm512_shuffle_ps(v[2 * k], v[2 * k + 1], 0x44), _mm512_shuffle_ps(v[2 * k], v[2 * k + 1], 0xee)); \
        __m512 r = OP(_mm512_shuffle_ps(v[0], v[1], 0x88), _mm512_shuffle_ps(v[0], v[1], 0xdd));             \
        return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r); \
    }
INLINE __m512 max_ps2(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
INLINE __m512 add_epi32_as_ps(__m512 a, __m512 b) {
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}
RED16(red16_max, max_ps2)
RED16(red16_add, add_epi32_as_ps)
#undef RED16

/* kn_q8_group_fn: q8_block's arithmetic for 16 blocks, the per-block horizontal steps (amax, sum) and
 * the scale divisions and fp16 conversions done for all 16 at once. Declines a group whose amax is not
 * finite: the fp16 conversion of
 * a NaN would keep payload bits the reference's does not, and one with a scale whose inverse overflows
 * (kn_q8_block_ref). */
static int q8_group_fn(const float *x, int8_t *qs, size_t stride, qt_half d16[16], float dq[16], int sum[16]) {
    __m512 m[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++)
        m[j] = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + 32 * j)), _mm512_abs_ps(_mm512_loadu_ps(x + 32 * j + 16)));
    __m512 amax = red16_max(m);
    if (_mm512_cmp_ps_mask(amax, _mm512_set1_ps(INFINITY), _CMP_LT_OQ) != 0xffff) return 0;
    __m512 d = _mm512_div_ps(amax, _mm512_set1_ps(127.0f));
    __m512 id = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_OQ), _mm512_set1_ps(1.0f), d);
    if (_mm512_cmp_ps_mask(id, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ)) return 0; /* kn_q8_block_ref's case */
    /* the conversion the reference's f32_to_fp16 does for finite input: round to nearest even */
    __m256i h = _mm512_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256((__m256i *)d16, h);
    _mm512_storeu_ps(dq, _mm512_cvtph_ps(h));
    /* Two blocks at a time: the four vectors of int32 packed to 64 bytes with two saturating packs (lane
     * l of the result holds elements 4l.. of each vector in turn) and one permute back to element order,
     * where four vpmovsdb and four stores were. The packs saturate as vpmovsdb does; the values are in
     * [-127, 127] anyway (q8_round; a finite x * (1 / d) never rounds past 127), so each block's sum is
     * that of its int32 values. */
    const __m512i unperm = _mm512_load_si512((const void *)g_unperm);
    __m512 sv[16];
#pragma GCC unroll 8
    for (int j = 0; j < 16; j += 2) {
        __m512 s0 = _mm512_permutexvar_ps(_mm512_set1_epi32(j), id), s1 = _mm512_permutexvar_ps(_mm512_set1_epi32(j + 1), id);
        __m512i q0 = q8_round(_mm512_loadu_ps(x + 32 * j), s0), q1 = q8_round(_mm512_loadu_ps(x + 32 * j + 16), s0);
        __m512i q2 = q8_round(_mm512_loadu_ps(x + 32 * j + 32), s1), q3 = q8_round(_mm512_loadu_ps(x + 32 * j + 48), s1);
        __m512i b = _mm512_permutexvar_epi32(unperm, _mm512_packs_epi16(_mm512_packs_epi32(q0, q1), _mm512_packs_epi32(q2, q3)));
        int8_t *o = qs + (size_t)j * stride;
        if (stride == 32) {
            _mm512_storeu_si512((void *)o, b);
        } else {
            _mm256_storeu_si256((__m256i *)o, _mm512_castsi512_si256(b));
            _mm256_storeu_si256((__m256i *)(o + stride), _mm512_extracti64x4_epi64(b, 1));
        }
        if (sum) {
            sv[j] = _mm512_castsi512_ps(_mm512_add_epi32(q0, q1));
            sv[j + 1] = _mm512_castsi512_ps(_mm512_add_epi32(q2, q3));
        }
    }
    if (sum) _mm512_storeu_si512(sum, _mm512_castps_si512(red16_add(sv)));
    return 1;
}

static void avx512_quantize_act(uint32_t wtype, const float *x, void *xq, int64_t K) {
    if (kn_q8_act_row(wtype, x, xq, K, q8_block_fn, q8_group_fn)) return;
    switch (wtype) {
    case QT_Q2_K:
    case QT_Q3_K:
    case QT_Q4_K:
    case QT_Q5_K:
    case QT_Q6_K:
        for (int64_t i = 0; i < K / QK_K; i++) {
            block_q8_K *b = (block_q8_K *)xq + i;
            const float *v = x + QK_K * i;
            __m512 m = _mm512_setzero_ps();
            for (int j = 0; j < QK_K; j += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(v + j)));
            float d = _mm512_reduce_max_ps(m) / 127, id = d ? 1 / d : 0;
            if (id > FLT_MAX) { /* kn_q8_block_ref's case */
                kn_ref_ops.quantize_act(QT_Q4_K, v, b, QK_K);
                continue;
            }
            b->d = d;
            __m512 s = _mm512_set1_ps(id);
            for (int j = 0; j < QK_K; j += 16) {
                __m512i q = q8_round(_mm512_loadu_ps(v + j), s);
                _mm_storeu_si128((__m128i *)(b->qs + j), _mm512_cvtsepi32_epi8(q));
                b->bsums[j / 16] = (int16_t)_mm512_reduce_add_epi32(q);
            }
        }
        return;
    case KN_P16_Q4_K:
    case KN_P16_Q6_K: { /* the q8_K split format (kernels.h) */
        const int64_t nsb = K / QK_K;
        for (int64_t i = 0; i < nsb; i++) {
            block_q8_K b;
            avx512_quantize_act(QT_Q4_K, x + i * QK_K, &b, QK_K);
            kn_q8k_split_put(&b, i, K, xq);
        }
        return;
    }
    default: kn_ref_ops.quantize_act(wtype, x, xq, K); return;
    }
}

/* ---------------------------------------------------------------- F32 / F16 / BF16 weights */

/* FR weight rows x FB activation rows of accumulators; every weight vector is converted once and used
 * FB times, every activation vector loaded once and used FR times. */
#define FR 2
#define FB 8

INLINE __m512 load_w(uint32_t wt, const uint8_t *row, int64_t k, __mmask16 m) {
    if (wt == QT_F32) return _mm512_maskz_loadu_ps(m, row + 4 * k);
    __m256i h = _mm256_maskz_loadu_epi16(m, row + 2 * k);
    if (wt == QT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

INLINE void f_tile(uint32_t wt, int nb, const uint8_t *const *w, const float *const *x, int64_t K,
                   float out[FB][FR]) {
    __m512 acc[FB][FR];
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++)
#pragma GCC unroll 2
        for (int r = 0; r < FR; r++) acc[b][r] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k < K; k += 16) {
        __mmask16 m = K - k >= 16 ? 0xffff : (__mmask16)((1u << (K - k)) - 1);
        __m512 wv[FR];
#pragma GCC unroll 2
        for (int r = 0; r < FR; r++) {
            _mm_prefetch((const char *)w[r] + PREFETCH + k * (wt == QT_F32 ? 4 : 2), _MM_HINT_T0);
            wv[r] = load_w(wt, w[r], k, m);
        }
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) {
            __m512 xv = _mm512_maskz_loadu_ps(m, x[b] + k);
#pragma GCC unroll 2
            for (int r = 0; r < FR; r++) acc[b][r] = _mm512_fmadd_ps(wv[r], xv, acc[b][r]);
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++)
#pragma GCC unroll 2
        for (int r = 0; r < FR; r++) out[b][r] = _mm512_reduce_add_ps(acc[b][r]);
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
                case 4: f_tile(wt, 4, w, x, K, out); break;
                case 5: f_tile(wt, 5, w, x, K, out); break;
                case 6: f_tile(wt, 6, w, x, K, out); break;
                case 7: f_tile(wt, 7, w, x, K, out); break;
                default: f_tile(wt, 8, w, x, K, out); break;
                }
                for (int t = 0; t < nb; t++)
                    for (int j = 0; j < FR && r + j < c1; j++) y[(size_t)(b0 + t) * ldy + (size_t)(r + j)] = out[t][j];
            }
        }
    }
}

/* ---------------------------------------------------------------- Q8_0 / Q4_0 weights x q8_0 */

/* The row is taken four 32-element blocks ("a group") at a time, as the blocks lie in the file (18 or
 * 34 bytes each, unaligned). vpermb / vpermt2b gather the group's quant bytes into two vectors, L (elements
 * 0-15 of each block) and H (elements 16-31), so 32-bit lane 4j+u covers elements 4u..4u+3 and
 * 16+4u..16+4u+3 of block j. Per group and activation row: two vpdpbusd; the weight decoding is shared by
 * every activation row of the tile. vpdpbusd takes the weights as unsigned bytes (Q4_0's raw nibbles,
 * q + 8; Q8_0's bytes xor 0x80, q + 128); each lane starts from minus that offset times the sum of the
 * eight activations it sees, so it holds an exact integer partial dot product. The activations are
 * regrouped into the same lane order once per call and tile (q_prep). Reads stay inside the row: a
 * partial last group is loaded with masks. At B = 1 on one thread, weights in L2: 22 GB/s for Q4_0 and
 * 31 GB/s for Q8_0, against 9 and 17 for the previous two-rows-per-vector kernel (bench/bench_kernels.c).
 *
 * The float arithmetic is that of each output alone, whatever the batch, so that this kernel and the
 * panel kernel below (B >= PANEL_MIN_B) give every output the same bits (kernels.h; before, the two
 * summed in different orders and a prompt decoded in one batch got other logits): per block, the exact
 * integer dot product (integer adds of the block's four lanes) times dw * da (exact: two fp16 values) is
 * added by fma, in block order, to one of two chains, the even blocks' or the odd blocks'; every PKB
 * blocks (from block 0) even + odd is added to the output's running sum and the chains restart at 0.
 * Four (weight row, activation row) pairs share the float work: after the integer adds, lane 4j+k holds
 * pair k's block j, so a group takes one convert, one multiply and two 8-lane fmas per four pairs, and
 * the weight scales of the four pairs are gathered as fp16 into one vector. */
#define QG 4   /* blocks per group */
#define QKC 48 /* groups per K chunk (K up to 6144 in one pass); q_prep: 256 B per group and row, 48 KB */
#define QB 4   /* activation rows per register tile */
/* Blocks per float chunk: the panel kernel's K chunk (its chains do not outlive one). QG * QKC is a
 * multiple of it. */
#define PKB 32

typedef struct q_prep {
    __m512i lo[QB][QKC], hi[QB][QKC]; /* activation bytes in the L and H lane orders */
    __m512i corr[QB][QKC];            /* -offset * (sum of the lane's activations) */
    __m512 da[QB][QKC];               /* activation block scale, in each block's four lanes */
} q_prep;

#define R4(b) b, b + 1, b + 2, b + 3
#define R16(b) R4(b), R4(b + 4), R4(b + 8), R4(b + 12)
#define D4(o) o, o + 1, o, o + 1, o, o + 1, o, o + 1
#define D2(o) o, o + 1, o + 64, o + 65, o, o + 1, o + 64, o + 65
/* byte indexes, into the 128 bytes of two registers, of L, H and the scales' fp16 words */
static const uint8_t g_idx_q4[64] __attribute__((aligned(64))) = {R16(2), R16(20), R16(38), R16(56)};
/* Q4_0 scales of two rows (a group each, in the two registers): word 4j+k is block j of row k & 1 */
static const uint8_t g_idx_q4d2[64] __attribute__((aligned(64))) = {D2(0), D2(18), D2(36), D2(54)};
static const uint8_t g_idx_q8l[64] __attribute__((aligned(64))) = {R16(2), R16(36), R16(70), R16(104)};
/* H of Q8_0 from bytes 18..81 and 72..135 of the group: both loads stay inside its 136 bytes */
static const uint8_t g_idx_q8h[64] __attribute__((aligned(64))) = {R16(0), R16(34), R16(78), R16(112)};
static const uint8_t g_idx_q8d[64] __attribute__((aligned(64))) = {D4(0), D4(34), D4(68), D4(102)};
#undef R4
#undef R16
#undef D4
#undef D2

INLINE __m512i idx_load(const uint8_t *t) { return _mm512_load_si512((const void *)t); }

/* 64 bytes at p + o, of which only the first n - o (if below 64) are read; the rest are zero. */
INLINE __m512i load_part(const uint8_t *p, int o, int n, int full) {
    if (full) return _mm512_loadu_si512((const void *)(p + o));
    int m = n - o;
    __mmask64 k = m <= 0 ? 0 : m >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << m) - 1);
    return _mm512_maskz_loadu_epi8(k, p + o);
}

/* One group of Q8_0 blocks (weights or activations) at p: L, H and the four fp16 scales, each in four
 * words (4j..4j+3: block j). n: bytes present when !full (a partial group: missing blocks come out zero). */
INLINE void q8_group(const uint8_t *p, int full, int n, __m512i *L, __m512i *H, __m256i *d) {
    __m512i r0 = load_part(p, 0, n, full), r1 = load_part(p, 64, n, full);
    __m512i r0h = load_part(p, 18, n, full), r2 = load_part(p, 72, n, full);
    *L = _mm512_permutex2var_epi8(r0, idx_load(g_idx_q8l), r1);
    *H = _mm512_permutex2var_epi8(r0h, idx_load(g_idx_q8h), r2);
    *d = _mm512_castsi512_si256(_mm512_permutex2var_epi8(r0, idx_load(g_idx_q8d), r1));
}

/* A group of weights: L and H as unsigned bytes; for Q8_0 also the scales as q8_group gives them (Q4_0's
 * are gathered two rows at a time by the caller). */
INLINE void w_group(uint32_t wt, const uint8_t *p, int full, int n, __m512i *L, __m512i *H, __m256i *d) {
    if (wt == QT_Q8_0) {
        q8_group(p, full, n, L, H, d);
        const __m512i flip = _mm512_set1_epi8((char)0x80);
        *L = _mm512_xor_si512(*L, flip);
        *H = _mm512_xor_si512(*H, flip);
    } else {
        const __m512i m4 = _mm512_set1_epi8(15);
        __m512i r0 = load_part(p, 0, n, full);
        __m512i r1 = full ? _mm512_zextsi128_si512(_mm_loadl_epi64((const __m128i *)(p + 64))) : load_part(p, 64, n, 0);
        __m512i q = _mm512_permutex2var_epi8(r0, idx_load(g_idx_q4), r1);
        *L = _mm512_and_si512(q, m4);
        *H = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        *d = _mm256_setzero_si256();
    }
}

/* Regroups ng groups (nblk blocks) of nb activation rows, from block k0 of each. */
static void q_prep_tile(q_prep *pp, int nb, const uint8_t *const *a, int64_t k0, int64_t nblk, int off) {
    const __m512i ones = _mm512_set1_epi8(1), moff = _mm512_set1_epi32(-off);
    for (int t = 0; t < nb; t++)
        for (int64_t g = 0; g * QG < nblk; g++) {
            const uint8_t *p = a[t] + (size_t)(k0 + g * QG) * sizeof(block_q8_0);
            int left = (int)LAYA_MIN(QG, nblk - g * QG);
            __m512i L, H;
            __m256i d;
            if (left == QG) q8_group(p, 1, 0, &L, &H, &d);
            else q8_group(p, 0, left * (int)sizeof(block_q8_0), &L, &H, &d);
            __m512i s = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, L), ones, H);
            pp->lo[t][g] = L;
            pp->hi[t][g] = H;
            pp->corr[t][g] = _mm512_mullo_epi32(s, moff);
            pp->da[t][g] = _mm512_cvtph_ps(d);
        }
}

/* Four pairs' partial sums (lane 4j+u: block j, lanes u) to lane 4j+k: pair k's sum over block j. */
INLINE __m512i block_sums4(__m512i s0, __m512i s1, __m512i s2, __m512i s3) {
    __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(s0, s1), _mm512_unpackhi_epi32(s0, s1));
    __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(s2, s3), _mm512_unpackhi_epi32(s2, s3));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}

/* Lane k holds pair k's even chain, lane 4 + k its odd one: lane k of the result is their sum. */
INLINE __m128 chains_sum(__m256 v) { return _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)); }

/* One group of ns sets of four weight rows (p[4i + j]) against nb activation rows. All the weight rows
 * are decoded first; then per activation row b and set i, eight vpdpbusd give the four pairs (row 4i + j,
 * activation b), whose block sums go to lane 4j' + j (block j') and whose two fmas go to acc[i * nb + b]:
 * lane j its even chain, lane 4 + j its odd one. The activation vectors of a row are loaded once per set
 * and reused by the four weight rows; the sets and activation rows give ns * nb independent fma chains. */
INLINE void q_group_step(uint32_t wt, int ns, int nb, const uint8_t *const *p, int full, int n, const q_prep *pp,
                         int64_t g, __m256 *acc) {
    __m512i L[8], H[8];
    __m256i dh[8];
    __m512 ws[2];
#pragma GCC unroll 8
    for (int j = 0; j < 4 * ns; j++) {
        if (full) {
            _mm_prefetch((const char *)p[j] + PREFETCH, _MM_HINT_T0);
            _mm_prefetch((const char *)p[j] + PREFETCH + 64, _MM_HINT_T0);
            if (wt == QT_Q8_0) _mm_prefetch((const char *)p[j] + PREFETCH + 128, _MM_HINT_T0);
        }
        w_group(wt, p[j], full, n, &L[j], &H[j], &dh[j]);
    }
#pragma GCC unroll 2
    for (int i = 0; i < ns; i++) {
        /* the weight scales of the set's rows: word 4j' + j is row j's block j' */
        __m256i wh;
        const uint8_t *const *q = p + 4 * i;
        if (wt == QT_Q4_0) {
            wh = _mm512_castsi512_si256(_mm512_permutex2var_epi8(load_part(q[0], 0, n, full), idx_load(g_idx_q4d2),
                                                                 load_part(q[1], 0, n, full)));
            __m512i hi = _mm512_permutex2var_epi8(load_part(q[2], 0, n, full), idx_load(g_idx_q4d2),
                                                  load_part(q[3], 0, n, full));
            wh = _mm256_mask_blend_epi16(0xcccc, wh, _mm512_castsi512_si256(hi));
        } else {
            wh = _mm256_mask_blend_epi16(0x2222, dh[4 * i], dh[4 * i + 1]);
            wh = _mm256_mask_blend_epi16(0x4444, wh, dh[4 * i + 2]);
            wh = _mm256_mask_blend_epi16(0x8888, wh, dh[4 * i + 3]);
        }
        ws[i] = _mm512_cvtph_ps(wh);
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
        const __m512i lo = pp->lo[b][g], hi = pp->hi[b][g], corr = pp->corr[b][g];
        const __m512 as = pp->da[b][g];
#pragma GCC unroll 2
        for (int i = 0; i < ns; i++) {
            __m512i s[4];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                s[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(corr, L[4 * i + j], lo), H[4 * i + j], hi);
            __m512i S = block_sums4(s[0], s[1], s[2], s[3]);
            __m512 t = _mm512_cvtepi32_ps(S), sc = _mm512_mul_ps(ws[i], as);
            __m256 *a = &acc[i * nb + b];
            /* blocks 0 and 1 of the group into the two chains, then blocks 2 and 3 */
            *a = _mm256_fmadd_ps(_mm512_castps512_ps256(t), _mm512_castps512_ps256(sc), *a);
            *a = _mm256_fmadd_ps(_mm512_extractf32x8_ps(t, 1), _mm512_extractf32x8_ps(sc, 1), *a);
        }
    }
}

/* 4 * ns weight rows (w[j], at the chunk's first block) x nb activation rows over nblk blocks; the sum of
 * (row j, activation b) goes to out[b * ld + j], starting from that value if add (else from 0). */
INLINE void q_tile(uint32_t wt, int ns, int nb, const uint8_t *const *w, const q_prep *pp, int64_t nblk,
                   int add, float *out, size_t ld) {
    const size_t gsz = QG * (wt == QT_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0));
    const int nq = ns * nb, nr = 4 * ns;
    __m256 acc[8];
    __m128 run[8];
#pragma GCC unroll 8
    for (int q = 0; q < nq; q++) {
        acc[q] = _mm256_setzero_ps();
        int i = q / nb, b = q % nb;
        run[q] = add ? _mm_loadu_ps(out + b * ld + 4 * i) : _mm_setzero_ps();
    }
    const int64_t nfull = nblk / QG, rem = nblk % QG;
    const uint8_t *p[8];
#pragma GCC unroll 8
    for (int j = 0; j < nr; j++) p[j] = w[j];
    for (int64_t g = 0; g < nfull; g++) {
        q_group_step(wt, ns, nb, p, 1, 0, pp, g, acc);
#pragma GCC unroll 8
        for (int j = 0; j < nr; j++) p[j] += gsz;
        if ((g + 1) % (PKB / QG) == 0)
#pragma GCC unroll 8
            for (int q = 0; q < nq; q++) run[q] = _mm_add_ps(run[q], chains_sum(acc[q])), acc[q] = _mm256_setzero_ps();
    }
    if (rem) q_group_step(wt, ns, nb, p, 0, (int)(rem * gsz / QG), pp, nfull, acc);
    if (nfull % (PKB / QG) || rem)
#pragma GCC unroll 8
        for (int q = 0; q < nq; q++) run[q] = _mm_add_ps(run[q], chains_sum(acc[q]));
#pragma GCC unroll 8
    for (int q = 0; q < nq; q++) _mm_storeu_ps(out + (q % nb) * ld + 4 * (q / nb), run[q]);
}

/* Weight rows per tile by activation rows: sets of four (QNS1 at B = 1, QNS at B = 2..4). */
#ifndef QNS1
#define QNS1 2
#endif
#ifndef QNS
#define QNS 1
#endif

INLINE void mm_q8(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb, int B, int64_t K,
                  int64_t r0, int64_t r1, float *y, size_t ldy) {
    const size_t bsz = wt == QT_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0);
    const int off = wt == QT_Q8_0 ? 128 : 8;
    const int64_t nb_k = K / 32;
    q_prep pp;
    /* Beyond one tile of activation rows, rows are taken in chunks that stay in L2 for every tile. */
    int64_t rc = r1 - r0;
    if (B > QB) rc = LAYA_MAX(8, (int64_t)(ROW_CHUNK_BYTES / wrb) / 8 * 8);
    for (int64_t c0 = r0; c0 < r1; c0 += rc) {
        int64_t c1 = LAYA_MIN(r1, c0 + rc);
        for (int b0 = 0; b0 < B; b0 += QB) {
            int nb = LAYA_MIN(QB, B - b0), nr = 4 * (nb == 1 ? QNS1 : QNS);
            const uint8_t *a[QB];
            for (int t = 0; t < nb; t++) a[t] = act + (size_t)(b0 + t) * arb;
            for (int64_t k0 = 0; k0 < nb_k; k0 += QG * QKC) {
                int64_t nk = LAYA_MIN(QG * QKC, nb_k - k0);
                q_prep_tile(&pp, nb, a, k0, nk, off);
                for (int64_t r = c0; r < c1; r += nr) {
                    const uint8_t *w[8];
                    for (int j = 0; j < nr; j++) w[j] = W + (size_t)LAYA_MIN(r + j, c1 - 1) * wrb + (size_t)k0 * bsz;
                    /* later K chunks continue each output's running sum; a tile past the range's end
                     * goes through a copy */
                    const int add = k0 > 0, whole = r + nr <= c1;
                    float tmp[32], *o = whole ? y + (size_t)b0 * ldy + (size_t)r : tmp;
                    const size_t ld = whole ? ldy : (size_t)nr;
                    if (add && !whole)
                        for (int t = 0; t < nb; t++)
                            for (int j = 0; j < nr; j++)
                                tmp[t * nr + j] = y[(size_t)(b0 + t) * ldy + (size_t)LAYA_MIN(r + j, c1 - 1)];
                    switch (nb) {
                    case 1: q_tile(wt, QNS1, 1, w, &pp, nk, add, o, ld); break;
                    case 2: q_tile(wt, QNS, 2, w, &pp, nk, add, o, ld); break;
                    case 3: q_tile(wt, QNS, 3, w, &pp, nk, add, o, ld); break;
                    default: q_tile(wt, QNS, 4, w, &pp, nk, add, o, ld); break;
                    }
                    if (!whole)
                        for (int t = 0; t < nb; t++)
                            for (int j = 0; j < nr && r + j < c1; j++)
                                y[(size_t)(b0 + t) * ldy + (size_t)(r + j)] = tmp[t * nr + j];
                }
            }
        }
    }
}

/* ---------------------------------------------------------------- Q8_0 / Q4_0 x many activation rows */

/* For batches of PANEL_MIN_B rows or more (prefill), the weights are regrouped once per 16-row panel so
 * that 32-bit lane r holds row r: per block, eight vpdpbusd (each with four activation bytes broadcast
 * from memory) and one convert, multiply and multiply-add serve 16 rows of one activation row, against
 * 2 vpdpbusd and three float operations per four rows-blocks in the decode kernel above. Regrouping a
 * panel (nibble split, a 16x8 dword transpose in three rounds of vpermt2d) costs about as much as one
 * activation row and is shared by up to PSUPER of them; the activations' scales and offset corrections
 * are computed once per K chunk for those rows. The float sums follow the decode kernel's order (above),
 * so an output does not depend on which of the two kernels computed it. */
#define PANEL_MIN_B 16
#define PA 8      /* activation rows per register tile */
#define PSUPER 64 /* activation rows sharing one regrouped panel: their scales and corrections take 16 KB */

typedef struct q_panel {
    __m512i w[PKB][8]; /* w[i][t] lane r: unsigned weight bytes 4t..4t+3 of row r's block i */
    __m512 dw[PKB];    /* lane r: the scale of row r's block i */
} q_panel;

static const int32_t g_tr_idx[3][2][16] __attribute__((aligned(64))) = {
    {{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27}, {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31}},
    {{0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29}, {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31}},
    {{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}, {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}},
};

INLINE __m512i tr_perm(__m512i a, int round, int half, __m512i b) {
    return _mm512_permutex2var_epi32(a, _mm512_load_si512((const void *)g_tr_idx[round][half]), b);
}

/* z[k] holds rows 2k (lanes 0-7) and 2k+1 (lanes 8-15), eight dwords each; out[t] lane r = row r's dword t. */
INLINE void transpose16x8(const __m512i z[8], __m512i out[8]) {
    __m512i x[4][2], y[2][2][2];
    for (int m = 0; m < 4; m++)
        for (int h = 0; h < 2; h++) x[m][h] = tr_perm(z[2 * m], 0, h, z[2 * m + 1]); /* rows 4m.., dwords 4h.. */
    for (int mm = 0; mm < 2; mm++)
        for (int h = 0; h < 2; h++)
            for (int h2 = 0; h2 < 2; h2++) y[mm][h][h2] = tr_perm(x[2 * mm][h], 1, h2, x[2 * mm + 1][h]);
    for (int h = 0; h < 2; h++)
        for (int h2 = 0; h2 < 2; h2++)
            for (int h3 = 0; h3 < 2; h3++) out[4 * h + 2 * h2 + h3] = tr_perm(y[0][h][h2], 2, h3, y[1][h][h2]);
}

/* Regroups blocks k0 .. k0+nk of rows row0 .. row0+15 (rows past nrows repeat the last one). */
static void pack_panel(uint32_t wt, const uint8_t *W, size_t wrb, int64_t row0, int64_t nrows, int64_t k0, int nk,
                       q_panel *P) {
    const size_t bsz = wt == QT_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0);
    const uint8_t *rows[16];
    for (int r = 0; r < 16; r++) rows[r] = W + (size_t)(row0 + LAYA_MIN(r, nrows - 1)) * wrb + (size_t)k0 * bsz;
    const __m512i m4 = _mm512_set1_epi8(15), flip = _mm512_set1_epi8((char)0x80);
    const __m512i lo_idx = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0), hi_idx = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    for (int i = 0; i < nk; i++) {
        __m512i z[8];
        if (wt == QT_Q4_0) {
            for (int q = 0; q < 4; q++) { /* rows 4q .. 4q+3 */
                const uint8_t *p[4];
                for (int u = 0; u < 4; u++) p[u] = rows[4 * q + u] + (size_t)i * bsz + 2;
                __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p[0]));
                v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)p[1]), 1);
                v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)p[2]), 2);
                v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)p[3]), 3);
                __m512i L = _mm512_and_si512(v, m4), H = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                z[2 * q] = _mm512_permutex2var_epi64(L, lo_idx, H);     /* L0 H0 L1 H1 */
                z[2 * q + 1] = _mm512_permutex2var_epi64(L, hi_idx, H); /* L2 H2 L3 H3 */
            }
        } else {
            for (int k = 0; k < 8; k++) {
                __m256i a = _mm256_loadu_si256((const __m256i *)(rows[2 * k] + (size_t)i * bsz + 2));
                __m256i b = _mm256_loadu_si256((const __m256i *)(rows[2 * k + 1] + (size_t)i * bsz + 2));
                z[k] = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1), flip);
            }
        }
        transpose16x8(z, P->w[i]);
        uint16_t d[16];
        for (int r = 0; r < 16; r++) memcpy(&d[r], rows[r] + (size_t)i * bsz, 2);
        P->dw[i] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)d));
    }
}

/* out[b] lane r = dot(row r, activation row b) over the panel's nk blocks (at most PKB, from a multiple
 * of PKB), for na activation rows, in the decode kernel's float order: the even blocks' chain plus the
 * odd blocks', each in a pass of its own (one accumulator per activation row: with two, the tile runs
 * out of registers). */
INLINE void panel_tile(int na, const q_panel *P, int nk, const uint8_t *const *a, const float (*da)[PKB],
                       const int32_t (*corr)[PKB], __m512 *out) {
    /* The even chains wait in memory during the odd pass: the empty asm keeps the compiler from holding
     * them in registers, where they made the pass spill (measured 3% slower). */
    __m512 even[PA];
    __asm__ volatile("" : : "r"(even) : "memory");
    for (int c = 0; c < 2; c++) {
        __m512 acc[PA];
#pragma GCC unroll 8
        for (int b = 0; b < na; b++) acc[b] = _mm512_setzero_ps();
        for (int i = c; i < nk; i += 2) {
            __m512i w[8];
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) w[t] = P->w[i][t];
            __m512 dw = P->dw[i];
#pragma GCC unroll 8
            for (int b = 0; b < na; b++) {
                const uint8_t *qs = a[b] + (size_t)i * sizeof(block_q8_0) + 2;
                /* two chains of four: vpdpbusd's latency would otherwise bound the loop */
                __m512i s2[2] = {_mm512_set1_epi32(corr[b][i]), _mm512_setzero_si512()};
#pragma GCC unroll 8
                for (int t = 0; t < 8; t++) {
                    int32_t v;
                    memcpy(&v, qs + 4 * t, 4);
                    s2[t & 1] = _mm512_dpbusd_epi32(s2[t & 1], w[t], _mm512_set1_epi32(v));
                }
                __m512i s = _mm512_add_epi32(s2[0], s2[1]);
                acc[b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(da[b][i])), acc[b]);
            }
        }
        if (c == 0) {
#pragma GCC unroll 8
            for (int b = 0; b < na; b++) _mm512_store_ps((float *)&even[b], acc[b]);
            __asm__ volatile("" : : "r"(even) : "memory");
        } else {
#pragma GCC unroll 8
            for (int b = 0; b < na; b++) out[b] = _mm512_add_ps(_mm512_load_ps((const float *)&even[b]), acc[b]);
        }
    }
}

/* For the panel and rows-in-lanes kernels: each activation block's scale, and the correction for the weight
 * offset (off = 128 for Q8_0, 8 for Q4_0) that the unsigned dot product adds: -off * sum(a), the byte sum
 * taken via unsigned bytes, sum(a) = sum(a ^ 0x80) - 32 * 128. */
static inline __attribute__((always_inline)) void act_blocks(const block_q8_0 *ab, int nk, int off, float *da,
                                                              int32_t *corr) {
    for (int i = 0; i < nk; i++) {
        __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)ab[i].qs), _mm256_set1_epi8((char)0x80));
        __m256i s4 = _mm256_sad_epu8(v, _mm256_setzero_si256());
        __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
        corr[i] = -off * ((int)(_mm_cvtsi128_si64(s2) + _mm_extract_epi64(s2, 1)) - 32 * 128);
        da[i] = _cvtsh_ss(ab[i].d);
    }
}

/* noinline: its 34 KB of stack must not add to the decode kernel's 48 KB in avx512_matmul's frame */
__attribute__((noinline)) static void mm_q8_panel(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act,
                                                  size_t arb, int B, int64_t K, int64_t r0, int64_t r1, float *y,
                                                  size_t ldy) {
    const int off = wt == QT_Q8_0 ? 128 : 8;
    const int64_t nb_k = K / 32;
    q_panel P;
    float da[PSUPER][PKB];
    int32_t corr[PSUPER][PKB];
    for (int s0 = 0; s0 < B; s0 += PSUPER) {
        int ns = LAYA_MIN(PSUPER, B - s0);
        for (int64_t k0 = 0; k0 < nb_k; k0 += PKB) {
            int nk = (int)LAYA_MIN(PKB, nb_k - k0);
            for (int b = 0; b < ns; b++)
                act_blocks((const block_q8_0 *)(act + (size_t)(s0 + b) * arb) + k0, nk, off, da[b], corr[b]);
            for (int64_t row0 = r0; row0 < r1; row0 += 16) {
                int64_t nrows = LAYA_MIN(16, r1 - row0);
                pack_panel(wt, W, wrb, row0, nrows, k0, nk, &P);
                __mmask16 m = nrows == 16 ? 0xffff : (__mmask16)((1u << nrows) - 1);
                for (int b0 = 0; b0 < ns; b0 += PA) {
                    int na = LAYA_MIN(PA, ns - b0);
                    const uint8_t *a[PA];
                    for (int t = 0; t < na; t++) a[t] = act + (size_t)(s0 + b0 + t) * arb + (size_t)k0 * sizeof(block_q8_0);
                    __m512 res[PA];
                    switch (na) {
                    case 1: panel_tile(1, &P, nk, a, da + b0, corr + b0, res); break;
                    case 2: panel_tile(2, &P, nk, a, da + b0, corr + b0, res); break;
                    case 3: panel_tile(3, &P, nk, a, da + b0, corr + b0, res); break;
                    case 4: panel_tile(4, &P, nk, a, da + b0, corr + b0, res); break;
                    case 5: panel_tile(5, &P, nk, a, da + b0, corr + b0, res); break;
                    case 6: panel_tile(6, &P, nk, a, da + b0, corr + b0, res); break;
                    case 7: panel_tile(7, &P, nk, a, da + b0, corr + b0, res); break;
                    default: panel_tile(8, &P, nk, a, da + b0, corr + b0, res); break;
                    }
                    for (int t = 0; t < na; t++) {
                        float *yp = y + (size_t)(s0 + b0 + t) * ldy + (size_t)row0;
                        __m512 v = res[t];
                        if (k0 > 0) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, yp));
                        _mm512_mask_storeu_ps(yp, m, v);
                    }
                }
            }
        }
    }
}

/* ---------------------------------------------------------------- Q8_0 / Q4_0, small batches: rows in lanes */

/* For RL_MIN_B <= B < PANEL_MIN_B (decode steps of several sequences): sixteen weight rows in the sixteen 32-bit
 * lanes, as in the panel kernel, but each block is regrouped in registers as it is used instead of into a
 * panel in memory: the 16-byte quant runs of four rows go into the four 128-bit lanes of a vector (Q8_0:
 * two such vectors, elements 0-15 and 16-31), and a 4x4 transpose of dwords within the 128-bit lanes (eight
 * unpacks) leaves lane 4j+g holding row 4g+j. Then per block and activation row: eight vpdpbusd with the
 * activation's dwords broadcast from memory, one convert, one multiply and one multiply-add serve sixteen
 * rows, where the decode kernel above spends two vpdpbusd and three float operations on four rows' blocks
 * (its float work is per activation row; here it is per sixteen weight rows). The weight scales of the
 * sixteen rows come from one gather per block (copying them into lane order once per K chunk was slower).
 *
 * Float order, per output: the exact integer dot product of each block times dw * da (exact, two fp16
 * values) is added by fma, in block order, to one of two chains, the even blocks' or the odd blocks'; each
 * PKB blocks from block 0, even + odd is added to the output's running sum and the chains restart. The
 * order does not depend on B, on the row's place in the batch or on the row range. */
/* From 5 rows on (RL_MIN_B; 16 would switch it off) it is faster than the decode kernel; at B = 4 both
 * take the same time and at 2 the decode kernel is faster. Its outputs are bit for bit those of the decode kernel (B = 1)
 * and the panel, which sum in the same order: tests/test_kernels.c (test_invariance) checks every B from 3
 * to 17 against the rows alone through avx512_matmul, K = 32 ... 6176, Q4_0 and Q8_0. */
#ifndef RL_MIN_B
#define RL_MIN_B 5
#endif
#define RL_KC 192 /* blocks per K chunk (K up to 6144 per pass): scales and corrections 1.5 KB per row */
#define RL_B 8    /* activation rows per register tile: even and odd chains, 16 vectors */


/* In-lane 4x4 transpose of dwords: x[g] 128-bit lane j dword u -> x[u] 128-bit lane j dword g. */
INLINE void tr4x4(__m512i x[4]) {
    __m512i t0 = _mm512_unpacklo_epi32(x[0], x[1]), t1 = _mm512_unpackhi_epi32(x[0], x[1]);
    __m512i t2 = _mm512_unpacklo_epi32(x[2], x[3]), t3 = _mm512_unpackhi_epi32(x[2], x[3]);
    x[0] = _mm512_unpacklo_epi64(t0, t2), x[1] = _mm512_unpackhi_epi64(t0, t2);
    x[2] = _mm512_unpacklo_epi64(t1, t3), x[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* 16 bytes at p + o[4g + j] + at into 128-bit lane j of v[g]. */
INLINE void rl_load(const uint8_t *p, const size_t *o, int at, __m512i v[4]) {
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        __m512i z = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p + o[4 * g] + at)));
        z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(p + o[4 * g + 1] + at)), 1);
        z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(p + o[4 * g + 2] + at)), 2);
        v[g] = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(p + o[4 * g + 3] + at)), 3);
    }
}

/* Block at p of 16 rows (row r at p + o[r]; gidx: the same offsets in lane order): w[t] lane 4j+g = the
 * unsigned weight bytes of elements 4t..4t+3 of row 4g+j's block; dw = its scale. */
INLINE void rl_block(uint32_t wt, const uint8_t *p, const size_t *o, __m512i gidx, __m512i w[8], __m512 *dw) {
    __m512i a[4];
    rl_load(p, o, 2, a);
    tr4x4(a);
    if (wt == QT_Q4_0) {
        const __m512i m4 = _mm512_set1_epi8(15);
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            w[u] = _mm512_and_si512(a[u], m4);
            w[4 + u] = _mm512_and_si512(_mm512_srli_epi16(a[u], 4), m4);
        }
    } else {
        const __m512i flip = _mm512_set1_epi8((char)0x80);
        __m512i b[4];
        rl_load(p, o, 18, b);
        tr4x4(b);
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) w[u] = _mm512_xor_si512(a[u], flip), w[4 + u] = _mm512_xor_si512(b[u], flip);
    }
    *dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(gidx, (const void *)p, 1)));
}

/* vpdpbusd with the signed operand a dword broadcast from memory ({1to16}: the load port broadcasts).
 * GCC 12 folds _mm512_set1_epi32 of a load into fma's memory operand but not into vpdpbusd's, and the
 * separate vpbroadcastd competes with vpdpbusd for the vector ports. */
INLINE __m512i dpbusd_bcast(__m512i s, __m512i u, const uint8_t *p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(s) : "v"(u), "m"(*(const int32_t(*)[1])p));
    return s;
}

/* chain[b] += block i's products for nb activation rows (a[b]: activation row b's block i). */
INLINE void rl_step(int nb, const __m512i w[8], __m512 dw, const uint8_t *const *a, const float *da,
                    const int32_t *corr, size_t stride, __m512 *chain) {
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) {
        const uint8_t *qs = a[b] + 2;
        /* two chains of four: vpdpbusd's latency would otherwise bound the loop */
        __m512i s2[2] = {_mm512_set1_epi32(corr[(size_t)b * stride]), _mm512_setzero_si512()};
#pragma GCC unroll 8
        for (int t = 0; t < 8; t++) s2[t & 1] = dpbusd_bcast(s2[t & 1], w[t], qs + 4 * t);
        __m512i sum = _mm512_add_epi32(s2[0], s2[1]);
        chain[b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(da[(size_t)b * stride])), chain[b]);
    }
}

/* 16 rows (o, gidx; the next panel's rows at next) x nb activation rows (act, arb) over the nk blocks of the K chunk starting at block k0
 * (a multiple of PKB); run[b] (row order) gets each PKB chunk's even + odd. */
INLINE void rl_tile(uint32_t wt, int nb, const uint8_t *W, const uint8_t *next, const size_t *o, __m512i gidx, const uint8_t *act,
                    size_t arb, int64_t k0, int64_t nk, const float (*da)[RL_KC], const int32_t (*corr)[RL_KC],
                    __m512 *run) {
    const size_t bsz = wt == QT_Q8_0 ? sizeof(block_q8_0) : sizeof(block_q4_0);
    const __m512i unperm = _mm512_load_si512((const void *)g_unperm);
    for (int64_t c0 = 0; c0 < nk; c0 += PKB) {
        int64_t c1 = LAYA_MIN(nk, c0 + PKB);
        __m512 ev[RL_B], od[RL_B];
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) ev[b] = _mm512_setzero_ps(), od[b] = _mm512_setzero_ps();
        for (int64_t i = c0; i < c1; i++) {
            const uint8_t *p = W + (size_t)(k0 + i) * bsz;
            /* The sixteen rows are read as sixteen interleaved streams, which the hardware prefetcher does
             * not keep ahead of (typing Q8_0 at B = 8 ran at half the decode kernel's speed with the weights
             * out of L2); the next panel, the 16 * wrb bytes after this one, is prefetched as one stream
             * instead, 16 * bsz bytes a block. */
            const char *pf = (const char *)next + (size_t)(k0 + i) * 16 * bsz;
            for (size_t q = 0; q < 16 * bsz; q += 64) _mm_prefetch(pf + q, _MM_HINT_T0);
            __m512i w[8];
            __m512 dw;
            rl_block(wt, p, o, gidx, w, &dw);
            const uint8_t *a[RL_B];
#pragma GCC unroll 8
            for (int b = 0; b < nb; b++) a[b] = act + (size_t)b * arb + (size_t)(k0 + i) * sizeof(block_q8_0);
            if (i & 1) rl_step(nb, w, dw, a, &da[0][i], &corr[0][i], RL_KC, od);
            else rl_step(nb, w, dw, a, &da[0][i], &corr[0][i], RL_KC, ev);
        }
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++)
            run[b] = _mm512_add_ps(run[b], _mm512_permutexvar_ps(unperm, _mm512_add_ps(ev[b], od[b])));
    }
}

__attribute__((noinline)) static void mm_q8_rows(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act,
                                                 size_t arb, int B, int64_t K, int64_t r0, int64_t r1, float *y,
                                                 size_t ldy) {
    const int off = wt == QT_Q8_0 ? 128 : 8;
    const int64_t nb_k = K / 32;
    float da[PANEL_MIN_B][RL_KC];
    int32_t corr[PANEL_MIN_B][RL_KC];
    for (int64_t k0 = 0; k0 < nb_k; k0 += RL_KC) {
        int64_t nk = LAYA_MIN(RL_KC, nb_k - k0);
        for (int b = 0; b < B; b++)
            act_blocks((const block_q8_0 *)(act + (size_t)b * arb) + k0, (int)nk, off, da[b], corr[b]);
        for (int64_t row0 = r0; row0 < r1; row0 += 16) {
            int64_t nrows = LAYA_MIN(16, r1 - row0);
            const uint8_t *Wr = W + (size_t)row0 * wrb;
            size_t o[16];
            int32_t go[16];
            for (int r = 0; r < 16; r++) o[r] = (size_t)LAYA_MIN(r, nrows - 1) * wrb;
            for (int l = 0; l < 16; l++) go[l] = (int32_t)o[4 * (l % 4) + l / 4]; /* lane 4j+g: row 4g+j */
            const __m512i gidx = _mm512_loadu_si512((const void *)go);
            const __mmask16 m = nrows == 16 ? 0xffff : (__mmask16)((1u << nrows) - 1);
            for (int b0 = 0; b0 < B; b0 += RL_B) {
                int nb = LAYA_MIN(RL_B, B - b0);
                __m512 run[RL_B];
                for (int b = 0; b < nb; b++) {
                    float *yp = y + (size_t)(b0 + b) * ldy + (size_t)row0;
                    run[b] = k0 > 0 ? _mm512_maskz_loadu_ps(m, yp) : _mm512_setzero_ps();
                }
                const uint8_t *ab = act + (size_t)b0 * arb;
                switch (nb) {
                case 1: rl_tile(wt, 1, Wr, Wr + 16 * wrb, o, gidx, ab, arb, k0, nk, da + b0, corr + b0, run); break;
                case 2: rl_tile(wt, 2, Wr, Wr + 16 * wrb, o, gidx, ab, arb, k0, nk, da + b0, corr + b0, run); break;
                case 3: rl_tile(wt, 3, Wr, Wr + 16 * wrb, o, gidx, ab, arb, k0, nk, da + b0, corr + b0, run); break;
                case 4: rl_tile(wt, 4, Wr, Wr + 16 * wrb, o, gidx, ab, arb, k0, nk, da + b0, corr + b0, run); break;
                case 5: rl_tile(wt, 5, Wr, Wr + 16 * wrb, o, gidx, ab, arb, k0, nk, da + b0, corr + b0, run); break;
                case 6: rl_tile(wt, 6, Wr, Wr + 16 * wrb, o, gidx, ab, arb, k0, nk, da + b0, corr + b0, run); break;
                case 7: rl_tile(wt, 7, Wr, Wr + 16 * wrb, o, gidx, ab, arb, k0, nk, da + b0, corr + b0, run); break;
                default: rl_tile(wt, 8, Wr, Wr + 16 * wrb, o, gidx, ab, arb, k0, nk, da + b0, corr + b0, run); break;
                }
                for (int b = 0; b < nb; b++) _mm512_mask_storeu_ps(y + (size_t)(b0 + b) * ldy + (size_t)row0, m, run[b]);
            }
        }
    }
}

/* ---------------------------------------------------------------- K-quant weights x q8_K */

/* One weight row at a time; a 512-bit vector covers 64 elements (chunk c: elements 64c..64c+63 in order).
 * maddubs (unsigned weight x signed activation, no saturation: at most 63 * 127 * 2) gives 16-bit pair
 * sums; vpdpwssd multiplies them by the 16-bit sub-block scales and accumulates 32-bit sums, so one float
 * multiply-add per super-block and activation row remains, plus one for the minimums (Q2_K, Q4_K, Q5_K:
 * dmin * sum over sub-blocks of min * the activations' 16-element sums). Q3_K and Q6_K keep their weights
 * unsigned (q + 4, q + 32) and take offset * sum(scale * bsum) off the integer sum. */
INLINE void q4k_scales(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t w0, w1, w2;
    memcpy(&w0, s, 4), memcpy(&w1, s + 4, 4), memcpy(&w2, s + 8, 4);
    uint32_t s_lo = w0 & 0x3f3f3f3f, m_lo = w1 & 0x3f3f3f3f;
    uint32_t s_hi = (w2 & 0x0f0f0f0f) | ((w0 >> 2) & 0x30303030);
    uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0f) | ((w1 >> 2) & 0x30303030);
    memcpy(sc, &s_lo, 4), memcpy(sc + 4, &s_hi, 4), memcpy(mn, &m_lo, 4), memcpy(mn + 4, &m_hi, 4);
}

/* 32 bytes at p in both halves, each 64-bit word shifted right by lo (low half) or hi (high half) bits. */
INLINE __m512i bcast_shift(const uint8_t *p, int lo, int hi) {
    const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_srlv_epi64(v, _mm512_set_epi64(hi, hi, hi, hi, lo, lo, lo, lo));
}

/* Bit s of every byte of the 32 bytes at p (broadcast to both halves), s = lo in the low half and hi in
 * the high one, moved to bit `to` of the byte (other bits: garbage) by one rotate of each 64-bit word. */
INLINE __m512i bcast_bit(__m512i v, int lo, int hi, int to) {
    const int rl = (to - lo) & 63, rh = (to - hi) & 63;
    return _mm512_rolv_epi64(v, _mm512_set_epi64(rh, rh, rh, rh, rl, rl, rl, rl));
}

/* The 16-bit scale of each pair lane of chunk c: sub-blocks of 32 (sc16 words 0..7) or of 16 (0..15). */
INLINE __m512i scales32(__m512i sc16, int c) {
    __m512i idx = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16((short)(2 * c))),
                                     _mm256_set1_epi16((short)(2 * c + 1)), 1);
    return _mm512_permutexvar_epi16(idx, sc16);
}
INLINE __m512i scales16(__m512i sc16, int c) {
    const __m512i idx = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1,
                                         0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_permutexvar_epi16(_mm512_add_epi16(idx, _mm512_set1_epi16((short)(4 * c))), sc16);
}

/* Super-block i of a row: the weights as unsigned bytes (wq), the pair-lane scales (scv), the 16-bit
 * factors of the sixteen 16-element activation sums (mf: minimums, or scales for the offset types), d,
 * dmin (0 without minimums) and the integer offset (0, 4 or 32). */
INLINE void k_decode(uint32_t wt, const uint8_t *w, int64_t i, __m512i *wq, __m512i *scv, __m256i *mf, float *d,
                     float *dmin, int *off) {
    const __m512i m4 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3), bit4 = _mm512_set1_epi8(16), bit2 = _mm512_set1_epi8(4);
    *dmin = 0, *off = 0;
    if (wt == QT_Q4_K || wt == QT_Q5_K) {
        const block_q4_K *p4 = (const block_q4_K *)w + i;
        const block_q5_K *p5 = (const block_q5_K *)w + i;
        const uint8_t *qs = wt == QT_Q4_K ? p4->qs : p5->qs;
        *d = _cvtsh_ss(wt == QT_Q4_K ? p4->d : p5->d), *dmin = _cvtsh_ss(wt == QT_Q4_K ? p4->dmin : p5->dmin);
        uint8_t sc[8], mn[8];
        q4k_scales(wt == QT_Q4_K ? p4->scales : p5->scales, sc, mn);
        __m128i sc8 = _mm_loadl_epi64((const __m128i *)sc), mn8 = _mm_loadl_epi64((const __m128i *)mn);
        __m512i sc16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(sc8));
        *mf = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));
        const __m512i qh = wt == QT_Q5_K ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p5->qh)) : m4;
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            wq[c] = _mm512_and_si512(bcast_shift(qs + 32 * c, 0, 4), m4);
            if (wt == QT_Q5_K) /* bit 4 of element e: bit e / 32 of qh[e % 32]; wq | (h & 0x10) */
                wq[c] = _mm512_ternarylogic_epi32(wq[c], bcast_bit(qh, 2 * c, 2 * c + 1, 4), bit4, 0xF8);
            scv[c] = scales32(sc16, c);
        }
    } else if (wt == QT_Q6_K) {
        const block_q6_K *p = (const block_q6_K *)w + i;
        const __m512i m30 = _mm512_set1_epi8(0x30);
        const __m512i sh_q6l = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4), sh_q6h = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
        *d = _cvtsh_ss(p->d), *off = 32;
        __m256i s16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p->scales));
        *mf = s16;
        __m512i sc16 = _mm512_castsi256_si512(s16);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m512i L = _mm512_loadu_si512(p->ql + 64 * h);
            __m512i H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(p->qh + 32 * h)));
            wq[2 * h] = _mm512_or_si512(_mm512_and_si512(L, m4), _mm512_and_si512(_mm512_sllv_epi64(H, sh_q6l), m30));
            wq[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(L, 4), m4),
                                            _mm512_and_si512(_mm512_srlv_epi64(H, sh_q6h), m30));
        }
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) scv[c] = scales16(sc16, c);
    } else { /* Q3_K, Q2_K: chunk c is half c / 2, bit pairs 2k (low 32 bytes) and 2k + 2 (high), k = 2 (c % 2) */
        const uint8_t *qs;
        __m256i sv;
        __m512i hm = m4;
        if (wt == QT_Q3_K) {
            /* scale s = 4j + u (6 bits, minus 32): its low four bits are the low (j < 2) or high nibble of
             * byte u + 4 (j & 1) of words 0-1, its top two bits 2j, 2j + 1 of byte 8 + u */
            const block_q3_K *p = (const block_q3_K *)w + i;
            *d = _cvtsh_ss(p->d), *off = 4, qs = p->qs;
            hm = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p->hmask));
            uint32_t a0, a1, a2;
            memcpy(&a0, p->scales, 4), memcpy(&a1, p->scales + 4, 4), memcpy(&a2, p->scales + 8, 4);
            const uint32_t k4 = 0x0f0f0f0f, k2 = 0x03030303;
            __m128i v = _mm_setr_epi32((int)((a0 & k4) | (a2 & k2) << 4), (int)((a1 & k4) | ((a2 >> 2) & k2) << 4),
                                       (int)(((a0 >> 4) & k4) | ((a2 >> 4) & k2) << 4),
                                       (int)(((a1 >> 4) & k4) | ((a2 >> 6) & k2) << 4));
            sv = _mm256_sub_epi16(_mm256_cvtepu8_epi16(v), _mm256_set1_epi16(32));
            *mf = sv;
        } else {
            const block_q2_K *p = (const block_q2_K *)w + i;
            *d = _cvtsh_ss(p->d), *dmin = _cvtsh_ss(p->dmin), qs = p->qs;
            __m128i sc8 = _mm_loadu_si128((const __m128i *)p->scales);
            sv = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, _mm_set1_epi8(15)));
            *mf = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(15)));
        }
        __m512i sc16 = _mm512_castsi256_si512(sv);
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            const int h = c / 2, k = 2 * (c % 2);
            wq[c] = _mm512_and_si512(bcast_shift(qs + 32 * h, 2 * k, 2 * k + 2), m3);
            if (wt == QT_Q3_K) /* + 4 where bit e / 32 = 4h + k of hmask[e % 32] is set */
                wq[c] = _mm512_ternarylogic_epi32(wq[c], bcast_bit(hm, 4 * h + k, 4 * h + k + 1, 2), bit2, 0xF8);
            scv[c] = scales16(sc16, c);
        }
    }
}

/* Float order, per output. Q4_K, Q6_K: that of the scalar reference, bit for bit (per super-block the
 * exact integer sums, the lanes added as integers, become sum += (d * da) * isum - (dmin * da) * msum, one
 * super-block after the other), which their P16 form below also follows, so a matrix gives the same bits
 * packed or not. Q2_K, Q3_K, Q5_K (never packed): the lanes' partial sums go by fma into 16 float lanes,
 * added up at the end of the row, which saves two horizontal sums per super-block. */
INLINE void k_tile(uint32_t wt, int nb, const uint8_t *w, const block_q8_K *const *a, int64_t nsb, float *res) {
    const int ref_order = wt == QT_Q4_K || wt == QT_Q6_K;
    float acc[TB];
    __m512 accv[TB];
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) acc[b] = 0, accv[b] = _mm512_setzero_ps();
    const size_t bsz = qt_get(wt)->bytes;
    for (int64_t i = 0; i < nsb; i++) {
#pragma GCC unroll 4
        for (size_t o = 0; o < bsz; o += 64) _mm_prefetch((const char *)w + PREFETCH + i * bsz + o, _MM_HINT_T0);
        __m512i wq[4], scv[4];
        __m256i mf;
        float d, dmin;
        int off;
        k_decode(wt, w, i, wq, scv, &mf, &d, &dmin, &off);
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) {
            const block_q8_K *ab = a[b] + i;
            __m512i isum = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                __m512i p16 = _mm512_maddubs_epi16(wq[c], _mm512_loadu_si512(ab->qs + 64 * c));
                isum = _mm512_dpwssd_epi32(isum, p16, scv[c]);
            }
            __m256i bs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)ab->bsums), mf);
            if (off) isum = _mm512_sub_epi32(isum, _mm512_zextsi256_si512(_mm256_mullo_epi32(bs, _mm256_set1_epi32(off))));
            if (ref_order) {
                float t = d * ab->d * (float)_mm512_reduce_add_epi32(isum);
                if (wt == QT_Q4_K) t -= dmin * ab->d * (float)_mm512_reduce_add_epi32(_mm512_zextsi256_si512(bs));
                acc[b] += t;
            } else {
                accv[b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d * ab->d), accv[b]);
                if (wt == QT_Q5_K || wt == QT_Q2_K)
                    accv[b] = _mm512_fnmadd_ps(_mm512_zextps256_ps512(_mm256_cvtepi32_ps(bs)), _mm512_set1_ps(dmin * ab->d), accv[b]);
            }
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) res[b] = ref_order ? acc[b] : _mm512_reduce_add_ps(accv[b]);
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
                case 4: k_tile(wt, 4, w, a, nsb, res); break;
                case 5: k_tile(wt, 5, w, a, nsb, res); break;
                case 6: k_tile(wt, 6, w, a, nsb, res); break;
                case 7: k_tile(wt, 7, w, a, nsb, res); break;
                default: k_tile(wt, 8, w, a, nsb, res); break;
                }
                for (int t = 0; t < nb; t++) y[(size_t)(b0 + t) * ldy + (size_t)r] = res[t];
            }
        }
    }
}

/* ---------------------------------------------------------------- MLX affine weights x F32 */

/* Groups per K chunk: per tile, the sums of x per group and activation row go into a stack array
 * (TB * NGC floats, 8 KB) and are reused by every weight row; per row, the scales as floats (NGC). */
#define NGC 256

/* Scales or biases i .. i+15 (the first n of them, the rest zero) as floats. */
static inline __m512 sb_load16(uint32_t t, const void *p, int64_t i, __mmask16 m) {
    if (t == QT_F32) return _mm512_maskz_loadu_ps(m, (const float *)p + i);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i);
    if (t == QT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* 4-bit decoding, as in kernels_avx2.c: 16 bytes (32 weights) broadcast to the four 128-bit lanes; for
 * piece p (weights 16p .. 16p+15) a byte shuffle puts byte 8p + j/2 into the low byte of lane j and a
 * mask keeps the low nibble in even lanes, the high nibble (16 q) in odd ones, whose sums are scaled by
 * 1/16 at the end. A shuffle, an and and a convert per 16 weights. */
static const uint8_t g_nib_ctl[2][64] __attribute__((aligned(64))) = {
#define L(i) i, 128, 128, 128, i, 128, 128, 128, i + 1, 128, 128, 128, i + 1, 128, 128, 128
    {L(0), L(2), L(4), L(6)}, {L(8), L(10), L(12), L(14)},
#undef L
};

/* One weight row against nb activation rows over ng groups: each 32-weight step is decoded once and
 * multiplied into one partial sum per activation row, which is scaled once per group. Each group's
 * partial sums start afresh, so the out-of-order core overlaps the FMA chains of consecutive groups: one
 * chain per row is enough even for a single row (measured: two chains at B <= 4 were no faster), and
 * the same arithmetic for every nb keeps each output independent of the batch (kernels.h). The bias
 * terms are added by the caller. */
INLINE void mlx_tile(int bits, int group, int nb, const uint32_t *w, const float *sf, const float *const *x,
                     int64_t ng, __m512 *res) {
    const __m512i nib = _mm512_set4_epi32(0xf0, 0x0f, 0xf0, 0x0f);
    __m512 acc[TB];
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) acc[b] = _mm512_setzero_ps();
    for (int64_t g = 0; g < ng; g++) {
        const uint32_t *wg = w + g * (group * bits / 32);
        const int64_t kg = g * group;
        for (int o = 0; o < group * bits / 8; o += 64) _mm_prefetch((const char *)wg + PREFETCH + o, _MM_HINT_T0);
        __m512 part[TB];
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) part[b] = _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int c = 0; c < group / 32; c++) {
            __m512 wv[2];
            if (bits == 4) {
                __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(wg + 4 * c)));
#pragma GCC unroll 2
                for (int p = 0; p < 2; p++)
                    wv[p] = _mm512_cvtepi32_ps(
                        _mm512_and_si512(_mm512_shuffle_epi8(v, _mm512_load_si512((const void *)g_nib_ctl[p])), nib));
            } else {
#pragma GCC unroll 2
                for (int p = 0; p < 2; p++)
                    wv[p] = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(wg + 8 * c + 4 * p))));
            }
#pragma GCC unroll 2
            for (int p = 0; p < 2; p++)
#pragma GCC unroll 8
                for (int b = 0; b < nb; b++)
                    part[b] = _mm512_fmadd_ps(wv[p], _mm512_loadu_ps(x[b] + kg + 32 * c + 16 * p), part[b]);
        }
        __m512 s = _mm512_set1_ps(sf[g]);
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) acc[b] = _mm512_fmadd_ps(part[b], s, acc[b]);
    }
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) res[b] = acc[b];
}

INLINE void mm_mlx(int bits, int group, uint32_t sbt, const uint32_t *W, const void *scales, const void *biases,
                   const float *x, size_t x_stride, int B, int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    const int64_t words = K * bits / 32, ng_row = K / group;
    const size_t sbs = sbt == QT_F32 ? 4 : 2;
    /* undoes the 16 q of odd lanes in the 4-bit decoding */
    const __m512 lane_scale = bits == 4 ? _mm512_set4_ps(0.0625f, 1, 0.0625f, 1) : _mm512_set1_ps(1);
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
                        __m512 v = _mm512_loadu_ps(xs[t] + g * group);
                        for (int k = 16; k < group; k += 16) v = _mm512_add_ps(v, _mm512_loadu_ps(xs[t] + g * group + k));
                        sx[t][g] = _mm512_reduce_add_ps(v);
                    }
                }
                for (int64_t r = c0; r < c1; r++) {
                    const uint32_t *w = W + (size_t)r * (size_t)words + (size_t)(g0 * group * bits / 32);
                    size_t si = ((size_t)r * (size_t)ng_row + (size_t)g0) * sbs;
                    const void *sc = (const uint8_t *)scales + si, *bi = (const uint8_t *)biases + si;
                    /* the scales as floats, and the bias terms: sum over groups of bias * sum(x) */
                    __m512 bt[TB];
                    for (int t = 0; t < nb; t++) bt[t] = _mm512_setzero_ps();
                    for (int64_t g = 0; g < ng; g += 16) {
                        __mmask16 m = ng - g >= 16 ? 0xffff : (__mmask16)((1u << (ng - g)) - 1);
                        _mm512_mask_storeu_ps(sf + g, m, sb_load16(sbt, sc, g, m));
                        __m512 bv = sb_load16(sbt, bi, g, m);
                        for (int t = 0; t < nb; t++) bt[t] = _mm512_fmadd_ps(bv, _mm512_maskz_loadu_ps(m, sx[t] + g), bt[t]);
                    }
                    __m512 res[TB];
                    switch (nb) {
                    case 1: mlx_tile(bits, group, 1, w, sf, xs, ng, res); break;
                    case 2: mlx_tile(bits, group, 2, w, sf, xs, ng, res); break;
                    case 3: mlx_tile(bits, group, 3, w, sf, xs, ng, res); break;
                    case 4: mlx_tile(bits, group, 4, w, sf, xs, ng, res); break;
                    case 5: mlx_tile(bits, group, 5, w, sf, xs, ng, res); break;
                    case 6: mlx_tile(bits, group, 6, w, sf, xs, ng, res); break;
                    case 7: mlx_tile(bits, group, 7, w, sf, xs, ng, res); break;
                    default: mlx_tile(bits, group, 8, w, sf, xs, ng, res); break;
                    }
                    for (int t = 0; t < nb; t++)
                        put(y + (size_t)(b0 + t) * ldy + (size_t)r, _mm512_reduce_add_ps(_mm512_fmadd_ps(res[t], lane_scale, bt[t])),
                            g0 > 0);
                }
            }
        }
    }
}

/* bits and the group size become constants in each instantiation (the inner loops unroll fully); the
 * scale type is only looked at once per 16 groups. */
static void avx512_matmul_mlx(int bits, int group, const uint32_t *W, const void *scales, const void *biases,
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

/* ---------------------------------------------------------------- Q8_0 / Q4_0 packed at load (P16) */

/* The P16 layout (kernels.h) is the rows-in-lanes order of mm_q8_rows stored once at load: a panel of 16
 * rows is one sequential region, block after block, and 32-bit lane r of each vector is row r. Per block
 * the weights cost four (Q4_0: plus the nibble split, 12 operations) or eight aligned loads and one scale
 * convert, shared by the activation rows; per block and activation row, eight vpdpbusd (each with four
 * activation bytes broadcast from memory), one integer add, one convert, one multiply and one fma serve
 * the panel's 16 rows. The activations come in the q8 split format, whose widened scales and offset
 * corrections are computed once per row by quantize_act. There is no K chunking: a panel's running sums
 * stay in registers across K.
 *
 * Float order, per output: that of the kernels above (mm_q8, mm_q8_rows, the panel): each block's exact
 * integer dot product times dw * da by fma into the even or the odd blocks' chain, and every PKB blocks
 * from block 0 the running sum gets even + odd. So a P16 matrix gives the bits of its source matrix. */
#define P16_B 8                   /* activation rows per tile: even and odd chains, 16 vectors */
#define P16_CHUNK (256 * 1024)    /* panel bytes per pass when B > P16_B, reread from L2 by each tile */
#ifndef P16_PF
#define P16_PF PREFETCH           /* bytes ahead in the panel's quants (the scales: as many blocks ahead) */
#endif
/* With several activation rows a block takes 2-4x longer than the L3 / DRAM stream it waits for at B = 1,
 * and the hardware prefetchers then run too little ahead: the quants are also asked into L2 this far
 * ahead. At B = 1 they can also keep too few lines in flight from DRAM, but on a Zen 5 (AMD family 0x1A),
 * where a block's loads bind, the prefetch costs instead; so the 32-element types take their distances
 * from kn_p16_l2_ahead, set per core by kernels.c, and a B = 1 matmul of a streamed set (KN_STREAM,
 * kernels.h) has none. The K-quant panels keep P16_PF_L2. */
#ifndef P16_PF_L2
#define P16_PF_L2 8192
#endif

/* P16 Q4_0 with half of its activation words from shuffles (p16_block; kn_p16_q4_shuf): a type of this
 * file's own, which everything but that branch takes for KN_P16_Q4_0. */
#define P16_Q4_0_SH (0x200 | QT_Q4_0)

/* Whether p16_block takes Q4_0's and Q4_1's high nibbles in place, as 16 x the nibble (x & 0xf0, still an
 * unsigned byte for vpdpbusd), into a chain of their own that one exact shift divides by 16 per activation
 * row: one operation a weight vector instead of a shift and a mask, so worth it while the activation rows
 * are fewer than four. The same integers, so the same bits. */
INLINE int p16_hi16(uint32_t pt, int nb) { return (pt == KN_P16_Q4_0 || pt == P16_Q4_0_SH || pt == KN_P16_Q4_1) && nb <= 3; }

/* IQ4_NL's levels + 128, as unsigned bytes (vpdpbusd's unsigned operand; the -128 * sum correction). */
static const uint8_t g_iq4nl_u8[16] __attribute__((aligned(16))) = {1, 24, 45, 63, 79, 93, 106, 118,
                                                                  129, 141, 153, 166, 181, 197, 217, 241};

/* Per P16 type (a compile-time constant in every instance): quant vectors per block, and which
 * correction starts each lane's integer sum (the unsigned weights' offset times the activations' sum). */
INLINE int p16_qv(uint32_t pt) { /* kn_p16_qvecs, as a constant of each instance */
    return pt == KN_P16_Q4_K ? 37 : pt == KN_P16_Q6_K ? 53 : pt == KN_P16_Q8_0 ? 8 : pt == KN_P16_Q5_0 || pt == KN_P16_Q5_1 ? 5 : 4;
}
INLINE int p16_min(uint32_t pt) { return pt == KN_P16_Q4_1 || pt == KN_P16_Q5_1; }

/* The activation rows' q8 split arrays (kernels.h). */
typedef struct p16_act {
    const uint8_t *qa[P16_B];
    const float *da[P16_B], *dsum[P16_B];
    const int32_t *ca[P16_B];
} p16_act;

/* Block i of the panel into chain[b] for the nb activation rows. The weights become unsigned bytes in
 * w[0..7] (elements 4t.. in w[t], 16 + 4t.. in w[4 + t]): Q4_0, Q4_1 their nibbles; the Q5 types add bit
 * 4 from vector 4 (shifted by t, or 4 - t, under each nibble); IQ4_NL looks its levels + 128 up. */
INLINE void p16_block(uint32_t pt, int nb, const uint8_t *P, int64_t i, const p16_act *A, size_t pf2, __m512 *chain) {
    const size_t qbytes = (size_t)p16_qv(pt) * 64;
    const uint8_t *v = P + kn_p16_q_at(p16_qv(pt), p16_min(pt), i);
    const uint8_t *S = P + kn_p16_s_at(p16_qv(pt), p16_min(pt), i), *M = S + 64;
    /* the lines ahead of this block's, as many as it has: the second block of a pair has its pair's
     * scales (and minimums) after its vectors (kn_p16_at) */
    const size_t span = qbytes + ((i & 1) ? (p16_min(pt) ? 128 : 64) : 0);
#pragma GCC unroll 8
    for (size_t q = 0; q < span; q += 64) _mm_prefetch((const char *)v + P16_PF + q, _MM_HINT_T0);
    if (pf2)
#pragma GCC unroll 8
        for (size_t q = 0; q < span; q += 64) _mm_prefetch((const char *)v + pf2 + q, _MM_HINT_T1);
    __m512i w[8];
    if (pt == KN_P16_Q8_0) {
#pragma GCC unroll 8
        for (int t = 0; t < 8; t++) {
            w[t] = _mm512_load_si512((const void *)(v + 64 * t));
            /* An empty asm that takes and gives w[t] in a register, so that the compiler cannot load it
             * again for each activation row (vpdpbusd's one memory operand is the activation word): at
             * nb = 2-3 GCC 12 did, 8 * nb weight loads a block instead of 8. At nb > 4 it keeps them,
             * and the asm would cost: left alone. */
            if (nb <= 4) __asm__("" : "+v"(w[t]));
        }
    } else {
        const __m512i m4 = _mm512_set1_epi8(15), m16 = _mm512_set1_epi8(16);
        const __m512i H = pt == KN_P16_Q5_0 || pt == KN_P16_Q5_1 ? _mm512_load_si512((const void *)(v + 256)) : m4;
#pragma GCC unroll 4
        for (int t = 0; t < 4; t++) {
            __m512i x = _mm512_load_si512((const void *)(v + 64 * t));
            w[t] = _mm512_and_si512(x, m4);
            if (p16_hi16(pt, nb)) w[4 + t] = _mm512_andnot_si512(m4, x); /* 16 x the high nibble */
            else w[4 + t] = _mm512_and_si512(_mm512_srli_epi16(x, 4), m4);
            if (pt == KN_P16_Q5_0 || pt == KN_P16_Q5_1) { /* w | (h & 0x10) */
                w[t] = _mm512_ternarylogic_epi32(w[t], _mm512_srli_epi32(H, t), m16, 0xF8);
                w[4 + t] = _mm512_ternarylogic_epi32(w[4 + t], _mm512_slli_epi32(H, 4 - t), m16, 0xF8);
            }
            if (pt == KN_P16_IQ4_NL) {
                const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)g_iq4nl_u8));
                w[t] = _mm512_shuffle_epi8(lut, w[t]);
                w[4 + t] = _mm512_shuffle_epi8(lut, w[4 + t]);
            }
        }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)S));
    __m512 mw = _mm512_setzero_ps();
    if (p16_min(pt)) mw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)M));
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) {
        const uint8_t *qs = A->qa[b] + (size_t)i * 32;
        /* two chains of four: vpdpbusd's latency would otherwise bound the loop; w[4..7] are elements
         * 16 + 4t.. (the high nibbles, Q8_0's second half) */
        const int32_t c = p16_min(pt) ? 0 : pt == KN_P16_Q5_0 ? 2 * A->ca[b][i] : A->ca[b][i];
        __m512i s2[2] = {_mm512_set1_epi32(c), _mm512_setzero_si512()};
        if (pt == P16_Q4_0_SH) {
            /* Half of the activation words from one 16-byte load and vpshufd, not from eight {1to16} operands (a
             * Zen 5 only: kn_p16_q4_shuf): at B = 4 a block's loads (four weight vectors, 32 broadcasts, the
             * corrections and scales, eight prefetches) outnumber what the two load ports take in the time of its
             * 32 vpdpbusd. The same bits. Other types, and a Zen 4 (three load ports), are faster with the
             * memory operands. */
            const __m512i x1 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(qs + 16)));
            s2[0] = dpbusd_bcast(s2[0], w[0], qs);
            s2[1] = _mm512_dpbusd_epi32(s2[1], w[4], _mm512_shuffle_epi32(x1, _MM_PERM_AAAA));
            s2[0] = dpbusd_bcast(s2[0], w[1], qs + 4);
            s2[1] = _mm512_dpbusd_epi32(s2[1], w[5], _mm512_shuffle_epi32(x1, _MM_PERM_BBBB));
            s2[0] = dpbusd_bcast(s2[0], w[2], qs + 8);
            s2[1] = _mm512_dpbusd_epi32(s2[1], w[6], _mm512_shuffle_epi32(x1, _MM_PERM_CCCC));
            s2[0] = dpbusd_bcast(s2[0], w[3], qs + 12);
            s2[1] = _mm512_dpbusd_epi32(s2[1], w[7], _mm512_shuffle_epi32(x1, _MM_PERM_DDDD));
        } else if (p16_hi16(pt, nb)) { /* the low nibbles' chain, and 16 x the high ones' */
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) s2[t >> 2] = dpbusd_bcast(s2[t >> 2], w[t], qs + 4 * t);
        } else {
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) s2[t & 1] = dpbusd_bcast(s2[t & 1], w[t], qs + 4 * t);
        }
        /* with the high nibbles in place s2[1] is a multiple of 16, so the shift is exact */
        __m512i sum = p16_hi16(pt, nb) ? _mm512_add_epi32(s2[0], _mm512_srai_epi32(s2[1], 4)) : _mm512_add_epi32(s2[0], s2[1]);
        chain[b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(A->da[b][i])), chain[b]);
        if (p16_min(pt)) chain[b] = _mm512_fmadd_ps(mw, _mm512_set1_ps(A->dsum[b][i]), chain[b]);
    }
}

/* pf2: the L2 prefetch's distance in bytes, or 0 for none */
/* The nb activation rows' arrays (kernels.h, q8 split), each row arb bytes apart, for a panel type. */
INLINE void p16_act_init(uint32_t pt, int nb, const uint8_t *act, size_t arb, int64_t nbk, p16_act *A) {
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) {
        A->qa[b] = act + (size_t)b * arb;
        A->da[b] = (const float *)(A->qa[b] + nbk * 32);
        A->ca[b] = (const int32_t *)(A->da[b] + nbk) + (pt == KN_P16_Q8_0 || pt == KN_P16_IQ4_NL ? nbk : 0);
        A->dsum[b] = (const float *)((const int32_t *)(A->da[b] + nbk) + 2 * nbk);
    }
}

INLINE void p16_tile(uint32_t pt, int nb, const uint8_t *P, int64_t nbk, const uint8_t *act, size_t arb, size_t pf2,
                     __m512 *run) {
    p16_act A;
    p16_act_init(pt, nb, act, arb, nbk, &A);
#pragma GCC unroll 8
    for (int b = 0; b < nb; b++) run[b] = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < nbk; c0 += PKB) {
        const int64_t c1 = LAYA_MIN(nbk, c0 + PKB);
        __m512 ev[P16_B], od[P16_B];
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) ev[b] = _mm512_setzero_ps(), od[b] = _mm512_setzero_ps();
        /* blocks in pairs, the even one's products to ev and the odd one's to od (c0 is even): each call
         * names its chains at compile time, so they stay in registers (a chain pointer chosen per block
         * kept them in memory) */
        int64_t i = c0;
        for (; i + 1 < c1; i += 2) {
            p16_block(pt, nb, P, i, &A, pf2, ev);
            p16_block(pt, nb, P, i + 1, &A, pf2, od);
        }
        if (i < c1) p16_block(pt, nb, P, i, &A, pf2, ev);
#pragma GCC unroll 8
        for (int b = 0; b < nb; b++) run[b] = _mm512_add_ps(run[b], _mm512_add_ps(ev[b], od[b]));
    }
}

INLINE void p16_tile_nb(uint32_t pt, int nb, const uint8_t *P, int64_t nbk, const uint8_t *act, size_t arb, size_t pf2,
                        __m512 *run) {
    switch (nb) {
    case 1: p16_tile(pt, 1, P, nbk, act, arb, pf2, run); break;
    case 2: p16_tile(pt, 2, P, nbk, act, arb, pf2, run); break;
    case 3: p16_tile(pt, 3, P, nbk, act, arb, pf2, run); break;
    case 4: p16_tile(pt, 4, P, nbk, act, arb, pf2, run); break;
    case 5: p16_tile(pt, 5, P, nbk, act, arb, pf2, run); break;
    case 6: p16_tile(pt, 6, P, nbk, act, arb, pf2, run); break;
    case 7: p16_tile(pt, 7, P, nbk, act, arb, pf2, run); break;
    default: p16_tile(pt, 8, P, nbk, act, arb, pf2, run); break;
    }
}

/* ---------------------------------------------------------------- Q4_K / Q6_K packed at load (P16) */

/* A panel's super-block (kernels.c k_lane gives the vector order) against up to P16K_B activation rows in
 * the q8_K split format: 32-bit lane r of every vector is weight row r, so the weights are decoded once
 * for the tile and each sub-block's integer dot product is 8 (Q4_K, 32 elements) or 4 (Q6_K, 16) vpdpbusd
 * with four activation bytes broadcast, times the sub-block's integer scale (vpmulld), summed exactly;
 * Q4_K's minimums take four vpdpwssd on the activations' 32-element sums. Then the reference's float
 * step: run += (d * da) * isum - (dmin * da) * msum, so every output has the scalar table's bits. */
#define P16K_B 4

typedef struct p16k_act {
    const int8_t *qs[P16K_B];
    const float *d[P16K_B];
    const int32_t *bs[P16K_B];
    const int32_t *pairs[P16K_B]; /* the int16 pairs of 32-element sums, as 32-bit words */
} p16k_act;

/* Signed byte k of every 32-bit lane of v as 32-bit integers. */
INLINE __m512i lane_byte_s(__m512i v, int k) { return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * k), 24); }

INLINE void p16k_super(uint32_t pt, int nb, const uint8_t *v, int64_t i, const p16k_act *A, __m512 *run) {
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512i isum[P16K_B], msum[P16K_B];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) isum[b] = _mm512_setzero_si512(), msum[b] = _mm512_setzero_si512();
    const size_t sbb = (size_t)p16_qv(pt) * 64;
#pragma GCC unroll 8
    for (size_t o = 0; o < sbb; o += 64) _mm_prefetch((const char *)v + P16_PF + o, _MM_HINT_T0);
#pragma GCC unroll 8
    for (size_t o = 0; o < sbb; o += 64) _mm_prefetch((const char *)v + P16_PF_L2 + o, _MM_HINT_T1);
    __m512 dv, mv = _mm512_setzero_ps();
    if (pt == KN_P16_Q4_K) {
        const __m512i s03 = _mm512_load_si512((const void *)(v + 64 * 32)), s47 = _mm512_load_si512((const void *)(v + 64 * 33));
        /* Sub-block j = 2c + hi: the low (hi = 0) or high nibbles of vectors 8c..8c + 7. One sub-block at
         * a time keeps 8 decoded vectors live, not 16, which with the tile's sums spilled. The integer
         * sums are exact, so their order is free: the same bits. */
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            const int c = j / 2, hi = j % 2;
            __m512i w[8];
#pragma GCC unroll 8
            for (int t = 0; t < 8; t++) {
                __m512i x = _mm512_load_si512((const void *)(v + 64 * (8 * c + t)));
                w[t] = _mm512_and_si512(hi ? _mm512_srli_epi16(x, 4) : x, m4);
            }
            /* scales are unsigned 6-bit bytes */
            const __m512i sc =
                _mm512_and_si512(_mm512_srli_epi32(j < 4 ? s03 : s47, 8 * (j % 4)), _mm512_set1_epi32(255));
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++) {
                const int8_t *q = A->qs[b] + (size_t)i * QK_K + 32 * j;
                __m512i e[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
#pragma GCC unroll 8
                for (int t = 0; t < 8; t++) e[t & 1] = dpbusd_bcast(e[t & 1], w[t], (const uint8_t *)q + 4 * t);
                isum[b] = _mm512_add_epi32(isum[b], _mm512_mullo_epi32(_mm512_add_epi32(e[0], e[1]), sc));
            }
        }
        const __m512i lo16 = _mm512_set1_epi32(0x00ff00ff);
        const __m512i n03 = _mm512_load_si512((const void *)(v + 64 * 34)), n47 = _mm512_load_si512((const void *)(v + 64 * 35));
        const __m512i mp[4] = {_mm512_and_si512(n03, lo16), _mm512_and_si512(_mm512_srli_epi32(n03, 8), lo16),
                               _mm512_and_si512(n47, lo16), _mm512_and_si512(_mm512_srli_epi32(n47, 8), lo16)};
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++)
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) msum[b] = _mm512_dpwssd_epi32(msum[b], mp[k], _mm512_set1_epi32(A->pairs[b][4 * i + k]));
        dv = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(v + 64 * 36)));
        mv = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(v + 64 * 36 + 32)));
    } else {
        const __m512i m30 = _mm512_set1_epi8(0x30);
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++)
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) { /* elements 128h + 32k..: sub-blocks 8h + 2k, 8h + 2k + 1 */
                __m512i w[8];
#pragma GCC unroll 8
                for (int t = 0; t < 8; t++) {
                    __m512i x = _mm512_load_si512((const void *)(v + 64 * (8 * (2 * h + (k & 1)) + t)));
                    __m512i hq = _mm512_load_si512((const void *)(v + 64 * (32 + 8 * h + t)));
                    __m512i nib = k < 2 ? _mm512_and_si512(x, m4) : _mm512_and_si512(_mm512_srli_epi16(x, 4), m4);
                    __m512i hb = k == 0 ? _mm512_slli_epi16(hq, 4) : k == 1 ? _mm512_slli_epi16(hq, 2) : k == 2 ? hq : _mm512_srli_epi16(hq, 2);
                    w[t] = _mm512_ternarylogic_epi32(nib, hb, m30, 0xF8); /* nib | (hb & 0x30): q + 32 */
                }
                const int s0 = 8 * h + 2 * k, s1 = s0 + 1;
                const __m512i sc0 = lane_byte_s(_mm512_load_si512((const void *)(v + 64 * (48 + s0 / 4))), s0 % 4);
                const __m512i sc1 = lane_byte_s(_mm512_load_si512((const void *)(v + 64 * (48 + s1 / 4))), s1 % 4);
#pragma GCC unroll 4
                for (int b = 0; b < nb; b++) {
                    const int8_t *q = A->qs[b] + (size_t)i * QK_K + 128 * h + 32 * k;
                    const int32_t *bs = A->bs[b] + 16 * i;
                    __m512i e0 = _mm512_set1_epi32(-32 * bs[s0]), e1 = _mm512_set1_epi32(-32 * bs[s1]);
#pragma GCC unroll 4
                    for (int t = 0; t < 4; t++) {
                        e0 = dpbusd_bcast(e0, w[t], (const uint8_t *)q + 4 * t);
                        e1 = dpbusd_bcast(e1, w[4 + t], (const uint8_t *)q + 16 + 4 * t);
                    }
                    isum[b] = _mm512_add_epi32(isum[b], _mm512_add_epi32(_mm512_mullo_epi32(e0, sc0), _mm512_mullo_epi32(e1, sc1)));
                }
            }
        dv = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(v + 64 * 52)));
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
        const __m512 da = _mm512_set1_ps(A->d[b][i]);
        __m512 t = _mm512_mul_ps(_mm512_mul_ps(dv, da), _mm512_cvtepi32_ps(isum[b]));
        if (pt == KN_P16_Q4_K) t = _mm512_sub_ps(t, _mm512_mul_ps(_mm512_mul_ps(mv, da), _mm512_cvtepi32_ps(msum[b])));
        run[b] = _mm512_add_ps(run[b], t);
    }
}

/* The nb activation rows' arrays (kernels.h, q8_K split), each row arb bytes apart. */
INLINE void p16k_act_init(int nb, const uint8_t *act, size_t arb, int64_t nsb, p16k_act *A) {
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
        A->qs[b] = (const int8_t *)(act + (size_t)b * arb);
        A->d[b] = (const float *)(A->qs[b] + nsb * QK_K);
        A->bs[b] = (const int32_t *)(A->d[b] + nsb);
        A->pairs[b] = A->bs[b] + 16 * nsb;
    }
}

INLINE void p16k_tile(uint32_t pt, int nb, const uint8_t *P, int64_t nsb, const uint8_t *act, size_t arb, __m512 *run) {
    p16k_act A;
    p16k_act_init(nb, act, arb, nsb, &A);
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) run[b] = _mm512_setzero_ps();
    const size_t sbb = (size_t)p16_qv(pt) * 64;
    for (int64_t i = 0; i < nsb; i++) p16k_super(pt, nb, P + (size_t)i * sbb, i, &A, run);
}

INLINE void p16k_tile_nb(uint32_t pt, int nb, const uint8_t *P, int64_t nsb, const uint8_t *act, size_t arb, __m512 *run) {
    switch (nb) {
    case 1: p16k_tile(pt, 1, P, nsb, act, arb, run); break;
    case 2: p16k_tile(pt, 2, P, nsb, act, arb, run); break;
    case 3: p16k_tile(pt, 3, P, nsb, act, arb, run); break;
    default: p16k_tile(pt, 4, P, nsb, act, arb, run); break;
    }
}

/* Two panels at a time, at B = 2-4, and at B = 1 on a set streamed from DRAM (KN_STREAM): block i of two
 * Q4_0 or Q8_0 panels (P and P + d; pb: a panel's bytes) against nb activation rows, each activation word
 * broadcast once for both panels' vpdpbusd; the other types (only at B = 1 from DRAM) take each panel's
 * p16_block in turn. ch[j] takes panel j's float steps, those of p16_block, so the bits are the same.
 * From DRAM, two streams a thread instead of one keep more lines on their way; from L3 it pays at B >= 2
 * but not at B = 1; four panels, or B = 8 as two four-row tiles, were slower. The software prefetch of
 * each panel goes on past its end to the panel two on, the next one that stream reads. At B = 1 the two
 * panels come from the two halves of the thread's rows (d: their distance in bytes), so that each stream
 * runs on through its half as the floor's read loop does; at B = 4 adjacent panels are faster. */
INLINE void p16_block2(uint32_t pt, int nb, const uint8_t *P, size_t pb, size_t d, int64_t i, const p16_act *A, size_t pf2,
                       __m512 (*ch)[4]) {
    if (pt != KN_P16_Q4_0 && pt != KN_P16_Q8_0) {
        p16_block(pt, nb, P, i, A, pf2, ch[0]);
        p16_block(pt, nb, P + d, i, A, pf2, ch[1]);
        return;
    }
    const int qv = p16_qv(pt);
    const size_t o = kn_p16_q_at(qv, 0, i), span = (size_t)qv * 64 + ((i & 1) ? 64 : 0);
    /* each panel's stream goes on two panels later: an address past the panel's end skips the other's */
    const size_t a1 = o + P16_PF + (d == pb ? (o + P16_PF) / pb * pb : 0);
#pragma GCC unroll 2
    for (int j = 0; j < 2; j++)
#pragma GCC unroll 8
        for (size_t q = 0; q < span; q += 64) _mm_prefetch((const char *)P + a1 + j * d + q, _MM_HINT_T0);
    if (pf2) {
        const size_t a2 = o + pf2 + (d == pb ? (o + pf2) / pb * pb : 0);
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++)
#pragma GCC unroll 8
            for (size_t q = 0; q < span; q += 64) _mm_prefetch((const char *)P + a2 + j * d + q, _MM_HINT_T1);
    }
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512i s[2][4];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
        const __m512i c = _mm512_set1_epi32(A->ca[b][i]);
        s[0][b] = s[1][b] = c;
    }
    /* w[t] is elements 4t.. (p16_block): Q4_0's x_t gives t (low nibbles) and 4 + t (high) */
#pragma GCC unroll 8
    for (int t = 0; t < qv; t++) {
        __m512i w[2][2];
        const int nw = qv == 4 ? 2 : 1, tw[2] = {t, qv == 4 ? 4 + t : t};
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            const __m512i x = _mm512_load_si512((const void *)(P + o + j * d + 64 * t));
            if (qv == 4) w[j][0] = _mm512_and_si512(x, m4), w[j][1] = _mm512_and_si512(_mm512_srli_epi16(x, 4), m4);
            else w[j][0] = x;
        }
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) {
            const uint8_t *qs = A->qa[b] + (size_t)i * 32;
#pragma GCC unroll 2
            for (int k = 0; k < nw; k++) {
                int32_t word;
                memcpy(&word, qs + 4 * tw[k], 4);
                const __m512i bc = _mm512_set1_epi32(word);
                s[0][b] = _mm512_dpbusd_epi32(s[0][b], w[0][k], bc);
                s[1][b] = _mm512_dpbusd_epi32(s[1][b], w[1][k], bc);
            }
        }
    }
#pragma GCC unroll 2
    for (int j = 0; j < 2; j++) {
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(P + kn_p16_s_at(qv, 0, i) + j * d)));
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++)
            ch[j][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[j][b]), _mm512_mul_ps(dw, _mm512_set1_ps(A->da[b][i])), ch[j][b]);
    }
}

/* p16_tile for two panels at once, P and P + d (nb <= 4): run[j] gets panel j's sums. */
INLINE void p16_tile2(uint32_t pt, int nb, const uint8_t *P, size_t pb, size_t d, int64_t nbk, const uint8_t *act, size_t arb,
                      size_t pf2, __m512 (*run)[4]) {
    p16_act A;
    p16_act_init(pt, nb, act, arb, nbk, &A);
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) run[0][b] = run[1][b] = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < nbk; c0 += PKB) {
        const int64_t c1 = LAYA_MIN(nbk, c0 + PKB);
        __m512 ev[2][4], od[2][4];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) ev[0][b] = od[0][b] = ev[1][b] = od[1][b] = _mm512_setzero_ps();
        int64_t i = c0;
        for (; i + 1 < c1; i += 2) {
            p16_block2(pt, nb, P, pb, d, i, &A, pf2, ev);
            p16_block2(pt, nb, P, pb, d, i + 1, &A, pf2, od);
        }
        if (i < c1) p16_block2(pt, nb, P, pb, d, i, &A, pf2, ev);
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++)
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++) run[j][b] = _mm512_add_ps(run[j][b], _mm512_add_ps(ev[j][b], od[j][b]));
    }
}

__attribute__((noinline)) static void p16_tile2_nb(uint32_t pt, int nb, const uint8_t *P, size_t pb, size_t d, int64_t nbk,
                                                   const uint8_t *act, size_t arb, size_t pf2, __m512 (*run)[4]) {
#define T2(t)                                                                                                          \
    switch (nb) {                                                                                                      \
    case 1: p16_tile2(t, 1, P, pb, d, nbk, act, arb, pf2, run); break;                                                 \
    case 2: p16_tile2(t, 2, P, pb, d, nbk, act, arb, pf2, run); break;                                                 \
    case 3: p16_tile2(t, 3, P, pb, d, nbk, act, arb, pf2, run); break;                                                 \
    default: p16_tile2(t, 4, P, pb, d, nbk, act, arb, pf2, run); break;                                                \
    }
    switch (pt) { /* the other types only at nb = 1 */
    case KN_P16_Q8_0: T2(KN_P16_Q8_0) break;
    case KN_P16_Q4_1: p16_tile2(KN_P16_Q4_1, 1, P, pb, d, nbk, act, arb, pf2, run); break;
    case KN_P16_Q5_0: p16_tile2(KN_P16_Q5_0, 1, P, pb, d, nbk, act, arb, pf2, run); break;
    case KN_P16_Q5_1: p16_tile2(KN_P16_Q5_1, 1, P, pb, d, nbk, act, arb, pf2, run); break;
    case KN_P16_IQ4_NL: p16_tile2(KN_P16_IQ4_NL, 1, P, pb, d, nbk, act, arb, pf2, run); break;
    default: T2(KN_P16_Q4_0) break;
    }
#undef T2
}

/* One activation row against two Q4_K or Q6_K panels, P and P + d, their super-blocks taken in turn: the
 * two-stream read of p16_tile2 at B = 1 on a streamed set, each panel's float steps p16k_tile's, so the
 * same bits. */
INLINE void p16k_tile2(uint32_t pt, const uint8_t *P, size_t d, int64_t nsb, const uint8_t *act, __m512 (*run)[4]) {
    p16k_act A;
    p16k_act_init(1, act, 0, nsb, &A);
    run[0][0] = run[1][0] = _mm512_setzero_ps();
    const size_t sbb = (size_t)p16_qv(pt) * 64;
    for (int64_t i = 0; i < nsb; i++) {
        p16k_super(pt, 1, P + (size_t)i * sbb, i, &A, run[0]);
        p16k_super(pt, 1, P + d + (size_t)i * sbb, i, &A, run[1]);
    }
}

/* Stores a tile's sums, rows [lo, hi) of the panel at row 16p, onto y's values with `add`. */
INLINE void p16_store(const __m512 *run, int nb, int64_t p, int64_t r0, int64_t r1, float *y, size_t ldy, int add) {
    const int64_t lo = LAYA_MAX(r0 - 16 * p, 0), hi = LAYA_MIN(r1 - 16 * p, 16);
    const __mmask16 m = (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
    for (int b = 0; b < nb; b++) {
        float *o = y + (size_t)b * ldy + (size_t)(16 * p);
        _mm512_mask_storeu_ps(o, m, add ? _mm512_add_ps(_mm512_maskz_loadu_ps(m, o), run[b]) : run[b]);
    }
}

/* Any P16 matrix (the K types' tiles are P16K_B activation rows, the others' P16_B). */
INLINE void mm_p16_t(uint32_t pt, const uint8_t *W, const uint8_t *act, size_t arb, int B, int64_t K, int64_t r0,
                     int64_t r1, float *y, size_t ldy, int stream) {
    const int kt = pt == KN_P16_Q4_K || pt == KN_P16_Q6_K, tb = kt ? P16K_B : P16_B;
    const int l2 = B == 1 ? (stream ? -1 : 0) : stream ? 2 : 1;
    const size_t pf2 = l2 < 0 ? 0 : (size_t)atomic_load_explicit(&kn_p16_l2_ahead[l2], memory_order_relaxed);
    const size_t pb = kn_pack_panel_bytes(pt == P16_Q4_0_SH ? KN_P16_Q4_0 : pt, K);
    const int64_t nbk = K / (kt ? QK_K : 32), p0 = r0 / 16, p1 = (r1 + 15) / 16;
    const int64_t pc = B <= tb ? p1 - p0 : LAYA_MAX(1, (int64_t)(P16_CHUNK / pb));
    for (int64_t c0 = p0; c0 < p1; c0 += pc) {
        const int64_t c1 = LAYA_MIN(p1, c0 + pc);
        for (int b0 = 0; b0 < B; b0 += tb) {
            const int nb = LAYA_MIN(tb, B - b0);
            int64_t p = c0;
            /* two panels at a time (p16_block2): Q4_0 and Q8_0 at nb <= 4 where the set streams from DRAM
             * or nb >= 2, every type at nb = 1 where it streams */
            const int pair = pt == KN_P16_Q4_0 || pt == P16_Q4_0_SH || pt == KN_P16_Q8_0;
            if (nb == 1 ? stream : pair && nb <= 4) {
                /* one activation row: the pairs are panels j and h + j of the range's two halves, two
                 * streams that each run on through their half; more rows: adjacent panels */
                const int64_t np2 = (c1 - c0) / 2, h = nb == 1 ? np2 : 1;
                for (int64_t j = 0; j < np2; j++) {
                    const int64_t pa = nb == 1 ? c0 + j : c0 + 2 * j;
                    const uint8_t *P = W + (size_t)pa * pb;
                    __m512 run2[2][4];
                    if (kt) p16k_tile2(pt, P, (size_t)h * pb, nbk, act + (size_t)b0 * arb, run2);
                    else p16_tile2_nb(pt == P16_Q4_0_SH ? KN_P16_Q4_0 : pt, nb, P, pb, (size_t)h * pb, nbk,
                                      act + (size_t)b0 * arb, arb, pf2, run2);
                    p16_store(run2[0], nb, pa, r0, r1, y + (size_t)b0 * ldy, ldy, 0);
                    p16_store(run2[1], nb, pa + h, r0, r1, y + (size_t)b0 * ldy, ldy, 0);
                }
                p = c0 + 2 * np2;
            }
            for (; p < c1; p++) {
                __m512 run[P16_B];
                if (kt) p16k_tile_nb(pt, nb, W + (size_t)p * pb, nbk, act + (size_t)b0 * arb, arb, run);
                else p16_tile_nb(pt, nb, W + (size_t)p * pb, nbk, act + (size_t)b0 * arb, arb, pf2, run);
                p16_store(run, nb, p, r0, r1, y + (size_t)b0 * ldy, ldy, 0);
            }
        }
    }
}

__attribute__((noinline)) static void mm_p16(uint32_t pt, const uint8_t *W, const uint8_t *act, size_t arb, int B,
                                             int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy, int stream) {
    switch (pt) {
    case KN_P16_Q4_0:
        if (atomic_load_explicit(&kn_p16_q4_shuf, memory_order_relaxed))
            mm_p16_t(P16_Q4_0_SH, W, act, arb, B, K, r0, r1, y, ldy, stream);
        else
            mm_p16_t(KN_P16_Q4_0, W, act, arb, B, K, r0, r1, y, ldy, stream);
        return;
    case KN_P16_Q4_1: mm_p16_t(KN_P16_Q4_1, W, act, arb, B, K, r0, r1, y, ldy, stream); return;
    case KN_P16_Q5_0: mm_p16_t(KN_P16_Q5_0, W, act, arb, B, K, r0, r1, y, ldy, stream); return;
    case KN_P16_Q5_1: mm_p16_t(KN_P16_Q5_1, W, act, arb, B, K, r0, r1, y, ldy, stream); return;
    case KN_P16_IQ4_NL: mm_p16_t(KN_P16_IQ4_NL, W, act, arb, B, K, r0, r1, y, ldy, stream); return;
    case KN_P16_Q4_K: mm_p16_t(KN_P16_Q4_K, W, act, arb, B, K, r0, r1, y, ldy, stream); return;
    case KN_P16_Q6_K: mm_p16_t(KN_P16_Q6_K, W, act, arb, B, K, r0, r1, y, ldy, stream); return;
    default: mm_p16_t(KN_P16_Q8_0, W, act, arb, B, K, r0, r1, y, ldy, stream); return;
    }
}

/* Q4_1, Q5_0, Q5_1 and IQ4_NL matrices that were not packed at load (LAYA_PACK=0, or no memory for the
 * copy), with their own activation format (block_q8_0 / block_q8_s): each 16-row panel is packed here
 * PKB blocks of K at a time into a stack buffer, the activations of up to P16_B rows regrouped into the
 * q8 split format of those blocks, and both run through the P16 kernel. Each piece of PKB blocks is one
 * of that kernel's float chunks and is added to the output in K order, so the outputs are the bits the
 * packed matrix gives. Slower than the packed matrix: the packing is redone on every call. */
#define SRC_BUF (PKB * 5 * 64 + 2 * PKB * 32)
static void mm_p16_src(uint32_t wt, const uint8_t *W, size_t wrb, const uint8_t *act, size_t arb, int B, int64_t K,
                       int64_t r0, int64_t r1, float *y, size_t ldy) {
    const uint32_t pt = kn_p16_type(wt);
    const int64_t nbk = K / 32;
    const size_t bsz = (size_t)qt_get(wt)->bytes, absz = p16_min(pt) ? sizeof(block_q8_s) : sizeof(block_q8_0);
    const size_t sarb = PKB * (32 + 16); /* one piece's q8 split row */
    uint8_t wbuf[SRC_BUF] __attribute__((aligned(64)));
    uint8_t abuf[P16_B * PKB * (32 + 16)] __attribute__((aligned(64)));
    for (int64_t p = r0 / 16; p < (r1 + 15) / 16; p++) {
        const int64_t rows = LAYA_MIN(r1, 16 * p + 16) - 16 * p;
        for (int64_t k0 = 0; k0 < nbk; k0 += PKB) {
            const int kn = (int)LAYA_MIN(PKB, nbk - k0);
            kn_pack(pt, W + (size_t)(16 * p) * wrb + (size_t)k0 * bsz, wrb, rows, 32 * kn, 0, 1, wbuf);
            for (int b0 = 0; b0 < B; b0 += P16_B) {
                const int nb = LAYA_MIN(P16_B, B - b0);
                for (int b = 0; b < nb; b++) {
                    int8_t *qs = (int8_t *)(abuf + (size_t)b * sarb);
                    float *ds = (float *)(qs + kn * 32), *dsum = (float *)((int32_t *)(ds + kn) + 2 * kn);
                    int32_t *c4 = (int32_t *)(ds + kn), *c8 = c4 + kn;
                    for (int i = 0; i < kn; i++) {
                        const uint8_t *ab = act + (size_t)(b0 + b) * arb + (size_t)(k0 + i) * absz;
                        const int8_t *aq = p16_min(pt) ? ((const block_q8_s *)ab)->qs : ((const block_q8_0 *)ab)->qs;
                        int sum = 0;
                        memcpy(qs + 32 * i, aq, 32);
                        for (int j = 0; j < 32; j++) sum += aq[j];
                        ds[i] = fp16_to_f32(*(const qt_half *)ab);
                        c4[i] = -8 * sum, c8[i] = -128 * sum, dsum[i] = ds[i] * (float)sum;
                    }
                }
                __m512 run[P16_B];
                switch (pt) {
                case KN_P16_Q4_1: p16_tile_nb(KN_P16_Q4_1, nb, wbuf, kn, abuf, sarb, 0, run); break;
                case KN_P16_Q5_0: p16_tile_nb(KN_P16_Q5_0, nb, wbuf, kn, abuf, sarb, 0, run); break;
                case KN_P16_Q5_1: p16_tile_nb(KN_P16_Q5_1, nb, wbuf, kn, abuf, sarb, 0, run); break;
                default: p16_tile_nb(KN_P16_IQ4_NL, nb, wbuf, kn, abuf, sarb, 0, run); break;
                }
                p16_store(run, nb, p, r0, r1, y + (size_t)b0 * ldy, ldy, k0 > 0);
            }
        }
    }
}

/* ---------------------------------------------------------------- table */

static void avx512_matmul(uint32_t wtype, const void *W, size_t w_row_bytes, const void *act, size_t act_row_bytes,
                          int B, int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy) {
    if (B <= 0 || r1 <= r0) return;
    const int stream = (wtype & KN_STREAM) != 0;
    wtype &= ~KN_STREAM;
    switch (wtype) {
    case QT_F32: mm_float(QT_F32, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_F16: mm_float(QT_F16, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_BF16: mm_float(QT_BF16, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_Q8_0:
    case QT_Q4_0:
        if (B >= PANEL_MIN_B) mm_q8_panel(wtype, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy);
        else if (B >= RL_MIN_B) mm_q8_rows(wtype, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy);
        else if (wtype == QT_Q8_0) mm_q8(QT_Q8_0, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy);
        else mm_q8(QT_Q4_0, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy);
        return;
    case KN_P16_Q4_0:
    case KN_P16_Q4_1:
    case KN_P16_Q5_0:
    case KN_P16_Q5_1:
    case KN_P16_Q8_0:
    case KN_P16_IQ4_NL:
    case KN_P16_Q4_K:
    case KN_P16_Q6_K: mm_p16(wtype, W, act, act_row_bytes, B, K, r0, r1, y, ldy, stream); return;
    case QT_Q4_1:
    case QT_Q5_0:
    case QT_Q5_1:
    case QT_IQ4_NL: mm_p16_src(wtype, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_Q2_K: mm_k(QT_Q2_K, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_Q3_K: mm_k(QT_Q3_K, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_Q4_K: mm_k(QT_Q4_K, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_Q5_K: mm_k(QT_Q5_K, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    case QT_Q6_K: mm_k(QT_Q6_K, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    default: kn_ref_ops.matmul(wtype, W, w_row_bytes, act, act_row_bytes, B, K, r0, r1, y, ldy); return;
    }
}

static float avx512_dot_f32(const float *a, const float *b, int64_t n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static void avx512_axpy_f32(float *y, float a, const float *x, int64_t n) {
    __m512 av = _mm512_set1_ps(a);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
    }
}

/* exp(d) for d <= 88: 2^k * p(r), d = k ln2 + r, |r| <= ln2 / 2, p the degree-6 Taylor polynomial
 * (relative error 1.2e-7 before rounding); d below -87 (or -inf) gives 0. */
INLINE __m512 exp512(__m512 d) {
    const __m512 lo = _mm512_set1_ps(-87.0f);
    __mmask16 keep = _mm512_cmp_ps_mask(d, lo, _CMP_GE_OQ);
    d = _mm512_max_ps(d, lo);
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(d, _mm512_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693145752f), d);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.42860677e-6f), r);
    __m512 p = _mm512_set1_ps(1.0f / 720);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512i e = _mm512_slli_epi32(_mm512_cvtps_epi32(k), 23);
    return _mm512_maskz_mov_ps(keep, _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), e)));
}

static float avx512_exp_sum(const float *x, float shift, float *y, int64_t n) {
    __m512 sv = _mm512_set1_ps(shift), acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 e = _mm512_maskz_mov_ps(m, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), sv)));
        if (y) _mm512_mask_storeu_ps(y + i, m, e);
        acc = _mm512_add_ps(acc, e);
    }
    return _mm512_reduce_add_ps(acc);
}

/* -g is clamped to 88 (exp512 has no overflow path; exp(88) is still finite, and g / (1 + exp(88)) is
 * -0 in all but the last bits, as the reference's g / inf). */
static void avx512_silu_mul(float *g, const float *u, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f), hi = _mm512_set1_ps(88.0f);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(m, g + i), y = _mm512_maskz_loadu_ps(m, u + i);
        __m512 e = exp512(_mm512_min_ps(_mm512_sub_ps(_mm512_setzero_ps(), x), hi));
        _mm512_mask_storeu_ps(g + i, m, _mm512_mul_ps(_mm512_div_ps(x, _mm512_add_ps(one, e)), y));
    }
}

/* Keys and values in the context's KV type, F32 or F16 (kn_ops.attn_qk16): element i at p, and 16 of them
 * from i on as floats (the F16 ones converted exactly, so the arithmetic after the load is the F32 path's). */
INLINE const void *kv_at(const void *p, size_t i, int f16) { return (const char *)p + i * (f16 ? 2 : 4); }
INLINE __m512 kv_load(const void *p, size_t i, __mmask16 m, int f16) {
    if (f16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i));
    return _mm512_maskz_loadu_ps(m, (const float *)p + i);
}

/* hn (1..4, a constant after inlining, so the accumulators stay in registers) heads x 64 columns from
 * column j0; each value row is read once for the hn heads. Each head's sums are taken in position order
 * whatever hn is, so a head gives the same bits alone or beside others; rows below n0 come from v0. */
INLINE void v_tile(const float *w, size_t w_stride, int hn, const void *v0, int64_t n0, const void *v,
                   size_t v_stride, int64_t npos, const __mmask16 m[4], int prefetch, float *out, size_t out_stride,
                   int f16) {
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int h = 0; h < 4; h++)
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) acc[h][c] = _mm512_setzero_ps();
    for (int64_t p = 0; p < npos; p++) {
        const void *vr = kv_at(p < n0 ? v0 : v, (size_t)p * v_stride, f16);
        if (prefetch) { /* strided value rows: the hardware prefetcher does not run ahead on them */
            const void *ahead = kv_at(p + 8 < n0 ? v0 : v, (size_t)(p + 8) * v_stride, f16);
            _mm_prefetch((const char *)ahead, _MM_HINT_T0);
            if (m[2]) _mm_prefetch((const char *)kv_at(ahead, 32, f16), _MM_HINT_T0);
        }
        __m512 x0 = kv_load(vr, 0, m[0], f16), x1 = kv_load(vr, 16, m[1], f16);
        __m512 x2 = kv_load(vr, 32, m[2], f16), x3 = kv_load(vr, 48, m[3], f16);
#pragma GCC unroll 4
        for (int h = 0; h < hn; h++) {
            __m512 a = _mm512_set1_ps(w[(size_t)h * w_stride + (size_t)p]);
            acc[h][0] = _mm512_fmadd_ps(a, x0, acc[h][0]);
            acc[h][1] = _mm512_fmadd_ps(a, x1, acc[h][1]);
            acc[h][2] = _mm512_fmadd_ps(a, x2, acc[h][2]);
            acc[h][3] = _mm512_fmadd_ps(a, x3, acc[h][3]);
        }
    }
#pragma GCC unroll 4
    for (int h = 0; h < hn; h++)
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) _mm512_mask_storeu_ps(out + (size_t)h * out_stride + 16 * c, m[c], acc[h][c]);
}

/* Up to 4 heads x 64 columns in 16 accumulators; each value row is read once per such tile. */
INLINE void v_all(const float *w, size_t w_stride, int nh, const void *v0, int64_t n0, const void *v, size_t v_stride,
                  int64_t npos, int64_t d, float *out, size_t out_stride, int f16) {
    for (int h0 = 0; h0 < nh; h0 += 4) {
        int hn = nh - h0 < 4 ? nh - h0 : 4;
        const float *wh = w + (size_t)h0 * w_stride;
        for (int64_t j0 = 0; j0 < d; j0 += 64) {
            __mmask16 m[4];
            for (int c = 0; c < 4; c++) {
                int64_t left = d - j0 - 16 * c;
                m[c] = left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
            }
            const void *vj = kv_at(v, (size_t)j0, f16), *vj0 = kv_at(v0, (size_t)j0, f16);
            float *o = out + (size_t)h0 * out_stride + (size_t)j0;
            int pf = h0 == 0 && v_stride > (size_t)d; /* rows that are not one contiguous stream */
            switch (hn) {
            case 1: v_tile(wh, w_stride, 1, vj0, n0, vj, v_stride, npos, m, pf, o, out_stride, f16); break;
            case 2: v_tile(wh, w_stride, 2, vj0, n0, vj, v_stride, npos, m, pf, o, out_stride, f16); break;
            case 3: v_tile(wh, w_stride, 3, vj0, n0, vj, v_stride, npos, m, pf, o, out_stride, f16); break;
            default: v_tile(wh, w_stride, 4, vj0, n0, vj, v_stride, npos, m, pf, o, out_stride, f16); break;
            }
        }
    }
}

static void avx512_attn_v(const float *w, size_t w_stride, int nh, const float *v0, int64_t n0, const float *v,
                          size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride) {
    v_all(w, w_stride, nh, v0, n0, v, v_stride, npos, d, out, out_stride, 0);
}

static void avx512_attn_v16(const float *w, size_t w_stride, int nh, const uint16_t *v0, int64_t n0, const uint16_t *v,
                            size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride) {
    v_all(w, w_stride, nh, v0, n0, v, v_stride, npos, d, out, out_stride, 1);
}

/* hn heads (1..4) x nv blocks of 16 positions (kt at the first, blocks kt_stride apart): for each key
 * dimension j, one vector of each block is loaded once and multiplied by each head's q[j]; with sets > 1
 * the dimensions are split over that many accumulator sets (j mod sets), so short tiles still have enough
 * independent multiply-add chains. sets depends on nv only, never on hn, so a head's scores are the same
 * bits alone or beside others. hn, nv and sets are constants after inlining: the accumulators stay in
 * registers. */
INLINE void qk_tile(const float *q, size_t q_stride, int hn, const void *kt, size_t kt_stride, int nv, int sets,
                    int64_t d, const __mmask16 *m, __m512 sv, float *s, size_t s_stride, __m512 *mxv, int f16) {
    __m512 acc[4][4][4]; /* [set][head][vector] */
#pragma GCC unroll 4
    for (int u = 0; u < sets; u++)
#pragma GCC unroll 4
        for (int h = 0; h < hn; h++)
#pragma GCC unroll 4
            for (int c = 0; c < nv; c++) acc[u][h][c] = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + sets <= d; j += sets)
#pragma GCC unroll 4
        for (int u = 0; u < sets; u++) {
            __m512 kv[4];
#pragma GCC unroll 4
            for (int c = 0; c < nv; c++) kv[c] = kv_load(kt, (size_t)(j + u) * 16 + (size_t)c * kt_stride, m[c], f16);
#pragma GCC unroll 4
            for (int h = 0; h < hn; h++) {
                __m512 a = _mm512_set1_ps(q[(size_t)h * q_stride + (size_t)(j + u)]);
#pragma GCC unroll 4
                for (int c = 0; c < nv; c++) acc[u][h][c] = _mm512_fmadd_ps(a, kv[c], acc[u][h][c]);
            }
        }
    for (; j < d; j++) { /* d not a multiple of sets: the last dimensions into set 0 */
#pragma GCC unroll 4
        for (int h = 0; h < hn; h++) {
            __m512 a = _mm512_set1_ps(q[(size_t)h * q_stride + (size_t)j]);
#pragma GCC unroll 4
            for (int c = 0; c < nv; c++)
                acc[0][h][c] = _mm512_fmadd_ps(a, kv_load(kt, (size_t)j * 16 + (size_t)c * kt_stride, m[c], f16), acc[0][h][c]);
        }
    }
#pragma GCC unroll 4
    for (int h = 0; h < hn; h++)
#pragma GCC unroll 4
        for (int c = 0; c < nv; c++) {
            __m512 r = acc[0][h][c];
#pragma GCC unroll 4
            for (int u = 1; u < sets; u++) r = _mm512_add_ps(r, acc[u][h][c]);
            r = _mm512_mul_ps(r, sv);
            _mm512_mask_storeu_ps(s + (size_t)h * s_stride + 16 * c, m[c], r);
            mxv[h] = _mm512_mask_max_ps(mxv[h], m[c], mxv[h], r);
        }
}

/* Up to 4 heads at a time; positions in tiles of 64 (four vectors), the rest in one tile of up to four
 * vectors, the dimensions split over accumulator sets when it has one or two. */
INLINE void qk_heads(const float *q, size_t q_stride, int hn, const void *kt, size_t kt_stride, int64_t npos,
                     int64_t d, __m512 sv, float *s, size_t s_stride, float *mx, int f16) {
    __m512 mxv[4];
#pragma GCC unroll 4
    for (int h = 0; h < hn; h++) mxv[h] = _mm512_set1_ps(-INFINITY);
    const __mmask16 full[4] = {0xffff, 0xffff, 0xffff, 0xffff};
    int64_t p0 = 0;
    for (; p0 + 64 <= npos; p0 += 64)
        qk_tile(q, q_stride, hn, kv_at(kt, (size_t)(p0 / 16) * kt_stride, f16), kt_stride, 4, 1, d, full, sv, s + p0,
                s_stride, mxv, f16);
    if (p0 < npos) { /* the last 1-63 positions: one tile of 1-4 vectors, the last one masked */
        int64_t left = npos - p0;
        kt = kv_at(kt, (size_t)(p0 / 16) * kt_stride, f16);
        int nv = (int)((left + 15) / 16);
        __mmask16 m[4] = {0xffff, 0xffff, 0xffff, 0xffff};
        m[nv - 1] = left % 16 ? (__mmask16)((1u << (left % 16)) - 1) : 0xffff;
        if (nv == 1) qk_tile(q, q_stride, hn, kt, kt_stride, 1, 4, d, m, sv, s + p0, s_stride, mxv, f16);
        else if (nv == 2) qk_tile(q, q_stride, hn, kt, kt_stride, 2, 2, d, m, sv, s + p0, s_stride, mxv, f16);
        else if (nv == 3) qk_tile(q, q_stride, hn, kt, kt_stride, 3, 1, d, m, sv, s + p0, s_stride, mxv, f16);
        else qk_tile(q, q_stride, hn, kt, kt_stride, 4, 1, d, m, sv, s + p0, s_stride, mxv, f16);
    }
#pragma GCC unroll 4
    for (int h = 0; h < hn; h++) mx[h] = _mm512_reduce_max_ps(mxv[h]);
}

INLINE void qk_all(const float *q, size_t q_stride, int nh, const void *kt, size_t kt_stride, int64_t npos,
                   int64_t d, float scale, float *s, size_t s_stride, float *mx, int f16) {
    const __m512 sv = _mm512_set1_ps(scale);
    for (int h0 = 0; h0 < nh; h0 += 4) {
        const float *qh = q + (size_t)h0 * q_stride;
        float *sh = s + (size_t)h0 * s_stride;
        switch (nh - h0) {
        case 1: qk_heads(qh, q_stride, 1, kt, kt_stride, npos, d, sv, sh, s_stride, mx + h0, f16); break;
        case 2: qk_heads(qh, q_stride, 2, kt, kt_stride, npos, d, sv, sh, s_stride, mx + h0, f16); break;
        case 3: qk_heads(qh, q_stride, 3, kt, kt_stride, npos, d, sv, sh, s_stride, mx + h0, f16); break;
        default: qk_heads(qh, q_stride, 4, kt, kt_stride, npos, d, sv, sh, s_stride, mx + h0, f16); break;
        }
    }
}

static void avx512_attn_qk(const float *q, size_t q_stride, int nh, const float *kt, size_t kt_stride, int64_t npos,
                           int64_t d, float scale, float *s, size_t s_stride, float *mx) {
    qk_all(q, q_stride, nh, kt, kt_stride, npos, d, scale, s, s_stride, mx, 0);
}

static void avx512_attn_qk16(const float *q, size_t q_stride, int nh, const uint16_t *kt, size_t kt_stride,
                             int64_t npos, int64_t d, float scale, float *s, size_t s_stride, float *mx) {
    qk_all(q, q_stride, nh, kt, kt_stride, npos, d, scale, s, s_stride, mx, 1);
}

static void avx512_to_f16(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i), _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) y[i] = f32_to_fp16(x[i]);
}


const kn_ops kn_avx512_ops = {"avx512", avx512_quantize_act, avx512_matmul, avx512_dot_f32, avx512_axpy_f32,
                               avx512_matmul_mlx, avx512_exp_sum, avx512_attn_v, avx512_attn_qk,
                               avx512_silu_mul,
                               KN_PACKS(QT_Q8_0) | KN_PACKS(QT_Q4_0) | KN_PACKS(QT_Q4_1) | KN_PACKS(QT_Q5_0) |
                                   KN_PACKS(QT_Q5_1) | KN_PACKS(QT_IQ4_NL) | KN_PACKS(QT_Q4_K) | KN_PACKS(QT_Q6_K),
                               avx512_attn_v16, avx512_attn_qk16, avx512_to_f16};

#ifdef KN_POP_TARGET
#pragma clang attribute pop
#endif
