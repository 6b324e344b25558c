/*
 * resize.c — resizing the last two dims of an f32 tensor of any rank >= 2 (nearest or bilinear),
 * and its gradient: resize2d, resize2d_grad.
 *
 *   x [..., H, W] -> y [..., OH, OW]
 *   Along each axis (in = H, out = OH, scale s = the given scale, or out / in when none is
 *   given), output index o samples the input at
 *     half_pixel          (o + 0.5) / s - 0.5
 *     asymmetric          o / s
 *     align_corners       o (in - 1) / (out - 1)   (0 when out == 1)
 *     pytorch_half_pixel  (o + 0.5) / s - 0.5       (0 when out == 1)
 *   nearest: the coordinate is rounded (round_prefer_floor: a .5 goes down, round_prefer_ceil:
 *     up, floor, ceil) and clamped to [0, in - 1]; y = x at that cell.
 *   linear:  the coordinate is clamped to [0, in - 1]; i0 = floor, i1 = min(i0 + 1, in - 1),
 *     l = coordinate - i0; y = (1 - ly) ((1 - lx) x[i0, j0] + lx x[i0, j1])
 *                              + ly ((1 - lx) x[i1, j0] + lx x[i1, j1])
 *   These are ONNX Resize's modes (coordinate_transformation_mode, nearest_mode; the linear
 *   clamp is ONNX Runtime's and PyTorch's). Coordinates are computed in double.
 *   Gradient (the adjoint): each gy[o] is added back to the cells it read, with the weights it
 *   read them with (nearest: 1).
 *
 * Attributes: i[0], i[1] = OH, OW; i[2] = mode (ts_resize_mode); i[3] = coordinate transform
 * (ts_resize_coord); i[4] = nearest rounding (ts_resize_round); i[5], i[6] = H, W of x
 * (resize2d_grad only); f[0], f[1] = scales sh, sw (0: out / in). ni = 7.
 * resize2d_grad(gy) -> gx is not differentiable.
 *
 * Kernels: the sampling positions of each axis are tabulated once (scratch), then OpenMP over
 * the planes of the leading dims (each task writes only its own plane).
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* ------------------------------------------------------------------ shape rules */

static ts_status check_attrs(const ts_node *n) {
    const char *op = ts_op_get(n->op)->name;
    const ts_attrs *a = &n->attr;
    if (a->i[0] < 1 || a->i[1] < 1)
        return ts_err(TS_ERR_SHAPE, "op %s: output size %lldx%lld must be positive", op, (long long)a->i[0],
                      (long long)a->i[1]);
    if (a->i[2] != TS_RESIZE_NEAREST && a->i[2] != TS_RESIZE_LINEAR)
        return ts_err(TS_ERR_ARG, "op %s: unknown mode %lld", op, (long long)a->i[2]);
    if (a->i[3] < TS_COORD_HALF_PIXEL || a->i[3] > TS_COORD_PYTORCH_HALF_PIXEL)
        return ts_err(TS_ERR_ARG, "op %s: unknown coordinate transform %lld", op, (long long)a->i[3]);
    if (a->i[4] < TS_ROUND_PREFER_FLOOR || a->i[4] > TS_ROUND_CEIL)
        return ts_err(TS_ERR_ARG, "op %s: unknown nearest rounding %lld", op, (long long)a->i[4]);
    for (int k = 0; k < 2; k++)
        if (!(a->f[k] >= 0.f) || isinf(a->f[k]))
            return ts_err(TS_ERR_ARG, "op %s: scale %g must be positive and finite (or 0: output / input)", op,
                          (double)a->f[k]);
    return TS_OK;
}

static ts_status infer_resize(ts_graph *g, ts_node *n, int64_t H, int64_t W) {
    ts_status s = check_attrs(n);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: x %s has dtype %s; this op takes f32", ts_op_get(n->op)->name,
                      VS(g, n->in[0]), ts_dtype_name(x->dtype));
    if (x->ndim < 2)
        return ts_err(TS_ERR_SHAPE, "op %s: x %s must have rank >= 2 ([..., H, W])", ts_op_get(n->op)->name,
                      VS(g, n->in[0]));
    if (H < 1 || W < 1)
        return ts_err(TS_ERR_SHAPE, "op %s: the resized dims of %s must be positive", ts_op_get(n->op)->name,
                      VS(g, n->in[0]));
    return TS_OK;
}

static ts_status infer_resize2d(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    ts_status s = infer_resize(g, n, x->ndim >= 2 ? x->shape[x->ndim - 2] : 1, x->ndim >= 2 ? x->shape[x->ndim - 1] : 1);
    if (s) return s;
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    o->shape[x->ndim - 2] = n->attr.i[0];
    o->shape[x->ndim - 1] = n->attr.i[1];
    return TS_OK;
}

/* resize2d_grad(gy [..., OH, OW]) -> gx [..., H, W] */
static ts_status infer_resize2d_grad(ts_graph *g, ts_node *n) {
    const ts_val *gy = &g->vals[n->in[0]];
    ts_status s = infer_resize(g, n, n->attr.i[5], n->attr.i[6]);
    if (s) return s;
    if (gy->shape[gy->ndim - 2] != n->attr.i[0] || gy->shape[gy->ndim - 1] != n->attr.i[1])
        return ts_err(TS_ERR_SHAPE, "op resize2d_grad: gy %s must end in [%lld, %lld]", VS(g, n->in[0]),
                      (long long)n->attr.i[0], (long long)n->attr.i[1]);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = gy->ndim;
    memcpy(o->shape, gy->shape, sizeof(int64_t) * (size_t)gy->ndim);
    o->shape[gy->ndim - 2] = n->attr.i[5];
    o->shape[gy->ndim - 1] = n->attr.i[6];
    return TS_OK;
}

/* ------------------------------------------------------------------ builder and gradient */

ts_value ts_resize2d(ts_graph *g, ts_value x, int64_t oh, int64_t ow, const ts_resize_opts *opts) {
    if (x == TS_NONE) return TS_NONE;
    ts_resize_opts z = {TS_RESIZE_NEAREST, TS_COORD_HALF_PIXEL, TS_ROUND_PREFER_FLOOR, {0.f, 0.f}};
    if (!opts) opts = &z;
    ts_attrs at = {0};
    at.i[0] = oh, at.i[1] = ow;
    at.i[2] = opts->mode, at.i[3] = opts->coord, at.i[4] = opts->round;
    at.f[0] = opts->scale[0], at.f[1] = opts->scale[1];
    at.ni = 7;
    return ts_node_add(g, TS_OP_RESIZE2D, 1, &x, &at, NULL);
}

static ts_status grad_resize2d(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin) {
    if (gout[0] == TS_NONE) return TS_OK;
    const ts_val *x = &g->vals[n->in[0]];
    ts_attrs at = n->attr;
    at.i[5] = x->shape[x->ndim - 2];
    at.i[6] = x->shape[x->ndim - 1];
    gin[0] = ts_node_add(g, TS_OP_RESIZE2D_GRAD, 1, &gout[0], &at, NULL);
    return TS_OK;
}

/* ------------------------------------------------------------------ kernels */

/* Where output index o of an axis samples (see the top of the file): cells i0, i1 and the
 * weight l of i1 (nearest: i0 == i1, l = 0). */
typedef struct tap {
    int32_t i0, i1;
    float l;
} tap;

static void axis_taps(const ts_attrs *a, int64_t in, int64_t out, float given_scale, tap *t) {
    int mode = (int)a->i[2], coord = (int)a->i[3], rnd = (int)a->i[4];
    double s = given_scale > 0.f ? (double)given_scale : (double)out / (double)in;
    for (int64_t o = 0; o < out; o++) {
        double c;
        switch (coord) {
        case TS_COORD_ASYMMETRIC: c = (double)o / s; break;
        case TS_COORD_ALIGN_CORNERS: c = out == 1 ? 0.0 : (double)o * (double)(in - 1) / (double)(out - 1); break;
        case TS_COORD_PYTORCH_HALF_PIXEL: c = out == 1 ? 0.0 : ((double)o + 0.5) / s - 0.5; break;
        default: c = ((double)o + 0.5) / s - 0.5; break;
        }
        if (mode == TS_RESIZE_NEAREST) {
            double r;
            switch (rnd) {
            case TS_ROUND_PREFER_CEIL: r = floor(c + 0.5); break;
            case TS_ROUND_FLOOR: r = floor(c); break;
            case TS_ROUND_CEIL: r = ceil(c); break;
            default: r = ceil(c - 0.5); break;
            }
            int64_t i = r < 0 ? 0 : r > (double)(in - 1) ? in - 1 : (int64_t)r;
            t[o] = (tap){(int32_t)i, (int32_t)i, 0.f};
        } else {
            if (c < 0) c = 0;
            if (c > (double)(in - 1)) c = (double)(in - 1);
            int64_t i0 = (int64_t)floor(c), i1 = i0 + 1 < in ? i0 + 1 : in - 1;
            t[o] = (tap){(int32_t)i0, (int32_t)i1, (float)(c - (double)i0)};
        }
    }
}

typedef struct rz_geom {
    int64_t planes, H, W, OH, OW;
} rz_geom;

static void node_geom(const ts_graph *g, const ts_node *n, rz_geom *q) {
    int grad = n->op == TS_OP_RESIZE2D_GRAD;
    const ts_val *big = grad ? &g->vals[n->out[0]] : &g->vals[n->in[0]];
    q->planes = ts_numel(big->ndim - 2, big->shape);
    q->H = big->shape[big->ndim - 2], q->W = big->shape[big->ndim - 1];
    q->OH = n->attr.i[0], q->OW = n->attr.i[1];
}

static size_t resize_scratch(const ts_graph *g, const ts_node *n) {
    return sizeof(tap) * (size_t)(n->attr.i[0] + n->attr.i[1]);
}

/* The taps of both axes, in the scratch memory. */
static tap *tables(const ts_kargs *k, const rz_geom *q) {
    tap *t = k->scratch;
    if (!t || k->scratch_bytes < sizeof(tap) * (size_t)(q->OH + q->OW)) return NULL;
    axis_taps(&k->node->attr, q->H, q->OH, k->node->attr.f[0], t);
    axis_taps(&k->node->attr, q->W, q->OW, k->node->attr.f[1], t + q->OH);
    return t;
}

/* y[p, oh, ow] = sum over the (at most 4) taps of x[p, i, j] wi wj (see the top of the file) */
static ts_status resize2d_kernel(const ts_kargs *k) {
    rz_geom q;
    node_geom(k->g, k->node, &q);
    tap *th = tables(k, &q), *tw = th ? th + q.OH : NULL;
    if (!th) return ts_err(TS_ERR_RUNTIME, "op resize2d: the workspace is too small");
    const float *X = k->in[0];
    float *Y = k->out[0];
    int linear = k->node->attr.i[2] == TS_RESIZE_LINEAR;
#pragma omp parallel for schedule(static) if (q.planes * q.OH * q.OW > 32768)
    for (int64_t p = 0; p < q.planes; p++) {
        const float *x = X + p * q.H * q.W;
        float *y = Y + p * q.OH * q.OW;
        for (int64_t oh = 0; oh < q.OH; oh++) {
            const float *r0 = x + th[oh].i0 * q.W, *r1 = x + th[oh].i1 * q.W;
            float ly = th[oh].l;
            float *yr = y + oh * q.OW;
            if (!linear) {
                for (int64_t ow = 0; ow < q.OW; ow++) yr[ow] = r0[tw[ow].i0];
                continue;
            }
            for (int64_t ow = 0; ow < q.OW; ow++) {
                int32_t j0 = tw[ow].i0, j1 = tw[ow].i1;
                float lx = tw[ow].l;
                float top = r0[j0] + lx * (r0[j1] - r0[j0]), bot = r1[j0] + lx * (r1[j1] - r1[j0]);
                yr[ow] = top + ly * (bot - top);
            }
        }
    }
    return TS_OK;
}

/* gx[p, i, j] = sum over the outputs (oh, ow) that read cell (i, j) of gy[p, oh, ow] times the
 * weight they read it with */
static ts_status resize2d_grad_kernel(const ts_kargs *k) {
    rz_geom q;
    node_geom(k->g, k->node, &q);
    tap *th = tables(k, &q), *tw = th ? th + q.OH : NULL;
    if (!th) return ts_err(TS_ERR_RUNTIME, "op resize2d_grad: the workspace is too small");
    const float *GY = k->in[0];
    float *GX = k->out[0];
    int linear = k->node->attr.i[2] == TS_RESIZE_LINEAR;
#pragma omp parallel for schedule(static) if (q.planes * q.OH * q.OW > 32768)
    for (int64_t p = 0; p < q.planes; p++) {
        const float *gy = GY + p * q.OH * q.OW;
        float *gx = GX + p * q.H * q.W;
        memset(gx, 0, sizeof(float) * (size_t)(q.H * q.W));
        for (int64_t oh = 0; oh < q.OH; oh++) {
            float *r0 = gx + th[oh].i0 * q.W, *r1 = gx + th[oh].i1 * q.W;
            float ly = th[oh].l;
            const float *gr = gy + oh * q.OW;
            if (!linear) {
                for (int64_t ow = 0; ow < q.OW; ow++) r0[tw[ow].i0] += gr[ow];
                continue;
            }
            for (int64_t ow = 0; ow < q.OW; ow++) {
                int32_t j0 = tw[ow].i0, j1 = tw[ow].i1;
                float lx = tw[ow].l, v = gr[ow];
                float top = v * (1.f - ly), bot = v * ly;
                r0[j0] += top * (1.f - lx);
                r0[j1] += top * lx;
                r1[j0] += bot * (1.f - lx);
                r1[j1] += bot * lx;
            }
        }
    }
    return TS_OK;
}

const ts_op_def ts_opdef_resize2d = {"resize2d", 1, 1, 1, 0, infer_resize2d, grad_resize2d, resize2d_kernel,
                                     resize_scratch};
const ts_op_def ts_opdef_resize2d_grad = {"resize2d_grad", 1, 1, 1, 0, infer_resize2d_grad, NULL,
                                          resize2d_grad_kernel, resize_scratch};
