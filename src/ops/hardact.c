/*
 * hardact.c — the piecewise-linear activations of mobile vision networks: clip, hard_sigmoid,
 * hard_swish, and hard_act_grad, the gradient of all three. f32, any shape, elementwise.
 *
 *   clip(x; lo, hi)            = min(max(x, lo), hi)           (lo / hi may be -inf / +inf)
 *   hard_sigmoid(x; a, b)      = max(0, min(1, a x + b))
 *   hard_swish(x)              = x hard_sigmoid(x; 1/6, 1/2) = x min(max(x + 3, 0), 6) / 6
 *                                computed as (x min(max(x + 3, 0), 6)) / 6, PyTorch's order
 * Gradients (as PyTorch's), for upstream g:
 *   clip:         g where lo <= x <= hi, else 0
 *   hard_sigmoid: g a where 0 < a x + b < 1, else 0
 *   hard_swish:   0 where x < -3, g where x > 3, else g (2x + 3) / 6
 * hard_act_grad(x, g) -> gx computes them; it is not differentiable.
 *
 * Attributes: clip f[0] = lo, f[1] = hi; hard_sigmoid f[0] = alpha, f[1] = beta; hard_swish
 * none; hard_act_grad i[0] = the forward op id (ni = 1), f[0], f[1] = the forward op's.
 * These ops are not part of fused_elementwise chains (ops/fused.c); the fusion pass makes a
 * hard_swish of the ops an ONNX export spells it with (graph/passes/fuse.c rule 12).
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_hard(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    const char *op = ts_op_get(n->op)->name;
    for (int k = 0; k < n->nin; k++)
        if (g->vals[n->in[k]].dtype != TS_F32)
            return ts_err(TS_ERR_DTYPE, "op %s: input %d %s has dtype %s; this op takes f32", op, k,
                          VS(g, n->in[k]), ts_dtype_name(g->vals[n->in[k]].dtype));
    if (n->op == TS_OP_HARD_ACT_GRAD) {
        const ts_val *gy = &g->vals[n->in[1]];
        if (gy->ndim != x->ndim || memcmp(gy->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
            return ts_err(TS_ERR_SHAPE, "op hard_act_grad: gradient %s and x %s differ in shape", VS(g, n->in[1]),
                          VS(g, n->in[0]));
    }
    if (n->op == TS_OP_CLIP && (isnan(n->attr.f[0]) || isnan(n->attr.f[1])))
        return ts_err(TS_ERR_ARG, "op clip: bounds [%g, %g] must not be NaN", (double)n->attr.f[0],
                      (double)n->attr.f[1]);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    return TS_OK;
}

/* y = f(x) elementwise, f as at the top of the file */
TS_SIMD_CLONES
static void hard_fwd(int op, float a, float b, const float *x, float *y, int64_t n) {
    switch (op) {
    case TS_OP_CLIP:
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] < a ? a : x[i];
            y[i] = v > b ? b : v;
        }
        break;
    case TS_OP_HARD_SIGMOID:
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) {
            float v = a * x[i] + b;
            v = v < 0.f ? 0.f : v;
            y[i] = v > 1.f ? 1.f : v;
        }
        break;
    default: /* hard_swish */
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] + 3.f;
            v = v < 0.f ? 0.f : v;
            v = v > 6.f ? 6.f : v;
            y[i] = x[i] * v / 6.f; /* PyTorch's order; ONNX exports of it, fused (fuse.c rule 12), the same bits */
        }
        break;
    }
}

/* gx = g f'(x), f' as at the top of the file */
TS_SIMD_CLONES
static void hard_bwd(int op, float a, float b, const float *x, const float *g, float *gx, int64_t n) {
    switch (op) {
    case TS_OP_CLIP:
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) gx[i] = x[i] >= a && x[i] <= b ? g[i] : 0.f;
        break;
    case TS_OP_HARD_SIGMOID:
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) {
            float v = a * x[i] + b;
            gx[i] = v > 0.f && v < 1.f ? g[i] * a : 0.f;
        }
        break;
    default:
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            gx[i] = v < -3.f ? 0.f : v > 3.f ? g[i] : g[i] * (2.f * v + 3.f) * (1.f / 6.f);
        }
        break;
    }
}

static ts_status hard_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    hard_fwd(n->op, n->attr.f[0], n->attr.f[1], k->in[0], k->out[0], ts_val_numel(&k->g->vals[n->out[0]]));
    return TS_OK;
}

static ts_status hard_grad_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    hard_bwd((int)n->attr.i[0], n->attr.f[0], n->attr.f[1], k->in[0], k->in[1], k->out[0],
             ts_val_numel(&k->g->vals[n->out[0]]));
    return TS_OK;
}

static ts_status grad_hard(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin) {
    if (gout[0] == TS_NONE) return TS_OK;
    ts_attrs at = {0};
    at.i[0] = n->op;
    at.ni = 1;
    at.f[0] = n->attr.f[0], at.f[1] = n->attr.f[1];
    gin[0] = ts_node_add(g, TS_OP_HARD_ACT_GRAD, 2, (int[]){n->in[0], gout[0]}, &at, NULL);
    return TS_OK;
}

#define HARD_DEF(NAME)                                                                             \
    const ts_op_def ts_opdef_##NAME = {#NAME, 1, 1, 1, TS_OPF_ELEMENTWISE | TS_OPF_INPLACE0,     \
                                       infer_hard, grad_hard, hard_kernel, NULL};
HARD_DEF(clip)
HARD_DEF(hard_sigmoid)
HARD_DEF(hard_swish)
const ts_op_def ts_opdef_hard_act_grad = {"hard_act_grad", 2, 2, 1, TS_OPF_ELEMENTWISE, infer_hard, NULL,
                                          hard_grad_kernel, NULL};

static ts_value hard(ts_graph *g, int op, ts_value x, float f0, float f1) {
    if (x == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.f[0] = f0, at.f[1] = f1;
    return ts_node_add(g, op, 1, &x, &at, NULL);
}
ts_value ts_clip(ts_graph *g, ts_value x, float lo, float hi) { return hard(g, TS_OP_CLIP, x, lo, hi); }
ts_value ts_hard_sigmoid(ts_graph *g, ts_value x, float alpha, float beta) {
    return hard(g, TS_OP_HARD_SIGMOID, x, alpha, beta);
}
ts_value ts_hard_swish(ts_graph *g, ts_value x) { return hard(g, TS_OP_HARD_SWISH, x, 0.f, 0.f); }
