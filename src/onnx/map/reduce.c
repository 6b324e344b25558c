/*
 * reduce.c — ONNX mappings of the ops that reduce or normalise along axes:
 *   ReduceSum, ReduceMean, ReduceMax = tessera's reductions (axes an input of ReduceSum from opset 13)
 *   ReduceL1 = sum |x|            ReduceL2 = sqrt(sum x^2)      ReduceSumSquare = sum x^2
 *   ReduceLogSum = log(sum x)     ReduceLogSumExp = m + log(sum e^(x - m)), m = max x (kept dims)
 *   ReduceMin = ts_reduce_min     ReduceProd = ts_reduce_prod
 *   ArgMax / ArgMin = ts_argmax / ts_argmin
 *   Softmax, LogSoftmax: before opset 13 the input flattened to 2-D at `axis` (the old definition);
 *             from 13 along one axis (a transpose when that is not the last)
 *   Hardmax = (argmax along axis, kept, == the position along axis) as f32 (opset 13: one axis;
 *             before: the input flattened to 2-D at axis, as the old definition reads)
 * All take f32 graph values (a known input is used as a constant); axes are the attribute of
 * opsets <= 17 (but ReduceSum's), keepdims defaults to 1, no axes means all of them.
 */

#include "onnx/map/map.h"

/* ------------------------------------------------------------------ ArgMax / ArgMin */

static ts_status arg(ts_onnx_ctx *cx, const ts_onnx_node *n, int is_min) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t axis = onnx_attr_int(cx, n, "axis", 0);
    int keep = onnx_attr_int(cx, n, "keepdims", 1) != 0;
    int last = cx->opset >= 12 ? onnx_attr_int(cx, n, "select_last_index", 0) != 0 : 0;
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    int a = map_axis(cx, n, axis, r, "axis");
    if (a < 0) return TS_ERR_UNSUPPORTED;
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, (is_min ? ts_argmin : ts_argmax)(cx->g, onnx_in(cx, n, 0), a, keep, last));
}

static ts_status imp_argmax(ts_onnx_ctx *cx, const ts_onnx_node *n) { return arg(cx, n, 0); }
static ts_status imp_argmin(ts_onnx_ctx *cx, const ts_onnx_node *n) { return arg(cx, n, 1); }

/* ------------------------------------------------------------------ Hardmax */

/* 1.0 at the first maximum along axis a of x (shape sh, rank r), 0.0 elsewhere. */
static ts_value hardmax_axis(ts_graph *g, ts_value x, int r, const int64_t *sh, int a) {
    ts_value am = ts_argmax(g, x, a, 1, 0);
    int64_t ish[TS_MAX_DIMS], len = sh[a];
    for (int i = 0; i < r; i++) ish[i] = i == a ? len : 1;
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)len);
    if (!pos) return ts_graph_fail(g, TS_ERR_NOMEM, "Hardmax: positions of %lld", (long long)len);
    for (int64_t i = 0; i < len; i++) pos[i] = i;
    ts_value iota = map_const(g, TS_I64, r, ish, pos);
    free(pos);
    return ts_cast(g, ts_binary(g, TS_BIN_EQUAL, am, iota), TS_F32);
}

static ts_status imp_hardmax(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int old = cx->opset < 13;
    int a = map_axis(cx, n, onnx_attr_int(cx, n, "axis", old ? 1 : -1), r, "axis");
    if (a < 0) return TS_ERR_UNSUPPORTED;
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0);
    if (!old) return onnx_set(cx, n, 0, hardmax_axis(g, x, r, sh, a));
    int64_t two[2] = {ts_numel(a, sh), ts_numel(r - a, sh + a)};
    ts_value y = hardmax_axis(g, ts_reshape(g, x, 2, two), 2, two, 1);
    return onnx_set(cx, n, 0, ts_reshape(g, y, r, sh));
}

/* ------------------------------------------------------------------ the composed reductions */

typedef enum { R_L1, R_L2, R_LOG_SUM, R_LOG_SUM_EXP, R_SUM_SQUARE, R_MIN, R_PROD } red_kind;

static ts_status reduce(ts_onnx_ctx *cx, const ts_onnx_node *n, red_kind kind) {
    int64_t sh[TS_MAX_DIMS], ax[TS_MAX_DIMS * 2];
    int r = onnx_in_shape(cx, n, 0, sh), axes[TS_MAX_DIMS];
    int keep = onnx_attr_int(cx, n, "keepdims", 1) != 0;
    int na = onnx_attr_ints(cx, n, "axes", ax, TS_MAX_DIMS * 2);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    unsigned seen = 0;
    for (int i = 0; i < na; i++) {
        if ((axes[i] = map_axis(cx, n, ax[i], r, "axis")) < 0) return TS_ERR_UNSUPPORTED;
        if (seen >> axes[i] & 1) return onnx_invalid(cx, n, "axis %lld is listed twice", (long long)ax[i]);
        seen |= 1u << axes[i];
    }
    if (na < 0) na = 0;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0), y;
    switch (kind) {
    case R_L1: y = ts_reduce_sum(g, ts_math(g, TS_MATH_ABS, x, 0, 0), na, axes, keep); break;
    case R_L2: y = ts_sqrt(g, ts_reduce_sum(g, ts_mul(g, x, x), na, axes, keep)); break;
    case R_SUM_SQUARE: y = ts_reduce_sum(g, ts_mul(g, x, x), na, axes, keep); break;
    case R_LOG_SUM: y = ts_log(g, ts_reduce_sum(g, x, na, axes, keep)); break;
    case R_MIN: y = ts_reduce_min(g, x, na, axes, keep); break;
    case R_PROD: y = ts_reduce_prod(g, x, na, axes, keep); break;
    default: { /* log-sum-exp, shifted by the max (kept dims) so that exp cannot overflow */
        ts_value m = ts_reduce_max(g, x, na, axes, 1);
        ts_value s = ts_log(g, ts_reduce_sum(g, ts_exp(g, ts_sub(g, x, m)), na, axes, 1));
        y = ts_add(g, s, m);
        if (!keep) {
            int64_t osh[TS_MAX_DIMS];
            int o = 0;
            for (int i = 0; i < r; i++)
                if (na && !(seen >> i & 1)) osh[o++] = sh[i];
            y = ts_reshape(g, y, o, osh);
        }
        break;
    }
    }
    return onnx_set(cx, n, 0, y);
}

static ts_status imp_reduce_l1(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_L1); }
static ts_status imp_reduce_l2(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_L2); }
static ts_status imp_reduce_log_sum(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_LOG_SUM); }
static ts_status imp_reduce_log_sum_exp(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_LOG_SUM_EXP); }
static ts_status imp_reduce_sum_square(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_SUM_SQUARE); }
static ts_status imp_reduce_min(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_MIN); }
static ts_status imp_reduce_prod(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_PROD); }

/* ------------------------------------------------------------------ ReduceSum, ReduceMean, ReduceMax */

typedef ts_value (*reduce_fn)(ts_graph *, ts_value, int, const int *, int);

/* axes as an input from opset `input_from` (ReduceSum: 13; the others: 18, beyond 17). */
static ts_status reduce_direct(ts_onnx_ctx *cx, const ts_onnx_node *n, int input_from, reduce_fn build) {
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

static ts_status imp_reduce_sum(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce_direct(cx, n, 13, ts_reduce_sum); }
static ts_status imp_reduce_mean(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce_direct(cx, n, 18, ts_reduce_mean); }
static ts_status imp_reduce_max(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce_direct(cx, n, 18, ts_reduce_max); }

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


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"ReduceSum", 9, 17, imp_reduce_sum},
    {"ReduceMean", 9, 17, imp_reduce_mean},
    {"ReduceMax", 9, 17, imp_reduce_max},
    {"ReduceMin", 9, 17, imp_reduce_min},
    {"ReduceProd", 9, 17, imp_reduce_prod},
    {"ReduceL1", 9, 17, imp_reduce_l1},
    {"ReduceL2", 9, 17, imp_reduce_l2},
    {"ReduceLogSum", 9, 17, imp_reduce_log_sum},
    {"ReduceLogSumExp", 9, 17, imp_reduce_log_sum_exp},
    {"ReduceSumSquare", 9, 17, imp_reduce_sum_square},
    {"ArgMax", 9, 17, imp_argmax},
    {"ArgMin", 9, 17, imp_argmin},
    {"Softmax", 9, 17, imp_softmax},
    {"LogSoftmax", 9, 17, imp_log_softmax},
    {"Hardmax", 9, 17, imp_hardmax},
};
const onnx_family onnx_family_reduce = {"reduce", ops, (int)(sizeof ops / sizeof *ops)};
