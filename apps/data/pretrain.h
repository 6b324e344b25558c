/*
 * pretrain.h — the pieces of the BERT pretraining reader: a window of tokenized documents
 * (filled by pretrain.c from the text files) and the sentence pairs made from it (pairs.c).
 */
#ifndef TS_DATA_PRETRAIN_H
#define TS_DATA_PRETRAIN_H

#include "data/data.h"

/* Documents as lists of sentences as lists of token ids. Sentence i is
 * toks.v[sent[i] .. sent[i + 1]); document d is sentences doc[d] .. doc[d + 1] - 1. Both arrays
 * end with a sentinel entry. */
typedef struct ts_window {
    ts_i32vec toks;
    int64_t *sent;
    size_t nsent, sentcap;
    int64_t *doc;
    size_t ndoc, doccap;
} ts_window;

/* One pretraining example: segment A = toks.v[off .. off + na), B right after it (nb tokens). */
typedef struct ts_pair {
    int64_t off;
    int32_t na, nb;
    int32_t random_next; /* 1: B comes from another document (NotNext) */
} ts_pair;

typedef struct ts_pairs {
    ts_i32vec toks;
    ts_pair *v;
    size_t n, cap;
} ts_pairs;

/* Make the sentence pairs of every document of w (Google's create_instances_from_document) and
 * shuffle them, drawing from rng. max_tokens = max_len - 3. Appends to out (cleared first). */
ts_status ts_make_pairs(const ts_window *w, int max_tokens, double short_seq_prob, double random_next_prob,
                        ts_drng *rng, ts_pairs *out);

void ts_window_free(ts_window *w);
void ts_pairs_free(ts_pairs *p);

#endif
