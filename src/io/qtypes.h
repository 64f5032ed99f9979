/* qtypes.h — tensor element types in ggml's numbering and block layouts, so llama.cpp's GGUF files load
 * as they are. Scalar quantize/dequantize of whole rows lives in quant.c; fast dot products in kernels/. */
#ifndef LAYA_QTYPES_H
#define LAYA_QTYPES_H

#include <stddef.h>
#include <stdint.h>

enum {
    QT_F32 = 0, QT_F16 = 1, QT_Q4_0 = 2, QT_Q4_1 = 3, QT_Q5_0 = 6, QT_Q5_1 = 7, QT_Q8_0 = 8, QT_Q8_1 = 9,
    QT_Q2_K = 10, QT_Q3_K = 11, QT_Q4_K = 12, QT_Q5_K = 13, QT_Q6_K = 14, QT_Q8_K = 15,
    QT_IQ4_NL = 20, QT_I8 = 24, QT_I16 = 25, QT_I32 = 26, QT_I64 = 27, QT_F64 = 28, QT_BF16 = 30,
    QT_COUNT = 40
};

#define QK8_0 32
#define QK4_0 32
#define QK_K 256
#define K_SCALE_SIZE 12

typedef uint16_t qt_half; /* IEEE fp16 bits */

typedef struct { qt_half d; int8_t qs[QK8_0]; } block_q8_0;                 /* 34 bytes */
typedef struct { qt_half d; uint8_t qs[QK4_0 / 2]; } block_q4_0;            /* 18 bytes */
typedef struct { qt_half d, m; uint8_t qs[16]; } block_q4_1;                  /* 20: d * q + m, q 0..15 */
typedef struct { qt_half d; uint8_t qh[4]; uint8_t qs[16]; } block_q5_0;     /* 22: d * (q - 16) */
typedef struct { qt_half d, m; uint8_t qh[4]; uint8_t qs[16]; } block_q5_1;  /* 24: d * q + m, q 0..31 */
typedef struct { qt_half d; uint8_t qs[16]; } block_iq4_nl;                  /* 18: d * kIQ4NL[q] */
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; qt_half d, dmin; } block_q2_K;   /* 84 */
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; qt_half d; } block_q3_K; /* 110 */
typedef struct { qt_half d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K; /* 176 */
typedef struct { qt_half d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K; /* 144 */
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; qt_half d; } block_q6_K; /* 210 */
/* Activations quantized for the K-quant dot products (never stored in files by Laya). */
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K; /* 292 */
/* Activations for the 32-element types with a minimum (Q4_1, Q5_1): q8_0 plus the exact sum of its quants. */
typedef struct { qt_half d; int16_t sum; int8_t qs[QK8_0]; } block_q8_s; /* 36 */

/* IQ4_NL's sixteen levels (ggml's kvalues_iq4nl). */
extern const int8_t kIQ4NL[16];

typedef struct qt_traits {
    const char *name;   /* "F32", "Q4_K", ... ; NULL for ids Laya does not know */
    int32_t block;      /* elements per block */
    int32_t bytes;      /* bytes per block */
    int supported;      /* Laya can compute with it */
} qt_traits;

/* Traits of a type id; returns a traits record with name NULL for unknown ids (never NULL itself). */
const qt_traits *qt_get(uint32_t type);
/* Parse a name ("q8_0", "F16", ...) case-insensitively; -1 if unknown. */
int qt_from_name(const char *name);
/* Bytes of one row of n elements, or 0 when n is not a multiple of the block size. */
size_t qt_row_bytes(uint32_t type, int64_t n);

/* Scalar reference conversions of a row of n elements (n a multiple of the block size).
 * quantize supports F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL (what `laya quantize` writes), plus
 * Q4_K/Q6_K for tests;
 * dequantize supports every type with supported != 0. Rounding follows ggml's reference quantizers. */
int qt_quantize_row(uint32_t type, const float *x, void *dst, int64_t n);
int qt_dequantize_row(uint32_t type, const void *src, float *y, int64_t n);
/* The integers of one block of a block type (not F32/F16/BF16): every element is d * S * q - dmin * M, with
 * q[e] per element and S = sc[s], M = mn[s] per sub-block s of 16 elements (K types: 256 elements, 16
 * sub-blocks; returns 16), or, for the 32-element types, S = 1 and dmin * M = m, the minimum of Q4_1 / Q5_1
 * (0 for the others; sc and mn untouched; returns 1). q has room for 256. 0 for other types. The scalar
 * kernels compute with these; dequantize applies ggml's float order to them. */
int qt_block_ints(uint32_t type, const void *blk, int *q, int *sc, int *mn, float *d, float *dmin);
/* Q4_K / Q5_K's twelve scale bytes to their eight 6-bit scales and minimums, and back. */
void qt_k4_scales_unpack(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]);
void qt_k4_scales_pack(const uint8_t sc[8], const uint8_t mn[8], uint8_t *s);

/* Element i of an MLX scales or biases tensor (F32, F16 or BF16; need not be aligned) as a float. */
float mlx_sb_get(uint32_t t, const void *p, int64_t i);
/* MLX affine quantization (see kernels.h): dequantize / quantize one row of K values. The quantizer
 * follows mlx.core.quantize's CPU path (quant.c documents the algorithm: per group the larger-magnitude
 * extreme is the exact edge, so bias is that edge and scale may be negative) and is used by tests and
 * fixtures. sb_type: QT_F16, QT_BF16 or QT_F32. */
int mlx_dequantize_row(int bits, int group, const uint32_t *w, const void *scales, const void *biases,
                       uint32_t sb_type, float *y, int64_t K);
int mlx_quantize_row(int bits, int group, const float *x, uint32_t *w, void *scales, void *biases,
                     uint32_t sb_type, int64_t K);

#endif
