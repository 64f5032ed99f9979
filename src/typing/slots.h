/* slots.h — the sequence slots and their KV cache: which tokens each slot holds, bringing a slot to a
 * token sequence (common prefix, fork from the prompt's slot, truncate, fill the batch), decoding the
 * prompt and a beam step's hypotheses. Not here: which hypotheses (beam.c), the forward pass (engine). */
#ifndef LAYA_SLOTS_H
#define LAYA_SLOTS_H

#include <stdint.h>

#include "typing/limits.h"

struct hyp;

typedef struct sl_state {
    laya_token *ptok;          /* (ptok_cap) the prompt */
    int32_t n_ptok, ptok_cap;
    laya_token *tok[MAX_SLOTS]; /* (max_kv_size) what each slot holds */
    int32_t n[MAX_SLOTS];
    int32_t ps;                /* the slot that holds the prompt (whichever held most of it at set_text) */
    uint64_t p_key, pre_key;   /* nc_key_mix of the prompt; of the prompt pre_logits belong to */
    int prompt_dirty;          /* set_text changed the prompt: sl_sync_prompt before the next decision */
    int kv_lag;                /* the prompt's logits came from the node cache but its slot holds only a
                                  prefix of it: the rest is decoded when a decode step needs it */
    float *pre_logits;         /* (n_vocab) logits after the prompt's last token */
    int32_t pre_n;             /* prompt length they belong to; -1: none */
} sl_state;

int32_t sl_lcp(const laya_token *a, int32_t na, const laya_token *b, int32_t nb);

/* Slot preparation: bring slot j to base[0..nb) + ext[0..ne), of which it holds the first l tokens already
 * (the common prefix). Positions [l, fork_to) it lacks are copied from the prompt's slot (a fork: a few KB
 * each) instead of decoded; the slot is truncated there and the rest goes into the batch at *rows, with
 * `want` on the rows of positions from want_from on. */
laya_status sl_prepare(laya_session *s, int32_t j, const laya_token *base, int32_t nb, const laya_token *ext,
                       int32_t ne, int32_t l, int32_t fork_to, int32_t want_from, int8_t want, int32_t *rows);
/* After a batch failed: forget what the slots were to hold. */
void sl_forget_batch(laya_session *s);

/* Bring a slot to the prompt and have the logits after it (pre_logits). */
laya_status sl_sync_prompt(laya_session *s);
/* Before a decode step that reads the prompt's slot: its KV up to the whole prompt. */
laya_status sl_prompt_kv(laya_session *s);
/* Decode a beam step's new hypotheses in one batch (those in the node cache cost nothing). */
laya_status sl_decode_hyps(laya_session *s, struct hyp *hs, int32_t n);
/* About how many rows decoding c takes. */
int32_t sl_hyp_rows(const laya_session *s, const struct hyp *c);

#endif
