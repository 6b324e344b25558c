/*
 * argreduce.c — ts_argmax / ts_argmin: the position of the largest / smallest element along one
 * axis of f32 x, as i64.
 *
 *   argreduce(x [.., n, ..]) -> [.., 1, ..] (keepdims) or [.., ..]
 *   attrs: i[0] = axis (0 <= axis < rank), i[1] = keepdims, i[2] = select_last, i[3] = 1 for min
 *
 * Along each line x[0..n) the kernel keeps the best index b, starting at 0, and moves it to j when
 *   max: x[j] > x[b], or x[j] is NaN and x[b] is not (NaN counts as the largest, as numpy)
 *   min: x[j] < x[b], or x[j] is NaN and x[b] is not (NaN counts as the smallest)
 * and, with select_last, also when x[j] equals x[b] (or both are NaN): the last of the ties.
 * Not differentiable: the grad rule sets no gradient (an index has none).
 */
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)
#define PAR_ELEMS 32768

static ts_status infer_argreduce(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    const char *name = n->attr.i[3] ? "argmin" : "argmax";
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: %s has dtype %s; this op takes f32", name, VS(g, n->in[0]),
                      ts_dtype_name(x->dtype));
    int64_t axis = n->attr.i[0];
    if (axis < 0 || axis >= x->ndim)
        return ts_err(TS_ERR_ARG, "op %s: axis %lld is out of range for %s", name, (long long)axis, VS(g, n->in[0]));
    if (x->shape[axis] == 0)
        return ts_err(TS_ERR_SHAPE, "op %s: axis %lld of %s is empty; it has no %s", name, (long long)axis,
                      VS(g, n->in[0]), n->attr.i[3] ? "minimum" : "maximum");
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_I64;
    o->ndim = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (i != axis) o->shape[o->ndim++] = x->shape[i];
        else if (n->attr.i[1]) o->shape[o->ndim++] = 1;
    }
    return TS_OK;
}

static ts_status argreduce_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    const ts_val *x = &k->g->vals[n->in[0]];
    int axis = (int)n->attr.i[0], last = n->attr.i[2] != 0, is_min = n->attr.i[3] != 0;
    int64_t outer = ts_numel(axis, x->shape), len = x->shape[axis];
    int64_t inner = ts_numel(x->ndim - axis - 1, x->shape + axis + 1);
    const float *X = k->in[0];
    int64_t *Y = k->out[0];
#pragma omp parallel for schedule(static) if (outer * len * inner > PAR_ELEMS)
    for (int64_t o = 0; o < outer * inner; o++) {
        const float *p = X + (o / inner) * len * inner + o % inner;
        int64_t b = 0;
        for (int64_t j = 1; j < len; j++) {
            float v = p[j * inner], w = p[b * inner];
            int vn = v != v, wn = w != w;
            int better = is_min ? v < w : v > w;
            if (better || (vn && !wn) || (last && (v == w || (vn && wn)))) b = j;
        }
        Y[o] = b;
    }
    return TS_OK;
}

static ts_status grad_argreduce(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    (void)g, (void)n, (void)go, (void)gi;
    return TS_OK;
}

const ts_op_def ts_opdef_argreduce = {"argreduce", 1, 1, 1, 0, infer_argreduce, grad_argreduce, argreduce_kernel,
                                      NULL};

static ts_value argreduce(ts_graph *g, const char *fn, ts_value x, int axis, int keepdims, int select_last,
                          int is_min) {
    if (!g || x == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!ts_val_ok(g, x)) return ts_graph_fail(g, TS_ERR_ARG, "%s: %d is not a value of this graph", fn, x);
    int a = ts_axis(axis, g->vals[x].ndim);
    if (a < 0) return ts_graph_fail(g, TS_ERR_ARG, "%s: axis %d is out of range for %s", fn, axis, VS(g, x));
    ts_attrs at = {0};
    at.i[0] = a;
    at.i[1] = keepdims != 0;
    at.i[2] = select_last != 0;
    at.i[3] = is_min;
    at.ni = 4;
    return ts_node_add(g, TS_OP_ARGREDUCE, 1, &x, &at, NULL);
}
ts_value ts_argmax(ts_graph *g, ts_value x, int axis, int keepdims, int select_last) {
    return argreduce(g, "ts_argmax", x, axis, keepdims, select_last, 0);
}
ts_value ts_argmin(ts_graph *g, ts_value x, int axis, int keepdims, int select_last) {
    return argreduce(g, "ts_argmin", x, axis, keepdims, select_last, 1);
}
