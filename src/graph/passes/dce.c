/* dce.c — dead-code elimination: keep the nodes that a pinned value or a side effect needs. */
#include "graph/opdef.h"
#include "graph/passes/passes.h"

int ts_pass_dce(ts_graph *g, uint8_t *alive, const uint8_t *pinned, int keep_side_effects) {
    uint8_t *need = calloc((size_t)g->nvals + 1, 1);
    if (!need) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory eliminating dead code (%d values)", g->nvals), -1;
    for (int v = 0; v < g->nvals; v++) need[v] = pinned[v];
    int removed = 0;
    for (int i = g->nnodes - 1; i >= 0; i--) {
        if (!alive[i]) continue;
        const ts_node *n = &g->nodes[i];
        int keep = keep_side_effects && (ts_op_get(n->op)->flags & TS_OPF_SIDE_EFFECT);
        for (int k = 0; k < n->nout; k++) keep |= need[n->out[k]];
        if (!keep) {
            alive[i] = 0;
            removed++;
            continue;
        }
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0) need[n->in[j]] = 1;
    }
    free(need);
    return removed;
}
