/*
 * cast_sum.c — cast_sum_to: a gradient cast to 16 bits and summed over its leading dims in one
 * pass. The fusion pass (graph/passes/fuse.c, rule 8) makes it where one f32 value is read by
 * exactly a cast to bf16 / f16 and a sum_to over its leading dims: in an autocast training step
 * that is a linear layer's output gradient, whose bf16 copy the backward products read and whose
 * column sums are the bias gradient. Nothing else creates these nodes.
 *
 * Node: x f32 [..., C...] (the last `rank` dims are the sum's shape) ->
 *   out 0: cast(x, dtype), x's shape          (the cast op's rounding: ts_f32_to_bf16 / _f16)
 *   out 1: s[c] = sum over the leading dims r of x[r, c], f32, x's last `rank` dims
 * Attributes: i[0] = dtype (TS_BF16 or TS_F16), i[1] = rank (1 .. x's rank).
 * Both outputs equal the unfused ops' bit for bit: the cast is the cast op's conversion, and the
 * sums are sum_to's own (ts_sum_rows, ops/elementwise.c: an order of additions fixed by the row
 * count, whatever the threads), each row cast as it is added. One read of x instead of two.
 *
 * Not differentiable (grad NULL): fusion runs at compile time, after ts_backward.
 */
#include "ops/op.h"

static ts_status infer_cast_sum(ts_graph *g, ts_node *n) {
    char b[256];
    const ts_val *x = &g->vals[n->in[0]];
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op cast_sum_to: input %s has dtype %s; this op takes f32",
                      ts_val_str(g, n->in[0], b, sizeof b), ts_dtype_name(x->dtype));
    int64_t dt = n->attr.i[0], rank = n->attr.i[1];
    if (dt != TS_BF16 && dt != TS_F16)
        return ts_err(TS_ERR_DTYPE, "op cast_sum_to: target dtype %lld; this op casts to bf16 or f16", (long long)dt);
    if (rank < 1 || rank > x->ndim)
        return ts_err(TS_ERR_SHAPE, "op cast_sum_to: a sum of rank %lld of %s (rank 1 .. %d)", (long long)rank,
                      ts_val_str(g, n->in[0], b, sizeof b), x->ndim);
    ts_val *y = &g->vals[n->out[0]], *s = &g->vals[n->out[1]];
    y->dtype = (ts_dtype)dt, y->ndim = x->ndim;
    memcpy(y->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    s->dtype = TS_F32, s->ndim = (int)rank;
    memcpy(s->shape, x->shape + x->ndim - rank, sizeof(int64_t) * (size_t)rank);
    return TS_OK;
}

static ts_status cast_sum_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_val *x = &g->vals[k->node->in[0]];
    int64_t C = ts_val_numel(&g->vals[k->node->out[1]]);
    if (C) ts_sum_rows(k->in[0], ts_val_numel(x) / C, C, k->out[1], k->scratch, k->out[0],
                       g->vals[k->node->out[0]].dtype);
    return TS_OK;
}

static size_t cast_sum_scratch(const ts_graph *g, const ts_node *n) {
    int64_t C = ts_val_numel(&g->vals[n->out[1]]);
    return C ? ts_sum_rows_scratch(ts_val_numel(&g->vals[n->in[0]]) / C, C) : 0;
}

const ts_op_def ts_opdef_cast_sum_to = {"cast_sum_to", 1, 1, 2, 0, infer_cast_sum, NULL, cast_sum_kernel, cast_sum_scratch};
