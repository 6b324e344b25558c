/*
 * pad.c — ts_pad: x (any dtype) padded (or cropped, by negative pads) along every axis with a
 * constant, the mirror image or copies of the edge; and pad_grad, its adjoint for f32.
 *
 *   pad(x [d0, ..]) -> y [d0 + b0 + e0, ..]
 *   attrs: i[a] = (b_a << 32) | (e_a & 0xffffffff) for axis a (pads before / after, int32 each),
 *          i[8] = ts_pad_mode, i[9] = the constant's bits (a double), ni = 10
 *   Output coordinate c on axis a reads source s = c - b_a of x, and where s is outside [0, d_a):
 *     constant: the element is the constant (converted to x's dtype)
 *     edge:     s is clamped to [0, d_a - 1]
 *     reflect:  s = -s below 0, 2 (d_a - 1) - s above (needs b_a, e_a < d_a)
 *   pad_grad(x, gy) -> gx of x's shape (x is read only for its shape): gx[s(c)] += gy[c] for every
 *   c whose source s(c) lies inside x, in row-major order of c.
 * Gradient of pad (f32): pad_grad(x, gy). pad_grad is not differentiable (grad NULL).
 */
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static int64_t pad_before(const ts_attrs *at, int a) { return (int32_t)(uint32_t)((uint64_t)at->i[a] >> 32); }
static int64_t pad_after(const ts_attrs *at, int a) { return (int32_t)(uint32_t)((uint64_t)at->i[a] & 0xffffffffu); }
static double pad_value(const ts_attrs *at) {
    double v;
    memcpy(&v, &at->i[9], sizeof v);
    return v;
}

static ts_status infer_pad(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    int mode = (int)n->attr.i[8];
    if (mode < TS_PAD_CONSTANT || mode > TS_PAD_EDGE)
        return ts_err(TS_ERR_ARG, "op pad: mode %d is not a ts_pad_mode", mode);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = x->dtype;
    o->ndim = x->ndim;
    for (int a = 0; a < x->ndim; a++) {
        int64_t b = pad_before(&n->attr, a), e = pad_after(&n->attr, a), d = x->shape[a];
        o->shape[a] = d + b + e;
        if (o->shape[a] < 1)
            return ts_err(TS_ERR_SHAPE, "op pad: pads %lld and %lld on axis %d of %s crop all it holds or more",
                          (long long)b, (long long)e, a, VS(g, n->in[0]));
        if (mode == TS_PAD_REFLECT && (b >= d || e >= d) && (b > 0 || e > 0))
            return ts_err(TS_ERR_SHAPE, "op pad: reflect pads %lld and %lld on axis %d of %s must be smaller "
                          "than its size %lld", (long long)b, (long long)e, a, VS(g, n->in[0]), (long long)d);
        if (mode == TS_PAD_EDGE && d == 0 && (b > 0 || e > 0))
            return ts_err(TS_ERR_SHAPE, "op pad: edge padding of axis %d of %s, which is empty", a, VS(g, n->in[0]));
    }
    return TS_OK;
}

/* The source coordinate of output coordinate c on an axis of size d with b before, or -1 (the
 * constant). */
static inline int64_t source(int mode, int64_t c, int64_t b, int64_t d) {
    int64_t s = c - b;
    if (s >= 0 && s < d) return s;
    if (mode == TS_PAD_CONSTANT) return -1;
    if (mode == TS_PAD_EDGE) return s < 0 ? 0 : d - 1;
    return s < 0 ? -s : 2 * (d - 1) - s;
}

/* The constant in x's dtype, in val[0..es). */
static void constant_bytes(ts_dtype t, double v, unsigned char *val) {
    switch (t) {
    case TS_F32: { float f = (float)v; memcpy(val, &f, 4); break; }
    case TS_BF16: { uint16_t h = ts_f32_bf16((float)v); memcpy(val, &h, 2); break; }
    case TS_F16: { uint16_t h = ts_f32_f16((float)v); memcpy(val, &h, 2); break; }
    case TS_I32: { int32_t i = (int32_t)v; memcpy(val, &i, 4); break; }
    case TS_I64: { int64_t i = (int64_t)v; memcpy(val, &i, 8); break; }
    default: { uint8_t u = (uint8_t)v; memcpy(val, &u, 1); break; }
    }
}

/* For each output element p (row-major), the flat source index in x, or -1. Walks the output with
 * an odometer. */
static void sources(const ts_attrs *at, const ts_val *x, const ts_val *y, int64_t *src) {
    int nd = x->ndim, mode = (int)at->i[8];
    int64_t c[TS_MAX_DIMS] = {0}, xst[TS_MAX_DIMS], yn = ts_val_numel(y);
    for (int a = nd - 1; a >= 0; a--) xst[a] = a == nd - 1 ? 1 : xst[a + 1] * x->shape[a + 1];
    for (int64_t p = 0; p < yn; p++) {
        int64_t off = 0;
        for (int a = 0; a < nd && off >= 0; a++) {
            int64_t s = source(mode, c[a], pad_before(at, a), x->shape[a]);
            off = s < 0 ? -1 : off + s * xst[a];
        }
        src[p] = off;
        for (int a = nd - 1; a >= 0; a--) {
            if (++c[a] < y->shape[a]) break;
            c[a] = 0;
        }
    }
}

static size_t pad_scratch(const ts_graph *g, const ts_node *n) {
    const ts_val *y = &g->vals[n->op == TS_OP_PAD ? n->out[0] : n->in[1]];
    return (size_t)ts_val_numel(y) * sizeof(int64_t) + 64;
}

static ts_status pad_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]], *y = &k->g->vals[k->node->out[0]];
    size_t es = ts_dtype_size(x->dtype);
    unsigned char val[8];
    constant_bytes(x->dtype, pad_value(&k->node->attr), val);
    int64_t *src = k->scratch, yn = ts_val_numel(y);
    sources(&k->node->attr, x, y, src);
    const char *X = k->in[0];
    char *Y = k->out[0];
    for (int64_t p = 0; p < yn; p++)
        memcpy(Y + (size_t)p * es, src[p] < 0 ? (const char *)val : X + (size_t)src[p] * es, es);
    return TS_OK;
}

static ts_status grad_pad(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE || g->vals[n->in[0]].dtype != TS_F32) return TS_OK;
    gi[0] = ts_node_add(g, TS_OP_PAD_GRAD, 2, (int[]){n->in[0], go[0]}, &n->attr, NULL);
    return TS_OK;
}

const ts_op_def ts_opdef_pad = {"pad", 1, 1, 1, 0, infer_pad, grad_pad, pad_kernel, pad_scratch};

static ts_status infer_pad_grad(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]], *gy = &g->vals[n->in[1]];
    ts_status s = infer_pad(g, n); /* the padded shape, into out[0] for the comparison */
    if (s) return s;
    ts_val *o = &g->vals[n->out[0]];
    int ok = x->dtype == TS_F32 && gy->dtype == TS_F32 && gy->ndim == o->ndim &&
             memcmp(gy->shape, o->shape, sizeof(int64_t) * (size_t)o->ndim) == 0;
    if (!ok)
        return ts_err(TS_ERR_SHAPE, "op pad_grad: gradient %s must be f32 of the padded shape of %s",
                      VS(g, n->in[1]), VS(g, n->in[0]));
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof o->shape);
    return TS_OK;
}

static ts_status pad_grad_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]], *gy = &k->g->vals[k->node->in[1]];
    int64_t *src = k->scratch, yn = ts_val_numel(gy);
    sources(&k->node->attr, x, gy, src);
    const float *GY = k->in[1];
    float *GX = k->out[0];
    memset(GX, 0, ts_val_bytes(x));
    for (int64_t p = 0; p < yn; p++)
        if (src[p] >= 0) GX[src[p]] += GY[p];
    return TS_OK;
}

/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_pad_grad = {"pad_grad", 2, 2, 1, 0, infer_pad_grad, NULL, pad_grad_kernel, pad_scratch};

ts_value ts_pad(ts_graph *g, ts_value x, const int64_t *pads, ts_pad_mode mode, double value) {
    if (!g || x == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!ts_val_ok(g, x)) return ts_graph_fail(g, TS_ERR_ARG, "ts_pad: %d is not a value of this graph", x);
    int nd = g->vals[x].ndim;
    if (nd && !pads) return ts_graph_fail(g, TS_ERR_ARG, "ts_pad: pads is NULL for %s", VS(g, x));
    ts_attrs at = {0};
    for (int a = 0; a < nd; a++) {
        int64_t b = pads[a], e = pads[nd + a];
        if (b < INT32_MIN || b > INT32_MAX || e < INT32_MIN || e > INT32_MAX)
            return ts_graph_fail(g, TS_ERR_ARG, "ts_pad: pads %lld and %lld of axis %d of %s are beyond 32 bits",
                                 (long long)b, (long long)e, a, VS(g, x));
        at.i[a] = (int64_t)(((uint64_t)(uint32_t)(int32_t)b << 32) | (uint32_t)(int32_t)e);
    }
    at.i[8] = mode;
    memcpy(&at.i[9], &value, sizeof value);
    at.ni = 10;
    return ts_node_add(g, TS_OP_PAD, 1, &x, &at, NULL);
}
