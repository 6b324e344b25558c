/*
 * binary.c — ts_binary: elementwise ops of two operands of one dtype (f32, i32, i64 or u8) with
 * numpy broadcasting: comparisons, logic, min / max, the two remainders, integer arithmetic and
 * shifts. One op, "binary", with the function in i[0] (a ts_binop).
 *
 * Per element, for operands a and b (T their dtype):
 *   equal less less_equal greater greater_equal: a == b, a < b, ... as u8 0 / 1 (NaN compares false)
 *   and or xor: (a != 0) && (b != 0), ||, != as u8 0 / 1 (u8 operands only)
 *   min / max: the smaller / larger, NaN when either is NaN, a on ties
 *   mod:  r = fmod(a, b); r + b when r != 0 and r, b differ in sign (the sign of b, Python's %)
 *   fmod: a - b trunc(a / b) (the sign of a: C's fmod, and C's % for integers)
 *   add sub mul: a + b, a - b, a b; integers wrap (computed on the unsigned type)
 *   div: a / b; integers truncate toward zero, INT_MIN / -1 wraps to INT_MIN
 *   shl / shr: a << b, a >> b on the unsigned type of T's width; 0 when b < 0 or b >= the width
 * An integer div, mod or fmod by zero fails the run with TS_ERR_RUNTIME before any output.
 *
 * Gradients (f32 only; integer and u8 results carry none): min / max send gy to the operand
 * picked (a on ties): ga = where(pick_a, gy, 0), gb = where(pick_a, 0, gy); mod / fmod:
 * ga = gy, gb = -gy floor(a / b) (mod) or -gy trunc(a / b) (fmod); each summed to its
 * operand's shape. Comparisons and logic: no gradient. ts_binary builds f32 add / sub / mul / div
 * as ts_add / ts_sub / ts_mul / ts_div, so those never reach this op in f32.
 */
#include "ops/bcast.h"
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)
#define PAR_ELEMS 32768

static const char *const bin_names[TS_BIN_COUNT] = {
    "equal", "less", "less_equal", "greater", "greater_equal", "and", "or", "xor", "min", "max",
    "mod", "fmod", "add", "sub", "mul", "div", "shl", "shr",
};

static int is_compare(int op) { return op <= TS_BIN_GREATER_EQUAL; }
static int is_logic(int op) { return op == TS_BIN_AND || op == TS_BIN_OR || op == TS_BIN_XOR; }
static int is_int(ts_dtype t) { return t == TS_I32 || t == TS_I64 || t == TS_U8; }
static int divides(int op) { return op == TS_BIN_DIV || op == TS_BIN_MOD || op == TS_BIN_FMOD; }

static ts_status infer_binary_op(ts_graph *g, ts_node *n) {
    int64_t op = n->attr.i[0];
    if (op < 0 || op >= TS_BIN_COUNT)
        return ts_err(TS_ERR_ARG, "op binary: function id %lld is not a ts_binop (0..%d)", (long long)op,
                      TS_BIN_COUNT - 1);
    const char *name = bin_names[op];
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]];
    ts_dtype t = a->dtype;
    if (t != TS_F32 && !is_int(t))
        return ts_err(TS_ERR_DTYPE, "op binary (%s): %s has dtype %s; this op takes f32, i32, i64 or u8", name,
                      VS(g, n->in[0]), ts_dtype_name(t));
    if (b->dtype != t)
        return ts_err(TS_ERR_DTYPE, "op binary (%s): operands %s and %s have different dtypes", name,
                      VS(g, n->in[0]), VS(g, n->in[1]));
    if (is_logic((int)op) && t != TS_U8)
        return ts_err(TS_ERR_DTYPE, "op binary (%s): %s must be u8 (booleans)", name, VS(g, n->in[0]));
    if ((op == TS_BIN_SHL || op == TS_BIN_SHR) && !is_int(t))
        return ts_err(TS_ERR_DTYPE, "op binary (%s): %s must be an integer (i32, i64 or u8)", name,
                      VS(g, n->in[0]));
    int64_t sh[TS_MAX_DIMS];
    int nd = ts_broadcast_shape(a->ndim, a->shape, b->ndim, b->shape, sh);
    if (nd < 0)
        return ts_err(TS_ERR_SHAPE, "op binary (%s): shapes of %s and %s do not broadcast", name, VS(g, n->in[0]),
                      VS(g, n->in[1]));
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = is_compare((int)op) || is_logic((int)op) ? TS_U8 : t;
    o->ndim = nd;
    if (nd) memcpy(o->shape, sh, sizeof(int64_t) * (size_t)nd);
    return TS_OK;
}

/* Sign tests on a value widened to int64_t (exact for every dtype here), as functions so that
 * unsigned operands do not trip -Wtype-limits. */
static inline int neg64(int64_t v) { return v < 0; }
static inline int minus_one64(int64_t v) { return v == -1; }

/* Scalar rules, one per operand type (T, its unsigned twin U, bit width W, SIGNED 0 / 1). */
#define RULES(SUF, T, U, W, SIGNED)                                                                \
    static inline T div_##SUF(T a, T b) { return SIGNED && minus_one64(b) ? (T)(0 - (U)a) : (T)(a / b); } \
    static inline T fmod_##SUF(T a, T b) { return SIGNED && minus_one64(b) ? 0 : (T)(a % b); }    \
    static inline T mod_##SUF(T a, T b) {                                                         \
        T r = fmod_##SUF(a, b);                                                                   \
        return r != 0 && neg64(r) != neg64(b) ? (T)(r + b) : r;                                   \
    }                                                                                             \
    static inline T shl_##SUF(T a, T b) { return neg64(b) || b >= (W) ? 0 : (T)((U)a << b); }     \
    static inline T shr_##SUF(T a, T b) { return neg64(b) || b >= (W) ? 0 : (T)((U)a >> b); }
RULES(i32, int32_t, uint32_t, 32, 1)
RULES(i64, int64_t, uint64_t, 64, 1)
RULES(u8, uint8_t, uint8_t, 8, 0)

static inline float fmod_f32(float a, float b) { return fmodf(a, b); }
static inline float mod_f32(float a, float b) {
    float r = fmodf(a, b);
    return r != 0.f && ((r < 0.f) != (b < 0.f)) ? r + b : r;
}
static inline float div_f32(float a, float b) { return a / b; }
static inline float min_f32(float a, float b) { return a != a ? a : b != b ? b : b < a ? b : a; }
static inline float max_f32(float a, float b) { return a != a ? a : b != b ? b : b > a ? b : a; }
#define MIN_INT(a, b) ((b) < (a) ? (b) : (a))
#define MAX_INT(a, b) ((b) > (a) ? (b) : (a))

/* One kernel per operand type: O = op(A, B) over the rows of the broadcast, the op chosen
 * outside the loops. */
#define KERNEL(SUF, T, U, MINF, MAXF, SHL, SHR)                                                    \
    static void run_##SUF(int op, const ts_bcast *bc, const T *A, const T *B, void *out) {         \
        int64_t cols = bc->cols, sa = bc->st[0][bc->nd - 1], sb = bc->st[1][bc->nd - 1];           \
        T *O = out;                                                                                \
        uint8_t *Q = out;                                                                          \
        (void)O;                                                                                   \
        (void)Q;                                                                                   \
        _Pragma("omp parallel for schedule(static) if (bc->rows * cols > PAR_ELEMS)")              \
        for (int64_t r = 0; r < bc->rows; r++) {                                                   \
            const T *pa = A + ts_bcast_row(bc, 0, r), *pb = B + ts_bcast_row(bc, 1, r);            \
            int64_t o0 = r * cols;                                                                 \
            switch (op) {                                                                          \
            case TS_BIN_EQUAL: ROW(Q, a == b)                                                      \
            case TS_BIN_LESS: ROW(Q, a < b)                                                        \
            case TS_BIN_LESS_EQUAL: ROW(Q, a <= b)                                                 \
            case TS_BIN_GREATER: ROW(Q, a > b)                                                     \
            case TS_BIN_GREATER_EQUAL: ROW(Q, a >= b)                                              \
            case TS_BIN_AND: ROW(Q, (a != 0) && (b != 0))                                          \
            case TS_BIN_OR: ROW(Q, (a != 0) || (b != 0))                                           \
            case TS_BIN_XOR: ROW(Q, (a != 0) != (b != 0))                                          \
            case TS_BIN_MIN: ROW(O, MINF(a, b))                                                    \
            case TS_BIN_MAX: ROW(O, MAXF(a, b))                                                    \
            case TS_BIN_MOD: ROW(O, mod_##SUF(a, b))                                               \
            case TS_BIN_FMOD: ROW(O, fmod_##SUF(a, b))                                             \
            case TS_BIN_ADD: ROW(O, (T)((U)a + (U)b))                                              \
            case TS_BIN_SUB: ROW(O, (T)((U)a - (U)b))                                              \
            case TS_BIN_MUL: ROW(O, (T)((U)a * (U)b))                                              \
            case TS_BIN_DIV: ROW(O, div_##SUF(a, b))                                               \
            case TS_BIN_SHL: ROW(O, SHL(a, b))                                                     \
            case TS_BIN_SHR: ROW(O, SHR(a, b))                                                     \
            default: break;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }
#define ROW(DST, EXPR)                                                                             \
    for (int64_t j = 0; j < cols; j++) {                                                           \
        __typeof__(pa[0]) a = pa[j * sa], b = pb[j * sb];                                                        \
        DST[o0 + j] = (EXPR);                                                                      \
    }                                                                                              \
    break;
/* f32 has no shifts (refused when built); unsigned arithmetic on float is plain arithmetic */
#define NO_SHIFT(a, b) ((void)(b), a)
KERNEL(f32, float, float, min_f32, max_f32, NO_SHIFT, NO_SHIFT)
KERNEL(i32, int32_t, uint32_t, MIN_INT, MAX_INT, shl_i32, shr_i32)
KERNEL(i64, int64_t, uint64_t, MIN_INT, MAX_INT, shl_i64, shr_i64)
KERNEL(u8, uint8_t, uint8_t, MIN_INT, MAX_INT, shl_u8, shr_u8)
#undef ROW

/* The flat position of the first zero of an integer tensor, or -1. */
static int64_t first_zero(ts_dtype t, const void *p, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int z = t == TS_I32 ? ((const int32_t *)p)[i] == 0
              : t == TS_I64 ? ((const int64_t *)p)[i] == 0
                            : ((const uint8_t *)p)[i] == 0;
        if (z) return i;
    }
    return -1;
}

static ts_status binary_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    int op = (int)n->attr.i[0];
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]], *o = &g->vals[n->out[0]];
    if (divides(op) && is_int(b->dtype)) {
        int64_t z = first_zero(b->dtype, k->in[1], ts_val_numel(b));
        if (z >= 0)
            return ts_err(TS_ERR_RUNTIME, "op binary (%s): integer division by zero: element %lld of divisor %s is 0",
                          bin_names[op], (long long)z, VS(g, n->in[1]));
    }
    ts_bcast bc;
    ts_bcast_init(&bc, o->ndim, o->shape, 2, (int[]){a->ndim, b->ndim}, (const int64_t *const[]){a->shape, b->shape});
    if (bc.rows == 0 || bc.cols == 0) return TS_OK;
    switch (a->dtype) {
    case TS_F32: run_f32(op, &bc, k->in[0], k->in[1], k->out[0]); break;
    case TS_I32: run_i32(op, &bc, k->in[0], k->in[1], k->out[0]); break;
    case TS_I64: run_i64(op, &bc, k->in[0], k->in[1], k->out[0]); break;
    default: run_u8(op, &bc, k->in[0], k->in[1], k->out[0]); break;
    }
    return TS_OK;
}

static ts_status grad_binary(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    int op = (int)n->attr.i[0];
    ts_value a = n->in[0], b = n->in[1], gy = go[0];
    if (gy == TS_NONE || g->vals[a].dtype != TS_F32) return TS_OK;
    if (op == TS_BIN_MIN || op == TS_BIN_MAX) {
        ts_value zero = ts_scalar(g, 0.f);
        ts_value pick_a = ts_binary(g, op == TS_BIN_MAX ? TS_BIN_GREATER_EQUAL : TS_BIN_LESS_EQUAL, a, b);
        gi[0] = ts_sum_to(g, ts_where(g, pick_a, gy, zero), a);
        gi[1] = ts_sum_to(g, ts_where(g, pick_a, zero, gy), b);
    } else if (op == TS_BIN_MOD || op == TS_BIN_FMOD) {
        ts_value q = ts_math(g, op == TS_BIN_MOD ? TS_MATH_FLOOR : TS_MATH_SIGN, ts_div(g, a, b), 0.f, 0.f);
        if (op == TS_BIN_FMOD) /* trunc(t) = sign(t) floor(|t|) */
            q = ts_mul(g, q, ts_math(g, TS_MATH_FLOOR, ts_math(g, TS_MATH_ABS, ts_div(g, a, b), 0.f, 0.f), 0.f, 0.f));
        gi[0] = ts_sum_to(g, gy, a);
        gi[1] = ts_sum_to(g, ts_scale(g, ts_mul(g, gy, q), -1.f, 0.f), b);
    }
    return TS_OK;
}

const ts_op_def ts_opdef_binary = {"binary", 2, 2, 1, TS_OPF_ELEMENTWISE, infer_binary_op, grad_binary,
                                   binary_kernel, NULL};

ts_value ts_binary(ts_graph *g, ts_binop op, ts_value a, ts_value b) {
    if (!g || a == TS_NONE || b == TS_NONE || g->status != TS_OK) return TS_NONE;
    if ((unsigned)op >= TS_BIN_COUNT)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_binary: function id %d is not a ts_binop (0..%d)", (int)op,
                             TS_BIN_COUNT - 1);
    if (!ts_val_ok(g, a) || !ts_val_ok(g, b))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_binary (%s): operand %d is not a value of this graph",
                             bin_names[op], ts_val_ok(g, a) ? b : a);
    if (g->vals[a].dtype == TS_F32 && g->vals[b].dtype == TS_F32) {
        switch (op) {
        case TS_BIN_ADD: return ts_add(g, a, b);
        case TS_BIN_SUB: return ts_sub(g, a, b);
        case TS_BIN_MUL: return ts_mul(g, a, b);
        case TS_BIN_DIV: return ts_div(g, a, b);
        default: break;
        }
    }
    ts_attrs at = {0};
    at.i[0] = op;
    at.ni = 1;
    return ts_node_add(g, TS_OP_BINARY, 2, (int[]){a, b}, &at, NULL);
}
