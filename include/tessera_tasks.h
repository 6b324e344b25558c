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
/* ts_squad_load, then ts_squad_check (with need_answers a note line when answers were relocated):
 * lines "NAME: FLAG ..." to err (may be NULL), `flag` naming where the file came from ("--train").
 * NULL on failure, the line written (src/train/squad_load.c). */
TS_API ts_squad *ts_squad_load_checked(const char *path, const ts_tokenizer *tok, const ts_squad_opts *so,
                                       int need_answers, const char *name, const char *flag, ts_write_fn err,
                                       void *err_ctx);
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

/* ---------------------------------------------------------------- replicas (src/train/replicas.c)
 * What a data-parallel run over the ranks of a communicator checks. */

/* Which ranks of comm hold parameters that differ from rank 0's: every rank hashes its program's
 * parameters (bytes, in the program's order) and the hashes are gathered. ranks (room for
 * ts_comm_size(comm) - 1) receives those rank numbers in increasing order, their count in *nranks
 * (0 with one rank). Collective: every rank calls it. TS_OK, or the error of the hash or the
 * gathering. */
TS_API ts_status ts_replicas_params_differ(ts_comm *comm, const ts_program *p, int *ranks, int *nranks);

/* ---------------------------------------------------------------- exporting a BERT (src/train/bert_export.c) */

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

/* ---------------------------------------------------------------- a split written out (src/data/text_write.c) */

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

/* ---------------------------------------------------------------- a training run's lines (src/train/run_report.c) */

/* printf into w (nothing when w is NULL): one call of w per call. */
TS_API void ts_writef(ts_write_fn w, void *ctx, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Seconds on the monotonic clock (for durations; src/core/clock.c, the library's one clock). */
TS_API double ts_seconds(void);

/* The progress line of a training run: on a terminal (tty) "step s/total  loss L  R seq/s  ETA
 * ..." redrawn in place with \r, at most ten times a second; elsewhere nothing. The caller owns
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

/* ---------------------------------------------------------------- a pretraining run (src/train/pretrain_run.c) */

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

/* ---------------------------------------------------------------- training in epochs over rows (src/train/epochs.c) */

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

/* ---------------------------------------------------------------- a classifier's rows (src/train/classify_rows.c) */

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

/* ---------------------------------------------------------------- fine-tuning tasks (src/train/finetune_tasks.c) */

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

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_TASKS_H */
