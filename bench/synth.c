/* synth.c — writes random-weight GGUF models shaped exactly like real ones, with llama.cpp's tensor names
 * and metadata keys and a synthetic byte-level BPE tokenizer that really tokenizes. Each row of each
 * tensor is generated in F32 and encoded at once, so only the encoded model is ever held in memory.
 * A dev program (build/laya-synth, bench/synth_main.c), not part of the library: it uses internal headers.
 * Not here: reading models (model.c), re-encoding existing files (quantize.c). */
#include "synth.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "base/common.h"
#include "io/gguf.h"
#include "base/pool.h"
#include "io/qtypes.h"

enum { SPECIALS_CHATML, SPECIALS_LLAMA3 };

typedef struct shape_def {
    const char *name, *arch, *model_name;
    int32_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx;
    float rope_theta, norm_eps;
    int qkv_bias, qk_norm, tied;
    int32_t n_regular;   /* ids [0, n_regular): 256 byte tokens, then merges; specials and padding follow */
    int specials;        /* SPECIALS_* */
    int32_t bos, eos;
    int add_bos;
    float llama3_factor; /* Llama 3.1+ rope scaling (rope_freqs.weight); 0 = none */
} shape_def;

/* From each model's config.json. Qwen2.5/Qwen3 pad their vocab to 151936; the padding ids beyond the
 * special tokens get "[PAD<id>]" names, as llama.cpp's converter writes them. */
static const shape_def k_shapes[] = {
    {"qwen2.5-0.5b", "qwen2", "Qwen2.5 0.5B (synthetic)", 24, 896, 14, 2, 64, 4864, 151936, 32768, 1e6f, 1e-6f,
     1, 0, 1, 151643, SPECIALS_CHATML, 151643, 151643, 0, 0},
    {"smollm2-360m", "llama", "SmolLM2 360M (synthetic)", 32, 960, 15, 5, 64, 2560, 49152, 8192, 1e5f, 1e-5f,
     0, 0, 1, 49149, SPECIALS_CHATML, 49149, 49149, 0, 0},
    {"llama-3.2-1b", "llama", "Llama 3.2 1B (synthetic)", 16, 2048, 32, 8, 64, 8192, 128256, 131072, 5e5f, 1e-5f,
     0, 0, 1, 128000, SPECIALS_LLAMA3, 128000, 128001, 1, 32.0f},
    {"qwen3-0.6b", "qwen3", "Qwen3 0.6B (synthetic)", 28, 1024, 16, 8, 128, 3072, 151936, 40960, 1e6f, 1e-6f,
     0, 1, 1, 151643, SPECIALS_CHATML, 151643, 151645, 0, 0},
    {"laya-typing", "llama", "Laya typing (synthetic)", 8, 512, 8, 4, 64, 1536, 16384, 512, 1e4f, 1e-5f,
     0, 0, 1, 16381, SPECIALS_CHATML, 16381, 16381, 1, 0},
};
#define N_SHAPES (sizeof k_shapes / sizeof k_shapes[0])

const char *const *synth_shape_names(void) {
    static const char *const names[N_SHAPES + 1] = {"qwen2.5-0.5b", "smollm2-360m", "llama-3.2-1b", "qwen3-0.6b",
                                                    "laya-typing", NULL};
    return names;
}

/* llama.cpp's LLAMA_FTYPE for a file whose matrices are all of one type. */
static uint32_t ftype_of(uint32_t qtype) {
    switch (qtype) {
    case QT_F16: return 1;
    case QT_Q4_0: return 2;
    case QT_Q8_0: return 7;
    case QT_BF16: return 32;
    default: return 0;
    }
}

/* ---------------------------------------------------------------------------------------------------
 * Random numbers: splitmix64 (a full-period 64-bit generator that is also a good seed mixer). */

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unif(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1p-53; } /* [0, 1) */

static uint64_t hash_str(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

/* n values ~ N(0, sd²) by Marsaglia's polar method: one log and one square root per pair and no
 * trigonometry, three times faster than Box-Muller here, which matters at a billion weights. The stream
 * depends only on the starting state. */
static void fill_normal(float *x, int64_t n, float sd, uint64_t state) {
    for (int64_t i = 0; i < n;) {
        uint64_t r = splitmix(&state);
        float u = (float)(int32_t)(uint32_t)r * 0x1p-31f, v = (float)(int32_t)(uint32_t)(r >> 32) * 0x1p-31f;
        float s = u * u + v * v;
        if (s >= 1.0f || s == 0.0f) continue; /* outside the unit disc: about 21% of draws */
        float f = sqrtf(-2.0f * logf(s) / s) * sd;
        x[i++] = u * f;
        if (i < n) x[i++] = v * f;
    }
}

/* ---------------------------------------------------------------------------------------------------
 * Tokenizer: byte-level BPE over GPT-2's byte-to-unicode alphabet. */

/* GPT-2 maps each byte to one printable code point: printable Latin-1 bytes map to themselves, the other
 * 68 bytes to U+0100.. in byte order (so the space becomes U+0120 'Ġ'). */
static uint32_t byte_to_cp(uint8_t b) {
    if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae)) return b;
    uint32_t n = 0;
    for (uint32_t c = 0; c < b; c++)
        if (!((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || (c >= 0xae))) n++;
    return 256 + n;
}

/* Classes of mergeable text, matching the GPT-2 pre-tokenizer's chunks (" ?letters", " ?digits",
 * " ?punctuation", whitespace runs), so that every merge can actually fire on real text. */
enum { CL_LETTER, CL_DIGIT, CL_PUNCT, CL_SPACE, CL_COUNT };
#define TOK_MAX_BYTES 16

typedef struct id_list { int32_t *v; size_t n, cap; } id_list;

typedef struct tok_build {
    uint8_t *bytes;        /* n_regular × TOK_MAX_BYTES: each regular token's bytes */
    uint8_t *len;
    int32_t n;
    int32_t *slots;        /* open addressing on the byte strings: id + 1, 0 = empty */
    size_t n_slots;
    id_list left[CL_COUNT];  /* tokens that may start a chunk piece (may begin with a space) */
    id_list right[CL_COUNT]; /* tokens that may continue one (no leading space) */
} tok_build;

static int list_push(id_list *l, int32_t id) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        int32_t *nv = laya_malloc(cap * sizeof *nv);
        if (!nv) return 0;
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        laya_free(l->v);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = id;
    return 1;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Slot of the byte string (existing id's slot, or the empty slot where it would go). */
static size_t tb_slot(const tok_build *tb, const uint8_t *p, size_t n) {
    size_t i = (size_t)hash_bytes(p, n) & (tb->n_slots - 1);
    for (;;) {
        int32_t id = tb->slots[i] - 1;
        if (id < 0) return i;
        if (tb->len[id] == n && !memcmp(tb->bytes + (size_t)id * TOK_MAX_BYTES, p, n)) return i;
        i = (i + 1) & (tb->n_slots - 1);
    }
}

static void tb_add(tok_build *tb, const uint8_t *p, size_t n, size_t slot) {
    int32_t id = tb->n++;
    memcpy(tb->bytes + (size_t)id * TOK_MAX_BYTES, p, n);
    tb->len[id] = (uint8_t)n;
    tb->slots[slot] = id + 1;
}

/* The mergeable bytes of each class, most frequent in English text first: pick() favours the front of
 * each list, so early merges look like real ones ("th", " t", "in") rather than like byte order. */
static const char *const k_class_bytes[CL_COUNT] = {
    "etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ",
    "1023456789",
    ".,'-\"!?():;/&*+=%$#@[]_<>{}|\\^`~",
    " \n\t",
};

static void tb_free(tok_build *tb) {
    laya_free(tb->bytes);
    laya_free(tb->len);
    laya_free(tb->slots);
    for (int c = 0; c < CL_COUNT; c++) {
        laya_free(tb->left[c].v);
        laya_free(tb->right[c].v);
    }
}

/* Whether a piece may continue a word: not after a leading space, and for letters only lowercase, so
 * that tokens look like words ("the", " The", " the") rather than "tHe". */
static int continues(int cl, const uint8_t *s) {
    if (cl == CL_SPACE) return 1;
    if (s[0] == ' ') return 0;
    return cl != CL_LETTER || (s[0] >= 'a' && s[0] <= 'z');
}

/* Picks an index in [0, n) favouring early (shorter, more frequent) tokens, as real merge lists do. */
static size_t pick(uint64_t *s, size_t n) {
    double u = unif(s);
    size_t i = (size_t)((double)n * u * u);
    return i < n ? i : n - 1;
}

/* Create the merges: regular tokens 256 .. n_regular-1, each the concatenation of two earlier tokens of
 * one class. Deterministic: the tokenizer does not depend on the weight seed. */
static laya_status build_merges(tok_build *tb, int32_t n_regular, int32_t *merge_l, int32_t *merge_r,
                                char *err, size_t errlen) {
    uint64_t rng = 0x5eed70c0ull;
    for (int b = 0; b < 256; b++) {
        uint8_t c = (uint8_t)b;
        tb_add(tb, &c, 1, tb_slot(tb, &c, 1));
    }
    for (int cl = 0; cl < CL_COUNT; cl++) {
        /* a leading space may start a letter, digit or punctuation piece: " the", " 42", " (" */
        if (cl != CL_SPACE && !list_push(&tb->left[cl], ' '))
            return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        for (const char *p = k_class_bytes[cl]; *p; p++)
            if (!list_push(&tb->left[cl], (uint8_t)*p) || (continues(cl, (const uint8_t *)p) &&
                                                           !list_push(&tb->right[cl], (uint8_t)*p)))
                return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    }

    uint64_t attempts = 0;
    while (tb->n < n_regular) {
        if (++attempts > (uint64_t)n_regular * 1000)
            return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "could not generate %d distinct merges", n_regular);
        uint32_t r = (uint32_t)(splitmix(&rng) % 100);
        int cl = r < 84 ? CL_LETTER : r < 90 ? CL_DIGIT : r < 96 ? CL_PUNCT : CL_SPACE;
        id_list *L = &tb->left[cl], *R = &tb->right[cl];
        int32_t a = L->v[pick(&rng, L->n)], b = R->v[pick(&rng, R->n)];
        size_t la = tb->len[a], lb = tb->len[b];
        if (la + lb > TOK_MAX_BYTES) continue;
        uint8_t s[TOK_MAX_BYTES];
        memcpy(s, tb->bytes + (size_t)a * TOK_MAX_BYTES, la);
        memcpy(s + la, tb->bytes + (size_t)b * TOK_MAX_BYTES, lb);
        size_t slot = tb_slot(tb, s, la + lb);
        if (tb->slots[slot]) continue; /* exists already */
        int32_t id = tb->n;
        merge_l[id - 256] = a;
        merge_r[id - 256] = b;
        tb_add(tb, s, la + lb, slot);
        if (!list_push(L, id)) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        if (continues(cl, s) && !list_push(R, id))
            return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    }
    return LAYA_OK;
}

/* Appends the GPT-2 form of n bytes to out (each byte becomes one code point, 1 or 2 UTF-8 bytes). */
static size_t put_mapped(const uint32_t map[256], const uint8_t *p, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = map[p[i]];
        if (cp < 0x80) out[o++] = (char)cp;
        else {
            out[o++] = (char)(0xc0 | (cp >> 6));
            out[o++] = (char)(0x80 | (cp & 0x3f));
        }
    }
    return o;
}

typedef struct text_arena { char *p; size_t used, cap; } text_arena;

static void special_name(const shape_def *sh, int32_t id, char *buf, size_t cap, int32_t *type) {
    int32_t k = id - sh->n_regular;
    *type = 3; /* CONTROL */
    if (sh->specials == SPECIALS_LLAMA3) {
        static const char *const named[] = {"<|begin_of_text|>", "<|end_of_text|>", NULL, NULL,
                                            "<|finetune_right_pad_id|>", NULL, "<|start_header_id|>",
                                            "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"};
        /* the unnamed ids hold the reserved tokens, numbered in id order */
        if (k < 11 && named[k]) {
            snprintf(buf, cap, "%s", named[k]);
            return;
        }
        int32_t reserved = k < 2 ? 0 : k < 4 ? k - 2 : k == 5 ? 2 : k - 8;
        snprintf(buf, cap, "<|reserved_special_token_%d|>", reserved);
        return;
    }
    static const char *const chatml[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    if (k < 3) {
        snprintf(buf, cap, "%s", chatml[k]);
        return;
    }
    snprintf(buf, cap, "[PAD%d]", id);
    *type = 5; /* UNUSED */
}

static laya_status put_tokenizer(gguf_writer *w, const shape_def *sh, char *err, size_t errlen) {
    laya_status st = LAYA_OK;
    int32_t nv = sh->n_vocab, nr = sh->n_regular, nm = nr - 256;
    tok_build tb = {0};
    gguf_str *toks = laya_calloc((size_t)nv, sizeof *toks);
    gguf_str *merges = laya_calloc((size_t)nm, sizeof *merges);
    int32_t *types = laya_calloc((size_t)nv, sizeof *types);
    int32_t *ml = laya_calloc((size_t)nm, sizeof *ml), *mr = laya_calloc((size_t)nm, sizeof *mr);
    /* each regular token's text is at most 2 bytes per byte; a merge is two of them and a space */
    text_arena ar = {0};
    ar.cap = (size_t)nr * (2 * TOK_MAX_BYTES) + (size_t)nm * (2 * TOK_MAX_BYTES + 1) + (size_t)(nv - nr) * 40;
    ar.p = laya_malloc(ar.cap);
    tb.n_slots = 1;
    while (tb.n_slots < (size_t)nr * 2) tb.n_slots <<= 1;
    tb.bytes = laya_malloc((size_t)nr * TOK_MAX_BYTES);
    tb.len = laya_malloc((size_t)nr);
    tb.slots = laya_calloc(tb.n_slots, sizeof *tb.slots);
    if (!toks || !merges || !types || !ml || !mr || !ar.p || !tb.bytes || !tb.len || !tb.slots) {
        st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory building the tokenizer");
        goto done;
    }
    if ((st = build_merges(&tb, nr, ml, mr, err, errlen))) goto done;

    uint32_t map[256];
    for (int b = 0; b < 256; b++) map[b] = byte_to_cp((uint8_t)b);
    for (int32_t id = 0; id < nr; id++) {
        char *o = ar.p + ar.used;
        size_t n = put_mapped(map, tb.bytes + (size_t)id * TOK_MAX_BYTES, tb.len[id], o);
        toks[id] = (gguf_str){o, n};
        types[id] = 1; /* NORMAL: byte-level BPE has no separate byte-token type */
        ar.used += n;
    }
    for (int32_t i = 0; i < nm; i++) {
        gguf_str a = toks[ml[i]], b = toks[mr[i]];
        char *o = ar.p + ar.used;
        memcpy(o, a.p, (size_t)a.n);
        o[a.n] = ' ';
        memcpy(o + a.n + 1, b.p, (size_t)b.n);
        merges[i] = (gguf_str){o, a.n + 1 + b.n};
        ar.used += (size_t)merges[i].n;
    }
    for (int32_t id = nr; id < nv; id++) {
        char *o = ar.p + ar.used;
        special_name(sh, id, o, 40, &types[id]);
        toks[id] = (gguf_str){o, strlen(o)};
        ar.used += (size_t)toks[id].n;
    }

    if ((st = gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2")) ||
        (st = gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt-2")) ||
        (st = gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, (uint64_t)nv)) ||
        (st = gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_I32, types, (uint64_t)nv)) ||
        (st = gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, (uint64_t)nm)) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)sh->bos)) ||
        (st = gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)sh->eos)) ||
        (st = gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", sh->add_bos)) ||
        (st = gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", 0)))
        laya_err(err, errlen, st, "writing the tokenizer metadata: %s", laya_status_str(st));
done:
    tb_free(&tb);
    laya_free(toks);
    laya_free(merges);
    laya_free(types);
    laya_free(ml);
    laya_free(mr);
    laya_free(ar.p);
    return st;
}

/* ---------------------------------------------------------------------------------------------------
 * Tensors */

typedef struct synth {
    gguf_writer *w;
    uint32_t wtype;
    uint64_t seed;
    void **bufs;     /* tensor data, alive until the file is written */
    size_t n_bufs, cap_bufs;
    lp_pool *pool;   /* NULL: single-threaded */
    float *rows;     /* one F32 row per thread, max_row floats each */
    int64_t max_row;
    char *err;
    size_t errlen;
} synth;

enum { FILL_NORMAL, FILL_ONES, FILL_GIVEN };

typedef struct row_job {
    const synth *s;
    uint32_t type;
    int64_t ne0, rows;
    size_t rb;
    uint8_t *buf;
    int fill;
    const float *given;
    uint64_t base;
    int failed;
} row_job;

/* Each thread fills and encodes a contiguous range of rows. Each row has its own random stream, so the
 * file does not depend on the number of threads. */
static void rows_worker(void *arg, int chunk, int n_chunks, int tid) {
    row_job *j = arg;
    float *row = j->s->rows + (size_t)tid * (size_t)j->s->max_row;
    int64_t r0 = j->rows * chunk / n_chunks, r1 = j->rows * (chunk + 1) / n_chunks;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = row;
        if (j->fill == FILL_NORMAL) {
            uint64_t st = j->base + (uint64_t)r * 0xd1b54a32d192ed03ull;
            fill_normal(row, j->ne0, 0.02f, splitmix(&st));
        } else if (j->fill == FILL_ONES) {
            for (int64_t i = 0; i < j->ne0; i++) row[i] = 1.0f;
        } else {
            x = j->given + r * j->ne0;
        }
        if (qt_quantize_row(j->type, x, j->buf + (size_t)r * j->rb, j->ne0))
            __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    }
}

/* A tensor of ne0 × ne1 (1-D when ne1 == 0), generated row by row and encoded: matrices to the target
 * type (F16 if a row is not a whole number of its blocks), 1-D tensors to F32. */
static laya_status add_tensor(synth *s, const char *name, int64_t ne0, int64_t ne1, int fill, const float *given) {
    uint32_t n_dims = ne1 ? 2 : 1;
    uint32_t type = n_dims == 1 ? QT_F32 : s->wtype;
    if (n_dims == 2 && ne0 % qt_get(type)->block) type = QT_F16;
    int64_t rows = ne1 ? ne1 : 1;
    size_t rb = qt_row_bytes(type, ne0);
    uint64_t bytes;
    if (!rb || ne0 > s->max_row || ck_mul(rb, (uint64_t)rows, &bytes) || bytes > SIZE_MAX)
        return laya_err(s->err, s->errlen, LAYA_ERR_INVALID_ARG, "tensor %s: bad shape", name);
    if (s->n_bufs == s->cap_bufs) {
        size_t cap = s->cap_bufs ? s->cap_bufs * 2 : 64;
        void **nb = laya_malloc(cap * sizeof *nb);
        if (!nb) return laya_err(s->err, s->errlen, LAYA_ERR_NOMEM, "out of memory");
        if (s->n_bufs) memcpy(nb, s->bufs, s->n_bufs * sizeof *nb);
        laya_free(s->bufs);
        s->bufs = nb;
        s->cap_bufs = cap;
    }
    uint8_t *buf = laya_malloc((size_t)bytes);
    if (!buf)
        return laya_err(s->err, s->errlen, LAYA_ERR_NOMEM, "out of memory for tensor %s (%llu bytes)", name,
                        (unsigned long long)bytes);
    s->bufs[s->n_bufs++] = buf;
    row_job j = {s, type, ne0, rows, rb, buf, fill, given, hash_str(name) ^ (s->seed * 0x9e3779b97f4a7c15ull), 0};
    if (s->pool && rows >= 64) lp_run(s->pool, rows_worker, &j, (int)LAYA_MIN(rows, (int64_t)lp_n_threads(s->pool) * 8));
    else rows_worker(&j, 0, 1, 0);
    if (j.failed)
        return laya_err(s->err, s->errlen, LAYA_ERR_UNSUPPORTED, "tensor %s: cannot encode as %s", name,
                        qt_get(type)->name);
    int64_t ne[2] = {ne0, ne1};
    laya_status st = gguf_writer_add_tensor(s->w, name, type, n_dims, ne, buf);
    if (st) return laya_err(s->err, s->errlen, st, "adding tensor %s: %s", name, laya_status_str(st));
    return LAYA_OK;
}

/* Llama 3.1+ rope scaling as llama.cpp stores it: a divisor of each rotary frequency, 1 for the fast
 * (short-wavelength) ones, `factor` for the slow ones, interpolated in between. The constants are
 * Llama 3.2's (low_freq_factor 1, high_freq_factor 4, original context 8192). */
static void llama3_rope_factors(const shape_def *sh, float *out) {
    const double low = 1.0, high = 4.0, old_ctx = 8192.0, factor = sh->llama3_factor;
    int n = sh->head_dim / 2;
    for (int i = 0; i < n; i++) {
        double freq = pow((double)sh->rope_theta, -(2.0 * i) / sh->head_dim);
        double wavelen = 2.0 * 3.14159265358979323846 / freq;
        double f;
        if (wavelen < old_ctx / high) f = 1.0;
        else if (wavelen > old_ctx / low) f = factor;
        else {
            double smooth = (old_ctx / wavelen - low) / (high - low);
            f = 1.0 / ((1.0 - smooth) / factor + smooth);
        }
        out[i] = (float)f;
    }
}

static laya_status put_metadata(gguf_writer *w, const shape_def *sh, uint32_t wtype, char *err, size_t errlen) {
    char k[96];
    laya_status st;
#define KEY(suffix) (snprintf(k, sizeof k, "%s.%s", sh->arch, suffix), k)
    if ((st = gguf_writer_set_str(w, "general.architecture", sh->arch)) ||
        (st = gguf_writer_set_str(w, "general.name", sh->model_name)) ||
        (st = gguf_writer_set_u32(w, "general.file_type", ftype_of(wtype))) ||
        (st = gguf_writer_set_u32(w, "general.quantization_version", 2)) ||
        (st = gguf_writer_set_u32(w, KEY("context_length"), (uint32_t)sh->n_ctx)) ||
        (st = gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)sh->n_embd)) ||
        (st = gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)sh->n_layer)) ||
        (st = gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)sh->n_ff)) ||
        (st = gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)sh->n_head)) ||
        (st = gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)sh->n_head_kv)) ||
        (st = gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)sh->head_dim)) ||
        (st = gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)sh->head_dim)) ||
        (st = gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)sh->head_dim)) ||
        (st = gguf_writer_set_f32(w, KEY("rope.freq_base"), sh->rope_theta)) ||
        (st = gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), sh->norm_eps)) ||
        (st = gguf_writer_set_u32(w, KEY("vocab_size"), (uint32_t)sh->n_vocab)))
        return laya_err(err, errlen, st, "writing metadata: %s", laya_status_str(st));
#undef KEY
    return LAYA_OK;
}

static laya_status put_tensors(synth *s, const shape_def *sh) {
    laya_status st;
    int64_t d = sh->n_embd, q = (int64_t)sh->n_head * sh->head_dim, kv = (int64_t)sh->n_head_kv * sh->head_dim;
    char name[64];
    if (sh->llama3_factor > 0) {
        float f[256];
        llama3_rope_factors(sh, f);
        if ((st = add_tensor(s, "rope_freqs.weight", sh->head_dim / 2, 0, FILL_GIVEN, f))) return st;
    }
    if ((st = add_tensor(s, "token_embd.weight", d, sh->n_vocab, FILL_NORMAL, NULL))) return st;
    for (int l = 0; l < sh->n_layer; l++) {
#define T(suffix, ne0, ne1, fill)                                       \
    do {                                                                \
        snprintf(name, sizeof name, "blk.%d.%s", l, suffix);            \
        if ((st = add_tensor(s, name, ne0, ne1, fill, NULL))) return st; \
    } while (0)
        T("attn_norm.weight", d, 0, FILL_ONES);
        T("attn_q.weight", d, q, FILL_NORMAL);
        T("attn_k.weight", d, kv, FILL_NORMAL);
        T("attn_v.weight", d, kv, FILL_NORMAL);
        if (sh->qkv_bias) {
            T("attn_q.bias", q, 0, FILL_NORMAL);
            T("attn_k.bias", kv, 0, FILL_NORMAL);
            T("attn_v.bias", kv, 0, FILL_NORMAL);
        }
        if (sh->qk_norm) {
            T("attn_q_norm.weight", sh->head_dim, 0, FILL_ONES);
            T("attn_k_norm.weight", sh->head_dim, 0, FILL_ONES);
        }
        T("attn_output.weight", q, d, FILL_NORMAL);
        T("ffn_norm.weight", d, 0, FILL_ONES);
        T("ffn_gate.weight", d, sh->n_ff, FILL_NORMAL);
        T("ffn_up.weight", d, sh->n_ff, FILL_NORMAL);
        T("ffn_down.weight", sh->n_ff, d, FILL_NORMAL);
#undef T
    }
    if ((st = add_tensor(s, "output_norm.weight", d, 0, FILL_ONES, NULL))) return st;
    if (!sh->tied && (st = add_tensor(s, "output.weight", d, sh->n_vocab, FILL_NORMAL, NULL))) return st;
    return LAYA_OK;
}

laya_status synth_write(const char *shape, const char *type, uint64_t seed, const char *out_path, char *err,
                        size_t errlen) {
    if (!shape || !type || !out_path)
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "synth_write: NULL argument");
    const shape_def *sh = NULL;
    for (size_t i = 0; i < N_SHAPES; i++)
        if (!strcmp(k_shapes[i].name, shape)) sh = &k_shapes[i];
    if (!sh)
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG,
                        "unknown shape '%s' (known: qwen2.5-0.5b, smollm2-360m, llama-3.2-1b, qwen3-0.6b, laya-typing)",
                        shape);
    int t = qt_from_name(type);
    if (t != QT_F32 && t != QT_F16 && t != QT_Q8_0 && t != QT_Q4_0)
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "unsupported type '%s' (use F32, F16, Q8_0 or Q4_0)",
                        type);

    synth s = {0};
    s.wtype = (uint32_t)t;
    s.seed = seed;
    s.err = err;
    s.errlen = errlen;
    s.max_row = LAYA_MAX(sh->n_embd, sh->n_ff);
    s.max_row = LAYA_MAX(s.max_row, (int64_t)sh->n_head * sh->head_dim);
    /* generation is compute-bound (a log and a square root per pair of weights): use every CPU */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nth = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
    if (nth > 1 && lp_create(nth, &s.pool) != LAYA_OK) s.pool = NULL;
    if (!s.pool) nth = 1;
    s.rows = laya_malloc((size_t)nth * (size_t)s.max_row * sizeof(float));
    s.w = gguf_writer_new();
    laya_status st;
    if (!s.rows || !s.w) {
        st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = put_metadata(s.w, sh, s.wtype, err, errlen))) goto done;
    if ((st = put_tokenizer(s.w, sh, err, errlen))) goto done;
    if ((st = put_tensors(&s, sh))) goto done;
    st = gguf_writer_write(s.w, out_path, err, errlen);
done:
    gguf_writer_free(s.w);
    for (size_t i = 0; i < s.n_bufs; i++) laya_free(s.bufs[i]);
    laya_free(s.bufs);
    laya_free(s.rows);
    lp_free(s.pool);
    return st;
}
