/*
 * dropout.c — inverted dropout and its gradient, with a stateless mask.
 *
 *   dropout(x) -> y, same shape:   y_i = keep_i ? x_i / (1 - p) : 0
 *   dropout_grad(gy) -> gx:        gx_i = keep_i ? gy_i / (1 - p) : 0   (the same mask)
 * keep_i = (u_i >= p), u_i in [0, 1) a pure function of (graph seed, salt, run step, i): a
 * counter-based hash, so the backward regenerates the forward's mask without storing it and a
 * run is reproducible from its step. p == 0 copies x (programs compiled for inference set p = 0).
 * Attributes (both ops): f[0] = p in [0, 1), i[0] = salt (the dropout output's value id, unique
 * per dropout node), i[1] = graph seed at build time.
 * dropout_grad is not differentiable (no double backward): its grad rule is NULL.
 */
#include "ops/counter_rng.h"
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* Elements per hash chunk: a divisor of 2^32, so the high half of the index is fixed per chunk. */
#define CHUNK 65536

static ts_status infer_dropout(ts_graph *g, ts_node *n) {
    const char *op = ts_op_get(n->op)->name;
    const ts_val *x = &g->vals[n->in[0]];
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: input %s has dtype %s; this op takes f32", op,
                      VS(g, n->in[0]), ts_dtype_name(x->dtype));
    float p = n->attr.f[0];
    if (!(p >= 0.f && p < 1.f))
        return ts_err(TS_ERR_ARG, "op %s: drop probability %g for %s is outside [0, 1)", op,
                      (double)p, VS(g, n->in[0]));
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim;
    if (x->ndim) memcpy(o->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    return TS_OK;
}

/* key = mix64(mix64(mix64(seed) ^ salt) ^ step); element i's bits h = u32_i (ops/counter_rng.h),
 * u = (h >> 8) / 2^24, keep when u >= p, i.e. (h >> 8) >= thr = ceil(p 2^24).
 * y = keep ? x * scale : 0. */
TS_SIMD_CLONES
static void dropout_f32(const float *x, float *y, int64_t n, uint64_t key, uint32_t thr, float scale) {
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    int64_t nchunks = (n + CHUNK - 1) / CHUNK;
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t start = c * CHUNK;
        uint32_t len = (uint32_t)(n - start < CHUNK ? n - start : CHUNK);
        uint32_t lo = (uint32_t)start, hi = (uint32_t)((uint64_t)start >> 32) ^ k1;
        const float *xs = x + start;
        float *ys = y + start;
#pragma omp simd
        for (uint32_t j = 0; j < len; j++) {
            uint32_t h = ts_rng_u32(lo + j, hi, k0);
            ys[j] = (h >> 8) >= thr ? xs[j] * scale : 0.f;
        }
    }
}

static ts_status dropout_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    int64_t cnt = ts_val_numel(&k->g->vals[n->out[0]]);
    float p = n->attr.f[0];
    if (p == 0.f) {
        if (k->out[0] != k->in[0]) memcpy(k->out[0], k->in[0], sizeof(float) * (size_t)cnt);
        return TS_OK;
    }
    uint64_t key = ts_rng_key((uint64_t)n->attr.i[1], (uint64_t)n->attr.i[0], k->step);
    uint32_t thr = (uint32_t)ceil((double)p * 16777216.0);
    dropout_f32(k->in[0], k->out[0], cnt, key, thr, (float)(1.0 / (1.0 - (double)p)));
    return TS_OK;
}

static ts_status grad_dropout(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    gi[0] = ts_node_add(g, TS_OP_DROPOUT_GRAD, 1, &go[0], &n->attr, NULL);
    return TS_OK;
}

const ts_op_def ts_opdef_dropout = {"dropout", 1, 1, 1, TS_OPF_ELEMENTWISE | TS_OPF_INPLACE0,
                                    infer_dropout, grad_dropout, dropout_kernel, NULL};
/* Not differentiable (no double backward). Same kernel: the mask depends only on the attributes,
 * the step and the element index. */
const ts_op_def ts_opdef_dropout_grad = {"dropout_grad", 1, 1, 1,
                                         TS_OPF_ELEMENTWISE | TS_OPF_INPLACE0, infer_dropout, NULL,
                                         dropout_kernel, NULL};

ts_value ts_dropout(ts_graph *g, ts_value x, float p) {
    if (!g || x == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.f[0] = p;
    at.i[0] = g->nvals; /* the id the output is about to get: unique per dropout node */
    at.i[1] = (int64_t)g->seed;
    at.ni = 2;
    return ts_node_add(g, TS_OP_DROPOUT, 1, &x, &at, NULL);
}
