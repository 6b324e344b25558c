/*
 * optimizer.c — ts_optimizer (and its wrappers ts_sgd, ts_sgd_ex, ts_adamw): after ts_backward,
 * append one update node (ops/optim.c) per parameter that has a gradient, with the optimizer
 * state each needs as TS_V_STATE values (zero-initialised by the runtime, kept across runs),
 * named after the parameter:
 *   "<param>@MOMENTUM" (SGD with momentum; "<param>@STEP" too when dampening != 0),
 *   "<param>@MOMENT1", "<param>@MOMENT2" and the rank-0 step counter "<param>@STEP" (AdamW, LAMB).
 * With gradient accumulation over N micro-batches, each parameter also gets an accumulator
 * "<param>@ACCUM" that an accum_grad node fills each run (ops/amp.c), and the updates read it
 * instead of the gradient; the counter "optimizer@MICRO_STEP" says which micro-batch runs.
 * With clipping or loss scaling (ts_backward_scaled, train/loss_scale.c), a chain of grad_sumsq
 * nodes sums the squares of every gradient the updates read. A step_coef node turns the sum, the
 * counter and the loss scale into the one coefficient each update multiplies its gradient by:
 * clipping, the 1 / N of the mean over micro-batches, the 1 / scale of loss scaling, and 0 —
 * "skip" — for a micro-batch that is not the last of its step or a scaled step that overflowed.
 * The update math is stated once, in ops/optim.c and ops/amp.c (the public version in tessera.h).
 * The updates come after every other node, so they run at the end of each step; the counter
 * increments (the lr schedule's of train/schedule.c, gated by the coefficient so that it counts
 * optimizer steps, and the micro-batch counter's) are moved behind them.
 */
#include "ops/op.h"
#include "train/train.h"

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
    int64_t shape[TS_MAX_DIMS]; /* a copy: ts_val_add may move g->vals */
    memcpy(shape, g->vals[param].shape, sizeof shape);
    return ts_state_new(g, name, scalar ? 0 : g->vals[param].ndim, shape);
}

ts_value ts_state_new(ts_graph *g, const char *name, int ndim, const int64_t *shape) {
    if (ts_lookup(g, name) != TS_NONE)
        return ts_graph_fail(g, TS_ERR_ARG, "optimizer state '%s': the name is already used in "
                             "this graph", name);
    int s = ts_val_add(g, TS_V_STATE, TS_F32, ndim, shape);
    ts_val_set_name(g, s, name);
    return s;
}

static int finite_ge0(float x) { return x >= 0.f && !isinf(x); }

/* Whether name matches a weight-decay exclusion (a glob when it has * ? [, else a substring). */
/* 1 when name matches one of the n patterns (a glob when it holds * ? or [, else a substring). */
static int matches(const char *const *pats, int n, const char *name) {
    for (int i = 0; i < n; i++) {
        const char *pat = pats[i];
        if (!pat || !*pat) continue;
        if (strpbrk(pat, "*?[") ? fnmatch(pat, name, 0) == 0 : strstr(name, pat) != NULL) return 1;
    }
    return 0;
}
static int excluded(const ts_optim_opts *o, const char *name) { return matches(o->no_decay, o->nno_decay, name); }

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
    if (o->accumulation_steps < 0 || o->accumulation_steps > (1 << 24))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: accumulation_steps %d must be in [0, 2^24] "
                             "(0 or 1: no accumulation)", o->accumulation_steps), g->status;
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

/* The pipeline stage of parameter v: where its gradient is complete (-1: not placed). */
static int param_stage(const ts_graph *g, int v) {
    int gv = g->vals[v].grad;
    return gv >= 0 && g->vals[gv].kind == TS_V_NODE ? g->nodes[g->vals[gv].node].stage : -1;
}

/* The sum of squares of every gradient the updates read (src[v] for each trained parameter v),
 * in a chain of grad_sumsq nodes of one gradient each (the running sum rounds to f32 after each
 * parameter, so however stages cut the chain, the sums are the same). With pipeline stages the
 * parameters go stage by stage (in their order within a stage), so the chain crosses from one
 * stage to the next once; a model whose parameters are made in stage order (BERT) keeps its order
 * whether it is placed on stages or not. Returns it, or TS_NONE after recording an error. */
static ts_value add_sumsq(ts_graph *g, const ts_value *src, int nv) {
    ts_value acc = TS_NONE;
    int in[TS_MAX_IN], nin = 0, cur = -1;
    int *order = malloc(sizeof(int) * (size_t)(nv + 1)), n = 0;
    if (!order) abort();
    for (int s = -1; s < TS_MAX_STAGES; s++) /* unplaced (-1) first, then stage by stage */
        for (int v = 0; v < nv; v++)
            if (g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0 && param_stage(g, v) == s) order[n++] = v;
    ts_attrs at = {0};
    for (int k = 0; k <= n; k++) {
        int last = k == n, v = last ? -1 : order[k];
        /* one gradient a node: the chain's sums are then the same however the stages split it */
        if (nin > 0 && (last || nin == 2 || (nin == 1 && acc == TS_NONE) || param_stage(g, v) != cur)) {
            at.i[0] = in[0] == acc && acc != TS_NONE;
            acc = ts_node_add(g, TS_OP_GRAD_SUMSQ, nin, in, &at, NULL);
            if (acc == TS_NONE) break;
            nin = 0;
        }
        if (!last) {
            cur = param_stage(g, v);
            if (nin == 0 && acc != TS_NONE) in[nin++] = acc;
            in[nin++] = src[v];
        }
    }
    free(order);
    return acc;
}

/* The loss_scale node of ts_backward_scaled, or -1 when the gradients are not scaled. */
static int loss_scale_node(const ts_graph *g) {
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == TS_OP_LOSS_SCALE) return i;
    return -1;
}

/* How the step's gradients reach the updates. */
typedef struct step_plan {
    int N;              /* micro-batches a step (1: no accumulation) */
    int scaler;         /* the loss_scale node, or -1 */
    ts_value micro;     /* optimizer@MICRO_STEP, or TS_NONE */
    ts_value sumsq;     /* sum of squares of what the updates read, or TS_NONE */
    ts_value coef;      /* step_coef's coefficient, or TS_NONE (1) */
} step_plan;

/* Accumulators (src[v] becomes "<v>@ACCUM" when N > 1, else the gradient), the sum of squares
 * and the coefficient. Returns TS_OK or the graph's error. */
static ts_status add_step_coef(ts_graph *g, const ts_optim_opts *o, ts_value *src, int nv, step_plan *sp) {
    sp->N = o->accumulation_steps > 1 ? o->accumulation_steps : 1;
    sp->scaler = loss_scale_node(g);
    sp->micro = sp->sumsq = sp->coef = TS_NONE;
    if (sp->N > 1 && (sp->micro = ts_state_new(g, TS_MICRO_STEP, 0, NULL)) == TS_NONE) return g->status;
    for (int v = 0; v < nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM || g->vals[v].grad < 0) continue;
        src[v] = g->vals[v].grad;
        if (sp->N == 1) continue;
        ts_value acc = add_state(g, v, "ACCUM", 0);
        int in[3] = {acc, g->vals[v].grad, sp->micro};
        if (acc == TS_NONE || ts_node_add(g, TS_OP_ACCUM_GRAD, 3, in, NULL, NULL) == TS_NONE) return g->status;
        src[v] = acc;
    }
    if (o->max_grad_norm > 0.f || sp->scaler >= 0)
        if ((sp->sumsq = add_sumsq(g, src, nv)) == TS_NONE) return g->status;
    if (o->max_grad_norm == 0.f && sp->scaler < 0 && sp->N == 1) return TS_OK;
    ts_attrs at = {0};
    at.f[0] = o->max_grad_norm;
    at.i[0] = sp->N;
    int in[3] = {sp->sumsq, sp->micro, sp->scaler >= 0 ? g->nodes[sp->scaler].out[0] : TS_NONE}, outs[2];
    if (ts_node_add(g, TS_OP_STEP_COEF, 3, in, &at, outs) == TS_NONE) return g->status;
    if (sp->sumsq != TS_NONE && ts_lookup(g, "optimizer@GRAD_NORM") == TS_NONE)
        ts_name(g, outs[1], "optimizer@GRAD_NORM");
    sp->coef = outs[0];
    return g->status;
}

/* After the updates: the loss scale's update, the micro-batch counter's increment, and the lr
 * schedule's counter gated by the coefficient (it stays when the update was skipped). */
static ts_status add_step_end(ts_graph *g, const step_plan *sp) {
    if (sp->scaler >= 0) {
        ts_attrs at = g->nodes[sp->scaler].attr;
        at.i[1] = sp->N;
        int in[5] = {g->nodes[sp->scaler].in[0], ts_lookup(g, TS_LOSS_SCALE_CLEAN),
                     ts_lookup(g, TS_LOSS_SCALE_SKIPPED), sp->sumsq, sp->micro};
        if (ts_node_add(g, TS_OP_LOSS_SCALE_UPDATE, 5, in, &at, NULL) == TS_NONE) return g->status;
    }
    if (sp->N > 1 || sp->scaler >= 0) {
        for (int i = 0; i < g->nnodes; i++) {
            ts_node *n = &g->nodes[i];
            if (n->op != TS_OP_STEP_COUNT || n->nin != 1) continue;
            n->in[1] = sp->coef; /* a rank-0 f32 value: step_count's gate */
            n->nin = 2;
        }
    }
    if (sp->N > 1) {
        ts_attrs at = {0};
        at.i[0] = sp->N;
        if (ts_node_add(g, TS_OP_STEP_COUNT, 1, &sp->micro, &at, NULL) == TS_NONE) return g->status;
    }
    return g->status;
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

/* One update node per trained parameter v, reading gradient src[v] and coefficient coef. */
static ts_status add_updates(ts_graph *g, ts_value lr, const ts_optim_opts *o, const ts_value *src, int nv,
                             ts_value coef) {
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
            int a[6] = {v, src[v], lr, buf, t, coef};
            nin = coef != TS_NONE ? 6 : t != TS_NONE ? 5 : 4;
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
            int a[7] = {v, src[v], lr, m, s2, t, coef};
            nin = coef != TS_NONE ? 7 : 6;
            memcpy(in, a, sizeof a);
            /* LAMB: no layer adaptation (trust ratio 1) for the no_trust parameters */
            at.i[0] = o->kind == TS_OPTIM_LAMB && matches(o->no_trust, o->nno_trust, g->vals[v].name);
        }
        int op = o->kind == TS_OPTIM_SGD ? TS_OP_SGD_UPDATE
               : o->kind == TS_OPTIM_ADAMW ? TS_OP_ADAMW_UPDATE : TS_OP_LAMB_UPDATE;
        if (ts_node_add(g, op, nin, in, &at, NULL) == TS_NONE) return g->status;
    }
    return TS_OK;
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
    if (o->nno_trust < 0 || (o->nno_trust > 0 && !o->no_trust))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: nno_trust is %d but no_trust is %s",
                             o->nno_trust, o->no_trust ? "set" : "NULL"), g->status;
    if ((st = check_opts(g, o))) return st;

    int nv = g->nvals; /* state values added below are not parameters */
    g->opt_start = g->nnodes;
    g->accum_steps = o->accumulation_steps > 1 ? o->accumulation_steps : 1;
    ts_value *src = malloc(sizeof(ts_value) * (size_t)nv);
    if (!src) abort();
    step_plan sp;
    st = add_step_coef(g, o, src, nv, &sp);
    if (!st) st = add_updates(g, lr, o, src, nv, sp.coef);
    free(src);
    if (!st) st = add_step_end(g, &sp);
    if (!st) counters_last(g);
    return st;
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
