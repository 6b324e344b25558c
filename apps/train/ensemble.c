/*
 * ensemble.c — several fine-tuned sequence classifiers predicting as one (tessera_tasks.h:
 * ts_ensemble_*, what `tessera predict` and `tessera eval` do with several models): the members
 * opened and checked against the first (the same labels and text-pair column), each with its
 * own vocabulary, row length and inference program; texts classified a batch at a time, the
 * members' class probabilities averaged; a dataset's rows scored by every member.
 */
#include "common/app.h"

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
        if (!(mb->p = tr_model_program(mb->dir, &mb->cfg, &po, fetch, 1))) return tr_err_prefixed(ts_last_status(), "%s", mb->dir);
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
