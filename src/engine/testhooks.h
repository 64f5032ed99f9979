/* testhooks.h — internal entry points that tests (tests/test_model.c) use to look inside a context or
 * steer its thread split. Not part of the API and not profiling (that is fwprof.h). */
#ifndef LAYA_TESTHOOKS_H
#define LAYA_TESTHOOKS_H

#include "laya.h"

/* How many of sequence seq's first positions it reads from another sequence's storage (kv.c, shared
 * positions), and which one (*base, -1 if none). */
int32_t kv_seq_shared(const laya_context *c, int32_t seq, int32_t *base);
/* 1 (the default): matmul passes split their rows by the threads' measured speeds (forward.c mm_split);
 * 0: evenly. */
extern _Atomic int fw_split_adapt;
/* Every share table of c to the caller's thread taking caller_share of the rows (the others the rest,
 * evenly), where mm_split then goes on from. */
void fw_split_set(laya_context *c, double caller_share);

#endif
