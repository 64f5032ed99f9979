/* session.h — the typing session's state (struct laya_session, laya.h), internal to src/typing: one
 * sub-struct per module, each declared in that module's header. session.c orchestrates a keystroke
 * through them. Not part of the public API. */
#ifndef LAYA_SESSION_H
#define LAYA_SESSION_H

#include <stdatomic.h>

#include "engine/model.h"
#include "typing/analyze.h"
#include "typing/beam.h"
#include "typing/cachemix.h"
#include "typing/corrections.h"
#include "typing/deadline.h"
#include "typing/limits.h"
#include "typing/nodecache.h"
#include "typing/prefetch.h"
#include "typing/resources.h"
#include "typing/slots.h"
#include "typing/window.h"

#define CAL_MAX 64

struct laya_session {
    const laya_model *m;
    laya_session_params p;
    laya_context *ctx;
    tok_work *tw;
    const laya_resources *res; /* token classes, token table, known words: shared, or own_res */
    laya_resources *own_res;   /* built by this session when params.resources is NULL */
    const vt_table *vt;        /* &res->vt */
    const uint8_t *tflag;      /* res->tflag: (n_vocab) TF_* */
    int32_t n_vocab, n_slots, max_tokens;
    laya_token t_start, t_mode[3], t_zh, t_fim_pre, t_fim_suf, t_fim_mid; /* -1 when absent */
    int spm_space;             /* the tokenizer prepends a space to a text */
    int use_subset;            /* laya_get_logits_subset works on this build */
    uint32_t norm_flags;
    double log_min_prob;       /* log(params.min_prob), -inf for 0 */

    tw_text tx;                /* the text and the prompt (window.c) */
    an_shape sh;               /* what was typed (analyze.c) */
    sl_state sl;               /* sequence slots and the prompt's tokens (slots.c) */
    nc_cache nc;               /* node cache (nodecache.c) */
    bm_state bm;               /* beam search (beam.c) */
    dl_clock dl;               /* deadline and step estimate (deadline.c) */
    co_state co;               /* corrections (corrections.c) */
    cm_state cm;               /* cache models (cachemix.c) */
    pf_state pf;               /* prefetch (prefetch.c) */

    int have_text, decided;    /* decided: the last decision is for the current text and ran to its end */
    int has_cands;             /* out holds a decision of the current text */
    atomic_int interrupted;    /* laya_session_interrupt: stop at the next check, until the next set_text */
    atomic_int interruptible;  /* interrupted once: prefill in smaller chunks so later interrupts land sooner */

    /* decision scratch */
    laya_token *allowed;       /* (n_vocab) */
    float *vals;               /* (n_vocab) */
    laya_token *b_tok;         /* (max_batch) */
    int32_t *b_seq;
    int8_t *b_want;
    int32_t max_batch;
    cand_buf out;

    float cal_x[CAL_MAX], cal_y[CAL_MAX];
    int32_t cal_n;
    laya_session_stats st;
    char err[LAYA_ERR_MSG_MAX];
};

/* One decision on the current text into s->out (suggest, and prefetch's guesses). */
laya_status ses_decide(laya_session *s);

#endif
