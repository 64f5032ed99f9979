/* worker.c — laya_worker (laya.h): the asynchronous form, a thread that owns one session and drives it
 * through the public session API only (set_text_tail, suggest, prefetch, interrupt, candidates, learn),
 * as any client could. Newer submits interrupt older decisions; idle time goes to prefetch.
 * Not here: anything about how a decision is made (session.c and the modules it calls). */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

#include "laya.h"
#include "base/common.h"

/* While a deadline-cut decision is being finished, prefetch runs in slices of this long, so that its full
 * candidates are delivered soon after they exist rather than at the end of the idle budget. */
#define REFINE_SLICE_MS 5.0

typedef struct cand_copy {
    laya_candidate c[LAYA_MAX_CANDIDATES];
    char text[LAYA_MAX_CANDIDATES][LAYA_CANDIDATE_MAX_BYTES];
    int32_t n;
} cand_copy;

/* What the caller's threads and the worker's share, under mu. Apart from laya_worker so that the const
 * calls (get_stats, error) can lock it. */
typedef struct wsync {
    pthread_mutex_t mu;
    pthread_mutex_t hold_mu;     /* one holder at a time: accept, learn and set_context from several threads */
    pthread_cond_t cv, idle_cv;  /* cv: a job, a hold released or stop; idle_cv: the thread went idle */
    uint64_t sub_gen;            /* the newest submit (or cancel) */
    uint64_t run_gen, done_gen;  /* the submit the thread took last; whose result res holds */
    int busy, stop, job_valid;
    int in_session;              /* the thread is inside a session call: interrupts reach it */
    int prefetching;             /* ... and that call is prefetch (accept and learn may interrupt it) */
    int prefetch_stopped;        /* a hold interrupted this idle time's prefetch: it does not resume */
    int hold;                    /* callers waiting to use the session between decisions */
    char *a_before, *a_after;    /* the newest submit's text: the end of before (tail_bytes), and after */
    size_t ab_len, a_full, aa_len;
    laya_suggest_cb cb;
    void *cb_user;
    cand_copy res;               /* the newest finished result */
    cand_copy pout;              /* what poll handed out */
    laya_session_stats st;       /* of the last decision delivered */
    char err[LAYA_ERR_MSG_MAX];
} wsync;

struct laya_worker {
    laya_session *s;
    double prefetch_ms;
    size_t tail_cap, after_cap;
    char *w_before, *w_after;    /* the thread's copy of the job */
    pthread_t thr;
    int thr_ok;
    wsync *y;
};

static void copy_cands(cand_copy *dst, const laya_candidate *c, int32_t n) {
    dst->n = n;
    for (int32_t i = 0; i < n; i++) {
        dst->c[i] = c[i];
        memcpy(dst->text[i], c[i].text, (size_t)c[i].text_len + 1);
        dst->c[i].text = dst->text[i];
    }
}

/* A decision its deadline cut short was finished in the idle time: the callback runs again with the full
 * candidates and poll reports them, unless a newer submit came meanwhile. */
static void deliver_refined(laya_worker *w, uint64_t gen, laya_suggest_cb cb, void *user) {
    wsync *y = w->y;
    const laya_candidate *c;
    int32_t n;
    laya_session_candidates(w->s, &c, &n, NULL);
    pthread_mutex_lock(&y->mu);
    int fresh = y->sub_gen == gen;
    pthread_mutex_unlock(&y->mu);
    if (!fresh) return;
    if (cb) cb(user, c, n);
    pthread_mutex_lock(&y->mu);
    if (y->sub_gen == gen) copy_cands(&y->res, c, n);
    pthread_mutex_unlock(&y->mu);
}

/* Idle until the next submit: prefetch for up to prefetch_ms (a submit interrupts it). */
static void idle_prefetch(laya_worker *w, uint64_t gen, laya_suggest_cb cb, void *user) {
    wsync *y = w->y;
    double end = laya_now_ms() + w->prefetch_ms;
    const laya_candidate *c;
    int32_t n;
    int complete = 0;
    laya_session_candidates(w->s, &c, &n, &complete);
    pthread_mutex_lock(&y->mu);
    y->prefetch_stopped = 0;
    pthread_mutex_unlock(&y->mu);
    for (;;) {
        /* an interrupted prefetch returns at once until the next text: stop on whatever interrupted it */
        pthread_mutex_lock(&y->mu);
        int go = y->sub_gen == gen && y->hold == 0 && !y->stop && !y->prefetch_stopped;
        y->prefetching = go;
        pthread_mutex_unlock(&y->mu);
        double left = end - laya_now_ms();
        if (!go || left <= 0) break;
        int32_t n_left = 0;
        laya_status st = laya_session_prefetch(w->s, complete ? left : LAYA_MIN(left, REFINE_SLICE_MS), NULL, &n_left);
        if (!st && !complete) {
            laya_session_candidates(w->s, &c, &n, &complete);
            if (complete) deliver_refined(w, gen, cb, user);
        }
        if (st || n_left == 0) break;
    }
    pthread_mutex_lock(&y->mu);
    y->prefetching = 0;
    pthread_mutex_unlock(&y->mu);
}

static void *worker_main(void *arg) {
    laya_worker *w = arg;
    wsync *y = w->y;
    pthread_mutex_lock(&y->mu);
    for (;;) {
        while (!y->stop && (y->hold > 0 || y->sub_gen == y->run_gen || !y->job_valid)) {
            if (!y->job_valid) y->run_gen = y->sub_gen; /* cancelled */
            y->busy = 0;
            pthread_cond_broadcast(&y->idle_cv);
            pthread_cond_wait(&y->cv, &y->mu);
        }
        if (y->stop) break;
        y->busy = 1;
        uint64_t gen = y->run_gen = y->sub_gen;
        size_t wb = y->ab_len, wa = y->aa_len, full = y->a_full;
        memcpy(w->w_before, y->a_before, wb);
        memcpy(w->w_after, y->a_after, wa);
        laya_suggest_cb cb = y->cb;
        void *user = y->cb_user;
        y->in_session = 1;
        pthread_mutex_unlock(&y->mu);

        double t0 = laya_now_ms();
        const laya_candidate *c = NULL;
        int32_t n = 0;
        laya_status st = laya_session_set_text_tail(w->s, w->w_before, wb, full, w->w_after, wa);
        pthread_mutex_lock(&y->mu);
        int fresh = y->sub_gen == gen;
        pthread_mutex_unlock(&y->mu);
        if (!st && fresh) st = laya_session_suggest(w->s, &c, &n);
        pthread_mutex_lock(&y->mu);
        fresh = y->sub_gen == gen;
        pthread_mutex_unlock(&y->mu);
        if (fresh && !st && cb) cb(user, c, n);
        pthread_mutex_lock(&y->mu);
        if (fresh && y->sub_gen == gen) {
            copy_cands(&y->res, c, st ? 0 : n);
            laya_session_get_stats(w->s, &y->st);
            y->st.last_ms = laya_now_ms() - t0; /* set_text + suggest */
            if (st) snprintf(y->err, sizeof y->err, "%s", laya_session_error(w->s));
            y->done_gen = gen;
        }
        if (!st && fresh && w->prefetch_ms > 0 && y->sub_gen == gen && y->hold == 0) {
            pthread_mutex_unlock(&y->mu);
            idle_prefetch(w, gen, cb, user);
            pthread_mutex_lock(&y->mu);
        }
        y->in_session = 0;
    }
    y->busy = 0;
    pthread_cond_broadcast(&y->idle_cv);
    pthread_mutex_unlock(&y->mu);
    return NULL;
}

void laya_worker_free(laya_worker *w) {
    if (!w) return;
    wsync *y = w->y;
    if (w->thr_ok) {
        pthread_mutex_lock(&y->mu);
        y->stop = 1;
        if (y->in_session) laya_session_interrupt(w->s);
        pthread_cond_broadcast(&y->cv);
        pthread_mutex_unlock(&y->mu);
        pthread_join(w->thr, NULL);
    }
    if (y) {
        pthread_mutex_destroy(&y->mu);
        pthread_mutex_destroy(&y->hold_mu);
        pthread_cond_destroy(&y->cv);
        pthread_cond_destroy(&y->idle_cv);
        laya_free(y->a_before);
        laya_free(y->a_after);
        laya_free(y);
    }
    laya_session_free(w->s);
    laya_free(w->w_before);
    laya_free(w->w_after);
    laya_free(w);
}

laya_status laya_worker_create(const laya_model *m, laya_session_params params, laya_worker **out, char *err,
                               size_t errlen) {
    if (!out) return laya_err(err, errlen, LAYA_ERR_INVALID_ARG, "out is NULL");
    *out = NULL;
    laya_worker *w = laya_calloc(1, sizeof *w);
    if (!w) return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory");
    laya_status st = laya_session_create(m, params, &w->s, err, errlen);
    if (st) {
        laya_free(w);
        return st;
    }
    w->prefetch_ms = params.prefetch_ms;
    w->tail_cap = laya_session_tail_bytes(w->s);
    w->after_cap = (size_t)params.max_text / 4 + 4; /* a few bytes more than the session reads: it sees the cut */
    w->w_before = laya_malloc(w->tail_cap + 1);
    w->w_after = laya_malloc(w->after_cap + 1);
    wsync *y = w->y = laya_calloc(1, sizeof *w->y);
    if (y) {
        y->a_before = laya_malloc(w->tail_cap + 1);
        y->a_after = laya_malloc(w->after_cap + 1);
    }
    if (!w->w_before || !w->w_after || !y || !y->a_before || !y->a_after) {
        if (y) laya_free(y->a_before), laya_free(y->a_after), laya_free(y);
        w->y = NULL;
        laya_worker_free(w);
        return laya_err(err, errlen, LAYA_ERR_NOMEM, "out of memory creating a worker");
    }
    pthread_mutex_init(&y->mu, NULL);
    pthread_mutex_init(&y->hold_mu, NULL);
    pthread_cond_init(&y->cv, NULL);
    pthread_cond_init(&y->idle_cv, NULL);
    /* decisions on this session are interrupted: have it check often (the flag clears at the first text) */
    laya_session_interrupt(w->s);
    if (pthread_create(&w->thr, NULL, worker_main, w) != 0) {
        laya_worker_free(w);
        return laya_err(err, errlen, LAYA_ERR_NOMEM, "cannot start the worker thread");
    }
    w->thr_ok = 1;
    *out = w;
    return LAYA_OK;
}

laya_status laya_worker_submit(laya_worker *w, const char *before, size_t before_len, const char *after,
                               size_t after_len, laya_suggest_cb cb, void *user) {
    if (!w) return LAYA_ERR_INVALID_ARG;
    wsync *y = w->y;
    if ((!before && before_len) || (!after && after_len)) {
        pthread_mutex_lock(&y->mu);
        laya_err(y->err, sizeof y->err, LAYA_ERR_INVALID_ARG, "NULL text with a nonzero length");
        pthread_mutex_unlock(&y->mu);
        return LAYA_ERR_INVALID_ARG;
    }
    size_t tb = LAYA_MIN(before_len, w->tail_cap), ta = LAYA_MIN(after_len, w->after_cap);
    pthread_mutex_lock(&y->mu);
    if (tb) memcpy(y->a_before, before + (before_len - tb), tb);
    if (ta) memcpy(y->a_after, after, ta);
    y->ab_len = tb;
    y->a_full = before_len;
    y->aa_len = ta;
    y->cb = cb;
    y->cb_user = user;
    y->job_valid = 1;
    y->busy = 1;
    y->sub_gen++;
    if (y->in_session) laya_session_interrupt(w->s); /* the decision under way is for an older text */
    pthread_cond_signal(&y->cv);
    pthread_mutex_unlock(&y->mu);
    return LAYA_OK;
}

laya_status laya_worker_poll(laya_worker *w, int *ready, const laya_candidate **out, int32_t *n) {
    if (ready) *ready = 0;
    if (out) *out = NULL;
    if (n) *n = 0;
    if (!w || !ready || !out || !n) return LAYA_ERR_INVALID_ARG;
    wsync *y = w->y;
    pthread_mutex_lock(&y->mu);
    if (y->job_valid && y->done_gen == y->sub_gen) {
        copy_cands(&y->pout, y->res.c, y->res.n);
        *ready = 1;
        *out = y->pout.c;
        *n = y->pout.n;
    }
    pthread_mutex_unlock(&y->mu);
    return LAYA_OK;
}

void laya_worker_cancel(laya_worker *w) {
    if (!w) return;
    wsync *y = w->y;
    pthread_mutex_lock(&y->mu);
    y->job_valid = 0;
    y->sub_gen++;
    if (y->in_session) laya_session_interrupt(w->s);
    pthread_cond_signal(&y->cv);
    while (y->busy) pthread_cond_wait(&y->idle_cv, &y->mu);
    pthread_mutex_unlock(&y->mu);
}

/* The session to the caller's thread between decisions: a prefetch under way is interrupted, a decision
 * under way finishes first, and no new one starts until hold_end. */
static void hold_begin(laya_worker *w) {
    wsync *y = w->y;
    pthread_mutex_lock(&y->hold_mu);
    pthread_mutex_lock(&y->mu);
    y->hold++;
    if (y->prefetching) {
        laya_session_interrupt(w->s);
        y->prefetch_stopped = 1;
    }
    while (y->busy && y->in_session) pthread_cond_wait(&y->idle_cv, &y->mu);
    pthread_mutex_unlock(&y->mu);
}

static void hold_end(laya_worker *w) {
    wsync *y = w->y;
    pthread_mutex_lock(&y->mu);
    y->hold--;
    pthread_cond_broadcast(&y->cv);
    pthread_mutex_unlock(&y->mu);
    pthread_mutex_unlock(&y->hold_mu);
}

laya_status laya_worker_accept(laya_worker *w, int32_t i) {
    if (!w) return LAYA_ERR_INVALID_ARG;
    wsync *y = w->y;
    char text[LAYA_CANDIDATE_MAX_BYTES];
    size_t len = 0;
    pthread_mutex_lock(&y->mu);
    int ok = i >= 0 && i < y->pout.n;
    if (ok) {
        len = (size_t)y->pout.c[i].text_len;
        memcpy(text, y->pout.text[i], len);
    } else {
        laya_err(y->err, sizeof y->err, LAYA_ERR_INVALID_ARG, "no candidate %d in the last poll", i);
    }
    pthread_mutex_unlock(&y->mu);
    if (!ok) return LAYA_ERR_INVALID_ARG;
    return laya_worker_learn(w, text, len); /* what accept learns; the thread keeps its own cache warm */
}

laya_status laya_worker_learn(laya_worker *w, const char *text, size_t len) {
    if (!w) return LAYA_ERR_INVALID_ARG;
    hold_begin(w);
    laya_status st = laya_session_learn(w->s, text, len);
    if (st) {
        pthread_mutex_lock(&w->y->mu);
        snprintf(w->y->err, sizeof w->y->err, "%s", laya_session_error(w->s));
        pthread_mutex_unlock(&w->y->mu);
    }
    hold_end(w);
    return st;
}

laya_status laya_worker_set_context(laya_worker *w, const char *text, size_t len) {
    if (!w) return LAYA_ERR_INVALID_ARG;
    hold_begin(w);
    laya_status st = laya_session_set_context(w->s, text, len);
    hold_end(w);
    return st;
}

void laya_worker_get_stats(const laya_worker *w, laya_session_stats *out) {
    if (!out) return;
    if (!w) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_mutex_lock(&w->y->mu);
    *out = w->y->st;
    pthread_mutex_unlock(&w->y->mu);
}

const char *laya_worker_error(const laya_worker *w) { return w ? w->y->err : "worker is NULL"; }
