/* words.h — the word definition both next-word evaluators use (nextword.c for Laya, presage_nextword.c for
 * Presage), so they score the same positions. A word is a run of letters, digits and '_'; beyond ASCII
 * every code point from U+00C0 up counts as a letter except the general and CJK punctuation blocks and
 * full-width ASCII punctuation; each CJK character is a word of its own. */
#ifndef LAYA_EVAL_WORDS_H
#define LAYA_EVAL_WORDS_H
#include <stdint.h>

static inline int is_cjk(uint32_t c) {
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x20000 && c <= 0x2FFFF);
}

static inline int is_word(uint32_t c) {
    if (c < 128) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (c >= 0x2000 && c <= 0x206F) return 0;
    if (c >= 0x3000 && c <= 0x303F) return 0;
    if (c >= 0xFF00 && c <= 0xFF0F) return 0;
    if (c >= 0xFF1A && c <= 0xFF20) return 0;
    return c >= 0xC0;
}
#endif
