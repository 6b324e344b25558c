/*
 * value.c — ONNX mappings of the ops that make values or pass them on: Constant, ConstantOfShape,
 * Range, EyeLike (computed at import: they depend only on attributes and shapes), Cast, CastLike
 * (ts_cast to the second input's dtype), Identity and Dropout (inference: the identity, its mask
 * all true).
 */

#include "onnx/map/map.h"

#include <math.h>

/* ------------------------------------------------------------------ Constant, ConstantOfShape, Range */

static ts_status imp_constant(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *v = onnx_attr_tensor(cx, n, "value");
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (v) {
        ts_status st = onnx_set_known(cx, n, 0, ts_tensor_from(v->dtype, v->ndim, v->shape, v->data));
        const Onnx__AttributeProto *at = NULL; /* an INT8 tensor (decoded into f32): mark it */
        for (size_t a = 0; a < n->n_attribute && !at; a++)
            if (n->attribute[a]->name && !strcmp(n->attribute[a]->name, "value")) at = n->attribute[a];
        onnx_val *out = onnx_has_out(n, 0) ? onnx_lookup(cx, n->output[0]) : NULL;
        if (!st && out && at && at->t && at->t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT8) out->i8 = 1;
        return st;
    }
    if (onnx_attr_has(cx, n, "value_float")) {
        float f = onnx_attr_float(cx, n, "value_float", 0);
        return onnx_set_known(cx, n, 0, ts_tensor_from(TS_F32, 0, NULL, &f));
    }
    if (onnx_attr_has(cx, n, "value_int")) {
        int64_t i = onnx_attr_int(cx, n, "value_int", 0);
        return onnx_set_known(cx, n, 0, ts_tensor_from(TS_I64, 0, NULL, &i));
    }
    for (size_t a = 0; a < n->n_attribute; a++) {
        const Onnx__AttributeProto *at = n->attribute[a];
        if (!at->name) continue;
        if (!strcmp(at->name, "value_floats")) {
            int64_t cnt = (int64_t)at->n_floats;
            onnx_attr_ignore(cx, n, "value_floats");
            return onnx_set_known(cx, n, 0, ts_tensor_from(TS_F32, 1, &cnt, at->floats));
        }
        if (!strcmp(at->name, "value_ints")) {
            onnx_attr_ignore(cx, n, "value_ints");
            return onnx_set_known(cx, n, 0, onnx_host_ints(at->ints, (int)at->n_ints));
        }
    }
    if (n->n_attribute) return TS_OK; /* value_string(s), sparse_value: the unread check names it */
    return onnx_invalid(cx, n, "no value attribute");
}

static ts_status imp_constant_of_shape(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    const ts_tensor *v = onnx_attr_tensor(cx, n, "value");
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (v && ts_tensor_numel(v) != 1) return onnx_invalid(cx, n, "value has %lld elements, not 1", (long long)ts_tensor_numel(v));
    int nd = onnx_known_ints(cx, n, 0, sh, TS_MAX_DIMS, "the shape");
    if (nd < 0) return TS_ERR_UNSUPPORTED;
    for (int i = 0; i < nd; i++)
        if (sh[i] < 0) return onnx_invalid(cx, n, "dim %d is %lld", i, (long long)sh[i]);
    if (!onnx_fold_limit(cx, n, nd, sh)) return TS_ERR_UNSUPPORTED;
    ts_tensor *t = ts_tensor_new(v ? v->dtype : TS_F32, nd, sh);
    if (t && v) {
        size_t esz = ts_dtype_size(v->dtype);
        for (int64_t i = 0, cnt = ts_tensor_numel(t); i < cnt; i++) memcpy((char *)t->data + (size_t)i * esz, v->data, esz);
    }
    return onnx_set_known(cx, n, 0, t);
}

static ts_status imp_range(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    double v[3];
    static const char *const what[3] = {"start", "limit", "delta"};
    for (int k = 0; k < 3; k++)
        if (!onnx_known_scalar(cx, n, k, &v[k], what[k])) return TS_ERR_UNSUPPORTED;
    ts_dtype dt = onnx_in_dtype(cx, n, 0);
    if (v[2] == 0) return onnx_invalid(cx, n, "delta is 0");
    double cnt = ceil((v[1] - v[0]) / v[2]);
    if (!(cnt < (double)((int64_t)1 << 40))) return onnx_unsupported(cx, n, "a range of %g elements", cnt);
    int64_t len = cnt > 0 ? (int64_t)cnt : 0;
    if (!onnx_fold_limit(cx, n, 1, &len)) return TS_ERR_UNSUPPORTED;
    ts_tensor *t = ts_tensor_new(dt, 1, &len);
    int ints = dt == TS_I32 || dt == TS_I64;
    int64_t i0 = ints ? onnx_get_i64(onnx_known(cx, n, 0), 0) : 0, di = ints ? onnx_get_i64(onnx_known(cx, n, 2), 0) : 0;
    for (int64_t i = 0; t && i < len; i++) {
        if (ints) onnx_put_i64(t, i, (int64_t)((uint64_t)i0 + (uint64_t)i * (uint64_t)di));
        else onnx_put_f64(t, i, (float)v[0] + (float)i * (float)v[2]);
    }
    return onnx_set_known(cx, n, 0, t);
}

static ts_status imp_eye_like(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t k = onnx_attr_int(cx, n, "k", 0);
    ts_dtype dt = onnx_in_dtype(cx, n, 0);
    if (onnx_attr_has(cx, n, "dtype")) {
        int64_t t = onnx_attr_int(cx, n, "dtype", 1);
        if (!onnx_dtype((int32_t)t, &dt))
            return onnx_unsupported(cx, n, "dtype %s: tessera has no such dtype", onnx_type_name((int32_t)t));
    }
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (r != 2) return onnx_invalid(cx, n, "the input has rank %d, not 2", r);
    ts_tensor *t = ts_tensor_new(dt, 2, sh);
    if (k > -sh[0] && k < sh[1]) /* else no diagonal element falls inside (and i + k cannot overflow) */
        for (int64_t i = 0; t && i < sh[0]; i++)
            if (i + k >= 0 && i + k < sh[1]) onnx_put_f64(t, i * sh[1] + i + k, 1.0);
    return onnx_set_known(cx, n, 0, t);
}

/* ------------------------------------------------------------------ Cast, CastLike, Identity, Dropout */

static ts_status imp_cast(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t to = onnx_attr_int(cx, n, "to", -1);
    onnx_attr_ignore(cx, n, "saturate"); /* opset 19's, for 8-bit floats */
    ts_dtype dt;
    if (to < 0) return onnx_invalid(cx, n, "no 'to' attribute");
    if (!onnx_dtype((int32_t)to, &dt)) return onnx_unsupported(cx, n, "cast to %s: tessera has no such dtype", onnx_type_name((int32_t)to));
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, onnx_host_cast(k, dt));
    ts_dtype from = onnx_in_dtype(cx, n, 0);
    ts_value x = onnx_in(cx, n, 0);
    if (to == 9 /* BOOL */ && from != TS_U8) { /* x != 0 */
        if (from != TS_F32 && from != TS_I32 && from != TS_I64)
            return onnx_unsupported(cx, n, "cast of a graph %s value to BOOL", ts_dtype_name(from));
        ts_value zero = ts_constant(cx->g, onnx_own_tensor(cx, ts_tensor_new(from, 0, NULL)));
        return onnx_set(cx, n, 0, ts_not(cx->g, ts_binary(cx->g, TS_BIN_EQUAL, x, zero)));
    }
    if (from == dt) { /* a copy, so the output is a value of its own */
        int64_t sh[TS_MAX_DIMS];
        int r = onnx_in_shape(cx, n, 0, sh);
        return onnx_set(cx, n, 0, ts_reshape(cx->g, x, r, sh));
    }
    return onnx_set(cx, n, 0, ts_cast(cx->g, x, dt));
}

static ts_status imp_identity(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, ts_tensor_from(k->dtype, k->ndim, k->shape, k->data));
    return onnx_set(cx, n, 0, onnx_in(cx, n, 0));
}

static ts_status imp_cast_like(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    ts_dtype from = onnx_in_dtype(cx, n, 0), to = onnx_in_dtype(cx, n, 1);
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    onnx_attr_ignore(cx, n, "saturate"); /* opset 19's, for 8-bit floats */
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, onnx_host_cast(k, to));
    if (to == TS_U8 && from != TS_U8)
        return onnx_unsupported(cx, n, "cast of a graph %s value to BOOL / UINT8", ts_dtype_name(from));
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_value x = onnx_in(cx, n, 0);
    return onnx_set(cx, n, 0, from == to ? ts_reshape(cx->g, x, r, sh) : ts_cast(cx->g, x, to));
}

/* Dropout at inference: the identity. The mask output, or training_mode true, is refused. */
static ts_status imp_dropout(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    onnx_attr_ignore(cx, n, "ratio");
    onnx_attr_ignore(cx, n, "seed");
    if (onnx_attr_int(cx, n, "is_test", 1) == 0) return onnx_unsupported(cx, n, "is_test = 0 (training)");
    if (onnx_has_in(n, 2)) {
        double t;
        if (!onnx_known_scalar(cx, n, 2, &t, "training_mode")) return TS_ERR_UNSUPPORTED;
        if (t != 0) return onnx_unsupported(cx, n, "training_mode true");
    }
    if (onnx_has_out(n, 1)) { /* at inference the mask keeps everything: all true, known */
        int64_t sh[TS_MAX_DIMS];
        int r = onnx_in_shape(cx, n, 0, sh);
        ts_tensor *mask = ts_tensor_new(TS_U8, r, sh);
        if (mask) memset(ts_tensor_data(mask), 1, ts_tensor_nbytes(mask));
        ts_status st = onnx_set_known(cx, n, 1, mask);
        if (st) return st;
    }
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, ts_tensor_from(k->dtype, k->ndim, k->shape, k->data));
    return onnx_set(cx, n, 0, onnx_in(cx, n, 0));
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"Constant", 9, 17, imp_constant},
    {"ConstantOfShape", 9, 17, imp_constant_of_shape},
    {"Range", 11, 17, imp_range},
    {"EyeLike", 9, 17, imp_eye_like},
    {"Cast", 9, 17, imp_cast},
    {"CastLike", 15, 17, imp_cast_like},
    {"Identity", 9, 17, imp_identity},
    {"Dropout", 9, 17, imp_dropout},
};
const onnx_family onnx_family_value = {"value", ops, (int)(sizeof ops / sizeof *ops)};
