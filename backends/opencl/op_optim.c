/*
 * op_optim.c — the optimizer and training-control ops (src/ops/optim.c: sgd_update,
 * adamw_update, lamb_update, grad_sumsq, step_coef, lr_schedule, step_count; src/ops/amp.c:
 * accum_grad, loss_scale, loss_scale_update). Their rank-0 values (lr, counters, coefficients,
 * the loss scale) are read to the host, computed with the CPU's own arithmetic (doubles where it
 * uses them) and written back; element loops run as kernels/optim.cl. Each such node therefore
 * waits for the queue: a small cost per parameter, and exact scalar semantics (an lr that is
 * negative or not finite fails the run before anything is written; a coefficient of 0 skips).
 * The attributes are read through tessera_ops.h's decoders (ts_attrs_<op>_of).
 */
#include "ocl.h"

#include <math.h>
#include <stdlib.h>

#define SUMSQ_BLOCK 1024 /* kernels/optim.cl */

static int has(const ts_abi_node *n, int k) { return n->nin > k && n->in[k] >= 0; }

static ts_status rd(ocl_node_ctx *c, int k, float *v) { return ocl_copy_to_host(c->d, v, ocl_inbuf(c, k), 4); }
/* (an output never materialised has no buffer: nothing to write) */
static ts_status wr(ocl_node_ctx *c, ts_buffer b, float v) { return b.mem ? ocl_copy_to_device(c->d, b, &v, 4) : TS_OK; }

/* input k is rank 0 f32 (or absent when optional) */
static int scalar_in(const ts_abi_node *n, const ts_abi_value *v, int k, int optional) {
    if (!has(n, k)) return optional;
    return v[n->in[k]].dtype == TS_F32 && v[n->in[k]].ndim == 0;
}

static int like_param(const ts_abi_node *n, const ts_abi_value *v, int k) {
    return has(n, k) && v[n->in[k]].dtype == TS_F32 && ocl_same_shape(&v[n->in[k]], &v[n->in[0]]);
}

static ts_status check_lr(ocl_node_ctx *c, float lr) {
    if (lr >= 0.f && isfinite(lr)) return TS_OK;
    return OCL_ERR(TS_ERR_RUNTIME, "op %s: learning rate %g is negative or not finite (parameter %s)", c->n->op,
                   (double)lr, ocl_in(c, 0)->name ? ocl_in(c, 0)->name : "?");
}

/* Sum of squares of x (f32, n elements) through the workspace, in double on the host. */
static ts_status sumsq(ocl_node_ctx *c, ts_buffer x, int64_t n, double *out) {
    int64_t nb = (n + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK;
    *out = 0;
    if (!nb) return TS_OK;
    ocl_args a = {ocl_kernel(c->d, "sumsq"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cn = n;
    ocl_arg_buf(&a, x);
    ocl_arg_buf(&a, c->workspace);
    OCL_ARG(&a, cn);
    ts_status s = ocl_launch(c->d, &a, nb);
    float *part = malloc((size_t)nb * 4);
    if (!part) return OCL_ERR(TS_ERR_NOMEM, "op %s: out of host memory", c->n->op);
    if (!s) s = ocl_copy_to_host(c->d, part, c->workspace, (size_t)nb * 4);
    for (int64_t b = 0; !s && b < nb; b++) *out += part[b];
    free(part);
    return s;
}

static size_t ws_blocks(const ts_abi_node *n, const ts_abi_value *v) {
    int64_t most = 0;
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] >= 0 && ocl_numel(&v[n->in[k]]) > most) most = ocl_numel(&v[n->in[k]]);
    return (size_t)(2 * ((most + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK) + 16) * 4;
}

/* ------------------------------------------------------------------ sgd_update */

static int sup_sgd(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin >= 3 && v[n->in[0]].dtype == TS_F32 && like_param(n, v, 1) && scalar_in(n, v, 2, 0) &&
           (!has(n, 3) || like_param(n, v, 3)) && scalar_in(n, v, 4, 1) && scalar_in(n, v, 5, 1);
}

static ts_status run_sgd(ocl_node_ctx *c) {
    const ts_abi_node *n = c->n;
    float lr, coef = 1.f, t = 0.f;
    ts_status s = rd(c, 2, &lr);
    if (!s) s = check_lr(c, lr);
    if (!s && has(n, 5)) s = rd(c, 5, &coef);
    if (s || coef == 0.f) return s;
    if (has(n, 4) && (s = rd(c, 4, &t))) return s;
    ocl_args a = {ocl_kernel(c->d, "sgd"), 0, CL_SUCCESS, n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_in(c, 0));
    ts_attrs_sgd_update at = ts_attrs_sgd_update_of(n);
    cl_float mom = at.momentum, wd = at.weight_decay, damp1 = (float)(1.0 - (double)at.dampening);
    cl_int nest = (cl_int)at.nesterov, first = has(n, 4) ? t == 0.f : 0;
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, ocl_inbuf(c, 1));
    ocl_arg_buf(&a, has(n, 3) ? ocl_inbuf(c, 3) : (ts_buffer){0});
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, lr);
    OCL_ARG(&a, coef);
    OCL_ARG(&a, mom);
    OCL_ARG(&a, wd);
    OCL_ARG(&a, damp1);
    OCL_ARG(&a, nest);
    OCL_ARG(&a, first);
    s = ocl_launch(c->d, &a, cnt);
    return s || !has(n, 4) ? s : wr(c, ocl_inbuf(c, 4), t + 1.f);
}

/* ------------------------------------------------------------------ adamw, lamb */

static int sup_adam(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin >= 6 && v[n->in[0]].dtype == TS_F32 && like_param(n, v, 1) && scalar_in(n, v, 2, 0) &&
           like_param(n, v, 3) && like_param(n, v, 4) && scalar_in(n, v, 5, 0) && scalar_in(n, v, 6, 1);
}

typedef struct adam_step {
    int run;
    cl_long cnt;
    float lr, coef, b1, b2, eps, wd;
    double bc1, bc2;
} adam_step;

static ts_status adam_begin(ocl_node_ctx *c, adam_step *a) {
    const ts_abi_node *n = c->n;
    a->cnt = ocl_numel(ocl_in(c, 0));
    if (strcmp(n->op, TS_OPNAME_LAMB_UPDATE) == 0) {
        ts_attrs_lamb_update at = ts_attrs_lamb_update_of(n);
        a->b1 = at.beta1, a->b2 = at.beta2, a->eps = at.eps, a->wd = at.weight_decay;
    } else {
        ts_attrs_adamw_update at = ts_attrs_adamw_update_of(n);
        a->b1 = at.beta1, a->b2 = at.beta2, a->eps = at.eps, a->wd = at.weight_decay;
    }
    a->coef = 1.f;
    float t;
    ts_status s = rd(c, 2, &a->lr);
    if (!s) s = check_lr(c, a->lr);
    if (!s && has(n, 6)) s = rd(c, 6, &a->coef);
    a->run = a->coef != 0.f;
    if (s || !a->run) return s;
    if ((s = rd(c, 5, &t))) return s;
    t += 1.f;
    a->bc1 = 1.0 - pow((double)a->b1, (double)t);
    a->bc2 = 1.0 - pow((double)a->b2, (double)t);
    return wr(c, ocl_inbuf(c, 5), t);
}

static ts_status run_adamw(ocl_node_ctx *c) {
    adam_step s;
    ts_status st = adam_begin(c, &s);
    if (st || !s.run) return st;
    ocl_args a = {ocl_kernel(c->d, "adamw"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_float decay = 1.f - s.lr * s.wd, step = (float)((double)s.lr / s.bc1), bc2s = (float)sqrt(s.bc2);
    for (int k = 0; k < 5; k++)
        if (k != 2) ocl_arg_buf(&a, ocl_inbuf(c, k));
    OCL_ARG(&a, s.cnt);
    OCL_ARG(&a, s.coef);
    OCL_ARG(&a, decay);
    OCL_ARG(&a, s.b1);
    OCL_ARG(&a, s.b2);
    OCL_ARG(&a, step);
    OCL_ARG(&a, bc2s);
    OCL_ARG(&a, s.eps);
    return ocl_launch(c->d, &a, s.cnt);
}

static ts_status run_lamb(ocl_node_ctx *c) {
    adam_step s;
    ts_status st = adam_begin(c, &s);
    if (st || !s.run) return st;
    cl_float bc1 = (float)s.bc1, bc2 = (float)s.bc2;
    int64_t nb = (s.cnt + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK;
    ocl_args a = {ocl_kernel(c->d, "lamb_moments"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    for (int k = 0; k < 5; k++)
        if (k != 2) ocl_arg_buf(&a, ocl_inbuf(c, k));
    ocl_arg_buf(&a, c->workspace);
    OCL_ARG(&a, s.cnt);
    OCL_ARG(&a, s.coef);
    OCL_ARG(&a, s.b1);
    OCL_ARG(&a, s.b2);
    OCL_ARG(&a, bc1);
    OCL_ARG(&a, bc2);
    OCL_ARG(&a, s.eps);
    OCL_ARG(&a, s.wd);
    st = ocl_launch(c->d, &a, nb);
    float *part = nb ? malloc((size_t)nb * 8) : NULL;
    if (nb && !part) return OCL_ERR(TS_ERR_NOMEM, "op lamb_update: out of host memory");
    if (!st && nb) st = ocl_copy_to_host(c->d, part, c->workspace, (size_t)nb * 8);
    double pp = 0, rr = 0;
    for (int64_t b = 0; !st && b < nb; b++) {
        pp += part[b];
        rr += part[nb + b];
    }
    free(part);
    if (st) return st;
    float pn = (float)sqrt(pp), rn = (float)sqrt(rr);
    cl_float step = s.lr * (pn > 0.f && rn > 0.f && !ts_attrs_lamb_update_of(c->n).no_trust ? pn / rn : 1.f);
    ocl_args z = {ocl_kernel(c->d, "lamb_apply"), 0, CL_SUCCESS, c->n->op};
    if (!z.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&z, ocl_inbuf(c, 0));
    ocl_arg_buf(&z, ocl_inbuf(c, 3));
    ocl_arg_buf(&z, ocl_inbuf(c, 4));
    OCL_ARG(&z, s.cnt);
    OCL_ARG(&z, bc1);
    OCL_ARG(&z, bc2);
    OCL_ARG(&z, s.eps);
    OCL_ARG(&z, s.wd);
    OCL_ARG(&z, step);
    return ocl_launch(c->d, &z, s.cnt);
}

/* ------------------------------------------------------------------ grad_sumsq, step_coef */

static int sup_sumsq(const ts_abi_node *n, const ts_abi_value *v) {
    int acc = ts_attrs_grad_sumsq_of(n).has_acc != 0;
    if (n->nin <= acc || n->nout != 1 || (acc && !scalar_in(n, v, 0, 0))) return 0;
    for (int k = acc; k < n->nin; k++)
        if (!has(n, k) || v[n->in[k]].dtype != TS_F32) return 0;
    return 1;
}

static ts_status run_sumsq(ocl_node_ctx *c) {
    int acc = ts_attrs_grad_sumsq_of(c->n).has_acc != 0;
    float a0 = 0.f;
    ts_status s = acc ? rd(c, 0, &a0) : TS_OK;
    double total = a0;
    for (int k = acc; !s && k < c->n->nin; k++) {
        double part;
        s = sumsq(c, ocl_inbuf(c, k), ocl_numel(ocl_in(c, k)), &part);
        total += part;
    }
    return s ? s : wr(c, ocl_outbuf(c, 0), (float)total);
}

static int sup_step_coef(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nout == 2 && scalar_in(n, v, 0, 1) && scalar_in(n, v, 1, 1) && scalar_in(n, v, 2, 1) &&
           ts_attrs_step_coef_of(n).micro_batches >= 1;
}

static ts_status run_step_coef(ocl_node_ctx *c) {
    const ts_abi_node *n = c->n;
    ts_attrs_step_coef at = ts_attrs_step_coef_of(n);
    float max_norm = at.max_norm, N = (float)at.micro_batches, s = 0.f, micro = 0.f, scale = 1.f;
    double R = at.replicas > 1 ? (double)at.replicas : 1.0;
    ts_status st = has(n, 0) ? rd(c, 0, &s) : TS_OK;
    if (!st && has(n, 1)) st = rd(c, 1, &micro);
    if (!st && has(n, 2)) st = rd(c, 2, &scale);
    if (st) return st;
    float u = (float)(1.0 / ((double)N * R * scale));
    float norm = sqrtf(s) * u, coef = u;
    if (has(n, 1) && micro + 1.f < N) coef = 0.f;
    else if (has(n, 2) && !isfinite(s)) coef = 0.f;
    else if (max_norm > 0.f) {
        float k = max_norm / (norm + 1e-6f);
        coef = !isfinite(norm) ? NAN : k < 1.f ? u * k : u;
    }
    st = wr(c, ocl_outbuf(c, 0), coef);
    return st ? st : wr(c, ocl_outbuf(c, 1), norm);
}

/* ------------------------------------------------------------------ lr_schedule, step_count */

static double lr_lambda(const ts_attrs_lr_schedule *at, double step) {
    double W = (double)at->warmup, T = (double)at->total, lr0 = at->base_lr, lr_end = at->lr_end;
    if (step < W) return step / fmax(1.0, W);
    switch (at->kind) {
    case TS_LR_LINEAR: return fmax(0.0, (T - step) / fmax(1.0, T - W));
    case TS_LR_COSINE: {
        double progress = (step - W) / fmax(1.0, T - W);
        return fmax(0.0, 0.5 * (1.0 + cos(M_PI * (double)at->cycles * 2.0 * progress)));
    }
    case TS_LR_POLYNOMIAL:
        if (step > T) return lr_end / lr0;
        return ((lr0 - lr_end) * pow(1.0 - (step - W) / (T - W), (double)at->power) + lr_end) / lr0;
    default: return 1.0;
    }
}

static int sup_lr(const ts_abi_node *n, const ts_abi_value *v) {
    int64_t kind = ts_attrs_lr_schedule_of(n).kind;
    return scalar_in(n, v, 0, 0) && n->nout == 1 && kind >= 0 && kind < TS_OPS_LR_KIND_COUNT;
}

static ts_status run_lr(ocl_node_ctx *c) {
    ts_attrs_lr_schedule at = ts_attrs_lr_schedule_of(c->n);
    float step;
    ts_status s = rd(c, 0, &step);
    return s ? s : wr(c, ocl_outbuf(c, 0), (float)((double)at.base_lr * lr_lambda(&at, step)));
}

static int sup_step_count(const ts_abi_node *n, const ts_abi_value *v) {
    return scalar_in(n, v, 0, 0) && scalar_in(n, v, 1, 1) && ts_attrs_step_count_of(n).modulo >= 0;
}

static ts_status run_step_count(ocl_node_ctx *c) {
    float gate = 1.f, cnt, m = (float)ts_attrs_step_count_of(c->n).modulo;
    ts_status s = has(c->n, 1) ? rd(c, 1, &gate) : TS_OK;
    if (s || gate == 0.f) return s;
    if ((s = rd(c, 0, &cnt))) return s;
    return wr(c, ocl_inbuf(c, 0), m > 0.f && cnt + 1.f >= m ? 0.f : cnt + 1.f);
}

/* ------------------------------------------------------------------ amp: accum_grad, loss scale */

static int sup_accum(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin >= 2 && v[n->in[0]].dtype == TS_F32 && like_param(n, v, 1) && scalar_in(n, v, 2, 1);
}

static ts_status run_accum(ocl_node_ctx *c) {
    float micro = 0.f;
    ts_status s = has(c->n, 2) ? rd(c, 2, &micro) : TS_OK;
    if (s) return s;
    ocl_args a = {ocl_kernel(c->d, "accum"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_in(c, 0));
    cl_int first = micro == 0.f;
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, ocl_inbuf(c, 1));
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, first);
    return ocl_launch(c->d, &a, cnt);
}

static int sup_loss_scale(const ts_abi_node *n, const ts_abi_value *v) { return scalar_in(n, v, 0, 0); }

static ts_status run_loss_scale(ocl_node_ctx *c) {
    float st;
    ts_status s = rd(c, 0, &st);
    return s ? s : wr(c, ocl_outbuf(c, 0), st > 0.f ? st : ts_attrs_loss_scale_of(c->n).init_scale);
}

static int sup_scale_update(const ts_abi_node *n, const ts_abi_value *v) {
    for (int k = 0; k < 4; k++)
        if (!scalar_in(n, v, k, 0)) return 0;
    return scalar_in(n, v, 4, 1);
}

static ts_status run_scale_update(ocl_node_ctx *c) {
    const ts_abi_node *n = c->n;
    float state, clean, skipped, s, micro = 0.f;
    ts_status st = rd(c, 0, &state);
    if (!st) st = rd(c, 1, &clean);
    if (!st) st = rd(c, 2, &skipped);
    if (!st) st = rd(c, 3, &s);
    if (!st && has(n, 4)) st = rd(c, 4, &micro);
    if (st) return st;
    ts_attrs_loss_scale_update at = ts_attrs_loss_scale_update_of(n);
    float scale = state > 0.f ? state : at.init_scale;
    int last = !has(n, 4) || micro + 1.f >= (float)at.micro_batches;
    if (last && !isfinite(s)) {
        float down = scale * at.backoff_factor;
        if (down > 0.f) scale = down;
        clean = 0.f;
        skipped += 1.f;
    } else if (last && (clean += 1.f) >= (float)at.growth_interval) {
        float up = scale * at.growth_factor;
        if (isfinite(up)) scale = up;
        clean = 0.f;
    }
    st = wr(c, ocl_inbuf(c, 1), clean);
    if (!st) st = wr(c, ocl_inbuf(c, 2), skipped);
    return st ? st : wr(c, ocl_inbuf(c, 0), scale);
}

const ocl_op ocl_ops_optim[] = {
    {"sgd_update", sup_sgd, NULL, run_sgd, NULL},
    {"adamw_update", sup_adam, NULL, run_adamw, NULL},
    {"lamb_update", sup_adam, NULL, run_lamb, ws_blocks},
    {"grad_sumsq", sup_sumsq, NULL, run_sumsq, ws_blocks},
    {"step_coef", sup_step_coef, NULL, run_step_coef, NULL},
    {"lr_schedule", sup_lr, NULL, run_lr, NULL},
    {"step_count", sup_step_count, NULL, run_step_count, NULL},
    {"accum_grad", sup_accum, NULL, run_accum, NULL},
    {"loss_scale", sup_loss_scale, NULL, run_loss_scale, NULL},
    {"loss_scale_update", sup_scale_update, NULL, run_scale_update, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
