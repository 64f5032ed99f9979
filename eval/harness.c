/* harness.c — `laya eval`: a simulated user types a file one character at a time and takes a candidate
 * when its word is shown; keystroke savings, next-word accuracy, latency, and optionally the fitted
 * confidence calibration. Linked into build/laya and, like it, a client of include/laya.h only.
 * Not here: any decision logic (the library's); the other evaluations of eval/ (eval/README.md). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_session.h"

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
    "each of those candidates (a reliability plot: eval/nextword/reliability.py).\n"                       \
    "--learn: the simulated user's words are learned as they are finished (a fresh user dictionary in a\n" \
    "temporary file, as Presage's simulator learns online); without it nothing is learned.\n"             \
    "--idle MS: between keystrokes the simulated user leaves MS milliseconds, which the session spends on\n" \
    "laya_session_prefetch (the likeliest next texts decided ahead); latency still counts set_text +\n"  \
    "suggest only, the time the user waits (default 0: keystrokes back to back).\n"                      \
    "--from N: typing starts at the first word at or after byte N, the text before it already there (not\n" \
    "counted); --max-chars N: the file ends at byte N.\n" HELP_COMMON

/* ---- the simulated user's words ---------------------------------------------------------------------
 * These rules are the simulated user's, not the library's: they say which keystrokes a person would
 * type, and stay fixed so that figures compare across library changes. */

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

static int is_cont(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

/* ---- calibration ------------------------------------------------------------------------------------ */

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
    if (!sx || !sy || !w) {
        free(sx), free(sy), free(w);
        return cli_fail("out of memory");
    }
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

/* ---- the run ---------------------------------------------------------------------------------------- */

/* One run of the simulated user: its input, settings and tallies. */
typedef struct eval_run {
    const sess_opts *o;
    laya_session *s;
    const char *t; /* the text and its length */
    size_t n;
    long k;
    double idle;
    int presage, trace, progress, collect; /* collect: keep (prob, confidence, hit) for the calibration */
    long chars, keys, nw, top1, top3, hist_steps[8], sum_rows, sum_prompt;
    long n_free, n_guess; /* decisions that decoded nothing; guesses prefetch finished */
    double idle_used;
    double *lat; /* one latency a decision */
    size_t n_lat, cap_lat;
    ph *phs;
    size_t n_ph, cap_ph;
} eval_run;

/* Appends to a growing array; 0 when out of memory. */
static int grow(void **v, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return 1;
    void *nv = realloc(*v, *cap * 2 * size);
    if (!nv) return 0;
    *v = nv;
    *cap *= 2;
    return 1;
}

/* The shown candidates against the word t[ws..we): the rank of the word among them (-1: absent), whether
 * it is among the first k, and each non-correction's (prob, confidence, hit) when collecting. */
static int score_candidates(eval_run *r, const laya_candidate *c, int32_t nc, size_t ws, size_t we, int *hit,
                            int *rank) {
    const char *t = r->t;
    *hit = 0, *rank = -1;
    for (int32_t j = 0; j < nc; j++) {
        const char *ct = c[j].text;
        size_t cl = (size_t)c[j].text_len;
        while (cl > 0 && *ct == ' ') ct++, cl--;
        int eq = c[j].kind == LAYA_KIND_COMPLETE
                     ? (c[j].text_len == (int32_t)(we - ws) && !memcmp(c[j].text, t + ws, we - ws))
                     : (cl == we - ws && !memcmp(ct, t + ws, cl));
        if (eq && *rank < 0) *rank = j;
        if (j < r->k && eq) *hit = 1;
        if (r->collect && c[j].kind != LAYA_KIND_CORRECT) { /* those are about the last word */
            if (!grow((void **)&r->phs, &r->cap_ph, r->n_ph, sizeof *r->phs)) return 0;
            r->phs[r->n_ph].p = c[j].prob;
            r->phs[r->n_ph].conf = c[j].confidence;
            r->phs[r->n_ph++].hit = (uint8_t)eq;
        }
    }
    return 1;
}

/* One decision with the cursor at i inside the word t[ws..we): ask, tally, trace, then spend the idle
 * time on prefetch. *hit: the word was shown. Returns CLI_OK or an exit code. */
static int decide(eval_run *r, size_t ws, size_t i, size_t we, int at_start, int *hit) {
    const char *t = r->t;
    const laya_candidate *c = NULL;
    int32_t nc = 0;
    double t0 = cli_now_ms();
    laya_status st = laya_session_set_text(r->s, t, i, NULL, 0);
    if (!st) st = laya_session_suggest(r->s, &c, &nc);
    double ms = cli_now_ms() - t0;
    if (st) return cli_fail("eval: %s", laya_session_error(r->s));
    if (!grow((void **)&r->lat, &r->cap_lat, r->n_lat, sizeof *r->lat)) return cli_fail("out of memory");
    r->lat[r->n_lat++] = ms;
    laya_session_stats ss;
    laya_session_get_stats(r->s, &ss);
    r->hist_steps[ss.n_steps < 7 ? ss.n_steps : 7]++;
    r->sum_rows += ss.n_decoded;
    r->sum_prompt += ss.n_computed;
    r->n_free += ss.n_decoded == 0 && ss.n_computed == 0;
    if (r->progress && r->n_lat % 2000 == 0)
        fprintf(stderr, "eval: %zu decisions, %zu of %zu bytes, keystrokes %ld of %ld so far\n", r->n_lat, i, r->n,
                r->keys, r->chars);
    int rank;
    if (!score_candidates(r, c, nc, ws, we, hit, &rank)) return cli_fail("out of memory");
    if (at_start) {
        r->nw++;
        r->top1 += rank == 0;
        r->top3 += rank >= 0 && rank < 3;
    }
    if (r->trace) {
        fprintf(stderr, "%.*s|%.*s:", (int)(i - ws), t + ws, (int)(we - i), t + i);
        for (int32_t j = 0; j < nc && j < 5; j++)
            fprintf(stderr, " [%s%.*s %.3f]", c[j].kind == LAYA_KIND_CORRECT ? "!" : "", (int)c[j].text_len,
                    c[j].text, c[j].prob);
        laya_session_stats ts;
        laya_session_get_stats(r->s, &ts);
        fprintf(stderr, "%s  {rows %d steps %d prompt %d, %.2f ms}\n", *hit ? " HIT" : "", ts.n_decoded, ts.n_steps,
                ts.n_computed, ms);
    }
    if (r->idle > 0) { /* the time before the next keystroke: not counted as latency */
        int32_t ng = 0;
        double p0 = cli_now_ms();
        if (laya_session_prefetch(r->s, r->idle, &ng, NULL))
            return cli_fail("eval: prefetch: %s", laya_session_error(r->s));
        r->idle_used += cli_now_ms() - p0;
        r->n_guess += ng;
    }
    return CLI_OK;
}

/* Types the word starting at *i, character by character until a candidate is taken; *i ends after it.
 * presage: a word costs the characters typed before it was taken plus one (taking it inserts the
 * space), or all its characters plus the space. chars: every character of the file costs one unless it
 * was inside a taken word. */
static int type_word(eval_run *r, size_t *i, int (*is_wc)(const char *, size_t, size_t)) {
    const char *t = r->t;
    size_t ws = *i, we = *i;
    while (we < r->n && is_wc(t, r->n, we)) we++;
    if (r->presage) {
        for (size_t j = ws; j < we; j++) r->chars += !is_cont(t[j]);
        r->chars++, r->keys++; /* the space after the word: typed, or inserted with a taken candidate */
    }
    for (int at_start = 1;; at_start = 0) { /* before each character of the word */
        int hit = 0, rc = decide(r, ws, *i, we, at_start, &hit);
        if (rc) return rc;
        r->keys++;
        if (hit) {
            r->keys -= r->presage; /* taking it inserted the space counted above */
            *i = we;
            break;
        }
        ++*i;
        while (*i < we && is_cont(t[*i])) ++*i;
        if (*i >= we) break;
    }
    if (r->o->learn) laya_session_learn(r->s, t + ws, we - ws);
    return CLI_OK;
}

/* The simulated user over the whole text (from --from). */
static int run_text(eval_run *r) {
    int (*is_wc)(const char *, size_t, size_t) = r->presage ? presage_wchar_at : wchar_at;
    const char *t = r->t;
    size_t n = r->n, i = 0;
    if (r->o->from) { /* the first word start at or after --from */
        i = (size_t)r->o->from < n ? (size_t)r->o->from : n;
        while (i < n && i > 0 && is_wc(t, n, i - 1)) i++;
    }
    if (!r->presage)
        for (size_t j = i; j < n; j++) r->chars += !is_cont(t[j]);
    while (i < n) {
        if (!is_wc(t, n, i)) {
            r->keys += !r->presage;
            i++;
            while (i < n && is_cont(t[i])) i++;
            continue;
        }
        int rc = type_word(r, &i, is_wc);
        if (rc) return rc;
    }
    return CLI_OK;
}

static void report(eval_run *r) {
    double *lat = r->lat;
    size_t n_lat = r->n_lat;
    qsort(lat, n_lat, sizeof *lat, cmp_double);
#define PCT(q) (n_lat ? lat[(size_t)((q) * (double)(n_lat - 1) + 0.5)] : 0.0)
    long chars = r->chars, keys = r->keys, nw = r->nw, top1 = r->top1, top3 = r->top3;
    double ksr = chars ? 1.0 - (double)keys / (double)chars : 0;
    if (r->o->json) {
        printf("{\"chars\":%ld,\"keystrokes\":%ld,\"ksr\":%.4f,\"next_word_top1\":%.4f,\"next_word_top3\":%.4f,"
               "\"latency_ms\":{\"p50\":%.3f,\"p95\":%.3f,\"p99\":%.3f,\"max\":%.3f}}\n",
               chars, keys, ksr, nw ? (double)top1 / nw : 0, nw ? (double)top3 / nw : 0, PCT(0.5), PCT(0.95),
               PCT(0.99), n_lat ? lat[n_lat - 1] : 0);
        return;
    }
    printf("chars %ld, keystrokes %ld, KSR %.2f%% (k=%ld)\n", chars, keys, 100 * ksr, r->k);
    printf("next word: top-1 %.2f%%, top-3 %.2f%% of %ld words\n", nw ? 100.0 * top1 / nw : 0,
           nw ? 100.0 * top3 / nw : 0, nw);
    printf("latency per decision (ms): p50 %.3f  p95 %.3f  p99 %.3f  max %.3f  (%zu decisions)\n", PCT(0.5),
           PCT(0.95), PCT(0.99), n_lat ? lat[n_lat - 1] : 0, n_lat);
    printf("decode steps per decision:");
    for (int q = 0; q < 8; q++)
        printf(" %d%s: %.1f%%", q, q == 7 ? "+" : "", n_lat ? 100.0 * r->hist_steps[q] / n_lat : 0);
    printf("\ncandidate rows %.1f, prompt tokens %.1f per decision; %.1f%% decoded nothing\n",
           n_lat ? (double)r->sum_rows / n_lat : 0, n_lat ? (double)r->sum_prompt / n_lat : 0,
           n_lat ? 100.0 * r->n_free / n_lat : 0);
    if (r->idle > 0)
        printf("prefetch: %.1f guesses and %.1f ms of the %.0f ms idle per keystroke\n",
               n_lat ? (double)r->n_guess / n_lat : 0, n_lat ? r->idle_used / n_lat : 0, r->idle);
#undef PCT
}

/* --dump-probs and --fit-calibration. */
static int write_outputs(eval_run *r) {
    const sess_opts *o = r->o;
    if (o->dump_out) {
        FILE *df = fopen(o->dump_out, "w");
        if (!df) return cli_fail("cannot write '%s': %s", o->dump_out, strerror(errno));
        for (size_t q = 0; q < r->n_ph; q++) fprintf(df, "%.6g %.6g %d\n", r->phs[q].p, r->phs[q].conf, r->phs[q].hit);
        if (fclose(df)) return cli_fail("writing '%s' failed", o->dump_out);
    }
    if (o->fit_out) return fit_calibration(r->phs, r->n_ph, o->fit_out);
    return CLI_OK;
}

/* The text to type: FILE, cut at --max-chars on a character boundary. */
static char *load_text(const sess_opts *o, size_t *n) {
    char *t = read_file(o->text_file, n);
    if (!t) {
        cli_fail("cannot read '%s': %s", o->text_file, strerror(errno));
        return NULL;
    }
    if (o->max_chars && (size_t)o->max_chars < *n) {
        *n = (size_t)o->max_chars;
        while (*n > 0 && is_cont(t[*n])) --*n;
    }
    return t;
}

int cmd_eval(int argc, char **argv) {
    sess_opts o = {0};
    int rc = sess_parse_opts("eval", HELP_EVAL, argc, argv, &o);
    if (rc) return rc;
    if (!o.text_file) return cli_usage_error("eval", "--text FILE is required");
    eval_run r = {.o = &o, .k = o.k ? o.k : 3, .cap_lat = 1024, .cap_ph = 1024};
    char *t = load_text(&o, &r.n);
    if (!t) return CLI_FAIL;
    if (o.idle) {
        char *end;
        r.idle = strtod(o.idle, &end);
        if (*end || !(r.idle >= 0 && r.idle <= 1e6)) {
            free(t);
            return cli_usage_error("eval", "--idle must be milliseconds >= 0");
        }
    }
    sess_opts o2 = o;
    o2.k = r.k < 3 ? 3 : r.k; /* top-3 next-word accuracy needs three */
    char ud_path[64] = "";
    if (o.learn && !o.user_dict) {
        snprintf(ud_path, sizeof ud_path, "/tmp/laya-eval-ud-%d", (int)getpid());
        unlink(ud_path);
        o2.user_dict = ud_path;
    }
    sess_env e;
    if ((rc = sess_open("eval", &o2, 3, &e))) {
        free(t);
        return rc;
    }
    r.s = e.s;
    r.t = t;
    r.presage = !o.count || !strcmp(o.count, "presage");
    r.trace = getenv("LAYA_EVAL_TRACE") != NULL; /* one line per decision on stderr */
    r.progress = getenv("LAYA_EVAL_PROGRESS") != NULL;
    r.collect = o.fit_out || o.dump_out;
    r.lat = malloc(r.cap_lat * sizeof *r.lat);
    r.phs = malloc(r.cap_ph * sizeof *r.phs);
    if (!r.lat || !r.phs) rc = cli_fail("out of memory");
    if (!rc) rc = run_text(&r);
    if (!rc) {
        report(&r);
        rc = write_outputs(&r);
    }
    free(r.lat);
    free(r.phs);
    free(t);
    sess_close(&e);
    if (ud_path[0]) {
        unlink(ud_path);
        char lk[80];
        snprintf(lk, sizeof lk, "%s.lock", ud_path);
        unlink(lk);
    }
    return rc;
}
