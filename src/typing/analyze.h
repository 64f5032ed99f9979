/* analyze.h — the analysis of what was typed: the partial word at the cursor and its bounds, whether the
 * decision completes it or predicts the next word, where token healing starts, what a candidate replaces,
 * and the word just finished that a correction may replace. Pure functions of the normalized text. */
#ifndef LAYA_ANALYZE_H
#define LAYA_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "typing/limits.h"
#include "typing/stoprule.h"

typedef struct an_shape {
    int32_t word_start, anchor; /* offsets in the normalized text: the partial word, and where healing starts */
    char heal[HEAL_MAX + 8];    /* the typed bytes every candidate must start with */
    int32_t heal_len;
    int32_t kind;               /* LAYA_KIND_COMPLETE or NEXT */
    int32_t replace, replace_bytes; /* what a candidate replaces in the raw text */
    sr_rules rules;             /* where its candidates stop */
    int32_t no_cands;           /* the text allows no candidate (an over-long word, no start token) */
    int32_t last_ws, last_we, last_anchor; /* the word just finished (last_ws -1: none to check) */
    int32_t corr_replace, corr_replace_bytes;
} an_shape;

/* The normalized text t[0..end) with map to the raw text raw[0..raw_len); mode: laya_mode; lead_space:
 * the tokenizer prepends a space and nothing comes before the text, so the heal starts with one. */
void an_typed(an_shape *sh, const char *t, int32_t end, const uint32_t *map, const char *raw, size_t raw_len,
              int mode, int32_t max_tokens, int lead_space);

/* The word just finished (the cursor after it and at most two boundary characters), for corrections:
 * sets last_ws (-1 when there is none; always -1 unless check is set). Call after an_typed. */
void an_last_word(an_shape *sh, const char *t, int32_t end, const uint32_t *map, const char *raw, size_t raw_len,
                  int check);

#endif
