/* deadline.c — when a decision stops and how long a step takes (deadline.h). Not here: what is decoded. */
#include "typing/deadline.h"

#include "typing/session.h"

double dl_step_estimate(const laya_session *s, int32_t rows) { return rows ? s->dl.step_ms * (1 + rows) / 2.0 : 0; }

/* One more measured step: the median of the recent ones is robust to a descheduled thread or a cold cache,
 * and it follows the machine's speed as it changes. */
void dl_step_learn(laya_session *s, double ms, int32_t rows) {
    if (rows <= 0) return;
    s->dl.hist[s->dl.n_hist++ % 8] = ms * 2.0 / (1 + rows);
    int32_t n = LAYA_MIN(s->dl.n_hist, 8);
    double v[8];
    memcpy(v, s->dl.hist, (size_t)n * sizeof *v);
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    s->dl.step_ms = v[n / 2];
}

int dl_stop_now(laya_session *s, double step_ms) {
    if (atomic_load(&s->interrupted)) return 1;
    /* a guess: the budget, not the deadline; each call makes one step at least, so slices of any size
     * make progress */
    if (s->pf.active) return s->st.n_decoded + s->st.n_computed + s->pf.done_rows > 0 && laya_now_ms() + step_ms > s->pf.end;
    if (s->p.deadline_ms > 0 && laya_now_ms() - s->dl.t0 + step_ms > s->p.deadline_ms) return 1;
    return 0;
}
