/*
 * finetune.h — the options of `tessera finetune`, shared by its two trainers: sequence
 * classification (single texts or text pairs, finetune.c) and question answering on SQuAD
 * (finetune_qa.c).
 */
#ifndef CLI_FINETUNE_H
#define CLI_FINETUNE_H

#include <stdint.h>

#include "tessera.h"
#include "train_common.h"

typedef struct ft_opts {
    const char *model, *train, *dev, *out, *task, *text_col, *text_b_col, *label_col, *resume, *truncate;
    const char *optimizer; /* --optimizer adamw|lamb|sgd */
    double test_split, lr, warmup, wd, max_minutes, max_grad_norm, momentum;
    int accumulation, device_iterations; /* micro-batches per optimizer step; steps per program call */
    const char *devices, *stages;        /* --devices / --stages: a pipeline */
    const char *device;                  /* --device DEV: one device (taken as a --devices of one) */
    int micro_batches;
    int epochs, batch, max_len, max_steps, save_every, seed, threads, bf16, keep, stop_after;
    int split_seed; /* --split-seed: the train/test split's shuffle (-1: --seed's) */
    int recompute, deterministic, fp16;
    int test_every;  /* classify: test after every N-th epoch (and the last); 0: after the last only */
    int random_init; /* classify: DIR's shape and vocabulary, its weights not loaded (drawn from --seed) */
    int truncation; /* --truncate, parsed: TS_TRUNC_* (TS_TRUNC_HEAD without the flag) */
    int doc_stride, max_query_len, max_answer_len, n_best; /* qa; 0: the default */
    int relocate_answers; /* qa: --relocate-answers (ts_squad_opts.relocate_answers) */
    int profile;          /* --profile: report where the training step's time went, at the end */
} ft_opts;

/* Train task t (ts_train_epochs with the flags of o, the metrics rows into `metrics`, the
 * replicas of cli_rep) from `step` (a resumed run's). Returns the exit code. */
int ft_train_loop(const ft_opts *o, const ts_epoch_task *t, int64_t step, FILE *metrics);

/* The options of a task (ts_classify_task_new, ts_squad_task_new) common to both, from o: the lines
 * to stdout and stderr, the metrics rows to `metrics`, programs tp and ip of `slices` micro-batches
 * of [batch, seq], qa's decoding (its defaults without the flags). */
ts_finetune_task_opts ft_task_opts(const ft_opts *o, ts_program *tp, ts_program *ip, int seq, int slices,
                                   FILE *metrics);

/* Steps in one epoch of n rows, under o's batch, accumulation and device iterations
 * (ts_epoch_steps). */
int64_t ft_steps_per_epoch(const ft_opts *o, int64_t n);

/* The optimizer and loop options of o, for cli_bert_programs; with --devices, the pipeline of a
 * model of config cfg with head `head` at sequence length seq (placed and, for --stages auto,
 * measured here). 0, or prints the error and returns the exit code. */
int ft_loop_opts(const ft_opts *o, const ts_bert_config *cfg, ts_bert_head head, int seq, cli_train_loop *loop);
/* With --devices: print the pipeline's stages (metrics NULL) or log them. */
void ft_describe(const ft_opts *o, ts_program *tp, FILE *metrics);

/* `tessera finetune --task qa`: fine-tune BertForQuestionAnswering on a SQuAD v1.1 file.
 * Returns the exit code (0, 1 failure while running, 2 bad input). */
int cli_finetune_qa(const ft_opts *o);

/* Full-state checkpoints (finetune_loop.c: ts_finetune_ckpt_save / _load). Save
 * OUT/checkpoints/step-<step> of program p with
 * the options that shape the run (task "classify" or "qa", the row length and QA windows as
 * used); 0, or prints the error and returns 1. */
int ft_ckpt_save(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len, int64_t step,
                 const ts_program *p);
/* --resume: find the newest valid checkpoint of o->resume, check its options against these,
 * restore p from it and set *step. 0, or prints the error and returns 2. */
int ft_ckpt_resume(const ft_opts *o, const char *task, int seq, int doc_stride, int max_query_len, ts_program *p,
                   int64_t *step);

#endif
