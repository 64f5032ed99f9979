/* cmd_bench.c — `laya bench`: load time, prefill throughput at 8/64/512 tokens, and decode latency per
 * step for 1, 2, 4 and 8 sequences sharing a P-token prefix (64 unless --prefix) (the per-keystroke candidate pattern), plus
 * peak RSS. Medians over repetitions; p10/p90 in the human-readable table. Not here: accuracy checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cli.h"
#include "fwprof.h"
#include "json.h"

#define HELP_BENCH                                                                                        \
    "usage: laya bench [-m MODEL] [--threads N] [--reps R] [--prefix P] [--kv f32|f16] [--profile] [--json]\n"         \
    "Measures, on one context of 8 sequences:\n"                                                          \
    "  prefill: tokens/s of one batch of 8, 64 and 512 tokens into an empty sequence (R runs each)\n"     \
    "  decode:  ms per step where each of B = 1, 2, 4, 8 sequences, forked from a shared P-token\n"       \
    "           prefix, gets one new token with logits (max(8, 4R) steps each)\n"                          \
    "  load:    ms for laya_model_load (the first and only load of this process)\n"                      \
    "  memory:  peak RSS in MB (getrusage)\n"                                                             \
    "  profile: with --profile, mean ms per decode step by phase for B = 1 and 4 (separate runs: the\n"  \
    "           timing adds a little to each step)\n"                                                    \
    "--threads N sets laya_model_params.n_threads (0 = all CPUs); R defaults to 5; P (16..448) to 64, the\n" \
    "  context the candidates share; --kv the KV cache type (laya_context_params.kv_type, default f32).\n"  \
    "  --json prints\n"                                                                                   \
    "  {\"prefill_tok_s\":{\"8\":x,\"64\":x,\"512\":x},\"decode_ms\":{\"1\":x,\"2\":x,\"4\":x,\"8\":x},\n" \
    "   \"load_ms\":x,\"first_token_ms\":x,\"ready_ms\":x,\"peak_rss_mb\":x[,\"profile\":{\"1\":{PHASE:ms,...},\"4\":{...}}]}   (medians)\n"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct stats { double med, p10, p90; } stats;

/* Sorts v in place. Percentiles by nearest rank; the median of an even count averages the middle two. */
static stats summarize(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    stats s;
    s.med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s.p10 = v[(int)lround(0.1 * (n - 1))];
    s.p90 = v[(int)lround(0.9 * (n - 1))];
    return s;
}

static const int k_prefill[3] = {8, 64, 512};
static const int k_batch[4] = {1, 2, 4, 8};
#define N_SEQ 8

int cmd_bench(int argc, char **argv) {
    argp p = {"bench", argc, argv, 0, 0};
    const char *model = NULL;
    const char *kv = "f32";
    long threads = 0, reps = 5, prefix = 64;
    int json = 0, profile = 0;
    for (p.i = 0; p.i < argc; p.i++) {
        const char *v;
        if (arg_help(&p)) {
            fputs(HELP_BENCH, stdout);
            return CLI_OK;
        }
        if ((v = arg_str(&p, "-m", "--model"))) model = v;
        else if (arg_int(&p, "-t", "--threads", 0, 64, &threads)) {}
        else if (arg_int(&p, "-r", "--reps", 1, 10000, &reps)) {}
        else if (arg_int(&p, NULL, "--prefix", 16, 448, &prefix)) {}
        else if ((v = arg_str(&p, NULL, "--kv"))) kv = v;
        else if (arg_is(&p, NULL, "--json")) json = 1;
        else if (arg_is(&p, NULL, "--profile")) profile = 1;
        else if (!p.bad) return cli_usage_error("bench", "unknown argument '%s'", argv[p.i]);
        if (p.bad) return CLI_USAGE;
    }
    if (strcmp(kv, "f32") && strcmp(kv, "f16")) return cli_usage_error("bench", "--kv must be f32 or f16, not '%s'", kv);
    static char defbuf[4200];
    if (!model) model = cli_default_model(defbuf, sizeof defbuf); /* NULL: cli_load says so */

    double t0 = now_ms();
    laya_model *m = cli_load(model, (int32_t)threads, 0);
    if (!m) return CLI_FAIL;
    double load_ms = now_ms() - t0;

    int rc = CLI_OK;
    int max_kv = 512;
    int steps = (int)CLI_MIN(CLI_MAX(8, 4 * reps), max_kv - prefix - 1);
    laya_context_params cp = laya_context_default_params();
    cp.n_seq = N_SEQ;
    cp.max_kv_size = max_kv;
    cp.max_batch = 512;
    cp.max_logits = N_SEQ;
    cp.kv_type = strcmp(kv, "f16") ? LAYA_KV_F32 : LAYA_KV_F16;
    laya_context *c = NULL;
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_context_create(m, cp, &c, err, sizeof err);
    laya_token *tok = malloc(512 * sizeof *tok);
    int32_t *seq = calloc(512, sizeof *seq);
    int8_t *want = malloc(512);
    double *samples = malloc((size_t)CLI_MAX(reps, steps) * sizeof *samples);
    stats pre[3], dec[4];
    if (st || !c) {
        rc = cli_fail("cannot create a context: %s", err[0] ? err : laya_status_str(st));
        goto done;
    }
    if (!tok || !seq || !want || !samples) {
        rc = cli_fail("out of memory");
        goto done;
    }
    /* ids spread over the vocabulary; their values do not change the work done */
    int32_t nv = laya_n_vocab(m);
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 512; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (laya_token)((s >> 33) % (uint64_t)nv);
    }
    memset(want, 1, 512);

#define DECODE(batch)                                                           \
    do {                                                                        \
        if ((st = laya_decode(c, batch))) {                                     \
            rc = cli_fail("decode: %s", laya_context_error(c));                 \
            goto done;                                                          \
        }                                                                       \
    } while (0)

    /* load to first token: a context and one decode step, as a keyboard's first key press needs; then
     * the copy of pack_weights, which the steady-state figures below are meant to include */
    DECODE(((laya_batch){1, tok, seq, NULL}));
    double first_ms = now_ms() - t0;
    laya_model_wait_ready(m);
    double ready_ms = now_ms() - t0;
    laya_seq_truncate(c, 0, 0);
    /* warm-up: first touch of the weights and scratch */
    DECODE(((laya_batch){8, tok, seq, NULL}));

    for (int k = 0; k < 3; k++) {
        int n = k_prefill[k];
        for (int r = 0; r < reps; r++) {
            laya_seq_truncate(c, 0, 0);
            double t = now_ms();
            DECODE(((laya_batch){n, tok, seq, NULL}));
            double dt = now_ms() - t;
            samples[r] = dt > 0 ? n / (dt / 1e3) : INFINITY;
        }
        pre[k] = summarize(samples, (int)reps);
    }

    laya_seq_truncate(c, 0, 0);
    DECODE(((laya_batch){prefix, tok, seq, NULL}));
    for (int k = 0; k < 4; k++) {
        int B = k_batch[k];
        int32_t bseq[N_SEQ];
        laya_token btok[N_SEQ];
        for (int j = 0; j < B; j++) {
            bseq[j] = j;
            if (j && (st = laya_seq_fork(c, 0, j, prefix))) {
                rc = cli_fail("fork: %s", laya_context_error(c));
                goto done;
            }
        }
        laya_seq_truncate(c, 0, prefix);
        /* one untimed step first: it is the only one paying for cold caches of the new sequences */
        for (int step = -1; step < steps; step++) {
            for (int j = 0; j < B; j++) btok[j] = tok[(prefix + step + 1 + j * 7) % 512];
            double t = now_ms();
            DECODE(((laya_batch){B, btok, bseq, want}));
            if (step >= 0) samples[step] = now_ms() - t;
        }
        dec[k] = summarize(samples, steps);
    }
    /* Per-phase profile: the same decode steps again with timing on (sequences 0..B-1 are at prefix + steps
     * + 1 or less, so they still fit). */
    static const int k_prof[2] = {1, 4};
    double prof[2][FP_N] = {{0}};
    for (int k = 0; profile && k < 2; k++) {
        int B = k_prof[k];
        int32_t bseq[N_SEQ];
        laya_token btok[N_SEQ];
        for (int j = 0; j < B; j++) {
            bseq[j] = j;
            laya_seq_fork(c, 0, j, prefix);
        }
        laya_seq_truncate(c, 0, prefix);
        for (int j = 0; j < B; j++) btok[j] = tok[j];
        DECODE(((laya_batch){B, btok, bseq, want}));
        fw_profile_enable(c, 1);
        for (int step = 0; step < steps; step++) {
            for (int j = 0; j < B; j++) btok[j] = tok[(prefix + step + 1 + j * 7) % 512];
            DECODE(((laya_batch){B, btok, bseq, want}));
        }
        int64_t nd;
        fw_profile_read(c, prof[k], &nd);
        fw_profile_enable(c, 0);
        for (int f = 0; f < FP_N; f++) prof[k][f] /= (double)(nd ? nd : 1);
    }
#undef DECODE

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss_mb = (double)ru.ru_maxrss / 1024.0; /* Linux reports kilobytes */

    json_buf b;
    json_buf_init(&b);
    if (json) {
        json_buf_cstr(&b, "{\"prefill_tok_s\":{");
        for (int k = 0; k < 3; k++) {
            json_buf_printf(&b, "%s\"%d\":", k ? "," : "", k_prefill[k]);
            json_buf_num(&b, pre[k].med);
        }
        json_buf_cstr(&b, "},\"decode_ms\":{");
        for (int k = 0; k < 4; k++) {
            json_buf_printf(&b, "%s\"%d\":", k ? "," : "", k_batch[k]);
            json_buf_num(&b, dec[k].med);
        }
        json_buf_cstr(&b, "},\"load_ms\":");
        json_buf_num(&b, load_ms);
        json_buf_cstr(&b, ",\"first_token_ms\":");
        json_buf_num(&b, first_ms);
        json_buf_cstr(&b, ",\"ready_ms\":");
        json_buf_num(&b, ready_ms);
        json_buf_cstr(&b, ",\"peak_rss_mb\":");
        json_buf_num(&b, rss_mb);
        for (int k = 0; profile && k < 2; k++) {
            json_buf_printf(&b, "%s\"%d\":{", k ? "}," : ",\"profile\":{", k_prof[k]);
            for (int f = 0; f < FP_N; f++) {
                json_buf_printf(&b, "%s\"%s\":", f ? "," : "", fw_prof_names[f]);
                json_buf_num(&b, prof[k][f]);
            }
            if (k == 1) json_buf_cstr(&b, "}}");
        }
        json_buf_cstr(&b, "}\n");
    } else {
        json_buf_printf(&b, "model %s, backend %s, %ld reps, %d decode steps\n", model, laya_cpu_backend(), reps,
                        steps);
        json_buf_printf(&b, "%-22s %12s %12s %12s\n", "", "median", "p10", "p90");
        for (int k = 0; k < 3; k++) {
            char label[40];
            snprintf(label, sizeof label, "prefill %d (tok/s)", k_prefill[k]);
            json_buf_printf(&b, "%-22s %12.1f %12.1f %12.1f\n", label, pre[k].med, pre[k].p10, pre[k].p90);
        }
        for (int k = 0; k < 4; k++) {
            char label[40];
            snprintf(label, sizeof label, "decode B=%d (ms/step)", k_batch[k]);
            json_buf_printf(&b, "%-22s %12.3f %12.3f %12.3f\n", label, dec[k].med, dec[k].p10, dec[k].p90);
        }
        json_buf_printf(&b, "%-22s %12.1f\n", "load (ms)", load_ms);
        json_buf_printf(&b, "%-22s %12.1f\n", "first token (ms)", first_ms);
        json_buf_printf(&b, "%-22s %12.1f\n", "weights packed (ms)", ready_ms);
        json_buf_printf(&b, "%-22s %12.1f\n", "peak RSS (MB)", rss_mb);
        if (profile) {
            json_buf_printf(&b, "decode step by phase (mean ms)  %10s %10s\n", "B=1", "B=4");
            double tot[2] = {0, 0};
            for (int f = 0; f < FP_N; f++) {
                json_buf_printf(&b, "  %-31s %10.3f %10.3f\n", fw_prof_names[f], prof[0][f], prof[1][f]);
                if (f != FP_SYNC) tot[0] += prof[0][f], tot[1] += prof[1][f];
            }
            json_buf_printf(&b, "  %-31s %10.3f %10.3f\n", "total", tot[0], tot[1]);
        }
    }
    if (json_buf_status(&b)) rc = cli_fail("out of memory");
    else if (fwrite(b.p, 1, b.len, stdout) != b.len || fflush(stdout)) rc = cli_fail("writing to stdout failed");
    json_buf_free(&b);
done:
    free(tok);
    free(seq);
    free(want);
    free(samples);
    laya_context_free(c);
    laya_model_free(m);
    return rc;
}
