/* kernels.c — picks a kernel table at run time: CPU feature detection (cpuid + xgetbv on x86, getauxval
 * on aarch64), the LAYA_KERNELS override, the activation-format sizes, and the P16 layout's packing and
 * row reading (load-time and per-token work, plain C). No kernels live here.
 * Built with -DLAYA_NO_SIMD (the fuzz targets), only the scalar table exists. */
#include "kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qtypes.h"

#if !defined(LAYA_NO_SIMD) && (defined(__x86_64__) || defined(__i386__))
#define KN_X86 1
#include <cpuid.h>
#elif !defined(LAYA_NO_SIMD) && defined(__aarch64__)
#define KN_ARM 1
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#endif

size_t kn_act_row_bytes(uint32_t wtype, int64_t K) {
    if (K <= 0) return 0;
    switch (wtype) {
    case QT_F32:
    case QT_F16:
    case QT_BF16: return (size_t)K * sizeof(float);
    case QT_Q8_0:
    case QT_Q4_0:
    case QT_Q5_0:
    case QT_IQ4_NL: return K % QK8_0 ? 0 : (size_t)(K / QK8_0) * sizeof(block_q8_0);
    case QT_Q4_1:
    case QT_Q5_1: return K % QK8_0 ? 0 : (size_t)(K / QK8_0) * sizeof(block_q8_s);
    case QT_Q2_K:
    case QT_Q3_K:
    case QT_Q4_K:
    case QT_Q5_K:
    case QT_Q6_K: return K % QK_K ? 0 : (size_t)(K / QK_K) * sizeof(block_q8_K);
    case KN_P16_Q4_0:
    case KN_P16_Q8_0: return K % QK8_0 ? 0 : (size_t)(K / QK8_0) * (QK8_0 + 3 * 4);
    }
    return 0;
}

uint32_t kn_p16_type(uint32_t wtype) {
    return wtype == QT_Q4_0 ? KN_P16_Q4_0 : wtype == QT_Q8_0 ? KN_P16_Q8_0 : 0;
}

uint32_t kn_p16_source(uint32_t ptype) {
    return ptype == KN_P16_Q4_0 ? QT_Q4_0 : ptype == KN_P16_Q8_0 ? QT_Q8_0 : 0;
}

size_t kn_pack_panel_bytes(uint32_t ptype, int64_t K) {
    if (!kn_p16_source(ptype) || K <= 0 || K % 32) return 0;
    size_t nb = (size_t)(K / 32), qv = ptype == KN_P16_Q4_0 ? 4 : 8;
    return nb * qv * 64 + (nb * 32 + 63) / 64 * 64;
}

size_t kn_pack_bytes(uint32_t ptype, int64_t N, int64_t K) {
    size_t pb = kn_pack_panel_bytes(ptype, K);
    if (!pb || N <= 0) return 0;
    uint64_t np = (uint64_t)(N + 15) / 16;
    return np > SIZE_MAX / pb ? 0 : (size_t)np * pb;
}

void kn_pack(uint32_t ptype, const void *W, size_t w_row_bytes, int64_t N, int64_t K, int64_t p0, int64_t p1,
             void *dst) {
    const size_t pb = kn_pack_panel_bytes(ptype, K);
    const int64_t nb = K / 32;
    const int q4 = ptype == KN_P16_Q4_0, qv = q4 ? 4 : 8;
    const size_t bsz = q4 ? sizeof(block_q4_0) : sizeof(block_q8_0);
    for (int64_t p = p0; p < p1; p++) {
        uint8_t *P = (uint8_t *)dst + (size_t)p * pb;
        uint16_t *sc = (uint16_t *)(P + (size_t)nb * qv * 64);
        /* every byte is written once (a fresh map is written as it is first touched) */
        memset((uint8_t *)sc + nb * 32, 0, pb - (size_t)nb * qv * 64 - (size_t)nb * 32);
        for (int r = 0; r < 16; r++) {
            if (p * 16 + r >= N) { /* padding rows: zero quants and scales */
                for (int64_t i = 0; i < nb; i++) {
                    for (int t = 0; t < qv; t++) memset(P + (size_t)i * qv * 64 + t * 64 + r * 4, 0, 4);
                    sc[i * 16 + r] = 0;
                }
                continue;
            }
            const uint8_t *row = (const uint8_t *)W + (size_t)(p * 16 + r) * w_row_bytes;
            const uint32_t flip = q4 ? 0 : 0x80808080u;
            for (int64_t i = 0; i < nb; i++) {
                const uint8_t *blk = row + (size_t)i * bsz; /* fp16 d, then the quants */
                uint8_t *v = P + (size_t)i * qv * 64 + r * 4;
                for (int t = 0; t < qv; t++) {
                    uint32_t q;
                    memcpy(&q, blk + 2 + 4 * t, 4);
                    q ^= flip;
                    memcpy(v + t * 64, &q, 4);
                }
                memcpy(&sc[i * 16 + r], blk, 2);
            }
        }
    }
}

#ifdef KN_X86
/* Which register state the OS saves on context switch (XCR0). A CPU may support AVX-512 while the OS
 * (or a hypervisor) leaves the ZMM state off; using it then faults, so cpuid bits alone are not enough. */
static uint64_t xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

/* Bit 0: avx2 table usable (AVX2, FMA, F16C, OS saves YMM); bit 1: avx512 table usable (F, BW, VL,
 * DQ, VNNI, VBMI, OS saves ZMM and opmask state). */
static int x86_detect(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return 0;
    uint64_t x = xcr0();
    if ((x & 0x6) != 0x6) return 0;
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1;
    int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1, vnni = (c >> 11) & 1;
    int vbmi = (c >> 1) & 1;
    int r = (avx2 && fma && f16c) ? 1 : 0;
    if (r && f && dq && bw && vl && vnni && vbmi && (x & 0xe6) == 0xe6) r |= 2;
    return r;
}

/* Cached: under a hypervisor every cpuid traps, costing microseconds. */
static _Atomic int g_features = -1;
static int x86_features(void) {
    int f = g_features;
    if (f < 0) g_features = f = x86_detect();
    return f;
}
#endif

const kn_ops *kn_by_name(const char *name) {
    if (!name) return NULL;
    if (!strcmp(name, "scalar") || !strcmp(name, "ref")) return &kn_ref_ops;
#ifdef KN_X86
    if (!strcmp(name, "avx2")) return (x86_features() & 1) ? &kn_avx2_ops : NULL;
    if (!strcmp(name, "avx512")) return (x86_features() & 2) ? &kn_avx512_ops : NULL;
#endif
#ifdef KN_ARM
    if (!strcmp(name, "neon")) return (getauxval(AT_HWCAP) & HWCAP_ASIMD) ? &kn_neon_ops : NULL;
#endif
    return NULL;
}

/* Every thread computes the same answer, so a racy first call only repeats the detection. */
static const kn_ops *_Atomic g_best;

const kn_ops *kn_best(void) {
    const kn_ops *k = g_best;
    if (k) return k;
    const char *env = getenv("LAYA_KERNELS");
    if (env && *env) k = kn_by_name(env);
    static const char *const order[] = {"avx512", "avx2", "neon"};
    for (size_t i = 0; !k && i < sizeof order / sizeof *order; i++) k = kn_by_name(order[i]);
    if (!k) k = &kn_ref_ops;
    g_best = k;
    return k;
}

void kn_p16_row(uint32_t ptype, const void *P, int64_t K, int64_t r, float *y) {
    const int64_t nb = K / 32;
    const int q4 = ptype == KN_P16_Q4_0, qv = q4 ? 4 : 8, lane = (int)(r % 16);
    const uint8_t *pan = (const uint8_t *)P + (size_t)(r / 16) * kn_pack_panel_bytes(ptype, K);
    const uint8_t *sc = pan + (size_t)nb * qv * 64;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t blk[sizeof(block_q8_0)]; /* the source block again: fp16 d, then the quants */
        memcpy(blk, sc + (i * 16 + lane) * 2, 2);
        for (int t = 0; t < qv; t++)
            for (int j = 0; j < 4; j++) {
                uint8_t q = pan[(size_t)i * qv * 64 + t * 64 + lane * 4 + j];
                blk[2 + 4 * t + j] = q4 ? q : (uint8_t)(q ^ 0x80);
            }
        qt_dequantize_row(kn_p16_source(ptype), blk, y + 32 * i, 32);
    }
}
