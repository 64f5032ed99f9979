/* vtrie.h — the vocabulary as a table of token strings sorted bytewise, for constrained decoding: every
 * token whose text starts with a given string is one contiguous range, and every token whose text is a
 * prefix of a given string is found by one binary search per length. Not a tokenizer. */
#ifndef LAYA_VTRIE_H
#define LAYA_VTRIE_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

typedef struct vt_table {
    const laya_model *m;
    laya_token *ids; /* (n) token ids sorted by their piece bytes (shorter first on a shared prefix) */
    int32_t n;
} vt_table;

/* Builds the table over the tokens for which keep(id) is nonzero (with a non-empty piece). */
laya_status vt_build(vt_table *t, const laya_model *m, const uint8_t *keep);
void vt_free(vt_table *t);

/* Tokens consistent with the string r[0..n) (n >= 1): those whose text is a proper prefix of r, and those
 * whose text starts with r. Writes at most cap ids to out and returns the total count (which may exceed cap:
 * then out holds the first cap). Never allocates. */
int32_t vt_consistent(const vt_table *t, const char *r, size_t n, laya_token *out, int32_t cap);
/* The count alone (two binary searches plus one per length below n). */
int32_t vt_count_consistent(const vt_table *t, const char *r, size_t n);

#endif
