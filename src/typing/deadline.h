/* deadline.h — when a decision stops: its deadline, a prefetch's budget, an interrupt; and the estimate of
 * a decode step's time that lets a step shrink to what fits. Not here: what is decoded. */
#ifndef LAYA_DEADLINE_H
#define LAYA_DEADLINE_H

#include <stdint.h>

#include "laya.h"

typedef struct dl_clock {
    double t0;                 /* when the decision started */
    double step_ms;            /* a decode step of one row: the median of the last 8 steps (each
                                  normalized); a step of r rows is predicted at step_ms * (1 + r) / 2 */
    double hist[8];
    int32_t n_hist;
} dl_clock;

double dl_step_estimate(const laya_session *s, int32_t rows);
void dl_step_learn(laya_session *s, double ms, int32_t rows);
/* 1: a step of this long must not start (interrupted, past the deadline or the prefetch budget). */
int dl_stop_now(laya_session *s, double step_ms);

#endif
