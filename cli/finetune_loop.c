/*
 * finetune_loop.c — the training loop `tessera finetune` runs for both of its tasks (see
 * ft_train_loop in finetune.h): epochs of shuffled rows, micro-batches accumulated into optimizer
 * steps, several steps per call into the program (device iterations), the learning-rate
 * schedule, the loss check, progress and metrics, checkpoints, --stop-after and the final save,
 * then --profile's report of the training program.
 *
 * One call into the training program takes S = N x K micro-batches of B rows (N = --accumulation,
 * K = --device-iterations): micro-batch n of step j reads rows [p + (j N + n) B, ... + B) of the
 * epoch's order, p being where the call starts. Its inputs are slices [S, B, ...], "lr" is [S]
 * (step j's lr on its N micro-batches) and "loss" comes back as [S].
 */
#include <math.h>
#include <unistd.h>

#include "cli.h"
#include "finetune.h"
#include "pipeline_opts.h"
#include "train_common.h"

static ts_stage_plan pipe_plan; /* --devices: one run per process */

int ft_loop_opts(const ft_opts *o, const ts_bert_config *cfg, ts_bert_head head, int seq, cli_train_loop *loop) {
    int n = o->accumulation > 1 ? o->accumulation : 1, k = o->device_iterations > 1 ? o->device_iterations : 1;
    *loop = (cli_train_loop){.accumulation = n,
                            .device_iterations = n * k, /* program runs per call: micro-batches */
                            .max_grad_norm = (float)o->max_grad_norm,
                            .optimizer = o->optimizer,
                            .momentum = (float)o->momentum,
                            .profile = o->profile};
    if (!o->devices) return 0;
    if (cli_pipe_parse("finetune", o->devices, o->stages, cfg->num_hidden_layers, &pipe_plan)) return 2;
    int rc = pipe_plan.automatic ? cli_pipe_measure("finetune", cfg, head, o->batch, seq, n, &pipe_plan) : 0;
    if (!rc) loop->pipe = &pipe_plan;
    return rc;
}

void ft_describe(const ft_opts *o, ts_program *tp, FILE *metrics) {
    if (o->devices)
        ts_stage_plan_describe(&pipe_plan, tp, o->accumulation, "tessera finetune", ts_write_stdio,
                               metrics ? metrics : stdout, metrics != NULL);
}

int64_t ft_steps_per_epoch(const ft_opts *o, int64_t n) {
    int64_t N = o->accumulation > 1 ? o->accumulation : 1, K = o->device_iterations > 1 ? o->device_iterations : 1;
    int64_t rows = (int64_t)o->batch * N * cli_rep.size; /* per optimizer step, over the replicas */
    if (K == 1) return (n + rows - 1) / rows;
    return n / (rows * K) * K; /* whole calls only */
}

/* The state of a run between ts_train's hooks. */
typedef struct ft_run {
    const ft_opts *o;
    ft_task *t;
    int64_t n, per_epoch, total;
    int64_t *order;
    int epoch;          /* whose order is in `order` (-1: none yet) */
    ts_progress pr;
    double loss_sum;    /* this epoch's */
    int64_t loss_n;
    int timed;          /* the pipeline's stages were reported */
    int64_t step0, prof_from; /* --profile: where this run began; where the counters start (-1: not yet) */
} ft_run;

static int run_fill(void *ctx, int64_t step, int micro, int slice, int *rows) {
    ft_run *r = ctx;
    const int B = r->o->batch, N = r->o->accumulation > 1 ? r->o->accumulation : 1;
    int epoch = (int)(step / r->per_epoch);
    if (epoch != r->epoch) { /* epoch e's order is a function of (seed, e): a resumed run starts anywhere */
        ts_permutation((uint64_t)r->o->seed + 1000003u * (uint64_t)epoch, r->n, r->order);
        r->epoch = epoch;
    }
    /* replicas: rank q takes micro-batch micro R + q of the step's N R, as one process would read them */
    const int R = cli_rep.size;
    int64_t i = step % r->per_epoch * B * N * R + ((int64_t)micro * R + cli_rep.rank) * B;
    int m = (int)(i >= r->n ? 0 : r->n - i < B ? r->n - i : B);
    *rows = m;
    return r->t->fill(r->t->ctx, r->order + (i < r->n ? i : 0), m, slice);
}

static ts_status run_feed(void *ctx, ts_program *p) {
    ft_run *r = ctx;
    (void)p;
    return r->t->feed(r->t->ctx) ? ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME : TS_OK;
}

static void run_step(void *ctx, const ts_train_step_report *rep) {
    ft_run *r = ctx;
    if (isfinite(rep->losses[0])) r->loss_sum += rep->losses[0], r->loss_n++;
    ts_progress_step(&r->pr, rep->step, rep->losses[0], rep->seq_per_s);
}

static void run_metrics(void *ctx, char *buf, size_t cap) {
    ft_run *r = ctx;
    snprintf(buf, cap, ", \"epoch\": %d", r->epoch + 1);
}

static ts_status run_after(void *ctx, int64_t step, int last) {
    ft_run *r = ctx;
    if (r->o->profile) ts_train_profile_warmup(r->t->tp, r->step0, step, last, &r->prof_from);
    int end = step % r->per_epoch == 0;
    if (!end && !last) return TS_OK;
    int epoch = (int)((step - 1) / r->per_epoch);
    if (last && !end && step < r->total)
        ts_progress_print(&r->pr, "--max-minutes %g reached in epoch %d\n", r->o->max_minutes, epoch + 1);
    int rc = r->t->epoch_end(r->t->ctx, epoch, step, last, r->loss_n ? r->loss_sum / (double)r->loss_n : NAN, &r->pr,
                             r->o->out ? r->t->metrics : NULL);
    if (r->o->devices && !r->timed) { /* the pipeline's stages, measured, once */
        char line[2048];
        ts_stage_plan_report(&pipe_plan, r->t->tp, r->o->accumulation, line, sizeof line, ts_write_stdio, r->t->metrics);
        ts_progress_print(&r->pr, "tessera finetune: %s\n", line);
        r->timed = 1;
    }
    r->loss_sum = 0, r->loss_n = 0;
    return rc ? ts_set_error(TS_ERR_RUNTIME, "%s", ts_last_error()) : TS_OK;
}

static ts_status run_checkpoint(void *ctx, int64_t step) {
    ft_run *r = ctx;
    if (r->o->save_every && step % r->o->save_every == 0 && r->t->save(r->t->ctx))
        return ts_set_error(TS_ERR_IO, "saving the model at step %lld", (long long)step);
    return r->t->checkpoint(r->t->ctx, step) ? ts_set_error(TS_ERR_IO, "saving a checkpoint at step %lld", (long long)step)
                                              : TS_OK;
}

int ft_train_loop(const ft_opts *o, ft_task *t, int64_t step, FILE *metrics) {
    const int B = o->batch, N = o->accumulation > 1 ? o->accumulation : 1;
    const int K = o->device_iterations > 1 ? o->device_iterations : 1;
    ft_run r = {.o = o, .t = t, .n = t->nrows, .per_epoch = ft_steps_per_epoch(o, t->nrows), .epoch = -1,
                .step0 = step, .prof_from = -1};
    if (r.per_epoch == 0) {
        fprintf(stderr, "tessera finetune: %lld training rows do not fill one call of --batch %d x --accumulation %d "
                        "x --device-iterations %d\n", (long long)r.n, B, N, K);
        return 2;
    }
    if (step % K) {
        fprintf(stderr, "tessera finetune: --resume at step %lld: not a multiple of --device-iterations %d\n",
                (long long)step, K);
        return 2;
    }
    r.total = r.per_epoch * o->epochs;
    if (o->max_steps && o->max_steps < r.total) r.total = o->max_steps;
    if (!(r.order = malloc((size_t)(r.n > 0 ? r.n : 1) * sizeof *r.order))) {
        fprintf(stderr, "tessera finetune: out of memory\n");
        return 1;
    }
    const int R = cli_rep.size;
    if (N > 1 || K > 1 || R > 1) {
        printf("tessera finetune: %d micro-batch%s of %d per step%s (effective batch %d), %d step%s per program call",
               N, N == 1 ? "" : "es", B, R > 1 ? " on each replica" : "", N * B * R, K, K == 1 ? "" : "s");
        if (K > 1 && r.n % ((int64_t)B * N * K * R))
            printf("; %lld rows an epoch left out (the calls take whole steps)",
                   (long long)(r.n - r.per_epoch * B * N * R));
        printf("\n");
    }
    if (cli_replicas_check_params("finetune", t->tp, o->resume ? "after resuming" : "at the start")) {
        free(r.order);
        return 1;
    }
    ts_replicas_describe(cli_rep.comm, cli_rep.shard_optimizer, t->tp, "tessera finetune", ts_write_stdio, stdout,
                         ts_write_stdio, metrics);
    t->metrics = metrics;
    ts_progress_init(&r.pr, r.total, o->max_minutes * 60, isatty(fileno(stdout)), ts_write_stdio, stdout);
    ts_train_spec spec = {.struct_size = sizeof spec, .program = t->tp, .micro_batches = N, .steps_per_call = K,
                          .lr = (float)o->lr, .warmup = o->warmup, .total_steps = r.total,
                          .max_seconds = o->max_minutes * 60, .skip_nonfinite = o->fp16,
                          .save_every = o->save_every, .stop_after = o->stop_after, .metrics = ts_write_stdio, .metrics_ctx = metrics,
                          .comm = R > 1 ? cli_rep.comm : NULL};
    ts_train_hooks hooks = {.ctx = &r, .fill = run_fill, .feed = run_feed, .on_step = run_step,
                            .metrics_extra = run_metrics, .after_call = run_after, .checkpoint = run_checkpoint};
    ts_train_result res;
    ts_status st = ts_train(&spec, &hooks, step, &res);
    int rc = 1;
    if (st) fprintf(stderr, "\ntessera finetune: %s\n", ts_last_error());
    else if (res.stopped) {
        ts_progress_print(&r.pr, "tessera finetune: stopped after step %lld (--stop-after); continue with --resume %s\n",
                          (long long)res.step, o->out);
        rc = o->profile && cli_profile_print("finetune", t->tp, step, r.prof_from, res.step);
    } else if (cli_replicas_check_params("finetune", t->tp, "at the end")) {
        rc = 1;
    } else if (!t->save(t->ctx)) {
        t->report(t->ctx, res.step, res.seconds);
        rc = o->profile && cli_profile_print("finetune", t->tp, step, r.prof_from, res.step);
    }
    free(r.order);
    return rc;
}

/* ------------------------------------------------------------------ checkpoints */

/* The options that shape the run, for its checkpoints (ts_finetune_shape). */
static ts_finetune_shape ft_shape(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len) {
    return (ts_finetune_shape){
        .task = task, .train = o->train, .dev = o->dev, .max_len = seq, .batch = o->batch, .epochs = o->epochs,
        .max_steps = o->max_steps, .lr = o->lr, .warmup = o->warmup, .wd = o->wd, .max_grad_norm = o->max_grad_norm,
        .optimizer = o->optimizer, .momentum = o->momentum, .accumulation = o->accumulation,
        .device_iterations = o->device_iterations, .seed = o->seed, .bf16 = o->bf16, .fp16 = o->fp16,
        .deterministic = o->deterministic, .threads = o->deterministic ? o->threads : 0, /* pinned, or 0 */
        .test_split = o->dev ? 0 : o->test_split,
        .split_seed = o->dev || !o->test_split ? -1 : o->split_seed >= 0 ? o->split_seed : o->seed,
        .text_col = o->text_col, .text_b_col = o->text_b_col, .label_col = o->label_col,
        .truncate = ts_truncation_names[o->truncation], /* the cut, with or without the flag */
        .doc_stride = doc_stride, .max_query_len = max_query_len, .ranks = cli_rep.size,
        .shard = cli_rep.shard_optimizer};
}

int ft_ckpt_save(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len, int64_t step,
                 const ts_program *p) {
    ts_finetune_shape shape = ft_shape(o, task, seq, doc_stride, max_query_len);
    if (ts_finetune_ckpt_save(o->out, step, p, &shape, o->keep) == TS_OK) return 0;
    fprintf(stderr, "\ntessera finetune: %s\n", ts_last_error());
    return 1;
}

int ft_ckpt_resume(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len, ts_program *p,
                   int64_t *step) {
    char path[4300];
    if (cli_ckpt_find("finetune", o->resume, path, sizeof path)) return 2;
    ts_finetune_shape shape = ft_shape(o, task, seq, doc_stride, max_query_len);
    if (ts_finetune_ckpt_load(path, p, &shape, step) != TS_OK) {
        fprintf(stderr, "tessera finetune: %s\n", ts_last_error());
        return 2;
    }
    printf("tessera finetune: resuming from %s at step %lld\n", path, (long long)*step);
    return 0;
}
