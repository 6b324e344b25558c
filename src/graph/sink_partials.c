/*
 * sink_partials.c — where the backward makes a tied parameter's early gradient share.
 *
 * A parameter read twice gets two gradient contributions summed by an add (autodiff.c). The
 * tied word embeddings of BERT are the case that matters: the MLM decoder's share, a [V, C]
 * product of the logits' gradient [N, V] and the head's hidden [N, C], is made first in the
 * backward, and the lookup's scatter-add [V, C] last. With the updates inside the backward pass
 * the gradient is an arena value, and the decoder's share waits in the arena through the whole
 * backward, at its peak (BERT-Base f32: 89 MiB against the 19-60 MiB of the logits' gradient it
 * is made from); ts_optimizer calls this pass then. When the nodes making such a share read fewer
 * bytes than they write, they move to just before the add: their inputs live longer instead,
 * the larger product only for a moment. The same arithmetic on the same values, in another
 * order: the same bits.
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

static int by_key(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* 1 when value o is a parameter's gradient, or becomes one through copies or casts that only
 * o feeds (ts_backward's copy of a shared gradient; a 16-bit parameter's cast gradient). */
static int makes_grad(const ts_graph *g, const uint8_t *grad, const int *readers, const int *reader, int o) {
    for (int hop = 0; hop < 4; hop++) {
        if (grad[o]) return 1;
        const ts_node *n = readers[o] == 1 ? &g->nodes[reader[o]] : NULL;
        if (!n || (n->op != TS_OP_SCALE && n->op != TS_OP_CAST)) return 0;
        o = n->out[0];
    }
    return 0;
}

/* Move the node making value v (an input of the add at node r that only that add reads) to just
 * before node r, with the casts and copies below it that only it reads (bf16 compute: the
 * decoder's product, then its cast), when the group writes more than it reads: the bytes of v
 * against those of the group's bottom node's inputs. Returns the number of nodes moved. */
static int sink(const ts_graph *g, const int *readers, int *before, int v, int r) {
    int chain[8], n = 0;
    for (int u = v; u >= 0 && n < 8;) {
        int i = g->vals[u].kind == TS_V_NODE ? g->vals[u].node : -1;
        if (i < g->bwd_start || i + 1 >= r || before[i] >= 0 || readers[u] != 1 || g->nodes[i].nout != 1) break;
        chain[n++] = i;
        const ts_node *nd = &g->nodes[i];
        u = nd->op == TS_OP_CAST || nd->op == TS_OP_SCALE ? nd->in[0] : -1;
    }
    if (!n || ts_val_bytes(&g->vals[v]) <= input_bytes(g, &g->nodes[chain[n - 1]])) return 0;
    for (int k = 0; k < n; k++) before[chain[k]] = r;
    return n;
}

ts_status ts_sink_gradient_partials(ts_graph *g) {
    int nn = g->nnodes, nv = g->nvals;
    if (g->status != TS_OK || g->nstages > 0 || g->bwd_start < 0) return g->status; /* stages: their own order */
    int *readers = calloc((size_t)nv + 1, sizeof(int)), *reader = malloc(sizeof(int) * ((size_t)nv + 1));
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
        if (!makes_grad(g, grad, readers, reader, a->out[0])) continue;
        for (int j = 0; j < a->nin; j++)
            if (a->in[j] >= 0) moved += sink(g, readers, before, a->in[j], r);
    }
    ts_status st = TS_OK;
    if (moved) {
        /* the new order: sorted by (place, index), place 2 r - 1 for a node moved before node r
         * and 2 i for node i that stays, so the moved nodes land just before their add in
         * their own order */
        int64_t *key = malloc(sizeof(int64_t) * (size_t)nn);
        int *order = malloc(sizeof(int) * (size_t)nn);
        if (!key || !order) {
            free(key), free(order), free(readers), free(reader), free(before), free(grad);
            return ts_graph_fail(g, TS_ERR_NOMEM, "ts_optimizer: out of memory ordering %d nodes", nn), g->status;
        }
        for (int i = 0; i < nn; i++) key[i] = (int64_t)(before[i] >= 0 ? 2 * before[i] - 1 : 2 * i) * nn + i;
        qsort(key, (size_t)nn, sizeof *key, by_key);
        for (int w = 0; w < nn; w++) order[w] = (int)(key[w] % nn);
        st = ts_graph_apply_order(g, order, NULL);
        free(key), free(order);
    }
    free(readers), free(reader), free(before), free(grad);
    return st;
}
