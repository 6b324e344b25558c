/*
 * extra_conv.c — ONNX mappings of the integer convolutions, MaxUnpool, GridSample and RoiAlign on
 * tessera's image ops:
 *   ConvInteger: y (i32) = conv(x - x_zero_point, w - w_zero_point), computed as an f32 ts_conv2d
 *                (exact: every sum of 8-bit products stays below 2^24, checked), padding with zeros
 *                after the zero point is taken off (the padded x equals its zero point)
 *   QLinearConv: y = saturate(round((conv(x - x_zp, w - w_zp) + B) * (x_scale w_scale / y_scale)) + y_zp),
 *                w_scale / w_zero_point per output channel or scalars, B i32 [M] optional
 *   MaxUnpool:   y = zeros of the unpooled shape (from kernel_shape / strides / pads), y.flat[indices]
 *                = x (a ts_scatter_elements over the flattened result); a larger output_shape, known
 *                at import, zero-pads that result at the end of each spatial dim
 *   GridSample:  ts_grid_sample;  RoiAlign: ts_roi_align (mode avg)
 * 2-D convolutions only (x [N, C, H, W]); attributes as ONNX Conv's (auto_pad, dilations, group,
 * kernel_shape, pads, strides).
 */
#include "onnx/extra.h"

/* Conv attributes of node n for x [N, C, H, W] and a kernel [KH, KW] into o; -1 after refusing. */
static int conv_opts(ts_onnx_ctx *cx, const ts_onnx_node *n, const int64_t *xs, const int64_t *ks, ts_conv_opts *o) {
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
    if (conv_opts(cx, n, xs, ws + 2, &o)) return TS_NONE;
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
    if (ex_need_nonempty(cx, n, ix) || ex_need_nonempty(cx, n, iw)) return TS_NONE;
    ts_graph *g = cx->g;
    ts_value x = ts_cast(g, onnx_in(cx, n, ix), TS_F32), w = ts_cast(g, onnx_in(cx, n, iw), TS_F32);
    if (onnx_has_in(n, ixz)) x = ts_sub(g, x, ts_cast(g, ts_reshape(g, onnx_in(cx, n, ixz), 0, NULL), TS_F32));
    if (onnx_has_in(n, iwz)) {
        int64_t c = ts_numel(onnx_in_shape(cx, n, iwz, z), z), shp[4] = {c, 1, 1, 1};
        w = ts_sub(g, w, ts_cast(g, ts_reshape(g, onnx_in(cx, n, iwz), c == 1 ? 0 : 4, shp), TS_F32));
    }
    return ts_conv2d(g, x, w, TS_NONE, &o);
}

ts_status ex_conv_integer(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    ts_value y = int_conv(cx, n, 0, 2, 1, 3);
    if (y == TS_NONE) return cx->node_refused ? TS_ERR_UNSUPPORTED : onnx_check(cx, n);
    return onnx_set(cx, n, 0, ts_cast(cx->g, y, TS_I32));
}

ts_status ex_qlinear_conv(ts_onnx_ctx *cx, const ts_onnx_node *n) {
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
    q = ts_binary(g, TS_BIN_MIN, ts_binary(g, TS_BIN_MAX, q, ex_scalar(g, TS_F32, 0)), ex_scalar(g, TS_F32, 255));
    return onnx_set(cx, n, 0, ts_cast(g, q, TS_U8));
}

ts_status ex_max_unpool(ts_onnx_ctx *cx, const ts_onnx_node *n) {
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
    if (ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t total = ts_numel(r, os), cnt = ts_numel(r, xs);
    ts_value zeros = ts_expand(g, ex_scalar(g, TS_F32, 0), 1, &total);
    ts_value y = ts_scatter_elements(g, zeros, ts_reshape(g, onnx_in(cx, n, 1), 1, &cnt),
                                     ts_reshape(g, onnx_in(cx, n, 0), 1, &cnt), 0, TS_SCATTER_NONE);
    y = ts_reshape(g, y, r, os);
    return onnx_set(cx, n, 0, padded ? ts_pad(g, y, pads, TS_PAD_CONSTANT, 0) : y);
}

/* GridSample (opset 16): ts_grid_sample with ONNX's attribute names and defaults. */
ts_status ex_grid_sample(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t xs[TS_MAX_DIMS], gs[TS_MAX_DIMS];
    const char *ms = onnx_attr_string(cx, n, "mode", "bilinear"),
               *ps = onnx_attr_string(cx, n, "padding_mode", "zeros");
    int align = onnx_attr_int(cx, n, "align_corners", 0) != 0;
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    ts_grid_mode mode;
    ts_grid_padding pad;
    if (!strcmp(ms, "bilinear")) mode = TS_GRID_BILINEAR;
    else if (!strcmp(ms, "nearest")) mode = TS_GRID_NEAREST;
    else if (!strcmp(ms, "bicubic")) mode = TS_GRID_BICUBIC;
    else return onnx_invalid(cx, n, "mode '%s'", ms);
    if (!strcmp(ps, "zeros")) pad = TS_GRID_ZEROS;
    else if (!strcmp(ps, "border")) pad = TS_GRID_BORDER;
    else if (!strcmp(ps, "reflection")) pad = TS_GRID_REFLECTION;
    else return onnx_invalid(cx, n, "padding_mode '%s'", ps);
    if (onnx_in_shape(cx, n, 0, xs) != 4 || onnx_in_shape(cx, n, 1, gs) != 4 || gs[0] != xs[0] || gs[3] != 2)
        return onnx_unsupported(cx, n, "shapes other than X [N, C, H, W] and grid [N, OH, OW, 2]");
    if (onnx_need_f32(cx, n, 0, 1) || ex_need_nonempty(cx, n, 0) || ex_need_nonempty(cx, n, 1))
        return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_grid_sample(cx->g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), mode, pad, align));
}

/* RoiAlign (opsets 10 and 16; 10 has no coordinate_transformation_mode and behaves as
 * output_half_pixel): ts_roi_align, mode avg only. */
ts_status ex_roi_align(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t xs[TS_MAX_DIMS], rs[TS_MAX_DIMS], bs[TS_MAX_DIMS];
    const char *mode = onnx_attr_string(cx, n, "mode", "avg");
    const char *ct = cx->opset >= 16 ? onnx_attr_string(cx, n, "coordinate_transformation_mode", "half_pixel")
                                     : "output_half_pixel";
    int64_t oh = onnx_attr_int(cx, n, "output_height", 1), ow = onnx_attr_int(cx, n, "output_width", 1);
    int64_t ratio = onnx_attr_int(cx, n, "sampling_ratio", 0);
    float scale = onnx_attr_float(cx, n, "spatial_scale", 1.f);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (strcmp(mode, "avg")) return onnx_unsupported(cx, n, "mode '%s' (avg only)", mode);
    int half = !strcmp(ct, "half_pixel");
    if (!half && strcmp(ct, "output_half_pixel")) return onnx_invalid(cx, n, "coordinate_transformation_mode '%s'", ct);
    if (oh < 1 || ow < 1 || oh > 1 << 16 || ow > 1 << 16 || ratio < 0 || ratio > 4096)
        return onnx_unsupported(cx, n, "output %lld x %lld, sampling_ratio %lld", (long long)oh, (long long)ow,
                                (long long)ratio);
    if (onnx_in_shape(cx, n, 0, xs) != 4 || onnx_in_shape(cx, n, 1, rs) != 2 || rs[1] != 4 ||
        onnx_in_shape(cx, n, 2, bs) != 1 || bs[0] != rs[0])
        return onnx_invalid(cx, n, "X must be [N, C, H, W], rois [R, 4] and batch_indices [R]");
    if (onnx_need_f32(cx, n, 0, 1) || onnx_need_dtype(cx, n, 2, (const ts_dtype[]){TS_I64, TS_I32}, 2) ||
        ex_need_nonempty(cx, n, 0) || ex_need_nonempty(cx, n, 1))
        return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_roi_align(cx->g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), onnx_in(cx, n, 2), (int)oh,
                                           (int)ow, (int)ratio, scale, half));
}
