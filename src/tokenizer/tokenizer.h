/* tokenizer.h — tokenizers read from GGUF metadata (tokenizer.ggml.*): byte-level BPE ("gpt2") with the
 * Llama 3, Qwen2 and GPT-2 pre-tokenizer splits, and SentencePiece-style BPE ("llama") with byte fallback.
 * Goal: token-for-token parity with Hugging Face tokenizers. Not here: training, tokenizer.json. */
#ifndef LAYA_TOKENIZER_H
#define LAYA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "io/gguf.h"
#include "laya.h"

typedef struct tok_vocab tok_vocab;

/* Build from an open GGUF (copies what it needs: the file may be closed afterwards). */
laya_status tok_load(const gguf_file *f, tok_vocab **out, char *err, size_t errlen);
void tok_free(tok_vocab *v);

int32_t tok_n_vocab(const tok_vocab *v);
laya_token tok_bos(const tok_vocab *v);  /* -1 if none */
laya_token tok_eos(const tok_vocab *v);
int tok_add_bos(const tok_vocab *v);
const char *tok_model_name(const tok_vocab *v); /* "gpt2" / "llama" */
const char *tok_pre_name(const tok_vocab *v);   /* normalized pre-tokenizer name */

/* Same contract as laya_tokenize. Thread-safe on a shared vocab. As in Hugging Face and llama.cpp,
 * parse_special governs control tokens (type 3, and the unknown token); user-defined added tokens (type 4,
 * e.g. Qwen3's <think>) are always matched. Allocates scratch per call; see tok_encode_work. */
laya_status tok_encode(const tok_vocab *v, const char *text, size_t len, int parse_special,
                       laya_token *out, size_t cap, size_t *n_out);
/* Reusable scratch for encoding, so that a keystroke path need not allocate: create one per thread (a
 * tok_work is not thread-safe; the vocab is), pass it to tok_encode_work. Buffers grow to the largest
 * input seen and are kept; tok_work_reserve(w, max_len) grows them up front for any input of at most
 * max_len bytes, after which tok_encode_work on such inputs never allocates. tok_encode is
 * tok_encode_work with a temporary tok_work (allocates per call). */
typedef struct tok_work tok_work;
tok_work *tok_work_new(void); /* NULL on out of memory */
void tok_work_free(tok_work *w);
laya_status tok_work_reserve(tok_work *w, size_t max_len);
laya_status tok_encode_work(const tok_vocab *v, tok_work *w, const char *text, size_t len, int parse_special,
                            laya_token *out, size_t cap, size_t *n_out);
/* llama.cpp token type of id: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte; 0 if out
 * of range. */
int tok_token_type(const tok_vocab *v, laya_token id);
/* Bytes a token stands for in text (byte tokens: one byte). NULL for an out-of-range id. */
const char *tok_piece(const tok_vocab *v, laya_token id, size_t *len);
/* Same contract as laya_detokenize. */
laya_status tok_decode(const tok_vocab *v, const laya_token *ids, size_t n, int strip_leading_space,
                       int replace_invalid, char *out, size_t cap, size_t *n_out);

#endif
