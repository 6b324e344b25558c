/*
 * conv.c — ONNX mappings of convolution and pooling onto tessera's vision ops: Conv,
 * ConvTranspose (2-D, and 1-D as 2-D with a height of 1), the integer convolutions ConvInteger and
 * QLinearConv, BatchNormalization (inference; here because it folds into the Conv before it),
 * MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, MaxUnpool.
 *
 *   ConvInteger: y (i32) = conv(x - x_zero_point, w - w_zero_point), computed as an f32 ts_conv2d
 *                (exact: every sum of 8-bit products stays below 2^24, checked), padding with zeros
 *                after the zero point is taken off (the padded x equals its zero point)
 *   QLinearConv: y = saturate(round((conv(x - x_zp, w - w_zp) + B) * (x_scale w_scale / y_scale)) + y_zp),
 *                w_scale / w_zero_point per output channel or scalars, B i32 [M] optional
 *   MaxUnpool:   y = zeros of the unpooled shape (from kernel_shape / strides / pads), y.flat[indices]
 *                = x (a ts_scatter_elements over the flattened result); a larger output_shape, known
 *                at import, zero-pads that result at the end of each spatial dim
 * The integer convolutions are 2-D only (x [N, C, H, W]).
 *
 * BatchNormalization with constant statistics is folded into the Conv before it when the Conv's
 * output feeds only it and the Conv's weights are constants: W' = W s, b' = (b - mean) s + beta
 * with s = gamma / sqrt(var + eps), one convolution instead of three ops. Otherwise it is
 * y = x scale + shift with per-channel constants (computed in the graph when scale and bias are
 * trainable parameters; the running mean and variance stay constants then, as buffers).
 */

#include "onnx/map/map.h"

#include <float.h>
#include <math.h>
#include <stdio.h>


/* The geometry of a Conv / ConvTranspose / pool node over the spatial dims of x (nsp of them,
 * 1 or 2), read from its attributes. */
typedef struct {
    int nsp;
    int64_t k[2], s[2], d[2], p[4]; /* kernel, strides, dilations, pads {begin..., end...} (ONNX order) */
    int64_t group;
    int64_t out_pad[2], out_shape[2];
    int has_out_shape;
    const char *auto_pad;
} geom;

/* Read the attributes common to convolutions and pools; kernel from w (kw != NULL) or from
 * kernel_shape. 0, or -1 after refusing. */
static int read_geom(ts_onnx_ctx *cx, const ts_onnx_node *n, int nsp, const int64_t *kw, int pool, geom *q) {
    int64_t v[8];
    memset(q, 0, sizeof *q);
    q->nsp = nsp;
    for (int i = 0; i < 2; i++) q->k[i] = q->s[i] = q->d[i] = 1;
    int nk = onnx_attr_ints(cx, n, "kernel_shape", v, 8);
    if (nk >= 0) {
        if (nk != nsp) return onnx_invalid(cx, n, "kernel_shape has %d entries for %d spatial dims", nk, nsp), -1;
        for (int i = 0; i < nsp; i++) {
            if (kw && v[i] != kw[i]) return onnx_invalid(cx, n, "kernel_shape differs from the weight's"), -1;
            q->k[i] = v[i];
        }
    } else if (kw) {
        for (int i = 0; i < nsp; i++) q->k[i] = kw[i];
    } else if (pool) {
        return onnx_invalid(cx, n, "no kernel_shape"), -1;
    }
    static const char *const names[3] = {"strides", "dilations", "pads"};
    for (int a = 0; a < 3; a++) {
        int cnt = onnx_attr_ints(cx, n, names[a], v, 8), want = a == 2 ? 2 * nsp : nsp;
        if (cnt < 0) continue;
        if (cnt != want) return onnx_invalid(cx, n, "%s has %d entries; %d expected", names[a], cnt, want), -1;
        for (int i = 0; i < cnt; i++) {
            if (a < 2 && v[i] < 1) return onnx_invalid(cx, n, "%s entry %d is %lld", names[a], i, (long long)v[i]), -1;
            if (a == 2 && v[i] < 0) return onnx_unsupported(cx, n, "negative pads"), -1;
        }
        if (a == 0) memcpy(q->s, v, sizeof(int64_t) * (size_t)nsp);
        if (a == 1) memcpy(q->d, v, sizeof(int64_t) * (size_t)nsp);
        if (a == 2) memcpy(q->p, v, sizeof(int64_t) * (size_t)(2 * nsp));
    }
    q->auto_pad = onnx_attr_string(cx, n, "auto_pad", "NOTSET");
    if (strcmp(q->auto_pad, "NOTSET") && strcmp(q->auto_pad, "VALID") && strcmp(q->auto_pad, "SAME_UPPER") &&
        strcmp(q->auto_pad, "SAME_LOWER"))
        return onnx_invalid(cx, n, "auto_pad '%s'", q->auto_pad), -1;
    if (!strcmp(q->auto_pad, "VALID")) memset(q->p, 0, sizeof q->p);
    return cx->node_refused ? -1 : 0;
}

/* SAME_UPPER / SAME_LOWER pads for input extents in[] (output = ceil(in / stride)). */
static void same_pads(geom *q, const int64_t *in) {
    if (strncmp(q->auto_pad, "SAME", 4)) return;
    for (int i = 0; i < q->nsp; i++) {
        int64_t out = (in[i] + q->s[i] - 1) / q->s[i];
        int64_t total = (out - 1) * q->s[i] + q->d[i] * (q->k[i] - 1) + 1 - in[i];
        if (total < 0) total = 0;
        int64_t small = total / 2;
        int upper = !strcmp(q->auto_pad, "SAME_UPPER");
        q->p[i] = upper ? small : total - small;
        q->p[q->nsp + i] = upper ? total - small : small;
    }
}

/* ts_conv_opts from q: 1-D geometry becomes a height of 1. */
static ts_conv_opts conv_opts(const geom *q) {
    ts_conv_opts o = {{1, 1}, {0, 0, 0, 0}, {1, 1}, (int)q->group};
    int off = q->nsp == 1; /* the spatial dim is W */
    for (int i = 0; i < q->nsp; i++) {
        o.stride[off + i] = (int)q->s[i];
        o.dilation[off + i] = (int)q->d[i];
        o.pad[off + i] = (int)q->p[i];
        o.pad[2 + off + i] = (int)q->p[q->nsp + i];
    }
    return o;
}

/* x [N, C, L] <-> [N, C, 1, L] for 1-D ops. */
static ts_value to4d(ts_graph *g, ts_value x) {
    int64_t sh[TS_MAX_DIMS];
    if (ts_value_shape(g, x, sh) != 3) return x;
    int64_t s4[4] = {sh[0], sh[1], 1, sh[2]};
    return ts_reshape(g, x, 4, s4);
}
static ts_value from4d(ts_graph *g, ts_value y, int nsp) {
    int64_t sh[TS_MAX_DIMS];
    if (nsp != 1 || ts_value_shape(g, y, sh) != 4) return y;
    int64_t s3[3] = {sh[0], sh[1], sh[3]};
    return ts_reshape(g, y, 3, s3);
}

/* The checks and geometry of a Conv node (also when BatchNormalization re-builds it). */
static int conv_geom(ts_onnx_ctx *cx, const ts_onnx_node *n, geom *q, int64_t *xs, int64_t *ws) {
    int rx = onnx_in_shape(cx, n, 0, xs), rw = onnx_in_shape(cx, n, 1, ws);
    if (rx != 4 && rx != 3) return onnx_unsupported(cx, n, "a %d-D input (1-D and 2-D convolutions only)", rx - 2), -1;
    if (rw != rx) return onnx_invalid(cx, n, "the weight has rank %d for an input of rank %d", rw, rx), -1;
    if (onnx_need_f32(cx, n, 0, 2)) return -1;
    if (read_geom(cx, n, rx - 2, ws + 2, 0, q)) return -1;
    q->group = onnx_attr_int(cx, n, "group", 1);
    if (q->group < 1 || xs[1] % q->group || ws[0] % q->group || ws[1] * q->group != xs[1])
        return onnx_invalid(cx, n, "group %lld does not fit %lld input channels and a weight of %lld x %lld", (long long)q->group,
                            (long long)xs[1], (long long)ws[0], (long long)ws[1]), -1;
    same_pads(q, xs + 2);
    for (int i = 0; i < q->nsp; i++)
        if (xs[2 + i] + q->p[i] + q->p[q->nsp + i] < q->d[i] * (q->k[i] - 1) + 1)
            return onnx_invalid(cx, n, "the kernel is larger than the padded input"), -1;
    if (onnx_has_in(n, 2)) {
        int64_t bs[TS_MAX_DIMS];
        if (onnx_in_shape(cx, n, 2, bs) != 1 || bs[0] != ws[0]) return onnx_invalid(cx, n, "the bias is not [%lld]", (long long)ws[0]), -1;
    }
    return 0;
}

static ts_status imp_conv(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    geom q;
    int64_t xs[TS_MAX_DIMS], ws[TS_MAX_DIMS];
    if (conv_geom(cx, n, &q, xs, ws)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_conv_opts o = conv_opts(&q);
    ts_value w = onnx_in(cx, n, 1);
    if (q.nsp == 1) w = to4d(g, w);
    ts_value y = ts_conv2d(g, to4d(g, onnx_in(cx, n, 0)), w, onnx_in(cx, n, 2), &o);
    return onnx_set(cx, n, 0, from4d(g, y, q.nsp));
}

static ts_status imp_conv_transpose(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    geom q;
    int64_t xs[TS_MAX_DIMS], ws[TS_MAX_DIMS], v[8];
    int rx = onnx_in_shape(cx, n, 0, xs), rw = onnx_in_shape(cx, n, 1, ws);
    if (rx != 4 && rx != 3) return onnx_unsupported(cx, n, "a %d-D input (1-D and 2-D only)", rx - 2);
    if (rw != rx) return onnx_invalid(cx, n, "the weight has rank %d for an input of rank %d", rw, rx);
    if (onnx_need_f32(cx, n, 0, 2)) return TS_ERR_UNSUPPORTED;
    if (read_geom(cx, n, rx - 2, ws + 2, 0, &q)) return TS_ERR_UNSUPPORTED;
    q.group = onnx_attr_int(cx, n, "group", 1);
    if (q.group < 1 || xs[1] != ws[0] || xs[1] % q.group) return onnx_invalid(cx, n, "group / channels do not fit");
    int nop = onnx_attr_ints(cx, n, "output_padding", v, 8);
    for (int i = 0; i < q.nsp && nop >= 0; i++) q.out_pad[i] = v[i];
    if (nop >= 0 && nop != q.nsp) return onnx_invalid(cx, n, "output_padding has %d entries", nop);
    int nos = onnx_attr_ints(cx, n, "output_shape", v, 8);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (nos >= 0) { /* the last nsp entries give the output extents: pads follow from them */
        if (nos < q.nsp) return onnx_invalid(cx, n, "output_shape has %d entries", nos);
        for (int i = 0; i < q.nsp; i++) {
            int64_t want = v[nos - q.nsp + i];
            int64_t total = q.s[i] * (xs[2 + i] - 1) + q.out_pad[i] + q.d[i] * (q.k[i] - 1) + 1 - want;
            if (total < 0) { /* rows past the full result: added at the end, as output padding */
                q.out_pad[i] -= total;
                total = 0;
            }
            int lower = !strcmp(q.auto_pad, "SAME_LOWER");
            q.p[i] = lower ? total - total / 2 : total / 2;
            q.p[q.nsp + i] = total - q.p[i];
        }
    } else if (!strncmp(q.auto_pad, "SAME", 4)) { /* output = input x stride */
        for (int i = 0; i < q.nsp; i++) {
            int64_t total = q.s[i] * (xs[2 + i] - 1) + q.out_pad[i] + q.d[i] * (q.k[i] - 1) + 1 - xs[2 + i] * q.s[i];
            if (total < 0) return onnx_unsupported(cx, n, "SAME padding that would need negative pads");
            int lower = !strcmp(q.auto_pad, "SAME_LOWER");
            q.p[i] = lower ? total - total / 2 : total / 2;
            q.p[q.nsp + i] = total - q.p[i];
        }
    }
    for (int i = 0; i < q.nsp; i++)
        if (q.out_pad[i] < 0 || q.out_pad[i] >= q.s[i]) {
            if (q.out_pad[i] >= q.s[i] && q.out_pad[i] < q.d[i])
                return onnx_unsupported(cx, n, "output_padding %lld not below the stride %lld", (long long)q.out_pad[i], (long long)q.s[i]);
            return onnx_invalid(cx, n, "output_padding %lld must be in [0, stride %lld)", (long long)q.out_pad[i], (long long)q.s[i]);
        }
    if (onnx_has_in(n, 2)) {
        int64_t bs[TS_MAX_DIMS];
        if (onnx_in_shape(cx, n, 2, bs) != 1 || bs[0] != ws[1] * q.group) return onnx_invalid(cx, n, "the bias does not match the output channels");
    }
    ts_graph *g = cx->g;
    ts_conv_opts o = conv_opts(&q);
    int op[2] = {0, 0};
    for (int i = 0; i < q.nsp; i++) op[(q.nsp == 1) + i] = (int)q.out_pad[i];
    ts_value w = onnx_in(cx, n, 1);
    if (q.nsp == 1) w = to4d(g, w);
    ts_value y = ts_conv_transpose2d(g, to4d(g, onnx_in(cx, n, 0)), w, onnx_in(cx, n, 2), &o, op);
    return onnx_set(cx, n, 0, from4d(g, y, q.nsp));
}

/* ------------------------------------------------------------------ ConvInteger, QLinearConv */

/* Conv attributes of node n for x [N, C, H, W] and a kernel [KH, KW] into o; -1 after refusing. */
static int int_conv_opts(ts_onnx_ctx *cx, const ts_onnx_node *n, const int64_t *xs, const int64_t *ks, ts_conv_opts *o) {
    int64_t st[4] = {1, 1}, dl[4] = {1, 1}, pd[8] = {0}, kk[4];
    int nst = onnx_attr_ints(cx, n, "strides", st, 4), ndl = onnx_attr_ints(cx, n, "dilations", dl, 4);
    int npd = onnx_attr_ints(cx, n, "pads", pd, 8), nkk = onnx_attr_ints(cx, n, "kernel_shape", kk, 4);
    int64_t group = onnx_attr_int(cx, n, "group", 1);
    const char *ap = onnx_attr_string(cx, n, "auto_pad", "NOTSET");
    if (cx->node_refused) return -1;
    if ((nst >= 0 && nst != 2) || (ndl >= 0 && ndl != 2) || (npd >= 0 && npd != 4))
        return onnx_invalid(cx, n, "strides / dilations / pads for 2 spatial dims"), -1;
    if (nkk >= 0 && (nkk != 2 || kk[0] != ks[0] || kk[1] != ks[1]))
        return onnx_invalid(cx, n, "kernel_shape does not match the weights"), -1;
    memset(o, 0, sizeof *o);
    for (int i = 0; i < 2; i++) {
        if (st[i] < 1 || dl[i] < 1) return onnx_invalid(cx, n, "a stride or dilation below 1"), -1;
        o->stride[i] = (int)st[i];
        o->dilation[i] = (int)dl[i];
        int64_t b = pd[i], e = pd[i + 2];
        if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID")) { /* SAME_UPPER / SAME_LOWER */
            int64_t out = (xs[2 + i] + st[i] - 1) / st[i];
            int64_t tot = (out - 1) * st[i] + (ks[i] - 1) * dl[i] + 1 - xs[2 + i];
            tot = tot < 0 ? 0 : tot;
            b = !strcmp(ap, "SAME_LOWER") ? tot - tot / 2 : tot / 2;
            e = tot - b;
        } else if (!strcmp(ap, "VALID")) {
            b = e = 0;
        }
        if (b < 0 || e < 0 || b > 1 << 20 || e > 1 << 20)
            return onnx_unsupported(cx, n, "pads %lld, %lld", (long long)b, (long long)e), -1;
        o->pad[i] = (int)b; /* {top, left, bottom, right} */
        o->pad[i + 2] = (int)e;
    }
    if (group < 1 || xs[1] % group) return onnx_invalid(cx, n, "group %lld", (long long)group), -1;
    o->groups = (int)group;
    return 0;
}

/* conv(x - x_zp, w - w_zp) in f32; inputs ix, ixz, iw, iwz (ixz / iwz absent: no zero point).
 * w_zp may be per output channel. TS_NONE after refusing. */
static ts_value int_conv(ts_onnx_ctx *cx, const ts_onnx_node *n, int ix, int ixz, int iw, int iwz) {
    int64_t xs[TS_MAX_DIMS], ws[TS_MAX_DIMS], z[TS_MAX_DIMS];
    const ts_dtype u8[] = {TS_U8};
    if (onnx_need_dtype(cx, n, ix, u8, 1) || onnx_need_dtype(cx, n, iw, u8, 1)) return TS_NONE;
    if (onnx_in_shape(cx, n, ix, xs) != 4 || onnx_in_shape(cx, n, iw, ws) != 4) {
        onnx_unsupported(cx, n, "a convolution other than 2-D");
        return TS_NONE;
    }
    ts_conv_opts o;
    if (int_conv_opts(cx, n, xs, ws + 2, &o)) return TS_NONE;
    if (ws[1] * o.groups != xs[1] || ws[0] % o.groups) {
        onnx_invalid(cx, n, "the weights do not match the input's channels and group");
        return TS_NONE;
    }
    if (ws[1] * ws[2] * ws[3] * 255 * 255 >= ((int64_t)1 << 24)) {
        onnx_unsupported(cx, n, "a window of %lld elements (sums beyond 2^24 would not be exact in f32)",
                         (long long)(ws[1] * ws[2] * ws[3]));
        return TS_NONE;
    }
    for (int k = 0; k < 2; k++) {
        int zi = k ? iwz : ixz;
        if (!onnx_has_in(n, zi)) continue;
        int64_t cnt = ts_numel(onnx_in_shape(cx, n, zi, z), z);
        if (onnx_need_dtype(cx, n, zi, u8, 1)) return TS_NONE;
        if (cnt != 1 && !(k && cnt == ws[0])) {
            onnx_invalid(cx, n, "zero point %d must be a scalar%s", zi, k ? " or one per output channel" : "");
            return TS_NONE;
        }
    }
    if (map_need_nonempty(cx, n, ix) || map_need_nonempty(cx, n, iw)) return TS_NONE;
    ts_graph *g = cx->g;
    ts_value x = ts_cast(g, onnx_in(cx, n, ix), TS_F32), w = ts_cast(g, onnx_in(cx, n, iw), TS_F32);
    if (onnx_has_in(n, ixz)) x = ts_sub(g, x, ts_cast(g, ts_reshape(g, onnx_in(cx, n, ixz), 0, NULL), TS_F32));
    if (onnx_has_in(n, iwz)) {
        int64_t c = ts_numel(onnx_in_shape(cx, n, iwz, z), z), shp[4] = {c, 1, 1, 1};
        w = ts_sub(g, w, ts_cast(g, ts_reshape(g, onnx_in(cx, n, iwz), c == 1 ? 0 : 4, shp), TS_F32));
    }
    return ts_conv2d(g, x, w, TS_NONE, &o);
}

static ts_status imp_conv_integer(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    ts_value y = int_conv(cx, n, 0, 2, 1, 3);
    if (y == TS_NONE) return cx->node_refused ? TS_ERR_UNSUPPORTED : onnx_check(cx, n);
    return onnx_set(cx, n, 0, ts_cast(cx->g, y, TS_I32));
}

static ts_status imp_qlinear_conv(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t s[TS_MAX_DIMS], ws[TS_MAX_DIMS];
    if (onnx_need_f32(cx, n, 1, 1) || onnx_need_f32(cx, n, 4, 4) || onnx_need_f32(cx, n, 6, 6))
        return TS_ERR_UNSUPPORTED;
    if (onnx_need_dtype(cx, n, 7, (const ts_dtype[]){TS_U8}, 1)) return TS_ERR_UNSUPPORTED;
    onnx_in_shape(cx, n, 3, ws);
    for (int k = 1; k < 8; k++) {
        if (k == 3) continue;
        int64_t cnt = ts_numel(onnx_in_shape(cx, n, k, s), s);
        if (cnt != 1 && !((k == 4 || k == 5) && cnt == ws[0]))
            return onnx_invalid(cx, n, "input %d must be a scalar%s", k,
                                k == 4 || k == 5 ? " or one per output channel" : "");
    }
    if (onnx_has_in(n, 8) && (onnx_need_dtype(cx, n, 8, (const ts_dtype[]){TS_I32}, 1) ||
                              onnx_in_shape(cx, n, 8, s) != 1 || s[0] != ws[0]))
        return cx->node_refused ? TS_ERR_UNSUPPORTED : onnx_invalid(cx, n, "B must be i32 [M]");
    ts_value c = int_conv(cx, n, 0, 2, 3, 5);
    if (c == TS_NONE) return cx->node_refused ? TS_ERR_UNSUPPORTED : onnx_check(cx, n);
    ts_graph *g = cx->g;
    int64_t M = ws[0], per[4] = {1, M, 1, 1};
    if (onnx_has_in(n, 8)) c = ts_add(g, c, ts_reshape(g, ts_cast(g, onnx_in(cx, n, 8), TS_F32), 4, per));
    int64_t cw = ts_numel(onnx_in_shape(cx, n, 4, s), s);
    ts_value sw = ts_reshape(g, onnx_in(cx, n, 4), cw == 1 ? 0 : 4, per);
    ts_value scale = ts_div(g, ts_mul(g, ts_reshape(g, onnx_in(cx, n, 1), 0, NULL), sw),
                            ts_reshape(g, onnx_in(cx, n, 6), 0, NULL));
    ts_value q = ts_math(g, TS_MATH_ROUND, ts_mul(g, c, scale), 0, 0);
    q = ts_add(g, q, ts_cast(g, ts_reshape(g, onnx_in(cx, n, 7), 0, NULL), TS_F32));
    q = ts_binary(g, TS_BIN_MIN, ts_binary(g, TS_BIN_MAX, q, map_scalar(g, TS_F32, 0)), map_scalar(g, TS_F32, 255));
    return onnx_set(cx, n, 0, ts_cast(g, q, TS_U8));
}

/* ------------------------------------------------------------------ BatchNormalization */

/* Fold into the producing Conv: 1 when done (output set), 0 when the pattern does not apply. */
static int fold_into_conv(ts_onnx_ctx *cx, const ts_onnx_node *n, const ts_tensor *const st[4], float eps) {
    int pi = onnx_in_producer(cx, n, 0);
    const ts_onnx_node *c = onnx_node_at(cx, pi);
    if (!c || strcmp(c->op_type, "Conv") || onnx_in_consumers(cx, n, 0) != 1) return 0;
    const ts_tensor *w = onnx_known(cx, c, 1), *b = onnx_has_in(c, 2) ? onnx_known(cx, c, 2) : NULL;
    if (!w || w->dtype != TS_F32 || (onnx_has_in(c, 2) && (!b || b->dtype != TS_F32))) return 0;
    for (int k = 0; k < 4; k++)
        if (st[k]->dtype != TS_F32) return 0;
    int64_t O = w->shape[0], per = ts_tensor_numel(w) / (O ? O : 1);
    ts_tensor *w2 = ts_tensor_from(TS_F32, w->ndim, w->shape, w->data), *b2 = ts_tensor_new(TS_F32, 1, &O);
    if (!w2 || !b2) {
        ts_tensor_free(w2);
        ts_tensor_free(b2);
        return 0;
    }
    const float *gm = st[0]->data, *bt = st[1]->data, *mu = st[2]->data, *var = st[3]->data;
    for (int64_t o = 0; o < O; o++) {
        float s = gm[o] / sqrtf(var[o] + eps);
        for (int64_t i = 0; i < per; i++) ((float *)w2->data)[o * per + i] *= s;
        ((float *)b2->data)[o] = ((b ? ((const float *)b->data)[o] : 0.f) - mu[o]) * s + bt[o];
    }
    /* rebuild the convolution with the folded weights; the first one goes unused */
    geom q;
    int64_t xs[TS_MAX_DIMS], ws[TS_MAX_DIMS];
    const ts_onnx_node *saved = cx->node;
    uint64_t saved_read = cx->attr_read;
    cx->node = NULL; /* reading c's attributes again must not mark n's */
    int bad = conv_geom(cx, c, &q, xs, ws);
    cx->node = saved;
    cx->attr_read = saved_read;
    if (bad) {
        ts_tensor_free(w2);
        ts_tensor_free(b2);
        return 0;
    }
    ts_graph *g = cx->g;
    ts_conv_opts o = conv_opts(&q);
    ts_value wv = ts_constant(g, w2), bv = ts_constant(g, b2);
    ts_tensor_free(w2);
    ts_tensor_free(b2);
    if (q.nsp == 1) wv = to4d(g, wv);
    ts_value y = ts_conv2d(g, to4d(g, onnx_in(cx, c, 0)), wv, bv, &o);
    onnx_set(cx, n, 0, from4d(g, y, q.nsp));
    return 1;
}

static ts_status imp_batch_norm(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t xs[TS_MAX_DIMS], ps[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, xs);
    float eps = onnx_attr_float(cx, n, "epsilon", 1e-5f);
    onnx_attr_ignore(cx, n, "momentum"); /* running statistics are not updated at inference */
    if (onnx_attr_int(cx, n, "training_mode", 0)) return onnx_unsupported(cx, n, "training_mode 1");
    if (onnx_attr_int(cx, n, "spatial", 1) != 1) return onnx_unsupported(cx, n, "spatial 0");
    if (onnx_attr_has(cx, n, "is_test")) onnx_attr_ignore(cx, n, "is_test");
    for (int k = 1; k < onnx_nout(n); k++)
        if (onnx_has_out(n, k)) return onnx_unsupported(cx, n, "output %d (the statistics of training)", k);
    if (onnx_need_f32(cx, n, 0, 4)) return TS_ERR_UNSUPPORTED;
    if (r < 2) return onnx_invalid(cx, n, "the input has rank %d; [N, C, ...] expected", r);
    int64_t C = xs[1];
    for (int k = 1; k <= 4; k++)
        if (onnx_in_shape(cx, n, k, ps) != 1 || ps[0] != C) return onnx_invalid(cx, n, "input %d is not [%lld]", k, (long long)C);
    if (ts_numel(r, xs) == 0) return onnx_unsupported(cx, n, "an empty input");
    /* scale and bias are weights (parameters when trainable); the running mean and variance are
     * buffers: constants even in a trainable import (their data is the file's) */
    const ts_tensor *st[4];
    int known = 1;
    for (int k = 0; k < 4; k++) known &= (st[k] = k < 2 ? onnx_known(cx, n, k + 1) : onnx_known_buffer(cx, n, k + 1)) != NULL;
    if (known && fold_into_conv(cx, n, st, eps)) return TS_OK;
    ts_graph *g = cx->g;
    int64_t bsh[TS_MAX_DIMS]; /* [C, 1, 1, ...] broadcasts against [N, C, ...] */
    bsh[0] = C;
    for (int i = 1; i < r - 1; i++) bsh[i] = 1;
    ts_value scale, shift;
    if (known) {
        ts_tensor *a = ts_tensor_new(TS_F32, r - 1, bsh), *b = ts_tensor_new(TS_F32, r - 1, bsh);
        if (!a || !b) {
            ts_tensor_free(a);
            ts_tensor_free(b);
            return onnx_unsupported(cx, n, "out of memory");
        }
        for (int64_t c = 0; c < C; c++) {
            float s = ((const float *)st[0]->data)[c] / sqrtf(((const float *)st[3]->data)[c] + eps);
            ((float *)a->data)[c] = s;
            ((float *)b->data)[c] = ((const float *)st[1]->data)[c] - ((const float *)st[2]->data)[c] * s;
        }
        scale = ts_constant(g, a);
        shift = ts_constant(g, b);
        ts_tensor_free(a);
        ts_tensor_free(b);
    } else { /* trainable scale / bias: the same arithmetic in the graph */
        ts_value v[4];
        for (int k = 0; k < 4; k++)
            v[k] = ts_reshape(g, st[k] ? ts_constant(g, st[k]) : onnx_in(cx, n, k + 1), r - 1, bsh);
        scale = ts_div(g, v[0], ts_sqrt(g, ts_scale(g, v[3], 1.f, eps)));
        shift = ts_sub(g, v[1], ts_mul(g, v[2], scale));
    }
    return onnx_set(cx, n, 0, ts_add(g, ts_mul(g, onnx_in(cx, n, 0), scale), shift));
}

/* ------------------------------------------------------------------ pools */

static ts_status pool(ts_onnx_ctx *cx, const ts_onnx_node *n, int is_max) {
    geom q;
    int64_t xs[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, xs);
    if (r != 4 && r != 3) return onnx_unsupported(cx, n, "a %d-D input (1-D and 2-D pooling only)", r - 2);
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    if (read_geom(cx, n, r - 2, NULL, 1, &q)) return TS_ERR_UNSUPPORTED;
    int ceil_mode = (int)onnx_attr_int(cx, n, "ceil_mode", 0);
    int cip = is_max ? 0 : (int)onnx_attr_int(cx, n, "count_include_pad", 0);
    if (is_max && onnx_attr_int(cx, n, "storage_order", 0) != 0) return onnx_unsupported(cx, n, "storage_order 1");
    if (is_max && onnx_has_out(n, 1)) return onnx_unsupported(cx, n, "the Indices output");
    if (!is_max)
        for (int i = 0; i < q.nsp; i++)
            if (q.d[i] != 1) return onnx_unsupported(cx, n, "dilated average pooling");
    same_pads(&q, xs + 2);
    int wide = 0; /* pads beyond half the window, which tessera's pools do not take: padded first */
    for (int i = 0; i < q.nsp; i++) {
        int64_t ek = q.d[i] * (q.k[i] - 1) + 1;
        if (q.p[i] > ek / 2 || q.p[q.nsp + i] > ek / 2) wide = 1;
        if (xs[2 + i] + q.p[i] + q.p[q.nsp + i] < ek) return onnx_invalid(cx, n, "the window is larger than the padded input");
    }
    if (wide && ceil_mode) return onnx_unsupported(cx, n, "ceil_mode with pads larger than half the window");
    ts_pool_opts o = {{1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, ceil_mode, cip};
    int off = q.nsp == 1;
    for (int i = 0; i < q.nsp; i++) {
        o.kernel[off + i] = (int)q.k[i];
        o.stride[off + i] = (int)q.s[i];
        o.dilation[off + i] = (int)q.d[i];
        o.pad[off + i] = (int)q.p[i];
        o.pad[2 + off + i] = (int)q.p[q.nsp + i];
    }
    ts_graph *g = cx->g;
    ts_value x = to4d(g, onnx_in(cx, n, 0)), y;
    if (!wide) {
        y = is_max ? ts_max_pool2d(g, x, &o) : ts_avg_pool2d(g, x, &o);
        return onnx_set(cx, n, 0, from4d(g, y, q.nsp));
    }
    /* pad explicitly (max: -inf, which never wins; average: 0), then pool without padding; an
     * average that leaves the padding out divides by the pooled padding mask of ones */
    int64_t pads[8] = {0, 0, o.pad[0], o.pad[1], 0, 0, o.pad[2], o.pad[3]}, xs4[TS_MAX_DIMS];
    memset(o.pad, 0, sizeof o.pad);
    o.count_include_pad = 1;
    ts_value xp = ts_pad(g, x, pads, TS_PAD_CONSTANT, is_max ? -INFINITY : 0.0);
    y = is_max ? ts_max_pool2d(g, xp, &o) : ts_avg_pool2d(g, xp, &o);
    if (!is_max && !cip) {
        ts_value_shape(g, x, xs4);
        int64_t one[4] = {1, 1, xs4[2], xs4[3]};
        ts_tensor *ones = ts_tensor_new(TS_F32, 4, one);
        for (int64_t i = 0; ones && i < ts_tensor_numel(ones); i++) ((float *)ts_tensor_data(ones))[i] = 1.f;
        ts_value cnt = ts_avg_pool2d(g, ts_pad(g, ts_constant(g, onnx_own_tensor(cx, ones)), pads, TS_PAD_CONSTANT, 0.0), &o);
        y = ts_div(g, y, cnt);
    }
    return onnx_set(cx, n, 0, from4d(g, y, q.nsp));
}

static ts_status imp_max_pool(ts_onnx_ctx *cx, const ts_onnx_node *n) { return pool(cx, n, 1); }
static ts_status imp_avg_pool(ts_onnx_ctx *cx, const ts_onnx_node *n) { return pool(cx, n, 0); }

static ts_status global_pool(ts_onnx_ctx *cx, const ts_onnx_node *n, int is_max) {
    int64_t xs[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, xs), axes[TS_MAX_DIMS];
    if (r < 3) return onnx_invalid(cx, n, "the input has rank %d; [N, C, ...] expected", r);
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    if (ts_numel(r, xs) == 0) return onnx_unsupported(cx, n, "an empty input");
    for (int i = 2; i < r; i++) axes[i - 2] = i;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0);
    return onnx_set(cx, n, 0, is_max ? ts_reduce_max(g, x, r - 2, axes, 1) : ts_reduce_mean(g, x, r - 2, axes, 1));
}

static ts_status imp_global_avg_pool(ts_onnx_ctx *cx, const ts_onnx_node *n) { return global_pool(cx, n, 0); }
static ts_status imp_global_max_pool(ts_onnx_ctx *cx, const ts_onnx_node *n) { return global_pool(cx, n, 1); }

/* ------------------------------------------------------------------ MaxUnpool */

static ts_status imp_max_unpool(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t xs[TS_MAX_DIMS], is[TS_MAX_DIMS], k[8], st[8] = {1, 1, 1, 1, 1, 1}, pd[16] = {0}, os[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, xs), ri = onnx_in_shape(cx, n, 1, is);
    int nk = onnx_attr_ints(cx, n, "kernel_shape", k, 8), nst = onnx_attr_ints(cx, n, "strides", st, 8);
    int npd = onnx_attr_ints(cx, n, "pads", pd, 16);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    int sp = r - 2;
    if (r < 3 || nk != sp || (nst >= 0 && nst != sp) || (npd >= 0 && npd != 2 * sp) || ri != r ||
        memcmp(xs, is, sizeof(int64_t) * (size_t)r))
        return onnx_invalid(
            cx, n, "X and I must be [N, C, D..] alike, with kernel_shape / strides / pads per spatial dim");
    if (onnx_need_f32(cx, n, 0, 0) || onnx_need_dtype(cx, n, 1, (const ts_dtype[]){TS_I64}, 1))
        return TS_ERR_UNSUPPORTED;
    os[0] = xs[0];
    os[1] = xs[1];
    for (int i = 0; i < sp; i++) {
        if (k[i] < 1 || st[i] < 1 || k[i] > 1 << 20 || st[i] > 1 << 20 || pd[i] < 0 || pd[sp + i] < 0 ||
            pd[i] > 1 << 20 || pd[sp + i] > 1 << 20)
            return onnx_unsupported(cx, n, "kernel_shape / strides / pads beyond 1 .. 2^20");
        os[2 + i] = (xs[2 + i] - 1) * st[i] + k[i] - pd[i] - pd[sp + i];
    }
    int64_t pads[2 * TS_MAX_DIMS] = {0};
    int padded = 0;
    if (onnx_has_in(n, 2)) { /* a larger shape: the unpooled result, zero-padded at the end */
        int64_t given[TS_MAX_DIMS];
        int ng = onnx_known_ints(cx, n, 2, given, TS_MAX_DIMS, "output_shape");
        if (ng < 0) return TS_ERR_UNSUPPORTED;
        if (ng != r) return onnx_invalid(cx, n, "output_shape has %d values for rank %d", ng, r);
        for (int i = 0; i < r; i++) {
            if (given[i] < os[i] || (i < 2 && given[i] != os[i]))
                return onnx_unsupported(cx, n, "an output_shape smaller than the unpooled shape");
            pads[r + i] = given[i] - os[i];
            padded |= pads[r + i] != 0;
        }
    }
    for (int i = 0; i < r; i++)
        if (os[i] < 1) return onnx_unsupported(cx, n, "an empty result");
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t total = ts_numel(r, os), cnt = ts_numel(r, xs);
    ts_value zeros = ts_expand(g, map_scalar(g, TS_F32, 0), 1, &total);
    ts_value y = ts_scatter_elements(g, zeros, ts_reshape(g, onnx_in(cx, n, 1), 1, &cnt),
                                     ts_reshape(g, onnx_in(cx, n, 0), 1, &cnt), 0, TS_SCATTER_NONE);
    y = ts_reshape(g, y, r, os);
    return onnx_set(cx, n, 0, padded ? ts_pad(g, y, pads, TS_PAD_CONSTANT, 0) : y);
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"Conv", 9, 17, imp_conv},
    {"ConvTranspose", 9, 17, imp_conv_transpose},
    {"ConvInteger", 10, 17, imp_conv_integer},
    {"QLinearConv", 10, 17, imp_qlinear_conv},
    {"BatchNormalization", 9, 17, imp_batch_norm},
    {"MaxPool", 9, 17, imp_max_pool},
    {"AveragePool", 9, 17, imp_avg_pool},
    {"GlobalAveragePool", 9, 17, imp_global_avg_pool},
    {"GlobalMaxPool", 9, 17, imp_global_max_pool},
    {"MaxUnpool", 11, 17, imp_max_unpool},
};
const onnx_family onnx_family_conv = {"conv", ops, (int)(sizeof ops / sizeof *ops)};
