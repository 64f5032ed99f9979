/* safetensors.h — read-only, mmap-backed reader for Hugging Face safetensors files: one file, or a model
 * directory holding model.safetensors or model.safetensors.index.json with its shards. Every header is
 * validated (types, shapes, sizes, offsets, overlaps, duplicate names, shard names) before it is trusted;
 * malformed input gives LAYA_ERR_FORMAT (or _UNSUPPORTED) and a message, never a crash.
 * Not here: writing, config.json / tokenizer.json, dtype conversion, big-endian hosts.
 *
 * File layout: u64 little-endian N, N bytes of UTF-8 JSON, then the data section. The JSON is one object:
 *   { "<name>": {"dtype": "F32", "shape": [d0, ..., dk], "data_offsets": [begin, end]}, ...,
 *     "__metadata__": {"<key>": "<string>", ...} }            (the metadata object is optional)
 * Offsets are bytes from the start of the data section (file offset 8 + N); shape[k] is contiguous.
 *
 * What the reader accepts, precisely:
 *  - 2 <= N <= ST_MAX_HEADER and N <= file size - 8; the header's first byte is '{' (no BOM, no leading
 *    space: writers never emit them, and the byte is what identifies the format); the JSON nests at most 3
 *    levels (root, entry, shape) and is strict (json.h: valid UTF-8, no lone surrogates); trailing spaces,
 *    the reference writer's padding, are whitespace to the parser.
 *  - every entry has exactly the fields dtype (string), shape (array of at most 8 integers >= 0) and
 *    data_offsets (array of two integers, begin <= end <= data section size); nothing else.
 *  - the product of the nonzero shape entries, and that times the dtype size, fit in int64 / uint64, and
 *    end - begin equals product(shape) * dtype size exactly. A shape of [] is a scalar (one element).
 *  - names are non-empty, unique, without NUL; UTF-8 validity is enforced by the JSON parser.
 *  - no two tensors' byte ranges overlap (empty tensors overlap nothing). Gaps between tensors and bytes
 *    after the last one are allowed: the reference writer never makes them, but every tensor's own range
 *    is checked, so they cost nothing in safety and some third-party writers align tensors with padding.
 *  - __metadata__ is an object of string -> string (keys unique, neither holding NUL).
 * Data pointers are as aligned as the file makes them (8 + N + begin): the reference writer pads N to a
 * multiple of 8, but the reader does not require it. Check alignment before casting to wider types.
 * As with any mapping, a file truncated by another process while the set is open makes reads fault. */
#ifndef LAYA_SAFETENSORS_H
#define LAYA_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

/* Dtypes as named in the safetensors header ("BOOL", "U8", ..., "F8_E4M3", "F8_E5M2"). Others (e.g. the
 * newer "F8_E8M0", "F4") are refused with LAYA_ERR_UNSUPPORTED and the name in the message. */
enum st_dtype {
    ST_BOOL, ST_U8, ST_I8, ST_U16, ST_I16, ST_F16, ST_BF16, ST_U32, ST_I32, ST_F32, ST_U64, ST_I64, ST_F64,
    ST_F8_E4M3, ST_F8_E5M2,
    ST_DTYPE_COUNT
};

/* Largest header accepted, in bytes (the reference implementation's limit is 100 MB too). */
#define ST_MAX_HEADER ((uint64_t)100 << 20)
#define ST_MAX_DIMS 8

typedef struct st_tensor {
    const char *name;      /* NUL-terminated, owned by the set */
    uint32_t dtype;        /* enum st_dtype */
    uint32_t n_dims;       /* 0..8 (0 = scalar) */
    int64_t shape[8];      /* safetensors order: shape[n_dims-1] is the contiguous (row) dimension; unused 0 */
    const void *data;      /* into the map; for an empty tensor still inside (or at the end of) the map */
    uint64_t size;         /* bytes: product(shape) * st_dtype_size(dtype) */
    uint32_t file;         /* which shard: index for st_file_name */
} st_tensor;

typedef struct st_set st_set;

/* Open a model directory: dir/model.safetensors if it exists, else dir/model.safetensors.index.json with
 * the shards its "weight_map" names (the same preference as transformers). The index must be an object
 * whose "weight_map" is a non-empty object of tensor name -> shard file name; other top-level keys (such
 * as "metadata") are ignored. Shard names must be plain file names in dir: no '/', no '\\', not "." or
 * "..", no NUL. Each shard is opened and mapped once; symlinks are followed (the Hugging Face cache links
 * snapshots to blobs). The index and the shards must agree exactly: every mapped tensor is in the shard the
 * map names, and every tensor of a shard is mapped to that shard; otherwise LAYA_ERR_FORMAT naming the
 * tensor and the files. Neither file present: LAYA_ERR_NOT_FOUND. Format errors in a shard are prefixed
 * with the shard's file name. */
laya_status st_open_dir(const char *dir, st_set **out, char *err, size_t errlen);
/* One .safetensors file, mapped read-only. */
laya_status st_open_file(const char *path, st_set **out, char *err, size_t errlen);
/* Same validation over a caller-owned buffer, which must outlive the set (used by the fuzzer and tests). */
laya_status st_open_buffer(const void *buf, size_t size, st_set **out, char *err, size_t errlen);
/* On any failure *out is NULL and err (if errlen > 0) holds a message. Thread safety: a set is immutable
 * after open; all the accessors below may be called from any number of threads at once. */
void st_close(st_set *s); /* accepts NULL; every pointer obtained from the set dies with it */

/* Tensors of all files, sorted by name (strcmp order), so st_at(s, i) is stable and deterministic.
 * st_at returns NULL for i >= st_count. st_find is a binary search: O(log n); NULL if absent. */
uint64_t st_count(const st_set *s);
const st_tensor *st_at(const st_set *s, uint64_t i);
const st_tensor *st_find(const st_set *s, const char *name);

/* A "__metadata__" string value, e.g. "format" -> "pt" or "mlx"; NULL if absent. With shards, the first
 * file (in st_file_name order) that has the key wins. O(log n). */
const char *st_metadata(const st_set *s, const char *key);

/* Files behind the set: 1 for st_open_file/st_open_buffer; the distinct shards, sorted by name, for an
 * index. st_file_name gives the file name as written in the index (or the path given to st_open_file,
 * or "<buffer>"); NULL for i >= st_file_count. */
uint32_t st_file_count(const st_set *s);
const char *st_file_name(const st_set *s, uint32_t i);

/* "F32", "BF16", ...; "unknown" for ids >= ST_DTYPE_COUNT. Static storage. */
const char *st_dtype_name(uint32_t dtype);
/* Bytes per element: 1, 2, 4 or 8; 0 for ids >= ST_DTYPE_COUNT. */
size_t st_dtype_size(uint32_t dtype);
/* Total bytes mapped from disk (0 for st_open_buffer): what the model costs in page cache at most. */
uint64_t st_mapped_bytes(const st_set *s);

#endif
