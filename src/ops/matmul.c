/*
 * matmul.c — the matmul op: batched matrix product with optional transposes, a scale and a bias.
 *
 *   matmul(a, b, bias or absent) -> out
 *     a    [..., M, K]  (stored [..., K, M] when trans_a)
 *     b    [..., K, N]  (stored [..., N, K] when trans_b)
 *     bias [N]          (optional input 2, -1 when absent; any shape [1, .., 1, N] is accepted)
 *     out  [..., M, N] = alpha * op(a) @ op(b) + bias,   op(x) = x or x^T (last two dims)
 *   The batch dims ("...") broadcast like numpy: a 2-D b is shared by every matrix of a 3-D a,
 *   a [B, H, T, D] @ b [B, H, D, T] is a batch of B*H products, [B, 1, M, K] @ [1, H, K, N] gives
 *   [B, H, M, N]. Both operands have rank >= 2.
 *   dtypes: a and b both f32 -> f32, both bf16 -> bf16 or both f16 -> f16 (the 16-bit products
 *   accumulate in f32 and round once to the output dtype; an f16 result beyond +-65504 becomes
 *   +-inf); both bf16 with attr i[3] = 1 -> f32 (below). The bias is f32, or, for a 16-bit matmul, f32 or the operands' dtype.
 *
 * Attributes: i[0] = trans_a, i[1] = trans_b (0 / 1), f[0] = alpha. f[0] == 0 means alpha = 1, so
 * that zero-initialised attributes (ts_attrs at = {0}) give a plain product; a true alpha of 0 is
 * not expressible (it would be a constant zero anyway).
 * i[2] = a fused activation act applied last: out = act(alpha * op(a) @ op(b) + bias), with
 *   0 none (act(x) = x), 1 gelu erf form, 2 gelu tanh form, 3 relu — the GELU / ReLU ops' own
 *   evaluator (ts_unary_f32), applied in f32 before a 16-bit output is rounded. Only the fusion
 *   pass (graph/passes/fuse.c) sets it, on the compiled program's copy of the graph, after
 *   ts_backward: gelu(matmul(a, b[, bias])) / relu(...) whose product nothing else reads (in a
 *   training graph the GELU's backward reads it, so there it does not fuse; nor in a training
 *   program's recompute segments). An activated matmul therefore never reaches autodiff;
 *   grad_matmul refuses one with an error all the same.
 * i[3] = 1: an f32 output for bf16 operands (the f32 accumulation is written out as it is, not
 *   rounded to bf16); 0 (the default): the output has the operands' dtype. Also set by the fusion
 *   pass only (rule 5: cast(matmul_bf16(a, b), f32) whose bf16 product nothing else reads), so
 *   that autocast's bf16 product is not rounded and widened again, and the bias and activation
 *   rules see an f32 product. f16 operands keep an f16 output (its overflow to inf is part of what
 *   a loss scaler watches for).
 *
 * Gradients, with upstream G = d loss / d out [..., M, N]:
 *   d op(a) = alpha G op(b)^T          d op(b) = alpha op(a)^T G          d bias = sum of G
 * written back through the transposes as matmuls of the stored operands:
 *   ga = alpha G @ op(b)^T      = matmul(G, b, 0, !trans_b)      when !trans_a
 *   ga = alpha op(b) @ G^T      = matmul(b, G, trans_b, 1)       when trans_a
 *   gb = alpha op(a)^T @ G      = matmul(a, G, !trans_a, 0)      when !trans_b
 *   gb = alpha G^T @ op(a)      = matmul(G, a, 1, trans_a)       when trans_b
 * each then summed over the batch dims the operand was broadcast along (ts_sum_to). The common
 * case of a weight shared by a batch (a [.., M, K] contiguous, b with no batch) folds the batch
 * into the rows instead: gb = a2^T @ G2 with a2 = a as [B*M, K], G2 = G as [B*M, N] (views by
 * ts_reshape), one [K, N] matmul rather than a batched one and a sum.
 * bf16 gradients that need a batch sum are summed in f32 (sum_to takes f32) and cast back.
 *
 * The reference kernel below is plain blocked loops in f32 (bf16 and f16 operands are widened
 * exactly to f32 while packing); the CPU backend runs oneDNN instead (backend/cpu/matmul_dnnl.c)
 * and falls back to this one. oneDNN 2.6 (Debian 12's) has no f16 matmul on CPUs without
 * AVX512_FP16 and no bf16 matmul (only reference loops) on CPUs without AVX-512; there the backend
 * runs an f32 primitive on widened copies of the operands and rounds its product to f16 / bf16:
 * 16-bit operands (their range and precision), f32 arithmetic, one rounding — the numbers of a
 * native 16-bit matmul with f32 accumulation, at f32 speed plus the conversions (for bf16 on an
 * AVX2 CPU about 7x this kernel's speed: see backend/cpu/matmul_dnnl.c).
 */
#include "graph/op_attrs.h"
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* The fused activation (attr i[2]) as the unary op that defines it: *op = TS_OP_GELU or
 * TS_OP_RELU and its gelu tanh-form flag; 0 when there is none. */
static int mm_act(const ts_node *n, int *op, int *tanh_form) {
    int64_t a = TS_NODE_ATTRS(matmul, n).act;
    *op = a == TS_MATMUL_ACT_RELU ? TS_OP_RELU : TS_OP_GELU;
    *tanh_form = a == TS_MATMUL_ACT_GELU_TANH;
    return a >= TS_MATMUL_ACT_GELU_ERF && a <= TS_MATMUL_ACT_RELU;
}

/* ------------------------------------------------------------------ shape rule */

static ts_status infer_matmul(ts_graph *g, ts_node *n) {
    const ts_val *a = &g->vals[n->in[0]], *b = &g->vals[n->in[1]];
    ts_attrs_matmul at = TS_NODE_ATTRS(matmul, n);
    int ta = at.trans_a != 0, tb = at.trans_b != 0;
    if (at.act < 0 || at.act >= TS_OPS_MATMUL_ACT_COUNT)
        return ts_err(TS_ERR_ARG, "op matmul: activation attribute i[2] = %lld; takes 0 (none), 1 (gelu erf), "
                      "2 (gelu tanh) or 3 (relu)", (long long)at.act);
    if (at.f32_out != 0 && at.f32_out != 1)
        return ts_err(TS_ERR_ARG, "op matmul: output attribute i[3] = %lld; takes 0 (the operands' dtype) or 1 (f32)",
                      (long long)at.f32_out);
    if (a->ndim < 2 || b->ndim < 2)
        return ts_err(TS_ERR_SHAPE, "op matmul: operands need rank >= 2, got a %s and b %s",
                      VS(g, n->in[0]), VS(g, n->in[1]));
    if (a->dtype != b->dtype || (a->dtype != TS_F32 && a->dtype != TS_BF16 && a->dtype != TS_F16))
        return ts_err(TS_ERR_DTYPE, "op matmul: a %s and b %s must both be f32, both bf16 or both f16",
                      VS(g, n->in[0]), VS(g, n->in[1]));
    if (at.f32_out && a->dtype != TS_BF16)
        return ts_err(TS_ERR_DTYPE, "op matmul: output attribute i[3] = 1 (f32 output) needs bf16 operands, got a %s",
                      VS(g, n->in[0]));
    ts_matmul_geom q = ts_matmul_geom_of(a->ndim, a->shape, b->ndim, b->shape, ta, tb);
    if (q.K != q.Kb)
        return ts_err(TS_ERR_SHAPE,
                      "op matmul: inner dims differ: a %s%s has K = %lld, b %s%s has K = %lld",
                      VS(g, n->in[0]), ta ? " (transposed)" : "", (long long)q.K, VS(g, n->in[1]),
                      tb ? " (transposed)" : "", (long long)q.Kb);
    if (!q.ok)
        return ts_err(TS_ERR_SHAPE, "op matmul: batch dims of a %s and b %s do not broadcast",
                      VS(g, n->in[0]), VS(g, n->in[1]));
    int nd = q.nb + 2;
    if (n->nin > 2 && n->in[2] >= 0) {
        const ts_val *c = &g->vals[n->in[2]];
        if (c->dtype != TS_F32 && c->dtype != a->dtype)
            return ts_err(TS_ERR_DTYPE, "op matmul: bias %s must be f32%s%s", VS(g, n->in[2]),
                          a->dtype != TS_F32 ? " or " : "", a->dtype != TS_F32 ? ts_dtype_name(a->dtype) : "");
        int good = c->ndim >= 1 && c->ndim <= nd && c->shape[c->ndim - 1] == q.N;
        for (int i = 0; good && i < c->ndim - 1; i++) good = c->shape[i] == 1;
        if (!good)
            return ts_err(TS_ERR_SHAPE, "op matmul: bias %s must be [N] = [%lld] (a %s, b %s)",
                          VS(g, n->in[2]), (long long)q.N, VS(g, n->in[0]), VS(g, n->in[1]));
    }
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = at.f32_out ? TS_F32 : a->dtype;
    o->ndim = nd;
    memcpy(o->shape, q.bshape, sizeof(int64_t) * (size_t)q.nb);
    o->shape[nd - 2] = q.M;
    o->shape[nd - 1] = q.N;
    return TS_OK;
}

/* ------------------------------------------------------------------ builders */

static ts_value mm_node(ts_graph *g, ts_value a, ts_value b, ts_value bias, int ta, int tb, float alpha) {
    if (a == TS_NONE || b == TS_NONE) return TS_NONE;
    ts_attrs at = {0};
    at.i[0] = ta != 0;
    at.i[1] = tb != 0;
    at.ni = 2;
    at.f[0] = alpha == 1.f ? 0.f : alpha;
    int in[3] = {a, b, bias};
    return ts_node_add(g, TS_OP_MATMUL, bias == TS_NONE ? 2 : 3, in, &at, NULL);
}

ts_value ts_matmul(ts_graph *g, ts_value a, ts_value b, int trans_a, int trans_b) {
    return mm_node(g, a, b, TS_NONE, trans_a, trans_b, 1.f);
}

/* ------------------------------------------------------------------ gradient */

/* Bring gradient gr (shape of a broadcast result) back to the shape of operand `like`: a view when
 * only leading 1s differ, else a sum over the broadcast batch dims (in f32). */
static ts_value reduce_to(ts_graph *g, ts_value gr, ts_value like) {
    if (gr == TS_NONE) return TS_NONE;
    const ts_val *gv = &g->vals[gr], *lv = &g->vals[like];
    if (gv->ndim == lv->ndim && memcmp(gv->shape, lv->shape, sizeof(int64_t) * (size_t)lv->ndim) == 0)
        return gr;
    int64_t shape[TS_MAX_DIMS]; /* copies: building nodes may move g->vals */
    int nd = lv->ndim;
    ts_dtype gdt = gv->dtype, ldt = lv->dtype;
    memcpy(shape, lv->shape, sizeof shape);
    if (ts_val_numel(gv) == ts_val_numel(lv)) return ts_reshape(g, gr, nd, shape);
    if (gdt == TS_F32) return ts_sum_to(g, gr, like);
    return ts_cast(g, ts_sum_to(g, ts_cast(g, gr, TS_F32), like), ldt);
}

static ts_status grad_matmul(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin) {
    ts_value G = gout[0], A = n->in[0], B = n->in[1];
    ts_attrs_matmul at = TS_NODE_ATTRS(matmul, n);
    int ta = at.trans_a != 0, tb = at.trans_b != 0;
    float alpha = at.alpha;
    if (at.act != 0) /* never reached: fusion (which sets it) runs after ts_backward */
        return ts_err(TS_ERR_UNSUPPORTED, "op matmul: no gradient for a matmul with a fused activation "
                      "(i[2] = %lld); the fusion pass makes those after ts_backward, in compiled programs only",
                      (long long)at.act);
    if (at.f32_out != 0) /* never reached either: rule 5 of the fusion pass */
        return ts_err(TS_ERR_UNSUPPORTED, "op matmul: no gradient for a bf16 matmul with an f32 output (i[3] = 1); "
                      "the fusion pass makes those after ts_backward, in compiled programs only");
    if (G == TS_NONE) return TS_OK;
    const ts_val *av = &g->vals[A], *bv = &g->vals[B]; /* valid until the first node is added */
    ts_matmul_geom q = ts_matmul_geom_of(av->ndim, av->shape, bv->ndim, bv->shape, ta, tb);
    int64_t a_batch = ts_numel(av->ndim - 2, av->shape), b_batch = ts_numel(bv->ndim - 2, bv->shape);
    if (g->vals[G].dtype != av->dtype) G = ts_cast(g, G, av->dtype);

    /* ga: the batched product, then summed over a's broadcast dims. (No fold here: a shared a
     * would need each batch's G side by side along N, which no view of G gives.) */
    ts_value ga = ta ? mm_node(g, B, G, TS_NONE, tb, 1, alpha) : mm_node(g, G, B, TS_NONE, 0, !tb, alpha);
    gin[0] = reduce_to(g, ga, A);

    /* gb: fold the batch into the rows when b is shared by a batch of contiguous a's. */
    if (b_batch == 1 && q.batch > 1 && a_batch == q.batch && !ta) {
        int64_t rows = q.batch * q.M;
        ts_value a2 = ts_reshape(g, A, 2, (int64_t[]){rows, q.K});
        ts_value g2 = ts_reshape(g, G, 2, (int64_t[]){rows, q.N});
        ts_value gb = tb ? mm_node(g, g2, a2, TS_NONE, 1, 0, alpha) : mm_node(g, a2, g2, TS_NONE, 1, 0, alpha);
        gin[1] = reduce_to(g, gb, B);
    } else {
        ts_value gb = tb ? mm_node(g, G, A, TS_NONE, 1, ta, alpha) : mm_node(g, A, G, TS_NONE, !ta, 0, alpha);
        gin[1] = reduce_to(g, gb, B);
    }

    if (n->nin > 2 && n->in[2] >= 0) {
        ts_value bias = n->in[2];
        ts_dtype bdt = g->vals[bias].dtype;
        ts_value gf = g->vals[G].dtype == TS_F32 ? G : ts_cast(g, G, TS_F32);
        ts_value gs = ts_sum_to(g, gf, bias);
        gin[2] = bdt == TS_F32 ? gs : ts_cast(g, gs, bdt);
    }
    return TS_OK;
}

/* ------------------------------------------------------------------ reference kernel */

/* out[p, m, n] = act(alpha * sum_k op(a)[p, m, k] op(b)[p, k, n] + bias[n]), p over the output batch.
 * Tiles of MB x NB outputs are the parallel tasks; per tile, panels of KB of op(a) and op(b)
 * are widened to f32 into thread buffers and multiplied in an i-k-j loop that vectorises. */
enum { MM_MB = 32, MM_NB = 64, MM_KB = 256 };

static inline float ld(const void *p, ts_dtype dt, int64_t i) {
    return dt == TS_BF16 ? ts_bf16_f32(((const uint16_t *)p)[i])
         : dt == TS_F16  ? ts_f16_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static ts_status matmul_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *av = &g->vals[n->in[0]], *bv = &g->vals[n->in[1]];
    ts_attrs_matmul at = TS_NODE_ATTRS(matmul, n);
    ts_matmul_geom q = ts_matmul_geom_of(av->ndim, av->shape, bv->ndim, bv->shape, at.trans_a != 0, at.trans_b != 0);
    ts_dtype dt = av->dtype, odt = g->vals[n->out[0]].dtype;
    ts_dtype bias_dt = n->nin > 2 && n->in[2] >= 0 ? g->vals[n->in[2]].dtype : TS_F32;
    const void *A = k->in[0], *B = k->in[1], *C = n->nin > 2 ? k->in[2] : NULL;
    void *O = k->out[0];
    float alpha = at.alpha;
    int act_op, act_tanh, act = mm_act(n, &act_op, &act_tanh);
    int64_t M = q.M, N = q.N, K = q.K;
    int64_t mt = (M + MM_MB - 1) / MM_MB, nt = (N + MM_NB - 1) / MM_NB, tasks = q.batch * mt * nt;
    int fail = 0;
#pragma omp parallel if (tasks > 1 && q.batch * M * N * K > 32768)
    {
        float *pa = malloc(sizeof(float) * (MM_MB * MM_KB + MM_KB * MM_NB + MM_MB * MM_NB));
        if (!pa) {
#pragma omp atomic write
            fail = 1;
        }
        float *pb = pa ? pa + MM_MB * MM_KB : NULL, *acc = pb ? pb + MM_KB * MM_NB : NULL;
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < tasks; t++) {
            if (!pa) continue;
            int64_t p = t / (mt * nt), m0 = (t / nt) % mt * MM_MB, n0 = t % nt * MM_NB;
            int64_t mb = M - m0 < MM_MB ? M - m0 : MM_MB, nbk = N - n0 < MM_NB ? N - n0 : MM_NB;
            int64_t oa = ts_matmul_batch_offset(&q, q.sa, p), ob = ts_matmul_batch_offset(&q, q.sb, p);
            memset(acc, 0, sizeof(float) * MM_MB * MM_NB);
            for (int64_t k0 = 0; k0 < K; k0 += MM_KB) {
                int64_t kb = K - k0 < MM_KB ? K - k0 : MM_KB;
                for (int64_t i = 0; i < mb; i++)
                    for (int64_t kk = 0; kk < kb; kk++)
                        pa[i * MM_KB + kk] = ld(A, dt, oa + (m0 + i) * q.a_sm + (k0 + kk) * q.a_sk);
                for (int64_t kk = 0; kk < kb; kk++) {
                    for (int64_t j = 0; j < nbk; j++)
                        pb[kk * MM_NB + j] = ld(B, dt, ob + (k0 + kk) * q.b_sk + (n0 + j) * q.b_sn);
                    for (int64_t j = nbk; j < MM_NB; j++) pb[kk * MM_NB + j] = 0.f;
                }
                for (int64_t i = 0; i < mb; i++) {
                    float *ci = acc + i * MM_NB;
                    for (int64_t kk = 0; kk < kb; kk++) {
                        float x = pa[i * MM_KB + kk];
                        const float *bk = pb + kk * MM_NB;
#pragma omp simd
                        for (int64_t j = 0; j < MM_NB; j++) ci[j] += x * bk[j];
                    }
                }
            }
            for (int64_t i = 0; i < mb; i++) {
                int64_t row = (p * M + m0 + i) * N + n0;
                float *ci = acc + i * MM_NB;
                for (int64_t j = 0; j < nbk; j++) ci[j] = alpha * ci[j] + (C ? ld(C, bias_dt, n0 + j) : 0.f);
                if (act) ts_unary_f32(act_op, act_tanh, 0.f, 0.f, ci, ci, nbk); /* <= 64: this thread */
                for (int64_t j = 0; j < nbk; j++) {
                    float v = ci[j];
                    if (odt == TS_BF16) ((uint16_t *)O)[row + j] = ts_f32_bf16(v);
                    else if (odt == TS_F16) ((uint16_t *)O)[row + j] = ts_f32_f16(v);
                    else ((float *)O)[row + j] = v;
                }
            }
        }
        free(pa);
    }
    if (fail) return ts_err(TS_ERR_NOMEM, "op matmul: out of memory for the reference kernel's buffers");
    return TS_OK;
}

const ts_op_def ts_opdef_matmul = {"matmul", 2, 3, 1, 0, infer_matmul, grad_matmul, matmul_kernel, NULL};
