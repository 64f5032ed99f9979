/* kernels.c — picks a kernel table at run time: CPU feature detection (cpuid + xgetbv on x86, getauxval
 * on aarch64), the LAYA_KERNELS override, the activation-format sizes, and the P16 layout's packing and
 * row reading (load-time and per-token work, plain C). No kernels live here.
 * Built with -DLAYA_NO_SIMD (the fuzz targets), only the scalar table exists. */
#include "kernels/kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "io/qtypes.h"

#if !defined(LAYA_NO_SIMD) && (defined(__x86_64__) || defined(__i386__))
#define KN_X86 1
#include <cpuid.h>
#elif !defined(LAYA_NO_SIMD) && defined(__aarch64__)
#define KN_ARM 1
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
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
    }
    if (wtype == KN_P16_Q4_K || wtype == KN_P16_Q6_K) return K % QK_K ? 0 : (size_t)(K / QK_K) * (QK_K + 4 + 64 + 16);
    if (kn_p16_source(wtype)) return K % QK8_0 ? 0 : (size_t)(K / QK8_0) * (QK8_0 + 4 * 4);
    return 0;
}

uint32_t kn_p16_type(uint32_t wtype) {
    switch (wtype) {
    case QT_Q4_K:
    case QT_Q6_K:
    case QT_Q8_0:
    case QT_Q4_0:
    case QT_Q4_1:
    case QT_Q5_0:
    case QT_Q5_1:
    case QT_IQ4_NL: return 0x100 | wtype;
    }
    return 0;
}

uint32_t kn_p16_source(uint32_t ptype) { return (ptype & ~0xffu) == 0x100 && kn_p16_type(ptype & 0xff) ? ptype & 0xff : 0; }

int kn_p16_qvecs(uint32_t ptype) {
    switch (kn_p16_source(ptype)) {
    case QT_Q8_0: return 8;
    case QT_Q5_0:
    case QT_Q5_1: return 5;
    case QT_Q4_K: return 37; /* per super-block: 32 quant vectors, 4 of scales and minimums, 1 of d, dmin */
    case QT_Q6_K: return 53; /* 32 of ql, 16 of qh, 4 of scales, 1 of d */
    case 0: return 0;
    }
    return 4;
}

int kn_p16_has_min(uint32_t ptype) { return ptype == KN_P16_Q4_1 || ptype == KN_P16_Q5_1; }

static int is_k(uint32_t ptype) { return ptype == KN_P16_Q4_K || ptype == KN_P16_Q6_K; }

size_t kn_pack_panel_bytes(uint32_t ptype, int64_t K) {
    if (is_k(ptype)) return K <= 0 || K % QK_K ? 0 : (size_t)(K / QK_K) * (size_t)kn_p16_qvecs(ptype) * 64;
    if (!kn_p16_source(ptype) || K <= 0 || K % 32) return 0;
    return (size_t)(K / 32 + 1) / 2 * kn_p16_pair_bytes(kn_p16_qvecs(ptype), kn_p16_has_min(ptype));
}

size_t kn_pack_bytes(uint32_t ptype, int64_t N, int64_t K) {
    size_t pb = kn_pack_panel_bytes(ptype, K);
    if (!pb || N <= 0) return 0;
    uint64_t np = (uint64_t)(N + 15) / 16;
    return np > SIZE_MAX / pb ? 0 : (size_t)np * pb;
}

/* Byte offsets in a source block of its fp16 minimum, its qh word and its quants (-1: none). */
static void src_fields(uint32_t t, int *m, int *qh, int *qs) {
    *m = t == QT_Q4_1 || t == QT_Q5_1 ? 2 : -1;
    *qh = t == QT_Q5_0 ? 2 : t == QT_Q5_1 ? 4 : -1;
    *qs = t == QT_Q5_1 ? 8 : t == QT_Q5_0 ? 6 : t == QT_Q4_1 ? 4 : 2;
}

/* The Q5 types' fifth vector: lane word bit 8j + 4 + t is element 4t + j's bit 4, bit 8j + t element
 * 16 + 4t + j's (t, j < 4), so a shift by t (or 4 - t) and a mask put each element's bit 4 under its
 * nibble in the quant vectors' byte order. */
static uint32_t qh_to_plane(uint32_t qh) {
    uint32_t v = 0;
    for (int t = 0; t < 4; t++)
        for (int j = 0; j < 4; j++) {
            v |= ((qh >> (4 * t + j)) & 1u) << (8 * j + 4 + t);
            v |= ((qh >> (16 + 4 * t + j)) & 1u) << (8 * j + t);
        }
    return v;
}

static uint32_t plane_to_qh(uint32_t v) {
    uint32_t qh = 0;
    for (int t = 0; t < 4; t++)
        for (int j = 0; j < 4; j++) {
            qh |= ((v >> (8 * j + 4 + t)) & 1u) << (4 * t + j);
            qh |= ((v >> (8 * j + t)) & 1u) << (16 + 4 * t + j);
        }
    return qh;
}

qt_half kn_q8_block_ref(const float *x, int8_t *qs, int *sum) {
    block_q8_0 b;
    kn_ref_ops.quantize_act(QT_Q8_0, x, &b, QK8_0);
    memcpy(qs, b.qs, QK8_0);
    int s = 0;
    for (int j = 0; j < QK8_0; j++) s += b.qs[j];
    if (sum) *sum = s;
    return b.d;
}

/* A group's scales, corrections and d * sum into the q8 split arrays: a loop of a fixed 16 on
 * restrict pointers, which GCC 12 at -O2 makes SSE / NEON vector operations (the loop of 1 or 16 it
 * replaces stayed scalar). The same arithmetic as one block's. An AVX-512 writer of its own gained too
 * little to be worth a second copy of the layout. */
static void split_put16(float *restrict ds, int32_t *restrict c4, int32_t *restrict c8, float *restrict dsum,
                        const float *restrict dq, const int *restrict sums) {
    for (int j = 0; j < 16; j++) {
        ds[j] = dq[j];
        c4[j] = -8 * sums[j], c8[j] = -128 * sums[j], dsum[j] = dq[j] * (float)sums[j];
    }
}

int kn_q8_act_row(uint32_t wtype, const float *x, void *xq, int64_t K, kn_q8_block_fn blk, kn_q8_group_fn grp) {
    const int64_t nb = K / QK8_0;
    int sum, sums[16];
    qt_half d[16];
    float dq[16];
    switch (wtype) {
    case QT_Q8_0:
    case QT_Q4_0:
    case QT_Q5_0:
    case QT_IQ4_NL:
        for (int64_t i = 0; i < nb;) {
            block_q8_0 *b = (block_q8_0 *)xq + i;
            if (grp && nb - i >= 16 && grp(x + 32 * i, b->qs, sizeof *b, d, dq, NULL)) {
                for (int j = 0; j < 16; j++) b[j].d = d[j];
                i += 16;
            } else {
                b->d = blk(x + 32 * i, b->qs, NULL);
                i++;
            }
        }
        return 1;
    case QT_Q4_1:
    case QT_Q5_1:
        for (int64_t i = 0; i < nb;) {
            block_q8_s *b = (block_q8_s *)xq + i;
            if (grp && nb - i >= 16 && grp(x + 32 * i, b->qs, sizeof *b, d, dq, sums)) {
                for (int j = 0; j < 16; j++) b[j].d = d[j], b[j].sum = (int16_t)sums[j];
                i += 16;
            } else {
                b->d = blk(x + 32 * i, b->qs, &sum);
                b->sum = (int16_t)sum;
                i++;
            }
        }
        return 1;
    }
    if (!kn_p16_source(wtype) || kn_p16_source(wtype) == QT_Q4_K || kn_p16_source(wtype) == QT_Q6_K) return 0;
    /* the q8 split format (kernels.h): quants, widened scales, the two corrections, d * sum */
    int8_t *qs = xq;
    float *ds = (float *)(qs + nb * QK8_0);
    int32_t *c4 = (int32_t *)(ds + nb), *c8 = c4 + nb;
    float *dsum = (float *)(c8 + nb);
    for (int64_t i = 0; i < nb;) {
        if (grp && nb - i >= 16 && grp(x + 32 * i, qs + 32 * i, QK8_0, d, dq, sums)) {
            split_put16(ds + i, c4 + i, c8 + i, dsum + i, dq, sums);
            i += 16;
        } else {
            ds[i] = fp16_to_f32(blk(x + 32 * i, qs + 32 * i, &sums[0]));
            c4[i] = -8 * sums[0], c8[i] = -128 * sums[0], dsum[i] = ds[i] * (float)sums[0];
            i++;
        }
    }
    return 1;
}

void kn_q8k_split_put(const block_q8_K *b, int64_t i, int64_t K, void *xq) {
    static const int order[8] = {0, 2, 1, 3, 4, 6, 5, 7};
    const int64_t nsb = K / QK_K;
    int8_t *qs = xq;
    float *ds = (float *)(qs + K);
    int32_t *bs = (int32_t *)(ds + nsb);
    int16_t *pairs = (int16_t *)(bs + 16 * nsb);
    memcpy(qs + i * QK_K, b->qs, QK_K);
    ds[i] = b->d;
    for (int t = 0; t < 16; t++) bs[16 * i + t] = b->bsums[t];
    for (int j = 0; j < 8; j++) pairs[8 * i + j] = (int16_t)(b->bsums[2 * order[j]] + b->bsums[2 * order[j] + 1]);
}

/* Lane `lane` of one super-block of a K-type panel (v: the super-block's 64-byte vectors) from the source
 * block b, or back (to_panel 0). Q4_K: vector 8c + t holds qs[32c + 4t..], vectors 32-33 the eight 6-bit
 * scales as bytes, 34-35 the eight minimums, vector 36 the fp16 d (bytes 0-31) and dmin (32-63) of the 16
 * rows. Q6_K: vector 8(2h + j) + t holds ql[64h + 32j + 4t..], 32 + 8h + t qh[32h + 4t..], 48-51 the
 * sixteen int8 scales, vector 52 the fp16 d. */
static void k_lane(uint32_t ptype, uint8_t *v, int lane, uint8_t *b, int to_panel) {
#define MV(dst, src, n) (to_panel ? memcpy((dst), (src), (n)) : memcpy((src), (dst), (n)))
    if (ptype == KN_P16_Q4_K) {
        block_q4_K *q = (block_q4_K *)b;
        for (int i = 0; i < 32; i++) MV(v + 64 * i + 4 * lane, q->qs + 4 * i, 4);
        uint8_t sc[8], mn[8];
        if (to_panel) qt_k4_scales_unpack(q->scales, sc, mn);
        else memcpy(sc, v + 64 * 32 + 4 * lane, 4), memcpy(sc + 4, v + 64 * 33 + 4 * lane, 4),
             memcpy(mn, v + 64 * 34 + 4 * lane, 4), memcpy(mn + 4, v + 64 * 35 + 4 * lane, 4);
        if (to_panel) memcpy(v + 64 * 32 + 4 * lane, sc, 4), memcpy(v + 64 * 33 + 4 * lane, sc + 4, 4),
                      memcpy(v + 64 * 34 + 4 * lane, mn, 4), memcpy(v + 64 * 35 + 4 * lane, mn + 4, 4);
        else qt_k4_scales_pack(sc, mn, q->scales);
        MV(v + 64 * 36 + 2 * lane, &q->d, 2);
        MV(v + 64 * 36 + 32 + 2 * lane, &q->dmin, 2);
    } else {
        block_q6_K *q = (block_q6_K *)b;
        for (int i = 0; i < 32; i++) MV(v + 64 * i + 4 * lane, q->ql + 4 * i, 4);
        for (int i = 0; i < 16; i++) MV(v + 64 * (32 + i) + 4 * lane, q->qh + 4 * i, 4);
        for (int i = 0; i < 4; i++) MV(v + 64 * (48 + i) + 4 * lane, q->scales + 4 * i, 4);
        MV(v + 64 * 52 + 2 * lane, &q->d, 2);
    }
#undef MV
}

static void kn_pack_k(uint32_t ptype, const void *W, size_t w_row_bytes, int64_t N, int64_t K, int64_t p0, int64_t p1,
                      void *dst) {
    const uint32_t st = kn_p16_source(ptype);
    const size_t pb = kn_pack_panel_bytes(ptype, K), sbb = (size_t)kn_p16_qvecs(ptype) * 64, bsz = (size_t)qt_get(st)->bytes;
    for (int64_t p = p0; p < p1; p++) {
        uint8_t *P = (uint8_t *)dst + (size_t)p * pb;
        for (int64_t i = 0; i < K / QK_K; i++) {
            uint8_t *v = P + (size_t)i * sbb;
            if (ptype == KN_P16_Q6_K) memset(v + 64 * 52 + 32, 0, 32);
            for (int r = 0; r < 16; r++) {
                uint8_t blk[sizeof(block_q6_K)] = {0}; /* padding rows: all zero */
                if (p * 16 + r < N) memcpy(blk, (const uint8_t *)W + (size_t)(p * 16 + r) * w_row_bytes + (size_t)i * bsz, bsz);
                k_lane(ptype, v, r, blk, 1);
            }
        }
    }
}

void kn_pack(uint32_t ptype, const void *W, size_t w_row_bytes, int64_t N, int64_t K, int64_t p0, int64_t p1,
             void *dst) {
    if (is_k(ptype)) {
        kn_pack_k(ptype, W, w_row_bytes, N, K, p0, p1, dst);
        return;
    }
    const uint32_t st = kn_p16_source(ptype);
    const size_t pb = kn_pack_panel_bytes(ptype, K);
    const int64_t nb = K / 32;
    const int qv = kn_p16_qvecs(ptype), nq = st == QT_Q8_0 ? 8 : 4;
    const size_t bsz = (size_t)qt_get(st)->bytes;
    const int mins = kn_p16_has_min(ptype);
    int fm, fqh, fqs;
    src_fields(st, &fm, &fqh, &fqs);
    for (int64_t p = p0; p < p1; p++) {
        uint8_t *P = (uint8_t *)dst + (size_t)p * pb;
        /* every byte is written once (a fresh map is written as it is first touched): an odd nb's last
         * pair has no second block */
        if (nb & 1) {
            memset(P + kn_p16_q_at(qv, mins, nb), 0, (size_t)qv * 64);
            memset(P + kn_p16_s_at(qv, mins, nb), 0, 32);
            if (mins) memset(P + kn_p16_s_at(qv, mins, nb) + 64, 0, 32);
        }
        for (int r = 0; r < 16; r++) {
            const int pad = p * 16 + r >= N; /* padding rows: zero quants and scales */
            const uint8_t *row = (const uint8_t *)W + (size_t)(pad ? 0 : p * 16 + r) * w_row_bytes;
            const uint32_t flip = st == QT_Q8_0 ? 0x80808080u : 0;
            for (int64_t i = 0; i < nb; i++) {
                const uint8_t *blk = row + (size_t)i * bsz;
                uint8_t *v = P + kn_p16_q_at(qv, mins, i) + r * 4;
                uint16_t *sc = (uint16_t *)(P + kn_p16_s_at(qv, mins, i)), *mn = sc + 32;
                uint32_t q;
                for (int t = 0; t < nq; t++) {
                    memcpy(&q, blk + fqs + 4 * t, 4);
                    q = pad ? 0 : q ^ flip;
                    memcpy(v + t * 64, &q, 4);
                }
                if (fqh >= 0) {
                    memcpy(&q, blk + fqh, 4);
                    q = pad ? 0 : qh_to_plane(q);
                    memcpy(v + 4 * 64, &q, 4);
                }
                uint16_t h = 0;
                if (!pad) memcpy(&h, blk, 2);
                sc[r] = h;
                if (fm >= 0) {
                    h = 0;
                    if (!pad) memcpy(&h, blk + fm, 2);
                    mn[r] = h;
                }
            }
        }
    }
}

void kn_p16_block(uint32_t ptype, const void *P, int64_t K, int64_t r, int64_t i, void *blk) {
    if (is_k(ptype)) {
        const uint8_t *pan = (const uint8_t *)P + (size_t)(r / 16) * kn_pack_panel_bytes(ptype, K);
        k_lane(ptype, (uint8_t *)(uintptr_t)(pan + (size_t)i * (size_t)kn_p16_qvecs(ptype) * 64), (int)(r % 16), blk, 0);
        return;
    }
    const uint32_t st = kn_p16_source(ptype);
    const int qv = kn_p16_qvecs(ptype), nq = st == QT_Q8_0 ? 8 : 4, lane = (int)(r % 16);
    const uint8_t *pan = (const uint8_t *)P + (size_t)(r / 16) * kn_pack_panel_bytes(ptype, K);
    const int mins = kn_p16_has_min(ptype);
    const uint8_t *v = pan + kn_p16_q_at(qv, mins, i) + lane * 4, *sc = pan + kn_p16_s_at(qv, mins, i);
    int fm, fqh, fqs;
    src_fields(st, &fm, &fqh, &fqs);
    uint8_t *b = blk;
    uint32_t q;
    for (int t = 0; t < nq; t++) {
        memcpy(&q, v + t * 64, 4);
        q ^= st == QT_Q8_0 ? 0x80808080u : 0;
        memcpy(b + fqs + 4 * t, &q, 4);
    }
    if (fqh >= 0) {
        memcpy(&q, v + 4 * 64, 4);
        q = plane_to_qh(q);
        memcpy(b + fqh, &q, 4);
    }
    memcpy(b, sc + lane * 2, 2);
    if (fm >= 0) memcpy(b + fm, sc + 64 + lane * 2, 2);
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
 * DQ, VNNI, VBMI, OS saves ZMM and opmask state); bit 2: avxvnni table usable (bit 0 and AVX-VNNI,
 * cpuid leaf 7 subleaf 1, EAX bit 4); bit 3: an AMD family 0x1A core (Zen 5; kn_p16_l2_ahead,
 * kn_p16_q4_shuf). */
static int x86_detect(void) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    int amd = __get_cpuid(0, &a, &b, &c, &d) && b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163; /* AuthenticAMD */
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int zen5 = amd && ((a >> 8) & 0xf) + ((a >> 20) & 0xff) == 0x1a; /* base family 0xf plus the extended one */
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
    if (r && a >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        if ((a >> 4) & 1) r |= 4;
    }
    return r | (zen5 ? 8 : 0);
}

/* Cached: under a hypervisor every cpuid traps, costing microseconds. */
static _Atomic int g_features = -1;
static int x86_features(void) {
    int f = g_features;
    if (f < 0) g_features = f = x86_detect();
    return f;
}
#endif

_Atomic int kn_p16_l2_ahead[3] = {16384, 16384, 16384};
_Atomic int kn_p16_q4_shuf = 0;

const kn_ops *kn_by_name(const char *name) {
    if (!name) return NULL;
    if (!strcmp(name, "scalar") || !strcmp(name, "ref")) return &kn_ref_ops;
#ifdef KN_X86
    if (!strcmp(name, "avx2")) return (x86_features() & 1) ? &kn_avx2_ops : NULL;
    if (!strcmp(name, "avxvnni")) return (x86_features() & 4) ? &kn_avxvnni_ops : NULL;
    if (!strcmp(name, "avx512")) {
        int f = x86_features();
        if (!(f & 2)) return NULL;
        const int zen5 = f & 8;
        atomic_store_explicit(&kn_p16_l2_ahead[0], zen5 ? 0 : 16384, memory_order_relaxed);
        atomic_store_explicit(&kn_p16_l2_ahead[1], zen5 ? 0 : 16384, memory_order_relaxed);
        atomic_store_explicit(&kn_p16_l2_ahead[2], zen5 ? 8192 : 16384, memory_order_relaxed);
        atomic_store_explicit(&kn_p16_q4_shuf, zen5, memory_order_relaxed);
        return &kn_avx512_ops;
    }
#endif
#ifdef KN_ARM
    if (!strcmp(name, "neon")) return (getauxval(AT_HWCAP) & HWCAP_ASIMD) ? &kn_neon_ops : NULL;
    if (!strcmp(name, "neondot")) {
        const unsigned long need = HWCAP_ASIMD | HWCAP_ASIMDDP;
        return (getauxval(AT_HWCAP) & need) == need ? &kn_neondot_ops : NULL;
    }
#endif
    return NULL;
}

/* Every thread computes the same answer, so a racy first call only repeats the detection. */
static const kn_ops *_Atomic g_best;

const kn_ops *kn_best(void) {
    const kn_ops *k = g_best;
    if (k) return k;
    const char *env = getenv("LAYA_KERNELS");
    if (env && *env && !(k = kn_by_name(env)))
        laya_log(LAYA_LOG_WARN, "LAYA_KERNELS=%s: no such kernel set on this CPU; choosing one", env);
    static const char *const order[] = {"avx512", "avxvnni", "avx2", "neondot", "neon"};
    for (size_t i = 0; !k && i < sizeof order / sizeof *order; i++) k = kn_by_name(order[i]);
    if (!k) k = &kn_ref_ops;
    laya_log(LAYA_LOG_DEBUG, "kernels: %s (%s)", k->name, env && *env ? "LAYA_KERNELS" : "CPU detection");
    g_best = k;
    return k;
}

void kn_p16_row(uint32_t ptype, const void *P, int64_t K, int64_t r, float *y) {
    if (ptype == KN_P16_Q4_0 || ptype == KN_P16_Q8_0) {
        /* The row's lane read straight out of each block (kn_p16_block's layout, qt_dequantize_row's
         * arithmetic: d * q) instead of through a source block per block. A tied packed model's embedding
         * is this row, on the calling thread before every decode's first job. */
        const int q8 = ptype == KN_P16_Q8_0, qv = kn_p16_qvecs(ptype), lane = (int)(r % 16);
        const uint8_t *pan = (const uint8_t *)P + (size_t)(r / 16) * kn_pack_panel_bytes(ptype, K);
        for (int64_t i = 0; i < K / 32; i++) {
            const uint8_t *v = pan + kn_p16_q_at(qv, 0, i) + lane * 4;
            qt_half h;
            memcpy(&h, pan + kn_p16_s_at(qv, 0, i) + lane * 2, sizeof h);
            const float d = fp16_to_f32(h);
            float *o = y + 32 * i;
            if (q8)
                for (int t = 0; t < 8; t++)
                    for (int u = 0; u < 4; u++) o[4 * t + u] = d * (float)(int8_t)(v[64 * t + u] ^ 0x80);
            else
                for (int t = 0; t < 4; t++)
                    for (int u = 0; u < 4; u++) {
                        const int b = v[64 * t + u];
                        o[4 * t + u] = d * (float)((b & 15) - 8);
                        o[16 + 4 * t + u] = d * (float)((b >> 4) - 8);
                    }
        }
        return;
    }
    const uint32_t st = kn_p16_source(ptype);
    const int blk_n = qt_get(st)->block;
    uint8_t blk[sizeof(block_q6_K)]; /* the largest of the source blocks */
    for (int64_t i = 0; i < K / blk_n; i++) {
        kn_p16_block(ptype, P, K, r, i, blk);
        qt_dequantize_row(st, blk, y + blk_n * i, blk_n);
    }
}
