/*
 * fuse.c — the fusion pass: rewrite producer/consumer pairs into one node where that saves a
 * full pass over memory. It runs at compile time on the program's copy of the graph, after
 * autodiff and dead-code elimination, over the alive nodes.
 *
 * Common rules:
 *  - A fused node takes the index of the LAST node it replaces (the consumer), so index order
 *    stays a valid schedule; the producer is marked dead (alive[p] = 0). The consumer keeps its
 *    output value id, so nothing downstream is rewired.
 *  - The value fused away (the producer's output) must be an unnamed op output, not pinned, and
 *    read by exactly one input slot of one alive node (the consumer). A pinned value counts as
 *    an extra consumer. This also keeps values read by backward nodes (unary_grad reads x and y)
 *    out of fusion.
 *  - Each rewrite leaves every other value's consumer count unchanged (the fused node reads what
 *    the dead producer read), so the counts are computed once.
 * Nodes are visited in index order, so a chain grows one consumer at a time. Five rules are of
 * another kind and say how they keep these promises: rule 8 merges two readers of one value
 * (siblings) into a node with both their outputs, rules 10 and 14 drop a cast and move its
 * readers to another value (the only rules that rewire readers; 14 also retypes a matmul's
 * result and its reshape to bf16), rule 11 turns a node into another op in place (absorbing
 * nothing), and rule 12 absorbs three producers, one of whose inputs (x) it reads once where they
 * read it twice.
 */
#include "graph/op_attrs.h"
#include "graph/passes/passes.h"
#include "ops/op.h" /* ts_fused_merge, ts_conv_has_epilogue */

#include <math.h>

/* Defined in ops/fused.c: attrs of fused_elementwise computing second(first(x)); 0 if not
 * fusable (not unary chain ops, or more steps than a fused node holds). */

typedef struct {
    ts_graph *g;
    uint8_t *alive;
    const uint8_t *pinned;
    int *uses; /* per value: alive input slots reading it, +1 when pinned */
    int backward; /* some alive node is a backward or update node (a training program) */
    ts_fuse_accept accept; /* does the device run this fused node? (NULL: yes) */
    void *accept_ctx;
} fuse_ctx;

/* Where node i runs: its pipeline stage and its phase (forward, backward, update). Two nodes of
 * different places are never fused, so a pipeline can split the graph after fusion. */
static int place(const ts_graph *g, int i) {
    int op = g->nodes[i].op;
    return g->nodes[i].stage * 4 + ts_node_phase(g, i, op == TS_OP_ACCUM_GRAD);
}

/* The alive node producing v when v may be fused away into its single consumer i, else -1. */
static int fusable_producer(const fuse_ctx *c, int v, int i) {
    if (v < 0) return -1;
    const ts_val *x = &c->g->vals[v];
    if (x->kind != TS_V_NODE || x->name || c->pinned[v] || c->uses[v] != 1) return -1;
    int p = x->node;
    if (p < 0 || !c->alive[p] || c->g->nodes[p].nout != 1 || c->g->nodes[p].out[0] != v) return -1;
    if (place(c->g, p) != place(c->g, i)) return -1;
    return p;
}

static int same_type(const ts_val *a, const ts_val *b) {
    return a->dtype == b->dtype && a->ndim == b->ndim &&
           memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

static int mm_has_bias(const ts_node *m) { return m->nin >= 3 && m->in[2] >= 0; }
/* A matmul with a fused activation (attr i[2], rule 4): nothing more may be folded into it. */
static int mm_has_act(const ts_node *m) { return TS_NODE_ATTRS(matmul, m).act != TS_MATMUL_ACT_NONE; }

/* Node i becomes repl (the merged node), keeping its own output value; producer p dies. 0 (and
 * nothing changed) when the device would not run the merged node. */
static int absorb(fuse_ctx *c, int i, int p, const ts_node *repl) {
    ts_node *n = &c->g->nodes[i], r = *repl;
    r.nout = 1;
    r.out[0] = n->out[0];
    r.stage = n->stage, r.seg = n->seg;
    if (c->accept && !c->accept(c->accept_ctx, c->g, &r, &c->g->nodes[p])) return 0;
    *n = r;
    c->alive[p] = 0;
    return 1;
}

/* 1. matmul + bias: add(matmul(a, b), bias) or add(bias, matmul(a, b)), with bias an f32 [N]
 * (or [1, .., 1, N], which matmul also takes) matching the last dim of the product, the matmul
 * without a bias, and the add's output of the matmul's dtype and shape -> matmul(a, b, bias)
 * with the matmul's attributes. */
static int fuse_matmul_bias(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    if (n->op != TS_OP_ADD || n->nin != 2) return 0;
    for (int side = 0; side < 2; side++) {
        int mv = n->in[side], bias = n->in[1 - side];
        int p = fusable_producer(c, mv, i);
        if (p < 0 || bias < 0) continue;
        const ts_node *m = &g->nodes[p];
        if (m->op != TS_OP_MATMUL || mm_has_bias(m) || mm_has_act(m)) continue;
        const ts_val *mo = &g->vals[mv], *bv = &g->vals[bias], *o = &g->vals[n->out[0]];
        if (mo->ndim < 1 || bv->ndim < 1 || bv->shape[bv->ndim - 1] != mo->shape[mo->ndim - 1]) continue;
        if (ts_val_numel(bv) != bv->shape[bv->ndim - 1]) continue; /* leading dims all 1 */
        if (bv->dtype != TS_F32 || !same_type(mo, o)) continue;
        ts_node r = *m;
        r.nin = 3;
        r.in[2] = bias;
        if (absorb(c, i, p, &r)) return 1;
    }
    return 0;
}

/* 2. matmul + scale: scale(matmul(...), s, 0) -> the matmul with alpha' = alpha * s (attr f[0],
 * where 0 stands for 1). Only a matmul without bias (s would have to scale the bias too), and
 * not when alpha' is 0, which the encoding cannot say. */
static int fuse_matmul_scale(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    if (n->op != TS_OP_SCALE || TS_NODE_ATTRS(scale, n).beta != 0.f) return 0;
    int p = fusable_producer(c, n->in[0], i);
    if (p < 0) return 0;
    const ts_node *m = &g->nodes[p];
    if (m->op != TS_OP_MATMUL || mm_has_bias(m) || mm_has_act(m)) return 0;
    if (!same_type(&g->vals[n->in[0]], &g->vals[n->out[0]])) return 0;
    float alpha = TS_NODE_ATTRS(matmul, m).alpha * TS_NODE_ATTRS(scale, n).alpha;
    if (alpha == 0.f) return 0;
    ts_node r = *m;
    r.attr.f[0] = alpha;
    return absorb(c, i, p, &r);
}

/* 3. unary chains: u2(u1(x)) for u1, u2 among scale sqrt exp log relu tanh sigmoid gelu (or
 * fused_elementwise nodes already built here) on f32 -> one fused_elementwise node of up to 4
 * steps. Visiting in index order grows a chain one step per consumer; a longer chain is split
 * into several fused nodes. */
/* Node i's producer p when i reads one f32 value, made from one f32 input by a node that may be
 * fused away into i (a unary chain op, if ts_fused_merge takes it); else -1. Rules 3 and 13. */
static int unary_producer(const fuse_ctx *c, int i) {
    const ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    if (n->nin != 1 || n->nout != 1 || g->vals[n->in[0]].dtype != TS_F32) return -1;
    int p = fusable_producer(c, n->in[0], i);
    if (p < 0) return -1;
    const ts_node *u = &g->nodes[p];
    return u->nin == 1 && u->in[0] >= 0 && g->vals[u->in[0]].dtype == TS_F32 ? p : -1;
}

/* Node i becomes the fused_elementwise node of producer p's steps then node i's (second NULL:
 * p's alone), reading p's input, storing bf16 when bf16 (ops/fused.c). 0 (nothing changed) when
 * the steps do not make a chain. */
static int absorb_chain(fuse_ctx *c, int i, int p, const ts_node *second, int bf16) {
    const ts_node *u = &c->g->nodes[p];
    ts_node r;
    memset(&r, 0, sizeof r);
    if (!ts_fused_merge(u, second, &r.attr)) return 0;
    r.attr.f[0] = bf16 ? 1.f : 0.f;
    r.op = TS_OP_FUSED_ELEMENTWISE;
    r.nin = 1;
    r.in[0] = u->in[0];
    for (int j = 1; j < TS_MAX_IN; j++) r.in[j] = -1;
    return absorb(c, i, p, &r);
}

static int fuse_unary_chain(fuse_ctx *c, int i) {
    const ts_node *n = &c->g->nodes[i];
    int p = unary_producer(c, i);
    return p >= 0 && c->g->vals[n->out[0]].dtype == TS_F32 && absorb_chain(c, i, p, n, 0);
}

/* 4. matmul + activation: gelu(matmul(a, b[, bias])) (erf or tanh form) or relu(matmul(...)),
 * f32 (the unary ops take f32 only), the matmul without an activation yet -> the matmul with
 * attr i[2] = 1 (gelu erf), 2 (gelu tanh) or 3 (relu) (encoding in ops/matmul.c). Rule 1 has
 * already moved an add of a bias into the matmul when it reaches the activation (index order),
 * so BERT's FFN act(x W1^T + b1) becomes one node. In a training graph the activation's backward
 * (unary_grad) also reads the product, so fusable_producer refuses it there — except for the
 * forward originals of a recompute segment (graph/recompute.c), whose backward reads the clones
 * instead: those are left alone in a training program, as the unfused clones must compute the
 * forward's bits and oneDNN's GELU is not bit-equal to the GELU op's (backend/cpu/matmul_dnnl.c). */
static int fuse_matmul_act(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    if ((n->op != TS_OP_GELU && n->op != TS_OP_RELU) || n->nin != 1) return 0;
    if (c->backward && n->seg) return 0;
    int p = fusable_producer(c, n->in[0], i);
    if (p < 0) return 0;
    const ts_node *m = &g->nodes[p];
    if (m->op != TS_OP_MATMUL || mm_has_act(m)) return 0;
    const ts_val *mo = &g->vals[n->in[0]], *o = &g->vals[n->out[0]];
    if (mo->dtype != TS_F32 || !same_type(mo, o)) return 0;
    ts_node r = *m;
    r.attr.i[2] = n->op == TS_OP_RELU                              ? TS_MATMUL_ACT_RELU
                  : TS_NODE_ATTRS(gelu, n).tanh_form != 0 ? TS_MATMUL_ACT_GELU_TANH
                                                          : TS_MATMUL_ACT_GELU_ERF;
    if (r.attr.ni < 3) r.attr.ni = 3;
    return absorb(c, i, p, &r);
}

/* 5. bf16 matmul with an f32 product: cast(matmul(a, b[, bias]), f32) with a, b bf16 (autocast's
 * pattern, models/bert.c matmul_in) -> the matmul with attr i[3] = 1, whose f32 accumulation is
 * written out without the rounding to bf16 and the widening back (ops/matmul.c): one pass over the
 * product fewer, a result closer to the exact one, and an f32 product that rules 1 and 4 can then
 * fold the bias and the activation into (index order: the add and the GELU come after the cast).
 * The bf16 product must be read by nothing else; matmul's backward reads its operands, not its
 * product, so this fires in training graphs too (in recompute segments alike for the original and
 * its clone, which stay bit-equal). f16 products are left as they are: their overflow to inf is
 * a loss scaler's signal. */
static int fuse_matmul_f32_out(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    if (n->op != TS_OP_CAST || n->nin != 1 || g->vals[n->out[0]].dtype != TS_F32) return 0;
    int p = fusable_producer(c, n->in[0], i);
    if (p < 0) return 0;
    const ts_node *m = &g->nodes[p];
    if (m->op != TS_OP_MATMUL || TS_NODE_ATTRS(matmul, m).f32_out != 0 || g->vals[n->in[0]].dtype != TS_BF16) return 0;
    ts_node r = *m;
    r.attr.i[3] = 1;
    if (r.attr.ni < 4) r.attr.ni = 4;
    return absorb(c, i, p, &r);
}

/* 6. conv2d + activation: relu(conv2d(...)) or math leaky_relu(conv2d(...)), f32, the conv2d
 * without an epilogue yet -> the conv2d with act = relu or leaky relu (attr i[9], slope f[0];
 * ops/conv.c). In a training graph the activation's backward reads the conv's output, so
 * fusable_producer refuses it there. */
static int fuse_conv_act(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    int leaky = n->op == TS_OP_MATH && TS_NODE_ATTRS(math, n).fn == TS_MATH_LEAKY_RELU;
    if ((n->op != TS_OP_RELU && !leaky) || n->nin != 1) return 0;
    int p = fusable_producer(c, n->in[0], i);
    if (p < 0) return 0;
    const ts_node *m = &g->nodes[p];
    if (m->op != TS_OP_CONV2D || ts_conv_has_epilogue(m)) return 0;
    if (!same_type(&g->vals[n->in[0]], &g->vals[n->out[0]])) return 0;
    ts_node r = *m;
    r.attr.i[9] = leaky ? TS_CONV_ACT_LEAKY_RELU : TS_CONV_ACT_RELU;
    r.attr.f[0] = leaky ? TS_NODE_ATTRS(math, n).alpha : 0.f;
    if (r.attr.ni < 11) r.attr.ni = 11;
    return absorb(c, i, p, &r);
}

/* The value of v when it is an f32 constant of one element (any rank); 0 otherwise. */
static int const_scalar(const ts_graph *g, int v, float *out) {
    const ts_val *x = &g->vals[v];
    if (x->kind != TS_V_CONST || !x->data || x->dtype != TS_F32 || ts_val_numel(x) != 1) return 0;
    *out = *(const float *)x->data->data;
    return 1;
}

/* 7. conv2d + clamp: clip(conv2d(...), lo, hi), or binary max(conv2d(...), c) with c an f32
 * constant of one element (either side; a floor: lo = c, hi = +inf), the conv2d (with or without
 * an activation) without a clamp yet and of the result's shape -> the conv2d with clamp = 1,
 * f[1] = lo, f[2] = hi (ops/conv.c). openWakeWord's embedding network ends every convolution in
 * LeakyRelu then Max(x, -0.4): all three become one pass. */
static int fuse_conv_clamp(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    int side = 0;
    float lo, hi = INFINITY;
    if (n->op == TS_OP_CLIP && n->nin == 1) {
        lo = TS_NODE_ATTRS(clip, n).lo, hi = TS_NODE_ATTRS(clip, n).hi;
    } else if (n->op == TS_OP_BINARY && TS_NODE_ATTRS(binary, n).fn == TS_BIN_MAX && n->nin == 2) {
        if (!const_scalar(g, n->in[1], &lo)) {
            if (!const_scalar(g, n->in[0], &lo)) return 0;
            side = 1;
        }
    } else {
        return 0;
    }
    if (lo != lo || hi != hi) return 0;
    int p = fusable_producer(c, n->in[side], i);
    if (p < 0) return 0;
    const ts_node *m = &g->nodes[p];
    if (m->op != TS_OP_CONV2D || m->attr.i[10] != 0) return 0;
    if (!same_type(&g->vals[n->in[side]], &g->vals[n->out[0]])) return 0;
    ts_node r = *m;
    r.attr.i[10] = 1;
    r.attr.f[1] = lo, r.attr.f[2] = hi;
    if (r.attr.ni < 11) r.attr.ni = 11;
    return absorb(c, i, p, &r);
}

/* 8. cast + sum_to siblings: an f32 value x read by exactly two alive nodes of one place, a cast
 * to bf16 or f16 and a sum_to over x's leading dims (its shape x's trailing dims) -> one
 * cast_sum_to node (ops/cast_sum.c) with both outputs, their value ids kept, at the earlier
 * node's index (x is made before either, and each output is ready before its readers); the later
 * node dies. Unlike rules 1-7 these are siblings, not producer and consumer, and the merged node
 * has two outputs. In an autocast training step x is a linear layer's output gradient: the bf16
 * copy the backward products read and the bias gradient, which then take one read of x, not two.
 * The outputs equal the two ops' bit for bit. */
static int fuse_cast_sum(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    if ((n->op != TS_OP_CAST && n->op != TS_OP_SUM_TO) || n->nin != 1 || n->nout != 1 || n->in[0] < 0) return 0;
    int x = n->in[0];
    if (c->uses[x] != 2 || g->vals[x].dtype != TS_F32) return 0; /* pinned x counts 3 */
    int j = -1; /* the other reader: after i, as i is the first of the two visited */
    for (int k = i + 1; k < g->nnodes && j < 0; k++)
        for (int s = 0; c->alive[k] && s < g->nodes[k].nin; s++)
            if (g->nodes[k].in[s] == x) {
                j = k;
                break;
            }
    if (j < 0) return 0;
    const ts_node *m = &g->nodes[j];
    const ts_node *cast = n->op == TS_OP_CAST ? n : m, *sum = n->op == TS_OP_CAST ? m : n;
    if (cast->op != TS_OP_CAST || sum->op != TS_OP_SUM_TO || m->nin != 1 || m->nout != 1) return 0;
    if (place(g, i) != place(g, j) || n->seg != m->seg) return 0;
    ts_dtype to = g->vals[cast->out[0]].dtype;
    if (to != TS_BF16 && to != TS_F16) return 0;
    const ts_val *xv = &g->vals[x], *sv = &g->vals[sum->out[0]];
    if (sv->ndim < 1 || sv->ndim > xv->ndim ||
        memcmp(sv->shape, xv->shape + xv->ndim - sv->ndim, sizeof(int64_t) * (size_t)sv->ndim) != 0)
        return 0;
    ts_node r;
    memset(&r, 0, sizeof r);
    r.op = TS_OP_CAST_SUM_TO;
    r.nin = 1, r.in[0] = x;
    for (int k = 1; k < TS_MAX_IN; k++) r.in[k] = -1;
    r.nout = 2, r.out[0] = cast->out[0], r.out[1] = sum->out[0];
    r.attr.i[0] = to, r.attr.i[1] = sv->ndim, r.attr.ni = 2;
    r.stage = n->stage, r.seg = n->seg;
    if (c->accept && !c->accept(c->accept_ctx, g, &r, m)) return 0;
    g->nodes[i] = r;
    g->vals[r.out[0]].node = i, g->vals[r.out[1]].node = i;
    c->alive[j] = 0;
    c->uses[x] = 1;
    return 1;
}

/* 9. a bf16 matmul's f32 product cast back to bf16: cast(matmul(a, b[, bias]) with f32_out = 1,
 * bf16) whose f32 product nothing else reads -> the matmul with f32_out = 0, writing bf16 itself.
 * Rule 5 made the f32 product so that rules 1 and 4 could fold the bias and the activation in;
 * where the next reader wants bf16 again (autocast's FFN in inference: gelu(x W1^T + b1) cast for
 * the second product), the matmul rounds its f32 epilogue's result once on the way out, as the
 * cast did, and the f32 tensor is never written (backend/cpu/matmul_dnnl.c: oneDNN applies the
 * bias and the activation in f32 before its bf16 store; its store flushes bf16 denormals, below
 * 1.2e-38, where the cast keeps them). */
static int fuse_matmul_bf16_out(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    if (n->op != TS_OP_CAST || n->nin != 1 || g->vals[n->out[0]].dtype != TS_BF16) return 0;
    int p = fusable_producer(c, n->in[0], i);
    if (p < 0) return 0;
    const ts_node *m = &g->nodes[p];
    if (m->op != TS_OP_MATMUL || TS_NODE_ATTRS(matmul, m).f32_out != 1) return 0;
    ts_node r = *m;
    r.attr.i[3] = 0;
    return absorb(c, i, p, &r);
}

/* The alive readers of value y (made by node i) read value keep instead; the counts follow.
 * Rules 10 and 14. */
static void move_readers(fuse_ctx *c, int i, int y, int keep) {
    for (int k = i + 1; k < c->g->nnodes; k++) {
        ts_node *m = &c->g->nodes[k];
        for (int s = 0; c->alive[k] && s < m->nin; s++)
            if (m->in[s] == y) m->in[s] = keep;
    }
    c->uses[keep] += c->uses[y];
    c->uses[y] = 0;
}

/* 10. one cast of a value per dtype: cast(x, t) at node i where an earlier alive node of the same
 * place already makes cast(x, t) -> i's readers read that one, and i dies. Autocast casts a
 * linear layer's input for each layer that reads it (models/bert.c: the layer norm's output for
 * the query, key and value products), three passes over x for one bf16 copy. Not when i's output
 * is named or pinned (a fetch, a name someone may look up). Unlike the other rules this rewires
 * readers: each alive reader's input slots are moved to the kept cast's output. A backward cast
 * is not merged into a forward one when the graph recomputes casts (ts_graph_recompute_casts
 * made it so that the forward's dies early). */
static int fuse_same_cast(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    if (n->op != TS_OP_CAST || n->nin != 1 || n->nout != 1 || n->in[0] < 0) return 0;
    int x = n->in[0], y = n->out[0];
    if (g->vals[y].name || c->pinned[y]) return 0;
    int j = -1;
    for (int k = 0; k < i && j < 0; k++) {
        const ts_node *m = &g->nodes[k];
        if (c->alive[k] && m->op == TS_OP_CAST && m->nin == 1 && m->nout == 1 && m->in[0] == x &&
            g->vals[m->out[0]].dtype == g->vals[y].dtype && place(g, k) == place(g, i) && m->seg == n->seg &&
            !(g->recompute_casts && k < g->bwd_start && i >= g->bwd_start))
            j = k;
    }
    if (j < 0) return 0;
    move_readers(c, i, y, g->nodes[j].out[0]);
    c->uses[x]--;
    c->alive[i] = 0;
    return 1;
}

/* Node n made op(x): one input, attributes zeroed, its output, stage and segment kept (rules 11
 * and 12 rewrite node i in place into such a node). */
static ts_node as_unary(const ts_node *n, int op, int x) {
    ts_node r = *n;
    r.op = op;
    r.nin = 1;
    r.in[0] = x;
    for (int j = 1; j < TS_MAX_IN; j++) r.in[j] = -1;
    memset(&r.attr, 0, sizeof r.attr);
    return r;
}

/* Node i becomes r, when the device runs r (asked with no producer: r absorbs none here); 0 and
 * nothing changed otherwise. */
static int rewrite(fuse_ctx *c, int i, const ts_node *r) {
    if (c->accept && !c->accept(c->accept_ctx, c->g, r, NULL)) return 0;
    c->g->nodes[i] = *r;
    return 1;
}

/* 11. a binary op by a constant scalar: mul, add or sub (the constant on either side) or div by a
 * power of two, of an f32 x by a one-element f32 constant k, the result of x's shape -> scale(x;
 * alpha, beta) in place: k x + (-0), x + k, x - k, k - x, x (1/k). Bit for bit the binary op's:
 * the scale kernel computes alpha x + beta with one rounding (or two, the second exact), -0 keeps
 * the sign of a zero product, and 1/k is exact for a power of two. It merges nothing itself (it
 * runs before the other rules, on node i), but makes the node a link of rule 3's chains:
 * PP-LCNetV3's learnable affine blocks (a scale and a bias of one element each after the
 * convolutions of PaddleOCR's detector) become one pass instead of two. */
static int scalar_to_scale(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    int op = n->op;
    if ((op != TS_OP_MUL && op != TS_OP_ADD && op != TS_OP_SUB && op != TS_OP_DIV) || n->nin != 2 || n->nout != 1)
        return 0;
    float k;
    int side = const_scalar(g, n->in[1], &k) ? 0 : const_scalar(g, n->in[0], &k) ? 1 : -1; /* x's slot */
    if (side < 0 || g->vals[n->in[side]].dtype != TS_F32 || !same_type(&g->vals[n->in[side]], &g->vals[n->out[0]]))
        return 0;
    float alpha = 1.f, beta = -0.f;
    int e = 0;
    if (op == TS_OP_MUL) alpha = k;
    else if (op == TS_OP_ADD) beta = k;
    else if (op == TS_OP_SUB) alpha = side ? -1.f : 1.f, beta = side ? k : -k;
    else if (side == 0 && fabsf(frexpf(k, &e)) == 0.5f && e > -125 && e < 127) alpha = 1.f / k;
    else return 0; /* k / x, or x / k with 1 / k inexact */
    int konst = n->in[1 - side];
    ts_node r = as_unary(n, TS_OP_SCALE, n->in[side]);
    r.attr.f[0] = alpha, r.attr.f[1] = beta;
    if (!rewrite(c, i, &r)) return 0;
    c->uses[konst]--; /* the constant: no longer read here */
    return 1;
}

/* Is node p scale(x; alpha, beta)? */
static int is_scale_by(const ts_node *p, int x, float alpha, float beta) {
    return p->op == TS_OP_SCALE && p->in[0] == x && p->attr.f[0] == alpha && p->attr.f[1] == beta;
}

/* 12. hard_swish as an ONNX export spells it (opsets before 14 have no HardSwish; PaddleOCR's
 * PP-LCNetV3 after every convolution): div(mul(x, clip(x + 3, 0, 6)), 6), the mul's operands in
 * either order, x + 3 already a scale (rule 11), each intermediate read once, all f32 of x's
 * shape -> hard_swish(x), which computes the same expression in the same order (ops/hardact.c):
 * the same bits. Four passes over x become one. */
static int fuse_hard_swish(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    float six;
    if (n->op != TS_OP_DIV || n->nin != 2 || !const_scalar(g, n->in[1], &six) || six != 6.f) return 0;
    int pm = fusable_producer(c, n->in[0], i);
    if (pm < 0 || g->nodes[pm].op != TS_OP_MUL || g->nodes[pm].nin != 2) return 0;
    const ts_node *m = &g->nodes[pm];
    for (int side = 0; side < 2; side++) {
        int x = m->in[side], pc = fusable_producer(c, m->in[1 - side], pm);
        if (x < 0 || pc < 0 || g->nodes[pc].op != TS_OP_CLIP || g->nodes[pc].nin != 1) continue;
        const ts_node *cl = &g->nodes[pc];
        if (TS_NODE_ATTRS(clip, cl).lo != 0.f || TS_NODE_ATTRS(clip, cl).hi != 6.f) continue;
        int ps = fusable_producer(c, cl->in[0], pc);
        if (ps < 0 || !is_scale_by(&g->nodes[ps], x, 1.f, 3.f)) continue;
        const ts_val *xv = &g->vals[x];
        if (xv->dtype != TS_F32 || !same_type(xv, &g->vals[n->out[0]]) || !same_type(xv, &g->vals[m->out[0]]))
            return 0;
        int konst = n->in[1];
        ts_node r = as_unary(n, TS_OP_HARD_SWISH, x);
        if (!rewrite(c, i, &r)) return 0;
        c->uses[x]--;     /* read by the scale and the mul, now by the hard_swish alone */
        c->uses[konst]--; /* the 6 */
        c->alive[pm] = c->alive[pc] = c->alive[ps] = 0;
        return 3;
    }
    return 0;
}

/* 13. a unary chain's f32 result cast to bf16: cast(u(x), bf16) with u a unary chain op or an
 * f32 fused_elementwise node (rule 3's) -> the fused_elementwise node storing bf16 (attr f[0] = 1,
 * ops/fused.c): BERT's GELU output cast for the FFN's second product in autocast (and the GELU's
 * clone in the backward, graph/recompute.c) is written once, in 16 bits, not as f32 then read
 * again. The same rounding as the cast's, so the same bits. */
static int fuse_unary_bf16_out(fuse_ctx *c, int i) {
    const ts_node *n = &c->g->nodes[i];
    if (n->op != TS_OP_CAST || c->g->vals[n->out[0]].dtype != TS_BF16) return 0;
    int p = unary_producer(c, i);
    return p >= 0 && absorb_chain(c, i, p, NULL, 1); /* not when p is no chain op, or stores bf16 already */
}

/* 14. a bf16 product's f32 result reshaped, then cast to bf16: cast(reshape(m), bf16) with m a
 * matmul of bf16 operands writing f32 (rule 5's; its bias and activation epilogue allowed), m's
 * result read only by the reshape and the reshape's only by the cast -> m writes bf16 (f32_out 0,
 * as rule 9), the reshape views that, and the cast's readers read the reshape's output (the cast
 * dies: this rule rewires readers, as rule 10 does). In bf16 BERT: the query, key and value
 * products, split into heads, which the fused attention reads in bf16 (graph/fuse_attention.c).
 * oneDNN rounds the f32 result as the cast does: the same bits (tests/test_fuse_casts.c). */
static int fuse_matmul_bf16_view(fuse_ctx *c, int i) {
    ts_graph *g = c->g;
    const ts_node *n = &g->nodes[i];
    if (n->op != TS_OP_CAST || n->nin != 1 || n->nout != 1 || g->vals[n->out[0]].dtype != TS_BF16) return 0;
    int y = n->out[0], r = fusable_producer(c, n->in[0], i);
    if (g->vals[y].name || c->pinned[y] || r < 0 || g->nodes[r].op != TS_OP_RESHAPE) return 0;
    int v = g->nodes[r].in[0], p = fusable_producer(c, v, r);
    if (p < 0 || g->nodes[p].op != TS_OP_MATMUL || TS_NODE_ATTRS(matmul, &g->nodes[p]).f32_out != 1) return 0;
    ts_node m = g->nodes[p], was_m = m;
    int rv = g->nodes[r].out[0];
    m.attr.i[3] = 0;
    g->vals[v].dtype = g->vals[rv].dtype = TS_BF16; /* what the device is asked about */
    if (c->accept && (!c->accept(c->accept_ctx, g, &m, &was_m) ||
                      !c->accept(c->accept_ctx, g, &g->nodes[r], NULL))) {
        g->vals[v].dtype = g->vals[rv].dtype = TS_F32;
        return 0;
    }
    g->nodes[p] = m;
    move_readers(c, i, y, rv);
    c->uses[rv]--; /* the cast, which dies */
    c->alive[i] = 0;
    return 1;
}

/* accept: asked of every merged node, with the producer it absorbs, before it is made (the
 * runtime asks the device: a backend that runs "matmul" may not know its activation attribute);
 * NULL: every rule may fire. */
int ts_pass_fuse(ts_graph *g, uint8_t *alive, const uint8_t *pinned, ts_fuse_accept accept, void *accept_ctx) {
    fuse_ctx c = {g, alive, pinned, calloc((size_t)(g->nvals ? g->nvals : 1), sizeof(int)), 0, accept, accept_ctx};
    if (!c.uses) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory fusing ops (%d values)", g->nvals), -1;
    for (int i = 0; i < g->nnodes && !c.backward; i++)
        c.backward = alive[i] && ts_node_phase(g, i, g->nodes[i].op == TS_OP_ACCUM_GRAD) != 0;
    for (int v = 0; v < g->nvals; v++) c.uses[v] = pinned[v] ? 1 : 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (!alive[i]) continue;
        const ts_node *n = &g->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) c.uses[n->in[j]]++;
    }
    int removed = 0;
    for (int i = 0; i < g->nnodes; i++) {
        if (!alive[i]) continue;
        scalar_to_scale(&c, i); /* changes node i's op only */
        removed += fuse_matmul_bias(&c, i) || fuse_matmul_scale(&c, i) ||
                   fuse_matmul_act(&c, i) || fuse_matmul_f32_out(&c, i) || fuse_conv_act(&c, i) ||
                   fuse_conv_clamp(&c, i) || fuse_unary_chain(&c, i) || fuse_cast_sum(&c, i) ||
                   fuse_matmul_bf16_out(&c, i) || fuse_unary_bf16_out(&c, i) || fuse_matmul_bf16_view(&c, i) ||
                   fuse_same_cast(&c, i);
        removed += fuse_hard_swish(&c, i);
    }
    free(c.uses);
    return removed;
}
