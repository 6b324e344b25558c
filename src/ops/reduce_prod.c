/*
 * reduce_prod.c — ts_reduce_prod, the product of f32 x over a set of axes, with its gradient op
 * reduce_prod_grad; and ts_reduce_min, built as -reduce_max(-x) (exact: negation only flips the
 * sign bit, and reduce_max's gradient then goes to the first minimum).
 *
 *   reduce_prod(x) -> y      attrs as reduce.c: i[0] = bit mask of the reduced axes, i[1] = keepdims
 *   y[o] = product of x over o's slot, multiplied in row-major order (1 for an empty slot)
 *   reduce_prod_grad(x, gy) -> gx,  gx[i] = gy[o(i)] * product of the other elements of i's slot:
 *     with p the product of the slot's non-zero elements and z its count of zeros,
 *     z = 0: p / x[i];  z = 1: p where x[i] == 0, else 0;  z > 1: 0
 * reduce_prod_grad is not differentiable (grad NULL).
 */
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* The output strides of each axis of x (0 on reduced axes): the flat output index of x's element
 * with coordinates c is sum c[i] * ost[i]. */
static void out_strides(const ts_val *x, int64_t mask, int64_t *ost) {
    int64_t s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        if (mask >> i & 1) {
            ost[i] = 0;
        } else {
            ost[i] = s;
            s *= x->shape[i];
        }
    }
}

/* Calls BODY with q the flat output index of each x element i, in row-major order. */
#define FOR_EACH(x, ost, BODY)                                                                     \
    do {                                                                                           \
        int64_t c_[TS_MAX_DIMS] = {0}, q = 0, n_ = ts_val_numel(x);                                \
        for (int64_t i = 0; i < n_; i++) {                                                         \
            BODY;                                                                                  \
            for (int d_ = (x)->ndim - 1; d_ >= 0; d_--) {                                          \
                q += (ost)[d_];                                                                    \
                if (++c_[d_] < (x)->shape[d_]) break;                                              \
                q -= (ost)[d_] * c_[d_];                                                           \
                c_[d_] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static ts_status check_x(const ts_graph *g, const ts_node *n, const char *name) {
    const ts_val *x = &g->vals[n->in[0]];
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: %s has dtype %s; this op takes f32", name, VS(g, n->in[0]),
                      ts_dtype_name(x->dtype));
    if (n->attr.i[0] < 0 || (n->attr.i[0] >> x->ndim) != 0)
        return ts_err(TS_ERR_ARG, "op %s: axis mask 0x%llx names axes beyond the rank of %s", name,
                      (unsigned long long)n->attr.i[0], VS(g, n->in[0]));
    return TS_OK;
}

static ts_status infer_prod(ts_graph *g, ts_node *n) {
    ts_status s = check_x(g, n, "reduce_prod");
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (!(n->attr.i[0] >> i & 1)) o->shape[o->ndim++] = x->shape[i];
        else if (n->attr.i[1]) o->shape[o->ndim++] = 1;
    }
    return TS_OK;
}

static ts_status prod_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    const ts_val *x = &k->g->vals[n->in[0]];
    const float *X = k->in[0];
    float *Y = k->out[0];
    int64_t ost[TS_MAX_DIMS];
    out_strides(x, n->attr.i[0], ost);
    int64_t on = ts_val_numel(&k->g->vals[n->out[0]]);
    for (int64_t o = 0; o < on; o++) Y[o] = 1.f;
    FOR_EACH(x, ost, Y[q] *= X[i]);
    return TS_OK;
}

static ts_status infer_prod_grad(ts_graph *g, ts_node *n) {
    ts_status s = check_x(g, n, "reduce_prod_grad");
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]], *gy = &g->vals[n->in[1]];
    if (gy->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op reduce_prod_grad: gradient %s must be f32", VS(g, n->in[1]));
    int64_t cnt = 1;
    for (int i = 0; i < x->ndim; i++)
        if (!(n->attr.i[0] >> i & 1)) cnt *= x->shape[i];
    if (ts_val_numel(gy) != cnt)
        return ts_err(TS_ERR_SHAPE, "op reduce_prod_grad: gradient %s has %lld elements; the product of %s has %lld",
                      VS(g, n->in[1]), (long long)ts_val_numel(gy), VS(g, n->in[0]), (long long)cnt);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof o->shape);
    return TS_OK;
}

static ts_status prod_grad_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    const ts_val *x = &k->g->vals[n->in[0]];
    const float *X = k->in[0], *GY = k->in[1];
    float *GX = k->out[0];
    int64_t ost[TS_MAX_DIMS];
    out_strides(x, n->attr.i[0], ost);
    int64_t on = ts_val_numel(&k->g->vals[n->in[1]]);
    float *p = k->scratch;
    int64_t *z = (int64_t *)(p + ((on + 15) & ~(int64_t)15));
    for (int64_t o = 0; o < on; o++) {
        p[o] = 1.f;
        z[o] = 0;
    }
    FOR_EACH(x, ost, if (X[i] == 0.f) z[q]++; else p[q] *= X[i]);
    FOR_EACH(x, ost, GX[i] = z[q] == 0 ? GY[q] * (p[q] / X[i]) : z[q] == 1 && X[i] == 0.f ? GY[q] * p[q] : 0.f);
    return TS_OK;
}

static size_t prod_grad_scratch(const ts_graph *g, const ts_node *n) {
    int64_t on = ts_val_numel(&g->vals[n->in[1]]);
    return (size_t)((on + 15) & ~(int64_t)15) * sizeof(float) + (size_t)on * sizeof(int64_t) + 64;
}

static ts_status grad_prod(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE) return TS_OK;
    gi[0] = ts_node_add(g, TS_OP_REDUCE_PROD_GRAD, 2, (int[]){n->in[0], go[0]}, &n->attr, NULL);
    return TS_OK;
}

const ts_op_def ts_opdef_reduce_prod = {"reduce_prod", 1, 1, 1, 0, infer_prod, grad_prod, prod_kernel, NULL};
/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_reduce_prod_grad = {"reduce_prod_grad", 2, 2, 1, 0, infer_prod_grad, NULL,
                                             prod_grad_kernel, prod_grad_scratch};

ts_value ts_reduce_prod(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims) {
    if (!g || x == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!ts_val_ok(g, x)) return ts_graph_fail(g, TS_ERR_ARG, "ts_reduce_prod: %d is not a value of this graph", x);
    int nd = g->vals[x].ndim;
    if (naxes < 0 || (naxes > 0 && !axes))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_reduce_prod: naxes is %d and axes is %s", naxes, axes ? "set" : "NULL");
    int64_t mask = naxes == 0 ? ((int64_t)1 << nd) - 1 : 0;
    for (int i = 0; i < naxes; i++) {
        int a = ts_axis(axes[i], nd);
        if (a < 0)
            return ts_graph_fail(g, TS_ERR_ARG, "ts_reduce_prod: axis %d is out of range for %s", axes[i], VS(g, x));
        if (mask >> a & 1)
            return ts_graph_fail(g, TS_ERR_ARG, "ts_reduce_prod: axis %d (axis %d of %s) is listed twice", axes[i],
                                 a, VS(g, x));
        mask |= (int64_t)1 << a;
    }
    ts_attrs at = {0};
    at.i[0] = mask;
    at.i[1] = keepdims != 0;
    at.ni = 2;
    return ts_node_add(g, TS_OP_REDUCE_PROD, 1, &x, &at, NULL);
}

ts_value ts_reduce_min(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims) {
    ts_value m = ts_reduce_max(g, ts_scale(g, x, -1.f, 0.f), naxes, axes, keepdims);
    return ts_scale(g, m, -1.f, 0.f);
}
