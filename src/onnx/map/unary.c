/*
 * unary.c — ONNX mappings of the elementwise ops of one input: the unary maths (Abs, Neg, Floor,
 * Ceil, Round, Sign, Reciprocal, the trigonometric and hyperbolic functions, Erf) on ts_math; the
 * activations (Relu, Sigmoid, Tanh, Exp, Log, Sqrt on tessera's own ops; Softplus, Softsign, Elu,
 * Selu, Celu, LeakyRelu, ThresholdedRelu, Shrink on ts_math; PRelu; Clip, HardSigmoid,
 * HardSwish); the predicates IsNaN, IsInf.
 *
 * Known inputs are computed on the host (in double for floats, in int64 for integers, as fold.c
 * does), so shape arithmetic such as Neg of an axis folds; graph values take f32, as tessera's
 * ops do, and any other dtype is refused as unsupported.
 */

#include "onnx/map/map.h"

#include <float.h>
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
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_math(cx->g, fn, onnx_in(cx, n, 0), a, b));
}

#define UNARY(NAME, FN)                                                                            \
    static ts_status imp_##NAME(ts_onnx_ctx *cx, const ts_onnx_node *n) { return unary(cx, n, FN, 0.f, 0.f); }
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
static ts_status imp_elu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return unary(cx, n, TS_MATH_ELU, onnx_attr_float(cx, n, "alpha", 1.f), 0.f);
}
static ts_status imp_selu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    float a = onnx_attr_float(cx, n, "alpha", 1.67326319217681884765625f);
    return unary(cx, n, TS_MATH_SELU, a, onnx_attr_float(cx, n, "gamma", 1.05070102214813232421875f));
}
static ts_status imp_celu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    float a = onnx_attr_float(cx, n, "alpha", 1.f);
    if (a == 0.f) return onnx_invalid(cx, n, "alpha is 0");
    return unary(cx, n, TS_MATH_CELU, a, 0.f);
}
static ts_status imp_leaky_relu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return unary(cx, n, TS_MATH_LEAKY_RELU, onnx_attr_float(cx, n, "alpha", 0.01f), 0.f);
}
static ts_status imp_thresholded_relu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return unary(cx, n, TS_MATH_THRESHOLDED_RELU, onnx_attr_float(cx, n, "alpha", 1.f), 0.f);
}
static ts_status imp_shrink(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    float lambd = onnx_attr_float(cx, n, "lambd", 0.5f), bias = onnx_attr_float(cx, n, "bias", 0.f);
    return unary(cx, n, TS_MATH_SHRINK, lambd, bias);
}

/* PRelu: x < 0 ? slope x : x, slope broadcast to x (unidirectionally). */
static ts_status imp_prelu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sx[TS_MAX_DIMS], ss[TS_MAX_DIMS], so[TS_MAX_DIMS];
    int rx = onnx_in_shape(cx, n, 0, sx), rs = onnx_in_shape(cx, n, 1, ss);
    onnx_attr_ignore(cx, n, "consumed_inputs");
    int ro = onnx_bcast(rx, sx, rs, ss, so);
    if (ro != rx || memcmp(so, sx, sizeof(int64_t) * (size_t)rx) != 0)
        return onnx_invalid(cx, n, "slope does not broadcast to X");
    if (onnx_need_f32(cx, n, 0, 1) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0), slope = onnx_in(cx, n, 1);
    ts_value neg = ts_binary(g, TS_BIN_LESS, x, map_scalar(g, TS_F32, 0));
    return onnx_set(cx, n, 0, ts_where(g, neg, ts_mul(g, x, slope), x));
}

/* ------------------------------------------------------------------ Relu, Sigmoid, Tanh, Exp, Log, Sqrt */

static double host_relu(double x) { return x > 0 ? x : 0; }
static double host_sigmoid(double x) { return 1 / (1 + exp(-x)); }

static ts_status activation(ts_onnx_ctx *cx, const ts_onnx_node *n, double (*host)(double),
                       ts_value (*build)(ts_graph *, ts_value)) {
    onnx_attr_ignore(cx, n, "consumed_inputs");
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k && (k->dtype == TS_F32 || k->dtype == TS_F16 || k->dtype == TS_BF16)) {
        ts_tensor *t = ts_tensor_new(k->dtype, k->ndim, k->shape);
        for (int64_t i = 0, cnt = ts_tensor_numel(k); t && i < cnt; i++) onnx_put_f64(t, i, host((float)onnx_get_f64(k, i)));
        return onnx_set_known(cx, n, 0, t);
    }
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, build(cx->g, onnx_in(cx, n, 0)));
}

static ts_status imp_relu(ts_onnx_ctx *cx, const ts_onnx_node *n) { return activation(cx, n, host_relu, ts_relu); }
static ts_status imp_sigmoid(ts_onnx_ctx *cx, const ts_onnx_node *n) { return activation(cx, n, host_sigmoid, ts_sigmoid); }
static ts_status imp_tanh(ts_onnx_ctx *cx, const ts_onnx_node *n) { return activation(cx, n, tanh, ts_tanh); }
static ts_status imp_exp(ts_onnx_ctx *cx, const ts_onnx_node *n) { return activation(cx, n, exp, ts_exp); }
static ts_status imp_log(ts_onnx_ctx *cx, const ts_onnx_node *n) { return activation(cx, n, log, ts_log); }
static ts_status imp_sqrt(ts_onnx_ctx *cx, const ts_onnx_node *n) { return activation(cx, n, sqrt, ts_sqrt); }

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

/* ------------------------------------------------------------------ predicates */

static ts_status imp_isnan(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k && is_float(k->dtype)) {
        ts_tensor *t = ts_tensor_new(TS_U8, k->ndim, k->shape);
        for (int64_t i = 0, c = ts_tensor_numel(k); t && i < c; i++)
            ((uint8_t *)t->data)[i] = isnan(onnx_get_f64(k, i));
        return onnx_set_known(cx, n, 0, t);
    }
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_isnan(cx->g, onnx_in(cx, n, 0)));
}

static ts_status imp_isinf(ts_onnx_ctx *cx, const ts_onnx_node *n) {
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
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_isinf(cx->g, onnx_in(cx, n, 0), pos, neg));
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"Relu", 9, 17, imp_relu},
    {"Sigmoid", 9, 17, imp_sigmoid},
    {"Tanh", 9, 17, imp_tanh},
    {"Exp", 9, 17, imp_exp},
    {"Log", 9, 17, imp_log},
    {"Sqrt", 9, 17, imp_sqrt},
    {"Abs", 9, 17, imp_abs},
    {"Neg", 9, 17, imp_neg},
    {"Floor", 9, 17, imp_floor},
    {"Ceil", 9, 17, imp_ceil},
    {"Round", 11, 17, imp_round},
    {"Sign", 9, 17, imp_sign},
    {"Reciprocal", 9, 17, imp_reciprocal},
    {"Sin", 9, 17, imp_sin},
    {"Cos", 9, 17, imp_cos},
    {"Tan", 9, 17, imp_tan},
    {"Asin", 9, 17, imp_asin},
    {"Acos", 9, 17, imp_acos},
    {"Atan", 9, 17, imp_atan},
    {"Sinh", 9, 17, imp_sinh},
    {"Cosh", 9, 17, imp_cosh},
    {"Asinh", 9, 17, imp_asinh},
    {"Acosh", 9, 17, imp_acosh},
    {"Atanh", 9, 17, imp_atanh},
    {"Erf", 9, 17, imp_erf},
    {"Softplus", 9, 17, imp_softplus},
    {"Softsign", 9, 17, imp_softsign},
    {"Elu", 9, 17, imp_elu},
    {"Selu", 9, 17, imp_selu},
    {"Celu", 12, 17, imp_celu},
    {"LeakyRelu", 9, 17, imp_leaky_relu},
    {"ThresholdedRelu", 10, 17, imp_thresholded_relu},
    {"Shrink", 9, 17, imp_shrink},
    {"PRelu", 9, 17, imp_prelu},
    {"Clip", 9, 17, imp_clip},
    {"HardSigmoid", 9, 17, imp_hard_sigmoid},
    {"HardSwish", 14, 17, imp_hard_swish},
    {"IsNaN", 9, 17, imp_isnan},
    {"IsInf", 10, 17, imp_isinf},
};
const onnx_family onnx_family_unary = {"unary", ops, (int)(sizeof ops / sizeof *ops)};
