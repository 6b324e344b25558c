/*
 * quant_matmul.c — a QDQ MatMul imported onto tessera's int8 matmul rather than dequantized:
 *
 *   MatMul(DequantizeLinear(QuantizeLinear(x, sa, 0), sa, 0), DequantizeLinear(qw, sw, 0, axis 1))
 *     x [.., M, K] f32; sa a known scalar (the same in the Q and the DQ); qw a known INT8 [K, N];
 *     sw a known scalar or [N] along axis 1; every zero point INT8 0 (symmetric quantization)
 *   -> matmul_i8dyn(x, w = qw * sw, a_scale = sa)   (ops/matmul_int8.c: int8 products, int32 sums)
 *
 * which is how tessera's exporter writes an int8 matmul (onnx/export/export_qdq.c) and how ONNX
 * Runtime's static quantizer writes one with symmetric int8 activations and per-channel weights.
 * matmul_i8dyn quantizes its weight itself, per output channel, as max |w[:, n]| / 127: that gives
 * back qw and sw (sw up to one f32 rounding) exactly when each channel's largest |qw| is 127 or the
 * channel is all zero. A weight that is not so (a per-tensor scale, or a quantizer that did not use
 * the full range) keeps the f32 composition of map/quant.c, whose result is the model's as written;
 * so does any other pattern (uint8 activations with a zero point, per-row scales). What remains
 * different: QuantizeLinear saturates at -128 and matmul_i8dyn at -127 (a value below -127.5 sa,
 * outside the calibrated range).
 */
#include "graph/opdef.h"
#include <math.h>

#include "onnx/map/map.h"

/* The node that produced input k of n when it is op_type `op`, else NULL. */
static const ts_onnx_node *producer(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, const char *op) {
    const ts_onnx_node *p = onnx_node_at(cx, onnx_in_producer(cx, n, k));
    return p && p->op_type && !strcmp(p->op_type, op) ? p : NULL;
}

/* Input k of n is a known INT8 value whose every element is 0 (absent counts when absent_ok). */
static int zero_i8(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, int absent_ok) {
    if (!onnx_has_in(n, k)) return absent_ok;
    onnx_val *v = onnx_lookup(cx, n->input[k]);
    const ts_tensor *t = onnx_known(cx, n, k);
    if (!v || !v->i8 || !t) return 0;
    for (int64_t i = 0; i < ts_tensor_numel(t); i++)
        if (onnx_get_f64(t, i) != 0) return 0;
    return 1;
}

/* A known scalar scale (input 1 of n) above 0, else 0. */
static float scalar_scale(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *t = onnx_known(cx, n, 1);
    if (!t || t->dtype != TS_F32 || ts_tensor_numel(t) != 1) return 0.f;
    float s = ((const float *)t->data)[0];
    return s > 0.f && isfinite(s) ? s : 0.f;
}

/* The attribute `axis` of node d as written (default 1), read without marking the current node's. */
static int64_t axis_of(const ts_onnx_node *d) {
    for (size_t a = 0; a < d->n_attribute; a++)
        if (d->attribute[a]->name && !strcmp(d->attribute[a]->name, "axis")) return d->attribute[a]->i;
    return 1;
}

/* w [K, N] = qw sw from the weight's DequantizeLinear d, when each channel's largest |qw| is 127 or
 * 0 (see the top); NULL otherwise. */
static ts_tensor *weight(ts_onnx_ctx *cx, const ts_onnx_node *d) {
    onnx_val *qv = onnx_lookup(cx, d->input[0]);
    const ts_tensor *q = onnx_known(cx, d, 0), *s = onnx_known(cx, d, 1);
    if (!qv || !qv->i8 || !q || q->ndim != 2 || !s || s->dtype != TS_F32 || !zero_i8(cx, d, 2, 1)) return NULL;
    int64_t K = q->shape[0], N = q->shape[1], ns = ts_tensor_numel(s), ax = axis_of(d);
    if (ns != 1 && !(ns == N && s->ndim == 1 && (ax == 1 || ax == -1))) return NULL;
    const float *qd = q->data, *sd = s->data;
    for (int64_t c = 0; c < N; c++) {
        float m = 0.f;
        for (int64_t k = 0; k < K; k++) m = fmaxf(m, fabsf(qd[k * N + c]));
        if (m != 127.f && m != 0.f) return NULL;
        if (!(sd[ns == 1 ? 0 : c] > 0.f) || !isfinite(sd[ns == 1 ? 0 : c])) return NULL;
    }
    ts_tensor *w = ts_tensor_new(TS_F32, 2, (int64_t[]){K, N});
    if (!w) return NULL;
    float *wd = w->data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < N; c++) wd[k * N + c] = qd[k * N + c] * sd[ns == 1 ? 0 : c];
    return w;
}

int onnx_qdq_matmul(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_status *st) {
    const ts_onnx_node *dw = producer(cx, n, 1, "DequantizeLinear"), *da = producer(cx, n, 0, "DequantizeLinear");
    const ts_onnx_node *qa = da ? producer(cx, da, 0, "QuantizeLinear") : NULL;
    if (!dw || !qa || onnx_in_dtype(cx, qa, 0) != TS_F32) return 0;
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, qa, 0, sh);
    float sa = scalar_scale(cx, da);
    if (r < 2 || sa == 0.f || scalar_scale(cx, qa) != sa || !zero_i8(cx, qa, 2, 0) || !zero_i8(cx, da, 2, 1))
        return 0;
    ts_tensor *w = weight(cx, dw);
    if (!w) return 0;
    if (w->shape[0] != sh[r - 1]) {
        ts_tensor_free(w);
        return 0; /* MatMul's own mapping names the mismatch */
    }
    ts_graph *g = cx->g;
    ts_value wv = map_const(g, TS_F32, 2, w->shape, w->data);
    ts_tensor_free(w);
    ts_attrs at = {.ni = 2};
    at.f[1] = sa; /* matmul_i8dyn: i[0] trans_b 0, i[1] act none, f[0] alpha 1, f[1] a_scale */
    int in[2] = {onnx_in(cx, qa, 0), wv};
    *st = onnx_set(cx, n, 0, ts_node_add(g, TS_OP_MATMUL_I8DYN, 2, in, &at, NULL));
    return 1;
}
