/* limits.h — the sizes the typing modules share (sequence slots, hypothesis lengths, healing) and the
 * candidate buffer they hand each other. Not here: a module's own tuning constants (in its .c file). */
#ifndef LAYA_TYPING_LIMITS_H
#define LAYA_TYPING_LIMITS_H

#include "laya.h"

#define MAX_SLOTS (LAYA_MAX_CANDIDATES + 2)
#define MAX_STEPS 32
#define GEN_MAX 192   /* bytes of generated text per hypothesis */
#define HEAL_MAX 64   /* bytes of typed text a completion may heal over */
#define W_MAX (HEAL_MAX + GEN_MAX)
#define TYPO_SLOTS 2  /* extra sequence slots, so scoring corrections leaves the beam's slots alone */
#define TYPO_TOK 6    /* longest word (tokens) scored as a correction */
#define CHUNK 64      /* prompt tokens per laya_decode */
#define CATCHUP_ROOM 16 /* batch rows per slot for a hypothesis catching up on its tokens (max_batch) */

typedef struct cand_buf {
    laya_candidate c[LAYA_MAX_CANDIDATES];
    char text[LAYA_MAX_CANDIDATES][LAYA_CANDIDATE_MAX_BYTES];
    int32_t n;
} cand_buf;

#endif
