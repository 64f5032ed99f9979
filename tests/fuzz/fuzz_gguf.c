/* fuzz_gguf.c — libFuzzer target for the GGUF reader: open any bytes, and when they are accepted walk every
 * accessor and check the invariants the reader promises (lookups find what iteration finds, every view lies
 * inside the buffer). Aborting here is the point: it is how libFuzzer learns of a broken invariant. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/gguf.h"

#define REQUIRE(c)                                                               \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "fuzz_gguf: invariant failed: %s (line %d)\n", #c, __LINE__); \
            abort();                                                             \
        }                                                                        \
    } while (0)

static const uint8_t *g_lo, *g_hi;
static volatile uint8_t g_sink;

static void inside(const void *p, uint64_t n) {
    const uint8_t *b = p;
    REQUIRE(n == 0 || (b >= g_lo && b <= g_hi && n <= (uint64_t)(g_hi - b)));
    if (n) g_sink ^= b[0] ^ b[n - 1];
}

static char *cstr(gguf_str s) {
    char *c = malloc(s.n + 1);
    REQUIRE(c != NULL);
    memcpy(c, s.p, s.n);
    c[s.n] = 0;
    return c;
}

/* Whatever the reader accepts, the writer must copy into a file the reader accepts with the same entries.
 * Written to /dev/shm so the writer's fsync costs nothing. */
static void rewrite(const gguf_file *f) {
    char path[64], err[256];
    snprintf(path, sizeof path, "/dev/shm/fuzz_gguf.%ld.gguf", (long)getpid());
    gguf_writer *w = gguf_writer_new();
    REQUIRE(w != NULL);
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) REQUIRE(gguf_writer_copy_kv(w, gguf_kv_at(f, i)) == LAYA_OK);
    char **names = calloc(gguf_n_tensors(f) + 1, sizeof *names);
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        names[i] = cstr(t->name);
        REQUIRE(gguf_writer_add_tensor(w, names[i], t->type, t->n_dims, t->ne, t->data) == LAYA_OK);
    }
    laya_status st = gguf_writer_write(w, path, err, sizeof err);
    gguf_writer_free(w);
    if (st == LAYA_ERR_IO) goto done; /* /dev/shm missing or full: not the code under test */
    REQUIRE(st == LAYA_OK);
    gguf_file *g = NULL;
    st = gguf_open(path, &g, err, sizeof err);
    if (st) fprintf(stderr, "fuzz_gguf: rewritten file refused: %s\n", err);
    REQUIRE(st == LAYA_OK);
    REQUIRE(gguf_n_kv(g) == gguf_n_kv(f) && gguf_n_tensors(g) == gguf_n_tensors(f));
    REQUIRE(gguf_alignment(g) == gguf_alignment(f));
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *a = gguf_kv_at(f, i), *b = gguf_kv_at(g, i);
        REQUIRE(a->type == b->type && a->arr_type == b->arr_type && a->arr_n == b->arr_n);
        REQUIRE(a->key.n == b->key.n && !memcmp(a->key.p, b->key.p, a->key.n));
        REQUIRE(a->data_size == b->data_size && !memcmp(a->data, b->data, a->data_size));
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *a = gguf_tensor_at(f, i), *b = gguf_tensor_at(g, i);
        REQUIRE(a->type == b->type && a->n_dims == b->n_dims && !memcmp(a->ne, b->ne, sizeof a->ne));
        REQUIRE(a->size == b->size && !memcmp(a->data, b->data, a->size));
    }
    gguf_close(g);
done:
    unlink(path);
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) free(names[i]);
    free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[256] = "";
    gguf_file *f = NULL;
    laya_status st = gguf_open_buffer(data, size, &f, err, sizeof err);
    if (st != LAYA_OK) {
        REQUIRE(f == NULL && err[0] != 0);
        REQUIRE(st == LAYA_ERR_FORMAT || st == LAYA_ERR_UNSUPPORTED);
        return 0;
    }
    g_lo = data;
    g_hi = data + size;
    REQUIRE(gguf_version(f) == 2 || gguf_version(f) == 3);
    uint64_t align = gguf_alignment(f);
    REQUIRE(align && !(align & (align - 1)) && gguf_data_offset(f) % align == 0);

    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        REQUIRE(kv && kv->key.n > 0);
        inside(kv->key.p, kv->key.n);
        inside(kv->data, kv->data_size);
        char *key = cstr(kv->key);
        REQUIRE(gguf_find_kv(f, key) == kv);
        uint32_t u;
        int64_t i64;
        float x;
        int b;
        gguf_str s;
        gguf_get_u32(f, key, &u);
        gguf_get_i64(f, key, &i64);
        gguf_get_f32(f, key, &x);
        REQUIRE(gguf_get_bool(f, key, &b) != LAYA_OK || b == 0 || b == 1);
        if (gguf_get_str(f, key, &s) == LAYA_OK) inside(s.p, s.n);
        const gguf_kv *a = NULL;
        if (gguf_get_arr(f, key, GGUF_ARR_ANY, &a) == LAYA_OK) {
            REQUIRE(a == kv && a->arr_type != GGUF_ARRAY);
            gguf_str_iter it = gguf_arr_strs(a);
            for (uint64_t j = 0; j < a->arr_n; j++) {
                if (a->arr_type == GGUF_STRING) {
                    gguf_str e = {NULL, 0};
                    REQUIRE(gguf_str_next(&it, &e) && e.p != NULL);
                    inside(e.p, e.n);
                } else {
                    double d = gguf_arr_num(a, j);
                    g_sink ^= (uint8_t)(d == d);
                }
            }
            gguf_str e;
            REQUIRE(!gguf_str_next(&it, &e)); /* exactly arr_n strings (none for other types) */
        }
        free(key);
    }
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        REQUIRE(t && t->n_dims >= 1 && t->n_dims <= 4 && t->size > 0 && t->offset % align == 0);
        for (int d = 0; d < 4; d++) REQUIRE(t->ne[d] >= 1);
        inside(t->name.p, t->name.n);
        inside(t->data, t->size);
        char *name = cstr(t->name);
        REQUIRE(gguf_find_tensor(f, name) == t);
        free(name);
    }
    char terr[256];
    gguf_check_token_ids(f, terr, sizeof terr);
    if (align <= 4096) rewrite(f); /* a huge alignment would make the writer pad by gigabytes */
    gguf_close(f);
    return 0;
}
