/*
 * pipeline_opts.c — `--devices LIST --stages SPEC|auto --micro-batches M` of `tessera pretrain` and
 * `finetune`: the flags read into a ts_stage_plan (ts_stage_plan_parse, ts_stage_plan_measure),
 * and --micro-batches checked (see pipeline_opts.h); the stages are described by the library
 * (ts_stage_plan_describe, ts_stage_plan_report).
 */
#include "cli.h"
#include "pipeline_opts.h"
#include "train_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_pipe_parse(const char *cmd, const char *devices, const char *stages, int layers, ts_stage_plan *pp) {
    if (ts_stage_plan_parse(devices, stages, layers, pp) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
    return 2;
}

int cli_pipe_measure(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int micro,
                     ts_stage_plan *pp) {
    int parts = cfg->num_hidden_layers + 2;
    if (parts <= TS_MAX_STAGES)
        printf("tessera %s: --stages auto: timing the embeddings, each layer and the heads on %s\n", cmd, pp->dev[0]);
    ts_status st = ts_stage_plan_measure(cfg, head, batch, seq, micro, cli_rep.comm, pp);
    if (st == TS_OK && pp->ndev > parts)
        fprintf(stderr, "tessera %s: note: %d devices for %d parts: using the first %d\n", cmd, pp->ndev, parts, parts);
    if (st == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
    return st == TS_ERR_ARG ? 2 : 1;
}

const char *cli_pipe_one_device(const char *devices, const char *stages) {
    return devices && !stages && !strchr(devices, ',') ? devices : NULL;
}

int cli_pipe_micro(const char *cmd, const char *devices, const char *stages, int micro, int *accumulation, int fp16) {
    if (stages && !devices) {
        fprintf(stderr, "tessera %s: --stages needs --devices\n", cmd);
        return 2;
    }
    if (micro && *accumulation > 1 && micro != *accumulation) {
        fprintf(stderr, "tessera %s: --micro-batches %d and --accumulation %d: the same thing, two values\n", cmd, micro,
                *accumulation);
        return 2;
    }
    if (micro) *accumulation = micro;
    if (!devices || cli_pipe_one_device(devices, stages)) return 0; /* one program on one device */
    if (fp16) {
        fprintf(stderr, "tessera %s: --fp16 (loss scaling) does not run as a pipeline yet: use --bf16 with --devices\n",
                cmd);
        return 2;
    }
    int ndev = 1;
    for (const char *p = devices; *p; p++) ndev += *p == ',';
    if (micro == 1) {
        fprintf(stderr, "tessera %s: --micro-batches 1: a pipeline of %s runs a step as 2 or more micro-batches "
                        "(one device without --stages runs any number)\n", cmd, ndev > 1 ? "several devices" : "--stages");
        return 2;
    }
    if (*accumulation < 2) *accumulation = 2 * ndev; /* two micro-batches per device keep the pipeline busy */
    return 0;
}

int cli_pipe_device(const char *cmd, const char *device, const char **devices) {
    if (device && *devices) {
        fprintf(stderr, "tessera %s: --device %s and --devices %s exclude each other (--device is one device, "
                        "--devices a pipeline's list)\n", cmd, device, *devices);
        return 2;
    }
    if (device) *devices = device;
    return 0;
}
