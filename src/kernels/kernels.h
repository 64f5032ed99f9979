/* kernels.h — the CPU compute kernels behind the forward pass, as a table of function pointers chosen
 * once at run time by CPU detection. kernels_ref.c is the scalar reference (always built, the meaning of
 * every kernel); kernels_avx2.c, kernels_avx512.c and kernels_neon.c are fast versions that must match it
 * within float rounding, and must round each output the same way whatever the batch (matmul below;
 * tests/test_kernels.c checks both on random and odd shapes). Intrinsics live only in those files. */
#ifndef LAYA_KERNELS_H
#define LAYA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Matrix products y = x · Wᵀ where W has N rows of K elements of a weight type (qtypes.h) and x has B
 * rows of K floats. x is first converted once per row into the "activation format" that pairs with the
 * weight type, so a batch shares one pass over each weight row:
 *   F32, F16, BF16 weights  -> activations stay F32 (K floats)
 *   Q8_0, Q4_0 weights      -> block_q8_0 (int8 with one fp16 scale per 32)
 *   Q4_K, Q6_K weights      -> block_q8_K (int8 with one f32 scale per 256, plus 16-element sums)
 * K must be a multiple of the weight type's block size (the model loader checks this). */
size_t kn_act_row_bytes(uint32_t wtype, int64_t K);
/* s[h * s_stride + p] *= scale for h < nh, p < npos, and mx[h] = the maximum of head h's (scalar; for the
 * tables whose attn_qk computes raw scores and then calls this). */
void kn_scale_max(float *s, size_t s_stride, int nh, int64_t npos, float scale, float *mx);
typedef struct kn_ops {
    const char *name; /* "scalar", "avx2", "avx512", "neon" */

    /* One row of K floats -> activation format for wtype (kn_act_row_bytes bytes at xq). */
    void (*quantize_act)(uint32_t wtype, const float *x, void *xq, int64_t K);

    /* y[b * ldy + r] = dot(W row r, activation row b) for r in [r0, r1) and b in [0, B).
     * W points at row 0; w_row_bytes = qt_row_bytes(wtype, K); act rows are act_row_bytes apart.
     * Batch invariance (this and matmul_mlx, attn_qk, attn_v per head): each output is a function of
     * its weight row and activation row alone, bit for bit the same for any B, r0, r1 or place in the
     * batch, even where a table takes another code path for large B. The forward pass relies on it: a
     * prompt decoded in one batch gives the logits of its tokens decoded one at a time. With q8
     * activations even a one-ulp difference matters: it flips a rounding in the next layer's
     * quantization, and the bundled model's logits then move by ~0.1. */
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
     * out[h * out_stride + j] = sum over p < npos of w[h * w_stride + p] * v[p * v_stride + j] (out is
     * overwritten). */
    void (*attn_v)(const float *w, size_t w_stride, int nh, const float *v, size_t v_stride, int64_t npos,
                   int64_t d, float *out, size_t out_stride);
    /* Attention scores of nh query heads against keys they share. The keys are stored in blocks of 16
     * positions, each block dimension-major: dimension j of position p at
     * kt[(p / 16) * kt_stride + j * 16 + p % 16] (kt_stride >= 16 * d apart), so 16 positions are one
     * vector per dimension, no horizontal sums are needed and a block is one sequential 64 d-byte read.
     * For h < nh and p < npos: s[h * s_stride + p] = scale * sum over j < d of q[h * q_stride + j] * key(p, j),
     * and mx[h] = the largest of them (-inf when npos is 0). */
    void (*attn_qk)(const float *q, size_t q_stride, int nh, const float *kt, size_t kt_stride, int64_t npos,
                    int64_t d, float scale, float *s, size_t s_stride, float *mx);
} kn_ops;

/* The best table this CPU supports (cached after the first call; thread-safe). The environment variable
 * LAYA_KERNELS=scalar|avx2|avx512|neon forces one (ignored if the CPU lacks it). */
const kn_ops *kn_best(void);
/* A named table, or NULL if not compiled in or not supported by this CPU. */
const kn_ops *kn_by_name(const char *name);

/* Per-architecture tables (NULL-returning stubs are not allowed: a file is compiled only for its arch). */
extern const kn_ops kn_ref_ops;
#if defined(__x86_64__) || defined(__i386__)
extern const kn_ops kn_avx2_ops;
extern const kn_ops kn_avx512_ops;
#endif
#if defined(__aarch64__)
extern const kn_ops kn_neon_ops;
#endif

#endif
