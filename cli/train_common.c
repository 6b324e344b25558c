/*
 * train_common.c — options (JSON config + flags), progress line, metrics log, LR schedule and
 * the BERT program / batch plumbing that the training subcommands share (see train_common.h).
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

ts_cli_device ts_cli_dev;

int ts_cli_load_flags(int strict) {
    return (strict ? TS_LOAD_STRICT : 0) | (ts_cli_dev.allow_nonfinite ? TS_LOAD_ALLOW_NONFINITE : 0);
}

static const ts_opt *find_opt(const ts_optset *s, const char *name) {
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
static int list_add(ts_optset *s, ts_strlist *l, const char *v) {
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
static int apply_json(ts_optset *s, const char *path, const cJSON *item) {
    const ts_opt *o = find_opt(s, item->string);
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
        ts_strlist *l = o->ptr;
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

static int load_config(ts_optset *s, const char *path) {
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

int ts_opts_parse(ts_optset *s, const char *cmd, const char *usage, const ts_opt *opts, int nopts, int argc,
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
        const char *v = ts_cli_value(argc, argv, &i, "--config", cmd, &bad);
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
            ts_cli_value(argc, argv, &i, "--config", cmd, &bad);
            continue;
        }
        const ts_opt *o = len < 63 ? find_opt(s, name) : NULL;
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
        const char *v = ts_cli_value(argc, argv, &i, flag, cmd, &bad);
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
            ts_strlist *l = o->ptr;
            l->n = 0;
            if (!list_add(s, l, v)) bad = 1;
            while (!bad && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                if (!list_add(s, l, argv[++i])) bad = 1;
            break;
        }
        case OPT_FLAG: break;
        }
    }
    const ts_opt *th = find_opt(s, "threads");
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

void ts_opts_free(ts_optset *s) {
    cJSON_Delete(s->json);
    for (int i = 0; i < s->nopts; i++)
        if (s->opts[i].kind == OPT_LIST) {
            ts_strlist *l = s->opts[i].ptr;
            free((void *)l->v);
            l->v = NULL, l->n = 0;
        }
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ progress, metrics, timing */

double ts_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void ts_progress_init(ts_progress *p, int64_t total, double max_seconds) {
    memset(p, 0, sizeof *p);
    p->tty = isatty(fileno(stdout));
    p->t0 = ts_now();
    p->total = total;
    p->max_seconds = max_seconds;
}

static void fmt_time(char *buf, size_t n, double s) {
    if (s < 0) s = 0;
    if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, (int)s % 3600 / 60);
}

void ts_progress_step(ts_progress *p, int64_t step, double loss, double seq_per_s) {
    if (!p->tty) return;
    p->rate = p->rate > 0 ? 0.8 * p->rate + 0.2 * seq_per_s : seq_per_s; /* smoothed for display */
    double now = ts_now(), el = now - p->t0;
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

void ts_progress_print(ts_progress *p, const char *fmt, ...) {
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

FILE *ts_metrics_open(const char *dir, const char *cmd) { return metrics_fopen(dir, cmd, "w"); }
FILE *ts_metrics_append(const char *dir, const char *cmd) { return metrics_fopen(dir, cmd, "a"); }

void ts_metrics_write(FILE *f, const char *fmt, ...) {
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    fputc('{', f);
    vfprintf(f, fmt, ap);
    fputs("}\n", f);
    va_end(ap);
    fflush(f);
}

float ts_lr_at(float peak, int64_t step, int64_t warmup, int64_t total) {
    if (warmup > 0 && step < warmup) return peak * (float)(step + 1) / (float)warmup;
    if (total <= warmup) return peak;
    double f = (double)(total - step) / (double)(total - warmup);
    return peak * (float)(f < 0 ? 0 : f);
}

/* ------------------------------------------------------------------ BERT programs and batches */

int ts_deterministic_setup(const char *cmd, int *threads, double max_minutes) {
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

static const char *const optim_names[] = {[TS_OPTIM_SGD] = "sgd", [TS_OPTIM_ADAMW] = "adamw", [TS_OPTIM_LAMB] = "lamb"};

int ts_optimizer_parse(const char *cmd, const char *name) {
    for (int k = 0; k < 3; k++)
        if (!strcmp(name, optim_names[k])) return k;
    fprintf(stderr, "tessera %s: --optimizer %s: the optimizers are adamw, lamb and sgd\n", cmd, name);
    return -1;
}

const char *ts_optimizer_name(ts_optim_kind k) { return (unsigned)k < 3 ? optim_names[k] : "?"; }

int ts_bert_programs(const char *cmd, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq,
                     uint64_t seed, int threads, int train, float wd, const char *const *train_fetches,
                     int ntrain_fetches, ts_program **train_p, const char *const *infer_fetches,
                     int ninfer_fetches, ts_program **infer_p, const ts_train_loop *loop) {
    if (train_p) *train_p = NULL;
    if (infer_p) *infer_p = NULL;
    ts_graph *g = ts_graph_new();
    if (!g) {
        fprintf(stderr, "tessera %s: out of memory\n", cmd);
        return 1;
    }
    ts_graph_set_seed(g, seed);
    ts_bert_outputs out;
    const char *what = "building the model";
    size_t limit = (size_t)(ts_cli_dev.memory_gib * 1073741824.0);
    if (ts_bert_build(g, cfg, head, batch, seq, &out) != TS_OK) goto fail;
    if (train) {
        ts_value lr = ts_input(g, "lr", TS_F32, 0, NULL);
        what = "adding the backward pass";
        if ((cfg->compute_dtype == TS_F16 ? ts_backward_scaled(g, out.loss, NULL) : ts_backward(g, out.loss)) != TS_OK)
            goto fail;
        what = "adding the optimizer";
        int kind = loop && loop->optimizer ? ts_optimizer_parse(cmd, loop->optimizer) : TS_OPTIM_ADAMW;
        if (kind < 0) goto fail_quiet;
        ts_optim_opts oo = ts_optim_defaults((ts_optim_kind)kind);
        static const char *const no_decay[] = {"bias", "LayerNorm.weight"};
        oo.eps = 1e-6f; /* AdamW and LAMB: BERT's */
        oo.weight_decay = wd;
        oo.no_decay = no_decay;
        oo.nno_decay = 2;
        if (kind == TS_OPTIM_LAMB) oo.no_trust = no_decay, oo.nno_trust = 2;
        if (kind == TS_OPTIM_SGD) oo.momentum = loop->momentum;
        oo.max_grad_norm = loop ? loop->max_grad_norm : 0;
        oo.accumulation_steps = loop && loop->accumulation > 1 ? loop->accumulation : 1;
        if (ts_optimizer(g, lr, &oo) != TS_OK) goto fail;
        what = "compiling the training program";
        *train_p = ts_compile(g, &(ts_compile_opts){.num_threads = threads, .nfetch = ntrain_fetches,
                                                    .fetches = train_fetches,
                                                    .device_iterations = loop && loop->device_iterations > 1 ? loop->device_iterations : 1,
                                                    .memory_limit = limit});
        if (!*train_p) goto fail;
    }
    if (infer_p) {
        what = "compiling the inference program";
        *infer_p = ts_compile(g, &(ts_compile_opts){.num_threads = threads, .nfetch = ninfer_fetches,
                                                    .fetches = infer_fetches, .inference = 1, .memory_limit = limit});
        if (!*infer_p) goto fail;
    }
    ts_graph_free(g);
    return 0;
fail:
    fprintf(stderr, "tessera %s: %s: %s\n", cmd, what, ts_last_error());
    if (ts_last_status() == TS_ERR_NOMEM) /* say which of the user's numbers make it that large */
        fprintf(stderr, "tessera %s: the parameters grow with the model's sizes (vocab_size %d, hidden_size %d, "
                        "num_hidden_layers %d, intermediate_size %d, max_position_embeddings %d%s%s), the "
                        "activations with the batch (%d sequences of %d tokens; --batch%s)%s\n",
                cmd, cfg->vocab_size, cfg->hidden_size, cfg->num_hidden_layers, cfg->intermediate_size,
                cfg->max_position_embeddings, ts_cli_dev.sizes_from ? ": from " : "",
                ts_cli_dev.sizes_from ? ts_cli_dev.sizes_from : "", batch, seq,
                loop && loop->device_iterations > 1 ? ", and --device-iterations x --accumulation inputs" : "",
                ts_cli_dev.memory_gib > 0 ? "; the limit is --device-memory" : "; --device-memory GIB sets the limit");
fail_quiet:
    if (train_p && *train_p) ts_program_free(*train_p), *train_p = NULL;
    ts_graph_free(g);
    return 1;
}

int ts_batch_buf_init(ts_batch_buf *bb, int batch, int seq, int labels_rank) {
    return ts_batch_buf_init_slices(bb, batch, seq, labels_rank, 1, 0);
}

int ts_batch_buf_init_slices(ts_batch_buf *bb, int batch, int seq, int labels_rank, int slices, int predictions) {
    memset(bb, 0, sizeof *bb);
    /* [S, B, T] and [S, B] with S slices, [B, T] and [B] with one */
    int lead = slices > 1, n = lead ? 3 : 2;
    const int64_t bt[3] = {slices, batch, seq};
    const int64_t *sbt = bt + !lead;
    bb->slices = slices;
    bb->batch = batch;
    bb->seq = seq;
    bb->ids = ts_tensor_new(TS_I32, n, sbt);
    bb->types = ts_tensor_new(TS_I32, n, sbt);
    bb->mask = ts_tensor_new(TS_I32, n, sbt);
    if (labels_rank == 1) bb->labels = ts_tensor_new(TS_I32, n - 1, sbt);
    if (labels_rank == 2) {
        bb->labels = ts_tensor_new(TS_I32, n, sbt);
        bb->nsp = ts_tensor_new(TS_I32, n - 1, sbt);
    }
    if (labels_rank == 2 && predictions > 0) {
        const int64_t bp[3] = {slices, batch, predictions};
        bb->predictions = predictions;
        bb->positions = ts_tensor_new(TS_I32, n, bp + !lead);
        bb->plabels = ts_tensor_new(TS_I32, n, bp + !lead);
    }
    if (!bb->ids || !bb->types || !bb->mask || (labels_rank && !bb->labels) || (labels_rank == 2 && !bb->nsp) ||
        (bb->predictions && (!bb->positions || !bb->plabels))) {
        ts_batch_buf_free(bb);
        return 0;
    }
    ts_batch_buf_slice(bb, 0);
    return 1;
}

void ts_batch_buf_slice(ts_batch_buf *bb, int k) {
    size_t bt = (size_t)k * (size_t)bb->batch * (size_t)bb->seq, b = (size_t)k * (size_t)bb->batch;
    bb->b.input_ids = (int32_t *)ts_tensor_data(bb->ids) + bt;
    bb->b.token_type_ids = (int32_t *)ts_tensor_data(bb->types) + bt;
    bb->b.attention_mask = (int32_t *)ts_tensor_data(bb->mask) + bt;
    if (bb->labels) /* [.., B, T] for pretraining (with nsp), [.., B] for classification */
        bb->b.labels = (int32_t *)ts_tensor_data(bb->labels) + (bb->nsp ? bt : b);
    if (bb->nsp) bb->b.next_sentence_label = (int32_t *)ts_tensor_data(bb->nsp) + b;
}

int ts_batch_buf_compact(ts_batch_buf *bb, int k) {
    int B = bb->batch, T = bb->seq, P = bb->predictions, dropped = 0;
    const int32_t *lab = (const int32_t *)ts_tensor_data(bb->labels) + (size_t)k * B * T;
    int32_t *pos = (int32_t *)ts_tensor_data(bb->positions) + (size_t)k * B * P;
    int32_t *pl = (int32_t *)ts_tensor_data(bb->plabels) + (size_t)k * B * P;
    for (int b = 0; b < B; b++) {
        int n = 0;
        for (int t = 0; t < T; t++) {
            if (lab[b * T + t] == -100) continue;
            if (n == P) { dropped++; continue; }
            pos[b * P + n] = t, pl[b * P + n] = lab[b * T + t], n++;
        }
        for (; n < P; n++) pos[b * P + n] = 0, pl[b * P + n] = -100;
    }
    return dropped;
}

void ts_batch_buf_free(ts_batch_buf *bb) {
    ts_tensor_free(bb->ids);
    ts_tensor_free(bb->types);
    ts_tensor_free(bb->mask);
    ts_tensor_free(bb->labels);
    ts_tensor_free(bb->nsp);
    ts_tensor_free(bb->positions);
    ts_tensor_free(bb->plabels);
    memset(bb, 0, sizeof *bb);
}

ts_status ts_batch_buf_feed(ts_batch_buf *bb, ts_program *p, int with_labels) {
    ts_status st;
    if ((st = ts_program_feed(p, "input_ids", bb->ids)) || (st = ts_program_feed(p, "token_type_ids", bb->types)) ||
        (st = ts_program_feed(p, "attention_mask", bb->mask)))
        return st;
    if (with_labels && bb->predictions &&
        ((st = ts_program_feed(p, "masked_lm_positions", bb->positions)) || (st = ts_program_feed(p, "labels", bb->plabels))))
        return st;
    if (with_labels && bb->labels && !bb->predictions && (st = ts_program_feed(p, "labels", bb->labels))) return st;
    if (with_labels && bb->nsp && (st = ts_program_feed(p, "next_sentence_label", bb->nsp))) return st;
    return TS_OK;
}

/* ------------------------------------------------------------------ model directories */

void ts_model_meta_free(ts_model_meta *m) {
    for (int i = 0; i < m->nlabels; i++) free(m->labels[i]);
    free(m->labels);
    free(m->text_b_column);
    m->labels = NULL;
    m->nlabels = 0;
    m->text_b_column = NULL;
}

const char *const ts_trunc_names[3] = {"head", "tail", "head+tail"};

int ts_trunc_parse(const char *cmd, const char *value) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(value, ts_trunc_names[i])) return i;
    if (cmd) fprintf(stderr, "tessera %s: --truncate %s: expected head, tail or head+tail\n", cmd, value);
    return -1;
}

void ts_trunc_apply(ts_tokenizer *tok, int mode, int max_len) {
    int room = max_len - 2; /* [CLS] and [SEP] */
    ts_tokenizer_set_truncation(tok, mode == TS_TRUNC_TAIL ? 0 : mode == TS_TRUNC_HEAD_TAIL ? room / 4 : -1);
}

int ts_task_parse(const char *cmd, const char *value) {
    if (!strcmp(value, "classify")) return TS_TASK_CLASSIFY;
    if (!strcmp(value, "qa")) return TS_TASK_QA;
    fprintf(stderr, "tessera %s: --task %s: the tasks are classify and qa\n", cmd, value);
    return -1;
}

int ts_task_of_model(const char *cmd, const char *task_flag, const char *dir, const ts_bert_config *cfg,
                     const ts_model_meta *meta) {
    int want = task_flag ? ts_task_parse(cmd, task_flag) : -1;
    if (task_flag && want < 0) return -1;
    int have = cfg->head == TS_BERT_QUESTION_ANSWERING                       ? TS_TASK_QA
               : cfg->head == TS_BERT_SEQ_CLASSIFICATION && meta->nlabels > 0 ? TS_TASK_CLASSIFY
                                                                              : -1;
    if (have < 0) {
        fprintf(stderr, "tessera %s: %s is not a fine-tuned model (architecture '%s'; a sequence classifier or a "
                        "question-answering model from tessera finetune)\n",
                cmd, dir, cfg->architecture[0] ? cfg->architecture : "none");
        return -1;
    }
    if (want >= 0 && want != have) {
        fprintf(stderr, "tessera %s: --task %s, but %s is a %s model (%s)\n", cmd, task_flag, dir,
                have == TS_TASK_QA ? "qa" : "classify", cfg->architecture);
        return -1;
    }
    return have;
}

int ts_make_dir(const char *cmd, const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        fprintf(stderr, "tessera %s: %s: path too long\n", cmd, dir);
        return 1;
    }
    for (char *p = path + 1;; p++) {
        int end = *p == 0;
        if (*p == '/' || end) {
            *p = 0;
            if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                fprintf(stderr, "tessera %s: creating %s: %s\n", cmd, path, strerror(errno));
                return 1;
            }
            if (end) break;
            *p = '/';
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "tessera %s: %s is not a directory\n", cmd, dir);
        return 1;
    }
    return 0;
}

int ts_out_lock(const char *cmd, const char *dir) {
    if (ts_make_dir(cmd, dir)) return 1;
    char path[4200];
    snprintf(path, sizeof path, "%s/.tessera.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        fprintf(stderr, "tessera %s: --out %s: cannot create %s: %s\n", cmd, dir, path, strerror(errno));
        return 1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int busy = errno == EWOULDBLOCK;
        char pid[32] = "";
        ssize_t n = busy ? pread(fd, pid, sizeof pid - 1, 0) : -1;
        pid[n > 0 ? n : 0] = 0;
        pid[strcspn(pid, "\n")] = 0;
        if (busy)
            fprintf(stderr, "tessera %s: --out %s is being written by another run (pid %s); wait for it to end, or "
                            "give another --out\n", cmd, dir, pid[0] ? pid : "unknown");
        else
            fprintf(stderr, "tessera %s: --out %s: cannot lock %s: %s\n", cmd, dir, path, strerror(errno));
        close(fd);
        return busy ? 2 : 1;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) { /* only informative */ }
    return 0; /* fd stays open: the lock lasts until the process exits */
}

/* Write len bytes to path atomically: a temp file in the same directory, fsync, rename. */
static int write_atomic(const char *cmd, const char *path, const char *data, size_t len) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) goto fail;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) goto fail_fd;
        off += (size_t)w;
    }
    if (fsync(fd) != 0) goto fail_fd;
    if (close(fd) != 0) goto fail_tmp;
    if (rename(tmp, path) != 0) goto fail_tmp;
    return 0;
fail_fd:;
    int e = errno;
    close(fd);
    errno = e;
fail_tmp:
    e = errno;
    unlink(tmp);
    errno = e;
fail:
    fprintf(stderr, "tessera %s: writing %s: %s\n", cmd, path, strerror(errno));
    return 1;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n;
    *len = 0;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (*len + n + 1 > cap) {
            cap = (*len + n + 1) * 2;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); errno = ENOMEM; return NULL; }
            buf = nb;
        }
        memcpy(buf + *len, chunk, n);
        *len += n;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); errno = EIO; return NULL; }
    if (!buf && !(buf = malloc(1))) return NULL;
    buf[*len] = 0;
    return buf;
}

/* A float as the shortest decimal that reads back as it (0.1f -> 0.1, not 0.10000000149). */
static double short_float(float x) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.7g", (double)x);
    return strtod(buf, NULL);
}

static const char *act_name(ts_bert_act a) {
    return a == TS_BERT_RELU ? "relu" : a == TS_BERT_GELU_TANH ? "gelu_new" : "gelu";
}

int ts_model_dir_save(const char *cmd, const char *dir, const ts_program *p, const ts_bert_config *cfg,
                      const char *architecture, const char *vocab_path, const ts_model_meta *meta) {
    char path[4200];
    if (ts_make_dir(cmd, dir)) return 1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (ts_program_save(p, path, TS_F32) != TS_OK) {
        fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
        return 1;
    }
    size_t len;
    char *vocab = read_all(vocab_path, &len);
    if (!vocab) {
        fprintf(stderr, "tessera %s: reading %s: %s\n", cmd, vocab_path, strerror(errno));
        return 1;
    }
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    int rc = write_atomic(cmd, path, vocab, len);
    free(vocab);
    if (rc) return 1;

    cJSON *j = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(j, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString(architecture));
    cJSON_AddStringToObject(j, "model_type", "bert");
    cJSON_AddNumberToObject(j, "vocab_size", cfg->vocab_size);
    cJSON_AddNumberToObject(j, "hidden_size", cfg->hidden_size);
    cJSON_AddNumberToObject(j, "num_hidden_layers", cfg->num_hidden_layers);
    cJSON_AddNumberToObject(j, "num_attention_heads", cfg->num_attention_heads);
    cJSON_AddNumberToObject(j, "intermediate_size", cfg->intermediate_size);
    cJSON_AddNumberToObject(j, "max_position_embeddings", cfg->max_position_embeddings);
    cJSON_AddNumberToObject(j, "type_vocab_size", cfg->type_vocab_size);
    cJSON_AddStringToObject(j, "hidden_act", act_name(cfg->hidden_act));
    cJSON_AddNumberToObject(j, "hidden_dropout_prob", short_float(cfg->hidden_dropout_prob));
    cJSON_AddNumberToObject(j, "attention_probs_dropout_prob", short_float(cfg->attention_probs_dropout_prob));
    if (cfg->classifier_dropout < 0) cJSON_AddNullToObject(j, "classifier_dropout");
    else cJSON_AddNumberToObject(j, "classifier_dropout", short_float(cfg->classifier_dropout));
    cJSON_AddNumberToObject(j, "layer_norm_eps", short_float(cfg->layer_norm_eps));
    cJSON_AddNumberToObject(j, "initializer_range", short_float(cfg->initializer_range));
    cJSON_AddStringToObject(j, "position_embedding_type", "absolute");
    if (meta->nlabels > 0) {
        cJSON *id2 = cJSON_AddObjectToObject(j, "id2label"), *l2 = cJSON_AddObjectToObject(j, "label2id");
        for (int i = 0; i < meta->nlabels; i++) {
            char k[16];
            snprintf(k, sizeof k, "%d", i);
            cJSON_AddStringToObject(id2, k, meta->labels[i]);
            cJSON_AddNumberToObject(l2, meta->labels[i], i);
        }
    }
    cJSON_AddBoolToObject(j, "do_lower_case", meta->lowercase);
    cJSON_AddNumberToObject(j, "tessera_max_len", meta->max_len);
    if (meta->text_b_column) cJSON_AddStringToObject(j, "tessera_text_b_column", meta->text_b_column);
    if (meta->doc_stride > 0) cJSON_AddNumberToObject(j, "tessera_doc_stride", meta->doc_stride);
    if (meta->max_query_len > 0) cJSON_AddNumberToObject(j, "tessera_max_query_len", meta->max_query_len);
    if (meta->truncation != TS_TRUNC_HEAD)
        cJSON_AddStringToObject(j, "tessera_truncation", ts_trunc_names[meta->truncation]);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) {
        fprintf(stderr, "tessera %s: out of memory\n", cmd);
        return 1;
    }
    size_t tl = strlen(text);
    char *withnl = realloc(text, tl + 2);
    if (withnl) text = withnl, text[tl++] = '\n', text[tl] = 0;
    snprintf(path, sizeof path, "%s/config.json", dir);
    rc = write_atomic(cmd, path, text, tl);
    free(text);
    if (rc == 0) { /* make the renames durable */
        int dfd = open(dir, O_RDONLY);
        if (dfd >= 0) fsync(dfd), close(dfd);
    }
    return rc;
}

ts_tokenizer *ts_model_dir_open(const char *cmd, const char *dir, ts_bert_config *cfg, ts_model_meta *meta) {
    char path[4200];
    memset(meta, 0, sizeof *meta);
    meta->lowercase = 1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    static char sizes_from[4200]; /* for the out-of-memory message of ts_bert_programs */
    snprintf(sizes_from, sizeof sizes_from, "%s", path);
    ts_cli_dev.sizes_from = sizes_from;
    ts_bert_config_default(cfg);
    if (ts_bert_config_load(path, cfg) != TS_OK) {
        fprintf(stderr, "tessera %s: --model %s: %s\n", cmd, dir, ts_last_error());
        return NULL;
    }
    size_t len;
    char *text = read_all(path, &len);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!j) {
        fprintf(stderr, "tessera %s: %s: cannot read it back\n", cmd, path);
        return NULL;
    }
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(j, "tessera_max_len");
    meta->max_len = cJSON_IsNumber(ml) && ml->valueint > 1 ? ml->valueint : 128;
    if (meta->max_len > cfg->max_position_embeddings) meta->max_len = cfg->max_position_embeddings;
    const cJSON *lc = cJSON_GetObjectItemCaseSensitive(j, "do_lower_case");
    if (cJSON_IsBool(lc)) meta->lowercase = cJSON_IsTrue(lc);
    const cJSON *tb = cJSON_GetObjectItemCaseSensitive(j, "tessera_text_b_column");
    if (cJSON_IsString(tb) && !(meta->text_b_column = strdup(tb->valuestring))) {
        fprintf(stderr, "tessera %s: out of memory\n", cmd);
        cJSON_Delete(j);
        return NULL;
    }
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(j, "tessera_doc_stride");
    const cJSON *mq = cJSON_GetObjectItemCaseSensitive(j, "tessera_max_query_len");
    meta->doc_stride = cJSON_IsNumber(ds) && ds->valuedouble >= 1 && ds->valuedouble < 1e6 ? ds->valueint : 0;
    meta->max_query_len = cJSON_IsNumber(mq) && mq->valuedouble >= 1 && mq->valuedouble < 1e6 ? mq->valueint : 0;
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "tessera_truncation");
    if (tr && (!cJSON_IsString(tr) || (meta->truncation = ts_trunc_parse(NULL, tr->valuestring)) < 0)) {
        fprintf(stderr, "tessera %s: %s: \"tessera_truncation\" must be \"head\", \"tail\" or \"head+tail\"\n", cmd,
                path);
        ts_model_meta_free(meta);
        cJSON_Delete(j);
        return NULL;
    }
    const cJSON *id2 = cJSON_GetObjectItemCaseSensitive(j, "id2label");
    int n = cJSON_IsObject(id2) ? cJSON_GetArraySize(id2) : 0;
    if (n > 0) {
        meta->labels = calloc((size_t)n, sizeof *meta->labels);
        meta->nlabels = meta->labels ? n : 0;
        for (int i = 0; i < meta->nlabels; i++) {
            char k[16];
            snprintf(k, sizeof k, "%d", i);
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(id2, k);
            meta->labels[i] = strdup(cJSON_IsString(v) ? v->valuestring : k);
            if (!meta->labels[i]) meta->labels[i] = NULL;
        }
    }
    cJSON_Delete(j);
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    ts_tokenizer *tok = ts_tokenizer_load(path, meta->lowercase);
    if (!tok) {
        fprintf(stderr, "tessera %s: --model %s: %s\n", cmd, dir, ts_last_error());
        ts_model_meta_free(meta);
        return NULL;
    }
    if (ts_tokenizer_vocab_size(tok) > cfg->vocab_size) {
        fprintf(stderr, "tessera %s: %s has %d tokens, more than the config's vocab_size %d\n", cmd, path,
                ts_tokenizer_vocab_size(tok), cfg->vocab_size);
        ts_tokenizer_free(tok);
        ts_model_meta_free(meta);
        return NULL;
    }
    ts_trunc_apply(tok, meta->truncation, meta->max_len);
    return tok;
}

/* ------------------------------------------------------------------ full-state checkpoints */

int ts_ckpt_save(const char *cmd, const char *out, int64_t step, const ts_program *p, const char *trainer_json,
                 int keep) {
    char parent[4200], path[4300];
    snprintf(parent, sizeof parent, "%s/" TS_CKPT_DIR, out);
    if (ts_make_dir(cmd, parent)) return 1;
    snprintf(path, sizeof path, "%s/" TS_CKPT_PREFIX "%06lld", parent, (long long)step);
    if (ts_program_save_state(p, path, trainer_json) != TS_OK ||
        ts_checkpoint_rotate(parent, TS_CKPT_PREFIX, keep) != TS_OK) {
        fprintf(stderr, "\ntessera %s: %s\n", cmd, ts_last_error());
        return 1;
    }
    return 0;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int ts_ckpt_find(const char *cmd, const char *resume, char *path, size_t cap) {
    char probe[4300];
    snprintf(probe, sizeof probe, "%s/trainer.json", resume);
    if (access(probe, F_OK) == 0) {
        if (ts_checkpoint_check(resume) != TS_OK) {
            fprintf(stderr, "tessera %s: --resume %s: %s\n", cmd, resume, ts_last_error());
            return 2;
        }
        snprintf(path, cap, "%s", resume);
        return 0;
    }
    struct stat st;
    int found = stat(resume, &st) == 0;
    if (!found || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "tessera %s: --resume %s: %s\n", cmd, resume, found ? "not a directory" : strerror(errno));
        return 2;
    }
    snprintf(probe, sizeof probe, "%s/" TS_CKPT_DIR, resume);
    const char *parent = is_dir(probe) ? probe : resume;
    if (ts_checkpoint_latest(parent, TS_CKPT_PREFIX, path, cap) != TS_OK) {
        fprintf(stderr, "tessera %s: --resume %s: no valid checkpoint (" TS_CKPT_PREFIX "NNNNNN) in %s\n", cmd, resume,
                parent);
        return 2;
    }
    return 0;
}


ts_program *ts_model_dir_program(const char *cmd, const char *dir, const ts_bert_config *cfg, int batch, int seq,
                                 int threads, const char *const *fetches, int nfetch) {
    ts_program *p = NULL;
    if (ts_bert_programs(cmd, cfg, cfg->head, batch, seq, 0, threads, 0, 0, NULL, 0, NULL, fetches, nfetch, &p, NULL))
        return NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (ts_program_load(p, path, ts_cli_load_flags(1), NULL) != TS_OK) {
        fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
        ts_program_free(p);
        return NULL;
    }
    return p;
}

/* ------------------------------------------------------------------ classifier ensembles */

/* softmax(x)_j = exp(x_j - max x) / sum_i exp(x_i - max x) */
void ts_softmax_add(const float *logits, int c, double *probs) {
    float top = logits[0];
    for (int j = 1; j < c; j++) top = logits[j] > top ? logits[j] : top;
    double z = 0;
    for (int j = 0; j < c; j++) z += exp((double)(logits[j] - top));
    for (int j = 0; j < c; j++) probs[j] += exp((double)(logits[j] - top)) / z;
}

int ts_same_classifier(const ts_model_meta *a, const ts_model_meta *b) {
    if (a->nlabels != b->nlabels || !a->text_b_column != !b->text_b_column) return 0;
    if (a->text_b_column && strcmp(a->text_b_column, b->text_b_column)) return 0;
    for (int i = 0; i < a->nlabels; i++)
        if (!a->labels[i] || !b->labels[i] || strcmp(a->labels[i], b->labels[i])) return 0;
    return 1;
}
