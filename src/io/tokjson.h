/* tokjson.h — a Hugging Face tokenizer.json (+ tokenizer_config.json) translated into the GGUF tokenizer
 * metadata that tok_load reads (llama.cpp's tokenizer.ggml.* keys, plus laya.tokenizer.*), so that a
 * Hugging Face model directory runs without conversion. Not here: encoding (tokenizer.c), model weights.
 *
 * Accepted, because the engine reproduces them token for token (the Llama 2/3, Qwen2/2.5/3, TinyLlama
 * families; the tokenizers library's semantics, as Tokenizer.from_file(...).encode(text) gives them):
 *   model        "BPE": vocab (object), merges ("a b" strings or [a, b] pairs), byte_fallback, ignore_merges,
 *                unk_token, fuse_unk; dropout null or 0; no continuing_subword_prefix / end_of_word_suffix.
 *   byte-level   pre_tokenizer ByteLevel(use_regex) (GPT-2 split), or Sequence[Split(Regex, Isolated),
 *                ByteLevel(use_regex: false)] with the Llama 3, Qwen2 or GPT-2 regex (exact string compare),
 *                or Sequence[Digits(individual_digits), ByteLevel] (SmolLM: translated to llama.cpp's pre
 *                "smollm"); normalizer null or NFC.
 *   SentencePiece-style  normalizer Sequence[Prepend "▁", Replace " " → "▁"] (or the Replace alone),
 *                pre_tokenizer null, byte_fallback with all 256 <0xXX> tokens.
 *   added_tokens id, content, special (control vs user-defined), normalized (true only without a normalizer);
 *                they may extend past the vocab; gaps in the id space become unused "[PADn]" tokens.
 *   tokenizer_config.json  bos_token / eos_token / unk_token / pad_token (a string or {"content": ...}),
 *                add_bos_token, add_eos_token. Without a config (or a key), BOS/EOS fall back to added tokens
 *                with well-known texts (<s>, <|begin_of_text|>; </s>, <|end_of_text|>, <|endoftext|>); without
 *                add_bos_token, a TemplateProcessing post-processor decides, else whether there is a BOS.
 * Refused with LAYA_ERR_UNSUPPORTED and a message naming the feature: other model types (WordPiece,
 * Unigram, ...), other normalizers and pre-tokenizers (Metaspace included: its "▁" prefix is skipped where
 * the text already starts with a space, which the engine's SentencePiece mode cannot reproduce), other
 * split regexes, lstrip/rstrip/single_word added tokens. Malformed input (wrong JSON types, ids out of
 * range, duplicate ids or tokens, merges naming unknown tokens, a too-sparse id space) gives
 * LAYA_ERR_FORMAT; JSON syntax errors and limits give json_parse's status. Nothing here prints or aborts. */
#ifndef LAYA_TOKJSON_H
#define LAYA_TOKJSON_H

#include <stddef.h>

#include "io/gguf.h"
#include "laya.h"
#include "tokenizer/tokenizer.h"

/* Add the tokenizer.ggml.* (and laya.tokenizer.*) metadata for DIR/tokenizer.json (+ DIR/tokenizer_config.json
 * if present) to w. Keys already in w are replaced. On failure w may hold some of the keys. */
laya_status tokjson_to_gguf(const char *dir, gguf_writer *w, char *err, size_t errlen);
/* Same from in-memory JSON texts (config may be NULL) — for the fuzzer and tests. The texts need not be
 * NUL-terminated and are not kept. */
laya_status tokjson_to_gguf_mem(const char *tok_json, size_t tok_len, const char *cfg_json, size_t cfg_len,
                                gguf_writer *w, char *err, size_t errlen);
/* Build a tok_vocab from DIR's tokenizer.json (via the two above + tok_load); free it with tok_free. */
laya_status tok_load_json(const char *dir, tok_vocab **out, char *err, size_t errlen);

#endif
