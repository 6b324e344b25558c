/*
 * ir.h — the graph IR: values (inputs, parameters, constants, op outputs) and nodes (op
 * applications). A graph is append-only while it is built, so node order is a topological
 * order; passes work on a copy made by ts_graph_clone().
 */
#ifndef TS_IR_H
#define TS_IR_H

#include "core/core.h"

#define TS_MAX_IN 8
#define TS_MAX_OUT 4

typedef enum ts_val_kind {
    TS_V_INPUT,  /* fed by the host */
    TS_V_PARAM,  /* persistent, trainable, initialised from ts_init */
    TS_V_STATE,  /* persistent, not trainable (optimizer moments), zero-initialised */
    TS_V_CONST,  /* data held in the graph */
    TS_V_NODE,   /* output of a node */
} ts_val_kind;

typedef struct ts_val {
    ts_dtype dtype;
    int ndim;
    int64_t shape[TS_MAX_DIMS];
    ts_val_kind kind;
    int node;          /* producing node (TS_V_NODE), else -1 */
    char *name;        /* NULL when unnamed */
    ts_tensor *data;   /* TS_V_CONST data */
    ts_init init;      /* TS_V_PARAM initializer */
    int grad;          /* TS_V_PARAM: its gradient value after ts_backward, else -1 */
    int pack;          /* > 0: a TS_V_STATE that lives inside persistent value pack - 1, at byte
                          pack_off (a gradient accumulator in its bucket); 0: its own buffer */
    int64_t pack_off;
    int sharded;       /* TS_V_STATE of this rank's share of the optimizer state (ZeRO-1): saved in
                          the rank's part of a checkpoint */
    int bucket;        /* a TS_V_STATE gradient bucket: the buffer packed values live in */
} ts_val;

/* Op attributes. Each op documents which fields it uses, in its ops/ file. */
typedef struct ts_attrs {
    int64_t i[TS_MAX_DIMS + 4];
    int ni;
    float f[4];
} ts_attrs;

typedef struct ts_node {
    int op;                   /* ts_op_id */
    int nin, nout;
    int in[TS_MAX_IN];        /* value ids; -1 for an absent optional input */
    int out[TS_MAX_OUT];
    ts_attrs attr;
    int seg;                  /* recompute segment it was built in (1, 2, ...), 0: none */
    int stage;                /* pipeline stage (ts_graph_stage_begin), -1: not placed */
} ts_node;

struct ts_graph {
    ts_val *vals;
    int nvals, cap_vals;
    ts_node *nodes;
    int nnodes, cap_nodes;
    uint64_t seed;
    ts_status status;  /* first error while building */
    char *status_msg;
    int has_backward;
    int loss;          /* value passed to ts_backward, or -1 */
    int nseg;          /* recompute segments begun so far (graph/recompute.c) */
    int recompute_gelu; /* ts_graph_recompute_gelu: the backward reads GELU outputs recomputed */
    int recompute_casts; /* ts_graph_recompute_casts: the backward reads parameters' casts made again */
    int open_seg;      /* the segment new nodes join, 0: none */
    int cur_stage;     /* the pipeline stage new nodes are placed on, -1: none */
    int nstages;       /* 1 + the highest stage any node was placed on (0: none placed) */
    int bwd_start;     /* index of the first node ts_backward appended (-1: no backward) */
    int opt_start;     /* ... and of the first ts_optimizer appended (-1: no optimizer) */
    int accum_steps;   /* the optimizer's micro-batches per step (0: no optimizer) */
    int updates_in_backward; /* ts_optim_opts.updates_in_backward: the updates run inside the
                                backward pass and the gradients live in the arena, not to the end
                                of the step (ts_compile does not pin them) */
    int replicas;      /* ranks whose gradients the optimizer sums (0 or 1: none) */
    int replica;       /* this graph's rank among them: dropout of micro-batch m of a step runs at
                          step (local run) x replicas + replica, as one process would */
    int comm_id;       /* the communicator of the collectives */
    /* names -> value ids: open addressing (linear probing, load <= 1/2) over value ids, -1 for
     * an empty slot. An entry is checked against vals[id].name when found, so one left behind
     * by a rename never matches; rebuilt from the values when it grows. */
    int *name_slots;
    int name_nslots, name_used;
};

/* Append a node applying op to inputs; infers and checks output shapes with the op's rule.
 * Returns the first output value id, or TS_NONE after recording an error in g. If outs != NULL
 * it receives every output id. Any input == TS_NONE (but not declared optional) propagates. */
ts_value ts_node_add(ts_graph *g, int op, int nin, const int *in, const ts_attrs *attr, int *outs);
/* ts_backward with the loss's gradient seeded by `seed` (a rank-0 f32 value, the loss scale of
 * src/optim/loss_scale.c) instead of 1; TS_NONE: 1 (graph/autodiff.c). */
ts_status ts_backward_seeded(ts_graph *g, ts_value loss, ts_value seed);
/* After ts_backward, for updates in the backward pass (ts_optimizer; a gradient kept to the end
 * of the step is a sink its shares are written into, not arena): a node making the early share of
 * a tied parameter's gradient (only the add that sums it reads it) and reading fewer bytes than it
 * writes moves to just before that add (graph/sink_partials.c). Not on a graph of pipeline
 * stages. TS_OK or TS_ERR_NOMEM. */
ts_status ts_sink_gradient_partials(ts_graph *g);
/* Put g's nodes in a new order: position w gets the node at index order[w] (a permutation of
 * 0 .. nnodes - 1 that keeps every value's producer before its readers), and each value's
 * producer index follows (vals[].node); new_index (NULL: not wanted) gets each old index's new
 * one. bwd_start and opt_start are the caller's. TS_OK, or TS_ERR_NOMEM recorded in g (nothing
 * moved). */
ts_status ts_graph_apply_order(ts_graph *g, const int *order, int *new_index);
/* ts_graph_fail (record a builder error in g): tessera_core.h. */
/* Add a value of the given kind; returns its id, or TS_NONE when out of memory (recorded in g as
 * TS_ERR_NOMEM; nothing added). */
int ts_val_add(ts_graph *g, ts_val_kind kind, ts_dtype dtype, int ndim, const int64_t *shape);
/* Set (or replace) the name of value v: the one way names are given, so the name index stays
 * right. The caller has checked that no other value has it. TS_OK, or TS_ERR_NOMEM (recorded in
 * g; v keeps its old name, the index stays whole). */
ts_status ts_val_set_name(ts_graph *g, int v, const char *name);
/* The message of g's recorded error: "out of memory" when even the copy of it failed. */
static inline const char *ts_graph_msg(const ts_graph *g) { return g->status_msg ? g->status_msg : "out of memory"; }
/* True when v is a valid value id of g. */
static inline bool ts_val_ok(const ts_graph *g, ts_value v) { return v >= 0 && v < g->nvals; }
/* The 64-bit FNV-1a hash of s: the name index's, and a name's stable identity across graphs
 * (ts_cast_stochastic_key). */
uint64_t ts_name_hash(const char *s);
/* A human-readable description of value v for messages: "'x' [8, 784] f32" or "%12 [..] f32". */
const char *ts_val_str(const ts_graph *g, int v, char *buf, size_t cap);
/* Deep copy of a graph (constants shared by copy of the tensor); NULL (TS_ERR_NOMEM set) when out
 * of memory. */
ts_graph *ts_graph_clone(const ts_graph *g);
static inline int64_t ts_val_numel(const ts_val *v) { return ts_numel(v->ndim, v->shape); }
static inline size_t ts_val_bytes(const ts_val *v) {
    return (size_t)ts_val_numel(v) * ts_dtype_size(v->dtype);
}

/* A node's phase in a training step: 0 forward, 1 backward (and gradient accumulation, which runs
 * with every micro-batch), 2 the optimizer's once-a-step part. From the node's index and the
 * positions where ts_backward and ts_optimizer began appending. */
static inline int ts_node_phase(const ts_graph *g, int i, int op_is_accum) {
    if (g->opt_start >= 0 && i >= g->opt_start) return op_is_accum ? 1 : 2;
    if (g->bwd_start >= 0 && i >= g->bwd_start) return 1;
    return 0;
}

/* numpy broadcast of two shapes into out; returns out rank, or -1 if incompatible. */
int ts_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out);
/* Normalise a possibly negative axis against rank; -1 when out of range. */
static inline int ts_axis(int axis, int ndim) {
    if (axis < 0) axis += ndim;
    return (axis >= 0 && axis < ndim) ? axis : -1;
}

#endif
