/*
 * pretrain_run.c — a whole pretraining run as one library call (tessera_tasks.h:
 * ts_pretrain_run), what `tessera pretrain` does between its flags and its exit: the corpus
 * split into training text and a held-out set (every 50th document, in temporary files beside
 * the output), the reader and the held-out batches, --resume from the newest checkpoint,
 * ts_train with the hooks below (batches in, progress and losses out, MLM / NSP accuracy on the
 * held-out set every eval_every steps, the model and a full-state checkpoint every save_every),
 * and the model written at the end. Lines go to the caller's out, errors to its err.
 */
#include "train/run_report.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A run: what it holds, between ts_train's hooks. */
typedef struct pt_run {
    const ts_pretrain_run_opts *o;
    const ts_pretrain_shape *sh;
    const char *name;
    ts_pretrain_reader *reader;
    ts_batch_buf bb;
    ts_pack_buf pb;    /* packed rows (shape pack > 1): positions, [CLS] positions, NSP labels */
    int64_t seqs;      /* pairs trained (a row each, or packed) */
    int64_t rows_fed;  /* rows they came in (ts_train's rate counts rows) */
    ts_pretrain_heldout *held;
    int nheld;         /* held-out batches */
    FILE *metrics;     /* OUT/metrics.jsonl (rank 0) */
    ts_model_meta meta;
    ts_progress pr;
    double sum, sum_mlm, sum_nsp, acc, nacc, eloss;
    int64_t n_sum;
    int no_pairs;      /* the corpus holds no sentence pair */
    int timed;         /* the pipeline's stages were reported */
    int rank;
    int64_t step0, step, prof_from; /* profile: where this run began; where the counters start (-1: not yet) */
    char train_path[4200], held_path[4200];
} pt_run;

/* An error line to err and the status: TS_ERR_ARG when the inputs or options are at fault, else
 * TS_ERR_RUNTIME (or the error's own code, when it is neither). The message stays in
 * ts_last_error(). */
__attribute__((format(printf, 3, 4))) static ts_status fail(const pt_run *R, int usage, const char *fmt, ...) {
    ts_status st = ts_last_status();
    if (usage) st = TS_ERR_ARG;
    else if (st == TS_OK || st == TS_ERR_ARG) st = TS_ERR_RUNTIME;
    va_list ap;
    va_start(ap, fmt);
    st = ts_run_fail(R->o->err, R->o->err_ctx, st, fmt, ap);
    va_end(ap);
    return st;
}

static int pt_fill(void *ctx, int64_t step, int micro, int slice, int *rows) {
    pt_run *R = ctx;
    (void)step, (void)micro;
    ts_batch_buf_slice(&R->bb, slice);
    int nseq = 0;
    ts_status st;
    if (R->sh->pack > 1) {
        ts_pack_buf_slice(&R->pb, slice);
        st = ts_pretrain_next_packed(R->reader, &R->bb.b, &R->pb.p, rows, &nseq);
    } else {
        st = ts_pretrain_next(R->reader, &R->bb.b, rows);
        nseq = *rows;
    }
    R->seqs += nseq, R->rows_fed += *rows;
    if (st == TS_OK && R->bb.predictions) ts_batch_buf_compact(&R->bb, slice); /* the masker caps at P */
    ts_batch_buf_slice(&R->bb, 0);
    if (st != TS_OK && strstr(ts_last_error(), "no sentence pair")) R->no_pairs = 1;
    return st == TS_OK ? 0 : -1;
}

static ts_status pt_feed(void *ctx, ts_program *p) {
    pt_run *R = ctx;
    return R->sh->pack > 1 ? ts_pack_buf_feed(&R->pb, &R->bb, p, 1) : ts_batch_buf_feed(&R->bb, p, 1);
}

static void pt_step(void *ctx, const ts_train_step_report *r) {
    pt_run *R = ctx;
    if (isfinite(r->losses[0])) R->sum += r->losses[0], R->sum_mlm += r->losses[1], R->sum_nsp += r->losses[2], R->n_sum++;
    /* ts_train's rate is rows a second: packed rows hold seqs / rows_fed pairs each */
    double per_row = R->rows_fed > 0 ? (double)R->seqs / (double)R->rows_fed : 1;
    ts_progress_step(&R->pr, r->step, r->losses[0], r->seq_per_s * per_row);
}

/* A pipeline's stages: how long they ran, and the bubble; printed and logged once, after the
 * first evaluation (or the end). */
static void report_stages(pt_run *R) {
    if (!R->o->pipe || R->timed) return;
    R->timed = 1;
    char line[2048];
    ts_stage_plan_report(R->o->pipe, R->o->train, R->sh->accumulation, line, sizeof line,
                         R->metrics ? ts_write_stdio : NULL, R->metrics);
    ts_progress_print(&R->pr, "%s: %s\n", R->name, line);
}

static ts_status pt_after(void *ctx, int64_t step, int last) {
    pt_run *R = ctx;
    const ts_pretrain_run_opts *o = R->o;
    if (o->profile) ts_train_profile_warmup(o->train, R->step0, step, last, &R->prof_from);
    if (!R->nheld || !(step % o->eval_every == 0 || last)) {
        if (last) report_stages(R);
        return TS_OK;
    }
    if (ts_program_copy_params(o->infer, o->train) < 0 ||
        ts_pretrain_heldout_eval(o->infer, R->held, &R->acc, &R->nacc, &R->eloss) != TS_OK)
        return ts_set_error(ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME, "evaluating: %s", ts_last_error());
    double ns = R->n_sum ? (double)R->n_sum : NAN;
    ts_progress_print(&R->pr,
                      "step %lld: train loss %.4f (mlm %.4f, nsp %.4f); held-out MLM accuracy %.2f%%, "
                      "MLM loss %.4f, NSP accuracy %.2f%%; %.0f s\n",
                      (long long)step, R->sum / ns, R->sum_mlm / ns, R->sum_nsp / ns, 100 * R->acc, R->eloss,
                      100 * R->nacc, ts_seconds() - R->pr.t0);
    ts_metrics_write(R->metrics ? ts_write_stdio : NULL, R->metrics,
                     "\"step\": %lld, \"heldout_mlm_accuracy\": %.6f, \"heldout_mlm_loss\": %.6f, "
                     "\"heldout_nsp_accuracy\": %.6f",
                     (long long)step, R->acc, R->eloss, R->nacc);
    R->sum = R->sum_mlm = R->sum_nsp = 0, R->n_sum = 0;
    report_stages(R);
    return TS_OK;
}

/* The model directory OUT (rank 0 alone: every rank holds the same); an error line and
 * TS_ERR_IO when it cannot be written. */
static ts_status save_model(pt_run *R) {
    if (R->rank > 0 || ts_model_save_dir(R->o->out_dir, R->o->train, R->o->cfg, R->o->vocab, &R->meta) == TS_OK)
        return TS_OK;
    ts_writef(R->o->err, R->o->err_ctx, "%s: %s\n", R->name, ts_last_error());
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", ts_last_error());
    return ts_set_error(TS_ERR_IO, "%s", msg);
}

static ts_status pt_checkpoint(void *ctx, int64_t step) {
    pt_run *R = ctx;
    const ts_pretrain_run_opts *o = R->o;
    if (o->save_every && step % o->save_every == 0 && step < R->sh->max_steps && save_model(R))
        return ts_set_error(TS_ERR_IO, "saving the model at step %lld", (long long)step);
    if (ts_pretrain_ckpt_save(o->out_dir, step, o->train, R->reader, R->sh, o->corpus, o->ncorpus, o->keep)) {
        ts_writef(o->err, o->err_ctx, "\n%s: %s\n", R->name, ts_last_error());
        return ts_set_error(TS_ERR_IO, "saving a checkpoint at step %lld", (long long)step);
    }
    return TS_OK;
}

/* The corpus split, its reader and the held-out batches. */
static ts_status pt_data(pt_run *R) {
    const ts_pretrain_run_opts *o = R->o;
    const ts_pretrain_shape *sh = R->sh;
    char train_name[64], held_name[64];
    snprintf(train_name, sizeof train_name, ".pretrain-train.%ld.txt", (long)getpid());
    snprintf(held_name, sizeof held_name, ".pretrain-heldout.%ld.txt", (long)getpid());
    if (ts_path_join(R->train_path, sizeof R->train_path, o->out_dir, train_name) ||
        ts_path_join(R->held_path, sizeof R->held_path, o->out_dir, held_name))
        return fail(R, 1, "%s: out_dir: %s\n", R->name, ts_last_error());
    int64_t ndocs, nheld;
    double t_split = ts_seconds();
    ts_status st = ts_pretrain_split_holdout(o->corpus, o->ncorpus, R->train_path, R->held_path, &ndocs, &nheld);
    if (st != TS_OK) return fail(R, st == TS_ERR_ARG, "%s: %s%s\n", R->name, st == TS_ERR_ARG ? "corpus: " : "",
                                 ts_last_error());
    ts_writef(o->out, o->out_ctx, "%s: %d file%s, %lld documents: %lld held out for evaluation (%.1f s)\n", R->name,
              o->ncorpus, o->ncorpus == 1 ? "" : "s", (long long)ndocs, (long long)nheld, ts_seconds() - t_split);
    if (ndocs == 0) return fail(R, 1, "%s: the corpus files hold no text\n", R->name);
    ts_pretrain_opts po = ts_pretrain_defaults();
    po.files = (const char *const[]){R->train_path};
    po.nfiles = 1;
    po.batch_size = sh->batch;
    po.max_len = sh->max_len;
    po.mask_prob = sh->mask_prob;
    po.whole_word = sh->wwm;
    po.max_predictions = sh->max_predictions;
    po.seed = (uint64_t)sh->seed;
    po.shard = R->rank, po.num_shards = sh->ranks; /* replicas: batches dealt round-robin */
    ts_pretrain_opts train_po = po;
    train_po.pack = sh->pack; /* the held-out set stays a pair a row */
    if (!(R->reader = ts_pretrain_open(o->tok, &train_po))) return fail(R, 1, "%s: %s\n", R->name, ts_last_error());
    if (nheld && !(R->held = ts_pretrain_heldout_read(o->tok, R->held_path, &po, o->eval_batches)))
        return fail(R, 0, "%s: %s\n", R->name, ts_last_error());
    R->nheld = o->infer ? ts_pretrain_heldout_batches(R->held) : 0;
    return TS_OK;
}

/* resume: the newest checkpoint, checked against this run's shape and restored. */
static ts_status pt_resume(pt_run *R) {
    const ts_pretrain_run_opts *o = R->o;
    char ckpt[4300];
    int planned = R->sh->max_steps;
    ts_status st = ts_train_checkpoint_find_on(o->comm, o->resume, ckpt, sizeof ckpt);
    if (st == TS_ERR_COMM) return fail(R, 0, "%s: resuming: %s\n", R->name, ts_last_error());
    if (st) return R->rank == 0 ? fail(R, 1, "%s: resume: %s\n", R->name, ts_last_error()) : TS_ERR_ARG;
    st = ts_pretrain_ckpt_load(ckpt, o->train, R->reader, R->sh, o->corpus, o->ncorpus, &R->step, &planned);
    if (planned != R->sh->max_steps)
        ts_writef(o->out, o->out_ctx, "%s: the checkpoint's run planned %g steps; the schedule now ends at %g\n",
                  R->name, (double)planned, (double)R->sh->max_steps);
    if (st != TS_OK) return fail(R, 1, "%s: %s\n", R->name, ts_last_error());
    ts_writef(o->out, o->out_ctx, "%s: resuming from %s at step %lld\n", R->name, ckpt, (long long)R->step);
    if (R->step % o->device_iterations)
        return fail(R, 1, "%s: the checkpoint's step %lld is not a multiple of device_iterations %d\n", R->name,
                    (long long)R->step, o->device_iterations);
    return TS_OK;
}

/* The metrics log, the batch buffers and the lines that describe the run. */
static ts_status pt_start(pt_run *R) {
    const ts_pretrain_run_opts *o = R->o;
    const ts_pretrain_shape *sh = R->sh;
    const int N = sh->accumulation, K = o->device_iterations, RN = sh->ranks;
    if (ts_replicas_check_params(o->comm, o->train, o->resume ? "after resuming" : "at the start"))
        return fail(R, 0, "%s: %s\n", R->name, ts_last_error());
    char path[4200];
    if (ts_path_join(path, sizeof path, o->out_dir, "metrics.jsonl"))
        return fail(R, 1, "%s: out_dir: %s\n", R->name, ts_last_error());
    if (R->rank == 0 && !(R->metrics = fopen(path, o->resume ? "a" : "w"))) /* a resumed run continues the log */
        return fail(R, 0, "%s: %s: %s\n", R->name, path, strerror(errno));
    ts_write_fn mw = R->metrics ? ts_write_stdio : NULL;
    if (!o->resume) /* the batch the step trains on: rows of a micro-batch, micro-batches, replicas */
        ts_metrics_write(mw, R->metrics, "\"batch\": {\"rows\": %d, \"micro_batches\": %d, \"replicas\": %d, "
                         "\"global\": %d}", sh->batch, N, RN, N * sh->batch * RN);
    if (o->pipe) ts_stage_plan_describe(o->pipe, o->train, N, R->name, mw, R->metrics, 1);
    ts_replicas_describe(o->comm, sh->shard, o->train, R->name, o->out, o->out_ctx, mw, R->metrics);
    int P = ts_pretrain_packed_predictions(sh->max_predictions, sh->max_len, sh->pack); /* as pretrain_job.c's */
    if (!ts_batch_buf_init_slices(&R->bb, sh->batch, sh->max_len, 2, N * K, P) ||
        (sh->pack > 1 && !ts_pack_buf_init(&R->pb, sh->batch, sh->max_len, sh->pack, N * K, 1)))
        return fail(R, 0, "%s: out of memory\n", R->name);
    ts_memory mem = {.struct_size = sizeof mem};
    ts_program_memory(o->train, &mem);
    ts_writef(o->out, o->out_ctx, "%s: BERT %d layers x %d hidden, %d heads, FFN %d, vocab %d, %.1f M parameters; "
              "batch %d x %d tokens, up to %d steps%s, %s, lr %g%s\n", R->name,
              sh->layers, sh->hidden, sh->heads, sh->inter, sh->vocab_size, mem.params / (sh->weights16 ? 2e6 : 4e6),
              sh->batch, sh->max_len,
              sh->max_steps, o->max_minutes > 0 ? " or the time limit" : "",
              ts_optim_kind_name((ts_optim_kind)sh->optimizer), sh->lr,
              sh->bf16 ? ", bf16 compute" : sh->fp16 ? ", fp16 compute with loss scaling" : "");
    double np = (double)mem.params / (sh->weights16 ? 2 : 4); /* every parameter is stored in one dtype */
    ts_writef(o->out, o->out_ctx, "%s: memory a parameter: weights %.2f + gradients %.2f + optimizer state %.2f = %.2f "
              "bytes (%s%s)\n", R->name, mem.params / np, mem.grads / np, mem.optimizer_state / np,
              (mem.params + mem.grads + mem.optimizer_state) / np,
              sh->weights16 ? (sh->fp16 ? "fp16-sr" : "bf16-sr") : sh->bf16 ? "bf16" : sh->fp16 ? "fp16" : "f32",
              N > 1 || RN > 1 ? "; gradients include the f32 accumulators"
              : mem.grads == 0 ? "; each gradient freed by its update inside the backward pass" : "");
    ts_metrics_write(mw, R->metrics, "\"memory_bytes_per_parameter\": {\"weights\": %.3f, \"gradients\": %.3f, "
                     "\"optimizer_state\": %.3f}", mem.params / np, mem.grads / np, mem.optimizer_state / np);
    ts_writef(o->out, o->out_ctx, "%s: %d micro-batch%s of %d per step%s (effective batch %d), %d step%s per "
                  "program call\n", R->name, N, N == 1 ? "" : "es", sh->batch, RN > 1 ? " on each replica" : "",
                  N * sh->batch * RN, K, K == 1 ? "" : "s");
    ts_writef(o->out, o->out_ctx, "%s: held-out set: %d batches of %d sequences\n", R->name, R->nheld, sh->batch);
    return TS_OK;
}

/* The profile's report, when asked for. */
static ts_status pt_profile(pt_run *R, int64_t step) {
    const ts_pretrain_run_opts *o = R->o;
    if (!o->profile || ts_train_profile_print(o->train, o->comm, R->step0, R->prof_from, step, o->out, o->out_ctx) == TS_OK)
        return TS_OK;
    return fail(R, 0, "%s: the profile: %s\n", R->name, ts_last_error());
}

/* Train to the end (ts_train with the hooks above), then write the model. */
static ts_status pt_train(pt_run *R) {
    const ts_pretrain_run_opts *o = R->o;
    const ts_pretrain_shape *sh = R->sh;
    const int N = sh->accumulation, RN = sh->ranks;
    double max_s = o->max_minutes * 60;
    ts_progress_init(&R->pr, sh->max_steps, max_s, o->tty, o->out, o->out_ctx);
    static const char *const losses[] = {"loss", "mlm_loss", "nsp_loss"};
    static const char *const extra[] = {"optimizer@LOSS_SCALE", "optimizer@SKIPPED_STEPS"};
    static const char *const extra_keys[] = {"loss_scale", "skipped_steps"};
    ts_train_spec spec = {.struct_size = sizeof spec, .program = o->train, .micro_batches = N,
                          .steps_per_call = o->device_iterations, .lr = (float)sh->lr, .warmup = sh->warmup,
                          .total_steps = sh->max_steps, .max_seconds = max_s, .losses = losses, .nlosses = 3,
                          .extra = extra, .extra_keys = extra_keys, .nextra = sh->fp16 ? 2 : 0,
                          .skip_nonfinite = sh->fp16, .save_every = o->save_every, .stop_after = o->stop_after,
                          .metrics = R->metrics ? ts_write_stdio : NULL, .metrics_ctx = R->metrics,
                          .comm = RN > 1 ? o->comm : NULL};
    ts_train_hooks hooks = {.ctx = R, .fill = pt_fill, .feed = pt_feed, .on_step = pt_step, .after_call = pt_after,
                            .checkpoint = pt_checkpoint};
    ts_train_result res;
    ts_status tst = ts_train(&spec, &hooks, R->step, &res);
    int64_t step = res.step, step0 = R->step0;
    if (tst && !R->no_pairs) return fail(R, 0, "\n%s: %s\n", R->name, ts_last_error());
    if (tst)
        return fail(R, 1, "%s: the corpus (%s%s) holds no sentence pairs: it needs documents of two or more sentences "
                    "(one a line), or two or more documents (blank lines between)\n",
                    R->name, o->corpus[0], o->ncorpus > 1 ? ", ..." : ""); /* name the user's files */
    if (res.stopped) {
        ts_progress_print(&R->pr, "%s: stopped after step %lld, as asked; its checkpoint is in %s, to resume from\n", R->name,
                          (long long)step, o->out_dir);
        return pt_profile(R, step);
    }
    if (ts_replicas_check_params(o->comm, o->train, "at the end")) return fail(R, 0, "%s: %s\n", R->name, ts_last_error());
    if ((tst = save_model(R))) return tst;
    double el = ts_seconds() - R->pr.t0;
    double padded = 0, served = 0;
    ts_pretrain_efficiency(R->reader, &padded, &served);
    ts_progress_print(&R->pr, "%s: packing efficiency (real tokens / slots) %.1f%% a pair a row, %.1f%% as trained%s\n",
                      R->name, 100 * padded, 100 * served, sh->pack > 1 ? " (packed)" : "");
    ts_writef(o->out, o->out_ctx, "%s: %lld steps in %.0f s (%.1f seq/s)", R->name, (long long)(step - step0), el,
              (double)R->seqs * RN / (el > 0 ? el : 1));
    if (step0) ts_writef(o->out, o->out_ctx, ", steps %lld to %lld", (long long)step0 + 1, (long long)step);
    if (R->acc >= 0)
        ts_writef(o->out, o->out_ctx, "; held-out MLM accuracy %.2f%%, NSP accuracy %.2f%%", 100 * R->acc, 100 * R->nacc);
    ts_writef(o->out, o->out_ctx, "; wrote %s\n", o->out_dir);
    return pt_profile(R, step);
}

ts_status ts_pretrain_run(const ts_pretrain_run_opts *o) {
    ts_pretrain_run_opts oc;
    if (TS_STRUCT_READ(&oc, o, ts_pretrain_run_opts, "ts_pretrain_run")) return TS_ERR_ARG;
    o = &oc;
    if (!o->tok || !o->cfg || !o->train || !o->shape || !o->corpus || o->ncorpus < 1 || !o->out_dir || !o->vocab ||
        o->device_iterations < 1 || o->eval_every < 1)
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_run: tok, cfg, train, shape, corpus, vocab and out_dir are "
                                        "needed, device_iterations and eval_every at least 1");
    pt_run *R = calloc(1, sizeof *R);
    if (!R) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    *R = (pt_run){.o = o, .sh = o->shape, .name = o->name ? o->name : "pretrain", .acc = -1, .nacc = -1,
                  .meta = {.max_len = o->shape->max_len, .lowercase = !o->shape->cased}, .prof_from = -1,
                  .rank = o->comm ? ts_comm_rank(o->comm) : 0};
    ts_status st = pt_data(R);
    if (!st && !(o->resume && (st = pt_resume(R)))) {
        R->step0 = R->step;
        st = pt_start(R);
        if (!st) st = pt_train(R);
    }
    if (R->train_path[0]) unlink(R->train_path), unlink(R->held_path);
    if (R->metrics) fclose(R->metrics);
    ts_batch_buf_free(&R->bb);
    ts_pack_buf_free(&R->pb);
    ts_pretrain_heldout_free(R->held);
    ts_pretrain_close(R->reader);
    free(R);
    return st;
}
