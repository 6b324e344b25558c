/*
 * memplan.h — liveness-based placement of every intermediate in one arena.
 */
#ifndef TS_MEMPLAN_H
#define TS_MEMPLAN_H

#include "graph/ir.h"

typedef struct ts_memplan {
    int64_t *offset;        /* per value: byte offset in the arena, -1 when not in the arena */
    int *root;              /* per value: the value whose storage it uses (itself if its own) */
    size_t arena_bytes;     /* planned arena size */
    size_t total_bytes;     /* sum of every arena value's size, as if nothing were shared */
    int inplace;            /* outputs that reuse a dying input's buffer */
} ts_memplan;

/* Plan the arena for the values with in_arena[v] set, produced by the scheduled nodes.
 * pinned[v]: live until the end of the step (fetched values); until (may be NULL): until[v] >= 0
 * keeps value v alive to that schedule position (a pipeline stage's value sent to another stage,
 * kept to the end of its phase). Outputs of TS_OPF_ALIAS0 ops share
 * their input's storage; outputs of TS_OPF_INPLACE0 ops take a dying input 0's storage when the
 * sizes agree. sink (may be NULL): values outside the arena with a buffer of their own (a
 * parameter's gradient) that the value a reshape makes them from, or an add's input dying there,
 * may be written into directly: such a value then has sink's root and offset -1 (no arena).
 * Storages whose lifetimes
 * overlap never overlap in the arena (greedy by size).
 * TS_OK, or TS_ERR_NOMEM (out of memory for its tables) with *mp empty. */
ts_status ts_memplan_build(const ts_graph *g, const int *sched, int nsched, const uint8_t *in_arena,
                           const uint8_t *pinned, const int *until, const uint8_t *sink, ts_memplan *mp);
void ts_memplan_free(ts_memplan *mp);

#endif
