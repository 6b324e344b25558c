/*
 * roi_align.c — ts_roi_align: average pooling of bilinear samples over regions of interest, as
 * ONNX RoiAlign (mode avg) and torchvision's roi_align.
 *
 *   roi_align(x [N, C, H, W] f32, rois [R, 4] f32 (x1, y1, x2, y2), batch [R] i32/i64) -> y [R, C, OH, OW]
 *   attrs: i[0] = OH, i[1] = OW, i[2] = sampling ratio (0: adaptive), i[3] = half_pixel,
 *          f[0] = spatial scale
 * For roi r in image batch[r]: start = (x1, y1) s - o, size = (x2, y2) s - o - start with s the
 * spatial scale and o = 0.5 when half_pixel (else 0, and each size at least 1). Output cell (i, j)
 * averages gh x gw samples at y = start_y + i bh + (a + 0.5) bh / gh, x likewise (bh = size_y / OH,
 * gh = the sampling ratio or ceil(size_y / OH)), each the bilinear interpolation of x at (y, x):
 * 0 when y < -1, y > H, x < -1 or x > W; otherwise coordinates below 0 are taken as 0 and those
 * at or past the last row / column as it. An image index outside [0, N) fails the run.
 * (gh and gw are at most 4096.) Not differentiable (grad NULL).
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_roi_align(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]], *r = &g->vals[n->in[1]], *b = &g->vals[n->in[2]];
    if (x->dtype != TS_F32 || x->ndim != 4 || r->dtype != TS_F32 || r->ndim != 2 || r->shape[1] != 4 ||
        (b->dtype != TS_I64 && b->dtype != TS_I32) || b->ndim != 1 || b->shape[0] != r->shape[0])
        return ts_err(TS_ERR_SHAPE, "op roi_align: x %s must be f32 [N, C, H, W], rois %s f32 [R, 4] and batch "
                      "indices %s i32 / i64 [R]", VS(g, n->in[0]), VS(g, n->in[1]), VS(g, n->in[2]));
    if (n->attr.i[0] < 1 || n->attr.i[1] < 1 || n->attr.i[2] < 0)
        return ts_err(TS_ERR_ARG, "op roi_align: output %lld x %lld or sampling ratio %lld out of range",
                      (long long)n->attr.i[0], (long long)n->attr.i[1], (long long)n->attr.i[2]);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = 4;
    int64_t sh[4] = {r->shape[0], x->shape[1], n->attr.i[0], n->attr.i[1]};
    memcpy(o->shape, sh, sizeof sh);
    return TS_OK;
}

/* ceil(v) samples along a bin, at least 1 and at most 4096 (also for a NaN or infinite size) */
static int64_t samples(double v) {
    double c = ceil(v);
    return c >= 1 && c <= 4096 ? (int64_t)c : c > 4096 ? 4096 : 1;
}

/* the bilinear sample of plane p at (y, x), as the header states */
static double sample(const float *p, int64_t H, int64_t W, double y, double x) {
    if (!(y >= -1.0 && y <= (double)H && x >= -1.0 && x <= (double)W)) return 0;
    if (y <= 0) y = 0;
    if (x <= 0) x = 0;
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;
    if (y0 >= H - 1) y0 = y1 = H - 1, y = (double)y0;
    else y1 = y0 + 1;
    if (x0 >= W - 1) x0 = x1 = W - 1, x = (double)x0;
    else x1 = x0 + 1;
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    return hy * hx * p[y0 * W + x0] + hy * lx * p[y0 * W + x1] + ly * hx * p[y1 * W + x0] + ly * lx * p[y1 * W + x1];
}

static ts_status roi_align_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    const ts_val *x = &k->g->vals[n->in[0]], *bv = &k->g->vals[n->in[2]];
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3], R = bv->shape[0];
    int64_t OH = n->attr.i[0], OW = n->attr.i[1], ratio = n->attr.i[2];
    int half = n->attr.i[3] != 0;
    double scale = n->attr.f[0], off = half ? 0.5 : 0.0;
    const float *X = k->in[0], *rois = k->in[1];
    float *Y = k->out[0];
    for (int64_t r = 0; r < R; r++) {
        int64_t b = bv->dtype == TS_I64 ? ((const int64_t *)k->in[2])[r] : ((const int32_t *)k->in[2])[r];
        if (b < 0 || b >= N)
            return ts_err(TS_ERR_RUNTIME, "op roi_align: batch index %lld of roi %lld is outside [0, %lld) for %s",
                          (long long)b, (long long)r, (long long)N, VS(k->g, n->in[0]));
    }
#pragma omp parallel for schedule(static) if (R * C * OH * OW > 4096)
    for (int64_t rc = 0; rc < R * C; rc++) {
        int64_t r = rc / C, c = rc % C;
        int64_t b = bv->dtype == TS_I64 ? ((const int64_t *)k->in[2])[r] : ((const int32_t *)k->in[2])[r];
        const float *roi = rois + r * 4, *p = X + (b * C + c) * H * W;
        double sx = roi[0] * scale - off, sy = roi[1] * scale - off;
        double w = roi[2] * scale - off - sx, h = roi[3] * scale - off - sy;
        if (!half) {
            w = w > 1 ? w : 1;
            h = h > 1 ? h : 1;
        }
        double bh = h / (double)OH, bw = w / (double)OW;
        int64_t gh = ratio > 0 ? ratio : samples(h / (double)OH), gw = ratio > 0 ? ratio : samples(w / (double)OW);
        for (int64_t i = 0; i < OH; i++)
            for (int64_t j = 0; j < OW; j++) {
                double s = 0;
                for (int64_t a = 0; a < gh; a++) {
                    double y = sy + (double)i * bh + ((double)a + 0.5) * bh / (double)gh;
                    for (int64_t e = 0; e < gw; e++)
                        s += sample(p, H, W, y, sx + (double)j * bw + ((double)e + 0.5) * bw / (double)gw);
                }
                Y[(rc * OH + i) * OW + j] = (float)(s / (double)(gh * gw));
            }
    }
    return TS_OK;
}

/* Not differentiable. */
const ts_op_def ts_opdef_roi_align = {"roi_align", 3, 3, 1, 0, infer_roi_align, NULL, roi_align_kernel, NULL};

ts_value ts_roi_align(ts_graph *g, ts_value x, ts_value rois, ts_value batch_indices, int out_h, int out_w,
                      int sampling_ratio, float spatial_scale, int half_pixel) {
    if (!g || x == TS_NONE || rois == TS_NONE || batch_indices == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = out_h;
    at.i[1] = out_w;
    at.i[2] = sampling_ratio;
    at.i[3] = half_pixel != 0;
    at.ni = 4;
    at.f[0] = spatial_scale;
    return ts_node_add(g, TS_OP_ROI_ALIGN, 3, (int[]){x, rois, batch_indices}, &at, NULL);
}
