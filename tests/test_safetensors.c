/* test_safetensors.c — the safetensors reader: files written here and read back (every dtype, a scalar, an
 * empty and an 8-dim tensor, metadata), sharded directories with an index (symlinked shards included), the
 * malformed corpus in tests/fixtures/st_bad (expected status and message), every truncation of a valid file,
 * out-of-memory injection at every allocation, and 10^5 tensors. Runs from the repository root. */
#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc_hooks.h"
#include "check.h"
#include "base/common.h"
#include "io/safetensors.h"

static char g_dir[64]; /* scratch directory */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A growing byte buffer; the tests abort on allocation failure, which is not what they test. */
typedef struct { char *p; size_t n, cap; } buf;
static void b_put(buf *b, const void *p, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void b_str(buf *b, const char *s) { b_put(b, s, strlen(s)); }
static void b_fmt(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void b_fmt(buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    b_put(b, tmp, (size_t)n);
}

/* A tiny safetensors writer: tensors laid out back to back in the order given. */
typedef struct { const char *name; uint32_t dtype; uint32_t n_dims; int64_t shape[8]; } wt;

static uint64_t wt_bytes(const wt *t) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) n *= (uint64_t)t->shape[d];
    return n * st_dtype_size(t->dtype);
}

/* Data byte j of tensor i: something that tells tensors apart. */
static uint8_t pat(size_t i, uint64_t j) { return (uint8_t)(i * 31 + j * 7 + 1); }

static buf st_build(const wt *ts, size_t n, const char *meta_json) {
    buf h = {0}, out = {0};
    b_str(&h, "{");
    if (meta_json) b_fmt(&h, "\"__metadata__\":%s", meta_json);
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        b_fmt(&h, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", (i || meta_json) ? "," : "", ts[i].name,
              st_dtype_name(ts[i].dtype));
        for (uint32_t d = 0; d < ts[i].n_dims; d++) b_fmt(&h, "%s%" PRId64, d ? "," : "", ts[i].shape[d]);
        uint64_t sz = wt_bytes(&ts[i]);
        b_fmt(&h, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", off, off + sz);
        off += sz;
    }
    b_str(&h, "}");
    while ((8 + h.n) % 8) b_str(&h, " "); /* the reference writer's padding */
    uint64_t hn = h.n;
    b_put(&out, &hn, 8);
    b_put(&out, h.p, h.n);
    for (size_t i = 0; i < n; i++)
        for (uint64_t j = 0; j < wt_bytes(&ts[i]); j++) {
            uint8_t v = pat(i, j);
            b_put(&out, &v, 1);
        }
    free(h.p);
    return out;
}

static int write_all(const char *path, const void *p, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return 0;
    int ok = fwrite(p, 1, n, fp) == n;
    return fclose(fp) == 0 && ok;
}

static char *path2(const char *a, const char *b) {
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", a, b);
    return p[k];
}

/* Every accessor agrees with ts (written with st_build): order by name, lookup, fields, bytes. */
static void check_set(const st_set *s, const wt *ts, size_t n, const char *what) {
    CHECK(st_count(s) == n, "%s: count %" PRIu64 " != %zu", what, st_count(s), n);
    for (uint64_t i = 1; i < st_count(s); i++)
        CHECK(strcmp(st_at(s, i - 1)->name, st_at(s, i)->name) < 0, "%s: not sorted at %" PRIu64, what, i);
    CHECK(st_at(s, n) == NULL, "%s: st_at past the end", what);
    for (size_t i = 0; i < n; i++) {
        const st_tensor *t = st_find(s, ts[i].name);
        CHECK(t != NULL, "%s: '%s' not found", what, ts[i].name);
        if (!t) continue;
        CHECK(!strcmp(t->name, ts[i].name) && t->dtype == ts[i].dtype && t->n_dims == ts[i].n_dims,
              "%s: '%s' fields", what, ts[i].name);
        CHECK(!memcmp(t->shape, ts[i].shape, sizeof t->shape), "%s: '%s' shape", what, ts[i].name);
        CHECK(t->size == wt_bytes(&ts[i]), "%s: '%s' size %" PRIu64, what, ts[i].name, t->size);
        int same = 1;
        for (uint64_t j = 0; j < t->size; j++) same &= ((const uint8_t *)t->data)[j] == pat(i, j);
        CHECK(same, "%s: '%s' data", what, ts[i].name);
        CHECK(t->file < st_file_count(s), "%s: file index", what);
    }
    CHECK(st_find(s, "no.such.tensor") == NULL && st_find(s, "") == NULL, "%s: absent names", what);
}

static const wt g_mixed[] = {
    {"t.bool", ST_BOOL, 1, {3}},  {"t.u8", ST_U8, 1, {5}},      {"t.i8", ST_I8, 2, {2, 3}},
    {"t.u16", ST_U16, 1, {3}},    {"t.i16", ST_I16, 1, {3}},    {"t.f16", ST_F16, 2, {2, 2}},
    {"t.bf16", ST_BF16, 1, {7}},  {"t.u32", ST_U32, 1, {3}},    {"t.i32", ST_I32, 1, {1}},
    {"t.f32", ST_F32, 2, {3, 2}}, {"t.u64", ST_U64, 1, {2}},    {"t.i64", ST_I64, 1, {2}},
    {"t.f64", ST_F64, 1, {2}},    {"t.f8e4", ST_F8_E4M3, 1, {9}}, {"t.f8e5", ST_F8_E5M2, 1, {4}},
    {"scalar", ST_F32, 0, {0}},   {"empty", ST_F32, 2, {0, 4}}, {"eight", ST_U8, 8, {1, 2, 1, 2, 1, 2, 1, 2}},
    {"z.last", ST_F16, 1, {3}}, /* non-empty last, so that every truncation cuts into some tensor */
};
#define N_MIXED (sizeof g_mixed / sizeof *g_mixed)

static void test_dtypes(void) {
    static const char *names[] = {"BOOL", "U8",  "I8",  "U16", "I16", "F16",     "BF16",   "U32",
                                  "I32",  "F32", "U64", "I64", "F64", "F8_E4M3", "F8_E5M2"};
    static const size_t sizes[] = {1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8, 1, 1};
    for (uint32_t i = 0; i < ST_DTYPE_COUNT; i++)
        CHECK(!strcmp(st_dtype_name(i), names[i]) && st_dtype_size(i) == sizes[i], "dtype %u", i);
    CHECK(!strcmp(st_dtype_name(ST_DTYPE_COUNT), "unknown") && st_dtype_size(ST_DTYPE_COUNT) == 0, "unknown dtype");
    CHECK(st_dtype_size(UINT32_MAX) == 0, "dtype u32max");
}

static void test_roundtrip(void) {
    buf f = st_build(g_mixed, N_MIXED, "{\"format\":\"pt\",\"note\":\"caf\\u00e9\"}");
    char *path = path2(g_dir, "mixed.safetensors"), err[LAYA_ERR_MSG_MAX];
    CHECK(write_all(path, f.p, f.n), "write");
    st_set *s = NULL;
    laya_status st = st_open_file(path, &s, err, sizeof err);
    CHECK(st == LAYA_OK, "open: %s", err);
    if (!st) {
        check_set(s, g_mixed, N_MIXED, "file");
        CHECK(st_file_count(s) == 1 && !strcmp(st_file_name(s, 0), path) && st_file_name(s, 1) == NULL, "file name");
        CHECK(st_mapped_bytes(s) == f.n, "mapped %" PRIu64, st_mapped_bytes(s));
        const char *fm = st_metadata(s, "format"), *note = st_metadata(s, "note");
        CHECK(fm && !strcmp(fm, "pt"), "format");
        CHECK(note && !strcmp(note, "caf\xc3\xa9"), "escaped metadata");
        CHECK(st_metadata(s, "absent") == NULL && st_metadata(s, "") == NULL, "absent metadata");
        const st_tensor *sc = st_find(s, "scalar"), *em = st_find(s, "empty"), *e8 = st_find(s, "eight");
        CHECK(sc && sc->n_dims == 0 && sc->size == 4, "scalar");
        CHECK(em && em->n_dims == 2 && em->shape[0] == 0 && em->shape[1] == 4 && em->size == 0, "empty");
        CHECK(e8 && e8->n_dims == 8 && e8->size == 16 && e8->shape[7] == 2, "8-dim");
        CHECK(st_find(s, "t.f32")->file == 0, "file index");
    }
    st_close(s);

    st_set *b = NULL;
    st = st_open_buffer(f.p, f.n, &b, err, sizeof err);
    CHECK(st == LAYA_OK, "buffer: %s", err);
    if (!st) {
        check_set(b, g_mixed, N_MIXED, "buffer");
        CHECK(st_mapped_bytes(b) == 0 && !strcmp(st_file_name(b, 0), "<buffer>"), "buffer set");
        const st_tensor *t = st_find(b, "t.bool");
        CHECK((const char *)t->data > f.p && (const char *)t->data < f.p + f.n, "view into the caller's bytes");
    }
    st_close(b);

    /* An empty header and a metadata-only header are valid files with no tensors. */
    static const char empty[] = "\x02\0\0\0\0\0\0\0{}", meta_only[] = "\x1a\0\0\0\0\0\0\0{\"__metadata__\":{\"a\":\"b\"}}";
    st = st_open_buffer(empty, sizeof empty - 1, &b, err, sizeof err);
    CHECK(st == LAYA_OK && st_count(b) == 0 && st_at(b, 0) == NULL && st_find(b, "x") == NULL, "empty: %s", err);
    st_close(b);
    st = st_open_buffer(meta_only, sizeof meta_only - 1, &b, err, sizeof err);
    CHECK(st == LAYA_OK && st_count(b) == 0 && st_metadata(b, "a") && !strcmp(st_metadata(b, "a"), "b"),
          "metadata only: %s", err);
    st_close(b);

    /* Gaps between tensors, trailing bytes and tensors listed out of offset order are accepted. */
    static const char gappy_h[] =
        "{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[10,12]},"
        "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
        "\"z\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[3,3]}}";
    buf g = {0};
    uint64_t hn = sizeof gappy_h - 1;
    b_put(&g, &hn, 8);
    b_put(&g, gappy_h, hn);
    b_put(&g, "0123456789abcdefgh", 18);
    st = st_open_buffer(g.p, g.n, &b, err, sizeof err);
    CHECK(st == LAYA_OK, "gaps: %s", err);
    if (!st) {
        CHECK(!memcmp(st_find(b, "a")->data, "23", 2) && !memcmp(st_find(b, "b")->data, "ab", 2), "gap data");
        CHECK(!strcmp(st_at(b, 0)->name, "a") && !strcmp(st_at(b, 2)->name, "z"), "gap order");
    }
    st_close(b);
    free(g.p);

    /* Bad arguments. */
    CHECK(st_open_file(NULL, &s, err, sizeof err) == LAYA_ERR_INVALID_ARG && s == NULL, "NULL path");
    CHECK(st_open_file(path, NULL, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL out");
    CHECK(st_open_dir(NULL, &s, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL dir");
    CHECK(st_open_buffer(NULL, 8, &s, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL buffer");
    CHECK(st_open_buffer(NULL, 0, &s, NULL, 0) == LAYA_ERR_FORMAT, "empty buffer, no message buffer");
    CHECK(st_open_file(path2(g_dir, "absent.safetensors"), &s, err, sizeof err) == LAYA_ERR_IO && strstr(err, "cannot open"),
          "absent file: %s", err);
    CHECK(st_open_file(g_dir, &s, err, sizeof err) == LAYA_ERR_IO && strstr(err, "not a regular file"),
          "directory as file: %s", err);
    st_close(NULL);
    CHECK(st_count(NULL) == 0 && st_at(NULL, 0) == NULL && st_find(NULL, "a") == NULL &&
              st_metadata(NULL, "a") == NULL && st_file_count(NULL) == 0 && st_file_name(NULL, 0) == NULL &&
              st_mapped_bytes(NULL) == 0,
          "NULL set");
    free(f.p);
}

/* A sharded model directory: index.json plus n_shards files, tensor i in shard i % n_shards. */
static void write_sharded(const char *dir, const wt *ts, size_t n, int n_shards, const char *extra_index) {
    mkdir(dir, 0755);
    buf idx = {0};
    b_fmt(&idx, "{\"metadata\":{\"total_size\":123,\"nested\":{\"a\":[1,{\"b\":2}]}}%s,\"weight_map\":{",
          extra_index ? extra_index : "");
    for (int k = 0; k < n_shards; k++) {
        wt sub[64];
        size_t m = 0;
        for (size_t i = (size_t)k; i < n; i += (size_t)n_shards) sub[m++] = ts[i];
        buf f = st_build(sub, m, k == 1 ? "{\"format\":\"mlx\",\"only1\":\"yes\"}" : "{\"format\":\"pt\"}");
        /* st_build patterns by position within the shard; rewrite them by global index for check_set. */
        char name[64];
        snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", k + 1, n_shards);
        uint64_t hn;
        memcpy(&hn, f.p, 8);
        size_t at = 8 + (size_t)hn, j = 0;
        for (size_t i = (size_t)k; i < n; i += (size_t)n_shards, j++)
            for (uint64_t q = 0; q < wt_bytes(&ts[i]); q++) f.p[at++] = (char)pat(i, q);
        CHECK(write_all(path2(dir, name), f.p, f.n), "write shard");
        for (size_t i = (size_t)k; i < n; i += (size_t)n_shards)
            b_fmt(&idx, "%s\"%s\":\"%s\"", idx.p[idx.n - 1] == '{' ? "" : ",", ts[i].name, name);
        free(f.p);
    }
    b_str(&idx, "}}");
    CHECK(write_all(path2(dir, "model.safetensors.index.json"), idx.p, idx.n), "write index");
    free(idx.p);
}

static void test_sharded(void) {
    char dir[256], err[LAYA_ERR_MSG_MAX];
    snprintf(dir, sizeof dir, "%s/sharded", g_dir);
    write_sharded(dir, g_mixed, N_MIXED, 3, NULL);
    st_set *s = NULL;
    laya_status st = st_open_dir(dir, &s, err, sizeof err);
    CHECK(st == LAYA_OK, "sharded: %s", err);
    if (!st) {
        check_set(s, g_mixed, N_MIXED, "sharded");
        CHECK(st_file_count(s) == 3 && !strcmp(st_file_name(s, 0), "model-00001-of-00003.safetensors") &&
                  !strcmp(st_file_name(s, 2), "model-00003-of-00003.safetensors"),
              "shard names");
        for (size_t i = 0; i < N_MIXED; i++) {
            const st_tensor *t = st_find(s, g_mixed[i].name);
            CHECK(t && t->file == i % 3, "'%s' in shard %u", g_mixed[i].name, t ? t->file : 99);
        }
        const char *fm = st_metadata(s, "format"), *o1 = st_metadata(s, "only1");
        CHECK(fm && !strcmp(fm, "pt"), "first shard's metadata wins");
        CHECK(o1 && !strcmp(o1, "yes"), "metadata of a later shard");
        struct stat sb;
        uint64_t total = 0;
        for (uint32_t k = 0; k < 3; k++)
            if (!stat(path2(dir, st_file_name(s, k)), &sb)) total += (uint64_t)sb.st_size;
        CHECK(st_mapped_bytes(s) == total, "mapped bytes");
    }
    st_close(s);

    /* Unknown top-level keys in the index are ignored; an unlisted file in the directory is not opened. */
    snprintf(dir, sizeof dir, "%s/sharded_extra", g_dir);
    write_sharded(dir, g_mixed, N_MIXED, 2, ",\"something\":[1,2,3]");
    CHECK(write_all(path2(dir, "stray.safetensors"), "garbage", 7), "stray");
    st = st_open_dir(dir, &s, err, sizeof err);
    CHECK(st == LAYA_OK && st_count(s) == N_MIXED && st_file_count(s) == 2, "extra keys: %s", err);
    st_close(s);

    /* The Hugging Face cache: snapshot entries are symlinks to blobs. */
    char blobs[256], snap[256];
    snprintf(blobs, sizeof blobs, "%s/hf/blobs", g_dir);
    snprintf(snap, sizeof snap, "%s/hf/snap", g_dir);
    mkdir(path2(g_dir, "hf"), 0755);
    write_sharded(blobs, g_mixed, N_MIXED, 2, NULL);
    mkdir(snap, 0755);
    static const char *files[] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                  "model.safetensors.index.json"};
    for (int k = 0; k < 3; k++) {
        char target[512];
        snprintf(target, sizeof target, "../blobs/%s", files[k]);
        CHECK(symlink(target, path2(snap, files[k])) == 0, "symlink");
    }
    st = st_open_dir(snap, &s, err, sizeof err);
    CHECK(st == LAYA_OK, "symlinked shards: %s", err);
    if (!st) check_set(s, g_mixed, N_MIXED, "symlinks");
    st_close(s);

    /* model.safetensors wins over an index (as in transformers). */
    snprintf(dir, sizeof dir, "%s/both", g_dir);
    write_sharded(dir, g_mixed, N_MIXED, 2, NULL);
    buf one = st_build(g_mixed, 3, NULL);
    CHECK(write_all(path2(dir, "model.safetensors"), one.p, one.n), "write single");
    free(one.p);
    st = st_open_dir(dir, &s, err, sizeof err);
    CHECK(st == LAYA_OK && st_count(s) == 3 && st_file_count(s) == 1, "single file preferred: %s", err);
    st_close(s);

    CHECK(st_open_dir(path2(g_dir, "nonexistent"), &s, err, sizeof err) == LAYA_ERR_NOT_FOUND, "missing dir: %s", err);
}

static laya_status status_of(const char *w) {
    static const struct { const char *n; laya_status s; } m[] = {
        {"FORMAT", LAYA_ERR_FORMAT}, {"UNSUPPORTED", LAYA_ERR_UNSUPPORTED}, {"IO", LAYA_ERR_IO},
        {"NOT_FOUND", LAYA_ERR_NOT_FOUND}, {"NOMEM", LAYA_ERR_NOMEM}};
    for (size_t i = 0; i < sizeof m / sizeof *m; i++)
        if (!strcmp(w, m[i].n)) return m[i].s;
    return LAYA_OK;
}

static void test_corpus(void) {
    const char *root = "tests/fixtures/st_bad";
    FILE *ex = fopen(path2(root, "EXPECT"), "r");
    CHECK(ex != NULL, "cannot read %s/EXPECT (run from the repository root)", root);
    if (!ex) return;
    char line[1024];
    int n = 0, n_dirs = 0;
    while (fgets(line, sizeof line, ex)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = 0;
        char *name = strtok(line, " "), *status = strtok(NULL, " "), *msg = strtok(NULL, "");
        if (!name || !status || !msg) {
            CHECK(0, "bad EXPECT line");
            continue;
        }
        char err[LAYA_ERR_MSG_MAX] = "";
        st_set *s = (st_set *)1;
        int is_dir = !strncmp(name, "dirs/", 5);
        laya_status st = is_dir ? st_open_dir(path2(root, name), &s, err, sizeof err)
                                : st_open_file(path2(root, name), &s, err, sizeof err);
        CHECK(st == status_of(status) && s == NULL, "%s: status %s, expected %s (%s)", name, laya_status_str(st),
              status, err);
        CHECK(strstr(err, msg) != NULL, "%s: message \"%s\" lacks \"%s\"", name, err, msg);
        n++;
        n_dirs += is_dir;
    }
    fclose(ex);
    CHECK(n >= 90 && n_dirs >= 20, "corpus has %d cases (%d directories)", n, n_dirs);
    /* Every file in the corpus directory is listed. */
    DIR *d = opendir(root);
    int files = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        files += e->d_name[0] != '.' && strcmp(e->d_name, "EXPECT") && strcmp(e->d_name, "dirs");
    if (d) closedir(d);
    CHECK(files == n - n_dirs, "%d files but %d listed", files, n - n_dirs);
}

static void test_truncations(void) {
    buf f = st_build(g_mixed, N_MIXED, "{\"format\":\"pt\"}");
    int bad = 0;
    char err[LAYA_ERR_MSG_MAX];
    for (size_t len = 0; len < f.n; len++) {
        /* A copy of exactly len bytes, so that ASan sees any read past the end. */
        char *c = malloc(len ? len : 1);
        memcpy(c, f.p, len);
        st_set *s = NULL;
        err[0] = 0;
        laya_status st = st_open_buffer(c, len, &s, err, sizeof err);
        if (st != LAYA_ERR_FORMAT || s || !err[0]) {
            if (bad++ < 5) CHECK(0, "truncated to %zu: %s (%s)", len, laya_status_str(st), err);
            st_close(s);
        }
        free(c);
    }
    CHECK(bad == 0, "%d truncations accepted", bad);
    /* And through a real file, at a few lengths. */
    char *path = path2(g_dir, "trunc.safetensors");
    size_t lens[] = {0, 7, 8, 20, f.n / 2, f.n - 1};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        CHECK(write_all(path, f.p, lens[i]), "write");
        st_set *s = NULL;
        CHECK(st_open_file(path, &s, err, sizeof err) == LAYA_ERR_FORMAT && !s, "file truncated to %zu", lens[i]);
    }
    free(f.p);
}


static void test_oom(void) {
    char dir[256], err[LAYA_ERR_MSG_MAX];
    snprintf(dir, sizeof dir, "%s/oom", g_dir);
    write_sharded(dir, g_mixed, N_MIXED, 3, NULL);
    char *file = path2(g_dir, "mixed.safetensors"); /* from test_roundtrip */
    for (int which = 0; which < 2; which++) {
        long n;
        int ok = 0, bad = 0;
        for (n = 1; n < 1000 && !ok; n++) {
            ta_install(n);
            st_set *s = NULL;
            laya_status st = which ? st_open_dir(dir, &s, err, sizeof err) : st_open_file(file, &s, err, sizeof err);
            if (st == LAYA_OK) {
                ok = 1;
                CHECK(ta_count < n, "%s: succeeded although allocation %ld failed", which ? "dir" : "file", n);
                CHECK(st_count(s) == N_MIXED, "after OOM loop");
            } else if (st != LAYA_ERR_NOMEM || s) {
                if (bad++ < 3) CHECK(0, "%s: allocation %ld failed gave %s: %s", which ? "dir" : "file", n,
                                     laya_status_str(st), err);
            }
            st_close(s);
            laya_set_alloc_hooks(NULL);
            if (ta_live != 0 && bad++ < 3) CHECK(0, "%s: fail at %ld leaks %ld blocks", which ? "dir" : "file", n, ta_live);
        }
        CHECK(ok && bad == 0, "%s: OOM injection (%ld allocations)", which ? "dir" : "file", n - 1);
    }
}

static void test_stress(void) {
    enum { N = 100000 };
    /* Names in descending order, so that sorting has work to do; F16 [4] each. */
    buf h = {0}, f = {0};
    b_str(&h, "{\"__metadata__\":{");
    for (int i = 0; i < 1000; i++) b_fmt(&h, "%s\"k%d\":\"v%d\"", i ? "," : "", i, i);
    b_str(&h, "}");
    for (int i = 0; i < N; i++)
        b_fmt(&h, ",\"blk.%06d.w\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[%d,%d]}", N - 1 - i,
              (N - 1 - i) * 8, (N - i) * 8);
    b_str(&h, "}");
    uint64_t hn = h.n;
    b_put(&f, &hn, 8);
    b_put(&f, h.p, h.n);
    size_t data_at = f.n;
    for (int i = 0; i < N; i++) b_put(&f, "\1\2\3\4\5\6\7\10", 8);
    char err[LAYA_ERR_MSG_MAX];
    st_set *s = NULL;
    double t0 = now_s();
    laya_status st = st_open_buffer(f.p, f.n, &s, err, sizeof err);
    double t1 = now_s();
    CHECK(st == LAYA_OK && st_count(s) == N, "stress: %s", err);
    if (!st) {
        int found = 0;
        for (int i = 0; i < N; i++) {
            char name[32];
            snprintf(name, sizeof name, "blk.%06d.w", i);
            const st_tensor *t = st_find(s, name);
            found += t && t == st_at(s, (uint64_t)i) && (const char *)t->data == f.p + data_at + (size_t)i * 8;
        }
        CHECK(found == N, "stress lookups %d", found);
        CHECK(st_metadata(s, "k999") && !strcmp(st_metadata(s, "k999"), "v999"), "stress metadata");
    }
    st_close(s);
    printf("test_safetensors: %d tensors opened in %.3f s (header %zu bytes)\n", N, t1 - t0, h.n);
    CHECK(t1 - t0 < 10.0, "10^5 tensors took %.2f s", t1 - t0);

    /* The same as one shard behind an index of 10^5 entries. */
    char dir[256];
    snprintf(dir, sizeof dir, "%s/stress", g_dir);
    mkdir(dir, 0755);
    CHECK(write_all(path2(dir, "s.safetensors"), f.p, f.n), "write stress shard");
    buf idx = {0};
    b_str(&idx, "{\"weight_map\":{");
    for (int i = 0; i < N; i++) b_fmt(&idx, "%s\"blk.%06d.w\":\"s.safetensors\"", i ? "," : "", i);
    b_str(&idx, "}}");
    CHECK(write_all(path2(dir, "model.safetensors.index.json"), idx.p, idx.n), "write stress index");
    free(idx.p);
    t0 = now_s();
    st = st_open_dir(dir, &s, err, sizeof err);
    t1 = now_s();
    CHECK(st == LAYA_OK && st_count(s) == N && st_file_count(s) == 1, "stress index: %s", err);
    CHECK(t1 - t0 < 10.0, "10^5 tensors with an index took %.2f s", t1 - t0);
    st_close(s);

    /* And with the last entry duplicating the first name. */
    char *dup = strstr(f.p + 8, "blk.000000.w");
    memcpy(dup, "blk.099999.w", 12);
    t0 = now_s();
    st = st_open_buffer(f.p, f.n, &s, err, sizeof err);
    CHECK(st == LAYA_ERR_FORMAT && strstr(err, "duplicate tensor name 'blk.099999.w'"), "stress duplicate: %s", err);
    CHECK(now_s() - t0 < 10.0, "duplicate detection time");
    free(h.p);
    free(f.p);
}

static void rm_rf(const char *p) {
    struct stat sb;
    if (lstat(p, &sb)) return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(p);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", p, e->d_name);
            rm_rf(sub);
        }
        if (d) closedir(d);
        rmdir(p);
    } else {
        unlink(p);
    }
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/laya_st_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_dtypes();
    test_roundtrip();
    test_sharded();
    test_corpus();
    test_truncations();
    test_oom();
    test_stress();
    rm_rf(g_dir);
    return DONE("test_safetensors");
}
