/*
 * options.c — the one flag parser of every `tessera` subcommand (options.h): a table of options
 * read from `--config FILE` (a JSON object, first) and then from the flags, with the usage made
 * from the same table. Errors are one line on stderr, "tessera CMD: message", naming the flag or
 * the config file and key; an unknown name gets the closest known one ("did you mean").
 */
#include "options.h"

#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>

enum { MAX_OPTS = 128 }; /* entries in one table, at most */

/* What one parse writes to, and which lists the command line has started (it replaces the
 * config's list the first time, then adds to it). */
typedef struct opt_ctx {
    cli_optset *s;
    const char *cmd;
    unsigned char started[MAX_OPTS];
} opt_ctx;

__attribute__((format(printf, 2, 3))) static void say(const opt_ctx *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tessera %s: ", c->cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ------------------------------------------------------------------ names */

/* The entry whose name (or, with *old set, former spelling) is `name`. */
static const cli_opt *lookup(const cli_optset *s, const char *name, int *old) {
    *old = 0;
    for (int i = 0; i < s->nopts; i++)
        if (s->opts[i].name && s->opts[i].kind != CLI_TEXT && !strcmp(s->opts[i].name, name)) return &s->opts[i];
    for (int i = 0; i < s->nopts; i++)
        if (s->opts[i].old && !strcmp(s->opts[i].old, name)) return *old = 1, &s->opts[i];
    return NULL;
}

const cli_opt *cli_opts_find(const cli_optset *s, const char *name) {
    int old;
    return lookup(s, name, &old);
}

/* " (did you mean PREFIXNAME?)" for an unknown name, or "". */
static const char *suggest(const cli_optset *s, const char *name, const char *prefix, char *buf, size_t cap) {
    const char *names[MAX_OPTS + 1];
    int n = 0;
    for (int i = 0; i < s->nopts && n < MAX_OPTS; i++)
        if (s->opts[i].kind != CLI_TEXT && s->opts[i].kind != CLI_ARGS) names[n++] = s->opts[i].name;
    names[n++] = "config";
    const char *m = ts_closest_name(name, names, n);
    if (!m) return "";
    snprintf(buf, cap, " (did you mean %s%s?)", prefix, m);
    return buf;
}

/* The notice for a former spelling, each time it is given. */
static void notice_old(const opt_ctx *c, const cli_opt *o, const char *prefix) {
    say(c, "%s%s is now %s%s (the old spelling is accepted until the next release)", prefix, o->old, prefix,
        o->name);
}

/* ------------------------------------------------------------------ values */

static int parse_int(const opt_ctx *c, const char *flag, const char *v, int min, int *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > INT_MAX)
        return say(c, "%s wants an integer >= %d, not '%s'", flag, min, v), 0;
    *out = (int)x;
    return 1;
}

static int parse_float(const opt_ctx *c, const char *flag, const char *v, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < 0)
        return say(c, "%s wants a non-negative number, not '%s'", flag, v), 0;
    *out = x;
    return 1;
}

static int list_add(const opt_ctx *c, cli_strlist *l, const char *v) {
    const char **nv = realloc((void *)l->v, (size_t)(l->n + 1) * sizeof *nv);
    if (!nv) {
        say(c, "out of memory");
        return 0;
    }
    l->v = nv;
    l->v[l->n++] = v;
    return 1;
}

/* ------------------------------------------------------------------ the config file */

static int apply_json(const opt_ctx *c, const char *path, const cJSON *item) {
    int old;
    const cli_opt *o = strcmp(item->string, "config") ? lookup(c->s, item->string, &old) : NULL;
    if (!o) {
        char buf[128];
        say(c, "--config %s: unknown key \"%s\"%s (the keys are the flags' names)", path, item->string,
            suggest(c->s, item->string, "", buf, sizeof buf));
        return 0;
    }
    if (old) notice_old(c, o, "config key ");
    switch (o->kind) {
    case CLI_STR:
        if (!cJSON_IsString(item)) break;
        *(const char **)o->ptr = item->valuestring;
        return 1;
    case CLI_INT:
        if (!cJSON_IsNumber(item) || item->valuedouble != floor(item->valuedouble) || item->valuedouble < o->min ||
            item->valuedouble > INT_MAX)
            break;
        *(int *)o->ptr = (int)item->valuedouble;
        return 1;
    case CLI_FLOAT:
        if (!cJSON_IsNumber(item) || item->valuedouble < 0) break;
        *(double *)o->ptr = item->valuedouble;
        return 1;
    case CLI_FLAG:
        if (!cJSON_IsBool(item)) break;
        *(int *)o->ptr = cJSON_IsTrue(item);
        return 1;
    case CLI_LIST:
    case CLI_ARGS: {
        cli_strlist *l = o->ptr;
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
    case CLI_TEXT: break;
    }
bad:;
    static const char *want[] = {"a string", "an integer", "a non-negative number", "true or false",
                                 "a string or a list of strings", "a string or a list of strings", ""};
    say(c, "--config %s: \"%s\" wants %s", path, item->string, want[o->kind]);
    return 0;
}

static int load_config(const opt_ctx *c, const char *path) {
    size_t len;
    char *buf = cli_read_text(path, &len);
    if (!buf) {
        say(c, "--config %s: %s", path, strerror(errno));
        return 0;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(buf, &end, 1);
    if (!root || !cJSON_IsObject(root)) {
        say(c, "--config %s: not a JSON object (error near byte %ld)", path,
            root ? 0L : (long)(end ? end - buf : 0));
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

/* ------------------------------------------------------------------ the flags */

/* If argv[*i] is `flag VALUE` or `flag=VALUE`, VALUE (advancing *i past it); NULL (and *bad) when
 * the value is missing. */
static const char *flag_value(const opt_ctx *c, int argc, char **argv, int *i, const char *flag, int *bad) {
    const char *eq = strchr(argv[*i], '=');
    if (eq) return eq + 1;
    if (*i + 1 >= argc) {
        say(c, "%s needs a value", flag);
        *bad = 1;
        return NULL;
    }
    const char *v = argv[++*i];
    if (!strncmp(v, "--", 2)) { /* `--corpus --out x`: the value is missing */
        say(c, "%s needs a value before %s", flag, v);
        *bad = 1;
        return NULL;
    }
    return v;
}

/* The positional entry, or NULL. */
static const cli_opt *args_entry(const cli_optset *s) {
    for (int i = 0; i < s->nopts; i++)
        if (s->opts[i].kind == CLI_ARGS) return &s->opts[i];
    return NULL;
}

/* Apply argv[*i] (advancing *i past its values). 1, or 0 after the error. */
/* Add v to list entry o of the command line: the first value replaces the config's list. */
static int cmdline_add(opt_ctx *c, const cli_opt *o, const char *v) {
    cli_strlist *l = o->ptr;
    if (!c->started[o - c->s->opts]) l->n = 0, c->started[o - c->s->opts] = 1;
    return list_add(c, l, v);
}

static int apply_arg(opt_ctx *c, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    int bad = 0;
    if (strncmp(a, "--", 2) != 0) { /* a positional argument ("-" too: standard input) */
        const cli_opt *p = args_entry(c->s);
        if (!p) {
            say(c, "unexpected argument '%s' (the options are flags: --NAME VALUE)", a);
            return 0;
        }
        return cmdline_add(c, p, a);
    }
    char name[64], flag[80];
    size_t len = strcspn(a + 2, "=");
    snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), a + 2);
    if (!strcmp(name, "config")) { /* read already */
        flag_value(c, argc, argv, i, "--config", &bad);
        return !bad;
    }
    int old = 0;
    const cli_opt *o = len < 63 ? lookup(c->s, name, &old) : NULL;
    if (!o || o->kind == CLI_ARGS) {
        char buf[128];
        say(c, "unknown flag '%.*s'%s", (int)(len + 2), a, suggest(c->s, name, "--", buf, sizeof buf));
        return 0;
    }
    if (old) notice_old(c, o, "--");
    snprintf(flag, sizeof flag, "--%s", name);
    if (o->kind == CLI_FLAG) {
        if (a[2 + len] == '=') {
            say(c, "%s takes no value", flag);
            return 0;
        }
        *(int *)o->ptr = 1;
        return 1;
    }
    const char *v = flag_value(c, argc, argv, i, flag, &bad);
    if (!v) return 0;
    switch (o->kind) {
    case CLI_STR: *(const char **)o->ptr = v; return 1;
    case CLI_INT: return parse_int(c, flag, v, o->min, o->ptr);
    case CLI_FLOAT: return parse_float(c, flag, v, o->ptr);
    case CLI_LIST: {
        if (!cmdline_add(c, o, v)) return 0;
        while (*i + 1 < argc && strncmp(argv[*i + 1], "--", 2) != 0)
            if (!cmdline_add(c, o, argv[++*i])) return 0;
        return 1;
    }
    case CLI_FLAG:
    case CLI_ARGS:
    case CLI_TEXT: break;
    }
    return 1;
}

/* A required entry (min 1 on a string, list or positionals) that is still empty: 0 after the error. */
static int check_required(const opt_ctx *c, const cli_opt *o) {
    int empty = o->kind == CLI_STR ? !*(const char **)o->ptr
                : o->kind == CLI_LIST || o->kind == CLI_ARGS ? !((const cli_strlist *)o->ptr)->n
                                                             : 0;
    if (o->min < 1 || !empty) return 1;
    if (o->kind == CLI_ARGS) say(c, "%s is required", o->arg ? o->arg : "an argument");
    else say(c, "--%s %s%s is required", o->name, o->arg ? o->arg : "VALUE", o->kind == CLI_LIST ? "..." : "");
    return 0;
}

int cli_opts_parse(cli_optset *s, const char *cmd, const char *usage, const cli_opt *opts, int nopts, int argc,
                   char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* whole lines as they come, also into a pipe or a log file */
    memset(s, 0, sizeof *s);
    s->opts = opts, s->nopts = nopts;
    cli_terms_use(opts, nopts, NULL, 0); /* the library's field names said as this table's flags */
    opt_ctx c = {.s = s, .cmd = cmd};
    if (nopts > MAX_OPTS) {
        say(&c, "an option table of %d entries: at most %d (cli/options.c)", nopts, MAX_OPTS);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            cli_opts_usage(stdout, cmd, usage, opts, nopts);
            return 0;
        }
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) /* the config first, wherever it stands */
        if (!strncmp(argv[i], "--config", 8) && (argv[i][8] == 0 || argv[i][8] == '=')) {
            const char *v = flag_value(&c, argc, argv, &i, "--config", &bad);
            if (v && !load_config(&c, v)) bad = 1;
        }
    for (int i = 1; i < argc && !bad; i++)
        if (!apply_arg(&c, argc, argv, &i)) bad = 1;
    for (int i = 0; i < nopts && !bad; i++) bad = !check_required(&c, &opts[i]);
    if (!bad && cli_opts_check_shared(cmd, s)) bad = 1;
    if (!bad) cli_opts_device_flags(s);
    if (bad) fprintf(stderr, "(tessera %s --help shows the usage)\n", cmd);
    return bad ? 2 : 1;
}

void cli_opts_free(cli_optset *s) {
    cJSON_Delete(s->json);
    for (int i = 0; i < s->nopts; i++)
        if (s->opts[i].kind == CLI_LIST || s->opts[i].kind == CLI_ARGS) {
            cli_strlist *l = s->opts[i].ptr;
            free((void *)l->v);
            l->v = NULL, l->n = 0;
        }
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ the usage */

/* help's lines, the first after `left` padded to the help column, the others indented to it. */
static void print_entry(FILE *f, const char *left, const char *help) {
    enum { COL = 23 };
    int n = fprintf(f, "  %s", left);
    const char *h = help ? help : "";
    for (int line = 0; *h || line == 0; line++) {
        size_t len = strcspn(h, "\n");
        if (line > 0) n = 0;
        fprintf(f, "%*s%.*s\n", n < COL ? COL - n : 1, "", (int)len, h);
        h += len;
        if (*h == '\n') h++;
    }
}

/* The synopsis made from the table: "usage: tessera CMD", the required flags, "[options]", then the
 * positionals. */
static void synopsis(FILE *f, const char *cmd, const cli_opt *opts, int nopts) {
    fprintf(f, "usage: tessera %s", cmd);
    for (int i = 0; i < nopts; i++) {
        const cli_opt *o = &opts[i];
        if ((o->kind == CLI_STR || o->kind == CLI_LIST) && o->min >= 1)
            fprintf(f, " --%s %s%s", o->name, o->arg ? o->arg : "VALUE", o->kind == CLI_LIST ? "..." : "");
    }
    fprintf(f, " [options]");
    for (int i = 0; i < nopts; i++)
        if (opts[i].kind == CLI_ARGS)
            fprintf(f, opts[i].min >= 1 ? " %s" : " [%s]", opts[i].arg ? opts[i].arg : "ARG...");
    fputc('\n', f);
}

void cli_opts_usage(FILE *f, const char *cmd, const char *usage, const cli_opt *opts, int nopts) {
    if (strncmp(usage, "usage:", 6) != 0) synopsis(f, cmd, opts, nopts);
    fputs(usage, f);
    int tail = nopts; /* the text entries at the end follow the --config line */
    while (tail > 0 && opts[tail - 1].kind == CLI_TEXT) tail--;
    for (int i = 0; i < nopts; i++) {
        if (i == tail)
            print_entry(f, "--config FILE", "a JSON object of these options, keyed by their names (the flags override it)");
        const cli_opt *o = &opts[i];
        char left[96];
        switch (o->kind) {
        case CLI_TEXT: fputs(o->help, f); continue;
        case CLI_ARGS: snprintf(left, sizeof left, "%s", o->arg ? o->arg : "ARG..."); break;
        case CLI_FLAG: snprintf(left, sizeof left, "--%s", o->name); break;
        case CLI_LIST: snprintf(left, sizeof left, "--%s %s...", o->name, o->arg ? o->arg : "VALUE"); break;
        default: snprintf(left, sizeof left, "--%s %s", o->name, o->arg ? o->arg : "VALUE"); break;
        }
        print_entry(f, left, o->help);
    }
    if (tail == nopts)
        print_entry(f, "--config FILE", "a JSON object of these options, keyed by their names (the flags override it)");
}
