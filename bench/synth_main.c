/* synth_main.c — build/laya-synth, the dev program that writes a random-weight model with a real model's
 * shapes (bench/synth.c) for benchmarks, tests and eval/decisions.sh. Dev-only: it links the static
 * library and its internal headers. Not here: anything a user needs (those commands live in build/laya). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

#define HELP                                                                                            \
    "usage: laya-synth --shape NAME -o OUT.gguf [--type T] [--seed S]\n"                                \
    "Writes a model with random N(0, 0.02) weights (norms 1) and the exact shapes and metadata of a\n"  \
    "real one, plus a synthetic byte-level BPE tokenizer. T: F32, F16, Q8_0 (default) or Q4_0.\n"       \
    "S: a 64-bit seed (default 0); the same seed gives the same file.\n"                                \
    "shapes:"

/* Exit codes as build/laya's: 1 a failure while running, 2 a usage error. */
static int usage_error(const char *fmt, const char *arg) {
    fputs("laya-synth: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n(see 'laya-synth --help')\n", stderr);
    return 2;
}

int main(int argc, char **argv) {
    const char *shape = NULL, *out = NULL, *type = "Q8_0", *seed_s = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], **dst = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(HELP, stdout);
            for (const char *const *s = synth_shape_names(); *s; s++) printf(" %s", *s);
            putchar('\n');
            return 0;
        }
        if (!strcmp(a, "--shape")) dst = &shape;
        else if (!strcmp(a, "-o") || !strcmp(a, "--output")) dst = &out;
        else if (!strcmp(a, "--type")) dst = &type;
        else if (!strcmp(a, "--seed")) dst = &seed_s;
        else return usage_error("unknown argument '%s'", a);
        if (i + 1 >= argc) return usage_error("option %s needs a value", a);
        *dst = argv[++i];
    }
    if (!shape) return usage_error("missing --shape NAME%s", "");
    if (!out) return usage_error("missing -o OUT.gguf%s", "");
    uint64_t seed = 0;
    if (seed_s) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(seed_s, &end, 0);
        if (errno || *end || end == seed_s || seed_s[0] == '-')
            return usage_error("--seed: '%s' is not a non-negative integer", seed_s);
        seed = v;
    }
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = synth_write(shape, type, seed, out, err, sizeof err);
    if (st) {
        fprintf(stderr, "laya-synth: error: %s\n", err[0] ? err : laya_status_str(st));
        return 1;
    }
    return 0;
}
