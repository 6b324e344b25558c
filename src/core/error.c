/* error.c — the thread's last error message, and status names. */
#include "core/core.h"

#include <stdio.h>

static _Thread_local char last_error[1024];
static _Thread_local ts_status last_status;
static _Thread_local unsigned long nrecorded; /* errors recorded on this thread (ts_err_count) */

/* Formatted apart first: a caller may pass the last message itself as an argument, to prefix it. */
static ts_status record(ts_status code, const char *fmt, va_list ap) {
    char msg[sizeof last_error];
    last_status = code;
    nrecorded++;
    vsnprintf(msg, sizeof msg, fmt, ap);
    memcpy(last_error, msg, sizeof msg);
    return code;
}

ts_status ts_err(ts_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(code, fmt, ap);
    va_end(ap);
    return code;
}

ts_status ts_set_error(ts_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(code, fmt, ap);
    va_end(ap);
    return code;
}

void ts_err_clear(void) { last_error[0] = 0, last_status = TS_OK; }

unsigned long ts_err_count(void) { return nrecorded; }

const char *ts_last_error(void) { return last_error; }
ts_status ts_last_status(void) { return last_status; }

const char *ts_status_name(ts_status s) {
    switch (s) {
    case TS_OK: return "TS_OK";
    case TS_ERR_ARG: return "TS_ERR_ARG";
    case TS_ERR_SHAPE: return "TS_ERR_SHAPE";
    case TS_ERR_DTYPE: return "TS_ERR_DTYPE";
    case TS_ERR_NOT_FOUND: return "TS_ERR_NOT_FOUND";
    case TS_ERR_IO: return "TS_ERR_IO";
    case TS_ERR_NOMEM: return "TS_ERR_NOMEM";
    case TS_ERR_UNSUPPORTED: return "TS_ERR_UNSUPPORTED";
    case TS_ERR_RUNTIME: return "TS_ERR_RUNTIME";
    case TS_ERR_COMM: return "TS_ERR_COMM";
    }
    return "TS_ERR_?";
}
