/* pool.h — a persistent worker pool for forward passes. The caller thread works too; workers spin
 * briefly for the next job (a keystroke decision issues many short jobs back to back) and then sleep on a
 * condition variable so idle sessions burn no CPU. Not a general task scheduler. */
#ifndef LAYA_POOL_H
#define LAYA_POOL_H

#include "laya.h"

typedef struct lp_pool lp_pool;
/* fn(arg, ith, nth) runs once on each of nth threads (ith = 0 is the caller). */
typedef void (*lp_fn)(void *arg, int ith, int nth);

laya_status lp_create(int n_threads, lp_pool **out);
void lp_free(lp_pool *p);
int lp_n_threads(const lp_pool *p);
/* Run fn on every thread and return when all have finished. Never allocates. */
void lp_run(lp_pool *p, lp_fn fn, void *arg);

#endif
