/* annotate.c — laya_annotate_file: copies a GGUF model file with Laya's typing metadata added or replaced:
 * the known-word list for typo decisions (laya.words, laya.word_counts) and the confidence map
 * (laya.calibration.prob, laya.calibration.hit). Tensors and every other entry are copied verbatim.
 * Not here: reading them back (session.c), fitting the map (laya eval --fit-calibration). */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "gguf.h"
#include "unicode.h"

#define AN_WORD_MAX 48
#define AN_WORDS_MAX 1000000
#define AN_CAL_MAX 64

typedef struct an_words {
    char *buf;      /* the words, back to back */
    size_t n_buf, cap_buf;
    gguf_str *w;
    uint32_t *cnt;
    size_t n, cap;
} an_words;

/* Grow *p from old to new bytes (contents kept); 0 on success. */
static int an_grow(void **p, size_t old, size_t new_bytes) {
    void *n = laya_malloc(new_bytes);
    if (!n) return 1;
    if (old) memcpy(n, *p, old);
    laya_free(*p);
    *p = n;
    return 0;
}

static void an_words_free(an_words *a) {
    laya_free(a->buf);
    laya_free(a->w);
    laya_free(a->cnt);
}

/* Lines "word" or "word<TAB or spaces>count"; blank lines and lines starting with '#' are skipped. A word
 * must be valid UTF-8 of 1..48 bytes without white space; anything else is an error naming the line. */
static laya_status read_words(const char *path, an_words *a, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return laya_err(err, errlen, LAYA_ERR_IO, "cannot open word list '%s'", path);
    char line[256];
    long ln = 0;
    laya_status st = LAYA_OK;
    while (fgets(line, sizeof line, f)) {
        ln++;
        size_t l = strlen(line);
        if (l == sizeof line - 1 && line[l - 1] != '\n') {
            st = laya_err(err, errlen, LAYA_ERR_FORMAT, "%s:%ld: line too long", path, ln);
            break;
        }
        while (l && (line[l - 1] == '\n' || line[l - 1] == '\r')) line[--l] = 0;
        if (l == 0 || line[0] == '#') continue;
        size_t wl = 0;
        while (wl < l && line[wl] != '\t' && line[wl] != ' ') wl++;
        unsigned long c = 1;
        if (wl < l) {
            char *e;
            c = strtoul(line + wl + 1, &e, 10);
            while (*e == ' ' || *e == '\t') e++;
            if (e == line + wl + 1 || *e || c > UINT32_MAX) {
                st = laya_err(err, errlen, LAYA_ERR_FORMAT, "%s:%ld: expected \"word count\"", path, ln);
                break;
            }
        }
        int bad = wl == 0 || wl > AN_WORD_MAX || !uni_utf8_valid(line, wl);
        for (size_t i = 0; i < wl && !bad; i++) bad = (unsigned char)line[i] < 0x20 || line[i] == 0x7f;
        if (bad) {
            st = laya_err(err, errlen, LAYA_ERR_FORMAT, "%s:%ld: not a word (1..%d bytes of UTF-8, no spaces)",
                          path, ln, AN_WORD_MAX);
            break;
        }
        if (a->n == AN_WORDS_MAX) {
            st = laya_err(err, errlen, LAYA_ERR_CAPACITY, "%s: more than %d words", path, AN_WORDS_MAX);
            break;
        }
        if (a->n == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 4096;
            if (an_grow((void **)&a->w, a->cap * sizeof *a->w, cap * sizeof *a->w) ||
                an_grow((void **)&a->cnt, a->cap * sizeof *a->cnt, cap * sizeof *a->cnt)) {
                st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory reading '%s'", path);
                break;
            }
            a->cap = cap;
        }
        if (a->n_buf + wl > a->cap_buf) {
            size_t cap = a->cap_buf ? a->cap_buf * 2 : 1 << 16;
            while (cap < a->n_buf + wl) cap *= 2;
            if (an_grow((void **)&a->buf, a->n_buf, cap)) {
                st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory reading '%s'", path);
                break;
            }
            a->cap_buf = cap;
        }
        memcpy(a->buf + a->n_buf, line, wl);
        a->w[a->n].p = (const char *)(uintptr_t)a->n_buf; /* an offset until the buffer stops moving */
        a->w[a->n].n = wl;
        a->cnt[a->n++] = (uint32_t)c;
        a->n_buf += wl;
    }
    if (!st && ferror(f)) st = laya_err(err, errlen, LAYA_ERR_IO, "reading '%s' failed", path);
    fclose(f);
    if (!st && a->n == 0) st = laya_err(err, errlen, LAYA_ERR_FORMAT, "word list '%s' is empty", path);
    for (size_t i = 0; !st && i < a->n; i++) a->w[i].p = a->buf + (uintptr_t)a->w[i].p;
    return st;
}

/* Lines "prob hit" (laya eval --fit-calibration): 2..64 points, prob increasing, hit not decreasing, both
 * in [0, 1]. */
static laya_status read_calibration(const char *path, float *x, float *y, uint64_t *n, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) return laya_err(err, errlen, LAYA_ERR_IO, "cannot open calibration '%s'", path);
    char line[256];
    long ln = 0;
    *n = 0;
    laya_status st = LAYA_OK;
    while (!st && fgets(line, sizeof line, f)) {
        ln++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || *p == 0) continue;
        char *e1, *e2;
        double a = strtod(p, &e1), b = e1 != p ? strtod(e1, &e2) : 0;
        if (e1 == p || e2 == e1) st = laya_err(err, errlen, LAYA_ERR_FORMAT, "%s:%ld: expected \"prob hit\"", path, ln);
        else if (*n == AN_CAL_MAX) st = laya_err(err, errlen, LAYA_ERR_CAPACITY, "%s: more than %d points", path, AN_CAL_MAX);
        else if (!(a >= 0 && a <= 1 && b >= 0 && b <= 1) || (*n && (a <= x[*n - 1] || b < y[*n - 1])))
            st = laya_err(err, errlen, LAYA_ERR_FORMAT,
                          "%s:%ld: prob must increase and hit not decrease, both in [0, 1]", path, ln);
        else x[*n] = (float)a, y[(*n)++] = (float)b;
    }
    fclose(f);
    if (!st && *n < 2) st = laya_err(err, errlen, LAYA_ERR_FORMAT, "calibration '%s' needs at least 2 points", path);
    return st;
}

static int key_is(const gguf_kv *kv, const char *k) {
    size_t n = strlen(k);
    return kv->key.n == n && !memcmp(kv->key.p, k, n);
}

LAYA_API laya_status laya_annotate_file(const char *in_path, const char *out_path, const char *words_path,
                                        const char *calib_path, char *err, size_t errlen) {
    if (!in_path || !out_path) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "annotate: a path is NULL");
    an_words a = {0};
    float cx[AN_CAL_MAX], cy[AN_CAL_MAX];
    uint64_t cn = 0;
    laya_status st;
    if (words_path && (st = read_words(words_path, &a, err, errlen))) goto out_words;
    if (calib_path && (st = read_calibration(calib_path, cx, cy, &cn, err, errlen))) goto out_words;
    gguf_file *f = NULL;
    char msg[256];
    if ((st = gguf_open(in_path, &f, msg, sizeof msg))) {
        st = laya_err(err, errlen, st, "%s", msg);
        goto out_words;
    }
    gguf_writer *w = gguf_writer_new();
    if (!w) {
        st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        goto out_file;
    }
    for (uint64_t i = 0; i < gguf_n_kv(f) && !st; i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        if (words_path && (key_is(kv, "laya.words") || key_is(kv, "laya.word_counts"))) continue;
        if (calib_path && (key_is(kv, "laya.calibration.prob") || key_is(kv, "laya.calibration.hit"))) continue;
        st = gguf_writer_copy_kv(w, kv);
    }
    if (!st && words_path && !(st = gguf_writer_set_arr_str(w, "laya.words", a.w, a.n)))
        st = gguf_writer_set_arr(w, "laya.word_counts", GGUF_U32, a.cnt, a.n);
    if (!st && calib_path && !(st = gguf_writer_set_arr(w, "laya.calibration.prob", GGUF_F32, cx, cn)))
        st = gguf_writer_set_arr(w, "laya.calibration.hit", GGUF_F32, cy, cn);
    if (st) {
        st = laya_err(err, errlen, st, "writing metadata: %s", laya_status_str(st));
        goto out_writer;
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        char name[512];
        if (t->name.n >= sizeof name) {
            st = laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor name of %llu bytes is too long",
                          (unsigned long long)t->name.n);
            goto out_writer;
        }
        memcpy(name, t->name.p, (size_t)t->name.n);
        name[t->name.n] = 0;
        if ((st = gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data))) {
            st = laya_err(err, errlen, st, "adding tensor '%s': %s", name, laya_status_str(st));
            goto out_writer;
        }
    }
    if ((st = gguf_writer_write(w, out_path, msg, sizeof msg))) st = laya_err(err, errlen, st, "%s", msg);
out_writer:
    gguf_writer_free(w);
out_file:
    gguf_close(f);
out_words:
    an_words_free(&a);
    return st;
}
