/*
 * text_write.c — a text dataset written back out (tessera_tasks.h): as a two-column TSV
 * (label<TAB>text), or as a pretraining corpus (a document per text, a sentence a line), as
 * `tessera split` writes its train / test files.
 */
#include "common/app.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* "PATH: reason" for a file that could not be written. */
static ts_status write_error(const char *path) {
    return ts_set_error(TS_ERR_IO, "%s: %s", path, strerror(errno ? errno : EIO));
}

/* s with every tab, CR and LF written as a space. */
static void put_field(FILE *f, const char *s) {
    for (; *s; s++) fputc(*s == '\t' || *s == '\r' || *s == '\n' ? ' ' : *s, f);
}

ts_status ts_text_dataset_write_tsv(const ts_text_dataset *d, int64_t n, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return write_error(path);
    fputs("label\ttext\n", f);
    for (int64_t i = 0; i < n; i++) {
        const char *text;
        int32_t label;
        ts_text_dataset_get(d, i, &text, NULL, &label);
        put_field(f, ts_text_dataset_label_name(d, label));
        fputc('\t', f);
        put_field(f, text);
        fputc('\n', f);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return write_error(path);
    return TS_OK;
}

/* One text as a corpus document: its sentences a line each, then a blank line. */
static void put_document(FILE *f, const char *s) {
    int in_line = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
        if (s[0] == '|' && s[1] == ' ') { /* a part boundary: the line ends here */
            if (in_line) fputc('\n', f), in_line = 0;
            s += 2;
            continue;
        }
        if (!*s) break;
        const char *w = s; /* one word */
        while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') s++;
        if (in_line) fputc(' ', f);
        fwrite(w, 1, (size_t)(s - w), f);
        in_line = 1;
        char last = s[-1];
        if ((last == '.' || last == '!' || last == '?') && *s) fputc('\n', f), in_line = 0;
    }
    if (in_line) fputc('\n', f);
    fputc('\n', f);
}

ts_status ts_text_dataset_write_corpus(const ts_text_dataset *d, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return write_error(path);
    for (int64_t i = 0; i < ts_text_dataset_size(d); i++) {
        const char *text;
        ts_text_dataset_get(d, i, &text, NULL, NULL);
        put_document(f, text);
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return write_error(path);
    return TS_OK;
}


ts_status ts_text_split_write(const ts_text_dataset *train, const ts_text_dataset *test, const char *dir,
                              const int *subsets, int nsubsets) {
    size_t cap = strlen(dir) + 32;
    char *path = malloc(cap);
    if (!path) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    snprintf(path, cap, "%s/train.tsv", dir);
    ts_status err = ts_text_dataset_write_tsv(train, ts_text_dataset_size(train), path);
    if (!err) {
        snprintf(path, cap, "%s/test.tsv", dir);
        err = ts_text_dataset_write_tsv(test, ts_text_dataset_size(test), path);
    }
    if (!err) {
        snprintf(path, cap, "%s/train.txt", dir);
        err = ts_text_dataset_write_corpus(train, path);
    }
    for (int k = 0; k < nsubsets && !err; k++) {
        snprintf(path, cap, "%s/train-%d.tsv", dir, subsets[k]);
        err = ts_text_dataset_write_tsv(train, subsets[k], path);
    }
    free(path);
    return err;
}
