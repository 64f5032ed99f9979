/* prefetch.h — the next keystroke's decision, in the idle time before it: a plan of the texts the caller
 * will likely send next (candidates taken, the next character, the word ended), decided likeliest first
 * into the node cache, then back to the caller's text. Not here: the worker's idle loop (worker.c). */
#ifndef LAYA_PREFETCH_H
#define LAYA_PREFETCH_H

#include "typing/limits.h"

#define PF_MAX 16 /* guesses of the next text one prefetch considers */

/* A guess of the next text: the caller's (windowed, raw) text before the cursor is raw[0..keep) + add. */
typedef struct pf_guess {
    double w;          /* how likely it is (for the order) */
    int32_t keep, add_len;
    char add[LAYA_CANDIDATE_MAX_BYTES + 8];
} pf_guess;

typedef struct pf_state {
    char *text;                /* (3 * max_text + 2 * LAYA_CANDIDATE_MAX_BYTES + 16) a guessed text */
    pf_guess g[PF_MAX];        /* the plan for the current text, likeliest first */
    int32_t n, i;              /* guesses planned (-1: no plan yet), and done */
    cand_buf out;              /* the caller's candidates while guesses are decided */
    int active;                /* decisions are guesses: no user deadline, stop at end */
    int32_t done_rows;         /* rows this prefetch call decoded in the guesses before the current one */
    double end;
} pf_state;

/* Decide the plan's guesses until end (a clock time) or an interrupt; the caller's text and candidates are
 * kept. A decision of the caller's text its deadline cut short is finished first. */
laya_status pf_run(laya_session *s, double end, int32_t *n_done, int32_t *n_left);

#endif
