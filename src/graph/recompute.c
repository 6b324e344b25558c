/*
 * recompute.c — activation checkpointing (recomputation): segments of the forward whose
 * intermediates are not kept for the backward but computed again inside it.
 *
 * Why at autodiff time and not as a compile pass: the schedule is the node order, so the
 * recomputed forward must sit right before the gradient nodes that read it, and those gradient
 * nodes must read it. ts_backward builds exactly there and then, so it emits the clones and hands
 * the gradient rules node copies that name them; nothing is rewired or reordered afterwards.
 *
 * For a segment S (nodes lo..hi, contiguous because the graph is append-only), at the first of
 * its nodes the backward walk differentiates (walking from the end):
 *  1. clone every node of S in forward order, reading
 *       - for a value produced outside S (the segment's input, the attention mask, parameters):
 *         the original value: these are the checkpoints, kept alive until here;
 *       - for a value produced inside S: its clone;
 *     attributes are copied, so a cloned dropout keeps its salt and seed and draws the forward's
 *     mask (ops/dropout.c), and every clone computes bit for bit what the original did;
 *     side-effect nodes are not cloned (they run once, in the forward);
 *  2. each node of S is then differentiated from a copy whose in / out are renamed to the
 *     clones. Gradients stay keyed by the original values, so contributions from outside S (a
 *     consumer in the next segment, the head) and from inside S add up as without recomputation.
 * The forward originals of S are then read only by forward nodes and die there (graph/memplan.c
 * frees by last use); the values S exports (its output) are read by later forward nodes and, as
 * the next segment's checkpoint, by that segment's clones and gradients. Clones no gradient reads
 * (a segment's last layer norm, often) are removed by dead-code elimination at compile time.
 * Segments are recomputed in reverse forward order, so when S is cloned, no segment before it
 * has been: one value map for the whole backward, each entry written once.
 */
#include "graph/recompute.h"
#include "graph/opdef.h"

ts_status ts_graph_recompute_begin(ts_graph *g) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_graph_recompute_begin: graph is NULL");
    if (g->status != TS_OK) return ts_graph_status(g);
    if (g->has_backward)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_graph_recompute_begin: the graph already has a backward "
                             "pass; mark segments while building the forward"), g->status;
    if (g->open_seg)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_graph_recompute_begin: segment %d is still open "
                             "(segments do not nest)", g->open_seg), g->status;
    g->open_seg = ++g->nseg;
    return TS_OK;
}

ts_status ts_graph_recompute_end(ts_graph *g) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_graph_recompute_end: graph is NULL");
    if (g->status != TS_OK) return ts_graph_status(g);
    if (!g->open_seg)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_graph_recompute_end: no recompute segment is open"), g->status;
    g->open_seg = 0;
    return TS_OK;
}

/* Set one of g's recompute options (fn names the call in errors); only before ts_backward. */
static ts_status set_option(ts_graph *g, const char *fn, int *option) {
    if (!g) return ts_err(TS_ERR_ARG, "%s: graph is NULL", fn);
    if (g->status != TS_OK) return ts_graph_status(g);
    if (g->has_backward)
        return ts_graph_fail(g, TS_ERR_ARG, "%s: the graph already has a backward pass; call it before ts_backward",
                             fn), g->status;
    *option = 1;
    return TS_OK;
}

ts_status ts_graph_recompute_gelu(ts_graph *g) {
    return set_option(g, "ts_graph_recompute_gelu", g ? &g->recompute_gelu : NULL);
}

ts_status ts_graph_recompute_casts(ts_graph *g) {
    return set_option(g, "ts_graph_recompute_casts", g ? &g->recompute_casts : NULL);
}

ts_status ts_recompute_init(ts_recompute *rc, int nvals) {
    rc->nv = nvals;
    rc->seg = 0;
    rc->map = malloc(sizeof(int) * (size_t)(nvals ? nvals : 1));
    rc->clone = malloc(sizeof(int) * (size_t)(nvals ? nvals : 1));
    if (!rc->map || !rc->clone) {
        ts_recompute_free(rc);
        return ts_err(TS_ERR_NOMEM, "ts_backward: out of memory for the recompute map of %d values", nvals);
    }
    for (int v = 0; v < nvals; v++) rc->map[v] = v, rc->clone[v] = -1;
    return TS_OK;
}

void ts_recompute_free(ts_recompute *rc) {
    free(rc->map);
    free(rc->clone);
    rc->map = rc->clone = NULL;
}

static int mapped(const ts_recompute *rc, int v) { return v >= 0 && v < rc->nv ? rc->map[v] : v; }

/* Append clones of nodes lo..hi in order; record each output's clone in the map. */
static ts_status clone_segment(ts_graph *g, ts_recompute *rc, int lo, int hi) {
    for (int j = lo; j <= hi; j++) {
        ts_node n = g->nodes[j]; /* a copy: adding nodes may move g->nodes */
        if (ts_op_get(n.op)->flags & TS_OPF_SIDE_EFFECT) continue;
        int in[TS_MAX_IN], out[TS_MAX_OUT];
        for (int k = 0; k < n.nin; k++) in[k] = mapped(rc, n.in[k]);
        ts_node_add(g, n.op, n.nin, in, &n.attr, out);
        if (g->status != TS_OK) return g->status;
        for (int k = 0; k < n.nout; k++) rc->map[n.out[k]] = out[k];
    }
    return TS_OK;
}

ts_status ts_recompute_node(ts_graph *g, ts_recompute *rc, int i, ts_node *use) {
    *use = g->nodes[i];
    int s = use->seg;
    if (!s) return TS_OK;
    if (s != rc->seg) {
        int lo = i, hi = i;
        while (lo > 0 && g->nodes[lo - 1].seg == s) lo--;
        while (hi + 1 < g->nnodes && g->nodes[hi + 1].seg == s) hi++;
        rc->seg = s;
        ts_status st = clone_segment(g, rc, lo, hi);
        if (st != TS_OK) return st;
        *use = g->nodes[i];
    }
    for (int k = 0; k < use->nin; k++) use->in[k] = mapped(rc, use->in[k]);
    for (int k = 0; k < use->nout; k++) use->out[k] = mapped(rc, use->out[k]);
    return TS_OK;
}

/* The forward node making v if it is one ts_recompute_reads may clone (a GELU or a cast, outside
 * every segment, on stage `stage`), else NULL. */
static const ts_node *cheap_producer(const ts_graph *g, const ts_recompute *rc, int v, int stage) {
    if (v < 0 || v >= rc->nv || g->vals[v].kind != TS_V_NODE) return NULL;
    const ts_node *p = &g->nodes[g->vals[v].node];
    return p->seg == 0 && p->stage == stage && (p->op == TS_OP_GELU || p->op == TS_OP_CAST) ? p : NULL;
}

/* Append a clone of forward node *src reading `in`; its output is recorded as the clone of
 * src's output. */
static ts_status clone_one(ts_graph *g, ts_recompute *rc, const ts_node *src, int in) {
    ts_node n = *src; /* a copy: adding nodes may move g->nodes */
    int out;
    ts_node_add(g, n.op, 1, &in, &n.attr, &out);
    if (g->status != TS_OK) return g->status;
    rc->clone[n.out[0]] = out;
    return TS_OK;
}

ts_status ts_recompute_reads(ts_graph *g, ts_recompute *rc, const char *dep, ts_node *use) {
    if ((!g->recompute_gelu && !g->recompute_casts) || use->seg || use->op == TS_OP_CAST)
        return TS_OK; /* a cast's rule reads no value */
    for (int k = 0; k < use->nin; k++) {
        const ts_node *p = cheap_producer(g, rc, use->in[k], use->stage), *q = p;
        if (p && p->op == TS_OP_CAST && g->recompute_casts && p->in[0] >= 0 && g->vals[p->in[0]].kind == TS_V_PARAM) {
            if (rc->clone[p->out[0]] < 0 && clone_one(g, rc, p, p->in[0]) != TS_OK) return g->status;
            use->in[k] = rc->clone[use->in[k]];
            continue;
        }
        if (!g->recompute_gelu) continue;
        if (p && p->op == TS_OP_CAST) q = cheap_producer(g, rc, p->in[0], use->stage);
        if (!q || q->op != TS_OP_GELU || q->in[0] < 0 || !dep[q->in[0]]) continue;
        ts_node gelu = *q, cast = *p; /* copies: adding nodes may move g->nodes */
        if (rc->clone[gelu.out[0]] < 0) {
            int out;
            ts_node_add(g, gelu.op, gelu.nin, gelu.in, &gelu.attr, &out);
            if (g->status != TS_OK) return g->status;
            rc->clone[gelu.out[0]] = out;
        }
        if (cast.op == TS_OP_CAST && rc->clone[cast.out[0]] < 0 && clone_one(g, rc, &cast, rc->clone[gelu.out[0]]))
            return g->status;
        use->in[k] = rc->clone[use->in[k]];
    }
    return TS_OK;
}
