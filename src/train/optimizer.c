/*
 * optimizer.c — ts_sgd and ts_adamw: after ts_backward, append one update node (ops/optim.c)
 * per parameter that has a gradient, with the optimizer state each needs as TS_V_STATE values
 * (zero-initialised by the runtime, kept across runs), named after the parameter:
 *   "<param>@MOMENTUM" (SGD with momentum), "<param>@MOMENT1", "<param>@MOMENT2" and the rank-0
 *   step counter "<param>@STEP" (AdamW).
 * The updates come after every other node, so they run at the end of each step.
 */
#include "ops/op.h"

#include <math.h>
#include <stdio.h>

/* Checks shared by both optimizers: a graph without errors, a backward pass, no updates yet. */
static ts_status check_graph(ts_graph *g, const char *fn, ts_value lr) {
    if (!g) return ts_err(TS_ERR_ARG, "%s: graph is NULL", fn);
    if (g->status != TS_OK) return ts_graph_status(g);
    if (!g->has_backward)
        return ts_graph_fail(g, TS_ERR_ARG, "%s: the graph has no backward pass; call "
                             "ts_backward(g, loss) first", fn), g->status;
    if (!ts_val_ok(g, lr))
        return ts_graph_fail(g, TS_ERR_ARG, "%s: lr is not a value of this graph", fn), g->status;
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == TS_OP_SGD_UPDATE || g->nodes[i].op == TS_OP_ADAMW_UPDATE)
            return ts_graph_fail(g, TS_ERR_ARG, "%s: the graph already has optimizer updates "
                                 "(ts_sgd or ts_adamw was called before)", fn), g->status;
    for (int v = 0; v < g->nvals; v++)
        if (g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0) return TS_OK;
    return ts_graph_fail(g, TS_ERR_ARG, "%s: no parameter has a gradient; the loss passed to "
                         "ts_backward does not depend on any", fn), g->status;
}

/* A zero-initialised f32 state value named "<param>@<what>": the parameter's shape, or rank 0
 * when scalar != 0. Returns its id, or TS_NONE after recording an error. */
static ts_value add_state(ts_graph *g, ts_value param, const char *what, int scalar) {
    char name[512];
    snprintf(name, sizeof name, "%s@%s", g->vals[param].name, what);
    if (ts_lookup(g, name) != TS_NONE)
        return ts_graph_fail(g, TS_ERR_ARG, "optimizer state '%s': the name is already used in "
                             "this graph", name);
    int64_t shape[TS_MAX_DIMS]; /* a copy: ts_val_add may move g->vals */
    int nd = scalar ? 0 : g->vals[param].ndim;
    memcpy(shape, g->vals[param].shape, sizeof shape);
    int s = ts_val_add(g, TS_V_STATE, TS_F32, nd, shape);
    g->vals[s].name = ts_strdup(name);
    return s;
}

static int finite_ge0(float x) { return x >= 0.f && !isinf(x); }

ts_status ts_sgd(ts_graph *g, ts_value lr, float momentum, float weight_decay) {
    ts_status st = check_graph(g, "ts_sgd", lr);
    if (st) return st;
    if (!finite_ge0(momentum) || !finite_ge0(weight_decay))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_sgd: momentum %g and weight_decay %g must be finite "
                             "and >= 0", (double)momentum, (double)weight_decay), g->status;
    ts_attrs at = {0};
    at.f[0] = momentum;
    at.f[1] = weight_decay;
    int nv = g->nvals; /* state values added below are not parameters */
    for (int v = 0; v < nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM || g->vals[v].grad < 0) continue;
        ts_value buf = TS_NONE;
        if (momentum != 0.f && (buf = add_state(g, v, "MOMENTUM", 0)) == TS_NONE) return g->status;
        int in[4] = {v, g->vals[v].grad, lr, buf};
        if (ts_node_add(g, TS_OP_SGD_UPDATE, 4, in, &at, NULL) == TS_NONE) return g->status;
    }
    return TS_OK;
}

ts_status ts_adamw(ts_graph *g, ts_value lr, float beta1, float beta2, float eps, float weight_decay) {
    ts_status st = check_graph(g, "ts_adamw", lr);
    if (st) return st;
    if (!(beta1 >= 0.f && beta1 < 1.f) || !(beta2 >= 0.f && beta2 < 1.f))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_adamw: beta1 %g and beta2 %g must be in [0, 1)",
                             (double)beta1, (double)beta2), g->status;
    if (!finite_ge0(eps) || !finite_ge0(weight_decay))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_adamw: eps %g and weight_decay %g must be finite "
                             "and >= 0", (double)eps, (double)weight_decay), g->status;
    ts_attrs at = {0};
    at.f[0] = beta1;
    at.f[1] = beta2;
    at.f[2] = eps;
    at.f[3] = weight_decay;
    int nv = g->nvals;
    for (int v = 0; v < nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM || g->vals[v].grad < 0) continue;
        ts_value m = add_state(g, v, "MOMENT1", 0);
        ts_value s2 = m == TS_NONE ? TS_NONE : add_state(g, v, "MOMENT2", 0);
        ts_value t = s2 == TS_NONE ? TS_NONE : add_state(g, v, "STEP", 1);
        if (t == TS_NONE) return g->status;
        int in[6] = {v, g->vals[v].grad, lr, m, s2, t};
        if (ts_node_add(g, TS_OP_ADAMW_UPDATE, 6, in, &at, NULL) == TS_NONE) return g->status;
    }
    return TS_OK;
}
