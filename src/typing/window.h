/* window.h — the text window and the prompt: which part of the caller's text the model sees (a function
 * of the text alone, moving in steps so that typing keeps the KV cache), its normalization, and the
 * prompt's tokens (start and mode tokens, context, the text up to the healing anchor, FIM suffix).
 * Not here: what the prompt's tokens cost (slots.c), the analysis of the typed word (analyze.c). */
#ifndef LAYA_WINDOW_H
#define LAYA_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

typedef struct tw_text {
    char *norm;                /* (3 * max_text) before the cursor, normalized */
    uint32_t *map;             /* (3 * max_text + 1) to the raw text */
    int32_t norm_len;
    char *after;               /* (3 * max_text / 4) after the cursor */
    uint32_t *amap;
    int32_t after_len;
    char *ctxt;                /* (max_text) set_context */
    int32_t ctxt_len;
    char *prompt;              /* (prompt_cap) text given to the tokenizer */
    char *guess;               /* the text after an accept, then the text after the cursor */
    size_t prompt_cap;
    /* the caller's text, windowed and raw: kept while prefetch decides guesses of the next one */
    char *raw, *raw_after;     /* (max_text + 8), (max_text / 4 + 8) */
    size_t raw_len, raw_after_len, full, cut; /* full: the caller's length; cut: where the window starts */
} tw_text;

/* Where the model's view of a text of n bytes begins, before the move to a word start. */
size_t tw_step_cut(size_t n, size_t max_text);
/* ... and there; t holds the text's end from byte base on (base <= n - max_text when n > max_text). */
size_t tw_start(const char *t, size_t base, size_t n, size_t max_text);

/* Tokenize t[0..n) into dst[*k..ptok_cap), advancing *k. */
laya_status tw_tokenize(laya_session *s, const char *t, size_t n, laya_token *dst, int32_t *k);

/* Normalize the (windowed) text, analyze it and build the prompt's tokens; decodes nothing. */
laya_status tw_set_text(laya_session *s, const char *before, size_t before_len, const char *after, size_t after_len);

#endif
