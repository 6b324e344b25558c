/*
 * gather.c — embedding lookup. gather picks rows of a table by integer indices; gather_grad is
 * its adjoint, a scatter-add of the upstream gradient into a zeroed table.
 *
 *   gather(table [V, ...rest] f32, indices [...idx] i32|i64) -> [...idx, ...rest]
 *   gather_grad(gy [...idx, ...rest] f32, indices [...idx]) -> [V, ...rest], attr i[0] = V
 *
 * Every index is checked before any row moves: one outside [0, V) fails the run with
 * TS_ERR_RUNTIME, naming the index, its flat position and the table.
 * Gradients: table <- gather_grad(gy, indices); none for indices. gather_grad is not
 * differentiable (grad NULL).
 */
#include "ops/op.h"

#include <omp.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)
#define PAR_ELEMS 32768 /* loops over fewer elements stay on one thread */

static ts_status need_indices(const ts_graph *g, const ts_node *n, int k) {
    ts_dtype t = g->vals[n->in[k]].dtype;
    if (t != TS_I32 && t != TS_I64)
        return ts_err(TS_ERR_DTYPE, "op %s: indices %s must be i32 or i64", ts_op_get(n->op)->name,
                      VS(g, n->in[k]));
    return TS_OK;
}

static inline int64_t index_at(const void *idx, int is64, int64_t p) {
    return is64 ? ((const int64_t *)idx)[p] : ((const int32_t *)idx)[p];
}

/* The flat position of the first index outside [0, V), or -1 when all are in range. */
static int64_t first_bad_index(const void *idx, int is64, int64_t n, int64_t V) {
    int64_t bad = n;
#pragma omp parallel for schedule(static) reduction(min : bad) if (n > PAR_ELEMS)
    for (int64_t p = 0; p < n; p++) {
        int64_t i = index_at(idx, is64, p);
        if ((i < 0 || i >= V) && p < bad) bad = p;
    }
    return bad == n ? -1 : bad;
}

/* ------------------------------------------------------------------ gather */

static ts_status infer_gather(ts_graph *g, ts_node *n) {
    const ts_val *t = &g->vals[n->in[0]], *ix = &g->vals[n->in[1]];
    if (t->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op gather: table %s must be f32", VS(g, n->in[0]));
    if (t->ndim < 1)
        return ts_err(TS_ERR_SHAPE, "op gather: table %s must have rank >= 1", VS(g, n->in[0]));
    ts_status s = need_indices(g, n, 1);
    if (s) return s;
    int nd = ix->ndim + t->ndim - 1;
    if (nd > TS_MAX_DIMS)
        return ts_err(TS_ERR_SHAPE, "op gather: rows of %s picked by %s would have rank %d > %d",
                      VS(g, n->in[0]), VS(g, n->in[1]), nd, TS_MAX_DIMS);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = nd;
    memcpy(o->shape, ix->shape, sizeof(int64_t) * (size_t)ix->ndim);
    memcpy(o->shape + ix->ndim, t->shape + 1, sizeof(int64_t) * (size_t)(t->ndim - 1));
    return TS_OK;
}

/* table [V, D] (D = product of the rest), indices [N]: out[p, :] = table[indices[p], :]. */
static ts_status gather_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *t = &g->vals[n->in[0]], *ix = &g->vals[n->in[1]];
    int64_t V = t->shape[0], D = ts_numel(t->ndim - 1, t->shape + 1), N = ts_val_numel(ix);
    int is64 = ix->dtype == TS_I64;
    int64_t bad = first_bad_index(k->in[1], is64, N, V);
    if (bad >= 0)
        return ts_err(TS_ERR_RUNTIME, "op gather: index %lld at position %lld is outside [0, %lld) for "
                      "table %s", (long long)index_at(k->in[1], is64, bad), (long long)bad, (long long)V,
                      VS(g, n->in[0]));
    const float *T = k->in[0];
    float *O = k->out[0];
#pragma omp parallel for schedule(static) if (N * D > PAR_ELEMS)
    for (int64_t p = 0; p < N; p++)
        memcpy(O + p * D, T + index_at(k->in[1], is64, p) * D, sizeof(float) * (size_t)D);
    return TS_OK;
}

static ts_status grad_gather(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    ts_attrs at = {0};
    at.i[0] = g->vals[n->in[0]].shape[0];
    at.ni = 1;
    gi[0] = go[0] == TS_NONE ? TS_NONE
                             : ts_node_add(g, TS_OP_GATHER_GRAD, 2, (int[]){go[0], n->in[1]}, &at, NULL);
    gi[1] = TS_NONE;
    return TS_OK;
}

const ts_op_def ts_opdef_gather = {"gather", 2, 2, 1, 0, infer_gather, grad_gather, gather_kernel, NULL};

ts_value ts_gather(ts_graph *g, ts_value table, ts_value indices) {
    if (table == TS_NONE || indices == TS_NONE) return TS_NONE;
    return ts_node_add(g, TS_OP_GATHER, 2, (int[]){table, indices}, NULL, NULL);
}

/* ------------------------------------------------------------------ gather_grad */

static ts_status infer_gather_grad(ts_graph *g, ts_node *n) {
    const ts_val *gy = &g->vals[n->in[0]], *ix = &g->vals[n->in[1]];
    if (gy->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op gather_grad: gradient %s must be f32", VS(g, n->in[0]));
    ts_status s = need_indices(g, n, 1);
    if (s) return s;
    int64_t V = n->attr.i[0];
    int nd = gy->ndim - ix->ndim + 1;
    int lead = gy->ndim >= ix->ndim &&
               memcmp(gy->shape, ix->shape, sizeof(int64_t) * (size_t)ix->ndim) == 0;
    if (!lead || nd > TS_MAX_DIMS)
        return ts_err(TS_ERR_SHAPE, "op gather_grad: gradient %s does not start with the shape of "
                      "indices %s", VS(g, n->in[0]), VS(g, n->in[1]));
    if (V < 0) return ts_err(TS_ERR_SHAPE, "op gather_grad: table size %lld is negative", (long long)V);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = nd;
    o->shape[0] = V;
    memcpy(o->shape + 1, gy->shape + ix->ndim, sizeof(int64_t) * (size_t)(nd - 1));
    return TS_OK;
}

/* gy [N, D], indices [N] -> gx [V, D]: gx = 0, then gx[indices[p], :] += gy[p, :] for p in order.
 * Threads own disjoint ranges of table rows and each scans every index, so duplicates never
 * race and every row sums its contributions in the same order whatever the thread count. */
static ts_status gather_grad_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *ix = &g->vals[n->in[1]], *o = &g->vals[n->out[0]];
    int64_t V = n->attr.i[0], D = ts_numel(o->ndim - 1, o->shape + 1), N = ts_val_numel(ix);
    int is64 = ix->dtype == TS_I64;
    const void *I = k->in[1];
    int64_t bad = first_bad_index(I, is64, N, V);
    if (bad >= 0)
        return ts_err(TS_ERR_RUNTIME, "op gather_grad: index %lld at position %lld is outside [0, %lld) "
                      "for gradient %s", (long long)index_at(I, is64, bad), (long long)bad, (long long)V,
                      VS(g, n->out[0]));
    const float *GY = k->in[0];
    float *GX = k->out[0];
    memset(GX, 0, sizeof(float) * (size_t)(V * D));
#pragma omp parallel if (N * D > PAR_ELEMS)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t lo = V * t / nt, hi = V * (t + 1) / nt;
        for (int64_t p = 0; p < N; p++) {
            int64_t i = index_at(I, is64, p);
            if (i < lo || i >= hi) continue;
            float *dst = GX + i * D;
            const float *src = GY + p * D;
            for (int64_t j = 0; j < D; j++) dst[j] += src[j];
        }
    }
    return TS_OK;
}

/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_gather_grad = {"gather_grad", 2, 2, 1, 0, infer_gather_grad, NULL,
                                        gather_grad_kernel, NULL};
