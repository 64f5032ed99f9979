/* cmd_bench.c — `laya bench`: load time, prefill throughput at 8/64/512 tokens, and decode latency per
 * step for 1, 2, 4 and 8 sequences sharing a P-token prefix (64 unless --prefix) (the per-keystroke candidate pattern), plus
 * peak RSS. Medians over repetitions; p10/p90 in the human-readable table. Not here: accuracy checks. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "cli.h"
#include "cli_json.h"

#define HELP_BENCH                                                                                        \
    "usage: laya bench [-m MODEL] [--threads N] [--reps R] [--prefix P] [--kv f32|f16] [--floor]\n"                  \
    "                  [--json]\n"                                                                       \
    "Measures, on one context of 8 sequences:\n"                                                          \
    "  prefill: tokens/s of one batch of 8, 64 and 512 tokens into an empty sequence (R runs each)\n"     \
    "  decode:  ms per step where each of B = 1, 2, 4, 8 sequences, forked from a shared P-token\n"       \
    "           prefix, gets one new token with logits (max(8, 4R) steps each)\n"                          \
    "  load:    ms for laya_model_load (the first and only load of this process)\n"                      \
    "  memory:  peak RSS in MB (getrusage)\n"                                                             \
    "  floor:   with --floor, the memory floor side by side: three rounds, each of them for every B a\n"   \
    "           plain read loop (as many threads; the fastest of one stream or two a thread, each with\n"  \
    "           and without prefetches) over the bytes one step reads (laya_model_info step_bytes plus\n" \
    "           the keys and values the B sequences attend to), then the B decode steps again; medians\n" \
    "           of each, and the step's time over the read loop's (1.0: the step runs\n"                \
    "           at the speed of reading its bytes once). Peak RSS is taken before its buffer exists\n"   \
    "--threads N sets laya_model_params.n_threads (0 = all CPUs); R defaults to 5; P (16..448) to 64, the\n" \
    "  context the candidates share; --kv the KV cache type (laya_context_params.kv_type, default f32).\n"  \
    "  --json prints\n"                                                                                   \
    "  {\"prefill_tok_s\":{\"8\":x,\"64\":x,\"512\":x},\"decode_ms\":{\"1\":x,\"2\":x,\"4\":x,\"8\":x},\n" \
    "   \"load_ms\":x,\"first_token_ms\":x,\"ready_ms\":x,\"peak_rss_mb\":x\n"                                    \
    "   [,\"floor\":{\"B\":{\"mb\":x,\"floor_ms\":x,\"gb_s\":x,\"step_ms\":x,\"ratio\":x,\"ratio_min\":x,\"ratio_max\":x},...}]}\n" \
    "  (medians; mb = 10^6 bytes)\n"                                                                     \
    "The decode step by phase (a profiling build of the library): make profile.\n"

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

/* B sequences forked from sequence 0's first `prefix` positions, each given one token a step: one
 * untimed step (the only one paying for the new sequences' cold caches), then `steps` timed ones, their
 * ms in samples. Returns CLI_OK or CLI_FAIL (said why). */
static int decode_steps(laya_context *c, int B, int prefix, int steps, const laya_token *tok, const int8_t *want,
                        double *samples) {
    int32_t bseq[8];
    laya_token btok[8];
    for (int j = 0; j < B; j++) {
        bseq[j] = j;
        if (j && laya_seq_fork(c, 0, j, prefix)) return cli_fail("fork: %s", laya_context_error(c));
    }
    laya_seq_truncate(c, 0, prefix);
    for (int step = -1; step < steps; step++) {
        for (int j = 0; j < B; j++) btok[j] = tok[(prefix + step + 1 + j * 7) % 512];
        double t = cli_now_ms();
        if (laya_decode(c, (laya_batch){B, btok, bseq, want})) return cli_fail("decode: %s", laya_context_error(c));
        if (step >= 0) samples[step] = cli_now_ms() - t;
    }
    return CLI_OK;
}

/* ---- the memory floor (--floor) ----------------------------------------------------------------------
 * A plain read loop over a buffer of the bytes a step reads, on as many threads as the model's passes,
 * timed the way a step is (from the start of the work to the last thread's end), each thread's part read
 * as one stream or as two side by side, each with prefetches ahead and without: the floor is the
 * fastest. Portable vectors of 16 bytes: on the machines measured they read as fast as 64-byte AVX-512
 * loads (bench/bw.c), from DRAM and from L3. The threads exist only during a block of passes, so they
 * never spin beside a decode. */
typedef unsigned long long fl_vec __attribute__((vector_size(16)));

typedef struct floor_job {
    const char *buf;
    size_t n;            /* bytes a pass reads (a multiple of 64 * nt) */
    int nt, passes;
    int ahead;           /* floor_read's prefetches */
    atomic_int gen;      /* pass number the workers may start; passes + 1: stop */
    atomic_int done;     /* worker parts finished in the current pass */
    fl_vec sink[64];
} floor_job;

typedef struct { floor_job *f; int tid; } floor_arg;

/* ahead: also ask for each line 4 KB ahead into L1 and 16 KB ahead into L2, as the kernels do for sets
 * that the L3 can serve (kernels_avx512.c P16_PF, kn_p16_l2_ahead) */
static fl_vec floor_read(const char *p, size_t n, int ahead) {
    fl_vec s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 64) {
        fl_vec x0, x1, x2, x3;
        if (ahead) { /* each distance up to the end of the thread's part */
            if (i + 4096 < n) __builtin_prefetch(p + i + 4096, 0, 3);
            if (i + 16384 < n) __builtin_prefetch(p + i + 16384, 0, 2);
        }
        memcpy(&x0, p + i, 16), memcpy(&x1, p + i + 16, 16), memcpy(&x2, p + i + 32, 16), memcpy(&x3, p + i + 48, 16);
        s0 += x0, s1 += x1, s2 += x2, s3 += x3;
    }
    return (s0 + s1) + (s2 + s3);
}

/* The same bytes as two streams, the part's halves read side by side */
static fl_vec floor_read2(const char *p, size_t n, int ahead) {
    const size_t h = n / 128 * 64;
    const char *q = p + h;
    fl_vec s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < h; i += 64) {
        fl_vec x0, x1, x2, x3;
        if (ahead && i + 4096 < h) __builtin_prefetch(p + i + 4096, 0, 3), __builtin_prefetch(q + i + 4096, 0, 3);
        memcpy(&x0, p + i, 16), memcpy(&x1, p + i + 16, 16), memcpy(&x2, p + i + 32, 16), memcpy(&x3, p + i + 48, 16);
        s0 += x0, s1 += x1, s2 += x2, s3 += x3;
        memcpy(&x0, q + i, 16), memcpy(&x1, q + i + 16, 16), memcpy(&x2, q + i + 32, 16), memcpy(&x3, q + i + 48, 16);
        s0 += x0, s1 += x1, s2 += x2, s3 += x3;
    }
    return (s0 + s1) + (s2 + s3) + floor_read(q + h, n - 2 * h, 0);
}

static void floor_part(floor_job *f, int tid) {
    size_t part = f->n / (size_t)f->nt;
    const char *p = f->buf + part * (size_t)tid;
    f->sink[tid] += f->ahead >= 2 ? floor_read2(p, part, f->ahead - 2) : floor_read(p, part, f->ahead);
}

static void *floor_worker(void *v) {
    floor_arg *a = v;
    floor_job *f = a->f;
    for (int seen = 0;;) {
        int g;
        while ((g = atomic_load_explicit(&f->gen, memory_order_acquire)) == seen) {}
        if (g > f->passes) return NULL;
        seen = g;
        floor_part(f, a->tid);
        atomic_fetch_add_explicit(&f->done, 1, memory_order_release);
    }
}

/* One untimed pass, then f->passes timed ones of f->n bytes (ms in samples). Fewer threads if some
 * cannot be started. */
static void floor_passes(floor_job *f, double *samples) {
    pthread_t th[64];
    floor_arg args[64];
    int started = 1;
    atomic_store(&f->gen, 0);
    atomic_store(&f->done, 0);
    for (int t = 1; t < f->nt; t++) {
        args[t] = (floor_arg){f, t};
        if (pthread_create(&th[t], NULL, floor_worker, &args[t])) break;
        started++;
    }
    int nt = f->nt;
    f->nt = started;
    f->n -= f->n % (64 * (size_t)started);
    f->passes++; /* pass 1 is the untimed one */
    for (int g = 1; g <= f->passes; g++) {
        atomic_store_explicit(&f->done, 0, memory_order_relaxed);
        double t = cli_now_ms();
        atomic_store_explicit(&f->gen, g, memory_order_release);
        floor_part(f, 0);
        while (atomic_load_explicit(&f->done, memory_order_acquire) < started - 1) {}
        if (g > 1) samples[g - 2] = cli_now_ms() - t;
    }
    atomic_store_explicit(&f->gen, f->passes + 1, memory_order_release);
    for (int t = 1; t < started; t++) pthread_join(th[t], NULL);
    f->passes--;
    f->nt = nt;
}

static const int k_prefill[3] = {8, 64, 512};
static const int k_batch[4] = {1, 2, 4, 8};
#define N_SEQ 8

int cmd_bench(int argc, char **argv) {
    argp p = {"bench", argc, argv, 0, 0};
    const char *model = NULL;
    const char *kv = "f32";
    long threads = 0, reps = 5, prefix = 64;
    int json = 0, floor_on = 0;
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
        else if (arg_is(&p, NULL, "--floor")) floor_on = 1;
        else if (!p.bad) return cli_usage_error("bench", "unknown argument '%s'", argv[p.i]);
        if (p.bad) return CLI_USAGE;
    }
    if (strcmp(kv, "f32") && strcmp(kv, "f16")) return cli_usage_error("bench", "--kv must be f32 or f16, not '%s'", kv);
    static char defbuf[4200];
    if (!model) model = cli_default_model(defbuf, sizeof defbuf); /* NULL: cli_load says so */

    double t0 = cli_now_ms();
    laya_model *m = cli_load(model, (int32_t)threads, 0);
    if (!m) return CLI_FAIL;
    double load_ms = cli_now_ms() - t0;

    int rc = CLI_OK;
    void *fbuf = MAP_FAILED; /* --floor's read buffer */
    size_t fcap = 0;
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
    double first_ms = cli_now_ms() - t0;
    laya_model_wait_ready(m);
    double ready_ms = cli_now_ms() - t0;
    laya_seq_truncate(c, 0, 0);
    /* warm-up: first touch of the weights and scratch */
    DECODE(((laya_batch){8, tok, seq, NULL}));

    for (int k = 0; k < 3; k++) {
        int n = k_prefill[k];
        for (int r = 0; r < reps; r++) {
            laya_seq_truncate(c, 0, 0);
            double t = cli_now_ms();
            DECODE(((laya_batch){n, tok, seq, NULL}));
            double dt = cli_now_ms() - t;
            samples[r] = dt > 0 ? n / (dt / 1e3) : INFINITY;
        }
        pre[k] = summarize(samples, (int)reps);
    }

    laya_seq_truncate(c, 0, 0);
    DECODE(((laya_batch){prefix, tok, seq, NULL}));
    for (int k = 0; k < 4; k++) {
        if ((rc = decode_steps(c, k_batch[k], prefix, steps, tok, want, samples))) goto done;
        dec[k] = summarize(samples, steps);
    }
#undef DECODE

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss_mb = (double)ru.ru_maxrss / 1024.0; /* Linux reports kilobytes */

    /* The memory floor side by side: per round and B, the read loop over the bytes a step reads, then
     * the steps themselves, so that both see the same minute of a shared machine. */
    enum { FLOOR_ROUNDS = 3 };
    struct { double mb, floor_ms, step_ms, ratio, rmin, rmax; } fl[4];
    if (floor_on) {
        laya_model_info mi;
        laya_model_get_info(m, &mi);
        /* keys and values the B sequences attend to, averaged over the timed steps: timed step s of
         * sequence j reads positions 0..prefix + s + 1; forks share the prefix in whole 64s (laya_seq_fork) */
        double kv_pp = 2.0 * mi.n_layer * mi.n_head_kv * mi.head_dim * (cp.kv_type == LAYA_KV_F16 ? 2 : 4);
        double own = prefix + 2 + (steps - 1) / 2.0;
        size_t fb[4];
        for (int k = 0; k < 4; k++) {
            int B = k_batch[k], sh = B > 1 ? prefix / 64 * 64 : 0;
            fb[k] = (size_t)mi.step_bytes + (size_t)(kv_pp * (sh + B * (own - sh)));
            fcap = CLI_MAX(fcap, fb[k]);
        }
        int nt = CLI_MAX(1, CLI_MIN(64, mi.n_threads));
        fcap += 64 * (size_t)nt;
        fbuf = mmap(NULL, fcap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        double *fs = malloc(FLOOR_ROUNDS * 4 * 2 * sizeof *fs), *fsamp = malloc((size_t)CLI_MAX(reps, 5) * sizeof *fsamp);
        if (fbuf == MAP_FAILED || !fs || !fsamp) {
            free(fs), free(fsamp);
            rc = cli_fail("--floor: cannot allocate %.1f MB for the read loop", (double)fcap / 1e6);
            goto done;
        }
#ifdef MADV_HUGEPAGE
        madvise(fbuf, fcap, MADV_HUGEPAGE); /* as the packed weights are */
#endif
        memset(fbuf, 1, fcap);
        static floor_job fj; /* static: its sink array need not live on the stack */
        fj.buf = fbuf;
        fj.nt = nt;
        fj.passes = (int)CLI_MAX(reps, 5);
        for (int r = 0; r < FLOOR_ROUNDS; r++)
            for (int k = 0; k < 4; k++) {
                /* the pool's threads spin a little after a pass, then sleep: let them */
                nanosleep(&(struct timespec){0, 5000000}, NULL);
                /* the fastest of four read loops, one stream or two a thread, with and without prefetches.
                 * Two streams: 0.5B Q4_0 on the Zen 5, in one process, three rounds, ms (one stream without
                 * / with prefetches, two streams without / with): 5.46 / 5.66 / 4.09 / 4.34, 6.24 / 6.52 /
                 * 3.85 / 4.11, 6.65 / 6.27 / 4.81 / 5.02; typing Q4_0 0.231 / 0.243 / 0.143 / 0.145. From
                 * DRAM the hardware prefetchers alone keep the most lines in flight (0.5B Q4_0, 280 MB,
                 * Zen 4: 4.39-4.85 ms without, 5.99-6.54 with), while a set the L3 holds reads faster with
                 * them (bundled typing Q8_0, 37 MB: 0.252-0.288 ms against 0.308-0.420; typing Q4_0, 20 MB,
                 * 0.124-0.144 against 0.131-0.207). Without them the read loop was slower than the step on
                 * the typing files in some minutes (step / floor 0.65-0.74), which no floor may be. */
                double best = 0;
                for (int ahead = 0; ahead < 4; ahead++) {
                    fj.n = fb[k];
                    fj.ahead = ahead;
                    floor_passes(&fj, fsamp);
                    double ms = summarize(fsamp, fj.passes).med * (double)fb[k] / (double)fj.n;
                    if (!ahead || ms < best) best = ms;
                }
                fs[(r * 4 + k) * 2] = best;
                if ((rc = decode_steps(c, k_batch[k], prefix, steps, tok, want, samples))) {
                    free(fs), free(fsamp);
                    goto done;
                }
                fs[(r * 4 + k) * 2 + 1] = summarize(samples, steps).med;
            }
        for (int k = 0; k < 4; k++) {
            double a[FLOOR_ROUNDS], b[FLOOR_ROUNDS], q[FLOOR_ROUNDS];
            for (int r = 0; r < FLOOR_ROUNDS; r++)
                a[r] = fs[(r * 4 + k) * 2], b[r] = fs[(r * 4 + k) * 2 + 1], q[r] = b[r] / a[r];
            fl[k].mb = (double)fb[k] / 1e6;
            fl[k].floor_ms = summarize(a, FLOOR_ROUNDS).med;
            fl[k].step_ms = summarize(b, FLOOR_ROUNDS).med;
            fl[k].ratio = summarize(q, FLOOR_ROUNDS).med; /* sorted: q[0] and q[last] are the extremes */
            fl[k].rmin = q[0], fl[k].rmax = q[FLOOR_ROUNDS - 1];
        }
        free(fs), free(fsamp);
    }

    cj_buf b;
    cj_init(&b);
    if (json) {
        cj_cstr(&b, "{\"prefill_tok_s\":{");
        for (int k = 0; k < 3; k++) {
            cj_printf(&b, "%s\"%d\":", k ? "," : "", k_prefill[k]);
            cj_num(&b, pre[k].med);
        }
        cj_cstr(&b, "},\"decode_ms\":{");
        for (int k = 0; k < 4; k++) {
            cj_printf(&b, "%s\"%d\":", k ? "," : "", k_batch[k]);
            cj_num(&b, dec[k].med);
        }
        cj_cstr(&b, "},\"load_ms\":");
        cj_num(&b, load_ms);
        cj_cstr(&b, ",\"first_token_ms\":");
        cj_num(&b, first_ms);
        cj_cstr(&b, ",\"ready_ms\":");
        cj_num(&b, ready_ms);
        cj_cstr(&b, ",\"peak_rss_mb\":");
        cj_num(&b, rss_mb);
        for (int k = 0; floor_on && k < 4; k++) {
            cj_printf(&b, "%s\"%d\":{\"mb\":", k ? "," : ",\"floor\":{", k_batch[k]);
            cj_num(&b, fl[k].mb);
            cj_cstr(&b, ",\"floor_ms\":");
            cj_num(&b, fl[k].floor_ms);
            cj_cstr(&b, ",\"gb_s\":");
            cj_num(&b, fl[k].mb / fl[k].floor_ms); /* MB per ms */
            cj_cstr(&b, ",\"step_ms\":");
            cj_num(&b, fl[k].step_ms);
            cj_cstr(&b, ",\"ratio\":");
            cj_num(&b, fl[k].ratio);
            cj_cstr(&b, ",\"ratio_min\":");
            cj_num(&b, fl[k].rmin);
            cj_cstr(&b, ",\"ratio_max\":");
            cj_num(&b, fl[k].rmax);
            cj_cstr(&b, k == 3 ? "}}" : "}");
        }
        cj_cstr(&b, "}\n");
    } else {
        cj_printf(&b, "model %s, backend %s, %ld reps, %d decode steps\n", model, laya_cpu_backend(), reps,
                        steps);
        cj_printf(&b, "%-22s %12s %12s %12s\n", "", "median", "p10", "p90");
        for (int k = 0; k < 3; k++) {
            char label[40];
            snprintf(label, sizeof label, "prefill %d (tok/s)", k_prefill[k]);
            cj_printf(&b, "%-22s %12.1f %12.1f %12.1f\n", label, pre[k].med, pre[k].p10, pre[k].p90);
        }
        for (int k = 0; k < 4; k++) {
            char label[40];
            snprintf(label, sizeof label, "decode B=%d (ms/step)", k_batch[k]);
            cj_printf(&b, "%-22s %12.3f %12.3f %12.3f\n", label, dec[k].med, dec[k].p10, dec[k].p90);
        }
        cj_printf(&b, "%-22s %12.1f\n", "load (ms)", load_ms);
        cj_printf(&b, "%-22s %12.1f\n", "first token (ms)", first_ms);
        cj_printf(&b, "%-22s %12.1f\n", "weights packed (ms)", ready_ms);
        cj_printf(&b, "%-22s %12.1f\n", "peak RSS (MB)", rss_mb);
        if (floor_on) {
            cj_printf(&b, "memory floor, side by side (%d rounds of: a read loop over the bytes a step reads, then the steps)\n",
                  FLOOR_ROUNDS);
            cj_printf(&b, "%-22s %9s %9s %9s %9s %11s %13s\n", "", "MB read", "floor ms", "GB/s", "step ms",
                  "step/floor", "(min-max)");
            for (int k = 0; k < 4; k++) {
                char label[40];
                snprintf(label, sizeof label, "decode B=%d", k_batch[k]);
                cj_printf(&b, "%-22s %9.1f %9.3f %9.1f %9.3f %11.2f %6.2f-%.2f\n", label, fl[k].mb, fl[k].floor_ms,
                      fl[k].mb / fl[k].floor_ms, fl[k].step_ms, fl[k].ratio, fl[k].rmin, fl[k].rmax);
            }
        }
    }
    if (b.oom) rc = cli_fail("out of memory");
    else if (fwrite(b.p, 1, b.len, stdout) != b.len || fflush(stdout)) rc = cli_fail("writing to stdout failed");
    cj_free(&b);
done:
    if (fbuf != MAP_FAILED) munmap(fbuf, fcap);
    free(tok);
    free(seq);
    free(want);
    free(samples);
    laya_context_free(c);
    laya_model_free(m);
    return rc;
}
