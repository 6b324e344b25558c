/*
 * finetune_run.c — a whole fine-tuning run as one library call (tessera_tasks.h:
 * ts_finetune_run), what `tessera finetune` and tessera.train do between their options and
 * their result: the options read and checked (each message naming the field), the task chosen
 * (auto: from the model directory's config.json), the pretrained model opened, then the steps of
 * finetune_run_cls.c or finetune_run_qa.c (the data, the task) and finetune_run_loop.c (the
 * programs, the weights, resume, the metrics log, the epochs). Lines go to the caller's out,
 * errors to its err.
 */
#include "train/finetune_pack.h"

#include <math.h>
#include <stdarg.h>

#include "train/run_report.h"

ts_status ft_fail(const ft_run *R, int usage, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ts_status st = tr_vfail(R->o.err, R->o.err_ctx, usage, fmt, ap);
    va_end(ap);
    return st;
}

void ts_finetune_run_defaults(ts_finetune_run_opts *o) {
    if (!o) return;
    *o = (ts_finetune_run_opts){.struct_size = sizeof *o, .task = TS_FINETUNE_AUTO, .text_column = "text",
                                .label_column = "label", .test_split = 0.2, .split_seed = -1, .test_every = 1,
                                .optimizer = "adamw", .lr = 1e-4, .warmup = 0.1, .weight_decay = 0.01, .epochs = 3,
                                .batch = 32, .accumulation = 1, .device_iterations = 1, .seed = 42, .keep = 3};
}

/* The defaults of the fields left 0 or NULL that have no such value of their own. */
static void fill_defaults(ts_finetune_run_opts *o) {
    if (!o->text_column) o->text_column = "text";
    if (!o->label_column) o->label_column = "label";
    if (!o->optimizer) o->optimizer = "adamw";
    if (!o->accumulation) o->accumulation = 1;
    if (!o->device_iterations) o->device_iterations = 1;
    if (!o->keep) o->keep = 3;
}

/* Each field on its own: present, within its range. */
static ts_status check_ranges(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    const char *missing = !o->model_dir ? "model_dir" : !o->train_file ? "train_file" : !o->out_dir ? "out_dir" : NULL;
    if (missing) return ft_fail(R, 1, "%s: %s is needed (NULL)\n", R->name, missing);
    if (o->task < TS_FINETUNE_AUTO || o->task > TS_FINETUNE_QA)
        return ft_fail(R, 1, "%s: task %d is none of TS_FINETUNE_AUTO, TS_FINETUNE_CLASSIFY and TS_FINETUNE_QA\n",
                       R->name, o->task);
    const tr_int_field ints[] = {{"epochs", o->epochs, 1}, {"batch", o->batch, 1}, {"max_steps", o->max_steps, 0},
                {"accumulation", o->accumulation, 1}, {"device_iterations", o->device_iterations, 1},
                {"micro_batches", o->micro_batches, 0}, {"seed", o->seed, 0}, {"split_seed", o->split_seed, -1},
                {"test_every", o->test_every, 0}, {"save_every", o->save_every, 0}, {"keep", o->keep, 1},
                {"stop_after", o->stop_after, 0}, {"threads", o->threads, 0}, {"doc_stride", o->doc_stride, 0},
                {"max_query_len", o->max_query_len, 0}, {"max_answer_len", o->max_answer_len, 0},
                {"n_best", o->n_best, 0}, {"pack", o->pack, 0}};
    ts_status st = tr_check_ints(o->err, o->err_ctx, R->name, ints, (int)(sizeof ints / sizeof *ints));
    if (st) return st;
    if (o->max_len && o->max_len < 3)
        return ft_fail(R, 1, "%s: max_len %d: at least 3 (0: the default)\n", R->name, o->max_len);
    const tr_real_field reals[] = {{"lr", o->lr}, {"warmup", o->warmup}, {"weight_decay", o->weight_decay},
                 {"max_grad_norm", o->max_grad_norm}, {"momentum", o->momentum}, {"max_minutes", o->max_minutes},
                 {"test_split", o->test_split}};
    if ((st = tr_check_reals(o->err, o->err_ctx, R->name, reals, (int)(sizeof reals / sizeof *reals)))) return st;
    if (o->threads > ts_max_threads())
        return ft_fail(R, 1, "%s: threads %d: at most %d (4 x the %d online CPUs)\n", R->name, o->threads,
                       ts_max_threads(), ts_max_threads() / 4);
    if (o->test_split >= 1)
        return ft_fail(R, 1, "%s: test_split %g leaves nothing to train on (a fraction below 1)\n", R->name,
                       o->test_split);
    if (o->warmup > 1)
        return ft_fail(R, 1, "%s: warmup %g is a fraction of the steps, at most 1\n", R->name, o->warmup);
    return TS_OK;
}

/* The fields together: the checks both runs make (train_setup.c), and truncate. */
static ts_status check_combined(ft_run *R) {
    ts_finetune_run_opts *o = &R->o;
    tr_setup s = {.name = R->name, .out = o->out, .out_ctx = o->out_ctx, .err = o->err, .err_ctx = o->err_ctx,
                  .optimizer = o->optimizer, .devices = o->devices, .stages = o->stages, .momentum = o->momentum,
                  .max_minutes = o->max_minutes, .bf16 = o->bf16, .fp16 = o->fp16, .profile = o->profile,
                  .deterministic = o->deterministic, .micro_batches = o->micro_batches,
                  .device_iterations = o->device_iterations, .max_steps = o->max_steps, .save_every = o->save_every,
                  .stop_after = o->stop_after, .accumulation = o->accumulation, .threads = o->threads,
                  .precision = o->precision, .round_nearest = o->round_nearest};
    ts_status st = tr_setup_check(&s);
    if (st) return st;
    o->accumulation = s.accumulation, o->threads = s.threads, R->piped = s.piped;
    o->bf16 = s.bf16, o->fp16 = s.fp16; /* as precision says */
    R->truncation = o->truncate ? ts_truncation_parse(o->truncate) : TS_TRUNC_HEAD;
    if (R->truncation < 0)
        return ft_fail(R, 1, "%s: truncate %s: expected head, tail or head+tail\n", R->name, o->truncate);
    return TS_OK;
}

/* The task (auto: qa when model_dir's config.json is a question-answering model's), and the
 * options that belong to the other one refused. */
static ts_status choose_task(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    R->task = o->task;
    if (R->task == TS_FINETUNE_AUTO) {
        ts_bert_config cfg;
        char path[4200];
        ts_bert_config_default(&cfg);
        int qa = !ts_path_join(path, sizeof path, o->model_dir, "config.json") &&
                 ts_bert_config_load(path, &cfg) == TS_OK && cfg.head == TS_BERT_QUESTION_ANSWERING;
        R->task = qa ? TS_FINETUNE_QA : TS_FINETUNE_CLASSIFY;
        ts_err_clear(); /* a config that cannot be read is the model's error, said when it is opened */
    }
    if (R->task == TS_FINETUNE_QA) {
        const char *cls_only = o->text_b_column ? "text_b_column" : o->random_init ? "random_init" : NULL;
        if (cls_only) return ft_fail(R, 1, "%s: %s is for task classify, not qa\n", R->name, cls_only);
        if (o->truncate)
            return ft_fail(R, 1, "%s: truncate \"%s\" is for task classify, not qa\n", R->name, o->truncate);
        if (o->pack > 1) return ft_fail(R, 1, "%s: pack is for task classify, not qa (yet)\n", R->name);
        return TS_OK;
    }
    const char *qa_only = o->doc_stride ? "doc_stride" : o->max_query_len ? "max_query_len"
                          : o->max_answer_len ? "max_answer_len" : o->n_best ? "n_best"
                          : o->relocate_answers ? "relocate_answers" : NULL;
    if (qa_only) return ft_fail(R, 1, "%s: %s is for task qa\n", R->name, qa_only);
    return TS_OK;
}

/* model_dir's config, labels and vocabulary. */
static ts_status open_model(ft_run *R) {
    R->cfg.struct_size = sizeof R->cfg; /* filled whole */
    R->tok = ts_model_load_dir(R->o.model_dir, &R->cfg, &R->meta);
    if (!R->tok) return ft_fail(R, 1, "%s: model_dir %s: %s\n", R->name, R->o.model_dir, ts_last_error());
    return TS_OK;
}

ts_status ts_finetune_run(const ts_finetune_run_opts *o) {
    ft_run *R = calloc(1, sizeof *R);
    if (!R) return ts_set_error(TS_ERR_NOMEM, "ts_finetune_run: out of memory");
    if (TS_STRUCT_READ(&R->o, o, ts_finetune_run_opts, "ts_finetune_run")) {
        free(R);
        return TS_ERR_ARG;
    }
    fill_defaults(&R->o);
    R->name = R->o.name ? R->o.name : "ts_finetune_run";
    R->rank = R->o.comm ? ts_comm_rank(R->o.comm) : 0;
    R->ranks = R->o.comm ? ts_comm_size(R->o.comm) : 1;
    ts_status st = check_ranges(R);
    if (!st) st = check_combined(R);
    if (!st) st = choose_task(R);
    if (!st) st = open_model(R);
    if (!st) st = R->task == TS_FINETUNE_QA ? ft_qa_data(R) : ft_cls_data(R);
    ft_pack *pk = NULL; /* classify: the texts' packing (or none) and the sequences counted */
    if (!st && R->task == TS_FINETUNE_CLASSIFY) st = ft_pack_new(R, &pk);
    if (!st) st = ft_build(R);
    if (!st) st = ft_start(R);
    ts_epoch_task t;
    if (!st) st = R->task == TS_FINETUNE_QA ? ft_qa_task(R, &t) : ft_cls_task_rows(R, &t, ft_pack_rows(pk));
    if (!st && pk) st = ft_pack_wrap(pk, &t);
    if (!st) st = ft_epochs(R, &t);
    ft_free(R);
    ft_pack_free(pk);
    return st;
}
