/* laya.h — the public API of Laya, a local language-model engine for per-keystroke decisions.
 * This header is the API documentation. Everything else under src/ is internal.
 * Conventions: every call that can fail returns laya_status; handles are opaque; destructors accept
 * NULL; the library never prints, never exits and never aborts on data from outside. */
#ifndef LAYA_H
#define LAYA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(LAYA_BUILD) && defined(__GNUC__)
#define LAYA_API __attribute__((visibility("default")))
#else
#define LAYA_API
#endif

typedef enum laya_status {
    LAYA_OK = 0,
    LAYA_ERR_INVALID_ARG,   /* a caller passed something the API does not accept */
    LAYA_ERR_NOMEM,         /* an allocation failed */
    LAYA_ERR_IO,            /* open/read/mmap/write failed */
    LAYA_ERR_FORMAT,        /* a file is malformed (bad magic, out-of-range offset, overflow, ...) */
    LAYA_ERR_UNSUPPORTED,   /* well-formed, but uses a feature Laya does not implement */
    LAYA_ERR_CAPACITY,      /* a fixed capacity (KV cache, batch, output buffer) would be exceeded */
    LAYA_ERR_NOT_FOUND,     /* a named key, tensor or token does not exist */
    LAYA_ERR_TYPE,          /* a metadata value has the wrong type */
} laya_status;

/* A static English description of a status code. Never NULL. */
LAYA_API const char *laya_status_str(laya_status s);

/* Detailed error messages: calls that fail on a handle leave a message readable with
 * laya_model_error()/laya_context_error(); calls that create a handle take an optional err buffer. */
#define LAYA_ERR_MSG_MAX 256

typedef int32_t laya_token;

/* ---------------------------------------------------------------------------------------------------
 * Models. A model is immutable after load and may be shared by any number of threads and contexts.
 * Weights are views into a read-only mmap of the file; nothing sized from file data is allocated before
 * it has been validated against the file size. */
typedef struct laya_model laya_model;

typedef struct laya_model_params {
    int32_t n_threads; /* worker threads for forward passes; 0 = number of online CPUs, at most 64 */
    int32_t vocab_only; /* 1: load only metadata and the tokenizer, no tensors */
} laya_model_params;

LAYA_API laya_model_params laya_model_default_params(void);

/* Load a GGUF file, or a Hugging Face model directory (config.json, tokenizer.json [+ tokenizer_config.json],
 * model.safetensors or a sharded set with model.safetensors.index.json; F32/F16/BF16 weights, or MLX
 * affine-quantized 4/8-bit weights as described by config.json's "quantization"), memory-mapped in place
 * with no conversion. Architectures llama, qwen2, qwen3. On failure *out is NULL, and err (if not NULL, errlen > 0) holds a message. */
LAYA_API laya_status laya_model_load(const char *path, laya_model_params params, laya_model **out,
                                     char *err, size_t errlen);
LAYA_API void laya_model_free(laya_model *m);

typedef struct laya_model_info {
    const char *arch;       /* "llama", "qwen2", "qwen3" */
    const char *name;       /* general.name, or "" */
    int32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train;
    float rope_theta, norm_eps;
    int32_t rope_neox;      /* 1: rotate halves (NeoX/Qwen layout), 0: rotate adjacent pairs */
    int32_t tied_output;    /* 1: output matrix is the token embedding */
    int32_t has_qkv_bias, has_qk_norm;
    const char *tok_model;  /* "gpt2" or "llama" */
    const char *tok_pre;    /* pre-tokenizer name: "llama3", "qwen2", "gpt2", "default", ... */
    laya_token bos, eos;    /* -1 if absent */
    int32_t add_bos;
    uint64_t n_params;
    uint64_t weight_bytes;  /* bytes of tensor data mapped */
    uint64_t file_bytes;
} laya_model_info;

LAYA_API void laya_model_get_info(const laya_model *m, laya_model_info *out);

/* The type of a named tensor as a string ("F32", "Q4_K", ...), with its shape (ne[0] is the row length).
 * Iterate i from 0 until the call returns LAYA_ERR_NOT_FOUND. Pointers live as long as the model. */
LAYA_API laya_status laya_model_tensor(const laya_model *m, int32_t i, const char **name,
                                       const char **type, int64_t ne[4], int32_t *n_dims);

LAYA_API const char *laya_model_error(const laya_model *m);

/* ---------------------------------------------------------------------------------------------------
 * Tokenizer (read from the model's GGUF metadata). Thread-safe on a shared model. */

/* Encode len bytes of text. Invalid UTF-8 is first replaced by U+FFFD per maximal invalid subpart (as
 * Python's bytes.decode(errors="replace") does), so any bytes are accepted. Control-token text such
 * as "<|endoftext|>" is matched only if parse_special is nonzero; user-defined added tokens (e.g. Qwen's
 * "<think>") are always matched, as Hugging Face tokenizers and llama.cpp do. No BOS is added here. Writes at most
 * cap ids; *n_out receives the number needed, and LAYA_ERR_CAPACITY is returned when it exceeds cap. */
LAYA_API laya_status laya_tokenize(const laya_model *m, const char *text, size_t len, int parse_special,
                                   laya_token *out, size_t cap, size_t *n_out);

/* The bytes of one token as it appears in text (byte tokens give one raw byte; may be part of a UTF-8
 * character). Returns a pointer valid as long as the model and sets *len, or NULL for a bad id. */
LAYA_API const char *laya_token_piece(const laya_model *m, laya_token id, size_t *len);

/* Decode ids to text, writing at most cap bytes; *n_out receives the bytes needed. Bytes of a UTF-8
 * character split across tokens are joined; invalid sequences come out as U+FFFD only if
 * replace_invalid is nonzero, otherwise raw. A leading space added by SentencePiece is removed when
 * strip_leading_space is nonzero. */
LAYA_API laya_status laya_detokenize(const laya_model *m, const laya_token *ids, size_t n,
                                     int strip_leading_space, int replace_invalid, char *out,
                                     size_t cap, size_t *n_out);

LAYA_API int32_t laya_n_vocab(const laya_model *m);

/* ---------------------------------------------------------------------------------------------------
 * Contexts: KV cache slots ("sequences") plus all the scratch memory a forward pass needs, allocated
 * once at creation. A context belongs to one thread at a time. laya_decode never allocates. */
typedef struct laya_context laya_context;

typedef struct laya_context_params {
    int32_t n_seq;        /* number of sequence slots (KV caches) */
    int32_t max_kv_size;  /* positions per slot, fixed */
    int32_t max_batch;    /* most tokens one laya_decode call may carry, over all sequences */
    int32_t max_logits;   /* most tokens in one batch that may ask for logits */
} laya_context_params;

LAYA_API laya_context_params laya_context_default_params(void);

LAYA_API laya_status laya_context_create(const laya_model *m, laya_context_params params,
                                         laya_context **out, char *err, size_t errlen);
LAYA_API void laya_context_free(laya_context *c);
LAYA_API const char *laya_context_error(const laya_context *c);

/* A batch: n tokens, each appended to the end of its sequence seq[i] (positions are implicit: the
 * sequence's current length, then +1 per earlier token of the same sequence in this batch). Tokens of
 * one sequence must appear in order. want_logits[i] != 0 asks for the logits after token i
 * (want_logits may be NULL: then only the last token of each sequence gets logits). */
typedef struct laya_batch {
    int32_t n;
    const laya_token *tokens;
    const int32_t *seq;
    const int8_t *want_logits;
} laya_batch;

/* Run the model over the batch. On error no sequence has changed length. */
LAYA_API laya_status laya_decode(laya_context *c, laya_batch batch);

/* Logits after token i of the last batch (n_vocab floats), or NULL if they were not asked for.
 * Valid until the next laya_decode on this context. */
LAYA_API const float *laya_get_logits(const laya_context *c, int32_t i);

/* Length (positions held) of a sequence. */
LAYA_API int32_t laya_seq_len(const laya_context *c, int32_t seq);
/* Drop every position >= n_pos of a sequence (n_pos <= current length). */
LAYA_API laya_status laya_seq_truncate(laya_context *c, int32_t seq, int32_t n_pos);
/* Make dst hold the first n_pos positions of src (dst's old contents are dropped). */
LAYA_API laya_status laya_seq_fork(laya_context *c, int32_t src, int32_t dst, int32_t n_pos);

/* ---------------------------------------------------------------------------------------------------
 * Files. */

/* Re-encode a GGUF model's weight matrices to type ("F32", "F16", "Q8_0", "Q4_0"); 1-D tensors stay F32.
 * Metadata is copied. */
LAYA_API laya_status laya_quantize_file(const char *in_path, const char *out_path, const char *type,
                                        char *err, size_t errlen);

/* Write a model directory (Hugging Face safetensors + config.json + tokenizer.json, or MLX 4/8-bit) as a
 * GGUF file in llama.cpp's conventions, weights re-encoded to type ("F32", "F16", "Q8_0", "Q4_0"; NULL =
 * "F16"). A 4-bit file keeps its output matrix at 6 or 8 bits, as llama.cpp does. */
LAYA_API laya_status laya_convert(const char *model_dir, const char *out_path, const char *type, char *err,
                                  size_t errlen);

/* The CPU kernel set chosen at run time: "avx512", "avx2", "neon" or "scalar". */
LAYA_API const char *laya_cpu_backend(void);

#ifdef __cplusplus
}
#endif
#endif
