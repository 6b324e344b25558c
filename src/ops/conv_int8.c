/*
 * conv_int8.c — conv2d_i8: a 2-D convolution of f32 images by an f32 weight, computed in int8
 * (weights per output channel, activations per tensor, int32 sums, f32 out): the convolution the
 * quantization pass (graph/passes/quantize_conv.c) makes of conv2d in an inference program.
 *
 *   conv2d_i8(x, w, bias or absent) -> y, the shapes, geometry and attributes of conv2d
 *   (ops/conv.c: stride, pads, dilation, groups, the fused epilogue act / clamp):
 *     x    [N, C, H, W] f32
 *     w    [O, C/G, KH, KW] f32; output channel o's weights are row o of w seen as [O, Kw],
 *          Kw = C/G KH KW
 *     bias [O] f32 (optional input 2)
 *     y    [N, O, OH, OW] f32
 *   Math, with every step in the order written (the CPU kernel, backend/cpu/conv_int8.c, does the
 *   same operations, so the two agree up to the order of the f32 scaling and bias add):
 *     weights, per output channel o:  sw[o] = max_k |w[o, k]| / 127, iw[o] = 127 / max (0 if 0),
 *                                     qw[o, k] = clamp(rne(w[o, k] iw[o]), -127, 127)      (s8)
 *     activations, per tensor:        sa = a_scale if a_scale > 0 (fixed, from calibration),
 *                                     else max |x| / 127 on every run (dynamic);
 *                                     ia = 1 / a_scale, or 127 / max |x| (0 when the max is 0);
 *                                     qx = clamp(rne(x ia), -127, 127)                      (s8)
 *     acc[n, o, oh, ow] = sum_{c, kh, kw} qx[n, g C/G + c, h, w] qw[o, c, kh, kw]  in int32, with
 *       conv2d's h = oh sh - pt + kh dh, w = ow sw - pl + kw dw, cells outside the image 0
 *       (exact: |acc| <= 127^2 Kw, so Kw <= 133144)
 *     scale[o] = sa sw[o]                                                                   (f32)
 *     y = epilogue(float(acc) scale[o] + bias[o])   (conv2d's act, then clamp; ts_conv_epilogue)
 *   rne: round to nearest, ties to even. Symmetric (no zero points). A non-finite activation makes
 *   a dynamic sa NaN, so the whole output is NaN; with a fixed a_scale it quantizes to +-127 (NaN
 *   to 127). A non-finite weight makes its channel's sw[o] NaN.
 * Attributes: conv2d's i[0..10], f[0..2] (the same indices, so conv2d's decoder reads them),
 *   f[3] = a_scale (>= 0, finite), and i[11] = choose (0 or 1): 1 lets a device run conv2d's f32
 *   math for the node instead, where it measures that faster (the CPU: backend/cpu/conv_int8.c,
 *   "Which kernel"); the quantization pass sets it (graph/passes/quantize_conv.c). A conv2d_i8
 *   built with 0 is int8 math on every device.
 * Inference only: no gradient (grad refuses with TS_ERR_UNSUPPORTED).
 * The reference kernel below quantizes the weights on every call (the CPU kernel keeps them,
 * quantized and in oneDNN's layout, until a weight is written) and sums in plain int32 loops.
 */
#include "graph/op_attrs.h"
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

enum { I8_KMAX = 133144 }; /* 127^2 * Kw stays within int32 */

int ts_fixed_weight(const ts_graph *g, int v) {
    for (int hops = 0; hops < 8 && v >= 0; hops++) {
        const ts_val *x = &g->vals[v];
        if (x->kind == TS_V_PARAM || x->kind == TS_V_CONST) return 1;
        if (x->kind != TS_V_NODE || x->node < 0 || g->nodes[x->node].op != TS_OP_RESHAPE) return 0;
        v = g->nodes[x->node].in[0];
    }
    return 0;
}

float ts_conv_i8_act_scale(const ts_node *n, const float *x, int64_t count, float *inv) {
    float fixed = TS_NODE_ATTRS(conv2d_i8, n).a_scale;
    if (fixed > 0.f) {
        *inv = 1.f / fixed;
        return fixed;
    }
    float m = ts_quant_absmax(x, count);
    *inv = m > 0.f ? 127.f / m : 0.f;
    return m / 127.f;
}

/* ------------------------------------------------------------------ shape rule */

static ts_status infer_conv_i8(ts_graph *g, ts_node *n) {
    float a_scale = TS_NODE_ATTRS(conv2d_i8, n).a_scale;
    if (!(a_scale >= 0.f) || isinf(a_scale))
        return ts_err(TS_ERR_ARG, "op conv2d_i8: activation scale a_scale (f[3]) = %g; takes a finite scale > 0 "
                      "(fixed) or 0 (dynamic)", (double)a_scale);
    int64_t choose = n->attr.ni > 11 ? n->attr.i[11] : 0;
    if (choose != 0 && choose != 1)
        return ts_err(TS_ERR_ARG, "op conv2d_i8: choose (i[11]) = %lld; takes 0 (int8 always) or 1 (a device may "
                      "run it in f32)", (long long)choose);
    ts_status s = ts_op_get(TS_OP_CONV2D)->infer(g, n); /* conv2d's shape rule (its messages say conv2d) */
    if (s) return s;
    const ts_val *w = &g->vals[n->in[1]];
    int64_t Kw = w->shape[1] * w->shape[2] * w->shape[3];
    if (Kw > I8_KMAX)
        return ts_err(TS_ERR_SHAPE, "op conv2d_i8: weight %s sums %lld products an output (C/G KH KW), over %d, "
                      "where the int32 sums could overflow", VS(g, n->in[1]), (long long)Kw, I8_KMAX);
    return TS_OK;
}

static ts_status grad_conv_i8(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin) {
    (void)g, (void)n, (void)gout, (void)gin;
    return ts_err(TS_ERR_UNSUPPORTED, "op conv2d_i8: no gradient: int8 convolutions are for inference only (made by "
                  "ts_compile_opts.quantize in an inference program); train the f32 model and quantize it after");
}

/* ------------------------------------------------------------------ reference kernel */

/* The geometry of a conv2d_i8 node (conv2d's; see ops/conv.c). */
typedef struct i8_geom {
    int64_t N, C, H, W, O, OH, OW, KH, KW, sh, sw, pt, pl, dh, dw, G;
} i8_geom;

static void geom(const ts_graph *g, const ts_node *n, i8_geom *q) {
    const ts_val *x = &g->vals[n->in[0]], *w = &g->vals[n->in[1]], *y = &g->vals[n->out[0]];
    ts_attrs_conv2d_i8 at = TS_NODE_ATTRS(conv2d_i8, n);
    q->N = x->shape[0], q->C = x->shape[1], q->H = x->shape[2], q->W = x->shape[3];
    q->O = y->shape[1], q->OH = y->shape[2], q->OW = y->shape[3], q->KH = w->shape[2], q->KW = w->shape[3];
    q->sh = at.stride_h, q->sw = at.stride_w, q->pt = at.pad_top, q->pl = at.pad_left;
    q->dh = at.dilation_h, q->dw = at.dilation_w, q->G = at.groups;
}

/* One output plane (image n, channel o) of int32 sums: acc[oh, ow] over the group's channels and
 * the taps that land inside the image. */
static void plane_acc(const i8_geom *q, const int8_t *qx, const int8_t *qw, int64_t n, int64_t o, int32_t *acc) {
    int64_t Cg = q->C / q->G, c0 = o / (q->O / q->G) * Cg;
    for (int64_t i = 0; i < q->OH * q->OW; i++) acc[i] = 0;
    for (int64_t c = 0; c < Cg; c++) {
        const int8_t *x = qx + (n * q->C + c0 + c) * q->H * q->W;
        for (int64_t kh = 0; kh < q->KH; kh++)
            for (int64_t kw = 0; kw < q->KW; kw++) {
                int32_t wv = qw[((o * Cg + c) * q->KH + kh) * q->KW + kw];
                for (int64_t oh = 0; oh < q->OH; oh++) {
                    int64_t h = oh * q->sh - q->pt + kh * q->dh;
                    if (h < 0 || h >= q->H) continue;
                    for (int64_t ow = 0; ow < q->OW; ow++) {
                        int64_t wc = ow * q->sw - q->pl + kw * q->dw;
                        if (wc >= 0 && wc < q->W) acc[oh * q->OW + ow] += wv * (int32_t)x[h * q->W + wc];
                    }
                }
            }
    }
}

static ts_status conv_i8_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    i8_geom q;
    geom(k->g, n, &q);
    int64_t Kw = q.C / q.G * q.KH * q.KW, nx = q.N * q.C * q.H * q.W, plane = q.OH * q.OW;
    const float *X = k->in[0], *Wt = k->in[1], *B = n->nin > 2 ? k->in[2] : NULL;
    float *Y = k->out[0];
    int8_t *qx = malloc((size_t)nx + 1), *qw = malloc((size_t)(q.O * Kw) + 1);
    float *scale = malloc(sizeof(float) * (size_t)(q.O + 1));
    ts_status st = qx && qw && scale ? TS_OK : ts_err(TS_ERR_NOMEM, "op conv2d_i8: out of memory");
    if (st == TS_OK) st = ts_quant_weights_s8(Wt, Kw, q.O, 1, qw, scale);
    if (st == TS_OK) {
        float ia, sa = ts_conv_i8_act_scale(n, X, nx, &ia);
        ts_quant_s8(X, nx, ia, qx);
        for (int64_t o = 0; o < q.O; o++) scale[o] = sa * scale[o];
        int fail = 0;
#pragma omp parallel if (q.N * q.O * plane * Kw > 32768)
        {
            int32_t *acc = malloc(sizeof(int32_t) * (size_t)(plane + 1));
            if (!acc) {
#pragma omp atomic write
                fail = 1;
            }
#pragma omp for schedule(dynamic, 1)
            for (int64_t t = 0; t < q.N * q.O; t++) {
                if (!acc) continue;
                int64_t o = t % q.O;
                plane_acc(&q, qx, qw, t / q.O, o, acc);
                float *y = Y + t * plane;
                for (int64_t i = 0; i < plane; i++) y[i] = (float)acc[i] * scale[o] + (B ? B[o] : 0.f);
                ts_conv_epilogue(n, y, plane);
            }
            free(acc);
        }
        if (fail) st = ts_err(TS_ERR_NOMEM, "op conv2d_i8: out of memory for the int32 sums");
    }
    free(qx), free(qw), free(scale);
    return st;
}

const ts_op_def ts_opdef_conv2d_i8 = {"conv2d_i8", 2, 3, 1, 0, infer_conv_i8, grad_conv_i8, conv_i8_kernel, NULL};
