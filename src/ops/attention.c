/*
 * attention.c — scaled dot-product attention as one op (the contract: shapes, attributes, the
 * gradient rule, ts_attention); the tiled kernels that run it are ops/attention_kernel.c.
 *
 *   attention(q, k, v, mask?) -> (y, lse)
 *     z[b,h,i,j]  = scale sum_d q[b,h,i,d] k[b,h,j,d] + mask[b,h,i,j]
 *     p[b,h,i,:]  = softmax(z[b,h,i,:]),  lse[b,h,i] = log sum_j exp z[b,h,i,j]
 *     y[b,h,i,:]  = sum_j dropout(p)[b,h,i,j] v[b,h,j,:]
 *   attention_grad(q, k, v, mask?, y, lse, gy) -> (gq, gk, gv)
 *     pd = dropout(p) (the forward's mask again), gpd = gy v^T, gp = dropout_grad(gpd),
 *     gz = p (gp - rowsum(gy y)), gq = scale gz k, gk = scale gz^T q, gv = pd^T gy
 * Shapes (B batch, H heads, T queries, S keys, D head size), by attribute layout:
 *   TS_ATTN_BHTD: q [B, H, T, D], k and v [B, H, S, D], y [B, H, T, D]
 *   TS_ATTN_BTHD: q [B, T, H, D], k and v [B, S, H, D], y [B, T, H, D] — a Linear's output
 *                 reshaped to heads, so no transposes go in or come out
 *   mask: absent, or f32 broadcastable (right-aligned, each dim 1 or full) to [B, H, T, S]:
 *         padding [B, 1, 1, S], packed sequences' block diagonal [B, 1, T, S]
 *   lse [B, H, T] f32: the row's log-sum-exp, all the backward keeps of the softmax
 * Attributes: f[0] scale, f[1] dropout p in [0, 1), i[0] salt and i[1] seed of the dropout
 * (ts_dropout's: the keep bits of element (b, h, i, j) are those ts_dropout draws for index
 * ((b H + h) T + i) S + j of a [B, H, T, S] tensor with that salt, so the fusion pass reproduces
 * the unfused graph's masks exactly), i[2] layout, i[3] compute dtype: TS_F32, or TS_BF16 to
 * multiply as autocast does (q, k, v, the probabilities and the backward's products' operands
 * rounded to bf16, sums in f32).
 * q, k, v are f32, or all three bf16 with compute dtype bf16 (what the kernel would round them to;
 * the fusion pass takes autocast's casts, so only those are kept for the backward); y, lse and the
 * gradients gq, gk, gv are f32 either way. The mask gets no gradient (nor lse, which only
 * attention_grad reads).
 * attention_grad is not differentiable (no double backward).
 */
#include "ops/op.h"

#include "ops/attention_kernel.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static void set_out(ts_graph *g, const ts_node *n, int k, int nd, const int64_t *sh) {
    ts_val *o = &g->vals[n->out[k]];
    o->dtype = TS_F32;
    o->ndim = nd;
    memcpy(o->shape, sh, sizeof(int64_t) * (size_t)nd);
}

/* Check q, k, v and the mask of node n (the first four inputs of both ops) and the attributes;
 * *dims = {B, H, T, S, D}. */
static ts_status check_qkv(const ts_graph *g, const ts_node *n, int64_t dims[5]) {
    const char *op = ts_op_get(n->op)->name, *const names[3] = {"q", "k", "v"};
    ts_dtype dt = g->vals[n->in[0]].dtype;
    if (dt == TS_BF16 && n->attr.i[3] != TS_BF16)
        return ts_err(TS_ERR_DTYPE, "op %s: q %s is bf16 but the compute dtype is %s; bf16 inputs need bf16 compute",
                      op, VS(g, n->in[0]), ts_dtype_name((ts_dtype)n->attr.i[3]));
    for (int k = 0; k < 3; k++) {
        const ts_val *x = &g->vals[n->in[k]];
        if (x->dtype != dt || (dt != TS_F32 && dt != TS_BF16))
            return ts_err(TS_ERR_DTYPE, "op %s: %s %s has dtype %s; q, k and v are all f32, or all bf16", op,
                          names[k], VS(g, n->in[k]), ts_dtype_name(x->dtype));
        if (x->ndim != 4)
            return ts_err(TS_ERR_SHAPE, "op %s: %s %s has rank %d; q, k and v are [B, H, T, D] or [B, T, H, D]", op,
                          names[k], VS(g, n->in[k]), x->ndim);
    }
    int layout = (int)n->attr.i[2];
    if (layout != TS_ATTN_BHTD && layout != TS_ATTN_BTHD)
        return ts_err(TS_ERR_ARG, "op %s: layout %d is neither TS_ATTN_BHTD (0) nor TS_ATTN_BTHD (1)", op, layout);
    if (n->attr.i[3] != TS_F32 && n->attr.i[3] != TS_BF16)
        return ts_err(TS_ERR_ARG, "op %s: compute dtype %lld is neither f32 nor bf16", op, (long long)n->attr.i[3]);
    float p = n->attr.f[1], scale = n->attr.f[0];
    if (!(p >= 0.f && p < 1.f))
        return ts_err(TS_ERR_ARG, "op %s: dropout probability %g is outside [0, 1)", op, (double)p);
    if (!isfinite(scale)) return ts_err(TS_ERR_ARG, "op %s: scale %g is not finite", op, (double)scale);
    const int64_t *q = g->vals[n->in[0]].shape, *k = g->vals[n->in[1]].shape, *v = g->vals[n->in[2]].shape;
    int th = layout == TS_ATTN_BHTD ? 1 : 2, tt = 3 - th; /* the dims of heads and of positions */
    int64_t B = q[0], H = q[th], T = q[tt], S = k[tt], D = q[3];
    if (k[0] != B || k[th] != H || k[3] != D || memcmp(k, v, sizeof(int64_t) * 4))
        return ts_err(TS_ERR_SHAPE, "op %s: q %s, k %s and v %s do not agree (k and v alike; batch, heads and head "
                      "size as q's)", op, VS(g, n->in[0]), VS(g, n->in[1]), VS(g, n->in[2]));
    if (n->nin > 3 && n->in[3] >= 0) {
        const ts_val *m = &g->vals[n->in[3]];
        if (m->dtype != TS_F32)
            return ts_err(TS_ERR_DTYPE, "op %s: mask %s has dtype %s; the mask is additive f32", op, VS(g, n->in[3]),
                          ts_dtype_name(m->dtype));
        const int64_t full[4] = {B, H, T, S};
        int ok = m->ndim <= 4;
        for (int d = 0; ok && d < m->ndim; d++) {
            int64_t e = m->shape[m->ndim - 1 - d], f = full[3 - d];
            ok = e == 1 || e == f;
        }
        if (!ok)
            return ts_err(TS_ERR_SHAPE, "op %s: mask %s does not broadcast to the scores [%lld, %lld, %lld, %lld]", op,
                          VS(g, n->in[3]), (long long)B, (long long)H, (long long)T, (long long)S);
    }
    dims[0] = B, dims[1] = H, dims[2] = T, dims[3] = S, dims[4] = D;
    return TS_OK;
}

static ts_status infer_attention(ts_graph *g, ts_node *n) {
    int64_t d[5];
    ts_status s = check_qkv(g, n, d);
    if (s) return s;
    set_out(g, n, 0, 4, g->vals[n->in[0]].shape);
    set_out(g, n, 1, 3, (int64_t[]){d[0], d[1], d[2]});
    return TS_OK;
}

/* attention_grad(q, k, v, mask?, y, lse, gy): y and gy of q's shape, lse [B, H, T]. */
static ts_status infer_attention_grad(ts_graph *g, ts_node *n) {
    int64_t d[5];
    ts_status s = check_qkv(g, n, d);
    if (s) return s;
    if (n->nin != 7 || n->in[4] < 0 || n->in[5] < 0 || n->in[6] < 0)
        return ts_err(TS_ERR_ARG, "op attention_grad: y, lse and gy are inputs 4, 5 and 6");
    const ts_val *q = &g->vals[n->in[0]], *y = &g->vals[n->in[4]], *l = &g->vals[n->in[5]], *gy = &g->vals[n->in[6]];
    if (y->dtype != TS_F32 || gy->dtype != TS_F32 || l->dtype != TS_F32 ||
        memcmp(y->shape, q->shape, sizeof q->shape) || memcmp(gy->shape, q->shape, sizeof q->shape) || l->ndim != 3 ||
        l->shape[0] != d[0] || l->shape[1] != d[1] || l->shape[2] != d[2])
        return ts_err(TS_ERR_SHAPE, "op attention_grad: y %s, lse %s and gy %s do not match q %s", VS(g, n->in[4]),
                      VS(g, n->in[5]), VS(g, n->in[6]), VS(g, n->in[0]));
    for (int k = 0; k < 3; k++) set_out(g, n, k, 4, g->vals[n->in[k]].shape);
    return TS_OK;
}

static ts_status grad_attention(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE) return TS_OK;
    int outs[3];
    int in[7] = {n->in[0], n->in[1], n->in[2], n->nin > 3 ? n->in[3] : -1, n->out[0], n->out[1], go[0]};
    if (ts_node_add(g, TS_OP_ATTENTION_GRAD, 7, in, &n->attr, outs) == TS_NONE) return g->status;
    gi[0] = outs[0], gi[1] = outs[1], gi[2] = outs[2];
    return TS_OK;
}

static ts_status attention_kernel(const ts_kargs *a) {
    ts_attn_geom geo;
    ts_attn_geom_init(&geo, a->g, a->node, a->in[3], a->step);
    return ts_attn_forward(&geo, a->scratch, a->scratch_bytes, a->in[0], a->in[1], a->in[2], a->out[0], a->out[1]);
}

static ts_status attention_grad_kernel(const ts_kargs *a) {
    ts_attn_geom geo;
    ts_attn_geom_init(&geo, a->g, a->node, a->in[3], a->step);
    return ts_attn_backward(&geo, a->scratch, a->scratch_bytes, a->in[0], a->in[1], a->in[2], a->in[4], a->in[5],
                            a->in[6], a->out[0], a->out[1], a->out[2]);
}

static size_t attention_scratch(const ts_graph *g, const ts_node *n) {
    ts_attn_geom geo;
    ts_attn_geom_init(&geo, g, n, NULL, 0);
    return ts_attn_scratch(&geo, n->op == TS_OP_ATTENTION_GRAD);
}

const ts_op_def ts_opdef_attention = {"attention", 3, 4, 2, 0, infer_attention, grad_attention, attention_kernel,
                                      attention_scratch};
/* Not differentiable (no double backward). Inputs 0..2 and 4..6 are required, 3 (the mask) optional:
 * min_in 3 lets input 3 be absent, infer checks the rest. */
const ts_op_def ts_opdef_attention_grad = {"attention_grad", 3, 7, 3, 0, infer_attention_grad, NULL,
                                           attention_grad_kernel, attention_scratch};

ts_value ts_attention_node(ts_graph *g, ts_value q, ts_value k, ts_value v, ts_value mask, float scale, float dropout_p,
                           int layout, ts_dtype compute, int64_t salt) {
    ts_attrs at = {0};
    at.f[0] = scale;
    at.f[1] = dropout_p;
    at.i[0] = salt;
    at.i[1] = (int64_t)g->seed;
    at.i[2] = layout;
    at.i[3] = compute;
    at.ni = 4;
    return ts_node_add(g, TS_OP_ATTENTION, mask == TS_NONE ? 3 : 4, (int[]){q, k, v, mask}, &at, NULL);
}

ts_value ts_attention(ts_graph *g, ts_value q, ts_value k, ts_value v, ts_value mask, float scale, float dropout_p,
                      int layout, ts_dtype compute) {
    if (!g || q == TS_NONE || k == TS_NONE || v == TS_NONE) return TS_NONE;
    /* the salt: the id the output is about to get, unique per node (ts_dropout's rule) */
    return ts_attention_node(g, q, k, v, mask, scale, dropout_p, layout, compute, g->nvals);
}
