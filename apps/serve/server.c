/*
 * server.c — one `tessera serve` process: its models (each loaded and compiled before the first
 * connection is taken, so a model that fails to load stops the start with the reason), their
 * batchers, the HTTP server, the requests in flight, and the graceful stop: stop accepting,
 * answer every request already accepted, then close.
 */
#include "serve/serve.h"

#include "common/app.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ts_serve {
    serve_model *models;
    int n;
    serve_metrics metrics; /* requests not to a model (health, metrics, unknown paths) */
    void *http;
    int port;
    size_t max_body;       /* this server's limit on a request body (servers in one process differ) */
    int drain_timeout_s;   /* how long ts_serve_stop waits for the requests in flight */
    atomic_int inflight, draining;
};

serve_model *serve_find_model(serve_server *s, const char *name, size_t len) {
    for (int i = 0; i < s->n; i++)
        if (strlen(s->models[i].name) == len && !strncmp(s->models[i].name, name, len)) return &s->models[i];
    return NULL;
}

int serve_nmodels(const serve_server *s) { return s->n; }
size_t serve_max_body(const serve_server *s) { return s->max_body; }
serve_model *serve_model_at(serve_server *s, int i) { return &s->models[i]; }
serve_metrics *serve_server_metrics(serve_server *s) { return &s->metrics; }
int serve_draining(const serve_server *s) { return atomic_load(&s->draining); }
void serve_inflight(serve_server *s, int delta) { atomic_fetch_add(&s->inflight, delta); }
int ts_serve_port(const ts_serve *s) { return s ? s->port : 0; }

static void free_all(serve_server *s) {
    for (int i = 0; i < s->n; i++) {
        serve_batcher_stop(&s->models[i]);
        serve_model_free(&s->models[i]);
    }
    serve_metrics_destroy(&s->metrics);
    free(s->models);
    free(s);
}

/* o with its zero fields given their defaults. */
static serve_opts with_defaults(const ts_serve_opts *o) {
    serve_opts d = *o;
    if (!d.host) d.host = "127.0.0.1";
    if (!d.max_batch) d.max_batch = 32;
    if (!d.max_delay_ms) d.max_delay_ms = 5;
    if (d.max_delay_ms < 0) d.max_delay_ms = 0;
    if (!d.device) d.device = "cpu";
    if (!d.queue_cap) d.queue_cap = 256;
    if (!d.max_body) d.max_body = 16u << 20;
    if (!d.timeout_s) d.timeout_s = 30;
    if (!d.max_connections) d.max_connections = 512;
    if (!d.read_timeout_s) d.read_timeout_s = 60;
    if (!d.drain_timeout_s) d.drain_timeout_s = 20;
    return d;
}

ts_serve *ts_serve_start(const ts_serve_opts *opts, const char *const *names, const char *const *dirs, int n) {
    ts_serve_opts oc;
    if (!opts) return ts_set_error(TS_ERR_ARG, "ts_serve_start: opts is NULL"), NULL;
    if (TS_STRUCT_READ(&oc, opts, ts_serve_opts, "ts_serve_start")) return NULL;
    opts = &oc;
    if (!names || !dirs || n < 1 || opts->max_batch < 0)
        return ts_set_error(TS_ERR_ARG, "ts_serve_start: NULL, no model or a bad option"), NULL;
    if (opts->port < 0 || opts->port > 65535)
        return ts_set_error(TS_ERR_ARG, "ts_serve_start: port %d is not from 0 to 65535", opts->port), NULL;
    if (opts->max_delay_ms > 60000)
        return ts_set_error(TS_ERR_ARG, "ts_serve_start: max_delay_ms %d is more than a minute (60000)",
                            opts->max_delay_ms), NULL;
    if (opts->timeout_s < 0 || opts->max_connections < 0 || opts->read_timeout_s < 0 || opts->drain_timeout_s < 0)
        return ts_set_error(TS_ERR_ARG, "ts_serve_start: timeout_s, max_connections, read_timeout_s and "
                            "drain_timeout_s must not be negative"), NULL;
    if (opts->device && strchr(opts->device, ','))
        return ts_set_error(TS_ERR_ARG, "ts_serve_start: device \"%s\": one device for now", opts->device), NULL;
    for (int i = 0; i < n; i++) {
        size_t len = names[i] ? strlen(names[i]) : 0;
        if (!len || len >= SERVE_NAME_MAX || !dirs[i] ||
            strspn(names[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != len)
            return ts_set_error(TS_ERR_ARG, "ts_serve_start: model name '%s': letters, digits, '.', '_', '-' (at most "
                                "%d) and a directory", names[i] ? names[i] : "(null)", SERVE_NAME_MAX - 1), NULL;
        for (int k = 0; k < i; k++)
            if (!strcmp(names[k], names[i]))
                return ts_set_error(TS_ERR_ARG, "ts_serve_start: model name '%s' given twice", names[i]), NULL;
    }
    serve_opts o = with_defaults(opts);
    if (serve_http_built() != TS_OK) return NULL;
    serve_server *s = calloc(1, sizeof *s);
    if (!s || !(s->models = calloc((size_t)n, sizeof *s->models))) {
        free(s);
        return ts_set_error(TS_ERR_NOMEM, "out of memory"), NULL;
    }
    serve_metrics_init(&s->metrics);
    s->max_body = o.max_body;
    s->drain_timeout_s = o.drain_timeout_s;
    ts_status code = TS_OK;
    for (int i = 0; i < n && !code; i++) {
        s->n = i + 1;
        if (serve_model_load(&s->models[i], names[i], dirs[i], &o))
            code = TS_ERR_ARG; /* a model that cannot be loaded: TS_ERR_ARG, whatever failed */
        else
            code = serve_batcher_start(&s->models[i]);
    }
    if (!code && (s->http = serve_http_start(s, &o, &s->port))) return s;
    if (!code) code = TS_ERR_IO;
    char why[1024]; /* the message, kept while everything is freed */
    snprintf(why, sizeof why, "%s", ts_last_error());
    free_all(s);
    return ts_set_error(code, "%s", why), NULL;
}

ts_serve *ts_serve_start_models(const ts_serve_opts *o, const char *const *models, int n) {
    char **names = calloc(n > 0 ? (size_t)n : 1, sizeof *names);
    const char **dirs = calloc(n > 0 ? (size_t)n : 1, sizeof *dirs);
    ts_serve *s = NULL;
    int k = 0;
    if (!names || !dirs) ts_set_error(TS_ERR_NOMEM, "out of memory");
    for (; names && dirs && k < n; k++) {
        const char *m = models && models[k] ? models[k] : "", *eq = strchr(m, '=');
        if (!eq || eq == m || !eq[1]) {
            ts_set_error(TS_ERR_ARG, "ts_serve_start: model \"%s\": wants NAME=DIR (NAME of letters, digits, . _ -)",
                         m);
            break;
        }
        if (!(names[k] = strndup(m, (size_t)(eq - m)))) {
            ts_set_error(TS_ERR_NOMEM, "out of memory");
            break;
        }
        dirs[k] = eq + 1;
    }
    if (names && dirs && k == n) s = ts_serve_start(o, (const char *const *)names, dirs, n);
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
    free(dirs);
    return s;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void ts_serve_stop(ts_serve *s) {
    if (!s) return;
    atomic_store(&s->draining, 1);
    serve_http_quiesce(s->http);
    /* the requests accepted: answered once none has been in flight for 200 ms (a connection
     * accepted just before has had that long to send its request); at most the drain timeout,
     * after which the connections still open (a client still sending, or idle) are shut down,
     * counted in /metrics' tessera_serve_connections_cut_total{reason="drain"} */
    int quiet = 0;
    for (int waited = 0; quiet < 200 && waited < s->drain_timeout_s * 1000; waited += 10) {
        quiet = atomic_load(&s->inflight) ? 0 : quiet + 10;
        sleep_ms(10);
    }
    serve_http_cut(s->http);
    serve_http_stop(s->http);
    free_all(s);
}
