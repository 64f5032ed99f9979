/* test_gguf.c — GGUF reader and writer: round trips of every value type and several tensor types (to a file
 * and to a buffer, which must hold the same bytes), a v2 file, the malformed corpus in tests/fixtures/gguf_bad
 * (with expected status and message), every truncation of a valid file, hostile counts, out-of-memory
 * injection and writer misuse. Runs from the repository root. */
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc_hooks.h"
#include "check.h"
#include "base/common.h"
#include "io/gguf.h"
#include "io/qtypes.h"

static char g_dir[64]; /* scratch directory for written files */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    if (b && fread(b, 1, (size_t)len, fp) != (size_t)len) { free(b); b = NULL; }
    fclose(fp);
    *n = (size_t)len;
    return b;
}

static int write_all(const char *path, const void *p, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return 0;
    int ok = fwrite(p, 1, n, fp) == n;
    return fclose(fp) == 0 && ok;
}

static int str_eq(gguf_str s, const char *c, size_t n) { return s.n == n && (n == 0 || !memcmp(s.p, c, n)); }

/* String i of a string array through the iterator; {NULL, 0} past the end. */
static gguf_str arr_str(const gguf_kv *kv, uint64_t i) {
    gguf_str_iter it = gguf_arr_strs(kv);
    gguf_str s = {NULL, 0};
    for (uint64_t k = 0; k <= i; k++)
        if (!gguf_str_next(&it, &s)) return (gguf_str){NULL, 0};
    return s;
}

/* Little byte builder for hand-made files. */
typedef struct { unsigned char *p; size_t n, cap; } buf;
static void b_put(buf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void b_u32(buf *b, uint32_t v) { b_put(b, &v, 4); }
static void b_u64(buf *b, uint64_t v) { b_put(b, &v, 8); }
static void b_str(buf *b, const char *s) { b_u64(b, strlen(s)); b_put(b, s, strlen(s)); }
static void b_pad(buf *b, size_t a) { while (b->n % a) b_put(b, "", 1); }
static void b_header(buf *b, uint32_t version, uint64_t n_t, uint64_t n_kv) {
    b_put(b, "GGUF", 4); b_u32(b, version); b_u64(b, n_t); b_u64(b, n_kv);
}

/* ------------------------------------------------------------------------------------------------------ */
static const uint32_t fixed_types[] = {GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32,
                                       GGUF_F32, GGUF_BOOL, GGUF_U64, GGUF_I64, GGUF_F64};
static const size_t fixed_size[] = {1, 1, 2, 2, 4, 4, 4, 1, 8, 8, 8};

typedef struct { const char *name; uint32_t type, n_dims; int64_t ne[4]; size_t size; unsigned char *data; } ttensor;
static ttensor g_t[] = {
    {"tok_embd.weight", QT_F32, 2, {5, 3, 1, 1}, 60, NULL},
    {"blk.0.attn_norm.weight", QT_F16, 1, {7, 1, 1, 1}, 14, NULL},
    {"blk.0.attn_q.weight", QT_Q8_0, 2, {64, 2, 1, 1}, 136, NULL},
    {"blk.0.ffn_down.weight", QT_Q4_K, 3, {256, 1, 2, 1}, 288, NULL},
    {"blk.0.x4d", QT_BF16, 4, {2, 2, 2, 2}, 32, NULL},
    {"output.weight", QT_Q4_0, 1, {32, 1, 1, 1}, 18, NULL},
};
#define NT (sizeof g_t / sizeof g_t[0])

static const char long_str[] = "a string long enough to cross a few cache lines: 0123456789 0123456789 0123456789 "
                               "0123456789 0123456789 0123456789 0123456789 0123456789 0123456789 0123456789 ..";

static void write_roundtrip_file(const char *path) {
    gguf_writer *w = gguf_writer_new();
    CHECK(w != NULL, "writer_new");
    CHECK(gguf_writer_set_u32(w, "general.alignment", 64) == LAYA_OK, "alignment");
    CHECK(gguf_writer_set_str(w, "general.name", "round trip") == LAYA_OK, "str");
    CHECK(gguf_writer_set_u32(w, "k.u32", 1) == LAYA_OK, "u32");
    CHECK(gguf_writer_set_u32(w, "k.u32", 4000000000u) == LAYA_OK, "u32 replace");
    CHECK(gguf_writer_set_i32(w, "k.i32", -123456) == LAYA_OK, "i32");
    CHECK(gguf_writer_set_u64(w, "k.u64", UINT64_MAX) == LAYA_OK, "u64");
    CHECK(gguf_writer_set_f32(w, "k.f32", 0.15625f) == LAYA_OK, "f32");
    CHECK(gguf_writer_set_bool(w, "k.bool", 7) == LAYA_OK, "bool");
    uint8_t u8 = 200; int8_t i8 = -100; uint16_t u16 = 60000; int16_t i16 = -30000; int64_t i64 = INT64_MIN;
    double f64 = -2.5e300;
    CHECK(gguf_writer_set_scalar(w, "k.u8", GGUF_U8, &u8) == LAYA_OK, "u8");
    CHECK(gguf_writer_set_scalar(w, "k.i8", GGUF_I8, &i8) == LAYA_OK, "i8");
    CHECK(gguf_writer_set_scalar(w, "k.u16", GGUF_U16, &u16) == LAYA_OK, "u16");
    CHECK(gguf_writer_set_scalar(w, "k.i16", GGUF_I16, &i16) == LAYA_OK, "i16");
    CHECK(gguf_writer_set_scalar(w, "k.i64", GGUF_I64, &i64) == LAYA_OK, "i64");
    CHECK(gguf_writer_set_scalar(w, "k.f64", GGUF_F64, &f64) == LAYA_OK, "f64");
    CHECK(gguf_writer_set_str(w, "k.empty_str", "") == LAYA_OK, "empty str");
    CHECK(gguf_writer_set_str(w, "k.ключ", "значение") == LAYA_OK, "utf8 key");
    for (size_t i = 0; i < sizeof fixed_types / sizeof fixed_types[0]; i++) {
        unsigned char data[3 * 8];
        for (size_t j = 0; j < sizeof data; j++) data[j] = (unsigned char)(j * 7 + i);
        if (fixed_types[i] == GGUF_BOOL) { data[0] = 1; data[1] = 0; data[2] = 1; }
        if (fixed_types[i] == GGUF_F32) { float f[3] = {1.5f, -2.0f, 1e30f}; memcpy(data, f, 12); }
        if (fixed_types[i] == GGUF_F64) { double d[3] = {1.5, -2.0, 1e300}; memcpy(data, d, 24); }
        char key[32];
        snprintf(key, sizeof key, "arr.%s", gguf_vtype_name(fixed_types[i]));
        CHECK(gguf_writer_set_arr(w, key, fixed_types[i], data, 3) == LAYA_OK, "arr %s", key);
    }
    CHECK(gguf_writer_set_arr(w, "arr.empty", GGUF_I32, NULL, 0) == LAYA_OK, "empty arr");
    gguf_str strs[5] = {{"first", 5}, {"", 0}, {"nul\0inside", 10}, {long_str, sizeof long_str - 1}, {"\xff\xfe", 2}};
    CHECK(gguf_writer_set_arr_str(w, "arr.str", strs, 5) == LAYA_OK, "arr str");
    CHECK(gguf_writer_set_arr_str(w, "arr.str_empty", NULL, 0) == LAYA_OK, "arr str empty");
    for (size_t i = 0; i < NT; i++) {
        if (!g_t[i].data) {
            g_t[i].data = malloc(g_t[i].size);
            for (size_t j = 0; j < g_t[i].size; j++) g_t[i].data[j] = (unsigned char)(j * 31 + i * 17 + 1);
        }
        CHECK(gguf_writer_add_tensor(w, g_t[i].name, g_t[i].type, g_t[i].n_dims, g_t[i].ne, g_t[i].data) == LAYA_OK,
              "add tensor %s", g_t[i].name);
    }
    char err[256] = "";
    CHECK(gguf_writer_write(w, path, err, sizeof err) == LAYA_OK, "write: %s", err);
    /* The buffer path shares the serializer: the same bytes as the file, and they open the same way. */
    void *mem = NULL;
    size_t mem_n = 0, file_n = 0;
    CHECK(gguf_writer_to_buffer(w, &mem, &mem_n, err, sizeof err) == LAYA_OK && mem, "to_buffer: %s", err);
    unsigned char *file = read_all(path, &file_n);
    CHECK(file && mem && file_n == mem_n && !memcmp(file, mem, mem_n), "buffer == file (%zu vs %zu bytes)", mem_n,
          file_n);
    gguf_file *bf = NULL;
    CHECK(mem && gguf_open_buffer(mem, mem_n, &bf, err, sizeof err) == LAYA_OK, "open buffer: %s", err);
    CHECK(!bf || gguf_n_kv(bf) == 29, "buffer n_kv");
    gguf_close(bf);
    free(file);
    laya_free(mem);
    gguf_writer_free(w);
}

static void check_roundtrip(const gguf_file *f) {
    char err[256];
    CHECK(gguf_version(f) == 3, "version %u", gguf_version(f));
    CHECK(gguf_alignment(f) == 64, "alignment %" PRIu64, gguf_alignment(f));
    CHECK(gguf_data_offset(f) % 64 == 0, "data offset");
    CHECK(gguf_file_size(f) % 64 == 0, "file size padded to alignment");
    CHECK(gguf_n_kv(f) == 29, "n_kv %" PRIu64, gguf_n_kv(f));
    CHECK(gguf_n_tensors(f) == NT, "n_tensors");
    const gguf_kv *first = gguf_kv_at(f, 0);
    CHECK(first && str_eq(first->key, "general.alignment", 17), "first key kept in order");
    CHECK(gguf_kv_at(f, gguf_n_kv(f)) == NULL, "kv_at past end");
    CHECK(gguf_tensor_at(f, NT) == NULL, "tensor_at past end");

    uint32_t u32 = 0; int64_t i64 = 0; float f32 = 0; int b = -1; gguf_str s;
    CHECK(gguf_get_u32(f, "k.u32", &u32) == LAYA_OK && u32 == 4000000000u, "u32 %u", u32);
    CHECK(gguf_get_i64(f, "k.i32", &i64) == LAYA_OK && i64 == -123456, "i32");
    CHECK(gguf_get_u32(f, "k.i32", &u32) == LAYA_ERR_TYPE, "negative as u32");
    CHECK(gguf_get_i64(f, "k.u64", &i64) == LAYA_ERR_TYPE, "u64 max as i64");
    CHECK(gguf_get_u32(f, "k.u64", &u32) == LAYA_ERR_TYPE, "u64 max as u32");
    CHECK(gguf_get_f32(f, "k.f32", &f32) == LAYA_OK && f32 == 0.15625f, "f32");
    CHECK(gguf_get_bool(f, "k.bool", &b) == LAYA_OK && b == 1, "bool");
    CHECK(gguf_get_bool(f, "k.u8", &b) == LAYA_ERR_TYPE, "u8 as bool");
    CHECK(gguf_get_u32(f, "k.u8", &u32) == LAYA_OK && u32 == 200, "u8");
    CHECK(gguf_get_i64(f, "k.i8", &i64) == LAYA_OK && i64 == -100, "i8");
    CHECK(gguf_get_u32(f, "k.u16", &u32) == LAYA_OK && u32 == 60000, "u16");
    CHECK(gguf_get_i64(f, "k.i16", &i64) == LAYA_OK && i64 == -30000, "i16");
    CHECK(gguf_get_i64(f, "k.i64", &i64) == LAYA_OK && i64 == INT64_MIN, "i64");
    CHECK(gguf_get_f32(f, "k.f64", &f32) == LAYA_ERR_TYPE, "f64 beyond float range");
    CHECK(gguf_get_f32(f, "k.u32", &f32) == LAYA_ERR_TYPE, "int as float");
    CHECK(gguf_get_u32(f, "k.f32", &u32) == LAYA_ERR_TYPE, "float as int");
    CHECK(gguf_get_str(f, "general.name", &s) == LAYA_OK && str_eq(s, "round trip", 10), "str");
    CHECK(gguf_get_str(f, "k.empty_str", &s) == LAYA_OK && s.n == 0, "empty str");
    CHECK(gguf_get_str(f, "k.ключ", &s) == LAYA_OK && str_eq(s, "значение", strlen("значение")), "utf8");
    CHECK(gguf_get_str(f, "k.u32", &s) == LAYA_ERR_TYPE, "u32 as str");
    CHECK(gguf_get_u32(f, "no.such.key", &u32) == LAYA_ERR_NOT_FOUND, "absent");
    CHECK(gguf_find_kv(f, "k.u3") == NULL && gguf_find_kv(f, "k.u32x") == NULL, "prefix is not a match");
    const gguf_kv *kv = gguf_find_kv(f, "k.f64");
    double d;
    memcpy(&d, kv->data, 8);
    CHECK(kv && kv->type == GGUF_F64 && kv->data_size == 8 && d == -2.5e300, "f64 raw");

    for (size_t i = 0; i < sizeof fixed_types / sizeof fixed_types[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "arr.%s", gguf_vtype_name(fixed_types[i]));
        const gguf_kv *a = NULL;
        CHECK(gguf_get_arr(f, key, fixed_types[i], &a) == LAYA_OK && a, "get_arr %s", key);
        if (!a) continue;
        CHECK(a->arr_n == 3 && a->data_size == 3 * fixed_size[i], "arr %s size", key);
        unsigned char data[3 * 8];
        for (size_t j = 0; j < sizeof data; j++) data[j] = (unsigned char)(j * 7 + i);
        if (fixed_types[i] == GGUF_BOOL) { data[0] = 1; data[1] = 0; data[2] = 1; }
        if (fixed_types[i] == GGUF_F32) { float fl[3] = {1.5f, -2.0f, 1e30f}; memcpy(data, fl, 12); }
        if (fixed_types[i] == GGUF_F64) { double dd[3] = {1.5, -2.0, 1e300}; memcpy(data, dd, 24); }
        CHECK(!memcmp(a->data, data, 3 * fixed_size[i]), "arr %s bytes", key);
        CHECK(gguf_get_arr(f, key, fixed_types[i] == GGUF_U8 ? GGUF_I8 : GGUF_U8, &a) == LAYA_ERR_TYPE && !a,
              "arr %s wrong elem type", key);
    }
    const gguf_kv *a = NULL;
    CHECK(gguf_get_arr(f, "arr.f32", GGUF_ARR_ANY, &a) == LAYA_OK && a, "ANY");
    CHECK(a && gguf_arr_num(a, 0) == 1.5 && gguf_arr_num(a, 1) == -2.0 && gguf_arr_num(a, 2) == (double)1e30f,
          "arr_num f32");
    CHECK(gguf_arr_num(a, 3) == 0.0, "arr_num out of range");
    CHECK(gguf_get_arr(f, "arr.i16", GGUF_I16, &a) == LAYA_OK && gguf_arr_num(a, 0) == 3 + 10 * 256,
          "arr_num i16 %g", gguf_arr_num(a, 0));
    CHECK(gguf_get_arr(f, "arr.bool", GGUF_BOOL, &a) == LAYA_OK && gguf_arr_num(a, 2) == 1.0, "arr_num bool");
    CHECK(gguf_get_arr(f, "arr.empty", GGUF_I32, &a) == LAYA_OK && a->arr_n == 0, "empty arr");
    CHECK(gguf_get_arr(f, "k.u32", GGUF_ARR_ANY, &a) == LAYA_ERR_TYPE, "scalar is not an array");
    CHECK(gguf_get_arr(f, "arr.str", GGUF_STRING, &a) == LAYA_OK && a->arr_n == 5, "str arr");
    if (a) {
        CHECK(str_eq(arr_str(a, 0), "first", 5), "s0");
        CHECK(arr_str(a, 1).n == 0, "s1");
        CHECK(str_eq(arr_str(a, 2), "nul\0inside", 10), "s2");
        CHECK(str_eq(arr_str(a, 3), long_str, sizeof long_str - 1), "s3");
        CHECK(str_eq(arr_str(a, 4), "\xff\xfe", 2), "s4 (values need not be UTF-8)");
        CHECK(arr_str(a, 5).p == NULL, "s5 out of range");
        gguf_str_iter it = gguf_arr_strs(a);
        gguf_str x;
        int k = 0;
        while (gguf_str_next(&it, &x)) k++;
        CHECK(k == 5 && !gguf_str_next(&it, &x), "the iterator stops after the 5 strings (%d)", k);
        CHECK(gguf_arr_num(a, 0) == 0.0, "arr_num on strings");
    }
    CHECK(gguf_get_arr(f, "arr.str_empty", GGUF_STRING, &a) == LAYA_OK && a->arr_n == 0 &&
          arr_str(a, 0).p == NULL, "empty str arr");
    CHECK(arr_str(gguf_find_kv(f, "arr.u8"), 0).p == NULL, "arr_str on numbers");

    for (size_t i = 0; i < NT; i++) {
        const gguf_tensor *t = gguf_find_tensor(f, g_t[i].name);
        CHECK(t != NULL, "find %s", g_t[i].name);
        if (!t) continue;
        CHECK(t == gguf_tensor_at(f, i), "order %s", g_t[i].name);
        CHECK(t->type == g_t[i].type && t->n_dims == g_t[i].n_dims, "type/dims %s", g_t[i].name);
        CHECK(!memcmp(t->ne, g_t[i].ne, sizeof t->ne), "ne %s", g_t[i].name);
        CHECK(t->size == g_t[i].size, "size %s %" PRIu64, g_t[i].name, t->size);
        CHECK(t->size == qt_row_bytes(t->type, t->ne[0]) * (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]),
              "qt_row_bytes agrees %s", g_t[i].name);
        CHECK(t->offset % 64 == 0, "offset aligned %s", g_t[i].name);
        CHECK(!memcmp(t->data, g_t[i].data, g_t[i].size), "data %s", g_t[i].name);
    }
    CHECK(gguf_find_tensor(f, "nope") == NULL, "absent tensor");
    CHECK(gguf_check_token_ids(f, err, sizeof err) == LAYA_OK, "no tokenizer is fine: %s", err);
}

static void test_roundtrip(void) {
    char p1[128], p2[128], err[256] = "";
    snprintf(p1, sizeof p1, "%s/rt.gguf", g_dir);
    snprintf(p2, sizeof p2, "%s/rt2.gguf", g_dir);
    write_roundtrip_file(p1);
    gguf_file *f = NULL;
    CHECK(gguf_open(p1, &f, err, sizeof err) == LAYA_OK, "open: %s", err);
    if (!f) return;
    check_roundtrip(f);

    /* Copy every kv and tensor into a second writer: the bytes must come out identical. */
    gguf_writer *w = gguf_writer_new();
    for (uint64_t i = 0; i < gguf_n_kv(f); i++)
        CHECK(gguf_writer_copy_kv(w, gguf_kv_at(f, i)) == LAYA_OK, "copy kv %" PRIu64, i);
    char names[NT][64];
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        snprintf(names[i], sizeof names[i], "%.*s", (int)t->name.n, t->name.p);
        CHECK(gguf_writer_add_tensor(w, names[i], t->type, t->n_dims, t->ne, t->data) == LAYA_OK, "copy tensor");
    }
    CHECK(gguf_writer_write(w, p2, err, sizeof err) == LAYA_OK, "write copy: %s", err);
    gguf_writer_free(w);
    gguf_close(f);
    size_t n1 = 0, n2 = 0;
    unsigned char *b1 = read_all(p1, &n1), *b2 = read_all(p2, &n2);
    CHECK(b1 && b2 && n1 == n2 && !memcmp(b1, b2, n1), "copy is byte-identical (%zu vs %zu bytes)", n1, n2);
    free(b1);
    free(b2);
    unlink(p2);
}

static void test_v2(void) {
    buf b = {0};
    b_header(&b, 2, 1, 2);
    b_str(&b, "general.name"); b_u32(&b, GGUF_STRING); b_str(&b, "v2 file");
    b_str(&b, "x"); b_u32(&b, GGUF_ARRAY); b_u32(&b, GGUF_STRING); b_u64(&b, 2); b_str(&b, "p"); b_str(&b, "qq");
    b_str(&b, "w"); b_u32(&b, 1); b_u64(&b, 4); b_u32(&b, QT_F32); b_u64(&b, 0);
    b_pad(&b, 32);
    size_t data_at = b.n;
    float v[4] = {1, 2, 3, 4};
    b_put(&b, v, 16);
    gguf_file *f = NULL;
    char err[256] = "";
    CHECK(gguf_open_buffer(b.p, b.n, &f, err, sizeof err) == LAYA_OK, "v2: %s", err);
    if (f) {
        gguf_str s;
        CHECK(gguf_version(f) == 2, "v2 version");
        CHECK(gguf_get_str(f, "general.name", &s) == LAYA_OK && str_eq(s, "v2 file", 7), "v2 str");
        const gguf_kv *a = NULL;
        CHECK(gguf_get_arr(f, "x", GGUF_STRING, &a) == LAYA_OK && str_eq(arr_str(a, 1), "qq", 2), "v2 arr");
        const gguf_tensor *t = gguf_find_tensor(f, "w");
        CHECK(t && t->data == b.p + data_at && ((const float *)t->data)[3] == 4.0f, "v2 tensor");
        CHECK(gguf_data_offset(f) == data_at && gguf_alignment(f) == 32, "v2 data offset");
        gguf_close(f);
    }
    /* The same bytes from disk, through mmap. */
    char path[128];
    snprintf(path, sizeof path, "%s/v2.gguf", g_dir);
    CHECK(write_all(path, b.p, b.n), "write v2");
    CHECK(gguf_open(path, &f, err, sizeof err) == LAYA_OK && gguf_version(f) == 2, "v2 mmap: %s", err);
    gguf_close(f);
    unlink(path);
    free(b.p);
}

/* ------------------------------------------------------------------------------------------------------ */
typedef struct { char file[128]; char status[16]; char msg[200]; int seen; } expect;

static laya_status status_of(const char *s) {
    if (!strcmp(s, "FORMAT")) return LAYA_ERR_FORMAT;
    if (!strcmp(s, "UNSUPPORTED")) return LAYA_ERR_UNSUPPORTED;
    return LAYA_OK;
}

static void test_bad_corpus(void) {
    const char *dir = "tests/fixtures/gguf_bad";
    static expect ex[512];
    int n_ex = 0;
    char line[512], path[512];
    snprintf(path, sizeof path, "%s/EXPECT", dir);
    FILE *fp = fopen(path, "r");
    CHECK(fp != NULL, "cannot read %s (run from the repository root)", path);
    while (fp && n_ex < 512 && fgets(line, sizeof line, fp)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = 0;
        expect *e = &ex[n_ex];
        int off = 0;
        if (sscanf(line, "%127s %15s %n", e->file, e->status, &off) >= 2) {
            snprintf(e->msg, sizeof e->msg, "%s", line + off);
            n_ex++;
        }
    }
    if (fp) fclose(fp);
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    int n_files = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 5, ".gguf")) continue;
        n_files++;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        char err[256] = "";
        gguf_file *f = NULL;
        double t0 = now_s();
        laya_status st = gguf_open(path, &f, err, sizeof err);
        if (st == LAYA_OK) {
            st = gguf_check_token_ids(f, err, sizeof err);
            gguf_close(f);
        } else {
            CHECK(f == NULL, "%s: handle left on failure", de->d_name);
        }
        CHECK(now_s() - t0 < 1.0, "%s: took %.2f s", de->d_name, now_s() - t0);
        CHECK(st != LAYA_OK, "%s: accepted", de->d_name);
        CHECK(err[0] != 0, "%s: no message", de->d_name);
        for (int i = 0; i < n_ex; i++) {
            if (strcmp(ex[i].file, de->d_name)) continue;
            ex[i].seen = 1;
            CHECK(st == status_of(ex[i].status), "%s: status %s, expected %s (%s)", de->d_name, laya_status_str(st),
                  ex[i].status, err);
            CHECK(strstr(err, ex[i].msg) != NULL, "%s: message \"%s\" lacks \"%s\"", de->d_name, err, ex[i].msg);
        }
    }
    if (d) closedir(d);
    for (int i = 0; i < n_ex; i++) CHECK(ex[i].seen, "%s listed in EXPECT but missing", ex[i].file);
    CHECK(n_files >= 80 && n_ex >= 80, "corpus has %d files, %d expectations", n_files, n_ex);
}

/* The fuzz seeds come from the Python generator: an independent writer the reader must accept. */
static void test_seeds(void) {
    const char *dir = "tests/fuzz/corpus_gguf";
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    int n = 0;
    struct dirent *de;
    char path[512], err[256];
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, "valid_", 6)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        gguf_file *f = NULL;
        err[0] = 0;
        CHECK(gguf_open(path, &f, err, sizeof err) == LAYA_OK, "%s: %s", de->d_name, err);
        CHECK(!f || gguf_check_token_ids(f, err, sizeof err) == LAYA_OK, "%s tokens: %s", de->d_name, err);
        if (f && !strcmp(de->d_name, "valid_all_types.gguf")) {
            uint32_t u; int64_t i; float x; gguf_str s; const gguf_kv *a;
            CHECK(gguf_get_u32(f, "k.u8", &u) == LAYA_OK && u == 254, "py u8");
            CHECK(gguf_get_i64(f, "k.i8", &i) == LAYA_OK && i == -128, "py i8");
            CHECK(gguf_get_i64(f, "k.u64", &i) == LAYA_ERR_TYPE, "py u64 2^63");
            CHECK(gguf_get_i64(f, "k.i64", &i) == LAYA_OK && i == -((int64_t)1 << 40), "py i64");
            CHECK(gguf_get_f32(f, "k.f64", &x) == LAYA_OK && x == 1.25f, "py f64");
            CHECK(gguf_get_str(f, "k.str", &s) == LAYA_OK && str_eq(s, "h\0llo", 5), "py str");
            CHECK(gguf_get_arr(f, "k.arr_str", GGUF_STRING, &a) == LAYA_OK && str_eq(arr_str(a, 2), "bc", 2),
                  "py arr str");
            CHECK(gguf_n_tensors(f) == 3 && gguf_find_tensor(f, "q")->ne[3] == 2, "py tensors");
        }
        gguf_close(f);
        n++;
    }
    if (d) closedir(d);
    CHECK(n >= 5, "%d valid seeds", n);
}

/* Every prefix of a valid file, in an exact-size heap copy so ASan sees any read past the end. */
static void test_truncations(void) {
    char path[128];
    snprintf(path, sizeof path, "%s/rt.gguf", g_dir);
    size_t n = 0;
    unsigned char *full = read_all(path, &n);
    CHECK(full != NULL, "read %s", path);
    if (!full) return;
    gguf_file *f = NULL;
    CHECK(gguf_open_buffer(full, n, &f, NULL, 0) == LAYA_OK, "full file");
    uint64_t end = 0; /* where the last tensor's data ends: any longer prefix is a valid file */
    for (uint64_t i = 0; f && i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        end = LAYA_MAX(end, gguf_data_offset(f) + t->offset + t->size);
    }
    gguf_close(f);
    int bad = 0, ok = 0;
    for (size_t len = 0; len <= n; len++) {
        unsigned char *p = malloc(len ? len : 1);
        memcpy(p, full, len);
        char err[256] = "";
        laya_status st = gguf_open_buffer(p, len, &f, err, sizeof err);
        if (len < end) {
            if (st != LAYA_ERR_FORMAT || f || !err[0]) {
                bad++;
                if (bad < 5) CHECK(0, "prefix %zu: status %s (%s)", len, laya_status_str(st), err);
            }
        } else {
            ok += st == LAYA_OK;
        }
        gguf_close(f);
        free(p);
    }
    CHECK(bad == 0, "%d of %" PRIu64 " prefixes misbehaved", bad, end);
    CHECK(ok == (int)(n - end + 1), "prefixes past the last tensor open (%d)", ok);
    free(full);
}

static void test_hostile_counts(void) {
    char err[256];
    gguf_file *f = NULL;
    for (int which = 0; which < 2; which++) {
        buf b = {0};
        b_header(&b, 3, which ? (uint64_t)1 << 60 : 0, which ? 0 : (uint64_t)1 << 60);
        for (int i = 0; i < 64; i++) b_u64(&b, 5); /* plausible-looking bytes after the header */
        double t0 = now_s();
        laya_status st = gguf_open_buffer(b.p, b.n, &f, err, sizeof err);
        CHECK(st == LAYA_ERR_FORMAT && f == NULL && strstr(err, "cannot fit"), "2^60 entries: %s", err);
        CHECK(now_s() - t0 < 0.01, "2^60 entries took %.3f s", now_s() - t0);
        free(b.p);
    }

    /* 10^6 keys, then the same with a duplicate at the end: sorting, not pairwise comparison (which would
     * take hours). Under AddressSanitizer (`make asan`) the parse is 20-60x slower: 23-35 s on a Zen 5
     * guest, so the bound grows with it there. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZER_SLOWDOWN 10
#else
#define SANITIZER_SLOWDOWN 1
#endif
    enum { N = 1000000 };
    for (int dup = 0; dup < 2; dup++) {
        buf b = {0};
        b_header(&b, 3, 0, N);
        char key[32];
        for (uint32_t i = 0; i < N; i++) {
            snprintf(key, sizeof key, "k.%07u", dup && i == N - 1 ? 12345u : (unsigned)((i * 7919ull) % N));
            b_str(&b, key);
            b_u32(&b, GGUF_U32);
            b_u32(&b, i);
        }
        double t0 = now_s();
        laya_status st = gguf_open_buffer(b.p, b.n, &f, err, sizeof err);
        double dt = now_s() - t0;
        if (dup) {
            CHECK(st == LAYA_ERR_FORMAT && strstr(err, "duplicate key 'k.0012345'"), "dup in 10^6: %s", err);
        } else {
            uint32_t v = 0;
            CHECK(st == LAYA_OK, "10^6 keys: %s", err);
            CHECK(gguf_get_u32(f, "k.0007919", &v) == LAYA_OK && v == 1, "lookup among 10^6");
            CHECK(gguf_find_kv(f, "k.1000000") == NULL, "absent among 10^6");
        }
        CHECK(dt < 10.0 * SANITIZER_SLOWDOWN, "10^6 keys took %.2f s", dt);
        gguf_close(f);
        f = NULL;
        free(b.p);
    }

    /* 2*10^5 tensors at the same offset: the overlap check must not be pairwise either. */
    {
        enum { T = 200000 };
        buf b = {0};
        b_header(&b, 3, T, 0);
        char name[32];
        for (uint32_t i = 0; i < T; i++) {
            snprintf(name, sizeof name, "t%u", i);
            b_str(&b, name); b_u32(&b, 1); b_u64(&b, 8); b_u32(&b, QT_F32); b_u64(&b, 0);
        }
        b_pad(&b, 32);
        for (int i = 0; i < 8; i++) b_u32(&b, 0);
        double t0 = now_s();
        laya_status st = gguf_open_buffer(b.p, b.n, &f, err, sizeof err);
        CHECK(st == LAYA_ERR_FORMAT && strstr(err, "overlap"), "same-offset tensors: %s", err);
        CHECK(now_s() - t0 < 10.0, "overlap check took %.2f s", now_s() - t0);
        free(b.p);
    }

    /* A 10^6-element string array: the index makes element access O(1). */
    {
        enum { S = 1000000 };
        buf b = {0};
        b_header(&b, 3, 0, 1);
        b_str(&b, "tokenizer.ggml.tokens"); b_u32(&b, GGUF_ARRAY); b_u32(&b, GGUF_STRING); b_u64(&b, S);
        char tok[32];
        for (uint32_t i = 0; i < S; i++) {
            snprintf(tok, sizeof tok, "tok%u", i);
            b_str(&b, tok);
        }
        laya_status st = gguf_open_buffer(b.p, b.n, &f, err, sizeof err);
        CHECK(st == LAYA_OK, "10^6 strings: %s", err);
        const gguf_kv *a = gguf_find_kv(f, "tokenizer.ggml.tokens");
        int good = 1;
        for (uint32_t i = 0; a && i < S; i += 9973) {
            snprintf(tok, sizeof tok, "tok%u", i);
            good &= str_eq(arr_str(a, i), tok, strlen(tok));
        }
        CHECK(a && good && str_eq(arr_str(a, S - 1), "tok999999", 9), "string index");
        gguf_close(f);
        free(b.p);
    }
}

static void test_token_ids(void) {
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/tok.gguf", g_dir);
    gguf_str toks[4] = {{"<s>", 3}, {"</s>", 4}, {"a", 1}, {"b", 1}};
    float scores[4] = {0, 0, -1, -2};
    int32_t types[4] = {3, 3, 1, 1};
    for (int variant = 0; variant < 5; variant++) {
        gguf_writer *w = gguf_writer_new();
        gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 4);
        gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_F32, scores, variant == 2 ? 3 : 4);
        gguf_writer_set_arr(w, "tokenizer.ggml.token_type", variant == 3 ? GGUF_U32 : GGUF_I32, types, 4);
        gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 0);
        gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", variant == 1 ? 4 : 3);
        if (variant == 4) gguf_writer_set_i32(w, "tokenizer.ggml.fim_mid_token_id", -5);
        CHECK(gguf_writer_write(w, path, err, sizeof err) == LAYA_OK, "write tok: %s", err);
        gguf_writer_free(w);
        gguf_file *f = NULL;
        CHECK(gguf_open(path, &f, err, sizeof err) == LAYA_OK, "open tok: %s", err);
        err[0] = 0;
        laya_status st = gguf_check_token_ids(f, err, sizeof err);
        static const char *const want[] = {NULL, "eos_token_id = 4 is out of range", "scores has 3 entries",
                                           "token_type has type array of u32", "fim_mid_token_id = -5 is negative"};
        if (!want[variant]) CHECK(st == LAYA_OK, "valid tokens: %s", err);
        else CHECK(st == LAYA_ERR_FORMAT && strstr(err, want[variant]), "variant %d: %s", variant, err);
        gguf_close(f);
    }
    unlink(path);
}

static int count_dir(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) n += de->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static void test_writer_misuse(void) {
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/misuse.gguf", g_dir);
    int before = count_dir(g_dir);
    gguf_writer *w = gguf_writer_new();
    float data[64] = {0};
    int64_t ne[4] = {8, 1, 1, 1}, ne33[1] = {33}, ne0[2] = {8, 0}, neneg[1] = {-8};
    CHECK(gguf_writer_add_tensor(w, "a", QT_F32, 0, ne, data) == LAYA_ERR_INVALID_ARG, "n_dims 0");
    CHECK(gguf_writer_add_tensor(w, "a", QT_F32, 5, ne, data) == LAYA_ERR_INVALID_ARG, "n_dims 5");
    CHECK(gguf_writer_add_tensor(w, "a", QT_F32, 2, ne0, data) == LAYA_ERR_INVALID_ARG, "zero dim");
    CHECK(gguf_writer_add_tensor(w, "a", QT_F32, 1, neneg, data) == LAYA_ERR_INVALID_ARG, "negative dim");
    CHECK(gguf_writer_add_tensor(w, "a", QT_Q8_0, 1, ne33, data) == LAYA_ERR_INVALID_ARG, "ne0 not a block multiple");
    CHECK(gguf_writer_add_tensor(w, "a", 40, 1, ne, data) == LAYA_ERR_UNSUPPORTED, "unknown type");
    CHECK(gguf_writer_add_tensor(w, "", QT_F32, 1, ne, data) == LAYA_ERR_INVALID_ARG, "empty name");
    CHECK(gguf_writer_add_tensor(w, "a", QT_F32, 1, ne, NULL) == LAYA_ERR_INVALID_ARG, "NULL data");
    CHECK(gguf_writer_set_u32(w, "", 1) == LAYA_ERR_INVALID_ARG, "empty key");
    CHECK(gguf_writer_set_u32(w, "bad\xc3", 1) == LAYA_ERR_INVALID_ARG, "non-UTF-8 key");
    uint8_t bools[3] = {0, 2, 1}, two = 2;
    CHECK(gguf_writer_set_arr(w, "b", GGUF_BOOL, bools, 3) == LAYA_ERR_INVALID_ARG, "bool array 2");
    CHECK(gguf_writer_set_scalar(w, "b", GGUF_BOOL, &two) == LAYA_ERR_INVALID_ARG, "bool 2");
    CHECK(gguf_writer_set_arr(w, "b", GGUF_STRING, bools, 3) == LAYA_ERR_INVALID_ARG, "set_arr of strings");
    CHECK(gguf_writer_set_arr(w, "b", GGUF_ARRAY, bools, 3) == LAYA_ERR_INVALID_ARG, "set_arr of arrays");
    CHECK(gguf_writer_set_scalar(w, "b", GGUF_STRING, "x") == LAYA_ERR_INVALID_ARG, "scalar string");

    CHECK(gguf_writer_add_tensor(w, "a", QT_F32, 1, ne, data) == LAYA_OK, "a");
    CHECK(gguf_writer_add_tensor(w, "b", QT_F32, 1, ne, data) == LAYA_OK, "b");
    CHECK(gguf_writer_add_tensor(w, "a", QT_F32, 1, ne, data) == LAYA_OK, "a again (refused at write)");
    CHECK(gguf_writer_write(w, path, err, sizeof err) == LAYA_ERR_INVALID_ARG && strstr(err, "duplicate tensor name"),
          "duplicate tensor: %s", err);
    void *mem = (void *)1;
    size_t mem_n = 1;
    CHECK(gguf_writer_to_buffer(w, &mem, &mem_n, err, sizeof err) == LAYA_ERR_INVALID_ARG && !mem && !mem_n &&
          strstr(err, "duplicate tensor name"), "duplicate tensor, buffer: %s", err);
    CHECK(gguf_writer_to_buffer(NULL, &mem, &mem_n, err, sizeof err) == LAYA_ERR_INVALID_ARG, "to_buffer NULL w");
    CHECK(gguf_writer_to_buffer(w, NULL, &mem_n, err, sizeof err) == LAYA_ERR_INVALID_ARG, "to_buffer NULL buf");
    CHECK(gguf_writer_to_buffer(w, &mem, NULL, err, sizeof err) == LAYA_ERR_INVALID_ARG, "to_buffer NULL size");
    gguf_writer_free(w);

    w = gguf_writer_new();
    gguf_writer_set_u32(w, "general.alignment", 48);
    CHECK(gguf_writer_write(w, path, err, sizeof err) == LAYA_ERR_INVALID_ARG && strstr(err, "power of two"),
          "alignment 48: %s", err);
    CHECK(gguf_writer_to_buffer(w, &mem, &mem_n, err, sizeof err) == LAYA_ERR_INVALID_ARG &&
              strstr(err, "power of two"), "alignment 48, buffer: %s", err);
    gguf_writer_set_u64(w, "general.alignment", 64);
    CHECK(gguf_writer_write(w, path, err, sizeof err) == LAYA_ERR_INVALID_ARG && strstr(err, "u64"),
          "alignment u64: %s", err);
    gguf_writer_set_u32(w, "general.alignment", 32);
    CHECK(gguf_writer_write(w, "/nonexistent-dir/x.gguf", err, sizeof err) == LAYA_ERR_IO, "bad dir: %s", err);
    CHECK(count_dir(g_dir) == before, "failed writes leave no files behind");

    /* A failed rename (target is a directory) must remove the temporary file. */
    char sub[160];
    snprintf(sub, sizeof sub, "%s/adir", g_dir);
    mkdir(sub, 0755);
    char subfile[200];
    snprintf(subfile, sizeof subfile, "%s/inner", sub);
    write_all(subfile, "x", 1);
    CHECK(gguf_writer_write(w, sub, err, sizeof err) == LAYA_ERR_IO, "rename over a directory: %s", err);
    CHECK(count_dir(g_dir) == before + 1, "temporary file removed after failed rename");
    unlink(subfile);
    rmdir(sub);
    CHECK(gguf_writer_write(w, path, err, sizeof err) == LAYA_OK, "write: %s", err);
    gguf_file *f = NULL;
    CHECK(gguf_open(path, &f, err, sizeof err) == LAYA_OK && gguf_n_kv(f) == 1, "tensorless file: %s", err);
    CHECK(f && gguf_alignment(f) == 32 && gguf_n_tensors(f) == 0, "tensorless alignment");
    gguf_close(f);
    gguf_writer_free(w);
    unlink(path);

    CHECK(gguf_open("/nonexistent-file.gguf", &f, err, sizeof err) == LAYA_ERR_IO && !f, "missing file");
    CHECK(gguf_open(g_dir, &f, err, sizeof err) == LAYA_ERR_IO && !f, "directory");
    write_all(path, "", 0);
    CHECK(gguf_open(path, &f, err, sizeof err) == LAYA_ERR_FORMAT && !f, "empty file: %s", err);
    unlink(path);
    CHECK(gguf_open_buffer(NULL, 0, &f, err, sizeof err) == LAYA_ERR_FORMAT, "NULL, 0");
    CHECK(gguf_open_buffer("GGUF", 4, NULL, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL out");
    gguf_close(NULL);
    gguf_writer_free(NULL);
}

/* Out-of-memory injection: allocation k+1 fails; every k must give NOMEM (or OK) and leak nothing. */

static void test_oom(void) {
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/rt.gguf", g_dir);
    size_t n = 0;
    unsigned char *full = read_all(path, &n);
    int k, bad = 0;
    long allocs = 0;
    for (k = 0; k < 100; k++) {
        ta_install(k + 1);
        gguf_file *f = NULL;
        laya_status st = gguf_open_buffer(full, n, &f, err, sizeof err);
        allocs = ta_count;
        gguf_close(f);
        if (ta_live) bad++;
        if (st == LAYA_OK) break;
        if (st != LAYA_ERR_NOMEM) bad++;
    }
    CHECK(bad == 0 && k < 100, "open under OOM: %d bad, %d steps", bad, k);
    CHECK(allocs <= 8, "open makes %ld allocations", allocs);

    /* The writer: each step is allowed to fail with NOMEM, nothing may leak or crash. */
    char out[128];
    snprintf(out, sizeof out, "%s/oom.gguf", g_dir);
    for (k = 0; k < 200; k++) {
        ta_install(k + 1);
        gguf_writer *w = gguf_writer_new();
        laya_status st = w ? LAYA_OK : LAYA_ERR_NOMEM;
        gguf_str s[2] = {{"x", 1}, {"yy", 2}};
        float v[8] = {0};
        int64_t ne[1] = {8};
        char key[16];
        for (int i = 0; w && i < 20 && !st; i++) {
            snprintf(key, sizeof key, "k%d", i);
            st = gguf_writer_set_u32(w, key, (uint32_t)i);
        }
        if (!st) st = gguf_writer_set_arr_str(w, "s", s, 2);
        if (!st) st = gguf_writer_set_str(w, "t", "str");
        if (!st) st = gguf_writer_add_tensor(w, "w", QT_F32, 1, ne, v);
        if (!st) st = gguf_writer_add_tensor(w, "v", QT_F32, 1, ne, v);
        if (!st) st = gguf_writer_write(w, out, err, sizeof err);
        void *mem = NULL;
        size_t mem_n = 0;
        if (!st) st = gguf_writer_to_buffer(w, &mem, &mem_n, err, sizeof err);
        if (!st && (!mem || mem_n == 0)) bad++;
        laya_free(mem);
        gguf_writer_free(w);
        if (ta_live || (st && st != LAYA_ERR_NOMEM)) bad++;
        if (!st) break;
    }
    laya_set_alloc_hooks(NULL);
    CHECK(bad == 0 && k < 200, "writer under OOM: %d bad, %d steps", bad, k);
    unlink(out);
    free(full);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/test_gguf_XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_roundtrip();
    test_v2();
    test_bad_corpus();
    test_seeds();
    test_truncations();
    test_hostile_counts();
    test_token_ids();
    test_writer_misuse();
    test_oom();
    char path[128];
    snprintf(path, sizeof path, "%s/rt.gguf", g_dir);
    unlink(path);
    rmdir(g_dir);
    for (size_t i = 0; i < NT; i++) free(g_t[i].data);
    return DONE("test_gguf");
}
