/*
 * recompute.h — activation checkpointing inside ts_backward (graph/recompute.c).
 *
 * A recompute segment is a run of forward nodes built between ts_graph_recompute_begin and
 * ts_graph_recompute_end (ts_node.seg). When the backward walk reaches a segment's last node, it
 * appends clones of the segment's nodes, and the segment's gradient rules then read the clones
 * instead of the forward values, so those die right after the forward.
 */
#ifndef TS_RECOMPUTE_H
#define TS_RECOMPUTE_H

#include "graph/ir.h"

typedef struct ts_recompute {
    int nv;   /* values of the graph when the backward began: the ids map covers */
    int *map; /* per forward value: its clone once its segment is recomputed, else itself */
    int seg;  /* the segment recomputed last (0: none yet) */
    int *clone; /* ts_graph_recompute_gelu / _casts: per forward value, its clone in the backward, or -1 */
} ts_recompute;

/* TS_OK, or TS_ERR_NOMEM (nothing to free). */
ts_status ts_recompute_init(ts_recompute *rc, int nvals);
void ts_recompute_free(ts_recompute *rc);

/* Called by the backward walk for forward node i, before its gradient rule: when i belongs to a
 * segment not yet recomputed (it is then the segment's last node), append the clones of the
 * segment's nodes. *use receives node i with its inputs and outputs renamed to the clones (a plain
 * copy for a node outside every segment): the node the gradient rule is given. Returns TS_OK or
 * the graph's error. */
ts_status ts_recompute_node(ts_graph *g, ts_recompute *rc, int i, ts_node *use);

/* ts_graph_recompute_gelu and ts_graph_recompute_casts: in *use (a node outside every segment,
 * about to be differentiated), each input made by a forward node on the same stage that the
 * backward may make again is renamed to a clone made here (once per value), so the forward's
 * output dies in the forward:
 *  - recompute_gelu: a GELU's output, or a cast of one, whose GELU is differentiated too (dep: its
 *    input depends on a parameter, so the backward keeps that input for the GELU's own gradient);
 *  - recompute_casts: a cast of a parameter (autocast's 16-bit copy of a weight).
 * Returns TS_OK or the graph's error. */
ts_status ts_recompute_reads(ts_graph *g, ts_recompute *rc, const char *dep, ts_node *use);

#endif
