/* normalize.h — the text normalization a typing session applies before tokenizing: full-width ASCII to
 * half-width, zero-width characters removed, runs of spaces folded, invalid UTF-8 replaced by U+FFFD, with
 * a map from every output byte back to the raw byte it came from (candidates apply to the raw text).
 * Not here: Unicode NFC (the tokenizer does it), case folding. Never allocates. */
#ifndef LAYA_NORMALIZE_H
#define LAYA_NORMALIZE_H

#include <stddef.h>
#include <stdint.h>

/* flags: LAYA_NORM_* from laya.h. out must hold 3 * n bytes (each invalid byte becomes U+FFFD) and map
 * 3 * n + 1 entries: map[i] is the raw offset of the character that produced out[i], map[len] = n.
 * Returns the output length. */
size_t nz_normalize(const char *raw, size_t n, uint32_t flags, char *out, uint32_t *map);

/* Decode one code point of possibly invalid UTF-8 at s[*i] (an invalid byte gives U+FFFD and advances
 * one byte). */
uint32_t nz_next(const char *s, size_t n, size_t *i);

/* Code points in s[0..n), counting as nz_next does. */
size_t nz_count_chars(const char *s, size_t n);

#endif
