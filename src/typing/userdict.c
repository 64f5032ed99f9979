/* userdict.c — the user dictionary: a sorted in-memory table for lookups, and a snapshot + journal file
 * with crc-checked records (format in userdict.h). Every mutation locks PATH.lock, catches up with the
 * file, appends one write of records and fsyncs; a journal grown past the snapshot is compacted by
 * write + fsync + rename + fsync of the directory. Not here: scoring, sensitive-field policy. */
#include "typing/userdict.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/common.h"
#include "base/unicode.h"

#define HDR_BYTES 40
#define REC_HEAD 16
#define REC_MAX (REC_HEAD + UD_WORD_MAX + 4)
#define FILE_MAX ((uint64_t)1 << 28) /* refuse to read more: 2^20 entries fit several times over */
#define JOURNAL_MIN_COMPACT 65536    /* compact when the journal exceeds this and the snapshot */
#define LEARN_TEXT_MAX 4096
enum { OP_SET = 1, OP_DEL = 2 };
#define F_CONT 0x8000 /* record flag: more records of the same call follow (a call's records apply together) */
static const char MAGIC[8] = {'L', 'A', 'Y', 'A', 'U', 'D', 'I', 'C'};

typedef struct slot {
    ud_entry e;
    uint32_t epoch; /* == d->epoch: touched by the current call, so not an eviction victim */
} slot;

struct ud_dict {
    char *path, *lock_path, *tmp_path, *bad_path, *dir_path;
    int lock_fd;
    ud_params p;
    slot *pool;         /* entries; free slots are listed in free_ids */
    uint32_t *order;    /* pool indices of live entries, sorted by word bytes */
    uint32_t *free_ids;
    uint32_t n, n_free, cap; /* live entries, free slots, slots allocated */
    uint32_t epoch;
    /* What memory reflects of the file: its identity, and the offset after the last good record. */
    int have_file;
    dev_t dev;
    ino_t ino;
    uint64_t gen, end, snap_end, torn;
    uint32_t journal_records;
    int recovered;
    char msg[LAYA_ERR_MSG_MAX];
};

/* ---- small helpers -------------------------------------------------------------------------------- */

/* CRC-32 (IEEE, as zlib), table-driven: loading is mostly checksumming. */
static const uint32_t crc_table[256] = {
        0x00000000, 0x77073096, 0xEE0E612C, 0x990951BA, 0x076DC419, 0x706AF48F, 0xE963A535, 0x9E6495A3,
        0x0EDB8832, 0x79DCB8A4, 0xE0D5E91E, 0x97D2D988, 0x09B64C2B, 0x7EB17CBD, 0xE7B82D07, 0x90BF1D91,
        0x1DB71064, 0x6AB020F2, 0xF3B97148, 0x84BE41DE, 0x1ADAD47D, 0x6DDDE4EB, 0xF4D4B551, 0x83D385C7,
        0x136C9856, 0x646BA8C0, 0xFD62F97A, 0x8A65C9EC, 0x14015C4F, 0x63066CD9, 0xFA0F3D63, 0x8D080DF5,
        0x3B6E20C8, 0x4C69105E, 0xD56041E4, 0xA2677172, 0x3C03E4D1, 0x4B04D447, 0xD20D85FD, 0xA50AB56B,
        0x35B5A8FA, 0x42B2986C, 0xDBBBC9D6, 0xACBCF940, 0x32D86CE3, 0x45DF5C75, 0xDCD60DCF, 0xABD13D59,
        0x26D930AC, 0x51DE003A, 0xC8D75180, 0xBFD06116, 0x21B4F4B5, 0x56B3C423, 0xCFBA9599, 0xB8BDA50F,
        0x2802B89E, 0x5F058808, 0xC60CD9B2, 0xB10BE924, 0x2F6F7C87, 0x58684C11, 0xC1611DAB, 0xB6662D3D,
        0x76DC4190, 0x01DB7106, 0x98D220BC, 0xEFD5102A, 0x71B18589, 0x06B6B51F, 0x9FBFE4A5, 0xE8B8D433,
        0x7807C9A2, 0x0F00F934, 0x9609A88E, 0xE10E9818, 0x7F6A0DBB, 0x086D3D2D, 0x91646C97, 0xE6635C01,
        0x6B6B51F4, 0x1C6C6162, 0x856530D8, 0xF262004E, 0x6C0695ED, 0x1B01A57B, 0x8208F4C1, 0xF50FC457,
        0x65B0D9C6, 0x12B7E950, 0x8BBEB8EA, 0xFCB9887C, 0x62DD1DDF, 0x15DA2D49, 0x8CD37CF3, 0xFBD44C65,
        0x4DB26158, 0x3AB551CE, 0xA3BC0074, 0xD4BB30E2, 0x4ADFA541, 0x3DD895D7, 0xA4D1C46D, 0xD3D6F4FB,
        0x4369E96A, 0x346ED9FC, 0xAD678846, 0xDA60B8D0, 0x44042D73, 0x33031DE5, 0xAA0A4C5F, 0xDD0D7CC9,
        0x5005713C, 0x270241AA, 0xBE0B1010, 0xC90C2086, 0x5768B525, 0x206F85B3, 0xB966D409, 0xCE61E49F,
        0x5EDEF90E, 0x29D9C998, 0xB0D09822, 0xC7D7A8B4, 0x59B33D17, 0x2EB40D81, 0xB7BD5C3B, 0xC0BA6CAD,
        0xEDB88320, 0x9ABFB3B6, 0x03B6E20C, 0x74B1D29A, 0xEAD54739, 0x9DD277AF, 0x04DB2615, 0x73DC1683,
        0xE3630B12, 0x94643B84, 0x0D6D6A3E, 0x7A6A5AA8, 0xE40ECF0B, 0x9309FF9D, 0x0A00AE27, 0x7D079EB1,
        0xF00F9344, 0x8708A3D2, 0x1E01F268, 0x6906C2FE, 0xF762575D, 0x806567CB, 0x196C3671, 0x6E6B06E7,
        0xFED41B76, 0x89D32BE0, 0x10DA7A5A, 0x67DD4ACC, 0xF9B9DF6F, 0x8EBEEFF9, 0x17B7BE43, 0x60B08ED5,
        0xD6D6A3E8, 0xA1D1937E, 0x38D8C2C4, 0x4FDFF252, 0xD1BB67F1, 0xA6BC5767, 0x3FB506DD, 0x48B2364B,
        0xD80D2BDA, 0xAF0A1B4C, 0x36034AF6, 0x41047A60, 0xDF60EFC3, 0xA867DF55, 0x316E8EEF, 0x4669BE79,
        0xCB61B38C, 0xBC66831A, 0x256FD2A0, 0x5268E236, 0xCC0C7795, 0xBB0B4703, 0x220216B9, 0x5505262F,
        0xC5BA3BBE, 0xB2BD0B28, 0x2BB45A92, 0x5CB36A04, 0xC2D7FFA7, 0xB5D0CF31, 0x2CD99E8B, 0x5BDEAE1D,
        0x9B64C2B0, 0xEC63F226, 0x756AA39C, 0x026D930A, 0x9C0906A9, 0xEB0E363F, 0x72076785, 0x05005713,
        0x95BF4A82, 0xE2B87A14, 0x7BB12BAE, 0x0CB61B38, 0x92D28E9B, 0xE5D5BE0D, 0x7CDCEFB7, 0x0BDBDF21,
        0x86D3D2D4, 0xF1D4E242, 0x68DDB3F8, 0x1FDA836E, 0x81BE16CD, 0xF6B9265B, 0x6FB077E1, 0x18B74777,
        0x88085AE6, 0xFF0F6A70, 0x66063BCA, 0x11010B5C, 0x8F659EFF, 0xF862AE69, 0x616BFFD3, 0x166CCF45,
        0xA00AE278, 0xD70DD2EE, 0x4E048354, 0x3903B3C2, 0xA7672661, 0xD06016F7, 0x4969474D, 0x3E6E77DB,
        0xAED16A4A, 0xD9D65ADC, 0x40DF0B66, 0x37D83BF0, 0xA9BCAE53, 0xDEBB9EC5, 0x47B2CF7F, 0x30B5FFE9,
        0xBDBDF21C, 0xCABAC28A, 0x53B39330, 0x24B4A3A6, 0xBAD03605, 0xCDD70693, 0x54DE5729, 0x23D967BF,
        0xB3667A2E, 0xC4614AB8, 0x5D681B02, 0x2A6F2B94, 0xB40BBE37, 0xC30C8EA1, 0x5A05DF1B, 0x2D02EF8D,
};

static uint32_t crc32_le(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = (c >> 8) ^ crc_table[(c ^ p[i]) & 0xFF];
    return ~c;
}

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static int wb_reserve(wbuf *b, size_t more) {
    if (b->cap - b->n >= more) return 1;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap - b->n < more) {
        if (cap > SIZE_MAX / 2) return 0;
        cap *= 2;
    }
    uint8_t *q = laya_malloc(cap);
    if (!q) return 0;
    if (b->n) memcpy(q, b->p, b->n);
    laya_free(b->p);
    b->p = q;
    b->cap = cap;
    return 1;
}

static int put_rec(wbuf *b, int op, const ud_entry *e) {
    if (!wb_reserve(b, REC_MAX)) return 0;
    uint8_t *r = b->p + b->n;
    uint32_t boost;
    memcpy(&boost, &e->boost, 4);
    r[0] = (uint8_t)op;
    r[1] = e->len;
    r[2] = (uint8_t)e->flags;
    r[3] = (uint8_t)(e->flags >> 8);
    put32(r + 4, op == OP_SET ? e->count : 0);
    put32(r + 8, op == OP_SET ? e->last_used : 0);
    put32(r + 12, op == OP_SET ? boost : 0);
    memcpy(r + REC_HEAD, e->word, e->len);
    put32(r + REC_HEAD + e->len, crc32_le(r, REC_HEAD + (size_t)e->len));
    b->n += REC_HEAD + (size_t)e->len + 4;
    return 1;
}

/* A word is 1..UD_WORD_MAX bytes of valid UTF-8, no control characters, single inner spaces only. */
static int word_ok(const char *w, size_t n) {
    if (n == 0 || n > UD_WORD_MAX || !uni_utf8_valid(w, n)) return 0;
    if (w[0] == ' ' || w[n - 1] == ' ') return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (c < 0x20 || c == 0x7F) return 0;
        if (c == ' ' && w[i + 1] == ' ') return 0;
    }
    return 1;
}

/* 1 complete and good (*rl set), 0 incomplete (the file ends inside it), -1 bad. */
static int parse_rec(const uint8_t *r, size_t avail, int *op, ud_entry *e, size_t *rl, int check) {
    if (avail < REC_HEAD) return 0;
    if ((r[0] != OP_SET && r[0] != OP_DEL) || r[1] == 0 || r[1] > UD_WORD_MAX) return -1;
    size_t len = r[1], n = REC_HEAD + len + 4;
    if (avail < n) return 0;
    if (check && crc32_le(r, REC_HEAD + len) != get32(r + REC_HEAD + len)) return -1;
    memset(e, 0, sizeof *e);
    *op = r[0];
    e->len = (uint8_t)len;
    e->flags = (uint16_t)(r[2] | r[3] << 8);
    e->count = get32(r + 4);
    e->last_used = get32(r + 8);
    uint32_t bb = get32(r + 12);
    memcpy(&e->boost, &bb, 4);
    memcpy(e->word, r + REC_HEAD, len);
    e->word[len] = 0;
    *rl = n;
    if (!check) return 1;
    /* A good checksum over bad content means a broken writer, not a crash: report it. */
    if (!word_ok(e->word, len) || (e->flags & ~(UD_F_USER | UD_F_PHRASE | F_CONT)) || !isfinite(e->boost)) return -1;
    *rl = n;
    return 1;
}

static int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* fmt has two %s: the path, then strerror(errno). */
static laya_status fail(ud_dict *d, laya_status st, const char *fmt, const char *a) {
    snprintf(d->msg, sizeof d->msg, fmt, a, strerror(errno));
    return st;
}

static laya_status nomem(ud_dict *d) {
    snprintf(d->msg, sizeof d->msg, "%s: out of memory", d->path);
    return LAYA_ERR_NOMEM;
}

static int read_full(int fd, uint8_t *p, size_t n, uint64_t off) {
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 1;
}

static int write_full(int fd, const uint8_t *p, size_t n, uint64_t off, size_t chunk) {
    while (n) {
        size_t k = chunk && n > chunk ? chunk : n;
        ssize_t r = pwrite(fd, p, k, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 1;
}

static void lock(ud_dict *d, int how) {
    while (flock(d->lock_fd, how) < 0 && errno == EINTR) {}
}

/* ---- the in-memory table -------------------------------------------------------------------------- */

static int cmp_word(const ud_entry *e, const char *w, size_t n) {
    size_t m = e->len < n ? e->len : n;
    int c = memcmp(e->word, w, m);
    if (c) return c;
    return (e->len > n) - (e->len < n);
}

/* <0: the word sorts before every string starting with p; 0: it starts with p; >0: after. */
static int cmp_prefix(const ud_entry *e, const char *p, size_t n) {
    size_t m = e->len < n ? e->len : n;
    int c = memcmp(e->word, p, m);
    if (c) return c;
    return e->len < n ? -1 : 0;
}

static ud_entry *at(const ud_dict *d, uint32_t i) { return &d->pool[d->order[i]].e; }

/* First position whose word is >= w. */
static uint32_t lower(const ud_dict *d, const char *w, size_t n) {
    uint32_t lo = 0, hi = d->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cmp_word(at(d, mid), w, n) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int find(const ud_dict *d, const char *w, size_t n, uint32_t *pos) {
    *pos = lower(d, w, n);
    return *pos < d->n && cmp_word(at(d, *pos), w, n) == 0;
}

static void clear_mem(ud_dict *d) {
    d->n = 0;
    d->n_free = d->cap;
    for (uint32_t i = 0; i < d->cap; i++) d->free_ids[i] = d->cap - 1 - i;
}

static int grow(ud_dict *d) {
    if (d->n_free) return 1;
    uint32_t cap = d->cap ? d->cap * 2 : 256;
    if (cap > UD_LIMIT_ENTRIES + 8) cap = UD_LIMIT_ENTRIES + 8;
    if (cap <= d->cap) return 0;
    slot *pool = laya_calloc(cap, sizeof *pool);
    uint32_t *order = laya_calloc(cap, sizeof *order), *fr = laya_calloc(cap, sizeof *fr);
    if (!pool || !order || !fr) {
        laya_free(pool), laya_free(order), laya_free(fr);
        return 0;
    }
    if (d->cap) {
        memcpy(pool, d->pool, d->cap * sizeof *pool);
        memcpy(order, d->order, d->n * sizeof *order);
    }
    for (uint32_t i = cap; i > d->cap; i--) fr[d->n_free++] = i - 1;
    laya_free(d->pool), laya_free(d->order), laya_free(d->free_ids);
    d->pool = pool, d->order = order, d->free_ids = fr, d->cap = cap;
    return 1;
}

/* Set the entry for e->word to *e (insert if new). 0 on out of memory or the hard limit. */
static int mem_set(ud_dict *d, const ud_entry *e) {
    uint32_t pos;
    if (find(d, e->word, e->len, &pos)) {
        slot *s = &d->pool[d->order[pos]];
        s->e = *e;
        s->epoch = d->epoch;
        return 1;
    }
    if (d->n >= UD_LIMIT_ENTRIES || !grow(d)) return 0;
    uint32_t id = d->free_ids[--d->n_free];
    d->pool[id].e = *e;
    d->pool[id].epoch = d->epoch;
    memmove(d->order + pos + 1, d->order + pos, (d->n - pos) * sizeof *d->order);
    d->order[pos] = id;
    d->n++;
    return 1;
}

static void mem_del_at(ud_dict *d, uint32_t pos) {
    d->free_ids[d->n_free++] = d->order[pos];
    memmove(d->order + pos, d->order + pos + 1, (d->n - pos - 1) * sizeof *d->order);
    d->n--;
}

static void mem_del(ud_dict *d, const char *w, size_t n) {
    uint32_t pos;
    if (find(d, w, n, &pos)) mem_del_at(d, pos);
}

/* The learned entry to evict: lowest count, then least recently used; never a user word or one touched by
 * the current call. UINT32_MAX if none. */
static uint32_t victim(const ud_dict *d) {
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < d->n; i++) {
        const slot *s = &d->pool[d->order[i]];
        if ((s->e.flags & UD_F_USER) || s->epoch == d->epoch) continue;
        if (best == UINT32_MAX) { best = i; continue; }
        const ud_entry *b = at(d, best);
        if (s->e.count < b->count || (s->e.count == b->count && s->e.last_used < b->last_used)) best = i;
    }
    return best;
}

/* ---- reading the file ----------------------------------------------------------------------------- */

/* Apply the records in buf[0..n) (file offsets base..base+n). In the journal, the records of one call (a
 * batch: F_CONT on all but its last) apply together, and a batch cut short by the end of the file is a torn
 * tail: it is ignored and *good is where it starts. A bad record with data after it is corruption. The
 * snapshot holds SET records only. */
static laya_status apply_records(ud_dict *d, const uint8_t *buf, size_t n, uint64_t base, int journal,
                                 size_t *good, uint32_t *n_rec) {
    size_t o = 0, batch = 0;
    *n_rec = 0;
    *good = 0;
    while (o < n) {
        int op = 0;
        size_t rl = 0;
        ud_entry e;
        int r = parse_rec(buf + o, n - o, &op, &e, &rl, 1);
        if (r == 0 && journal) return LAYA_OK; /* incomplete last record: a crash during an append */
        if (r < 0 && journal && all_zero(buf + o, n - o)) return LAYA_OK; /* zeros after power loss */
        if (r < 0 && journal && buf[o] >= 1 && buf[o] <= 2 && buf[o + 1] >= 1 && buf[o + 1] <= UD_WORD_MAX &&
            o + REC_HEAD + buf[o + 1] + 4 == n)
            return LAYA_OK; /* the last record, written only in part before a power loss */
        if (r <= 0 || (!journal && (op != OP_SET || (e.flags & F_CONT)))) {
            snprintf(d->msg, sizeof d->msg, "%s: %s record at byte %llu", d->path,
                     r == 0 ? "truncated" : "corrupt", (unsigned long long)(base + o));
            return LAYA_ERR_FORMAT;
        }
        o += rl;
        if (e.flags & F_CONT) continue;
        /* A batch is complete: apply it (parsing again, as it checked out). */
        for (size_t q = batch; q < o; q += rl) {
            parse_rec(buf + q, n - q, &op, &e, &rl, 0);
            if (op == OP_SET) {
                e.flags = (uint16_t)((e.flags & UD_F_USER) | (memchr(e.word, ' ', e.len) ? UD_F_PHRASE : 0));
                if (!mem_set(d, &e)) {
                    snprintf(d->msg, sizeof d->msg, "%s: more than %u entries or out of memory", d->path,
                             UD_LIMIT_ENTRIES);
                    return d->n >= UD_LIMIT_ENTRIES ? LAYA_ERR_CAPACITY : LAYA_ERR_NOMEM;
                }
            } else {
                mem_del(d, e.word, e.len);
            }
            (*n_rec)++;
        }
        batch = *good = o;
    }
    return LAYA_OK;
}

/* Read the whole file from scratch. With recover, what was applied before an error stays in memory. */
static laya_status full_load(ud_dict *d, int fd, const struct stat *st) {
    clear_mem(d);
    d->have_file = 0;
    d->torn = 0;
    uint64_t size = (uint64_t)st->st_size;
    if (size > FILE_MAX) {
        snprintf(d->msg, sizeof d->msg, "%s: %llu bytes, more than a dictionary can hold", d->path,
                 (unsigned long long)size);
        return LAYA_ERR_FORMAT;
    }
    if (size < HDR_BYTES) {
        snprintf(d->msg, sizeof d->msg, "%s: truncated header (%llu bytes)", d->path, (unsigned long long)size);
        return LAYA_ERR_FORMAT;
    }
    uint8_t *buf = laya_malloc((size_t)size);
    if (!buf) return nomem(d);
    laya_status ret = LAYA_OK;
    if (!read_full(fd, buf, (size_t)size, 0)) {
        ret = fail(d, LAYA_ERR_IO, "%s: read: %s", d->path);
        goto out;
    }
    if (memcmp(buf, MAGIC, 8) != 0) {
        snprintf(d->msg, sizeof d->msg, "%s: not a Laya user dictionary (bad magic)", d->path);
        ret = LAYA_ERR_FORMAT;
        goto out;
    }
    if (crc32_le(buf, HDR_BYTES - 4) != get32(buf + HDR_BYTES - 4)) {
        snprintf(d->msg, sizeof d->msg, "%s: header checksum mismatch", d->path);
        ret = LAYA_ERR_FORMAT;
        goto out;
    }
    if (get32(buf + 8) != 1) {
        snprintf(d->msg, sizeof d->msg, "%s: format version %u, this build reads version 1", d->path,
                 get32(buf + 8));
        ret = LAYA_ERR_UNSUPPORTED;
        goto out;
    }
    uint32_t n_snap = get32(buf + 12), snap_bytes = get32(buf + 24);
    uint64_t gen = get64(buf + 16);
    size_t good = 0;
    uint32_t n_rec = 0;
    if (snap_bytes > size - HDR_BYTES) {
        snprintf(d->msg, sizeof d->msg, "%s: truncated: the snapshot needs %u bytes, the file has %llu",
                 d->path, snap_bytes, (unsigned long long)(size - HDR_BYTES));
        ret = LAYA_ERR_FORMAT;
        if (d->p.recover) apply_records(d, buf + HDR_BYTES, (size_t)(size - HDR_BYTES), HDR_BYTES, 0, &good, &n_rec);
        goto out;
    }
    if (crc32_le(buf + HDR_BYTES, snap_bytes) != get32(buf + 28)) {
        snprintf(d->msg, sizeof d->msg, "%s: snapshot checksum mismatch", d->path);
        ret = LAYA_ERR_FORMAT;
        if (d->p.recover) apply_records(d, buf + HDR_BYTES, snap_bytes, HDR_BYTES, 0, &good, &n_rec);
        goto out;
    }
    ret = apply_records(d, buf + HDR_BYTES, snap_bytes, HDR_BYTES, 0, &good, &n_rec);
    if (ret == LAYA_OK && (good != snap_bytes || n_rec != n_snap)) {
        snprintf(d->msg, sizeof d->msg, "%s: the snapshot holds %u records, its header says %u", d->path,
                 n_rec, n_snap);
        ret = LAYA_ERR_FORMAT;
    }
    if (ret != LAYA_OK) goto out;
    uint64_t js = HDR_BYTES + (uint64_t)snap_bytes;
    ret = apply_records(d, buf + js, (size_t)(size - js), js, 1, &good, &n_rec);
    if (ret != LAYA_OK) goto out;
    d->have_file = 1;
    d->dev = st->st_dev;
    d->ino = st->st_ino;
    d->gen = gen;
    d->snap_end = js;
    d->end = js + good;
    d->torn = size - d->end;
    d->journal_records = n_rec;
out:
    laya_free(buf);
    return ret;
}

/* Bring memory up to date with the file open as fd (-1: there is no file). */
static laya_status sync_fd(ud_dict *d, int fd) {
    if (fd < 0) {
        clear_mem(d);
        d->have_file = 0;
        d->torn = 0;
        return LAYA_OK;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) return fail(d, LAYA_ERR_IO, "%s: fstat: %s", d->path);
    uint64_t size = (uint64_t)st.st_size;
    if (d->have_file && st.st_dev == d->dev && st.st_ino == d->ino && size >= d->end && size <= FILE_MAX) {
        /* Same file, possibly grown: its generation tells a file rewritten under a reused inode apart. */
        uint8_t h[HDR_BYTES];
        if (read_full(fd, h, HDR_BYTES, 0) && crc32_le(h, HDR_BYTES - 4) == get32(h + HDR_BYTES - 4) &&
            get64(h + 16) == d->gen) {
            if (size == d->end) {
                d->torn = 0;
                return LAYA_OK;
            }
            size_t n = (size_t)(size - d->end), good = 0;
            uint8_t *buf = laya_malloc(n);
            if (!buf) return nomem(d);
            uint32_t n_rec = 0;
            laya_status st2 = LAYA_ERR_IO;
            if (read_full(fd, buf, n, d->end)) st2 = apply_records(d, buf, n, d->end, 1, &good, &n_rec);
            else fail(d, LAYA_ERR_IO, "%s: read: %s", d->path);
            laya_free(buf);
            if (st2 != LAYA_OK) {
                d->have_file = 0; /* the next call reloads everything */
                return st2;
            }
            d->end += good;
            d->torn = size - d->end;
            d->journal_records += n_rec;
            return LAYA_OK;
        }
    }
    return full_load(d, fd, &st);
}

static int open_data(ud_dict *d, int flags) {
    int fd;
    while ((fd = open(d->path, flags | O_CLOEXEC)) < 0 && errno == EINTR) {}
    return fd;
}

/* ---- writing -------------------------------------------------------------------------------------- */

static int fsync_ok(const ud_dict *d, int fd) { return d->p.no_fsync || fsync(fd) == 0; }

static uint64_t new_generation(const ud_dict *d) {
    static uint64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t g = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    g ^= (uint64_t)getpid() << 40 ^ (uint64_t)(uintptr_t)d ^ (++counter * 0x9E3779B97F4A7C15ull);
    return g ? g : 1;
}

/* Rewrite the file from memory: temp file, fsync, rename over PATH, fsync the directory. */
static laya_status write_snapshot(ud_dict *d) {
    wbuf b = {0};
    laya_status ret = LAYA_OK;
    int fd = -1;
    if (!wb_reserve(&b, HDR_BYTES)) goto nomem;
    b.n = HDR_BYTES;
    for (uint32_t i = 0; i < d->n; i++)
        if (!put_rec(&b, OP_SET, at(d, i))) goto nomem;
    uint64_t gen = new_generation(d);
    memcpy(b.p, MAGIC, 8);
    put32(b.p + 8, 1);
    put32(b.p + 12, d->n);
    put64(b.p + 16, gen);
    put32(b.p + 24, (uint32_t)(b.n - HDR_BYTES));
    put32(b.p + 28, crc32_le(b.p + HDR_BYTES, b.n - HDR_BYTES));
    put32(b.p + 32, 0);
    put32(b.p + 36, crc32_le(b.p, HDR_BYTES - 4));
    /* The temp name is fixed: writers hold the lock, and a temp file left by a crash is simply replaced. */
    while ((fd = open(d->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 && errno == EINTR) {}
    if (fd < 0) { ret = fail(d, LAYA_ERR_IO, "%s: %s", d->tmp_path); goto out; }
    struct stat st;
    if (!write_full(fd, b.p, b.n, 0, 0) || !fsync_ok(d, fd) || fstat(fd, &st) < 0) {
        ret = fail(d, LAYA_ERR_IO, "%s: write: %s", d->tmp_path);
        goto out;
    }
    close(fd);
    fd = -1;
    if (rename(d->tmp_path, d->path) < 0) { ret = fail(d, LAYA_ERR_IO, "%s: rename: %s", d->path); goto out; }
    if (!d->p.no_fsync) {
        int dfd = open(d->dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int ok = dfd >= 0 && fsync(dfd) == 0;
        if (dfd >= 0) close(dfd);
        if (!ok) { ret = fail(d, LAYA_ERR_IO, "%s: fsync: %s", d->dir_path); goto out; }
    }
    d->have_file = 1;
    d->dev = st.st_dev;
    d->ino = st.st_ino;
    d->gen = gen;
    d->snap_end = d->end = b.n;
    d->torn = 0;
    d->journal_records = 0;
    goto out;
nomem:
    ret = nomem(d);
out:
    if (fd >= 0) {
        close(fd);
        unlink(d->tmp_path);
    }
    laya_free(b.p);
    return ret;
}

/* A mutation: lock, catch up, let the caller change memory and fill b, then make it durable. */
typedef struct tx {
    int fd;
    wbuf b;
    uint32_t n_rec;
    size_t last; /* offset in b of the last record */
} tx;

/* Append a record to the call's batch, marking the one before it F_CONT (and fixing its checksum). */
static int tx_put(tx *t, int op, const ud_entry *e) {
    if (t->n_rec) {
        uint8_t *r = t->b.p + t->last;
        r[3] |= F_CONT >> 8;
        put32(r + REC_HEAD + r[1], crc32_le(r, REC_HEAD + (size_t)r[1]));
    }
    t->last = t->b.n;
    if (!put_rec(&t->b, op, e)) return 0;
    t->n_rec++;
    return 1;
}

static laya_status tx_begin(ud_dict *d, tx *t) {
    memset(t, 0, sizeof *t);
    lock(d, LOCK_EX);
    t->fd = open_data(d, O_RDWR);
    if (t->fd < 0 && errno != ENOENT) {
        laya_status st = fail(d, LAYA_ERR_IO, "%s: %s", d->path);
        lock(d, LOCK_UN);
        return st;
    }
    laya_status st = sync_fd(d, t->fd);
    if (st != LAYA_OK) {
        if (t->fd >= 0) close(t->fd);
        lock(d, LOCK_UN);
        return st;
    }
    d->epoch++;
    return LAYA_OK;
}

/* End a mutation that changed nothing. */
static void tx_abort(ud_dict *d, tx *t) {
    if (t->fd >= 0) close(t->fd);
    lock(d, LOCK_UN);
    laya_free(t->b.p);
}

/* Commit: append t->b (or rewrite everything if compact, or there is no file yet). On failure memory is
 * reloaded from the file, which still holds the state before the call. */
static laya_status tx_end(ud_dict *d, tx *t, laya_status st, int compact) {
    if (st == LAYA_OK && (t->b.n || compact)) {
        if (t->fd < 0 || compact || !d->have_file) {
            st = write_snapshot(d);
        } else {
            if (d->torn && ftruncate(t->fd, (off_t)d->end) < 0) st = fail(d, LAYA_ERR_IO, "%s: ftruncate: %s", d->path);
            else if (!write_full(t->fd, t->b.p, t->b.n, d->end, d->p.write_chunk) || !fsync_ok(d, t->fd))
                st = fail(d, LAYA_ERR_IO, "%s: append: %s", d->path);
            if (st == LAYA_OK) {
                d->end += t->b.n;
                d->torn = 0;
                d->journal_records += t->n_rec;
                uint64_t jb = d->end - d->snap_end;
                /* Durable already; compaction only bounds the file, so its failure is not the caller's. */
                if (jb > JOURNAL_MIN_COMPACT && jb > d->snap_end) write_snapshot(d);
            }
        }
    }
    if (st != LAYA_OK) {
        char keep[sizeof d->msg];
        memcpy(keep, d->msg, sizeof keep);
        d->have_file = 0;
        if (t->fd >= 0) close(t->fd);
        t->fd = open_data(d, O_RDONLY);
        sync_fd(d, t->fd);
        memcpy(d->msg, keep, sizeof keep);
    }
    if (t->fd >= 0) close(t->fd);
    lock(d, LOCK_UN);
    laya_free(t->b.p);
    return st;
}

static laya_status tx_set(ud_dict *d, tx *t, const ud_entry *e) {
    if (!mem_set(d, e) || !tx_put(t, OP_SET, e)) return nomem(d);
    return LAYA_OK;
}

/* Evict learned entries until one more fits under max_entries. */
static laya_status make_room(ud_dict *d, tx *t) {
    while (d->n >= d->p.max_entries) {
        uint32_t v = victim(d);
        if (v == UINT32_MAX) {
            snprintf(d->msg, sizeof d->msg, "%s: no room: max_entries %u, none evictable", d->path,
                     d->p.max_entries);
            return LAYA_ERR_CAPACITY;
        }
        if (!tx_put(t, OP_DEL, at(d, v))) return nomem(d);
        mem_del_at(d, v);
    }
    return LAYA_OK;
}

static uint32_t now32(void) {
    time_t t = time(NULL);
    return t < 0 ? 0 : (uint64_t)t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* Count + 1 on word (inserting it, evicting if needed). */
static laya_status bump(ud_dict *d, tx *t, const char *w, size_t n, int user, float boost) {
    uint32_t pos;
    ud_entry e;
    if (find(d, w, n, &pos)) {
        e = *at(d, pos);
    } else {
        laya_status st = make_room(d, t);
        if (st != LAYA_OK) return st;
        memset(&e, 0, sizeof e);
        memcpy(e.word, w, n);
        e.len = (uint8_t)n;
    }
    if (e.count < UINT32_MAX) e.count++;
    e.last_used = now32();
    e.flags = (uint16_t)((e.flags & UD_F_USER) | (user ? UD_F_USER : 0) | (memchr(w, ' ', n) ? UD_F_PHRASE : 0));
    if (user) e.boost = boost;
    return tx_set(d, t, &e);
}

/* ---- the API -------------------------------------------------------------------------------------- */

ud_params ud_default_params(void) {
    ud_params p = {0};
    p.max_entries = UD_DEFAULT_MAX_ENTRIES;
    p.learn_phrases = 1;
    return p;
}

static char *cat(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *s = laya_malloc(na + nb + 1);
    if (s) {
        memcpy(s, a, na);
        memcpy(s + na, b, nb + 1);
    }
    return s;
}

laya_status ud_open(const char *path, const ud_params *pp, ud_dict **out, char *err, size_t errlen) {
    if (out) *out = NULL;
    ud_params p = pp ? *pp : ud_default_params();
    if (p.max_entries == 0) p.max_entries = UD_DEFAULT_MAX_ENTRIES;
    if (!path || !*path || !out || p.max_entries > UD_LIMIT_ENTRIES)
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "ud_open: bad arguments");
    ud_dict *d = laya_calloc(1, sizeof *d);
    if (!d) return laya_err(err, errlen, LAYA_ERR_NOMEM, "ud_open: out of memory");
    d->lock_fd = -1;
    d->p = p;
    d->path = laya_strndup(path, strlen(path));
    d->lock_path = cat(path, ".lock");
    d->tmp_path = cat(path, ".tmp");
    d->bad_path = cat(path, ".corrupt");
    const char *slash = strrchr(path, '/');
    d->dir_path = slash ? laya_strndup(path, slash == path ? 1 : (size_t)(slash - path)) : laya_strndup(".", 1);
    if (!d->path || !d->lock_path || !d->tmp_path || !d->bad_path || !d->dir_path) {
        ud_free(d);
        return laya_err(err, errlen, LAYA_ERR_NOMEM, "ud_open: out of memory");
    }
    while ((d->lock_fd = open(d->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 && errno == EINTR) {}
    if (d->lock_fd < 0) {
        laya_status st = laya_err(err, errlen, LAYA_ERR_IO, "%s: %s", d->lock_path, strerror(errno));
        ud_free(d);
        return st;
    }
    lock(d, LOCK_EX);
    int fd = open_data(d, O_RDONLY);
    laya_status st = fd < 0 && errno != ENOENT ? fail(d, LAYA_ERR_IO, "%s: %s", d->path) : sync_fd(d, fd);
    if (fd >= 0) close(fd);
    if (st == LAYA_ERR_FORMAT && p.recover) {
        /* Keep the bytes for a post-mortem, and the records that checked out. */
        if (rename(d->path, d->bad_path) < 0) st = fail(d, LAYA_ERR_IO, "%s: rename: %s", d->path);
        else if ((st = write_snapshot(d)) == LAYA_OK) d->recovered = 1;
    }
    lock(d, LOCK_UN);
    if (st != LAYA_OK) {
        laya_err(err, errlen, st, "%s", d->msg);
        ud_free(d);
        return st;
    }
    *out = d;
    return LAYA_OK;
}

void ud_free(ud_dict *d) {
    if (!d) return;
    if (d->lock_fd >= 0) close(d->lock_fd);
    laya_free(d->path), laya_free(d->lock_path), laya_free(d->tmp_path), laya_free(d->bad_path);
    laya_free(d->dir_path);
    laya_free(d->pool), laya_free(d->order), laya_free(d->free_ids);
    laya_free(d);
}

const char *ud_error(const ud_dict *d) { return d ? d->msg : "no dictionary"; }

void ud_get_info(const ud_dict *d, ud_info *o) {
    memset(o, 0, sizeof *o);
    o->n_entries = d->n;
    o->journal_records = d->journal_records;
    o->file_bytes = d->have_file ? d->end + d->torn : 0;
    o->torn_bytes = d->torn;
    o->recovered = d->recovered;
}

laya_status ud_refresh(ud_dict *d) {
    if (!d) return LAYA_ERR_INVALID_ARG;
    lock(d, LOCK_SH);
    int fd = open_data(d, O_RDONLY);
    laya_status st = fd < 0 && errno != ENOENT ? fail(d, LAYA_ERR_IO, "%s: %s", d->path) : sync_fd(d, fd);
    if (fd >= 0) close(fd);
    lock(d, LOCK_UN);
    return st;
}

laya_status ud_add(ud_dict *d, const char *word, size_t len, float boost) {
    if (!d || !word || !word_ok(word, len) || !isfinite(boost)) {
        if (d) snprintf(d->msg, sizeof d->msg, "ud_add: not a valid word (UTF-8, 1..%d bytes)", UD_WORD_MAX);
        return LAYA_ERR_INVALID_ARG;
    }
    tx t;
    laya_status st = tx_begin(d, &t);
    if (st != LAYA_OK) return st;
    return tx_end(d, &t, bump(d, &t, word, len, 1, boost), 0);
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int lead_punct(char c) { return c && strchr("\"'([{<`*_", c) != NULL; }
static int trail_punct(char c) { return c && strchr(".,;:!?\"')]}>`*_", c) != NULL; }

laya_status ud_learn(ud_dict *d, const char *text, size_t len) {
    if (!d) return LAYA_ERR_INVALID_ARG;
    if (!text || len > LEARN_TEXT_MAX || !uni_utf8_valid(text, len)) {
        snprintf(d->msg, sizeof d->msg, "ud_learn: text is not valid UTF-8 of at most %d bytes", LEARN_TEXT_MAX);
        return LAYA_ERR_INVALID_ARG;
    }
    /* Split into words (spans of text), trimmed of punctuation around them. */
    struct { size_t o, n; } w[LEARN_TEXT_MAX / 2 + 1];
    size_t nw = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)text[i];
        if ((c < 0x20 && !is_space((char)c)) || c == 0x7F) {
            snprintf(d->msg, sizeof d->msg, "ud_learn: control character in text");
            return LAYA_ERR_INVALID_ARG;
        }
        if (is_space((char)c)) { i++; continue; }
        size_t s = i;
        while (i < len && !is_space(text[i])) i++;
        size_t e = i;
        while (s < e && lead_punct(text[s])) s++;
        while (e > s && trail_punct(text[e - 1])) e--;
        if (e == s) continue;
        for (size_t k = s; k < e; k++)
            if ((unsigned char)text[k] < 0x20 || text[k] == 0x7F) {
                snprintf(d->msg, sizeof d->msg, "ud_learn: control character in text");
                return LAYA_ERR_INVALID_ARG;
            }
        if (e - s > UD_WORD_MAX) {
            snprintf(d->msg, sizeof d->msg, "ud_learn: a word of %zu bytes (at most %d)", e - s, UD_WORD_MAX);
            return LAYA_ERR_INVALID_ARG;
        }
        w[nw].o = s;
        w[nw].n = e - s;
        nw++;
    }
    if (nw == 0) {
        snprintf(d->msg, sizeof d->msg, "ud_learn: no word in text");
        return LAYA_ERR_INVALID_ARG;
    }
    /* The phrase: from the first word's start to the last word's end, white space folded to one space. */
    char phrase[UD_WORD_MAX + 1];
    size_t np = 0;
    if (d->p.learn_phrases && nw > 1) {
        for (size_t i = w[0].o; i < w[nw - 1].o + w[nw - 1].n && np <= UD_WORD_MAX; i++) {
            if (is_space(text[i])) {
                if (phrase[np - 1] != ' ') phrase[np++] = ' ';
            } else {
                phrase[np++] = text[i];
            }
        }
        if (np > UD_WORD_MAX) np = 0; /* too long to be worth learning whole */
    }
    tx t;
    laya_status st = tx_begin(d, &t);
    if (st != LAYA_OK) return st;
    for (size_t i = 0; i < nw && st == LAYA_OK; i++) {
        int dup = 0; /* "the cat and the dog" learns "the" once */
        for (size_t k = 0; k < i && !dup; k++)
            dup = w[k].n == w[i].n && memcmp(text + w[k].o, text + w[i].o, w[i].n) == 0;
        if (!dup) st = bump(d, &t, text + w[i].o, w[i].n, 0, 0);
    }
    if (st == LAYA_OK && np) st = bump(d, &t, phrase, np, 0, 0);
    return tx_end(d, &t, st, 0);
}

/* 1 if phrase e contains w as a whole, space-delimited word. */
static int has_word(const ud_entry *e, const char *w, size_t n) {
    for (size_t i = 0; i + n <= e->len; i++)
        if ((i == 0 || e->word[i - 1] == ' ') && (i + n == e->len || e->word[i + n] == ' ') &&
            memcmp(e->word + i, w, n) == 0)
            return 1;
    return 0;
}

laya_status ud_forget(ud_dict *d, const char *word, size_t len) {
    if (!d) return LAYA_ERR_INVALID_ARG;
    if (!word || !word_ok(word, len)) {
        snprintf(d->msg, sizeof d->msg, "ud_forget: not a valid word");
        return LAYA_ERR_INVALID_ARG;
    }
    tx t;
    laya_status st = tx_begin(d, &t);
    if (st != LAYA_OK) return st;
    uint32_t erased = 0;
    for (uint32_t i = d->n; i-- > 0;) {
        const ud_entry *e = at(d, i);
        if (cmp_word(e, word, len) == 0 || ((e->flags & UD_F_PHRASE) && has_word(e, word, len))) {
            mem_del_at(d, i);
            erased++;
        }
    }
    if (!erased) {
        snprintf(d->msg, sizeof d->msg, "ud_forget: \"%.*s\" is not in the dictionary", (int)len, word);
        tx_abort(d, &t);
        return LAYA_ERR_NOT_FOUND;
    }
    /* Rewrite at once: an appended DEL would leave the word itself in the journal. */
    return tx_end(d, &t, LAYA_OK, 1);
}

laya_status ud_clear(ud_dict *d) {
    if (!d) return LAYA_ERR_INVALID_ARG;
    tx t;
    laya_status st = tx_begin(d, &t);
    if (st != LAYA_OK) return st;
    clear_mem(d);
    return tx_end(d, &t, LAYA_OK, 1);
}

laya_status ud_compact(ud_dict *d) {
    if (!d) return LAYA_ERR_INVALID_ARG;
    tx t;
    laya_status st = tx_begin(d, &t);
    if (st != LAYA_OK) return st;
    return tx_end(d, &t, LAYA_OK, 1);
}

const ud_entry *ud_lookup(const ud_dict *d, const char *word, size_t len) {
    uint32_t pos;
    if (!d || !word || len > UD_WORD_MAX || !find(d, word, len, &pos)) return NULL;
    return at(d, pos);
}

size_t ud_count(const ud_dict *d) { return d ? d->n : 0; }

const ud_entry *ud_at(const ud_dict *d, size_t i) { return d && i < d->n ? at(d, (uint32_t)i) : NULL; }

size_t ud_prefix(const ud_dict *d, const char *prefix, size_t len, size_t *first) {
    *first = 0;
    if (!d || (!prefix && len)) return 0;
    uint32_t lo = 0, hi = d->n;
    while (lo < hi) { /* first entry not before the prefix range */
        uint32_t mid = lo + (hi - lo) / 2;
        if (cmp_prefix(at(d, mid), prefix, len) < 0) lo = mid + 1;
        else hi = mid;
    }
    uint32_t a = lo;
    hi = d->n;
    while (lo < hi) { /* first entry after it */
        uint32_t mid = lo + (hi - lo) / 2;
        if (cmp_prefix(at(d, mid), prefix, len) <= 0) lo = mid + 1;
        else hi = mid;
    }
    *first = a;
    return lo - a;
}

static int better(const ud_entry *a, const ud_entry *b) {
    double sa = (double)a->count + a->boost, sb = (double)b->count + b->boost;
    return sa > sb || (sa == sb && a->last_used > b->last_used);
}

size_t ud_prefix_top(const ud_dict *d, const char *prefix, size_t len, const ud_entry **out, size_t cap) {
    size_t first, n = ud_prefix(d, prefix, len, &first), k = 0;
    if (!out) return 0;
    for (size_t i = first; i < first + n; i++) { /* insertion into the sorted top list */
        const ud_entry *e = at(d, (uint32_t)i);
        size_t j = k < cap ? k++ : cap;
        if (j == cap && (cap == 0 || !better(e, out[cap - 1]))) continue;
        if (j == cap) j = cap - 1;
        while (j > 0 && better(e, out[j - 1])) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = e;
    }
    return k;
}
