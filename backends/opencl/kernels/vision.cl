/*
 * vision.cl — the elementwise ops of imported (ONNX) vision models: clip, hard_sigmoid,
 * hard_swish and hard_act_grad (src/ops/hardact.c), math and math_grad (mathfn.c: fn codes are
 * ts_math_fn), binary (binary.c: op codes are ts_binop; f32, i32, i64, u8), predicate
 * (predicate.c) and select (select.c). One work-item per output element.
 */
/* hard_act's op: OP_CLIP, OP_HARD_SIGMOID or OP_HARD_SWISH, tessera's op ids (program.c). */
__kernel void hard_act(BUFARG(float, x), BUFARG(float, gy), BUFARG(float, y), long n, int op, float a, float b) {
    long i = get_global_id(0);
    if (i >= n) return;
    float v = BUF(float, x)[i], r;
    if (!gy_p) {
        if (op == OP_CLIP) {
            r = v < a ? a : v;
            r = r > b ? b : r;
        } else if (op == OP_HARD_SIGMOID) {
            r = a * v + b;
            r = r < 0.f ? 0.f : r;
            r = r > 1.f ? 1.f : r;
        } else {
            r = v + 3.f;
            r = r < 0.f ? 0.f : r;
            r = r > 6.f ? 6.f : r;
            r = v * r / 6.f; /* the CPU's order (ops/hardact.c) */
        }
    } else {
        float g = BUF(float, gy)[i];
        if (op == OP_CLIP) r = v >= a && v <= b ? g : 0.f;
        else if (op == OP_HARD_SIGMOID) {
            float t = a * v + b;
            r = t > 0.f && t < 1.f ? g * a : 0.f;
        } else r = v < -3.f ? 0.f : v > 3.f ? g : g * (2.f * v + 3.f) * (1.f / 6.f);
    }
    BUF(float, y)[i] = r;
}

inline float softplus_f(float v) { return (v > 0.f ? v : 0.f) + log1p(exp(-fabs(v))); }

inline float math_f(int fn, float a, float b, float v) {
    switch (fn) {
    case TS_MATH_ABS: return fabs(v);
    case TS_MATH_NEG: return -v;
    case TS_MATH_FLOOR: return floor(v);
    case TS_MATH_CEIL: return ceil(v);
    case TS_MATH_ROUND: return rint(v);
    case TS_MATH_SIGN: return v > 0.f ? 1.f : v < 0.f ? -1.f : v;
    case TS_MATH_RECIPROCAL: return 1.f / v;
    case TS_MATH_SIN: return sin(v);
    case TS_MATH_COS: return cos(v);
    case TS_MATH_TAN: return tan(v);
    case TS_MATH_ASIN: return asin(v);
    case TS_MATH_ACOS: return acos(v);
    case TS_MATH_ATAN: return atan(v);
    case TS_MATH_SINH: return sinh(v);
    case TS_MATH_COSH: return cosh(v);
    case TS_MATH_ASINH: return asinh(v);
    case TS_MATH_ACOSH: return acosh(v);
    case TS_MATH_ATANH: return atanh(v);
    case TS_MATH_ERF: return erf(v);
    case TS_MATH_SOFTPLUS: return softplus_f(v);
    case TS_MATH_SOFTSIGN: return v / (1.f + fabs(v));
    case TS_MATH_ELU: return v > 0.f ? v : a * expm1(v);
    case TS_MATH_SELU: return b * (v > 0.f ? v : a * expm1(v));
    case TS_MATH_CELU: return (v > 0.f ? v : 0.f) + fmin(0.f, a * expm1(v / a));
    case TS_MATH_LEAKY_RELU: return v < 0.f ? a * v : v;
    case TS_MATH_THRESHOLDED_RELU: return v > a ? v : 0.f;
    case TS_MATH_SHRINK: return v < -a ? v + b : v > a ? v - b : 0.f;
    }
    return v;
}

inline float math_d(int fn, float a, float b, float v, float w) {
    switch (fn) {
    case TS_MATH_ABS: return v > 0.f ? 1.f : v < 0.f ? -1.f : 0.f;
    case TS_MATH_NEG: return -1.f;
    case TS_MATH_RECIPROCAL: return -w * w;
    case TS_MATH_SIN: return cos(v);
    case TS_MATH_COS: return -sin(v);
    case TS_MATH_TAN: return 1.f + w * w;
    case TS_MATH_ASIN: return 1.f / sqrt(1.f - v * v);
    case TS_MATH_ACOS: return -1.f / sqrt(1.f - v * v);
    case TS_MATH_ATAN: return 1.f / (1.f + v * v);
    case TS_MATH_SINH: return cosh(v);
    case TS_MATH_COSH: return sinh(v);
    case TS_MATH_ASINH: return 1.f / sqrt(v * v + 1.f);
    case TS_MATH_ACOSH: return 1.f / sqrt(v * v - 1.f);
    case TS_MATH_ATANH: return 1.f / (1.f - v * v);
    case TS_MATH_ERF: return 1.1283791670955126f * exp(-v * v);
    case TS_MATH_SOFTPLUS: return 1.f / (1.f + exp(-v));
    case TS_MATH_SOFTSIGN: return 1.f / ((1.f + fabs(v)) * (1.f + fabs(v)));
    case TS_MATH_ELU: return v > 0.f ? 1.f : a * exp(v);
    case TS_MATH_SELU: return v > 0.f ? b : b * a * exp(v);
    case TS_MATH_CELU: return v > 0.f ? 1.f : exp(v / a);
    case TS_MATH_LEAKY_RELU: return v < 0.f ? a : 1.f;
    case TS_MATH_THRESHOLDED_RELU: return v > a ? 1.f : 0.f;
    case TS_MATH_SHRINK: return v < -a || v > a ? 1.f : 0.f;
    }
    return 0.f;
}

/* math (gy absent) or math_grad(x, y, gy) */
__kernel void math_fn(BUFARG(float, x), BUFARG(float, yv), BUFARG(float, gy), BUFARG(float, o), long n, int fn,
                      float a, float b) {
    long i = get_global_id(0);
    if (i >= n) return;
    float v = BUF(float, x)[i];
    if (!gy_p) BUF(float, o)[i] = math_f(fn, a, b, v);
    else BUF(float, o)[i] = BUF(float, gy)[i] * math_d(fn, a, b, v, yv_p ? BUF(float, yv)[i] : 0.f);
}

/* ------------------------------------------------------------------ binary */

inline float fmin_nan(float a, float b) { return a != a ? a : b != b ? b : b < a ? b : a; }
inline float fmax_nan(float a, float b) { return a != a ? a : b != b ? b : b > a ? b : a; }
inline float fmod_py(float a, float b) {
    float r = fmod(a, b);
    return r != 0.f && ((r < 0.f) != (b < 0.f)) ? r + b : r;
}

/* comparisons and logic write u8; the rest write T */
#define BIN_COMMON(T)                                                                              \
    case TS_BIN_EQUAL: *q = a == b; return;                                                        \
    case TS_BIN_LESS: *q = a < b; return;                                                          \
    case TS_BIN_LESS_EQUAL: *q = a <= b; return;                                                   \
    case TS_BIN_GREATER: *q = a > b; return;                                                       \
    case TS_BIN_GREATER_EQUAL: *q = a >= b; return;                                                \
    case TS_BIN_AND: *q = (a != 0) && (b != 0); return;                                            \
    case TS_BIN_OR: *q = (a != 0) || (b != 0); return;                                             \
    case TS_BIN_XOR: *q = (a != 0) != (b != 0); return;

inline void bin_f32(int op, float a, float b, __global float *o, __global uchar *q) {
    switch (op) {
    BIN_COMMON(float)
    case TS_BIN_MIN: *o = fmin_nan(a, b); return;
    case TS_BIN_MAX: *o = fmax_nan(a, b); return;
    case TS_BIN_MOD: *o = fmod_py(a, b); return;
    case TS_BIN_FMOD: *o = fmod(a, b); return;
    case TS_BIN_ADD: *o = a + b; return;
    case TS_BIN_SUB: *o = a - b; return;
    case TS_BIN_MUL: *o = a * b; return;
    case TS_BIN_DIV: *o = a / b; return;
    }
}

#define BIN_INT(SUF, T, U, W, SIGNED)                                                              \
    inline T fmod_##SUF(T a, T b) { return SIGNED && b == (T)-1 ? 0 : (T)(a % b); }                \
    inline void bin_##SUF(int op, T a, T b, __global T *o, __global uchar *q, __global int *err, int tag, long i) { \
        if ((op == TS_BIN_MOD || op == TS_BIN_FMOD || op == TS_BIN_DIV) && b == 0) {               \
            set_err(err, tag, i, 0);                                                               \
            *o = 0;                                                                                \
            return;                                                                                \
        }                                                                                          \
        switch (op) {                                                                              \
        BIN_COMMON(T)                                                                              \
        case TS_BIN_MIN: *o = b < a ? b : a; return;                                               \
        case TS_BIN_MAX: *o = b > a ? b : a; return;                                               \
        case TS_BIN_MOD: {                                                                         \
            T r = fmod_##SUF(a, b);                                                                \
            *o = r != 0 && ((r < 0) != (b < 0)) ? (T)(r + b) : r;                                  \
            return;                                                                                \
        }                                                                                          \
        case TS_BIN_FMOD: *o = fmod_##SUF(a, b); return;                                           \
        case TS_BIN_ADD: *o = (T)((U)a + (U)b); return;                                            \
        case TS_BIN_SUB: *o = (T)((U)a - (U)b); return;                                            \
        case TS_BIN_MUL: *o = (T)((U)a * (U)b); return;                                            \
        case TS_BIN_DIV: *o = SIGNED && b == (T)-1 ? (T)(0 - (U)a) : (T)(a / b); return;           \
        case TS_BIN_SHL: *o = b < 0 || b >= (W) ? 0 : (T)((U)a << b); return;                      \
        case TS_BIN_SHR: *o = b < 0 || b >= (W) ? 0 : (T)((U)a >> b); return;                      \
        }                                                                                          \
    }                                                                                              \
    __kernel void binary_##SUF(BUFARG(T, a), BUFARG(T, b), BUFARG(T, o), bc_t g, int op, __global int *err, int tag) { \
        long i = get_global_id(0);                                                                 \
        if (i >= g.n) return;                                                                      \
        bin_##SUF(op, BUF(T, a)[bc_off(&g, 0, i)], BUF(T, b)[bc_off(&g, 1, i)], BUF(T, o) + i,     \
                  BUF(uchar, o) + i, err, tag, i);                                                 \
    }
BIN_INT(i32, int, uint, 32, 1)
BIN_INT(i64, long, ulong, 64, 1)
BIN_INT(u8, uchar, uchar, 8, 0)

__kernel void binary_f32(BUFARG(float, a), BUFARG(float, b), BUFARG(float, o), bc_t g, int op, __global int *err,
                         int tag) {
    long i = get_global_id(0);
    if (i >= g.n) return;
    bin_f32(op, BUF(float, a)[bc_off(&g, 0, i)], BUF(float, b)[bc_off(&g, 1, i)], BUF(float, o) + i, BUF(uchar, o) + i);
}

/* ------------------------------------------------------------------ predicate, select */

__kernel void predicate(BUFARG(char, x), BUFARG(uchar, y), long n, int test, int pos, int neg) {
    long i = get_global_id(0);
    if (i >= n) return;
    float v = test != TS_PRED_NOT ? BUF(float, x)[i] : 0.f;
    BUF(uchar, y)[i] = test == TS_PRED_ISNAN ? v != v
                     : test == TS_PRED_ISINF ? (pos && v == INFINITY) || (neg && v == -INFINITY)
                                             : BUF(uchar, x)[i] == 0;
}

__kernel void select_any(BUFARG(uchar, c), BUFARG(char, a), BUFARG(char, b), BUFARG(char, o), bc_t g, int es) {
    long i = get_global_id(0);
    if (i >= g.n) return;
    int pick = BUF(uchar, c)[bc_off(&g, 0, i)] != 0;
    long s = pick ? bc_off(&g, 1, i) : bc_off(&g, 2, i);
    __global const char *src = pick ? BUF(char, a) : BUF(char, b);
    __global char *o = BUF(char, o);
    for (int k = 0; k < es; k++) o[i * es + k] = src[s * es + k];
}
