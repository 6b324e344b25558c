/*
 * finetune.c — `tessera finetune`: train a pretrained model directory for a task. --task classify
 * (the default) trains a sequence classifier (BertForSequenceClassification) on a labelled TSV /
 * CSV / JSONL file of single texts or, with --text-b-column, text pairs ([CLS] a [SEP] b [SEP],
 * token types 0 then 1). The rows are deduplicated, then split into train and test (so no text is
 * in both), unless --dev gives the test rows; AdamW with a linear warm-up and decay fed as the
 * "lr" input; after each epoch the test accuracy is measured with an inference program and
 * printed beside the majority-class baseline. Writes config.json (with id2label),
 * model.safetensors and vocab.txt to --out, and a metrics.jsonl log. --task qa is question
 * answering on SQuAD (finetune_qa.c).
 */
#include <math.h>
#include <unistd.h>

#include "cli.h"
#include "finetune.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera finetune --model DIR --train FILE --out DIR [options]\n"
    "  Fine-tunes the model in DIR (from tessera pretrain) for a task:\n"
    "  --task classify      (default) a sequence classifier on FILE (.tsv or .csv with a header, or\n"
    "                       .jsonl); labels are the file's distinct values, sorted\n"
    "  --task qa            extractive question answering (BertForQuestionAnswering) on a SQuAD v1.1\n"
    "                       JSON file; the encoder's weights load from DIR, qa_outputs.* are new\n"
    "                       (inferred when DIR is already a question-answering model)\n"
    "  --dev FILE           classify: test on FILE instead of a split of --train; qa: a SQuAD file\n"
    "                       scored (EM / F1, the official v1.1 way) after each epoch\n"
    "  Classification:\n"
    "  --text-column NAME   column / key of the text (default text)\n"
    "  --text-b-column NAME column / key of a second text: a text-pair classifier, rows encoded\n"
    "                       [CLS] text [SEP] text_b [SEP] (token types 0, then 1); remembered in\n"
    "                       config.json for tessera eval and predict\n"
    "  --label-column NAME  column / key of the label (default label)\n"
    "  --test-split F       fraction held out for testing, after deduplication (default 0.2; 0: none)\n"
    "  --truncate HOW       what of a text longer than --max-len the model sees: head (default: its\n"
    "                       start), tail (its end) or head+tail (the first quarter of the room from\n"
    "                       the start, the rest from the end: greeting and signature); remembered\n"
    "                       in config.json for tessera eval and predict\n"
    "  Question answering (run_squad's windows and decoding):\n"
    "  --doc-stride N       context pieces between the starts of a context's windows\n"
    "                       (default min(128, max-len / 3))\n"
    "  --max-query-len N    question pieces kept (default min(64, max-len / 4))\n"
    "  --max-answer-len N   pieces in a predicted answer, at most (default 30)\n"
    "  --n-best N           start / end candidates per window (default 20)\n"
    "  Training:\n"
    "  --epochs N           passes over the training rows (default 3)\n"
    "  --batch N            sequences per step (default 32)\n"
    "  --max-len N          tokens per sequence (default 128 for classify, min(384, the model's\n"
    "                       positions) for qa)\n"
    "  --lr X               peak learning rate (default 1e-4)\n"
    "  --warmup F           fraction of the steps spent warming up (default 0.1)\n"
    "  --weight-decay X     AdamW decoupled weight decay (default 0.01; not on biases and LayerNorm\n"
    "                       weights)\n"
    "  --max-grad-norm X    clip the gradients to global norm X (Hugging Face's Trainer uses 1.0;\n"
    "                       default 0: no clipping)\n"
    "  --max-steps N        stop after N steps (default: epochs x batches)\n"
    "  --max-minutes M      stop training after M minutes (then test and save; 0: no limit)\n"
    "  --save-every N       also write --out every N steps (default: only at the end), and a\n"
    "                       full-state checkpoint OUT/checkpoints/step-NNNNNN (parameters, AdamW\n"
    "                       state, step); --keep N keeps the newest N (default 3)\n"
    "  --resume DIR         continue from the newest valid checkpoint of an earlier run's --out DIR\n"
    "                       (--out defaults to DIR); the same options and data are required, and\n"
    "                       the result is the same, bit for bit, as one run (without --max-minutes)\n"
    "  --stop-after N       end this invocation after step N, with a checkpoint there\n"
    "  --seed N             shuffling, split and dropout (default 42)\n"
    "  --split-seed N       the train/test split's alone (default: --seed), so that models trained\n"
    "                       with other seeds hold out the same rows (an ensemble for tessera eval)\n"
    "  --threads N          CPU threads (default: all)\n"
    "  --bf16               bf16 matrix products (mixed precision; master weights stay f32)\n"
    "  --fp16               fp16 matrix products with dynamic loss scaling (master weights f32)\n"
    "  --recompute          recompute each layer's forward in the backward (less memory, same result)\n"
    "  --deterministic      bit-identical runs for a seed: pins --threads (default all CPUs) and\n"
    "                       refuses --max-minutes\n"
    "  --config FILE        a JSON object of the options above, keys without '--' (flags override)\n";

int ft_train_step(const ft_opts *o, ts_program *tp, ts_tensor *lr_t, float lr, int rows, int epoch, int64_t *step,
                  double *loss_sum, int64_t *loss_n, double *t_last, ts_progress *pr, FILE *metrics) {
    *(float *)ts_tensor_data(lr_t) = lr;
    ts_tensor *loss = NULL;
    if (ts_program_feed(tp, "lr", lr_t) || ts_program_run(tp) || ts_program_fetch(tp, "loss", &loss)) {
        fprintf(stderr, "\ntessera finetune: step %lld: %s\n", (long long)*step + 1, ts_last_error());
        return 1;
    }
    double l = *(float *)ts_tensor_data(loss);
    ts_tensor_free(loss);
    if (!isfinite(l) && !o->fp16) { /* fp16: an overflow skips the step, lowers the scale */
        fprintf(stderr, "\ntessera finetune: step %lld: the loss is %g; try a lower --lr\n", (long long)*step + 1, l);
        return 1;
    }
    ++*step;
    if (isfinite(l)) *loss_sum += l, ++*loss_n;
    double now = ts_now(), rate = rows / (now - *t_last);
    *t_last = now;
    ts_progress_step(pr, *step, l, rate);
    ts_metrics_write(metrics, "\"step\": %lld, \"epoch\": %d, \"loss\": %.6f, \"lr\": %.6g, \"seq_per_s\": %.2f",
                     (long long)*step, epoch + 1, l, lr, rate);
    return 0;
}

/* Train rows, test rows and the label names, from the file. */
static int load_data(const ft_opts *o, ts_text_dataset **train, ts_text_dataset **test) {
    ts_text_opts to = {.text_column = o->text_col, .text_b_column = o->text_b_col, .label_column = o->label_col};
    ts_text_dataset *all = ts_text_dataset_load(o->train, &to);
    if (!all) {
        fprintf(stderr, "tessera finetune: --train %s\n", ts_last_error());
        return 2;
    }
    int64_t n = ts_text_dataset_size(all), dup = 0;
    if (ts_text_dataset_num_labels(all) < 2) {
        fprintf(stderr, "tessera finetune: %s: %d distinct label%s in column '%s'; a classifier needs two\n", o->train,
                ts_text_dataset_num_labels(all), ts_text_dataset_num_labels(all) == 1 ? "" : "s", o->label_col);
        ts_text_dataset_free(all);
        return 2;
    }
    ts_status st;
    if (o->dev) { /* the test rows are --dev's, with the training file's label ids */
        st = ts_text_dataset_dedup(all, &dup);
        *train = all, *test = NULL;
        int nl = ts_text_dataset_num_labels(all);
        const char **names = malloc((size_t)nl * sizeof *names);
        if (!names) {
            fprintf(stderr, "tessera finetune: out of memory\n");
            return 1;
        }
        for (int i = 0; i < nl; i++) names[i] = ts_text_dataset_label_name(all, i);
        to.labels = names, to.nlabels = nl;
        *test = ts_text_dataset_load(o->dev, &to);
        free(names);
        if (!*test) {
            fprintf(stderr, "tessera finetune: --dev %s\n", ts_last_error());
            return 2;
        }
    } else if (o->test_split > 0) {
        st = ts_text_dataset_split(all, o->test_split, (uint64_t)(o->split_seed >= 0 ? o->split_seed : o->seed), train,
                                   test, &dup);
        ts_text_dataset_free(all);
    } else {
        st = ts_text_dataset_dedup(all, &dup);
        *train = all, *test = NULL;
    }
    if (st != TS_OK) {
        fprintf(stderr, "tessera finetune: %s: %s\n", o->train, ts_last_error());
        return 1;
    }
    printf("tessera finetune: %s: %lld %srows, %lld duplicates dropped, %lld for training, %lld for testing%s%s\n",
           o->train, (long long)n, o->text_b_col ? "text-pair " : "", (long long)dup,
           (long long)ts_text_dataset_size(*train), (long long)(*test ? ts_text_dataset_size(*test) : 0),
           o->dev ? " from " : "", o->dev ? o->dev : "");
    return 0;
}

static int run(const ft_opts *o) {
    int rc = 2;
    ts_bert_config cfg;
    ts_model_meta meta;
    ts_text_dataset *train = NULL, *test = NULL;
    ts_program *tp = NULL, *ip = NULL;
    FILE *metrics = NULL;
    int64_t *order = NULL;
    ts_batch_buf bb = {0};
    ts_tensor *lr_t = NULL;
    ts_tokenizer *tok = ts_model_dir_open("finetune", o->model, &cfg, &meta);
    if (!tok) return 2;
    ts_model_meta_free(&meta); /* the pretrained model's labels, if any, are replaced */
    if ((rc = load_data(o, &train, &test))) goto done;
    rc = 2;
    int seq = o->max_len ? o->max_len : 128;
    if (seq > cfg.max_position_embeddings) {
        fprintf(stderr, "tessera finetune: --max-len %d exceeds the model's %d positions\n", seq,
                cfg.max_position_embeddings);
        goto done;
    }
    if (seq < (o->text_b_col ? 4 : 3)) {
        fprintf(stderr, "tessera finetune: --max-len %d cannot hold [CLS] text [SEP]%s\n", seq,
                o->text_b_col ? " text_b [SEP]" : "");
        goto done;
    }
    int nl = ts_text_dataset_num_labels(train);
    meta.max_len = seq; /* meta.lowercase stays the pretrained model's do_lower_case */
    meta.truncation = o->truncation;
    ts_trunc_apply(tok, meta.truncation, seq);
    if (o->text_b_col && !(meta.text_b_column = strdup(o->text_b_col))) goto oom;
    meta.nlabels = nl;
    meta.labels = calloc((size_t)nl, sizeof *meta.labels);
    if (!meta.labels) goto oom;
    for (int i = 0; i < nl; i++)
        if (!(meta.labels[i] = strdup(ts_text_dataset_label_name(train, i)))) goto oom;
    cfg.num_labels = nl;
    cfg.head = TS_BERT_SEQ_CLASSIFICATION;
    if (o->bf16) cfg.compute_dtype = TS_BF16;
    if (o->fp16) cfg.compute_dtype = TS_F16;
    cfg.recompute = o->recompute;

    rc = 1;
    const int B = o->batch;
    if (ts_bert_programs("finetune", &cfg, TS_BERT_SEQ_CLASSIFICATION, B, seq, (uint64_t)o->seed, o->threads, 1,
                         (float)o->wd, (const char *[]){"loss"}, 1, &tp, (const char *[]){"logits"}, 1, &ip,
                         &(ts_train_loop){.max_grad_norm = (float)o->max_grad_norm}))
        goto done;
    char path[4200], vocab[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", o->model);
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", o->model);
    int nmissing = 0;
    if (ts_program_load(tp, path, 0, &nmissing) != TS_OK) {
        fprintf(stderr, "tessera finetune: %s\n", ts_last_error());
        goto done;
    }
    if (nmissing == ts_program_num_params(tp)) {
        fprintf(stderr, "tessera finetune: %s holds none of the model's parameters\n", path);
        goto done;
    }
    int64_t step = 0;
    if (o->resume && ft_ckpt_resume(o, "classify", seq, 0, 0, tp, &step)) {
        rc = 2;
        goto done;
    }
    if (ts_make_dir("finetune", o->out) ||
        !(metrics = o->resume ? ts_metrics_append(o->out, "finetune") : ts_metrics_open(o->out, "finetune")))
        goto done;

    int64_t ntrain = ts_text_dataset_size(train);
    int64_t per_epoch = (ntrain + B - 1) / B;
    int64_t total = per_epoch * o->epochs;
    if (o->max_steps && o->max_steps < total) total = o->max_steps;
    int64_t warmup = (int64_t)llround(o->warmup * (double)total);
    printf("tessera finetune: %d labels (", nl);
    for (int i = 0; i < nl; i++) printf("%s%s", i ? ", " : "", meta.labels[i]);
    printf("), %d layers x %d hidden, %d of %d parameters new, %lld steps of %d x %d tokens, lr %g\n",
           cfg.num_hidden_layers, cfg.hidden_size, nmissing, ts_program_num_params(tp), (long long)total, B, seq, o->lr);

    order = malloc((size_t)(ntrain > 0 ? ntrain : 1) * sizeof *order);
    lr_t = ts_tensor_new(TS_F32, 0, NULL);
    if (!order || !lr_t || !ts_batch_buf_init(&bb, B, seq, 1)) goto oom;
    ts_progress pr;
    double max_s = o->max_minutes * 60;
    ts_progress_init(&pr, total, max_s);
    int out_of_time = 0;
    double t_last = ts_now(), loss_sum = 0, acc = -1;
    int64_t loss_n = 0;
    int base_label;
    double base = test ? ts_cls_majority(train, test, &base_label) : 0;
    /* a resumed run starts where step says: epoch e's order is a function of (seed, e) */
    const int epoch0 = (int)(step / per_epoch);
    const int64_t i0 = step % per_epoch * B;
    for (int epoch = epoch0; step < total && !out_of_time; epoch++) {
        ts_permutation((uint64_t)o->seed + 1000003u * (uint64_t)epoch, ntrain, order);
        for (int64_t i = epoch == epoch0 ? i0 : 0; i < ntrain && step < total; i += B) {
            int m = (int)(ntrain - i < B ? ntrain - i : B);
            double el = ts_now() - pr.t0;
            if (max_s > 0 && el >= max_s) {
                out_of_time = 1;
                break;
            }
            /* With a time limit the schedule follows whichever end is nearer: steps or time. */
            float lr = ts_lr_at((float)o->lr, step, warmup, total);
            if (max_s > 0 && el / max_s > (double)step / (double)total) {
                float lt = ts_lr_at((float)o->lr, (int64_t)(el / max_s * 1e6), (int64_t)(o->warmup * 1e6), 1000000);
                lr = lt < lr ? lt : lr;
            }
            if (ts_text_dataset_batch(train, tok, order + i, m, B, seq, &bb.b) || ts_batch_buf_feed(&bb, tp, 1)) {
                fprintf(stderr, "\ntessera finetune: step %lld: %s\n", (long long)step + 1, ts_last_error());
                goto done;
            }
            if (ft_train_step(o, tp, lr_t, lr, m, epoch, &step, &loss_sum, &loss_n, &t_last, &pr, metrics)) goto done;
            if (o->save_every && step % o->save_every == 0 && step < total &&
                (ts_model_dir_save("finetune", o->out, tp, &cfg, "BertForSequenceClassification", vocab, &meta) ||
                 ft_ckpt_save(o, "classify", seq, 0, 0, step, tp)))
                goto done;
            if (o->stop_after && step == o->stop_after && step < total) {
                if (!(o->save_every && step % o->save_every == 0) && ft_ckpt_save(o, "classify", seq, 0, 0, step, tp))
                    goto done;
                ts_progress_print(&pr, "tessera finetune: stopped after step %lld (--stop-after); continue with "
                                       "--resume %s\n", (long long)step, o->out);
                rc = 0;
                goto done;
            }
        }
        if (loss_n == 0) break; /* the time ran out as this epoch began */
        if (out_of_time) ts_progress_print(&pr, "--max-minutes %g reached in epoch %d\n", o->max_minutes, epoch + 1);
        if (test && ts_text_dataset_size(test) > 0) {
            int64_t correct, n;
            if (ts_program_copy_params(ip, tp) < 0 || ts_cls_accuracy(ip, tok, test, B, seq, &correct, &n) != TS_OK) {
                fprintf(stderr, "\ntessera finetune: evaluating: %s\n", ts_last_error());
                goto done;
            }
            acc = n ? (double)correct / (double)n : 0;
            ts_progress_print(&pr, "epoch %d: step %lld, train loss %.4f, test accuracy %.2f%% (%lld/%lld), majority baseline %.2f%%, %.0f s\n",
                              epoch + 1, (long long)step, loss_sum / (double)(loss_n ? loss_n : 1), 100 * acc,
                              (long long)correct, (long long)n, 100 * base, ts_now() - pr.t0);
            ts_metrics_write(metrics, "\"step\": %lld, \"epoch\": %d, \"test_accuracy\": %.6f, \"majority_baseline\": %.6f",
                             (long long)step, epoch + 1, acc, base);
        } else {
            ts_progress_print(&pr, "epoch %d: step %lld, train loss %.4f, %.0f s\n", epoch + 1, (long long)step,
                              loss_sum / (double)(loss_n ? loss_n : 1), ts_now() - pr.t0);
        }
        loss_sum = 0, loss_n = 0;
    }
    if (ts_model_dir_save("finetune", o->out, tp, &cfg, "BertForSequenceClassification", vocab, &meta)) goto done;
    if (acc >= 0)
        printf("tessera finetune: test accuracy %.2f%% (majority baseline %.2f%%: always '%s'); %lld steps in %.0f s; wrote %s\n",
               100 * acc, 100 * base, meta.labels[base_label], (long long)step, ts_now() - pr.t0, o->out);
    else
        printf("tessera finetune: %lld steps in %.0f s; wrote %s\n", (long long)step, ts_now() - pr.t0, o->out);
    rc = 0;
    goto done;
oom:
    fprintf(stderr, "tessera finetune: out of memory\n");
    rc = 1;
done:
    if (metrics) fclose(metrics);
    ts_tensor_free(lr_t);
    ts_batch_buf_free(&bb);
    free(order);
    ts_program_free(tp);
    ts_program_free(ip);
    ts_text_dataset_free(train);
    ts_text_dataset_free(test);
    ts_model_meta_free(&meta);
    ts_tokenizer_free(tok);
    return rc;
}

/* --task, or qa when the model directory already holds a question-answering model. */
static int run_task(const ft_opts *o) {
    int task = TS_TASK_CLASSIFY;
    if (o->task) {
        if ((task = ts_task_parse("finetune", o->task)) < 0) return 2;
    } else {
        ts_bert_config cfg;
        char path[4200];
        snprintf(path, sizeof path, "%s/config.json", o->model);
        ts_bert_config_default(&cfg);
        if (ts_bert_config_load(path, &cfg) == TS_OK && cfg.head == TS_BERT_QUESTION_ANSWERING) task = TS_TASK_QA;
    }
    if (task == TS_TASK_QA) {
        const char *cls_only = o->text_b_col ? "--text-b-column" : o->truncate ? "--truncate" : NULL;
        if (cls_only) {
            fprintf(stderr, "tessera finetune: %s is for --task classify, not qa\n", cls_only);
            return 2;
        }
        return ts_finetune_qa(o);
    }
    const char *qa_only = o->doc_stride      ? "--doc-stride"
                          : o->max_query_len ? "--max-query-len"
                          : o->max_answer_len ? "--max-answer-len"
                          : o->n_best        ? "--n-best"
                                             : NULL;
    if (qa_only) {
        fprintf(stderr, "tessera finetune: %s is for --task qa\n", qa_only);
        return 2;
    }
    return run(o);
}

int ts_cli_finetune(int argc, char **argv) {
    ft_opts o = {.text_col = "text", .label_col = "label", .test_split = 0.2, .lr = 1e-4, .warmup = 0.1,
                 .wd = 0.01, .epochs = 3, .batch = 32, .seed = 42, .split_seed = -1, .keep = 3};
    const ts_opt opts[] = {
        {"model", OPT_STR, &o.model, 0},         {"train", OPT_STR, &o.train, 0},
        {"task", OPT_STR, &o.task, 0},           {"dev", OPT_STR, &o.dev, 0},
        {"text-b-column", OPT_STR, &o.text_b_col, 0}, {"doc-stride", OPT_INT, &o.doc_stride, 1},
        {"max-query-len", OPT_INT, &o.max_query_len, 1}, {"max-answer-len", OPT_INT, &o.max_answer_len, 1},
        {"n-best", OPT_INT, &o.n_best, 1},       {"resume", OPT_STR, &o.resume, 0},
        {"keep", OPT_INT, &o.keep, 1},           {"stop-after", OPT_INT, &o.stop_after, 1},
        {"out", OPT_STR, &o.out, 0},             {"text-column", OPT_STR, &o.text_col, 0},
        {"label-column", OPT_STR, &o.label_col, 0}, {"test-split", OPT_FLOAT, &o.test_split, 0},
        {"epochs", OPT_INT, &o.epochs, 1},       {"batch", OPT_INT, &o.batch, 1},
        {"max-len", OPT_INT, &o.max_len, 3},     {"lr", OPT_FLOAT, &o.lr, 0},
        {"warmup", OPT_FLOAT, &o.warmup, 0},     {"weight-decay", OPT_FLOAT, &o.wd, 0},
        {"max-grad-norm", OPT_FLOAT, &o.max_grad_norm, 0},
        {"max-steps", OPT_INT, &o.max_steps, 0}, {"save-every", OPT_INT, &o.save_every, 0},
        {"seed", OPT_INT, &o.seed, 0},           {"split-seed", OPT_INT, &o.split_seed, 0},
        {"threads", OPT_INT, &o.threads, 0},
        {"bf16", OPT_FLAG, &o.bf16, 0},          {"max-minutes", OPT_FLOAT, &o.max_minutes, 0},
        {"recompute", OPT_FLAG, &o.recompute, 0}, {"deterministic", OPT_FLAG, &o.deterministic, 0},
        {"fp16", OPT_FLAG, &o.fp16, 0},          {"truncate", OPT_STR, &o.truncate, 0},
    };
    ts_optset os;
    int rc = ts_opts_parse(&os, "finetune", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc == 1) {
        char probe[4300];
        if (o.resume) snprintf(probe, sizeof probe, "%s/trainer.json", o.resume);
        if (!o.out && o.resume && access(probe, F_OK) != 0) o.out = o.resume; /* an earlier run's directory */
        const char *missing = !o.model ? "--model DIR" : !o.train ? "--train FILE" : !o.out ? "--out DIR" : NULL;
        if (missing) {
            fprintf(stderr, "tessera finetune: %s is required\n(tessera finetune --help shows the usage)\n", missing);
            rc = 2;
        } else if (o.test_split >= 1) {
            fprintf(stderr, "tessera finetune: --test-split %g leaves nothing to train on (use a fraction below 1)\n",
                    o.test_split);
            rc = 2;
        } else if (o.warmup > 1) {
            fprintf(stderr, "tessera finetune: --warmup %g is a fraction of the steps, at most 1\n", o.warmup);
            rc = 2;
        } else if (o.truncate && (o.truncation = ts_trunc_parse("finetune", o.truncate)) < 0) {
            rc = 2;
        } else if (o.bf16 && o.fp16) {
            fprintf(stderr, "tessera finetune: --bf16 and --fp16 exclude each other\n");
            rc = 2;
        } else if (!o.deterministic || !(rc = ts_deterministic_setup("finetune", &o.threads, o.max_minutes))) {
            rc = run_task(&o);
        }
    }
    ts_opts_free(&os);
    return rc;
}
