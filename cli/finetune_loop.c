/*
 * finetune_loop.c — the training loop `tessera finetune` runs for both of its tasks (see
 * ft_train_loop in finetune.h): epochs of shuffled rows, micro-batches accumulated into optimizer
 * steps, several steps per call into the program (device iterations), the learning-rate
 * schedule, the loss check, progress and metrics, checkpoints, --stop-after and the final save.
 *
 * One call into the training program takes S = N x K micro-batches of B rows (N = --accumulation,
 * K = --device-iterations): micro-batch n of step j reads rows [p + (j N + n) B, ... + B) of the
 * epoch's order, p being where the call starts. Its inputs are slices [S, B, ...], "lr" is [S]
 * (step j's lr on its N micro-batches) and "loss" comes back as [S].
 */
#include <math.h>

#include "cli.h"
#include "finetune.h"
#include "train_common.h"

ts_train_loop ft_loop_opts(const ft_opts *o) {
    int n = o->accumulation > 1 ? o->accumulation : 1, k = o->device_iterations > 1 ? o->device_iterations : 1;
    return (ts_train_loop){.accumulation = n,
                           .device_iterations = n * k, /* program runs per call: micro-batches */
                           .max_grad_norm = (float)o->max_grad_norm,
                           .optimizer = o->optimizer,
                           .momentum = (float)o->momentum};
}

int64_t ft_steps_per_epoch(const ft_opts *o, int64_t n) {
    int64_t N = o->accumulation > 1 ? o->accumulation : 1, K = o->device_iterations > 1 ? o->device_iterations : 1;
    int64_t rows = (int64_t)o->batch * N; /* per optimizer step */
    if (K == 1) return (n + rows - 1) / rows;
    return n / (rows * K) * K; /* whole calls only */
}

/* The lr of optimizer step `step` of `total`; with a time limit whichever end is nearer. */
static float lr_of(const ft_opts *o, int64_t step, int64_t warmup, int64_t total, double elapsed) {
    float lr = ts_lr_at((float)o->lr, step, warmup, total);
    double max_s = o->max_minutes * 60;
    if (max_s > 0 && elapsed / max_s > (double)step / (double)total) {
        float lt = ts_lr_at((float)o->lr, (int64_t)(elapsed / max_s * 1e6), (int64_t)(o->warmup * 1e6), 1000000);
        lr = lt < lr ? lt : lr;
    }
    return lr;
}

int ft_train_loop(const ft_opts *o, ft_task *t, int64_t step, FILE *metrics) {
    const int B = o->batch, N = o->accumulation > 1 ? o->accumulation : 1;
    const int K = o->device_iterations > 1 ? o->device_iterations : 1, S = N * K;
    const int64_t n = t->nrows, per_epoch = ft_steps_per_epoch(o, n);
    if (per_epoch == 0) {
        fprintf(stderr, "tessera finetune: %lld training rows do not fill one call of --batch %d x --accumulation %d "
                        "x --device-iterations %d\n", (long long)n, B, N, K);
        return 2;
    }
    if (step % K) {
        fprintf(stderr, "tessera finetune: --resume at step %lld: not a multiple of --device-iterations %d\n",
                (long long)step, K);
        return 2;
    }
    int64_t total = per_epoch * o->epochs;
    if (o->max_steps && o->max_steps < total) total = o->max_steps;
    int64_t warmup = (int64_t)llround(o->warmup * (double)total);
    int64_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    ts_tensor *lr_t = S > 1 ? ts_tensor_new(TS_F32, 1, (const int64_t[]){S}) : ts_tensor_new(TS_F32, 0, NULL);
    int *rows_of = malloc(sizeof(int) * (size_t)S); /* rows in each micro-batch of a call */
    float *lrs = malloc(sizeof(float) * (size_t)K); /* each step's lr */
    int rc = 1;
    if (!order || !lr_t || !rows_of || !lrs) {
        fprintf(stderr, "tessera finetune: out of memory\n");
        goto done;
    }
    float *lr = ts_tensor_data(lr_t);
    if (N > 1 || K > 1) {
        printf("tessera finetune: %d micro-batch%s of %d per step (effective batch %d), %d step%s per program call",
               N, N == 1 ? "" : "es", B, N * B, K, K == 1 ? "" : "s");
        if (K > 1 && n % ((int64_t)B * N * K))
            printf("; %lld rows an epoch left out (the calls take whole steps)",
                   (long long)(n - per_epoch * B * N));
        printf("\n");
    }
    ts_progress pr;
    double max_s = o->max_minutes * 60;
    ts_progress_init(&pr, total, max_s);
    double t_last = ts_now(), loss_sum = 0;
    int64_t loss_n = 0;
    /* a resumed run starts where step says: epoch e's order is a function of (seed, e) */
    int epoch = (int)(step / per_epoch), out_of_time = 0;
    int64_t in_epoch = step % per_epoch; /* steps of this epoch done */
    ts_permutation((uint64_t)o->seed + 1000003u * (uint64_t)epoch, n, order);
    while (step < total && !out_of_time) {
        double el = ts_now() - pr.t0;
        if (max_s > 0 && el >= max_s) {
            out_of_time = 1;
            break;
        }
        /* one call: K steps of N micro-batches */
        int64_t at = in_epoch * B * N, rows = 0;
        for (int k = 0; k < S; k++) {
            int64_t i = at + (int64_t)k * B;
            int m = (int)(i >= n ? 0 : n - i < B ? n - i : B);
            rows_of[k] = m;
            rows += m;
            if (t->fill(t->ctx, order + (i < n ? i : 0), m, k)) {
                fprintf(stderr, "\ntessera finetune: step %lld: %s\n", (long long)step + 1, ts_last_error());
                goto done;
            }
        }
        for (int j = 0; j < K; j++) {
            lrs[j] = lr_of(o, step + j, warmup, total, el);
            for (int k = 0; k < N; k++) lr[j * N + k] = lrs[j];
        }
        ts_tensor *loss = NULL;
        if (t->feed(t->ctx) || ts_program_feed(t->tp, "lr", lr_t) || ts_program_run(t->tp) ||
            ts_program_fetch(t->tp, "loss", &loss)) {
            fprintf(stderr, "\ntessera finetune: step %lld: %s\n", (long long)step + 1, ts_last_error());
            goto done;
        }
        double now = ts_now(), rate = (double)rows / (now - t_last);
        t_last = now;
        const float *lv = ts_tensor_data(loss);
        for (int j = 0; j < K; j++) {
            double l = 0; /* the step's loss: the mean over its micro-batches that hold rows */
            int used = 0;
            for (int k = 0; k < N; k++)
                if (rows_of[j * N + k]) l += lv[j * N + k], used++;
            l = used ? l / used : 0;
            if (!isfinite(l) && !o->fp16) { /* fp16: an overflow skips the step, lowers the scale */
                fprintf(stderr, "\ntessera finetune: step %lld: the loss is %g; try a lower --lr\n", (long long)step + 1,
                        l);
                ts_tensor_free(loss);
                goto done;
            }
            step++;
            if (isfinite(l)) loss_sum += l, loss_n++;
            ts_progress_step(&pr, step, l, rate);
            ts_metrics_write(metrics, "\"step\": %lld, \"epoch\": %d, \"loss\": %.6f, \"lr\": %.6g, \"seq_per_s\": %.2f",
                             (long long)step, epoch + 1, l, lrs[j], rate);
        }
        ts_tensor_free(loss);
        in_epoch += K;
        int saving = o->save_every && step % o->save_every == 0 && step < total;
        if (saving && (t->save(t->ctx) || t->checkpoint(t->ctx, step))) goto done;
        if (o->stop_after && step == o->stop_after && step < total) {
            if (!saving && t->checkpoint(t->ctx, step)) goto done;
            ts_progress_print(&pr, "tessera finetune: stopped after step %lld (--stop-after); continue with "
                                   "--resume %s\n", (long long)step, o->out);
            rc = 0;
            goto done;
        }
        if (max_s > 0 && ts_now() - pr.t0 >= max_s) out_of_time = 1;
        if (in_epoch == per_epoch || step == total || out_of_time) { /* the epoch ends */
            if (out_of_time)
                ts_progress_print(&pr, "--max-minutes %g reached in epoch %d\n", o->max_minutes, epoch + 1);
            int erc = t->epoch_end(t->ctx, epoch, step, loss_n ? loss_sum / (double)loss_n : NAN, &pr, metrics);
            if (erc) {
                rc = erc;
                goto done;
            }
            loss_sum = 0, loss_n = 0;
            if (in_epoch == per_epoch) {
                epoch++, in_epoch = 0;
                ts_permutation((uint64_t)o->seed + 1000003u * (uint64_t)epoch, n, order);
            }
        }
    }
    if (t->save(t->ctx)) goto done;
    t->report(t->ctx, step, ts_now() - pr.t0);
    rc = 0;
done:
    free(rows_of);
    free(lrs);
    free(order);
    ts_tensor_free(lr_t);
    return rc;
}
