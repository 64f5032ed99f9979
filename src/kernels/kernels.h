/* kernels.h — the CPU compute kernels behind the forward pass, as a table of function pointers chosen
 * once at run time by CPU detection. kernels_ref.c is the scalar reference (always built, the meaning of
 * every kernel); kernels_avx2.c, kernels_avx512.c and kernels_neon.c are fast versions that must match it
 * within float rounding, and must round each output the same way whatever the batch (matmul below;
 * tests/test_kernels.c checks both on random and odd shapes). Intrinsics live only in those files. */
#ifndef LAYA_KERNELS_H
#define LAYA_KERNELS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "io/qtypes.h"

/* Matrix products y = x · Wᵀ where W has N rows of K elements of a weight type (qtypes.h) and x has B
 * rows of K floats. x is first converted once per row into the "activation format" that pairs with the
 * weight type, so a batch shares one pass over each weight row:
 *   F32, F16, BF16 weights  -> activations stay F32 (K floats)
 *   Q8_0, Q4_0, Q5_0, IQ4_NL weights -> block_q8_0 (int8 with one fp16 scale per 32)
 *   Q4_1, Q5_1 weights      -> block_q8_s (block_q8_0 plus the sum of its quants, for the minimum)
 *   Q2_K..Q6_K weights      -> block_q8_K (int8 with one f32 scale per 256, plus 16-element sums)
 * K must be a multiple of the weight type's block size (the model loader checks this). */
size_t kn_act_row_bytes(uint32_t wtype, int64_t K);

/* Packed weights ("P16"): a matrix of a 32-element block type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL)
 * copied at load into the order the AVX-512 kernel reads, so that a matmul streams one sequential region
 * and needs no regrouping in registers. Not a file format: the ids below are outside ggml's numbering
 * and only ever name memory the model owns.
 *   Rows are taken 16 at a time ("panels"; the last is padded with zero rows). Panel p holds, for each
 *   of the nb = K / 32 blocks of its rows, QV 64-byte vectors (kn_p16_qvecs: 8 for Q8_0, 5 for the Q5
 *   types, 4 for the others) whose 32-bit lane r belongs to row 16p + r. Vector t < 4 of the nibble types
 *   is bytes 4t..4t+3 of the row's block quants as in the file (the low nibbles are elements 4t..4t+3,
 *   the high ones 16 + 4t..); Q8_0's vector t is its bytes 4t..4t+3 xor 0x80 (q + 128 as unsigned
 *   bytes); the Q5 types' vector 4 holds the 32 high bits, bit 8j + 4 + t of the lane being element
 *   4t + j's and bit 8j + t element 16 + 4t + j's (t, j < 4). The blocks go in pairs (2g, 2g + 1): the
 *   two blocks' vectors, then their fp16 scales d (16 per block in row order, 64 bytes for the pair), then
 *   for Q4_1 and Q5_1 their fp16 minimums m in the same form; an odd nb leaves the last pair's second
 *   block zero. kn_p16_at gives the offsets. So a panel is one stream in the order the kernel reads it:
 *   with the scales in a region of their own after the quants, each thread's matmul read two streams a
 *   panel, which the hardware prefetchers followed badly. kn_pack_panel_bytes gives a panel's size; panel p starts p panels into the
 *   matrix.
 *   The weights are the same numbers as the source rows (kn_p16_block gives a source block back).
 * The activation format of the P16 types ("q8 split", kn_act_row_bytes): the nb blocks' 32 int8 quants
 * each (nb * 32 bytes, as block_q8_0's qs), then nb float scales (each block_q8_0's fp16 d, widened), nb
 * int32 corrections -8 * sum(qs), nb int32 -128 * sum(qs) (the weight offsets the unsigned dot products
 * add: Q4_0's nibbles are q + 8, Q8_0's bytes q + 128, IQ4_NL's levels are taken + 128, Q5_0's 5-bit
 * values q + 16, twice the first), and nb floats d * sum(qs) (for the minimums). */
/* Q4_K and Q6_K have P16 forms too: panel p is the K / 256 super-blocks of its 16 rows, each
 * kn_p16_qvecs 64-byte vectors whose 32-bit lane r (or 16-bit lane, for the fp16 fields) is row 16p + r's
 * (kernels.c, k_lane, gives the order). Their activation format ("q8_K split") per row: the K int8
 * quants, then a float d per super-block, then 16 int32 sums of 16 quants per super-block, then 8 int16 per
 * super-block: the sums of 32 quants, s_j for sub-block j, in the order s0 s2 s1 s3 s4 s6 s5 s7 (the pairs
 * Q4_K's minimums are multiplied with). Quantized as block_q8_K: the same quants and scales. */
enum {
    KN_P16_Q4_K = 0x100 | QT_Q4_K, KN_P16_Q6_K = 0x100 | QT_Q6_K,
    KN_P16_Q4_0 = 0x100 | QT_Q4_0, KN_P16_Q4_1 = 0x100 | QT_Q4_1, KN_P16_Q5_0 = 0x100 | QT_Q5_0,
    KN_P16_Q5_1 = 0x100 | QT_Q5_1, KN_P16_Q8_0 = 0x100 | QT_Q8_0, KN_P16_IQ4_NL = 0x100 | QT_IQ4_NL
};
/* The P16 type of a weight type (0 if it has none), and a P16 type's source type (0 if not a P16 type). */
uint32_t kn_p16_type(uint32_t wtype);
uint32_t kn_p16_source(uint32_t ptype);
/* 64-byte vectors per block of a P16 type (quants only for the 32-element types; everything of a
 * super-block, scales included, for Q4_K / Q6_K), and whether it stores minimums. */
int kn_p16_qvecs(uint32_t ptype);
int kn_p16_has_min(uint32_t ptype);
/* Bytes of one panel (16 rows of K) and of a whole N x K matrix; 0 if the type has no P16 form or K is
 * not a multiple of 32. */
size_t kn_pack_panel_bytes(uint32_t ptype, int64_t K);
/* A 32-element P16 type's pair of blocks in bytes (qv = kn_p16_qvecs, mins = kn_p16_has_min), and the
 * offsets in its panel of block i's vectors (q) and fp16 scales (its minimums are 64 bytes after them). */
static inline size_t kn_p16_pair_bytes(int qv, int mins) { return (size_t)qv * 128 + (mins ? 128 : 64); }
static inline size_t kn_p16_q_at(int qv, int mins, int64_t i) {
    return (size_t)(i >> 1) * kn_p16_pair_bytes(qv, mins) + (size_t)(i & 1) * (size_t)qv * 64;
}
static inline size_t kn_p16_s_at(int qv, int mins, int64_t i) {
    return (size_t)(i >> 1) * kn_p16_pair_bytes(qv, mins) + (size_t)qv * 128 + (size_t)(i & 1) * 32;
}
size_t kn_pack_bytes(uint32_t ptype, int64_t N, int64_t K);
/* Rows [p0 * 16, p1 * 16) (clipped to N; the rest of the last panel zero) of the N x K source matrix W
 * (rows w_row_bytes apart) into panels p0..p1-1 of dst (64-byte aligned). */
void kn_pack(uint32_t ptype, const void *W, size_t w_row_bytes, int64_t N, int64_t K, int64_t p0, int64_t p1,
             void *dst);
/* Block i of row r of a P16 matrix as the source type's block (its bytes, at blk). */
void kn_p16_block(uint32_t ptype, const void *P, int64_t K, int64_t r, int64_t i, void *blk);
/* A table's quantizer of one 32-float block to int8 (kernels_ref.c gives the rule every table follows):
 * the quants at qs, the fp16 scale returned, and *sum (if not NULL) the sum of the quants. */
typedef qt_half (*kn_q8_block_fn)(const float *x, int8_t *qs, int *sum);
/* The same rule for 16 consecutive blocks (512 floats) at once, where a table can share the work across
 * blocks: the quants of block j at qs + j * stride, its fp16 scale in d[j] and that scale as a float in
 * dq[j], the sum of its quants in sum[j] (if sum is not NULL). Returns 0, having written nothing that
 * counts, where it leaves the group to the block function (a table may decline input it does not
 * handle, such as NaN). */
typedef int (*kn_q8_group_fn)(const float *x, int8_t *qs, size_t stride, qt_half d[16], float dq[16], int sum[16]);
/* The reference's quantizer of one block (kn_q8_block_fn), for the SIMD tables' rare case: a scale so
 * small that 1 / d overflows (amax below about 3.7e-37), where x * (1 / d) is +-inf or NaN, which the
 * rule quantizes to +-127 or 0 and x86 conversions all turn into INT_MIN. */
qt_half kn_q8_block_ref(const float *x, int8_t *qs, int *sum);
/* One row of K floats into the activation format of a 32-element block type (block_q8_0, block_q8_s,
 * or a P16 type's q8 split): runs of 16 blocks by grp (if not NULL), the others by blk; returns 0 and
 * writes nothing for the other types. The layouts live here, the arithmetic in the tables. */
int kn_q8_act_row(uint32_t wtype, const float *x, void *xq, int64_t K, kn_q8_block_fn blk, kn_q8_group_fn grp);
/* Super-block i of an activation row in the q8_K split format (K elements) from its block_q8_K form. */
void kn_q8k_split_put(const block_q8_K *b, int64_t i, int64_t K, void *xq);
/* Row r of a P16 matrix as floats (K of them), the values qt_dequantize_row gives for the source row. */
void kn_p16_row(uint32_t ptype, const void *P, int64_t K, int64_t r, float *y);
/* s[h * s_stride + p] *= scale for h < nh, p < npos, and mx[h] = the maximum of head h's (scalar; for the
 * tables whose attn_qk computes raw scores and then calls this). */
void kn_scale_max(float *s, size_t s_stride, int nh, int64_t npos, float scale, float *mx);
/* attn_qk's split granule (positions): the AVX-512 table takes positions in tiles of 64 from the call's start. */
#define KN_QK_SPLIT 64
#define KN_PACKS(t) (1u << (t))
/* How far ahead, in bytes, the AVX-512 kernel of the 32-element P16 types (p16_block) also asks for their
 * quants into L2: [0] at B = 1 (0: not at all; never for a set streamed from DRAM, KN_STREAM below), [1]
 * at B > 1 on a set the L3 can serve, [2] at B > 1 on a streamed set. {0, 0, 8 KB} where kn_by_name
 * hands out the avx512 table on an AMD family 0x1A (Zen 5) core, {16 KB, 16 KB, 16 KB} elsewhere
 * (kernels_avx512.c, P16_PF_L2). The K-quant panels (p16k_super) always ask P16_PF_L2 ahead. */
extern _Atomic int kn_p16_l2_ahead[3];
/* A matmul wtype flag (or'ed onto a P16 type): the matrix is one of a step's set of more than
 * KN_STREAM_BYTES, which streams from DRAM; the 32-element P16 kernel at B = 1 then leaves the fetching
 * ahead to the hardware prefetchers instead of its kn_p16_l2_ahead[0], and the AVX-512 P16 kernels read
 * two panels at a time at B = 1 (two streams a thread; kernels_avx512.c, p16_block2). With the weights in
 * block pairs (kn_p16_pair_bytes) a panel is one sequential stream, which those follow; the software
 * prefetch then only adds requests to a full memory queue. Where the set is served from L3 it still helps,
 * and B > 1 keeps its prefetch. The threshold lies between the sizes measured: twice a 32 MiB L3. */
#define KN_STREAM 0x10000u
#define KN_STREAM_BYTES ((size_t)64 << 20)
/* Whether that kernel takes half of Q4_0's activation words from shuffles rather than memory operands:
 * set on the Zen 5 (whose load ports bind it), clear on other cores. */
extern _Atomic int kn_p16_q4_shuf;
typedef struct kn_ops {
    const char *name; /* "scalar", "avx2", "avxvnni", "avx512", "neon" */

    /* One row of K floats -> activation format for wtype (kn_act_row_bytes bytes at xq). */
    void (*quantize_act)(uint32_t wtype, const float *x, void *xq, int64_t K);

    /* y[b * ldy + r] = dot(W row r, activation row b) for r in [r0, r1) and b in [0, B).
     * W points at row 0; w_row_bytes = qt_row_bytes(wtype, K) (unused for the P16 types, whose W is the
     * packed matrix and whose rows are found from K); act rows are act_row_bytes apart.
     * Batch invariance (this and matmul_mlx, attn_qk, attn_v per head): each output is a function of
     * its weight row and activation row alone, bit for bit the same for any B, r0, r1 or place in the
     * batch, even where a table takes another code path for large B. The forward pass relies on it: a
     * prompt decoded in one batch gives the logits of its tokens decoded one at a time. With q8
     * activations even a one-ulp difference matters: it flips a rounding in the next layer's
     * quantization, and the bundled model's logits then move by ~0.1.
     * wtype may carry KN_STREAM, a hint that changes only how far ahead the kernel asks for memory,
     * never an output. */
    void (*matmul)(uint32_t wtype, const void *W, size_t w_row_bytes, const void *act,
                   size_t act_row_bytes, int B, int64_t K, int64_t r0, int64_t r1, float *y, size_t ldy);

    float (*dot_f32)(const float *a, const float *b, int64_t n);
    void (*axpy_f32)(float *y, float a, const float *x, int64_t n); /* y += a * x */

    /* MLX affine-quantized weights (mlx.core.quantize): row r of W is K/(32/bits) little-endian uint32
     * words, value j of a word in bits [j*bits, (j+1)*bits); each group of `group` consecutive values has
     * a scale s and a bias b (row r's K/group of each, of type sb_type: QT_F16, QT_BF16 or QT_F32) and
     * w = s*q + b. bits 4 or 8, group 32, 64 or 128, K a multiple of group. Activations are F32 rows
     * (x_stride floats apart). y[b * ldy + r] = dot(w row r, x row b) for r in [r0, r1), b in [0, B). */
    void (*matmul_mlx)(int bits, int group, const uint32_t *W, const void *scales, const void *biases,
                       uint32_t sb_type, const float *x, size_t x_stride, int B, int64_t K, int64_t r0,
                       int64_t r1, float *y, size_t ldy);
    /* Softmax's exponentials: e_i = exp(x[i] - shift) for i < n (written to y[i] unless y is NULL); returns
     * their sum. Meant for shift = max(x) (every e_i in [0, 1]); x[i] - shift below -87 (-inf included)
     * gives 0. The fast versions use a polynomial within 1e-6 relative of expf. */
    float (*exp_sum)(const float *x, float shift, float *y, int64_t n);
    /* Attention's weighted sum of value rows, for nh heads that share them: for h < nh and j < d,
     * out[h * out_stride + j] = sum over p < npos of w[h * w_stride + p] * V(p, j) (out is overwritten),
     * where value row p is at v0 + p * v_stride for p < n0 and at v + p * v_stride from n0 on (a
     * sequence's positions shared with another's, then its own: forward.c). Each output is summed in
     * position order, so the bits do not depend on n0. */
    void (*attn_v)(const float *w, size_t w_stride, int nh, const float *v0, int64_t n0, const float *v,
                   size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride);
    /* Attention scores of nh query heads against keys they share. The keys are stored in blocks of 16
     * positions, each block dimension-major: dimension j of position p at
     * kt[(p / 16) * kt_stride + j * 16 + p % 16] (kt_stride >= 16 * d apart), so 16 positions are one
     * vector per dimension, no horizontal sums are needed and a block is one sequential 64 d-byte read.
     * For h < nh and p < npos: s[h * s_stride + p] = scale * sum over j < d of q[h * q_stride + j] * key(p, j),
     * and mx[h] = the largest of them (-inf when npos is 0). A position's score does not depend on where
     * the call starts if that is a multiple of KN_QK_SPLIT positions: positions [0, a) in one call and
     * [a, npos) in another (kt a / 16 blocks on, s a on) give the bits of one call. */
    void (*attn_qk)(const float *q, size_t q_stride, int nh, const float *kt, size_t kt_stride, int64_t npos,
                    int64_t d, float scale, float *s, size_t s_stride, float *mx);
    /* The FFN's activation: g[i] = silu(g[i]) * u[i] = g[i] / (1 + exp(-g[i])) * u[i] for i < n. An
     * element's value does not depend on n or on its place (the tails go through the same arithmetic);
     * the SIMD tables use their exp_sum polynomial. */
    void (*silu_mul)(float *g, const float *u, int64_t n);
    /* Bit t (KN_PACKS(t)) set: matmul is faster with weight type t's P16 form (kn_pack) than with t
     * itself, and the model loader gives it that form. Every table's matmul takes every P16 type (the
     * others through the scalar table, which is the reference for the layout but asks for none). */
    uint32_t packs;
    /* attn_v and attn_qk for a KV cache held in F16 (laya_context_params.kv_type; every table has them,
     * test_kernels checks): the same contracts,
     * value and key elements fp16 bit patterns; each element converted exactly, then the F32 path's
     * arithmetic, so a call gives the bits the F32 kernel gives on the converted cache. One difference:
     * attn_qk16 may read a partial last key block whole (its 16 positions must be readable memory, as
     * they are in a context's cache, which holds whole blocks); what it reads past npos is not used. */
    void (*attn_v16)(const float *w, size_t w_stride, int nh, const uint16_t *v0, int64_t n0, const uint16_t *v,
                     size_t v_stride, int64_t npos, int64_t d, float *out, size_t out_stride);
    void (*attn_qk16)(const float *q, size_t q_stride, int nh, const uint16_t *kt, size_t kt_stride, int64_t npos,
                      int64_t d, float scale, float *s, size_t s_stride, float *mx);
    /* y[i] = x[i] rounded to fp16, nearest even (f32_to_fp16's bits for finite values) */
    void (*to_f16)(const float *x, uint16_t *y, int64_t n);
} kn_ops;

/* The best table this CPU supports (cached after the first call; thread-safe). The environment variable
 * LAYA_KERNELS=scalar|avx2|avxvnni|avx512|neon|neondot forces one (ignored if the CPU lacks it). */
const kn_ops *kn_best(void);
/* A named table, or NULL if not compiled in or not supported by this CPU. */
const kn_ops *kn_by_name(const char *name);

/* Per-architecture tables (NULL-returning stubs are not allowed: a file is compiled only for its arch). */
extern const kn_ops kn_ref_ops;
#if defined(__x86_64__) || defined(__i386__)
extern const kn_ops kn_avx2_ops;
extern const kn_ops kn_avxvnni_ops;
extern const kn_ops kn_avx512_ops;
#endif
#if defined(__aarch64__)
extern const kn_ops kn_neon_ops;
extern const kn_ops kn_neondot_ops;
#endif

#endif
