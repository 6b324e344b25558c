/*
 * matmul_int8.c — matmul_i8dyn: a matmul of f32 activations by an f32 weight, computed in int8 with
 * dynamic quantization (the weights per output channel, the activations per tensor and per run,
 * no calibration), as ONNX Runtime's quantize_dynamic and PyTorch's dynamic Linear do it.
 *
 *   matmul_i8dyn(a, w, bias or absent) -> y
 *     a    [..., M, K] f32 (the activations; contiguous, rows R = numel(a) / K)
 *     w    [K, N] f32 (stored [N, K] when trans_b: a Linear's [out, in]); a weight without batch dims
 *     bias [N] f32 (optional input 2; any shape [1, .., 1, N] is accepted)
 *     y    [..., M, N] f32
 *   Math, with every step in the order written (the CPU kernel, backend/cpu/matmul_int8.c, does the
 *   same operations, so the two agree up to the order of the f32 scaling and bias add):
 *     weights, per output channel n:  mw[n] = max_k |w[k, n]|,  sw[n] = mw[n] / 127 (f32),
 *                                     iw[n] = 127 / mw[n] (0 when mw[n] = 0),
 *                                     qw[k, n] = clamp(rne(w[k, n] * iw[n]), -127, 127)   (s8)
 *     activations, per tensor, per run:  ma = max |a|, sa = ma / 127, ia = 127 / ma (0 when ma = 0),
 *                                     qa[r, k] = clamp(rne(a[r, k] * ia), -127, 127)     (s8)
 *     or, with a fixed scale (a_scale > 0, calibrated: static quantization), no sweep:
 *                                     sa = a_scale, ia = 1 / a_scale (f32),
 *                                     qa[r, k] = clamp(rne(a[r, k] * ia), -127, 127)
 *                                     (values beyond +-127 sa saturate)
 *     acc[r, n] = sum_k qa[r, k] qw[k, n]   in int32 (exact: |acc| <= 127^2 K, so K <= 133144)
 *     scale[n] = (alpha * sa) * sw[n]                                                     (f32)
 *     y[r, n] = act(float(acc[r, n]) * scale[n] + bias[n])
 *   rne: round to nearest, ties to even (nearbyintf in the default rounding mode). Symmetric
 *   (no zero points): qa and qw both in [-127, 127]. A non-finite activation makes sa NaN, so the
 *   whole output is NaN (as an f32 product would be where it reads one); a non-finite weight makes
 *   its channel's sw[n] NaN, so its output column is NaN.
 * Attributes: i[0] = trans_b, i[1] = act (ts_matmul_act, as matmul's i[2]: 0 none, 1 gelu erf,
 *   2 gelu tanh, 3 relu; the GELU / ReLU ops' own evaluator here), f[0] = alpha (0 stands for 1),
 *   f[1] = a_scale (> 0: the activations' fixed scale; 0: dynamic, max |a| / 127 on every run;
 *   a negative or non-finite value is refused by the shape rule).
 * Made only by the quantization pass (graph/passes/quantize.c) in an inference program, from a
 *   matmul (after fusion, so its bias and activation come along). Inference only: no gradient
 *   (grad refuses with TS_ERR_UNSUPPORTED: rounding has no useful derivative and a training program
 *   refuses the option before it gets here).
 * The reference kernel below quantizes the weights on every call (the CPU kernel keeps them,
 *   quantized and prepacked, until a weight is written) and multiplies in plain int32 loops.
 */
#include "graph/op_attrs.h"
#include "ops/op.h"

#include <immintrin.h>
#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

enum { I8_KMAX = 133144 }; /* 127^2 * K stays within int32 */

int ts_quantizable_node(const ts_graph *g, const ts_node *n) {
    if (n->op != TS_OP_MATMUL) return 0;
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]];
    ts_attrs_matmul at = TS_NODE_ATTRS(matmul, n);
    if (a->dtype != TS_F32 || b->dtype != TS_F32 || at.trans_a || at.f32_out) return 0;
    if ((b->kind != TS_V_PARAM && b->kind != TS_V_CONST) || b->ndim != 2) return 0;
    if (a->shape[a->ndim - 1] > I8_KMAX) return 0;
    return !(n->nin > 2 && n->in[2] >= 0 && g->vals[n->in[2]].dtype != TS_F32);
}

/* ------------------------------------------------------------------ quantization helpers */

/* One chunk of each sweep, vectorised for the CPU it runs on; the OpenMP threads share the chunks. */
enum { I8_CHUNK = 65536 };

TS_SIMD_CLONES static float absmax_chunk(const float *x, int64_t n, int *bad) {
    float m = 0.f;
    int b = 0;
#pragma omp simd reduction(max : m) reduction(| : b)
    for (int64_t i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        b |= !(v <= 3.4028235e38f);
        m = v > m ? v : m;
    }
    *bad |= b;
    return m;
}

/* One chunk of q = clamp(rne(x * inv), -127, 127) as int8. The clamp comes before the rounding
 * (the same result: the bounds are integers), written so that a NaN product takes the upper bound
 * (127, a defined value; its scale is NaN), and the rounding is the conversion to int32 in the
 * default rounding mode (nearest, ties to even: rne, as nearbyintf). Two forms with equal bits:
 * AVX-512 intrinsics (16 floats a step, a masked tail), and a loop the compiler vectorises for
 * other CPUs. The loop is not enough on AVX-512: gcc 12 turns its float -> int8 conversion into
 * range compares and packs, 4.3x slower than the intrinsics on [1024, 768] (180 against 42 us,
 * one thread). */
TS_SIMD_CLONES static void quant_chunk_c(const float *x, int64_t n, float inv, int8_t *q) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] * inv;
        v = v < 127.f ? v : 127.f; /* NaN takes 127 */
        v = v > -127.f ? v : -127.f;
        q[i] = (int8_t)(int32_t)nearbyintf(v);
    }
}

__attribute__((target("avx512f"))) static void quant_chunk_512(const float *x, int64_t n, float inv, int8_t *q) {
    const __m512 s = _mm512_set1_ps(inv), hi = _mm512_set1_ps(127.f), lo = _mm512_set1_ps(-127.f);
    int64_t i = 0;
    /* min(v, 127) returns its second operand, 127, where v is NaN */
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_max_ps(_mm512_min_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), s), hi), lo);
        _mm_storeu_si128((__m128i *)(q + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_max_ps(_mm512_min_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), s), hi), lo);
        _mm512_mask_cvtepi32_storeu_epi8(q + i, m, _mm512_cvtps_epi32(v));
    }
}

static void quant_chunk(const float *x, int64_t n, float inv, int8_t *q) {
    static int avx512 = -1;
    if (avx512 < 0) avx512 = __builtin_cpu_supports("avx512f") != 0;
    (avx512 ? quant_chunk_512 : quant_chunk_c)(x, n, inv, q);
}

float ts_quant_absmax(const float *x, int64_t n) {
    float m = 0.f;
    int bad = 0;
#pragma omp parallel for reduction(max : m) reduction(| : bad) schedule(static) if (n > 4 * I8_CHUNK)
    for (int64_t i = 0; i < n; i += I8_CHUNK) {
        float c = absmax_chunk(x + i, n - i < I8_CHUNK ? n - i : I8_CHUNK, &bad);
        m = c > m ? c : m;
    }
    return bad ? NAN : m;
}

void ts_quant_s8(const float *x, int64_t n, float inv, int8_t *q) {
#pragma omp parallel for schedule(static) if (n > 4 * I8_CHUNK)
    for (int64_t i = 0; i < n; i += I8_CHUNK) quant_chunk(x + i, n - i < I8_CHUNK ? n - i : I8_CHUNK, inv, q + i);
}

void ts_quant_act_scale(const float *x, int64_t n, float a_scale, float *sa, float *ia) {
    if (a_scale > 0.f) {
        *sa = a_scale, *ia = 1.f / a_scale;
        return;
    }
    float ma = ts_quant_absmax(x, n);
    *sa = ma / 127.f, *ia = ma > 0.f ? 127.f / ma : 0.f;
}

/* Per-channel scale of a column max: sw = m / 127, *inv = 127 / m (0 when m = 0). */
static float channel_scale(float m, float *inv) {
    *inv = m > 0.f ? 127.f / m : 0.f;
    return m / 127.f;
}

ts_status ts_quant_weights_s8(const float *w, int64_t K, int64_t N, int trans_b, int8_t *qw, float *sw) {
    if (trans_b) { /* [N, K]: a channel is a row */
#pragma omp parallel for schedule(static) if (N * K > 262144)
        for (int64_t n = 0; n < N; n++) {
            float inv;
            sw[n] = channel_scale(ts_quant_absmax(w + n * K, K), &inv);
            ts_quant_s8(w + n * K, K, inv, qw + n * K);
        }
        return TS_OK;
    }
    float *inv = malloc(sizeof(float) * (size_t)(N ? N : 1)); /* [K, N]: a channel is a column */
    if (!inv) return ts_err(TS_ERR_NOMEM, "op matmul_i8dyn: out of memory quantizing a [%lld, %lld] weight",
                            (long long)K, (long long)N);
    for (int64_t n = 0; n < N; n++) sw[n] = 0.f;
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) {
            float v = fabsf(w[k * N + n]);
            sw[n] = !(v <= 3.4028235e38f) ? NAN : v > sw[n] ? v : sw[n];
        }
    for (int64_t n = 0; n < N; n++) sw[n] = channel_scale(sw[n], &inv[n]);
#pragma omp parallel for schedule(static) if (N * K > 262144)
    for (int64_t k = 0; k < K; k++)
        for (int64_t n = 0; n < N; n++) {
            float v = nearbyintf(w[k * N + n] * inv[n]);
            v = v < 127.f ? v : 127.f;
            v = v > -127.f ? v : -127.f;
            qw[k * N + n] = (int8_t)v;
        }
    free(inv);
    return TS_OK;
}

/* ------------------------------------------------------------------ shape rule */

static ts_status infer_i8(ts_graph *g, ts_node *n) {
    const ts_val *a = &g->vals[n->in[0]], *w = &g->vals[n->in[1]];
    ts_attrs_matmul_i8dyn at = TS_NODE_ATTRS(matmul_i8dyn, n);
    if (at.act < 0 || at.act >= TS_OPS_MATMUL_ACT_COUNT)
        return ts_err(TS_ERR_ARG, "op matmul_i8dyn: activation attribute i[1] = %lld; takes 0 (none), 1 (gelu erf), "
                      "2 (gelu tanh) or 3 (relu)", (long long)at.act);
    if (!(at.a_scale >= 0.f && at.a_scale <= 3.4028235e38f))
        return ts_err(TS_ERR_ARG, "op matmul_i8dyn: activation scale f[1] = %g; takes a finite scale > 0 (static "
                      "quantization) or 0 (dynamic)", (double)at.a_scale);
    if (a->dtype != TS_F32 || w->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op matmul_i8dyn: a %s and w %s must both be f32 (the op quantizes them itself)",
                      VS(g, n->in[0]), VS(g, n->in[1]));
    if (a->ndim < 2 || w->ndim != 2)
        return ts_err(TS_ERR_SHAPE, "op matmul_i8dyn: a %s needs rank >= 2 and w %s rank 2 (a weight without batch "
                      "dims)", VS(g, n->in[0]), VS(g, n->in[1]));
    int64_t K = a->shape[a->ndim - 1], Kw = w->shape[at.trans_b ? 1 : 0], N = w->shape[at.trans_b ? 0 : 1];
    if (K != Kw)
        return ts_err(TS_ERR_SHAPE, "op matmul_i8dyn: inner dims differ: a %s has K = %lld, w %s%s has K = %lld",
                      VS(g, n->in[0]), (long long)K, VS(g, n->in[1]), at.trans_b ? " (transposed)" : "",
                      (long long)Kw);
    if (K > I8_KMAX)
        return ts_err(TS_ERR_SHAPE, "op matmul_i8dyn: K = %lld is over %d, where the int32 sums could overflow",
                      (long long)K, I8_KMAX);
    if (n->nin > 2 && n->in[2] >= 0) {
        const ts_val *c = &g->vals[n->in[2]];
        int good = c->dtype == TS_F32 && c->ndim >= 1 && c->ndim <= a->ndim && c->shape[c->ndim - 1] == N;
        for (int i = 0; good && i < c->ndim - 1; i++) good = c->shape[i] == 1;
        if (!good)
            return ts_err(TS_ERR_SHAPE, "op matmul_i8dyn: bias %s must be f32 [N] = [%lld]", VS(g, n->in[2]),
                          (long long)N);
    }
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = a->ndim;
    memcpy(o->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    o->shape[a->ndim - 1] = N;
    return TS_OK;
}

static ts_status grad_i8(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin) {
    (void)g, (void)n, (void)gout, (void)gin;
    return ts_err(TS_ERR_UNSUPPORTED, "op matmul_i8dyn: no gradient: int8 matmuls are for inference only (made by "
                  "ts_compile_opts.quantize in an inference program); train the f32 model and quantize it after");
}

/* ------------------------------------------------------------------ reference kernel */

static ts_status i8_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *av = &g->vals[n->in[0]], *wv = &g->vals[n->in[1]];
    ts_attrs_matmul_i8dyn at = TS_NODE_ATTRS(matmul_i8dyn, n);
    int64_t K = av->shape[av->ndim - 1], N = wv->shape[at.trans_b ? 0 : 1], R = K ? ts_val_numel(av) / K : 0;
    const float *A = k->in[0], *W = k->in[1], *C = n->nin > 2 ? k->in[2] : NULL;
    float *Y = k->out[0];
    int8_t *qa = malloc((size_t)(R * K + 1)), *qw = malloc((size_t)(K * N + 1)), *qt = malloc((size_t)(K * N + 1));
    float *sw = malloc(sizeof(float) * (size_t)(N + 1));
    ts_status st = qa && qw && qt && sw ? TS_OK : ts_err(TS_ERR_NOMEM, "op matmul_i8dyn: out of memory");
    if (st == TS_OK) st = ts_quant_weights_s8(W, K, N, at.trans_b != 0, qw, sw);
    if (st == TS_OK) {
        float sa, ia;
        ts_quant_act_scale(A, R * K, at.a_scale, &sa, &ia);
        ts_quant_s8(A, R * K, ia, qa);
        for (int64_t j = 0; j < N; j++) { /* qt [N, K]: a channel's weights in a row */
            sw[j] = (at.alpha * sa) * sw[j];
            for (int64_t kk = 0; kk < K; kk++) qt[j * K + kk] = at.trans_b ? qw[j * K + kk] : qw[kk * N + j];
        }
        int act_op = at.act == TS_MATMUL_ACT_RELU ? TS_OP_RELU : TS_OP_GELU;
#pragma omp parallel for schedule(static) if (R * N * K > 32768)
        for (int64_t r = 0; r < R; r++) {
            for (int64_t j = 0; j < N; j++) {
                int32_t acc = 0;
                for (int64_t kk = 0; kk < K; kk++) acc += (int32_t)qa[r * K + kk] * (int32_t)qt[j * K + kk];
                Y[r * N + j] = (float)acc * sw[j] + (C ? C[j] : 0.f);
            }
            if (at.act) ts_unary_f32(act_op, at.act == TS_MATMUL_ACT_GELU_TANH, 0.f, 0.f, Y + r * N, Y + r * N, N);
        }
    }
    free(qa), free(qw), free(qt), free(sw);
    return st;
}

const ts_op_def ts_opdef_matmul_i8dyn = {"matmul_i8dyn", 2, 3, 1, 0, infer_i8, grad_i8, i8_kernel, NULL};
