/* fwprof.h — per-phase timing of laya_decode, for `make profile` (bench/profile.c). Compiled only with
 * -DLAYA_PROFILE: the library `make` builds has no timing code, and forward.c's marks are no-ops. Internal,
 * not part of the API. */
#ifndef LAYA_FWPROF_H
#define LAYA_FWPROF_H

#include "laya.h"

enum {
    FP_QKV,    /* q/k/v projections (with the activation quantization of their input) */
    FP_ATTN,   /* bias, q/k norm, RoPE, KV-cache writes, attention */
    FP_WO,     /* attention output projection */
    FP_GATEUP, /* FFN gate and up projections, with SiLU(gate) * up fused in */
    FP_DOWN,   /* FFN down projection */
    FP_OUT,    /* output norm and output layer */
    FP_REST,   /* embedding lookup, RMS norms, residual adds, validation */
    FP_SYNC,   /* waiting for other threads at the end of pool jobs (inside the phases above) */
    FP_N
};

#ifdef LAYA_PROFILE
extern const char *const fw_prof_names[FP_N]; /* the phases' names, for the table */
/* On: each phase of the forward pass adds its wall time, and the pool the time the calling thread waits
 * for other threads' chunks at the end of each job. Enabling (or disabling) resets the sums. */
void fw_profile_enable(laya_context *c, int on);
/* Milliseconds per phase summed since enabling, and the number of laya_decode calls. */
void fw_profile_read(const laya_context *c, double ms[FP_N], int64_t *n_decodes);
/* forward.c's hooks: the start of a decode step, and the end of phase ph (the time since the last mark). */
void fw_prof_begin(laya_context *c);
void fw_prof_mark(laya_context *c, int ph);
int fw_prof_on(const laya_context *c);
#else
#define fw_prof_begin(c) ((void)0)
#define fw_prof_mark(c, ph) ((void)0)
#define fw_prof_on(c) 0
#endif

#endif
