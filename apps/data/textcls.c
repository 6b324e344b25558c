/*
 * textcls.c — text classification datasets: load a TSV, CSV or JSONL file into memory (text,
 * optional second text, label), map label names to ids, deduplicate, split into train and test
 * without leaking duplicates across the split, and encode batches with the tokenizer.
 */
#include "data/data.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>

struct ts_text_dataset {
    int64_t n, cap;
    int pairs;             /* rows hold a second text */
    char **text, **text_b; /* text_b is unused (NULL) without pairs */
    int32_t *label;
    int64_t *line;         /* line of the file each row came from */
    char **names;          /* label names by id */
    int nlabels;
    char *path;
};

/* ------------------------------------------------------------------ building */

static void free_rows(ts_text_dataset *d) {
    for (int64_t i = 0; i < d->n; i++) {
        free(d->text[i]);
        if (d->pairs) free(d->text_b[i]);
    }
}

void ts_text_dataset_free(ts_text_dataset *d) {
    if (!d) return;
    free_rows(d);
    free(d->text);
    free(d->text_b);
    free(d->label);
    free(d->line);
    for (int i = 0; i < d->nlabels; i++) free(d->names[i]);
    free(d->names);
    free(d->path);
    free(d);
}

static ts_text_dataset *new_dataset(const char *path, int pairs) {
    ts_text_dataset *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->path = strdup(path ? path : "");
    if (!d->path) {
        free(d);
        return NULL;
    }
    d->pairs = pairs;
    return d;
}

static int grow_rows(ts_text_dataset *d, int64_t want) {
    if (want <= d->cap) return 1;
    int64_t c = d->cap ? d->cap * 2 : 256;
    while (c < want) c *= 2;
    int pairs = d->pairs;
    char **t = realloc(d->text, (size_t)c * sizeof *t);
    if (t) d->text = t;
    char **tb = NULL;
    if (pairs) {
        tb = realloc(d->text_b, (size_t)c * sizeof *tb);
        if (tb) d->text_b = tb;
    }
    int32_t *l = realloc(d->label, (size_t)c * sizeof *l);
    if (l) d->label = l;
    int64_t *ln = realloc(d->line, (size_t)c * sizeof *ln);
    if (ln) d->line = ln;
    if (!t || (pairs && !tb) || !l || !ln) return 0;
    d->cap = c;
    return 1;
}

/* Raw label strings of the rows being loaded, before ids are assigned. */
typedef struct rawlabels {
    char **s;
    int64_t n, cap;
} rawlabels;

static ts_status add_row(ts_text_dataset *d, rawlabels *rl, const char *text, const char *text_b,
                         const char *label, int64_t line) {
    if (!grow_rows(d, d->n + 1)) return ts_set_error(TS_ERR_NOMEM, "%s:%lld: out of memory", d->path, (long long)line);
    if (rl->n == rl->cap) {
        int64_t c = rl->cap ? rl->cap * 2 : 256;
        char **s = realloc(rl->s, (size_t)c * sizeof *s);
        if (!s) return ts_set_error(TS_ERR_NOMEM, "%s:%lld: out of memory", d->path, (long long)line);
        rl->s = s;
        rl->cap = c;
    }
    char *t = strdup(text), *tb = d->pairs ? strdup(text_b ? text_b : "") : NULL, *l = strdup(label);
    if (!t || (d->pairs && !tb) || !l) {
        free(t);
        free(tb);
        free(l);
        return ts_set_error(TS_ERR_NOMEM, "%s:%lld: out of memory", d->path, (long long)line);
    }
    d->text[d->n] = t;
    if (d->pairs) d->text_b[d->n] = tb;
    d->label[d->n] = -1;
    d->line[d->n] = line;
    d->n++;
    rl->s[rl->n++] = l;
    return TS_OK;
}

/* Is s a decimal integer (optional sign)? Its value in *v. */
static int is_int(const char *s, long long *v) {
    if (!*s) return 0;
    errno = 0;
    char *end;
    *v = strtoll(s, &end, 10);
    return *end == 0 && errno == 0 && !isspace((unsigned char)*s);
}

static int cmp_bytes(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* For integer labels: by value, then by spelling ("1" before "01"), a total order. */
static int cmp_int(const void *a, const void *b) {
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    long long u = 0, v = 0;
    is_int(x, &u);
    is_int(y, &v);
    if (u != v) return u < v ? -1 : 1;
    return strcmp(x, y);
}

typedef struct named {
    const char *s;
    int id;
} named;

static int cmp_named(const void *a, const void *b) {
    return strcmp(((const named *)a)->s, ((const named *)b)->s);
}

/* Assign label ids: from the given list, or the distinct labels sorted (numerically when every
 * label is an integer, else by bytes). */
static ts_status assign_labels(ts_text_dataset *d, rawlabels *rl, const char *const *given, int ngiven) {
    if (given) {
        d->names = calloc((size_t)(ngiven > 0 ? ngiven : 1), sizeof *d->names);
        if (!d->names) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory", d->path);
        for (int i = 0; i < ngiven; i++) {
            if (!given[i]) return ts_set_error(TS_ERR_ARG, "%s: label %d of the given list is NULL", d->path, i);
            if (!(d->names[i] = strdup(given[i]))) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory", d->path);
            d->nlabels = i + 1;
        }
    } else {
        char **sorted = malloc((size_t)(rl->n ? rl->n : 1) * sizeof *sorted);
        if (!sorted) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory", d->path);
        if (rl->n) memcpy(sorted, rl->s, (size_t)rl->n * sizeof *sorted); /* rl->s is NULL with no rows */
        int all_int = 1;
        long long v;
        for (int64_t i = 0; i < rl->n && all_int; i++) all_int = is_int(rl->s[i], &v);
        if (rl->n) qsort(sorted, (size_t)rl->n, sizeof *sorted, all_int ? cmp_int : cmp_bytes);
        int64_t nu = 0;
        for (int64_t i = 0; i < rl->n; i++)
            if (nu == 0 || strcmp(sorted[nu - 1], sorted[i]) != 0) sorted[nu++] = sorted[i];
        if (nu > INT32_MAX / 2) {
            free(sorted);
            return ts_set_error(TS_ERR_IO, "%s: %lld distinct labels (is the label column right?)", d->path,
                                (long long)nu);
        }
        d->names = calloc((size_t)(nu ? nu : 1), sizeof *d->names);
        if (!d->names) {
            free(sorted);
            return ts_set_error(TS_ERR_NOMEM, "%s: out of memory", d->path);
        }
        for (int64_t i = 0; i < nu; i++) {
            if (!(d->names[i] = strdup(sorted[i]))) {
                free(sorted);
                return ts_set_error(TS_ERR_NOMEM, "%s: out of memory", d->path);
            }
            d->nlabels = (int)i + 1;
        }
        free(sorted);
    }
    /* ids by binary search over the names sorted by bytes */
    int nl = d->nlabels;
    named *order = malloc((size_t)(nl ? nl : 1) * sizeof *order);
    if (!order) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory", d->path);
    for (int i = 0; i < nl; i++) order[i] = (named){d->names[i], i};
    qsort(order, (size_t)nl, sizeof *order, cmp_named);
    for (int i = 1; i < nl; i++)
        if (strcmp(order[i - 1].s, order[i].s) == 0) {
            ts_status st = ts_set_error(TS_ERR_ARG, "%s: label \"%s\" is given twice", d->path, order[i].s);
            free(order);
            return st;
        }
    ts_status st = TS_OK;
    for (int64_t r = 0; r < d->n && st == TS_OK; r++) {
        int lo = 0, hi = nl - 1, found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) / 2, c = strcmp(order[mid].s, rl->s[r]);
            if (c == 0) {
                found = order[mid].id;
                break;
            }
            if (c < 0) lo = mid + 1;
            else hi = mid - 1;
        }
        if (found < 0)
            st = ts_set_error(TS_ERR_IO, "%s:%lld: label \"%s\" is not one of the %d given labels", d->path,
                              (long long)d->line[r], rl->s[r], nl);
        else d->label[r] = found;
    }
    free(order);
    return st;
}

/* ------------------------------------------------------------------ TSV / CSV */

/* Index of a column by name (header) or 0-based number (no header); -1 with *st set. */
static int find_column(const char *path, ts_csv *c, int nf, const char *name, int header, const char *what,
                       ts_status *st) {
    if (header) {
        for (int i = 0; i < nf; i++)
            if (strcmp(ts_csv_field(c, i), name) == 0) return i;
        char cols[512];
        size_t o = 0;
        cols[0] = 0;
        for (int i = 0; i < nf && o < sizeof cols - 8; i++)
            o += (size_t)snprintf(cols + o, sizeof cols - o, "%s\"%s\"", i ? ", " : "", ts_csv_field(c, i));
        *st = ts_set_error(TS_ERR_NOT_FOUND, "%s:%lld: no %s column \"%s\" in the header (columns: %s)", path,
                           (long long)c->rec_line, what, name, cols);
        return -1;
    }
    long long v;
    if (!is_int(name, &v) || v < 0 || v >= nf) {
        *st = ts_set_error(TS_ERR_ARG, "%s:%lld: without a header the %s column is a number 0..%d, not \"%s\"", path,
                           (long long)c->rec_line, what, nf - 1, name);
        return -1;
    }
    return (int)v;
}

static ts_status load_delimited(ts_text_dataset *d, rawlabels *rl, const char *path, char sep,
                                const ts_text_opts *o) {
    ts_csv c;
    ts_status st = ts_csv_open(&c, path, sep, sep == ',');
    if (st != TS_OK) return st;
    int header = !o->no_header;
    const char *tcol = o->text_column ? o->text_column : header ? "text" : "1";
    const char *lcol = o->label_column ? o->label_column : header ? "label" : "0";
    int ti = -1, li = -1, bi = -1, ncols = 0, first = 1, nf;
    while ((st = ts_csv_next(&c, &nf)) == TS_OK && nf > 0) {
        if (first) {
            first = 0;
            ncols = nf;
            if ((ti = find_column(path, &c, nf, tcol, header, "text", &st)) < 0 ||
                (li = find_column(path, &c, nf, lcol, header, "label", &st)) < 0 ||
                (o->text_b_column &&
                 (bi = find_column(path, &c, nf, o->text_b_column, header, "second text", &st)) < 0))
                break;
            if (header) continue;
        }
        if (nf != ncols) {
            st = ts_set_error(TS_ERR_IO, "%s:%lld: expected %d columns, found %d", path, (long long)c.rec_line, ncols,
                              nf);
            break;
        }
        st = add_row(d, rl, ts_csv_field(&c, ti), bi >= 0 ? ts_csv_field(&c, bi) : NULL, ts_csv_field(&c, li),
                     c.rec_line);
        if (st != TS_OK) break;
    }
    if (st == TS_OK && first) st = ts_set_error(TS_ERR_IO, "%s: the file is empty", path);
    ts_csv_close(&c);
    return st;
}

/* ------------------------------------------------------------------ JSONL */

/* A label value as a string: a string as is, a number in its shortest form, true / false. */
static int label_string(const cJSON *v, char *buf, size_t cap, const char **out) {
    if (cJSON_IsString(v)) {
        *out = v->valuestring;
        return 1;
    }
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v) ? "true" : "false";
        return 1;
    }
    if (cJSON_IsNumber(v)) {
        double x = v->valuedouble;
        if (x == floor(x) && fabs(x) < 9e15) snprintf(buf, cap, "%lld", (long long)x);
        else snprintf(buf, cap, "%.17g", x);
        *out = buf;
        return 1;
    }
    return 0;
}

static ts_status load_jsonl(ts_text_dataset *d, rawlabels *rl, const char *path, const ts_text_opts *o) {
    FILE *f = fopen(path, "rb");
    if (!f) return ts_set_error(TS_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    const char *tkey = o->text_column ? o->text_column : "text";
    const char *lkey = o->label_column ? o->label_column : "label";
    const char *bkey = o->text_b_column;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    int64_t ln = 0, rows = 0;
    ts_status st = TS_OK;
    while (st == TS_OK && (got = getline(&line, &lcap, f)) >= 0) {
        ln++;
        size_t len = (size_t)got, b = 0;
        if (ln == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) b = 3;
        int blank = 1;
        for (size_t i = b; i < len && blank; i++) blank = isspace((unsigned char)line[i]) != 0;
        if (blank) continue;
        cJSON *j = cJSON_ParseWithLength(line + b, len - b);
        if (!j || !cJSON_IsObject(j)) {
            st = ts_set_error(TS_ERR_IO, "%s:%lld: %s", path, (long long)ln,
                              j ? "expected a JSON object {\"text\": ..., \"label\": ...}" : "not valid JSON");
            cJSON_Delete(j);
            break;
        }
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, tkey);
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(j, lkey);
        const cJSON *tb = bkey ? cJSON_GetObjectItemCaseSensitive(j, bkey) : NULL;
        char nbuf[64];
        const char *ls = NULL;
        if (!cJSON_IsString(t))
            st = ts_set_error(TS_ERR_IO, t ? "%s:%lld: \"%s\" is not a string" : "%s:%lld: no \"%s\" key", path,
                              (long long)ln, tkey);
        else if (bkey && !cJSON_IsString(tb))
            st = ts_set_error(TS_ERR_IO, tb ? "%s:%lld: \"%s\" is not a string" : "%s:%lld: no \"%s\" key", path,
                              (long long)ln, bkey);
        else if (!l)
            st = ts_set_error(TS_ERR_IO, "%s:%lld: no \"%s\" key", path, (long long)ln, lkey);
        else if (!label_string(l, nbuf, sizeof nbuf, &ls))
            st = ts_set_error(TS_ERR_IO, "%s:%lld: the label \"%s\" must be a string, a number or a boolean", path,
                              (long long)ln, lkey);
        else st = add_row(d, rl, t->valuestring, bkey ? tb->valuestring : NULL, ls, ln);
        rows++;
        cJSON_Delete(j);
    }
    if (st == TS_OK && ferror(f)) st = ts_set_error(TS_ERR_IO, "%s:%lld: read error", path, (long long)ln + 1);
    if (st == TS_OK && rows == 0) st = ts_set_error(TS_ERR_IO, "%s: the file is empty", path);
    free(line);
    fclose(f);
    return st;
}

/* ------------------------------------------------------------------ public */

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

ts_text_dataset *ts_text_dataset_load(const char *path, const ts_text_opts *opts) {
    ts_text_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_text_opts, "ts_text_dataset_load")) return NULL;
    if (!path) {
        ts_set_error(TS_ERR_ARG, "ts_text_dataset_load: path is NULL");
        return NULL;
    }
    if (o.nlabels < 0 || (o.nlabels > 0 && !o.labels)) {
        ts_set_error(TS_ERR_ARG, "ts_text_dataset_load: %s: nlabels %d without a label list", path, o.nlabels);
        return NULL;
    }
    ts_text_format fmt = o.format;
    if (fmt == TS_FORMAT_AUTO) {
        if (ends_with(path, ".tsv")) fmt = TS_FORMAT_TSV;
        else if (ends_with(path, ".csv")) fmt = TS_FORMAT_CSV;
        else if (ends_with(path, ".jsonl") || ends_with(path, ".json")) fmt = TS_FORMAT_JSONL;
        else {
            ts_set_error(TS_ERR_ARG,
                         "%s: cannot tell the format from the name (.tsv, .csv, .jsonl); set ts_text_opts.format",
                         path);
            return NULL;
        }
    }
    if (fmt != TS_FORMAT_TSV && fmt != TS_FORMAT_CSV && fmt != TS_FORMAT_JSONL) {
        ts_set_error(TS_ERR_ARG, "%s: unknown format %d", path, (int)fmt);
        return NULL;
    }
    ts_text_dataset *d = new_dataset(path, o.text_b_column != NULL);
    if (!d) {
        ts_set_error(TS_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    rawlabels rl = {0};
    ts_status st = fmt == TS_FORMAT_JSONL ? load_jsonl(d, &rl, path, &o)
                                          : load_delimited(d, &rl, path, fmt == TS_FORMAT_TSV ? '\t' : ',', &o);
    if (st == TS_OK) st = assign_labels(d, &rl, o.labels ? o.labels : NULL, o.nlabels);
    for (int64_t i = 0; i < rl.n; i++) free(rl.s[i]);
    free(rl.s);
    if (st != TS_OK) {
        ts_text_dataset_free(d);
        return NULL;
    }
    return d;
}

int64_t ts_text_dataset_size(const ts_text_dataset *d) { return d ? d->n : 0; }
int ts_text_dataset_num_labels(const ts_text_dataset *d) { return d ? d->nlabels : 0; }

const char *ts_text_dataset_label_name(const ts_text_dataset *d, int id) {
    return d && id >= 0 && id < d->nlabels ? d->names[id] : NULL;
}

ts_status ts_text_dataset_get(const ts_text_dataset *d, int64_t i, const char **text, const char **text_b,
                              int32_t *label) {
    if (!d || i < 0 || i >= d->n)
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_get: row %lld outside [0, %lld)", (long long)i,
                            (long long)(d ? d->n : 0));
    if (text) *text = d->text[i];
    if (text_b) *text_b = d->pairs ? d->text_b[i] : NULL;
    if (label) *label = d->label[i];
    return TS_OK;
}

/* ------------------------------------------------------------------ dedup and split */

static uint64_t hash_str(uint64_t h, const char *s) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull; /* a separator, so ("ab","c") != ("a","bc") */
}

/* keep[i] = 1 for the first row of each distinct (text, text_b); the number of others in *ndup. */
static ts_status first_occurrences(const ts_text_dataset *d, uint8_t *keep, int64_t *ndup) {
    size_t nslots = 64;
    while (nslots < (size_t)d->n * 2) nslots *= 2;
    int64_t *slot = malloc(nslots * sizeof *slot);
    if (!slot) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory deduplicating", d->path);
    memset(slot, 0xff, nslots * sizeof *slot);
    int64_t dup = 0;
    for (int64_t i = 0; i < d->n; i++) {
        uint64_t h = hash_str(0xcbf29ce484222325ull, d->text[i]);
        if (d->pairs) h = hash_str(h, d->text_b[i]);
        keep[i] = 1;
        for (size_t k = (size_t)h & (nslots - 1);; k = (k + 1) & (nslots - 1)) {
            int64_t j = slot[k];
            if (j < 0) {
                slot[k] = i;
                break;
            }
            if (strcmp(d->text[j], d->text[i]) == 0 && (!d->pairs || strcmp(d->text_b[j], d->text_b[i]) == 0)) {
                keep[i] = 0;
                dup++;
                break;
            }
        }
    }
    free(slot);
    *ndup = dup;
    return TS_OK;
}

ts_status ts_text_dataset_dedup(ts_text_dataset *d, int64_t *nremoved) {
    if (nremoved) *nremoved = 0;
    if (!d) return ts_set_error(TS_ERR_ARG, "ts_text_dataset_dedup: NULL dataset");
    uint8_t *keep = malloc((size_t)(d->n ? d->n : 1));
    if (!keep) return ts_set_error(TS_ERR_NOMEM, "%s: out of memory deduplicating", d->path);
    int64_t ndup = 0;
    ts_status st = first_occurrences(d, keep, &ndup);
    if (st == TS_OK) {
        int64_t o = 0;
        for (int64_t i = 0; i < d->n; i++) {
            if (!keep[i]) {
                free(d->text[i]);
                if (d->pairs) free(d->text_b[i]);
                continue;
            }
            d->text[o] = d->text[i];
            if (d->pairs) d->text_b[o] = d->text_b[i];
            d->label[o] = d->label[i];
            d->line[o] = d->line[i];
            o++;
        }
        d->n = o;
        if (nremoved) *nremoved = ndup;
    }
    free(keep);
    return st;
}

/* A new dataset of rows[0..n) of d (copies), with d's label names. */
static ts_text_dataset *subset(const ts_text_dataset *d, const int64_t *rows, int64_t n) {
    ts_text_dataset *s = new_dataset(d->path, d->pairs);
    if (!s || !grow_rows(s, n ? n : 1)) goto oom;
    s->names = calloc((size_t)(d->nlabels ? d->nlabels : 1), sizeof *s->names);
    if (!s->names) goto oom;
    for (int i = 0; i < d->nlabels; i++) {
        if (!(s->names[i] = strdup(d->names[i]))) goto oom;
        s->nlabels = i + 1;
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t r = rows[k];
        char *t = strdup(d->text[r]), *tb = d->pairs ? strdup(d->text_b[r]) : NULL;
        if (!t || (d->pairs && !tb)) {
            free(t);
            free(tb);
            goto oom;
        }
        s->text[k] = t;
        if (d->pairs) s->text_b[k] = tb;
        s->label[k] = d->label[r];
        s->line[k] = d->line[r];
        s->n = k + 1;
    }
    return s;
oom:
    ts_text_dataset_free(s);
    ts_set_error(TS_ERR_NOMEM, "%s: out of memory splitting", d->path);
    return NULL;
}

ts_status ts_text_dataset_split(const ts_text_dataset *d, double test_fraction, uint64_t seed,
                                ts_text_dataset **train, ts_text_dataset **test, int64_t *nduplicates) {
    if (train) *train = NULL;
    if (test) *test = NULL;
    if (nduplicates) *nduplicates = 0;
    if (!d || !train || !test) return ts_set_error(TS_ERR_ARG, "ts_text_dataset_split: NULL dataset, train or test");
    if (!(test_fraction >= 0.0 && test_fraction <= 1.0))
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_split: test_fraction %g is outside [0, 1]", test_fraction);
    size_t n = (size_t)(d->n ? d->n : 1);
    uint8_t *keep = malloc(n);
    int64_t *uniq = malloc(n * sizeof *uniq), *perm = malloc(n * sizeof *perm), *rows = malloc(n * sizeof *rows);
    ts_status st = TS_OK;
    int64_t ndup = 0;
    if (!keep || !uniq || !perm || !rows) st = ts_set_error(TS_ERR_NOMEM, "%s: out of memory splitting", d->path);
    if (st == TS_OK) st = first_occurrences(d, keep, &ndup);
    if (st == TS_OK) {
        int64_t nu = 0;
        for (int64_t i = 0; i < d->n; i++)
            if (keep[i]) uniq[nu++] = i;
        ts_permutation(seed, nu, perm);
        for (int64_t k = 0; k < nu; k++) rows[k] = uniq[perm[k]];
        int64_t ntest = (int64_t)llround(test_fraction * (double)nu);
        if (ntest > nu) ntest = nu;
        *test = subset(d, rows, ntest);
        *train = *test ? subset(d, rows + ntest, nu - ntest) : NULL;
        if (!*test || !*train) {
            st = TS_ERR_NOMEM;
            ts_text_dataset_free(*test);
            ts_text_dataset_free(*train);
            *test = *train = NULL;
        } else if (nduplicates) {
            *nduplicates = ndup;
        }
    }
    free(keep);
    free(uniq);
    free(perm);
    free(rows);
    return st;
}

/* ------------------------------------------------------------------ batches */

ts_status ts_text_dataset_batch(const ts_text_dataset *d, const ts_tokenizer *tok, const int64_t *rows, int n,
                                int batch_size, int max_len, const ts_batch *b) {
    if (!d || !tok || !b || !b->input_ids || (n > 0 && !rows))
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_batch: NULL dataset, tokenizer, rows, batch or input_ids");
    if (n < 0 || batch_size < 1 || n > batch_size)
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_batch: %d rows do not fit a batch of %d", n, batch_size);
    if (max_len < (d->pairs ? 3 : 2))
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_batch: max_len %d is too short", max_len);
    int32_t pad = ts_token_to_id(tok, "[PAD]");
    for (int i = 0; i < batch_size; i++) {
        size_t o = (size_t)i * (size_t)max_len;
        if (i < n) {
            int64_t r = rows[i];
            if (r < 0 || r >= d->n)
                return ts_set_error(TS_ERR_ARG, "ts_text_dataset_batch: row %lld outside [0, %lld)", (long long)r,
                                    (long long)d->n);
            ts_status st = ts_encode(tok, d->text[r], d->pairs ? d->text_b[r] : NULL, max_len, b->input_ids + o,
                                     b->token_type_ids ? b->token_type_ids + o : NULL,
                                     b->attention_mask ? b->attention_mask + o : NULL, NULL);
            if (st != TS_OK) return st;
            if (b->labels) b->labels[i] = d->label[r];
        } else {
            for (int t = 0; t < max_len; t++) {
                b->input_ids[o + t] = pad;
                if (b->token_type_ids) b->token_type_ids[o + t] = 0;
                if (b->attention_mask) b->attention_mask[o + t] = 0;
            }
            if (b->labels) b->labels[i] = TS_IGNORE_INDEX;
        }
    }
    return TS_OK;
}

/* ------------------------------------------------------------------ packed rows */

ts_status ts_text_dataset_lengths(const ts_text_dataset *d, const ts_tokenizer *tok, int max_len, int *lengths) {
    if (!d || !tok || !lengths)
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_lengths: NULL dataset, tokenizer or lengths");
    if (max_len < (d->pairs ? 3 : 2))
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_lengths: max_len %d is too short", max_len);
    int32_t *ids = malloc((size_t)max_len * sizeof *ids);
    if (!ids) return ts_set_error(TS_ERR_NOMEM, "ts_text_dataset_lengths: out of memory");
    ts_status st = TS_OK;
    for (int64_t r = 0; r < d->n && !st; r++)
        st = ts_encode(tok, d->text[r], d->pairs ? d->text_b[r] : NULL, max_len, ids, NULL, NULL, &lengths[r]);
    free(ids);
    return st;
}

/* Row `row` of b as padding from token `from` on. */
static void pad_from(const ts_batch *b, const ts_pack_batch *p, int row, int from, int max_len, int32_t pad) {
    size_t o = (size_t)row * (size_t)max_len;
    for (int t = from; t < max_len; t++) {
        b->input_ids[o + t] = pad;
        if (b->token_type_ids) b->token_type_ids[o + t] = 0;
        if (b->attention_mask) b->attention_mask[o + t] = 0;
        if (p->position_ids) p->position_ids[o + t] = 0;
    }
}

ts_status ts_text_dataset_batch_packed(const ts_text_dataset *d, const ts_tokenizer *tok, const int64_t *rows,
                                       const int64_t *row_start, int n, int batch_size, int max_len, int per_row,
                                       const ts_batch *b, const ts_pack_batch *p) {
    if (!d || !tok || !b || !b->input_ids || !p || (n > 0 && (!rows || !row_start)))
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_batch_packed: NULL dataset, tokenizer, rows, batch or "
                            "input_ids");
    if (n < 0 || batch_size < 1 || n > batch_size || per_row < 1)
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_batch_packed: %d rows do not fit a batch of %d (per_row %d)",
                            n, batch_size, per_row);
    if (max_len < (d->pairs ? 3 : 2))
        return ts_set_error(TS_ERR_ARG, "ts_text_dataset_batch_packed: max_len %d is too short", max_len);
    int32_t pad = ts_token_to_id(tok, "[PAD]");
    int32_t *ids = malloc((size_t)max_len * 3 * sizeof *ids), *types = ids + max_len, *mask = types + max_len;
    if (!ids) return ts_set_error(TS_ERR_NOMEM, "ts_text_dataset_batch_packed: out of memory");
    ts_status st = TS_OK;
    for (int i = 0; i < batch_size && !st; i++) {
        size_t o = (size_t)i * (size_t)max_len;
        int off = 0, k = 0;
        for (int64_t j = i < n ? row_start[i] : 0; i < n && j < row_start[i + 1] && !st; j++, k++) {
            int64_t r = rows[j], len = 0;
            if (r < 0 || r >= d->n || k >= per_row) {
                st = ts_set_error(TS_ERR_ARG, "ts_text_dataset_batch_packed: row %d: entry %lld (text %lld) is outside "
                                  "[0, %lld) or past per_row %d", i, (long long)j, (long long)r, (long long)d->n,
                                  per_row);
                break;
            }
            int got = 0;
            st = ts_encode(tok, d->text[r], d->pairs ? d->text_b[r] : NULL, max_len, ids, types, mask, &got);
            len = got;
            if (!st && off + len > max_len)
                st = ts_set_error(TS_ERR_ARG, "ts_text_dataset_batch_packed: row %d: the texts take more than "
                                  "max_len %d tokens", i, max_len);
            if (st) break;
            memcpy(b->input_ids + o + off, ids, (size_t)len * sizeof *ids);
            if (b->token_type_ids) memcpy(b->token_type_ids + o + off, types, (size_t)len * sizeof *types);
            ts_pack_mark(b->attention_mask ? b->attention_mask + o : NULL, p->position_ids ? p->position_ids + o : NULL,
                         off, (int)len, k + 1);
            p->cls_positions[(size_t)i * per_row + k] = off;
            if (p->seq_labels) p->seq_labels[(size_t)i * per_row + k] = d->label[r];
            off += (int)len;
        }
        for (; k < per_row; k++) { /* empty slots */
            p->cls_positions[(size_t)i * per_row + k] = 0;
            if (p->seq_labels) p->seq_labels[(size_t)i * per_row + k] = TS_IGNORE_INDEX;
        }
        pad_from(b, p, i, off, max_len, pad);
    }
    free(ids);
    return st;
}
