/* synth.h — random-weight models with the exact tensor shapes and GGUF metadata of real ones (Qwen2.5,
 * SmolLM2, Llama 3.2, Qwen3, Laya's typing model), so loaders, kernels and benchmarks can run without
 * downloading weights. The text they generate is noise. Not here: anything trained. */
#ifndef LAYA_SYNTH_H
#define LAYA_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

/* Write a GGUF file for the named shape ("qwen2.5-0.5b", "smollm2-360m", "llama-3.2-1b", "qwen3-0.6b",
 * "laya-typing") with weight matrices of type ("F32", "F16", "Q8_0", "Q4_0"; 1-D tensors are F32).
 * Weights are N(0, 0.02) and depend only on seed and the tensor name; norm weights are 1. The metadata
 * carries a working byte-level BPE tokenizer (tokenizer.ggml.model "gpt2", pre "gpt-2"): the 256 byte
 * tokens first, then synthetic merges, then the shape's special tokens. The finished quantized tensors
 * are held in memory until the file is written (about the size of the output file). */
laya_status synth_write(const char *shape, const char *type, uint64_t seed, const char *out_path, char *err,
                        size_t errlen);

/* The known shape names, NULL-terminated. */
const char *const *synth_shape_names(void);

#endif
