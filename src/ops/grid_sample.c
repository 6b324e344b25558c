/*
 * grid_sample.c — ts_grid_sample: x [N, C, H, W] f32 sampled at the points of grid [N, OH, OW, 2]
 * (normalised coordinates (gx, gy) in [-1, 1], gx along W), as PyTorch's grid_sample and ONNX
 * GridSample.   grid_sample(x, grid) -> y [N, C, OH, OW]     attrs: i[0] = mode, i[1] = padding,
 * i[2] = align_corners.
 *
 * A normalised coordinate g on an axis of size S becomes a pixel coordinate
 *   u = (g + 1) / 2 (S - 1)      (align_corners)      u = ((g + 1) S - 1) / 2    (otherwise)
 * and then, for the padding modes: border clamps u to [0, S - 1]; reflection reflects u about the
 * edges (0 and S - 1 with align_corners, -0.5 and S - 0.5 otherwise) until it lies between them,
 * then clamps; zeros leaves it. A pixel read outside the image is 0.
 *   bilinear: the 4 pixels around (u, v), weighted (1 - tx)(1 - ty), tx (1 - ty), (1 - tx) ty, tx ty
 *             with tx = u - floor(u), ty likewise
 *   nearest:  the pixel at (round(u), round(v)), halves to even
 *   bicubic:  the 4 x 4 pixels around the unpadded (u, v), weighted by the cubic convolution kernel
 *             (A = -0.75) of the distances; each tap's coordinate is padded as above on its own
 * Computed in double; a coordinate that is not finite (or beyond 2^30) reads 0. Not differentiable
 * (grad NULL).
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_grid_sample(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]], *gr = &g->vals[n->in[1]];
    if (x->dtype != TS_F32 || gr->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op grid_sample: %s and %s must be f32", VS(g, n->in[0]), VS(g, n->in[1]));
    if (x->ndim != 4 || gr->ndim != 4 || gr->shape[0] != x->shape[0] || gr->shape[3] != 2)
        return ts_err(TS_ERR_SHAPE, "op grid_sample: x %s must be [N, C, H, W] and grid %s [N, OH, OW, 2]",
                      VS(g, n->in[0]), VS(g, n->in[1]));
    if (n->attr.i[0] < TS_GRID_BILINEAR || n->attr.i[0] > TS_GRID_BICUBIC || n->attr.i[1] < TS_GRID_ZEROS ||
        n->attr.i[1] > TS_GRID_REFLECTION)
        return ts_err(TS_ERR_ARG, "op grid_sample: mode %lld / padding %lld is not a ts_grid_mode / ts_grid_padding",
                      (long long)n->attr.i[0], (long long)n->attr.i[1]);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = 4;
    int64_t sh[4] = {x->shape[0], x->shape[1], gr->shape[1], gr->shape[2]};
    memcpy(o->shape, sh, sizeof sh);
    return TS_OK;
}

static double unnormalize(double c, int64_t size, int align) {
    return align ? (c + 1) / 2 * (double)(size - 1) : ((c + 1) * (double)size - 1) / 2;
}

static double clamp(double c, int64_t size) { return c < 0 ? 0 : c > (double)(size - 1) ? (double)(size - 1) : c; }

/* c reflected into [lo2 / 2, hi2 / 2] (the bounds given doubled, so that half-pixel edges stay exact) */
static double reflect(double c, double lo2, double hi2) {
    if (lo2 == hi2) return 0;
    double mn = lo2 / 2, span = (hi2 - lo2) / 2;
    c = fabs(c - mn);
    double extra = fmod(c, span);
    double flips = floor(c / span);
    return fmod(flips, 2.0) == 0 ? extra + mn : span - extra + mn;
}

static double padded(double c, int64_t size, int pad, int align) {
    if (pad == TS_GRID_BORDER) return clamp(c, size);
    if (pad == TS_GRID_REFLECTION)
        return clamp(align ? reflect(c, 0, 2.0 * (double)(size - 1)) : reflect(c, -1, 2.0 * (double)size - 1), size);
    return c;
}

/* A coordinate already rounded to an integer value, as an index: -1 (outside any image) when it is
 * not finite or beyond 2^30, so that no conversion overflows. */
static int64_t to_index(double c) { return c > -1073741824.0 && c < 1073741824.0 ? (int64_t)c : -1; }

/* pixel (y, x) of plane p, 0 outside */
static double pixel(const float *p, int64_t H, int64_t W, int64_t y, int64_t x) {
    return y >= 0 && y < H && x >= 0 && x < W ? p[y * W + x] : 0.0;
}

static void cubic_weights(double t, double w[4]) {
    const double A = -0.75;
    double x;
    x = t + 1;
    w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;
    w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t;
    w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t;
    w[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

static ts_status grid_sample_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    const ts_val *x = &k->g->vals[n->in[0]], *gr = &k->g->vals[n->in[1]];
    int mode = (int)n->attr.i[0], pad = (int)n->attr.i[1], align = n->attr.i[2] != 0;
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3], OH = gr->shape[1], OW = gr->shape[2];
    const float *X = k->in[0], *G = k->in[1];
    float *Y = k->out[0];
#pragma omp parallel for schedule(static) if (N * C * OH * OW > 32768)
    for (int64_t q = 0; q < N * OH * OW; q++) {
        int64_t b = q / (OH * OW), o = q % (OH * OW);
        double gx = G[q * 2], gy = G[q * 2 + 1];
        double u = unnormalize(gx, W, align), v = unnormalize(gy, H, align);
        for (int64_t c = 0; c < C; c++) {
            const float *p = X + (b * C + c) * H * W;
            double r = 0;
            if (mode == TS_GRID_BICUBIC) {
                double fx = floor(u), fy = floor(v), wx[4], wy[4];
                cubic_weights(u - fx, wx);
                cubic_weights(v - fy, wy);
                for (int j = 0; j < 4; j++)
                    for (int i = 0; i < 4; i++) {
                        double tx = padded(fx - 1 + i, W, pad, align), ty = padded(fy - 1 + j, H, pad, align);
                        r += wy[j] * wx[i] * pixel(p, H, W, to_index(floor(ty)), to_index(floor(tx)));
                    }
            } else {
                double pu = padded(u, W, pad, align), pv = padded(v, H, pad, align);
                if (mode == TS_GRID_NEAREST) {
                    r = pixel(p, H, W, to_index(nearbyint(pv)), to_index(nearbyint(pu)));
                } else {
                    double fx = floor(pu), fy = floor(pv), tx = pu - fx, ty = pv - fy;
                    int64_t x0 = to_index(fx), y0 = to_index(fy);
                    r = (1 - tx) * (1 - ty) * pixel(p, H, W, y0, x0) + tx * (1 - ty) * pixel(p, H, W, y0, x0 + 1) +
                        (1 - tx) * ty * pixel(p, H, W, y0 + 1, x0) + tx * ty * pixel(p, H, W, y0 + 1, x0 + 1);
                }
            }
            Y[(b * C + c) * OH * OW + o] = (float)r;
        }
    }
    return TS_OK;
}

/* Not differentiable. */
const ts_op_def ts_opdef_grid_sample = {"grid_sample", 2, 2, 1, 0, infer_grid_sample, NULL, grid_sample_kernel, NULL};

ts_value ts_grid_sample(ts_graph *g, ts_value x, ts_value grid, ts_grid_mode mode, ts_grid_padding padding,
                        int align_corners) {
    if (!g || x == TS_NONE || grid == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = mode;
    at.i[1] = padding;
    at.i[2] = align_corners != 0;
    at.ni = 3;
    return ts_node_add(g, TS_OP_GRID_SAMPLE, 2, (int[]){x, grid}, &at, NULL);
}
