/*
 * quant.c — ONNX mappings of the 8-bit quantization ops, composed in f32 (exact for 8-bit
 * values and for integer sums below 2^24), with UINT8 as tessera's u8:
 *   QuantizeLinear:   y = saturate(round(x / scale) + zero_point)   (round: halves to even; saturate
 *                     to 0..255), scale and zero_point scalars or, from opset 13, per `axis`
 *   DequantizeLinear: y = (x - zero_point) * scale, x u8 or i32
 *   DynamicQuantizeLinear: lo = min(0, min x), hi = max(0, max x), scale = (hi - lo) / 255,
 *                     zero_point = saturate(round(-lo / scale)), y = saturate(round(x / scale) + zero_point)
 *   MatMulInteger:    y (i32) = (a - a_zero_point) @ (b - b_zero_point)
 *   QLinearMatMul:    y = saturate(round(((a - a_zp) @ (b - b_zp)) * (a_scale b_scale / y_scale)) + y_zp)
 * INT8 values (initializers, and QuantizeLinear's output with an INT8 zero point: saturate to
 * -128..127) are f32 holding the integers (onnx_val.i8); DequantizeLinear takes them as u8.
 * A known scale must be a finite number above 0 (0 or NaN would make every value 0 or NaN: the
 * model is broken, and saying so beats computing it).
 * A QDQ MatMul (DequantizeLinear on both operands) runs on tessera's int8 matmul: quant_matmul.c.
 */
#include <math.h>

#include "onnx/map/map.h"

/* v reshaped to broadcast along axis `axis` of a rank-r value: a 1-D [C] becomes [1, .., C, .., 1];
 * scalars (any rank, one element) become rank 0. */
static ts_value along(ts_graph *g, ts_onnx_ctx *cx, const ts_onnx_node *n, int k, int r, int axis) {
    int64_t s[TS_MAX_DIMS], sh[TS_MAX_DIMS];
    int rk = onnx_in_shape(cx, n, k, s);
    ts_value v = onnx_in(cx, n, k);
    if (ts_numel(rk, s) == 1) return ts_reshape(g, v, 0, NULL);
    for (int i = 0; i < r; i++) sh[i] = i == axis ? s[0] : 1;
    return ts_reshape(g, v, r, sh);
}

/* scale / zero point input k: one element, or (per_axis) [C] with C the size of the axis. */
static int check_param(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, int per_axis, int64_t C) {
    int64_t s[TS_MAX_DIMS];
    int rk = onnx_in_shape(cx, n, k, s);
    if (ts_numel(rk, s) == 1) return 0;
    if (per_axis && rk == 1 && s[0] == C) return 0;
    onnx_invalid(cx, n, "input %d must be a scalar%s", k, per_axis ? " or [C] along axis" : "");
    return -1;
}

/* The axis of per-axis scales (opset 13): normalised when a scale or zero point has more than one
 * element (the attribute is unused otherwise), -1 after refusing. */
static int quant_axis(ts_onnx_ctx *cx, const ts_onnx_node *n, int r) {
    int64_t s[TS_MAX_DIMS], a = onnx_attr_int(cx, n, "axis", 1);
    if (cx->node_refused) return -1;
    for (int k = 1; k <= 2; k++)
        if (onnx_has_in(n, k) && ts_numel(onnx_in_shape(cx, n, k, s), s) > 1) return map_axis(cx, n, a, r, "axis");
    return 0;
}

static ts_value saturate_u8(ts_graph *g, ts_value v) {
    v = ts_binary(g, TS_BIN_MIN, ts_binary(g, TS_BIN_MAX, v, map_scalar(g, TS_F32, 0)), map_scalar(g, TS_F32, 255));
    return ts_cast(g, v, TS_U8);
}

static ts_value rnd(ts_graph *g, ts_value v) { return ts_math(g, TS_MATH_ROUND, v, 0, 0); }

/* 1 when input k of node n is an INT8 value (held in f32). */
static int in_i8(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    onnx_val *v = onnx_has_in(n, k) ? onnx_lookup(cx, n->input[k]) : NULL;
    return v && v->i8;
}

/* Refuse a known scale (input 1) with an element that is 0, negative, NaN or infinite. */
static int bad_scale(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *s = onnx_known(cx, n, 1);
    for (int64_t i = 0, m = s ? ts_tensor_numel(s) : 0; i < m; i++) {
        double v = onnx_get_f64(s, i);
        if (!(v > 0) || !isfinite(v)) {
            onnx_invalid(cx, n, "scale%s%lld is %g: a quantization scale must be a finite number above 0",
                         m > 1 ? " element " : "", m > 1 ? (long long)i : 0LL, v);
            return 1;
        }
    }
    return 0;
}

static ts_status imp_quantize_linear(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh), per_axis = cx->opset >= 13, axis = 0;
    if (per_axis && (axis = quant_axis(cx, n, r)) < 0) return TS_ERR_UNSUPPORTED;
    if (onnx_need_f32(cx, n, 0, 1) || map_need_nonempty(cx, n, 0) || bad_scale(cx, n)) return TS_ERR_UNSUPPORTED;
    int i8 = in_i8(cx, n, 2);
    if (onnx_has_in(n, 2) && !i8 && onnx_need_dtype(cx, n, 2, (const ts_dtype[]){TS_U8}, 1)) return TS_ERR_UNSUPPORTED;
    if (check_param(cx, n, 1, per_axis && r, r ? sh[axis] : 1) ||
        (onnx_has_in(n, 2) && check_param(cx, n, 2, per_axis && r, r ? sh[axis] : 1)))
        return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value q = rnd(g, ts_div(g, onnx_in(cx, n, 0), along(g, cx, n, 1, r, axis)));
    if (onnx_has_in(n, 2)) q = ts_add(g, q, ts_cast(g, along(g, cx, n, 2, r, axis), TS_F32));
    if (!i8) return onnx_set(cx, n, 0, saturate_u8(g, q));
    q = ts_binary(g, TS_BIN_MIN, ts_binary(g, TS_BIN_MAX, q, map_scalar(g, TS_F32, -128)), map_scalar(g, TS_F32, 127));
    ts_status st = onnx_set(cx, n, 0, q);
    onnx_val *out = st ? NULL : onnx_lookup(cx, n->output[0]);
    if (out) out->i8 = 1;
    return st;
}

static ts_status imp_dequantize_linear(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh), per_axis = cx->opset >= 13, axis = 0;
    if (per_axis && (axis = quant_axis(cx, n, r)) < 0) return TS_ERR_UNSUPPORTED;
    int i8 = in_i8(cx, n, 0);
    if ((!i8 && onnx_need_dtype(cx, n, 0, (const ts_dtype[]){TS_U8, TS_I32}, 2)) || onnx_need_f32(cx, n, 1, 1) ||
        map_need_nonempty(cx, n, 0) || bad_scale(cx, n))
        return TS_ERR_UNSUPPORTED;
    if (onnx_has_in(n, 2) && (onnx_in_dtype(cx, n, 2) != onnx_in_dtype(cx, n, 0) || in_i8(cx, n, 2) != i8))
        return onnx_invalid(cx, n, "x and x_zero_point differ in dtype");
    if (check_param(cx, n, 1, per_axis && r, r ? sh[axis] : 1) ||
        (onnx_has_in(n, 2) && check_param(cx, n, 2, per_axis && r, r ? sh[axis] : 1)))
        return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = ts_cast(g, onnx_in(cx, n, 0), TS_F32);
    if (onnx_has_in(n, 2)) x = ts_sub(g, x, ts_cast(g, along(g, cx, n, 2, r, axis), TS_F32));
    return onnx_set(cx, n, 0, ts_mul(g, x, along(g, cx, n, 1, r, axis)));
}

static ts_status imp_dynamic_quantize_linear(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0), zero = map_scalar(g, TS_F32, 0);
    ts_value lo = ts_binary(g, TS_BIN_MIN, ts_reduce_min(g, x, 0, NULL, 0), zero);
    ts_value hi = ts_binary(g, TS_BIN_MAX, ts_reduce_max(g, x, 0, NULL, 0), zero);
    ts_value scale = ts_div(g, ts_sub(g, hi, lo), map_scalar(g, TS_F32, 255));
    ts_value zp = saturate_u8(g, rnd(g, ts_div(g, ts_scale(g, lo, -1.f, 0.f), scale)));
    ts_value y = saturate_u8(g, ts_add(g, rnd(g, ts_div(g, x, scale)), ts_cast(g, zp, TS_F32)));
    ts_status s = onnx_set(cx, n, 0, y);
    if (!s) s = onnx_set(cx, n, 1, scale);
    if (!s) s = onnx_set(cx, n, 2, zp);
    return s;
}

/* (a - a_zp) @ (b - b_zp) in f32 for u8 a [.., M, K] and b [K, N] (or batched as a): inputs ia, iazp,
 * ib, ibzp (a zp index < 0: none). TS_NONE after refusing. */
static ts_value int_matmul(ts_onnx_ctx *cx, const ts_onnx_node *n, int ia, int iazp, int ib, int ibzp) {
    ts_graph *g = cx->g;
    int64_t a[TS_MAX_DIMS], b[TS_MAX_DIMS], z[TS_MAX_DIMS];
    int ra = onnx_in_shape(cx, n, ia, a), rb = onnx_in_shape(cx, n, ib, b);
    const ts_dtype u8[] = {TS_U8};
    if (onnx_need_dtype(cx, n, ia, u8, 1) || onnx_need_dtype(cx, n, ib, u8, 1)) return TS_NONE;
    for (int k = 0; k < 2; k++) {
        int zi = k ? ibzp : iazp;
        if (zi < 0 || !onnx_has_in(n, zi)) continue;
        if (onnx_need_dtype(cx, n, zi, u8, 1)) return TS_NONE;
        if (ts_numel(onnx_in_shape(cx, n, zi, z), z) != 1) {
            onnx_unsupported(cx, n, "a per-row or per-column zero point (input %d)", zi);
            return TS_NONE;
        }
    }
    int same_batch = rb == ra && !memcmp(a, b, sizeof(int64_t) * (size_t)(ra - 2));
    if (ra < 2 || (rb != 2 && !same_batch) || a[ra - 1] != b[rb - 2]) {
        onnx_unsupported(cx, n, "shapes other than A [.., M, K] @ B [K, N] or batched alike");
        return TS_NONE;
    }
    if (b[rb - 2] * 255 * 255 >= ((int64_t)1 << 24)) {
        onnx_unsupported(cx, n, "K = %lld (sums beyond 2^24 would not be exact in f32)", (long long)b[rb - 2]);
        return TS_NONE;
    }
    if (map_need_nonempty(cx, n, ia) || map_need_nonempty(cx, n, ib)) return TS_NONE;
    ts_value av = ts_cast(g, onnx_in(cx, n, ia), TS_F32), bv = ts_cast(g, onnx_in(cx, n, ib), TS_F32);
    if (iazp >= 0 && onnx_has_in(n, iazp))
        av = ts_sub(g, av, ts_cast(g, ts_reshape(g, onnx_in(cx, n, iazp), 0, NULL), TS_F32));
    if (ibzp >= 0 && onnx_has_in(n, ibzp))
        bv = ts_sub(g, bv, ts_cast(g, ts_reshape(g, onnx_in(cx, n, ibzp), 0, NULL), TS_F32));
    return ts_matmul(g, av, bv, 0, 0);
}

static ts_status imp_matmul_integer(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    ts_value y = int_matmul(cx, n, 0, 2, 1, 3);
    if (y == TS_NONE) return cx->node_refused ? TS_ERR_UNSUPPORTED : onnx_check(cx, n);
    return onnx_set(cx, n, 0, ts_cast(cx->g, y, TS_I32));
}

static ts_status imp_qlinear_matmul(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t s[TS_MAX_DIMS];
    if (onnx_need_f32(cx, n, 1, 1) || onnx_need_f32(cx, n, 4, 4) || onnx_need_f32(cx, n, 6, 6)) /* the scales */
        return TS_ERR_UNSUPPORTED;
    for (int k = 1; k < 8; k++)
        if (k != 3 && ts_numel(onnx_in_shape(cx, n, k, s), s) != 1)
            return onnx_unsupported(cx, n, "input %d is not a scalar (per-axis quantization)", k);
    if (onnx_need_dtype(cx, n, 7, (const ts_dtype[]){TS_U8}, 1)) return TS_ERR_UNSUPPORTED;
    ts_value c = int_matmul(cx, n, 0, 2, 3, 5);
    if (c == TS_NONE) return cx->node_refused ? TS_ERR_UNSUPPORTED : onnx_check(cx, n);
    ts_graph *g = cx->g;
    ts_value sa = ts_reshape(g, onnx_in(cx, n, 1), 0, NULL), sb = ts_reshape(g, onnx_in(cx, n, 4), 0, NULL);
    ts_value sy = ts_reshape(g, onnx_in(cx, n, 6), 0, NULL);
    ts_value q = rnd(g, ts_mul(g, c, ts_div(g, ts_mul(g, sa, sb), sy)));
    q = ts_add(g, q, ts_cast(g, ts_reshape(g, onnx_in(cx, n, 7), 0, NULL), TS_F32));
    return onnx_set(cx, n, 0, saturate_u8(g, q));
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"QuantizeLinear", 10, 17, imp_quantize_linear},
    {"DequantizeLinear", 10, 17, imp_dequantize_linear},
    {"DynamicQuantizeLinear", 11, 17, imp_dynamic_quantize_linear},
    {"MatMulInteger", 10, 17, imp_matmul_integer},
    {"QLinearMatMul", 10, 17, imp_qlinear_matmul},
};
const onnx_family onnx_family_quant = {"quant", ops, (int)(sizeof ops / sizeof *ops)};
