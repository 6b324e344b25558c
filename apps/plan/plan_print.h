/*
 * plan_print.h — what the planner's two printers share (plan_print.c: the text `tessera plan`
 * prints, plan_print_json.c: the same as JSON): a stage's parts in words and a stage's memory
 * as the table shows it.
 */
#ifndef TS_PLAN_PLAN_PRINT_H
#define TS_PLAN_PLAN_PRINT_H

#include "common/app.h"

/* Parts first .. last of a BERT of `layers` encoder layers (0 the embeddings, 1 .. layers the
 * layers, layers + 1 the heads) as pretrain's --stages names them: "emb", "0-3", "heads",
 * "emb,0-11,heads". */
void ts_plan_parts_name(int first, int last, int layers, char *buf, size_t cap);

/* A stage's memory as printed, in bytes: the compiler's plan (ts_plan_stage.mem) per kind, and
 * what the estimate adds to or takes from it on the device (gradient accumulators and buckets,
 * sharding, activations in the compute dtype, copies shared with another stage of the device):
 * need_bytes - (params + grads + optimizer - streamed + activations + workspace). */
typedef struct ts_plan_mem_row {
    double params, grads, accumulators, optimizer, streamed, activations, workspace, need;
} ts_plan_mem_row;
void ts_plan_mem_row_of(const ts_plan_stage *st, ts_plan_mem_row *r);

/* "pretrain", "finetune", "infer". */
const char *ts_plan_task_name(ts_plan_task t);

#endif
