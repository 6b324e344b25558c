/*
 * mathfn.c — the elementwise math functions of ts_math (abs, neg, rounding, trigonometric and
 * hyperbolic functions and their inverses, erf, and the parametrised activations elu, selu,
 * celu, leaky_relu, thresholded_relu, shrink, softplus, softsign), and math_grad, their shared
 * gradient op.
 *
 *   math(x f32) -> y f32, same shape        attrs: i[0] = ts_math_fn, f[0] = alpha, f[1] = beta
 *   math_grad(x, y, gy) -> gx = gy f'(x)     attrs: those of the forward node
 *
 * The functions (y = f(x); alpha and beta as ts_math documents) and their derivatives f'(x):
 *   abs |x|: sign x            neg -x: -1           reciprocal 1/x: -y^2
 *   floor, ceil, round (half to even), sign: 0 (piecewise constant: no gradient flows)
 *   sin: cos x   cos: -sin x   tan: 1 + y^2
 *   asin: 1/sqrt(1 - x^2)   acos: -1/sqrt(1 - x^2)   atan: 1/(1 + x^2)
 *   sinh: cosh x   cosh: sinh x   asinh: 1/sqrt(x^2 + 1)   acosh: 1/sqrt(x^2 - 1)
 *   atanh: 1/(1 - x^2)   erf: 2/sqrt(pi) exp(-x^2)
 *   softplus log(1 + e^x), computed as max(x, 0) + log1p(e^-|x|): sigmoid(x)
 *   softsign x / (1 + |x|): 1 / (1 + |x|)^2
 *   elu: x > 0 ? x : alpha (e^x - 1);                  f' = x > 0 ? 1 : alpha e^x
 *   selu: beta (x > 0 ? x : alpha (e^x - 1));          f' = beta (x > 0 ? 1 : alpha e^x)
 *   celu: max(0, x) + min(0, alpha (e^(x/alpha) - 1)); f' = x > 0 ? 1 : e^(x/alpha)
 *   leaky_relu: x < 0 ? alpha x : x;                   f' = x < 0 ? alpha : 1
 *   thresholded_relu: x > alpha ? x : 0;               f' = x > alpha ? 1 : 0
 *   shrink: x < -alpha ? x + beta : x > alpha ? x - beta : 0;  f' = |x| > alpha ? 1 : 0
 * math_grad is not differentiable (grad NULL).
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)
#define PAR_ELEMS 32768 /* loops over fewer elements stay on one thread */

static const char *const fn_names[TS_MATH_COUNT] = {
    [TS_MATH_ABS] = "abs", [TS_MATH_NEG] = "neg", [TS_MATH_FLOOR] = "floor", [TS_MATH_CEIL] = "ceil",
    [TS_MATH_ROUND] = "round", [TS_MATH_SIGN] = "sign", [TS_MATH_RECIPROCAL] = "reciprocal",
    [TS_MATH_SIN] = "sin", [TS_MATH_COS] = "cos", [TS_MATH_TAN] = "tan", [TS_MATH_ASIN] = "asin",
    [TS_MATH_ACOS] = "acos", [TS_MATH_ATAN] = "atan", [TS_MATH_SINH] = "sinh", [TS_MATH_COSH] = "cosh",
    [TS_MATH_ASINH] = "asinh", [TS_MATH_ACOSH] = "acosh", [TS_MATH_ATANH] = "atanh", [TS_MATH_ERF] = "erf",
    [TS_MATH_SOFTPLUS] = "softplus", [TS_MATH_SOFTSIGN] = "softsign", [TS_MATH_ELU] = "elu",
    [TS_MATH_SELU] = "selu", [TS_MATH_CELU] = "celu", [TS_MATH_LEAKY_RELU] = "leaky_relu",
    [TS_MATH_THRESHOLDED_RELU] = "thresholded_relu", [TS_MATH_SHRINK] = "shrink",
};

const char *ts_math_fn_name(ts_math_fn fn) {
    return (unsigned)fn < TS_MATH_COUNT ? fn_names[fn] : NULL;
}

static ts_status infer_math(ts_graph *g, ts_node *n) {
    int64_t fn = n->attr.i[0];
    const char *op = ts_op_get(n->op)->name;
    if (fn < 0 || fn >= TS_MATH_COUNT)
        return ts_err(TS_ERR_ARG, "op %s: function id %lld is not a ts_math_fn (0..%d)", op, (long long)fn,
                      TS_MATH_COUNT - 1);
    for (int k = 0; k < n->nin; k++)
        if (g->vals[n->in[k]].dtype != TS_F32)
            return ts_err(TS_ERR_DTYPE, "op %s (%s): input %d %s has dtype %s; this op takes f32", op,
                          fn_names[fn], k, VS(g, n->in[k]), ts_dtype_name(g->vals[n->in[k]].dtype));
    if (fn == TS_MATH_CELU && n->attr.f[0] == 0.f)
        return ts_err(TS_ERR_ARG, "op %s (celu): alpha must not be 0", op);
    const ts_val *x = &g->vals[n->in[0]];
    for (int k = 1; k < n->nin; k++) {
        const ts_val *v = &g->vals[n->in[k]];
        if (v->ndim != x->ndim || memcmp(v->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
            return ts_err(TS_ERR_SHAPE, "op %s (%s): input %d %s must have the shape of %s", op, fn_names[fn], k,
                          VS(g, n->in[k]), VS(g, n->in[0]));
    }
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof o->shape);
    return TS_OK;
}

static inline float softplus(float v) { return (v > 0.f ? v : 0.f) + log1pf(expf(-fabsf(v))); }

/* y = f(x) for one function over n elements (the table at the top of the file). */
static void math_f32(int fn, float a, float b, const float *x, float *y, int64_t n) {
#define LOOP(EXPR)                                                                                 \
    _Pragma("omp parallel for schedule(static) if (n > PAR_ELEMS)")                                \
    for (int64_t i = 0; i < n; i++) { float v = x[i]; y[i] = (EXPR); }                             \
    break;
    switch (fn) {
    case TS_MATH_ABS: LOOP(fabsf(v))
    case TS_MATH_NEG: LOOP(-v)
    case TS_MATH_FLOOR: LOOP(floorf(v))
    case TS_MATH_CEIL: LOOP(ceilf(v))
    case TS_MATH_ROUND: LOOP(nearbyintf(v)) /* the default rounding mode: half to even */
    case TS_MATH_SIGN: LOOP(v > 0.f ? 1.f : v < 0.f ? -1.f : v)
    case TS_MATH_RECIPROCAL: LOOP(1.f / v)
    case TS_MATH_SIN: LOOP(sinf(v))
    case TS_MATH_COS: LOOP(cosf(v))
    case TS_MATH_TAN: LOOP(tanf(v))
    case TS_MATH_ASIN: LOOP(asinf(v))
    case TS_MATH_ACOS: LOOP(acosf(v))
    case TS_MATH_ATAN: LOOP(atanf(v))
    case TS_MATH_SINH: LOOP(sinhf(v))
    case TS_MATH_COSH: LOOP(coshf(v))
    case TS_MATH_ASINH: LOOP(asinhf(v))
    case TS_MATH_ACOSH: LOOP(acoshf(v))
    case TS_MATH_ATANH: LOOP(atanhf(v))
    case TS_MATH_ERF: LOOP(erff(v))
    case TS_MATH_SOFTPLUS: LOOP(softplus(v))
    case TS_MATH_SOFTSIGN: LOOP(v / (1.f + fabsf(v)))
    case TS_MATH_ELU: LOOP(v > 0.f ? v : a * expm1f(v))
    case TS_MATH_SELU: LOOP(b * (v > 0.f ? v : a * expm1f(v)))
    case TS_MATH_CELU: LOOP((v > 0.f ? v : 0.f) + fminf(0.f, a * expm1f(v / a)))
    case TS_MATH_LEAKY_RELU: LOOP(v < 0.f ? a * v : v)
    case TS_MATH_THRESHOLDED_RELU: LOOP(v > a ? v : 0.f)
    case TS_MATH_SHRINK: LOOP(v < -a ? v + b : v > a ? v - b : 0.f)
    default: break;
    }
#undef LOOP
}

static ts_status math_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->out[0]]);
    math_f32((int)n->attr.i[0], n->attr.f[0], n->attr.f[1], k->in[0], k->out[0], cnt);
    return TS_OK;
}

/* gx = gy f'(x), f' from the table at the top of the file (y = f(x) where that is cheaper). */
static ts_status math_grad_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->out[0]]);
    const float *x = k->in[0], *y = k->in[1], *gy = k->in[2];
    float *gx = k->out[0], a = n->attr.f[0], b = n->attr.f[1];
#define LOOP(EXPR)                                                                                 \
    _Pragma("omp parallel for schedule(static) if (cnt > PAR_ELEMS)")                              \
    for (int64_t i = 0; i < cnt; i++) { float v = x[i], w = y[i]; (void)v; (void)w; gx[i] = gy[i] * (EXPR); } \
    break;
    switch ((int)n->attr.i[0]) {
    case TS_MATH_ABS: LOOP(v > 0.f ? 1.f : v < 0.f ? -1.f : 0.f)
    case TS_MATH_NEG: LOOP(-1.f)
    case TS_MATH_RECIPROCAL: LOOP(-w * w)
    case TS_MATH_SIN: LOOP(cosf(v))
    case TS_MATH_COS: LOOP(-sinf(v))
    case TS_MATH_TAN: LOOP(1.f + w * w)
    case TS_MATH_ASIN: LOOP(1.f / sqrtf(1.f - v * v))
    case TS_MATH_ACOS: LOOP(-1.f / sqrtf(1.f - v * v))
    case TS_MATH_ATAN: LOOP(1.f / (1.f + v * v))
    case TS_MATH_SINH: LOOP(coshf(v))
    case TS_MATH_COSH: LOOP(sinhf(v))
    case TS_MATH_ASINH: LOOP(1.f / sqrtf(v * v + 1.f))
    case TS_MATH_ACOSH: LOOP(1.f / sqrtf(v * v - 1.f))
    case TS_MATH_ATANH: LOOP(1.f / (1.f - v * v))
    case TS_MATH_ERF: LOOP(1.1283791670955126f * expf(-v * v))
    case TS_MATH_SOFTPLUS: LOOP(1.f / (1.f + expf(-v)))
    case TS_MATH_SOFTSIGN: LOOP(1.f / ((1.f + fabsf(v)) * (1.f + fabsf(v))))
    case TS_MATH_ELU: LOOP(v > 0.f ? 1.f : a * expf(v))
    case TS_MATH_SELU: LOOP(v > 0.f ? b : b * a * expf(v))
    case TS_MATH_CELU: LOOP(v > 0.f ? 1.f : expf(v / a))
    case TS_MATH_LEAKY_RELU: LOOP(v < 0.f ? a : 1.f)
    case TS_MATH_THRESHOLDED_RELU: LOOP(v > a ? 1.f : 0.f)
    case TS_MATH_SHRINK: LOOP(v < -a || v > a ? 1.f : 0.f)
    default: LOOP(0.f) /* floor, ceil, round, sign: never built (no gradient flows) */
    }
#undef LOOP
    return TS_OK;
}

static int piecewise_constant(int fn) {
    return fn == TS_MATH_FLOOR || fn == TS_MATH_CEIL || fn == TS_MATH_ROUND || fn == TS_MATH_SIGN;
}

static ts_status grad_math(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE || piecewise_constant((int)n->attr.i[0])) return TS_OK;
    if (n->attr.i[0] == TS_MATH_NEG) {
        gi[0] = ts_scale(g, go[0], -1.f, 0.f);
        return TS_OK;
    }
    gi[0] = ts_node_add(g, TS_OP_MATH_GRAD, 3, (int[]){n->in[0], n->out[0], go[0]}, &n->attr, NULL);
    return TS_OK;
}

const ts_op_def ts_opdef_math = {"math", 1, 1, 1, TS_OPF_ELEMENTWISE | TS_OPF_INPLACE0, infer_math, grad_math,
                                 math_kernel, NULL};
/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_math_grad = {"math_grad", 3, 3, 1, TS_OPF_ELEMENTWISE, infer_math, NULL,
                                      math_grad_kernel, NULL};

ts_value ts_math(ts_graph *g, ts_math_fn fn, ts_value x, float alpha, float beta) {
    if (!g || x == TS_NONE || g->status != TS_OK) return TS_NONE;
    if ((unsigned)fn >= TS_MATH_COUNT)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_math: function id %d is not a ts_math_fn (0..%d)", (int)fn,
                             TS_MATH_COUNT - 1);
    ts_attrs at = {0};
    at.i[0] = fn;
    at.ni = 1;
    at.f[0] = alpha;
    at.f[1] = beta;
    return ts_node_add(g, TS_OP_MATH, 1, &x, &at, NULL);
}
