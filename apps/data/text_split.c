/*
 * text_split.c — a labelled file split and written out (tessera_tasks.h: ts_text_split_files, what
 * `tessera split` does): the options checked, the file read, split (ts_text_dataset_split) and its
 * files written (ts_text_split_write) into the directory, made when missing.
 */
#include "common/app.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* o's subsets as row counts into sub (malloc'd, *sub NULL when there are none): TS_OK, or TS_ERR_ARG
 * naming one that is not a positive integer. */
static ts_status parse_subsets(const ts_text_split_opts *o, int **sub) {
    *sub = o->nsubsets > 0 ? malloc(sizeof **sub * (size_t)o->nsubsets) : NULL;
    if (o->nsubsets > 0 && !*sub) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    for (int k = 0; k < o->nsubsets; k++) {
        const char *v = o->subsets[k] ? o->subsets[k] : "";
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || end == v || *end || n <= 0 || n > INT_MAX)
            return ts_set_error(TS_ERR_ARG, "ts_text_split: subset \"%s\" is not a positive integer", v);
        (*sub)[k] = (int)n;
    }
    return TS_OK;
}

/* train and test written into o->out_dir after the subsets are checked against the training rows. */
static ts_status write_split(const ts_text_split_opts *o, const ts_text_dataset *train, const ts_text_dataset *test,
                             const int *sub) {
    for (int k = 0; k < o->nsubsets; k++)
        if (sub[k] > ts_text_dataset_size(train))
            return ts_set_error(TS_ERR_ARG, "ts_text_split: subset %d is more than the %lld training rows of %s",
                                sub[k], (long long)ts_text_dataset_size(train), o->data_file);
    if (ts_make_dirs(o->out_dir) != TS_OK) return ts_last_status();
    ts_status st = ts_text_split_write(train, test, o->out_dir, sub, o->nsubsets);
    return st && st != TS_ERR_NOMEM ? ts_set_error(st, "cannot write %s", ts_last_error()) : st;
}

ts_status ts_text_split_files(const ts_text_split_opts *opts, ts_text_split_report *report) {
    ts_text_split_opts o;
    ts_text_split_report r = {.struct_size = sizeof r};
    if (TS_STRUCT_READ(&o, opts, ts_text_split_opts, "ts_text_split_files") ||
        TS_STRUCT_WRITE(report, &r, ts_text_split_report, "ts_text_split_files"))
        return TS_ERR_ARG;
    if (!o.data_file || !o.out_dir || (o.nsubsets > 0 && !o.subsets))
        return ts_set_error(TS_ERR_ARG, "ts_text_split_files: data_file and out_dir are required");
    if (!(o.test_split > 0 && o.test_split < 1))
        return ts_set_error(TS_ERR_ARG, "ts_text_split: test_split %g is not a fraction in (0, 1)", o.test_split);
    int *sub = NULL;
    ts_status st = parse_subsets(&o, &sub);
    ts_text_opts to = {.text_column = o.text_column, .label_column = o.label_column};
    ts_text_dataset *all = st ? NULL : ts_text_dataset_load(o.data_file, &to), *train = NULL, *test = NULL;
    if (!st && !all)
        st = ts_last_status() == TS_ERR_NOMEM ? TS_ERR_NOMEM
                                              : ts_set_error(TS_ERR_ARG, "data_file %s", ts_last_error());
    if (!st) st = ts_text_dataset_split(all, o.test_split, o.split_seed, &train, &test, &r.nduplicates);
    if (!st) {
        r.ntrain = ts_text_dataset_size(train), r.ntest = ts_text_dataset_size(test);
        r.nrows = r.ntrain + r.ntest + r.nduplicates;
        st = write_split(&o, train, test, sub);
    }
    ts_text_dataset_free(train), ts_text_dataset_free(test), ts_text_dataset_free(all);
    free(sub);
    TS_STRUCT_WRITE(report, &r, ts_text_split_report, "ts_text_split_files");
    return st;
}
