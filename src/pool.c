/* pool.c — persistent worker pool with chunk claiming. One 64-bit word holds (job generation, chunk count,
 * next chunk); a thread claims a chunk by compare-and-swap on it, so a claim can only succeed while that
 * job is open, and the job's fn/arg (written before the word is published) are stable until every chunk
 * of it is done. Completion is a counter the caller waits on. */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "common.h"

#define SPIN_PAUSE 2000   /* pause-spins before yielding: covers the gap between jobs of one pass */
#define SPIN_YIELD 200    /* sched_yield rounds before sleeping on the condition variable */

struct lp_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t claim; /* gen << 32 | n_chunks << 16 | next chunk */
    atomic_uint gen;        /* last published generation: what workers wait on */
    atomic_int done;        /* chunks finished in the current job */
    atomic_int stop;
    atomic_int sleepers;
    lp_fn fn;
    void *arg;
    int prof;
    int64_t wait_ns;
};

typedef struct { lp_pool *p; int tid; } worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Claims and runs chunks of job `gen` until none is left. */
static void work(lp_pool *p, uint32_t gen, int tid) {
    for (;;) {
        uint64_t v = atomic_load(&p->claim);
        uint32_t n = (uint32_t)(v >> 16) & 0xffff, c = (uint32_t)v & 0xffff;
        if ((uint32_t)(v >> 32) != gen || c >= n) return;
        if (!atomic_compare_exchange_weak(&p->claim, &v, v + 1)) continue;
        p->fn(p->arg, (int)c, (int)n, tid);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_release);
    }
}

static void *worker_main(void *v) {
    worker_arg wa = *(worker_arg *)v;
    laya_free(v);
    lp_pool *p = wa.p;
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load(&p->gen)) == seen) {
            if (atomic_load(&p->stop)) return NULL;
            spins++;
            if (spins < SPIN_PAUSE) {
                cpu_relax();
            } else if (spins < SPIN_PAUSE + SPIN_YIELD) {
                sched_yield();
            } else {
                pthread_mutex_lock(&p->mu);
                atomic_fetch_add(&p->sleepers, 1);
                while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
                atomic_fetch_sub(&p->sleepers, 1);
                pthread_mutex_unlock(&p->mu);
                spins = 0;
            }
        }
        seen = g;
        if (atomic_load(&p->stop)) return NULL;
        work(p, g, wa.tid);
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
    laya_free(p);
}

int lp_n_threads(const lp_pool *p) { return p->n; }

void lp_wait_at_least(atomic_int *counter, int target) {
    for (int spins = 0; atomic_load_explicit(counter, memory_order_acquire) < target; spins++) {
        if (spins < SPIN_PAUSE) cpu_relax();
        else sched_yield();
    }
}

void lp_run(lp_pool *p, lp_fn fn, void *arg, int n_chunks) {
    if (n_chunks < 1) return;
    if (n_chunks > LP_MAX_CHUNKS) n_chunks = LP_MAX_CHUNKS; /* callers size their chunks below this */
    if (p->n == 1 || n_chunks == 1) {
        for (int c = 0; c < n_chunks; c++) fn(arg, c, n_chunks, 0);
        return;
    }
    /* The previous job is complete (we waited for it), so no claim can succeed until the store below. */
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    uint32_t gen = atomic_load(&p->gen) + 1;
    atomic_store(&p->claim, (uint64_t)gen << 32 | (uint64_t)n_chunks << 16);
    atomic_store(&p->gen, gen); /* seq_cst: pairs with the sleepers check below (Dekker) */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    work(p, gen, 0);
    struct timespec t0, t1;
    if (p->prof) clock_gettime(CLOCK_MONOTONIC, &t0);
    /* Chunks still running elsewhere: wait, yielding if the runner seems descheduled. */
    lp_wait_at_least(&p->done, n_chunks);
    if (p->prof) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        p->wait_ns += (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
    }
}

void lp_profile(lp_pool *p, int on) {
    p->prof = on;
    p->wait_ns = 0;
}

int64_t lp_wait_ns(const lp_pool *p) { return p->wait_ns; }
