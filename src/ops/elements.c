/*
 * elements.c — element-wise indexing along one axis: ts_gather_elements and its adjoint
 * ts_scatter_elements (ONNX GatherElements / ScatterElements).
 *
 *   gather_elements(data, indices) -> out, the shape of indices, data's dtype     attr i[0] = axis
 *     out[c] = data[c with c[axis] = indices[c]]
 *   scatter_elements(data, indices, updates) -> out, data's shape and dtype
 *     out = data; then for each c in row-major order: out[c with c[axis] = indices[c]] = updates[c]
 *     (reduction add: +=, mul: *=)                  attrs i[0] = axis, i[1] = ts_scatter_reduce
 * indices are i32 or i64, of data's rank, each dim at most data's (any size along axis); an
 * index i in [-n, 0) means n + i (n = data's size along axis), and any other outside [0, n)
 * fails the run with TS_ERR_RUNTIME before anything is written.
 * Gradients (f32):
 *   gather_elements: gdata = scatter_elements(zeros, indices, gy, add)
 *   scatter_elements, none: gdata = scatter_elements(gy, indices, zeros) (the overwritten cells get
 *     none), gupdates = gather_elements(gy, indices) (with duplicate indices every duplicate gets
 *     the gradient of the cell, though only the last one's value survives);
 *   add: gdata = gy, gupdates = gather_elements(gy, indices);  mul: not differentiable.
 */
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static int64_t index_at(const ts_val *iv, const void *p, int64_t i) {
    return iv->dtype == TS_I64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}

/* data (input 0), indices (input 1): dtypes, ranks, dims, axis. */
static ts_status check_indices(const ts_graph *g, const ts_node *n, const char *name) {
    const ts_val *d = &g->vals[n->in[0]], *ix = &g->vals[n->in[1]];
    if (ix->dtype != TS_I32 && ix->dtype != TS_I64)
        return ts_err(TS_ERR_DTYPE, "op %s: indices %s must be i32 or i64", name, VS(g, n->in[1]));
    int64_t axis = n->attr.i[0];
    if (d->ndim < 1 || axis < 0 || axis >= d->ndim)
        return ts_err(TS_ERR_ARG, "op %s: axis %lld is out of range for %s", name, (long long)axis, VS(g, n->in[0]));
    if (ix->ndim != d->ndim)
        return ts_err(TS_ERR_SHAPE, "op %s: indices %s must have the rank of data %s", name, VS(g, n->in[1]),
                      VS(g, n->in[0]));
    for (int i = 0; i < d->ndim; i++)
        if (i != axis && ix->shape[i] > d->shape[i])
            return ts_err(TS_ERR_SHAPE, "op %s: dim %d of indices %s exceeds that of data %s", name, i,
                          VS(g, n->in[1]), VS(g, n->in[0]));
    return TS_OK;
}

/* Offsets into data of every element of indices (row-major), in off[]; TS_ERR_RUNTIME naming the
 * first bad index. */
static ts_status data_offsets(const ts_kargs *k, const char *name, int64_t *off) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *d = &g->vals[n->in[0]], *ix = &g->vals[n->in[1]];
    int axis = (int)n->attr.i[0], nd = d->ndim;
    int64_t st[TS_MAX_DIMS], c[TS_MAX_DIMS] = {0}, cnt = ts_val_numel(ix), len = d->shape[axis];
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        st[i] = s;
        s *= d->shape[i];
    }
    for (int64_t p = 0; p < cnt; p++) {
        int64_t v = index_at(ix, k->in[1], p);
        if (v < -len || v >= len)
            return ts_err(TS_ERR_RUNTIME, "op %s: index %lld at position %lld of %s is outside [-%lld, %lld) for "
                          "axis %d of %s", name, (long long)v, (long long)p, VS(g, n->in[1]), (long long)len,
                          (long long)len, axis, VS(g, n->in[0]));
        if (v < 0) v += len;
        int64_t o = 0;
        for (int i = 0; i < nd; i++) o += (i == axis ? v : c[i]) * st[i];
        off[p] = o;
        for (int i = nd - 1; i >= 0; i--) {
            if (++c[i] < ix->shape[i]) break;
            c[i] = 0;
        }
    }
    return TS_OK;
}

static size_t offsets_scratch(const ts_graph *g, const ts_node *n) {
    return (size_t)ts_val_numel(&g->vals[n->in[1]]) * sizeof(int64_t) + 64;
}

/* ------------------------------------------------------------------ gather_elements */

static ts_status infer_gather_elements(ts_graph *g, ts_node *n) {
    ts_status s = check_indices(g, n, "gather_elements");
    if (s) return s;
    const ts_val *ix = &g->vals[n->in[1]];
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = g->vals[n->in[0]].dtype;
    o->ndim = ix->ndim;
    memcpy(o->shape, ix->shape, sizeof o->shape);
    return TS_OK;
}

static ts_status gather_elements_kernel(const ts_kargs *k) {
    int64_t *off = k->scratch;
    ts_status s = data_offsets(k, "gather_elements", off);
    if (s) return s;
    const ts_val *ix = &k->g->vals[k->node->in[1]];
    size_t es = ts_dtype_size(k->g->vals[k->node->in[0]].dtype);
    const char *D = k->in[0];
    char *O = k->out[0];
    int64_t cnt = ts_val_numel(ix);
    for (int64_t p = 0; p < cnt; p++) memcpy(O + (size_t)p * es, D + (size_t)off[p] * es, es);
    return TS_OK;
}

static ts_value zeros_like(ts_graph *g, ts_value v) {
    const ts_val *x = &g->vals[v];
    int64_t sh[TS_MAX_DIMS];
    memcpy(sh, x->shape, sizeof sh);
    return ts_expand(g, ts_scalar(g, 0.f), x->ndim, sh);
}

static ts_status grad_gather_elements(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE || g->vals[n->in[0]].dtype != TS_F32) return TS_OK;
    gi[0] = ts_scatter_elements(g, zeros_like(g, n->in[0]), n->in[1], go[0], (int)n->attr.i[0], TS_SCATTER_ADD);
    return TS_OK;
}

const ts_op_def ts_opdef_gather_elements = {"gather_elements", 2, 2, 1, 0, infer_gather_elements,
                                            grad_gather_elements, gather_elements_kernel, offsets_scratch};

ts_value ts_gather_elements(ts_graph *g, ts_value data, ts_value indices, int axis) {
    if (!g || data == TS_NONE || indices == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!ts_val_ok(g, data))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_gather_elements: %d is not a value of this graph", data);
    int a = ts_axis(axis, g->vals[data].ndim);
    if (a < 0)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_gather_elements: axis %d is out of range for %s", axis, VS(g, data));
    ts_attrs at = {0};
    at.i[0] = a;
    at.ni = 1;
    return ts_node_add(g, TS_OP_GATHER_ELEMENTS, 2, (int[]){data, indices}, &at, NULL);
}

/* ------------------------------------------------------------------ scatter_elements */

static ts_status infer_scatter_elements(ts_graph *g, ts_node *n) {
    ts_status s = check_indices(g, n, "scatter_elements");
    if (s) return s;
    const ts_val *d = &g->vals[n->in[0]], *ix = &g->vals[n->in[1]], *u = &g->vals[n->in[2]];
    if (u->dtype != d->dtype)
        return ts_err(TS_ERR_DTYPE, "op scatter_elements: updates %s must have the dtype of data %s",
                      VS(g, n->in[2]), VS(g, n->in[0]));
    if (u->ndim != ix->ndim || memcmp(u->shape, ix->shape, sizeof(int64_t) * (size_t)ix->ndim) != 0)
        return ts_err(TS_ERR_SHAPE, "op scatter_elements: updates %s must have the shape of indices %s",
                      VS(g, n->in[2]), VS(g, n->in[1]));
    int64_t red = n->attr.i[1];
    if (red < TS_SCATTER_NONE || red > TS_SCATTER_MUL)
        return ts_err(TS_ERR_ARG, "op scatter_elements: reduction %lld is not a ts_scatter_reduce", (long long)red);
    if (red != TS_SCATTER_NONE && d->dtype != TS_F32 && d->dtype != TS_I32 && d->dtype != TS_I64)
        return ts_err(TS_ERR_DTYPE, "op scatter_elements: reduction %s needs f32, i32 or i64 data, not %s",
                      red == TS_SCATTER_ADD ? "add" : "mul", VS(g, n->in[0]));
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = d->dtype;
    o->ndim = d->ndim;
    memcpy(o->shape, d->shape, sizeof o->shape);
    return TS_OK;
}

static ts_status scatter_elements_kernel(const ts_kargs *k) {
    int64_t *off = k->scratch;
    ts_status s = data_offsets(k, "scatter_elements", off);
    if (s) return s;
    const ts_node *n = k->node;
    const ts_val *d = &k->g->vals[n->in[0]];
    size_t es = ts_dtype_size(d->dtype);
    int64_t cnt = ts_val_numel(&k->g->vals[n->in[1]]);
    if (k->out[0] != k->in[0]) memcpy(k->out[0], k->in[0], ts_val_bytes(d));
    int red = (int)n->attr.i[1];
    char *O = k->out[0];
    const char *U = k->in[2];
    for (int64_t p = 0; p < cnt; p++) {
        void *dst = O + (size_t)off[p] * es;
        const void *src = U + (size_t)p * es;
        if (red == TS_SCATTER_NONE) {
            memcpy(dst, src, es);
        } else if (d->dtype == TS_F32) {
            float *y = dst, u = *(const float *)src;
            *y = red == TS_SCATTER_ADD ? *y + u : *y * u;
        } else if (d->dtype == TS_I32) {
            int32_t *y = dst, u = *(const int32_t *)src;
            *y = (int32_t)(red == TS_SCATTER_ADD ? (uint32_t)*y + (uint32_t)u : (uint32_t)*y * (uint32_t)u);
        } else {
            int64_t *y = dst, u = *(const int64_t *)src;
            *y = (int64_t)(red == TS_SCATTER_ADD ? (uint64_t)*y + (uint64_t)u : (uint64_t)*y * (uint64_t)u);
        }
    }
    return TS_OK;
}

static ts_status grad_scatter_elements(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE || g->vals[n->in[0]].dtype != TS_F32) return TS_OK;
    int axis = (int)n->attr.i[0], red = (int)n->attr.i[1];
    if (red == TS_SCATTER_MUL)
        return ts_err(TS_ERR_UNSUPPORTED, "op scatter_elements: reduction mul is not differentiable here");
    gi[0] = red == TS_SCATTER_ADD ? go[0]
                                  : ts_scatter_elements(g, go[0], n->in[1], zeros_like(g, n->in[2]), axis,
                                                        TS_SCATTER_NONE);
    gi[2] = ts_gather_elements(g, go[0], n->in[1], axis);
    return TS_OK;
}

const ts_op_def ts_opdef_scatter_elements = {"scatter_elements", 3, 3, 1, TS_OPF_INPLACE0, infer_scatter_elements,
                                             grad_scatter_elements, scatter_elements_kernel, offsets_scratch};

ts_value ts_scatter_elements(ts_graph *g, ts_value data, ts_value indices, ts_value updates, int axis,
                             ts_scatter_reduce reduction) {
    if (!g || data == TS_NONE || indices == TS_NONE || updates == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!ts_val_ok(g, data))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_scatter_elements: %d is not a value of this graph", data);
    int a = ts_axis(axis, g->vals[data].ndim);
    if (a < 0)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_scatter_elements: axis %d is out of range for %s", axis,
                             VS(g, data));
    ts_attrs at = {0};
    at.i[0] = a;
    at.i[1] = reduction;
    at.ni = 2;
    return ts_node_add(g, TS_OP_SCATTER_ELEMENTS, 3, (int[]){data, indices, updates}, &at, NULL);
}
