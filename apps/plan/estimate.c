/*
 * estimate.c — ts_plan_estimate: one layout of a BERT run costed before it is made. The model is
 * built and compiled for planning only (ts_compile_opts.plan_only) over its stages, each stage's
 * memory taken from the compiler's plan and its time from the cost model (cost.c); then the
 * replicas (ZeRO-1 sharding, gradient buckets, optimizer state in streaming memory), the 1F1B
 * step over M micro-batches, the bubble, the all-reduce and how much the backward hides, seq/s,
 * and the command that runs the layout. docs/cost-model.md states the model.
 */
#include "plan/cost.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void ts_plan_request_defaults(ts_plan_request *out) {
    static ts_bert_config base;
    static int made;
    if (!made) ts_bert_config_default(&base), made = 1;
    if (!out) return;
    ts_plan_request r = {.struct_size = sizeof r}, *rq = &r;
    rq->cfg = &base;
    rq->task = TS_PLAN_PRETRAIN;
    rq->batch = 8, rq->seq_len = 128, rq->max_predictions = 20;
    rq->dtype = TS_F32, rq->optimizer = TS_OPTIM_ADAMW;
    rq->count = 1;
    rq->recompute = -1, rq->shard_state = -1, rq->stream_state = 1;
    rq->weight_dtype = TS_F32, rq->global_batch = 0, rq->split_batch = 0, rq->max_grad_norm = 0;
    out->struct_size = 0; /* a struct not set up yet: its base layout (tessera.h) */
    TS_STRUCT_WRITE(out, rq, ts_plan_request, "ts_plan_request_defaults");
}

ts_status ts_plan_request_read(ts_plan_request_copy *c, const ts_plan_request *rq, const char *fn) {
    if (!rq) return ts_set_error(TS_ERR_ARG, "%s: NULL request", fn);
    if (TS_STRUCT_READ(&c->rq, rq, ts_plan_request, fn)) return TS_ERR_ARG;
    if (c->rq.cfg && TS_STRUCT_READ(&c->cfg, c->rq.cfg, ts_bert_config, fn)) return TS_ERR_ARG;
    if (c->rq.device && TS_STRUCT_READ(&c->dev, c->rq.device, ts_device_profile, fn)) return TS_ERR_ARG;
    if (c->rq.cfg) c->rq.cfg = &c->cfg;
    if (c->rq.device) c->rq.device = &c->dev;
    return TS_OK;
}

/* The stride of a caller's array of layouts: the size of the first (0: the base layout's sizeof). */
static size_t layout_stride(const ts_plan_layout *l) {
    return l->struct_size ? l->struct_size : TS_BASE_SIZEOF(ts_plan_layout);
}

ts_status ts_plan_layouts_read(const ts_plan_layout *l, int n, int batch, ts_plan_layout **out, const char *fn) {
    *out = NULL;
    if (n <= 0) return TS_OK;
    if (!(*out = malloc(sizeof **out * (size_t)n))) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory", fn);
    size_t stride = layout_stride(l);
    for (int i = 0; i < n; i++) {
        const ts_plan_layout *in = (const ts_plan_layout *)((const char *)l + stride * (size_t)i);
        if (in->struct_size != l->struct_size) {
            free(*out), *out = NULL;
            return ts_set_error(TS_ERR_ARG, "%s: layout %d has struct_size %zu, layout 0 %zu: an array's are one size",
                                fn, i, in->struct_size, l->struct_size);
        }
        if (TS_STRUCT_READ(&(*out)[i], in, ts_plan_layout, fn)) {
            free(*out), *out = NULL;
            return TS_ERR_ARG;
        }
        if ((*out)[i].batch <= 0) (*out)[i].batch = batch; /* a layout from before the field */
    }
    return TS_OK;
}

ts_status ts_plan_layout_write(ts_plan_layout *out, int i, const ts_plan_layout *l, const char *fn) {
    size_t stride = layout_stride(out);
    ts_plan_layout *dst = (ts_plan_layout *)((char *)out + stride * (size_t)i);
    if (i > 0) dst->struct_size = out->struct_size;
    return TS_STRUCT_WRITE(dst, l, ts_plan_layout, fn);
}

/* "cpu:0,cpu:1,..": the devices only label the stages of a program compiled for planning. */
static void device_list(int n, char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = 0;
    for (int d = 0; d < n && o < cap; d++) o += (size_t)snprintf(buf + o, cap - o, "%scpu:%d", d ? "," : "", d);
}

/* The training (or inference) program of rq's model over plan pp (NULL: one device); keep: every
 * gradient kept to the end of the step, as clipping, replicas and fp16's loss scaling keep them
 * (accumulation and stages keep them in the compiler already). */
static ts_status compile_model(const ts_plan_request *rq, ts_bert_config *cfg, const ts_stage_plan *pp, int micro,
                               int keep, ts_program **prog) {
    ts_bert_head head = rq->task == TS_PLAN_PRETRAIN ? TS_BERT_PRETRAINING
                        : rq->task == TS_PLAN_FINETUNE ? TS_BERT_SEQ_CLASSIFICATION : rq->cfg->head;
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = cfg, .head = head, .batch = rq->batch,
                            .seq = rq->seq_len, .optimizer = rq->optimizer, .weight_decay = 0.01f,
                            .accumulation = micro, .plan_only = 1};
    /* planning only: clipping stands in for whatever keeps the gradients (the same memory); without
     * it ts_bert_train_programs moves the updates into the backward pass where nothing else keeps them */
    o.max_grad_norm = keep ? (rq->max_grad_norm > 0 ? (float)rq->max_grad_norm : 1.0f) : 0.f;
    if (pp) o.stage_devices = pp->stage_name, o.nstage_devices = pp->nstages;
    /* inference fetches the head's output (without a fetch nothing would be scheduled) */
    const char *out = head == TS_BERT_MODEL ? "last_hidden_state" : head == TS_BERT_PRETRAINING ? "prediction_logits"
                                                                                                : "logits";
    o.infer_fetches = &out, o.ninfer_fetches = 1;
    if (rq->task == TS_PLAN_INFER) return ts_bert_train_programs(&o, NULL, prog);
    return ts_bert_train_programs(&o, prog, NULL);
}

ts_status ts_plan_compile(const ts_plan_request *rq, const char *spec, int ndevices, int recompute, int micro_plan,
                          int replicas, ts_plan_compiled *out) {
    memset(out, 0, sizeof *out);
    ts_bert_config cfg = *rq->cfg;
    cfg.compute_dtype = rq->dtype, cfg.recompute = recompute;
    cfg.max_predictions_per_seq = rq->task == TS_PLAN_PRETRAIN ? rq->max_predictions : 0;
    cfg.layer_stages = NULL;
    int L = cfg.num_hidden_layers;
    char devs[TS_STAGE_MAX_DEVICES * 8];
    device_list(ndevices, devs, sizeof devs);
    ts_stage_plan pp;
    if (ts_stage_plan_parse(devs, spec, L, &pp) != TS_OK) return ts_last_status();
    int piped = pp.nstages > 1 && rq->task != TS_PLAN_INFER;
    if (piped) ts_stage_plan_apply(&pp, &cfg);
    /* The runtime does not pipeline recomputed layers with bf16 / f16 casts yet ("a value is made by
     * the update and read per micro-batch"): such a layout is planned on the f32 graph (no casts:
     * a little less memory), its products costed in the requested dtype all the same. */
    if (piped && recompute && rq->dtype != TS_F32) cfg.compute_dtype = TS_F32;
    ts_program *prog = NULL;
    int S = pp.nstages, micro = micro_plan > 0 && micro_plan < S ? micro_plan : S;
    if (!piped) micro = micro_plan > 1 ? 2 : 1; /* accumulation's buffers, whatever M */
    else if (micro < 2) micro = 2;
    int keep = replicas > 1 || rq->max_grad_norm > 0 || rq->dtype == TS_F16; /* fp16 trains loss-scaled */
    if (compile_model(rq, &cfg, piped ? &pp : NULL, micro, keep, &prog) != TS_OK) return ts_last_status();
    S = ts_cost_program(prog, rq->device, (int)rq->dtype, out->cost, TS_MAX_STAGES);
    if (S < 0) {
        ts_program_free(prog);
        return ts_last_status();
    }
    out->nstages = S, out->ndevices = ndevices, out->recompute = recompute;
    /* The MLM decoder's share of the tied word embeddings' gradient ([V, C] f32, a gradient partial
     * the compiler counts with the gradients) goes from the heads' stage to the embeddings' once per
     * micro-batch, and the runtime receives it into as many slots as micro-batches in flight
     * (pipeline_compile.c). It is read by the backward of the micro-batch it arrives in: planned as
     * one buffer (docs/cost-model.md, "Known gaps"). */
    double partial = (double)cfg.vocab_size * cfg.hidden_size * 4;
    int heads_apart = piped && rq->task == TS_PLAN_PRETRAIN && pp.stage_first[S - 1] > 0;
    for (int s = 0; s < S; s++) {
        ts_stage_info si = {.struct_size = sizeof si};
        ts_program_stage_info(prog, s, &si);
        out->mem[s] = si.mem;
        out->stage_dev[s] = piped ? pp.stage_dev[s] : 0;
        out->first[s] = piped ? pp.stage_first[s] : 0;
        out->last[s] = piped ? pp.stage_last[s] : L + 1;
        if (heads_apart && out->first[s] == 0 && micro > 1 && (double)si.mem.grads > micro * partial)
            out->mem[s].grads -= (size_t)((micro - 1) * partial);
    }
    ts_program_free(prog);
    return TS_OK;
}

/* Stage s's memory on its device (c: its cost, for the copies shared with another stage there):
 * what the compiler planned, with the gradient accumulators (in optimizer_state when M > 1: one
 * per parameter whose gradient the stage makes, f32) becoming the all-reduce's buckets with R > 1
 * replicas; the rest of the optimizer state sharded over R (shard) and streamed when the profile
 * has streaming memory. The program is compiled with f32 parameters: with 16-bit storage
 * (weight_dtype "bf16-sr" / "fp16-sr") parameters, gradients, accumulators, buckets and optimizer
 * state take half their f32 bytes. A device of published figures (not measured) keeps activations
 * in the compute dtype: half of tessera's f32 ones for bf16 / f16. */
static void stage_memory(const ts_plan_request *rq, const ts_stage_memory *m, const ts_stage_cost *c, int M, int R, int shard,
                         ts_plan_stage *st) {
    const ts_device_profile *p = rq->device;
    double w = rq->weight_dtype != TS_F32 ? 0.5 : 1, own = (double)m->params - c->shared_bytes;
    /* the accumulators: one per gradient made here (m->grads may also hold gradient partials received
     * from another stage, which are not accumulated) */
    double accum = M > 1 || R > 1 ? fmin((double)m->grads, own > 0 ? own : 0) : 0, held = (double)m->optimizer_state;
    double state = w * (held > accum ? held - accum : 0) / (shard && R > 1 ? R : 1);
    double act = (double)m->activations * (rq->dtype != TS_F32 && !p->measured ? 0.5 : 1);
    st->streamed_bytes = rq->stream_state && p->streaming_bytes > 0 && state <= p->streaming_bytes ? state : 0;
    st->dev_params = w * own;
    st->dev_grads = w * (double)m->grads;
    st->dev_accumulators = w * (accum + (double)m->grad_buckets);
    st->dev_optimizer_state = state - st->streamed_bytes;
    st->dev_activations = act;
    st->dev_other = (double)m->workspace + (double)m->weight_copies;
    st->need_bytes = st->dev_params + st->dev_grads + st->dev_accumulators + st->dev_optimizer_state +
                     st->dev_activations + st->dev_other;
}

/* The replicas' all-reduce of each device's gradients (ring), and how much of it the last
 * micro-batch's backward on that device hides; per device, the worst exposed one. */
static void allreduce(const ts_plan_request *rq, const ts_plan_compiled *pc, int R, ts_plan_layout *l) {
    const ts_device_profile *p = rq->device;
    int D = pc->ndevices, cross = p->devices_per_host > 0 && R * D > p->devices_per_host;
    double bw = cross ? p->host_bw : p->link_bw, lat = cross ? p->host_latency : p->link_latency, exposed = 0;
    double w = rq->weight_dtype != TS_F32 ? 0.5 : 1; /* 16-bit gradients: half the bytes */
    l->allreduce_s = l->allreduce_hidden_s = 0;
    if (R <= 1 || rq->task == TS_PLAN_INFER || bw <= 0) return;
    for (int d = 0; d < D; d++) {
        double bytes = 0, bwd = 0;
        for (int s = 0; s < pc->nstages; s++)
            if (pc->stage_dev[s] == d) { /* the gradients of its parameters (not partials sent on) */
                double own = (double)pc->mem[s].params - pc->cost[s].shared_bytes;
                bytes += w * (own > 0 ? fmin((double)pc->mem[s].grads, own) : (double)pc->mem[s].grads);
                bwd += pc->cost[s].bwd_s;
            }
        double t = 2.0 * (R - 1) / R * bytes / bw + 2.0 * (R - 1) * lat, hidden = t < bwd ? t : bwd;
        if (t > l->allreduce_s) l->allreduce_s = t;
        if (t - hidden > exposed) exposed = t - hidden;
    }
    l->allreduce_hidden_s = l->allreduce_s - exposed;
}

/* What device d holds (the sum over its stages), in l->why: "stage 0 (device 0) needs 1.38 GB of
 * 0.90 GB: 0.48 GB over (parameters 0.33, gradients 0.33, ...)". */
static void overflow_words(ts_plan_layout *l, const ts_plan_compiled *pc, int d, int first, double need, double cap) {
    double part[6] = {0};
    for (int s = 0; s < pc->nstages; s++)
        if (pc->stage_dev[s] == d) {
            const ts_plan_stage *st = &l->st[s];
            part[0] += st->dev_params, part[1] += st->dev_grads, part[2] += st->dev_accumulators;
            part[3] += st->dev_optimizer_state, part[4] += st->dev_activations, part[5] += st->dev_other;
        }
    snprintf(l->why, sizeof l->why, "stage %d (device %d) needs %.2f GB of %.2f GB: %.2f GB over (parameters %.2f, "
             "gradients %.2f, accumulators %.2f, optimizer state %.2f, activations %.2f, other %.2f GB)", first, d,
             need / 1e9, cap / 1e9, (need - cap) / 1e9, part[0] / 1e9, part[1] / 1e9, part[2] / 1e9, part[3] / 1e9,
             part[4] / 1e9, part[5] / 1e9);
}

/* Memory per device against the profile's: the stages' fits and the layout's, the worst overflow,
 * and what does not fit in words. */
static double check_fit(const ts_plan_request *rq, const ts_plan_compiled *pc, ts_plan_layout *l) {
    double cap = rq->device->memory_bytes, worst = 0;
    l->fits = 1, l->why[0] = 0;
    for (int d = 0; d < pc->ndevices; d++) {
        double need = 0;
        int first = -1;
        for (int s = 0; s < pc->nstages; s++)
            if (pc->stage_dev[s] == d) need += l->st[s].need_bytes, first = first < 0 ? s : first;
        for (int s = 0; s < pc->nstages; s++)
            if (pc->stage_dev[s] == d) l->st[s].fits = cap <= 0 || need <= cap;
        double over = cap > 0 ? need / cap : 0;
        if (over > worst) worst = over;
        if (cap > 0 && need > cap && l->fits) {
            l->fits = 0;
            overflow_words(l, pc, d, first, need, cap);
        }
    }
    return worst;
}

/* The cores a measured CPU profile's devices share: its devices (cpu:0 .. cpu:N-1, and replicas
 * under mpirun on this machine) are parts of one host, whose cores the profile was measured on as
 * one device; 0 for any other profile (a device of its own). */
static double shared_host_cores(const ts_device_profile *p) {
    if (!p->measured || strncmp(p->name, "cpu", 3) != 0) return 0;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (double)n : 1;
}

/* Threads of each of n devices on `cores` cores, as the runtime gives them: cores / n, at least 1. */
static double threads_per_device(double cores, int n) {
    double t = (double)(int)(cores / n);
    return t < 1 ? 1 : t;
}

/* How much slower each of n devices sharing a measured host's cores runs than the whole host the
 * profile was measured on: compute by cores / threads (*k); memory traffic by mem_bw over what
 * its threads reach (*q: threads x mem_bw_thread, at most mem_bw; as compute without a measured
 * mem_bw_thread). 1 and 1 for a device of its own or a host of one device. */
static void host_share(const ts_device_profile *p, int n, double *k, double *q) {
    double cores = shared_host_cores(p);
    *k = *q = 1;
    if (cores <= 0 || n <= 1) return;
    double t = threads_per_device(cores, n);
    *k = cores / t;
    *q = p->mem_bw_thread > 0 ? p->mem_bw / fmin(p->mem_bw, t * p->mem_bw_thread) : *k;
    if (*q > *k) *q = *k;
}

void ts_plan_evaluate(const ts_plan_request *rq, const ts_plan_compiled *pc, const char *spec, int R, int M, int shard,
                      ts_plan_layout *l, double *overflow) {
    const ts_device_profile *p = rq->device;
    int S = pc->nstages, D = pc->ndevices, infer = rq->task == TS_PLAN_INFER;
    memset(l, 0, sizeof *l);
    l->struct_size = sizeof *l;
    l->nstages = S, l->ndevices = D, l->recompute = pc->recompute, l->replicas = R, l->micro_batches = infer ? 1 : M, l->shard_state = shard;
    l->batch = rq->batch;
    snprintf(l->stages, sizeof l->stages, "%s", spec);
    double t_dev[TS_STAGE_MAX_DEVICES] = {0}, full[TS_STAGE_MAX_DEVICES] = {0}, update = 0, update_full = 0, k, q;
    host_share(p, R * D, &k, &q);
    for (int s = 0; s < S; s++) {
        ts_plan_stage *st = &l->st[s];
        const ts_stage_cost *c = &pc->cost[s];
        st->device = pc->stage_dev[s], st->first = pc->first[s], st->last = pc->last[s], st->mem = pc->mem[s];
        stage_memory(rq, &pc->mem[s], c, l->micro_batches, R, shard, st);
        st->fwd_s = ts_phase_time(&c->fwd_x, k, q), st->bwd_s = infer ? 0 : ts_phase_time(&c->bwd_x, k, q);
        st->update_s = infer ? 0 : ts_phase_time(&c->upd_x, k, q) / (shard && R > 1 ? R : 1);
        if (st->streamed_bytes > 0 && p->streaming_bw > 0) st->update_s += 2 * st->streamed_bytes / p->streaming_bw;
        /* devices sharing a host's memory copy through it: read and write at the memory's rate */
        double link = shared_host_cores(p) > 0 ? ts_profile_mem_bw(p) / 2 : p->link_bw;
        st->send_s = c->nsend ? c->send_bytes / (link > 0 ? link : 1e30) + c->nsend * p->link_latency : 0;
        t_dev[st->device] += st->fwd_s + st->bwd_s + st->send_s;
        full[st->device] += c->fwd_s + (infer ? 0 : c->bwd_s) + st->send_s;
        update += st->update_s;
        update_full += infer ? 0 : c->upd_s / (shard && R > 1 ? R : 1);
    }
    /* 1F1B: the first micro-batch passes every device once, the other M - 1 follow at the pace of
     * the slowest (for equal devices (M + D - 1) x t) */
    double tmax = 0, tsum = 0, busy = 0, upd_max = 0;
    for (int d = 0; d < D; d++)
        busy += t_dev[d] * l->micro_batches, tmax = fmax(tmax, t_dev[d]), tsum += t_dev[d];
    for (int s = 0; s < S; s++) upd_max = fmax(upd_max, l->st[s].update_s);
    allreduce(rq, pc, R, l);
    double pipe = (l->micro_batches - 1) * tmax + tsum;
    if (k > 1) { /* R x D devices share the cores of one host: no faster than all the work on all of them */
        double work = 0;
        for (int d = 0; d < D; d++) work += full[d] * l->micro_batches;
        pipe = fmax(pipe, R * work);
        update = fmax(upd_max, R * update_full);
    }
    l->step_s = pipe + update + (l->allreduce_s - l->allreduce_hidden_s);
    l->bubble = l->step_s > 0 ? 1 - busy / (D * l->step_s) : 0;
    double packed = rq->sequences_per_row > 1 ? rq->sequences_per_row : 1; /* useful sequences a row */
    l->seq_per_s = l->step_s > 0 ? packed * R * l->micro_batches * rq->batch / l->step_s : 0;
    double over = check_fit(rq, pc, l);
    if (overflow) *overflow = over;
}

/* TS_OK when rq can be planned; layout: every layout field must be set. */
static ts_status check_request(const ts_plan_request *rq, int layout) {
    if (!rq || !rq->cfg || !rq->device) return ts_set_error(TS_ERR_ARG, "ts_plan: NULL request, model or device");
    if (rq->batch < 1 || rq->seq_len < 1 || rq->count < 1 || (int)rq->dtype < 0 || rq->dtype > TS_F16)
        return ts_set_error(TS_ERR_ARG, "ts_plan: batch %d, seq_len %d, count %d and the dtype must be positive and "
                            "f32, bf16 or f16", rq->batch, rq->seq_len, rq->count);
    if (layout && (!rq->stages || rq->replicas < 1 || rq->micro_batches < 1 || rq->recompute < 0 || rq->shard_state < 0))
        return ts_set_error(TS_ERR_ARG, "ts_plan_estimate: the layout must be set: stages, replicas, micro_batches, "
                            "recompute and shard_state (ts_plan_search searches what is left open)");
    if (rq->weight_dtype != TS_F32 && rq->weight_dtype != rq->dtype)
        return ts_set_error(TS_ERR_ARG, "ts_plan: weight_dtype %s must be f32 or the dtype, %s (16-bit weights are "
                            "stored in the compute dtype)", ts_dtype_name(rq->weight_dtype), ts_dtype_name(rq->dtype));
    if (rq->global_batch < 0 || (rq->global_batch > 0 && !rq->split_batch && rq->global_batch % rq->batch))
        return ts_set_error(TS_ERR_ARG, "ts_plan: global_batch %d must be a positive multiple of batch %d (replicas x "
                            "micro_batches x batch)", rq->global_batch, rq->batch);
    if (!(rq->max_grad_norm >= 0 && rq->max_grad_norm < 1e30))
        return ts_set_error(TS_ERR_ARG, "ts_plan: max_grad_norm %g must be 0 (no clipping) or a positive number",
                            rq->max_grad_norm);
    if (rq->replicas > 0 && rq->count % rq->replicas)
        return ts_set_error(TS_ERR_ARG, "ts_plan: replicas %d does not divide count %d", rq->replicas, rq->count);
    if (layout && rq->global_batch > 0 && rq->replicas * rq->micro_batches * rq->batch != rq->global_batch)
        return ts_set_error(TS_ERR_ARG, "ts_plan_estimate: replicas %d x micro_batches %d x batch %d is not "
                            "global_batch %d", rq->replicas, rq->micro_batches, rq->batch, rq->global_batch);
    if (rq->seq_len > rq->cfg->max_position_embeddings)
        return ts_set_error(TS_ERR_ARG, "ts_plan: seq_len %d is more than the model's max_position_embeddings %d",
                            rq->seq_len, rq->cfg->max_position_embeddings);
    if (rq->task == TS_PLAN_PRETRAIN && rq->max_predictions > rq->seq_len)
        return ts_set_error(TS_ERR_ARG, "ts_plan: max_predictions %d is more than seq_len %d", rq->max_predictions,
                            rq->seq_len);
    return TS_OK;
}

ts_status ts_plan_estimate(const ts_plan_request *rq, ts_plan_layout *out) {
    if (!out) return ts_set_error(TS_ERR_ARG, "ts_plan_estimate: out is NULL");
    ts_plan_request_copy c;
    if (ts_plan_request_read(&c, rq, "ts_plan_estimate") != TS_OK) return TS_ERR_ARG;
    rq = &c.rq;
    if (rq->split_batch && rq->global_batch > 0 && rq->replicas > 0 && rq->micro_batches > 0) { /* b: what is left */
        int RM = rq->replicas * rq->micro_batches, b = rq->global_batch / RM;
        if (rq->global_batch % RM || b > rq->batch)
            return ts_set_error(TS_ERR_ARG, "ts_plan_estimate: global_batch %d over replicas %d x micro_batches %d "
                                "leaves no micro-batch of at most batch %d", rq->global_batch, rq->replicas,
                                rq->micro_batches, rq->batch);
        c.rq.batch = b;
    }
    if (check_request(rq, 1) != TS_OK) return ts_last_status();
    ts_plan_compiled pc;
    int D = rq->count / rq->replicas;
    if (ts_plan_compile(rq, rq->stages, D, rq->recompute, rq->micro_batches, rq->replicas, &pc) != TS_OK)
        return ts_last_status();
    ts_plan_layout *l = malloc(sizeof *l);
    if (!l) return ts_set_error(TS_ERR_NOMEM, "ts_plan_estimate: out of memory");
    ts_plan_evaluate(rq, &pc, rq->stages, rq->replicas, rq->micro_batches, rq->shard_state, l, NULL);
    ts_status st = ts_plan_layout_write(out, 0, l, "ts_plan_estimate");
    free(l);
    return st;
}

ts_status ts_plan_check_request(const ts_plan_request *rq) { return check_request(rq, 0); }

int ts_plan_unfit_stage(const ts_plan_request *rq, double *need_bytes) {
    if (need_bytes) *need_bytes = 0;
    ts_plan_layout *l = calloc(1, sizeof *l);
    if (!l) return ts_set_error(TS_ERR_NOMEM, "ts_plan_unfit_stage: out of memory"), -1;
    l->struct_size = sizeof *l;
    int unfit = -1;
    if (ts_plan_estimate(rq, l) == TS_OK)
        for (int s = 0; s < l->nstages && unfit < 0; s++)
            if (!l->st[s].fits) {
                unfit = s;
                if (need_bytes) *need_bytes = l->st[s].need_bytes;
            }
    free(l);
    return unfit;
}
