/* alloc_hooks.h — the tests' allocator for laya_set_alloc_hooks: counts allocations, tracks live blocks
 * (a leak shows as ta_live != 0 after cleanup) and can fail the n-th allocation (out-of-memory injection). */
#ifndef LAYA_TEST_ALLOC_HOOKS_H
#define LAYA_TEST_ALLOC_HOOKS_H
#include <stdlib.h>

#include "base/common.h"

static long ta_count, ta_live, ta_fail_at; /* ta_fail_at: which allocation fails, counted from 1; 0 = none */

static void *ta_malloc(size_t n, void *ud) {
    (void)ud;
    if (++ta_count == ta_fail_at) return NULL;
    void *p = malloc(n);
    ta_live += p != NULL;
    return p;
}

static void ta_free(void *p, void *ud) {
    (void)ud;
    ta_live -= p != NULL;
    free(p);
}

/* Installs the hooks with fresh counters; fail_at as ta_fail_at. laya_set_alloc_hooks(NULL) removes them. */
static void ta_install(long fail_at) {
    static const laya_alloc_hooks h = {ta_malloc, ta_free, NULL};
    ta_count = ta_live = 0;
    ta_fail_at = fail_at;
    laya_set_alloc_hooks(&h);
}
#endif
