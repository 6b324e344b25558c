/*
 * plan_print.c — ts_plan_print: layouts as `tessera plan` prints them. The best: the device
 * profile and count, the layout, a table of its stages (device, parts, memory by kind against the
 * device's, fits or not, forward / backward / update time), the bubble, the all-reduce and how
 * much the backward hides, seq/s and the command that runs it; with explain, the next ones, one
 * line each with why each lost. Numbers in human units: GB (1e9 bytes, 2 decimals), ms, seq/s.
 */
#include "plan/plan_print.h"
#include "plan/cost.h" /* ts_plan_request_read, ts_plan_layouts_read */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ shared with plan_print_json.c */

void ts_plan_parts_name(int first, int last, int layers, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
    if (first <= 0 && last >= 0) o += (size_t)snprintf(buf + o, cap - o, "emb");
    int a = first < 1 ? 1 : first, b = last > layers ? layers : last; /* layers a .. b, as parts */
    if (a <= b && o < cap) {
        if (a == b) o += (size_t)snprintf(buf + o, cap - o, "%s%d", o ? "," : "", a - 1);
        else o += (size_t)snprintf(buf + o, cap - o, "%s%d-%d", o ? "," : "", a - 1, b - 1);
    }
    if (last >= layers + 1 && first <= layers + 1 && o < cap) snprintf(buf + o, cap - o, "%sheads", o ? "," : "");
}

void ts_plan_mem_row_of(const ts_plan_stage *st, ts_plan_mem_row *r) {
    r->params = st->dev_params;
    r->grads = st->dev_grads;
    r->accumulators = st->dev_accumulators;
    r->optimizer = st->dev_optimizer_state;
    r->streamed = st->streamed_bytes;
    r->activations = st->dev_activations;
    r->workspace = st->dev_other;
    r->need = st->need_bytes;
}

const char *ts_plan_task_name(ts_plan_task t) {
    return t == TS_PLAN_FINETUNE ? "finetune" : t == TS_PLAN_INFER ? "infer" : "pretrain";
}

/* ------------------------------------------------------------------ a growing text */

typedef struct text {
    char *s;
    size_t n, cap;
    int oom;
} text;

__attribute__((format(printf, 2, 3))) static void put(text *t, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0 || t->oom) return;
        if (t->s && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        }
        size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t)k;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->oom = 1;
            return;
        }
        t->s = s, t->cap = cap;
    }
}

static double gb(double bytes) { return bytes / 1e9; }

/* ------------------------------------------------------------------ the best layout */

static const char *dtype_word(ts_dtype d) { return d == TS_BF16 ? "bf16" : d == TS_F16 ? "f16" : "f32"; }

static void put_request(text *t, const ts_plan_request *rq) {
    const ts_bert_config *c = rq->cfg;
    const ts_device_profile *p = rq->device;
    put(t, "model: BERT, %d layers, hidden %d, %d heads, intermediate %d, vocabulary %d\n", c->num_hidden_layers,
        c->hidden_size, c->num_attention_heads, c->intermediate_size, c->vocab_size);
    put(t, "task: %s, micro-batch %s%d x %d tokens", ts_plan_task_name(rq->task),
        rq->split_batch && rq->global_batch > 0 ? "up to " : "", rq->batch, rq->seq_len);
    if (rq->task == TS_PLAN_PRETRAIN) put(t, ", %d masked positions", rq->max_predictions ? rq->max_predictions : rq->seq_len);
    put(t, ", %s, precision %s (%s products, %s weights, gradients and optimizer state)", dtype_word(rq->dtype),
        ts_precision_name(rq->dtype, rq->weight_dtype), dtype_word(rq->dtype), dtype_word(rq->weight_dtype));
    if (rq->global_batch > 0) put(t, ", global batch %d", rq->global_batch);
    if (rq->task != TS_PLAN_INFER) put(t, ", %s", rq->optimizer == TS_OPTIM_LAMB ? "LAMB" : "AdamW");
    put(t, "\ndevice: %d x %s (%.2f GB each", rq->count, p->name, gb(p->memory_bytes));
    if (p->streaming_bytes > 0) put(t, ", %.2f GB streaming memory beside it", gb(p->streaming_bytes));
    put(t, "%s)%s%s\n", p->measured ? "; measured on this machine" : "", p->description[0] ? ": " : "", p->description);
}

static void put_layout_words(text *t, const ts_plan_request *rq, const ts_plan_layout *l) {
    put(t, "%d stage%s on %d device%s x %d replica%s", l->nstages, l->nstages == 1 ? "" : "s", l->ndevices,
        l->ndevices == 1 ? "" : "s", l->replicas, l->replicas == 1 ? "" : "s");
    if (rq->task == TS_PLAN_INFER) return; /* no steps, no optimizer */
    put(t, ", %d micro-batch%s of %d per step, recomputation %s, optimizer state %s", l->micro_batches,
        l->micro_batches == 1 ? "" : "es", (int)l->batch, l->recompute ? "on" : "off",
        l->shard_state && l->replicas > 1 ? "sharded over the replicas" : "not sharded");
}

/* The table of the stages of l: one row each, memory in GB, times in ms. */
static void put_stages(text *t, const ts_plan_request *rq, const ts_plan_layout *l) {
    int L = rq->cfg->num_hidden_layers;
    put(t, "  %-5s %-6s %-14s %8s %8s %8s %17s %8s %9s %15s %8s %8s %9s\n", "stage", "device", "parts", "params", "grads",
        "accum.", "optimizer (strm)", "activ.", "workspace", "total / device", "fwd ms", "bwd ms", "update ms");
    for (int s = 0; s < l->nstages && s < TS_MAX_STAGES; s++) {
        const ts_plan_stage *st = &l->st[s];
        ts_plan_mem_row r;
        char parts[64], opt[32], tot[32];
        ts_plan_parts_name(st->first, st->last, L, parts, sizeof parts);
        ts_plan_mem_row_of(st, &r);
        snprintf(opt, sizeof opt, "%.2f (%.2f)", gb(r.optimizer), gb(r.streamed));
        snprintf(tot, sizeof tot, "%.2f / %.2f", gb(r.need), gb(rq->device->memory_bytes));
        put(t, "  %-5d %-6d %-14s %8.2f %8.2f %8.2f %17s %8.2f %9.2f %15s %8.2f %8.2f %9.2f  %s\n", s, st->device, parts,
            gb(r.params), gb(r.grads), gb(r.accumulators), opt, gb(r.activations), gb(r.workspace), tot,
            st->fwd_s * 1e3, st->bwd_s * 1e3, st->update_s * 1e3, st->fits ? "fits" : "DOES NOT FIT");
    }
    put(t, "  (memory on each device in GB of 1e9 bytes: the compiler's plan of each stage as the layout changes\n"
           "  it; accum.: gradient accumulators and all-reduce buckets; optimizer: its state on the device, sharded\n"
           "  over the replicas where it is, and in brackets the part kept in streaming memory beside it;\n"
           "  a weight two stages of one device share is counted once; fwd / bwd: one micro-batch; update: one step)\n");
    if (rq->task != TS_PLAN_INFER && l->nstages == 1 && l->st[0].mem.grads == 0)
        put(t, "  (grads 0, update 0: no clipping, accumulation or replicas, so the updates run inside the backward\n"
               "  pass, timed with it, and each gradient's memory is reused once its update has read it)\n");
}

static void put_best(text *t, const ts_plan_request *rq, const ts_plan_layout *l) {
    put(t, "%s: ", l->fits ? "best layout" : "no layout fits; the closest");
    put_layout_words(t, rq, l);
    put(t, "\n  stages: %s\n", l->stages);
    put_stages(t, rq, l);
    put(t, "bubble: %.1f%% of the devices' time idle in the pipeline\n", l->bubble * 100);
    if (l->replicas > 1 && l->allreduce_s > 0)
        put(t, "all-reduce: %.2f ms per step, of which %.2f ms (%.0f%%) hidden behind the backward\n", l->allreduce_s * 1e3,
            l->allreduce_hidden_s * 1e3, l->allreduce_s > 0 ? 100 * l->allreduce_hidden_s / l->allreduce_s : 0);
    else
        put(t, "all-reduce: none (%s)\n", l->replicas > 1 ? "no gradients to sum" : "one replica");
    put(t, "step: %.2f ms (%d replica%s x %d micro-batch%s x %d %s); estimated %.1f seq/s\n", l->step_s * 1e3,
        l->replicas, l->replicas == 1 ? "" : "s", l->micro_batches, l->micro_batches == 1 ? "" : "es", (int)l->batch,
        rq->sequences_per_row > 1 ? "packed rows" : l->batch == 1 ? "sequence" : "sequences", l->seq_per_s);
    if (rq->sequences_per_row > 1) put(t, "packed: %.3f sequences a row on average\n", rq->sequences_per_row);
    if (!l->fits && l->why[0]) put(t, "does not fit: %s\n", l->why);
    if (l->command[0]) put(t, "command:\n  %s\n", l->command);
}

/* ------------------------------------------------------------------ alternatives and the entry point */

static void put_alternatives(text *t, const ts_plan_layout *l, int n) {
    if (n <= 1) {
        put(t, "alternatives: none (the layout was fixed, or no other was found)\n");
        return;
    }
    put(t, "alternatives, the next best first:\n");
    for (int i = 1; i < n; i++) {
        put(t, "  %d. \"%s\" x %d replica%s, %d micro-batch%s of %d%s%s: ", i + 1, l[i].stages, l[i].replicas,
            l[i].replicas == 1 ? "" : "s", l[i].micro_batches, l[i].micro_batches == 1 ? "" : "es", (int)l[i].batch,
            l[i].recompute ? ", recomputed" : "", l[i].shard_state && l[i].replicas > 1 ? ", optimizer state sharded" : "");
        if (l[i].fits) put(t, "%.1f seq/s", l[i].seq_per_s);
        else put(t, "does not fit");
        put(t, "%s%s\n", l[i].why[0] ? ": " : "", l[i].why);
    }
}

ts_status ts_plan_print(const ts_plan_request *rq, const ts_plan_layout *l, int n, int explain, ts_write_fn write,
                        void *ctx) {
    if (!rq || !rq->cfg || !rq->device || !write || (n > 0 && !l) || n < 0)
        return ts_set_error(TS_ERR_ARG, "ts_plan_print: NULL request, model, device, layouts or write, or n < 0");
    ts_plan_request_copy c;
    ts_plan_layout *all;
    if (ts_plan_request_read(&c, rq, "ts_plan_print") || ts_plan_layouts_read(l, n, c.rq.batch, &all, "ts_plan_print"))
        return ts_last_status();
    rq = &c.rq, l = all;
    text t = {0};
    put_request(&t, rq);
    if (n == 0) put(&t, "no layout: nothing was planned\n");
    else put_best(&t, rq, &l[0]);
    if (explain && n > 0) put_alternatives(&t, l, n);
    ts_status st = TS_OK;
    if (t.oom) st = ts_set_error(TS_ERR_NOMEM, "ts_plan_print: out of memory");
    else write(ctx, t.s, t.n);
    free(t.s), free(all);
    return st;
}
