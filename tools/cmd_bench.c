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
    "usage: laya bench [-m MODEL] [--threads N] [--reps R] [--prefix P] [--kv f32|f16] [--floor]\n"    \
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
    "   \"load_ms\":x,\"first_token_ms\":x,\"ready_ms\":x,\"peak_rss_mb\":x\n"           \
    "   [,\"floor\":{\"B\":{\"mb\":x,\"floor_ms\":x,\"gb_s\":x,\"step_ms\":x,\"ratio\":x,\"ratio_min\":x,\"ratio_max\":x},...}]}\n" \
    "  (medians; mb = 10^6 bytes)\n"                                                                \
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
enum { FLOOR_ROUNDS = 3, MAX_KV = 512 };

/* One run of `laya bench`: its settings, buffers and results. */
typedef struct bench_run {
    const char *model, *kv;
    long threads, reps, prefix;
    int json, floor_on;
    laya_model *m;
    laya_context *c;
    laya_context_params cp;
    int steps;            /* timed decode steps for each B */
    laya_token *tok;      /* [512] ids spread over the vocabulary */
    int32_t *seq;         /* [512] all 0 */
    int8_t *want;         /* [512] all 1 */
    double *samples;      /* [max(reps, steps)] */
    void *fbuf;           /* --floor's read buffer (MAP_FAILED: none) */
    size_t fcap;
    double load_ms, first_ms, ready_ms, rss_mb;
    stats pre[3], dec[4];
    struct { double mb, floor_ms, step_ms, ratio, rmin, rmax; } fl[4];
} bench_run;

static int parse_bench(int argc, char **argv, bench_run *r) {
    argp p = {"bench", argc, argv, 0, 0};
    for (p.i = 0; p.i < argc; p.i++) {
        const char *v;
        if (arg_help(&p)) {
            fputs(HELP_BENCH, stdout);
            exit(CLI_OK);
        }
        if ((v = arg_str(&p, "-m", "--model"))) r->model = v;
        else if (arg_int(&p, "-t", "--threads", 0, 64, &r->threads)) {}
        else if (arg_int(&p, "-r", "--reps", 1, 10000, &r->reps)) {}
        else if (arg_int(&p, NULL, "--prefix", 16, 448, &r->prefix)) {}
        else if ((v = arg_str(&p, NULL, "--kv"))) r->kv = v;
        else if (arg_is(&p, NULL, "--json")) r->json = 1;
        else if (arg_is(&p, NULL, "--floor")) r->floor_on = 1;
        else if (!p.bad) return cli_usage_error("bench", "unknown argument '%s'", argv[p.i]);
        if (p.bad) return CLI_USAGE;
    }
    if (strcmp(r->kv, "f32") && strcmp(r->kv, "f16"))
        return cli_usage_error("bench", "--kv must be f32 or f16, not '%s'", r->kv);
    static char defbuf[4200];
    if (!r->model) r->model = cli_default_model(defbuf, sizeof defbuf); /* NULL: cli_load says so */
    return CLI_OK;
}

/* The context (8 sequences of MAX_KV positions) and the buffers. */
static int bench_setup(bench_run *r) {
    r->steps = (int)CLI_MIN(CLI_MAX(8, 4 * r->reps), MAX_KV - r->prefix - 1);
    laya_context_params cp = laya_context_default_params();
    cp.n_seq = N_SEQ;
    cp.max_kv_size = MAX_KV;
    cp.max_batch = 512;
    cp.max_logits = N_SEQ;
    cp.kv_type = strcmp(r->kv, "f16") ? LAYA_KV_F32 : LAYA_KV_F16;
    r->cp = cp;
    char err[LAYA_ERR_MSG_MAX] = "";
    laya_status st = laya_context_create(r->m, cp, &r->c, err, sizeof err);
    r->tok = malloc(512 * sizeof *r->tok);
    r->seq = calloc(512, sizeof *r->seq);
    r->want = malloc(512);
    r->samples = malloc((size_t)CLI_MAX(r->reps, r->steps) * sizeof *r->samples);
    if (st || !r->c) return cli_fail("cannot create a context: %s", err[0] ? err : laya_status_str(st));
    if (!r->tok || !r->seq || !r->want || !r->samples) return cli_fail("out of memory");
    /* ids spread over the vocabulary; their values do not change the work done */
    int32_t nv = laya_n_vocab(r->m);
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 512; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        r->tok[i] = (laya_token)((s >> 33) % (uint64_t)nv);
    }
    memset(r->want, 1, 512);
    return CLI_OK;
}

static int bench_decode(bench_run *r, int n) {
    if (laya_decode(r->c, (laya_batch){n, r->tok, r->seq, NULL}))
        return cli_fail("decode: %s", laya_context_error(r->c));
    return CLI_OK;
}

/* First token and packed weights (from t0, the start of the load), prefill and decode steps. */
static int bench_speed(bench_run *r, double t0) {
    int rc;
    /* load to first token: a context and one decode step, as a keyboard's first key press needs; then
     * the copy of pack_weights, which the steady-state figures below are meant to include */
    if ((rc = bench_decode(r, 1))) return rc;
    r->first_ms = cli_now_ms() - t0;
    laya_model_wait_ready(r->m);
    r->ready_ms = cli_now_ms() - t0;
    laya_seq_truncate(r->c, 0, 0);
    /* warm-up: first touch of the weights and scratch */
    if ((rc = bench_decode(r, 8))) return rc;
    for (int k = 0; k < 3; k++) {
        int n = k_prefill[k];
        for (int i = 0; i < r->reps; i++) {
            laya_seq_truncate(r->c, 0, 0);
            double t = cli_now_ms();
            if ((rc = bench_decode(r, n))) return rc;
            double dt = cli_now_ms() - t;
            r->samples[i] = dt > 0 ? n / (dt / 1e3) : INFINITY;
        }
        r->pre[k] = summarize(r->samples, (int)r->reps);
    }
    laya_seq_truncate(r->c, 0, 0);
    if ((rc = bench_decode(r, (int)r->prefix))) return rc;
    for (int k = 0; k < 4; k++) {
        if ((rc = decode_steps(r->c, k_batch[k], (int)r->prefix, r->steps, r->tok, r->want, r->samples))) return rc;
        r->dec[k] = summarize(r->samples, r->steps);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->rss_mb = (double)ru.ru_maxrss / 1024.0; /* Linux reports kilobytes */
    return CLI_OK;
}

/* The bytes one step of B sequences reads: the weights, and the keys and values the B sequences attend
 * to, averaged over the timed steps (timed step s of sequence j reads positions 0..prefix + s + 1; forks
 * share the prefix in whole 64s, laya_seq_fork). */
static size_t step_bytes(const bench_run *r, const laya_model_info *mi, int B) {
    double kv_pp = 2.0 * mi->n_layer * mi->n_head_kv * mi->head_dim * (r->cp.kv_type == LAYA_KV_F16 ? 2 : 4);
    double own = r->prefix + 2 + (r->steps - 1) / 2.0;
    int sh = B > 1 ? (int)r->prefix / 64 * 64 : 0;
    return (size_t)mi->step_bytes + (size_t)(kv_pp * (sh + B * (own - sh)));
}

/* One round for one B: the fastest of the four read loops (one stream or two a thread, with and without
 * prefetches: from DRAM the hardware prefetchers alone keep the most lines in flight, a set the L3 holds
 * reads faster with them, and two streams beat one on some machines; a floor slower than the step would
 * be no floor), then the B decode steps. out[0]: floor ms, out[1]: step ms. */
static int floor_round(bench_run *r, floor_job *fj, size_t bytes, int B, double *fsamp, double out[2]) {
    /* the pool's threads spin a little after a pass, then sleep: let them */
    nanosleep(&(struct timespec){0, 5000000}, NULL);
    double best = 0;
    for (int ahead = 0; ahead < 4; ahead++) {
        fj->n = bytes;
        fj->ahead = ahead;
        floor_passes(fj, fsamp);
        double ms = summarize(fsamp, fj->passes).med * (double)bytes / (double)fj->n;
        if (!ahead || ms < best) best = ms;
    }
    out[0] = best;
    int rc = decode_steps(r->c, B, (int)r->prefix, r->steps, r->tok, r->want, r->samples);
    out[1] = rc ? 0 : summarize(r->samples, r->steps).med;
    return rc;
}

/* The memory floor side by side: per round and B, the read loop over the bytes a step reads, then the
 * steps themselves, so that both see the same minute of a shared machine. */
static int bench_floor(bench_run *r) {
    laya_model_info mi;
    laya_model_get_info(r->m, &mi);
    size_t fb[4];
    for (int k = 0; k < 4; k++) {
        fb[k] = step_bytes(r, &mi, k_batch[k]);
        r->fcap = CLI_MAX(r->fcap, fb[k]);
    }
    int nt = CLI_MAX(1, CLI_MIN(64, mi.n_threads));
    r->fcap += 64 * (size_t)nt;
    r->fbuf = mmap(NULL, r->fcap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    double fs[FLOOR_ROUNDS][4][2], *fsamp = malloc((size_t)CLI_MAX(r->reps, 5) * sizeof *fsamp);
    if (r->fbuf == MAP_FAILED || !fsamp) {
        free(fsamp);
        return cli_fail("--floor: cannot allocate %.1f MB for the read loop", (double)r->fcap / 1e6);
    }
#ifdef MADV_HUGEPAGE
    madvise(r->fbuf, r->fcap, MADV_HUGEPAGE); /* as the packed weights are */
#endif
    memset(r->fbuf, 1, r->fcap);
    static floor_job fj; /* static: its sink array need not live on the stack */
    fj.buf = r->fbuf;
    fj.nt = nt;
    fj.passes = (int)CLI_MAX(r->reps, 5);
    int rc = CLI_OK;
    for (int i = 0; !rc && i < FLOOR_ROUNDS; i++)
        for (int k = 0; !rc && k < 4; k++) rc = floor_round(r, &fj, fb[k], k_batch[k], fsamp, fs[i][k]);
    free(fsamp);
    if (rc) return rc;
    for (int k = 0; k < 4; k++) {
        double a[FLOOR_ROUNDS], b[FLOOR_ROUNDS], q[FLOOR_ROUNDS];
        for (int i = 0; i < FLOOR_ROUNDS; i++) a[i] = fs[i][k][0], b[i] = fs[i][k][1], q[i] = b[i] / a[i];
        r->fl[k].mb = (double)fb[k] / 1e6;
        r->fl[k].floor_ms = summarize(a, FLOOR_ROUNDS).med;
        r->fl[k].step_ms = summarize(b, FLOOR_ROUNDS).med;
        r->fl[k].ratio = summarize(q, FLOOR_ROUNDS).med; /* sorted: q[0] and q[last] are the extremes */
        r->fl[k].rmin = q[0], r->fl[k].rmax = q[FLOOR_ROUNDS - 1];
    }
    return CLI_OK;
}

static void put_json(const bench_run *r, cj_buf *b) {
    cj_cstr(b, "{\"prefill_tok_s\":{");
    for (int k = 0; k < 3; k++) {
        cj_printf(b, "%s\"%d\":", k ? "," : "", k_prefill[k]);
        cj_num(b, r->pre[k].med);
    }
    cj_cstr(b, "},\"decode_ms\":{");
    for (int k = 0; k < 4; k++) {
        cj_printf(b, "%s\"%d\":", k ? "," : "", k_batch[k]);
        cj_num(b, r->dec[k].med);
    }
    cj_cstr(b, "},\"load_ms\":");
    cj_num(b, r->load_ms);
    cj_cstr(b, ",\"first_token_ms\":");
    cj_num(b, r->first_ms);
    cj_cstr(b, ",\"ready_ms\":");
    cj_num(b, r->ready_ms);
    cj_cstr(b, ",\"peak_rss_mb\":");
    cj_num(b, r->rss_mb);
    for (int k = 0; r->floor_on && k < 4; k++) {
        cj_printf(b, "%s\"%d\":{\"mb\":", k ? "," : ",\"floor\":{", k_batch[k]);
        cj_num(b, r->fl[k].mb);
        cj_cstr(b, ",\"floor_ms\":");
        cj_num(b, r->fl[k].floor_ms);
        cj_cstr(b, ",\"gb_s\":");
        cj_num(b, r->fl[k].mb / r->fl[k].floor_ms); /* MB per ms */
        cj_cstr(b, ",\"step_ms\":");
        cj_num(b, r->fl[k].step_ms);
        cj_cstr(b, ",\"ratio\":");
        cj_num(b, r->fl[k].ratio);
        cj_cstr(b, ",\"ratio_min\":");
        cj_num(b, r->fl[k].rmin);
        cj_cstr(b, ",\"ratio_max\":");
        cj_num(b, r->fl[k].rmax);
        cj_cstr(b, k == 3 ? "}}" : "}");
    }
    cj_cstr(b, "}\n");
}

static void put_table(const bench_run *r, cj_buf *b) {
    char label[40];
    cj_printf(b, "model %s, backend %s, %ld reps, %d decode steps\n", r->model, laya_cpu_backend(), r->reps, r->steps);
    cj_printf(b, "%-22s %12s %12s %12s\n", "", "median", "p10", "p90");
    for (int k = 0; k < 3; k++) {
        snprintf(label, sizeof label, "prefill %d (tok/s)", k_prefill[k]);
        cj_printf(b, "%-22s %12.1f %12.1f %12.1f\n", label, r->pre[k].med, r->pre[k].p10, r->pre[k].p90);
    }
    for (int k = 0; k < 4; k++) {
        snprintf(label, sizeof label, "decode B=%d (ms/step)", k_batch[k]);
        cj_printf(b, "%-22s %12.3f %12.3f %12.3f\n", label, r->dec[k].med, r->dec[k].p10, r->dec[k].p90);
    }
    cj_printf(b, "%-22s %12.1f\n", "load (ms)", r->load_ms);
    cj_printf(b, "%-22s %12.1f\n", "first token (ms)", r->first_ms);
    cj_printf(b, "%-22s %12.1f\n", "weights packed (ms)", r->ready_ms);
    cj_printf(b, "%-22s %12.1f\n", "peak RSS (MB)", r->rss_mb);
    if (!r->floor_on) return;
    cj_printf(b, "memory floor, side by side (%d rounds of: a read loop over the bytes a step reads, then the steps)\n",
              FLOOR_ROUNDS);
    cj_printf(b, "%-22s %9s %9s %9s %9s %11s %13s\n", "", "MB read", "floor ms", "GB/s", "step ms", "step/floor",
              "(min-max)");
    for (int k = 0; k < 4; k++) {
        snprintf(label, sizeof label, "decode B=%d", k_batch[k]);
        cj_printf(b, "%-22s %9.1f %9.3f %9.1f %9.3f %11.2f %6.2f-%.2f\n", label, r->fl[k].mb, r->fl[k].floor_ms,
                  r->fl[k].mb / r->fl[k].floor_ms, r->fl[k].step_ms, r->fl[k].ratio, r->fl[k].rmin, r->fl[k].rmax);
    }
}

int cmd_bench(int argc, char **argv) {
    bench_run r = {.kv = "f32", .reps = 5, .prefix = 64, .fbuf = MAP_FAILED};
    int rc = parse_bench(argc, argv, &r);
    if (rc) return rc;
    double t0 = cli_now_ms();
    r.m = cli_load(r.model, (int32_t)r.threads, 0);
    if (!r.m) return CLI_FAIL;
    r.load_ms = cli_now_ms() - t0;
    rc = bench_setup(&r);
    if (!rc) rc = bench_speed(&r, t0);
    if (!rc && r.floor_on) rc = bench_floor(&r);
    if (!rc) {
        cj_buf b;
        cj_init(&b);
        if (r.json) put_json(&r, &b);
        else put_table(&r, &b);
        if (b.oom) rc = cli_fail("out of memory");
        else if (fwrite(b.p, 1, b.len, stdout) != b.len || fflush(stdout)) rc = cli_fail("writing to stdout failed");
        cj_free(&b);
    }
    if (r.fbuf != MAP_FAILED) munmap(r.fbuf, r.fcap);
    free(r.tok);
    free(r.seq);
    free(r.want);
    free(r.samples);
    laya_context_free(r.c);
    laya_model_free(r.m);
    return rc;
}
