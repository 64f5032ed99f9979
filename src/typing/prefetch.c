/* prefetch.c — the next keystroke's decision in the idle time before it (prefetch.h). Not here: the
 * worker's idle loop (worker.c). */
#include "typing/prefetch.h"

#include <math.h>
#include <stdlib.h>

#include "base/unicode.h"
#include "typing/session.h"

static void copy_cands(cand_buf *dst, const cand_buf *src) {
    dst->n = src->n;
    for (int32_t i = 0; i < src->n; i++) {
        dst->c[i] = src->c[i];
        memcpy(dst->text[i], src->text[i], (size_t)src->c[i].text_len + 1);
        dst->c[i].text = dst->text[i];
    }
}

static void pf_add(laya_session *s, double w, int32_t keep, const char *a, int32_t al, const char *b, int32_t bl) {
    if (!(w > 0) || al + bl <= 0 || al + bl > LAYA_CANDIDATE_MAX_BYTES + 4) return;
    for (int32_t i = 0; i < s->pf.n; i++) {
        pf_guess *g = &s->pf.g[i];
        if (g->keep == keep && g->add_len == al + bl && !memcmp(g->add, a, (size_t)al) &&
            !memcmp(g->add + al, b, (size_t)bl)) {
            g->w = LAYA_MAX(g->w, w);
            return;
        }
    }
    pf_guess *g;
    if (s->pf.n < PF_MAX) {
        g = &s->pf.g[s->pf.n++];
    } else {
        g = &s->pf.g[0];
        for (int32_t i = 1; i < s->pf.n; i++)
            if (s->pf.g[i].w < g->w) g = &s->pf.g[i];
        if (g->w >= w) return;
    }
    g->w = w;
    g->keep = keep;
    g->add_len = al + bl;
    memcpy(g->add, a, (size_t)al);
    memcpy(g->add + al, b, (size_t)bl);
}

static int cmp_pf(const void *a, const void *b) {
    double x = ((const pf_guess *)a)->w, y = ((const pf_guess *)b)->w;
    return (x < y) - (x > y);
}

/* The texts the caller is likeliest to send next, from the decision just made (its finished candidates,
 * best first): each shown candidate taken (then a space, in text mode), the next character typed (the
 * candidates' mass by the character that follows what was typed), and the word ended as typed. */
static void pf_plan(laya_session *s) {
    s->pf.n = 0;
    s->pf.i = 0;
    if (s->sh.no_cands || s->sl.n_ptok == 0) return;
    int text = s->p.mode == LAYA_MODE_TEXT;
    int32_t partial = s->sh.kind == LAYA_KIND_COMPLETE ? s->tx.norm_len - s->sh.word_start : 0;
    int32_t keep_take = (int32_t)s->tx.map[s->sh.kind == LAYA_KIND_COMPLETE ? s->sh.word_start : s->tx.norm_len];
    int32_t keep_end = (int32_t)s->tx.raw_len;
    enum { NCH = 12 };
    char ch[NCH][4];
    int32_t chl[NCH], nch = 0;
    double chw[NCH];
    for (int32_t i = 0; i < s->bm.n_fins; i++) {
        const fin *f = &s->bm.fins[i];
        double p = exp(f->logp);
        if (i < s->p.n_candidates) {
            pf_add(s, p, keep_take, f->text, f->len, " ", text && f->text[f->len - 1] != ' ');
            if (text && f->punct_len > 0 && f->len + f->punct_len < LAYA_CANDIDATE_MAX_BYTES) {
                char b[LAYA_CANDIDATE_MAX_BYTES + 8];
                memcpy(b, f->text, (size_t)f->len);
                memcpy(b + f->len, f->punct, (size_t)f->punct_len);
                pf_add(s, p * f->punct_p, keep_take, b, f->len + f->punct_len, " ", 1);
            }
        }
        if (f->len <= partial) continue;
        int32_t l = uni_utf8_len((unsigned char)f->text[partial]);
        if (l < 1 || l > 4 || l > f->len - partial) continue;
        int32_t j = 0;
        while (j < nch && (chl[j] != l || memcmp(ch[j], f->text + partial, (size_t)l))) j++;
        if (j == nch) {
            if (nch == NCH) continue;
            memcpy(ch[nch], f->text + partial, (size_t)l);
            chl[nch] = l;
            chw[nch++] = 0;
        }
        chw[j] += p;
    }
    for (int32_t j = 0; j < nch; j++) pf_add(s, chw[j], keep_end, ch[j], chl[j], "", 0);
    if (s->sh.kind == LAYA_KIND_COMPLETE && text && s->bm.typed_lp > -INFINITY) {
        pf_add(s, exp(s->bm.typed_lp), keep_end, " ", 1, "", 0);
        if (s->bm.typed_fin.punct_len > 0)
            pf_add(s, exp(s->bm.typed_lp) * s->bm.typed_fin.punct_p, keep_end, s->bm.typed_fin.punct, s->bm.typed_fin.punct_len, " ", 1);
    }
    qsort(s->pf.g, (size_t)s->pf.n, sizeof *s->pf.g, cmp_pf);
}

/* Decide the planned guesses, likeliest first, until end (a clock time) or a newer submit; then come back
 * to the caller's text and candidates. A guess cut short is done again by the next call (what it decoded
 * is in the node cache). */
laya_status pf_run(laya_session *s, double end, int32_t *n_done, int32_t *n_left) {
    laya_session_stats st0 = s->st;
    int decided0 = s->decided;
    copy_cands(&s->pf.out, &s->out);
    laya_status st = LAYA_OK;
    s->pf.active = 1;
    s->pf.end = end;
    s->pf.done_rows = 0;
    s->st.n_decoded = s->st.n_computed = 0;
    if (!s->decided) { /* the caller's own text first (or again, without the deadline that cut it short) */
        st = ses_decide(s);
        s->pf.done_rows += s->st.n_decoded + s->st.n_computed;
        if (!st && !s->st.deadline_hit) {
            s->pf.n = -1;
            decided0 = 1; /* done now: the plan comes from it and stays */
            st0.deadline_hit = 0;
            copy_cands(&s->pf.out, &s->out); /* the caller's candidates are these from now on */
        } else {
            s->pf.n = s->pf.i = 0; /* not finished yet: no plan until it is */
        }
    }
    if (!st && s->pf.n < 0) pf_plan(s);
    size_t mt = (size_t)s->p.max_text, c0 = tw_step_cut(s->tx.full, mt);
    int32_t done = 0;
    while (!st && s->pf.i < s->pf.n && !dl_stop_now(s, 0)) {
        const pf_guess *g = &s->pf.g[s->pf.i];
        size_t n = (size_t)g->keep + (size_t)g->add_len;
        if (tw_step_cut(s->tx.cut + n, mt) != c0) { /* the caller's window would move: another prompt */
            s->pf.i++;
            continue;
        }
        s->nc.cur = (s->nc.cur >> 32) << 32 | (uint64_t)(LAYA_MIN(g->w, 0.999999) * 4294967296.0);
        uint32_t full0 = s->nc.full;
        memcpy(s->pf.text, s->tx.raw, (size_t)g->keep);
        memcpy(s->pf.text + g->keep, g->add, (size_t)g->add_len);
        s->st.deadline_hit = 0;
        st = tw_set_text(s, s->pf.text, n, s->tx.raw_after, s->tx.raw_after_len);
        if (!st && !s->st.deadline_hit) st = ses_decide(s);
        s->pf.done_rows += s->st.n_decoded + s->st.n_computed;
        if (!st && s->nc.full != full0) {
            /* the cache is full of likelier work: this guess and the less likely ones cannot be kept */
            s->pf.i = s->pf.n;
            break;
        }
        if (st || s->st.deadline_hit) break;
        s->pf.i++;
        done++;
    }
    s->pf.active = 0;
    s->nc.cur = (s->nc.cur >> 32) << 32 | NC_PRI_OWN;
    laya_status st2 = tw_set_text(s, s->tx.raw, s->tx.raw_len, s->tx.raw_after, s->tx.raw_after_len);
    copy_cands(&s->out, &s->pf.out);
    s->st = st0;
    s->decided = decided0;
    if (n_done) *n_done = done;
    if (n_left) *n_left = s->pf.n < 0 ? 1 : s->pf.n - s->pf.i + !s->decided;
    return st ? st : st2;
}
