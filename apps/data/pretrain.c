/*
 * pretrain.c — the BERT pretraining reader: streams documents from text files a window at a
 * time, makes sentence pairs of each window (pairs.c), and serves them as masked rows
 * (masking.c) in batches; its position is a few integers that can be saved and restored.
 *
 * Random streams: the pairs of a window come from (seed, epoch, window), the mask of an
 * example from (seed, epoch, window, example), so nothing depends on what ran before or how
 * many threads there are, and a restored reader only re-reads its current window.
 */
#include "data/pretrain.h"

#include <errno.h>
#include <sys/stat.h>

#define MAX_DOC_TOKENS (1 << 20) /* a longer document is cut here (a file without blank lines) */
enum { SALT_PAIRS = 0x70616972, SALT_MASK = 0x6d61736b };

struct ts_pretrain_reader {
    const ts_tokenizer *tok;
    ts_pretrain_opts o;
    char **files;
    ts_masker mk;
    uint64_t fingerprint;
    int32_t cls, sep, pad;

    FILE *f;                 /* files[pos_file], positioned at pos_off; NULL when not open */
    int64_t pos_file, pos_off;
    char *line;
    size_t linecap;

    ts_window win;           /* the current window and its pairs */
    ts_pairs pairs;
    int loaded;              /* a window has been read */
    int epoch_end;           /* the window ended at the end of the last file */
    int finished;            /* every epoch has been served */
    uint64_t epoch, window;
    int64_t win_file, win_off, next;
    uint64_t served, epoch_pairs;
    uint64_t batches;        /* of the stream, this reader's and the other shards' */

    int32_t *scratch;        /* masking: 4 T */

    /* packing (o.pack > 1): the window's pairs placed into rows (ts_pack_sequences), served in
     * the order of their first pair: row q holds pairs pk_order[pk_start[pk_rows[q]] ..
     * pk_start[pk_rows[q] + 1]); next then counts rows */
    int64_t *pk_order, *pk_start, *pk_rows, npacks;
    size_t pk_cap;
    uint64_t real_tokens, rows_served, pairs_served; /* for ts_pretrain_efficiency */
};

ts_pretrain_opts ts_pretrain_defaults(void) {
    ts_pretrain_opts o = {.struct_size = sizeof o};
    o.batch_size = 32;
    o.max_len = 128;
    o.shuffle_docs = 1000;
    o.mask_prob = 0.15;
    o.max_predictions = 0;
    o.whole_word = 0;
    o.short_seq_prob = 0.1;
    o.random_next_prob = 0.5;
    o.epochs = 0;
    o.seed = 0;
    return o;
}

void ts_pretrain_close(ts_pretrain_reader *r) {
    if (!r) return;
    if (r->f) fclose(r->f);
    for (int i = 0; r->files && i < r->o.nfiles; i++) free(r->files[i]);
    free(r->files);
    ts_masker_free(&r->mk);
    free(r->line);
    ts_window_free(&r->win);
    ts_pairs_free(&r->pairs);
    free(r->scratch);
    free(r->pk_order), free(r->pk_start), free(r->pk_rows);
    free(r);
}

static uint64_t fingerprint(const ts_pretrain_opts *o, int vocab) {
    uint64_t bits[9];
    memcpy(&bits[0], &o->mask_prob, 8);
    memcpy(&bits[1], &o->short_seq_prob, 8);
    memcpy(&bits[2], &o->random_next_prob, 8);
    bits[3] = (uint64_t)o->max_len;
    bits[4] = (uint64_t)o->shuffle_docs;
    bits[5] = (uint64_t)o->max_predictions * 2 + (uint64_t)(o->whole_word != 0);
    bits[6] = (uint64_t)o->nfiles;
    bits[7] = (uint64_t)vocab;
    bits[8] = o->seed;
    uint64_t h = 0x7473706274ull;
    for (int i = 0; i < 9; i++) h = ts_mix64(h ^ bits[i]);
    if (o->num_shards > 1) h = ts_mix64(h ^ ((uint64_t)o->num_shards << 32 | (uint64_t)o->shard));
    if (o->pack > 1) h = ts_mix64(h ^ (0x7061636bull << 32 | (uint64_t)o->pack)); /* rows of other pairs */
    return h;
}

static ts_status check_opts(const ts_pretrain_opts *o) {
    if (!o->files || o->nfiles < 1) return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: no files");
    for (int i = 0; i < o->nfiles; i++)
        if (!o->files[i]) return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: files[%d] is NULL", i);
    if (o->batch_size < 1) return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: batch_size %d < 1", o->batch_size);
    if (o->max_len < 8) return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: max_len %d < 8", o->max_len);
    if (o->shuffle_docs < 1) return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: shuffle_docs %d < 1", o->shuffle_docs);
    if (!(o->mask_prob >= 0 && o->mask_prob <= 1))
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: mask_prob %g is outside [0, 1]", o->mask_prob);
    if (!(o->short_seq_prob >= 0 && o->short_seq_prob <= 1))
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: short_seq_prob %g is outside [0, 1]", o->short_seq_prob);
    if (!(o->random_next_prob >= 0 && o->random_next_prob <= 1))
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: random_next_prob %g is outside [0, 1]", o->random_next_prob);
    if (o->num_shards < 0 || o->shard < 0 || (o->shard > 0 && o->shard >= o->num_shards))
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: shard %d of %d shards", o->shard, o->num_shards);
    if (o->pack < 0 || o->pack > o->max_len / 4)
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: pack %d is outside [0, max_len / 4 = %d] (a pair takes at "
                            "least 4 tokens)", o->pack, o->max_len / 4);
    if (o->max_predictions < 0 || o->epochs < 0)
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_open: max_predictions %d or epochs %d < 0", o->max_predictions,
                            o->epochs);
    return TS_OK;
}

ts_pretrain_reader *ts_pretrain_open(const ts_tokenizer *tok, const ts_pretrain_opts *opts) {
    if (!tok || !opts) {
        ts_set_error(TS_ERR_ARG, "ts_pretrain_open: NULL tokenizer or options");
        return NULL;
    }
    ts_pretrain_opts oc;
    if (TS_STRUCT_READ(&oc, opts, ts_pretrain_opts, "ts_pretrain_open")) return NULL;
    opts = &oc;
    if (check_opts(opts) != TS_OK) return NULL;
    ts_pretrain_reader *r = calloc(1, sizeof *r);
    if (!r) goto oom;
    r->tok = tok;
    r->o = *opts;
    r->o.nfiles = 0;
    r->files = calloc((size_t)opts->nfiles, sizeof *r->files);
    if (!r->files) goto oom;
    for (int i = 0; i < opts->nfiles; i++) {
        FILE *f = fopen(opts->files[i], "rb");
        if (!f) {
            ts_set_error(TS_ERR_IO, "cannot open '%s': %s", opts->files[i], strerror(errno));
            ts_pretrain_close(r);
            return NULL;
        }
        fclose(f);
        if (!(r->files[i] = strdup(opts->files[i]))) goto oom;
        r->o.nfiles = i + 1;
    }
    r->o.files = NULL;
    if (ts_masker_init(&r->mk, tok, opts->mask_prob, opts->max_predictions, opts->whole_word) != TS_OK) {
        ts_pretrain_close(r);
        return NULL;
    }
    r->cls = ts_token_to_id(tok, "[CLS]");
    r->sep = ts_token_to_id(tok, "[SEP]");
    r->pad = ts_token_to_id(tok, "[PAD]");
    r->fingerprint = fingerprint(opts, ts_tokenizer_vocab_size(tok));
    if (!(r->scratch = malloc((size_t)opts->max_len * 4 * sizeof *r->scratch))) goto oom;
    return r;
oom:
    ts_pretrain_close(r);
    ts_set_error(TS_ERR_NOMEM, "ts_pretrain_open: out of memory");
    return NULL;
}

/* ------------------------------------------------------------------ reading a window */

static int push_i64(int64_t **v, size_t *n, size_t *cap, int64_t x) {
    if (*n + 1 >= *cap) { /* +1: room for the sentinel */
        size_t c = *cap ? *cap * 2 : 1024;
        int64_t *p = realloc(*v, c * sizeof *p);
        if (!p) return 0;
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = x;
    return 1;
}

/* Allocate an array that has never held anything, so it has room for a sentinel. */
static int first_room(int64_t **v, size_t *cap) {
    if (*cap) return 1;
    if (!(*v = malloc(1024 * sizeof **v))) return 0;
    *cap = 1024;
    return 1;
}

/* Close the document whose sentences start at *open_first (if it has any). */
static int close_doc(ts_window *w, size_t *open_first) {
    int ok = 1;
    if (w->nsent > *open_first) ok = push_i64(&w->doc, &w->ndoc, &w->doccap, (int64_t)*open_first);
    *open_first = w->nsent;
    return ok;
}

static int blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' && s[i] != '\v' && s[i] != '\f') return 0;
    return 1;
}

/* Read up to shuffle_docs documents from the current position into r->win. Sets epoch_end
 * when the last file ran out. */
static ts_status read_window(ts_pretrain_reader *r) {
    ts_window *w = &r->win;
    w->toks.n = 0;
    w->nsent = 0;
    w->ndoc = 0;
    size_t open_first = 0;
    r->win_file = r->pos_file;
    r->win_off = r->pos_off;
    r->epoch_end = 0;
    while (w->ndoc < (size_t)r->o.shuffle_docs) {
        if (!r->f) {
            if (r->pos_file >= r->o.nfiles) {
                r->epoch_end = 1;
                break;
            }
            const char *path = r->files[r->pos_file];
            r->f = fopen(path, "rb");
            if (!r->f) return ts_set_error(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
            if (r->pos_off && fseeko(r->f, (off_t)r->pos_off, SEEK_SET) != 0)
                return ts_set_error(TS_ERR_IO, "%s: cannot seek to byte %lld: %s", path, (long long)r->pos_off,
                                    strerror(errno));
        }
        errno = 0;
        ssize_t got = getline(&r->line, &r->linecap, r->f);
        if (got < 0) {
            if (ferror(r->f))
                return ts_set_error(TS_ERR_IO, "%s: read error after byte %lld: %s", r->files[r->pos_file],
                                    (long long)r->pos_off, strerror(errno ? errno : EIO));
            if (!close_doc(w, &open_first)) goto oom;
            fclose(r->f);
            r->f = NULL;
            r->pos_file++;
            r->pos_off = 0;
            continue;
        }
        r->pos_off += got;
        if (blank(r->line, (size_t)got)) {
            if (!close_doc(w, &open_first)) goto oom;
            continue;
        }
        if (r->line[got - 1] == '\n') r->line[got - 1] = 0;
        size_t before = w->toks.n;
        ts_status st = ts_tokenize_append(r->tok, r->line, &w->toks);
        if (st != TS_OK) return st;
        if (w->toks.n == before) continue;
        if (!push_i64(&w->sent, &w->nsent, &w->sentcap, (int64_t)before)) goto oom;
        if (w->toks.n - w->sent[open_first] >= MAX_DOC_TOKENS && !close_doc(w, &open_first)) goto oom;
    }
    /* sentinels: push_i64 always leaves room for one, once the arrays exist */
    if (!first_room(&w->sent, &w->sentcap) || !first_room(&w->doc, &w->doccap)) goto oom;
    w->sent[w->nsent] = (int64_t)w->toks.n;
    w->doc[w->ndoc] = (int64_t)w->nsent;
    return TS_OK;
oom:
    return ts_set_error(TS_ERR_NOMEM, "pretraining: out of memory reading '%s'",
                        r->files[r->pos_file < r->o.nfiles ? r->pos_file : r->o.nfiles - 1]);
}

/* The rows served per window: packed rows, or pairs. */
static int64_t units(const ts_pretrain_reader *r) { return r->o.pack > 1 ? r->npacks : (int64_t)r->pairs.n; }

static _Thread_local const int64_t *tl_first; /* by_first's keys: each row's first pair (qsort has no context) */
static int by_first(const void *a, const void *b) {
    int64_t x = tl_first[*(const int64_t *)a], y = tl_first[*(const int64_t *)b];
    return (x > y) - (x < y);
}

/* Place the window's pairs into rows (ts_pack_sequences) and order the rows by their first pair. */
static ts_status pack_window(ts_pretrain_reader *r) {
    size_t n = r->pairs.n;
    if (n + 1 > r->pk_cap) {
        int64_t *o = realloc(r->pk_order, (n + 1) * sizeof *o);
        int64_t *st = o ? realloc(r->pk_start, (n + 1) * sizeof *st) : NULL;
        if (o) r->pk_order = o;
        if (st) r->pk_start = st;
        int64_t *rows = st ? realloc(r->pk_rows, (n + 1) * 2 * sizeof *rows) : NULL;
        if (!rows) return ts_set_error(TS_ERR_NOMEM, "pretraining: out of memory packing %zu pairs", n);
        r->pk_rows = rows, r->pk_cap = n + 1;
    }
    int *len = malloc((n + 1) * sizeof *len);
    if (!len) return ts_set_error(TS_ERR_NOMEM, "pretraining: out of memory packing %zu pairs", n);
    for (size_t i = 0; i < n; i++) len[i] = r->pairs.v[i].na + r->pairs.v[i].nb + 3;
    ts_status st = ts_pack_sequences(len, (int64_t)n, r->o.max_len, r->o.pack, r->pk_order, r->pk_start, &r->npacks,
                                     NULL);
    free(len);
    if (st != TS_OK) return st;
    int64_t *first = r->pk_rows + r->pk_cap; /* the second half: each row's smallest pair index */
    for (int64_t q = 0; q < r->npacks; q++) {
        first[q] = INT64_MAX;
        for (int64_t k = r->pk_start[q]; k < r->pk_start[q + 1]; k++)
            if (r->pk_order[k] < first[q]) first[q] = r->pk_order[k];
        r->pk_rows[q] = q;
    }
    tl_first = first;
    qsort(r->pk_rows, (size_t)r->npacks, sizeof *r->pk_rows, by_first); /* keys distinct: a stable order */
    return TS_OK;
}

/* Read the window at the current position and make its pairs. */
static ts_status load_window(ts_pretrain_reader *r) {
    ts_status st = read_window(r);
    if (st != TS_OK) return st;
    ts_drng rng = ts_drng_at(r->o.seed ^ SALT_PAIRS, r->epoch, r->window, 0);
    st = ts_make_pairs(&r->win, r->o.max_len - 3, r->o.short_seq_prob, r->o.random_next_prob, &rng, &r->pairs);
    if (st == TS_OK && r->o.pack > 1) st = pack_window(r);
    if (st != TS_OK) return st;
    r->loaded = 1;
    r->next = 0;
    r->epoch_pairs += r->pairs.n;
    return TS_OK;
}

/* Move to the window after the current one (the first window when none is loaded). */
static ts_status advance(ts_pretrain_reader *r) {
    if (r->loaded) {
        if (r->epoch_end) {
            if (r->epoch_pairs == 0)
                return ts_set_error(TS_ERR_IO,
                                    "pretraining: the files (%s%s) hold no sentence pairs: they need documents "
                                    "of two or more sentences, or two or more documents",
                                    r->files[0], r->o.nfiles > 1 ? ", ..." : "");
            r->epoch++;
            r->window = 0;
            r->epoch_pairs = 0;
            r->pos_file = 0;
            r->pos_off = 0;
            if (r->f) fclose(r->f);
            r->f = NULL;
            if (r->o.epochs && r->epoch >= (uint64_t)r->o.epochs) {
                r->finished = 1;
                r->loaded = 0;
                return TS_OK;
            }
        } else {
            r->window++;
        }
    }
    return load_window(r);
}

/* Pair p, the example `index` of the current window, as [CLS] A [SEP] B [SEP] at token off of
 * row `row`: ids, labels (masked), token types (when b has them). Returns its length. */
static int put_pair(ts_pretrain_reader *r, const ts_batch *b, int row, int off, const ts_pair *p, int64_t index) {
    int T = r->o.max_len;
    int32_t *ids = b->input_ids + (size_t)row * T + off;
    int32_t *labels = b->labels ? b->labels + (size_t)row * T + off : r->scratch + 3 * T + off;
    const int32_t *t = r->pairs.toks.v + p->off;
    int k = 0;
    ids[k++] = r->cls;
    for (int i = 0; i < p->na; i++) ids[k++] = t[i];
    ids[k++] = r->sep;
    int first_end = k;
    for (int i = 0; i < p->nb; i++) ids[k++] = t[p->na + i];
    ids[k++] = r->sep;
    if (r->o.mask_prob > 0) {
        ts_drng rng = ts_drng_at(r->o.seed ^ SALT_MASK, r->epoch, r->window, (uint64_t)index);
        ts_masker_apply(&r->mk, &rng, ids, labels, k, r->scratch);
    } else {
        for (int i = 0; i < k; i++) labels[i] = TS_IGNORE_INDEX;
    }
    if (b->token_type_ids)
        for (int i = 0; i < k; i++) b->token_type_ids[(size_t)row * T + off + i] = i >= first_end;
    r->real_tokens += (uint64_t)k;
    r->pairs_served++;
    return k;
}

/* Row `row` of the batch from pair p, the example `index` of the current window. */
static void fill_row(ts_pretrain_reader *r, const ts_batch *b, int row, const ts_pair *p, int64_t index) {
    int T = r->o.max_len;
    int32_t *ids = b->input_ids + (size_t)row * T;
    int32_t *labels = b->labels ? b->labels + (size_t)row * T : r->scratch + 3 * T;
    int k = put_pair(r, b, row, 0, p, index);
    r->rows_served++;
    for (int i = k; i < T; i++) {
        ids[i] = r->pad;
        labels[i] = TS_IGNORE_INDEX;
    }
    if (b->token_type_ids)
        for (int i = k; i < T; i++) b->token_type_ids[(size_t)row * T + i] = 0;
    if (b->attention_mask)
        for (int i = 0; i < T; i++) b->attention_mask[(size_t)row * T + i] = i < k;
    if (b->next_sentence_label) b->next_sentence_label[row] = p->random_next;
}

static void pad_row(ts_pretrain_reader *r, const ts_batch *b, int row) {
    size_t T = (size_t)r->o.max_len, o = (size_t)row * T;
    for (size_t i = 0; i < T; i++) {
        b->input_ids[o + i] = r->pad;
        if (b->token_type_ids) b->token_type_ids[o + i] = 0;
        if (b->attention_mask) b->attention_mask[o + i] = 0;
        if (b->labels) b->labels[o + i] = TS_IGNORE_INDEX;
    }
    if (b->next_sentence_label) b->next_sentence_label[row] = TS_IGNORE_INDEX;
}

/* Pass the rows of one batch dealt to another shard: windows are read (the stream is one), no
 * row is masked or filled. */
static ts_status skip_batch(ts_pretrain_reader *r) {
    for (int row = 0; row < r->o.batch_size; row++) {
        while (!r->finished && (!r->loaded || r->next >= units(r))) {
            ts_status st = advance(r);
            if (st != TS_OK) return st;
        }
        if (r->finished) break;
        r->next++;
    }
    r->batches++;
    return TS_OK;
}

ts_status ts_pretrain_next(ts_pretrain_reader *r, const ts_batch *b, int *nrows) {
    if (nrows) *nrows = 0;
    if (!r || !b || !b->input_ids) return ts_set_error(TS_ERR_ARG, "ts_pretrain_next: NULL reader, batch or input_ids");
    if (r->o.pack > 1)
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_next: the reader packs (pack %d): ts_pretrain_next_packed",
                            r->o.pack);
    while (r->o.num_shards > 1 && r->batches % (uint64_t)r->o.num_shards != (uint64_t)r->o.shard) {
        ts_status st = skip_batch(r);
        if (st != TS_OK) {
            for (int k = 0; k < r->o.batch_size; k++) pad_row(r, b, k);
            return st;
        }
    }
    r->batches++;
    int filled = 0;
    for (int row = 0; row < r->o.batch_size; row++) {
        while (!r->finished && (!r->loaded || r->next >= (int64_t)r->pairs.n)) {
            ts_status st = advance(r);
            if (st != TS_OK) {
                for (int k = row; k < r->o.batch_size; k++) pad_row(r, b, k);
                if (nrows) *nrows = filled;
                return st;
            }
        }
        if (r->finished) {
            pad_row(r, b, row);
            continue;
        }
        fill_row(r, b, row, &r->pairs.v[r->next], r->next);
        r->next++;
        r->served++;
        filled++;
    }
    if (nrows) *nrows = filled;
    return TS_OK;
}

/* ------------------------------------------------------------------ packed rows */

/* Row `row` from packed row q of the window: its pairs one after the other, each masked as it is
 * unpacked, marked with its sequence index and positions; its [CLS] positions and NSP labels. */
static int fill_packed_row(ts_pretrain_reader *r, const ts_batch *b, const ts_pack_batch *p, int row, int64_t q) {
    int T = r->o.max_len, S = r->o.pack, off = 0, k = 0;
    size_t o = (size_t)row * T;
    for (int64_t j = r->pk_start[q]; j < r->pk_start[q + 1]; j++, k++) {
        int64_t index = r->pk_order[j];
        int len = put_pair(r, b, row, off, &r->pairs.v[index], index);
        ts_pack_mark(b->attention_mask ? b->attention_mask + o : NULL, p->position_ids ? p->position_ids + o : NULL,
                     off, len, k + 1);
        if (p->cls_positions) p->cls_positions[(size_t)row * S + k] = off;
        if (p->seq_labels) p->seq_labels[(size_t)row * S + k] = r->pairs.v[index].random_next;
        off += len;
    }
    for (int i = k; i < S; i++) {
        if (p->cls_positions) p->cls_positions[(size_t)row * S + i] = 0;
        if (p->seq_labels) p->seq_labels[(size_t)row * S + i] = TS_IGNORE_INDEX;
    }
    for (int i = off; i < T; i++) {
        b->input_ids[o + i] = r->pad;
        if (b->labels) b->labels[o + i] = TS_IGNORE_INDEX;
        if (b->token_type_ids) b->token_type_ids[o + i] = 0;
        if (b->attention_mask) b->attention_mask[o + i] = 0;
        if (p->position_ids) p->position_ids[o + i] = 0;
    }
    r->rows_served++;
    return k;
}

/* A padding row of a packed batch. */
static void pad_packed_row(ts_pretrain_reader *r, const ts_batch *b, const ts_pack_batch *p, int row) {
    int T = r->o.max_len, S = r->o.pack;
    pad_row(r, b, row);
    for (int i = 0; i < T && p->position_ids; i++) p->position_ids[(size_t)row * T + i] = 0;
    for (int i = 0; i < S; i++) {
        if (p->cls_positions) p->cls_positions[(size_t)row * S + i] = 0;
        if (p->seq_labels) p->seq_labels[(size_t)row * S + i] = TS_IGNORE_INDEX;
    }
}

ts_status ts_pretrain_next_packed(ts_pretrain_reader *r, const ts_batch *b, const ts_pack_batch *p, int *nrows,
                                  int *nseq) {
    if (nrows) *nrows = 0;
    if (nseq) *nseq = 0;
    if (!r || !b || !b->input_ids || !p)
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_next_packed: NULL reader, batch, input_ids or packed batch");
    if (r->o.pack <= 1)
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_next_packed: the reader does not pack (pack %d)", r->o.pack);
    ts_status st = TS_OK;
    while (!st && r->o.num_shards > 1 && r->batches % (uint64_t)r->o.num_shards != (uint64_t)r->o.shard)
        st = skip_batch(r);
    if (!st) r->batches++;
    int filled = 0, seqs = 0, row = 0;
    for (; !st && row < r->o.batch_size; row++) {
        while (!r->finished && (!r->loaded || r->next >= units(r)) && !st) st = advance(r);
        if (st) break;
        if (r->finished) {
            pad_packed_row(r, b, p, row);
            continue;
        }
        seqs += fill_packed_row(r, b, p, row, r->pk_rows[r->next]);
        r->next++;
        r->served++;
        filled++;
    }
    for (; st && row < r->o.batch_size; row++) pad_packed_row(r, b, p, row);
    if (nrows) *nrows = filled;
    if (nseq) *nseq = seqs;
    return st;
}

int ts_pretrain_packed_predictions(int max_predictions, int max_len, int pack) {
    if (max_predictions <= 0 || pack <= 1) return max_predictions;
    return max_predictions + pack < max_len ? max_predictions + pack : max_len;
}

void ts_pretrain_efficiency(const ts_pretrain_reader *r, double *padded, double *served) {
    double T = r ? r->o.max_len : 0;
    if (padded) *padded = r && r->pairs_served ? (double)r->real_tokens / ((double)r->pairs_served * T) : 0;
    if (served) *served = r && r->rows_served ? (double)r->real_tokens / ((double)r->rows_served * T) : 0;
}

/* ------------------------------------------------------------------ state */

ts_status ts_pretrain_save(const ts_pretrain_reader *r, ts_pretrain_state *s) {
    if (!r || !s) return ts_set_error(TS_ERR_ARG, "ts_pretrain_save: NULL reader or state");
    memset(s, 0, sizeof *s);
    s->fingerprint = r->fingerprint;
    s->epoch = r->epoch;
    s->window = r->window;
    s->file = r->loaded ? r->win_file : r->pos_file;
    s->offset = r->loaded ? r->win_off : r->pos_off;
    s->next = r->loaded ? r->next : 0;
    s->served = r->served;
    s->batches = r->batches;
    return TS_OK;
}

/* Back to the very start. */
static void rewind_reader(ts_pretrain_reader *r) {
    if (r->f) fclose(r->f);
    r->f = NULL;
    r->pos_file = r->pos_off = 0;
    r->loaded = r->epoch_end = r->finished = 0;
    r->epoch = r->window = 0;
    r->win_file = r->win_off = r->next = 0;
    r->served = r->epoch_pairs = 0;
    r->batches = 0;
}

ts_status ts_pretrain_restore(ts_pretrain_reader *r, const ts_pretrain_state *s) {
    if (!r || !s) return ts_set_error(TS_ERR_ARG, "ts_pretrain_restore: NULL reader or state");
    rewind_reader(r);
    if (s->fingerprint != r->fingerprint)
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_restore: the state was saved by a reader with other options, "
                                        "seed or vocabulary");
    if (s->file < 0 || s->file > r->o.nfiles || s->offset < 0 || s->next < 0)
        return ts_set_error(TS_ERR_ARG, "ts_pretrain_restore: file %lld, offset %lld or next %lld is out of range",
                            (long long)s->file, (long long)s->offset, (long long)s->next);
    if (s->file < r->o.nfiles) {
        struct stat sb;
        if (stat(r->files[s->file], &sb) != 0 || (int64_t)sb.st_size < s->offset)
            return ts_set_error(TS_ERR_IO,
                                "ts_pretrain_restore: '%s' is shorter than the saved offset %lld (did the "
                                "files change?)",
                                r->files[s->file], (long long)s->offset);
    }
    r->epoch = s->epoch;
    r->window = s->window;
    r->served = s->served;
    r->batches = s->batches;
    r->epoch_pairs = 1; /* the part of this epoch before the state is not re-read */
    if (r->o.epochs && r->epoch >= (uint64_t)r->o.epochs) {
        r->finished = 1;
        return TS_OK;
    }
    r->pos_file = s->file;
    r->pos_off = s->offset;
    ts_status st = load_window(r);
    if (st == TS_OK && s->next > units(r))
        st = ts_set_error(TS_ERR_IO,
                          "ts_pretrain_restore: the window at '%s' byte %lld has %zu examples, the state "
                          "says %lld were served (did the files change?)",
                          r->files[s->file < r->o.nfiles ? s->file : 0], (long long)s->offset, (size_t)units(r),
                          (long long)s->next);
    if (st != TS_OK) {
        rewind_reader(r);
        return st;
    }
    r->next = s->next;
    return TS_OK;
}
