/*
 * pretrain_ckpt.h — full-state checkpoints of `tessera pretrain` (pretrain_ckpt.c): what a run
 * must keep to continue exactly — the program's parameters, optimizer state and step (which seeds
 * dropout) through ts_program_save_state, and in trainer.json the data reader's position, the
 * options that shape the run and the corpus files' sizes — and how `--resume DIR` finds and
 * checks the newest valid checkpoint. With replicas each rank's reader position goes into its own
 * part of the checkpoint (ts_program_save_state_parts).
 */
#ifndef TS_CLI_PRETRAIN_CKPT_H
#define TS_CLI_PRETRAIN_CKPT_H

#include <stdint.h>

#include "tessera.h"

/* The options that must be the same to resume (besides the corpus), by flag name. */
typedef struct pt_shape {
    int layers, hidden, heads, inter, max_len, batch, seed, wwm, bf16, vocab_size, max_steps;
    int deterministic, threads; /* threads: the pinned count under --deterministic, else 0 */
    int fp16, accumulation, max_predictions, cased;
    int optimizer; /* ts_optim_kind */
    int ranks, shard; /* replicas (mpirun -np) and --shard-optimizer: a checkpoint without them had 1 and 0 */
    double lr, warmup, wd, dropout, mask_prob, max_grad_norm, momentum;
} pt_shape;

/* Write checkpoint OUT/checkpoints/step-<step> atomically and keep the newest `keep`. 0, or
 * prints the error (naming the directory) and returns 1. */
int pt_ckpt_save(const char *out, int64_t step, ts_program *p, const ts_pretrain_reader *r, const pt_shape *shape,
                 const char *const *corpus, int ncorpus, int keep);

/* Restore program p and reader r from checkpoint `path` after checking that it was made with the
 * same shape (max_steps may differ: the schedule then ends at the new value) and corpus. *step
 * gets the steps done. 0, or prints the error naming the checkpoint and the flag that differs and
 * returns 2 (1 on a failure to read). */
int pt_ckpt_load(const char *path, ts_program *p, ts_pretrain_reader *r, const pt_shape *shape,
                 const char *const *corpus, int ncorpus, int64_t *step);

#endif
