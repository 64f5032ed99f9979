/* tok_internal.h — the tokenizer's data (the vocab, the per-call work buffers) and the functions its files
 * share: vocab.c loads a vocab, bpe.c holds the lookup tables and the merge, tokenizer.c splits text and
 * encodes/decodes. Internal to src/tokenizer; the interface is tokenizer.h. */
#ifndef LAYA_TOK_INTERNAL_H
#define LAYA_TOK_INTERNAL_H

#include <string.h>

#include "base/common.h"
#include "tokenizer/tokenizer.h"

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

static inline void tok_emit(emitter *e, laya_token id) {
    if (e->n < e->cap) e->out[e->n] = id;
    e->n++;
}

static inline const char *tok_key_of(const tok_vocab *v, int32_t id, size_t *len) {
    *len = v->key_off[id + 1] - v->key_off[id];
    return v->key + v->key_off[id];
}

/* bpe.c: the key -> id and pair -> merge tables */
int32_t tok_map_find(const tok_vocab *v, const char *s, size_t n);
/* Insert unless the key is already present (the lower id wins, as a dict built in id order would). */
void tok_map_insert(tok_vocab *v, int32_t id);
void tok_pair_insert(pair_map *m, int32_t a, int32_t b, uint32_t rank, int32_t id);
uint64_t tok_pow2_at_least(uint64_t n);

/* bpe.c: work buffers. Make room for `need` elements; old contents are not kept (every caller refills). */
int tok_grow(void **p, size_t *cap, size_t need, size_t elem);
#define GROW(w, field, need) tok_grow((void **)&(w)->field, &(w)->field##_cap, (need), sizeof *(w)->field)
/* Room for BPE on n symbols. */
int tok_grow_bpe(tok_work *w, size_t n);
/* Frees w's buffers, not w. */
void tok_work_release(tok_work *w);

/* bpe.c: one pre-tokenized word (byte-level) or piece (SentencePiece) merged and emitted */
laya_status tok_bpe_gpt2(const tok_vocab *v, tok_work *w, const char *p, size_t n, emitter *e);
void tok_bpe_spm(const tok_vocab *v, tok_work *w, const char *p, size_t n, emitter *e);

#endif
