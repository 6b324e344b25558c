/*
 * pipeline_opts.c — `--devices LIST --stages SPEC|auto --micro-batches M` of `tessera pretrain` and
 * `finetune`: the flags read into a ts_stage_plan (ts_stage_plan_parse, ts_stage_plan_measure),
 * and the pipeline's stages and their measured busy time printed and logged (see pipeline_opts.h).
 */
#include "pipeline_opts.h"
#include "train_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_pipe_parse(const char *cmd, const char *devices, const char *stages, int layers, ts_stage_plan *pp) {
    if (ts_stage_plan_parse(devices, stages, layers, pp) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
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
    fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
    return st == TS_ERR_ARG ? 2 : 1;
}

static double mib(size_t b) { return (double)b / (1024.0 * 1024.0); }

void cli_pipe_describe(const char *cmd, ts_program *p, const ts_stage_plan *pp, int micro, FILE *metrics) {
    int ns = ts_program_num_stages(p);
    if (!metrics)
        printf("tessera %s: pipeline of %d stages on %d devices, %d micro-batches a step (1F1B; idle at best "
               "(S-1)/(M+S-1) = %.1f%%):\n", cmd, ns, pp->ndev, micro, 100.0 * (ns - 1) / (micro + ns - 1));
    else
        fprintf(metrics, "{\"pipeline\": {\"micro_batches\": %d, \"stages\": [", micro);
    for (int s = 0; s < ns; s++) {
        ts_stage_info si;
        ts_program_stage_info(p, s, &si);
        if (!metrics)
            printf("  stage %d on %s (%d thread%s): %s; parameters %.1f MiB, activations %.1f MiB (%d micro-batch%s in "
                   "flight)\n", s, pp->stage_name[s], si.threads, si.threads == 1 ? "" : "s", pp->what[s], mib(si.mem.params),
                   mib(si.mem.activations), si.in_flight, si.in_flight == 1 ? "" : "es");
        else
            fprintf(metrics, "%s{\"stage\": %d, \"device\": \"%s\", \"threads\": %d, \"parts\": \"%s\", "
                    "\"params_bytes\": %zu, \"activation_bytes\": %zu, \"in_flight\": %d}", s ? ", " : "", s,
                    pp->stage_name[s], si.threads, pp->what[s], si.mem.params, si.mem.activations, si.in_flight);
    }
    if (metrics) fprintf(metrics, "]}}\n"), fflush(metrics);
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
    if (!devices) return 0;
    if (fp16) {
        fprintf(stderr, "tessera %s: --fp16 (loss scaling) does not run as a pipeline yet: use --bf16 with --devices\n",
                cmd);
        return 2;
    }
    if (*accumulation < 2) { /* two micro-batches per device keep the pipeline busy */
        int ndev = 1;
        for (const char *p = devices; *p; p++) ndev += *p == ',';
        *accumulation = 2 * ndev;
    }
    return 0;
}

void cli_pipe_report(const ts_stage_plan *pp, ts_program *p, int micro, char *buf, size_t cap, FILE *metrics) {
    int ns = ts_program_num_stages(p);
    double wall, bubble, theory = (double)(ns - 1) / (micro + ns - 1);
    ts_program_pipeline_stats(p, &wall, &bubble);
    size_t o = (size_t)snprintf(buf, cap, "pipeline, %d stages over %.1f s, busy:", ns, wall);
    if (metrics)
        fprintf(metrics, "{\"pipeline_wall_s\": %.3f, \"bubble\": %.4f, \"bubble_theory\": %.4f, \"stages\": [",
                wall, bubble, theory);
    for (int s = 0; s < ns; s++) {
        ts_stage_info si;
        ts_program_stage_info(p, s, &si);
        if (o < cap) o += (size_t)snprintf(buf + o, cap - o, "%s %d (%s) %.2f s", s ? "," : "", s, pp->stage_name[s],
                                           si.busy_s);
        if (metrics)
            fprintf(metrics, "%s{\"stage\": %d, \"device\": \"%s\", \"busy_s\": %.3f}", s ? ", " : "", s,
                    pp->stage_name[s], si.busy_s);
    }
    if (o < cap)
        snprintf(buf + o, cap - o, "; idle (bubble) %.1f%%, 1F1B in theory (S-1)/(M+S-1) = %.1f%%", 100 * bubble,
                 100 * theory);
    if (metrics) fprintf(metrics, "]}\n"), fflush(metrics);
}
