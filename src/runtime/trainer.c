/*
 * trainer.c — the training loop that `tessera pretrain`, `finetune` (both tasks) and library users
 * share (ts_train, "Training runs" in tessera.h): per call into the compiled program, K optimizer
 * steps of N micro-batches are filled by the caller's hook and fed; the learning rate of each step
 * is fed beside them; the losses come back per micro-batch and are checked, averaged per step and
 * logged (metrics.jsonl); checkpoints, --stop-after and the time limit are applied between calls.
 * The program may run on one device or as a pipeline over several: the loop is the same. With
 * replicas (spec->comm) every rank runs this loop in step: before each call the ranks agree on the
 * time (rank 0's) and on whether any data is left, after it they sum their micro-batches' losses
 * and rows, so every rank logs, checks and decides the same.
 */
#include "core/core.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>

float ts_train_lr(const ts_train_spec *s, int64_t step, double elapsed) {
    ts_train_spec sc;
    if (TS_STRUCT_READ(&sc, s, ts_train_spec, "ts_train_lr")) return 0.f;
    s = &sc;
    double total = s->total_steps > 0 ? (double)s->total_steps : 1, f = (double)step / total;
    if (s->max_seconds > 0 && elapsed / s->max_seconds > f) f = elapsed / s->max_seconds;
    double w = s->warmup > 0 ? s->warmup : 0, lr;
    if (w > 0 && f < w) lr = s->lr * fmin(1.0, (f * total + 1) / (w * total));
    else if (w >= 1) lr = s->lr;
    else lr = s->lr * fmax(0.0, (1 - f) / (1 - w));
    return (float)lr;
}

/* Fill the N K micro-batches of one call through the fill hook (rows[k] rows in micro-batch k);
 * *call_rows: their sum, *any: whether any holds rows, both over every rank with replicas. */
static ts_status fill_call(const ts_train_spec *s, const ts_train_hooks *h, ts_comm *comm, int64_t step, int N,
                           int *rows, int64_t *call_rows, int *any) {
    const int S = N * (s->steps_per_call > 1 ? s->steps_per_call : 1);
    ts_status st = TS_OK;
    for (int k = 0; k < S && !st; k++) {
        rows[k] = 0;
        int rc = h->fill(h->ctx, step + k / N, k % N, k, &rows[k]);
        if (rc < 0) st = ts_err(ts_last_status() ? ts_last_status() : TS_ERR_IO, "step %lld: %s",
                                (long long)(step + k / N + 1), ts_last_error());
        *call_rows += rows[k];
        *any |= rows[k] > 0;
    }
    if (st || !comm || ts_comm_size(comm) <= 1) return st;
    double a = (double)*call_rows; /* the data ran out when it did on every rank */
    if ((st = ts_comm_allreduce_f64(comm, &a, 1))) return st;
    *any = a > 0;
    *call_rows = (int64_t)a;
    return TS_OK;
}

/* Per step j of a call, into sums[j (nl + 2) ..]: the sum of each of the nl losses over the
 * micro-batches that hold rows, their count, and the rows. */
static void step_sums(ts_tensor *const *loss, int nl, const int *rows, int N, int K, double *sums) {
    const int S = N * K;
    for (int j = 0; j < K; j++) {
        double *sj = sums + (size_t)j * (nl + 2);
        memset(sj, 0, sizeof(double) * (size_t)(nl + 2));
        for (int n = 0; n < N; n++) {
            if (!rows[j * N + n]) continue;
            for (int i = 0; i < nl; i++) sj[i] += ((float *)ts_tensor_data(loss[i]))[S > 1 ? j * N + n : 0];
            sj[nl]++;
            sj[nl + 1] += rows[j * N + n];
        }
    }
}

/* Step `step`'s metrics row {"step", "time_s", <losses>, "lr", "seq_per_s", <extras>}, in one call
 * of s->metrics. */
static void metrics_row(const ts_train_spec *s, const ts_train_hooks *h, int64_t step, const ts_train_step_report *rep,
                        float lr, double rate) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return;
    fprintf(f, "{\"step\": %lld, \"time_s\": %.2f", (long long)step, rep->elapsed);
    for (int i = 0; i < rep->nlosses; i++) fprintf(f, ", \"%s\": %.6f", rep->names[i], rep->losses[i]);
    fprintf(f, ", \"lr\": %.6g, \"seq_per_s\": %.2f", lr, rate);
    for (int i = 0; i < s->nextra; i++)
        fprintf(f, ", \"%s\": %g", s->extra_keys ? s->extra_keys[i] : s->extra[i], rep->extra[i]);
    if (h->metrics_extra) {
        char more[1024] = "";
        h->metrics_extra(h->ctx, more, sizeof more);
        fputs(more, f);
    }
    fputs("}\n", f);
    if (!fclose(f)) s->metrics(s->metrics_ctx, text, len);
    free(text);
}

ts_status ts_train(const ts_train_spec *s, const ts_train_hooks *h, int64_t step, ts_train_result *res) {
    ts_train_spec sc;
    if (!s || !h || !s->program || !h->fill || !h->feed)
        return ts_err(TS_ERR_ARG, "ts_train: NULL spec, hooks, program or fill/feed hook");
    if (TS_STRUCT_READ(&sc, s, ts_train_spec, "ts_train")) return TS_ERR_ARG;
    s = &sc;
    const int N = s->micro_batches > 1 ? s->micro_batches : 1, K = s->steps_per_call > 1 ? s->steps_per_call : 1;
    const int S = N * K, nl = s->nlosses > 0 ? s->nlosses : 1;
    const char *const def_loss[] = {"loss"};
    const char *const *loss_names = s->nlosses > 0 ? s->losses : def_loss;
    if (nl > TS_TRAIN_MAX_LOSSES) return ts_err(TS_ERR_ARG, "ts_train: more than %d losses", TS_TRAIN_MAX_LOSSES);
    if (step % K) return ts_err(TS_ERR_ARG, "ts_train: step %lld is not a multiple of %d steps a call", (long long)step, K);
    ts_train_result r = {0};
    r.start_step = step;
    ts_tensor *lr_t = S > 1 ? ts_tensor_new(TS_F32, 1, (const int64_t[]){S}) : ts_tensor_new(TS_F32, 0, NULL);
    int *rows = malloc(sizeof(int) * (size_t)S);
    float *lrs = malloc(sizeof(float) * (size_t)K);
    if (!lr_t || !rows || !lrs) {
        ts_tensor_free(lr_t), free(rows), free(lrs);
        return ts_err(TS_ERR_NOMEM, "ts_train: out of memory");
    }
    ts_status st = TS_OK;
    ts_comm *comm = s->comm;
    const int R = comm ? ts_comm_size(comm) : 1, rank = comm ? ts_comm_rank(comm) : 0;
    double *sums = malloc(sizeof(double) * (size_t)(K * (nl + 2) + 1));
    if (!sums) {
        ts_tensor_free(lr_t), free(rows), free(lrs);
        return ts_err(TS_ERR_NOMEM, "ts_train: out of memory");
    }
    double t0 = ts_seconds(), t_last = t0;
    while (step < s->total_steps) {
        double el = ts_seconds() - t0;
        if (R > 1) { /* rank 0's clock decides */
            ts_comm_set_step(comm, step + 1);
            double e = rank == 0 ? el : 0;
            if ((st = ts_comm_allreduce_f64(comm, &e, 1))) break;
            el = e;
        }
        if (s->max_seconds > 0 && el >= s->max_seconds) {
            r.out_of_time = 1;
            break;
        }
        /* one call: K optimizer steps of N micro-batches */
        int64_t call_rows = 0;
        int any = 0;
        if ((st = fill_call(s, h, comm, step, N, rows, &call_rows, &any))) break;
        if (!any) { /* the data ran out */
            r.exhausted = 1;
            break;
        }
        for (int j = 0; j < K; j++) {
            lrs[j] = ts_train_lr(s, step + j, el);
            for (int n = 0; n < N; n++) ((float *)ts_tensor_data(lr_t))[j * N + n] = lrs[j];
        }
        ts_tensor *loss[TS_TRAIN_MAX_LOSSES] = {0};
        if ((st = h->feed(h->ctx, s->program)) || (st = ts_program_feed(s->program, "lr", lr_t)) ||
            (st = ts_program_run(s->program))) {
            st = ts_err(st, "step %lld: %s", (long long)step + 1, ts_last_error());
            break;
        }
        for (int i = 0; i < nl && !st; i++)
            if ((st = ts_program_fetch(s->program, loss_names[i], &loss[i])))
                st = ts_err(st, "step %lld: %s", (long long)step + 1, ts_last_error());
        double extra[TS_TRAIN_MAX_LOSSES] = {0};
        for (int i = 0; i < s->nextra && i < TS_TRAIN_MAX_LOSSES && !st; i++) {
            ts_tensor *e = NULL;
            if ((st = ts_program_fetch(s->program, s->extra[i], &e))) break;
            extra[i] = ((float *)ts_tensor_data(e))[ts_tensor_numel(e) - 1];
            ts_tensor_free(e);
        }
        if (!st) step_sums(loss, nl, rows, N, K, sums);
        if (!st && R > 1 && (st = ts_comm_allreduce_f64(comm, sums, (int64_t)K * (nl + 2))))
            st = ts_err(st, "step %lld: %s", (long long)step + 1, ts_last_error());
        double now = ts_seconds(), rate = (double)call_rows / (now - t_last > 0 ? now - t_last : 1e-9);
        t_last = now;
        for (int j = 0; j < K && !st; j++) {
            ts_train_step_report rep = {0};
            rep.step = step + 1, rep.lr = lrs[j], rep.seq_per_s = rate, rep.elapsed = now - t0;
            rep.nlosses = nl, rep.names = loss_names, rep.nextra = s->nextra, rep.extra_names = s->extra;
            /* a step's loss: the mean over its micro-batches that hold rows */
            const double *sj = sums + (size_t)j * (nl + 2);
            double used = sj[nl];
            for (int i = 0; i < nl; i++) rep.losses[i] = used ? sj[i] / used : 0;
            rep.rows = (int64_t)sj[nl + 1];
            for (int i = 0; i < s->nextra; i++) rep.extra[i] = extra[i];
            if (!isfinite(rep.losses[0]) && !s->skip_nonfinite) {
                st = ts_err(TS_ERR_RUNTIME, "step %lld: the loss is %g; try a lower learning rate", (long long)step + 1,
                            rep.losses[0]);
                break;
            }
            step++;
            if (isfinite(rep.losses[0])) r.loss_sum += rep.losses[0], r.loss_n++;
            if (s->metrics) metrics_row(s, h, step, &rep, lrs[j], rate);
            if (h->on_step) h->on_step(h->ctx, &rep);
        }
        for (int i = 0; i < nl; i++) ts_tensor_free(loss[i]);
        if (st) break;
        int last = step >= s->total_steps || (s->max_seconds > 0 && ts_seconds() - t0 >= s->max_seconds);
        if (h->after_call && (st = h->after_call(h->ctx, step, last))) break;
        int stop = s->stop_after && step == s->stop_after && step < s->total_steps;
        if (((s->save_every && step % s->save_every == 0) || stop) && h->checkpoint && (st = h->checkpoint(h->ctx, step)))
            break;
        if (stop) {
            r.stopped = 1;
            break;
        }
    }
    r.step = step;
    r.seconds = ts_seconds() - t0;
    if (res) *res = r;
    ts_tensor_free(lr_t), free(rows), free(lrs), free(sums);
    return st;
}
