/*
 * ensemble.c — several fine-tuned sequence classifiers predicting as one (tessera_tasks.h:
 * ts_ensemble_*, what `tessera predict` and `tessera eval` do with several models): the members
 * opened and checked against the first (the same labels and text-pair column), each with its
 * own vocabulary, row length and inference program; texts classified a batch at a time, the
 * members' class probabilities averaged; a dataset's rows scored by every member.
 */
#include "common/app.h"

#include <errno.h>
#include <stdio.h>

#include "train/model_program.h"

/* One classifier of the ensemble. */
typedef struct ens_member {
    char *dir;
    ts_program *p;
    ts_tokenizer *tok;
    ts_model_meta meta;
    ts_bert_config cfg;
    ts_batch_buf bb;
    int bb_made;
} ens_member;

struct ts_ensemble {
    ts_ensemble_opts o;
    ens_member *m;
    int n;         /* members opened */
    int nlabels, pairs;
    char **queue;  /* ts_ensemble_add_text's texts, nqueued of o.batch */
    int nqueued;
    double *probs; /* [batch, labels] */
};

/* Member k's directory read and checked against member 0. */
static ts_status check_member(ts_ensemble *e, int k) {
    ens_member *mb = &e->m[k];
    mb->cfg.struct_size = sizeof mb->cfg;
    if (!(mb->tok = ts_model_load_dir(mb->dir, &mb->cfg, &mb->meta))) return tr_err_prefixed(TS_ERR_ARG, "%s", mb->dir);
    if (mb->cfg.head == TS_BERT_QUESTION_ANSWERING)
        return ts_set_error(TS_ERR_ARG, "%s answers questions; an ensemble's members are sequence classifiers",
                            mb->dir);
    if (mb->cfg.head != TS_BERT_SEQ_CLASSIFICATION || mb->meta.nlabels <= 0)
        return ts_set_error(TS_ERR_ARG,
                            "%s is not a fine-tuned model (architecture '%s'; an ensemble's members are sequence "
                            "classifiers)",
                            mb->dir, mb->cfg.architecture[0] ? mb->cfg.architecture : "none");
    if (k > 0 && !ts_model_meta_same_labels(&e->m[0].meta, &mb->meta))
        return ts_set_error(TS_ERR_ARG,
                            "%s is not the same kind of classifier as %s (labels or text columns differ); an "
                            "ensemble needs models trained on the same task",
                            mb->dir, e->m[0].dir);
    return TS_OK;
}

/* Member k opened: its directory, then its program (first: a batch too large for the device is
 * refused by the program's memory check before the batch buffer is allocated), then its batch. */
static ts_status open_member(ts_ensemble *e, int k) {
    ens_member *mb = &e->m[k];
    ts_status st = check_member(e, k);
    if (st) return st;
    int B = e->o.batch, T = mb->meta.max_len;
    const char *fetch[] = {"logits"};
    if (e->o.program) {
        if (!(mb->p = e->o.program(e->o.program_ctx, mb->dir, &mb->cfg, B, T)))
            return ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
    } else {
        tr_program_opts po = {.batch = B, .seq = T, .threads = e->o.threads, .memory_limit = e->o.memory_limit,
                              .load_flags = e->o.load_flags, .device = e->o.device, .quantize = -1};
        if (!(mb->p = tr_model_program(mb->dir, &mb->cfg, &po, fetch, 1)))
            return tr_err_prefixed(ts_last_status(), "%s", mb->dir);
    }
    if (!(mb->bb_made = ts_batch_buf_init(&mb->bb, B, T, 0)))
        return ts_set_error(TS_ERR_NOMEM, "%s: out of memory for a batch of %d x %d tokens", mb->dir, B, T);
    return TS_OK;
}

ts_ensemble *ts_ensemble_open(const char *const *dirs, int n, const ts_ensemble_opts *o) {
    ts_ensemble *e = calloc(1, sizeof *e);
    if (!e) return ts_set_error(TS_ERR_NOMEM, "out of memory"), NULL;
    ts_status st = TS_STRUCT_READ(&e->o, o, ts_ensemble_opts, "ts_ensemble_open");
    if (!st && (!dirs || n < 1 || e->o.batch < 0 || e->o.threads < 0))
        st = ts_set_error(TS_ERR_ARG, "ts_ensemble_open: %s",
                          !dirs || n < 1 ? "no model directories" : "batch or threads below 0");
    if (!e->o.batch) e->o.batch = 8;
    if (!st && !(e->m = calloc((size_t)n, sizeof *e->m))) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
    for (int k = 0; !st && k < n; k++) {
        if (!(e->m[k].dir = strdup(dirs[k]))) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
        e->n = k + 1;
        if (!st) st = open_member(e, k);
    }
    if (!st) {
        e->nlabels = e->m[0].meta.nlabels, e->pairs = e->m[0].meta.text_b_column != NULL;
        e->queue = calloc((size_t)e->o.batch, sizeof *e->queue);
        e->probs = calloc((size_t)e->o.batch * (size_t)e->nlabels, sizeof *e->probs);
        if (!e->queue || !e->probs) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
    }
    if (!st) return e;
    char err[1024];
    snprintf(err, sizeof err, "%s", ts_last_error());
    ts_ensemble_free(e);
    ts_set_error(st, "%s", err);
    return NULL;
}

void ts_ensemble_free(ts_ensemble *e) {
    if (!e) return;
    for (int k = 0; k < e->n; k++) {
        ens_member *mb = &e->m[k];
        if (mb->bb_made) ts_batch_buf_free(&mb->bb);
        ts_program_free(mb->p);
        ts_tokenizer_free(mb->tok);
        ts_model_meta_free(&mb->meta);
        free(mb->dir);
    }
    for (int i = 0; e->queue && i < e->nqueued; i++) free(e->queue[i]);
    free(e->queue), free(e->probs), free(e->m), free(e);
}

int ts_ensemble_size(const ts_ensemble *e) { return e ? e->n : 0; }

const ts_model_meta *ts_ensemble_meta(const ts_ensemble *e) { return e ? &e->m[0].meta : NULL; }

ts_status ts_ensemble_classify(ts_ensemble *e, const char *const *texts, int n, double *probs) {
    if (!e || n < 0 || (n && (!texts || !probs)))
        return ts_set_error(TS_ERR_ARG, "ts_ensemble_classify: bad arguments");
    int L = e->nlabels, B = e->o.batch;
    memset(probs, 0, (size_t)n * (size_t)L * sizeof *probs);
    for (int i = 0; i < n; i += B) {
        int m = n - i < B ? n - i : B;
        for (int k = 0; k < e->n; k++) {
            ens_member *mb = &e->m[k];
            ts_status st = ts_classify_texts_add_probs(mb->p, &mb->bb, mb->tok, texts + i, m, e->pairs, L,
                                                       probs + (size_t)i * L);
            if (st) return e->n > 1 ? tr_err_prefixed(st, "%s", mb->dir) : st;
        }
    }
    for (size_t j = 0; j < (size_t)n * (size_t)L; j++) probs[j] /= e->n;
    return TS_OK;
}

ts_status ts_ensemble_add_dataset(ts_ensemble *e, const ts_text_dataset *d, double *probs) {
    if (!e || !d || !probs) return ts_set_error(TS_ERR_ARG, "ts_ensemble_add_dataset: bad arguments");
    for (int k = 0; k < e->n; k++) {
        ens_member *mb = &e->m[k];
        ts_status st = ts_classify_add_probs(mb->p, mb->tok, d, e->o.batch, mb->meta.max_len, probs);
        if (st) return tr_err_prefixed(st, "%s", mb->dir);
    }
    return TS_OK;
}

ts_status ts_ensemble_add_text(ts_ensemble *e, const char *text) {
    if (!e || !text) return ts_set_error(TS_ERR_ARG, "ts_ensemble_add_text: bad arguments");
    if (e->pairs && !strchr(text, '\t'))
        return ts_set_error(TS_ERR_ARG, "the model classifies text pairs: write text<TAB>text_b (no tab found)");
    if (!(e->queue[e->nqueued] = strdup(text))) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    return ++e->nqueued == e->o.batch ? ts_ensemble_flush(e) : TS_OK;
}

ts_status ts_ensemble_flush(ts_ensemble *e) {
    if (!e) return ts_set_error(TS_ERR_ARG, "ts_ensemble_flush: no ensemble");
    int n = e->nqueued, L = e->nlabels;
    ts_status st = ts_ensemble_classify(e, (const char *const *)e->queue, n, e->probs);
    for (int i = 0; i < n; i++) {
        const double *r = e->probs + (size_t)i * L;
        int best = 0;
        for (int j = 1; j < L; j++)
            if (r[j] > r[best]) best = j;
        if (!st && e->o.result) e->o.result(e->o.result_ctx, e->queue[i], best, r[best]);
        free(e->queue[i]);
    }
    e->nqueued = 0;
    return st;
}

ts_status ts_ensemble_add_lines(ts_ensemble *e, const char *data_file) {
    if (!e) return ts_set_error(TS_ERR_ARG, "ts_ensemble_add_lines: no ensemble");
    int std_in = !data_file || !strcmp(data_file, "-");
    const char *name = std_in ? "stdin" : data_file;
    FILE *in = std_in ? stdin : fopen(data_file, "r");
    if (!in) return ts_set_error(TS_ERR_ARG, "data_file %s: %s", data_file, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    ts_status st = TS_OK;
    while (!st && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        if (len && line[len - 1] == '\r') line[--len] = 0;
        if ((st = ts_ensemble_add_text(e, line)) == TS_ERR_ARG) tr_err_prefixed(st, "%s:%ld", name, lineno);
    }
    if (!st && ferror(in)) st = ts_set_error(TS_ERR_IO, "reading %s: %s", name, strerror(errno));
    free(line);
    if (!std_in) fclose(in);
    return st ? st : ts_ensemble_flush(e);
}

/* The rows of o->data_file scored (its held-out part with a split) into r. */
static ts_status eval_rows(ts_ensemble *e, const ts_ensemble_eval_opts *o, const ts_text_dataset *d,
                           ts_ensemble_eval_report *r) {
    ts_text_dataset *train = NULL, *test = NULL;
    ts_status st = TS_OK;
    if (o->test_split > 0 && ts_text_dataset_split(d, o->test_split, o->split_seed, &train, &test, NULL) != TS_OK)
        st = ts_set_error(ts_last_status() == TS_ERR_ARG ? TS_ERR_RUNTIME : ts_last_status(), "%s: %s", o->data_file,
                          ts_last_error());
    const ts_text_dataset *scored = test ? test : d;
    int64_t n = st ? 0 : ts_text_dataset_size(scored);
    if (!st && n == 0) /* an accuracy of 0 of 0 would read as a result */
        st = ts_set_error(TS_ERR_ARG, "data_file %s has no rows to score%s", o->data_file,
                          test ? " in its held-out part (test_split)" : " (a header and nothing else?)");
    double *probs = st ? NULL : calloc((size_t)n * (size_t)ts_text_dataset_num_labels(scored), sizeof *probs);
    if (!st && !probs) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
    if (!st && (st = ts_ensemble_add_dataset(e, scored, probs)) != TS_OK)
        st = ts_set_error(st == TS_ERR_ARG ? TS_ERR_RUNTIME : st, "scoring %s: %s", o->data_file, ts_last_error());
    if (!st) {
        r->rows = n;
        r->correct = ts_classify_count_right(scored, probs, &r->total);
        r->baseline = ts_classify_majority(train ? train : d, scored, &r->majority);
    }
    free(probs);
    ts_text_dataset_free(train);
    ts_text_dataset_free(test);
    return st;
}

ts_status ts_ensemble_eval_file(ts_ensemble *e, const ts_ensemble_eval_opts *opts, ts_ensemble_eval_report *report) {
    ts_ensemble_eval_opts o;
    if (!e || !report) return ts_set_error(TS_ERR_ARG, "ts_ensemble_eval_file: NULL argument");
    if (TS_STRUCT_READ(&o, opts, ts_ensemble_eval_opts, "ts_ensemble_eval_file")) return TS_ERR_ARG;
    if (!o.data_file) return ts_set_error(TS_ERR_ARG, "ts_ensemble_eval_file: data_file is required");
    if (o.test_split >= 1)
        return ts_set_error(TS_ERR_ARG, "test_split %g holds out every row; it is a fraction below 1", o.test_split);
    ts_ensemble_eval_report r = {.struct_size = sizeof r};
    if (TS_STRUCT_WRITE(report, &r, ts_ensemble_eval_report, "ts_ensemble_eval_file")) return TS_ERR_ARG;
    const ts_model_meta *meta = ts_ensemble_meta(e);
    ts_text_opts to = {.text_column = o.text_column ? o.text_column : "text",
                       .text_b_column = o.text_b_column ? o.text_b_column : meta->text_b_column,
                       .label_column = o.label_column ? o.label_column : "label",
                       .labels = (const char *const *)meta->labels,
                       .nlabels = meta->nlabels};
    ts_text_dataset *d = ts_text_dataset_load(o.data_file, &to);
    ts_status st = d ? eval_rows(e, &o, d, &r) : ts_set_error(TS_ERR_ARG, "data_file %s", ts_last_error());
    ts_text_dataset_free(d);
    TS_STRUCT_WRITE(report, &r, ts_ensemble_eval_report, "ts_ensemble_eval_file");
    return st;
}
