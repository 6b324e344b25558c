/*
 * pipeline.h — a training graph run as a pipeline of stages over several devices (pipeline.c):
 * one program per stage (exec.h), built and run on top of them. The public ts_program
 * (program.c) holds one of these when compiled with stage devices.
 */
#ifndef TS_PIPELINE_H
#define TS_PIPELINE_H

#include "runtime/exec.h"

typedef struct ts_pipeline ts_pipeline;

/* Compile graph g (not taken) for the stage devices of o; NULL with the error set on failure. */
ts_pipeline *ts_pipeline_compile(const ts_graph *g, const ts_compile_opts *o);
void ts_pipeline_free(ts_pipeline *pl);
/* The views the public API reads (the whole graph, its fetches, parameters and memory). */
ts_face ts_pipeline_face(const ts_pipeline *pl);

/* One call: its iters / M steps, the first micro-batch at *step, advancing *step by M a step. */
ts_status ts_pipeline_run(ts_pipeline *pl, uint64_t *step);
/* Keep t (checked by the caller) as the data of input v for the next call. */
ts_status ts_pipeline_feed(ts_pipeline *pl, int v, const ts_tensor *t);
/* Read persistent value v from the stage that updates it; write it to every stage that holds it. */
ts_status ts_pipeline_read(const ts_pipeline *pl, int v, void *host);
ts_status ts_pipeline_write(ts_pipeline *pl, int v, const void *host);

/* What ts_program_stage_info, ts_program_pipeline_stats and _reset_stats report (tessera.h). */
int ts_pipeline_num_stages(const ts_pipeline *pl);
/* Stage s's program on its device. */
const ts_exec *ts_pipeline_stage_exec(const ts_pipeline *pl, int s);
void ts_pipeline_stage_info(const ts_pipeline *pl, int stage, ts_stage_info *out);
void ts_pipeline_stats(const ts_pipeline *pl, double *wall_s, double *bubble);
void ts_pipeline_reset_stats(ts_pipeline *pl);

#endif
