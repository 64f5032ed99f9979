/* bpe.c — byte-pair encoding of one word: the key -> id and pair -> merge tables it looks up, the work
 * buffers, and the merge loop that matches Hugging Face's merge order. Not the vocab loading (vocab.c)
 * nor the pre-tokenizer split (tokenizer.c). */
#include <string.h>

#include "base/unicode.h"
#include "tokenizer/tok_internal.h"

/* ---------------------------------------------------------------------------------------------------
 * Hashing */

/* murmur3's finalizer: every input bit reaches the low bits that index the tables */
static inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    return h ^ (h >> 33);
}

static uint64_t hash_bytes(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        s += 8, n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    return mix64(h ^ w);
}

static inline uint64_t hash_pair(uint64_t k) { return mix64(k); }

int32_t tok_map_find(const tok_vocab *v, const char *s, size_t n) {
    if (!v->map.slots) return -1;
    uint64_t i = hash_bytes(s, n) & v->map.mask;
    for (;;) {
        int32_t id = v->map.slots[i];
        if (id < 0) return -1;
        size_t kn;
        const char *k = tok_key_of(v, id, &kn);
        if (kn == n && memcmp(k, s, n) == 0) return id;
        i = (i + 1) & v->map.mask;
    }
}

/* Insert unless the key is already present (the lower id wins, as a dict built in id order would). */
void tok_map_insert(tok_vocab *v, int32_t id) {
    size_t n;
    const char *s = tok_key_of(v, id, &n);
    uint64_t i = hash_bytes(s, n) & v->map.mask;
    for (;;) {
        int32_t o = v->map.slots[i];
        if (o < 0) { v->map.slots[i] = id; return; }
        size_t on;
        const char *os = tok_key_of(v, o, &on);
        if (on == n && memcmp(os, s, n) == 0) return;
        i = (i + 1) & v->map.mask;
    }
}

static inline uint64_t filter_bits(uint64_t h) {
    return (uint64_t)1 << (h >> 40 & 63) | (uint64_t)1 << (h >> 46 & 63) | (uint64_t)1 << (h >> 52 & 63);
}

static int pair_find(const pair_map *m, int32_t a, int32_t b, uint32_t *rank, int32_t *id) {
    if (!m->slots) return 0;
    uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b, h = hash_pair(k), bits = filter_bits(h);
    if ((m->filter[h >> 20 & m->filter_mask] & bits) != bits) return 0;
    uint64_t i = h & m->mask;
    for (;;) {
        const pair_slot *e = &m->slots[i];
        if (e->key == k) { *rank = e->rank; *id = e->id; return 1; }
        if (e->key == EMPTY_PAIR) return 0;
        i = (i + 1) & m->mask;
    }
}

void tok_pair_insert(pair_map *m, int32_t a, int32_t b, uint32_t rank, int32_t id) {
    uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b, h = hash_pair(k);
    m->filter[h >> 20 & m->filter_mask] |= filter_bits(h);
    uint64_t i = h & m->mask;
    for (;;) {
        pair_slot *e = &m->slots[i];
        if (e->key == EMPTY_PAIR) {
            *e = (pair_slot){k, rank, id};
            return;
        }
        if (e->key == k) return; /* a repeated merge keeps its first (best) rank */
        i = (i + 1) & m->mask;
    }
}

uint64_t tok_pow2_at_least(uint64_t n) {
    uint64_t p = 16;
    while (p < n) p <<= 1;
    return p;
}


/* ---------------------------------------------------------------------------------------------------
 * Scratch */

/* Make room for `need` elements; old contents are not kept (every caller refills). */
int tok_grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t nc = *cap * 2 > need ? *cap * 2 : need;
    if (nc < 64) nc = 64;
    if (nc > SIZE_MAX / elem) return -1;
    void *q = laya_malloc(nc * elem);
    if (!q) return -1;
    laya_free(*p);
    *p = q;
    *cap = nc;
    return 0;
}

static size_t cands_leaves(size_t n);

/* Room for BPE on n symbols (see struct cands). */
int tok_grow_bpe(tok_work *w, size_t n) {
    size_t leaves = cands_leaves(n);
    return GROW(w, syms, n) || GROW(w, starts, n) || GROW(w, keys, n) || GROW(w, masks, leaves) ||
           GROW(w, tree, 2 * leaves);
}

tok_work *tok_work_new(void) { return laya_calloc(1, sizeof(tok_work)); }

void tok_work_release(tok_work *w) {
    laya_free(w->text);
    laya_free(w->cps);
    laya_free(w->offs);
    laya_free(w->nfc);
    laya_free(w->bytes);
    laya_free(w->syms);
    laya_free(w->starts);
    laya_free(w->keys);
    laya_free(w->masks);
    laya_free(w->tree);
    laya_free(w->memo);
}

void tok_work_free(tok_work *w) {
    if (!w) return;
    tok_work_release(w);
    laya_free(w);
}

laya_status tok_work_reserve(tok_work *w, size_t max_len) {
    if (!w) return LAYA_ERR_INVALID_ARG;
    /* Worst cases for max_len input bytes: repair turns a byte into 3 (U+FFFD) but never adds code points;
     * NFC needs 4 slots per code point while decomposing, grows UTF-8 at most 3x and code points at most
     * 4x; SentencePiece turns a space into 3 bytes (U+2581) and prepends one; BPE has a symbol and a
     * candidate per byte. */
    if (max_len > UINT32_MAX / 16) return LAYA_ERR_CAPACITY; /* tok_encode_work's own limit */
    size_t t = max_len, cps = 4 * t + 2, bytes = 9 * t + 4;
    if (GROW(w, text, 3 * t + 1) || GROW(w, cps, cps) || GROW(w, offs, cps + 1) || GROW(w, nfc, 4 * t + 4) ||
        GROW(w, bytes, bytes) || tok_grow_bpe(w, bytes))
        return LAYA_ERR_NOMEM;
    if (!w->memo) {
        if (!(w->memo = laya_calloc((size_t)1 << MEMO_BITS, sizeof *w->memo))) return LAYA_ERR_NOMEM;
        w->memo_bits = MEMO_BITS;
    }
    return LAYA_OK;
}

/* ---------------------------------------------------------------------------------------------------
 * BPE. Hugging Face pops candidate merges from a heap, lowest key first (the merge rank; in score mode
 * the order of -score), leftmost among equals, and skips entries whose pair has changed. Here a word's
 * candidates are one key per symbol position, kept exact after every merge (no stale entries): short
 * words find the best by a scan, long ones through blocks and a tree (struct cands), taking the pops of
 * one key in batches (bpe_merge). The choice is Hugging Face's, merge for merge; tests/test_tokenizer.c
 * checks it against a plain implementation of the rule as well as against Hugging Face itself. */

#define NONE UINT32_MAX /* no candidate */
#define BLOCK 16        /* candidates per block (at most 64: one bit each in a uint64_t mask) */

/* key[i] is the key of the pair (i, next(i)), NONE if it cannot merge. Block b (keys b * BLOCK ...)
 * keeps its least key and a mask of the keys equal to it; a tournament tree over the blocks holds
 * least key << 32 | b, so its root names the block of the best pair and the mask's lowest bit the
 * leftmost pair in it (see bpe_merge for how they are used). */
typedef struct cands {
    uint32_t *key;   /* [n] */
    uint64_t *mask;  /* [blocks] */
    uint64_t *tree;  /* [2 * leaves]: tree[leaves + b] for block b, tree[1] the root */
    size_t n, blocks, leaves;
} cands;

static size_t cands_leaves(size_t n) {
    size_t blocks = (n + BLOCK - 1) / BLOCK, leaves = 1;
    while (leaves < blocks) leaves <<= 1;
    return leaves;
}

/* The least of k[0..n) (n <= BLOCK) and the mask of the values equal to it. */
static uint32_t scan_min(const uint32_t *k, size_t n, uint64_t *mask) {
    uint32_t m = NONE;
    uint64_t b = 0;
    if (n == BLOCK) { /* a full block, written so that compilers vectorize it */
        for (unsigned i = 0; i < BLOCK; i++) m = k[i] < m ? k[i] : m;
        uint8_t eq[BLOCK];
        for (unsigned i = 0; i < BLOCK; i++) eq[i] = k[i] == m;
        for (unsigned i = 0; i < BLOCK; i += 8) { /* the low bits of 8 bytes into one byte */
            uint64_t x;
            memcpy(&x, eq + i, 8);
            b |= (x * 0x0102040810204080ull) >> 56 << i;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            if (k[i] < m) m = k[i], b = 0;
            if (k[i] == m) b |= (uint64_t)1 << i;
        }
    }
    *mask = b;
    return m;
}

static inline uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Rescan block b (past the last block: an empty leaf) and return its leaf. */
static uint64_t cands_leaf(cands *q, size_t b) {
    size_t at = b * BLOCK;
    if (at >= q->n) return UINT64_MAX;
    return (uint64_t)scan_min(q->key + at, LAYA_MIN(q->n - at, BLOCK), &q->mask[b]) << 32 | b;
}

/* Rescan blocks lo..hi and bring the tree up to date, level by level until a level is unchanged. */
static void cands_fix(cands *q, size_t lo, size_t hi) {
    uint64_t *t = q->tree;
    for (size_t b = lo; b <= hi; b++) t[q->leaves + b] = cands_leaf(q, b);
    for (lo = (lo + q->leaves) >> 1, hi = (hi + q->leaves) >> 1; lo < hi; lo >>= 1, hi >>= 1) {
        int changed = 0;
        for (size_t i = lo; i <= hi; i++) {
            uint64_t m = min64(t[2 * i], t[2 * i + 1]);
            changed |= t[i] != m;
            t[i] = m;
        }
        if (!changed) return;
    }
    for (size_t i = lo; i; i >>= 1) { /* one node a level */
        uint64_t m = min64(t[2 * i], t[2 * i + 1]);
        if (t[i] == m) break;
        t[i] = m;
    }
}

/* The caller has filled w->keys[0..n). */
static void cands_build(cands *q, tok_work *w, size_t n) {
    q->key = w->keys;
    q->mask = w->masks;
    q->tree = w->tree;
    q->n = n;
    q->blocks = (n + BLOCK - 1) / BLOCK;
    q->leaves = cands_leaves(n);
    uint64_t *t = q->tree;
    for (size_t b = 0; b < q->leaves; b++) t[q->leaves + b] = cands_leaf(q, b);
    for (size_t i = q->leaves; i-- > 1;) t[i] = min64(t[2 * i], t[2 * i + 1]);
}

/* Order-preserving map of a float to uint32, so that a higher score pops first. NONE is kept free
 * (a NaN could map there): the key below it sorts the same against every real score. */
static uint32_t score_key(float score) {
    float f = -score;
    uint32_t b;
    memcpy(&b, &f, 4);
    b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return b == NONE ? NONE - 1 : b;
}

/* One word being merged: what the inner loop reads, copied out of the vocab and the tok_work so that
 * the compiler can keep it in registers across the stores to the symbols. */
typedef struct bpe {
    const tok_vocab *v;
    const char *word;
    uint32_t len;           /* of the word */
    struct tok_sym *s;
    const uint32_t *starts;
    struct pair_memo *memo;
    int memo_shift; /* 64 - memo bits */
    uint64_t call;  /* w->call << 48 */
} bpe;

static inline struct pair_memo *memo_slot(const bpe *c, uint64_t tag) {
    return &c->memo[(tag * 0x9E3779B97F4A7C15ull) >> c->memo_shift];
}

/* The merge of symbols l and r, if the vocab has one: its key (NONE: none) and merged id. Pairs of
 * tokens are looked up in the merges, or in score mode by the text of the two pieces (a piece outside
 * the vocab has id -1, and its text is all there is to go by); the memo answers repeats. */
__attribute__((noinline)) /* keeps the memo hit path small enough to inline */
static uint32_t pair_slow(const bpe *c, int32_t l, int32_t r, int32_t *id) {
    const struct tok_sym *s = c->s;
    int32_t a = s[l].id, b = s[r].id;
    uint32_t key = NONE, rank;
    *id = -1;
    if (c->v->use_scores) {
        uint32_t end = s[r].next >= 0 ? c->starts[s[r].next] : c->len;
        *id = tok_map_find(c->v, c->word + c->starts[l], end - c->starts[l]);
        if (*id >= 0) key = score_key(c->v->score[*id]);
    } else if ((a | b) >= 0 && pair_find(&c->v->merges, a, b, &rank, id)) {
        key = rank;
    }
    if ((a | b) >= 0) {
        uint64_t tag = c->call | (uint64_t)a << 24 | (uint64_t)b;
        *memo_slot(c, tag) = (struct pair_memo){tag, *id, key};
    }
    return key;
}

static inline uint32_t pair_merge(const bpe *c, int32_t l, int32_t r, int32_t *id) {
    int32_t a = c->s[l].id, b = c->s[r].id;
    uint64_t tag = c->call | (uint64_t)a << 24 | (uint64_t)b;
    const struct pair_memo *m = memo_slot(c, tag);
    if (m->tag == tag && (a | b) >= 0) {
        *id = m->id;
        return m->key;
    }
    return pair_slow(c, l, r, id);
}

/* The key of the pair that starts at symbol l (NONE if it cannot merge); records the merged id. */
static inline uint32_t pair_key(const bpe *c, int32_t l) {
    struct tok_sym *s = c->s;
    return s[l].next < 0 ? NONE : pair_merge(c, l, s[l].next, &s[l].merged);
}

/* The last answer at one place in the batch loop: a run of one pair asks the same question each merge. */
typedef struct pair_last {
    int32_t a, b, id; /* a = -2: none */
    uint32_t key;
} pair_last;

static inline uint32_t pair_key_last(const bpe *c, pair_last *last, int32_t l) {
    struct tok_sym *s = c->s;
    int32_t r = s[l].next;
    if (r < 0) return NONE;
    int32_t a = s[l].id, b = s[r].id;
    if (a == last->a && b == last->b) {
        s[l].merged = last->id;
        return last->key;
    }
    uint32_t key = pair_merge(c, l, r, &s[l].merged);
    if ((a | b) >= 0) *last = (pair_last){a, b, s[l].merged, key}; /* score mode: -1 goes by text */
    return key;
}

/* Merge symbol l with its next one. */
static inline void merge_at(struct tok_sym *s, int32_t l) {
    int32_t r = s[l].next;
    s[l].id = s[l].merged;
    s[l].next = s[r].next;
    if (s[r].next >= 0) s[s[r].next].prev = l;
}

/* Words up to this many symbols (most of them) merge with a plain scan for the best pair. */
#define SMALL_WORD 32

/* Merge the n symbols of w->syms (linked 0..n-1) in place (tok_grow_bpe(w, n) has made room). */
static void bpe_merge(const tok_vocab *v, tok_work *w, const char *word, size_t len, int32_t n) {
    const bpe c = {v, word, (uint32_t)len, w->syms, w->starts, w->memo, 64 - w->memo_bits, (uint64_t)w->call << 48};
    struct tok_sym *s = c.s;
    uint32_t *k = w->keys;
    for (int32_t i = 0; i < n; i++) k[i] = pair_key(&c, i);
    if (n <= SMALL_WORD) {
        for (;;) {
            int32_t l = -1;
            uint32_t best = NONE;
            for (int32_t i = 0; i < n; i++)
                if (k[i] < best) best = k[i], l = i;
            if (l < 0) return;
            int32_t r = s[l].next;
            merge_at(s, l);
            k[r] = NONE;
            k[l] = pair_key(&c, l);
            if (s[l].prev >= 0) k[s[l].prev] = pair_key(&c, s[l].prev);
        }
    }
    /* Hugging Face pops the pairs one at a time. Here the pops of one key r are taken in a batch: while
     * r is the least key, its holders come in position order, block after block, and each merge only
     * has to look up its two new pairs. A batch ends at a block whose least key is not r (the tree
     * takes over), when a merge makes a key <= r, which would pop before the remaining holders, or
     * after a lone merge (the next block is not worth a look). The blocks a batch touched are rescanned
     * after it. A run of one pair, the hostile case, costs a few lookups per merge; a lone pair costs a
     * rescan or two and a path of the tree. */
    cands q;
    cands_build(&q, w, (size_t)n);
    pair_last after = {-2, -2, -1, NONE}, before = after; /* the pairs a merge makes with its neighbours */
    for (;;) {
        uint32_t r = (uint32_t)(q.tree[1] >> 32);
        if (r == NONE) return;
        size_t b = (uint32_t)q.tree[1], lo = b, hi = b, merges = 0;
        for (int more = 1; more;) {
            for (uint64_t m = q.mask[b]; m && more; m &= m - 1) {
                int32_t l = (int32_t)(b * BLOCK + (size_t)__builtin_ctzll(m)), rt = s[l].next, p = s[l].prev;
                if (k[l] != r) continue; /* its symbol was merged away in this batch */
                merge_at(s, l);
                merges++;
                k[rt] = NONE;
                hi = LAYA_MAX(hi, (size_t)rt / BLOCK);
                k[l] = pair_key_last(&c, &after, l);
                more = k[l] > r;
                if (p >= 0) {
                    k[p] = pair_key_last(&c, &before, p);
                    more &= k[p] > r;
                    lo = LAYA_MIN(lo, (size_t)p / BLOCK);
                }
            }
            if (more && merges > 1 && ++b < q.blocks && (uint32_t)(q.tree[q.leaves + b] >> 32) == r)
                hi = LAYA_MAX(hi, b);
            else more = 0;
        }
        cands_fix(&q, lo, hi);
    }
}

static inline void push_sym(tok_work *w, int32_t *n, int32_t id, size_t start) {
    int32_t i = (*n)++;
    w->syms[i] = (struct tok_sym){id, i - 1, -1, -1};
    w->starts[i] = (uint32_t)start;
    if (i > 0) w->syms[i - 1].next = i;
}

/* Merge the n symbols of the word p[0..len) and emit the tokens. */
static void bpe_word(const tok_vocab *v, tok_work *w, const char *p, size_t len, int32_t n, emitter *e) {
    bpe_merge(v, w, p, len, n);
    const struct tok_sym *s = w->syms;
    for (int32_t i = n ? 0 : -1; i >= 0; i = s[i].next) {
        if (s[i].id >= 0) {
            tok_emit(e, s[i].id);
        } else { /* score mode: a piece that never became a token */
            for (size_t k = w->starts[i], end = s[i].next >= 0 ? w->starts[s[i].next] : len; k < end; k++) {
                int32_t b = v->byte_fallback ? v->byte_tok[(unsigned char)p[k]] : v->unk;
                if (b >= 0) tok_emit(e, b);
            }
        }
    }
}

/* One byte-level pre-token (raw bytes). */
laya_status tok_bpe_gpt2(const tok_vocab *v, tok_work *w, const char *p, size_t n, emitter *e) {
    if (n == 1) {
        int32_t id = v->byte_tok[(unsigned char)p[0]];
        if (id >= 0 || (id = v->unk) >= 0) tok_emit(e, id);
        return LAYA_OK;
    }
    if (v->ignore_merges) {
        int32_t id = tok_map_find(v, p, n);
        if (id >= 0) {
            tok_emit(e, id);
            return LAYA_OK;
        }
    }
    /* segment_gpt2 has made room for n symbols */
    struct tok_sym *s = w->syms;
    uint32_t *starts = w->starts;
    int32_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = v->byte_tok[(unsigned char)p[i]];
        if (id < 0 && (id = v->unk) < 0) continue; /* Hugging Face drops a byte it cannot spell */
        s[ns] = (struct tok_sym){id, ns - 1, ns + 1, -1};
        starts[ns++] = (uint32_t)i;
    }
    if (ns) s[ns - 1].next = -1;
    bpe_word(v, w, p, n, ns, e);
    return LAYA_OK;
}

/* One SentencePiece-normalized word (U+2581 for spaces). */
void tok_bpe_spm(const tok_vocab *v, tok_work *w, const char *p, size_t n, emitter *e) {
    int32_t ns = 0, last_id = -1; /* segment_spm has made room for n symbols */
    size_t last = 0, last_k = 0; /* the last character looked up in the map: text repeats characters */
    for (size_t i = 0; i < n;) {
        unsigned char b0 = (unsigned char)p[i];
        size_t k = (size_t)uni_utf8_len(b0);
        if (k > n - i) k = n - i;
        int32_t id;
        if (b0 < 0x80) {
            id = v->char_tok[b0];
        } else if (k == 3 && b0 == 0xE2 && (unsigned char)p[i + 1] == 0x96 && (unsigned char)p[i + 2] == 0x81) {
            id = v->char_tok[128];
        } else if (k == last_k && memcmp(p + i, p + last, k) == 0) {
            id = last_id;
        } else {
            id = last_id = tok_map_find(v, p + i, k);
            last = i, last_k = k;
        }
        if (id >= 0 || v->use_scores) {
            push_sym(w, &ns, id, i); /* score mode resolves -1 at emit */
        } else if (v->byte_fallback) {
            for (size_t b = 0; b < k; b++) push_sym(w, &ns, v->byte_tok[(unsigned char)p[i + b]], i + b);
        } else if (v->unk >= 0) {
            /* Consecutive unknown characters fuse into one unk, as with Hugging Face's fuse_unk (here every
             * character makes or extends a symbol, so the last symbol is the previous character's). */
            if (ns == 0 || w->syms[ns - 1].id != v->unk) push_sym(w, &ns, v->unk, i);
        }
        i += k;
    }
    bpe_word(v, w, p, n, ns, e);
}

