/*
 * autodiff.c — reverse-mode differentiation that appends the backward pass to the same graph.
 *
 * Walk the forward nodes from last to first. A node whose outputs received gradient, and one of
 * whose inputs depends on a trainable parameter, asks its op's grad rule for the input
 * gradients; contributions to the same value are summed with add nodes. Each parameter's final
 * gradient is named "<param>@GRAD" so it can be fetched and updated by an optimizer.
 * Nodes of a recompute segment get their grad rule called on clones of the segment's forward,
 * appended when the walk reaches the segment (graph/recompute.c).
 */
#include "graph/recompute.h"
#include "graph/opdef.h"

#include <stdio.h>

ts_status ts_backward(ts_graph *g, ts_value loss) { return ts_backward_seeded(g, loss, TS_NONE); }

/* seed: the loss's own gradient, a rank-0 f32 value (the loss scale), or TS_NONE for 1. */
ts_status ts_backward_seeded(ts_graph *g, ts_value loss, ts_value seed) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_backward: graph is NULL");
    if (g->status != TS_OK) return ts_graph_status(g);
    if (!ts_val_ok(g, loss))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_backward: loss is not a value of this graph"), g->status;
    if (g->has_backward)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_backward: the graph already has a backward pass"), g->status;
    if (g->open_seg)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_backward: recompute segment %d is still open "
                             "(call ts_graph_recompute_end first)", g->open_seg), g->status;
    if (g->cur_stage >= 0)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_backward: pipeline stage %d is still open "
                             "(call ts_graph_stage_end first)", g->cur_stage), g->status;
    char b[256];
    const ts_val *lv = &g->vals[loss];
    if (ts_val_numel(lv) != 1 || lv->dtype != TS_F32)
        return ts_graph_fail(g, TS_ERR_SHAPE, "ts_backward: loss %s must be a single f32 element",
                             ts_val_str(g, loss, b, sizeof b)), g->status;

    int nv = g->nvals, nn = g->nnodes;
    char *dep = calloc((size_t)nv, 1);
    int *grad = malloc(sizeof(int) * (size_t)nv);
    ts_tensor *one = ts_tensor_new(TS_F32, lv->ndim, lv->shape);
    ts_recompute rc;
    if (!dep || !grad || !one || ts_recompute_init(&rc, nv) != TS_OK) {
        free(dep), free(grad), ts_tensor_free(one);
        return ts_graph_fail(g, TS_ERR_NOMEM, "ts_backward: out of memory for the tables of %d values", nv), g->status;
    }
    g->bwd_start = nn;
    for (int v = 0; v < nv; v++) {
        grad[v] = TS_NONE;
        dep[v] = g->vals[v].kind == TS_V_PARAM;
    }
    for (int i = 0; i < nn; i++) {
        const ts_node *n = &g->nodes[i];
        int d = 0;
        for (int j = 0; j < n->nin; j++) d |= n->in[j] >= 0 && dep[n->in[j]];
        for (int k = 0; k < n->nout; k++) dep[n->out[k]] = (char)d;
    }

    /* every gradient op goes on the stage of the forward op it differentiates */
    g->cur_stage = lv->kind == TS_V_NODE ? g->nodes[lv->node].stage : -1;
    ((float *)one->data)[0] = 1.f;
    grad[loss] = seed == TS_NONE ? ts_constant(g, one)
               : lv->ndim    ? ts_reshape(g, seed, lv->ndim, lv->shape) : seed;
    ts_tensor_free(one);

    ts_status st = g->status; /* the seed's node may have failed (out of memory) */
    for (int i = nn - 1; i >= 0 && st == TS_OK; i--) {
        ts_node n = g->nodes[i]; /* a copy: building grads may move g->nodes */
        int has_gout = 0, has_dep = 0;
        ts_value gout[TS_MAX_OUT], gin[TS_MAX_IN];
        for (int k = 0; k < n.nout; k++) {
            gout[k] = grad[n.out[k]];
            has_gout |= gout[k] != TS_NONE;
        }
        for (int j = 0; j < n.nin; j++) {
            has_dep |= n.in[j] >= 0 && dep[n.in[j]];
            gin[j] = TS_NONE;
        }
        if (!has_gout || !has_dep) continue;
        const ts_op_def *d = ts_op_get(n.op);
        g->cur_stage = n.stage;
        if (!d->grad) {
            st = g->status ? g->status
                           : (ts_graph_fail(g, TS_ERR_UNSUPPORTED,
                                            "ts_backward: op %s is not differentiable, but the loss "
                                            "depends on parameters through it", d->name), g->status);
            break;
        }
        ts_node use; /* n, or n reading the recomputed clones of its segment */
        if ((st = ts_recompute_node(g, &rc, i, &use)) != TS_OK || (st = ts_recompute_reads(g, &rc, dep, &use)) != TS_OK)
            break;
        ts_status s = d->grad(g, &use, gout, gin);
        if (s == TS_OK && g->status != TS_OK) s = g->status;
        if (s != TS_OK) {
            if (g->status == TS_OK) ts_graph_fail(g, s, "ts_backward: gradient of op %s: %s", d->name, ts_last_error());
            st = g->status;
            break;
        }
        for (int j = 0; j < n.nin; j++) {
            int v = n.in[j];
            if (v < 0 || !dep[v] || gin[j] == TS_NONE) continue;
            grad[v] = grad[v] == TS_NONE ? gin[j] : ts_add(g, grad[v], gin[j]);
        }
    }

    for (int v = 0; v < nv && st == TS_OK; v++) {
        if (g->vals[v].kind != TS_V_PARAM || grad[v] == TS_NONE) continue;
        ts_value gv = grad[v];
        g->cur_stage = g->vals[gv].kind == TS_V_NODE ? g->nodes[g->vals[gv].node].stage : -1;
        /* A gradient must be a buffer of its own: copy one that is shared, already named, or a
         * view of another value's storage (the output of an alias op such as reshape). */
        if (g->vals[gv].kind != TS_V_NODE || g->vals[gv].name ||
            (ts_op_get(g->nodes[g->vals[gv].node].op)->flags & TS_OPF_ALIAS0))
            gv = ts_scale(g, gv, 1.f, 0.f);
        for (int w = 0; w < v; w++)
            if (g->vals[w].kind == TS_V_PARAM && g->vals[w].grad == gv) gv = ts_scale(g, gv, 1.f, 0.f);
        char name[512];
        snprintf(name, sizeof name, "%s@GRAD", g->vals[v].name);
        if (ts_name(g, gv, name) == TS_NONE) { st = g->status; break; }
        g->vals[v].grad = gv;
    }
    g->cur_stage = -1;
    if (st == TS_OK && g->status != TS_OK) st = g->status;
    ts_recompute_free(&rc);
    free(dep);
    free(grad);
    if (st == TS_OK) {
        g->has_backward = 1;
        g->loss = loss;
    }
    return st;
}

ts_value ts_grad(const ts_graph *g, ts_value param) {
    if (!g || !ts_val_ok(g, param) || g->vals[param].kind != TS_V_PARAM) return TS_NONE;
    return g->vals[param].grad;
}
