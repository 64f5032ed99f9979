/* context.h — the inside of a laya_context (internal): its KV caches, scratch rows and matmul split
 * tables, shared by the KV-cache code (kv.c) and the forward pass (forward.c). Not part of the API; the
 * model's own layout is model.h. */
#ifndef LAYA_CONTEXT_H
#define LAYA_CONTEXT_H

#include "engine/fwprof.h"
#include "engine/model.h"
#include "engine/testhooks.h" /* fw_split_set, which context creation uses too */

/* Batches of up to this many rows have their activations quantized by every thread of a matmul pass into
 * its own copy, instead of each row by one thread for all (mm_quantize): no thread waits for rows another
 * quantizes, and none reads rows from the other core's cache. */
#define MM_OWN_B 8
#define SPLIT_KINDS 9 /* mm_split's share tables: 1-3 matrices a pass x 3 batch classes */
#define SPLIT_MAX_T 64 /* threads up to which passes split by learned shares (evenly beyond) */

struct laya_context {
    const laya_model *m;
    laya_context_params p;
    lp_pool *pool;
    int packed;         /* the model's packed copies are used in this decode (packed_now at its start) */
    int32_t kv_dim;
    int32_t *seq_len;   /* (n_seq) positions held */
    /* Shared positions: sequence s's positions [0, base_len[s]) are read from sequence base[s]'s storage
     * (the blocks of kcache / vcache below), not its own; base[s] = -1 when it has none. A fork makes
     * them (laya_seq_fork: dst shares src's positions instead of copying them), so the candidates a
     * keystroke forks from one context read the context's keys and values from one place (attention
     * then reads them once per KV head for all of them: att_worker). Invariants: base_len[s] is a
     * multiple of KN_QK_SPLIT (attention splits there with the bits of one pass); a sequence whose storage
     * others read reads no one's (one level); storage others read is not written until they have their
     * own copy of what the write would change (kv_before_write). */
    int32_t *base, *base_len;
    /* Each KV head's block is contiguous (kv_cap positions). Keys are stored in blocks of 16 positions,
     * dimension-major (kn_ops.attn_qk), so attention takes 16 positions per vector with no horizontal sums
     * and reads each block as one sequential stream. */
    int32_t kv_cap;     /* max_kv_size rounded up to 16 */
    int kv16;           /* the caches hold fp16 (LAYA_KV_F16), else float (kv_es) */
    void *kcache;       /* (n_layer, n_seq, n_head_kv, kv_cap / 16, head_dim, 16) keys after RoPE */
    void *vcache;       /* (n_layer, n_seq, n_head_kv, kv_cap, head_dim) */
    float *rope_cs;     /* (max_kv, head_dim/2, 2) cos, sin */
    /* scratch, (max_batch, ...) rows */
    float *x, *xn, *q, *k, *v, *att, *gate, *up;
    void *act;          /* quantized activations, (max(max_batch, n_threads * MM_OWN_B), act_row_cap) */
    size_t act_row_cap;
    uint64_t *act_job;  /* (n_threads, 8): the matmul pass whose rows thread t last quantized (MM_OWN_B) */
    uint64_t n_pass;    /* matmul passes so far */
    /* Each thread's share of a matmul pass's rows (mm_split), learned from the passes' timings, per kind
     * of pass (split_kind) */
    double split[SPLIT_KINDS][SPLIT_MAX_T];
    float *scores;      /* (n_threads, n_head / n_head_kv, max_kv) attention scores */
    int32_t *pos;       /* (max_batch) position of each batch token */
    int32_t *logit_row; /* (max_batch) row in logits, or -1 */
    int32_t *hid_row;   /* (max_batch) row in hid (a row that asked for logits or its hidden state), or -1 */
    int32_t *out_idx;   /* (max_logits) batch index of each hid row */
    float *hid;         /* (max_logits, n_embd) final normalised hidden states, for laya_get_logits_subset */
    float *logits;      /* (max_logits, n_vocab) */
    int32_t n_out;
    int32_t last_n;
#ifdef LAYA_PROFILE
    int prof;                 /* fwprof.h: per-phase timing on */
    double prof_ms[FP_N], prof_t;
    int64_t prof_n;
#endif
    char err[LAYA_ERR_MSG_MAX];
};

/* Offset (in elements) of the (layer, seq, KV head) block in kcache and vcache. */
static inline size_t kv_head_off(const laya_context *c, int layer, int seq, int head) {
    size_t h = ((size_t)layer * c->p.n_seq + seq) * c->m->hp.n_head_kv + head;
    return h * c->kv_cap * c->m->hp.head_dim;
}

/* Bytes per cache element, and element i of a cache (kcache or vcache), whichever its type. */
static inline size_t kv_es(const laya_context *c) { return c->kv16 ? 2 : 4; }
static inline char *kv_el(const laya_context *c, void *cache, size_t i) { return (char *)cache + i * kv_es(c); }

/* Before sequence x's storage is written from position p on: its readers get their own copy, and so does
 * x where it reads another's (kv.c). */
void kv_before_write(laya_context *c, int32_t x, int32_t p);

#endif
