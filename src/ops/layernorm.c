/*
 * layernorm.c — layer normalisation over the last axis and its gradient op.
 *
 *   layer_norm(x [..., C], gamma [C] or absent, beta [C] or absent) -> y [..., C]
 *     per row: mean = sum x / C, var = sum (x - mean)^2 / C (biased), rstd = 1 / sqrt(var + eps),
 *     xhat = (x - mean) rstd, y = xhat gamma + beta.
 *   layer_norm_grad(x, gamma or absent, gy) -> gx [..., C], ggamma [C], gbeta [C]
 *     mean and rstd are recomputed from x; with gg = gy gamma,
 *     gx = rstd (gg - mean_c(gg) - xhat mean_c(gg xhat)),
 *     ggamma = sum over rows of gy xhat, gbeta = sum over rows of gy.
 * Absent optional inputs are -1 in n->in (NULL pointers in the kernel); both nodes always have 3
 * inputs. Attributes: f[0] = eps (both ops).
 * layer_norm_grad is not differentiable (no double backward): its grad rule is NULL.
 * The parameter gradients are summed per fixed block of rows into scratch, then the blocks in
 * order, so the result does not depend on the thread count.
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* Row blocks for the parameter-gradient partial sums. */
#define LN_BLOCKS 64

static void set_out(ts_graph *g, const ts_node *n, int k, int nd, const int64_t *sh) {
    ts_val *o = &g->vals[n->out[k]];
    o->dtype = TS_F32;
    o->ndim = nd;
    if (nd) memcpy(o->shape, sh, sizeof(int64_t) * (size_t)nd);
}

/* x is f32 of rank >= 1; the optional inputs at indices opt[] are absent or f32 [C]. */
static ts_status check_x_params(const ts_graph *g, const ts_node *n, int nopt, const int *opt) {
    const char *op = ts_op_get(n->op)->name;
    const ts_val *x = &g->vals[n->in[0]];
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: x %s has dtype %s; this op takes f32", op,
                      VS(g, n->in[0]), ts_dtype_name(x->dtype));
    if (x->ndim < 1)
        return ts_err(TS_ERR_SHAPE, "op %s: x %s is a scalar; the op normalises the last axis", op,
                      VS(g, n->in[0]));
    int64_t C = x->shape[x->ndim - 1];
    for (int i = 0; i < nopt; i++) {
        int v = n->in[opt[i]];
        if (v < 0) continue;
        const ts_val *p = &g->vals[v];
        if (p->dtype != TS_F32 || p->ndim != 1 || p->shape[0] != C)
            return ts_err(TS_ERR_SHAPE, "op %s: input %d %s must be f32 [%lld] to match x %s", op,
                          opt[i], VS(g, v), (long long)C, VS(g, n->in[0]));
    }
    float eps = n->attr.f[0];
    if (!(eps >= 0.f) || isinf(eps))
        return ts_err(TS_ERR_ARG, "op %s: eps %g must be finite and >= 0", op, (double)eps);
    return TS_OK;
}

/* ------------------------------------------------------------------ layer_norm */

static ts_status infer_layer_norm(ts_graph *g, ts_node *n) {
    ts_status s = check_x_params(g, n, 2, (int[]){1, 2});
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    set_out(g, n, 0, x->ndim, x->shape);
    return TS_OK;
}

/* Row mean and 1 / sqrt(biased var + eps), the variance from deviations (two passes). */
static inline void row_stats(const float *x, int64_t C, float eps, float *mean_out, float *rstd_out) {
    float sum = 0.f, sq = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < C; j++) sum += x[j];
    float mean = sum / (float)C;
#pragma omp simd reduction(+ : sq)
    for (int64_t j = 0; j < C; j++) sq += (x[j] - mean) * (x[j] - mean);
    *mean_out = mean;
    *rstd_out = 1.f / sqrtf(sq / (float)C + eps);
}

/* y = (x - mean) rstd, then y *= gamma and y += beta where present. */
TS_SIMD_CLONES
static void layer_norm_f32(const float *X, const float *G, const float *B, float eps, float *Y,
                           int64_t rows, int64_t C) {
#pragma omp parallel for schedule(static) if (rows * C > 16384)
    for (int64_t r = 0; r < rows; r++) {
        const float *x = X + r * C;
        float *y = Y + r * C;
        float mean, rstd;
        row_stats(x, C, eps, &mean, &rstd);
#pragma omp simd
        for (int64_t j = 0; j < C; j++) y[j] = (x[j] - mean) * rstd;
        if (G) {
#pragma omp simd
            for (int64_t j = 0; j < C; j++) y[j] *= G[j];
        }
        if (B) {
#pragma omp simd
            for (int64_t j = 0; j < C; j++) y[j] += B[j];
        }
    }
}

static ts_status layer_norm_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]];
    int64_t C = x->shape[x->ndim - 1], rows = ts_val_numel(x) / C;
    layer_norm_f32(k->in[0], k->in[1], k->in[2], k->node->attr.f[0], k->out[0], rows, C);
    return TS_OK;
}

static ts_status grad_layer_norm(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    int in[3] = {n->in[0], n->in[1], go[0]};
    int outs[3];
    if (ts_node_add(g, TS_OP_LAYER_NORM_GRAD, 3, in, &n->attr, outs) == TS_NONE) return g->status;
    gi[0] = outs[0];
    gi[1] = n->in[1] >= 0 ? outs[1] : TS_NONE;
    gi[2] = n->in[2] >= 0 ? outs[2] : TS_NONE;
    return TS_OK;
}

const ts_op_def ts_opdef_layer_norm = {"layer_norm", 1, 3, 1, TS_OPF_INPLACE0, infer_layer_norm,
                                       grad_layer_norm, layer_norm_kernel, NULL};

ts_value ts_layer_norm(ts_graph *g, ts_value x, ts_value gamma, ts_value beta, float eps) {
    if (x == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.f[0] = eps;
    return ts_node_add(g, TS_OP_LAYER_NORM, 3, (int[]){x, gamma, beta}, &at, NULL);
}

/* ------------------------------------------------------------------ layer_norm_grad */

static ts_status infer_layer_norm_grad(ts_graph *g, ts_node *n) {
    if (n->nin != 3 || n->in[2] < 0)
        return ts_err(TS_ERR_ARG, "op layer_norm_grad: takes (x, gamma or absent, gy); gy is missing");
    ts_status s = check_x_params(g, n, 1, (int[]){1});
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]], *gy = &g->vals[n->in[2]];
    if (gy->dtype != TS_F32 || gy->ndim != x->ndim ||
        memcmp(gy->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim) != 0)
        return ts_err(TS_ERR_SHAPE, "op layer_norm_grad: gradient %s must be f32 of the shape of x %s",
                      VS(g, n->in[2]), VS(g, n->in[0]));
    set_out(g, n, 0, x->ndim, x->shape);
    set_out(g, n, 1, 1, &x->shape[x->ndim - 1]);
    set_out(g, n, 2, 1, &x->shape[x->ndim - 1]);
    return TS_OK;
}

static int64_t ln_blocks(int64_t rows) { return rows < LN_BLOCKS ? rows : LN_BLOCKS; }

/* Scratch: 2 C floats of partial sums (ggamma, gbeta) per block, then C ones for absent gamma. */
static size_t layer_norm_grad_scratch(const ts_graph *g, const ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    int64_t C = x->shape[x->ndim - 1], rows = ts_val_numel(x) / C;
    return sizeof(float) * (size_t)((2 * ln_blocks(rows) + 1) * C);
}

/* Per row (mean, rstd recomputed; xhat = (x - mean) rstd; gg = gy gamma):
 *   gx = rstd (gg - sum(gg) / C - xhat sum(gg xhat) / C)
 * and into block b's partials P[b] = [pgamma C | pbeta C]: pgamma += gy xhat, pbeta += gy. */
TS_SIMD_CLONES
static void layer_norm_grad_rows(const float *X, const float *G, const float *GY, float eps,
                                 float *GX, float *P, int64_t nb, int64_t rows, int64_t C) {
#pragma omp parallel for schedule(static) if (rows * C > 16384)
    for (int64_t b = 0; b < nb; b++) {
        float *pg = P + b * 2 * C, *pb = pg + C;
        for (int64_t j = 0; j < C; j++) pg[j] = pb[j] = 0.f;
        for (int64_t r = rows * b / nb; r < rows * (b + 1) / nb; r++) {
            const float *x = X + r * C, *gy = GY + r * C;
            float *gx = GX + r * C;
            float mean, rstd, a = 0.f, c = 0.f;
            row_stats(x, C, eps, &mean, &rstd);
#pragma omp simd reduction(+ : a, c)
            for (int64_t j = 0; j < C; j++) {
                float gg = gy[j] * G[j];
                a += gg;
                c += gg * (x[j] - mean) * rstd;
            }
            a /= (float)C;
            c /= (float)C;
#pragma omp simd
            for (int64_t j = 0; j < C; j++) {
                float xh = (x[j] - mean) * rstd, g = gy[j];
                gx[j] = rstd * (g * G[j] - a - xh * c);
                pg[j] += g * xh;
                pb[j] += g;
            }
        }
    }
}

/* ggamma[j] = sum_b P[b][j], gbeta[j] = sum_b P[b][C + j], blocks in order. */
TS_SIMD_CLONES
static void layer_norm_grad_reduce(const float *P, int64_t nb, int64_t C, float *GG, float *GB) {
#pragma omp parallel for simd schedule(static) if (nb * C > 16384)
    for (int64_t j = 0; j < C; j++) {
        float sg = 0.f, sb = 0.f;
        for (int64_t b = 0; b < nb; b++) {
            sg += P[b * 2 * C + j];
            sb += P[b * 2 * C + C + j];
        }
        GG[j] = sg;
        GB[j] = sb;
    }
}

static ts_status layer_norm_grad_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *x = &g->vals[n->in[0]];
    int64_t C = x->shape[x->ndim - 1], rows = ts_val_numel(x) / C, nb = ln_blocks(rows);
    size_t need = layer_norm_grad_scratch(g, n);
    if (!k->scratch || k->scratch_bytes < need)
        return ts_err(TS_ERR_RUNTIME, "op layer_norm_grad: needs %zu bytes of scratch, got %zu", need,
                      k->scratch ? k->scratch_bytes : (size_t)0);
    float *P = k->scratch;
    const float *G = k->in[1];
    if (!G) {
        float *ones = P + 2 * nb * C;
        for (int64_t j = 0; j < C; j++) ones[j] = 1.f;
        G = ones;
    }
    layer_norm_grad_rows(k->in[0], G, k->in[2], n->attr.f[0], k->out[0], P, nb, rows, C);
    layer_norm_grad_reduce(P, nb, C, k->out[1], k->out[2]);
    return TS_OK;
}

/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_layer_norm_grad = {"layer_norm_grad", 1, 3, 3, TS_OPF_INPLACE0,
                                            infer_layer_norm_grad, NULL, layer_norm_grad_kernel,
                                            layer_norm_grad_scratch};
