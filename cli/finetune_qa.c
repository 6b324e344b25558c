/*
 * finetune_qa.c — `tessera finetune --task qa`: fine-tune BertForQuestionAnswering from a
 * pretrained model directory on a SQuAD v1.1 file. The encoder's weights load by name from the
 * pretrained model.safetensors; qa_outputs.* start from their initializer. Training rows are the
 * doc-stride windows (features) of every question, shuffled each epoch; the loss is the mean of
 * the start and end cross-entropies (a window that does not hold the answer points at [CLS]).
 * After each epoch the dev file (--eval), if any, is scored with the official v1.1 EM and F1.
 * Writes config.json (with the window settings), model.safetensors and vocab.txt to --out.
 */

#include "cli.h"
#include "finetune.h"
#include "qa.h"

typedef struct qa_run {
    const ft_opts *o;
    ts_bert_config cfg;
    ts_model_meta meta;
    ts_tokenizer *tok;
    ts_squad *train, *dev;
    ts_program *tp, *ip;
    int seq;
    char vocab[4200];
} qa_run;

/* Check the window options and read the files. 0, or the exit code. */
static int setup(qa_run *r) {
    const ft_opts *o = r->o;
    r->seq = o->max_len ? o->max_len : (r->cfg.max_position_embeddings < 384 ? r->cfg.max_position_embeddings : 384);
    if (r->seq > r->cfg.max_position_embeddings) {
        fprintf(stderr, "tessera finetune: --max-len %d exceeds the model's %d positions\n", r->seq,
                r->cfg.max_position_embeddings);
        return 2;
    }
    ts_squad_opts so = {.max_seq_len = r->seq,
                        .doc_stride = o->doc_stride ? o->doc_stride : ts_squad_default_stride(r->seq),
                        .max_query_len = o->max_query_len ? o->max_query_len : ts_squad_default_query(r->seq),
                        .relocate_answers = o->relocate_answers};
    if (r->seq - so.max_query_len - 3 < 1) {
        fprintf(stderr, "tessera finetune: --max-len %d leaves no room for context after --max-query-len %d, [CLS] "
                        "and two [SEP]\n", r->seq, so.max_query_len);
        return 2;
    }
    if (!(r->train = cli_qa_load("finetune", "--train", o->train, r->tok, &so, 1))) return 2;
    if (o->dev && !(r->dev = cli_qa_load("finetune", "--eval", o->dev, r->tok, &so, 1))) return 2;
    r->meta.max_len = r->seq;
    r->meta.doc_stride = so.doc_stride;
    r->meta.max_query_len = so.max_query_len;
    printf("tessera finetune: %s: %lld questions in %lld windows of %d tokens (doc stride %d, question at most %d)",
           o->train, (long long)ts_squad_num_examples(r->train), (long long)ts_squad_num_features(r->train), r->seq,
           so.doc_stride, so.max_query_len);
    if (r->dev)
        printf("; %s: %lld questions", o->dev, (long long)ts_squad_num_examples(r->dev));
    printf("\n");
    return 0;
}

/* Build the programs and load the pretrained encoder. 0, or the exit code. */
static int build(qa_run *r) {
    const ft_opts *o = r->o;
    r->cfg.head = TS_BERT_QUESTION_ANSWERING;
    if (o->bf16) r->cfg.compute_dtype = TS_BF16;
    if (o->fp16) r->cfg.compute_dtype = TS_F16;
    r->cfg.recompute = o->recompute;
    cli_train_loop loop;
    int rc = ft_loop_opts(o, &r->cfg, TS_BERT_QUESTION_ANSWERING, r->seq, &loop);
    if (rc) return rc;
    if (cli_bert_programs("finetune", &r->cfg, TS_BERT_QUESTION_ANSWERING, o->batch, r->seq, (uint64_t)o->seed,
                         o->threads, 1, (float)o->wd, (const char *[]){"loss"}, 1, &r->tp,
                         (const char *[]){"start_logits", "end_logits"}, 2, &r->ip, &loop))
        return 1;
    ft_describe(o, r->tp, NULL);
    char path[4200];
    if (!cli_path_join(path, sizeof path, o->model, "model.safetensors") ||
        !cli_path_join(r->vocab, sizeof r->vocab, o->model, "vocab.txt"))
        return cli_fail("finetune", "--model: ", 2);
    int nmissing = 0;
    if (ts_program_load(r->tp, path, cli_load_flags(0), &nmissing) != TS_OK) return cli_fail("finetune", "", 2);
    if (nmissing == ts_program_num_params(r->tp)) {
        fprintf(stderr, "tessera finetune: %s holds none of the model's parameters\n", path);
        return 2;
    }
    printf("tessera finetune: question answering, %d layers x %d hidden, %d of %d parameters new (qa_outputs)\n",
           r->cfg.num_hidden_layers, r->cfg.hidden_size, nmissing, ts_program_num_params(r->tp));
    return 0;
}

static int qa_save(void *ctx) {
    qa_run *r = ctx;
    return cli_model_dir_save("finetune", r->o->out, r->tp, &r->cfg, "BertForQuestionAnswering", r->vocab, &r->meta);
}

static int qa_checkpoint(void *ctx, int64_t step) {
    qa_run *r = ctx;
    return ft_ckpt_save(r->o, "qa", r->seq, r->meta.doc_stride, r->meta.max_query_len, step, r->tp);
}

static int train(qa_run *r) {
    const ft_opts *o = r->o;
    const int B = o->batch;
    int rc = 1;
    FILE *metrics = NULL;
    int S = (o->accumulation > 1 ? o->accumulation : 1) * (o->device_iterations > 1 ? o->device_iterations : 1);
    int64_t step = 0;
    if (o->resume && ft_ckpt_resume(o, "qa", r->seq, r->meta.doc_stride, r->meta.max_query_len, r->tp, &step)) return 2;
    if ((rc = cli_out_lock("finetune", o->out))) return rc;
    if (!(metrics = o->resume ? cli_metrics_append(o->out, "finetune") : cli_metrics_open(o->out, "finetune"))) return 1;
    ft_describe(o, r->tp, metrics);
    int64_t nf = ts_squad_num_features(r->train), total = ft_steps_per_epoch(o, nf) * o->epochs;
    if (o->max_steps && o->max_steps < total) total = o->max_steps;
    printf("tessera finetune: %lld steps of %d x %d tokens, %s, lr %g\n", (long long)total, B, r->seq,
           ts_optim_kind_name((ts_optim_kind)cli_optimizer_parse("finetune", o->optimizer)), o->lr);
    ts_finetune_task_opts to = ft_task_opts(o, r->tp, r->ip, r->seq, S, metrics);
    to.squad_train = r->train, to.squad_dev = r->dev, to.ctx = r, to.save = qa_save, to.checkpoint = qa_checkpoint;
    ts_epoch_task t;
    ts_finetune_task *task = ts_squad_task_new(&to, &t);
    if (!task) fprintf(stderr, "tessera finetune: out of memory\n");
    rc = task ? ft_train_loop(o, &t, step, metrics) : 1;
    ts_finetune_task_free(task);
    fclose(metrics);
    return rc;
}

int cli_finetune_qa(const ft_opts *o) {
    qa_run r = {.o = o};
    int rc = 2;
    if (!(r.tok = cli_model_dir_open("finetune", o->model, &r.cfg, &r.meta))) return 2;
    int lowercase = r.meta.lowercase;
    ts_model_meta_free(&r.meta); /* the pretrained model's labels, if any, are dropped */
    memset(&r.meta, 0, sizeof r.meta);
    r.meta.lowercase = lowercase;
    if (!(rc = setup(&r)) && !(rc = build(&r))) rc = train(&r);
    ts_program_free(r.tp);
    ts_program_free(r.ip);
    ts_squad_free(r.train);
    ts_squad_free(r.dev);
    ts_model_meta_free(&r.meta);
    ts_tokenizer_free(r.tok);
    return rc;
}
