/* cachemix.c — the document cache and the user dictionary as cache models mixed with the language model
 * (cachemix.h). Not here: the caches (doccache.c, userdict.c). */
#include "typing/cachemix.h"

#include <math.h>

#include "typing/session.h"

#define UD_LAMBDA 0.2     /* weight of the user-dictionary cache model against the language model */
#define DC_LAMBDA_COMPLETE 0.85 /* weight of the document cache against the language model for the word
                                 being typed (a word of this document that starts so is likely it) ... */
#define DC_LAMBDA_NEXT 0.2  /* ... and for the next word ... */
#define DC_N0 200.0         /* ... reached as the window fills: lambda * n / (n + DC_N0) for n words */

/* User dictionary as a cache model: a word's weight is how often the user used it plus the boost it was
 * added with. */
static double ud_weight(const ud_entry *e) { return (double)e->count + (e->boost > 0 ? e->boost : 0); }

/* A finished candidate's word: its text without the space a next word may begin with. */
static const char *fin_word(const fin *f, int32_t *n) {
    const char *w = f->text;
    *n = f->len;
    while (*n > 0 && *w == ' ') w++, (*n)--;
    return w;
}

/* A cache model's word joins the candidates unless one of them already is it. */
static void add_word(laya_session *s, const char *word, int32_t len, double logp) {
    for (int32_t j = 0; j < s->bm.n_fins; j++) {
        int32_t n;
        const char *w = fin_word(&s->bm.fins[j], &n);
        if (n == len && !memcmp(w, word, (size_t)n)) return;
    }
    bm_add_fin(s, word, len, logp);
}

/* The document cache as a cache language model: p = (1 - l) p_model + l p_doc, where p_doc is how often the
 * word occurs in the text before the cursor (after the word before it, if that pair occurred), and l grows
 * with the words there. Words the document has that start with what was typed (or followed the word
 * before) and the model did not offer join the candidates. */
static void doc_mix(laya_session *s) {
    int32_t partial = s->sh.kind == LAYA_KIND_COMPLETE ? s->tx.norm_len - s->sh.word_start : 0;
    size_t ws, we;
    if (dc_prev_word(s->tx.norm, (size_t)s->sh.word_start, &ws, &we)) dc_set_context(s->cm.dc, s->tx.norm + ws, we - ws);
    else dc_set_context(s->cm.dc, NULL, 0);
    double nw = (double)dc_total(s->cm.dc), lam = (partial ? DC_LAMBDA_COMPLETE : DC_LAMBDA_NEXT) * nw / (nw + DC_N0);
    for (int32_t i = 0; i < s->bm.n_fins; i++) {
        int32_t n;
        const char *w = fin_word(&s->bm.fins[i], &n);
        double pd = n > 0 ? dc_prob(s->cm.dc, w, (size_t)n) : 0;
        s->bm.fins[i].logp = log((1 - lam) * exp(s->bm.fins[i].logp) + lam * pd);
    }
    /* A next word joins only after a space: elsewhere whether a space comes first is the model's call. */
    char last = s->tx.norm_len > 0 ? s->tx.norm[s->tx.norm_len - 1] : 0;
    if (partial == 0 && last != ' ') return;
    dc_hit h[LAYA_MAX_CANDIDATES];
    size_t k = dc_top(s->cm.dc, s->tx.norm + s->sh.word_start, (size_t)partial, h, (size_t)s->p.n_candidates);
    for (size_t i = 0; i < k; i++) add_word(s, h[i].word, h[i].len, log(lam * h[i].p));
}

/* The user's words as a cache model: p = (1 - l) p_model + l p_user, p_user(w) = weight(w) / the weight of
 * all the user's words, a probability of the same kind as the model's (not given what was typed: that
 * made the user's most frequent words win every prefix). So the names and jargon the user keeps using come
 * up even where the model never offers them. */
static void user_mix(laya_session *s) {
    int32_t partial = s->sh.kind == LAYA_KIND_COMPLETE ? s->tx.norm_len - s->sh.word_start : 0;
    const char *pre = s->tx.norm + s->sh.word_start;
    if (s->cm.ud_z < 0) { /* the words' weight, summed again only after the dictionary changed */
        s->cm.ud_z = 0;
        for (size_t i = 0; i < ud_count(s->cm.ud); i++) {
            const ud_entry *e = ud_at(s->cm.ud, i);
            if (!(e->flags & UD_F_PHRASE)) s->cm.ud_z += ud_weight(e);
        }
    }
    double z = s->cm.ud_z;
    if (z > 0) {
        for (int32_t i = 0; i < s->bm.n_fins; i++) {
            int32_t n;
            const char *w = fin_word(&s->bm.fins[i], &n);
            const ud_entry *e = n > 0 ? ud_lookup(s->cm.ud, w, (size_t)n) : NULL;
            double pu = e && !(e->flags & UD_F_PHRASE) ? ud_weight(e) / z : 0;
            s->bm.fins[i].logp = log((1 - UD_LAMBDA) * exp(s->bm.fins[i].logp) + UD_LAMBDA * pu);
        }
        const ud_entry *e[LAYA_MAX_CANDIDATES];
        size_t ne = s->sh.kind == LAYA_KIND_COMPLETE /* a next word's spacing is the model's to choose */
                        ? ud_prefix_top(s->cm.ud, pre, (size_t)partial, e, (size_t)s->p.n_candidates)
                        : 0;
        for (size_t i = 0; i < ne; i++)
            if (e[i]->len > partial && !(e[i]->flags & UD_F_PHRASE))
                add_word(s, e[i]->word, e[i]->len, log(UD_LAMBDA * ud_weight(e[i]) / z));
    }
}

void cm_mix(laya_session *s) {
    if (s->cm.dc && dc_total(s->cm.dc) > 0) doc_mix(s);
    if (s->cm.ud && s->p.mode == LAYA_MODE_TEXT) user_mix(s);
}
