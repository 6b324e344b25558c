/*
 * ops_core.c — ONNX mappings of arithmetic and the layers of MLPs and transformers: Add, Sub,
 * Mul, Div, Pow; Relu, Sigmoid, Tanh, Exp, Log, Sqrt; MatMul, Gemm; Softmax, LogSoftmax;
 * ReduceSum, ReduceMean, ReduceMax; LayerNormalization; Dropout (inference: identity, its
 * mask all true).
 *
 * On known inputs these compute on the host (shape arithmetic in int64, floats in double); on
 * graph values they take f32 (MatMul also f16 / bf16; Add, Sub, Mul, Div also integers, through
 * ts_binary; Pow an integer exponent, cast to f32), as tessera's ops do, and refuse other
 * dtypes. Softmax before opset 13 flattens the input to 2-D at `axis` (the old definition); from
 * 13 it normalises along one axis (a transpose when that is not the last).
 */
#include "onnx/onnx_imp.h"

#include <math.h>

/* ------------------------------------------------------------------ binary arithmetic */

static int is_int(ts_dtype d) { return d == TS_I32 || d == TS_I64 || d == TS_U8; }

static ts_status binary(ts_onnx_ctx *cx, const ts_onnx_node *n, onnx_binop op,
                        ts_value (*build)(ts_graph *, ts_value, ts_value)) {
    int64_t a[TS_MAX_DIMS], b[TS_MAX_DIMS], o[TS_MAX_DIMS];
    int ra = onnx_in_shape(cx, n, 0, a), rb = onnx_in_shape(cx, n, 1, b);
    onnx_attr_ignore(cx, n, "consumed_inputs"); /* opset < 7 bookkeeping */
    if (onnx_attr_has(cx, n, "broadcast") || onnx_attr_has(cx, n, "axis"))
        return onnx_unsupported(cx, n, "the pre-opset-7 'broadcast' / 'axis' attributes");
    if (onnx_bcast(ra, a, rb, b, o) < 0) return onnx_invalid(cx, n, "the input shapes do not broadcast");
    ts_dtype da = onnx_in_dtype(cx, n, 0), db = onnx_in_dtype(cx, n, 1);
    if (op != ONNX_POW && da != db) return onnx_invalid(cx, n, "the inputs differ in dtype (%s, %s)", ts_dtype_name(da), ts_dtype_name(db));
    if (onnx_all_known(cx, n)) {
        if (!onnx_fold_limit(cx, n, onnx_bcast(ra, a, rb, b, o), o)) return TS_ERR_UNSUPPORTED;
        return onnx_set_known(cx, n, 0, onnx_host_binary(op, onnx_known(cx, n, 0), onnx_known(cx, n, 1), da));
    }
    ts_graph *g = cx->g;
    if (op != ONNX_POW && is_int(da)) { /* integers: ts_binary (wrapping, division truncated) */
        static const ts_binop ops[] = {[ONNX_ADD] = TS_BIN_ADD, [ONNX_SUB] = TS_BIN_SUB, [ONNX_MUL] = TS_BIN_MUL,
                                       [ONNX_DIV] = TS_BIN_DIV};
        return onnx_set(cx, n, 0, ts_binary(g, ops[op], onnx_in(cx, n, 0), onnx_in(cx, n, 1)));
    }
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    ts_value bv = onnx_in(cx, n, 1);
    if (op == ONNX_POW && db != TS_F32) { /* an f32 base to an integer (or f16) power: the power as f32 */
        if (!is_int(db) && db != TS_F16 && db != TS_BF16) return onnx_need_f32(cx, n, 1, 1);
        bv = ts_cast(g, bv, TS_F32);
    } else if (onnx_need_f32(cx, n, 1, 1)) {
        return TS_ERR_UNSUPPORTED;
    }
    return onnx_set(cx, n, 0, build(g, onnx_in(cx, n, 0), bv));
}

static ts_status imp_add(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, ONNX_ADD, ts_add); }
static ts_status imp_sub(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, ONNX_SUB, ts_sub); }
static ts_status imp_mul(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, ONNX_MUL, ts_mul); }
static ts_status imp_div(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, ONNX_DIV, ts_div); }
static ts_status imp_pow(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, ONNX_POW, ts_pow); }

/* ------------------------------------------------------------------ unary activations */

static double host_relu(double x) { return x > 0 ? x : 0; }
static double host_sigmoid(double x) { return 1 / (1 + exp(-x)); }

static ts_status unary(ts_onnx_ctx *cx, const ts_onnx_node *n, double (*host)(double),
                       ts_value (*build)(ts_graph *, ts_value)) {
    onnx_attr_ignore(cx, n, "consumed_inputs");
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k && (k->dtype == TS_F32 || k->dtype == TS_F16 || k->dtype == TS_BF16)) {
        ts_tensor *t = ts_tensor_new(k->dtype, k->ndim, k->shape);
        for (int64_t i = 0, cnt = ts_tensor_numel(k); t && i < cnt; i++) onnx_put_f64(t, i, host((float)onnx_get_f64(k, i)));
        return onnx_set_known(cx, n, 0, t);
    }
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, build(cx->g, onnx_in(cx, n, 0)));
}

static ts_status imp_relu(ts_onnx_ctx *cx, const ts_onnx_node *n) { return unary(cx, n, host_relu, ts_relu); }
static ts_status imp_sigmoid(ts_onnx_ctx *cx, const ts_onnx_node *n) { return unary(cx, n, host_sigmoid, ts_sigmoid); }
static ts_status imp_tanh(ts_onnx_ctx *cx, const ts_onnx_node *n) { return unary(cx, n, tanh, ts_tanh); }
static ts_status imp_exp(ts_onnx_ctx *cx, const ts_onnx_node *n) { return unary(cx, n, exp, ts_exp); }
static ts_status imp_log(ts_onnx_ctx *cx, const ts_onnx_node *n) { return unary(cx, n, log, ts_log); }
static ts_status imp_sqrt(ts_onnx_ctx *cx, const ts_onnx_node *n) { return unary(cx, n, sqrt, ts_sqrt); }

/* Dropout at inference: the identity. The mask output, or training_mode true, is refused. */
static ts_status imp_dropout(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    onnx_attr_ignore(cx, n, "ratio");
    onnx_attr_ignore(cx, n, "seed");
    if (onnx_attr_int(cx, n, "is_test", 1) == 0) return onnx_unsupported(cx, n, "is_test = 0 (training)");
    if (onnx_has_in(n, 2)) {
        double t;
        if (!onnx_known_scalar(cx, n, 2, &t, "training_mode")) return TS_ERR_UNSUPPORTED;
        if (t != 0) return onnx_unsupported(cx, n, "training_mode true");
    }
    if (onnx_has_out(n, 1)) { /* at inference the mask keeps everything: all true, known */
        int64_t sh[TS_MAX_DIMS];
        int r = onnx_in_shape(cx, n, 0, sh);
        ts_tensor *mask = ts_tensor_new(TS_U8, r, sh);
        if (mask) memset(ts_tensor_data(mask), 1, ts_tensor_nbytes(mask));
        ts_status st = onnx_set_known(cx, n, 1, mask);
        if (st) return st;
    }
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, ts_tensor_from(k->dtype, k->ndim, k->shape, k->data));
    return onnx_set(cx, n, 0, onnx_in(cx, n, 0));
}

/* ------------------------------------------------------------------ MatMul, Gemm */

static int float_dtype(ts_dtype d) { return d == TS_F32 || d == TS_F16 || d == TS_BF16; }

static ts_status imp_matmul(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t a[TS_MAX_DIMS], b[TS_MAX_DIMS], o[TS_MAX_DIMS];
    int ra = onnx_in_shape(cx, n, 0, a), rb = onnx_in_shape(cx, n, 1, b);
    ts_dtype da = onnx_in_dtype(cx, n, 0), db = onnx_in_dtype(cx, n, 1);
    if (da != db) return onnx_invalid(cx, n, "the inputs differ in dtype");
    if (!float_dtype(da)) return onnx_unsupported(cx, n, "%s inputs; MatMul takes f32, f16 or bf16", ts_dtype_name(da));
    if (ra < 1 || rb < 1) return onnx_invalid(cx, n, "a scalar operand");
    int64_t K = ra == 1 ? a[0] : a[ra - 1], Kb = rb == 1 ? b[0] : b[rb - 2];
    if (K != Kb) return onnx_invalid(cx, n, "inner dims differ (%lld, %lld)", (long long)K, (long long)Kb);
    /* numpy: a 1-D a is [1, K] and a 1-D b is [K, 1], the added dim dropped after */
    int64_t a2[TS_MAX_DIMS], b2[TS_MAX_DIMS];
    int na = ra == 1 ? 2 : ra, nb = rb == 1 ? 2 : rb;
    if (ra == 1) a2[0] = 1, a2[1] = a[0];
    else memcpy(a2, a, sizeof a2);
    if (rb == 1) b2[0] = b[0], b2[1] = 1;
    else memcpy(b2, b, sizeof b2);
    int nbatch = onnx_bcast(na - 2, a2, nb - 2, b2, o);
    if (nbatch < 0) return onnx_invalid(cx, n, "the batch dims do not broadcast");
    if (nbatch + 2 > TS_MAX_DIMS) return onnx_unsupported(cx, n, "rank above %d", TS_MAX_DIMS);
    int64_t M = a2[na - 2], N = b2[nb - 1];
    if (ts_numel(nbatch, o) * M * N * K == 0) return onnx_unsupported(cx, n, "an empty operand or result");
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0), w = onnx_in(cx, n, 1);
    if (ra == 1) x = ts_reshape(g, x, 2, a2);
    if (rb == 1) w = ts_reshape(g, w, 2, b2);
    /* batch dims that tessera's matmul does not broadcast itself: expand the operand */
    int same_a = na - 2 == nbatch && !memcmp(a2, o, sizeof(int64_t) * (size_t)nbatch);
    int same_b = nb == 2 || (nb - 2 == nbatch && !memcmp(b2, o, sizeof(int64_t) * (size_t)nbatch));
    if (!same_a || !same_b) {
        if (da != TS_F32) return onnx_unsupported(cx, n, "broadcast batch dims of %s operands", ts_dtype_name(da));
        int64_t e[TS_MAX_DIMS];
        memcpy(e, o, sizeof(int64_t) * (size_t)nbatch);
        if (!same_a) e[nbatch] = M, e[nbatch + 1] = K, x = ts_expand(g, x, nbatch + 2, e);
        if (!same_b) e[nbatch] = K, e[nbatch + 1] = N, w = ts_expand(g, w, nbatch + 2, e);
    }
    ts_value y = ts_matmul(g, x, w, 0, 0);
    if (y == TS_NONE) return onnx_check(cx, n);
    if (ra == 1 || rb == 1) { /* drop the dims numpy added */
        int64_t sh[TS_MAX_DIMS];
        int r = 0;
        for (int i = 0; i < nbatch; i++) sh[r++] = o[i];
        if (ra != 1) sh[r++] = M;
        if (rb != 1) sh[r++] = N;
        y = ts_reshape(g, y, r, sh);
    }
    return onnx_set(cx, n, 0, y);
}

static ts_status imp_gemm(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t a[TS_MAX_DIMS], b[TS_MAX_DIMS], c[TS_MAX_DIMS], o[TS_MAX_DIMS];
    float alpha = onnx_attr_float(cx, n, "alpha", 1.f), beta = onnx_attr_float(cx, n, "beta", 1.f);
    int ta = (int)onnx_attr_int(cx, n, "transA", 0), tb = (int)onnx_attr_int(cx, n, "transB", 0);
    if (onnx_attr_has(cx, n, "broadcast")) return onnx_unsupported(cx, n, "the pre-opset-7 'broadcast' attribute");
    if (onnx_need_f32(cx, n, 0, 2)) return TS_ERR_UNSUPPORTED;
    if (onnx_in_shape(cx, n, 0, a) != 2 || onnx_in_shape(cx, n, 1, b) != 2) return onnx_invalid(cx, n, "A and B must be 2-D");
    int64_t M = ta ? a[1] : a[0], K = ta ? a[0] : a[1], Kb = tb ? b[1] : b[0], N = tb ? b[0] : b[1];
    if (K != Kb) return onnx_invalid(cx, n, "inner dims differ (%lld, %lld)", (long long)K, (long long)Kb);
    if (M * N * K == 0) return onnx_unsupported(cx, n, "an empty operand");
    ts_graph *g = cx->g;
    ts_value y = ts_matmul(g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), ta, tb);
    if (alpha != 1.f) y = ts_scale(g, y, alpha, 0.f);
    if (onnx_has_in(n, 2) && beta != 0.f) {
        int rc = onnx_in_shape(cx, n, 2, c);
        int64_t mn[2] = {M, N};
        if (onnx_bcast(rc, c, 2, mn, o) != 2 || o[0] != M || o[1] != N) return onnx_invalid(cx, n, "C does not broadcast to [M, N]");
        ts_value cv = onnx_in(cx, n, 2);
        if (beta != 1.f) cv = ts_scale(g, cv, beta, 0.f);
        y = ts_add(g, y, cv);
    }
    return onnx_set(cx, n, 0, y);
}

/* ------------------------------------------------------------------ Softmax, LogSoftmax */

static ts_status softmax(ts_onnx_ctx *cx, const ts_onnx_node *n, int log_form) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int old = cx->opset < 13;
    int64_t axis = onnx_attr_int(cx, n, "axis", old ? 1 : -1);
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    if (axis < -r || axis >= (r ? r : 1)) return onnx_invalid(cx, n, "axis %lld is out of range for rank %d", (long long)axis, r);
    if (axis < 0) axis += r;
    if (ts_numel(r, sh) == 0) return onnx_unsupported(cx, n, "an empty input");
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0), y;
    if (r == 0) { /* one element: softmax 1, log-softmax 0 */
        int64_t one = 1;
        x = ts_reshape(g, x, 1, &one);
        y = log_form ? ts_log_softmax(g, x) : ts_softmax(g, x, TS_NONE);
        return onnx_set(cx, n, 0, ts_reshape(g, y, 0, NULL));
    }
    if (old || axis == r - 1) { /* [outer, inner] rows (exact when axis is the last) */
        int64_t two[2] = {ts_numel((int)axis, sh), ts_numel(r - (int)axis, sh + axis)};
        ts_value x2 = axis == r - 1 && r >= 1 ? x : ts_reshape(g, x, 2, two);
        y = log_form ? ts_log_softmax(g, x2) : ts_softmax(g, x2, TS_NONE);
        if (x2 != x) y = ts_reshape(g, y, r, sh);
        return onnx_set(cx, n, 0, y);
    }
    int perm[TS_MAX_DIMS];
    for (int i = 0; i < r; i++) perm[i] = i;
    perm[axis] = r - 1;
    perm[r - 1] = (int)axis;
    x = ts_transpose(g, x, perm);
    y = log_form ? ts_log_softmax(g, x) : ts_softmax(g, x, TS_NONE);
    return onnx_set(cx, n, 0, ts_transpose(g, y, perm));
}

static ts_status imp_softmax(ts_onnx_ctx *cx, const ts_onnx_node *n) { return softmax(cx, n, 0); }
static ts_status imp_log_softmax(ts_onnx_ctx *cx, const ts_onnx_node *n) { return softmax(cx, n, 1); }

/* ------------------------------------------------------------------ reductions */

typedef ts_value (*reduce_fn)(ts_graph *, ts_value, int, const int *, int);

/* axes as an input from opset `input_from` (ReduceSum: 13; the others: 18, beyond 17). */
static ts_status reduce(ts_onnx_ctx *cx, const ts_onnx_node *n, int input_from, reduce_fn build) {
    int64_t sh[TS_MAX_DIMS], ax[TS_MAX_DIMS * 2];
    int r = onnx_in_shape(cx, n, 0, sh), axes[TS_MAX_DIMS], na;
    int keep = onnx_attr_int(cx, n, "keepdims", 1) != 0;
    int noop = onnx_attr_int(cx, n, "noop_with_empty_axes", 0) != 0;
    if (cx->opset < input_from) na = onnx_attr_ints(cx, n, "axes", ax, TS_MAX_DIMS * 2);
    else if (!onnx_has_in(n, 1)) na = -1;
    else if ((na = onnx_known_ints(cx, n, 1, ax, TS_MAX_DIMS * 2, "axes")) < 0) return TS_ERR_UNSUPPORTED;
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    unsigned seen = 0;
    for (int i = 0; i < na; i++) {
        if (ax[i] < -r || ax[i] >= r) return onnx_invalid(cx, n, "axis %lld is out of range for rank %d", (long long)ax[i], r);
        axes[i] = (int)(ax[i] < 0 ? ax[i] + r : ax[i]);
        if (seen >> axes[i] & 1) return onnx_invalid(cx, n, "axis %lld is listed twice", (long long)ax[i]);
        seen |= 1u << axes[i];
    }
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0);
    if (na <= 0 && noop) return onnx_set(cx, n, 0, ts_reshape(g, x, r, sh));
    if (na < 0) na = 0;
    for (int i = 0; i < r; i++)
        if (sh[i] == 0) return onnx_unsupported(cx, n, "an empty input");
    if (r == 0) return onnx_set(cx, n, 0, ts_reshape(g, x, 0, NULL));
    return onnx_set(cx, n, 0, build(g, x, na, axes, keep));
}

static ts_status imp_reduce_sum(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, 13, ts_reduce_sum); }
static ts_status imp_reduce_mean(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, 18, ts_reduce_mean); }
static ts_status imp_reduce_max(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, 18, ts_reduce_max); }

/* ------------------------------------------------------------------ LayerNormalization (opset 17) */

static ts_status imp_layer_norm(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], ss[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t axis = onnx_attr_int(cx, n, "axis", -1);
    float eps = onnx_attr_float(cx, n, "epsilon", 1e-5f);
    if (onnx_attr_int(cx, n, "stash_type", 1) != 1) return onnx_unsupported(cx, n, "stash_type other than 1 (f32)");
    if (onnx_need_f32(cx, n, 0, 2)) return TS_ERR_UNSUPPORTED;
    if (axis < -r || axis >= r) return onnx_invalid(cx, n, "axis %lld is out of range for rank %d", (long long)axis, r);
    if (axis < 0) axis += r;
    int64_t C = ts_numel(r - (int)axis, sh + axis), rows = ts_numel((int)axis, sh);
    if (C * rows == 0) return onnx_unsupported(cx, n, "an empty input");
    /* normalised over the trailing dims from axis: those flattened into one; scale and bias the
     * same (they must then have the trailing dims' full shape) */
    for (int k = 1; k <= 2; k++) {
        if (!onnx_has_in(n, k)) continue;
        int rk = onnx_in_shape(cx, n, k, ss);
        if (ts_numel(rk, ss) != C) return onnx_unsupported(cx, n, "input %d does not cover the normalised dims (broadcasting it is not supported)", k);
    }
    ts_graph *g = cx->g;
    int64_t two[2] = {rows, C};
    ts_value x = ts_reshape(g, onnx_in(cx, n, 0), 2, two), gb[2] = {TS_NONE, TS_NONE};
    for (int k = 1; k <= 2; k++)
        if (onnx_has_in(n, k)) gb[k - 1] = ts_reshape(g, onnx_in(cx, n, k), 1, &C);
    ts_value y = ts_layer_norm(g, x, gb[0], gb[1], eps);
    ts_status st = onnx_set(cx, n, 0, ts_reshape(g, y, r, sh));
    if (st || (!onnx_has_out(n, 1) && !onnx_has_out(n, 2))) return st;
    /* Mean and InvStdDev: the statistics over the normalised dims, kept as size-1 dims */
    int64_t ssh[TS_MAX_DIMS];
    for (int i = 0; i < r; i++) ssh[i] = i < axis ? sh[i] : 1;
    int ax1 = 1;
    ts_value mean = ts_reduce_mean(g, x, 1, &ax1, 1);
    ts_value d = ts_sub(g, x, mean);
    ts_value var = ts_reduce_mean(g, ts_mul(g, d, d), 1, &ax1, 1);
    ts_value inv = ts_div(g, ts_scalar(g, 1.f), ts_sqrt(g, ts_scale(g, var, 1.f, eps)));
    if ((st = onnx_set(cx, n, 1, ts_reshape(g, mean, r, ssh)))) return st;
    return onnx_set(cx, n, 2, ts_reshape(g, inv, r, ssh));
}

const ts_onnx_op ts_onnx_ops_core[] = {
    {"Add", 9, 17, imp_add},
    {"Sub", 9, 17, imp_sub},
    {"Mul", 9, 17, imp_mul},
    {"Div", 9, 17, imp_div},
    {"Pow", 9, 17, imp_pow},
    {"Relu", 9, 17, imp_relu},
    {"Sigmoid", 9, 17, imp_sigmoid},
    {"Tanh", 9, 17, imp_tanh},
    {"Exp", 9, 17, imp_exp},
    {"Log", 9, 17, imp_log},
    {"Sqrt", 9, 17, imp_sqrt},
    {"Dropout", 9, 17, imp_dropout},
    {"MatMul", 9, 17, imp_matmul},
    {"Gemm", 9, 17, imp_gemm},
    {"Softmax", 9, 17, imp_softmax},
    {"LogSoftmax", 9, 17, imp_log_softmax},
    {"ReduceSum", 9, 17, imp_reduce_sum},
    {"ReduceMean", 9, 17, imp_reduce_mean},
    {"ReduceMax", 9, 17, imp_reduce_max},
    {"LayerNormalization", 17, 17, imp_layer_norm},
    {NULL, 0, 0, NULL}, /* the end (not counted) */
};
const int ts_onnx_ops_core_n = (int)(sizeof ts_onnx_ops_core / sizeof *ts_onnx_ops_core) - 1;
