/*
 * finetune_run_cls.c — sequence classification in a fine-tuning run (ts_finetune_run, task
 * classify): BertForSequenceClassification on a labelled TSV / CSV / JSONL file of single texts
 * or, with text_b_column, text pairs ([CLS] a [SEP] b [SEP]). The rows are deduplicated, then
 * split into train and test (no text in both) unless eval_file gives the test rows; the labels
 * are the training file's, sorted. The test accuracy is measured beside the majority baseline
 * after the test epochs (ts_classify_task_new). The model directory records the labels, the row
 * length, the cut (truncate) and the pair column.
 */
#include "train/finetune_pack.h"

static ts_status out_of_memory(const ft_run *R) {
    ts_set_error(TS_ERR_NOMEM, "out of memory");
    return ft_fail(R, 0, "%s: out of memory\n", R->name);
}

/* The row length: max_len, or 128 (the model's positions when fewer, unless random_init: nothing
 * is loaded from a random start, so its position table may be as long as the rows). */
static ts_status row_length(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    int *positions = &R->cfg.max_position_embeddings;
    R->seq = o->max_len ? o->max_len : !o->random_init && *positions < 128 ? *positions : 128;
    if (o->random_init && R->seq > *positions) *positions = R->seq;
    if (R->seq > *positions)
        return ft_fail(R, 1, "%s: max_len %d exceeds the model's %d positions\n", R->name, R->seq, *positions);
    if (R->seq < (o->text_b_column ? 4 : 3))
        return ft_fail(R, 1, "%s: max_len %d cannot hold [CLS] text [SEP]%s\n", R->name, R->seq,
                       o->text_b_column ? " text_b [SEP]" : "");
    return TS_OK;
}

ts_status ft_cls_data(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    ts_model_meta_free(&R->meta); /* the pretrained model's labels, if any, are replaced */
    ts_classify_rows_opts ro = {
        .struct_size = sizeof ro, .name = R->name, .out = o->out, .out_ctx = o->out_ctx, .err = o->err,
        .err_ctx = o->err_ctx, .train = o->train_file, .dev = o->eval_file, .test_split = o->test_split,
        .text = {.text_column = o->text_column, .text_b_column = o->text_b_column, .label_column = o->label_column},
        .split_seed = (uint64_t)(o->split_seed >= 0 ? o->split_seed : o->seed)};
    ts_status st = ts_classify_rows_load(&ro, &R->rows, &R->test_rows);
    if (st) return st; /* the line is written */
    if ((st = row_length(R))) return st;
    int nl = ts_text_dataset_num_labels(R->rows);
    R->meta.max_len = R->seq; /* meta.lowercase stays the pretrained model's do_lower_case */
    R->meta.truncation = R->truncation;
    ts_truncation_apply(R->tok, R->truncation, R->seq);
    if (o->text_b_column && !(R->meta.text_b_column = strdup(o->text_b_column))) return out_of_memory(R);
    if (!(R->meta.labels = calloc((size_t)nl, sizeof *R->meta.labels))) return out_of_memory(R);
    R->meta.nlabels = nl;
    for (int i = 0; i < nl; i++)
        if (!(R->meta.labels[i] = strdup(ts_text_dataset_label_name(R->rows, i)))) return out_of_memory(R);
    R->cfg.num_labels = nl;
    R->cfg.head = TS_BERT_SEQ_CLASSIFICATION;
    return TS_OK;
}

ts_status ft_cls_task(ft_run *R, ts_epoch_task *t) { return ft_cls_task_rows(R, t, ts_text_dataset_size(R->rows)); }

ts_status ft_cls_task_rows(ft_run *R, ts_epoch_task *t, int64_t nrows) {
    const ts_finetune_run_opts *o = &R->o;
    int64_t total = ft_total_steps(R, nrows);
    ts_writef(o->out, o->out_ctx, "%s: %d labels (", R->name, R->meta.nlabels);
    for (int i = 0; i < R->meta.nlabels; i++) ts_writef(o->out, o->out_ctx, "%s%s", i ? ", " : "", R->meta.labels[i]);
    ts_writef(o->out, o->out_ctx, "), %d layers x %d hidden, %d of %d parameters new, %lld steps of %d x %d tokens, "
              "%s, lr %g\n", R->cfg.num_hidden_layers, R->cfg.hidden_size, R->nmissing, ts_program_num_params(R->tp),
              (long long)total, o->batch, R->seq, ts_optim_kind_name((ts_optim_kind)ts_optim_kind_parse(o->optimizer)),
              o->lr);
    ts_finetune_task_opts to = ft_task_opts(R);
    to.tok = R->tok, to.train_rows = R->rows, to.test_rows = R->test_rows, to.test_every = o->test_every;
    to.labels = (const char *const *)R->meta.labels;
    if (!(R->task_state = ts_classify_task_new(&to, t))) return out_of_memory(R);
    return TS_OK;
}
