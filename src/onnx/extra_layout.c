/*
 * extra_layout.c — ONNX mappings of the ops that rearrange or restate data: Tile (ts_tile), Pad
 * (ts_pad), DepthToSpace / SpaceToDepth (reshape, transpose, reshape), CastLike (ts_cast to the
 * second input's dtype) and EyeLike (computed at import: it depends only on a shape).
 * Data of any tessera dtype; repeats and pads must be known at import (they fix the shape).
 */
#include "onnx/extra.h"

ts_status ex_tile(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], rep[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int nr = onnx_known_ints(cx, n, 1, rep, TS_MAX_DIMS, "repeats");
    if (nr < 0) return TS_ERR_UNSUPPORTED;
    if (nr != r) return onnx_invalid(cx, n, "repeats has %d values for an input of rank %d", nr, r);
    for (int i = 0; i < r; i++)
        if (rep[i] < 1) return onnx_unsupported(cx, n, "repeat %lld (an empty result)", (long long)rep[i]);
    if (ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_tile(cx->g, onnx_in(cx, n, 0), rep));
}

ts_status ex_pad(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], pads[TS_MAX_DIMS * 2];
    int r = onnx_in_shape(cx, n, 0, sh), np;
    const char *ms = onnx_attr_string(cx, n, "mode", "constant");
    double value = 0;
    if (cx->opset < 11) {
        np = onnx_attr_ints(cx, n, "pads", pads, TS_MAX_DIMS * 2);
        value = onnx_attr_float(cx, n, "value", 0.f);
        if (np < 0 && !cx->node_refused) return onnx_invalid(cx, n, "no pads attribute");
    } else {
        np = onnx_known_ints(cx, n, 1, pads, TS_MAX_DIMS * 2, "pads");
        if (np >= 0 && onnx_has_in(n, 2) && !onnx_known_scalar(cx, n, 2, &value, "constant_value"))
            return TS_ERR_UNSUPPORTED;
    }
    if (np < 0 || cx->node_refused) return TS_ERR_UNSUPPORTED;
    ts_pad_mode mode;
    if (!strcmp(ms, "constant")) mode = TS_PAD_CONSTANT;
    else if (!strcmp(ms, "reflect")) mode = TS_PAD_REFLECT;
    else if (!strcmp(ms, "edge")) mode = TS_PAD_EDGE;
    else return onnx_unsupported(cx, n, "mode '%s'", ms);
    if (np != 2 * r) return onnx_invalid(cx, n, "%d pads for an input of rank %d", np, r);
    for (int i = 0; i < r; i++) {
        int64_t b = pads[i], e = pads[r + i];
        if (sh[i] + b + e < 1) return onnx_unsupported(cx, n, "pads that leave axis %d empty", i);
        if (mode == TS_PAD_REFLECT && (b >= sh[i] || e >= sh[i]) && (b > 0 || e > 0))
            return onnx_unsupported(cx, n, "reflect pads of axis %d as large as its size %lld", i, (long long)sh[i]);
        if (b < INT32_MIN || b > INT32_MAX || e < INT32_MIN || e > INT32_MAX)
            return onnx_unsupported(cx, n, "pads beyond 32 bits");
    }
    if (ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_pad(cx->g, onnx_in(cx, n, 0), pads, mode, value));
}

/* ------------------------------------------------------------------ DepthToSpace, SpaceToDepth */

ts_status ex_depth_to_space(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t s[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, s);
    int64_t b = onnx_attr_int(cx, n, "blocksize", 0);
    const char *mode = onnx_attr_string(cx, n, "mode", "DCR");
    int crd = !strcmp(mode, "CRD");
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (!crd && strcmp(mode, "DCR")) return onnx_invalid(cx, n, "mode '%s' is neither DCR nor CRD", mode);
    if (r != 4 || b < 1 || b > s[1] || s[1] % (b * b))
        return onnx_invalid(cx, n, "the input must be [N, C, H, W] with C divisible by blocksize^2");
    if (ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t c = s[1] / (b * b);
    /* DCR: [N, b, b, c, H, W] -> [N, c, H, b, W, b];  CRD: [N, c, b, b, H, W] -> the same order */
    int64_t six[6] = {s[0], crd ? c : b, b, crd ? b : c, s[2], s[3]};
    int perm_dcr[6] = {0, 3, 4, 1, 5, 2}, perm_crd[6] = {0, 1, 4, 2, 5, 3};
    ts_value y = ts_transpose(g, ts_reshape(g, onnx_in(cx, n, 0), 6, six), crd ? perm_crd : perm_dcr);
    return onnx_set(cx, n, 0, ts_reshape(g, y, 4, (int64_t[]){s[0], c, s[2] * b, s[3] * b}));
}

ts_status ex_space_to_depth(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t s[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, s);
    int64_t b = onnx_attr_int(cx, n, "blocksize", 0);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (r != 4 || b < 1 || b > s[2] || b > s[3] || s[2] % b || s[3] % b)
        return onnx_invalid(cx, n, "the input must be [N, C, H, W] with H and W divisible by blocksize");
    if (ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t six[6] = {s[0], s[1], s[2] / b, b, s[3] / b, b};
    ts_value y = ts_transpose(g, ts_reshape(g, onnx_in(cx, n, 0), 6, six), (int[]){0, 3, 5, 1, 2, 4});
    return onnx_set(cx, n, 0, ts_reshape(g, y, 4, (int64_t[]){s[0], s[1] * b * b, s[2] / b, s[3] / b}));
}

/* ------------------------------------------------------------------ CastLike, EyeLike */

ts_status ex_cast_like(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    ts_dtype from = onnx_in_dtype(cx, n, 0), to = onnx_in_dtype(cx, n, 1);
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    onnx_attr_ignore(cx, n, "saturate"); /* opset 19's, for 8-bit floats */
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, onnx_host_cast(k, to));
    if (to == TS_U8 && from != TS_U8)
        return onnx_unsupported(cx, n, "cast of a graph %s value to BOOL / UINT8", ts_dtype_name(from));
    if (ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_value x = onnx_in(cx, n, 0);
    return onnx_set(cx, n, 0, from == to ? ts_reshape(cx->g, x, r, sh) : ts_cast(cx->g, x, to));
}

ts_status ex_eye_like(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t k = onnx_attr_int(cx, n, "k", 0);
    ts_dtype dt = onnx_in_dtype(cx, n, 0);
    if (onnx_attr_has(cx, n, "dtype")) {
        int64_t t = onnx_attr_int(cx, n, "dtype", 1);
        if (!onnx_dtype((int32_t)t, &dt))
            return onnx_unsupported(cx, n, "dtype %s: tessera has no such dtype", onnx_type_name((int32_t)t));
    }
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (r != 2) return onnx_invalid(cx, n, "the input has rank %d, not 2", r);
    ts_tensor *t = ts_tensor_new(dt, 2, sh);
    if (k > -sh[0] && k < sh[1]) /* else no diagonal element falls inside (and i + k cannot overflow) */
        for (int64_t i = 0; t && i < sh[0]; i++)
            if (i + k >= 0 && i + k < sh[1]) onnx_put_f64(t, i * sh[1] + i + k, 1.0);
    return onnx_set_known(cx, n, 0, t);
}
