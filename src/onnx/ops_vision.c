/*
 * ops_vision.c — ONNX mappings of the convolutional-network ops onto tessera's vision ops:
 * Conv, ConvTranspose (2-D, and 1-D as 2-D with a height of 1), BatchNormalization (inference),
 * MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, Resize / Upsample (the last two
 * dims, nearest or linear), Clip, HardSigmoid, HardSwish.
 *
 * BatchNormalization with constant statistics is folded into the Conv before it when the Conv's
 * output feeds only it and the Conv's weights are constants: W' = W s, b' = (b - mean) s + beta
 * with s = gamma / sqrt(var + eps), one convolution instead of three ops. Otherwise it is
 * y = x scale + shift with per-channel constants (computed in the graph when scale and bias are
 * trainable parameters; the running mean and variance stay constants then, as buffers).
 */
#include "onnx/onnx_imp.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

/* ------------------------------------------------------------------ Conv, ConvTranspose */

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

/* ------------------------------------------------------------------ Resize, Upsample */

static ts_status resize(ts_onnx_ctx *cx, const ts_onnx_node *n, int scales_in, int sizes_in) {
    int64_t xs[TS_MAX_DIMS], sizes[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, xs);
    const char *mode = onnx_attr_string(cx, n, "mode", "nearest");
    const char *ctm = onnx_attr_string(cx, n, "coordinate_transformation_mode", cx->opset < 11 ? "asymmetric" : "half_pixel");
    const char *nm = onnx_attr_string(cx, n, "nearest_mode", "round_prefer_floor");
    float cubic = onnx_attr_float(cx, n, "cubic_coeff_a", -0.75f);
    (void)cubic; /* cubic mode is refused below, so its coefficient never matters */
    if (onnx_attr_int(cx, n, "exclude_outside", 0) != 0) return onnx_unsupported(cx, n, "exclude_outside 1");
    onnx_attr_ignore(cx, n, "extrapolation_value"); /* tf_crop_and_resize only, refused below */
    if (onnx_attr_has(cx, n, "antialias") || onnx_attr_has(cx, n, "axes") || onnx_attr_has(cx, n, "keep_aspect_ratio_policy"))
        return onnx_unsupported(cx, n, "opset 18 attributes");
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    ts_resize_opts o = {0};
    if (!strcmp(mode, "nearest")) o.mode = TS_RESIZE_NEAREST;
    else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear")) o.mode = TS_RESIZE_LINEAR;
    else return onnx_unsupported(cx, n, "mode '%s' (nearest and linear only)", mode);
    if (!strcmp(ctm, "half_pixel")) o.coord = TS_COORD_HALF_PIXEL;
    else if (!strcmp(ctm, "asymmetric")) o.coord = TS_COORD_ASYMMETRIC;
    else if (!strcmp(ctm, "align_corners")) o.coord = TS_COORD_ALIGN_CORNERS;
    else if (!strcmp(ctm, "pytorch_half_pixel")) o.coord = TS_COORD_PYTORCH_HALF_PIXEL;
    else return onnx_unsupported(cx, n, "coordinate_transformation_mode '%s'", ctm);
    if (!strcmp(nm, "round_prefer_floor")) o.round = TS_ROUND_PREFER_FLOOR;
    else if (!strcmp(nm, "round_prefer_ceil")) o.round = TS_ROUND_PREFER_CEIL;
    else if (!strcmp(nm, "floor")) o.round = TS_ROUND_FLOOR;
    else if (!strcmp(nm, "ceil")) o.round = TS_ROUND_CEIL;
    else return onnx_invalid(cx, n, "nearest_mode '%s'", nm);
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    if (r < 2) return onnx_invalid(cx, n, "the input has rank %d", r);
    /* the output size: from sizes, or floor(in x scale) with the scale used in the coordinates */
    const ts_tensor *sc = scales_in >= 0 && onnx_has_in(n, scales_in) ? onnx_known(cx, n, scales_in) : NULL;
    int have_sizes = sizes_in >= 0 && onnx_has_in(n, sizes_in);
    if (scales_in >= 0 && onnx_has_in(n, scales_in) && !sc)
        return onnx_unsupported(cx, n, "scales must be known when the model is imported");
    if (sc && ts_tensor_numel(sc) == 0) sc = NULL; /* opset 11-12: an empty scales with sizes */
    if (have_sizes) {
        int ns = onnx_known_ints(cx, n, sizes_in, sizes, TS_MAX_DIMS, "sizes");
        if (ns < 0) return TS_ERR_UNSUPPORTED;
        if (ns != r) return onnx_invalid(cx, n, "sizes has %d entries for rank %d", ns, r);
        if (sc) return onnx_invalid(cx, n, "both scales and sizes are given");
    } else if (sc) {
        if (ts_tensor_numel(sc) != r || (sc->dtype != TS_F32)) return onnx_invalid(cx, n, "scales must be %d floats", r);
        for (int i = 0; i < r; i++) {
            float s = ((const float *)sc->data)[i];
            if (!(s > 0) || isinf(s)) return onnx_invalid(cx, n, "scale %d is %g", i, (double)s);
            double sz = floor((double)xs[i] * (double)s);
            if (sz > (double)((int64_t)1 << 40)) return onnx_unsupported(cx, n, "scale %d (%g) makes a dim of %g", i, (double)s, sz);
            sizes[i] = (int64_t)sz;
        }
        o.scale[0] = ((const float *)sc->data)[r - 2];
        o.scale[1] = ((const float *)sc->data)[r - 1];
        /* ONNX's align_corners divides by (in x scale - 1), unrounded; tessera's by (out - 1) */
        for (int i = r - 2; i < r && o.coord == TS_COORD_ALIGN_CORNERS; i++)
            if ((double)xs[i] * ((const float *)sc->data)[i] != (double)sizes[i])
                return onnx_unsupported(cx, n, "align_corners with a scale that does not give a whole output size");
    } else {
        return onnx_invalid(cx, n, "neither scales nor sizes");
    }
    for (int i = 0; i < r - 2; i++)
        if (sizes[i] != xs[i]) return onnx_unsupported(cx, n, "resizing dim %d (only the last two dims)", i);
    if (sizes[r - 2] < 1 || sizes[r - 1] < 1) return onnx_unsupported(cx, n, "an empty output");
    return onnx_set(cx, n, 0, ts_resize2d(cx->g, onnx_in(cx, n, 0), sizes[r - 2], sizes[r - 1], &o));
}

static ts_status imp_resize10(ts_onnx_ctx *cx, const ts_onnx_node *n) { return resize(cx, n, 1, -1); }
static ts_status imp_resize11(ts_onnx_ctx *cx, const ts_onnx_node *n) { return resize(cx, n, 2, 3); }

/* Upsample (opset 9): scales as input 1, asymmetric coordinates, floor for nearest. */
static ts_status imp_upsample(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const char *mode = onnx_attr_string(cx, n, "mode", "nearest");
    int64_t xs[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, xs);
    const ts_tensor *sc = onnx_known(cx, n, 1);
    if (!sc) return onnx_unsupported(cx, n, "scales must be known when the model is imported");
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    if (ts_tensor_numel(sc) != r || sc->dtype != TS_F32) return onnx_invalid(cx, n, "scales must be %d floats", r);
    ts_resize_opts o = {strcmp(mode, "nearest") ? TS_RESIZE_LINEAR : TS_RESIZE_NEAREST, TS_COORD_ASYMMETRIC, TS_ROUND_FLOOR,
                        {((const float *)sc->data)[r - 2], ((const float *)sc->data)[r - 1]}};
    if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "bilinear"))
        return onnx_unsupported(cx, n, "mode '%s'", mode);
    for (int i = 0; i < r - 2; i++)
        if (((const float *)sc->data)[i] != 1.f) return onnx_unsupported(cx, n, "upsampling dim %d (only the last two dims)", i);
    double fh = floor((double)xs[r - 2] * o.scale[0]), fw = floor((double)xs[r - 1] * o.scale[1]);
    if (!(fh >= 1 && fw >= 1)) return onnx_unsupported(cx, n, "an empty output (or a NaN scale)");
    if (fh > (double)((int64_t)1 << 40) || fw > (double)((int64_t)1 << 40))
        return onnx_unsupported(cx, n, "scales that make dims of %g x %g", fh, fw);
    int64_t oh = (int64_t)fh, ow = (int64_t)fw;
    return onnx_set(cx, n, 0, ts_resize2d(cx->g, onnx_in(cx, n, 0), oh, ow, &o));
}

/* ------------------------------------------------------------------ Clip, HardSigmoid, HardSwish */

static ts_status imp_clip(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    float lo = -FLT_MAX, hi = FLT_MAX;
    if (cx->opset < 11) {
        lo = onnx_attr_float(cx, n, "min", -FLT_MAX);
        hi = onnx_attr_float(cx, n, "max", FLT_MAX);
    } else {
        if (onnx_need_f32(cx, n, 0, 2)) return TS_ERR_UNSUPPORTED;
        int64_t sh[TS_MAX_DIMS];
        for (int k = 1; k <= 2; k++)
            if (onnx_has_in(n, k) && (onnx_in_shape(cx, n, k, sh) < 0 || ts_numel(onnx_in_shape(cx, n, k, sh), sh) != 1))
                return onnx_invalid(cx, n, "input %d is not a scalar", k);
        if ((onnx_has_in(n, 1) && !onnx_known(cx, n, 1)) || (onnx_has_in(n, 2) && !onnx_known(cx, n, 2))) {
            /* bounds computed by the graph: max(x, min), then min(., max) (max wins when min > max) */
            ts_graph *g = cx->g;
            ts_value y = onnx_in(cx, n, 0);
            if (onnx_has_in(n, 1)) y = ts_binary(g, TS_BIN_MAX, y, onnx_in(cx, n, 1));
            if (onnx_has_in(n, 2)) y = ts_binary(g, TS_BIN_MIN, y, onnx_in(cx, n, 2));
            if (!onnx_has_in(n, 1) && !onnx_has_in(n, 2)) y = ts_clip(g, y, -FLT_MAX, FLT_MAX);
            return onnx_set(cx, n, 0, y);
        }
        if (onnx_has_in(n, 1)) lo = (float)onnx_get_f64(onnx_known(cx, n, 1), 0);
        if (onnx_has_in(n, 2)) hi = (float)onnx_get_f64(onnx_known(cx, n, 2), 0);
    }
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    if (lo != lo || hi != hi) return onnx_unsupported(cx, n, "a NaN bound");
    if (lo > hi) { /* ONNX: every element becomes max */
        ts_value x = onnx_in(cx, n, 0);
        return onnx_set(cx, n, 0, ts_scale(cx->g, x, 0.f, hi));
    }
    return onnx_set(cx, n, 0, ts_clip(cx->g, onnx_in(cx, n, 0), lo, hi));
}

static ts_status imp_hard_sigmoid(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    float alpha = onnx_attr_float(cx, n, "alpha", 0.2f), beta = onnx_attr_float(cx, n, "beta", 0.5f);
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_hard_sigmoid(cx->g, onnx_in(cx, n, 0), alpha, beta));
}

static ts_status imp_hard_swish(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_hard_swish(cx->g, onnx_in(cx, n, 0)));
}

const ts_onnx_op ts_onnx_ops_vision[] = {
    {"Conv", 9, 17, imp_conv},
    {"ConvTranspose", 9, 17, imp_conv_transpose},
    {"BatchNormalization", 9, 17, imp_batch_norm},
    {"MaxPool", 9, 17, imp_max_pool},
    {"AveragePool", 9, 17, imp_avg_pool},
    {"GlobalAveragePool", 9, 17, imp_global_avg_pool},
    {"GlobalMaxPool", 9, 17, imp_global_max_pool},
    {"Upsample", 9, 9, imp_upsample},
    {"Resize", 10, 10, imp_resize10},
    {"Resize", 11, 17, imp_resize11},
    {"Clip", 9, 17, imp_clip},
    {"HardSigmoid", 9, 17, imp_hard_sigmoid},
    {"HardSwish", 14, 17, imp_hard_swish},
    {NULL, 0, 0, NULL}, /* the end (not counted) */
};
const int ts_onnx_ops_vision_n = (int)(sizeof ts_onnx_ops_vision / sizeof *ts_onnx_ops_vision) - 1;
