/*
 * plan_suggest.c — the planner's words for the command: the command line of a layout, `tessera
 * plan`'s for a request, what a run refused for memory under --device-profile says next (cli.h).
 */
#include <stdarg.h>

#include "cli.h"

/* A command line as it is written: the text stops at cap. */
typedef struct line {
    char *buf;
    size_t cap, o;
} line;

__attribute__((format(printf, 2, 3))) static void put(line *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (t->o < t->cap) t->o += (size_t)vsnprintf(t->buf + t->o, t->cap - t->o, fmt, ap);
    va_end(ap);
}

/* The `tessera plan` command for rq's model, shapes and global batch (the layout left to the search). */
static void plan_command(const char *profile, const ts_plan_request *rq, char *buf, size_t cap) {
    const ts_bert_config *c = rq->cfg;
    static const char *task[] = {"pretrain", "finetune", "infer"};
    line t = {buf, cap, 0};
    put(&t, "tessera plan --device-profile %s --count %d --layers %d --hidden %d --heads %d --intermediate %d "
        "--batch %d --max-len %d", profile, rq->count, c->num_hidden_layers, c->hidden_size, c->num_attention_heads,
        c->intermediate_size, rq->batch, rq->seq_len);
    if (rq->task == TS_PLAN_PRETRAIN && rq->max_predictions > 0) put(&t, " --max-predictions %d", rq->max_predictions);
    if (rq->task != TS_PLAN_INFER && rq->replicas * rq->micro_batches > 1) /* as ts_plan_suggest keeps it */
        put(&t, " --global-batch %d", rq->replicas * rq->micro_batches * rq->batch);
    if (rq->task != TS_PLAN_INFER && rq->max_grad_norm > 0) put(&t, " --max-grad-norm %g", rq->max_grad_norm);
    put(&t, " --dtype %s --optimizer %s --task %s --explain", ts_dtype_name(rq->dtype),
        ts_optim_kind_name(rq->optimizer), task[rq->task]);
}

/* The command line that runs layout l of rq (cli.h): what the planner cannot know (the files) as
 * placeholders in capitals; a fine-tuned or run model's sizes are its directory's. */
void cli_plan_command(const ts_plan_request *rq, ts_plan_layout *l) {
    const ts_bert_config *c = rq->cfg;
    line t = {l->command, sizeof l->command, 0};
    if (l->replicas > 1) put(&t, "mpirun -np %d ", l->replicas);
    if (rq->task == TS_PLAN_INFER) {
        put(&t, "tessera run --model MODEL_DIR --inputs INPUTS.safetensors --outputs OUTPUTS.safetensors%s",
            rq->dtype == TS_BF16 ? " --dtype bf16" : "");
        return;
    }
    if (rq->task == TS_PLAN_PRETRAIN)
        put(&t, "tessera pretrain --vocab VOCAB.txt --corpus CORPUS.txt --out OUT_DIR --layers %d --hidden %d "
            "--heads %d --intermediate %d", c->num_hidden_layers, c->hidden_size, c->num_attention_heads,
            c->intermediate_size);
    else
        put(&t, "tessera finetune --model PRETRAINED_DIR --train TRAIN.tsv --out OUT_DIR");
    put(&t, " --max-len %d --batch %d", rq->seq_len, (int)l->batch);
    if (rq->task == TS_PLAN_PRETRAIN) put(&t, " --max-predictions %d", rq->max_predictions);
    put(&t, " --optimizer %s", rq->optimizer == TS_OPTIM_LAMB ? "lamb" : "adamw");
    if (rq->max_grad_norm > 0) put(&t, " --max-grad-norm %g", rq->max_grad_norm);
    if (l->ndevices > 1) {
        put(&t, " --devices ");
        for (int k = 0; k < l->ndevices; k++) put(&t, "%scpu:%d", k ? "," : "", k);
        put(&t, " --stages \"%s\" --micro-batches %d", l->stages, l->micro_batches);
    } else if (l->micro_batches > 1)
        put(&t, " --accumulation %d", l->micro_batches);
    if (l->recompute) put(&t, " --recompute");
    if (l->shard_state) put(&t, " --shard-optimizer");
    if (rq->weight_dtype != TS_F32) put(&t, " --precision %s", ts_precision_name(rq->dtype, rq->weight_dtype));
    else if (rq->dtype != TS_F32) put(&t, " --%s", rq->dtype == TS_BF16 ? "bf16" : "fp16");
}

/* What a run refused for memory under --device-profile says next: the planner's estimate and layout (cli.h). */
void cli_plan_suggest(const char *cmd, const char *profile, const ts_plan_request *asked, const ts_stage_plan *pp) {
    char need[256] = "", plan[1024];
    double bytes;
    int n = 0;
    ts_plan_layout *l = calloc(1, sizeof *l);
    if (l) l->struct_size = sizeof *l;
    int s = l ? ts_plan_suggest(asked, pp, &bytes, l, &n) : -1;
    if (s >= 0)
        snprintf(need, sizeof need, "stage %d needs %.2f GB on %s (%.2f GB)", s, bytes / 1e9, asked->device->name,
                 asked->device->memory_bytes / 1e9);
    plan_command(profile, asked, plan, sizeof plan);
    if (!n)
        fprintf(stderr, "tessera %s: the planner: %s%s%s (%s for more)\n", cmd, need, *need ? "; " : "",
                l ? cli_error() : "out of memory", plan);
    else if (!l->fits)
        fprintf(stderr, "tessera %s: the planner: %s%son %d x %s, %s (%s for more)\n", cmd, need, *need ? ": " : "",
                asked->count, asked->device->name, l->why, plan); /* why: "no layout fits; the closest: .." */
    else {
        cli_plan_command(asked, l);
        fprintf(stderr, "tessera %s: the planner: %s%s%d stage%s \"%s\" x %d replica%s, %d micro-batch%s of %d%s%s "
                "fit (estimated %.1f seq/s): %s (%s for more)\n", cmd, need, *need ? ": " : "", l->nstages,
                l->nstages == 1 ? "" : "s", l->stages, l->replicas, l->replicas == 1 ? "" : "s", l->micro_batches,
                l->micro_batches == 1 ? "" : "es", (int)l->batch, l->recompute ? " with --recompute" : "",
                l->shard_state && l->replicas > 1 ? " and --shard-optimizer" : "", l->seq_per_s, l->command, plan);
    }
    free(l);
}

int cli_device_profile_load(const char *cmd, const char *name, double *memory_gib, ts_device_profile *out) {
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    if (ts_device_profile_load(name, out) != TS_OK)
        return fprintf(stderr, "tessera %s: --device-profile %s: %s\n", cmd, name, cli_error()), 2;
    if (!(out->memory_bytes > 0))
        return fprintf(stderr, "tessera %s: --device-profile %s: the profile gives no memory_bytes\n", cmd, name), 2;
    *memory_gib = out->memory_bytes / 1073741824.0;
    return 0;
}
