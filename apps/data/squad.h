/*
 * squad.h — the in-memory form of a featurized SQuAD file, shared by squad.c (reading, windows,
 * batches) and squad_eval.c (span decoding, EM / F1).
 */
#ifndef TS_DATA_SQUAD_H
#define TS_DATA_SQUAD_H

#include "data/data.h"

/* A context, tokenized once for all of its questions. Piece k covers context bytes
 * [begin[k], end[k]). */
typedef struct sq_para {
    char *context;
    int32_t *ids, *begin, *end;
    int32_t ntok;
} sq_para;

typedef struct sq_example {
    char *id, *question;
    int64_t para;
    int32_t *qids; /* question pieces, cut to max_query_len */
    int32_t nq;
    int nanswers;
    char **answers;
    int64_t *starts;            /* answer_start of each answer, in characters */
    int32_t tok_start, tok_end; /* pieces of the first answer; -1 when it was not found */
    int64_t first_feature;
    int nfeatures;
} sq_example;

/* One row: the example's question and the context pieces [doc_start, doc_start + doc_len). */
typedef struct sq_feature {
    int64_t example;
    int32_t doc_start, doc_len;
    int32_t start_pos, end_pos;
} sq_feature;

struct ts_squad {
    const ts_tokenizer *tok;
    ts_squad_opts o;
    sq_para *paras;
    int64_t npara, paracap;
    sq_example *ex;
    int64_t nex, excap;
    sq_feature *feat;
    int64_t nfeat, featcap;
    int64_t relocated; /* answers not at their answer_start (relocate_answers) */
};

#endif
