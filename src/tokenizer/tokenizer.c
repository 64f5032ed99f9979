/* tokenizer.c — BPE tokenizers built from GGUF metadata, aiming at token-for-token parity with Hugging
 * Face `tokenizers`: byte-level BPE ("gpt2") with hand-coded Llama 3 / Qwen2 / GPT-2 split regexes, and
 * SentencePiece-style BPE ("llama") with byte fallback. This file: the pre-tokenizer split rules and
 * tok_encode / tok_decode; the vocab is vocab.c, the merge bpe.c. Not here: training, tokenizer.json,
 * WordPiece/Unigram models. */
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <string.h>

#include "base/common.h"
#include "base/unicode.h"
#include "tokenizer/tok_internal.h"

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
    if (tok_grow_bpe(w, n)) return LAYA_ERR_NOMEM; /* room for any word of the segment */
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
        laya_status st = tok_bpe_gpt2(v, w, s + w->offs[i], w->offs[j] - w->offs[i], e);
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
    if (tok_grow_bpe(w, m)) return LAYA_ERR_NOMEM;
    size_t start = 0; /* split before each U+2581 that follows another character (see spm_can_split) */
    for (const char *q = o + 1; v->spm_split && (q = memchr(q, 0xE2, (size_t)(o + m - q))) != NULL; q++) {
        size_t i = (size_t)(q - o);
        if (i + 3 > m || memcmp(q, "\xE2\x96\x81", 3) != 0 || (i >= 3 && memcmp(q - 3, "\xE2\x96\x81", 3) == 0))
            continue;
        tok_bpe_spm(v, w, o + start, i - start, e);
        start = i;
    }
    tok_bpe_spm(v, w, o + start, m - start, e);
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
        tok_emit(&e, id);
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
    tok_work_release(&w);
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

