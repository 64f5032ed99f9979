/* test_tokjson.c — Hugging Face tokenizer.json loading (tokjson.c). For the Qwen3, Llama 3 and Llama 2
 * tokenizers (committed xz-compressed under tests/fixtures/tok/json): every string of strings.hex encodes
 * to the Hugging Face reference ids and to the ids of the fixture GGUF's tokenizer, and the metadata equals
 * what tests/fixtures/gen/tokjson.py wrote into that GGUF. Also edited variants (merges as pairs, normalizer
 * order, no Prepend, no tokenizer_config.json, Metaspace, SmolLM and GPT-2 splits), the malformed corpus
 * tests/fixtures/tokjson_bad (expected status and message), the directory API, out-of-memory injection.
 * Needs `make fixtures` (LAYA_FIXTURES may point elsewhere) and xz; runs from the repository root. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc_hooks.h"
#include "check.h"
#include "base/common.h"
#include "io/gguf.h"
#include "base/json.h"
#include "tokenizer/tokenizer.h"
#include "io/tokjson.h"

static char g_tmp[64]; /* scratch directory: the decompressed tokenizers and variants */

typedef struct blob { char *p; size_t n; } blob;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static blob read_all(const char *path) {
    blob b = {NULL, 0};
    FILE *fp = fopen(path, "rb");
    if (!fp) return b;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    b.p = malloc((size_t)len + 1);
    if (b.p && fread(b.p, 1, (size_t)len, fp) == (size_t)len) b.n = (size_t)len, b.p[len] = 0;
    else free(b.p), b.p = NULL;
    fclose(fp);
    return b;
}

/* `xz -dc path` into memory. */
static blob xz_read(const char *path) {
    blob b = {NULL, 0};
    char cmd[600];
    snprintf(cmd, sizeof cmd, "xz -dc -- '%s'", path);
    FILE *fp = popen(cmd, "r");
    if (!fp) return b;
    size_t cap = 1 << 20;
    b.p = malloc(cap + 1);
    size_t k;
    while (b.p && (k = fread(b.p + b.n, 1, cap - b.n, fp)) > 0) {
        b.n += k;
        if (b.n == cap) b.p = realloc(b.p, (cap *= 2) + 1);
    }
    if (pclose(fp) != 0 || !b.p) {
        free(b.p);
        return (blob){NULL, 0};
    }
    b.p[b.n] = 0;
    return b;
}

static int write_file(const char *path, const char *p, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return 0;
    int ok = fwrite(p, 1, n, fp) == n;
    return fclose(fp) == 0 && ok;
}

/* A directory under g_tmp holding tokenizer.json (+ tokenizer_config.json when cfg.p). */
static const char *make_dir(const char *name, blob tok, blob cfg) {
    static char dir[128];
    char path[192];
    snprintf(dir, sizeof dir, "%s/%s", g_tmp, name);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    CHECK(write_file(path, tok.p, tok.n), "write %s", path);
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    unlink(path);
    if (cfg.p) CHECK(write_file(path, cfg.p, cfg.n), "write %s", path);
    return dir;
}

static void remove_dir(const char *dir) {
    char path[512];
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* ---------------------------------------------------------------------------------------------------
 * The parity corpus and reference ids (one hex line / one id line per string) */

typedef struct corpus { blob *s; size_t n; } corpus;
typedef struct refs { int32_t *flat; size_t *off, n; } refs; /* string i: flat[off[i] .. off[i + 1]) */

static int hexv(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static int load_corpus(const char *path, corpus *c) {
    blob t = read_all(path);
    if (!t.p) return 0;
    size_t lines = 0;
    for (size_t i = 0; i < t.n; i++) lines += t.p[i] == '\n';
    c->s = calloc(lines + 1, sizeof *c->s);
    c->n = 0;
    for (char *p = t.p, *end = t.p + t.n; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        size_t len = (size_t)(nl - p) / 2;
        blob *s = &c->s[c->n++];
        s->p = malloc(len + 1);
        for (size_t j = 0; j < len; j++) s->p[j] = (char)(hexv(p[2 * j]) * 16 + hexv(p[2 * j + 1]));
        s->n = len;
        p = nl + 1;
    }
    free(t.p);
    return 1;
}

static int load_refs(const char *path, refs *r) {
    blob t = read_all(path);
    if (!t.p) return 0;
    size_t lines = 0;
    for (size_t i = 0; i < t.n; i++) lines += t.p[i] == '\n';
    r->flat = malloc((t.n / 2 + 1) * sizeof *r->flat);
    r->off = malloc((lines + 2) * sizeof *r->off);
    r->n = 0;
    size_t k = 0;
    for (char *p = t.p, *end = t.p + t.n; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        *nl = 0;
        r->off[r->n++] = k;
        for (char *e; *p; p = e) {
            long v = strtol(p, &e, 10);
            if (e == p) break;
            r->flat[k++] = (int32_t)v;
        }
        p = nl + 1;
    }
    r->off[r->n] = k;
    free(t.p);
    return 1;
}

static laya_token *g_ids, *g_ids2;
#define IDS_CAP (1 << 20)

static size_t encode(const tok_vocab *v, const blob *s, laya_token *out) {
    size_t n = 0;
    laya_status st = tok_encode(v, s->p, s->n, 1, out, IDS_CAP, &n);
    CHECK(st == LAYA_OK, "tok_encode: %s", laya_status_str(st));
    return st == LAYA_OK ? n : 0;
}

/* Strings on which a and b give the same ids (or a and the references, when r is given). */
static size_t count_same(const tok_vocab *a, const tok_vocab *b, const refs *r, const corpus *c, const char *what) {
    size_t same = 0, shown = 0;
    for (size_t i = 0; i < c->n; i++) {
        size_t na = encode(a, &c->s[i], g_ids), nb;
        const laya_token *want = g_ids2;
        if (r) {
            nb = i < r->n ? r->off[i + 1] - r->off[i] : (size_t)-1;
            want = i < r->n ? r->flat + r->off[i] : NULL;
        } else {
            nb = encode(b, &c->s[i], g_ids2);
        }
        if (na == nb && (na == 0 || !memcmp(g_ids, want, na * sizeof *g_ids))) {
            same++;
        } else if (shown++ < 3) {
            fprintf(stderr, "  %s: string %zu differs (%zu vs %zu ids)\n", what, i, na, nb);
        }
    }
    return same;
}

/* ---------------------------------------------------------------------------------------------------
 * The three real tokenizers */

typedef struct real {
    const char *name, *gguf; /* tests/fixtures/tok/json/<name>; the fixture model with that tokenizer */
    blob tok, cfg;
    const char *dir;
} real;

static real g_real[3] = {
    {"qwen3", "tiny-qwen3-f16.gguf", {0}, {0}, NULL},
    {"llama3", "tiny-qwen2-f16.gguf", {0}, {0}, NULL},
    {"llama2", "tiny-llama-f16.gguf", {0}, {0}, NULL},
};

static gguf_file *open_fixture(const char *file) {
    const char *dir = getenv("LAYA_FIXTURES");
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "build/fixtures", file);
    gguf_file *f = NULL;
    CHECK(gguf_open(path, &f, err, sizeof err) == LAYA_OK, "%s (run `make fixtures`): %s", path, err);
    return f;
}

/* The translated metadata against what tokjson.py wrote into the fixture model (whose token list may be
 * padded to the embedding rows with unused placeholders). */
static void compare_metadata(const real *r, gguf_file *fix) {
    char err[256] = "";
    gguf_writer *w = gguf_writer_new();
    void *buf = NULL;
    size_t n = 0;
    gguf_file *f = NULL;
    CHECK(tokjson_to_gguf_mem(r->tok.p, r->tok.n, r->cfg.p, r->cfg.n, w, err, sizeof err) == LAYA_OK, "%s: %s",
          r->name, err);
    CHECK(gguf_writer_to_buffer(w, &buf, &n, err, sizeof err) == LAYA_OK, "%s buffer: %s", r->name, err);
    gguf_writer_free(w);
    CHECK(buf && gguf_open_buffer(buf, n, &f, err, sizeof err) == LAYA_OK, "%s open: %s", r->name, err);
    if (!f || !fix) goto out;
    int keys = 0, bad = 0;
    for (uint64_t i = 0; i < gguf_n_kv(fix); i++) {
        const gguf_kv *want = gguf_kv_at(fix, i);
        if (want->key.n < 10 || memcmp(want->key.p, "tokenizer.", 10)) continue;
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)want->key.n, want->key.p);
        const gguf_kv *got = gguf_find_kv(f, key);
        keys++;
        if (!got) {
            bad++;
            CHECK(0, "%s: %s missing", r->name, key);
            continue;
        }
        if (want->type != GGUF_ARRAY) {
            CHECK(got->type == want->type && got->data_size == want->data_size &&
                      !memcmp(got->data, want->data, (size_t)want->data_size),
                  "%s: %s differs", r->name, key);
            continue;
        }
        /* arrays: equal over ours; any extra fixture entries are padding placeholders */
        int padded = !strcmp(key, "tokenizer.ggml.tokens") || !strcmp(key, "tokenizer.ggml.token_type") ||
                     !strcmp(key, "tokenizer.ggml.scores");
        CHECK(got->arr_type == want->arr_type && (got->arr_n == want->arr_n || (padded && got->arr_n < want->arr_n)),
              "%s: %s has %llu entries, the fixture %llu", r->name, key, (unsigned long long)got->arr_n,
              (unsigned long long)want->arr_n);
        uint64_t diff = 0;
        gguf_str_iter ig = gguf_arr_strs(got), iw = gguf_arr_strs(want);
        for (uint64_t k = 0; k < got->arr_n && k < want->arr_n; k++) {
            if (got->arr_type == GGUF_STRING) {
                gguf_str a, b;
                gguf_str_next(&ig, &a);
                gguf_str_next(&iw, &b);
                diff += a.n != b.n || memcmp(a.p, b.p, (size_t)a.n);
            } else {
                diff += gguf_arr_num(got, k) != gguf_arr_num(want, k);
            }
        }
        for (uint64_t k = got->arr_n; !strcmp(key, "tokenizer.ggml.token_type") && k < want->arr_n; k++)
            diff += gguf_arr_num(want, k) != 5;
        CHECK(diff == 0, "%s: %s: %llu entries differ", r->name, key, (unsigned long long)diff);
    }
    CHECK(keys >= 7 && bad == 0, "%s: %d tokenizer keys compared, %d missing", r->name, keys, bad);
out:
    gguf_close(f);
    laya_free(buf);
}

static void test_real(const corpus *c) {
    char err[256] = "", path[256];
    for (int m = 0; m < 3; m++) {
        real *r = &g_real[m];
        snprintf(path, sizeof path, "tests/fixtures/tok/json/%s/tokenizer.json.xz", r->name);
        r->tok = xz_read(path);
        snprintf(path, sizeof path, "tests/fixtures/tok/json/%s/tokenizer_config.json.xz", r->name);
        r->cfg = xz_read(path);
        CHECK(r->tok.p && r->cfg.p, "%s: cannot decompress the committed tokenizer (is xz installed?)", r->name);
        if (!r->tok.p || !r->cfg.p) continue;
        r->dir = strdup(make_dir(r->name, r->tok, r->cfg));

        refs rf = {0};
        snprintf(path, sizeof path, "tests/fixtures/tok/%s.ids", r->name);
        CHECK(load_refs(path, &rf) && rf.n == c->n, "%s: %zu reference lines for %zu strings", path, rf.n, c->n);
        tok_vocab *vj = NULL, *vg = NULL;
        double t0 = now_s();
        CHECK(tok_load_json(r->dir, &vj, err, sizeof err) == LAYA_OK, "%s: tok_load_json: %s", r->name, err);
        double t_load = now_s() - t0;
        gguf_file *fix = open_fixture(r->gguf);
        CHECK(!fix || tok_load(fix, &vg, err, sizeof err) == LAYA_OK, "%s: tok_load: %s", r->name, err);
        if (vj) {
            size_t hf = count_same(vj, NULL, &rf, c, r->name);
            size_t gg = vg ? count_same(vj, vg, NULL, c, r->name) : 0;
            printf("%s: %zu/%zu strings match Hugging Face, %zu/%zu the GGUF path (loaded in %.0f ms)\n", r->name, hf,
                   c->n, gg, c->n, t_load * 1e3);
            CHECK(hf == c->n && c->n >= 4527, "%s: %zu/%zu match Hugging Face", r->name, hf, c->n);
            CHECK(gg == c->n, "%s: %zu/%zu match the GGUF path", r->name, gg, c->n);
        }
        if (vj && vg) {
            CHECK(tok_bos(vj) == tok_bos(vg) && tok_eos(vj) == tok_eos(vg) && tok_add_bos(vj) == tok_add_bos(vg),
                  "%s: bos %d/%d eos %d/%d add_bos %d/%d", r->name, tok_bos(vj), tok_bos(vg), tok_eos(vj), tok_eos(vg),
                  tok_add_bos(vj), tok_add_bos(vg));
            CHECK(!strcmp(tok_model_name(vj), tok_model_name(vg)) && !strcmp(tok_pre_name(vj), tok_pre_name(vg)),
                  "%s: %s/%s vs %s/%s", r->name, tok_model_name(vj), tok_pre_name(vj), tok_model_name(vg),
                  tok_pre_name(vg));
            int32_t n = tok_n_vocab(vj), diff = 0;
            CHECK(n <= tok_n_vocab(vg), "%s: %d tokens, the GGUF %d", r->name, n, tok_n_vocab(vg));
            for (int32_t i = 0; i < n && i < tok_n_vocab(vg); i++) {
                size_t la, lb;
                const char *pa = tok_piece(vj, i, &la), *pb = tok_piece(vg, i, &lb);
                diff += tok_token_type(vj, i) != tok_token_type(vg, i) || la != lb || memcmp(pa, pb, la);
            }
            CHECK(diff == 0, "%s: %d tokens differ in type or piece", r->name, diff);
        }
        compare_metadata(r, fix);
        tok_free(vj);
        tok_free(vg);
        gguf_close(fix);
        free(rf.flat);
        free(rf.off);
    }
}

/* ---------------------------------------------------------------------------------------------------
 * Variants, edited in memory */

/* The extent of the value of the first "key": in text (strings skipped over). */
static int find_value(const blob *t, const char *key, size_t *start, size_t *end) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *k = memmem(t->p, t->n, pat, strlen(pat));
    if (!k) return 0;
    size_t i = (size_t)(k - t->p) + strlen(pat);
    while (i < t->n && (t->p[i] == ' ' || t->p[i] == '\n')) i++;
    *start = i;
    int depth = 0;
    for (; i < t->n; i++) {
        char ch = t->p[i];
        if (ch == '"') {
            for (i++; i < t->n && t->p[i] != '"'; i++)
                if (t->p[i] == '\\') i++;
            if (depth == 0) {
                *end = i + 1;
                return 1;
            }
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            if (depth == 0) break;
            if (--depth == 0) {
                *end = i + 1;
                return 1;
            }
        } else if (depth == 0 && ch == ',') {
            break;
        }
    }
    *end = i;
    return 1;
}

/* A copy of t with the value of "key" replaced by repl. */
static blob splice(const blob *t, const char *key, const char *repl, size_t repl_n) {
    size_t s, e;
    blob b = {NULL, 0};
    if (!find_value(t, key, &s, &e)) return b;
    b.n = s + repl_n + (t->n - e);
    b.p = malloc(b.n + 1);
    memcpy(b.p, t->p, s);
    memcpy(b.p + s, repl, repl_n);
    memcpy(b.p + s + repl_n, t->p + e, t->n - e);
    b.p[b.n] = 0;
    return b;
}
#define SPLICE(t, key, lit) splice(t, key, lit, strlen(lit))

static tok_vocab *load_variant(const char *name, blob tok, blob cfg, laya_status want, const char *msg) {
    char err[256] = "";
    tok_vocab *v = NULL;
    CHECK(tok.p != NULL, "%s: edit failed", name);
    if (!tok.p) return NULL;
    const char *dir = make_dir(name, tok, cfg);
    laya_status st = tok_load_json(dir, &v, err, sizeof err);
    CHECK(st == want, "%s: %s (%s), expected %s", name, laya_status_str(st), err, laya_status_str(want));
    CHECK(!msg || strstr(err, msg), "%s: message \"%s\" lacks \"%s\"", name, err, msg);
    CHECK(st == LAYA_OK || v == NULL, "%s: vocab left on failure", name);
    remove_dir(dir);
    return v;
}

static void test_variants(const corpus *c) {
    real *qw = &g_real[0], *l3 = &g_real[1], *l2 = &g_real[2];
    if (!qw->tok.p || !l3->tok.p || !l2->tok.p) return;
    char err[256] = "";
    blob none = {NULL, 0};
    tok_vocab *orig = NULL;
    CHECK(tok_load_json(l2->dir, &orig, err, sizeof err) == LAYA_OK, "llama2: %s", err);
    if (!orig) return;

    /* Llama 2 with its merges as [a, b] pairs (the newer tokenizers format): the same ids. */
    json_doc *d = NULL;
    CHECK(json_parse(l2->tok.p, l2->tok.n, NULL, &d, err, sizeof err) == LAYA_OK, "parse llama2: %s", err);
    const json_value *merges = json_get(json_get(json_root(d), "model"), "merges");
    json_buf jb;
    json_buf_init(&jb);
    json_buf_cstr(&jb, "[");
    for (const json_value *e = json_first(merges); e; e = json_next(merges, e)) {
        const char *sp = memchr(e->s, ' ', e->len);
        json_buf_cstr(&jb, e == json_first(merges) ? "[" : ",[");
        json_buf_str(&jb, e->s, (size_t)(sp - e->s));
        json_buf_cstr(&jb, ",");
        json_buf_str(&jb, sp + 1, e->len - (size_t)(sp - e->s) - 1);
        json_buf_cstr(&jb, "]");
    }
    json_buf_cstr(&jb, "]");
    json_free(d);
    blob t = splice(&l2->tok, "merges", jb.p, jb.len);
    json_buf_free(&jb);
    tok_vocab *v = load_variant("l2_pairs", t, l2->cfg, LAYA_OK, NULL);
    if (v) CHECK(count_same(v, orig, NULL, c, "l2_pairs") == c->n, "llama2 with pair merges differs");
    tok_free(v);
    free(t.p);

    /* The normalizers in the other order: the same ids. */
    t = SPLICE(&l2->tok, "normalizer",
               "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, "
               "\"content\": \"\xE2\x96\x81\"}, {\"type\": \"Prepend\", \"prepend\": \"\xE2\x96\x81\"}]}");
    v = load_variant("l2_swapped", t, l2->cfg, LAYA_OK, NULL);
    if (v) CHECK(count_same(v, orig, NULL, c, "l2_swapped") == c->n, "llama2 with swapped normalizers differs");
    tok_free(v);
    free(t.p);

    /* Without the Prepend: no space prefix, so " x" now encodes as "x" did. */
    t = SPLICE(&l2->tok, "normalizer",
               "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xE2\x96\x81\"}");
    v = load_variant("l2_no_prepend", t, l2->cfg, LAYA_OK, NULL);
    const char *plain[] = {"Hello world", "The file system", "keyboards, 42 of them"};
    for (int i = 0; v && i < 3; i++) {
        char spaced[64];
        snprintf(spaced, sizeof spaced, " %s", plain[i]);
        blob a = {spaced, strlen(spaced)}, b = {(char *)plain[i], strlen(plain[i])};
        size_t na = encode(v, &a, g_ids), nb = encode(orig, &b, g_ids2);
        CHECK(na == nb && !memcmp(g_ids, g_ids2, na * sizeof *g_ids), "no prepend: \"%s\"", spaced);
    }
    tok_free(v);
    free(t.p);

    /* Metaspace (how newer Llama-2-family files say it) is refused: for text that starts with a space it
     * adds no second "▁", where the Llama 2 normalizer (and the engine) does. */
    const char *schemes[] = {"first", "always"};
    for (int i = 0; i < 2; i++) {
        char pre[160];
        snprintf(pre, sizeof pre, "{\"type\": \"Metaspace\", \"replacement\": \"\xE2\x96\x81\", \"prepend_scheme\": "
                                  "\"%s\", \"split\": false}", schemes[i]);
        blob t1 = SPLICE(&l2->tok, "normalizer", "null");
        t = SPLICE(&t1, "pre_tokenizer", pre);
        free(t1.p);
        v = load_variant("l2_metaspace", t, l2->cfg, LAYA_ERR_UNSUPPORTED, "Metaspace");
        tok_free(v);
        free(t.p);
    }

    /* No tokenizer_config.json: BOS/EOS from well-known names; add_bos from the post-processor template
     * (Llama 2), or from there being a BOS (Llama 3). */
    tok_vocab *with_cfg = NULL;
    struct { real *r; laya_token bos, eos; int add_bos; } nc[3] = {
        {qw, -1, 151643, 0}, {l3, 128000, 128001, 1}, {l2, 1, 2, 1}};
    for (int i = 0; i < 3; i++) {
        v = load_variant("no_config", nc[i].r->tok, none, LAYA_OK, NULL);
        CHECK(v && tok_bos(v) == nc[i].bos && tok_eos(v) == nc[i].eos && tok_add_bos(v) == nc[i].add_bos,
              "%s without config: bos %d eos %d add_bos %d", nc[i].r->name, v ? tok_bos(v) : -2, v ? tok_eos(v) : -2,
              v ? tok_add_bos(v) : -2);
        tok_free(v);
    }
    CHECK(tok_load_json(qw->dir, &with_cfg, err, sizeof err) == LAYA_OK && tok_eos(with_cfg) == 151645 &&
              tok_bos(with_cfg) == -1 && !tok_add_bos(with_cfg),
          "qwen3 with config: eos <|im_end|>, no bos");
    tok_free(with_cfg);

    /* SmolLM's split (Digits, then GPT-2's) is translated to llama.cpp's "smollm", which the engine has. */
    t = SPLICE(&l3->tok, "pre_tokenizer",
               "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", \"individual_digits\": true}, "
               "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": true}]}");
    gguf_writer *w = gguf_writer_new();
    CHECK(t.p && tokjson_to_gguf_mem(t.p, t.n, NULL, 0, w, err, sizeof err) == LAYA_OK, "smollm: %s", err);
    void *buf = NULL;
    size_t bn = 0;
    gguf_file *f = NULL;
    gguf_str pre = {NULL, 0};
    CHECK(gguf_writer_to_buffer(w, &buf, &bn, err, sizeof err) == LAYA_OK &&
              gguf_open_buffer(buf, bn, &f, err, sizeof err) == LAYA_OK &&
              gguf_get_str(f, "tokenizer.ggml.pre", &pre) == LAYA_OK && pre.n == 6 && !memcmp(pre.p, "smollm", 6),
          "smollm pre name: %s", err);
    v = NULL;
    laya_status st = f ? tok_load(f, &v, err, sizeof err) : LAYA_ERR_FORMAT;
    CHECK(st == LAYA_OK && v && !strcmp(tok_pre_name(v), "smollm"), "smollm: %s", err);
    tok_free(v);
    gguf_close(f);
    laya_free(buf);
    gguf_writer_free(w);
    free(t.p);

    /* ByteLevel's own (GPT-2) split. */
    t = SPLICE(&l3->tok, "pre_tokenizer",
               "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": true}");
    v = load_variant("l3_gpt2", t, l3->cfg, LAYA_OK, NULL);
    CHECK(v && !strcmp(tok_pre_name(v), "gpt2"), "gpt-2 split: %s", v ? tok_pre_name(v) : "-");
    if (v) {
        blob s = {"Hello world's 12345", 19};
        size_t n = encode(v, &s, g_ids);
        CHECK(n >= 5, "gpt-2 split encodes (%zu ids)", n);
    }
    tok_free(v);
    free(t.p);
    tok_free(orig);
}

/* ---------------------------------------------------------------------------------------------------
 * Malformed corpus, directory API, out of memory */

static laya_status status_of(const char *s) {
    if (!strcmp(s, "FORMAT")) return LAYA_ERR_FORMAT;
    if (!strcmp(s, "UNSUPPORTED")) return LAYA_ERR_UNSUPPORTED;
    if (!strcmp(s, "CAPACITY")) return LAYA_ERR_CAPACITY;
    return LAYA_OK;
}

/* tokenizer.json text (+ config) -> vocab, all in memory. */
static laya_status load_mem(const blob *tok, const blob *cfg, tok_vocab **out, char *err, size_t errlen) {
    *out = NULL;
    gguf_writer *w = gguf_writer_new();
    if (!w) return LAYA_ERR_NOMEM;
    void *buf = NULL;
    size_t n = 0;
    gguf_file *f = NULL;
    laya_status st = tokjson_to_gguf_mem(tok->p ? tok->p : "", tok->n, cfg ? cfg->p : NULL, cfg ? cfg->n : 0, w, err,
                                         errlen);
    if (!st) st = gguf_writer_to_buffer(w, &buf, &n, err, errlen);
    gguf_writer_free(w);
    if (!st) st = gguf_open_buffer(buf, n, &f, err, errlen);
    if (!st) st = tok_load(f, out, err, errlen);
    gguf_close(f);
    laya_free(buf);
    return st;
}

static void test_bad_corpus(void) {
    const char *dir = "tests/fixtures/tokjson_bad";
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/EXPECT", dir);
    FILE *fp = fopen(path, "r");
    CHECK(fp != NULL, "cannot read %s (run from the repository root)", path);
    int n_cases = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        line[strcspn(line, "\n")] = 0;
        char name[128], status[16];
        int off = 0;
        if (sscanf(line, "%127s %15s %n", name, status, &off) < 2) continue;
        const char *msg = line + off;
        n_cases++;
        snprintf(path, sizeof path, "%s/%s.json", dir, name);
        blob tok = read_all(path);
        snprintf(path, sizeof path, "%s/%s.config.json", dir, name);
        blob cfg = read_all(path);
        CHECK(tok.p != NULL, "%s: missing", name);
        char err[256] = "";
        tok_vocab *v = NULL;
        double t0 = now_s();
        laya_status st = load_mem(&tok, cfg.p ? &cfg : NULL, &v, err, sizeof err);
        CHECK(now_s() - t0 < 1.0, "%s: took %.2f s", name, now_s() - t0);
        CHECK(st == status_of(status), "%s: %s (%s), expected %s", name, laya_status_str(st), err, status);
        CHECK(strstr(err, msg) != NULL, "%s: message \"%s\" lacks \"%s\"", name, err, msg);
        CHECK(!v, "%s: vocab left on failure", name);
        tok_free(v);
        free(tok.p);
        free(cfg.p);
    }
    if (fp) fclose(fp);
    CHECK(n_cases >= 90, "%d malformed cases", n_cases);
}

/* The fuzz seeds that should load do, and encode as the tiny vocabs say. */
static void test_seeds(void) {
    struct { const char *file, *text; int n; laya_token ids[8]; } cases[] = {
        {"gpt2_tiny", "ab a<|end|><think>b", 5, {2, 4, 6, 8, 1}},
        {"spm_tiny_cfg", "ab a</s>b", 5, {264, 262, 2, 259, 261}},
    };
    for (int i = 0; i < 2; i++) {
        char path[256], err[256] = "";
        snprintf(path, sizeof path, "tests/fuzz/corpus_tokjson/%s", cases[i].file);
        blob b = read_all(path);
        CHECK(b.p != NULL, "%s: missing", path);
        if (!b.p) continue;
        char *nul = memchr(b.p, 0, b.n);
        blob tok = {b.p, nul ? (size_t)(nul - b.p) : b.n}, cfg = {nul ? nul + 1 : NULL, nul ? b.n - tok.n - 1 : 0};
        tok_vocab *v = NULL;
        CHECK(load_mem(&tok, nul ? &cfg : NULL, &v, err, sizeof err) == LAYA_OK, "%s: %s", cases[i].file, err);
        if (v) {
            blob s = {(char *)cases[i].text, strlen(cases[i].text)};
            size_t n = encode(v, &s, g_ids);
            int same = n == (size_t)cases[i].n && !memcmp(g_ids, cases[i].ids, n * sizeof *g_ids);
            CHECK(same, "%s: \"%s\" gives %zu ids (%d %d %d ...)", cases[i].file, cases[i].text, n, g_ids[0], g_ids[1],
                  g_ids[2]);
        }
        tok_free(v);
        free(b.p);
    }
}

static void test_dir_api(void) {
    char err[256] = "", path[192];
    tok_vocab *v = (tok_vocab *)1;
    CHECK(tok_load_json("/nonexistent-dir", &v, err, sizeof err) == LAYA_ERR_IO && !v && strstr(err, "tokenizer.json"),
          "missing dir: %s", err);
    CHECK(tok_load_json(NULL, &v, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL dir");
    CHECK(tok_load_json(g_tmp, NULL, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL out");
    gguf_writer *w = gguf_writer_new();
    CHECK(tokjson_to_gguf(NULL, w, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL dir");
    CHECK(tokjson_to_gguf(g_tmp, NULL, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL writer");
    CHECK(tokjson_to_gguf_mem(NULL, 0, NULL, 0, w, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL text");
    CHECK(tokjson_to_gguf_mem("{}", 2, NULL, 5, w, err, sizeof err) == LAYA_ERR_INVALID_ARG, "NULL config, length 5");
    gguf_writer_free(w);
    /* a tokenizer_config.json that is a directory */
    blob tok = read_all("tests/fuzz/corpus_tokjson/gpt2_tiny");
    const char *dir = make_dir("cfg_dir", tok, (blob){NULL, 0});
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    mkdir(path, 0755);
    CHECK(tok_load_json(dir, &v, err, sizeof err) == LAYA_ERR_IO && strstr(err, "not a regular file"),
          "config is a directory: %s", err);
    rmdir(path);
    CHECK(tok_load_json(dir, &v, err, sizeof err) == LAYA_OK, "no config: %s", err);
    tok_free(v);
    remove_dir(dir);
    free(tok.p);
}

/* Out-of-memory injection: allocation k+1 fails; every k must give NOMEM (or OK) and leak nothing. */

static void test_oom(void) {
    const char *seeds[] = {"spm_tiny_cfg", "gpt2_tiny_cfg"};
    for (int s = 0; s < 2; s++) {
        char path[256], err[256];
        snprintf(path, sizeof path, "tests/fuzz/corpus_tokjson/%s", seeds[s]);
        blob b = read_all(path);
        if (!b.p) continue;
        char *nul = memchr(b.p, 0, b.n);
        blob tok = {b.p, (size_t)(nul - b.p)}, cfg = {nul + 1, b.n - tok.n - 1};
        int k, bad = 0;
        for (k = 0; k < 1000; k++) {
            ta_install(k + 1);
            tok_vocab *v = NULL;
            laya_status st = load_mem(&tok, &cfg, &v, err, sizeof err);
            tok_free(v);
            if (ta_live || (st && st != LAYA_ERR_NOMEM)) {
                if (bad++ < 3) fprintf(stderr, "  oom %s step %d: %s, %ld live: %s\n", seeds[s], k, laya_status_str(st),
                                       ta_live, err);
            }
            if (!st) break;
        }
        laya_set_alloc_hooks(NULL);
        CHECK(bad == 0 && k < 1000, "%s under OOM: %d bad, %d steps", seeds[s], bad, k);
        free(b.p);
    }
}

int main(void) {
    snprintf(g_tmp, sizeof g_tmp, "/tmp/test_tokjson_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    g_ids = malloc(IDS_CAP * sizeof *g_ids);
    g_ids2 = malloc(IDS_CAP * sizeof *g_ids2);
    corpus c = {0};
    CHECK(load_corpus("tests/fixtures/tok/strings.hex", &c), "cannot read tests/fixtures/tok/strings.hex");
    test_real(&c);
    test_variants(&c);
    test_bad_corpus();
    test_seeds();
    test_dir_api();
    test_oom();
    for (int m = 0; m < 3; m++) {
        if (g_real[m].dir) remove_dir(g_real[m].dir);
        free((char *)g_real[m].dir);
        free(g_real[m].tok.p);
        free(g_real[m].cfg.p);
    }
    rmdir(g_tmp);
    for (size_t i = 0; i < c.n; i++) free(c.s[i].p);
    free(c.s);
    free(g_ids);
    free(g_ids2);
    return DONE("test_tokjson");
}
