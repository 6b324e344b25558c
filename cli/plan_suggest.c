/*
 * plan_suggest.c — the planner's words for the command: the command line of a layout, `tessera
 * plan`'s for a request, what a run refused for memory under --device-profile says next (cli.h).
 */
#include "cli.h"

/* The `tessera plan` command for rq's model, shapes and global batch (the layout left to the search). */
static void plan_command(const char *profile, const ts_plan_request *rq, char *buf, size_t cap) {
    const ts_bert_config *c = rq->cfg;
    static const char *task[] = {"pretrain", "finetune", "infer"};
    char preds[80] = "";
    int o = rq->task == TS_PLAN_PRETRAIN && rq->max_predictions > 0
                ? snprintf(preds, sizeof preds, " --max-predictions %d", rq->max_predictions) : 0;
    if (rq->task != TS_PLAN_INFER && rq->replicas * rq->micro_batches > 1) /* as ts_plan_suggest keeps it */
        snprintf(preds + o, sizeof preds - (size_t)o, " --global-batch %d",
                 rq->replicas * rq->micro_batches * rq->batch);
    snprintf(buf, cap, "tessera plan --device-profile %s --count %d --layers %d --hidden %d --heads %d "
             "--intermediate %d --batch %d --max-len %d%s --dtype %s --optimizer %s --task %s --explain", profile,
             rq->count, c->num_hidden_layers, c->hidden_size, c->num_attention_heads, c->intermediate_size, rq->batch,
             rq->seq_len, preds, ts_dtype_name(rq->dtype), ts_optim_kind_name(rq->optimizer), task[rq->task]);
}

/* The command line that runs layout l of rq (cli.h): what the planner cannot know (the files) as
 * placeholders in capitals; a fine-tuned or run model's sizes are its directory's. */
void cli_plan_command(const ts_plan_request *rq, ts_plan_layout *l) {
    char *buf = l->command;
    const size_t cap = sizeof l->command;
    const ts_bert_config *c = rq->cfg;
    size_t o = 0;
    if (l->replicas > 1) o += (size_t)snprintf(buf + o, cap - o, "mpirun -np %d ", l->replicas);
    if (rq->task == TS_PLAN_INFER) {
        snprintf(buf + o, cap - o, "tessera run --model MODEL_DIR --inputs INPUTS.safetensors --outputs "
                 "OUTPUTS.safetensors%s", rq->dtype == TS_BF16 ? " --dtype bf16" : "");
        return;
    }
    if (rq->task == TS_PLAN_PRETRAIN)
        o += (size_t)snprintf(buf + o, cap - o, "tessera pretrain --vocab VOCAB.txt --corpus CORPUS.txt --out OUT_DIR "
                              "--layers %d --hidden %d --heads %d --intermediate %d", c->num_hidden_layers,
                              c->hidden_size, c->num_attention_heads, c->intermediate_size);
    else
        o += (size_t)snprintf(buf + o, cap - o, "tessera finetune --model PRETRAINED_DIR --train TRAIN.tsv "
                              "--out OUT_DIR");
    if (o < cap) o += (size_t)snprintf(buf + o, cap - o, " --max-len %d --batch %d", rq->seq_len, (int)l->batch);
    if (rq->task == TS_PLAN_PRETRAIN && o < cap)
        o += (size_t)snprintf(buf + o, cap - o, " --max-predictions %d", rq->max_predictions);
    if (o < cap)
        o += (size_t)snprintf(buf + o, cap - o, " --optimizer %s", rq->optimizer == TS_OPTIM_LAMB ? "lamb" : "adamw");
    if (l->ndevices > 1 && o < cap) {
        char devs[TS_STAGE_MAX_DEVICES * 8];
        size_t d = 0;
        devs[0] = 0;
        for (int k = 0; k < l->ndevices && d < sizeof devs; k++)
            d += (size_t)snprintf(devs + d, sizeof devs - d, "%scpu:%d", k ? "," : "", k);
        o += (size_t)snprintf(buf + o, cap - o, " --devices %s --stages \"%s\" --micro-batches %d", devs, l->stages,
                              l->micro_batches);
    } else if (l->micro_batches > 1 && o < cap) {
        o += (size_t)snprintf(buf + o, cap - o, " --accumulation %d", l->micro_batches);
    }
    if (l->recompute && o < cap) o += (size_t)snprintf(buf + o, cap - o, " --recompute");
    if (l->shard_state && o < cap) o += (size_t)snprintf(buf + o, cap - o, " --shard-optimizer");
    if (rq->weight_dtype != TS_F32 && o < cap)
        snprintf(buf + o, cap - o, " --precision %s", ts_precision_name(rq->dtype, rq->weight_dtype));
    else if (rq->dtype != TS_F32 && o < cap)
        snprintf(buf + o, cap - o, " --%s", rq->dtype == TS_BF16 ? "bf16" : "fp16");
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
    if (!n) {
        fprintf(stderr, "tessera %s: the planner: %s%s%s (%s for more)\n", cmd, need, *need ? "; " : "",
                l ? cli_error() : "out of memory", plan);
    } else if (!l->fits) {
        fprintf(stderr, "tessera %s: the planner: %s%sno layout of %d x %s fits this model and batch; the closest: %s "
                "(%s for more)\n", cmd, need, *need ? ": " : "", asked->count, asked->device->name, l->why, plan);
    } else {
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
    if (ts_device_profile_load(name, out) != TS_OK) {
        fprintf(stderr, "tessera %s: --device-profile %s: %s\n", cmd, name, cli_error());
        return 2;
    }
    if (!(out->memory_bytes > 0)) {
        fprintf(stderr, "tessera %s: --device-profile %s: the profile gives no memory_bytes\n", cmd, name);
        return 2;
    }
    *memory_gib = out->memory_bytes / 1073741824.0;
    return 0;
}
