/* nextword — the model-quality figures of docs/MODELS.md: next-word top-1 / top-3 accuracy and bits per
 * byte of a model on a held-out text file, through Laya's public API only.
 *
 *   nextword -m MODEL --text FILE [--kind prose|code|shell|zh] [--max-words N] [--beam W]
 *
 * FILE holds documents separated by the byte 0x1E (as train/data/build.py writes the test split); each
 * document starts a fresh context "<|endoftext|><|kind|>" when the model has those tokens.
 *
 * Words: as eval/nextword/words.h defines them (shared with presage_nextword.c):
 * punctuation), except that each CJK character is a word of its own. This is the definition
 * eval/nextword/presage_nextword.c uses, so the two are measured on the same positions.
 *
 * At each word start, the model is asked for its most probable next words given all text before it (the
 * last 128 to 384 tokens). The text between the start of the token that contains the word start and the
 * word itself (usually the space before it) is healed: every candidate must begin with exactly it. A beam
 * of W token sequences (default 8, up to 4 tokens) is expanded; a word's probability is the probability of
 * its tokens times the probability that the next token starts with a non-word character. The comparison
 * with the word that follows is exact (next_word_top1/3) and, to compare with Presage, which lower-cases
 * everything, also ignoring ASCII case (top1/3_any_case: the same candidate lists, compared ignoring case).
 *
 * Bits per byte: every token of the file scored once, with at least 128 tokens of context (or all of the
 * document before it), -log2 p summed and divided by the document bytes.
 *
 * Build: cc -O2 -Iinclude eval/nextword/nextword.c build/liblaya.a -lm -lpthread -o build/nextword */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "laya.h"

#include "words.h"

#define WIN 384    /* tokens decoded per window */
#define STEP 256   /* windows advance by this; the first 128 tokens of a later window are context only */
#define MAXW 16    /* most beam rows */
#define DEPTH 4    /* most tokens per candidate */
#define TOPM 24    /* tokens looked at per expansion */
#define NCAND 64


/* Decode one code point at s[i] (n bytes left). Returns its length, 0 if the sequence is incomplete. */
static int cp_at(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned c = s[0];
    int l = c < 0x80 ? 1 : c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if ((size_t)l > n) return 0;
    uint32_t v = l == 1 ? c : l == 2 ? c & 0x1F : l == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < l; k++) v = (v << 6) | (s[k] & 0x3F);
    *cp = v;
    return l;
}

/* What a candidate's text (after the healed prefix) says: 1 = a complete word w[0..*wl) followed by a
 * boundary; 0 = a word in progress (all word characters so far, or an incomplete UTF-8 tail);
 * -1 = not a word at all. For a CJK first character, the word is that character. */
static int word_state(const char *t, size_t n, size_t *wl) {
    size_t i = 0;
    int any = 0;
    while (i < n) {
        uint32_t c;
        int l = cp_at((const unsigned char *)t + i, n - i, &c);
        if (!l) return any || i == 0 ? 0 : -1;
        if (is_cjk(c)) {
            if (i == 0) {
                *wl = (size_t)l;
                return 1;
            }
            *wl = i;
            return 1;
        }
        if (!is_word(c)) {
            if (!any) return -1;
            *wl = i;
            return 1;
        }
        any = 1;
        i += (size_t)l;
    }
    return 0;
}

typedef struct {
    laya_token tok[DEPTH];
    int n;
    double lp;
    char text[256];
    size_t len;
} hyp;

typedef struct {
    char w[128];
    size_t len;
    double p;
} cand;

static int cand_add(cand *c, int *nc, const char *w, size_t len, double p) {
    if (len >= sizeof c[0].w) return 0;
    for (int i = 0; i < *nc; i++)
        if (c[i].len == len && !memcmp(c[i].w, w, len)) {
            c[i].p += p;
            return 1;
        }
    if (*nc == NCAND) return 0;
    memcpy(c[*nc].w, w, len);
    c[*nc].len = len;
    c[*nc].p = p;
    (*nc)++;
    return 1;
}

static void log_softmax(const float *lg, int nv, float *out) {
    float mx = lg[0];
    for (int i = 1; i < nv; i++) mx = lg[i] > mx ? lg[i] : mx;
    double s = 0;
    for (int i = 0; i < nv; i++) s += exp((double)(lg[i] - mx));
    float lse = mx + (float)log(s);
    for (int i = 0; i < nv; i++) out[i] = lg[i] - lse;
}

static void top_ids(const float *lp, int nv, int m, int *ids) {
    for (int k = 0; k < m; k++) ids[k] = -1;
    for (int i = 0; i < nv; i++) {
        if (ids[m - 1] >= 0 && lp[i] <= lp[ids[m - 1]]) continue;
        int k = m - 1;
        while (k > 0 && (ids[k - 1] < 0 || lp[i] > lp[ids[k - 1]])) {
            ids[k] = ids[k - 1];
            k--;
        }
        ids[k] = i;
    }
}

typedef struct {
    laya_model *m;
    laya_context *c;
    int nv, beam;
    float *lp;         /* scratch: log-probabilities */
    float *rowlp;      /* (MAXW, nv) log-probabilities after each beam row */
    uint8_t *boundary; /* token piece starts with a non-word character */
} ev;

static void sort_hyps(hyp *h, int n) {
    for (int i = 1; i < n; i++) {
        hyp x = h[i];
        int j = i;
        while (j > 0 && h[j - 1].lp < x.lp) {
            h[j] = h[j - 1];
            j--;
        }
        h[j] = x;
    }
}

/* Word candidates at one position. Sequence 0 holds npos tokens of context; first[] are the
 * log-probabilities after them; heal[0..hl) is the text every candidate must begin with. */
static int predict(ev *e, int npos, const float *first, const char *heal, size_t hl, cand *out) {
    static hyp cur[MAXW], nxt[MAXW * TOPM];
    int nc = 0, ncur = 1, ids[TOPM];
    memset(&cur[0], 0, sizeof cur[0]);
    for (int depth = 0; depth < DEPTH && ncur > 0; depth++) {
        int nn = 0;
        for (int h = 0; h < ncur; h++) {
            const float *lp = depth == 0 ? first : e->rowlp + (size_t)h * e->nv;
            if (depth > 0 && cur[h].len > hl) {
                /* the word in progress may end here: the mass of tokens that start a non-word */
                double pb = 0;
                for (int t = 0; t < e->nv; t++)
                    if (e->boundary[t]) pb += exp((double)lp[t]);
                cand_add(out, &nc, cur[h].text + hl, cur[h].len - hl, exp(cur[h].lp) * pb);
            }
            top_ids(lp, e->nv, TOPM, ids);
            for (int k = 0; k < TOPM; k++) {
                size_t pl;
                const char *piece = laya_token_piece(e->m, ids[k], &pl);
                if (!piece || !pl || cur[h].len + pl >= sizeof cur[h].text) continue;
                hyp x = cur[h];
                memcpy(x.text + x.len, piece, pl);
                x.len += pl;
                x.tok[x.n++] = ids[k];
                x.lp += lp[ids[k]];
                size_t cmp = x.len < hl ? x.len : hl;
                if (memcmp(x.text, heal, cmp)) continue; /* inconsistent with the healed text */
                if (x.len > hl) {
                    size_t wl;
                    int st = word_state(x.text + hl, x.len - hl, &wl);
                    if (st < 0) continue;
                    if (st == 1) {
                        cand_add(out, &nc, x.text + hl, wl, exp(x.lp));
                        continue;
                    }
                }
                if (depth + 1 < DEPTH) nxt[nn++] = x;
            }
        }
        sort_hyps(nxt, nn);
        ncur = nn < e->beam ? nn : e->beam;
        if (!ncur || depth + 1 == DEPTH) break;
        laya_token toks[MAXW * DEPTH];
        int32_t seqs[MAXW * DEPTH];
        int8_t want[MAXW * DEPTH];
        int rows[MAXW], nb = 0;
        for (int h = 0; h < ncur; h++) {
            cur[h] = nxt[h];
            if (laya_seq_fork(e->c, 0, 1 + h, npos) != LAYA_OK) return nc;
            for (int t = 0; t < cur[h].n; t++) {
                toks[nb] = cur[h].tok[t];
                seqs[nb] = 1 + h;
                want[nb] = t == cur[h].n - 1;
                nb++;
            }
            rows[h] = nb - 1;
        }
        laya_batch b = {nb, toks, seqs, want};
        if (laya_decode(e->c, b) != LAYA_OK) {
            fprintf(stderr, "nextword: decode: %s\n", laya_context_error(e->c));
            return nc;
        }
        for (int h = 0; h < ncur; h++) log_softmax(laya_get_logits(e->c, rows[h]), e->nv, e->rowlp + (size_t)h * e->nv);
    }
    /* best first */
    for (int i = 1; i < nc; i++) {
        cand x = out[i];
        int j = i;
        while (j > 0 && out[j - 1].p < x.p) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = x;
    }
    return nc;
}

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[sz] = 0, *n = (size_t)sz;
    return b;
}

typedef struct tally {
    long words, top1, top3, ci1, ci3;
} tally;

/* The first word start inside token j (of the window at base), if any: predicted from the logits after
 * token j - 1 and compared with the word that follows. */
static void word_at_token(ev *e, tally *t, const char *doc, size_t dl, const size_t *tstart, size_t nt, size_t j,
                          size_t base, const float *winlp) {
    cand cands[NCAND];
    size_t s = tstart[j], end = j + 1 < nt ? tstart[j + 1] : dl;
    /* first word start inside token j */
    for (size_t p = s; p < end; p++) {
        uint32_t c, pc = 0;
        int l = cp_at((const unsigned char *)doc + p, dl - p, &c);
        if (!l) break;
        if (p > 0) {
            size_t q = p - 1;
            while (q > 0 && ((unsigned char)doc[q] & 0xC0) == 0x80) q--;
            cp_at((const unsigned char *)doc + q, dl - q, &pc);
        }
        int start = is_word(c) && (is_cjk(c) || p == 0 || !is_word(pc) || is_cjk(pc));
        if (!start) continue;
        size_t wl = (size_t)l;
        if (!is_cjk(c)) {
            uint32_t c2;
            int l2;
            while (p + wl < dl && (l2 = cp_at((const unsigned char *)doc + p + wl, dl - p - wl, &c2)) &&
                   is_word(c2) && !is_cjk(c2))
                wl += (size_t)l2;
        }
        if (j == 0 || j - base == 0 || p - s > 32) break;
        int nc = predict(e, (int)(j - base), winlp + (j - 1 - base) * e->nv, doc + s, p - s, cands);
        t->words++;
        for (int k = 0; k < nc && k < 3; k++)
            if (cands[k].len == wl && !memcmp(cands[k].w, doc + p, wl)) {
                if (k == 0) t->top1++;
                t->top3++;
                break;
            }
        for (int k = 0; k < nc && k < 3; k++)
            if (cands[k].len == wl && !strncasecmp(cands[k].w, doc + p, wl)) {
                if (k == 0) t->ci1++;
                t->ci3++;
                break;
            }
        break; /* one word start per token: a later one inside the token cannot be healed */
    }
}

/* Load the model, make the context (one window plus MAXW beam rows) and the boundary table. */
static int ev_open(ev *e, const char *model, int beam) {
    char err[LAYA_ERR_MSG_MAX];
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 2;
    if (laya_model_load(model, mp, &e->m, err, sizeof err)) {
        fprintf(stderr, "nextword: %s\n", err);
        return 1;
    }
    e->nv = laya_n_vocab(e->m);
    e->beam = beam;
    laya_context_params cp = laya_context_default_params();
    cp.n_seq = 1 + MAXW;
    cp.max_kv_size = WIN + DEPTH + 2;
    cp.max_batch = WIN;
    cp.max_logits = WIN;
    if (laya_context_create(e->m, cp, &e->c, err, sizeof err)) {
        fprintf(stderr, "nextword: %s\n", err);
        return 1;
    }
    e->lp = malloc(sizeof(float) * (size_t)e->nv);
    e->rowlp = malloc(sizeof(float) * (size_t)e->nv * MAXW);
    e->boundary = calloc((size_t)e->nv, 1);
    for (int t = 0; t < e->nv; t++) {
        size_t pl;
        const char *p = laya_token_piece(e->m, t, &pl);
        uint32_t c;
        if (!p || !pl) continue;
        int l = cp_at((const unsigned char *)p, pl, &c);
        e->boundary[t] = l && (!is_word(c) || is_cjk(c));
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *model = "models/laya-typing-q8_0.gguf", *text = NULL, *kind = "prose";
    long max_words = 1L << 40;
    int beam = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--text") && i + 1 < argc) text = argv[++i];
        else if (!strcmp(argv[i], "--kind") && i + 1 < argc) kind = argv[++i];
        else if (!strcmp(argv[i], "--max-words") && i + 1 < argc) max_words = atol(argv[++i]);
        else if (!strcmp(argv[i], "--beam") && i + 1 < argc) beam = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: nextword [-m MODEL] --text FILE [--kind K] [--max-words N] [--beam W]\n");
            return 2;
        }
    }
    if (!text || beam < 1 || beam > MAXW) {
        fprintf(stderr, "nextword: --text FILE is needed; --beam is 1..%d\n", MAXW);
        return 2;
    }
    size_t n;
    char *buf = read_file(text, &n);
    if (!buf) {
        perror(text);
        return 1;
    }
    ev e = {0};
    if (ev_open(&e, model, beam)) return 1;
    float *winlp = malloc(sizeof(float) * (size_t)e.nv * WIN); /* log-probs after each window position */
    /* document prefix tokens */
    char pre[64];
    snprintf(pre, sizeof pre, "<|endoftext|><|%s|>", kind);
    laya_token pre_ids[8];
    size_t npre = 0;
    if (laya_tokenize(e.m, pre, strlen(pre), 1, pre_ids, 8, &npre) || npre != 2) npre = 0;

    size_t tcap = n + 16;
    laya_token *toks = malloc(sizeof(laya_token) * tcap);
    size_t *tstart = malloc(sizeof(size_t) * tcap);
    int8_t *want = malloc(WIN);
    int32_t *seq0 = calloc(WIN, sizeof(int32_t));
    memset(want, 1, WIN);
    tally tl = {0}, *t = &tl;
    long scored = 0;
    double bits = 0, bytes = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t d0 = 0; d0 < n && t->words < max_words;) {
        size_t d1 = d0;
        while (d1 < n && buf[d1] != 0x1e) d1++;
        const char *doc = buf + d0;
        size_t dl = d1 - d0;
        while (dl && (doc[0] == '\n')) doc++, dl--;
        d0 = d1 + 1;
        if (dl < 2) continue;
        /* tokens and the byte where each starts */
        size_t nt = 0;
        for (size_t i = 0; i < npre; i++) toks[nt] = pre_ids[i], tstart[nt++] = 0;
        size_t got = 0;
        if (laya_tokenize(e.m, doc, dl, 0, toks + nt, tcap - nt, &got)) continue;
        size_t off = 0;
        for (size_t i = 0; i < got; i++) {
            size_t pl;
            laya_token_piece(e.m, toks[nt + i], &pl);
            tstart[nt + i] = off;
            off += pl;
        }
        if (off != dl) continue; /* invalid UTF-8 was repaired: offsets unknown, skip the document */
        nt += got;
        bytes += (double)dl;
        /* windows */
        for (size_t base = 0;; base += STEP) {
            size_t wn = nt - base < WIN ? nt - base : WIN;
            laya_seq_truncate(e.c, 0, 0);
            laya_batch b = {(int32_t)wn, toks + base, seq0, want};
            if (laya_decode(e.c, b)) {
                fprintf(stderr, "nextword: decode: %s\n", laya_context_error(e.c));
                return 1;
            }
            for (size_t i = 0; i < wn; i++) log_softmax(laya_get_logits(e.c, (int32_t)i), e.nv, winlp + i * e.nv);
            size_t from = base == 0 ? 0 : base + (WIN - STEP);
            size_t to = base + wn;
            /* bits: token j scored from the logits after token j-1 */
            for (size_t j = from > 0 ? from : 1; j < to; j++) {
                if (j < npre) continue;
                bits -= winlp[(j - 1 - base) * e.nv + toks[j]] / log(2.0);
                scored++;
            }
            /* word starts whose covering token begins in [from, to) */
            for (size_t j = from > npre ? from : npre; j < to && t->words < max_words; j++)
                word_at_token(&e, t, doc, dl, tstart, nt, j, base, winlp);
            if (base + wn >= nt) break;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    printf("{\"kind\":\"%s\",\"words\":%ld,\"next_word_top1\":%.4f,\"next_word_top3\":%.4f,"
           "\"top1_any_case\":%.4f,\"top3_any_case\":%.4f,\"tokens\":%ld,\"bits_per_byte\":%.4f,\"seconds\":%.1f}\n",
           kind, t->words, t->words ? (double)t->top1 / t->words : 0, t->words ? (double)t->top3 / t->words : 0,
           t->words ? (double)t->ci1 / t->words : 0, t->words ? (double)t->ci3 / t->words : 0, scored,
           bytes > 0 ? bits / bytes : 0, secs);
    laya_context_free(e.c);
    laya_model_free(e.m);
    return 0;
}
