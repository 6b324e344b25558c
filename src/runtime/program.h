/*
 * program.h — a compiled program: the graph after passes, its schedule (in phases), one arena for
 * the intermediates, persistent buffers (parameters, optimizer state, inputs, constants,
 * gradients), slotted buffers, and the device's executables. A pipelined program (pipeline.c)
 * holds one such program per stage instead and runs them on their devices.
 */
#ifndef TS_PROGRAM_H
#define TS_PROGRAM_H

#include "backend/backend.h"
#include "graph/memplan.h"
#include "graph/passes/passes.h"

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

typedef struct ts_pipeline ts_pipeline;

struct ts_program {
    ts_graph *g;              /* owned copy, after passes */
    ts_device *dev;
    ts_abi_value *vals;       /* per value id: dtype, shape and buffer (mem NULL: none) */
    uint8_t *owned;           /* vals[v].buf was allocated for v alone (persistent) */
    int *sched;               /* node ids, phase by phase */
    int nsched;
    int nphases;
    int *phase_begin;         /* [nphases + 1]: sched[phase_begin[k] .. phase_begin[k+1]) is phase k */
    ts_abi_node *nodes;       /* per scheduled node: the ABI's view */
    ts_plan *plan;            /* per phase: what the backend compiled */
    ts_abi_plan *abi;
    void **exe;
    ts_buffer arena, workspace;
    int *fetch;               /* fetchable value ids */
    int nfetch;
    int *params;              /* parameter value ids */
    int nparams;
    uint64_t step;
    int num_threads;
    /* device iterations: K runs per ts_program_run, every input slotted K times; fetch_host holds
     * each fetch's K copies */
    int iters;
    ts_slotted *slots;
    int nslots;
    void **fetch_host;
    ts_memory mem;
    ts_pipeline *pipe;        /* a pipelined program: the stages do the work (pipeline.c) */
    struct ts_profile *prof;  /* ts_compile_opts.profile: what the runs took (profile.c); NULL: off */
    uint64_t param_gen;       /* bumped by every ts_value_write (see ts_plan.param_gen) */
    uint8_t *kept;            /* per value: a kept cast of a weight (ts_plan.kept) */
};

/* What a pipeline asks of one stage's program (NULL for a plain program). */
typedef struct ts_stage_spec {
    const uint8_t *alive;     /* per node: in this program */
    const int *phase;         /* per node: its phase, 0 .. nphases - 1 */
    int nphases;
    const int *slots;         /* per value: > 0, a slotted buffer of that many copies */
    const uint8_t *sent;      /* per value: read by another stage: kept to the end of its phase */
} ts_stage_spec;

/* Compile graph g (owned by the program from here on, freed on failure) for device dev: the
 * passes, plan and buffers of ts_compile, for a stage of a pipeline when spec is set. */
ts_program *ts_compile_on(ts_graph *g, ts_device *dev, const ts_compile_opts *o, const ts_stage_spec *spec);

/* Point the values of slotted buffer s at slot k. */
void ts_slot_select(ts_program *p, const ts_slotted *s, int k);
/* The slotted buffer whose root is value v's root, or NULL. */
ts_slotted *ts_slot_of(ts_program *p, int v);

/* Run phase ph of p (0 for a plain program's whole schedule) once, at step. */
ts_status ts_program_run_phase(ts_program *p, int ph, uint64_t step);

/* Read / write a persistent value or a materialised one (all bytes), wherever it lives: in a
 * pipeline, the read comes from the stage that updates it and the write goes to every stage that
 * holds it. */
ts_status ts_value_read(const ts_program *p, int v, void *host);
ts_status ts_value_write(ts_program *p, int v, const void *host);
/* 1 when value v has a buffer in p (in some stage of a pipeline). */
int ts_value_present(const ts_program *p, int v);

/* Set the OpenMP thread count for a program: n > 0, or the process default when n == 0 (so one
 * program's setting does not leak into the next). */
void ts_set_threads(int n);

/* Parameter initial values: deterministic in (seed, name, element index). Writes the numel
 * floats of elements [start, start + numel) to dst, so a parameter can be filled piece by piece. */
void ts_init_fill(const ts_init *init, uint64_t seed, const char *name, float *dst, int64_t start, int64_t numel);

/* Profiling (profile.c): allocate p's counters and point its plans at them; free them. */
ts_status ts_profile_enable(ts_program *p);
void ts_profile_free(ts_program *p);
/* Add one ts_program_run call of ns nanoseconds to p's profile. */
void ts_profile_add_run(ts_program *p, uint64_t ns);

/* Pipelines (pipeline.c): compile g for the stage devices of o; run one call; free. */
ts_program *ts_pipeline_compile(const ts_graph *g, const ts_compile_opts *o);
ts_status ts_pipeline_run(ts_program *p);
ts_status ts_pipeline_feed(ts_program *p, int v, const ts_tensor *t);
ts_status ts_pipeline_fetch(ts_program *p, int v, ts_tensor **out);
ts_status ts_pipeline_read(const ts_program *p, int v, void *host);
ts_status ts_pipeline_write(ts_program *p, int v, const void *host);
void ts_pipeline_free(ts_pipeline *pl);

#endif
