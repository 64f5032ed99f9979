/* test_quant.c — tensor types: fp16/bf16 conversion edge cases, the traits table, hand-built blocks with
 * known decoded values (checked against a second, independent reading of each layout), and
 * quantize -> dequantize round-trip error bounds; the same for MLX affine quantization, plus groups whose
 * quantization is worked out by hand. Kernels are tested in test_kernels.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/common.h"
#include "io/qtypes.h"

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
        {QT_Q4_1, "Q4_1", 32, 20, 1},    {QT_Q5_0, "Q5_0", 32, 22, 1},   {QT_Q5_1, "Q5_1", 32, 24, 1},
        {QT_Q8_0, "Q8_0", 32, 34, 1},    {QT_Q8_1, "Q8_1", 32, 36, 0},   {QT_Q2_K, "Q2_K", 256, 84, 1},
        {QT_Q3_K, "Q3_K", 256, 110, 1},  {QT_Q4_K, "Q4_K", 256, 144, 1}, {QT_Q5_K, "Q5_K", 256, 176, 1},
        {QT_IQ4_NL, "IQ4_NL", 32, 18, 1}, {17, "IQ2_XS", 256, 74, 0},    {23, "IQ4_XS", 256, 136, 0},
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
    CHECK(qt_quantize_row(QT_Q5_K, x, buf, 256) == -1 && qt_dequantize_row(23, buf, y, 256) == -1,
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

/* ---- every block type against gguf-py's dequantization (tests/fixtures/gen/make_quant_ref.py): random
 * blocks, the values bit for bit; qt_block_ints must describe the same values. */

static void test_gguf_py_reference(void) {
    FILE *f = fopen("tests/fixtures/quant/blocks.bin", "rb");
    CHECK(f != NULL, "open tests/fixtures/quant/blocks.bin");
    if (!f) return;
    char magic[8];
    uint32_t nrec = 0;
    CHECK(fread(magic, 1, 8, f) == 8 && !memcmp(magic, "LQREF01\n", 8) && fread(&nrec, 4, 1, f) == 1, "fixture header");
    int seen = 0;
    for (uint32_t r = 0; r < nrec; r++) {
        uint32_t h[4];
        if (fread(h, 4, 4, f) != 4) break;
        const qt_traits *t = qt_get(h[0]);
        CHECK(t->supported && (uint32_t)t->bytes == h[2] && (uint32_t)t->block == h[3], "record %u: type %u", r, h[0]);
        if (!t->supported || (uint32_t)t->bytes != h[2] || (uint32_t)t->block != h[3]) break;
        size_t nb = h[1], ne = nb * h[3];
        uint8_t *raw = malloc(nb * h[2]);
        float *want = malloc(ne * 4), *got = malloc(ne * 4);
        CHECK(fread(raw, h[2], nb, f) == nb && fread(want, 4, ne, f) == ne, "record %u data", r);
        CHECK(qt_dequantize_row(h[0], raw, got, (int64_t)ne) == 0, "%s dequantize", t->name);
        int bad = 0, bad_ints = 0;
        for (size_t i = 0; i < ne; i++) bad += bits_of(got[i]) != bits_of(want[i]);
        for (size_t i = 0; i < nb; i++) { /* the integers, recombined in double, give the same values */
            int q[256], sc[16], mn[16];
            float d, dmin;
            int ns = qt_block_ints(h[0], raw + i * h[2], q, sc, mn, &d, &dmin);
            for (uint32_t e = 0; e < h[3]; e++) {
                double v = ns == 1 ? (double)d * q[e] + dmin : (double)d * sc[e / 16] * q[e] - (double)dmin * mn[e / 16];
                bad_ints += fabs(v - want[i * h[3] + e]) > 1e-6 * (fabs(v) + fabs(dmin) + 1e-3);
            }
        }
        CHECK(bad == 0 && bad_ints == 0, "%s: %d of %zu values differ from gguf-py, %d from its integers", t->name, bad,
              ne, bad_ints);
        seen++;
        free(raw), free(want), free(got);
    }
    CHECK(seen == (int)nrec && nrec >= 11, "fixture records: %d of %u", seen, nrec);
    fclose(f);
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
    static const uint32_t types[] = {QT_F32,  QT_F16,  QT_BF16, QT_Q8_0, QT_Q4_0,  QT_Q4_K,
                                     QT_Q6_K, QT_Q4_1, QT_Q5_0, QT_Q5_1, QT_IQ4_NL};
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
                    /* half a step, plus the fp16 rounding of d (15 or 31 steps) and of the minimum */
                    case QT_Q4_1: bound = (hi - lo) / 15 * (0.5f + 15 * ldexpf(1, -10)) + (-lo) * ldexpf(1, -10); break;
                    case QT_Q5_1: bound = (hi - lo) / 31 * (0.5f + 31 * ldexpf(1, -10)) + (-lo) * ldexpf(1, -10); break;
                    case QT_Q5_0: bound = amax / 16 * (1 + 16 * ldexpf(1, -10)); break;
                    /* half the widest gap between levels (24), or the other sign's shortfall (127 - 113) */
                    case QT_IQ4_NL: bound = amax / 127 * (14 + 127 * ldexpf(1, -10)); break;
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
                static const double max_rel[] = {0, 3e-4, 3e-3, 6e-3, 0.1, 0.1, 0.03, 0.1, 0.05, 0.05, 0.1};
                double rel = sqrt(err2 / sig2);
                CHECK(rel <= max_rel[t], "%s: relative RMS error %g", qt_get(type)->name, rel);
            }
        }
    }
}

/* ---- MLX affine quantization */

static const uint32_t g_sbts[] = {QT_F16, QT_BF16, QT_F32};
static const char *sbt_name(uint32_t t) { return t == QT_F32 ? "F32" : t == QT_F16 ? "F16" : "BF16"; }

/* Scale or bias i of sb_type as stored. */
static float sb_val(uint32_t t, const void *p, int i) {
    if (t == QT_F32) return ((const float *)p)[i];
    return t == QT_F16 ? fp16_to_f32(((const uint16_t *)p)[i]) : bf16_to_f32(((const uint16_t *)p)[i]);
}

static void sb_set(uint32_t t, void *p, int i, float v) {
    if (t == QT_F32) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = t == QT_F16 ? f32_to_fp16(v) : f32_to_bf16(v);
}

/* q of element k, read a second way: bits [k*bits, (k+1)*bits) of the row taken as one little-endian
 * bit string (the test runs on little-endian machines only). */
static int mlx_q(int bits, const uint32_t *w, int k) {
    const uint8_t *b = (const uint8_t *)w;
    int bit = k * bits;
    return (b[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
}

/* Words built by hand: a 4-bit word 0x76543210 holds q = 0, 1, ..., 7 from its lowest bits up. */
static void test_mlx_known(void) {
    uint32_t w4[8] = {0x76543210u, 0xfedcba98u, 0x01234567u, 0x89abcdefu, /* group 0 */
                      0x0000000fu, 0xf0000000u, 0x11111111u, 0x00000000u}; /* group 1 */
    uint32_t w8[16] = {0x03020100u, 0xfffe8180u}; /* 0, 1, 2, 3, 128, 129, 254, 255, then zeros */
    float y[64];
    for (size_t t = 0; t < 3; t++) {
        uint32_t sbt = g_sbts[t];
        uint8_t sc[8], bi[8];
        sb_set(sbt, sc, 0, 2), sb_set(sbt, bi, 0, -1);
        sb_set(sbt, sc, 1, 0.5f), sb_set(sbt, bi, 1, 3);
        CHECK(mlx_dequantize_row(4, 32, w4, sc, bi, sbt, y, 64) == 0, "mlx dequantize 4-bit %s", sbt_name(sbt));
        int bad = 0;
        for (int k = 0; k < 8; k++) bad += y[k] != 2 * k - 1 || y[8 + k] != 2 * (8 + k) - 1;
        for (int k = 0; k < 8; k++) bad += y[16 + k] != 2 * (7 - k) - 1 || y[24 + k] != 2 * (15 - k) - 1;
        for (int k = 0; k < 8; k++) bad += y[32 + k] != (k == 0 ? 0.5f * 15 + 3 : 3);
        for (int k = 0; k < 8; k++) bad += y[40 + k] != (k == 7 ? 0.5f * 15 + 3 : 3);
        for (int k = 0; k < 8; k++) bad += y[48 + k] != 3.5f || y[56 + k] != 3;
        CHECK(bad == 0, "mlx 4-bit %s hand-built words: y[0..3] = %g %g %g %g, y[32] = %g", sbt_name(sbt), y[0], y[1],
              y[2], y[3], y[32]);
        CHECK(mlx_dequantize_row(8, 64, w8, sc, bi, sbt, y, 64) == 0, "mlx dequantize 8-bit %s", sbt_name(sbt));
        static const int q8[8] = {0, 1, 2, 3, 128, 129, 254, 255};
        bad = 0;
        for (int k = 0; k < 64; k++) bad += y[k] != 2.0f * (k < 8 ? q8[k] : 0) - 1;
        CHECK(bad == 0, "mlx 8-bit %s hand-built words: y[4..7] = %g %g %g %g", sbt_name(sbt), y[4], y[5], y[6], y[7]);
    }
    /* the second reading of the layout agrees on random words */
    uint32_t wr[32];
    uint16_t one = f32_to_fp16(1), zero = 0;
    int bad = 0;
    for (int it = 0; it < 50; it++) {
        for (int i = 0; i < 32; i++) wr[i] = rnd();
        for (int bits = 4; bits <= 8; bits += 4) {
            int K = 32 * 32 / bits;
            uint16_t s1[32], b0[32];
            for (int i = 0; i < 32; i++) s1[i] = one, b0[i] = zero;
            mlx_dequantize_row(bits, 32, wr, s1, b0, QT_F16, y, 64);
            for (int k = 0; k < 64 && k < K; k++) bad += y[k] != mlx_q(bits, wr, k);
        }
    }
    CHECK(bad == 0, "mlx dequantize disagrees with the bit-string reading in %d places", bad);

    /* invalid parameters refuse */
    float x[256] = {0};
    uint32_t w[64];
    uint8_t s[64], b[64];
    CHECK(mlx_quantize_row(3, 32, x, w, s, b, QT_F16, 96) == -1 && mlx_quantize_row(4, 16, x, w, s, b, QT_F16, 64) == -1 &&
              mlx_quantize_row(4, 32, x, w, s, b, QT_Q8_0, 64) == -1 && mlx_quantize_row(4, 64, x, w, s, b, QT_F16, 96) == -1 &&
              mlx_quantize_row(8, 32, x, w, s, b, QT_F32, 0) == -1,
          "mlx_quantize_row refuses bad bits, group, type or K");
    CHECK(mlx_dequantize_row(2, 32, w, s, b, QT_F16, x, 64) == -1 && mlx_dequantize_row(4, 256, w, s, b, QT_F16, x, 256) == -1 &&
              mlx_dequantize_row(8, 32, w, s, b, QT_BF16, x, 48) == -1 && mlx_dequantize_row(8, 32, w, s, b, 77, x, 32) == -1,
          "mlx_dequantize_row refuses bad bits, group, K or type");
}

/* mlx_quantize_row's algorithm on groups whose answer is known by hand. */
static void test_mlx_quantize_known(void) {
    float x[32], s[1], b[1];
    uint32_t w[8];
    /* |min| > |max|: the min is the edge. min -8, max 7: scale 15 / 15 = 1, q0 = rint(-8 / 1) = -8, so
     * scale = -8 / -8 = 1, bias = -8 and q = rint(x + 8), ties to even. */
    for (int i = 0; i < 32; i++) x[i] = (float)(i % 16) - 8;
    x[20] = 0.5f, x[21] = 1.5f, x[22] = -7.5f, x[23] = -6.5f, x[24] = 6.5f;
    CHECK(mlx_quantize_row(4, 32, x, w, s, b, QT_F32, 32) == 0, "mlx quantize");
    CHECK(s[0] == 1 && b[0] == -8, "min edge: scale %g bias %g (want 1, -8)", s[0], b[0]);
    int bad = 0;
    for (int i = 0; i < 32; i++) {
        int want = i % 16;
        if (i >= 20 && i <= 24) want = i == 20 ? 8 : i == 21 ? 10 : i == 22 ? 0 : i == 23 ? 2 : 14; /* 8.5 9.5 .5 1.5 14.5 */
        bad += mlx_q(4, w, i) != want;
    }
    CHECK(bad == 0, "min edge: %d q wrong (ties must round to even: q(0.5) = %d, q(1.5) = %d)", bad, mlx_q(4, w, 20),
          mlx_q(4, w, 21));

    /* |max| >= |min|: the max is the edge and the scale negative. Values -0.5 .. 1.0 in steps of 0.1:
     * scale0 = 1.5 / 15 = 0.1, q0 = rint(1.0 / -0.1) = -10, scale = 1.0 / -10, bias = 1.0, so q = 10 (1 - x):
     * the max dequantizes exactly (q = 0) and so does 0 (q = 10). */
    for (int i = 0; i < 32; i++) x[i] = (float)(i % 16) / 10 - 0.5f;
    x[31] = 1.0f;
    CHECK(mlx_quantize_row(4, 32, x, w, s, b, QT_F32, 32) == 0, "mlx quantize");
    CHECK(s[0] == 1.0f / -10.0f && b[0] == 1.0f, "max edge: scale %g bias %g (want -0.1, 1)", s[0], b[0]);
    bad = 0;
    for (int i = 0; i < 32; i++) bad += mlx_q(4, w, i) != (i == 31 ? 0 : 15 - i % 16);
    CHECK(bad == 0, "max edge: %d q wrong", bad);
    float y[32];
    mlx_dequantize_row(4, 32, w, s, b, QT_F32, y, 32);
    CHECK(y[31] == 1.0f && y[5] == 0, "max edge: the max and zero dequantize exactly (%g, %g)", y[31], y[5]);

    /* a tie |min| = |max| makes the max the edge: float(2 / 255) rounds up, so 1 / scale0 = 127.49999,
     * q0 = -127, scale = 1 / -127 and -1 lands on q = 254 */
    for (int i = 0; i < 32; i++) x[i] = i < 16 ? -1 : 1;
    mlx_quantize_row(8, 32, x, w, s, b, QT_F32, 32);
    CHECK(b[0] == 1 && s[0] == 1.0f / -127 && mlx_q(8, w, 20) == 0 && mlx_q(8, w, 3) == 254,
          "tie: scale %g bias %g, q(-1) = %d", s[0], b[0], mlx_q(8, w, 3));
    for (int i = 0; i < 32; i++) x[i] = -2 - (float)i / 31;
    mlx_quantize_row(4, 32, x, w, s, b, QT_F32, 32);
    CHECK(b[0] == -3 && s[0] > 0 && mlx_q(4, w, 31) == 0 && mlx_q(4, w, 0) == 15,
          "all negative: scale %g bias %g, q[0] = %d", s[0], b[0], mlx_q(4, w, 0));

    /* constant groups: max == min never divides by zero; scale falls to eps = 1e-7 and q0 decides */
    static const float consts[] = {0, 0.3f, -0.3f, 1e-8f, -1e-8f, 65504, 1e20f};
    for (size_t c = 0; c < sizeof consts / sizeof *consts; c++) {
        for (size_t t = 0; t < 3; t++) {
            uint32_t sbt = g_sbts[t];
            uint8_t ss[4], bb[4];
            for (int i = 0; i < 32; i++) x[i] = consts[c];
            CHECK(mlx_quantize_row(8, 32, x, w, ss, bb, sbt, 32) == 0, "constant quantize");
            mlx_dequantize_row(8, 32, w, ss, bb, sbt, y, 32);
            float sv = sb_val(sbt, ss, 0), bv = sb_val(sbt, bb, 0);
            int nan = 0, q = 0, off = 0;
            for (int i = 0; i < 32; i++) nan += y[i] != y[i], q += mlx_q(8, w, i) != 0, off += y[i] != bv;
            CHECK(nan == 0 && q == 0 && off == 0 && sv == sv && fabsf(sv) <= 1.2e-7f,
                  "constant %g %s: scale %g bias %g, %d NaN, %d q != 0, %d values off the bias", consts[c], sbt_name(sbt),
                  sv, bv, nan, q, off);
            /* the bias is the constant itself (rounded to sb_type), or 0 when the constant is below eps / 2 */
            float want = fabsf(consts[c]) <= 5e-8f ? 0 : sb_val(sbt, bb, 0);
            if (sbt == QT_F32) want = fabsf(consts[c]) <= 5e-8f ? 0 : consts[c];
            CHECK(bv == want, "constant %g %s: bias %g", consts[c], sbt_name(sbt), bv);
        }
    }
}

/* quantize -> dequantize: every element within one stored step of its value (MLX's own test allows
 * |scale|), plus what rounding the scale and bias to sb_type costs; zeros stay zero. */
static void test_mlx_round_trip(void) {
    enum { K = 1024 };
    static float x[K], y[K];
    static uint32_t w[K / 4];
    static uint8_t sc[K / 32 * 4], bi[K / 32 * 4];
    for (int bits = 4; bits <= 8; bits += 4)
        for (int group = 32; group <= 128; group *= 2)
            for (size_t t = 0; t < 3; t++) {
                uint32_t sbt = g_sbts[t];
                double u = sbt == QT_F16 ? ldexp(1, -11) : sbt == QT_BF16 ? ldexp(1, -8) : ldexp(1, -24);
                double n_bins = (1 << bits) - 1;
                for (int kind = 0; kind < 7; kind++) {
                    if (kind == 6) for (int i = 0; i < K; i++) x[i] = -frnd() - 1.5f; /* all negative */
                    else fill(x, K, kind);
                    memset(w, 0xa5, sizeof w);
                    CHECK(mlx_quantize_row(bits, group, x, w, sc, bi, sbt, K) == 0, "mlx quantize");
                    CHECK(mlx_dequantize_row(bits, group, w, sc, bi, sbt, y, K) == 0, "mlx dequantize");
                    int bad = 0, edge_bad = 0;
                    double err2 = 0, sig2 = 0;
                    for (int g = 0; g < K / group; g++) {
                        double s = fabs(sb_val(sbt, sc, g)), b = fabs(sb_val(sbt, bi, g));
                        float lo = INFINITY, hi = -INFINITY;
                        for (int i = g * group; i < (g + 1) * group; i++) lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
                        float edge = fabsf(lo) > fabsf(hi) ? lo : hi;
                        /* a stored step, the rounding of scale (times q) and bias, float rounding */
                        double bound = s * (1 + n_bins * u) + b * u + (fabs(lo) + fabs(hi)) * 1e-6 + 1e-30;
                        if (sbt == QT_F16) bound += n_bins * ldexp(1, -25); /* subnormal scales */
                        for (int i = g * group; i < (g + 1) * group; i++) {
                            double e = fabs((double)x[i] - y[i]);
                            bad += !(e <= bound);
                            edge_bad += x[i] == edge && mlx_q(bits, w, i) != 0 && fabsf(edge) > 5e-8f;
                            err2 += e * e, sig2 += (double)x[i] * x[i];
                        }
                    }
                    CHECK(bad == 0 && edge_bad == 0, "mlx %d-bit g%d %s kind %d: %d beyond the bound, %d edges not at q = 0",
                          bits, group, sbt_name(sbt), kind, bad, edge_bad);
                    if (kind == 2) {
                        int nz = 0;
                        for (int i = 0; i < K; i++) nz += y[i] != 0;
                        CHECK(nz == 0, "mlx %d-bit g%d %s: zeros stay zero (%d not)", bits, group, sbt_name(sbt), nz);
                    }
                    if (kind == 0) { /* uniform data on [-1, 1): about (2 / n_bins) / sqrt(12) / (1 / sqrt(3)) */
                        double rel = sqrt(err2 / sig2), want = bits == 4 ? 0.08 : 0.006;
                        CHECK(rel <= want, "mlx %d-bit g%d %s: relative RMS error %g", bits, group, sbt_name(sbt), rel);
                    }
                }
            }
}

int main(void) {
    test_fp16();
    test_traits();
    test_known_blocks();
    test_gguf_py_reference();
    test_ggml_rounding();
    test_round_trip();
    test_mlx_known();
    test_mlx_quantize_known();
    test_mlx_round_trip();
    return DONE("test_quant");
}
