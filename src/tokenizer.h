/* tokenizer.h — tokenizers read from GGUF metadata (tokenizer.ggml.*): byte-level BPE ("gpt2") with the
 * Llama 3, Qwen2 and GPT-2 pre-tokenizer splits, and SentencePiece-style BPE ("llama") with byte fallback.
 * Goal: token-for-token parity with Hugging Face tokenizers. Not here: training, tokenizer.json. */
#ifndef LAYA_TOKENIZER_H
#define LAYA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
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

/* Same contract as laya_tokenize. Thread-safe on a shared vocab. */
laya_status tok_encode(const tok_vocab *v, const char *text, size_t len, int parse_special,
                       laya_token *out, size_t cap, size_t *n_out);
/* Bytes a token stands for in text (byte tokens: one byte). NULL for an out-of-range id. */
const char *tok_piece(const tok_vocab *v, laya_token id, size_t *len);
/* Same contract as laya_detokenize. */
laya_status tok_decode(const tok_vocab *v, const laya_token *ids, size_t n, int strip_leading_space,
                       int replace_invalid, char *out, size_t cap, size_t *n_out);

#endif
