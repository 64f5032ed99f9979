/* common.h — internal helpers shared by every module: the one allocation hook, error formatting,
 * overflow-checked arithmetic, fp16/bf16 conversion. Not part of the public API. */
#ifndef LAYA_COMMON_H
#define LAYA_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "laya.h"

/* The one allocation path. Tests swap the hook to count allocations or inject failure. */
typedef struct laya_alloc_hooks {
    void *(*malloc_fn)(size_t n, void *ud);
    void (*free_fn)(void *p, void *ud);
    void *ud;
} laya_alloc_hooks;
void laya_set_alloc_hooks(const laya_alloc_hooks *h); /* NULL restores libc */
void *laya_malloc(size_t n);                           /* NULL on n == 0 overflow or failure */
void *laya_calloc(size_t n, size_t size);              /* overflow-checked, zeroed */
void *laya_aligned_alloc(size_t align, size_t n);      /* align a power of two >= sizeof(void*); free with laya_free */
/* A table that load fills whole (the tokenizer's): from 2 MB up, 2 MB-aligned with transparent huge pages
 * asked for, so that filling it costs a page fault per 2 MB, not per 4 KB; smaller, laya_malloc. Free with laya_free. Not for memory touched sparsely
 * (a KV cache): a huge page makes all its 2 MB resident at its first touch. */
void *laya_dense_alloc(size_t n);
void laya_free(void *p);
char *laya_strndup(const char *s, size_t n);

/* Map a regular file read-only (model files: GGUF, safetensors). An empty file gives *map = NULL and
 * *len = 0, since mmap refuses zero bytes; release with munmap(*map, *len). */
laya_status laya_map_file(const char *path, void **map, size_t *len, char *err, size_t errlen);

/* The log callback of laya_set_log: a no-op when none is set. Load-time and file paths only, never the
 * keystroke path (it takes a lock and formats). */
void laya_log(laya_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* LAYA_ERR_INVALID_ARG with a message naming laya_<what>_default_params when a params struct's abi is not
 * this library's (a program built against another laya.h, or a struct not started from the defaults). */
laya_status laya_check_abi(uint32_t abi, const char *what, char *err, size_t errlen);

/* Write a formatted message into buf (cap bytes, may be 0/NULL) and return st. */
laya_status laya_err(char *buf, size_t cap, laya_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Overflow-checked arithmetic: set *r and return 1 on overflow, 0 otherwise. */
static inline int ck_add(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline int ck_mul(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }

static inline float fp16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalize */
            int e = -1;
            do { e++; man <<= 1; } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round to nearest even, like numpy/torch .half(). */
static inline uint16_t f32_to_fp16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) { /* subnormal or zero in fp16 */
        if (ax < 0x33000000u) return (uint16_t)sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        /* value = m * 2^(e-150); the fp16 subnormal unit is 2^-24, so count = m * 2^(e-126) */
        uint32_t sh = 126 - e;          /* >= 1 */
        uint32_t q = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t h = ((ax >> 13) - (112u << 10));
    uint32_t rem = ax & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static inline float bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

#define LAYA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define LAYA_MAX(a, b) ((a) > (b) ? (a) : (b))

/* The library's clock, monotonic: nanoseconds (the pool's thread timings) and milliseconds (deadlines, step
 * estimates, prefetch budgets, profiling). */
static inline int64_t laya_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline double laya_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#endif
