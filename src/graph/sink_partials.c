/*
 * sink_partials.c — where the backward makes a tied parameter's early gradient share.
 *
 * A parameter read twice gets two gradient contributions summed by an add (autodiff.c). The
 * tied word embeddings of BERT are the case that matters: the MLM decoder's share, a [V, C]
 * product of the logits' gradient [N, V] and the head's hidden [N, C], is made first in the
 * backward, and the lookup's scatter-add [V, C] last. With the updates inside the backward pass
 * the gradient is an arena value, and the decoder's share waits in the arena through the whole
 * backward, at its peak (BERT-Base f32: 89 MiB against the 19-60 MiB of the logits' gradient it
 * is made from); ts_optimizer calls this pass then. When such a share's node reads fewer bytes than it writes,
 * it is moved to just before the add: its inputs live longer instead, the larger product only
 * for a moment. The same arithmetic on the same values, in another order: the same bits.
 */
#include "graph/ir.h"
#include "graph/opdef.h"

#include <stdlib.h>
#include <string.h>

/* Node i's input bytes, each value once. */
static size_t input_bytes(const ts_graph *g, const ts_node *n) {
    size_t bytes = 0;
    for (int j = 0; j < n->nin; j++) {
        int v = n->in[j], seen = 0;
        for (int k = 0; k < j && v >= 0; k++) seen |= n->in[k] == v;
        if (v >= 0 && !seen) bytes += ts_val_bytes(&g->vals[v]);
    }
    return bytes;
}

ts_status ts_sink_gradient_partials(ts_graph *g) {
    int nn = g->nnodes, nv = g->nvals;
    if (g->status != TS_OK || g->nstages > 0 || g->bwd_start < 0) return g->status; /* stages: their own order */
    size_t cap = (size_t)(nv > nn ? nv : nn) + 1; /* readers and reader are reused per node below */
    int *readers = calloc(cap, sizeof(int)), *reader = malloc(sizeof(int) * cap);
    int *before = malloc(sizeof(int) * ((size_t)nn + 1)); /* node i moves to just before node before[i] */
    uint8_t *grad = calloc((size_t)nv + 1, 1);
    if (!readers || !reader || !before || !grad) {
        free(readers), free(reader), free(before), free(grad);
        return ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory ordering %d nodes", nn), g->status;
    }
    for (int v = 0; v < nv; v++)
        if (g->vals[v].kind == TS_V_PARAM && g->vals[v].grad >= 0) grad[g->vals[v].grad] = 1;
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < g->nodes[i].nin; j++)
            if (g->nodes[i].in[j] >= 0) readers[g->nodes[i].in[j]]++, reader[g->nodes[i].in[j]] = i;
    int moved = 0;
    for (int i = 0; i < nn; i++) before[i] = -1;
    for (int r = g->bwd_start; r < nn; r++) {
        const ts_node *a = &g->nodes[r];
        if (a->op != TS_OP_ADD) continue;
        int o = a->out[0];
        /* the add making a parameter's gradient, or the value ts_backward copies into it */
        int makes = grad[o] || (readers[o] == 1 && g->nodes[reader[o]].op == TS_OP_SCALE &&
                                grad[g->nodes[reader[o]].out[0]]);
        for (int j = 0; makes && j < a->nin; j++) {
            int v = a->in[j];
            if (v < 0 || g->vals[v].kind != TS_V_NODE || readers[v] != 1) continue;
            int i = g->vals[v].node;
            const ts_node *n = &g->nodes[i];
            if (i < g->bwd_start || i + 1 >= r || n->nout != 1 || ts_val_bytes(&g->vals[v]) <= input_bytes(g, n))
                continue;
            before[i] = r, moved++;
        }
    }
    ts_status st = TS_OK;
    if (moved) {
        /* first[r]: the first node that moves before node r, next[k]: the one after k (by index);
         * order: position -> node */
        int *first = readers, *next = reader, *order = malloc(sizeof(int) * (size_t)nn), w = 0;
        if (!order) {
            free(readers), free(reader), free(before), free(grad);
            return ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory ordering %d nodes", nn), g->status;
        }
        for (int i = 0; i < nn; i++) first[i] = -1;
        for (int k = nn - 1; k >= 0; k--)
            if (before[k] >= 0) next[k] = first[before[k]], first[before[k]] = k;
        for (int i = 0; i < nn; i++) {
            for (int k = first[i]; k >= 0; k = next[k]) order[w++] = k;
            if (before[i] < 0) order[w++] = i;
        }
        st = ts_graph_apply_order(g, order, NULL);
        free(order);
    }
    free(readers), free(reader), free(before), free(grad);
    return st;
}
