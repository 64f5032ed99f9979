/* quant.c — the tensor type table (ggml ids, block sizes, names) and scalar quantize/dequantize of whole
 * rows in ggml's block layouts. This is the slow, obvious path used by the loader, `laya quantize` and the
 * tests; the forward pass never calls it (its dot products live in kernels/). */
#include "qtypes.h"

#include <math.h>
#include <string.h>

#include "common.h"

_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 layout");
_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 layout");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K layout");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K layout");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K layout");

/* Every id ggml has assigned a layout to, so a file holding one opens and later reports a clear
 * "unsupported type X" instead of "unknown type 17". Ids ggml retired (4, 5, 31-33, 36-38) stay unknown. */
static const qt_traits g_traits[QT_COUNT] = {
    [QT_F32] = {"F32", 1, 4, 1},
    [QT_F16] = {"F16", 1, 2, 1},
    [QT_Q4_0] = {"Q4_0", 32, 18, 1},
    [QT_Q4_1] = {"Q4_1", 32, 20, 0},
    [QT_Q5_0] = {"Q5_0", 32, 22, 0},
    [QT_Q5_1] = {"Q5_1", 32, 24, 0},
    [QT_Q8_0] = {"Q8_0", 32, 34, 1},
    [QT_Q8_1] = {"Q8_1", 32, 36, 0},
    [QT_Q2_K] = {"Q2_K", 256, 84, 0},
    [QT_Q3_K] = {"Q3_K", 256, 110, 0},
    [QT_Q4_K] = {"Q4_K", 256, 144, 1},
    [QT_Q5_K] = {"Q5_K", 256, 176, 0},
    [QT_Q6_K] = {"Q6_K", 256, 210, 1},
    [QT_Q8_K] = {"Q8_K", 256, 292, 0},
    [16] = {"IQ2_XXS", 256, 66, 0},
    [17] = {"IQ2_XS", 256, 74, 0},
    [18] = {"IQ3_XXS", 256, 98, 0},
    [19] = {"IQ1_S", 256, 50, 0},
    [20] = {"IQ4_NL", 32, 18, 0},
    [21] = {"IQ3_S", 256, 110, 0},
    [22] = {"IQ2_S", 256, 82, 0},
    [23] = {"IQ4_XS", 256, 136, 0},
    [QT_I8] = {"I8", 1, 1, 0},
    [QT_I16] = {"I16", 1, 2, 0},
    [QT_I32] = {"I32", 1, 4, 0},
    [QT_I64] = {"I64", 1, 8, 0},
    [QT_F64] = {"F64", 1, 8, 0},
    [29] = {"IQ1_M", 256, 56, 0},
    [QT_BF16] = {"BF16", 1, 2, 1},
    [34] = {"TQ1_0", 256, 54, 0},
    [35] = {"TQ2_0", 256, 66, 0},
    [39] = {"MXFP4", 32, 17, 0},
};
static const qt_traits g_unknown = {NULL, 0, 0, 0};

const qt_traits *qt_get(uint32_t type) {
    if (type >= QT_COUNT || !g_traits[type].name) return &g_unknown;
    return &g_traits[type];
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

int qt_from_name(const char *name) {
    if (!name) return -1;
    for (int t = 0; t < QT_COUNT; t++) {
        const char *a = g_traits[t].name, *b = name;
        if (!a) continue;
        while (*a && lower((unsigned char)*a) == lower((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return t;
    }
    return -1;
}

size_t qt_row_bytes(uint32_t type, int64_t n) {
    const qt_traits *t = qt_get(type);
    uint64_t r;
    if (!t->name || n < 0 || n % t->block) return 0;
    if (ck_mul((uint64_t)(n / t->block), (uint64_t)t->bytes, &r) || r > SIZE_MAX) return 0;
    return (size_t)r;
}

/* ---- Q4_K scale packing: eight 6-bit scales and eight 6-bit mins in 12 bytes. Sub-blocks 0-3 keep
 * their scale and min in the low six bits of bytes 0-3 and 4-7; sub-blocks 4-7 keep their low four bits
 * in the nibbles of bytes 8-11 and their top two bits in the spare top bits of bytes 0-7. */
static void q4k_unpack_scales(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (uint8_t)((s[j + 8] & 15) | ((s[j] >> 6) << 4));
        mn[j + 4] = (uint8_t)((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
    }
}

static void q4k_pack_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t *s) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
}

/* ---- dequantize, one block at a time, following ggml's element order */

static void deq_q8_0(const block_q8_0 *b, float *y) {
    float d = fp16_to_f32(b->d);
    for (int i = 0; i < QK8_0; i++) y[i] = d * b->qs[i];
}

/* Byte j holds element j in its low nibble and element j + 16 in its high nibble. */
static void deq_q4_0(const block_q4_0 *b, float *y) {
    float d = fp16_to_f32(b->d);
    for (int j = 0; j < QK4_0 / 2; j++) {
        y[j] = d * ((b->qs[j] & 15) - 8);
        y[j + 16] = d * ((b->qs[j] >> 4) - 8);
    }
}

/* Four chunks of 64 elements; chunk c takes qs[32c..32c+31]: low nibbles are sub-block 2c, high 2c+1. */
static void deq_q4_K(const block_q4_K *b, float *y) {
    float d = fp16_to_f32(b->d), dmin = fp16_to_f32(b->dmin);
    uint8_t sc[8], mn[8];
    q4k_unpack_scales(b->scales, sc, mn);
    for (int c = 0; c < 4; c++) {
        const uint8_t *q = b->qs + 32 * c;
        for (int l = 0; l < 32; l++) {
            y[64 * c + l] = d * sc[2 * c] * (q[l] & 15) - dmin * mn[2 * c];
            y[64 * c + 32 + l] = d * sc[2 * c + 1] * (q[l] >> 4) - dmin * mn[2 * c + 1];
        }
    }
}

/* Two halves of 128 elements; in half h, element e = 32k + l (k = 0..3, l = 0..31) takes its low four
 * bits from ql[64h + l + 32(k & 1)] (low nibble for k < 2, high for k >= 2) and its top two bits from
 * qh[32h + l] >> 2k. Value = d * scales[e_global / 16] * (q - 32). */
static int q6k_get(const block_q6_K *b, int e) {
    int h = e / 128, k = (e % 128) / 32, l = e % 32;
    int lo = b->ql[64 * h + l + 32 * (k & 1)];
    lo = k < 2 ? lo & 15 : lo >> 4;
    int hi = (b->qh[32 * h + l] >> (2 * k)) & 3;
    return (lo | hi << 4) - 32;
}

static void q6k_set(block_q6_K *b, int e, int q) { /* q in [-32, 31]; fields start zeroed */
    int h = e / 128, k = (e % 128) / 32, l = e % 32, u = q + 32;
    b->ql[64 * h + l + 32 * (k & 1)] |= (uint8_t)(k < 2 ? (u & 15) : (u & 15) << 4);
    b->qh[32 * h + l] |= (uint8_t)((u >> 4) << (2 * k));
}

static void deq_q6_K(const block_q6_K *b, float *y) {
    float d = fp16_to_f32(b->d);
    for (int e = 0; e < QK_K; e++) y[e] = d * b->scales[e / 16] * q6k_get(b, e);
}

int qt_dequantize_row(uint32_t type, const void *src, float *y, int64_t n) {
    const qt_traits *t = qt_get(type);
    if (!t->supported || n < 0 || n % t->block) return -1;
    int64_t nb = n / t->block;
    switch (type) {
    case QT_F32: memmove(y, src, (size_t)n * 4); return 0;
    case QT_F16: for (int64_t i = 0; i < n; i++) y[i] = fp16_to_f32(((const uint16_t *)src)[i]); return 0;
    case QT_BF16: for (int64_t i = 0; i < n; i++) y[i] = bf16_to_f32(((const uint16_t *)src)[i]); return 0;
    case QT_Q8_0: for (int64_t i = 0; i < nb; i++) deq_q8_0((const block_q8_0 *)src + i, y + i * 32); return 0;
    case QT_Q4_0: for (int64_t i = 0; i < nb; i++) deq_q4_0((const block_q4_0 *)src + i, y + i * 32); return 0;
    case QT_Q4_K: for (int64_t i = 0; i < nb; i++) deq_q4_K((const block_q4_K *)src + i, y + i * QK_K); return 0;
    case QT_Q6_K: for (int64_t i = 0; i < nb; i++) deq_q6_K((const block_q6_K *)src + i, y + i * QK_K); return 0;
    }
    return -1;
}

/* ---- quantize */

static int nearest(float x) { return (int)lrintf(x); }

/* ggml's reference: d = amax / 127, q = round half away from zero of x / d. */
static void quant_q8_0(const float *x, block_q8_0 *b) {
    float amax = 0;
    for (int i = 0; i < QK8_0; i++) amax = fmaxf(amax, fabsf(x[i]));
    float d = amax / 127, id = d ? 1 / d : 0;
    b->d = f32_to_fp16(d);
    for (int i = 0; i < QK8_0; i++) b->qs[i] = (int8_t)roundf(x[i] * id);
}

/* ggml's reference: the signed value of largest magnitude maps to -8, so the other sign gets 7 steps;
 * q = min(15, trunc(x / d + 8.5)). */
static void quant_q4_0(const float *x, block_q4_0 *b) {
    float amax = 0, max = 0;
    for (int i = 0; i < QK4_0; i++)
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]), max = x[i];
    float d = max / -8, id = d ? 1 / d : 0;
    b->d = f32_to_fp16(d);
    for (int j = 0; j < QK4_0 / 2; j++) {
        int lo = (int8_t)(x[j] * id + 8.5f), hi = (int8_t)(x[j + 16] * id + 8.5f);
        lo = LAYA_MIN(15, lo), hi = LAYA_MIN(15, hi);
        b->qs[j] = (uint8_t)(lo | hi << 4);
    }
}

/* Not ggml's searching quantizer: one pass per sub-block of 32 mapping [min(0, lo), hi] onto 0..15, the
 * 6-bit scales rounded up so no value overflows its range. Good enough for tests and tools. */
static void quant_q4_K(const float *x, block_q4_K *b) {
    float scale[8], off[8], max_scale = 0, max_off = 0;
    for (int j = 0; j < 8; j++) {
        float lo = 0, hi = 0;
        for (int l = 0; l < 32; l++) lo = fminf(lo, x[32 * j + l]), hi = fmaxf(hi, x[32 * j + l]);
        scale[j] = (hi - lo) / 15;
        off[j] = -lo;
        max_scale = fmaxf(max_scale, scale[j]);
        max_off = fmaxf(max_off, off[j]);
    }
    b->d = f32_to_fp16(max_scale / 63);
    b->dmin = f32_to_fp16(max_off / 63);
    float d = fp16_to_f32(b->d), dmin = fp16_to_f32(b->dmin);
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = d > 0 ? (uint8_t)LAYA_MIN(63, (int)ceilf(scale[j] / d)) : 0;
        mn[j] = dmin > 0 ? (uint8_t)LAYA_MIN(63, nearest(off[j] / dmin)) : 0;
    }
    q4k_pack_scales(sc, mn, b->scales);
    memset(b->qs, 0, sizeof b->qs);
    for (int e = 0; e < QK_K; e++) {
        int j = e / 32, c = e / 64, l = e % 32;
        float ds = d * sc[j], m = dmin * mn[j];
        int q = ds > 0 ? nearest((x[e] + m) / ds) : 0;
        q = LAYA_MAX(0, LAYA_MIN(15, q));
        b->qs[32 * c + l] |= (uint8_t)(j & 1 ? q << 4 : q);
    }
}

/* Not ggml's quantizer either: symmetric per sub-block of 16 (amax -> 31), 8-bit sub-block scales. */
static void quant_q6_K(const float *x, block_q6_K *b) {
    float scale[16], max_scale = 0;
    for (int s = 0; s < 16; s++) {
        float amax = 0;
        for (int l = 0; l < 16; l++) amax = fmaxf(amax, fabsf(x[16 * s + l]));
        scale[s] = amax / 31;
        max_scale = fmaxf(max_scale, scale[s]);
    }
    memset(b, 0, sizeof *b);
    b->d = f32_to_fp16(max_scale / 127);
    float d = fp16_to_f32(b->d);
    for (int s = 0; s < 16; s++) b->scales[s] = (int8_t)(d > 0 ? LAYA_MIN(127, nearest(scale[s] / d)) : 0);
    for (int e = 0; e < QK_K; e++) {
        float ds = d * b->scales[e / 16];
        int q = ds > 0 ? nearest(x[e] / ds) : 0;
        q6k_set(b, e, LAYA_MAX(-32, LAYA_MIN(31, q)));
    }
}

int qt_quantize_row(uint32_t type, const float *x, void *dst, int64_t n) {
    const qt_traits *t = qt_get(type);
    if (!t->supported || n < 0 || n % t->block) return -1;
    int64_t nb = n / t->block;
    switch (type) {
    case QT_F32: memmove(dst, x, (size_t)n * 4); return 0;
    case QT_F16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = f32_to_fp16(x[i]); return 0;
    case QT_BF16: for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = f32_to_bf16(x[i]); return 0;
    case QT_Q8_0: for (int64_t i = 0; i < nb; i++) quant_q8_0(x + i * 32, (block_q8_0 *)dst + i); return 0;
    case QT_Q4_0: for (int64_t i = 0; i < nb; i++) quant_q4_0(x + i * 32, (block_q4_0 *)dst + i); return 0;
    case QT_Q4_K: for (int64_t i = 0; i < nb; i++) quant_q4_K(x + i * QK_K, (block_q4_K *)dst + i); return 0;
    case QT_Q6_K: for (int64_t i = 0; i < nb; i++) quant_q6_K(x + i * QK_K, (block_q6_K *)dst + i); return 0;
    }
    return -1;
}

/* ---- MLX affine quantization (mlx.core.quantize, mode "affine")
 *
 * Layout, verified against MLX's source (ml-explore/mlx at 846d176, mlx/backend/cpu/quantized.cpp
 * quantize() and mlx/ops.cpp affine_dequantize()): for bits 2, 4 and 8 a row of K values is packed into
 * K * bits / 32 uint32 words, 32 / bits values per word, value k of a word in bits [k*bits, (k+1)*bits)
 * (lowest bits first), the words in row order. Each group of `group` consecutive values of a row has one
 * scale and one bias, stored in the weight's own dtype (F16, BF16 or F32) as [N, K / group] arrays, and
 * w = scale * q + bias. (3, 5 and 6 bits pack into bytes instead and are not handled here.) */

static int mlx_params_ok(int bits, int group, uint32_t sb_type, int64_t K) {
    return (bits == 4 || bits == 8) && (group == 32 || group == 64 || group == 128) && K > 0 && K % group == 0 &&
           (sb_type == QT_F16 || sb_type == QT_BF16 || sb_type == QT_F32);
}

/* Scales and biases are read and written with memcpy: a tensor in a safetensors file need not be
 * aligned. */
float mlx_sb_get(uint32_t t, const void *p, int64_t i) {
    if (t == QT_F32) {
        float f;
        memcpy(&f, (const uint8_t *)p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const uint8_t *)p + 2 * i, 2);
    return t == QT_F16 ? fp16_to_f32(h) : bf16_to_f32(h);
}

/* Rounds to nearest even, as static_cast<float16_t / bfloat16_t>(float) does in MLX. */
static void mlx_sb_put(uint32_t t, void *p, int64_t i, float v) {
    if (t == QT_F32) {
        memcpy((uint8_t *)p + 4 * i, &v, 4);
    } else {
        uint16_t h = t == QT_F16 ? f32_to_fp16(v) : f32_to_bf16(v);
        memcpy((uint8_t *)p + 2 * i, &h, 2);
    }
}

int mlx_dequantize_row(int bits, int group, const uint32_t *w, const void *scales, const void *biases,
                       uint32_t sb_type, float *y, int64_t K) {
    if (!mlx_params_ok(bits, group, sb_type, K)) return -1;
    const int per_word = 32 / bits;
    const uint32_t mask = (1u << bits) - 1;
    for (int64_t k = 0; k < K; k++) {
        uint32_t word;
        memcpy(&word, w + k / per_word, 4);
        uint32_t q = (word >> (bits * (k % per_word))) & mask;
        y[k] = mlx_sb_get(sb_type, scales, k / group) * (float)q + mlx_sb_get(sb_type, biases, k / group);
    }
    return 0;
}

/* The quantizer of MLX's CPU backend (quantize() in mlx/backend/cpu/quantized.cpp, read at 846d176; the
 * ops.cpp fallback computes the same), step for step in float32, so its output matches mx.quantize on
 * the CPU bit for bit. Per group of G values v (float32 arithmetic throughout):
 *
 *     n_bins = float32(2^bits - 1);  eps = float32(1e-7)
 *     w_min = min(v); w_max = max(v)            # NaNs are skipped
 *     mask  = |w_min| > |w_max|                 # strictly: on a tie the max is the edge
 *     scale = max((w_max - w_min) / n_bins, eps)
 *     if not mask: scale = -scale               # a negative scale when the max is the edge
 *     edge  = w_min if mask else w_max
 *     q0    = rint(edge / scale)                # round half to even; q0 stays a float
 *     if q0 != 0: scale = edge / q0; bias = edge    # the edge dequantizes exactly (q = 0 -> bias)
 *     else:       bias = 0                          # only if scale was clamped to eps and |edge| <= eps/2
 *     q     = clip(rint((v - bias) / scale), 0, n_bins)   # with the unrounded float32 scale and bias
 *     store scale and bias converted to sb_type (round to nearest even); pack q as above
 *
 * So q = 0 is the larger-magnitude extreme and zero falls on an integer step (q = -q0). A NaN q (NaN
 * input, or inf from edge / scale overflowing for |edge| > ~3e31) is stored as 0 here, where MLX's
 * float-to-integer cast is undefined. MLX's GPU kernels (Metal, CUDA: affine_quantize in
 * mlx/backend/metal/kernels/quantized.h) differ in two details: w_max starts at 0 rather than -inf, so
 * a group with no positive value gets w_max = 0; and round() there breaks ties away from zero. Files
 * quantized on a Mac GPU can therefore differ from this in rare q values and in all-negative groups;
 * dequantization reads both alike. */
int mlx_quantize_row(int bits, int group, const float *x, uint32_t *w, void *scales, void *biases,
                     uint32_t sb_type, int64_t K) {
    if (!mlx_params_ok(bits, group, sb_type, K)) return -1;
    const int per_word = 32 / bits;
    const float n_bins = (float)((1 << bits) - 1), eps = (float)1e-7;
    for (int64_t g = 0; g < K / group; g++) {
        const float *v = x + g * group;
        float w_min = INFINITY, w_max = -INFINITY;
        for (int j = 0; j < group; j++) { /* std::max / std::min, in that argument order */
            if (w_max < v[j]) w_max = v[j];
            if (v[j] < w_min) w_min = v[j];
        }
        int mask = fabsf(w_min) > fabsf(w_max);
        float scale = (w_max - w_min) / n_bins;
        if (scale < eps) scale = eps;
        if (!mask) scale = -scale;
        float edge = mask ? w_min : w_max;
        float q0 = rintf(edge / scale), bias = 0;
        if (q0 != 0) scale = edge / q0, bias = edge;
        uint32_t *out = w + g * group / per_word;
        for (int j = 0; j < group / per_word; j++) {
            uint32_t word = 0;
            for (int k = 0; k < per_word; k++) {
                float q = rintf((v[j * per_word + k] - bias) / scale);
                q = q > 0 ? q : 0; /* also NaN -> 0 */
                q = q < n_bins ? q : n_bins;
                word |= (uint32_t)q << (k * bits);
            }
            memcpy(out + j, &word, 4);
        }
        mlx_sb_put(sb_type, scales, g, scale);
        mlx_sb_put(sb_type, biases, g, bias);
    }
    return 0;
}
