/*
 * softmax.c — softmax (with an optional additive mask), log_softmax and cross-entropy over the
 * last axis, and their gradient ops. Every kernel works on rows of C = x.shape[-1] elements,
 * rows in parallel, and is numerically stable (each row is shifted by its maximum).
 *
 * Ops and gradients (rows of C; sums over the row):
 *   softmax(x [..., C], mask?)   y = softmax(x + mask); mask broadcasts to x's shape.
 *                                gx = softmax_grad(y, gy) = y (gy - sum(gy y)); gmask = sum_to(gx)
 *   log_softmax(x [..., C])      y = x - max - log sum exp(x - max)
 *                                gx = log_softmax_grad(y, gy) = gy - exp(y) sum(gy)
 *   cross_entropy(logits [..., C], labels [...] i32/i64) -> [] f32
 *                                mean over rows whose label != ignore_index of
 *                                lse(row) - row[label]; 0 when every row is ignored.
 *                                glogits = cross_entropy_grad(logits, labels, gloss)
 *                                        = (softmax(row) - onehot(label)) gloss / count; ignored
 *                                rows get 0. Labels get no gradient.
 * Attributes: cross_entropy and cross_entropy_grad: i[0] = ignore_index.
 * softmax_grad, log_softmax_grad and cross_entropy_grad are not differentiable (no double
 * backward): their grad rule is NULL.
 * Kernels read an element before writing the same index only, so output 0 may share input 0.
 */
#include "core/fastmath.h"
#include "ops/bcast.h"
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* Rows are processed in at most this many fixed blocks when a kernel reduces over rows, so the
 * sum is the same whatever the thread count. */
#define CE_BLOCKS 256

static void set_out(ts_graph *g, const ts_node *n, int k, ts_dtype dt, int nd, const int64_t *sh) {
    ts_val *o = &g->vals[n->out[k]];
    o->dtype = dt;
    o->ndim = nd;
    if (nd) memcpy(o->shape, sh, sizeof(int64_t) * (size_t)nd);
}

/* Input k must be f32 of rank >= 1 (it has a last axis). */
static ts_status need_rows(const ts_graph *g, const ts_node *n, int k) {
    const ts_val *v = &g->vals[n->in[k]];
    const char *op = ts_op_get(n->op)->name;
    if (v->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: input %d %s has dtype %s; this op takes f32", op, k,
                      VS(g, n->in[k]), ts_dtype_name(v->dtype));
    if (v->ndim < 1)
        return ts_err(TS_ERR_SHAPE, "op %s: input %d %s is a scalar; the op works over the last axis",
                      op, k, VS(g, n->in[k]));
    return TS_OK;
}

/* ------------------------------------------------------------------ softmax */

static ts_status infer_softmax(ts_graph *g, ts_node *n) {
    ts_status s = need_rows(g, n, 0);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    if (n->nin > 1 && n->in[1] >= 0) {
        const ts_val *m = &g->vals[n->in[1]];
        if (m->dtype != TS_F32)
            return ts_err(TS_ERR_DTYPE, "op softmax: mask %s has dtype %s; the mask is additive f32",
                          VS(g, n->in[1]), ts_dtype_name(m->dtype));
        int64_t sh[TS_MAX_DIMS];
        int nd = ts_broadcast_shape(x->ndim, x->shape, m->ndim, m->shape, sh);
        if (nd != x->ndim || memcmp(sh, x->shape, sizeof(int64_t) * (size_t)nd) != 0)
            return ts_err(TS_ERR_SHAPE, "op softmax: mask %s does not broadcast to x %s",
                          VS(g, n->in[1]), VS(g, n->in[0]));
    }
    set_out(g, n, 0, TS_F32, x->ndim, x->shape);
    return TS_OK;
}

/* y[r, j] = e^(z_j - max z) / sum_k e^(z_k - max z), z = x[r, :] + mask row. The mask row is
 * either contiguous (mst = 1) or one value for the whole row (mst = 0, also no mask: mc = 0). */
TS_SIMD_CLONES
static void softmax_f32(const float *X, const float *M, const ts_bcast *bc, float *Y, int64_t rows,
                        int64_t C) {
    int64_t mst = M ? bc->st[0][bc->nd - 1] : 0;
#pragma omp parallel for schedule(static) if (rows * C > 16384)
    for (int64_t r = 0; r < rows; r++) {
        const float *x = X + r * C;
        float *y = Y + r * C;
        const float *pm = M ? M + ts_bcast_row(bc, 0, r) : NULL;
        float mx = -INFINITY, sum = 0.f;
        if (mst) {
#pragma omp simd reduction(max : mx)
            for (int64_t j = 0; j < C; j++) { float z = x[j] + pm[j]; mx = z > mx ? z : mx; }
#pragma omp simd reduction(+ : sum)
            for (int64_t j = 0; j < C; j++) {
                float e = ts_expf(x[j] + pm[j] - mx);
                y[j] = e;
                sum += e;
            }
        } else {
            float mc = pm ? pm[0] : 0.f;
#pragma omp simd reduction(max : mx)
            for (int64_t j = 0; j < C; j++) { float z = x[j] + mc; mx = z > mx ? z : mx; }
#pragma omp simd reduction(+ : sum)
            for (int64_t j = 0; j < C; j++) {
                float e = ts_expf(x[j] + mc - mx);
                y[j] = e;
                sum += e;
            }
        }
        float inv = 1.f / sum;
#pragma omp simd
        for (int64_t j = 0; j < C; j++) y[j] *= inv;
    }
}

static ts_status softmax_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *x = &g->vals[n->in[0]];
    int64_t C = x->shape[x->ndim - 1], rows = ts_val_numel(x) / C;
    ts_bcast bc = {0};
    const float *M = n->nin > 1 ? k->in[1] : NULL;
    if (M) {
        const ts_val *m = &g->vals[n->in[1]];
        ts_bcast_init(&bc, x->ndim, x->shape, 1, (int[]){m->ndim}, (const int64_t *const[]){m->shape});
    }
    softmax_f32(k->in[0], M, &bc, k->out[0], rows, C);
    return TS_OK;
}

static ts_status grad_softmax(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_node_add(g, TS_OP_SOFTMAX_GRAD, 2, (int[]){n->out[0], go[0]}, NULL, NULL);
    if (n->nin > 1 && n->in[1] >= 0) gi[1] = ts_sum_to(g, gi[0], n->in[1]);
    return TS_OK;
}
const ts_op_def ts_opdef_softmax = {"softmax", 1, 2, 1, TS_OPF_INPLACE0, infer_softmax,
                                    grad_softmax, softmax_kernel, NULL};

ts_value ts_softmax(ts_graph *g, ts_value x, ts_value mask) {
    if (x == TS_NONE) return TS_NONE;
    if (mask == TS_NONE) return ts_node_add(g, TS_OP_SOFTMAX, 1, &x, NULL, NULL);
    return ts_node_add(g, TS_OP_SOFTMAX, 2, (int[]){x, mask}, NULL, NULL);
}

/* ------------------------------------------------------------------ row gradient ops */

/* softmax_grad(y, gy) and log_softmax_grad(y, gy): both [..., C] f32, same shape. */
static ts_status infer_row_grad(ts_graph *g, ts_node *n) {
    for (int k = 0; k < 2; k++) {
        ts_status s = need_rows(g, n, k);
        if (s) return s;
    }
    const ts_val *y = &g->vals[n->in[0]], *gy = &g->vals[n->in[1]];
    if (y->ndim != gy->ndim || memcmp(y->shape, gy->shape, sizeof(int64_t) * (size_t)y->ndim) != 0)
        return ts_err(TS_ERR_SHAPE, "op %s: gradient %s does not have the shape of %s",
                      ts_op_get(n->op)->name, VS(g, n->in[1]), VS(g, n->in[0]));
    set_out(g, n, 0, TS_F32, y->ndim, y->shape);
    return TS_OK;
}

/* gx = y (gy - sum_j gy_j y_j), per row. */
TS_SIMD_CLONES
static void softmax_grad_f32(const float *Y, const float *GY, float *GX, int64_t rows, int64_t C) {
#pragma omp parallel for schedule(static) if (rows * C > 16384)
    for (int64_t r = 0; r < rows; r++) {
        const float *y = Y + r * C, *gy = GY + r * C;
        float *gx = GX + r * C;
        float dot = 0.f;
#pragma omp simd reduction(+ : dot)
        for (int64_t j = 0; j < C; j++) dot += gy[j] * y[j];
#pragma omp simd
        for (int64_t j = 0; j < C; j++) gx[j] = y[j] * (gy[j] - dot);
    }
}

/* gx = gy - exp(y) sum_j gy_j, per row (y = log_softmax(x), so exp(y) = softmax(x)). */
TS_SIMD_CLONES
static void log_softmax_grad_f32(const float *Y, const float *GY, float *GX, int64_t rows, int64_t C) {
#pragma omp parallel for schedule(static) if (rows * C > 16384)
    for (int64_t r = 0; r < rows; r++) {
        const float *y = Y + r * C, *gy = GY + r * C;
        float *gx = GX + r * C;
        float sum = 0.f;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < C; j++) sum += gy[j];
#pragma omp simd
        for (int64_t j = 0; j < C; j++) gx[j] = gy[j] - ts_expf(y[j]) * sum;
    }
}

static ts_status row_grad_kernel(const ts_kargs *k) {
    const ts_val *y = &k->g->vals[k->node->in[0]];
    int64_t C = y->shape[y->ndim - 1], rows = ts_val_numel(y) / C;
    if (k->node->op == TS_OP_SOFTMAX_GRAD) softmax_grad_f32(k->in[0], k->in[1], k->out[0], rows, C);
    else log_softmax_grad_f32(k->in[0], k->in[1], k->out[0], rows, C);
    return TS_OK;
}
/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_softmax_grad = {"softmax_grad", 2, 2, 1, TS_OPF_INPLACE0, infer_row_grad,
                                         NULL, row_grad_kernel, NULL};
/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_log_softmax_grad = {"log_softmax_grad", 2, 2, 1, TS_OPF_INPLACE0,
                                             infer_row_grad, NULL, row_grad_kernel, NULL};

/* ------------------------------------------------------------------ log_softmax */

static ts_status infer_log_softmax(ts_graph *g, ts_node *n) {
    ts_status s = need_rows(g, n, 0);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    set_out(g, n, 0, TS_F32, x->ndim, x->shape);
    return TS_OK;
}

/* y[r, j] = x_j - max x - log sum_k e^(x_k - max x). */
TS_SIMD_CLONES
static void log_softmax_f32(const float *X, float *Y, int64_t rows, int64_t C) {
#pragma omp parallel for schedule(static) if (rows * C > 16384)
    for (int64_t r = 0; r < rows; r++) {
        const float *x = X + r * C;
        float *y = Y + r * C;
        float mx = -INFINITY, sum = 0.f;
#pragma omp simd reduction(max : mx)
        for (int64_t j = 0; j < C; j++) mx = x[j] > mx ? x[j] : mx;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < C; j++) sum += ts_expf(x[j] - mx);
        float shift = mx + logf(sum);
#pragma omp simd
        for (int64_t j = 0; j < C; j++) y[j] = x[j] - shift;
    }
}

static ts_status log_softmax_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]];
    int64_t C = x->shape[x->ndim - 1], rows = ts_val_numel(x) / C;
    log_softmax_f32(k->in[0], k->out[0], rows, C);
    return TS_OK;
}
static ts_status grad_log_softmax(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_node_add(g, TS_OP_LOG_SOFTMAX_GRAD, 2, (int[]){n->out[0], go[0]}, NULL, NULL);
    return TS_OK;
}
const ts_op_def ts_opdef_log_softmax = {"log_softmax", 1, 1, 1, TS_OPF_INPLACE0, infer_log_softmax,
                                        grad_log_softmax, log_softmax_kernel, NULL};

ts_value ts_log_softmax(ts_graph *g, ts_value x) {
    if (x == TS_NONE) return TS_NONE;
    return ts_node_add(g, TS_OP_LOG_SOFTMAX, 1, &x, NULL, NULL);
}

/* ------------------------------------------------------------------ cross_entropy */

/* logits [..., C] f32, labels [...] i32/i64 (logits' shape without its last dim). */
static ts_status check_logits_labels(const ts_graph *g, const ts_node *n) {
    ts_status s = need_rows(g, n, 0);
    if (s) return s;
    const char *op = ts_op_get(n->op)->name;
    const ts_val *x = &g->vals[n->in[0]], *l = &g->vals[n->in[1]];
    if (l->dtype != TS_I32 && l->dtype != TS_I64)
        return ts_err(TS_ERR_DTYPE, "op %s: labels %s have dtype %s; labels are i32 or i64", op,
                      VS(g, n->in[1]), ts_dtype_name(l->dtype));
    if (l->ndim != x->ndim - 1 || memcmp(l->shape, x->shape, sizeof(int64_t) * (size_t)l->ndim) != 0)
        return ts_err(TS_ERR_SHAPE, "op %s: labels %s must have the shape of logits %s without its "
                      "last dim", op, VS(g, n->in[1]), VS(g, n->in[0]));
    return TS_OK;
}

static ts_status infer_cross_entropy(ts_graph *g, ts_node *n) {
    ts_status s = check_logits_labels(g, n);
    if (s) return s;
    set_out(g, n, 0, TS_F32, 0, NULL);
    return TS_OK;
}

static inline int64_t label_at(const void *L, int is64, int64_t r) {
    return is64 ? ((const int64_t *)L)[r] : ((const int32_t *)L)[r];
}

/* max and sum_j e^(x_j - max) of one row: log-sum-exp = max + log(sum). */
TS_SIMD_CLONES
static void row_max_sumexp(const float *x, int64_t C, float *mx_out, float *sum_out) {
    float mx = -INFINITY, sum = 0.f;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 0; j < C; j++) mx = x[j] > mx ? x[j] : mx;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < C; j++) sum += ts_expf(x[j] - mx);
    *mx_out = mx;
    *sum_out = sum;
}

static ts_status bad_label(int64_t label, int64_t row, int64_t C) {
    return ts_err(TS_ERR_RUNTIME, "op cross_entropy: label %lld at row %lld is outside [0, %lld)",
                  (long long)label, (long long)row, (long long)C);
}

/* loss = sum over kept rows r of (max_r + log sum_r - x[r, label_r]) / count. Rows are cut into
 * CE_BLOCKS fixed blocks summed in double, then the blocks in order: a deterministic result. */
static ts_status cross_entropy_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *xv = &g->vals[n->in[0]];
    int64_t C = xv->shape[xv->ndim - 1], rows = ts_val_numel(xv) / C, ignore = n->attr.i[0];
    const float *X = k->in[0];
    const void *L = k->in[1];
    int is64 = g->vals[n->in[1]].dtype == TS_I64;
    int64_t nb = rows < CE_BLOCKS ? rows : CE_BLOCKS;
    double part[CE_BLOCKS];
    int64_t cnt[CE_BLOCKS], bad[CE_BLOCKS];
#pragma omp parallel for schedule(static) if (rows * C > 16384)
    for (int64_t b = 0; b < nb; b++) {
        int64_t r0 = rows * b / nb, r1 = rows * (b + 1) / nb;
        double s = 0;
        int64_t c = 0, badrow = -1;
        for (int64_t r = r0; r < r1; r++) {
            int64_t lab = label_at(L, is64, r);
            if (lab == ignore) continue;
            if (lab < 0 || lab >= C) { badrow = r; break; }
            float mx, sum;
            row_max_sumexp(X + r * C, C, &mx, &sum);
            s += (double)mx + log((double)sum) - (double)X[r * C + lab];
            c++;
        }
        part[b] = s;
        cnt[b] = c;
        bad[b] = badrow;
    }
    double total = 0;
    int64_t count = 0;
    for (int64_t b = 0; b < nb; b++) {
        if (bad[b] >= 0) return bad_label(label_at(L, is64, bad[b]), bad[b], C);
        total += part[b];
        count += cnt[b];
    }
    *(float *)k->out[0] = count ? (float)(total / (double)count) : 0.f;
    return TS_OK;
}

static ts_status grad_cross_entropy(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_node_add(g, TS_OP_CROSS_ENTROPY_GRAD, 3, (int[]){n->in[0], n->in[1], go[0]}, &n->attr, NULL);
    gi[1] = TS_NONE;
    return TS_OK;
}
const ts_op_def ts_opdef_cross_entropy = {"cross_entropy", 2, 2, 1, 0, infer_cross_entropy,
                                          grad_cross_entropy, cross_entropy_kernel, NULL};

ts_value ts_cross_entropy(ts_graph *g, ts_value logits, ts_value labels, int64_t ignore_index) {
    if (logits == TS_NONE || labels == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = ignore_index;
    at.ni = 1;
    return ts_node_add(g, TS_OP_CROSS_ENTROPY, 2, (int[]){logits, labels}, &at, NULL);
}

/* ------------------------------------------------------------------ cross_entropy_grad */

static ts_status infer_cross_entropy_grad(ts_graph *g, ts_node *n) {
    ts_status s = check_logits_labels(g, n);
    if (s) return s;
    const ts_val *gl = &g->vals[n->in[2]];
    if (gl->dtype != TS_F32 || ts_val_numel(gl) != 1)
        return ts_err(TS_ERR_SHAPE, "op cross_entropy_grad: upstream gradient %s must be one f32 element",
                      VS(g, n->in[2]));
    const ts_val *x = &g->vals[n->in[0]];
    set_out(g, n, 0, TS_F32, x->ndim, x->shape);
    return TS_OK;
}

/* gx[r, j] = (e^(x_j - max) / sum - [j == label_r]) * scale for kept rows, 0 for ignored ones;
 * scale = gloss / count. */
TS_SIMD_CLONES
static void cross_entropy_grad_f32(const float *X, const void *L, int is64, int64_t ignore,
                                   float scale, float *GX, int64_t rows, int64_t C) {
#pragma omp parallel for schedule(static) if (rows * C > 16384)
    for (int64_t r = 0; r < rows; r++) {
        const float *x = X + r * C;
        float *gx = GX + r * C;
        int64_t lab = label_at(L, is64, r);
        if (lab == ignore) {
#pragma omp simd
            for (int64_t j = 0; j < C; j++) gx[j] = 0.f;
            continue;
        }
        float mx = -INFINITY, sum = 0.f;
#pragma omp simd reduction(max : mx)
        for (int64_t j = 0; j < C; j++) mx = x[j] > mx ? x[j] : mx;
#pragma omp simd reduction(+ : sum)
        for (int64_t j = 0; j < C; j++) {
            float e = ts_expf(x[j] - mx);
            gx[j] = e;
            sum += e;
        }
        float f = scale / sum;
#pragma omp simd
        for (int64_t j = 0; j < C; j++) gx[j] *= f;
        gx[lab] -= scale;
    }
}

static ts_status cross_entropy_grad_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *xv = &g->vals[n->in[0]];
    int64_t C = xv->shape[xv->ndim - 1], rows = ts_val_numel(xv) / C, ignore = n->attr.i[0];
    const void *L = k->in[1];
    int is64 = g->vals[n->in[1]].dtype == TS_I64;
    /* count the kept rows and check every label before touching the output */
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t lab = label_at(L, is64, r);
        if (lab == ignore) continue;
        if (lab < 0 || lab >= C) return bad_label(lab, r, C);
        count++;
    }
    float scale = count ? *(const float *)k->in[2] / (float)count : 0.f;
    cross_entropy_grad_f32(k->in[0], L, is64, ignore, scale, k->out[0], rows, C);
    return TS_OK;
}
/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_cross_entropy_grad = {"cross_entropy_grad", 3, 3, 1, TS_OPF_INPLACE0,
                                               infer_cross_entropy_grad, NULL,
                                               cross_entropy_grad_kernel, NULL};
