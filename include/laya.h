/* laya.h — the public API of Laya, a local language-model engine for per-keystroke decisions.
 * This header is the API documentation. Everything else under src/ is internal.
 * Conventions: every call that can fail returns laya_status; handles are opaque; destructors accept
 * NULL; the library never prints, never exits and never aborts on data from outside (what it has to say
 * goes to the optional log callback, laya_set_log). docs/ARCHITECTURE.md follows one call through the code. */
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

/* ---------------------------------------------------------------------------------------------------
 * Versions.
 * LAYA_VERSION is the version of this header; laya_version() returns the library's. A program linked
 * against a shared liblaya compares the two at start-up (strcmp(laya_version(), LAYA_VERSION)) when it
 * needs the exact library it was built with. LAYA_VERSION_NUMBER is MAJOR * 1000000 + MINOR * 1000 +
 * PATCH, for #if tests.
 *
 * LAYA_ABI_VERSION numbers the layout of the params structs passed by value (laya_model_params,
 * laya_context_params). It grows whenever a member is added, removed or retyped. Each struct's first
 * member, abi, is set to it by the *_default_params() call; a call that takes the struct refuses any
 * other value with LAYA_ERR_INVALID_ARG, so a program built against another header fails with a message
 * instead of reading members at the wrong offsets. Always start from the *_default_params() value and
 * change the members you need; a struct filled by hand (or zeroed) is refused. */
#define LAYA_VERSION_MAJOR 0
#define LAYA_VERSION_MINOR 1
#define LAYA_VERSION_PATCH 0
#define LAYA_VERSION "0.1.0"
#define LAYA_VERSION_NUMBER (LAYA_VERSION_MAJOR * 1000000 + LAYA_VERSION_MINOR * 1000 + LAYA_VERSION_PATCH)
#define LAYA_ABI_VERSION 1u

/* The library's version string, LAYA_VERSION as the library was built. Static; any thread. */
LAYA_API const char *laya_version(void);

/* ---------------------------------------------------------------------------------------------------
 * Status codes and messages. */
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

/* A static English description of a status code ("unknown status" for a value not listed). Never NULL;
 * any thread. */
LAYA_API const char *laya_status_str(laya_status s);

/* Detailed error messages: calls that fail on a handle leave a message readable with
 * laya_model_error()/laya_context_error(); calls that create a handle take an optional err buffer of
 * errlen bytes (err may be NULL or errlen 0: no message). Messages are NUL-terminated and cut to fit;
 * LAYA_ERR_MSG_MAX bytes always hold a whole one. */
#define LAYA_ERR_MSG_MAX 256

/* ---------------------------------------------------------------------------------------------------
 * Logging. The library has a few things to say outside return values: why a file was refused, what was
 * loaded, which CPU kernels were chosen. They go to one process-wide callback, none by default (silent).
 * Messages are single lines without a trailing newline, valid during the call only. Nothing is logged on
 * the keystroke path (decode, set_text, suggest): logging never costs a decision time.
 * laya_set_log may be called from any thread at any time; once it returns, the previous callback is not
 * called again. Calls to the callback are serialized (one at a time), from whichever thread the library
 * was running on; the callback must not call laya_set_log. fn NULL turns logging off. */
typedef enum laya_log_level {
    LAYA_LOG_ERROR, /* an operation failed in a way its caller may not see in detail */
    LAYA_LOG_WARN,  /* something was refused or fell back: a file rejected, an override ignored */
    LAYA_LOG_INFO,  /* a model loaded, and how */
    LAYA_LOG_DEBUG, /* choices made at run time (the kernel table) */
} laya_log_level;
typedef void (*laya_log_fn)(void *user, laya_log_level level, const char *msg);
LAYA_API void laya_set_log(laya_log_fn fn, void *user);

typedef int32_t laya_token;

/* ---------------------------------------------------------------------------------------------------
 * Models. A model is immutable after load (what typing derives from it is a laya_resources of its own)
 * and may be shared by any number of threads and contexts: every call on a const laya_model * below is
 * safe from any thread at once.
 * Weights are views into a read-only mmap of the file; nothing sized from file data is allocated before
 * it has been validated against the file size. */
typedef struct laya_model laya_model;

typedef struct laya_model_params {
    uint32_t abi;       /* LAYA_ABI_VERSION, set by laya_model_default_params(); anything else is refused */
    int32_t n_threads;  /* threads of each context's forward passes; 0 = number of online CPUs, at most 64 */
    int32_t vocab_only; /* 1: load only metadata and the tokenizer, no tensors */
    /* 0 (default): where the CPU's kernels have an order of their own for block-quantized weights (Q8_0,
     * Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q6_K on AVX-512; the first six on AVX-VNNI, those but Q8_0 on AVX2),
     * those matrices are copied into it after load (laya_model_wait_ready) and the file's pages are
     * released: the copy takes the matrices' size in private memory, and decoding gets faster
     * (docs/PERFORMANCE.md, "Packed weights"). The logits are the same bits either way. -1: every
     * weight stays a view of the file, shared with any other process that maps it. */
    int32_t pack_weights;
} laya_model_params;

/* The default load parameters (abi = LAYA_ABI_VERSION, all else 0). Any thread. */
LAYA_API laya_model_params laya_model_default_params(void);

/* Load a model from path:
 *  - a GGUF file (llama.cpp's conventions), or
 *  - a Hugging Face model directory (config.json, tokenizer.json [+ tokenizer_config.json],
 *    model.safetensors or a sharded set with model.safetensors.index.json; F32/F16/BF16 weights, or MLX
 *    affine-quantized 4/8-bit weights as described by config.json's "quantization"),
 * memory-mapped in place with no conversion (but for the packed copy of pack_weights, made after load).
 * Architectures llama, qwen2, qwen3.
 * Ownership: *out belongs to the caller, who frees it with laya_model_free after every context, session
 * and other object made from it is freed. The file may be replaced on disk meanwhile, but not truncated
 * or rewritten in place (it is mapped).
 * Errors: LAYA_ERR_INVALID_ARG (NULL path or out, params.abi not LAYA_ABI_VERSION), LAYA_ERR_IO,
 * LAYA_ERR_FORMAT, LAYA_ERR_UNSUPPORTED, LAYA_ERR_NOMEM. On failure *out is NULL and err (if not NULL,
 * errlen > 0) holds a message; the same message goes to the log callback as a warning.
 * Any thread; loads of different files may run at once. */
LAYA_API laya_status laya_model_load(const char *path, laya_model_params params, laya_model **out,
                                     char *err, size_t errlen);

/* Free a model and unmap its file; NULL is a no-op. Waits for the packing thread (laya_model_wait_ready)
 * to stop. No context, session or worker of the model may exist any more. */
LAYA_API void laya_model_free(laya_model *m);

/* Load returns before the copy of pack_weights is made: a thread of the model makes it (its time grows
 * with the matrices' size; docs/PERFORMANCE.md), and decodes meanwhile compute from the file, with the
 * same results, more slowly. The copy starts once the first decode has ended (or 50 ms after load), so
 * that a first key press has the cores to itself, and it pauses while decodes run (8 ms at most a pause,
 * so it still finishes under decodes that never stop). This starts it at once if it has not started, and
 * blocks until it is done (at once when there is none): for benchmarks, and callers that want the
 * steady-state speed from their first step. Any thread; several may wait at once. */
LAYA_API void laya_model_wait_ready(laya_model *m);

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
    uint64_t packed_bytes;  /* private memory of the packed copy (laya_model_params.pack_weights), 0 if none */
    uint64_t step_bytes;    /* weight bytes one decode step reads: every matrix (the packed copy's size where
                             * there is one) and vector of the layers and the output layer, not the token
                             * embedding (one row a token) unless the output layer is tied to it. With the
                             * KV cache's bytes, what a step cannot read faster than memory allows */
    int32_t n_threads;      /* threads of the model's forward passes (laya_model_params.n_threads resolved) */
} laya_model_info;

/* Fill *out with the model's shape and sizes. The strings live as long as the model. Any thread. */
LAYA_API void laya_model_get_info(const laya_model *m, laya_model_info *out);

/* The type of tensor i as a string ("F32", "Q4_K", ...), with its name and shape (ne[0] is the row
 * length; unused dimensions are 1). Iterate i from 0 until the call returns LAYA_ERR_NOT_FOUND (also
 * the answer for a vocab_only model). Pointers live as long as the model. Any thread. */
LAYA_API laya_status laya_model_tensor(const laya_model *m, int32_t i, const char **name,
                                       const char **type, int64_t ne[4], int32_t *n_dims);

/* A message about the model's last failure, or "" (load reports its failures through its err argument).
 * Never NULL ("model is NULL" for m NULL). Valid as long as the model. */
LAYA_API const char *laya_model_error(const laya_model *m);

/* ---------------------------------------------------------------------------------------------------
 * Tokenizer (read from the model's metadata). Every call here is thread-safe on a shared model and works
 * on vocab_only models. */

/* Encode len bytes of text. Invalid UTF-8 is first replaced by U+FFFD per maximal invalid subpart (as
 * Python's bytes.decode(errors="replace") does), so any bytes are accepted. Control-token text such
 * as "<|endoftext|>" is matched only if parse_special is nonzero; user-defined added tokens (e.g. Qwen's
 * "<think>") are always matched, as Hugging Face tokenizers and llama.cpp do. No BOS is added here.
 * Writes at most cap ids to out; *n_out receives the number needed, and LAYA_ERR_CAPACITY is returned
 * when it exceeds cap (call again with a larger buffer).
 * Errors: LAYA_ERR_INVALID_ARG (m or n_out NULL, text NULL with len > 0, out NULL with cap > 0),
 * LAYA_ERR_CAPACITY, LAYA_ERR_NOMEM (the calling thread's first call sets up its scratch memory). */
LAYA_API laya_status laya_tokenize(const laya_model *m, const char *text, size_t len, int parse_special,
                                   laya_token *out, size_t cap, size_t *n_out);

/* The bytes of one token as it appears in text (byte tokens give one raw byte; may be part of a UTF-8
 * character; not NUL-terminated). Returns a pointer valid as long as the model and sets *len, or NULL
 * for an id out of range. */
LAYA_API const char *laya_token_piece(const laya_model *m, laya_token id, size_t *len);

/* Decode n ids to text, writing at most cap bytes (no NUL is added); *n_out receives the bytes needed,
 * and LAYA_ERR_CAPACITY is returned when they exceed cap. Bytes of a UTF-8 character split across tokens
 * are joined; invalid sequences come out as U+FFFD only if replace_invalid is nonzero, otherwise raw.
 * A leading space added by SentencePiece is removed when strip_leading_space is nonzero.
 * Errors: LAYA_ERR_INVALID_ARG (an id out of range, NULL arguments), LAYA_ERR_CAPACITY. */
LAYA_API laya_status laya_detokenize(const laya_model *m, const laya_token *ids, size_t n,
                                     int strip_leading_space, int replace_invalid, char *out,
                                     size_t cap, size_t *n_out);

/* The number of token ids (the output layer's rows: it may exceed the tokenizer's tokens). */
LAYA_API int32_t laya_n_vocab(const laya_model *m);

/* ---------------------------------------------------------------------------------------------------
 * Contexts: KV cache slots ("sequences") plus all the scratch memory a forward pass needs, allocated
 * once at creation, and a pool of the model's n_threads - 1 threads that run its forward passes.
 * A context belongs to one thread at a time: calls on one context must not overlap (different contexts
 * of one model may decode at once). laya_decode never allocates. */
typedef struct laya_context laya_context;

/* KV cache element types. F16 halves the cache's memory and the bytes attention reads each step (what
 * long contexts spend their time on); keys and values are rounded to fp16 (nearest even) as they are
 * written, so logits move by about 1e-3. F32 keeps the forward pass's figures as computed. The enum is
 * as wide as an int32_t. */
typedef enum laya_kv_type { LAYA_KV_F32 = 0, LAYA_KV_F16 = 1 } laya_kv_type;

typedef struct laya_context_params {
    uint32_t abi;         /* LAYA_ABI_VERSION, set by laya_context_default_params(); anything else is refused */
    int32_t n_seq;        /* number of sequence slots (KV caches), 1..4096 */
    int32_t max_kv_size;  /* positions per slot, fixed, 1..2^20 */
    int32_t max_batch;    /* most tokens one laya_decode call may carry, over all sequences, 1..65536 */
    int32_t max_logits;   /* most tokens in one batch that may ask for logits, 1..max_batch */
    laya_kv_type kv_type; /* LAYA_KV_F32 (the default) or LAYA_KV_F16: how keys and values are held */
} laya_context_params;

/* The defaults: one sequence of 512 positions, batches of up to 512 tokens, 8 of them with logits, an
 * F32 cache; abi = LAYA_ABI_VERSION. Any thread. */
LAYA_API laya_context_params laya_context_default_params(void);

/* Create a context on a loaded model (not vocab_only), allocating its KV caches and scratch memory for
 * the largest batch the params allow and starting its threads.
 * Ownership: *out belongs to the caller (laya_context_free); the model must outlive it.
 * Errors: LAYA_ERR_INVALID_ARG (NULL model or out, a vocab_only model, params.abi not LAYA_ABI_VERSION,
 * a member out of range), LAYA_ERR_NOMEM. On failure *out is NULL and err holds a message.
 * Any thread. */
LAYA_API laya_status laya_context_create(const laya_model *m, laya_context_params params,
                                         laya_context **out, char *err, size_t errlen);

/* Stop the context's threads and free its memory; NULL is a no-op. Not while another call on it runs. */
LAYA_API void laya_context_free(laya_context *c);

/* The message of the last call on this context that failed, or "". Never NULL; valid until the next call
 * on the context. */
LAYA_API const char *laya_context_error(const laya_context *c);

/* A batch: n tokens, each appended to the end of its sequence seq[i] (positions are implicit: the
 * sequence's current length, then +1 per earlier token of the same sequence in this batch). Tokens of
 * one sequence must appear in order. want_logits[i] != 0 asks for the logits after token i
 * (want_logits may be NULL: then only the last token of each sequence gets logits). The arrays stay the
 * caller's; laya_decode reads them during the call only. */
typedef struct laya_batch {
    int32_t n;
    const laya_token *tokens;
    const int32_t *seq;
    const int8_t *want_logits;
} laya_batch;

/* Run the model over the batch: every token's keys and values go into its sequence's KV cache, and the
 * rows asked for get logits. The result does not depend on how tokens are grouped into batches or on
 * how its rows are split among the threads (docs/PERFORMANCE.md, "Batch invariance").
 * Errors: LAYA_ERR_INVALID_ARG (an empty batch, NULL arrays, a sequence or token id out of range),
 * LAYA_ERR_CAPACITY (more than max_batch tokens or max_logits outputs, or a sequence would pass
 * max_kv_size). On error no sequence has changed length, and laya_context_error says why. */
LAYA_API laya_status laya_decode(laya_context *c, laya_batch batch);

/* Logits after token i of the last batch (n_vocab floats), or NULL if they were not asked for (or i is
 * out of range). The context owns them; valid until the next laya_decode on this context. */
LAYA_API const float *laya_get_logits(const laya_context *c, int32_t i);

/* The focused output layer. A row decoded with want_logits[i] == LAYA_WANT_HIDDEN keeps its final
 * (normalised) hidden state but skips the full output layer: laya_get_logits returns NULL for it, and
 * laya_get_logits_subset computes the logits of just the n token ids given (also allowed for rows decoded
 * with want_logits[i] == LAYA_WANT_LOGITS). Writes n floats to out; never allocates. Uses the context's
 * threads, so it counts as a call on the context. Valid until the next laya_decode.
 * Errors: LAYA_ERR_INVALID_ARG (row i has neither logits nor a hidden state, an id out of range, NULL
 * ids or out). */
#define LAYA_WANT_LOGITS 1
#define LAYA_WANT_HIDDEN 2
LAYA_API laya_status laya_get_logits_subset(laya_context *c, int32_t i, const laya_token *ids, int32_t n,
                                            float *out);

/* Length (positions held) of a sequence, or -1 for a sequence out of range. */
LAYA_API int32_t laya_seq_len(const laya_context *c, int32_t seq);

/* Drop every position >= n_pos of a sequence (0 <= n_pos <= current length). Costs nothing but the
 * bookkeeping. Errors: LAYA_ERR_INVALID_ARG. */
LAYA_API laya_status laya_seq_truncate(laya_context *c, int32_t seq, int32_t n_pos);

/* Make dst hold the first n_pos positions of src (dst's old contents are dropped). The positions are
 * shared rather than copied where they can be (whole multiples of 64 from position 0: dst then reads
 * them from src's cache, and attention reads them once for every sequence of a batch that shares them);
 * the rest is copied. A later write into either sequence below a shared length first gives the other its
 * own copy of what would change, so sharing never changes a result. Never allocates.
 * Errors: LAYA_ERR_INVALID_ARG (a sequence out of range, src == dst, n_pos > length of src). */
LAYA_API laya_status laya_seq_fork(laya_context *c, int32_t src, int32_t dst, int32_t n_pos);

/* The same when dst already holds src's first `from` positions (the caller knows: both were computed from
 * the same tokens): positions from..n_pos-1 are taken from src, and dst may share src's positions below
 * `from` too. from <= n_pos <= length of src, from <= length of dst. Errors: LAYA_ERR_INVALID_ARG. */
LAYA_API laya_status laya_seq_fork_from(laya_context *c, int32_t src, int32_t dst, int32_t from, int32_t n_pos);

/* ---------------------------------------------------------------------------------------------------
 * Files. Each call reads and writes whole files, allocates as it needs, and may run on any thread
 * (they share nothing). out_path is written beside its final name and renamed over it, so it only ever
 * names a complete file. On failure err holds a message. */

/* Re-encode a GGUF model's weight matrices to type ("F32", "F16", "Q8_0", "Q5_0", "Q5_1", "Q4_0", "Q4_1",
 * "IQ4_NL"); 1-D tensors stay F32.
 * Metadata is copied. Errors: LAYA_ERR_INVALID_ARG (an unknown type), LAYA_ERR_IO, LAYA_ERR_FORMAT,
 * LAYA_ERR_UNSUPPORTED, LAYA_ERR_NOMEM. */
LAYA_API laya_status laya_quantize_file(const char *in_path, const char *out_path, const char *type,
                                        char *err, size_t errlen);

/* Copy a GGUF model file with Laya's typing metadata added or replaced; tensors and all other metadata are
 * copied verbatim. words_path: a word list, lines "word count" (the known words that typo decisions choose
 * from and that are never corrected lightly; laya.words / laya.word_counts). calib_path: the confidence
 * map, lines "prob hit" as `laya eval --fit-calibration` writes it (laya.calibration.prob / .hit). Either
 * may be NULL: that part is left as it is. docs/FORMAT.md lists every laya.* key.
 * Errors: LAYA_ERR_IO, LAYA_ERR_FORMAT (a malformed model or list), LAYA_ERR_NOMEM. */
LAYA_API laya_status laya_annotate_file(const char *in_path, const char *out_path, const char *words_path,
                                        const char *calib_path, char *err, size_t errlen);

/* Write a model directory (Hugging Face safetensors + config.json + tokenizer.json, or MLX 4/8-bit) as a
 * GGUF file in llama.cpp's conventions, weights re-encoded to type ("F32", "F16", "Q8_0", "Q4_0"; NULL =
 * "F16"). A 4-bit file keeps its output matrix at 6 or 8 bits, as llama.cpp does.
 * Errors: as laya_model_load's, plus LAYA_ERR_INVALID_ARG for an unknown type. */
LAYA_API laya_status laya_convert(const char *model_dir, const char *out_path, const char *type, char *err,
                                  size_t errlen);

/* The CPU kernel set chosen at run time: "avx512", "avxvnni", "avx2", "neondot", "neon" or "scalar" (the
 * environment variable LAYA_KERNELS, read once, may ask for a lower one). Static; any thread. */
LAYA_API const char *laya_cpu_backend(void);

/* ---------------------------------------------------------------------------------------------------
 * Typing sessions: the per-keystroke decision. One session per text field, on a shared model.
 * Threads: a session belongs to one thread at a time. Calls on one session must not overlap: two threads
 * inside one session race, whatever the calls (const ones such as get_stats and candidates included). A
 * program may hand a session from one thread to another between calls, with locking of its own. The one
 * exception is laya_session_interrupt, which any thread may call at any time while the session exists.
 * laya_worker (below) runs a session on a thread of its own and does this locking itself. Different
 * sessions, of one model or of several, may be created and used on different threads at once.
 * The tables every session of a model needs (the known-word list of typo decisions, the sorted token table
 * of constrained decoding) are a laya_resources object: build it once and pass it in params.resources to
 * share it (and make sessions cheaper to create); a session without one builds its own. The model, and the
 * resources if given, must outlive the session.
 * Memory: everything is allocated by laya_session_create (laya_worker_create): set_text, suggest,
 * prefetch, candidates, submit and poll never call the allocator; the user dictionary's writes (accept,
 * learn) are the one exception, and allocate. Every pointer a session or worker returns points into memory
 * it owns; the caller frees nothing but the handle.
 *
 * On every change the caller passes the text before and after the cursor. The session normalizes it for
 * the model (switchable, see LAYA_NORM_*) and tokenizes it; the next decision keeps the longest common token
 * prefix already in its KV cache and computes only the new tokens (inside its deadline), so typing,
 * backspace, paste, a cursor jump or select-all-delete each cost only what changed. What was computed for
 * a token sequence (by this text, an earlier one or a prefetched guess) is found again by its tokens. The
 * model's view ends before the word being typed, so typing inside a word computes no new prompt token. Text
 * before the cursor beyond params.max_text bytes (or a prompt beyond max_kv_size tokens) is dropped from the
 * front, in steps of half of it, so the cache survives typing.
 *
 * Decisions (laya_session_suggest):
 *  - complete: the cursor ends a partial word. The tokens covering the partial word (and the space or
 *    punctuation before it) are backed up over ("token healing") and decoding is constrained, with a sorted
 *    table of the vocabulary's token strings, to tokens consistent with exactly the typed characters; the
 *    candidate is the whole word (`replace` covers the typed part), ending at a word boundary.
 *  - next: the cursor follows a boundary; candidates are the next word (text may begin with a space).
 *  - correct: text mode, the cursor just after a finished word: the word and its edit-distance-1/2
 *    neighbours are scored by the model in the context before the word (plus a typo-cost prior); a better
 *    neighbour is listed first, its text including what was typed after the word, its prob and confidence
 *    the posterior against the word as typed.
 * Candidates are found by a beam search over distinct words, decoded as one batch per step in sequence
 * slots that share the prefix's KV cache. In code mode a candidate is an identifier (complete) or the rest
 * of the line, stopped where brackets balance (next); a line that opens a block (ends with ':' or '{')
 * may go on into it, over lines indented deeper than the cursor's line, ending before the first line that
 * is not (each finished line of the block is a candidate too; raise max_tokens for whole blocks). A
 * non-blank suffix after the cursor is given to models with fill-in-the-middle tokens. In shell mode a
 * candidate completes the command line; history lines go in with laya_session_set_context.
 *
 * prob is the model's probability of the candidate given the context and what was typed: the product of
 * its token probabilities, the first renormalized over the tokens consistent with the typed characters
 * (the prompt ends before them, where the tokenizer would not split: the consistent mass is the probability
 * of the typed prefix), times the probability that the word ends there (the mass of tokens that begin with
 * a boundary). The probabilities of all completions of a prefix sum to at most 1. confidence is
 * prob through the model's calibration map (a monotone piecewise-linear table fitted on held-out text by
 * `laya eval --fit-calibration`; stored in GGUF metadata "laya.calibration.prob"/"laya.calibration.hit"
 * or set with laya_session_set_calibration; identity when absent). See docs/EVALUATION.md. */
typedef struct laya_session laya_session;
typedef struct laya_resources laya_resources;

typedef enum laya_mode { LAYA_MODE_TEXT = 0, LAYA_MODE_CODE = 1, LAYA_MODE_SHELL = 2 } laya_mode;
typedef enum laya_kind { LAYA_KIND_COMPLETE = 0, LAYA_KIND_NEXT = 1, LAYA_KIND_CORRECT = 2 } laya_kind;

#define LAYA_NORM_FULLWIDTH 1u    /* U+FF01..U+FF5E to ASCII, U+3000 to a space */
#define LAYA_NORM_ZERO_WIDTH 2u   /* drop U+200B..U+200D, U+2060, U+FEFF, U+00AD */
#define LAYA_NORM_SPACES 4u       /* fold runs of spaces (and U+00A0) to one space */
#define LAYA_NORM_MODE_DEFAULT 0x80000000u /* text: all three; code and shell: no space folding */

#define LAYA_MAX_CANDIDATES 16
#define LAYA_CANDIDATE_MAX_BYTES 256 /* longest candidate text, bytes, its NUL included */

/* Session parameters, passed by value (see LAYA_ABI_VERSION): start from laya_session_default_params()
 * and change the members you need. laya_session_create refuses a member out of the range given here with
 * LAYA_ERR_INVALID_ARG. */
typedef struct laya_session_params {
    uint32_t abi;           /* LAYA_ABI_VERSION, set by laya_session_default_params; create refuses another
                               value with LAYA_ERR_INVALID_ARG (a program built against another laya.h) */
    laya_mode mode;         /* text, code or shell */
    int32_t n_candidates;   /* k, 1..LAYA_MAX_CANDIDATES (default 5) */
    int32_t max_tokens;     /* most tokens decoded per candidate, healed ones included (default 5), 1..32 */
    int32_t max_kv_size;    /* positions per sequence slot (default 320), 16..65536 and more than
                               max_tokens + 8 */
    int32_t max_text;       /* bytes of text before the cursor the model sees (default 1024), 16..2^20; the
                               suffix after the cursor is cut to max_text / 4 */
    double deadline_ms;     /* a decision (the prompt's new tokens included) returns what it has this long
                               after it started: a step that would not fit shrinks to the likeliest
                               hypotheses that do; 0 (default): no deadline; not negative. What a deadline
                               costs in keystroke savings: docs/EVALUATION.md */
    int32_t sensitive;      /* 1: never learn, never store, never log (passwords, PINs, private fields): the
                               user dictionary is not opened (user_dict is ignored), the document cache is
                               off, and accept and learn write nothing */
    uint32_t normalize;     /* LAYA_NORM_* bits (others are ignored), or LAYA_NORM_MODE_DEFAULT */
    int32_t warmup;         /* 1 (default): decide two sample texts at create, so that the first keystroke is
                               not slower; the session's text is then empty again and its stats zero */
    const laya_resources *resources; /* shared typing resources (laya_resources_create) of the same model (else
                               create fails with LAYA_ERR_INVALID_ARG), which must outlive the session; or
                               NULL (default): the session builds its own */
    float min_prob;         /* candidates (and partial hypotheses) below this probability are dropped early,
                               saving decode steps; 0 <= min_prob < 1 (default 0: keep all; the beam already
                               stops hypotheses that cannot reach the k best, and a long word's first
                               candidates are often rare, so a floor costs keystroke savings) */
    int32_t focused_output; /* 1: a constrained step after the first computes only the allowed tokens' logits
                               (laya_get_logits_subset: faster) and renormalizes over them; 0 (default): full
                               logits and the model's own probability (see prob below) */
    int32_t beam;           /* hypotheses kept per step (sequence slots), 1..LAYA_MAX_CANDIDATES; 0 (default):
                               max(n_candidates, 8). Wider finds more multi-token words, at a cost per step */
    double prefetch_ms;     /* laya_worker only: after each decision the worker thread spends up to this long
                               deciding the likeliest next texts (laya_session_prefetch) until the next submit,
                               0..1e6 (default 40; 0: off). A session used directly ignores it */
    const char *user_dict;  /* path of the user dictionary file (boosts, learning), or NULL (default); copied.
                               Opened at create (PATH.lock is created beside it; the file itself is written at
                               the first learn if it does not exist); a file that cannot be read or is
                               malformed makes create fail (LAYA_ERR_IO, LAYA_ERR_FORMAT). Sessions and
                               processes may share one file: each write locks PATH.lock and first reads what
                               the others wrote, so nothing is lost; a session sees the others' words from
                               its own next write on */
    int32_t doc_cache_bytes;/* text mode: the words of this many bytes of the text before the cursor (all of
                               it that set_text is given, not just max_text) are a cache model mixed with the
                               model's candidates, so that the names and words a document keeps using come up;
                               a word used 3 times there is not corrected. Held in memory only (a few MB at
                               the default), a function of the text alone, off for a sensitive session.
                               Default 65536; 0: off; else 256..4 MiB */
    laya_kv_type kv_type;   /* LAYA_KV_F16 (default) or LAYA_KV_F32: the session's KV cache (laya_context_params);
                               F16 halves its memory and leaves keystroke savings and next-word accuracy as
                               they are (docs/PERFORMANCE-LOG.md) */
} laya_session_params;

/* One candidate. The session (or worker) owns it and its text; how long they stay valid is said by the
 * call that returned them. */
typedef struct laya_candidate {
    const char *text;       /* NUL-terminated UTF-8 to insert at the cursor after deleting `replace` chars */
    int32_t text_len;       /* bytes, the NUL not counted (at most LAYA_CANDIDATE_MAX_BYTES - 1) */
    int32_t replace;        /* characters (code points; an invalid byte counts one) of the raw text before
                               the cursor that text replaces (complete: the typed part of the word; next: 0;
                               correct: the word as typed and what was typed after it) */
    int32_t replace_bytes;  /* the same, in bytes of the raw text */
    laya_kind kind;         /* complete, next or correct */
    float prob;             /* model probability (see above) */
    float confidence;       /* calibrated probability that this is what the user types */
} laya_candidate;

/* What the last calls on a session did (laya_session_get_stats), or on a worker the last decision it
 * delivered (laya_worker_get_stats). The prompt's tokens are decoded by the decision (suggest), not by
 * set_text, so the first three describe the last decision's prompt. */
typedef struct laya_session_stats {
    int32_t n_prompt;       /* tokens of the model's view of the text */
    int32_t n_reused;       /* of those, already in the KV cache when the last decision began */
    int32_t n_computed;     /* prompt tokens the last decision decoded (0: the prompt was already there) */
    int32_t n_decoded;      /* candidate tokens decoded by the last decision (its search and corrections) */
    int32_t n_steps;        /* decode calls of the last decision's search and corrections (the prompt's aside) */
    int32_t deadline_hit;   /* 1: the last decision stopped at its deadline (or was interrupted); 0 again once
                               laya_session_prefetch has finished it */
    int32_t truncated;      /* 1: the last text was cut: before longer than max_text, after longer than
                               max_text / 4, or the prompt longer than max_kv_size allows */
    double last_ms;         /* wall time of the last suggest (of set_text + suggest for a worker's submit) */
} laya_session_stats;

/* The default session parameters: abi = LAYA_ABI_VERSION, text mode, n_candidates 5, max_tokens 5,
 * max_kv_size 320, max_text 1024, no deadline, not sensitive, LAYA_NORM_MODE_DEFAULT, warmup 1, no shared
 * resources, min_prob 0, focused_output 0, beam 0, prefetch_ms 40, no user dictionary, doc_cache_bytes 65536,
 * LAYA_KV_F16. Any thread. */
LAYA_API laya_session_params laya_session_default_params(void);

/* Create a session on a loaded model (not vocab_only): its KV cache context (the model's n_threads), every
 * buffer its calls use, its typing resources unless params.resources shares them, its user dictionary and
 * document cache; then, with params.warmup, two sample decisions.
 * Ownership: *out belongs to the caller, who frees it with laya_session_free. The model, and
 * params.resources if not NULL, must outlive it. params.user_dict is copied.
 * Errors: LAYA_ERR_INVALID_ARG (out or m NULL, a vocab_only model, params.abi not LAYA_ABI_VERSION, a member
 * out of range, params.resources made from another model), LAYA_ERR_NOMEM, LAYA_ERR_IO and LAYA_ERR_FORMAT
 * (the user dictionary), and any error of laya_context_create or of the warm-up decisions. On failure *out is
 * NULL and err (if not NULL, errlen > 0) holds a message.
 * Any thread; sessions may be created on several threads at once. */
LAYA_API laya_status laya_session_create(const laya_model *m, laya_session_params params,
                                         laya_session **out, char *err, size_t errlen);
/* Free a session: its context, buffers, own typing resources (not shared ones: params.resources stays the
 * caller's) and user dictionary handle. NULL is a no-op. No other call on the session may run or follow,
 * laya_session_interrupt included. A worker's session is freed by laya_worker_free. */
LAYA_API void laya_session_free(laya_session *s);
/* The message of the last call on this session that failed with one, or "" if none has. Never NULL
 * ("session is NULL" for s NULL). Owned by the session: valid as long as it, and rewritten by the next call
 * that fails. A call refused for a NULL handle or argument may fail without a message. Same thread rules as
 * the session's other calls. */
LAYA_API const char *laya_session_error(const laya_session *s);

/* Set the text before and after the cursor (any bytes; invalid UTF-8 is read as U+FFFD). Longer texts are
 * cut (before: its start; after: its end) and stats.truncated set; never an error for size. after may be
 * NULL (with after_len 0). The text is copied (the caller's buffers are not kept), normalized and tokenized
 * into the prompt, and the document cache is updated; nothing is decoded here (the next suggest decodes the
 * prompt's new tokens). It also clears an interrupt (laya_session_interrupt), starts a new prefetch plan,
 * drops the last decision's candidates (laya_session_candidates reports none until the next suggest), and
 * takes in the context last given to laya_session_set_context.
 * Errors: LAYA_ERR_INVALID_ARG (s NULL, before or after NULL with a nonzero length); a tokenizer failure
 * otherwise (the buffers sized at create hold any text, so none is expected). */
LAYA_API laya_status laya_session_set_text(laya_session *s, const char *before, size_t before_len,
                                           const char *after, size_t after_len);

/* Extra context the model sees before the text: in shell mode the recent history lines (one command per
 * line, oldest first), in text mode e.g. a subject line. Copied; at most max_text bytes are kept (its end,
 * cut at a character boundary); len 0 removes it. It takes effect at the next set_text, which builds the
 * prompt. Errors: LAYA_ERR_INVALID_ARG (s NULL, text NULL with len > 0). */
LAYA_API laya_status laya_session_set_context(laya_session *s, const char *text, size_t len);

/* Decide for the current text: decode the prompt's new tokens, run the beam search and the correction of
 * the word just finished, mix in the cache models, and rank. With params.deadline_ms the decision returns
 * what it has at its deadline, and an interrupt (laya_session_interrupt) makes it return at its next decode
 * step; both are LAYA_OK with stats.deadline_hit = 1 (and possibly fewer candidates, or none).
 * *out points to *n candidates (0..n_candidates), best first, a correction first if there is one. The
 * session owns them; they stay valid until the next call on this session other than laya_session_candidates
 * (which returns the same array), get_stats, error and tail_bytes.
 * Errors: LAYA_ERR_INVALID_ARG (s, out or n NULL); a decode failure of the session's context (message in
 * laya_session_error). On error *out is NULL and *n 0. */
LAYA_API laya_status laya_session_suggest(laya_session *s, const laya_candidate **out, int32_t *n);

/* The user took candidate i of the last decision (the last suggest's candidates; call it before the next
 * set_text). Unless the session is sensitive or has no user dictionary, the candidate's text is learned as
 * laya_session_learn learns a text; if that fails, nothing else is done. Then the session makes the likely
 * next text its own text (the candidate in place, then a space unless the candidate is a correction or
 * already ends with one) and decodes its prompt, so that the keystroke that follows costs no prompt
 * tokens: accept itself decodes. The caller then passes the real new text with set_text as usual (until
 * then suggest would decide for that guess, and laya_session_candidates reports none).
 * (laya_worker_accept is different: it takes an index of the last poll and only learns.)
 * Errors: LAYA_ERR_INVALID_ARG (s NULL, i not an index of the last decision's candidates), the errors of
 * laya_session_learn (a candidate with no word in it, only punctuation say, is refused with
 * LAYA_ERR_INVALID_ARG when there is a dictionary), a decode failure of the session's context. */
LAYA_API laya_status laya_session_accept(laya_session *s, int32_t i);

/* The user typed text (a word or phrase, without help): learned into the user dictionary like an accepted
 * candidate. A no-op returning LAYA_OK for a sensitive session, a session without params.user_dict, or len
 * 0. The text is split at white space and punctuation around each word is trimmed; each distinct word's
 * count goes up by one (and its last-used time is set), and a text of several words also learns the whole
 * phrase (white space folded to one space) if it fits in 64 bytes. A new entry past the dictionary's
 * capacity evicts the least used learned one. The user's words that complete a typed prefix are offered
 * when the model does not offer them, from the next decision on.
 * Every call writes the file: it takes the exclusive lock on PATH.lock (waiting while another session or
 * process holds it), reads what others appended, appends this call's records in one write and fsyncs (now
 * and then the file is compacted: written anew, fsynced and renamed over). A call's records apply together
 * or not at all: on failure the in-memory dictionary is reloaded from the file, which holds the state before
 * the call. So it is not for the keystroke path's latency budget: call it when a word is finished, on the
 * session's thread like its other calls, or use laya_worker_learn, which runs it between decisions.
 * Errors: LAYA_ERR_INVALID_ARG (s NULL, text NULL with len > 0; text not valid UTF-8, longer than 4096 bytes,
 * with a control character other than tab, CR and LF, with a word longer than 64 bytes, or with no word at
 * all), LAYA_ERR_IO (the file or its lock could not be opened, read, written, fsynced or renamed),
 * LAYA_ERR_FORMAT (the file was found damaged), LAYA_ERR_CAPACITY (the dictionary is full and no entry may
 * be evicted), LAYA_ERR_NOMEM. The message is in laya_session_error. */
LAYA_API laya_status laya_session_learn(laya_session *s, const char *text, size_t len);

/* Use idle time (the gap before the next keystroke) for the next keystroke's decision: decide, for up to
 * budget_ms, the texts the caller is likeliest to send next: each of the last decision's candidates taken
 * (followed by a space in text mode), the likeliest next characters, the word ended as typed. Their work
 * (prompt tokens, every hypothesis's logits, typo decisions) stays in the session's caches, keyed by the
 * tokens, so when one of them comes, set_text + suggest is a lookup with no decode step; a text that was
 * not guessed costs what it costs without prefetch, and the candidates are the same either way. The
 * session's text, the last decision's candidates and the stats are kept (suggest and accept see what they
 * saw), but for one change: if the current text's decision was cut short by its deadline, or not made yet,
 * it is made first, within budget_ms instead of the deadline (over as many calls as that takes), and once
 * it is finished its full candidates replace the cut ones (laya_session_candidates then reports them
 * complete; stats.deadline_hit becomes 0).
 * Returns at the first decode step past the budget (so it may overrun budget_ms by one step), or at once
 * when the session is interrupted; *n_done is how many guesses were finished and *n_left how many are left
 * (0: the plan is done; either may be NULL). Call it again to go on with the same plan, e.g. in short
 * slices while no key comes; set_text starts a new one. Allocates nothing. With budget_ms 0 it does
 * nothing. A laya_worker does this on its thread between submits (params.prefetch_ms).
 * Errors: LAYA_ERR_INVALID_ARG (s NULL, budget_ms negative, NaN or over 1e9); a decode failure of the
 * session's context. */
LAYA_API laya_status laya_session_prefetch(laya_session *s, double budget_ms, int32_t *n_done, int32_t *n_left);

/* Replace the calibration map that turns prob into confidence: n points (x[i] increasing, y[i]
 * non-decreasing, all in [0, 1]), 2..64; n == 0 restores the identity (not the model file's map, which
 * create loads when the file has one). Copied. Applies to later decisions; candidates already returned keep
 * their confidence. Errors: LAYA_ERR_INVALID_ARG (s NULL, n out of range, x or y NULL, a point out of order
 * or out of [0, 1]); the old map is then kept. */
LAYA_API laya_status laya_session_set_calibration(laya_session *s, const float *x, const float *y, int32_t n);

/* Copy the session's stats (laya_session_stats) to *out; s NULL gives zeros, out NULL does nothing.
 * prefetch's own work is not counted. Same thread rules as the session's other calls. */
LAYA_API void laya_session_get_stats(const laya_session *s, laya_session_stats *out);

/* Stop the decision running on this session (from any thread): it returns at its next decode step with what
 * it has, as at a deadline (stats.deadline_hit = 1). A flag, not a queue: it stays set until the next
 * laya_session_set_text (or set_text_tail), so suggest and prefetch called before then return at once, and an
 * interrupt that comes between two calls still stops the second. A session once interrupted decodes a long
 * prompt in smaller pieces from then on, so that later interrupts land sooner. In the spirit of
 * sqlite3_interrupt: the one session call that is safe while another thread is inside the session, from any
 * thread at any time, as long as the session has not been freed (the caller makes sure of that). s NULL is
 * a no-op. */
LAYA_API void laya_session_interrupt(laya_session *s);

/* For a caller that keeps only the end of a long text (a worker's copy of a submit): laya_session_set_text
 * with the text before the cursor given as its last tail_len bytes, of before_len bytes in all. tail_len is
 * all of it or at least laya_session_tail_bytes(s); the decision is the one the whole text gives. Otherwise
 * as laya_session_set_text. Errors: LAYA_ERR_INVALID_ARG (s NULL, tail or after NULL with a nonzero length,
 * tail_len > before_len, or tail_len < before_len and < laya_session_tail_bytes(s)); as set_text's else. */
LAYA_API laya_status laya_session_set_text_tail(laya_session *s, const char *tail, size_t tail_len,
                                                size_t before_len, const char *after, size_t after_len);
/* How many bytes of the end of the text before the cursor the session reads (max_text, or the document
 * cache's window and the word being typed when that is longer); 0 for s NULL. Fixed at create, so it may be
 * read from any thread while the session exists. */
LAYA_API size_t laya_session_tail_bytes(const laya_session *s);

/* The candidates of the last decision on the current text (none after a set_text or accept until the next
 * suggest): what suggest returned, or, where its deadline cut it short and a later
 * laya_session_prefetch finished it, the full candidates. *complete (may be NULL) is 1 when the decision ran
 * to its end. Owned by the session; valid until the next call on this session other than this one,
 * get_stats, error and tail_bytes. It decides nothing. How a worker delivers a decision a second time,
 * refined. Errors: LAYA_ERR_INVALID_ARG (s, out or n NULL); with no candidates *n is 0 and LAYA_OK returned. */
LAYA_API laya_status laya_session_candidates(const laya_session *s, const laya_candidate **out, int32_t *n,
                                             int *complete);

/* ---------------------------------------------------------------------------------------------------
 * Typing resources: what the typing layer derives from a model once and every session of it shares (the
 * token classes, the sorted table of token strings behind constrained decoding, the known-word list of typo
 * decisions). Immutable once built; any number of threads and sessions may use one at once. The model must
 * outlive it, and it must outlive the sessions (and workers) made with it. */
/* Build the typing resources of a loaded model (not vocab_only), for sessions of any mode. Any thread.
 * Ownership: *out belongs to the caller (laya_resources_free).
 * Errors: LAYA_ERR_INVALID_ARG (out or m NULL, a vocab_only model), LAYA_ERR_NOMEM. On failure *out is NULL
 * and err (if not NULL, errlen > 0) holds a message. */
LAYA_API laya_status laya_resources_create(const laya_model *m, laya_resources **out, char *err, size_t errlen);
/* Free typing resources; NULL is a no-op. Every session and worker given them must have been freed. */
LAYA_API void laya_resources_free(laya_resources *r);

/* ---------------------------------------------------------------------------------------------------
 * Workers: the asynchronous form, a layer on the calls above. A worker owns one session and one thread;
 * submit copies the text and returns at once, and the thread runs set_text + suggest. A newer submit
 * interrupts the pending decision (laya_session_interrupt: it returns early and its result is dropped).
 * The callback, if any, runs on the worker thread with the candidates (valid during the call only); poll
 * reports *ready = 1 with the result of the newest submit once it is done. Between decisions the thread
 * spends up to params.prefetch_ms on laya_session_prefetch; a decision its deadline cut short is finished in
 * that idle time: then the callback runs a second time for the same submit with the full candidates, and
 * poll reports those from then on (unless a newer submit came first).
 * Threads: submit, poll, cancel, get_stats and error may be called from any threads, at once. accept, learn
 * and set_context may be called from any threads too: the worker runs them one at a time between its
 * thread's decisions (they wait for a decision under way and stop a prefetch). laya_worker_free must
 * not overlap any other call on the worker. The callback may call submit, poll, get_stats and error on its
 * worker; cancel, accept, learn, set_context and free wait for the thread the callback runs on, so called
 * from it they never return. */
typedef struct laya_worker laya_worker;
/* cands: n candidates (0..n_candidates), best first; owned by the worker, valid during the call only (copy
 * what is kept). user: as given to laya_worker_submit. Runs on the worker thread; keep it short: the next
 * decision waits for it. */
typedef void (*laya_suggest_cb)(void *user, const laya_candidate *cands, int32_t n);

/* Create a session as laya_session_create does (same params, same errors) and a thread that owns it.
 * Ownership: *out belongs to the caller (laya_worker_free); the model and params.resources must outlive it.
 * Errors: those of laya_session_create, and LAYA_ERR_NOMEM (also when the thread cannot be started). On
 * failure *out is NULL and err holds a message. Any thread. */
LAYA_API laya_status laya_worker_create(const laya_model *m, laya_session_params params, laya_worker **out,
                                        char *err, size_t errlen);
/* Stop the thread and free the session. A submit the thread has not taken yet is dropped; a decision under
 * way is interrupted, and its callback may still run, with what it had, before free returns. Blocks until
 * the thread has ended (a callback under way returns first). Not from the callback. NULL is a no-op. */
LAYA_API void laya_worker_free(laya_worker *w);
/* Hand the worker a new text (as laya_session_set_text takes it) and return at once: the last
 * laya_session_tail_bytes bytes of before and the first max_text / 4 + 4 bytes of after are copied (the
 * caller's buffers are free again on return), and any decision or prefetch under way is interrupted.
 * cb (may be NULL) and user replace those of earlier submits: cb is called for this submit's decision, not
 * if a newer submit came before it was done, nor if it failed. Allocates nothing; never waits for the
 * thread. Errors: LAYA_ERR_INVALID_ARG (w NULL, before or after NULL with a nonzero length). A decision
 * that fails on the thread is reported by poll (ready, no candidates) and laya_worker_error. */
LAYA_API laya_status laya_worker_submit(laya_worker *w, const char *before, size_t before_len, const char *after,
                                        size_t after_len, laya_suggest_cb cb, void *user);
/* Never blocks (beyond a short lock). *ready = 1 once the newest submit's decision is done (its refined
 * candidates once the idle time has finished it), else 0 (a newer submit pending, none yet, or after
 * cancel). With ready, *out and *n are a copy of that result, owned by the worker: valid until the next
 * poll that reports ready on this worker (from any thread) or laya_worker_free; they stay the same when a
 * later submit comes. Poll from one thread, or keep polls and the reading of their result from overlapping.
 * A failed decision is reported as ready with *n = 0 (the message in laya_worker_error).
 * Errors: LAYA_ERR_INVALID_ARG (any argument NULL). */
LAYA_API laya_status laya_worker_poll(laya_worker *w, int *ready, const laya_candidate **out, int32_t *n);
/* Drop the pending submit (its callback is not called, and poll reports ready = 0 until the next submit),
 * interrupt what the thread runs and wait until the thread is idle. Not from the callback. NULL: no-op. */
LAYA_API void laya_worker_cancel(laya_worker *w);
/* The session calls that change what it knows, run on the caller's thread between decisions: each stops a
 * prefetch under way, waits for a decision (and its callback) under way to end, and holds the next one until
 * it returns; concurrent calls of these three wait for one another. Not from the callback. */
/* The user took candidate i of the last poll that reported ready: its text is learned as
 * laya_worker_learn learns it (the worker's thread keeps its own caches warm: no prompt is decoded here).
 * Errors: LAYA_ERR_INVALID_ARG (w NULL, i not an index of that poll's candidates), else as laya_worker_learn. */
LAYA_API laya_status laya_worker_accept(laya_worker *w, int32_t i);
/* laya_session_learn on the worker's session: same effects and errors (the message in laya_worker_error);
 * it blocks for the file write. */
LAYA_API laya_status laya_worker_learn(laya_worker *w, const char *text, size_t len);
/* laya_session_set_context on the worker's session: used from the next submit's decision on. Errors:
 * LAYA_ERR_INVALID_ARG (w NULL, text NULL with len > 0). */
LAYA_API laya_status laya_worker_set_context(laya_worker *w, const char *text, size_t len);
/* The stats of the last decision the worker delivered for its newest submit at the time (last_ms: set_text
 * + suggest); prefetch is not counted. w NULL gives zeros, out NULL does nothing. Any thread. */
LAYA_API void laya_worker_get_stats(const laya_worker *w, laya_session_stats *out);
/* The message of the worker's last failure (a refused submit or accept, a failed learn or decision), or
 * "". Never NULL ("worker is NULL" for w NULL). Owned by the worker, valid as long as it; another failing
 * call (or the thread's failing decision) may rewrite it meanwhile, so read it soon after the failure. */
LAYA_API const char *laya_worker_error(const laya_worker *w);

#ifdef __cplusplus
}
#endif
#endif
