/* tokjson.c — Hugging Face tokenizer.json (+ tokenizer_config.json) to GGUF tokenizer metadata, in the
 * conventions of tests/fixtures/gen/tokjson.py, so tok_load builds the same vocab as from a converted GGUF.
 * Everything read is untrusted: every type, id and count is checked before it sizes an allocation.
 * Not here: encoding (tokenizer.c), deciding whether a pre name is supported (tok_load does). */
#include "io/tokjson.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/common.h"
#include "base/json.h"

#define MAX_ID (1 << 24)                    /* tok_load's vocabulary limit: ids stay below it */
#define MAX_JSON_BYTES ((size_t)256 << 20)  /* Llama 3's tokenizer.json is 9 MB */
#define JSON_DEPTH 64                       /* real files nest 6 levels */
#define SPARSE_SLACK 1024                   /* unused ids allowed beyond one per real token */
#define MAX_PRE_LEAVES 8
#define QLEN 48                             /* bytes of a token quoted in a message */

/* llama.cpp's token types */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };
enum { KIND_GPT2, KIND_SPM };
/* where an id's text came from */
enum { FROM_NONE = 0, FROM_VOCAB = 1, FROM_ADDED = 2 };

/* Split regexes the engine implements, as they stand in tokenizer.json (after JSON unescaping), mapped to
 * llama.cpp's tokenizer.ggml.pre names. An exact compare: any other regex is refused, not guessed at. */
static const struct { const char *re, *pre; } known_splits[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "llama-bpe"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "qwen2"},
    {"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", "gpt-2"},
};

static const char SPM_SPACE[] = "\xE2\x96\x81"; /* U+2581, SentencePiece's visible space */

/* ---------------------------------------------------------------------------------------------------
 * A string -> id hash over texts that live in the JSON document (open addressing, id < 0: empty). */

typedef struct sm_slot {
    const char *s;
    size_t n;
    int32_t id;
} sm_slot;
typedef struct str_map {
    sm_slot *slot;
    size_t mask;
} str_map;

static uint64_t hash_str(const char *s, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull ^ n; /* FNV-1a, then a finalizer so the low bits mix */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001B3ull;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    return h ^ (h >> 33);
}

static int sm_init(str_map *m, size_t count) {
    size_t cap = 16;
    while (cap < 2 * count + 2) cap *= 2; /* count <= MAX_ID: no overflow */
    m->slot = laya_malloc(cap * sizeof *m->slot);
    if (!m->slot) return 0;
    for (size_t i = 0; i < cap; i++) m->slot[i].id = -1;
    m->mask = cap - 1;
    return 1;
}

/* The slot holding s, or the empty slot where it would go. The table is never more than half full. */
static sm_slot *sm_at(const str_map *m, const char *s, size_t n) {
    size_t i = (size_t)hash_str(s, n) & m->mask;
    while (m->slot[i].id >= 0 && (m->slot[i].n != n || memcmp(m->slot[i].s, s, n))) i = (i + 1) & m->mask;
    return &m->slot[i];
}

static int32_t sm_find(const str_map *m, const char *s, size_t n) { return m->slot ? sm_at(m, s, n)->id : -1; }

/* (left id, right id) -> merge index, to find repeated merges. */
typedef struct pair_slot {
    uint64_t key;
    size_t idx;
} pair_slot;
#define PAIR_EMPTY UINT64_MAX

/* ---------------------------------------------------------------------------------------------------
 * Conversion state */

typedef struct conv {
    char *err;
    size_t errlen;
    const char *file; /* the file messages name */
    const json_value *model, *cfg; /* cfg: NULL without a tokenizer_config.json */
    int kind, nfc, prepend, has_normalizer, byte_fallback, ignore_merges, fuse_unk;
    const char *pre;
    int32_t n;            /* ids, gaps included */
    gguf_str *tok;        /* [n] texts (into the document); gaps point into pad_pool */
    int32_t *type;        /* [n] */
    uint8_t *from;        /* [n] FROM_* bits */
    str_map vocab;        /* model.vocab: text -> id */
    str_map added;        /* added_tokens: content -> id */
    char *pad_pool;       /* "[PADn]" texts of the gaps */
    gguf_str *merges;     /* [n_merges] */
    size_t n_merges;
    char *merge_pool;     /* "a b" texts of merges given as pairs */
    int32_t bos, eos, unk, pad;
    int add_bos, add_eos;
} conv;

static laya_status fail(conv *c, laya_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "<file>: <message>" into c->err; returns st. */
static laya_status fail(conv *c, laya_status st, const char *fmt, ...) {
    if (c->err && c->errlen) {
        int k = snprintf(c->err, c->errlen, "%s: ", c->file);
        if (k >= 0 && (size_t)k < c->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return st;
}

/* A token's text for a message: at most QLEN bytes, cut on a character boundary, control bytes as '?'. */
typedef struct qbuf { char s[QLEN + 8]; } qbuf;
static const char *q(qbuf *b, const char *s, size_t n) {
    size_t k = 0, i = 0;
    while (i < n && k < QLEN) {
        unsigned char ch = (unsigned char)s[i];
        size_t len = ch < 0x80 ? 1 : ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : 2; /* the text is valid UTF-8 */
        if (len > n - i || k + len > QLEN) break;
        if (len == 1 && (ch < 0x20 || ch == 0x7F)) b->s[k++] = '?';
        else memcpy(b->s + k, s + i, len), k += len;
        i += len;
    }
    if (i < n) memcpy(b->s + k, "...", 3), k += 3;
    b->s[k] = 0;
    return b->s;
}
#define QV(b, v) q(b, (v)->s, (v)->len)

static int str_is(const json_value *v, const char *lit) {
    return v && v->type == JSON_STRING && v->len == strlen(lit) && !memcmp(v->s, lit, v->len);
}

static const json_value *get(const json_value *obj, const char *key) {
    return obj && obj->type == JSON_OBJECT ? json_get(obj, key) : NULL;
}

/* An optional bool member: absent or null gives dflt; any other non-bool is an error. where: what obj is
 * (NULL: the file's top level), for the message. */
static laya_status get_bool(conv *c, const json_value *obj, const char *key, int dflt, int *out, const char *where) {
    const json_value *v = get(obj, key);
    *out = dflt;
    if (!v || v->type == JSON_NULL) return LAYA_OK;
    if (v->type != JSON_BOOL)
        return fail(c, LAYA_ERR_FORMAT, "%s%s%s is %s, expected a boolean", where ? where : "", where ? ": " : "",
                    key, json_type_name((json_type)v->type));
    *out = v->b;
    return LAYA_OK;
}

/* The "type" member as a C string; NULL if absent, not a string, or holding a NUL. */
static const char *type_of(const json_value *v) {
    const json_value *t = get(v, "type");
    return t && t->type == JSON_STRING && strlen(t->s) == t->len ? t->s : NULL;
}

/* ---------------------------------------------------------------------------------------------------
 * Normalizer and pre-tokenizer: which of the engine's modes they describe. */

static laya_status walk_normalizer(conv *c, const json_value *v, int *n_replace) {
    if (!v || v->type == JSON_NULL) return LAYA_OK;
    const char *t = type_of(v);
    if (!t) return fail(c, LAYA_ERR_FORMAT, "normalizer is not an object with a \"type\"");
    qbuf b;
    if (!strcmp(t, "Sequence")) {
        const json_value *list = get(v, "normalizers");
        if (!list || list->type != JSON_ARRAY)
            return fail(c, LAYA_ERR_FORMAT, "normalizer Sequence has no \"normalizers\" array");
        for (const json_value *e = json_first(list); e; e = json_next(list, e)) {
            laya_status st = walk_normalizer(c, e, n_replace);
            if (st) return st;
        }
        return LAYA_OK;
    }
    c->has_normalizer = 1;
    if (!strcmp(t, "NFC")) {
        c->nfc++;
    } else if (!strcmp(t, "Prepend")) {
        const json_value *p = get(v, "prepend");
        if (!str_is(p, SPM_SPACE))
            return fail(c, LAYA_ERR_UNSUPPORTED, "normalizer Prepend \"%s\" is not supported (only \"%s\")",
                        p && p->type == JSON_STRING ? QV(&b, p) : "?", SPM_SPACE);
        c->prepend++;
    } else if (!strcmp(t, "Replace")) {
        const json_value *pat = get(get(v, "pattern"), "String");
        if (!str_is(pat, " ") || !str_is(get(v, "content"), SPM_SPACE))
            return fail(c, LAYA_ERR_UNSUPPORTED,
                        "normalizer Replace is supported only as Replace(\" \" -> \"%s\")", SPM_SPACE);
        (*n_replace)++;
    } else {
        return fail(c, LAYA_ERR_UNSUPPORTED,
                    "normalizer %s is not supported (NFC; Prepend and Replace as in Llama 2)",
                    q(&b, t, strlen(t)));
    }
    return LAYA_OK;
}

/* Flattens nested Sequences into leaves. */
static laya_status walk_pre(conv *c, const json_value *v, const json_value **leaf, int *n_leaf) {
    if (!v || v->type == JSON_NULL) return LAYA_OK;
    const char *t = type_of(v);
    if (!t) return fail(c, LAYA_ERR_FORMAT, "pre_tokenizer is not an object with a \"type\"");
    if (!strcmp(t, "Sequence")) {
        const json_value *list = get(v, "pretokenizers");
        if (!list || list->type != JSON_ARRAY)
            return fail(c, LAYA_ERR_FORMAT, "pre_tokenizer Sequence has no \"pretokenizers\" array");
        for (const json_value *e = json_first(list); e; e = json_next(list, e)) {
            laya_status st = walk_pre(c, e, leaf, n_leaf);
            if (st) return st;
        }
        return LAYA_OK;
    }
    if (*n_leaf == MAX_PRE_LEAVES)
        return fail(c, LAYA_ERR_UNSUPPORTED, "more than %d pre-tokenizers", MAX_PRE_LEAVES);
    leaf[(*n_leaf)++] = v;
    return LAYA_OK;
}

/* ByteLevel's options, with the tokenizers library's defaults (all true) when absent. */
static laya_status byte_level(conv *c, const json_value *v, int *use_regex) {
    int aps;
    laya_status st = get_bool(c, v, "add_prefix_space", 1, &aps, "pre_tokenizer ByteLevel");
    if (!st) st = get_bool(c, v, "use_regex", 1, use_regex, "pre_tokenizer ByteLevel");
    if (st) return st;
    if (aps)
        return fail(c, LAYA_ERR_UNSUPPORTED, "pre_tokenizer ByteLevel with add_prefix_space is not supported");
    return LAYA_OK;
}

static laya_status split_pre(conv *c, const json_value *v) {
    const json_value *pat = get(v, "pattern"), *re = get(pat, "Regex");
    qbuf b;
    if (!re) {
        const json_value *s = get(pat, "String");
        if (s && s->type == JSON_STRING)
            return fail(c, LAYA_ERR_UNSUPPORTED, "pre_tokenizer Split on the string \"%s\" is not supported",
                        QV(&b, s));
        return fail(c, LAYA_ERR_FORMAT, "pre_tokenizer Split has no pattern");
    }
    if (re->type != JSON_STRING) return fail(c, LAYA_ERR_FORMAT, "pre_tokenizer Split's Regex is not a string");
    int invert;
    laya_status st = get_bool(c, v, "invert", 0, &invert, "pre_tokenizer Split");
    if (st) return st;
    if (!str_is(get(v, "behavior"), "Isolated") || invert)
        return fail(c, LAYA_ERR_UNSUPPORTED, "pre_tokenizer Split is supported only with behavior "
                                             "Isolated, not inverted");
    for (size_t i = 0; i < sizeof known_splits / sizeof known_splits[0]; i++)
        if (str_is(re, known_splits[i].re)) {
            c->pre = known_splits[i].pre;
            return LAYA_OK;
        }
    return fail(c, LAYA_ERR_UNSUPPORTED,
                "pre_tokenizer Split regex \"%s\" is not one the engine implements (Llama 3, Qwen2, GPT-2)",
                QV(&b, re));
}

static laya_status classify(conv *c, const json_value *root) {
    int n_replace = 0, n_leaf = 0;
    const json_value *leaf[MAX_PRE_LEAVES];
    laya_status st = walk_normalizer(c, get(root, "normalizer"), &n_replace);
    if (!st) st = walk_pre(c, get(root, "pre_tokenizer"), leaf, &n_leaf);
    if (st) return st;
    for (int i = 0; i < n_leaf; i++) {
        const char *t = type_of(leaf[i]);
        if (!strcmp(t, "Metaspace"))
            return fail(c, LAYA_ERR_UNSUPPORTED,
                        "pre_tokenizer Metaspace is not supported: it skips the \"%s\" prefix where "
                        "text starts with a space (\"first\": after special tokens too), unlike the engine's "
                        "Llama 2 mode",
                        SPM_SPACE);
        if (strcmp(t, "ByteLevel") && strcmp(t, "Split") && strcmp(t, "Digits")) {
            qbuf b;
            return fail(c, LAYA_ERR_UNSUPPORTED,
                        "pre_tokenizer %s is not supported (ByteLevel, Split with a known regex)",
                        q(&b, t, strlen(t)));
        }
    }
    if (c->nfc > 1 || c->prepend > 1 || n_replace > 1)
        return fail(c, LAYA_ERR_UNSUPPORTED, "a normalizer repeated in the Sequence is not supported");

    if (n_leaf == 0) { /* SentencePiece-style: spaces become U+2581 in the normalizer */
        if (!n_replace)
            return fail(c, LAYA_ERR_UNSUPPORTED, "BPE with neither a ByteLevel pre_tokenizer nor a "
                                                 "Replace(\" \" -> \"%s\") normalizer is not supported", SPM_SPACE);
        if (c->nfc)
            return fail(c, LAYA_ERR_UNSUPPORTED, "NFC with a SentencePiece-style normalizer is not supported");
        if (!c->byte_fallback)
            return fail(c, LAYA_ERR_UNSUPPORTED,
                        "SentencePiece-style BPE without byte_fallback is not supported");
        if (c->ignore_merges)
            return fail(c, LAYA_ERR_UNSUPPORTED,
                        "ignore_merges with SentencePiece-style BPE is not supported");
        c->kind = KIND_SPM;
        c->pre = "default";
        return LAYA_OK;
    }

    c->kind = KIND_GPT2;
    if (c->prepend || n_replace)
        return fail(c, LAYA_ERR_UNSUPPORTED, "Prepend/Replace normalizers with a ByteLevel "
                                             "pre_tokenizer are not supported");
    if (c->byte_fallback)
        return fail(c, LAYA_ERR_UNSUPPORTED, "byte_fallback with a ByteLevel pre_tokenizer is not supported");
    const char *t0 = type_of(leaf[0]), *t1 = n_leaf > 1 ? type_of(leaf[1]) : "";
    int use_regex;
    if (n_leaf == 1 && !strcmp(t0, "ByteLevel")) {
        if ((st = byte_level(c, leaf[0], &use_regex))) return st;
        if (!use_regex)
            return fail(c, LAYA_ERR_UNSUPPORTED, "pre_tokenizer ByteLevel without a split (use_regex "
                                                 "false and no Split) is not supported");
        c->pre = "gpt-2";
        return LAYA_OK;
    }
    if (n_leaf == 2 && !strcmp(t0, "Split") && !strcmp(t1, "ByteLevel")) {
        if ((st = split_pre(c, leaf[0])) || (st = byte_level(c, leaf[1], &use_regex))) return st;
        if (use_regex)
            return fail(c, LAYA_ERR_UNSUPPORTED, "pre_tokenizer Split followed by ByteLevel with "
                                                 "use_regex (a second split) is not supported");
        return LAYA_OK;
    }
    if (n_leaf == 2 && !strcmp(t0, "Digits") && !strcmp(t1, "ByteLevel")) {
        int each;
        if ((st = get_bool(c, leaf[0], "individual_digits", 0, &each, "pre_tokenizer Digits")) ||
            (st = byte_level(c, leaf[1], &use_regex)))
            return st;
        if (!each || !use_regex)
            return fail(c, LAYA_ERR_UNSUPPORTED, "pre_tokenizer Digits is supported only as "
                                                 "Digits(individual_digits), ByteLevel(use_regex) (SmolLM)");
        c->pre = "smollm"; /* llama.cpp's name for this split (digits alone, then GPT-2's) */
        return LAYA_OK;
    }
    char seq[96] = "";
    for (int i = 0; i < n_leaf; i++) {
        size_t k = strlen(seq);
        snprintf(seq + k, sizeof seq - k, "%s%.20s", i ? ", " : "", type_of(leaf[i]));
    }
    return fail(c, LAYA_ERR_UNSUPPORTED, "pre_tokenizer sequence [%s] is not supported", seq);
}

/* ---------------------------------------------------------------------------------------------------
 * Model options, vocab and added tokens */

static laya_status model_options(conv *c, const json_value *root) {
    qbuf b;
    c->model = get(root, "model");
    if (!c->model || c->model->type != JSON_OBJECT)
        return fail(c, LAYA_ERR_FORMAT, "no \"model\" object");
    const json_value *t = get(c->model, "type");
    if (t && t->type != JSON_STRING) return fail(c, LAYA_ERR_FORMAT, "model.type is not a string");
    if (t && !str_is(t, "BPE"))
        return fail(c, LAYA_ERR_UNSUPPORTED, "model type \"%s\" is not supported (only BPE)", QV(&b, t));
    if (!t && !get(c->model, "merges")) /* files without model.type are told apart by their fields */
        return fail(c, LAYA_ERR_UNSUPPORTED, "model has no type and no merges (only BPE is supported)");
    const json_value *d = get(c->model, "dropout");
    if (d && d->type != JSON_NULL && (d->type != JSON_NUMBER || d->num != 0.0))
        return fail(c, LAYA_ERR_UNSUPPORTED, "BPE dropout is not supported");
    const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const json_value *a = get(c->model, affix[i]);
        if (a && a->type != JSON_NULL && (a->type != JSON_STRING || a->len))
            return fail(c, LAYA_ERR_UNSUPPORTED, "model.%s is not supported", affix[i]);
    }
    laya_status st;
    if ((st = get_bool(c, c->model, "byte_fallback", 0, &c->byte_fallback, "model")) ||
        (st = get_bool(c, c->model, "ignore_merges", 0, &c->ignore_merges, "model")) ||
        (st = get_bool(c, c->model, "fuse_unk", 0, &c->fuse_unk, "model")))
        return st;
    return LAYA_OK;
}

static laya_status get_id(conv *c, const json_value *v, const char *where, const json_value *name, int32_t *id) {
    qbuf b;
    if (!v || v->type != JSON_NUMBER || !v->is_int)
        return fail(c, LAYA_ERR_FORMAT, "%s \"%s\" has %s id", where, QV(&b, name),
                    v ? "a non-integer" : "no");
    if (v->i < 0 || v->i >= MAX_ID)
        return fail(c, LAYA_ERR_FORMAT, "%s \"%s\" has id %lld, outside 0..%d", where, QV(&b, name),
                    (long long)v->i, MAX_ID - 1);
    *id = (int32_t)v->i;
    return LAYA_OK;
}

static laya_status load_vocab(conv *c, const json_value *root) {
    laya_status st;
    qbuf b1, b2;
    const json_value *vocab = get(c->model, "vocab"), *added = get(root, "added_tokens");
    if (!vocab || vocab->type != JSON_OBJECT) return fail(c, LAYA_ERR_FORMAT, "model.vocab is not an object");
    if (added && added->type == JSON_NULL) added = NULL;
    if (added && added->type != JSON_ARRAY) return fail(c, LAYA_ERR_FORMAT, "added_tokens is not an array");
    size_t n_added = added ? added->n : 0;
    if (vocab->n == 0) return fail(c, LAYA_ERR_FORMAT, "model.vocab is empty");
    if (vocab->n >= MAX_ID || n_added >= MAX_ID)
        return fail(c, LAYA_ERR_FORMAT, "%zu tokens, more than %d", (size_t)vocab->n + n_added, MAX_ID);

    /* First pass: types and ranges, and the id space, before anything is sized from it. */
    int32_t max_id = -1, id;
    for (const json_value *e = json_first(vocab); e; e = json_next(vocab, e)) {
        json_value name = {.type = JSON_STRING, .s = e->key, .len = e->key_len};
        if ((st = get_id(c, e, "model.vocab token", &name, &id))) return st;
        max_id = LAYA_MAX(max_id, id);
    }
    for (const json_value *e = json_first(added); e; e = json_next(added, e)) {
        const json_value *content = get(e, "content");
        if (!content || content->type != JSON_STRING || content->len == 0)
            return fail(c, LAYA_ERR_FORMAT, "an added token has no content");
        if ((st = get_id(c, get(e, "id"), "added token", content, &id))) return st;
        max_id = LAYA_MAX(max_id, id);
    }
    size_t entries = vocab->n + n_added;
    if ((size_t)max_id + 1 > 2 * entries + SPARSE_SLACK)
        return fail(c, LAYA_ERR_FORMAT, "ids reach %d for %zu tokens: the id space is too sparse",
                    (int)max_id, entries);
    c->n = max_id + 1;
    size_t n = (size_t)c->n;
    c->tok = laya_calloc(n, sizeof *c->tok);
    c->type = laya_malloc(n * sizeof *c->type);
    c->from = laya_calloc(n, 1);
    if (!c->tok || !c->type || !c->from || !sm_init(&c->vocab, vocab->n) || !sm_init(&c->added, n_added))
        return fail(c, LAYA_ERR_NOMEM, "out of memory for %zu tokens", n);

    for (const json_value *e = json_first(vocab); e; e = json_next(vocab, e)) {
        id = (int32_t)e->i;
        if (c->from[id])
            return fail(c, LAYA_ERR_FORMAT, "model.vocab gives id %d to both \"%s\" and \"%s\"", (int)id,
                        q(&b1, c->tok[id].p, c->tok[id].n), q(&b2, e->key, e->key_len));
        sm_slot *s = sm_at(&c->vocab, e->key, e->key_len);
        if (s->id >= 0)
            return fail(c, LAYA_ERR_FORMAT, "model.vocab has \"%s\" twice", q(&b1, e->key, e->key_len));
        *s = (sm_slot){e->key, e->key_len, id};
        c->tok[id] = (gguf_str){e->key, e->key_len};
        c->from[id] = FROM_VOCAB;
    }
    for (const json_value *e = json_first(added); e; e = json_next(added, e)) {
        const json_value *content = get(e, "content");
        id = (int32_t)get(e, "id")->i;
        if (c->from[id] & FROM_ADDED)
            return fail(c, LAYA_ERR_FORMAT, "added_tokens gives id %d twice", (int)id);
        if (c->from[id] && (c->tok[id].n != content->len || memcmp(c->tok[id].p, content->s, content->len)))
            return fail(c, LAYA_ERR_FORMAT, "added token \"%s\" has id %d, which model.vocab gives to \"%s\"",
                        QV(&b1, content), (int)id, q(&b2, c->tok[id].p, c->tok[id].n));
        sm_slot *s = sm_at(&c->added, content->s, content->len);
        if (s->id >= 0)
            return fail(c, LAYA_ERR_FORMAT, "added_tokens has \"%s\" twice", QV(&b1, content));
        *s = (sm_slot){content->s, content->len, id};
        c->tok[id] = (gguf_str){content->s, content->len};
        c->from[id] |= FROM_ADDED;
    }

    /* Gaps get placeholders, as llama.cpp names them; type UNUSED keeps them out of matching and merging. */
    size_t gaps = 0;
    for (size_t i = 0; i < n; i++) gaps += !c->from[i];
    if (gaps) {
        c->pad_pool = laya_malloc(gaps * 16);
        if (!c->pad_pool) return fail(c, LAYA_ERR_NOMEM, "out of memory");
        char *p = c->pad_pool;
        for (size_t i = 0; i < n; i++)
            if (!c->from[i]) {
                int k = snprintf(p, 16, "[PAD%zu]", i);
                c->tok[i] = (gguf_str){p, (uint64_t)k};
                p += k;
            }
    }
    return LAYA_OK;
}

/* An id for a token text: added tokens first, as the tokenizers library matches them first. */
static int32_t find_token(const conv *c, const char *s, size_t n) {
    int32_t id = sm_find(&c->added, s, n);
    return id >= 0 ? id : sm_find(&c->vocab, s, n);
}

static int is_byte_token(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return 0;
    for (int i = 3; i < 5; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F'))) return 0;
    return 1;
}

static laya_status set_types(conv *c, const json_value *root) {
    laya_status st;
    qbuf b;
    for (int32_t i = 0; i < c->n; i++) {
        c->type[i] = !c->from[i] ? TT_UNUSED : TT_NORMAL;
        if (c->kind == KIND_SPM && c->from[i] && is_byte_token(c->tok[i].p, c->tok[i].n)) c->type[i] = TT_BYTE;
    }
    const json_value *unk = get(c->model, "unk_token");
    c->unk = -1;
    if (unk && unk->type != JSON_NULL) {
        if (unk->type != JSON_STRING) return fail(c, LAYA_ERR_FORMAT, "model.unk_token is not a string");
        c->unk = find_token(c, unk->s, unk->len);
        if (c->unk < 0)
            return fail(c, LAYA_ERR_FORMAT, "model.unk_token \"%s\" is not a token", QV(&b, unk));
        c->type[c->unk] = TT_UNKNOWN;
    }
    const json_value *added = get(root, "added_tokens");
    for (const json_value *e = json_first(added); e; e = json_next(added, e)) {
        const json_value *content = get(e, "content");
        int special, normalized, flag;
        const char *where = "added token";
        if ((st = get_bool(c, e, "special", 0, &special, where))) return st;
        if ((st = get_bool(c, e, "normalized", !special, &normalized, where))) return st;
        const char *flags[] = {"lstrip", "rstrip", "single_word"};
        for (int k = 0; k < 3; k++) {
            if ((st = get_bool(c, e, flags[k], 0, &flag, where))) return st;
            if (flag)
                return fail(c, LAYA_ERR_UNSUPPORTED, "added token \"%s\" has %s, which is not supported",
                            QV(&b, content), flags[k]);
        }
        /* The engine matches added tokens in the raw text; the tokenizers library matches normalized ones in
         * normalized text, which differs once there is a normalizer. */
        if (normalized && c->has_normalizer)
            return fail(c, LAYA_ERR_UNSUPPORTED,
                        "added token \"%s\" is normalized, which is supported only without a normalizer",
                        QV(&b, content));
        int32_t id = (int32_t)get(e, "id")->i;
        if (id == c->unk) continue;
        c->type[id] = special ? TT_CONTROL : TT_USER;
    }
    return LAYA_OK;
}

/* The engine falls back to bytes only when all 256 byte tokens exist, the tokenizers library per
 * character; the engine never fuses unknown bytes in byte-level mode. Refuse where those differ. */
static laya_status check_bytes(conv *c) {
    char s[8];
    int missing = 0, extra = 0;
    for (int byte = 0; byte < 256; byte++) {
        size_t len;
        if (c->kind == KIND_SPM) {
            len = (size_t)snprintf(s, sizeof s, "<0x%02X>", byte);
        } else { /* GPT-2's byte-to-character map: printable bytes stand for themselves, the rest from U+0100 */
            int cp = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174 ? byte : -1;
            if (cp < 0) cp = 256 + extra++;
            if (cp < 0x80) s[0] = (char)cp, len = 1;
            else s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3F)), len = 2;
        }
        missing += sm_find(&c->vocab, s, len) < 0;
    }
    if (c->kind == KIND_SPM && missing)
        return fail(c, LAYA_ERR_UNSUPPORTED, "byte_fallback with %d of the 256 <0xXX> tokens missing "
                                             "is not supported", missing);
    if (c->kind == KIND_GPT2 && missing && c->unk >= 0 && c->fuse_unk)
        return fail(c, LAYA_ERR_UNSUPPORTED, "fuse_unk with %d byte characters missing from the vocab "
                                             "is not supported", missing);
    return LAYA_OK;
}

/* ---------------------------------------------------------------------------------------------------
 * Merges: every part and result must be in model.vocab (the tokenizers library refuses the file
 * otherwise), and no pair may repeat (there the last rank would win; refusing is simpler than matching). */

static laya_status load_merges(conv *c) {
    qbuf b1, b2;
    const json_value *m = get(c->model, "merges");
    if (!m || m->type == JSON_NULL)
        return fail(c, LAYA_ERR_UNSUPPORTED, "BPE without merges is not supported");
    if (m->type != JSON_ARRAY) return fail(c, LAYA_ERR_FORMAT, "model.merges is not an array");
    if (m->n == 0) return fail(c, LAYA_ERR_UNSUPPORTED, "BPE with no merges is not supported");
    c->n_merges = m->n;
    size_t pool = 0, longest = 0, i = 0;
    for (const json_value *e = json_first(m); e; e = json_next(m, e), i++) {
        if (e->type == JSON_STRING) {
            longest = LAYA_MAX(longest, e->len);
            continue;
        }
        const json_value *a = json_first(e), *bb = a ? json_next(e, a) : NULL;
        if (e->type != JSON_ARRAY || e->n != 2 || a->type != JSON_STRING || bb->type != JSON_STRING)
            return fail(c, LAYA_ERR_FORMAT, "model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", i);
        /* tok_load splits "a b" at the first space after the first byte */
        if (a->len > 1 && memchr(a->s + 1, ' ', a->len - 1))
            return fail(c, LAYA_ERR_UNSUPPORTED, "model.merges[%zu]: a left part with a space (\"%s\") "
                                                 "is not supported", i, QV(&b1, a));
        pool += a->len + 1 + bb->len;
        longest = LAYA_MAX(longest, a->len + 1 + bb->len);
    }
    size_t cap = 16;
    while (cap < 2 * c->n_merges + 2) cap *= 2;
    c->merges = laya_malloc(c->n_merges * sizeof *c->merges);
    c->merge_pool = pool ? laya_malloc(pool) : NULL;
    pair_slot *pairs = laya_malloc(cap * sizeof *pairs);
    char *cat = laya_malloc(longest + 1);
    laya_status st = LAYA_OK;
    if (!c->merges || (pool && !c->merge_pool) || !pairs || !cat) {
        st = fail(c, LAYA_ERR_NOMEM, "out of memory for %zu merges", c->n_merges);
        goto done;
    }
    for (size_t k = 0; k < cap; k++) pairs[k].key = PAIR_EMPTY;
    char *po = c->merge_pool;
    i = 0;
    for (const json_value *e = json_first(m); e; e = json_next(m, e), i++) {
        const char *sa, *sb;
        size_t na, nb;
        if (e->type == JSON_STRING) {
            const char *sp = memchr(e->s, ' ', e->len);
            if (!sp || memchr(sp + 1, ' ', e->len - (size_t)(sp - e->s) - 1) || sp == e->s || sp == e->s + e->len - 1) {
                st = fail(c, LAYA_ERR_FORMAT, "model.merges[%zu] \"%s\" is not two tokens and one space",
                          i, QV(&b1, e));
                goto done;
            }
            sa = e->s, na = (size_t)(sp - e->s), sb = sp + 1, nb = e->len - na - 1;
            c->merges[i] = (gguf_str){e->s, e->len};
        } else {
            const json_value *a = json_first(e), *bb = json_next(e, a);
            sa = a->s, na = a->len, sb = bb->s, nb = bb->len;
            memcpy(po, sa, na);
            po[na] = ' ';
            memcpy(po + na + 1, sb, nb);
            c->merges[i] = (gguf_str){po, na + 1 + nb};
            po += na + 1 + nb;
        }
        memcpy(cat, sa, na);
        memcpy(cat + na, sb, nb);
        int32_t ia = sm_find(&c->vocab, sa, na), ib = sm_find(&c->vocab, sb, nb), ic = sm_find(&c->vocab, cat, na + nb);
        if (ia < 0 || ib < 0 || ic < 0) {
            const char *what = ia < 0 ? sa : ib < 0 ? sb : cat;
            size_t wn = ia < 0 ? na : ib < 0 ? nb : na + nb;
            st = fail(c, LAYA_ERR_FORMAT, "model.merges[%zu] %s \"%s\", which is not in model.vocab", i,
                      ia < 0 || ib < 0 ? "names" : "makes", q(&b1, what, wn));
            goto done;
        }
        uint64_t key = (uint64_t)(uint32_t)ia << 32 | (uint32_t)ib;
        size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
        while (pairs[h].key != PAIR_EMPTY && pairs[h].key != key) h = (h + 1) & (cap - 1);
        if (pairs[h].key == key) {
            st = fail(c, LAYA_ERR_FORMAT, "model.merges[%zu] repeats merges[%zu] (\"%s\" + \"%s\")", i,
                      pairs[h].idx, q(&b1, sa, na), q(&b2, sb, nb));
            goto done;
        }
        pairs[h] = (pair_slot){key, i};
    }
done:
    laya_free(pairs);
    laya_free(cat);
    return st;
}

/* ---------------------------------------------------------------------------------------------------
 * tokenizer_config.json: special token ids and the BOS/EOS flags */

/* *id = the token named by cfg[key] (a string or {"content": ...}); an explicit null means none; absent
 * (or no config) tries the fallback texts among the added tokens. required: a named text that is not a
 * token is an error. */
static laya_status cfg_token(conv *c, const char *key, const char *const *fallback, int required, int32_t *id) {
    qbuf b;
    *id = -1;
    const json_value *v = get(c->cfg, key);
    if (!v) { /* only added tokens: Qwen's vocab has "<s>" as ordinary text */
        for (; fallback && *fallback && *id < 0; fallback++) *id = sm_find(&c->added, *fallback, strlen(*fallback));
        return LAYA_OK;
    }
    if (v->type == JSON_NULL) return LAYA_OK;
    if (v->type == JSON_OBJECT) v = get(v, "content");
    if (!v || v->type != JSON_STRING)
        return fail(c, LAYA_ERR_FORMAT, "%s is neither a string nor an object with a content "
                                        "string", key);
    *id = find_token(c, v->s, v->len);
    if (*id < 0 && required)
        return fail(c, LAYA_ERR_FORMAT, "%s \"%s\" is not a token", key, QV(&b, v));
    return LAYA_OK;
}

/* Whether a TemplateProcessing post-processor puts the BOS first: -1 if there is no template. */
static int template_adds_bos(const conv *c, const json_value *pp) {
    const char *t = type_of(pp);
    if (!t) return -1;
    if (!strcmp(t, "Sequence")) {
        const json_value *list = get(pp, "processors");
        for (const json_value *e = json_first(list); e; e = json_next(list, e)) {
            int r = template_adds_bos(c, e);
            if (r >= 0) return r;
        }
        return -1;
    }
    if (strcmp(t, "TemplateProcessing")) return -1;
    const json_value *single = get(pp, "single"), *first = json_first(single);
    if (!single || single->type != JSON_ARRAY) return -1;
    const json_value *sp = get(get(first, "SpecialToken"), "id");
    if (!sp || sp->type != JSON_STRING || c->bos < 0) return 0;
    return c->tok[c->bos].n == sp->len && !memcmp(c->tok[c->bos].p, sp->s, sp->len);
}

static laya_status config(conv *c, const json_value *root) {
    static const char *const bos_names[] = {"<s>", "<|begin_of_text|>", NULL};
    static const char *const eos_names[] = {"</s>", "<|end_of_text|>", "<|endoftext|>", NULL};
    laya_status st;
    int32_t unk;
    c->file = "tokenizer_config.json";
    if ((st = cfg_token(c, "bos_token", bos_names, 1, &c->bos)) ||
        (st = cfg_token(c, "eos_token", eos_names, 1, &c->eos)) || (st = cfg_token(c, "unk_token", NULL, 1, &unk)) ||
        (st = cfg_token(c, "pad_token", NULL, 0, &c->pad)))
        return st;
    if (unk >= 0) c->unk = unk;
    if ((st = get_bool(c, c->cfg, "add_bos_token", -1, &c->add_bos, NULL))) return st;
    if ((st = get_bool(c, c->cfg, "add_eos_token", 0, &c->add_eos, NULL))) return st;
    if (c->add_bos < 0) {
        c->add_bos = template_adds_bos(c, get(root, "post_processor"));
        if (c->add_bos < 0) c->add_bos = c->bos >= 0; /* e.g. Llama 3: the BOS comes from the chat template */
    }
    if (c->bos < 0) c->add_bos = 0;
    return LAYA_OK;
}

/* ---------------------------------------------------------------------------------------------------
 * Output */

static laya_status emit(conv *c, gguf_writer *w) {
    laya_status st = LAYA_OK;
    float *scores = NULL;
#define SET(call) \
    if (!st) st = (call)
    SET(gguf_writer_set_str(w, "tokenizer.ggml.model", c->kind == KIND_SPM ? "llama" : "gpt2"));
    SET(gguf_writer_set_str(w, "tokenizer.ggml.pre", c->pre));
    SET(gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", c->tok, (uint64_t)c->n));
    SET(gguf_writer_set_arr(w, "tokenizer.ggml.token_type", GGUF_I32, c->type, (uint64_t)c->n));
    if (c->kind == KIND_SPM) {
        /* SentencePiece scores are not in tokenizer.json; -id orders pieces as the merges do (tok_load merges
         * by the merges list when there is one anyway). */
        scores = laya_malloc((size_t)c->n * sizeof *scores);
        if (!scores) st = LAYA_ERR_NOMEM;
        for (int32_t i = 0; scores && i < c->n; i++) scores[i] = c->type[i] == TT_NORMAL ? -(float)i : 0.0f;
        SET(gguf_writer_set_arr(w, "tokenizer.ggml.scores", GGUF_F32, scores, (uint64_t)c->n));
    }
    SET(gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", c->merges, c->n_merges));
    if (c->bos >= 0) SET(gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)c->bos));
    if (c->eos >= 0) SET(gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)c->eos));
    if (c->unk >= 0) SET(gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)c->unk));
    if (c->pad >= 0) SET(gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)c->pad));
    SET(gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", c->add_bos));
    SET(gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", c->add_eos));
    if (c->kind == KIND_SPM) {
        SET(gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", c->prepend));
    } else {
        /* Stated outright: without these keys tok_load infers them from the pre name, as llama.cpp does. */
        SET(gguf_writer_set_str(w, "laya.tokenizer.normalizer", c->nfc ? "nfc" : "none"));
        SET(gguf_writer_set_bool(w, "laya.tokenizer.ignore_merges", c->ignore_merges));
    }
#undef SET
    laya_free(scores);
    c->file = "tokjson";
    if (st) return fail(c, st, "%s while writing the metadata",
                        st == LAYA_ERR_NOMEM ? "out of memory" : laya_status_str(st));
    return LAYA_OK;
}

static void conv_free(conv *c) {
    laya_free(c->tok);
    laya_free(c->type);
    laya_free(c->from);
    laya_free(c->vocab.slot);
    laya_free(c->added.slot);
    laya_free(c->pad_pool);
    laya_free(c->merges);
    laya_free(c->merge_pool);
}

laya_status tokjson_to_gguf_mem(const char *tok_json, size_t tok_len, const char *cfg_json, size_t cfg_len,
                                gguf_writer *w, char *err, size_t errlen) {
    if (!tok_json || !w || (!cfg_json && cfg_len))
        return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "tokjson_to_gguf_mem: NULL argument");
    json_limits lim = {MAX_JSON_BYTES, JSON_DEPTH};
    json_doc *td = NULL, *cd = NULL;
    char msg[LAYA_ERR_MSG_MAX];
    laya_status st = json_parse(tok_json, tok_len, &lim, &td, msg, sizeof msg);
    if (st) return laya_err(err, errlen, st, "tokenizer.json: %s", msg);
    if (cfg_json && (st = json_parse(cfg_json, cfg_len, &lim, &cd, msg, sizeof msg))) {
        json_free(td);
        return laya_err(err, errlen, st, "tokenizer_config.json: %s", msg);
    }
    conv c = {.err = err, .errlen = errlen, .file = "tokenizer.json", .bos = -1, .eos = -1, .unk = -1, .pad = -1};
    const json_value *root = json_root(td);
    c.cfg = json_root(cd);
    if (root->type != JSON_OBJECT) st = fail(&c, LAYA_ERR_FORMAT, "not a JSON object");
    else if (c.cfg && c.cfg->type != JSON_OBJECT)
        st = laya_err(err, errlen, LAYA_ERR_FORMAT, "tokenizer_config.json: not a JSON object");
    if (!st) st = model_options(&c, root);
    if (!st) st = classify(&c, root);
    if (!st) st = load_vocab(&c, root);
    if (!st) st = set_types(&c, root);
    if (!st) st = check_bytes(&c);
    if (!st) st = load_merges(&c);
    if (!st) st = config(&c, root);
    if (!st) st = emit(&c, w);
    conv_free(&c);
    json_free(cd);
    json_free(td);
    return st;
}

/* The whole of path into a laya_malloc buffer. optional: a missing file gives *out = NULL and LAYA_OK. */
static laya_status read_text(const char *path, int optional, char **out, size_t *n, char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        if (optional && errno == ENOENT) return LAYA_OK;
        return laya_err(err, errlen, LAYA_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    }
    struct stat sb;
    laya_status st = LAYA_OK;
    if (fstat(fileno(fp), &sb) || !S_ISREG(sb.st_mode)) {
        st = laya_err(err, errlen, LAYA_ERR_IO, "'%s' is not a regular file", path);
    } else if ((uint64_t)sb.st_size > MAX_JSON_BYTES) {
        st = laya_err(err, errlen, LAYA_ERR_CAPACITY, "'%s' is %lld bytes, more than the %zu accepted", path,
                      (long long)sb.st_size, MAX_JSON_BYTES);
    } else {
        size_t len = (size_t)sb.st_size;
        char *b = laya_malloc(len + 1);
        if (!b) {
            st = laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory reading '%s'", path);
        } else if (fread(b, 1, len, fp) != len || ferror(fp)) {
            laya_free(b);
            st = laya_err(err, errlen, LAYA_ERR_IO, "cannot read '%s'", path);
        } else {
            *out = b;
            *n = len;
        }
    }
    fclose(fp);
    return st;
}

laya_status tokjson_to_gguf(const char *dir, gguf_writer *w, char *err, size_t errlen) {
    if (!dir || !w) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "tokjson_to_gguf: NULL argument");
    size_t dn = strlen(dir);
    char *path = laya_malloc(dn + 32);
    if (!path) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    char *tj = NULL, *cj = NULL;
    size_t tn = 0, cn = 0;
    snprintf(path, dn + 32, "%s/tokenizer.json", dir);
    laya_status st = read_text(path, 0, &tj, &tn, err, errlen);
    snprintf(path, dn + 32, "%s/tokenizer_config.json", dir);
    if (!st) st = read_text(path, 1, &cj, &cn, err, errlen);
    if (!st) st = tokjson_to_gguf_mem(tj, tn, cj, cn, w, err, errlen);
    laya_free(tj);
    laya_free(cj);
    laya_free(path);
    return st;
}

laya_status tok_load_json(const char *dir, tok_vocab **out, char *err, size_t errlen) {
    if (out) *out = NULL;
    if (!dir || !out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "tok_load_json: NULL argument");
    gguf_writer *w = gguf_writer_new();
    if (!w) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    void *buf = NULL;
    size_t n = 0;
    gguf_file *f = NULL;
    laya_status st = tokjson_to_gguf(dir, w, err, errlen);
    if (!st) st = gguf_writer_to_buffer(w, &buf, &n, err, errlen);
    gguf_writer_free(w); /* before tok_load: only the serialized copy is needed from here */
    if (!st) st = gguf_open_buffer(buf, n, &f, err, errlen);
    if (!st) st = tok_load(f, out, err, errlen);
    gguf_close(f);
    laya_free(buf);
    return st;
}
