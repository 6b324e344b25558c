/*
 * epochs.c — training in epochs over rows (tessera_tasks.h: ts_train_epochs), the loop
 * `tessera finetune` runs for both of its tasks: epochs of shuffled rows, micro-batches
 * accumulated into optimizer steps, several steps per call into the program (device
 * iterations), the learning-rate schedule, progress and metrics, checkpoints, stop_after and the
 * final save, then the training step's profile. The task (ts_epoch_task) encodes rows, scores
 * the held-out data and writes the model.
 *
 * One call into the training program takes S = N x K micro-batches of B rows (N = accumulation,
 * K = device iterations): micro-batch n of step j reads rows [p + (j N + n) B, ... + B) of the
 * epoch's order, p being where the call starts. Its inputs are slices [S, B, ...], "lr" is [S]
 * (step j's lr on its N micro-batches) and "loss" comes back as [S]. With replicas, rank q takes
 * micro-batch n R + q of the N R of a step, as one process would read them.
 */
#include "train/run_report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t ts_epoch_steps(int64_t n, int batch, int accumulation, int device_iterations, int ranks) {
    int64_t N = accumulation > 1 ? accumulation : 1, K = device_iterations > 1 ? device_iterations : 1;
    int64_t rows = (int64_t)batch * N * (ranks > 1 ? ranks : 1); /* per optimizer step, over the replicas */
    if (K == 1) return (n + rows - 1) / rows;
    return n / (rows * K) * K; /* whole calls only */
}

/* The state of a run between ts_train's hooks. */
typedef struct ep_run {
    const ts_epochs_opts *o;
    const ts_epoch_task *t;
    const char *name;
    int N, K, rank, ranks;
    int64_t n, per_epoch, total;
    int64_t *order;
    int epoch;          /* whose order is in `order` (-1: none yet) */
    ts_progress pr;
    double loss_sum;    /* this epoch's */
    int64_t loss_n;
    int timed;          /* the pipeline's stages were reported */
    int64_t step0, prof_from; /* profile: where this run began; where the counters start (-1: not yet) */
} ep_run;

/* An error line to err, and the status: TS_ERR_ARG when usage, else TS_ERR_RUNTIME. */
__attribute__((format(printf, 3, 4))) static ts_status fail(const ep_run *r, int usage, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ts_status st = ts_run_fail(r->o->err, r->o->err_ctx, usage ? TS_ERR_ARG : TS_ERR_RUNTIME, fmt, ap);
    va_end(ap);
    return st;
}

static int run_fill(void *ctx, int64_t step, int micro, int slice, int *rows) {
    ep_run *r = ctx;
    const int B = r->o->batch;
    int epoch = (int)(step / r->per_epoch);
    if (epoch != r->epoch) { /* epoch e's order is a function of (seed, e): a resumed run starts anywhere */
        ts_permutation((uint64_t)r->o->seed + 1000003u * (uint64_t)epoch, r->n, r->order);
        r->epoch = epoch;
    }
    int64_t i = step % r->per_epoch * B * r->N * r->ranks + ((int64_t)micro * r->ranks + r->rank) * B;
    int m = (int)(i >= r->n ? 0 : r->n - i < B ? r->n - i : B);
    *rows = m;
    return r->t->fill(r->t->ctx, r->order + (i < r->n ? i : 0), m, slice);
}

static ts_status run_feed(void *ctx, ts_program *p) {
    ep_run *r = ctx;
    (void)p;
    return r->t->feed(r->t->ctx) ? ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME : TS_OK;
}

static void run_step(void *ctx, const ts_train_step_report *rep) {
    ep_run *r = ctx;
    if (isfinite(rep->losses[0])) r->loss_sum += rep->losses[0], r->loss_n++;
    ts_progress_step(&r->pr, rep->step, rep->losses[0], rep->seq_per_s);
}

static void run_metrics(void *ctx, char *buf, size_t cap) {
    ep_run *r = ctx;
    snprintf(buf, cap, ", \"epoch\": %d", r->epoch + 1);
}

static ts_status run_after(void *ctx, int64_t step, int last) {
    ep_run *r = ctx;
    const ts_epochs_opts *o = r->o;
    if (o->profile) ts_train_profile_warmup(r->t->train, r->step0, step, last, &r->prof_from);
    int end = step % r->per_epoch == 0;
    if (!end && !last) return TS_OK;
    int epoch = (int)((step - 1) / r->per_epoch);
    if (last && !end && step < r->total)
        ts_progress_print(&r->pr, "the time limit of %g minutes reached in epoch %d\n", o->max_minutes, epoch + 1);
    int rc = r->t->epoch_end(r->t->ctx, epoch, step, last, r->loss_n ? r->loss_sum / (double)r->loss_n : NAN, &r->pr);
    if (o->pipe && !r->timed) { /* the pipeline's stages, measured, once */
        char line[2048];
        ts_stage_plan_report(o->pipe, r->t->train, r->N, line, sizeof line, o->metrics, o->metrics_ctx);
        ts_progress_print(&r->pr, "%s: %s\n", r->name, line);
        r->timed = 1;
    }
    r->loss_sum = 0, r->loss_n = 0;
    return rc ? ts_set_error(TS_ERR_RUNTIME, "%s", ts_last_error()) : TS_OK;
}

static ts_status run_checkpoint(void *ctx, int64_t step) {
    ep_run *r = ctx;
    if (r->o->save_every && step % r->o->save_every == 0 && r->t->save(r->t->ctx))
        return ts_set_error(TS_ERR_IO, "saving the model at step %lld", (long long)step);
    return r->t->checkpoint(r->t->ctx, step) ? ts_set_error(TS_ERR_IO, "saving a checkpoint at step %lld", (long long)step)
                                              : TS_OK;
}

/* The line on micro-batches and device iterations, when there are several. */
static void describe(const ep_run *r) {
    const ts_epochs_opts *o = r->o;
    const int B = o->batch, N = r->N, K = r->K, R = r->ranks;
    ts_writef(o->out, o->out_ctx, "%s: %d micro-batch%s of %d per step%s (effective batch %d), %d step%s per program "
              "call", r->name, N, N == 1 ? "" : "es", B, R > 1 ? " on each replica" : "", N * B * R, K,
              K == 1 ? "" : "s");
    if (K > 1 && r->n % ((int64_t)B * N * K * R))
        ts_writef(o->out, o->out_ctx, "; %lld rows an epoch left out (the calls take whole steps)",
                  (long long)(r->n - r->per_epoch * B * N * R));
    ts_writef(o->out, o->out_ctx, "\n");
}

/* ts_train with the hooks above, then the end: stopped, or the final save and report. */
static ts_status run_train(ep_run *r, int64_t step) {
    const ts_epochs_opts *o = r->o;
    const ts_epoch_task *t = r->t;
    ts_progress_init(&r->pr, r->total, o->max_minutes * 60, o->tty, o->out, o->out_ctx);
    ts_train_spec spec = {.struct_size = sizeof spec, .program = t->train, .micro_batches = r->N, .steps_per_call = r->K,
                          .lr = (float)o->lr, .warmup = o->warmup, .total_steps = r->total,
                          .max_seconds = o->max_minutes * 60, .skip_nonfinite = o->fp16, .save_every = o->save_every,
                          .stop_after = o->stop_after, .metrics = o->metrics, .metrics_ctx = o->metrics_ctx,
                          .comm = r->ranks > 1 ? o->comm : NULL};
    ts_train_hooks hooks = {.ctx = r, .fill = run_fill, .feed = run_feed, .on_step = run_step,
                            .metrics_extra = run_metrics, .after_call = run_after, .checkpoint = run_checkpoint};
    ts_train_result res;
    if (ts_train(&spec, &hooks, step, &res)) return fail(r, 0, "\n%s: %s\n", r->name, ts_last_error());
    if (res.stopped) {
        ts_progress_print(&r->pr, "%s: stopped after step %lld, as asked; its checkpoint is in %s, to resume from\n", r->name,
                          (long long)res.step, o->out_dir);
    } else {
        if (ts_replicas_check_params(o->comm, t->train, "at the end"))
            return fail(r, 0, "%s: %s\n", r->name, ts_last_error());
        if (t->save(t->ctx)) return TS_ERR_IO; /* the task wrote why */
        t->report(t->ctx, res.step, res.seconds);
    }
    if (o->profile &&
        ts_train_profile_print(t->train, o->comm, step, r->prof_from, res.step, o->out, o->out_ctx) != TS_OK)
        return fail(r, 0, "%s: the profile: %s\n", r->name, ts_last_error());
    return TS_OK;
}

ts_status ts_train_epochs(const ts_epochs_opts *o, const ts_epoch_task *t, int64_t step) {
    ts_epochs_opts oc;
    if (TS_STRUCT_READ(&oc, o, ts_epochs_opts, "ts_train_epochs")) return TS_ERR_ARG;
    o = &oc;
    if (!t || !t->train || !t->fill || !t->feed || !t->epoch_end || !t->save || !t->checkpoint || !t->report ||
        o->batch < 1 || o->epochs < 0)
        return ts_set_error(TS_ERR_ARG, "ts_train_epochs: a task with a program and every callback, batch >= 1");
    ep_run r = {.o = o, .t = t, .name = o->name ? o->name : "train", .n = t->nrows, .epoch = -1, .step0 = step,
                .prof_from = -1, .N = o->accumulation > 1 ? o->accumulation : 1,
                .K = o->device_iterations > 1 ? o->device_iterations : 1,
                .rank = o->comm ? ts_comm_rank(o->comm) : 0, .ranks = o->comm ? ts_comm_size(o->comm) : 1};
    r.per_epoch = ts_epoch_steps(r.n, o->batch, r.N, r.K, r.ranks);
    if (r.per_epoch == 0)
        return fail(&r, 1, "%s: %lld training rows do not fill one call of batch %d x accumulation %d x "
                    "device_iterations %d\n", r.name, (long long)r.n, o->batch, r.N, r.K);
    if (step % r.K)
        return fail(&r, 1, "%s: the checkpoint's step %lld is not a multiple of device_iterations %d\n", r.name,
                    (long long)step, r.K);
    r.total = r.per_epoch * o->epochs;
    if (o->max_steps && o->max_steps < r.total) r.total = o->max_steps;
    if (!(r.order = malloc((size_t)(r.n > 0 ? r.n : 1) * sizeof *r.order))) return fail(&r, 0, "%s: out of memory\n", r.name);
    describe(&r);
    ts_status st = ts_replicas_check_params(o->comm, t->train, o->resumed ? "after resuming" : "at the start");
    if (st) st = fail(&r, 0, "%s: %s\n", r.name, ts_last_error());
    else {
        ts_replicas_describe(o->comm, o->shard, t->train, r.name, o->out, o->out_ctx, o->metrics, o->metrics_ctx);
        st = run_train(&r, step);
    }
    free(r.order);
    return st;
}
