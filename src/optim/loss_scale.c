/*
 * loss_scale.c — ts_backward_scaled: the backward pass of dynamic loss scaling for fp16 training
 * (torch.cuda.amp.GradScaler's method). It adds the scaler's state — "optimizer@LOSS_SCALE",
 * "optimizer@LOSS_SCALE_CLEAN_STEPS", "optimizer@SKIPPED_STEPS", rank-0 f32 TS_V_STATE values
 * saved with the optimizer state — and a loss_scale node whose value seeds the loss's gradient,
 * so every gradient comes out multiplied by the scale. ts_optimizer (optim/optimizer.c) finds
 * that node, unscales the gradients in its step coefficient, skips steps whose gradients hold an
 * inf or NaN, and appends the loss_scale_update that backs the scale off or grows it. The ops'
 * math is in ops/amp.c.
 */
#include "ops/op.h"
#include "optim/optim.h"

#include <math.h>

ts_loss_scale_opts ts_loss_scale_defaults(void) {
    ts_loss_scale_opts o = {sizeof o, 65536.f, 2.f, 0.5f, 2000};
    return o;
}

ts_status ts_backward_scaled(ts_graph *g, ts_value loss, const ts_loss_scale_opts *opts) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_backward_scaled: graph is NULL");
    if (g->status != TS_OK) return ts_graph_status(g);
    ts_loss_scale_opts o = ts_loss_scale_defaults();
    if (opts && TS_STRUCT_READ(&o, opts, ts_loss_scale_opts, "ts_backward_scaled"))
        return ts_graph_fail(g, TS_ERR_ARG, "%s", ts_last_error());
    if (!(o.init_scale > 0.f) || isinf(o.init_scale))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_backward_scaled: init_scale %g must be finite and > 0",
                             (double)o.init_scale), g->status;
    if (!(o.growth_factor > 1.f) || isinf(o.growth_factor))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_backward_scaled: growth_factor %g must be finite and > 1",
                             (double)o.growth_factor), g->status;
    if (!(o.backoff_factor > 0.f && o.backoff_factor < 1.f))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_backward_scaled: backoff_factor %g must be in (0, 1)",
                             (double)o.backoff_factor), g->status;
    if (o.growth_interval < 1)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_backward_scaled: growth_interval %d must be >= 1",
                             o.growth_interval), g->status;
    if (g->has_backward)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_backward_scaled: the graph already has a backward pass"),
               g->status;
    ts_value state = ts_state_new(g, TS_LOSS_SCALE_STATE, 0, NULL);
    if (state == TS_NONE || ts_state_new(g, TS_LOSS_SCALE_CLEAN, 0, NULL) == TS_NONE ||
        ts_state_new(g, TS_LOSS_SCALE_SKIPPED, 0, NULL) == TS_NONE)
        return g->status;
    ts_attrs at = {0};
    at.f[0] = o.init_scale;
    at.f[1] = o.growth_factor;
    at.f[2] = o.backoff_factor;
    at.i[0] = o.growth_interval;
    ts_value scale = ts_node_add(g, TS_OP_LOSS_SCALE, 1, &state, &at, NULL);
    if (scale == TS_NONE) return g->status;
    return ts_backward_seeded(g, loss, scale);
}
