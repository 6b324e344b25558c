/*
 * predicate.c — elementwise tests that give u8 0 / 1: ts_isnan, ts_isinf and ts_not. One op,
 * "predicate", with i[0] the test and i[1] / i[2] isinf's detect_pos / detect_neg.
 *
 *   isnan (f32 x): x != x
 *   isinf (f32 x): (detect_pos && x == +inf) || (detect_neg && x == -inf)
 *   not   (u8 x):  x == 0
 * No gradient (the results are piecewise constant): the grad rule sets none.
 */
#include "graph/op_attrs.h"
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)
#define PAR_ELEMS 32768

/* The tests, their numbers and names are the op contract's (graph/op_attrs.def): TS_PRED_*. */

static ts_status infer_predicate(ts_graph *g, ts_node *n) {
    int64_t p = TS_NODE_ATTRS(predicate, n).fn;
    if (p < 0 || p >= TS_OPS_PREDICATE_FN_COUNT)
        return ts_err(TS_ERR_ARG, "op predicate: test id %lld is not one of 0..%d", (long long)p,
                      TS_OPS_PREDICATE_FN_COUNT - 1);
    const ts_val *x = &g->vals[n->in[0]];
    ts_dtype want = p == TS_PRED_NOT ? TS_U8 : TS_F32;
    if (x->dtype != want)
        return ts_err(TS_ERR_DTYPE, "op predicate (%s): %s has dtype %s; this test takes %s", ts_ops_predicate_fn_name(p),
                      VS(g, n->in[0]), ts_dtype_name(x->dtype), ts_dtype_name(want));
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_U8;
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof o->shape);
    return TS_OK;
}

static ts_status predicate_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->out[0]]);
    const float *x = k->in[0];
    const uint8_t *b = k->in[0];
    uint8_t *y = k->out[0];
    ts_attrs_predicate a = TS_NODE_ATTRS(predicate, n);
    int pos = a.detect_pos != 0, neg = a.detect_neg != 0;
    switch (a.fn) {
    case TS_PRED_ISNAN:
#pragma omp parallel for schedule(static) if (cnt > PAR_ELEMS)
        for (int64_t i = 0; i < cnt; i++) y[i] = x[i] != x[i];
        break;
    case TS_PRED_ISINF:
#pragma omp parallel for schedule(static) if (cnt > PAR_ELEMS)
        for (int64_t i = 0; i < cnt; i++) y[i] = (pos && x[i] == INFINITY) || (neg && x[i] == -INFINITY);
        break;
    default:
#pragma omp parallel for schedule(static) if (cnt > PAR_ELEMS)
        for (int64_t i = 0; i < cnt; i++) y[i] = b[i] == 0;
        break;
    }
    return TS_OK;
}

static ts_status grad_none(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    (void)g, (void)n, (void)go, (void)gi;
    return TS_OK;
}

const ts_op_def ts_opdef_predicate = {"predicate", 1, 1, 1, TS_OPF_ELEMENTWISE, infer_predicate, grad_none,
                                      predicate_kernel, NULL};

static ts_value predicate(ts_graph *g, int p, ts_value x, int pos, int neg) {
    if (!g || x == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = p;
    at.i[1] = pos != 0;
    at.i[2] = neg != 0;
    at.ni = 3;
    return ts_node_add(g, TS_OP_PREDICATE, 1, &x, &at, NULL);
}
ts_value ts_isnan(ts_graph *g, ts_value x) { return predicate(g, TS_PRED_ISNAN, x, 0, 0); }
ts_value ts_isinf(ts_graph *g, ts_value x, int detect_pos, int detect_neg) {
    return predicate(g, TS_PRED_ISINF, x, detect_pos, detect_neg);
}
ts_value ts_not(ts_graph *g, ts_value x) { return predicate(g, TS_PRED_NOT, x, 0, 0); }
