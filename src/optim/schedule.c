/*
 * schedule.c — ts_lr_schedule: the learning rate as a function of the step, computed inside the
 * graph so the whole training step stays one program. It adds the rank-0 f32 state counter
 * "lr_schedule@STEP" (zero-initialised, kept across runs, saved with the optimizer state), an
 * lr_schedule node that reads it (the formulas are in ops/optim.c and tessera.h), and a
 * step_count node that adds 1 to it. ts_optimizer moves the step_count node behind the
 * parameter updates, so step t (0-based) runs with lr * lambda(t) and the counter reads t + 1
 * after it — PyTorch's scheduler.step() after optimizer.step(). With gradient accumulation or
 * loss scaling ts_optimizer also gates it with the step coefficient, so it counts the optimizer
 * steps taken, not runs.
 */
#include "ops/op.h"

#include <math.h>

#define COUNTER "lr_schedule@STEP"

ts_value ts_lr_schedule(ts_graph *g, const ts_lr_schedule_opts *o) {
    if (!g) { ts_err(TS_ERR_ARG, "ts_lr_schedule: graph is NULL"); return TS_NONE; }
    if (g->status != TS_OK) return TS_NONE;
    if (!o) return ts_graph_fail(g, TS_ERR_ARG, "ts_lr_schedule: options are NULL");
    ts_lr_schedule_opts oc;
    if (TS_STRUCT_READ(&oc, o, ts_lr_schedule_opts, "ts_lr_schedule")) return ts_graph_fail(g, TS_ERR_ARG, "%s", ts_last_error());
    o = &oc;
    if (o->kind < TS_LR_CONSTANT || o->kind > TS_LR_POLYNOMIAL)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_lr_schedule: unknown schedule kind %d (expected "
                             "TS_LR_CONSTANT, TS_LR_LINEAR, TS_LR_COSINE or TS_LR_POLYNOMIAL)", (int)o->kind);
    if (!(o->lr >= 0.f) || isinf(o->lr))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_lr_schedule: lr %g must be finite and >= 0", (double)o->lr);
    if (o->warmup_steps < 0 || o->total_steps < 0)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_lr_schedule: warmup_steps %lld and total_steps %lld "
                             "must be >= 0", (long long)o->warmup_steps, (long long)o->total_steps);
    float power = o->power == 0.f ? 1.f : o->power, cycles = o->num_cycles == 0.f ? 0.5f : o->num_cycles;
    if (o->kind == TS_LR_POLYNOMIAL) {
        if (!(power > 0.f) || isinf(power))
            return ts_graph_fail(g, TS_ERR_ARG, "ts_lr_schedule: power %g must be finite and > 0", (double)power);
        if (!(o->lr_end >= 0.f && o->lr_end < o->lr))
            return ts_graph_fail(g, TS_ERR_ARG, "ts_lr_schedule: lr_end %g must be >= 0 and below "
                                 "lr %g", (double)o->lr_end, (double)o->lr);
        if (o->total_steps <= o->warmup_steps)
            return ts_graph_fail(g, TS_ERR_ARG, "ts_lr_schedule: polynomial decay needs total_steps "
                                 "(%lld) > warmup_steps (%lld)", (long long)o->total_steps,
                                 (long long)o->warmup_steps);
    }
    if (o->kind == TS_LR_COSINE && (!(cycles >= 0.f) || isinf(cycles)))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_lr_schedule: num_cycles %g must be finite and >= 0",
                             (double)cycles);
    if (ts_lookup(g, COUNTER) != TS_NONE)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_lr_schedule: the graph already has a schedule "
                             "(value '" COUNTER "'); one schedule per graph");

    ts_value counter = ts_val_add(g, TS_V_STATE, TS_F32, 0, NULL);
    if (counter == TS_NONE) return TS_NONE; /* out of memory, recorded */
    if (ts_val_set_name(g, counter, COUNTER) != TS_OK) {
        g->nvals--; /* the value just added, unnamed: taken back */
        return TS_NONE;
    }
    ts_attrs at = {0};
    at.i[0] = o->kind;
    at.i[1] = o->warmup_steps;
    at.i[2] = o->total_steps;
    at.f[0] = o->lr;
    at.f[1] = o->lr_end;
    at.f[2] = power;
    at.f[3] = cycles;
    ts_value lr = ts_node_add(g, TS_OP_LR_SCHEDULE, 1, &counter, &at, NULL);
    if (lr == TS_NONE) return TS_NONE;
    if (ts_node_add(g, TS_OP_STEP_COUNT, 1, &counter, NULL, NULL) == TS_NONE) return TS_NONE;
    return lr;
}
