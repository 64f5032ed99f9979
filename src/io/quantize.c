/* quantize.c — laya_quantize_file: re-encodes a GGUF model's weight matrices to one type, row by row
 * through F32, and copies every metadata entry verbatim (general.file_type updated) except the confidence
 * map (laya.calibration.*: scores shift with the encoding, so it is fitted per file). 1-D tensors (norms,
 * biases, rope factors) become F32. Not here: importance-weighted or K-quant search (plain rounding only). */
#include <stdio.h>
#include <unistd.h>

#include "base/common.h"
#include "io/gguf.h"
#include "base/pool.h"
#include "io/qtypes.h"

/* llama.cpp's LLAMA_FTYPE for a file whose matrices are all of one type. */
static uint32_t ftype_of(uint32_t qtype) {
    switch (qtype) {
    case QT_F16: return 1;
    case QT_Q4_0: return 2;
    case QT_Q4_1: return 3;
    case QT_Q8_0: return 7;
    case QT_Q5_0: return 8;
    case QT_Q5_1: return 9;
    case QT_IQ4_NL: return 25;
    default: return 0;
    }
}

/* The type a tensor gets: matrices the target when their rows are whole blocks of it (otherwise they keep
 * their encoding, which the file already proved valid), everything 1-D F32. As llama.cpp does for its 4- and 5-bit
 * files, the output matrix (or the token embedding when it doubles as the output) stays at 6 or 8 bits:
 * it decides every logit, it is where 4-bit rounding costs the most top-1 agreement, and it is one matrix
 * of many. */
static uint32_t target_type(const gguf_tensor *t, uint32_t target, int is_output) {
    if (t->n_dims == 1) return QT_F32;
    if (is_output && target != QT_F32 && target != QT_F16 && target != QT_Q8_0 && t->n_dims == 2)
        return t->ne[0] % QK_K == 0 ? QT_Q6_K : t->ne[0] % QK8_0 == 0 ? QT_Q8_0 : t->type;
    if (t->n_dims == 2 && t->ne[0] % qt_get(target)->block == 0) return target;
    return t->type;
}

typedef struct owned { void **p; size_t n, cap; } owned;

static void *owned_alloc(owned *o, size_t bytes) {
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        void **np = laya_malloc(cap * sizeof *np);
        if (!np) return NULL;
        if (o->n) memcpy(np, o->p, o->n * sizeof *np);
        laya_free(o->p);
        o->p = np;
        o->cap = cap;
    }
    void *b = laya_malloc(bytes);
    if (b) o->p[o->n++] = b;
    return b;
}

typedef struct conv_job {
    const gguf_tensor *t;
    uint32_t to;
    int64_t ne0, rows;
    size_t rb_in, rb_out;
    uint8_t *dst;
    float *scratch; /* ne0 floats per thread */
    int failed;
} conv_job;

static void conv_worker(void *arg, int chunk, int n_chunks, int tid) {
    conv_job *j = arg;
    const uint8_t *src = j->t->data;
    float *row = j->scratch + (size_t)tid * (size_t)j->ne0;
    int64_t r0 = j->rows * chunk / n_chunks, r1 = j->rows * (chunk + 1) / n_chunks;
    for (int64_t r = r0; r < r1; r++)
        if (qt_dequantize_row(j->t->type, src + (size_t)r * j->rb_in, row, j->ne0) ||
            qt_quantize_row(j->to, row, j->dst + (size_t)r * j->rb_out, j->ne0))
            __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

/* Convert t to type `to`; *out receives the new data (owned by o). */
static laya_status convert(const gguf_tensor *t, uint32_t to, lp_pool *pool, owned *o, const void **out, char *err,
                           size_t errlen) {
    const char *from_name = qt_get(t->type)->name ? qt_get(t->type)->name : "unknown";
    int nm = (int)LAYA_MIN(t->name.n, 64);
    if (!qt_get(t->type)->supported)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor '%.*s': cannot convert from type %s", nm,
                        t->name.p, from_name);
    conv_job j = {t, to, t->ne[0], t->ne[1] * t->ne[2] * t->ne[3], 0, 0, NULL, NULL, 0};
    j.rb_in = qt_row_bytes(t->type, j.ne0);
    j.rb_out = qt_row_bytes(to, j.ne0);
    uint64_t bytes;
    if (!j.rb_in || !j.rb_out || ck_mul(j.rb_out, (uint64_t)j.rows, &bytes) || bytes > SIZE_MAX)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tensor '%.*s': bad shape", nm, t->name.p);
    int nth = pool && j.rows >= 64 ? lp_n_threads(pool) : 1;
    j.dst = owned_alloc(o, (size_t)bytes);
    j.scratch = laya_calloc((size_t)nth * (size_t)j.ne0, sizeof(float));
    if (!j.dst || !j.scratch) {
        laya_free(j.scratch);
        return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory converting tensor '%.*s' (%llu bytes)", nm,
                        t->name.p, (unsigned long long)bytes);
    }
    if (nth > 1) lp_run(pool, conv_worker, &j, (int)LAYA_MIN(j.rows, (int64_t)nth * 8));
    else conv_worker(&j, 0, 1, 0);
    laya_free(j.scratch);
    *out = j.dst;
    if (j.failed)
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tensor '%.*s': cannot convert %s to %s", nm, t->name.p,
                        from_name, qt_get(to)->name);
    return LAYA_OK;
}

laya_status laya_quantize_file(const char *in_path, const char *out_path, const char *type, char *err,
                               size_t errlen) {
    if (!in_path || !out_path || !type)
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "laya_quantize_file: NULL argument");
    int target = qt_from_name(type);
    if (target != QT_F32 && target != QT_F16 && target != QT_Q8_0 && target != QT_Q4_0 && target != QT_Q4_1 &&
        target != QT_Q5_0 && target != QT_Q5_1 && target != QT_IQ4_NL)
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG,
                        "unsupported type '%s' (use F32, F16, Q8_0, Q5_0, Q5_1, Q4_0, Q4_1 or IQ4_NL)", type);
    gguf_file *f = NULL;
    char msg[LAYA_ERR_MSG_MAX];
    laya_status st = gguf_open(in_path, &f, msg, sizeof msg);
    if (st) {
        int named = strstr(msg, in_path) != NULL; /* the reader names the file in some messages only */
        return laya_err(err, errlen, st, "%s%s%s", named ? "" : in_path, named ? "" : ": ", msg);
    }

    gguf_writer *w = gguf_writer_new();
    owned o = {0};
    /* conversion is compute-bound and rows are independent: use every CPU (one thread if none start) */
    lp_pool *pool = NULL;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu > 1 && lp_create(ncpu > 64 ? 64 : (int)ncpu, &pool) != LAYA_OK) pool = NULL;
    if (!w) {
        st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
        goto done;
    }
    int have_ftype = 0, have_qv = 0;
    for (uint64_t i = 0; i < gguf_n_kv(f); i++) {
        const gguf_kv *kv = gguf_kv_at(f, i);
        /* file_type is rewritten in place so that the key order stays the source's */
        if (kv->key.n > 17 && !memcmp(kv->key.p, "laya.calibration.", 17)) continue; /* fit per file */
        if (kv->key.n == 17 && !memcmp(kv->key.p, "general.file_type", 17)) {
            have_ftype = 1;
            st = gguf_writer_set_u32(w, "general.file_type", ftype_of((uint32_t)target));
        } else {
            if (kv->key.n == 28 && !memcmp(kv->key.p, "general.quantization_version", 28)) have_qv = 1;
            st = gguf_writer_copy_kv(w, kv);
        }
        if (st) {
            st = laya_err(err, errlen, st, "copying metadata key '%.*s': %s", (int)LAYA_MIN(kv->key.n, 64),
                          kv->key.p, laya_status_str(st));
            goto done;
        }
    }
    if (!have_ftype) st = gguf_writer_set_u32(w, "general.file_type", ftype_of((uint32_t)target));
    if (!st && !have_qv && target != QT_F32 && target != QT_F16)
        st = gguf_writer_set_u32(w, "general.quantization_version", 2);
    if (st) {
        st = laya_err(err, errlen, st, "writing metadata: %s", laya_status_str(st));
        goto done;
    }

    const gguf_tensor *out_t = gguf_find_tensor(f, "output.weight");
    if (!out_t) out_t = gguf_find_tensor(f, "token_embd.weight"); /* tied output */
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        uint32_t to = target_type(t, (uint32_t)target, t == out_t);
        const void *data = t->data; /* unchanged tensors are written straight from the map */
        if (to != t->type && (st = convert(t, to, pool, &o, &data, err, errlen))) goto done;
        if ((st = gguf_writer_add_tensor_n(w, t->name.p, (size_t)t->name.n, to, t->n_dims, t->ne, data))) {
            st = laya_err(err, errlen, st, "adding tensor '%.*s': %s", (int)LAYA_MIN(t->name.n, 64), t->name.p,
                          laya_status_str(st));
            goto done;
        }
    }
    if ((st = gguf_writer_write(w, out_path, msg, sizeof msg))) st = laya_err(err, errlen, st, "%s", msg);
done:
    gguf_writer_free(w);
    lp_free(pool);
    for (size_t i = 0; i < o.n; i++) laya_free(o.p[i]);
    laya_free(o.p);
    gguf_close(f);
    return st;
}
