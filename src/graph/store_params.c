/*
 * store_params.c — ts_graph_store_params: a model built in f32 made to keep its parameters in 16
 * bits (as model.to(torch.bfloat16), or Paddle's amp.decorate at level O2), with the math it was
 * built with unchanged. Each f32 parameter p becomes bf16 / f16 in place (same value id, name and
 * initializer: the runtime rounds the initial values to nearest), and the nodes that read it read
 * instead one cast of it to f32, made just before the first of them, on that node's pipeline stage
 * and in its recompute segment (so a recomputed layer re-makes its f32 copy instead of keeping it).
 * ts_backward then gives p a gradient of p's dtype (the cast's gradient rule), and ts_optimizer
 * keeps p's state in p's dtype and rounds p's updates stochastically (optim/optimizer.c).
 */
#include "graph/ir.h"

#include <stdlib.h>

ts_status ts_graph_store_params(ts_graph *g, ts_dtype dtype) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_graph_store_params: graph is NULL");
    if (g->status != TS_OK) return g->status;
    if (dtype != TS_BF16 && dtype != TS_F16)
        return ts_graph_fail(g, TS_ERR_DTYPE, "ts_graph_store_params: dtype %s; parameters are stored in bf16 or f16",
                             (unsigned)dtype < TS_DTYPE_COUNT ? ts_dtype_name(dtype) : "invalid"), g->status;
    if (g->has_backward)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_graph_store_params: call it before ts_backward"), g->status;
    int nv = g->nvals, nn = g->nnodes;
    int *first = malloc(sizeof(int) * (size_t)(nv + 1));  /* per parameter: its first reader, or -1 */
    int *cast_of = malloc(sizeof(int) * (size_t)(nv + 1)); /* per parameter: the value of its f32 cast */
    if (!first || !cast_of) {
        free(first), free(cast_of);
        return ts_graph_fail(g, TS_ERR_NOMEM, "ts_graph_store_params: out of memory"), g->status;
    }
    for (int v = 0; v < nv; v++) first[v] = -1, cast_of[v] = -1;
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].nin; j++) {
            int v = g->nodes[i].in[j];
            if (v >= 0 && first[v] < 0 && g->vals[v].kind == TS_V_PARAM && g->vals[v].dtype == TS_F32) first[v] = i;
        }
    /* the casts, appended (ts_node_add checks them), then moved before their first readers */
    ts_status st = TS_OK;
    int ncast = 0;
    for (int v = 0; v < nv && !st; v++) {
        if (first[v] < 0) continue;
        g->vals[v].dtype = dtype;
        ts_value c = ts_cast(g, v, TS_F32);
        if (c == TS_NONE) { st = g->status; break; }
        ts_node *cn = &g->nodes[g->vals[c].node];
        cn->seg = g->nodes[first[v]].seg, cn->stage = g->nodes[first[v]].stage;
        cast_of[v] = c, ncast++;
    }
    ts_node *out = st ? NULL : malloc(sizeof(ts_node) * (size_t)(nn + ncast + 1));
    if (!st && !out) ts_graph_fail(g, TS_ERR_NOMEM, "ts_graph_store_params: out of memory"), st = g->status;
    if (!st) {
        int w = 0;
        for (int i = 0; i < nn; i++) {
            ts_node n = g->nodes[i];
            for (int j = 0; j < n.nin; j++) {
                int v = n.in[j];
                if (v < 0 || cast_of[v] < 0) continue;
                if (first[v] == i) { /* the cast goes first (once, however many inputs read v) */
                    out[w++] = g->nodes[g->vals[cast_of[v]].node];
                    first[v] = -2;
                }
                n.in[j] = cast_of[v];
            }
            out[w++] = n;
        }
        memcpy(g->nodes, out, sizeof(ts_node) * (size_t)w);
        for (int i = 0; i < w; i++)
            for (int k = 0; k < g->nodes[i].nout; k++) g->vals[g->nodes[i].out[k]].node = i;
    }
    free(out), free(first), free(cast_of);
    return st;
}
