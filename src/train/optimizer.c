/*
 * optimizer.c — ts_optimizer (and its wrappers ts_sgd, ts_sgd_ex, ts_adamw): after ts_backward,
 * append one update node (ops/optim.c) per parameter that has a gradient, with the optimizer
 * state each needs as TS_V_STATE values (zero-initialised by the runtime, kept across runs),
 * named after the parameter:
 *   "<param>@MOMENTUM" (SGD with momentum; "<param>@STEP" too when dampening != 0),
 *   "<param>@MOMENT1", "<param>@MOMENT2" and the rank-0 step counter "<param>@STEP" (AdamW, LAMB).
 * With clipping, a chain of grad_sumsq nodes sums every gradient's squares and clip_coef turns
 * that into the coefficient each update multiplies its gradient by. The update math is stated
 * once, in ops/optim.c (and the public version in tessera.h).
 * The updates come after every other node, so they run at the end of each step; the lr
 * schedule's counter increment (train/schedule.c) is moved behind them.
 */
#include "ops/op.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>

/* Checks shared by every optimizer: a graph without errors, a backward pass, no updates yet,
 * a usable lr, at least one parameter with a gradient. */
static ts_status check_graph(ts_graph *g, const char *fn, ts_value lr) {
    if (!g) return ts_err(TS_ERR_ARG, "%s: graph is NULL", fn);
    if (g->status != TS_OK) return ts_graph_status(g);
    if (!g->has_backward)
        return ts_graph_fail(g, TS_ERR_ARG, "%s: the graph has no backward pass; call "
                             "ts_backward(g, loss) first", fn), g->status;
    if (!ts_val_ok(g, lr))
        return ts_graph_fail(g, TS_ERR_ARG, "%s: lr is not a value of this graph", fn), g->status;
    const ts_val *l = &g->vals[lr];
    if (l->dtype != TS_F32 || l->ndim != 0)
        return ts_graph_fail(g, TS_ERR_ARG, "%s: lr %s must be a rank-0 f32 value", fn,
                             ts_val_str(g, lr, (char[256]){0}, 256)), g->status;
    if (l->kind == TS_V_CONST && l->data) {
        float v = *(const float *)ts_tensor_data(l->data);
        if (!(v >= 0.f) || isinf(v))
            return ts_graph_fail(g, TS_ERR_ARG, "%s: lr %g must be finite and >= 0", fn, (double)v),
                   g->status;
    }
    for (int i = 0; i < g->nnodes; i++) {
        int op = g->nodes[i].op;
        if (op == TS_OP_SGD_UPDATE || op == TS_OP_ADAMW_UPDATE || op == TS_OP_LAMB_UPDATE)
            return ts_graph_fail(g, TS_ERR_ARG, "%s: the graph already has optimizer updates "
                                 "(an optimizer was added before)", fn), g->status;
    }
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

/* Whether name matches a weight-decay exclusion (a glob when it has * ? [, else a substring). */
static int excluded(const ts_optim_opts *o, const char *name) {
    for (int i = 0; i < o->nno_decay; i++) {
        const char *pat = o->no_decay[i];
        if (!pat || !*pat) continue;
        if (strpbrk(pat, "*?[") ? fnmatch(pat, name, 0) == 0 : strstr(name, pat) != NULL) return 1;
    }
    return 0;
}

static ts_status bad(ts_graph *g, const char *fmt, double a, double b) {
    return ts_graph_fail(g, TS_ERR_ARG, fmt, a, b), g->status;
}

static ts_status check_opts(ts_graph *g, const ts_optim_opts *o) {
    if (o->kind != TS_OPTIM_SGD && o->kind != TS_OPTIM_ADAMW && o->kind != TS_OPTIM_LAMB)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: unknown optimizer kind %d (expected "
                             "TS_OPTIM_SGD, TS_OPTIM_ADAMW or TS_OPTIM_LAMB)", (int)o->kind), g->status;
    if (!finite_ge0(o->weight_decay) || !finite_ge0(o->max_grad_norm))
        return bad(g, "ts_optimizer: weight_decay %g and max_grad_norm %g must be finite and >= 0",
                   o->weight_decay, o->max_grad_norm);
    if (o->kind == TS_OPTIM_SGD) {
        if (!finite_ge0(o->momentum) || !(o->dampening >= 0.f && o->dampening <= 1.f))
            return bad(g, "ts_optimizer: SGD momentum %g must be finite and >= 0, dampening %g in [0, 1]",
                       o->momentum, o->dampening);
        if (o->nesterov && (o->momentum <= 0.f || o->dampening != 0.f))
            return bad(g, "ts_optimizer: Nesterov momentum requires a momentum > 0 (%g) and zero "
                       "dampening (%g)", o->momentum, o->dampening);
    } else {
        if (!(o->beta1 >= 0.f && o->beta1 < 1.f) || !(o->beta2 >= 0.f && o->beta2 < 1.f))
            return bad(g, "ts_optimizer: beta1 %g and beta2 %g must be in [0, 1)", o->beta1, o->beta2);
        if (!finite_ge0(o->eps))
            return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: eps %g must be finite and >= 0",
                                 (double)o->eps), g->status;
    }
    return TS_OK;
}

/* Gradient clipping: the sum of squares of every trained gradient, in chains of grad_sumsq
 * nodes, then clip_coef. Returns the coefficient value, or TS_NONE after recording an error. */
static ts_value add_clip(ts_graph *g, float max_norm) {
    ts_value acc = TS_NONE;
    int in[TS_MAX_IN], nin = 0;
    ts_attrs at = {0};
    int nv = g->nvals;
    for (int v = 0; v <= nv; v++) {
        int last = v == nv;
        if (!last && (g->vals[v].kind != TS_V_PARAM || g->vals[v].grad < 0)) continue;
        if (!last) {
            if (nin == 0 && acc != TS_NONE) in[nin++] = acc;
            in[nin++] = g->vals[v].grad;
        }
        if (nin == TS_MAX_IN || (last && nin > 0)) {
            at.i[0] = in[0] == acc && acc != TS_NONE;
            acc = ts_node_add(g, TS_OP_GRAD_SUMSQ, nin, in, &at, NULL);
            if (acc == TS_NONE) return TS_NONE;
            nin = 0;
        }
    }
    ts_attrs ca = {0};
    ca.f[0] = max_norm;
    int outs[2];
    if (ts_node_add(g, TS_OP_CLIP_COEF, 1, &acc, &ca, outs) == TS_NONE) return TS_NONE;
    if (ts_lookup(g, "optimizer@GRAD_NORM") == TS_NONE) ts_name(g, outs[1], "optimizer@GRAD_NORM");
    return outs[0];
}

/* Move every step_count node (the lr schedule's counter increment) to the end of the graph, so
 * the counter advances after the updates. Such nodes have no outputs, so nothing depends on
 * them and the order stays topological; the nodes they pass have their outputs renumbered. */
static void counters_last(ts_graph *g) {
    int n = g->nnodes, w = 0, nmoved = 0;
    ts_node *moved = malloc(sizeof(ts_node) * (size_t)(n ? n : 1));
    if (!moved) abort();
    for (int i = 0; i < n; i++) {
        ts_node nd = g->nodes[i];
        if (nd.op == TS_OP_STEP_COUNT) { moved[nmoved++] = nd; continue; }
        for (int k = 0; k < nd.nout; k++) g->vals[nd.out[k]].node = w;
        g->nodes[w++] = nd;
    }
    for (int i = 0; i < nmoved; i++) g->nodes[w++] = moved[i];
    free(moved);
}

ts_optim_opts ts_optim_defaults(ts_optim_kind kind) {
    ts_optim_opts o = {0};
    o.kind = kind;
    if (kind == TS_OPTIM_ADAMW || kind == TS_OPTIM_LAMB) {
        o.beta1 = 0.9f;
        o.beta2 = 0.999f;
        o.eps = kind == TS_OPTIM_LAMB ? 1e-6f : 1e-8f;
        o.weight_decay = 0.01f;
    }
    return o;
}

ts_status ts_optimizer(ts_graph *g, ts_value lr, const ts_optim_opts *o) {
    ts_status st = check_graph(g, "ts_optimizer", lr);
    if (st) return st;
    if (!o) return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: options are NULL"), g->status;
    if (o->nno_decay < 0 || (o->nno_decay > 0 && !o->no_decay))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: nno_decay is %d but no_decay is %s",
                             o->nno_decay, o->no_decay ? "set" : "NULL"), g->status;
    if ((st = check_opts(g, o))) return st;

    ts_value clip = o->max_grad_norm > 0.f ? add_clip(g, o->max_grad_norm) : TS_NONE;
    if (o->max_grad_norm > 0.f && clip == TS_NONE) return g->status;

    int nv = g->nvals; /* state values added below are not parameters */
    for (int v = 0; v < nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM || g->vals[v].grad < 0) continue;
        float wd = excluded(o, g->vals[v].name) ? 0.f : o->weight_decay;
        ts_attrs at = {0};
        int in[7], nin;
        if (o->kind == TS_OPTIM_SGD) {
            at.f[0] = o->momentum;
            at.f[1] = wd;
            at.f[2] = o->dampening;
            at.i[0] = o->nesterov != 0;
            ts_value buf = TS_NONE, t = TS_NONE;
            if (o->momentum != 0.f && (buf = add_state(g, v, "MOMENTUM", 0)) == TS_NONE) return g->status;
            if (o->momentum != 0.f && o->dampening != 0.f && (t = add_state(g, v, "STEP", 1)) == TS_NONE)
                return g->status;
            int a[6] = {v, g->vals[v].grad, lr, buf, t, clip};
            nin = clip != TS_NONE ? 6 : t != TS_NONE ? 5 : 4;
            memcpy(in, a, sizeof a);
        } else {
            at.f[0] = o->beta1;
            at.f[1] = o->beta2;
            at.f[2] = o->eps;
            at.f[3] = wd;
            ts_value m = add_state(g, v, "MOMENT1", 0);
            ts_value s2 = m == TS_NONE ? TS_NONE : add_state(g, v, "MOMENT2", 0);
            ts_value t = s2 == TS_NONE ? TS_NONE : add_state(g, v, "STEP", 1);
            if (t == TS_NONE) return g->status;
            int a[7] = {v, g->vals[v].grad, lr, m, s2, t, clip};
            nin = clip != TS_NONE ? 7 : 6;
            memcpy(in, a, sizeof a);
        }
        int op = o->kind == TS_OPTIM_SGD ? TS_OP_SGD_UPDATE
               : o->kind == TS_OPTIM_ADAMW ? TS_OP_ADAMW_UPDATE : TS_OP_LAMB_UPDATE;
        if (ts_node_add(g, op, nin, in, &at, NULL) == TS_NONE) return g->status;
    }
    counters_last(g);
    return TS_OK;
}

ts_status ts_sgd_ex(ts_graph *g, ts_value lr, const ts_sgd_opts *so) {
    if (!so) {
        if (!g) return ts_err(TS_ERR_ARG, "ts_sgd_ex: graph is NULL");
        return ts_graph_fail(g, TS_ERR_ARG, "ts_sgd_ex: options are NULL"), g->status;
    }
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_SGD);
    o.momentum = so->momentum;
    o.dampening = so->dampening;
    o.nesterov = so->nesterov;
    o.weight_decay = so->weight_decay;
    return ts_optimizer(g, lr, &o);
}

ts_status ts_sgd(ts_graph *g, ts_value lr, float momentum, float weight_decay) {
    ts_sgd_opts so = {momentum, 0.f, weight_decay, 0};
    return ts_sgd_ex(g, lr, &so);
}

ts_status ts_adamw(ts_graph *g, ts_value lr, float beta1, float beta2, float eps, float weight_decay) {
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_ADAMW);
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.weight_decay = weight_decay;
    return ts_optimizer(g, lr, &o);
}
