/*
 * linalg.c — ONNX mappings of the linear algebra: MatMul (f32, f16, bf16), Gemm (alpha, beta,
 * transposes), Det (ts_det, a reduction of matrices) and DFT (ts_dft, sums of a signal against
 * the Fourier basis). The quantized products (MatMulInteger, QLinearMatMul) are in quant.c.
 */

#include "onnx/map/map.h"

/* ------------------------------------------------------------------ MatMul, Gemm */

static int float_dtype(ts_dtype d) { return d == TS_F32 || d == TS_F16 || d == TS_BF16; }

static ts_status imp_matmul(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    ts_status st;
    if (onnx_qdq_matmul(cx, n, &st)) return st;
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

/* ------------------------------------------------------------------ Det */

static ts_status imp_det(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    if (r < 2 || sh[r - 1] != sh[r - 2]) return onnx_invalid(cx, n, "the input must hold square matrices [.., M, M]");
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_det(cx->g, onnx_in(cx, n, 0)));
}

/* ------------------------------------------------------------------ DFT */

/* DFT (opset 17): ts_dft along `axis` (default 1); dft_length, when given, known at import. */
static ts_status imp_dft(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t axis_attr = onnx_attr_int(cx, n, "axis", 1);
    int inv = onnx_attr_int(cx, n, "inverse", 0) != 0, one = onnx_attr_int(cx, n, "onesided", 0) != 0;
    double len = 0;
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (onnx_has_in(n, 1) && !onnx_known_scalar(cx, n, 1, &len, "dft_length")) return TS_ERR_UNSUPPORTED;
    if (r < 2 || (sh[r - 1] != 1 && sh[r - 1] != 2)) return onnx_invalid(cx, n, "the input must be [.., 1] or [.., 2]");
    int axis = map_axis(cx, n, axis_attr, r, "axis");
    if (axis < 0) return TS_ERR_UNSUPPORTED;
    if (axis == r - 1) return onnx_invalid(cx, n, "axis %lld is the real / imaginary axis", (long long)axis_attr);
    if (one && (inv || sh[r - 1] == 2)) return onnx_unsupported(cx, n, "onesided with an inverse or complex transform");
    if (onnx_has_in(n, 1) && !(len >= 1 && len <= (double)(1 << 24))) return onnx_unsupported(cx, n, "dft_length %g", len);
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_dft(cx->g, onnx_in(cx, n, 0), axis, inv, one, (int64_t)len));
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"MatMul", 9, 17, imp_matmul},
    {"Gemm", 9, 17, imp_gemm},
    {"Det", 11, 17, imp_det},
    {"DFT", 17, 17, imp_dft},
};
const onnx_family onnx_family_linalg = {"linalg", ops, (int)(sizeof ops / sizeof *ops)};
