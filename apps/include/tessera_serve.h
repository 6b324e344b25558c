/*
 * tessera_serve.h — an inference server over HTTP/1.1 (what `tessera serve` runs): fine-tuned
 * BERT model directories served with the KServe v2 / Triton JSON protocol and /v1 :predict for
 * texts, requests to a model batched dynamically, Prometheus metrics at /metrics. Part of the
 * public API; include "tessera.h", which includes every part. Needs a build with the HTTP server
 * (TS_WITH_SERVE, on by default; else ts_serve_start fails with TS_ERR_UNSUPPORTED).
 */
#ifndef TESSERA_SERVE_H
#define TESSERA_SERVE_H

#include <stddef.h>

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the server runs. Zeroed fields take the defaults given. */
typedef struct ts_serve_opts {
    size_t struct_size;   /* sizeof(ts_serve_opts) */
    const char *host;     /* the address listened on ("127.0.0.1"; a name is looked up) */
    int port;             /* 0: a free port, which ts_serve_port tells */
    int max_batch;        /* rows run together, at most (32); 1: no batching */
    int max_delay_ms;     /* how long a batch waits for more after its first request (5; -1: 0) */
    int threads;          /* CPU threads per run (0: all) */
    const char *device;   /* the device the programs are compiled for ("cpu") */
    int queue_cap;        /* requests waiting per model; past it 503 with Retry-After (256) */
    size_t max_body;      /* the largest request body in bytes; past it 413 (16 MiB) */
    int timeout_s;        /* a connection idle or sending this long is closed (30) */
    int max_connections;  /* open at once (512); past it a connection is answered 503 with Retry-After */
    int read_timeout_s;   /* a request's headers and body must arrive within this long, else 408 (60) */
    int drain_timeout_s;  /* ts_serve_stop waits this long for requests in flight, then closes (20) */
} ts_serve_opts;

typedef struct ts_serve ts_serve;

/* Load model directories dirs[0 .. n) (from tessera finetune: a sequence classifier or question
 * answering), served as names[i] (letters, digits, '.', '_', '-'); compile each for every
 * sequence-length bucket (16, 32, ... up to the model's length) at max_batch rows; then listen.
 * Returns once it listens; requests are answered on threads of its own. NULL on failure:
 * TS_ERR_ARG naming the model that cannot be loaded and why, TS_ERR_IO when the address cannot
 * be listened on, TS_ERR_UNSUPPORTED in a build without the HTTP server; TS_ERR_ARG naming the
 * field for an option out of range (port above 65535, max_delay_ms above 60000, a device list). */
TS_API ts_serve *ts_serve_start(const ts_serve_opts *o, const char *const *names, const char *const *dirs, int n);
/* ts_serve_start with each model given as "NAME=DIR" (models[0 .. n), as `tessera serve --model`
 * takes them; the strings are not kept). TS_ERR_ARG naming the model for one without a NAME, a
 * '=' or a DIR; else ts_serve_start's errors. */
TS_API ts_serve *ts_serve_start_models(const ts_serve_opts *o, const char *const *models, int n);
/* The port listened on. */
TS_API int ts_serve_port(const ts_serve *s);
/* Stop: accept no more connections, answer every request already accepted within the drain
 * timeout (o->drain_timeout_s), then shut down the connections still open, close, free. */
TS_API void ts_serve_stop(ts_serve *s);

#ifdef __cplusplus
}
#endif

#endif
