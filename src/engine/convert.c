/* convert.c — laya_convert: writes a loaded model (usually a Hugging Face or MLX directory) as a GGUF file
 * in llama.cpp's conventions, so llama.cpp and other GGUF tools load it too: its metadata keys and tensor
 * names, Llama's q/k rows permuted for adjacent-pair rotation, the tokenizer as tokenizer.ggml.* keys.
 * Weights go through F32 row by row and are re-encoded to the requested type. In the engine layer, not io,
 * because it reads the weights through the model loader (model.h's lm_mat views). */
#include <stdio.h>

#include "engine/model.h"
#include "io/tokjson.h"

typedef struct cv {
    gguf_writer *w;
    void **bufs; /* converted tensor data, alive until the file is written */
    size_t n_bufs, cap_bufs;
    float *row;  /* one F32 row */
    char *err;
    size_t errlen;
} cv;

static void *cv_alloc(cv *c, size_t n) {
    if (c->n_bufs == c->cap_bufs) {
        size_t cap = c->cap_bufs ? 2 * c->cap_bufs : 256;
        void **nb = laya_malloc(cap * sizeof *nb);
        if (!nb) return NULL;
        if (c->n_bufs) memcpy(nb, c->bufs, c->n_bufs * sizeof *nb);
        laya_free(c->bufs);
        c->bufs = nb;
        c->cap_bufs = cap;
    }
    void *p = laya_malloc(n ? n : 1);
    if (p) c->bufs[c->n_bufs++] = p;
    return p;
}

static void mat_row(const lm_mat *w, int64_t r, float *out) {
    const char *row = (const char *)w->data + (size_t)r * w->row_bytes;
    if (w->mlx_bits) {
        size_t sb = (size_t)(w->cols / w->mlx_group) * (w->sb_type == QT_F32 ? 4 : 2) * (size_t)r;
        mlx_dequantize_row(w->mlx_bits, w->mlx_group, (const uint32_t *)row, (const char *)w->scales + sb,
                           (const char *)w->biases + sb, w->sb_type, out, w->cols);
    } else {
        qt_dequantize_row(w->type, row, out, w->cols);
    }
}

/* Adds matrix w as `name` in type `to`. permute_heads > 0: the rows are a q or k projection of that many
 * heads in transformers' rotate-half order, written in llama.cpp's adjacent-pair order. */
static laya_status add_mat(cv *c, const char *name, const lm_mat *w, uint32_t to, int permute_heads) {
    if (w->cols % qt_get(to)->block) to = QT_F16; /* rows that are not whole blocks stay at 16 bits */
    size_t rb = qt_row_bytes(to, w->cols);
    uint64_t bytes;
    if (!rb || ck_mul(rb, (uint64_t)w->rows, &bytes) || bytes > SIZE_MAX)
        return laya_err(c->err, c->errlen, LAYA_ERR_FORMAT, "tensor %s: bad shape", name);
    char *dst = cv_alloc(c, (size_t)bytes);
    if (!dst) return laya_err(c->err, c->errlen, LAYA_ERR_NOMEM, "out of memory converting %s", name);
    int64_t hd = permute_heads ? w->rows / permute_heads : 0;
    for (int64_t r = 0; r < w->rows; r++) {
        int64_t src = r;
        if (permute_heads) { /* GGUF row h*hd + 2i + half  <-  HF row h*hd + half*hd/2 + i */
            int64_t h = r / hd, k = r % hd, i = k / 2, half = k % 2;
            src = h * hd + half * (hd / 2) + i;
        }
        mat_row(w, src, c->row);
        if (qt_quantize_row(to, c->row, dst + (size_t)r * rb, w->cols))
            return laya_err(c->err, c->errlen, LAYA_ERR_UNSUPPORTED, "cannot encode %s as %s", name, qt_get(to)->name);
    }
    int64_t ne[2] = {w->cols, w->rows};
    laya_status st = gguf_writer_add_tensor(c->w, name, to, 2, ne, dst);
    return st ? laya_err(c->err, c->errlen, st, "adding tensor %s: %s", name, laya_status_str(st)) : LAYA_OK;
}

static laya_status add_vec(cv *c, const char *name, const float *v, int64_t n) {
    if (!v) return LAYA_OK;
    float *dst = cv_alloc(c, (size_t)n * sizeof(float));
    if (!dst) return laya_err(c->err, c->errlen, LAYA_ERR_NOMEM, "out of memory");
    memcpy(dst, v, (size_t)n * sizeof(float));
    int64_t ne[1] = {n};
    laya_status st = gguf_writer_add_tensor(c->w, name, QT_F32, 1, ne, dst);
    return st ? laya_err(c->err, c->errlen, st, "adding tensor %s: %s", name, laya_status_str(st)) : LAYA_OK;
}

laya_status laya_convert(const char *src, const char *out_path, const char *type, char *err, size_t errlen) {
    if (!src || !out_path) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "laya_convert: NULL path");
    int to = qt_from_name(type ? type : "F16");
    if (to != QT_F32 && to != QT_F16 && to != QT_Q8_0 && to != QT_Q4_0)
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "unsupported type '%s' (F32, F16, Q8_0 or Q4_0)", type);
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 1;
    laya_model *m = NULL;
    laya_status st = laya_model_load(src, mp, &m, err, errlen);
    if (st) return st;
    if (m->gf) {
        laya_model_free(m);
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "%s is already GGUF: use laya quantize", src);
    }
    const lm_hparams *h = &m->hp;
    cv c = {.err = err, .errlen = errlen};
    c.w = gguf_writer_new();
    int64_t maxk = LAYA_MAX(LAYA_MAX(h->n_embd, h->n_ff), (int64_t)h->n_head * h->head_dim);
    c.row = laya_malloc((size_t)maxk * sizeof(float));
    if (!c.w || !c.row) {
        st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        goto done;
    }
    const char *a = m->arch;
    char key[128];
    uint32_t ftype = to == QT_F32 ? 0 : to == QT_F16 ? 1 : to == QT_Q4_0 ? 2 : 7;
#define KU32(suffix, v) (snprintf(key, sizeof key, "%s.%s", a, suffix), gguf_writer_set_u32(c.w, key, (uint32_t)(v)))
#define KF32(suffix, v) (snprintf(key, sizeof key, "%s.%s", a, suffix), gguf_writer_set_f32(c.w, key, (v)))
    if ((st = gguf_writer_set_str(c.w, "general.architecture", a)) || (st = gguf_writer_set_str(c.w, "general.name", m->name)) ||
        (st = gguf_writer_set_u32(c.w, "general.file_type", ftype)) ||
        (st = gguf_writer_set_u32(c.w, "general.quantization_version", 2)) ||
        (st = KU32("context_length", h->n_ctx_train)) || (st = KU32("embedding_length", h->n_embd)) ||
        (st = KU32("block_count", h->n_layer)) || (st = KU32("feed_forward_length", h->n_ff)) ||
        (st = KU32("attention.head_count", h->n_head)) || (st = KU32("attention.head_count_kv", h->n_head_kv)) ||
        (st = KU32("attention.key_length", h->head_dim)) || (st = KU32("attention.value_length", h->head_dim)) ||
        (st = KU32("rope.dimension_count", h->head_dim)) || (st = KU32("vocab_size", h->n_vocab)) ||
        (st = KF32("rope.freq_base", h->rope_theta)) || (st = KF32("attention.layer_norm_rms_epsilon", h->norm_eps))) {
        st = laya_err(err, errlen, st, "writing metadata: %s", laya_status_str(st));
        goto done;
    }
#undef KU32
#undef KF32
    if ((st = tokjson_to_gguf(src, c.w, err, errlen))) goto done;

    /* As `laya quantize` does (and llama.cpp), a 4-bit file keeps its output matrix at 6 or 8 bits. */
    uint32_t out_type = to == QT_Q4_0 ? (h->n_embd % QK_K == 0 ? QT_Q6_K : QT_Q8_0) : (uint32_t)to;
    int llama = !strcmp(a, "llama");
    if ((st = add_mat(&c, "token_embd.weight", &m->tok_embd, h->tied_output ? out_type : (uint32_t)to, 0)) ||
        (st = add_vec(&c, "output_norm.weight", m->output_norm, h->n_embd)) ||
        (!h->tied_output && (st = add_mat(&c, "output.weight", &m->output, out_type, 0))) ||
        (st = add_vec(&c, "rope_freqs.weight", m->rope_freqs, h->head_dim / 2)))
        goto done;
    for (int il = 0; il < h->n_layer; il++) {
        const lm_layer *L = &m->layers[il];
        char n[18][64];
        const char *fmt[] = {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                             "attn_output.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias",
                             "attn_q_norm.weight", "attn_k_norm.weight", "ffn_norm.weight", "ffn_gate.weight",
                             "ffn_up.weight", "ffn_down.weight"};
        for (int i = 0; i < 14; i++) snprintf(n[i], sizeof n[i], "blk.%d.%s", il, fmt[i]);
        int64_t qd = (int64_t)h->n_head * h->head_dim, kvd = (int64_t)h->n_head_kv * h->head_dim;
        if ((st = add_vec(&c, n[0], L->attn_norm, h->n_embd)) ||
            (st = add_mat(&c, n[1], &L->wq, (uint32_t)to, llama ? h->n_head : 0)) ||
            (st = add_mat(&c, n[2], &L->wk, (uint32_t)to, llama ? h->n_head_kv : 0)) ||
            (st = add_mat(&c, n[3], &L->wv, (uint32_t)to, 0)) || (st = add_mat(&c, n[4], &L->wo, (uint32_t)to, 0)) ||
            (st = add_vec(&c, n[5], L->bq, qd)) || (st = add_vec(&c, n[6], L->bk, kvd)) ||
            (st = add_vec(&c, n[7], L->bv, kvd)) || (st = add_vec(&c, n[8], L->q_norm, h->head_dim)) ||
            (st = add_vec(&c, n[9], L->k_norm, h->head_dim)) || (st = add_vec(&c, n[10], L->ffn_norm, h->n_embd)) ||
            (st = add_mat(&c, n[11], &L->w_gate, (uint32_t)to, 0)) || (st = add_mat(&c, n[12], &L->w_up, (uint32_t)to, 0)) ||
            (st = add_mat(&c, n[13], &L->w_down, (uint32_t)to, 0)))
            goto done;
    }
    st = gguf_writer_write(c.w, out_path, err, errlen);
done:
    gguf_writer_free(c.w);
    for (size_t i = 0; i < c.n_bufs; i++) laya_free(c.bufs[i]);
    laya_free(c.bufs);
    laya_free(c.row);
    laya_model_free(m);
    return st;
}
