/* beam.h — the beam search of a decision: hypotheses (token sequences after the prompt), expanded a step
 * at a time over the constrained (healing) and free tokens, finished where the stop rules end them, kept to
 * the likeliest that can still make the k best. Not here: decoding (slots.c), stop rules (stoprule.c). */
#ifndef LAYA_BEAM_H
#define LAYA_BEAM_H

#include <stdint.h>

#include "typing/limits.h"

typedef struct hyp {
    laya_token tok[MAX_STEPS];
    int32_t n_tok;
    int32_t gen_len;
    char gen[GEN_MAX]; /* the bytes of tok, concatenated */
    double logp;
    int32_t slot;      /* sequence slot holding prompt + tok */
    uint64_t key;      /* nc_key_mix over prompt + tok: the node cache's key */
    int32_t row;       /* batch row of the last token; -1: the prompt's cached logits;
                          <= NC_ROW0: node-cache entry NC_ROW0-row */
    int32_t hidden;    /* decoded with LAYA_WANT_HIDDEN: only subset logits */
} hyp;

typedef struct fin {
    double logp;
    int32_t len;
    char text[LAYA_CANDIDATE_MAX_BYTES];
    char punct[8];     /* the likeliest punctuation after the word, for prefetch's guesses */
    int32_t punct_len;
    float punct_p;     /* its probability given that the word ends here */
} fin;

#define FIN_MAX 64     /* finished candidates kept per decision */

typedef struct bm_state {
    hyp *live, *next, *pool;   /* (n_slots), (n_slots), (n_slots * n_slots) */
    int32_t n_live;
    fin *fins;                 /* (FIN_MAX) */
    int32_t n_fins;
    double typed_lp;           /* log prob that the partial word ends as typed (the decision skips it) */
    fin typed_fin;             /* its punctuation */
} bm_state;

/* Run the beam from the prompt until no hypothesis can make the k best, or the deadline. */
laya_status bm_search(laya_session *s);
/* A finished candidate (another path to the same text adds up). */
void bm_add_fin(laya_session *s, const char *w, int32_t len, double logp);
/* Insert (id, v) into a top list of cap entries sorted by v descending. */
void bm_top_push(laya_token *ids, float *vs, int32_t *n, int32_t cap, laya_token id, float v);
int bm_cmp_fin(const void *a, const void *b);

#endif
