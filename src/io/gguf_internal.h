/* gguf_internal.h — what the GGUF reader (gguf.c) and writer (gguf_write.c) share: value sizes, the rule
 * for keys and names, and the allocation-free sort both use to find duplicates. Internal to src/io. */
#ifndef LAYA_GGUF_INTERNAL_H
#define LAYA_GGUF_INTERNAL_H

#include <stdint.h>
#include <string.h>

#define GGUF_DEFAULT_ALIGN 32
#define GGUF_SHOW 64 /* bytes of a key or name quoted in a message */

/* Loads from the map may be unaligned; memcpy is the defined way and compiles to one load. */
static inline uint32_t gguf_ld_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

int gguf_host_is_le(void);
/* Bytes of a scalar of value type t, 0 for strings, arrays and unknown types. */
uint64_t gguf_vtype_size(uint32_t t);
/* Why a key or tensor name cannot be used (empty, too long, a NUL byte, not UTF-8), or NULL. */
const char *gguf_name_problem(const uint8_t *s, uint64_t n);

/* Sort records: a 64-bit key that settles most comparisons without touching the entries (gguf_key8 of a
 * name, or an offset), and the entry's index; ties go to a full comparison that ends on the index. */
typedef struct gguf_srec { uint64_t k; size_t i; } gguf_srec;
typedef int (*gguf_tie_fn)(const void *ctx, size_t a, size_t b);
void gguf_sort_recs(gguf_srec *r, size_t n, gguf_tie_fn tie, const void *ctx);
/* The first 8 bytes of a name, big-endian and zero-padded. */
uint64_t gguf_key8(const char *p, uint64_t n);

#endif
