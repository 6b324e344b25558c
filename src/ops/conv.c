/*
 * conv.c — 2-D convolutions on NCHW f32 images: conv2d, conv_transpose2d (the adjoint of conv2d
 * in its input, which is also conv2d's data gradient) and conv2d_grad_weight (conv2d's weight
 * gradient, which is also conv_transpose2d's).
 *
 * One geometry describes all three: a convolution whose input ("src") is [N, C, H, W], whose
 * weight is [O, C/G, KH, KW] and whose output ("dst") is [N, O, OH, OW], with
 *   OH = (H + pt + pb - dh (KH - 1) - 1) / sh + 1   (floor; OW alike with pl, pr, dw, sw)
 *   src row of output row oh and kernel row kh:  h = oh sh - pt + kh dh   (cells outside are 0)
 *   output channel o reads input channels of its group g = o / (O/G): g C/G .. (g + 1) C/G - 1
 * The ops, in those terms:
 *   conv2d(x = src, w, bias?) -> dst:
 *       dst[n, o, oh, ow] = bias[o] + sum_{c, kh, kw} src[n, g C/G + c, h, w] wgt[o, c, kh, kw]
 *   conv_transpose2d(x = dst-shaped [N, O, OH, OW], w [O, C/G, KH, KW], bias? [C]) -> src-shaped:
 *       out[n, g C/G + c, h, w] = bias + sum over (o in group g, kh, kw, oh, ow) that read
 *       (h, w) of x[n, o, oh, ow] wgt[o, c, kh, kw]
 *     In the public naming (ts_conv_transpose2d) x is [N, Cx, H, W], w [Cx, Oy/G, KH, KW] and
 *     the output [N, Oy, OHy, OWy], OHy = sh (H - 1) + oph + dh (KH - 1) + 1 - pt - pb: the
 *     convolution above with O = Cx, C = Oy. out_pad adds rows at the bottom (right) that no
 *     strided step reaches; it must be less than the stride so that conv2d maps the output
 *     back to exactly H rows.
 *   conv2d_grad_weight(src, gdst) -> gw [O, C/G, KH, KW]:
 *       gw[o, c, kh, kw] = sum_{n, oh, ow} gdst[n, o, oh, ow] src[n, g C/G + c, h, w]
 *
 * Attributes (all three ops): i[0], i[1] = stride sh, sw (>= 1); i[2..5] = pads top, left,
 * bottom, right (>= 0); i[6], i[7] = dilation dh, dw (>= 1); i[8] = groups G (>= 1);
 * i[9], i[10] = conv_transpose2d: output padding (oph, opw), 0 <= op < stride;
 *               conv2d_grad_weight: the kernel size KH, KW. ni = 11.
 *               conv2d: an epilogue the fusion pass (graph/passes/fuse.c) folds in, 0 0 as built:
 *               i[9] = act (ts_conv_act): y = relu(y), or y = y < 0 ? f[0] y : y (leaky relu);
 *               then i[10] = 1: y = min(max(y, f[1]), f[2]) (a Max with a constant, a Clip).
 *               The epilogue runs after the bias, per element; a NaN stays NaN in the reference
 *               kernel (as the unfused ops), oneDNN's clamp may make it f[1].
 * The public builders turn 0 stride / dilation / groups into 1.
 *
 * Gradients, with upstream gy:
 *   conv2d:           gx = conv_transpose2d(gy, w, same geometry, out_pad = the rows the floor
 *                     dropped: (H + pt + pb - dh (KH - 1) - 1) mod sh), gw =
 *                     conv2d_grad_weight(x, gy), gbias = reduce_sum(gy, axes N, H, W)
 *   conv_transpose2d: gx = conv2d(gy, w, same geometry), gw = conv2d_grad_weight(gy, x) (gy is
 *                     the convolution's src, x its dst), gbias = reduce_sum(gy, axes N, H, W)
 *   conv2d_grad_weight: not differentiable (no double backward).
 *
 * The CPU backend runs all three on oneDNN primitives (backend/cpu/conv_dnnl.c); the reference
 * kernels here are direct loops, correct rather than fast, and what it falls back to.
 */
#include "graph/op_attrs.h"
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* The convolution geometry of a node (see the top of the file). */
typedef struct conv_geom {
    int64_t N, C, H, W;     /* src */
    int64_t O, OH, OW;      /* dst */
    int64_t KH, KW;         /* kernel */
    int64_t sh, sw, pt, pl, pb, pr, dh, dw, G;
} conv_geom;

/* The output extent of a convolution along one axis (floor), or <= 0 when the dilated kernel
 * does not fit in the padded input. */
static int64_t conv_out_dim(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t d, int64_t s) {
    int64_t span = in + p0 + p1 - d * (k - 1) - 1;
    return span < 0 ? 0 : span / s + 1;
}

/* The attributes of the geometry; conv2d's decoder reads them for all three ops, which share
 * i[0..8] (graph/op_attrs.def). */
static void geom_attrs(conv_geom *q, const ts_node *n) {
    ts_attrs_conv2d a = TS_NODE_ATTRS(conv2d, n);
    q->sh = a.stride_h, q->sw = a.stride_w;
    q->pt = a.pad_top, q->pl = a.pad_left, q->pb = a.pad_bottom, q->pr = a.pad_right;
    q->dh = a.dilation_h, q->dw = a.dilation_w;
    q->G = a.groups;
}

/* The geometry of a conv2d / conv_transpose2d / conv2d_grad_weight node whose shapes have been
 * inferred. */
static void node_geom(const ts_graph *g, const ts_node *n, conv_geom *q) {
    geom_attrs(q, n);
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]], *o = &g->vals[n->out[0]];
    const ts_val *src = a, *dst = o, *w = b;
    if (n->op == TS_OP_CONV_TRANSPOSE2D) src = o, dst = a;
    if (n->op == TS_OP_CONV2D_GRAD_WEIGHT) src = a, dst = b, w = o;
    q->N = src->shape[0], q->C = src->shape[1], q->H = src->shape[2], q->W = src->shape[3];
    q->O = dst->shape[1], q->OH = dst->shape[2], q->OW = dst->shape[3];
    q->KH = w->shape[2], q->KW = w->shape[3];
}

/* ------------------------------------------------------------------ shape rules */

static ts_status need_f32_rank(const ts_graph *g, const ts_node *n, int k, int rank, const char *what) {
    const ts_val *v = &g->vals[n->in[k]];
    const char *op = ts_op_get(n->op)->name;
    if (v->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: %s %s has dtype %s; this op takes f32", op, what, VS(g, n->in[k]),
                      ts_dtype_name(v->dtype));
    if (v->ndim != rank)
        return ts_err(TS_ERR_SHAPE, "op %s: %s %s must have rank %d (%s)", op, what, VS(g, n->in[k]), rank,
                      rank == 4 ? (k == 1 ? "[O, C/groups, KH, KW]" : "[N, C, H, W]") : "[channels]");
    return TS_OK;
}

static ts_status check_attrs(const ts_node *n) {
    const char *op = ts_op_get(n->op)->name;
    conv_geom q;
    geom_attrs(&q, n);
    if (q.sh < 1 || q.sw < 1)
        return ts_err(TS_ERR_ARG, "op %s: stride (%lld, %lld) must be >= 1", op, (long long)q.sh, (long long)q.sw);
    if (q.pt < 0 || q.pl < 0 || q.pb < 0 || q.pr < 0)
        return ts_err(TS_ERR_ARG, "op %s: pads {top %lld, left %lld, bottom %lld, right %lld} must be >= 0", op,
                      (long long)q.pt, (long long)q.pl, (long long)q.pb, (long long)q.pr);
    if (q.dh < 1 || q.dw < 1)
        return ts_err(TS_ERR_ARG, "op %s: dilation (%lld, %lld) must be >= 1", op, (long long)q.dh, (long long)q.dw);
    if (q.G < 1) return ts_err(TS_ERR_ARG, "op %s: groups %lld must be >= 1", op, (long long)q.G);
    return TS_OK;
}

static void set_out4(ts_graph *g, const ts_node *n, int64_t a, int64_t b, int64_t c, int64_t d) {
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = 4;
    o->shape[0] = a, o->shape[1] = b, o->shape[2] = c, o->shape[3] = d;
}

/* The output extents of the convolution of src (H, W) under node n's attributes, with the
 * kernel (KH, KW); an error naming the op when the kernel does not fit. */
static ts_status conv_out_hw(const ts_graph *g, const ts_node *n, int src, int64_t H, int64_t W, int64_t KH,
                             int64_t KW, int64_t *OH, int64_t *OW) {
    conv_geom q;
    geom_attrs(&q, n);
    *OH = conv_out_dim(H, q.pt, q.pb, KH, q.dh, q.sh);
    *OW = conv_out_dim(W, q.pl, q.pr, KW, q.dw, q.sw);
    if (*OH < 1 || *OW < 1)
        return ts_err(TS_ERR_SHAPE,
                      "op %s: the kernel %lldx%lld (dilation %lld, %lld: it spans %lldx%lld) is bigger than "
                      "the padded input %s (H %lld + pads %lld + %lld, W %lld + pads %lld + %lld)",
                      ts_op_get(n->op)->name, (long long)KH, (long long)KW, (long long)q.dh, (long long)q.dw,
                      (long long)(q.dh * (KH - 1) + 1), (long long)(q.dw * (KW - 1) + 1), VS(g, src),
                      (long long)H, (long long)q.pt, (long long)q.pb, (long long)W, (long long)q.pl,
                      (long long)q.pr);
    return TS_OK;
}

/* The bias (input 2, optional) is [channels]. */
static ts_status check_bias(const ts_graph *g, const ts_node *n, int64_t channels) {
    if (n->nin < 3 || n->in[2] < 0) return TS_OK;
    ts_status s = need_f32_rank(g, n, 2, 1, "bias");
    if (s) return s;
    if (g->vals[n->in[2]].shape[0] != channels)
        return ts_err(TS_ERR_SHAPE, "op %s: bias %s must be [%lld], one value per output channel",
                      ts_op_get(n->op)->name, VS(g, n->in[2]), (long long)channels);
    return TS_OK;
}

static ts_status infer_conv2d(ts_graph *g, ts_node *n) {
    ts_status s = need_f32_rank(g, n, 0, 4, "input x");
    if (!s) s = need_f32_rank(g, n, 1, 4, "weight w");
    if (!s) s = check_attrs(n);
    if (s) return s;
    ts_attrs_conv2d at = TS_NODE_ATTRS(conv2d, n);
    if (at.act < TS_CONV_ACT_NONE || at.act > TS_CONV_ACT_LEAKY_RELU || at.clamp < 0 || at.clamp > 1)
        return ts_err(TS_ERR_ARG, "op conv2d: epilogue act %lld / clamp %lld is not one conv2d knows", (long long)at.act,
                      (long long)at.clamp);
    const ts_val *x = &g->vals[n->in[0]], *w = &g->vals[n->in[1]];
    int64_t G = at.groups, C = x->shape[1], O = w->shape[0];
    if (C % G || O % G)
        return ts_err(TS_ERR_ARG, "op conv2d: groups %lld must divide the input channels of x %s (%lld) and the "
                      "output channels of w %s (%lld)", (long long)G, VS(g, n->in[0]), (long long)C,
                      VS(g, n->in[1]), (long long)O);
    if (w->shape[1] != C / G)
        return ts_err(TS_ERR_SHAPE, "op conv2d: channel mismatch: x %s has %lld channels, so with %lld group%s w "
                      "must be [O, %lld, KH, KW], but w is %s", VS(g, n->in[0]), (long long)C, (long long)G,
                      G > 1 ? "s" : "", (long long)(C / G), VS(g, n->in[1]));
    int64_t OH, OW;
    s = conv_out_hw(g, n, n->in[0], x->shape[2], x->shape[3], w->shape[2], w->shape[3], &OH, &OW);
    if (!s) s = check_bias(g, n, O);
    if (s) return s;
    set_out4(g, n, x->shape[0], O, OH, OW);
    return TS_OK;
}

static ts_status infer_conv_transpose2d(ts_graph *g, ts_node *n) {
    ts_status s = need_f32_rank(g, n, 0, 4, "input x");
    if (!s) s = need_f32_rank(g, n, 1, 4, "weight w");
    if (!s) s = check_attrs(n);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]], *w = &g->vals[n->in[1]];
    conv_geom q;
    geom_attrs(&q, n);
    ts_attrs_conv_transpose2d ta = TS_NODE_ATTRS(conv_transpose2d, n);
    int64_t oph = ta.out_pad_h, opw = ta.out_pad_w;
    if (oph < 0 || opw < 0 || oph >= q.sh || opw >= q.sw)
        return ts_err(TS_ERR_ARG, "op conv_transpose2d: output padding (%lld, %lld) must be >= 0 and less than "
                      "the stride (%lld, %lld)", (long long)oph, (long long)opw, (long long)q.sh, (long long)q.sw);
    int64_t C = x->shape[1];
    if (w->shape[0] != C)
        return ts_err(TS_ERR_SHAPE, "op conv_transpose2d: channel mismatch: x %s has %lld channels, w %s must be "
                      "[%lld, O/groups, KH, KW]", VS(g, n->in[0]), (long long)C, VS(g, n->in[1]), (long long)C);
    if (C % q.G)
        return ts_err(TS_ERR_ARG, "op conv_transpose2d: groups %lld must divide the channels of x %s (%lld)",
                      (long long)q.G, VS(g, n->in[0]), (long long)C);
    int64_t O = w->shape[1] * q.G, KH = w->shape[2], KW = w->shape[3];
    int64_t OH = q.sh * (x->shape[2] - 1) + oph + q.dh * (KH - 1) + 1 - q.pt - q.pb;
    int64_t OW = q.sw * (x->shape[3] - 1) + opw + q.dw * (KW - 1) + 1 - q.pl - q.pr;
    if (OH < 1 || OW < 1)
        return ts_err(TS_ERR_SHAPE, "op conv_transpose2d: the pads {%lld, %lld, %lld, %lld} leave no output for x "
                      "%s and w %s (%lld x %lld)", (long long)q.pt, (long long)q.pl, (long long)q.pb,
                      (long long)q.pr, VS(g, n->in[0]), VS(g, n->in[1]), (long long)OH, (long long)OW);
    s = check_bias(g, n, O);
    if (s) return s;
    set_out4(g, n, x->shape[0], O, OH, OW);
    return TS_OK;
}

static ts_status infer_conv2d_grad_weight(ts_graph *g, ts_node *n) {
    ts_status s = need_f32_rank(g, n, 0, 4, "input x");
    if (!s) s = need_f32_rank(g, n, 1, 4, "output gradient gy");
    if (!s) s = check_attrs(n);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]], *gy = &g->vals[n->in[1]];
    ts_attrs_conv2d_grad_weight wa = TS_NODE_ATTRS(conv2d_grad_weight, n);
    int64_t G = wa.groups, KH = wa.kernel_h, KW = wa.kernel_w, C = x->shape[1], O = gy->shape[1];
    if (KH < 1 || KW < 1)
        return ts_err(TS_ERR_ARG, "op conv2d_grad_weight: kernel %lldx%lld must be >= 1x1", (long long)KH,
                      (long long)KW);
    if (C % G || O % G)
        return ts_err(TS_ERR_ARG, "op conv2d_grad_weight: groups %lld must divide the channels of x %s and gy %s",
                      (long long)G, VS(g, n->in[0]), VS(g, n->in[1]));
    int64_t OH, OW;
    s = conv_out_hw(g, n, n->in[0], x->shape[2], x->shape[3], KH, KW, &OH, &OW);
    if (s) return s;
    if (gy->shape[0] != x->shape[0] || gy->shape[2] != OH || gy->shape[3] != OW)
        return ts_err(TS_ERR_SHAPE, "op conv2d_grad_weight: gy %s must be [%lld, O, %lld, %lld] for x %s",
                      VS(g, n->in[1]), (long long)x->shape[0], (long long)OH, (long long)OW, VS(g, n->in[0]));
    set_out4(g, n, O, C / G, KH, KW);
    return TS_OK;
}

/* ------------------------------------------------------------------ builders */

static void opts_attrs(const ts_conv_opts *o, ts_attrs *at) {
    memset(at, 0, sizeof *at);
    ts_conv_opts z = {{0, 0}, {0, 0, 0, 0}, {0, 0}, 0};
    if (!o) o = &z;
    at->i[0] = o->stride[0] ? o->stride[0] : 1;
    at->i[1] = o->stride[1] ? o->stride[1] : 1;
    for (int k = 0; k < 4; k++) at->i[2 + k] = o->pad[k];
    at->i[6] = o->dilation[0] ? o->dilation[0] : 1;
    at->i[7] = o->dilation[1] ? o->dilation[1] : 1;
    at->i[8] = o->groups ? o->groups : 1;
    at->ni = 11;
}

static ts_value conv_node(ts_graph *g, int op, ts_value a, ts_value b, ts_value bias, const ts_attrs *at) {
    if (a == TS_NONE || b == TS_NONE) return TS_NONE;
    int in[3] = {a, b, bias};
    return ts_node_add(g, op, bias == TS_NONE ? 2 : 3, in, at, NULL);
}

ts_value ts_conv2d(ts_graph *g, ts_value x, ts_value w, ts_value bias, const ts_conv_opts *opts) {
    ts_attrs at;
    opts_attrs(opts, &at);
    return conv_node(g, TS_OP_CONV2D, x, w, bias, &at);
}

ts_value ts_conv_transpose2d(ts_graph *g, ts_value x, ts_value w, ts_value bias, const ts_conv_opts *opts,
                             const int out_pad[2]) {
    ts_attrs at;
    opts_attrs(opts, &at);
    if (out_pad) at.i[9] = out_pad[0], at.i[10] = out_pad[1];
    return conv_node(g, TS_OP_CONV_TRANSPOSE2D, x, w, bias, &at);
}

/* ------------------------------------------------------------------ gradients */

static ts_value bias_grad(ts_graph *g, ts_value gy) {
    return ts_reduce_sum(g, gy, 3, (int[]){0, 2, 3}, 0);
}

static ts_value grad_weight_node(ts_graph *g, const ts_node *n, ts_value src, ts_value gdst, int64_t KH,
                                 int64_t KW) {
    ts_attrs at = n->attr;
    at.i[9] = KH, at.i[10] = KW;
    return conv_node(g, TS_OP_CONV2D_GRAD_WEIGHT, src, gdst, TS_NONE, &at);
}

static ts_status grad_conv2d(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin) {
    ts_value gy = gout[0];
    if (gy == TS_NONE) return TS_OK;
    conv_geom q;
    node_geom(g, n, &q);
    ts_attrs at = n->attr;
    at.i[9] = (q.H + q.pt + q.pb - q.dh * (q.KH - 1) - 1) % q.sh;
    at.i[10] = (q.W + q.pl + q.pr - q.dw * (q.KW - 1) - 1) % q.sw;
    gin[0] = conv_node(g, TS_OP_CONV_TRANSPOSE2D, gy, n->in[1], TS_NONE, &at);
    gin[1] = grad_weight_node(g, n, n->in[0], gy, q.KH, q.KW);
    if (n->nin > 2 && n->in[2] >= 0) gin[2] = bias_grad(g, gy);
    return TS_OK;
}

static ts_status grad_conv_transpose2d(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin) {
    ts_value gy = gout[0];
    if (gy == TS_NONE) return TS_OK;
    conv_geom q;
    node_geom(g, n, &q);
    ts_attrs at = n->attr;
    at.i[9] = at.i[10] = 0;
    gin[0] = conv_node(g, TS_OP_CONV2D, gy, n->in[1], TS_NONE, &at);
    gin[1] = grad_weight_node(g, n, gy, n->in[0], q.KH, q.KW);
    if (n->nin > 2 && n->in[2] >= 0) gin[2] = bias_grad(g, gy);
    return TS_OK;
}

/* ------------------------------------------------------------------ reference kernels */

/* The range of output positions [*lo, *hi) whose src coordinate o s - p + k d lies in [0, in). */
static void valid_range(int64_t in, int64_t out, int64_t s, int64_t p, int64_t kd, int64_t *lo, int64_t *hi) {
    int64_t off = kd - p; /* src = o s + off */
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = in - off <= 0 ? 0 : (in - off - 1) / s + 1;
    *lo = l;
    *hi = h < out ? h : out;
    if (*hi < *lo) *hi = *lo;
}

/* dst[n, o, oh, ow] = bias[o] + sum_{c, kh, kw} src[n, g C/G + c, oh sh - pt + kh dh, ow sw - pl + kw dw]
 *                                              w[o, c, kh, kw]
 * One (n, o) output plane per task: accumulate each (c, kh, kw) tap over the plane's rows. */
static void conv_fwd_ref(const conv_geom *q, const float *src, const float *w, const float *bias, float *dst) {
    int64_t Cg = q->C / q->G, Og = q->O / q->G, plane = q->OH * q->OW;
#pragma omp parallel for schedule(dynamic, 1) if (q->N * q->O * plane * Cg * q->KH * q->KW > 32768)
    for (int64_t t = 0; t < q->N * q->O; t++) {
        int64_t n = t / q->O, o = t % q->O, c0 = o / Og * Cg;
        float *y = dst + t * plane;
        float b = bias ? bias[o] : 0.f;
        for (int64_t i = 0; i < plane; i++) y[i] = b;
        for (int64_t c = 0; c < Cg; c++) {
            const float *x = src + ((n * q->C + c0 + c) * q->H) * q->W;
            for (int64_t kh = 0; kh < q->KH; kh++) {
                int64_t oh0, oh1;
                valid_range(q->H, q->OH, q->sh, q->pt, kh * q->dh, &oh0, &oh1);
                for (int64_t kw = 0; kw < q->KW; kw++) {
                    float wv = w[((o * Cg + c) * q->KH + kh) * q->KW + kw];
                    int64_t ow0, ow1;
                    valid_range(q->W, q->OW, q->sw, q->pl, kw * q->dw, &ow0, &ow1);
                    for (int64_t oh = oh0; oh < oh1; oh++) {
                        const float *xr = x + (oh * q->sh - q->pt + kh * q->dh) * q->W - q->pl + kw * q->dw;
                        float *yr = y + oh * q->OW;
                        for (int64_t ow = ow0; ow < ow1; ow++) yr[ow] += wv * xr[ow * q->sw];
                    }
                }
            }
        }
    }
}

/* src[n, g C/G + c, h, w] = bias[g C/G + c] + sum over (o in group g, kh, kw, oh, ow) with
 * h = oh sh - pt + kh dh, w = ow sw - pl + kw dw of dst[n, o, oh, ow] wgt[o, c, kh, kw]
 * One (n, channel) src plane per task, so every task writes only its own plane. */
static void conv_bwd_data_ref(const conv_geom *q, const float *dst, const float *w, const float *bias, float *src) {
    int64_t Cg = q->C / q->G, Og = q->O / q->G, plane = q->H * q->W;
#pragma omp parallel for schedule(dynamic, 1) if (q->N * q->C * q->OH * q->OW * Og * q->KH * q->KW > 32768)
    for (int64_t t = 0; t < q->N * q->C; t++) {
        int64_t n = t / q->C, ch = t % q->C, grp = ch / Cg, c = ch % Cg;
        float *x = src + t * plane;
        float b = bias ? bias[ch] : 0.f;
        for (int64_t i = 0; i < plane; i++) x[i] = b;
        for (int64_t oo = 0; oo < Og; oo++) {
            int64_t o = grp * Og + oo;
            const float *y = dst + (n * q->O + o) * q->OH * q->OW;
            for (int64_t kh = 0; kh < q->KH; kh++) {
                int64_t oh0, oh1;
                valid_range(q->H, q->OH, q->sh, q->pt, kh * q->dh, &oh0, &oh1);
                for (int64_t kw = 0; kw < q->KW; kw++) {
                    float wv = w[((o * Cg + c) * q->KH + kh) * q->KW + kw];
                    int64_t ow0, ow1;
                    valid_range(q->W, q->OW, q->sw, q->pl, kw * q->dw, &ow0, &ow1);
                    for (int64_t oh = oh0; oh < oh1; oh++) {
                        float *xr = x + (oh * q->sh - q->pt + kh * q->dh) * q->W - q->pl + kw * q->dw;
                        const float *yr = y + oh * q->OW;
                        for (int64_t ow = ow0; ow < ow1; ow++) xr[ow * q->sw] += wv * yr[ow];
                    }
                }
            }
        }
    }
}

/* gw[o, c, kh, kw] = sum_{n, oh, ow} gdst[n, o, oh, ow] src[n, g C/G + c, oh sh - pt + kh dh,
 *                                                             ow sw - pl + kw dw]
 * One weight element per task, summed in double. */
static void conv_bwd_weight_ref(const conv_geom *q, const float *src, const float *gdst, float *gw) {
    int64_t Cg = q->C / q->G, Og = q->O / q->G, total = q->O * Cg * q->KH * q->KW;
#pragma omp parallel for schedule(static) if (total * q->N * q->OH * q->OW > 32768)
    for (int64_t t = 0; t < total; t++) {
        int64_t kw = t % q->KW, kh = t / q->KW % q->KH, c = t / (q->KW * q->KH) % Cg, o = t / (q->KW * q->KH * Cg);
        int64_t ch = o / Og * Cg + c, oh0, oh1, ow0, ow1;
        valid_range(q->H, q->OH, q->sh, q->pt, kh * q->dh, &oh0, &oh1);
        valid_range(q->W, q->OW, q->sw, q->pl, kw * q->dw, &ow0, &ow1);
        double acc = 0;
        for (int64_t n = 0; n < q->N; n++) {
            const float *x = src + (n * q->C + ch) * q->H * q->W;
            const float *y = gdst + (n * q->O + o) * q->OH * q->OW;
            for (int64_t oh = oh0; oh < oh1; oh++) {
                const float *xr = x + (oh * q->sh - q->pt + kh * q->dh) * q->W - q->pl + kw * q->dw;
                const float *yr = y + oh * q->OW;
                float s = 0.f;
                for (int64_t ow = ow0; ow < ow1; ow++) s += yr[ow] * xr[ow * q->sw];
                acc += s;
            }
        }
        gw[t] = (float)acc;
    }
}

int ts_conv_has_epilogue(const ts_node *n) {
    return (n->op == TS_OP_CONV2D || n->op == TS_OP_CONV2D_I8) && (n->attr.i[9] != TS_CONV_ACT_NONE || n->attr.i[10] != 0);
}

/* y[0 .. count) = clamp(act(y)) as conv2d's i[9], i[10] say (the top of the file) */
void ts_conv_epilogue(const ts_node *n, float *y, int64_t count) {
    if (!ts_conv_has_epilogue(n)) return;
    ts_attrs_conv2d at = TS_NODE_ATTRS(conv2d, n);
    float a = at.act_alpha, lo = at.lo, hi = at.hi;
    if (at.act == TS_CONV_ACT_RELU)
        for (int64_t i = 0; i < count; i++) y[i] = y[i] < 0.f ? 0.f : y[i];
    if (at.act == TS_CONV_ACT_LEAKY_RELU)
        for (int64_t i = 0; i < count; i++) y[i] = y[i] < 0.f ? a * y[i] : y[i];
    if (at.clamp)
        for (int64_t i = 0; i < count; i++) {
            float v = y[i] < lo ? lo : y[i];
            y[i] = v > hi ? hi : v;
        }
}

static ts_status conv2d_kernel(const ts_kargs *k) {
    conv_geom q;
    node_geom(k->g, k->node, &q);
    conv_fwd_ref(&q, k->in[0], k->in[1], k->node->nin > 2 ? k->in[2] : NULL, k->out[0]);
    ts_conv_epilogue(k->node, k->out[0], q.N * q.O * q.OH * q.OW);
    return TS_OK;
}
static ts_status conv_transpose2d_kernel(const ts_kargs *k) {
    conv_geom q;
    node_geom(k->g, k->node, &q);
    conv_bwd_data_ref(&q, k->in[0], k->in[1], k->node->nin > 2 ? k->in[2] : NULL, k->out[0]);
    return TS_OK;
}
static ts_status conv2d_grad_weight_kernel(const ts_kargs *k) {
    conv_geom q;
    node_geom(k->g, k->node, &q);
    conv_bwd_weight_ref(&q, k->in[0], k->in[1], k->out[0]);
    return TS_OK;
}

const ts_op_def ts_opdef_conv2d = {"conv2d", 2, 3, 1, 0, infer_conv2d, grad_conv2d, conv2d_kernel, NULL};
const ts_op_def ts_opdef_conv_transpose2d = {"conv_transpose2d", 2, 3, 1, 0, infer_conv_transpose2d,
                                             grad_conv_transpose2d, conv_transpose2d_kernel, NULL};
const ts_op_def ts_opdef_conv2d_grad_weight = {"conv2d_grad_weight", 2, 2, 1, 0, infer_conv2d_grad_weight, NULL,
                                               conv2d_grad_weight_kernel, NULL};
