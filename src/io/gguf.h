/* gguf.h — reader and writer for GGUF v2/v3 files (the format llama.cpp uses).
 * The reader maps the file read-only and validates every count, length, type, shape, offset and
 * alignment with overflow-checked arithmetic before allocating anything sized from the file. It never
 * aborts on bad data: a malformed file gives LAYA_ERR_FORMAT (or _UNSUPPORTED) and a message.
 *
 * Layout (all little-endian): magic "GGUF", u32 version, u64 n_tensors, u64 n_kv (v1 used u32: refused),
 * n_kv × {string key, u32 type, value}, n_tensors × {string name, u32 n_dims, u64 ne[n_dims], u32 type,
 * u64 offset}, padding to `general.alignment` (default 32), tensor data. string = u64 len + bytes. */
#ifndef LAYA_GGUF_H
#define LAYA_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

enum gguf_vtype {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5, GGUF_F32 = 6,
    GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10, GGUF_I64 = 11, GGUF_F64 = 12,
    GGUF_VTYPE_COUNT
};

typedef struct gguf_str { const char *p; uint64_t n; } gguf_str; /* view into the map, not NUL-terminated */

/* data/data_size of a gguf_kv, by type: a scalar's bytes; for GGUF_STRING the u64 length prefix and the
 * bytes; for arrays the elements as stored (strings: each with its u64 length prefix). Exactly what
 * follows the type (and array header) in the file, which is what gguf_writer_copy_kv copies. */
typedef struct gguf_kv {
    gguf_str key;
    uint32_t type;        /* enum gguf_vtype */
    uint32_t arr_type;    /* element type when type == GGUF_ARRAY (never GGUF_ARRAY: nested arrays refused) */
    uint64_t arr_n;       /* element count when type == GGUF_ARRAY */
    const uint8_t *data;  /* the raw value (for arrays: the first element) inside the map */
    uint64_t data_size;   /* bytes of the raw value */
} gguf_kv;

typedef struct gguf_tensor {
    gguf_str name;
    uint32_t n_dims;      /* 1..4 */
    int64_t ne[4];        /* ne[0] is the row length (contiguous); unused dims are 1 */
    uint32_t type;        /* qtypes.h ids */
    uint64_t offset;      /* from the start of the data section */
    uint64_t size;        /* bytes */
    const void *data;     /* into the map */
} gguf_tensor;

typedef struct gguf_file gguf_file;

/* Open and validate. Errors leave a message in err. */
laya_status gguf_open(const char *path, gguf_file **out, char *err, size_t errlen);
/* Same, over a caller-owned buffer (used by the fuzzer); the buffer must outlive the handle. */
laya_status gguf_open_buffer(const void *buf, size_t size, gguf_file **out, char *err, size_t errlen);
void gguf_close(gguf_file *f);

uint32_t gguf_version(const gguf_file *f);
uint64_t gguf_file_size(const gguf_file *f);
uint64_t gguf_n_kv(const gguf_file *f);
const gguf_kv *gguf_kv_at(const gguf_file *f, uint64_t i);
const gguf_kv *gguf_find_kv(const gguf_file *f, const char *key); /* NULL if absent */
uint64_t gguf_n_tensors(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);
uint64_t gguf_alignment(const gguf_file *f);
uint64_t gguf_data_offset(const gguf_file *f); /* file offset of the data section */

/* Typed getters. Integer getters accept any integer type whose value fits; float getters accept F32/F64.
 * They return LAYA_ERR_NOT_FOUND if absent and LAYA_ERR_TYPE on a type mismatch or out-of-range value. */
laya_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out);
laya_status gguf_get_i64(const gguf_file *f, const char *key, int64_t *out);
laya_status gguf_get_f32(const gguf_file *f, const char *key, float *out);
laya_status gguf_get_bool(const gguf_file *f, const char *key, int *out);
laya_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out);
/* Arrays (their elements already validated at open): the strings of a string array in order, each step
 * O(1) (open keeps no per-string index: a typing model's 200k strings would cost 1.6 MB of offsets, a
 * tenth of a fresh process's load time), or element i of an array of numbers:
 *     gguf_str_iter it = gguf_arr_strs(kv); gguf_str s; while (gguf_str_next(&it, &s)) ...           */
laya_status gguf_get_arr(const gguf_file *f, const char *key, uint32_t elem_type, const gguf_kv **out);
typedef struct gguf_str_iter {
    const uint8_t *p; /* the next element's length prefix */
    uint64_t left;
} gguf_str_iter;
gguf_str_iter gguf_arr_strs(const gguf_kv *kv); /* none left when kv is not an array of strings */
int gguf_str_next(gguf_str_iter *it, gguf_str *out); /* 1: *out is the next string; 0: none left */
double gguf_arr_num(const gguf_kv *kv, uint64_t i);     /* any numeric element type */
/* Added: elem_type for gguf_get_arr that accepts an array of any element type. */
#define GGUF_ARR_ANY 0xffffffffu
/* Added notes: kv passed to gguf_arr_strs/gguf_arr_num must come from gguf_kv_at/gguf_find_kv/gguf_get_arr
 * of a file still open. Out-of-range i, or a kv that is not an array of numbers, gives 0.0. Bool elements
 * read as 0/1. */

/* Added: "u32", "string", ...; "unknown" for ids >= GGUF_VTYPE_COUNT. Static storage. */
const char *gguf_vtype_name(uint32_t type);

/* Added: container-level checks of the tokenizer keys, for the model loader. If tokenizer.ggml.tokens is
 * present it must be an array of strings with at most INT32_MAX entries; tokenizer.ggml.scores (f32) and
 * tokenizer.ggml.token_type (i32) arrays, if present, must have the same length; every
 * tokenizer.ggml.{bos,eos,unknown,padding,separator,eot,eom,fim_pre,fim_suf,fim_mid}_token_id present must
 * be an integer in [0, n_tokens). Any of these without tokenizer.ggml.tokens is an error. LAYA_ERR_FORMAT
 * and a message on failure. */
laya_status gguf_check_token_ids(const gguf_file *f, char *err, size_t errlen);

/* Writer: collect metadata and tensors in memory order, then write in one pass. Tensor data is copied
 * from the caller's pointers at gguf_writer_write time (pointers must stay valid until then). */
typedef struct gguf_writer gguf_writer;
gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);
laya_status gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
laya_status gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v);
laya_status gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v);
laya_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
laya_status gguf_writer_set_bool(gguf_writer *w, const char *key, int v);
laya_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *v);
/* An array of n elements of a fixed-size type (not STRING/ARRAY), raw little-endian data. */
laya_status gguf_writer_set_arr(gguf_writer *w, const char *key, uint32_t elem_type, const void *data, uint64_t n);
laya_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const gguf_str *strs, uint64_t n);
/* Added: a scalar of any fixed-size type (not STRING/ARRAY); v points at its little-endian bytes. */
laya_status gguf_writer_set_scalar(gguf_writer *w, const char *key, uint32_t type, const void *v);
/* Copy a metadata entry from an open file verbatim (any type, arrays of strings included). */
laya_status gguf_writer_copy_kv(gguf_writer *w, const gguf_kv *kv);
/* n_dims 1..4, ne[0] the row length; data holds qt_row_bytes(type, ne[0]) * rows bytes. */
laya_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                   const int64_t *ne, const void *data);
/* The same with a name of nn bytes, not NUL-terminated (a gguf_tensor's name, copied from another file). */
laya_status gguf_writer_add_tensor_n(gguf_writer *w, const char *name, size_t nn, uint32_t type, uint32_t n_dims,
                                     const int64_t *ne, const void *data);
/* Added notes on the writer: setting a key that is already set replaces its value in place. Setters return
 * LAYA_ERR_INVALID_ARG for an empty / non-UTF-8 / NUL-containing key, a bool other than 0/1, a bad shape or
 * a row length that is not a multiple of the block size; LAYA_ERR_UNSUPPORTED for an unknown tensor type;
 * LAYA_ERR_NOMEM. gguf_writer_write refuses duplicate tensor names and a general.alignment that is not a
 * u32 power of two. It writes `path.tmp.<pid>.<n>` beside path and renames it over path only when every
 * write, fsync and close succeeded; on failure path is untouched and the temporary file removed. */
/* Write version 3 with `general.alignment` (default 32; set the key first to change it). */
laya_status gguf_writer_write(gguf_writer *w, const char *path, char *err, size_t errlen);
/* Added: the same bytes gguf_writer_write would write (one serializer serves both), into a buffer from
 * laya_malloc that the caller frees with laya_free; on failure *buf is NULL and *size 0. Same checks and
 * errors as gguf_writer_write, less the file ones; LAYA_ERR_NOMEM if the file would not fit in memory. */
laya_status gguf_writer_to_buffer(gguf_writer *w, void **buf, size_t *size, char *err, size_t errlen);

#endif
