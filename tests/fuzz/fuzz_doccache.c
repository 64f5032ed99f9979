/* fuzz_doccache.c — libFuzzer target for the document cache: the input is a script of edits to a text
 * (append bytes, delete some, change one far back, pass only the tail), and after each the incrementally
 * kept cache must hold what a fresh cache given the same text holds (dc_digest). Aborting is the point. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typing/doccache.h"

#define CAP (1 << 16)

static uint64_t fresh(size_t window, const char *t, size_t n) {
    dc_cache *f = NULL;
    if (dc_create(window, &f)) abort();
    dc_update(f, t, n, 0);
    uint64_t d = dc_digest(f);
    dc_free(f);
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char text[CAP];
    if (size < 1) return 0;
    size_t window = 256u << (data[0] % 3), len = 0;
    dc_cache *c = NULL;
    if (dc_create(window, &c)) abort();
    for (size_t i = 1; i < size;) {
        uint8_t op = data[i++];
        size_t m = (size_t)(op >> 2) + 1;
        if ((op & 3) <= 1) { /* append m bytes of the input (repeated to stretch it) */
            for (size_t k = 0; k < m * ((op & 3) + 1) && len < CAP; k++) text[len++] = (char)data[(i + k) % size];
            i += m;
        } else if ((op & 3) == 2) { /* delete m bytes */
            len = m > len ? 0 : len - m;
        } else if (len > 0 && i < size) { /* change a byte far back */
            text[(m * 977) % len] = (char)data[i++];
        }
        size_t span = dc_span(c), base = (op & 64) && len > span ? len - span : 0;
        dc_update(c, text + base, len - base, base);
        if (dc_digest(c) != fresh(window, text, len)) {
            fprintf(stderr, "fuzz_doccache: cache differs from a fresh one at length %zu\n", len);
            abort();
        }
    }
    dc_free(c);
    return 0;
}
