/* nodecache.h — the node cache: the logits after every hypothesis decoded since the prompt last changed,
 * keyed by its token sequence, with a summary of each row (what the beam needs of it). Typing on inside a
 * word restarts the beam with a narrower prefix; most hypotheses it needs were decoded at the keystrokes
 * before and cost nothing now. Not here: which hypotheses to decode (beam.c, slots.c). */
#ifndef LAYA_NODECACHE_H
#define LAYA_NODECACHE_H

#include <stdint.h>

#include "laya.h"

#define NC_ROW0 (-1000)       /* hyp.row <= NC_ROW0: node-cache entry NC_ROW0 - row */
#define NC_PRI_OWN 0xffffffffull /* nc.cur's weight for the caller's own text */
#define NC_KEY0 0x6a09e667f3bcc909ull
#define NTOP LAYA_MAX_CANDIDATES /* the widest beam */

/* What the beam needs of a row of logits, computed once when the row enters the cache: a cached
 * hypothesis is then expanded in O(NTOP) instead of three passes over the vocabulary. */
typedef struct nsum {
    double lz;         /* log of the softmax normalizer */
    double lend[3];    /* log of the probability mass of the tokens that end a word / identifier / line */
    /* the best generating tokens (not TF_NOGEN), best first: [0] all of them, [1 + k] those that do not
     * end a word / identifier / line (where the hypothesis may end, its enders finish it instead) */
    int32_t n_top[4];
    laya_token top[4][NTOP];
    float topv[4][NTOP];
} nsum;

typedef struct nc_cache {
    float *logits;             /* (cap, n_vocab) */
    uint64_t *key;             /* (cap) nc_key_mix of the whole token sequence (prompt included) */
    int32_t *n;                /* its length in tokens; -1: empty */
    uint32_t *stamp;           /* decode step that last used it: an entry in use by this step stays */
    uint64_t *pri;             /* (keystroke, weight) it was last used for: the lowest is replaced first */
    nsum *sum;                 /* (cap) */
    int32_t cap;
    uint32_t clock;
    uint32_t full;             /* rows the cache had no room for (at their priority) */
    uint64_t cur;              /* the priority of what is decoded now: this keystroke, and 2^32 - 1 for the
                                  caller's own text or the guess's likelihood in 2^-32 for a prefetch */
} nc_cache;

/* The cache's key of a token sequence, one token at a time: prompt + hypothesis extends the prompt's. */
uint64_t nc_key_mix(uint64_t h, laya_token t);
laya_status nc_alloc(nc_cache *c, int32_t n_vocab);
void nc_release(nc_cache *c);
void nc_touch(laya_session *s, int32_t e);
int32_t nc_find(const laya_session *s, uint64_t key, int32_t n);
int32_t nc_put(laya_session *s, uint64_t key, int32_t n, const float *lg);

#endif
