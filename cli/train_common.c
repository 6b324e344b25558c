/*
 * train_common.c — options (JSON config + flags), progress line, metrics log, LR schedule and
 * the BERT program / batch plumbing that the training subcommands share, and --profile's warm-up
 * and report (see train_common.h).
 */
#include "train_common.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ------------------------------------------------------------------ options */

cli_device_opts cli_dev;

int cli_load_flags(int strict) {
    return (strict ? TS_LOAD_STRICT : 0) | (cli_dev.allow_nonfinite ? TS_LOAD_ALLOW_NONFINITE : 0);
}

static const cli_opt *find_opt(const cli_optset *s, const char *name) {
    for (int i = 0; i < s->nopts; i++)
        if (!strcmp(s->opts[i].name, name)) return &s->opts[i];
    return NULL;
}

static int parse_int(const char *cmd, const char *where, const char *name, const char *v, int min, int *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > INT_MAX) {
        fprintf(stderr, "tessera %s: %s%s wants an integer >= %d, not '%s'\n", cmd, where, name, min, v);
        return 0;
    }
    *out = (int)x;
    return 1;
}

static int parse_float(const char *cmd, const char *where, const char *name, const char *v, double *out) {
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < 0) {
        fprintf(stderr, "tessera %s: %s%s wants a non-negative number, not '%s'\n", cmd, where, name, v);
        return 0;
    }
    *out = x;
    return 1;
}

/* Append v to a list; a list given again (config, then flag) starts over: callers set n = 0. */
static int list_add(cli_optset *s, cli_strlist *l, const char *v) {
    const char **nv = realloc((void *)l->v, (size_t)(l->n + 1) * sizeof *nv);
    if (!nv) {
        fprintf(stderr, "tessera %s: out of memory\n", s->cmd);
        return 0;
    }
    l->v = nv;
    l->v[l->n++] = v;
    return 1;
}

/* Apply "key": value from the config file. */
static int apply_json(cli_optset *s, const char *path, const cJSON *item) {
    const cli_opt *o = find_opt(s, item->string);
    char where[1200];
    snprintf(where, sizeof where, "%s: \"", path);
    if (!o || !strcmp(item->string, "config")) {
        fprintf(stderr, "tessera %s: %s: unknown key \"%s\" (the keys are the flags' names)\n", s->cmd, path,
                item->string);
        return 0;
    }
    switch (o->kind) {
    case OPT_STR:
        if (!cJSON_IsString(item)) break;
        *(const char **)o->ptr = item->valuestring;
        return 1;
    case OPT_INT: {
        if (!cJSON_IsNumber(item) || item->valuedouble != floor(item->valuedouble) ||
            item->valuedouble < o->min_int || item->valuedouble > INT_MAX)
            break;
        *(int *)o->ptr = (int)item->valuedouble;
        return 1;
    }
    case OPT_FLOAT:
        if (!cJSON_IsNumber(item) || item->valuedouble < 0) break;
        *(double *)o->ptr = item->valuedouble;
        return 1;
    case OPT_FLAG:
        if (!cJSON_IsBool(item)) break;
        *(int *)o->ptr = cJSON_IsTrue(item);
        return 1;
    case OPT_LIST: {
        cli_strlist *l = o->ptr;
        l->n = 0;
        if (cJSON_IsString(item)) return list_add(s, l, item->valuestring);
        if (!cJSON_IsArray(item)) break;
        const cJSON *e;
        cJSON_ArrayForEach(e, item) {
            if (!cJSON_IsString(e)) goto bad;
            if (!list_add(s, l, e->valuestring)) return 0;
        }
        return 1;
    }
    }
bad:;
    static const char *want[] = {"a string", "an integer", "a non-negative number", "true or false",
                                 "a string or a list of strings"};
    fprintf(stderr, "tessera %s: %s: \"%s\" wants %s\n", s->cmd, path, item->string, want[o->kind]);
    return 0;
}

static int load_config(cli_optset *s, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tessera %s: --config %s: %s\n", s->cmd, path, strerror(errno));
        return 0;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); fprintf(stderr, "tessera %s: out of memory\n", s->cmd); return 0; }
            buf = nb;
        }
        memcpy(buf + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!buf) buf = calloc(1, 1);
    if (!buf) return 0;
    buf[len] = 0;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(buf, &end, 1);
    if (!root || !cJSON_IsObject(root)) {
        fprintf(stderr, "tessera %s: %s: not a JSON object (error near byte %ld)\n", s->cmd, path,
                root ? 0L : (long)(end ? end - buf : 0));
        cJSON_Delete(root);
        free(buf);
        return 0;
    }
    free(buf);
    s->json = root;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) if (!apply_json(s, path, item)) return 0;
    return 1;
}

int cli_opts_parse(cli_optset *s, const char *cmd, const char *usage, const cli_opt *opts, int nopts, int argc,
                  char **argv) {
    memset(s, 0, sizeof *s);
    s->cmd = cmd, s->opts = opts, s->nopts = nopts;
    setvbuf(stdout, NULL, _IOLBF, 0); /* whole lines as they come, also into a pipe or a log file */
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        }
    }
    for (int i = 1; i < argc && !bad; i++) { /* the config first, whatever its place */
        const char *v = cli_value(argc, argv, &i, "--config", cmd, &bad);
        if (v && !load_config(s, v)) bad = 1;
    }
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "tessera %s: unexpected argument '%s'\n", cmd, a);
            bad = 1;
            break;
        }
        char name[64];
        size_t len = strcspn(a + 2, "=");
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), a + 2);
        if (!strcmp(name, "config")) {
            cli_value(argc, argv, &i, "--config", cmd, &bad);
            continue;
        }
        const cli_opt *o = len < 63 ? find_opt(s, name) : NULL;
        if (!o) {
            fprintf(stderr, "tessera %s: unknown flag '%s'\n", cmd, a);
            bad = 1;
            break;
        }
        char flag[80];
        snprintf(flag, sizeof flag, "--%s", name);
        if (o->kind == OPT_FLAG) {
            if (a[2 + len] == '=') {
                fprintf(stderr, "tessera %s: %s takes no value\n", cmd, flag);
                bad = 1;
            }
            *(int *)o->ptr = 1;
            continue;
        }
        const char *v = cli_value(argc, argv, &i, flag, cmd, &bad);
        if (!v) break;
        if (v == argv[i] && !strncmp(v, "--", 2)) { /* `--corpus --out x`: the value is missing */
            fprintf(stderr, "tessera %s: %s needs a value before %s\n", cmd, flag, v);
            bad = 1;
            break;
        }
        switch (o->kind) {
        case OPT_STR: *(const char **)o->ptr = v; break;
        case OPT_INT: bad = !parse_int(cmd, "", flag, v, o->min_int, o->ptr); break;
        case OPT_FLOAT: bad = !parse_float(cmd, "", flag, v, o->ptr); break;
        case OPT_LIST: {
            cli_strlist *l = o->ptr;
            l->n = 0;
            if (!list_add(s, l, v)) bad = 1;
            while (!bad && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                if (!list_add(s, l, argv[++i])) bad = 1;
            break;
        }
        case OPT_FLAG: break;
        }
    }
    const cli_opt *th = find_opt(s, "threads");
    if (!bad && th && *(int *)th->ptr > ts_max_threads()) {
        fprintf(stderr, "tessera %s: --threads %d: at most %d (4 x the %d online CPUs)\n", cmd, *(int *)th->ptr,
                ts_max_threads(), ts_max_threads() / 4);
        bad = 1;
    }
    if (bad) {
        fprintf(stderr, "(tessera %s --help shows the usage)\n", cmd);
        return 2;
    }
    return 1;
}

void cli_opts_free(cli_optset *s) {
    cJSON_Delete(s->json);
    for (int i = 0; i < s->nopts; i++)
        if (s->opts[i].kind == OPT_LIST) {
            cli_strlist *l = s->opts[i].ptr;
            free((void *)l->v);
            l->v = NULL, l->n = 0;
        }
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ progress, metrics, timing */

double cli_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void cli_progress_init(cli_progress *p, int64_t total, double max_seconds) {
    memset(p, 0, sizeof *p);
    p->tty = isatty(fileno(stdout));
    p->t0 = cli_now();
    p->total = total;
    p->max_seconds = max_seconds;
}

static void fmt_time(char *buf, size_t n, double s) {
    if (s < 0) s = 0;
    if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

void cli_progress_step(cli_progress *p, int64_t step, double loss, double seq_per_s) {
    if (!p->tty) return;
    p->rate = p->rate > 0 ? 0.8 * p->rate + 0.2 * seq_per_s : seq_per_s; /* smoothed for display */
    double now = cli_now(), el = now - p->t0;
    if (now - p->drawn < 0.1 && step < p->total) return; /* at most 10 redraws a second */
    p->drawn = now;
    double eta = step > 0 ? el / (double)step * (double)(p->total - step) : 0;
    if (p->max_seconds > 0 && p->max_seconds - el < eta) eta = p->max_seconds - el;
    char e[32];
    fmt_time(e, sizeof e, eta);
    int w = printf("\rstep %lld/%lld  loss %.4f  %.1f seq/s  ETA %s", (long long)step, (long long)p->total, loss,
                   p->rate, e);
    if (w < p->width) printf("%*s", p->width - w, "");
    p->width = w;
    fflush(stdout);
}

void cli_progress_print(cli_progress *p, const char *fmt, ...) {
    if (p->tty && p->width) printf("\r%*s\r", p->width, ""), p->width = 0;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static FILE *metrics_fopen(const char *dir, const char *cmd, const char *mode) {
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, mode);
    if (!f) fprintf(stderr, "tessera %s: %s: %s\n", cmd, path, strerror(errno));
    return f;
}

/* replicas: rank 0 writes the log, the others' lines go nowhere */
FILE *cli_metrics_open(const char *dir, const char *cmd) {
    return cli_rep.rank > 0 ? fopen("/dev/null", "w") : metrics_fopen(dir, cmd, "w");
}
FILE *cli_metrics_append(const char *dir, const char *cmd) {
    return cli_rep.rank > 0 ? fopen("/dev/null", "w") : metrics_fopen(dir, cmd, "a");
}

void cli_metrics_write(FILE *f, const char *fmt, ...) {
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    fputc('{', f);
    vfprintf(f, fmt, ap);
    fputs("}\n", f);
    va_end(ap);
    fflush(f);
}


/* ------------------------------------------------------------------ BERT programs and batches */

int cli_deterministic_setup(const char *cmd, int *threads, double max_minutes) {
    if (max_minutes > 0) {
        fprintf(stderr, "tessera %s: --max-minutes makes the run depend on the clock; it cannot be used with "
                        "--deterministic (use --max-steps)\n", cmd);
        return 2;
    }
    if (*threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        *threads = n > 0 ? (int)n : 1;
    }
    printf("tessera %s: deterministic: %d thread%s, fixed for the run and its resumes\n", cmd, *threads,
           *threads == 1 ? "" : "s");
    return 0;
}

int cli_optimizer_parse(const char *cmd, const char *name) {
    int k = ts_optim_kind_parse(name);
    if (k < 0) fprintf(stderr, "tessera %s: --optimizer %s: the optimizers are adamw, lamb and sgd\n", cmd, name);
    return k;
}

int cli_bert_programs(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq,
                     uint64_t seed, int threads, int train, float wd, const char *const *train_fetches,
                     int ntrain_fetches, ts_program **train_p, const char *const *infer_fetches,
                     int ninfer_fetches, ts_program **infer_p, const cli_train_loop *loop) {
    int kind = loop && loop->optimizer ? cli_optimizer_parse(cmd, loop->optimizer) : TS_OPTIM_ADAMW;
    if (kind < 0) return 1;
    int N = loop && loop->accumulation > 1 ? loop->accumulation : 1;
    int S = loop && loop->device_iterations > 1 ? loop->device_iterations : 1;
    const ts_stage_plan *pp = loop ? loop->pipe : NULL;
    ts_bert_config c = *cfg;
    if (pp) ts_stage_plan_apply(pp, &c);
    ts_bert_train_opts o = {.struct_size = sizeof o, .cfg = &c, .head = head, .batch = batch, .seq = seq,
                            .seed = seed, .threads = pp ? 0 : threads, .infer_threads = threads,
                            .optimizer = (ts_optim_kind)kind, .weight_decay = wd,
                            .max_grad_norm = loop ? loop->max_grad_norm : 0, .momentum = loop ? loop->momentum : 0,
                            .accumulation = N, .steps_per_call = S / N,
                            .memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0),
                            .stage_devices = pp ? pp->stage_name : NULL, .nstage_devices = pp ? pp->nstages : 0,
                            .train_fetches = train_fetches, .ntrain_fetches = ntrain_fetches,
                            .infer_fetches = infer_fetches, .ninfer_fetches = ninfer_fetches,
                            .comm = cli_rep.size > 1 ? cli_rep.comm : NULL,
                            .shard_state = cli_rep.shard_optimizer,
                            .skip_param_init = !train, /* train == 0: the model is loaded next */
                            .profile = train && loop && loop->profile};
    if (pp && threads > 0) o.threads = threads; /* --threads: per device */
    if (ts_bert_train_programs(&o, train ? train_p : NULL, infer_p) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
    if (ts_last_status() == TS_ERR_NOMEM) /* say which of the user's numbers make it that large */
        fprintf(stderr, "tessera %s: the parameters grow with the model's sizes (vocab_size %d, hidden_size %d, "
                        "num_hidden_layers %d, intermediate_size %d, max_position_embeddings %d%s%s), the "
                        "activations with the batch (%d sequences of %d tokens; --batch%s)%s\n",
                cmd, cfg->vocab_size, cfg->hidden_size, cfg->num_hidden_layers, cfg->intermediate_size,
                cfg->max_position_embeddings, cli_dev.sizes_from ? ": from " : "",
                cli_dev.sizes_from ? cli_dev.sizes_from : "", batch, seq,
                S > 1 ? ", and --device-iterations x --accumulation inputs" : "",
                cli_dev.memory_gib > 0 ? "; the limit is --device-memory" : "; --device-memory GIB sets the limit");
    return 1;
}

/* ------------------------------------------------------------------ --profile */

void cli_profile_after_call(ts_program *tp, int64_t step0, int64_t step, int last, int64_t *from) {
    if (*from >= 0) return;
    if (last) { /* one call in all: nothing to leave out */
        *from = step0;
        return;
    }
    ts_program_profile_reset(tp); /* the first call was a warm-up */
    *from = step;
}

int cli_profile_print(const char *cmd, const ts_program *tp, int64_t step0, int64_t from, int64_t step) {
    if (cli_rep.rank > 0) return 0;
    if (from < 0) from = step; /* no call ran */
    long long n = (long long)(step - from), first = (long long)(from - step0);
    char ranks[64] = "";
    if (cli_rep.size > 1) snprintf(ranks, sizeof ranks, "; rank 0 of %d", cli_rep.size);
    if (first == 0)
        printf("profile of the training step (%lld step%s, no warm-up left out%s):\n", n, n == 1 ? "" : "s", ranks);
    else if (first == 1)
        printf("profile of the training step (%lld step%s after the first%s):\n", n, n == 1 ? "" : "s", ranks);
    else /* --device-iterations K: the first call ran K steps */
        printf("profile of the training step (%lld step%s after the first %lld, one call into the program%s):\n", n,
               n == 1 ? "" : "s", first, ranks);
    if (ts_program_profile_report(tp, ts_write_stdio, stdout) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: --profile: %s\n", cmd, ts_last_error());
    return 1;
}

/* ------------------------------------------------------------------ model directories */

int cli_trunc_parse(const char *cmd, const char *value) {
    int t = ts_truncation_parse(value);
    if (t < 0 && cmd) fprintf(stderr, "tessera %s: --truncate %s: expected head, tail or head+tail\n", cmd, value);
    return t;
}

int cli_task_parse(const char *cmd, const char *value) {
    if (!strcmp(value, "classify")) return CLI_TASK_CLASSIFY;
    if (!strcmp(value, "qa")) return CLI_TASK_QA;
    fprintf(stderr, "tessera %s: --task %s: the tasks are classify and qa\n", cmd, value);
    return -1;
}

int cli_task_of_model(const char *cmd, const char *task_flag, const char *dir, const ts_bert_config *cfg,
                     const ts_model_meta *meta) {
    int want = task_flag ? cli_task_parse(cmd, task_flag) : -1;
    if (task_flag && want < 0) return -1;
    int have = cfg->head == TS_BERT_QUESTION_ANSWERING                       ? CLI_TASK_QA
               : cfg->head == TS_BERT_SEQ_CLASSIFICATION && meta->nlabels > 0 ? CLI_TASK_CLASSIFY
                                                                              : -1;
    if (have < 0) {
        fprintf(stderr, "tessera %s: %s is not a fine-tuned model (architecture '%s'; a sequence classifier or a "
                        "question-answering model from tessera finetune)\n",
                cmd, dir, cfg->architecture[0] ? cfg->architecture : "none");
        return -1;
    }
    if (want >= 0 && want != have) {
        fprintf(stderr, "tessera %s: --task %s, but %s is a %s model (%s)\n", cmd, task_flag, dir,
                have == CLI_TASK_QA ? "qa" : "classify", cfg->architecture);
        return -1;
    }
    return have;
}

int cli_make_dir(const char *cmd, const char *dir) {
    if (ts_make_dirs(dir) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
    return 1;
}

int cli_out_lock(const char *cmd, const char *dir) {
    if (cli_rep.rank > 0) return cli_make_dir(cmd, dir) ? 1 : 0; /* replicas: rank 0 holds the lock */
    long other;
    ts_status s = ts_out_dir_lock(dir, &other);
    if (s == TS_OK) return 0;
    if (other)
        fprintf(stderr, "tessera %s: --out %s is being written by another run (pid %ld); wait for it to end, or give "
                        "another --out\n", cmd, dir, other);
    else
        fprintf(stderr, "tessera %s: --out %s: %s\n", cmd, dir, ts_last_error());
    return other ? 2 : 1;
}

int cli_model_dir_save(const char *cmd, const char *dir, const ts_program *p, const ts_bert_config *cfg,
                      const char *architecture, const char *vocab_path, const ts_model_meta *meta) {
    if (cli_rep.rank > 0) return 0; /* replicas: rank 0 writes the model (every rank holds the same) */
    ts_bert_config c = *cfg;
    for (int h = 0; h <= TS_BERT_QUESTION_ANSWERING; h++)
        if (!strcmp(architecture, ts_bert_head_name((ts_bert_head)h))) c.head = (ts_bert_head)h;
    if (ts_model_save_dir(dir, p, &c, vocab_path, meta) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
    return 1;
}

ts_tokenizer *cli_model_dir_open(const char *cmd, const char *dir, ts_bert_config *cfg, ts_model_meta *meta) {
    static char sizes_from[4200]; /* for the out-of-memory message of cli_bert_programs */
    snprintf(sizes_from, sizeof sizes_from, "%s/config.json", dir);
    cli_dev.sizes_from = sizes_from;
    ts_tokenizer *tok = ts_model_load_dir(dir, cfg, meta);
    if (!tok) fprintf(stderr, "tessera %s: --model %s: %s\n", cmd, dir, ts_last_error());
    return tok;
}

/* ------------------------------------------------------------------ full-state checkpoints */

int cli_ckpt_find(const char *cmd, const char *resume, char *path, size_t cap) {
    ts_status st = ts_train_checkpoint_find_on(cli_rep.comm, resume, path, cap);
    if (st == TS_OK) return 0;
    if (st == TS_ERR_COMM) {
        fprintf(stderr, "tessera %s: --resume: %s\n", cmd, ts_last_error());
        return 1;
    }
    if (cli_rep.rank == 0) fprintf(stderr, "tessera %s: --resume %s\n", cmd, ts_last_error());
    return 2;
}

ts_program *cli_model_dir_program(const char *cmd, const char *dir, const ts_bert_config *cfg, int batch, int seq,
                                 int threads, const char *const *fetches, int nfetch) {
    ts_program *p = NULL;
    if (cli_bert_programs(cmd, cfg, cfg->head, batch, seq, 0, threads, 0, 0, NULL, 0, NULL, fetches, nfetch, &p, NULL))
        return NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (ts_program_load(p, path, cli_load_flags(1), NULL) != TS_OK) {
        fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
        ts_program_free(p);
        return NULL;
    }
    return p;
}
