/* cmd_session.c — the typing commands: suggest (one decision), eval (a simulated user typing a file:
 * keystroke savings, next-word accuracy, latency; optionally fits the confidence calibration) and type
 * (an interactive terminal demo). Thin clients of the laya_session API. Not here: any decision logic. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "base/json.h"

int cmd_suggest(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_type(int argc, char **argv);

#define DEFAULT_MODEL CLI_DEFAULT_MODEL

#define HELP_COMMON                                                                                          \
    "  -m MODEL          model file or directory; default: $LAYA_MODEL, ./models/" DEFAULT_MODEL ", or\n"    \
    "                    <directory of the laya executable>/../models/" DEFAULT_MODEL "\n"                   \
    "  --mode M          text (default), code or shell\n"                                                    \
    "  -k K              candidates (1..16)\n"                                                               \
    "  --max-tokens N    tokens per candidate (default 5)\n"                                                 \
    "  --beam B          hypotheses kept per step (default max(k, 8))\n"                                     \
    "  --max-kv N        positions per sequence slot (default 320)\n"                                        \
    "  --kv T            KV cache type: f16 (default: half the memory) or f32\n"                             \
    "  --max-text N      bytes of text before the cursor the model sees (default 1024)\n"                    \
    "  --focused         constrained steps compute only the allowed tokens' logits (faster, renormalized)\n" \
    "  --threads N       worker threads (default 2)\n"                                                       \
    "  --calibration F   confidence map (lines \"prob hit\"); default MODEL.calib when it exists\n"         \
    "  --user-dict F     user dictionary file (boosts words the user added or accepted)\n"                 \
    "  --doc-cache N     bytes of the text before the cursor whose words are a cache model (default 65536;\n" \
    "                    0: off)\n"                                                                       \
    "  --min-prob P      drop candidates less likely than P (default 0: keep all)\n"                        \
    "  --deadline MS     a decision returns what it has after MS milliseconds (default 0: none)\n"

#define HELP_SUGGEST                                                                                         \
    "usage: laya suggest [-m MODEL] [--mode text|code|shell] [-k 5] [--json] [--after TEXT]\n"              \
    "                    [--context TEXT] TEXT\n"                                                            \
    "TEXT is everything before the cursor (--after: what follows it; --context: history lines in shell\n"   \
    "mode). --json prints\n"                                                                                 \
    "  {\"candidates\":[{\"text\":\"fox\",\"replace\":2,\"kind\":\"complete\",\"prob\":p,\"confidence\":c},\n" \
    "   ...],\"latency_ms\":x}\n"                                                                            \
    "replace counts the characters before the cursor that text replaces; kind is complete, next or\n"       \
    "correct; latency_ms is set_text + suggest on a warmed-up session.\n" HELP_COMMON

#define HELP_EVAL                                                                                            \
    "usage: laya eval [-m MODEL] --text FILE [-k 3] [--mode M] [--json] [--from N] [--max-chars N]\n"       \
    "                 [--count presage|chars] [--fit-calibration OUT] [--dump-probs F] [--learn]\n"       \
    "                 [--idle MS]\n"                                                                        \
    "Simulates a user typing FILE one character at a time. Before each character of a word the session\n" \
    "is asked for k candidates; if the word is among them, taking it costs one keystroke and completes\n"  \
    "the word. KSR = 1 - keystrokes / characters. --count presage (default) counts as Presage's\n"        \
    "presage_simulator: a word is a run of characters other than blanks and ASCII punctuation, it\n"      \
    "costs its length plus one (the space) without prediction, taking a candidate also inserts the\n"    \
    "space, and punctuation is neither typed nor counted. --count chars counts every character of\n"     \
    "FILE, punctuation and spaces included, and a taken candidate is followed by a typed space.\n"       \
    "next_word_top1/top3: at each word start, the share of words that are the first / among the first 3\n" \
    "candidates given all text before them. --json prints\n"                                               \
    "  {\"chars\":N,\"keystrokes\":M,\"ksr\":x,\"next_word_top1\":a,\"next_word_top3\":b,\n"                \
    "   \"latency_ms\":{\"p50\":..,\"p95\":..,\"p99\":..,\"max\":..}}\n"                                    \
    "latency is per decision (set_text + suggest). --fit-calibration writes the isotonic (PAV) map from\n" \
    "every shown candidate's prob to whether it was the word typed, as lines \"prob hit\" (corrections\n"  \
    "are left out: they are about the word before). --dump-probs F writes \"prob confidence hit\" for\n"  \
    "each of those candidates (a reliability plot: train/eval/reliability.py).\n"                          \
    "--learn: the simulated user's words are learned as they are finished (a fresh user dictionary in a\n" \
    "temporary file, as Presage's simulator learns online); without it nothing is learned.\n"             \
    "--idle MS: between keystrokes the simulated user leaves MS milliseconds, which the session spends on\n" \
    "laya_session_prefetch (the likeliest next texts decided ahead); latency still counts set_text +\n"  \
    "suggest only, the time the user waits (default 0: keystrokes back to back).\n"                      \
    "--from N: typing starts at the first word at or after byte N, the text before it already there (not\n" \
    "counted); --max-chars N: the file ends at byte N.\n" HELP_COMMON

#define HELP_TYPE                                                                                            \
    "usage: laya type [-m MODEL] [--mode M] [-k 5]\n"                                                        \
    "An interactive demo in the terminal: type, and the candidates appear under the line with the\n"       \
    "decision's latency. Tab takes the first candidate, Backspace deletes, Enter starts a new line (its\n" \
    "text stays context), Ctrl-U clears, Ctrl-C or Ctrl-D quits.\n" HELP_COMMON

typedef struct sess_opts {
    const char *model, *mode, *text_file, *after, *context, *calib, *fit_out, *user_dict, *text, *min_prob, *count, *dump_out, *deadline, *idle, *kv;
    long k, max_tokens, threads, max_chars, from, beam, max_kv, max_text, doc_cache;
    int doc_cache_set;
    int json, learn, focused;
} sess_opts;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int parse_opts(const char *cmd, const char *help, int argc, char **argv, sess_opts *o) {
    argp p = {cmd, argc, argv, 0, 0};
    for (p.i = 0; p.i < argc; p.i++) {
        const char *v;
        if (arg_help(&p)) {
            fputs(help, stdout);
            exit(CLI_OK);
        }
        if ((v = arg_str(&p, "-m", "--model"))) o->model = v;
        else if ((v = arg_str(&p, NULL, "--mode"))) o->mode = v;
        else if ((v = arg_str(&p, NULL, "--kv"))) o->kv = v;
        else if ((v = arg_str(&p, NULL, "--text"))) o->text_file = v;
        else if ((v = arg_str(&p, NULL, "--after"))) o->after = v;
        else if ((v = arg_str(&p, NULL, "--context"))) o->context = v;
        else if ((v = arg_str(&p, NULL, "--calibration"))) o->calib = v;
        else if ((v = arg_str(&p, NULL, "--fit-calibration"))) o->fit_out = v;
        else if ((v = arg_str(&p, NULL, "--user-dict"))) o->user_dict = v;
        else if ((v = arg_str(&p, NULL, "--min-prob"))) o->min_prob = v;
        else if ((v = arg_str(&p, NULL, "--deadline"))) o->deadline = v;
        else if ((v = arg_str(&p, NULL, "--idle"))) o->idle = v;
        else if ((v = arg_str(&p, NULL, "--count"))) o->count = v;
        else if ((v = arg_str(&p, NULL, "--dump-probs"))) o->dump_out = v;
        else if (arg_int(&p, "-k", "--candidates", 1, 16, &o->k)) {}
        else if (arg_int(&p, NULL, "--max-tokens", 1, 32, &o->max_tokens)) {}
        else if (arg_int(&p, NULL, "--beam", 1, 16, &o->beam)) {}
        else if (arg_int(&p, NULL, "--max-kv", 16, 1 << 16, &o->max_kv)) {}
        else if (arg_int(&p, NULL, "--max-text", 16, 1 << 20, &o->max_text)) {}
        else if (arg_int(&p, NULL, "--doc-cache", 0, 1 << 22, &o->doc_cache)) o->doc_cache_set = 1; /* range: the library's */
        else if (arg_int(&p, NULL, "--threads", 0, 64, &o->threads)) {}
        else if (arg_int(&p, NULL, "--max-chars", 1, LONG_MAX / 2, &o->max_chars)) {}
        else if (arg_int(&p, NULL, "--from", 0, LONG_MAX / 2, &o->from)) {}
        else if (arg_is(&p, NULL, "--json")) o->json = 1;
        else if (arg_is(&p, NULL, "--learn")) o->learn = 1;
        else if (arg_is(&p, NULL, "--focused")) o->focused = 1;
        else if (argv[p.i][0] == '-' && argv[p.i][1] != 0) return cli_usage_error(cmd, "unknown option '%s'", argv[p.i]);
        else if (!o->text) o->text = argv[p.i];
        else return cli_usage_error(cmd, "unexpected argument '%s'", argv[p.i]);
        if (p.bad) return CLI_USAGE;
    }
    if (o->count && strcmp(o->count, "presage") && strcmp(o->count, "chars"))
        return cli_usage_error(cmd, "--count must be presage or chars, not '%s'", o->count);
    if (o->kv && strcmp(o->kv, "f32") && strcmp(o->kv, "f16"))
        return cli_usage_error(cmd, "--kv must be f32 or f16, not '%s'", o->kv);
    if (o->mode && strcmp(o->mode, "text") && strcmp(o->mode, "code") && strcmp(o->mode, "shell"))
        return cli_usage_error(cmd, "--mode must be text, code or shell, not '%s'", o->mode);
    return CLI_OK;
}

static int mode_of(const char *m) {
    if (!m || !strcmp(m, "text")) return LAYA_MODE_TEXT;
    return !strcmp(m, "code") ? LAYA_MODE_CODE : LAYA_MODE_SHELL;
}

static const char *kind_name(int32_t k) {
    return k == LAYA_KIND_COMPLETE ? "complete" : k == LAYA_KIND_NEXT ? "next" : "correct";
}

/* "prob hit" lines, at most 64. Returns 1 if loaded. */
static int load_calib(laya_session *s, const char *path, int required) {
    FILE *f = fopen(path, "r");
    if (!f) {
        if (required) cli_fail("cannot open calibration '%s': %s", path, strerror(errno));
        return 0;
    }
    float x[64], y[64];
    int n = 0;
    char line[256];
    while (n < 64 && fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        if (sscanf(line, "%f %f", &x[n], &y[n]) == 2) n++;
    }
    fclose(f);
    if (laya_session_set_calibration(s, x, y, n)) {
        if (required) cli_fail("calibration '%s': %s", path, laya_session_error(s));
        return 0;
    }
    return 1;
}

typedef struct sess_env {
    laya_model *m;
    laya_session *s;
} sess_env;

static int open_session(const char *cmd, const sess_opts *o, long k_default, sess_env *e) {
    char buf[PATH_MAX + 64];
    const char *path = o->model ? o->model : cli_default_model(buf, sizeof buf);
    if (!path)
        return cli_fail("%s: no model: pass -m MODEL, set LAYA_MODEL, or put " DEFAULT_MODEL
                        " in ./models/ (the default typing model)",
                        cmd);
    e->m = cli_load(path, (int32_t)(o->threads ? o->threads : 2), 0);
    if (!e->m) return CLI_FAIL;
    laya_session_params sp = laya_session_default_params();
    sp.mode = mode_of(o->mode);
    sp.n_candidates = (int32_t)(o->k ? o->k : k_default);
    if (o->max_tokens) sp.max_tokens = (int32_t)o->max_tokens;
    if (o->beam) sp.beam = (int32_t)o->beam;
    if (o->max_kv) sp.max_kv_size = (int32_t)o->max_kv;
    if (o->kv) sp.kv_type = strcmp(o->kv, "f16") ? LAYA_KV_F32 : LAYA_KV_F16;
    if (o->max_text) sp.max_text = (int32_t)o->max_text;
    if (o->doc_cache_set) sp.doc_cache_bytes = (int32_t)o->doc_cache;
    sp.focused_output = o->focused;
    sp.user_dict = o->user_dict;
    if (o->min_prob) {
        char *end;
        double v = strtod(o->min_prob, &end);
        if (*end || !(v >= 0 && v < 1)) return cli_usage_error(cmd, "--min-prob must be in [0, 1)");
        sp.min_prob = (float)v;
    }
    if (o->deadline) {
        char *end;
        double v = strtod(o->deadline, &end);
        if (*end || !(v >= 0 && v <= 1e6)) return cli_usage_error(cmd, "--deadline must be milliseconds >= 0");
        sp.deadline_ms = v;
    }
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_session_create(e->m, sp, &e->s, err, sizeof err);
    if (st) {
        laya_model_free(e->m);
        return cli_fail("cannot create a session: %s", err[0] ? err : laya_status_str(st));
    }
    if (o->calib) {
        if (!load_calib(e->s, o->calib, 1)) return CLI_FAIL;
    } else {
        char cp[sizeof buf + 16];
        snprintf(cp, sizeof cp, "%s.calib", path);
        load_calib(e->s, cp, 0);
    }
    return CLI_OK;
}

static void close_session(sess_env *e) {
    laya_session_free(e->s);
    laya_model_free(e->m);
}

int cmd_suggest(int argc, char **argv) {
    sess_opts o = {0};
    int rc = parse_opts("suggest", HELP_SUGGEST, argc, argv, &o);
    if (rc) return rc;
    if (!o.text) return cli_usage_error("suggest", "TEXT (the text before the cursor) is required");
    sess_env e;
    if ((rc = open_session("suggest", &o, 5, &e))) return rc;
    if (o.context) laya_session_set_context(e.s, o.context, strlen(o.context));
    const laya_candidate *c = NULL;
    int32_t n = 0;
    double t0 = now_ms();
    laya_status st = laya_session_set_text(e.s, o.text, strlen(o.text), o.after, o.after ? strlen(o.after) : 0);
    if (!st) st = laya_session_suggest(e.s, &c, &n);
    double ms = now_ms() - t0;
    if (st) {
        rc = cli_fail("suggest: %s", laya_session_error(e.s));
        close_session(&e);
        return rc;
    }
    if (o.json) {
        json_buf b;
        json_buf_init(&b);
        json_buf_cstr(&b, "{\"candidates\":[");
        for (int32_t i = 0; i < n; i++) {
            json_buf_cstr(&b, i ? ",{\"text\":" : "{\"text\":");
            json_buf_str(&b, c[i].text, (size_t)c[i].text_len);
            json_buf_printf(&b, ",\"replace\":%d,\"kind\":\"%s\",\"prob\":", c[i].replace, kind_name(c[i].kind));
            json_buf_num(&b, c[i].prob);
            json_buf_cstr(&b, ",\"confidence\":");
            json_buf_num(&b, c[i].confidence);
            json_buf_cstr(&b, "}");
        }
        json_buf_cstr(&b, "],\"latency_ms\":");
        json_buf_num(&b, round(ms * 1000) / 1000);
        json_buf_cstr(&b, "}\n");
        fwrite(b.p, 1, b.len, stdout);
        json_buf_free(&b);
    } else {
        for (int32_t i = 0; i < n; i++)
            printf("%-9s replace %d  %-24s prob %.4f  confidence %.4f\n", kind_name(c[i].kind), c[i].replace,
                   c[i].text, c[i].prob, c[i].confidence);
        printf("(%d candidates, %.3f ms)\n", n, ms);
    }
    close_session(&e);
    return CLI_OK;
}

/* ---- eval ------------------------------------------------------------------------------------------ */

/* Word characters as the simulated user sees them: ASCII letters and digits, '_', any non-ASCII byte
 * (letters of other scripts), and an apostrophe between letters. */
static int wchar_at(const char *t, size_t n, size_t i) {
    unsigned char c = (unsigned char)t[i];
    if (c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z')) return 1;
    if ((c == '\'') && i > 0 && i + 1 < n) {
        unsigned char a = (unsigned char)t[i - 1], b = (unsigned char)t[i + 1];
        return ((a | 32) >= 'a' && (a | 32) <= 'z') && ((b | 32) >= 'a' && (b | 32) <= 'z');
    }
    return 0;
}

/* Presage's simulator splits its input into words at blanks and ASCII punctuation (its default
 * blankspace and separator sets); every other byte, including UTF-8, belongs to a word. */
static int presage_wchar_at(const char *t, size_t n, size_t i) {
    (void)n;
    unsigned char c = (unsigned char)t[i];
    if (c >= 0x80) return 1;
    if (c <= ' ' || c == 0x7f) return 0;
    return !((c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~'));
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct ph {
    float p, conf;
    uint8_t hit;
} ph;

static int cmp_ph(const void *a, const void *b) {
    float x = ((const ph *)a)->p, y = ((const ph *)b)->p;
    return (x > y) - (x < y);
}

/* Isotonic regression by pool-adjacent-violators, then at most 32 points (the block means). */
static int fit_calibration(ph *v, size_t n, const char *out) {
    if (n < 2) return cli_fail("fit-calibration: too few candidates (%zu)", n);
    qsort(v, n, sizeof *v, cmp_ph);
    double *sx = malloc(n * sizeof *sx), *sy = malloc(n * sizeof *sy), *w = malloc(n * sizeof *w);
    if (!sx || !sy || !w) return cli_fail("out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        sx[m] = v[i].p, sy[m] = v[i].hit, w[m] = 1;
        m++;
        while (m > 1 && sy[m - 2] / w[m - 2] >= sy[m - 1] / w[m - 1]) {
            sx[m - 2] += sx[m - 1], sy[m - 2] += sy[m - 1], w[m - 2] += w[m - 1];
            m--;
        }
    }
    /* merge blocks into <= 32 by weight, keeping x strictly increasing */
    FILE *f = fopen(out, "w");
    if (!f) {
        free(sx), free(sy), free(w);
        return cli_fail("cannot write '%s': %s", out, strerror(errno));
    }
    fprintf(f, "# laya confidence calibration: isotonic map prob -> P(candidate is the word typed), %zu samples\n",
            n);
    double total = (double)n, acc_x = 0, acc_y = 0, acc_w = 0, last_x = -1;
    int written = 0;
    for (size_t i = 0; i < m; i++) {
        acc_x += sx[i], acc_y += sy[i], acc_w += w[i];
        if (acc_w >= total / 32 || i == m - 1) {
            double x = acc_x / acc_w, y = acc_y / acc_w;
            if (x > last_x && written < 64) {
                fprintf(f, "%.6f %.6f\n", x, y);
                last_x = x;
                written++;
            }
            acc_x = acc_y = acc_w = 0;
        }
    }
    fclose(f);
    free(sx), free(sy), free(w);
    return CLI_OK;
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    *len = n;
    return b;
}

int cmd_eval(int argc, char **argv) {
    sess_opts o = {0};
    int rc = parse_opts("eval", HELP_EVAL, argc, argv, &o);
    if (rc) return rc;
    if (!o.text_file) return cli_usage_error("eval", "--text FILE is required");
    size_t n;
    char *t = read_file(o.text_file, &n);
    if (!t) return cli_fail("cannot read '%s': %s", o.text_file, strerror(errno));
    if (o.max_chars && (size_t)o.max_chars < n) {
        n = (size_t)o.max_chars;
        while (n > 0 && ((unsigned char)t[n] & 0xC0) == 0x80) n--;
    }
    long k = o.k ? o.k : 3;
    double idle = 0;
    if (o.idle) {
        char *end;
        idle = strtod(o.idle, &end);
        if (*end || !(idle >= 0 && idle <= 1e6)) {
            free(t);
            return cli_usage_error("eval", "--idle must be milliseconds >= 0");
        }
    }
    sess_opts o2 = o;
    o2.k = k < 3 ? 3 : k; /* top-3 next-word accuracy needs three */
    char ud_path[64] = "";
    if (o.learn && !o.user_dict) {
        snprintf(ud_path, sizeof ud_path, "/tmp/laya-eval-ud-%d", (int)getpid());
        unlink(ud_path);
        o2.user_dict = ud_path;
    }
    sess_env e;
    if ((rc = open_session("eval", &o2, 3, &e))) {
        free(t);
        return rc;
    }
    size_t cap_lat = 1024, n_lat = 0, cap_ph = 1024, n_ph = 0;
    double *lat = malloc(cap_lat * sizeof *lat);
    ph *phs = malloc(cap_ph * sizeof *phs);
    /* presage: chars = sum over words of (characters + 1), a word costs the characters typed before it
     * was taken plus one (taking it inserts the space), or all its characters plus the space.
     * chars: every character of the file costs one unless it was inside a taken word. */
    int presage = !o.count || !strcmp(o.count, "presage");
    int trace = getenv("LAYA_EVAL_TRACE") != NULL; /* one line per decision on stderr */
    int progress = getenv("LAYA_EVAL_PROGRESS") != NULL;
    int (*is_wc)(const char *, size_t, size_t) = presage ? presage_wchar_at : wchar_at;
    long chars = 0, keys = 0, nw = 0, top1 = 0, top3 = 0, hist_steps[8] = {0}, sum_rows = 0, sum_prompt = 0;
    long n_free = 0, n_guess = 0; /* decisions that decoded nothing; guesses prefetch finished */
    double idle_used = 0;
    size_t i = 0;
    if (o.from) { /* the first word start at or after --from */
        i = (size_t)o.from < n ? (size_t)o.from : n;
        while (i < n && i > 0 && is_wc(t, n, i - 1)) i++;
    }
    if (!presage)
        for (size_t j = i; j < n; j++) chars += ((unsigned char)t[j] & 0xC0) != 0x80;
    while (i < n && lat && phs) {
        if (!is_wc(t, n, i)) {
            keys += !presage;
            i++;
            while (i < n && ((unsigned char)t[i] & 0xC0) == 0x80) i++;
            continue;
        }
        size_t ws = i, we = i;
        while (we < n && is_wc(t, n, we)) we++;
        if (presage) {
            for (size_t j = ws; j < we; j++) chars += ((unsigned char)t[j] & 0xC0) != 0x80;
            chars++, keys++; /* the space after the word: typed, or inserted with a taken candidate */
        }
        int at_start = 1;
        for (;;) { /* before each character of the word */
            const laya_candidate *c = NULL;
            int32_t nc = 0;
            double t0 = now_ms();
            laya_status st = laya_session_set_text(e.s, t, i, NULL, 0);
            if (!st) st = laya_session_suggest(e.s, &c, &nc);
            double ms = now_ms() - t0;
            if (st) {
                rc = cli_fail("eval: %s", laya_session_error(e.s));
                goto done;
            }
            if (n_lat == cap_lat) {
                double *nl = realloc(lat, (cap_lat *= 2) * sizeof *lat);
                if (!nl) goto oom;
                lat = nl;
            }
            lat[n_lat++] = ms;
            {
                laya_session_stats ss;
                laya_session_get_stats(e.s, &ss);
                hist_steps[ss.n_steps < 7 ? ss.n_steps : 7]++;
                sum_rows += ss.n_decoded;
                sum_prompt += ss.n_computed;
                n_free += ss.n_decoded == 0 && ss.n_computed == 0;
            }
            if (progress && n_lat % 2000 == 0)
                fprintf(stderr, "eval: %zu decisions, %zu of %zu bytes, keystrokes %ld of %ld so far\n", n_lat, i, n,
                        keys, chars);
            int hit = 0, rank = -1;
            for (int32_t j = 0; j < nc; j++) {
                const char *ct = c[j].text;
                size_t cl = (size_t)c[j].text_len;
                while (cl > 0 && *ct == ' ') ct++, cl--;
                int eq = c[j].kind == LAYA_KIND_COMPLETE ? (c[j].text_len == (int32_t)(we - ws) &&
                                                            !memcmp(c[j].text, t + ws, we - ws))
                                                         : (cl == we - ws && !memcmp(ct, t + ws, cl));
                if (eq && rank < 0) rank = j;
                if (j < k && eq) hit = 1;
                if ((o.fit_out || o.dump_out) && c[j].kind != LAYA_KIND_CORRECT) { /* those are about the last word */
                    if (n_ph == cap_ph) {
                        ph *np = realloc(phs, (cap_ph *= 2) * sizeof *phs);
                        if (!np) goto oom;
                        phs = np;
                    }
                    phs[n_ph].p = c[j].prob;
                    phs[n_ph].conf = c[j].confidence;
                    phs[n_ph++].hit = (uint8_t)eq;
                }
            }
            if (at_start) {
                nw++;
                top1 += rank == 0;
                top3 += rank >= 0 && rank < 3;
                at_start = 0;
            }
            if (trace) {
                fprintf(stderr, "%.*s|%.*s:", (int)(i - ws), t + ws, (int)(we - i), t + i);
                for (int32_t j = 0; j < nc && j < 5; j++)
                    fprintf(stderr, " [%s%.*s %.3f]", c[j].kind == LAYA_KIND_CORRECT ? "!" : "", (int)c[j].text_len,
                            c[j].text, c[j].prob);
                laya_session_stats ts;
                laya_session_get_stats(e.s, &ts);
                fprintf(stderr, "%s  {rows %d steps %d prompt %d, %.2f ms}\n", hit ? " HIT" : "", ts.n_decoded,
                        ts.n_steps, ts.n_computed, ms);
            }
            if (idle > 0) { /* the time before the next keystroke: not counted as latency */
                int32_t ng = 0;
                double p0 = now_ms();
                if (laya_session_prefetch(e.s, idle, &ng, NULL)) {
                    rc = cli_fail("eval: prefetch: %s", laya_session_error(e.s));
                    goto done;
                }
                idle_used += now_ms() - p0;
                n_guess += ng;
            }
            keys++;
            if (hit) {
                keys -= presage; /* taking it inserted the space counted above */
                i = we;
                break;
            }
            i++;
            while (i < we && ((unsigned char)t[i] & 0xC0) == 0x80) i++;
            if (i >= we) break;
        }
        if (o.learn) laya_session_learn(e.s, t + ws, we - ws);
    }
    if (!lat || !phs) goto oom;
    qsort(lat, n_lat, sizeof *lat, cmp_double);
#define PCT(q) (n_lat ? lat[(size_t)((q) * (double)(n_lat - 1) + 0.5)] : 0.0)
    double ksr = chars ? 1.0 - (double)keys / (double)chars : 0;
    if (o.json) {
        printf("{\"chars\":%ld,\"keystrokes\":%ld,\"ksr\":%.4f,\"next_word_top1\":%.4f,\"next_word_top3\":%.4f,"
               "\"latency_ms\":{\"p50\":%.3f,\"p95\":%.3f,\"p99\":%.3f,\"max\":%.3f}}\n",
               chars, keys, ksr, nw ? (double)top1 / nw : 0, nw ? (double)top3 / nw : 0, PCT(0.5), PCT(0.95),
               PCT(0.99), n_lat ? lat[n_lat - 1] : 0);
    } else {
        printf("chars %ld, keystrokes %ld, KSR %.2f%% (k=%ld)\n", chars, keys, 100 * ksr, k);
        printf("next word: top-1 %.2f%%, top-3 %.2f%% of %ld words\n", nw ? 100.0 * top1 / nw : 0,
               nw ? 100.0 * top3 / nw : 0, nw);
        printf("latency per decision (ms): p50 %.3f  p95 %.3f  p99 %.3f  max %.3f  (%zu decisions)\n", PCT(0.5),
               PCT(0.95), PCT(0.99), n_lat ? lat[n_lat - 1] : 0, n_lat);
        printf("decode steps per decision:");
        for (int q = 0; q < 8; q++) printf(" %d%s: %.1f%%", q, q == 7 ? "+" : "", n_lat ? 100.0 * hist_steps[q] / n_lat : 0);
        printf("\ncandidate rows %.1f, prompt tokens %.1f per decision; %.1f%% decoded nothing\n",
               n_lat ? (double)sum_rows / n_lat : 0, n_lat ? (double)sum_prompt / n_lat : 0,
               n_lat ? 100.0 * n_free / n_lat : 0);
        if (idle > 0)
            printf("prefetch: %.1f guesses and %.1f ms of the %.0f ms idle per keystroke\n",
                   n_lat ? (double)n_guess / n_lat : 0, n_lat ? idle_used / n_lat : 0, idle);
    }
#undef PCT
    if (o.dump_out) {
        FILE *df = fopen(o.dump_out, "w");
        if (!df) {
            rc = cli_fail("cannot write '%s': %s", o.dump_out, strerror(errno));
            goto done;
        }
        for (size_t q = 0; q < n_ph; q++) fprintf(df, "%.6g %.6g %d\n", phs[q].p, phs[q].conf, phs[q].hit);
        if (fclose(df)) {
            rc = cli_fail("writing '%s' failed", o.dump_out);
            goto done;
        }
    }
    if (o.fit_out && (rc = fit_calibration(phs, n_ph, o.fit_out))) goto done;
    rc = CLI_OK;
    goto done;
oom:
    rc = cli_fail("out of memory");
done:
    free(lat);
    free(phs);
    free(t);
    close_session(&e);
    if (ud_path[0]) {
        unlink(ud_path);
        char lk[80];
        snprintf(lk, sizeof lk, "%s.lock", ud_path);
        unlink(lk);
    }
    return rc;
}

/* ---- type: the interactive demo -------------------------------------------------------------------- */

static struct termios saved_tio;

static void restore_tty(void) { tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio); }

/* laya type's screen: the current line, then the candidates, the cursor back at the end of the line */
static void type_draw(const char *line, size_t n, const laya_candidate *c, int32_t nc, double ms, const char *note) {
    printf("\033[2A\r\033[2K> %.*s\r\n\033[2K", (int)n, line);
    for (int32_t i = 0; i < nc; i++)
        printf("[%s%s] %.2f  ", c[i].kind == LAYA_KIND_NEXT ? "+" : "", c[i].text, c[i].confidence);
    printf(" (%.2f ms%s)\r\n", ms, note);
    fflush(stdout);
}

int cmd_type(int argc, char **argv) {
    sess_opts o = {0};
    int rc = parse_opts("type", HELP_TYPE, argc, argv, &o);
    if (rc) return rc;
    if (!isatty(STDIN_FILENO)) return cli_fail("type: stdin is not a terminal (try it in a terminal or tmux)");
    sess_env e;
    if ((rc = open_session("type", &o, 5, &e))) return rc;
    tcgetattr(STDIN_FILENO, &saved_tio);
    atexit(restore_tty);
    struct termios raw = saved_tio;
    raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | ISIG | IEXTEN);
    raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
    size_t cap = 1 << 16, len = 0, line_start = 0;
    char *buf = malloc(cap);
    if (!buf) return cli_fail("out of memory");
    printf("laya type: Tab takes the first candidate, Ctrl-C quits\r\n\r\n\r\n");
    const laya_candidate *c = NULL;
    int32_t nc = 0;
    for (;;) {
        double t0 = now_ms();
        laya_status st = laya_session_set_text(e.s, buf, len, NULL, 0);
        if (!st) st = laya_session_suggest(e.s, &c, &nc);
        double ms = now_ms() - t0;
        if (st) nc = 0;
        type_draw(buf + line_start, len - line_start, c, nc, ms, "");
        /* until the next key: decide the likeliest next texts (laya_session_prefetch), in slices of 5 ms
         * so that a key is answered at once; stop when the plan is done. A decision the deadline cut short
         * is finished first: then its full candidates are shown. */
        laya_session_stats ss;
        laya_session_get_stats(e.s, &ss);
        int cut = !st && ss.deadline_hit;
        for (int more = 1; more;) {
            struct pollfd pf = {STDIN_FILENO, POLLIN, 0};
            if (poll(&pf, 1, 0) > 0) break;
            int32_t left = 0;
            more = laya_session_prefetch(e.s, 5, NULL, &left) == LAYA_OK && left > 0;
            laya_session_get_stats(e.s, &ss);
            if (cut && !ss.deadline_hit && laya_session_suggest(e.s, &c, &nc) == LAYA_OK) {
                cut = 0;
                type_draw(buf + line_start, len - line_start, c, nc, ms, ", finished after the deadline");
            }
        }
        unsigned char ch;
        if (read(STDIN_FILENO, &ch, 1) != 1) break;
        if (ch == 3 || ch == 4) break;
        if (ch == '\t') {
            if (nc > 0 && (size_t)c[0].replace_bytes <= len - line_start &&
                len - (size_t)c[0].replace_bytes + (size_t)c[0].text_len + 1 < cap) {
                laya_session_accept(e.s, 0);
                len -= (size_t)c[0].replace_bytes;
                memcpy(buf + len, c[0].text, (size_t)c[0].text_len);
                len += (size_t)c[0].text_len;
                if (c[0].kind != LAYA_KIND_CORRECT && (len == 0 || buf[len - 1] != ' ')) buf[len++] = ' ';
            }
        } else if (ch == 127 || ch == 8) {
            if (len > line_start) {
                len--;
                while (len > line_start && ((unsigned char)buf[len] & 0xC0) == 0x80) len--;
            }
        } else if (ch == 21) {
            len = line_start;
        } else if (ch == '\r' || ch == '\n') {
            /* keep the finished line on screen above the live one */
            printf("\033[2A\r\033[2K  %.*s\r\n\r\n\r\n", (int)(len - line_start), buf + line_start);
            if (len + 1 < cap) buf[len++] = '\n';
            line_start = len;
        } else if (ch >= 0x20 || ch >= 0x80) {
            if (len + 1 < cap) buf[len++] = (char)ch;
        }
    }
    printf("\r\n");
    restore_tty();
    free(buf);
    close_session(&e);
    return CLI_OK;
}
