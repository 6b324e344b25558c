/*
 * qa.h — question answering in the `tessera` command (BertForQuestionAnswering on SQuAD v1.1),
 * what `finetune --task qa`, `eval` and `predict` share: a SQuAD file read and checked, and the
 * library's logits and scores (tessera_tasks.h) with their errors printed.
 */
#ifndef CLI_QA_H
#define CLI_QA_H

#include "train_common.h"

/* Read a SQuAD file (`flag` names where it came from: "--train") and check it (ts_squad_check:
 * with need_answers every question must have an answer whose text occurs in its context).
 * Prints the error naming the flag, the file and the question, and returns NULL. */
ts_squad *cli_qa_load(const char *cmd, const char *flag, const char *path, const ts_tokenizer *tok,
                      const ts_squad_opts *so, int need_answers);

/* ts_squad_logits; 0, or prints the error and returns 1. */
int cli_qa_logits(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, float **start,
                  float **end);

/* ts_squad_score_program: EM and F1 (percent); 0, or prints the error and returns 1. */
int cli_qa_score(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, int n_best,
                 int max_answer_len, double *em, double *f1);

/* `tessera predict` on a question-answering model directory (predict_qa.c): the questions of
 * `data` (a SQuAD .json file, else JSON lines; NULL: JSON lines on stdin), one answer printed a
 * line. Returns the exit code. */
int cli_predict_qa(const char *model, const ts_bert_config *cfg, const ts_model_meta *meta, const ts_tokenizer *tok,
                   const char *data, int batch, int threads, int n_best, int max_answer_len);

#endif
