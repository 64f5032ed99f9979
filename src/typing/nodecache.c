/* nodecache.c — the node cache (nodecache.h): logits by token sequence, with row summaries, replaced by
 * priority. Not here: deciding what to decode. */
#include "typing/nodecache.h"

#include <math.h>

#include "typing/session.h"

#define NC_BYTES (16u << 20) /* the cache's logits: 256 rows of a 16k vocabulary, 27 of Qwen's 152k */
#define NC_MAX 256
#define NC_MIN 32     /* entries at least, whatever the vocabulary */

/* The node cache's key of a token sequence, one token at a time: the key of prompt + hypothesis extends the
 * prompt's. 64 bits of a strong mix: a collision among the few hundred entries is out of reach. */
uint64_t nc_key_mix(uint64_t h, laya_token t) {
    h ^= (uint64_t)(uint32_t)t + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}

/* An entry used by the step now running, for what nc.cur says. */
void nc_touch(laya_session *s, int32_t e) {
    s->nc.stamp[e] = s->nc.clock;
    if (s->nc.pri[e] < s->nc.cur) s->nc.pri[e] = s->nc.cur;
}

int32_t nc_find(const laya_session *s, uint64_t key, int32_t n) {
    for (int32_t i = 0; i < s->nc.cap; i++)
        if (s->nc.key[i] == key && s->nc.n[i] == n) return i;
    return -1;
}

/* The summary of a row of logits (nodecache.h: nsum). */
static void nsum_fill(laya_session *s, const float *l, nsum *o) {
    const int32_t nv = s->n_vocab;
    float mx = -INFINITY;
    for (int32_t i = 0; i < nv; i++) mx = l[i] > mx ? l[i] : mx;
    float *ev = s->vals, sum = s->m->kn->exp_sum(l, mx, ev, nv), e[3] = {0, 0, 0};
    static const uint8_t end_bit[3] = {TF_END_WORD, TF_END_IDENT, TF_END_LINE};
    for (int k = 0; k < 4; k++) o->n_top[k] = 0;
    for (int32_t i = 0; i < nv; i++) {
        uint8_t f = s->tflag[i];
        float v = l[i];
        for (int k = 0; k < 3; k++)
            if (f & end_bit[k]) e[k] += ev[i];
        if (f & TF_NOGEN) continue;
        for (int k = 0; k < 4; k++)
            if ((k == 0 || !(f & end_bit[k - 1])) && (o->n_top[k] < NTOP || v > o->topv[k][NTOP - 1]))
                bm_top_push(o->top[k], o->topv[k], &o->n_top[k], NTOP, i, v);
    }
    o->lz = mx + log((double)sum);
    for (int k = 0; k < 3; k++) o->lend[k] = e[k] > 0 ? log((double)e[k] / sum) : -INFINITY;
}

/* Keep the logits after a token sequence (and their summary); an entry in use by this step is never the
 * one replaced. Returns the entry, or -1. */
int32_t nc_put(laya_session *s, uint64_t key, int32_t n, const float *lg) {
    if (n <= 0 || s->nc.cap == 0) return -1;
    int32_t v = nc_find(s, key, n);
    if (v >= 0) {
        nc_touch(s, v);
        return v;
    }
    for (int32_t i = 0; i < s->nc.cap; i++) {
        if (s->nc.n[i] < 0) {
            v = i;
            break;
        }
        if (s->nc.stamp[i] != s->nc.clock && (v < 0 || s->nc.pri[i] < s->nc.pri[v])) v = i;
    }
    /* a less likely guess does not push out what a likelier one (or the caller's text) decoded */
    if (v < 0 || (s->nc.n[v] >= 0 && s->nc.pri[v] >= s->nc.cur)) {
        s->nc.full++;
        return -1;
    }
    size_t nv = (size_t)s->n_vocab;
    memcpy(s->nc.logits + (size_t)v * nv, lg, nv * sizeof(float));
    nsum_fill(s, lg, &s->nc.sum[v]);
    s->nc.key[v] = key;
    s->nc.n[v] = n;
    s->nc.pri[v] = 0;
    nc_touch(s, v);
    return v;
}

laya_status nc_alloc(nc_cache *c, int32_t n_vocab) {
    size_t nv = (size_t)n_vocab;
    c->cap = (int32_t)LAYA_MAX((size_t)NC_MIN, LAYA_MIN((size_t)NC_MAX, NC_BYTES / (nv * sizeof(float))));
    c->logits = laya_malloc((size_t)c->cap * nv * sizeof(float));
    c->key = laya_malloc((size_t)c->cap * sizeof(uint64_t));
    c->sum = laya_malloc((size_t)c->cap * sizeof(nsum));
    c->n = laya_malloc((size_t)c->cap * sizeof(int32_t));
    c->stamp = laya_calloc((size_t)c->cap, sizeof(uint32_t));
    c->pri = laya_calloc((size_t)c->cap, sizeof(uint64_t));
    if (!c->logits || !c->key || !c->n || !c->stamp || !c->sum || !c->pri) return LAYA_ERR_NOMEM;
    for (int32_t i = 0; i < c->cap; i++) c->n[i] = -1;
    return LAYA_OK;
}

void nc_release(nc_cache *c) {
    void *bufs[] = {c->logits, c->key, c->sum, c->n, c->stamp, c->pri};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) laya_free(bufs[i]);
}
