/* cli_json.h — the command line's own JSON: a growing output buffer that writes escaped strings and
 * numbers, and a strict reader of one JSON string (a line of `laya tokenize --jsonl`).
 * Not a JSON library: no parser for objects or arrays; the library's JSON code is internal to it. */
#ifndef LAYA_CLI_JSON_H
#define LAYA_CLI_JSON_H

#include <stddef.h>

/* An output buffer. Errors are sticky: after a failed allocation every call does nothing and oom stays
 * set, so a writer checks once at the end. */
typedef struct cj_buf {
    char *p; /* NUL-terminated when len > 0 */
    size_t len, cap;
    int oom;
} cj_buf;

void cj_init(cj_buf *b);
void cj_free(cj_buf *b);
void cj_clear(cj_buf *b); /* len = 0, keeps the memory */
void cj_raw(cj_buf *b, const char *s, size_t n);
void cj_cstr(cj_buf *b, const char *s); /* raw, NUL-terminated */
void cj_printf(cj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A quoted JSON string: '"', '\\' and control characters escaped; bytes that are not valid UTF-8 become
 * U+FFFD, one per maximal invalid subpart, so the output is valid JSON whatever the input. */
void cj_str(cj_buf *b, const char *s, size_t n);
/* %.9g; NaN and infinities, which JSON cannot hold, as null. A decimal comma (LC_NUMERIC) becomes '.'. */
void cj_num(cj_buf *b, double x);
/* The shortest %g (6 to 9 digits) that reads back as the same float; non-finite as null. */
void cj_f32(cj_buf *b, float x);

/* Reads text[0..len) as exactly one JSON string, with optional blanks around it: escapes decoded
 * (surrogate pairs to UTF-8), strict UTF-8, control characters and lone surrogates refused. On success
 * returns 1, *out (free() it) holds the bytes, NUL-terminated (they may contain NUL from \u0000), and
 * *out_len their count. On failure returns 0 and err holds "column C: why" or "expected a JSON string,
 * got a number" (and the like). */
int cj_read_string(const char *text, size_t len, char **out, size_t *out_len, char *err, size_t errlen);

#endif
