/* slots.c — sequence slots and their KV cache (slots.h): the prompt's prefill, slot preparation (common
 * prefix, fork, truncate, fill the batch) and a beam step's batch. Not here: the beam's choices (beam.c). */
#include "typing/slots.h"

#include "typing/session.h"

int32_t sl_lcp(const laya_token *a, int32_t na, const laya_token *b, int32_t nb) {
    int32_t i = 0, n = LAYA_MIN(na, nb);
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* Tokens slot j holds of prompt + c's tokens. */
static int32_t lcp_slot(const laya_session *s, int32_t j, const hyp *c) {
    int32_t nP = s->sl.n_ptok, n = s->sl.n[j], i = sl_lcp(s->sl.tok[j], LAYA_MIN(n, nP), s->sl.ptok, nP);
    if (i < nP) return i;
    while (i < n && i - nP < c->n_tok && s->sl.tok[j][i] == c->tok[i - nP]) i++;
    return i;
}

/* Decode the prompt's tokens from position l into its slot; with logits, the last row's go to pre_logits.
 * *done = 0 when can_stop let the deadline (or an interrupt) cut it short. */
static laya_status prefill(laya_session *s, int32_t l, int logits, int can_stop, int *done) {
    int32_t nP = s->sl.n_ptok, j = s->sl.ps;
    *done = 0;
    laya_status st = laya_seq_truncate(s->ctx, j, l);
    if (st) return laya_err(s->err, sizeof s->err, st, "%s", laya_context_error(s->ctx));
    s->sl.n[j] = l;
    while (l < nP) {
        /* A decision (or a prefetch) stops its prefill when interrupted or out of time; what is done stays
         * cached and the next keystroke goes on from there. With a stop to honour, smaller chunks: the
         * stop is checked between them. */
        int32_t chunk = can_stop && (s->p.deadline_ms > 0 || atomic_load(&s->interruptible) || s->pf.active) ? CHUNK / 4 : CHUNK;
        int32_t n = LAYA_MIN(chunk, nP - l);
        if (can_stop && l > s->st.n_reused && dl_stop_now(s, dl_step_estimate(s, n))) {
            s->st.deadline_hit = 1;
            return LAYA_OK;
        }
        for (int32_t i = 0; i < n; i++) {
            s->b_tok[i] = s->sl.ptok[l + i];
            s->b_seq[i] = j;
            s->b_want[i] = (logits && l + i == nP - 1) ? LAYA_WANT_LOGITS : 0;
        }
        laya_batch b = {n, s->b_tok, s->b_seq, s->b_want};
        double t0 = laya_now_ms();
        if ((st = laya_decode(s->ctx, b)))
            return laya_err(s->err, sizeof s->err, st, "decode: %s", laya_context_error(s->ctx));
        if (n <= 8) dl_step_learn(s, laya_now_ms() - t0, n); /* a step of the size a decision takes: keeps the estimate fresh */
        memcpy(s->sl.tok[j] + l, s->sl.ptok + l, (size_t)n * sizeof(laya_token));
        l += n;
        s->sl.n[j] = l;
        s->st.n_computed += n;
        if (logits && l == nP) memcpy(s->sl.pre_logits, laya_get_logits(s->ctx, n - 1), (size_t)s->n_vocab * sizeof(float));
    }
    s->sl.kv_lag = 0;
    *done = 1;
    return LAYA_OK;
}

/* Bring a slot to the prompt and have the logits after it: only the tokens past the longest common prefix
 * run. The slot holding most of the prompt becomes the prompt's slot: after a guessed text was decided
 * (prefetch), or after a hypothesis that is now the prompt (a word finished as a candidate had it), the
 * new prompt is often held whole by some slot, and its logits are in the node cache. */
laya_status sl_sync_prompt(laya_session *s) {
    int32_t nP = s->sl.n_ptok, nsl = s->n_slots + TYPO_SLOTS;
    s->st.n_prompt = nP;
    s->st.n_computed = 0;
    if (nP == 0) {
        s->sl.pre_n = -1;
        s->st.n_reused = 0;
        return LAYA_OK;
    }
    int32_t best = s->sl.ps, l = sl_lcp(s->sl.tok[s->sl.ps], s->sl.n[s->sl.ps], s->sl.ptok, nP);
    for (int32_t k = 0; k < nsl; k++) {
        int32_t lk = sl_lcp(s->sl.tok[k], s->sl.n[k], s->sl.ptok, nP);
        if (lk > l) l = lk, best = k;
    }
    s->st.n_reused = l;
    s->sl.ps = best;
    if (l == nP) s->sl.kv_lag = 0;
    s->sl.prompt_dirty = 0; /* (set again below if the prefill is cut short) */
    if (l == nP && s->sl.pre_n == nP && s->sl.pre_key == s->sl.p_key) return LAYA_OK;
    int32_t e = nc_find(s, s->sl.p_key, nP);
    if (e >= 0) {
        /* Known logits: a decision that finds all its hypotheses in the node cache needs nothing more, so
         * the rest of the prompt's KV waits for a decode step that needs it (sl_prompt_kv). */
        memcpy(s->sl.pre_logits, s->nc.logits + (size_t)e * (size_t)s->n_vocab, (size_t)s->n_vocab * sizeof(float));
        s->nc.clock++;
        nc_touch(s, e);
        s->sl.pre_n = nP;
        s->sl.pre_key = s->sl.p_key;
        s->sl.kv_lag = l < nP;
        return LAYA_OK;
    }
    if (l >= nP) l = nP - 1;
    s->sl.pre_n = -1;
    int done = 0;
    laya_status st = prefill(s, l, 1, 1, &done);
    if (st || !done) {
        s->sl.prompt_dirty = 1;
        return st;
    }
    s->sl.pre_n = nP;
    s->sl.pre_key = s->sl.p_key;
    s->nc.clock++;
    nc_put(s, s->sl.p_key, nP, s->sl.pre_logits);
    return LAYA_OK;
}

/* Before a decode step that reads the prompt's slot: its KV up to the whole prompt. */
laya_status sl_prompt_kv(laya_session *s) {
    if (!s->sl.kv_lag) return LAYA_OK;
    int32_t l = sl_lcp(s->sl.tok[s->sl.ps], s->sl.n[s->sl.ps], s->sl.ptok, s->sl.n_ptok);
    int done;
    return prefill(s, LAYA_MIN(l, s->sl.n_ptok - 1), 0, 0, &done); /* a few tokens: not worth stopping for */
}

/* Decode the new hypotheses in one batch: each goes to its parent's slot if free, else to the free slot
 * sharing most of its tokens (every slot starts with the prompt, copied from the prompt's slot when far
 * behind). */
laya_status sl_decode_hyps(laya_session *s, hyp *hs, int32_t n) {
    int taken[MAX_SLOTS] = {0}, placed[MAX_SLOTS] = {0};
    int32_t rows = 0, nP = s->sl.n_ptok;
    laya_status st;
    s->nc.clock++;
    /* Hypotheses decoded before (since the prompt last changed): their logits are in the node cache. */
    for (int32_t i = 0; i < n; i++) {
        hyp *c = &hs[i];
        int32_t e = c->n_tok > 0 ? nc_find(s, c->key, nP + c->n_tok) : -1;
        if (e < 0) continue;
        placed[i] = 1;
        c->row = NC_ROW0 - e;
        c->hidden = 0;
        nc_touch(s, e);
    }
    for (int32_t i = 0; i < n && s->sl.kv_lag; i++)
        if (!placed[i] && (st = sl_prompt_kv(s))) return st;
    for (int32_t i = 0; i < n; i++) {
        if (placed[i]) continue;
        hyp *c = &hs[i];
        int32_t j = c->slot;
        if (taken[j]) {
            int32_t best = -1, bl = -1;
            for (int32_t k = 0; k < s->n_slots; k++) {
                if (taken[k]) continue;
                int32_t l = lcp_slot(s, k, c);
                if (l > bl) bl = l, best = k;
            }
            j = best;
        }
        taken[j] = 1;
        c->slot = j;
        int32_t xn = nP + c->n_tok, l = lcp_slot(s, j, c);
        if (l >= xn) l = xn - 1;
        int want = LAYA_WANT_LOGITS;
        if (s->use_subset && s->p.focused_output && c->n_tok > 0 && c->gen_len < s->sh.heal_len &&
            vt_count_consistent(s->vt, s->sh.heal + c->gen_len, (size_t)(s->sh.heal_len - c->gen_len)) <= s->n_vocab / 8)
            want = LAYA_WANT_HIDDEN;
        /* a slot other than the prompt's copies the prompt's positions it lacks rather than decoding them
         * again: after a word they would be most of a first step's rows */
        if ((st = sl_prepare(s, j, s->sl.ptok, nP, c->tok, c->n_tok, l, j != s->sl.ps ? nP : 0, xn - 1, (int8_t)want,
                             &rows)))
            return st;
        c->row = rows - 1;
        c->hidden = want == LAYA_WANT_HIDDEN;
    }
    if (rows == 0) return LAYA_OK;
    laya_batch b = {rows, s->b_tok, s->b_seq, s->b_want};
    if ((st = laya_decode(s->ctx, b))) {
        sl_forget_batch(s); /* the batch did not run: forget what the slots were to hold */
        return laya_err(s->err, sizeof s->err, st, "decode: %s", laya_context_error(s->ctx));
    }
    for (int32_t i = 0; i < n; i++) { /* into the node cache, for this decision and the next keystrokes */
        hyp *c = &hs[i];
        if (c->row < 0 || c->hidden) continue;
        const float *lg = laya_get_logits(s->ctx, c->row);
        int32_t e = nc_put(s, c->key, nP + c->n_tok, lg);
        if (e >= 0) c->row = NC_ROW0 - e; /* expanded from its summary */
    }
    s->st.n_decoded += rows;
    s->st.n_steps++;
    return LAYA_OK;
}

/* About how many rows decoding c takes: none if cached, else its tokens past what its slot holds (a
 * hypothesis whose parent's slot was reused catches up). */
int32_t sl_hyp_rows(const laya_session *s, const hyp *c) {
    int32_t xn = s->sl.n_ptok + c->n_tok;
    if (nc_find(s, c->key, xn) >= 0) return 0;
    return LAYA_MAX(1, xn - LAYA_MAX(lcp_slot(s, c->slot, c), s->sl.n_ptok));
}

laya_status sl_prepare(laya_session *s, int32_t j, const laya_token *base, int32_t nb, const laya_token *ext,
                       int32_t ne, int32_t l, int32_t fork_to, int32_t want_from, int8_t want, int32_t *rows) {
    laya_status st;
    int32_t xn = nb + ne;
    if (l < fork_to) {
        if ((st = laya_seq_fork_from(s->ctx, s->sl.ps, j, l, fork_to)))
            return laya_err(s->err, sizeof s->err, st, "fork: %s", laya_context_error(s->ctx));
        memcpy(s->sl.tok[j] + l, base + l, (size_t)(fork_to - l) * sizeof(laya_token));
        s->sl.n[j] = fork_to;
        l = fork_to;
    }
    if ((st = laya_seq_truncate(s->ctx, j, l)))
        return laya_err(s->err, sizeof s->err, st, "truncate: %s", laya_context_error(s->ctx));
    for (int32_t p = l; p < xn; p++) {
        laya_token t = p < nb ? base[p] : ext[p - nb];
        s->b_tok[*rows] = t;
        s->b_seq[*rows] = j;
        s->b_want[*rows] = p >= want_from ? want : 0;
        s->sl.tok[j][p] = t;
        (*rows)++;
    }
    s->sl.n[j] = xn;
    return LAYA_OK;
}

void sl_forget_batch(laya_session *s) {
    for (int32_t k = 0; k < s->n_slots + TYPO_SLOTS; k++)
        s->sl.n[k] = LAYA_MIN(s->sl.n[k], laya_seq_len(s->ctx, k));
}
