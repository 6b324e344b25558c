/*
 * train_setup.h — internal to apps/train/: what a fine-tuning run (ts_finetune_run) and a
 * pretraining job (ts_pretrain_job) settle the same way before they train (train_setup.c): the
 * options they share checked together, the pipeline placed, the programs compiled (a layout refused
 * for memory kept for the planner).
 */
#ifndef TS_TRAIN_SETUP_H
#define TS_TRAIN_SETUP_H

#include <stdarg.h>

#include "common/app.h"

/* The options both runs have, by the names of their fields; the checks settle the last three. */
typedef struct tr_setup {
    const char *name;           /* the lines' prefix */
    ts_write_fn out, err;
    void *out_ctx, *err_ctx;
    const char *optimizer, *devices, *stages;
    double momentum, max_minutes;
    int bf16, fp16, profile, deterministic, micro_batches, device_iterations;
    int max_steps, save_every, stop_after, eval_every; /* eval_every: 0 for a run without one */
    int accumulation;           /* in: the field; out: micro_batches, or 2 per device for a pipeline */
    int threads;                /* in: the field; out: under deterministic, pinned (0: every online CPU) */
    int piped;                  /* out: devices is a pipeline (several devices, or stages given) */
    const char *precision;      /* in: a ts_precision_parse mode, or NULL (bf16 / fp16 say); out: bf16 and
                                   fp16 set from it */
    int round_nearest;          /* 16-bit weights rounded to nearest instead of stochastically */
} tr_setup;

/* An error line "NAME: ..." (fmt holds the prefix) to err and the status: TS_ERR_ARG when `usage`,
 * else the last error's code (TS_ERR_RUNTIME for none, or for TS_ERR_ARG). */
ts_status tr_fail(ts_write_fn err, void *err_ctx, int usage, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* tr_fail with the arguments as a va_list. */
ts_status tr_vfail(ts_write_fn err, void *err_ctx, int usage, const char *fmt, va_list ap);

/* An integer field of a run's options and its smallest value; a real field (finite, at least 0). */
typedef struct tr_int_field {
    const char *field;
    int value, min;
} tr_int_field;
typedef struct tr_real_field {
    const char *field;
    double value;
} tr_real_field;
/* Each field on its own, within its range: TS_OK, or TS_ERR_ARG with the line "NAME: FIELD VALUE:
 * at least MIN" (or "a finite number, at least 0") written to err for the first that is not. */
ts_status tr_check_ints(ts_write_fn err, void *err_ctx, const char *name, const tr_int_field *f, int n);
ts_status tr_check_reals(ts_write_fn err, void *err_ctx, const char *name, const tr_real_field *f, int n);

/* Check s's fields together (pipeline, optimizer, precision, steps per call, deterministic; each
 * message naming the fields) and settle accumulation, piped and threads; under deterministic a
 * line saying the threads to out. TS_OK, or TS_ERR_ARG with the error line written to err. */
ts_status tr_setup_check(tr_setup *s);

/* s's pipeline for the model cfg: parsed (ts_stage_plan_parse), and for stages auto measured with
 * batch x seq and s->accumulation micro-batches (ts_stage_plan_measure, comm's ranks agreeing; a
 * line to out first). TS_OK, or the error line to err and its code. */
ts_status tr_setup_place(const tr_setup *s, const ts_bert_config *cfg, int batch, int seq, ts_comm *comm,
                         ts_stage_plan *pp);

/* Compile bo's programs (ts_bert_train_programs; pp: the pipeline whose stages bo->cfg gets, else
 * NULL). On failure the error line to err, and for memory which of the run's numbers make them
 * that large (sizes_from: where the model's sizes came from), the layout kept for
 * ts_train_refused_layout; returns the code. */
ts_status tr_setup_programs(const tr_setup *s, const ts_bert_train_opts *bo, const ts_stage_plan *pp,
                            const char *sizes_from, ts_program **tp, ts_program **ip);

#endif
