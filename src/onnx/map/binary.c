/*
 * binary.c — ONNX mappings of the elementwise ops of two or more inputs, with numpy broadcasting:
 * Add, Sub, Mul, Div, Pow; the comparisons, And / Or / Xor (and Not, their one-input companion),
 * Mod and BitShift on ts_binary; the variadic Max, Min, Sum, Mean; Where.
 *
 * Known inputs are computed on the host (shape arithmetic in int64, floats in double); graph
 * values take f32 (Add, Sub, Mul, Div and ts_binary's ops also i32, i64 and u8 / BOOL; Pow an
 * integer exponent, cast to f32; comparisons, Min / Max and fmod also f16 / bf16, widened to f32
 * where that is exact) and any other dtype is refused as unsupported.
 */

#include "onnx/map/map.h"

#include <math.h>

static int is_int(ts_dtype d) { return d == TS_I32 || d == TS_I64 || d == TS_U8; }
static int is_float(ts_dtype d) { return d == TS_F32 || d == TS_F16 || d == TS_BF16; }

/* ------------------------------------------------------------------ Add, Sub, Mul, Div, Pow */

static ts_status arith(ts_onnx_ctx *cx, const ts_onnx_node *n, onnx_binop op,
                        ts_value (*build)(ts_graph *, ts_value, ts_value)) {
    int64_t a[TS_MAX_DIMS], b[TS_MAX_DIMS], o[TS_MAX_DIMS];
    int ra = onnx_in_shape(cx, n, 0, a), rb = onnx_in_shape(cx, n, 1, b);
    onnx_attr_ignore(cx, n, "consumed_inputs"); /* opset < 7 bookkeeping */
    if (onnx_attr_has(cx, n, "broadcast") || onnx_attr_has(cx, n, "axis"))
        return onnx_unsupported(cx, n, "the pre-opset-7 'broadcast' / 'axis' attributes");
    if (onnx_bcast(ra, a, rb, b, o) < 0) return onnx_invalid(cx, n, "the input shapes do not broadcast");
    ts_dtype da = onnx_in_dtype(cx, n, 0), db = onnx_in_dtype(cx, n, 1);
    if (op != ONNX_POW && da != db) return onnx_invalid(cx, n, "the inputs differ in dtype (%s, %s)", ts_dtype_name(da), ts_dtype_name(db));
    if (onnx_all_known(cx, n)) {
        if (!onnx_fold_limit(cx, n, onnx_bcast(ra, a, rb, b, o), o)) return TS_ERR_UNSUPPORTED;
        return onnx_set_known(cx, n, 0, onnx_host_binary(op, onnx_known(cx, n, 0), onnx_known(cx, n, 1), da));
    }
    ts_graph *g = cx->g;
    if (op != ONNX_POW && is_int(da)) { /* integers: ts_binary (wrapping, division truncated) */
        static const ts_binop ops[] = {[ONNX_ADD] = TS_BIN_ADD, [ONNX_SUB] = TS_BIN_SUB, [ONNX_MUL] = TS_BIN_MUL,
                                       [ONNX_DIV] = TS_BIN_DIV};
        return onnx_set(cx, n, 0, ts_binary(g, ops[op], onnx_in(cx, n, 0), onnx_in(cx, n, 1)));
    }
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    ts_value bv = onnx_in(cx, n, 1);
    if (op == ONNX_POW && db != TS_F32) { /* an f32 base to an integer (or f16) power: the power as f32 */
        if (!is_int(db) && db != TS_F16 && db != TS_BF16) return onnx_need_f32(cx, n, 1, 1);
        bv = ts_cast(g, bv, TS_F32);
    } else if (onnx_need_f32(cx, n, 1, 1)) {
        return TS_ERR_UNSUPPORTED;
    }
    return onnx_set(cx, n, 0, build(g, onnx_in(cx, n, 0), bv));
}

static ts_status imp_add(ts_onnx_ctx *cx, const ts_onnx_node *n) { return arith(cx, n, ONNX_ADD, ts_add); }
static ts_status imp_sub(ts_onnx_ctx *cx, const ts_onnx_node *n) { return arith(cx, n, ONNX_SUB, ts_sub); }
static ts_status imp_mul(ts_onnx_ctx *cx, const ts_onnx_node *n) { return arith(cx, n, ONNX_MUL, ts_mul); }
static ts_status imp_div(ts_onnx_ctx *cx, const ts_onnx_node *n) { return arith(cx, n, ONNX_DIV, ts_div); }
static ts_status imp_pow(ts_onnx_ctx *cx, const ts_onnx_node *n) { return arith(cx, n, ONNX_POW, ts_pow); }

/* ------------------------------------------------------------------ comparisons, logic, Mod, BitShift */

/* Is op on 16-bit floats of dtype d computed exactly by widening them to f32 (and rounding the
 * result back)? Comparisons, min / max and fmod: their f32 result is a value of d already. */
static int exact_in_f32(ts_dtype d, ts_binop op) {
    return (d == TS_F16 || d == TS_BF16) &&
           (op <= TS_BIN_GREATER_EQUAL || op == TS_BIN_MIN || op == TS_BIN_MAX || op == TS_BIN_FMOD);
}

/* op(a, b) with broadcasting: host_op on known inputs (hop < 0: none, build it), else ts_binary.
 * Results are BOOL (u8) for comparisons and logic (out_bool), else the inputs' dtype. */
static ts_status binary(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_binop op, int hop, int out_bool) {
    int64_t a[TS_MAX_DIMS], b[TS_MAX_DIMS], o[TS_MAX_DIMS];
    int ra = onnx_in_shape(cx, n, 0, a), rb = onnx_in_shape(cx, n, 1, b);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (onnx_bcast(ra, a, rb, b, o) < 0) return onnx_invalid(cx, n, "the input shapes do not broadcast");
    ts_dtype da = onnx_in_dtype(cx, n, 0), db = onnx_in_dtype(cx, n, 1);
    if (da != db)
        return onnx_invalid(cx, n, "the inputs differ in dtype (%s, %s)", ts_dtype_name(da), ts_dtype_name(db));
    if (hop >= 0 && onnx_all_known(cx, n))
        return onnx_set_known(cx, n, 0, onnx_host_binary((onnx_binop)hop, onnx_known(cx, n, 0), onnx_known(cx, n, 1),
                                                         out_bool ? TS_U8 : da));
    if (map_need_nonempty(cx, n, 0) || map_need_nonempty(cx, n, 1)) return TS_ERR_UNSUPPORTED;
    if (exact_in_f32(da, op)) {
        ts_graph *g = cx->g;
        ts_value y = ts_binary(g, op, ts_cast(g, onnx_in(cx, n, 0), TS_F32), ts_cast(g, onnx_in(cx, n, 1), TS_F32));
        return onnx_set(cx, n, 0, out_bool ? y : ts_cast(g, y, da));
    }
    if (!map_binary_dtype(da)) return onnx_need_dtype(cx, n, 0, (const ts_dtype[]){TS_F32, TS_I32, TS_I64, TS_U8}, 4);
    return onnx_set(cx, n, 0, ts_binary(cx->g, op, onnx_in(cx, n, 0), onnx_in(cx, n, 1)));
}

static ts_status imp_equal(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, TS_BIN_EQUAL, ONNX_EQUAL, 1); }
static ts_status imp_less(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, TS_BIN_LESS, ONNX_LESS, 1); }
static ts_status imp_less_equal(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return binary(cx, n, TS_BIN_LESS_EQUAL, ONNX_LESS_EQ, 1);
}
static ts_status imp_greater(ts_onnx_ctx *cx, const ts_onnx_node *n) { return binary(cx, n, TS_BIN_GREATER, ONNX_GREATER, 1); }
static ts_status imp_greater_equal(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    return binary(cx, n, TS_BIN_GREATER_EQUAL, ONNX_GREATER_EQ, 1);
}

static ts_status logic(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_binop op, onnx_binop hop) {
    if (onnx_in_dtype(cx, n, 0) != TS_U8 || onnx_in_dtype(cx, n, 1) != TS_U8)
        return onnx_invalid(cx, n, "the inputs are not BOOL");
    return binary(cx, n, op, hop, 1);
}
static ts_status imp_and(ts_onnx_ctx *cx, const ts_onnx_node *n) { return logic(cx, n, TS_BIN_AND, ONNX_AND); }
static ts_status imp_or(ts_onnx_ctx *cx, const ts_onnx_node *n) { return logic(cx, n, TS_BIN_OR, ONNX_OR); }
static ts_status imp_xor(ts_onnx_ctx *cx, const ts_onnx_node *n) { return logic(cx, n, TS_BIN_XOR, ONNX_XOR); }

/* Mod: fmod = 0, the sign of the divisor (integers only); fmod = 1, C's fmod. An integer divisor of
 * zero fails the run (ts_binary); on known inputs fold.c's host arithmetic gives 0. */
static ts_status imp_mod(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int fm = onnx_attr_int(cx, n, "fmod", 0) != 0;
    if (!fm && is_float(onnx_in_dtype(cx, n, 0))) return onnx_invalid(cx, n, "fmod = 0 on floating-point inputs");
    return binary(cx, n, fm ? TS_BIN_FMOD : TS_BIN_MOD, fm ? ONNX_FMOD : ONNX_MOD, 0);
}

static ts_status imp_bitshift(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const char *dir = onnx_attr_string(cx, n, "direction", "");
    int left = !strcmp(dir, "LEFT");
    if (!left && strcmp(dir, "RIGHT")) return onnx_invalid(cx, n, "direction '%s' is neither LEFT nor RIGHT", dir);
    if (!is_int(onnx_in_dtype(cx, n, 0))) return onnx_invalid(cx, n, "the inputs are not unsigned integers");
    return binary(cx, n, left ? TS_BIN_SHL : TS_BIN_SHR, -1, 0);
}

/* ------------------------------------------------------------------ variadic */

/* Max / Min / Sum / Mean of n >= 1 inputs with broadcasting, left to right. */
static ts_status variadic(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_binop op, onnx_binop hop, int mean) {
    int m = onnx_nin(n);
    int64_t sh[TS_MAX_DIMS], s[TS_MAX_DIMS], o[TS_MAX_DIMS];
    if (m < 1) return onnx_invalid(cx, n, "no inputs");
    onnx_attr_ignore(cx, n, "consumed_inputs");
    int r = onnx_in_shape(cx, n, 0, sh);
    ts_dtype d = onnx_in_dtype(cx, n, 0);
    for (int k = 0; k < m; k++) {
        if (!onnx_has_in(n, k)) return onnx_invalid(cx, n, "input %d is absent", k);
        int rk = onnx_in_shape(cx, n, k, s);
        if (onnx_in_dtype(cx, n, k) != d) return onnx_invalid(cx, n, "the inputs differ in dtype");
        if ((r = onnx_bcast(r, sh, rk, s, o)) < 0) return onnx_invalid(cx, n, "the input shapes do not broadcast");
        memcpy(sh, o, sizeof sh);
    }
    if (mean && !is_float(d)) return onnx_invalid(cx, n, "Mean of %s inputs", ts_dtype_name(d));
    if (onnx_all_known(cx, n)) {
        ts_tensor *acc = ts_tensor_from(d, onnx_known(cx, n, 0)->ndim, onnx_known(cx, n, 0)->shape,
                                        onnx_known(cx, n, 0)->data);
        for (int k = 1; acc && k < m; k++) {
            ts_tensor *next = onnx_host_binary(hop, acc, onnx_known(cx, n, k), d);
            ts_tensor_free(acc);
            acc = next;
        }
        for (int64_t i = 0, c = acc ? ts_tensor_numel(acc) : 0; mean && i < c; i++)
            onnx_put_f64(acc, i, onnx_get_f64(acc, i) / m);
        return onnx_set_known(cx, n, 0, acc);
    }
    int widen = exact_in_f32(d, op);
    if (!widen && (!map_binary_dtype(d) || (mean && d != TS_F32)))
        return onnx_need_dtype(cx, n, 0, (const ts_dtype[]){TS_F32, TS_I32, TS_I64, TS_U8}, mean ? 1 : 4);
    for (int k = 0; k < m; k++)
        if (map_need_nonempty(cx, n, k)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value acc = onnx_in(cx, n, 0);
    if (widen) acc = ts_cast(g, acc, TS_F32);
    for (int k = 1; k < m; k++)
        acc = ts_binary(g, op, acc, widen ? ts_cast(g, onnx_in(cx, n, k), TS_F32) : onnx_in(cx, n, k));
    if (mean && m > 1) acc = ts_div(g, acc, map_scalar(g, TS_F32, m));
    if (widen) acc = ts_cast(g, acc, d);
    return onnx_set(cx, n, 0, acc);
}

static ts_status imp_max(ts_onnx_ctx *cx, const ts_onnx_node *n) { return variadic(cx, n, TS_BIN_MAX, ONNX_MAX, 0); }
static ts_status imp_min(ts_onnx_ctx *cx, const ts_onnx_node *n) { return variadic(cx, n, TS_BIN_MIN, ONNX_MIN, 0); }
static ts_status imp_sum(ts_onnx_ctx *cx, const ts_onnx_node *n) { return variadic(cx, n, TS_BIN_ADD, ONNX_ADD, 0); }
static ts_status imp_mean(ts_onnx_ctx *cx, const ts_onnx_node *n) { return variadic(cx, n, TS_BIN_ADD, ONNX_ADD, 1); }

/* ------------------------------------------------------------------ Not */

static ts_status imp_not(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (onnx_in_dtype(cx, n, 0) != TS_U8) return onnx_invalid(cx, n, "the input is not BOOL");
    if (k) {
        ts_tensor *t = ts_tensor_new(TS_U8, k->ndim, k->shape);
        for (int64_t i = 0, c = ts_tensor_numel(k); t && i < c; i++)
            ((uint8_t *)t->data)[i] = ((uint8_t *)k->data)[i] == 0;
        return onnx_set_known(cx, n, 0, t);
    }
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_not(cx->g, onnx_in(cx, n, 0)));
}

/* ------------------------------------------------------------------ Where */

static ts_status imp_where(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t s[3][TS_MAX_DIMS], t[TS_MAX_DIMS], u[TS_MAX_DIMS];
    int r0 = onnx_in_shape(cx, n, 0, s[0]), r1 = onnx_in_shape(cx, n, 1, s[1]), r2 = onnx_in_shape(cx, n, 2, s[2]);
    int nt = onnx_bcast(r0, s[0], r1, s[1], t);
    if (nt < 0 || onnx_bcast(nt, t, r2, s[2], u) < 0) return onnx_invalid(cx, n, "the shapes do not broadcast");
    if (onnx_in_dtype(cx, n, 0) != TS_U8) return onnx_invalid(cx, n, "the condition is not BOOL");
    if (onnx_in_dtype(cx, n, 1) != onnx_in_dtype(cx, n, 2)) return onnx_invalid(cx, n, "X and Y differ in dtype");
    if (onnx_all_known(cx, n)) {
        if (!onnx_fold_limit(cx, n, onnx_bcast(nt, t, r2, s[2], u), u)) return TS_ERR_UNSUPPORTED;
        return onnx_set_known(cx, n, 0, onnx_host_where(onnx_known(cx, n, 0), onnx_known(cx, n, 1), onnx_known(cx, n, 2)));
    }
    return onnx_set(cx, n, 0, ts_select(cx->g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), onnx_in(cx, n, 2)));
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"Add", 9, 17, imp_add},
    {"Sub", 9, 17, imp_sub},
    {"Mul", 9, 17, imp_mul},
    {"Div", 9, 17, imp_div},
    {"Pow", 9, 17, imp_pow},
    {"Equal", 9, 17, imp_equal},
    {"Less", 9, 17, imp_less},
    {"LessOrEqual", 12, 17, imp_less_equal},
    {"Greater", 9, 17, imp_greater},
    {"GreaterOrEqual", 12, 17, imp_greater_equal},
    {"Not", 9, 17, imp_not},
    {"And", 9, 17, imp_and},
    {"Or", 9, 17, imp_or},
    {"Xor", 9, 17, imp_xor},
    {"Mod", 10, 17, imp_mod},
    {"BitShift", 11, 17, imp_bitshift},
    {"Max", 9, 17, imp_max},
    {"Min", 9, 17, imp_min},
    {"Sum", 9, 17, imp_sum},
    {"Mean", 9, 17, imp_mean},
    {"Where", 9, 17, imp_where},
};
const onnx_family onnx_family_binary = {"binary", ops, (int)(sizeof ops / sizeof *ops)};
