/* fwprof.h — optional per-step timing of laya_decode for `laya bench --profile` (internal, not part of
 * the API). Off unless enabled on a context: then each phase of the forward pass adds its wall time, and
 * the pool adds the time the calling thread waits for other threads' chunks at the end of each job. */
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
extern const char *const fw_prof_names[FP_N];

void fw_profile_enable(laya_context *c, int on);
/* Milliseconds per phase summed since enabling, and the number of laya_decode calls. */
void fw_profile_read(const laya_context *c, double ms[FP_N], int64_t *n_decodes);
/* For tests: how many of sequence seq's first positions it reads from another sequence's storage
 * (forward.c, shared positions), and which one (*base, -1 if none). */
int32_t fw_seq_shared(const laya_context *c, int32_t seq, int32_t *base);
/* 1 (the default): matmul passes split their rows by the threads' measured speeds (forward.c mm_split);
 * 0: evenly. For benchmarks and tests. */
extern _Atomic int fw_split_adapt;
/* For tests: every share table of c to the caller's thread taking caller_share of the rows (the others
 * the rest, evenly), where mm_split then goes on from. */
void fw_split_set(laya_context *c, double caller_share);

#endif
