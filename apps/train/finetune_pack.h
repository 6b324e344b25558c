/*
 * finetune_pack.h — packed sequences in a fine-tuning run (ts_finetune_run_opts.pack,
 * finetune_run_pack.c): the classification texts packed into rows, the task's fill and feed
 * wrapped to encode and feed those rows, and the run's packing efficiency and sequences per
 * second. Also the classify task over a given number of training rows (finetune_run_cls.c).
 */
#ifndef TS_FINETUNE_PACK_H
#define TS_FINETUNE_PACK_H

#include "train/finetune_run.h"

typedef struct ft_pack ft_pack;

/* Classification: the texts' lengths and, with R->o.pack S > 1, their packing into rows of R->seq
 * tokens (ts_pack_sequences; R->cfg.max_sequences_per_pack set to S, so build the programs after);
 * the line of the packing efficiency (real tokens / slots) a text a row and packed. *out gets the
 * state (free with ft_pack_free); TS_OK, or the error line written. */
ts_status ft_pack_new(ft_run *R, ft_pack **out);
/* The rows an epoch runs over: packed rows, or texts. */
int64_t ft_pack_rows(const ft_pack *pk);
/* Wrap task t (ft_cls_task_rows'): packed rows encoded and fed (when packed), the sequences trained
 * counted and, in the last line, their rate (seconds without the evaluations). */
ts_status ft_pack_wrap(ft_pack *pk, ts_epoch_task *t);
void ft_pack_free(ft_pack *pk);

/* finetune_run_cls.c: ft_cls_task for an epoch of nrows training rows (texts, or packed rows). */
ts_status ft_cls_task_rows(ft_run *R, ts_epoch_task *t, int64_t nrows);

#endif
