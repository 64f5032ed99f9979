/* pool.h — a persistent worker pool for forward passes. A job is split into chunks that threads claim one
 * at a time, so a worker the OS has descheduled (a busy machine, an IME sharing the CPU) never holds up the
 * keystroke: whoever is running takes the remaining chunks. Workers spin briefly between jobs, then yield,
 * then sleep, so idle sessions burn no CPU. Not a general task scheduler. */
#ifndef LAYA_POOL_H
#define LAYA_POOL_H

#include <stdatomic.h>
#include "laya.h"

typedef struct lp_pool lp_pool;
/* Runs chunk `chunk` of n_chunks. tid in [0, n_threads) names the running thread (for per-thread scratch);
 * a chunk runs exactly once, on any thread. */
typedef void (*lp_fn)(void *arg, int chunk, int n_chunks, int tid);

#define LP_MAX_CHUNKS 65535

laya_status lp_create(int n_threads, lp_pool **out);
void lp_free(lp_pool *p);
int lp_n_threads(const lp_pool *p);
/* Run every chunk of [0, n_chunks) (1 <= n_chunks <= LP_MAX_CHUNKS) and return when all are done.
 * The caller thread works too. Never allocates. */
void lp_run(lp_pool *p, lp_fn fn, void *arg, int n_chunks);
/* Spins (then yields) until *counter >= target, with acquire order: how lp_run waits on chunks still
 * running, and how a job's chunks wait on a prologue they share (forward.c: activation rows that other
 * threads have claimed and not yet quantized). */
void lp_wait_at_least(atomic_int *counter, int target);
/* After lp_run, on the caller's thread: 1 when that job was timed (every fourth job of more than one chunk
 * is), with each thread's nanoseconds from the job's publication to the end of its last chunk (ns[t]) and
 * how many chunks it ran (chunks[t]), n_threads of each; 0 otherwise. */
int lp_last_busy(const lp_pool *p, const int64_t **ns, const int **chunks);
#ifdef LAYA_PROFILE
/* Profiling (engine/fwprof.h, make profile): when on, lp_run adds the nanoseconds the caller waits for
 * other threads. */
void lp_profile(lp_pool *p, int on);
int64_t lp_wait_ns(const lp_pool *p);
#endif

#endif
