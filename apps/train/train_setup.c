/*
 * train_setup.c — what a fine-tuning run and a pretraining job settle the same way before they
 * train (train_setup.h): the options they share checked together, the pipeline placed, the
 * programs compiled (with the memory hint; a layout refused for memory kept for the planner,
 * ts_train_refused_layout).
 */
#include "train/train_setup.h"

#include <math.h>
#include <stdarg.h>
#include <unistd.h>

#include "train/run_report.h"

ts_status tr_vfail(ts_write_fn err, void *err_ctx, int usage, const char *fmt, va_list ap) {
    ts_status st = usage ? TS_ERR_ARG : ts_last_status();
    if (!usage && (st == TS_OK || st == TS_ERR_ARG)) st = TS_ERR_RUNTIME;
    return ts_run_fail(err, err_ctx, st, fmt, ap);
}

ts_status tr_fail(ts_write_fn err, void *err_ctx, int usage, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ts_status st = tr_vfail(err, err_ctx, usage, fmt, ap);
    va_end(ap);
    return st;
}

ts_status tr_check_ints(ts_write_fn err, void *err_ctx, const char *name, const tr_int_field *f, int n) {
    for (int i = 0; i < n; i++)
        if (f[i].value < f[i].min)
            return tr_fail(err, err_ctx, 1, "%s: %s %d: at least %d\n", name, f[i].field, f[i].value, f[i].min);
    return TS_OK;
}

ts_status tr_check_reals(ts_write_fn err, void *err_ctx, const char *name, const tr_real_field *f, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(f[i].value) || f[i].value < 0)
            return tr_fail(err, err_ctx, 1, "%s: %s %g: a finite number, at least 0\n", name, f[i].field, f[i].value);
    return TS_OK;
}

/* devices, stages and micro_batches: one device, or a pipeline (then accumulation is its
 * micro-batches: micro_batches, or 2 per device). */
static ts_status check_pipeline(tr_setup *s) {
    if (s->stages && !s->devices)
        return tr_fail(s->err, s->err_ctx, 1, "%s: stages \"%s\" needs devices\n", s->name, s->stages);
    if (s->micro_batches && s->accumulation > 1 && s->micro_batches != s->accumulation)
        return tr_fail(s->err, s->err_ctx, 1, "%s: micro_batches %d and accumulation %d: the same thing, two values\n",
                       s->name, s->micro_batches, s->accumulation);
    if (s->micro_batches) s->accumulation = s->micro_batches;
    s->piped = s->devices && (s->stages || strchr(s->devices, ','));
    if (!s->piped) return TS_OK;
    if (s->profile)
        return tr_fail(s->err, s->err_ctx, 1, "%s: profile is not supported with devices \"%s\" (a pipelined "
                       "program is not profiled); profile the step on one device\n", s->name, s->devices);
    if (s->fp16)
        return tr_fail(s->err, s->err_ctx, 1, "%s: fp16 (loss scaling) does not run as a pipeline yet: with devices "
                       "\"%s\" use bf16\n", s->name, s->devices);
    int ndev = 1;
    for (const char *p = s->devices; *p; p++) ndev += *p == ',';
    if (s->micro_batches == 1)
        return tr_fail(s->err, s->err_ctx, 1, "%s: micro_batches 1: a pipeline runs a step as 2 or more "
                       "micro-batches (one device, with no stages, runs any number)\n", s->name);
    if (s->accumulation < 2) s->accumulation = 2 * ndev; /* two micro-batches per device keep the pipeline busy */
    return TS_OK;
}

ts_status tr_setup_check(tr_setup *s) {
    ts_status st = check_pipeline(s);
    if (st) return st;
    if (ts_optim_kind_parse(s->optimizer) < 0)
        return tr_fail(s->err, s->err_ctx, 1, "%s: optimizer %s: the optimizers are adamw, lamb and sgd\n",
                       s->name, s->optimizer);
    if (s->momentum >= 1 || (s->momentum > 0 && strcmp(s->optimizer, "sgd")))
        return tr_fail(s->err, s->err_ctx, 1, "%s: momentum %g: sgd's momentum, below 1 (with optimizer sgd)\n",
                       s->name, s->momentum);
    if (s->bf16 && s->fp16) return tr_fail(s->err, s->err_ctx, 1, "%s: bf16 and fp16 exclude each other\n", s->name);
    ts_dtype compute = s->bf16 ? TS_BF16 : s->fp16 ? TS_F16 : TS_F32, weights = TS_F32;
    if (s->precision && ts_precision_parse(s->precision, &compute, &weights))
        return tr_fail(s->err, s->err_ctx, 1, "%s: precision %s\n", s->name, ts_last_error());
    if (s->precision && (s->bf16 || s->fp16) && compute != (s->bf16 ? TS_BF16 : TS_F16))
        return tr_fail(s->err, s->err_ctx, 1, "%s: precision %s and %s disagree\n", s->name, s->precision,
                       s->bf16 ? "bf16" : "fp16");
    s->bf16 = compute == TS_BF16, s->fp16 = compute == TS_F16;
    if (s->round_nearest && weights == TS_F32)
        return tr_fail(s->err, s->err_ctx, 1, "%s: round_nearest rounds 16-bit weights: precision bf16-sr or fp16-sr\n",
                       s->name);
    const int K = s->device_iterations;
    if (K > 64 || s->accumulation > 4096)
        return tr_fail(s->err, s->err_ctx, 1, "%s: device_iterations %d is above 64 or accumulation %d above 4096\n",
                       s->name, K, s->accumulation);
    if (K > 1 && s->eval_every && (s->max_steps % K || s->save_every % K || s->eval_every % K || s->stop_after % K))
        return tr_fail(s->err, s->err_ctx, 1, "%s: max_steps %d, save_every %d, eval_every %d and stop_after %d must "
                       "be multiples of device_iterations %d (each call into the program runs that many steps)\n",
                       s->name, s->max_steps, s->save_every, s->eval_every, s->stop_after, K);
    if (K > 1 && (s->max_steps % K || s->save_every % K || s->stop_after % K))
        return tr_fail(s->err, s->err_ctx, 1, "%s: max_steps %d, save_every %d and stop_after %d must be multiples of "
                       "device_iterations %d (each call into the program runs that many steps)\n",
                       s->name, s->max_steps, s->save_every, s->stop_after, K);
    if (!s->deterministic) return TS_OK;
    if (s->max_minutes > 0)
        return tr_fail(s->err, s->err_ctx, 1, "%s: max_minutes makes the run depend on the clock; it cannot be used "
                       "with deterministic (use max_steps)\n", s->name);
    if (s->threads <= 0) { /* the kernels give the same bits at a fixed count: pin it */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        s->threads = n > 0 ? (int)n : 1;
    }
    ts_writef(s->out, s->out_ctx, "%s: deterministic: %d thread%s, fixed for the run and its resumes\n", s->name,
              s->threads, s->threads == 1 ? "" : "s");
    return TS_OK;
}

ts_status tr_setup_place(const tr_setup *s, const ts_bert_config *cfg, int batch, int seq, ts_comm *comm,
                         ts_stage_plan *pp) {
    if (ts_stage_plan_parse(s->devices, s->stages, cfg->num_hidden_layers, pp))
        return tr_fail(s->err, s->err_ctx, 1, "%s: %s\n", s->name, ts_last_error());
    if (!pp->automatic) return TS_OK;
    int parts = cfg->num_hidden_layers + 2;
    if (parts <= TS_MAX_STAGES)
        ts_writef(s->out, s->out_ctx, "%s: stages auto: timing the embeddings, each layer and the heads on %s\n",
                  s->name, pp->dev[0]);
    ts_status st = ts_stage_plan_measure(cfg, cfg->head, batch, seq, s->accumulation, comm, pp);
    if (st) return tr_fail(s->err, s->err_ctx, st == TS_ERR_ARG, "%s: %s\n", s->name, ts_last_error());
    if (pp->ndev > parts)
        ts_writef(s->err, s->err_ctx, "%s: note: %d devices for %d parts: using the first %d\n", s->name, pp->ndev,
                  parts, parts);
    return TS_OK;
}

/* The layout of this thread's last run refused for memory (ts_train_refused_layout). */
static _Thread_local struct {
    int set, infer, ranks; /* infer: an inference program alone (ts_model_dir_program) */
    ts_bert_train_opts bo; /* its scalar fields */
    ts_bert_config cfg;
    ts_stage_plan pp;
} refused;

ts_status tr_setup_programs(const tr_setup *s, const ts_bert_train_opts *bo, const ts_stage_plan *pp,
                            const char *sizes_from, ts_program **tp, ts_program **ip) {
    ts_bert_train_opts o = *bo;
    ts_bert_config c = *bo->cfg;
    if (pp) {
        ts_stage_plan_apply(pp, &c);
        o.stage_devices = pp->stage_name, o.nstage_devices = pp->nstages, o.device = NULL;
    }
    o.cfg = &c;
    o.weight_dtype = TS_F32, o.round_nearest = s->round_nearest;
    if (s->precision && ts_precision_parse(s->precision, NULL, &o.weight_dtype))
        return tr_fail(s->err, s->err_ctx, 1, "%s: precision %s\n", s->name, ts_last_error());
    refused.set = 0;
    if (ts_bert_train_programs(&o, tp, ip) == TS_OK) return TS_OK;
    ts_status st = tr_fail(s->err, s->err_ctx, 0, "%s: %s\n", s->name, ts_last_error());
    if (st != TS_ERR_NOMEM) return st;
    refused.set = 1, refused.infer = !tp, refused.bo = *bo, refused.cfg = *bo->cfg;
    refused.bo.weight_dtype = o.weight_dtype;
    refused.ranks = bo->comm ? ts_comm_size(bo->comm) : 1;
    if (pp) refused.pp = *pp;
    else memset(&refused.pp, 0, sizeof refused.pp);
    ts_writef(s->err, s->err_ctx, "%s: the parameters grow with the model's sizes (vocab_size %d, hidden_size %d, "
              "num_hidden_layers %d, intermediate_size %d, max_position_embeddings %d: from %s), the activations "
              "with batch %d (sequences of %d tokens%s)%s\n", s->name, c.vocab_size, c.hidden_size,
              c.num_hidden_layers, c.intermediate_size, c.max_position_embeddings, sizes_from, o.batch, o.seq,
              s->accumulation * s->device_iterations > 1 ? ", and device_iterations x accumulation inputs" : "",
              o.memory_limit ? "; the limit is memory_limit" : "; memory_limit sets the limit");
    return st;
}

int ts_train_refused_layout(struct ts_plan_request *rq, ts_bert_config *cfg, ts_stage_plan *pp) {
    if (!refused.set || !rq || !cfg || !pp) return 0;
    const ts_bert_train_opts *bo = &refused.bo;
    int ranks = refused.ranks;
    *pp = refused.pp, *cfg = refused.cfg;
    if (pp->nstages) ts_stage_plan_apply(pp, cfg);
    *rq = (ts_plan_request){.struct_size = sizeof *rq, .stream_state = 1}; /* as ts_plan_request_defaults */
    rq->cfg = cfg, rq->batch = bo->batch, rq->seq_len = bo->seq, rq->dtype = cfg->compute_dtype;
    rq->weight_dtype = bo->weight_dtype; /* the -sr precisions: 16-bit weights, gradients and state */
    rq->task = refused.infer ? TS_PLAN_INFER : bo->head == TS_BERT_PRETRAINING ? TS_PLAN_PRETRAIN : TS_PLAN_FINETUNE;
    rq->max_predictions = cfg->max_predictions_per_seq;
    rq->optimizer = bo->optimizer == TS_OPTIM_LAMB ? TS_OPTIM_LAMB : TS_OPTIM_ADAMW;
    rq->max_grad_norm = bo->max_grad_norm; /* clipping keeps the gradients to the end of the step */
    rq->count = (pp->nstages ? pp->ndev : 1) * ranks, rq->replicas = ranks;
    rq->micro_batches = bo->accumulation > 1 ? bo->accumulation : 1;
    rq->recompute = cfg->recompute != 0, rq->shard_state = ranks > 1 && bo->shard_state;
    return 1;
}

const char *ts_train_out_dir(const char *out_dir, const char *resume) {
    char probe[4300];
    if (out_dir || !resume) return out_dir;
    return ts_path_join(probe, sizeof probe, resume, "trainer.json") == TS_OK && access(probe, F_OK) != 0 ? resume
                                                                                                        : NULL;
}
