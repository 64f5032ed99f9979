/* test_cli.c — runs the built `laya` binary (beside this test: BUILD/laya) on a laya-typing model made by
 * the dev program BUILD/laya-synth and checks its machine-readable outputs against the library, quantize's output types, and that
 * bad arguments and broken model files give a message and a non-zero exit, never a crash.
 * Not here: numerical accuracy (test_parity.c) or tokenizer parity (test_tokenizer.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "io/gguf.h"
#include "base/json.h"
#include "laya.h"

static char g_laya[1100], g_synth[1100], g_dir[1100], g_model[1200];

typedef struct result {
    int code;     /* exit status, or -1 */
    int crashed;  /* killed by a signal, or a sanitizer report */
    char *out;    /* stdout, NUL-terminated */
    size_t out_len;
    char err[8192];
} result;

static void result_free(result *r) { free(r->out); }

/* Runs `BIN ARGS` with stdin from in_path (or /dev/null). */
static result run_bin(const char *bin, const char *in_path, const char *args) {
    result r = {0};
    char cmd[8192], err_path[1200];
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", g_dir);
    /* exec: the status pclose returns is the program's own, so a signal shows as a signal */
    snprintf(cmd, sizeof cmd, "exec %s %s <%s 2>%s", bin, args, in_path ? in_path : "/dev/null", err_path);
    FILE *p = popen(cmd, "r");
    if (!p) {
        r.code = -1;
        return r;
    }
    size_t cap = 4096;
    r.out = malloc(cap);
    for (;;) {
        if (r.out_len + 1024 >= cap) r.out = realloc(r.out, cap *= 2);
        size_t k = fread(r.out + r.out_len, 1, cap - r.out_len - 1, p);
        if (k == 0) break;
        r.out_len += k;
    }
    r.out[r.out_len] = 0;
    int st = pclose(p);
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.crashed = WIFSIGNALED(st);
    FILE *e = fopen(err_path, "rb");
    if (e) {
        size_t k = fread(r.err, 1, sizeof r.err - 1, e);
        r.err[k] = 0;
        fclose(e);
    }
    if (strstr(r.err, "Sanitizer") || strstr(r.err, "runtime error:")) r.crashed = 1;
    return r;
}

/* `laya ARGS` and `laya-synth ARGS`. */
static result run_laya(const char *in_path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static result run_laya(const char *in_path, const char *fmt, ...) {
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return run_bin(g_laya, in_path, args);
}
static result run_synth(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static result run_synth(const char *fmt, ...) {
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return run_bin(g_synth, NULL, args);
}

static json_doc *parse_out(const result *r) {
    json_doc *d = NULL;
    char err[256];
    if (json_parse(r->out, r->out_len, NULL, &d, err, sizeof err)) fprintf(stderr, "  JSON: %s\n  %.300s\n", err, r->out);
    return d;
}

static int64_t jint(const json_value *v) { return v && v->type == JSON_NUMBER ? (int64_t)v->num : -999; }
static int jstr_is(const json_value *v, const char *s) { return v && v->type == JSON_STRING && !strcmp(v->s, s); }
static const json_value *jpath(const json_value *v, const char *a, const char *b) {
    v = json_get(v, a);
    return b ? json_get(v, b) : v;
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, n, f);
    fclose(f);
}

static void write_str(const char *path, const char *s) { write_file(path, s, strlen(s)); }

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

static void test_info(void) {
    result r = run_laya(NULL, "info -m %s --json", g_model);
    CHECK(r.code == 0 && !r.crashed, "info --json exit %d: %s", r.code, r.err);
    json_doc *d = parse_out(&r);
    const json_value *v = json_root(d);
    CHECK(d && v->type == JSON_OBJECT, "info --json is an object");
    CHECK(jstr_is(json_get(v, "arch"), "llama"), "arch");
    CHECK(jint(jpath(v, "shape", "n_layer")) == 8 && jint(jpath(v, "shape", "n_embd")) == 512, "layers/embd");
    CHECK(jint(jpath(v, "shape", "n_head")) == 8 && jint(jpath(v, "shape", "n_head_kv")) == 4, "heads");
    CHECK(jint(jpath(v, "shape", "head_dim")) == 64 && jint(jpath(v, "shape", "n_ff")) == 1536, "head_dim/ff");
    CHECK(jint(jpath(v, "shape", "n_vocab")) == 16384 && jint(jpath(v, "shape", "n_ctx_train")) == 512, "vocab/ctx");
    CHECK(jpath(v, "shape", "rope_theta") && jpath(v, "shape", "rope_theta")->num == 10000.0, "rope theta");
    const json_value *tied = jpath(v, "shape", "tied_output");
    CHECK(tied && tied->type == JSON_BOOL && tied->b == 1, "tied");
    CHECK(jint(jpath(v, "tensor_types", "Q8_0")) == 57 && jint(jpath(v, "tensor_types", "F32")) == 17,
          "tensor type counts");
    CHECK(jint(json_get(v, "n_tensors")) == 74, "n_tensors");
    CHECK(jstr_is(jpath(v, "tokenizer", "model"), "gpt2"), "tokenizer model");
    CHECK(jint(jpath(v, "tokenizer", "bos")) == 16381 && jint(jpath(v, "tokenizer", "eos")) == 16381, "bos/eos");
    CHECK(jint(jpath(v, "tokenizer", "n_vocab")) == 16384, "tokenizer vocab");
    struct stat sb;
    stat(g_model, &sb);
    CHECK(jint(jpath(v, "memory", "file_bytes")) == (int64_t)sb.st_size, "file_bytes");
    CHECK(jint(jpath(v, "memory", "kv_bytes_per_pos")) == 2 * 8 * 4 * 64 * 4, "kv bytes per position");
    CHECK(jint(jpath(v, "memory", "weight_bytes")) > 30000000, "weight bytes");
    CHECK(json_get(v, "cpu_backend") && json_get(v, "cpu_backend")->type == JSON_STRING, "cpu_backend");
    json_free(d);
    result_free(&r);

    r = run_laya(NULL, "info -m %s", g_model);
    CHECK(r.code == 0 && strstr(r.out, "llama") && strstr(r.out, "Q8_0"), "info text: %s", r.out);
    result_free(&r);
}

static void test_tokenize(const laya_model *m) {
    static const char *texts[] = {"Hello world", "caf\xc3\xa9 \xf0\x9f\x98\x80 na\xc3\xafve", "",
                                  "<|endoftext|>", "  two  spaces\nand a newline\t tab", "12345 + 678 = ?",
                                  "quote \" backslash \\ done"};
    const size_t n_texts = sizeof texts / sizeof texts[0];
    char in_path[1200];
    snprintf(in_path, sizeof in_path, "%s/in.jsonl", g_dir);
    json_buf b;
    json_buf_init(&b);
    for (size_t i = 0; i < n_texts; i++) {
        json_buf_str(&b, texts[i], strlen(texts[i]));
        json_buf_raw(&b, "\n", 1);
    }
    write_file(in_path, b.p, b.len);
    json_buf_free(&b);

    result r = run_laya(in_path, "tokenize -m %s --jsonl", g_model);
    CHECK(r.code == 0 && !r.crashed, "tokenize --jsonl exit %d: %s", r.code, r.err);
    char *line = r.out;
    for (size_t i = 0; i < n_texts; i++) {
        char *nl = line ? strchr(line, '\n') : NULL;
        CHECK(nl != NULL, "output line %zu missing", i);
        if (!nl) break;
        json_doc *d = NULL;
        char err[256];
        CHECK(json_parse(line, (size_t)(nl - line), NULL, &d, err, sizeof err) == LAYA_OK, "line %zu: %s", i, err);
        const json_value *a = json_root(d);
        laya_token ids[256], got[256];
        size_t n = 0, k = 0;
        laya_tokenize(m, texts[i], strlen(texts[i]), 1, ids, 256, &n);
        for (const json_value *e = json_first(a); e && k < 256; e = json_next(a, e)) got[k++] = (laya_token)e->num;
        CHECK(a && a->type == JSON_ARRAY && k == n && !memcmp(got, ids, n * sizeof *ids),
              "line %zu: CLI ids differ from laya_tokenize (%zu vs %zu)", i, k, n);
        char text[1024];
        size_t tn = 0;
        laya_detokenize(m, got, k, 0, 0, text, sizeof text, &tn);
        CHECK(tn == strlen(texts[i]) && !memcmp(text, texts[i], tn), "line %zu: round trip gave '%.*s'", i,
              (int)tn, text);
        json_free(d);
        line = nl + 1;
    }
    CHECK(strstr(r.out, "[16381]") != NULL, "special token parsed as one id");
    result_free(&r);

    /* a bad line: named by number, non-zero exit, earlier lines still written */
    write_str(in_path, "\"ok\"\n\"bad \\q escape\"\n\"never\"\n");
    r = run_laya(in_path, "tokenize -m %s --jsonl", g_model);
    CHECK(r.code != 0 && !r.crashed && strstr(r.err, "line 2"), "bad line: exit %d, '%s'", r.code, r.err);
    CHECK(r.out_len > 0 && r.out[0] == '[' && !strstr(r.out, "\n["), "only the good line came out: %s", r.out);
    result_free(&r);
    write_str(in_path, "\"ok\"\n42\n");
    r = run_laya(in_path, "tokenize -m %s --jsonl", g_model);
    CHECK(r.code != 0 && strstr(r.err, "line 2") && strstr(r.err, "string"), "not a string: '%s'", r.err);
    result_free(&r);
    write_str(in_path, "\"a\xff\"\n");
    r = run_laya(in_path, "tokenize -m %s --jsonl", g_model);
    CHECK(r.code != 0 && strstr(r.err, "line 1") && strstr(r.err, "UTF-8"), "invalid UTF-8: '%s'", r.err);
    result_free(&r);
    /* the reader is strict: nothing after the string, no raw control characters, no unfinished string */
    static const char *strict[][2] = {{"\"ok\" x\n", "after"}, {"\"a\tb\"\n", "control"},
                                      {"\"abc\n", "not closed"}, {"\n", "got nothing"}, {"[\"a\"]\n", "array"}};
    for (size_t i = 0; i < sizeof strict / sizeof strict[0]; i++) {
        write_str(in_path, strict[i][0]);
        r = run_laya(in_path, "tokenize -m %s --jsonl", g_model);
        CHECK(r.code == 1 && strstr(r.err, "line 1") && strstr(r.err, strict[i][1]), "%s: '%s'", strict[i][1], r.err);
        result_free(&r);
    }
    /* a surrogate pair is the character it stands for */
    write_str(in_path, "\" \\ud83d\\ude00 \\u00e9\\n\"\n\" \xf0\x9f\x98\x80 \xc3\xa9\\n\"\n");
    r = run_laya(in_path, "tokenize -m %s --jsonl", g_model);
    char *nl = strchr(r.out, '\n');
    CHECK(r.code == 0 && nl && !strncmp(r.out, nl + 1, (size_t)(nl - r.out) + 1), "escapes decoded: '%s'", r.out);
    result_free(&r);
    write_str(in_path, "\"\\ud800\"\n");
    r = run_laya(in_path, "tokenize -m %s --jsonl", g_model);
    CHECK(r.code != 0 && strstr(r.err, "surrogate"), "lone surrogate: '%s'", r.err);
    result_free(&r);

    r = run_laya(NULL, "tokenize -m %s -p 'Hello world'", g_model);
    laya_token ids[16];
    size_t n = 0;
    laya_tokenize(m, "Hello world", 11, 1, ids, 16, &n);
    char want[256] = "";
    for (size_t i = 0; i < n; i++) snprintf(want + strlen(want), sizeof want - strlen(want), i ? ",%d" : "%d", ids[i]);
    strcat(want, "\n");
    CHECK(r.code == 0 && !strcmp(r.out, want), "tokenize -p: '%s' want '%s'", r.out, want);
    result_free(&r);
}

/* score's argmax at the last position must be run's first generated id, and so on. */
static void test_score_run(void) {
    result r = run_laya(NULL, "score -m %s --ids 16381,72,101 --top 5 --json", g_model);
    CHECK(r.code == 0 && !r.crashed, "score exit %d: %s", r.code, r.err);
    json_doc *d = parse_out(&r);
    const json_value *pos = json_get(json_root(d), "positions");
    CHECK(pos && pos->type == JSON_ARRAY && pos->n == 3, "3 positions");
    int64_t last_top = -1;
    for (const json_value *p = json_first(pos); p; p = json_next(pos, p)) {
        const json_value *ti = json_get(p, "top_ids"), *tl = json_get(p, "top_logits"), *l = json_get(p, "logsumexp");
        CHECK(ti && tl && l && ti->n == 5 && tl->n == 5, "fields");
        if (!ti || !tl || !l || tl->n != 5) continue;
        for (size_t k = 1; k < 5; k++) CHECK(json_at(tl, k - 1)->num >= json_at(tl, k)->num, "sorted");
        CHECK(l->num >= json_at(tl, 0)->num, "logsumexp >= max");
        last_top = jint(json_at(ti, 0));
    }
    json_free(d);
    result_free(&r);

    r = run_laya(NULL, "run -m %s --ids 16381,72,101 -n 2 --json", g_model);
    CHECK(r.code == 0 && !r.crashed, "run exit %d: %s", r.code, r.err);
    d = parse_out(&r);
    const json_value *ids = json_get(json_root(d), "ids"), *text = json_get(json_root(d), "text");
    CHECK(ids && ids->type == JSON_ARRAY && ids->n <= 2 && text && text->type == JSON_STRING, "run --json shape");
    if (ids && ids->n >= 1) CHECK(jint(json_at(ids, 0)) == last_top, "run's first id %lld == score's argmax %lld",
                                  (long long)jint(json_at(ids, 0)), (long long)last_top);
    int64_t g0 = ids && ids->n ? jint(json_at(ids, 0)) : -1, g1 = ids && ids->n > 1 ? jint(json_at(ids, 1)) : -1;
    json_free(d);
    result_free(&r);
    if (g1 >= 0) {
        r = run_laya(NULL, "score -m %s --ids 16381,72,101,%lld --top 1 --json", g_model, (long long)g0);
        d = parse_out(&r);
        pos = json_get(json_root(d), "positions");
        CHECK(pos && pos->n == 4 && jint(json_at(json_get(json_at(pos, 3), "top_ids"), 0)) == g1,
              "second generated id matches score");
        json_free(d);
        result_free(&r);
    }

    r = run_laya(NULL, "run -m %s -p 'Hello' -n 3", g_model);
    CHECK(r.code == 0 && !r.crashed && r.out_len > 0, "run streaming: %s", r.err);
    result_free(&r);
}

static void check_types(const char *path, const char *want, uint32_t ftype) {
    laya_model *m = NULL;
    char err[256];
    laya_status st = laya_model_load(path, laya_model_default_params(), &m, err, sizeof err);
    CHECK(st == LAYA_OK, "load %s: %s", path, err);
    if (st) return;
    int bad = 0, n = 0;
    const char *name, *type;
    int64_t ne[4];
    int32_t nd;
    while (laya_model_tensor(m, n, &name, &type, ne, &nd) == LAYA_OK) {
        const char *expect = nd == 1 ? "F32" : want;
        /* a 4-bit file keeps its output matrix (here the tied token embedding) at 6 or 8 bits */
        int output_exception = !strcmp(want, "Q4_0") && !strcmp(name, "token_embd.weight") &&
                               (!strcmp(type, "Q6_K") || !strcmp(type, "Q8_0"));
        if (strcmp(type, expect) && !output_exception) {
            if (bad++ < 3) fprintf(stderr, "  %s: %s, want %s\n", name, type, expect);
        }
        n++;
    }
    CHECK(n == 74 && bad == 0, "%s: %d tensors, %d of the wrong type", want, n, bad);
    laya_model_free(m);
    gguf_file *f = NULL;
    uint32_t ft = 99;
    if (gguf_open(path, &f, err, sizeof err) == LAYA_OK) gguf_get_u32(f, "general.file_type", &ft);
    CHECK(ft == ftype, "general.file_type %u, want %u", ft, ftype);
    gguf_close(f);
}

static void test_quantize(void) {
    static const struct { const char *type; uint32_t ftype; } k[] = {{"F16", 1}, {"Q8_0", 7}, {"Q4_0", 2}, {"F32", 0}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        char out[1300];
        snprintf(out, sizeof out, "%s/q_%s.gguf", g_dir, k[i].type);
        result r = run_laya(NULL, "quantize %s %s %s", g_model, out, k[i].type);
        CHECK(r.code == 0 && !r.crashed, "quantize %s exit %d: %s", k[i].type, r.code, r.err);
        result_free(&r);
        check_types(out, k[i].type, k[i].ftype);
        r = run_laya(NULL, "run -m %s --ids 1,2,3 -n 2 --json", out);
        CHECK(r.code == 0 && !r.crashed, "run on the %s file: %s", k[i].type, r.err);
        result_free(&r);
        if (i == 2) { /* Q4_0 back to F16 (through a dequantize): still loadable and the right types */
            char out2[1300];
            snprintf(out2, sizeof out2, "%s/q_back.gguf", g_dir);
            r = run_laya(NULL, "quantize %s %s f16", out, out2);
            CHECK(r.code == 0, "re-quantize: %s", r.err);
            result_free(&r);
            check_types(out2, "F16", 1);
            unlink(out2);
        }
        unlink(out);
    }
}

/* annotate: typing metadata written, read back, refused when malformed; quantize drops the calibration. */
static void test_annotate(void) {
    char w[1300], c[1300], out[1300], q[1300], bad[1300];
    snprintf(w, sizeof w, "%s/an_words.tsv", g_dir);
    snprintf(c, sizeof c, "%s/an_calib.txt", g_dir);
    snprintf(out, sizeof out, "%s/an.gguf", g_dir);
    snprintf(q, sizeof q, "%s/an_q8.gguf", g_dir);
    snprintf(bad, sizeof bad, "%s/an_bad.txt", g_dir);
    write_str(w, "# word list\nzebra\t5\nquokka 3\n\nokapi\n");
    write_str(c, "# map\n0.1 0.05\n0.9 0.5\n");
    result r = run_laya(NULL, "annotate %s %s --words %s --calibration %s", g_model, out, w, c);
    CHECK(r.code == 0 && !r.crashed, "annotate exit %d: %s", r.code, r.err);
    result_free(&r);
    gguf_file *f = NULL;
    const gguf_kv *kw, *kc, *kx, *ky;
    CHECK(gguf_open(out, &f, NULL, 0) == LAYA_OK, "annotated file opens");
    if (f) {
        gguf_str w1 = {NULL, 0};
        if (!gguf_get_arr(f, "laya.words", GGUF_STRING, &kw)) {
            gguf_str_iter it = gguf_arr_strs(kw);
            gguf_str_next(&it, &w1);
            gguf_str_next(&it, &w1);
        }
        CHECK(kw && kw->arr_n == 3 && w1.n == 6 && !memcmp(w1.p, "quokka", 6), "laya.words");
        /* in byte order: okapi (no count: 1), quokka 3, zebra 5 */
        CHECK(!gguf_get_arr(f, "laya.word_counts", GGUF_U32, &kc) && kc->arr_n == 3 && gguf_arr_num(kc, 0) == 1 &&
                  gguf_arr_num(kc, 1) == 3 && gguf_arr_num(kc, 2) == 5,
              "laya.word_counts");
        CHECK(!gguf_get_arr(f, "laya.calibration.prob", GGUF_F32, &kx) && kx->arr_n == 2 &&
                  !gguf_get_arr(f, "laya.calibration.hit", GGUF_F32, &ky) && fabs(gguf_arr_num(ky, 1) - 0.5) < 1e-6,
              "laya.calibration");
        CHECK(gguf_n_tensors(f) > 0, "tensors copied");
        gguf_close(f);
    }
    /* the session reads the map: confidence = map(prob) */
    r = run_laya(NULL, "suggest -m %s -k 2 --json 'the'", out);
    json_doc *d = parse_out(&r);
    const json_value *c0 = d ? json_at(jpath(json_root(d), "candidates", NULL), 0) : NULL;
    if (c0 && json_get(c0, "prob") && json_get(c0, "confidence")) {
        double p = json_get(c0, "prob")->num, cf = json_get(c0, "confidence")->num;
        double want = p <= 0.1 ? 0.05 : p >= 0.9 ? 0.5 : 0.05 + (p - 0.1) / 0.8 * 0.45;
        CHECK(fabs(cf - want) < 1e-3, "confidence %g for prob %g, want %g", cf, p, want);
    } else CHECK(0, "suggest on the annotated model: %s", r.err);
    json_free(d);
    result_free(&r);
    /* quantizing keeps the words, drops the map (it is fitted per file) */
    r = run_laya(NULL, "quantize %s %s Q8_0", out, q);
    CHECK(r.code == 0, "quantize annotated: %s", r.err);
    result_free(&r);
    if (gguf_open(q, &f, NULL, 0) == LAYA_OK) {
        CHECK(!gguf_get_arr(f, "laya.words", GGUF_STRING, &kw) && kw->arr_n == 3, "quantize keeps laya.words");
        CHECK(!gguf_find_kv(f, "laya.calibration.prob") && !gguf_find_kv(f, "laya.calibration.hit"),
              "quantize drops the calibration");
        gguf_close(f);
    } else CHECK(0, "quantized annotated file opens");
    /* malformed inputs: a clear error, never a crash */
    static const char *const bad_words[] = {"two words here\n", "zebra 5x\n", "", "a\xff\xfe 3\n"};
    for (size_t i = 0; i < sizeof bad_words / sizeof bad_words[0]; i++) {
        write_str(bad, bad_words[i]);
        r = run_laya(NULL, "annotate %s %s --words %s", g_model, q, bad);
        CHECK(r.code != 0 && !r.crashed && strstr(r.err, "annotate"), "bad word list %zu: exit %d: %s", i, r.code, r.err);
        result_free(&r);
    }
    static const char *const bad_cal[] = {"0.5 0.5\n", "0.9 0.5\n0.1 0.6\n", "0.1 0.5\n0.9 0.4\n", "0.1 2\n0.9 3\n", "x y\n"};
    for (size_t i = 0; i < sizeof bad_cal / sizeof bad_cal[0]; i++) {
        write_str(bad, bad_cal[i]);
        r = run_laya(NULL, "annotate %s %s --calibration %s", g_model, q, bad);
        CHECK(r.code != 0 && !r.crashed && strstr(r.err, "annotate"), "bad calibration %zu: exit %d: %s", i, r.code, r.err);
        result_free(&r);
    }
    r = run_laya(NULL, "annotate %s %s", g_model, q);
    CHECK(r.code == 2, "annotate with nothing to add is a usage error: %d", r.code);
    result_free(&r);
    r = run_laya(NULL, "annotate %s %s --words %s/missing.tsv", g_model, q, g_dir);
    CHECK(r.code != 0 && !r.crashed && strstr(r.err, "cannot open"), "missing word list: %s", r.err);
    result_free(&r);
    unlink(w), unlink(c), unlink(out), unlink(q), unlink(bad);
}

/* laya-synth: the same seed gives the same file (the one every other test reads), another seed other
 * weights; bad arguments are usage errors; no output is left by a failure. */
static void test_synth(void) {
    char a[1300], b[1300];
    snprintf(a, sizeof a, "%s/s_a.gguf", g_dir);
    snprintf(b, sizeof b, "%s/s_b.gguf", g_dir);
    result r = run_synth("--shape laya-typing -o %s --type Q8_0 --seed 7", a);
    CHECK(r.code == 0 && !r.crashed, "synth exit %d: %s", r.code, r.err);
    result_free(&r);
    size_t na = 0, nb = 0;
    char *da = read_file(a, &na), *db = read_file(g_model, &nb);
    CHECK(da && db && na == nb && !memcmp(da, db, na), "the same seed, the same file");
    free(da);
    free(db);
    r = run_synth("--shape laya-typing -o %s --type Q8_0 --seed 8", b);
    db = read_file(b, &nb);
    da = read_file(a, &na);
    CHECK(r.code == 0 && da && db && na == nb && memcmp(da, db, na), "another seed, other weights");
    free(da);
    free(db);
    result_free(&r);
    unlink(a);
    unlink(b);
    static const char *bad[] = {
        "--shape nosuch -o %s", "--shape laya-typing", "--shape laya-typing -o %s --type Q6_K",
        "--shape laya-typing -o %s --seed -1", "--shape laya-typing -o %s --bogus", "--shape laya-typing -o",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[2000];
        snprintf(args, sizeof args, bad[i], a);
        r = run_bin(g_synth, NULL, args);
        CHECK(r.code > 0 && !r.crashed && strstr(r.err, "laya-synth"), "'laya-synth %s': exit %d, '%.200s'", args,
              r.code, r.err);
        result_free(&r);
    }
    r = run_synth("--shape laya-typing -o /nonexistent-dir/x.gguf --type Q8_0");
    CHECK(r.code == 1 && !r.crashed && strstr(r.err, "/nonexistent-dir/x.gguf"), "unwritable: %d '%.200s'", r.code,
          r.err);
    result_free(&r);
    struct stat sb;
    CHECK(stat(a, &sb) != 0, "no output file left by failed runs");
    r = run_synth("--help");
    CHECK(r.code == 0 && strstr(r.out, "usage: laya-synth") && strstr(r.out, "laya-typing"), "laya-synth --help");
    result_free(&r);
}

static void test_bench(void) {
    result r = run_laya(NULL, "bench -m %s --reps 1 --threads 1 --json", g_model);
    CHECK(r.code == 0 && !r.crashed, "bench exit %d: %s", r.code, r.err);
    json_doc *d = parse_out(&r);
    const json_value *v = json_root(d);
    static const char *pre[] = {"8", "64", "512"}, *dec[] = {"1", "2", "4", "8"};
    for (int i = 0; i < 3; i++) CHECK(jpath(v, "prefill_tok_s", pre[i]) && jpath(v, "prefill_tok_s", pre[i])->num > 0, "prefill %s", pre[i]);
    for (int i = 0; i < 4; i++) CHECK(jpath(v, "decode_ms", dec[i]) && jpath(v, "decode_ms", dec[i])->num > 0, "decode %s", dec[i]);
    CHECK(json_get(v, "load_ms") && json_get(v, "peak_rss_mb") && json_get(v, "peak_rss_mb")->num > 1, "load/rss");
    CHECK(!json_get(v, "floor"), "no floor without --floor");
    json_free(d);
    result_free(&r);

    /* --floor: per B the bytes a step reads (the weights, then more keys and values as B grows), the read
     * loop's time over them and the step's */
    r = run_laya(NULL, "bench -m %s --reps 1 --threads 2 --floor --json", g_model);
    CHECK(r.code == 0 && !r.crashed, "bench --floor exit %d: %s", r.code, r.err);
    d = parse_out(&r);
    v = json_root(d);
    double prev = 0;
    for (int i = 0; i < 4; i++) {
        const json_value *f = jpath(v, "floor", dec[i]);
        const json_value *mb = f ? json_get(f, "mb") : NULL, *fm = f ? json_get(f, "floor_ms") : NULL;
        const json_value *sm = f ? json_get(f, "step_ms") : NULL, *q = f ? json_get(f, "ratio") : NULL;
        const json_value *lo = f ? json_get(f, "ratio_min") : NULL, *hi = f ? json_get(f, "ratio_max") : NULL;
        CHECK(mb && fm && sm && q && lo && hi, "floor %s: fields", dec[i]);
        if (!(mb && fm && sm && q && lo && hi)) continue;
        CHECK(mb->num > 30 && mb->num > prev && mb->num < 60, "floor %s: %.2f MB after %.2f", dec[i], mb->num, prev);
        CHECK(fm->num > 0 && sm->num > 0 && lo->num > 0 && lo->num <= q->num && q->num <= hi->num, "floor %s: %g / %g ms, ratio %g (%g-%g)",
              dec[i], fm->num, sm->num, q->num, lo->num, hi->num);
        prev = mb->num;
    }
    json_free(d);
    result_free(&r);
}

/* Every one of these must fail with a message on stderr and a plain non-zero exit. */
static void test_errors(void) {
    char garbage[1200], trunc[1200], nonexist[1200], out[1200];
    snprintf(garbage, sizeof garbage, "%s/garbage.gguf", g_dir);
    snprintf(trunc, sizeof trunc, "%s/trunc.gguf", g_dir);
    snprintf(nonexist, sizeof nonexist, "%s/does-not-exist.gguf", g_dir);
    snprintf(out, sizeof out, "%s/out.gguf", g_dir);
    unsigned char junk[4096];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 2654435761u >> 13);
    memcpy(junk, "GGUF\3\0\0\0", 8); /* a plausible header followed by nonsense */
    write_file(garbage, junk, sizeof junk);
    size_t n = 0;
    char *whole = read_file(g_model, &n);
    write_file(trunc, whole, n / 3);
    free(whole);

    const char *cases[][2] = {
        {"", NULL},
        {"frobnicate", NULL},
        {"info -m", NULL},
        {"info -m %s --bogus", "model"},
        {"info -m %s", "nonexist"},
        {"info -m %s", "garbage"},
        {"info -m %s", "trunc"},
        {"info -m %s --json", "dir"},
        {"tokenize -m %s", "model"},
        {"tokenize -m %s -p x --jsonl", "model"},
        {"tokenize -m %s -p x", "garbage"},
        {"score -m %s", "model"},
        {"score -m %s --ids", "model"},
        {"score -m %s --ids 1,,2", "model"},
        {"score -m %s --ids -3", "model"},
        {"score -m %s --ids 99999999", "model"},
        {"score -m %s --ids 1,2 --top 0", "model"},
        {"score -m %s --ids 1,2", "trunc"},
        {"run -m %s", "model"},
        {"run -m %s --ids 1 -n -1", "model"},
        {"run -m %s --ids 1 -n abc", "model"},
        {"run -m %s -p hi --ids 1", "model"},
        {"run -m %s -p hi", "garbage"},
        {"bench -m %s --reps 0", "model"},
        {"bench -m %s --json", "nonexist"},
        {"bench --reps 0", NULL},
        {"quantize", NULL},
        {"quantize %s OUT Q5_K", "model"},
        {"quantize %s OUT bogus", "model"},
        {"quantize %s OUT Q8_0", "garbage"},
        {"quantize %s OUT Q8_0", "nonexist"},
        {"quantize %s OUT Q8_0 extra", "model"},
        {"synth --shape laya-typing -o OUT", NULL}, /* no such command: synthesis is build/laya-synth */
        {"bench -m %s --profile", "model"},         /* a profiling build instead: make profile */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *which = cases[i][1];
        const char *path = !which ? "" : !strcmp(which, "model") ? g_model : !strcmp(which, "garbage") ? garbage
                           : !strcmp(which, "trunc") ? trunc : !strcmp(which, "dir") ? g_dir : nonexist;
        char args[4000], tmp[2000];
        snprintf(tmp, sizeof tmp, cases[i][0], path);
        /* OUT stands for a scratch output path */
        char *o = strstr(tmp, "OUT");
        if (o) {
            *o = 0;
            snprintf(args, sizeof args, "%s%s%s", tmp, out, o + 3);
        } else {
            snprintf(args, sizeof args, "%s", tmp);
        }
        result r = run_laya(NULL, "%s", args);
        CHECK(r.code > 0 && !r.crashed && strlen(r.err) > 5, "'laya %s': exit %d, crashed %d, stderr '%.200s'", args,
              r.code, r.crashed, r.err);
        if (which && strcmp(which, "model") && strcmp(which, "dir"))
            CHECK(strstr(r.err, path) != NULL, "'laya %s': the message names the file: %.200s", args, r.err);
        result_free(&r);
    }
    struct stat sb;
    CHECK(stat(out, &sb) != 0, "no output file left by failed commands");
    unlink(out);
    unlink(garbage);
    unlink(trunc);

    static const char *cmds[] = {"info", "tokenize", "score", "run", "bench", "quantize", "annotate", "convert", "suggest", "eval", "type"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        result r = run_laya(NULL, "%s --help", cmds[i]);
        CHECK(r.code == 0 && strstr(r.out, "usage: laya"), "%s --help", cmds[i]);
        result_free(&r);
    }
    result r = run_laya(NULL, "--help");
    CHECK(r.code == 0 && strstr(r.out, "commands"), "laya --help");
    result_free(&r);
}

/* Without -m, commands use the shipped model (tests run from the repository root); $LAYA_MODEL overrides
 * it, and a missing default is a clear error. */
static void test_default_model(void) {
    result r = run_laya(NULL, "info --json");
    CHECK(r.code == 0 && strstr(r.out, "16384"), "laya info (default model): exit %d, '%.200s' '%.200s'", r.code,
          r.out, r.err);
    result_free(&r);
    setenv("LAYA_MODEL", "/nonexistent/model.gguf", 1);
    r = run_laya(NULL, "info");
    CHECK(r.code == 1 && !r.crashed && strstr(r.err, "/nonexistent/model.gguf"), "LAYA_MODEL missing: exit %d '%.200s'",
          r.code, r.err);
    result_free(&r);
    setenv("LAYA_MODEL", g_model, 1);
    r = run_laya(NULL, "info");
    CHECK(r.code == 0 && strstr(r.out, g_model), "LAYA_MODEL: exit %d '%.200s'", r.code, r.out);
    result_free(&r);
    unsetenv("LAYA_MODEL");
}

int main(int argc, char **argv) {
    (void)argc;
    /* argv[0] is BUILD/tests/test_cli: the binary under test is BUILD/laya, whatever BUILD is (asan too) */
    char build[1024];
    snprintf(build, sizeof build, "%s", argv[0]);
    char *s = strrchr(build, '/');
    if (s) *s = 0;
    s = strrchr(build, '/');
    if (s) *s = 0;
    else snprintf(build, sizeof build, ".");
    snprintf(g_laya, sizeof g_laya, "%s/laya", build);
    if (access(g_laya, X_OK)) {
        fprintf(stderr, "test_cli: %s not found (run make first)\n", g_laya);
        return 1;
    }
    snprintf(g_synth, sizeof g_synth, "%s/laya-synth", build);
    if (access(g_synth, X_OK)) {
        fprintf(stderr, "test_cli: %s not found (run make first)\n", g_synth);
        return 1;
    }
    snprintf(g_dir, sizeof g_dir, "%s/tests/cli_tmp_%d", build, (int)getpid());
    mkdir(g_dir, 0755);
    snprintf(g_model, sizeof g_model, "%s/typing_q8.gguf", g_dir);
    result sr = run_synth("--shape laya-typing -o %s --type Q8_0 --seed 7", g_model);
    CHECK(sr.code == 0 && !sr.crashed, "laya-synth: exit %d, %s", sr.code, sr.err);
    result_free(&sr);
    if (sr.code) return DONE("test_cli");
    char err[256];
    laya_model_params mp = laya_model_default_params();
    mp.vocab_only = 1;
    laya_model *m = NULL;
    laya_status st = laya_model_load(g_model, mp, &m, err, sizeof err);
    CHECK(st == LAYA_OK, "load: %s", err);
    if (st) return DONE("test_cli");

    test_info();
    test_tokenize(m);
    test_score_run();
    test_quantize();
    test_annotate();
    test_synth();
    test_bench();
    test_errors();
    test_default_model();

    laya_model_free(m);
    char p[1300];
    snprintf(p, sizeof p, "%s/in.jsonl", g_dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/stderr.txt", g_dir);
    unlink(p);
    unlink(g_model);
    rmdir(g_dir);
    return DONE("test_cli");
}
