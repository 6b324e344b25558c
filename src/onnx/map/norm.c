/*
 * norm.c — ONNX mappings of the normalisations, on f32 (BatchNormalization is in conv.c: it
 * folds into the convolution before it):
 *   LayerNormalization (opset 17): ts_layer_norm over the dims from `axis` flattened into one;
 *         its optional Mean and InvStdDev outputs computed in the graph
 *   LRN:  y = x / (bias + alpha / size * s)^beta, s[n, c, ..] the sum of x^2 over the channels
 *         c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2) that exist (a zero-padded window:
 *         ts_pad on axis 1, then size shifted slices added)
 *   InstanceNormalization: each [n, c] plane normalised, (x - mean) / sqrt(var + epsilon) (ts_layer_norm
 *         over the plane flattened), then * scale[c] + B[c]
 *   MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), means over `axes`
 *         (default 0, 2, 3), as the function body ONNX gives for it
 */

#include "onnx/map/map.h"

static ts_status imp_lrn(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], pads[TS_MAX_DIMS * 2] = {0};
    int r = onnx_in_shape(cx, n, 0, sh);
    float alpha = onnx_attr_float(cx, n, "alpha", 1e-4f), beta = onnx_attr_float(cx, n, "beta", 0.75f);
    float bias = onnx_attr_float(cx, n, "bias", 1.f);
    int64_t size = onnx_attr_int(cx, n, "size", 0);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (size < 1) return onnx_invalid(cx, n, "size %lld", (long long)size);
    if (size > 4096) return onnx_unsupported(cx, n, "size %lld (at most 4096)", (long long)size);
    if (r < 3) return onnx_invalid(cx, n, "the input has rank %d; LRN takes [N, C, D1, ..]", r);
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0);
    pads[1] = (size - 1) / 2;
    pads[r + 1] = size / 2; /* ceil((size - 1) / 2) */
    ts_value sq = ts_pad(g, ts_mul(g, x, x), pads, TS_PAD_CONSTANT, 0), s = TS_NONE;
    for (int64_t j = 0; j < size; j++) {
        ts_value part = ts_slice(g, sq, 1, j, j + sh[1]);
        s = s == TS_NONE ? part : ts_add(g, s, part);
    }
    ts_value base = ts_scale(g, s, alpha / (float)size, bias);
    return onnx_set(cx, n, 0, ts_div(g, x, ts_pow(g, base, map_scalar(g, TS_F32, beta))));
}

static ts_status imp_instance_norm(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], ps[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    float eps = onnx_attr_float(cx, n, "epsilon", 1e-5f);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (r < 3) return onnx_invalid(cx, n, "the input has rank %d; it must be [N, C, D1, ..]", r);
    for (int k = 1; k <= 2; k++)
        if (onnx_in_shape(cx, n, k, ps) != 1 || ps[0] != sh[1]) return onnx_invalid(cx, n, "input %d must be [C]", k);
    if (onnx_need_f32(cx, n, 0, 2) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t rows[2] = {sh[0] * sh[1], ts_numel(r - 2, sh + 2)}, csh[TS_MAX_DIMS];
    ts_value y = ts_layer_norm(g, ts_reshape(g, onnx_in(cx, n, 0), 2, rows), TS_NONE, TS_NONE, eps);
    y = ts_reshape(g, y, r, sh);
    csh[0] = sh[1];
    for (int i = 1; i < r - 1; i++) csh[i] = 1;
    ts_value scale = ts_reshape(g, onnx_in(cx, n, 1), r - 1, csh), bias = ts_reshape(g, onnx_in(cx, n, 2), r - 1, csh);
    return onnx_set(cx, n, 0, ts_add(g, ts_mul(g, y, scale), bias));
}

static ts_status imp_mvn(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], ax[TS_MAX_DIMS * 2] = {0, 2, 3};
    int r = onnx_in_shape(cx, n, 0, sh), axes[TS_MAX_DIMS];
    int na = onnx_attr_ints(cx, n, "axes", ax, TS_MAX_DIMS * 2);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (na < 0) na = 3;
    unsigned seen = 0;
    for (int i = 0; i < na; i++) {
        if ((axes[i] = map_axis(cx, n, ax[i], r, "axis")) < 0) return TS_ERR_UNSUPPORTED;
        if (seen >> axes[i] & 1) return onnx_invalid(cx, n, "axis %lld is listed twice", (long long)ax[i]);
        seen |= 1u << axes[i];
    }
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0);
    ts_value mean = ts_reduce_mean(g, x, na, axes, 1);
    ts_value var = ts_sub(g, ts_reduce_mean(g, ts_mul(g, x, x), na, axes, 1), ts_mul(g, mean, mean));
    ts_value sd = ts_scale(g, ts_sqrt(g, var), 1.f, 1e-9f);
    return onnx_set(cx, n, 0, ts_div(g, ts_sub(g, x, mean), sd));
}

/* ------------------------------------------------------------------ LayerNormalization (opset 17) */

static ts_status imp_layer_norm(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], ss[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t axis = onnx_attr_int(cx, n, "axis", -1);
    float eps = onnx_attr_float(cx, n, "epsilon", 1e-5f);
    if (onnx_attr_int(cx, n, "stash_type", 1) != 1) return onnx_unsupported(cx, n, "stash_type other than 1 (f32)");
    if (onnx_need_f32(cx, n, 0, 2)) return TS_ERR_UNSUPPORTED;
    if (axis < -r || axis >= r) return onnx_invalid(cx, n, "axis %lld is out of range for rank %d", (long long)axis, r);
    if (axis < 0) axis += r;
    int64_t C = ts_numel(r - (int)axis, sh + axis), rows = ts_numel((int)axis, sh);
    if (C * rows == 0) return onnx_unsupported(cx, n, "an empty input");
    /* normalised over the trailing dims from axis: those flattened into one; scale and bias the
     * same (they must then have the trailing dims' full shape) */
    for (int k = 1; k <= 2; k++) {
        if (!onnx_has_in(n, k)) continue;
        int rk = onnx_in_shape(cx, n, k, ss);
        if (ts_numel(rk, ss) != C) return onnx_unsupported(cx, n, "input %d does not cover the normalised dims (broadcasting it is not supported)", k);
    }
    ts_graph *g = cx->g;
    int64_t two[2] = {rows, C};
    ts_value x = ts_reshape(g, onnx_in(cx, n, 0), 2, two), gb[2] = {TS_NONE, TS_NONE};
    for (int k = 1; k <= 2; k++)
        if (onnx_has_in(n, k)) gb[k - 1] = ts_reshape(g, onnx_in(cx, n, k), 1, &C);
    ts_value y = ts_layer_norm(g, x, gb[0], gb[1], eps);
    ts_status st = onnx_set(cx, n, 0, ts_reshape(g, y, r, sh));
    if (st || (!onnx_has_out(n, 1) && !onnx_has_out(n, 2))) return st;
    /* Mean and InvStdDev: the statistics over the normalised dims, kept as size-1 dims */
    int64_t ssh[TS_MAX_DIMS];
    for (int i = 0; i < r; i++) ssh[i] = i < axis ? sh[i] : 1;
    int ax1 = 1;
    ts_value mean = ts_reduce_mean(g, x, 1, &ax1, 1);
    ts_value d = ts_sub(g, x, mean);
    ts_value var = ts_reduce_mean(g, ts_mul(g, d, d), 1, &ax1, 1);
    ts_value inv = ts_div(g, ts_scalar(g, 1.f), ts_sqrt(g, ts_scale(g, var, 1.f, eps)));
    if ((st = onnx_set(cx, n, 1, ts_reshape(g, mean, r, ssh)))) return st;
    return onnx_set(cx, n, 2, ts_reshape(g, inv, r, ssh));
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"LayerNormalization", 17, 17, imp_layer_norm},
    {"InstanceNormalization", 9, 17, imp_instance_norm},
    {"LRN", 9, 17, imp_lrn},
    {"MeanVarianceNormalization", 9, 17, imp_mvn},
};
const onnx_family onnx_family_norm = {"norm", ops, (int)(sizeof ops / sizeof *ops)};
