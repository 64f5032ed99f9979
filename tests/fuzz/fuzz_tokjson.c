/* fuzz_tokjson.c — libFuzzer target for tokenizer.json loading. The input is a tokenizer.json, optionally
 * followed by a NUL byte and a tokenizer_config.json. Any bytes either translate or fail with a message; a
 * translation must serialize, reopen with valid token ids, and load in tok_load unless tok_load refuses
 * something tokjson passes on (a pre-tokenizer name it lacks, an over-long token); a loaded vocab encodes
 * and decodes a few strings with ids in range. Seeds: tests/fuzz/corpus_tokjson. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"
#include "io/tokjson.h"

static laya_token g_ids[4096];
static char g_text[1 << 16];

static void encode(const tok_vocab *v, const char *s, size_t n) {
    size_t m = 0;
    laya_status st = tok_encode(v, s, n, 1, g_ids, sizeof g_ids / sizeof g_ids[0], &m);
    if (st == LAYA_ERR_CAPACITY) return;
    if (st != LAYA_OK) abort();
    for (size_t i = 0; i < m; i++)
        if (g_ids[i] < 0 || g_ids[i] >= tok_n_vocab(v)) abort();
    size_t out = 0;
    st = tok_decode(v, g_ids, m, 0, 1, g_text, sizeof g_text, &out);
    if (st != LAYA_OK && st != LAYA_ERR_CAPACITY) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *tok = (const char *)data, *cfg = NULL;
    size_t tok_n = size, cfg_n = 0;
    const char *nul = memchr(data, 0, size);
    if (nul) {
        tok_n = (size_t)(nul - tok);
        cfg = nul + 1;
        cfg_n = size - tok_n - 1;
    }
    char err[256] = "";
    gguf_writer *w = gguf_writer_new();
    if (!w) return 0;
    laya_status st = tokjson_to_gguf_mem(tok_n ? tok : "", tok_n, cfg, cfg_n, w, err, sizeof err);
    if (st != LAYA_OK) {
        if (!err[0]) abort(); /* a failure must say why */
        gguf_writer_free(w);
        return 0;
    }
    void *buf = NULL;
    size_t n = 0;
    if (gguf_writer_to_buffer(w, &buf, &n, err, sizeof err) != LAYA_OK) abort();
    gguf_writer_free(w);
    gguf_file *f = NULL;
    if (gguf_open_buffer(buf, n, &f, err, sizeof err) != LAYA_OK) abort();
    if (gguf_check_token_ids(f, err, sizeof err) != LAYA_OK) abort();
    tok_vocab *v = NULL;
    st = tok_load(f, &v, err, sizeof err);
    if (st == LAYA_OK) {
        static const char *texts[] = {"ab a", " Hello  world's 12345\n\n", "<s>x</s><|end|><think>",
                                      "\xE2\x96\x81\xC3\xA9"};
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) encode(v, texts[i], strlen(texts[i]));
        encode(v, tok, LAYA_MIN(tok_n, (size_t)256));
    } else if (!(st == LAYA_ERR_UNSUPPORTED && strstr(err, "pre-tokenizer")) &&
               !(st == LAYA_ERR_FORMAT && strstr(err, "bytes long"))) {
        fprintf(stderr, "tokjson accepted what tok_load refuses: %s\n", err);
        abort();
    }
    tok_free(v);
    gguf_close(f);
    laya_free(buf);
    return 0;
}
