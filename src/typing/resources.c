/* resources.c — typing resources (resources.h): token classes, the token table and the known-word list,
 * built once from a model and shared read-only by its sessions. Not here: per-session state. */
#include "typing/resources.h"

#include <string.h>

#include "engine/model.h"
#include "typing/normalize.h"
#include "typing/textclass.h"

/* Control text (special, user-defined, unknown and unused tokens): never generated, ends everything. */
static int tok_control(const laya_model *m, laya_token i) {
    int t = tok_token_type(m->tok, i);
    return t == 2 || t == 3 || t == 4 || t == 5;
}

static void token_classes(const laya_model *m, uint8_t *tflag, int32_t nv) {
    for (int32_t i = 0; i < nv; i++) {
        size_t pl;
        const char *pc = laya_token_piece(m, i, &pl);
        uint8_t f = 0;
        if (tok_control(m, i) || !pc || pl == 0) {
            f = TF_NOGEN | TF_END_WORD | TF_END_IDENT | TF_END_LINE; /* control text ends everything */
        } else {
            unsigned char b = (unsigned char)pc[0];
            int complete = b < 0x80 || (uni_utf8_len(b) > 1 && (size_t)uni_utf8_len(b) <= pl);
            if (complete) {
                size_t j = 0;
                uint32_t c = nz_next(pc, pl, &j);
                if (!tc_is_word(c) && !tc_is_apos(c)) f |= TF_END_WORD;
                if (!tc_is_word(c)) f |= TF_END_IDENT;
                if (c == '\n' || c == '\r') f |= TF_END_LINE;
            }
        }
        tflag[i] = f;
    }
}

/* The words a typo may have meant: the model file's word list (laya.words with laya.word_counts, from its
 * training text: laya annotate) and whole-word tokens of the model (a space and letters). */
static laya_status build_words(const laya_model *m, ty_list **out) {
    ty_list *l;
    laya_status st = ty_list_create(&l);
    if (st) return st;
    const gguf_file *gf = m->gf;
    const gguf_kv *kw, *kc;
    if (gf && !gguf_get_arr(gf, "laya.words", GGUF_STRING, &kw)) {
        int counts = !gguf_get_arr(gf, "laya.word_counts", GGUF_U32, &kc) && kc->arr_n == kw->arr_n;
        gguf_str_iter it = gguf_arr_strs(kw);
        gguf_str w;
        for (uint64_t i = 0; gguf_str_next(&it, &w); i++) {
            /* a bad entry (too long, not UTF-8) is refused by ty_list_add and skipped */
            if (w.n && w.n <= TY_WORD_MAX) ty_list_add(l, w.p, (size_t)w.n, counts ? (uint32_t)gguf_arr_num(kc, i) : 1);
        }
    }
    int32_t nv = laya_n_vocab(m);
    for (int32_t i = 0; i < nv && !st; i++) {
        size_t pl;
        const char *pc = laya_token_piece(m, i, &pl);
        if (!pc || pl < 3 || pl > TY_WORD_MAX || pc[0] != ' ' || tok_control(m, i)) continue;
        int ok = 1;
        for (size_t j = 1; j < pl && ok; j++) ok = ((unsigned char)pc[j] | 32) >= 'a' && ((unsigned char)pc[j] | 32) <= 'z';
        if (ok) st = ty_list_add(l, pc + 1, pl - 1, 1);
    }
    if (!st) st = ty_list_finish(l);
    if (st) ty_list_free(l);
    else *out = l;
    return st;
}

void laya_resources_free(laya_resources *r) {
    if (!r) return;
    vt_free(&r->vt);
    ty_list_free(r->words);
    laya_free(r->tflag);
    laya_free(r);
}

laya_status res_build(const laya_model *m, int with_words, laya_resources **out) {
    *out = NULL;
    laya_resources *r = laya_calloc(1, sizeof *r);
    if (!r) return LAYA_ERR_NOMEM;
    r->m = m;
    r->n_vocab = laya_n_vocab(m);
    r->tflag = laya_calloc((size_t)r->n_vocab, 1);
    if (!r->tflag) {
        laya_resources_free(r);
        return LAYA_ERR_NOMEM;
    }
    token_classes(m, r->tflag, r->n_vocab);
    uint8_t *keep = laya_malloc((size_t)r->n_vocab);
    laya_status st = keep ? LAYA_OK : LAYA_ERR_NOMEM;
    if (!st) {
        for (int32_t i = 0; i < r->n_vocab; i++) keep[i] = !(r->tflag[i] & TF_NOGEN);
        st = vt_build(&r->vt, m, keep);
    }
    laya_free(keep);
    if (!st && with_words) st = build_words(m, &r->words);
    if (st) {
        laya_resources_free(r);
        return st;
    }
    *out = r;
    return LAYA_OK;
}

laya_status laya_resources_create(const laya_model *m, laya_resources **out, char *err, size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!m) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "model is NULL");
    if (m->vocab_only) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "model was loaded vocab-only");
    laya_status st = res_build(m, 1, out);
    if (st) return laya_err(err, errlen, st, "out of memory building the typing resources");
    return LAYA_OK;
}
