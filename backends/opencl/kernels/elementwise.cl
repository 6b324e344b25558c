/*
 * elementwise.cl — add sub mul div pow (broadcasting), the unary ops and unary_grad, fused
 * chains, where, cast, dropout. One work-item per output element. (src/ops/elementwise.c,
 * fused.c, dropout.c define them.)
 */
__kernel void binary(BUFARG(float, a), BUFARG(float, b), BUFARG(float, o), bc_t g, int op) {
    long i = get_global_id(0);
    if (i >= g.n) return;
    float x = BUF(float, a)[bc_off(&g, 0, i)], y = BUF(float, b)[bc_off(&g, 1, i)], r;
    switch (op) {
    case 0: r = x + y; break;
    case 1: r = x - y; break;
    case 2: r = x * y; break;
    case 3: r = x / y; break;
    default: r = pow(x, y); break;
    }
    BUF(float, o)[i] = r;
}

__kernel void unary(BUFARG(float, x), BUFARG(float, y), long n, int op, int tanh_form, float alpha, float beta) {
    long i = get_global_id(0);
    if (i >= n) return;
    BUF(float, y)[i] = unary_f(op, tanh_form, alpha, beta, BUF(float, x)[i]);
}

/* up to 4 steps: ops[k], tanh[k], alpha[k], beta[k] */
__kernel void fused(BUFARG(float, x), BUFARG(float, y), long n, int nsteps, int4 ops, int4 tf, float4 al, float4 be) {
    long i = get_global_id(0);
    if (i >= n) return;
    float v = BUF(float, x)[i];
    int o[4] = {ops.x, ops.y, ops.z, ops.w}, t[4] = {tf.x, tf.y, tf.z, tf.w};
    float a[4] = {al.x, al.y, al.z, al.w}, b[4] = {be.x, be.y, be.z, be.w};
    for (int k = 0; k < nsteps; k++) v = unary_f(o[k], t[k], a[k], b[k], v);
    BUF(float, y)[i] = v;
}

__kernel void unary_grad(BUFARG(float, x), BUFARG(float, y), BUFARG(float, gy), BUFARG(float, gx), long n, int op,
                         int tanh_form) {
    long i = get_global_id(0);
    if (i >= n) return;
    float gg = BUF(float, gy)[i], r = 0.f;
    if (op == OP_SQRT || op == OP_EXP || op == OP_TANH || op == OP_SIGMOID) {
        float v = BUF(float, y)[i];
        r = op == OP_SQRT ? gg * 0.5f / v : op == OP_EXP ? gg * v : op == OP_TANH ? gg * (1.f - v * v)
                                                                                  : gg * v * (1.f - v);
    } else {
        float v = BUF(float, x)[i];
        if (op == OP_LOG) r = gg / v;
        else if (op == OP_RELU) r = v > 0.f ? gg : 0.f;
        else if (tanh_form) {
            float t = tanh(SQRT_2_OVER_PI * (v + 0.044715f * v * v * v));
            r = gg * (0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * SQRT_2_OVER_PI * (1.f + 3.f * 0.044715f * v * v));
        } else {
            float e = exp(-0.5f * v * v);
            r = gg * (0.5f * (1.f + erf(v * INV_SQRT_2)) + v * INV_SQRT_2PI * e);
        }
    }
    BUF(float, gx)[i] = r;
}

__kernel void where_f32(BUFARG(uchar, c), BUFARG(float, a), BUFARG(float, b), BUFARG(float, o), bc_t g) {
    long i = get_global_id(0);
    if (i >= g.n) return;
    BUF(float, o)[i] = BUF(uchar, c)[bc_off(&g, 0, i)] ? BUF(float, a)[bc_off(&g, 1, i)] : BUF(float, b)[bc_off(&g, 2, i)];
}

/* dtype codes: tessera's ts_dtype (0 f32, 1 bf16, 2 f16, 3 i32, 4 i64, 5 u8) */
inline float bf16_f32(ushort h) { return as_float((uint)h << 16); }
inline ushort f32_bf16(float f) {
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}
inline int is_int(int t) { return t >= 3; }
inline float load_f(int t, __global const char *p, long i) {
    switch (t) {
    case 0: return ((__global const float *)p)[i];
    case 1: return bf16_f32(((__global const ushort *)p)[i]);
    case 2: return vload_half(i, (__global const half *)p);
    }
    return 0.f;
}
inline long load_i(int t, __global const char *p, long i) {
    switch (t) {
    case 3: return ((__global const int *)p)[i];
    case 4: return ((__global const long *)p)[i];
    case 5: return ((__global const uchar *)p)[i];
    }
    return 0;
}
/* the conversions of src/ops/elementwise.c's cast: to an integer truncates toward zero and
 * saturates (NaN -> 0); to bf16 / f16 rounds to nearest even. */
__kernel void cast(BUFARG(char, x), BUFARG(char, y), long n, int from, int to) {
    long i = get_global_id(0);
    if (i >= n) return;
    __global const char *x = BUF(char, x);
    __global char *y = BUF(char, y);
    int fi = is_int(from);
    long l = fi ? load_i(from, x, i) : 0;
    float v = fi ? (float)l : load_f(from, x, i);
    switch (to) {
    case 0: ((__global float *)y)[i] = v; break;
    case 1: ((__global ushort *)y)[i] = f32_bf16(v); break;
    case 2: vstore_half_rte(v, i, (__global half *)y); break;
    case 3:
        ((__global int *)y)[i] = fi ? (int)clamp(l, (long)INT_MIN, (long)INT_MAX)
                                    : v != v ? 0 : v >= 2147483647.f ? INT_MAX : v <= -2147483648.f ? INT_MIN : (int)v;
        break;
    case 4:
        ((__global long *)y)[i] = fi ? l : v != v ? 0 : v >= 9223372036854775807.f ? LONG_MAX
                                                   : v <= -9223372036854775808.f ? LONG_MIN : (long)v;
        break;
    case 5:
        ((__global uchar *)y)[i] = fi ? (uchar)clamp(l, 0L, 255L) : v != v || v <= 0 ? 0 : v >= 255.f ? 255 : (uchar)v;
        break;
    }
}

inline uint fmix32(uint h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}
/* the mask of src/ops/dropout.c: chunks of 65536 elements, key = (k0, k1) from the host */
__kernel void dropout(BUFARG(float, x), BUFARG(float, y), long n, uint k0, uint k1, uint thr, float scale) {
    long i = get_global_id(0);
    if (i >= n) return;
    ulong start = (ulong)i & ~(ulong)65535;
    uint lo = (uint)start, hi = (uint)(start >> 32) ^ k1, j = (uint)((ulong)i - start);
    uint h = fmix32(fmix32((lo + j) * 0x9e3779b9u + k0) ^ hi);
    BUF(float, y)[i] = (h >> 8) >= thr ? BUF(float, x)[i] * scale : 0.f;
}
