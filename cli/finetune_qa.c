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
                        .doc_stride = o->doc_stride ? o->doc_stride : ts_qa_default_stride(r->seq),
                        .max_query_len = o->max_query_len ? o->max_query_len : ts_qa_default_query(r->seq)};
    if (r->seq - so.max_query_len - 3 < 1) {
        fprintf(stderr, "tessera finetune: --max-len %d leaves no room for context after --max-query-len %d, [CLS] "
                        "and two [SEP]\n", r->seq, so.max_query_len);
        return 2;
    }
    r->n_best = o->n_best ? o->n_best : TS_QA_N_BEST;
    r->max_ans = o->max_answer_len ? o->max_answer_len : TS_QA_MAX_ANSWER_LEN;
    if (!(r->train = ts_qa_load("finetune", "--train", o->train, r->tok, &so, 1))) return 2;
    if (o->dev && !(r->dev = ts_qa_load("finetune", "--dev", o->dev, r->tok, &so, 1))) return 2;
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
    if (ts_bert_programs("finetune", &r->cfg, TS_BERT_QUESTION_ANSWERING, o->batch, r->seq, (uint64_t)o->seed,
                         o->threads, 1, (float)o->wd, (const char *[]){"loss"}, 1, &r->tp,
                         (const char *[]){"start_logits", "end_logits"}, 2, &r->ip,
                         &(ts_train_loop){.max_grad_norm = (float)o->max_grad_norm}))
        return 1;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", o->model);
    snprintf(r->vocab, sizeof r->vocab, "%s/vocab.txt", o->model);
    int nmissing = 0;
    if (ts_program_load(r->tp, path, 0, &nmissing) != TS_OK) {
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

static int save(qa_run *r) {
    return ts_model_dir_save("finetune", r->o->out, r->tp, &r->cfg, "BertForQuestionAnswering", r->vocab, &r->meta);
}

static int checkpoint(qa_run *r, int64_t step) {
    return ft_ckpt_save(r->o, "qa", r->seq, r->meta.doc_stride, r->meta.max_query_len, step, r->tp);
}

/* Dev EM / F1 with the current weights; 0 or 1. */
static int score_dev(qa_run *r, double *em, double *f1) {
    if (ts_program_copy_params(r->ip, r->tp) < 0) {
        fprintf(stderr, "tessera finetune: %s\n", ts_last_error());
        return 1;
    }
    return ts_qa_score("finetune", r->ip, r->dev, r->o->batch, r->seq, r->n_best, r->max_ans, em, f1);
}

static int train(qa_run *r) {
    const ft_opts *o = r->o;
    const int B = o->batch;
    int rc = 1;
    FILE *metrics = NULL;
    int64_t nf = ts_squad_num_features(r->train);
    int64_t *order = malloc((size_t)nf * sizeof *order);
    ts_tensor *lr_t = ts_tensor_new(TS_F32, 0, NULL), *sp = ts_tensor_new(TS_I32, 1, (int64_t[]){B}),
              *ep = ts_tensor_new(TS_I32, 1, (int64_t[]){B});
    ts_batch_buf bb;
    int have_bb = ts_batch_buf_init(&bb, B, r->seq, 0);
    if (!order || !lr_t || !sp || !ep || !have_bb) {
        fprintf(stderr, "tessera finetune: out of memory\n");
        goto done;
    }
    int64_t step = 0;
    if (o->resume && ft_ckpt_resume(o, "qa", r->seq, r->meta.doc_stride, r->meta.max_query_len, r->tp, &step)) {
        rc = 2;
        goto done;
    }
    if (ts_make_dir("finetune", o->out) ||
        !(metrics = o->resume ? ts_metrics_append(o->out, "finetune") : ts_metrics_open(o->out, "finetune")))
        goto done;
    int64_t per_epoch = (nf + B - 1) / B, total = per_epoch * o->epochs;
    if (o->max_steps && o->max_steps < total) total = o->max_steps;
    int64_t warmup = (int64_t)llround(o->warmup * (double)total);
    printf("tessera finetune: %lld steps of %d x %d tokens, lr %g\n", (long long)total, B, r->seq, o->lr);
    ts_progress pr;
    double max_s = o->max_minutes * 60, loss_sum = 0, em = -1, f1 = -1;
    ts_progress_init(&pr, total, max_s);
    int64_t loss_n = 0;
    int out_of_time = 0;
    double t_last = ts_now();
    /* a resumed run starts where step says: epoch e's order is a function of (seed, e) */
    const int epoch0 = (int)(step / per_epoch);
    const int64_t i0 = step % per_epoch * B;
    for (int epoch = epoch0; step < total && !out_of_time; epoch++) {
        ts_permutation((uint64_t)o->seed + 1000003u * (uint64_t)epoch, nf, order);
        for (int64_t i = epoch == epoch0 ? i0 : 0; i < nf && step < total; i += B) {
            if (max_s > 0 && ts_now() - pr.t0 >= max_s) {
                out_of_time = 1;
                break;
            }
            int m = (int)(nf - i < B ? nf - i : B);
            float lr = ts_lr_at((float)o->lr, step, warmup, total);
            if (ts_qa_feed(r->tp, r->train, order + i, m, B, &bb, sp, ep, 1)) {
                fprintf(stderr, "\ntessera finetune: step %lld: %s\n", (long long)step + 1, ts_last_error());
                goto done;
            }
            if (ft_train_step(o, r->tp, lr_t, lr, m, epoch, &step, &loss_sum, &loss_n, &t_last, &pr, metrics))
                goto done;
            int saving = o->save_every && step % o->save_every == 0 && step < total;
            if (saving && (save(r) || checkpoint(r, step))) goto done;
            if (o->stop_after && step == o->stop_after && step < total) {
                if (!saving && checkpoint(r, step)) goto done;
                ts_progress_print(&pr, "tessera finetune: stopped after step %lld (--stop-after); continue with "
                                       "--resume %s\n", (long long)step, o->out);
                rc = 0;
                goto done;
            }
        }
        if (loss_n == 0) break;
        if (out_of_time) ts_progress_print(&pr, "--max-minutes %g reached in epoch %d\n", o->max_minutes, epoch + 1);
        double mean = loss_sum / (double)loss_n;
        if (r->dev) {
            if (score_dev(r, &em, &f1)) goto done;
            ts_progress_print(&pr, "epoch %d: step %lld, train loss %.4f, dev EM %.2f, F1 %.2f, %.0f s\n", epoch + 1,
                              (long long)step, mean, em, f1, ts_now() - pr.t0);
            ts_metrics_write(metrics, "\"step\": %lld, \"epoch\": %d, \"dev_exact_match\": %.4f, \"dev_f1\": %.4f",
                             (long long)step, epoch + 1, em, f1);
        } else {
            ts_progress_print(&pr, "epoch %d: step %lld, train loss %.4f, %.0f s\n", epoch + 1, (long long)step, mean,
                              ts_now() - pr.t0);
        }
        loss_sum = 0, loss_n = 0;
    }
    if (save(r)) goto done;
    if (em >= 0)
        printf("tessera finetune: dev EM %.2f, F1 %.2f; %lld steps in %.0f s; wrote %s\n", em, f1, (long long)step,
               ts_now() - pr.t0, o->out);
    else
        printf("tessera finetune: %lld steps in %.0f s; wrote %s\n", (long long)step, ts_now() - pr.t0, o->out);
    rc = 0;
done:
    if (metrics) fclose(metrics);
    if (have_bb) ts_batch_buf_free(&bb);
    ts_tensor_free(lr_t);
    ts_tensor_free(sp);
    ts_tensor_free(ep);
    free(order);
    return rc;
}

int ts_finetune_qa(const ft_opts *o) {
    qa_run r = {.o = o};
    int rc = 2;
    if (!(r.tok = ts_model_dir_open("finetune", o->model, &r.cfg, &r.meta))) return 2;
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
