/* doccache.c — the document cache (see doccache.h).
 *
 * The window: the words that start in [R0, E), where E is where the word being typed starts (or the text's
 * end) and R0 = E - window rounded down to a multiple of window / 4, so that the window moves in steps and
 * typing only adds words at its end. The bytes [R0 - 8, E) are kept (the 8 bytes tell whether a word
 * starts at R0 or runs across it), so that an update can check that the text it knew is unchanged and
 * can remove words again without the caller's text. Words and pairs live in two open-addressing tables;
 * an entry whose count falls to 0 stays (it may come back) until the tables are rebuilt. */
#include "typing/doccache.h"

#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "typing/normalize.h"
#include "base/unicode.h"
#include "typing/textclass.h"

#define BEFORE 8 /* bytes kept before R0 */
/* Runs of word characters longer than this (raw bytes) are never a word the cache counts; scans stop
 * there, so that a megabyte without a space costs no more per keystroke than a word. */
#define RUN_MAX (4 * DC_WORD_MAX)
#define GAP_SCAN 64 /* the most bytes between two words that pair */

typedef struct dc_word {
    uint64_t h;
    uint32_t gen;      /* the entry is in use when gen is the cache's */
    uint32_t count;    /* occurrences in the window */
    uint32_t n_after;  /* pairs with this word first: occurrences */
    uint32_t n_types;  /* ... and distinct second words */
    int32_t next_fb;   /* the next entry with the same first byte */
    int32_t first_pair;/* its pairs as the first word */
    uint8_t len;
    char w[DC_WORD_MAX + 1];
} dc_word;

typedef struct dc_pair {
    uint64_t h;
    uint32_t gen, count;
    int32_t a, b, next; /* first and second word; the next pair of a */
} dc_pair;

struct dc_cache {
    size_t window, quantum;
    uint32_t ucap, pcap, u_used, p_used, gen; /* used: entries taken (those whose count fell to 0 too) */
    dc_word *u;
    dc_pair *p;
    int32_t fb_head[256];
    uint64_t total;
    char *text;         /* bytes [t0, t0 + tlen) of the caller's text */
    size_t tcap, tlen;
    uint64_t t0, r0, e; /* window [r0, e) */
    int valid, overflow;
    int32_t last;       /* entry of the last word before e (-1: none, or not counted) */
    uint64_t last_end;
    int32_t ctx;        /* the context word's entry, or -1 */
};

/* ---- characters ----------------------------------------------------------------------------------- */

static int ends_sentence(unsigned char b) { return b == '.' || b == '!' || b == '?' || b == '\n' || b == '\r'; }

/* Start of the code point that byte i of t[0..n) belongs to (as nz_next reads: an invalid byte alone). */
static size_t cp_floor(const char *t, size_t n, size_t i) {
    for (size_t q = i; q > 0 && i - q < 3;) {
        q--;
        if (((unsigned char)t[q] & 0xC0) != 0x80) {
            size_t k = q;
            nz_next(t, n, &k);
            return k > i ? q : i;
        }
    }
    return i;
}

static size_t prev_start(const char *t, size_t n, size_t i) { return cp_floor(t, n, i - 1); } /* i > 0 */

/* 1 if the code point at t[i] is part of a word: a word character, or an apostrophe between letters.
 * *l: its bytes. */
static int in_word(const char *t, size_t n, size_t i, size_t *l) {
    size_t j = i;
    uint32_t c = nz_next(t, n, &j);
    *l = j - i;
    if (tc_is_word_spaced(c) || tc_is_zero_width(c)) return 1;
    if (!tc_is_apos(c) || i == 0 || j >= n) return 0;
    size_t k = j, p = prev_start(t, n, i);
    uint32_t nx = nz_next(t, n, &k), pv = nz_next(t, n, &p);
    return tc_is_letter_spaced(pv) && tc_is_letter_spaced(nx);
}

/* Whether the words around t[a_end..b_start) pair: at most DC_GAP_MAX bytes other than spaces and tabs
 * (a run of spaces is one to the model), no sentence end. */
static int gap_pairs(const char *t, size_t a_end, size_t b_start) {
    size_t other = 0;
    if (b_start - a_end > GAP_SCAN) return 0;
    for (size_t q = a_end; q < b_start; q++) {
        if (ends_sentence((unsigned char)t[q])) return 0;
        other += t[q] != ' ' && t[q] != '\t';
    }
    return other <= DC_GAP_MAX;
}

size_t dc_word_start(const char *t, size_t n) {
    size_t ws = n, l;
    while (ws > 0) {
        size_t j = prev_start(t, n, ws), k = j;
        uint32_t c = nz_next(t, n, &k);
        int ok = in_word(t, n, j, &l);
        if (!ok && k == n && tc_is_apos(c) && j > 0) { /* "don'": an apostrophe after a letter is being typed on */
            size_t q = prev_start(t, n, j);
            ok = tc_is_letter_spaced(nz_next(t, n, &q));
        }
        if (!ok) break;
        if (n - j > RUN_MAX) { /* no word is this long: stop inside the run, but after a letter, since an
                                  apostrophe that ends the kept text reads as no part of a word */
            size_t q = j > 0 ? prev_start(t, n, j) : 0;
            k = q;
            if (j > 0 && tc_is_apos(nz_next(t, n, &k))) j = q;
            return j;
        }
        ws = j;
    }
    return ws;
}

/* The last word that ends at or before i in t[0..n): 0 if there is none. */
/* The last word that ends at or before i in t[0..n) and could pair with a word at i (no farther than
 * GAP_SCAN bytes, no longer than RUN_MAX): 0 if there is none. */
static int last_word(const char *t, size_t n, size_t i, size_t *ws, size_t *we) {
    size_t l, i0 = i;
    while (i > 0 && i0 - i <= GAP_SCAN) {
        size_t j = prev_start(t, n, i);
        if (in_word(t, n, j, &l)) break;
        i = j;
    }
    if (i == 0 || i0 - i > GAP_SCAN) return 0;
    size_t e = i;
    while (i > 0 && e - i <= RUN_MAX) {
        size_t j = prev_start(t, n, i);
        if (!in_word(t, n, j, &l)) break;
        i = j;
    }
    if (e - i > RUN_MAX || e == i) return 0;
    *ws = i;
    *we = e;
    return 1;
}

int dc_prev_word(const char *t, size_t n, size_t *ws, size_t *we) {
    size_t i = n, l;
    while (i > 0) {
        size_t j = prev_start(t, n, i);
        if (in_word(t, n, j, &l)) break;
        if (ends_sentence((unsigned char)t[j]) || n - j > 64) return 0;
        i = j;
    }
    if (i == 0 || !gap_pairs(t, i, n)) return 0;
    size_t e = i;
    while (i > 0 && e - i <= RUN_MAX) {
        size_t j = prev_start(t, n, i);
        if (!in_word(t, n, j, &l)) break;
        i = j;
    }
    if (e - i > RUN_MAX) return 0;
    *ws = i;
    *we = e;
    return 1;
}

/* The next word that starts in [i, to) of t[0..n) and ends before n; a run that i is inside of is not one. */
static int next_word(const char *t, size_t n, size_t i, size_t to, size_t *ws, size_t *we) {
    size_t l, a = i < n ? cp_floor(t, n, i) : i;
    if (a < i) { /* i is inside a code point: it belongs to what comes before i */
        if (in_word(t, n, a, &l))
            while (a < n && a < to && in_word(t, n, a, &l)) a += l;
        else
            a += l;
        i = a;
    } else if (i > 0 && i < n && in_word(t, n, i, &l) && in_word(t, n, prev_start(t, n, i), &l)) {
        while (i < n && i < to && in_word(t, n, i, &l)) i += l;
    }
    while (i < to && !in_word(t, n, i, &l)) i += l;
    if (i >= to) return 0;
    size_t s = i;
    while (i < n && i - s <= RUN_MAX && in_word(t, n, i, &l)) i += l; /* a longer run: not a word */
    if (i >= n) return 0;
    *ws = s;
    *we = i;
    return 1;
}

/* The word w[0..n) as the cache keeps it: zero-width characters dropped, full-width ASCII folded to
 * ASCII (as normalization does). Returns its length, 0 if nothing is left or it is longer than
 * DC_WORD_MAX. */
static size_t fold(const char *w, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint32_t c = nz_next(w, n, &j);
        if (tc_is_zero_width(c)) {
        } else if (c >= 0xFF01 && c <= 0xFF5E) {
            if (o + 1 > DC_WORD_MAX) return 0;
            out[o++] = (char)(c - 0xFEE0);
        } else {
            if (o + (j - i) > DC_WORD_MAX) return 0;
            memcpy(out + o, w + i, j - i);
            o += j - i;
        }
        i = j;
    }
    return o;
}

/* ---- tables --------------------------------------------------------------------------------------- */

static uint64_t hash_bytes(const char *w, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)w[i]) * 1099511628211ull;
    h ^= h >> 29;
    return h ? h : 1;
}

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
    h ^= h >> 31;
    return h ? h : 1;
}

/* Whether a table of cap entries, used of them taken, takes one more (at most 3/4 full); if not, the
 * update that asked rebuilds (c->overflow). */
static int room(dc_cache *c, uint32_t used, uint32_t cap) {
    if ((used + 1) * 4 <= cap * 3) return 1;
    c->overflow = 1;
    return 0;
}

/* Where w is (>= 0), or -1 - the free slot where it would go. */
static int64_t u_slot(const dc_cache *c, uint64_t h, const char *w, size_t n) {
    uint32_t m = c->ucap - 1, i = (uint32_t)h & m;
    for (;; i = (i + 1) & m) {
        const dc_word *e = &c->u[i];
        if (e->gen != c->gen) return -1 - (int64_t)i;
        if (e->h == h && e->len == n && !memcmp(e->w, w, n)) return i;
    }
}

static int32_t u_find(const dc_cache *c, const char *w, size_t n) {
    int64_t i = u_slot(c, hash_bytes(w, n), w, n);
    return i >= 0 ? (int32_t)i : -1;
}

/* The entry of w, new if need be (-1 if the table is full: c->overflow). */
static int32_t u_get(dc_cache *c, const char *w, size_t n) {
    uint64_t h = hash_bytes(w, n);
    int64_t i = u_slot(c, h, w, n);
    if (i >= 0) return (int32_t)i;
    if (!room(c, c->u_used, c->ucap)) return -1;
    dc_word *e = &c->u[-1 - i];
    memset(e, 0, sizeof *e);
    e->h = h;
    e->gen = c->gen;
    e->len = (uint8_t)n;
    memcpy(e->w, w, n);
    e->first_pair = -1;
    unsigned char b = (unsigned char)w[0];
    e->next_fb = c->fb_head[b];
    c->fb_head[b] = (int32_t)(-1 - i);
    c->u_used++;
    return (int32_t)(-1 - i);
}

static int64_t p_slot(const dc_cache *c, uint64_t h, int32_t a, int32_t b) {
    uint32_t m = c->pcap - 1, i = (uint32_t)h & m;
    for (;; i = (i + 1) & m) {
        const dc_pair *e = &c->p[i];
        if (e->gen != c->gen) return -1 - (int64_t)i;
        if (e->h == h && e->a == a && e->b == b) return i;
    }
}

static int32_t p_find(const dc_cache *c, int32_t a, int32_t b) {
    int64_t i = p_slot(c, mix(c->u[a].h, c->u[b].h), a, b);
    return i >= 0 ? (int32_t)i : -1;
}

static int32_t p_get(dc_cache *c, int32_t a, int32_t b) {
    uint64_t h = mix(c->u[a].h, c->u[b].h);
    int64_t i = p_slot(c, h, a, b);
    if (i >= 0) return (int32_t)i;
    if (!room(c, c->p_used, c->pcap)) return -1;
    dc_pair *e = &c->p[-1 - i];
    e->h = h;
    e->gen = c->gen;
    e->count = 0;
    e->a = a;
    e->b = b;
    e->next = c->u[a].first_pair;
    c->u[a].first_pair = (int32_t)(-1 - i);
    c->p_used++;
    return (int32_t)(-1 - i);
}

static void word_add(dc_cache *c, int32_t k, int sign) {
    if (k < 0) return;
    dc_word *w = &c->u[k];
    if (sign > 0) {
        w->count++;
        c->total++;
    } else if (w->count) {
        w->count--;
        c->total--;
    }
}

static void pair_add(dc_cache *c, int32_t a, int32_t b, int sign) {
    if (a < 0 || b < 0) return;
    int32_t k = sign > 0 ? p_get(c, a, b) : p_find(c, a, b);
    if (k < 0) return;
    dc_pair *e = &c->p[k];
    dc_word *w = &c->u[a];
    if (sign > 0) {
        w->n_types += e->count++ == 0;
        w->n_after++;
    } else if (e->count) {
        w->n_types -= --e->count == 0;
        w->n_after--;
    }
}

static void clear(dc_cache *c) {
    if (++c->gen == 0) { /* wrapped: every entry would look current */
        memset(c->u, 0, (size_t)c->ucap * sizeof *c->u);
        memset(c->p, 0, (size_t)c->pcap * sizeof *c->p);
        c->gen = 1;
    }
    for (int i = 0; i < 256; i++) c->fb_head[i] = -1;
    c->u_used = c->p_used = 0;
    c->total = 0;
    c->overflow = 0;
    c->last = -1;
    c->last_end = 0;
    c->ctx = -1;
}

/* Count (sign +1) or uncount (-1) the words of t[0..n) (t[0] is byte `abs` of the text) that start in
 * [from, to), absolute, and the pairs among them. lead/lead_end: the word before them (-1: none) for the
 * pair with the first; peek_to > to: also the pair of the last one with the next word that starts below
 * peek_to. Returns the entry of the last word (or lead when there was none) and its end. */
static int32_t walk(dc_cache *c, const char *t, size_t n, uint64_t abs, uint64_t from, uint64_t to, int sign,
                    int32_t lead, uint64_t lead_end, uint64_t peek_to, uint64_t *last_end) {
    size_t i = (size_t)(from - abs), end = (size_t)(to - abs), ws, we;
    int32_t prev = lead;
    uint64_t prev_end = lead_end;
    while (next_word(t, n, i, end, &ws, &we)) {
        char fw[DC_WORD_MAX];
        size_t fl = fold(t + ws, we - ws, fw);
        int32_t k = fl == 0 ? -1 : sign > 0 ? u_get(c, fw, fl) : u_find(c, fw, fl);
        if (prev >= 0 && prev_end >= abs && gap_pairs(t, (size_t)(prev_end - abs), ws)) pair_add(c, prev, k, sign);
        word_add(c, k, sign);
        prev = k;
        prev_end = abs + we;
        i = we;
    }
    char fw[DC_WORD_MAX];
    size_t fl;
    if (peek_to > to && prev >= 0 && next_word(t, n, end, (size_t)(peek_to - abs), &ws, &we) &&
        (fl = fold(t + ws, we - ws, fw)) > 0 && gap_pairs(t, (size_t)(prev_end - abs), ws))
        pair_add(c, prev, u_find(c, fw, fl), sign);
    *last_end = prev_end;
    return prev;
}

static uint64_t region_start(const dc_cache *c, uint64_t e) {
    return e > c->window ? (e - c->window) / c->quantum * c->quantum : 0;
}

/* Index the kept text from scratch. */
static void rebuild(dc_cache *c) {
    clear(c);
    uint64_t from = c->r0 > c->t0 ? c->r0 : c->t0;
    c->last = walk(c, c->text, c->tlen, c->t0, from, c->e, +1, -1, 0, 0, &c->last_end);
}

/* ---- API ------------------------------------------------------------------------------------------ */

laya_status dc_create(size_t window, dc_cache **out) {
    if (!out) return LAYA_ERR_INVALID_ARG;
    *out = NULL;
    if (window < DC_WINDOW_MIN || window > DC_WINDOW_MAX) return LAYA_ERR_INVALID_ARG;
    dc_cache *c = laya_calloc(1, sizeof *c);
    if (!c) return LAYA_ERR_NOMEM;
    c->window = window;
    c->quantum = window / 4;
    c->ucap = 64;
    while (c->ucap < window / 4) c->ucap *= 2; /* prose: one new word in about 8 bytes at most */
    c->pcap = c->ucap * 2;
    c->tcap = window + c->quantum + BEFORE + 8;
    c->u = laya_calloc(c->ucap, sizeof *c->u);
    c->p = laya_calloc(c->pcap, sizeof *c->p);
    c->text = laya_malloc(c->tcap);
    if (!c->u || !c->p || !c->text) {
        dc_free(c);
        return LAYA_ERR_NOMEM;
    }
    clear(c);
    *out = c;
    return LAYA_OK;
}

void dc_free(dc_cache *c) {
    if (!c) return;
    laya_free(c->u);
    laya_free(c->p);
    laya_free(c->text);
    laya_free(c);
}

size_t dc_span(const dc_cache *c) { return c ? c->tcap + RUN_MAX + 8 : 0; } /* the word being typed, too */

void dc_update(dc_cache *c, const char *t, size_t n, uint64_t base) {
    if (!c || (!t && n)) return;
    if (!t) t = "";
    uint64_t e = base + dc_word_start(t, n), r0 = region_start(c, e);
    uint64_t t0 = r0 > BEFORE ? r0 - BEFORE : 0;
    uint64_t keep = e < c->e ? e : c->e; /* the known text still there must be unchanged */
    int inc = c->valid && base <= c->t0 && keep >= c->t0 && c->t0 + c->tlen >= keep && r0 >= c->r0 &&
              (e >= c->e || r0 == c->r0) && (e <= c->e || e - c->t0 <= c->tcap) &&
              !memcmp(t + (c->t0 - base), c->text, (size_t)(keep - c->t0));
    if (inc) {
        c->overflow = 0;
        /* Recount from a little before where the old and new texts part: a byte's class depends on the
         * code points around it (an apostrophe, a sequence cut short), so the last word or two may differ. */
        uint64_t b0 = e < c->e ? e : c->e, f = b0 > c->t0 + BEFORE ? b0 - BEFORE : c->t0;
        size_t l, ws, we;
        f = c->t0 + cp_floor(c->text, c->tlen, (size_t)(f - c->t0));
        uint64_t f0 = f;
        while (f > c->t0 && f0 - f <= RUN_MAX && in_word(c->text, c->tlen, (size_t)(f - c->t0), &l) &&
               in_word(c->text, c->tlen, prev_start(c->text, c->tlen, (size_t)(f - c->t0)), &l))
            f = c->t0 + prev_start(c->text, c->tlen, (size_t)(f - c->t0));
        if (f < c->r0) f = c->r0;
        if (f < c->e || e > c->e) {
            int32_t lead = -1;
            uint64_t lead_end = 0, dummy;
            size_t rel = (size_t)(f - c->t0);
            char fw[DC_WORD_MAX];
            size_t fl;
            if (last_word(c->text, c->tlen, rel, &ws, &we) && c->t0 + ws >= c->r0 &&
                (fl = fold(c->text + ws, we - ws, fw)) > 0) {
                lead = u_find(c, fw, fl);
                lead_end = c->t0 + we;
            }
            walk(c, c->text, c->tlen, c->t0, f, c->e, -1, lead, lead_end, 0, &dummy);
            c->last = walk(c, t, n, base, f, e, +1, lead, lead_end, 0, &c->last_end);
            memcpy(c->text + rel, t + (f - base), (size_t)(e - f)); /* fits: [t0, e) spans at most tcap */
            c->tlen = (size_t)(e - c->t0);
        }
        c->e = e;
        if (r0 > c->r0) { /* the window moved on: uncount the words that left it */
            uint64_t dummy, from = c->r0 > c->t0 ? c->r0 : c->t0;
            walk(c, c->text, c->tlen, c->t0, from, r0, -1, -1, 0, e, &dummy);
            size_t drop = (size_t)(t0 - c->t0);
            memmove(c->text, c->text + drop, c->tlen - drop);
            c->tlen -= drop;
            c->t0 = t0;
            c->r0 = r0;
        }
        /* A full table (of words that left the window, mostly) is rebuilt from the kept text: so the
         * contents are a fresh cache's even when a window has more distinct words than the table holds
         * (it keeps the first ones; text of that kind costs a rebuild per keystroke). */
        if (c->overflow) rebuild(c);
        return;
    }
    /* anything else: keep the window's text and index it afresh */
    uint64_t s0 = t0 > base ? t0 : base;
    if (e - s0 > c->tcap) s0 = e - c->tcap;
    c->t0 = s0;
    c->tlen = (size_t)(e - s0);
    if (c->tlen) memcpy(c->text, t + (s0 - base), c->tlen);
    c->r0 = r0;
    c->e = e;
    c->valid = 1;
    rebuild(c);
}

void dc_set_context(dc_cache *c, const char *prev, size_t n) {
    if (!c) return;
    char fw[DC_WORD_MAX];
    size_t fl = prev ? fold(prev, n, fw) : 0;
    c->ctx = fl ? u_find(c, fw, fl) : -1;
}

uint32_t dc_count(const dc_cache *c, const char *w, size_t n) {
    char fw[DC_WORD_MAX];
    size_t fl = c && w ? fold(w, n, fw) : 0;
    int32_t k = fl ? u_find(c, fw, fl) : -1;
    return k >= 0 ? c->u[k].count : 0;
}

uint64_t dc_total(const dc_cache *c) { return c ? c->total : 0; }

static double prob_of(const dc_cache *c, int32_t k) {
    if (k < 0 || c->total == 0 || c->u[k].count == 0) return 0;
    double uni = (double)c->u[k].count / (double)c->total;
    if (c->ctx < 0 || c->u[c->ctx].n_after == 0) return uni;
    const dc_word *a = &c->u[c->ctx];
    int32_t pk = p_find(c, c->ctx, k);
    double pc = pk >= 0 ? (double)c->p[pk].count : 0;
    return (pc + a->n_types * uni) / ((double)a->n_after + a->n_types);
}

double dc_prob(const dc_cache *c, const char *w, size_t n) {
    char fw[DC_WORD_MAX];
    size_t fl = c && w ? fold(w, n, fw) : 0;
    return fl ? prob_of(c, u_find(c, fw, fl)) : 0;
}

static size_t keep_top(dc_hit *out, size_t got, size_t k, const dc_word *w, double p) {
    if (k == 0 || (got == k && p <= out[k - 1].p)) return got;
    size_t j = got < k ? got++ : k - 1;
    while (j > 0 && out[j - 1].p < p) {
        out[j] = out[j - 1];
        j--;
    }
    out[j].word = w->w;
    out[j].len = w->len;
    out[j].p = p;
    return got;
}

size_t dc_top(const dc_cache *c, const char *prefix, size_t pn, dc_hit *out, size_t k) {
    if (!c || !out || (pn && !prefix)) return 0;
    size_t got = 0;
    if (pn == 0) {
        if (c->ctx < 0) return 0;
        for (int32_t i = c->u[c->ctx].first_pair; i >= 0; i = c->p[i].next)
            if (c->p[i].count) {
                const dc_word *w = &c->u[c->p[i].b];
                got = keep_top(out, got, k, w, prob_of(c, c->p[i].b));
            }
        return got;
    }
    char fp[DC_WORD_MAX];
    size_t fl = fold(prefix, pn, fp);
    if (fl == 0) return 0;
    for (int32_t i = c->fb_head[(unsigned char)fp[0]]; i >= 0; i = c->u[i].next_fb) {
        const dc_word *w = &c->u[i];
        if (w->count && w->len > fl && !memcmp(w->w, fp, fl)) got = keep_top(out, got, k, w, prob_of(c, i));
    }
    return got;
}

uint64_t dc_digest(const dc_cache *c) {
    if (!c) return 0;
    uint64_t d = c->total;
    for (uint32_t i = 0; i < c->ucap; i++)
        if (c->u[i].gen == c->gen && c->u[i].count) d += mix(c->u[i].h, c->u[i].count);
    for (uint32_t i = 0; i < c->pcap; i++)
        if (c->p[i].gen == c->gen && c->p[i].count)
            d += mix(mix(c->u[c->p[i].a].h, c->u[c->p[i].b].h), c->p[i].count);
    return d;
}
