/* gguf.c — GGUF v2/v3 reader (mmap-backed, validates everything it is given) and writer (v3).
 * It knows the container: value types, strings, arrays, tensor infos, alignment, plus the lengths of the
 * tokenizer arrays for gguf_check_token_ids. It does not know architectures or what tensors mean. */
#include "io/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/common.h"
#include "io/qtypes.h"

#define HEADER_BYTES 24      /* magic, u32 version, u64 n_tensors, u64 n_kv */
#define DEFAULT_ALIGN 32
#define KV_MIN_BYTES 14      /* u64 key length + 1 key byte + u32 type + 1 value byte */
#define TI_MIN_BYTES 33      /* u64 name length + 1 byte + u32 n_dims + one u64 ne + u32 type + u64 offset */
#define NAME_MAX_BYTES 65535 /* keys and tensor names; llama.cpp's are < 64, but nothing needs a tight cap */
#define SHOW 64              /* bytes of a key or name quoted in a message */
#define Q(s) (int)LAYA_MIN((s).n, (uint64_t)SHOW), (s).p /* for "%.*s" */

struct gguf_file {
    const uint8_t *base;
    uint64_t size;
    void *map;      /* set by gguf_open only; gguf_open_buffer does not own its buffer */
    size_t map_len;
    uint32_t version;
    uint64_t n_kv, n_tensors, alignment, data_off;
    gguf_kv *kv;        /* n_kv, file order */
    gguf_tensor *t;     /* n_tensors, file order */
    size_t *kv_by_key;  /* indices into kv sorted by key: duplicate detection and binary-search lookup */
    size_t *t_by_name;  /* same for tensor names */
    struct srec *scratch; /* during open only */
};

static int host_is_le(void) {
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Loads from the map may be unaligned; memcpy is the defined way and compiles to one load. The host is
 * known to be little-endian by the time these run. */
static uint16_t ld_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t ld_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t ld_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static uint64_t vtype_size(uint32_t t) {
    static const uint8_t sz[GGUF_VTYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < GGUF_VTYPE_COUNT ? sz[t] : 0;
}

const char *gguf_vtype_name(uint32_t t) {
    static const char *const names[GGUF_VTYPE_COUNT] = {"u8",  "i8",     "u16",   "i16", "u32", "i32", "f32",
                                                        "bool", "string", "array", "u64", "i64", "f64"};
    return t < GGUF_VTYPE_COUNT ? names[t] : "unknown";
}

static int utf8_valid(const uint8_t *s, uint64_t n) {
    uint64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        uint32_t cp, len;
        if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
        else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
        else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
        else return 0; /* continuation byte first, overlong 2-byte lead, or beyond U+10FFFF */
        if (n - i < len) return 0;
        for (uint32_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return 0;
        if (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) return 0;
        i += len;
    }
    return 1;
}

/* Keys and tensor names are looked up by C string, so an embedded NUL would make an entry unreachable. */
static const char *name_problem(const uint8_t *s, uint64_t n) {
    if (n == 0) return "is empty";
    if (n > NAME_MAX_BYTES) return "is longer than 65535 bytes";
    if (memchr(s, 0, n)) return "contains a NUL byte";
    if (!utf8_valid(s, n)) return "is not valid UTF-8";
    return NULL;
}

static int str_cmp(gguf_str a, gguf_str b) {
    uint64_t m = LAYA_MIN(a.n, b.n);
    int c = m ? memcmp(a.p, b.p, m) : 0;
    if (c) return c;
    return (a.n > b.n) - (a.n < b.n);
}

/* Sort records: a 64-bit key that settles most comparisons without touching the entries (the first 8 bytes
 * of a name, big-endian and zero-padded, which orders like str_cmp because names hold no NUL; or an
 * offset), and the entry's index. Heapsort: O(n log n) worst case and no allocation of its own, so a
 * hostile file cannot make duplicate detection quadratic (a naive quicksort could be driven there). */
typedef struct srec { uint64_t k; size_t i; } srec;
typedef int (*tie_fn)(const void *ctx, size_t a, size_t b); /* full order on a key tie, ending on index */

static int srec_cmp(const srec *a, const srec *b, tie_fn tie, const void *ctx) {
    if (a->k != b->k) return a->k < b->k ? -1 : 1;
    return tie(ctx, a->i, b->i);
}

static void sift_down(srec *r, size_t root, size_t n, tie_fn tie, const void *ctx) {
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n) return;
        if (c + 1 < n && srec_cmp(&r[c], &r[c + 1], tie, ctx) < 0) c++;
        if (srec_cmp(&r[root], &r[c], tie, ctx) >= 0) return;
        srec tmp = r[root];
        r[root] = r[c];
        r[c] = tmp;
        root = c;
    }
}

static void sort_recs(srec *r, size_t n, tie_fn tie, const void *ctx) {
    for (size_t s = n / 2; s-- > 0;) sift_down(r, s, n, tie, ctx);
    for (size_t end = n; end-- > 1;) {
        srec tmp = r[0];
        r[0] = r[end];
        r[end] = tmp;
        sift_down(r, 0, end, tie, ctx);
    }
}

static uint64_t key8(const char *p, uint64_t n) {
    uint64_t k = 0;
    for (uint64_t j = 0; j < 8; j++) k = k << 8 | (j < n ? (uint8_t)p[j] : 0);
    return k;
}

static int tie_index(const void *ctx, size_t a, size_t b) {
    (void)ctx;
    return (a > b) - (a < b);
}

/* Ties broken by index so that messages name the earlier entry first. */
static int cmp_kv_key(const void *ctx, size_t a, size_t b) {
    const gguf_kv *kv = ctx;
    int c = str_cmp(kv[a].key, kv[b].key);
    return c ? c : (a > b) - (a < b);
}
static int cmp_t_name(const void *ctx, size_t a, size_t b) {
    const gguf_tensor *t = ctx;
    int c = str_cmp(t[a].name, t[b].name);
    return c ? c : (a > b) - (a < b);
}
/* ------------------------------------------------------------------------------------------------------
 * Reader. A cursor over [0, size) with pos <= size always, so size - pos never underflows. */
typedef struct rd {
    const uint8_t *p;
    uint64_t size, pos;
    char *err;
    size_t errlen;
} rd;

static int rd_has(const rd *r, uint64_t n) { return n <= r->size - r->pos; }

static laya_status failf(rd *r, laya_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static laya_status failf(rd *r, laya_status st, const char *fmt, ...) {
    if (r->err && r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err, r->errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* Reads a string (u64 length + bytes) at the cursor; `what` names it in the message. */
static laya_status rd_str(rd *r, gguf_str *s, const char *what) {
    uint64_t at = r->pos;
    if (!rd_has(r, 8))
        return failf(r, LAYA_ERR_FORMAT, "%s: file ends inside the string length at offset %" PRIu64
                     " (size %" PRIu64 ")", what, at, r->size);
    uint64_t n = ld_u64(r->p + at);
    r->pos += 8;
    if (!rd_has(r, n))
        return failf(r, LAYA_ERR_FORMAT, "%s: string length %" PRIu64 " at offset %" PRIu64
                     " extends past end of file (size %" PRIu64 ")", what, n, at, r->size);
    s->p = (const char *)r->p + r->pos;
    s->n = n;
    r->pos += n;
    return LAYA_OK;
}

static laya_status check_bools(rd *r, const uint8_t *p, uint64_t n, const char *what) {
    for (uint64_t i = 0; i < n; i++)
        if (p[i] > 1) {
            if (n == 1)
                return failf(r, LAYA_ERR_FORMAT, "%s: bool value %u is not 0 or 1", what, p[i]);
            return failf(r, LAYA_ERR_FORMAT, "%s: bool element %" PRIu64 " is %u, not 0 or 1", what, i, p[i]);
        }
    return LAYA_OK;
}

static laya_status parse_value(rd *r, gguf_kv *kv, const char *what) {
    laya_status st;
    if (kv->type == GGUF_STRING) {
        gguf_str s;
        kv->data = r->p + r->pos;
        if ((st = rd_str(r, &s, what))) return st;
        kv->data_size = 8 + s.n;
        return LAYA_OK;
    }
    if (kv->type != GGUF_ARRAY) {
        uint64_t es = vtype_size(kv->type);
        if (!es) return failf(r, LAYA_ERR_FORMAT, "%s: unknown value type %" PRIu32, what, kv->type);
        if (!rd_has(r, es))
            return failf(r, LAYA_ERR_FORMAT, "%s: file ends inside the %s value at offset %" PRIu64
                         " (size %" PRIu64 ")", what, gguf_vtype_name(kv->type), r->pos, r->size);
        kv->data = r->p + r->pos;
        kv->data_size = es;
        if (kv->type == GGUF_BOOL && (st = check_bools(r, kv->data, 1, what))) return st;
        r->pos += es;
        return LAYA_OK;
    }
    if (!rd_has(r, 12))
        return failf(r, LAYA_ERR_FORMAT, "%s: file ends inside the array header at offset %" PRIu64
                     " (size %" PRIu64 ")", what, r->pos, r->size);
    kv->arr_type = ld_u32(r->p + r->pos);
    kv->arr_n = ld_u64(r->p + r->pos + 4);
    r->pos += 12;
    if (kv->arr_type == GGUF_ARRAY)
        return failf(r, LAYA_ERR_FORMAT, "%s: nested array (array of arrays) is not allowed", what);
    if (kv->arr_type >= GGUF_VTYPE_COUNT)
        return failf(r, LAYA_ERR_FORMAT, "%s: unknown array element type %" PRIu32, what, kv->arr_type);
    kv->data = r->p + r->pos;
    uint64_t start = r->pos, n = kv->arr_n;
    if (kv->arr_type == GGUF_STRING) {
        /* Every element needs at least its 8-byte length: refuse impossible counts before walking. */
        if (n > (r->size - r->pos) / 8)
            return failf(r, LAYA_ERR_FORMAT, "%s: array of %" PRIu64 " strings at offset %" PRIu64
                         " cannot fit in the file (size %" PRIu64 ")", what, n, start, r->size);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t at = r->pos;
            if (!rd_has(r, 8))
                return failf(r, LAYA_ERR_FORMAT, "%s: file ends inside the length of string element %" PRIu64
                             " at offset %" PRIu64 " (size %" PRIu64 ")", what, i, at, r->size);
            uint64_t len = ld_u64(r->p + at);
            r->pos += 8;
            if (!rd_has(r, len))
                return failf(r, LAYA_ERR_FORMAT, "%s: string element %" PRIu64 " length %" PRIu64
                             " at offset %" PRIu64 " extends past end of file (size %" PRIu64 ")",
                             what, i, len, at, r->size);
            r->pos += len;
        }
    } else {
        uint64_t es = vtype_size(kv->arr_type), bytes;
        if (ck_mul(n, es, &bytes))
            return failf(r, LAYA_ERR_FORMAT, "%s: array of %" PRIu64 " %s elements: byte size overflows",
                         what, n, gguf_vtype_name(kv->arr_type));
        if (!rd_has(r, bytes))
            return failf(r, LAYA_ERR_FORMAT, "%s: array of %" PRIu64 " %s elements (%" PRIu64
                         " bytes) at offset %" PRIu64 " extends past end of file (size %" PRIu64 ")",
                         what, n, gguf_vtype_name(kv->arr_type), bytes, start, r->size);
        if (kv->arr_type == GGUF_BOOL && (st = check_bools(r, kv->data, n, what))) return st;
        r->pos += bytes;
    }
    kv->data_size = r->pos - start;
    return LAYA_OK;
}

static laya_status parse_kvs(rd *r, gguf_file *f) {
    char what[SHOW + 48];
    laya_status st;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        snprintf(what, sizeof what, "kv %" PRIu64 " key", i);
        if ((st = rd_str(r, &kv->key, what))) return st;
        const char *bad = name_problem((const uint8_t *)kv->key.p, kv->key.n);
        if (bad) return failf(r, LAYA_ERR_FORMAT, "kv %" PRIu64 ": key %s", i, bad);
        snprintf(what, sizeof what, "kv %" PRIu64 " '%.*s'", i, Q(kv->key));
        if (!rd_has(r, 4))
            return failf(r, LAYA_ERR_FORMAT, "%s: file ends inside the value type at offset %" PRIu64
                         " (size %" PRIu64 ")", what, r->pos, r->size);
        kv->type = ld_u32(r->p + r->pos);
        r->pos += 4;
        if ((st = parse_value(r, kv, what))) return st;
    }
    return LAYA_OK;
}

static laya_status parse_tensor_infos(rd *r, gguf_file *f) {
    char what[SHOW + 48];
    laya_status st;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->t[i];
        snprintf(what, sizeof what, "tensor %" PRIu64 " name", i);
        if ((st = rd_str(r, &t->name, what))) return st;
        const char *bad = name_problem((const uint8_t *)t->name.p, t->name.n);
        if (bad) return failf(r, LAYA_ERR_FORMAT, "tensor %" PRIu64 ": name %s", i, bad);
        snprintf(what, sizeof what, "tensor '%.*s'", Q(t->name));
        if (!rd_has(r, 4))
            return failf(r, LAYA_ERR_FORMAT, "%s: file ends inside n_dims at offset %" PRIu64
                         " (size %" PRIu64 ")", what, r->pos, r->size);
        t->n_dims = ld_u32(r->p + r->pos);
        r->pos += 4;
        if (t->n_dims == 0 || t->n_dims > 4)
            return failf(r, LAYA_ERR_FORMAT, "%s: n_dims %" PRIu32 " is out of range (1..4)", what, t->n_dims);
        if (!rd_has(r, 8 * (uint64_t)t->n_dims + 12))
            return failf(r, LAYA_ERR_FORMAT, "%s: file ends inside the shape, type or offset at offset %" PRIu64
                         " (size %" PRIu64 ")", what, r->pos, r->size);
        for (uint32_t d = 0; d < 4; d++) {
            uint64_t v = d < t->n_dims ? ld_u64(r->p + r->pos + 8 * d) : 1;
            if (v == 0) return failf(r, LAYA_ERR_FORMAT, "%s: dimension %" PRIu32 " is zero", what, d);
            if (v > (uint64_t)INT64_MAX)
                return failf(r, LAYA_ERR_FORMAT, "%s: dimension %" PRIu32 " is negative (%" PRId64 ")", what, d,
                             (int64_t)(v - (uint64_t)INT64_MAX - 1) + INT64_MIN);
            t->ne[d] = (int64_t)v;
        }
        r->pos += 8 * (uint64_t)t->n_dims;
        t->type = ld_u32(r->p + r->pos);
        t->offset = ld_u64(r->p + r->pos + 4);
        r->pos += 12;

        uint64_t nel = 1;
        for (int d = 0; d < 4; d++)
            if (ck_mul(nel, (uint64_t)t->ne[d], &nel) || nel > (uint64_t)INT64_MAX)
                return failf(r, LAYA_ERR_FORMAT, "%s: element count overflows int64 (ne = [%" PRId64 ", %" PRId64
                             ", %" PRId64 ", %" PRId64 "])", what, t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
        const qt_traits *tr = qt_get(t->type);
        if (!tr || !tr->name || tr->block <= 0 || tr->bytes <= 0)
            return failf(r, LAYA_ERR_UNSUPPORTED, "%s: unknown tensor type %" PRIu32, what, t->type);
        if (t->ne[0] % tr->block)
            return failf(r, LAYA_ERR_FORMAT, "%s: row length %" PRId64 " is not a multiple of the %s block size %"
                         PRId32, what, t->ne[0], tr->name, tr->block);
        /* Computed from the traits rather than qt_row_bytes so that a huge ne[0] is an overflow we see,
         * not a wrapped size_t. */
        uint64_t size = (uint64_t)(t->ne[0] / tr->block);
        int ovf = ck_mul(size, (uint64_t)tr->bytes, &size);
        for (int d = 1; d < 4; d++) ovf |= ck_mul(size, (uint64_t)t->ne[d], &size);
        if (ovf)
            return failf(r, LAYA_ERR_FORMAT, "%s: byte size of %" PRIu64 " %s elements overflows", what, nel,
                         tr->name);
        t->size = size;
        if (t->offset % f->alignment)
            return failf(r, LAYA_ERR_FORMAT, "%s: offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                         what, t->offset, f->alignment);
    }
    return LAYA_OK;
}

static laya_status check_alignment(rd *r, gguf_file *f) {
    f->alignment = DEFAULT_ALIGN;
    const gguf_kv *kv = gguf_find_kv(f, "general.alignment");
    if (!kv) return LAYA_OK;
    if (kv->type != GGUF_U32)
        return failf(r, LAYA_ERR_FORMAT, "general.alignment has type %s, expected u32", gguf_vtype_name(kv->type));
    uint32_t a = ld_u32(kv->data);
    if (a == 0 || (a & (a - 1)))
        return failf(r, LAYA_ERR_FORMAT, "general.alignment %" PRIu32 " is not a power of two", a);
    f->alignment = a;
    return LAYA_OK;
}

static laya_status check_tensor_data(rd *r, gguf_file *f) {
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->t[i];
        uint64_t a, e;
        if (ck_add(f->data_off, t->offset, &a) || ck_add(a, t->size, &e))
            return failf(r, LAYA_ERR_FORMAT, "tensor '%.*s': offset %" PRIu64 " + size %" PRIu64 " overflows",
                         Q(t->name), t->offset, t->size);
        if (e > f->size)
            return failf(r, LAYA_ERR_FORMAT, "tensor '%.*s': data [%" PRIu64 ", %" PRIu64
                         ") extends past end of file (size %" PRIu64 ")", Q(t->name), a, e, f->size);
        t->data = f->base + a;
    }
    return LAYA_OK;
}

/* Sorted by offset, two tensors overlap only if some pair of neighbours does. */
static laya_status check_overlaps(rd *r, gguf_file *f, srec *s) {
    size_t n = (size_t)f->n_tensors;
    for (size_t i = 0; i < n; i++) s[i] = (srec){f->t[i].offset, i};
    sort_recs(s, n, tie_index, NULL);
    for (size_t i = 1; i < n; i++) {
        const gguf_tensor *a = &f->t[s[i - 1].i], *b = &f->t[s[i].i];
        if (a->offset + a->size > b->offset) /* no overflow: both ranges were checked against the file */
            return failf(r, LAYA_ERR_FORMAT, "tensors '%.*s' [%" PRIu64 ", %" PRIu64 ") and '%.*s' [%" PRIu64
                         ", %" PRIu64 ") overlap in the data section", Q(a->name), a->offset, a->offset + a->size,
                         Q(b->name), b->offset, b->offset + b->size);
    }
    return LAYA_OK;
}

static laya_status open_impl(rd *r, gguf_file *f) {
    laya_status st;
    if (r->size < 4)
        return failf(r, LAYA_ERR_FORMAT, "file is %" PRIu64 " bytes, too small for a GGUF header (24 bytes)",
                     r->size);
    if (memcmp(r->p, "GGUF", 4))
        return failf(r, LAYA_ERR_FORMAT, "bad magic %02x %02x %02x %02x (expected \"GGUF\")", r->p[0], r->p[1],
                     r->p[2], r->p[3]);
    if (r->size < 8)
        return failf(r, LAYA_ERR_FORMAT, "file is %" PRIu64 " bytes, too small for a GGUF header (24 bytes)",
                     r->size);
    f->version = ld_u32(r->p + 4);
    if (f->version == 1)
        return failf(r, LAYA_ERR_UNSUPPORTED, "GGUF version 1 is not supported (32-bit counts; only v2 and v3)");
    if (f->version != 2 && f->version != 3) {
        if ((f->version & 0xffff) == 0 && f->version != 0)
            return failf(r, LAYA_ERR_UNSUPPORTED, "GGUF version %" PRIu32 " looks byte-swapped: big-endian "
                         "GGUF files are not supported", f->version);
        return failf(r, LAYA_ERR_UNSUPPORTED, "GGUF version %" PRIu32 " is not supported (only v2 and v3)",
                     f->version);
    }
    if (r->size < HEADER_BYTES)
        return failf(r, LAYA_ERR_FORMAT, "file is %" PRIu64 " bytes, too small for a GGUF header (24 bytes)",
                     r->size);
    f->n_tensors = ld_u64(r->p + 8);
    f->n_kv = ld_u64(r->p + 16);
    r->pos = HEADER_BYTES;

    /* Every entry has a minimum encoded size, so the counts are bounded by the file before anything is
     * allocated from them: a header claiming 2^60 entries costs nothing. */
    uint64_t rem = r->size - r->pos, need_kv, need_t, need;
    if (f->n_kv > rem / KV_MIN_BYTES)
        return failf(r, LAYA_ERR_FORMAT, "n_kv %" PRIu64 " cannot fit in the file (%" PRIu64
                     " bytes after the header, at least %d per kv)", f->n_kv, rem, KV_MIN_BYTES);
    if (f->n_tensors > rem / TI_MIN_BYTES)
        return failf(r, LAYA_ERR_FORMAT, "n_tensors %" PRIu64 " cannot fit in the file (%" PRIu64
                     " bytes after the header, at least %d per tensor info)", f->n_tensors, rem, TI_MIN_BYTES);
    need_kv = f->n_kv * KV_MIN_BYTES;      /* no overflow: both bounded by rem above */
    need_t = f->n_tensors * TI_MIN_BYTES;
    if (ck_add(need_kv, need_t, &need) || need > rem)
        return failf(r, LAYA_ERR_FORMAT, "n_kv %" PRIu64 " and n_tensors %" PRIu64 " cannot both fit in the file "
                     "(%" PRIu64 " bytes after the header)", f->n_kv, f->n_tensors, rem);

    /* Sort scratch for keys, offsets and names, freed when open returns. */
    size_t n_scratch = (size_t)LAYA_MAX(f->n_kv, f->n_tensors);
    if (n_scratch && !(f->scratch = laya_calloc(n_scratch, sizeof *f->scratch)))
        return failf(r, LAYA_ERR_NOMEM, "out of memory for %zu sort records", n_scratch);
    if (f->n_kv) {
        f->kv = laya_calloc((size_t)f->n_kv, sizeof *f->kv);
        f->kv_by_key = laya_calloc((size_t)f->n_kv, sizeof *f->kv_by_key);
        if (!f->kv || !f->kv_by_key) return failf(r, LAYA_ERR_NOMEM, "out of memory for %" PRIu64 " kvs", f->n_kv);
    }
    if ((st = parse_kvs(r, f))) return st;
    for (size_t i = 0; i < f->n_kv; i++) f->scratch[i] = (srec){key8(f->kv[i].key.p, f->kv[i].key.n), i};
    sort_recs(f->scratch, (size_t)f->n_kv, cmp_kv_key, f->kv);
    for (size_t i = 0; i < f->n_kv; i++) f->kv_by_key[i] = f->scratch[i].i;
    for (size_t i = 1; i < f->n_kv; i++) {
        size_t a = f->kv_by_key[i - 1], b = f->kv_by_key[i];
        if (!str_cmp(f->kv[a].key, f->kv[b].key))
            return failf(r, LAYA_ERR_FORMAT, "duplicate key '%.*s' (kv %zu and kv %zu)", Q(f->kv[a].key), a, b);
    }
    if ((st = check_alignment(r, f))) return st;

    if (f->n_tensors) {
        f->t = laya_calloc((size_t)f->n_tensors, sizeof *f->t);
        f->t_by_name = laya_calloc((size_t)f->n_tensors, sizeof *f->t_by_name);
        if (!f->t || !f->t_by_name)
            return failf(r, LAYA_ERR_NOMEM, "out of memory for %" PRIu64 " tensor infos", f->n_tensors);
    }
    if ((st = parse_tensor_infos(r, f))) return st;
    for (size_t i = 0; i < f->n_tensors; i++) f->scratch[i] = (srec){key8(f->t[i].name.p, f->t[i].name.n), i};
    sort_recs(f->scratch, (size_t)f->n_tensors, cmp_t_name, f->t);
    for (size_t i = 0; i < f->n_tensors; i++) f->t_by_name[i] = f->scratch[i].i;
    for (size_t i = 1; i < f->n_tensors; i++) {
        size_t a = f->t_by_name[i - 1], b = f->t_by_name[i];
        if (!str_cmp(f->t[a].name, f->t[b].name))
            return failf(r, LAYA_ERR_FORMAT, "duplicate tensor name '%.*s' (tensors %zu and %zu)", Q(f->t[a].name),
                         a, b);
    }

    uint64_t end;
    if (ck_add(r->pos, f->alignment - 1, &end))
        return failf(r, LAYA_ERR_FORMAT, "data section offset overflows (alignment %" PRIu64 ")", f->alignment);
    f->data_off = end & ~(f->alignment - 1);
    /* A file without tensors may stop right after its infos; one with tensors needs its data section. */
    if (f->n_tensors && f->data_off > f->size)
        return failf(r, LAYA_ERR_FORMAT, "data section starts at %" PRIu64 " (tensor infos end at %" PRIu64
                     ", alignment %" PRIu64 "), past end of file (size %" PRIu64 ")", f->data_off, r->pos,
                     f->alignment, f->size);
    if ((st = check_tensor_data(r, f))) return st;
    if (f->n_tensors > 1 && (st = check_overlaps(r, f, f->scratch))) return st;

    laya_free(f->scratch);
    f->scratch = NULL;
    return LAYA_OK;
}

laya_status gguf_open_buffer(const void *buf, size_t size, gguf_file **out, char *err, size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "gguf_open_buffer: out is NULL");
    *out = NULL;
    if (!buf && size) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "gguf_open_buffer: buffer is NULL");
    if (!host_is_le())
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "GGUF reading needs a little-endian host");
    gguf_file *f = laya_calloc(1, sizeof *f);
    if (!f) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    f->base = buf;
    f->size = size;
    rd r = {buf, size, 0, err, errlen};
    laya_status st = open_impl(&r, f);
    if (st) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return LAYA_OK;
}

laya_status gguf_open(const char *path, gguf_file **out, char *err, size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "gguf_open: out is NULL");
    *out = NULL;
    if (!path) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "gguf_open: path is NULL");
    void *m;
    size_t len;
    laya_status lst = laya_map_file(path, &m, &len, err, errlen);
    if (lst) return lst;
    if (!m) return gguf_open_buffer("", 0, out, err, errlen); /* empty: the parser gives the format message */
    laya_status st = gguf_open_buffer(m, len, out, err, errlen);
    if (st) {
        munmap(m, len);
        return st;
    }
    (*out)->map = m;
    (*out)->map_len = len;
    return LAYA_OK;
}

void gguf_close(gguf_file *f) {
    if (!f) return;
    laya_free(f->kv);
    laya_free(f->kv_by_key);
    laya_free(f->t);
    laya_free(f->t_by_name);
    laya_free(f->scratch);
    if (f->map) munmap(f->map, f->map_len);
    laya_free(f);
}

uint32_t gguf_version(const gguf_file *f) { return f ? f->version : 0; }
uint64_t gguf_file_size(const gguf_file *f) { return f ? f->size : 0; }
uint64_t gguf_n_kv(const gguf_file *f) { return f ? f->n_kv : 0; }
uint64_t gguf_n_tensors(const gguf_file *f) { return f ? f->n_tensors : 0; }
uint64_t gguf_alignment(const gguf_file *f) { return f ? f->alignment : 0; }
uint64_t gguf_data_offset(const gguf_file *f) { return f ? f->data_off : 0; }

const gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i) { return f && i < f->n_kv ? &f->kv[i] : NULL; }
const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i) {
    return f && i < f->n_tensors ? &f->t[i] : NULL;
}

const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key) {
    if (!f || !key) return NULL;
    gguf_str k = {key, strlen(key)};
    size_t lo = 0, hi = (size_t)f->n_kv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const gguf_kv *kv = &f->kv[f->kv_by_key[mid]];
        int c = str_cmp(kv->key, k);
        if (!c) return kv;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    if (!f || !name) return NULL;
    gguf_str k = {name, strlen(name)};
    size_t lo = 0, hi = (size_t)f->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const gguf_tensor *t = &f->t[f->t_by_name[mid]];
        int c = str_cmp(t->name, k);
        if (!c) return t;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* An integer value as (negative?, magnitude-or-value): lets every getter range-check without a 128-bit type. */
static int kv_int(uint32_t type, const uint8_t *p, int64_t *sv, uint64_t *uv, int *is_signed) {
    *is_signed = 0;
    switch (type) {
    case GGUF_U8: *uv = p[0]; return 1;
    case GGUF_U16: *uv = ld_u16(p); return 1;
    case GGUF_U32: *uv = ld_u32(p); return 1;
    case GGUF_U64: *uv = ld_u64(p); return 1;
    case GGUF_I8: *sv = (int8_t)p[0]; break;
    case GGUF_I16: *sv = (int16_t)ld_u16(p); break;
    case GGUF_I32: *sv = (int32_t)ld_u32(p); break;
    case GGUF_I64: *sv = (int64_t)ld_u64(p); break;
    default: return 0;
    }
    *is_signed = 1;
    return 1;
}

laya_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return LAYA_ERR_NOT_FOUND;
    int64_t s = 0;
    uint64_t u = 0;
    int sg;
    if (!kv_int(kv->type, kv->data, &s, &u, &sg)) return LAYA_ERR_TYPE;
    if (sg) {
        if (s < 0 || (uint64_t)s > UINT32_MAX) return LAYA_ERR_TYPE;
        u = (uint64_t)s;
    }
    if (u > UINT32_MAX) return LAYA_ERR_TYPE;
    if (out) *out = (uint32_t)u;
    return LAYA_OK;
}

laya_status gguf_get_i64(const gguf_file *f, const char *key, int64_t *out) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return LAYA_ERR_NOT_FOUND;
    int64_t s = 0;
    uint64_t u = 0;
    int sg;
    if (!kv_int(kv->type, kv->data, &s, &u, &sg)) return LAYA_ERR_TYPE;
    if (!sg) {
        if (u > (uint64_t)INT64_MAX) return LAYA_ERR_TYPE;
        s = (int64_t)u;
    }
    if (out) *out = s;
    return LAYA_OK;
}

laya_status gguf_get_f32(const gguf_file *f, const char *key, float *out) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return LAYA_ERR_NOT_FOUND;
    float v;
    if (kv->type == GGUF_F32) {
        memcpy(&v, kv->data, 4);
    } else if (kv->type == GGUF_F64) {
        double d;
        memcpy(&d, kv->data, 8);
        if (d == d && (d > FLT_MAX || d < -FLT_MAX) && d - d == 0) return LAYA_ERR_TYPE; /* finite, too big */
        v = (float)d;
    } else {
        return LAYA_ERR_TYPE;
    }
    if (out) *out = v;
    return LAYA_OK;
}

laya_status gguf_get_bool(const gguf_file *f, const char *key, int *out) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return LAYA_ERR_NOT_FOUND;
    if (kv->type != GGUF_BOOL) return LAYA_ERR_TYPE;
    if (out) *out = kv->data[0];
    return LAYA_OK;
}

laya_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out) {
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return LAYA_ERR_NOT_FOUND;
    if (kv->type != GGUF_STRING) return LAYA_ERR_TYPE;
    if (out) {
        out->n = ld_u64(kv->data);
        out->p = (const char *)kv->data + 8;
    }
    return LAYA_OK;
}

laya_status gguf_get_arr(const gguf_file *f, const char *key, uint32_t elem_type, const gguf_kv **out) {
    if (out) *out = NULL;
    const gguf_kv *kv = gguf_find_kv(f, key);
    if (!kv) return LAYA_ERR_NOT_FOUND;
    if (kv->type != GGUF_ARRAY || (elem_type != GGUF_ARR_ANY && kv->arr_type != elem_type)) return LAYA_ERR_TYPE;
    if (out) *out = kv;
    return LAYA_OK;
}

gguf_str_iter gguf_arr_strs(const gguf_kv *kv) {
    gguf_str_iter it = {NULL, 0};
    if (kv && kv->type == GGUF_ARRAY && kv->arr_type == GGUF_STRING) it = (gguf_str_iter){kv->data, kv->arr_n};
    return it;
}

int gguf_str_next(gguf_str_iter *it, gguf_str *out) {
    if (!it || !it->left) return 0;
    /* every length was checked against the file at open */
    out->n = ld_u64(it->p);
    out->p = (const char *)it->p + 8;
    it->p += 8 + out->n;
    it->left--;
    return 1;
}

double gguf_arr_num(const gguf_kv *kv, uint64_t i) {
    if (!kv || kv->type != GGUF_ARRAY || i >= kv->arr_n) return 0.0;
    uint64_t es = vtype_size(kv->arr_type);
    if (!es) return 0.0;
    const uint8_t *p = kv->data + i * es; /* in range: arr_n * es == data_size was checked at open */
    int64_t s = 0;
    uint64_t u = 0;
    int sg;
    if (kv_int(kv->arr_type, p, &s, &u, &sg)) return sg ? (double)s : (double)u;
    if (kv->arr_type == GGUF_F32) { float v; memcpy(&v, p, 4); return v; }
    if (kv->arr_type == GGUF_F64) { double v; memcpy(&v, p, 8); return v; }
    if (kv->arr_type == GGUF_BOOL) return p[0];
    return 0.0;
}

laya_status gguf_check_token_ids(const gguf_file *f, char *err, size_t errlen) {
    static const char *const ids[] = {"bos", "eos", "unknown", "padding", "separator",
                                      "eot", "eom", "fim_pre", "fim_suf", "fim_mid"};
    if (!f) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "gguf_check_token_ids: file is NULL");
    const gguf_kv *tok = gguf_find_kv(f, "tokenizer.ggml.tokens");
    uint64_t n_tok = 0;
    if (tok) {
        if (tok->type != GGUF_ARRAY || tok->arr_type != GGUF_STRING)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer.ggml.tokens has type %s%s%s, expected an "
                            "array of strings", gguf_vtype_name(tok->type), tok->type == GGUF_ARRAY ? " of " : "",
                            tok->type == GGUF_ARRAY ? gguf_vtype_name(tok->arr_type) : "");
        n_tok = tok->arr_n;
        if (n_tok > INT32_MAX)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer.ggml.tokens has %" PRIu64 " entries, more "
                            "than int32 token ids can address", n_tok);
    }
    static const struct { const char *key; uint32_t type; } arrs[] = {
        {"tokenizer.ggml.scores", GGUF_F32}, {"tokenizer.ggml.token_type", GGUF_I32}};
    for (size_t i = 0; i < sizeof arrs / sizeof arrs[0]; i++) {
        const gguf_kv *kv = gguf_find_kv(f, arrs[i].key);
        if (!kv) continue;
        if (!tok)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s is present but tokenizer.ggml.tokens is missing",
                            arrs[i].key);
        if (kv->type != GGUF_ARRAY || kv->arr_type != arrs[i].type)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s has type %s%s%s, expected an array of %s", arrs[i].key,
                            gguf_vtype_name(kv->type), kv->type == GGUF_ARRAY ? " of " : "",
                            kv->type == GGUF_ARRAY ? gguf_vtype_name(kv->arr_type) : "",
                            gguf_vtype_name(arrs[i].type));
        if (kv->arr_n != n_tok)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s has %" PRIu64 " entries but tokenizer.ggml.tokens has %"
                            PRIu64, arrs[i].key, kv->arr_n, n_tok);
    }
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", ids[i]);
        const gguf_kv *kv = gguf_find_kv(f, key);
        if (!kv) continue;
        int64_t s = 0;
        uint64_t u = 0;
        int sg;
        if (!kv_int(kv->type, kv->data, &s, &u, &sg))
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s has type %s, expected an integer", key,
                            gguf_vtype_name(kv->type));
        if (!tok)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s is set but tokenizer.ggml.tokens is missing", key);
        if (sg && s < 0)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s = %" PRId64 " is negative", key, s);
        if (!sg) s = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
        if ((uint64_t)s >= n_tok)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s = %" PRIu64 " is out of range: tokenizer.ggml.tokens "
                            "has %" PRIu64 " entries", key, sg ? (uint64_t)s : u, n_tok);
    }
    return LAYA_OK;
}

/* ------------------------------------------------------------------------------------------------------
 * Writer. Values are kept serialized exactly as they will be written (scalars, u64 length + bytes for
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
    if (name_problem((const uint8_t *)key, kn)) return LAYA_ERR_INVALID_ARG;
    if (size > SIZE_MAX) return LAYA_ERR_NOMEM;
    uint8_t *d = NULL;
    if (size) {
        if (!(d = laya_malloc((size_t)size))) return LAYA_ERR_NOMEM;
        memcpy(d, src, (size_t)size);
    }
    return set_kv(w, key, kn, type, arr_type, arr_n, d, size);
}

laya_status gguf_writer_set_scalar(gguf_writer *w, const char *key, uint32_t type, const void *v) {
    uint64_t es = vtype_size(type);
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
    if (name_problem((const uint8_t *)key, kn)) return LAYA_ERR_INVALID_ARG;
    uint8_t *d = laya_malloc(8 + s.n);
    if (!d) return LAYA_ERR_NOMEM;
    memcpy(d, &s.n, 8);
    memcpy(d + 8, v, s.n);
    return set_kv(w, key, kn, GGUF_STRING, 0, 0, d, 8 + s.n);
}

laya_status gguf_writer_set_arr(gguf_writer *w, const char *key, uint32_t elem_type, const void *data, uint64_t n) {
    uint64_t es = vtype_size(elem_type), size;
    if (!es || ck_mul(n, es, &size) || (n && !data)) return LAYA_ERR_INVALID_ARG;
    if (elem_type == GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (((const uint8_t *)data)[i] > 1) return LAYA_ERR_INVALID_ARG;
    return set_copy(w, key, GGUF_ARRAY, elem_type, n, data, size);
}

laya_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const gguf_str *strs, uint64_t n) {
    if (!w || !key || (n && !strs)) return LAYA_ERR_INVALID_ARG;
    size_t kn = strlen(key);
    if (name_problem((const uint8_t *)key, kn)) return LAYA_ERR_INVALID_ARG;
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
    if (name_problem((const uint8_t *)kv->key.p, kv->key.n)) return LAYA_ERR_INVALID_ARG;
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
    if (name_problem((const uint8_t *)name, nn)) return LAYA_ERR_INVALID_ARG;
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
    if (!host_is_le())
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "GGUF writing needs a little-endian host");
    uint64_t align = DEFAULT_ALIGN;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kv[i].key, "general.alignment")) continue;
        if (w->kv[i].type != GGUF_U32)
            return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "general.alignment has type %s, expected u32",
                            gguf_vtype_name(w->kv[i].type));
        align = ld_u32(w->kv[i].data);
        if (align == 0 || (align & (align - 1)))
            return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "general.alignment %" PRIu64
                            " is not a power of two", align);
    }
    if (w->n_t > 1) {
        srec *ix = laya_calloc(w->n_t, sizeof *ix);
        if (!ix) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < w->n_t; i++) ix[i] = (srec){key8(w->t[i].name, strlen(w->t[i].name)), i};
        sort_recs(ix, w->n_t, cmp_wt_name, w->t);
        for (size_t i = 1; i < w->n_t; i++)
            if (!strcmp(w->t[ix[i - 1].i].name, w->t[ix[i].i].name)) {
                laya_status st = laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "duplicate tensor name '%.*s'", SHOW,
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
