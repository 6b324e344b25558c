/*
 * elementwise.c — elementwise ops with numpy broadcasting: add sub mul div pow, scale, the unary
 * activations (sqrt exp log relu tanh sigmoid gelu) and their shared gradient op, where, cast,
 * expand (broadcast_to) and sum_to (its adjoint, which reduces a gradient to an operand's shape).
 *
 * Gradients, for out = f(a, b) with upstream g:
 *   add: ga = g,  gb = g            sub: ga = g, gb = -g
 *   mul: ga = g b, gb = g a         div: ga = g / b, gb = -g out / b
 *   pow: ga = g b a^(b-1), gb = g out ln a
 * each followed by sum_to(operand shape) to undo broadcasting.
 * Attributes: scale f[0] = alpha, f[1] = beta; gelu i[0] = tanh form; unary_grad i[0] = the
 * forward op id, i[1] = gelu tanh form; cast i[0] = target dtype; expand / sum_to i[0..nd-1] =
 * target shape, ni = its rank.
 */
#include "core/fastmath.h"
#include "ops/bcast.h"
#include "ops/op.h"

#include <math.h>
#include <omp.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status need_f32(const ts_graph *g, const ts_node *n, int k) {
    const ts_val *v = &g->vals[n->in[k]];
    if (v->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: input %d %s has dtype %s; this op takes f32",
                      ts_op_get(n->op)->name, k, VS(g, n->in[k]), ts_dtype_name(v->dtype));
    return TS_OK;
}

static void set_out(ts_graph *g, const ts_node *n, int k, ts_dtype dt, int nd, const int64_t *sh) {
    ts_val *o = &g->vals[n->out[k]];
    o->dtype = dt;
    o->ndim = nd;
    if (nd) memcpy(o->shape, sh, sizeof(int64_t) * (size_t)nd);
}

/* ------------------------------------------------------------------ binary */

static ts_status infer_binary(ts_graph *g, ts_node *n) {
    for (int k = 0; k < 2; k++) {
        ts_status s = need_f32(g, n, k);
        if (s) return s;
    }
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]];
    int64_t sh[TS_MAX_DIMS];
    int nd = ts_broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, sh);
    if (nd < 0)
        return ts_err(TS_ERR_SHAPE, "op %s: shapes of %s and %s do not broadcast",
                      ts_op_get(n->op)->name, VS(g, n->in[0]), VS(g, n->in[1]));
    set_out(g, n, 0, TS_F32, nd, sh);
    return TS_OK;
}

#define BINARY_KERNEL(NAME, EXPR)                                                               \
    TS_SIMD_CLONES                                        \
    static void NAME##_rows(const ts_bcast *bc, const float *A, const float *B, float *O) {       \
        int64_t cols = bc->cols, sa = bc->st[0][bc->nd - 1], sb = bc->st[1][bc->nd - 1];          \
        _Pragma("omp parallel for schedule(static) if (bc->rows * cols > 32768)")                 \
        for (int64_t r = 0; r < bc->rows; r++) {                                                  \
            const float *pa = A + ts_bcast_row(bc, 0, r), *pb = B + ts_bcast_row(bc, 1, r);        \
            float *po = O + r * cols;                                                             \
            if (sa && sb) {                                                                       \
                for (int64_t j = 0; j < cols; j++) { float a = pa[j], b = pb[j]; po[j] = (EXPR); } \
            } else if (sa) {                                                                      \
                float b = pb[0];                                                                  \
                for (int64_t j = 0; j < cols; j++) { float a = pa[j]; po[j] = (EXPR); }           \
            } else if (sb) {                                                                      \
                float a = pa[0];                                                                  \
                for (int64_t j = 0; j < cols; j++) { float b = pb[j]; po[j] = (EXPR); }           \
            } else {                                                                              \
                float a = pa[0], b = pb[0], v = (EXPR);                                           \
                for (int64_t j = 0; j < cols; j++) po[j] = v;                                     \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    static ts_status NAME##_kernel(const ts_kargs *k) {                                           \
        const ts_graph *g = k->g;                                                                 \
        const ts_val *a = &g->vals[k->node->in[0]], *b = &g->vals[k->node->in[1]];               \
        const ts_val *o = &g->vals[k->node->out[0]];                                              \
        ts_bcast bc;                                                                              \
        ts_bcast_init(&bc, o->ndim, o->shape, 2, (int[]){a->ndim, b->ndim},                       \
                      (const int64_t *const[]){a->shape, b->shape});                              \
        NAME##_rows(&bc, k->in[0], k->in[1], k->out[0]);                                          \
        return TS_OK;                                                                             \
    }

BINARY_KERNEL(add, a + b)
BINARY_KERNEL(sub, a - b)
BINARY_KERNEL(mul, a * b)
BINARY_KERNEL(div, a / b)
BINARY_KERNEL(pow, b == 2.f ? a * a : powf(a, b)) /* a * a: exact, and a power of 2 is most pows */

ts_value ts_sum_to(ts_graph *g, ts_value grad, ts_value like) {
    if (grad == TS_NONE || like == TS_NONE) return TS_NONE;
    const ts_val *gv = &g->vals[grad], *lv = &g->vals[like];
    if (gv->ndim == lv->ndim && memcmp(gv->shape, lv->shape, sizeof(int64_t) * (size_t)lv->ndim) == 0)
        return grad;
    ts_attrs at = {0};
    at.ni = lv->ndim;
    for (int i = 0; i < lv->ndim; i++) at.i[i] = lv->shape[i];
    return ts_node_add(g, TS_OP_SUM_TO, 1, &grad, &at, NULL);
}

static ts_status grad_add(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_sum_to(g, go[0], n->in[0]);
    gi[1] = ts_sum_to(g, go[0], n->in[1]);
    return TS_OK;
}
static ts_status grad_sub(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_sum_to(g, go[0], n->in[0]);
    gi[1] = ts_sum_to(g, ts_scale(g, go[0], -1.f, 0.f), n->in[1]);
    return TS_OK;
}
static ts_status grad_mul(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_sum_to(g, ts_mul(g, go[0], n->in[1]), n->in[0]);
    gi[1] = ts_sum_to(g, ts_mul(g, go[0], n->in[0]), n->in[1]);
    return TS_OK;
}
static ts_status grad_div(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_sum_to(g, ts_div(g, go[0], n->in[1]), n->in[0]);
    ts_value t = ts_div(g, ts_mul(g, go[0], n->out[0]), n->in[1]);
    gi[1] = ts_sum_to(g, ts_scale(g, t, -1.f, 0.f), n->in[1]);
    return TS_OK;
}
static ts_status grad_pow(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    ts_value a = n->in[0], b = n->in[1];
    ts_value am1 = ts_pow(g, a, ts_sub(g, b, ts_scalar(g, 1.f)));
    gi[0] = ts_sum_to(g, ts_mul(g, go[0], ts_mul(g, b, am1)), a);
    gi[1] = ts_sum_to(g, ts_mul(g, go[0], ts_mul(g, n->out[0], ts_log(g, a))), b);
    return TS_OK;
}

#define BINARY_DEF(NAME)                                                                           \
    const ts_op_def ts_opdef_##NAME = {#NAME, 2, 2, 1, TS_OPF_ELEMENTWISE | TS_OPF_INPLACE0,     \
                                       infer_binary, grad_##NAME, NAME##_kernel, NULL};
BINARY_DEF(add)
BINARY_DEF(sub)
BINARY_DEF(mul)
BINARY_DEF(div)
BINARY_DEF(pow)

static ts_value binary(ts_graph *g, int op, ts_value a, ts_value b) {
    int in[2] = {a, b};
    if (a == TS_NONE || b == TS_NONE) return TS_NONE;
    return ts_node_add(g, op, 2, in, NULL, NULL);
}
ts_value ts_add(ts_graph *g, ts_value a, ts_value b) { return binary(g, TS_OP_ADD, a, b); }
ts_value ts_sub(ts_graph *g, ts_value a, ts_value b) { return binary(g, TS_OP_SUB, a, b); }
ts_value ts_mul(ts_graph *g, ts_value a, ts_value b) { return binary(g, TS_OP_MUL, a, b); }
ts_value ts_div(ts_graph *g, ts_value a, ts_value b) { return binary(g, TS_OP_DIV, a, b); }
ts_value ts_pow(ts_graph *g, ts_value a, ts_value b) { return binary(g, TS_OP_POW, a, b); }

/* ------------------------------------------------------------------ unary */

static ts_status infer_unary(ts_graph *g, ts_node *n) {
    ts_status s = need_f32(g, n, 0);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    set_out(g, n, 0, TS_F32, x->ndim, x->shape);
    return TS_OK;
}

/* y = f(x) over one contiguous block, single-threaded; vectorised 16 lanes wide under AVX-512. */
TS_SIMD_CLONES
static void unary_block(int op, int tanh_form, float alpha, float beta, const float *x, float *y, int64_t n) {
#define LOOP(EXPR) for (int64_t i = 0; i < n; i++) { float v = x[i]; y[i] = (EXPR); } break;
    switch (op) {
    case TS_OP_SCALE: LOOP(alpha * v + beta)
    case TS_OP_SQRT: LOOP(sqrtf(v))
    case TS_OP_EXP: LOOP(ts_expf(v))
    case TS_OP_LOG: LOOP(logf(v))
    case TS_OP_RELU: LOOP(v > 0.f ? v : 0.f)
    case TS_OP_TANH: LOOP(ts_tanhf(v))
    case TS_OP_SIGMOID: LOOP(ts_sigmoidf(v))
    case TS_OP_GELU:
        if (tanh_form) {
            LOOP(0.5f * v * (1.f + ts_tanhf(TS_SQRT_2_OVER_PI * (v + 0.044715f * v * v * v))))
        } else {
            LOOP(0.5f * v * (1.f + ts_erff(v * TS_INV_SQRT_2)))
        }
    default: break;
    }
#undef LOOP
}

/* y = f(x) for op `op`; shared by the kernels and by fused elementwise chains. Small n runs on
 * the calling thread (no OpenMP region: its start-up cost dominates below ~32K elements). */
void ts_unary_f32(int op, int tanh_form, float alpha, float beta, const float *x, float *y, int64_t n) {
    if (n <= 32768) {
        unary_block(op, tanh_form, alpha, beta, x, y, n);
        return;
    }
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int64_t chunk = ((n + nt - 1) / nt + 15) & ~(int64_t)15, lo = t * chunk;
        int64_t hi = lo + chunk < n ? lo + chunk : n;
        if (lo < hi) unary_block(op, tanh_form, alpha, beta, x + lo, y + lo, hi - lo);
    }
}

static ts_status unary_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->out[0]]);
    ts_unary_f32(n->op, (int)n->attr.i[0], n->attr.f[0], n->attr.f[1], k->in[0], k->out[0], cnt);
    return TS_OK;
}

/* Which of unary_grad's inputs op's derivative is computed from: 0, its input x (gelu, relu,
 * log), or 1, its output y (sqrt, exp, tanh, sigmoid); -1 for an op without one. The backward
 * reads only that one, so the other need not stay alive until then (GELU's output, exp's input);
 * unary_grad_f32's formulas below are the same split. */
static int grad_input(int op) {
    switch (op) {
    case TS_OP_GELU: case TS_OP_RELU: case TS_OP_LOG: return 0;
    case TS_OP_SQRT: case TS_OP_EXP: case TS_OP_TANH: case TS_OP_SIGMOID: return 1;
    default: return -1;
    }
}

static ts_value unary_grad_node(ts_graph *g, const ts_node *n, ts_value gy) {
    int from_y = grad_input(n->op) == 1;
    int in[3] = {from_y ? TS_NONE : n->in[0], from_y ? n->out[0] : TS_NONE, gy};
    ts_attrs at = {0};
    at.i[0] = n->op;
    at.i[1] = n->attr.i[0];
    at.ni = 2;
    return ts_node_add(g, TS_OP_UNARY_GRAD, 3, in, &at, NULL);
}
static ts_status grad_unary(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = unary_grad_node(g, n, go[0]);
    return TS_OK;
}
static ts_status grad_scale(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_scale(g, go[0], n->attr.f[0], 0.f);
    return TS_OK;
}

#define UNARY_DEF(NAME, GRAD)                                                                      \
    const ts_op_def ts_opdef_##NAME = {#NAME, 1, 1, 1, TS_OPF_ELEMENTWISE | TS_OPF_INPLACE0,     \
                                       infer_unary, GRAD, unary_kernel, NULL};
UNARY_DEF(scale, grad_scale)
UNARY_DEF(sqrt, grad_unary)
UNARY_DEF(exp, grad_unary)
UNARY_DEF(log, grad_unary)
UNARY_DEF(relu, grad_unary)
UNARY_DEF(tanh, grad_unary)
UNARY_DEF(sigmoid, grad_unary)
UNARY_DEF(gelu, grad_unary)

static ts_value unary(ts_graph *g, int op, ts_value x, int i0, float f0, float f1) {
    if (x == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = i0;
    at.ni = 1;
    at.f[0] = f0;
    at.f[1] = f1;
    return ts_node_add(g, op, 1, &x, &at, NULL);
}
ts_value ts_scale(ts_graph *g, ts_value x, float alpha, float beta) {
    return unary(g, TS_OP_SCALE, x, 0, alpha, beta);
}
ts_value ts_sqrt(ts_graph *g, ts_value x) { return unary(g, TS_OP_SQRT, x, 0, 0, 0); }
ts_value ts_exp(ts_graph *g, ts_value x) { return unary(g, TS_OP_EXP, x, 0, 0, 0); }
ts_value ts_log(ts_graph *g, ts_value x) { return unary(g, TS_OP_LOG, x, 0, 0, 0); }
ts_value ts_relu(ts_graph *g, ts_value x) { return unary(g, TS_OP_RELU, x, 0, 0, 0); }
ts_value ts_tanh(ts_graph *g, ts_value x) { return unary(g, TS_OP_TANH, x, 0, 0, 0); }
ts_value ts_sigmoid(ts_graph *g, ts_value x) { return unary(g, TS_OP_SIGMOID, x, 0, 0, 0); }
ts_value ts_gelu(ts_graph *g, ts_value x, int tanh_approx) {
    return unary(g, TS_OP_GELU, x, tanh_approx != 0, 0, 0);
}

/* GELU's (erf form) derivative Phi(x) + x phi(x) with one exp: e = exp(-x^2 / 2) is both
 * phi(x) sqrt(2 pi) and the exp(-(x / sqrt 2)^2) inside erf. */
static inline float gelu_erf_slope(float x) {
    float e = ts_expf(-0.5f * x * x);
    return 0.5f * (1.f + ts_erf_exp(x * TS_INV_SQRT_2, e)) + x * TS_INV_SQRT_2PI * e;
}

/* unary_grad(x, y, gy) -> gx = gy * f'(x), from x or from y = f(x), whichever is cheaper; the
 * other input is absent (TS_NONE; grad_input says which):
 *   from y:  sqrt: gy / (2y)   exp: gy y   tanh: gy (1 - y^2)   sigmoid: gy y (1 - y)
 *   from x:  log: gy / x   relu: gy [x > 0]
 *            gelu (erf):  gy (Phi(x) + x phi(x))
 *            gelu (tanh): u = sqrt(2/pi)(x + 0.044715 x^3), t = tanh u,
 *                         gy (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)) */
TS_SIMD_CLONES
static void unary_grad_f32(int op, int tanh_form, const float *x, const float *y, const float *gy,
                           float *gx, int64_t n) {
#define LOOP(IN, EXPR) _Pragma("omp parallel for simd schedule(static) if (n > 32768)") \
    for (int64_t i = 0; i < n; i++) { float v = IN[i], gg = gy[i]; gx[i] = (EXPR); } break;
    switch (op) {
    case TS_OP_SQRT: LOOP(y, gg * 0.5f / v)
    case TS_OP_EXP: LOOP(y, gg * v)
    case TS_OP_TANH: LOOP(y, gg * (1.f - v * v))
    case TS_OP_SIGMOID: LOOP(y, gg * v * (1.f - v))
    case TS_OP_LOG: LOOP(x, gg / v)
    case TS_OP_RELU: LOOP(x, v > 0.f ? gg : 0.f)
    case TS_OP_GELU:
        if (tanh_form) {
            LOOP(x, gg * (0.5f * (1.f + ts_tanhf(TS_SQRT_2_OVER_PI * (v + 0.044715f * v * v * v))) +
                          0.5f * v * (1.f - ts_tanhf(TS_SQRT_2_OVER_PI * (v + 0.044715f * v * v * v)) *
                                                ts_tanhf(TS_SQRT_2_OVER_PI * (v + 0.044715f * v * v * v))) *
                              TS_SQRT_2_OVER_PI * (1.f + 3.f * 0.044715f * v * v)))
        } else {
            LOOP(x, gg * gelu_erf_slope(v))
        }
    default: break;
    }
#undef LOOP
}

static ts_status infer_unary_grad(ts_graph *g, ts_node *n) {
    int op = (int)n->attr.i[0], need = grad_input(op);
    if (need < 0)
        return ts_err(TS_ERR_ARG, "op unary_grad: attr i[0] = %d is not one of sqrt exp log relu tanh sigmoid gelu", op);
    if (n->in[2] < 0 || n->in[need] < 0)
        return ts_err(TS_ERR_ARG, "op unary_grad of %s: needs %s and the output gradient", ts_op_get(op)->name,
                      need == 0 ? "the input x (input 0)" : "the output y (input 1)");
    ts_status s = need_f32(g, n, 2);
    if (!s) s = need_f32(g, n, need);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[need]], *gy = &g->vals[n->in[2]];
    if (x->ndim != gy->ndim || memcmp(x->shape, gy->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
        return ts_err(TS_ERR_SHAPE, "op unary_grad: %s and the gradient %s differ in shape", VS(g, n->in[need]),
                      VS(g, n->in[2]));
    set_out(g, n, 0, TS_F32, gy->ndim, gy->shape);
    return TS_OK;
}
static ts_status unary_grad_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->out[0]]);
    unary_grad_f32((int)n->attr.i[0], (int)n->attr.i[1], k->in[0], k->in[1], k->in[2], k->out[0], cnt);
    return TS_OK;
}
/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_unary_grad = {"unary_grad", 0, 3, 1, TS_OPF_ELEMENTWISE,
                                       infer_unary_grad, NULL, unary_grad_kernel, NULL};

/* ------------------------------------------------------------------ where */

static ts_status infer_where(ts_graph *g, ts_node *n) {
    const ts_val *c = &g->vals[n->in[0]], *a = &g->vals[n->in[1]], *b = &g->vals[n->in[2]];
    if (c->dtype != TS_U8)
        return ts_err(TS_ERR_DTYPE, "op where: condition %s must be u8", VS(g, n->in[0]));
    for (int k = 1; k < 3; k++) {
        ts_status s = need_f32(g, n, k);
        if (s) return s;
    }
    int64_t s1[TS_MAX_DIMS], s2[TS_MAX_DIMS];
    int n1 = ts_broadcast_shape(c->ndim, c->shape, a->ndim, a->shape, s1);
    int n2 = n1 < 0 ? -1 : ts_broadcast_shape(n1, s1, b->ndim, b->shape, s2);
    if (n2 < 0)
        return ts_err(TS_ERR_SHAPE, "op where: shapes of %s, %s and %s do not broadcast",
                      VS(g, n->in[0]), VS(g, n->in[1]), VS(g, n->in[2]));
    set_out(g, n, 0, TS_F32, n2, s2);
    return TS_OK;
}
static ts_status where_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_val *c = &g->vals[k->node->in[0]], *a = &g->vals[k->node->in[1]],
                 *b = &g->vals[k->node->in[2]], *o = &g->vals[k->node->out[0]];
    ts_bcast bc;
    ts_bcast_init(&bc, o->ndim, o->shape, 3, (int[]){c->ndim, a->ndim, b->ndim},
                  (const int64_t *const[]){c->shape, a->shape, b->shape});
    const uint8_t *C = k->in[0];
    const float *A = k->in[1], *B = k->in[2];
    float *O = k->out[0];
    int last = bc.nd - 1;
#pragma omp parallel for schedule(static) if (bc.rows * bc.cols > 32768)
    for (int64_t r = 0; r < bc.rows; r++) {
        const uint8_t *pc = C + ts_bcast_row(&bc, 0, r);
        const float *pa = A + ts_bcast_row(&bc, 1, r), *pb = B + ts_bcast_row(&bc, 2, r);
        for (int64_t j = 0; j < bc.cols; j++)
            O[r * bc.cols + j] = pc[j * bc.st[0][last]] ? pa[j * bc.st[1][last]] : pb[j * bc.st[2][last]];
    }
    return TS_OK;
}
static ts_status grad_where(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    ts_value zero = ts_scalar(g, 0.f);
    gi[0] = TS_NONE;
    gi[1] = ts_sum_to(g, ts_where(g, n->in[0], go[0], zero), n->in[1]);
    gi[2] = ts_sum_to(g, ts_where(g, n->in[0], zero, go[0]), n->in[2]);
    return TS_OK;
}
const ts_op_def ts_opdef_where = {"where", 3, 3, 1, TS_OPF_ELEMENTWISE, infer_where, grad_where,
                                  where_kernel, NULL};
ts_value ts_where(ts_graph *g, ts_value cond, ts_value a, ts_value b) {
    if (cond == TS_NONE || a == TS_NONE || b == TS_NONE) return TS_NONE;
    return ts_node_add(g, TS_OP_WHERE, 3, (int[]){cond, a, b}, NULL, NULL);
}

/* ------------------------------------------------------------------ cast */

static ts_status infer_cast(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    if ((uint64_t)n->attr.i[0] >= TS_DTYPE_COUNT)
        return ts_err(TS_ERR_DTYPE, "op cast: invalid target dtype %lld", (long long)n->attr.i[0]);
    set_out(g, n, 0, (ts_dtype)n->attr.i[0], x->ndim, x->shape);
    return TS_OK;
}
static inline double load_elem(ts_dtype t, const void *p, int64_t i) {
    switch (t) {
    case TS_F32: return ((const float *)p)[i];
    case TS_BF16: return ts_bf16_f32(((const uint16_t *)p)[i]);
    case TS_F16: return ts_f16_f32(((const uint16_t *)p)[i]);
    case TS_I32: return ((const int32_t *)p)[i];
    case TS_I64: return (double)((const int64_t *)p)[i];
    case TS_U8: return ((const uint8_t *)p)[i];
    default: return 0;
    }
}
static ts_status cast_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    ts_dtype from = g->vals[k->node->in[0]].dtype, to = g->vals[k->node->out[0]].dtype;
    int64_t n = ts_val_numel(&g->vals[k->node->out[0]]);
    const void *x = k->in[0];
    void *y = k->out[0];
    if (from == to) {
        memcpy(y, x, (size_t)n * ts_dtype_size(to));
        return TS_OK;
    }
    int half = to == TS_BF16 || to == TS_F16 ? to : from; /* the 16-bit side of a float pair */
    if ((from == TS_F32 || to == TS_F32) && (half == TS_BF16 || half == TS_F16)) {
        int64_t chunk = 16384, nchunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (nchunks > 2)
        for (int64_t c = 0; c < nchunks; c++) {
            int64_t lo = c * chunk, len = n - lo < chunk ? n - lo : chunk;
            const float *xf = (const float *)x + lo;
            const uint16_t *xh = (const uint16_t *)x + lo;
            if (from == TS_F32 && half == TS_BF16) ts_f32_to_bf16(xf, (uint16_t *)y + lo, (size_t)len);
            else if (from == TS_F32) ts_f32_to_f16(xf, (uint16_t *)y + lo, (size_t)len);
            else if (half == TS_BF16) ts_bf16_to_f32(xh, (float *)y + lo, (size_t)len);
            else ts_f16_to_f32(xh, (float *)y + lo, (size_t)len);
        }
        return TS_OK;
    }
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        double v = load_elem(from, x, i);
        switch (to) {
        case TS_F32: ((float *)y)[i] = (float)v; break;
        case TS_BF16: ((uint16_t *)y)[i] = ts_f32_bf16((float)v); break;
        case TS_F16: ((uint16_t *)y)[i] = ts_f32_f16((float)v); break;
        /* to an integer: truncate toward zero, saturate at the type's range, NaN -> 0 (C leaves
         * the out-of-range conversions undefined) */
        case TS_I32:
            ((int32_t *)y)[i] = v != v ? 0 : v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
            break;
        case TS_I64:
            ((int64_t *)y)[i] = v != v                        ? 0
                                : v >= 9223372036854775807.0  ? INT64_MAX
                                : v <= -9223372036854775808.0 ? INT64_MIN
                                                              : (int64_t)v;
            break;
        case TS_U8: ((uint8_t *)y)[i] = v != v || v <= 0 ? 0 : v >= 255.0 ? 255 : (uint8_t)v; break;
        default: break;
        }
    }
    return TS_OK;
}
static int is_float(ts_dtype t) { return t == TS_F32 || t == TS_BF16 || t == TS_F16; }
static ts_status grad_cast(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    ts_dtype from = g->vals[n->in[0]].dtype;
    if (!is_float(from) || !is_float(g->vals[n->out[0]].dtype)) return gi[0] = TS_NONE, TS_OK;
    /* a gradient already in the input's dtype (an op that gives f32 gradients for bf16 inputs,
     * such as attention) passes as it is */
    gi[0] = g->vals[go[0]].dtype == from ? go[0] : ts_cast(g, go[0], from);
    return TS_OK;
}
const ts_op_def ts_opdef_cast = {"cast", 1, 1, 1, TS_OPF_ELEMENTWISE, infer_cast, grad_cast,
                                 cast_kernel, NULL};
ts_value ts_cast(ts_graph *g, ts_value x, ts_dtype dtype) {
    if (x == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = dtype;
    at.ni = 1;
    return ts_node_add(g, TS_OP_CAST, 1, &x, &at, NULL);
}

/* ------------------------------------------------------------------ expand / sum_to */

static ts_status infer_expand(ts_graph *g, ts_node *n) {
    ts_status s = need_f32(g, n, 0);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    int64_t sh[TS_MAX_DIMS];
    if (n->attr.ni < 0 || n->attr.ni > TS_MAX_DIMS)
        return ts_err(TS_ERR_SHAPE, "op expand: target rank %d outside 0..%d", n->attr.ni, TS_MAX_DIMS);
    int nd = ts_broadcast_shape(x->ndim, x->shape, n->attr.ni, n->attr.i, sh);
    if (nd != n->attr.ni || memcmp(sh, n->attr.i, sizeof(int64_t) * (size_t)nd) != 0) {
        char b[128];
        return ts_err(TS_ERR_SHAPE, "op expand: %s does not broadcast to %s", VS(g, n->in[0]),
                      ts_shape_str(n->attr.ni, n->attr.i, b, sizeof b));
    }
    set_out(g, n, 0, TS_F32, nd, sh);
    return TS_OK;
}
static ts_status expand_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]], *o = &k->g->vals[k->node->out[0]];
    ts_bcast bc;
    ts_bcast_init(&bc, o->ndim, o->shape, 1, (int[]){x->ndim}, (const int64_t *const[]){x->shape});
    const float *X = k->in[0];
    float *O = k->out[0];
    int64_t st = bc.st[0][bc.nd - 1];
#pragma omp parallel for schedule(static) if (bc.rows * bc.cols > 32768)
    for (int64_t r = 0; r < bc.rows; r++) {
        const float *px = X + ts_bcast_row(&bc, 0, r);
        for (int64_t j = 0; j < bc.cols; j++) O[r * bc.cols + j] = px[j * st];
    }
    return TS_OK;
}
static ts_status grad_expand(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_sum_to(g, go[0], n->in[0]);
    return TS_OK;
}
const ts_op_def ts_opdef_expand = {"expand", 1, 1, 1, 0, infer_expand, grad_expand, expand_kernel, NULL};
ts_value ts_expand(ts_graph *g, ts_value x, int ndim, const int64_t *shape) {
    if (x == TS_NONE) return TS_NONE;
    if (ndim < 0 || ndim > TS_MAX_DIMS || (ndim && !shape))
        return ts_graph_fail(g, TS_ERR_SHAPE, "ts_expand: rank %d outside 0..%d", ndim, TS_MAX_DIMS);
    ts_attrs at = {0};
    at.ni = ndim;
    for (int i = 0; i < ndim; i++) at.i[i] = shape[i];
    return ts_node_add(g, TS_OP_EXPAND, 1, &x, &at, NULL);
}

static ts_status infer_sum_to(ts_graph *g, ts_node *n) {
    ts_status s = need_f32(g, n, 0);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    int64_t sh[TS_MAX_DIMS];
    int nd = ts_broadcast_shape(x->ndim, x->shape, n->attr.ni, n->attr.i, sh);
    if (nd != x->ndim || memcmp(sh, x->shape, sizeof(int64_t) * (size_t)nd) != 0) {
        char b[128];
        return ts_err(TS_ERR_SHAPE, "op sum_to: %s cannot be summed to %s", VS(g, n->in[0]),
                      ts_shape_str(n->attr.ni, n->attr.i, b, sizeof b));
    }
    set_out(g, n, 0, TS_F32, n->attr.ni, n->attr.i);
    return TS_OK;
}
/* The leading-reduction case of sum_to, [R, C] -> [C] (the bias gradient), and cast_sum_to's
 * sums (ops/cast_sum.c): rows in fixed chunks of SUM_CHUNK, each chunk's rows added in order
 * into a partial row (whole rows read, contiguous and vectorised: a chunk per thread at a time),
 * then the partials added in chunk order, column by column. The order of the additions depends on
 * R alone, never on the thread count, so sum_to and cast_sum_to give the same bits on any number
 * of threads. (Before, each thread summed a block of columns down all the rows: reads of a few
 * hundred bytes a row apart, at about a third of the bandwidth of whole rows.) */
enum { SUM_CHUNK = 64 };

size_t ts_sum_rows_scratch(int64_t R, int64_t C) {
    int64_t nch = (R + SUM_CHUNK - 1) / SUM_CHUNK;
    return nch > 1 ? sizeof(float) * (size_t)(nch * C) : 0;
}

/* part[c] = sum of x[r, c] over the rows r < n of x [n, C], in order; each row also cast to dtype
 * `cast` (TS_BF16 / TS_F16) into y when y is not NULL. */
TS_SIMD_CLONES
static void sum_chunk(const float *x, int64_t n, int64_t C, float *part, uint16_t *y, ts_dtype cast) {
    for (int64_t c = 0; c < C; c++) part[c] = 0.f;
    for (int64_t r = 0; r < n; r++) {
        const float *xr = x + r * C;
        if (y && cast == TS_BF16) ts_f32_to_bf16(xr, y + r * C, (size_t)C);
        else if (y) ts_f32_to_f16(xr, y + r * C, (size_t)C);
        for (int64_t c = 0; c < C; c++) part[c] += xr[c];
    }
}

void ts_sum_rows(const float *x, int64_t R, int64_t C, float *s, float *scratch, uint16_t *y, ts_dtype cast) {
    int64_t nch = (R + SUM_CHUNK - 1) / SUM_CHUNK;
    if (nch <= 1) {
        sum_chunk(x, R, C, s, y, cast);
        return;
    }
#pragma omp parallel for schedule(static) if (R * C > 32768)
    for (int64_t ch = 0; ch < nch; ch++) {
        int64_t r0 = ch * SUM_CHUNK, n = R - r0 < SUM_CHUNK ? R - r0 : SUM_CHUNK;
        sum_chunk(x + r0 * C, n, C, scratch + ch * C, y ? y + r0 * C : NULL, cast);
    }
#pragma omp parallel for schedule(static) if (nch * C > 32768)
    for (int64_t c0 = 0; c0 < C; c0 += 256) {
        int64_t nc = C - c0 < 256 ? C - c0 : 256;
        for (int64_t c = c0; c < c0 + nc; c++) s[c] = scratch[c];
        for (int64_t ch = 1; ch < nch; ch++)
            for (int64_t c = c0; c < c0 + nc; c++) s[c] += scratch[ch * C + c];
    }
}

/* Whether o's shape is x's trailing dims: the reduced dims all lead (ts_sum_rows's case). */
static int sum_leads(const ts_val *x, const ts_val *o) {
    int off = x->ndim - o->ndim;
    if (off < 0) return 0;
    for (int i = 0; i < o->ndim; i++)
        if (o->shape[i] != x->shape[off + i]) return 0; /* a broadcast 1 inside o */
    return 1;
}
static size_t sum_to_scratch(const ts_graph *g, const ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]], *o = &g->vals[n->out[0]];
    int64_t on = ts_val_numel(o);
    return sum_leads(x, o) && on ? ts_sum_rows_scratch(ts_val_numel(x) / on, on) : 0;
}
/* out[j] = sum of x over every element that broadcasts onto j: ts_sum_rows when the reduced dims
 * all lead, serial otherwise. */
static ts_status sum_to_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]], *o = &k->g->vals[k->node->out[0]];
    const float *X = k->in[0];
    float *O = k->out[0];
    int64_t on = ts_val_numel(o);
    if (sum_leads(x, o)) {
        if (on) ts_sum_rows(X, ts_val_numel(x) / on, on, O, k->scratch, NULL, TS_F32);
        return TS_OK;
    }
    ts_bcast bc; /* strides of o against x's shape */
    ts_bcast_init(&bc, x->ndim, x->shape, 1, (int[]){o->ndim}, (const int64_t *const[]){o->shape});
    memset(O, 0, sizeof(float) * (size_t)on);
    int64_t st = bc.st[0][bc.nd - 1];
    for (int64_t r = 0; r < bc.rows; r++) {
        float *po = O + ts_bcast_row(&bc, 0, r);
        const float *px = X + r * bc.cols;
        if (st)
            for (int64_t j = 0; j < bc.cols; j++) po[j] += px[j];
        else {
            float s = 0.f;
            for (int64_t j = 0; j < bc.cols; j++) s += px[j];
            po[0] += s;
        }
    }
    return TS_OK;
}
static ts_status grad_sum_to(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    const ts_val *x = &g->vals[n->in[0]];
    gi[0] = ts_expand(g, go[0], x->ndim, x->shape);
    return TS_OK;
}
const ts_op_def ts_opdef_sum_to = {"sum_to", 1, 1, 1, 0, infer_sum_to, grad_sum_to, sum_to_kernel, sum_to_scratch};
