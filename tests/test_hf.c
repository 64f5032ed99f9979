/* test_hf.c — Hugging Face and MLX model directories, loaded with no conversion, against transformers'
 * reference (tests/fixtures/hf/NAME.ref, made by tests/fixtures/gen/make_hf_parity.py): F32 and BF16
 * safetensors (one sharded), MLX 4/8-bit with groups 32/64/128 and per-module overrides. Then
 * `laya_convert` to GGUF must give the same logits, and broken directories must fail with a message. */
#include <sys/stat.h>

#include "parity.h"

static const char *fixtures(void) {
    const char *d = getenv("LAYA_FIXTURES");
    return d ? d : "build/fixtures";
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Copies dir to dst with config.json replaced by cfg (NULL: left out) and tokenizer.json kept or not. */
static void make_variant(const char *dir, const char *dst, const char *cfg, int keep_tokenizer) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s' && rm -f '%s/config.json'%s%s%s", dst, dir, dst, dst,
             keep_tokenizer ? "" : " '", keep_tokenizer ? "" : dst, keep_tokenizer ? "" : "/tokenizer.json'");
    CHECK(system(cmd) == 0, "%s", cmd);
    if (cfg) {
        char p[1024];
        snprintf(p, sizeof p, "%s/config.json", dst);
        write_file(p, cfg);
    }
}

static void expect_fail(const char *dir, laya_status want, const char *fragment) {
    char err[256] = "";
    laya_model *m = NULL;
    laya_status st = laya_model_load(dir, laya_model_default_params(), &m, err, sizeof err);
    CHECK(st == want && m == NULL && strstr(err, fragment), "%s: got status %d '%s', want %d with '%s'", dir, st, err,
          want, fragment);
    laya_model_free(m);
}

int main(void) {
    static ref_t r;
    const char *names[] = {"hf-llama-bf16", "hf-qwen2-f32", "hf-qwen3-bf16", "mlx-llama", "mlx-qwen3"};
    const char *arch[] = {"llama", "qwen2", "qwen3", "llama", "qwen3"};
    printf("test_hf: kernels %s\n", laya_cpu_backend());
    for (int i = 0; i < 5; i++) {
        char dir[512], ref[512], gguf[600], label[64];
        snprintf(dir, sizeof dir, "%s/hf/%s", fixtures(), names[i]);
        snprintf(ref, sizeof ref, "tests/fixtures/hf/%s.ref", names[i]);
        int ok = load_ref(ref, &r) == 0;
        CHECK(ok, "cannot read %s", ref);
        if (!ok) continue;
        laya_model *m = NULL;
        laya_context *c = NULL;
        if (!open_model(dir, &m, &c)) continue;
        laya_model_info info;
        laya_model_get_info(m, &info);
        CHECK(!strcmp(info.arch, arch[i]), "%s: arch %s", names[i], info.arch);
        CHECK(info.rope_neox == 1, "%s: transformers weights rotate halves", names[i]);
        check_ref(names[i], m, c, &r, 1);

        /* The same text tokenizes identically through the directory and through its GGUF export. */
        const char *text = "Hello world, it's 2026: ünïcödé and   spaces\n\tdone.";
        laya_token a[256], b[256];
        size_t na = 0, nb = 0;
        CHECK(laya_tokenize(m, text, strlen(text), 1, a, 256, &na) == LAYA_OK, "tokenize");
        laya_context_free(c);
        laya_model_free(m);

        /* Converted to GGUF: F32 keeps every value (BF16 and dequantized MLX are exact in F32), Q8_0 is
         * close. */
        const char *types[] = {"F32", "Q8_0"};
        for (int t = 0; t < 2; t++) {
            char err[256];
            snprintf(gguf, sizeof gguf, "%s/hf/%s-%s.gguf", fixtures(), names[i], types[t]);
            laya_status st = laya_convert(dir, gguf, types[t], err, sizeof err);
            CHECK(st == LAYA_OK, "convert %s: %s", dir, err);
            if (st || !open_model(gguf, &m, &c)) continue;
            laya_model_get_info(m, &info);
            CHECK(info.rope_neox == !!strcmp(arch[i], "llama"), "%s: GGUF rope layout", gguf);
            snprintf(label, sizeof label, "%s -> %s", names[i], types[t]);
            double agree = check_ref(label, m, c, &r, t == 0);
            if (t == 1) CHECK(agree >= 0.95, "%s: top-1 agreement %.3f", label, agree);
            if (t == 0) {
                CHECK(laya_tokenize(m, text, strlen(text), 1, b, 256, &nb) == LAYA_OK, "tokenize gguf");
                CHECK(na == nb && !memcmp(a, b, na * sizeof a[0]), "%s: GGUF tokenizer differs", gguf);
            }
            laya_context_free(c);
            laya_model_free(m);
        }
    }

    /* Broken directories. */
    char base[512], dst[512];
    snprintf(base, sizeof base, "%s/hf/hf-qwen2-f32", fixtures());
    snprintf(dst, sizeof dst, "%s/hf/broken", fixtures());
    make_variant(base, dst, NULL, 1);
    expect_fail(dst, LAYA_ERR_IO, "config.json");
    make_variant(base, dst, "{\"model_type\": \"gpt_neox\"}", 1);
    expect_fail(dst, LAYA_ERR_UNSUPPORTED, "gpt_neox");
    make_variant(base, dst, "[1, 2", 1);
    expect_fail(dst, LAYA_ERR_FORMAT, "config.json");
    make_variant(base, dst, "{\"model_type\": \"qwen2\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                            "\"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                            "\"use_sliding_window\": true}", 1);
    expect_fail(dst, LAYA_ERR_UNSUPPORTED, "sliding");
    make_variant(base, dst, "{\"model_type\": \"qwen2\", \"hidden_size\": 64, \"num_hidden_layers\": 3, "
                            "\"intermediate_size\": 128, \"num_attention_heads\": 4, \"num_key_value_heads\": 2}", 1);
    expect_fail(dst, LAYA_ERR_FORMAT, "model.layers.2");
    make_variant(base, dst, "{\"model_type\": \"qwen2\", \"hidden_size\": -4, \"num_hidden_layers\": 2, "
                            "\"intermediate_size\": 128, \"num_attention_heads\": 4}", 1);
    expect_fail(dst, LAYA_ERR_FORMAT, "hidden_size");
    snprintf(base, sizeof base, "%s/hf/mlx-qwen3", fixtures());
    char cfgpath[600], *cfg = NULL;
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", base);
    FILE *f = fopen(cfgpath, "r");
    if (f) {
        cfg = calloc(1, 1 << 16);
        if (cfg && fread(cfg, 1, (1 << 16) - 1, f) == 0) cfg[0] = 0;
        fclose(f);
    }
    if (cfg) { /* claim 3-bit weights: the packed shapes no longer fit, and 3 bits are refused anyway */
        char *p;
        while ((p = strstr(cfg, "\"bits\": 8"))) p[8] = '3';
        make_variant(base, dst, cfg, 1);
        expect_fail(dst, LAYA_ERR_UNSUPPORTED, "3-bit");
        free(cfg);
    }
    snprintf(base, sizeof base, "%s/hf/hf-qwen2-f32", fixtures());
    make_variant(base, dst, NULL, 0);
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", dst);
    {
        char cp[1200];
        snprintf(cp, sizeof cp, "cp '%s/config.json' '%s'", base, cfgpath);
        CHECK(system(cp) == 0, "%s", cp);
    }
    expect_fail(dst, LAYA_ERR_IO, "tokenizer.json");
    return DONE("test_hf");
}
