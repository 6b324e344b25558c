/*
 * options.c — a run's options read from a JSON config file and overridden by command-line
 * flags (tessera_tasks.h: ts_options_parse): one table names each option, its kind and where
 * its value goes; `--config FILE` is read first, then the flags. Errors are written, one line
 * each and prefixed by the program's name, to the caller's ts_write_fn.
 */
#include "core/core.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one parse writes to: the program's name and the error sink. */
typedef struct opt_ctx {
    ts_optset *s;
    const char *prog;
    ts_write_fn err;
    void *err_ctx;
} opt_ctx;

/* "PROG: message\n" to the error sink. */
__attribute__((format(printf, 2, 3))) static void say(const opt_ctx *c, const char *fmt, ...) {
    char line[8192];
    int n = snprintf(line, sizeof line, "%s: ", c->prog);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (c->err) c->err(c->err_ctx, line, (size_t)n);
}

const ts_opt *ts_options_find(const ts_optset *s, const char *name) {
    for (int i = 0; i < s->nopts; i++)
        if (!strcmp(s->opts[i].name, name)) return &s->opts[i];
    return NULL;
}

/* If argv[*i] is `flag VALUE` or `flag=VALUE`, VALUE (advancing *i past it); NULL if argv[*i] is
 * another flag. A flag given without its value writes an error and sets *bad. */
static const char *flag_value(const opt_ctx *c, int argc, char *const *argv, int *i, const char *flag, int *bad) {
    size_t n = strlen(flag);
    const char *a = argv[*i];
    if (strncmp(a, flag, n) != 0) return NULL;
    if (a[n] == '=') return a + n + 1;
    if (a[n] != 0) return NULL;
    if (*i + 1 >= argc) {
        say(c, "%s needs a value", flag);
        *bad = 1;
        return NULL;
    }
    return argv[++*i];
}

static int parse_int(const opt_ctx *c, const char *name, const char *v, int min, int *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > INT_MAX) {
        say(c, "%s wants an integer >= %d, not '%s'", name, min, v);
        return 0;
    }
    *out = (int)x;
    return 1;
}

static int parse_float(const opt_ctx *c, const char *name, const char *v, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < 0) {
        say(c, "%s wants a non-negative number, not '%s'", name, v);
        return 0;
    }
    *out = x;
    return 1;
}

/* Append v to a list; a list given again (config, then flag) starts over: callers set n = 0. */
static int list_add(const opt_ctx *c, ts_strlist *l, const char *v) {
    const char **nv = realloc((void *)l->v, (size_t)(l->n + 1) * sizeof *nv);
    if (!nv) {
        say(c, "out of memory");
        return 0;
    }
    l->v = nv;
    l->v[l->n++] = v;
    return 1;
}

/* Apply "key": value from the config file. */
static int apply_json(const opt_ctx *c, const char *path, const cJSON *item) {
    const ts_opt *o = ts_options_find(c->s, item->string);
    if (!o || !strcmp(item->string, "config")) {
        say(c, "%s: unknown key \"%s\" (the keys are the flags' names)", path, item->string);
        return 0;
    }
    switch (o->kind) {
    case TS_OPT_STR:
        if (!cJSON_IsString(item)) break;
        *(const char **)o->ptr = item->valuestring;
        return 1;
    case TS_OPT_INT: {
        if (!cJSON_IsNumber(item) || item->valuedouble != floor(item->valuedouble) ||
            item->valuedouble < o->min_int || item->valuedouble > INT_MAX)
            break;
        *(int *)o->ptr = (int)item->valuedouble;
        return 1;
    }
    case TS_OPT_FLOAT:
        if (!cJSON_IsNumber(item) || item->valuedouble < 0) break;
        *(double *)o->ptr = item->valuedouble;
        return 1;
    case TS_OPT_FLAG:
        if (!cJSON_IsBool(item)) break;
        *(int *)o->ptr = cJSON_IsTrue(item);
        return 1;
    case TS_OPT_LIST: {
        ts_strlist *l = o->ptr;
        l->n = 0;
        if (cJSON_IsString(item)) return list_add(c, l, item->valuestring);
        if (!cJSON_IsArray(item)) break;
        const cJSON *e;
        cJSON_ArrayForEach(e, item) {
            if (!cJSON_IsString(e)) goto bad;
            if (!list_add(c, l, e->valuestring)) return 0;
        }
        return 1;
    }
    }
bad:;
    static const char *want[] = {"a string", "an integer", "a non-negative number", "true or false",
                                 "a string or a list of strings"};
    say(c, "%s: \"%s\" wants %s", path, item->string, want[o->kind]);
    return 0;
}

/* The file's bytes, NUL-terminated; NULL after writing the error. */
static char *read_all(const opt_ctx *c, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        say(c, "--config %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); say(c, "out of memory"); return NULL; }
            buf = nb;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!buf) buf = calloc(1, 1);
    if (buf) buf[len] = 0;
    return buf;
}

static int load_config(const opt_ctx *c, const char *path) {
    char *buf = read_all(c, path);
    if (!buf) return 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(buf, &end, 1);
    if (!root || !cJSON_IsObject(root)) {
        say(c, "%s: not a JSON object (error near byte %ld)", path, root ? 0L : (long)(end ? end - buf : 0));
        cJSON_Delete(root);
        free(buf);
        return 0;
    }
    free(buf);
    c->s->json = root;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) if (!apply_json(c, path, item)) return 0;
    return 1;
}

/* Whether flag ("--name") is one of argv[1 .. at), as "--name" or "--name=...". */
static int given_before(char *const *argv, int at, const char *flag) {
    size_t n = strlen(flag);
    for (int j = 1; j < at; j++)
        if (!strncmp(argv[j], flag, n) && (argv[j][n] == 0 || argv[j][n] == '=')) return 1;
    return 0;
}

/* Apply one flag, argv[*i] (advancing *i past its values). 1, or 0 after writing the error. A list
 * flag given again adds to its values (`--text a --text b`). */
static int apply_flag(const opt_ctx *c, int argc, char *const *argv, int *i) {
    const char *a = argv[*i];
    int bad = 0;
    if (strncmp(a, "--", 2) != 0) {
        say(c, "unexpected argument '%s'", a);
        return 0;
    }
    char name[64];
    size_t len = strcspn(a + 2, "=");
    snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), a + 2);
    if (!strcmp(name, "config")) { /* read already */
        flag_value(c, argc, argv, i, "--config", &bad);
        return !bad;
    }
    const ts_opt *o = len < 63 ? ts_options_find(c->s, name) : NULL;
    if (!o) {
        say(c, "unknown flag '%s'", a);
        return 0;
    }
    char flag[80];
    snprintf(flag, sizeof flag, "--%s", name);
    if (o->kind == TS_OPT_FLAG) {
        if (a[2 + len] == '=') say(c, "%s takes no value", flag), bad = 1;
        *(int *)o->ptr = 1;
        return !bad;
    }
    const int first = *i; /* where this flag stands */
    const char *v = flag_value(c, argc, argv, i, flag, &bad);
    if (!v) return 0;
    if (v == argv[*i] && !strncmp(v, "--", 2)) { /* `--corpus --out x`: the value is missing */
        say(c, "%s needs a value before %s", flag, v);
        return 0;
    }
    switch (o->kind) {
    case TS_OPT_STR: *(const char **)o->ptr = v; return 1;
    case TS_OPT_INT: return parse_int(c, flag, v, o->min_int, o->ptr);
    case TS_OPT_FLOAT: return parse_float(c, flag, v, o->ptr);
    case TS_OPT_LIST: {
        ts_strlist *l = o->ptr;
        if (!given_before(argv, first, flag)) l->n = 0; /* the first time replaces the config's list */
        if (!list_add(c, l, v)) return 0;
        while (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0)
            if (!list_add(c, l, argv[++*i])) return 0;
        return 1;
    }
    case TS_OPT_FLAG: break;
    }
    return 1;
}

int ts_options_parse(ts_optset *s, const char *prog, const ts_opt *opts, int nopts, int argc, char *const *argv,
                     ts_write_fn err, void *err_ctx) {
    memset(s, 0, sizeof *s);
    s->opts = opts, s->nopts = nopts;
    opt_ctx c = {.s = s, .prog = prog, .err = err, .err_ctx = err_ctx};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 0;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) { /* the config first, whatever its place */
        const char *v = flag_value(&c, argc, argv, &i, "--config", &bad);
        if (v && !load_config(&c, v)) bad = 1;
    }
    for (int i = 1; i < argc && !bad; i++)
        if (!apply_flag(&c, argc, argv, &i)) bad = 1;
    return bad ? 2 : 1;
}

void ts_options_free(ts_optset *s) {
    cJSON_Delete(s->json);
    for (int i = 0; i < s->nopts; i++)
        if (s->opts[i].kind == TS_OPT_LIST) {
            ts_strlist *l = s->opts[i].ptr;
            free((void *)l->v);
            l->v = NULL, l->n = 0;
        }
    memset(s, 0, sizeof *s);
}
