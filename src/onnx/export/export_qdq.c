/*
 * export_qdq.c — int8 matmuls in an exported ONNX model: the QDQ form (ts_onnx_export_qdq) and ONNX
 * Runtime's dynamic form (ts_onnx_export_dynamic_int8, at the end). The QDQ form:
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
 *
 * The dynamic form, as ONNX Runtime's quantize_dynamic writes a MatMul (ORT fuses it into its int8
 * DynamicQuantizeMatMul kernel; ORT's CPU provider leaves a QDQ MatMul whose output is not
 * quantized again as DequantizeLinear + an f32 MatMul):
 *   qx, sx, zx = DynamicQuantizeLinear(a)            (uint8, asymmetric, per tensor, per run)
 *   y = Mul(Cast(MatMulInteger(qx, qw, zx, 0), FLOAT), Mul(sx, sw))
 * with qw, sw as above: the weights are tessera's; the activations are quantized ORT's way
 * (uint8 with a zero point over [min(0, min a), max(0, max a)]), not tessera's (int8 symmetric).
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

/* w quantized per output channel as initializers qw [K, N] INT8 (*qname) and sw [N] f32 (*sname);
 * NULL names when the builder ran out of memory. */
static ts_status weight_inits(ts_ox *b, const char *wname, const float *w, int64_t K, int64_t N, int trans_b,
                              const char **qname, const char **sname) {
    *qname = *sname = NULL;
    size_t n = (size_t)(K * N);
    int8_t *qw = malloc(n ? n : 1), *qkn = trans_b ? malloc(n ? n : 1) : qw;
    float *sw = malloc(sizeof(float) * (size_t)(N ? N : 1));
    ts_status s = TS_OK;
    if (!qw || !qkn || !sw) {
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
    char *q = ts_ox_fresh(b, "qw"), *sc = ts_ox_fresh(b, "sw");
    if (!q || !sc) goto done; /* the builder records running out of memory */
    ts_ox_init_i8(b, q, 2, (int64_t[]){K, N}, qkn);
    ts_ox_init_copy(b, sc, TS_F32, 1, &N, sw);
    *qname = q, *sname = sc;
done:
    if (qkn != qw) free(qkn);
    free(qw);
    free(sw);
    return s;
}

ts_status ts_ox_qdq_weight(ts_ox *b, const char *wname, const float *w, int64_t K, int64_t N, int trans_b,
                           const char **out) {
    const char *qname, *sname;
    *out = NULL;
    ts_status s = weight_inits(b, wname, w, K, N, trans_b, &qname, &sname);
    int8_t *zp = calloc((size_t)(N ? N : 1), 1);
    char *zname = ts_ox_fresh(b, "zw"), *dq = ts_ox_fresh(b, "dqw");
    if (!s && zp && qname && zname && dq) {
        ts_ox_init_i8(b, zname, 1, &N, zp);
        Onnx__NodeProto *node = ts_ox_node(b, "DequantizeLinear", 3, (const char *[]){qname, sname, zname}, 1,
                                           (const char *[]){dq});
        if (node) ts_ox_attr_int(b, node, "axis", 1);
        *out = dq;
    } else if (!s && !zp) {
        s = ts_err(TS_ERR_NOMEM, "ts_onnx_export: out of memory quantizing weight '%s'", wname);
    }
    free(zp);
    return s;
}

ts_status ts_ox_dyn_matmul(ts_ox *b, const char *x, const char *wname, const float *w, int64_t K, int64_t N,
                           int trans_b, const char *y) {
    const char *qname, *sname;
    ts_status s = weight_inits(b, wname, w, K, N, trans_b, &qname, &sname);
    char *qx = ts_ox_fresh(b, "qx"), *sx = ts_ox_fresh(b, "sx"), *zx = ts_ox_fresh(b, "zx"), *zw = ts_ox_fresh(b, "zw");
    char *acc = ts_ox_fresh(b, "acc"), *accf = ts_ox_fresh(b, "accf"), *scale = ts_ox_fresh(b, "scale");
    if (s || !qname || !qx || !sx || !zx || !zw || !acc || !accf || !scale) return s;
    int8_t z = 0;
    ts_ox_init_i8(b, zw, 0, NULL, &z);
    ts_ox_node(b, "DynamicQuantizeLinear", 1, (const char *[]){x}, 3, (const char *[]){qx, sx, zx});
    ts_ox_node(b, "MatMulInteger", 4, (const char *[]){qx, qname, zx, zw}, 1, (const char *[]){acc});
    Onnx__NodeProto *cast = ts_ox_node1(b, "Cast", acc, accf);
    if (cast) ts_ox_attr_int(b, cast, "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    ts_ox_node2(b, "Mul", sx, sname, scale);
    ts_ox_node2(b, "Mul", accf, scale, y);
    return TS_OK;
}
