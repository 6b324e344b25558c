/*
 * finetune.h — the options of `tessera finetune`, shared by its two trainers: sequence
 * classification (single texts or text pairs, finetune.c) and question answering on SQuAD
 * (finetune_qa.c).
 */
#ifndef TS_CLI_FINETUNE_H
#define TS_CLI_FINETUNE_H

#include <stdint.h>

#include "tessera.h"
#include "train_common.h"

typedef struct ft_opts {
    const char *model, *train, *dev, *out, *task, *text_col, *text_b_col, *label_col, *resume, *truncate;
    double test_split, lr, warmup, wd, max_minutes, max_grad_norm;
    int epochs, batch, max_len, max_steps, save_every, seed, threads, bf16, keep, stop_after;
    int split_seed; /* --split-seed: the train/test split's shuffle (-1: --seed's) */
    int recompute, deterministic, fp16;
    int truncation; /* --truncate, parsed: TS_TRUNC_* (TS_TRUNC_HEAD without the flag) */
    int doc_stride, max_query_len, max_answer_len, n_best; /* qa; 0: the default */
} ft_opts;

/* One training step of either trainer, its batch already fed: feed lr (into lr_t), run, read
 * "loss"; stop on a non-finite loss (under --fp16 the step is skipped instead: an overflow that
 * lowered the loss scale); count the step in *step, add a finite loss to *loss_sum / *loss_n,
 * update the progress line and write the metrics row (rows: sequences in the batch, for the
 * rate; *t_last: when the previous step ended). 0, or prints the error and returns 1. */
int ft_train_step(const ft_opts *o, ts_program *tp, ts_tensor *lr_t, float lr, int rows, int epoch, int64_t *step,
                  double *loss_sum, int64_t *loss_n, double *t_last, ts_progress *pr, FILE *metrics);

/* `tessera finetune --task qa`: fine-tune BertForQuestionAnswering on a SQuAD v1.1 file.
 * Returns the exit code (0, 1 failure while running, 2 bad input). */
int ts_finetune_qa(const ft_opts *o);

/* Full-state checkpoints (finetune_ckpt.c). Save OUT/checkpoints/step-<step> of program p with
 * the options that shape the run (task "classify" or "qa", the row length and QA windows as
 * used); 0, or prints the error and returns 1. */
int ft_ckpt_save(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len, int64_t step,
                 const ts_program *p);
/* --resume: find the newest valid checkpoint of o->resume, check its options against these,
 * restore p from it and set *step. 0, or prints the error and returns 2. */
int ft_ckpt_resume(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len, ts_program *p,
                   int64_t *step);

#endif
