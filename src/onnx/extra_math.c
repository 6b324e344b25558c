/*
 * extra_math.c — ONNX mappings of the elementwise ops beyond the core: the unary maths (Abs, Neg,
 * Floor, Ceil, Round, Sign, Reciprocal, the trigonometric and hyperbolic functions, Erf) and
 * activations (Softplus, Softsign, Elu, Selu, Celu, LeakyRelu, ThresholdedRelu, Shrink, PRelu) on
 * ts_math; IsNaN, IsInf, Not; the comparisons, And / Or / Xor, Mod and BitShift on ts_binary; and
 * the variadic Max, Min, Sum, Mean.
 *
 * Known inputs are computed on the host (in double for floats, in int64 for integers, as
 * fold.c does), so shape arithmetic such as Neg of an axis folds; graph values take the dtypes
 * tessera's ops take (f32 for the maths; f32, i32, i64 and u8 / BOOL for ts_binary) and any
 * other is refused as unsupported.
 */
#include "onnx/extra.h"

#include <math.h>

static int is_int(ts_dtype d) { return d == TS_I32 || d == TS_I64 || d == TS_U8; }
static int is_float(ts_dtype d) { return d == TS_F32 || d == TS_F16 || d == TS_BF16; }

/* ------------------------------------------------------------------ unary maths */

/* f(x) in double: the formulas of src/ops/mathfn.c. */
static double host_math(ts_math_fn fn, double x, double a, double b) {
    switch (fn) {
    case TS_MATH_ABS: return fabs(x);
    case TS_MATH_NEG: return -x;
    case TS_MATH_FLOOR: return floor(x);
    case TS_MATH_CEIL: return ceil(x);
    case TS_MATH_ROUND: return nearbyint(x);
    case TS_MATH_SIGN: return x > 0 ? 1 : x < 0 ? -1 : x;
    case TS_MATH_RECIPROCAL: return 1 / x;
    case TS_MATH_SIN: return sin(x);
    case TS_MATH_COS: return cos(x);
    case TS_MATH_TAN: return tan(x);
    case TS_MATH_ASIN: return asin(x);
    case TS_MATH_ACOS: return acos(x);
    case TS_MATH_ATAN: return atan(x);
    case TS_MATH_SINH: return sinh(x);
    case TS_MATH_COSH: return cosh(x);
    case TS_MATH_ASINH: return asinh(x);
    case TS_MATH_ACOSH: return acosh(x);
    case TS_MATH_ATANH: return atanh(x);
    case TS_MATH_ERF: return erf(x);
    case TS_MATH_SOFTPLUS: return (x > 0 ? x : 0) + log1p(exp(-fabs(x)));
    case TS_MATH_SOFTSIGN: return x / (1 + fabs(x));
    case TS_MATH_ELU: return x > 0 ? x : a * expm1(x);
    case TS_MATH_SELU: return b * (x > 0 ? x : a * expm1(x));
    case TS_MATH_CELU: return (x > 0 ? x : 0) + fmin(0, a * expm1(x / a));
    case TS_MATH_LEAKY_RELU: return x < 0 ? a * x : x;
    case TS_MATH_THRESHOLDED_RELU: return x > a ? x : 0;
    case TS_MATH_SHRINK: return x < -a ? x + b : x > a ? x - b : 0;
    default: return NAN;
    }
}

/* y = fn(x): on the host for a known x (integers only for the functions exact on them), else
 * ts_math on an f32 graph value. */
static ts_status unary(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_math_fn fn, float a, float b) {
    onnx_attr_ignore(cx, n, "consumed_inputs"); /* opset < 6 bookkeeping */
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k && (is_float(k->dtype) || is_int(k->dtype))) {
        int exact_int = fn == TS_MATH_ABS || fn == TS_MATH_NEG || fn == TS_MATH_SIGN || fn == TS_MATH_FLOOR ||
                        fn == TS_MATH_CEIL || fn == TS_MATH_ROUND;
        if (is_int(k->dtype) && !exact_int)
            return onnx_unsupported(cx, n, "%s of an integer tensor", ts_math_fn_name(fn));
        ts_tensor *t = ts_tensor_new(k->dtype, k->ndim, k->shape);
        for (int64_t i = 0, cnt = ts_tensor_numel(k); t && i < cnt; i++) {
            if (is_int(k->dtype)) {
                int64_t v = onnx_get_i64(k, i);
                int64_t r = fn == TS_MATH_ABS ? (v < 0 ? (int64_t)(0 - (uint64_t)v) : v)
                          : fn == TS_MATH_NEG ? (int64_t)(0 - (uint64_t)v)
                          : fn == TS_MATH_SIGN ? (v > 0) - (v < 0) : v;
                onnx_put_i64(t, i, r);
            } else {
                onnx_put_f64(t, i, host_math(fn, (float)onnx_get_f64(k, i), a, b));
            }
        }
        return onnx_set_known(cx, n, 0, t);
    }
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_math(cx->g, fn, onnx_in(cx, n, 0), a, b));
}

#define UNARY(NAME, FN)                                                                            \
    ts_status ex_##NAME(ts_onnx_ctx *cx, const ts_onnx_node *n) { return unary(cx, n, FN, 0.f, 0.f); }
UNARY(abs, TS_MATH_ABS)
UNARY(neg, TS_MATH_NEG)
UNARY(floor, TS_MATH_FLOOR)
UNARY(ceil, TS_MATH_CEIL)
UNARY(round, TS_MATH_ROUND)
UNARY(sign, TS_MATH_SIGN)
UNARY(reciprocal, TS_MATH_RECIPROCAL)
UNARY(sin, TS_MATH_SIN)
UNARY(cos, TS_MATH_COS)
UNARY(tan, TS_MATH_TAN)
UNARY(asin, TS_MATH_ASIN)
UNARY(acos, TS_MATH_ACOS)
UNARY(atan, TS_MATH_ATAN)
UNARY(sinh, TS_MATH_SINH)
UNARY(cosh, TS_MATH_COSH)
UNARY(asinh, TS_MATH_ASINH)
UNARY(acosh, TS_MATH_ACOSH)
UNARY(atanh, TS_MATH_ATANH)
UNARY(erf, TS_MATH_ERF)
UNARY(softplus, TS_MATH_SOFTPLUS)
UNARY(softsign, TS_MATH_SOFTSIGN)

/* The activations with attributes, at ONNX's defaults. */
ts_status ex_elu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return unary(cx, n, TS_MATH_ELU, onnx_attr_float(cx, n, "alpha", 1.f), 0.f);
}
ts_status ex_selu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    float a = onnx_attr_float(cx, n, "alpha", 1.67326319217681884765625f);
    return unary(cx, n, TS_MATH_SELU, a, onnx_attr_float(cx, n, "gamma", 1.05070102214813232421875f));
}
ts_status ex_celu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    float a = onnx_attr_float(cx, n, "alpha", 1.f);
    if (a == 0.f) return onnx_invalid(cx, n, "alpha is 0");
    return unary(cx, n, TS_MATH_CELU, a, 0.f);
}
ts_status ex_leaky_relu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return unary(cx, n, TS_MATH_LEAKY_RELU, onnx_attr_float(cx, n, "alpha", 0.01f), 0.f);
}
ts_status ex_thresholded_relu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return unary(cx, n, TS_MATH_THRESHOLDED_RELU, onnx_attr_float(cx, n, "alpha", 1.f), 0.f);
}
ts_status ex_shrink(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    float lambd = onnx_attr_float(cx, n, "lambd", 0.5f), bias = onnx_attr_float(cx, n, "bias", 0.f);
    return unary(cx, n, TS_MATH_SHRINK, lambd, bias);
}

/* PRelu: x < 0 ? slope x : x, slope broadcast to x (unidirectionally). */
ts_status ex_prelu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sx[TS_MAX_DIMS], ss[TS_MAX_DIMS], so[TS_MAX_DIMS];
    int rx = onnx_in_shape(cx, n, 0, sx), rs = onnx_in_shape(cx, n, 1, ss);
    onnx_attr_ignore(cx, n, "consumed_inputs");
    int ro = onnx_bcast(rx, sx, rs, ss, so);
    if (ro != rx || memcmp(so, sx, sizeof(int64_t) * (size_t)rx) != 0)
        return onnx_invalid(cx, n, "slope does not broadcast to X");
    if (onnx_need_f32(cx, n, 0, 1) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0), slope = onnx_in(cx, n, 1);
    ts_value neg = ts_binary(g, TS_BIN_LESS, x, ex_scalar(g, TS_F32, 0));
    return onnx_set(cx, n, 0, ts_where(g, neg, ts_mul(g, x, slope), x));
}

/* ------------------------------------------------------------------ predicates */

ts_status ex_isnan(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k && is_float(k->dtype)) {
        ts_tensor *t = ts_tensor_new(TS_U8, k->ndim, k->shape);
        for (int64_t i = 0, c = ts_tensor_numel(k); t && i < c; i++)
            ((uint8_t *)t->data)[i] = isnan(onnx_get_f64(k, i));
        return onnx_set_known(cx, n, 0, t);
    }
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_isnan(cx->g, onnx_in(cx, n, 0)));
}

ts_status ex_isinf(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int neg = onnx_attr_int(cx, n, "detect_negative", 1) != 0, pos = onnx_attr_int(cx, n, "detect_positive", 1) != 0;
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k && is_float(k->dtype)) {
        ts_tensor *t = ts_tensor_new(TS_U8, k->ndim, k->shape);
        for (int64_t i = 0, c = ts_tensor_numel(k); t && i < c; i++) {
            double v = onnx_get_f64(k, i);
            ((uint8_t *)t->data)[i] = (pos && v == INFINITY) || (neg && v == -INFINITY);
        }
        return onnx_set_known(cx, n, 0, t);
    }
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_isinf(cx->g, onnx_in(cx, n, 0), pos, neg));
}

ts_status ex_not(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (onnx_in_dtype(cx, n, 0) != TS_U8) return onnx_invalid(cx, n, "the input is not BOOL");
    if (k) {
        ts_tensor *t = ts_tensor_new(TS_U8, k->ndim, k->shape);
        for (int64_t i = 0, c = ts_tensor_numel(k); t && i < c; i++)
            ((uint8_t *)t->data)[i] = ((uint8_t *)k->data)[i] == 0;
        return onnx_set_known(cx, n, 0, t);
    }
    if (ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_not(cx->g, onnx_in(cx, n, 0)));
}

/* ------------------------------------------------------------------ binary */

/* Is op on 16-bit floats of dtype d computed exactly by widening them to f32 (and rounding the
 * result back)? Comparisons, min / max and fmod: their f32 result is a value of d already. */
static int exact_in_f32(ts_dtype d, ts_binop op) {
    return (d == TS_F16 || d == TS_BF16) &&
           (op <= TS_BIN_GREATER_EQUAL || op == TS_BIN_MIN || op == TS_BIN_MAX || op == TS_BIN_FMOD);
}

/* op(a, b) with broadcasting: host_op on known inputs (hop < 0: none, build it), else ts_binary.
 * Results are BOOL (u8) for comparisons and logic (out_bool), else the inputs' dtype. */
static ts_status binary(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_binop op, int hop, int out_bool) {
    int64_t a[TS_MAX_DIMS], b[TS_MAX_DIMS], o[TS_MAX_DIMS];
    int ra = onnx_in_shape(cx, n, 0, a), rb = onnx_in_shape(cx, n, 1, b);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (onnx_bcast(ra, a, rb, b, o) < 0) return onnx_invalid(cx, n, "the input shapes do not broadcast");
    ts_dtype da = onnx_in_dtype(cx, n, 0), db = onnx_in_dtype(cx, n, 1);
    if (da != db)
        return onnx_invalid(cx, n, "the inputs differ in dtype (%s, %s)", ts_dtype_name(da), ts_dtype_name(db));
    if (hop >= 0 && onnx_all_known(cx, n))
        return onnx_set_known(cx, n, 0, onnx_host_binary((onnx_binop)hop, onnx_known(cx, n, 0), onnx_known(cx, n, 1),
                                                         out_bool ? TS_U8 : da));
    if (ex_need_nonempty(cx, n, 0) || ex_need_nonempty(cx, n, 1)) return TS_ERR_UNSUPPORTED;
    if (exact_in_f32(da, op)) {
        ts_graph *g = cx->g;
        ts_value y = ts_binary(g, op, ts_cast(g, onnx_in(cx, n, 0), TS_F32), ts_cast(g, onnx_in(cx, n, 1), TS_F32));
        return onnx_set(cx, n, 0, out_bool ? y : ts_cast(g, y, da));
    }
    if (!ex_binary_dtype(da)) return onnx_need_dtype(cx, n, 0, (const ts_dtype[]){TS_F32, TS_I32, TS_I64, TS_U8}, 4);
    return onnx_set(cx, n, 0, ts_binary(cx->g, op, onnx_in(cx, n, 0), onnx_in(cx, n, 1)));
}

ts_status ex_equal(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, TS_BIN_EQUAL, ONNX_EQUAL, 1); }
ts_status ex_less(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, TS_BIN_LESS, ONNX_LESS, 1); }
ts_status ex_less_equal(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return binary(cx, n, TS_BIN_LESS_EQUAL, ONNX_LESS_EQ, 1);
}
ts_status ex_greater(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, TS_BIN_GREATER, ONNX_GREATER, 1); }
ts_status ex_greater_equal(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return binary(cx, n, TS_BIN_GREATER_EQUAL, ONNX_GREATER_EQ, 1);
}

static ts_status logic(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_binop op, onnx_binop hop) {
    if (onnx_in_dtype(cx, n, 0) != TS_U8 || onnx_in_dtype(cx, n, 1) != TS_U8)
        return onnx_invalid(cx, n, "the inputs are not BOOL");
    return binary(cx, n, op, hop, 1);
}
ts_status ex_and(ts_onnx_ctx *cx, const ts_onnx_node *n) { return logic(cx, n, TS_BIN_AND, ONNX_AND); }
ts_status ex_or(ts_onnx_ctx *cx, const ts_onnx_node *n) { return logic(cx, n, TS_BIN_OR, ONNX_OR); }
ts_status ex_xor(ts_onnx_ctx *cx, const ts_onnx_node *n) { return logic(cx, n, TS_BIN_XOR, ONNX_XOR); }

/* Mod: fmod = 0, the sign of the divisor (integers only); fmod = 1, C's fmod. An integer divisor of
 * zero fails the run (ts_binary); on known inputs fold.c's host arithmetic gives 0. */
ts_status ex_mod(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int fm = onnx_attr_int(cx, n, "fmod", 0) != 0;
    if (!fm && is_float(onnx_in_dtype(cx, n, 0))) return onnx_invalid(cx, n, "fmod = 0 on floating-point inputs");
    return binary(cx, n, fm ? TS_BIN_FMOD : TS_BIN_MOD, fm ? ONNX_FMOD : ONNX_MOD, 0);
}

ts_status ex_bitshift(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const char *dir = onnx_attr_string(cx, n, "direction", "");
    int left = !strcmp(dir, "LEFT");
    if (!left && strcmp(dir, "RIGHT")) return onnx_invalid(cx, n, "direction '%s' is neither LEFT nor RIGHT", dir);
    if (!is_int(onnx_in_dtype(cx, n, 0))) return onnx_invalid(cx, n, "the inputs are not unsigned integers");
    return binary(cx, n, left ? TS_BIN_SHL : TS_BIN_SHR, -1, 0);
}

/* ------------------------------------------------------------------ variadic */

/* Max / Min / Sum / Mean of n >= 1 inputs with broadcasting, left to right. */
static ts_status variadic(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_binop op, onnx_binop hop, int mean) {
    int m = onnx_nin(n);
    int64_t sh[TS_MAX_DIMS], s[TS_MAX_DIMS], o[TS_MAX_DIMS];
    if (m < 1) return onnx_invalid(cx, n, "no inputs");
    onnx_attr_ignore(cx, n, "consumed_inputs");
    int r = onnx_in_shape(cx, n, 0, sh);
    ts_dtype d = onnx_in_dtype(cx, n, 0);
    for (int k = 0; k < m; k++) {
        if (!onnx_has_in(n, k)) return onnx_invalid(cx, n, "input %d is absent", k);
        int rk = onnx_in_shape(cx, n, k, s);
        if (onnx_in_dtype(cx, n, k) != d) return onnx_invalid(cx, n, "the inputs differ in dtype");
        if ((r = onnx_bcast(r, sh, rk, s, o)) < 0) return onnx_invalid(cx, n, "the input shapes do not broadcast");
        memcpy(sh, o, sizeof sh);
    }
    if (mean && !is_float(d)) return onnx_invalid(cx, n, "Mean of %s inputs", ts_dtype_name(d));
    if (onnx_all_known(cx, n)) {
        ts_tensor *acc = ts_tensor_from(d, onnx_known(cx, n, 0)->ndim, onnx_known(cx, n, 0)->shape,
                                        onnx_known(cx, n, 0)->data);
        for (int k = 1; acc && k < m; k++) {
            ts_tensor *next = onnx_host_binary(hop, acc, onnx_known(cx, n, k), d);
            ts_tensor_free(acc);
            acc = next;
        }
        for (int64_t i = 0, c = acc ? ts_tensor_numel(acc) : 0; mean && i < c; i++)
            onnx_put_f64(acc, i, onnx_get_f64(acc, i) / m);
        return onnx_set_known(cx, n, 0, acc);
    }
    int widen = exact_in_f32(d, op);
    if (!widen && (!ex_binary_dtype(d) || (mean && d != TS_F32)))
        return onnx_need_dtype(cx, n, 0, (const ts_dtype[]){TS_F32, TS_I32, TS_I64, TS_U8}, mean ? 1 : 4);
    for (int k = 0; k < m; k++)
        if (ex_need_nonempty(cx, n, k)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value acc = onnx_in(cx, n, 0);
    if (widen) acc = ts_cast(g, acc, TS_F32);
    for (int k = 1; k < m; k++)
        acc = ts_binary(g, op, acc, widen ? ts_cast(g, onnx_in(cx, n, k), TS_F32) : onnx_in(cx, n, k));
    if (mean && m > 1) acc = ts_div(g, acc, ex_scalar(g, TS_F32, m));
    if (widen) acc = ts_cast(g, acc, d);
    return onnx_set(cx, n, 0, acc);
}

ts_status ex_max(ts_onnx_ctx *cx, const ts_onnx_node *n) { return variadic(cx, n, TS_BIN_MAX, ONNX_MAX, 0); }
ts_status ex_min(ts_onnx_ctx *cx, const ts_onnx_node *n) { return variadic(cx, n, TS_BIN_MIN, ONNX_MIN, 0); }
ts_status ex_sum(ts_onnx_ctx *cx, const ts_onnx_node *n) { return variadic(cx, n, TS_BIN_ADD, ONNX_ADD, 0); }
ts_status ex_mean(ts_onnx_ctx *cx, const ts_onnx_node *n) { return variadic(cx, n, TS_BIN_ADD, ONNX_ADD, 1); }
