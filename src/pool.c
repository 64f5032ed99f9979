/* pool.c — persistent worker pool: a generation counter publishes each job, workers spin on it for a
 * short while, then block on a condition variable. Completion is a counter the caller spins on. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define SPIN_ITERS 20000 /* about 10-50 us before sleeping: covers the gap between jobs of one pass */

struct lp_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint gen;      /* incremented to publish a job */
    atomic_int pending;   /* workers still running the current job */
    atomic_int stop;
    atomic_int sleepers;
    lp_fn fn;
    void *arg;
};

typedef struct { lp_pool *p; int ith; } worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void *worker_main(void *v) {
    worker_arg wa = *(worker_arg *)v;
    laya_free(v);
    lp_pool *p = wa.p;
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) {
            if (atomic_load(&p->stop)) return NULL;
            if (++spins < SPIN_ITERS) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
            spins = 0;
        }
        seen = g;
        if (atomic_load(&p->stop)) return NULL;
        p->fn(p->arg, wa.ith, p->n);
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel);
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
        if (!p->threads) { lp_free(p); return LAYA_ERR_NOMEM; }
        for (int i = 1; i < n_threads; i++) {
            worker_arg *wa = laya_malloc(sizeof *wa);
            if (!wa) { p->n = i; lp_free(p); return LAYA_ERR_NOMEM; }
            wa->p = p;
            wa->ith = i;
            if (pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
                laya_free(wa);
                p->n = i;
                lp_free(p);
                return LAYA_ERR_NOMEM;
            }
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

void lp_run(lp_pool *p, lp_fn fn, void *arg) {
    if (p->n == 1) {
        fn(arg, 0, 1);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
    atomic_fetch_add(&p->gen, 1); /* seq_cst: pairs with the sleepers check below (Dekker) */
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(arg, 0, p->n);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) cpu_relax();
}
