/*
 * fold.c — host arithmetic for constant folding at import time: element access in any dtype,
 * casts, broadcasting binary ops and where, transpose, reshape, slice, concat, gather and expand
 * on host tensors. Used for the shape computations ONNX exporters emit (Shape -> Gather ->
 * Concat -> Reshape) and for any node whose inputs are all known when the model is imported.
 * Integers are computed in int64 and floats in double, then stored in the output dtype.
 */
#include "onnx/onnx_imp.h"

#include <math.h>

double onnx_get_f64(const ts_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case TS_F32: return ((const float *)p)[i];
    case TS_BF16: return ts_bf16_f32(((const uint16_t *)p)[i]);
    case TS_F16: return ts_f16_f32(((const uint16_t *)p)[i]);
    case TS_I32: return ((const int32_t *)p)[i];
    case TS_I64: return (double)((const int64_t *)p)[i];
    case TS_U8: return ((const uint8_t *)p)[i];
    default: return 0;
    }
}

/* A double to int64: truncated toward zero, saturating, NaN -> 0 (C leaves the rest undefined). */
static int64_t to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

int64_t onnx_get_i64(const ts_tensor *t, int64_t i) {
    switch (t->dtype) {
    case TS_I64: return ((const int64_t *)t->data)[i];
    case TS_I32: return ((const int32_t *)t->data)[i];
    case TS_U8: return ((const uint8_t *)t->data)[i];
    default: return to_i64(onnx_get_f64(t, i));
    }
}

void onnx_put_f64(ts_tensor *t, int64_t i, double v) {
    void *p = t->data;
    switch (t->dtype) {
    case TS_F32: ((float *)p)[i] = (float)v; break;
    case TS_BF16: ((uint16_t *)p)[i] = ts_f32_bf16((float)v); break;
    case TS_F16: ((uint16_t *)p)[i] = ts_f32_f16((float)v); break;
    default: onnx_put_i64(t, i, to_i64(v)); break;
    }
}

void onnx_put_i64(ts_tensor *t, int64_t i, int64_t v) {
    void *p = t->data;
    switch (t->dtype) {
    case TS_I64: ((int64_t *)p)[i] = v; break;
    case TS_I32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break; /* wraps, as numpy's astype */
    case TS_U8: ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    default: onnx_put_f64(t, i, (double)v); break;
    }
}

static int is_int(ts_dtype d) { return d == TS_I32 || d == TS_I64 || d == TS_U8; }

ts_tensor *onnx_host_cast(const ts_tensor *t, ts_dtype dtype) {
    ts_tensor *o = ts_tensor_new(dtype, t->ndim, t->shape);
    if (!o) return NULL;
    int64_t n = ts_tensor_numel(t);
    if (dtype == TS_U8 && t->dtype != TS_U8) { /* to BOOL / UINT8: ONNX Cast to bool is "!= 0" */
        for (int64_t i = 0; i < n; i++) ((uint8_t *)o->data)[i] = onnx_get_f64(t, i) != 0;
        return o;
    }
    for (int64_t i = 0; i < n; i++) {
        if (is_int(t->dtype) && is_int(dtype)) onnx_put_i64(o, i, onnx_get_i64(t, i));
        else onnx_put_f64(o, i, onnx_get_f64(t, i));
    }
    return o;
}

ts_tensor *onnx_host_ints(const int64_t *v, int n) {
    int64_t sh = n;
    ts_tensor *t = ts_tensor_new(TS_I64, 1, &sh);
    if (t && n) memcpy(t->data, v, sizeof(int64_t) * (size_t)n);
    return t;
}

int onnx_bcast(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out) {
    return ts_broadcast_shape(na, a, nb, b, out);
}

/* Strides (in elements) of t read as shape out[nd] with broadcasting: 0 along broadcast dims. */
static void bstrides(const ts_tensor *t, int nd, const int64_t *out, int64_t *st) {
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        int ti = i - (nd - t->ndim);
        if (ti < 0 || t->shape[ti] == 1) st[i] = 0;
        else st[i] = s;
        if (ti >= 0) s *= t->shape[ti];
        (void)out;
    }
}

/* Element offsets of up to 3 broadcast operands for output element index i. */
static void offsets(int64_t i, int nd, const int64_t *shape, int nops, int64_t st[][TS_MAX_DIMS], int64_t *off) {
    for (int k = 0; k < nops; k++) off[k] = 0;
    for (int d = nd - 1; d >= 0; d--) {
        int64_t c = i % shape[d];
        i /= shape[d];
        for (int k = 0; k < nops; k++) off[k] += c * st[k][d];
    }
}

static int64_t ipow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)a;
    while (b) {
        if (b & 1) r *= x;
        x *= x;
        b >>= 1;
    }
    return (int64_t)r;
}

static int64_t ibin(onnx_binop op, int64_t a, int64_t b) {
    switch (op) {
    case ONNX_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case ONNX_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case ONNX_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case ONNX_DIV: return b == 0 || (a == INT64_MIN && b == -1) ? 0 : a / b;
    case ONNX_POW: return ipow(a, b);
    case ONNX_MOD: { /* the sign of the divisor, as Python's % */
        if (b == 0 || b == -1) return 0;
        int64_t r = a % b;
        return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
    }
    case ONNX_FMOD: return b == 0 || b == -1 ? 0 : a % b;
    case ONNX_MIN: return a < b ? a : b;
    case ONNX_MAX: return a > b ? a : b;
    case ONNX_EQUAL: return a == b;
    case ONNX_LESS: return a < b;
    case ONNX_GREATER: return a > b;
    case ONNX_LESS_EQ: return a <= b;
    case ONNX_GREATER_EQ: return a >= b;
    case ONNX_AND: return a && b;
    case ONNX_OR: return a || b;
    case ONNX_XOR: return !a != !b;
    }
    return 0;
}

static double fbin(onnx_binop op, double a, double b) {
    switch (op) {
    case ONNX_ADD: return a + b;
    case ONNX_SUB: return a - b;
    case ONNX_MUL: return a * b;
    case ONNX_DIV: return a / b;
    case ONNX_POW: return pow(a, b);
    case ONNX_MOD: {
        double r = fmod(a, b);
        return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
    }
    case ONNX_FMOD: return fmod(a, b);
    case ONNX_MIN: return a != a || b != b ? NAN : a < b ? a : b;
    case ONNX_MAX: return a != a || b != b ? NAN : a > b ? a : b;
    case ONNX_EQUAL: return a == b;
    case ONNX_LESS: return a < b;
    case ONNX_GREATER: return a > b;
    case ONNX_LESS_EQ: return a <= b;
    case ONNX_GREATER_EQ: return a >= b;
    case ONNX_AND: return a != 0 && b != 0;
    case ONNX_OR: return a != 0 || b != 0;
    case ONNX_XOR: return (a != 0) != (b != 0);
    }
    return 0;
}

ts_tensor *onnx_host_binary(onnx_binop op, const ts_tensor *a, const ts_tensor *b, ts_dtype dt) {
    int64_t sh[TS_MAX_DIMS], st[2][TS_MAX_DIMS], off[2];
    int nd = ts_broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, sh);
    if (nd < 0) {
        ts_err(TS_ERR_SHAPE, "shapes do not broadcast");
        return NULL;
    }
    ts_tensor *o = ts_tensor_new(dt, nd, sh);
    if (!o) return NULL;
    bstrides(a, nd, sh, st[0]);
    bstrides(b, nd, sh, st[1]);
    int ints = is_int(a->dtype) && is_int(b->dtype);
    for (int64_t i = 0, n = ts_tensor_numel(o); i < n; i++) {
        offsets(i, nd, sh, 2, st, off);
        if (ints) onnx_put_i64(o, i, ibin(op, onnx_get_i64(a, off[0]), onnx_get_i64(b, off[1])));
        else onnx_put_f64(o, i, fbin(op, onnx_get_f64(a, off[0]), onnx_get_f64(b, off[1])));
    }
    return o;
}

ts_tensor *onnx_host_where(const ts_tensor *c, const ts_tensor *a, const ts_tensor *b) {
    int64_t s1[TS_MAX_DIMS], sh[TS_MAX_DIMS], st[3][TS_MAX_DIMS], off[3];
    int n1 = ts_broadcast_shape(c->ndim, c->shape, a->ndim, a->shape, s1);
    int nd = n1 < 0 ? -1 : ts_broadcast_shape(n1, s1, b->ndim, b->shape, sh);
    if (nd < 0) {
        ts_err(TS_ERR_SHAPE, "shapes do not broadcast");
        return NULL;
    }
    ts_tensor *o = ts_tensor_new(a->dtype, nd, sh);
    if (!o) return NULL;
    bstrides(c, nd, sh, st[0]);
    bstrides(a, nd, sh, st[1]);
    bstrides(b, nd, sh, st[2]);
    size_t esz = ts_dtype_size(a->dtype);
    for (int64_t i = 0, n = ts_tensor_numel(o); i < n; i++) {
        offsets(i, nd, sh, 3, st, off);
        const ts_tensor *src = onnx_get_f64(c, off[0]) != 0 ? a : b;
        memcpy((char *)o->data + (size_t)i * esz, (const char *)src->data + (size_t)off[src == a ? 1 : 2] * esz, esz);
    }
    return o;
}

ts_tensor *onnx_host_expand(const ts_tensor *t, int ndim, const int64_t *shape) {
    int64_t sh[TS_MAX_DIMS], st[1][TS_MAX_DIMS], off[1];
    int nd = ts_broadcast_shape(t->ndim, t->shape, ndim, shape, sh);
    if (nd < 0) {
        ts_err(TS_ERR_SHAPE, "shapes do not broadcast");
        return NULL;
    }
    ts_tensor *o = ts_tensor_new(t->dtype, nd, sh);
    if (!o) return NULL;
    bstrides(t, nd, sh, st[0]);
    size_t esz = ts_dtype_size(t->dtype);
    for (int64_t i = 0, n = ts_tensor_numel(o); i < n; i++) {
        offsets(i, nd, sh, 1, st, off);
        memcpy((char *)o->data + (size_t)i * esz, (const char *)t->data + (size_t)off[0] * esz, esz);
    }
    return o;
}

ts_tensor *onnx_host_reshape(const ts_tensor *t, int ndim, const int64_t *shape) {
    if (ts_numel(ndim, shape) != ts_tensor_numel(t)) {
        ts_err(TS_ERR_SHAPE, "reshape changes the element count");
        return NULL;
    }
    return ts_tensor_from(t->dtype, ndim, shape, t->data);
}

ts_tensor *onnx_host_transpose(const ts_tensor *t, const int *perm) {
    int nd = t->ndim;
    int64_t sh[TS_MAX_DIMS], ist[TS_MAX_DIMS], st[1][TS_MAX_DIMS], off[1];
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) ist[i] = s, s *= t->shape[i];
    for (int j = 0; j < nd; j++) sh[j] = t->shape[perm[j]], st[0][j] = ist[perm[j]];
    ts_tensor *o = ts_tensor_new(t->dtype, nd, sh);
    if (!o) return NULL;
    size_t esz = ts_dtype_size(t->dtype);
    for (int64_t i = 0, n = ts_tensor_numel(o); i < n; i++) {
        offsets(i, nd, sh, 1, st, off);
        memcpy((char *)o->data + (size_t)i * esz, (const char *)t->data + (size_t)off[0] * esz, esz);
    }
    return o;
}

ts_tensor *onnx_host_slice(const ts_tensor *t, int naxes, const int *axes, const int64_t *starts,
                           const int64_t *ends, const int64_t *steps) {
    int nd = t->ndim;
    int64_t sh[TS_MAX_DIMS], first[TS_MAX_DIMS], step[TS_MAX_DIMS], ist[TS_MAX_DIMS];
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) ist[i] = s, s *= t->shape[i];
    for (int i = 0; i < nd; i++) sh[i] = t->shape[i], first[i] = 0, step[i] = 1;
    for (int k = 0; k < naxes; k++) {
        int a = axes[k];
        int64_t len = steps[k] > 0 ? (ends[k] - starts[k] + steps[k] - 1) / steps[k]
                                   : (starts[k] - ends[k] - steps[k] - 1) / -steps[k];
        sh[a] = len > 0 ? len : 0;
        first[a] = starts[k];
        step[a] = steps[k];
    }
    ts_tensor *o = ts_tensor_new(t->dtype, nd, sh);
    if (!o) return NULL;
    size_t esz = ts_dtype_size(t->dtype);
    for (int64_t i = 0, n = ts_tensor_numel(o); i < n; i++) {
        int64_t q = i, src = 0;
        for (int d = nd - 1; d >= 0; d--) {
            int64_t c = q % sh[d];
            q /= sh[d];
            src += (first[d] + c * step[d]) * ist[d];
        }
        memcpy((char *)o->data + (size_t)i * esz, (const char *)t->data + (size_t)src * esz, esz);
    }
    return o;
}

ts_tensor *onnx_host_concat(int n, const ts_tensor *const *ts, int axis) {
    int64_t sh[TS_MAX_DIMS];
    int nd = ts[0]->ndim;
    memcpy(sh, ts[0]->shape, sizeof sh);
    sh[axis] = 0;
    for (int k = 0; k < n; k++) sh[axis] += ts[k]->shape[axis];
    ts_tensor *o = ts_tensor_new(ts[0]->dtype, nd, sh);
    if (!o) return NULL;
    size_t esz = ts_dtype_size(o->dtype);
    int64_t outer = ts_numel(axis, sh), inner = ts_numel(nd - axis - 1, sh + axis + 1);
    char *dst = o->data;
    for (int64_t r = 0; r < outer; r++)
        for (int k = 0; k < n; k++) {
            size_t len = (size_t)(ts[k]->shape[axis] * inner) * esz;
            memcpy(dst, (const char *)ts[k]->data + (size_t)r * len, len);
            dst += len;
        }
    return o;
}

ts_tensor *onnx_host_gather(const ts_tensor *t, const ts_tensor *idx, int axis) {
    int64_t sh[TS_MAX_DIMS] = {0};
    int nd = 0;
    for (int i = 0; i < axis; i++) sh[nd++] = t->shape[i];
    for (int i = 0; i < idx->ndim; i++) sh[nd++] = idx->shape[i];
    for (int i = axis + 1; i < t->ndim; i++) sh[nd++] = t->shape[i];
    if (nd > TS_MAX_DIMS) {
        ts_err(TS_ERR_SHAPE, "result rank above %d", TS_MAX_DIMS);
        return NULL;
    }
    ts_tensor *o = ts_tensor_new(t->dtype, nd, sh);
    if (!o) return NULL;
    size_t esz = ts_dtype_size(t->dtype);
    int64_t outer = ts_numel(axis, t->shape), inner = ts_numel(t->ndim - axis - 1, t->shape + axis + 1);
    int64_t ni = ts_tensor_numel(idx), d = t->shape[axis];
    char *dst = o->data;
    for (int64_t r = 0; r < outer; r++)
        for (int64_t j = 0; j < ni; j++) {
            size_t len = (size_t)inner * esz;
            memcpy(dst, (const char *)t->data + (size_t)((r * d + onnx_get_i64(idx, j)) * inner) * esz, len);
            dst += len;
        }
    return o;
}
