/* json.c — strict JSON parser (one recursive descent over the bytes, bounded by a depth limit) into a flat
 * node array, and the json_buf writer. Every input byte is checked; nothing is trusted.
 * Not here: a streaming API or any output to files — callers own where the bytes go. */
#include "base/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/common.h"

struct json_doc {
    json_value *nodes;
    size_t n_nodes;
    char *pool; /* every decoded string and key, each NUL-terminated */
};

/* ---------------------------------------------------------------------------------------------------
 * UTF-8 */

/* Length of the sequence at s (n > 0 bytes available). Sets *ok to 1 for a well-formed sequence (the
 * return is its length), else 0 and the return is the length of the maximal invalid subpart (Unicode
 * §3.9, "U+FFFD substitution of maximal subparts"), at least 1. */
static size_t utf8_seq(const uint8_t *s, size_t n, int *ok) {
    uint8_t c = s[0];
    int need;
    uint8_t lo = 0x80, hi = 0xbf;
    *ok = 0;
    if (c < 0x80) { *ok = 1; return 1; }
    if (c < 0xc2) return 1;                       /* continuation byte or overlong 2-byte lead */
    if (c < 0xe0) need = 1;
    else if (c < 0xf0) {
        need = 2;
        if (c == 0xe0) lo = 0xa0;                 /* overlong */
        if (c == 0xed) hi = 0x9f;                 /* UTF-16 surrogates */
    } else if (c < 0xf5) {
        need = 3;
        if (c == 0xf0) lo = 0x90;                 /* overlong */
        if (c == 0xf4) hi = 0x8f;                 /* above U+10FFFF */
    } else return 1;
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= n) return (size_t)k;
        uint8_t b = s[k];
        uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xbf;
        if (b < l || b > h) return (size_t)k;
    }
    *ok = 1;
    return (size_t)need + 1;
}

int json_utf8_valid(const char *s, size_t n, size_t *bad_at) {
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0;
    while (i < n) {
        if (u[i] < 0x80) { i++; continue; }
        int ok;
        size_t k = utf8_seq(u + i, n - i, &ok);
        if (!ok) {
            if (bad_at) *bad_at = i;
            return 0;
        }
        i += k;
    }
    return 1;
}

static size_t utf8_put(uint32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* ---------------------------------------------------------------------------------------------------
 * Parser */

typedef struct jp {
    const uint8_t *s, *p, *end;
    int depth, max_depth;
    json_value *nodes;
    size_t n, cap;
    char *pool;       /* sized len + 1: a decoded string never outgrows its quoted source (see parse_string) */
    size_t pool_used;
    char *err;
    size_t errlen;
} jp;

static laya_status jp_fail(jp *j, const uint8_t *at, laya_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static laya_status jp_fail(jp *j, const uint8_t *at, laya_status st, const char *fmt, ...) {
    size_t line = 1, col = 1;
    for (const uint8_t *q = j->s; q < at; q++) {
        if (*q == '\n') { line++; col = 1; }
        else col++;
    }
    char msg[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return laya_err(j->err, j->errlen, st, "line %zu, column %zu: %s", line, col, msg);
}

/* Describe the byte at p for a message: 'x', byte 0xNN, or end of input. */
static const char *what_at(const jp *j, const uint8_t *p, char buf[16]) {
    if (p >= j->end) return "end of input";
    if (*p >= 0x21 && *p < 0x7f) snprintf(buf, 16, "'%c'", *p);
    else snprintf(buf, 16, "byte 0x%02x", *p);
    return buf;
}

static laya_status unexpected(jp *j, const char *expected) {
    char b[16];
    if (j->p >= j->end)
        return jp_fail(j, j->p, LAYA_ERR_FORMAT, "unexpected end of input, expected %s", expected);
    return jp_fail(j, j->p, LAYA_ERR_FORMAT, "unexpected %s, expected %s", what_at(j, j->p, b), expected);
}

static void skip_ws(jp *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static laya_status new_node(jp *j, uint8_t type, const char *key, size_t key_len, size_t *idx) {
    if (j->n >= UINT32_MAX - 1)
        return jp_fail(j, j->p, LAYA_ERR_CAPACITY, "more than %u values", (unsigned)(UINT32_MAX - 1));
    if (j->n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 64;
        json_value *nn = laya_calloc(cap, sizeof *nn);
        if (!nn) return jp_fail(j, j->p, LAYA_ERR_NOMEM, "out of memory (%zu values)", cap);
        if (j->n) memcpy(nn, j->nodes, j->n * sizeof *nn);
        laya_free(j->nodes);
        j->nodes = nn;
        j->cap = cap;
    }
    json_value *v = &j->nodes[j->n];
    memset(v, 0, sizeof *v);
    v->type = type;
    v->span = 1;
    v->key = key;
    v->key_len = key_len;
    *idx = j->n++;
    return LAYA_OK;
}

static int hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p (bounds checked); -1 if not. */
static int32_t hex4(const jp *j, const uint8_t *p) {
    if (j->end - p < 4) return -1;
    int32_t v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* j->p at the opening quote. The decoded bytes go to the pool: an escape never decodes to more bytes
 * than it occupies (\uXXXX: 6 -> at most 3, a surrogate pair: 12 -> 4), raw bytes copy one for one, and
 * the two quotes leave room for the terminator, so pool_used never passes the input length + 1. */
static laya_status parse_string(jp *j, const char **out, size_t *out_len) {
    const uint8_t *open = j->p;
    j->p++;
    char *dst = j->pool + j->pool_used, *d = dst;
    for (;;) {
        if (j->p >= j->end) return jp_fail(j, open, LAYA_ERR_FORMAT, "unterminated string");
        uint8_t c = *j->p;
        if (c == '"') { j->p++; break; }
        if (c == '\\') {
            const uint8_t *esc = j->p;
            if (j->end - j->p < 2) return jp_fail(j, open, LAYA_ERR_FORMAT, "unterminated string");
            uint8_t e = j->p[1];
            j->p += 2;
            switch (e) {
            case '"': *d++ = '"'; break;
            case '\\': *d++ = '\\'; break;
            case '/': *d++ = '/'; break;
            case 'b': *d++ = '\b'; break;
            case 'f': *d++ = '\f'; break;
            case 'n': *d++ = '\n'; break;
            case 'r': *d++ = '\r'; break;
            case 't': *d++ = '\t'; break;
            case 'u': {
                int32_t u = hex4(j, j->p);
                if (u < 0) return jp_fail(j, esc, LAYA_ERR_FORMAT, "\\u must be followed by four hex digits");
                j->p += 4;
                uint32_t cp = (uint32_t)u;
                if (u >= 0xdc00 && u <= 0xdfff)
                    return jp_fail(j, esc, LAYA_ERR_FORMAT,
                                   "lone low surrogate \\u%04X (not preceded by a high surrogate)", (unsigned)u);
                if (u >= 0xd800 && u <= 0xdbff) {
                    int32_t lo = -1;
                    if (j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u') lo = hex4(j, j->p + 2);
                    if (lo < 0xdc00 || lo > 0xdfff)
                        return jp_fail(j, esc, LAYA_ERR_FORMAT,
                                       "lone high surrogate \\u%04X (not followed by a low surrogate \\uDC00-\\uDFFF)",
                                       (unsigned)u);
                    j->p += 6;
                    cp = 0x10000 + (((uint32_t)u - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
                }
                d += utf8_put(cp, d);
                break;
            }
            default: {
                char b[16];
                return jp_fail(j, esc, LAYA_ERR_FORMAT, "invalid escape: backslash followed by %s",
                               what_at(j, esc + 1, b));
            }
            }
            continue;
        }
        if (c < 0x20)
            return jp_fail(j, j->p, LAYA_ERR_FORMAT,
                           "control character U+%04X in a string (it must be escaped)", (unsigned)c);
        if (c < 0x80) {
            *d++ = (char)c;
            j->p++;
            continue;
        }
        int ok;
        size_t k = utf8_seq(j->p, (size_t)(j->end - j->p), &ok);
        if (!ok) return jp_fail(j, j->p, LAYA_ERR_FORMAT, "invalid UTF-8 (byte 0x%02x) in a string", *j->p);
        memcpy(d, j->p, k);
        d += k;
        j->p += k;
    }
    *d++ = 0;
    *out = dst;
    *out_len = (size_t)(d - dst) - 1;
    j->pool_used += (size_t)(d - dst);
    return LAYA_OK;
}

/* Significant digits kept when converting; more than the 767 that can decide a double's rounding, and
 * the dropped ones are folded into one sticky digit, so the result is still correctly rounded while
 * strtod never sees more than a bounded string (a megabyte of digits would otherwise be slow). */
#define NUM_KEEP 800

static laya_status parse_number(jp *j, json_value *v) {
    const uint8_t *start = j->p, *p = j->p, *end = j->end;
    int neg = 0;
    if (p < end && *p == '-') { neg = 1; p++; }
    if (p >= end || *p < '0' || *p > '9') {
        j->p = p;
        return unexpected(j, "a digit");
    }
    const uint8_t *int_start = p;
    if (*p == '0') {
        p++;
        if (p < end && *p >= '0' && *p <= '9')
            return jp_fail(j, start, LAYA_ERR_FORMAT, "number with a leading zero");
    } else {
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    const uint8_t *int_end = p, *frac_start = NULL, *frac_end = NULL;
    if (p < end && *p == '.') {
        p++;
        frac_start = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        frac_end = p;
        if (frac_end == frac_start) {
            j->p = p;
            return unexpected(j, "a digit after the decimal point");
        }
    }
    int64_t exp10 = 0;
    int has_exp = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        has_exp = 1;
        p++;
        int eneg = 0;
        if (p < end && (*p == '+' || *p == '-')) { eneg = *p == '-'; p++; }
        if (p >= end || *p < '0' || *p > '9') {
            j->p = p;
            return unexpected(j, "a digit in the exponent");
        }
        while (p < end && *p >= '0' && *p <= '9') {
            if (exp10 < 1000000000) exp10 = exp10 * 10 + (*p - '0'); /* saturate: beyond is 0 or inf */
            p++;
        }
        if (eneg) exp10 = -exp10;
    }
    j->p = p;
    v->type = JSON_NUMBER;

    if (!frac_start && !has_exp) { /* exact integer when it fits */
        int64_t acc = 0;
        int over = 0;
        for (const uint8_t *q = int_start; q < int_end && !over; q++) {
            int dgt = *q - '0';
            over = __builtin_mul_overflow(acc, (int64_t)10, &acc) ||
                   __builtin_add_overflow(acc, neg ? -dgt : dgt, &acc);
        }
        if (!over) { v->is_int = 1; v->i = acc; }
    }

    /* value = digits × 10^e10 (digits without leading zeros, at most NUM_KEEP + 1 of them) */
    char buf[NUM_KEEP + 40];
    size_t nd = 0;
    int sticky = 0;
    int64_t e10 = 0;
    buf[nd++] = neg ? '-' : '+';
    size_t first = nd;
    for (const uint8_t *q = int_start; q < int_end; q++) {
        if (nd == first && *q == '0') continue;
        if (nd - first < NUM_KEEP) buf[nd++] = (char)*q;
        else { e10++; sticky |= *q != '0'; }
    }
    for (const uint8_t *q = frac_start; q && q < frac_end; q++) {
        if (nd == first && *q == '0') { e10--; continue; }
        if (nd - first < NUM_KEEP) { buf[nd++] = (char)*q; e10--; }
        else sticky |= *q != '0';
    }
    if (nd == first) {
        v->num = neg ? -0.0 : 0.0;
        return LAYA_OK;
    }
    if (sticky) { buf[nd++] = '1'; e10--; }
    e10 += exp10;
    if (e10 > 100000) e10 = 100000;
    if (e10 < -100000) e10 = -100000;
    snprintf(buf + nd, sizeof buf - nd, "e%d", (int)e10);
    errno = 0;
    char *ep;
    double x = strtod(buf, &ep); /* no decimal point in buf, so the locale cannot matter */
    if (*ep != 0) return jp_fail(j, start, LAYA_ERR_FORMAT, "number could not be converted");
    if (errno == ERANGE && (x > 1.0 || x < -1.0))
        return jp_fail(j, start, LAYA_ERR_FORMAT, "number out of range (beyond ±1.8e308)");
    v->num = x;
    if (!v->is_int) v->i = 0;
    return LAYA_OK;
}

static laya_status parse_value(jp *j, const char *key, size_t key_len);

static laya_status parse_container(jp *j, size_t idx, int is_obj) {
    const uint8_t *open = j->p;
    if (++j->depth > j->max_depth)
        return jp_fail(j, open, LAYA_ERR_CAPACITY, "nesting deeper than %d levels", j->max_depth);
    j->p++;
    skip_ws(j);
    uint32_t count = 0;
    laya_status st;
    if (j->p < j->end && *j->p == (is_obj ? '}' : ']')) {
        j->p++;
    } else {
        for (;;) {
            const char *key = NULL;
            size_t key_len = 0;
            if (is_obj) {
                if (j->p >= j->end || *j->p != '"') return unexpected(j, "a string key");
                if ((st = parse_string(j, &key, &key_len))) return st;
                skip_ws(j);
                if (j->p >= j->end || *j->p != ':') return unexpected(j, "':' after an object key");
                j->p++;
            }
            if ((st = parse_value(j, key, key_len))) return st;
            count++;
            skip_ws(j);
            if (j->p < j->end && *j->p == ',') {
                j->p++;
                skip_ws(j);
                continue;
            }
            if (j->p < j->end && *j->p == (is_obj ? '}' : ']')) {
                j->p++;
                break;
            }
            return unexpected(j, is_obj ? "',' or '}'" : "',' or ']'");
        }
    }
    j->nodes[idx].n = count;
    j->nodes[idx].span = (uint32_t)(j->n - idx);
    j->depth--;
    return LAYA_OK;
}

static int match_lit(jp *j, const char *lit, size_t n) {
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0) return 0;
    j->p += n;
    return 1;
}

static laya_status parse_value(jp *j, const char *key, size_t key_len) {
    skip_ws(j);
    if (j->p >= j->end) return unexpected(j, "a value");
    size_t idx;
    laya_status st;
    switch (*j->p) {
    case '{':
    case '[': {
        int is_obj = *j->p == '{';
        if ((st = new_node(j, is_obj ? JSON_OBJECT : JSON_ARRAY, key, key_len, &idx))) return st;
        return parse_container(j, idx, is_obj);
    }
    case '"': {
        if ((st = new_node(j, JSON_STRING, key, key_len, &idx))) return st;
        const char *s;
        size_t n;
        if ((st = parse_string(j, &s, &n))) return st;
        j->nodes[idx].s = s;
        j->nodes[idx].len = n;
        return LAYA_OK;
    }
    case 't':
    case 'f':
    case 'n':
        if ((st = new_node(j, JSON_NULL, key, key_len, &idx))) return st;
        if (match_lit(j, "true", 4)) { j->nodes[idx].type = JSON_BOOL; j->nodes[idx].b = 1; }
        else if (match_lit(j, "false", 5)) j->nodes[idx].type = JSON_BOOL;
        else if (!match_lit(j, "null", 4)) return unexpected(j, "a value (true, false or null?)");
        return LAYA_OK;
    default:
        if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) {
            if ((st = new_node(j, JSON_NUMBER, key, key_len, &idx))) return st;
            return parse_number(j, &j->nodes[idx]);
        }
        return unexpected(j, "a value");
    }
}

laya_status json_parse(const char *text, size_t len, const json_limits *lim, json_doc **out, char *err,
                       size_t errlen) {
    if (out) *out = NULL;
    if (!out || (!text && len))
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "json_parse: NULL argument");
    size_t max_bytes = lim && lim->max_bytes ? lim->max_bytes : JSON_DEFAULT_MAX_BYTES;
    int max_depth = lim && lim->max_depth > 0 ? lim->max_depth : JSON_DEFAULT_MAX_DEPTH;
    if (max_depth > JSON_DEPTH_CAP) max_depth = JSON_DEPTH_CAP;
    if (len > max_bytes)
        return laya_err(err, errlen, LAYA_ERR_CAPACITY, "JSON input of %zu bytes exceeds the limit of %zu",
                        len, max_bytes);
    if (len >= SIZE_MAX / 2) return laya_err(err, errlen, LAYA_ERR_CAPACITY, "JSON input too large");

    jp j = {0};
    j.s = j.p = (const uint8_t *)text;
    j.end = j.s + len;
    j.max_depth = max_depth;
    j.err = err;
    j.errlen = errlen;
    j.pool = laya_malloc(len + 1);
    if (!j.pool) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory (%zu bytes)", len + 1);

    laya_status st = parse_value(&j, NULL, 0);
    if (!st) {
        skip_ws(&j);
        if (j.p < j.end) st = unexpected(&j, "end of input after the value");
    }
    json_doc *d = NULL;
    if (!st && !(d = laya_malloc(sizeof *d))) st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    if (st) {
        laya_free(j.nodes);
        laya_free(j.pool);
        return st;
    }
    d->nodes = j.nodes;
    d->n_nodes = j.n;
    d->pool = j.pool;
    *out = d;
    return LAYA_OK;
}

void json_free(json_doc *d) {
    if (!d) return;
    laya_free(d->nodes);
    laya_free(d->pool);
    laya_free(d);
}

const json_value *json_root(const json_doc *d) { return d && d->n_nodes ? &d->nodes[0] : NULL; }

const json_value *json_first(const json_value *v) {
    if (!v || (v->type != JSON_ARRAY && v->type != JSON_OBJECT) || v->n == 0) return NULL;
    return v + 1;
}

const json_value *json_next(const json_value *parent, const json_value *c) {
    if (!parent || !c) return NULL;
    const json_value *nx = c + c->span;
    return nx < parent + parent->span ? nx : NULL;
}

const json_value *json_at(const json_value *arr, size_t i) {
    if (!arr || arr->type != JSON_ARRAY || i >= arr->n) return NULL;
    const json_value *c = arr + 1;
    while (i--) c += c->span;
    return c;
}

const json_value *json_get(const json_value *obj, const char *key) {
    if (!obj || obj->type != JSON_OBJECT || !key) return NULL;
    size_t n = strlen(key);
    for (const json_value *c = json_first(obj); c; c = json_next(obj, c))
        if (c->key_len == n && memcmp(c->key, key, n) == 0) return c;
    return NULL;
}

const char *json_type_name(json_type t) {
    switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "boolean";
    case JSON_NUMBER: return "number";
    case JSON_STRING: return "string";
    case JSON_ARRAY: return "array";
    case JSON_OBJECT: return "object";
    }
    return "unknown";
}

/* ---------------------------------------------------------------------------------------------------
 * Writer */

void json_buf_init(json_buf *b) { memset(b, 0, sizeof *b); }

void json_buf_free(json_buf *b) {
    if (!b) return;
    laya_free(b->p);
    memset(b, 0, sizeof *b);
}

void json_buf_clear(json_buf *b) {
    b->len = 0;
    if (b->p) b->p[0] = 0;
}

laya_status json_buf_status(const json_buf *b) { return b->oom ? LAYA_ERR_NOMEM : LAYA_OK; }

/* Room for extra more bytes plus the terminator. */
static int buf_reserve(json_buf *b, size_t extra) {
    if (b->oom) return 0;
    if (extra > SIZE_MAX / 2 - b->len - 1) { b->oom = 1; return 0; }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *np = laya_malloc(cap);
    if (!np) { b->oom = 1; return 0; }
    if (b->len) memcpy(np, b->p, b->len);
    np[b->len] = 0;
    laya_free(b->p);
    b->p = np;
    b->cap = cap;
    return 1;
}

void json_buf_raw(json_buf *b, const char *s, size_t n) {
    if (!buf_reserve(b, n)) return;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void json_buf_cstr(json_buf *b, const char *s) { json_buf_raw(b, s, strlen(s)); }

void json_buf_printf(json_buf *b, const char *fmt, ...) {
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        json_buf_raw(b, tmp, (size_t)n);
        return;
    }
    if (!buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void json_buf_str(json_buf *b, const char *s, size_t n) {
    const uint8_t *u = (const uint8_t *)s;
    /* Worst case 6 output bytes per input byte (\u00XX); reserving it once keeps the loop simple. */
    if (n > SIZE_MAX / 8 || !buf_reserve(b, n * 6 + 2)) {
        b->oom = 1;
        return;
    }
    char *d = b->p + b->len;
    *d++ = '"';
    size_t i = 0;
    while (i < n) {
        uint8_t c = u[i];
        if (c >= 0x80) {
            int ok;
            size_t k = utf8_seq(u + i, n - i, &ok);
            if (ok) memcpy(d, u + i, k), d += k;
            else memcpy(d, "\xef\xbf\xbd", 3), d += 3;
            i += k;
            continue;
        }
        i++;
        switch (c) {
        case '"': *d++ = '\\'; *d++ = '"'; break;
        case '\\': *d++ = '\\'; *d++ = '\\'; break;
        case '\n': *d++ = '\\'; *d++ = 'n'; break;
        case '\r': *d++ = '\\'; *d++ = 'r'; break;
        case '\t': *d++ = '\\'; *d++ = 't'; break;
        case '\b': *d++ = '\\'; *d++ = 'b'; break;
        case '\f': *d++ = '\\'; *d++ = 'f'; break;
        default:
            if (c < 0x20) {
                static const char hx[] = "0123456789abcdef";
                memcpy(d, "\\u00", 4);
                d[4] = hx[c >> 4];
                d[5] = hx[c & 15];
                d += 6;
            } else {
                *d++ = (char)c;
            }
        }
    }
    *d++ = '"';
    b->len = (size_t)(d - b->p);
    b->p[b->len] = 0;
}

void json_buf_int(json_buf *b, int64_t x) { json_buf_printf(b, "%lld", (long long)x); }

void json_buf_num(json_buf *b, double x) {
    if (x != x || x > 1.79769313486231570815e308 || x < -1.79769313486231570815e308) {
        json_buf_raw(b, "null", 4);
        return;
    }
    /* printf follows LC_NUMERIC: a host program that set a decimal-comma locale must still get JSON */
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, "%.9g", x);
    for (int k = 0; k < n; k++)
        if (tmp[k] == ',') tmp[k] = '.';
    json_buf_raw(b, tmp, (size_t)n);
}

void json_buf_f32(json_buf *b, float x) {
    if (x != x || x > 3.40282347e38f || x < -3.40282347e38f) {
        json_buf_raw(b, "null", 4);
        return;
    }
    char tmp[40];
    int n = 0;
    for (int prec = 6; prec <= 9; prec++) {
        n = snprintf(tmp, sizeof tmp, "%.*g", prec, (double)x);
        for (int k = 0; k < n; k++)
            if (tmp[k] == ',') tmp[k] = '.';
        if (strtof(tmp, NULL) == x) break; /* under a decimal-comma locale this fails: 9 digits, still exact */
    }
    json_buf_raw(b, tmp, (size_t)n);
}
