/*
 * audio_data.c — labelled audio for `tessera audio-train` and `tessera eval`: a folder per label
 * or a TSV of path and label, listed in a fixed order (so a seed gives the same run), and the
 * classifier's features of each clip, computed once.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audio_data.h"
#include "cli.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Append clip (path, label name) to s, adding the label when new (labels sorted at the end). */
static int add_clip(cli_audio_set *s, char *path, const char *label, char ***names) {
    int j = 0;
    while (j < s->nlabels && strcmp((*names)[j], label)) j++;
    if (j == s->nlabels) {
        char **p = realloc(*names, (size_t)(s->nlabels + 1) * sizeof *p);
        if (!p) return -1;
        *names = p;
        if (!(p[s->nlabels++] = strdup(label))) return -1;
    }
    char **pp = realloc(s->path, (size_t)(s->n + 1) * sizeof *pp);
    int *pl = pp ? realloc(s->label, (size_t)(s->n + 1) * sizeof *pl) : NULL;
    if (pp) s->path = pp;
    if (!pl) return -1;
    s->label = pl;
    s->path[s->n] = path;
    s->label[s->n++] = j;
    return 0;
}

/* Sorted names in dir (no '.' names) of entries that are directories (want_dir) or files. */
static int list_dir(const char *dir, int want_dir, char ***out) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    char **v = NULL, p[4200];
    struct dirent *e;
    struct stat sb;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !cli_path_join(p, sizeof p, dir, e->d_name) || stat(p, &sb) ||
            (S_ISDIR(sb.st_mode) ? 1 : 0) != want_dir)
            continue;
        char **q = realloc(v, (size_t)(n + 1) * sizeof *q);
        if (!q) break;
        v = q;
        if (!(v[n] = strdup(e->d_name))) break;
        n++;
    }
    closedir(d);
    if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_str); /* v is NULL when the folder is empty */
    *out = v;
    return n;
}

static int load_dir(const char *cmd, const char *data, cli_audio_set *s, char ***names) {
    char **labels, **files, p[4200];
    int nl = list_dir(data, 1, &labels);
    if (nl < 0) return fprintf(stderr, "tessera %s: %s: %s\n", cmd, data, strerror(errno)), 2;
    for (int i = 0; i < nl; i++) {
        snprintf(p, sizeof p, "%s/%s", data, labels[i]);
        int nf = list_dir(p, 0, &files);
        for (int k = 0; k < nf; k++) {
            char *path = malloc(strlen(p) + strlen(files[k]) + 2);
            if (path) sprintf(path, "%s/%s", p, files[k]);
            if (!path || add_clip(s, path, labels[i], names)) nl = -1;
            free(files[k]);
        }
        free(files);
        free(labels[i]);
    }
    free(labels);
    return nl < 0 ? (fprintf(stderr, "tessera %s: out of memory\n", cmd), 2) : 0;
}

static int load_tsv(const char *cmd, const char *data, cli_audio_set *s, char ***names) {
    FILE *f = fopen(data, "r");
    if (!f) return fprintf(stderr, "tessera %s: %s: %s\n", cmd, data, strerror(errno)), 2;
    const char *slash = strrchr(data, '/');
    int dlen = slash ? (int)(slash - data) : 0, line = 0, rc = 0;
    char buf[8192];
    while (!rc && fgets(buf, sizeof buf, f)) {
        line++;
        buf[strcspn(buf, "\r\n")] = 0;
        if (!buf[0] || (line == 1 && !strncmp(buf, "path\t", 5))) continue;
        char *tab = strchr(buf, '\t');
        if (!tab || !tab[1] || tab == buf || strchr(tab + 1, '\t')) {
            fprintf(stderr, "tessera %s: %s:%d: wants PATH<TAB>LABEL\n", cmd, data, line);
            rc = 2;
            break;
        }
        *tab = 0;
        char *path = malloc(strlen(buf) + (size_t)dlen + 2);
        if (path && (buf[0] == '/' || !slash)) strcpy(path, buf);
        else if (path) sprintf(path, "%.*s/%s", dlen, data, buf);
        if (!path || add_clip(s, path, tab + 1, names)) rc = (fprintf(stderr, "tessera %s: out of memory\n", cmd), 2);
    }
    fclose(f);
    return rc;
}

int cli_audio_set_load(const char *cmd, const char *data, cli_audio_set *s) {
    memset(s, 0, sizeof *s);
    struct stat sb;
    if (stat(data, &sb)) return fprintf(stderr, "tessera %s: %s: %s\n", cmd, data, strerror(errno)), 2;
    char **names = NULL;
    int rc = S_ISDIR(sb.st_mode) ? load_dir(cmd, data, s, &names) : load_tsv(cmd, data, s, &names);
    /* labels sorted by name; clips' indices remapped */
    s->labels = malloc((size_t)(s->nlabels ? s->nlabels : 1) * sizeof *s->labels);
    int *map = malloc((size_t)(s->nlabels ? s->nlabels : 1) * sizeof *map);
    if (!rc && (!s->labels || !map)) rc = (fprintf(stderr, "tessera %s: out of memory\n", cmd), 2);
    for (int j = 0; s->labels && j < s->nlabels; j++) s->labels[j] = names[j];
    if (!rc) {
        qsort(s->labels, (size_t)s->nlabels, sizeof *s->labels, cmp_str);
        for (int j = 0; j < s->nlabels; j++) map[j] = cli_audio_set_find(s, names[j]);
        for (int i = 0; i < s->n; i++) s->label[i] = map[s->label[i]];
    } else if (!s->labels)
        for (int j = 0; j < s->nlabels; j++) free(names[j]);
    free(names);
    free(map);
    if (!rc && !s->n) {
        fprintf(stderr, "tessera %s: %s: no audio clips (a folder per label holding audio files, or a TSV of "
                        "path<TAB>label)\n", cmd, data);
        rc = 2;
    }
    if (rc) cli_audio_set_free(s);
    return rc;
}

void cli_audio_set_free(cli_audio_set *s) {
    for (int i = 0; i < s->n; i++) free(s->path[i]);
    for (int j = 0; s->labels && j < s->nlabels; j++) free(s->labels[j]);
    free(s->path), free(s->label), free(s->labels);
    memset(s, 0, sizeof *s);
}

int cli_audio_set_find(const cli_audio_set *s, const char *name) {
    for (int j = 0; j < s->nlabels; j++)
        if (!strcmp(s->labels[j], name)) return j;
    return -1;
}

float *cli_audio_features(const char *cmd, ts_audio_clf *c, const cli_audio_set *s, int *rc) {
    int64_t F = ts_audio_clf_feature_size(c);
    float *feat = malloc((size_t)((int64_t)s->n * F) * sizeof(float));
    if (!feat) {
        *rc = 1;
        fprintf(stderr, "tessera %s: out of memory for the features of %d clips\n", cmd, s->n);
        return NULL;
    }
    for (int i = 0; i < s->n; i++) {
        ts_audio *a = ts_audio_read(s->path[i], 16000);
        if (!a || ts_audio_clf_features(c, a->samples, a->n, feat + (int64_t)i * F)) {
            *rc = cli_fail(cmd, a ? "" : "a clip: ", a ? 1 : 2);
            ts_audio_free(a);
            free(feat);
            return NULL;
        }
        ts_audio_free(a);
    }
    return feat;
}
