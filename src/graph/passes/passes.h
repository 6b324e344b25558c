/*
 * passes.h — the graph passes the compiler runs on its copy of a graph (src/runtime/compile.c,
 * pipeline.c). `alive` marks scheduled nodes (per node id); `pinned` marks values that must keep
 * their identity (per value id: fetches). Each pass returns the number of nodes it removed.
 */
#ifndef TS_PASSES_H
#define TS_PASSES_H

#include "graph/ir.h"

/* Dead-code elimination (dce.c): clear alive[i] of every node no pinned value needs; a node with
 * a side effect (an optimizer update) stays when keep_side_effects is set. */
int ts_pass_dce(ts_graph *g, uint8_t *alive, const uint8_t *pinned, int keep_side_effects);
/* Fusion (fuse.c): rewrite producer/consumer pairs into one node. A fused node takes the index
 * of the last node it replaces, so index order stays a valid schedule; fusion never joins nodes
 * of two stages or two phases. matmul_act: whether rules 4 and 5 (an activation or an output
 * cast folded into a matmul) may run: only on the built-in CPU backend. */
int ts_pass_fuse(ts_graph *g, uint8_t *alive, const uint8_t *pinned, int matmul_act);

#endif
