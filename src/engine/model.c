/* model.c — loading Llama/Qwen2/Qwen3 models and the public model API (info, tensors, tokenizer
 * wrappers). Two containers: a GGUF file (llama.cpp's names and metadata keys), or a Hugging Face model
 * directory (config.json, tokenizer.json, safetensors; MLX affine-quantized weights included), both read
 * in place from read-only maps. Every hyperparameter comes from metadata and every tensor's type and shape
 * is checked before use. The forward pass is in forward.c. */
#include "engine/model.h"
#include "engine/pack.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "io/tokjson.h"

laya_model_params laya_model_default_params(void) {
    laya_model_params p = {.abi = LAYA_ABI_VERSION};
    return p;
}

static int streq(gguf_str s, const char *c) { return s.n == strlen(c) && memcmp(s.p, c, s.n) == 0; }

/* ---- tensors by role, in either container ----------------------------------------------------------- */

enum role {
    R_TOK_EMBD, R_OUTPUT_NORM, R_OUTPUT, R_ROPE_FREQS, R_ATTN_NORM, R_Q, R_K, R_V, R_O, R_QB, R_KB, R_VB,
    R_QNORM, R_KNORM, R_FFN_NORM, R_GATE, R_UP, R_DOWN
};

static const char *const gguf_names[] = {
    "token_embd.weight", "output_norm.weight", "output.weight", "rope_freqs.weight",
    "blk.%d.attn_norm.weight", "blk.%d.attn_q.weight", "blk.%d.attn_k.weight", "blk.%d.attn_v.weight",
    "blk.%d.attn_output.weight", "blk.%d.attn_q.bias", "blk.%d.attn_k.bias", "blk.%d.attn_v.bias",
    "blk.%d.attn_q_norm.weight", "blk.%d.attn_k_norm.weight", "blk.%d.ffn_norm.weight",
    "blk.%d.ffn_gate.weight", "blk.%d.ffn_up.weight", "blk.%d.ffn_down.weight"};
static const char *const hf_names[] = {
    "model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", NULL,
    "model.layers.%d.input_layernorm.weight", "model.layers.%d.self_attn.q_proj.weight",
    "model.layers.%d.self_attn.k_proj.weight", "model.layers.%d.self_attn.v_proj.weight",
    "model.layers.%d.self_attn.o_proj.weight", "model.layers.%d.self_attn.q_proj.bias",
    "model.layers.%d.self_attn.k_proj.bias", "model.layers.%d.self_attn.v_proj.bias",
    "model.layers.%d.self_attn.q_norm.weight", "model.layers.%d.self_attn.k_norm.weight",
    "model.layers.%d.post_attention_layernorm.weight", "model.layers.%d.mlp.gate_proj.weight",
    "model.layers.%d.mlp.up_proj.weight", "model.layers.%d.mlp.down_proj.weight"};

/* A tensor found in the container, in GGUF's shape convention (ne[0] = row length, logical elements). */
typedef struct lm_src {
    const char *name;
    uint32_t type; /* qtypes id; for MLX the scales' type is in sb_type and type is QT_COUNT */
    int64_t ne[4];
    uint32_t n_dims;
    const void *data;
    int mlx_bits, mlx_group;
    const void *scales, *biases;
    uint32_t sb_type;
} lm_src;

static uint32_t st_to_qt(uint32_t dt) {
    switch (dt) {
    case ST_F32: return QT_F32;
    case ST_F16: return QT_F16;
    case ST_BF16: return QT_BF16;
    default: return QT_COUNT;
    }
}

/* MLX quantization of a module ("model.layers.0.mlp.down_proj"): config.json "quantization" holds the
 * default {group_size, bits} and per-module overrides (an object, or false for "not quantized"). */
static void mlx_params(const laya_model *m, const char *module, int *bits, int *group) {
    *bits = *group = 0;
    const json_value *q = m->cfg ? json_get(json_root(m->cfg), "quantization") : NULL;
    if (!q) q = m->cfg ? json_get(json_root(m->cfg), "quantization_config") : NULL;
    if (!q || q->type != JSON_OBJECT) return;
    const json_value *o = json_get(q, module), *src = q;
    if (o && o->type == JSON_BOOL && !o->b) return;
    if (o && o->type == JSON_OBJECT) src = o;
    const json_value *b = json_get(src, "bits"), *g = json_get(src, "group_size");
    if (b && b->type == JSON_NUMBER && b->is_int && g && g->type == JSON_NUMBER && g->is_int && b->i > 0 &&
        b->i <= 32 && g->i > 0 && g->i <= 4096) {
        *bits = (int)b->i;
        *group = (int)g->i;
    }
}

/* Finds the tensor of a role (layer ignored for global roles). Returns LAYA_ERR_NOT_FOUND if absent. */
static laya_status find_src(laya_model *m, enum role r, int layer, lm_src *out, char *namebuf, size_t nb,
                            char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const char *fmt = m->gf ? gguf_names[r] : hf_names[r];
    if (!fmt) return LAYA_ERR_NOT_FOUND;
    snprintf(namebuf, nb, fmt, layer);
    out->name = namebuf;
    if (m->gf) {
        const gguf_tensor *t = gguf_find_tensor(m->gf, namebuf);
        if (!t) return LAYA_ERR_NOT_FOUND;
        out->type = t->type;
        memcpy(out->ne, t->ne, sizeof out->ne);
        out->n_dims = t->n_dims;
        out->data = t->data;
        return LAYA_OK;
    }
    const st_tensor *t = st_find(m->st, namebuf);
    if (!t) return LAYA_ERR_NOT_FOUND;
    if (t->n_dims < 1 || t->n_dims > 2)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s' has %u dimensions", namebuf, t->n_dims);
    out->n_dims = t->n_dims;
    for (int i = 0; i < 4; i++) out->ne[i] = 1;
    for (uint32_t i = 0; i < t->n_dims; i++) out->ne[i] = t->shape[t->n_dims - 1 - i];
    out->data = t->data;
    out->type = st_to_qt(t->dtype);
    if (t->dtype == ST_U32 && t->n_dims == 2) {
        /* MLX packed weight: find its scales and biases and the module's quantization parameters. */
        size_t n = strlen(namebuf);
        char module[256], sname[272];
        if (n < 7 || strcmp(namebuf + n - 7, ".weight") || n - 7 >= sizeof module)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s': U32 data that is not a weight", namebuf);
        memcpy(module, namebuf, n - 7);
        module[n - 7] = 0;
        int bits, group;
        mlx_params(m, module, &bits, &group);
        if (bits != 4 && bits != 8)
            return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED,
                            "tensor '%s': packed U32 weight with %d-bit quantization (MLX 4 and 8 bits are supported)",
                            namebuf, bits);
        if (group != 32 && group != 64 && group != 128)
            return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor '%s': MLX group size %d (32, 64, 128)",
                            namebuf, group);
        snprintf(sname, sizeof sname, "%s.scales", module);
        const st_tensor *ts = st_find(m->st, sname);
        snprintf(sname, sizeof sname, "%s.biases", module);
        const st_tensor *tb = st_find(m->st, sname);
        int64_t rows = t->shape[0], cols = t->shape[1] * (32 / bits);
        if (!ts || !tb)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "MLX weight '%s' lacks its scales or biases", namebuf);
        if (ts->dtype != tb->dtype || st_to_qt(ts->dtype) == QT_COUNT || ts->n_dims != 2 || tb->n_dims != 2 ||
            ts->shape[0] != rows || tb->shape[0] != rows || cols % group || ts->shape[1] != cols / group ||
            tb->shape[1] != cols / group)
            return laya_err(err, errlen, LAYA_ERR_FORMAT,
                            "MLX weight '%s' (%lld x %lld, %d-bit, group %d): scales/biases of the wrong shape or type",
                            namebuf, (long long)rows, (long long)cols, bits, group);
        /* The kernels read whole uint32 words: safetensors does not promise alignment, so copy if needed. */
        if ((uintptr_t)t->data % 4) {
            if (m->n_owned == LM_MAX_OWNED) return laya_err(err, errlen, LAYA_ERR_NOMEM, "too many realigned tensors");
            void *copy = laya_malloc(t->size ? t->size : 1);
            if (!copy) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory realigning '%s'", namebuf);
            memcpy(copy, t->data, t->size);
            m->owned[m->n_owned++] = copy;
            out->data = copy;
        }
        out->type = QT_COUNT;
        out->ne[0] = cols;
        out->mlx_bits = bits;
        out->mlx_group = group;
        out->scales = ts->data;
        out->biases = tb->data;
        out->sb_type = st_to_qt(ts->dtype);
        return LAYA_OK;
    }
    if (out->type == QT_COUNT)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor '%s' has dtype %s (F32, F16, BF16 supported)",
                        namebuf, st_dtype_name(t->dtype));
    return LAYA_OK;
}

/* A weight matrix of `rows` rows of `cols` elements. */
static laya_status get_mat(laya_model *m, enum role r, int layer, int64_t cols, int64_t rows, int required,
                           lm_mat *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    char name[160];
    lm_src s;
    laya_status st = find_src(m, r, layer, &s, name, sizeof name, err, errlen);
    if (st == LAYA_ERR_NOT_FOUND)
        return required ? laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s' is missing", name) : LAYA_OK;
    if (st) return st;
    if (s.ne[0] != cols || s.ne[1] != rows || s.ne[2] != 1 || s.ne[3] != 1)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]",
                        name, (long long)s.ne[0], (long long)s.ne[1], (long long)s.ne[2], (long long)s.ne[3],
                        (long long)cols, (long long)rows);
    out->data = s.data;
    out->rows = rows;
    out->cols = cols;
    if (s.mlx_bits) {
        out->mlx_bits = s.mlx_bits;
        out->mlx_group = s.mlx_group;
        out->scales = s.scales;
        out->biases = s.biases;
        out->sb_type = s.sb_type;
        out->row_bytes = (size_t)cols * s.mlx_bits / 8;
        return LAYA_OK;
    }
    const qt_traits *tr = qt_get(s.type);
    if (!tr->name || !tr->supported)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor '%s' has type %s, which Laya cannot compute with",
                        name, tr->name ? tr->name : "unknown");
    if (cols % tr->block)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s': row length %lld is not a multiple of %s's block %d",
                        name, (long long)cols, tr->name, tr->block);
    out->type = s.type;
    out->row_bytes = qt_row_bytes(s.type, cols);
    return LAYA_OK;
}

static float *own_floats(laya_model *m, int64_t n) {
    if (m->n_owned == LM_MAX_OWNED) return NULL;
    float *buf = laya_malloc((size_t)n * sizeof(float));
    if (buf) m->owned[m->n_owned++] = buf;
    return buf;
}

/* A 1-D vector (norm weight, bias) as floats, always a copy the model owns (a few KB a layer): a view
 * would keep the file's pages around it mapped, and reading one maps a whole page-cache folio, megabytes
 * of matrix pages on large-folio file systems, that the packed copy (pack.c) releases. */
static laya_status get_vec(laya_model *m, enum role r, int layer, int64_t n, int required, const float **out,
                           char *err, size_t errlen) {
    *out = NULL;
    char name[160];
    lm_src s;
    laya_status st = find_src(m, r, layer, &s, name, sizeof name, err, errlen);
    if (st == LAYA_ERR_NOT_FOUND)
        return required ? laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s' is missing", name) : LAYA_OK;
    if (st) return st;
    if (s.ne[0] != n || s.ne[1] != 1 || s.ne[2] != 1 || s.ne[3] != 1 || s.mlx_bits)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s' has %lld x %lld elements, expected a vector of %lld",
                        name, (long long)s.ne[0], (long long)s.ne[1], (long long)n);
    const qt_traits *tr = qt_get(s.type);
    if (!tr->name || !tr->supported || n % tr->block)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor '%s' has type %s, unsupported for a vector", name,
                        tr->name ? tr->name : "unknown");
    float *buf = own_floats(m, n);
    if (!buf) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory converting '%s'", name);
    if (qt_dequantize_row(s.type, s.data, buf, n) != 0)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot convert tensor '%s'", name);
    *out = buf;
    return LAYA_OK;
}

/* ---- hyperparameters ----------------------------------------------------------------------------------- */

/* GGUF "<arch>.<suffix>" or config.json "<key>" as an integer within [lo, hi]. */
static laya_status get_int(laya_model *m, const char *suffix, const char *hf_key, int required, int64_t lo,
                           int64_t hi, int64_t def, int32_t *out, char *err, size_t errlen) {
    char key[128];
    int64_t v;
    laya_status st;
    if (m->gf) {
        snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
        st = gguf_get_i64(m->gf, key, &v);
    } else {
        snprintf(key, sizeof key, "config.json \"%s\"", hf_key);
        const json_value *j = hf_key ? json_get(json_root(m->cfg), hf_key) : NULL;
        if (!j || j->type == JSON_NULL) st = LAYA_ERR_NOT_FOUND;
        else if (j->type != JSON_NUMBER || !j->is_int) st = LAYA_ERR_TYPE;
        else { st = LAYA_OK; v = j->i; }
    }
    if (st == LAYA_ERR_NOT_FOUND && !required) {
        *out = (int32_t)def;
        return LAYA_OK;
    }
    if (st != LAYA_OK) return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s: %s", key, laya_status_str(st));
    if (v < lo || v > hi)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s = %lld is out of range [%lld, %lld]", key, (long long)v,
                        (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return LAYA_OK;
}

static const json_value *cfg_num(const laya_model *m, const char *key) {
    const json_value *j = json_get(json_root(m->cfg), key);
    return j && j->type == JSON_NUMBER ? j : NULL;
}

static laya_status get_real(laya_model *m, const char *suffix, const char *hf_key, float def, float *out, char *err,
                            size_t errlen) {
    char key[128];
    laya_status st;
    if (m->gf) {
        snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
        st = gguf_get_f32(m->gf, key, out);
    } else {
        snprintf(key, sizeof key, "config.json \"%s\"", hf_key);
        const json_value *j = json_get(json_root(m->cfg), hf_key);
        /* transformers 5 keeps rope_theta inside "rope_parameters" */
        if (!j && !strcmp(hf_key, "rope_theta")) {
            const json_value *rp = json_get(json_root(m->cfg), "rope_parameters");
            if (rp && rp->type == JSON_OBJECT) j = json_get(rp, "rope_theta");
        }
        if (!j || j->type == JSON_NULL) st = LAYA_ERR_NOT_FOUND;
        else if (j->type != JSON_NUMBER) st = LAYA_ERR_TYPE;
        else { st = LAYA_OK; *out = (float)j->num; }
    }
    if (st == LAYA_ERR_NOT_FOUND) {
        *out = def;
        return LAYA_OK;
    }
    if (st != LAYA_OK) return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s: %s", key, laya_status_str(st));
    if (!(*out > 0.0f) || *out > 1e12f)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s = %g is out of range", key, (double)*out);
    return LAYA_OK;
}

/* Llama 3 "rope_scaling": long wavelengths are slowed by `factor`, short ones kept, the band between
 * interpolated. Stored as per-frequency divisors, as GGUF's rope_freqs.weight holds them. */
static laya_status hf_rope_scaling(laya_model *m, char *err, size_t errlen) {
    const json_value *rs = json_get(json_root(m->cfg), "rope_scaling");
    if (!rs || rs->type != JSON_OBJECT) {
        const json_value *rp = json_get(json_root(m->cfg), "rope_parameters");
        rs = rp && rp->type == JSON_OBJECT ? rp : NULL;
    }
    if (!rs) return LAYA_OK;
    const json_value *t = json_get(rs, "rope_type");
    if (!t) t = json_get(rs, "type");
    if (!t || t->type != JSON_STRING || !strcmp(t->s, "default")) return LAYA_OK;
    if (strcmp(t->s, "llama3"))
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "rope scaling type '%s' is not supported", t->s);
    const json_value *f = json_get(rs, "factor"), *lo = json_get(rs, "low_freq_factor"),
                     *hi = json_get(rs, "high_freq_factor"), *op = json_get(rs, "original_max_position_embeddings");
    if (!f || !lo || !hi || !op || f->type != JSON_NUMBER || lo->type != JSON_NUMBER || hi->type != JSON_NUMBER ||
        op->type != JSON_NUMBER || !(f->num >= 1) || !(hi->num > lo->num) || !(lo->num > 0) || !(op->num > 0))
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "config.json: incomplete llama3 rope_scaling");
    int half = m->hp.head_dim / 2;
    float *div = own_floats(m, half);
    if (!div) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    double lo_wl = op->num / lo->num, hi_wl = op->num / hi->num;
    for (int j = 0; j < half; j++) {
        double freq = 1.0 / pow(m->hp.rope_theta, 2.0 * j / m->hp.head_dim), wl = 2 * M_PI / freq, d;
        if (wl < hi_wl) {
            d = 1.0;
        } else if (wl > lo_wl) {
            d = f->num;
        } else {
            double smooth = (op->num / wl - lo->num) / (hi->num - lo->num);
            d = 1.0 / ((1 - smooth) / f->num + smooth);
        }
        div[j] = (float)d;
    }
    m->rope_freqs = div;
    return LAYA_OK;
}

static laya_status load_hparams(laya_model *m, char *err, size_t errlen) {
    laya_status st;
    lm_hparams *h = &m->hp;
#define INT(suffix, hf, req, lo, hi, def, field) \
    if ((st = get_int(m, suffix, hf, req, lo, hi, def, &h->field, err, errlen)) != LAYA_OK) return st
    INT("embedding_length", "hidden_size", 1, 1, 1 << 16, 0, n_embd);
    INT("block_count", "num_hidden_layers", 1, 1, 1024, 0, n_layer);
    INT("feed_forward_length", "intermediate_size", 1, 1, 1 << 18, 0, n_ff);
    INT("attention.head_count", "num_attention_heads", 1, 1, 1024, 0, n_head);
    INT("attention.head_count_kv", "num_key_value_heads", 0, 1, 1024, h->n_head, n_head_kv);
    INT("attention.key_length", "head_dim", 0, 2, 4096, h->n_embd / h->n_head, head_dim);
    INT("attention.value_length", "head_dim", 0, 2, 4096, h->head_dim, head_dim_v);
    INT("context_length", "max_position_embeddings", 0, 1, 1 << 24, 4096, n_ctx_train);
#undef INT
    if ((st = get_real(m, "rope.freq_base", "rope_theta", 10000.0f, &h->rope_theta, err, errlen))) return st;
    if ((st = get_real(m, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-5f, &h->norm_eps, err, errlen)))
        return st;
    if (h->n_head % h->n_head_kv)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "head count %d is not a multiple of kv head count %d", h->n_head,
                        h->n_head_kv);
    if (h->head_dim % 2 || h->head_dim != h->head_dim_v)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "key length %d / value length %d: need equal and even",
                        h->head_dim, h->head_dim_v);
    if (m->gf) {
        int32_t rope_dims;
        if ((st = get_int(m, "rope.dimension_count", NULL, 0, 2, h->head_dim, h->head_dim, &rope_dims, err, errlen)))
            return st;
        if (rope_dims != h->head_dim)
            return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "partial rotary embedding (%d of %d dims)", rope_dims,
                            h->head_dim);
        /* Sliding-window attention changes results for long contexts: refuse rather than compute wrongly. */
        char key[128];
        snprintf(key, sizeof key, "%s.attention.sliding_window", m->arch);
        int64_t sw;
        if (gguf_get_i64(m->gf, key, &sw) == LAYA_OK && sw > 0 && sw < h->n_ctx_train)
            return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "sliding-window attention (%lld) is not supported",
                            (long long)sw);
        /* llama.cpp permutes Llama's q/k rows for adjacent-pair rotation; Qwen files keep NeoX halves. */
        h->rope_neox = strcmp(m->arch, "llama") != 0;
    } else {
        const json_value *sw = json_get(json_root(m->cfg), "use_sliding_window");
        if (sw && sw->type == JSON_BOOL && sw->b)
            return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "sliding-window attention is not supported");
        const json_value *pr = cfg_num(m, "partial_rotary_factor");
        if (pr && pr->num != 1.0)
            return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "partial rotary embedding (%g)", pr->num);
        h->rope_neox = 1; /* transformers rotates halves for every one of these architectures */
        if ((st = hf_rope_scaling(m, err, errlen))) return st;
    }
    h->has_qkv_bias = strcmp(m->arch, "qwen2") == 0;
    h->has_qk_norm = strcmp(m->arch, "qwen3") == 0;
    return LAYA_OK;
}

static laya_status load_tensors(laya_model *m, char *err, size_t errlen) {
    laya_status st;
    lm_hparams *h = &m->hp;
    char name[160];
    lm_src s;
    st = find_src(m, R_TOK_EMBD, 0, &s, name, sizeof name, err, errlen);
    if (st == LAYA_ERR_NOT_FOUND) return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s' is missing", name);
    if (st) return st;
    if (s.ne[1] < 1 || s.ne[1] > (1 << 22))
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s: vocabulary of %lld rows", name, (long long)s.ne[1]);
    h->n_vocab = (int32_t)s.ne[1];
    if ((st = get_mat(m, R_TOK_EMBD, 0, h->n_embd, h->n_vocab, 1, &m->tok_embd, err, errlen))) return st;
    if ((st = get_vec(m, R_OUTPUT_NORM, 0, h->n_embd, 1, &m->output_norm, err, errlen))) return st;
    if ((st = get_mat(m, R_OUTPUT, 0, h->n_embd, h->n_vocab, 0, &m->output, err, errlen))) return st;
    h->tied_output = m->output.data == NULL;
    if (h->tied_output) m->output = m->tok_embd;
    if (m->gf && gguf_find_tensor(m->gf, "rope_freqs.weight") &&
        (st = get_vec(m, R_ROPE_FREQS, 0, h->head_dim / 2, 1, &m->rope_freqs, err, errlen)))
        return st;

    m->layers = laya_calloc((size_t)h->n_layer, sizeof(lm_layer));
    if (!m->layers) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    int64_t d = h->n_embd, qd = (int64_t)h->n_head * h->head_dim, kvd = (int64_t)h->n_head_kv * h->head_dim;
    int bias = h->has_qkv_bias, qkn = h->has_qk_norm;
    for (int il = 0; il < h->n_layer; il++) {
        lm_layer *L = &m->layers[il];
        if ((st = get_vec(m, R_ATTN_NORM, il, d, 1, &L->attn_norm, err, errlen)) ||
            (st = get_mat(m, R_Q, il, d, qd, 1, &L->wq, err, errlen)) ||
            (st = get_mat(m, R_K, il, d, kvd, 1, &L->wk, err, errlen)) ||
            (st = get_mat(m, R_V, il, d, kvd, 1, &L->wv, err, errlen)) ||
            (st = get_mat(m, R_O, il, qd, d, 1, &L->wo, err, errlen)) ||
            (st = get_vec(m, R_QB, il, qd, bias, &L->bq, err, errlen)) ||
            (st = get_vec(m, R_KB, il, kvd, bias, &L->bk, err, errlen)) ||
            (st = get_vec(m, R_VB, il, kvd, bias, &L->bv, err, errlen)) ||
            (st = get_vec(m, R_QNORM, il, h->head_dim, qkn, &L->q_norm, err, errlen)) ||
            (st = get_vec(m, R_KNORM, il, h->head_dim, qkn, &L->k_norm, err, errlen)) ||
            (st = get_vec(m, R_FFN_NORM, il, d, 1, &L->ffn_norm, err, errlen)) ||
            (st = get_mat(m, R_GATE, il, d, h->n_ff, 1, &L->w_gate, err, errlen)) ||
            (st = get_mat(m, R_UP, il, d, h->n_ff, 1, &L->w_up, err, errlen)) ||
            (st = get_mat(m, R_DOWN, il, h->n_ff, d, 1, &L->w_down, err, errlen)))
            return st;
        /* Biases come all three or none: a partial set would be silently ignored otherwise. */
        if (!!L->bq != !!L->bk || !!L->bq != !!L->bv)
            return laya_err(err, errlen, LAYA_ERR_FORMAT, "layer %d has only some of the q/k/v biases", il);
    }
    return LAYA_OK;
}

/* ---- containers ------------------------------------------------------------------------------------- */

static laya_status open_gguf(laya_model *m, const char *path, char *err, size_t errlen) {
    laya_status st = gguf_open(path, &m->gf, err, errlen);
    if (st) return st;
    uint64_t nt = gguf_n_tensors(m->gf), blob = 0;
    for (uint64_t i = 0; i < nt; i++) blob += gguf_tensor_at(m->gf, i)->name.n + 1; /* <= file size */
    m->tinfo = laya_calloc(nt + 1, sizeof(lm_tinfo));
    m->names_blob = laya_malloc(blob + 1);
    if (!m->tinfo || !m->names_blob) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0, off = 0; i < nt; i++) {
        const gguf_tensor *t = gguf_tensor_at(m->gf, i);
        lm_tinfo *ti = &m->tinfo[i];
        memcpy(m->names_blob + off, t->name.p, t->name.n);
        m->names_blob[off + t->name.n] = 0;
        ti->name = m->names_blob + off;
        off += t->name.n + 1;
        ti->type = qt_get(t->type)->name ? qt_get(t->type)->name : "unknown";
        memcpy(ti->ne, t->ne, sizeof ti->ne);
        ti->n_dims = (int32_t)t->n_dims;
        ti->size = t->size;
        ti->n_elems = (uint64_t)t->ne[0] * (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
    }
    m->n_tinfo = (int64_t)nt;

    gguf_str arch;
    st = gguf_get_str(m->gf, "general.architecture", &arch);
    if (st) return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s: metadata general.architecture: %s", path, laya_status_str(st));
    if (!streq(arch, "llama") && !streq(arch, "qwen2") && !streq(arch, "qwen3"))
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "architecture '%.*s' is not supported (llama, qwen2, qwen3)",
                        (int)LAYA_MIN(arch.n, 64), arch.p);
    memcpy(m->arch, arch.p, arch.n);
    gguf_str name;
    if (gguf_get_str(m->gf, "general.name", &name) == LAYA_OK) memcpy(m->name, name.p, LAYA_MIN(name.n, sizeof m->name - 1));
    if ((st = gguf_check_token_ids(m->gf, err, errlen))) return st;
    return tok_load(m->gf, &m->tok, err, errlen);
}

static laya_status read_small_file(const char *path, size_t cap, char **out, size_t *len, char *err, size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return laya_err(err, errlen, LAYA_ERR_IO, "cannot open %s", path);
    char *buf = laya_malloc(cap + 1);
    if (!buf) { fclose(f); return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory"); }
    size_t n = fread(buf, 1, cap + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > cap) {
        laya_free(buf);
        return laya_err(err, errlen, bad ? LAYA_ERR_IO : LAYA_ERR_FORMAT, "%s: %s", path,
                        bad ? "read error" : "file too large");
    }
    *out = buf;
    *len = n;
    return LAYA_OK;
}

static laya_status open_hf_dir(laya_model *m, const char *dir, int vocab_only, char *err, size_t errlen) {
    char path[4096], msg[LAYA_ERR_MSG_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text;
    size_t len = 0;
    laya_status st = read_small_file(path, 1 << 20, &text, &len, err, errlen);
    if (st) return st;
    json_limits lim = {.max_bytes = 1 << 20, .max_depth = 16};
    st = json_parse(text, len, &lim, &m->cfg, msg, sizeof msg);
    laya_free(text);
    if (st) return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s: %s", path, msg);
    if (json_root(m->cfg)->type != JSON_OBJECT) return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s: not an object", path);
    const json_value *mt = json_get(json_root(m->cfg), "model_type");
    if (!mt || mt->type != JSON_STRING) return laya_err(err, errlen, LAYA_ERR_FORMAT, "%s: no \"model_type\"", path);
    if (strcmp(mt->s, "llama") && strcmp(mt->s, "qwen2") && strcmp(mt->s, "qwen3"))
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "model_type '%.64s' is not supported (llama, qwen2, qwen3)",
                        mt->s);
    snprintf(m->arch, sizeof m->arch, "%s", mt->s);
    const char *base = strrchr(dir, '/');
    snprintf(m->name, sizeof m->name, "%s", base && base[1] ? base + 1 : dir);
    if ((st = tok_load_json(dir, &m->tok, err, errlen))) return st;
    if (vocab_only) return LAYA_OK;
    if ((st = st_open_dir(dir, &m->st, err, errlen))) return st;
    uint64_t nt = st_count(m->st);
    m->tinfo = laya_calloc(nt + 1, sizeof(lm_tinfo));
    if (!m->tinfo) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < nt; i++) {
        const st_tensor *t = st_at(m->st, i);
        lm_tinfo *ti = &m->tinfo[i];
        ti->name = t->name;
        ti->type = st_dtype_name(t->dtype);
        ti->n_dims = (int32_t)LAYA_MIN(t->n_dims, 4u);
        ti->n_elems = 1;
        for (int k = 0; k < 4; k++) ti->ne[k] = 1;
        for (uint32_t k = 0; k < t->n_dims; k++) {
            ti->n_elems *= (uint64_t)t->shape[k];
            if (k < 4) ti->ne[k] = t->shape[t->n_dims - 1 - k];
        }
        if (t->dtype == ST_U32) ti->n_elems *= 8; /* MLX packs up to 8 weights per word: an estimate */
        ti->size = t->size;
    }
    m->n_tinfo = (int64_t)nt;
    return LAYA_OK;
}

laya_status laya_model_load(const char *path, laya_model_params params, laya_model **out, char *err,
                            size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!path) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "path is NULL");
    laya_status st_abi = laya_check_abi(params.abi, "model", err, errlen);
    if (st_abi) return st_abi;
    if (err && errlen) err[0] = 0;
    laya_model *m = laya_calloc(1, sizeof *m);
    if (!m) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    struct stat sb;
    int is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    laya_status st = is_dir ? open_hf_dir(m, path, params.vocab_only, err, errlen) : open_gguf(m, path, err, errlen);
    if (st) goto fail;
    if (!m->tok) {
        st = laya_err(err, errlen, LAYA_ERR_FORMAT, "no tokenizer");
        goto fail;
    }
    if ((st = load_hparams(m, err, errlen))) goto fail;
    m->vocab_only = params.vocab_only != 0;
    if (!m->vocab_only) {
        if ((st = load_tensors(m, err, errlen))) goto fail;
        if (tok_n_vocab(m->tok) > m->hp.n_vocab) {
            st = laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer has %d tokens but the model's vocabulary is %d",
                          tok_n_vocab(m->tok), m->hp.n_vocab);
            goto fail;
        }
    } else {
        m->hp.n_vocab = tok_n_vocab(m->tok);
    }
    int nt = params.n_threads;
    if (nt <= 0) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        nt = nc > 0 ? (int)nc : 1;
    }
    m->n_threads = LAYA_MIN(nt, 64);
    m->kn = kn_best();
    if (!m->vocab_only && params.pack_weights >= 0 && m->kn->packs) lm_pack_start(m);
    laya_log(LAYA_LOG_INFO, "loaded '%s': %s, %d layers, %d threads, kernels %s%s", path, m->arch, m->hp.n_layer,
             m->n_threads, m->kn->name, m->vocab_only ? ", vocabulary only" : "");
    *out = m;
    return LAYA_OK;
fail:
    laya_log(LAYA_LOG_WARN, "cannot load '%s': %s", path, err && errlen && err[0] ? err : laya_status_str(st));
    laya_model_free(m);
    return st;
}

void laya_model_free(laya_model *m) {
    if (!m) return;
    lm_pack_free(m);
    for (int i = 0; i < m->n_owned; i++) laya_free(m->owned[i]);
    laya_free(m->layers);
    laya_free(m->tinfo);
    laya_free(m->names_blob);
    tok_free(m->tok);
    gguf_close(m->gf);
    st_close(m->st);
    json_free(m->cfg);
    laya_free(m);
}

const char *laya_model_error(const laya_model *m) { return m ? m->err : "model is NULL"; }

void laya_model_get_info(const laya_model *m, laya_model_info *o) {
    memset(o, 0, sizeof *o);
    const lm_hparams *h = &m->hp;
    o->arch = m->arch;
    o->name = m->name;
    o->n_vocab = h->n_vocab;
    o->n_embd = h->n_embd;
    o->n_layer = h->n_layer;
    o->n_head = h->n_head;
    o->n_head_kv = h->n_head_kv;
    o->head_dim = h->head_dim;
    o->n_ff = h->n_ff;
    o->n_ctx_train = h->n_ctx_train;
    o->rope_theta = h->rope_theta;
    o->norm_eps = h->norm_eps;
    o->rope_neox = h->rope_neox;
    o->tied_output = h->tied_output;
    o->has_qkv_bias = h->has_qkv_bias;
    o->has_qk_norm = h->has_qk_norm;
    o->tok_model = tok_model_name(m->tok);
    o->tok_pre = tok_pre_name(m->tok);
    o->bos = tok_bos(m->tok);
    o->eos = tok_eos(m->tok);
    o->add_bos = tok_add_bos(m->tok);
    for (int64_t i = 0; i < m->n_tinfo; i++) {
        /* MLX scales and biases are counted in bytes, not as parameters */
        size_t n = strlen(m->tinfo[i].name);
        int aux = m->st && n > 7 && (!strcmp(m->tinfo[i].name + n - 7, ".scales") || !strcmp(m->tinfo[i].name + n - 7, ".biases"));
        if (!aux) o->n_params += m->tinfo[i].n_elems;
        o->weight_bytes += m->tinfo[i].size;
    }
    o->file_bytes = m->gf ? gguf_file_size(m->gf) : m->st ? st_mapped_bytes(m->st) : 0;
    o->packed_bytes = m->packed_bytes;
    o->n_threads = m->n_threads;
    if (m->vocab_only) return;
    const int nm = 7 * h->n_layer + 1;
    laya_model *mm = (laya_model *)m; /* lm_step_mat hands out non-const pointers; nothing is written */
    for (int i = 0; i < nm; i++) {
        const lm_mat *w = lm_step_mat(mm, i);
        uint32_t pt = m->packed_bytes ? lm_pack_type(m, w) : 0;
        if (pt) o->step_bytes += kn_pack_bytes(pt, w->rows, w->cols);
        else o->step_bytes += (uint64_t)w->rows * w->row_bytes;
        if (w->mlx_bits) /* scales and biases, one each per group */
            o->step_bytes += 2ull * (uint64_t)w->rows * (uint64_t)(w->cols / w->mlx_group) * (w->sb_type == QT_F32 ? 4 : 2);
    }
    uint64_t qd = (uint64_t)h->n_head * h->head_dim, kvd = (uint64_t)h->n_head_kv * h->head_dim;
    uint64_t vec = 2ull * h->n_embd + (h->has_qkv_bias ? qd + 2 * kvd : 0) + (h->has_qk_norm ? 2ull * h->head_dim : 0);
    o->step_bytes += 4 * (vec * (uint64_t)h->n_layer + (uint64_t)h->n_embd); /* F32 norms and biases */
}

laya_status laya_model_tensor(const laya_model *m, int32_t i, const char **name, const char **type, int64_t ne[4],
                              int32_t *n_dims) {
    if (!m || i < 0) return LAYA_ERR_INVALID_ARG;
    if (i >= m->n_tinfo) return LAYA_ERR_NOT_FOUND;
    const lm_tinfo *t = &m->tinfo[i];
    if (name) *name = t->name;
    if (type) *type = t->type;
    if (ne) memcpy(ne, t->ne, sizeof t->ne);
    if (n_dims) *n_dims = t->n_dims;
    return LAYA_OK;
}

laya_status laya_tokenize(const laya_model *m, const char *text, size_t len, int parse_special, laya_token *out,
                          size_t cap, size_t *n_out) {
    if (!m || (!text && len) || !n_out || (!out && cap)) return LAYA_ERR_INVALID_ARG;
    return tok_encode(m->tok, text ? text : "", len, parse_special, out, cap, n_out);
}

const char *laya_token_piece(const laya_model *m, laya_token id, size_t *len) {
    if (!m || !len) return NULL;
    return tok_piece(m->tok, id, len);
}

laya_status laya_detokenize(const laya_model *m, const laya_token *ids, size_t n, int strip_leading_space,
                            int replace_invalid, char *out, size_t cap, size_t *n_out) {
    if (!m || (!ids && n) || !n_out || (!out && cap)) return LAYA_ERR_INVALID_ARG;
    return tok_decode(m->tok, ids, n, strip_leading_space, replace_invalid, out, cap, n_out);
}

int32_t laya_n_vocab(const laya_model *m) { return m ? m->hp.n_vocab : 0; }

const char *laya_cpu_backend(void) { return kn_best()->name; }
