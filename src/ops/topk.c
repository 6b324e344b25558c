/*
 * topk.c — ts_topk: the k largest (or smallest) f32 elements along one axis, sorted, and their
 * positions (i64).
 *
 *   topk(x [.., n, ..]) -> values [.., k, ..] f32, indices [.., k, ..] i64
 *   attrs: i[0] = axis (0 <= axis < rank), i[1] = k (1 <= k <= n), i[2] = largest
 * Each line of x along axis is ordered by a stable merge sort on the key "x[j] before x[i]" =
 *   largest: x[j] > x[i] (NaN above every number),  smallest: x[j] < x[i] (NaN below every number)
 * so ties keep the lower index first; values / indices are its first k entries.
 * Gradient (f32): gx = scatter_elements(zeros, indices, g_values, axis, add); none for indices.
 */
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_topk(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op topk: %s has dtype %s; this op takes f32", VS(g, n->in[0]),
                      ts_dtype_name(x->dtype));
    int64_t axis = n->attr.i[0], k = n->attr.i[1];
    if (axis < 0 || axis >= x->ndim)
        return ts_err(TS_ERR_ARG, "op topk: axis %lld is out of range for %s", (long long)axis, VS(g, n->in[0]));
    if (k < 1 || k > x->shape[axis])
        return ts_err(TS_ERR_ARG, "op topk: k = %lld is outside [1, %lld], the size of axis %lld of %s", (long long)k,
                      (long long)x->shape[axis], (long long)axis, VS(g, n->in[0]));
    for (int o = 0; o < 2; o++) {
        ts_val *v = &g->vals[n->out[o]];
        v->dtype = o ? TS_I64 : TS_F32;
        v->ndim = x->ndim;
        memcpy(v->shape, x->shape, sizeof v->shape);
        v->shape[axis] = k;
    }
    return TS_OK;
}

/* Does element a come before element b (a, b values; ties: no)? */
static inline int before(float a, float b, int largest) {
    int an = a != a, bn = b != b;
    if (an || bn) return largest ? an && !bn : !an && bn;
    return largest ? a > b : a < b;
}

/* Stable merge sort of idx[0..n) by the values p[idx * stride]; tmp holds n entries. */
static void sort_line(const float *p, int64_t stride, int64_t *idx, int64_t *tmp, int64_t n, int largest) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = before(p[idx[j] * stride], p[idx[i] * stride], largest) ? idx[j++] : idx[i++];
            while (i < mid) tmp[o++] = idx[i++];
            while (j < hi) tmp[o++] = idx[j++];
        }
        memcpy(idx, tmp, sizeof(int64_t) * (size_t)n);
    }
}

static size_t topk_scratch(const ts_graph *g, const ts_node *n) {
    return (size_t)g->vals[n->in[0]].shape[n->attr.i[0]] * 2 * sizeof(int64_t) + 64;
}

static ts_status topk_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    const ts_val *x = &k->g->vals[n->in[0]];
    int axis = (int)n->attr.i[0], largest = n->attr.i[2] != 0;
    int64_t K = n->attr.i[1], len = x->shape[axis];
    int64_t outer = ts_numel(axis, x->shape), inner = ts_numel(x->ndim - axis - 1, x->shape + axis + 1);
    int64_t *idx = k->scratch, *tmp = idx + len;
    const float *X = k->in[0];
    float *V = k->out[0];
    int64_t *I = k->out[1];
    for (int64_t o = 0; o < outer * inner; o++) {
        int64_t a = o / inner, b = o % inner;
        const float *p = X + a * len * inner + b;
        for (int64_t j = 0; j < len; j++) idx[j] = j;
        sort_line(p, inner, idx, tmp, len, largest);
        for (int64_t j = 0; j < K; j++) {
            V[(a * K + j) * inner + b] = p[idx[j] * inner];
            I[(a * K + j) * inner + b] = idx[j];
        }
    }
    return TS_OK;
}

static ts_status grad_topk(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE) return TS_OK;
    const ts_val *x = &g->vals[n->in[0]];
    int64_t sh[TS_MAX_DIMS];
    memcpy(sh, x->shape, sizeof sh);
    ts_value zeros = ts_expand(g, ts_scalar(g, 0.f), x->ndim, sh);
    gi[0] = ts_scatter_elements(g, zeros, n->out[1], go[0], (int)n->attr.i[0], TS_SCATTER_ADD);
    return TS_OK;
}

const ts_op_def ts_opdef_topk = {"topk", 1, 1, 2, 0, infer_topk, grad_topk, topk_kernel, topk_scratch};

ts_status ts_topk(ts_graph *g, ts_value x, int64_t k, int axis, int largest, ts_value outs[2]) {
    if (outs) outs[0] = outs[1] = TS_NONE;
    if (!g || !outs) return ts_set_error(TS_ERR_ARG, "ts_topk: graph or outs is NULL");
    if (x == TS_NONE || g->status != TS_OK) return g->status ? g->status : TS_ERR_ARG;
    if (!ts_val_ok(g, x)) {
        ts_graph_fail(g, TS_ERR_ARG, "ts_topk: %d is not a value of this graph", x);
        return g->status;
    }
    int a = ts_axis(axis, g->vals[x].ndim);
    if (a < 0) {
        ts_graph_fail(g, TS_ERR_ARG, "ts_topk: axis %d is out of range for %s", axis, VS(g, x));
        return g->status;
    }
    ts_attrs at = {0};
    at.i[0] = a;
    at.i[1] = k;
    at.i[2] = largest != 0;
    at.ni = 3;
    int o[TS_MAX_OUT];
    if (ts_node_add(g, TS_OP_TOPK, 1, &x, &at, o) == TS_NONE) return g->status;
    outs[0] = o[0];
    outs[1] = o[1];
    return TS_OK;
}
