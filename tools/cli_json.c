/* cli_json.c — the command line's JSON output buffer and its reader of one JSON string (cli_json.h).
 * Written for the tools alone, on the public API's side of the line: nothing here is the library's.
 * Not here: a general parser (the tools read nothing but strings). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_json.h"

/* Length of the UTF-8 sequence at s (n bytes left) and whether it is valid (*ok). An invalid one's
 * length is its maximal subpart: the bytes that could still have begun a valid sequence, at least 1. */
static size_t utf8_len(const uint8_t *s, size_t n, int *ok) {
    uint8_t c = s[0], lo = 0x80, hi = 0xbf;
    size_t need;
    *ok = 0;
    if (c < 0x80) {
        *ok = 1;
        return 1;
    }
    if (c < 0xc2 || c > 0xf4) return 1; /* a continuation byte, an overlong lead, or beyond U+10FFFF */
    if (c < 0xe0) {
        need = 1;
    } else if (c < 0xf0) {
        need = 2;
        if (c == 0xe0) lo = 0xa0; /* overlong */
        if (c == 0xed) hi = 0x9f; /* UTF-16 surrogates */
    } else {
        need = 3;
        if (c == 0xf0) lo = 0x90; /* overlong */
        if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
    }
    for (size_t k = 1; k <= need; k++) {
        if (k >= n) return k;
        uint8_t b = s[k];
        if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) return k;
    }
    *ok = 1;
    return need + 1;
}

/* ---- writer --------------------------------------------------------------------------------------- */

void cj_init(cj_buf *b) { memset(b, 0, sizeof *b); }

void cj_free(cj_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

void cj_clear(cj_buf *b) {
    b->len = 0;
    if (b->p) b->p[0] = 0;
}

/* Room for extra more bytes and the terminator. */
static int reserve(cj_buf *b, size_t extra) {
    if (b->oom) return 0;
    if (extra > SIZE_MAX / 2 - b->len - 1) {
        b->oom = 1;
        return 0;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
        b->oom = 1;
        return 0;
    }
    b->p = np;
    b->cap = cap;
    return 1;
}

void cj_raw(cj_buf *b, const char *s, size_t n) {
    if (!reserve(b, n)) return;
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void cj_cstr(cj_buf *b, const char *s) { cj_raw(b, s, strlen(s)); }

void cj_printf(cj_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void cj_str(cj_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const uint8_t *u = (const uint8_t *)s;
    /* at most 6 output bytes an input byte (\u00XX): one reservation keeps the loop free of checks */
    if (n > SIZE_MAX / 8) b->oom = 1;
    if (b->oom || !reserve(b, n * 6 + 2)) return;
    char *d = b->p + b->len;
    *d++ = '"';
    for (size_t i = 0; i < n;) {
        uint8_t c = u[i];
        if (c >= 0x80) {
            int ok;
            size_t k = utf8_len(u + i, n - i, &ok);
            memcpy(d, ok ? (const char *)u + i : "\xef\xbf\xbd", ok ? k : 3);
            d += ok ? k : 3;
            i += k;
            continue;
        }
        i++;
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r"
                        : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
        if (esc) {
            *d++ = esc[0];
            *d++ = esc[1];
        } else if (c < 0x20) {
            memcpy(d, "\\u00", 4);
            d[4] = hex[c >> 4];
            d[5] = hex[c & 15];
            d += 6;
        } else {
            *d++ = (char)c;
        }
    }
    *d++ = '"';
    b->len = (size_t)(d - b->p);
    b->p[b->len] = 0;
}

/* printf follows LC_NUMERIC; JSON wants '.' whatever the locale */
static int fmt_number(char *tmp, size_t cap, int prec, double x) {
    int n = snprintf(tmp, cap, "%.*g", prec, x);
    for (int k = 0; k < n; k++)
        if (tmp[k] == ',') tmp[k] = '.';
    return n;
}

void cj_num(cj_buf *b, double x) {
    if (x != x || x > 1.79769313486231570815e308 || x < -1.79769313486231570815e308) {
        cj_raw(b, "null", 4);
        return;
    }
    char tmp[40];
    cj_raw(b, tmp, (size_t)fmt_number(tmp, sizeof tmp, 9, x));
}

void cj_f32(cj_buf *b, float x) {
    if (x != x || x > 3.40282347e38f || x < -3.40282347e38f) {
        cj_raw(b, "null", 4);
        return;
    }
    char tmp[40];
    int n = 0;
    for (int prec = 6; prec <= 9; prec++) { /* 9 digits always read back exactly */
        n = fmt_number(tmp, sizeof tmp, prec, (double)x);
        if (strtof(tmp, NULL) == x) break;
    }
    cj_raw(b, tmp, (size_t)n);
}

/* ---- reader of one string ------------------------------------------------------------------------- */

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static int hex4(const char *s, size_t left, uint32_t *v) {
    if (left < 4) return 0;
    *v = 0;
    for (int k = 0; k < 4; k++) {
        char c = s[k];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return 0;
        *v = *v << 4 | (uint32_t)d;
    }
    return 1;
}

static size_t put_utf8(uint32_t cp, char *o) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* The escape at s[0] == '\\' (left bytes): its code point into o, *used the input bytes it took.
 * Returns NULL or why it is invalid. */
static const char *unescape(const char *s, size_t left, char *o, size_t *used, size_t *wrote) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (left < 2) return "unfinished escape";
    const char *e = s[1] ? strchr(from, s[1]) : NULL;
    if (e) {
        *o = to[e - from];
        *used = 2, *wrote = 1;
        return NULL;
    }
    uint32_t cp, lo;
    if (s[1] != 'u') return "invalid escape";
    if (!hex4(s + 2, left - 2, &cp)) return "\\u needs four hex digits";
    *used = 6;
    if (cp >= 0xdc00 && cp <= 0xdfff) return "lone low surrogate";
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (left < 12 || s[6] != '\\' || s[7] != 'u' || !hex4(s + 8, left - 8, &lo) || lo < 0xdc00 || lo > 0xdfff)
            return "high surrogate without its low surrogate";
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        *used = 12;
    }
    *wrote = put_utf8(cp, o);
    return NULL;
}

static const char *kind_of(char c) {
    if (c == '{') return "an object";
    if (c == '[') return "an array";
    if (c == '-' || (c >= '0' && c <= '9')) return "a number";
    if (c == 't' || c == 'f') return "a boolean";
    if (c == 'n') return "null";
    return NULL;
}

int cj_read_string(const char *text, size_t len, char **out, size_t *out_len, char *err, size_t errlen) {
    size_t i = 0;
    *out = NULL;
    while (i < len && is_blank(text[i])) i++;
    if (i == len || text[i] != '"') {
        const char *k = i == len ? "nothing" : kind_of(text[i]);
        if (k) snprintf(err, errlen, "expected a JSON string, got %s", k);
        else snprintf(err, errlen, "column %zu: expected a JSON string, found '%c'", i + 1, text[i]);
        return 0;
    }
    char *o = malloc(len + 1); /* decoding never lengthens: an escape is longer than what it stands for */
    if (!o) {
        snprintf(err, errlen, "out of memory");
        return 0;
    }
    size_t n = 0, open = i;
    const char *why = NULL;
    for (i++; !why;) {
        if (i >= len) {
            why = "unterminated string";
            break;
        }
        unsigned char c = (unsigned char)text[i];
        if (c == '"') break;
        size_t used = 1, wrote = 1;
        if (c == '\\') {
            why = unescape(text + i, len - i, o + n, &used, &wrote);
        } else if (c < 0x20) {
            why = "control character in a string (write it as an escape)";
        } else if (c >= 0x80) {
            int ok;
            used = wrote = utf8_len((const uint8_t *)text + i, len - i, &ok);
            if (!ok) why = "invalid UTF-8";
            else memcpy(o + n, text + i, used);
        } else {
            o[n] = (char)c;
        }
        if (!why) i += used, n += wrote;
    }
    if (!why) {
        for (i++; i < len && is_blank(text[i]); i++) {}
        if (i < len) why = "text after the string";
    }
    if (why) {
        if (!strcmp(why, "invalid escape") && i + 1 < len && (unsigned char)text[i + 1] >= 0x20)
            snprintf(err, errlen, "column %zu: invalid escape '\\%c'", i + 1, text[i + 1]);
        else if (!strcmp(why, "unterminated string"))
            snprintf(err, errlen, "column %zu: string not closed before the end of the line", open + 1);
        else
            snprintf(err, errlen, "column %zu: %s", i + 1, why);
        free(o);
        return 0;
    }
    o[n] = 0;
    *out = o;
    *out_len = n;
    return 1;
}
