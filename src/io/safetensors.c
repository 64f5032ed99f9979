/* safetensors.c — the safetensors reader: maps each file read-only, parses its JSON header with the strict
 * parser in json.c, validates every entry and copies the names out, so the parsed document is freed before
 * the next shard is read. Sorting is a stable bottom-up merge sort over pointers: O(n log n) whatever the
 * input, so a hostile header cannot make duplicate or overlap detection quadratic.
 * Not here: writing safetensors, dtype conversion, anything about config.json or the tokenizer. */
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/common.h"
#include "base/json.h"

typedef struct st_meta {
    const char *key, *value; /* both in the file's pool */
    uint32_t file;
} st_meta;

/* One mapped file and what was read from it. Tensor names and metadata point into pool. */
typedef struct st_file {
    char *name;    /* as given (path, or shard name from the index); NULL for a buffer */
    void *map;     /* NULL for a buffer or an empty file */
    size_t map_len;
    st_tensor *t;  /* in header order */
    uint64_t n;
    st_meta *m;
    uint64_t n_m;
    char *pool;
} st_file;

struct st_set {
    st_file *files;
    uint32_t n_files;
    const void **by_name; /* const st_tensor *, sorted by name */
    uint64_t n;
    const void **meta;    /* const st_meta *, sorted by key, ties in file order */
    uint64_t n_meta;
    uint64_t mapped;
};

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"
/* The header is root object -> entry object -> shape array. Anything deeper is not safetensors. */
#define HEADER_DEPTH 3
/* The index's "metadata" is free-form (usually {"total_size": N}); allow some nesting there. */
#define INDEX_DEPTH 16
/* Names are cut in messages so that the rest of the message still fits in LAYA_ERR_MSG_MAX. */
#define NAME_SHOWN 80
#define SHOW(s) (int)LAYA_MIN(strlen(s), (size_t)NAME_SHOWN), (s)

static const struct { const char *name; uint8_t size; } dtypes[ST_DTYPE_COUNT] = {
    [ST_BOOL] = {"BOOL", 1}, [ST_U8] = {"U8", 1},     [ST_I8] = {"I8", 1},     [ST_U16] = {"U16", 2},
    [ST_I16] = {"I16", 2},   [ST_F16] = {"F16", 2},   [ST_BF16] = {"BF16", 2}, [ST_U32] = {"U32", 4},
    [ST_I32] = {"I32", 4},   [ST_F32] = {"F32", 4},   [ST_U64] = {"U64", 8},   [ST_I64] = {"I64", 8},
    [ST_F64] = {"F64", 8},   [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_F8_E5M2] = {"F8_E5M2", 1},
};

const char *st_dtype_name(uint32_t dtype) { return dtype < ST_DTYPE_COUNT ? dtypes[dtype].name : "unknown"; }
size_t st_dtype_size(uint32_t dtype) { return dtype < ST_DTYPE_COUNT ? dtypes[dtype].size : 0; }

/* ---------------------------------------------------------------------------------------------------
 * Sorting */

typedef int (*cmp_fn)(const void *a, const void *b);

/* Stable bottom-up merge sort of n pointers, tmp being scratch of the same length. */
static void msort(const void **a, const void **tmp, size_t n, cmp_fn cmp) {
    const void **src = a, **dst = tmp;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = LAYA_MIN(lo + w, n), hi = LAYA_MIN(lo + 2 * w, n), i = lo, j = mid, k = lo;
            while (i < mid && j < hi) dst[k++] = cmp(src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid) dst[k++] = src[i++];
            while (j < hi) dst[k++] = src[j++];
        }
        const void **x = src;
        src = dst;
        dst = x;
    }
    if (src != a) memcpy(a, src, n * sizeof *a);
}

static int cmp_t_name(const void *a, const void *b) {
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

static int cmp_t_data(const void *a, const void *b) {
    const st_tensor *x = a, *y = b;
    const char *p = x->data, *q = y->data;
    if (p != q) return p < q ? -1 : 1;
    return (x->size > y->size) - (x->size < y->size);
}

static int cmp_m_key(const void *a, const void *b) {
    return strcmp(((const st_meta *)a)->key, ((const st_meta *)b)->key);
}

/* Two pointer arrays of n entries (a and its scratch) in one allocation. NULL for n == 0 too. */
static const void **ptr_pair(uint64_t n) {
    uint64_t bytes;
    if (n == 0 || ck_mul(n, 2 * sizeof(void *), &bytes) || bytes > SIZE_MAX) return NULL;
    return laya_malloc((size_t)bytes);
}

/* ---------------------------------------------------------------------------------------------------
 * One file's header */

static uint64_t rd_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* "an array", "a string", ...: for messages. */
static const char *a_type(uint8_t t) {
    static const char *const names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
    return t < sizeof names / sizeof *names ? names[t] : "an unknown value";
}

static int is_key(const json_value *v, const char *k) {
    size_t n = strlen(k);
    return v->key_len == n && !memcmp(v->key, k, n);
}

/* A JSON number that is an integer in [0, INT64_MAX]. Returns NULL, or why not. */
static const char *get_count(const json_value *v, uint64_t *out) {
    if (v->type != JSON_NUMBER) {
        static const char *const why[] = {"is null, not a number", "is a boolean, not a number", "",
                                          "is a string, not a number", "is an array, not a number",
                                          "is an object, not a number"};
        return v->type < sizeof why / sizeof *why ? why[v->type] : "is not a number";
    }
    if (!v->is_int) return "is not an integer within int64";
    if (v->i < 0) return "is negative";
    *out = (uint64_t)v->i;
    return NULL;
}

static char *pool_put(char **pool, const char *s, size_t len) {
    char *d = *pool;
    memcpy(d, s, len);
    d[len] = 0;
    *pool += len + 1;
    return d;
}

/* Validate one tensor entry (the name already checked and copied into t->name). */
static laya_status parse_entry(const json_value *e, const uint8_t *data, uint64_t dsize, st_tensor *t, char *err,
                               size_t errlen) {
    const char *nm = t->name;
    if (e->type != JSON_OBJECT)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': entry is %s, not an object", SHOW(nm),
                        a_type(e->type));
    const json_value *dt = NULL, *sh = NULL, *off = NULL;
    for (const json_value *c = json_first(e); c; c = json_next(e, c)) {
        const json_value **slot = is_key(c, "dtype") ? &dt : is_key(c, "shape") ? &sh
                                  : is_key(c, "data_offsets") ? &off : NULL;
        if (!slot)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': unexpected field '%.*s'", SHOW(nm),
                            (int)LAYA_MIN(c->key_len, (size_t)NAME_SHOWN), c->key);
        if (*slot)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': field '%s' appears twice", SHOW(nm),
                            c->key);
        *slot = c;
    }
    const char *missing = !dt ? "dtype" : !sh ? "shape" : !off ? "data_offsets" : NULL;
    if (missing)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': missing field '%s'", SHOW(nm), missing);

    if (dt->type != JSON_STRING)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': dtype is %s, not a string", SHOW(nm),
                        a_type(dt->type));
    t->dtype = ST_DTYPE_COUNT;
    for (uint32_t k = 0; k < ST_DTYPE_COUNT; k++)
        if (dt->len == strlen(dtypes[k].name) && !memcmp(dt->s, dtypes[k].name, dt->len)) t->dtype = k;
    if (t->dtype == ST_DTYPE_COUNT)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor '%.*s': unknown dtype '%.*s'", SHOW(nm),
                        (int)LAYA_MIN(dt->len, (size_t)32), dt->s);

    if (sh->type != JSON_ARRAY)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': shape is %s, not an array", SHOW(nm),
                        a_type(sh->type));
    if (sh->n > ST_MAX_DIMS)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': shape has %u dimensions, more than %d",
                        SHOW(nm), sh->n, ST_MAX_DIMS);
    t->n_dims = sh->n;
    /* Elements: the product of all entries. The product of the nonzero ones must fit in int64 as well, so
     * that code computing row counts from a prefix of the shape cannot overflow on an empty tensor. */
    uint64_t nonzero = 1, elems = 1;
    uint32_t d = 0;
    for (const json_value *c = json_first(sh); c; c = json_next(sh, c), d++) {
        uint64_t v = 0;
        const char *why = get_count(c, &v);
        if (why)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': shape[%u] %s", SHOW(nm), d, why);
        t->shape[d] = (int64_t)v;
        if (v == 0) elems = 0;
        else if (ck_mul(nonzero, v, &nonzero) || nonzero > (uint64_t)INT64_MAX)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': element count overflows int64",
                            SHOW(nm));
    }
    if (elems) elems = nonzero;
    uint64_t bytes;
    if (ck_mul(elems, dtypes[t->dtype].size, &bytes))
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': byte size of %" PRIu64 " %s elements overflows",
                        SHOW(nm), elems, dtypes[t->dtype].name);

    if (off->type != JSON_ARRAY)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': data_offsets is %s, not an array",
                        SHOW(nm), a_type(off->type));
    if (off->n != 2)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': data_offsets needs 2 entries, not %u",
                        SHOW(nm), off->n);
    uint64_t be[2] = {0, 0};
    d = 0;
    for (const json_value *c = json_first(off); c; c = json_next(off, c), d++) {
        const char *why = get_count(c, &be[d]);
        if (why)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': data_offsets[%u] %s", SHOW(nm), d, why);
    }
    if (be[0] > be[1])
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': data_offsets [%" PRIu64 ", %" PRIu64 ") are reversed",
                        SHOW(nm), be[0], be[1]);
    if (be[1] > dsize)
        return laya_err(err, errlen, LAYA_ERR_FORMAT,
                        "tensor '%.*s': data [%" PRIu64 ", %" PRIu64 ") extends past the end of the data section (%" PRIu64 " bytes)",
                        SHOW(nm), be[0], be[1], dsize);
    if (be[1] - be[0] != bytes)
        return laya_err(err, errlen, LAYA_ERR_FORMAT,
                        "tensor '%.*s': data_offsets [%" PRIu64 ", %" PRIu64 ") hold %" PRIu64 " bytes, but %" PRIu64 " %s elements need %" PRIu64,
                        SHOW(nm), be[0], be[1], be[1] - be[0], elems, dtypes[t->dtype].name, bytes);
    t->data = data + be[0];
    t->size = bytes;
    return LAYA_OK;
}

/* Check the metadata object; with pool set, also copy it into f->m. */
static laya_status parse_meta(const json_value *mv, st_file *f, uint32_t fi, char **pool, char *err, size_t errlen) {
    uint64_t k = 0;
    for (const json_value *c = json_first(mv); c; c = json_next(mv, c), k++) {
        if (strlen(c->key) != c->key_len)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "__metadata__ key %" PRIu64 " contains NUL", k);
        if (c->type != JSON_STRING)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "__metadata__ value for '%.*s' is %s, not a string",
                            SHOW(c->key), a_type(c->type));
        if (strlen(c->s) != c->len)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "__metadata__ value for '%.*s' contains NUL",
                            SHOW(c->key));
        if (!pool) continue;
        st_meta *m = &f->m[f->n_m++];
        m->key = pool_put(pool, c->key, c->key_len);
        m->value = pool_put(pool, c->s, c->len);
        m->file = fi;
    }
    return LAYA_OK;
}

/* Refuse overlapping byte ranges: sort by start, compare each with the furthest end seen so far. */
static laya_status check_overlap(const st_file *f, const uint8_t *data, char *err, size_t errlen) {
    if (f->n < 2) return LAYA_OK;
    const void **p = ptr_pair(f->n);
    if (!p) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory sorting %" PRIu64 " tensors", f->n);
    for (uint64_t i = 0; i < f->n; i++) p[i] = &f->t[i];
    msort(p, p + f->n, (size_t)f->n, cmp_t_data);
    const st_tensor *far = NULL; /* the tensor reaching furthest so far */
    laya_status st = LAYA_OK;
    for (uint64_t i = 0; i < f->n && !st; i++) {
        const st_tensor *t = p[i];
        if (t->size == 0) continue;
        const uint8_t *b = t->data;
        if (far && b < (const uint8_t *)far->data + far->size) {
            uint64_t fb = (uint64_t)((const uint8_t *)far->data - data), tb = (uint64_t)(b - data);
            st = laya_err(err, errlen, LAYA_ERR_FORMAT,
                          "tensors '%.*s' [%" PRIu64 ", %" PRIu64 ") and '%.*s' [%" PRIu64 ", %" PRIu64 ") overlap",
                          SHOW(far->name), fb, fb + far->size, SHOW(t->name), tb, tb + t->size);
        }
        if (!far || b + t->size > (const uint8_t *)far->data + far->size) far = t;
    }
    laya_free(p);
    return st;
}

/* Parse and validate the header of buf into f (tensors, metadata, pool). On failure f may hold partial
 * allocations; the caller frees them with the set. */
static laya_status parse_file(const uint8_t *buf, size_t size, uint32_t fi, st_file *f, char *err, size_t errlen) {
    if (size < 8)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "file of %zu bytes is too small for the 8-byte header length",
                        size);
    uint64_t hn = rd_le64(buf);
    if (hn > ST_MAX_HEADER)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "header length %" PRIu64 " exceeds the limit of %" PRIu64 " bytes",
                        hn, ST_MAX_HEADER);
    if (hn > size - 8)
        return laya_err(err, errlen, LAYA_ERR_FORMAT,
                        "header length %" PRIu64 " runs past the end of the file (%zu bytes follow the length)", hn,
                        size - 8);
    if (hn < 2)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "header length %" PRIu64 " is too short for a JSON object", hn);
    if (buf[8] != '{')
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "header does not start with '{' (first byte 0x%02x)", buf[8]);
    const uint8_t *data = buf + 8 + hn;
    uint64_t dsize = size - 8 - hn;

    char jerr[LAYA_ERR_MSG_MAX];
    json_limits lim = {(size_t)hn, HEADER_DEPTH};
    json_doc *doc = NULL;
    laya_status st = json_parse((const char *)buf + 8, (size_t)hn, &lim, &doc, jerr, sizeof jerr);
    if (st == LAYA_ERR_NOMEM) return laya_err(err, errlen, st, "header: %s", jerr);
    /* With max_bytes = hn the parser's only capacity limit left to hit is the depth. */
    if (st == LAYA_ERR_CAPACITY)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "header nests deeper than the %d levels safetensors uses (%s)",
                        HEADER_DEPTH, jerr);
    if (st) return laya_err(err, errlen, LAYA_ERR_FORMAT, "header is not valid JSON: %s", jerr);
    const json_value *root = json_root(doc);
    if (!root || root->type != JSON_OBJECT) {
        json_free(doc);
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "header is not a JSON object");
    }

    /* Pass 1 validates every entry and sizes everything, so that nothing sized from the file is allocated
     * before the file has been checked, and each array is allocated once, exactly. Pass 2 fills them. The
     * strings fit in the header's bytes, so the pool total cannot overflow; it is checked anyway. */
    const json_value *mv = NULL;
    uint64_t n_t = 0, n_m = 0, pool_bytes = 0;
    char *pool = NULL;
    for (int pass = 1; pass <= 2; pass++) {
        for (const json_value *c = json_first(root); c; c = json_next(root, c)) {
            if (is_key(c, "__metadata__")) {
                if (pass == 2) continue;
                if (mv) {
                    st = laya_err(err, errlen, LAYA_ERR_FORMAT, "key '__metadata__' appears twice");
                    goto out;
                }
                if (c->type != JSON_OBJECT) {
                    st = laya_err(err, errlen, LAYA_ERR_FORMAT, "__metadata__ is %s, not an object", a_type(c->type));
                    goto out;
                }
                if ((st = parse_meta(c, f, fi, NULL, err, errlen))) goto out;
                mv = c;
                n_m = c->n;
                for (const json_value *m = json_first(c); m; m = json_next(c, m))
                    if (ck_add(pool_bytes, m->key_len + 1, &pool_bytes) || ck_add(pool_bytes, m->len + 1, &pool_bytes))
                        goto too_big;
                continue;
            }
            if (c->key_len == 0) {
                st = laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor %" PRIu64 ": name is empty", n_t);
                goto out;
            }
            if (strlen(c->key) != c->key_len) {
                st = laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor %" PRIu64 ": name contains NUL", n_t);
                goto out;
            }
            st_tensor tmp, *t = pass == 1 ? &tmp : &f->t[f->n];
            memset(t, 0, sizeof *t);
            t->name = c->key; /* the document's copy, for messages, until pass 2 copies it into the pool */
            t->file = fi;
            if ((st = parse_entry(c, data, dsize, t, err, errlen))) goto out;
            if (pass == 1) {
                n_t++;
                if (ck_add(pool_bytes, c->key_len + 1, &pool_bytes)) goto too_big;
            } else {
                t->name = pool_put(&pool, c->key, c->key_len);
                f->n++;
            }
        }
        if (pass == 2) break;
        if (pool_bytes > SIZE_MAX) goto too_big;
        if ((n_t && !(f->t = laya_calloc((size_t)n_t, sizeof *f->t))) ||
            (n_m && !(f->m = laya_calloc((size_t)n_m, sizeof *f->m))) ||
            (pool_bytes && !(f->pool = laya_malloc((size_t)pool_bytes)))) {
            st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory for %" PRIu64 " tensors", n_t);
            goto out;
        }
        pool = f->pool;
        if (mv && (st = parse_meta(mv, f, fi, &pool, err, errlen))) goto out;
    }
    st = check_overlap(f, data, err, errlen);
out:
    json_free(doc);
    return st;
too_big:
    json_free(doc);
    return laya_err(err, errlen, LAYA_ERR_FORMAT, "header strings are too large");
}

/* ---------------------------------------------------------------------------------------------------
 * Sets */

void st_close(st_set *s) {
    if (!s) return;
    for (uint32_t i = 0; s->files && i < s->n_files; i++) {
        st_file *f = &s->files[i];
        laya_free(f->name);
        laya_free(f->t);
        laya_free(f->m);
        laya_free(f->pool);
        if (f->map) munmap(f->map, f->map_len);
    }
    laya_free(s->files);
    laya_free(s->by_name);
    laya_free(s->meta);
    laya_free(s);
}

static st_set *set_new(uint32_t n_files) {
    st_set *s = laya_calloc(1, sizeof *s);
    if (!s) return NULL;
    if (!(s->files = laya_calloc(n_files, sizeof *s->files))) {
        laya_free(s);
        return NULL;
    }
    s->n_files = n_files;
    return s;
}

static const char *file_label(const st_set *s, uint32_t i) { return s->files[i].name ? s->files[i].name : "<buffer>"; }

/* Once every file is parsed: the name index (refusing duplicates), the metadata index, the byte count. */
static laya_status finish(st_set *s, char *err, size_t errlen) {
    uint64_t n = 0, n_m = 0;
    for (uint32_t i = 0; i < s->n_files; i++) {
        /* Sums of array lengths already allocated: cannot overflow, but say so to the reader. */
        if (ck_add(n, s->files[i].n, &n) || ck_add(n_m, s->files[i].n_m, &n_m))
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "too many tensors");
        s->mapped += s->files[i].map_len;
    }
    if (n) {
        if (!(s->by_name = ptr_pair(n)))
            return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory indexing %" PRIu64 " tensors", n);
        uint64_t k = 0;
        for (uint32_t i = 0; i < s->n_files; i++)
            for (uint64_t j = 0; j < s->files[i].n; j++) s->by_name[k++] = &s->files[i].t[j];
        msort(s->by_name, s->by_name + n, (size_t)n, cmp_t_name);
        s->n = n;
        for (uint64_t i = 1; i < n; i++) {
            const st_tensor *a = s->by_name[i - 1], *b = s->by_name[i];
            if (strcmp(a->name, b->name)) continue;
            if (a->file == b->file)
                return laya_err(err, errlen, LAYA_ERR_FORMAT, "duplicate tensor name '%.*s'", SHOW(a->name));
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s' is in both '%s' and '%s'", SHOW(a->name),
                            file_label(s, a->file), file_label(s, b->file));
        }
    }
    if (n_m) {
        if (!(s->meta = ptr_pair(n_m)))
            return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory indexing metadata");
        uint64_t k = 0;
        for (uint32_t i = 0; i < s->n_files; i++)
            for (uint64_t j = 0; j < s->files[i].n_m; j++) s->meta[k++] = &s->files[i].m[j];
        msort(s->meta, s->meta + n_m, (size_t)n_m, cmp_m_key);
        s->n_meta = n_m;
        for (uint64_t i = 1; i < n_m; i++) {
            const st_meta *a = s->meta[i - 1], *b = s->meta[i];
            if (a->file == b->file && !strcmp(a->key, b->key))
                return laya_err(err, errlen, LAYA_ERR_FORMAT, "__metadata__ key '%.*s' appears twice", SHOW(a->key));
        }
    }
    return LAYA_OK;
}

laya_status st_open_buffer(const void *buf, size_t size, st_set **out, char *err, size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "st_open_buffer: out is NULL");
    *out = NULL;
    if (!buf && size) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "st_open_buffer: buf is NULL");
    st_set *s = set_new(1);
    if (!s) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    laya_status st = parse_file(buf ? buf : "", size, 0, &s->files[0], err, errlen);
    if (!st) st = finish(s, err, errlen);
    if (st) {
        st_close(s);
        return st;
    }
    *out = s;
    return LAYA_OK;
}

/* Map and parse file fi of s, whose name is already set; path is where to find it. */
static laya_status open_into(st_set *s, uint32_t fi, const char *path, char *err, size_t errlen) {
    st_file *f = &s->files[fi];
    laya_status st = laya_map_file(path, &f->map, &f->map_len, err, errlen);
    if (st) return st;
    return parse_file(f->map ? f->map : "", f->map_len, fi, f, err, errlen);
}

laya_status st_open_file(const char *path, st_set **out, char *err, size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "st_open_file: out is NULL");
    *out = NULL;
    if (!path) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "st_open_file: path is NULL");
    st_set *s = set_new(1);
    if (!s || !(s->files[0].name = laya_strndup(path, strlen(path)))) {
        st_close(s);
        return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    }
    laya_status st = open_into(s, 0, path, err, errlen);
    if (!st) st = finish(s, err, errlen);
    if (st) {
        st_close(s);
        return st;
    }
    *out = s;
    return LAYA_OK;
}

/* ---------------------------------------------------------------------------------------------------
 * Sharded directories */

typedef struct wm_ent {
    const char *name, *file; /* into the index document */
    uint32_t fi;
    uint8_t found;
} wm_ent;

static int cmp_w_name(const void *a, const void *b) {
    return strcmp(((const wm_ent *)a)->name, ((const wm_ent *)b)->name);
}
static int cmp_w_file(const void *a, const void *b) {
    return strcmp(((const wm_ent *)a)->file, ((const wm_ent *)b)->file);
}

static char *join_path(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    uint64_t n;
    if (ck_add(a, b, &n) || ck_add(n, 2, &n) || n > SIZE_MAX) return NULL;
    char *p = laya_malloc((size_t)n);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* Shard names come from a downloaded file: only a plain name inside the model directory is acceptable. */
static const char *bad_shard_name(const json_value *v) {
    if (v->len == 0) return "is empty";
    if (strlen(v->s) != v->len) return "contains NUL";
    if (strchr(v->s, '/') || strchr(v->s, '\\')) return "is not a plain file name (it has a path separator)";
    if (!strcmp(v->s, ".") || !strcmp(v->s, "..")) return "is not a plain file name";
    return NULL;
}

static const wm_ent *wm_find(const void **by_name, uint64_t n, const char *name) {
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        int c = strcmp(((const wm_ent *)by_name[mid])->name, name);
        if (c == 0) return by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* The index document's weight_map object: present once, an object, not empty. */
static laya_status find_weight_map(const json_value *root, const json_value **out, char *err, size_t errlen) {
    const json_value *wm = NULL;
    if (root->type != JSON_OBJECT)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME " is %s, not an object", a_type(root->type));
    for (const json_value *c = json_first(root); c; c = json_next(root, c)) {
        if (!is_key(c, "weight_map")) continue;
        if (wm) return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME ": key 'weight_map' appears twice");
        wm = c;
    }
    if (!wm) return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME " has no weight_map");
    if (wm->type != JSON_OBJECT)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME ": weight_map is %s, not an object",
                        a_type(wm->type));
    if (wm->n == 0) /* a model without tensors is a broken download, not a model */
        return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME ": weight_map is empty");
    *out = wm;
    return LAYA_OK;
}

/* Each weight_map entry (tensor name -> shard file name), checked, into ents and p (wm->n of each). */
static laya_status read_weight_map(const json_value *wm, wm_ent *ents, const void **p, char *err, size_t errlen) {
    uint64_t k = 0;
    for (const json_value *c = json_first(wm); c; c = json_next(wm, c), k++) {
        if (c->key_len == 0 || strlen(c->key) != c->key_len)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME ": weight_map entry %" PRIu64 " has %s name", k,
                            c->key_len ? "a NUL in its" : "an empty");
        if (c->type != JSON_STRING)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME ": shard of tensor '%.*s' is %s, not a string",
                            SHOW(c->key), a_type(c->type));
        const char *why = bad_shard_name(c);
        if (why)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME ": shard '%.*s' of tensor '%.*s' %s",
                            (int)LAYA_MIN(c->len, (size_t)NAME_SHOWN), c->s, SHOW(c->key), why);
        ents[k].name = c->key;
        ents[k].file = c->s;
        p[k] = &ents[k];
    }
    return LAYA_OK;
}

/* The set of the distinct shards, sorted by name (each opened once), and each entry's shard index; then
 * p sorted by tensor name, with no name twice. */
static laya_status name_shards(const void **p, uint64_t n, st_set **out, char *err, size_t errlen) {
    msort(p, p + n, (size_t)n, cmp_w_file);
    uint64_t n_files = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (i && strcmp(((const wm_ent *)p[i - 1])->file, ((const wm_ent *)p[i])->file)) n_files++;
        ((wm_ent *)p[i])->fi = (uint32_t)n_files; /* n_files <= i < n; checked below before use */
    }
    n_files++;
    if (n_files > UINT32_MAX) return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, INDEX_NAME ": too many shards");
    st_set *s = set_new((uint32_t)n_files);
    if (!(*out = s)) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < n; i++) {
        const wm_ent *e = p[i];
        if (s->files[e->fi].name) continue;
        if (!(s->files[e->fi].name = laya_strndup(e->file, strlen(e->file))))
            return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    }
    msort(p, p + n, (size_t)n, cmp_w_name);
    for (uint64_t i = 1; i < n; i++)
        if (!strcmp(((const wm_ent *)p[i - 1])->name, ((const wm_ent *)p[i])->name))
            return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME ": weight_map names tensor '%.*s' twice",
                            SHOW(((const wm_ent *)p[i])->name));
    return LAYA_OK;
}

/* Every shard of s opened from dir, and its tensors checked against the index (p, sorted by name): each in
 * the index, in this shard, and every indexed tensor found. */
static laya_status open_shards(const char *dir, st_set *s, const void **p, uint64_t n, char *err, size_t errlen) {
    char serr[LAYA_ERR_MSG_MAX];
    for (uint32_t fi = 0; fi < s->n_files; fi++) {
        const char *fname = s->files[fi].name;
        char *path = join_path(dir, fname);
        if (!path) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        laya_status st = open_into(s, fi, path, serr, sizeof serr);
        laya_free(path);
        if (st) return laya_err(err, errlen, st, "%s: %s", fname, serr);
        const st_file *f = &s->files[fi];
        for (uint64_t j = 0; j < f->n; j++) {
            wm_ent *e = (wm_ent *)wm_find(p, n, f->t[j].name);
            if (!e)
                return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s: tensor '%.*s' is not in the index's weight_map",
                                fname, SHOW(f->t[j].name));
            if (e->fi != fi)
                return laya_err(err, errlen, LAYA_ERR_FORMAT,
                                "%s: tensor '%.*s' is here, but the index maps it to '%s'", fname, SHOW(e->name),
                                e->file);
            e->found = 1;
        }
    }
    for (uint64_t i = 0; i < n; i++) {
        const wm_ent *e = p[i];
        if (!e->found)
            return laya_err(err, errlen, LAYA_ERR_FORMAT,
                            INDEX_NAME " maps tensor '%.*s' to '%s', which does not have it", SHOW(e->name), e->file);
    }
    return LAYA_OK;
}

/* The index: validated, its shards opened and checked against it. */
static laya_status open_index(const char *dir, const char *ipath, st_set **out, char *err, size_t errlen) {
    void *imap = NULL;
    size_t ilen = 0;
    json_doc *doc = NULL;
    wm_ent *ents = NULL;
    const void **p = NULL;
    st_set *s = NULL;
    char jerr[LAYA_ERR_MSG_MAX];
    laya_status st = laya_map_file(ipath, &imap, &ilen, err, errlen);
    if (st) return st;

    json_limits lim = {(size_t)ST_MAX_HEADER, INDEX_DEPTH};
    st = json_parse(imap ? imap : "", ilen, &lim, &doc, jerr, sizeof jerr);
    if (imap) munmap(imap, ilen); /* the document holds copies of every string */
    if (st == LAYA_ERR_NOMEM) return laya_err(err, errlen, st, INDEX_NAME ": %s", jerr);
    if (st) return laya_err(err, errlen, LAYA_ERR_FORMAT, INDEX_NAME " is not valid JSON: %s", jerr);
    const json_value *wm = NULL;
    if ((st = find_weight_map(json_root(doc), &wm, err, errlen))) goto out;
    uint64_t n = wm->n;
    if (!(ents = laya_calloc((size_t)n, sizeof *ents)) || !(p = ptr_pair(n))) {
        st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory for an index of %" PRIu64 " tensors", n);
        goto out;
    }
    if ((st = read_weight_map(wm, ents, p, err, errlen)) || (st = name_shards(p, n, &s, err, errlen)) ||
        (st = open_shards(dir, s, p, n, err, errlen)))
        goto out;
    st = finish(s, err, errlen);
out:
    laya_free(p);
    laya_free(ents);
    json_free(doc);
    if (st) st_close(s);
    else *out = s;
    return st;
}

laya_status st_open_dir(const char *dir, st_set **out, char *err, size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "st_open_dir: out is NULL");
    *out = NULL;
    if (!dir) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "st_open_dir: dir is NULL");
    char *single = join_path(dir, SINGLE_NAME), *index = join_path(dir, INDEX_NAME);
    laya_status st;
    struct stat sb;
    if (!single || !index) {
        st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    } else if (stat(single, &sb) == 0 || errno != ENOENT) {
        st = st_open_file(single, out, err, errlen); /* also reports a stat failure other than absence */
    } else if (stat(index, &sb) == 0 || errno != ENOENT) {
        st = open_index(dir, index, out, err, errlen);
    } else {
        st = laya_err(err, errlen, LAYA_ERR_NOT_FOUND, "'%s' has neither " SINGLE_NAME " nor " INDEX_NAME, dir);
    }
    laya_free(single);
    laya_free(index);
    return st;
}

/* ---------------------------------------------------------------------------------------------------
 * Accessors */

uint64_t st_count(const st_set *s) { return s ? s->n : 0; }

const st_tensor *st_at(const st_set *s, uint64_t i) { return s && i < s->n ? s->by_name[i] : NULL; }

const st_tensor *st_find(const st_set *s, const char *name) {
    if (!s || !name) return NULL;
    uint64_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        const st_tensor *t = s->by_name[mid];
        int c = strcmp(t->name, name);
        if (c == 0) return t;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const char *st_metadata(const st_set *s, const char *key) {
    if (!s || !key) return NULL;
    uint64_t lo = 0, hi = s->n_meta; /* lower bound: the first file's value on ties */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (strcmp(((const st_meta *)s->meta[mid])->key, key) < 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo < s->n_meta && !strcmp(((const st_meta *)s->meta[lo])->key, key)) return ((const st_meta *)s->meta[lo])->value;
    return NULL;
}

uint32_t st_file_count(const st_set *s) { return s ? s->n_files : 0; }

const char *st_file_name(const st_set *s, uint32_t i) { return s && i < s->n_files ? file_label(s, i) : NULL; }

uint64_t st_mapped_bytes(const st_set *s) { return s ? s->mapped : 0; }
