/*
 * plan_print_json.c — ts_plan_print_json: what ts_plan_print writes, as one JSON object for tools
 * (`tessera plan --json`): the request, the device, and the layouts, the best first, each with its
 * stages (parts, memory by kind in bytes, fits, times in seconds), bubble, all-reduce, seq/s, why
 * and command. Built with cJSON, so the text is valid JSON whatever the strings hold.
 */
#include "plan/plan_print.h"
#include "plan/cost.h" /* ts_plan_request_read, ts_plan_layouts_read */

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *dtype_word(ts_dtype d) { return d == TS_BF16 ? "bf16" : d == TS_F16 ? "f16" : "f32"; }

static void add_request(cJSON *root, const ts_plan_request *rq) {
    const ts_bert_config *c = rq->cfg;
    cJSON *m = cJSON_AddObjectToObject(root, "model");
    cJSON_AddNumberToObject(m, "num_hidden_layers", c->num_hidden_layers);
    cJSON_AddNumberToObject(m, "hidden_size", c->hidden_size);
    cJSON_AddNumberToObject(m, "num_attention_heads", c->num_attention_heads);
    cJSON_AddNumberToObject(m, "intermediate_size", c->intermediate_size);
    cJSON_AddNumberToObject(m, "vocab_size", c->vocab_size);
    cJSON *r = cJSON_AddObjectToObject(root, "request");
    cJSON_AddStringToObject(r, "task", ts_plan_task_name(rq->task));
    cJSON_AddNumberToObject(r, "batch", rq->batch);
    cJSON_AddNumberToObject(r, "seq_len", rq->seq_len);
    cJSON_AddNumberToObject(r, "max_predictions", rq->max_predictions);
    cJSON_AddStringToObject(r, "dtype", dtype_word(rq->dtype));
    cJSON_AddStringToObject(r, "weight_dtype", dtype_word(rq->weight_dtype));
    cJSON_AddStringToObject(r, "precision", ts_precision_name(rq->dtype, rq->weight_dtype));
    cJSON_AddNumberToObject(r, "global_batch", rq->global_batch);
    cJSON_AddNumberToObject(r, "sequences_per_row", rq->sequences_per_row > 1 ? rq->sequences_per_row : 1);
    cJSON_AddStringToObject(r, "optimizer", rq->optimizer == TS_OPTIM_LAMB ? "lamb" : "adamw");
    cJSON_AddNumberToObject(r, "count", rq->count);
    cJSON *d = cJSON_AddObjectToObject(root, "device");
    cJSON_AddStringToObject(d, "name", rq->device->name);
    cJSON_AddStringToObject(d, "description", rq->device->description);
    cJSON_AddBoolToObject(d, "measured", rq->device->measured != 0);
    cJSON_AddNumberToObject(d, "memory_bytes", rq->device->memory_bytes);
    cJSON_AddNumberToObject(d, "streaming_bytes", rq->device->streaming_bytes);
}

static cJSON *stage_json(const ts_plan_request *rq, const ts_plan_stage *st, int s) {
    cJSON *j = cJSON_CreateObject();
    char parts[64];
    ts_plan_mem_row r;
    ts_plan_parts_name(st->first, st->last, rq->cfg->num_hidden_layers, parts, sizeof parts);
    ts_plan_mem_row_of(st, &r);
    cJSON_AddNumberToObject(j, "stage", s);
    cJSON_AddNumberToObject(j, "device", st->device);
    cJSON_AddStringToObject(j, "parts", parts);
    cJSON_AddNumberToObject(j, "first_part", st->first);
    cJSON_AddNumberToObject(j, "last_part", st->last);
    cJSON *m = cJSON_AddObjectToObject(j, "memory_bytes");
    cJSON_AddNumberToObject(m, "params", r.params);
    cJSON_AddNumberToObject(m, "grads", r.grads);
    cJSON_AddNumberToObject(m, "accumulators", r.accumulators);
    cJSON_AddNumberToObject(m, "optimizer_state", r.optimizer);
    cJSON_AddNumberToObject(m, "optimizer_streamed", r.streamed);
    cJSON_AddNumberToObject(m, "activations", r.activations);
    cJSON_AddNumberToObject(m, "workspace", r.workspace);
    cJSON_AddNumberToObject(m, "need", r.need);
    cJSON_AddNumberToObject(m, "device", rq->device->memory_bytes);
    cJSON_AddBoolToObject(j, "fits", st->fits != 0);
    cJSON_AddNumberToObject(j, "fwd_s", st->fwd_s);
    cJSON_AddNumberToObject(j, "bwd_s", st->bwd_s);
    cJSON_AddNumberToObject(j, "update_s", st->update_s);
    cJSON_AddNumberToObject(j, "send_s", st->send_s);
    return j;
}

static cJSON *layout_json(const ts_plan_request *rq, const ts_plan_layout *l) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "stages", l->stages);
    cJSON_AddNumberToObject(j, "nstages", l->nstages);
    cJSON_AddNumberToObject(j, "devices_per_replica", l->ndevices);
    cJSON_AddNumberToObject(j, "replicas", l->replicas);
    cJSON_AddNumberToObject(j, "micro_batches", l->micro_batches);
    cJSON_AddNumberToObject(j, "batch", (double)l->batch);
    cJSON_AddBoolToObject(j, "recompute", l->recompute != 0);
    cJSON_AddBoolToObject(j, "shard_optimizer", l->shard_state != 0);
    cJSON_AddBoolToObject(j, "fits", l->fits != 0);
    cJSON_AddNumberToObject(j, "step_s", l->step_s);
    cJSON_AddNumberToObject(j, "bubble", l->bubble);
    cJSON_AddNumberToObject(j, "allreduce_s", l->allreduce_s);
    cJSON_AddNumberToObject(j, "allreduce_hidden_s", l->allreduce_hidden_s);
    cJSON_AddNumberToObject(j, "seq_per_s", l->seq_per_s);
    cJSON_AddStringToObject(j, "why", l->why);
    cJSON_AddStringToObject(j, "command", l->command);
    cJSON *a = cJSON_AddArrayToObject(j, "stage_table");
    for (int s = 0; s < l->nstages && s < TS_MAX_STAGES; s++) cJSON_AddItemToArray(a, stage_json(rq, &l->st[s], s));
    return j;
}

ts_status ts_plan_print_json(const ts_plan_request *rq, const ts_plan_layout *l, int n, ts_write_fn write, void *ctx) {
    if (!rq || !rq->cfg || !rq->device || !write || (n > 0 && !l) || n < 0)
        return ts_set_error(TS_ERR_ARG, "ts_plan_print_json: NULL request, model, device, layouts or write, or n < 0");
    ts_plan_request_copy c;
    ts_plan_layout *all;
    if (ts_plan_request_read(&c, rq, "ts_plan_print_json") || ts_plan_layouts_read(l, n, c.rq.batch, &all, "ts_plan_print_json"))
        return ts_last_status();
    rq = &c.rq, l = all;
    cJSON *root = cJSON_CreateObject();
    if (!root) return free(all), ts_set_error(TS_ERR_NOMEM, "ts_plan_print_json: out of memory");
    add_request(root, rq);
    cJSON_AddBoolToObject(root, "fits", n > 0 && l[0].fits);
    cJSON *a = cJSON_AddArrayToObject(root, "layouts");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, layout_json(rq, &l[i]));
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    free(all);
    if (!s) return ts_set_error(TS_ERR_NOMEM, "ts_plan_print_json: out of memory");
    write(ctx, s, strlen(s));
    write(ctx, "\n", 1);
    cJSON_free(s);
    return TS_OK;
}
