/* corrections.c — typo decisions for the word just finished (corrections.h). Not here: the edit model
 * and candidate search (typo.c). */
#include "typing/corrections.h"

#include <math.h>
#include <stdlib.h>

#include "typing/session.h"

#define TYPO_PRIOR 2.5    /* log-odds cost of one unit of typo cost (typo.h: a plain substitution is 1) */
#define DC_KNOWN 3        /* a word the document has this often (this one too) is not corrected */
#define TYPO_COMMON 200   /* a known word counted this often in the word list is not checked at all */
#define TYPO_KNOWN 6.0    /* and of replacing a word the list knows (a real-word error: about 1 in 400) */

/* The user dictionary's words, the session's own list beside the model's (none without words). */
laya_status co_build_user_words(laya_session *s) {
    size_t nu = 0;
    for (size_t i = 0; s->cm.ud && i < ud_count(s->cm.ud); i++) nu += !(ud_at(s->cm.ud, i)->flags & UD_F_PHRASE);
    if (nu == 0) return LAYA_OK;
    laya_status st = ty_list_create(&s->co.user_words);
    if (st) return st;
    for (size_t i = 0; i < ud_count(s->cm.ud); i++) {
        const ud_entry *e = ud_at(s->cm.ud, i);
        if (!(e->flags & UD_F_PHRASE)) ty_list_add(s->co.user_words, e->word, e->len, e->count + 1); /* refusals skipped */
    }
    return ty_list_finish(s->co.user_words);
}

/* A word in the known words, with its count: the sum of the shared list's and the user's. */
static int typo_find(const laya_session *s, const char *w, size_t n, uint32_t *count) {
    uint32_t c1 = 0, c2 = 0;
    int k = ty_list_find(s->co.words, w, n, &c1);
    if (s->co.user_words) k |= ty_list_find(s->co.user_words, w, n, &c2);
    *count = c1 + c2;
    return k;
}

static int cmp_tycand(const void *a, const void *b) {
    const ty_cand *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    return (x->count < y->count) - (x->count > y->count);
}

/* typo.h's candidates over both lists: a word in both once, with the sum of its counts. */
static void typo_candidates(const laya_session *s, const char *w, size_t n, ty_cand *out, size_t cap, size_t *nf) {
    ty_candidates(s->co.words, w, n, NULL, out, cap, nf);
    if (!s->co.user_words) return;
    enum { UMAX = 16 };
    ty_cand all[MAX_SLOTS + UMAX], u[UMAX];
    size_t no = LAYA_MIN(LAYA_MIN(*nf, cap), (size_t)MAX_SLOTS), nu = 0, na = no;
    ty_candidates(s->co.user_words, w, n, NULL, u, UMAX, &nu);
    memcpy(all, out, no * sizeof *out);
    for (size_t i = 0; i < LAYA_MIN(nu, (size_t)UMAX); i++) {
        size_t j = 0;
        while (j < no && !(all[j].len == u[i].len && !memcmp(all[j].word, u[i].word, u[i].len))) j++;
        if (j < no) all[j].count += u[i].count;
        else all[na++] = u[i];
    }
    qsort(all, na, sizeof *all, cmp_tycand);
    *nf += na - no;
    memcpy(out, all, LAYA_MIN(na, cap) * sizeof *out);
}

/* log p(tok) under a row of logits, and log of the mass of tokens that end a word. */
static void row_scores(laya_session *s, const float *l, laya_token tok, double *lp_tok, double *lp_end) {
    float mx = -INFINITY, end = 0;
    for (int32_t i = 0; i < s->n_vocab; i++) mx = LAYA_MAX(mx, l[i]);
    float *ev = s->vals, sum = s->m->kn->exp_sum(l, mx, lp_end ? ev : NULL, s->n_vocab); /* vals: scratch here */
    for (int32_t i = 0; lp_end && i < s->n_vocab; i++)
        if (s->tflag[i] & TF_END_WORD) end += ev[i];
    if (lp_tok) *lp_tok = tok >= 0 ? (double)(l[tok] - mx) - log((double)sum) : 0;
    if (lp_end) *lp_end = end > 0 ? log((double)end / sum) : -30;
}

/* A word the list knows, as typed or with its first letter lowered ("The" at a sentence start, "Ishmael"),
 * with its count: it needs stronger evidence before it is corrected (real-word errors are rarer than
 * non-word ones), and a very common one is not scored at all. */
static int known_word(const laya_session *s, const char *w, size_t n, uint32_t *count) {
    uint32_t c1 = 0, c2 = 0;
    int k = typo_find(s, w, n, &c1);
    if (n > 0 && n <= TY_WORD_MAX && w[0] >= 'A' && w[0] <= 'Z') {
        char b[TY_WORD_MAX];
        memcpy(b, w, n);
        b[0] = (char)(b[0] + 32);
        k |= typo_find(s, b, n, &c2);
    }
    *count = LAYA_MAX(c1, c2);
    return k;
}

/* The correction as a candidate: the replacement, then what was typed after the word. */
static void corr_offer(laya_session *s, const char *w, size_t len, double post) {
    int32_t tail = s->tx.norm_len - s->sh.last_we;
    if (len + (size_t)tail >= LAYA_CANDIDATE_MAX_BYTES) return;
    laya_candidate *c = &s->co.found.c[0];
    memcpy(s->co.found.text[0], w, len);
    memcpy(s->co.found.text[0] + len, s->tx.norm + s->sh.last_we, (size_t)tail);
    s->co.found.text[0][len + (size_t)tail] = 0;
    c->text = s->co.found.text[0];
    c->text_len = (int32_t)len + tail;
    c->replace = s->sh.corr_replace;
    c->replace_bytes = s->sh.corr_replace_bytes;
    c->kind = LAYA_KIND_CORRECT;
    c->prob = c->confidence = (float)post;
    s->co.found.n = 1;
}

#define CO_MAXW (MAX_SLOTS - 1) /* words scored at once: the typed word and its neighbours */

/* The words a correction decision scores: [0] the typed word, then its neighbours, tokenized. */
typedef struct co_words {
    ty_cand tc[CO_MAXW];
    char cbuf[CO_MAXW][TY_WORD_MAX];
    laya_token tok[CO_MAXW][TYPO_TOK];
    int32_t n_tok[CO_MAXW], row0[CO_MAXW];
    double prior[CO_MAXW];
    const char *w[CO_MAXW];
    size_t len[CO_MAXW];
    int32_t n;
} co_words;

/* The memo's key: the context's tokens, the typed bytes, and whether a space came before the word. */
static uint64_t memo_key(const laya_session *s, const char *typed, size_t tl) {
    uint64_t key = NC_KEY0;
    for (int32_t i = 0; i < s->co.n_ctok; i++) key = nc_key_mix(key, s->co.ctok[i]);
    for (size_t i = 0; i < tl; i++) key = nc_key_mix(key, (laya_token)(0x40000000 | (unsigned char)typed[i]));
    key = nc_key_mix(key, s->sh.last_anchor < s->sh.last_ws ? 1 : 2);
    return key | 1; /* never 0, the empty entry */
}

/* The typed word and its neighbours, each with its prior, tokenized as they would follow the context.
 * Returns 0 when the typed word itself cannot be scored. */
static int gather(laya_session *s, const char *typed, size_t tl, int known, co_words *cw) {
    int32_t maxw = LAYA_MIN(CO_MAXW, s->n_slots + TYPO_SLOTS - 1);
    size_t nf = 0;
    cw->n = 0;
    typo_candidates(s, typed, tl, cw->tc, (size_t)maxw - 1, &nf);
    nf = LAYA_MIN(nf, (size_t)maxw - 1);
    if (nf == 0) return 1;
    /* The list is mostly lower case: a candidate takes the typed word's initial capital, and a candidate
     * that differs from the typed word in case only is no correction. */
    int cap0 = typed[0] >= 'A' && typed[0] <= 'Z';
    for (size_t i = 0; i <= nf; i++) {
        const ty_cand *tc = i ? &cw->tc[i - 1] : NULL;
        const char *w = i ? tc->word : typed;
        size_t len = i ? tc->len : tl;
        if (i) {
            char *cb = cw->cbuf[i - 1];
            if (tc->edits == 0 || len > TY_WORD_MAX) continue;
            memcpy(cb, w, len);
            if (cap0 && cb[0] >= 'a' && cb[0] <= 'z') cb[0] = (char)(cb[0] - 32);
            if (len == tl && !memcmp(cb, typed, tl)) continue;
            w = cb;
        }
        char buf[TY_WORD_MAX + 2];
        size_t bl = 0, got = 0;
        if (s->sh.last_anchor < s->sh.last_ws && !s->spm_space) buf[bl++] = ' ';
        memcpy(buf + bl, w, len);
        bl += len;
        if (tok_encode_work(s->m->tok, s->tw, buf, bl, 0, cw->tok[cw->n], TYPO_TOK, &got) || got == 0) {
            if (i == 0) return 0;
            continue;
        }
        cw->n_tok[cw->n] = (int32_t)got;
        cw->prior[cw->n] = i ? -TYPO_PRIOR * tc->cost - (known ? TYPO_KNOWN : 0) : 0;
        cw->w[cw->n] = w;
        cw->len[cw->n] = len;
        cw->n++;
    }
    return 1;
}

/* Every word after the context, each in a spare slot (never the prompt's), in one batch; sc[i] its log
 * score (prior, tokens, then the word's end). *late: no time left for it. */
static laya_status score(laya_session *s, co_words *cw, double *sc, int *late) {
    int32_t rows = 0, nC = s->co.n_ctok;
    laya_status st = sl_prompt_kv(s);
    if (st) return st;
    for (int32_t i = 0; i < cw->n; i++) {
        int32_t j = i < s->sl.ps ? i : i + 1; /* never the prompt's slot */
        int32_t l = LAYA_MIN(sl_lcp(s->sl.tok[j], s->sl.n[j], s->co.ctok, nC), nC - 1);
        cw->row0[i] = rows; /* the context's last position, l after the fork */
        if ((st = sl_prepare(s, j, s->co.ctok, nC, cw->tok[i], cw->n_tok[i], l, nC - 1, nC - 1, LAYA_WANT_LOGITS,
                             &rows)))
            return st;
    }
    laya_batch b = {rows, s->b_tok, s->b_seq, s->b_want};
    *late = dl_stop_now(s, dl_step_estimate(s, rows));
    double t0 = laya_now_ms();
    if (*late || (st = laya_decode(s->ctx, b))) {
        sl_forget_batch(s);
        if (*late) { /* no time left for it: no correction offered this time */
            s->st.deadline_hit = 1;
            return LAYA_OK;
        }
        return laya_err(s->err, sizeof s->err, st, "decode: %s", laya_context_error(s->ctx));
    }
    dl_step_learn(s, laya_now_ms() - t0, rows);
    s->st.n_decoded += rows;
    s->st.n_steps++;
    for (int32_t i = 0; i < cw->n; i++) {
        double lp = cw->prior[i], a, e;
        for (int32_t q = 0; q < cw->n_tok[i]; q++) {
            row_scores(s, laya_get_logits(s->ctx, cw->row0[i] + q), cw->tok[i][q], &a, NULL);
            lp += a;
        }
        row_scores(s, laya_get_logits(s->ctx, cw->row0[i] + cw->n_tok[i]), -1, NULL, &e);
        sc[i] = lp + e;
    }
    return LAYA_OK;
}

/* The typo decision for the word just finished: the word as typed and its near neighbours (typo.h) are
 * scored by the model in the context before the word (tokens, then the end of the word), plus a prior
 * from the typo cost; if a neighbour's posterior beats the typed word's and exceeds 1/2 (0.8 when the
 * typed word is a known word itself), it becomes a `correct` candidate whose prob and confidence are that
 * posterior. Runs in the spare slots. */
laya_status co_decide(laya_session *s) {
    s->co.found.n = 0;
    if (s->sh.last_ws < 0) return LAYA_OK;
    const char *typed = s->tx.norm + s->sh.last_ws;
    size_t tl = (size_t)(s->sh.last_we - s->sh.last_ws);
    uint32_t count = 0;
    int known = known_word(s, typed, tl, &count);
    /* A word seen this often in the list's text is almost never a slip for another: the model is not
     * asked, which saves the decision its rows at most word starts. */
    if (known && count >= TYPO_COMMON) return LAYA_OK;
    /* ... and neither is a word this document keeps using (names, coinages: "Queequeg") */
    if (s->cm.dc && dc_count(s->cm.dc, typed, tl) >= DC_KNOWN) return LAYA_OK;
    /* The same word in the same context was decided before (a prefetch guessed this text): reuse it. */
    uint64_t key = memo_key(s, typed, tl);
    for (int32_t i = 0; i < CO_MEMO_MAX; i++) {
        const corr_memo *m = &s->co.memo[i];
        if (m->key != key) continue;
        if (m->len > 0) corr_offer(s, m->word, (size_t)m->len, m->post);
        return LAYA_OK;
    }
    co_words cw;
    if (!gather(s, typed, tl, known, &cw) || cw.n < 2) return LAYA_OK;
    double sc[CO_MAXW], mx = -INFINITY;
    int late = 0;
    laya_status st = score(s, &cw, sc, &late);
    if (st || late) return st;
    for (int32_t i = 0; i < cw.n; i++) mx = LAYA_MAX(mx, sc[i]);
    double z = 0;
    for (int32_t i = 0; i < cw.n; i++) z += exp(sc[i] - mx);
    int32_t best = 0;
    for (int32_t i = 1; i < cw.n; i++)
        if (sc[i] > sc[best]) best = i;
    double post = exp(sc[best] - mx) / z;
    int32_t tail = s->tx.norm_len - s->sh.last_we;
    /* a typed word that is itself a known word needs stronger evidence (real-word errors are rarer) */
    double need = known ? 0.8 : 0.5;
    corr_memo *memo = &s->co.memo[s->co.memo_next];
    memo->key = key;
    memo->len = 0;
    s->co.memo_next = (s->co.memo_next + 1) % CO_MEMO_MAX;
    if (best == 0 || post <= need || cw.len[best] + (size_t)tail >= LAYA_CANDIDATE_MAX_BYTES) return LAYA_OK;
    memo->len = (int32_t)cw.len[best];
    memo->post = (float)post;
    memcpy(memo->word, cw.w[best], cw.len[best]);
    corr_offer(s, cw.w[best], cw.len[best], post);
    return LAYA_OK;
}
