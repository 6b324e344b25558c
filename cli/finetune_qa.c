/*
 * finetune_qa.c — `tessera finetune --task qa`: fine-tune BertForQuestionAnswering from a
 * pretrained model directory on a SQuAD v1.1 file. The encoder's weights load by name from the
 * pretrained model.safetensors; qa_outputs.* start from their initializer. Training rows are the
 * doc-stride windows (features) of every question, shuffled each epoch; the loss is the mean of
 * the start and end cross-entropies (a window that does not hold the answer points at [CLS]).
 * After each epoch the dev file (--dev), if any, is scored with the official v1.1 EM and F1.
 * Writes config.json (with the window settings), model.safetensors and vocab.txt to --out.
 */
#include <math.h>

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
    int seq, n_best, max_ans;
    char vocab[4200];
    ts_batch_buf bb;        /* S slices of [B, seq] */
    ts_tensor *sp, *ep;     /* start / end positions, [S, B] ([B] when S == 1) */
    double em, f1;          /* the last dev scores (-1: none) */
    FILE *metrics;          /* --out's metrics.jsonl */
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
    r->n_best = o->n_best ? o->n_best : TS_SQUAD_N_BEST;
    r->max_ans = o->max_answer_len ? o->max_answer_len : TS_SQUAD_MAX_ANSWER_LEN;
    if (!(r->train = cli_qa_load("finetune", "--train", o->train, r->tok, &so, 1))) return 2;
    if (o->dev && !(r->dev = cli_qa_load("finetune", "--dev", o->dev, r->tok, &so, 1))) return 2;
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
    snprintf(path, sizeof path, "%s/model.safetensors", o->model);
    snprintf(r->vocab, sizeof r->vocab, "%s/vocab.txt", o->model);
    int nmissing = 0;
    if (ts_program_load(r->tp, path, cli_load_flags(0), &nmissing) != TS_OK) {
        fprintf(stderr, "tessera finetune: %s\n", ts_last_error());
        return 2;
    }
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

/* Windows rows[0..m) into slice k, with their answer positions (a window without the answer, or
 * a padding row, points past the end: ignored by the loss, as run_squad's clamped positions). */
static int qa_fill(void *ctx, const int64_t *rows, int m, int k) {
    qa_run *r = ctx;
    int B = r->o->batch;
    ts_batch_buf_slice(&r->bb, k);
    ts_batch b = r->bb.b;
    int32_t *sp = (int32_t *)ts_tensor_data(r->sp) + (size_t)k * B, *ep = (int32_t *)ts_tensor_data(r->ep) + (size_t)k * B;
    b.start_positions = sp;
    b.end_positions = ep;
    if (ts_squad_batch(r->train, rows, m, B, &b) != TS_OK) return -1;
    for (int i = 0; i < B; i++) {
        if (sp[i] == TS_IGNORE_INDEX) sp[i] = r->seq;
        if (ep[i] == TS_IGNORE_INDEX) ep[i] = r->seq;
    }
    return 0;
}

static int qa_feed(void *ctx) {
    qa_run *r = ctx;
    if (ts_batch_buf_feed(&r->bb, r->tp, 0) || ts_program_feed(r->tp, "start_positions", r->sp) ||
        ts_program_feed(r->tp, "end_positions", r->ep))
        return -1;
    return 0;
}

static int qa_epoch_end(void *ctx, int epoch, int64_t step, int last, double train_loss, ts_progress *pr) {
    qa_run *r = ctx;
    if (!r->dev) {
        ts_progress_print(pr, "epoch %d: step %lld, train loss %.4f, %.0f s\n", epoch + 1, (long long)step, train_loss,
                          ts_seconds() - pr->t0);
        return 0;
    }
    if (ts_program_copy_params(r->ip, r->tp) < 0) {
        fprintf(stderr, "tessera finetune: %s\n", ts_last_error());
        return 1;
    }
    if (cli_qa_score("finetune", r->ip, r->dev, r->o->batch, r->seq, r->n_best, r->max_ans, &r->em, &r->f1)) return 1;
    ts_progress_print(pr, "epoch %d: step %lld, train loss %.4f, dev EM %.2f, F1 %.2f, %.0f s\n", epoch + 1,
                      (long long)step, train_loss, r->em, r->f1, ts_seconds() - pr->t0);
    ts_metrics_write(ts_write_stdio, r->metrics, "\"step\": %lld, \"epoch\": %d, \"dev_exact_match\": %.4f, \"dev_f1\": %.4f",
                     (long long)step, epoch + 1, r->em, r->f1);
    return 0;
}

static void qa_report(void *ctx, int64_t step, double seconds) {
    qa_run *r = ctx;
    if (r->em >= 0)
        printf("tessera finetune: dev EM %.2f, F1 %.2f; %lld steps in %.0f s; wrote %s\n", r->em, r->f1,
               (long long)step, seconds, r->o->out);
    else
        printf("tessera finetune: %lld steps in %.0f s; wrote %s\n", (long long)step, seconds, r->o->out);
}

static int train(qa_run *r) {
    const ft_opts *o = r->o;
    const int B = o->batch;
    int rc = 1;
    FILE *metrics = NULL;
    int S = (o->accumulation > 1 ? o->accumulation : 1) * (o->device_iterations > 1 ? o->device_iterations : 1);
    const int64_t sb[2] = {S, B};
    r->sp = ts_tensor_new(TS_I32, S > 1 ? 2 : 1, S > 1 ? sb : sb + 1);
    r->ep = ts_tensor_new(TS_I32, S > 1 ? 2 : 1, S > 1 ? sb : sb + 1);
    if (!r->sp || !r->ep || !ts_batch_buf_init_slices(&r->bb, B, r->seq, 0, S, 0)) {
        fprintf(stderr, "tessera finetune: out of memory\n");
        return 1;
    }
    int64_t step = 0;
    if (o->resume && ft_ckpt_resume(o, "qa", r->seq, r->meta.doc_stride, r->meta.max_query_len, r->tp, &step)) return 2;
    if ((rc = cli_out_lock("finetune", o->out))) return rc;
    if (!(metrics = o->resume ? cli_metrics_append(o->out, "finetune") : cli_metrics_open(o->out, "finetune"))) return 1;
    ft_describe(o, r->tp, metrics);
    int64_t nf = ts_squad_num_features(r->train), total = ft_steps_per_epoch(o, nf) * o->epochs;
    if (o->max_steps && o->max_steps < total) total = o->max_steps;
    printf("tessera finetune: %lld steps of %d x %d tokens, %s, lr %g\n", (long long)total, B, r->seq,
           ts_optim_kind_name((ts_optim_kind)cli_optimizer_parse("finetune", o->optimizer)), o->lr);
    r->metrics = metrics;
    ts_epoch_task t = {.ctx = r, .nrows = nf, .train = r->tp, .fill = qa_fill, .feed = qa_feed, .epoch_end = qa_epoch_end,
                 .save = qa_save, .checkpoint = qa_checkpoint, .report = qa_report};
    rc = ft_train_loop(o, &t, step, metrics);
    fclose(metrics);
    return rc;
}

int cli_finetune_qa(const ft_opts *o) {
    qa_run r = {.o = o, .em = -1, .f1 = -1};
    int rc = 2;
    if (!(r.tok = cli_model_dir_open("finetune", o->model, &r.cfg, &r.meta))) return 2;
    int lowercase = r.meta.lowercase;
    ts_model_meta_free(&r.meta); /* the pretrained model's labels, if any, are dropped */
    memset(&r.meta, 0, sizeof r.meta);
    r.meta.lowercase = lowercase;
    if (!(rc = setup(&r)) && !(rc = build(&r))) rc = train(&r);
    ts_batch_buf_free(&r.bb);
    ts_tensor_free(r.sp);
    ts_tensor_free(r.ep);
    ts_program_free(r.tp);
    ts_program_free(r.ip);
    ts_squad_free(r.train);
    ts_squad_free(r.dev);
    ts_model_meta_free(&r.meta);
    ts_tokenizer_free(r.tok);
    return rc;
}
