/*
 * cast_stochastic.c — ts_cast_stochastic: f32 rounded to bf16 or f16 stochastically, the rounding
 * of 16-bit weights, gradients and optimizer state as a node of the graph.
 *
 *   cast_stochastic(x f32, step) -> y [x's shape], bf16 or f16
 *   attrs: i[0] = the target dtype (TS_BF16 / TS_F16), i[1] = seed, i[2] = key (64-bit patterns)
 *
 * y_i is one of the two target values nearest x_i, the one farther from zero with probability
 * (|x_i| - lo) / (hi - lo), where lo <= |x_i| < hi are the neighbouring target magnitudes; so
 * E[y_i] = x_i, and a value the target holds exactly comes back unchanged. +-inf and magnitudes
 * above the target's largest finite value (bf16 3.39e38, f16 65504) are rounded as ts_cast rounds
 * them (to nearest even: the largest value or inf); a NaN stays a quiet NaN of its sign. The
 * random bits of element i are u32_i of ops/counter_rng.h under
 *   key64 = mix64(mix64(mix64(seed ^ SR_DOMAIN) ^ key) ^ step)
 * (SR_DOMAIN keeps them apart from dropout's masks): a pure function of (seed, step, key, i), not
 * of the thread count, the device layout or the node's position in the graph. The step is read
 * at run time from the one-element input (i64, i32, or f32 truncated toward zero: the
 * optimizers' step counters are f32). The key names the value being rounded across runs, stages
 * and replicas: ts_cast_stochastic_key(name), the 64-bit FNV-1a hash of the parameter's name (a
 * value id or node index would move when a graph is built otherwise or split into stages).
 * Gradient: straight through, gx = cast(gy, f32) (as ts_cast's); none for step.
 */
#include "ops/counter_rng.h"
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* Mixed into the seed so that cast_stochastic's bits differ from dropout's for equal numbers. */
#define SR_DOMAIN 0x243f6a8885a308d3ull

static ts_status infer_cast_sr(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]], *s = &g->vals[n->in[1]];
    int64_t to = n->attr.i[0];
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op cast_stochastic: input %s has dtype %s; this op rounds f32",
                      VS(g, n->in[0]), ts_dtype_name(x->dtype));
    if (to != TS_BF16 && to != TS_F16)
        return ts_err(TS_ERR_DTYPE, "op cast_stochastic: target dtype %s (%lld) for %s; it rounds to bf16 or f16",
                      to >= 0 && to < TS_DTYPE_COUNT ? ts_dtype_name((ts_dtype)to) : "invalid", (long long)to,
                      VS(g, n->in[0]));
    if (s->dtype != TS_I64 && s->dtype != TS_I32 && s->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op cast_stochastic: step %s has dtype %s; it takes i64, i32 or f32",
                      VS(g, n->in[1]), ts_dtype_name(s->dtype));
    if (ts_val_numel(s) != 1)
        return ts_err(TS_ERR_SHAPE, "op cast_stochastic: step %s must hold one element", VS(g, n->in[1]));
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = (ts_dtype)to;
    o->ndim = x->ndim;
    if (x->ndim) memcpy(o->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    return TS_OK;
}

/* The rounding, per element, for f32 bits u and 32 random bits r. With a = |x|'s bits and s the
 * number of low bits of a's significand the target drops, |x| = (t + rem / 2^s) gap, t the
 * target's magnitude below |x| and 0 <= rem < 2^s; the result is t + 1 when r < rem 2^(32 - s),
 * i.e. with probability rem / 2^s, else t (a carry into the exponent is the next binade's first
 * value, as it should be).
 *   bf16: s = 16 everywhere (its subnormals are f32's, truncated): exact probabilities.
 *   f16: s = 13 for normal results (|x| >= 2^-14); below, the gap is 2^-24 and s = 126 - E (E
 *        a's exponent field, 1 for f32 subnormals): exact while s <= 32 (|x| >= 2^-33); beyond,
 *        rem 2^(32 - s) is truncated to an integer, a bias under 2^-32 of the gap 2^-24. */
static inline uint16_t sr_bf16(uint32_t u, uint32_t r) {
    float x;
    memcpy(&x, &u, 4);
    uint16_t up = (uint16_t)((r >> 16) < (u & 0xffffu));
    uint16_t sr = (uint16_t)((u >> 16) + up);
    return (u & 0x7fffffffu) > 0x7f7f0000u ? ts_f32_bf16(x) : sr; /* NaN, inf, > the largest */
}

static inline uint16_t sr_f16(uint32_t u, uint32_t r) {
    uint32_t a = u & 0x7fffffffu, e = a >> 23, sign = (u >> 16) & 0x8000u;
    uint32_t m = (a & 0x7fffffu) | (e ? 0x800000u : 0u); /* |x| = m 2^(max(E, 1) - 150), m < 2^24 */
    uint32_t s = e >= 113 ? 13 : 126 - (e ? e : 1);       /* 13 .. 125 */
    uint32_t sc = s < 31 ? s : 31;                        /* shifts stay in 32 bits: past 24, t = 0 */
    uint32_t t = m >> sc, rem = m & ((1u << sc) - 1);     /* and rem = m */
    uint32_t thr = s <= 32 ? rem << (32 - s) : rem >> (s - 32 < 31 ? s - 32 : 31);
    uint32_t base = e >= 113 ? (e - 113) << 10 : 0;       /* t counts the implicit bit: 0x400 */
    uint32_t sr = base + t + (r < thr);
    /* past 65504, ts_f32_f16's nearest-even: a quiet NaN, inf from 65520 (the tie goes to the
     * even inf), else 65504 */
    uint32_t big = a > 0x7f800000u ? 0x7e00u : a >= 0x477ff000u ? 0x7c00u : 0x7bffu;
    return (uint16_t)(sign | (a > 0x477fe000u ? big : sr));
}

/* y[0 .. n) = x rounded to bf16 (f16 when f16) with the bits of key; OpenMP over chunks of
 * TS_RNG_CHUNK with a static schedule: the bits depend only on the element index. */
TS_SIMD_CLONES
static void cast_sr_f32(const float *x, uint16_t *y, int64_t n, uint64_t key, int f16) {
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    int64_t nchunks = (n + TS_RNG_CHUNK - 1) / TS_RNG_CHUNK;
#pragma omp parallel for schedule(static) if (nchunks > 1)
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t start = c * TS_RNG_CHUNK;
        uint32_t len = (uint32_t)(n - start < TS_RNG_CHUNK ? n - start : TS_RNG_CHUNK);
        uint32_t lo = (uint32_t)start, hi = (uint32_t)((uint64_t)start >> 32) ^ k1;
        const uint32_t *xs = (const uint32_t *)(const void *)(x + start);
        uint16_t *ys = y + start;
        if (f16) {
#pragma omp simd
            for (uint32_t j = 0; j < len; j++) ys[j] = sr_f16(xs[j], ts_rng_u32(lo + j, hi, k0));
        } else {
#pragma omp simd
            for (uint32_t j = 0; j < len; j++) ys[j] = sr_bf16(xs[j], ts_rng_u32(lo + j, hi, k0));
        }
    }
}

/* The step input as an integer: i64, i32, or f32 truncated toward zero (NaN: 0, saturating). */
static int64_t step_of(ts_dtype dt, const void *p) {
    if (dt == TS_I64) return *(const int64_t *)p;
    if (dt == TS_I32) return *(const int32_t *)p;
    double f = *(const float *)p;
    return f != f ? 0 : f >= 9.2e18 ? INT64_MAX : f <= -9.2e18 ? INT64_MIN : (int64_t)f;
}

static ts_status cast_sr_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->out[0]]);
    uint64_t step = (uint64_t)step_of(k->g->vals[n->in[1]].dtype, k->in[1]);
    uint64_t seed = (uint64_t)n->attr.i[1], key = (uint64_t)n->attr.i[2];
    uint64_t key64 = ts_rng_key(seed ^ SR_DOMAIN, key, step);
    cast_sr_f32(k->in[0], k->out[0], cnt, key64, n->attr.i[0] == TS_F16);
    return TS_OK;
}

static ts_status grad_cast_sr(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    (void)n;
    if (go[0] != TS_NONE) gi[0] = ts_cast(g, go[0], TS_F32);
    return TS_OK;
}

const ts_op_def ts_opdef_cast_stochastic = {"cast_stochastic", 2, 2, 1, TS_OPF_ELEMENTWISE, infer_cast_sr,
                                            grad_cast_sr, cast_sr_kernel, NULL};

ts_value ts_cast_stochastic(ts_graph *g, ts_value x, ts_value step, ts_dtype dtype, uint64_t seed, uint64_t key) {
    if (!g) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = dtype;
    at.i[1] = (int64_t)seed;
    at.i[2] = (int64_t)key;
    at.ni = 3;
    return ts_node_add(g, TS_OP_CAST_STOCHASTIC, 2, (int[]){x, step}, &at, NULL);
}

uint64_t ts_cast_stochastic_key(const char *name) { return ts_name_hash(name ? name : ""); }
