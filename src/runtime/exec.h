/*
 * exec.h — a program on one device (ts_exec): the graph after passes, its schedule (in phases),
 * one arena for the intermediates, persistent buffers (parameters, optimizer state, inputs,
 * constants, gradients), slotted buffers, and the device's executables. compile.c builds one,
 * exec.c runs, reads, writes and frees it. A public ts_program (program.h) is one of these, or a
 * pipeline (pipeline.h) of several, one per stage.
 *
 * The runtime's files call one way, each only those after it:
 *   checkpoint.c -> program.c -> pipeline.c -> compile.c -> exec.c -> share.c, profile.c, init.c
 * (program.c also calls compile.c, exec.c and share.c directly; no file calls back up the chain).
 */
#ifndef TS_EXEC_H
#define TS_EXEC_H

#include "backend/backend.h"
#include "graph/memplan.h"

/* Phases of a schedule: a plain program has one; a pipeline stage's program runs its forward
 * (phase 0) and backward (phase 1) once per micro-batch, and its part of the optimizer update
 * once per step, in one or more segments (phases 2, 3, ...) between which other stages run. */
enum { TS_PH_FWD = 0, TS_PH_BWD = 1, TS_PH_UPD = 2 };

/* A buffer with several copies ("slots") and the values that live in it (a root and its aliases):
 * the inputs of a program with device iterations (one slot per iteration), and in a pipeline
 * stage the values kept from a micro-batch's forward for its backward, and those received from
 * other stages (one slot per micro-batch in flight). */
typedef struct ts_slotted {
    int root, nslots;
    size_t bytes;     /* of one slot */
    size_t stride;    /* slot k at base + k stride: bytes for fed inputs (fed as one block),
                         64-byte aligned in a pipeline stage (where the kernels read them) */
    ts_buffer base;
    int nvals, *vals; /* the root and the values aliasing it */
} ts_slotted;

/* A stretch of a phase's schedule run by one device: the program's device, or the CPU for nodes
 * the device does not run (fallback, placement.c). A fallback part has host copies of the values
 * its nodes touch (one per distinct buffer, so aliases stay aliases): before it runs, those it
 * reads from elsewhere are copied in; after, those read elsewhere (or kept, fetched, or written
 * in place) are copied back. */
typedef struct ts_part {
    ts_device *dev;
    int phase, begin, end;    /* its nodes: sched[begin .. end) */
    ts_abi_plan abi;          /* over vals (fallback) or the program's value table */
    void *exe;
    ts_abi_value *vals;       /* fallback: the value table of its host copies; NULL otherwise */
    int ncopy_in, ncopy_out;
    int *copy_in, *copy_out;  /* value ids */
    size_t bytes_in, bytes_out; /* moved per run */
    ts_buffer stage;          /* fallback: the host copies, one allocation on the CPU */
} ts_part;

typedef struct ts_exec {
    ts_graph *g;              /* owned copy, after passes */
    ts_device *dev;
    ts_abi_value *vals;       /* per value id: dtype, shape and buffer (mem NULL: none) */
    uint8_t *owned;           /* vals[v].buf was allocated for v alone (persistent) */
    int *sched;               /* node ids, phase by phase */
    int nsched;
    int nphases;
    int *phase_begin;         /* [nphases + 1]: sched[phase_begin[k] .. phase_begin[k+1]) is phase k */
    ts_abi_node *nodes;       /* per scheduled node: the ABI's view */
    ts_part *parts;           /* in run order; the parts of phase k: part_begin[k] .. [k+1] */
    int nparts;
    int *part_begin;          /* [nphases + 1] */
    ts_device *cpu;           /* the fallback device (NULL: none needed) */
    ts_buffer *chunk;         /* the arena of intermediates, in nchunks pieces (arena.c) */
    uint64_t *chunk_at;       /* [nchunks + 1]: piece k holds arena bytes chunk_at[k] .. [k+1] */
    int nchunks;
    ts_buffer workspace, cpu_workspace;
    char *placement;          /* what runs where, one line (ts_program_placement) */
    char label[48];           /* "", or "stage 2 of 4" in a pipeline: the placement line's */
    int *fetch;               /* fetchable value ids */
    int nfetch;
    int *params;              /* parameter value ids */
    int nparams;
    int num_threads;
    /* device iterations: K runs per ts_exec_run, every input slotted K times; fetch_host holds
     * each fetch's K copies */
    int iters;
    ts_slotted *slots;
    int nslots;
    void **fetch_host;
    ts_memory mem;
    struct ts_profile *prof;  /* ts_compile_opts.profile: what the runs took (profile.c); NULL: off */
    uint64_t param_gen;       /* bumped by every ts_exec_write (see ts_abi_plan.param_gen) */
    uint8_t *kept;            /* per value: a kept cast of a weight (ts_abi_value.kept) */
    struct ts_param_share *share; /* parameter buffers read with other programs (share.c), or NULL */
    uint8_t *borrowed;        /* per value: its buffer is share's, not freed with e (NULL: none) */
} ts_exec;

/* Parameter buffers several programs on one device read (ts_program_share_params, share.c):
 * freed with the last of them (refs); gen moves with every write through any of them, and each
 * program's param_gen takes it at its next run, so what kernels derived from the old bytes
 * (prepacked weights) is remade in every program. */
typedef struct ts_param_share {
    int refs;
    uint64_t gen;
    ts_device *dev;
    int nbufs;
    ts_buffer *bufs;
} ts_param_share;

/* share.c: make dst read src's parameter buffers (those of the same name, dtype and shape; dst's
 * own freed): how many, or -1 with the error set. Both plain programs on one device whose runs
 * do not write their parameters. */
int ts_exec_share_params(ts_exec *dst, ts_exec *src);
/* Drop e's reference to its share (the buffers freed with the last). */
void ts_exec_unshare(ts_exec *e);

/* What a pipeline asks of one stage's program (NULL for a plain program). */
typedef struct ts_stage_spec {
    const uint8_t *alive;     /* per node: in this program */
    const int *phase;         /* per node: its phase, 0 .. nphases - 1 */
    int nphases;
    const int *slots;         /* per value: > 0, a slotted buffer of that many copies */
    const uint8_t *sent;      /* per value: read by another stage: kept to the end of its phase */
    size_t device_used;       /* bytes the pipeline's earlier stages on this device already take */
    int stage, nstages;       /* which stage of how many (the placement line's label) */
} ts_stage_spec;

/* What a compiled program shows the public API (program.c), the same for a program on one
 * device and a pipeline: views into the one that owns them. */
typedef struct ts_face {
    const ts_graph *g;        /* after passes; a pipeline's: the whole graph */
    const int *fetch;         /* fetchable value ids */
    int nfetch;
    const int *params;        /* parameter value ids */
    int nparams;
    const uint8_t *owned;     /* per value: the program holds a persistent buffer for it */
    int iters;                /* runs per call (device iterations) */
    void *const *fetch_host;  /* iters > 1: each fetch's iters copies, [iters, ...] */
    const ts_memory *mem;
} ts_face;

/* compile.c: compile graph g (owned by the program from here on, freed on failure) for device
 * dev: the passes, plan and buffers of ts_compile, for a stage of a pipeline when spec is set. */
ts_exec *ts_exec_compile(ts_graph *g, ts_device *dev, const ts_compile_opts *o, const ts_stage_spec *spec);

/* compile.c: may fusion merge producer into fused for dev? When dev runs the merged node; and
 * when it does not, but does not run the producer either, and the CPU runs the merged node: the
 * producer would run on the CPU fallback anyway, so the merged one runs there in its place (the
 * same graph, and so the same results, as on the CPU, and one host round trip less). */
int ts_device_fuses(ts_device *dev, const ts_graph *g, const ts_node *fused, const ts_node *producer);

/* exec.c: free e and everything it holds (NULL: nothing). */
void ts_exec_free(ts_exec *e);
/* The views the public API reads. */
ts_face ts_exec_face(const ts_exec *e);

/* Point the values of slotted buffer s at slot k. */
void ts_slot_select(ts_exec *e, const ts_slotted *s, int k);
/* The slotted buffer whose root is value v's root, or NULL. */
ts_slotted *ts_slot_of(ts_exec *e, int v);

/* Run phase ph of e (0 for a plain program's whole schedule) once, at step. */
ts_status ts_exec_run_phase(ts_exec *e, int ph, uint64_t step);
/* One call of a plain program: its iters runs, the first at *step, each advancing *step. */
ts_status ts_exec_run(ts_exec *e, uint64_t *step);
/* Copy t (checked by the caller: v's dtype and shape, iters first when iters > 1) into input v. */
ts_status ts_exec_feed(ts_exec *e, int v, const ts_tensor *t);
/* Read / write all bytes of a persistent or materialised value v. A write bumps param_gen. */
ts_status ts_exec_read(const ts_exec *e, int v, void *host);
/* Copy value w's bytes into input v's buffer on the device (device to device; ts_dev_copy), as
 * ts_exec_feed of w's value would. */
ts_status ts_exec_copy_value(ts_exec *e, int v, int w);
ts_status ts_exec_write(ts_exec *e, int v, const void *host);

/* A param_gen no program has had (every program starts at one, and each write takes one): a
 * stamp of one means that program's bytes at that time, so the CPU backend's prepacked weights,
 * shared by the matmuls that pack one buffer, are never taken for current by another program
 * that later got the same address. */
uint64_t ts_param_gen_next(void);

/* Set the OpenMP thread count for a program: n > 0, or the process default when n == 0 (so one
 * program's setting does not leak into the next). */
void ts_set_threads(int n);

/* The arena (arena.c): allocate the planned intermediates (offset per value, in_arena) in pieces
 * within the device's largest allocation; the buffer at arena offset off; free the pieces. */
ts_status ts_arena_alloc(ts_exec *e, const int64_t *offset, const uint8_t *in_arena, size_t total);
ts_buffer ts_arena_at(const ts_exec *e, int64_t off);
void ts_arena_free(ts_exec *e);

/* Placement (placement.c): cut each phase into parts by device — a node the device does not
 * support runs on the CPU unless strict (then TS_ERR_UNSUPPORTED naming every such node) — with
 * the copies around each fallback part planned and its host copies allocated; writes
 * e->placement. pinned: per value, read outside the program's schedule (fetched, kept, or sent to
 * another pipeline stage): copied back after a fallback part that makes it. */
ts_status ts_exec_place(ts_exec *e, int strict, const uint8_t *pinned);
/* Run part k (its copies in, its nodes, its copies out). */
ts_status ts_part_run(ts_exec *e, int k, uint64_t step);
/* Release the parts' executables and host copies. */
void ts_parts_free(ts_exec *e);

/* Profiling (profile.c): allocate e's counters and point its plans at them; free them. */
ts_status ts_profile_enable(ts_exec *e);
void ts_profile_free(ts_exec *e);
/* Add one run call of ns nanoseconds to e's profile. */
void ts_profile_add_run(ts_exec *e, uint64_t ns);

#endif
