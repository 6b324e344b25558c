/*
 * pipeline_opts.h — the pipeline flags of `tessera pretrain` and `finetune` (pipeline_opts.c):
 * --devices, --stages and what they make of a BERT: the device of each pipeline stage and the
 * stage of each part of the model (embeddings, layers, heads).
 */
#ifndef TS_CLI_PIPELINE_OPTS_H
#define TS_CLI_PIPELINE_OPTS_H

#include <stdio.h>

#include "tessera.h"

#define TS_PIPE_MAX_DEV 64

typedef struct ts_pipe_plan {
    int ndev;
    char dev[TS_PIPE_MAX_DEV][32];        /* --devices */
    int automatic;                        /* --stages auto, not yet balanced (ts_pipe_balance) */
    int nstages;
    int stage_dev[TS_MAX_STAGES];         /* index into dev[] */
    const char *stage_name[TS_MAX_STAGES]; /* dev[stage_dev[s]], for ts_compile_opts.stage_devices */
    int stage_first[TS_MAX_STAGES], stage_last[TS_MAX_STAGES]; /* parts: 0 emb, 1..L layers, L+1 heads */
    char what[TS_MAX_STAGES][72];         /* "embeddings", "layers 0-3", "layer 11 .. heads" */
    int layer_stage[TS_BERT_MAX_LAYERS];
    int emb_stage, head_stage;
} ts_pipe_plan;

/* Read --devices LIST and --stages SPEC (NULL or "auto": pp->automatic, to be balanced) for a
 * model of `layers` layers. 0, or prints the error naming the flag and returns 2. */
int ts_pipe_parse(const char *cmd, const char *devices, const char *stages, int layers, ts_pipe_plan *pp);
/* --stages auto: cut the parts (embeddings, each layer, heads: part_seconds[0 .. layers + 1]) into
 * contiguous stretches of balanced time, one per device. 0 or 2. */
int ts_pipe_balance(const char *cmd, const double *part_seconds, int layers, ts_pipe_plan *pp);
/* --stages auto: time each part on pp's first device (a run of a pipeline with one stage per
 * part, all on that device) and balance (ts_pipe_balance). 0, or prints the error: 1 or 2. */
int ts_pipe_measure(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int micro,
                    ts_pipe_plan *pp);
/* Print the stages of pipelined program p (metrics NULL), or log them as a metrics row. */
void ts_pipe_describe(const char *cmd, ts_program *p, const ts_pipe_plan *pp, int micro, FILE *metrics);
/* Check --micro-batches against --accumulation (the same thing) and set *accumulation: M, or with
 * --devices and neither given, 2 per device. 0, or prints the error and returns 2. */
int ts_pipe_micro(const char *cmd, const char *devices, const char *stages, int micro, int *accumulation, int fp16);
/* The measured side of pipelined program p's runs so far: each stage's busy time and the bubble
 * beside (S-1)/(M+S-1), as a line into buf (and a metrics row when metrics is set). */
void ts_pipe_report(const ts_pipe_plan *pp, ts_program *p, int micro, char *buf, size_t cap, FILE *metrics);
/* Place cfg's parts on pp's stages (cfg keeps a pointer into pp). */
void ts_pipe_apply(const ts_pipe_plan *pp, ts_bert_config *cfg);

#endif
