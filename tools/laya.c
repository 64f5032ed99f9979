/* laya.c — the command line's entry point: subcommand dispatch, option parsing and the helpers the
 * subcommands share (cmd_model.c: info/tokenize/score/run, cmd_bench.c, cmd_files.c: quantize/annotate/
 * convert, cmd_session.c: suggest/type, eval/harness.c: eval).
 * Not here: any model logic — every command is a thin client of include/laya.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("laya: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "laya %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see 'laya %s --help')\n", cmd);
    va_end(ap);
    return CLI_USAGE;
}

double cli_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int parse_long(const char *s, long lo, long hi, long *out) {
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int parse_ids(const char *s, laya_token **ids, size_t *n) {
    size_t cap = 16, k = 0;
    laya_token *v = malloc(cap * sizeof *v);
    if (!v) return 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ') p++;
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > INT32_MAX) {
            free(v);
            return 0;
        }
        if (k == cap) {
            laya_token *nv = realloc(v, 2 * cap * sizeof *v);
            if (!nv) {
                free(v);
                return 0;
            }
            v = nv;
            cap *= 2;
        }
        v[k++] = (laya_token)x;
        p = end;
        while (*p == ' ') p++;
        if (*p == 0) break;
        if (*p != ',') {
            free(v);
            return 0;
        }
        p++;
    }
    *ids = v;
    *n = k;
    return 1;
}

int arg_help(argp *p) {
    const char *a = p->argv[p->i];
    return !strcmp(a, "-h") || !strcmp(a, "--help");
}

int arg_is(argp *p, const char *s, const char *l) {
    const char *a = p->argv[p->i];
    return (s && !strcmp(a, s)) || (l && !strcmp(a, l));
}

const char *arg_str(argp *p, const char *s, const char *l) {
    const char *a = p->argv[p->i];
    if (l) {
        size_t n = strlen(l);
        if (!strncmp(a, l, n) && a[n] == '=') return a + n + 1;
    }
    if (!arg_is(p, s, l)) return NULL;
    if (p->i + 1 >= p->argc) {
        p->bad = 1;
        cli_usage_error(p->cmd, "option %s needs a value", a);
        return NULL;
    }
    return p->argv[++p->i];
}

int arg_int(argp *p, const char *s, const char *l, long lo, long hi, long *out) {
    const char *name = p->argv[p->i];
    const char *v = arg_str(p, s, l);
    if (!v) return p->bad ? 1 : 0;
    if (!parse_long(v, lo, hi, out)) {
        p->bad = 1;
        cli_usage_error(p->cmd, "option %s: '%s' is not an integer in [%ld, %ld]", name, v, lo, hi);
    }
    return 1;
}

/* The model a command uses when -m is not given: $LAYA_MODEL, else ./models/laya-typing-q8_0.gguf, else the
 * same file beside the executable's repository (build/laya -> ../models/). NULL if none exists. */
const char *cli_default_model(char *buf, size_t cap) {
    const char *env = getenv("LAYA_MODEL");
    if (env && *env) return env;
    snprintf(buf, cap, "models/" CLI_DEFAULT_MODEL);
    if (access(buf, R_OK) == 0) return buf;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, cap, "%s/../models/" CLI_DEFAULT_MODEL, exe);
            if (access(buf, R_OK) == 0) return buf;
        }
    }
    return NULL;
}

laya_model *cli_load(const char *path, int32_t n_threads, int vocab_only) {
    static char defbuf[4200];
    if (!path && !(path = cli_default_model(defbuf, sizeof defbuf))) {
        cli_fail("no model: pass -m MODEL, set LAYA_MODEL, or run from the repository (models/" CLI_DEFAULT_MODEL ")");
        return NULL;
    }
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = n_threads;
    mp.vocab_only = vocab_only;
    const char *pk = getenv("LAYA_PACK"); /* LAYA_PACK=0: weights stay views of the file (A/B runs) */
    if (pk && !strcmp(pk, "0")) mp.pack_weights = -1;
    laya_model *m = NULL;
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_model_load(path, mp, &m, err, sizeof err);
    if (st || !m) {
        cli_fail("cannot load model '%s': %s", path, err[0] ? err : laya_status_str(st));
        laya_model_free(m);
        return NULL;
    }
    return m;
}

static void usage(FILE *out) {
    fputs("usage: laya <command> [options]   (laya <command> --help for details)\n"
          "\n"
          "commands:\n"
          "  info      -m MODEL [--json]              architecture, shapes, tensor types, tokenizer, memory\n"
          "  tokenize  -m MODEL (-p TEXT | --jsonl)   text to token ids\n"
          "  score     -m MODEL --ids 1,2,3 [--top K] [--json]   logits after each input token\n"
          "  run       -m MODEL (-p TEXT | --ids ..) -n N [--json]   greedy continuation\n"
          "  bench     -m MODEL [--threads N] [--reps R] [--json]   prefill and decode speed\n"
          "  quantize  IN.gguf OUT.gguf TYPE          re-encode weights (F32, F16, Q8_0, Q5_0/1, Q4_0/1, IQ4_NL)\n"
          "  annotate  IN.gguf OUT.gguf [--words F] [--calibration F]   add typing metadata\n"
          "  convert   MODEL_DIR OUT.gguf [--type T]  Hugging Face / MLX directory to GGUF\n"
          "  suggest   [-m MODEL] [--mode M] [-k 5] [--json] TEXT   typing candidates for TEXT\n"
          "  eval      [-m MODEL] --text FILE [-k 3] [--json]      keystroke savings, accuracy, latency\n"
          "  type      [-m MODEL] [--mode M]                      interactive typing demo (Tab accepts)\n",
          out);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    const char *c = argv[1];
    if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) {
        usage(stdout);
        return CLI_OK;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"info", cmd_info},   {"tokenize", cmd_tokenize}, {"score", cmd_score}, {"run", cmd_run},
                {"bench", cmd_bench}, {"quantize", cmd_quantize}, {"annotate", cmd_annotate}, {"convert", cmd_convert},
                {"suggest", cmd_suggest}, {"eval", cmd_eval}, {"type", cmd_type}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(c, cmds[i].name)) return cmds[i].fn(argc - 2, argv + 2);
    fprintf(stderr, "laya: unknown command '%s'\n", c);
    usage(stderr);
    return CLI_USAGE;
}
