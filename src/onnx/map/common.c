/*
 * common.c — helpers shared by the op-mapping families (map/<family>.c, declared in map.h): axis
 * normalisation, graph constants of any dtype, the dtypes ts_binary takes, the refusal of empty
 * inputs.
 */
#include "onnx/map/map.h"

int map_axis(ts_onnx_ctx *cx, const ts_onnx_node *n, int64_t a, int r, const char *what) {
    if (a < -r || a >= r) {
        onnx_invalid(cx, n, "%s %lld is out of range for rank %d", what, (long long)a, r);
        return -1;
    }
    return (int)(a < 0 ? a + r : a);
}

ts_value map_const(ts_graph *g, ts_dtype dt, int nd, const int64_t *sh, const void *data) {
    ts_tensor *t = ts_tensor_from(dt, nd, sh, data);
    if (!t) return ts_graph_fail(g, TS_ERR_NOMEM, "a constant of %lld elements", (long long)ts_numel(nd, sh));
    ts_value v = ts_constant(g, t);
    ts_tensor_free(t);
    return v;
}

ts_value map_scalar(ts_graph *g, ts_dtype dt, double v) {
    ts_tensor *t = ts_tensor_new(dt, 0, NULL);
    if (!t) return ts_graph_fail(g, TS_ERR_NOMEM, "a scalar constant");
    onnx_put_f64(t, 0, v);
    ts_value c = ts_constant(g, t);
    ts_tensor_free(t);
    return c;
}

int map_binary_dtype(ts_dtype d) { return d == TS_F32 || d == TS_I32 || d == TS_I64 || d == TS_U8; }

ts_status map_need_nonempty(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, k, sh);
    for (int i = 0; i < r; i++)
        if (sh[i] == 0)
            return onnx_unsupported(cx, n, "input %d has an empty dim (empty tensors are not supported)", k);
    return TS_OK;
}
