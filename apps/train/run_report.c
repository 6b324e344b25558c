/*
 * run_report.c — the lines a training run writes besides its results (tessera_tasks.h): the
 * progress line redrawn on a terminal, JSON rows of the metrics log, a pipeline's stages and
 * their measured busy time, what each replica holds, and the profile of the training step with
 * its first call left out as a warm-up. Everything goes to ts_write_fn callbacks.
 */
#include "train/run_report.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* printf into w (nothing when w is NULL). */
__attribute__((format(printf, 3, 4))) void ts_writef(ts_write_fn w, void *ctx, const char *fmt, ...) {
    if (!w) return;
    char small[1024];
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t)n < sizeof small) {
        va_end(ap2);
        w(ctx, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (big) vsnprintf(big, (size_t)n + 1, fmt, ap2), w(ctx, big, (size_t)n);
    va_end(ap2);
    free(big);
}

ts_status ts_run_fail(ts_write_fn err, void *ctx, ts_status code, const char *fmt, va_list ap) {
    char msg[8192];
    vsnprintf(msg, sizeof msg, fmt, ap);
    ts_writef(err, ctx, "%s", msg);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n') msg[--n] = 0;
    return ts_set_error(code, "%s", msg[0] == '\n' ? msg + 1 : msg);
}

/* ------------------------------------------------------------------ progress */

void ts_progress_init(ts_progress *p, int64_t total, double max_seconds, int tty, ts_write_fn out, void *ctx) {
    memset(p, 0, sizeof *p);
    p->out = out, p->ctx = ctx;
    p->tty = tty;
    p->t0 = ts_seconds();
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
    p->rate = p->rate > 0 ? 0.8 * p->rate + 0.2 * seq_per_s : seq_per_s; /* smoothed for display */
    double now = ts_seconds(), el = now - p->t0;
    /* a terminal: at most 10 redraws a second; a log: a line a period (a minute) between the run's
     * own lines, none at the end */
    if (p->tty ? now - p->drawn < 0.1 && step < p->total
               : step >= p->total || now - (p->drawn > 0 ? p->drawn : p->t0) < app_progress_period())
        return;
    p->drawn = now;
    double eta = step > 0 ? el / (double)step * (double)(p->total - step) : 0;
    if (p->max_seconds > 0 && p->max_seconds - el < eta) eta = p->max_seconds - el;
    char e[32], line[256];
    fmt_time(e, sizeof e, eta);
    if (!p->tty) {
        ts_writef(p->out, p->ctx, "step %lld/%lld: loss %.4f, %.1f seq/s, ETA %s\n", (long long)step,
                  (long long)p->total, loss, p->rate, e);
        return;
    }
    int w = snprintf(line, sizeof line, "\rstep %lld/%lld  loss %.4f  %.1f seq/s  ETA %s", (long long)step,
                     (long long)p->total, loss, p->rate, e);
    ts_writef(p->out, p->ctx, "%s%*s", line, w < p->width ? p->width - w : 0, "");
    p->width = w;
}

void ts_progress_print(ts_progress *p, const char *fmt, ...) {
    if (p->tty && p->width) ts_writef(p->out, p->ctx, "\r%*s\r", p->width, ""), p->width = 0;
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && p->out) p->out(p->ctx, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* ------------------------------------------------------------------ metrics rows */

void ts_metrics_write(ts_write_fn w, void *ctx, const char *fmt, ...) {
    if (!w) return;
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + 1, sizeof line - 3, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n > sizeof line - 4) n = (int)sizeof line - 4;
    line[0] = '{', line[n + 1] = '}', line[n + 2] = '\n';
    w(ctx, line, (size_t)n + 3);
}

/* ------------------------------------------------------------------ pipeline stages */

static double mib(size_t b) { return (double)b / (1024.0 * 1024.0); }

void ts_stage_plan_describe(const ts_stage_plan *pp, const ts_program *p, int micro, const char *name, ts_write_fn w,
                            void *ctx, int json) {
    int ns = ts_program_num_stages(p);
    if (!json)
        ts_writef(w, ctx, "%s: pipeline of %d stages on %d devices, %d micro-batches a step (1F1B; idle at best "
                          "(S-1)/(M+S-1) = %.1f%%):\n", name, ns, pp->ndev, micro, 100.0 * (ns - 1) / (micro + ns - 1));
    else
        ts_writef(w, ctx, "{\"pipeline\": {\"micro_batches\": %d, \"stages\": [", micro);
    for (int s = 0; s < ns; s++) {
        ts_stage_info si = {.struct_size = sizeof si};
        ts_program_stage_info(p, s, &si);
        if (!json)
            ts_writef(w, ctx, "  stage %d on %s (%d thread%s): %s; parameters %.1f MiB, activations %.1f MiB (%d "
                              "micro-batch%s in flight)\n", s, pp->stage_name[s], si.threads, si.threads == 1 ? "" : "s",
                      pp->what[s], mib(si.mem.params), mib(si.mem.activations), si.in_flight,
                      si.in_flight == 1 ? "" : "es");
        else
            ts_writef(w, ctx, "%s{\"stage\": %d, \"device\": \"%s\", \"threads\": %d, \"parts\": \"%s\", "
                              "\"params_bytes\": %zu, \"activation_bytes\": %zu, \"in_flight\": %d}", s ? ", " : "", s,
                      pp->stage_name[s], si.threads, pp->what[s], si.mem.params, si.mem.activations, si.in_flight);
    }
    if (json) ts_writef(w, ctx, "]}}\n");
}

void ts_stage_plan_report(const ts_stage_plan *pp, const ts_program *p, int micro, char *buf, size_t cap,
                          ts_write_fn metrics, void *ctx) {
    int ns = ts_program_num_stages(p);
    double wall, bubble, theory = (double)(ns - 1) / (micro + ns - 1);
    ts_program_pipeline_stats(p, &wall, &bubble);
    size_t o = (size_t)snprintf(buf, cap, "pipeline, %d stages over %.1f s, busy:", ns, wall);
    ts_writef(metrics, ctx, "{\"pipeline_wall_s\": %.3f, \"bubble\": %.4f, \"bubble_theory\": %.4f, \"stages\": [",
              wall, bubble, theory);
    for (int s = 0; s < ns; s++) {
        ts_stage_info si = {.struct_size = sizeof si};
        ts_program_stage_info(p, s, &si);
        if (o < cap) o += (size_t)snprintf(buf + o, cap - o, "%s %d (%s) %.2f s", s ? "," : "", s, pp->stage_name[s],
                                           si.busy_s);
        ts_writef(metrics, ctx, "%s{\"stage\": %d, \"device\": \"%s\", \"busy_s\": %.3f}", s ? ", " : "", s,
                  pp->stage_name[s], si.busy_s);
    }
    if (o < cap)
        snprintf(buf + o, cap - o, "; idle (bubble) %.1f%%, 1F1B in theory (S-1)/(M+S-1) = %.1f%%", 100 * bubble,
                 100 * theory);
    ts_writef(metrics, ctx, "]}\n");
}

/* ------------------------------------------------------------------ replicas */

ts_status ts_replicas_check_params(ts_comm *comm, const ts_program *p, const char *when) {
    int size = comm ? ts_comm_size(comm) : 1;
    if (size < 2) return TS_OK;
    int *ranks = calloc((size_t)size, sizeof *ranks), bad = 0;
    ts_status st = ranks ? ts_replicas_params_differ(comm, p, ranks, &bad) : TS_ERR_NOMEM;
    if (st) {
        free(ranks);
        return ts_set_error(TS_ERR_RUNTIME, "comparing the replicas' parameters %s: %s", when, ts_last_error());
    }
    char list[512];
    size_t o = 0;
    for (int i = 0; i < bad && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%d", i ? ", " : "", ranks[i]);
    free(ranks);
    if (!bad) return TS_OK;
    return ts_set_error(TS_ERR_RUNTIME, "%s, the parameters of rank%s %s differ from rank 0's (the ranks must start "
                                        "from the same model: the same seed, model and options)",
                        when, bad > 1 ? "s" : "", list);
}

void ts_replicas_describe(ts_comm *comm, int shard, const ts_program *p, const char *name, ts_write_fn out,
                          void *out_ctx, ts_write_fn metrics, void *metrics_ctx) {
    int size = comm ? ts_comm_size(comm) : 1;
    if (size < 2) return;
    ts_memory m = {.struct_size = sizeof m};
    if (ts_program_memory(p, &m) != TS_OK) return;
    double mb = 1024.0 * 1024.0;
    ts_writef(out, out_ctx, "%s: per rank: parameters %.1f MiB, optimizer state %.1f MiB%s, gradient buckets %.1f MiB\n",
              name, m.params / mb, m.optimizer_state / mb, shard ? " (its share: the state is sharded)" : "",
              m.grad_buckets / mb);
    ts_metrics_write(metrics, metrics_ctx, "\"replicas\": %d, \"shard_optimizer\": %d, "
                     "\"optimizer_state_bytes_per_rank\": %zu, \"grad_bucket_bytes\": %zu", size, shard,
                     m.optimizer_state, m.grad_buckets);
}

/* ------------------------------------------------------------------ profile */

void ts_train_profile_warmup(ts_program *tp, int64_t step0, int64_t step, int last, int64_t *from) {
    if (*from >= 0) return;
    if (last) { /* one call in all: nothing to leave out */
        *from = step0;
        return;
    }
    ts_program_profile_reset(tp); /* the first call was a warm-up */
    *from = step;
}

ts_status ts_train_profile_print(const ts_program *tp, ts_comm *comm, int64_t step0, int64_t from, int64_t step,
                                 ts_write_fn w, void *ctx) {
    int rank = comm ? ts_comm_rank(comm) : 0, size = comm ? ts_comm_size(comm) : 1;
    if (rank > 0) return TS_OK;
    if (from < 0) from = step; /* no call ran */
    long long n = (long long)(step - from), first = (long long)(from - step0);
    char ranks[64] = "";
    if (size > 1) snprintf(ranks, sizeof ranks, "; rank 0 of %d", size);
    if (first == 0)
        ts_writef(w, ctx, "profile of the training step (%lld step%s, no warm-up left out%s):\n", n,
                  n == 1 ? "" : "s", ranks);
    else if (first == 1)
        ts_writef(w, ctx, "profile of the training step (%lld step%s after the first%s):\n", n, n == 1 ? "" : "s",
                  ranks);
    else /* device iterations K: the first call ran K steps */
        ts_writef(w, ctx, "profile of the training step (%lld step%s after the first %lld, one call into the "
                          "program%s):\n", n, n == 1 ? "" : "s", first, ranks);
    return ts_program_profile_report(tp, w, ctx);
}
