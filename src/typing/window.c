/* window.c — the text window and the prompt (window.h). Not here: decoding the prompt (slots.c). */
#include "typing/window.h"

#include "typing/session.h"
#include "typing/normalize.h"
#include "typing/textclass.h"

/* Where the model's view of a text of n bytes begins, before tw_start's move to a word start: in
 * steps of max_text / 2, so that typing keeps the cache. Prefetch's guesses that keep this step are the
 * ones whose prompt can be the one the caller's text will give. */
size_t tw_step_cut(size_t n, size_t max_text) {
    if (n <= max_text) return 0;
    size_t step = max_text / 2;
    return ((n - max_text + step - 1) / step) * step;
}

/* ... and there: a function of the text alone, so that a fresh session and a long-lived one agree. The
 * text is n bytes; t holds its end from byte base on (base <= n - max_text when n > max_text). */
size_t tw_start(const char *t, size_t base, size_t n, size_t max_text) {
    if (n <= max_text) return 0;
    size_t cut = base + tc_utf8_cut_start(t, n - base, tw_step_cut(n, max_text) - base);
    for (size_t i = cut; i < n && i < cut + 32; i++)
        if (t[i - base] == ' ' || t[i - base] == '\n') return i + 1;
    return cut;
}

laya_status tw_tokenize(laya_session *s, const char *t, size_t n, laya_token *dst, int32_t *k) {
    size_t got = 0;
    if (n == 0) return LAYA_OK;
    laya_status st = tok_encode_work(s->m->tok, s->tw, t, n, 0, dst + *k, (size_t)(s->sl.ptok_cap - *k), &got);
    if (st) return laya_err(s->err, sizeof s->err, st, "tokenizer: %s", laya_status_str(st));
    *k += (int32_t)got;
    return LAYA_OK;
}

static laya_status tokenize_into(laya_session *s, const char *t, size_t n, int32_t *k) {
    return tw_tokenize(s, t, n, s->sl.ptok, k);
}

/* The text (the caller's window, or a guess of prefetch's) into norm, the shape of the decision, and the
 * prompt's tokens; what is decoded waits for the decision (prompt_dirty), inside its deadline. */
laya_status tw_set_text(laya_session *s, const char *before, size_t before_len, const char *after,
                        size_t after_len) {
    size_t mt = (size_t)s->p.max_text;
    size_t cut = tw_start(before, 0, before_len, mt);
    s->st.truncated = cut > 0;
    const char *raw = before + cut;
    size_t raw_len = before_len - cut;
    s->tx.norm_len = (int32_t)nz_normalize(raw, raw_len, s->norm_flags, s->tx.norm, s->tx.map);
    size_t an = tc_utf8_cut_end(after, after_len, LAYA_MIN(after_len, mt / 4));
    s->st.truncated |= an < after_len;
    s->tx.after_len = an ? (int32_t)nz_normalize(after, an, s->norm_flags, s->tx.after, s->tx.amap) : 0;
    an_typed(&s->sh, s->tx.norm, s->tx.norm_len, s->tx.map, raw, raw_len, s->p.mode, s->p.max_tokens,
             s->tx.ctxt_len == 0 && s->spm_space);
    an_last_word(&s->sh, s->tx.norm, s->tx.norm_len, s->tx.map, raw, raw_len, s->co.words != NULL);

    /* The prompt: start token, mode token, context, then the text up to the anchor (FIM: with the suffix). */
    int32_t k = 0;
    laya_status st;
    if (s->t_start >= 0) s->sl.ptok[k++] = s->t_start;
    laya_token mode_tok = s->t_mode[s->p.mode];
    if (s->p.mode == LAYA_MODE_TEXT && s->t_zh >= 0) {
        int32_t cjk = 0, all = 0; /* Chinese text gets the model's Chinese mode */
        for (int32_t i = 0; i < s->tx.norm_len;) {
            size_t j = (size_t)i;
            uint32_t c = nz_next(s->tx.norm, (size_t)s->tx.norm_len, &j);
            i = (int32_t)j;
            if (c > ' ') all++, cjk += tc_is_cjk(c);
        }
        if (all > 0 && 3 * cjk >= all) mode_tok = s->t_zh;
    }
    if (mode_tok >= 0) s->sl.ptok[k++] = mode_tok;
    /* Fill-in-the-middle only with a suffix to fill towards: with nothing after the cursor a FIM prompt
     * asks for a "middle" (in training, a random span that often starts inside a word) and the plain
     * prefix is the better question. */
    int after_text = 0;
    for (int32_t i = 0; i < s->tx.after_len && !after_text; i++)
        after_text = s->tx.after[i] != ' ' && s->tx.after[i] != '\t' && s->tx.after[i] != '\n' && s->tx.after[i] != '\r';
    int fim = s->p.mode == LAYA_MODE_CODE && after_text && s->t_fim_pre >= 0 && s->t_fim_suf >= 0 && s->t_fim_mid >= 0;
    if (fim) s->sl.ptok[k++] = s->t_fim_pre;
    int32_t n_start = k;
    int dropped = 0;
    size_t pl = 0;
    if (s->tx.ctxt_len) {
        memcpy(s->tx.prompt, s->tx.ctxt, (size_t)s->tx.ctxt_len);
        pl = (size_t)s->tx.ctxt_len;
        if (s->tx.prompt[pl - 1] != '\n') s->tx.prompt[pl++] = '\n';
    }
    memcpy(s->tx.prompt + pl, s->tx.norm, (size_t)s->sh.anchor);
    pl += (size_t)s->sh.anchor;
    if ((st = tokenize_into(s, s->tx.prompt, pl, &k))) return st;
    /* Keep the prompt within the cache: drop the oldest tokens (after the start tokens). */
    int32_t limit = s->p.max_kv_size - s->max_tokens - 2 - (fim ? 2 + s->p.max_text / 16 : 0);
    if (k > limit) {
        /* in steps of limit / 2, so that typing at the end keeps the same start (and the cache) */
        int32_t step = LAYA_MAX(1, limit / 2), drop = ((k - limit + step - 1) / step) * step;
        drop = LAYA_MIN(drop, k - n_start);
        dropped = 1;
        memmove(s->sl.ptok + n_start, s->sl.ptok + n_start + drop, (size_t)(k - n_start - drop) * sizeof(laya_token));
        k -= drop;
        s->st.truncated = 1;
    }
    if (fim) {
        s->sl.ptok[k++] = s->t_fim_suf;
        int32_t k0 = k;
        if ((st = tokenize_into(s, s->tx.after, (size_t)s->tx.after_len, &k))) return st;
        if (k - k0 > s->p.max_text / 16) k = k0 + s->p.max_text / 16;
        s->sl.ptok[k++] = s->t_fim_mid;
    }
    if (k == 0) s->sh.no_cands = 1; /* no start token and no text: nothing to condition on */
    if (s->sh.last_ws >= 0 && !fim) {
        /* the prompt before the last word: the context its corrections are scored in */
        int32_t kc = n_start;
        memcpy(s->co.ctok, s->sl.ptok, (size_t)n_start * sizeof(laya_token));
        size_t cl = pl - (size_t)s->sh.anchor + (size_t)s->sh.last_anchor;
        if (dropped || (st = tw_tokenize(s, s->tx.prompt, cl, s->co.ctok, &kc)) ||
            sl_lcp(s->co.ctok, kc, s->sl.ptok, k) < kc || kc < 1)
            s->sh.last_ws = -1;
        s->co.n_ctok = kc;
    }
    s->sl.n_ptok = k;
    uint64_t h = NC_KEY0;
    for (int32_t i = 0; i < k; i++) h = nc_key_mix(h, s->sl.ptok[i]);
    s->sl.p_key = h;
    s->sl.prompt_dirty = 1; /* the prompt's new tokens are decoded by the decision, inside its deadline */
    return LAYA_OK;
}
