/*
 * assign.c — ts_assign: a value written into a parameter's or a state value's buffer, the write-back
 * of an update computed on working copies (16-bit weights: the optimizer updates f32 copies of a
 * bf16 parameter and its state, then rounds each back and assigns it, src/optim/optimizer.c).
 *
 *   assign(dst, src)        dst <- src, elementwise; no outputs
 *
 * dst is a TS_V_PARAM or TS_V_STATE value, src any value of dst's dtype and shape. Like the
 * optimizer updates it writes persistent memory through its input pointer, so it is flagged
 * TS_OPF_SIDE_EFFECT (never dead, dropped for inference) and has no gradient.
 */
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_assign(ts_graph *g, ts_node *n) {
    const ts_val *d = &g->vals[n->in[0]], *s = &g->vals[n->in[1]];
    if (d->kind != TS_V_PARAM && d->kind != TS_V_STATE)
        return ts_err(TS_ERR_ARG, "op assign: destination %s must be a parameter or a state value", VS(g, n->in[0]));
    if (s->dtype != d->dtype || s->ndim != d->ndim ||
        (d->ndim && memcmp(s->shape, d->shape, sizeof(int64_t) * (size_t)d->ndim)))
        return ts_err(TS_ERR_SHAPE, "op assign: source %s must have the dtype and shape of destination %s",
                      VS(g, n->in[1]), VS(g, n->in[0]));
    return TS_OK;
}

static ts_status assign_kernel(const ts_kargs *k) {
    size_t bytes = ts_val_bytes(&k->g->vals[k->node->in[0]]);
    if (k->in[0] != k->in[1]) memmove(k->in[0], k->in[1], bytes);
    return TS_OK;
}

const ts_op_def ts_opdef_assign = {"assign", 2, 2, 0, TS_OPF_SIDE_EFFECT, infer_assign, NULL, assign_kernel, NULL};

ts_status ts_assign(ts_graph *g, ts_value dst, ts_value src) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_assign: graph is NULL");
    if (ts_node_add(g, TS_OP_ASSIGN, 2, (int[]){dst, src}, NULL, NULL) == TS_NONE && g->status) return g->status;
    return g->status;
}
