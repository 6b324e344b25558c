/*
 * program.h — a compiled program: the graph after passes, its schedule, one arena for the
 * intermediates, persistent buffers (parameters, optimizer state, inputs, constants,
 * gradients) and the backend's compiled state.
 */
#ifndef TS_PROGRAM_H
#define TS_PROGRAM_H

#include "backend/backend.h"
#include "graph/memplan.h"

struct ts_program {
    ts_graph *g;              /* owned copy, after passes */
    const ts_backend *be;
    void *compiled;           /* backend state */
    ts_plan plan;
    int *sched;
    int nsched;
    void **buf;               /* device address per value */
    uint8_t *owned;           /* buf[v] was allocated for v alone (persistent) */
    void *arena;
    void *workspace;
    int *fetch;               /* fetchable value ids */
    int nfetch;
    int *params;              /* parameter value ids */
    int nparams;
    uint64_t step;
    int num_threads;
    /* device iterations: K runs per ts_program_run. With K > 1 every input buffer holds K
     * slices; iter_vals lists the values whose buffer lies in an input's (the input itself and
     * its aliases) with the input's slice size, so run() can point them at slice k; fetch_host
     * holds each fetch's K copies. */
    int iters;
    int niter_vals;
    int *iter_vals;
    size_t *iter_bytes;
    void **iter_base;
    void **fetch_host;
    ts_memory mem;
};

/* Set the OpenMP thread count for a program: n > 0, or the process default when n == 0 (so one
 * program's setting does not leak into the next). */
void ts_set_threads(int n);

/* Parameter initial values: deterministic in (seed, name). Writes numel floats to dst. */
void ts_init_fill(const ts_init *init, uint64_t seed, const char *name, float *dst, int64_t numel);

/* Passes (src/graph/passes). `alive` marks scheduled nodes; `pinned` marks values that must
 * keep their identity (fetches). Each returns the number of nodes it removed. A fused node takes
 * the index of the last node it replaces, so index order stays a valid schedule. */
int ts_pass_dce(ts_graph *g, uint8_t *alive, const uint8_t *pinned, int keep_side_effects);
int ts_pass_fuse(ts_graph *g, uint8_t *alive, const uint8_t *pinned);

#endif
