/*
 * bow_run.c — the bag-of-words baseline end to end (tessera_tasks.h: ts_bow_run, what
 * `tessera bow` does): the vocabulary and both files read (the test file with the training
 * file's labels), the rows featurized, the model built and trained, and its test accuracy
 * scored beside the majority baseline. The report says where a failure happened.
 */
#include "common/app.h"

#include <stdio.h>

/* Fail at stage `at` with the error recorded (ts_last_status). */
static ts_status fail_at(ts_bow_run_report *r, int at) {
    r->failed_at = at;
    return ts_last_status() != TS_OK ? ts_last_status() : TS_ERR_RUNTIME;
}

/* Both files read (the test file with the training file's labels), their labels kept in r. */
static ts_status load(const ts_bow_run_opts *o, ts_bow_run_report *r, ts_text_dataset **train,
                      ts_text_dataset **test) {
    ts_text_opts to = {.text_column = o->text_column, .label_column = o->label_column};
    if (!(*train = ts_text_dataset_load(o->train_file, &to))) return fail_at(r, TS_BOW_RUN_AT_TRAIN);
    int nl = ts_text_dataset_num_labels(*train);
    if (nl < 2) {
        ts_set_error(TS_ERR_ARG, "%s: %d distinct label%s in column '%s'; a classifier needs two", o->train_file, nl,
                     nl == 1 ? "" : "s", o->label_column);
        return fail_at(r, TS_BOW_RUN_AT_LABELS);
    }
    if (!(r->labels = calloc((size_t)nl, sizeof *r->labels))) {
        ts_set_error(TS_ERR_NOMEM, "out of memory");
        return fail_at(r, TS_BOW_RUN_AT_RUN);
    }
    r->nlabels = nl;
    for (int i = 0; i < nl; i++)
        if (!(r->labels[i] = strdup(ts_text_dataset_label_name(*train, i)))) {
            ts_set_error(TS_ERR_NOMEM, "out of memory");
            return fail_at(r, TS_BOW_RUN_AT_RUN);
        }
    to.labels = (const char *const *)r->labels, to.nlabels = nl;
    if (!(*test = ts_text_dataset_load(o->test_file, &to))) return fail_at(r, TS_BOW_RUN_AT_TEST);
    r->ntest = ts_text_dataset_size(*test);
    r->ntrain = ts_text_dataset_size(*train);
    if (r->ntest == 0) {
        ts_set_error(TS_ERR_ARG, "%s has no rows", o->test_file);
        return fail_at(r, TS_BOW_RUN_AT_TEST_EMPTY);
    }
    if (r->ntrain == 0) {
        ts_set_error(TS_ERR_ARG, "%s has no rows", o->train_file);
        return fail_at(r, TS_BOW_RUN_AT_TRAIN_EMPTY);
    }
    return TS_OK;
}

/* Featurize, build, train and score (the files read). */
static ts_status train_and_score(const ts_bow_run_opts *o, ts_bow_run_report *r, const ts_tokenizer *tok,
                                 const ts_text_dataset *train, const ts_text_dataset *test) {
    ts_program *tp = NULL, *ip = NULL;
    ts_bow_features *ftr = ts_bow_featurize(train, tok, o->max_tokens), *fte = NULL;
    ts_status st = ftr && (fte = ts_bow_featurize(test, tok, o->max_tokens)) ? TS_OK : fail_at(r, TS_BOW_RUN_AT_RUN);
    int V = ts_tokenizer_vocab_size(tok), C = r->nlabels;
    int B = o->batch < r->ntrain ? o->batch : (int)r->ntrain; /* a batch larger than the data is all padding */
    int L = 1;
    if (!st) {
        L = ts_bow_longest(ftr) > ts_bow_longest(fte) ? ts_bow_longest(ftr) : ts_bow_longest(fte);
        if (L < 1) L = 1;
        if (ts_bow_programs(V, C, B, L, (float)o->lr, (float)o->weight_decay, o->threads, &tp, &ip) != TS_OK)
            st = fail_at(r, TS_BOW_RUN_AT_BUILD);
    }
    r->nfeatures = V;
    r->nbatch = (r->ntrain + B - 1) / B;
    if (!st) {
        double t0 = ts_seconds();
        ts_status tr = ts_bow_train(tp, ftr, train, B, L, o->epochs, o->seed, &r->loss);
        r->seconds = ts_seconds() - t0;
        if (tr || ts_program_copy_params(ip, tp) < 0 || ts_bow_accuracy(ip, fte, test, B, L, C, &r->hit))
            st = fail_at(r, TS_BOW_RUN_AT_RUN);
    }
    if (!st) r->baseline = ts_classify_majority(train, test, &r->majority);
    ts_program_free(tp), ts_program_free(ip);
    ts_bow_features_free(ftr), ts_bow_features_free(fte);
    return st;
}

ts_status ts_bow_run(const ts_bow_run_opts *opts, ts_bow_run_report *report) {
    if (!report) return ts_set_error(TS_ERR_ARG, "ts_bow_run: report is NULL");
    ts_bow_run_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_bow_run_opts, "ts_bow_run")) return TS_ERR_ARG;
    if (!o.vocab || !o.train_file || !o.test_file)
        return ts_set_error(TS_ERR_ARG, "ts_bow_run: vocab, train_file and test_file are required");
    if (!o.text_column) o.text_column = "text";
    if (!o.label_column) o.label_column = "label";
    if (o.batch <= 0) o.batch = 32;
    if (o.max_tokens <= 0) o.max_tokens = 1024;
    ts_bow_run_report r = {.struct_size = sizeof r};
    if (TS_STRUCT_WRITE(report, &r, ts_bow_run_report, "ts_bow_run")) return TS_ERR_ARG;
    ts_text_dataset *train = NULL, *test = NULL;
    ts_tokenizer *tok = ts_tokenizer_load(o.vocab, !o.cased);
    ts_status st = tok ? load(&o, &r, &train, &test) : fail_at(&r, TS_BOW_RUN_AT_VOCAB);
    if (!st) st = train_and_score(&o, &r, tok, train, test);
    ts_text_dataset_free(train), ts_text_dataset_free(test);
    ts_tokenizer_free(tok);
    TS_STRUCT_WRITE(report, &r, ts_bow_run_report, "ts_bow_run");
    return st;
}

void ts_bow_run_report_free(ts_bow_run_report *r) {
    if (!r) return;
    for (int i = 0; r->labels && i < r->nlabels; i++) free(r->labels[i]);
    free(r->labels);
    r->labels = NULL, r->nlabels = 0;
}
