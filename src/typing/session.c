/* session.c — typing sessions (laya.h): the text before and after the cursor, normalized and tokenized on
 * every change; the KV cache kept on the longest common token prefix; and the decisions (token-healed
 * completion of the word being typed, the next word, the rest of a line) found by a beam search whose
 * hypotheses live in sequence slots that all hold the prompt. Everything is allocated at create: the
 * keystroke path (set_text, suggest, submit, poll) never calls the allocator.
 * Not here: the forward pass (forward.c), the user dictionary's file (userdict.c), typo candidates. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "engine/model.h"
#include "typing/normalize.h"
#include "typing/typo.h"
#include "base/unicode.h"
#include "typing/doccache.h"
#include "typing/userdict.h"
#include "typing/vtrie.h"
#include "typing/resources.h"
#include "typing/textclass.h"

#define MAX_SLOTS (LAYA_MAX_CANDIDATES + 2)
#define MAX_STEPS 32
#define GEN_MAX 192   /* bytes of generated text per hypothesis */
#define HEAL_MAX 64   /* bytes of typed text a completion may heal over */
#define NC_BYTES (16u << 20) /* the node cache's logits: 256 rows of a 16k vocabulary, 27 of Qwen's 152k */
#define NC_MAX 256
#define NC_MIN 32     /* entries at least, whatever the vocabulary */
#define PRI_OWN 0xffffffffull /* nc_cur's weight for the caller's own text */
#define CC_MAX 64     /* typo decisions remembered (by context and word): more than one plan makes */
#define PF_MAX 16     /* guesses of the next text one prefetch considers */
#define NC_ROW0 (-1000)   /* hyp.row <= NC_ROW0: node-cache entry NC_ROW0 - row */
#define CATCHUP_ROOM 16 /* batch rows per slot for a hypothesis catching up on its tokens (max_batch) */
#define FIN_MAX 64    /* finished candidates kept per decision */
#define CHUNK 64      /* prompt tokens per laya_decode */
#define CAL_MAX 64
#define W_MAX (HEAL_MAX + GEN_MAX)
#define TYPO_SLOTS 2      /* extra sequence slots, so scoring corrections leaves the beam's slots alone */
#define TYPO_TOK 6        /* longest word (tokens) scored as a correction */
#define TYPO_PRIOR 2.5    /* log-odds cost of one unit of typo cost (typo.h: a plain substitution is 1) */
#define UD_LAMBDA 0.2     /* weight of the user-dictionary cache model against the language model */
#define DC_LAMBDA_COMPLETE 0.85 /* weight of the document cache against the language model for the word
                                 being typed (a word of this document that starts so is likely it) ... */
#define DC_LAMBDA_NEXT 0.2  /* ... and for the next word ... */
#define DC_N0 200.0         /* ... reached as the window fills: lambda * n / (n + DC_N0) for n words */
#define DC_KNOWN 3        /* a word the document has this often (this one too) is not corrected */
#define TYPO_COMMON 200   /* a known word counted this often in the word list is not checked at all */
#define TYPO_KNOWN 6.0    /* and of replacing a word the list knows (a real-word error: about 1 in 400) */

enum { STOP_WORD, STOP_IDENT, STOP_LINE };
enum { SC_CONT, SC_DONE, SC_DEAD };

typedef struct hyp {
    laya_token tok[MAX_STEPS];
    int32_t n_tok;
    int32_t gen_len;
    char gen[GEN_MAX]; /* the bytes of tok, concatenated */
    double logp;
    int32_t slot;      /* sequence slot holding prompt + tok */
    uint64_t key;      /* key_mix over prompt + tok: the node cache's key */
    int32_t row;       /* batch row of the last token; -1: the prompt's cached logits;
                          <= NC_ROW0: node-cache entry NC_ROW0-row */
    int32_t hidden;    /* decoded with LAYA_WANT_HIDDEN: only subset logits */
} hyp;

typedef struct fin {
    double logp;
    int32_t len;
    char text[LAYA_CANDIDATE_MAX_BYTES];
    char punct[8];     /* the likeliest punctuation after the word, for prefetch's guesses */
    int32_t punct_len;
    float punct_p;     /* its probability given that the word ends here */
} fin;

typedef struct cand_buf {
    laya_candidate c[LAYA_MAX_CANDIDATES];
    char text[LAYA_MAX_CANDIDATES][LAYA_CANDIDATE_MAX_BYTES];
    int32_t n;
} cand_buf;

/* What the beam needs of a row of logits, computed once when the row enters the node cache: a cached
 * hypothesis is then expanded in O(NTOP) instead of three passes over the vocabulary. */
#define NTOP LAYA_MAX_CANDIDATES /* the widest beam */
typedef struct nsum {
    double lz;         /* log of the softmax normalizer */
    double lend[3];    /* log of the probability mass of the tokens that end a word / identifier / line */
    /* the best generating tokens (not TF_NOGEN), best first: [0] all of them, [1 + k] those that do not
     * end a word / identifier / line (where the hypothesis may end, its enders finish it instead) */
    int32_t n_top[4];
    laya_token top[4][NTOP];
    float topv[4][NTOP];
} nsum;

/* A typo decision already made: the context before the word, the word and how it was written decide it. */
typedef struct corr_memo {
    uint64_t key;      /* 0: empty */
    int32_t len;       /* bytes of the replacement; 0: the word stays */
    float post;
    char word[TY_WORD_MAX];
} corr_memo;

/* A guess of the next text, for prefetch: the normalized text before the cursor is base[0..keep) + add. */
typedef struct pf_guess {
    double w;          /* how likely it is (for the order) */
    int32_t keep, add_len;  /* keep: bytes of the caller's (windowed, raw) text */
    char add[LAYA_CANDIDATE_MAX_BYTES + 8];
} pf_guess;

struct laya_session {
    const laya_model *m;
    laya_session_params p;
    laya_context *ctx;
    tok_work *tw;
    const laya_resources *res; /* token classes, token table, known words: shared, or own_res */
    laya_resources *own_res;   /* built by this session when params.resources is NULL */
    const vt_table *vt;        /* &res->vt */
    const uint8_t *tflag;      /* res->tflag: (n_vocab) TF_* */
    int32_t n_vocab, n_slots;
    laya_token t_start, t_mode[3], t_zh, t_fim_pre, t_fim_suf, t_fim_mid; /* -1 when absent */
    int spm_space;             /* the tokenizer prepends a space to a text */
    int use_subset;            /* laya_get_logits_subset works on this build */
    uint32_t norm_flags;

    /* text (normalized), with maps to the raw text */
    char *norm;                /* (3 * max_text) before the cursor */
    uint32_t *map;             /* (3 * max_text + 1) */
    int32_t norm_len;
    char *after;               /* (3 * max_text / 4) after the cursor */
    uint32_t *amap;
    int32_t after_len;
    char *ctxt;                /* (max_text) set_context */
    int32_t ctxt_len;
    char *prompt;              /* (prompt_cap) text given to the tokenizer */
    char *guess;               /* the text after an accept, then the text after the cursor */
    size_t prompt_cap;

    /* the decision's shape, from the text */
    int32_t word_start, anchor; /* offsets in norm: the partial word, and where healing starts */
    char heal[HEAL_MAX + 8];   /* T: the typed bytes every candidate must start with */
    int32_t heal_len;
    int32_t kind;              /* LAYA_KIND_COMPLETE or NEXT */
    int32_t replace, replace_bytes;
    int32_t stop;              /* STOP_* */
    int32_t line_indent;       /* code: columns of white space that start the cursor's line */
    uint32_t line_last;        /* code: the last non-blank character before the cursor on its line, or 0 */
    int32_t no_cands;          /* the text allows no candidate (an over-long word, no start token) */

    /* tokens */
    laya_token *ptok;          /* (ptok_cap) the prompt */
    int32_t n_ptok, ptok_cap;
    laya_token *slot_tok[MAX_SLOTS]; /* (max_kv_size) what each slot holds */
    int32_t slot_n[MAX_SLOTS];
    int32_t ps;                /* the slot that holds the prompt (whichever held most of it at set_text) */
    uint64_t p_key, pre_key;   /* key_mix of the prompt; of the prompt pre_logits belong to */
    int prompt_dirty;          /* set_text changed the prompt: sync_prompt before the next decision */
    int kv_lag;                /* the prompt's logits came from the node cache but its slot holds only a
                                  prefix of it: the rest is decoded when a decode step needs it */
    float *pre_logits;         /* (n_vocab) logits after the prompt's last token */
    int32_t pre_n;             /* prompt length they belong to; -1: none */
    /* Node cache: the logits after every hypothesis decoded since the prompt last changed, by its tokens.
     * Typing on inside a word restarts the beam from the prompt with a narrower prefix: most of the
     * hypotheses it needs were decoded at the keystrokes before, and cost nothing now. */
    float *nc_logits;          /* (nc_cap, n_vocab) */
    uint64_t *nc_key;          /* (nc_cap) key_mix of the whole token sequence (prompt included) */
    int32_t *nc_n;             /* its length in tokens; -1: empty */
    uint32_t *nc_stamp;        /* decode step that last used it: an entry in use by this step stays */
    uint64_t *nc_pri;          /* (keystroke, weight) it was last used for: the lowest is replaced first */
    nsum *nc_sum;              /* (nc_cap) */
    int32_t nc_cap;
    uint32_t nc_clock;
    uint32_t nc_full;          /* rows the node cache had no room for (at their priority) */
    uint64_t nc_cur;           /* the priority of what is decoded now: this keystroke, and 2^32 - 1 for the
                                  caller's own text or the guess's likelihood in 2^-32 for a prefetch */
    corr_memo *cc;             /* (CC_MAX) typo decisions, kept across prompts */
    int32_t cc_next;

    /* prefetch: the caller's last text, kept while guesses of the next one are decided */
    char *cur_raw, *cur_after; /* (max_text + 8), (max_text / 4 + 8) */
    size_t cur_raw_len, cur_after_len, cur_full, cur_cut; /* the caller's length, and where its window starts */
    int have_text, decided;    /* decided: the last decision is for the current text */
    char *pf_text;             /* (3 * max_text + 2 * LAYA_CANDIDATE_MAX_BYTES + 16) a guessed text */
    pf_guess pf[PF_MAX];       /* the plan for the current text, likeliest first */
    int32_t pf_n, pf_i;        /* guesses planned (-1: no plan yet), and done */
    cand_buf pf_out;           /* the caller's candidates while guesses are decided */
    int in_prefetch;           /* decisions are guesses: no user deadline, stop at pf_end */
    int32_t pf_done_rows;      /* rows this prefetch call decoded in the guesses before the current one */
    double pf_end;
    double typed_lp;           /* log prob that the partial word ends as typed (the decision skips it) */
    fin typed_fin;             /* its punctuation (add_fin) */

    /* decision scratch */
    hyp *live, *next, *pool;   /* (n_slots), (n_slots), (n_slots * n_slots) */
    int32_t n_live;
    fin *fins;
    int32_t n_fins;
    laya_token *allowed;       /* (n_vocab) */
    float *vals;               /* (n_vocab) */
    laya_token *b_tok;         /* (max_batch) */
    int32_t *b_seq;
    int8_t *b_want;
    int32_t max_batch;
    cand_buf out;
    double t_start_ms;
    double step_ms;            /* a decode step of one row: the median of the last 8 steps (each
                                  normalized); a step of r rows is predicted at step_ms * (1 + r) / 2 */
    double step_hist[8];
    int32_t n_step_hist;
    double log_min_prob;       /* log(params.min_prob), -inf for 0 */
    int32_t max_tokens;

    float cal_x[CAL_MAX], cal_y[CAL_MAX];
    int32_t cal_n;
    ud_dict *ud;
    double ud_z;               /* the weight of all its words (not phrases); < 0: to be summed */
    dc_cache *dc;              /* the document cache (text mode, not sensitive, doc_cache_bytes > 0) */
    const ty_list *typos;      /* known words for corrections (res->words), text mode only */
    ty_list *typos_user;       /* the user dictionary's words, or NULL */
    laya_token *ctok;          /* (ptok_cap) the prompt before the last word, for scoring corrections */
    int32_t last_ws, last_we, last_anchor; /* the last completed word in norm (last_ws -1: none to check) */
    int32_t n_ctok, corr_replace, corr_replace_bytes;
    cand_buf corr;             /* the correction found for this text, if any */
    laya_session_stats st;

    atomic_int interrupted;    /* laya_session_interrupt: stop at the next check, until the next set_text */
    atomic_int interruptible;  /* interrupted once: prefill in smaller chunks so later interrupts land sooner */
    int has_cands;             /* out holds a decision of the current text */
    char err[LAYA_ERR_MSG_MAX];
};


/* ---- character classes ---------------------------------------------------------------------------- */

static uint32_t cp_at(const char *s, int32_t n, int32_t i) {
    size_t j = (size_t)i;
    return nz_next(s, (size_t)n, &j);
}

/* 1 if s[i..n) starts with an incomplete (not yet invalid) UTF-8 sequence: generated bytes may end inside
 * a character that the next token finishes. */
static int incomplete_utf8(const char *s, int32_t n, int32_t i) {
    unsigned char b = (unsigned char)s[i];
    int k = uni_utf8_len(b);
    if (b < 0xC2 || k == 1 || i + k <= n) return 0;
    for (int32_t j = i + 1; j < n; j++)
        if (((unsigned char)s[j] & 0xC0) != 0x80) return 0;
    return 1;
}

/* ---- where a candidate stops ----------------------------------------------------------------------- */

typedef struct scan_res {
    int st;      /* SC_* */
    int32_t cut; /* SC_DONE: the candidate is w[0..cut) */
    int can_end; /* SC_CONT: w is a whole candidate if the next token ends it */
    int cjk;     /* SC_CONT: the word so far is CJK (stops at the phrase length rather than a space) */
    int32_t fork; /* SC_CONT: > 0: w[0..fork) is also a whole candidate (a line that opens a block) */
} scan_res;

/* w is the candidate so far: the partial word typed, then the generated bytes past the healed text; the
 * bytes from `from` on came with the newest token.
 * Lines (code, shell): a candidate ends at the end of its line, or where the brackets it opened balance.
 * Code, indentation-aware: a line that opens a block (ends with ':' or '{') may go on into
 * the block, lines indented deeper than the cursor's line; the candidate then ends before the first line
 * that is not, and each finished line of the block is a candidate too. */
static scan_res scan_w(const laya_session *s, const char *w, int32_t n, int32_t from) {
    scan_res r = {SC_CONT, 0, 0, 0, 0};
    if (s->stop == STOP_LINE) {
        int code = s->p.mode == LAYA_MODE_CODE;
        int depth = 0, opened = 0, any = 0, block = 0, bol = 0, ind = 0, body = 0;
        uint32_t last = s->line_last;
        int32_t open_nl = -1, nl = -1; /* the newline after the opening line; after the last block line */
        for (int32_t i = 0; i < n;) {
            if (incomplete_utf8(w, n, i)) return r;
            int32_t at = i;
            uint32_t c = cp_at(w, n, i);
            size_t j = (size_t)i;
            nz_next(w, (size_t)n, &j);
            i = (int32_t)j;
            if (c == '\n' || c == '\r') {
                if (block) {
                    if (body) { /* a block line ended: the candidate may end here too */
                        if (at >= from) r.fork = at;
                        nl = at;
                    }
                    bol = 1, ind = 0, body = 0;
                    continue;
                }
                int opener = last == ':' || last == '{'; /* a block; an open call's arguments stop at its line */
                if (code && opener && s->p.max_tokens > 1) {
                    /* the line so far is a candidate by itself; the block may follow */
                    if (any && at >= from) r.fork = at;
                    block = 1, bol = 1, ind = 0, body = 0, open_nl = at;
                    continue;
                }
                r.st = any ? SC_DONE : SC_DEAD;
                r.cut = at;
                return r;
            }
            if (block) {
                if (bol && (c == ' ' || c == '\t')) {
                    ind += c == '\t' ? 4 : 1;
                    continue;
                }
                if (bol) { /* the first character of a block line: is it still inside? */
                    bol = 0;
                    if (ind <= s->line_indent) {
                        r.st = nl > 0 || (any && open_nl > 0) ? SC_DONE : SC_DEAD;
                        r.cut = nl > 0 ? nl : open_nl;
                        return r;
                    }
                }
                body = 1;
                continue;
            }
            if (c != ' ' && c != '\t') any = 1, last = c;
            if (code) {
                if (c == '(' || c == '[' || c == '{') depth++, opened = 1;
                if (c == ')' || c == ']' || c == '}') {
                    depth--;
                    if (depth < 0 || (depth == 0 && opened)) {
                        r.st = SC_DONE;
                        r.cut = i;
                        return r;
                    }
                }
            }
        }
        r.can_end = any && !block;
        return r;
    }
    int started = 0, cjk = 0;
    for (int32_t i = 0; i < n;) {
        if (incomplete_utf8(w, n, i)) {
            r.can_end = 0;
            return r;
        }
        int32_t at = i;
        size_t j = (size_t)i;
        uint32_t c = nz_next(w, (size_t)n, &j);
        i = (int32_t)j;
        if (!started) {
            if (c == ' ') continue;
            if (!tc_is_word(c)) {
                r.st = SC_DEAD;
                return r;
            }
            started = 1;
            cjk = tc_is_cjk(c);
            continue;
        }
        if (tc_is_word(c)) {
            if (tc_is_cjk(c) != cjk) {
                r.st = SC_DONE;
                r.cut = at;
                return r;
            }
            continue;
        }
        if (s->stop == STOP_WORD && tc_is_apos(c) && !cjk) {
            if (i >= n) return r; /* an apostrophe at the end: undecided, and not yet a word end */
            if (incomplete_utf8(w, n, i)) return r;
            if (tc_is_letter(cp_at(w, n, i))) continue;
        }
        r.st = SC_DONE;
        r.cut = at;
        return r;
    }
    r.can_end = started;
    r.cjk = cjk;
    return r;
}

/* ---- creation -------------------------------------------------------------------------------------- */

laya_session_params laya_session_default_params(void) {
    laya_session_params p = {.mode = LAYA_MODE_TEXT,
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

static laya_status set_text_window(laya_session *s, const char *before, size_t before_len, size_t full_len,
                                   const char *after, size_t after_len);

/* The user dictionary's words, the session's own list beside the model's (none without words). */
static laya_status build_user_typos(laya_session *s) {
    size_t nu = 0;
    for (size_t i = 0; s->ud && i < ud_count(s->ud); i++) nu += !(ud_at(s->ud, i)->flags & UD_F_PHRASE);
    if (nu == 0) return LAYA_OK;
    laya_status st = ty_list_create(&s->typos_user);
    if (st) return st;
    for (size_t i = 0; i < ud_count(s->ud); i++) {
        const ud_entry *e = ud_at(s->ud, i);
        if (!(e->flags & UD_F_PHRASE)) ty_list_add(s->typos_user, e->word, e->len, e->count + 1); /* refusals skipped */
    }
    return ty_list_finish(s->typos_user);
}

/* A word in the known words, with its count: the sum of the shared list's and the user's. */
static int typo_find(const laya_session *s, const char *w, size_t n, uint32_t *count) {
    uint32_t c1 = 0, c2 = 0;
    int k = ty_list_find(s->typos, w, n, &c1);
    if (s->typos_user) k |= ty_list_find(s->typos_user, w, n, &c2);
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
    ty_candidates(s->typos, w, n, NULL, out, cap, nf);
    if (!s->typos_user) return;
    enum { UMAX = 16 };
    ty_cand all[MAX_SLOTS + UMAX], u[UMAX];
    size_t no = LAYA_MIN(LAYA_MIN(*nf, cap), (size_t)MAX_SLOTS), nu = 0, na = no;
    ty_candidates(s->typos_user, w, n, NULL, u, UMAX, &nu);
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
    ud_free(s->ud);
    dc_free(s->dc);
    ty_list_free(s->typos_user);
    laya_resources_free(s->own_res);
    laya_free(s->ctok);
    void *bufs[] = {s->norm,   s->map,      s->after, s->amap,     s->ctxt,     s->prompt, s->guess,
                    s->ptok,  s->live,   s->next,     s->pool,  s->fins,     s->allowed,  s->vals,
                    s->b_tok, s->b_seq,  s->b_want,   s->pre_logits, s->nc_pri, s->nc_logits, s->nc_key, s->nc_n, s->nc_stamp, s->nc_sum, s->cur_raw, s->cur_after,
                    s->pf_text, s->cc};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) laya_free(bufs[i]);
    for (int i = 0; i < MAX_SLOTS; i++) laya_free(s->slot_tok[i]);
    laya_free(s);
}

laya_status laya_session_create(const laya_model *m, laya_session_params p, laya_session **out, char *err,
                                size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    if (!m) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "model is NULL");
    if (m->vocab_only) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "model was loaded vocab-only");
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
    laya_session *s = laya_calloc(1, sizeof *s);
    if (!s) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    s->m = m;
    s->p = p;
    s->p.user_dict = NULL;
    s->n_vocab = laya_n_vocab(m);
    s->n_slots = p.beam > 0 ? p.beam : LAYA_MAX(p.n_candidates, 8);
    s->max_tokens = p.max_tokens;
    s->pre_n = -1;
    s->log_min_prob = p.min_prob > 0 ? log(p.min_prob) : -INFINITY;
    s->norm_flags = p.normalize == LAYA_NORM_MODE_DEFAULT
                        ? (p.mode == LAYA_MODE_TEXT ? LAYA_NORM_FULLWIDTH | LAYA_NORM_ZERO_WIDTH | LAYA_NORM_SPACES
                                                    : LAYA_NORM_FULLWIDTH | LAYA_NORM_ZERO_WIDTH)
                        : p.normalize & (LAYA_NORM_FULLWIDTH | LAYA_NORM_ZERO_WIDTH | LAYA_NORM_SPACES);
    laya_status st = LAYA_ERR_NOMEM;
    size_t mt = (size_t)p.max_text, nv = (size_t)s->n_vocab, ns = (size_t)s->n_slots;
    s->max_batch = LAYA_MAX(CHUNK, s->n_slots * (CATCHUP_ROOM + p.max_tokens + 1));
    s->max_batch = LAYA_MAX(s->max_batch, (s->n_slots + TYPO_SLOTS) * (CATCHUP_ROOM + TYPO_TOK + 2));
    laya_context_params cp = {.n_seq = s->n_slots + TYPO_SLOTS, .max_kv_size = p.max_kv_size,
                              .max_batch = s->max_batch, .max_logits = (s->n_slots + TYPO_SLOTS) * (TYPO_TOK + 1),
                              .kv_type = p.kv_type};
    st = laya_context_create(m, cp, &s->ctx, err, errlen);
    if (st) goto fail;
    st = LAYA_ERR_NOMEM;
    s->prompt_cap = mt + 1 + 3 * mt + 3 * mt / 4 + 16;
    s->ptok_cap = (int32_t)(s->prompt_cap + 16);
    s->tw = tok_work_new();
    s->norm = laya_malloc(3 * mt + 4);
    s->map = laya_malloc((3 * mt + 4) * sizeof(uint32_t));
    s->after = laya_malloc(3 * mt / 4 + 16);
    s->amap = laya_malloc((3 * mt / 4 + 16) * sizeof(uint32_t));
    s->ctxt = laya_malloc(mt + 1);
    s->prompt = laya_malloc(s->prompt_cap);
    s->guess = laya_malloc(3 * mt + 2 * LAYA_CANDIDATE_MAX_BYTES + 3 * mt / 4 + 16);
    s->ptok = laya_malloc((size_t)s->ptok_cap * sizeof(laya_token));
    s->ctok = laya_malloc((size_t)s->ptok_cap * sizeof(laya_token));
    s->live = laya_calloc(ns, sizeof(hyp));
    s->next = laya_calloc(ns, sizeof(hyp));
    s->pool = laya_calloc(ns * ns, sizeof(hyp));
    s->fins = laya_calloc(FIN_MAX, sizeof(fin));
    s->allowed = laya_malloc(nv * sizeof(laya_token));
    s->vals = laya_malloc(nv * sizeof(float));
    s->pre_logits = laya_malloc(nv * sizeof(float));
    s->nc_cap = (int32_t)LAYA_MAX((size_t)NC_MIN, LAYA_MIN((size_t)NC_MAX, NC_BYTES / (nv * sizeof(float))));
    if (s->nc_cap > 0) {
        s->nc_logits = laya_malloc((size_t)s->nc_cap * nv * sizeof(float));
        s->nc_key = laya_malloc((size_t)s->nc_cap * sizeof(uint64_t));
        s->nc_sum = laya_malloc((size_t)s->nc_cap * sizeof(nsum));
        s->nc_n = laya_malloc((size_t)s->nc_cap * sizeof(int32_t));
        s->nc_stamp = laya_calloc((size_t)s->nc_cap, sizeof(uint32_t));
        s->nc_pri = laya_calloc((size_t)s->nc_cap, sizeof(uint64_t));
        if (!s->nc_logits || !s->nc_key || !s->nc_n || !s->nc_stamp || !s->nc_sum || !s->nc_pri) goto nomem;
        for (int32_t i = 0; i < s->nc_cap; i++) s->nc_n[i] = -1;
    }
    s->cc = laya_calloc(CC_MAX, sizeof(corr_memo));
    s->cur_raw = laya_malloc(mt + 8);
    s->cur_after = laya_malloc(mt / 4 + 8);
    s->pf_text = laya_malloc(3 * mt + 2 * LAYA_CANDIDATE_MAX_BYTES + 16);
    if (!s->cc || !s->cur_raw || !s->cur_after || !s->pf_text) goto nomem;
    s->b_tok = laya_malloc((size_t)s->max_batch * sizeof(laya_token));
    s->b_seq = laya_malloc((size_t)s->max_batch * sizeof(int32_t));
    s->b_want = laya_malloc((size_t)s->max_batch);
    if (!s->tw || !s->norm || !s->map || !s->after || !s->amap || !s->ctxt || !s->prompt || !s->guess || !s->ptok || !s->ctok ||
        !s->live || !s->next || !s->pool || !s->fins || !s->allowed || !s->vals || !s->pre_logits || !s->b_tok ||
        !s->b_seq || !s->b_want)
        goto nomem;
    for (int i = 0; i < s->n_slots + TYPO_SLOTS; i++)
        if (!(s->slot_tok[i] = laya_malloc((size_t)p.max_kv_size * sizeof(laya_token)))) goto nomem;
    if (tok_work_reserve(s->tw, s->prompt_cap)) goto nomem;

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
    if (p.mode == LAYA_MODE_TEXT) s->typos = s->res->words;
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
    load_calibration(s);
    if (p.user_dict && !p.sensitive) { /* a sensitive field neither reads nor writes the user's words */
        char e2[LAYA_ERR_MSG_MAX];
        ud_params up = ud_default_params();
        s->ud_z = -1;
        if ((st = ud_open(p.user_dict, &up, &s->ud, e2, sizeof e2))) {
            laya_err(err, errlen, st, "user dictionary '%s': %s", p.user_dict, e2);
            goto fail;
        }
    }
    if (p.mode == LAYA_MODE_TEXT && !p.sensitive && p.doc_cache_bytes > 0 &&
        (st = dc_create((size_t)p.doc_cache_bytes, &s->dc))) {
        laya_err(err, errlen, st, "out of memory for the document cache");
        goto fail;
    }
    if (p.mode == LAYA_MODE_TEXT && (st = build_user_typos(s))) {
        laya_err(err, errlen, st, "out of memory building the word list");
        goto fail;
    }
    if (p.warmup) {
        /* Touch every weight page and every code path once: a word to complete, then a next word. */
        static const char *const warm[] = {"The quick brown fo", "The quick brown fox "};
        const laya_candidate *c;
        int32_t n;
        for (int i = 0; i < 2; i++) {
            if ((st = set_text_window(s, warm[i], strlen(warm[i]), strlen(warm[i]), "", 0)) ||
                (st = laya_session_suggest(s, &c, &n))) {
                laya_err(err, errlen, st, "warm-up failed: %s", s->err);
                goto fail;
            }
        }
        set_text_window(s, "", 0, 0, "", 0);
        memset(&s->st, 0, sizeof s->st);
        s->step_ms = 0; /* the warm-up's steps ran on cold caches: no prediction from them */
        s->n_step_hist = 0;
    }
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

/* ---- text -------------------------------------------------------------------------------------------- */

laya_status laya_session_set_context(laya_session *s, const char *text, size_t len) {
    if (!s || (!text && len)) return LAYA_ERR_INVALID_ARG;
    size_t mt = (size_t)s->p.max_text;
    if (len > mt) {
        size_t skip = tc_utf8_cut_start(text, len, len - mt);
        text += skip;
        len -= skip;
    }
    if (len) memcpy(s->ctxt, text, len);
    s->ctxt_len = (int32_t)len;
    return LAYA_OK;
}

/* Where the model's view of a text of n bytes begins, before window_start's move to a word start: in
 * steps of max_text / 2, so that typing keeps the cache. Prefetch's guesses that keep this step are the
 * ones whose prompt can be the one the caller's text will give. */
static size_t window_step_cut(size_t n, size_t max_text) {
    if (n <= max_text) return 0;
    size_t step = max_text / 2;
    return ((n - max_text + step - 1) / step) * step;
}

/* ... and there: a function of the text alone, so that a fresh session and a long-lived one agree. The
 * text is n bytes; t holds its end from byte base on (base <= n - max_text when n > max_text). */
static size_t window_start(const char *t, size_t base, size_t n, size_t max_text) {
    if (n <= max_text) return 0;
    size_t cut = base + tc_utf8_cut_start(t, n - base, window_step_cut(n, max_text) - base);
    for (size_t i = cut; i < n && i < cut + 32; i++)
        if (t[i - base] == ' ' || t[i - base] == '\n') return i + 1;
    return cut;
}

static laya_status tokenize_to(laya_session *s, const char *t, size_t n, laya_token *dst, int32_t *k) {
    size_t got = 0;
    if (n == 0) return LAYA_OK;
    laya_status st = tok_encode_work(s->m->tok, s->tw, t, n, 0, dst + *k, (size_t)(s->ptok_cap - *k), &got);
    if (st) return laya_err(s->err, sizeof s->err, st, "tokenizer: %s", laya_status_str(st));
    *k += (int32_t)got;
    return LAYA_OK;
}

static laya_status tokenize_into(laya_session *s, const char *t, size_t n, int32_t *k) {
    return tokenize_to(s, t, n, s->ptok, k);
}

/* The word just finished (text mode, cursor after it and at most two boundary characters): a correction
 * candidate is looked for. Sets last_ws = -1 when there is none. */
static void find_last_word(laya_session *s, const char *raw, size_t raw_len) {
    s->last_ws = -1;
    if (!s->typos || s->kind != LAYA_KIND_NEXT || s->no_cands) return;
    const char *t = s->norm;
    int32_t end = s->norm_len, i = end, gap = 0;
    while (i > 0 && gap < 2) {
        int32_t j = tc_prev_cp(t, i);
        uint32_t c = cp_at(t, end, j);
        if (tc_is_word(c) || c == '\n' || c == '\r') break;
        i = j, gap++;
    }
    int32_t we = i, ws = i;
    if (gap == 0 || we == 0) return;
    while (ws > 0) {
        int32_t j = tc_prev_cp(t, ws);
        uint32_t c = cp_at(t, end, j);
        if (!tc_is_letter(c) || tc_is_cjk(c)) break;
        ws = j;
    }
    if (we - ws < 2 || we - ws > TY_WORD_MAX || (ws > 0 && tc_is_word(cp_at(t, end, tc_prev_cp(t, ws))))) return;
    s->last_ws = ws;
    s->last_we = we;
    s->last_anchor = ws > 0 && t[ws - 1] == ' ' ? ws - 1 : ws;
    size_t r = s->map[ws];
    s->corr_replace_bytes = (int32_t)(raw_len - r);
    s->corr_replace = (int32_t)nz_count_chars(raw + r, raw_len - r);
}

/* Find the partial word at the end of norm, the healing anchor and the typed text T. */
static void analyze(laya_session *s, const char *raw, size_t raw_len) {
    const char *t = s->norm;
    int32_t end = s->norm_len, ws = end;
    int code = s->p.mode == LAYA_MODE_CODE;
    s->no_cands = 0;
    if (end > 0) {
        int32_t i = tc_prev_cp(t, end);
        uint32_t c = cp_at(t, end, i);
        if (tc_is_word(c) && tc_is_cjk(c)) {
            ws = i; /* CJK has no spaces: the "partial word" is the last character */
        } else {
            while (ws > 0) {
                int32_t j = tc_prev_cp(t, ws);
                uint32_t d = cp_at(t, end, j);
                int ok = tc_is_word(d) && !tc_is_cjk(d);
                if (!ok && !code && tc_is_apos(d) && j > 0) ok = tc_is_letter(cp_at(t, end, tc_prev_cp(t, j)));
                if (!ok) break;
                ws = j;
            }
        }
    }
    s->word_start = ws;
    s->kind = ws < end ? LAYA_KIND_COMPLETE : LAYA_KIND_NEXT;
    s->stop = s->p.mode == LAYA_MODE_SHELL ? STOP_LINE
              : code                       ? (s->kind == LAYA_KIND_COMPLETE ? STOP_IDENT : STOP_LINE)
                                           : STOP_WORD;
    s->line_indent = 0;
    s->line_last = 0;
    if (code) {
        int32_t ls = end;
        while (ls > 0 && t[ls - 1] != '\n' && t[ls - 1] != '\r') ls--;
        for (int32_t i = ls; i < end && (t[i] == ' ' || t[i] == '\t'); i++) s->line_indent += t[i] == '\t' ? 4 : 1;
        for (int32_t i = ls; i < end; i++)
            if (t[i] != ' ' && t[i] != '\t') s->line_last = (unsigned char)t[i];
    }
    int32_t anchor = ws;
    if (ws > 0) {
        int32_t j = tc_prev_cp(t, ws);
        uint32_t d = cp_at(t, end, j);
        /* The space (or punctuation) before a word belongs to the word's first token in byte-level BPE:
         * heal over it too, so the prompt ends where the tokenizer would split anyway. */
        if (d == ' ' || (s->kind == LAYA_KIND_COMPLETE && !tc_is_word(d) && d != '\n' && d != '\r' && d != '\t' &&
                         !tc_is_cjk(ws < end ? cp_at(t, end, ws) : 0)))
            anchor = j;
    }
    s->anchor = anchor;
    s->heal_len = 0;
    if (end - anchor > HEAL_MAX - 2 || end - ws >= LAYA_CANDIDATE_MAX_BYTES / 2) {
        s->no_cands = 1; /* a "word" this long is no word: nothing to complete */
        return;
    }
    if (anchor == 0 && s->ctxt_len == 0 && s->spm_space && end > 0) s->heal[s->heal_len++] = ' ';
    memcpy(s->heal + s->heal_len, t + anchor, (size_t)(end - anchor));
    s->heal_len += end - anchor;
    /* what the candidate replaces, in the raw text */
    size_t rws = s->map[ws];
    s->replace_bytes = (int32_t)(raw_len - rws);
    s->replace = (int32_t)nz_count_chars(raw + rws, raw_len - rws);
}

static int32_t lcp_tokens(const laya_token *a, int32_t na, const laya_token *b, int32_t nb) {
    int32_t i = 0, n = LAYA_MIN(na, nb);
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* The node cache's key of a token sequence, one token at a time: the key of prompt + hypothesis extends the
 * prompt's. 64 bits of a strong mix: a collision among the few hundred entries is out of reach. */
static uint64_t key_mix(uint64_t h, laya_token t) {
    h ^= (uint64_t)(uint32_t)t + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 31);
}
#define KEY0 0x6a09e667f3bcc909ull

/* An entry used by the step now running, for what nc_cur says. */
static void nc_touch(laya_session *s, int32_t e) {
    s->nc_stamp[e] = s->nc_clock;
    if (s->nc_pri[e] < s->nc_cur) s->nc_pri[e] = s->nc_cur;
}

static int32_t nc_find(const laya_session *s, uint64_t key, int32_t n) {
    for (int32_t i = 0; i < s->nc_cap; i++)
        if (s->nc_key[i] == key && s->nc_n[i] == n) return i;
    return -1;
}

static void top_push(laya_token *ids, float *vs, int32_t *n, int32_t cap, laya_token id, float v);

static void nsum_fill(laya_session *s, const float *l, nsum *o) {
    const int32_t nv = s->n_vocab;
    float mx = -INFINITY;
    for (int32_t i = 0; i < nv; i++) mx = l[i] > mx ? l[i] : mx;
    float *ev = s->vals, sum = s->m->kn->exp_sum(l, mx, ev, nv), e[3] = {0, 0, 0};
    static const uint8_t end_bit[3] = {TF_END_WORD, TF_END_IDENT, TF_END_LINE};
    for (int k = 0; k < 4; k++) o->n_top[k] = 0;
    for (int32_t i = 0; i < nv; i++) {
        uint8_t f = s->tflag[i];
        float v = l[i];
        for (int k = 0; k < 3; k++)
            if (f & end_bit[k]) e[k] += ev[i];
        if (f & TF_NOGEN) continue;
        for (int k = 0; k < 4; k++)
            if ((k == 0 || !(f & end_bit[k - 1])) && (o->n_top[k] < NTOP || v > o->topv[k][NTOP - 1]))
                top_push(o->top[k], o->topv[k], &o->n_top[k], NTOP, i, v);
    }
    o->lz = mx + log((double)sum);
    for (int k = 0; k < 3; k++) o->lend[k] = e[k] > 0 ? log((double)e[k] / sum) : -INFINITY;
}

/* Keep the logits after a token sequence (and their summary); an entry in use by this step is never the
 * one replaced. Returns the entry, or -1. */
static int32_t nc_put(laya_session *s, uint64_t key, int32_t n, const float *lg) {
    if (n <= 0 || s->nc_cap == 0) return -1;
    int32_t v = nc_find(s, key, n);
    if (v >= 0) {
        nc_touch(s, v);
        return v;
    }
    for (int32_t i = 0; i < s->nc_cap; i++) {
        if (s->nc_n[i] < 0) {
            v = i;
            break;
        }
        if (s->nc_stamp[i] != s->nc_clock && (v < 0 || s->nc_pri[i] < s->nc_pri[v])) v = i;
    }
    /* a less likely guess does not push out what a likelier one (or the caller's text) decoded */
    if (v < 0 || (s->nc_n[v] >= 0 && s->nc_pri[v] >= s->nc_cur)) {
        s->nc_full++;
        return -1;
    }
    size_t nv = (size_t)s->n_vocab;
    memcpy(s->nc_logits + (size_t)v * nv, lg, nv * sizeof(float));
    nsum_fill(s, lg, &s->nc_sum[v]);
    s->nc_key[v] = key;
    s->nc_n[v] = n;
    s->nc_pri[v] = 0;
    nc_touch(s, v);
    return v;
}

static int stop_now(laya_session *s, double step_ms);
static void step_learn(laya_session *s, double ms, int32_t rows);

/* Decode the prompt's tokens from position l into its slot; with logits, the last row's go to pre_logits. */
static double step_estimate(const laya_session *s, int32_t rows);

static laya_status prefill(laya_session *s, int32_t l, int logits, int can_stop, int *done) {
    int32_t nP = s->n_ptok, j = s->ps;
    *done = 0;
    laya_status st = laya_seq_truncate(s->ctx, j, l);
    if (st) return laya_err(s->err, sizeof s->err, st, "%s", laya_context_error(s->ctx));
    s->slot_n[j] = l;
    while (l < nP) {
        /* A submitted decision (or a prefetch) stops its prefill when cancelled or out of time; what is done
         * stays cached and the next keystroke goes on from there. */
        /* with a deadline or a cancel to honour, smaller chunks: the stop is checked between them */
        int32_t chunk = can_stop && (s->p.deadline_ms > 0 || atomic_load(&s->interruptible) || s->in_prefetch) ? CHUNK / 4 : CHUNK;
        int32_t n = LAYA_MIN(chunk, nP - l);
        if (can_stop && l > s->st.n_reused && stop_now(s, step_estimate(s, n))) {
            s->st.deadline_hit = 1;
            return LAYA_OK;
        }
        for (int32_t i = 0; i < n; i++) {
            s->b_tok[i] = s->ptok[l + i];
            s->b_seq[i] = j;
            s->b_want[i] = (logits && l + i == nP - 1) ? LAYA_WANT_LOGITS : 0;
        }
        laya_batch b = {n, s->b_tok, s->b_seq, s->b_want};
        double t0 = laya_now_ms();
        if ((st = laya_decode(s->ctx, b)))
            return laya_err(s->err, sizeof s->err, st, "decode: %s", laya_context_error(s->ctx));
        if (n <= 8) step_learn(s, laya_now_ms() - t0, n); /* a step of the size a decision takes: keeps the estimate fresh */
        memcpy(s->slot_tok[j] + l, s->ptok + l, (size_t)n * sizeof(laya_token));
        l += n;
        s->slot_n[j] = l;
        s->st.n_computed += n;
        if (logits && l == nP) memcpy(s->pre_logits, laya_get_logits(s->ctx, n - 1), (size_t)s->n_vocab * sizeof(float));
    }
    s->kv_lag = 0;
    *done = 1;
    return LAYA_OK;
}

/* Bring a slot to the prompt and have the logits after it: only the tokens past the longest common prefix
 * run. The slot holding most of the prompt becomes the prompt's slot: after a guessed text was decided
 * (prefetch), or after a hypothesis that is now the prompt (a word finished as a candidate had it), the
 * new prompt is often held whole by some slot, and its logits are in the node cache. */
static laya_status sync_prompt(laya_session *s) {
    int32_t nP = s->n_ptok, nsl = s->n_slots + TYPO_SLOTS;
    s->st.n_prompt = nP;
    s->st.n_computed = 0;
    if (nP == 0) {
        s->pre_n = -1;
        s->st.n_reused = 0;
        return LAYA_OK;
    }
    int32_t best = s->ps, l = lcp_tokens(s->slot_tok[s->ps], s->slot_n[s->ps], s->ptok, nP);
    for (int32_t k = 0; k < nsl; k++) {
        int32_t lk = lcp_tokens(s->slot_tok[k], s->slot_n[k], s->ptok, nP);
        if (lk > l) l = lk, best = k;
    }
    s->st.n_reused = l;
    s->ps = best;
    if (l == nP) s->kv_lag = 0;
    s->prompt_dirty = 0; /* (set again below if the prefill is cut short) */
    if (l == nP && s->pre_n == nP && s->pre_key == s->p_key) return LAYA_OK;
    int32_t e = nc_find(s, s->p_key, nP);
    if (e >= 0) {
        /* Known logits: a decision that finds all its hypotheses in the node cache needs nothing more, so
         * the rest of the prompt's KV waits for a decode step that needs it (prompt_kv). */
        memcpy(s->pre_logits, s->nc_logits + (size_t)e * (size_t)s->n_vocab, (size_t)s->n_vocab * sizeof(float));
        s->nc_clock++;
        nc_touch(s, e);
        s->pre_n = nP;
        s->pre_key = s->p_key;
        s->kv_lag = l < nP;
        return LAYA_OK;
    }
    if (l >= nP) l = nP - 1;
    s->pre_n = -1;
    int done = 0;
    laya_status st = prefill(s, l, 1, 1, &done);
    if (st || !done) {
        s->prompt_dirty = 1;
        return st;
    }
    s->pre_n = nP;
    s->pre_key = s->p_key;
    s->nc_clock++;
    nc_put(s, s->p_key, nP, s->pre_logits);
    return LAYA_OK;
}

/* Before a decode step that reads the prompt's slot: its KV up to the whole prompt. */
static laya_status prompt_kv(laya_session *s) {
    if (!s->kv_lag) return LAYA_OK;
    int32_t l = lcp_tokens(s->slot_tok[s->ps], s->slot_n[s->ps], s->ptok, s->n_ptok);
    int done;
    return prefill(s, LAYA_MIN(l, s->n_ptok - 1), 0, 0, &done); /* a few tokens: not worth stopping for */
}

static laya_status set_text(laya_session *s, const char *before, size_t before_len, const char *after,
                            size_t after_len) {
    size_t mt = (size_t)s->p.max_text;
    size_t cut = window_start(before, 0, before_len, mt);
    s->st.truncated = cut > 0;
    const char *raw = before + cut;
    size_t raw_len = before_len - cut;
    s->norm_len = (int32_t)nz_normalize(raw, raw_len, s->norm_flags, s->norm, s->map);
    size_t an = tc_utf8_cut_end(after, after_len, LAYA_MIN(after_len, mt / 4));
    s->st.truncated |= an < after_len;
    s->after_len = an ? (int32_t)nz_normalize(after, an, s->norm_flags, s->after, s->amap) : 0;
    analyze(s, raw, raw_len);
    find_last_word(s, raw, raw_len);

    /* The prompt: start token, mode token, context, then the text up to the anchor (FIM: with the suffix). */
    int32_t k = 0;
    laya_status st;
    if (s->t_start >= 0) s->ptok[k++] = s->t_start;
    laya_token mode_tok = s->t_mode[s->p.mode];
    if (s->p.mode == LAYA_MODE_TEXT && s->t_zh >= 0) {
        int32_t cjk = 0, all = 0; /* Chinese text gets the model's Chinese mode */
        for (int32_t i = 0; i < s->norm_len;) {
            size_t j = (size_t)i;
            uint32_t c = nz_next(s->norm, (size_t)s->norm_len, &j);
            i = (int32_t)j;
            if (c > ' ') all++, cjk += tc_is_cjk(c);
        }
        if (all > 0 && 3 * cjk >= all) mode_tok = s->t_zh;
    }
    if (mode_tok >= 0) s->ptok[k++] = mode_tok;
    /* Fill-in-the-middle only with a suffix to fill towards: with nothing after the cursor a FIM prompt
     * asks for a "middle" (in training, a random span that often starts inside a word) and the plain
     * prefix is the better question. */
    int after_text = 0;
    for (int32_t i = 0; i < s->after_len && !after_text; i++)
        after_text = s->after[i] != ' ' && s->after[i] != '\t' && s->after[i] != '\n' && s->after[i] != '\r';
    int fim = s->p.mode == LAYA_MODE_CODE && after_text && s->t_fim_pre >= 0 && s->t_fim_suf >= 0 && s->t_fim_mid >= 0;
    if (fim) s->ptok[k++] = s->t_fim_pre;
    int32_t n_start = k;
    int dropped = 0;
    size_t pl = 0;
    if (s->ctxt_len) {
        memcpy(s->prompt, s->ctxt, (size_t)s->ctxt_len);
        pl = (size_t)s->ctxt_len;
        if (s->prompt[pl - 1] != '\n') s->prompt[pl++] = '\n';
    }
    memcpy(s->prompt + pl, s->norm, (size_t)s->anchor);
    pl += (size_t)s->anchor;
    if ((st = tokenize_into(s, s->prompt, pl, &k))) return st;
    /* Keep the prompt within the cache: drop the oldest tokens (after the start tokens). */
    int32_t limit = s->p.max_kv_size - s->max_tokens - 2 - (fim ? 2 + s->p.max_text / 16 : 0);
    if (k > limit) {
        /* in steps of limit / 2, so that typing at the end keeps the same start (and the cache) */
        int32_t step = LAYA_MAX(1, limit / 2), drop = ((k - limit + step - 1) / step) * step;
        drop = LAYA_MIN(drop, k - n_start);
        dropped = 1;
        memmove(s->ptok + n_start, s->ptok + n_start + drop, (size_t)(k - n_start - drop) * sizeof(laya_token));
        k -= drop;
        s->st.truncated = 1;
    }
    if (fim) {
        s->ptok[k++] = s->t_fim_suf;
        int32_t k0 = k;
        if ((st = tokenize_into(s, s->after, (size_t)s->after_len, &k))) return st;
        if (k - k0 > s->p.max_text / 16) k = k0 + s->p.max_text / 16;
        s->ptok[k++] = s->t_fim_mid;
    }
    if (k == 0) s->no_cands = 1; /* no start token and no text: nothing to condition on */
    if (s->last_ws >= 0 && !fim) {
        /* the prompt before the last word: the context its corrections are scored in */
        int32_t kc = n_start;
        memcpy(s->ctok, s->ptok, (size_t)n_start * sizeof(laya_token));
        size_t cl = pl - (size_t)s->anchor + (size_t)s->last_anchor;
        if (dropped || (st = tokenize_to(s, s->prompt, cl, s->ctok, &kc)) ||
            lcp_tokens(s->ctok, kc, s->ptok, k) < kc || kc < 1)
            s->last_ws = -1;
        s->n_ctok = kc;
    }
    s->n_ptok = k;
    uint64_t h = KEY0;
    for (int32_t i = 0; i < k; i++) h = key_mix(h, s->ptok[i]);
    s->p_key = h;
    s->prompt_dirty = 1; /* the prompt's new tokens are decoded by the decision, inside its deadline */
    return LAYA_OK;
}

/* set_text of the caller's text (the document cache aside: the caller updates it): before is the end of a
 * text of full_len bytes, from its byte full_len - before_len on. */
static laya_status set_text_window(laya_session *s, const char *before, size_t before_len, size_t full_len,
                                   const char *after, size_t after_len) {
    if (!before) before = "";
    /* Kept for prefetch, which decides guessed texts and then comes back to this one. */
    size_t mt = (size_t)s->p.max_text, base = full_len - before_len, cut = window_start(before, base, full_len, mt);
    size_t an = tc_utf8_cut_end(after, after_len, LAYA_MIN(after_len, mt / 4));
    s->cur_raw_len = full_len - cut;
    if (s->cur_raw_len) memcpy(s->cur_raw, before + (cut - base), s->cur_raw_len);
    s->cur_after_len = an;
    if (an) memcpy(s->cur_after, after, an);
    s->cur_full = full_len;
    s->cur_cut = cut;
    s->have_text = 1;
    s->decided = 0;
    s->has_cands = 0;
    s->pf_n = -1;
    s->nc_cur = ((s->nc_cur >> 32) + 1) << 32 | PRI_OWN; /* a new keystroke */
    laya_status st = set_text(s, s->cur_raw, s->cur_raw_len, s->cur_after, s->cur_after_len);
    s->st.truncated |= cut > 0 || an < after_len;
    return st;
}

laya_status laya_session_set_text(laya_session *s, const char *before, size_t before_len, const char *after,
                                  size_t after_len) {
    return laya_session_set_text_tail(s, before, before_len, before_len, after, after_len);
}

size_t laya_session_tail_bytes(const laya_session *s) {
    if (!s) return 0;
    return LAYA_MAX((size_t)s->p.max_text, dc_span(s->dc));
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
    dc_update(s->dc, tail, tail_len, before_len - tail_len);
    return set_text_window(s, tail, tail_len, before_len, after, after_len);
}

void laya_session_interrupt(laya_session *s) {
    if (!s) return;
    atomic_store(&s->interruptible, 1);
    atomic_store(&s->interrupted, 1);
}

/* ---- the decision ----------------------------------------------------------------------------------- */

static void fin_punct(fin *f, const char *pc, int32_t pl, float pp) {
    if (pl <= 0 || pp <= f->punct_p) return;
    memcpy(f->punct, pc, (size_t)pl);
    f->punct_len = pl;
    f->punct_p = pp;
}

/* A finished candidate (another path to the same text adds up); pc: the likeliest punctuation after it,
 * at probability pp given that it ends (pl 0: none known). */
static void add_fin_p(laya_session *s, const char *w, int32_t len, double logp, const char *pc, int32_t pl, float pp) {
    if (len <= 0 || len >= LAYA_CANDIDATE_MAX_BYTES || logp < s->log_min_prob) return;
    int32_t partial = s->norm_len - s->word_start;
    if (s->kind == LAYA_KIND_COMPLETE && len == partial) { /* the word as typed: nothing to offer */
        double a = LAYA_MAX(s->typed_lp, logp), b = LAYA_MIN(s->typed_lp, logp);
        s->typed_lp = b == -INFINITY ? a : a + log1p(exp(b - a)); /* prefetch guesses the word ends here */
        fin_punct(&s->typed_fin, pc, pl, pp);
        return;
    }
    int blank = 1;
    for (int32_t i = 0; i < len; i++) blank &= w[i] == ' ';
    if (blank) return;
    for (int32_t i = 0; i < s->n_fins; i++) {
        fin *f = &s->fins[i];
        if (f->len == len && memcmp(f->text, w, (size_t)len) == 0) { /* another path to the same text */
            double a = LAYA_MAX(f->logp, logp), b = LAYA_MIN(f->logp, logp);
            f->logp = a + log1p(exp(b - a));
            fin_punct(f, pc, pl, pp);
            return;
        }
    }
    fin *f;
    if (s->n_fins < FIN_MAX) {
        f = &s->fins[s->n_fins++];
    } else {
        f = &s->fins[0];
        for (int32_t i = 1; i < s->n_fins; i++)
            if (s->fins[i].logp < f->logp) f = &s->fins[i];
        if (f->logp >= logp) return;
    }
    memcpy(f->text, w, (size_t)len);
    f->text[len] = 0;
    f->len = len;
    f->logp = logp;
    f->punct_len = 0;
    f->punct_p = 0;
    fin_punct(f, pc, pl, pp);
}

static void add_fin(laya_session *s, const char *w, int32_t len, double logp) { add_fin_p(s, w, len, logp, NULL, 0, 0); }

/* The k-th best finished score, or -inf: a hypothesis below it can no longer make the list. */
static double fin_floor(const laya_session *s) {
    int32_t k = s->p.n_candidates, nb = 0;
    if (s->n_fins < k) return -INFINITY;
    double best[LAYA_MAX_CANDIDATES];
    for (int32_t i = 0; i < s->n_fins; i++) {
        double v = s->fins[i].logp;
        if (nb == k && v <= best[k - 1]) continue;
        int32_t j = nb < k ? nb++ : k - 1;
        while (j > 0 && best[j - 1] < v) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = v;
    }
    return best[k - 1];
}

/* w = the partial word typed + generated bytes past T (gen_len >= heal_len). */
static int32_t build_w(const laya_session *s, const hyp *h, char *w) {
    int32_t partial = s->norm_len - s->word_start, extra = h->gen_len - s->heal_len;
    memcpy(w, s->norm + s->word_start, (size_t)partial);
    memcpy(w + partial, h->gen + s->heal_len, (size_t)extra);
    return partial + extra;
}

/* Insert (id, v) into a top list of cap entries sorted by v descending. */
static void top_push(laya_token *ids, float *vs, int32_t *n, int32_t cap, laya_token id, float v) {
    if (*n == cap && v <= vs[cap - 1]) return;
    int32_t j = *n < cap ? (*n)++ : cap - 1;
    while (j > 0 && vs[j - 1] < v) {
        ids[j] = ids[j - 1];
        vs[j] = vs[j - 1];
        j--;
    }
    ids[j] = id;
    vs[j] = v;
}

/* Add a child of h with token id at score lp to the pool (or to the finished list when it completes). */
static void child(laya_session *s, const hyp *h, laya_token id, double lp, int32_t *n_pool) {
    size_t pl;
    const char *pc = laya_token_piece(s->m, id, &pl);
    if (!pc || h->gen_len + (int32_t)pl > GEN_MAX) return;
    hyp *c = &s->pool[*n_pool];
    memcpy(c->gen, h->gen, (size_t)h->gen_len);
    memcpy(c->gen + h->gen_len, pc, pl);
    c->gen_len = h->gen_len + (int32_t)pl;
    if (c->gen_len >= s->heal_len) {
        char w[W_MAX];
        int32_t wl = build_w(s, c, w);
        scan_res r = scan_w(s, w, wl, LAYA_MAX(0, wl - (int32_t)pl));
        if (r.st == SC_DEAD) return;
        if (r.st == SC_DONE) {
            add_fin(s, w, r.cut, lp);
            return;
        }
        if (r.fork > 0) add_fin(s, w, r.fork, lp); /* a block's line: a candidate, and the block goes on */
    }
    memcpy(c->tok, h->tok, (size_t)h->n_tok * sizeof(laya_token));
    c->tok[h->n_tok] = id;
    c->n_tok = h->n_tok + 1;
    c->logp = lp;
    c->slot = h->slot;
    c->key = key_mix(h->key, id);
    c->row = -1;
    c->hidden = 0;
    (*n_pool)++;
}

/* One step for hypothesis h: finish it where a word may end, and push its best children. */
static laya_status expand(laya_session *s, const hyp *h, int32_t *n_pool) {
    const int32_t B = s->n_slots, nv = s->n_vocab;
    const float *full = NULL;
    const nsum *sm = NULL;
    if (h->row == -1) full = s->pre_logits;
    else if (h->row <= NC_ROW0) {
        full = s->nc_logits + (size_t)(NC_ROW0 - h->row) * (size_t)nv;
        sm = &s->nc_sum[NC_ROW0 - h->row];
    }
    else if (!h->hidden) full = laya_get_logits(s->ctx, h->row);
    laya_token tid[LAYA_MAX_CANDIDATES];
    float tv[LAYA_MAX_CANDIDATES];
    int32_t nt = 0;
    if (h->gen_len < s->heal_len) {
        /* Constrained: only tokens consistent with the rest of the typed text, renormalized over them. */
        if (h->n_tok >= s->max_tokens) return LAYA_OK;
        const char *r = s->heal + h->gen_len;
        int32_t rl = s->heal_len - h->gen_len;
        int32_t na = vt_consistent(s->vt, r, (size_t)rl, s->allowed, nv);
        if (na == 0) return LAYA_OK;
        if (full) {
            for (int32_t i = 0; i < na; i++) s->vals[i] = full[s->allowed[i]];
        } else {
            laya_status st = laya_get_logits_subset(s->ctx, h->row, s->allowed, na, s->vals);
            if (st) return laya_err(s->err, sizeof s->err, st, "logits subset: %s", laya_context_error(s->ctx));
        }
        float mx = -INFINITY;
        for (int32_t i = 0; i < na; i++) mx = LAYA_MAX(mx, s->vals[i]);
        for (int32_t i = 0; i < na; i++)
            if (nt < B || s->vals[i] > tv[B - 1]) top_push(tid, tv, &nt, B, s->allowed[i], s->vals[i]);
        double sum = s->m->kn->exp_sum(s->vals, mx, NULL, na);
        /* Renormalize at the first step only: there the prompt ends where the tokenizer would not have
         * split, so the model's mass over the consistent tokens is the probability of the typed prefix.
         * Later steps keep the model's own probabilities: a path on which the rest of the typed text is
         * unlikely (" I" then "should" for "Ish") is worth little, and renormalizing would inflate it.
         * With params.focused_output a later step has only the allowed tokens' logits (no normalizer)
         * and renormalizes over them instead. */
        double lz = mx + log(sum);
        if (h->n_tok > 0) {
            if (h->row == -1 || h->hidden) {
                /* focused output: renormalized over the allowed tokens */
            } else if (sm) {
                lz = sm->lz;
            } else {
                float fmx = -INFINITY;
                for (int32_t i = 0; i < nv; i++) fmx = LAYA_MAX(fmx, full[i]);
                lz = fmx + log((double)s->m->kn->exp_sum(full, fmx, NULL, nv));
            }
        }
        for (int32_t i = 0; i < nt; i++) child(s, h, tid[i], h->logp + tv[i] - lz, n_pool);
        return LAYA_OK;
    }
    if (!full) return LAYA_OK; /* cannot happen: free steps always ask for full logits */
    char w[W_MAX];
    int32_t wl = build_w(s, h, w);
    scan_res r = scan_w(s, w, wl, wl);
    uint8_t ender = s->stop == STOP_WORD ? TF_END_WORD : s->stop == STOP_IDENT ? TF_END_IDENT : TF_END_LINE;
    int expand_more = h->n_tok < s->max_tokens;
    if (sm) { /* from the summary: the best generating tokens, without the enders where the word may end */
        int ek = ender == TF_END_WORD ? 0 : ender == TF_END_IDENT ? 1 : 2, lk = r.can_end ? 1 + ek : 0;
        if (r.can_end && sm->lend[ek] > -INFINITY) {
            /* the likeliest punctuation after the word, among the best tokens (prefetch guesses "word, ") */
            const char *pc = NULL;
            size_t pl = 0;
            float pp = 0;
            for (int32_t j = 0; s->stop == STOP_WORD && j < sm->n_top[0] && !pc; j++) {
                const char *q = laya_token_piece(s->m, sm->top[0][j], &pl);
                int ok = q && pl > 0 && pl < 8;
                for (size_t u = 0; ok && u < pl; u++) ok = strchr(",.;:!?)\"'", q[u]) != NULL && q[u];
                if (ok) pc = q, pp = (float)exp(sm->topv[0][j] - sm->lz - sm->lend[ek]);
            }
            add_fin_p(s, w, wl, h->logp + sm->lend[ek], pc, pc ? (int32_t)pl : 0, pp);
        }
        if (r.can_end && r.cjk && !expand_more) add_fin(s, w, wl, h->logp);
        for (int32_t j = 0; expand_more && j < sm->n_top[lk] && j < B; j++)
            child(s, h, sm->top[lk][j], h->logp + sm->topv[lk][j] - sm->lz, n_pool);
        return LAYA_OK;
    }
    float mx = -INFINITY;
    for (int32_t i = 0; i < nv; i++) mx = LAYA_MAX(mx, full[i]);
    /* the exponentials over the vocabulary are the decision's own cost: the kernel table's (vectorized) */
    float *ev = s->vals, sum = s->m->kn->exp_sum(full, mx, ev, nv), sum_end = 0;
    for (int32_t i = 0; i < nv; i++) {
        uint8_t f = s->tflag[i];
        if (f & ender) sum_end += ev[i];
        if (expand_more && !(f & TF_NOGEN) && !(r.can_end && (f & ender)) && (nt < B || full[i] > tv[B - 1]))
            top_push(tid, tv, &nt, B, i, full[i]);
    }
    double lz = mx + log((double)sum);
    if (r.can_end && sum_end > 0) add_fin(s, w, wl, h->logp + log((double)sum_end / sum));
    if (r.can_end && r.cjk && !expand_more) add_fin(s, w, wl, h->logp); /* a phrase at its length limit */
    for (int32_t i = 0; i < nt; i++) child(s, h, tid[i], h->logp + tv[i] - lz, n_pool);
    return LAYA_OK;
}

static int32_t lcp_slot(const laya_session *s, int32_t j, const hyp *c) {
    int32_t nP = s->n_ptok, n = s->slot_n[j], i = lcp_tokens(s->slot_tok[j], LAYA_MIN(n, nP), s->ptok, nP);
    if (i < nP) return i;
    while (i < n && i - nP < c->n_tok && s->slot_tok[j][i] == c->tok[i - nP]) i++;
    return i;
}

/* Decode the new hypotheses in one batch: each goes to its parent's slot if free, else to the free slot
 * sharing most of its tokens (every slot starts with the prompt, copied from the prompt's slot when far
 * behind). */
static laya_status decode_hyps(laya_session *s, hyp *hs, int32_t n) {
    int taken[MAX_SLOTS] = {0}, placed[MAX_SLOTS] = {0};
    int32_t rows = 0, nP = s->n_ptok;
    laya_status st;
    s->nc_clock++;
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
    for (int32_t i = 0; i < n && s->kv_lag; i++)
        if (!placed[i] && (st = prompt_kv(s))) return st;
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
        if (j != s->ps && l < nP) {
            /* the prompt's positions this slot lacks are copied from the prompt's slot (a few KB each):
             * decoding them again in every slot was most of a first step's rows after a word */
            if ((st = laya_seq_fork_from(s->ctx, s->ps, j, l, nP)))
                return laya_err(s->err, sizeof s->err, st, "fork: %s", laya_context_error(s->ctx));
            memcpy(s->slot_tok[j] + l, s->ptok + l, (size_t)(nP - l) * sizeof(laya_token));
            s->slot_n[j] = nP;
            l = nP;
        }
        if ((st = laya_seq_truncate(s->ctx, j, l)))
            return laya_err(s->err, sizeof s->err, st, "truncate: %s", laya_context_error(s->ctx));
        int want = LAYA_WANT_LOGITS;
        if (s->use_subset && s->p.focused_output && c->n_tok > 0 && c->gen_len < s->heal_len &&
            vt_count_consistent(s->vt, s->heal + c->gen_len, (size_t)(s->heal_len - c->gen_len)) <= s->n_vocab / 8)
            want = LAYA_WANT_HIDDEN;
        for (int32_t p = l; p < xn; p++) {
            laya_token t = p < nP ? s->ptok[p] : c->tok[p - nP];
            s->b_tok[rows] = t;
            s->b_seq[rows] = j;
            s->b_want[rows] = p == xn - 1 ? (int8_t)want : 0;
            s->slot_tok[j][p] = t;
            rows++;
        }
        s->slot_n[j] = xn;
        c->row = rows - 1;
        c->hidden = want == LAYA_WANT_HIDDEN;
    }
    if (rows == 0) return LAYA_OK;
    laya_batch b = {rows, s->b_tok, s->b_seq, s->b_want};
    if ((st = laya_decode(s->ctx, b))) {
        for (int32_t k = 0; k < s->n_slots + TYPO_SLOTS; k++) /* the batch did not run: forget what the slots were to hold */
            s->slot_n[k] = LAYA_MIN(s->slot_n[k], laya_seq_len(s->ctx, k));
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

static int cmp_fin(const void *a, const void *b) {
    double x = ((const fin *)a)->logp, y = ((const fin *)b)->logp;
    return (x < y) - (x > y);
}

static int cmp_hyp(const void *a, const void *b) {
    double x = ((const hyp *)a)->logp, y = ((const hyp *)b)->logp;
    return (x < y) - (x > y);
}

static double step_estimate(const laya_session *s, int32_t rows) { return rows ? s->step_ms * (1 + rows) / 2.0 : 0; }

/* About how many rows decoding c takes: none if cached, else its tokens past what its slot holds (a
 * hypothesis whose parent's slot was reused catches up). */
static int32_t hyp_rows(const laya_session *s, const hyp *c) {
    int32_t xn = s->n_ptok + c->n_tok;
    if (nc_find(s, c->key, xn) >= 0) return 0;
    return LAYA_MAX(1, xn - LAYA_MAX(lcp_slot(s, c->slot, c), s->n_ptok));
}

/* One more measured step: the median of the recent ones is robust to a descheduled thread or a cold cache,
 * and it follows the machine's speed as it changes. */
static void step_learn(laya_session *s, double ms, int32_t rows) {
    if (rows <= 0) return;
    s->step_hist[s->n_step_hist++ % 8] = ms * 2.0 / (1 + rows);
    int32_t n = LAYA_MIN(s->n_step_hist, 8);
    double v[8];
    memcpy(v, s->step_hist, (size_t)n * sizeof *v);
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    s->step_ms = v[n / 2];
}

static int stop_now(laya_session *s, double step_ms) {
    if (atomic_load(&s->interrupted)) return 1;
    /* a guess: the budget, not the deadline; each call makes one step at least, so slices of any size
     * make progress */
    if (s->in_prefetch) return s->st.n_decoded + s->st.n_computed + s->pf_done_rows > 0 && laya_now_ms() + step_ms > s->pf_end;
    if (s->p.deadline_ms > 0 && laya_now_ms() - s->t_start_ms + step_ms > s->p.deadline_ms) return 1;
    return 0;
}

/* User dictionary as a cache model: a word's weight is how often the user used it plus the boost it was
 * added with. */
static double ud_weight(const ud_entry *e) { return (double)e->count + (e->boost > 0 ? e->boost : 0); }

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

/* The typo decision for the word just finished: the word as typed and its near neighbours (typo.h) are
 * scored by the model in the context before the word (tokens, then the end of the word), plus a prior
 * from the typo cost; if a neighbour's posterior beats the typed word's and exceeds 1/2 (0.8 when the typed
 * word is a known word itself), it becomes a `correct` candidate whose prob and confidence are that posterior. Runs in the spare slots. */
static void corr_offer(laya_session *s, const char *w, size_t len, double post) {
    int32_t tail = s->norm_len - s->last_we;
    if (len + (size_t)tail >= LAYA_CANDIDATE_MAX_BYTES) return;
    laya_candidate *c = &s->corr.c[0];
    memcpy(s->corr.text[0], w, len);
    memcpy(s->corr.text[0] + len, s->norm + s->last_we, (size_t)tail);
    s->corr.text[0][len + (size_t)tail] = 0;
    c->text = s->corr.text[0];
    c->text_len = (int32_t)len + tail;
    c->replace = s->corr_replace;
    c->replace_bytes = s->corr_replace_bytes;
    c->kind = LAYA_KIND_CORRECT;
    c->prob = c->confidence = (float)post;
    s->corr.n = 1;
}

static laya_status corrections(laya_session *s) {
    s->corr.n = 0;
    if (s->last_ws < 0) return LAYA_OK;
    const char *typed = s->norm + s->last_ws;
    size_t tl = (size_t)(s->last_we - s->last_ws);
    uint32_t count = 0;
    int known = known_word(s, typed, tl, &count);
    /* A word seen this often in the list's text is almost never a slip for another (four of five typed
     * words): the model is not asked, which saves the decision about 20 rows at each word start. */
    if (known && count >= TYPO_COMMON) return LAYA_OK;
    /* ... and neither is a word this document keeps using (names, coinages: "Queequeg") */
    if (s->dc && dc_count(s->dc, typed, tl) >= DC_KNOWN) return LAYA_OK;
    /* The same word in the same context was decided before (a prefetch guessed this text): reuse it. */
    uint64_t key = KEY0;
    for (int32_t i = 0; i < s->n_ctok; i++) key = key_mix(key, s->ctok[i]);
    for (size_t i = 0; i < tl; i++) key = key_mix(key, (laya_token)(0x40000000 | (unsigned char)typed[i]));
    key = key_mix(key, s->last_anchor < s->last_ws ? 1 : 2);
    key |= 1; /* never 0, the empty entry */
    for (int32_t i = 0; i < CC_MAX; i++) {
        const corr_memo *m = &s->cc[i];
        if (m->key != key) continue;
        if (m->len > 0) corr_offer(s, m->word, (size_t)m->len, m->post);
        return LAYA_OK;
    }
    corr_memo *memo = &s->cc[s->cc_next];
    enum { MAXW = MAX_SLOTS - 1 };
    int32_t maxw = LAYA_MIN(MAXW, s->n_slots + TYPO_SLOTS - 1);
    ty_cand tc[MAXW];
    size_t nf = 0;
    typo_candidates(s, typed, tl, tc, (size_t)maxw - 1, &nf);
    nf = LAYA_MIN(nf, (size_t)maxw - 1);
    if (nf == 0) return LAYA_OK;
    laya_token wt[MAXW][TYPO_TOK];
    int32_t nw = 0, n_wt[MAXW], rows0[MAXW];
    double prior[MAXW];
    const char *wp[MAXW];
    size_t wl[MAXW];
    /* The list is mostly lower case: a candidate takes the typed word's initial capital, and a candidate
     * that differs from the typed word in case only is no correction. */
    int cap0 = typed[0] >= 'A' && typed[0] <= 'Z';
    char cbuf[MAXW][TY_WORD_MAX];
    for (size_t i = 0; i <= nf; i++) {
        const char *w = i ? tc[i - 1].word : typed;
        size_t len = i ? tc[i - 1].len : tl;
        if (i) {
            if (tc[i - 1].edits == 0 || len > TY_WORD_MAX) continue;
            memcpy(cbuf[i - 1], w, len);
            if (cap0 && cbuf[i - 1][0] >= 'a' && cbuf[i - 1][0] <= 'z') cbuf[i - 1][0] = (char)(cbuf[i - 1][0] - 32);
            if (len == tl && !memcmp(cbuf[i - 1], typed, tl)) continue;
            w = cbuf[i - 1];
        }
        char buf[TY_WORD_MAX + 2];
        size_t bl = 0;
        if (s->last_anchor < s->last_ws && !s->spm_space) buf[bl++] = ' ';
        memcpy(buf + bl, w, len);
        bl += len;
        size_t got = 0;
        if (tok_encode_work(s->m->tok, s->tw, buf, bl, 0, wt[nw], TYPO_TOK, &got) || got == 0) {
            if (i == 0) return LAYA_OK; /* the typed word itself cannot be scored */
            continue;
        }
        n_wt[nw] = (int32_t)got;
        prior[nw] = i ? -TYPO_PRIOR * tc[i - 1].cost - (known ? TYPO_KNOWN : 0) : 0;
        wp[nw] = w;
        wl[nw] = len;
        nw++;
    }
    if (nw < 2) return LAYA_OK;
    int32_t rows = 0, nC = s->n_ctok;
    laya_status st = prompt_kv(s);
    if (st) return st;
    for (int32_t i = 0; i < nw; i++) {
        int32_t j = i < s->ps ? i : i + 1; /* never the prompt's slot */
        int32_t l = LAYA_MIN(lcp_tokens(s->slot_tok[j], s->slot_n[j], s->ctok, nC), nC - 1);
        if (l < nC - 1) { /* the context's positions this slot lacks, from the prompt's slot */
            if ((st = laya_seq_fork_from(s->ctx, s->ps, j, l, nC - 1)))
                return laya_err(s->err, sizeof s->err, st, "fork: %s", laya_context_error(s->ctx));
            memcpy(s->slot_tok[j] + l, s->ctok + l, (size_t)(nC - 1 - l) * sizeof(laya_token));
            l = nC - 1;
        }
        if ((st = laya_seq_truncate(s->ctx, j, l)))
            return laya_err(s->err, sizeof s->err, st, "truncate: %s", laya_context_error(s->ctx));
        int32_t xn = nC + n_wt[i];
        for (int32_t q = l; q < xn; q++) {
            laya_token t = q < nC ? s->ctok[q] : wt[i][q - nC];
            s->b_tok[rows] = t;
            s->b_seq[rows] = j;
            s->b_want[rows] = q >= nC - 1 ? LAYA_WANT_LOGITS : 0;
            s->slot_tok[j][q] = t;
            if (q == nC - 1) rows0[i] = rows;
            rows++;
        }
        s->slot_n[j] = xn;
    }
    laya_batch b = {rows, s->b_tok, s->b_seq, s->b_want};
    int late = stop_now(s, step_estimate(s, rows));
    double t0 = laya_now_ms();
    if (late || (st = laya_decode(s->ctx, b))) {
        for (int32_t k = 0; k < s->n_slots + TYPO_SLOTS; k++)
            s->slot_n[k] = LAYA_MIN(s->slot_n[k], laya_seq_len(s->ctx, k));
        if (late) { /* no time left for it: no correction offered this time */
            s->st.deadline_hit = 1;
            return LAYA_OK;
        }
        return laya_err(s->err, sizeof s->err, st, "decode: %s", laya_context_error(s->ctx));
    }
    step_learn(s, laya_now_ms() - t0, rows);
    s->st.n_decoded += rows;
    s->st.n_steps++;
    double sc[MAXW], mx = -INFINITY;
    for (int32_t i = 0; i < nw; i++) {
        double lp = prior[i], a, e;
        for (int32_t q = 0; q < n_wt[i]; q++) {
            row_scores(s, laya_get_logits(s->ctx, rows0[i] + q), wt[i][q], &a, NULL);
            lp += a;
        }
        row_scores(s, laya_get_logits(s->ctx, rows0[i] + n_wt[i]), -1, NULL, &e);
        sc[i] = lp + e;
        mx = LAYA_MAX(mx, sc[i]);
    }
    double z = 0;
    for (int32_t i = 0; i < nw; i++) z += exp(sc[i] - mx);
    int32_t best = 0;
    for (int32_t i = 1; i < nw; i++)
        if (sc[i] > sc[best]) best = i;
    double post = exp(sc[best] - mx) / z;
    int32_t tail = s->norm_len - s->last_we;
    /* a typed word that is itself a known word needs stronger evidence (real-word errors are rarer) */
    double need = known ? 0.8 : 0.5;
    memo->key = key;
    memo->len = 0;
    s->cc_next = (s->cc_next + 1) % CC_MAX;
    if (best == 0 || post <= need || wl[best] + (size_t)tail >= LAYA_CANDIDATE_MAX_BYTES) return LAYA_OK;
    memo->len = (int32_t)wl[best];
    memo->post = (float)post;
    memcpy(memo->word, wp[best], wl[best]);
    corr_offer(s, wp[best], wl[best], post);
    return LAYA_OK;
}

/* The document cache as a cache language model: p = (1 - l) p_model + l p_doc, where p_doc is how often the
 * word occurs in the text before the cursor (after the word before it, if that pair occurred), and l grows
 * with the words there. Words the document has that start with what was typed (or followed the word
 * before) and the model did not offer join the candidates. */
/* A finished candidate's word: its text without the space a next word may begin with. */
static const char *fin_word(const fin *f, int32_t *n) {
    const char *w = f->text;
    *n = f->len;
    while (*n > 0 && *w == ' ') w++, (*n)--;
    return w;
}

/* A cache model's word joins the candidates unless one of them already is it. */
static void add_cache_word(laya_session *s, const char *word, int32_t len, double logp) {
    for (int32_t j = 0; j < s->n_fins; j++) {
        int32_t n;
        const char *w = fin_word(&s->fins[j], &n);
        if (n == len && !memcmp(w, word, (size_t)n)) return;
    }
    add_fin(s, word, len, logp);
}

static void doc_mix(laya_session *s) {
    int32_t partial = s->kind == LAYA_KIND_COMPLETE ? s->norm_len - s->word_start : 0;
    size_t ws, we;
    if (dc_prev_word(s->norm, (size_t)s->word_start, &ws, &we)) dc_set_context(s->dc, s->norm + ws, we - ws);
    else dc_set_context(s->dc, NULL, 0);
    double nw = (double)dc_total(s->dc), lam = (partial ? DC_LAMBDA_COMPLETE : DC_LAMBDA_NEXT) * nw / (nw + DC_N0);
    for (int32_t i = 0; i < s->n_fins; i++) {
        int32_t n;
        const char *w = fin_word(&s->fins[i], &n);
        double pd = n > 0 ? dc_prob(s->dc, w, (size_t)n) : 0;
        s->fins[i].logp = log((1 - lam) * exp(s->fins[i].logp) + lam * pd);
    }
    /* A next word joins only after a space: elsewhere whether a space comes first is the model's call. */
    char last = s->norm_len > 0 ? s->norm[s->norm_len - 1] : 0;
    if (partial == 0 && last != ' ') return;
    dc_hit h[LAYA_MAX_CANDIDATES];
    size_t k = dc_top(s->dc, s->norm + s->word_start, (size_t)partial, h, (size_t)s->p.n_candidates);
    for (size_t i = 0; i < k; i++) add_cache_word(s, h[i].word, h[i].len, log(lam * h[i].p));
}

static laya_status decide(laya_session *s) {
    s->n_fins = 0;
    s->out.n = 0;
    s->typed_lp = -INFINITY;
    s->typed_fin.punct_len = 0;
    s->typed_fin.punct_p = 0;
    s->st.n_decoded = s->st.n_steps = s->st.deadline_hit = 0;
    if (!s->prompt_dirty) s->st.n_computed = 0;
    else {
        laya_status st = sync_prompt(s);
        if (st) return st;
        if (s->prompt_dirty) s->st.deadline_hit = 1; /* out of time (or cancelled) in the prefill */
    }
    if (s->no_cands || s->pre_n != s->n_ptok || s->n_ptok == 0) return LAYA_OK;
    hyp *root = &s->live[0];
    root->n_tok = 0;
    root->gen_len = 0;
    root->logp = 0;
    root->slot = s->ps;
    root->key = s->p_key;
    root->row = -1;
    int32_t pe = nc_find(s, s->p_key, s->n_ptok);
    if (pe >= 0) root->row = NC_ROW0 - pe; /* the same logits as pre_logits, with a summary */
    root->hidden = 0;
    s->n_live = 1;
    for (;;) {
        int32_t n_pool = 0;
        for (int32_t i = 0; i < s->n_live; i++) {
            laya_status st = expand(s, &s->live[i], &n_pool);
            if (st) return st;
        }
        if (n_pool == 0) break;
        qsort(s->pool, (size_t)n_pool, sizeof(hyp), cmp_hyp);
        double floor = fin_floor(s);
        int32_t n = 0;
        for (int32_t i = 0; i < n_pool && n < s->n_slots; i++) {
            hyp *c = &s->pool[i];
            if (c->logp <= floor || c->logp < s->log_min_prob) break; /* sorted: the rest are lower */
            if (c->n_tok >= s->max_tokens && c->gen_len < s->heal_len) continue; /* can never finish */
            s->next[n++] = *c;
        }
        if (n == 0) break;
        int32_t rows[MAX_SLOTS + 1]; /* rows[i]: the rows of the first i hypotheses */
        rows[0] = s->kv_lag ? 1 : 0;
        for (int32_t i = 0; i < n; i++) rows[i + 1] = rows[i] + hyp_rows(s, &s->next[i]);
        if (rows[n] > 0 && stop_now(s, step_estimate(s, rows[n]))) {
            /* Not all of them in time: the likeliest that fit (the pool is sorted), or none. A step whose
             * hypotheses are all cached decodes nothing and is always taken. */
            s->st.deadline_hit = 1;
            while (n > 0 && rows[n] > 0 && stop_now(s, step_estimate(s, rows[n]))) n--;
            if (n == 0) break;
        }
        double t0 = laya_now_ms();
        int32_t r0 = s->st.n_decoded;
        laya_status st = decode_hyps(s, s->next, n);
        if (st) return st;
        step_learn(s, laya_now_ms() - t0, s->st.n_decoded - r0);
        hyp *t = s->live;
        s->live = s->next;
        s->next = t;
        s->n_live = n;
    }
    s->corr.n = 0;
    if (s->last_ws >= 0 && !stop_now(s, 0)) {
        laya_status st = corrections(s);
        if (st) return st;
    }
    if (s->corr.n) { /* a correction goes first: it is about what was already typed */
        s->out.c[0] = s->corr.c[0];
        memcpy(s->out.text[0], s->corr.text[0], (size_t)s->corr.c[0].text_len + 1);
        s->out.c[0].text = s->out.text[0];
        s->out.n = 1;
    }
    /* rank */
    if (s->dc && dc_total(s->dc) > 0) doc_mix(s);
    if (s->ud && s->p.mode == LAYA_MODE_TEXT) {
        /* The user's words as a cache model interpolated with the model: p = (1 - l) p_model + l p_user,
         * p_user(w) = weight(w) / the weight of all the user's words, a probability of the same kind as the
         * model's (not given what was typed: that made the user's most frequent words win every prefix,
         * 1 point of keystroke savings lost on the held-out novel with --learn). So the names and jargon the
         * user keeps using come up even where the model never offers them. */
        int32_t partial = s->kind == LAYA_KIND_COMPLETE ? s->norm_len - s->word_start : 0;
        const char *pre = s->norm + s->word_start;
        if (s->ud_z < 0) { /* the words' weight, summed again only after the dictionary changed */
            s->ud_z = 0;
            for (size_t i = 0; i < ud_count(s->ud); i++) {
                const ud_entry *e = ud_at(s->ud, i);
                if (!(e->flags & UD_F_PHRASE)) s->ud_z += ud_weight(e);
            }
        }
        double z = s->ud_z;
        if (z > 0) {
            for (int32_t i = 0; i < s->n_fins; i++) {
                int32_t n;
                const char *w = fin_word(&s->fins[i], &n);
                const ud_entry *e = n > 0 ? ud_lookup(s->ud, w, (size_t)n) : NULL;
                double pu = e && !(e->flags & UD_F_PHRASE) ? ud_weight(e) / z : 0;
                s->fins[i].logp = log((1 - UD_LAMBDA) * exp(s->fins[i].logp) + UD_LAMBDA * pu);
            }
            const ud_entry *e[LAYA_MAX_CANDIDATES];
            size_t ne = s->kind == LAYA_KIND_COMPLETE /* a next word's spacing is the model's to choose */
                            ? ud_prefix_top(s->ud, pre, (size_t)partial, e, (size_t)s->p.n_candidates)
                            : 0;
            for (size_t i = 0; i < ne; i++)
                if (e[i]->len > partial && !(e[i]->flags & UD_F_PHRASE))
                    add_cache_word(s, e[i]->word, e[i]->len, log(UD_LAMBDA * ud_weight(e[i]) / z));
        }
    }
    qsort(s->fins, (size_t)s->n_fins, sizeof(fin), cmp_fin);
    for (int32_t i = 0; i < s->n_fins && s->out.n < s->p.n_candidates; i++) {
        const fin *f = &s->fins[i];
        int32_t k = s->out.n++;
        laya_candidate *c = &s->out.c[k];
        memcpy(s->out.text[k], f->text, (size_t)f->len + 1);
        c->text = s->out.text[k];
        c->text_len = f->len;
        c->replace = s->kind == LAYA_KIND_COMPLETE ? s->replace : 0;
        c->replace_bytes = s->kind == LAYA_KIND_COMPLETE ? s->replace_bytes : 0;
        c->kind = s->kind;
        c->prob = (float)LAYA_MIN(1.0, exp(f->logp));
        c->confidence = calibrate(s, c->prob);
    }
    return LAYA_OK;
}

/* The decision for the current text was made: prefetch plans from it, or finishes it first if the
 * deadline cut it short. */
static void decided(laya_session *s) {
    s->decided = !s->st.deadline_hit;
    s->pf_n = -1;
}

laya_status laya_session_suggest(laya_session *s, const laya_candidate **out, int32_t *n) {
    if (out) *out = NULL;
    if (n) *n = 0;
    if (!s || !out || !n) return LAYA_ERR_INVALID_ARG;
    s->t_start_ms = laya_now_ms();
    laya_status st = decide(s);
    s->st.last_ms = laya_now_ms() - s->t_start_ms;
    if (st) return st;
    decided(s);
    s->has_cands = 1;
    *out = s->out.c;
    *n = s->out.n;
    return LAYA_OK;
}

laya_status laya_session_learn(laya_session *s, const char *text, size_t len) {
    if (!s || (!text && len)) return LAYA_ERR_INVALID_ARG;
    if (s->p.sensitive || !s->ud || len == 0) return LAYA_OK;
    laya_status st = ud_learn(s->ud, text, len);
    s->ud_z = -1; /* on an error too: memory was reloaded from the file */
    if (st) return laya_err(s->err, sizeof s->err, st, "user dictionary: %s", ud_error(s->ud));
    return LAYA_OK;
}

laya_status laya_session_accept(laya_session *s, int32_t i) {
    if (!s) return LAYA_ERR_INVALID_ARG;
    const cand_buf *cb = &s->out;
    if (i < 0 || i >= cb->n)
        return laya_err(s->err, sizeof s->err, LAYA_ERR_INVALID_ARG, "no candidate %d in the last decision", i);
    const laya_candidate *c = &cb->c[i];
    if (!s->p.sensitive && s->ud) { /* a sensitive field never learns */
        laya_status st = ud_learn(s->ud, c->text, (size_t)c->text_len);
        s->ud_z = -1;
        if (st) return laya_err(s->err, sizeof s->err, st, "user dictionary: %s", ud_error(s->ud));
    }
    /* Keep the cache warm: compute the prompt of the text the caller will most likely send next (the
     * candidate in place, then a space), off the keystroke path. */
    int32_t start = c->kind == LAYA_KIND_CORRECT ? s->last_ws : c->kind == LAYA_KIND_COMPLETE ? s->word_start
                                                                                              : s->norm_len;
    if (start < 0) return LAYA_OK;
    size_t n = (size_t)start;
    memcpy(s->guess, s->norm, n);
    memcpy(s->guess + n, c->text, (size_t)c->text_len);
    n += (size_t)c->text_len;
    if (c->kind != LAYA_KIND_CORRECT && s->guess[n - 1] != ' ') s->guess[n++] = ' ';
    char *after = s->guess + n; /* set_text normalizes into s->after: give it a copy */
    memcpy(after, s->after, (size_t)s->after_len);
    laya_status st = set_text_window(s, s->guess, n, n, after, (size_t)s->after_len); /* a guess: not the document */
    return st ? st : sync_prompt(s);
}

static void copy_cands(cand_buf *dst, const cand_buf *src) {
    dst->n = src->n;
    for (int32_t i = 0; i < src->n; i++) {
        dst->c[i] = src->c[i];
        memcpy(dst->text[i], src->text[i], (size_t)src->c[i].text_len + 1);
        dst->c[i].text = dst->text[i];
    }
}

/* ---- prefetch: the next keystroke's decision, in the idle time before it ----------------------------- */

static void pf_add(laya_session *s, double w, int32_t keep, const char *a, int32_t al, const char *b, int32_t bl) {
    if (!(w > 0) || al + bl <= 0 || al + bl > LAYA_CANDIDATE_MAX_BYTES + 4) return;
    for (int32_t i = 0; i < s->pf_n; i++) {
        pf_guess *g = &s->pf[i];
        if (g->keep == keep && g->add_len == al + bl && !memcmp(g->add, a, (size_t)al) &&
            !memcmp(g->add + al, b, (size_t)bl)) {
            g->w = LAYA_MAX(g->w, w);
            return;
        }
    }
    pf_guess *g;
    if (s->pf_n < PF_MAX) {
        g = &s->pf[s->pf_n++];
    } else {
        g = &s->pf[0];
        for (int32_t i = 1; i < s->pf_n; i++)
            if (s->pf[i].w < g->w) g = &s->pf[i];
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
    s->pf_n = 0;
    s->pf_i = 0;
    if (s->no_cands || s->n_ptok == 0) return;
    int text = s->p.mode == LAYA_MODE_TEXT;
    int32_t partial = s->kind == LAYA_KIND_COMPLETE ? s->norm_len - s->word_start : 0;
    int32_t keep_take = (int32_t)s->map[s->kind == LAYA_KIND_COMPLETE ? s->word_start : s->norm_len];
    int32_t keep_end = (int32_t)s->cur_raw_len;
    enum { NCH = 12 };
    char ch[NCH][4];
    int32_t chl[NCH], nch = 0;
    double chw[NCH];
    for (int32_t i = 0; i < s->n_fins; i++) {
        const fin *f = &s->fins[i];
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
    if (s->kind == LAYA_KIND_COMPLETE && text && s->typed_lp > -INFINITY) {
        pf_add(s, exp(s->typed_lp), keep_end, " ", 1, "", 0);
        if (s->typed_fin.punct_len > 0)
            pf_add(s, exp(s->typed_lp) * s->typed_fin.punct_p, keep_end, s->typed_fin.punct, s->typed_fin.punct_len, " ", 1);
    }
    qsort(s->pf, (size_t)s->pf_n, sizeof *s->pf, cmp_pf);
}

/* Decide the planned guesses, likeliest first, until end (a clock time) or a newer submit; then come back
 * to the caller's text and candidates. A guess cut short is done again by the next call (what it decoded
 * is in the node cache). */
static laya_status prefetch(laya_session *s, double end, int32_t *n_done, int32_t *n_left) {
    laya_session_stats st0 = s->st;
    int decided0 = s->decided;
    copy_cands(&s->pf_out, &s->out);
    laya_status st = LAYA_OK;
    s->in_prefetch = 1;
    s->pf_end = end;
    s->pf_done_rows = 0;
    s->st.n_decoded = s->st.n_computed = 0;
    if (!s->decided) { /* the caller's own text first (or again, without the deadline that cut it short) */
        st = decide(s);
        s->pf_done_rows += s->st.n_decoded + s->st.n_computed;
        if (!st && !s->st.deadline_hit) {
            s->pf_n = -1;
            decided0 = 1; /* done now: the plan comes from it and stays */
            st0.deadline_hit = 0;
            copy_cands(&s->pf_out, &s->out); /* the caller's candidates are these from now on */
        } else {
            s->pf_n = s->pf_i = 0; /* not finished yet: no plan until it is */
        }
    }
    if (!st && s->pf_n < 0) pf_plan(s);
    size_t mt = (size_t)s->p.max_text, c0 = window_step_cut(s->cur_full, mt);
    int32_t done = 0;
    while (!st && s->pf_i < s->pf_n && !stop_now(s, 0)) {
        const pf_guess *g = &s->pf[s->pf_i];
        size_t n = (size_t)g->keep + (size_t)g->add_len;
        if (window_step_cut(s->cur_cut + n, mt) != c0) { /* the caller's window would move: another prompt */
            s->pf_i++;
            continue;
        }
        s->nc_cur = (s->nc_cur >> 32) << 32 | (uint64_t)(LAYA_MIN(g->w, 0.999999) * 4294967296.0);
        uint32_t full0 = s->nc_full;
        memcpy(s->pf_text, s->cur_raw, (size_t)g->keep);
        memcpy(s->pf_text + g->keep, g->add, (size_t)g->add_len);
        s->st.deadline_hit = 0;
        st = set_text(s, s->pf_text, n, s->cur_after, s->cur_after_len);
        if (!st && !s->st.deadline_hit) st = decide(s);
        s->pf_done_rows += s->st.n_decoded + s->st.n_computed;
        if (!st && s->nc_full != full0) {
            /* the cache is full of likelier work: this guess and the less likely ones cannot be kept */
            s->pf_i = s->pf_n;
            break;
        }
        if (st || s->st.deadline_hit) break;
        s->pf_i++;
        done++;
    }
    s->in_prefetch = 0;
    s->nc_cur = (s->nc_cur >> 32) << 32 | PRI_OWN;
    laya_status st2 = set_text(s, s->cur_raw, s->cur_raw_len, s->cur_after, s->cur_after_len);
    copy_cands(&s->out, &s->pf_out);
    s->st = st0;
    s->decided = decided0;
    if (n_done) *n_done = done;
    if (n_left) *n_left = s->pf_n < 0 ? 1 : s->pf_n - s->pf_i + !s->decided;
    return st ? st : st2;
}

laya_status laya_session_prefetch(laya_session *s, double budget_ms, int32_t *n_done, int32_t *n_left) {
    if (n_done) *n_done = 0;
    if (n_left) *n_left = 0;
    if (!s || !(budget_ms >= 0 && budget_ms <= 1e9)) return LAYA_ERR_INVALID_ARG;
    if (!s->have_text || budget_ms == 0) return LAYA_OK;
    return prefetch(s, laya_now_ms() + budget_ms, n_done, n_left);
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
