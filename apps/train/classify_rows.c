/*
 * classify_rows.c — a classifier's training and test rows from its files (tessera_tasks.h:
 * ts_classify_rows_load): the training file read and deduplicated, then split into train and
 * test so that no text is in both, unless a dev file gives the test rows (with the training
 * file's label ids).
 */
#include "common/app.h"

#include <stdio.h>

/* o->text (a fixed ts_text_columns) read as the ts_text_opts of its size. */
static ts_status text_opts(const ts_classify_rows_opts *o, ts_text_opts *to) {
    ts_text_columns c = o->text;
    if (c.struct_size > sizeof c) c.struct_size = sizeof c; /* fixed: never more than itself */
    return TS_STRUCT_READ(to, &c, ts_text_opts, "ts_classify_rows_load");
}

/* The test rows from o->dev, labelled with the ids of all's labels. */
static ts_status load_dev(const ts_classify_rows_opts *o, const ts_text_dataset *all, ts_text_dataset **test) {
    ts_text_opts to;
    text_opts(o, &to); /* checked by ts_classify_rows_load */
    int nl = ts_text_dataset_num_labels(all);
    const char **names = malloc((size_t)nl * sizeof *names);
    if (!names) {
        ts_writef(o->err, o->err_ctx, "%s: out of memory\n", o->name);
        return ts_set_error(TS_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < nl; i++) names[i] = ts_text_dataset_label_name(all, i);
    to.labels = names, to.nlabels = nl;
    *test = ts_text_dataset_load(o->dev, &to);
    free(names);
    if (*test) return TS_OK;
    ts_writef(o->err, o->err_ctx, "%s: held-out rows: %s\n", o->name, ts_last_error());
    return TS_ERR_ARG;
}

ts_status ts_classify_rows_load(const ts_classify_rows_opts *o, ts_text_dataset **train, ts_text_dataset **test) {
    ts_classify_rows_opts oc;
    if (!o || !train || !test) return ts_set_error(TS_ERR_ARG, "ts_classify_rows_load: NULL argument");
    if (TS_STRUCT_READ(&oc, o, ts_classify_rows_opts, "ts_classify_rows_load")) return TS_ERR_ARG;
    o = &oc;
    *train = *test = NULL;
    ts_text_opts to;
    if (text_opts(o, &to)) return TS_ERR_ARG;
    to.labels = NULL, to.nlabels = 0;
    ts_text_dataset *all = ts_text_dataset_load(o->train, &to);
    if (!all) {
        ts_writef(o->err, o->err_ctx, "%s: training rows: %s\n", o->name, ts_last_error());
        return TS_ERR_ARG;
    }
    int64_t n = ts_text_dataset_size(all), dup = 0;
    int nl = ts_text_dataset_num_labels(all);
    if (nl < 2) {
        ts_writef(o->err, o->err_ctx, "%s: %s: %d distinct label%s in column '%s'; a classifier needs two\n", o->name,
                  o->train, nl, nl == 1 ? "" : "s", o->text.label_column ? o->text.label_column : "label");
        ts_text_dataset_free(all);
        return TS_ERR_ARG;
    }
    ts_status st;
    if (o->dev) {
        st = ts_text_dataset_dedup(all, &dup);
        *train = all;
        ts_status dst = load_dev(o, all, test);
        if (dst != TS_OK) return dst;
    } else if (o->test_split > 0) {
        st = ts_text_dataset_split(all, o->test_split, o->split_seed, train, test, &dup);
        ts_text_dataset_free(all);
    } else {
        st = ts_text_dataset_dedup(all, &dup);
        *train = all;
    }
    if (st != TS_OK) {
        ts_writef(o->err, o->err_ctx, "%s: %s: %s\n", o->name, o->train, ts_last_error());
        return st == TS_ERR_ARG ? TS_ERR_RUNTIME : st;
    }
    ts_writef(o->out, o->out_ctx, "%s: %s: %lld %srows, %lld duplicates dropped, %lld for training, %lld for testing%s%s\n",
              o->name, o->train, (long long)n, o->text.text_b_column ? "text-pair " : "", (long long)dup,
              (long long)ts_text_dataset_size(*train), (long long)(*test ? ts_text_dataset_size(*test) : 0),
              o->dev ? " from " : "", o->dev ? o->dev : "");
    return TS_OK;
}
