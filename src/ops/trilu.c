/*
 * trilu.c — ts_trilu: the upper or lower triangle of the last two dims of x (any dtype), zeros
 * elsewhere.
 *
 *   trilu(x [.., R, C], k?) -> y [.., R, C]  attrs: i[0] = upper, i[1] = k (the diagonal offset)
 *   y[.., i, j] = x[.., i, j] where (upper ? j - i >= k : j - i <= k), else 0
 *   With the optional input k (an i64 value of one element) k is read from it at run time
 *   instead of from i[1].
 * Gradient (f32): gx = trilu(gy) with the same attrs and k (the op is a fixed mask, linear in x);
 * none for k.
 */
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_trilu(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    if (x->ndim < 2)
        return ts_err(TS_ERR_SHAPE, "op trilu: %s must have rank >= 2 (matrices in its last two dims)",
                      VS(g, n->in[0]));
    if (n->nin > 1 && n->in[1] >= 0) {
        const ts_val *k = &g->vals[n->in[1]];
        if (k->dtype != TS_I64 || ts_val_numel(k) != 1)
            return ts_err(TS_ERR_SHAPE, "op trilu: k %s must be an i64 value of one element", VS(g, n->in[1]));
    }
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = x->dtype;
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof o->shape);
    return TS_OK;
}

static ts_status trilu_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]];
    int upper = k->node->attr.i[0] != 0;
    int64_t kd = k->node->nin > 1 && k->in[1] ? *(const int64_t *)k->in[1] : k->node->attr.i[1];
    int64_t R = x->shape[x->ndim - 2], C = x->shape[x->ndim - 1];
    int64_t mats = ts_numel(x->ndim - 2, x->shape);
    size_t es = ts_dtype_size(x->dtype);
    const char *X = k->in[0];
    char *Y = k->out[0];
#pragma omp parallel for schedule(static) if (mats * R * C > 32768)
    for (int64_t r = 0; r < mats * R; r++) {
        int64_t i = r % R;
        for (int64_t j = 0; j < C; j++) {
            size_t off = (size_t)(r * C + j) * es;
            int keep = upper ? j - i >= kd : j - i <= kd;
            if (keep) memmove(Y + off, X + off, es);
            else memset(Y + off, 0, es);
        }
    }
    return TS_OK;
}

static ts_status grad_trilu(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE || g->vals[n->in[0]].dtype != TS_F32) return TS_OK;
    int nin = n->nin > 1 && n->in[1] >= 0 ? 2 : 1;
    gi[0] = ts_node_add(g, TS_OP_TRILU, nin, (int[]){go[0], nin > 1 ? n->in[1] : -1}, &n->attr, NULL);
    return TS_OK;
}

const ts_op_def ts_opdef_trilu = {"trilu", 1, 2, 1, TS_OPF_INPLACE0, infer_trilu, grad_trilu, trilu_kernel, NULL};

ts_value ts_trilu(ts_graph *g, ts_value x, int upper, int64_t k) {
    if (!g || x == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = upper != 0;
    at.i[1] = k;
    at.ni = 2;
    return ts_node_add(g, TS_OP_TRILU, 1, &x, &at, NULL);
}

ts_value ts_trilu_k(ts_graph *g, ts_value x, int upper, ts_value k) {
    if (!g || x == TS_NONE || k == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = upper != 0;
    at.ni = 2;
    return ts_node_add(g, TS_OP_TRILU, 2, (int[]){x, k}, &at, NULL);
}
