/* textclass.h — the character classes the typing layer's rules are written in (word characters, letters,
 * CJK, apostrophes) and the UTF-8 boundary helpers that cut a text without splitting a character: one
 * definition for the session's rules and the document cache. Not here: the tokenizer's pre-token classes
 * (base/unicode.h), normalization (normalize.h). */
#ifndef LAYA_TEXTCLASS_H
#define LAYA_TEXTCLASS_H

#include <stddef.h>
#include <stdint.h>

#include "base/unicode.h"
#include "typing/normalize.h"

/* Kana and CJK ideographs: words with no spaces between them, so a rule reads one character at a time. */
static inline int tc_is_cjk(uint32_t c) {
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x2FFFF);
}

/* A word character: a letter, a digit, '_' or a combining mark, CJK included. */
static inline int tc_is_word(uint32_t c) {
    if (c < 128) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    return (uni_flags(c) & (UNI_L | UNI_N | UNI_CCC)) != 0;
}

/* The same without CJK: the characters of a space-separated word (the document cache's words). */
static inline int tc_is_word_spaced(uint32_t c) { return tc_is_word(c) && !tc_is_cjk(c); }

/* A word character that is no digit and no '_'. */
static inline int tc_is_letter(uint32_t c) { return c == '_' ? 0 : tc_is_word(c) && !(c >= '0' && c <= '9'); }
static inline int tc_is_letter_spaced(uint32_t c) { return tc_is_letter(c) && !tc_is_cjk(c); }
static inline int tc_is_apos(uint32_t c) { return c == '\'' || c == 0x2019; }

/* The zero-width characters LAYA_NORM_ZERO_WIDTH removes. */
static inline int tc_is_zero_width(uint32_t c) {
    return c == 0x200B || c == 0x200C || c == 0x200D || c == 0x2060 || c == 0xFEFF || c == 0x00AD;
}

/* The code point at s[i] of s[0..n), read as normalize.h's nz_next reads it (an invalid byte: U+FFFD). */
static inline uint32_t tc_cp_at(const char *s, int32_t n, int32_t i) {
    size_t j = (size_t)i;
    return nz_next(s, (size_t)n, &j);
}

static inline int tc_is_cont(unsigned char b) { return (b & 0xC0) == 0x80; }

/* Start of the code point that ends at s[end) (end > 0; at most 3 continuation bytes back). */
static inline int32_t tc_prev_cp(const char *s, int32_t end) {
    int32_t i = end - 1;
    while (i > 0 && end - i < 4 && tc_is_cont((unsigned char)s[i])) i--;
    return i;
}

/* A cut of s[0..len) at n <= len moved back so that it does not split a character (a prefix). */
static inline size_t tc_utf8_cut_end(const char *s, size_t len, size_t n) {
    while (n > 0 && n < len && tc_is_cont((unsigned char)s[n])) n--;
    return n;
}

/* A cut at i moved forward past continuation bytes (a suffix that starts on a character). */
static inline size_t tc_utf8_cut_start(const char *s, size_t len, size_t i) {
    while (i < len && tc_is_cont((unsigned char)s[i])) i++;
    return i;
}

#endif
