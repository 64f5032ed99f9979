/* cmd_model.c — the subcommands that read a model: info, tokenize, score (logits of given ids) and run
 * (greedy continuation). Their --json / --jsonl output is a stable machine interface that other tools
 * and tests parse. Not here: sampling beyond argmax, chat templates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_json.h"

#define HELP_INFO                                                                                         \
    "usage: laya info [-m MODEL] [--json]\n"                                                                \
    "Prints the architecture, shapes, tensor types (count per type), tokenizer, memory use and the CPU\n" \
    "kernel set. --json prints one object:\n"                                                             \
    "  {\"path\",\"name\",\"arch\",\"shape\":{n_vocab,n_embd,n_layer,n_head,n_head_kv,head_dim,n_ff,\n"  \
    "   n_ctx_train,rope_theta,norm_eps,rope_neox,tied_output,has_qkv_bias,has_qk_norm},\"n_params\",\n"  \
    "   \"n_tensors\",\"tensor_types\":{TYPE:count},\"tokenizer\":{model,pre,n_vocab,bos,eos,add_bos},\n" \
    "   \"memory\":{file_bytes,weight_bytes,packed_bytes,kv_bytes_per_pos},\"cpu_backend\"}\n"                         \
    "kv_bytes_per_pos counts keys and values of every layer for one position in an F32 cache.\n"

#define HELP_TOKENIZE                                                                                    \
    "usage: laya tokenize [-m MODEL] (-p TEXT | --jsonl)\n"                                                \
    "  -p TEXT   print the ids of TEXT, comma-separated (usable as --ids)\n"                             \
    "  --jsonl   read one JSON string per line on stdin, write one JSON array of ids per line\n"         \
    "No BOS is added; special-token text such as <|endoftext|> is matched. A malformed line stops\n"     \
    "with an error naming the line number.\n"

#define HELP_SCORE                                                                                       \
    "usage: laya score [-m MODEL] --ids 1,2,3 [--top K] [--json] [--threads N]\n"                          \
    "Decodes the ids as one batch and reports, after each input token, the K highest logits (ties by\n" \
    "lower id; K defaults to 10) and the log-sum-exp of all logits. --json prints\n"                     \
    "  {\"positions\":[{\"top_ids\":[...],\"top_logits\":[...],\"logsumexp\":x}, ...]}\n"

#define HELP_RUN                                                                                         \
    "usage: laya run [-m MODEL] (-p TEXT | --ids 1,2,3) [-n N] [--json] [--threads N]\n"                   \
    "Greedy continuation (argmax, ties to the lower id) of at most N tokens (default 32), stopping at\n" \
    "EOS (not included). -p text is tokenized with special tokens matched and BOS prepended when the\n"  \
    "model asks for it; --ids are used as given. Without --json the text is streamed; --json prints\n"   \
    "  {\"ids\":[generated ids],\"text\":\"their decoded text\"}\n"

/* Scans the options shared by the model commands. Unknown arguments are usage errors. */
typedef struct model_opts {
    const char *model, *prompt, *ids;
    int json, jsonl;
    long top, n, threads;
} model_opts;

static int scan(const char *cmd, const char *help, int argc, char **argv, model_opts *o, const char *allowed) {
    argp p = {cmd, argc, argv, 0, 0};
    for (p.i = 0; p.i < argc; p.i++) {
        const char *v;
        if (arg_help(&p)) {
            fputs(help, stdout);
            exit(CLI_OK);
        }
        if ((v = arg_str(&p, "-m", "--model"))) o->model = v;
        else if (strchr(allowed, 'p') && (v = arg_str(&p, "-p", "--prompt"))) o->prompt = v;
        else if (strchr(allowed, 'i') && (v = arg_str(&p, NULL, "--ids"))) o->ids = v;
        else if (strchr(allowed, 'j') && arg_is(&p, NULL, "--json")) o->json = 1;
        else if (strchr(allowed, 'l') && arg_is(&p, NULL, "--jsonl")) o->jsonl = 1;
        else if (strchr(allowed, 'k') && arg_int(&p, "-k", "--top", 1, INT32_MAX, &o->top)) {}
        else if (strchr(allowed, 'n') && arg_int(&p, "-n", "--n-predict", 0, 1 << 24, &o->n)) {}
        else if (strchr(allowed, 't') && arg_int(&p, "-t", "--threads", 0, 64, &o->threads)) {}
        else if (!p.bad) return cli_usage_error(cmd, "unknown argument '%s'", argv[p.i]);
        if (p.bad) return CLI_USAGE;
    }
    static char defbuf[4200];
    if (!o->model) o->model = cli_default_model(defbuf, sizeof defbuf); /* NULL: cli_load says so */
    return CLI_OK;
}

/* Writes the buffer to stdout; reports a failed write (a closed pipe, a full disk). */
static int emit(cj_buf *b) {
    if (b->oom) return cli_fail("out of memory");
    if (b->len && fwrite(b->p, 1, b->len, stdout) != b->len) return cli_fail("writing to stdout failed");
    cj_clear(b);
    return CLI_OK;
}

/* ---------------------------------------------------------------------------------------------------
 * info */

int cmd_info(int argc, char **argv) {
    model_opts o = {0};
    int rc = scan("info", HELP_INFO, argc, argv, &o, "j");
    if (rc) return rc;
    laya_model *m = cli_load(o.model, 1, 0);
    if (!m) return CLI_FAIL;
    laya_model_info mi;
    laya_model_get_info(m, &mi);

    /* count tensors per type string */
    const char *types[64];
    int counts[64], n_types = 0, n_tensors = 0;
    const char *name, *type;
    int64_t ne[4];
    int32_t nd;
    while (laya_model_tensor(m, n_tensors, &name, &type, ne, &nd) == LAYA_OK) {
        n_tensors++;
        int k = 0;
        while (k < n_types && strcmp(types[k], type)) k++;
        if (k == n_types && n_types < 64) {
            types[n_types] = type;
            counts[n_types++] = 0;
        }
        if (k < n_types) counts[k]++;
    }
    uint64_t kv_per_pos = 2ull * (uint64_t)mi.n_layer * (uint64_t)mi.n_head_kv * (uint64_t)mi.head_dim * 4;
    const char *backend = laya_cpu_backend();
    int32_t nv_tok = laya_n_vocab(m);

    cj_buf b;
    cj_init(&b);
    if (o.json) {
        cj_cstr(&b, "{\"path\":");
        cj_str(&b, o.model, strlen(o.model));
        cj_cstr(&b, ",\"name\":");
        cj_str(&b, mi.name ? mi.name : "", mi.name ? strlen(mi.name) : 0);
        cj_cstr(&b, ",\"arch\":");
        cj_str(&b, mi.arch, strlen(mi.arch));
        cj_printf(&b,
                  ",\"shape\":{\"n_vocab\":%d,\"n_embd\":%d,\"n_layer\":%d,\"n_head\":%d,\"n_head_kv\":%d,"
                  "\"head_dim\":%d,\"n_ff\":%d,\"n_ctx_train\":%d,\"rope_theta\":",
                  mi.n_vocab, mi.n_embd, mi.n_layer, mi.n_head, mi.n_head_kv, mi.head_dim, mi.n_ff,
                  mi.n_ctx_train);
        cj_f32(&b, mi.rope_theta);
        cj_cstr(&b, ",\"norm_eps\":");
        cj_f32(&b, mi.norm_eps);
        cj_printf(&b, ",\"rope_neox\":%s,\"tied_output\":%s,\"has_qkv_bias\":%s,\"has_qk_norm\":%s}",
                  mi.rope_neox ? "true" : "false", mi.tied_output ? "true" : "false",
                  mi.has_qkv_bias ? "true" : "false", mi.has_qk_norm ? "true" : "false");
        cj_printf(&b, ",\"n_params\":%llu,\"n_tensors\":%d,\"tensor_types\":{",
                  (unsigned long long)mi.n_params, n_tensors);
        for (int k = 0; k < n_types; k++) {
            if (k) cj_raw(&b, ",", 1);
            cj_str(&b, types[k], strlen(types[k]));
            cj_printf(&b, ":%d", counts[k]);
        }
        cj_cstr(&b, "},\"tokenizer\":{\"model\":");
        cj_str(&b, mi.tok_model ? mi.tok_model : "", mi.tok_model ? strlen(mi.tok_model) : 0);
        cj_cstr(&b, ",\"pre\":");
        cj_str(&b, mi.tok_pre ? mi.tok_pre : "", mi.tok_pre ? strlen(mi.tok_pre) : 0);
        cj_printf(&b, ",\"n_vocab\":%d,\"bos\":%d,\"eos\":%d,\"add_bos\":%s}", nv_tok, mi.bos, mi.eos,
                  mi.add_bos ? "true" : "false");
        cj_printf(&b, ",\"memory\":{\"file_bytes\":%llu,\"weight_bytes\":%llu,\"packed_bytes\":%llu,\"kv_bytes_per_pos\":%llu}",
                  (unsigned long long)mi.file_bytes, (unsigned long long)mi.weight_bytes,
                  (unsigned long long)mi.packed_bytes,
                  (unsigned long long)kv_per_pos);
        cj_cstr(&b, ",\"cpu_backend\":");
        cj_str(&b, backend, strlen(backend));
        cj_cstr(&b, "}\n");
    } else {
        cj_printf(&b, "model:      %s\n", o.model);
        cj_printf(&b, "name:       %s\n", mi.name && mi.name[0] ? mi.name : "(none)");
        cj_printf(&b, "arch:       %s (rope %s%s%s%s)\n", mi.arch, mi.rope_neox ? "neox" : "normal",
                  mi.tied_output ? ", tied output" : "", mi.has_qkv_bias ? ", qkv bias" : "",
                  mi.has_qk_norm ? ", q/k norm" : "");
        cj_printf(&b,
                  "shape:      %d layers, embd %d, %d heads (%d kv) of %d, ff %d, vocab %d, ctx %d\n",
                  mi.n_layer, mi.n_embd, mi.n_head, mi.n_head_kv, mi.head_dim, mi.n_ff, mi.n_vocab,
                  mi.n_ctx_train);
        cj_printf(&b, "rope:       theta %g, norm eps %g\n", mi.rope_theta, mi.norm_eps);
        cj_printf(&b, "params:     %.2f M\n", (double)mi.n_params / 1e6);
        cj_printf(&b, "tensors:    %d (", n_tensors);
        for (int k = 0; k < n_types; k++) cj_printf(&b, "%s%s: %d", k ? ", " : "", types[k], counts[k]);
        cj_cstr(&b, ")\n");
        cj_printf(&b, "tokenizer:  %s, pre %s, %d tokens, bos %d, eos %d, add_bos %d\n",
                  mi.tok_model ? mi.tok_model : "?", mi.tok_pre ? mi.tok_pre : "?", nv_tok, mi.bos, mi.eos,
                  mi.add_bos);
        cj_printf(&b, "memory:     file %.1f MiB, weights %.1f MiB, KV %.1f KiB per position (F32; %.1f F16)\n",
                  (double)mi.file_bytes / 1048576.0, (double)mi.weight_bytes / 1048576.0,
                  (double)kv_per_pos / 1024.0, (double)kv_per_pos / 2048.0);
        if (mi.packed_bytes)
            cj_printf(&b, "packed:     %.1f MiB of block-quantized matrices copied into the kernels' order (LAYA_PACK=0: none)\n",
                      (double)mi.packed_bytes / 1048576.0);
        cj_printf(&b, "cpu:        %s\n", backend);
    }
    rc = emit(&b);
    cj_free(&b);
    laya_model_free(m);
    return rc;
}

/* ---------------------------------------------------------------------------------------------------
 * tokenize */

/* Tokenize into *ids (grown as needed). */
static laya_status tokenize(const laya_model *m, const char *text, size_t len, laya_token **ids, size_t *cap,
                            size_t *n) {
    for (int attempt = 0; attempt < 2; attempt++) {
        laya_status st = laya_tokenize(m, text, len, 1, *ids, *cap, n);
        if (st != LAYA_ERR_CAPACITY) return st;
        size_t want = *n + 16;
        laya_token *nv = realloc(*ids, want * sizeof *nv);
        if (!nv) return LAYA_ERR_NOMEM;
        *ids = nv;
        *cap = want;
    }
    return LAYA_ERR_CAPACITY;
}

static void put_ids(cj_buf *b, const laya_token *ids, size_t n) {
    cj_raw(b, "[", 1);
    for (size_t i = 0; i < n; i++) cj_printf(b, i ? ",%d" : "%d", ids[i]);
    cj_raw(b, "]", 1);
}

int cmd_tokenize(int argc, char **argv) {
    model_opts o = {0};
    int rc = scan("tokenize", HELP_TOKENIZE, argc, argv, &o, "pl");
    if (rc) return rc;
    if (!o.prompt == !o.jsonl) return cli_usage_error("tokenize", "give exactly one of -p TEXT and --jsonl");
    laya_model *m = cli_load(o.model, 1, 1);
    if (!m) return CLI_FAIL;
    size_t cap = 256, n = 0;
    laya_token *ids = malloc(cap * sizeof *ids);
    cj_buf b;
    cj_init(&b);
    rc = CLI_OK;
    if (!ids) {
        rc = cli_fail("out of memory");
    } else if (o.prompt) {
        laya_status st = tokenize(m, o.prompt, strlen(o.prompt), &ids, &cap, &n);
        if (st) rc = cli_fail("tokenize: %s", laya_status_str(st));
        for (size_t i = 0; !rc && i < n; i++) cj_printf(&b, i ? ",%d" : "%d", ids[i]);
        if (!rc) {
            cj_raw(&b, "\n", 1);
            rc = emit(&b);
        }
    } else {
        char *line = NULL;
        size_t line_cap = 0;
        ssize_t len;
        for (long lineno = 1; !rc && (len = getline(&line, &line_cap, stdin)) >= 0; lineno++) {
            size_t l = (size_t)len;
            if (l && line[l - 1] == '\n') l--;
            if (l && line[l - 1] == '\r') l--;
            char *str = NULL, err[256];
            size_t str_len = 0;
            if (!cj_read_string(line, l, &str, &str_len, err, sizeof err)) {
                rc = cli_fail("stdin line %ld%s%s", lineno, strncmp(err, "column ", 7) ? ": " : ", ", err);
                break;
            }
            laya_status st = tokenize(m, str, str_len, &ids, &cap, &n);
            if (st) rc = cli_fail("stdin line %ld: tokenize: %s", lineno, laya_status_str(st));
            free(str);
            if (rc) break;
            put_ids(&b, ids, n);
            cj_raw(&b, "\n", 1);
            if (b.len > (1 << 16)) rc = emit(&b);
        }
        free(line);
        if (!rc && ferror(stdin)) rc = cli_fail("reading stdin failed");
        /* lines before a bad one still come out, so a caller can see how far it got */
        int rc2 = emit(&b);
        if (!rc) rc = rc2;
    }
    if (!rc && fflush(stdout)) rc = cli_fail("writing to stdout failed");
    free(ids);
    cj_free(&b);
    laya_model_free(m);
    return rc;
}

/* ---------------------------------------------------------------------------------------------------
 * score */

typedef struct scored { float v; int32_t id; } scored;

/* Higher logit first; ties to the lower id. NaN sorts last. */
static int better(float a, int32_t ia, float b, int32_t ib) {
    if (a != a) return 0;
    if (b != b) return 1;
    return a > b || (a == b && ia < ib);
}

static int cmp_scored(const void *x, const void *y) {
    const scored *a = x, *b = y;
    return better(a->v, a->id, b->v, b->id) ? -1 : better(b->v, b->id, a->v, a->id) ? 1 : 0;
}

/* The k best of n logits into out (sorted). k <= n. */
static void top_k(const float *logits, int32_t n, int32_t k, scored *out, scored *all) {
    if (k <= 64) {
        int32_t have = 0;
        for (int32_t i = 0; i < n; i++) {
            if (have == k && !better(logits[i], i, out[k - 1].v, out[k - 1].id)) continue;
            int32_t j = have < k ? have++ : k - 1;
            while (j > 0 && better(logits[i], i, out[j - 1].v, out[j - 1].id)) {
                out[j] = out[j - 1];
                j--;
            }
            out[j] = (scored){logits[i], i};
        }
        return;
    }
    for (int32_t i = 0; i < n; i++) all[i] = (scored){logits[i], i};
    qsort(all, (size_t)n, sizeof *all, cmp_scored);
    memcpy(out, all, (size_t)k * sizeof *out);
}

static double logsumexp(const float *x, int32_t n) {
    double mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (x[i] > mx) mx = x[i];
    if (!isfinite(mx)) return mx;
    double s = 0;
    for (int32_t i = 0; i < n; i++) s += exp((double)x[i] - mx);
    return mx + log(s);
}

static laya_context *make_context(const laya_model *m, int32_t n_seq, int32_t kv, int32_t batch, int32_t logits) {
    laya_context_params cp = laya_context_default_params();
    cp.n_seq = n_seq;
    cp.max_kv_size = kv;
    cp.max_batch = batch;
    cp.max_logits = logits;
    laya_context *c = NULL;
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_context_create(m, cp, &c, err, sizeof err);
    if (st || !c) {
        cli_fail("cannot create a context: %s", err[0] ? err : laya_status_str(st));
        laya_context_free(c);
        return NULL;
    }
    return c;
}

static int check_ids(const laya_model *m, const laya_token *ids, size_t n) {
    int32_t nv = laya_n_vocab(m);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= nv) return cli_fail("id %d (position %zu) is out of range [0, %d)", ids[i], i, nv);
    return CLI_OK;
}

int cmd_score(int argc, char **argv) {
    model_opts o = {.top = 10};
    int rc = scan("score", HELP_SCORE, argc, argv, &o, "ijkt");
    if (rc) return rc;
    if (!o.ids) return cli_usage_error("score", "missing --ids");
    laya_token *ids = NULL;
    size_t n = 0;
    if (!parse_ids(o.ids, &ids, &n) || n == 0 || n > INT32_MAX / 2) {
        free(ids);
        return cli_usage_error("score", "--ids must be a comma-separated list of non-negative integers");
    }
    laya_model *m = cli_load(o.model, (int32_t)o.threads, 0);
    laya_context *c = NULL;
    scored *top = NULL, *all = NULL;
    int8_t *want = NULL;
    int32_t *seq = NULL;
    cj_buf b;
    cj_init(&b);
    if (!m) {
        rc = CLI_FAIL;
        goto done;
    }
    if ((rc = check_ids(m, ids, n))) goto done;
    int32_t nv = laya_n_vocab(m), k = (int32_t)CLI_MIN(o.top, nv);
    if (!(c = make_context(m, 1, (int32_t)n, (int32_t)n, (int32_t)n))) {
        rc = CLI_FAIL;
        goto done;
    }
    top = malloc((size_t)k * sizeof *top);
    all = malloc((size_t)nv * sizeof *all);
    want = malloc(n);
    seq = calloc(n, sizeof *seq);
    if (!top || !all || !want || !seq) {
        rc = cli_fail("out of memory");
        goto done;
    }
    memset(want, 1, n);
    laya_batch batch = {(int32_t)n, ids, seq, want};
    laya_status st = laya_decode(c, batch);
    if (st) {
        rc = cli_fail("decode: %s", laya_context_error(c));
        goto done;
    }
    if (o.json) cj_cstr(&b, "{\"positions\":[");
    for (size_t i = 0; i < n; i++) {
        const float *lg = laya_get_logits(c, (int32_t)i);
        if (!lg) {
            rc = cli_fail("no logits for position %zu", i);
            goto done;
        }
        top_k(lg, nv, k, top, all);
        double lse = logsumexp(lg, nv);
        if (o.json) {
            cj_cstr(&b, i ? ",{\"top_ids\":[" : "{\"top_ids\":[");
            for (int32_t j = 0; j < k; j++) cj_printf(&b, j ? ",%d" : "%d", top[j].id);
            cj_cstr(&b, "],\"top_logits\":[");
            for (int32_t j = 0; j < k; j++) {
                if (j) cj_raw(&b, ",", 1);
                cj_f32(&b, top[j].v);
            }
            cj_cstr(&b, "],\"logsumexp\":");
            cj_num(&b, lse);
            cj_raw(&b, "}", 1);
        } else {
            cj_printf(&b, "pos %zu id %d  logsumexp %.7g  top:", i, ids[i], lse);
            for (int32_t j = 0; j < k; j++) {
                size_t pl = 0;
                const char *piece = laya_token_piece(m, top[j].id, &pl);
                cj_printf(&b, "  %d ", top[j].id);
                cj_str(&b, piece ? piece : "", piece ? pl : 0);
                cj_printf(&b, " %.7g", top[j].v);
            }
            cj_raw(&b, "\n", 1);
        }
    }
    if (o.json) cj_cstr(&b, "]}\n");
    rc = emit(&b);
done:
    cj_free(&b);
    free(top);
    free(all);
    free(want);
    free(seq);
    free(ids);
    laya_context_free(c);
    laya_model_free(m);
    return rc;
}

/* ---------------------------------------------------------------------------------------------------
 * run */

/* Length of the longest prefix of s that does not end inside a UTF-8 sequence, so streamed output never
 * splits a character that later tokens complete. */
static size_t complete_prefix(const char *s, size_t n) {
    for (size_t back = 1; back <= 4 && back <= n; back++) {
        unsigned char c = (unsigned char)s[n - back];
        if ((c & 0xc0) == 0x80) continue; /* continuation byte: keep looking for the lead */
        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return need > back ? n - back : n;
    }
    return n;
}

static laya_status detok(const laya_model *m, const laya_token *ids, size_t n, int replace, char **buf,
                         size_t *cap, size_t *len) {
    for (int attempt = 0; attempt < 2; attempt++) {
        laya_status st = laya_detokenize(m, ids, n, 0, replace, *buf, *cap, len);
        if (st != LAYA_ERR_CAPACITY) return st;
        char *nb = realloc(*buf, *len + 64);
        if (!nb) return LAYA_ERR_NOMEM;
        *buf = nb;
        *cap = *len + 64;
    }
    return LAYA_ERR_CAPACITY;
}

int cmd_run(int argc, char **argv) {
    model_opts o = {.n = 32};
    int rc = scan("run", HELP_RUN, argc, argv, &o, "pijnt");
    if (rc) return rc;
    if (!o.prompt == !o.ids) return cli_usage_error("run", "give exactly one of -p TEXT and --ids");
    laya_token *prompt = NULL, *gen = NULL;
    size_t n_prompt = 0, n_gen = 0;
    if (o.ids && (!parse_ids(o.ids, &prompt, &n_prompt) || n_prompt == 0)) {
        free(prompt);
        return cli_usage_error("run", "--ids must be a comma-separated list of non-negative integers");
    }
    laya_model *m = cli_load(o.model, (int32_t)o.threads, 0);
    laya_context *c = NULL;
    char *text = NULL;
    size_t text_cap = 0, text_len = 0, printed = 0;
    cj_buf b;
    cj_init(&b);
    if (!m) {
        rc = CLI_FAIL;
        goto done;
    }
    laya_model_info mi;
    laya_model_get_info(m, &mi);
    if (o.prompt) {
        size_t bos = mi.add_bos && mi.bos >= 0, cap = 64, nt = 0;
        laya_token *body = malloc(cap * sizeof *body);
        laya_status st = body ? tokenize(m, o.prompt, strlen(o.prompt), &body, &cap, &nt) : LAYA_ERR_NOMEM;
        if (!st && !(prompt = malloc((nt + bos) * sizeof *prompt + 1))) st = LAYA_ERR_NOMEM;
        if (st) {
            free(body);
            rc = cli_fail("tokenize: %s", laya_status_str(st));
            goto done;
        }
        if (bos) prompt[0] = mi.bos;
        if (nt) memcpy(prompt + bos, body, nt * sizeof *body);
        free(body);
        n_prompt = nt + bos;
    }
    if (n_prompt == 0) {
        rc = cli_fail("the prompt is empty (no tokens)");
        goto done;
    }
    if ((rc = check_ids(m, prompt, n_prompt))) goto done;
    if (n_prompt + (size_t)o.n > INT32_MAX / 2) {
        rc = cli_fail("prompt plus -n is too long");
        goto done;
    }
    if (!(c = make_context(m, 1, (int32_t)(n_prompt + (size_t)o.n), (int32_t)n_prompt, 1))) {
        rc = CLI_FAIL;
        goto done;
    }
    if (!(gen = malloc(((size_t)o.n + 1) * sizeof *gen))) {
        rc = cli_fail("out of memory");
        goto done;
    }
    int32_t nv = laya_n_vocab(m);
    int32_t *seq = calloc(n_prompt, sizeof *seq);
    if (!seq) {
        rc = cli_fail("out of memory");
        goto done;
    }
    laya_batch batch = {(int32_t)n_prompt, prompt, seq, NULL};
    laya_status st = o.n > 0 ? laya_decode(c, batch) : LAYA_OK;
    int32_t last = (int32_t)n_prompt - 1;
    while (!st && n_gen < (size_t)o.n) {
        const float *lg = laya_get_logits(c, last);
        if (!lg) {
            free(seq);
            rc = cli_fail("no logits after the last token");
            goto done;
        }
        int32_t best = 0;
        for (int32_t i = 1; i < nv; i++)
            if (lg[i] > lg[best]) best = i; /* strict: ties keep the lower id */
        if (best == mi.eos) break;
        gen[n_gen++] = best;
        if (!o.json) {
            if ((st = detok(m, gen, n_gen, 0, &text, &text_cap, &text_len))) break;
            size_t upto = complete_prefix(text, text_len);
            if (upto > printed) {
                fwrite(text + printed, 1, upto - printed, stdout);
                fflush(stdout);
                printed = upto;
            }
        }
        if (n_gen == (size_t)o.n) break;
        int32_t zero = 0;
        laya_batch one = {1, &gen[n_gen - 1], &zero, NULL};
        st = laya_decode(c, one);
        last = 0;
    }
    free(seq);
    if (st) {
        rc = cli_fail("%s", laya_context_error(c)[0] ? laya_context_error(c) : laya_status_str(st));
        goto done;
    }
    if (o.json) {
        if ((st = detok(m, gen, n_gen, 1, &text, &text_cap, &text_len))) {
            rc = cli_fail("detokenize: %s", laya_status_str(st));
            goto done;
        }
        cj_cstr(&b, "{\"ids\":");
        put_ids(&b, gen, n_gen);
        cj_cstr(&b, ",\"text\":");
        cj_str(&b, text ? text : "", text_len);
        cj_cstr(&b, "}\n");
        rc = emit(&b);
    } else {
        if (text_len > printed) fwrite(text + printed, 1, text_len - printed, stdout);
        fputc('\n', stdout);
    }
    if (!rc && fflush(stdout)) rc = cli_fail("writing to stdout failed");
done:
    cj_free(&b);
    free(prompt);
    free(gen);
    free(text);
    laya_context_free(c);
    laya_model_free(m);
    return rc;
}
