/*
 * export_qdq.c — the QDQ form of an int8 matmul in an exported ONNX model (ts_onnx_export_qdq):
 *
 *   y = MatMul(DequantizeLinear(QuantizeLinear(a, sa, 0), sa, 0), DequantizeLinear(qw, sw, 0, axis 1))
 *
 *   a   [.., M, K] f32, the activations; sa their calibrated scale (one per tensor, f32 scalar)
 *   qw  [K, N] INT8, the weight quantized per output channel n exactly as tessera's quantization
 *       pass does it (ops/matmul_int8.c, ts_quant_weights_s8): sw[n] = max_k |w[k, n]| / 127,
 *       qw[k, n] = clamp(rne(w[k, n] * 127 / max_k |w[k, n]|), -127, 127); a weight stored [N, K]
 *       (trans_b) is written transposed, so no Transpose stands between the DequantizeLinear and
 *       the MatMul (ONNX Runtime fuses only the plain pattern)
 *   sw  [N] f32 (an all-zero channel, whose qw is all 0, is written with scale 1: the product is the
 *       same and a scale of 0 is not a valid quantization)
 *   zero points: INT8 zeros (symmetric), a scalar for a, [N] for qw
 * ONNX Runtime fuses the pattern into its int8 kernels (MatMulIntegerToFloat); tessera's importer
 * maps it back onto matmul_i8dyn (onnx/map/quant_matmul.c).
 * The one difference from tessera's arithmetic: QuantizeLinear saturates to [-128, 127] where tessera
 * clamps to [-127, 127], so an activation below -127.5 sa (beyond the calibrated range) is -128
 * there and -127 here.
 */
#include <math.h>

#include "onnx/export/export_pb.h"
#include "ops/op.h" /* ts_quant_weights_s8 */

/* A fresh rank-0 INT8 zero. */
static const char *zero_i8(ts_ox *b) {
    char *name = ts_ox_fresh(b, "zp");
    int8_t z = 0;
    if (name) ts_ox_init_i8(b, name, 0, NULL, &z);
    return name;
}

const char *ts_ox_qdq_act(ts_ox *b, const char *x, float sa) {
    const char *s = ts_ox_const_f32(b, sa), *zp = zero_i8(b);
    char *q = ts_ox_fresh(b, "q"), *dq = ts_ox_fresh(b, "dq");
    if (!s || !zp || !q || !dq) return NULL;
    ts_ox_node(b, "QuantizeLinear", 3, (const char *[]){x, s, zp}, 1, (const char *[]){q});
    ts_ox_node(b, "DequantizeLinear", 3, (const char *[]){q, s, zp}, 1, (const char *[]){dq});
    return dq;
}

ts_status ts_ox_qdq_weight(ts_ox *b, const char *wname, const float *w, int64_t K, int64_t N, int trans_b,
                           const char **out) {
    *out = NULL;
    size_t n = (size_t)(K * N);
    int8_t *qw = malloc(n ? n : 1), *qkn = trans_b ? malloc(n ? n : 1) : qw;
    float *sw = malloc(sizeof(float) * (size_t)(N ? N : 1));
    int8_t *zp = calloc((size_t)(N ? N : 1), 1);
    ts_status s = TS_OK;
    if (!qw || !qkn || !sw || !zp) {
        s = ts_err(TS_ERR_NOMEM, "ts_onnx_export_qdq: out of memory quantizing weight '%s'", wname);
        goto done;
    }
    if ((s = ts_quant_weights_s8(w, K, N, trans_b, qw, sw))) goto done;
    for (int64_t c = 0; c < N; c++) {
        if (!isfinite(sw[c])) {
            s = ts_err(TS_ERR_ARG, "ts_onnx_export_qdq: weight '%s' has a non-finite value in output channel %lld: "
                       "it has no int8 form", wname, (long long)c);
            goto done;
        }
        if (sw[c] == 0.f) sw[c] = 1.f;
    }
    if (trans_b) /* [N, K] -> [K, N] */
        for (int64_t k = 0; k < K; k++)
            for (int64_t c = 0; c < N; c++) qkn[k * N + c] = qw[c * K + k];
    char *qname = ts_ox_fresh(b, "qw"), *sname = ts_ox_fresh(b, "sw"), *zname = ts_ox_fresh(b, "zw");
    char *dq = ts_ox_fresh(b, "dqw");
    if (!qname || !sname || !zname || !dq) goto done; /* the builder records running out of memory */
    ts_ox_init_i8(b, qname, 2, (int64_t[]){K, N}, qkn);
    ts_ox_init_copy(b, sname, TS_F32, 1, &N, sw);
    ts_ox_init_i8(b, zname, 1, &N, zp);
    Onnx__NodeProto *node = ts_ox_node(b, "DequantizeLinear", 3, (const char *[]){qname, sname, zname}, 1,
                                       (const char *[]){dq});
    if (node) ts_ox_attr_int(b, node, "axis", 1);
    *out = dq;
done:
    if (qkn != qw) free(qkn);
    free(qw);
    free(sw);
    free(zp);
    return s;
}
