/* typo.c — typo candidates: a sorted word list walked as an implicit trie (consecutive words share the
 * rows of their common prefix; a prefix that is already too far from the typed word skips, by binary
 * search, every word that starts with it), and a Damerau-Levenshtein program over code points that keeps
 * two tables: edit counts (for the bound) and weighted costs (the prior). Not here: the model's decision. */
#include "typing/typo.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/common.h"
#include "base/unicode.h"

#define DEPTH_MAX (TY_CHARS_MAX + 4) /* rows: a word longer than typed + max_edits is cut at that depth */

typedef struct ty_word {
    uint32_t off;   /* into arena */
    uint32_t count;
    uint8_t len;
} ty_word;

struct ty_list {
    char *arena;
    size_t arena_n, arena_cap;
    ty_word *w;
    uint32_t n, cap;
    int sorted;
    uint64_t total;
};

/* ---- characters ----------------------------------------------------------------------------------- */

/* Simple lowercase for the Latin, Greek and Cyrillic letters typed on keyboards. */
static uint32_t fold_other(uint32_t c);
static inline uint32_t fold(uint32_t c) {
    if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
    return fold_other(c);
}

static uint32_t fold_other(uint32_t c) {
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c >= 0x100 && c <= 0x137) return c | 1;
    if (c >= 0x139 && c <= 0x148) return c + (c & 1);
    if (c >= 0x14A && c <= 0x177) return c | 1;
    if (c == 0x178) return 0xFF;
    if (c >= 0x179 && c <= 0x17E) return c + (c & 1);
    if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 37;
    if (c == 0x38C) return 0x3CC;
    if (c == 0x38E || c == 0x38F) return c + 63;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    return c;
}

/* The unaccented letter of a Latin-1 letter (folded), else c. */
static uint32_t base_letter(uint32_t c) {
    static const char map[] = "aaaaaaaceeeeiiii" "dnooooo/ouuuuy/y" /* U+00E0..U+00FF */;
    if (c >= 0xE0 && c <= 0xFF) {
        char b = map[c - 0xE0];
        return b == '/' ? c : (uint32_t)b;
    }
    return c;
}

/* QWERTY keys: row + 1 (0: not a key) and horizontal position in quarter key widths, rows staggered as on a
 * real keyboard (0, 1/2, 3/4 and 5/4 of a key). Neighbours: the next key in a row, or a key of the row above
 * or below less than one key width away. */
static const struct { uint8_t row, x; } KEYS[128] = {
    ['\''] = {3, 43}, [','] = {4, 33}, ['-'] = {1, 40}, ['.'] = {4, 37}, ['/'] = {4, 41}, ['0'] = {1, 36},
    ['1'] = {1, 0}, ['2'] = {1, 4}, ['3'] = {1, 8}, ['4'] = {1, 12}, ['5'] = {1, 16}, ['6'] = {1, 20},
    ['7'] = {1, 24}, ['8'] = {1, 28}, ['9'] = {1, 32}, [';'] = {3, 39}, ['='] = {1, 44}, ['['] = {2, 42},
    [']'] = {2, 46}, ['a'] = {3, 3}, ['b'] = {4, 21}, ['c'] = {4, 13}, ['d'] = {3, 11}, ['e'] = {2, 10},
    ['f'] = {3, 15}, ['g'] = {3, 19}, ['h'] = {3, 23}, ['i'] = {2, 30}, ['j'] = {3, 27}, ['k'] = {3, 31},
    ['l'] = {3, 35}, ['m'] = {4, 29}, ['n'] = {4, 25}, ['o'] = {2, 34}, ['p'] = {2, 38}, ['q'] = {2, 2},
    ['r'] = {2, 14}, ['s'] = {3, 7}, ['t'] = {2, 18}, ['u'] = {2, 26}, ['v'] = {4, 17}, ['w'] = {2, 6},
    ['x'] = {4, 9}, ['y'] = {2, 22}, ['z'] = {4, 5},
};

int ty_keys_adjacent(uint32_t a, uint32_t b) {
    a = fold(a), b = fold(b);
    if (a == b || a >= 128 || b >= 128 || !KEYS[a].row || !KEYS[b].row) return 0;
    int dr = KEYS[a].row - KEYS[b].row, dx = KEYS[a].x - KEYS[b].x;
    if (dx < 0) dx = -dx;
    return dr == 0 ? dx == 4 : (dr == 1 || dr == -1) && dx < 4;
}

/* ---- the list ------------------------------------------------------------------------------------- */

static int word_ok(const char *w, size_t n) {
    if (n == 0 || n > TY_WORD_MAX || !uni_utf8_valid(w, n)) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (c <= 0x20 || c == 0x7F) return 0;
    }
    return 1;
}

laya_status ty_list_create(ty_list **out) {
    if (!out) return LAYA_ERR_INVALID_ARG;
    *out = laya_calloc(1, sizeof **out);
    return *out ? LAYA_OK : LAYA_ERR_NOMEM;
}

void ty_list_free(ty_list *l) {
    if (!l) return;
    laya_free(l->arena);
    laya_free(l->w);
    laya_free(l);
}

static int reserve(ty_list *l, size_t bytes) {
    if (l->arena_cap - l->arena_n < bytes) {
        size_t cap = l->arena_cap ? l->arena_cap : 4096;
        while (cap - l->arena_n < bytes) cap *= 2;
        if (cap > UINT32_MAX) return 0;
        char *a = laya_malloc(cap);
        if (!a) return 0;
        if (l->arena_n) memcpy(a, l->arena, l->arena_n);
        laya_free(l->arena);
        l->arena = a;
        l->arena_cap = cap;
    }
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 1024;
        if (cap <= l->cap) return 0;
        ty_word *w = laya_calloc(cap, sizeof *w);
        if (!w) return 0;
        if (l->n) memcpy(w, l->w, l->n * sizeof *w);
        laya_free(l->w);
        l->w = w;
        l->cap = cap;
    }
    return 1;
}

laya_status ty_list_add(ty_list *l, const char *word, size_t len, uint32_t count) {
    if (!l || !word || !word_ok(word, len)) return LAYA_ERR_INVALID_ARG;
    if (!reserve(l, len)) return LAYA_ERR_NOMEM;
    memcpy(l->arena + l->arena_n, word, len);
    l->w[l->n++] = (ty_word){(uint32_t)l->arena_n, count, (uint8_t)len};
    l->arena_n += len;
    l->total += count;
    l->sorted = 0;
    return LAYA_OK;
}

laya_status ty_list_add_words(ty_list *l, const char *const *words, size_t n, uint32_t count) {
    if (!l || (!words && n)) return LAYA_ERR_INVALID_ARG;
    for (size_t i = 0; i < n; i++) {
        if (!words[i]) return LAYA_ERR_INVALID_ARG;
        laya_status st = ty_list_add(l, words[i], strlen(words[i]), count);
        if (st != LAYA_OK) return st;
    }
    return LAYA_OK;
}

laya_status ty_list_load(ty_list *l, const char *path, size_t *skipped, char *err, size_t errlen) {
    if (skipped) *skipped = 0;
    if (!l || !path) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "ty_list_load: bad arguments");
    FILE *f = fopen(path, "rb");
    if (!f) return laya_err(err, errlen, LAYA_ERR_IO, "%s: cannot open", path);
    char line[256];
    size_t bad = 0;
    laya_status st = LAYA_OK;
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n') { /* too long to be a word: skip the rest */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n') {}
            bad++;
            continue;
        }
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0 || line[0] == '#') continue;
        size_t wl = strcspn(line, " \t");
        uint32_t count = 1;
        if (wl < n) {
            char *end;
            unsigned long long v = strtoull(line + wl + 1, &end, 10);
            while (*end == ' ' || *end == '\t') end++;
            if (end == line + wl + 1 || *end) { bad++; continue; }
            count = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
        }
        st = ty_list_add(l, line, wl, count);
        if (st == LAYA_ERR_INVALID_ARG) { bad++; st = LAYA_OK; continue; }
        if (st != LAYA_OK) break;
    }
    if (st == LAYA_OK && ferror(f)) st = LAYA_ERR_IO;
    fclose(f);
    if (skipped) *skipped = bad;
    return st == LAYA_OK ? LAYA_OK : laya_err(err, errlen, st, "%s: %s", path, laya_status_str(st));
}

static int cmp_bytes(const char *a, size_t na, const char *b, size_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

static int cmp_w(const ty_list *l, const ty_word *a, const ty_word *b) {
    return cmp_bytes(l->arena + a->off, a->len, l->arena + b->off, b->len);
}

static void merge_sort(const ty_list *l, ty_word *a, ty_word *tmp, uint32_t n) {
    if (n < 2) return;
    uint32_t h = n / 2;
    merge_sort(l, a, tmp, h);
    merge_sort(l, a + h, tmp, n - h);
    if (cmp_w(l, &a[h - 1], &a[h]) <= 0) return; /* in order already: a model's list (stored sorted) costs O(n) */
    uint32_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = cmp_w(l, &a[j], &a[i]) < 0 ? a[j++] : a[i++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

laya_status ty_list_finish(ty_list *l) {
    if (!l) return LAYA_ERR_INVALID_ARG;
    if (l->sorted || l->n == 0) {
        l->sorted = 1;
        return LAYA_OK;
    }
    ty_word *tmp = laya_malloc(l->n * sizeof *tmp);
    char *arena = laya_malloc(l->arena_n ? l->arena_n : 1);
    if (!tmp || !arena) {
        laya_free(tmp);
        laya_free(arena);
        return LAYA_ERR_NOMEM;
    }
    merge_sort(l, l->w, tmp, l->n);
    /* Merge duplicates, and lay the words out in order, so that the walk reads memory forwards. */
    uint32_t k = 0;
    size_t an = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        if (k && cmp_bytes(arena + l->w[k - 1].off, l->w[k - 1].len, l->arena + l->w[i].off, l->w[i].len) == 0) {
            uint64_t c = (uint64_t)l->w[k - 1].count + l->w[i].count;
            l->w[k - 1].count = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
            continue;
        }
        memcpy(arena + an, l->arena + l->w[i].off, l->w[i].len);
        l->w[k] = (ty_word){(uint32_t)an, l->w[i].count, l->w[i].len};
        an += l->w[i].len;
        k++;
    }
    laya_free(tmp);
    laya_free(l->arena);
    l->arena = arena;
    l->arena_n = an;
    l->arena_cap = l->arena_n ? l->arena_n : 1;
    l->n = k;
    l->sorted = 1;
    return LAYA_OK;
}

/* First index >= lo whose word is >= w. */
static uint32_t lower(const ty_list *l, uint32_t lo, const char *w, size_t n) {
    uint32_t hi = l->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cmp_bytes(l->arena + l->w[mid].off, l->w[mid].len, w, n) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

laya_status ty_list_insert(ty_list *l, const char *word, size_t len, uint32_t count) {
    if (!l || !l->sorted || !word || !word_ok(word, len)) return LAYA_ERR_INVALID_ARG;
    uint32_t pos = lower(l, 0, word, len);
    if (pos < l->n && cmp_bytes(l->arena + l->w[pos].off, l->w[pos].len, word, len) == 0) {
        uint64_t c = (uint64_t)l->w[pos].count + count;
        l->w[pos].count = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
        l->total += count;
        return LAYA_OK;
    }
    if (!reserve(l, len)) return LAYA_ERR_NOMEM;
    memcpy(l->arena + l->arena_n, word, len);
    memmove(l->w + pos + 1, l->w + pos, (l->n - pos) * sizeof *l->w);
    l->w[pos] = (ty_word){(uint32_t)l->arena_n, count, (uint8_t)len};
    l->arena_n += len;
    l->n++;
    l->total += count;
    return LAYA_OK;
}

size_t ty_list_size(const ty_list *l) { return l ? l->n : 0; }
uint64_t ty_list_total(const ty_list *l) { return l ? l->total : 0; }

int ty_list_find(const ty_list *l, const char *word, size_t len, uint32_t *count) {
    if (!l || !l->sorted || !word) return 0;
    uint32_t pos = lower(l, 0, word, len);
    if (pos >= l->n || cmp_bytes(l->arena + l->w[pos].off, l->w[pos].len, word, len) != 0) return 0;
    if (count) *count = l->w[pos].count;
    return 1;
}

const char *ty_list_word(const ty_list *l, size_t i, size_t *len, uint32_t *count) {
    if (!l || !l->sorted || i >= l->n) return NULL;
    if (len) *len = l->w[i].len;
    if (count) *count = l->w[i].count;
    return l->arena + l->w[i].off;
}

/* ---- the search ----------------------------------------------------------------------------------- */

ty_params ty_default_params(void) {
    ty_params p;
    p.max_edits = 2;
    p.max_cost = 2.0f;
    p.max_steps = 300000;
    p.fold_case = 1;
    p.costs = (ty_costs){.sub = 1.0f, .sub_adjacent = 0.55f, .sub_accent = 0.3f, .sub_case = 0.05f,
                         .omit = 0.9f, .omit_double = 0.5f, .extra = 1.0f, .extra_double = 0.45f,
                         .extra_adjacent = 0.7f, .transpose = 0.6f};
    return p;
}

typedef struct search {
    const ty_params *p;
    uint32_t q[TY_CHARS_MAX], qf[TY_CHARS_MAX]; /* typed, and folded */
    float ext[TY_CHARS_MAX + 1];                /* cost of q[i-1] being a letter too many */
    uint64_t adj[TY_CHARS_MAX][2];              /* ASCII keys next to q[i] (bit c) */
    int qn;
    uint8_t D[DEPTH_MAX + 1][TY_CHARS_MAX + 1]; /* edits: word prefix of j chars vs typed prefix of i */
    float C[DEPTH_MAX + 1][TY_CHARS_MAX + 1];   /* weighted cost of the same */
    float cmin[DEPTH_MAX + 1];
} search;

#define D_INF 250
#define C_INF 1e30f

/* Row j from rows j-1 and j-2, for word characters w/wf[0..j), only in the band |i - j| <= max_edits (cells
 * outside it are over the bound anyway, and are left at infinity). Returns the row's minimum edit count. */
static int row(search *s, int j, const uint32_t *w, const uint32_t *wf) {
    const ty_costs *co = &s->p->costs;
    const int maxd = s->p->max_edits;
    uint32_t m = w[j - 1], mf = wf[j - 1];
    float omit = j >= 2 && wf[j - 2] == mf ? co->omit_double : co->omit;
    uint8_t *D = s->D[j], *Dp = s->D[j - 1];
    float *C = s->C[j], *Cp = s->C[j - 1];
    int lo = j - maxd > 1 ? j - maxd : 1, hi = j + maxd < s->qn ? j + maxd : s->qn;
    D[0] = j <= maxd ? (uint8_t)j : D_INF;
    C[0] = j <= maxd ? Cp[0] + omit : C_INF;
    if (lo > 1) {
        D[lo - 1] = D_INF;
        C[lo - 1] = C_INF;
    }
    if (hi < s->qn) {
        D[hi + 1] = D_INF;
        C[hi + 1] = C_INF;
    }
    int dmin = D[0];
    float cmin = C[0];
    for (int i = lo; i <= hi; i++) {
        uint32_t t = s->q[i - 1], tf = s->qf[i - 1];
        int d, e = tf != mf || (t != m && !s->p->fold_case);
        float c;
        if (t == m) c = Cp[i - 1];
        else if (tf == mf) c = Cp[i - 1] + co->sub_case;
        else if (mf < 128 && (s->adj[i - 1][mf >> 6] >> (mf & 63) & 1)) c = Cp[i - 1] + co->sub_adjacent;
        else if ((tf >= 128 || mf >= 128) && base_letter(tf) == base_letter(mf)) c = Cp[i - 1] + co->sub_accent;
        else c = Cp[i - 1] + co->sub;
        d = Dp[i - 1] + e;
        if (Dp[i] + 1 < d) d = Dp[i] + 1;
        if (Cp[i] + omit < c) c = Cp[i] + omit;
        if (D[i - 1] + 1 < d) d = D[i - 1] + 1;
        if (C[i - 1] + s->ext[i] < c) c = C[i - 1] + s->ext[i];
        if (j >= 2 && i >= 2 && mf == s->qf[i - 2] && wf[j - 2] == tf && mf != tf) {
            if (s->D[j - 2][i - 2] + 1 < d) d = s->D[j - 2][i - 2] + 1;
            if (s->C[j - 2][i - 2] + co->transpose < c) c = s->C[j - 2][i - 2] + co->transpose;
        }
        D[i] = (uint8_t)(d > D_INF ? D_INF : d);
        C[i] = c;
        if (d < dmin) dmin = d;
        if (c < cmin) cmin = c;
    }
    s->cmin[j] = cmin;
    return dmin;
}

/* Insert into the best-first out[0..*k) (capacity cap). */
static void keep(ty_cand *out, size_t cap, size_t *k, ty_cand c) {
    size_t j = *k;
    if (j == cap) {
        if (cap == 0) return;
        const ty_cand *last = &out[cap - 1];
        if (c.cost > last->cost || (c.cost == last->cost && c.count <= last->count)) return;
        j = cap - 1;
    } else {
        (*k)++;
    }
    while (j > 0 && (c.cost < out[j - 1].cost || (c.cost == out[j - 1].cost && c.count > out[j - 1].count))) {
        out[j] = out[j - 1];
        j--;
    }
    out[j] = c;
}

laya_status ty_candidates(const ty_list *l, const char *word, size_t len, const ty_params *pp, ty_cand *out,
                          size_t cap, size_t *n_found) {
    if (n_found) *n_found = 0;
    if (!l || !word || !n_found || (!out && cap) || !l->sorted) return LAYA_ERR_INVALID_ARG;
    ty_params p = pp ? *pp : ty_default_params();
    if (p.max_edits < 0 || p.max_edits > 2) return LAYA_ERR_INVALID_ARG;
    if (len == 0 || !uni_utf8_valid(word, len)) return LAYA_OK;
    search s;
    s.p = &p;
    s.qn = 0;
    for (size_t i = 0; i < len;) {
        if (s.qn == TY_CHARS_MAX) return LAYA_OK;
        uint32_t c = uni_utf8_next(word, len, &i);
        s.q[s.qn] = c;
        s.qf[s.qn++] = p.fold_case ? fold(c) : c;
    }
    for (int i = 0; i < s.qn; i++) {
        s.adj[i][0] = s.adj[i][1] = 0;
        for (uint32_t c = 0; c < 128; c++)
            if (KEYS[c].row && ty_keys_adjacent(s.q[i], c)) s.adj[i][c >> 6] |= 1ull << (c & 63);
    }
    /* A letter too many costs less when it repeats or neighbours (on the keyboard) the one before or after. */
    s.ext[0] = 0;
    for (int i = 1; i <= s.qn; i++) {
        uint32_t c = s.qf[i - 1];
        int dbl = (i >= 2 && s.qf[i - 2] == c) || (i < s.qn && s.qf[i] == c);
        int adj = (i >= 2 && ty_keys_adjacent(c, s.qf[i - 2])) || (i < s.qn && ty_keys_adjacent(c, s.qf[i]));
        s.ext[i] = dbl ? p.costs.extra_double : adj ? p.costs.extra_adjacent : p.costs.extra;
    }
    s.D[0][0] = 0;
    s.C[0][0] = 0;
    for (int i = 1; i <= s.qn; i++) {
        s.D[0][i] = i <= p.max_edits ? (uint8_t)i : D_INF;
        s.C[0][i] = i <= p.max_edits ? s.C[0][i - 1] + s.ext[i] : C_INF;
    }
    s.cmin[0] = 0;
    const int maxd = p.max_edits, depth_max = s.qn + maxd + 1;
    uint32_t w[DEPTH_MAX + 1], wf[DEPTH_MAX + 1];
    uint32_t off[DEPTH_MAX + 2]; /* byte offset of each character of the current word */
    const char *pb = NULL;       /* the previous word: rows 1..valid hold its first valid characters */
    size_t pl = 0;
    int valid = 0, pm = 0;       /* pm: characters of the previous word decoded (into w, off) */
    uint64_t steps = 0;
    size_t kept = 0, found = 0;
    laya_status ret = LAYA_OK;
    for (uint32_t idx = 0; idx < l->n;) {
        const char *wb = l->arena + l->w[idx].off;
        size_t wl = l->w[idx].len;
        /* Characters shared with the previous word keep their rows (and their decoding). */
        size_t bl = 0, lim = wl < pl ? wl : pl;
        while (bl < lim && wb[bl] == pb[bl]) bl++;
        int k = 0;
        while (k < valid && k < pm && off[k + 1] <= bl) k++;
        size_t bi = off[k];
        if (k == 0) bi = off[0] = 0;
        int m = k;
        while (bi < wl && m <= depth_max) {
            w[m] = uni_utf8_next(wb, wl, &bi);
            wf[m] = p.fold_case ? fold(w[m]) : w[m];
            off[++m] = (uint32_t)bi;
        }
        pb = wb;
        pl = wl;
        pm = m;
        int pruned = 0;
        for (int j = k + 1; j <= m; j++) {
            if (++steps > p.max_steps) {
                ret = LAYA_ERR_CAPACITY;
                goto done;
            }
            int dmin = row(&s, j, w, wf);
            if (dmin > maxd || (s.cmin[j] > p.max_cost && s.cmin[j - 1] > p.max_cost)) {
                /* No word with this prefix can qualify: skip them all. */
                valid = j - 1;
                uint32_t pre = off[j], lo = idx + 1, hi = l->n, step = 1;
                /* Galloping first: most pruned subtrees hold a few words, and the words next in memory are
                 * cheap to read where a binary search over the whole list would miss the cache. */
                while (lo < hi) {
                    uint32_t probe = step < hi - lo ? lo + step - 1 : hi - 1;
                    const ty_word *x = &l->w[probe];
                    if (!(x->len >= pre && memcmp(l->arena + x->off, wb, pre) == 0)) {
                        hi = probe;
                        break;
                    }
                    lo = probe + 1;
                    step *= 2;
                }
                while (lo < hi) {
                    uint32_t mid = lo + (hi - lo) / 2;
                    const ty_word *x = &l->w[mid];
                    if (x->len >= pre && memcmp(l->arena + x->off, wb, pre) == 0) lo = mid + 1;
                    else hi = mid;
                }
                idx = lo;
                pruned = 1;
                break;
            }
        }
        if (pruned) continue;
        valid = m;
        if (bi == wl && m - s.qn <= maxd && s.qn - m <= maxd && s.D[m][s.qn] <= maxd && s.C[m][s.qn] <= p.max_cost &&
            !(wl == len && memcmp(wb, word, len) == 0)) {
            found++;
            keep(out, cap, &kept, (ty_cand){wb, (uint32_t)wl, l->w[idx].count, s.C[m][s.qn], s.D[m][s.qn]});
        }
        idx++;
    }
done:
    *n_found = found;
    return ret;
}
