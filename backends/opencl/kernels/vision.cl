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
            r = v * r * (1.f / 6.f);
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
    case 0: return fabs(v);
    case 1: return -v;
    case 2: return floor(v);
    case 3: return ceil(v);
    case 4: return rint(v);
    case 5: return v > 0.f ? 1.f : v < 0.f ? -1.f : v;
    case 6: return 1.f / v;
    case 7: return sin(v);
    case 8: return cos(v);
    case 9: return tan(v);
    case 10: return asin(v);
    case 11: return acos(v);
    case 12: return atan(v);
    case 13: return sinh(v);
    case 14: return cosh(v);
    case 15: return asinh(v);
    case 16: return acosh(v);
    case 17: return atanh(v);
    case 18: return erf(v);
    case 19: return softplus_f(v);
    case 20: return v / (1.f + fabs(v));
    case 21: return v > 0.f ? v : a * expm1(v);
    case 22: return b * (v > 0.f ? v : a * expm1(v));
    case 23: return (v > 0.f ? v : 0.f) + fmin(0.f, a * expm1(v / a));
    case 24: return v < 0.f ? a * v : v;
    case 25: return v > a ? v : 0.f;
    case 26: return v < -a ? v + b : v > a ? v - b : 0.f;
    }
    return v;
}

inline float math_d(int fn, float a, float b, float v, float w) {
    switch (fn) {
    case 0: return v > 0.f ? 1.f : v < 0.f ? -1.f : 0.f;
    case 1: return -1.f;
    case 6: return -w * w;
    case 7: return cos(v);
    case 8: return -sin(v);
    case 9: return 1.f + w * w;
    case 10: return 1.f / sqrt(1.f - v * v);
    case 11: return -1.f / sqrt(1.f - v * v);
    case 12: return 1.f / (1.f + v * v);
    case 13: return cosh(v);
    case 14: return sinh(v);
    case 15: return 1.f / sqrt(v * v + 1.f);
    case 16: return 1.f / sqrt(v * v - 1.f);
    case 17: return 1.f / (1.f - v * v);
    case 18: return 1.1283791670955126f * exp(-v * v);
    case 19: return 1.f / (1.f + exp(-v));
    case 20: return 1.f / ((1.f + fabs(v)) * (1.f + fabs(v)));
    case 21: return v > 0.f ? 1.f : a * exp(v);
    case 22: return v > 0.f ? b : b * a * exp(v);
    case 23: return v > 0.f ? 1.f : exp(v / a);
    case 24: return v < 0.f ? a : 1.f;
    case 25: return v > a ? 1.f : 0.f;
    case 26: return v < -a || v > a ? 1.f : 0.f;
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
    case 0: *q = a == b; return;                                                                   \
    case 1: *q = a < b; return;                                                                    \
    case 2: *q = a <= b; return;                                                                   \
    case 3: *q = a > b; return;                                                                    \
    case 4: *q = a >= b; return;                                                                   \
    case 5: *q = (a != 0) && (b != 0); return;                                                     \
    case 6: *q = (a != 0) || (b != 0); return;                                                     \
    case 7: *q = (a != 0) != (b != 0); return;

inline void bin_f32(int op, float a, float b, __global float *o, __global uchar *q) {
    switch (op) {
    BIN_COMMON(float)
    case 8: *o = fmin_nan(a, b); return;
    case 9: *o = fmax_nan(a, b); return;
    case 10: *o = fmod_py(a, b); return;
    case 11: *o = fmod(a, b); return;
    case 12: *o = a + b; return;
    case 13: *o = a - b; return;
    case 14: *o = a * b; return;
    case 15: *o = a / b; return;
    }
}

#define BIN_INT(SUF, T, U, W, SIGNED)                                                              \
    inline T fmod_##SUF(T a, T b) { return SIGNED && b == (T)-1 ? 0 : (T)(a % b); }                \
    inline void bin_##SUF(int op, T a, T b, __global T *o, __global uchar *q, __global int *err, int tag, long i) { \
        if ((op == 10 || op == 11 || op == 15) && b == 0) {                                        \
            set_err(err, tag, i, 0);                                                               \
            *o = 0;                                                                                \
            return;                                                                                \
        }                                                                                          \
        switch (op) {                                                                              \
        BIN_COMMON(T)                                                                              \
        case 8: *o = b < a ? b : a; return;                                                        \
        case 9: *o = b > a ? b : a; return;                                                        \
        case 10: {                                                                                 \
            T r = fmod_##SUF(a, b);                                                                \
            *o = r != 0 && ((r < 0) != (b < 0)) ? (T)(r + b) : r;                                  \
            return;                                                                                \
        }                                                                                          \
        case 11: *o = fmod_##SUF(a, b); return;                                                    \
        case 12: *o = (T)((U)a + (U)b); return;                                                    \
        case 13: *o = (T)((U)a - (U)b); return;                                                    \
        case 14: *o = (T)((U)a * (U)b); return;                                                    \
        case 15: *o = SIGNED && b == (T)-1 ? (T)(0 - (U)a) : (T)(a / b); return;                   \
        case 16: *o = b < 0 || b >= (W) ? 0 : (T)((U)a << b); return;                              \
        case 17: *o = b < 0 || b >= (W) ? 0 : (T)((U)a >> b); return;                              \
        }                                                                                          \
    }                                                                                              \
    __kernel void binary_##SUF(BUFARG(T, a), BUFARG(T, b), BUFARG(T, o), bc_t g, int op, __global int *err, int tag) { \
        long i = get_global_id(0);                                                                 \
        if (i >= g.n) return;                                                                      \
        bin_##SUF(op, BUF(T, a)[bc_off(&g, 0, i)], BUF(T, b)[bc_off(&g, 1, i)], BUF(T, o) + i,      \
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
    float v = test < 2 ? BUF(float, x)[i] : 0.f;
    BUF(uchar, y)[i] = test == 0 ? v != v : test == 1 ? (pos && v == INFINITY) || (neg && v == -INFINITY)
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
