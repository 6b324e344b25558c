/*
 * ensemble_file.c — a file of texts classified by an ensemble as `tessera predict --data FILE`
 * reads it (ts_ensemble_add_file): a labelled table of the kind `tessera eval` scores (a .tsv,
 * .csv or .jsonl file that starts with a header naming its text or label column, or a JSONL
 * object) gives the text column of each row, the header and the labels left out; anything else
 * is one text a line (ts_ensemble_add_lines). And how model directories run, in the words the
 * command's summary lines use (ts_model_dirs_precision).
 */
#include "common/app.h"

#include <errno.h>
#include <stdio.h>

/* Does field f (len bytes, CSV quotes around it allowed) name column `name`? */
static int names_column(const char *f, size_t len, const char *name) {
    if (len >= 2 && f[0] == '"' && f[len - 1] == '"') f++, len -= 2;
    return len == strlen(name) && !strncmp(f, name, len);
}

/* Is the first non-blank line of TSV / CSV file `path` a header naming column tcol or lcol, or of
 * a JSONL file a JSON object? 1 or 0; TS_ERR_ARG (-1) when the file cannot be read. */
static int starts_with_header(const char *path, int format, const char *tcol, const char *lcol) {
    FILE *in = fopen(path, "r");
    if (!in) return ts_set_error(TS_ERR_ARG, "data_file %s: %s", path, strerror(errno)), -1;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) >= 0 && strspn(line, " \t\r\n") == (size_t)n) { /* blank */ }
    fclose(in);
    int header = 0;
    char *p = n >= 0 ? line : NULL;
    if (p && !strncmp(p, "\xEF\xBB\xBF", 3)) p += 3; /* a byte order mark, as the loader skips it */
    if (p) p[strcspn(p, "\r\n")] = 0;
    if (p && format == TS_FORMAT_JSONL) header = p[strspn(p, " \t")] == '{';
    for (char *f = format == TS_FORMAT_JSONL ? NULL : p, *end; f && !header; f = end ? end + 1 : NULL) {
        end = strchr(f, format == TS_FORMAT_TSV ? '\t' : ',');
        size_t len = end ? (size_t)(end - f) : strlen(f);
        header = names_column(f, len, tcol) || names_column(f, len, lcol);
    }
    free(line);
    return header;
}

/* The rows of table `data` (in format) queued on e: a text-pair ensemble gets text<TAB>text_b (a
 * tab inside the first text as a space: the first tab separates). */
static ts_status add_table(ts_ensemble *e, const char *data, int format, const char *tcol, const char *bcol) {
    const ts_model_meta *meta = ts_ensemble_meta(e);
    if (bcol && !meta->text_b_column)
        return ts_set_error(TS_ERR_ARG, "text_b_column %s: the model classifies single texts, not pairs", bcol);
    /* the label is not needed: the text column stands in for it, so a file without labels reads too */
    ts_text_opts to = {.struct_size = sizeof to, .format = format, .text_column = tcol,
                       .text_b_column = meta->text_b_column ? (bcol ? bcol : meta->text_b_column) : NULL,
                       .label_column = tcol};
    ts_text_dataset *d = ts_text_dataset_load(data, &to);
    if (!d)
        return ts_set_error(TS_ERR_ARG, "%s (a file with a header is read as tessera eval reads it: "
                            "text_column names its text column)", ts_last_error());
    ts_status st = TS_OK;
    char *pair = NULL;
    for (int64_t i = 0; i < ts_text_dataset_size(d) && !st; i++) {
        const char *text = NULL, *text_b = NULL;
        if ((st = ts_text_dataset_get(d, i, &text, &text_b, NULL))) break;
        if (to.text_b_column) {
            size_t la = strlen(text), lb = strlen(text_b);
            char *grown = realloc(pair, la + lb + 2);
            if (!grown) {
                st = ts_set_error(TS_ERR_NOMEM, "out of memory");
                break;
            }
            pair = grown;
            for (size_t k = 0; k < la; k++) pair[k] = text[k] == '\t' ? ' ' : text[k];
            pair[la] = '\t';
            memcpy(pair + la + 1, text_b, lb + 1);
            text = pair;
        }
        st = ts_ensemble_add_text(e, text);
    }
    free(pair);
    ts_text_dataset_free(d);
    return st ? st : ts_ensemble_flush(e);
}

ts_status ts_ensemble_add_file(ts_ensemble *e, const char *data_file, const char *text_column,
                               const char *text_b_column, const char *label_column) {
    if (!e) return ts_set_error(TS_ERR_ARG, "ts_ensemble_add_file: no ensemble");
    int cols = text_column || text_b_column || label_column, std_in = !data_file || !strcmp(data_file, "-");
    const char *ext = std_in ? NULL : strrchr(data_file, '.');
    int format = !ext ? TS_FORMAT_AUTO : !strcmp(ext, ".tsv") ? TS_FORMAT_TSV : !strcmp(ext, ".csv") ? TS_FORMAT_CSV
                 : !strcmp(ext, ".jsonl") || !strcmp(ext, ".json") ? TS_FORMAT_JSONL : TS_FORMAT_AUTO;
    if (cols && format == TS_FORMAT_AUTO)
        return ts_set_error(TS_ERR_ARG, "text_column, text_b_column and label_column read a .tsv, .csv or .jsonl "
                            "file with a header, as tessera eval takes (%s is one text a line)",
                            std_in ? "stdin" : data_file);
    int header = format == TS_FORMAT_AUTO ? 0 : cols ? 1
                 : starts_with_header(data_file, format, "text", label_column ? label_column : "label");
    if (header < 0) return TS_ERR_ARG;
    if (!header) return ts_ensemble_add_lines(e, data_file);
    return add_table(e, data_file, format, text_column ? text_column : "text", text_b_column);
}

/* How model directory dir runs: 0 f32, 1 int8 dynamic, 2 int8 calibrated (its quantization record;
 * f32 also when the record cannot be read: loading the model says why). */
static int dir_precision(const char *dir) {
    ts_quant_record rec = {0};
    int mode = ts_quant_record_load(dir, &rec) == TS_OK ? rec.mode : TS_QUANT_NONE;
    ts_quant_record_free(&rec);
    ts_err_clear();
    return mode == TS_QUANT_DYNAMIC ? 1 : mode == TS_QUANT_STATIC ? 2 : 0;
}

const char *ts_model_dirs_precision(const char *const *dirs, int n) {
    int count[3] = {0}; /* members of each kind */
    for (int i = 0; i < n; i++) count[dir_precision(dirs[i])]++;
    if (!count[1] && !count[2]) return "f32";
    if (count[0]) return "int8 and f32 members";
    return !count[1] ? "int8 calibrated" : !count[2] ? "int8 dynamic" : "int8 dynamic and calibrated members";
}
