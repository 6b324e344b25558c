/*
 * fold_ops.c — nodes computed at import time before any mapping sees them: when every input of
 * a node is known and its op is one of those shape arithmetic uses that are listed
 * below (comparisons, logic, Neg / Abs / Floor / Ceil, Min / Max / Mod, the integer
 * reductions), the importer computes it here on the host, so that shape subgraphs fold whoever
 * maps the op for graph values. The other ops of shape arithmetic (Add, Reshape, Gather, ...)
 * fold in their own mappings.
 */
#include "onnx/onnx_imp.h"

#include <math.h>

typedef struct {
    const char *op;
    int code;       /* an onnx_binop, or UN_* / RED_* below */
    int kind;       /* 0 binary arithmetic, 1 comparison / logic (-> u8), 2 unary, 3 reduction, 4 variadic */
} fold_entry;

enum { UN_NEG, UN_ABS, UN_FLOOR, UN_CEIL, UN_NOT };
enum { RED_PROD, RED_SUM, RED_MIN, RED_MAX };

static const fold_entry table[] = {
    {"Equal", ONNX_EQUAL, 1}, {"Less", ONNX_LESS, 1}, {"Greater", ONNX_GREATER, 1},
    {"LessOrEqual", ONNX_LESS_EQ, 1}, {"GreaterOrEqual", ONNX_GREATER_EQ, 1},
    {"And", ONNX_AND, 1}, {"Or", ONNX_OR, 1}, {"Xor", ONNX_XOR, 1},
    {"Mod", ONNX_MOD, 0}, {"Min", ONNX_MIN, 4}, {"Max", ONNX_MAX, 4},
    {"Neg", UN_NEG, 2}, {"Abs", UN_ABS, 2}, {"Floor", UN_FLOOR, 2}, {"Ceil", UN_CEIL, 2}, {"Not", UN_NOT, 2},
    {"ReduceProd", RED_PROD, 3}, {"ReduceMin", RED_MIN, 3},
};

static int is_int(ts_dtype d) { return d == TS_I32 || d == TS_I64 || d == TS_U8; }

static ts_status fold_binary(ts_onnx_ctx *cx, const ts_onnx_node *n, const fold_entry *e) {
    const ts_tensor *a = onnx_known(cx, n, 0), *b = onnx_known(cx, n, 1);
    int64_t o[TS_MAX_DIMS];
    onnx_binop op = (onnx_binop)e->code;
    if (op == ONNX_MOD && onnx_attr_int(cx, n, "fmod", 0)) op = ONNX_FMOD;
    int nd = onnx_bcast(a->ndim, a->shape, b->ndim, b->shape, o);
    if (nd < 0) return onnx_invalid(cx, n, "the input shapes do not broadcast");
    if (!onnx_fold_limit(cx, n, nd, o)) return TS_ERR_UNSUPPORTED;
    return onnx_set_known(cx, n, 0, onnx_host_binary(op, a, b, e->kind == 1 ? TS_U8 : a->dtype));
}

static ts_status fold_variadic(ts_onnx_ctx *cx, const ts_onnx_node *n, const fold_entry *e) {
    const ts_tensor *acc = onnx_known(cx, n, 0);
    ts_tensor *cur = NULL;
    for (int k = 1; k < onnx_nin(n); k++) {
        const ts_tensor *b = onnx_known(cx, n, k);
        int64_t o[TS_MAX_DIMS];
        int nd = onnx_bcast(acc->ndim, acc->shape, b->ndim, b->shape, o);
        if (nd < 0 || !onnx_fold_limit(cx, n, nd, o)) {
            ts_tensor_free(cur);
            return nd < 0 ? onnx_invalid(cx, n, "the input shapes do not broadcast") : TS_ERR_UNSUPPORTED;
        }
        ts_tensor *next = onnx_host_binary((onnx_binop)e->code, acc, b, acc->dtype);
        ts_tensor_free(cur);
        acc = cur = next;
        if (!cur) return onnx_unsupported(cx, n, "%s", ts_last_error());
    }
    return onnx_set_known(cx, n, 0, cur ? cur : ts_tensor_from(acc->dtype, acc->ndim, acc->shape, acc->data));
}

static ts_status fold_unary(ts_onnx_ctx *cx, const ts_onnx_node *n, const fold_entry *e) {
    const ts_tensor *a = onnx_known(cx, n, 0);
    ts_tensor *o = ts_tensor_new(a->dtype, a->ndim, a->shape);
    for (int64_t i = 0, cnt = ts_tensor_numel(a); o && i < cnt; i++) {
        if (is_int(a->dtype)) {
            int64_t v = onnx_get_i64(a, i);
            v = e->code == UN_NEG ? (int64_t)(0 - (uint64_t)v) : e->code == UN_ABS ? (v < 0 ? (int64_t)(0 - (uint64_t)v) : v)
                : e->code == UN_NOT ? !v : v;
            onnx_put_i64(o, i, v);
        } else {
            double v = onnx_get_f64(a, i);
            v = e->code == UN_NEG ? -v : e->code == UN_ABS ? fabs(v) : e->code == UN_FLOOR ? floor(v) : e->code == UN_CEIL ? ceil(v) : v;
            onnx_put_f64(o, i, v);
        }
    }
    return onnx_set_known(cx, n, 0, o);
}

/* ReduceProd / ReduceMin over the attribute axes (opsets <= 17) on a known tensor. */
static ts_status fold_reduce(ts_onnx_ctx *cx, const ts_onnx_node *n, const fold_entry *e) {
    const ts_tensor *a = onnx_known(cx, n, 0);
    int64_t ax[TS_MAX_DIMS * 2], osh[TS_MAX_DIMS];
    int r = a->ndim, keep = onnx_attr_int(cx, n, "keepdims", 1) != 0, red[TS_MAX_DIMS] = {0};
    int na = onnx_attr_ints(cx, n, "axes", ax, TS_MAX_DIMS * 2);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (onnx_has_in(n, 1)) return onnx_unsupported(cx, n, "axes as an input");
    for (int i = 0; i < na; i++) {
        if (ax[i] < -r || ax[i] >= r) return onnx_invalid(cx, n, "axis %lld is out of range for rank %d", (long long)ax[i], r);
        red[ax[i] < 0 ? ax[i] + r : ax[i]] = 1;
    }
    int nd = 0;
    for (int i = 0; i < r; i++) {
        if (na <= 0) red[i] = 1;
        if (!red[i]) osh[nd++] = a->shape[i];
        else if (keep) osh[nd++] = 1;
    }
    if (ts_tensor_numel(a) == 0 && e->code == RED_MIN) return onnx_unsupported(cx, n, "the min of an empty tensor");
    ts_tensor *o = ts_tensor_new(a->dtype, nd, osh);
    if (!o) return onnx_unsupported(cx, n, "%s", ts_last_error());
    int64_t on = ts_tensor_numel(o);
    int ints = is_int(a->dtype);
    double *acc = calloc((size_t)on + 1, sizeof *acc);
    int64_t *iacc = calloc((size_t)on + 1, sizeof *iacc);
    char *seen = calloc((size_t)on + 1, 1);
    if (!acc || !iacc || !seen) {
        free(acc), free(iacc), free(seen), ts_tensor_free(o);
        return onnx_unsupported(cx, n, "out of memory");
    }
    for (int64_t i = 0, cnt = ts_tensor_numel(a); i < cnt; i++) {
        int64_t q = i, oi = 0, mul = 1; /* the output cell of input element i */
        for (int d = r - 1; d >= 0; d--) {
            int64_t c = q % a->shape[d];
            q /= a->shape[d];
            if (!red[d]) oi += c * mul, mul *= a->shape[d];
        }
        if (ints) {
            int64_t v = onnx_get_i64(a, i);
            iacc[oi] = !seen[oi] ? v : e->code == RED_PROD ? (int64_t)((uint64_t)iacc[oi] * (uint64_t)v) : v < iacc[oi] ? v : iacc[oi];
        } else {
            double v = onnx_get_f64(a, i);
            acc[oi] = !seen[oi] ? v : e->code == RED_PROD ? acc[oi] * v : (v < acc[oi] || v != v) ? v : acc[oi];
        }
        seen[oi] = 1;
    }
    for (int64_t i = 0; i < on; i++) {
        if (ints) onnx_put_i64(o, i, seen[i] ? iacc[i] : 1);
        else onnx_put_f64(o, i, seen[i] ? acc[i] : 1);
    }
    free(acc), free(iacc), free(seen);
    return onnx_set_known(cx, n, 0, o);
}

int onnx_fold_node(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_status *st) {
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        const fold_entry *e = &table[i];
        if (strcmp(e->op, n->op_type)) continue;
        if (onnx_nin(n) < 1 || !onnx_all_known(cx, n)) return 0;
        for (int k = 0; k < onnx_nin(n); k++)
            if (!onnx_has_in(n, k) && !(e->kind == 3 && k == 1)) return 0;
        if ((e->kind <= 1 && onnx_nin(n) != 2) || (e->kind == 2 && onnx_nin(n) != 1)) return 0;
        switch (e->kind) {
        case 0:
        case 1: *st = fold_binary(cx, n, e); break;
        case 2: *st = fold_unary(cx, n, e); break;
        case 3: *st = fold_reduce(cx, n, e); break;
        default: *st = fold_variadic(cx, n, e); break;
        }
        return 1;
    }
    return 0;
}
