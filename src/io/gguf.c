/* gguf.c — GGUF v2/v3 reader (mmap-backed, validates everything it is given); the writer is gguf_write.c.
 * It knows the container: value types, strings, arrays, tensor infos, alignment, plus the lengths of the
 * tokenizer arrays for gguf_check_token_ids. It does not know architectures or what tensors mean. */
#include "io/gguf.h"
#include "io/gguf_internal.h"

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
#define KV_MIN_BYTES 14      /* u64 key length + 1 key byte + u32 type + 1 value byte */
#define TI_MIN_BYTES 33      /* u64 name length + 1 byte + u32 n_dims + one u64 ne + u32 type + u64 offset */
#define NAME_MAX_BYTES 65535 /* keys and tensor names; llama.cpp's are < 64, but nothing needs a tight cap */
#define Q(s) (int)LAYA_MIN((s).n, (uint64_t)GGUF_SHOW), (s).p /* for "%.*s" */

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
    struct gguf_srec *scratch; /* during open only */
};

int gguf_host_is_le(void) {
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Loads from the map may be unaligned; memcpy is the defined way and compiles to one load. The host is
 * known to be little-endian by the time these run. */
static uint16_t ld_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint64_t ld_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

uint64_t gguf_vtype_size(uint32_t t) {
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
const char *gguf_name_problem(const uint8_t *s, uint64_t n) {
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

static int srec_cmp(const gguf_srec *a, const gguf_srec *b, gguf_tie_fn tie, const void *ctx) {
    if (a->k != b->k) return a->k < b->k ? -1 : 1;
    return tie(ctx, a->i, b->i);
}

static void sift_down(gguf_srec *r, size_t root, size_t n, gguf_tie_fn tie, const void *ctx) {
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n) return;
        if (c + 1 < n && srec_cmp(&r[c], &r[c + 1], tie, ctx) < 0) c++;
        if (srec_cmp(&r[root], &r[c], tie, ctx) >= 0) return;
        gguf_srec tmp = r[root];
        r[root] = r[c];
        r[c] = tmp;
        root = c;
    }
}

void gguf_sort_recs(gguf_srec *r, size_t n, gguf_tie_fn tie, const void *ctx) {
    for (size_t s = n / 2; s-- > 0;) sift_down(r, s, n, tie, ctx);
    for (size_t end = n; end-- > 1;) {
        gguf_srec tmp = r[0];
        r[0] = r[end];
        r[end] = tmp;
        sift_down(r, 0, end, tie, ctx);
    }
}

uint64_t gguf_key8(const char *p, uint64_t n) {
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
        uint64_t es = gguf_vtype_size(kv->type);
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
    kv->arr_type = gguf_ld_u32(r->p + r->pos);
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
        uint64_t es = gguf_vtype_size(kv->arr_type), bytes;
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
    char what[GGUF_SHOW + 48];
    laya_status st;
    for (uint64_t i = 0; i < f->n_kv; i++) {
        gguf_kv *kv = &f->kv[i];
        snprintf(what, sizeof what, "kv %" PRIu64 " key", i);
        if ((st = rd_str(r, &kv->key, what))) return st;
        const char *bad = gguf_name_problem((const uint8_t *)kv->key.p, kv->key.n);
        if (bad) return failf(r, LAYA_ERR_FORMAT, "kv %" PRIu64 ": key %s", i, bad);
        snprintf(what, sizeof what, "kv %" PRIu64 " '%.*s'", i, Q(kv->key));
        if (!rd_has(r, 4))
            return failf(r, LAYA_ERR_FORMAT, "%s: file ends inside the value type at offset %" PRIu64
                         " (size %" PRIu64 ")", what, r->pos, r->size);
        kv->type = gguf_ld_u32(r->p + r->pos);
        r->pos += 4;
        if ((st = parse_value(r, kv, what))) return st;
    }
    return LAYA_OK;
}

static laya_status parse_tensor_infos(rd *r, gguf_file *f) {
    char what[GGUF_SHOW + 48];
    laya_status st;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->t[i];
        snprintf(what, sizeof what, "tensor %" PRIu64 " name", i);
        if ((st = rd_str(r, &t->name, what))) return st;
        const char *bad = gguf_name_problem((const uint8_t *)t->name.p, t->name.n);
        if (bad) return failf(r, LAYA_ERR_FORMAT, "tensor %" PRIu64 ": name %s", i, bad);
        snprintf(what, sizeof what, "tensor '%.*s'", Q(t->name));
        if (!rd_has(r, 4))
            return failf(r, LAYA_ERR_FORMAT, "%s: file ends inside n_dims at offset %" PRIu64
                         " (size %" PRIu64 ")", what, r->pos, r->size);
        t->n_dims = gguf_ld_u32(r->p + r->pos);
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
        t->type = gguf_ld_u32(r->p + r->pos);
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
    f->alignment = GGUF_DEFAULT_ALIGN;
    const gguf_kv *kv = gguf_find_kv(f, "general.alignment");
    if (!kv) return LAYA_OK;
    if (kv->type != GGUF_U32)
        return failf(r, LAYA_ERR_FORMAT, "general.alignment has type %s, expected u32", gguf_vtype_name(kv->type));
    uint32_t a = gguf_ld_u32(kv->data);
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
static laya_status check_overlaps(rd *r, gguf_file *f, gguf_srec *s) {
    size_t n = (size_t)f->n_tensors;
    for (size_t i = 0; i < n; i++) s[i] = (gguf_srec){f->t[i].offset, i};
    gguf_sort_recs(s, n, tie_index, NULL);
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
    f->version = gguf_ld_u32(r->p + 4);
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
    for (size_t i = 0; i < f->n_kv; i++) f->scratch[i] = (gguf_srec){gguf_key8(f->kv[i].key.p, f->kv[i].key.n), i};
    gguf_sort_recs(f->scratch, (size_t)f->n_kv, cmp_kv_key, f->kv);
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
    for (size_t i = 0; i < f->n_tensors; i++) f->scratch[i] = (gguf_srec){gguf_key8(f->t[i].name.p, f->t[i].name.n), i};
    gguf_sort_recs(f->scratch, (size_t)f->n_tensors, cmp_t_name, f->t);
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
    if (!gguf_host_is_le())
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
    case GGUF_U32: *uv = gguf_ld_u32(p); return 1;
    case GGUF_U64: *uv = ld_u64(p); return 1;
    case GGUF_I8: *sv = (int8_t)p[0]; break;
    case GGUF_I16: *sv = (int16_t)ld_u16(p); break;
    case GGUF_I32: *sv = (int32_t)gguf_ld_u32(p); break;
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
    uint64_t es = gguf_vtype_size(kv->arr_type);
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
