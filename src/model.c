/* model.c — loading Llama/Qwen2/Qwen3 models from GGUF and the public model API (info, tensors,
 * tokenizer wrappers). Every hyperparameter comes from metadata and every tensor's type and shape is
 * checked before use. The forward pass itself is in forward.c. */
#include "model.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kernels/kernels.h"

laya_model_params laya_model_default_params(void) {
    laya_model_params p = {0};
    return p;
}

static int streq(gguf_str s, const char *c) { return s.n == strlen(c) && memcmp(s.p, c, s.n) == 0; }

/* Reads "<arch>.<suffix>" as a positive integer within [lo, hi]. */
static laya_status get_dim(laya_model *m, const char *suffix, int required, int64_t lo, int64_t hi,
                           int64_t def, int32_t *out, char *err, size_t errlen) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    int64_t v;
    laya_status st = gguf_get_i64(m->gf, key, &v);
    if (st == LAYA_ERR_NOT_FOUND && !required) {
        *out = (int32_t)def;
        return LAYA_OK;
    }
    if (st != LAYA_OK) return laya_err(err, errlen, LAYA_ERR_FORMAT, "metadata %s: %s", key, laya_status_str(st));
    if (v < lo || v > hi)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "metadata %s = %lld is out of range [%lld, %lld]", key,
                        (long long)v, (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return LAYA_OK;
}

static laya_status get_float(laya_model *m, const char *suffix, float def, float *out, char *err, size_t errlen) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", m->arch, suffix);
    laya_status st = gguf_get_f32(m->gf, key, out);
    if (st == LAYA_ERR_NOT_FOUND) {
        *out = def;
        return LAYA_OK;
    }
    if (st != LAYA_OK) return laya_err(err, errlen, LAYA_ERR_FORMAT, "metadata %s: %s", key, laya_status_str(st));
    if (!(*out > 0.0f) || *out > 1e12f)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "metadata %s = %g is out of range", key, (double)*out);
    return LAYA_OK;
}

/* A weight matrix of `rows` rows of `cols` elements, any supported type. */
static laya_status get_mat(laya_model *m, const char *name, int64_t cols, int64_t rows, int required,
                           lm_mat *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const gguf_tensor *t = gguf_find_tensor(m->gf, name);
    if (!t) {
        if (!required) return LAYA_OK;
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s' is missing", name);
    }
    const qt_traits *tr = qt_get(t->type);
    if (!tr->name || !tr->supported)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor '%s' has type %s, which Laya cannot compute with", name,
                        tr->name ? tr->name : "unknown");
    if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != 1 || t->ne[3] != 1)
        return laya_err(err, errlen, LAYA_ERR_FORMAT,
                        "tensor '%s' has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]", name,
                        (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                        (long long)cols, (long long)rows);
    if (cols % tr->block)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s': row length %lld is not a multiple of %s's block %d",
                        name, (long long)cols, tr->name, tr->block);
    out->data = t->data;
    out->type = t->type;
    out->rows = rows;
    out->cols = cols;
    out->row_bytes = qt_row_bytes(t->type, cols);
    return LAYA_OK;
}

/* A 1-D vector (norm weight, bias) as floats: a view when stored as F32, else converted into memory the
 * model owns. */
static laya_status get_vec(laya_model *m, const char *name, int64_t n, int required, const float **out,
                           char *err, size_t errlen) {
    *out = NULL;
    const gguf_tensor *t = gguf_find_tensor(m->gf, name);
    if (!t) {
        if (!required) return LAYA_OK;
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s' is missing", name);
    }
    if (t->ne[0] != n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%s' has %lld x %lld elements, expected a vector of %lld",
                        name, (long long)t->ne[0], (long long)t->ne[1], (long long)n);
    if (t->type == QT_F32 && ((uintptr_t)t->data % sizeof(float)) == 0) {
        *out = t->data;
        return LAYA_OK;
    }
    const qt_traits *tr = qt_get(t->type);
    if (!tr->name || !tr->supported || n % tr->block)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor '%s' has type %s, unsupported for a vector", name,
                        tr->name ? tr->name : "unknown");
    if (m->n_owned == LM_MAX_OWNED) return laya_err(err, errlen, LAYA_ERR_FORMAT, "too many converted vectors");
    float *buf = laya_malloc((size_t)n * sizeof(float));
    if (!buf) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory converting '%s'", name);
    m->owned[m->n_owned++] = buf;
    if (qt_dequantize_row(t->type, t->data, buf, n) != 0)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "cannot convert tensor '%s'", name);
    *out = buf;
    return LAYA_OK;
}

static laya_status load_hparams(laya_model *m, char *err, size_t errlen) {
    laya_status st;
    lm_hparams *h = &m->hp;
#define DIM(suffix, req, lo, hi, def, field) \
    if ((st = get_dim(m, suffix, req, lo, hi, def, &h->field, err, errlen)) != LAYA_OK) return st
    DIM("embedding_length", 1, 1, 1 << 16, 0, n_embd);
    DIM("block_count", 1, 1, 1024, 0, n_layer);
    DIM("feed_forward_length", 1, 1, 1 << 18, 0, n_ff);
    DIM("attention.head_count", 1, 1, 1024, 0, n_head);
    DIM("attention.head_count_kv", 0, 1, 1024, h->n_head, n_head_kv);
    DIM("attention.key_length", 0, 2, 4096, h->n_embd / h->n_head, head_dim);
    DIM("attention.value_length", 0, 2, 4096, h->head_dim, head_dim_v);
    DIM("context_length", 0, 1, 1 << 24, 4096, n_ctx_train);
#undef DIM
    if ((st = get_float(m, "rope.freq_base", 10000.0f, &h->rope_theta, err, errlen))) return st;
    if ((st = get_float(m, "attention.layer_norm_rms_epsilon", 1e-5f, &h->norm_eps, err, errlen))) return st;
    if (h->n_head % h->n_head_kv)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "head_count %d is not a multiple of head_count_kv %d",
                        h->n_head, h->n_head_kv);
    if (h->head_dim % 2 || h->head_dim != h->head_dim_v)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "key_length %d / value_length %d: need equal and even",
                        h->head_dim, h->head_dim_v);
    int32_t rope_dims;
    if ((st = get_dim(m, "rope.dimension_count", 0, 2, h->head_dim, h->head_dim, &rope_dims, err, errlen))) return st;
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
    h->rope_neox = strcmp(m->arch, "llama") != 0; /* GGUF llama weights are permuted for adjacent pairs */
    h->has_qkv_bias = strcmp(m->arch, "qwen2") == 0;
    h->has_qk_norm = strcmp(m->arch, "qwen3") == 0;
    return LAYA_OK;
}

static laya_status load_tensors(laya_model *m, char *err, size_t errlen) {
    laya_status st;
    lm_hparams *h = &m->hp;
    const gguf_tensor *te = gguf_find_tensor(m->gf, "token_embd.weight");
    if (!te) return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor 'token_embd.weight' is missing");
    if (te->ne[1] < 1 || te->ne[1] > (1 << 22))
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "token_embd.weight: vocabulary of %lld rows", (long long)te->ne[1]);
    h->n_vocab = (int32_t)te->ne[1];
    if ((st = get_mat(m, "token_embd.weight", h->n_embd, h->n_vocab, 1, &m->tok_embd, err, errlen))) return st;
    if ((st = get_vec(m, "output_norm.weight", h->n_embd, 1, &m->output_norm, err, errlen))) return st;
    if ((st = get_mat(m, "output.weight", h->n_embd, h->n_vocab, 0, &m->output, err, errlen))) return st;
    h->tied_output = m->output.data == NULL;
    if (h->tied_output) m->output = m->tok_embd;

    const gguf_tensor *rf = gguf_find_tensor(m->gf, "rope_freqs.weight");
    if (rf && (st = get_vec(m, "rope_freqs.weight", h->head_dim / 2, 1, &m->rope_freqs, err, errlen))) return st;

    m->layers = laya_calloc((size_t)h->n_layer, sizeof(lm_layer));
    if (!m->layers) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    int64_t d = h->n_embd, qd = (int64_t)h->n_head * h->head_dim, kvd = (int64_t)h->n_head_kv * h->head_dim;
    for (int il = 0; il < h->n_layer; il++) {
        lm_layer *L = &m->layers[il];
        char nm[96];
#define T(fmt) (snprintf(nm, sizeof nm, "blk.%d." fmt, il), nm)
        if ((st = get_vec(m, T("attn_norm.weight"), d, 1, &L->attn_norm, err, errlen))) return st;
        if ((st = get_mat(m, T("attn_q.weight"), d, qd, 1, &L->wq, err, errlen))) return st;
        if ((st = get_mat(m, T("attn_k.weight"), d, kvd, 1, &L->wk, err, errlen))) return st;
        if ((st = get_mat(m, T("attn_v.weight"), d, kvd, 1, &L->wv, err, errlen))) return st;
        if ((st = get_mat(m, T("attn_output.weight"), qd, d, 1, &L->wo, err, errlen))) return st;
        int bias = h->has_qkv_bias;
        if ((st = get_vec(m, T("attn_q.bias"), qd, bias, &L->bq, err, errlen))) return st;
        if ((st = get_vec(m, T("attn_k.bias"), kvd, bias, &L->bk, err, errlen))) return st;
        if ((st = get_vec(m, T("attn_v.bias"), kvd, bias, &L->bv, err, errlen))) return st;
        int qkn = h->has_qk_norm;
        if ((st = get_vec(m, T("attn_q_norm.weight"), h->head_dim, qkn, &L->q_norm, err, errlen))) return st;
        if ((st = get_vec(m, T("attn_k_norm.weight"), h->head_dim, qkn, &L->k_norm, err, errlen))) return st;
        if ((st = get_vec(m, T("ffn_norm.weight"), d, 1, &L->ffn_norm, err, errlen))) return st;
        if ((st = get_mat(m, T("ffn_gate.weight"), d, h->n_ff, 1, &L->w_gate, err, errlen))) return st;
        if ((st = get_mat(m, T("ffn_up.weight"), d, h->n_ff, 1, &L->w_up, err, errlen))) return st;
        if ((st = get_mat(m, T("ffn_down.weight"), h->n_ff, d, 1, &L->w_down, err, errlen))) return st;
#undef T
    }
    return LAYA_OK;
}

laya_status laya_model_load(const char *path, laya_model_params params, laya_model **out, char *err,
                            size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!path) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "path is NULL");
    if (err && errlen) err[0] = 0;
    laya_model *m = laya_calloc(1, sizeof *m);
    if (!m) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    laya_status st = gguf_open(path, &m->gf, err, errlen);
    if (st) goto fail;

    /* NUL-terminated copies of the tensor names, for the public API (the map's are not terminated). */
    uint64_t nt_all = gguf_n_tensors(m->gf), blob = 0;
    for (uint64_t i = 0; i < nt_all; i++) blob += gguf_tensor_at(m->gf, i)->name.n + 1; /* <= file size */
    m->tensor_names = laya_calloc(nt_all + 1, sizeof(char *));
    m->names_blob = laya_malloc(blob + 1);
    if (!m->tensor_names || !m->names_blob) {
        st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (uint64_t i = 0, off = 0; i < nt_all; i++) {
        gguf_str nm = gguf_tensor_at(m->gf, i)->name;
        memcpy(m->names_blob + off, nm.p, nm.n);
        m->names_blob[off + nm.n] = 0;
        m->tensor_names[i] = m->names_blob + off;
        off += nm.n + 1;
    }

    gguf_str arch;
    st = gguf_get_str(m->gf, "general.architecture", &arch);
    if (st) {
        laya_err(err, errlen, LAYA_ERR_FORMAT, "%s: metadata general.architecture: %s", path, laya_status_str(st));
        st = LAYA_ERR_FORMAT;
        goto fail;
    }
    if (!streq(arch, "llama") && !streq(arch, "qwen2") && !streq(arch, "qwen3")) {
        st = laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "architecture '%.*s' is not supported (llama, qwen2, qwen3)",
                      (int)LAYA_MIN(arch.n, 64), arch.p);
        goto fail;
    }
    memcpy(m->arch, arch.p, arch.n);
    gguf_str name;
    if (gguf_get_str(m->gf, "general.name", &name) == LAYA_OK) {
        size_t n = LAYA_MIN(name.n, sizeof m->name - 1);
        memcpy(m->name, name.p, n);
    }
    if ((st = gguf_check_token_ids(m->gf, err, errlen))) goto fail;
    if ((st = tok_load(m->gf, &m->tok, err, errlen))) goto fail;
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
    *out = m;
    return LAYA_OK;
fail:
    laya_model_free(m);
    return st;
}

void laya_model_free(laya_model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) laya_free(m->owned[i]);
    laya_free(m->layers);
    laya_free(m->tensor_names);
    laya_free(m->names_blob);
    tok_free(m->tok);
    gguf_close(m->gf);
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
    uint64_t np = 0, wb = 0;
    for (uint64_t i = 0; i < gguf_n_tensors(m->gf); i++) {
        const gguf_tensor *t = gguf_tensor_at(m->gf, i);
        np += (uint64_t)t->ne[0] * (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
        wb += t->size;
    }
    o->n_params = np;
    o->weight_bytes = wb;
    o->file_bytes = gguf_file_size(m->gf);
}

laya_status laya_model_tensor(const laya_model *m, int32_t i, const char **name, const char **type, int64_t ne[4],
                              int32_t *n_dims) {
    if (!m || i < 0) return LAYA_ERR_INVALID_ARG;
    if ((uint64_t)i >= gguf_n_tensors(m->gf)) return LAYA_ERR_NOT_FOUND;
    const gguf_tensor *t = gguf_tensor_at(m->gf, (uint64_t)i);
    if (name) *name = m->tensor_names[i];
    if (type) *type = qt_get(t->type)->name ? qt_get(t->type)->name : "unknown";
    if (ne) memcpy(ne, t->ne, sizeof t->ne);
    if (n_dims) *n_dims = (int32_t)t->n_dims;
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
