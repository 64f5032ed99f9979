/* test_json.c — the JSON parser on valid documents, every error class, and hostile inputs (deep nesting,
 * huge numbers, bad escapes, invalid UTF-8, truncation at every byte); plus the writer's escaping.
 * Not here: the CLI's use of it (test_cli.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/common.h"
#include "base/json.h"

static char err[256];

/* Parse a NUL-terminated text; returns the doc or NULL (err holds the message). */
static json_doc *parse(const char *s) {
    json_doc *d = NULL;
    json_parse(s, strlen(s), NULL, &d, err, sizeof err);
    return d;
}

static int fails(const char *s, const char *msg_part) {
    json_doc *d = NULL;
    err[0] = 0;
    laya_status st = json_parse(s, strlen(s), NULL, &d, err, sizeof err);
    int ok = st != LAYA_OK && d == NULL && err[0] && (!msg_part || strstr(err, msg_part));
    if (!ok) fprintf(stderr, "  input %.60s: status %d, message '%s'\n", s, st, err);
    json_free(d);
    return ok;
}

static void test_values(void) {
    json_doc *d = parse(" {\"a\": [1, -2.5, 3e2, true, false, null, \"x\"], \"b\": {}, \"c\": [], \"\": 0} ");
    CHECK(d != NULL, "parse: %s", err);
    const json_value *r = json_root(d);
    CHECK(r && r->type == JSON_OBJECT && r->n == 4, "root");
    const json_value *a = json_get(r, "a");
    CHECK(a && a->type == JSON_ARRAY && a->n == 7, "a");
    CHECK(json_at(a, 0)->is_int && json_at(a, 0)->i == 1, "1");
    CHECK(!json_at(a, 1)->is_int && json_at(a, 1)->num == -2.5, "-2.5");
    CHECK(!json_at(a, 2)->is_int && json_at(a, 2)->num == 300.0, "3e2");
    CHECK(json_at(a, 3)->type == JSON_BOOL && json_at(a, 3)->b == 1, "true");
    CHECK(json_at(a, 4)->type == JSON_BOOL && json_at(a, 4)->b == 0, "false");
    CHECK(json_at(a, 5)->type == JSON_NULL, "null");
    CHECK(json_at(a, 6)->type == JSON_STRING && json_at(a, 6)->len == 1 && !strcmp(json_at(a, 6)->s, "x"), "x");
    CHECK(json_at(a, 7) == NULL, "out of range");
    CHECK(json_get(r, "b")->type == JSON_OBJECT && json_get(r, "b")->n == 0, "b");
    CHECK(json_first(json_get(r, "b")) == NULL, "empty object has no child");
    CHECK(json_get(r, "c")->type == JSON_ARRAY && json_get(r, "c")->n == 0, "c");
    CHECK(json_get(r, "")->is_int && json_get(r, "")->i == 0, "empty key");
    CHECK(json_get(r, "zz") == NULL, "absent key");
    CHECK(json_get(a, "a") == NULL, "json_get on an array");
    int cnt = 0;
    for (const json_value *c = json_first(r); c; c = json_next(r, c)) cnt++;
    CHECK(cnt == 4, "iteration over members: %d", cnt);
    json_free(d);

    /* scalars at the root and whitespace */
    d = parse("\t\r\n 42 \n");
    CHECK(d && json_root(d)->is_int && json_root(d)->i == 42, "root scalar");
    json_free(d);
    d = parse("\"\"");
    CHECK(d && json_root(d)->type == JSON_STRING && json_root(d)->len == 0, "empty string");
    json_free(d);
    json_free(NULL);
}

static void test_numbers(void) {
    json_doc *d = parse("[0, -0, 9223372036854775807, -9223372036854775808, 9223372036854775808, 1.5e-3, "
                        "1E+2, 0.1, 123456789012345678901234567890, 1e-400, 4.9e-324, 1.7976931348623157e308]");
    CHECK(d != NULL, "parse: %s", err);
    const json_value *a = json_root(d);
    CHECK(json_at(a, 0)->is_int && json_at(a, 0)->i == 0, "0");
    CHECK(json_at(a, 1)->is_int && json_at(a, 1)->i == 0 && signbit(json_at(a, 1)->num), "-0");
    CHECK(json_at(a, 2)->is_int && json_at(a, 2)->i == INT64_MAX, "int64 max");
    CHECK(json_at(a, 3)->is_int && json_at(a, 3)->i == INT64_MIN, "int64 min");
    CHECK(!json_at(a, 4)->is_int && json_at(a, 4)->num == 9223372036854775808.0, "beyond int64 -> double");
    CHECK(json_at(a, 5)->num == 1.5e-3, "1.5e-3 %.17g", json_at(a, 5)->num);
    CHECK(json_at(a, 6)->num == 100.0, "1E+2");
    CHECK(json_at(a, 7)->num == 0.1, "0.1 correctly rounded");
    CHECK(json_at(a, 8)->num == 123456789012345678901234567890.0, "30 digits");
    CHECK(json_at(a, 9)->num == 0.0, "underflow to 0");
    CHECK(json_at(a, 10)->num == 4.9e-324, "smallest subnormal");
    CHECK(json_at(a, 11)->num == 1.7976931348623157e308, "largest double");
    json_free(d);

    CHECK(fails("1e400", "out of range"), "overflow");
    CHECK(fails("-1e99999999999999999999", "out of range"), "huge exponent");
    CHECK(fails("01", "leading zero"), "leading zero");
    CHECK(fails("-", "digit"), "lone minus");
    CHECK(fails("1.", "decimal point"), "no frac digits");
    CHECK(fails(".5", NULL), "no int part");
    CHECK(fails("1e", "exponent"), "no exp digits");
    CHECK(fails("+1", NULL), "plus sign");
    CHECK(fails("NaN", NULL), "NaN");
    CHECK(fails("Infinity", NULL), "Infinity");
    CHECK(fails("0x10", "end of input"), "hex");

    /* a million digits: bounded work, correctly rounded */
    size_t n = 1000000;
    char *big = malloc(n + 16);
    big[0] = '1';
    memset(big + 1, '0', n - 1);
    strcpy(big + n, ".5e-999990");
    d = parse(big);
    CHECK(d && fabs(json_root(d)->num - 1e9) < 1e-6, "1e999999 x 1e-999990: %s %g", err, d ? json_root(d)->num : 0.0);
    json_free(d);
    memcpy(big, "0.", 2);
    memset(big + 2, '0', n - 2);
    strcpy(big + n - 3, "17");
    d = parse(big);
    CHECK(d && json_root(d)->num == 0.0, "tiny with a million zeros: %s", err);
    json_free(d);
    free(big);
    /* 1 + 2^-53 is exactly halfway between 1 and 1 + 2^-52 and rounds to even (1); a nonzero digit 900
     * places later must round up, so the digits beyond those kept still count */
    const char *half = "1.00000000000000011102230246251565404236316680908203125";
    char tail[1100];
    snprintf(tail, sizeof tail, "%s%0900d1", half, 0);
    d = parse(half);
    CHECK(d && json_root(d)->num == 1.0, "halfway rounds to even");
    json_free(d);
    d = parse(tail);
    CHECK(d && json_root(d)->num == 1.0 + 0x1p-52, "halfway plus a far digit rounds up");
    json_free(d);
}

static void test_strings(void) {
    json_doc *d = parse("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", \"\\ud83d\\ude00\", \"\\u0000x\", "
                        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"]");
    CHECK(d != NULL, "parse: %s", err);
    const json_value *a = json_root(d);
    CHECK(json_at(a, 0)->len == 12 && !memcmp(json_at(a, 0)->s, "a\"b\\c/d\b\f\n\r\t", 12), "simple escapes");
    CHECK(!strcmp(json_at(a, 1)->s, "\xc3\xa9\xe2\x82\xac"), "\\u BMP");
    CHECK(!strcmp(json_at(a, 2)->s, "\xf0\x9f\x98\x80"), "surrogate pair -> 4 bytes");
    CHECK(json_at(a, 3)->len == 2 && json_at(a, 3)->s[0] == 0 && json_at(a, 3)->s[1] == 'x', "\\u0000");
    CHECK(!strcmp(json_at(a, 4)->s, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "raw UTF-8");
    json_free(d);

    CHECK(fails("\"\\q\"", "invalid escape"), "bad escape");
    CHECK(fails("\"\\x41\"", "invalid escape"), "\\x");
    CHECK(fails("\"\\u12\"", "four hex"), "short \\u");
    CHECK(fails("\"\\u12G4\"", "four hex"), "bad hex");
    CHECK(fails("\"\\ud83d\"", "lone high surrogate"), "lone high");
    CHECK(fails("\"\\ud83dx\"", "lone high surrogate"), "high + char");
    CHECK(fails("\"\\ud83d\\u0041\"", "lone high surrogate"), "high + non-low");
    CHECK(fails("\"\\ud83d\\ud83d\"", "lone high surrogate"), "high + high");
    CHECK(fails("\"\\ude00\"", "lone low surrogate"), "lone low");
    CHECK(fails("\"a\nb\"", "control character"), "raw newline");
    CHECK(fails("\"a\tb\"", "control character"), "raw tab");
    CHECK(fails("\"abc", "unterminated"), "unterminated");
    CHECK(fails("\"abc\\", "unterminated"), "unterminated after backslash");
    CHECK(fails("\"\\u00", "four hex"), "truncated \\u");
    CHECK(fails("'a'", NULL), "single quotes");

    /* invalid UTF-8 */
    CHECK(fails("\"\x80\"", "invalid UTF-8"), "continuation byte");
    CHECK(fails("\"\xc0\xaf\"", "invalid UTF-8"), "overlong 2");
    CHECK(fails("\"\xe0\x80\xaf\"", "invalid UTF-8"), "overlong 3");
    CHECK(fails("\"\xf0\x80\x80\xaf\"", "invalid UTF-8"), "overlong 4");
    CHECK(fails("\"\xed\xa0\x80\"", "invalid UTF-8"), "UTF-8 surrogate");
    CHECK(fails("\"\xf4\x90\x80\x80\"", "invalid UTF-8"), "above U+10FFFF");
    CHECK(fails("\"\xf5\x80\x80\x80\"", "invalid UTF-8"), "F5 lead");
    CHECK(fails("\"\xff\"", "invalid UTF-8"), "FF");
    CHECK(fails("\"\xe2\x82\"", "invalid UTF-8"), "truncated sequence before quote");
    CHECK(fails("\"\xe2\x82", "invalid UTF-8"), "truncated sequence at end");
    CHECK(fails("\xef\xbb\xbf{}", NULL), "BOM refused");

    size_t bad = 99;
    CHECK(json_utf8_valid("ab\xc3\xa9", 4, &bad), "valid");
    CHECK(!json_utf8_valid("ab\xc3", 3, &bad) && bad == 2, "truncated at 2: %zu", bad);
}

static void test_structure(void) {
    CHECK(fails("", "end of input"), "empty");
    CHECK(fails("   ", "end of input"), "blank");
    CHECK(fails("[1,]", NULL), "trailing comma");
    CHECK(fails("[1 2]", "','"), "missing comma");
    CHECK(fails("{\"a\" 1}", "':'"), "missing colon");
    CHECK(fails("{a:1}", "string key"), "bare key");
    CHECK(fails("{\"a\":1,}", "string key"), "trailing comma in object");
    CHECK(fails("[1]]", "end of input after"), "trailing bracket");
    CHECK(fails("1 2", "end of input after"), "two values");
    CHECK(fails("[", "end of input"), "open bracket");
    CHECK(fails("{\"a\":", "end of input"), "truncated object");
    CHECK(fails("tru", NULL), "truncated literal");
    CHECK(fails("nul", NULL), "truncated null");
    CHECK(fails("[1,\n  x]", "line 2, column 3"), "line and column: %s", err);
    {
        json_doc *d = NULL;
        const char nul_in[] = "[1,\0 2]";
        CHECK(json_parse(nul_in, sizeof nul_in - 1, NULL, &d, err, sizeof err) != LAYA_OK && !d, "NUL byte");
    }

    /* limits */
    json_limits lim = {.max_bytes = 10, .max_depth = 3};
    json_doc *d = NULL;
    CHECK(json_parse("[1,2,3,4,5,6]", 13, &lim, &d, err, sizeof err) == LAYA_ERR_CAPACITY && !d, "byte limit");
    CHECK(json_parse("[[[1]]]", 7, &lim, &d, err, sizeof err) == LAYA_OK && d, "depth 3 ok: %s", err);
    json_free(d);
    d = NULL;
    CHECK(json_parse("[[[[1]]]]", 9, &lim, &d, err, sizeof err) == LAYA_ERR_CAPACITY && !d, "depth 4 refused");
    CHECK(strstr(err, "nesting") != NULL, "message: %s", err);

    /* 10^5 nesting of arrays and objects: refused by depth, not by the stack */
    size_t n = 100000;
    char *deep = malloc(2 * n + 1);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = 0;
    CHECK(fails(deep, "nesting deeper"), "deep arrays");
    for (size_t i = 0; i < n; i++) deep[i] = i % 2 ? '[' : '{';
    deep[n] = 0;
    CHECK(fails(deep, NULL), "deep objects (malformed)");
    char *deep2 = malloc(6 * n + 1);
    for (size_t i = 0; i < n; i++) memcpy(deep2 + 5 * i, "{\"a\":", 5);
    deep2[5 * n] = '1';
    memset(deep2 + 5 * n + 1, '}', n - 1);
    deep2[6 * n] = 0;
    CHECK(fails(deep2, "nesting deeper"), "deep well-formed objects");
    lim = (json_limits){.max_depth = 1000000};
    d = NULL;
    CHECK(json_parse(deep, strlen(deep), &lim, &d, err, sizeof err) != LAYA_OK && !d, "cap beats a huge max_depth");
    free(deep);
    free(deep2);

    /* exactly at the default depth */
    char buf[2 * JSON_DEFAULT_MAX_DEPTH + 1];
    memset(buf, '[', JSON_DEFAULT_MAX_DEPTH);
    memset(buf + JSON_DEFAULT_MAX_DEPTH, ']', JSON_DEFAULT_MAX_DEPTH);
    buf[2 * JSON_DEFAULT_MAX_DEPTH] = 0;
    d = parse(buf);
    CHECK(d != NULL, "default depth accepted: %s", err);
    json_free(d);
}

/* Every prefix of a valid document must fail cleanly (ASan catches over-reads: the copy is exact-size). */
static void test_truncation(void) {
    const char *doc = "{\"k\\u00e9y\": [1.5e3, -0, \"\\ud83d\\ude00\xc3\xa9\", true, false, null, {\"x\": []}]}";
    size_t n = strlen(doc);
    int bad = 0;
    for (size_t len = 0; len < n; len++) {
        char *p = malloc(len ? len : 1);
        memcpy(p, doc, len);
        json_doc *d = NULL;
        laya_status st = json_parse(p, len, NULL, &d, err, sizeof err);
        if (st == LAYA_OK || d) bad++;
        json_free(d);
        free(p);
    }
    CHECK(bad == 0, "%d prefixes accepted", bad);
    char *p = malloc(n);
    memcpy(p, doc, n);
    json_doc *d = NULL;
    CHECK(json_parse(p, n, NULL, &d, err, sizeof err) == LAYA_OK, "full doc: %s", err);
    json_free(d);
    free(p);
}

/* Random bytes and random mutations of a valid document: must never crash; results are ignored. */
static void test_random(void) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    const char *doc = "{\"a\": [1, 2.5e-3, \"x\\u0041\\ud83d\\ude00\", {\"b\": null}], \"c\": true}";
    size_t n = strlen(doc);
    char buf[128];
    int ok = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(buf, doc, n);
        for (int k = 0; k < 3; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            buf[(s >> 33) % n] = (char)(s >> 17);
        }
        json_doc *d = NULL;
        if (json_parse(buf, n, NULL, &d, err, sizeof err) == LAYA_OK) ok++;
        json_free(d);
    }
    CHECK(ok < 20000, "mutations mostly rejected (%d accepted)", ok);
}

static void test_writer(void) {
    json_buf b;
    json_buf_init(&b);
    json_buf_str(&b, "a\"b\\c\n\x01\x7f", 8);
    CHECK(b.len && !strcmp(b.p, "\"a\\\"b\\\\c\\n\\u0001\x7f\""), "escapes: %s", b.p);
    json_buf_clear(&b);
    json_buf_str(&b, "\xc3\xa9\xff" "a\xe2\x82" "b\xf0\x9f\x98\x80", 11);
    CHECK(!strcmp(b.p, "\"\xc3\xa9\xef\xbf\xbd" "a\xef\xbf\xbd" "b\xf0\x9f\x98\x80\""), "invalid -> U+FFFD: %s", b.p);
    json_buf_clear(&b);
    json_buf_str(&b, "\0z", 2);
    CHECK(!strcmp(b.p, "\"\\u0000z\""), "NUL");
    json_buf_clear(&b);
    json_buf_num(&b, 0.1f);
    json_buf_raw(&b, ",", 1);
    json_buf_num(&b, NAN);
    json_buf_raw(&b, ",", 1);
    json_buf_num(&b, -INFINITY);
    json_buf_raw(&b, ",", 1);
    json_buf_int(&b, INT64_MIN);
    CHECK(!strcmp(b.p, "0.100000001,null,null,-9223372036854775808"), "numbers: %s", b.p);
    CHECK(strtof("0.100000001", NULL) == 0.1f, "float round trip");
    json_buf_clear(&b);
    json_buf_f32(&b, 0.1f);
    json_buf_raw(&b, ",", 1);
    json_buf_f32(&b, 1e-5f);
    json_buf_raw(&b, ",", 1);
    json_buf_f32(&b, INFINITY);
    CHECK(!strcmp(b.p, "0.1,1e-05,null"), "shortest floats: %s", b.p);
    {
        uint64_t s = 99;
        int bad = 0;
        for (int it = 0; it < 100000; it++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t bits = (uint32_t)(s >> 32);
            float f;
            memcpy(&f, &bits, 4);
            if (!isfinite(f)) continue;
            json_buf_clear(&b);
            json_buf_f32(&b, f);
            if (strtof(b.p, NULL) != f) bad++;
        }
        CHECK(bad == 0, "%d floats did not round-trip", bad);
    }
    json_buf_clear(&b);
    for (int i = 0; i < 1000; i++) json_buf_printf(&b, "%d,", i);
    CHECK(b.len == 3890 && json_buf_status(&b) == LAYA_OK, "growth: %zu", b.len);
    json_buf_clear(&b);
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    json_buf_printf(&b, "%s", big);
    CHECK(b.len == 599 && !strcmp(b.p, big), "long printf");

    /* whatever goes in, the output parses and round-trips valid UTF-8 */
    uint64_t s = 12345;
    int mism = 0;
    for (int it = 0; it < 2000; it++) {
        char in[40];
        for (int k = 0; k < 40; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            in[k] = (char)(s >> 40);
        }
        json_buf_clear(&b);
        json_buf_str(&b, in, sizeof in);
        json_doc *d = NULL;
        if (json_parse(b.p, b.len, NULL, &d, err, sizeof err) != LAYA_OK) { mism++; continue; }
        const json_value *v = json_root(d);
        if (json_utf8_valid(in, sizeof in, NULL) && (v->len != sizeof in || memcmp(v->s, in, sizeof in))) mism++;
        json_free(d);
    }
    CHECK(mism == 0, "%d writer outputs did not round-trip", mism);
    json_buf_free(&b);
}

/* Out-of-memory at every allocation: a clean error, never a crash or a leak. */
static int fail_after;
static void *failing_malloc(size_t n, void *ud) {
    (void)ud;
    if (fail_after-- <= 0) return NULL;
    return malloc(n);
}
static void plain_free(void *p, void *ud) { (void)ud; free(p); }

static void test_oom(void) {
    char doc[4096];
    size_t n = 0;
    n += (size_t)snprintf(doc + n, sizeof doc - n, "[");
    for (int i = 0; i < 200; i++) n += (size_t)snprintf(doc + n, sizeof doc - n, "%s{\"k\":%d}", i ? "," : "", i);
    snprintf(doc + n, sizeof doc - n, "]");
    laya_alloc_hooks h = {failing_malloc, plain_free, NULL};
    int ok_at = -1;
    for (int k = 0; k < 50 && ok_at < 0; k++) {
        fail_after = k;
        laya_set_alloc_hooks(&h);
        json_doc *d = NULL;
        laya_status st = json_parse(doc, strlen(doc), NULL, &d, err, sizeof err);
        laya_set_alloc_hooks(NULL);
        if (st == LAYA_OK) {
            ok_at = k;
            CHECK(json_root(d)->n == 200, "content after OOM retries");
        } else {
            CHECK(st == LAYA_ERR_NOMEM && !d, "OOM at %d: status %d", k, st);
        }
        json_free(d);
    }
    CHECK(ok_at > 0, "eventually succeeds (%d)", ok_at);
}

int main(void) {
    test_values();
    test_numbers();
    test_strings();
    test_structure();
    test_truncation();
    test_random();
    test_writer();
    test_oom();
    return DONE("test_json");
}
