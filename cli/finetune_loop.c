/*
 * finetune_loop.c — the training loop `tessera finetune` runs for both of its tasks (see
 * ft_train_loop in finetune.h) with its flags: the pipeline, the options of ts_train_epochs, and
 * the full-state checkpoints.
 *
 * The loop itself is the library's (ts_train_epochs); here are its options from the flags.
 */
#include <unistd.h>

#include "cli.h"
#include "finetune.h"
#include "pipeline_opts.h"
#include "train_common.h"

static ts_stage_plan pipe_plan; /* --devices: one run per process */
static const ts_stage_plan *run_pipe; /* &pipe_plan when the run is a pipeline, else NULL */

int ft_loop_opts(const ft_opts *o, const ts_bert_config *cfg, ts_bert_head head, int seq, cli_train_loop *loop) {
    int n = o->accumulation > 1 ? o->accumulation : 1, k = o->device_iterations > 1 ? o->device_iterations : 1;
    *loop = (cli_train_loop){.accumulation = n,
                            .device_iterations = n * k, /* program runs per call: micro-batches */
                            .max_grad_norm = (float)o->max_grad_norm,
                            .optimizer = o->optimizer,
                            .momentum = (float)o->momentum,
                            .profile = o->profile};
    if (!o->devices || (loop->device = cli_pipe_one_device(o->devices, o->stages))) return 0;
    if (cli_pipe_parse("finetune", o->devices, o->stages, cfg->num_hidden_layers, &pipe_plan)) return 2;
    int rc = pipe_plan.automatic ? cli_pipe_measure("finetune", cfg, head, o->batch, seq, n, &pipe_plan) : 0;
    if (!rc) loop->pipe = run_pipe = &pipe_plan;
    return rc;
}

void ft_describe(const ft_opts *o, ts_program *tp, FILE *metrics) {
    if (run_pipe)
        ts_stage_plan_describe(run_pipe, tp, o->accumulation, "tessera finetune", ts_write_stdio,
                               metrics ? metrics : stdout, metrics != NULL);
}

int64_t ft_steps_per_epoch(const ft_opts *o, int64_t n) {
    return ts_epoch_steps(n, o->batch, o->accumulation, o->device_iterations, cli_rep.size);
}

int ft_train_loop(const ft_opts *o, const ts_epoch_task *t, int64_t step, FILE *metrics) {
    ts_epochs_opts eo = {
        .struct_size = sizeof eo, .name = "tessera finetune", .out = ts_write_stdio, .out_ctx = stdout,
        .tty = isatty(fileno(stdout)), .err = cli_write_err, .err_ctx = stderr, .metrics = ts_write_stdio,
        .metrics_ctx = metrics, .batch = o->batch, .accumulation = o->accumulation,
        .device_iterations = o->device_iterations, .epochs = o->epochs, .max_steps = o->max_steps, .seed = o->seed,
        .lr = o->lr, .warmup = o->warmup, .max_minutes = o->max_minutes, .fp16 = o->fp16,
        .save_every = o->save_every, .stop_after = o->stop_after, .profile = o->profile, .resumed = o->resume != NULL,
        .out_dir = o->out, .pipe = run_pipe, .comm = cli_rep.comm,
        .shard = cli_rep.shard_optimizer};
    ts_status st = ts_train_epochs(&eo, t, step);
    return st == TS_OK ? 0 : st == TS_ERR_ARG ? 2 : 1;
}

ts_finetune_task_opts ft_task_opts(const ft_opts *o, ts_program *tp, ts_program *ip, int seq, int slices,
                                   FILE *metrics) {
    return (ts_finetune_task_opts){
        .struct_size = sizeof(ts_finetune_task_opts), .name = "tessera finetune", .out = ts_write_stdio,
        .out_ctx = stdout, .err = cli_write_err, .err_ctx = stderr, .metrics = ts_write_stdio, .metrics_ctx = metrics,
        .train = tp, .infer = ip, .batch = o->batch, .seq = seq, .slices = slices, .out_dir = o->out,
        .n_best = o->n_best ? o->n_best : TS_SQUAD_N_BEST,
        .max_answer_len = o->max_answer_len ? o->max_answer_len : TS_SQUAD_MAX_ANSWER_LEN};
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
    fprintf(stderr, "\ntessera finetune: %s\n", cli_error());
    return 1;
}

int ft_ckpt_resume(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len, ts_program *p,
                   int64_t *step) {
    char path[4300];
    if (cli_ckpt_find("finetune", o->resume, path, sizeof path)) return 2;
    ts_finetune_shape shape = ft_shape(o, task, seq, doc_stride, max_query_len);
    if (ts_finetune_ckpt_load(path, p, &shape, step) != TS_OK) return cli_fail("finetune", "", 2);
    printf("tessera finetune: resuming from %s at step %lld\n", path, (long long)*step);
    return 0;
}
