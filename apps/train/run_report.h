/*
 * run_report.h — what the library's runs (pretrain_run.c, epochs.c) share of run_report.c
 * beyond tessera_tasks.h.
 */
#ifndef TS_RUN_REPORT_H
#define TS_RUN_REPORT_H

#include <stdarg.h>

#include "common/app.h"

/* A run's error: the formatted line written to err (with ts_writef), then recorded, trailing
 * newlines and one leading newline trimmed, as the thread's error with code; returns code. */
ts_status ts_run_fail(ts_write_fn err, void *ctx, ts_status code, const char *fmt, va_list ap);

#endif
