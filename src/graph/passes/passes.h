/*
 * passes.h — the graph passes the compiler runs on its copy of a graph (src/runtime/compile.c,
 * pipeline.c). `alive` marks scheduled nodes (per node id); `pinned` marks values that must keep
 * their identity (per value id: fetches). Each pass returns the number of nodes it removed; dead
 * code and fusion return -1 (TS_ERR_NOMEM set, nothing changed) when out of memory.
 */
#ifndef TS_PASSES_H
#define TS_PASSES_H

#include "graph/ir.h"

/* Dead-code elimination (dce.c): clear alive[i] of every node no pinned value needs; a node with
 * a side effect (an optimizer update) stays when keep_side_effects is set. */
int ts_pass_dce(ts_graph *g, uint8_t *alive, const uint8_t *pinned, int keep_side_effects);
/* Fusion (fuse.c): rewrite producer/consumer pairs into one node. A fused node takes the index
 * of the last node it replaces, so index order stays a valid schedule; fusion never joins nodes
 * of two stages or two phases. accept (NULL: all) is asked of each merged node before it is made
 * (its output ids and stage set), with the node it absorbs (the producer, still unchanged in g):
 * the runtime asks the device (ts_device_fuses). */
typedef int (*ts_fuse_accept)(void *ctx, const ts_graph *g, const ts_node *fused, const ts_node *producer);
int ts_pass_fuse(ts_graph *g, uint8_t *alive, const uint8_t *pinned, ts_fuse_accept accept, void *accept_ctx);

/* Int8 quantization (quantize.c): every alive quantizable node (ts_quantizable_node: an f32 matmul
 * of an activation by a 2-D weight, parameter or constant) becomes a matmul_i8dyn, keeping its
 * bias and fused activation; one whose weight's name is in scales (nscales of them; NULL, 0: none)
 * gets that fixed activation scale (static), the others quantize their activations per run
 * (dynamic). Returns the number of nodes rewritten (none removed). For inference programs only
 * (no gradient). */
int ts_pass_quantize(ts_graph *g, const uint8_t *alive, const ts_quant_scale *scales, int nscales);
/* The same for convolutions (quantize_conv.c): every alive f32 conv2d whose weight is a parameter
 * or a constant (or a reshape of one) becomes a conv2d_i8 (dynamic: a_scale 0), keeping its
 * geometry, bias and fused epilogue. Returns the number of nodes rewritten. ts_quantizable_conv:
 * 1 when node n is such a conv2d. */
int ts_pass_quantize_conv(ts_graph *g, const uint8_t *alive);
int ts_quantizable_conv(const ts_graph *g, const ts_node *n);

#endif
