/*
 * program.h — the public ts_program as the runtime holds it: a program on one device (exec.h) or
 * a pipeline of them (pipeline.h), with the views the public API reads; and what the folders
 * above the runtime (train/) may ask of a program without reaching into it.
 */
#ifndef TS_PROGRAM_H
#define TS_PROGRAM_H

#include "backend/backend.h"
#include "graph/memplan.h"
#include "graph/passes/passes.h"
#include "runtime/exec.h"

typedef struct ts_pipeline ts_pipeline;

struct ts_program {
    ts_exec *one;             /* a program on one device, or NULL */
    ts_pipeline *pipe;        /* a pipeline of them, or NULL */
    ts_face f;                /* views into one or pipe */
    uint64_t step;            /* runs so far: the step of the next run (a pipeline's: micro-batch) */
    char *placement;          /* a pipeline's ts_program_placement, made on first ask */
    int plan_only;            /* compiled for planning only (ts_compile_opts.plan_only): no buffers */
};

/* The graph p runs, after passes (a pipeline's: the whole graph). */
const ts_graph *ts_program_graph(const ts_program *p);
/* 1 when p holds a persistent buffer of its own for value v (some stage of a pipeline does). */
int ts_program_holds(const ts_program *p, int v);

/* Read / write a persistent value or a materialised one (all bytes), wherever it lives: in a
 * pipeline, the read comes from the stage that updates it and the write goes to every stage that
 * holds it. */
ts_status ts_value_read(const ts_program *p, int v, void *host);
ts_status ts_value_write(ts_program *p, int v, const void *host);
/* 1 when value v has a buffer in p (in some stage of a pipeline). */
int ts_value_present(const ts_program *p, int v);

/* Parameter initial values: deterministic in (seed, name, element index). Writes the numel
 * floats of elements [start, start + numel) to dst, so a parameter can be filled piece by piece. */
void ts_init_fill(const ts_init *init, uint64_t seed, const char *name, float *dst, int64_t start, int64_t numel);

#endif
