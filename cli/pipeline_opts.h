/*
 * pipeline_opts.h — the pipeline flags of `tessera pretrain` and `finetune` (pipeline_opts.c):
 * --devices, --stages and --micro-batches read into a ts_stage_plan (tessera_tasks.h), and the
 * micro-batches checked.
 */
#ifndef CLI_PIPELINE_OPTS_H
#define CLI_PIPELINE_OPTS_H

#include <stdio.h>

#include "tessera_apps.h"

/* Read --devices LIST and --stages SPEC (NULL or "auto": pp->automatic, to be measured) for a
 * model of `layers` layers. 0, or prints the error naming the flag and returns 2. */
int cli_pipe_parse(const char *cmd, const char *devices, const char *stages, int layers, ts_stage_plan *pp);
/* --stages auto: time each part on pp's first device and balance (ts_stage_plan_measure, with the
 * replicas of cli_rep). 0, or prints the error: 1 or 2. */
int cli_pipe_measure(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int micro,
                     ts_stage_plan *pp);
/* --devices naming one device, without --stages: that device, where the run is one program (no
 * pipeline; the batch is --batch x --micro-batches). NULL: no --devices, or a pipeline. */
const char *cli_pipe_one_device(const char *devices, const char *stages);
/* --device DEV and --devices LIST: with --device, *devices becomes it (a list of one). 0, or prints
 * the error (both given) and returns 2. */
int cli_pipe_device(const char *cmd, const char *device, const char **devices);
/* Check --micro-batches against --accumulation (the same thing) and set *accumulation: M, or for a
 * pipeline (several devices, or --stages) with neither given, 2 per device; a pipeline refuses 1.
 * 0, or prints the error and returns 2. */
int cli_pipe_micro(const char *cmd, const char *devices, const char *stages, int micro, int *accumulation, int fp16);

#endif
