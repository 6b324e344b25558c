/*
 * optim.h — what the graph builders of the training step share with each other and with the
 * runtime: the names of the state values of loss scaling (loss_scale.c adds them, optimizer.c
 * reads them) and of gradient accumulation (optimizer.c adds the micro-batch counter; the
 * runtime's pipeline writes it before each micro-batch), and the maker of state values. The
 * builders themselves are public (tessera.h: ts_optimizer, ts_backward_scaled, ts_lr_schedule).
 */
#ifndef TS_OPTIM_H
#define TS_OPTIM_H

#include "graph/ir.h"

#define TS_LOSS_SCALE_STATE "optimizer@LOSS_SCALE"               /* the scale; 0 before run 1 */
#define TS_LOSS_SCALE_CLEAN "optimizer@LOSS_SCALE_CLEAN_STEPS"   /* steps since it last changed */
#define TS_LOSS_SCALE_SKIPPED "optimizer@SKIPPED_STEPS"          /* steps skipped on overflow */
#define TS_MICRO_STEP "optimizer@MICRO_STEP"                     /* micro-batches summed so far */

/* A new zero-initialised f32 TS_V_STATE value (kept across runs, saved with the optimizer
 * state) named `name`, of the given shape; TS_NONE after recording TS_ERR_ARG when the name is
 * taken (optimizer.c). */
ts_value ts_state_new(ts_graph *g, const char *name, int ndim, const int64_t *shape);

#endif
