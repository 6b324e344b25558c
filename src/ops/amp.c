/*
 * amp.c — the ops of gradient accumulation and dynamic loss scaling (src/optim/optimizer.c and
 * src/optim/loss_scale.c append them; ops/optim.c's step_coef turns their state into the
 * coefficient the updates use). State values are rank-0 or parameter-shaped f32 TS_V_STATE
 * values, zero-initialised by the runtime and kept across runs. None of these ops is
 * differentiable: grad rules are NULL.
 *
 *   accum_grad(acc, grad, micro?)                acc = (micro == 0 ? 0 : acc) + grad
 *     The gradient accumulator of one parameter ("<param>@ACCUM"): the first micro-batch of a
 *     step (micro, the micro-batch counter, is 0) overwrites what the previous step left, the
 *     others add to it. Without micro (replicas without accumulation) every run is the first.
 *     A side effect: it writes acc in place.
 *   loss_scale(state) -> scale []                scale = state > 0 ? state : init_scale
 *     The loss scale of this run: the gradient ts_backward_scaled seeds the loss with. state
 *     ("optimizer@LOSS_SCALE") is 0 until the first run's loss_scale_update stores the scale.
 *     attrs f[0] = init_scale, f[1] = growth_factor, f[2] = backoff_factor,
 *     i[0] = growth_interval (loss_scale_update copies them).
 *   loss_scale_update(state, clean, skipped, s, micro?)   (torch.cuda.amp.GradScaler.update)
 *     scale = state > 0 ? state : init_scale. At the last micro-batch of a step (always without
 *     micro; else when micro + 1 == N), with s the sum of squares of the accumulated scaled
 *     gradients (grad_sumsq's; an inf or NaN anywhere makes it non-finite):
 *       s not finite: scale = scale backoff (kept above 0: a scale that would round to 0
 *                     stays), clean = 0, skipped += 1          (step_coef skipped the update)
 *       else:         clean += 1; when clean == growth_interval: clean = 0 and
 *                     scale = scale growth (unless that overflows to inf)
 *     then state = scale. clean ("optimizer@LOSS_SCALE_CLEAN_STEPS") counts the steps since
 *     the scale last changed, skipped ("optimizer@SKIPPED_STEPS") every skipped step.
 *     attrs as loss_scale's, plus i[1] = N (micro-batches a step).
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static int has_in(const ts_node *n, int k) { return n->nin > k && n->in[k] >= 0; }

/* Input k is a rank-0 f32 value; when state, a TS_V_STATE value (written in place). */
static ts_status need_scalar(const ts_graph *g, const ts_node *n, int k, const char *what, int state) {
    ts_status s = ts_need_scalar(g, n, k, what);
    if (s) return s;
    if (state && g->vals[n->in[k]].kind != TS_V_STATE)
        return ts_err(TS_ERR_ARG, "op %s: %s %s must be a state value", ts_op_get(n->op)->name, what,
                      VS(g, n->in[k]));
    return TS_OK;
}

/* ------------------------------------------------------------------ accum_grad */

static ts_status infer_accum(ts_graph *g, ts_node *n) {
    const ts_val *a = &g->vals[n->in[0]], *gr = &g->vals[n->in[1]];
    if (a->kind != TS_V_STATE || a->dtype != TS_F32)
        return ts_err(TS_ERR_ARG, "op accum_grad: accumulator %s must be an f32 state value", VS(g, n->in[0]));
    if (gr->dtype != TS_F32 || gr->ndim != a->ndim ||
        memcmp(gr->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim) != 0)
        return ts_err(TS_ERR_SHAPE, "op accum_grad: gradient %s must be f32 of the shape of accumulator %s",
                      VS(g, n->in[1]), VS(g, n->in[0]));
    return has_in(n, 2) ? need_scalar(g, n, 2, "micro-batch counter", 1) : TS_OK;
}

static ts_status accum_kernel(const ts_kargs *k) {
    float *acc = k->in[0];
    const float *gr = k->in[1];
    int first = !has_in(k->node, 2) || *(const float *)k->in[2] == 0.f;
    int64_t cnt = ts_val_numel(&k->g->vals[k->node->in[0]]);
    if (first) {
        memcpy(acc, gr, sizeof(float) * (size_t)cnt);
        return TS_OK;
    }
#pragma omp parallel for simd schedule(static) if (cnt > 32768)
    for (int64_t i = 0; i < cnt; i++) acc[i] += gr[i];
    return TS_OK;
}

const ts_op_def ts_opdef_accum_grad = {"accum_grad", 2, 3, 0, TS_OPF_SIDE_EFFECT, infer_accum, NULL,
                                       accum_kernel, NULL};

/* ------------------------------------------------------------------ loss_scale */

/* The scaler's options, as ts_backward_scaled checked them. */
static ts_status check_scaler(const ts_node *n) {
    const ts_attrs *a = &n->attr;
    if (!(a->f[0] > 0.f) || isinf(a->f[0]) || !(a->f[1] > 1.f) || isinf(a->f[1]) ||
        !(a->f[2] > 0.f && a->f[2] < 1.f) || a->i[0] < 1)
        return ts_err(TS_ERR_ARG, "op %s: init_scale %g, growth_factor %g, backoff_factor %g, "
                      "growth_interval %lld out of range", ts_op_get(n->op)->name, (double)a->f[0],
                      (double)a->f[1], (double)a->f[2], (long long)a->i[0]);
    return TS_OK;
}

static ts_status infer_loss_scale(ts_graph *g, ts_node *n) {
    ts_status s = need_scalar(g, n, 0, "loss scale state", 1);
    if (!s) s = check_scaler(n);
    if (s) return s;
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = 0;
    return TS_OK;
}

static float current_scale(const ts_node *n, const float *state) {
    return *state > 0.f ? *state : n->attr.f[0];
}

static ts_status loss_scale_kernel(const ts_kargs *k) {
    *(float *)k->out[0] = current_scale(k->node, k->in[0]);
    return TS_OK;
}

const ts_op_def ts_opdef_loss_scale = {"loss_scale", 1, 1, 1, 0, infer_loss_scale, NULL,
                                       loss_scale_kernel, NULL};

/* ------------------------------------------------------------------ loss_scale_update */

static ts_status infer_scale_update(ts_graph *g, ts_node *n) {
    static const char *const what[5] = {"loss scale state", "clean-step counter", "skipped-step counter",
                                        "sum of squares", "micro-batch counter"};
    for (int j = 0; j < 5; j++) {
        if (j == 4 && !has_in(n, 4)) break;
        ts_status s = need_scalar(g, n, j, what[j], j < 3);
        if (s) return s;
    }
    if (n->attr.i[1] < 1 || (n->attr.i[1] > 1 && !has_in(n, 4)))
        return ts_err(TS_ERR_ARG, "op loss_scale_update: accumulation over %lld micro-batches needs "
                      "N >= 1 and, above 1, a micro-batch counter", (long long)n->attr.i[1]);
    return check_scaler(n);
}

static ts_status scale_update_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    float *state = k->in[0], *clean = k->in[1], *skipped = k->in[2];
    float s = *(const float *)k->in[3], scale = current_scale(n, state);
    int last = !has_in(n, 4) || *(const float *)k->in[4] + 1.f >= (float)n->attr.i[1];
    if (last && !isfinite(s)) {
        float down = scale * n->attr.f[2];
        if (down > 0.f) scale = down;
        *clean = 0.f;
        *skipped += 1.f;
    } else if (last && (*clean += 1.f) >= (float)n->attr.i[0]) {
        float up = scale * n->attr.f[1];
        if (isfinite(up)) scale = up;
        *clean = 0.f;
    }
    *state = scale;
    return TS_OK;
}

const ts_op_def ts_opdef_loss_scale_update = {"loss_scale_update", 4, 5, 0, TS_OPF_SIDE_EFFECT,
                                              infer_scale_update, NULL, scale_update_kernel, NULL};
