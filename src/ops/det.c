/*
 * det.c — ts_det: the determinant of each square matrix in the last two dims of f32 x.
 *
 *   det(x [.., M, M]) -> y [..]
 *   y = the product of U's diagonal times the sign of the row swaps, for the LU factorisation with
 *   partial pivoting (Gaussian elimination choosing the largest |pivot| in each column), in
 *   double; a zero pivot column gives 0.
 * Not differentiable (grad NULL).
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_det(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    if (x->dtype != TS_F32) return ts_err(TS_ERR_DTYPE, "op det: %s must be f32", VS(g, n->in[0]));
    if (x->ndim < 2 || x->shape[x->ndim - 1] != x->shape[x->ndim - 2])
        return ts_err(TS_ERR_SHAPE, "op det: %s must hold square matrices [.., M, M]", VS(g, n->in[0]));
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim - 2;
    memcpy(o->shape, x->shape, sizeof(int64_t) * (size_t)o->ndim);
    return TS_OK;
}

static size_t det_scratch(const ts_graph *g, const ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    int64_t M = x->shape[x->ndim - 1];
    return (size_t)(M * M) * sizeof(double) + 64;
}

static ts_status det_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]];
    int64_t M = x->shape[x->ndim - 1], cnt = ts_numel(x->ndim - 2, x->shape);
    const float *X = k->in[0];
    float *Y = k->out[0];
    double *a = k->scratch;
    for (int64_t b = 0; b < cnt; b++) {
        for (int64_t i = 0; i < M * M; i++) a[i] = X[b * M * M + i];
        double d = 1;
        for (int64_t c = 0; c < M && d != 0; c++) {
            int64_t p = c;
            for (int64_t r = c + 1; r < M; r++)
                if (fabs(a[r * M + c]) > fabs(a[p * M + c])) p = r;
            if (a[p * M + c] == 0) {
                d = 0;
                break;
            }
            if (p != c) {
                for (int64_t j = 0; j < M; j++) {
                    double t = a[c * M + j];
                    a[c * M + j] = a[p * M + j];
                    a[p * M + j] = t;
                }
                d = -d;
            }
            d *= a[c * M + c];
            for (int64_t r = c + 1; r < M; r++) {
                double f = a[r * M + c] / a[c * M + c];
                for (int64_t j = c; j < M; j++) a[r * M + j] -= f * a[c * M + j];
            }
        }
        Y[b] = (float)d;
    }
    return TS_OK;
}

/* Not differentiable. */
const ts_op_def ts_opdef_det = {"det", 1, 1, 1, 0, infer_det, NULL, det_kernel, det_scratch};

ts_value ts_det(ts_graph *g, ts_value x) {
    if (!g || x == TS_NONE) return TS_NONE;
    return ts_node_add(g, TS_OP_DET, 1, &x, NULL, NULL);
}
