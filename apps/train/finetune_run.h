/*
 * finetune_run.h — what the files of a fine-tuning run (tessera_tasks.h: ts_finetune_run) share:
 * the run's state, and its steps. finetune_run.c checks the options and runs the steps in order;
 * finetune_run_loop.c holds the steps both tasks take (programs, weights, resume, the metrics log,
 * the epochs); finetune_run_cls.c and finetune_run_qa.c the data and the task of each.
 */
#ifndef TS_FINETUNE_RUN_H
#define TS_FINETUNE_RUN_H

#include <stdio.h>

#include "common/app.h"
#include "train/train_setup.h"

/* A run: the options as read, what it has made, and what its task needs. */
typedef struct ft_run {
    ts_finetune_run_opts o;   /* the caller's, read (TS_STRUCT_READ) with the defaults filled in */
    const char *name;         /* the lines' prefix */
    int task;                 /* TS_FINETUNE_CLASSIFY or TS_FINETUNE_QA */
    int truncation;           /* TS_TRUNC_* of o.truncate */
    int rank, ranks;          /* replicas (0 and 1 without) */
    ts_bert_config cfg;
    ts_model_meta meta;
    ts_tokenizer *tok;
    ts_text_dataset *rows, *test_rows; /* classify */
    ts_squad *squad, *squad_dev;       /* qa */
    ts_program *tp, *ip;
    int seq;                  /* tokens per row, as used */
    int nmissing;             /* parameters not loaded from model_dir (new) */
    int64_t step;             /* a resumed run's */
    ts_stage_plan pipe;       /* o.devices as a pipeline, when piped */
    int piped;
    FILE *metrics_file;       /* out_dir/metrics.jsonl (rank 0) */
    ts_finetune_task *task_state;
    char vocab[4200];         /* model_dir/vocab.txt, copied into out_dir */
} ft_run;

/* An error line "NAME: ..." (fmt holds the prefix) to err and the status: TS_ERR_ARG when `usage`
 * (the options or inputs are at fault), else the thread's last error's code (TS_ERR_RUNTIME for
 * none, or for TS_ERR_ARG). The message stays in ts_last_error(). */
ts_status ft_fail(const ft_run *R, int usage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* finetune_run_cls.c: the rows (ts_classify_rows_load), the row length, the labels into meta and
 * cfg; the summary line and the task (ts_classify_task_new) into *t. */
ts_status ft_cls_data(ft_run *R);
ts_status ft_cls_task(ft_run *R, ts_epoch_task *t);
/* finetune_run_qa.c: the row length and windows, the SQuAD files, meta; the summary line and the
 * task (ts_squad_task_new) into *t. */
ts_status ft_qa_data(ft_run *R);
ts_status ft_qa_task(ft_run *R, ts_epoch_task *t);

/* finetune_run_loop.c: the pipeline (placed and, for stages auto, measured), the programs and
 * model_dir's weights loaded (for the head of cfg, fetching the task's outputs). */
ts_status ft_build(ft_run *R);
/* Resume when asked, make out_dir, open the metrics log and write the pipeline's row. */
ts_status ft_start(ft_run *R);
/* The options that both tasks' ts_finetune_task_opts share (sinks, programs, sizes, decoding). */
ts_finetune_task_opts ft_task_opts(ft_run *R);
/* Steps in one epoch of n rows; the run's total (max_steps when fewer). */
int64_t ft_total_steps(const ft_run *R, int64_t n);
/* ts_train_epochs over task t from R->step. */
ts_status ft_epochs(ft_run *R, const ts_epoch_task *t);
/* Free what the run made. */
void ft_free(ft_run *R);

#endif
