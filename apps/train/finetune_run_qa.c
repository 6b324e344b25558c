/*
 * finetune_run_qa.c — question answering in a fine-tuning run (ts_finetune_run, task qa):
 * BertForQuestionAnswering on a SQuAD v1.1 file. The encoder's weights load by name from the
 * pretrained model; qa_outputs.* start from their initializer. Training rows are the doc-stride
 * windows of every question, shuffled each epoch; the loss is the mean of the start and end
 * cross-entropies (a window without the answer points at [CLS]). After each epoch eval_file, if
 * any, is scored with the official v1.1 EM and F1 (ts_squad_task_new). The model directory
 * records the window settings.
 */
#include "train/finetune_run.h"

ts_status ft_qa_data(ft_run *R) {
    const ts_finetune_run_opts *o = &R->o;
    int lowercase = R->meta.lowercase, positions = R->cfg.max_position_embeddings;
    ts_model_meta_free(&R->meta); /* the pretrained model's labels, if any, are dropped */
    memset(&R->meta, 0, sizeof R->meta);
    R->meta.lowercase = lowercase;
    R->seq = o->max_len ? o->max_len : positions < 384 ? positions : 384;
    if (R->seq > positions)
        return ft_fail(R, 1, "%s: max_len %d exceeds the model's %d positions\n", R->name, R->seq, positions);
    ts_squad_opts so = {.struct_size = sizeof so, .max_seq_len = R->seq,
                        .doc_stride = o->doc_stride ? o->doc_stride : ts_squad_default_stride(R->seq),
                        .max_query_len = o->max_query_len ? o->max_query_len : ts_squad_default_query(R->seq),
                        .relocate_answers = o->relocate_answers};
    if (R->seq - so.max_query_len - 3 < 1)
        return ft_fail(R, 1, "%s: max_len %d leaves no room for context after max_query_len %d, [CLS] and two [SEP]\n",
                       R->name, R->seq, so.max_query_len);
    /* the loader writes its error line, naming the field the file came from */
    R->squad = ts_squad_load_checked(o->train_file, R->tok, &so, 1, R->name, "train_file", o->err, o->err_ctx);
    if (!R->squad) return TS_ERR_ARG;
    if (o->eval_file &&
        !(R->squad_dev = ts_squad_load_checked(o->eval_file, R->tok, &so, 1, R->name, "eval_file", o->err, o->err_ctx)))
        return TS_ERR_ARG;
    R->meta.max_len = R->seq;
    R->meta.doc_stride = so.doc_stride;
    R->meta.max_query_len = so.max_query_len;
    ts_writef(o->out, o->out_ctx, "%s: %s: %lld questions in %lld windows of %d tokens (doc stride %d, question at "
              "most %d)", R->name, o->train_file, (long long)ts_squad_num_examples(R->squad),
              (long long)ts_squad_num_features(R->squad), R->seq, so.doc_stride, so.max_query_len);
    if (R->squad_dev)
        ts_writef(o->out, o->out_ctx, "; %s: %lld questions", o->eval_file,
                  (long long)ts_squad_num_examples(R->squad_dev));
    ts_writef(o->out, o->out_ctx, "\n");
    R->cfg.head = TS_BERT_QUESTION_ANSWERING;
    return TS_OK;
}

ts_status ft_qa_task(ft_run *R, ts_epoch_task *t) {
    const ts_finetune_run_opts *o = &R->o;
    int64_t total = ft_total_steps(R, ts_squad_num_features(R->squad));
    ts_writef(o->out, o->out_ctx, "%s: %lld steps of %d x %d tokens, %s, lr %g\n", R->name, (long long)total, o->batch,
              R->seq, ts_optim_kind_name((ts_optim_kind)ts_optim_kind_parse(o->optimizer)), o->lr);
    ts_finetune_task_opts to = ft_task_opts(R);
    to.squad_train = R->squad, to.squad_dev = R->squad_dev;
    if (!(R->task_state = ts_squad_task_new(&to, t))) {
        ts_set_error(TS_ERR_NOMEM, "out of memory");
        return ft_fail(R, 0, "%s: out of memory\n", R->name);
    }
    return TS_OK;
}
