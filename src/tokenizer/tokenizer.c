/* tokenizer.c — BPE tokenizers built from GGUF metadata, aiming at token-for-token parity with Hugging
 * Face `tokenizers`: byte-level BPE ("gpt2") with hand-coded Llama 3 / Qwen2 / GPT-2 split regexes, and
 * SentencePiece-style BPE ("llama") with byte fallback. The vocab is immutable after tok_load; all
 * per-call state lives in a tok_work. Not here: training, tokenizer.json, WordPiece/Unigram models. */
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <string.h>

#include "base/common.h"
#include "base/unicode.h"

enum { KIND_GPT2, KIND_SPM };
enum { SPLIT_NONE, SPLIT_LLAMA3, SPLIT_QWEN2, SPLIT_GPT2, SPLIT_SMOLLM };
/* llama.cpp's token types */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

#define MAX_TOKENS (1 << 24)   /* far above any real vocabulary; keeps ids and offsets in 32 bits */
#define MAX_TOKEN_BYTES 65536  /* longest token text accepted at load */

typedef struct trie_node {
    int32_t child, sibling; /* first child, next sibling (-1: none) */
    int32_t id;             /* token ending here, or -1 */
    uint8_t byte;
} trie_node;

/* A hash from byte strings to token ids; the strings live in the vocab's key pool. */
typedef struct str_map {
    int32_t *slots; /* token id or -1 */
    uint64_t mask;
} str_map;

/* (left id, right id) -> merge rank and merged id; one slot per cache-line quarter. */
typedef struct pair_slot {
    uint64_t key; /* (left << 32 | right), or EMPTY_PAIR */
    uint32_t rank;
    int32_t id;
} pair_slot;
/* In front of the slots, a blocked Bloom filter: one 64-bit word per pair, 3 bits set in it, 8 to 16
 * bits per merge. Random text looks up many pairs that do not merge; the filter answers most of them
 * from L2, where the megabytes of slots would cost a cache miss each. */
typedef struct pair_map {
    pair_slot *slots;
    uint64_t mask;
    uint64_t *filter;
    uint64_t filter_mask;
} pair_map;
#define EMPTY_PAIR UINT64_MAX

struct tok_vocab {
    int kind, split, nfc, ignore_merges, add_space_prefix, add_bos, use_scores;
    int32_t n;
    laya_token bos, eos, unk;
    uint8_t *type;        /* [n] llama.cpp token type */
    /* key: the text BPE looks tokens up by (gpt2: raw bytes; llama: the vocab string with U+2581) */
    char *key;
    uint32_t *key_off;    /* [n + 1] */
    /* piece: the bytes a token stands for in text (tok_piece); for gpt2 the same arrays as key */
    char *piece;
    uint32_t *piece_off;  /* [n + 1] */
    float *score;         /* [n], llama without merges only */
    str_map map;          /* key -> id, for mergeable (not control/user-defined/unused) tokens */
    pair_map merges;
    int32_t byte_tok[256]; /* gpt2: id of each byte's mapped character; llama: the <0xXX> tokens */
    int32_t char_tok[129]; /* llama: the token of each ASCII character, and [128] of U+2581 (map_find) */
    int byte_fallback;     /* llama: all 256 <0xXX> tokens present */
    int spm_split;         /* llama: a word may be split before each U+2581 that follows another character */
    trie_node *trie;       /* special and user-defined tokens; node 0 is the root */
    int32_t n_trie;
    int32_t root_child[256];
    int special_first;     /* the byte every special token starts with; -1: none, 256: not all the same */
    uint8_t ascii_cls[128];
    char model_name[8], pre_name[16];
};

/* A symbol of a word being merged: symbols stay in word order and cover it without gaps, except where
 * byte-level BPE drops a byte it cannot spell; a symbol's bytes run from its start (tok_work.starts) to
 * its next symbol's start or the word's end. */
struct tok_sym {
    int32_t id;         /* -1: in score mode, a piece outside the vocab */
    int32_t prev, next; /* -1: none */
    int32_t merged;     /* the token this symbol and the next would merge into (valid while its key is) */
};

struct tok_work {
    char *text;      size_t text_cap;  /* input with invalid UTF-8 repaired */
    uint32_t *cps;   size_t cps_cap;   /* code points of one segment */
    uint32_t *offs;  size_t offs_cap;  /* byte offset of each code point, plus the end */
    uint32_t *nfc;   size_t nfc_cap;   /* NFC output */
    char *bytes;     size_t bytes_cap; /* NFC text re-encoded, or SentencePiece-normalized text */
    struct tok_sym *syms;  size_t syms_cap;
    uint32_t *starts; size_t starts_cap; /* byte offset of each symbol in its word */
    uint32_t *keys;  size_t keys_cap;  /* BPE candidates (struct cands) */
    uint64_t *masks; size_t masks_cap;
    uint64_t *tree;  size_t tree_cap;
    struct pair_memo *memo;            /* recent merge-table lookups; entries of older calls are ignored */
    int memo_bits;                     /* log2 of its entries */
    uint32_t call;                     /* numbers the calls 1..65535, to tell those entries apart */
};

/* The merge table of a large vocab is megabytes, and each lookup is a cache miss; text repeats its
 * letter pairs, so a small direct-mapped memo per tok_work answers most of them from L1/L2. Entries are
 * stamped with the call that wrote them, so nothing is ever shared between calls (or vocabs). A
 * tok_encode temporary on short input uses a small one on the stack instead. */
#define MEMO_BITS 12
#define SMALL_MEMO_BITS 6
struct pair_memo {
    uint64_t tag;    /* call << 48 | left id << 24 | right id (ids are below MAX_TOKENS); 0: empty */
    int32_t id;      /* merged token */
    uint32_t key;    /* NONE: the pair does not merge */
};

/* Where encoded ids go: written while they fit, always counted. */
typedef struct emitter {
    laya_token *out;
    size_t cap, n;
} emitter;

static inline void emit(emitter *e, laya_token id) {
    if (e->n < e->cap) e->out[e->n] = id;
    e->n++;
}

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

static inline const char *key_of(const tok_vocab *v, int32_t id, size_t *len) {
    *len = v->key_off[id + 1] - v->key_off[id];
    return v->key + v->key_off[id];
}

static int32_t map_find(const tok_vocab *v, const char *s, size_t n) {
    if (!v->map.slots) return -1;
    uint64_t i = hash_bytes(s, n) & v->map.mask;
    for (;;) {
        int32_t id = v->map.slots[i];
        if (id < 0) return -1;
        size_t kn;
        const char *k = key_of(v, id, &kn);
        if (kn == n && memcmp(k, s, n) == 0) return id;
        i = (i + 1) & v->map.mask;
    }
}

/* Insert unless the key is already present (the lower id wins, as a dict built in id order would). */
static void map_insert(tok_vocab *v, int32_t id) {
    size_t n;
    const char *s = key_of(v, id, &n);
    uint64_t i = hash_bytes(s, n) & v->map.mask;
    for (;;) {
        int32_t o = v->map.slots[i];
        if (o < 0) { v->map.slots[i] = id; return; }
        size_t on;
        const char *os = key_of(v, o, &on);
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

static void pair_insert(pair_map *m, int32_t a, int32_t b, uint32_t rank, int32_t id) {
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

static uint64_t pow2_at_least(uint64_t n) {
    uint64_t p = 16;
    while (p < n) p <<= 1;
    return p;
}

/* ---------------------------------------------------------------------------------------------------
 * GPT-2's byte <-> character map: printable Latin-1 bytes stand for themselves, the other 68 bytes are
 * renumbered from U+0100 in byte order, so every byte has a visible character in the vocab strings. */

static void byte_map(uint16_t b2u[256], int16_t u2b[324]) {
    int k = 0;
    for (int i = 0; i < 324; i++) u2b[i] = -1;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        b2u[b] = (uint16_t)(keep ? b : 256 + k++);
        u2b[b2u[b]] = (int16_t)b;
    }
}

/* Decode a byte-mapped vocab string into raw bytes; 0 if it is not one (invalid UTF-8 or unmapped). */
static int unmap_bytes(const int16_t u2b[324], const char *s, size_t n, char *out, size_t *out_n) {
    if (!uni_utf8_valid(s, n)) return 0;
    size_t i = 0, m = 0;
    while (i < n) {
        uint32_t c = uni_utf8_next(s, n, &i);
        if (c >= 324 || u2b[c] < 0) return 0;
        out[m++] = (char)u2b[c];
    }
    *out_n = m;
    return 1;
}

/* ---------------------------------------------------------------------------------------------------
 * Loading */

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* The byte of a "<0xXX>" token text, or -1. */
static int byte_token_value(const char *k, size_t n) {
    if (n != 6 || memcmp(k, "<0x", 3) != 0 || k[5] != '>') return -1;
    int hi = hex_digit(k[3]), lo = hex_digit(k[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

typedef struct pre_alias { const char *name; int split; } pre_alias;
/* llama.cpp's tokenizer.ggml.pre names whose split is exactly one of the three implemented here. */
static const pre_alias pre_aliases[] = {
    {"llama3", SPLIT_LLAMA3}, {"llama-v3", SPLIT_LLAMA3}, {"llama-bpe", SPLIT_LLAMA3}, {"smaug-bpe", SPLIT_LLAMA3},
    {"falcon3", SPLIT_LLAMA3},
    {"qwen2", SPLIT_QWEN2}, {"deepseek-r1-qwen", SPLIT_QWEN2}, {"megrez", SPLIT_QWEN2},
    {"gpt2", SPLIT_GPT2}, {"gpt-2", SPLIT_GPT2}, {"default", SPLIT_GPT2}, {"phi-2", SPLIT_GPT2}, {"mpt", SPLIT_GPT2},
    {"olmo", SPLIT_GPT2}, {"roberta-bpe", SPLIT_GPT2}, {"jina-es", SPLIT_GPT2}, {"jina-de", SPLIT_GPT2},
    {"jina-v1-en", SPLIT_GPT2}, {"jina-v2-es", SPLIT_GPT2}, {"jina-v2-de", SPLIT_GPT2},
    {"smollm", SPLIT_SMOLLM},
};
static const char *split_names[] = {"default", "llama3", "qwen2", "gpt2", "smollm"};

static int str_is(gguf_str s, const char *lit) { return s.n == strlen(lit) && memcmp(s.p, lit, s.n) == 0; }

static laya_status get_opt_bool(const gguf_file *f, const char *key, int *out, char *err, size_t errlen) {
    laya_status st = gguf_get_bool(f, key, out);
    if (st == LAYA_ERR_NOT_FOUND) return LAYA_OK;
    if (st) return laya_err(err, errlen, st, "tokenizer: %s is not a bool", key);
    return LAYA_OK;
}

static laya_status get_opt_id(const tok_vocab *v, const gguf_file *f, const char *key, laya_token *out, char *err,
                              size_t errlen) {
    int64_t x;
    *out = -1;
    laya_status st = gguf_get_i64(f, key, &x);
    if (st == LAYA_ERR_NOT_FOUND) return LAYA_OK;
    if (st) return laya_err(err, errlen, st, "tokenizer: %s is not an integer", key);
    if (x < 0 || x >= v->n)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer: %s = %lld is outside the %d tokens", key,
                        (long long)x, (int)v->n);
    *out = (laya_token)x;
    return LAYA_OK;
}

static int is_mergeable(uint8_t t) { return t != TT_CONTROL && t != TT_USER && t != TT_UNUSED; }

/* 1 if key holds U+2581 after some other character. */
static int space_inside(const char *k, size_t n) {
    size_t i = 0;
    while (i + 3 <= n && memcmp(k + i, "\xE2\x96\x81", 3) == 0) i += 3;
    for (; i + 3 <= n; i++)
        if (memcmp(k + i, "\xE2\x96\x81", 3) == 0) return 1;
    return 0;
}

/* SentencePiece-style text is one word, spaces and all, so a long text is one long BPE. When no token
 * holds U+2581 after another character, no merge can join a piece that ends in another character to
 * one that starts with U+2581 (merged texts are joined texts), so each such place splits the word
 * with the same result. The check needs U+2581 itself to be a token, and an unknown token whose text
 * holds another character, so that every piece before such a place holds one. */
static int spm_can_split(const tok_vocab *v) {
    if (v->char_tok[128] < 0) return 0;
    for (int32_t i = 0; i < v->n; i++) {
        size_t kn;
        const char *k = key_of(v, i, &kn);
        if (is_mergeable(v->type[i]) && space_inside(k, kn)) return 0;
    }
    if (v->unk >= 0) {
        size_t kn;
        const char *k = key_of(v, v->unk, &kn);
        size_t i = 0;
        while (i + 3 <= kn && memcmp(k + i, "\xE2\x96\x81", 3) == 0) i += 3;
        if (i == kn) return 0;
    }
    return 1;
}

static laya_status build_trie(tok_vocab *v) {
    size_t nodes = 1;
    for (int32_t i = 0; i < v->n; i++) {
        uint8_t t = v->type[i];
        if (t == TT_CONTROL || t == TT_USER || t == TT_UNKNOWN) nodes += v->piece_off[i + 1] - v->piece_off[i];
    }
    for (int b = 0; b < 256; b++) v->root_child[b] = -1;
    v->special_first = -1;
    if (nodes > INT32_MAX) return LAYA_ERR_FORMAT;
    v->trie = laya_malloc(nodes * sizeof *v->trie);
    if (!v->trie) return LAYA_ERR_NOMEM;
    v->trie[0] = (trie_node){-1, -1, -1, 0};
    v->n_trie = 1;
    for (int32_t i = 0; i < v->n; i++) {
        uint8_t t = v->type[i];
        if (t != TT_CONTROL && t != TT_USER && t != TT_UNKNOWN) continue;
        const unsigned char *s = (const unsigned char *)v->piece + v->piece_off[i];
        size_t len = v->piece_off[i + 1] - v->piece_off[i];
        if (len == 0) continue;
        int32_t node = 0;
        for (size_t k = 0; k < len; k++) {
            int32_t c = k == 0 ? v->root_child[s[0]] : v->trie[node].child;
            while (c >= 0 && v->trie[c].byte != s[k]) c = v->trie[c].sibling;
            if (c < 0) {
                c = v->n_trie++;
                v->trie[c] = (trie_node){-1, -1, -1, s[k]};
                if (k == 0) {
                    v->root_child[s[0]] = c;
                    v->special_first = v->special_first < 0 ? s[0] : 256;
                } else {
                    v->trie[c].sibling = v->trie[node].child;
                    v->trie[node].child = c;
                }
            }
            node = c;
        }
        if (v->trie[node].id < 0) v->trie[node].id = i; /* a repeated text keeps its first id */
    }
    return LAYA_OK;
}

static laya_status load_merges(tok_vocab *v, const gguf_kv *mk, const int16_t *u2b, char *err, size_t errlen) {
    uint64_t nm = mk->arr_n;
    if (nm > UINT32_MAX / 2)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer: %llu merges", (unsigned long long)nm);
    uint64_t cap = pow2_at_least(nm * 2 + 1), words = pow2_at_least(nm / 8 + 1);
    pair_map *m = &v->merges;
    m->slots = laya_dense_alloc(cap * sizeof *m->slots);
    m->filter = laya_calloc(words, sizeof *m->filter);
    char *buf = laya_malloc(2 * MAX_TOKEN_BYTES + 2);
    if (!m->slots || !m->filter || !buf) {
        laya_free(buf);
        return laya_err(err, errlen, LAYA_ERR_NOMEM, "tokenizer: out of memory for %llu merges",
                        (unsigned long long)nm);
    }
    for (uint64_t i = 0; i < cap; i++) m->slots[i].key = EMPTY_PAIR;
    m->mask = cap - 1;
    m->filter_mask = words - 1;
    /* Merges whose parts or result are not tokens are skipped: Hugging Face refuses such a file, but
     * a merge that can never fire changes no output, so there is nothing to gain by refusing. */
    gguf_str_iter it = gguf_arr_strs(mk);
    gguf_str s;
    for (uint32_t r = 0; gguf_str_next(&it, &s); r++) {
        if (s.n < 3 || s.n > 2 * MAX_TOKEN_BYTES) continue;
        const char *sp = memchr(s.p + 1, ' ', s.n - 1); /* from 1: a part may itself be a space */
        if (!sp) continue;
        size_t na = (size_t)(sp - s.p), nb = s.n - na - 1;
        if (nb == 0) continue;
        size_t ra, rb;
        if (v->kind == KIND_GPT2) {
            if (!unmap_bytes(u2b, s.p, na, buf, &ra) || !unmap_bytes(u2b, sp + 1, nb, buf + ra, &rb)) continue;
        } else {
            memcpy(buf, s.p, na);
            memcpy(buf + na, sp + 1, nb);
            ra = na, rb = nb;
        }
        int32_t a = map_find(v, buf, ra), b = map_find(v, buf + ra, rb), c = map_find(v, buf, ra + rb);
        if (a < 0 || b < 0 || c < 0) continue;
        pair_insert(m, a, b, r, c);
    }
    laya_free(buf);
    return LAYA_OK;
}

laya_status tok_load(const gguf_file *f, tok_vocab **out, char *err, size_t errlen) {
    laya_status st;
    if (!f || !out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "tok_load: NULL argument");
    *out = NULL;
    gguf_str model;
    st = gguf_get_str(f, "tokenizer.ggml.model", &model);
    if (st == LAYA_ERR_NOT_FOUND) return laya_err(err, errlen, st, "tokenizer: no tokenizer.ggml.model");
    if (st) return laya_err(err, errlen, st, "tokenizer: tokenizer.ggml.model is not a string");
    int kind;
    if (str_is(model, "gpt2")) kind = KIND_GPT2;
    else if (str_is(model, "llama")) kind = KIND_SPM;
    else
        return laya_err(err, errlen, LAYA_ERR_UNSUPPORTED, "tokenizer: model \"%.*s\" is not supported (gpt2, llama)",
                        (int)LAYA_MIN(model.n, 40), model.p);

    const gguf_kv *tk, *tt = NULL, *mk = NULL, *sk = NULL;
    st = gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_STRING, &tk);
    if (st) return laya_err(err, errlen, st, "tokenizer: tokenizer.ggml.tokens %s",
                            st == LAYA_ERR_NOT_FOUND ? "missing" : "is not an array of strings");
    if (tk->arr_n == 0 || tk->arr_n > MAX_TOKENS)
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer: %llu tokens", (unsigned long long)tk->arr_n);
    int32_t n = (int32_t)tk->arr_n;
    st = gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_ARR_ANY, &tt);
    if (st && st != LAYA_ERR_NOT_FOUND) return laya_err(err, errlen, st, "tokenizer: token_type is not an array");
    if (tt && (tt->arr_n != (uint64_t)n || tt->arr_type == GGUF_STRING))
        return laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer: token_type has %llu entries for %d tokens",
                        (unsigned long long)tt->arr_n, (int)n);
    st = gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_STRING, &mk);
    if (st && st != LAYA_ERR_NOT_FOUND)
        return laya_err(err, errlen, st, "tokenizer: merges is not an array of strings");
    st = gguf_get_arr(f, "tokenizer.ggml.scores", GGUF_ARR_ANY, &sk);
    if (st && st != LAYA_ERR_NOT_FOUND) return laya_err(err, errlen, st, "tokenizer: scores is not an array");
    if (sk && (sk->arr_n != (uint64_t)n || sk->arr_type == GGUF_STRING)) sk = NULL; /* unusable: ignore */

    tok_vocab *v = laya_calloc(1, sizeof *v);
    if (!v) return laya_err(err, errlen, LAYA_ERR_NOMEM, "tokenizer: out of memory");
    v->kind = kind;
    v->n = n;
    snprintf(v->model_name, sizeof v->model_name, "%s", kind == KIND_GPT2 ? "gpt2" : "llama");

    /* pre-tokenizer and normalizer */
    if (kind == KIND_GPT2) {
        gguf_str pre;
        st = gguf_get_str(f, "tokenizer.ggml.pre", &pre);
        if (st == LAYA_ERR_NOT_FOUND) {
            v->split = SPLIT_GPT2; /* llama.cpp's fallback for old files */
        } else if (st) {
            st = laya_err(err, errlen, st, "tokenizer: tokenizer.ggml.pre is not a string");
            goto fail;
        } else {
            for (size_t i = 0; i < sizeof pre_aliases / sizeof pre_aliases[0]; i++)
                if (str_is(pre, pre_aliases[i].name)) v->split = pre_aliases[i].split;
            if (v->split == SPLIT_NONE) {
                st = laya_err(err, errlen, LAYA_ERR_UNSUPPORTED,
                              "tokenizer: pre-tokenizer \"%.*s\" is not supported (llama3, qwen2, gpt2 families)",
                              (int)LAYA_MIN(pre.n, 40), pre.p);
                goto fail;
            }
        }
        gguf_str norm;
        st = gguf_get_str(f, "laya.tokenizer.normalizer", &norm);
        if (st == LAYA_ERR_NOT_FOUND) {
            v->nfc = v->split == SPLIT_QWEN2; /* Qwen2's tokenizer.json applies NFC; llama.cpp infers it */
        } else if (st) {
            st = laya_err(err, errlen, st, "tokenizer: laya.tokenizer.normalizer is not a string");
            goto fail;
        } else if (str_is(norm, "nfc")) {
            v->nfc = 1;
        } else if (!str_is(norm, "none") && norm.n) {
            st = laya_err(err, errlen, LAYA_ERR_UNSUPPORTED,
                          "tokenizer: normalizer \"%.*s\" is not supported (nfc, none)", (int)LAYA_MIN(norm.n, 40),
                          norm.p);
            goto fail;
        }
        v->ignore_merges = v->split == SPLIT_LLAMA3; /* Llama 3's tokenizer.json sets ignore_merges */
    } else {
        v->add_space_prefix = 1;
    }
    snprintf(v->pre_name, sizeof v->pre_name, "%s", split_names[v->split]);
    if ((st = get_opt_bool(f, "laya.tokenizer.ignore_merges", &v->ignore_merges, err, errlen))) goto fail;
    if ((st = get_opt_bool(f, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix, err, errlen))) goto fail;

    /* token types and texts */
    v->type = laya_malloc((size_t)n);
    v->key_off = laya_dense_alloc(((size_t)n + 1) * sizeof *v->key_off);
    if (!v->type || !v->key_off) goto nomem;
    uint64_t total = 0;
    gguf_str_iter it = gguf_arr_strs(tk);
    for (int32_t i = 0; i < n; i++) {
        int64_t t = tt ? (int64_t)gguf_arr_num(tt, (uint64_t)i) : TT_NORMAL;
        v->type[i] = (uint8_t)(t >= 1 && t <= 6 ? t : TT_NORMAL);
        gguf_str s;
        gguf_str_next(&it, &s); /* n == the array's length */
        if (s.n > MAX_TOKEN_BYTES) {
            st = laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer: token %d is %llu bytes long", (int)i,
                          (unsigned long long)s.n);
            goto fail;
        }
        total += s.n;
    }
    if (total > UINT32_MAX) {
        st = laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer: token texts total %llu bytes",
                      (unsigned long long)total);
        goto fail;
    }
    /* Keys are never longer than the vocab strings (unmapping only shrinks), so `total` bounds both. */
    v->key = laya_dense_alloc(total ? total : 1);
    if (!v->key) goto nomem;
    uint16_t b2u[256];
    int16_t u2b[324];
    byte_map(b2u, u2b);
    uint32_t off = 0;
    it = gguf_arr_strs(tk);
    for (int32_t i = 0; i < n; i++) {
        gguf_str s;
        gguf_str_next(&it, &s);
        v->key_off[i] = off;
        size_t m;
        if (kind == KIND_GPT2 && is_mergeable(v->type[i]) && unmap_bytes(u2b, s.p, s.n, v->key + off, &m)) {
            off += (uint32_t)m;
        } else {
            memcpy(v->key + off, s.p, s.n); /* control/user-defined text, or a string outside the byte map */
            off += (uint32_t)s.n;
        }
    }
    v->key_off[n] = off;

    if (kind == KIND_GPT2) {
        v->piece = v->key;
        v->piece_off = v->key_off;
    } else {
        /* pieces: U+2581 -> ' ' (3 bytes -> 1), <0xXX> -> the byte, control text as is: never longer */
        v->piece = laya_dense_alloc(total ? total : 1);
        v->piece_off = laya_dense_alloc(((size_t)n + 1) * sizeof *v->piece_off);
        if (!v->piece || !v->piece_off) goto nomem;
        uint32_t po = 0;
        for (int32_t i = 0; i < n; i++) {
            size_t kn;
            const char *k = key_of(v, i, &kn);
            v->piece_off[i] = po;
            int hx = v->type[i] == TT_BYTE ? byte_token_value(k, kn) : -1;
            if (hx >= 0) {
                v->piece[po++] = (char)hx;
            } else if (v->type[i] == TT_NORMAL || v->type[i] == TT_BYTE) {
                for (size_t j = 0; j < kn; j++) {
                    if (j + 2 < kn && (unsigned char)k[j] == 0xE2 && (unsigned char)k[j + 1] == 0x96 &&
                        (unsigned char)k[j + 2] == 0x81) {
                        v->piece[po++] = ' ';
                        j += 2;
                    } else {
                        v->piece[po++] = k[j];
                    }
                }
            } else {
                memcpy(v->piece + po, k, kn);
                po += (uint32_t)kn;
            }
        }
        v->piece_off[n] = po;
    }

    /* key -> id map over the tokens BPE may produce */
    uint64_t cap = pow2_at_least((uint64_t)n * 2 + 1);
    v->map.slots = laya_dense_alloc(cap * sizeof *v->map.slots);
    if (!v->map.slots) goto nomem;
    memset(v->map.slots, 0xFF, cap * sizeof *v->map.slots);
    v->map.mask = cap - 1;
    for (int32_t i = 0; i < n; i++)
        if (is_mergeable(v->type[i])) map_insert(v, i);

    for (int b = 0; b < 256; b++) {
        char s[8];
        int sl = 1;
        if (kind == KIND_GPT2) s[0] = (char)b; /* gpt2 keys are raw bytes */
        else sl = snprintf(s, sizeof s, "<0x%02X>", b);
        v->byte_tok[b] = map_find(v, s, (size_t)sl);
    }
    if (kind == KIND_SPM) {
        for (int c = 0; c < 128; c++) {
            char ch = (char)c;
            v->char_tok[c] = map_find(v, &ch, 1);
        }
        v->char_tok[128] = map_find(v, "\xE2\x96\x81", 3);
        v->byte_fallback = 1;
        for (int b = 0; b < 256; b++)
            if (v->byte_tok[b] < 0) v->byte_fallback = 0;
    }

    if (mk && mk->arr_n) {
        if ((st = load_merges(v, mk, u2b, err, errlen))) goto fail;
    } else if (kind == KIND_SPM && sk) {
        v->use_scores = 1; /* llama.cpp's SentencePiece semantics: merge the best-scoring adjacent pair */
        v->score = laya_malloc((size_t)n * sizeof *v->score);
        if (!v->score) goto nomem;
        for (int32_t i = 0; i < n; i++) v->score[i] = (float)gguf_arr_num(sk, (uint64_t)i);
    }

    if ((st = build_trie(v))) {
        st = laya_err(err, errlen, st, "tokenizer: %s", st == LAYA_ERR_NOMEM ? "out of memory for special tokens"
                                                                             : "special tokens too long");
        goto fail;
    }
    for (int c = 0; c < 128; c++) v->ascii_cls[c] = uni_flags((uint32_t)c);

    if ((st = get_opt_id(v, f, "tokenizer.ggml.bos_token_id", &v->bos, err, errlen))) goto fail;
    if ((st = get_opt_id(v, f, "tokenizer.ggml.eos_token_id", &v->eos, err, errlen))) goto fail;
    if ((st = get_opt_id(v, f, "tokenizer.ggml.unknown_token_id", &v->unk, err, errlen))) goto fail;
    if (v->unk < 0)
        for (int32_t i = 0; i < n && v->unk < 0; i++)
            if (v->type[i] == TT_UNKNOWN) v->unk = i;
    v->spm_split = kind == KIND_SPM && spm_can_split(v);
    v->add_bos = kind == KIND_SPM || v->split == SPLIT_LLAMA3;
    if ((st = get_opt_bool(f, "tokenizer.ggml.add_bos_token", &v->add_bos, err, errlen))) goto fail;
    if (v->bos < 0) v->add_bos = 0;
    *out = v;
    return LAYA_OK;

nomem:
    st = laya_err(err, errlen, LAYA_ERR_NOMEM, "tokenizer: out of memory for %d tokens", (int)n);
fail:
    tok_free(v);
    return st;
}

void tok_free(tok_vocab *v) {
    if (!v) return;
    if (v->piece != v->key) {
        laya_free(v->piece);
        laya_free(v->piece_off);
    }
    laya_free(v->key);
    laya_free(v->key_off);
    laya_free(v->type);
    laya_free(v->score);
    laya_free(v->map.slots);
    laya_free(v->merges.slots);
    laya_free(v->merges.filter);
    laya_free(v->trie);
    laya_free(v);
}

int32_t tok_n_vocab(const tok_vocab *v) { return v ? v->n : 0; }
laya_token tok_bos(const tok_vocab *v) { return v ? v->bos : -1; }
laya_token tok_eos(const tok_vocab *v) { return v ? v->eos : -1; }
int tok_add_bos(const tok_vocab *v) { return v ? v->add_bos : 0; }
const char *tok_model_name(const tok_vocab *v) { return v ? v->model_name : ""; }
const char *tok_pre_name(const tok_vocab *v) { return v ? v->pre_name : ""; }
int tok_token_type(const tok_vocab *v, laya_token id) {
    return v && id >= 0 && id < v->n ? v->type[id] : 0;
}

/* ---------------------------------------------------------------------------------------------------
 * Scratch */

/* Make room for `need` elements; old contents are not kept (every caller refills). */
static int grow(void **p, size_t *cap, size_t need, size_t elem) {
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
#define GROW(w, field, need) grow((void **)&(w)->field, &(w)->field##_cap, (need), sizeof *(w)->field)

static size_t cands_leaves(size_t n);

/* Room for BPE on n symbols (see struct cands). */
static int grow_bpe(tok_work *w, size_t n) {
    size_t leaves = cands_leaves(n);
    return GROW(w, syms, n) || GROW(w, starts, n) || GROW(w, keys, n) || GROW(w, masks, leaves) ||
           GROW(w, tree, 2 * leaves);
}

tok_work *tok_work_new(void) { return laya_calloc(1, sizeof(tok_work)); }

static void work_release(tok_work *w) {
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
    work_release(w);
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
        GROW(w, bytes, bytes) || grow_bpe(w, bytes))
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
        *id = map_find(c->v, c->word + c->starts[l], end - c->starts[l]);
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

/* Merge the n symbols of w->syms (linked 0..n-1) in place (grow_bpe(w, n) has made room). */
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
            emit(e, s[i].id);
        } else { /* score mode: a piece that never became a token */
            for (size_t k = w->starts[i], end = s[i].next >= 0 ? w->starts[s[i].next] : len; k < end; k++) {
                int32_t b = v->byte_fallback ? v->byte_tok[(unsigned char)p[k]] : v->unk;
                if (b >= 0) emit(e, b);
            }
        }
    }
}

/* One byte-level pre-token (raw bytes). */
static laya_status bpe_gpt2(const tok_vocab *v, tok_work *w, const char *p, size_t n, emitter *e) {
    if (n == 1) {
        int32_t id = v->byte_tok[(unsigned char)p[0]];
        if (id >= 0 || (id = v->unk) >= 0) emit(e, id);
        return LAYA_OK;
    }
    if (v->ignore_merges) {
        int32_t id = map_find(v, p, n);
        if (id >= 0) {
            emit(e, id);
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
static void bpe_spm(const tok_vocab *v, tok_work *w, const char *p, size_t n, emitter *e) {
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
            id = last_id = map_find(v, p + i, k);
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

/* ---------------------------------------------------------------------------------------------------
 * Pre-tokenizer splits. Each returns the end of the regex match that starts at c[i], written to follow
 * the regex engine's leftmost-alternative, greedy-with-backtracking semantics (Oniguruma, which Hugging
 * Face uses): \s is White_Space, \p{L} and \p{N} the general categories. */

static inline uint8_t cls(const tok_vocab *v, uint32_t c) { return c < 128 ? v->ascii_cls[c] : uni_flags(c); }
#define IS_L(c) (cls(v, c) & UNI_L)
#define IS_N(c) (cls(v, c) & UNI_N)
#define IS_WS(c) (cls(v, c) & UNI_WS)
#define IS_OTHER(c) (!(cls(v, c) & (UNI_L | UNI_N | UNI_WS))) /* [^\s\p{L}\p{N}] */
#define IS_NL(c) ((c) == '\r' || (c) == '\n')

/* Case-insensitive letter for (?i:'s|'t|...): ASCII, plus U+017F LONG S, which case-folds to 's'. */
static inline uint32_t fold(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c == 0x17F) return 's';
    return c;
}

/* 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive; returns the match length or 0. */
static size_t contraction(const uint32_t *c, size_t n, size_t i, int icase) {
    if (c[i] != '\'' || i + 1 >= n) return 0;
    uint32_t a = icase ? fold(c[i + 1]) : c[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 >= n) return 0;
    uint32_t b = icase ? fold(c[i + 2]) : c[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* \s+(?!\S) then \s+ over the whitespace run [i, j): leave the last space to the next word. */
static size_t ws_tail(size_t i, size_t j, size_t n) {
    if (j == n || j - i == 1) return j;
    return j - 1;
}

/* Llama 3 (maxdig 3) and Qwen2 (maxdig 1, \p{N} instead of \p{N}{1,3}):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 *   \s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t split_llama3(const tok_vocab *v, const uint32_t *c, size_t n, size_t i, size_t maxdig) {
    size_t k = contraction(c, n, i, 1), j;
    if (k) return i + k;
    uint32_t ch = c[i];
    uint8_t f = cls(v, ch);
    if (f & UNI_L || (!(f & (UNI_L | UNI_N)) && !IS_NL(ch) && i + 1 < n && IS_L(c[i + 1]))) {
        for (j = i + 1; j < n && IS_L(c[j]); j++) {}
        return j;
    }
    if (f & UNI_N) {
        for (j = i + 1; j < n && j - i < maxdig && IS_N(c[j]); j++) {}
        return j;
    }
    j = (ch == ' ' && i + 1 < n && IS_OTHER(c[i + 1])) ? i + 1 : i;
    if (IS_OTHER(c[j])) {
        for (j++; j < n && IS_OTHER(c[j]); j++) {}
        while (j < n && IS_NL(c[j])) j++;
        return j;
    }
    /* c[i] is whitespace. \s*[\r\n]+ backtracks to end just after the run's last newline. */
    size_t last_nl = SIZE_MAX;
    for (j = i; j < n && IS_WS(c[j]); j++)
        if (IS_NL(c[j])) last_nl = j;
    if (last_nl != SIZE_MAX) return last_nl + 1;
    return ws_tail(i, j, n);
}

/* GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static size_t split_gpt2(const tok_vocab *v, const uint32_t *c, size_t n, size_t i) {
    size_t k = contraction(c, n, i, 0), j = i;
    if (k) return i + k;
    if (c[i] == ' ' && i + 1 < n && !IS_WS(c[i + 1])) j = i + 1; /* the optional space, if a class follows */
    uint8_t f = cls(v, c[j]);
    if (!(f & UNI_WS)) {
        uint8_t want = f & (UNI_L | UNI_N);
        for (j++; j < n; j++) {
            uint8_t g = cls(v, c[j]);
            if (want ? !(g & want) : (g & (UNI_L | UNI_N | UNI_WS)) != 0) break;
        }
        return j;
    }
    for (j = i; j < n && IS_WS(c[j]); j++) {}
    return ws_tail(i, j, n);
}

/* ---------------------------------------------------------------------------------------------------
 * Encoding */

/* Decode valid UTF-8 into w->cps with byte offsets in w->offs; returns the count. */
static size_t to_cps(tok_work *w, const char *s, size_t n) {
    size_t i = 0, k = 0;
    while (i < n) {
        w->offs[k] = (uint32_t)i;
        const unsigned char *p = (const unsigned char *)s + i;
        uint32_t c = p[0];
        if (c < 0x80) { /* valid UTF-8 by contract: the lengths are not checked again */
            i += 1;
        } else if (c < 0xE0) {
            c = (c & 0x1F) << 6 | (p[1] & 63u);
            i += 2;
        } else if (c < 0xF0) {
            c = (c & 0x0F) << 12 | (p[1] & 63u) << 6 | (p[2] & 63u);
            i += 3;
        } else {
            c = (c & 0x07) << 18 | (p[1] & 63u) << 12 | (p[2] & 63u) << 6 | (p[3] & 63u);
            i += 4;
        }
        w->cps[k++] = c;
    }
    w->offs[k] = (uint32_t)n;
    return k;
}

static laya_status segment_gpt2(const tok_vocab *v, tok_work *w, const char *s, size_t n, emitter *e) {
    if (n == 0) return LAYA_OK;
    if (n > UINT32_MAX / 16 || GROW(w, cps, n + 1) || GROW(w, offs, n + 1)) return LAYA_ERR_NOMEM;
    size_t ncp = to_cps(w, s, n);
    if (v->nfc && !uni_nfc_quick(w->cps, ncp)) {
        if (GROW(w, nfc, UNI_MAX_DECOMP * ncp)) return LAYA_ERR_NOMEM;
        size_t m = uni_nfc_fast(w->cps, ncp, w->nfc), nb = 0;
        for (size_t i = 0; i < m; i++) nb += w->nfc[i] < 0x80 ? 1 : w->nfc[i] < 0x800 ? 2 : w->nfc[i] < 0x10000 ? 3 : 4;
        if (GROW(w, bytes, nb) || GROW(w, cps, m + 1) || GROW(w, offs, m + 1)) return LAYA_ERR_NOMEM;
        nb = 0;
        for (size_t i = 0; i < m; i++) nb += (size_t)uni_utf8_encode(w->nfc[i], w->bytes + nb);
        s = w->bytes;
        n = nb;
        ncp = to_cps(w, s, n);
    }
    if (grow_bpe(w, n)) return LAYA_ERR_NOMEM; /* room for any word of the segment */
    size_t chunk_end = 0; /* SmolLM: end of the digit-free run the GPT-2 split may see */
    for (size_t i = 0; i < ncp;) {
        size_t j;
        if (v->split == SPLIT_SMOLLM) {
            /* SmolLM: Digits(individual_digits) first, each \p{N} alone, then GPT-2's split on each run
             * between digits, as if the run were the whole text. */
            if (IS_N(w->cps[i])) {
                j = i + 1;
            } else {
                if (chunk_end <= i)
                    for (chunk_end = i; chunk_end < ncp && !IS_N(w->cps[chunk_end]); chunk_end++) {}
                j = split_gpt2(v, w->cps, chunk_end, i);
            }
        } else {
            j = v->split == SPLIT_GPT2 ? split_gpt2(v, w->cps, ncp, i)
                                       : split_llama3(v, w->cps, ncp, i, v->split == SPLIT_LLAMA3 ? 3 : 1);
        }
        laya_status st = bpe_gpt2(v, w, s + w->offs[i], w->offs[j] - w->offs[i], e);
        if (st) return st;
        i = j;
    }
    return LAYA_OK;
}

static laya_status segment_spm(const tok_vocab *v, tok_work *w, const char *s, size_t n, emitter *e) {
    /* Hugging Face's Prepend normalizer leaves an empty string empty, and each piece between special
     * tokens is normalized on its own, so each gets its own U+2581. */
    if (n == 0) return LAYA_OK;
    if (n > (SIZE_MAX - 3) / 3 || GROW(w, bytes, 3 * n + 3)) return LAYA_ERR_NOMEM;
    char *o = w->bytes;
    size_t m = 0;
    if (v->add_space_prefix) memcpy(o, "\xE2\x96\x81", 3), m = 3;
    for (size_t i = 0; i < n;) {
        const char *sp = memchr(s + i, ' ', n - i);
        size_t j = sp ? (size_t)(sp - s) : n;
        memcpy(o + m, s + i, j - i);
        m += j - i;
        if (j < n) memcpy(o + m, "\xE2\x96\x81", 3), m += 3;
        i = j + 1;
    }
    if (grow_bpe(w, m)) return LAYA_ERR_NOMEM;
    size_t start = 0; /* split before each U+2581 that follows another character (see spm_can_split) */
    for (const char *q = o + 1; v->spm_split && (q = memchr(q, 0xE2, (size_t)(o + m - q))) != NULL; q++) {
        size_t i = (size_t)(q - o);
        if (i + 3 > m || memcmp(q, "\xE2\x96\x81", 3) != 0 || (i >= 3 && memcmp(q - 3, "\xE2\x96\x81", 3) == 0))
            continue;
        bpe_spm(v, w, o + start, i - start, e);
        start = i;
    }
    bpe_spm(v, w, o + start, m - start, e);
    return LAYA_OK;
}

static laya_status segment(const tok_vocab *v, tok_work *w, const char *s, size_t n, emitter *e) {
    return v->kind == KIND_GPT2 ? segment_gpt2(v, w, s, n, e) : segment_spm(v, w, s, n, e);
}

/* Longest special/user-defined token at s[0..n), or -1; control tokens count only with parse_special. */
static int32_t match_special(const tok_vocab *v, const unsigned char *s, size_t n, int parse_special, size_t *len) {
    int32_t node = v->root_child[s[0]], best = -1;
    size_t k = 0;
    while (node >= 0) {
        k++;
        int32_t id = v->trie[node].id;
        if (id >= 0 && (parse_special || v->type[id] == TT_USER)) best = id, *len = k;
        if (k == n) break;
        int32_t c = v->trie[node].child;
        while (c >= 0 && v->trie[c].byte != s[k]) c = v->trie[c].sibling;
        node = c;
    }
    return best;
}

laya_status tok_encode_work(const tok_vocab *v, tok_work *w, const char *text, size_t len, int parse_special,
                            laya_token *out, size_t cap, size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!v || !w || (!text && len) || (!out && cap) || !n_out) return LAYA_ERR_INVALID_ARG;
    if (len > UINT32_MAX / 16) return LAYA_ERR_CAPACITY; /* offsets are 32-bit; 256 MiB is no keystroke */
    if (!w->memo) {
        if (!(w->memo = laya_calloc((size_t)1 << MEMO_BITS, sizeof *w->memo))) return LAYA_ERR_NOMEM;
        w->memo_bits = MEMO_BITS;
    }
    if (++w->call > 0xFFFF) { /* wrapped: forget everything rather than trust stamps 65535 calls old */
        memset(w->memo, 0, sizeof *w->memo << w->memo_bits);
        w->call = 1;
    }
    if (!uni_utf8_valid(text, len)) { /* repair grows a byte to at most 3 (U+FFFD) */
        if (GROW(w, text, 3 * len)) return LAYA_ERR_NOMEM;
        len = uni_utf8_sanitize(text, len, w->text, 3 * len);
        text = w->text;
    }
    emitter e = {out, cap, 0};
    laya_status st = LAYA_OK;
    const unsigned char *s = (const unsigned char *)text;
    size_t seg = 0;
    for (size_t i = 0; i < len;) {
        if (v->special_first < 256) { /* one byte starts every special token (often '<'): skip to it */
            const void *q = v->special_first < 0 ? NULL : memchr(s + i, v->special_first, len - i);
            if (!q) break;
            i = (size_t)((const unsigned char *)q - s);
        }
        size_t ml;
        int32_t id = v->root_child[s[i]] >= 0 ? match_special(v, s + i, len - i, parse_special, &ml) : -1;
        if (id < 0) {
            i++;
            continue;
        }
        if ((st = segment(v, w, text + seg, i - seg, &e))) return st;
        emit(&e, id);
        i += ml;
        seg = i;
    }
    if ((st = segment(v, w, text + seg, len - seg, &e))) return st;
    *n_out = e.n;
    return e.n > cap ? LAYA_ERR_CAPACITY : LAYA_OK;
}

laya_status tok_encode(const tok_vocab *v, const char *text, size_t len, int parse_special, laya_token *out,
                       size_t cap, size_t *n_out) {
    tok_work w;
    struct pair_memo small[1 << SMALL_MEMO_BITS]; /* the big memo pays off only on long input */
    memset(&w, 0, sizeof w);
    if (len < 4096) {
        memset(small, 0, sizeof small);
        w.memo = small;
        w.memo_bits = SMALL_MEMO_BITS;
    }
    laya_status st = tok_encode_work(v, &w, text, len, parse_special, out, cap, n_out);
    if (w.memo == small) w.memo = NULL;
    work_release(&w);
    return st;
}

/* ---------------------------------------------------------------------------------------------------
 * Decoding */

const char *tok_piece(const tok_vocab *v, laya_token id, size_t *len) {
    if (!v || id < 0 || id >= v->n) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = v->piece_off[id + 1] - v->piece_off[id];
    return v->piece + v->piece_off[id];
}

laya_status tok_decode(const tok_vocab *v, const laya_token *ids, size_t n, int strip_leading_space,
                       int replace_invalid, char *out, size_t cap, size_t *n_out) {
    if (n_out) *n_out = 0;
    if (!v || (!ids && n) || (!out && cap) || !n_out) return LAYA_ERR_INVALID_ARG;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= v->n) return LAYA_ERR_INVALID_ARG;
    uni_utf8_fix fx;
    uni_utf8_fix_init(&fx);
    size_t pos = 0;
    int strip = strip_leading_space && v->kind == KIND_SPM && v->add_space_prefix;
    for (size_t i = 0; i < n; i++) {
        size_t pl;
        const char *p = tok_piece(v, ids[i], &pl);
        if (strip && pl) {
            if (p[0] == ' ') p++, pl--;
            strip = 0;
        }
        if (replace_invalid) {
            uni_utf8_fix_feed(&fx, p, pl, out, cap, &pos);
        } else {
            if (pos < cap) memcpy(out + pos, p, LAYA_MIN(pl, cap - pos));
            pos += pl;
        }
    }
    if (replace_invalid) uni_utf8_fix_end(&fx, out, cap, &pos);
    *n_out = pos;
    return pos > cap ? LAYA_ERR_CAPACITY : LAYA_OK;
}
