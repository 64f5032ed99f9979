/* fwprof.c — the per-phase timers of fwprof.h, built only with -DLAYA_PROFILE (`make profile`); in the
 * shipped library this file compiles to nothing. */
#include "engine/context.h"

#ifdef LAYA_PROFILE

const char *const fw_prof_names[FP_N] = {
    "q/k/v matmuls", "attention (with RoPE, KV writes)", "attn output matmul", "gate/up matmuls (with SiLU)",
    "down matmul",   "output layer",                     "rest (embed, norms, residuals)",
    "sync wait (inside the above)"};

int fw_prof_on(const laya_context *c) { return c->prof; }

void fw_prof_begin(laya_context *c) {
    if (c->prof) c->prof_t = laya_now_ms(), c->prof_n++;
}

void fw_prof_mark(laya_context *c, int ph) {
    if (!c->prof) return;
    double t = laya_now_ms();
    c->prof_ms[ph] += t - c->prof_t;
    c->prof_t = t;
}

void fw_profile_enable(laya_context *c, int on) {
    c->prof = on;
    memset(c->prof_ms, 0, sizeof c->prof_ms);
    c->prof_n = 0;
    lp_profile(c->pool, on);
}

void fw_profile_read(const laya_context *c, double ms[FP_N], int64_t *n_decodes) {
    memcpy(ms, c->prof_ms, sizeof c->prof_ms);
    ms[FP_SYNC] = (double)lp_wait_ns(c->pool) / 1e6;
    *n_decodes = c->prof_n;
}
#else
typedef int fwprof_empty; /* ISO C wants a declaration in every translation unit */
#endif
