/*
 * optim.c — optimizer updates as graph ops, run at the end of the compiled step. They have no
 * outputs: they write the parameter and their state in place through the input pointers, so they
 * are flagged TS_OPF_SIDE_EFFECT (kept by dead-code elimination, dropped for inference).
 * src/train/optimizer.c appends one per trained parameter.
 *
 *   sgd_update(param, grad, lr [], momentum_buffer or absent)   (PyTorch SGD)
 *     d = grad + wd param; if momentum != 0: buf = momentum buf + d, d = buf; param -= lr d
 *     attrs f[0] = momentum, f[1] = weight_decay. momentum != 0 needs the buffer.
 *   adamw_update(param, grad, lr [], m, v, t [])                 (PyTorch AdamW)
 *     t += 1; param *= 1 - lr wd; m = b1 m + (1 - b1) grad; v = b2 v + (1 - b2) grad^2;
 *     param -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 *     attrs f[0] = beta1, f[1] = beta2, f[2] = eps, f[3] = weight_decay.
 * Every tensor is f32; lr and t are rank-0 f32 (t counts the steps taken, starting from 0).
 * Neither op is differentiable: grad rules are NULL.
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* Input k is f32 with the shape of the parameter (input 0); what names it in messages. */
static ts_status need_like_param(const ts_graph *g, const ts_node *n, int k, const char *what) {
    const ts_val *p = &g->vals[n->in[0]], *v = &g->vals[n->in[k]];
    if (v->dtype != TS_F32 || v->ndim != p->ndim ||
        memcmp(v->shape, p->shape, sizeof(int64_t) * (size_t)p->ndim) != 0)
        return ts_err(TS_ERR_SHAPE, "op %s: %s %s must be f32 of the shape of parameter %s",
                      ts_op_get(n->op)->name, what, VS(g, n->in[k]), VS(g, n->in[0]));
    return TS_OK;
}

/* Input k is a rank-0 f32 value. */
static ts_status need_scalar(const ts_graph *g, const ts_node *n, int k, const char *what) {
    const ts_val *v = &g->vals[n->in[k]];
    if (v->dtype != TS_F32 || v->ndim != 0)
        return ts_err(TS_ERR_SHAPE, "op %s: %s %s must be a rank-0 f32 value",
                      ts_op_get(n->op)->name, what, VS(g, n->in[k]));
    return TS_OK;
}

/* param f32, grad like param, lr rank-0 f32. */
static ts_status check_common(const ts_graph *g, const ts_node *n) {
    const ts_val *p = &g->vals[n->in[0]];
    if (p->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: parameter %s has dtype %s; updates take f32",
                      ts_op_get(n->op)->name, VS(g, n->in[0]), ts_dtype_name(p->dtype));
    ts_status s = need_like_param(g, n, 1, "gradient");
    return s ? s : need_scalar(g, n, 2, "learning rate");
}

/* ------------------------------------------------------------------ sgd_update */

static ts_status infer_sgd(ts_graph *g, ts_node *n) {
    ts_status s = check_common(g, n);
    if (s) return s;
    int has_buf = n->nin > 3 && n->in[3] >= 0;
    if (has_buf) return need_like_param(g, n, 3, "momentum buffer");
    if (n->attr.f[0] != 0.f)
        return ts_err(TS_ERR_ARG, "op sgd_update: momentum %g for parameter %s needs a momentum buffer",
                      (double)n->attr.f[0], VS(g, n->in[0]));
    return TS_OK;
}

/* d = grad + wd p; with a buffer: buf = momentum buf + d, d = buf; p -= lr d. */
__attribute__((target_clones("avx512f", "default")))
static void sgd_f32(float *p, const float *gr, float *buf, int64_t n, float lr, float mom, float wd) {
    if (buf) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) {
            float b = mom * buf[i] + (gr[i] + wd * p[i]);
            buf[i] = b;
            p[i] -= lr * b;
        }
    } else {
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) p[i] -= lr * (gr[i] + wd * p[i]);
    }
}

static ts_status sgd_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->in[0]]);
    float lr = *(const float *)k->in[2];
    sgd_f32(k->in[0], k->in[1], n->nin > 3 ? k->in[3] : NULL, cnt, lr, n->attr.f[0], n->attr.f[1]);
    return TS_OK;
}

const ts_op_def ts_opdef_sgd_update = {"sgd_update", 3, 4, 0, TS_OPF_SIDE_EFFECT, infer_sgd, NULL,
                                       sgd_kernel, NULL};

/* ------------------------------------------------------------------ adamw_update */

static ts_status infer_adamw(ts_graph *g, ts_node *n) {
    ts_status s = check_common(g, n);
    if (!s) s = need_like_param(g, n, 3, "first moment");
    if (!s) s = need_like_param(g, n, 4, "second moment");
    if (!s) s = need_scalar(g, n, 5, "step counter");
    return s;
}

/* p = p decay - step_size m / (sqrt(v) / bc2_sqrt + eps) after the moment updates, with
 * decay = 1 - lr wd, step_size = lr / (1 - b1^t), bc2_sqrt = sqrt(1 - b2^t). */
__attribute__((target_clones("avx512f", "default")))
static void adamw_f32(float *p, const float *gr, float *m, float *v, int64_t n, float decay,
                      float b1, float b2, float step_size, float bc2_sqrt, float eps) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float g = gr[i];
        float mi = b1 * m[i] + (1.f - b1) * g;
        float vi = b2 * v[i] + (1.f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * decay - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
    }
}

static ts_status adamw_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->in[0]]);
    float lr = *(const float *)k->in[2];
    float *t = k->in[5];
    float b1 = n->attr.f[0], b2 = n->attr.f[1], eps = n->attr.f[2], wd = n->attr.f[3];
    *t += 1.f;
    double bc1 = 1.0 - pow((double)b1, (double)*t), bc2 = 1.0 - pow((double)b2, (double)*t);
    adamw_f32(k->in[0], k->in[1], k->in[3], k->in[4], cnt, 1.f - lr * wd, b1, b2,
              (float)((double)lr / bc1), (float)sqrt(bc2), eps);
    return TS_OK;
}

const ts_op_def ts_opdef_adamw_update = {"adamw_update", 6, 6, 0, TS_OPF_SIDE_EFFECT, infer_adamw,
                                         NULL, adamw_kernel, NULL};
