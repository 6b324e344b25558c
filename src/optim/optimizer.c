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
 * With clipping or loss scaling (ts_backward_scaled, optim/loss_scale.c), a chain of grad_sumsq
 * nodes sums the squares of every gradient the updates read. A step_coef node turns the sum, the
 * counter and the loss scale into the one coefficient each update multiplies its gradient by:
 * clipping, the 1 / N of the mean over micro-batches, the 1 / scale of loss scaling, and 0 —
 * "skip" — for a micro-batch that is not the last of its step or a scaled step that overflowed.
 * The update math is stated once, in ops/optim.c and ops/amp.c (the public version in tessera.h).
 * The updates come after every other node, so they run at the end of each step — unless
 * updates_in_backward moves each into the backward pass (updates_early, below); the counter
 * increments (the lr schedule's of optim/schedule.c, gated by the coefficient so that it counts
 * optimizer steps, and the micro-batch counter's) are moved behind them.
 * Replicas (opts->comm of R > 1 ranks): every parameter gets an accumulator; the accumulators are
 * packed into contiguous buckets (state values the runtime allocates once, the accumulators
 * living inside at their offsets), a comm_start node per bucket sums it over the ranks
 * (ops/collective.c) and is moved to just after the backward node that completes the bucket's
 * last gradient, so the reduction overlaps the rest of the backward pass; a comm_wait per bucket
 * comes before the sum of squares and the updates. With shard_state each rank updates only the
 * parameters it owns (and holds only their state), then broadcasts them.
 */
#include "comm/comm.h"
#include "ops/op.h"
#include "optim/optim.h"

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

/* add_state for a tensor of state: bf16 for a 16-bit parameter (bf16 or f16: the moments need
 * f32's range more than f16's precision — an f16 second moment of small gradients underflows to
 * 0, and Adam's step then grows without bound), f32 for an f32 one. */
static ts_value add_state_like(ts_graph *g, ts_value param, const char *what) {
    ts_value s = add_state(g, param, what, 0);
    if (s != TS_NONE && g->vals[param].dtype != TS_F32) g->vals[s].dtype = TS_BF16;
    return s;
}

ts_value ts_state_new(ts_graph *g, const char *name, int ndim, const int64_t *shape) {
    if (ts_lookup(g, name) != TS_NONE)
        return ts_graph_fail(g, TS_ERR_ARG, "optimizer state '%s': the name is already used in "
                             "this graph", name);
    int s = ts_val_add(g, TS_V_STATE, TS_F32, ndim, shape);
    if (s == TS_NONE) return TS_NONE; /* out of memory, recorded */
    if (ts_val_set_name(g, s, name) != TS_OK) {
        g->nvals--; /* the value just added, unnamed: taken back */
        return TS_NONE;
    }
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
    if (!order) return ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory ordering %d values", nv);
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
    int R, rank;        /* replicas summing their gradients (1: none), and this graph's rank */
    int comm_id;
    int *owner;         /* shard_state: per value, the rank that updates the parameter (else NULL) */
    int scaler;         /* the loss_scale node, or -1 */
    ts_value micro;     /* optimizer@MICRO_STEP, or TS_NONE */
    ts_value sumsq;     /* sum of squares of what the updates read, or TS_NONE */
    ts_value coef;      /* step_coef's coefficient, or TS_NONE (1) */
} step_plan;

/* The index of the node that makes value v (-1: not a node's output). */
static int producer(const ts_graph *g, int v) { return g->vals[v].kind == TS_V_NODE ? g->vals[v].node : -1; }

/* Add a collective node (ops/collective.c) on x for stage `stage` (-1: unplaced), acting at the
 * step's last micro-batch. Returns TS_OK or the graph's error. */
static ts_status add_comm(ts_graph *g, int op, ts_value x, const step_plan *sp, int stage, int kind, int root, int tag) {
    ts_attrs at = {0};
    at.i[0] = sp->comm_id;
    at.i[1] = 1 + (stage >= 0 ? stage : 0);
    at.i[2] = kind;
    at.i[3] = root;
    at.i[4] = sp->N;
    at.i[5] = tag;
    int in[2] = {x, sp->micro};
    if (ts_node_add(g, op, sp->micro != TS_NONE ? 2 : 1, in, &at, NULL) == TS_NONE && g->status) return g->status;
    g->nodes[g->nnodes - 1].stage = stage; /* with the parameters it serves, not where its inputs are */
    return TS_OK;
}

static int cmp_by_key(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Replicas: pack the accumulators src[v] into buckets of about bucket_bytes, stage by stage, in
 * the order the backward pass completes their gradients; post each bucket's all-reduce after its
 * accumulation and wait for every bucket before what reads them. *nbuckets: buckets made (their
 * tags are 0 .. nbuckets - 1). */
static ts_status add_buckets(ts_graph *g, const ts_optim_opts *o, const ts_value *src, int nv, step_plan *sp,
                             int *nbuckets) {
    size_t cap = o->bucket_bytes ? o->bucket_bytes : (size_t)25 << 20;
    int64_t (*key)[2] = malloc(sizeof *key * (size_t)(nv + 1));
    int n = 0;
    *nbuckets = 0;
    if (!key)
        return ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory packing the gradient buckets"), g->status;
    /* later stages finish their backward first; within a stage, the earliest gradient first */
    for (int v = 0; v < nv; v++)
        if (g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0)
            key[n][0] = ((int64_t)(TS_MAX_STAGES - param_stage(g, v)) << 40) + producer(g, g->vals[v].grad) + 1,
            key[n][1] = v, n++;
    qsort(key, (size_t)n, sizeof *key, cmp_by_key);
    ts_status st = TS_OK;
    int nb = 0;
    for (int i = 0; i < n && !st;) {
        int stage = param_stage(g, (int)key[i][1]), j = i;
        size_t bytes = 0;
        while (j < n && param_stage(g, (int)key[j][1]) == stage) { /* members: 64-byte aligned */
            size_t b = ts_val_bytes(&g->vals[src[key[j][1]]]), off = (bytes + 63) & ~(size_t)63;
            if (j > i && off + b > cap) break;
            bytes = off + b;
            j++;
        }
        int64_t shape[1] = {(int64_t)((bytes + 63) & ~(size_t)63) / 4};
        int b = ts_val_add(g, TS_V_STATE, TS_F32, 1, shape);
        if (b == TS_NONE) { /* out of memory, recorded */
            st = g->status;
            break;
        }
        g->vals[b].bucket = 1;
        size_t off = 0;
        for (int k = i; k < j; k++) {
            ts_val *x = &g->vals[src[key[k][1]]];
            off = (off + 63) & ~(size_t)63;
            x->pack = b + 1;
            x->pack_off = (int64_t)off;
            off += ts_val_bytes(x);
        }
        st = add_comm(g, TS_OP_COMM_START, b, sp, stage, 0, 0, nb++);
        i = j;
    }
    /* the waits, bucket by bucket (a bucket's start is the node after its members' accumulation) */
    int tag = 0;
    for (int i = 0, nn = g->nnodes; i < nn && !st; i++) {
        const ts_node *nd = &g->nodes[i];
        if (nd->op == TS_OP_COMM_START && nd->attr.i[2] == 0)
            st = add_comm(g, TS_OP_COMM_WAIT, nd->in[0], sp, nd->stage, 0, 0, tag++);
    }
    free(key);
    *nbuckets = nb;
    return st ? st : g->status;
}

/* Move each bucket's accumulation nodes and all-reduce start to just after the node that makes
 * the last of its gradients, so that the all-reduce runs while the backward pass goes on. Moved
 * nodes have no outputs; the nodes they pass keep their order (and get their outputs' producer
 * indices renumbered). ts_optimizer's nodes then begin later by the number moved. TS_OK, or the
 * graph's TS_ERR_NOMEM (nothing moved). */
static ts_status start_buckets_early(ts_graph *g) {
    int nn = g->nnodes, nv = g->nvals;
    int *anchor = malloc(sizeof(int) * (size_t)(nv + 1)); /* per bucket value: its last gradient's producer */
    int *at = malloc(sizeof(int) * (size_t)(nn + 1));      /* per node: move after this node (-1: stays) */
    int *order = malloc(sizeof(int) * (size_t)(nn + 1));   /* position -> node */
    if (!anchor || !at || !order) {
        free(anchor), free(at), free(order);
        return ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory reordering %d nodes", nn), g->status;
    }
    for (int v = 0; v < nv; v++) anchor[v] = -1;
    for (int i = 0; i < nn; i++) {
        const ts_node *nd = &g->nodes[i];
        at[i] = -1;
        if (nd->op != TS_OP_ACCUM_GRAD || !g->vals[nd->in[0]].pack) continue;
        int b = g->vals[nd->in[0]].pack - 1, p = producer(g, nd->in[1]);
        if (p > anchor[b]) anchor[b] = p;
    }
    int moved = 0;
    for (int i = g->opt_start; i < nn; i++) {
        const ts_node *nd = &g->nodes[i];
        int b = nd->op == TS_OP_ACCUM_GRAD && g->vals[nd->in[0]].pack ? g->vals[nd->in[0]].pack - 1
              : nd->op == TS_OP_COMM_START && nd->attr.i[2] == 0 ? nd->in[0] : -1;
        if (b >= 0 && anchor[b] >= 0 && anchor[b] < g->opt_start) at[i] = anchor[b], moved++;
    }
    int w = 0;
    for (int i = 0; i < nn; i++) {
        if (at[i] >= 0) continue;
        order[w++] = i;
        if (i >= g->opt_start) continue;
        for (int k = g->opt_start; k < nn; k++) /* in their order: a bucket's accumulations, then its start */
            if (at[k] == i) order[w++] = k;
    }
    ts_status st = ts_graph_apply_order(g, order, NULL);
    if (st == TS_OK) g->opt_start += moved;
    free(anchor), free(at), free(order);
    return st;
}

/* What keeps the updates out of the backward pass: an option that needs every gradient before
 * any update (its words, for the error), or NULL. R: the replicas. */
static const char *in_backward_conflict(const ts_graph *g, const ts_optim_opts *o, int R) {
    return o->max_grad_norm > 0.f ? "clipping by the global norm (max_grad_norm > 0)"
         : o->accumulation_steps > 1 ? "gradient accumulation (accumulation_steps > 1)"
         : R > 1 ? "replicas (a communicator of 2 or more ranks)"
         : loss_scale_node(g) >= 0 ? "loss scaling (ts_backward_scaled)"
         : g->nstages > 0 ? "pipeline stages" : NULL;
}

/* updates_early's order: node i at order[w], then every group anchored on node i (its copy,
 * then its nodes, each followed by the groups anchored on it). Returns the next position. */
static int emit(int *order, int w, int i, const int *after, const int *first, const int *copy, int ngroups) {
    order[w++] = i;
    for (int k = 0; k < ngroups; k++) {
        if (after[first[k]] != i) continue;
        if (copy[k] >= 0) w = emit(order, w, copy[k], after, first, copy, ngroups);
        for (int j = first[k]; j < first[k + 1]; j++) w = emit(order, w, j, after, first, copy, ngroups);
    }
    return w;
}

/* updates_in_backward: move each parameter's group of nodes — its update and, for a 16-bit
 * parameter, the casts around it: nodes first[k] .. first[k + 1] - 1, first[ngroups] = the end
 * of the updates — to just after the last node it must follow: the producers of what it reads
 * (its gradient complete), and every other reader of a parameter or state value it reads or of
 * a view of one (reshapes: the update writes the parameter in place, so the forward's and the
 * backward's uses of the old value come first). A gradient that ts_backward copied into a buffer
 * of its own at the end of the backward (a scale node: the product was a view, as at batch 1)
 * moves with its group, so the group then follows what that copy reads. Groups keep their order;
 * so do the nodes they pass, renumbered, and opt_start / bwd_start follow the nodes they named. A
 * tied weight's update waits for its last use. TS_OK, or the graph's TS_ERR_NOMEM (nothing
 * moved). */
static ts_status updates_early(ts_graph *g, const int *first, int ngroups) {
    int nn = g->nnodes, nv = g->nvals, end = first[ngroups];
    int *root = malloc(sizeof(int) * (size_t)(nv + 1));    /* per value: its alias root */
    int *last = malloc(sizeof(int) * (size_t)(nv + 1));    /* per root: last reader outside groups */
    int *readers = calloc((size_t)nv + 1, sizeof(int));     /* per value: how many nodes read it */
    int *after = malloc(sizeof(int) * (size_t)(nn + 1));   /* per node: moved after this node, -1: stays */
    int *copy = malloc(sizeof(int) * (size_t)(ngroups + 1)); /* per group: the gradient copy it takes, -1 */
    int *order = malloc(sizeof(int) * (size_t)(nn + 1)), *new_index = malloc(sizeof(int) * (size_t)(nn + 1));
    if (!root || !last || !readers || !after || !copy || !order || !new_index) {
        free(root), free(last), free(readers), free(after), free(copy), free(order), free(new_index);
        return ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory reordering %d nodes", nn), g->status;
    }
    for (int v = 0; v < nv; v++) root[v] = v, last[v] = -1;
    for (int i = 0; i < nn; i++) {
        const ts_node *n = &g->nodes[i];
        after[i] = -1;
        if ((ts_op_get(n->op)->flags & TS_OPF_ALIAS0) && n->in[0] >= 0) root[n->out[0]] = root[n->in[0]];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) readers[n->in[j]]++;
        if (i >= first[0] && i < end) continue;
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) last[root[n->in[j]]] = i;
    }
    for (int k = 0; k < ngroups; k++) {
        int at = -1;
        copy[k] = -1;
        for (int i = first[k]; i < first[k + 1]; i++) {
            const ts_node *n = &g->nodes[i];
            for (int j = 0; j < n->nin; j++) {
                int x = n->in[j], p = x >= 0 ? producer(g, x) : -1;
                if (x < 0) continue;
                if (p >= g->bwd_start && p < first[0] && g->nodes[p].op == TS_OP_SCALE && readers[x] == 1 &&
                    g->vals[x].name && copy[k] < 0) { /* the gradient's own copy: it moves along */
                    copy[k] = p;
                    for (int c = 0; c < g->nodes[p].nin; c++) {
                        int q = g->nodes[p].in[c] >= 0 ? producer(g, g->nodes[p].in[c]) : -1;
                        if (q > at) at = q;
                    }
                    continue;
                }
                if (p >= 0 && p < first[k] && p > at) at = p;
                int kind = g->vals[root[x]].kind;
                if ((kind == TS_V_PARAM || kind == TS_V_STATE) && last[root[x]] > at) at = last[root[x]];
            }
        }
        if (at >= first[0]) at = -1, copy[k] = -1; /* it follows a node of the optimizer's: it stays */
        for (int i = first[k]; i < first[k + 1]; i++) after[i] = at;
        if (copy[k] >= 0) after[copy[k]] = at;
    }
    /* the order: each node not moved, and after it the groups anchored there (each with its copy
     * first), in their order; a group anchored on a moved node follows that node where it lands */
    int w = 0;
    for (int i = 0; i < nn; i++)
        if (after[i] < 0) w = emit(order, w, i, after, first, copy, ngroups);
    if (ts_graph_apply_order(g, order, new_index) != TS_OK) {
        free(root), free(last), free(readers), free(after), free(copy), free(order), free(new_index);
        return g->status;
    }
    if (g->bwd_start >= 0 && g->bwd_start < nn) g->bwd_start = new_index[g->bwd_start];
    int opt = nn; /* the first of the optimizer's nodes left in place */
    for (int i = g->opt_start; i < nn; i++)
        if (after[i] < 0 && new_index[i] < opt) opt = new_index[i];
    g->opt_start = opt;
    free(root), free(last), free(readers), free(after), free(copy), free(order), free(new_index);
    return TS_OK;
}

/* shard_state: the rank that updates each trained parameter — within each stage, the largest
 * parameters first, each to the rank with the fewest bytes so far (the same on every rank). NULL
 * when out of memory (recorded in g). */
static int *assign_owners(ts_graph *g, int nv, int R) {
    int *owner = malloc(sizeof(int) * (size_t)(nv + 1));
    int64_t (*key)[2] = malloc(sizeof *key * (size_t)(nv + 1));
    size_t *load = calloc((size_t)R, sizeof(size_t));
    if (!owner || !key || !load) {
        free(owner), free(key), free(load);
        ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory sharding the state over %d ranks", R);
        return NULL;
    }
    for (int v = 0; v < nv; v++) owner[v] = -1;
    for (int s = -1; s < TS_MAX_STAGES; s++) {
        int n = 0;
        for (int v = 0; v < nv; v++)
            if (g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0 && param_stage(g, v) == s)
                key[n][0] = -(int64_t)ts_val_bytes(&g->vals[v]), key[n][1] = v, n++;
        if (!n) continue;
        qsort(key, (size_t)n, sizeof *key, cmp_by_key);
        memset(load, 0, sizeof(size_t) * (size_t)R);
        for (int i = 0; i < n; i++) {
            int best = 0;
            for (int r = 1; r < R; r++)
                if (load[r] < load[best]) best = r;
            owner[key[i][1]] = best;
            load[best] += ts_val_bytes(&g->vals[key[i][1]]);
        }
    }
    free(key), free(load);
    return owner;
}

/* Accumulators (src[v] becomes "<v>@ACCUM" when N > 1 or with replicas, else the gradient), the
 * buckets' all-reduces, the sum of squares and the coefficient. Returns TS_OK or the graph's error. */
static ts_status add_step_coef(ts_graph *g, const ts_optim_opts *o, ts_value *src, int nv, step_plan *sp) {
    sp->N = o->accumulation_steps > 1 ? o->accumulation_steps : 1;
    sp->scaler = loss_scale_node(g);
    sp->micro = sp->sumsq = sp->coef = TS_NONE;
    if (sp->N > 1 && (sp->micro = ts_state_new(g, TS_MICRO_STEP, 0, NULL)) == TS_NONE) return g->status;
    for (int v = 0; v < nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM || g->vals[v].grad < 0) continue;
        src[v] = g->vals[v].grad;
        if (sp->N == 1 && sp->R == 1) continue;
        ts_value acc = add_state(g, v, "ACCUM", 0), gr = g->vals[v].grad;
        if (acc != TS_NONE && g->vals[gr].dtype != TS_F32) { /* 16-bit parameters: accumulated in f32 */
            g->cur_stage = param_stage(g, v);
            gr = ts_cast(g, gr, TS_F32);
            g->cur_stage = -1;
        }
        int in[3] = {acc, gr, sp->micro};
        if (acc == TS_NONE || gr == TS_NONE ||
            ts_node_add(g, TS_OP_ACCUM_GRAD, sp->micro != TS_NONE ? 3 : 2, in, NULL, NULL) == TS_NONE)
            return g->status;
        src[v] = acc;
    }
    int nb = 0;
    if (sp->R > 1 && add_buckets(g, o, src, nv, sp, &nb)) return g->status;
    if (o->max_grad_norm > 0.f || sp->scaler >= 0)
        if ((sp->sumsq = add_sumsq(g, src, nv)) == TS_NONE) return g->status;
    if (o->max_grad_norm == 0.f && sp->scaler < 0 && sp->N == 1 && sp->R == 1) return TS_OK;
    ts_attrs at = {0};
    at.f[0] = o->max_grad_norm;
    at.i[0] = sp->N;
    at.i[1] = sp->R;
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
 * them and the order stays topological; the nodes they pass have their outputs renumbered.
 * TS_OK, or the graph's TS_ERR_NOMEM (nothing moved). */
static ts_status counters_last(ts_graph *g) {
    int n = g->nnodes, w = 0;
    int *order = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!order) return ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory reordering %d nodes", n), g->status;
    for (int pass = 0; pass < 2; pass++) /* the other nodes, then the counters */
        for (int i = 0; i < n; i++)
            if ((g->nodes[i].op == TS_OP_STEP_COUNT) == pass) order[w++] = i;
    ts_status st = ts_graph_apply_order(g, order, NULL);
    free(order);
    return st;
}

/* 16-bit parameters (ts_graph_store_params): the update works on f32 copies of the parameter, its
 * gradient and its state, made here just before it (in[k] becomes its copy, for the k of nin
 * inputs that are 16-bit); half_write_back then rounds the copies it wrote back into place. */
static ts_status half_copies(ts_graph *g, int *in, int nin, int stage) {
    g->cur_stage = stage;
    for (int k = 0; k < nin; k++)
        if (in[k] >= 0 && g->vals[in[k]].ndim > 0 && g->vals[in[k]].dtype != TS_F32 &&
            (in[k] = ts_cast(g, in[k], TS_F32)) == TS_NONE)
            break;
    g->cur_stage = -1;
    return g->status;
}

/* The update wrote the f32 copy x32 of dst (a 16-bit parameter or state value): dst = x32 rounded,
 * stochastically — ts_cast_stochastic under rounding_seed (else the graph's), at step t (the parameter's step
 * counter, after the update's increment), keyed by dst's name — or to nearest with round_nearest.
 * A skipped update leaves x32 exactly dst, and either rounding gives dst back. */
static ts_status half_write_back(ts_graph *g, ts_value dst, ts_value x32, ts_value t, const ts_optim_opts *o,
                                 int stage) {
    g->cur_stage = stage;
    ts_dtype dt = g->vals[dst].dtype;
    uint64_t seed = o->rounding_seed ? o->rounding_seed : g->seed;
    ts_value y = o->round_nearest ? ts_cast(g, x32, dt)
                                  : ts_cast_stochastic(g, x32, t, dt, seed, ts_cast_stochastic_key(g->vals[dst].name));
    if (y != TS_NONE) ts_assign(g, dst, y);
    g->cur_stage = -1;
    return g->status;
}

/* One update node per trained parameter v, reading gradient src[v] and coefficient coef. With
 * first (may be NULL), the nodes appended for the k-th parameter updated begin at first[k]
 * (*ngroups counts them). */
static ts_status add_updates(ts_graph *g, ts_value lr, const ts_optim_opts *o, const ts_value *src, int nv,
                             ts_value coef, const int *owner, int rank, int *first, int *ngroups) {
    for (int v = 0; v < nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM || g->vals[v].grad < 0) continue;
        if (owner && owner[v] != rank) continue; /* another rank updates it and broadcasts it */
        if (first) first[(*ngroups)++] = g->nnodes;
        int first_state = g->nvals, half = g->vals[v].dtype != TS_F32;
        float wd = excluded(o, g->vals[v].name) ? 0.f : o->weight_decay;
        ts_attrs at = {0};
        int in[7] = {-1, -1, -1, -1, -1, -1, -1}, nin;
        if (o->kind == TS_OPTIM_SGD) {
            at.f[0] = o->momentum;
            at.f[1] = wd;
            at.f[2] = o->dampening;
            at.i[0] = o->nesterov != 0;
            ts_value buf = TS_NONE, t = TS_NONE;
            if (o->momentum != 0.f && (buf = add_state_like(g, v, "MOMENTUM")) == TS_NONE) return g->status;
            /* 16-bit: the step counter is stochastic rounding's step */
            if (((o->momentum != 0.f && o->dampening != 0.f) || half) && (t = add_state(g, v, "STEP", 1)) == TS_NONE)
                return g->status;
            int a[6] = {v, src[v], lr, buf, t, coef};
            nin = coef != TS_NONE ? 6 : t != TS_NONE ? 5 : 4;
            memcpy(in, a, sizeof a);
        } else {
            at.f[0] = o->beta1;
            at.f[1] = o->beta2;
            at.f[2] = o->eps;
            at.f[3] = wd;
            ts_value m = add_state_like(g, v, "MOMENT1");
            ts_value s2 = m == TS_NONE ? TS_NONE : add_state_like(g, v, "MOMENT2");
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
        int orig[7], stage = param_stage(g, v), t_at = o->kind == TS_OPTIM_SGD ? 4 : 5;
        memcpy(orig, in, sizeof in);
        if (half && half_copies(g, in, 5, stage)) return g->status; /* param, grad, lr, m / buf, v / t */
        g->cur_stage = half ? stage : -1; /* on the parameter's stage, as its master copy's update is */
        ts_node_add(g, op, nin, in, &at, NULL);
        g->cur_stage = -1;
        if (g->status) return g->status;
        for (int k = 0; half && k < 5; k++) /* the parameter and its state, written back */
            if (k != 1 && in[k] != orig[k] && half_write_back(g, orig[k], in[k], orig[t_at], o, stage))
                return g->status;
        if (owner) /* this rank's share of the state: its own part of a checkpoint */
            for (int s = first_state; s < g->nvals; s++) g->vals[s].sharded = g->vals[s].kind == TS_V_STATE;
    }
    return TS_OK;
}

ts_optim_opts ts_optim_defaults(ts_optim_kind kind) {
    ts_optim_opts o = {.struct_size = sizeof o};
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
    ts_optim_opts oc;
    if (TS_STRUCT_READ(&oc, o, ts_optim_opts, "ts_optimizer")) return ts_graph_fail(g, TS_ERR_ARG, "%s", ts_last_error()), g->status;
    o = &oc;
    if (o->nno_decay < 0 || (o->nno_decay > 0 && !o->no_decay))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: nno_decay is %d but no_decay is %s",
                             o->nno_decay, o->no_decay ? "set" : "NULL"), g->status;
    if (o->nno_trust < 0 || (o->nno_trust > 0 && !o->no_trust))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: nno_trust is %d but no_trust is %s",
                             o->nno_trust, o->no_trust ? "set" : "NULL"), g->status;
    if ((st = check_opts(g, o))) return st;

    int R = o->comm ? ts_comm_size(o->comm) : 1;
    const char *why = in_backward_conflict(g, o, R);
    if (o->updates_in_backward < 0 || o->updates_in_backward > 2)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: updates_in_backward %d must be 0, 1 or 2",
                             o->updates_in_backward), g->status;
    if (o->updates_in_backward == 1 && why)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: updates_in_backward cannot be combined with %s, "
                             "which needs every gradient before any update", why), g->status;
    int in_backward = o->updates_in_backward && !why;
    if (o->shard_state && R < 2)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: shard_state needs a communicator of 2 or more ranks "
                             "(this one has %d)", R), g->status;
    if (o->shard_state && o->kind == TS_OPTIM_SGD && o->momentum == 0.f)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_optimizer: shard_state: SGD without momentum has no state to "
                             "shard"), g->status;

    int nv = g->nvals; /* state values added below are not parameters */
    g->opt_start = g->nnodes;
    g->accum_steps = o->accumulation_steps > 1 ? o->accumulation_steps : 1;
    ts_value *src = malloc(sizeof(ts_value) * (size_t)nv);
    if (!src) return ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory for %d values", nv), g->status;
    step_plan sp = {.R = R, .rank = o->comm ? ts_comm_rank(o->comm) : 0, .comm_id = ts_comm_id(o->comm)};
    if (R > 1) g->replicas = R, g->replica = sp.rank, g->comm_id = sp.comm_id;
    if (o->shard_state && !(sp.owner = assign_owners(g, nv, R))) st = g->status;
    int *first = st || !in_backward ? NULL : malloc(sizeof(int) * (size_t)(nv + 1)), ngroups = 0;
    if (!st && in_backward && !first)
        st = ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory for %d values", nv);
    /* a gradient freed by its update lives in the arena: the tied embeddings' decoder share too */
    if (!st && in_backward) st = ts_sink_gradient_partials(g);
    if (!st) st = add_step_coef(g, o, src, nv, &sp);
    if (!st) st = add_updates(g, lr, o, src, nv, sp.coef, sp.owner, sp.rank, first, &ngroups);
    if (!st && in_backward) {
        first[ngroups] = g->nnodes;
        st = updates_early(g, first, ngroups);
        g->updates_in_backward = 1;
    }
    free(first);
    if (!st && sp.owner) { /* each parameter from the rank that updated it; tags after the buckets' */
        int tag0 = 0;
        for (int i = 0; i < g->nnodes; i++)
            if (g->nodes[i].op == TS_OP_COMM_START) tag0++;
        for (int v = 0, k = 0; v < nv && !st; v++)
            if (g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0)
                st = add_comm(g, TS_OP_COMM_START, v, &sp, param_stage(g, v), 1, sp.owner[v], tag0 + k++);
        for (int v = 0, k = 0; v < nv && !st; v++)
            if (g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0)
                st = add_comm(g, TS_OP_COMM_WAIT, v, &sp, param_stage(g, v), 1, sp.owner[v], tag0 + k++);
    }
    free(src);
    free(sp.owner);
    if (!st) st = add_step_end(g, &sp);
    if (!st) st = counters_last(g);
    if (!st && R > 1) st = start_buckets_early(g);
    return st;
}

ts_status ts_sgd_ex(ts_graph *g, ts_value lr, const ts_sgd_opts *so) {
    if (!so) {
        if (!g) return ts_err(TS_ERR_ARG, "ts_sgd_ex: graph is NULL");
        return ts_graph_fail(g, TS_ERR_ARG, "ts_sgd_ex: options are NULL"), g->status;
    }
    ts_sgd_opts sc;
    if (TS_STRUCT_READ(&sc, so, ts_sgd_opts, "ts_sgd_ex"))
        return g ? (ts_graph_fail(g, TS_ERR_ARG, "%s", ts_last_error()), g->status) : TS_ERR_ARG;
    so = &sc;
    ts_optim_opts o = ts_optim_defaults(TS_OPTIM_SGD);
    o.momentum = so->momentum;
    o.dampening = so->dampening;
    o.nesterov = so->nesterov;
    o.weight_decay = so->weight_decay;
    return ts_optimizer(g, lr, &o);
}

ts_status ts_sgd(ts_graph *g, ts_value lr, float momentum, float weight_decay) {
    ts_sgd_opts so = {sizeof so, momentum, 0.f, weight_decay, 0};
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
