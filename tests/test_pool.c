/* test_pool.c — the worker pool: every chunk runs exactly once, per-thread ids stay in range, jobs of
 * different sizes follow each other back to back, and more threads than cores (descheduled workers) work. */
#include <stdatomic.h>
#include <string.h>

#include "check.h"
#include "base/pool.h"

typedef struct {
    atomic_int hits[4096];
    atomic_int bad_tid;
    int n_threads;
} job;

static void count_chunk(void *arg, int chunk, int n_chunks, int tid) {
    job *j = arg;
    (void)n_chunks;
    atomic_fetch_add(&j->hits[chunk], 1);
    if (tid < 0 || tid >= j->n_threads) atomic_fetch_add(&j->bad_tid, 1);
}

int main(void) {
    static job j;
    int threads[] = {1, 2, 3, 8};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        lp_pool *p = NULL;
        CHECK(lp_create(threads[t], &p) == LAYA_OK, "lp_create(%d)", threads[t]);
        if (!p) continue;
        j.n_threads = lp_n_threads(p);
        int wrong = 0;
        for (int rep = 0; rep < 3000; rep++) {
            int n = 1 + (rep * 37) % 300;
            for (int c = 0; c < n; c++) atomic_store(&j.hits[c], 0);
            lp_run(p, count_chunk, &j, n);
            for (int c = 0; c < n; c++) wrong += atomic_load(&j.hits[c]) != 1;
        }
        CHECK(wrong == 0, "%d threads: %d chunks did not run exactly once", threads[t], wrong);
#ifdef LAYA_PROFILE
        /* Profiling (make profile) changes nothing but adds up the caller's waiting time. */
        lp_profile(p, 1);
        for (int rep = 0; rep < 200; rep++) {
            for (int c = 0; c < 64; c++) atomic_store(&j.hits[c], 0);
            lp_run(p, count_chunk, &j, 64);
            for (int c = 0; c < 64; c++) wrong += atomic_load(&j.hits[c]) != 1;
        }
        CHECK(wrong == 0 && lp_wait_ns(p) >= 0, "%d threads, profiling: %d chunks wrong", threads[t], wrong);
        lp_profile(p, 0);
        CHECK(lp_wait_ns(p) == 0, "profiling off resets the wait time");
#endif
        CHECK(atomic_load(&j.bad_tid) == 0, "%d threads: thread id out of range", threads[t]);
        lp_free(p);
    }
    lp_free(NULL);
    return DONE("test_pool");
}
