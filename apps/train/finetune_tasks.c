/*
 * finetune_tasks.c — the two tasks of fine-tuning for ts_train_epochs (tessera_tasks.h:
 * ts_classify_task_new, ts_squad_task_new): rows encoded into the training program's slices, the
 * held-out data scored after epochs (test accuracy beside the majority baseline; SQuAD's EM and
 * F1), and the run's last line. The model directory and the checkpoints stay the caller's.
 */
#include "common/app.h"

#include <stdio.h>

struct ts_finetune_task {
    ts_finetune_task_opts o;
    ts_batch_buf bb;    /* S slices of [B, seq] (classification: and labels [B]) */
    ts_tensor *sp, *ep; /* qa: start / end positions, [S, B] ([B] when S == 1) */
    int base_label;     /* classification: the majority class of the training rows */
    double base, acc;   /* its share of the test rows; the last test accuracy (-1: none) */
    double em, f1;      /* qa: the last dev scores (-1: none) */
};

static int task_save(void *ctx) {
    ts_finetune_task *f = ctx;
    return f->o.save(f->o.ctx);
}

static int task_checkpoint(void *ctx, int64_t step) {
    ts_finetune_task *f = ctx;
    return f->o.checkpoint(f->o.ctx, step);
}

/* The epoch's line without a test. */
static void epoch_line(ts_progress *pr, int epoch, int64_t step, double train_loss) {
    ts_progress_print(pr, "epoch %d: step %lld, train loss %.4f, %.0f s\n", epoch + 1, (long long)step, train_loss,
                      ts_seconds() - pr->t0);
}

/* ------------------------------------------------------------------ sequence classification */

static int cls_fill(void *ctx, const int64_t *rows, int m, int k) {
    ts_finetune_task *f = ctx;
    ts_batch_buf_slice(&f->bb, k);
    return ts_text_dataset_batch(f->o.train_rows, f->o.tok, rows, m, f->o.batch, f->o.seq, &f->bb.b) ? -1 : 0;
}

static int cls_feed(void *ctx) {
    ts_finetune_task *f = ctx;
    return ts_batch_buf_feed(&f->bb, f->o.train, 1) ? -1 : 0;
}

static int cls_epoch_end(void *ctx, int epoch, int64_t step, int last, double train_loss, ts_progress *pr) {
    ts_finetune_task *f = ctx;
    const ts_finetune_task_opts *o = &f->o;
    int every = o->test_every;
    if (!o->test_rows || ts_text_dataset_size(o->test_rows) == 0 ||
        (!last && (every == 0 || (epoch + 1) % every != 0))) {
        epoch_line(pr, epoch, step, train_loss);
        return 0;
    }
    int64_t correct, n;
    if (ts_program_copy_params(o->infer, o->train) < 0 ||
        ts_classify_accuracy(o->infer, o->tok, o->test_rows, o->batch, o->seq, &correct, &n) != TS_OK) {
        ts_writef(o->err, o->err_ctx, "\n%s: evaluating: %s\n", o->name, ts_last_error());
        return 1;
    }
    f->acc = n ? (double)correct / (double)n : 0;
    ts_progress_print(pr, "epoch %d: step %lld, train loss %.4f, test accuracy %.2f%% (%lld/%lld), majority baseline "
                          "%.2f%%, %.0f s\n", epoch + 1, (long long)step, train_loss, 100 * f->acc, (long long)correct,
                      (long long)n, 100 * f->base, ts_seconds() - pr->t0);
    ts_metrics_write(o->metrics, o->metrics_ctx,
                     "\"step\": %lld, \"epoch\": %d, \"test_accuracy\": %.6f, \"majority_baseline\": %.6f",
                     (long long)step, epoch + 1, f->acc, f->base);
    return 0;
}

static void cls_report(void *ctx, int64_t step, double seconds) {
    ts_finetune_task *f = ctx;
    const ts_finetune_task_opts *o = &f->o;
    if (f->acc >= 0)
        ts_writef(o->out, o->out_ctx, "%s: test accuracy %.2f%% (majority baseline %.2f%%: always '%s'); %lld steps in "
                  "%.0f s; wrote %s\n", o->name, 100 * f->acc, 100 * f->base, o->labels[f->base_label],
                  (long long)step, seconds, o->out_dir);
    else
        ts_writef(o->out, o->out_ctx, "%s: %lld steps in %.0f s; wrote %s\n", o->name, (long long)step, seconds,
                  o->out_dir);
}

/* A task of f's options (checked) with its callbacks into t; NULL on a bad size or out of memory. */
static ts_finetune_task *task_new(const ts_finetune_task_opts *o, ts_epoch_task *t, int64_t nrows) {
    ts_finetune_task_opts oc;
    if (!o) return ts_set_error(TS_ERR_ARG, "ts_finetune_task_opts: NULL"), NULL;
    if (TS_STRUCT_READ(&oc, o, ts_finetune_task_opts, "ts_finetune_task_new")) return NULL;
    o = &oc;
    ts_finetune_task *f = calloc(1, sizeof *f);
    if (!f) {
        ts_set_error(TS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->o = *o;
    f->acc = f->em = f->f1 = -1;
    *t = (ts_epoch_task){.ctx = f, .nrows = nrows, .train = o->train, .save = task_save,
                         .checkpoint = task_checkpoint};
    return f;
}

ts_finetune_task *ts_classify_task_new(const ts_finetune_task_opts *o, ts_epoch_task *t) {
    ts_finetune_task *f = task_new(o, t, o ? ts_text_dataset_size(o->train_rows) : 0);
    if (!f) return NULL;
    if (!ts_batch_buf_init_slices(&f->bb, o->batch, o->seq, 1, o->slices, 0)) {
        ts_finetune_task_free(f);
        ts_set_error(TS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    f->base = o->test_rows ? ts_classify_majority(o->train_rows, o->test_rows, &f->base_label) : 0;
    t->fill = cls_fill, t->feed = cls_feed, t->epoch_end = cls_epoch_end, t->report = cls_report;
    return f;
}

/* ------------------------------------------------------------------ question answering (SQuAD) */

/* Windows rows[0..m) into slice k, with their answer positions (a window without the answer, or
 * a padding row, points past the end: ignored by the loss, as run_squad's clamped positions). */
static int qa_fill(void *ctx, const int64_t *rows, int m, int k) {
    ts_finetune_task *f = ctx;
    int B = f->o.batch;
    ts_batch_buf_slice(&f->bb, k);
    ts_batch b = f->bb.b;
    int32_t *sp = (int32_t *)ts_tensor_data(f->sp) + (size_t)k * B, *ep = (int32_t *)ts_tensor_data(f->ep) + (size_t)k * B;
    b.start_positions = sp;
    b.end_positions = ep;
    if (ts_squad_batch(f->o.squad_train, rows, m, B, &b) != TS_OK) return -1;
    for (int i = 0; i < B; i++) {
        if (sp[i] == TS_IGNORE_INDEX) sp[i] = f->o.seq;
        if (ep[i] == TS_IGNORE_INDEX) ep[i] = f->o.seq;
    }
    return 0;
}

static int qa_feed(void *ctx) {
    ts_finetune_task *f = ctx;
    if (ts_batch_buf_feed(&f->bb, f->o.train, 0) || ts_program_feed(f->o.train, "start_positions", f->sp) ||
        ts_program_feed(f->o.train, "end_positions", f->ep))
        return -1;
    return 0;
}

static int qa_epoch_end(void *ctx, int epoch, int64_t step, int last, double train_loss, ts_progress *pr) {
    ts_finetune_task *f = ctx;
    const ts_finetune_task_opts *o = &f->o;
    (void)last;
    if (!o->squad_dev) {
        epoch_line(pr, epoch, step, train_loss);
        return 0;
    }
    if (ts_program_copy_params(o->infer, o->train) < 0 ||
        ts_squad_score_program(o->infer, o->squad_dev, o->batch, o->seq, o->n_best, o->max_answer_len, &f->em,
                               &f->f1) != TS_OK) {
        ts_writef(o->err, o->err_ctx, "%s: %s\n", o->name, ts_last_error());
        return 1;
    }
    ts_progress_print(pr, "epoch %d: step %lld, train loss %.4f, dev EM %.2f, F1 %.2f, %.0f s\n", epoch + 1,
                      (long long)step, train_loss, f->em, f->f1, ts_seconds() - pr->t0);
    ts_metrics_write(o->metrics, o->metrics_ctx,
                     "\"step\": %lld, \"epoch\": %d, \"dev_exact_match\": %.4f, \"dev_f1\": %.4f", (long long)step,
                     epoch + 1, f->em, f->f1);
    return 0;
}

static void qa_report(void *ctx, int64_t step, double seconds) {
    ts_finetune_task *f = ctx;
    const ts_finetune_task_opts *o = &f->o;
    if (f->em >= 0)
        ts_writef(o->out, o->out_ctx, "%s: dev EM %.2f, F1 %.2f; %lld steps in %.0f s; wrote %s\n", o->name, f->em,
                  f->f1, (long long)step, seconds, o->out_dir);
    else
        ts_writef(o->out, o->out_ctx, "%s: %lld steps in %.0f s; wrote %s\n", o->name, (long long)step, seconds,
                  o->out_dir);
}

ts_finetune_task *ts_squad_task_new(const ts_finetune_task_opts *o, ts_epoch_task *t) {
    ts_finetune_task *f = task_new(o, t, o ? ts_squad_num_features(o->squad_train) : 0);
    if (!f) return NULL;
    int S = o->slices > 1 ? o->slices : 1;
    const int64_t sb[2] = {S, o->batch};
    f->sp = ts_tensor_new(TS_I32, S > 1 ? 2 : 1, S > 1 ? sb : sb + 1);
    f->ep = ts_tensor_new(TS_I32, S > 1 ? 2 : 1, S > 1 ? sb : sb + 1);
    if (!f->sp || !f->ep || !ts_batch_buf_init_slices(&f->bb, o->batch, o->seq, 0, S, 0)) {
        ts_finetune_task_free(f);
        ts_set_error(TS_ERR_NOMEM, "out of memory");
        return NULL;
    }
    t->fill = qa_fill, t->feed = qa_feed, t->epoch_end = qa_epoch_end, t->report = qa_report;
    return f;
}

void ts_finetune_task_free(ts_finetune_task *f) {
    if (!f) return;
    ts_batch_buf_free(&f->bb);
    ts_tensor_free(f->sp);
    ts_tensor_free(f->ep);
    free(f);
}
