/* vocab.c — a tokenizer's vocabulary built from GGUF metadata (tok_load): token texts and types, the
 * byte-level mapping, special tokens, merges and the pre-tokenizer choice; immutable once loaded. The
 * merge itself is bpe.c, the text splitting and encode/decode tokenizer.c. */
#include <stdio.h>
#include <string.h>

#include "base/unicode.h"
#include "tokenizer/tok_internal.h"

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
        const char *k = tok_key_of(v, i, &kn);
        if (is_mergeable(v->type[i]) && space_inside(k, kn)) return 0;
    }
    if (v->unk >= 0) {
        size_t kn;
        const char *k = tok_key_of(v, v->unk, &kn);
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
    uint64_t cap = tok_pow2_at_least(nm * 2 + 1), words = tok_pow2_at_least(nm / 8 + 1);
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
        int32_t a = tok_map_find(v, buf, ra), b = tok_map_find(v, buf + ra, rb), c = tok_map_find(v, buf, ra + rb);
        if (a < 0 || b < 0 || c < 0) continue;
        tok_pair_insert(m, a, b, r, c);
    }
    laya_free(buf);
    return LAYA_OK;
}

/* The pre-tokenizer split and normalizer of a byte-level vocab (tokenizer.ggml.pre, laya.tokenizer.normalizer);
 * a SentencePiece one prefixes a space instead. */
static laya_status load_pretokenizer(tok_vocab *v, const gguf_file *f, char *err, size_t errlen) {
    laya_status st;
    if (v->kind == KIND_GPT2) {
        gguf_str pre;
        st = gguf_get_str(f, "tokenizer.ggml.pre", &pre);
        if (st == LAYA_ERR_NOT_FOUND) {
            v->split = SPLIT_GPT2; /* llama.cpp's fallback for old files */
        } else if (st) {
            st = laya_err(err, errlen, st, "tokenizer: tokenizer.ggml.pre is not a string");
            return st;
        } else {
            for (size_t i = 0; i < sizeof pre_aliases / sizeof pre_aliases[0]; i++)
                if (str_is(pre, pre_aliases[i].name)) v->split = pre_aliases[i].split;
            if (v->split == SPLIT_NONE) {
                st = laya_err(err, errlen, LAYA_ERR_UNSUPPORTED,
                              "tokenizer: pre-tokenizer \"%.*s\" is not supported (llama3, qwen2, gpt2 families)",
                              (int)LAYA_MIN(pre.n, 40), pre.p);
                return st;
            }
        }
        gguf_str norm;
        st = gguf_get_str(f, "laya.tokenizer.normalizer", &norm);
        if (st == LAYA_ERR_NOT_FOUND) {
            v->nfc = v->split == SPLIT_QWEN2; /* Qwen2's tokenizer.json applies NFC; llama.cpp infers it */
        } else if (st) {
            st = laya_err(err, errlen, st, "tokenizer: laya.tokenizer.normalizer is not a string");
            return st;
        } else if (str_is(norm, "nfc")) {
            v->nfc = 1;
        } else if (!str_is(norm, "none") && norm.n) {
            st = laya_err(err, errlen, LAYA_ERR_UNSUPPORTED,
                          "tokenizer: normalizer \"%.*s\" is not supported (nfc, none)", (int)LAYA_MIN(norm.n, 40),
                          norm.p);
            return st;
        }
        v->ignore_merges = v->split == SPLIT_LLAMA3; /* Llama 3's tokenizer.json sets ignore_merges */
    } else {
        v->add_space_prefix = 1;
    }
    return LAYA_OK;
}

/* Token types and key texts (byte-level: the byte map undone); *total_out the texts' bytes, which bound
 * both keys and pieces. LAYA_ERR_NOMEM carries no message (tok_load writes it). */
static laya_status load_texts(tok_vocab *v, const gguf_kv *tk, const gguf_kv *tt, const int16_t *u2b,
                              uint64_t *total_out, char *err, size_t errlen) {
    const int32_t n = v->n;
    laya_status st;
    v->type = laya_malloc((size_t)n);
    v->key_off = laya_dense_alloc(((size_t)n + 1) * sizeof *v->key_off);
    if (!v->type || !v->key_off) return LAYA_ERR_NOMEM;
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
            return st;
        }
        total += s.n;
    }
    if (total > UINT32_MAX) {
        st = laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer: token texts total %llu bytes",
                      (unsigned long long)total);
        return st;
    }
    /* Keys are never longer than the vocab strings (unmapping only shrinks), so `total` bounds both. */
    v->key = laya_dense_alloc(total ? total : 1);
    if (!v->key) return LAYA_ERR_NOMEM;
    uint32_t off = 0;
    it = gguf_arr_strs(tk);
    for (int32_t i = 0; i < n; i++) {
        gguf_str s;
        gguf_str_next(&it, &s);
        v->key_off[i] = off;
        size_t m;
        if (v->kind == KIND_GPT2 && is_mergeable(v->type[i]) && unmap_bytes(u2b, s.p, s.n, v->key + off, &m)) {
            off += (uint32_t)m;
        } else {
            memcpy(v->key + off, s.p, s.n); /* control/user-defined text, or a string outside the byte map */
            off += (uint32_t)s.n;
        }
    }
    v->key_off[n] = off;

    *total_out = total;
    return LAYA_OK;
}

/* The bytes each token stands for in text (tok_piece): byte-level keys already are; SentencePiece pieces
 * are the keys with U+2581 as a space and <0xXX> as its byte. */
static laya_status build_pieces(tok_vocab *v, uint64_t total) {
    const int32_t n = v->n;
    if (v->kind == KIND_GPT2) {
        v->piece = v->key;
        v->piece_off = v->key_off;
    } else {
        /* pieces: U+2581 -> ' ' (3 bytes -> 1), <0xXX> -> the byte, control text as is: never longer */
        v->piece = laya_dense_alloc(total ? total : 1);
        v->piece_off = laya_dense_alloc(((size_t)n + 1) * sizeof *v->piece_off);
        if (!v->piece || !v->piece_off) return LAYA_ERR_NOMEM;
        uint32_t po = 0;
        for (int32_t i = 0; i < n; i++) {
            size_t kn;
            const char *k = tok_key_of(v, i, &kn);
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

    return LAYA_OK;
}

/* The key -> id map over the tokens BPE may produce, and the byte and character tokens found through it. */
static laya_status build_maps(tok_vocab *v) {
    const int32_t n = v->n;
    /* key -> id map over the tokens BPE may produce */
    uint64_t cap = tok_pow2_at_least((uint64_t)n * 2 + 1);
    v->map.slots = laya_dense_alloc(cap * sizeof *v->map.slots);
    if (!v->map.slots) return LAYA_ERR_NOMEM;
    memset(v->map.slots, 0xFF, cap * sizeof *v->map.slots);
    v->map.mask = cap - 1;
    for (int32_t i = 0; i < n; i++)
        if (is_mergeable(v->type[i])) tok_map_insert(v, i);

    for (int b = 0; b < 256; b++) {
        char s[8];
        int sl = 1;
        if (v->kind == KIND_GPT2) s[0] = (char)b; /* gpt2 keys are raw bytes */
        else sl = snprintf(s, sizeof s, "<0x%02X>", b);
        v->byte_tok[b] = tok_map_find(v, s, (size_t)sl);
    }
    if (v->kind == KIND_SPM) {
        for (int c = 0; c < 128; c++) {
            char ch = (char)c;
            v->char_tok[c] = tok_map_find(v, &ch, 1);
        }
        v->char_tok[128] = tok_map_find(v, "\xE2\x96\x81", 3);
        v->byte_fallback = 1;
        for (int b = 0; b < 256; b++)
            if (v->byte_tok[b] < 0) v->byte_fallback = 0;
    }

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

    if ((st = load_pretokenizer(v, f, err, errlen))) goto fail;
    snprintf(v->pre_name, sizeof v->pre_name, "%s", split_names[v->split]);
    if ((st = get_opt_bool(f, "laya.tokenizer.ignore_merges", &v->ignore_merges, err, errlen))) goto fail;
    if ((st = get_opt_bool(f, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix, err, errlen))) goto fail;

    uint16_t b2u[256];
    int16_t u2b[324];
    byte_map(b2u, u2b);
    uint64_t total = 0;
    if ((st = load_texts(v, tk, tt, u2b, &total, err, errlen))) goto fail_or_nomem;
    if ((st = build_pieces(v, total)) || (st = build_maps(v))) goto fail_or_nomem;

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

fail_or_nomem:
    if (st != LAYA_ERR_NOMEM) goto fail;
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

