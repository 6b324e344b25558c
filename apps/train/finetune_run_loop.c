/*
 * finetune_run_loop.c — the steps of a fine-tuning run (ts_finetune_run) that both tasks take:
 * the pipeline placed (measured for stages auto), the training and inference programs built, the
 * pretrained weights loaded, resume from a full-state checkpoint, the output directory and its
 * metrics log (every row also to the caller's metrics sink), the model directory and checkpoints
 * written, and the epochs (ts_train_epochs) run.
 */
#include "train/finetune_run.h"

#include <errno.h>

/* A metrics row: to out_dir/metrics.jsonl and to the caller's sink. */
static void metrics_tee(void *ctx, const char *text, size_t len) {
    ft_run *R = ctx;
    if (R->metrics_file) ts_write_stdio(R->metrics_file, text, len);
    if (R->o.metrics) R->o.metrics(R->o.metrics_ctx, text, len);
}

/* The metrics sink of the run: rank 0's (the other replicas' rows go nowhere). */
static ts_write_fn metrics_fn(const ft_run *R) { return R->rank == 0 ? metrics_tee : NULL; }

/* The settings the setup helpers read (train_setup.h). */
static tr_setup setup_of(const ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    return (tr_setup){.name = R->name, .out = o->out, .out_ctx = o->out_ctx, .err = o->err, .err_ctx = o->err_ctx,
                      .devices = o->devices, .stages = o->stages, .accumulation = o->accumulation,
                      .device_iterations = o->device_iterations, .precision = o->precision,
                      .round_nearest = o->round_nearest};
}

/* The training program (fetching "loss") and the inference program (the task's outputs). */
static ts_status programs(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    static const char *const train_f[] = {"loss"}, *const cls_f[] = {"logits"};
    static const char *const qa_f[] = {"start_logits", "end_logits"};
    int qa = R->task == TS_FINETUNE_QA;
    ts_bert_train_opts bo = {
        .struct_size = sizeof bo, .cfg = &R->cfg, .head = R->cfg.head, .batch = o->batch, .seq = R->seq,
        .seed = (uint64_t)o->seed, .threads = o->threads, .infer_threads = o->threads,
        .optimizer = (ts_optim_kind)ts_optim_kind_parse(o->optimizer), .weight_decay = (float)o->weight_decay,
        .max_grad_norm = (float)o->max_grad_norm, .momentum = (float)o->momentum, .accumulation = o->accumulation,
        .steps_per_call = o->device_iterations, .memory_limit = o->memory_limit, .train_fetches = train_f,
        .ntrain_fetches = 1, .infer_fetches = qa ? qa_f : cls_f, .ninfer_fetches = qa ? 2 : 1,
        .comm = R->ranks > 1 ? o->comm : NULL, .shard_state = o->shard, .profile = o->profile, .device = o->devices};
    char sizes_from[4300];
    snprintf(sizes_from, sizeof sizes_from, "%s/config.json", o->model_dir);
    tr_setup s = setup_of(R);
    if (R->cfg.max_sequences_per_pack <= 1)
        return tr_setup_programs(&s, &bo, R->piped ? &R->pipe : NULL, sizes_from, &R->tp, &R->ip);
    /* packed: the training program on packed rows, the evaluation one on a text a row */
    ts_status st = tr_setup_programs(&s, &bo, R->piped ? &R->pipe : NULL, sizes_from, &R->tp, NULL);
    ts_bert_config one = R->cfg;
    one.max_sequences_per_pack = 0;
    bo.cfg = &one;
    return st ? st : tr_setup_programs(&s, &bo, R->piped ? &R->pipe : NULL, sizes_from, NULL, &R->ip);
}

/* model_dir's weights into the training program (not with random_init); the head's are new. */
static ts_status load_weights(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    char path[4200];
    if (ts_path_join(path, sizeof path, o->model_dir, "model.safetensors") ||
        ts_path_join(R->vocab, sizeof R->vocab, o->model_dir, "vocab.txt"))
        return ft_fail(R, 1, "%s: model_dir: %s\n", R->name, ts_last_error());
    int nparams = ts_program_num_params(R->tp);
    R->nmissing = nparams;
    if (o->random_init) {
        ts_writef(o->out, o->out_ctx, "%s: random_init: %s's shape and vocabulary, no weights loaded\n", R->name,
                  o->model_dir);
        return TS_OK;
    }
    if (ts_program_load(R->tp, path, o->load_flags, &R->nmissing) != TS_OK)
        return ft_fail(R, 1, "%s: %s\n", R->name, ts_last_error());
    if (R->nmissing == nparams) return ft_fail(R, 1, "%s: %s holds none of the model's parameters\n", R->name, path);
    if (R->task == TS_FINETUNE_QA)
        ts_writef(o->out, o->out_ctx, "%s: question answering, %d layers x %d hidden, %d of %d parameters new "
                  "(qa_outputs)\n", R->name, R->cfg.num_hidden_layers, R->cfg.hidden_size, R->nmissing, nparams);
    return TS_OK;
}

ts_status ft_build(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    if (o->bf16) R->cfg.compute_dtype = TS_BF16;
    if (o->fp16) R->cfg.compute_dtype = TS_F16;
    R->cfg.recompute = o->recompute;
    tr_setup s = setup_of(R);
    ts_status st = R->piped ? tr_setup_place(&s, &R->cfg, o->batch, R->seq, o->comm, &R->pipe) : TS_OK;
    if (!st) st = programs(R);
    if (st) return st;
    if (R->piped) ts_stage_plan_describe(&R->pipe, R->tp, o->accumulation, R->name, o->out, o->out_ctx, 0);
    return load_weights(R);
}

/* ------------------------------------------------------------------ checkpoints and resume */

/* The options that shape the run, for its checkpoints (ts_finetune_shape). */
static ts_finetune_shape shape_of(const ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    int qa = R->task == TS_FINETUNE_QA;
    return (ts_finetune_shape){
        .task = qa ? "qa" : "classify", .train = o->train_file, .dev = o->eval_file, .max_len = R->seq,
        .batch = o->batch, .epochs = o->epochs, .max_steps = o->max_steps, .lr = o->lr, .warmup = o->warmup,
        .wd = o->weight_decay, .max_grad_norm = o->max_grad_norm, .optimizer = o->optimizer, .momentum = o->momentum,
        .accumulation = o->accumulation, .device_iterations = o->device_iterations, .seed = o->seed, .bf16 = o->bf16,
        .fp16 = o->fp16, .deterministic = o->deterministic, .threads = o->deterministic ? o->threads : 0,
        .test_split = o->eval_file ? 0 : o->test_split,
        .split_seed = o->eval_file || !o->test_split ? -1 : o->split_seed >= 0 ? o->split_seed : o->seed,
        .text_col = o->text_column, .text_b_col = o->text_b_column, .label_col = o->label_column,
        .truncate = ts_truncation_names[R->truncation], .doc_stride = qa ? R->meta.doc_stride : 0,
        .max_query_len = qa ? R->meta.max_query_len : 0, .ranks = R->ranks, .shard = o->shard,
        .pack = R->cfg.max_sequences_per_pack > 1 ? R->cfg.max_sequences_per_pack : 0,
        .weights16 = o->precision && strstr(o->precision, "-sr") != NULL};
}

static int save_model(void *ctx) {
    ft_run *R = ctx;
    if (R->rank > 0 || ts_model_save_dir(R->o.out_dir, R->tp, &R->cfg, R->vocab, &R->meta) == TS_OK) return 0;
    ts_writef(R->o.err, R->o.err_ctx, "%s: %s\n", R->name, ts_last_error());
    return 1;
}

static int save_checkpoint(void *ctx, int64_t step) {
    ft_run *R = ctx;
    ts_finetune_shape shape = shape_of(R);
    if (ts_finetune_ckpt_save(R->o.out_dir, step, R->tp, &shape, R->o.keep) == TS_OK) return 0;
    ts_writef(R->o.err, R->o.err_ctx, "\n%s: %s\n", R->name, ts_last_error());
    return 1;
}

/* resume: the newest valid checkpoint, checked against this run's shape and restored. */
static ts_status resume(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    char path[4300];
    ts_status st = ts_train_checkpoint_find_on(o->comm, o->resume, path, sizeof path);
    if (st == TS_ERR_COMM) return ft_fail(R, 0, "%s: resume: %s\n", R->name, ts_last_error());
    if (st) return R->rank == 0 ? ft_fail(R, 1, "%s: resume: %s\n", R->name, ts_last_error()) : TS_ERR_ARG;
    ts_finetune_shape shape = shape_of(R);
    if (ts_finetune_ckpt_load(path, R->tp, &shape, &R->step) != TS_OK)
        return ft_fail(R, 1, "%s: %s\n", R->name, ts_last_error());
    ts_writef(o->out, o->out_ctx, "%s: resuming from %s at step %lld\n", R->name, path, (long long)R->step);
    return TS_OK;
}

ts_status ft_start(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    ts_status st;
    if (o->resume && (st = resume(R))) return st;
    if (ts_make_dirs(o->out_dir)) return ft_fail(R, 0, "%s: %s\n", R->name, ts_last_error());
    char path[4300];
    if (ts_path_join(path, sizeof path, o->out_dir, "metrics.jsonl"))
        return ft_fail(R, 1, "%s: out_dir: %s\n", R->name, ts_last_error());
    if (R->rank == 0 && !(R->metrics_file = fopen(path, o->resume ? "a" : "w"))) { /* a resumed run continues it */
        ts_set_error(TS_ERR_IO, "%s: %s", path, strerror(errno));
        return ft_fail(R, 0, "%s: %s\n", R->name, ts_last_error());
    }
    if (R->piped) ts_stage_plan_describe(&R->pipe, R->tp, o->accumulation, R->name, metrics_fn(R), R, 1);
    return TS_OK;
}

/* ------------------------------------------------------------------ the epochs */

ts_finetune_task_opts ft_task_opts(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    return (ts_finetune_task_opts){
        .struct_size = sizeof(ts_finetune_task_opts), .name = R->name, .out = o->out, .out_ctx = o->out_ctx,
        .err = o->err, .err_ctx = o->err_ctx, .metrics = metrics_fn(R), .metrics_ctx = R, .train = R->tp,
        .infer = R->ip, .batch = o->batch, .seq = R->seq, .slices = o->accumulation * o->device_iterations,
        .out_dir = o->out_dir, .n_best = o->n_best ? o->n_best : TS_SQUAD_N_BEST,
        .max_answer_len = o->max_answer_len ? o->max_answer_len : TS_SQUAD_MAX_ANSWER_LEN, .ctx = R,
        .save = save_model, .checkpoint = save_checkpoint};
}

int64_t ft_total_steps(const ft_run *R, int64_t n) {
    const ts_finetune_run_opts *o = &R->o;
    int64_t total = ts_epoch_steps(n, o->batch, o->accumulation, o->device_iterations, R->ranks) * o->epochs;
    return o->max_steps && o->max_steps < total ? o->max_steps : total;
}

ts_status ft_epochs(ft_run *R, const ts_epoch_task *t) {
    const ts_finetune_run_opts *o = &R->o;
    ts_epochs_opts eo = {
        .struct_size = sizeof eo, .name = R->name, .out = o->out, .out_ctx = o->out_ctx, .tty = o->tty, .err = o->err,
        .err_ctx = o->err_ctx, .metrics = metrics_fn(R), .metrics_ctx = R, .batch = o->batch,
        .accumulation = o->accumulation, .device_iterations = o->device_iterations, .epochs = o->epochs,
        .max_steps = o->max_steps, .seed = o->seed, .lr = o->lr, .warmup = o->warmup, .max_minutes = o->max_minutes,
        .fp16 = o->fp16, .save_every = o->save_every, .stop_after = o->stop_after, .profile = o->profile,
        .resumed = o->resume != NULL, .out_dir = o->out_dir, .pipe = R->piped ? &R->pipe : NULL, .comm = o->comm,
        .shard = o->shard};
    return ts_train_epochs(&eo, t, R->step);
}

void ft_free(ft_run *R) {
    ts_finetune_task_free(R->task_state);
    ts_program_free(R->tp);
    ts_program_free(R->ip);
    ts_text_dataset_free(R->rows);
    ts_text_dataset_free(R->test_rows);
    ts_squad_free(R->squad);
    ts_squad_free(R->squad_dev);
    ts_model_meta_free(&R->meta);
    ts_tokenizer_free(R->tok);
    if (R->metrics_file) fclose(R->metrics_file);
    free(R);
}
