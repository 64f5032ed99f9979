/* session.c — typing sessions (laya.h): create and free, and one keystroke's orchestration: the caller's
 * text into the window and the prompt (window.c, analyze.c), the prompt's KV (slots.c), the beam
 * (beam.c), corrections (corrections.c), the cache models (cachemix.c), then the ranked candidates.
 * Everything is allocated at create: the keystroke path never calls the allocator. */
#include <math.h>
#include <stdlib.h>

#include "typing/session.h"
#include "typing/textclass.h"

laya_session_params laya_session_default_params(void) {
    laya_session_params p = {.abi = LAYA_ABI_VERSION,
                             .mode = LAYA_MODE_TEXT,
                             .n_candidates = 5,
                             .max_tokens = 5,
                             .max_kv_size = 320,
                             .max_text = 1024,
                             .deadline_ms = 0,
                             .sensitive = 0,
                             .normalize = LAYA_NORM_MODE_DEFAULT,
                             .warmup = 1,
                             .resources = NULL,
                             .min_prob = 0,
                             .beam = 0,
                             .prefetch_ms = 40,
                             .user_dict = NULL,
                             .doc_cache_bytes = 65536,
                             .kv_type = LAYA_KV_F16};
    return p;
}

const char *laya_session_error(const laya_session *s) { return s ? s->err : "session is NULL"; }

static laya_token find_token(const laya_model *m, const char *str) {
    size_t n = strlen(str);
    int32_t nv = laya_n_vocab(m);
    for (int32_t i = nv - 1; i >= 0; i--) { /* special tokens usually sit at the end */
        size_t pl;
        const char *p = laya_token_piece(m, i, &pl);
        if (p && pl == n && memcmp(p, str, n) == 0) return i;
    }
    return -1;
}

static void load_calibration(laya_session *s) {
    const gguf_file *gf = s->m->gf;
    const gguf_kv *kx, *ky;
    if (!gf || gguf_get_arr(gf, "laya.calibration.prob", GGUF_F32, &kx) ||
        gguf_get_arr(gf, "laya.calibration.hit", GGUF_F32, &ky) || kx->arr_n != ky->arr_n || kx->arr_n < 2 ||
        kx->arr_n > CAL_MAX)
        return;
    float x[CAL_MAX], y[CAL_MAX];
    for (uint64_t i = 0; i < kx->arr_n; i++) x[i] = (float)gguf_arr_num(kx, i), y[i] = (float)gguf_arr_num(ky, i);
    laya_session_set_calibration(s, x, y, (int32_t)kx->arr_n);
}

void laya_session_free(laya_session *s) {
    if (!s) return;
    laya_context_free(s->ctx);
    tok_work_free(s->tw);
    ud_free(s->cm.ud);
    dc_free(s->cm.dc);
    ty_list_free(s->co.user_words);
    laya_resources_free(s->own_res);
    laya_free(s->co.ctok);
    nc_release(&s->nc);
    void *bufs[] = {s->tx.norm,   s->tx.map,      s->tx.after, s->tx.amap,     s->tx.ctxt,     s->tx.prompt, s->tx.guess,
                    s->sl.ptok,  s->bm.live,   s->bm.next,     s->bm.pool,  s->bm.fins,     s->allowed,  s->vals,
                    s->b_tok, s->b_seq,  s->b_want,   s->sl.pre_logits, s->tx.raw, s->tx.raw_after,
                    s->pf.text, s->co.memo};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) laya_free(bufs[i]);
    for (int i = 0; i < MAX_SLOTS; i++) laya_free(s->sl.tok[i]);
    laya_free(s);
}

static laya_status set_text_window(laya_session *s, const char *before, size_t before_len, size_t full_len,
                                   const char *after, size_t after_len);

static laya_status check_params(const laya_session_params *pp, char *err, size_t errlen) {
    laya_session_params p = *pp;
    if (p.mode < 0 || p.mode > 2 || p.n_candidates < 1 || p.n_candidates > LAYA_MAX_CANDIDATES || p.max_tokens < 1 ||
        p.max_tokens > MAX_STEPS || p.max_kv_size < 16 || p.max_kv_size > (1 << 16) || p.max_text < 16 ||
        p.max_text > (1 << 20) || p.deadline_ms < 0 || !(p.deadline_ms == p.deadline_ms) ||
        !(p.min_prob >= 0 && p.min_prob < 1) || p.beam < 0 || p.beam > LAYA_MAX_CANDIDATES ||
        !(p.prefetch_ms >= 0 && p.prefetch_ms <= 1e6) ||
        (p.doc_cache_bytes != 0 && (p.doc_cache_bytes < DC_WINDOW_MIN || p.doc_cache_bytes > (int32_t)DC_WINDOW_MAX)))
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG,
                        "session params out of range (mode %d, n_candidates %d, max_tokens %d, max_kv_size %d, "
                        "max_text %d, doc_cache_bytes %d: 0 or %d..%d)",
                        p.mode, p.n_candidates, p.max_tokens, p.max_kv_size, p.max_text, p.doc_cache_bytes,
                        (int)DC_WINDOW_MIN, (int)DC_WINDOW_MAX);
    if (p.max_kv_size <= p.max_tokens + 8)
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "max_kv_size %d leaves no room for a prompt", p.max_kv_size);
    return LAYA_OK;
}

/* Every buffer the keystroke path uses, sized from the params: nothing is allocated after create. */
static laya_status alloc_buffers(laya_session *s) {
    const laya_session_params p = s->p;
    size_t mt = (size_t)p.max_text, nv = (size_t)s->n_vocab, ns = (size_t)s->n_slots;
    s->tx.prompt_cap = mt + 1 + 3 * mt + 3 * mt / 4 + 16;
    s->sl.ptok_cap = (int32_t)(s->tx.prompt_cap + 16);
    s->tw = tok_work_new();
    s->tx.norm = laya_malloc(3 * mt + 4);
    s->tx.map = laya_malloc((3 * mt + 4) * sizeof(uint32_t));
    s->tx.after = laya_malloc(3 * mt / 4 + 16);
    s->tx.amap = laya_malloc((3 * mt / 4 + 16) * sizeof(uint32_t));
    s->tx.ctxt = laya_malloc(mt + 1);
    s->tx.prompt = laya_malloc(s->tx.prompt_cap);
    s->tx.guess = laya_malloc(3 * mt + 2 * LAYA_CANDIDATE_MAX_BYTES + 3 * mt / 4 + 16);
    s->sl.ptok = laya_malloc((size_t)s->sl.ptok_cap * sizeof(laya_token));
    s->co.ctok = laya_malloc((size_t)s->sl.ptok_cap * sizeof(laya_token));
    s->bm.live = laya_calloc(ns, sizeof(hyp));
    s->bm.next = laya_calloc(ns, sizeof(hyp));
    s->bm.pool = laya_calloc(ns * ns, sizeof(hyp));
    s->bm.fins = laya_calloc(FIN_MAX, sizeof(fin));
    s->allowed = laya_malloc(nv * sizeof(laya_token));
    s->vals = laya_malloc(nv * sizeof(float));
    s->sl.pre_logits = laya_malloc(nv * sizeof(float));
    if (nc_alloc(&s->nc, s->n_vocab)) return LAYA_ERR_NOMEM;
    s->co.memo = laya_calloc(CO_MEMO_MAX, sizeof(corr_memo));
    s->tx.raw = laya_malloc(mt + 8);
    s->tx.raw_after = laya_malloc(mt / 4 + 8);
    s->pf.text = laya_malloc(3 * mt + 2 * LAYA_CANDIDATE_MAX_BYTES + 16);
    if (!s->co.memo || !s->tx.raw || !s->tx.raw_after || !s->pf.text) return LAYA_ERR_NOMEM;
    s->b_tok = laya_malloc((size_t)s->max_batch * sizeof(laya_token));
    s->b_seq = laya_malloc((size_t)s->max_batch * sizeof(int32_t));
    s->b_want = laya_malloc((size_t)s->max_batch);
    if (!s->tw || !s->tx.norm || !s->tx.map || !s->tx.after || !s->tx.amap || !s->tx.ctxt || !s->tx.prompt || !s->tx.guess || !s->sl.ptok || !s->co.ctok ||
        !s->bm.live || !s->bm.next || !s->bm.pool || !s->bm.fins || !s->allowed || !s->vals || !s->sl.pre_logits || !s->b_tok ||
        !s->b_seq || !s->b_want)
        return LAYA_ERR_NOMEM;
    for (int i = 0; i < s->n_slots + TYPO_SLOTS; i++)
        if (!(s->sl.tok[i] = laya_malloc((size_t)p.max_kv_size * sizeof(laya_token)))) return LAYA_ERR_NOMEM;
    if (tok_work_reserve(s->tw, s->tx.prompt_cap)) return LAYA_ERR_NOMEM;
    return LAYA_OK;
}

/* The special tokens of the prompt contract (docs/FORMAT.md), and how the tokenizer treats a leading space. */
static void special_tokens(laya_session *s) {
    const laya_model *m = s->m;
    const tok_vocab *tv = m->tok;
    s->t_start = find_token(m, "<|endoftext|>");
    if (s->t_start < 0) s->t_start = tok_bos(tv) >= 0 ? tok_bos(tv) : tok_eos(tv);
    s->t_mode[LAYA_MODE_TEXT] = find_token(m, "<|prose|>");
    s->t_mode[LAYA_MODE_CODE] = find_token(m, "<|code|>");
    s->t_mode[LAYA_MODE_SHELL] = find_token(m, "<|shell|>");
    s->t_zh = find_token(m, "<|zh|>");
    s->t_fim_pre = find_token(m, "<|fim_prefix|>");
    s->t_fim_suf = find_token(m, "<|fim_suffix|>");
    s->t_fim_mid = find_token(m, "<|fim_middle|>");
    {
        laya_token t[4];
        size_t nt = 0;
        if (tok_encode_work(tv, s->tw, "a", 1, 0, t, 4, &nt) == LAYA_OK && nt >= 1) {
            size_t pl;
            const char *pc = laya_token_piece(m, t[0], &pl);
            s->spm_space = pc && pl >= 1 && pc[0] == ' ';
        }
    }
    {   /* is the focused output layer there? (it may be missing on an older build of forward.c) */
        laya_token t0 = s->t_start >= 0 ? s->t_start : 0;
        int32_t seq0 = 0;
        int8_t w = LAYA_WANT_HIDDEN;
        laya_batch b = {1, &t0, &seq0, &w};
        float v;
        s->use_subset = laya_decode(s->ctx, b) == LAYA_OK && laya_get_logits_subset(s->ctx, 0, &t0, 1, &v) == LAYA_OK;
        laya_seq_truncate(s->ctx, 0, 0);
    }
}

static laya_status open_caches(laya_session *s, const char *user_dict, char *err, size_t errlen) {
    laya_status st;
    if (user_dict && !s->p.sensitive) { /* a sensitive field neither reads nor writes the user's words */
        char e2[LAYA_ERR_MSG_MAX];
        ud_params up = ud_default_params();
        s->cm.ud_z = -1;
        if ((st = ud_open(user_dict, &up, &s->cm.ud, e2, sizeof e2)))
            return laya_err(err, errlen, st, "user dictionary '%s': %s", user_dict, e2);
    }
    if (s->p.mode == LAYA_MODE_TEXT && !s->p.sensitive && s->p.doc_cache_bytes > 0 &&
        (st = dc_create((size_t)s->p.doc_cache_bytes, &s->cm.dc)))
        return laya_err(err, errlen, st, "out of memory for the document cache");
    if (s->p.mode == LAYA_MODE_TEXT && (st = co_build_user_words(s)))
        return laya_err(err, errlen, st, "out of memory building the word list");
    return LAYA_OK;
}

/* Touch every weight page and every code path once: a word to complete, then a next word. */
static laya_status warm_up(laya_session *s, char *err, size_t errlen) {
    static const char *const warm[] = {"The quick brown fo", "The quick brown fox "};
    const laya_candidate *c;
    int32_t n;
    laya_status st;
    for (int i = 0; i < 2; i++) {
        if ((st = set_text_window(s, warm[i], strlen(warm[i]), strlen(warm[i]), "", 0)) ||
            (st = laya_session_suggest(s, &c, &n)))
            return laya_err(err, errlen, st, "warm-up failed: %s", s->err);
    }
    set_text_window(s, "", 0, 0, "", 0);
    memset(&s->st, 0, sizeof s->st);
    s->dl.step_ms = 0; /* the warm-up's steps ran on cold caches: no prediction from them */
    s->dl.n_hist = 0;
    return LAYA_OK;
}

laya_status laya_session_create(const laya_model *m, laya_session_params p, laya_session **out, char *err,
                                size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!m) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "model is NULL");
    if (m->vocab_only) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "model was loaded vocab-only");
    laya_status st_abi = laya_check_abi(p.abi, "session", err, errlen);
    if (st_abi) return st_abi;
    laya_status st = check_params(&p, err, errlen);
    if (st) return st;
    laya_session *s = laya_calloc(1, sizeof *s);
    if (!s) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    s->m = m;
    s->p = p;
    s->p.user_dict = NULL;
    s->n_vocab = laya_n_vocab(m);
    s->n_slots = p.beam > 0 ? p.beam : LAYA_MAX(p.n_candidates, 8);
    s->max_tokens = p.max_tokens;
    s->sl.pre_n = -1;
    s->log_min_prob = p.min_prob > 0 ? log(p.min_prob) : -INFINITY;
    s->norm_flags = p.normalize == LAYA_NORM_MODE_DEFAULT
                        ? (p.mode == LAYA_MODE_TEXT ? LAYA_NORM_FULLWIDTH | LAYA_NORM_ZERO_WIDTH | LAYA_NORM_SPACES
                                                    : LAYA_NORM_FULLWIDTH | LAYA_NORM_ZERO_WIDTH)
                        : p.normalize & (LAYA_NORM_FULLWIDTH | LAYA_NORM_ZERO_WIDTH | LAYA_NORM_SPACES);
    s->max_batch = LAYA_MAX(CHUNK, s->n_slots * (CATCHUP_ROOM + p.max_tokens + 1));
    s->max_batch = LAYA_MAX(s->max_batch, (s->n_slots + TYPO_SLOTS) * (CATCHUP_ROOM + TYPO_TOK + 2));
    laya_context_params cp = {.abi = LAYA_ABI_VERSION, .n_seq = s->n_slots + TYPO_SLOTS, .max_kv_size = p.max_kv_size,
                              .max_batch = s->max_batch, .max_logits = (s->n_slots + TYPO_SLOTS) * (TYPO_TOK + 1),
                              .kv_type = p.kv_type};
    st = laya_context_create(m, cp, &s->ctx, err, errlen);
    if (st) goto fail;
    if ((st = alloc_buffers(s))) goto nomem;
    if (p.resources) {
        if (p.resources->m != m) {
            st = laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "params.resources belong to another model");
            goto fail;
        }
        s->res = p.resources;
    } else if ((st = res_build(m, p.mode == LAYA_MODE_TEXT, &s->own_res))) {
        laya_err(err, errlen, st, "out of memory building the typing resources");
        goto fail;
    } else {
        s->res = s->own_res;
    }
    s->vt = &s->res->vt;
    s->tflag = s->res->tflag;
    if (p.mode == LAYA_MODE_TEXT) s->co.words = s->res->words;
    special_tokens(s);
    load_calibration(s);
    if ((st = open_caches(s, p.user_dict, err, errlen))) goto fail;
    if (p.warmup && (st = warm_up(s, err, errlen))) goto fail;
    *out = s;
    return LAYA_OK;
nomem:
    st = LAYA_ERR_NOMEM;
    laya_err(err, errlen, st, "out of memory creating a session");
fail:
    laya_session_free(s);
    return st;
}

laya_status laya_session_set_calibration(laya_session *s, const float *x, const float *y, int32_t n) {
    if (!s) return LAYA_ERR_INVALID_ARG;
    if (n == 0) {
        s->cal_n = 0;
        return LAYA_OK;
    }
    if (n < 2 || n > CAL_MAX || !x || !y)
        return laya_err(s->err, sizeof s->err, LAYA_ERR_INVALID_ARG, "calibration needs 2..%d points", CAL_MAX);
    for (int32_t i = 0; i < n; i++) {
        if (!(x[i] >= 0 && x[i] <= 1 && y[i] >= 0 && y[i] <= 1) || (i > 0 && (x[i] <= x[i - 1] || y[i] < y[i - 1])))
            return laya_err(s->err, sizeof s->err, LAYA_ERR_INVALID_ARG,
                            "calibration point %d: x must increase and y not decrease, both in [0, 1]", i);
    }
    memcpy(s->cal_x, x, (size_t)n * sizeof *x);
    memcpy(s->cal_y, y, (size_t)n * sizeof *y);
    s->cal_n = n;
    return LAYA_OK;
}

static float calibrate(const laya_session *s, float p) {
    if (s->cal_n == 0) return p;
    if (p <= s->cal_x[0]) return s->cal_y[0];
    for (int32_t i = 1; i < s->cal_n; i++)
        if (p <= s->cal_x[i]) {
            float t = (p - s->cal_x[i - 1]) / (s->cal_x[i] - s->cal_x[i - 1]);
            return s->cal_y[i - 1] + t * (s->cal_y[i] - s->cal_y[i - 1]);
        }
    return s->cal_y[s->cal_n - 1];
}

void laya_session_get_stats(const laya_session *s, laya_session_stats *out) {
    if (!out) return;
    if (!s) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = s->st;
}

laya_status laya_session_set_context(laya_session *s, const char *text, size_t len) {
    if (!s || (!text && len)) return LAYA_ERR_INVALID_ARG;
    size_t mt = (size_t)s->p.max_text;
    if (len > mt) {
        size_t skip = tc_utf8_cut_start(text, len, len - mt);
        text += skip;
        len -= skip;
    }
    if (len) memcpy(s->tx.ctxt, text, len);
    s->tx.ctxt_len = (int32_t)len;
    return LAYA_OK;
}

/* set_text of the caller's text (the document cache aside: the caller updates it): before is the end of a
 * text of full_len bytes, from its byte full_len - before_len on. */
static laya_status set_text_window(laya_session *s, const char *before, size_t before_len, size_t full_len,
                                   const char *after, size_t after_len) {
    if (!before) before = "";
    /* Kept for prefetch, which decides guessed texts and then comes back to this one. */
    size_t mt = (size_t)s->p.max_text, base = full_len - before_len, cut = tw_start(before, base, full_len, mt);
    size_t an = tc_utf8_cut_end(after, after_len, LAYA_MIN(after_len, mt / 4));
    s->tx.raw_len = full_len - cut;
    if (s->tx.raw_len) memcpy(s->tx.raw, before + (cut - base), s->tx.raw_len);
    s->tx.raw_after_len = an;
    if (an) memcpy(s->tx.raw_after, after, an);
    s->tx.full = full_len;
    s->tx.cut = cut;
    s->have_text = 1;
    s->decided = 0;
    s->has_cands = 0;
    s->pf.n = -1;
    s->nc.cur = ((s->nc.cur >> 32) + 1) << 32 | NC_PRI_OWN; /* a new keystroke */
    laya_status st = tw_set_text(s, s->tx.raw, s->tx.raw_len, s->tx.raw_after, s->tx.raw_after_len);
    s->st.truncated |= cut > 0 || an < after_len;
    return st;
}

laya_status laya_session_set_text(laya_session *s, const char *before, size_t before_len, const char *after,
                                  size_t after_len) {
    return laya_session_set_text_tail(s, before, before_len, before_len, after, after_len);
}

size_t laya_session_tail_bytes(const laya_session *s) {
    if (!s) return 0;
    return LAYA_MAX((size_t)s->p.max_text, dc_span(s->cm.dc));
}

laya_status laya_session_set_text_tail(laya_session *s, const char *tail, size_t tail_len, size_t before_len,
                                       const char *after, size_t after_len) {
    if (!s) return LAYA_ERR_INVALID_ARG;
    if ((!tail && tail_len) || (!after && after_len))
        return laya_err(s->err, sizeof s->err, LAYA_ERR_INVALID_ARG, "NULL text with a nonzero length");
    if (tail_len > before_len || tail_len < LAYA_MIN(before_len, laya_session_tail_bytes(s)))
        return laya_err(s->err, sizeof s->err, LAYA_ERR_INVALID_ARG,
                        "tail of %zu bytes of a text of %zu: need all of it or the last %zu bytes", tail_len,
                        before_len, laya_session_tail_bytes(s));
    atomic_store(&s->interrupted, 0); /* a new text: the next decision is a new one */
    dc_update(s->cm.dc, tail, tail_len, before_len - tail_len);
    return set_text_window(s, tail, tail_len, before_len, after, after_len);
}

void laya_session_interrupt(laya_session *s) {
    if (!s) return;
    atomic_store(&s->interruptible, 1);
    atomic_store(&s->interrupted, 1);
}

/* One decision on the current text: the prompt's new tokens, the beam, the correction of the word just
 * finished, the cache models, then the k best, a correction first. */
laya_status ses_decide(laya_session *s) {
    s->bm.n_fins = 0;
    s->out.n = 0;
    s->bm.typed_lp = -INFINITY;
    s->bm.typed_fin.punct_len = 0;
    s->bm.typed_fin.punct_p = 0;
    s->st.n_decoded = s->st.n_steps = s->st.deadline_hit = 0;
    if (!s->sl.prompt_dirty) s->st.n_computed = 0;
    else {
        laya_status st = sl_sync_prompt(s);
        if (st) return st;
        if (s->sl.prompt_dirty) s->st.deadline_hit = 1; /* out of time (or interrupted) in the prefill */
    }
    if (s->sh.no_cands || s->sl.pre_n != s->sl.n_ptok || s->sl.n_ptok == 0) return LAYA_OK;
    laya_status st = bm_search(s);
    if (st) return st;
    s->co.found.n = 0;
    if (s->sh.last_ws >= 0 && !dl_stop_now(s, 0) && (st = co_decide(s))) return st;
    if (s->co.found.n) { /* a correction goes first: it is about what was already typed */
        s->out.c[0] = s->co.found.c[0];
        memcpy(s->out.text[0], s->co.found.text[0], (size_t)s->co.found.c[0].text_len + 1);
        s->out.c[0].text = s->out.text[0];
        s->out.n = 1;
    }
    cm_mix(s);
    qsort(s->bm.fins, (size_t)s->bm.n_fins, sizeof(fin), bm_cmp_fin);
    for (int32_t i = 0; i < s->bm.n_fins && s->out.n < s->p.n_candidates; i++) {
        const fin *f = &s->bm.fins[i];
        int32_t k = s->out.n++;
        laya_candidate *c = &s->out.c[k];
        memcpy(s->out.text[k], f->text, (size_t)f->len + 1);
        c->text = s->out.text[k];
        c->text_len = f->len;
        c->replace = s->sh.kind == LAYA_KIND_COMPLETE ? s->sh.replace : 0;
        c->replace_bytes = s->sh.kind == LAYA_KIND_COMPLETE ? s->sh.replace_bytes : 0;
        c->kind = s->sh.kind;
        c->prob = (float)LAYA_MIN(1.0, exp(f->logp));
        c->confidence = calibrate(s, c->prob);
    }
    return LAYA_OK;
}

/* The decision for the current text was made: prefetch plans from it, or finishes it first if the
 * deadline cut it short. */
static void decided(laya_session *s) {
    s->decided = !s->st.deadline_hit;
    s->pf.n = -1;
}

laya_status laya_session_suggest(laya_session *s, const laya_candidate **out, int32_t *n) {
    if (out) *out = NULL;
    if (n) *n = 0;
    if (!s || !out || !n) return LAYA_ERR_INVALID_ARG;
    s->dl.t0 = laya_now_ms();
    laya_status st = ses_decide(s);
    s->st.last_ms = laya_now_ms() - s->dl.t0;
    if (st) return st;
    decided(s);
    s->has_cands = 1;
    *out = s->out.c;
    *n = s->out.n;
    return LAYA_OK;
}

laya_status laya_session_learn(laya_session *s, const char *text, size_t len) {
    if (!s || (!text && len)) return LAYA_ERR_INVALID_ARG;
    if (s->p.sensitive || !s->cm.ud || len == 0) return LAYA_OK;
    laya_status st = ud_learn(s->cm.ud, text, len);
    s->cm.ud_z = -1; /* on an error too: memory was reloaded from the file */
    if (st) return laya_err(s->err, sizeof s->err, st, "user dictionary: %s", ud_error(s->cm.ud));
    return LAYA_OK;
}

laya_status laya_session_accept(laya_session *s, int32_t i) {
    if (!s) return LAYA_ERR_INVALID_ARG;
    const cand_buf *cb = &s->out;
    if (i < 0 || i >= cb->n)
        return laya_err(s->err, sizeof s->err, LAYA_ERR_INVALID_ARG, "no candidate %d in the last decision", i);
    const laya_candidate *c = &cb->c[i];
    if (!s->p.sensitive && s->cm.ud) { /* a sensitive field never learns */
        laya_status st = ud_learn(s->cm.ud, c->text, (size_t)c->text_len);
        s->cm.ud_z = -1;
        if (st) return laya_err(s->err, sizeof s->err, st, "user dictionary: %s", ud_error(s->cm.ud));
    }
    /* Keep the cache warm: compute the prompt of the text the caller will most likely send next (the
     * candidate in place, then a space), off the keystroke path. */
    int32_t start = c->kind == LAYA_KIND_CORRECT ? s->sh.last_ws : c->kind == LAYA_KIND_COMPLETE ? s->sh.word_start
                                                                                              : s->tx.norm_len;
    if (start < 0) return LAYA_OK;
    size_t n = (size_t)start;
    memcpy(s->tx.guess, s->tx.norm, n);
    memcpy(s->tx.guess + n, c->text, (size_t)c->text_len);
    n += (size_t)c->text_len;
    if (c->kind != LAYA_KIND_CORRECT && s->tx.guess[n - 1] != ' ') s->tx.guess[n++] = ' ';
    char *after = s->tx.guess + n; /* set_text normalizes into s->tx.after: give it a copy */
    memcpy(after, s->tx.after, (size_t)s->tx.after_len);
    laya_status st = set_text_window(s, s->tx.guess, n, n, after, (size_t)s->tx.after_len); /* a guess: not the document */
    return st ? st : sl_sync_prompt(s);
}

laya_status laya_session_prefetch(laya_session *s, double budget_ms, int32_t *n_done, int32_t *n_left) {
    if (n_done) *n_done = 0;
    if (n_left) *n_left = 0;
    if (!s || !(budget_ms >= 0 && budget_ms <= 1e9)) return LAYA_ERR_INVALID_ARG;
    if (!s->have_text || budget_ms == 0) return LAYA_OK;
    return pf_run(s, laya_now_ms() + budget_ms, n_done, n_left);
}

laya_status laya_session_candidates(const laya_session *s, const laya_candidate **out, int32_t *n, int *complete) {
    if (out) *out = NULL;
    if (n) *n = 0;
    if (complete) *complete = 0;
    if (!s || !out || !n) return LAYA_ERR_INVALID_ARG;
    if (!s->has_cands) return LAYA_OK;
    *out = s->out.c;
    *n = s->out.n;
    if (complete) *complete = s->decided;
    return LAYA_OK;
}
