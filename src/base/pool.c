/* pool.c — persistent worker pool with chunk claiming. Thread t's home chunk is chunk t; chunks n.. (when a
 * job has more chunks than threads) come from one shared counter; a thread that finds its work done takes
 * the home chunks that no thread has claimed yet, so one the OS holds back delays nothing. Every claim is
 * a compare-and-swap that names the job's generation, and succeeds only while the job is still open.
 *
 * The cache lines are laid out so that a job of one chunk per thread moves as few lines between the
 * cores as it can: the caller writes the job (generation, chunk count, function, argument) into one line
 * the workers spin on; each worker claims its home chunk in a line that only it normally touches, and
 * reports the chunks it has finished in a line that only it writes and the caller reads. A line's
 * transfer between cores costs a fraction of a microsecond, and a decode step is tens of jobs. */
#include "base/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "base/common.h"

#define SPIN_PAUSE 2000   /* pause-spins before yielding: covers the gap between jobs of one pass */
#define SPIN_YIELD 200    /* sched_yield rounds before sleeping on the condition variable */

/* Job generations count from 1 in 48 bits (at a million jobs a second, 9 years before they wrap); the low
 * 16 bits of the words that carry one hold a chunk number or count (LP_MAX_CHUNKS). */
#define GEN(w) ((w) >> 16)
#define LOW(w) ((int)((w) & 0xffff))

typedef struct { _Alignas(64) _Atomic uint64_t gen; } lp_home;  /* generation of the last claim of chunk t */
typedef struct {
    _Alignas(64) _Atomic uint64_t word; /* gen << 16 | chunks thread t finished in it */
    _Atomic int64_t ns;                 /* in a timed job (LP_TIMED): the CLOCK_MONOTONIC ns at that */
} lp_done;

/* Every fourth job the threads time their part of it (lp_last_busy): a clock read a thread at the end of
 * each chunk, and the caller's two; the worker's figure rides in the line that reports its chunks, which
 * the caller reads anyway. */
#define LP_TIMED(g) (((g) & 3) == 0)

struct lp_pool {
    /* the job, written by the caller, read by the workers: fn and arg, then job (gen << 16 | chunk count),
     * which publishes them */
    _Alignas(64) _Atomic uint64_t job;
    _Atomic(lp_fn) fn;
    _Atomic(void *) arg;
    atomic_int stop;
    /* chunks n.. of a job: gen << 16 | the next one */
    _Alignas(64) _Atomic uint64_t extra;
    /* workers asleep on the condition variable: written only when one goes to sleep or wakes */
    _Alignas(64) atomic_int sleepers;
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    lp_home *home; /* n of them */
    lp_done *done; /* n of them; done[0] unused (the caller counts its own) */
#ifdef LAYA_PROFILE
    int prof;
    int64_t wait_ns;
#endif
    /* the last job's timing, for the caller (lp_last_busy): whether it was timed, and each thread's ns
     * and chunks */
    int last_timed;
    int64_t *last_ns;
    int *last_chunks;
};

typedef struct { lp_pool *p; int tid; } worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* One round of waiting on other threads: spin a while, then yield in case the one waited on is descheduled. */
static inline void backoff(int spins) {
    if (spins < SPIN_PAUSE) cpu_relax();
    else sched_yield();
}

/* Claims home chunk t of job g; 0 if another thread has. */
static int claim_home(lp_pool *p, int t, uint64_t g) {
    uint64_t v = atomic_load_explicit(&p->home[t].gen, memory_order_relaxed);
    while (v < g)
        if (atomic_compare_exchange_weak_explicit(&p->home[t].gen, &v, g, memory_order_relaxed, memory_order_relaxed))
            return 1;
    return 0;
}

/* Claims the next of chunks n.. of job g (nc chunks); -1 when none is left. */
static int claim_extra(lp_pool *p, uint64_t g, int nc) {
    uint64_t v = atomic_load_explicit(&p->extra, memory_order_relaxed);
    for (;;) {
        const int c = GEN(v) == g ? LOW(v) : GEN(v) < g ? p->n : nc;
        if (c >= nc) return -1;
        if (atomic_compare_exchange_weak_explicit(&p->extra, &v, g << 16 | (uint64_t)(c + 1),
                                                  memory_order_relaxed, memory_order_relaxed))
            return c;
    }
}

/* Runs chunk c of job g (nc chunks), claimed by thread tid, which has now finished *cnt of its chunks. A
 * claim succeeds only while its job is open: the caller is waiting on that chunk and has not written fn
 * and arg since it published the job, which this thread saw with acquire order (job). */
static void run_chunk(lp_pool *p, int c, int nc, int tid, uint64_t g, int *cnt) {
    lp_fn fn = atomic_load_explicit(&p->fn, memory_order_relaxed);
    fn(atomic_load_explicit(&p->arg, memory_order_relaxed), c, nc, tid);
    ++*cnt;
    if (tid && LP_TIMED(g)) atomic_store_explicit(&p->done[tid].ns, laya_now_ns(), memory_order_relaxed);
    if (tid) atomic_store_explicit(&p->done[tid].word, g << 16 | (uint64_t)*cnt, memory_order_release);
}

/* Thread tid's part of a job (gen << 16 | nc): its home chunk, the home chunks of threads that have not
 * started the job, then the extra chunks, so that the chunks run about in their order (a decode during
 * the packing has chunks of falling sizes, and reads the file's rows in order: pack_views, forward.c).
 * Returns how many chunks it ran. */
static int work(lp_pool *p, uint64_t job, int tid) {
    const uint64_t g = GEN(job);
    const int nc = LOW(job);
    int cnt = 0;
    if (tid < nc && claim_home(p, tid, g)) {
        /* started: the other threads need not take this thread's home chunk */
        if (tid) atomic_store_explicit(&p->done[tid].word, g << 16, memory_order_relaxed);
        run_chunk(p, tid, nc, tid, g, &cnt);
    }
    /* (never the caller's home chunk: it claims that at once) */
    for (int t = 1; t < p->n && t < nc; t++) {
        if (t == tid || GEN(atomic_load_explicit(&p->done[t].word, memory_order_relaxed)) == g) continue;
        if (claim_home(p, t, g)) run_chunk(p, t, nc, tid, g, &cnt);
    }
    for (int c; nc > p->n && (c = claim_extra(p, g, nc)) >= 0;) run_chunk(p, c, nc, tid, g, &cnt);
    return cnt;
}

static void *worker_main(void *v) {
    worker_arg wa = *(worker_arg *)v;
    laya_free(v);
    lp_pool *p = wa.p;
    uint64_t seen = 0;
    for (;;) {
        uint64_t job;
        int spins = 0;
        while ((job = atomic_load_explicit(&p->job, memory_order_acquire)) == seen) {
            if (atomic_load_explicit(&p->stop, memory_order_relaxed)) return NULL;
            spins++;
            if (spins < SPIN_PAUSE) {
                cpu_relax();
            } else if (spins < SPIN_PAUSE + SPIN_YIELD) {
                sched_yield();
            } else {
                pthread_mutex_lock(&p->mu);
                atomic_fetch_add(&p->sleepers, 1);
                while (atomic_load(&p->job) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
                atomic_fetch_sub(&p->sleepers, 1);
                pthread_mutex_unlock(&p->mu);
                spins = 0;
            }
        }
        seen = job;
        if (atomic_load(&p->stop)) return NULL;
        work(p, job, wa.tid);
    }
}

laya_status lp_create(int n_threads, lp_pool **out) {
    *out = NULL;
    if (n_threads < 1) n_threads = 1;
    if (n_threads > 64) n_threads = 64;
    lp_pool *p = laya_calloc(1, sizeof *p);
    if (!p) return LAYA_ERR_NOMEM;
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->home = laya_aligned_alloc(64, (size_t)n_threads * sizeof(lp_home));
    p->done = laya_aligned_alloc(64, (size_t)n_threads * sizeof(lp_done));
    p->last_ns = laya_calloc((size_t)n_threads, sizeof *p->last_ns);
    p->last_chunks = laya_calloc((size_t)n_threads, sizeof *p->last_chunks);
    if (!p->home || !p->done || !p->last_ns || !p->last_chunks) { p->n = 1; lp_free(p); return LAYA_ERR_NOMEM; }
    for (int i = 0; i < n_threads; i++) {
        atomic_init(&p->home[i].gen, 0);
        atomic_init(&p->done[i].word, 0);
        atomic_init(&p->done[i].ns, 0);
    }
    if (n_threads > 1) {
        p->threads = laya_calloc((size_t)n_threads, sizeof(pthread_t));
        if (!p->threads) { p->n = 1; lp_free(p); return LAYA_ERR_NOMEM; }
        for (int i = 1; i < n_threads; i++) {
            worker_arg *wa = laya_malloc(sizeof *wa);
            int ok = wa != NULL;
            if (ok) {
                wa->p = p;
                wa->tid = i;
                ok = pthread_create(&p->threads[i], NULL, worker_main, wa) == 0;
                if (!ok) laya_free(wa);
            }
            if (!ok) { p->n = i; lp_free(p); return LAYA_ERR_NOMEM; }
        }
    }
    *out = p;
    return LAYA_OK;
}

void lp_free(lp_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    laya_free(p->threads);
    laya_free(p->home);
    laya_free(p->done);
    laya_free(p->last_ns);
    laya_free(p->last_chunks);
    laya_free(p);
}

int lp_n_threads(const lp_pool *p) { return p->n; }

void lp_wait_at_least(atomic_int *counter, int target) {
    for (int spins = 0; atomic_load_explicit(counter, memory_order_acquire) < target; spins++) backoff(spins);
}

void lp_run(lp_pool *p, lp_fn fn, void *arg, int n_chunks) {
    if (n_chunks < 1) return;
    if (n_chunks > LP_MAX_CHUNKS) n_chunks = LP_MAX_CHUNKS; /* callers size their chunks below this */
    if (p->n == 1 || n_chunks == 1) {
        p->last_timed = 0;
        for (int c = 0; c < n_chunks; c++) fn(arg, c, n_chunks, 0);
        return;
    }
    /* The previous job is complete (we waited for it), so no claim can succeed until the store of job. */
    const uint64_t g = GEN(atomic_load_explicit(&p->job, memory_order_relaxed)) + 1;
    atomic_store_explicit(&p->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&p->arg, arg, memory_order_relaxed);
    const uint64_t job = g << 16 | (uint64_t)n_chunks;
    const int64_t c0 = LP_TIMED(g) ? laya_now_ns() : 0; /* every thread's time counts from here */
    atomic_store(&p->job, job); /* seq_cst: publishes the job, and pairs with the sleepers check below (Dekker) */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    const int mine = work(p, job, 0);
    if (c0) p->last_ns[0] = laya_now_ns() - c0, p->last_chunks[0] = mine;
#ifdef LAYA_PROFILE
    const int64_t t0 = p->prof ? laya_now_ns() : 0;
#endif
    /* Chunks still running elsewhere: wait, yielding if the runner seems descheduled. */
    for (int spins = 0, total = mine; total < n_chunks; spins++) {
        backoff(spins);
        total = mine;
        for (int t = 1; t < p->n; t++) {
            const uint64_t w = atomic_load_explicit(&p->done[t].word, memory_order_acquire);
            if (GEN(w) == g) total += LOW(w);
        }
    }
#ifdef LAYA_PROFILE
    if (p->prof) p->wait_ns += laya_now_ns() - t0;
#endif
    p->last_timed = c0 != 0;
    if (c0)
        for (int t = 1; t < p->n; t++) { /* seen complete above with acquire order: ns was stored before */
            const uint64_t w = atomic_load_explicit(&p->done[t].word, memory_order_acquire);
            p->last_chunks[t] = GEN(w) == g ? LOW(w) : 0;
            p->last_ns[t] = p->last_chunks[t] ? atomic_load_explicit(&p->done[t].ns, memory_order_relaxed) - c0 : 0;
        }
}

int lp_last_busy(const lp_pool *p, const int64_t **ns, const int **chunks) {
    if (!p->last_timed) return 0;
    *ns = p->last_ns;
    *chunks = p->last_chunks;
    return 1;
}

#ifdef LAYA_PROFILE
void lp_profile(lp_pool *p, int on) {
    p->prof = on;
    p->wait_ns = 0;
}

int64_t lp_wait_ns(const lp_pool *p) { return p->wait_ns; }
#endif
