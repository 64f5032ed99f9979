/* model.h — the loaded model: hyperparameters, weight views into the file's map and their packed copies,
 * shared by model.c (loading), pack.c (the packed copy) and forward.c (the forward pass). Internal; the
 * context (KV caches, scratch) is context.h. */
#ifndef LAYA_MODEL_H
#define LAYA_MODEL_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/common.h"
#include "io/gguf.h"
#include "kernels/kernels.h"
#include "base/pool.h"
#include "io/qtypes.h"
#include "base/json.h"
#include "io/safetensors.h"
#include "tokenizer/tokenizer.h"

typedef struct lm_mat {
    const void *data; /* rows × row_bytes, into the map */
    uint32_t type;    /* qtypes.h id; unused when mlx_bits != 0 */
    int64_t rows, cols;
    size_t row_bytes;
    int mlx_bits, mlx_group;       /* MLX affine quantization (kernels.h) when mlx_bits != 0: data is uint32 */
    const void *scales, *biases;   /* (rows, cols / mlx_group) of sb_type */
    uint32_t sb_type;
    const void *pdata;             /* the matrix packed at load (kernels.h, P16), or NULL: what the */
    uint32_t ptype;                /* matmuls, logit subsets and a tied embedding's lookups read */
    /* While the loader packs: where the copy goes (or NULL), and how many of its leading 16-row panels
     * are complete (release order; forward.c reads them from the copy, not from the file pages that the
     * packing has released). ptype is set with pk_dst, before the packing starts. */
    const void *pk_dst;
    _Atomic int64_t pk_done;
} lm_mat;

typedef struct lm_layer {
    const float *attn_norm, *ffn_norm;  /* (n_embd) */
    const float *bq, *bk, *bv;          /* (n_head*head_dim), (kv_dim), (kv_dim); qwen2 only */
    const float *q_norm, *k_norm;       /* (head_dim); qwen3 only */
    lm_mat wq, wk, wv;                  /* (n_embd) -> (n_head*head_dim), (kv_dim), (kv_dim) */
    lm_mat wo;                          /* (n_head*head_dim) -> (n_embd) */
    lm_mat w_gate, w_up;                /* (n_embd) -> (n_ff) */
    lm_mat w_down;                      /* (n_ff) -> (n_embd) */
} lm_layer;

typedef struct lm_hparams {
    int32_t n_vocab, n_embd, n_layer, n_head, n_head_kv, head_dim, head_dim_v, n_ff, n_ctx_train;
    float rope_theta, norm_eps;
    int32_t rope_neox, tied_output, has_qkv_bias, has_qk_norm;
} lm_hparams;

#define LM_MAX_OWNED 16384

/* One tensor as the model file lists it, for laya_model_tensor and info. */
typedef struct lm_tinfo {
    const char *name, *type;
    int64_t ne[4];
    int32_t n_dims;
    uint64_t size, n_elems;
} lm_tinfo;

struct laya_model {
    gguf_file *gf;            /* a GGUF file, or */
    st_set *st;               /* a Hugging Face / MLX directory: safetensors, */
    json_doc *cfg;            /* its config.json */
    lm_tinfo *tinfo;
    int64_t n_tinfo;
    tok_vocab *tok;
    char arch[16];
    char name[128];
    lm_hparams hp;
    lm_mat tok_embd;          /* (n_embd) per token row */
    lm_mat output;            /* (n_embd) -> (n_vocab); == tok_embd when tied */
    const float *output_norm; /* (n_embd) */
    const float *rope_freqs;  /* (head_dim/2) frequency divisors (Llama 3 rope scaling) or NULL */
    lm_layer *layers;         /* (n_layer) */
    int vocab_only;
    int n_threads;
    const kn_ops *kn;
    char *names_blob;         /* NUL-terminated copies of GGUF tensor names, for tinfo */
    void *owned[LM_MAX_OWNED]; /* the vectors (norms, biases) as F32 copies, realigned MLX words */
    int n_owned;
    /* Packed weights (kernels.h P16), made by a thread that load starts (pack.c): one anonymous map for
     * every packed matrix, or NULL. Forward passes read lm_mat.pdata only after seeing packed_ready 1
     * (set with release once every pdata is); until then each matrix's complete panels (pk_done) and the
     * file's layout for the rest (forward.c pack_views), with the same results. */
    void *packed;
    size_t packed_bytes;
    atomic_int packed_ready, pack_cancel;
    struct pack_state *pk;    /* the thread's work list, freed when it is joined */
    pthread_t pack_th;
    int pack_th_ok;           /* a thread to join (under pack_mu) */
    pthread_mutex_t pack_mu;
    int pack_mu_ok;
    /* The packing starts once a first decode has ended (or laya_model_wait_ready is called, or PACK_START_MS
     * have passed: pack_go), and waits for the decodes under way (laya_decode, lm_pack_hold), each wait at
     * most PACK_HOLD_MS (pack.c): a first key press has the cores to itself, and decodes that never pause
     * still let the packing finish. */
    atomic_int pack_hold, pack_waiters, pack_go;
    pthread_mutex_t hold_mu;
    pthread_cond_t hold_cv;
    int hold_ok;
    char err[LAYA_ERR_MSG_MAX];
};

#endif
