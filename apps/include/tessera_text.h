/*
 * tessera_text.h — text and data: BERT's WordPiece tokenizer, batch buffers, the BERT
 * pretraining reader, labelled text datasets and SQuAD.
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_TEXT_H
#define TESSERA_TEXT_H

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- data: batches */
/* The data readers — BERT pretraining text, text classification files, SQuAD — write batches
 * into caller-provided int32 buffers, row-major (to feed a program, pass ts_tensor_data() of
 * TS_I32 tensors of these shapes). They are deterministic: the same files, options and seed give
 * the same batches on every machine and for any number of threads. Bad input (a malformed file,
 * a bad option) returns a status whose message names the file and the line; it never crashes. */

/* The label of a position or row that takes no part in the loss: pass it to ts_cross_entropy as
 * ignore_index. */
#define TS_IGNORE_INDEX (-100)

/* The WordPiece tokenizer the readers encode with (declared with its functions below). */
typedef struct ts_tokenizer ts_tokenizer;

/* Where a reader writes one batch of B rows of T tokens. A reader fills the fields it knows of
 * and skips NULL ones (input_ids may not be NULL). Rows past those filled (at the end of the
 * data) are padding: [PAD] ids, zero masks and types, TS_IGNORE_INDEX labels and positions. */
typedef struct ts_batch {
    int32_t *input_ids;           /* [B, T] [CLS] A [SEP] (B [SEP]) then [PAD] */
    int32_t *token_type_ids;      /* [B, T] 0 on [CLS] A [SEP], 1 on B [SEP], 0 on padding */
    int32_t *attention_mask;      /* [B, T] 1 on real tokens, 0 on padding */
    int32_t *labels;              /* pretraining: [B, T] the original id at each masked position,
                                     TS_IGNORE_INDEX elsewhere; classification: [B] label ids */
    int32_t *next_sentence_label; /* pretraining: [B] 0 when B follows A (IsNext), 1 (NotNext) */
    int32_t *start_positions;     /* SQuAD: [B] token position of the answer's first and last */
    int32_t *end_positions;       /* piece in the row; 0 ([CLS]) when the answer is not inside */
} ts_batch;

/* A seeded random permutation of 0 .. n-1 into out[n] (Fisher-Yates on tessera's splitmix64
 * stream): the same on every platform. The shuffle for the batch functions' row lists. */
TS_API void ts_permutation(uint64_t seed, int64_t n, int64_t *out);

/* Batch buffers (apps/train/batches.c): the three int32 [B, T] inputs and the label tensors of a
 * batch, with a ts_batch over them; or, for a program taking S micro-batches a call (device
 * iterations, accumulation), S such batches as [S, B, T] tensors, b pointing into slice k
 * (ts_batch_buf_slice). Fields are read directly; the functions return 0 on out of memory. */
typedef struct ts_batch_buf {
    ts_tensor *ids, *types, *mask, *labels, *nsp;
    ts_batch b;
    int slices, batch, seq;
    /* pre-training with max_predictions_per_seq P > 0: the labelled positions of each row and
     * their labels, [.., B, P] (ts_batch_buf_compact fills them from b.labels) */
    int predictions;
    ts_tensor *positions, *plabels;
} ts_batch_buf;

/* labels_rank: 0 none, 1 [B] (classification), 2 [B, T] (+ next_sentence_label [B]). */
TS_API int ts_batch_buf_init(ts_batch_buf *bb, int batch, int seq, int labels_rank);
/* The same with `slices` batches (> 1: tensors [slices, B, T], [slices, B]); b at slice 0; with
 * predictions P > 0 (labels_rank 2) also masked_lm_positions and labels [.., B, P]. */
TS_API int ts_batch_buf_init_slices(ts_batch_buf *bb, int batch, int seq, int labels_rank, int slices, int predictions);
/* With predictions P: list the labelled positions of slice k's rows (b.labels, [B, T]) and their
 * labels into positions / plabels, padded with position 0 and label -100. Returns the number of
 * labelled positions beyond P that were left out (0 when the masker caps at P). */
TS_API int ts_batch_buf_compact(ts_batch_buf *bb, int k);
/* Point bb->b at slice k. */
TS_API void ts_batch_buf_slice(ts_batch_buf *bb, int k);
TS_API void ts_batch_buf_free(ts_batch_buf *bb);
/* Feed input_ids, token_type_ids, attention_mask (and labels, next_sentence_label when
 * with_labels and present; with predictions, masked_lm_positions and the compacted labels). */
TS_API ts_status ts_batch_buf_feed(ts_batch_buf *bb, ts_program *p, int with_labels);

/* ---------------------------------------------------------------- data: packed sequences (apps/data/pack.c) */
/* Several short sequences in one row of T tokens (Krell et al. 2021, "Efficient Sequence Packing
 * without Cross-contamination"), for a model built with ts_bert_config.max_sequences_per_pack
 * (tessera_bert.h, "Packed sequences"), which computes for each sequence what it computes alone.
 *
 * ts_pack_sequences places n sequences of lengths[i] tokens into rows of row_len tokens, at most
 * max_per_row a row, by shortest-pack-first histogram packing (SPFHP): the sequences are taken
 * longest first (equal lengths by index) and each goes into the open row with the least room left
 * that fits it (the earliest opened of those), or opens a new row; a row is closed when full or
 * when it holds max_per_row sequences. Deterministic. Outputs: order[n], the sequence indices row
 * by row; row_start[nrows + 1] (room for n + 1), row r holding order[row_start[r] ..
 * row_start[r + 1]); *nrows; *efficiency (may be NULL) = sum of lengths / (nrows x row_len), the
 * share of the slots holding real tokens (1 for n == 0). TS_ERR_ARG naming the entry for a length
 * outside [1, row_len], or for row_len or max_per_row below 1. */
TS_API ts_status ts_pack_sequences(const int *lengths, int64_t n, int row_len, int max_per_row, int64_t *order,
                                   int64_t *row_start, int64_t *nrows, double *efficiency);

/* The inputs of a packed batch besides ts_batch's, where the readers write them. In a packed
 * batch ts_batch.attention_mask holds each token's sequence index, 1 .. S in the row, 0 on
 * padding; token_type_ids, input_ids and MLM labels are per token as unpacked. */
typedef struct ts_pack_batch {
    int32_t *position_ids;  /* [B, T] each token's position within its sequence, 0 on padding */
    int32_t *cls_positions; /* [B, S] row position of each sequence's [CLS]; 0 for an empty slot */
    int32_t *seq_labels;    /* [B, S] per-sequence labels (next_sentence_label, class ids);
                               TS_IGNORE_INDEX for an empty slot (may be NULL) */
} ts_pack_batch;

/* The host tensors of packed batches (apps/train/batches.c) beside a ts_batch_buf of the same
 * slices, batch and seq: position_ids [.., B, T], cls_positions and labels [.., B, S] ([S, ...]
 * leading with slices > 1), p pointing into slice k. Fields are read directly. */
typedef struct ts_pack_buf {
    ts_tensor *position_ids, *cls_positions, *labels; /* labels NULL without */
    ts_pack_batch p;
    int slices, batch, seq, per_row;
} ts_pack_buf;
/* per_row = S (the model's max_sequences_per_pack, >= 2). 0 on out of memory or a bad size. */
TS_API int ts_pack_buf_init(ts_pack_buf *pb, int batch, int seq, int per_row, int slices, int with_labels);
/* Point pb->p at slice k. */
TS_API void ts_pack_buf_slice(ts_pack_buf *pb, int k);
TS_API void ts_pack_buf_free(ts_pack_buf *pb);
/* Feed a packed program: bb's input_ids, token_type_ids, attention_mask (sequence indices),
 * position_ids and cls_positions (when the program has that input); with with_labels, bb's MLM
 * labels (compacted with predictions) and pb's labels as "next_sentence_label" when bb has
 * next-sentence labels (pre-training), else as "labels" (classification). */
TS_API ts_status ts_pack_buf_feed(ts_pack_buf *pb, ts_batch_buf *bb, ts_program *p, int with_labels);

/* ---------------------------------------------------------------- data: BERT pretraining */
/* Masked-LM + next-sentence examples from plain text, as Google's create_pretraining_data.py
 * makes them, streamed from files of any size.
 *
 * Input: UTF-8 text, one sentence (or paragraph) a line; a blank line ends a document, and so
 * does the end of a file (and 2^20 tokens, so a file without blank lines still streams). Lines
 * that tokenize to nothing are skipped.
 *
 * The reader takes shuffle_docs documents at a time (a window) into memory and makes pairs from
 * each document: sentences are gathered into a chunk until it reaches a target length (max_len
 * - 3, or with probability short_seq_prob a random length from 2), A is a random number of the
 * chunk's first sentences, and B is the rest of the chunk (IsNext, label 0) or, with probability
 * random_next_prob (or when the chunk holds one sentence), sentences from a random position of
 * another document of the window (NotNext, label 1; the unused sentences of the chunk start the
 * next one). The pair is cut to max_len - 3 tokens by trimming the longer side at a random end.
 * The window's pairs are shuffled and served in batches; then the next window is read.
 * A window with a single document makes IsNext pairs only.
 *
 * Masking is dynamic (drawn when a row is served): round(mask_prob x the row's maskable tokens)
 * positions (at least 1, at most max_predictions), where every token but [PAD] [CLS] [SEP]
 * [MASK] is maskable; with whole_word a word (a token and the "##" pieces after it) is masked as
 * a whole or not at all. A chosen token becomes [MASK] (80%), a random non-special token (10%) or
 * stays (10%).
 *
 * Random numbers are a function of (seed, epoch, window, example), so a state of a few integers
 * (ts_pretrain_state) resumes a run exactly. */
typedef struct ts_pretrain_reader ts_pretrain_reader;

typedef struct ts_pretrain_opts {
    size_t struct_size; /* sizeof(ts_pretrain_opts) (0: the 0.1.0 layout; see tessera.h) */
    const char *const *files; /* text files, read in this order */
    int nfiles;
    int batch_size;           /* B, rows per batch (default 32) */
    int max_len;              /* T, tokens per row with [CLS] and two [SEP], at least 8 (128) */
    int shuffle_docs;         /* documents per window (1000) */
    double mask_prob;         /* 0.15 */
    int max_predictions;      /* most masked positions per row; 0: no cap (0) */
    int whole_word;           /* 1: whole-word masking (0) */
    double short_seq_prob;    /* 0.1 */
    double random_next_prob;  /* 0.5 */
    int epochs;               /* passes over the files; 0: repeat without end (0) */
    uint64_t seed;            /* (0) */
    int shard, num_shards;    /* replicas: the batches of the one stream above are dealt round-robin
                                 and this reader serves batches k with k % num_shards == shard,
                                 skipping the others' rows unmasked (0 and 0 or 1: every batch) */
    int pack;                 /* S > 1: packed rows of up to S pairs (ts_pretrain_next_packed): each
                                 window's pairs placed by ts_pack_sequences, each pair masked as
                                 it is unpacked; 0 or 1: a pair a row (0) */
} ts_pretrain_opts;

/* The defaults noted above (files NULL). */
TS_API ts_pretrain_opts ts_pretrain_defaults(void);

/* Open a reader over opts->files with tok (which must outlive the reader and have [MASK]).
 * Checks the options and that every file can be opened; NULL on failure (ts_last_error()). */
TS_API ts_pretrain_reader *ts_pretrain_open(const ts_tokenizer *tok, const ts_pretrain_opts *opts);
TS_API void ts_pretrain_close(ts_pretrain_reader *r);

/* The next batch into b (input_ids, token_type_ids, attention_mask, labels [B, T];
 * next_sentence_label [B]). *nrows (may be NULL) gets the rows filled: B, fewer only at the end
 * of the last epoch, 0 once the data is exhausted. TS_ERR_IO when a file cannot be read or the
 * files hold no sentence pair at all. */
TS_API ts_status ts_pretrain_next(ts_pretrain_reader *r, const ts_batch *b, int *nrows);

/* With opts->pack S > 1: the next batch of B packed rows into b (labels [B, T]; attention_mask
 * the sequence indices) and p (positions, [CLS] positions, next_sentence_label as seq_labels
 * [B, S]). *nrows gets the rows filled, *nseq (may be NULL) the pairs in them. A row holds the
 * pairs ts_pack_sequences puts together from the window's pairs in their shuffled order; the
 * rows are served in the order of their first pair. TS_ERR_ARG without pack. */
TS_API ts_status ts_pretrain_next_packed(ts_pretrain_reader *r, const ts_batch *b, const ts_pack_batch *p,
                                         int *nrows, int *nseq);
/* The masked positions a packed row may need (its model's max_predictions_per_seq): each pair is
 * masked as alone, round(mask_prob x its maskable tokens) and at least 1, so a row of `pack` pairs
 * has at most mask_prob x max_len + pack: max_predictions + pack when max_predictions is at least
 * mask_prob x max_len (the default), capped at max_len; 0 stays 0 (the head on every position).
 * Positions past it are left out of the loss (ts_batch_buf_compact counts them). */
TS_API int ts_pretrain_packed_predictions(int max_predictions, int max_len, int pack);
/* The share of slots holding real tokens in the rows served so far: unpacked (a pair a row) and
 * as served (packed or not); 0 before any. */
TS_API void ts_pretrain_efficiency(const ts_pretrain_reader *r, double *padded, double *served);

/* Where a reader stands: everything it needs to continue exactly. Plain integers, to be stored
 * in a checkpoint and handed back to ts_pretrain_restore of a reader opened on the same files
 * with the same options. */
typedef struct ts_pretrain_state {
    uint64_t fingerprint; /* of the options, seed and vocabulary size */
    uint64_t epoch;       /* passes completed */
    uint64_t window;      /* windows started in this epoch, less one */
    int64_t file;         /* the window's first line: index into files ... */
    int64_t offset;       /* ... and byte offset */
    int64_t next;         /* examples of the window already served */
    uint64_t served;      /* examples served since the start (for information) */
    uint64_t batches;     /* batches of the stream passed, served or dealt to other shards */
} ts_pretrain_state;

TS_API ts_status ts_pretrain_save(const ts_pretrain_reader *r, ts_pretrain_state *state);
/* Continue from a saved state: the batches that follow are those that followed the save.
 * TS_ERR_ARG when the state comes from a reader with other options; TS_ERR_IO when the files
 * no longer match it. On failure the reader is left at its start. */
TS_API ts_status ts_pretrain_restore(ts_pretrain_reader *r, const ts_pretrain_state *state);

/* Masked-LM accuracy: for each position of labels (as many as logits has rows: logits is
 * [..., V], f32 or bf16) that is not TS_IGNORE_INDEX, whether the argmax of its logits is the
 * label. Adds the positions to *total and the correct ones to *correct (zero them first), so
 * it sums over the batches of a held-out set. TS_ERR_RUNTIME on a label outside [0, V). */
TS_API ts_status ts_mlm_accuracy(const ts_tensor *logits, const int32_t *labels, int64_t *correct, int64_t *total);

/* ---------------------------------------------------------------- data: text classification */
/* A labelled text dataset in memory, loaded from
 *  - TSV: a header line naming the columns, then rows of tab-separated fields (no quoting: a
 *    field holds no tab or line break, as GLUE's files);
 *  - CSV (RFC 4180): comma-separated, a field in double quotes may hold commas, line breaks and
 *    doubled quotes (""); LF or CRLF line ends; a header line naming the columns;
 *  - JSONL: one JSON object a line, {"text": "...", "label": "spam"}; a number or boolean label
 *    is read as its text ("1", "true").
 * Blank lines are skipped; a UTF-8 byte order mark is ignored. Every row must have the header's
 * number of columns ("spam.tsv:1234: expected 5 columns, found 3"); a CSV row is counted on the
 * line it begins. Labels are strings mapped to ids 0 .. n-1: in the order of a given list, or
 * the sorted distinct labels of the file (by value when every label is an integer, else by
 * bytes). Subsets made by ts_text_dataset_split keep the parent's label ids. */
typedef struct ts_text_dataset ts_text_dataset;

typedef enum ts_text_format {
    TS_FORMAT_AUTO = 0, /* from the file name: .tsv, .csv, .jsonl or .json */
    TS_FORMAT_TSV,
    TS_FORMAT_CSV,
    TS_FORMAT_JSONL,
} ts_text_format;

typedef struct ts_text_opts {
    size_t struct_size; /* sizeof(ts_text_opts) (0: the 0.1.0 layout; see tessera.h) */
    ts_text_format format;
    const char *text_column;   /* column name / JSON key of the text (default "text") */
    const char *text_b_column; /* of a second text, for pair tasks; NULL: single texts */
    const char *label_column;  /* of the label (default "label") */
    int no_header;             /* TSV/CSV without a header: columns are 0-based numbers ("0"),
                                  by default label "0" and text "1" (label<TAB>text) */
    const char *const *labels; /* label names in id order; NULL: the file's labels, sorted */
    int nlabels;
} ts_text_opts;
/* ts_text_opts's base (0.1.0) fields in their order, as another struct embeds them by value
 * (ts_classify_rows_opts.text): a fixed struct that never grows, read as a ts_text_opts of its
 * size (struct_size 0 or sizeof(ts_text_columns)). */
typedef struct ts_text_columns {
    size_t struct_size;
    ts_text_format format;
    const char *text_column, *text_b_column, *label_column;
    int no_header;
    const char *const *labels;
    int nlabels;
} ts_text_columns;

/* Load a whole file (opts may be NULL for the defaults). NULL on failure: the message names the
 * file and line (a missing column, a short row, an unclosed quote, bad JSON, a label not in the
 * given list). */
TS_API ts_text_dataset *ts_text_dataset_load(const char *path, const ts_text_opts *opts);
TS_API void ts_text_dataset_free(ts_text_dataset *d);
TS_API int64_t ts_text_dataset_size(const ts_text_dataset *d);
TS_API int ts_text_dataset_num_labels(const ts_text_dataset *d);
/* The name of label id, or NULL when out of range. */
TS_API const char *ts_text_dataset_label_name(const ts_text_dataset *d, int id);
/* Row i: its text, second text (NULL without pairs) and label id (any output may be NULL).
 * The strings live as long as d. */
TS_API ts_status ts_text_dataset_get(const ts_text_dataset *d, int64_t i, const char **text, const char **text_b,
                              int32_t *label);
/* Drop every row whose text (and second text) equals an earlier row's, keeping the first;
 * *nremoved (may be NULL) gets the count. */
TS_API ts_status ts_text_dataset_dedup(ts_text_dataset *d, int64_t *nremoved);
/* Split into two new datasets: first the duplicates are dropped as ts_text_dataset_dedup does
 * (so no text is in both halves), then the rows are shuffled with ts_permutation(seed) and the
 * first round(test_fraction x rows) go to *test, the rest to *train. *nduplicates (may be NULL)
 * gets the number of rows dropped. d is unchanged. */
TS_API ts_status ts_text_dataset_split(const ts_text_dataset *d, double test_fraction, uint64_t seed,
                                ts_text_dataset **train, ts_text_dataset **test, int64_t *nduplicates);
/* Encode rows[0..n) into the first n rows of a batch of batch_size rows of max_len tokens
 * (ts_encode: one text, or the pair), labels [B]; the other rows are padding. */
TS_API ts_status ts_text_dataset_batch(const ts_text_dataset *d, const ts_tokenizer *tok, const int64_t *rows, int n,
                                int batch_size, int max_len, const ts_batch *b);

/* Real tokens of each row as ts_text_dataset_batch encodes it ([CLS] ... [SEP], cut to max_len):
 * lengths[i] for row i of d (ts_text_dataset_size entries). */
TS_API ts_status ts_text_dataset_lengths(const ts_text_dataset *d, const ts_tokenizer *tok, int max_len,
                                         int *lengths);
/* Packed rows: row r of the batch (r < n) holds rows[row_start[r] .. row_start[r + 1]) of d
 * (encoded as ts_text_dataset_batch does, one after the other; at most per_row of them, their
 * lengths summing to at most max_len, as ts_pack_sequences places them); their labels into
 * p->seq_labels [B, per_row]; rows n .. batch_size - 1 are padding. TS_ERR_ARG for a row that does
 * not fit. */
TS_API ts_status ts_text_dataset_batch_packed(const ts_text_dataset *d, const ts_tokenizer *tok, const int64_t *rows,
                                              const int64_t *row_start, int n, int batch_size, int max_len,
                                              int per_row, const ts_batch *b, const ts_pack_batch *p);

/* ---------------------------------------------------------------- data: SQuAD */
/* SQuAD v1.1 question answering: the JSON file ({"data": [{"paragraphs": [{"context": ...,
 * "qas": [{"id", "question", "answers": [{"text", "answer_start"}]}]}]}]}) read into examples
 * (one a question) and features (model rows), as Hugging Face's run_squad makes them:
 *  - the question is tokenized and cut to max_query_len pieces;
 *  - the context is tokenized into pieces that each know their span of the context's bytes
 *    (the ids of ts_tokenize, except that "[MASK]" written in a context is plain text);
 *  - windows of max_seq_len - query - 3 context pieces slide over the context, each starting
 *    doc_stride pieces after the one before, until one reaches the end;
 *  - each window is a row [CLS] question [SEP] window [SEP] [PAD]..., token types 0 then 1;
 *  - the answer (the first one listed) is located from answer_start, a character offset into
 *    the context where its text must stand (see relocate_answers); start / end positions are
 *    the row positions of its first and last pieces when
 *    both lie in the window, else 0 ([CLS]). When the context does not hold the answer text,
 *    or a question has no answer, the positions are TS_IGNORE_INDEX (left out of a loss), as
 *    run_squad skips such examples in training.
 * Evaluation follows the official v1.1 script: predictions are spans of the original context. */
typedef struct ts_squad ts_squad;

typedef struct ts_squad_opts {
    size_t struct_size; /* sizeof(ts_squad_opts) (0: the 0.1.0 layout; see tessera.h) */
    int max_seq_len;   /* T, tokens per row (default 384) */
    int doc_stride;    /* pieces between the starts of a context's windows (128) */
    int max_query_len; /* question pieces kept (64) */
    int relocate_answers; /* 0 (default): every answer's text must stand at its answer_start in
                             the context, as the format says, else the file is refused
                             (TS_ERR_IO naming the file, the question's place and id, the
                             offset and what is there). 1: an answer not at its offset is taken
                             at its occurrence nearest to it (counted: ts_squad_num_relocated),
                             as Hugging Face's scripts do with a warning */
} ts_squad_opts;

/* Read and featurize a SQuAD file with tok (which must outlive s); opts may be NULL. NULL on
 * failure: invalid JSON names the file and line, a wrong structure its place in the file
 * ("data[3].paragraphs[0].qas[2]: no \"question\" string"). */
TS_API ts_squad *ts_squad_load(const char *path, const ts_tokenizer *tok, const ts_squad_opts *opts);
TS_API void ts_squad_free(ts_squad *s);
TS_API int64_t ts_squad_num_examples(const ts_squad *s);
TS_API int64_t ts_squad_num_features(const ts_squad *s);
/* Answers that were not at their answer_start and were taken at their nearest occurrence
 * (relocate_answers), and answers whose text is nowhere in the context; 0 without relocation. */
TS_API int64_t ts_squad_num_relocated(const ts_squad *s);

/* One example (question); pointers live as long as s. Its features are first_feature ..
 * first_feature + nfeatures - 1 (an empty context has none). */
typedef struct ts_squad_example {
    const char *id, *question, *context;
    int nanswers;
    const char *const *answers;   /* answer texts */
    const int64_t *answer_starts; /* their character offsets into context, as in the file */
    int64_t first_feature;
    int nfeatures;
} ts_squad_example;
TS_API ts_status ts_squad_get(const ts_squad *s, int64_t example, ts_squad_example *ex);

/* Features features[0..n) into the first n rows of a batch of batch_size rows of max_seq_len
 * tokens (input_ids, token_type_ids, attention_mask, start_positions, end_positions). */
TS_API ts_status ts_squad_batch(const ts_squad *s, const int64_t *features, int n, int batch_size, const ts_batch *b);

/* The best answer of one example from the model's start and end logits of every feature:
 * start_logits / end_logits are [F, T] (F = ts_squad_num_features, row f for feature f). As
 * run_squad: the n_best highest start and end logits of each of the example's features are
 * paired; a pair counts when both lie in the window's context, start <= end, the span has at most
 * max_answer_len pieces and the window is the one where the start piece has the most context;
 * the score is start + end logit. The answer is context bytes [*begin, *begin + *len); 0, 0 and
 * a score of -INFINITY when no span qualifies. n_best / max_answer_len <= 0: 20 / 30. */
TS_API ts_status ts_squad_best_span(const ts_squad *s, int64_t example, const float *start_logits,
                             const float *end_logits, int n_best, int max_answer_len, size_t *begin,
                             size_t *len, float *score);

/* The official SQuAD v1.1 metrics of one prediction against its ground truths (the best over
 * them): exact match (0 or 1) and token F1 (0..1), after normalizing both texts: lower case,
 * ASCII punctuation removed, the words a / an / the removed, white space collapsed. */
TS_API void ts_squad_metric(const char *prediction, const char *const *truths, int ntruths, double *em, double *f1);
/* EM and F1 in percent over every example, predictions[i] for example i (NULL counts as wrong). */
TS_API ts_status ts_squad_score(const ts_squad *s, const char *const *predictions, double *em, double *f1);
/* ts_squad_best_span for every example, then ts_squad_score. */
TS_API ts_status ts_squad_evaluate(const ts_squad *s, const float *start_logits, const float *end_logits, int n_best,
                            int max_answer_len, double *em, double *f1);

/* ---------------------------------------------------------------- data: SQuAD from memory */
/* As ts_squad_load, from the text of a SQuAD JSON document already in memory (json[0..len), not
 * necessarily NUL-terminated): for questions that do not come from a file, such as the lines
 * `tessera predict` reads. `name` stands for the file in error messages ("stdin",
 * "questions.jsonl"). Answers may be absent (an example without answers), as for prediction. */
TS_API ts_squad *ts_squad_parse(const char *name, const char *json, size_t len, const ts_tokenizer *tok,
                         const ts_squad_opts *opts);

/* ---------------------------------------------------------------- text (WordPiece) */
/* BERT's WordPiece tokenizer, id for id the same as Hugging Face tokenizers' BertWordPiece
 * (BertNormalizer, BertPreTokenizer, WordPiece with "##" pieces and words of at most 100
 * characters, BERT post-processing):
 *  - the five special tokens [PAD] [UNK] [CLS] [SEP] [MASK], written literally in the text,
 *    are taken as those tokens ("the [MASK] sat" -> the, [MASK], sat);
 *  - the rest is cleaned (control characters, U+0000 and U+FFFD dropped, white space unified),
 *    CJK ideographs become words of their own, and when uncased: NFD, accents (Mn) removed,
 *    lower case; then split on white space and around each punctuation character;
 *  - each word is matched greedily, longest piece first ("unaffable" -> un ##aff ##able); a
 *    word with an unmatched part, or longer than 100 characters, is one [UNK].
 * Text is UTF-8 and NUL-terminated; malformed bytes are dropped, never an error. Unicode data:
 * Python's unicodedata, Unicode 14 (apps/text/unicode_tables.c, from
 * tools/make_unicode_tables.py); tokenizers' own tables are older (punctuation, marks and format
 * characters of about Unicode 8), so some 560 rare code points added since split differently.
 * A tokenizer is read-only after loading: one may serve many threads. */
typedef struct ts_tokenizer ts_tokenizer;

/* Load a vocab.txt: one token per line, the id of a token is its line number from 0 (as in
 * Hugging Face tokenizers, trailing white space of a line is ignored and a token listed twice
 * maps to its last line). lowercase != 0: the uncased model (bert-base-uncased); 0: cased (no
 * lower-casing, accents kept). The vocabulary must hold [PAD] [UNK] [CLS] [SEP] ([MASK] is
 * optional). NULL on failure: an unreadable or empty file, a line that is not UTF-8 (the error
 * names the file and line), a missing special token. */
TS_API ts_tokenizer *ts_tokenizer_load(const char *vocab_path, int lowercase);
TS_API void ts_tokenizer_free(ts_tokenizer *tok);
/* Number of ids (lines of vocab.txt): the rows an embedding table needs. */
TS_API int ts_tokenizer_vocab_size(const ts_tokenizer *tok);
/* Id of a token ("[MASK]", "##ing"), or -1 when it is not in the vocabulary. */
TS_API int32_t ts_token_to_id(const ts_tokenizer *tok, const char *token);
/* The token of an id (valid while tok lives), or NULL when id is out of range. */
TS_API const char *ts_id_to_token(const ts_tokenizer *tok, int32_t id);

/* The wordpiece ids of text, without [CLS] / [SEP]. Writes at most cap ids and sets *n to the
 * full count; TS_ERR_SHAPE when that is more than cap (call again with a buffer of *n). */
TS_API ts_status ts_tokenize(const ts_tokenizer *tok, const char *text, int32_t *ids, int cap, int *n);

/* BERT inputs for one sentence (text_b == NULL) or a pair, exactly max_len long:
 *   input_ids       [CLS] A [SEP]  or  [CLS] A [SEP] B [SEP], then [PAD] up to max_len
 *   token_type_ids  0 over [CLS] A [SEP], 1 over B [SEP], 0 on padding     (may be NULL)
 *   attention_mask  1 on real tokens, 0 on padding                          (may be NULL)
 * Each array holds max_len entries; *n (may be NULL) is set to the count of real tokens.
 * Inputs that do not fit are cut (at the end, unless ts_tokenizer_set_truncation says otherwise):
 * a single one to max_len - 2; a pair longest-first,
 * as Hugging Face tokenizers does (when both are long each gets half of max_len - 3, B the
 * larger half; otherwise the shorter stays whole). max_len must be at least 2 (3 for a pair). */
TS_API ts_status ts_encode(const ts_tokenizer *tok, const char *text_a, const char *text_b, int max_len,
                    int32_t *input_ids, int32_t *token_type_ids, int32_t *attention_mask, int *n);

/* [CLS] text_a [SEP], or [CLS] text_a [SEP] text_b [SEP], with nothing cut: the ids into *ids,
 * grown with realloc as they need (*cap its room; *ids may start NULL with *cap 0; the caller
 * frees it), their count into *n. TS_ERR_NOMEM reads "out of memory". */
TS_API ts_status ts_encode_all(const ts_tokenizer *tok, const char *text_a, const char *text_b, int32_t **ids, int *cap,
                               int *n);
/* One line of text (len bytes, without its line break) encoded as `tessera tokenize` does: the line
 * is modified (NUL bytes dropped, as the normalizer drops U+0000; with pair, the first tab ends
 * text A and the rest is text B, an empty B when there is no tab). max_len 0: ts_encode_all into
 * *ids (grown, *cap its room); else ts_encode to max_len ids (*ids grown to max_len), *n the ids
 * used, or max_len when pad (the rest [PAD]). TS_ERR_NOMEM reads "out of memory". */
TS_API ts_status ts_encode_line(const ts_tokenizer *tok, char *line, size_t len, int pair, int max_len, int pad,
                                int32_t **ids, int *cap, int *n);

/* Every line of the file lines_path (NULL: standard input), encoded as ts_encode_line reads a line, as one batch in a safetensors file
 * at path that `tessera run --inputs` reads (ts_bert_read_inputs): "input_ids", "token_type_ids"
 * and "attention_mask", each [B, T] i32, B the lines and T max_len (longer lines cut as ts_encode
 * cuts them), or the longest line's ids when max_len is 0; shorter lines padded with [PAD], type
 * 0, mask 0. Written atomically (ts_safetensors_save). *rows and *len (either may be NULL) get B
 * and T. No lines: TS_ERR_ARG; an unreadable file: TS_ERR_IO naming it; a line that fails: its
 * error, prefixed "line N: ". */
TS_API ts_status ts_encode_lines_save(const ts_tokenizer *tok, const char *lines_path, int pair, int max_len,
                                      const char *path, int *rows, int *len);

/* Where ts_encode cuts a text that does not fit (each text of a pair is cut to its length as
 * above): keep_head < 0 (the default) keeps its start, like Hugging Face's truncation_side
 * "right"; otherwise the first keep_head pieces (or all the room, when that is less) and then the
 * text's last pieces: 0 keeps the end ("left"), and a quarter of max_len is "head+tail", which
 * Sun et al. (2019, How to Fine-Tune BERT for Text Classification) found best for long documents:
 * a mail's greeting and its signature or footer both stay in. */
TS_API void ts_tokenizer_set_truncation(ts_tokenizer *tok, int keep_head);

/* Learn a WordPiece vocabulary of at most vocab_size tokens from text files (UTF-8, read line
 * by line, so corpora larger than memory work as long as their distinct words fit) and write it
 * to out_path as a vocab.txt (atomically: a temporary file renamed into place). The method of
 * Hugging Face's BertWordPieceTokenizer.train (WordPieceTrainer, min_frequency 2,
 * limit_alphabet 1000): basic-tokenize every line (lowercase as in ts_tokenizer_load), count
 * words; the alphabet is the (at most 1000) most frequent characters seen at least twice, each as
 * "c" where it starts a word and "##c" where it continues one; then repeatedly merge the most
 * frequent adjacent pair of pieces (ties: the pair of earlier pieces) into a new piece, until
 * vocab_size or no pair occurs twice. Output order: [PAD] [UNK] [CLS] [SEP] [MASK], the "c"
 * pieces, the "##c" pieces, then the merged pieces in the order learned. Words over 100
 * characters are skipped (tokenization maps them to [UNK]). Deterministic: the same files give
 * the same file. vocab_size must be at least 5. */
TS_API ts_status ts_vocab_build(const char *const *files, int nfiles, int vocab_size, int lowercase,
                         const char *out_path);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_TEXT_H */
