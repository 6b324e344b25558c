/*
 * nll_loss.c — ts_nll_loss, the negative log-likelihood loss of ONNX NegativeLogLikelihoodLoss
 * (PyTorch's nll_loss), and nll_loss_grad, its gradient in the input.
 *
 *   nll_loss(input [N, C, d..] f32, target [N, d..] i32/i64, weight [C] f32?) -> loss
 *     attrs: i[0] = ignore_index, i[1] = ts_reduction
 *   For each position p = (n, d..) with target t = target[p]:
 *     w[p] = 0 when t == ignore_index, else weight[t] (1 without weight)
 *     l[p] = -w[p] input[n, t, d..]  (0 when ignored)
 *   none: loss = l [N, d..];  sum: loss = sum_p l[p];  mean: loss = sum_p l[p] / sum_p w[p]
 *   (rank 0; sums in double, in row-major order). A t outside [0, C) that is not ignore_index
 *   fails the run with TS_ERR_RUNTIME before any output.
 *   nll_loss_grad(input, target, gy, weight?) -> g_input [N, C, d..]: zero except
 *     g_input[n, t, d..] = -w[p] gy[p] (none), -w[p] gy (sum), -w[p] gy / sum_p w[p] (mean)
 * Not differentiable in target (indices) or weight (treated as a constant); nll_loss_grad is not
 * differentiable (grad NULL).
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* input, target, weight (input k_w, may be absent): dtypes and shapes. */
static ts_status check_operands(const ts_graph *g, const ts_node *n, int k_w, const char *name) {
    const ts_val *x = &g->vals[n->in[0]], *t = &g->vals[n->in[1]];
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: input %s must be f32", name, VS(g, n->in[0]));
    if (t->dtype != TS_I32 && t->dtype != TS_I64)
        return ts_err(TS_ERR_DTYPE, "op %s: target %s must be i32 or i64", name, VS(g, n->in[1]));
    int ok = x->ndim >= 2 && t->ndim == x->ndim - 1 && t->shape[0] == x->shape[0] &&
             memcmp(t->shape + 1, x->shape + 2, sizeof(int64_t) * (size_t)(x->ndim - 2)) == 0;
    if (!ok)
        return ts_err(TS_ERR_SHAPE, "op %s: input %s must be [N, C, d..] and target %s [N, d..]", name,
                      VS(g, n->in[0]), VS(g, n->in[1]));
    if (k_w < n->nin && n->in[k_w] >= 0) {
        const ts_val *w = &g->vals[n->in[k_w]];
        if (w->dtype != TS_F32 || w->ndim != 1 || w->shape[0] != x->shape[1])
            return ts_err(TS_ERR_SHAPE, "op %s: weight %s must be f32 [%lld], one per class of %s", name,
                          VS(g, n->in[k_w]), (long long)x->shape[1], VS(g, n->in[0]));
    }
    if (n->attr.i[1] < TS_REDUCE_NONE || n->attr.i[1] > TS_REDUCE_MEAN)
        return ts_err(TS_ERR_ARG, "op %s: reduction %lld is not a ts_reduction", name, (long long)n->attr.i[1]);
    return TS_OK;
}

static ts_status infer_nll(ts_graph *g, ts_node *n) {
    ts_status s = check_operands(g, n, 2, "nll_loss");
    if (s) return s;
    const ts_val *t = &g->vals[n->in[1]];
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = n->attr.i[1] == TS_REDUCE_NONE ? t->ndim : 0;
    memcpy(o->shape, t->shape, sizeof o->shape);
    return TS_OK;
}

/* Sizes N, C, D (= product of d..) and, per position, the class (-1 when ignored) and weight;
 * TS_ERR_RUNTIME for a bad target. Returns the sum of the weights in *wsum. */
static ts_status classes(const ts_kargs *k, const char *name, const void *target, const float *weight, int64_t *cls,
                         float *w, double *wsum) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *x = &g->vals[n->in[0]], *tv = &g->vals[n->in[1]];
    int64_t P = ts_val_numel(tv), C = x->shape[1], ii = n->attr.i[0];
    double ws = 0;
    for (int64_t p = 0; p < P; p++) {
        int64_t t = tv->dtype == TS_I64 ? ((const int64_t *)target)[p] : ((const int32_t *)target)[p];
        if (t == ii) {
            cls[p] = -1;
            w[p] = 0.f;
            continue;
        }
        if (t < 0 || t >= C)
            return ts_err(TS_ERR_RUNTIME, "op %s: target %lld at position %lld of %s is outside [0, %lld) "
                          "(ignore_index is %lld)", name, (long long)t, (long long)p, VS(g, n->in[1]),
                          (long long)C, (long long)ii);
        cls[p] = t;
        w[p] = weight ? weight[t] : 1.f;
        ws += w[p];
    }
    *wsum = ws;
    return TS_OK;
}

static size_t nll_scratch(const ts_graph *g, const ts_node *n) {
    int64_t P = ts_val_numel(&g->vals[n->in[1]]);
    return (size_t)P * (sizeof(int64_t) + sizeof(float)) + 64;
}

static ts_status nll_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *x = &g->vals[n->in[0]], *tv = &g->vals[n->in[1]];
    int64_t P = ts_val_numel(tv), C = x->shape[1], D = ts_numel(x->ndim - 2, x->shape + 2);
    int64_t *cls = k->scratch;
    float *w = (float *)(cls + P);
    double wsum;
    ts_status s = classes(k, "nll_loss", k->in[1], n->nin > 2 ? k->in[2] : NULL, cls, w, &wsum);
    if (s) return s;
    const float *X = k->in[0];
    float *Y = k->out[0];
    double sum = 0;
    for (int64_t p = 0; p < P; p++) {
        int64_t nn = p / (D ? D : 1), d = p % (D ? D : 1);
        float l = cls[p] < 0 ? 0.f : -w[p] * X[(nn * C + cls[p]) * D + d];
        if (n->attr.i[1] == TS_REDUCE_NONE) Y[p] = l;
        else sum += l;
    }
    if (n->attr.i[1] == TS_REDUCE_SUM) Y[0] = (float)sum;
    else if (n->attr.i[1] == TS_REDUCE_MEAN) Y[0] = (float)(sum / wsum);
    return TS_OK;
}

static ts_status grad_nll(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE) return TS_OK;
    int nin = n->nin > 2 && n->in[2] >= 0 ? 4 : 3;
    gi[0] = ts_node_add(g, TS_OP_NLL_LOSS_GRAD, nin, (int[]){n->in[0], n->in[1], go[0], nin == 4 ? n->in[2] : -1},
                        &n->attr, NULL);
    return TS_OK;
}

const ts_op_def ts_opdef_nll_loss = {"nll_loss", 2, 3, 1, 0, infer_nll, grad_nll, nll_kernel, nll_scratch};

static ts_status infer_nll_grad(ts_graph *g, ts_node *n) {
    ts_status s = check_operands(g, n, 3, "nll_loss_grad");
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]], *t = &g->vals[n->in[1]], *gy = &g->vals[n->in[2]];
    int none = n->attr.i[1] == TS_REDUCE_NONE;
    int ok = gy->dtype == TS_F32 && (none ? gy->ndim == t->ndim &&
                                                memcmp(gy->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) == 0
                                          : gy->ndim == 0);
    if (!ok)
        return ts_err(TS_ERR_SHAPE, "op nll_loss_grad: gradient %s must be f32 of the loss's shape", VS(g, n->in[2]));
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof o->shape);
    return TS_OK;
}

static ts_status nll_grad_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *x = &g->vals[n->in[0]], *tv = &g->vals[n->in[1]];
    int64_t P = ts_val_numel(tv), C = x->shape[1], D = ts_numel(x->ndim - 2, x->shape + 2);
    int64_t *cls = k->scratch;
    float *w = (float *)(cls + P);
    double wsum;
    ts_status s = classes(k, "nll_loss_grad", k->in[1], n->nin > 3 ? k->in[3] : NULL, cls, w, &wsum);
    if (s) return s;
    const float *GY = k->in[2];
    float *GX = k->out[0];
    memset(GX, 0, ts_val_bytes(x));
    int red = (int)n->attr.i[1];
    float scale = red == TS_REDUCE_MEAN ? (float)(1.0 / wsum) : 1.f;
    for (int64_t p = 0; p < P; p++) {
        if (cls[p] < 0) continue;
        int64_t nn = p / (D ? D : 1), d = p % (D ? D : 1);
        float gyp = red == TS_REDUCE_NONE ? GY[p] : GY[0] * scale;
        GX[(nn * C + cls[p]) * D + d] = -w[p] * gyp;
    }
    return TS_OK;
}

/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_nll_loss_grad = {"nll_loss_grad", 3, 4, 1, 0, infer_nll_grad, NULL, nll_grad_kernel,
                                          nll_scratch};

ts_value ts_nll_loss(ts_graph *g, ts_value input, ts_value target, ts_value weight, int64_t ignore_index,
                     ts_reduction reduction) {
    if (!g || input == TS_NONE || target == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = ignore_index;
    at.i[1] = reduction;
    at.ni = 2;
    if (weight == TS_NONE) return ts_node_add(g, TS_OP_NLL_LOSS, 2, (int[]){input, target}, &at, NULL);
    return ts_node_add(g, TS_OP_NLL_LOSS, 3, (int[]){input, target, weight}, &at, NULL);
}
