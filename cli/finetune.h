/*
 * finetune.h — the options of `tessera finetune`, shared by its two trainers: sequence
 * classification (single texts or text pairs, finetune.c) and question answering on SQuAD
 * (finetune_qa.c).
 */
#ifndef TS_CLI_FINETUNE_H
#define TS_CLI_FINETUNE_H

typedef struct ft_opts {
    const char *model, *train, *dev, *out, *task, *text_col, *text_b_col, *label_col;
    double test_split, lr, warmup, wd, max_minutes;
    int epochs, batch, max_len, max_steps, save_every, seed, threads, bf16;
    int doc_stride, max_query_len, max_answer_len, n_best; /* qa; 0: the default */
} ft_opts;

/* `tessera finetune --task qa`: fine-tune BertForQuestionAnswering on a SQuAD v1.1 file.
 * Returns the exit code (0, 1 failure while running, 2 bad input). */
int ts_finetune_qa(const ft_opts *o);

#endif
