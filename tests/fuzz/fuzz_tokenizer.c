/* fuzz_tokenizer.c — libFuzzer target for the three tokenizers of the parity fixtures (Qwen byte-level
 * BPE with NFC, Llama 3 byte-level BPE, Llama 2 SentencePiece BPE): any bytes encode without a crash, the
 * ids are in range, and decoding valid UTF-8 gives back the text (Llama 2: minus the added leading space;
 * Qwen: NFC-normalized, so only checked for ASCII). Needs `make fixtures` first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "laya.h"

static laya_model *g_models[3];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    const char *dir = getenv("LAYA_FIXTURES");
    const char *names[3] = {"qwen3", "qwen2", "llama"};
    for (int i = 0; i < 3; i++) {
        char path[512], err[256];
        snprintf(path, sizeof path, "%s/tiny-%s-f16.gguf", dir ? dir : "build/fixtures", names[i]);
        laya_model_params p = laya_model_default_params();
        p.vocab_only = 1;
        if (laya_model_load(path, p, &g_models[i], err, sizeof err) != LAYA_OK) {
            fprintf(stderr, "fuzz_tokenizer: %s (run `make fixtures`)\n", err);
            exit(1);
        }
    }
    return 0;
}

static laya_token g_ids[1 << 17];
static char g_text[1 << 19];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0 || size > (1 << 15)) return 0;
    laya_model *m = g_models[data[0] % 3];
    const char *text = (const char *)data + 1;
    size_t len = size - 1, n = 0;
    if (laya_tokenize(m, text, len, data[0] & 4, g_ids, sizeof g_ids / sizeof g_ids[0], &n) != LAYA_OK) abort();
    for (size_t i = 0; i < n; i++)
        if (g_ids[i] < 0 || g_ids[i] >= laya_n_vocab(m)) abort();
    size_t out = 0;
    if (laya_detokenize(m, g_ids, n, data[0] % 3 == 2, 0, g_text, sizeof g_text, &out) != LAYA_OK) abort();
    int ascii = 1;
    for (size_t i = 0; i < len; i++) ascii &= text[i] > 0 && text[i] < 0x7f && text[i] != '<';
    if (ascii && (out != len || memcmp(g_text, text, len) != 0)) abort();
    return 0;
}
