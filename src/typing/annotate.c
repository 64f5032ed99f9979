/* annotate.c — laya_annotate_file: copies a GGUF model file with Laya's typing metadata added or replaced:
 * the known-word list for typo decisions (laya.words, laya.word_counts, in byte order) and the confidence
 * map (laya.calibration.prob, laya.calibration.hit). Tensors and every other entry are copied verbatim.
 * Not here: reading them back (resources.c: the words; session.c: the map), fitting the map (laya eval --fit-calibration). */
#include <stdio.h>
#include <stdlib.h>

#include "base/common.h"
#include "io/gguf.h"
#include "typing/typo.h"

#define AN_CAL_MAX 64

/* The word list: typo.c's reader (lines "word" or "word count", '#' comments), except that a line it
 * would skip is an error here; the words are stored in its (byte) order, duplicates summed. */
static laya_status read_words(const char *path, ty_list **out, gguf_str **w, uint32_t **cnt, size_t *n, char *err,
                              size_t errlen) {
    size_t skipped = 0;
    laya_status st = ty_list_create(out);
    if (st) return laya_err(err, errlen, st, "out of memory");
    if ((st = ty_list_load(*out, path, &skipped, err, errlen))) return st;
    if (skipped)
        return laya_err(err, errlen, LAYA_ERR_FORMAT,
                        "%s: %zu line(s) are not \"word count\" (a word: 1..%d bytes of UTF-8, no spaces)", path,
                        skipped, TY_WORD_MAX);
    if ((st = ty_list_finish(*out))) return laya_err(err, errlen, st, "%s: %s", path, laya_status_str(st));
    *n = ty_list_size(*out);
    if (*n == 0) return laya_err(err, errlen, LAYA_ERR_FORMAT, "word list '%s' is empty", path);
    *w = laya_calloc(*n, sizeof **w);
    *cnt = laya_calloc(*n, sizeof **cnt);
    if (!*w || !*cnt) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory reading '%s'", path);
    for (size_t i = 0; i < *n; i++) {
        size_t len;
        (*w)[i].p = ty_list_word(*out, i, &len, &(*cnt)[i]);
        (*w)[i].n = len;
    }
    return LAYA_OK;
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
    ty_list *wl = NULL;
    gguf_str *ws = NULL;
    uint32_t *wc = NULL;
    size_t wn = 0;
    float cx[AN_CAL_MAX], cy[AN_CAL_MAX];
    uint64_t cn = 0;
    laya_status st;
    if (words_path && (st = read_words(words_path, &wl, &ws, &wc, &wn, err, errlen))) goto out_words;
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
    if (!st && words_path && !(st = gguf_writer_set_arr_str(w, "laya.words", ws, wn)))
        st = gguf_writer_set_arr(w, "laya.word_counts", GGUF_U32, wc, wn);
    if (!st && calib_path && !(st = gguf_writer_set_arr(w, "laya.calibration.prob", GGUF_F32, cx, cn)))
        st = gguf_writer_set_arr(w, "laya.calibration.hit", GGUF_F32, cy, cn);
    if (st) {
        st = laya_err(err, errlen, st, "writing metadata: %s", laya_status_str(st));
        goto out_writer;
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        if ((st = gguf_writer_add_tensor_n(w, t->name.p, (size_t)t->name.n, t->type, t->n_dims, t->ne, t->data))) {
            st = laya_err(err, errlen, st, "adding tensor '%.*s': %s", (int)LAYA_MIN(t->name.n, 64), t->name.p,
                          laya_status_str(st));
            goto out_writer;
        }
    }
    if ((st = gguf_writer_write(w, out_path, msg, sizeof msg))) st = laya_err(err, errlen, st, "%s", msg);
out_writer:
    gguf_writer_free(w);
out_file:
    gguf_close(f);
out_words:
    laya_free(ws);
    laya_free(wc);
    ty_list_free(wl);
    return st;
}
