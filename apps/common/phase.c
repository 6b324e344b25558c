/*
 * phase.c — the progress of a long phase inside the applications (tessera_tasks.h: ts_progress_to,
 * ts_phase_*): computing an audio set's features, compiling a server's programs, scoring a test
 * set. Silent unless the caller (the tessera command) says where to write: on a terminal one line
 * redrawn in place, in a log a line every period.
 */
#include "common/app.h"

#include <stdarg.h>
#include <stdio.h>

/* Where phases write, set once at start (ts_progress_to) and read by the thread that runs a phase. */
static struct {
    ts_write_fn out;
    void *ctx;
    int tty;
    double period;
    char prefix[64];
} sink;

/* fmt's text to the sink. */
__attribute__((format(printf, 1, 2))) static void put(const char *fmt, ...) {
    char line[640];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0) sink.out(sink.ctx, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void ts_progress_to(const char *prefix, ts_write_fn out, void *ctx, int tty, double period_s) {
    const char *env = getenv("TESSERA_PROGRESS_SECONDS");
    double e = env && *env ? strtod(env, NULL) : 0;
    sink.out = out, sink.ctx = ctx, sink.tty = tty, sink.period = period_s > 0 ? period_s : e > 0 ? e : 60;
    snprintf(sink.prefix, sizeof sink.prefix, "%s", prefix ? prefix : "tessera");
}

double app_progress_period(void) { return sink.period > 0 ? sink.period : 60; }

void ts_phase_begin(ts_phase *p, const char *what, const char *unit, int64_t total) {
    memset(p, 0, sizeof *p);
    p->what = what ? what : "working", p->unit = unit ? unit : "", p->total = total;
    p->t0 = p->drawn = ts_seconds();
}

/* "PREFIX: WHAT D/T UNIT (P%), E s, about R s left" into line. */
static int phase_line(const ts_phase *p, double now, char *line, size_t cap) {
    double el = now - p->t0, left = p->done > 0 ? el / (double)p->done * (double)(p->total - p->done) : -1;
    int n = snprintf(line, cap, "%s: %s %lld/%lld%s%s (%.0f%%), %.0f s", sink.prefix, p->what, (long long)p->done,
                     (long long)p->total, *p->unit ? " " : "", p->unit,
                     p->total > 0 ? 100.0 * (double)p->done / (double)p->total : 0, el);
    if (left >= 0 && n > 0 && (size_t)n < cap) n += snprintf(line + n, cap - (size_t)n, ", about %.0f s left", left);
    return n < 0 ? 0 : (size_t)n < cap ? n : (int)cap - 1;
}

void ts_phase_step(ts_phase *p, int64_t done) {
    p->done = done;
    if (!sink.out) return;
    double now = ts_seconds();
    if (now - p->drawn < (sink.tty ? 0.1 : sink.period)) return; /* a terminal: 10 redraws a second at most */
    p->drawn = now;
    char line[512];
    int n = phase_line(p, now, line, sizeof line);
    if (sink.tty) put("\r%s%*s", line, n < p->width ? p->width - n : 0, ""), p->width = n;
    else put("%s\n", line);
}

void ts_phase_end(ts_phase *p) {
    if (sink.out && sink.tty && p->width) put("\r%*s\r", p->width, "");
    p->width = 0;
}
