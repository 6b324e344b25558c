/*
 * audio_set.c — labelled audio (tessera_speech.h: ts_audio_set_*), what an audio classifier is
 * trained and scored on: a folder per label or a TSV of path and label, listed in a fixed order
 * (so a seed gives the same run), the classifier's features of each clip, computed once, and its
 * most probable label of each (ts_audio_clf_guess).
 */
#include "common/app.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Append clip (path, owned from here, label name) to s, adding the label when new (sorted at the
 * end); names holds the labels in order of appearance. -1 on out of memory (path freed). */
static int add_clip(ts_audio_set *s, char *path, const char *label, char ***names) {
    int j = 0;
    while (j < s->nlabels && strcmp((*names)[j], label)) j++;
    if (j == s->nlabels) {
        char **p = realloc(*names, (size_t)(s->nlabels + 1) * sizeof *p);
        if (!p) return free(path), -1;
        *names = p;
        if (!(p[s->nlabels] = strdup(label))) return free(path), -1;
        s->nlabels++;
    }
    char **pp = realloc(s->path, (size_t)(s->n + 1) * sizeof *pp);
    int *pl = pp ? realloc(s->label, (size_t)(s->n + 1) * sizeof *pl) : NULL;
    if (pp) s->path = pp;
    if (!pl) return free(path), -1;
    s->label = pl;
    s->path[s->n] = path;
    s->label[s->n++] = j;
    return 0;
}

/* Sorted names in dir (no '.' names) of entries that are directories (want_dir) or files; the
 * count, or -1 when dir cannot be opened (errno). */
static int list_dir(const char *dir, int want_dir, char ***out) {
    DIR *d = opendir(dir);
    *out = NULL;
    if (!d) return -1;
    int n = 0;
    char **v = NULL, p[4200];
    struct dirent *e;
    struct stat sb;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || ts_path_join(p, sizeof p, dir, e->d_name) || stat(p, &sb) ||
            (S_ISDIR(sb.st_mode) ? 1 : 0) != want_dir)
            continue;
        char **q = realloc(v, (size_t)(n + 1) * sizeof *q);
        if (!q) break;
        v = q;
        if (!(v[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_str);
    *out = v;
    return n;
}

/* The clips of a folder of label folders; a label folder without files (or that cannot be read)
 * is an error naming it: training without the label would quietly give a model that never
 * answers it. */
static ts_status load_dir(const char *data, ts_audio_set *s, char ***names) {
    char **labels, **files, p[4200];
    int nl = list_dir(data, 1, &labels);
    if (nl < 0) return ts_set_error(TS_ERR_ARG, "%s: %s", data, strerror(errno));
    int oom = 0;
    ts_status st = TS_OK;
    for (int i = 0; i < nl; i++) {
        snprintf(p, sizeof p, "%s/%s", data, labels[i]);
        int nf = st ? 0 : list_dir(p, 0, &files);
        if (!st && nf < 0) st = ts_set_error(TS_ERR_ARG, "%s: %s", p, strerror(errno));
        else if (!st && nf == 0)
            st = ts_set_error(TS_ERR_ARG, "%s: an empty label folder (no audio files for label '%s')", p, labels[i]);
        for (int k = 0; k < nf; k++) {
            char *path = malloc(strlen(p) + strlen(files[k]) + 2);
            if (path) sprintf(path, "%s/%s", p, files[k]);
            if (!path || add_clip(s, path, labels[i], names)) oom = 1;
            free(files[k]);
        }
        if (nf > 0) free(files);
        free(labels[i]);
    }
    free(labels);
    return oom ? ts_set_error(TS_ERR_NOMEM, "out of memory") : st;
}

static ts_status load_tsv(const char *data, ts_audio_set *s, char ***names) {
    FILE *f = fopen(data, "r");
    if (!f) return ts_set_error(TS_ERR_ARG, "%s: %s", data, strerror(errno));
    const char *slash = strrchr(data, '/');
    int dlen = slash ? (int)(slash - data) : 0, line = 0;
    ts_status st = TS_OK;
    char buf[8192];
    while (!st && fgets(buf, sizeof buf, f)) {
        line++;
        buf[strcspn(buf, "\r\n")] = 0;
        if (!buf[0] || (line == 1 && !strncmp(buf, "path\t", 5))) continue;
        char *tab = strchr(buf, '\t');
        if (!tab || !tab[1] || tab == buf || strchr(tab + 1, '\t')) {
            st = ts_set_error(TS_ERR_ARG, "%s:%d: wants PATH<TAB>LABEL", data, line);
            break;
        }
        *tab = 0;
        char *path = malloc(strlen(buf) + (size_t)dlen + 2);
        if (path && (buf[0] == '/' || !slash)) strcpy(path, buf);
        else if (path) sprintf(path, "%.*s/%s", dlen, data, buf);
        if (!path || add_clip(s, path, tab + 1, names)) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
    }
    fclose(f);
    return st;
}

/* The labels sorted by name, the clips' indices remapped; names (in order of appearance) taken. */
static ts_status sort_labels(ts_audio_set *s, char **names) {
    int L = s->nlabels ? s->nlabels : 1, *map = malloc((size_t)L * sizeof *map);
    s->labels = malloc((size_t)L * sizeof *s->labels);
    if (!map || !s->labels) {
        for (int j = 0; j < s->nlabels; j++) free(names[j]);
        s->nlabels = 0;
        free(map);
        return ts_set_error(TS_ERR_NOMEM, "out of memory");
    }
    for (int j = 0; j < s->nlabels; j++) s->labels[j] = names[j];
    qsort(s->labels, (size_t)s->nlabels, sizeof *s->labels, cmp_str);
    for (int j = 0; j < s->nlabels; j++) map[j] = ts_audio_set_find(s, names[j]);
    for (int i = 0; i < s->n; i++) s->label[i] = map[s->label[i]];
    free(map);
    return TS_OK;
}

ts_audio_set *ts_audio_set_load(const char *data) {
    if (!data) return ts_set_error(TS_ERR_ARG, "ts_audio_set_load: data is NULL"), NULL;
    ts_audio_set *s = calloc(1, sizeof *s);
    if (!s) return ts_set_error(TS_ERR_NOMEM, "out of memory"), NULL;
    struct stat sb;
    char **names = NULL;
    ts_status st = stat(data, &sb)       ? ts_set_error(TS_ERR_ARG, "%s: %s", data, strerror(errno))
                   : S_ISDIR(sb.st_mode) ? load_dir(data, s, &names)
                                         : load_tsv(data, s, &names);
    ts_status sorted = sort_labels(s, names);
    free(names);
    if (!st) st = sorted;
    if (!st && !s->n)
        st = ts_set_error(TS_ERR_ARG,
                          "%s: no audio clips (a folder per label holding audio files, or a TSV of "
                          "path<TAB>label)",
                          data);
    if (!st && !(s->samples = malloc((size_t)s->n * sizeof *s->samples)))
        st = ts_set_error(TS_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < s->n; i++) s->samples[i] = -1;
    if (!st) return s;
    char err[1024];
    snprintf(err, sizeof err, "%s", ts_last_error());
    ts_audio_set_free(s);
    ts_set_error(st, "%s", err);
    return NULL;
}

void ts_audio_set_free(ts_audio_set *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) free(s->path[i]);
    for (int j = 0; s->labels && j < s->nlabels; j++) free(s->labels[j]);
    free(s->path), free(s->label), free(s->labels), free(s->samples), free(s);
}

int ts_audio_set_find(const ts_audio_set *s, const char *name) {
    for (int j = 0; s && name && j < s->nlabels; j++)
        if (!strcmp(s->labels[j], name)) return j;
    return -1;
}

float *ts_audio_set_features(ts_audio_clf *c, const ts_audio_set *s) {
    if (!c || !s) return ts_set_error(TS_ERR_ARG, "ts_audio_set_features: bad arguments"), NULL;
    int64_t F = ts_audio_clf_feature_size(c);
    float *feat = malloc((size_t)((int64_t)(s->n ? s->n : 1) * F) * sizeof(float));
    if (!feat) return ts_set_error(TS_ERR_NOMEM, "out of memory for the features of %d clips", s->n), NULL;
    ts_phase ph;
    ts_phase_begin(&ph, "computing features", "clips", s->n);
    for (int i = 0; i < s->n; i++) {
        ts_phase_step(&ph, i);
        ts_audio *a = ts_audio_read(s->path[i], 16000);
        if (a && s->samples) s->samples[i] = a->n; /* the set's record of what was read, not its clips */
        ts_status st = a ? ts_audio_clf_features(c, a->samples, a->n, feat + (int64_t)i * F) : TS_ERR_ARG;
        ts_audio_free(a);
        if (st) {
            if (!a) {
                char err[1024];
                snprintf(err, sizeof err, "%s", ts_last_error());
                ts_set_error(TS_ERR_ARG, "a clip: %s", err);
            }
            free(feat);
            ts_phase_end(&ph);
            return NULL;
        }
    }
    ts_phase_end(&ph);
    return feat;
}

ts_status ts_audio_clf_guess(ts_audio_clf *c, int64_t n, const float *feat, int *guess) {
    if (!c || n < 0 || (n && (!feat || !guess))) return ts_set_error(TS_ERR_ARG, "ts_audio_clf_guess: bad arguments");
    int L = ts_audio_clf_num_labels(c);
    float *p = malloc((size_t)(n ? n : 1) * (size_t)L * sizeof(float));
    if (!p) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    ts_status st = ts_audio_clf_predict(c, n, feat, p);
    for (int64_t i = 0; !st && i < n; i++) {
        int best = 0;
        for (int j = 1; j < L; j++) best = p[i * L + j] > p[i * L + best] ? j : best;
        guess[i] = best;
    }
    free(p);
    return st;
}
