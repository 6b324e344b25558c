/*
 * extra_norm.c — ONNX mappings of the normalisations beyond the core's, composed from tessera ops
 * on f32:
 *   LRN:  y = x / (bias + alpha / size * s)^beta, s[n, c, ..] the sum of x^2 over the channels
 *         c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2) that exist (a zero-padded window:
 *         ts_pad on axis 1, then size shifted slices added)
 *   InstanceNormalization: each [n, c] plane normalised, (x - mean) / sqrt(var + epsilon) (ts_layer_norm
 *         over the plane flattened), then * scale[c] + B[c]
 *   MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), means over `axes`
 *         (default 0, 2, 3), as the function body ONNX gives for it
 */
#include "onnx/extra.h"

ts_status ex_lrn(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], pads[TS_MAX_DIMS * 2] = {0};
    int r = onnx_in_shape(cx, n, 0, sh);
    float alpha = onnx_attr_float(cx, n, "alpha", 1e-4f), beta = onnx_attr_float(cx, n, "beta", 0.75f);
    float bias = onnx_attr_float(cx, n, "bias", 1.f);
    int64_t size = onnx_attr_int(cx, n, "size", 0);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (size < 1) return onnx_invalid(cx, n, "size %lld", (long long)size);
    if (size > 4096) return onnx_unsupported(cx, n, "size %lld (at most 4096)", (long long)size);
    if (r < 3) return onnx_invalid(cx, n, "the input has rank %d; LRN takes [N, C, D1, ..]", r);
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
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
    return onnx_set(cx, n, 0, ts_div(g, x, ts_pow(g, base, ex_scalar(g, TS_F32, beta))));
}

ts_status ex_instance_norm(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], ps[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    float eps = onnx_attr_float(cx, n, "epsilon", 1e-5f);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (r < 3) return onnx_invalid(cx, n, "the input has rank %d; it must be [N, C, D1, ..]", r);
    for (int k = 1; k <= 2; k++)
        if (onnx_in_shape(cx, n, k, ps) != 1 || ps[0] != sh[1]) return onnx_invalid(cx, n, "input %d must be [C]", k);
    if (onnx_need_f32(cx, n, 0, 2) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t rows[2] = {sh[0] * sh[1], ts_numel(r - 2, sh + 2)}, csh[TS_MAX_DIMS];
    ts_value y = ts_layer_norm(g, ts_reshape(g, onnx_in(cx, n, 0), 2, rows), TS_NONE, TS_NONE, eps);
    y = ts_reshape(g, y, r, sh);
    csh[0] = sh[1];
    for (int i = 1; i < r - 1; i++) csh[i] = 1;
    ts_value scale = ts_reshape(g, onnx_in(cx, n, 1), r - 1, csh), bias = ts_reshape(g, onnx_in(cx, n, 2), r - 1, csh);
    return onnx_set(cx, n, 0, ts_add(g, ts_mul(g, y, scale), bias));
}

ts_status ex_mvn(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], ax[TS_MAX_DIMS * 2] = {0, 2, 3};
    int r = onnx_in_shape(cx, n, 0, sh), axes[TS_MAX_DIMS];
    int na = onnx_attr_ints(cx, n, "axes", ax, TS_MAX_DIMS * 2);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (na < 0) na = 3;
    unsigned seen = 0;
    for (int i = 0; i < na; i++) {
        if ((axes[i] = ex_axis(cx, n, ax[i], r, "axis")) < 0) return TS_ERR_UNSUPPORTED;
        if (seen >> axes[i] & 1) return onnx_invalid(cx, n, "axis %lld is listed twice", (long long)ax[i]);
        seen |= 1u << axes[i];
    }
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0);
    ts_value mean = ts_reduce_mean(g, x, na, axes, 1);
    ts_value var = ts_sub(g, ts_reduce_mean(g, ts_mul(g, x, x), na, axes, 1), ts_mul(g, mean, mean));
    ts_value sd = ts_scale(g, ts_sqrt(g, var), 1.f, 1e-9f);
    return onnx_set(cx, n, 0, ts_div(g, ts_sub(g, x, mean), sd));
}
