/* fuzz_safetensors.c — libFuzzer target for the safetensors reader. Each input is opened as a file (from
 * memory) and, when it is accepted, every accessor is walked and the reader's promises checked (views inside
 * the buffer, sizes agree with shapes, no overlaps, sorted unique names), then the set is written out again
 * and must read back the same. The input is also tried as model.safetensors.index.json beside two fixed
 * shards, which fuzzes the index checks. Aborting is the point: it is how libFuzzer learns of a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "io/safetensors.h"

#define REQUIRE(c)                                                                       \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "fuzz_safetensors: invariant failed: %s (line %d)\n", #c, __LINE__); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

static volatile uint8_t g_sink;

static int cmp_data(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    const char *p = x->data, *q = y->data;
    return p < q ? -1 : p > q;
}

/* Check every invariant of an accepted set whose tensors lie in [lo, hi). */
static void walk(const st_set *s, const uint8_t *lo, const uint8_t *hi) {
    uint64_t n = st_count(s);
    REQUIRE(st_at(s, n) == NULL);
    const st_tensor **by_data = malloc((n ? n : 1) * sizeof *by_data);
    REQUIRE(by_data != NULL);
    for (uint64_t i = 0; i < n; i++) {
        const st_tensor *t = st_at(s, i);
        REQUIRE(t && t->name && t->name[0]);
        if (i) REQUIRE(strcmp(st_at(s, i - 1)->name, t->name) < 0);
        REQUIRE(json_utf8_valid(t->name, strlen(t->name), NULL));
        REQUIRE(st_find(s, t->name) == t);
        REQUIRE(t->dtype < ST_DTYPE_COUNT && t->n_dims <= ST_MAX_DIMS && t->file < st_file_count(s));
        uint64_t nonzero = 1;
        int empty = 0;
        for (uint32_t d = 0; d < ST_MAX_DIMS; d++) {
            if (d >= t->n_dims) {
                REQUIRE(t->shape[d] == 0);
                continue;
            }
            REQUIRE(t->shape[d] >= 0);
            if (t->shape[d] == 0) empty = 1;
            else REQUIRE(!__builtin_mul_overflow(nonzero, (uint64_t)t->shape[d], &nonzero) && nonzero <= INT64_MAX);
        }
        REQUIRE(t->size == (empty ? 0 : nonzero * st_dtype_size(t->dtype)));
        const uint8_t *b = t->data;
        if (lo) REQUIRE(b >= lo && b <= hi && t->size <= (uint64_t)(hi - b));
        if (t->size) g_sink ^= b[0] ^ b[t->size - 1];
        by_data[i] = t;
    }
    /* The same shard only: these are single-buffer sets or checked per file below. */
    qsort(by_data, n, sizeof *by_data, cmp_data);
    for (uint64_t i = 1; i < n; i++) {
        const st_tensor *a = by_data[i - 1], *b = by_data[i];
        if (a->file == b->file && a->size && b->size)
            REQUIRE((const uint8_t *)a->data + a->size <= (const uint8_t *)b->data);
    }
    free(by_data);
    REQUIRE(st_find(s, "") == NULL);
    const char *f = st_metadata(s, "format");
    if (f) g_sink ^= (uint8_t)strlen(f);
}

/* Write the set as a fresh safetensors file in memory: tensors back to back in name order. */
static uint8_t *rewrite(const st_set *s, size_t *out_n) {
    json_buf h;
    json_buf_init(&h);
    json_buf_cstr(&h, "{");
    uint64_t off = 0, n = st_count(s);
    for (uint64_t i = 0; i < n; i++) {
        const st_tensor *t = st_at(s, i);
        if (i) json_buf_cstr(&h, ",");
        json_buf_str(&h, t->name, strlen(t->name));
        json_buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(t->dtype));
        for (uint32_t d = 0; d < t->n_dims; d++) {
            if (d) json_buf_cstr(&h, ",");
            json_buf_int(&h, t->shape[d]);
        }
        json_buf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                        (unsigned long long)(off + t->size));
        off += t->size;
    }
    json_buf_cstr(&h, "}");
    REQUIRE(json_buf_status(&h) == LAYA_OK);
    size_t total = 8 + h.len + (size_t)off;
    uint8_t *out = malloc(total);
    REQUIRE(out != NULL);
    uint64_t hn = h.len;
    memcpy(out, &hn, 8);
    memcpy(out + 8, h.p, h.len);
    size_t at = 8 + h.len;
    for (uint64_t i = 0; i < n; i++) {
        const st_tensor *t = st_at(s, i);
        if (t->size) memcpy(out + at, t->data, t->size);
        at += t->size;
    }
    json_buf_free(&h);
    *out_n = total;
    return out;
}

static void roundtrip(const st_set *s) {
    size_t n;
    uint8_t *b = rewrite(s, &n);
    char err[256];
    st_set *r = NULL;
    laya_status st = st_open_buffer(b, n, &r, err, sizeof err);
    if (st) fprintf(stderr, "fuzz_safetensors: rewritten file refused: %s\n", err);
    REQUIRE(st == LAYA_OK && st_count(r) == st_count(s));
    for (uint64_t i = 0; i < st_count(s); i++) {
        const st_tensor *a = st_at(s, i), *c = st_at(r, i);
        REQUIRE(!strcmp(a->name, c->name) && a->dtype == c->dtype && a->n_dims == c->n_dims);
        REQUIRE(!memcmp(a->shape, c->shape, sizeof a->shape) && a->size == c->size);
        REQUIRE(a->size == 0 || !memcmp(a->data, c->data, a->size));
    }
    st_close(r);
    free(b);
}

/* A model directory with two fixed shards: a.safetensors (tensors a, b) and b.safetensors (tensor c). */
static char g_dir[64];
static void remove_dir(void) {
    static const char *names[] = {"a.safetensors", "b.safetensors", "model.safetensors.index.json"};
    char path[128];
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, names[k]);
        unlink(path);
    }
    rmdir(g_dir);
}

static void make_dir(void) {
    snprintf(g_dir, sizeof g_dir, "/dev/shm/fuzz_st.%ld", (long)getpid());
    if (mkdir(g_dir, 0700) && access(g_dir, W_OK)) {
        snprintf(g_dir, sizeof g_dir, "/tmp/fuzz_st.%ld", (long)getpid());
        REQUIRE(mkdir(g_dir, 0700) == 0 || access(g_dir, W_OK) == 0);
    }
    static const char a[] = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                            "\"b\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[2,4]}}",
                      b[] = "{\"__metadata__\":{\"format\":\"pt\"},"
                            "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    const char *txt[2] = {a, b}, *names[2] = {"a.safetensors", "b.safetensors"};
    for (int k = 0; k < 2; k++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", g_dir, names[k]);
        FILE *fp = fopen(path, "wb");
        REQUIRE(fp != NULL);
        uint64_t hn = strlen(txt[k]);
        fwrite(&hn, 8, 1, fp);
        fwrite(txt[k], 1, hn, fp);
        fwrite("\1\2\3\4", 1, 4, fp);
        REQUIRE(fclose(fp) == 0);
    }
    atexit(remove_dir);
}

static void try_index(const uint8_t *data, size_t size) {
    if (!g_dir[0]) make_dir();
    char path[128], err[256] = "";
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", g_dir);
    FILE *fp = fopen(path, "wb");
    REQUIRE(fp != NULL);
    if (size) fwrite(data, 1, size, fp);
    REQUIRE(fclose(fp) == 0);
    st_set *s = NULL;
    laya_status st = st_open_dir(g_dir, &s, err, sizeof err);
    if (st) {
        REQUIRE(s == NULL && err[0] != 0);
        REQUIRE(st == LAYA_ERR_FORMAT || st == LAYA_ERR_UNSUPPORTED || st == LAYA_ERR_IO);
        return;
    }
    uint64_t n = st_count(s);
    REQUIRE(n >= 1 && n <= 3 && st_file_count(s) >= 1 && st_file_count(s) <= 2);
    walk(s, NULL, NULL);
    st_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[256] = "";
    st_set *s = NULL;
    laya_status st = st_open_buffer(data, size, &s, err, sizeof err);
    if (st != LAYA_OK) {
        REQUIRE(s == NULL && err[0] != 0);
        REQUIRE(st == LAYA_ERR_FORMAT || st == LAYA_ERR_UNSUPPORTED);
    } else {
        REQUIRE(size >= 10 && st_file_count(s) == 1 && st_mapped_bytes(s) == 0);
        uint64_t hn;
        memcpy(&hn, data, 8);
        walk(s, data + 8 + hn, data + size);
        roundtrip(s);
        st_close(s);
    }
    try_index(data, size);
    return 0;
}
