/* cachemix.h — the cache models mixed with the language model's candidates: the document cache (words of
 * the text before the cursor) and the user dictionary, p = (1 - l) p_model + l p_cache, and their words the
 * model did not offer. Not here: the caches themselves (doccache.c, userdict.c). */
#ifndef LAYA_CACHEMIX_H
#define LAYA_CACHEMIX_H

#include "typing/doccache.h"
#include "typing/userdict.h"

typedef struct cm_state {
    ud_dict *ud;
    double ud_z;               /* the weight of all its words (not phrases); < 0: to be summed */
    dc_cache *dc;              /* the document cache (text mode, not sensitive, doc_cache_bytes > 0) */
} cm_state;

/* Both mixes over the finished candidates (s->bm.fins), where the caches apply. */
void cm_mix(laya_session *s);

#endif
