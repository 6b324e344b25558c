/*
 * tessera_tasks.h — what the tessera command does, as library calls: resumable runs, held-out
 * evaluation, stage balancing, answer decoding. Each is what a `tessera` subcommand does between
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

/* ---------------------------------------------------------------- a model's inputs from stored tensors */

/* t in dtype `want`, for a model input that declares it: t itself when it already is, else a new
 * tensor (the caller frees both). Only conversions that keep every value's meaning: between
 * float types, between integer types (u8 included) within range. NULL when t cannot be
 * converted: TS_ERR_DTYPE ("is f32 but the model's input is i64") or TS_ERR_RUNTIME (an element
 * out of range, named); the message reads after the tensor's name. */
TS_API ts_tensor *ts_tensor_convert_exact(ts_tensor *t, ts_dtype want);

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

/* ---------------------------------------------------------------- replicas (src/train/replicas.c)
 * Moved from the CLI's `pretrain` / `finetune` (issue 24): what a data-parallel run over the ranks
 * of a communicator checks, so a library user's run can check it too. */

/* Which ranks of comm hold parameters that differ from rank 0's: every rank hashes its program's
 * parameters (bytes, in the program's order) and the hashes are gathered. ranks (room for
 * ts_comm_size(comm) - 1) receives those rank numbers in increasing order, their count in *nranks
 * (0 with one rank). Collective: every rank calls it. TS_OK, or the error of the hash or the
 * gathering. */
TS_API ts_status ts_replicas_params_differ(ts_comm *comm, const ts_program *p, int *ranks, int *nranks);

/* ---------------------------------------------------------------- exporting a BERT (src/train/bert_export.c)
 * Moved from `tessera export` (issue 24). */

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
 * head's outputs float, the parameters as initializers named as in model.safetensors. info is
 * filled as above. TS_OK, or the error (set). */
TS_API ts_status ts_bert_export_onnx(const ts_bert_config *config, const ts_bert_export_opts *o, const char *path,
                                     ts_bert_export_info *info);

/* ---------------------------------------------------------------- a split written out (src/data/text_write.c)
 * Moved from `tessera split` (issue 24). */

/* Write a train / test split (ts_text_dataset_split) into directory dir, which must exist:
 * train.tsv and test.tsv (ts_text_dataset_write_tsv, every row), train.txt (the training texts as
 * a pretraining corpus, ts_text_dataset_write_corpus) and, for each of subsets[0 .. nsubsets),
 * train-N.tsv holding the first N rows of train.tsv (N at most the training rows). TS_OK, or the
 * error naming the file ("PATH: reason"); on TS_ERR_NOMEM, "out of memory". */
TS_API ts_status ts_text_split_write(const ts_text_dataset *train, const ts_text_dataset *test, const char *dir,
                                     const int *subsets, int nsubsets);

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

/* Encode texts[0 .. n) (n <= bb->batch; with `pairs`, a tab splits a text into its pair), pad
 * the rest of the batch buffer bb (bb->batch x bb->seq, as the inference program takes it), run
 * the classifier `infer` (fetching "logits" [B, C]) and add each text's class probabilities (the
 * softmax) to probs [n, nlabels]; nothing is added when C != nlabels. Several programs adding
 * to one probs make an ensemble. */
TS_API ts_status ts_classify_texts_add_probs(ts_program *infer, ts_batch_buf *bb, const ts_tokenizer *tok,
                                             const char *const *texts, int n, int pairs, int nlabels, double *probs);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_TASKS_H */
