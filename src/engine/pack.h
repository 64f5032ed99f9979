/* pack.h — the packed copy of a model's weights (pack.c): started by laya_model_load, waited for by
 * laya_model_wait_ready, held off by decodes (forward.c). Internal. */
#ifndef LAYA_PACK_H
#define LAYA_PACK_H

#include "engine/model.h"

/* Starts copying the matrices the kernel table packs (kn_ops.packs) on a thread of its own; best effort:
 * without memory or a thread the model computes from the file, with the same results. */
void lm_pack_start(laya_model *m);
/* Stops the packing, joins its thread and unmaps the copy (laya_model_free). */
void lm_pack_free(laya_model *m);
/* on 1 before a decode that computes while the packing runs, 0 after it */
void lm_pack_hold(laya_model *m, int on);
/* For the tests: on a model loaded with pack_weights -1, packs the first n pieces of work (about 1 MB each,
 * in the order a step reads the matrices) on this thread and publishes nothing but each matrix's complete
 * panels (lm_mat.pk_done), as a decode during the packing sees them. Returns the number of pieces, or -1
 * where the model has nothing to pack. */
int lm_pack_first(laya_model *m, int n);
/* Matrix i of a step: layer i / 7's q, k, v, o, gate, up, down, and the output layer last (i == 7 * n_layer). */
lm_mat *lm_step_mat(laya_model *m, int i);
/* The P16 type matrix w is packed as, or 0 (a type without one, MLX, or no P16 size). */
uint32_t lm_pack_type(const laya_model *m, const lm_mat *w);

#endif
