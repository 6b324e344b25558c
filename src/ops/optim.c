/*
 * optim.c — the optimizer step as graph ops: parameter updates, gradient clipping by global norm,
 * and the learning-rate schedule. The updates have no outputs: they write the parameter and
 * their state in place through the input pointers, so they are flagged TS_OPF_SIDE_EFFECT (kept
 * by dead-code elimination, dropped for inference). src/optim/optimizer.c appends one update per
 * trained parameter; src/optim/schedule.c appends the schedule.
 *
 * Every tensor is f32; lr, coef, t and the schedule counter are rank-0 f32 (t counts the steps a
 * parameter has taken, starting from 0). Below, g is the gradient times the step coefficient
 * when a coef input is given (step_coef's: clipping as torch.nn.utils.clip_grad_norm_ scales the
 * .grad in place, the 1 / N of gradient accumulation, the 1 / scale of loss scaling), else the
 * gradient. A coefficient of exactly 0 skips the update: nothing is written, not even t (a
 * micro-batch that is not the last of its step, or a loss-scaled step whose gradients
 * overflowed). An lr that is negative or not finite fails the run (TS_ERR_RUNTIME) before
 * anything is written. None of these ops is differentiable: grad rules are NULL.
 *
 *   sgd_update(param, grad, lr, momentum_buffer?, t?, coef?)                  (PyTorch SGD)
 *     d = g + wd p
 *     if momentum != 0: buf = d on the first step (t == 0, or always when there is no t: with
 *                       dampening 0 the two agree since buf starts at 0),
 *                       else buf = momentum buf + (1 - dampening) d;
 *                       d = nesterov ? d + momentum buf : buf
 *     p -= lr d
 *     attrs f[0] = momentum, f[1] = weight_decay, f[2] = dampening, i[0] = nesterov.
 *     momentum != 0 needs the buffer; dampening != 0 needs t.
 *   adamw_update(param, grad, lr, m, v, t, coef?)                             (PyTorch AdamW)
 *     t += 1; p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
 *     p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 *     attrs f[0] = beta1, f[1] = beta2, f[2] = eps, f[3] = weight_decay.
 *   lamb_update(param, grad, lr, m, v, t, coef?)                              (LAMB, You et al.)
 *     t += 1; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
 *     r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd p;
 *     trust = ||p|| / ||r|| when both norms are > 0, else 1;  p -= (lr trust) r
 *     (norms over the whole parameter tensor, taken before the update). attrs as adamw_update,
 *     and i[0] = 1: no layer adaptation, trust = 1 (the optimizer's no_trust parameters).
 *   grad_sumsq(acc?, g1, ..., gk) -> s []      s = acc + sum over i of sum(gi^2)  (gi f32, bf16 or f16)
 *     attrs i[0] = 1 when in[0] is the accumulator acc. Chains of these sum over any number of
 *     gradients (a node takes at most TS_MAX_IN inputs).
 *   step_coef(s?, micro?, scale?) -> coef [], norm []
 *     The coefficient the updates multiply their gradient by. s is the sum of squares of every
 *     gradient the updates read (grad_sumsq's), micro the micro-batch counter of gradient
 *     accumulation (0 .. N - 1: micro-batches summed before this one in the step), scale the
 *     loss scale the gradients carry (absent: 1). With u = 1 / (N R scale), R the replicas whose
 *     gradients were summed (1 without):
 *       norm = sqrt(s) u                          (of the mean, unscaled gradient; 0 without s)
 *       coef = 0                                  micro present and micro + 1 < N (no update yet)
 *       coef = 0                                  scale present and s not finite (overflow: skip)
 *       coef = u min(1, max_norm / (norm + 1e-6)) max_norm > 0 (torch.nn.utils.clip_grad_norm_)
 *       coef = u                                  otherwise
 *     Without a scale, a clipped step with a norm that is not finite gets coef NaN (the
 *     parameters become NaN, as they do in torch), so 0 always means a deliberate skip.
 *     attrs f[0] = max_norm (0: no clipping), i[0] = N (>= 1), i[1] = R (0 or 1: no replicas).
 *   lr_schedule(counter) -> lr []               lr = base_lr * lambda(step), step = counter,
 *     with lambda as Hugging Face transformers' schedules (W warm-up steps, T total steps):
 *       step < W (any kind):       step / max(1, W)
 *       constant:                  1
 *       linear:                    max(0, (T - step) / max(1, T - W))
 *       cosine:                    progress = (step - W) / max(1, T - W);
 *                                  max(0, 0.5 (1 + cos(pi * cycles * 2 * progress)))
 *       polynomial:                step > T: lr_end / base_lr; else
 *                                  ((base_lr - lr_end) (1 - (step - W) / (T - W))^power + lr_end) / base_lr
 *     attrs i[0] = kind (TS_LR_*), i[1] = W, i[2] = T; f[0] = base_lr, f[1] = lr_end,
 *     f[2] = power, f[3] = cycles.
 *   step_count(counter, gate?)                  counter += 1, or when attr i[0] = M > 0:
 *     counter = (counter + 1) mod M; nothing when gate is present and exactly 0 (the schedule
 *     counts optimizer steps taken, as Hugging Face's Trainer skips scheduler.step() after a
 *     skipped fp16 step). A side effect at the end of a step.
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static int has_in(const ts_node *n, int k) { return n->nin > k && n->in[k] >= 0; }

/* Input k is f32 with the shape of the parameter (input 0); what names it in messages. */
static ts_status need_like_param(const ts_graph *g, const ts_node *n, int k, const char *what) {
    const ts_val *p = &g->vals[n->in[0]], *v = &g->vals[n->in[k]];
    if (v->dtype != TS_F32 || v->ndim != p->ndim ||
        memcmp(v->shape, p->shape, sizeof(int64_t) * (size_t)p->ndim) != 0)
        return ts_err(TS_ERR_SHAPE, "op %s: %s %s must be f32 of the shape of parameter %s",
                      ts_op_get(n->op)->name, what, VS(g, n->in[k]), VS(g, n->in[0]));
    return TS_OK;
}

/* Input k is a rank-0 f32 value (op.h). */
ts_status ts_need_scalar(const ts_graph *g, const ts_node *n, int k, const char *what) {
    const ts_val *v = &g->vals[n->in[k]];
    if (v->dtype != TS_F32 || v->ndim != 0)
        return ts_err(TS_ERR_SHAPE, "op %s: %s %s must be a rank-0 f32 value",
                      ts_op_get(n->op)->name, what, VS(g, n->in[k]));
    return TS_OK;
}

/* param f32, grad like param, lr rank-0 f32, and input clip_at (if present) rank-0 f32. */
static ts_status check_common(const ts_graph *g, const ts_node *n, int clip_at) {
    const ts_val *p = &g->vals[n->in[0]];
    if (p->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: parameter %s has dtype %s; updates take f32",
                      ts_op_get(n->op)->name, VS(g, n->in[0]), ts_dtype_name(p->dtype));
    ts_status s = need_like_param(g, n, 1, "gradient");
    if (!s) s = ts_need_scalar(g, n, 2, "learning rate");
    if (!s && has_in(n, clip_at)) s = ts_need_scalar(g, n, clip_at, "step coefficient");
    return s;
}

/* The run-time lr check shared by the updates: finite and >= 0, else nothing is written. */
static ts_status check_lr(const ts_kargs *k, float lr) {
    if (lr >= 0.f && isfinite(lr)) return TS_OK;
    return ts_err(TS_ERR_RUNTIME, "op %s: learning rate %g for parameter %s must be finite and >= 0",
                  ts_op_get(k->node->op)->name, (double)lr, VS(k->g, k->node->in[0]));
}

static float coef_of(const ts_kargs *k, int at) {
    return has_in(k->node, at) ? *(const float *)k->in[at] : 1.f;
}

/* ------------------------------------------------------------------ sgd_update */

static ts_status infer_sgd(ts_graph *g, ts_node *n) {
    ts_status s = check_common(g, n, 5);
    if (!s && has_in(n, 3)) s = need_like_param(g, n, 3, "momentum buffer");
    if (!s && has_in(n, 4)) s = ts_need_scalar(g, n, 4, "step counter");
    if (s) return s;
    if (n->attr.f[0] != 0.f && !has_in(n, 3))
        return ts_err(TS_ERR_ARG, "op sgd_update: momentum %g for parameter %s needs a momentum buffer",
                      (double)n->attr.f[0], VS(g, n->in[0]));
    if (n->attr.f[0] != 0.f && n->attr.f[2] != 0.f && !has_in(n, 4))
        return ts_err(TS_ERR_ARG, "op sgd_update: dampening %g for parameter %s needs a step counter",
                      (double)n->attr.f[2], VS(g, n->in[0]));
    return TS_OK;
}

/* One SGD step over n elements (the math is in the comment at the top). first: buf = d. */
TS_SIMD_CLONES
static void sgd_f32(float *p, const float *gr, float *buf, int64_t n, float lr, float clip, float mom,
                    float wd, float damp1, int nesterov, int first) {
    if (buf) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) {
            float d = gr[i] * clip + wd * p[i];
            float b = first ? d : mom * buf[i] + damp1 * d;
            buf[i] = b;
            p[i] -= lr * (nesterov ? d + mom * b : b);
        }
    } else {
#pragma omp parallel for simd schedule(static) if (n > 32768)
        for (int64_t i = 0; i < n; i++) p[i] -= lr * (gr[i] * clip + wd * p[i]);
    }
}

static ts_status sgd_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->in[0]]);
    float lr = *(const float *)k->in[2];
    ts_status s = check_lr(k, lr);
    if (s) return s;
    float coef = coef_of(k, 5);
    if (coef == 0.f) return TS_OK; /* skipped step */
    float *buf = has_in(n, 3) ? k->in[3] : NULL, *t = has_in(n, 4) ? k->in[4] : NULL;
    int first = t ? *t == 0.f : 0;
    sgd_f32(k->in[0], k->in[1], buf, cnt, lr, coef, n->attr.f[0], n->attr.f[1],
            (float)(1.0 - (double)n->attr.f[2]), (int)n->attr.i[0], first);
    if (t) *t += 1.f;
    return TS_OK;
}

const ts_op_def ts_opdef_sgd_update = {"sgd_update", 3, 6, 0, TS_OPF_SIDE_EFFECT, infer_sgd, NULL,
                                       sgd_kernel, NULL};

/* ------------------------------------------------------------------ adamw_update, lamb_update */

static ts_status infer_adam_like(ts_graph *g, ts_node *n) {
    ts_status s = check_common(g, n, 6);
    if (!s) s = need_like_param(g, n, 3, "first moment");
    if (!s) s = need_like_param(g, n, 4, "second moment");
    if (!s) s = ts_need_scalar(g, n, 5, "step counter");
    return s;
}

/* p = p decay - step_size m / (sqrt(v) / bc2_sqrt + eps) after the moment updates, with
 * decay = 1 - lr wd, step_size = lr / (1 - b1^t), bc2_sqrt = sqrt(1 - b2^t). */
TS_SIMD_CLONES
static void adamw_f32(float *p, const float *gr, float *m, float *v, int64_t n, float clip, float decay,
                      float b1, float b2, float step_size, float bc2_sqrt, float eps) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float g = gr[i] * clip;
        float mi = b1 * m[i] + (1.f - b1) * g;
        float vi = b2 * v[i] + (1.f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * decay - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
    }
}

/* What AdamW and LAMB do before their element loops (inputs param, grad, lr, m, v, step, coef;
 * attributes beta1, beta2, eps, weight decay): read the attributes and the element count, check
 * lr, and unless the step is skipped (coef 0: run = 0) count it in the step counter and give the
 * bias corrections 1 - beta1^t and 1 - beta2^t (in double). */
typedef struct adam_step {
    int run;
    int64_t cnt;
    float lr, coef, b1, b2, eps, wd;
    double bc1, bc2;
} adam_step;
static ts_status adam_begin(const ts_kargs *k, adam_step *a) {
    const ts_node *n = k->node;
    a->cnt = ts_val_numel(&k->g->vals[n->in[0]]);
    a->b1 = n->attr.f[0], a->b2 = n->attr.f[1], a->eps = n->attr.f[2], a->wd = n->attr.f[3];
    a->lr = *(const float *)k->in[2];
    ts_status s = check_lr(k, a->lr);
    if (s) return s;
    a->coef = coef_of(k, 6);
    a->run = a->coef != 0.f;
    if (!a->run) return TS_OK; /* skipped step */
    float *t = k->in[5];
    *t += 1.f;
    a->bc1 = 1.0 - pow((double)a->b1, (double)*t);
    a->bc2 = 1.0 - pow((double)a->b2, (double)*t);
    return TS_OK;
}

static ts_status adamw_kernel(const ts_kargs *k) {
    adam_step a;
    ts_status s = adam_begin(k, &a);
    if (s || !a.run) return s;
    adamw_f32(k->in[0], k->in[1], k->in[3], k->in[4], a.cnt, a.coef, 1.f - a.lr * a.wd, a.b1, a.b2,
              (float)((double)a.lr / a.bc1), (float)sqrt(a.bc2), a.eps);
    return TS_OK;
}

const ts_op_def ts_opdef_adamw_update = {"adamw_update", 6, 7, 0, TS_OPF_SIDE_EFFECT, infer_adam_like,
                                         NULL, adamw_kernel, NULL};

/* LAMB's direction r for one element, from the updated moments (same arithmetic in both passes). */
static inline float lamb_r(float m, float v, float p, float bc1, float bc2, float eps, float wd) {
    return (m / bc1) / (sqrtf(v / bc2) + eps) + wd * p;
}

/* Pass 1: update the moments, return ||p||^2 and ||r||^2 (double sums). */
TS_SIMD_CLONES
static void lamb_moments(const float *p, const float *gr, float *m, float *v, int64_t n, float clip,
                         float b1, float b2, float bc1, float bc2, float eps, float wd, double *pp,
                         double *rr) {
    double sp = 0, sr = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : sp, sr) if (n > 32768)
    for (int64_t i = 0; i < n; i++) {
        float g = gr[i] * clip;
        float mi = b1 * m[i] + (1.f - b1) * g;
        float vi = b2 * v[i] + (1.f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float r = lamb_r(mi, vi, p[i], bc1, bc2, eps, wd);
        sp += (double)p[i] * p[i];
        sr += (double)r * r;
    }
    *pp = sp;
    *rr = sr;
}

/* Pass 2: p -= step r. */
TS_SIMD_CLONES
static void lamb_apply(float *p, const float *m, const float *v, int64_t n, float bc1, float bc2,
                       float eps, float wd, float step) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; i++) p[i] -= step * lamb_r(m[i], v[i], p[i], bc1, bc2, eps, wd);
}

static ts_status lamb_kernel(const ts_kargs *k) {
    adam_step a;
    ts_status s = adam_begin(k, &a);
    if (s || !a.run) return s;
    float bc1 = (float)a.bc1, bc2 = (float)a.bc2;
    double pp, rr;
    lamb_moments(k->in[0], k->in[1], k->in[3], k->in[4], a.cnt, a.coef, a.b1, a.b2, bc1, bc2, a.eps,
                 a.wd, &pp, &rr);
    float pn = (float)sqrt(pp), rn = (float)sqrt(rr);
    float trust = pn > 0.f && rn > 0.f && !k->node->attr.i[0] ? pn / rn : 1.f;
    lamb_apply(k->in[0], k->in[3], k->in[4], a.cnt, bc1, bc2, a.eps, a.wd, a.lr * trust);
    return TS_OK;
}

const ts_op_def ts_opdef_lamb_update = {"lamb_update", 6, 7, 0, TS_OPF_SIDE_EFFECT, infer_adam_like,
                                        NULL, lamb_kernel, NULL};

/* ------------------------------------------------------------------ grad_sumsq, clip_coef */

static void set_scalar_out(ts_graph *g, const ts_node *n, int k) {
    ts_val *o = &g->vals[n->out[k]];
    o->dtype = TS_F32;
    o->ndim = 0;
}

static ts_status infer_sumsq(ts_graph *g, ts_node *n) {
    int acc = n->attr.i[0] != 0;
    if (acc) {
        ts_status s = ts_need_scalar(g, n, 0, "accumulator");
        if (s) return s;
    }
    if (n->nin <= acc) return ts_err(TS_ERR_ARG, "op grad_sumsq: no gradient given");
    for (int j = acc; j < n->nin; j++) {
        if (n->in[j] < 0) return ts_err(TS_ERR_ARG, "op grad_sumsq: input %d is absent", j);
        ts_dtype dt = g->vals[n->in[j]].dtype;
        if (dt != TS_F32 && dt != TS_BF16 && dt != TS_F16)
            return ts_err(TS_ERR_DTYPE, "op grad_sumsq: gradient %s must be f32, bf16 or f16", VS(g, n->in[j]));
    }
    set_scalar_out(g, n, 0);
    return TS_OK;
}

static ts_status sumsq_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int acc = n->attr.i[0] != 0;
    double s = acc ? *(const float *)k->in[0] : 0.0;
    for (int j = acc; j < n->nin; j++) {
        const ts_val *v = &k->g->vals[n->in[j]];
        int64_t cnt = ts_val_numel(v);
        double sj = 0;
        if (v->dtype == TS_F32) {
            const float *x = k->in[j];
#pragma omp parallel for simd schedule(static) reduction(+ : sj) if (cnt > 32768)
            for (int64_t i = 0; i < cnt; i++) sj += (double)x[i] * x[i];
        } else { /* 16-bit gradients (ts_graph_store_params), widened exactly a block at a time */
            enum { BLK = 4096 };
            const uint16_t *h = k->in[j];
#pragma omp parallel for schedule(static) reduction(+ : sj) if (cnt > 32768)
            for (int64_t b = 0; b < cnt; b += BLK) {
                float x[BLK];
                size_t m = (size_t)(cnt - b < BLK ? cnt - b : BLK);
                if (v->dtype == TS_BF16) ts_bf16_to_f32(h + b, x, m);
                else ts_f16_to_f32(h + b, x, m);
                double sb = 0;
                for (size_t i = 0; i < m; i++) sb += (double)x[i] * x[i];
                sj += sb;
            }
        }
        s += sj;
    }
    *(float *)k->out[0] = (float)s;
    return TS_OK;
}

const ts_op_def ts_opdef_grad_sumsq = {"grad_sumsq", 1, TS_MAX_IN, 1, 0, infer_sumsq, NULL,
                                       sumsq_kernel, NULL};

static ts_status infer_step_coef(ts_graph *g, ts_node *n) {
    static const char *const what[3] = {"sum of squares", "micro-batch counter", "loss scale"};
    for (int j = 0; j < 3; j++) {
        ts_status s = has_in(n, j) ? ts_need_scalar(g, n, j, what[j]) : TS_OK;
        if (s) return s;
    }
    float max_norm = n->attr.f[0];
    if (!(max_norm >= 0.f) || isinf(max_norm))
        return ts_err(TS_ERR_ARG, "op step_coef: max_norm %g must be finite and >= 0", (double)max_norm);
    if (n->attr.i[0] < 1 || (n->attr.i[0] > 1 && !has_in(n, 1)))
        return ts_err(TS_ERR_ARG, "op step_coef: accumulation over %lld micro-batches needs N >= 1 "
                      "and, above 1, a micro-batch counter", (long long)n->attr.i[0]);
    if (max_norm > 0.f && !has_in(n, 0))
        return ts_err(TS_ERR_ARG, "op step_coef: clipping needs the sum of squares");
    set_scalar_out(g, n, 0);
    set_scalar_out(g, n, 1);
    return TS_OK;
}

/* The coefficient and norm of the comment at the top. */
static ts_status step_coef_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    float max_norm = n->attr.f[0], N = (float)n->attr.i[0];
    double R = n->attr.i[1] > 1 ? (double)n->attr.i[1] : 1.0;
    float s = has_in(n, 0) ? *(const float *)k->in[0] : 0.f;
    float scale = has_in(n, 2) ? *(const float *)k->in[2] : 1.f;
    float u = (float)(1.0 / ((double)N * R * scale));
    float norm = sqrtf(s) * u, coef = u;
    if (has_in(n, 1) && *(const float *)k->in[1] + 1.f < N) coef = 0.f;
    else if (has_in(n, 2) && !isfinite(s)) coef = 0.f;
    else if (max_norm > 0.f) {
        float c = max_norm / (norm + 1e-6f);
        coef = !isfinite(norm) ? NAN : c < 1.f ? u * c : u;
    }
    *(float *)k->out[0] = coef;
    *(float *)k->out[1] = norm;
    return TS_OK;
}

const ts_op_def ts_opdef_step_coef = {"step_coef", 0, 3, 2, 0, infer_step_coef, NULL, step_coef_kernel,
                                      NULL};

/* ------------------------------------------------------------------ lr_schedule, step_count */

static ts_status infer_lr_schedule(ts_graph *g, ts_node *n) {
    ts_status s = ts_need_scalar(g, n, 0, "step counter");
    if (s) return s;
    if (n->attr.i[0] < TS_LR_CONSTANT || n->attr.i[0] > TS_LR_POLYNOMIAL)
        return ts_err(TS_ERR_ARG, "op lr_schedule: unknown schedule kind %lld", (long long)n->attr.i[0]);
    set_scalar_out(g, n, 0);
    return TS_OK;
}

/* lambda(step) of the comment at the top. */
static double lr_lambda(const ts_attrs *a, double step) {
    double W = (double)a->i[1], T = (double)a->i[2], lr0 = a->f[0], lr_end = a->f[1];
    if (step < W) return step / fmax(1.0, W);
    switch ((int)a->i[0]) {
    case TS_LR_LINEAR: return fmax(0.0, (T - step) / fmax(1.0, T - W));
    case TS_LR_COSINE: {
        double progress = (step - W) / fmax(1.0, T - W);
        return fmax(0.0, 0.5 * (1.0 + cos(M_PI * (double)a->f[3] * 2.0 * progress)));
    }
    case TS_LR_POLYNOMIAL:
        if (step > T) return lr_end / lr0;
        return ((lr0 - lr_end) * pow(1.0 - (step - W) / (T - W), (double)a->f[2]) + lr_end) / lr0;
    default: return 1.0;
    }
}

static ts_status lr_schedule_kernel(const ts_kargs *k) {
    const ts_attrs *a = &k->node->attr;
    *(float *)k->out[0] = (float)((double)a->f[0] * lr_lambda(a, *(const float *)k->in[0]));
    return TS_OK;
}

const ts_op_def ts_opdef_lr_schedule = {"lr_schedule", 1, 1, 1, 0, infer_lr_schedule, NULL,
                                        lr_schedule_kernel, NULL};

static ts_status infer_step_count(ts_graph *g, ts_node *n) {
    ts_status s = ts_need_scalar(g, n, 0, "counter");
    if (!s && g->vals[n->in[0]].kind != TS_V_STATE)
        s = ts_err(TS_ERR_ARG, "op step_count: counter %s must be a state value", VS(g, n->in[0]));
    if (!s && has_in(n, 1)) s = ts_need_scalar(g, n, 1, "gate");
    if (!s && n->attr.i[0] < 0)
        s = ts_err(TS_ERR_ARG, "op step_count: modulus %lld must be >= 0", (long long)n->attr.i[0]);
    return s;
}

static ts_status step_count_kernel(const ts_kargs *k) {
    if (has_in(k->node, 1) && *(const float *)k->in[1] == 0.f) return TS_OK;
    float *c = k->in[0], m = (float)k->node->attr.i[0];
    *c = m > 0.f && *c + 1.f >= m ? 0.f : *c + 1.f;
    return TS_OK;
}

const ts_op_def ts_opdef_step_count = {"step_count", 1, 2, 0, TS_OPF_SIDE_EFFECT, infer_step_count,
                                       NULL, step_count_kernel, NULL};
