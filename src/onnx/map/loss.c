/*
 * loss.c — ONNX mappings of NegativeLogLikelihoodLoss (ts_nll_loss) and
 * SoftmaxCrossEntropyLoss (log-softmax along the class axis 1, then ts_nll_loss; its optional
 * second output is that log-probability).
 *
 * input / scores f32 [N, C, d..], target / labels i32 or i64 [N, d..], weight f32 [C] (optional);
 * reduction "none", "sum" or "mean" (the default); ignore_index optional (without it no target is
 * ignored: tessera is given INT64_MIN, which no valid target equals).
 */
#include "onnx/map/map.h"

/* reduction and ignore_index; checks the operands' dtypes and shapes. -1 after refusing. */
static int loss_args(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_reduction *red, int64_t *ii) {
    const char *rs = onnx_attr_string(cx, n, "reduction", "mean");
    *ii = onnx_attr_has(cx, n, "ignore_index") ? onnx_attr_int(cx, n, "ignore_index", 0) : INT64_MIN;
    if (cx->node_refused) return -1;
    if (!strcmp(rs, "none")) *red = TS_REDUCE_NONE;
    else if (!strcmp(rs, "sum")) *red = TS_REDUCE_SUM;
    else if (!strcmp(rs, "mean")) *red = TS_REDUCE_MEAN;
    else return onnx_invalid(cx, n, "reduction '%s' is none of none, sum, mean", rs), -1;
    int64_t x[TS_MAX_DIMS], t[TS_MAX_DIMS], w[TS_MAX_DIMS];
    int rx = onnx_in_shape(cx, n, 0, x), rt = onnx_in_shape(cx, n, 1, t);
    if (onnx_need_f32(cx, n, 0, 0) || onnx_need_f32(cx, n, 2, 2)) return -1;
    if (onnx_need_dtype(cx, n, 1, (const ts_dtype[]){TS_I64, TS_I32}, 2)) return -1;
    if (rx < 2 || rt != rx - 1 || t[0] != x[0] || memcmp(t + 1, x + 2, sizeof(int64_t) * (size_t)(rx - 2)))
        return onnx_invalid(cx, n, "the input must be [N, C, d..] and the target [N, d..]"), -1;
    if (onnx_has_in(n, 2) && (onnx_in_shape(cx, n, 2, w) != 1 || w[0] != x[1]))
        return onnx_invalid(cx, n, "the weight must be [C] = [%lld]", (long long)x[1]), -1;
    if (map_need_nonempty(cx, n, 0)) return -1;
    return 0;
}

static ts_status imp_nll_loss(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    ts_reduction red;
    int64_t ii;
    if (loss_args(cx, n, &red, &ii)) return TS_ERR_UNSUPPORTED;
    ts_value w = onnx_has_in(n, 2) ? onnx_in(cx, n, 2) : TS_NONE;
    return onnx_set(cx, n, 0, ts_nll_loss(cx->g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), w, ii, red));
}

static ts_status imp_softmax_cross_entropy(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    ts_reduction red;
    int64_t ii, sh[TS_MAX_DIMS];
    if (loss_args(cx, n, &red, &ii)) return TS_ERR_UNSUPPORTED;
    int r = onnx_in_shape(cx, n, 0, sh);
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0), lp;
    if (r == 2) {
        lp = ts_log_softmax(g, x);
    } else { /* the class axis 1 moved last and back */
        int perm[TS_MAX_DIMS], inv[TS_MAX_DIMS];
        for (int i = 0; i < r; i++) perm[i] = i == 0 ? 0 : i == r - 1 ? 1 : i + 1;
        for (int i = 0; i < r; i++) inv[perm[i]] = i;
        lp = ts_transpose(g, ts_log_softmax(g, ts_transpose(g, x, perm)), inv);
    }
    ts_value w = onnx_has_in(n, 2) ? onnx_in(cx, n, 2) : TS_NONE;
    ts_value loss = ts_nll_loss(g, lp, onnx_in(cx, n, 1), w, ii, red);
    ts_status s = onnx_set(cx, n, 0, loss);
    if (s == TS_OK && onnx_has_out(n, 1)) s = onnx_set(cx, n, 1, lp);
    return s;
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"NegativeLogLikelihoodLoss", 12, 17, imp_nll_loss},
    {"SoftmaxCrossEntropyLoss", 12, 17, imp_softmax_cross_entropy},
};
const onnx_family onnx_family_loss = {"loss", ops, (int)(sizeof ops / sizeof *ops)};
