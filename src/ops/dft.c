/*
 * dft.c — ts_dft: the discrete Fourier transform along one axis of a real or complex signal, as
 * ONNX DFT.
 *
 *   dft(x [.., n, .., c] f32, c = 1 (real) or 2 (re, im)) -> y [.., K, .., 2]
 *   attrs: i[0] = axis (not the last), i[1] = inverse, i[2] = onesided, i[3] = L (the transform
 *          length; the signal is cut to L or zero-padded to it); K = onesided ? L / 2 + 1 : L
 *   y[k] = s sum_{m < min(n, L)} x[m] e^(-+ 2 pi i k m / L), the sign + and s = 1 / L when inverse,
 *          - and s = 1 otherwise; computed in double with the twiddles e^(2 pi i j / L) tabled.
 * Not differentiable (grad NULL).
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_dft(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    int64_t axis = n->attr.i[0], L = n->attr.i[3];
    if (x->dtype != TS_F32 || x->ndim < 2 || (x->shape[x->ndim - 1] != 1 && x->shape[x->ndim - 1] != 2))
        return ts_err(TS_ERR_SHAPE, "op dft: %s must be f32 [.., 1] (real) or [.., 2] (complex)", VS(g, n->in[0]));
    if (axis < 0 || axis >= x->ndim - 1)
        return ts_err(TS_ERR_ARG, "op dft: axis %lld of %s is not a signal axis", (long long)axis, VS(g, n->in[0]));
    if (L < 1 || L > (1 << 24))
        return ts_err(TS_ERR_ARG, "op dft: transform length %lld outside 1..2^24", (long long)L);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof o->shape);
    o->shape[axis] = n->attr.i[2] ? L / 2 + 1 : L;
    o->shape[x->ndim - 1] = 2;
    return TS_OK;
}

static size_t dft_scratch(const ts_graph *g, const ts_node *n) { return (size_t)n->attr.i[3] * 2 * sizeof(double) + 64; }

static ts_status dft_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    const ts_val *x = &k->g->vals[n->in[0]], *y = &k->g->vals[n->out[0]];
    int axis = (int)n->attr.i[0], inv = n->attr.i[1] != 0;
    int64_t L = n->attr.i[3], K = y->shape[axis], len = x->shape[axis], c = x->shape[x->ndim - 1];
    int64_t outer = ts_numel(axis, x->shape), inner = ts_numel(x->ndim - 2 - axis, x->shape + axis + 1);
    int64_t m_end = len < L ? len : L;
    double *tw = k->scratch; /* tw[2 j], tw[2 j + 1] = cos, sin of 2 pi j / L */
    for (int64_t j = 0; j < L; j++) {
        tw[2 * j] = cos(2 * M_PI * (double)j / (double)L);
        tw[2 * j + 1] = sin(2 * M_PI * (double)j / (double)L);
    }
    const float *X = k->in[0];
    float *Y = k->out[0];
    double sgn = inv ? 1 : -1, s = inv ? 1.0 / (double)L : 1.0;
#pragma omp parallel for schedule(static) if (outer * inner * K * m_end > 65536)
    for (int64_t q = 0; q < outer * inner; q++) {
        int64_t a = q / inner, b = q % inner;
        for (int64_t kk = 0; kk < K; kk++) {
            double re = 0, im = 0;
            for (int64_t m = 0; m < m_end; m++) {
                const float *p = X + ((a * len + m) * inner + b) * c;
                double xr = p[0], xi = c == 2 ? p[1] : 0;
                int64_t j = kk * m % L;
                double cr = tw[2 * j], ci = sgn * tw[2 * j + 1]; /* e^(sgn 2 pi i j / L) */
                re += xr * cr - xi * ci;
                im += xr * ci + xi * cr;
            }
            float *o = Y + ((a * K + kk) * inner + b) * 2;
            o[0] = (float)(re * s);
            o[1] = (float)(im * s);
        }
    }
    return TS_OK;
}

/* Not differentiable. */
const ts_op_def ts_opdef_dft = {"dft", 1, 1, 1, 0, infer_dft, NULL, dft_kernel, dft_scratch};

ts_value ts_dft(ts_graph *g, ts_value x, int axis, int inverse, int onesided, int64_t length) {
    if (!g || x == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!ts_val_ok(g, x)) return ts_graph_fail(g, TS_ERR_ARG, "ts_dft: %d is not a value of this graph", x);
    int nd = g->vals[x].ndim, a = ts_axis(axis, nd);
    if (a < 0) return ts_graph_fail(g, TS_ERR_ARG, "ts_dft: axis %d is out of range for %s", axis, VS(g, x));
    ts_attrs at = {0};
    at.i[0] = a;
    at.i[1] = inverse != 0;
    at.i[2] = onesided != 0;
    at.i[3] = length > 0 ? length : g->vals[x].shape[a];
    at.ni = 4;
    return ts_node_add(g, TS_OP_DFT, 1, &x, &at, NULL);
}
