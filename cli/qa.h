/*
 * qa.h — question answering in the `tessera` command (BertForQuestionAnswering on SQuAD v1.1),
 * the pieces `finetune --task qa`, `eval` and `predict` share: reading and checking a SQuAD
 * file, the model's start / end logits over every doc-stride window, the best answer of each
 * question (ts_squad_best_span) and EM / F1 (ts_squad_evaluate), and opening a QA model
 * directory for inference.
 */
#ifndef TS_CLI_QA_H
#define TS_CLI_QA_H

#include "train_common.h"

#define TS_QA_N_BEST 20         /* start and end candidates per window, as run_squad */
#define TS_QA_MAX_ANSWER_LEN 30 /* pieces in an answer, as run_squad */

/* The defaults of the windows for a row length: doc_stride min(128, max_len / 3), max_query_len
 * min(64, max_len / 4) (run_squad's 128 and 64 at 384 tokens, scaled down for short rows). */
int ts_qa_default_stride(int max_len);
int ts_qa_default_query(int max_len);

/* Read a SQuAD file (`flag` names where it came from: "--train"). With need_answers every
 * question must have an answer whose text occurs in its context (as training and scoring need).
 * Prints the error naming the flag, the file and the question, and returns NULL. */
ts_squad *ts_qa_load(const char *cmd, const char *flag, const char *path, const ts_tokenizer *tok,
                     const ts_squad_opts *so, int need_answers);

/* Run the inference program (a TS_BERT_QUESTION_ANSWERING of batch x seq, fetching start_logits
 * and end_logits) over every feature of s; *start and *end get malloc'd [F, T] arrays (free()).
 * 0, or prints the error and returns 1. */
int ts_qa_logits(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, float **start,
                 float **end);

/* The answer text of example i from the logits: a malloc'd string, "" when no span qualifies.
 * NULL on out of memory. */
char *ts_qa_answer(const ts_squad *s, int64_t i, const float *start, const float *end, int n_best,
                   int max_answer_len);

/* EM and F1 (percent) of the inference program on s. 0, or prints the error and returns 1. */
int ts_qa_score(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, int n_best,
                int max_answer_len, double *em, double *f1);

/* Feed the inputs of a batch of features (ts_squad_batch into bb) to an inference program. The
 * training loop fills its labelled batches itself (finetune_qa.c). */
ts_status ts_qa_feed(ts_program *p, const ts_squad *s, const int64_t *features, int n, int batch, ts_batch_buf *bb);

/* `tessera predict` on a question-answering model directory (predict_qa.c): the questions of
 * `data` (a SQuAD .json file, else JSON lines; NULL: JSON lines on stdin), one answer printed a
 * line. Returns the exit code. */
int ts_predict_qa(const char *model, const ts_bert_config *cfg, const ts_model_meta *meta, const ts_tokenizer *tok,
                  const char *data, int batch, int threads, int n_best, int max_answer_len);

#endif
