/* test_quant.c — tensor types: fp16/bf16 conversion edge cases, the traits table, hand-built blocks with
 * known decoded values (checked against a second, independent reading of each layout), and
 * quantize -> dequantize round-trip error bounds. Kernels are tested in test_kernels.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common.h"
#include "qtypes.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float frnd(void) { return (float)rnd() / 4294967296.0f * 2 - 1; } /* [-1, 1) */
static float f_of(uint32_t bits) { float f; memcpy(&f, &bits, 4); return f; }
static uint32_t bits_of(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

static void test_fp16(void) {
    /* decode */
    CHECK(fp16_to_f32(0x0000) == 0 && !signbit(fp16_to_f32(0x0000)), "+0");
    CHECK(fp16_to_f32(0x8000) == 0 && signbit(fp16_to_f32(0x8000)), "-0");
    CHECK(fp16_to_f32(0x3c00) == 1.0f, "1.0");
    CHECK(fp16_to_f32(0xc000) == -2.0f, "-2.0");
    CHECK(fp16_to_f32(0x0001) == ldexpf(1, -24), "smallest subnormal %g", fp16_to_f32(0x0001));
    CHECK(fp16_to_f32(0x03ff) == ldexpf(1023, -24), "largest subnormal");
    CHECK(fp16_to_f32(0x0400) == ldexpf(1, -14), "smallest normal");
    CHECK(fp16_to_f32(0x7bff) == 65504.0f, "max");
    CHECK(isinf(fp16_to_f32(0x7c00)) && fp16_to_f32(0x7c00) > 0, "+inf");
    CHECK(isinf(fp16_to_f32(0xfc00)) && fp16_to_f32(0xfc00) < 0, "-inf");
    CHECK(isnan(fp16_to_f32(0x7e00)) && isnan(fp16_to_f32(0x7c01)), "nan");
    /* encode, round to nearest even */
    CHECK(f32_to_fp16(1.0f) == 0x3c00, "1.0");
    CHECK(f32_to_fp16(-0.0f) == 0x8000, "-0");
    CHECK(f32_to_fp16(65504.0f) == 0x7bff, "max");
    CHECK(f32_to_fp16(65519.0f) == 0x7bff, "65519 rounds down");
    CHECK(f32_to_fp16(65520.0f) == 0x7c00, "65520 overflows to inf");
    CHECK(f32_to_fp16(1e10f) == 0x7c00 && f32_to_fp16(-1e10f) == 0xfc00, "overflow");
    CHECK(f32_to_fp16(INFINITY) == 0x7c00 && f32_to_fp16(-INFINITY) == 0xfc00, "inf");
    uint16_t n = f32_to_fp16(NAN);
    CHECK((n & 0x7c00) == 0x7c00 && (n & 0x3ff), "nan stays nan: %04x", n);
    CHECK(f32_to_fp16(1.0f + ldexpf(1, -11)) == 0x3c00, "tie to even (down)");
    CHECK(f32_to_fp16(1.0f + 3 * ldexpf(1, -11)) == 0x3c02, "tie to even (up)");
    CHECK(f32_to_fp16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)) == 0x3c01, "above tie");
    CHECK(f32_to_fp16(ldexpf(1, -24)) == 0x0001, "smallest subnormal");
    CHECK(f32_to_fp16(ldexpf(1, -25)) == 0x0000, "half the smallest subnormal: tie to even 0");
    CHECK(f32_to_fp16(ldexpf(3, -25)) == 0x0002, "1.5 units: tie to even 2");
    CHECK(f32_to_fp16(ldexpf(1, -25) * 1.0001f) == 0x0001, "just above half a unit");
    CHECK(f32_to_fp16(ldexpf(1023, -24)) == 0x03ff, "largest subnormal");
    CHECK(f32_to_fp16(ldexpf(2047, -25)) == 0x0400, "rounds up into the normals");
    CHECK(f32_to_fp16(1e-10f) == 0 && f32_to_fp16(-1e-10f) == 0x8000, "underflow keeps sign");
    /* every finite half survives a round trip */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00) continue;
        if (f32_to_fp16(fp16_to_f32((uint16_t)h)) != h) bad++;
    }
    CHECK(bad == 0, "%d halves do not round-trip", bad);

    CHECK(bf16_to_f32(0x3f80) == 1.0f && bf16_to_f32(0xc040) == -3.0f, "bf16 decode");
    CHECK(f32_to_bf16(1.0f) == 0x3f80, "bf16 1.0");
    CHECK(f32_to_bf16(f_of(0x3f808000)) == 0x3f80, "bf16 tie to even (down)");
    CHECK(f32_to_bf16(f_of(0x3f818000)) == 0x3f82, "bf16 tie to even (up)");
    CHECK(f32_to_bf16(f_of(0x3f808001)) == 0x3f81, "bf16 above tie");
    CHECK(f32_to_bf16(f_of(0x7f7fffff)) == 0x7f80, "bf16 FLT_MAX rounds to inf");
    CHECK(f32_to_bf16(INFINITY) == 0x7f80 && f32_to_bf16(-INFINITY) == 0xff80, "bf16 inf");
    uint16_t bn = f32_to_bf16(f_of(0x7f800001)); /* signalling NaN whose payload is all in the low half */
    CHECK((bn & 0x7f80) == 0x7f80 && (bn & 0x7f), "bf16 nan stays nan: %04x", bn);
    CHECK(f32_to_bf16(f_of(0x00000001)) == 0, "bf16 tiny subnormal");
    CHECK(bits_of(bf16_to_f32(0x0001)) == 0x00010000u, "bf16 subnormal decode");
}

static void test_traits(void) {
    static const struct { uint32_t id; const char *name; int block, bytes, supported; } known[] = {
        {QT_F32, "F32", 1, 4, 1},        {QT_F16, "F16", 1, 2, 1},       {QT_Q4_0, "Q4_0", 32, 18, 1},
        {QT_Q4_1, "Q4_1", 32, 20, 0},    {QT_Q5_0, "Q5_0", 32, 22, 0},   {QT_Q5_1, "Q5_1", 32, 24, 0},
        {QT_Q8_0, "Q8_0", 32, 34, 1},    {QT_Q8_1, "Q8_1", 32, 36, 0},   {QT_Q2_K, "Q2_K", 256, 84, 0},
        {QT_Q3_K, "Q3_K", 256, 110, 0},  {QT_Q4_K, "Q4_K", 256, 144, 1}, {QT_Q5_K, "Q5_K", 256, 176, 0},
        {QT_Q6_K, "Q6_K", 256, 210, 1},  {QT_Q8_K, "Q8_K", 256, 292, 0}, {QT_I8, "I8", 1, 1, 0},
        {QT_I16, "I16", 1, 2, 0},        {QT_I32, "I32", 1, 4, 0},       {QT_I64, "I64", 1, 8, 0},
        {QT_F64, "F64", 1, 8, 0},        {QT_BF16, "BF16", 1, 2, 1},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        const qt_traits *t = qt_get(known[i].id);
        CHECK(t && t->name && !strcmp(t->name, known[i].name), "name of %u", known[i].id);
        CHECK(t->block == known[i].block && t->bytes == known[i].bytes, "%s block/bytes %d/%d", known[i].name,
              t->block, t->bytes);
        CHECK(t->supported == known[i].supported, "%s supported", known[i].name);
        CHECK(qt_from_name(known[i].name) == (int)known[i].id, "from_name %s", known[i].name);
    }
    static const uint32_t unknown[] = {4, 5, 31, 32, 33, 36, 37, 38, QT_COUNT, 1000, 0xffffffffu};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++) {
        const qt_traits *t = qt_get(unknown[i]);
        CHECK(t != NULL && t->name == NULL && !t->supported && t->bytes == 0, "unknown id %u", unknown[i]);
        CHECK(qt_row_bytes(unknown[i], 32) == 0, "row bytes of unknown %u", unknown[i]);
    }
    CHECK(qt_from_name("q8_0") == QT_Q8_0 && qt_from_name("bf16") == QT_BF16 && qt_from_name("q4_k") == QT_Q4_K,
          "case-insensitive");
    CHECK(qt_from_name("Q8") == -1 && qt_from_name("Q8_00") == -1 && qt_from_name("") == -1 &&
              qt_from_name(NULL) == -1, "unknown names");
    CHECK(qt_row_bytes(QT_Q4_0, 64) == 36 && qt_row_bytes(QT_Q4_0, 33) == 0 && qt_row_bytes(QT_Q4_0, 0) == 0,
          "q4_0 row bytes");
    CHECK(qt_row_bytes(QT_Q4_K, 4864) == 19 * 144 && qt_row_bytes(QT_Q6_K, 255) == 0, "k row bytes");
    CHECK(qt_row_bytes(QT_F32, 3) == 12 && qt_row_bytes(QT_BF16, 7) == 14 && qt_row_bytes(QT_F32, -32) == 0,
          "float row bytes");
    CHECK(qt_row_bytes(QT_F32, INT64_MAX) == 0 && qt_row_bytes(QT_F64, INT64_MAX) == 0, "row bytes overflow");
    float x[32] = {0}, y[32];
    uint8_t buf[64];
    CHECK(qt_quantize_row(QT_Q4_1, x, buf, 32) == -1 && qt_dequantize_row(QT_Q5_K, buf, y, 256) == -1,
          "unsupported types refuse");
    CHECK(qt_quantize_row(QT_Q8_0, x, buf, 31) == -1 && qt_dequantize_row(QT_Q8_0, buf, y, 33) == -1,
          "partial blocks refuse");
    CHECK(qt_quantize_row(77, x, buf, 32) == -1, "unknown type refuses");
}

/* ---- hand-built blocks */

static void test_known_blocks(void) {
    float y[256];
    block_q4_0 b4 = {0};
    b4.d = f32_to_fp16(1.0f);
    for (int j = 0; j < 16; j++) b4.qs[j] = (uint8_t)(j | (15 - j) << 4);
    CHECK(qt_dequantize_row(QT_Q4_0, &b4, y, 32) == 0, "q4_0 dequant");
    int bad = 0;
    for (int j = 0; j < 16; j++) bad += y[j] != j - 8 || y[j + 16] != 7 - j;
    CHECK(bad == 0, "q4_0 nibble order: y[0]=%g y[15]=%g y[16]=%g y[31]=%g", y[0], y[15], y[16], y[31]);

    block_q8_0 b8;
    b8.d = f32_to_fp16(0.5f);
    for (int j = 0; j < 32; j++) b8.qs[j] = (int8_t)(j * 8 - 128);
    qt_dequantize_row(QT_Q8_0, &b8, y, 32);
    bad = 0;
    for (int j = 0; j < 32; j++) bad += y[j] != 0.5f * (j * 8 - 128);
    CHECK(bad == 0, "q8_0 values");

    /* Q4_K, field by field. Scales and mins as ggml's get_scale_min_k4 reads them: sub-blocks 0-3 from the
     * low six bits of bytes 0-3 / 4-7; sub-blocks 4-7 from the nibbles of bytes 8-11 plus the top two
     * bits of bytes 0-3 (scales) and 4-7 (mins). */
    block_q4_K k4;
    memset(&k4, 0, sizeof k4);
    k4.d = f32_to_fp16(0.25f);
    k4.dmin = f32_to_fp16(0.125f);
    static const uint8_t scales[12] = {0x41, 0x82, 0xc3, 0x04, 0x05, 0x46, 0x87, 0xf8, 0x21, 0x43, 0x65, 0xa7};
    memcpy(k4.scales, scales, 12);
    int sc[8], mn[8];
    for (int j = 0; j < 8; j++) {
        const uint8_t *q = scales;
        if (j < 4) sc[j] = q[j] & 63, mn[j] = q[j + 4] & 63;
        else sc[j] = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), mn[j] = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
    /* hand-decoded: byte 0 = 0x41 -> sc0 = 1, top bits 01 -> sc4 = 0x1 | 1 << 4 = 17 */
    CHECK(sc[0] == 1 && sc[4] == 17 && mn[3] == 56 && mn[7] == (0xa >> 0 | 3 << 4), "q4_K scale reading");
    for (int i = 0; i < 128; i++) k4.qs[i] = (uint8_t)(rnd() & 0xff);
    qt_dequantize_row(QT_Q4_K, &k4, y, 256);
    bad = 0;
    for (int e = 0; e < 256; e++) {
        int j = e / 32, c = e / 64, l = e % 32, q = k4.qs[32 * c + l];
        int nib = (e % 64) < 32 ? q & 15 : q >> 4;
        float want = 0.25f * sc[j] * nib - 0.125f * mn[j];
        bad += fabsf(y[e] - want) > 1e-6f;
    }
    CHECK(bad == 0, "q4_K decode (%d wrong)", bad);
    k4.qs[0] = 0x9c, k4.qs[127] = 0x3e; /* element 0: nibble 12 of sub-block 0; 255: nibble 3 of 7 */
    qt_dequantize_row(QT_Q4_K, &k4, y, 256);
    CHECK(y[0] == 0.25f * 1 * 12 - 0.125f * 5 && y[32] == 0.25f * sc[1] * 9 - 0.125f * mn[1] &&
              y[255] == 0.25f * sc[7] * 3 - 0.125f * mn[7],
          "q4_K hand values %g %g %g", y[0], y[32], y[255]);

    /* Q6_K, field by field, read the way ggml's dequantize loop walks it: per half of 128, for l < 32,
     * four values from ql[l], ql[l + 32] (low then high nibbles) and the bit pairs of qh[l]. */
    block_q6_K k6;
    for (int i = 0; i < 128; i++) k6.ql[i] = (uint8_t)rnd();
    for (int i = 0; i < 64; i++) k6.qh[i] = (uint8_t)rnd();
    for (int i = 0; i < 16; i++) k6.scales[i] = (int8_t)(i * 17 - 128);
    k6.d = f32_to_fp16(0.0625f);
    float want6[256];
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = k6.ql + 64 * h, *qh = k6.qh + 32 * h;
        const int8_t *s = k6.scales + 8 * h;
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0 & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2 & 3) << 4)) - 32;
            int q3 = ((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
            want6[128 * h + l] = 0.0625f * s[is] * q1;
            want6[128 * h + l + 32] = 0.0625f * s[is + 2] * q2;
            want6[128 * h + l + 64] = 0.0625f * s[is + 4] * q3;
            want6[128 * h + l + 96] = 0.0625f * s[is + 6] * q4;
        }
    }
    qt_dequantize_row(QT_Q6_K, &k6, y, 256);
    bad = 0;
    for (int e = 0; e < 256; e++) bad += y[e] != want6[e];
    CHECK(bad == 0, "q6_K decode (%d wrong)", bad);
    k6.ql[0] = 0x5a, k6.qh[0] = 0xe4; /* e0: 0xa | 0 << 4; e64: 0x5 | 2 << 4; e96: ql[32] hi | 3 << 4 */
    qt_dequantize_row(QT_Q6_K, &k6, y, 256);
    CHECK(y[0] == 0.0625f * -128 * (10 - 32) && y[64] == 0.0625f * k6.scales[4] * (0x25 - 32) &&
              y[96] == 0.0625f * k6.scales[6] * (((k6.ql[32] >> 4) | 0x30) - 32) &&
              y[32] == 0.0625f * k6.scales[2] * (((k6.ql[32] & 15) | 0x10) - 32),
          "q6_K hand values %g %g %g", y[0], y[64], y[96]);

    /* F16 / BF16 rows */
    uint16_t h[4] = {0x3c00, 0xc000, 0x0001, 0x7bff};
    qt_dequantize_row(QT_F16, h, y, 4);
    CHECK(y[0] == 1 && y[1] == -2 && y[2] == ldexpf(1, -24) && y[3] == 65504, "f16 row");
    uint16_t bh[2] = {0x3f80, 0xc040};
    qt_dequantize_row(QT_BF16, bh, y, 2);
    CHECK(y[0] == 1 && y[1] == -3, "bf16 row");
}

/* ---- ggml's reference quantizers, to the bit */

static void test_ggml_rounding(void) {
    int bad8 = 0, bad4 = 0;
    for (int it = 0; it < 2000; it++) {
        float x[32];
        float scale = ldexpf(1, (int)(rnd() % 20) - 10);
        for (int i = 0; i < 32; i++) x[i] = frnd() * scale;
        if (it % 7 == 0) x[rnd() % 32] = -scale * 1.5f; /* a negative extreme */
        if (it % 11 == 0) for (int i = 0; i < 32; i++) x[i] = (float)((int)(rnd() % 9) - 4) * 0.5f; /* ties */
        block_q8_0 q8;
        qt_quantize_row(QT_Q8_0, x, &q8, 32);
        float amax = 0;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127, id = d ? 1 / d : 0;
        bad8 += q8.d != f32_to_fp16(d);
        for (int i = 0; i < 32; i++) bad8 += q8.qs[i] != (int8_t)roundf(x[i] * id);

        block_q4_0 q4;
        qt_quantize_row(QT_Q4_0, x, &q4, 32);
        float max = 0;
        amax = 0;
        for (int i = 0; i < 32; i++)
            if (fabsf(x[i]) > amax) amax = fabsf(x[i]), max = x[i];
        d = max / -8, id = d ? 1 / d : 0;
        bad4 += q4.d != f32_to_fp16(d);
        for (int j = 0; j < 16; j++) {
            int lo = (int8_t)(x[j] * id + 8.5f), hi = (int8_t)(x[j + 16] * id + 8.5f);
            bad4 += (q4.qs[j] & 15) != (lo > 15 ? 15 : lo) || (q4.qs[j] >> 4) != (hi > 15 ? 15 : hi);
        }
    }
    CHECK(bad8 == 0, "q8_0 differs from ggml's reference in %d places", bad8);
    CHECK(bad4 == 0, "q4_0 differs from ggml's reference in %d places", bad4);
}

/* ---- round trips */

static void fill(float *x, int n, int kind) {
    for (int i = 0; i < n; i++) {
        switch (kind) {
        case 0: x[i] = frnd(); break;                                  /* uniform */
        case 1: x[i] = frnd() * ldexpf(1, (int)(rnd() % 16) - 8); break; /* wide dynamic range */
        case 2: x[i] = 0; break;                                       /* all zero */
        case 3: x[i] = 0.3f; break;                                    /* constant */
        case 4: x[i] = (i % 32 == 5) ? 100.0f : frnd() * 0.01f; break; /* one outlier per block */
        default: x[i] = frnd() + 0.5f; break;                          /* positive shift */
        }
    }
}

static void test_round_trip(void) {
    enum { N = 1024 };
    static const uint32_t types[] = {QT_F32, QT_F16, QT_BF16, QT_Q8_0, QT_Q4_0, QT_Q4_K, QT_Q6_K};
    float x[N], y[N];
    static uint8_t buf[N * 4];
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        uint32_t type = types[t];
        int blk = qt_get(type)->block < 32 ? 32 : qt_get(type)->block;
        for (int kind = 0; kind < 6; kind++) {
            fill(x, N, kind);
            memset(buf, 0xa5, sizeof buf);
            CHECK(qt_quantize_row(type, x, buf, N) == 0, "quantize %s", qt_get(type)->name);
            CHECK(qt_dequantize_row(type, buf, y, N) == 0, "dequantize %s", qt_get(type)->name);
            int bad = 0;
            double err2 = 0, sig2 = 0;
            for (int b0 = 0; b0 < N; b0 += blk) {
                float amax = 0, lo = 0, hi = 0;
                for (int i = b0; i < b0 + blk; i++)
                    amax = fmaxf(amax, fabsf(x[i])), lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
                for (int i = b0; i < b0 + blk; i++) {
                    float e = fabsf(x[i] - y[i]), bound;
                    switch (type) {
                    case QT_F32: bound = 0; break;
                    case QT_F16: bound = fabsf(x[i]) * ldexpf(1, -11) + ldexpf(1, -25); break;
                    case QT_BF16: bound = fabsf(x[i]) * ldexpf(1, -8); break;
                    /* half a step, plus 127 steps' worth of the fp16 rounding of d */
                    case QT_Q8_0: bound = amax / 127 * (0.5f + 127 * ldexpf(1, -11)); break;
                    /* one step: the sign opposite to the extreme saturates at 7 steps */
                    case QT_Q4_0: bound = amax / 8 * (1 + 8 * ldexpf(1, -10)); break;
                    /* over the super-block: half a (rounded-up) step, plus the 6-bit rounding of the min */
                    case QT_Q4_K: bound = (hi - lo) / 15 * 0.6f + (-lo) / 63; break;
                    /* half a step of the sub-block, the step rounded to 8-bit scales */
                    default: bound = amax / 31 * 0.6f; break;
                    }
                    bound += 1e-30f;
                    if (!(e <= bound)) bad++;
                    err2 += (double)e * e, sig2 += (double)x[i] * x[i];
                }
            }
            CHECK(bad == 0, "%s kind %d: %d elements beyond the bound", qt_get(type)->name, kind, bad);
            if (kind == 2) {
                int nz = 0;
                for (int i = 0; i < N; i++) nz += y[i] != 0;
                CHECK(nz == 0, "%s: zeros stay zero", qt_get(type)->name);
            }
            if (kind == 0) { /* uniform data: relative RMS error, a sanity check on the quantizers' quality */
                static const double max_rel[] = {0, 3e-4, 3e-3, 6e-3, 0.1, 0.1, 0.03};
                double rel = sqrt(err2 / sig2);
                CHECK(rel <= max_rel[t], "%s: relative RMS error %g", qt_get(type)->name, rel);
            }
        }
    }
}

int main(void) {
    test_fp16();
    test_traits();
    test_known_blocks();
    test_ggml_rounding();
    test_round_trip();
    return DONE("test_quant");
}
