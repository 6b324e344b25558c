/*
 * extra_reduce.c — ONNX mappings of ArgMax / ArgMin (ts_argmax / ts_argmin), Hardmax, and the
 * reductions beyond the core's ReduceSum / ReduceMean / ReduceMax, composed from tessera ops:
 *   ReduceL1 = sum |x|            ReduceL2 = sqrt(sum x^2)      ReduceSumSquare = sum x^2
 *   ReduceLogSum = log(sum x)     ReduceLogSumExp = m + log(sum e^(x - m)), m = max x (kept dims)
 *   ReduceMin = ts_reduce_min     ReduceProd = ts_reduce_prod     Det = ts_det (a reduction of matrices)
 *   DFT = ts_dft (sums of a signal against the Fourier basis)
 *   Hardmax = (argmax along axis, kept, == the position along axis) as f32 (opset 13: one axis;
 *             before: the input flattened to 2-D at axis, as the old definition reads)
 * All take f32 graph values (a known input is used as a constant); axes are the attribute of
 * opsets <= 17, keepdims defaults to 1, no axes means all of them.
 */
#include "onnx/extra.h"

/* ------------------------------------------------------------------ ArgMax / ArgMin */

static ts_status arg(ts_onnx_ctx *cx, const ts_onnx_node *n, int is_min) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t axis = onnx_attr_int(cx, n, "axis", 0);
    int keep = onnx_attr_int(cx, n, "keepdims", 1) != 0;
    int last = cx->opset >= 12 ? onnx_attr_int(cx, n, "select_last_index", 0) != 0 : 0;
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    int a = ex_axis(cx, n, axis, r, "axis");
    if (a < 0) return TS_ERR_UNSUPPORTED;
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, (is_min ? ts_argmin : ts_argmax)(cx->g, onnx_in(cx, n, 0), a, keep, last));
}

ts_status ex_argmax(ts_onnx_ctx *cx, const ts_onnx_node *n) { return arg(cx, n, 0); }
ts_status ex_argmin(ts_onnx_ctx *cx, const ts_onnx_node *n) { return arg(cx, n, 1); }

/* ------------------------------------------------------------------ Hardmax */

/* 1.0 at the first maximum along axis a of x (shape sh, rank r), 0.0 elsewhere. */
static ts_value hardmax_axis(ts_graph *g, ts_value x, int r, const int64_t *sh, int a) {
    ts_value am = ts_argmax(g, x, a, 1, 0);
    int64_t ish[TS_MAX_DIMS], len = sh[a];
    for (int i = 0; i < r; i++) ish[i] = i == a ? len : 1;
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)len);
    if (!pos) return ts_graph_fail(g, TS_ERR_NOMEM, "Hardmax: positions of %lld", (long long)len);
    for (int64_t i = 0; i < len; i++) pos[i] = i;
    ts_value iota = ex_const(g, TS_I64, r, ish, pos);
    free(pos);
    return ts_cast(g, ts_binary(g, TS_BIN_EQUAL, am, iota), TS_F32);
}

ts_status ex_hardmax(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int old = cx->opset < 13;
    int a = ex_axis(cx, n, onnx_attr_int(cx, n, "axis", old ? 1 : -1), r, "axis");
    if (a < 0) return TS_ERR_UNSUPPORTED;
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0);
    if (!old) return onnx_set(cx, n, 0, hardmax_axis(g, x, r, sh, a));
    int64_t two[2] = {ts_numel(a, sh), ts_numel(r - a, sh + a)};
    ts_value y = hardmax_axis(g, ts_reshape(g, x, 2, two), 2, two, 1);
    return onnx_set(cx, n, 0, ts_reshape(g, y, r, sh));
}

/* ------------------------------------------------------------------ reductions */

typedef enum { R_L1, R_L2, R_LOG_SUM, R_LOG_SUM_EXP, R_SUM_SQUARE, R_MIN, R_PROD } red_kind;

static ts_status reduce(ts_onnx_ctx *cx, const ts_onnx_node *n, red_kind kind) {
    int64_t sh[TS_MAX_DIMS], ax[TS_MAX_DIMS * 2];
    int r = onnx_in_shape(cx, n, 0, sh), axes[TS_MAX_DIMS];
    int keep = onnx_attr_int(cx, n, "keepdims", 1) != 0;
    int na = onnx_attr_ints(cx, n, "axes", ax, TS_MAX_DIMS * 2);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    unsigned seen = 0;
    for (int i = 0; i < na; i++) {
        if ((axes[i] = ex_axis(cx, n, ax[i], r, "axis")) < 0) return TS_ERR_UNSUPPORTED;
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

ts_status ex_reduce_l1(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_L1); }
ts_status ex_reduce_l2(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_L2); }
ts_status ex_reduce_log_sum(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_LOG_SUM); }
ts_status ex_reduce_log_sum_exp(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_LOG_SUM_EXP); }
ts_status ex_reduce_sum_square(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_SUM_SQUARE); }
ts_status ex_reduce_min(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_MIN); }
ts_status ex_reduce_prod(ts_onnx_ctx *cx, const ts_onnx_node *n) { return reduce(cx, n, R_PROD); }

/* ------------------------------------------------------------------ Det */

ts_status ex_det(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    if (r < 2 || sh[r - 1] != sh[r - 2]) return onnx_invalid(cx, n, "the input must hold square matrices [.., M, M]");
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_det(cx->g, onnx_in(cx, n, 0)));
}

/* ------------------------------------------------------------------ DFT */

/* DFT (opset 17): ts_dft along `axis` (default 1); dft_length, when given, known at import. */
ts_status ex_dft(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t axis_attr = onnx_attr_int(cx, n, "axis", 1);
    int inv = onnx_attr_int(cx, n, "inverse", 0) != 0, one = onnx_attr_int(cx, n, "onesided", 0) != 0;
    double len = 0;
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (onnx_has_in(n, 1) && !onnx_known_scalar(cx, n, 1, &len, "dft_length")) return TS_ERR_UNSUPPORTED;
    if (r < 2 || (sh[r - 1] != 1 && sh[r - 1] != 2)) return onnx_invalid(cx, n, "the input must be [.., 1] or [.., 2]");
    int axis = ex_axis(cx, n, axis_attr, r, "axis");
    if (axis < 0) return TS_ERR_UNSUPPORTED;
    if (axis == r - 1) return onnx_invalid(cx, n, "axis %lld is the real / imaginary axis", (long long)axis_attr);
    if (one && (inv || sh[r - 1] == 2)) return onnx_unsupported(cx, n, "onesided with an inverse or complex transform");
    if (onnx_has_in(n, 1) && !(len >= 1 && len <= (double)(1 << 24))) return onnx_unsupported(cx, n, "dft_length %g", len);
    if (onnx_need_f32(cx, n, 0, 0) || ex_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_dft(cx->g, onnx_in(cx, n, 0), axis, inv, one, (int64_t)len));
}
