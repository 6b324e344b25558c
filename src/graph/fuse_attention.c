/*
 * fuse_attention.c — ts_graph_fuse_attention: the unfused attention a model builds from ops
 * becomes one attention node (ops/attention.c), before ts_backward, so the backward pass is the
 * fused op's too. The pattern, read from its end (values in brackets are optional):
 *
 *   s  = matmul(q, k, trans_b = 1)              | bf16: cast(matmul(cast(q, bf16), cast(k, bf16)), f32)
 *   s  = scale(s, alpha, 0)                     (alpha becomes the op's scale; also mul or div by a
 *                                                scalar constant, or no factor: 1)
 *   p  = softmax(s[, mask])                     | softmax(add(s, mask)) (ONNX's form)
 *   [p = dropout(p, prob)]                      (its salt and seed kept: the same keep bits)
 *   c  = matmul(p, v)                           | bf16: cast(matmul(cast(p, bf16), cast(v, bf16)), f32)
 *   [y = transpose(c, {0, 2, 1, 3})]
 * q, k, v rank-4 f32 [B, H, T|S, D]; in f32, k may also come as transpose(k, {0, 1, 3, 2}) into
 * matmul(q, kt) (ONNX's form). When y is transposed and q, k and v are each
 * transpose(x, {0, 2, 1, 3}) of some x, the node takes the x's in TS_ATTN_BTHD and replaces y, so
 * the four transposes go too; otherwise it takes q, k, v in TS_ATTN_BHTD and replaces c.
 * A pattern is left alone when any value inside it (s, p, c, the casts) has a second reader or a
 * name (it may be fetched), when its nodes sit on two pipeline stages or recompute segments, or
 * when the mask depends on a parameter (the fused op gives the mask no gradient).
 * The rewrite: the pattern's last node becomes the attention node in place (same output value,
 * so its readers are untouched, and the node's index is after every input's producer); the other
 * pattern nodes are left unread, for dead-code elimination at compile time. In bf16 the node reads
 * q, k and v cast to bf16 by the pattern's casts (see rewrite).
 */
#include "graph/opdef.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    const ts_graph *g;
    int *readers;  /* per value: nodes reading it */
    int *reader;   /* per value: the last node reading it */
    int nv;        /* values when the pass began (the arrays' size; lse values come after) */
    int end;       /* node index of the pattern's end */
    int stage, seg;
} walk;

static const ts_node *producer(const ts_graph *g, int v) {
    if (v < 0 || g->vals[v].kind != TS_V_NODE || g->vals[v].node < 0) return NULL;
    return &g->nodes[g->vals[v].node];
}

/* Value v is inside the pattern: one reader, no name, produced on the pattern's stage and segment. */
static int inner(walk *w, int v) {
    const ts_node *p = v < w->nv ? producer(w->g, v) : NULL;
    return p && w->readers[v] == 1 && !w->g->vals[v].name && p->stage == w->stage && p->seg == w->seg;
}

static int is_perm0213(const ts_node *n) {
    return n && n->op == TS_OP_TRANSPOSE && n->attr.ni == 4 && n->attr.i[0] == 0 && n->attr.i[1] == 2 &&
           n->attr.i[2] == 1 && n->attr.i[3] == 3;
}

/* The product's operands behind the compute casts: node n is a matmul (f32: its operands; bf16:
 * each operand a cast to bf16 of an f32 value, which must be inner; cast[0], cast[1] the casts'
 * node indices, -1 in f32). 0 when it does not fit. */
static int operands(walk *w, const ts_node *n, int trans_b, int bf16, int *a, int *b, int cast[2]) {
    cast[0] = cast[1] = -1;
    if (!n || n->op != TS_OP_MATMUL || n->nin != 2 || n->attr.i[0] != 0 || n->attr.i[1] != trans_b || n->attr.i[2])
        return 0;
    *a = n->in[0], *b = n->in[1];
    if (!bf16) return w->g->vals[*a].dtype == TS_F32 && w->g->vals[*b].dtype == TS_F32;
    for (int k = 0; k < 2; k++) {
        int *x = k ? b : a;
        const ts_node *c = producer(w->g, *x);
        if (!c || c->op != TS_OP_CAST || !inner(w, *x) || w->g->vals[*x].dtype != TS_BF16) return 0;
        cast[k] = w->g->vals[*x].node;
        *x = c->in[0];
        if (w->g->vals[*x].dtype != TS_F32) return 0;
    }
    return 1;
}

/* The matmul behind value v (f32) and whether it is a bf16 product behind a cast; NULL if none. */
static const ts_node *product(walk *w, int v, int *bf16) {
    const ts_node *n = producer(w->g, v);
    *bf16 = 0;
    if (n && n->op == TS_OP_CAST && w->g->vals[n->in[0]].dtype == TS_BF16) {
        if (!inner(w, n->in[0])) return NULL;
        *bf16 = 1;
        n = producer(w->g, n->in[0]);
    }
    return n && n->op == TS_OP_MATMUL ? n : NULL;
}

/* 1 when value v depends on a parameter (DFS over producers; seen marks visited values). */
static int on_param(const ts_graph *g, int v, int nv, uint8_t *seen) {
    if (v < 0 || v >= nv || seen[v]) return 0;
    seen[v] = 1;
    if (g->vals[v].kind == TS_V_PARAM) return 1;
    const ts_node *n = producer(g, v);
    for (int i = 0; n && i < n->nin; i++)
        if (on_param(g, n->in[i], nv, seen)) return 1;
    return 0;
}

static int is_perm0132(const ts_node *n) {
    return n && n->op == TS_OP_TRANSPOSE && n->attr.ni == 4 && n->attr.i[0] == 0 && n->attr.i[1] == 1 &&
           n->attr.i[2] == 3 && n->attr.i[3] == 2;
}

/* Value v is an f32 constant of one element; *x its value. */
static int scalar_const(const ts_graph *g, int v, float *x) {
    const ts_val *c = &g->vals[v];
    if (c->kind != TS_V_CONST || c->dtype != TS_F32 || ts_val_numel(c) != 1 || !c->data) return 0;
    *x = *(const float *)ts_tensor_data(c->data);
    return 1;
}

/* softmax's input v as ONNX writes a mask: add(scores, mask), either order, inner. *s the scores
 * side (whose producer is a product or a scale of one), *mask the other (f32); 1 when v is no
 * add (no mask: *s = v). 0 when it is an add that does not fit. */
static int scores_side(walk *w, int v, int *s, int *mask) {
    const ts_node *ad = producer(w->g, v);
    *s = v;
    if (!ad || ad->op != TS_OP_ADD) return 1;
    if (!inner(w, v)) return 0;
    for (int side = 0; side < 2; side++) {
        const ts_node *p = producer(w->g, ad->in[side]);
        int op = p ? p->op : -1;
        if (op == TS_OP_MATMUL || op == TS_OP_SCALE || op == TS_OP_MUL || op == TS_OP_DIV || op == TS_OP_CAST) {
            *s = ad->in[side], *mask = ad->in[1 - side];
            return w->g->vals[*mask].dtype == TS_F32;
        }
    }
    return 0;
}

/* The scores' factor before value v: scale(x, a, 0) -> a; mul(x, c) or mul(c, x) -> c; div(x, c) ->
 * 1 / c (c a scalar constant); otherwise none: 1, *x = v. 0 when such a node is not inner. */
static int scale_of(walk *w, int v, int *x, float *a) {
    const ts_node *n = producer(w->g, v);
    float c;
    *x = v, *a = 1.f;
    if (n && n->op == TS_OP_SCALE && n->attr.f[1] == 0.f) *a = n->attr.f[0], *x = n->in[0];
    else if (n && n->op == TS_OP_MUL && scalar_const(w->g, n->in[1], &c)) *a = c, *x = n->in[0];
    else if (n && n->op == TS_OP_MUL && scalar_const(w->g, n->in[0], &c)) *a = c, *x = n->in[1];
    else if (n && n->op == TS_OP_DIV && scalar_const(w->g, n->in[1], &c) && c != 0.f) *a = 1.f / c, *x = n->in[0];
    else return 1;
    return inner(w, v) && isfinite(*a);
}

typedef struct {
    int q, k, v, mask, layout, compute;
    float scale, p;
    int64_t salt;
    int cast[3]; /* bf16: the nodes casting q, k, v to bf16 for the unfused products (the node reads
                    bf16 inputs through them, see rewrite), else -1 */
} match;

/* Match the pattern ending at node index e; 1 with *m filled, else 0. */
static int match_at(walk *w, int e, match *m, uint8_t *seen) {
    const ts_graph *g = w->g;
    const ts_node *end = &g->nodes[e];
    w->end = e, w->stage = end->stage, w->seg = end->seg;
    int c = end->out[0], bthd = is_perm0213(end);
    if (bthd) {
        c = end->in[0];
        if (!inner(w, c)) return 0;
    }
    int bf16, bf16s, p, v, s, q, k, pv_cast[2], qk_cast[2];
    const ts_node *pv = product(w, c, &bf16);
    if (!pv || !operands(w, pv, 0, bf16, &p, &v, pv_cast)) return 0;
    if (pv->out[0] != c && !inner(w, pv->out[0])) return 0;
    if (!inner(w, p)) return 0;
    const ts_node *pn = producer(g, p);
    m->p = 0.f, m->salt = g->nvals;
    if (pn->op == TS_OP_DROPOUT) {
        m->p = pn->attr.f[0], m->salt = pn->attr.i[0];
        if ((uint64_t)pn->attr.i[1] != g->seed) return 0; /* made under another seed: its bits differ */
        p = pn->in[0];
        if (!inner(w, p)) return 0;
        pn = producer(g, p);
    }
    if (pn->op != TS_OP_SOFTMAX) return 0;
    m->mask = pn->nin > 1 ? pn->in[1] : -1;
    s = pn->in[0];
    if (m->mask < 0 && !scores_side(w, s, &s, &m->mask)) return 0;
    if (!scale_of(w, s, &s, &m->scale)) return 0;
    const ts_node *qk = product(w, s, &bf16s);
    if (!inner(w, s) || !qk || bf16s != bf16) return 0;
    if (!operands(w, qk, 1, bf16, &q, &k, qk_cast)) { /* ONNX's form: q times k transposed by a Transpose */
        const ts_node *kt = bf16 || !operands(w, qk, 0, 0, &q, &k, qk_cast) ? NULL : producer(g, k);
        if (!kt || !is_perm0132(kt) || !inner(w, k)) return 0;
        k = kt->in[0];
    }
    if (qk->out[0] != s && !inner(w, qk->out[0])) return 0;
    const ts_val *qv = &g->vals[q], *kv = &g->vals[k], *vv = &g->vals[v];
    if (qv->ndim != 4 || kv->ndim != 4 || vv->ndim != 4) return 0;
    if (m->mask >= 0) {
        memset(seen, 0, (size_t)w->nv);
        if (on_param(g, m->mask, w->nv, seen)) return 0;
    }
    m->layout = TS_ATTN_BHTD;
    if (bthd && is_perm0213(producer(g, q)) && is_perm0213(producer(g, k)) && is_perm0213(producer(g, v))) {
        if (bf16 && (!inner(w, q) || !inner(w, k) || !inner(w, v))) return 0; /* rewrite reorders them */
        m->layout = TS_ATTN_BTHD;
        q = producer(g, q)->in[0], k = producer(g, k)->in[0], v = producer(g, v)->in[0];
    } else if (bthd) {
        return 0; /* the end transposes, the inputs do not: the form ending at c was taken */
    } else if (w->readers[c] == 1 && !g->vals[c].name && is_perm0213(&g->nodes[w->reader[c]]) &&
               is_perm0213(producer(g, q)) && is_perm0213(producer(g, k)) && is_perm0213(producer(g, v))) {
        return 0; /* the transpose reading c will take the whole, in BTHD */
    }
    m->q = q, m->k = k, m->v = v, m->compute = bf16 ? TS_BF16 : TS_F32;
    m->cast[0] = qk_cast[0], m->cast[1] = qk_cast[1], m->cast[2] = pv_cast[1];
    return 1;
}

/* Node e becomes the attention node of m, its output kept, an lse value added: 0; -1 out of memory;
 * -2 when the op refuses the match (cannot happen for a matched pattern), node e left as it was.
 * In bf16 the node reads q, k and v in bf16, through the pattern's casts: in TS_ATTN_BHTD their
 * outputs; in TS_ATTN_BTHD, where each cast reads transpose(x) (that value inner), the two nodes
 * swap: the transpose's node casts x to bf16 (its value now bf16 in x's shape, which the node
 * reads) and the cast's node transposes that, so the unfused product left unread still reads a
 * bf16 [B, H, T, D] value (a recomputed segment clones it, shapes and all). The kernel would round
 * f32 q, k, v to bf16 alike, so the numbers are the same; the backward keeps the bf16 copies and
 * the f32 ones die in the forward. */
static int rewrite(ts_graph *g, int e, const match *m) {
    int lse = ts_val_add(g, TS_V_NODE, TS_F32, 0, NULL);
    if (lse == TS_NONE) return -1;
    int in[3] = {m->q, m->k, m->v}, t[3] = {-1, -1, -1};
    ts_node was[3][2];
    ts_val was_val[3];
    for (int i = 0; i < 3; i++) {
        if (m->cast[i] < 0) continue;
        ts_node *c = &g->nodes[m->cast[i]];
        if (m->layout == TS_ATTN_BHTD) {
            in[i] = c->out[0];
            continue;
        }
        int tv = c->in[0], x = in[i];
        t[i] = g->vals[tv].node;
        ts_node *tn = &g->nodes[t[i]];
        was[i][0] = *tn, was[i][1] = *c, was_val[i] = g->vals[tv];
        tn->op = TS_OP_CAST, tn->attr = was[i][1].attr; /* in x, out tv */
        c->op = TS_OP_TRANSPOSE, c->attr = was[i][0].attr; /* in tv, out the cast's value */
        g->vals[tv].dtype = TS_BF16;
        g->vals[tv].ndim = g->vals[x].ndim;
        memcpy(g->vals[tv].shape, g->vals[x].shape, sizeof g->vals[tv].shape);
        in[i] = tv;
    }
    ts_node *n = &g->nodes[e];
    int y = n->out[0];
    ts_node r = *n;
    r.op = TS_OP_ATTENTION;
    r.nin = m->mask >= 0 ? 4 : 3;
    for (int i = 0; i < TS_MAX_IN; i++) r.in[i] = -1;
    r.in[0] = in[0], r.in[1] = in[1], r.in[2] = in[2], r.in[3] = m->mask;
    memset(&r.attr, 0, sizeof r.attr);
    r.attr.f[0] = m->scale, r.attr.f[1] = m->p;
    r.attr.i[0] = m->salt, r.attr.i[1] = (int64_t)g->seed, r.attr.i[2] = m->layout, r.attr.i[3] = m->compute;
    r.attr.ni = 4;
    r.nout = 2;
    r.out[0] = y, r.out[1] = lse;
    g->vals[lse].node = e;
    ts_val keep = g->vals[y];
    ts_node old = *n;
    *n = r;
    ts_status s = ts_op_get(TS_OP_ATTENTION)->infer(g, n);
    if (s || g->vals[y].ndim != keep.ndim || memcmp(g->vals[y].shape, keep.shape, sizeof keep.shape)) {
        *n = old, g->vals[y] = keep; /* put the node back rather than change a shape */
        for (int i = 0; i < 3; i++)
            if (t[i] >= 0)
                g->nodes[t[i]] = was[i][0], g->nodes[m->cast[i]] = was[i][1], g->vals[was[i][0].out[0]] = was_val[i];
        return -2;
    }
    return 0;
}

int ts_graph_fuse_attention(ts_graph *g) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_graph_fuse_attention: graph is NULL"), -1;
    if (g->status) return ts_err(g->status, "ts_graph_fuse_attention: %s", ts_graph_msg(g)), -1;
    if (g->has_backward)
        return ts_err(TS_ERR_ARG, "ts_graph_fuse_attention: the graph has a backward pass already; fuse before "
                      "ts_backward, so the backward is the fused op's"), -1;
    int *readers = calloc((size_t)g->nvals + 1, sizeof(int)), *reader = calloc((size_t)g->nvals + 1, sizeof(int));
    uint8_t *seen = malloc((size_t)g->nvals + 1);
    if (!readers || !reader || !seen) {
        free(readers), free(reader), free(seen);
        return ts_err(TS_ERR_NOMEM, "ts_graph_fuse_attention: out of memory"), -1;
    }
    for (int i = 0; i < g->nnodes; i++)
        for (int j = 0; j < g->nodes[i].nin; j++)
            if (g->nodes[i].in[j] >= 0) readers[g->nodes[i].in[j]]++, reader[g->nodes[i].in[j]] = i;
    walk w = {g, readers, reader, g->nvals, 0, 0, 0};
    int made = 0, nn = g->nnodes;
    for (int e = 0; e < nn && made >= 0; e++) {
        int op = g->nodes[e].op;
        if (op != TS_OP_TRANSPOSE && op != TS_OP_MATMUL && op != TS_OP_CAST) continue;
        match m;
        if (!match_at(&w, e, &m, seen)) continue;
        int r = rewrite(g, e, &m);
        if (r == -1) made = -1;
        else if (r == 0) made++;
    }
    free(readers), free(reader), free(seen);
    if (made < 0) return ts_err(TS_ERR_NOMEM, "ts_graph_fuse_attention: out of memory"), -1;
    return made;
}
