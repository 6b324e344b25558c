/*
 * tessera_tasks.h — what the tessera command does, as library calls: resumable runs, held-out
 * evaluation, stage balancing, answer decoding, a whole pretraining run, training in epochs
 * over rows, the lines a run writes (progress, metrics rows, stages, replicas, profile) and
 * options read from flags and a JSON config. Each is what a `tessera` subcommand does between
 * reading its flags and printing its results, so a program of its own can do the same through
 * tessera.h (which includes this header). Errors are reported as everywhere in tessera (a
 * ts_status, the message in ts_last_error()); where a message concerns an option that the run
 * recorded by the name of the command's flag, it names that flag ("--resume DIR was made with
 * --layers 2, not 4").
 */
#ifndef TESSERA_TASKS_H
#define TESSERA_TASKS_H

#include "tessera_bert.h"
#include "tessera_checkpoint.h"
#include "tessera_core.h"
#include "tessera_devices.h"
#include "tessera_text.h"
#include "tessera_train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- optimizers by name */

/* "sgd", "adamw" or "lamb" for a ts_optim_kind ("?" for another value). */
TS_API const char *ts_optim_kind_name(ts_optim_kind k);
/* The ts_optim_kind named `name` ("sgd", "adamw", "lamb"), or -1 (error set, TS_ERR_ARG). */
TS_API int ts_optim_kind_parse(const char *name);

/* Training precision modes, by name (the tessera command's --precision):
 *   "f32"      everything in f32;
 *   "bf16"     products (matmuls) in bf16, f32 master weights, gradients and optimizer state
 *              (mixed precision, torch.autocast's); "fp16" the same in f16, with loss scaling;
 *   "bf16-sr"  weights, gradients, gradient accumulators and optimizer state stored in bf16 (8 bytes
 *              a parameter with Adam's two moments, against 16), every rounding of a weight or an
 *              accumulator's update stochastic (ts_cast_stochastic); "fp16-sr" the same in f16, with
 *              loss scaling (Graphcore's BERT).
 * *compute gets the products' dtype and *weights the stored dtype (either may be NULL); TS_ERR_ARG
 * naming the mode and the known ones. */
TS_API ts_status ts_precision_parse(const char *mode, ts_dtype *compute, ts_dtype *weights);
/* The mode's name for that pair ("?" for a pair that is no mode). */
TS_API const char *ts_precision_name(ts_dtype compute, ts_dtype weights);

/* ---------------------------------------------------------------- resumable runs */

/* A checkpoint to resume from, chosen by rank 0 among ranks `comm` (NULL: one process): rank 0
 * runs ts_train_checkpoint_find and every rank gets its path in path[cap]. TS_ERR_COMM when the
 * ranks cannot agree; on the other ranks, rank 0's failure's code. */
TS_API ts_status ts_train_checkpoint_find_on(ts_comm *comm, const char *resume, char *path, size_t cap);

/* The options that a pretraining run must keep to resume (besides the corpus), as the tessera
 * pretrain flags of the same names (vocab_size is the vocabulary's size; optimizer a
 * ts_optim_kind; threads the pinned count under deterministic, else 0; ranks and shard the
 * replicas and ZeRO-1 sharding: 1 and 0 without). max_steps may change between the pieces of a
 * run (the schedule then ends at the new value). */
typedef struct ts_pretrain_shape {
    int layers, hidden, heads, inter, max_len, batch, seed, wwm, bf16, vocab_size, max_steps;
    int deterministic, threads;
    int fp16, accumulation, max_predictions, cased;
    int optimizer;
    int ranks, shard;
    double lr, warmup, wd, dropout, mask_prob, max_grad_norm, momentum;
    int pack;   /* pairs a row (0 or 1: unpacked; a checkpoint without it: 0) */
    int weights16; /* 1: weights, gradients and optimizer state in 16 bits (a "-sr" precision; absent: 0) */
} ts_pretrain_shape;

/* Write checkpoint OUT/checkpoints/step-<step> of a pretraining run (ts_train_checkpoint_save_parts:
 * program p's parameters, optimizer state and step; reader r's position; the shape and the corpus
 * files' sizes) atomically, keeping the newest `keep`. With shape->ranks > 1 a collective: each
 * rank's reader position goes into its own part. */
TS_API ts_status ts_pretrain_ckpt_save(const char *out, int64_t step, const ts_program *p, const ts_pretrain_reader *r,
                                const ts_pretrain_shape *shape, const char *const *corpus, int ncorpus, int keep);
/* Restore program p and reader r from checkpoint directory `path` (one of ts_train_checkpoint_find)
 * after checking that it was made with the same shape and corpus files (same sizes): TS_ERR_ARG
 * naming the option that differs. *step gets the optimizer steps done; *planned_steps (may be
 * NULL) the max_steps the checkpoint's run planned. */
TS_API ts_status ts_pretrain_ckpt_load(const char *path, ts_program *p, ts_pretrain_reader *r,
                                const ts_pretrain_shape *shape, const char *const *corpus, int ncorpus,
                                int64_t *step, int *planned_steps);

/* The options that shape a fine-tuning run, as the tessera finetune flags of the same names:
 * task "classify" or "qa"; the data files (dev may be NULL), compared by size; max_len the row
 * length used; optimizer's name (NULL: the default); threads the pinned count under
 * deterministic, else 0; test_split 0 and split_seed -1 when no split was made; truncate a
 * ts_truncation_names entry; doc_stride and max_query_len the QA windows used (0 for classify);
 * ranks and shard the replicas and ZeRO-1 sharding (1 and 0 without). */
typedef struct ts_finetune_shape {
    const char *task, *train, *dev, *optimizer, *text_col, *text_b_col, *label_col, *truncate;
    int max_len, batch, epochs, max_steps, accumulation, device_iterations, seed, bf16, fp16, deterministic;
    int threads, split_seed, doc_stride, max_query_len, ranks, shard;
    double lr, warmup, wd, max_grad_norm, momentum, test_split;
    int pack;   /* sequences a row (0 or 1: unpacked; a checkpoint without it: 0) */
    int weights16; /* 1: weights, gradients and optimizer state in 16 bits (a "-sr" precision; absent: 0) */
} ts_finetune_shape;

/* Write checkpoint OUT/checkpoints/step-<step> of a fine-tuning run (program p and the shape),
 * atomically, keeping the newest `keep`. */
TS_API ts_status ts_finetune_ckpt_save(const char *out, int64_t step, const ts_program *p, const ts_finetune_shape *shape,
                                int keep);
/* Restore program p from checkpoint directory `path` and check that it was made with the same
 * shape (TS_ERR_ARG naming the option that differs; p is then already changed). *step gets the
 * optimizer steps done: epoch and row order follow from it and the seed. */
TS_API ts_status ts_finetune_ckpt_load(const char *path, ts_program *p, const ts_finetune_shape *shape, int64_t *step);

/* ---------------------------------------------------------------- held-out pretraining evaluation */

/* Split the documents of text files (one sentence a line, a blank line between documents; a file
 * without blank lines is cut every 1000 lines) into train_path and held_path: every 50th document
 * (document i with i % 50 == 1) is held out. *ndocs and *nheld get the counts. TS_ERR_ARG (message
 * "FILE: reason") when a corpus file cannot be opened; TS_ERR_IO on a read or write failure. */
TS_API ts_status ts_pretrain_split_holdout(const char *const *files, int nfiles, const char *train_path,
                                    const char *held_path, int64_t *ndocs, int64_t *nheld);

/* A fixed set of masked-LM / NSP batches, read once from a held-out file and the same at every
 * evaluation (its masking does not depend on the run's seed). */
typedef struct ts_pretrain_heldout ts_pretrain_heldout;
/* Read up to `nbatches` batches from `path` as po describes them (batch_size, max_len, mask_prob,
 * whole_word, max_predictions; the rest are ts_pretrain_defaults', one epoch, a fixed seed). A file without a sentence
 * pair gives a set of no batches. NULL on failure (error set). */
TS_API ts_pretrain_heldout *ts_pretrain_heldout_read(const ts_tokenizer *tok, const char *path, const ts_pretrain_opts *po,
                                              int nbatches);
/* The batches read (0: nothing to measure). */
TS_API int ts_pretrain_heldout_batches(const ts_pretrain_heldout *h);
/* MLM accuracy, NSP accuracy (fractions) and the mean MLM loss of inference program ip (a
 * TS_BERT_PRETRAINING program of the set's batch x max_len fetching prediction_logits,
 * seq_relationship_logits and mlm_loss) on the set. */
TS_API ts_status ts_pretrain_heldout_eval(ts_program *ip, ts_pretrain_heldout *h, double *mlm_acc, double *nsp_acc,
                                   double *mlm_loss);
TS_API void ts_pretrain_heldout_free(ts_pretrain_heldout *h);

/* ---------------------------------------------------------------- text datasets written out */

/* Rows [0, n) of d as label<TAB>text lines under the header "label<TAB>text" (tabs and line
 * breaks inside a field written as spaces). TS_ERR_IO "PATH: reason" when it cannot be written. */
TS_API ts_status ts_text_dataset_write_tsv(const ts_text_dataset *d, int64_t n, const char *path);
/* Every text of d as a pretraining corpus document: its sentences (ending in . ! or ?) a line
 * each, "| " a line break, then a blank line. */
TS_API ts_status ts_text_dataset_write_corpus(const ts_text_dataset *d, const char *path);

/* ---------------------------------------------------------------- classification */

/* Add the softmax of one row of c logits to probs[0 .. c) (an ensemble sums its members'). */
TS_API void ts_classify_softmax_add(const float *logits, int c, double *probs);
/* Add each row's class probabilities under the inference program (a TS_BERT_SEQ_CLASSIFICATION
 * of batch x seq fetching "logits"; its rows encoded with tok) to probs [n, L] (n rows of d, L
 * its labels): the softmax of the logits. Several programs adding to one probs make an ensemble. */
TS_API ts_status ts_classify_add_probs(ts_program *infer, const ts_tokenizer *tok, const ts_text_dataset *d, int batch,
                                int seq, double *probs);
/* How many labelled rows of d the summed probabilities probs [n, L] label right (the largest);
 * *total gets the labelled rows. */
TS_API int64_t ts_classify_count_right(const ts_text_dataset *d, const double *probs, int64_t *total);
/* The inference program's accuracy on d: *correct of *total labelled rows get the argmax label. */
TS_API ts_status ts_classify_accuracy(ts_program *infer, const ts_tokenizer *tok, const ts_text_dataset *d, int batch,
                               int seq, int64_t *correct, int64_t *total);
/* The majority baseline: the accuracy on test of always answering train's most frequent label
 * (*label, may be NULL). */
TS_API double ts_classify_majority(const ts_text_dataset *train, const ts_text_dataset *test, int *label);
/* Whether two classifiers' model directories have the same labels in the same order and the same
 * text-pair column (so their probabilities may be summed). */
TS_API int ts_model_meta_same_labels(const ts_model_meta *a, const ts_model_meta *b);

/* ---------------------------------------------------------------- question answering (SQuAD) */

#define TS_SQUAD_N_BEST 20         /* start and end candidates per window, as run_squad */
#define TS_SQUAD_MAX_ANSWER_LEN 30 /* pieces in an answer, as run_squad */

/* The defaults of the windows for a row length: doc_stride min(128, max_len / 3), max_query_len
 * min(64, max_len / 4) (run_squad's 128 and 64 at 384 tokens, scaled down for short rows). */
TS_API int ts_squad_default_stride(int max_len);
TS_API int ts_squad_default_query(int max_len);
/* The windows a fine-tuned QA model was trained with, from its meta (its max_len, and its
 * doc_stride and max_query_len, or the defaults above where they are 0), relocate_answers as given:
 * what every reader of a QA model directory featurizes a SQuAD file with. */
TS_API ts_squad_opts ts_squad_opts_of_model(const ts_model_meta *meta, int relocate_answers);

/* Questions as JSON lines: text[0 .. len) holds a {"question": ..., "context": ...} object a line
 * (blank lines skipped; other members ignored), read as a SQuAD document of one paragraph per
 * line with ids "1", "2", ... and featurized as ts_squad_parse (name for messages). NULL on
 * failure: TS_ERR_ARG "NAME:LINE: ..." naming a malformed line, or ts_squad_parse's error. */
TS_API ts_squad *ts_squad_parse_jsonl(const char *name, const char *text, size_t len, const ts_tokenizer *tok,
                               const ts_squad_opts *so);
/* Check a loaded SQuAD file (`name` for the message: its path): it has questions, and with
 * need_answers every question has an answer whose text occurs in its context (as training and
 * scoring need). TS_ERR_ARG with "NAME: ..." naming the question otherwise. */
TS_API ts_status ts_squad_check(const ts_squad *s, const char *name, int need_answers);
/* ts_squad_load, then ts_squad_check (with need_answers a note line when answers were relocated):
 * lines "NAME: FIELD ..." to err (may be NULL), `field` naming where the file came from
 * ("train_file").
 * NULL on failure, the line written (apps/train/squad_load.c). */
TS_API ts_squad *ts_squad_load_checked(const char *path, const ts_tokenizer *tok, const ts_squad_opts *so,
                                       int need_answers, const char *name, const char *field, ts_write_fn err,
                                       void *err_ctx);
/* The questions to answer in file `path` (NULL or "-": standard input, named "stdin"), featurized
 * with so: a SQuAD .json file (by its name; ts_squad_load, then ts_squad_check without answers) or
 * JSON lines (ts_squad_parse_jsonl) (apps/train/squad_load.c). NULL on failure, error set:
 * TS_ERR_ARG for a file that cannot be read or used ("NAME:LINE: ..."); TS_ERR_IO when standard
 * input cannot be read; TS_ERR_NOMEM. */
TS_API ts_squad *ts_squad_read_questions(const char *path, const ts_tokenizer *tok, const ts_squad_opts *so);
/* Feed the inputs of features[0..n) (ts_squad_batch into bb, padded to batch) to program p. */
TS_API ts_status ts_squad_feed(ts_program *p, const ts_squad *s, const int64_t *features, int n, int batch,
                        ts_batch_buf *bb);
/* Run the inference program (a TS_BERT_QUESTION_ANSWERING of batch x seq, fetching start_logits
 * and end_logits) over every feature (window) of s; *start and *end get malloc'd [F, T] arrays
 * (free()). */
TS_API ts_status ts_squad_logits(ts_program *infer, const ts_squad *s, int batch, int seq, float **start, float **end);
/* The answer text of example i from those logits (n-best decoding, ts_squad_best_span): a
 * malloc'd string, "" when no span qualifies; NULL on out of memory. */
TS_API char *ts_squad_answer(const ts_squad *s, int64_t i, const float *start, const float *end, int n_best,
                      int max_answer_len);
/* Exact match and F1 (percent, SQuAD v1.1's) of the inference program on s. */
TS_API ts_status ts_squad_score_program(ts_program *infer, const ts_squad *s, int batch, int seq, int n_best,
                                 int max_answer_len, double *em, double *f1);
/* Each question's answer (ts_squad_logits, then ts_squad_answer) written to out as one line, in
 * order (tabs and line breaks in it as spaces; "" when no span qualifies) (apps/train/squad_load.c). */
TS_API ts_status ts_squad_write_answers(ts_program *infer, const ts_squad *s, int batch, int seq, int n_best,
                                        int max_answer_len, ts_write_fn out, void *out_ctx);

/* ---------------------------------------------------------------- pipeline stages of a BERT */

#define TS_STAGE_MAX_DEVICES 64

/* Which device runs which part of a BERT: the parts in forward order are 0 the embeddings,
 * 1 .. L the encoder layers, L + 1 the heads; a stage is a stretch of parts on one device. */
typedef struct ts_stage_plan {
    int ndev;
    char dev[TS_STAGE_MAX_DEVICES][32];    /* the devices ("cpu:0") */
    int automatic;                         /* to be balanced (ts_stage_plan_measure) */
    int nstages;
    int stage_dev[TS_MAX_STAGES];          /* index into dev[] */
    const char *stage_name[TS_MAX_STAGES]; /* dev[stage_dev[s]], for ts_compile_opts.stage_devices */
    int stage_first[TS_MAX_STAGES], stage_last[TS_MAX_STAGES]; /* parts */
    char what[TS_MAX_STAGES][72];          /* "embeddings", "layers 0-3", "layer 11 .. heads" */
    int layer_stage[TS_BERT_MAX_LAYERS];
    int emb_stage, head_stage;
} ts_stage_plan;

/* A plan from a comma-separated device list ("cpu:0,cpu:1") and a stage spec for a model of
 * `layers` layers: per device (its index in the list) the parts it runs,
 * "0:emb,heads 1:0-3 2:4-7 3:8-11" (emb, heads, layers N or A-B; every part once). stages NULL
 * or "auto": pp->automatic, to be balanced by measurement. TS_ERR_ARG naming the fault. */
TS_API ts_status ts_stage_plan_parse(const char *devices, const char *stages, int layers, ts_stage_plan *pp);
/* Cut the parts (costs part_cost[0 .. layers + 1]) into contiguous stretches of the smallest
 * largest sum, one per device (at most one per part: extra devices are left unused). */
TS_API ts_status ts_stage_plan_balance(const double *part_cost, int layers, ts_stage_plan *pp);
/* Balance by measurement: build a training program of cfg with one stage per part, all on pp's
 * first device, time a warm-up and two runs of `micro` micro-batches (at least 2) on synthetic
 * data, and balance each part's share of the time plus its share of the memory
 * (ts_stage_plan_balance). With replicas (comm of more than one rank) every rank takes rank 0's
 * plan. TS_ERR_ARG when the model has more parts than TS_MAX_STAGES. */
TS_API ts_status ts_stage_plan_measure(const ts_bert_config *cfg, ts_bert_head head, int batch, int seq, int micro,
                                ts_comm *comm, ts_stage_plan *pp);
/* Place cfg's parts on pp's stages (cfg keeps a pointer into pp). */
TS_API void ts_stage_plan_apply(const ts_stage_plan *pp, ts_bert_config *cfg);
/* The stage spec of pp for a model of `layers` layers, as ts_stage_plan_parse reads it ("0:emb,heads
 * 1:0-3 2:4-7"), into buf (cap bytes, truncated to fit); pp NULL or of one stage: one device with
 * the whole model, "0:emb,0-L-1,heads". */
TS_API void ts_stage_plan_spec(const ts_stage_plan *pp, int layers, char *buf, size_t cap);

/* ---------------------------------------------------------------- a BERT on stored tensors */

/* The inputs of a BERT of config cfg from safetensors file `in` (`path` names it in messages):
 * "input_ids" (required), "token_type_ids" (default all 0) and "attention_mask" (default all 1),
 * each [B, T] of i32 or i64, the same shape, within the config's ranges (vocab_size,
 * type_vocab_size, 0 or 1). feeds[0..3) get new i32 tensors in that order, shape {B, T}. */
TS_API ts_status ts_bert_read_inputs(ts_safetensors *in, const char *path, const ts_bert_config *cfg, ts_tensor *feeds[3],
                              int64_t shape[2]);
/* Load a BERT program's weights from safetensors file `path`, strictly (flags: ts_program_load's,
 * TS_LOAD_STRICT implied). A checkpoint of a bare BertModel names its tensors without the "bert."
 * prefix that the heads' state dicts (and so tessera) use: when the strict load finds parameters
 * missing and the file has such names, they are matched with the prefix stripped. */
TS_API ts_status ts_bert_load_weights(ts_program *p, const char *path, int flags);

/* ---------------------------------------------------------------- a bag-of-words classifier */

/* The features of a text dataset's rows for the bag-of-words baseline: each row's distinct
 * WordPiece ids (its first max_tokens; [PAD] [CLS] [SEP] [MASK] left out) with values
 * log(1 + count). NULL on failure (error set, naming the row). */
typedef struct ts_bow_features ts_bow_features;
TS_API ts_bow_features *ts_bow_featurize(const ts_text_dataset *d, const ts_tokenizer *tok, int max_tokens);
/* The most distinct ids of a row: the L of a batch that holds every row. */
TS_API int ts_bow_longest(const ts_bow_features *f);
/* Rows rows[0 .. n) of f (of dataset d) into a batch of B rows of L: ids [B, L], values x [B, L]
 * and labels y [B] (padding: id 0, value 0, label TS_IGNORE_INDEX). */
TS_API void ts_bow_fill(const ts_bow_features *f, const ts_text_dataset *d, const int64_t *rows, int n, int B, int L,
                 int32_t *ids, float *x, int32_t *y);
TS_API void ts_bow_features_free(ts_bow_features *f);
/* The model for V ids and C labels on batches of B rows of L: *train (inputs "ids" [B, L] i32,
 * "x" [B, L] f32, "labels" [B]; fetches "loss"; AdamW at lr with weight_decay) and *infer (the
 * same parameters, after ts_program_copy_params; fetches "logits" [B, C]). */
TS_API ts_status ts_bow_programs(int V, int C, int B, int L, float lr, float weight_decay, int threads, ts_program **train,
                          ts_program **infer);
/* Train program `train` (of ts_bow_programs) for `epochs` passes over the rows of d (features f),
 * in batches of B rows of L in the order of ts_permutation(seed + epoch); *loss: the last
 * epoch's summed loss (its mean times its rows). On failure the error reads "training step: ...". */
TS_API ts_status ts_bow_train(ts_program *train, const ts_bow_features *f, const ts_text_dataset *d, int B, int L,
                              int epochs, uint64_t seed, double *loss);
/* Run `infer` (its parameters copied from the trained program) over d's rows (features f) in
 * batches of B rows of L; *hit: the rows whose largest of C logits is their label. On failure the
 * error reads "scoring the test rows: ...". */
TS_API ts_status ts_bow_accuracy(ts_program *infer, const ts_bow_features *f, const ts_text_dataset *d, int B, int L,
                                 int C, int64_t *hit);

/* What ts_bow_run trains and scores (apps/train/bow_run.c: what `tessera bow` does). */
typedef struct ts_bow_run_opts {
    size_t struct_size;
    const char *vocab;            /* the WordPiece vocabulary that tokenizes the texts */
    int cased;                    /* keep case and accents (0: uncased) */
    const char *train_file;       /* the training rows (.tsv / .csv with a header, or .jsonl) */
    const char *test_file;        /* the rows scored, with train_file's labels */
    const char *text_column, *label_column; /* NULL: "text", "label" */
    int epochs;                   /* passes over the training rows */
    int batch;                    /* rows a step (0: 32; at most the training rows) */
    int max_tokens;               /* tokens of a text counted (0: 1024) */
    int threads;                  /* 0: every core */
    uint64_t seed;                /* the order of the rows (ts_permutation(seed + epoch)) */
    double lr, weight_decay;      /* AdamW's */
} ts_bow_run_opts;

/* Where ts_bow_run failed (ts_bow_run_report.failed_at). */
enum {
    TS_BOW_RUN_AT_NONE = 0,
    TS_BOW_RUN_AT_VOCAB,       /* reading the vocabulary */
    TS_BOW_RUN_AT_TRAIN,       /* reading train_file */
    TS_BOW_RUN_AT_LABELS,      /* train_file has fewer than two labels */
    TS_BOW_RUN_AT_TEST,        /* reading test_file */
    TS_BOW_RUN_AT_TEST_EMPTY,  /* test_file has no rows */
    TS_BOW_RUN_AT_TRAIN_EMPTY, /* train_file has no rows */
    TS_BOW_RUN_AT_BUILD,       /* building the model (ts_bow_programs) */
    TS_BOW_RUN_AT_RUN          /* featurizing, training or scoring (also: out of memory) */
};

/* What ts_bow_run did, filled as far as it went; free its labels with ts_bow_run_report_free. */
typedef struct ts_bow_run_report {
    size_t struct_size;
    int failed_at;                /* TS_BOW_RUN_AT_* */
    int64_t ntrain, ntest;        /* rows */
    int nlabels;                  /* train_file's distinct labels, sorted: */
    char **labels;
    int nfeatures;                /* the vocabulary's size */
    int64_t nbatch;               /* steps an epoch */
    double seconds;               /* training */
    double loss;                  /* the last epoch's summed loss (its mean times ntrain) */
    int64_t hit;                  /* test rows classified right */
    double baseline;              /* the majority baseline's test accuracy, of label `majority` */
    int majority;
} ts_bow_run_report;

/* Train the bag-of-words classifier of o on o->train_file and score it on o->test_file. TS_OK, or
 * the failing call's status with its message and report->failed_at saying where. report (its
 * struct_size set) must not be NULL. */
TS_API ts_status ts_bow_run(const ts_bow_run_opts *o, ts_bow_run_report *report);
/* The report's labels freed. */
TS_API void ts_bow_run_report_free(ts_bow_run_report *report);

/* ---------------------------------------------------------------- replicas (apps/train/replicas.c)
 * What a data-parallel run over the ranks of a communicator checks. */

/* Which ranks of comm hold parameters that differ from rank 0's: every rank hashes its program's
 * parameters (bytes, in the program's order) and the hashes are gathered. ranks (room for
 * ts_comm_size(comm) - 1) receives those rank numbers in increasing order, their count in *nranks
 * (0 with one rank). Collective: every rank calls it. TS_OK, or the error of the hash or the
 * gathering. */
TS_API ts_status ts_replicas_params_differ(ts_comm *comm, const ts_program *p, int *ranks, int *nranks);

/* ---------------------------------------------------------------- exporting a BERT (apps/train/bert_export.c) */

/* How ts_bert_export_onnx builds the model: batches of batch sequences of seq tokens (seq 0: 128,
 * or max_position_embeddings when smaller), the weights of safetensors file `weights` loaded
 * strictly by tessera's names with load_flags (ts_program_load's; TS_LOAD_STRICT implied), or,
 * when weights is NULL, parameters drawn from seed as the model initialises them; threads and
 * memory_limit as ts_compile_opts' num_threads and memory_limit. */
typedef struct ts_bert_export_opts {
    size_t struct_size; /* sizeof(ts_bert_export_opts), or 0 */
    int batch, seq;
    const char *weights;
    uint64_t seed;
    int load_flags;
    int threads;
    size_t memory_limit;
    const ts_quant_scale *quant_scales; /* nquant_scales > 0: a calibrated int8 model (tessera
                                        quantize --calib): its matmuls written in QDQ form with these
                                        activation scales (ts_onnx_export_qdq) */
    int nquant_scales;
    int dynamic_batch;  /* 1: the batch dim symbolic in the ONNX model (ts_onnx_export_opts.dynamic_batch) */
    int int64_inputs;   /* 1: the token inputs declared int64, as Hugging Face's exports (cast inside) */
} ts_bert_export_opts;

#define TS_BERT_EXPORT_MAX_OUTPUTS 8
enum { TS_BERT_EXPORT_BUILD = 1, TS_BERT_EXPORT_LOAD = 2 };
/* What was exported: the sequence length, the outputs by name (the head's, as ts_bert_outputs
 * names them: last_hidden_state, pooler_output, logits, ...) and their shapes; failed_at says, on
 * failure, whether the model could not be built for the shape (TS_BERT_EXPORT_BUILD) or its
 * weights not loaded (TS_BERT_EXPORT_LOAD): the caller's files; 0 for any other failure. */
typedef struct ts_bert_export_info {
    int seq;
    int noutputs;
    const char *names[TS_BERT_EXPORT_MAX_OUTPUTS];
    int ndims[TS_BERT_EXPORT_MAX_OUTPUTS];
    int64_t shapes[TS_BERT_EXPORT_MAX_OUTPUTS][TS_MAX_DIMS];
    int failed_at;
} ts_bert_export_info;

/* Write the BERT of config (its head config->head; for inference: no dropout, an int32 attention
 * mask, f32 compute) as an ONNX model (ts_onnx_export, opset 17) to path, atomically, for the
 * fixed shape of o: inputs input_ids, token_type_ids, attention_mask int32 [batch, seq], the
 * head's outputs float, the parameters as initializers named as in model.safetensors (in QDQ form,
 * ts_onnx_export_qdq, the int8 matmuls of a calibrated model: o->quant_scales). info is filled as
 * above. TS_OK, or the error (set). */
TS_API ts_status ts_bert_export_onnx(const ts_bert_config *config, const ts_bert_export_opts *o, const char *path,
                                     ts_bert_export_info *info);

/* What ts_bert_export_dir exports. The messages name these fields. */
typedef struct ts_bert_export_dir_opts {
    size_t struct_size;
    const char *model_dir; /* config.json (its "architectures" picks the head), model.safetensors (loaded
                              strictly by tessera's names) and its "quantization" record */
    const char *path;      /* the .onnx file written, atomically */
    int batch, max_len;    /* the fixed shape; max_len 0: 128, or max_position_embeddings when smaller */
    int init_random;       /* model.safetensors not read: the parameters drawn from seed */
    uint64_t seed;
    int load_flags, threads;
    size_t memory_limit;   /* as ts_bert_export_opts' */
    int dynamic_batch, int64_inputs; /* as ts_bert_export_opts' */
} ts_bert_export_dir_opts;

/* What ts_bert_export_dir did, filled as far as it went. */
typedef struct ts_bert_export_dir_report {
    size_t struct_size;
    ts_bert_config cfg;    /* config.json's */
    char weights[4200];    /* MODEL_DIR/model.safetensors */
    int quant_mode;        /* the record's: TS_QUANT_DYNAMIC has no QDQ form, so it is written in f32 */
    int nquant_scales;     /* TS_QUANT_STATIC: the calibrated scales written in QDQ form */
    ts_bert_export_info info;
} ts_bert_export_dir_report;

/* The BERT of model directory o->model_dir written as an ONNX model (ts_bert_export_onnx: in QDQ
 * form when the directory is calibrated int8) to o->path for batches of [batch, max_len]. TS_OK;
 * TS_ERR_ARG when the directory or the shape cannot be used ("max_len 600 is longer than the
 * model's max_position_embeddings 512 (DIR/config.json)", "... (model DIR/config.json, batch B x
 * seq T)", the weights' load error); another code when exporting fails. report (its struct_size
 * set) must not be NULL. */
TS_API ts_status ts_bert_export_dir(const ts_bert_export_dir_opts *o, ts_bert_export_dir_report *report);

/* ---------------------------------------------------------------- a split written out (apps/data/text_write.c) */

/* Write a train / test split (ts_text_dataset_split) into directory dir, which must exist:
 * train.tsv and test.tsv (ts_text_dataset_write_tsv, every row), train.txt (the training texts as
 * a pretraining corpus, ts_text_dataset_write_corpus) and, for each of subsets[0 .. nsubsets),
 * train-N.tsv holding the first N rows of train.tsv (N at most the training rows). TS_OK, or the
 * error naming the file ("PATH: reason"); on TS_ERR_NOMEM, "out of memory". */
TS_API ts_status ts_text_split_write(const ts_text_dataset *train, const ts_text_dataset *test, const char *dir,
                                     const int *subsets, int nsubsets);

/* A labelled file split and written out, as `tessera split` does (apps/data/text_split.c). */
typedef struct ts_text_split_opts {
    size_t struct_size;
    const char *data_file;        /* the labelled rows: .tsv / .csv with a header, or .jsonl */
    const char *out_dir;          /* where the files go (made when missing) */
    const char *text_column, *label_column; /* NULL: "text", "label" */
    double test_split;            /* the fraction held out, in (0, 1) */
    uint64_t split_seed;          /* ts_text_dataset_split's seed */
    const char *const *subsets;   /* the sizes N of train-N.tsv, each a positive integer in decimal (as
                                     a command line gives them) */
    int nsubsets;
} ts_text_split_opts;
/* What ts_text_split_files wrote: the rows read, the duplicates dropped, the training and test rows. */
typedef struct ts_text_split_report {
    size_t struct_size;
    int64_t nrows, nduplicates, ntrain, ntest;
} ts_text_split_report;
/* Read o->data_file (ts_text_dataset_load), split it (ts_text_dataset_split) and write the split
 * into o->out_dir (ts_text_split_write), the counts into *report (its struct_size set; filled as
 * far as it went). Owns nothing after it returns. TS_ERR_ARG for what the options get wrong, naming
 * the field: test_split outside (0, 1), a subset that is not a positive integer or is more than the
 * training rows, a data_file that cannot be read ("data_file PATH: ..." with the reading's error);
 * TS_ERR_NOMEM; another code when splitting, making out_dir or writing fails (naming the file). */
TS_API ts_status ts_text_split_files(const ts_text_split_opts *o, ts_text_split_report *report);

/* ================================================================ BERT inference on one batch
 * (the calls under `tessera run`) */

/* cfg made ready for inference: no dropout nodes (hidden, attention, classifier), an i32
 * attention mask, matmuls in `compute` (TS_F32 or TS_BF16, see compute_dtype). */
TS_API void ts_bert_config_inference(ts_bert_config *cfg, ts_dtype compute);
/* The names of the outputs o holds (those not TS_NONE) into names, in this order:
 * last_hidden_state, pooler_output, prediction_logits, seq_relationship_logits, logits,
 * start_logits, end_logits. Returns how many (at most 7): the fetches of an inference program. */
TS_API int ts_bert_output_names(const ts_bert_outputs *o, const char *names[7]);
/* Feed a BERT program its inputs (feeds[0..3): "input_ids", "token_type_ids", "attention_mask",
 * as ts_bert_read_inputs gives them), run it `repeat` times (at least 1; with more, the first is
 * a warm-up whose profile counters are reset), then fetch fetch[0 .. nfetch) into outs (new
 * tensors, the caller frees them). *best_s and *total_s (either may be NULL) get the fastest run's
 * and all runs' seconds. A feed's failure reads "feeding input_ids: ...". */
TS_API ts_status ts_bert_run_batch(ts_program *p, ts_tensor *const feeds[3], int repeat, int nfetch,
                                   const char *const *fetch, ts_tensor **outs, double *best_s, double *total_s);

/* ---------------------------------------------------------------- one run of an ONNX model file
 * (apps/train/onnx_run.c: what `tessera run` does with an ONNX model) */

/* What ts_onnx_run_file runs. */
typedef struct ts_onnx_run_opts {
    size_t struct_size;
    const char *model;     /* the .onnx file (ts_onnx_load) */
    const char *inputs;    /* a safetensors file holding a tensor named as each of the model's inputs,
                              of a shape the model allows, converted to the declared dtype where no
                              value changes (ts_tensor_convert_exact); one-element integer inputs are
                              fixed for the import (ts_onnx_session_fix) */
    const char *outputs;   /* the safetensors file written: every output by name, in its dtype */
    const char *device;    /* NULL: the CPU */
    int threads;           /* 0: every core */
    int repeat;            /* runs of the model (0: 1) */
    size_t memory_limit;   /* bytes the program may take (0: the device's) */
    int quantize;          /* ts_compile_opts.quantize (TS_QUANT_DYNAMIC: int8) */
    ts_write_fn profile;   /* non-NULL: compiled with ts_compile_opts.profile, and after the runs
                              ts_program_profile_report's text written here (with profile_ctx);
                              with repeat > 1 the first run (where the int8 convolutions time
                              their kernels) is left out */
    void *profile_ctx;
} ts_onnx_run_opts;

/* Where ts_onnx_run_file failed (ts_onnx_run_report.failed_at). */
enum {
    TS_ONNX_RUN_AT_NONE = 0,
    TS_ONNX_RUN_AT_MODEL,       /* loading the model file */
    TS_ONNX_RUN_AT_INPUTS_FILE, /* opening the inputs file */
    TS_ONNX_RUN_AT_INPUTS,      /* an input: missing ("IN: no tensor \"x\" (the model M has the
                                   inputs a b)"), unreadable, of a dtype it cannot take, or refused
                                   as a fixed value */
    TS_ONNX_RUN_AT_COMPILE,     /* importing and compiling it (also: out of memory) */
    TS_ONNX_RUN_AT_RUN,         /* a run of it */
    TS_ONNX_RUN_AT_OUTPUTS      /* writing the outputs file */
};

/* What ts_onnx_run_file did, filled as far as it went (also on failure); free the outputs with
 * ts_onnx_run_report_free. */
typedef struct ts_onnx_run_report {
    size_t struct_size;
    int failed_at;                /* TS_ONNX_RUN_AT_* */
    int opset, ninputs, noutputs; /* the model's */
    double load_seconds;          /* reading the model file */
    double first_seconds;         /* the first run: import, compile and run */
    double best_seconds;          /* the fastest of the runs after the first (repeat > 1) */
    char **output_names;          /* noutputs names, in the model's order */
    ts_tensor **outputs;          /* noutputs tensors, the last run's */
} ts_onnx_run_report;

/* Run the ONNX model o->model once on o->inputs (o->repeat times, timed) and write every output
 * to o->outputs, atomically. TS_OK, or the failing call's status with its message (ts_last_error)
 * and report->failed_at saying where. report (its struct_size set) must not be NULL. */
TS_API ts_status ts_onnx_run_file(const ts_onnx_run_opts *o, ts_onnx_run_report *report);
/* The report's outputs and names freed (the report may be zeroed or partly filled). */
TS_API void ts_onnx_run_report_free(ts_onnx_run_report *report);
/* 1 when path names an ONNX model rather than a model directory: it ends in ".onnx", or it is a
 * file that is not a directory (what `tessera run --model` decides by); else 0. */
TS_API int ts_onnx_model_path(const char *path);

/* ---------------------------------------------------------------- one run of a BERT model directory
 * (apps/train/bert_run.c: what `tessera run` does with a model directory) */

/* What ts_bert_run_file runs. */
typedef struct ts_bert_run_opts {
    size_t struct_size;
    const char *model_dir; /* config.json (its "architectures" picks the head; BertModel when absent, or
                              with a note when it names another) and model.safetensors
                              (ts_bert_load_weights); its "quantization" record is followed */
    const char *inputs;    /* a safetensors file read by ts_bert_read_inputs: its [B, T] is the batch */
    const char *outputs;   /* the safetensors file written: every output of the head by name, f32 */
    ts_dtype dtype;        /* the matmuls: TS_F32 (0) or TS_BF16 (ts_bert_config_inference) */
    const char *device;    /* NULL: "cpu" */
    int threads;           /* 0: OpenMP's */
    int repeat;            /* runs of the batch (0: 1); with more, the first is left out of the profile */
    int profile;           /* compile with ts_compile_opts.profile; the report keeps the program */
    int init_random;       /* model.safetensors not read: the parameters drawn from seed */
    uint64_t seed;
    size_t memory_limit;   /* bytes the program may take (0: the device's) */
    int load_flags;        /* ts_program_load's for the weights (TS_LOAD_STRICT implied) */
    int quantize;          /* TS_QUANT_DYNAMIC: int8 whatever the record says; TS_QUANT_NONE: the record's */
    const char *name;      /* the prefix of the lines written to err ("tessera run") */
    ts_write_fn err;       /* the architecture's note and the build's error lines (ts_bert_infer_build;
                              may be NULL) */
    void *err_ctx;
} ts_bert_run_opts;

/* Where ts_bert_run_file failed (ts_bert_run_report.failed_at): the stages of TS_ONNX_RUN_AT_*,
 * number for number. */
enum {
    TS_BERT_RUN_AT_NONE = 0,
    TS_BERT_RUN_AT_MODEL,       /* config.json, or its "quantization" record, cannot be used */
    TS_BERT_RUN_AT_INPUTS_FILE, /* opening the inputs file */
    TS_BERT_RUN_AT_INPUTS,      /* the inputs (ts_bert_read_inputs) */
    TS_BERT_RUN_AT_BUILD,       /* building, compiling or loading the weights: its lines written to err */
    TS_BERT_RUN_AT_RUN,         /* feeding or running the batch */
    TS_BERT_RUN_AT_OUTPUTS      /* writing the outputs file */
};

#define TS_BERT_RUN_MAX_OUTPUTS 7

/* What ts_bert_run_file did, filled as far as it went (also on failure); free it with
 * ts_bert_run_report_free. */
typedef struct ts_bert_run_report {
    size_t struct_size;
    int failed_at;                /* TS_BERT_RUN_AT_* */
    ts_bert_config cfg;           /* config.json's, made ready for inference */
    int batch, seq;               /* the inputs' [B, T] */
    double build_seconds;         /* building and compiling */
    double load_seconds;          /* loading the weights (0 with init_random) */
    double best_seconds, total_seconds; /* the fastest run; all runs */
    int noutputs;                 /* the head's outputs, as ts_bert_output_names names them: */
    const char *output_names[TS_BERT_RUN_MAX_OUTPUTS];
    ts_tensor *outputs[TS_BERT_RUN_MAX_OUTPUTS];
    ts_program *program;          /* with profile: the program run (ts_program_profile_report) */
} ts_bert_run_report;

/* Run model directory o->model_dir on the batch of o->inputs (o->repeat times, timed) and write
 * every output to o->outputs, atomically. TS_OK, or the failing call's status with its message
 * (ts_last_error; at TS_BERT_RUN_AT_BUILD written to o->err as well) and report->failed_at saying
 * where; TS_ERR_ARG when o is unusable (dtype other than f32 / bf16, a missing file name). report
 * (its struct_size set) must not be NULL. */
TS_API ts_status ts_bert_run_file(const ts_bert_run_opts *o, ts_bert_run_report *report);
/* The report's outputs and program freed (the report may be zeroed or partly filled). */
TS_API void ts_bert_run_report_free(ts_bert_run_report *report);
/* The forward pass of this thread's last ts_bert_run_file whose program was refused for memory
 * (TS_ERR_NOMEM at TS_BERT_RUN_AT_BUILD), as the planner's request (tessera_plan.h) for a layout
 * that fits, as ts_train_refused_layout gives a training run's: its model into *cfg (rq->cfg points
 * at it), batch, sequence and precision, task TS_PLAN_INFER on one device; *pp (may be NULL)
 * emptied (nstages 0); rq->device NULL (the caller's profile). 1, or 0 when the last run's program
 * was not refused for memory. */
struct ts_plan_request;
TS_API int ts_bert_run_refused_layout(struct ts_plan_request *rq, ts_bert_config *cfg, ts_stage_plan *pp);

/* How ts_bert_infer_build builds an inference program. */
typedef struct ts_bert_infer_opts {
    size_t struct_size;
    const ts_bert_config *cfg;   /* its head is built; ready for inference (ts_bert_config_inference) */
    int batch, seq;
    uint64_t seed;               /* the graph's: the parameters drawn when weights is NULL */
    const char *device;          /* compiled for (ts_compile_opts.device) */
    int threads, profile;
    size_t memory_limit;         /* bytes (0: the device's) */
    const char *weights;         /* a safetensors file loaded with ts_bert_load_weights (NULL: none) */
    int load_flags;
    const char *name;            /* the error lines' prefix ("tessera run") */
    ts_write_fn err;             /* error lines, naming config_path, inputs, --device and --device-memory */
    void *err_ctx;
    const char *config_path, *inputs;
    int quantize;                /* ts_compile_opts.quantize (TS_QUANT_DYNAMIC: int8 matmuls) */
    const ts_quant_scale *quant_scales; /* with quantize = TS_QUANT_STATIC: the calibrated
                                    activation scales (ts_compile_opts.quant_scales) */
    int nquant_scales;
} ts_bert_infer_opts;

/* Build o->cfg's model for batch x seq, compile it for inference (fetching its outputs: their
 * names into fetch, room for 7, their count into *nfetch) and load the weights. seconds[0]:
 * building and compiling, seconds[1]: loading. TS_OK; TS_ERR_ARG when the config, the inputs'
 * shape or the weights cannot be used; another code when building or compiling fails (an
 * out-of-memory line names the sizes that make the model large). */
TS_API ts_status ts_bert_infer_build(const ts_bert_infer_opts *o, ts_program **p, const char **fetch, int *nfetch,
                                     double seconds[2]);

/* Encode texts[0 .. n) (n <= bb->batch; with `pairs`, a tab splits a text into its pair), pad
 * the rest of the batch buffer bb (bb->batch x bb->seq, as the inference program takes it), run
 * the classifier `infer` (fetching "logits" [B, C]) and add each text's class probabilities (the
 * softmax) to probs [n, nlabels]; nothing is added when C != nlabels. Several programs adding
 * to one probs make an ensemble. */
TS_API ts_status ts_classify_texts_add_probs(ts_program *infer, ts_batch_buf *bb, const ts_tokenizer *tok,
                                             const char *const *texts, int n, int pairs, int nlabels, double *probs);

/* ---------------------------------------------------------------- a training run's lines (apps/train/run_report.c) */

/* printf into w (nothing when w is NULL): one call of w per call. */
TS_API void ts_writef(ts_write_fn w, void *ctx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The progress line of a training run: on a terminal (tty) "step s/total  loss L  R seq/s  ETA
 * ..." redrawn in place with \r, at most ten times a second; elsewhere (a log) a line "step
 * s/total: loss L, R seq/s, ETA ..." a minute (ts_progress_to's period), so that a log shows the run
 * between its evaluations. The caller owns
 * the struct (it holds no allocation); t0 is when the run started. */
typedef struct ts_progress {
    ts_write_fn out;
    void *ctx;
    int tty;            /* out is a terminal: redraw one line with \r */
    double t0;          /* ts_seconds() at ts_progress_init */
    int64_t total;      /* steps planned */
    double max_seconds; /* 0: no time limit (else the ETA is capped by it) */
    int width;          /* of the last line drawn */
    double rate;        /* sequences per second, smoothed */
    double drawn;       /* when the line was last drawn */
} ts_progress;
TS_API void ts_progress_init(ts_progress *p, int64_t total, double max_seconds, int tty, ts_write_fn out, void *ctx);
/* Step `step` done with this loss and rate: redraw the line (on a tty). */
TS_API void ts_progress_step(ts_progress *p, int64_t step, double loss, double seq_per_s);
/* Write a line of its own (the progress line cleared first on a tty). */
TS_API void ts_progress_print(ts_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Where the applications report a long phase's progress (ts_phase_*): lines "PREFIX: WHAT D/T UNIT
 * (P%), E s, about R s left" to out (NULL, the default: nowhere). tty 1: out is a terminal, one
 * line redrawn in place with \r at most ten times a second and cleared at the end; 0: a log, a
 * line every period_s seconds of a phase (0: $TESSERA_PROGRESS_SECONDS, else 60), the period of a
 * training run's log lines too (ts_progress). Set once, before the phases run (the tessera command
 * sets it to standard error). */
TS_API void ts_progress_to(const char *prefix, ts_write_fn out, void *ctx, int tty, double period_s);
/* One phase: total units of work, `done` of them so far. The caller owns it. */
typedef struct ts_phase {
    const char *what, *unit; /* "computing features", "clips" (static strings) */
    int64_t total, done;
    double t0, drawn;        /* ts_seconds() at the start, and when last written */
    int width;               /* of the line drawn on a terminal */
} ts_phase;
TS_API void ts_phase_begin(ts_phase *p, const char *what, const char *unit, int64_t total);
/* done units of the phase are done: a line when one is due. */
TS_API void ts_phase_step(ts_phase *p, int64_t done);
/* The phase is over: a terminal's line cleared. */
TS_API void ts_phase_end(ts_phase *p);

/* One row of a JSONL metrics log: "{" fmt's members "}\n", one call of w (nothing when NULL). */
TS_API void ts_metrics_write(ts_write_fn w, void *ctx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The stages of pipelined program p compiled from plan pp with `micro` micro-batches a step:
 * lines "NAME: pipeline of S stages on D devices, ..." and one per stage (device, threads, parts,
 * memory), or with `json` one metrics row {"pipeline": {...}}. */
TS_API void ts_stage_plan_describe(const ts_stage_plan *pp, const ts_program *p, int micro, const char *name,
                                   ts_write_fn w, void *ctx, int json);
/* The measured side of pipelined program p's runs so far: each stage's busy time and the bubble
 * beside (S-1)/(M+S-1), as a line into buf[cap] (without a newline), and a metrics row to
 * `metrics` (may be NULL). */
TS_API void ts_stage_plan_report(const ts_stage_plan *pp, const ts_program *p, int micro, char *buf, size_t cap,
                                 ts_write_fn metrics, void *ctx);

/* Replicas: do all ranks of comm hold program p's parameters (ts_replicas_params_differ)? TS_OK
 * (also with one rank), else TS_ERR_RUNTIME with a message naming the ranks that differ; `when`
 * names the moment ("at the start"). A collective. */
TS_API ts_status ts_replicas_check_params(ts_comm *comm, const ts_program *p, const char *when);
/* Replicas (nothing with one rank): a line "NAME: per rank: parameters ..., optimizer state ...
 * (its share with shard), gradient buckets ..." to out and a metrics row to metrics. */
TS_API void ts_replicas_describe(ts_comm *comm, int shard, const ts_program *p, const char *name, ts_write_fn out,
                                 void *out_ctx, ts_write_fn metrics, void *metrics_ctx);

/* Profiling a training run (tp compiled with ts_compile_opts.profile), from ts_train's after_call
 * hook: the first call of the run (from step0) is a warm-up, as `tessera run --repeat` treats it:
 * the counters are zeroed after it, unless it is also the last, and *from (-1 before the first
 * call) becomes the step they count from. */
TS_API void ts_train_profile_warmup(ts_program *tp, int64_t step0, int64_t step, int last, int64_t *from);
/* The heading "profile of the training step (N steps after the first):" (N = step - from) and
 * ts_program_profile_report, to w; with replicas (comm) rank 0 alone writes. */
TS_API ts_status ts_train_profile_print(const ts_program *tp, ts_comm *comm, int64_t step0, int64_t from, int64_t step,
                                        ts_write_fn w, void *ctx);

/* ---------------------------------------------------------------- a pretraining run (apps/train/pretrain_run.c) */

/* What ts_pretrain_run does: the run of `tessera pretrain`, its flags already read. The caller
 * makes the programs (ts_bert_train_programs: train fetching "loss", "mlm_loss", "nsp_loss";
 * infer fetching "prediction_logits", "seq_relationship_logits", "mlm_loss") and out_dir, and
 * keeps them; the run writes there. Every line begins with `name`. */
typedef struct ts_pretrain_run_opts {
    size_t struct_size;
    const char *name;                /* the lines' prefix ("tessera pretrain"; NULL: "pretrain") */
    ts_write_fn out;                 /* the run's lines and progress (may be NULL) */
    void *out_ctx;
    int tty;                         /* out is a terminal: a progress line redrawn in place */
    ts_write_fn err;                 /* error lines (may be NULL; the last is also ts_last_error()) */
    void *err_ctx;
    const ts_tokenizer *tok;         /* the vocabulary (vocab: its file, copied into out_dir) */
    const char *vocab;
    const ts_bert_config *cfg;       /* the model's config, written as out_dir/config.json */
    ts_program *train, *infer;       /* infer scores the held-out set (NULL: no evaluation) */
    const ts_stage_plan *pipe;       /* the pipeline train was compiled on (NULL: one device) */
    const ts_pretrain_shape *shape;  /* the run's options that a resume keeps (sizes, batch, schedule,
                                        masking, replicas), its checkpoints' shape */
    const char *const *corpus;       /* text files: one sentence a line, a blank line between documents */
    int ncorpus;
    const char *out_dir;             /* config.json, model.safetensors, vocab.txt, metrics.jsonl,
                                        checkpoints/ */
    const char *resume;              /* continue from this run directory's newest valid checkpoint (or
                                        this checkpoint); NULL: start */
    int device_iterations;           /* optimizer steps per call into train (>= 1) */
    int eval_every, eval_batches;    /* held-out evaluation every N steps, on this many batches */
    int save_every, keep;            /* model and checkpoint every N steps (0: at the end); checkpoints kept */
    int stop_after;                  /* end after this step with a checkpoint (0: run to max_steps) */
    int profile;                     /* write the training step's profile at the end (train compiled
                                        with profiling) */
    double max_minutes;              /* stop by time (0: no limit) */
    ts_comm *comm;                   /* replicas (NULL or one rank: none); rank 0 writes the files */
} ts_pretrain_run_opts;

/* Pretrain: split the corpus into training text and a held-out set (every 50th document, in
 * temporary files in out_dir, removed at the end), resume when asked, train with ts_train (the
 * progress line, a metrics row per step and held-out MLM / NSP accuracy every eval_every steps
 * in out_dir/metrics.jsonl, the model and a full-state checkpoint every save_every steps), then
 * write the model directory. TS_OK; TS_ERR_ARG when the inputs or options are at fault (a corpus
 * without text or sentence pairs, a checkpoint that does not match); another code when running
 * fails; the error line is written to err as well. */
TS_API ts_status ts_pretrain_run(const ts_pretrain_run_opts *o);

/* A whole pretraining job: what `tessera pretrain` does once its flags are read, field for flag
 * (the same name with - for _; intermediate --intermediate, untie --untie-embeddings).
 * ts_pretrain_job_defaults gives the command's defaults. Every line begins with `name`. */
typedef struct ts_pretrain_job_opts {
    size_t struct_size;
    const char *name;           /* the lines' prefix (NULL: "ts_pretrain_job") */
    ts_write_fn out;            /* the run's lines and its progress (may be NULL) */
    void *out_ctx;
    int tty;                    /* out is a terminal: a progress line redrawn in place */
    ts_write_fn err;            /* error lines (may be NULL; the last is also ts_last_error()) */
    void *err_ctx;
    const char *vocab;          /* the WordPiece vocabulary file (with [MASK]), copied into out_dir */
    const char *const *corpus;  /* text files: one sentence a line, a blank line between documents */
    int ncorpus;
    const char *out_dir;        /* as ts_pretrain_run's; the caller makes and locks it */
    const char *resume;         /* as ts_pretrain_run's (NULL: start) */
    /* The model (ts_bert_config) */
    int layers, hidden, heads, intermediate, max_len; /* hidden a multiple of heads */
    double dropout;             /* below 1 */
    int untie, cased;           /* untie_word_embeddings; keep case (do_lower_case false) */
    /* Optimizer and schedule */
    const char *optimizer;      /* "adamw" (NULL too), "lamb" or "sgd" */
    double lr, warmup, weight_decay, max_grad_norm, momentum; /* warmup at most 1; momentum: sgd's, below 1 */
    int batch, max_steps;       /* rows per micro-batch; optimizer steps */
    double max_minutes;         /* stop by time (0: no limit) */
    int seed, wwm;              /* initialisation, masking and dropout; whole-word masking */
    double mask_prob;           /* in (0, 1) */
    int max_predictions;        /* masked positions per sequence, at most max_len (-1: ceil(max_len x
                                   mask_prob); 0: no cap) */
    int accumulation, micro_batches, device_iterations; /* as ts_finetune_run_opts' */
    int save_every, keep, eval_every, eval_batches, stop_after; /* as ts_pretrain_run_opts' (multiples of
                                   device_iterations) */
    /* Compute (as ts_finetune_run_opts') */
    int threads, bf16, fp16, recompute, deterministic, profile;
    size_t memory_limit;
    const char *devices, *stages;
    ts_comm *comm;
    int shard;
    int pack;                   /* S > 1: up to S pairs a row (ts_pretrain_opts.pack, the training
                                   program built with max_sequences_per_pack S; batch counts rows;
                                   the held-out set stays a pair a row); 0 or 1: a pair a row. The
                                   run prints the packing efficiency and the pairs trained a second */
    const char *precision;      /* "f32", "bf16", "fp16", "bf16-sr", "fp16-sr" (ts_precision_parse; the
                                   "-sr" modes keep weights, gradients and optimizer state in 16 bits,
                                   updates rounded stochastically); NULL: as bf16 / fp16 say. Recorded
                                   in checkpoints */
    int round_nearest;          /* "-sr" modes: round updates to nearest instead (the ablation) */
} ts_pretrain_job_opts;

/* The options of `tessera pretrain` without flags into *o (struct_size set; vocab, corpus and
 * out_dir NULL): 4 layers x 256 hidden, 4 heads, intermediate 1024, max_len 128, dropout 0.1,
 * batch 32, 1000 steps, lr 5e-4, warmup 0.05, weight_decay 0.01, adamw, mask_prob 0.15,
 * max_predictions -1, eval_every 100, eval_batches 4, keep 3, accumulation and device_iterations 1. */
TS_API void ts_pretrain_job_defaults(ts_pretrain_job_opts *o);

/* Pretrain: check the options (each message naming the field: "max_predictions 200 is more than
 * max_len 128"), read the vocabulary, make the model's config (ts_bert_config_check), place the
 * pipeline (balanced by measurement for stages "auto"), compile the programs (refused before the
 * corpus is read when too large), then ts_pretrain_run. The job owns what it makes and frees it;
 * the caller keeps o. TS_OK; TS_ERR_ARG when the options or inputs are at fault; another code when
 * running fails (TS_ERR_NOMEM: a program too large, see ts_train_refused_layout). The error line
 * is written to err as well. Thread: as ts_finetune_run. */
TS_API ts_status ts_pretrain_job(const ts_pretrain_job_opts *o);

/* ---------------------------------------------------------------- a fine-tuning run (apps/train/finetune_run*.c) */

/* What ts_finetune_run trains. */
typedef enum {
    TS_FINETUNE_AUTO = 0,     /* qa when model_dir already holds a question-answering model, else classify */
    TS_FINETUNE_CLASSIFY = 1, /* a sequence classifier (BertForSequenceClassification), single texts or pairs */
    TS_FINETUNE_QA = 2        /* extractive question answering on SQuAD v1.1 (BertForQuestionAnswering) */
} ts_finetune_kind;

/* The whole of a fine-tuning run: what `tessera finetune` does once its flags are read, field for
 * flag (model_dir --model, train_file --train, eval_file --eval, out_dir --out, the rest by the
 * same name with - for _). ts_finetune_run_defaults gives the command's defaults; a field left 0
 * where 0 is no value of its own (accumulation, device_iterations, keep, max_len, the QA windows
 * and decoding, a NULL column or optimizer) takes its default too. Every line begins with `name`. */
typedef struct ts_finetune_run_opts {
    size_t struct_size;
    const char *name;           /* the lines' prefix (NULL: "ts_finetune_run") */
    ts_write_fn out;            /* the run's lines and its progress (may be NULL) */
    void *out_ctx;
    int tty;                    /* out is a terminal: a progress line redrawn in place */
    ts_write_fn err;            /* error lines (may be NULL; the last is also ts_last_error()) */
    void *err_ctx;
    ts_write_fn metrics;        /* each metrics row (JSON, ending in a newline; a row may come in several
                                   calls), besides out_dir/metrics.jsonl (may be NULL) */
    void *metrics_ctx;
    const char *model_dir;      /* the pretrained model: config.json, model.safetensors, vocab.txt */
    const char *train_file;     /* classify: a labelled .tsv / .csv / .jsonl; qa: a SQuAD v1.1 .json */
    const char *eval_file;      /* held-out data: classify tests it instead of a split of train_file;
                                   qa scores it (EM, F1) after each epoch (NULL: none) */
    const char *out_dir;        /* the model directory written (made when missing), with metrics.jsonl
                                   and checkpoints/ */
    const char *resume;         /* continue from this run directory's newest valid checkpoint (or this
                                   checkpoint), made with the same options and data; NULL: start */
    int task;                   /* a ts_finetune_kind */
    /* Classification */
    const char *text_column, *text_b_column, *label_column; /* NULL: "text", no pair, "label" */
    const char *truncate;       /* the part of a long text kept: a ts_truncation_names entry (NULL: "head") */
    double test_split;          /* without eval_file: the share of the deduplicated rows tested, below 1 (0: none) */
    int split_seed;             /* that split's shuffle (-1: seed) */
    int test_every;             /* test after every N-th epoch and the last (0: the last only) */
    int random_init;            /* model_dir's shape and vocabulary, not its weights (drawn from seed); max_len
                                   may then exceed its positions */
    /* Question answering (0: the defaults, ts_squad_default_stride / _query, TS_SQUAD_*) */
    int doc_stride, max_query_len, max_answer_len, n_best;
    int relocate_answers;       /* ts_squad_opts.relocate_answers */
    /* Optimizer and schedule */
    const char *optimizer;      /* "adamw" (NULL too), "lamb" or "sgd" */
    double lr, warmup;          /* peak learning rate; the share of the steps warming up (at most 1) */
    double weight_decay, max_grad_norm, momentum; /* max_grad_norm 0: no clipping; momentum: sgd's, below 1 */
    int epochs, batch;          /* at least 1; rows per micro-batch */
    int max_len;                /* tokens per row (0: min(128, qa 384, the model's positions)) */
    int max_steps;              /* 0, or fewer steps than the epochs make */
    int accumulation;           /* micro-batches per optimizer step (0: 1) */
    int device_iterations;      /* optimizer steps per call into the program (0: 1; at most 64) */
    double max_minutes;         /* stop by time, then test and save (0: no limit) */
    int seed;                   /* initialisation, shuffling, dropout (and the split, by default) */
    int save_every, keep, stop_after; /* model and checkpoint every N steps (0: at the end); checkpoints
                                   kept (0: 3); end after this step with a checkpoint (0: run on) */
    /* Compute */
    int threads;                /* CPU threads (0: all; under deterministic, pinned to every online CPU) */
    int bf16, fp16, recompute;  /* compute dtype (bf16 and fp16 exclude each other); recompute layers */
    int deterministic;          /* bit-identical runs for a seed: threads pinned, max_minutes refused */
    int profile;                /* write the training step's profile at the end (not with a pipeline) */
    size_t memory_limit;        /* the bytes a program may take per device (0: the device's memory) */
    int load_flags;             /* ts_program_load's flags for model_dir's weights (TS_LOAD_ALLOW_NONFINITE) */
    const char *devices;        /* one device ("opencl:0"), or several ("cpu:0,cpu:1"): a pipeline; NULL: the CPU */
    const char *stages;         /* the pipeline's stages (ts_stage_plan_parse; NULL or "auto": balanced by
                                   measurement) */
    int micro_batches;          /* the same as accumulation (0: accumulation; a pipeline: 2 per device) */
    ts_comm *comm;              /* replicas (NULL or one rank: none); rank 0 writes out_dir and the lines */
    int shard;                  /* the optimizer state sharded over the replicas (ZeRO-1) */
    int pack;                   /* classify: S > 1 packs up to S texts a row (ts_pack_sequences, once per
                                   run; the training program built with max_sequences_per_pack S, the
                                   evaluation one unpacked); batch then counts rows. 0 or 1: a text a
                                   row. Either way the run prints the packing efficiency (real tokens /
                                   slots) and the sequences trained per second */
    const char *precision;      /* "f32", "bf16", "fp16", "bf16-sr", "fp16-sr" (ts_precision_parse; the
                                   "-sr" modes keep weights, gradients and optimizer state in 16 bits,
                                   updates rounded stochastically); NULL: as bf16 / fp16 say. Recorded
                                   in checkpoints */
    int round_nearest;          /* "-sr" modes: round updates to nearest instead (the ablation) */
} ts_finetune_run_opts;

/* The options of `tessera finetune` without flags into *o (struct_size set; the four paths NULL):
 * task auto, 3 epochs of batch 32, lr 1e-4, warmup 0.1, weight_decay 0.01, adamw, seed 42,
 * split_seed -1, test_split 0.2, test_every 1, keep 3, columns "text" and "label". */
TS_API void ts_finetune_run_defaults(ts_finetune_run_opts *o);

/* Fine-tune: check the options, choose the task (auto: from model_dir's config.json), read the
 * data (classify: the rows, deduplicated and split, or eval_file; qa: the SQuAD windows), build the
 * programs (one device, or a pipeline of devices, balanced by measurement for stages "auto"), load
 * model_dir's weights (the head starts fresh), resume when asked, then train in epochs
 * (ts_train_epochs: progress, a metrics row per step, the held-out score after each test epoch,
 * the model and a full-state checkpoint every save_every steps) and write out_dir (config.json,
 * model.safetensors, vocab.txt). The run owns what it makes and frees it; the caller keeps o and
 * its strings, and the sinks are called on this thread only. TS_OK; TS_ERR_ARG when the options or
 * the inputs are at fault (an option out of range or for the other task, a model or file that
 * cannot be used, a checkpoint that does not match), the message naming the field ("max_len 600
 * exceeds the model's 512 positions"); another code when running fails. The error line is written
 * to err as well. Thread: one run per thread at a time; runs on several threads must not share a
 * communicator or out_dir. */
TS_API ts_status ts_finetune_run(const ts_finetune_run_opts *o);

/* The layout of this thread's last ts_finetune_run, ts_pretrain_job or ts_model_dir_program whose
 * programs were refused for memory, as the planner's request (tessera_plan.h) for a layout that
 * fits: its model into *cfg (rq->cfg points at it, cfg into pp), task (TS_PLAN_INFER for
 * ts_model_dir_program), batch, sequence, precision, optimizer, micro-batches, replicas; its
 * pipeline into *pp (nstages 0: one device); rq->device NULL (the caller's profile). 1, or 0 when
 * the last run's programs were not refused for memory. */
struct ts_plan_request;
TS_API int ts_train_refused_layout(struct ts_plan_request *rq, ts_bert_config *cfg, ts_stage_plan *pp);

/* The run directory a training run (ts_pretrain_job, ts_finetune_run) writes: out_dir when given;
 * else resume when it names an earlier run's directory (not one checkpoint, which holds
 * trainer.json), so that resuming continues in it; else NULL (the caller must give one). Owns
 * nothing: returns one of its arguments. */
TS_API const char *ts_train_out_dir(const char *out_dir, const char *resume);

/* How ts_model_dir_program compiles a model directory's inference program. */
typedef struct ts_model_program_opts {
    size_t struct_size;
    int batch, seq;             /* rows and tokens per row of each call */
    int threads;                /* CPU threads (0: all) */
    size_t memory_limit;        /* the bytes the program may take (0: the device's memory) */
    int load_flags;             /* ts_program_load's for the weights (TS_LOAD_STRICT implied) */
    const char *device;         /* compiled for (NULL: the CPU) */
    const char *const *fetches; /* the outputs fetched ("logits"; the QA head's two) */
    int nfetch;
    const char *name;           /* the error lines' prefix (NULL: "ts_model_dir_program") */
    ts_write_fn err;            /* error lines (may be NULL) */
    void *err_ctx;
} ts_model_program_opts;

/* The inference program of model directory dir (its config cfg, as ts_model_load_dir read it;
 * head cfg->head) for o's batch x seq: int8 as dir's "quantization" record says
 * (ts_quant_record_load), DIR/model.safetensors loaded strictly. The caller owns the program
 * (ts_program_free). NULL with the error set and its line written to err: the record's (naming
 * DIR/config.json), the compiler's or the load's; refused for memory (TS_ERR_NOMEM), a second line
 * says which numbers make it large (the model's sizes from DIR/config.json, batch, memory_limit)
 * and ts_train_refused_layout holds the layout. Thread: as ts_compile. */
TS_API ts_program *ts_model_dir_program(const char *dir, const ts_bert_config *cfg, const ts_model_program_opts *o);

/* What the fine-tuned model in directory dir does (its config cfg and meta, as ts_model_load_dir
 * read them): TS_FINETUNE_QA for a question-answering model, TS_FINETUNE_CLASSIFY for a sequence
 * classifier with labels, checked against want unless it is TS_FINETUNE_AUTO. -1 with the error set
 * (TS_ERR_ARG) when dir is neither ("DIR is not a fine-tuned model (architecture ...)") or not the
 * task wanted ("task qa, but DIR is a classify model (...)"). */
TS_API int ts_model_task(const char *dir, const ts_bert_config *cfg, const ts_model_meta *meta, int want);

/* ---------------------------------------------------------------- training in epochs over rows (apps/train/epochs.c) */

/* What ts_train_epochs needs of a task (fine-tuning a classifier, question answering, ...). The
 * program takes S = accumulation x device_iterations micro-batches of `batch` rows per call,
 * slice k of its inputs for micro-batch k ([S, B, ...] when S > 1). Callbacks return 0, or
 * nonzero after writing their own error line. */
typedef struct ts_epoch_task {
    void *ctx;
    int64_t nrows;      /* training rows: texts, or QA windows */
    ts_program *train;  /* the training program, fetching "loss" */
    /* Encode rows[0 .. m) of the training data into slice k (m < batch pads the rest; m may be 0:
     * an empty micro-batch, all padding, which adds nothing to the gradient). */
    int (*fill)(void *ctx, const int64_t *rows, int m, int k);
    /* Feed every slice's inputs and labels to train. */
    int (*feed)(void *ctx);
    /* After each epoch (and at a time limit): score the held-out data with the current weights,
     * write it (pr's lines, the task's metrics); train_loss is the epoch's mean. */
    int (*epoch_end)(void *ctx, int epoch, int64_t step, int last, double train_loss, ts_progress *pr);
    /* Write the model directory. */
    int (*save)(void *ctx);
    /* Write a full-state checkpoint at step. */
    int (*checkpoint)(void *ctx, int64_t step);
    /* The last line, after the final save: what was reached in `step` steps and `seconds`. */
    void (*report)(void *ctx, int64_t step, double seconds);
} ts_epoch_task;

/* How ts_train_epochs runs. Every line begins with `name`. */
typedef struct ts_epochs_opts {
    size_t struct_size;
    const char *name;             /* the lines' prefix ("tessera finetune"; NULL: "train") */
    ts_write_fn out;              /* lines and progress (may be NULL) */
    void *out_ctx;
    int tty;                      /* out is a terminal: a progress line redrawn in place */
    ts_write_fn err;              /* error lines (may be NULL) */
    void *err_ctx;
    ts_write_fn metrics;          /* a metrics row per step, the stages' and replicas' rows (may be NULL) */
    void *metrics_ctx;
    int batch, accumulation, device_iterations; /* rows per micro-batch; micro-batches per step; steps per call */
    int epochs, max_steps;        /* max_steps: 0, or fewer steps than the epochs make */
    int seed;                     /* epoch e's order: ts_permutation(seed + 1000003 e) */
    double lr, warmup;            /* peak; linear warm-up over this share of the steps, then linear decay */
    double max_minutes;           /* stop by time (0: no limit) */
    int fp16;                     /* skip the steps whose gradients are not finite (loss scaling) */
    int save_every, stop_after;   /* model and checkpoint every N steps; end after this step (0: neither) */
    int profile;                  /* write the training step's profile at the end */
    int resumed;                  /* step is a resumed run's (for the replicas' check) */
    const char *out_dir;          /* named by the line of a stop_after */
    const ts_stage_plan *pipe;    /* the pipeline train was compiled on (NULL: one device) */
    ts_comm *comm;                /* replicas (NULL or one rank: none) */
    int shard;                    /* the optimizer state is sharded over the replicas (ZeRO-1) */
} ts_epochs_opts;

/* Optimizer steps in one epoch of n rows (0 when, with device iterations, n rows do not fill one
 * call: the calls take whole steps, as PopTorch's DataLoader drops the last). */
TS_API int64_t ts_epoch_steps(int64_t n, int batch, int accumulation, int device_iterations, int ranks);
/* Train task t: epochs over t->nrows rows in the order of ts_permutation(seed + 1000003 epoch),
 * one optimizer step per accumulation x batch rows (x the replicas), from `step` (a resumed
 * run's), under the learning-rate schedule (and max_minutes), writing metrics, checkpoints
 * (save_every), stopping at stop_after, saving the model and reporting at the end. TS_OK;
 * TS_ERR_ARG when the rows do not fill one call or step is not a multiple of device_iterations;
 * another code when running fails (the error line written to err, or by the task). */
TS_API ts_status ts_train_epochs(const ts_epochs_opts *o, const ts_epoch_task *t, int64_t step);

/* ---------------------------------------------------------------- a classifier's rows (apps/train/classify_rows.c) */

/* Where a classifier's rows come from, and where the lines go. */
typedef struct ts_classify_rows_opts {
    size_t struct_size;
    const char *name;        /* the lines' prefix ("tessera finetune") */
    ts_write_fn out;         /* the line of the rows' counts (may be NULL) */
    void *out_ctx;
    ts_write_fn err;         /* error lines, naming the files as --train and --dev (may be NULL) */
    void *err_ctx;
    const char *train, *dev; /* the files; dev NULL: the test rows are a split of train */
    ts_text_columns text;    /* the columns (its labels are ignored: train's, sorted); fixed, not
                                a ts_text_opts, which may grow (tessera.h) */
    double test_split;       /* without dev: the share of the deduplicated rows tested, below 1 (0: none) */
    uint64_t split_seed;     /* the split's shuffle */
} ts_classify_rows_opts;

/* Read o->train (at least two labels), deduplicate it and split it into *train and *test (no text
 * in both; *test NULL without a split), or take *test from o->dev with train's label ids; write
 * the counts' line. TS_OK; TS_ERR_ARG when a file cannot be used (the line written to err);
 * another code when deduplicating or splitting fails. Free both (set or NULL) whatever the result. */
TS_API ts_status ts_classify_rows_load(const ts_classify_rows_opts *o, ts_text_dataset **train, ts_text_dataset **test);

/* ---------------------------------------------------------------- fine-tuning tasks (apps/train/finetune_tasks.c) */

/* A fine-tuning task for ts_train_epochs: what it trains and scores, where its lines go. The
 * model directory and the checkpoints are the caller's (save, checkpoint, called with ctx). */
typedef struct ts_finetune_task_opts {
    size_t struct_size;
    const char *name;               /* the lines' prefix ("tessera finetune") */
    ts_write_fn out;                /* the last line (may be NULL) */
    void *out_ctx;
    ts_write_fn err;                /* error lines (may be NULL) */
    void *err_ctx;
    ts_write_fn metrics;            /* a metrics row per test (may be NULL) */
    void *metrics_ctx;
    ts_program *train, *infer;      /* compiled for `slices` micro-batches of [batch, seq] a call; infer for one */
    int batch, seq, slices;
    const char *out_dir;            /* named by the last line */
    /* Sequence classification (ts_classify_task_new): */
    const ts_tokenizer *tok;
    const ts_text_dataset *train_rows, *test_rows; /* test_rows may be NULL: no test */
    int test_every;                 /* test after every N-th epoch and the last (0: the last only) */
    const char *const *labels;      /* the label names, in id order */
    /* Question answering (ts_squad_task_new): */
    const ts_squad *squad_train, *squad_dev; /* squad_dev may be NULL: no scores */
    int n_best, max_answer_len;     /* decoding, as ts_squad_score_program */
    void *ctx;
    int (*save)(void *ctx);
    int (*checkpoint)(void *ctx, int64_t step);
} ts_finetune_task_opts;

/* A task's state (its batches, its last scores); free with ts_finetune_task_free. */
typedef struct ts_finetune_task ts_finetune_task;

/* A sequence classifier's task into t: train_rows encoded as ts_text_dataset_batch, test_rows
 * scored with ts_classify_accuracy (lines and metrics rows "test_accuracy" beside the majority
 * baseline), the last line naming both. NULL on a bad struct_size or out of memory. */
TS_API ts_finetune_task *ts_classify_task_new(const ts_finetune_task_opts *o, ts_epoch_task *t);
/* Question answering's task into t: squad_train's windows (their answer positions, a window
 * without the answer ignored by the loss), squad_dev scored with ts_squad_score_program (EM and
 * F1) after each epoch. NULL on a bad struct_size or out of memory. */
TS_API ts_finetune_task *ts_squad_task_new(const ts_finetune_task_opts *o, ts_epoch_task *t);
TS_API void ts_finetune_task_free(ts_finetune_task *f);

/* ---------------------------------------------------------------- int8 copies of a model directory
 * (apps/train/quantize_dir.c, calibrate.c, quantize_eval.c: what `tessera quantize` does) */

/* "minmax", "percentile" or "entropy" for a TS_CALIB_* method ("?" for another value). */
TS_API const char *ts_calib_method_name(int method);
/* The TS_CALIB_* method named `name`, or -1 (error set, TS_ERR_ARG). */
TS_API int ts_calib_method_parse(const char *name);

/* What ts_quantize_model_dir writes. The messages name these fields ("calib_file data.tsv has no
 * rows to calibrate on"). */
typedef struct ts_quantize_opts {
    size_t struct_size;
    const char *model_dir;    /* the float model: a fine-tuned classifier or QA model (config.json,
                                 model.safetensors, vocab.txt), not quantized already */
    const char *out_dir;      /* the int8 copy written (not model_dir; made with its parents) */
    int mode;                 /* TS_QUANT_DYNAMIC (activations' scales taken on every run, no data),
                                 or TS_QUANT_STATIC (calibrated on calib_file) */
    const char *calib_file;   /* static only: a classifier's labelled .tsv / .csv / .jsonl (the labels
                                 unused), or a QA model's SQuAD .json or questions .jsonl */
    int method;               /* static: TS_CALIB_* (TS_CALIB_MINMAX is 0: set it) */
    int samples;              /* static: rows (QA: windows) calibrated on, a seeded shuffle of
                                 calib_file's (0: 256); recorded in the copy's config */
    const char *eval_file;    /* score the float and the int8 model on it, side by side (NULL: no
                                 scores): a classifier's labelled file (accuracy), a SQuAD .json (F1) */
    double max_drop;          /* with eval_file: refuse to write out_dir when int8 loses more than
                                 this many points (of accuracy, of F1); below 0: no limit */
    const char *text_column, *label_column; /* a classifier's data columns (NULL: "text", "label") */
    int batch;                /* sequences per forward pass (0: 32) */
    int threads;              /* CPU threads (0: all) */
    size_t memory_limit;      /* bytes a program may take (0: the device's) */
    int load_flags;           /* ts_program_load's for the weights (TS_LOAD_STRICT implied) */
} ts_quantize_opts;

/* What ts_quantize_model_dir did, filled as far as it went (also on failure). */
typedef struct ts_quantize_report {
    size_t struct_size;
    int task;                 /* TS_FINETUNE_CLASSIFY or TS_FINETUNE_QA (0: the model was not read) */
    int calibrated;           /* static: the scales were measured */
    int64_t calib_samples;    /* rows (classifier) or windows (QA) calibrated on */
    int nscales;              /* activation scales measured (one per quantizable matmul) */
    double calib_seconds;
    int evaluated;            /* eval_file was scored, float and int8 */
    int64_t eval_rows;        /* rows (classifier) or questions (QA) scored */
    double float_score, int8_score; /* accuracy (percent) of a classifier, F1 of a QA model */
    double float_em, int8_em; /* QA: exact match */
    double max_prob_diff, mean_prob_diff; /* classifier: |float - int8| of the class probabilities */
    double drop;              /* float_score - int8_score: the points int8 loses */
    int written;              /* out_dir was written */
} ts_quantize_report;

/* Make an int8 copy of o->model_dir: with TS_QUANT_STATIC calibrate the activation scales (ts_calib,
 * o->method) on the first o->samples rows of a seeded shuffle of calib_file run through the float
 * model; with eval_file score the float and the int8 model on it (a refused copy when int8 loses
 * more than max_drop points); then write out_dir: model_dir's regular files (the f32 weights
 * unchanged; its run lock left out) and a config.json that ends with the "quantization" record
 * ({"mode": "dynamic" | "static", "method", "samples", "scales": {weight: scale}}), which
 * ts_quant_record_load reads. Each file is written atomically into a sibling directory
 * OUT.tmp-PID that is then renamed to out_dir (moved file by file into an out_dir that holds files
 * already, config.json last), so a failure leaves no partial out_dir. report (may be NULL; its
 * struct_size set) gets what was done. The caller keeps o and its strings. TS_OK; TS_ERR_ARG when
 * an option or an input is at fault (a missing or quantized model, not a fine-tuned classifier or
 * QA model, calibration or evaluation data of the other task or without rows, a model without a
 * quantizable matmul); TS_ERR_RUNTIME when int8 loses more than max_drop (out_dir not written), or
 * every calibrated activation was zero; TS_ERR_IO when out_dir cannot be written; another code when
 * running fails. Thread: one call per thread at a time; calls on several threads must not share
 * out_dir. */
TS_API ts_status ts_quantize_model_dir(const ts_quantize_opts *o, ts_quantize_report *report);

/* ---------------------------------------------------------------- ensembles of classifiers (apps/train/ensemble.c) */

/* Several fine-tuned sequence classifiers with the same labels, predicting as one: a text's class
 * probabilities are the mean of the members', each member encoding the text with its own
 * vocabulary and row length. */
typedef struct ts_ensemble ts_ensemble;

/* A member's inference program (a TS_BERT_SEQ_CLASSIFICATION of batch x seq fetching "logits",
 * weights loaded), made by the caller: NULL on failure, its error set (or reported its own way). */
typedef ts_program *(*ts_ensemble_program_fn)(void *ctx, const char *dir, const ts_bert_config *cfg, int batch,
                                              int seq);
/* A classified text of ts_ensemble_flush: the label of the largest mean probability, and that mean. */
typedef void (*ts_ensemble_result_fn)(void *ctx, const char *text, int label, double prob);

typedef struct ts_ensemble_opts {
    size_t struct_size;
    int batch;                /* texts per forward pass of each member (0: 8) */
    int threads;              /* CPU threads (0: all) */
    size_t memory_limit;      /* bytes a member's program may take (0: the device's) */
    int load_flags;           /* ts_program_load's for the weights (TS_LOAD_STRICT implied) */
    const char *device;       /* the device the programs run on (NULL: the CPU) */
    ts_ensemble_program_fn program; /* makes each member's program (NULL: the library does, as the
                                 directory says: its "quantization" record, its weights) */
    void *program_ctx;
    ts_ensemble_result_fn result; /* receives ts_ensemble_flush's results, in order (may be NULL) */
    void *result_ctx;
} ts_ensemble_opts;

/* Open the n model directories dirs[0 .. n) as one ensemble (n >= 1; one is an ensemble of one):
 * each a sequence classifier with the same labels, in the same order, and the same text-pair column
 * as dirs[0] (ts_model_meta_same_labels), its inference program compiled for o->batch rows of its
 * own max_len. The ensemble owns what it opens (free with ts_ensemble_free); dirs are copied. NULL
 * with the error set, its message beginning with the directory at fault ("B is not the same kind of
 * classifier as A (labels or text columns differ) ..."): TS_ERR_ARG for a directory that cannot be
 * read, is not a fine-tuned classifier or disagrees with dirs[0]; the program's own code when it
 * cannot be made (with o->program, its error as it left it). Thread: an ensemble is used by one
 * thread at a time. */
TS_API ts_ensemble *ts_ensemble_open(const char *const *dirs, int n, const ts_ensemble_opts *o);
TS_API void ts_ensemble_free(ts_ensemble *e);
/* The members; the first member's config.json (its labels and text-pair column: those of all). */
TS_API int ts_ensemble_size(const ts_ensemble *e);
TS_API const ts_model_meta *ts_ensemble_meta(const ts_ensemble *e);
/* The mean class probabilities of texts[0 .. n) (any n, run o->batch at a time; a text-pair
 * ensemble splits each text at its first tab) into probs [n, labels]. */
TS_API ts_status ts_ensemble_classify(ts_ensemble *e, const char *const *texts, int n, double *probs);
/* Add every member's class probabilities of each row of d (read with the ensemble's labels) to
 * probs [rows, labels] (their sum: ts_classify_count_right takes its largest). An error names the
 * member. */
TS_API ts_status ts_ensemble_add_dataset(ts_ensemble *e, const ts_text_dataset *d, double *probs);
/* Queue a text (copied) for classification; when o->batch texts are queued they are classified
 * (ts_ensemble_flush). TS_ERR_ARG for a text-pair ensemble's text without a tab. */
TS_API ts_status ts_ensemble_add_text(ts_ensemble *e, const char *text);
/* Classify the queued texts, passing each to o->result in the order queued, and empty the queue. */
TS_API ts_status ts_ensemble_flush(ts_ensemble *e);
/* Each line of data_file (NULL or "-": standard input), a final "\n" or "\r\n" cut, queued as
 * ts_ensemble_add_text does as it is read (a batch's results come before the lines after it are
 * read: a stream is answered as it comes), then ts_ensemble_flush (apps/train/ensemble.c). TS_OK;
 * TS_ERR_ARG "data_file PATH: ..." when the file cannot be opened, "NAME:LINE: ..." for a line
 * refused (NAME: the path, or "stdin"); TS_ERR_IO "reading NAME: ..."; a classification's error. */
TS_API ts_status ts_ensemble_add_lines(ts_ensemble *e, const char *data_file);
/* data_file classified as `tessera predict --data` reads it (apps/train/ensemble_file.c): a .tsv,
 * .csv or .jsonl (.json) file whose first non-blank line is a header naming the text column
 * ("text") or the label column (label_column, else "label"), a JSONL file whose first line is an
 * object, or any such file when a column is given, is read as a table as ts_ensemble_eval_file
 * reads it: each row's text_column (NULL: "text"; a text-pair ensemble also its text_b_column,
 * NULL: the ensemble's) is queued, the header and the labels left out; any other file (NULL or
 * "-": standard input) is one text a line (ts_ensemble_add_lines). Then ts_ensemble_flush.
 * TS_ERR_ARG naming the reason: a column given for a file that is not such a table, a table
 * without the column, a text_b_column for a single-text ensemble; else as ts_ensemble_add_lines. */
TS_API ts_status ts_ensemble_add_file(ts_ensemble *e, const char *data_file, const char *text_column,
                                      const char *text_b_column, const char *label_column);
/* How model directories dirs[0 .. n) run, in the words `tessera run`, `eval` and `predict` print:
 * "int8 dynamic" or "int8 calibrated" for copies from tessera quantize (their quantization records,
 * ts_quant_record_load), "f32" otherwise (also for a record that cannot be read: loading the model
 * says why); when the members differ, "int8 and f32 members" or "int8 dynamic and calibrated
 * members". A static string. */
TS_API const char *ts_model_dirs_precision(const char *const *dirs, int n);

/* What ts_ensemble_eval_file scores. The messages name these fields. */
typedef struct ts_ensemble_eval_opts {
    size_t struct_size;
    const char *data_file;    /* labelled rows: .tsv / .csv / .jsonl, read with the ensemble's labels */
    const char *text_column, *text_b_column, *label_column; /* NULL: "text", the ensemble's, "label" */
    double test_split;        /* above 0: score only the part ts_text_dataset_split holds out (below 1) */
    uint64_t split_seed;      /* that split's seed */
} ts_ensemble_eval_opts;

/* What ts_ensemble_eval_file found. */
typedef struct ts_ensemble_eval_report {
    size_t struct_size;
    int64_t rows;             /* rows scored */
    int64_t correct, total;   /* labelled rows scored right (the largest mean probability), of total */
    int majority;             /* the most frequent label of the rows not held out (all without a split) */
    double baseline;          /* the accuracy (a fraction) of always answering it, on the rows scored */
} ts_ensemble_eval_report;

/* Score ensemble e on o->data_file (every row, no deduplication; with test_split only its held-out
 * part, deduplicated then split as tessera finetune splits) beside the majority-class baseline
 * into report (its struct_size set). TS_OK; TS_ERR_ARG naming the field at fault ("data_file
 * FILE: ...", "data_file FILE has no rows to score", "test_split 1 holds out every row"); another
 * code when splitting or scoring fails ("scoring FILE: MEMBER: ..."). */
TS_API ts_status ts_ensemble_eval_file(ts_ensemble *e, const ts_ensemble_eval_opts *o, ts_ensemble_eval_report *report);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_TASKS_H */
