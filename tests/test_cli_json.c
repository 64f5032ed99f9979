/* test_cli_json.c — the command line's own JSON (tools/cli_json.c) against the library's internal one:
 * the same bytes out for strings and numbers (so the tools' output did not change when they left the
 * library's headers), and the same verdict and bytes when reading a JSON string.
 * Not here: the commands that use it (test_cli.c). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/cli_json.h"
#include "base/json.h"
#include "check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* Random bytes, biased towards what matters: quotes, backslashes, controls, UTF-8 leads and tails. */
static size_t random_bytes(char *b, size_t cap) {
    static const char pool[] = "\"\\\n\t\x01\x1f u/\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xed\xa0\x80\xc0\xff\x80";
    size_t n = next() % cap;
    for (size_t i = 0; i < n; i++) b[i] = next() % 3 ? pool[next() % (sizeof pool - 1)] : (char)next();
    return n;
}

static void test_writer(void) {
    char s[64];
    int same = 1;
    for (int it = 0; it < 20000; it++) {
        size_t n = random_bytes(s, sizeof s);
        cj_buf a;
        json_buf b;
        cj_init(&a);
        json_buf_init(&b);
        cj_str(&a, s, n);
        json_buf_str(&b, s, n);
        double x = ldexp((double)(int32_t)next(), (int)(next() % 200) - 100);
        float f = (float)ldexp((double)(int32_t)next(), (int)(next() % 120) - 60);
        cj_num(&a, x), json_buf_num(&b, x);
        cj_f32(&a, f), json_buf_f32(&b, f);
        cj_printf(&a, "%d|%s", it, "z"), json_buf_printf(&b, "%d|%s", it, "z");
        if (a.oom || a.len != b.len || memcmp(a.p, b.p, a.len)) {
            if (same) fprintf(stderr, "  differ: '%s' vs '%s'\n", a.p, b.p);
            same = 0;
        }
        cj_free(&a);
        json_buf_free(&b);
    }
    CHECK(same, "cj_* writes what json_buf_* writes");
    cj_buf a;
    cj_init(&a);
    cj_num(&a, NAN), cj_f32(&a, INFINITY), cj_num(&a, 0.1), cj_f32(&a, 0.1f);
    CHECK(!strcmp(a.p, "nullnull0.10.1"), "non-finite as null, shortest float: %s", a.p);
    cj_clear(&a);
    for (int i = 0; i < 1000; i++) cj_cstr(&a, "0123456789");
    CHECK(a.len == 10000 && !a.oom, "grows");
    cj_free(&a);
}

/* Every random input: cj_read_string accepts exactly when json_parse gives a string, with its bytes. */
static void test_reader(void) {
    char s[64], in[80], err[128], jerr[256];
    int agree = 1, accepted = 0;
    for (int it = 0; it < 40000; it++) {
        size_t n = random_bytes(s, sizeof s);
        size_t m = 0;
        if (next() % 8) in[m++] = '"';
        memcpy(in + m, s, n), m += n;
        if (next() % 8) in[m++] = '"';
        if (!(next() % 8)) in[m++] = ' ';
        char *out = NULL;
        size_t out_len = 0;
        int ok = cj_read_string(in, m, &out, &out_len, err, sizeof err);
        json_doc *d = NULL;
        int jok = json_parse(in, m, NULL, &d, jerr, sizeof jerr) == LAYA_OK && json_root(d)->type == JSON_STRING;
        int same = ok == jok && (!ok || (out_len == json_root(d)->len && !memcmp(out, json_root(d)->s, out_len)));
        if (!same && agree) fprintf(stderr, "  '%.*s': cli %d (%s), library %d (%s)\n", (int)m, in, ok, ok ? "" : err, jok, jerr);
        agree &= same;
        accepted += ok;
        if (!ok && !err[0]) agree = 0;
        free(out);
        json_free(d);
    }
    CHECK(agree, "cj_read_string agrees with json_parse");
    CHECK(accepted > 300, "enough accepted inputs to mean something: %d", accepted);
    char *out = NULL;
    size_t n = 0;
    const char *t = " \"a\\u0000b\\ud83d\\ude00\" ";
    CHECK(cj_read_string(t, strlen(t), &out, &n, err, sizeof err) && n == 7 &&
              !memcmp(out, "a\0b\xf0\x9f\x98\x80", 7),
          "NUL and a surrogate pair: %s", err);
    free(out);
}

int main(void) {
    test_writer();
    test_reader();
    return DONE("test_cli_json");
}
