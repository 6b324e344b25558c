/*
 * pool.c — 2-D max and average pooling on NCHW f32 images, and their gradients:
 * max_pool2d, max_pool2d_grad, avg_pool2d, avg_pool2d_grad.
 *
 *   x [N, C, H, W] -> y [N, C, OH, OW]
 *   window of output (oh, ow): rows h = oh sh - pt + i dh (i < kh), columns w = ow sw - pl + j dw
 *   OH = (H + pt + pb - dh (kh - 1) - 1) / sh + 1, floor, or with ceil_mode the ceiling, then
 *        one less when the last window would start at or past H + pt (inside the bottom padding:
 *        as PyTorch and ONNX, the last window must start in the input or the top padding). OW
 *        alike.
 *   max: y = the largest input cell of the window (padded cells never win; a NaN wins, so NaNs
 *        propagate as in PyTorch). Its gradient goes to that cell: the first of the maxima in
 *        window order (row by row, left to right) on ties.
 *   avg: y = sum of the window's input cells / d, with d = the number of the window's cells
 *        inside the input (count_include_pad 0), or (count_include_pad 1) the number inside the
 *        padded input [-pt, H + pb) x [-pl, W + pw) (so a ceil_mode window hanging past the bottom
 *        padding does not count the cells beyond it, as PyTorch). Gradient: gy / d to each of
 *        the window's input cells.
 * Every pad must be at most half the (dilated) kernel, as PyTorch requires, so every window
 * holds an input cell.
 *
 * Attributes, forward ops: i[0], i[1] = kernel kh, kw; i[2], i[3] = stride sh, sw (>= 1);
 * i[4..7] = pads top, left, bottom, right; i[8], i[9] = dilation dh, dw (max pool; 1 for avg);
 * i[10] = ceil_mode; i[11] = count_include_pad (avg). ni = 12.
 * max_pool2d_grad(x, gy) -> gx: the same attributes (the argmax is recomputed from x).
 * avg_pool2d_grad(gy) -> gx: the same, except i[8], i[9] = H, W of x (avg has no dilation).
 * The grad ops are not differentiable.
 *
 * Kernels: direct loops, OpenMP over the N C planes (each task writes only its own plane).
 */
#include "graph/op_attrs.h"
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

typedef struct pool_geom {
    int64_t planes, H, W, OH, OW;
    int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
    int include_pad, ceil_mode;
} pool_geom;

/* The window of a pool node by its op's decoder (graph/op_attrs.def): the four ops share the
 * kernel, stride, pads and ceil_mode; the max ops add a dilation, the avg ops count_include_pad. */
#define POOL_WINDOW(q, a)                                                                          \
    ((q)->kh = (a).kernel_h, (q)->kw = (a).kernel_w, (q)->sh = (a).stride_h, (q)->sw = (a).stride_w, \
     (q)->pt = (a).pad_top, (q)->pl = (a).pad_left, (q)->pb = (a).pad_bottom, (q)->pr = (a).pad_right, \
     (q)->ceil_mode = (a).ceil_mode != 0)
#define POOL_MAX(q, a) (POOL_WINDOW(q, a), (q)->dh = (a).dilation_h, (q)->dw = (a).dilation_w, (q)->include_pad = 0)
#define POOL_AVG(q, a) (POOL_WINDOW(q, a), (q)->dh = (q)->dw = 1, (q)->include_pad = (a).count_include_pad != 0)

static void geom_attrs(pool_geom *q, const ts_node *n) {
    switch (n->op) {
    case TS_OP_MAX_POOL2D: {
        ts_attrs_max_pool2d a = TS_NODE_ATTRS(max_pool2d, n);
        POOL_MAX(q, a);
        break;
    }
    case TS_OP_MAX_POOL2D_GRAD: {
        ts_attrs_max_pool2d_grad a = TS_NODE_ATTRS(max_pool2d_grad, n);
        POOL_MAX(q, a);
        break;
    }
    case TS_OP_AVG_POOL2D: {
        ts_attrs_avg_pool2d a = TS_NODE_ATTRS(avg_pool2d, n);
        POOL_AVG(q, a);
        break;
    }
    default: {
        ts_attrs_avg_pool2d_grad a = TS_NODE_ATTRS(avg_pool2d_grad, n);
        POOL_AVG(q, a);
        break;
    }
    }
}

/* Output extent along one axis (see the top of the file); <= 0 when the window does not fit. */
static int64_t pool_out_dim(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t d, int64_t s, int ceil_mode) {
    int64_t span = in + p0 + p1 - d * (k - 1) - 1;
    if (span < 0) return 0;
    int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p0) out--;
    return out;
}

/* ------------------------------------------------------------------ shape rules */

static ts_status check_pool(const ts_graph *g, const ts_node *n, int is_max, int xin) {
    const char *op = ts_op_get(n->op)->name;
    const ts_val *x = &g->vals[n->in[xin]];
    pool_geom q;
    geom_attrs(&q, n);
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: x %s has dtype %s; this op takes f32", op, VS(g, n->in[xin]),
                      ts_dtype_name(x->dtype));
    if (x->ndim != 4)
        return ts_err(TS_ERR_SHAPE, "op %s: x %s must have rank 4 ([N, C, H, W])", op, VS(g, n->in[xin]));
    if (q.kh < 1 || q.kw < 1)
        return ts_err(TS_ERR_ARG, "op %s: kernel %lldx%lld must be at least 1x1", op, (long long)q.kh,
                      (long long)q.kw);
    if (q.sh < 1 || q.sw < 1)
        return ts_err(TS_ERR_ARG, "op %s: stride (%lld, %lld) must be >= 1", op, (long long)q.sh, (long long)q.sw);
    if (is_max && (q.dh < 1 || q.dw < 1))
        return ts_err(TS_ERR_ARG, "op %s: dilation (%lld, %lld) must be >= 1", op, (long long)q.dh, (long long)q.dw);
    int64_t ekh = q.dh * (q.kh - 1) + 1, ekw = q.dw * (q.kw - 1) + 1;
    const int64_t pads[4] = {q.pt, q.pl, q.pb, q.pr};
    for (int k = 0; k < 4; k++) {
        int64_t p = pads[k], e = k % 2 ? ekw : ekh;
        if (p < 0 || p > e / 2)
            return ts_err(TS_ERR_ARG, "op %s: pads {top %lld, left %lld, bottom %lld, right %lld} must be >= 0 and "
                          "at most half the %skernel (%lldx%lld)", op, (long long)q.pt, (long long)q.pl,
                          (long long)q.pb, (long long)q.pr, is_max ? "dilated " : "", (long long)ekh, (long long)ekw);
    }
    return TS_OK;
}

/* Output extents of node n for x's H, W; an error when the window does not fit. */
static ts_status pool_out_hw(const ts_graph *g, const ts_node *n, int xv, int64_t H, int64_t W, int64_t *OH,
                             int64_t *OW) {
    pool_geom q;
    geom_attrs(&q, n);
    *OH = pool_out_dim(H, q.pt, q.pb, q.kh, q.dh, q.sh, q.ceil_mode);
    *OW = pool_out_dim(W, q.pl, q.pr, q.kw, q.dw, q.sw, q.ceil_mode);
    if (*OH < 1 || *OW < 1)
        return ts_err(TS_ERR_SHAPE, "op %s: the window %lldx%lld (dilated %lldx%lld) is bigger than the padded input "
                      "%s (H %lld + pads %lld + %lld, W %lld + pads %lld + %lld)", ts_op_get(n->op)->name,
                      (long long)q.kh, (long long)q.kw, (long long)(q.dh * (q.kh - 1) + 1),
                      (long long)(q.dw * (q.kw - 1) + 1), VS(g, xv), (long long)H, (long long)q.pt,
                      (long long)q.pb, (long long)W, (long long)q.pl, (long long)q.pr);
    return TS_OK;
}

static void set_out4(ts_graph *g, const ts_node *n, int64_t a, int64_t b, int64_t c, int64_t d) {
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = 4;
    o->shape[0] = a, o->shape[1] = b, o->shape[2] = c, o->shape[3] = d;
}

static ts_status infer_pool(ts_graph *g, ts_node *n) {
    int is_max = n->op == TS_OP_MAX_POOL2D;
    ts_status s = check_pool(g, n, is_max, 0);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    int64_t OH, OW;
    s = pool_out_hw(g, n, n->in[0], x->shape[2], x->shape[3], &OH, &OW);
    if (s) return s;
    set_out4(g, n, x->shape[0], x->shape[1], OH, OW);
    return TS_OK;
}

/* max_pool2d_grad(x, gy): gy must be the pooled shape of x. */
static ts_status infer_max_pool2d_grad(ts_graph *g, ts_node *n) {
    ts_status s = check_pool(g, n, 1, 0);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]], *gy = &g->vals[n->in[1]];
    int64_t OH, OW;
    s = pool_out_hw(g, n, n->in[0], x->shape[2], x->shape[3], &OH, &OW);
    if (s) return s;
    if (gy->dtype != TS_F32 || gy->ndim != 4 || gy->shape[0] != x->shape[0] || gy->shape[1] != x->shape[1] ||
        gy->shape[2] != OH || gy->shape[3] != OW)
        return ts_err(TS_ERR_SHAPE, "op max_pool2d_grad: gy %s must be f32 [%lld, %lld, %lld, %lld] for x %s",
                      VS(g, n->in[1]), (long long)x->shape[0], (long long)x->shape[1], (long long)OH,
                      (long long)OW, VS(g, n->in[0]));
    set_out4(g, n, x->shape[0], x->shape[1], x->shape[2], x->shape[3]);
    return TS_OK;
}

/* avg_pool2d_grad(gy): x's H, W in i[8], i[9]. */
static ts_status infer_avg_pool2d_grad(ts_graph *g, ts_node *n) {
    ts_status s = check_pool(g, n, 0, 0);
    if (s) return s;
    const ts_val *gy = &g->vals[n->in[0]];
    ts_attrs_avg_pool2d_grad at = TS_NODE_ATTRS(avg_pool2d_grad, n);
    int64_t H = at.in_h, W = at.in_w, OH, OW;
    if (H < 1 || W < 1)
        return ts_err(TS_ERR_ARG, "op avg_pool2d_grad: input extent %lldx%lld must be positive", (long long)H,
                      (long long)W);
    s = pool_out_hw(g, n, n->in[0], H, W, &OH, &OW);
    if (s) return s;
    if (gy->shape[2] != OH || gy->shape[3] != OW)
        return ts_err(TS_ERR_SHAPE, "op avg_pool2d_grad: gy %s must be [N, C, %lld, %lld] for an input of %lldx%lld",
                      VS(g, n->in[0]), (long long)OH, (long long)OW, (long long)H, (long long)W);
    set_out4(g, n, gy->shape[0], gy->shape[1], H, W);
    return TS_OK;
}

/* ------------------------------------------------------------------ builders and gradients */

static ts_value pool(ts_graph *g, int op, ts_value x, const ts_pool_opts *o, const char *fn) {
    if (x == TS_NONE) return TS_NONE;
    if (!o) return ts_graph_fail(g, TS_ERR_ARG, "%s: opts is NULL (the kernel size is needed)", fn);
    ts_attrs at = {0};
    at.i[0] = o->kernel[0], at.i[1] = o->kernel[1];
    at.i[2] = o->stride[0] ? o->stride[0] : 1;
    at.i[3] = o->stride[1] ? o->stride[1] : 1;
    for (int k = 0; k < 4; k++) at.i[4 + k] = o->pad[k];
    if (op == TS_OP_MAX_POOL2D) {
        at.i[8] = o->dilation[0] ? o->dilation[0] : 1;
        at.i[9] = o->dilation[1] ? o->dilation[1] : 1;
    } else {
        if ((o->dilation[0] && o->dilation[0] != 1) || (o->dilation[1] && o->dilation[1] != 1))
            return ts_graph_fail(g, TS_ERR_ARG, "%s: dilation (%d, %d) is for max pooling only", fn,
                                 o->dilation[0], o->dilation[1]);
        at.i[8] = at.i[9] = 1;
        at.i[11] = o->count_include_pad != 0;
    }
    at.i[10] = o->ceil_mode != 0;
    at.ni = 12;
    return ts_node_add(g, op, 1, &x, &at, NULL);
}

ts_value ts_max_pool2d(ts_graph *g, ts_value x, const ts_pool_opts *opts) {
    return pool(g, TS_OP_MAX_POOL2D, x, opts, "ts_max_pool2d");
}
ts_value ts_avg_pool2d(ts_graph *g, ts_value x, const ts_pool_opts *opts) {
    return pool(g, TS_OP_AVG_POOL2D, x, opts, "ts_avg_pool2d");
}

static ts_status grad_max_pool2d(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin) {
    if (gout[0] == TS_NONE) return TS_OK;
    gin[0] = ts_node_add(g, TS_OP_MAX_POOL2D_GRAD, 2, (int[]){n->in[0], gout[0]}, &n->attr, NULL);
    return TS_OK;
}

static ts_status grad_avg_pool2d(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin) {
    if (gout[0] == TS_NONE) return TS_OK;
    ts_attrs at = n->attr;
    at.i[8] = g->vals[n->in[0]].shape[2];
    at.i[9] = g->vals[n->in[0]].shape[3];
    gin[0] = ts_node_add(g, TS_OP_AVG_POOL2D_GRAD, 1, &gout[0], &at, NULL);
    return TS_OK;
}

/* ------------------------------------------------------------------ kernels */

static void node_geom(const ts_graph *g, const ts_node *n, pool_geom *q) {
    geom_attrs(q, n);
    const ts_val *big = n->op == TS_OP_AVG_POOL2D_GRAD ? &g->vals[n->out[0]] : &g->vals[n->in[0]];
    const ts_val *small = n->op == TS_OP_AVG_POOL2D || n->op == TS_OP_MAX_POOL2D ? &g->vals[n->out[0]]
                          : n->op == TS_OP_MAX_POOL2D_GRAD ? &g->vals[n->in[1]] : &g->vals[n->in[0]];
    q->planes = big->shape[0] * big->shape[1];
    q->H = big->shape[2], q->W = big->shape[3], q->OH = small->shape[2], q->OW = small->shape[3];
}

/* The window's first valid tap [*i0, *i1) along one axis: taps i with 0 <= o s - p + i d < in. */
static void taps(int64_t o, int64_t s, int64_t p, int64_t d, int64_t k, int64_t in, int64_t *i0, int64_t *i1) {
    int64_t start = o * s - p; /* coordinate of tap 0 */
    int64_t lo = start >= 0 ? 0 : (-start + d - 1) / d;
    int64_t hi = in - start <= 0 ? 0 : (in - start - 1) / d + 1;
    *i0 = lo;
    *i1 = hi < k ? hi : k;
    if (*i1 < *i0) *i1 = *i0;
}

/* The flat index within the plane of the max of window (oh, ow) (first max in window order,
 * NaN wins); -1 when the window has no input cell. */
static inline int64_t window_argmax(const pool_geom *q, const float *x, int64_t oh, int64_t ow) {
    int64_t i0, i1, j0, j1, best = -1;
    taps(oh, q->sh, q->pt, q->dh, q->kh, q->H, &i0, &i1);
    taps(ow, q->sw, q->pl, q->dw, q->kw, q->W, &j0, &j1);
    float m = 0.f;
    for (int64_t i = i0; i < i1; i++) {
        int64_t h = oh * q->sh - q->pt + i * q->dh;
        for (int64_t j = j0; j < j1; j++) {
            int64_t at = h * q->W + ow * q->sw - q->pl + j * q->dw;
            float v = x[at];
            if (best < 0 || ((v > m) | ((v != v) & (m == m)))) m = v, best = at;
        }
    }
    return best;
}

/* 1 when every window of q lies inside the input (no pads reached, no ceil_mode overhang). */
static int windows_inside(const pool_geom *q) {
    return q->pt == 0 && q->pl == 0 && (q->OH - 1) * q->sh + (q->kh - 1) * q->dh < q->H &&
           (q->OW - 1) * q->sw + (q->kw - 1) * q->dw < q->W;
}

/* max_pool2d's value (not its argmax) for windows all inside, tap by tap over whole output
 * rows, so that the inner loop runs along ow and vectorises (strided loads): the same value as
 * window_argmax's cell (the max; NaN when the window holds one). */
TS_SIMD_CLONES
static void max_plane_inside(const pool_geom *q, const float *restrict x, float *restrict y) {
    const int64_t OH = q->OH, OW = q->OW, W = q->W, kh = q->kh, kw = q->kw, sh = q->sh, sw = q->sw, dh = q->dh,
                  dw = q->dw;
    for (int64_t oh = 0; oh < OH; oh++) {
        float *restrict yr = y + oh * OW;
        for (int64_t i = 0; i < kh; i++)
            for (int64_t j = 0; j < kw; j++) {
                const float *restrict r = x + (oh * sh + i * dh) * W + j * dw;
                if (i == 0 && j == 0) {
                    for (int64_t ow = 0; ow < OW; ow++) yr[ow] = r[ow * sw];
                } else if (sw == 2) { /* the common 2x2 / 1x2 stride-2 window: a constant stride */
                    for (int64_t ow = 0; ow < OW; ow++) {
                        float m = yr[ow], v = r[2 * ow];
                        yr[ow] = m != m ? m : (v > m) | (v != v) ? v : m;
                    }
                } else {
                    for (int64_t ow = 0; ow < OW; ow++) {
                        float m = yr[ow], v = r[ow * sw];
                        yr[ow] = m != m ? m : (v > m) | (v != v) ? v : m;
                    }
                }
            }
    }
}

/* y[p, oh, ow] = max over the window's input cells of x[p, h, w] */
static ts_status max_pool2d_kernel(const ts_kargs *k) {
    pool_geom q;
    node_geom(k->g, k->node, &q);
    const float *X = k->in[0];
    float *Y = k->out[0];
    if (windows_inside(&q)) {
#pragma omp parallel for schedule(static) if (q.planes * q.OH * q.OW * q.kh * q.kw > 32768)
        for (int64_t p = 0; p < q.planes; p++) max_plane_inside(&q, X + p * q.H * q.W, Y + p * q.OH * q.OW);
        return TS_OK;
    }
#pragma omp parallel for schedule(static) if (q.planes * q.OH * q.OW * q.kh * q.kw > 32768)
    for (int64_t p = 0; p < q.planes; p++) {
        const float *x = X + p * q.H * q.W;
        float *y = Y + p * q.OH * q.OW;
        for (int64_t oh = 0; oh < q.OH; oh++)
            for (int64_t ow = 0; ow < q.OW; ow++) {
                int64_t at = window_argmax(&q, x, oh, ow);
                y[oh * q.OW + ow] = at >= 0 ? x[at] : -INFINITY;
            }
    }
    return TS_OK;
}

/* gx[p, argmax of window (oh, ow)] += gy[p, oh, ow] */
static ts_status max_pool2d_grad_kernel(const ts_kargs *k) {
    pool_geom q;
    node_geom(k->g, k->node, &q);
    const float *X = k->in[0], *GY = k->in[1];
    float *GX = k->out[0];
#pragma omp parallel for schedule(static) if (q.planes * q.OH * q.OW * q.kh * q.kw > 32768)
    for (int64_t p = 0; p < q.planes; p++) {
        const float *x = X + p * q.H * q.W, *gy = GY + p * q.OH * q.OW;
        float *gx = GX + p * q.H * q.W;
        memset(gx, 0, sizeof(float) * (size_t)(q.H * q.W));
        for (int64_t oh = 0; oh < q.OH; oh++)
            for (int64_t ow = 0; ow < q.OW; ow++) {
                int64_t at = window_argmax(&q, x, oh, ow);
                if (at >= 0) gx[at] += gy[oh * q.OW + ow];
            }
    }
    return TS_OK;
}

/* The divisor of window (oh, ow): its input cells, or with count_include_pad its cells inside
 * the padded input. Also its input tap ranges. */
static inline float avg_window(const pool_geom *q, int64_t oh, int64_t ow, int64_t *i0, int64_t *i1, int64_t *j0,
                               int64_t *j1) {
    taps(oh, q->sh, q->pt, 1, q->kh, q->H, i0, i1);
    taps(ow, q->sw, q->pl, 1, q->kw, q->W, j0, j1);
    if (!q->include_pad) return (float)((*i1 - *i0) * (*j1 - *j0));
    int64_t h0 = oh * q->sh - q->pt, w0 = ow * q->sw - q->pl;
    int64_t h1 = h0 + q->kh < q->H + q->pb ? h0 + q->kh : q->H + q->pb;
    int64_t w1 = w0 + q->kw < q->W + q->pr ? w0 + q->kw : q->W + q->pr;
    return (float)((h1 - h0) * (w1 - w0));
}

/* y[p, oh, ow] = (sum over the window's input cells of x[p, h, w]) / d(oh, ow) */
static ts_status avg_pool2d_kernel(const ts_kargs *k) {
    pool_geom q;
    node_geom(k->g, k->node, &q);
    const float *X = k->in[0];
    float *Y = k->out[0];
#pragma omp parallel for schedule(static) if (q.planes * q.OH * q.OW * q.kh * q.kw > 32768)
    for (int64_t p = 0; p < q.planes; p++) {
        const float *x = X + p * q.H * q.W;
        float *y = Y + p * q.OH * q.OW;
        for (int64_t oh = 0; oh < q.OH; oh++)
            for (int64_t ow = 0; ow < q.OW; ow++) {
                int64_t i0, i1, j0, j1;
                float d = avg_window(&q, oh, ow, &i0, &i1, &j0, &j1), s = 0.f;
                for (int64_t i = i0; i < i1; i++) {
                    const float *xr = x + (oh * q.sh - q.pt + i) * q.W + ow * q.sw - q.pl;
                    for (int64_t j = j0; j < j1; j++) s += xr[j];
                }
                y[oh * q.OW + ow] = d > 0 ? s / d : 0.f;
            }
    }
    return TS_OK;
}

/* gx[p, h, w] = sum over the windows (oh, ow) holding (h, w) of gy[p, oh, ow] / d(oh, ow) */
static ts_status avg_pool2d_grad_kernel(const ts_kargs *k) {
    pool_geom q;
    node_geom(k->g, k->node, &q);
    const float *GY = k->in[0];
    float *GX = k->out[0];
#pragma omp parallel for schedule(static) if (q.planes * q.OH * q.OW * q.kh * q.kw > 32768)
    for (int64_t p = 0; p < q.planes; p++) {
        const float *gy = GY + p * q.OH * q.OW;
        float *gx = GX + p * q.H * q.W;
        memset(gx, 0, sizeof(float) * (size_t)(q.H * q.W));
        for (int64_t oh = 0; oh < q.OH; oh++)
            for (int64_t ow = 0; ow < q.OW; ow++) {
                int64_t i0, i1, j0, j1;
                float d = avg_window(&q, oh, ow, &i0, &i1, &j0, &j1);
                float v = d > 0 ? gy[oh * q.OW + ow] / d : 0.f;
                for (int64_t i = i0; i < i1; i++) {
                    float *gr = gx + (oh * q.sh - q.pt + i) * q.W + ow * q.sw - q.pl;
                    for (int64_t j = j0; j < j1; j++) gr[j] += v;
                }
            }
    }
    return TS_OK;
}

const ts_op_def ts_opdef_max_pool2d = {"max_pool2d", 1, 1, 1, 0, infer_pool, grad_max_pool2d, max_pool2d_kernel,
                                       NULL};
const ts_op_def ts_opdef_max_pool2d_grad = {"max_pool2d_grad", 2, 2, 1, 0, infer_max_pool2d_grad, NULL,
                                            max_pool2d_grad_kernel, NULL};
const ts_op_def ts_opdef_avg_pool2d = {"avg_pool2d", 1, 1, 1, 0, infer_pool, grad_avg_pool2d, avg_pool2d_kernel,
                                       NULL};
const ts_op_def ts_opdef_avg_pool2d_grad = {"avg_pool2d_grad", 1, 1, 1, 0, infer_avg_pool2d_grad, NULL,
                                            avg_pool2d_grad_kernel, NULL};
