/* kv.c — contexts and their KV caches: creation, the RoPE table, and the per-sequence bookkeeping
 * (truncate, fork, fork_from) with the shared positions a fork makes instead of copying (context.h). The
 * forward pass that fills and reads the caches is forward.c. */
#include <math.h>

#include "engine/context.h"

int32_t kv_seq_shared(const laya_context *c, int32_t seq, int32_t *base) {
    *base = c->base[seq];
    return c->base[seq] >= 0 ? c->base_len[seq] : 0;
}

laya_context_params laya_context_default_params(void) {
    laya_context_params p = {.abi = LAYA_ABI_VERSION, .n_seq = 1, .max_kv_size = 512, .max_batch = 512, .max_logits = 8,
                             .kv_type = LAYA_KV_F32};
    return p;
}

const char *laya_context_error(const laya_context *c) { return c ? c->err : "context is NULL"; }

void laya_context_free(laya_context *c) {
    if (!c) return;
    lp_free(c->pool);
    void *bufs[] = {c->seq_len, c->base, c->base_len, c->kcache, c->vcache, c->rope_cs, c->x, c->xn, c->q, c->k, c->v, c->att,
                    c->gate, c->up, c->act, c->act_job, c->scores, c->pos, c->logit_row, c->hid_row, c->out_idx, c->hid, c->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) laya_free(bufs[i]);
    laya_free(c);
}

/* rows × cols floats, 64-byte aligned, overflow-checked. */
static float *alloc_f32(uint64_t rows, uint64_t cols) {
    uint64_t n;
    if (ck_mul(rows, cols, &n) || ck_mul(n, sizeof(float), &n) || n > SIZE_MAX) return NULL;
    return laya_aligned_alloc(64, (size_t)n);
}

laya_status laya_context_create(const laya_model *m, laya_context_params p, laya_context **out, char *err,
                                size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!m) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "model is NULL");
    if (m->vocab_only) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "model was loaded vocab-only");
    laya_status st_abi = laya_check_abi(p.abi, "context", err, errlen);
    if (st_abi) return st_abi;
    if (p.n_seq < 1 || p.n_seq > 4096 || p.max_kv_size < 1 || p.max_kv_size > (1 << 20) || p.max_batch < 1 ||
        p.max_batch > (1 << 16) || p.max_logits < 1 || p.max_logits > p.max_batch ||
        (p.kv_type != LAYA_KV_F32 && p.kv_type != LAYA_KV_F16))
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG,
                        "context params out of range (n_seq %d, max_kv_size %d, max_batch %d, max_logits %d, kv_type %d)",
                        p.n_seq, p.max_kv_size, p.max_batch, p.max_logits, p.kv_type);
    const lm_hparams *h = &m->hp;
    laya_context *c = laya_calloc(1, sizeof *c);
    if (!c) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    c->m = m;
    c->p = p;
    c->kv_dim = h->n_head_kv * h->head_dim;
    int64_t qd = (int64_t)h->n_head * h->head_dim;
    int64_t kmax = LAYA_MAX(LAYA_MAX(h->n_embd, h->n_ff), qd);
    c->kv_cap = (p.max_kv_size + 15) / 16 * 16;
    uint64_t B = (uint64_t)p.max_batch, cache_rows = (uint64_t)h->n_layer * p.n_seq * c->kv_cap;
    c->act_row_cap = (size_t)kmax * sizeof(float); /* F32 activations are the widest format */
    laya_status st = lp_create(m->n_threads, &c->pool);
    if (st) goto oom;
    c->seq_len = laya_calloc((size_t)p.n_seq, sizeof(int32_t));
    c->base = laya_calloc((size_t)p.n_seq, sizeof(int32_t));
    c->base_len = laya_calloc((size_t)p.n_seq, sizeof(int32_t));
    c->kv16 = p.kv_type == LAYA_KV_F16;
    /* (alloc_f32 sizes in floats: an F16 cache takes half as many; kv_dim is even, head_dim being so) */
    c->kcache = alloc_f32(cache_rows, (uint64_t)c->kv_dim / (c->kv16 ? 2 : 1));
    c->vcache = alloc_f32(cache_rows, (uint64_t)c->kv_dim / (c->kv16 ? 2 : 1));
    c->rope_cs = alloc_f32((uint64_t)p.max_kv_size, (uint64_t)h->head_dim);
    c->x = alloc_f32(B, h->n_embd);
    c->xn = alloc_f32(B, h->n_embd);
    c->q = alloc_f32(B, (uint64_t)qd);
    c->k = alloc_f32(B, c->kv_dim);
    c->v = alloc_f32(B, c->kv_dim);
    c->att = alloc_f32(B, (uint64_t)qd);
    c->gate = alloc_f32(B, h->n_ff);
    c->up = alloc_f32(B, h->n_ff);
    c->act = alloc_f32(LAYA_MAX(B, (uint64_t)lp_n_threads(c->pool) * MM_OWN_B), (uint64_t)kmax);
    fw_split_set(c, 1.0 / lp_n_threads(c->pool));
    c->act_job = laya_aligned_alloc(64, (size_t)lp_n_threads(c->pool) * 64);
    if (c->act_job) memset(c->act_job, 0, (size_t)lp_n_threads(c->pool) * 64);
    c->scores = alloc_f32((uint64_t)lp_n_threads(c->pool) * (uint64_t)(h->n_head / h->n_head_kv),
                          (uint64_t)p.max_kv_size);
    c->pos = laya_calloc(B, sizeof(int32_t));
    c->logit_row = laya_calloc(B, sizeof(int32_t));
    c->hid_row = laya_calloc(B, sizeof(int32_t));
    c->out_idx = laya_calloc((size_t)p.max_logits, sizeof(int32_t));
    c->hid = alloc_f32((uint64_t)p.max_logits, (uint64_t)h->n_embd);
    c->logits = alloc_f32((uint64_t)p.max_logits, (uint64_t)h->n_vocab);
    if (!c->seq_len || !c->base || !c->base_len || !c->kcache || !c->vcache || !c->rope_cs || !c->x || !c->xn || !c->q || !c->k || !c->v ||
        !c->att || !c->gate || !c->up || !c->act || !c->act_job || !c->scores || !c->pos || !c->logit_row || !c->hid_row ||
        !c->out_idx || !c->hid || !c->logits)
        goto oom;
    for (int s = 0; s < p.n_seq; s++) c->base[s] = -1;
    /* RoPE table. Frequencies in float32 as transformers computes them; angles in double. */
    int half = h->head_dim / 2;
    for (int j = 0; j < half; j++) {
        float inv = (float)(1.0 / pow((double)h->rope_theta, (double)(2 * j) / (double)h->head_dim));
        if (m->rope_freqs) inv = inv / m->rope_freqs[j];
        for (int t = 0; t < p.max_kv_size; t++) {
            float ang = (float)t * inv;
            c->rope_cs[((size_t)t * half + j) * 2 + 0] = cosf(ang);
            c->rope_cs[((size_t)t * half + j) * 2 + 1] = sinf(ang);
        }
    }
    *out = c;
    return LAYA_OK;
oom:
    laya_context_free(c);
    return laya_err(err, errlen, LAYA_ERR_NOMEM,
                    "out of memory creating a context (n_seq %d, max_kv_size %d, max_batch %d)", p.n_seq,
                    p.max_kv_size, p.max_batch);
}

int32_t laya_seq_len(const laya_context *c, int32_t seq) {
    if (!c || seq < 0 || seq >= c->p.n_seq) return -1;
    return c->seq_len[seq];
}

laya_status laya_seq_truncate(laya_context *c, int32_t seq, int32_t n_pos) {
    if (!c) return LAYA_ERR_INVALID_ARG;
    if (seq < 0 || seq >= c->p.n_seq || n_pos < 0 || n_pos > c->seq_len[seq])
        return laya_err(c->err, sizeof c->err, LAYA_ERR_INVALID_ARG, "truncate seq %d to %d: out of range", seq, n_pos);
    c->seq_len[seq] = n_pos;
    return LAYA_OK;
}

/* Positions [p0, p1) of sequence `from`'s storage into sequence `to`'s. */
static void kv_copy(laya_context *c, int32_t from, int32_t to, int32_t p0, int32_t p1) {
    if (from == to || p1 <= p0) return;
    const int hd = c->m->hp.head_dim;
    for (int l = 0; l < c->m->hp.n_layer; l++)
        for (int g = 0; g < c->m->hp.n_head_kv; g++) {
            size_t so = kv_head_off(c, l, from, g), dof = kv_head_off(c, l, to, g), es = kv_es(c);
            memcpy(kv_el(c, c->vcache, dof + (size_t)p0 * hd), kv_el(c, c->vcache, so + (size_t)p0 * hd),
                   (size_t)(p1 - p0) * hd * es);
            /* key blocks: whole blocks in one copy, the partial ones at either end dimension by dimension */
            for (int32_t b0 = p0 / 16 * 16; b0 < p1; b0 += 16) {
                int32_t q0 = LAYA_MAX(p0, b0), q1 = LAYA_MIN(p1, b0 + 16);
                const char *ks = kv_el(c, c->kcache, so + (size_t)b0 * hd);
                char *kd = kv_el(c, c->kcache, dof + (size_t)b0 * hd);
                if (q0 == b0 && q1 == b0 + 16) memcpy(kd, ks, (size_t)16 * hd * es);
                else
                    for (int j = 0; j < hd; j++)
                        memcpy(kd + (j * 16 + (q0 - b0)) * es, ks + (j * 16 + (q0 - b0)) * es, (size_t)(q1 - q0) * es);
            }
        }
}

/* Sequence src's positions [p0, p1), from wherever they are held, into dst's storage. */
static void kv_copy_seq(laya_context *c, int32_t src, int32_t dst, int32_t p0, int32_t p1) {
    int32_t split = c->base[src] >= 0 ? LAYA_MAX(p0, LAYA_MIN(p1, c->base_len[src])) : p0;
    if (split > p0) kv_copy(c, c->base[src], dst, p0, split);
    kv_copy(c, src, dst, split, p1);
}

/* Sequence z stops reading another's storage from position p on (its shared positions become the
 * KN_QK_SPLIT-aligned [0, p)): the positions it holds past that are copied into its own storage. */
static void kv_unshare(laya_context *c, int32_t z, int32_t p) {
    if (c->base[z] < 0 || c->base_len[z] <= p) return;
    int32_t keep = p / KN_QK_SPLIT * KN_QK_SPLIT;
    kv_copy(c, c->base[z], z, keep, LAYA_MIN(c->base_len[z], c->seq_len[z]));
    c->base_len[z] = keep;
    if (!keep) c->base[z] = -1;
}

/* The sequences that read x's storage from position p on get their own copy of it. */
static void unshare_readers(laya_context *c, int32_t x, int32_t p) {
    for (int32_t z = 0; z < c->p.n_seq; z++)
        if (z != x && c->base[z] == x) kv_unshare(c, z, p);
}

void kv_before_write(laya_context *c, int32_t x, int32_t p) {
    unshare_readers(c, x, p);
    kv_unshare(c, x, p);
}

/* dst takes src's positions [from, n_pos) (it holds [0, from) already: laya_seq_fork_from). It shares the
 * KN_QK_SPLIT-aligned part of them that lies in one storage, src's own or the one src reads, and copies
 * the rest. */
static void fork_range(laya_context *c, int32_t src, int32_t dst, int32_t from, int32_t n_pos) {
    if (src != dst) {
        int32_t r = c->base[src] >= 0 ? c->base[src] : src;
        int32_t rl = c->base[src] >= 0 ? LAYA_MIN(c->base_len[src], n_pos) : n_pos;
        int32_t a = r == dst ? 0 : rl / KN_QK_SPLIT * KN_QK_SPLIT;
        if (a > 0) {
            unshare_readers(c, dst, 0); /* one level: dst will read r's storage */
            /* what dst holds in [a, from) must then be in its own storage */
            if (c->base[dst] >= 0 && c->base_len[dst] > a && from > a)
                kv_copy(c, c->base[dst], dst, a, LAYA_MIN(from, c->base_len[dst]));
            c->base[dst] = r;
            c->base_len[dst] = a;
            kv_copy_seq(c, src, dst, LAYA_MAX(from, a), n_pos);
        } else {
            kv_before_write(c, dst, from);
            kv_copy_seq(c, src, dst, from, n_pos);
        }
    }
    c->seq_len[dst] = n_pos;
}

laya_status laya_seq_fork(laya_context *c, int32_t src, int32_t dst, int32_t n_pos) {
    if (!c) return LAYA_ERR_INVALID_ARG;
    if (src < 0 || src >= c->p.n_seq || dst < 0 || dst >= c->p.n_seq || n_pos < 0 || n_pos > c->seq_len[src])
        return laya_err(c->err, sizeof c->err, LAYA_ERR_INVALID_ARG, "fork %d -> %d at %d: out of range", src, dst,
                        n_pos);
    fork_range(c, src, dst, 0, n_pos);
    return LAYA_OK;
}

laya_status laya_seq_fork_from(laya_context *c, int32_t src, int32_t dst, int32_t from, int32_t n_pos) {
    if (!c) return LAYA_ERR_INVALID_ARG;
    if (src < 0 || src >= c->p.n_seq || dst < 0 || dst >= c->p.n_seq || n_pos < 0 || n_pos > c->seq_len[src] ||
        from < 0 || from > n_pos || from > c->seq_len[dst])
        return laya_err(c->err, sizeof c->err, LAYA_ERR_INVALID_ARG, "fork %d -> %d at %d..%d: out of range", src,
                        dst, from, n_pos);
    fork_range(c, src, dst, from, n_pos);
    return LAYA_OK;
}
