/*
 * tile.c — ts_tile: x (any dtype) repeated along each axis, and tile_grad, its adjoint.
 *
 *   tile(x [d0, .., dr-1]) -> y [d0 r0, .., dr-1 rr-1]      attrs: i[0..r-1] = repeats, ni = r
 *     y[c] = x[c mod d] (each coordinate modulo x's dim)
 *   tile_grad(gy) -> gx [d0, ..]                            attrs: i[0..r-1] = x's shape, ni = r
 *     gx[j] = sum of gy[c] over every c with c mod d = j (in row-major order of c)
 * Gradient of tile (f32): tile_grad(gy). tile_grad is not differentiable (grad NULL).
 */
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_tile(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    char b[160];
    if (n->attr.ni != x->ndim)
        return ts_err(TS_ERR_ARG, "op tile: repeats %s has %d entries but %s has rank %d",
                      ts_shape_str(n->attr.ni, n->attr.i, b, sizeof b), n->attr.ni, VS(g, n->in[0]), x->ndim);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = x->dtype;
    o->ndim = x->ndim;
    for (int i = 0; i < x->ndim; i++) {
        if (n->attr.i[i] < 1 || __builtin_mul_overflow(x->shape[i], n->attr.i[i], &o->shape[i]))
            return ts_err(TS_ERR_ARG, "op tile: repeats %s for %s must be >= 1 (and the result representable)",
                          ts_shape_str(n->attr.ni, n->attr.i, b, sizeof b), VS(g, n->in[0]));
    }
    return TS_OK;
}

/* Offset in x (shape xs, rank nd) of output row r of the output (shape ys): its coordinates, all
 * but the last, each modulo x's dim. */
static int64_t src_row(int64_t r, int nd, const int64_t *xs, const int64_t *ys) {
    int64_t off = 0, st = xs[nd - 1];
    for (int i = nd - 2; i >= 0; i--) {
        off += (r % ys[i]) % xs[i] * st;
        r /= ys[i];
        st *= xs[i];
    }
    return off;
}

static ts_status tile_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]], *y = &k->g->vals[k->node->out[0]];
    size_t es = ts_dtype_size(x->dtype);
    int64_t yn = ts_val_numel(y);
    if (yn == 0) return TS_OK;
    if (x->ndim == 0) {
        memcpy(k->out[0], k->in[0], es);
        return TS_OK;
    }
    int nd = x->ndim;
    int64_t cols = y->shape[nd - 1], xc = x->shape[nd - 1], rows = yn / cols;
    const char *X = k->in[0];
    char *Y = k->out[0];
#pragma omp parallel for schedule(static) if (yn > 32768)
    for (int64_t r = 0; r < rows; r++) {
        const char *src = X + (size_t)src_row(r, nd, x->shape, y->shape) * es;
        char *dst = Y + (size_t)(r * cols) * es;
        for (int64_t j = 0; j < cols; j += xc) memcpy(dst + (size_t)j * es, src, (size_t)xc * es);
    }
    return TS_OK;
}

static ts_status grad_tile(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    const ts_val *x = &g->vals[n->in[0]];
    if (go[0] == TS_NONE || x->dtype != TS_F32) return TS_OK;
    ts_attrs at = {0};
    at.ni = x->ndim;
    memcpy(at.i, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    gi[0] = ts_node_add(g, TS_OP_TILE_GRAD, 1, &go[0], &at, NULL);
    return TS_OK;
}

const ts_op_def ts_opdef_tile = {"tile", 1, 1, 1, 0, infer_tile, grad_tile, tile_kernel, NULL};

static ts_status infer_tile_grad(ts_graph *g, ts_node *n) {
    const ts_val *gy = &g->vals[n->in[0]];
    int ok = gy->dtype == TS_F32 && n->attr.ni == gy->ndim;
    for (int i = 0; ok && i < gy->ndim; i++)
        ok = n->attr.i[i] > 0 ? gy->shape[i] % n->attr.i[i] == 0 : gy->shape[i] == 0;
    if (!ok) {
        char b[160];
        return ts_err(TS_ERR_SHAPE, "op tile_grad: gradient %s is not f32 tiles of %s", VS(g, n->in[0]),
                      ts_shape_str(n->attr.ni, n->attr.i, b, sizeof b));
    }
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = n->attr.ni;
    memcpy(o->shape, n->attr.i, sizeof(int64_t) * (size_t)n->attr.ni);
    return TS_OK;
}

static ts_status tile_grad_kernel(const ts_kargs *k) {
    const ts_val *gy = &k->g->vals[k->node->in[0]], *gx = &k->g->vals[k->node->out[0]];
    const float *GY = k->in[0];
    float *GX = k->out[0];
    memset(GX, 0, ts_val_bytes(gx));
    int64_t yn = ts_val_numel(gy);
    if (yn == 0 || ts_val_numel(gx) == 0) return TS_OK;
    if (gy->ndim == 0) {
        GX[0] = GY[0];
        return TS_OK;
    }
    int nd = gy->ndim;
    int64_t cols = gy->shape[nd - 1], xc = gx->shape[nd - 1], rows = yn / cols;
    for (int64_t r = 0; r < rows; r++) {
        float *dst = GX + src_row(r, nd, gx->shape, gy->shape);
        const float *src = GY + r * cols;
        for (int64_t j = 0; j < cols; j++) dst[j % xc] += src[j];
    }
    return TS_OK;
}

/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_tile_grad = {"tile_grad", 1, 1, 1, 0, infer_tile_grad, NULL, tile_grad_kernel, NULL};

ts_value ts_tile(ts_graph *g, ts_value x, const int64_t *repeats) {
    if (!g || x == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!ts_val_ok(g, x)) return ts_graph_fail(g, TS_ERR_ARG, "ts_tile: %d is not a value of this graph", x);
    int nd = g->vals[x].ndim;
    if (nd && !repeats) return ts_graph_fail(g, TS_ERR_ARG, "ts_tile: repeats is NULL for %s", VS(g, x));
    ts_attrs at = {0};
    at.ni = nd;
    for (int i = 0; i < nd; i++) at.i[i] = repeats[i];
    return ts_node_add(g, TS_OP_TILE, 1, &x, &at, NULL);
}
