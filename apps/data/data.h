/*
 * data.h — internal pieces shared by the data readers in apps/data/: the seeded, counter-based
 * random numbers every reader draws from, a growable int32 list, tokenizing into such a list,
 * tokenizing with byte offsets (SQuAD), the MLM masker (masking.c) and the CSV/TSV record
 * reader (csv.c).
 */
#ifndef TS_DATA_DATA_H
#define TS_DATA_DATA_H

#include <stdio.h>

#include "common/app.h"



/* ------------------------------------------------------------------ random numbers
 * splitmix64. A stream is a pure function of (seed, a, b, c), so any piece of work (a window of
 * documents, one example's mask) draws the same numbers whatever ran before it, on any number of
 * threads, and a resumed run needs no more state than where it is. */

typedef struct ts_drng {
    uint64_t s;
} ts_drng;

static inline uint64_t ts_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline ts_drng ts_drng_at(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
    uint64_t h = ts_mix64(seed + 0x9e3779b97f4a7c15ull);
    h = ts_mix64(h ^ (a + 0x632be59bd9b4e019ull));
    h = ts_mix64(h ^ (b + 0x8cb92ba72f3d8dd7ull));
    h = ts_mix64(h ^ (c + 0xd6e8feb86659fd93ull));
    ts_drng r = {h};
    return r;
}

static inline uint64_t ts_drng_next(ts_drng *r) { return ts_mix64(r->s += 0x9e3779b97f4a7c15ull); }

/* Uniform in [0, 1). */
static inline double ts_drng_unif(ts_drng *r) {
    return (double)(ts_drng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform integer in [0, n), n >= 1, without modulo bias. */
static inline uint64_t ts_drng_below(ts_drng *r, uint64_t n) {
    if (n <= 1) return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = ts_drng_next(r); while (x >= limit);
    return x % n;
}

/* ------------------------------------------------------------------ growable int32 list */

typedef struct ts_i32vec {
    int32_t *v;
    size_t n, cap;
} ts_i32vec;

/* Room for `more` further entries; 0 on out of memory. */
int ts_i32vec_reserve(ts_i32vec *l, size_t more);
static inline int ts_i32vec_push(ts_i32vec *l, int32_t x) {
    if (l->n == l->cap && !ts_i32vec_reserve(l, 1)) return 0;
    l->v[l->n++] = x;
    return 1;
}
static inline void ts_i32vec_free(ts_i32vec *l) {
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Append the wordpiece ids of text (ts_tokenize) to out. */
ts_status ts_tokenize_append(const ts_tokenizer *tok, const char *text, ts_i32vec *out);

/* Append the wordpieces of text[0..len) to ids, and to begin / end the byte span of text each
 * one comes from (see offsets.c). The same ids as ts_tokenize, except that a special token
 * written literally ("[MASK]") is read as plain text. */
ts_status ts_tokenize_offsets(const ts_tokenizer *tok, const char *text, size_t len, ts_i32vec *ids,
                              ts_i32vec *begin, ts_i32vec *end);

/* ------------------------------------------------------------------ packed rows (pack.c) */

/* Mark tokens off .. off + len - 1 of a packed row as sequence `index` (seq_index, the row's
 * attention_mask) at positions 0 .. len - 1 (position_ids); either array may be NULL. */
void ts_pack_mark(int32_t *seq_index, int32_t *position_ids, int off, int len, int index);

/* ------------------------------------------------------------------ MLM masking (masking.c) */

typedef struct ts_masker {
    double prob;         /* fraction of maskable tokens to predict */
    int max_predictions; /* cap per sequence; 0: none */
    int whole_word;      /* mask a word's pieces together */
    int32_t mask_id;
    uint8_t *kind;       /* [vocab] KIND_* bits of each id */
    int32_t *random_ids; /* ids a random replacement is drawn from */
    int32_t nrandom;
    int32_t vocab;
} ts_masker;

ts_status ts_masker_init(ts_masker *m, const ts_tokenizer *tok, double prob, int max_predictions,
                         int whole_word);
void ts_masker_free(ts_masker *m);
/* Choose the positions to predict in ids[0..n) and corrupt them in place (80% [MASK], 10% a random
 * token, 10% unchanged); labels[i] = the original id there, TS_IGNORE_INDEX elsewhere. scratch
 * holds 3 * n ints. Returns the number of positions chosen. */
int ts_masker_apply(const ts_masker *m, ts_drng *rng, int32_t *ids, int32_t *labels, int n,
                    int32_t *scratch);

/* ------------------------------------------------------------------ CSV / TSV records (csv.c) */

typedef struct ts_csv {
    FILE *f;
    const char *path;   /* for messages */
    char sep;           /* ',' or '\t' */
    int quoting;        /* RFC 4180 quotes (CSV) or none (TSV) */
    int64_t line;       /* physical lines read so far */
    int64_t rec_line;   /* line on which the last record began */
    char *raw;          /* getline buffer */
    size_t rawcap;
    char *buf;          /* the record's fields, each NUL-terminated */
    size_t len, cap;
    size_t *field;      /* offsets into buf */
    int nfield, fieldcap;
} ts_csv;

/* Open path for reading records (TS_ERR_IO naming the file on failure). A UTF-8 byte order mark
 * at the start is skipped. */
ts_status ts_csv_open(ts_csv *c, const char *path, char sep, int quoting);
/* The next record that is not a blank line: *nfields > 0, fields valid until the next call;
 * *nfields == 0 at the end of the file. Errors name the file and line. */
ts_status ts_csv_next(ts_csv *c, int *nfields);
static inline const char *ts_csv_field(const ts_csv *c, int i) { return c->buf + c->field[i]; }
void ts_csv_close(ts_csv *c);

#endif
