/* gguf_write.c — the GGUF v3 writer (gguf.h: gguf_writer_*): keys and tensors collected in memory, then
 * written in one pass with the alignment the file asks for. The reader is gguf.c. */
#include "io/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/common.h"
#include "io/gguf_internal.h"
#include "io/qtypes.h"

/* Values are kept serialized exactly as they will be written (scalars, u64 length + bytes for
 * strings, the elements for arrays), so writing is a straight copy and copy_kv needs no re-encoding. */
typedef struct wkv {
    char *key;
    uint32_t type, arr_type;
    uint64_t arr_n;
    uint8_t *data; /* NULL when size == 0 (an empty array) */
    uint64_t size;
} wkv;

typedef struct wtensor {
    char *name;
    uint32_t type, n_dims;
    int64_t ne[4];
    const void *data; /* the caller's, read at write time */
    uint64_t size, offset;
} wtensor;

struct gguf_writer {
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
};

gguf_writer *gguf_writer_new(void) { return laya_calloc(1, sizeof(gguf_writer)); }

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        laya_free(w->kv[i].key);
        laya_free(w->kv[i].data);
    }
    for (size_t i = 0; i < w->n_t; i++) laya_free(w->t[i].name);
    laya_free(w->kv);
    laya_free(w->t);
    laya_free(w);
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return 1;
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = laya_calloc(nc, elem);
    if (!p) return 0;
    if (*arr) memcpy(p, *arr, *cap * elem);
    laya_free(*arr);
    *arr = p;
    *cap = nc;
    return 1;
}

/* Takes ownership of data (size bytes, NULL allowed when size is 0). Setting a key again replaces it;
 * the linear lookup is fine for the hundreds of keys a model has. */
static laya_status set_kv(gguf_writer *w, const char *key, size_t key_len, uint32_t type, uint32_t arr_type,
                          uint64_t arr_n, uint8_t *data, uint64_t size) {
    for (size_t i = 0; i < w->n_kv; i++) {
        wkv *e = &w->kv[i];
        if (strlen(e->key) == key_len && !memcmp(e->key, key, key_len)) {
            laya_free(e->data);
            e->type = type;
            e->arr_type = arr_type;
            e->arr_n = arr_n;
            e->data = data;
            e->size = size;
            return LAYA_OK;
        }
    }
    char *k = laya_strndup(key, key_len);
    if (!k || !grow((void **)&w->kv, &w->cap_kv, w->n_kv, sizeof *w->kv)) {
        laya_free(k);
        laya_free(data);
        return LAYA_ERR_NOMEM;
    }
    w->kv[w->n_kv++] = (wkv){k, type, arr_type, arr_n, data, size};
    return LAYA_OK;
}

static laya_status set_copy(gguf_writer *w, const char *key, uint32_t type, uint32_t arr_type, uint64_t arr_n,
                            const void *src, uint64_t size) {
    if (!w || !key || (size && !src)) return LAYA_ERR_INVALID_ARG;
    size_t kn = strlen(key);
    if (gguf_name_problem((const uint8_t *)key, kn)) return LAYA_ERR_INVALID_ARG;
    if (size > SIZE_MAX) return LAYA_ERR_NOMEM;
    uint8_t *d = NULL;
    if (size) {
        if (!(d = laya_malloc((size_t)size))) return LAYA_ERR_NOMEM;
        memcpy(d, src, (size_t)size);
    }
    return set_kv(w, key, kn, type, arr_type, arr_n, d, size);
}

laya_status gguf_writer_set_scalar(gguf_writer *w, const char *key, uint32_t type, const void *v) {
    uint64_t es = gguf_vtype_size(type);
    if (!es || !v) return LAYA_ERR_INVALID_ARG;
    if (type == GGUF_BOOL && *(const uint8_t *)v > 1) return LAYA_ERR_INVALID_ARG;
    return set_copy(w, key, type, 0, 0, v, es);
}

laya_status gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v) {
    return set_copy(w, key, GGUF_U32, 0, 0, &v, 4);
}
laya_status gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v) {
    return set_copy(w, key, GGUF_I32, 0, 0, &v, 4);
}
laya_status gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v) {
    return set_copy(w, key, GGUF_U64, 0, 0, &v, 8);
}
laya_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v) {
    return set_copy(w, key, GGUF_F32, 0, 0, &v, 4);
}
laya_status gguf_writer_set_bool(gguf_writer *w, const char *key, int v) {
    uint8_t b = v != 0;
    return set_copy(w, key, GGUF_BOOL, 0, 0, &b, 1);
}

laya_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v) {
    if (!w || !key || !v) return LAYA_ERR_INVALID_ARG;
    gguf_str s = {v, strlen(v)};
    size_t kn = strlen(key);
    if (gguf_name_problem((const uint8_t *)key, kn)) return LAYA_ERR_INVALID_ARG;
    uint8_t *d = laya_malloc(8 + s.n);
    if (!d) return LAYA_ERR_NOMEM;
    memcpy(d, &s.n, 8);
    memcpy(d + 8, v, s.n);
    return set_kv(w, key, kn, GGUF_STRING, 0, 0, d, 8 + s.n);
}

laya_status gguf_writer_set_arr(gguf_writer *w, const char *key, uint32_t elem_type, const void *data, uint64_t n) {
    uint64_t es = gguf_vtype_size(elem_type), size;
    if (!es || ck_mul(n, es, &size) || (n && !data)) return LAYA_ERR_INVALID_ARG;
    if (elem_type == GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (((const uint8_t *)data)[i] > 1) return LAYA_ERR_INVALID_ARG;
    return set_copy(w, key, GGUF_ARRAY, elem_type, n, data, size);
}

laya_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const gguf_str *strs, uint64_t n) {
    if (!w || !key || (n && !strs)) return LAYA_ERR_INVALID_ARG;
    size_t kn = strlen(key);
    if (gguf_name_problem((const uint8_t *)key, kn)) return LAYA_ERR_INVALID_ARG;
    uint64_t size = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (strs[i].n && !strs[i].p) return LAYA_ERR_INVALID_ARG;
        if (ck_add(size, 8, &size) || ck_add(size, strs[i].n, &size)) return LAYA_ERR_INVALID_ARG;
    }
    if (size > SIZE_MAX) return LAYA_ERR_NOMEM;
    uint8_t *d = NULL;
    if (size && !(d = laya_malloc((size_t)size))) return LAYA_ERR_NOMEM;
    uint64_t o = 0;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(d + o, &strs[i].n, 8);
        if (strs[i].n) memcpy(d + o + 8, strs[i].p, (size_t)strs[i].n);
        o += 8 + strs[i].n;
    }
    return set_kv(w, key, kn, GGUF_ARRAY, GGUF_STRING, n, d, size);
}

laya_status gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv) {
    if (!w || !kv || !kv->key.p) return LAYA_ERR_INVALID_ARG;
    if (gguf_name_problem((const uint8_t *)kv->key.p, kv->key.n)) return LAYA_ERR_INVALID_ARG;
    if (kv->type >= GGUF_VTYPE_COUNT || (kv->type == GGUF_ARRAY && kv->arr_type >= GGUF_VTYPE_COUNT) ||
        (kv->type == GGUF_ARRAY && kv->arr_type == GGUF_ARRAY) || (kv->data_size && !kv->data))
        return LAYA_ERR_INVALID_ARG;
    if (kv->data_size > SIZE_MAX) return LAYA_ERR_NOMEM;
    uint8_t *d = NULL;
    if (kv->data_size) {
        if (!(d = laya_malloc((size_t)kv->data_size))) return LAYA_ERR_NOMEM;
        memcpy(d, kv->data, (size_t)kv->data_size);
    }
    int arr = kv->type == GGUF_ARRAY;
    return set_kv(w, kv->key.p, (size_t)kv->key.n, kv->type, arr ? kv->arr_type : 0, arr ? kv->arr_n : 0, d,
                  kv->data_size);
}

laya_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                   const int64_t *ne, const void *data) {
    return gguf_writer_add_tensor_n(w, name, name ? strlen(name) : 0, type, n_dims, ne, data);
}

laya_status gguf_writer_add_tensor_n(gguf_writer *w, const char *name, size_t nn, uint32_t type, uint32_t n_dims,
                                     const int64_t *ne, const void *data) {
    if (!w || !name || !ne || !data || n_dims == 0 || n_dims > 4) return LAYA_ERR_INVALID_ARG;
    if (gguf_name_problem((const uint8_t *)name, nn)) return LAYA_ERR_INVALID_ARG;
    const qt_traits *tr = qt_get(type);
    if (!tr || !tr->name || tr->block <= 0 || tr->bytes <= 0) return LAYA_ERR_UNSUPPORTED;
    wtensor t = {NULL, type, n_dims, {1, 1, 1, 1}, data, 0, 0};
    uint64_t nel = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] <= 0 || ck_mul(nel, (uint64_t)ne[d], &nel) || nel > (uint64_t)INT64_MAX)
            return LAYA_ERR_INVALID_ARG;
        t.ne[d] = ne[d];
    }
    if (t.ne[0] % tr->block) return LAYA_ERR_INVALID_ARG;
    uint64_t size = (uint64_t)(t.ne[0] / tr->block);
    int ovf = ck_mul(size, (uint64_t)tr->bytes, &size);
    for (int d = 1; d < 4; d++) ovf |= ck_mul(size, (uint64_t)t.ne[d], &size);
    if (ovf || size > SIZE_MAX) return LAYA_ERR_INVALID_ARG;
    t.size = size;
    if (!(t.name = laya_strndup(name, nn))) return LAYA_ERR_NOMEM;
    if (!grow((void **)&w->t, &w->cap_t, w->n_t, sizeof *w->t)) {
        laya_free(t.name);
        return LAYA_ERR_NOMEM;
    }
    w->t[w->n_t++] = t;
    return LAYA_OK;
}

/* The one serializer's sink: a file, a buffer sized by a counting pass, or neither (count only). It
 * remembers the first error so the write path reads straight through. */
typedef struct wout {
    FILE *fp;     /* file sink, or NULL */
    uint8_t *buf; /* memory sink of at least pos-at-end bytes, or NULL */
    uint64_t pos;
    int err; /* errno of the first failure, or -1 when errno was 0 */
} wout;

static void put(wout *o, const void *p, uint64_t n) {
    if (o->err || !n) return;
    if (o->fp) {
        if (fwrite(p, 1, (size_t)n, o->fp) != n) o->err = errno ? errno : -1;
    } else if (o->buf) {
        memcpy(o->buf + o->pos, p, (size_t)n);
    }
    o->pos += n;
}
static void put_u32(wout *o, uint32_t v) { put(o, &v, 4); }
static void put_u64(wout *o, uint64_t v) { put(o, &v, 8); }
static void put_pad(wout *o, uint64_t align) {
    static const uint8_t zeros[256];
    uint64_t n = (align - o->pos % align) % align;
    while (n) {
        uint64_t k = LAYA_MIN(n, (uint64_t)sizeof zeros);
        put(o, zeros, k);
        n -= k;
    }
}

static int cmp_wt_name(const void *ctx, size_t a, size_t b) {
    const wtensor *t = ctx;
    int c = strcmp(t[a].name, t[b].name);
    return c ? c : (a > b) - (a < b);
}

static laya_status write_body(gguf_writer *w, wout *o, uint64_t align) {
    put(o, "GGUF", 4);
    put_u32(o, 3);
    put_u64(o, w->n_t);
    put_u64(o, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        const wkv *e = &w->kv[i];
        uint64_t kn = strlen(e->key);
        put_u64(o, kn);
        put(o, e->key, kn);
        put_u32(o, e->type);
        if (e->type == GGUF_ARRAY) {
            put_u32(o, e->arr_type);
            put_u64(o, e->arr_n);
        }
        put(o, e->data, e->size);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        uint64_t nn = strlen(t->name);
        put_u64(o, nn);
        put(o, t->name, nn);
        put_u32(o, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) put_u64(o, (uint64_t)t->ne[d]);
        put_u32(o, t->type);
        put_u64(o, t->offset);
    }
    put_pad(o, align);
    uint64_t data_start = o->pos;
    for (size_t i = 0; i < w->n_t; i++) {
        /* Padding after every tensor keeps the next offset aligned and the file a multiple of align. */
        if (o->pos - data_start != w->t[i].offset) o->err = o->err ? o->err : -1;
        put(o, w->t[i].data, w->t[i].size);
        put_pad(o, align);
    }
    return o->err ? LAYA_ERR_IO : LAYA_OK;
}

/* Checks shared by both outputs and the tensor offsets: the alignment into *align_out. */
static laya_status writer_layout(gguf_writer *w, uint64_t *align_out, char *err, size_t errlen) {
    if (!gguf_host_is_le())
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "GGUF writing needs a little-endian host");
    uint64_t align = GGUF_DEFAULT_ALIGN;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment")) continue;
        if (w->kv[i].type != GGUF_U32)
            return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "general.alignment has type %s, expected u32",
                            gguf_vtype_name(w->kv[i].type));
        align = gguf_ld_u32(w->kv[i].data);
        if (align == 0 || (align & (align - 1)))
            return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "general.alignment %" PRIu64
                            " is not a power of two", align);
    }
    if (w->n_t > 1) {
        gguf_srec *ix = laya_calloc(w->n_t, sizeof *ix);
        if (!ix) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < w->n_t; i++) ix[i] = (gguf_srec){gguf_key8(w->t[i].name, strlen(w->t[i].name)), i};
        gguf_sort_recs(ix, w->n_t, cmp_wt_name, w->t);
        for (size_t i = 1; i < w->n_t; i++)
            if (!strcmp(w->t[ix[i - 1].i].name, w->t[ix[i].i].name)) {
                laya_status st = laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "duplicate tensor name '%.*s'", GGUF_SHOW,
                                          w->t[ix[i].i].name);
                laya_free(ix);
                return st;
            }
        laya_free(ix);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        if (ck_add(off, w->t[i].size, &off) || ck_add(off, align - 1, &off))
            return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "tensor data exceeds 2^64 bytes");
        off &= ~(align - 1);
    }
    *align_out = align;
    return LAYA_OK;
}

laya_status gguf_writer_write(gguf_writer *w, const char *path, char *err, size_t errlen) {
    if (!w || !path) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "gguf_writer_write: NULL argument");
    uint64_t align;
    laya_status st = writer_layout(w, &align, err, errlen);
    if (st) return st;

    /* Write beside the target and rename over it, so the final name only ever holds a complete file.
     * O_EXCL with a pid-and-attempt suffix instead of mkstemp: mkstemp's 0600 would ignore the umask. */
    size_t plen = strlen(path);
    char *tmp = laya_malloc(plen + 48);
    if (!tmp) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    int fd = -1;
    for (unsigned attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(tmp, plen + 48, "%s.tmp.%ld.%u", path, (long)getpid(), attempt);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        st = laya_err(err, errlen, LAYA_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
        laya_free(tmp);
        return st;
    }
    wout o = {fdopen(fd, "wb"), NULL, 0, 0};
    if (!o.fp) {
        int e = errno;
        close(fd);
        unlink(tmp);
        st = laya_err(err, errlen, LAYA_ERR_IO, "cannot open '%s': %s", tmp, strerror(e));
        laya_free(tmp);
        return st;
    }
    write_body(w, &o, align);
    if (!o.err && fflush(o.fp)) o.err = errno ? errno : -1;
    if (!o.err && fsync(fileno(o.fp))) o.err = errno ? errno : -1;
    if (fclose(o.fp) && !o.err) o.err = errno ? errno : -1;
    if (!o.err && rename(tmp, path)) o.err = errno ? errno : -1;
    if (o.err) {
        st = laya_err(err, errlen, LAYA_ERR_IO, "writing '%s' failed: %s", path,
                      o.err > 0 ? strerror(o.err) : "short write");
        unlink(tmp);
    }
    laya_free(tmp);
    return st;
}

laya_status gguf_writer_to_buffer(gguf_writer *w, void **buf, size_t *size, char *err, size_t errlen) {
    if (buf) *buf = NULL;
    if (size) *size = 0;
    if (!w || !buf || !size)
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "gguf_writer_to_buffer: NULL argument");
    uint64_t align;
    laya_status st = writer_layout(w, &align, err, errlen);
    if (st) return st;
    wout count = {NULL, NULL, 0, 0}; /* the same serializer, counting: the exact size before allocating */
    write_body(w, &count, align);
    if (count.pos > SIZE_MAX)
        return laya_err(err, errlen, LAYA_ERR_NOMEM, "GGUF of %" PRIu64 " bytes does not fit in memory", count.pos);
    wout o = {NULL, laya_malloc((size_t)count.pos), 0, 0};
    if (!o.buf)
        return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory for a GGUF of %" PRIu64 " bytes", count.pos);
    write_body(w, &o, align);
    if (o.err || o.pos != count.pos) { /* cannot happen: both passes run the same code on the same writer */
        laya_free(o.buf);
        return laya_err(err, errlen, LAYA_ERR_IO, "serializing GGUF to memory failed");
    }
    *buf = o.buf;
    *size = (size_t)o.pos;
    return LAYA_OK;
}
