/* forward.c — the forward pass of Llama/Qwen2/Qwen3: a straight-line decode over a batch of tokens from
 * several sequences, with its matmul passes split by rows over the pool and its attention over KV heads.
 * laya_decode never allocates. Contexts and the KV-cache bookkeeping (fork, truncate) are kv.c. */
#include <math.h>
#include <stdio.h>

#include "engine/context.h"
#include "engine/pack.h" /* lm_pack_hold */

const float *laya_get_logits(const laya_context *c, int32_t i) {
    if (!c || i < 0 || i >= c->last_n || c->logit_row[i] < 0) return NULL;
    return c->logits + (size_t)c->logit_row[i] * c->m->hp.n_vocab;
}

/* Asks for every line of n floats at p: for rows another core has just written, whose lines a plain loop's
 * loads would otherwise wait for a few at a time (mm_worker, att_worker, residual). */
static inline void prefetch_floats(const float *p, size_t n) {
    for (size_t e = 0; e < n; e += 16) __builtin_prefetch(p + e);
}

/* The weight type and data the matmuls see: the packed copy's when the loader made one. */
static inline uint32_t mm_type(int pk, const lm_mat *w) { return pk && w->pdata ? w->ptype : w->type; }
static inline const void *mm_data(int pk, const lm_mat *w) { return pk && w->pdata ? w->pdata : w->data; }
/* Whether the model's packed copy is there, once per decode or subset: every matrix of the call then
 * takes the same layout (model.h) */
static inline int packed_now(const laya_model *m) { return atomic_load_explicit(&m->packed_ready, memory_order_acquire); }

typedef struct subset_job {
    const laya_context *c;
    const laya_token *ids;
    int32_t n;
    const void *act; /* the hidden row in the output matrix's activation format (or F32 for MLX) */
    float *out;
    int pk;          /* packed_now */
} subset_job;

/* Chunks of ids; each id is a one-row product through the same kernel as the full output layer, so the
 * values equal the full logits up to summation order (and in practice bit for bit). */
static void subset_worker(void *arg, int chunk, int n_chunks, int tid) {
    (void)tid;
    subset_job *j = arg;
    const lm_mat *w = &j->c->m->output;
    const kn_ops *kn = j->c->m->kn;
    int32_t k0 = (int32_t)((int64_t)j->n * chunk / n_chunks);
    int32_t k1 = (int32_t)((int64_t)j->n * (chunk + 1) / n_chunks);
    const void *pd = j->pk ? w->pdata : NULL;
    size_t rb = w->mlx_bits ? 0 : kn_act_row_bytes(mm_type(j->pk, w), w->cols);
    size_t pb = pd ? kn_pack_panel_bytes(w->ptype, w->cols) : 0;
    for (int32_t k = k0; k < k1; k++) {
        size_t r = (size_t)j->ids[k];
        /* The matrix is passed from row r on, as a one-row matrix, so the result lands in out[k]. */
        if (w->mlx_bits) {
            size_t sb = r * (size_t)(w->cols / w->mlx_group) * (w->sb_type == QT_F32 ? 4 : 2);
            kn->matmul_mlx(w->mlx_bits, w->mlx_group, (const uint32_t *)((const char *)w->data + r * w->row_bytes),
                           (const char *)w->scales + sb, (const char *)w->biases + sb, w->sb_type, j->act,
                           (size_t)w->cols, 1, w->cols, 0, 1, j->out + k, 1);
        } else if (pd) {
            /* the row's panel as a 16-row matrix, only its lane computed out: the bits of the full layer */
            float lanes[16];
            kn->matmul(w->ptype, (const char *)pd + (r / 16) * pb, 0, j->act, rb, 1, w->cols, (int64_t)(r % 16),
                       (int64_t)(r % 16) + 1, lanes, 16);
            j->out[k] = lanes[r % 16];
        } else {
            kn->matmul(w->type, (const char *)w->data + r * w->row_bytes, w->row_bytes, j->act, rb, 1, w->cols, 0, 1,
                       j->out + k, 1);
        }
    }
}

laya_status laya_get_logits_subset(laya_context *c, int32_t i, const laya_token *ids, int32_t n, float *out) {
    if (!c) return LAYA_ERR_INVALID_ARG;
    if (i < 0 || i >= c->last_n || c->hid_row[i] < 0)
        return laya_err(c->err, sizeof c->err, LAYA_ERR_INVALID_ARG,
                        "logits subset: row %d of the last batch did not ask for logits or its hidden state", i);
    if (n < 0 || (n > 0 && (!ids || !out)))
        return laya_err(c->err, sizeof c->err, LAYA_ERR_INVALID_ARG, "logits subset: n %d, ids or out NULL", n);
    const lm_mat *w = &c->m->output;
    for (int32_t k = 0; k < n; k++)
        if (ids[k] < 0 || ids[k] >= w->rows)
            return laya_err(c->err, sizeof c->err, LAYA_ERR_INVALID_ARG,
                            "logits subset: id %d (index %d) out of range [0, %d)", ids[k], k, (int)w->rows);
    if (n == 0) return LAYA_OK;
    const int pk = packed_now(c->m);
    const float *hrow = c->hid + (size_t)c->hid_row[i] * c->m->hp.n_embd;
    const void *act = hrow;
    if (!w->mlx_bits) { /* act is free between decodes */
        c->m->kn->quantize_act(mm_type(pk, w), hrow, c->act, w->cols);
        act = c->act;
    }
    subset_job j = {.c = c, .ids = ids, .n = n, .act = act, .out = out, .pk = pk};
    /* A one-row product costs about a row's bytes of memory traffic: below a few hundred ids the pool's
     * wake-up costs more than it saves. */
    int n_chunks = n < 256 ? 1 : (int)LAYA_MIN((int64_t)lp_n_threads(c->pool) * 4, n / 64);
    lp_run(c->pool, subset_worker, &j, n_chunks);
    return LAYA_OK;
}

/* ---- parallel pieces ------------------------------------------------------------------------------ */

/* Up to three matrices with the same input (q/k/v, gate/up) in one pool job: fewer synchronisations. */
typedef struct mm_job {
    const kn_ops *kn;
    int n;
    const lm_mat *w[3];
    float *y[3];
    size_t ldy[3];
    void *act;         /* quantized activations (GGUF types) */
    size_t act_rb;
    const float *x;    /* F32 activations: what MLX weights take, and what the other types quantize */
    int B;
    /* The GGUF types' activation rows (act_rb != 0) are quantized inside the job (mm_quantize): each
     * thread claims rows (qnext) before its first chunk, and every chunk waits until all are done (qdone). */
    atomic_int qnext, qdone;
    /* B <= MM_OWN_B: each thread quantizes every row itself, into act + tid * own_stride (act_job says
     * whether it has for this pass, the pass number being pass) */
    size_t own_stride;
    uint64_t *act_job, pass;
    int swiglu;        /* y[0] = silu(y[0]) * y[1] on each chunk's rows once both are computed */
    int pk;            /* the packed copies are used (packed_now) */
    uint32_t stream;   /* KN_STREAM where the packed set is larger than KN_STREAM_BYTES, else 0 */
    int falling;       /* chunks of falling sizes, several a thread (mm_edge) */
    const double *cum; /* or one chunk a thread, thread t's rows from cum[t] to cum[t + 1] of each matrix
                        * (fractions; mm_split), else mm_edge */
} mm_job;

/* First 16-row block of chunk c of n over nblk blocks. Once the weights are packed: one chunk per thread,
 * of equal size, so that each thread streams one contiguous range of every matrix. Chunks of falling
 * sizes (falling), four per thread, claimed as threads got free so that the last were small, are kept
 * for the decodes that run while the weights are packed (matmul_multi); otherwise they cost more than
 * the imbalance they saved: every claim and completion moves the pool's shared lines between the
 * cores, and every chunk starts a new stream whose first lines nothing fetched ahead, while the
 * prefetchers ran on into the next chunk, which the other core reads. A thread
 * that starts late still finds its chunk taken by one that is free (lp_run's claiming). The results do
 * not change: a matmul's outputs do not depend on the row range (kn_ops.matmul). */
static inline int64_t mm_edge(int64_t nblk, int c, int n, int falling) {
    if (!falling) return nblk * c / n;
    int64_t left = (int64_t)(n - c) * (n - c), all = (int64_t)n * n; /* chunk c: 2(n - c) - 1 parts of n * n */
    return nblk - (nblk * left + all / 2) / all;
}
/* Activation row b of the job into act (every matrix of the job has the first one's format). */
static void mm_quantize_row(const mm_job *j, int b, void *act) {
    const int64_t K = j->w[0]->cols;
    j->kn->quantize_act(mm_type(j->pk, j->w[0]), j->x + (size_t)b * K, (char *)act + (size_t)b * j->act_rb, K);
}

/* The job's activation rows into act, shared by the threads that reach here: rows are claimed one at a
 * time, so a thread that arrives late (or never) leaves them to the others. */
static void mm_quantize(mm_job *j) {
    if (atomic_load_explicit(&j->qdone, memory_order_acquire) >= j->B) return;
    for (int b; (b = atomic_fetch_add_explicit(&j->qnext, 1, memory_order_relaxed)) < j->B;) {
        mm_quantize_row(j, b, j->act);
        atomic_fetch_add_explicit(&j->qdone, 1, memory_order_release);
    }
    lp_wait_at_least(&j->qdone, j->B);
}

/* First 16-row block of the job's chunk c: by the learned shares (cum) or mm_edge. */
static inline int64_t mm_first(const mm_job *j, int64_t nblk, int c, int n) {
    return j->cum ? (int64_t)(nblk * j->cum[c] + 0.5) : mm_edge(nblk, c, n, j->falling);
}

static void mm_worker(void *arg, int chunk, int n_chunks, int tid) {
    mm_job *j = arg;
    void *act = j->act;
    if (j->act_rb && j->own_stride) {
        act = (char *)j->act + (size_t)tid * j->own_stride;
        if (j->act_job[8 * tid] != j->pass) { /* once a pass, however many of its chunks this thread runs */
            /* Every line of the rows asked for first: about half of them are in the other core's cache
             * (written by its chunk of the last pass), and the quantizer's loads would otherwise wait for
             * them a few at a time. */
            prefetch_floats(j->x, (size_t)j->B * (size_t)j->w[0]->cols);
            for (int b = 0; b < j->B; b++) mm_quantize_row(j, b, act);
            j->act_job[8 * tid] = j->pass;
        }
    } else if (j->act_rb) {
        mm_quantize(j);
    }
    for (int i = 0; i < j->n; i++) {
        int64_t rows = j->w[i]->rows;
        /* Ranges in whole 16-row blocks keep them aligned for the kernels' row tiling. */
        int64_t nblk = (rows + 15) / 16;
        int64_t r0 = mm_first(j, nblk, chunk, n_chunks) * 16;
        int64_t r1 = LAYA_MIN(rows, mm_first(j, nblk, chunk + 1, n_chunks) * 16);
        if (r0 >= r1) continue;
        const lm_mat *w = j->w[i];
        if (w->mlx_bits)
            j->kn->matmul_mlx(w->mlx_bits, w->mlx_group, w->data, w->scales, w->biases, w->sb_type, j->x,
                              (size_t)w->cols, j->B, w->cols, r0, r1, j->y[i], j->ldy[i]);
        else /* (a packed matrix's kernel ignores row_bytes) */
            j->kn->matmul(mm_type(j->pk, w) | (j->stream && w->pdata ? j->stream : 0), mm_data(j->pk, w), w->row_bytes, act,
                          j->act_rb, j->B, w->cols, r0, r1, j->y[i], j->ldy[i]);
        /* The FFN activation, fused here so that it runs on every thread while the rows are in cache. */
        if (j->swiglu && i == 1)
            for (int b = 0; b < j->B; b++) {
                float *g = j->y[0] + (size_t)b * j->ldy[0];
                const float *u = j->y[1] + (size_t)b * j->ldy[1];
                j->kn->silu_mul(g + r0, u + r0, r1 - r0);
            }
    }
}

typedef struct att_job att_job;
static void att_worker(void *arg, int chunk, int n_chunks, int tid);

/* q/k/v and attention in one pool job (qkv_att): chunk c computes the q, k and v rows of its KV heads
 * and then their attention, so no thread waits for the others between the two, and each reads only the
 * q, k and v rows it wrote. */
typedef struct qkv_att_job {
    mm_job *mm;
    att_job *att;
} qkv_att_job;

static void qkv_att_worker(void *arg, int chunk, int n_chunks, int tid) {
    qkv_att_job *j = arg;
    mm_worker(j->mm, chunk, n_chunks, tid);
    att_worker(j->att, chunk, n_chunks, tid);
}

/* The threads of a pass do not run at one speed: a vCPU of a shared machine gets less of its core for
 * seconds at a time, a phone's or a hybrid laptop's cores differ, and then the others wait for the slow one
 * at the end of every job. So each thread's share of a pass's rows follows its measured speed: after a
 * timed pass (lp_last_busy: every fourth job) in which every thread ran its one chunk, each share moves a
 * twentieth of the way toward its thread's part of the summed speeds (share / ns, ns from the job's
 * publication, so that a worker's late start counts against it and the shares settle where the threads end
 * together), within 0.6-1.4x an even share. A share table per kind of pass (split_kind: how many matrices,
 * one row, a decode step's few or a prompt's), since a short job's fixed costs (the wake-up, each thread's
 * own quantization) weigh more than a long one's; a table per exact shape was no faster. The rows are whole
 * 16-row blocks either way, and a matmul's outputs do not depend on its row range, so the results are the
 * same bits. */
_Atomic int fw_split_adapt = 1;

static void mm_split(const lp_pool *pool, double *share, int nt) {
    const int64_t *ns;
    const int *chunks;
    if (!lp_last_busy(pool, &ns, &chunks)) return;
    double speed[SPLIT_MAX_T], sum = 0;
    for (int t = 0; t < nt; t++) {
        if (chunks[t] != 1 || ns[t] <= 0) return;
        sum += speed[t] = share[t] / (double)ns[t];
    }
    double tot = 0;
    for (int t = 0; t < nt; t++) {
        double v = share[t] + 0.05 * (speed[t] / sum - share[t]);
        share[t] = LAYA_MIN(1.4 / nt, LAYA_MAX(0.6 / nt, v));
        tot += share[t];
    }
    for (int t = 0; t < nt; t++) share[t] /= tot;
}

/* The share table of a pass: its number of matrices (1-3: q/k/v, gate/up, or one), and its batch: one
 * token, a decode step of several (B <= MM_OWN_B, each thread quantizing all rows), or a prompt's rows. */
static int split_kind(const mm_job *j, int B) {
    return (LAYA_MIN(j->n, 3) - 1) * 3 + (B > 1) + (B > MM_OWN_B);
}

void fw_split_set(laya_context *c, double caller_share) {
    const int nt = lp_n_threads(c->pool);
    for (int k = 0; k < SPLIT_KINDS; k++)
        for (int t = 0; t < nt && t < SPLIT_MAX_T; t++)
            c->split[k][t] = nt == 1 ? 1.0 : t == 0 ? caller_share : (1.0 - caller_share) / (nt - 1);
}

/* y_i = x · W_iᵀ for the n matrices (all with the same type class and K; n <= 6, in runs of at most
 * three of one activation format). swiglu (n == 2, gate and up): then y_0 = silu(y_0) * y_1. att (q/k/v
 * only): the attention job to run in the same pool job when the matrices make one pass of one chunk a
 * thread (qkv_att_job: the caller has checked that chunk c of both covers the same KV heads). Returns
 * whether it ran att. */
static int matmul_pass(laya_context *c, int n, const lm_mat *const *w, float *const *y, const size_t *ldy,
                       const float *x, int B, int swiglu, att_job *att) {
    const kn_ops *kn = c->m->kn;
    int64_t K = w[0]->cols;
    /* MLX weights take F32 activations; the GGUF types take them converted once for all matrices. */
    const int pk = c->packed;
    size_t rb = w[0]->mlx_bits ? 0 : kn_act_row_bytes(mm_type(pk, w[0]), K);
    mm_job j = {.kn = kn, .n = 0, .act = c->act, .act_rb = rb, .x = x, .B = B, .pk = pk,
                .stream = pk && c->m->packed_bytes > KN_STREAM_BYTES ? KN_STREAM : 0};
    atomic_init(&j.qnext, 0);
    atomic_init(&j.qdone, 0);
    if (B <= MM_OWN_B && lp_n_threads(c->pool) > 1) {
        j.own_stride = (size_t)MM_OWN_B * c->act_row_cap;
        j.act_job = c->act_job;
        j.pass = ++c->n_pass;
    }
    /* mm_edge. While the loader's threads pack the weights (pack_weights) they share the cores with the
     * pool: then four chunks a thread of falling sizes, so that a thread the scheduler holds back leaves
     * its work to the others. With one chunk a thread, such a decode fell behind the packing, and read
     * again from the file what the packing had just released: peak RSS of 0.5B Q8_0 580-878 MiB in
     * `laya bench`, against 580 every time this way. */
    const int packing = !pk && c->m->packed;
    int n_chunks = lp_n_threads(c->pool) * (packing ? 4 : 1);
    j.falling = packing;
    for (int i = 0; i < n; i++) {
        /* A matrix of another activation format (mixed-type files such as Q4_K_M) gets its own pass;
         * the formats all have different row sizes, so the size identifies the format. */
        if (j.n == 3 || (w[i]->mlx_bits ? 0 : kn_act_row_bytes(mm_type(pk, w[i]), K)) != rb) {
            lp_run(c->pool, mm_worker, &j, n_chunks);
            matmul_pass(c, n - i, w + i, y + i, ldy + i, x, B, 0, NULL);
            if (swiglu) /* gate and up in different formats: the activation in a pass of its own */
                for (int b = 0; b < B; b++) {
                    float *g = y[0] + (size_t)b * ldy[0];
                    const float *u = y[1] + (size_t)b * ldy[1];
                    kn->silu_mul(g, u, w[0]->rows);
                }
            return 0;
        }
        j.w[j.n] = w[i];
        j.y[j.n] = y[i];
        j.ldy[j.n] = ldy[i];
        j.n++;
    }
    j.swiglu = swiglu;
    if (att && !packing) {
        qkv_att_job qa = {.mm = &j, .att = att};
        lp_run(c->pool, qkv_att_worker, &qa, n_chunks);
        return 1;
    }
    const int nt = lp_n_threads(c->pool);
    double cum[SPLIT_MAX_T + 1], *share = NULL;
    if (nt > 1 && nt <= SPLIT_MAX_T && !packing && atomic_load_explicit(&fw_split_adapt, memory_order_relaxed)) {
        share = c->split[split_kind(&j, B)];
        cum[0] = 0;
        for (int t = 0; t < nt; t++) cum[t + 1] = cum[t] + share[t];
        cum[nt] = 1.0;
        j.cum = cum;
    }
    lp_run(c->pool, mm_worker, &j, n_chunks);
    if (share) mm_split(c->pool, share, nt);
    return 0;
}

/* While the loader packs the weights (pack_weights), a matrix whose first panels are in the packed copy:
 * those panels as a matrix of its P16 type, and the rows after them (if any) from the file, each view
 * with its part of y. Returns how many views (0: the matrix is read from the file as it is). So a decode
 * that runs during the packing never reads again the file's pages that the packing has released, which
 * would map them back in beside the copy: peak RSS of the 0.5B Q8_0 file in `laya bench`, whose first
 * token runs during the packing, was 635-650 MiB in 2 of 18 runs (577.6-578.0 in the others) before. The
 * same bits: a packed matrix gives those of its source (kernels.h), and outputs do not depend on the
 * row range. */
static int pack_views(const lm_mat *w, float *y, lm_mat *v, float **vy) {
    const int64_t done = w->pk_dst ? atomic_load_explicit(&w->pk_done, memory_order_acquire) : 0;
    const int64_t s = LAYA_MIN(w->rows, done * 16);
    if (s <= 0) return 0;
    v[0] = (lm_mat){.data = w->pk_dst, .type = w->ptype, .rows = s, .cols = w->cols, .row_bytes = w->row_bytes};
    vy[0] = y;
    if (s == w->rows) return 1;
    v[1] = (lm_mat){.data = (const char *)w->data + (size_t)s * w->row_bytes, .type = w->type, .rows = w->rows - s,
                    .cols = w->cols, .row_bytes = w->row_bytes};
    vy[1] = y + s;
    return 2;
}

/* matmul_pass, with the views of pack_views while the loader packs (n <= 3). */
static int matmul_multi(laya_context *c, int n, const lm_mat *const *w, float *const *y, const size_t *ldy,
                        const float *x, int B, int swiglu, att_job *att) {
    if (c->packed || !c->m->packed) return matmul_pass(c, n, w, y, ldy, x, B, swiglu, att);
    lm_mat v[6];
    const lm_mat *vw[6] = {0};
    float *vy[6] = {0};
    size_t vl[6] = {0};
    int nv = 0, split = 0;
    for (int i = 0; i < n; i++) {
        int k = pack_views(w[i], y[i], v + nv, vy + nv);
        split |= k > 1;
        if (!k) vw[nv] = w[i], vy[nv] = y[i], vl[nv++] = ldy[i];
        for (int t = 0; t < k; t++) vw[nv] = &v[nv], vl[nv++] = ldy[i];
    }
    /* split gate or up rows: the activation once all of both are there */
    matmul_pass(c, nv, vw, vy, vl, x, B, swiglu && !split, NULL);
    if (swiglu && split)
        for (int b = 0; b < B; b++) c->m->kn->silu_mul(y[0] + (size_t)b * ldy[0], y[1] + (size_t)b * ldy[1], w[0]->rows);
    return 0;
}

static void matmul1(laya_context *c, const lm_mat *w, float *y, size_t ldy, const float *x, int B) {
    const lm_mat *ws[1] = {w};
    float *ys[1] = {y};
    size_t ls[1] = {ldy};
    matmul_multi(c, 1, ws, ys, ls, x, B, 0, NULL);
}

struct att_job {
    laya_context *c;
    const lm_layer *L;
    int layer, n;
    const int32_t *seq;
    int heads_per_task;
    int fused; /* each task first prepares its token's KV head (qkv_head): no token reads another's */
};

static void rms_norm(float *y, const float *x, const float *w, int n, float eps);
static void rope(float *v, const float *cs, int hd, int neox);

/* Token i's KV head g after the q/k/v projections: biases, q/k norms and RoPE on the group's query heads
 * and on the key head, then the key and value into the cache at the token's position. */
/* Token i's query heads of KV group g (n_head / n_head_kv of them, consecutive), key and value rows. */
static void qkv_rows(const laya_context *c, int i, int g, float **q, float **k, float **v) {
    const lm_hparams *h = &c->m->hp;
    const int hd = h->head_dim, group = h->n_head / h->n_head_kv;
    *q = c->q + ((size_t)i * h->n_head + (size_t)g * group) * hd;
    *k = c->k + (size_t)i * c->kv_dim + (size_t)g * hd;
    *v = c->v + (size_t)i * c->kv_dim + (size_t)g * hd;
}

static void qkv_head(laya_context *c, const lm_layer *L, int il, int i, int seq, int g) {
    const lm_hparams *h = &c->m->hp;
    const int hd = h->head_dim, group = h->n_head / h->n_head_kv;
    float *q, *k, *v;
    qkv_rows(c, i, g, &q, &k, &v);
    if (L->bq) {
        const float *bq = L->bq + (size_t)g * group * hd, *bk = L->bk + (size_t)g * hd, *bv = L->bv + (size_t)g * hd;
        for (int e = 0; e < group * hd; e++) q[e] += bq[e];
        for (int e = 0; e < hd; e++) k[e] += bk[e];
        for (int e = 0; e < hd; e++) v[e] += bv[e];
    }
    const float *cs = c->rope_cs + (size_t)c->pos[i] * hd;
    for (int hh = 0; hh < group; hh++) {
        if (L->q_norm) rms_norm(q + hh * hd, q + hh * hd, L->q_norm, hd, h->norm_eps);
        rope(q + hh * hd, cs, hd, h->rope_neox);
    }
    if (L->k_norm) rms_norm(k, k, L->k_norm, hd, h->norm_eps);
    rope(k, cs, hd, h->rope_neox);
    size_t off = kv_head_off(c, il, seq, g), kt0 = off + (size_t)(c->pos[i] / 16 * 16) * hd + c->pos[i] % 16;
    if (c->kv16) {
        void (*to_f16)(const float *, uint16_t *, int64_t) = c->m->kn->to_f16;
        uint16_t kh[256], *kt = (uint16_t *)kv_el(c, c->kcache, kt0);
        for (int e0 = 0; e0 < hd; e0 += 256) {
            int ne = LAYA_MIN(256, hd - e0);
            to_f16(k + e0, kh, ne);
            for (int e = 0; e < ne; e++) kt[(e0 + e) * 16] = kh[e];
        }
        to_f16(v, (uint16_t *)kv_el(c, c->vcache, off + (size_t)c->pos[i] * hd), hd);
    } else {
        float *kt = (float *)kv_el(c, c->kcache, kt0);
        for (int e = 0; e < hd; e++) kt[e * 16] = k[e];
        memcpy(kv_el(c, c->vcache, off + (size_t)c->pos[i] * hd), v, (size_t)hd * sizeof(float));
    }
}

/* A task is one batch token, one KV head and a slice of the query heads that share it (all of them unless
 * there are too few tasks for the threads). The slice's scores against every cached key are one F32 matrix
 * product (the keys are the weight rows, the query heads the activation rows), so each key is read once
 * for all the heads of the slice; the values are then summed per head, each value row read once. */
#define ATT_PF_MIN_ONE 256 /* positions from which a lone token's attention task asks for its keys and values up front */

static void att_worker(void *arg, int chunk, int n_chunks, int tid) {
    att_job *j = arg;
    laya_context *c = j->c;
    const lm_hparams *h = &c->m->hp;
    const kn_ops *kn = c->m->kn;
    const int hd = h->head_dim, group = h->n_head / h->n_head_kv, hs = j->heads_per_task;
    const int slices = (group + hs - 1) / hs;
    const size_t mkv = (size_t)c->p.max_kv_size;
    int64_t tasks = (int64_t)j->n * h->n_head_kv * slices;
    int64_t t0 = tasks * chunk / n_chunks, t1 = tasks * (chunk + 1) / n_chunks;
    float *sc = c->scores + (size_t)tid * group * mkv; /* (hs, max_kv) */
    const float scale = 1.0f / sqrtf((float)hd);
    const size_t kts = (size_t)16 * hd; /* elements per block of 16 keys */
    for (int64_t t = t0; t < t1; t++) {
        /* the batch's tokens are the fastest-moving index: a chunk's tasks share a KV head */
        int i = (int)(t % j->n), r = (int)(t / j->n);
        int g = r / slices, h0 = g * group + (r % slices) * hs, nh = LAYA_MIN(hs, (g + 1) * group - h0);
        int s = j->seq[i], npos = c->pos[i] + 1; /* causal: positions 0..pos[i] */
        /* The task prepares its token's KV head (j->fused) only after asking for every line it touches:
         * the token's q, k and v (about half of them written by the other threads' matmul chunks) here,
         * the keys and values below, so that RoPE's loads do not wait on them one at a time. */
        if (j->fused) {
            float *qp, *kp, *vp;
            qkv_rows(c, i, g, &qp, &kp, &vp);
            prefetch_floats(qp, (size_t)group * hd);
            prefetch_floats(kp, (size_t)hd);
            prefetch_floats(vp, (size_t)hd);
        }
        /* positions [0, ns) in the storage of the sequence s shares them with (ns <= pos[i]: kv_before_write),
         * the rest in its own */
        int ns = c->base[s] >= 0 ? c->base_len[s] : 0;
        const float *q = c->q + (size_t)i * h->n_head * hd + (size_t)h0 * hd;
        const char *kb = kv_el(c, c->kcache, kv_head_off(c, j->layer, s, g));
        const char *vb = kv_el(c, c->vcache, kv_head_off(c, j->layer, s, g));
        const char *kb0 = ns ? kv_el(c, c->kcache, kv_head_off(c, j->layer, c->base[s], g)) : kb;
        const char *vb0 = ns ? kv_el(c, c->vcache, kv_head_off(c, j->layer, c->base[s], g)) : vb;
        const size_t es = kv_es(c);
        float *o = c->att + (size_t)i * h->n_head * hd + (size_t)h0 * hd;
        float mx[16], mx0[16];
        /* The task's keys and values are sequential streams that are often out of cache (several
         * sequences' caches plus the weights pass through L3 every step): asking for all their lines at
         * once keeps many misses in flight, where the hardware prefetcher ramps up stream by stream. A lone
         * token's task over a short context (below ATT_PF_MIN_ONE) is better off with the hardware
         * prefetchers alone. */
        if (j->n > 1 || npos >= ATT_PF_MIN_ONE) {
            size_t kbytes = (size_t)((npos + 15) / 16) * kts * es, vbytes = (size_t)npos * hd * es;
            size_t k0 = (size_t)ns * hd * es; /* ns is a multiple of 16: the same for keys */
            /* Shared positions that the chunk's previous task read (the same KV head of the same storage:
             * the source sequence itself, or another that shares as many of its positions) are in L2:
             * asking for them again cost more than it saved, 3200 prefetches a task at 400 positions,
             * each waiting for a fill buffer. */
            size_t from = 0;
            if (ns && t > t0 && (t - 1) / j->n == r) {
                int ip = (int)((t - 1) % j->n), sp = j->seq[ip];
                int read = sp == c->base[s] ? c->pos[ip] + 1 : c->base[sp] == c->base[s] ? c->base_len[sp] : 0;
                if (read >= ns) from = k0;
            }
            for (size_t b = from; b < kbytes; b += 64) __builtin_prefetch((b < k0 ? kb0 : kb) + b);
            for (size_t b = from; b < vbytes; b += 64) __builtin_prefetch((b < k0 ? vb0 : vb) + b);
        }
        if (j->fused) qkv_head(c, j->L, j->layer, i, s, g);
        for (int b = 0; b < nh; b++) {
            float *sb = sc + (size_t)b * mkv;
            /* scores (scaled) and their maximum, 16 heads per call; the shared positions in a call of
             * their own (the same bits as one call: KN_QK_SPLIT) */
            if (b % 16 == 0) {
                int hn = LAYA_MIN(16, nh - b);
                const char *kown = kb + (size_t)(ns / 16) * kts * es;
                if (c->kv16) {
                    kn->attn_qk16(q + (size_t)b * hd, (size_t)hd, hn, (const uint16_t *)kown, kts, npos - ns, hd, scale, sb + ns, mkv, mx);
                    if (ns) kn->attn_qk16(q + (size_t)b * hd, (size_t)hd, hn, (const uint16_t *)kb0, kts, ns, hd, scale, sb, mkv, mx0);
                } else {
                    kn->attn_qk(q + (size_t)b * hd, (size_t)hd, hn, (const float *)kown, kts, npos - ns, hd, scale, sb + ns,
                                mkv, mx);
                    if (ns) kn->attn_qk(q + (size_t)b * hd, (size_t)hd, hn, (const float *)kb0, kts, ns, hd, scale, sb, mkv, mx0);
                }
                if (ns)
                    for (int u = 0; u < hn; u++) mx[u] = mx0[u] > mx[u] ? mx0[u] : mx[u];
            }
            float inv = 1.0f / kn->exp_sum(sb, mx[b % 16], sb, npos);
            int p = 0;
            for (; p + 4 <= npos; p += 4) /* four at a time: one vector op (a plain loop stays scalar at -O2) */
                for (int u = 0; u < 4; u++) sb[p + u] *= inv;
            for (; p < npos; p++) sb[p] *= inv;
        }
        if (c->kv16) kn->attn_v16(sc, mkv, nh, (const uint16_t *)vb0, ns, (const uint16_t *)vb, (size_t)hd, npos, hd, o, (size_t)hd);
        else kn->attn_v(sc, mkv, nh, (const float *)vb0, ns, (const float *)vb, (size_t)hd, npos, hd, o, (size_t)hd);
    }
}

/* ---- small row operations (cheap next to the matrix products) ------------------------------------- */

static void rms_norm(float *y, const float *x, const float *w, int n, float eps) {
    /* four partial sums: one chain of dependent double adds cost 4 cycles an element (2 us per row of 512) */
    double s4[4] = {0, 0, 0, 0};
    int i = 0;
    for (; i + 4 <= n; i += 4)
        for (int u = 0; u < 4; u++) s4[u] += (double)x[i + u] * x[i + u];
    for (; i < n; i++) s4[0] += (double)x[i] * x[i];
    double ss = (s4[0] + s4[1]) + (s4[2] + s4[3]);
    float r = (float)(1.0 / sqrt(ss / n + eps));
    /* four elements loaded before any is stored, so that the compiler may make them one vector whatever
     * y overlaps (x, for the q/k norms); a plain loop stays scalar at -O2. The same bits. */
    for (i = 0; i + 4 <= n; i += 4) {
        float a[4], b[4];
        for (int u = 0; u < 4; u++) a[u] = x[i + u], b[u] = w[i + u];
        for (int u = 0; u < 4; u++) y[i + u] = a[u] * r * b[u];
    }
    for (; i < n; i++) y[i] = x[i] * r * w[i];
}

/* Four floats as one vector (GCC/Clang vector extensions: SSE2 on any x86-64, NEON on aarch64), for
 * RoPE, which the compiler leaves scalar. Each lane does the scalar code's multiplies and add or
 * subtract (no fma: C11 mode contracts nothing), so the bits are the same. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
#if defined(__clang__)
#define V4_SHUF2(a, b, i, j, k, l) __builtin_shufflevector(a, b, i, j, k, l)
#else
#define V4_SHUF2(a, b, i, j, k, l) __builtin_shuffle(a, b, (v4i){i, j, k, l})
#endif
#define V4_SHUF(a, i, j, k, l) V4_SHUF2(a, a, i, j, k, l)
static inline v4f v4_load(const float *p) { v4f x; memcpy(&x, p, sizeof x); return x; }
static inline void v4_store(float *p, v4f x) { memcpy(p, &x, sizeof x); }

static void rope(float *v, const float *cs, int hd, int neox) {
    int half = hd / 2, j0 = 0;
    if (neox) { /* pairs (j, j + half), four at a time: cs holds cos, sin of pair j at 2j, 2j + 1 */
        for (; j0 + 4 <= half; j0 += 4) {
            v4f c0 = v4_load(cs + 2 * j0), c1 = v4_load(cs + 2 * j0 + 4);
            v4f c = V4_SHUF2(c0, c1, 0, 2, 4, 6), s = V4_SHUF2(c0, c1, 1, 3, 5, 7);
            v4f x0 = v4_load(v + j0), x1 = v4_load(v + j0 + half);
            v4_store(v + j0, x0 * c - x1 * s);
            v4_store(v + j0 + half, x0 * s + x1 * c);
        }
    } else { /* adjacent pairs (2j, 2j + 1), two at a time */
        for (; j0 + 2 <= half; j0 += 2) {
            v4f cq = v4_load(cs + 2 * j0), x = v4_load(v + 2 * j0);
            v4f c = V4_SHUF(cq, 0, 0, 2, 2), s = V4_SHUF(cq, 1, 1, 3, 3);
            v4f xs = V4_SHUF(x, 1, 0, 3, 2); /* x1 x0 x3 x2 */
            /* lanes 0, 2: x0 * c - x1 * s; lanes 1, 3: x1 * c + x0 * s (the scalar x0 * s + x1 * c) */
            v4f p = x * c, q = xs * s;
            v4_store(v + 2 * j0, p + q * (v4f){-1.0f, 1.0f, -1.0f, 1.0f});
        }
    }
    for (int j = j0; j < half; j++) {
        float c = cs[2 * j], s = cs[2 * j + 1];
        int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
        float x0 = v[a], x1 = v[b];
        v[a] = x0 * c - x1 * s;
        v[b] = x0 * s + x1 * c;
    }
}

/* ---- the forward pass ------------------------------------------------------------------------------ */

static laya_status decode(laya_context *c, laya_batch bt);

/* The residual add after a matrix product, x += xn (an fma by 1: the exact sum), for the batch's n rows.
 * About half of xn was written by the other threads' chunks: for a decode step's few rows (as many as
 * mm_worker's own quantization takes, MM_OWN_B) all its lines are asked for first, which keeps those
 * transfers in flight together, where the add's loads met them a few at a time; a prompt's rows stream
 * through the add as they are. */
static void residual(laya_context *c, int n) {
    const size_t e = (size_t)n * (size_t)c->m->hp.n_embd;
    if (n <= MM_OWN_B) prefetch_floats(c->xn, e);
    c->m->kn->axpy_f32(c->x, 1.0f, c->xn, (int64_t)e);
}

/* A decode while the model's weights are being packed holds the packing threads off (lm_pack_hold). */
laya_status laya_decode(laya_context *c, laya_batch bt) {
    if (!c) return LAYA_ERR_INVALID_ARG;
    if ((c->packed = packed_now(c->m)) || !c->m->hold_ok) return decode(c, bt); /* packed, or nothing to pack */
    laya_model *m = (laya_model *)c->m; /* its packing's atomics only */
    lm_pack_hold(m, 1);
    laya_status st = decode(c, bt);
    lm_pack_hold(m, 0);
    return st;
}

/* Checks the batch and gives each token its position and output rows (hid_row, logit_row, out_idx), before
 * any state changes; *n_full: the rows that asked for full logits. */
static laya_status plan_batch(laya_context *c, laya_batch bt, int *n_full_out) {
    const lm_hparams *h = &c->m->hp;
    const int n = bt.n;
    int n_out = 0, n_full = 0;
    for (int i = 0; i < n; i++) {
        int s = bt.seq[i];
        if (s < 0 || s >= c->p.n_seq)
            return laya_err(c->err, sizeof c->err, LAYA_ERR_INVALID_ARG, "token %d: sequence %d out of range", i, s);
        if (bt.tokens[i] < 0 || bt.tokens[i] >= h->n_vocab)
            return laya_err(c->err, sizeof c->err, LAYA_ERR_INVALID_ARG, "token %d: id %d out of range [0, %d)", i,
                            bt.tokens[i], h->n_vocab);
        int p = c->seq_len[s];
        for (int k = 0; k < i; k++) p += bt.seq[k] == s;
        if (p >= c->p.max_kv_size)
            return laya_err(c->err, sizeof c->err, LAYA_ERR_CAPACITY,
                            "sequence %d would grow past max_kv_size %d", s, c->p.max_kv_size);
        c->pos[i] = p;
        int want; /* 0: nothing, LAYA_WANT_LOGITS, or LAYA_WANT_HIDDEN */
        if (bt.want_logits) {
            want = bt.want_logits[i] == LAYA_WANT_HIDDEN ? LAYA_WANT_HIDDEN : bt.want_logits[i] != 0;
        } else {
            want = 1;
            for (int k = i + 1; k < n; k++) want &= bt.seq[k] != s;
        }
        c->hid_row[i] = -1;
        if (want) {
            if (n_out == c->p.max_logits)
                return laya_err(c->err, sizeof c->err, LAYA_ERR_CAPACITY, "more than max_logits %d outputs requested",
                                c->p.max_logits);
            c->out_idx[n_out] = i;
            c->hid_row[i] = n_out++;
        }
        c->logit_row[i] = want == LAYA_WANT_LOGITS ? n_full++ : -1;
    }
    c->n_out = n_out;
    c->last_n = n;
    *n_full_out = n_full;
    return LAYA_OK;
}

/* The token embeddings of the batch into x. */
static void embed_tokens(laya_context *c, laya_batch bt) {
    const laya_model *m = c->m;
    const int n = bt.n, d = m->hp.n_embd;
    const lm_mat *E = &m->tok_embd;
    for (int i = 0; i < n; i++) {
        size_t t = (size_t)bt.tokens[i];
        const char *row = (const char *)E->data + t * E->row_bytes;
        if (c->packed && m->output.pdata && m->output.data == E->data) {
            /* tied and packed: the file's rows were released at load, the packed copy has them */
            kn_p16_row(m->output.ptype, m->output.pdata, d, (int64_t)t, c->x + (size_t)i * d);
        } else if (E->mlx_bits) {
            size_t sb = (size_t)(E->cols / E->mlx_group) * (E->sb_type == QT_F32 ? 4 : 2) * t;
            mlx_dequantize_row(E->mlx_bits, E->mlx_group, (const uint32_t *)row, (const char *)E->scales + sb,
                               (const char *)E->biases + sb, E->sb_type, c->x + (size_t)i * d, d);
        } else {
            qt_dequantize_row(E->type, row, c->x + (size_t)i * d, d);
        }
    }
}

/* How the attention of a batch is cut into pool tasks: KV heads (or slices of their query-head group) per
 * task, the chunks, whether each task prepares its own token's KV head (fused), and whether the q/k/v
 * matmuls and the attention run as one pool job (one_job). */
typedef struct att_plan {
    int fused, hs, one_job;
    int64_t chunks;
} att_plan;

static att_plan plan_attention(const laya_context *c, laya_batch bt) {
    const lm_hparams *h = &c->m->hp;
    const int n = bt.n, hd = h->head_dim;
    /* The plan depends on the batch alone. When no token of the batch attends to another
     * (all in different sequences: decode steps), each attention task prepares its own token's KV head,
     * on whichever thread runs it; otherwise (a prefill) every key and value must be in the cache first. */
    int fused = 1;
    for (int i = 1; i < n && fused; i++)
        for (int k = 0; k < i; k++) fused &= bt.seq[k] != bt.seq[i];
    /* whole query-head groups per task, unless that leaves fewer than two tasks per thread */
    const int group = h->n_head / h->n_head_kv, nt = lp_n_threads(c->pool);
    int hs = group;
    const int64_t kv_tasks = (int64_t)n * h->n_head_kv;
    if (kv_tasks < 2 * nt) {
        int64_t slices = LAYA_MIN((int64_t)group, (2 * nt + kv_tasks - 1) / kv_tasks);
        hs = (int)((group + slices - 1) / slices);
    }
    const int64_t tasks = kv_tasks * ((group + hs - 1) / hs);
    /* Causal attention: a prefill's last tokens cost the most, so chunks are small enough that the
     * heaviest, claimed last, leaves little imbalance. A decode step's tasks are even: one chunk per
     * thread, each a run of whole KV heads (and slices) where they divide evenly, whose batch tokens go one
     * after another: positions they share (fork_range) come from L3 or memory for the first and from L1
     * or L2 for the others. One chunk per KV head, claimed one by one, costs more (each claim moves the
     * pool's lines between the cores, mm_edge). */
    int64_t chunks = LAYA_MIN(tasks, (int64_t)nt * 16);
    if (fused && tasks / n >= nt) chunks = nt;
    /* The q/k/v matmuls and the attention in one pool job (qkv_att_job) where chunk c of both covers the
     * same KV heads: one chunk a thread, each of whole KV heads (as many for each), whose q, k and v rows
     * are whole 16-row blocks, which is how mm_edge splits the matrices. Per-phase timing (fwprof.h)
     * keeps them apart, to time each. */
    const int one_job = !fw_prof_on(c) && fused && hs == group && chunks == nt && h->n_head_kv % nt == 0 && hd % 16 == 0;
    return (att_plan){.fused = fused, .hs = hs, .one_job = one_job, .chunks = chunks};
}

/* The output norm of each row that asked for an output (into hid), and the output layer for those that
 * asked for logits. */
static void output_layer(laya_context *c, int n_out, int n_full) {
    const laya_model *m = c->m;
    const lm_hparams *h = &m->hp;
    const int d = h->n_embd;
    /* Output layer only for the rows that asked for logits; rows that asked for their hidden state keep it
     * (in hid) for laya_get_logits_subset. */
    for (int r = 0; r < n_out; r++)
        rms_norm(c->hid + (size_t)r * d, c->x + (size_t)c->out_idx[r] * d, m->output_norm, d, h->norm_eps);
    if (n_full > 0) {
        const float *src = c->hid;
        if (n_full < n_out) { /* gather the full-logits rows, in order, into contiguous scratch */
            for (int r = 0, k = 0; r < n_out; r++)
                if (c->logit_row[c->out_idx[r]] >= 0)
                    memcpy(c->xn + (size_t)k++ * d, c->hid + (size_t)r * d, (size_t)d * sizeof(float));
            src = c->xn;
        }
        matmul1(c, &m->output, c->logits, (size_t)h->n_vocab, src, n_full);
    }
}

static laya_status decode(laya_context *c, laya_batch bt) {
    const laya_model *m = c->m;
    const lm_hparams *h = &m->hp;
    int n = bt.n;
    fw_prof_begin(c);
    if (n < 1 || !bt.tokens || !bt.seq)
        return laya_err(c->err, sizeof c->err, LAYA_ERR_INVALID_ARG, "empty batch or NULL arrays");
    if (n > c->p.max_batch)
        return laya_err(c->err, sizeof c->err, LAYA_ERR_CAPACITY, "batch of %d tokens exceeds max_batch %d", n,
                        c->p.max_batch);
    int n_full = 0;
    laya_status st = plan_batch(c, bt, &n_full);
    if (st) return st;
    /* The batch writes each sequence's storage from its first token's position on. */
    for (int i = 0; i < n; i++)
        if (c->pos[i] == c->seq_len[bt.seq[i]]) kv_before_write(c, bt.seq[i], c->pos[i]);

    const int d = h->n_embd, qd = h->n_head * h->head_dim, kvd = c->kv_dim, ff = h->n_ff;
    embed_tokens(c, bt);

    const att_plan ap = plan_attention(c, bt);
    const int group = h->n_head / h->n_head_kv, hs = ap.hs, fused = ap.fused;

    for (int il = 0; il < h->n_layer; il++) {
        const lm_layer *L = &m->layers[il];
        /* attention */
        for (int i = 0; i < n; i++) rms_norm(c->xn + (size_t)i * d, c->x + (size_t)i * d, L->attn_norm, d, h->norm_eps);
        fw_prof_mark(c, FP_REST);
        {
            att_job aj = {.c = c, .L = L, .layer = il, .n = n, .seq = bt.seq, .heads_per_task = hs, .fused = fused && hs == group};
            const lm_mat *ws[3] = {&L->wq, &L->wk, &L->wv};
            float *ys[3] = {c->q, c->k, c->v};
            size_t ls[3] = {(size_t)qd, (size_t)kvd, (size_t)kvd};
            const int done = matmul_multi(c, 3, ws, ys, ls, c->xn, n, 0, ap.one_job ? &aj : NULL);
            fw_prof_mark(c, FP_QKV);
            if (!done) {
                if (!fused || hs < group) /* a prefill, or a KV head split over tasks: prepared beforehand */
                    for (int i = 0; i < n; i++)
                        for (int g = 0; g < h->n_head_kv; g++) qkv_head(c, L, il, i, bt.seq[i], g);
                lp_run(c->pool, att_worker, &aj, (int)ap.chunks);
            }
        }
        fw_prof_mark(c, FP_ATTN);
        matmul1(c, &L->wo, c->xn, (size_t)d, c->att, n);
        fw_prof_mark(c, FP_WO);
        residual(c, n);

        /* feed-forward: down(silu(gate(x)) * up(x)) */
        for (int i = 0; i < n; i++) rms_norm(c->xn + (size_t)i * d, c->x + (size_t)i * d, L->ffn_norm, d, h->norm_eps);
        {
            const lm_mat *ws[2] = {&L->w_gate, &L->w_up};
            float *ys[2] = {c->gate, c->up};
            size_t ls[2] = {(size_t)ff, (size_t)ff};
            fw_prof_mark(c, FP_REST);
            matmul_multi(c, 2, ws, ys, ls, c->xn, n, 1, NULL); /* c->gate = silu(gate) * up */
        }
        fw_prof_mark(c, FP_GATEUP);
        matmul1(c, &L->w_down, c->xn, (size_t)d, c->gate, n);
        fw_prof_mark(c, FP_DOWN);
        residual(c, n);
    }

    fw_prof_mark(c, FP_REST);
    output_layer(c, c->n_out, n_full);
    fw_prof_mark(c, FP_OUT);
    for (int i = 0; i < n; i++)
        if (c->pos[i] + 1 > c->seq_len[bt.seq[i]]) c->seq_len[bt.seq[i]] = c->pos[i] + 1;
    return LAYA_OK;
}
