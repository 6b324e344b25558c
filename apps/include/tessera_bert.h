/*
 * tessera_bert.h — BERT as Hugging Face builds it: configuration, the model and its heads,
 * model directories (config.json, model.safetensors, vocab.txt) and the programs of a training run.
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_BERT_H
#define TESSERA_BERT_H

#include "tessera_core.h"
#include "tessera_train.h"
#include "tessera_text.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- BERT (apps/models/bert.c) */
/* BERT as Hugging Face transformers builds it (BertModel and four of its heads), made of the ops
 * above. Parameters carry transformers' state-dict names, so a Hugging Face model.safetensors
 * loads with ts_program_load and a saved program loads back into transformers:
 *   bert.embeddings.{word,position,token_type}_embeddings.weight, bert.embeddings.LayerNorm.*,
 *   bert.encoder.layer.N.attention.self.{query,key,value}.*, ...attention.output.dense.*,
 *   ...attention.output.LayerNorm.*, ...intermediate.dense.*, ...output.dense.*,
 *   ...output.LayerNorm.*, bert.pooler.dense.*, and the heads' own (see ts_bert_head).
 * Linear weights keep PyTorch's [out, in] layout (y = x W^T + b).
 * The MLM decoder is tied to the word embeddings, as in transformers: logits = h E^T + bias with
 * E = bert.embeddings.word_embeddings.weight and bias = cls.predictions.bias. There is no
 * parameter cls.predictions.decoder.weight (nor .decoder.bias): in a checkpoint those copies are
 * ignored by ts_program_load, and ts_program_save omits them (transformers re-ties them on load).
 * Every name starts with "bert." whatever the head, as in the heads' state dicts; a bare
 * BertModel checkpoint (names without the prefix) must be renamed to load.
 * One BERT per graph: inputs and outputs have fixed names (below).
 * Not supported: position_embedding_type other than "absolute", decoders / cross-attention,
 * head masks, past key values; Hugging Face's zeroing of the [PAD] embedding row at init. */

/* The activation of the FFN and of the MLM transform (config "hidden_act"). */
typedef enum ts_bert_act {
    TS_BERT_GELU = 0,  /* "gelu", "gelu_python": x Phi(x), the erf form */
    TS_BERT_GELU_TANH, /* "gelu_new", "gelu_pytorch_tanh", "gelu_fast": the tanh approximation */
    TS_BERT_RELU,      /* "relu" */
} ts_bert_act;

/* Which model ts_bert_build makes (config "architectures"). Inputs and outputs, by name (B batch,
 * T sequence, C hidden, V vocabulary): every head has the inputs input_ids, token_type_ids
 * (i32 [B, T]) and attention_mask ([B, T], 1 keep / 0 padding, i32 or f32: see
 * attention_mask_dtype) and the output last_hidden_state (f32 [B, T, C]); training heads add
 * label inputs and a scalar "loss" (a mean over the batch, as transformers' losses). An input a
 * compiled program does not read (labels in a program compiled for inference) may go unfed. */
typedef enum ts_bert_head {
    /* BertModel: pooler_output [B, C] = tanh(last_hidden_state[:, 0] Wp^T + bp). */
    TS_BERT_MODEL = 0,
    /* BertForPreTraining: prediction_logits [B, T, V] (MLM), seq_relationship_logits [B, 2]
     * (NSP, from the pooler); labels i32 [B, T] (-100: not predicted), next_sentence_label i32
     * [B] (0: B follows A); loss = mlm_loss + nsp_loss, both cross-entropies, also fetchable.
     * Parameters cls.predictions.transform.dense.*, cls.predictions.transform.LayerNorm.*,
     * cls.predictions.bias, cls.seq_relationship.*.
     * With max_predictions_per_seq P > 0 (Google's original run_pretraining.py, and Graphcore's
     * BERT), the MLM head runs on P gathered positions per sequence only: input
     * masked_lm_positions i32 [B, P] (positions in [0, T); padding entries any valid position
     * with label -100), labels i32 [B, P], prediction_logits [B, P, V]. The loss is the same
     * (a mean over the labelled positions) when the positions list every labelled one; the
     * decoder's V-wide product then costs P / T of the full head's. */
    TS_BERT_PRETRAINING,
    /* BertForMaskedLM: logits [B, T, V] (no pooler); labels i32 [B, T] (-100 ignored);
     * loss = their cross-entropy. Parameters cls.predictions.* as above. */
    TS_BERT_MASKED_LM,
    /* BertForSequenceClassification: logits [B, num_labels] = dropout(pooler_output) Wc^T + bc
     * (classifier.*); labels [B]: i32 class ids and a cross-entropy loss, or for num_labels == 1
     * f32 targets and a mean squared error (transformers' "regression"). */
    TS_BERT_SEQ_CLASSIFICATION,
    /* BertForQuestionAnswering: start_logits, end_logits [B, T] from qa_outputs.* [2, C] (no
     * pooler); start_positions, end_positions i32 [B]; loss = (CE(start) + CE(end)) / 2. A
     * position equal to T is ignored (transformers clamps positions to [0, T] and ignores T);
     * one outside [0, T] fails the run with TS_ERR_RUNTIME instead of being clamped. */
    TS_BERT_QUESTION_ANSWERING,
} ts_bert_head;

/* A BERT configuration: the fields of a Hugging Face config.json, plus build choices. */
/* Bounds on a config's sizes, far above any real BERT (bert-large: V 30522, C 1024, 24 layers,
 * FFN 4096, 512 positions) and far below sizes that would overflow or take minutes to build
 * before the memory check of ts_compile could refuse them. A config beyond one is TS_ERR_ARG,
 * naming the field, when it is read (ts_bert_config_load) or built (ts_bert_build). */
#define TS_BERT_MAX_VOCAB (1 << 24)        /* vocab_size */
#define TS_BERT_MAX_HIDDEN (1 << 16)       /* hidden_size, num_attention_heads */
#define TS_BERT_MAX_LAYERS 1024            /* num_hidden_layers */
#define TS_BERT_MAX_INTERMEDIATE (1 << 20) /* intermediate_size */
#define TS_BERT_MAX_POSITIONS (1 << 20)    /* max_position_embeddings */
#define TS_BERT_MAX_TYPES (1 << 16)        /* type_vocab_size */
#define TS_BERT_MAX_LABELS (1 << 20)       /* num_labels */

typedef struct ts_bert_config {
    size_t struct_size; /* sizeof(ts_bert_config) (0: the 0.1.0 layout; see tessera.h) */
    int vocab_size;                     /* V: rows of the word embeddings */
    int hidden_size;                    /* C */
    int num_hidden_layers;              /* encoder layers */
    int num_attention_heads;            /* must divide hidden_size */
    int intermediate_size;              /* FFN width */
    int max_position_embeddings;        /* the longest sequence */
    int type_vocab_size;                /* segment ids: 0 .. type_vocab_size - 1 */
    ts_bert_act hidden_act;
    float hidden_dropout_prob;          /* embeddings, attention output, FFN output, in [0, 1) */
    float attention_probs_dropout_prob; /* attention probabilities, in [0, 1) */
    float classifier_dropout;           /* sequence classification; < 0: hidden_dropout_prob */
    float layer_norm_eps;               /* > 0; 1e-12 in BERT */
    float initializer_range;            /* std of the weights' normal initializer */
    int num_labels;                     /* classes of the sequence classifier */
    ts_bert_head head;                  /* from architectures[0]; TS_BERT_MODEL if absent/unknown */
    char architecture[64];              /* architectures[0] as written ("" when absent) */
    /* Not in config.json: */
    ts_dtype attention_mask_dtype;      /* of the attention_mask input: TS_I32 (default, what
                                           ts_encode writes) or TS_F32 */
    ts_dtype compute_dtype;             /* of the matmuls: TS_F32 (default), TS_BF16 or TS_F16,
                                           mixed precision as PyTorch's autocast (ts_bert_build) */
    int recompute;                      /* non-zero: each encoder layer is a recompute segment
                                           (ts_graph_recompute_begin): training keeps one
                                           [B, T, C] checkpoint per layer instead of every
                                           layer's activations; same gradients (default 0) */
    const int *layer_stages;            /* pipeline placement (ts_graph_stage_begin): the stage
                                           of each encoder layer (num_hidden_layers of them;
                                           NULL: no placement); embeddings and the attention
                                           mask go on embedding_stage, the pooler and head on
                                           head_stage; stages must not decrease along the
                                           forward pass */
    int embedding_stage, head_stage;
    int untie_word_embeddings;          /* non-zero: the MLM decoder is a weight of its own,
                                           cls.predictions.decoder.weight [V, C], not the word
                                           embeddings (config.json "tie_word_embeddings": false;
                                           default 0: tied, as BERT) */
    int max_predictions_per_seq;        /* pre-training: P > 0 runs the MLM head on P gathered
                                           positions (see TS_BERT_PRETRAINING), for batches of
                                           at most 2^24 tokens; 0: on all T */
    int max_sequences_per_pack;         /* S > 1: packed rows, up to S sequences in each row of T
                                           tokens (Krell et al. 2021; see "Packed sequences" at
                                           ts_bert_build); 0 or 1 (default): one per row */
    int eager_attention;                /* 1: attention as separate ops (matmul, softmax, dropout,
                                           matmul: transformers' attn_implementation "eager");
                                           0 (default): one fused op per layer (ts_attention, made
                                           by ts_graph_fuse_attention at the end of ts_bert_build),
                                           the same numbers and dropout masks without storing the
                                           [B, H, T, T] scores. Read only when struct_size is
                                           sizeof(ts_bert_config): ts_bert_config_default fills the
                                           base layout, so set struct_size after it to use this */
} ts_bert_config;

/* Hugging Face's BertConfig() defaults (bert-base-uncased): V 30522, C 768, 12 layers, 12 heads,
 * FFN 3072, 512 positions, 2 segment types, GELU, dropouts 0.1, classifier_dropout -1,
 * layer_norm_eps 1e-12, initializer_range 0.02, num_labels 2, head TS_BERT_MODEL, i32 mask,
 * f32 compute, no recomputation. cfg need not be set up: its base layout is filled, struct_size
 * included (tessera.h). */
TS_API void ts_bert_config_default(ts_bert_config *cfg);

/* Read a Hugging Face config.json into *cfg. Required: vocab_size, hidden_size,
 * num_hidden_layers, num_attention_heads, intermediate_size, max_position_embeddings,
 * type_vocab_size (positive integers). Optional, with ts_bert_config_default's values when
 * absent: hidden_act, hidden_dropout_prob, attention_probs_dropout_prob, classifier_dropout (null
 * allowed), layer_norm_eps, initializer_range, architectures, num_labels or id2label (whose
 * entry count gives num_labels; both present must agree). Other keys are ignored, except that
 * position_embedding_type other than "absolute", is_decoder true and add_cross_attention true are
 * TS_ERR_UNSUPPORTED, as is an unknown hidden_act. Errors name the file and the field: an
 * unreadable file or invalid JSON (TS_ERR_IO, with the byte offset), a missing field, a wrong
 * JSON type or a non-integer where an integer is due, a non-positive size or one above its
 * TS_BERT_MAX_* bound, a probability outside
 * [0, 1), hidden_size not divisible by num_attention_heads (TS_ERR_ARG). On failure *cfg is left
 * unchanged. cfg is filled as tessera.h says: set cfg->struct_size first (sizeof, or 0 for the
 * base layout; ts_bert_config_default sets it). */
TS_API ts_status ts_bert_config_load(const char *path, ts_bert_config *cfg);

/* TS_OK when cfg is one ts_bert_build accepts (sizes positive and within the bounds above,
 * hidden_size divisible by num_attention_heads, probabilities in [0, 1), ...), else TS_ERR_ARG
 * with a message naming the field ("field \"hidden_size\" is 1000000000, above tessera's bound of
 * 65536 for it"). */
TS_API ts_status ts_bert_config_check(const ts_bert_config *cfg);

/* The values ts_bert_build made; TS_NONE for what the head does not have. */
typedef struct ts_bert_outputs {
    ts_value input_ids, token_type_ids, attention_mask;                 /* inputs */
    ts_value masked_lm_positions;           /* pre-training with max_predictions_per_seq > 0 */
    ts_value labels, next_sentence_label, start_positions, end_positions; /* label inputs */
    ts_value last_hidden_state, pooler_output;                          /* f32 [B, T, C], [B, C] */
    ts_value prediction_logits, seq_relationship_logits;                /* pre-training */
    ts_value logits;                                                    /* masked LM, classifier */
    ts_value start_logits, end_logits;                                  /* question answering */
    ts_value loss, mlm_loss, nsp_loss;                                  /* scalars */
} ts_bert_outputs;

/* Packed sequences (cfg->max_sequences_per_pack S > 1): each of the B rows holds up to S
 * sequences ([CLS] ... [SEP] each, as ts_pack_sequences places them), and the model computes for
 * each sequence exactly what it computes for that sequence alone (up to float rounding):
 *   attention_mask  i32 [B, T]: the sequence index of each token, 1 .. S, 0 on padding (S = 1 is
 *                   the usual 1 / 0 mask); the additive mask becomes block-diagonal [B, 1, T, T]:
 *                   0 where query and key are in the same sequence (index > 0), else -10000, so
 *                   no token attends outside its sequence and padding keys are masked
 *   position_ids    i32 [B, T] (a new input): each token's position within its sequence (0 at
 *                   its [CLS]), gathered from the position table instead of 0 .. T-1
 *   cls_positions   i32 [B, S] (a new input, for the heads with a pooler: BertModel, pre-training,
 *                   sequence classification): the row position of each sequence's [CLS]; an empty
 *                   slot may hold any position in [0, T) (its labels are TS_IGNORE_INDEX). The
 *                   pooler runs on those rows: pooler_output [B, S, C].
 *   pre-training    seq_relationship_logits [B, S, 2], next_sentence_label i32 [B, S]; the MLM
 *                   head is per token as unpacked (labels [B, T], or [B, P] with
 *                   masked_lm_positions, positions within the row)
 *   classification  logits [B, S, num_labels], labels i32 [B, S] (num_labels 1, regression, is
 *                   not packed: TS_ERR_ARG)
 *   QA              start_logits, end_logits [B, T] as unpacked; start_positions, end_positions
 *                   i32 [B, S]: row positions, T (or any other sequence's token) never the answer
 *                   since each sequence's softmax runs over its own tokens only (the others'
 *                   logits get -10000, which exp() takes to 0 exactly); T is ignored
 * Every loss stays a mean over what is labelled: NSP and classification over the real sequences
 * (empty slots are TS_IGNORE_INDEX), MLM over the masked tokens, QA over the sequences whose
 * position is not T. So a packed batch has the loss and gradients of the unpacked batch of the
 * same sequences, one per row; and QA's per-sequence loss is that of the sequence run alone at
 * its own length (an unpacked row's QA softmax also spans its padding, as in transformers).
 * Dropout draws other masks for other layouts. S must be at most seq. */

/* Add a BERT with the given head for batches of `batch` sequences of `seq` tokens to graph g:
 * its inputs, parameters (initialised as transformers does: weights and embeddings normal(0,
 * initializer_range), here truncated at 2 std; biases 0; LayerNorm weight 1, bias 0) and outputs,
 * each named as listed under ts_bert_head. out (may be NULL) receives the values.
 *   embeddings  x = LayerNorm(word[input_ids] + position[0:T] + token_type[token_type_ids])
 *   mask        (1 - attention_mask) * -10000, as [B, 1, 1, T], added to every attention score
 *               (a padded key gets weight 0 as long as its row keeps one key; transformers now
 *               uses the dtype's minimum instead of -10000, with the same result)
 *   each layer  post-LN: h = LN(x + Attn(x)), x = LN(h + FFN(h)), FFN = W2 act(W1 h)
 * Dropout ops use the config's probabilities (none is added for 0); they are identity in a
 * program compiled with inference = 1.
 * recompute != 0 builds each encoder layer as a recompute segment (ts_graph_recompute_begin):
 * ts_backward recomputes a layer's forward before its gradients, so training keeps the layers'
 * inputs instead of all their activations (the memory saved: docs/benchmarks.md); gradients
 * are bitwise those without it; inference is unchanged.
 * compute_dtype TS_BF16 is mixed precision as torch.autocast(dtype=bfloat16) does it on CPU:
 * every matrix product (each Linear, the attention scores q k^T and context p v, the MLM
 * decoder h E^T) casts its two operands to bf16, multiplies in bf16 with f32 accumulation and
 * casts the product back to f32; the Linear's bias is then added in f32 (autocast rounds it
 * into the bf16 product instead). Everything else — embeddings, layer norm, softmax and mask,
 * activations, residual adds, the heads' losses — stays f32, and so do the parameters (master
 * weights, cast inside the graph on every run) and their gradients, which flow back through the
 * casts. Outputs are f32 either way; they differ from f32 compute by bf16 rounding (8 bits of
 * mantissa): cosine similarity above 0.999 on BERT-Base-sized random models.
 * compute_dtype TS_F16 is the same with f16 operands and products (11 bits of mantissa, but a
 * range of only +-65504: train it with ts_backward_scaled, whose loss scaling keeps small
 * gradients from flushing to zero and skips the steps where a product overflowed to inf). On
 * CPUs without AVX512_FP16 its matmuls run as f32 ones on widened operands (see ts_matmul), and
 * so do bf16's on CPUs without AVX-512: the numbers of bf16 / f16, the speed of f32 less the
 * casts.
 * Returns TS_OK, or the graph's first error: a bad argument or config (named field), seq above
 * max_position_embeddings (TS_ERR_SHAPE), a name already used in g. Call ts_backward(g, out.loss)
 * to train. */
TS_API ts_status ts_bert_build(ts_graph *g, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq,
                        ts_bert_outputs *out);

/* ---------------------------------------------------------------- model directories (apps/train/model_dir.c) */
/* A model directory as Hugging Face lays it out: config.json, model.safetensors, vocab.txt. */
typedef struct ts_tokenizer ts_tokenizer; /* the WordPiece tokenizer (see "text" below) */

/* What config.json holds besides the BERT config (keys "tessera_*" are tessera's own). */
typedef struct ts_model_meta {
    int max_len;              /* sequence length the model was trained with ("tessera_max_len") */
    int lowercase;            /* "do_lower_case" */
    char **labels;            /* id2label names, nlabels of them (NULL without a classifier) */
    int nlabels;
    char *text_b_column;      /* a text-pair classifier: the column of the second text
                                 ("tessera_text_b_column"); NULL for single texts */
    int doc_stride;           /* question answering: the windows' stride ("tessera_doc_stride") */
    int max_query_len;        /* ... and question pieces kept ("tessera_max_query_len"); 0: unset */
    int truncation;           /* how a long text is cut ("tessera_truncation"): TS_TRUNC_* */
} ts_model_meta;
TS_API void ts_model_meta_free(ts_model_meta *m);

/* Which pieces of a text too long for max_len a classifier sees: its start (the default), its
 * end, or both: the first quarter of the room from the start, the rest from the end. */
enum { TS_TRUNC_HEAD, TS_TRUNC_TAIL, TS_TRUNC_HEAD_TAIL };
TS_API extern const char *const ts_truncation_names[3]; /* "head", "tail", "head+tail" */
/* The TS_TRUNC_* of a name, or -1. */
TS_API int ts_truncation_parse(const char *value);
/* Set tok's cut (ts_tokenizer_set_truncation) for TS_TRUNC_* mode at sequence length max_len. */
TS_API void ts_truncation_apply(ts_tokenizer *tok, int mode, int max_len);

/* "BertModel", "BertForPreTraining", ... (config.json's "architectures"). */
TS_API const char *ts_bert_head_name(ts_bert_head head);
/* Write cfg and meta (may be NULL) as a Hugging Face config.json (architectures from cfg->head),
 * atomically (temp file, fsync, rename). */
TS_API ts_status ts_bert_config_save(const char *path, const ts_bert_config *cfg, const ts_model_meta *meta);
/* Write DIR/model.safetensors (ts_program_save, f32), DIR/vocab.txt (a copy of vocab_path) and
 * DIR/config.json, each atomically, config last; DIR is created. */
TS_API ts_status ts_model_save_dir(const char *dir, const ts_program *p, const ts_bert_config *cfg, const char *vocab_path,
                            const ts_model_meta *meta);
/* Read DIR/config.json into cfg and meta (free with ts_model_meta_free) and load DIR/vocab.txt
 * with the model's case and truncation. NULL on failure, the message naming the file. cfg is
 * filled as ts_bert_config_load fills it (set cfg->struct_size first). */
TS_API ts_tokenizer *ts_model_load_dir(const char *dir, ts_bert_config *cfg, ts_model_meta *meta);
/* The "quantization" record of DIR/config.json (apps/train/model_dir.c), written by tessera
 * quantize: mode TS_QUANT_DYNAMIC, or TS_QUANT_STATIC with the calibrated activation scales by
 * weight name (for ts_compile_opts.quant_scales), or TS_QUANT_NONE when the config has no record
 * (or there is no config). Free with ts_quant_record_free. */
typedef struct ts_quant_record {
    int mode;
    ts_quant_scale *scales;
    int nscales;
} ts_quant_record;
/* TS_OK (a record read, or none); TS_ERR_ARG naming the file for a record that cannot be used (an
 * unknown mode, a static one without scales or with a scale that is not a finite number above 0);
 * TS_ERR_IO when the config cannot be read. */
TS_API ts_status ts_quant_record_load(const char *dir, ts_quant_record *r);
TS_API void ts_quant_record_free(ts_quant_record *r);
/* Make DIR and lock it for this process (an flock on DIR/.tessera.lock holding the pid, kept until
 * the process exits), so that two runs never write one output directory. TS_ERR_RUNTIME with
 * *other_pid (may be NULL) set when another process holds it. */
TS_API ts_status ts_out_dir_lock(const char *dir, long *other_pid);
/* Guard DIR, an output directory this run made (apps/train/out_dir_guard.c): until
 * ts_out_dir_done, a fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) removes it (unless it
 * holds DIR/checkpoints/, what a resume continues from) with async-signal-safe calls, writes note
 * (NULL: nothing) to file descriptor fd (-1: none), and raises the signal again under the handler
 * it replaced. One directory per process: a second call replaces the first. TS_ERR_ARG for a
 * path longer than 4,199 bytes (nothing guarded). */
TS_API ts_status ts_out_dir_guard(const char *dir, int fd, const char *note);
/* The end of the run on the guarded directory (its path into dir, cap bytes; may be NULL), the
 * guard taken off. When failed, the directory is removed unless it holds checkpoints. Returns the
 * number of checkpoints (> 0: the directory is kept for them), -1 when it was removed, 0 when
 * nothing was guarded, the run did not fail, or the directory could not be removed. */
TS_API int ts_out_dir_done(int failed, char *dir, size_t cap);

/* ---------------------------------------------------------------- BERT training programs (apps/train/programs.c) */
/* The programs of a BERT training run. */
typedef struct ts_bert_train_opts {
    size_t struct_size;
    const ts_bert_config *cfg;   /* with layer_stages for a pipeline */
    ts_bert_head head;
    int batch, seq;              /* of one micro-batch */
    uint64_t seed;
    int threads;                 /* 0: every core (a pipeline: the cores shared among its devices) */
    int infer_threads;           /* of the evaluation program (0: threads) */
    ts_optim_kind optimizer;     /* AdamW and LAMB with eps 1e-6; biases and LayerNorm weights
                                    without weight decay (and, with LAMB, without trust ratio) */
    float weight_decay, max_grad_norm, momentum;
    int accumulation;            /* N micro-batches a step */
    int steps_per_call;          /* K: the program takes N x K micro-batches a call */
    size_t memory_limit;         /* per device (0: each device's memory) */
    const char *const *stage_devices; /* a pipeline: the device of each stage (NULL: one device) */
    int nstage_devices;
    const char *const *train_fetches, *const *infer_fetches;
    int ntrain_fetches, ninfer_fetches;
    ts_comm *comm;               /* replicas: ts_optim_opts.comm (NULL: one process) */
    int shard_state;             /* ZeRO-1 over comm (ts_optim_opts.shard_state) */
    size_t bucket_bytes;         /* gradient buckets (0: 25 MiB) */
    int skip_param_init;         /* with no training program: the inference program's parameters
                                    start at zero, to be loaded (ts_compile_opts.skip_param_init) */
    int profile;                 /* 1: the training program is compiled with ts_compile_opts.profile
                                    (see ts_program_profile_report; not with stage_devices) */
    int plan_only;               /* 1: the programs are compiled for planning only
                                    (ts_compile_opts.plan_only): their memory and nodes, nothing
                                    allocated; fp16 then builds the backward without loss scaling
                                    (a pipeline has none yet; its memory is the same) */
    int quantize;                /* the inference program's ts_compile_opts.quantize (TS_QUANT_DYNAMIC:
                                    int8 matmuls; the training program is never quantized) */
    const ts_quant_scale *quant_scales; /* with quantize = TS_QUANT_STATIC: the inference
                                    program's ts_compile_opts.quant_scales (see ts_calib) */
    int nquant_scales;
    const char *device;          /* without stage_devices: the device both programs run on
                                    (ts_compile_opts.device; NULL: the CPU) */
    ts_dtype weight_dtype;       /* TS_BF16 / TS_F16: parameters, gradients and optimizer state in 16
                                    bits, updates rounded stochastically (ts_graph_store_params; the
                                    "-sr" modes of ts_precision_parse); TS_F32 (0): f32 master weights */
    int round_nearest;           /* with weight_dtype 16-bit: updates rounded to nearest instead
                                    (ts_optim_opts.round_nearest) */
} ts_bert_train_opts;
/* Build the model (o->head) with the backward pass and the optimizer, and compile it for
 * training into *train (may be NULL: none) and for evaluation (inference, one device) into
 * *infer (may be NULL). The backward recomputes the GELU outputs (ts_graph_recompute_gelu), and
 * without clipping, accumulation, fp16's loss scaling, replicas or pipeline stages the updates
 * run inside it (ts_optim_opts.updates_in_backward): the same numbers in less memory. On failure
 * nothing is returned and the message says what failed ("compiling the training program: ..."). */
TS_API ts_status ts_bert_train_programs(const ts_bert_train_opts *o, ts_program **train, ts_program **infer);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_BERT_H */
