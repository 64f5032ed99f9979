/* json.h — a small strict JSON (RFC 8259) parser into a read-only tree, and a buffer for writing JSON.
 * Built for hostile input: a byte limit and a depth limit, strict UTF-8, \u escapes with surrogate pairs
 * decoded to UTF-8, lone surrogates refused, and an error message with line and column for every failure.
 * Not here: streaming, comments, trailing commas, NaN/Infinity, duplicate-key detection. */
#ifndef LAYA_JSON_H
#define LAYA_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

typedef enum json_type {
    JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT
} json_type;

/* One node of a parsed document. Nodes are stored in document order in one array, so the children of a
 * container follow it directly and a subtree is contiguous: the next sibling of c is c + c->span. */
typedef struct json_value {
    uint8_t type;         /* json_type */
    uint8_t b;            /* JSON_BOOL: 0 or 1 */
    uint8_t is_int;       /* JSON_NUMBER written without fraction or exponent and within int64 */
    uint32_t n;           /* JSON_ARRAY / JSON_OBJECT: number of children */
    uint32_t span;        /* nodes in this subtree, this one included */
    int64_t i;            /* JSON_NUMBER with is_int: the exact value */
    double num;           /* JSON_NUMBER: the value (nearest double) */
    const char *s;        /* JSON_STRING: valid UTF-8, NUL-terminated; may hold NUL bytes (from \u0000) */
    size_t len;           /* JSON_STRING: bytes in s, the terminator not counted */
    const char *key;      /* member of an object: its key (same form as s); otherwise NULL */
    size_t key_len;
} json_value;

typedef struct json_doc json_doc;

typedef struct json_limits {
    size_t max_bytes; /* input larger than this is refused; 0 = JSON_DEFAULT_MAX_BYTES */
    int max_depth;    /* arrays/objects nested deeper are refused; 0 = default; capped at JSON_DEPTH_CAP */
} json_limits;

#define JSON_DEFAULT_MAX_BYTES ((size_t)256 << 20)
#define JSON_DEFAULT_MAX_DEPTH 256
/* The parser recurses once per nesting level; this bounds its stack use (about 100 bytes a level). */
#define JSON_DEPTH_CAP 4096

/* Parse len bytes (need not be NUL-terminated). The whole input must be one value, with optional
 * surrounding whitespace. On failure *out is NULL and err holds a message such as
 * "line 3, column 7: invalid escape '\q'". lim may be NULL for the defaults. */
laya_status json_parse(const char *text, size_t len, const json_limits *lim, json_doc **out, char *err,
                       size_t errlen);
void json_free(json_doc *d); /* accepts NULL; every pointer into the document dies with it */
const json_value *json_root(const json_doc *d);

/* Navigation. All return NULL when there is nothing (wrong type, out of range, absent key). */
const json_value *json_first(const json_value *v);                        /* first child */
const json_value *json_next(const json_value *parent, const json_value *c); /* sibling after c */
const json_value *json_at(const json_value *arr, size_t i);               /* O(i) */
const json_value *json_get(const json_value *obj, const char *key);       /* O(n), first match */
const char *json_type_name(json_type t);

/* Strict UTF-8 check (no overlongs, no surrogates, nothing above U+10FFFF). Returns 1 if valid; else 0
 * and, if bad_at is not NULL, the offset of the first invalid byte. */
int json_utf8_valid(const char *s, size_t n, size_t *bad_at);

/* A growing output buffer. Errors are sticky: after a failed allocation every call is a no-op and
 * json_buf_status says LAYA_ERR_NOMEM, so a writer can check once at the end. */
typedef struct json_buf {
    char *p;     /* NUL-terminated when len > 0 */
    size_t len, cap;
    int oom;
} json_buf;

void json_buf_init(json_buf *b);
void json_buf_free(json_buf *b);
void json_buf_clear(json_buf *b); /* len = 0, keeps the memory */
laya_status json_buf_status(const json_buf *b);
void json_buf_raw(json_buf *b, const char *s, size_t n);
void json_buf_cstr(json_buf *b, const char *s); /* raw, NUL-terminated */
void json_buf_printf(json_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A quoted JSON string: '"', '\\' and control characters escaped; bytes that are not valid UTF-8 are
 * written as U+FFFD, one per maximal invalid subpart, so the output is always valid JSON. */
void json_buf_str(json_buf *b, const char *s, size_t n);
void json_buf_int(json_buf *b, int64_t x);
/* %.9g (every float reads back exactly; doubles lose digits beyond 9). NaN and infinities, which JSON
 * cannot hold, are written as null. */
void json_buf_num(json_buf *b, double x);
/* The shortest %g form (6 to 9 digits) that reads back as the same float; non-finite as null. */
void json_buf_f32(json_buf *b, float x);

#endif
