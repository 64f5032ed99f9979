/* quant.c — the tensor type table (ggml ids, block sizes, names) and scalar quantize/dequantize of whole
 * rows in ggml's block layouts. This is the slow, obvious path used by the loader, `laya quantize` and the
 * tests; the forward pass never calls it (its dot products live in kernels/). */
#include "io/qtypes.h"

#include <math.h>
#include <string.h>

#include "base/common.h"

_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 layout");
_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 layout");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K layout");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K layout");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K layout");
_Static_assert(sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22 && sizeof(block_q5_1) == 24, "q4_1/q5 layouts");
_Static_assert(sizeof(block_iq4_nl) == 18 && sizeof(block_q8_s) == 36, "iq4_nl / q8_s layouts");
_Static_assert(sizeof(block_q2_K) == 84 && sizeof(block_q3_K) == 110 && sizeof(block_q5_K) == 176, "k layouts");

const int8_t kIQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* Every id ggml has assigned a layout to, so a file holding one opens and later reports a clear
 * "unsupported type X" instead of "unknown type 17". Ids ggml retired (4, 5, 31-33, 36-38) stay unknown. */
static const qt_traits g_traits[QT_COUNT] = {
    [QT_F32] = {"F32", 1, 4, 1},
    [QT_F16] = {"F16", 1, 2, 1},
    [QT_Q4_0] = {"Q4_0", 32, 18, 1},
    [QT_Q4_1] = {"Q4_1", 32, 20, 1},
    [QT_Q5_0] = {"Q5_0", 32, 22, 1},
    [QT_Q5_1] = {"Q5_1", 32, 24, 1},
    [QT_Q8_0] = {"Q8_0", 32, 34, 1},
    [QT_Q8_1] = {"Q8_1", 32, 36, 0},
    [QT_Q2_K] = {"Q2_K", 256, 84, 1},
    [QT_Q3_K] = {"Q3_K", 256, 110, 1},
    [QT_Q4_K] = {"Q4_K", 256, 144, 1},
    [QT_Q5_K] = {"Q5_K", 256, 176, 1},
    [QT_Q6_K] = {"Q6_K", 256, 210, 1},
    [QT_Q8_K] = {"Q8_K", 256, 292, 0},
    [16] = {"IQ2_XXS", 256, 66, 0},
    [17] = {"IQ2_XS", 256, 74, 0},
    [18] = {"IQ3_XXS", 256, 98, 0},
    [19] = {"IQ1_S", 256, 50, 0},
    [QT_IQ4_NL] = {"IQ4_NL", 32, 18, 1},
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
void qt_k4_scales_unpack(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (uint8_t)((s[j + 8] & 15) | ((s[j] >> 6) << 4));
        mn[j + 4] = (uint8_t)((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
    }
}

void qt_k4_scales_pack(const uint8_t sc[8], const uint8_t mn[8], uint8_t *s) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
}

/* Q6_K element e as a signed 6-bit value (layout: qt_block_ints) and its inverse for the quantizer. */
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

/* ---- the integers of one block
 *
 * Every block type is d * S * q - dmin * M per element: q an integer per element, S and M integers per
 * sub-block of 16 (the 32-element types: one sub-block of 32, S = 1, and dmin * M the float minimum m of
 * Q4_1 / Q5_1). Element orders follow ggml's dequantize loops; each is spelled out at its case. */

static int bit_of(const uint8_t *bits, int i) { return (bits[i / 8] >> (i % 8)) & 1; }

int qt_block_ints(uint32_t type, const void *blk, int *q, int *sc, int *mn, float *d, float *dmin) {
    *dmin = 0;
    switch (type) {
    case QT_Q8_0: {
        const block_q8_0 *b = blk;
        *d = fp16_to_f32(b->d);
        for (int j = 0; j < 32; j++) q[j] = b->qs[j];
        return 1;
    }
    /* 32-element nibble types: byte j holds element j in its low nibble and j + 16 in its high one; the
     * Q5 types take bit 4 of element j from bit j of qh (a little-endian 32-bit word). */
    case QT_Q4_0:
    case QT_Q4_1:
    case QT_Q5_0:
    case QT_Q5_1:
    case QT_IQ4_NL: {
        const uint8_t *qs, *qh = NULL;
        qt_half hd, hm = 0;
        switch (type) {
        case QT_Q4_0: hd = ((const block_q4_0 *)blk)->d, qs = ((const block_q4_0 *)blk)->qs; break;
        case QT_Q4_1: hd = ((const block_q4_1 *)blk)->d, hm = ((const block_q4_1 *)blk)->m, qs = ((const block_q4_1 *)blk)->qs; break;
        case QT_Q5_0: hd = ((const block_q5_0 *)blk)->d, qs = ((const block_q5_0 *)blk)->qs, qh = ((const block_q5_0 *)blk)->qh; break;
        case QT_Q5_1:
            hd = ((const block_q5_1 *)blk)->d, hm = ((const block_q5_1 *)blk)->m;
            qs = ((const block_q5_1 *)blk)->qs, qh = ((const block_q5_1 *)blk)->qh;
            break;
        default: hd = ((const block_iq4_nl *)blk)->d, qs = ((const block_iq4_nl *)blk)->qs; break;
        }
        *d = fp16_to_f32(hd), *dmin = fp16_to_f32(hm);
        for (int j = 0; j < 32; j++) {
            int v = j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
            if (qh) v |= bit_of(qh, j) << 4;
            q[j] = type == QT_Q4_0 ? v - 8 : type == QT_Q5_0 ? v - 16 : type == QT_IQ4_NL ? kIQ4NL[v] : v;
        }
        return 1;
    }
    /* Q4_K / Q5_K: eight sub-blocks of 32 (scales and mins: q4k_unpack_scales); element e = 64c + l
     * (l < 64) takes the low nibble of qs[32c + l] for l < 32, the high one of qs[32c + l - 32] after;
     * Q5_K adds bit e / 32 of qh[e % 32] as bit 4. */
    case QT_Q4_K:
    case QT_Q5_K: {
        const block_q4_K *b4 = blk;
        const block_q5_K *b5 = blk;
        const uint8_t *qs = type == QT_Q4_K ? b4->qs : b5->qs;
        uint8_t s8[8], m8[8];
        qt_k4_scales_unpack(type == QT_Q4_K ? b4->scales : b5->scales, s8, m8);
        *d = fp16_to_f32(type == QT_Q4_K ? b4->d : b5->d), *dmin = fp16_to_f32(type == QT_Q4_K ? b4->dmin : b5->dmin);
        for (int e = 0; e < QK_K; e++) {
            int c = e / 64, l = e % 64, v = l < 32 ? qs[32 * c + l] & 15 : qs[32 * c + l - 32] >> 4;
            if (type == QT_Q5_K) v |= ((b5->qh[e % 32] >> (e / 32)) & 1) << 4;
            q[e] = v;
        }
        for (int s = 0; s < 16; s++) sc[s] = s8[s / 2], mn[s] = m8[s / 2];
        return 16;
    }
    /* Q6_K: halves of 128; in half h, element 32k + l (k < 4, l < 32) takes its low four bits from
     * ql[64h + l + 32(k & 1)] (low nibble for k < 2, high for k >= 2) and its top two from qh[32h + l] >> 2k;
     * q - 32, with the signed 8-bit scales of its sixteen sub-blocks. */
    case QT_Q6_K: {
        const block_q6_K *b = blk;
        *d = fp16_to_f32(b->d);
        for (int e = 0; e < QK_K; e++) q[e] = q6k_get(b, e);
        for (int s = 0; s < 16; s++) sc[s] = b->scales[s], mn[s] = 0;
        return 16;
    }
    /* Q3_K: halves of 128; in half h, element 32k + l takes bits 2k, 2k + 1 of qs[32h + l], minus 4 unless
     * bit e / 32 of hmask[l] is set. Scale s (6 bits, minus 32): low four bits from the low (s < 8) or high
     * nibble of scales[s % 8], top two from bits 2(s / 4) of scales[8 + s % 4]. */
    case QT_Q3_K: {
        const block_q3_K *b = blk;
        *d = fp16_to_f32(b->d);
        for (int e = 0; e < QK_K; e++) {
            int h = e / 128, k = (e % 128) / 32, l = e % 32;
            q[e] = ((b->qs[32 * h + l] >> (2 * k)) & 3) - ((b->hmask[l] >> (e / 32)) & 1 ? 0 : 4);
        }
        for (int s = 0; s < 16; s++) {
            int lo = s < 8 ? b->scales[s] & 15 : b->scales[s - 8] >> 4, hi = (b->scales[8 + s % 4] >> (2 * (s / 4))) & 3;
            sc[s] = (lo | hi << 4) - 32, mn[s] = 0;
        }
        return 16;
    }
    /* Q2_K: element 32k + l of half h is bits 2k, 2k + 1 of qs[32h + l]; sub-block s's scale is the low
     * nibble of scales[s], its min the high one. */
    case QT_Q2_K: {
        const block_q2_K *b = blk;
        *d = fp16_to_f32(b->d), *dmin = fp16_to_f32(b->dmin);
        for (int e = 0; e < QK_K; e++) q[e] = (b->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
        for (int s = 0; s < 16; s++) sc[s] = b->scales[s] & 15, mn[s] = b->scales[s] >> 4;
        return 16;
    }
    }
    return 0;
}

/* ---- dequantize: ggml's arithmetic, (d * S) * q - dmin * M, and d * q + m for Q4_1 / Q5_1 */

int qt_dequantize_row(uint32_t type, const void *src, float *y, int64_t n) {
    const qt_traits *t = qt_get(type);
    if (!t->supported || n < 0 || n % t->block) return -1;
    int64_t nb = n / t->block;
    switch (type) {
    case QT_F32: memmove(y, src, (size_t)n * 4); return 0;
    case QT_F16: for (int64_t i = 0; i < n; i++) y[i] = fp16_to_f32(((const uint16_t *)src)[i]); return 0;
    case QT_BF16: for (int64_t i = 0; i < n; i++) y[i] = bf16_to_f32(((const uint16_t *)src)[i]); return 0;
    }
    int q[QK_K], sc[16], mn[16];
    float d, dmin;
    for (int64_t i = 0; i < nb; i++) {
        float *out = y + i * t->block;
        int ns = qt_block_ints(type, (const uint8_t *)src + (size_t)i * (size_t)t->bytes, q, sc, mn, &d, &dmin);
        if (ns == 1) {
            for (int j = 0; j < 32; j++) out[j] = type == QT_Q4_1 || type == QT_Q5_1 ? d * q[j] + dmin : d * q[j];
        } else {
            for (int e = 0; e < QK_K; e++) out[e] = d * sc[e / 16] * q[e] - dmin * mn[e / 16];
        }
    }
    return 0;
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

/* ggml's reference quantizers of the types with a minimum: d = (max - min) / (2^bits - 1), m = min,
 * q = min(2^bits - 1, trunc((x - min) / d + 0.5)). Q5's bit 4 of element j goes to bit j of qh. */
static void quant_min_type(const float *x, uint32_t type, uint8_t *dst) {
    const int q5 = type == QT_Q5_1, top = q5 ? 31 : 15;
    float lo = x[0], hi = x[0];
    for (int i = 1; i < 32; i++) lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
    float d = (hi - lo) / top, id = d ? 1 / d : 0;
    qt_half hd = f32_to_fp16(d), hm = f32_to_fp16(lo);
    uint8_t *qs = dst + (q5 ? 8 : 4);
    uint32_t qh = 0;
    memcpy(dst, &hd, 2), memcpy(dst + 2, &hm, 2);
    for (int j = 0; j < 16; j++) {
        int a = LAYA_MIN(top, (int)((x[j] - lo) * id + 0.5f)), b = LAYA_MIN(top, (int)((x[j + 16] - lo) * id + 0.5f));
        qs[j] = (uint8_t)((a & 15) | (b & 15) << 4);
        qh |= (uint32_t)(a >> 4) << j | (uint32_t)(b >> 4) << (j + 16);
    }
    if (q5) memcpy(dst + 4, &qh, 4);
}

/* ggml's reference Q5_0: the value of largest magnitude maps to -16, q = min(31, trunc(x / d + 16.5)). */
static void quant_q5_0(const float *x, block_q5_0 *b) {
    float amax = 0, max = 0;
    for (int i = 0; i < 32; i++)
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]), max = x[i];
    float d = max / -16, id = d ? 1 / d : 0;
    uint32_t qh = 0;
    b->d = f32_to_fp16(d);
    for (int j = 0; j < 16; j++) {
        int lo = LAYA_MIN(31, (int)(x[j] * id + 16.5f)), hi = LAYA_MIN(31, (int)(x[j + 16] * id + 16.5f));
        b->qs[j] = (uint8_t)((lo & 15) | (hi & 15) << 4);
        qh |= (uint32_t)(lo >> 4) << j | (uint32_t)(hi >> 4) << (j + 16);
    }
    memcpy(b->qh, &qh, 4);
}

/* Not ggml's searching quantizer: the value of largest magnitude maps to the level -127 (or 113 for a
 * positive one, whichever keeps every value in range), every value to its nearest level. */
static void quant_iq4_nl(const float *x, block_iq4_nl *b) {
    float amax = 0, max = 0;
    for (int i = 0; i < 32; i++)
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]), max = x[i];
    float d = max / -127;
    b->d = f32_to_fp16(d);
    d = fp16_to_f32(b->d);
    uint8_t idx[32];
    for (int j = 0; j < 32; j++) {
        int best = 0;
        float be = INFINITY;
        for (int k = 0; k < 16; k++) {
            float e = fabsf(x[j] - d * kIQ4NL[k]);
            if (e < be) be = e, best = k;
        }
        idx[j] = (uint8_t)best;
    }
    for (int j = 0; j < 16; j++) b->qs[j] = (uint8_t)(idx[j] | idx[j + 16] << 4);
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
    qt_k4_scales_pack(sc, mn, b->scales);
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
    case QT_Q4_1: for (int64_t i = 0; i < nb; i++) quant_min_type(x + i * 32, type, (uint8_t *)dst + i * 20); return 0;
    case QT_Q5_1: for (int64_t i = 0; i < nb; i++) quant_min_type(x + i * 32, type, (uint8_t *)dst + i * 24); return 0;
    case QT_Q5_0: for (int64_t i = 0; i < nb; i++) quant_q5_0(x + i * 32, (block_q5_0 *)dst + i); return 0;
    case QT_IQ4_NL: for (int64_t i = 0; i < nb; i++) quant_iq4_nl(x + i * 32, (block_iq4_nl *)dst + i); return 0;
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
