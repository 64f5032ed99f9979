/* vtrie.c — the sorted table of token strings behind token healing (vtrie.h). A sorted array rather than a
 * pointer trie: one allocation, cache-friendly binary searches, and the "starts with" set is a range. */
#include "typing/vtrie.h"

#include <stdlib.h>
#include <string.h>

#include "base/common.h"

/* qsort has no context argument: the model is passed through a thread-local (building is not a hot path). */
static _Thread_local const laya_model *sort_model;

static int cmp_piece(const char *a, size_t na, const char *b, size_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    if (c) return c;
    return na < nb ? -1 : na > nb;
}

static int cmp_ids(const void *pa, const void *pb) {
    laya_token a = *(const laya_token *)pa, b = *(const laya_token *)pb;
    size_t na, nb;
    const char *sa = laya_token_piece(sort_model, a, &na), *sb = laya_token_piece(sort_model, b, &nb);
    int c = cmp_piece(sa, na, sb, nb);
    return c ? c : (a > b) - (a < b);
}

laya_status vt_build(vt_table *t, const laya_model *m, const uint8_t *keep) {
    memset(t, 0, sizeof *t);
    int32_t nv = laya_n_vocab(m);
    t->m = m;
    t->ids = laya_malloc((size_t)(nv > 0 ? nv : 1) * sizeof *t->ids);
    if (!t->ids) return LAYA_ERR_NOMEM;
    for (int32_t i = 0; i < nv; i++) {
        size_t len;
        if (keep[i] && laya_token_piece(m, i, &len) && len > 0) t->ids[t->n++] = i;
    }
    sort_model = m;
    qsort(t->ids, (size_t)t->n, sizeof *t->ids, cmp_ids);
    return LAYA_OK;
}

void vt_free(vt_table *t) {
    if (!t) return;
    laya_free(t->ids);
    t->ids = NULL;
    t->n = 0;
}

/* First index whose piece compares >= (r, n) bytewise (with "starts with r" counting as >=). */
static int32_t lower(const vt_table *t, const char *r, size_t n) {
    int32_t lo = 0, hi = t->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        size_t pl;
        const char *p = laya_token_piece(t->m, t->ids[mid], &pl);
        if (cmp_piece(p, pl, r, n) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* First index whose piece does not start with r and compares greater. */
static int32_t upper_prefix(const vt_table *t, const char *r, size_t n, int32_t from) {
    int32_t lo = from, hi = t->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        size_t pl;
        const char *p = laya_token_piece(t->m, t->ids[mid], &pl);
        int c = memcmp(p, r, pl < n ? pl : n);
        if (c <= 0) lo = mid + 1; /* below r, a prefix of r, or starting with r */
        else hi = mid;
    }
    return lo;
}

static int32_t scan(const vt_table *t, const char *r, size_t n, laya_token *out, int32_t cap) {
    int32_t k = 0;
    /* proper prefixes of r: exact matches of r[0..len) for len < n */
    for (size_t len = 1; len < n; len++) {
        for (int32_t i = lower(t, r, len); i < t->n; i++) {
            size_t pl;
            const char *p = laya_token_piece(t->m, t->ids[i], &pl);
            if (pl != len || memcmp(p, r, len) != 0) break;
            if (k < cap) out[k] = t->ids[i];
            k++;
        }
    }
    int32_t lo = lower(t, r, n), hi = upper_prefix(t, r, n, lo);
    for (int32_t i = lo; i < hi; i++) {
        if (k < cap) out[k] = t->ids[i];
        k++;
    }
    return k;
}

int32_t vt_consistent(const vt_table *t, const char *r, size_t n, laya_token *out, int32_t cap) {
    if (!t || !t->ids || n == 0) return 0;
    return scan(t, r, n, out, cap);
}

int32_t vt_count_consistent(const vt_table *t, const char *r, size_t n) {
    if (!t || !t->ids || n == 0) return 0;
    return scan(t, r, n, NULL, 0);
}
