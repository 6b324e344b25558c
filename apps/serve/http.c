/*
 * http.c — `tessera serve`'s HTTP/1.1 side on libmicrohttpd (a thread per connection, which
 * blocks while its request waits in a model's queue): the routes of the KServe v2 / Triton JSON
 * protocol (GET /v2/health/live, /v2/health/ready, /v2, /v2/models/NAME[/ready], POST
 * /v2/models/NAME/infer), POST /v1/models/NAME:predict for texts (an OCR model: an image's
 * bytes), GET /metrics; a body over
 * --max-body is refused with 413, a full queue with 503 and Retry-After, a bad request with 4xx
 * and {"error": ...}: the message the failing call recorded as this thread's error (ts_set_error; a
 * request is handled on one thread), read right after it. Built without libmicrohttpd, starting
 * says so.
 */
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TS_HAVE_MHD
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct req_ctx {
    char *body;
    size_t len, cap;
    int too_big;
    double t0;
} req_ctx;

/* The daemon, the server it answers for, and the connections it has open (conns.c). */
typedef struct http_srv {
    struct MHD_Daemon *d;
    serve_server *s;
    serve_conns conns;
} http_srv;

/* Queue an answer: body (taken, freed by MHD) as content type ctype, status code. */
static enum MHD_Result answer(serve_server *s, struct MHD_Connection *c, int code, char *body, const char *ctype,
                              serve_metrics *mt, double t0) {
    if (!body) body = strdup("{\"error\":\"out of memory\"}"), code = 500;
    struct MHD_Response *r = body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!r) return free(body), MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    if (code == 503) MHD_add_response_header(r, "Retry-After", "1");
    if (serve_draining(s)) MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)code, r);
    MHD_destroy_response(r);
    serve_metrics_request(mt, code, ts_seconds() - t0);
    return ok;
}

static enum MHD_Result error(serve_server *s, struct MHD_Connection *c, int code, const char *msg, serve_metrics *mt,
                             double t0) {
    return answer(s, c, code, serve_reply_error(msg), "application/json", mt, t0);
}

/* The questions of t as a ts_squad of m's windows into j. TS_OK, TS_ERR_ARG with the reason the
 * questions cannot be read, or TS_ERR_NOMEM. */
static ts_status squad_job(const serve_model *m, const serve_texts *t, serve_job *j) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (int i = 0; f && i < t->n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "question", t->text[i]);
        cJSON_AddStringToObject(o, "context", t->text_b[i]);
        char *line = cJSON_PrintUnformatted(o);
        fprintf(f, "%s\n", line ? line : "");
        free(line);
        cJSON_Delete(o);
    }
    if (!f || fclose(f)) return free(buf), ts_set_error(TS_ERR_NOMEM, "out of memory");
    int S = m->sig.max_seq;
    ts_squad_opts so = {.struct_size = sizeof so, .max_seq_len = S,
                        .doc_stride = m->meta.doc_stride ? m->meta.doc_stride : ts_squad_default_stride(S),
                        .max_query_len = m->meta.max_query_len ? m->meta.max_query_len : ts_squad_default_query(S)};
    j->squad = ts_squad_parse_jsonl("instances", buf, len, m->tok, &so);
    free(buf);
    if (!j->squad) return ts_set_error(TS_ERR_ARG, "%s", ts_last_error()); /* the questions cannot be read: a 400 */
    return TS_OK;
}

/* An OCR model's job: the body is an image (PNG or JPEG) posted to :predict. TS_OK or TS_ERR_ARG
 * with the reason. */
static ts_status ocr_job(const serve_model *m, int predict, const req_ctx *r, serve_job *j) {
    if (!predict)
        return ts_set_error(TS_ERR_ARG, "model %s reads images: POST one (PNG or JPEG bytes) to /v1/models/%s:predict",
                            m->name, m->name);
    if (!(j->image = ts_image_decode(r->body, r->len, "the body")))
        return ts_set_error(TS_ERR_ARG, "%s", ts_last_error());
    j->in.rows = 1;
    return TS_OK;
}

/* The job of a POST to m (v2 infer: predict 0; v1 :predict: 1) from r's body into j (a :predict
 * body's texts into t). 0, or the HTTP status with the reason as the thread's error: 400 for a
 * body that cannot be read, whatever failed; making the job of what was read, 500 when memory
 * ran out, else 400. */
static int read_job(const serve_model *m, int predict, const req_ctx *r, serve_job *j, serve_texts *t) {
    ts_status st = m->ocr ? ocr_job(m, predict, r, j)
                   : predict && m->onnx
                       ? ts_set_error(TS_ERR_ARG, "model %s takes tensors: POST /v2/models/%s/infer", m->name, m->name)
                   : predict ? serve_decode_texts(&m->sig, r->body, r->len, t)
                   : m->onnx ? serve_decode_named(&m->osig, r->body, r->len, j->tin, &j->in.rows, j->in.id)
                             : serve_decode_infer(&m->sig, r->body, r->len, &j->in);
    if (st) return 400;
    if (!predict) return 0;
    st = m->sig.qa ? squad_job(m, t, j) : serve_texts_encode(m, t, &j->in);
    return !st ? 0 : st == TS_ERR_NOMEM ? 500 : 400;
}

/* POST to a model: v2 infer (predict 0) or v1 :predict (1). */
static enum MHD_Result run_model(serve_server *s, struct MHD_Connection *c, serve_model *m, int predict,
                                 const req_ctx *r) {
    serve_job j = {0};
    serve_texts t = {0};
    int code = read_job(m, predict, r, &j, &t);
    if (!code && serve_submit(m, &j) != TS_OK) code = 503;
    const char *msg = code ? ts_last_error() : j.err; /* read on this thread, right after the failure */
    if (!code) code = j.code; /* the job's failure, from the batcher's thread */
    enum MHD_Result ok;
    if (code)
        ok = error(s, c, code, msg, &m->metrics, r->t0);
    else
        ok = answer(s, c, 200, m->ocr ? serve_reply_ocr(&j) : predict ? serve_reply_predict(m, &j, &t)
                                              : m->onnx ? serve_reply_infer_onnx(m, &j) : serve_reply_infer(m, &j),
                    "application/json", &m->metrics, r->t0);
    serve_texts_free(&t);
    serve_job_free(&j);
    return ok;
}

/* The metrics of the server and every model. */
static enum MHD_Result metrics(http_srv *h, struct MHD_Connection *c, const req_ctx *r) {
    serve_server *s = h->s;
    int n = serve_nmodels(s) + 1;
    serve_metrics *m[n];
    const char *names[n];
    int depth[n];
    m[0] = serve_server_metrics(s), names[0] = "", depth[0] = 0;
    for (int i = 1; i < n; i++) {
        serve_model *md = serve_model_at(s, i - 1);
        m[i] = &md->metrics, names[i] = md->name;
        pthread_mutex_lock(&md->mu);
        depth[i] = md->depth;
        pthread_mutex_unlock(&md->mu);
    }
    serve_metrics_request(m[0], 200, ts_seconds() - r->t0); /* counted before it is printed */
    char *text = serve_metrics_text(m, names, depth, n), *more = serve_conns_metrics_text(&h->conns);
    char *all = text && more ? malloc(strlen(text) + strlen(more) + 1) : NULL;
    if (all) strcat(strcpy(all, text), more);
    free(text), free(more);
    text = all;
    struct MHD_Response *resp = text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE)
                                     : NULL;
    if (!resp) return free(text), MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
    enum MHD_Result ok = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return ok;
}

/* The model that url names (/v1/models/NAME..., /v2/models/NAME...; NULL: none or not a model's
 * path); *rest: what follows the name, with a KServe v2 version segment "/versions/V" taken out
 * (every model is version 1: *version_ok 0 for another). */
static serve_model *model_of(serve_server *s, const char *url, const char **rest, int *version_ok) {
    int v1 = !strncmp(url, "/v1/models/", 11), v2 = !strncmp(url, "/v2/models/", 11);
    *version_ok = 1;
    if (!v1 && !v2) return NULL;
    const char *name = url + 11, *end = name + strcspn(name, v1 ? ":/" : "/");
    *rest = end;
    if (v2 && !strncmp(end, "/versions/", 10)) {
        const char *ver = end + 10, *vend = ver + strcspn(ver, "/");
        *version_ok = vend - ver == 1 && ver[0] == '1';
        *rest = vend;
    }
    return serve_find_model(s, name, (size_t)(end - name));
}

/* A request on a model's path: its inference and its errors are counted under the model, its
 * metadata and readiness GETs (which are not inference, and would blur its latency histogram)
 * under the server's own. */
static enum MHD_Result route_model(serve_server *s, struct MHD_Connection *c, const char *url, int get,
                                   const req_ctx *r) {
    int v1 = !strncmp(url, "/v1/models/", 11), version_ok;
    const char *name = url + 11, *end = NULL;
    serve_model *m = model_of(s, url, &end, &version_ok);
    serve_metrics *sm = serve_server_metrics(s);
    char msg[256];
    if (!m) { /* named, with the closest model's name when it looks like a misspelling of one */
        int len = (int)strcspn(name, v1 ? ":/" : "/"), n = serve_nmodels(s);
        char word[SERVE_NAME_MAX + 1];
        const char *names[n];
        snprintf(word, sizeof word, "%.*s", len, name);
        for (int i = 0; i < n; i++) names[i] = serve_model_at(s, i)->name;
        const char *near = ts_closest_name(word, names, n);
        snprintf(msg, sizeof msg, "no model named '%.*s'%s%s%s", len > 64 ? 64 : len, name,
                 near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        return error(s, c, 404, msg, sm, r->t0);
    }
    if (!version_ok) {
        snprintf(msg, sizeof msg, "model %s has one version, 1", m->name);
        return error(s, c, 404, msg, &m->metrics, r->t0);
    }
    int is_infer = !v1 && !strcmp(end, "/infer"), is_predict = v1 && !strcmp(end, ":predict");
    if ((is_infer || is_predict) && !get) return run_model(s, c, m, is_predict, r);
    if (!v1 && get && !*end)
        return answer(s, c, 200, m->ocr ? strdup("{\"platform\":\"tessera_ocr\",\"inputs\":[{\"name\":\"image\"}]}")
                                 : m->onnx ? serve_reply_metadata_onnx(m) : serve_reply_metadata(m),
                      "application/json", sm, r->t0);
    if (!v1 && get && !strcmp(end, "/ready"))
        return answer(s, c, 200, strdup("{\"ready\":true}"), "application/json", sm, r->t0);
    if (is_infer || is_predict) return error(s, c, 405, "use POST", &m->metrics, r->t0);
    return error(s, c, 404, "no such endpoint", &m->metrics, r->t0);
}

static enum MHD_Result route(http_srv *h, struct MHD_Connection *c, const char *url, const char *method,
                             const req_ctx *r) {
    serve_server *s = h->s;
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST"), version_ok;
    const char *rest;
    serve_model *m = model_of(s, url, &rest, &version_ok);
    serve_metrics *sm = m ? &m->metrics : serve_server_metrics(s); /* a model's path counts under it */
    if (r->too_big) {
        char msg[96];
        snprintf(msg, sizeof msg, "the body is larger than the server's limit of %zu bytes", serve_max_body(s));
        return error(s, c, 413, msg, sm, r->t0);
    }
    if (!get && !post) return error(s, c, 405, "only GET and POST", sm, r->t0);
    if (!strncmp(url, "/v2/models/", 11) || !strncmp(url, "/v1/models/", 11)) return route_model(s, c, url, get, r);
    if (!get) return error(s, c, 405, "use GET", sm, r->t0);
    if (!strcmp(url, "/metrics")) return metrics(h, c, r);
    if (!strcmp(url, "/v2/health/live"))
        return answer(s, c, 200, strdup("{\"live\":true}"), "application/json", sm, r->t0);
    if (!strcmp(url, "/v2/health/ready"))
        return serve_draining(s) ? error(s, c, 503, "shutting down", sm, r->t0)
                                 : answer(s, c, 200, strdup("{\"ready\":true}"), "application/json", sm, r->t0);
    if (!strcmp(url, "/v2")) {
        char body[160];
        snprintf(body, sizeof body, "{\"name\":\"tessera\",\"version\":\"%s\",\"extensions\":[]}", ts_version());
        return answer(s, c, 200, strdup(body), "application/json", sm, r->t0);
    }
    return error(s, c, 404, "no such endpoint", sm, r->t0);
}

/* Take upload bytes into r: grown to at most max_body, past it only counted. */
static void take_body(req_ctx *r, const char *data, size_t n, size_t max_body) {
    if (r->too_big || r->len + n > max_body) {
        r->too_big = 1;
        return;
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = (r->len + n + 1) * 2;
        char *b = realloc(r->body, cap < max_body + 1 ? cap : max_body + 1);
        if (!b) return (void)(r->too_big = 1);
        r->body = b, r->cap = cap < max_body + 1 ? cap : max_body + 1;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = 0;
}

/* The tracked connection of c (conns.c), or NULL when it could not be tracked. */
static serve_conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    http_srv *h = cls;
    serve_server *s = h->s;
    req_ctx *r = *con_cls;
    if (!r) { /* the request line and headers are in */
        if (!(r = calloc(1, sizeof *r))) return MHD_NO;
        r->t0 = ts_seconds();
        *con_cls = r;
        serve_inflight(s, 1);
        serve_conn *cn = conn_of(c);
        if (cn && cn->over) { /* past --max-connections: answered at once, and closed */
            serve_conn_state(&h->conns, cn, 1);
            serve_conn_refused(&h->conns);
            return error(s, c, 503, "the server has its most connections open; try again", serve_server_metrics(s),
                         r->t0);
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > serve_max_body(s)) {
            r->too_big = 1; /* answered before the body is read; the connection is then closed */
            return route(h, c, url, method, r);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        take_body(r, upload, *upload_size, serve_max_body(s));
        *upload_size = 0;
        return MHD_YES;
    }
    serve_conn_state(&h->conns, conn_of(c), 1); /* the body is in: no read deadline while answering */
    return route(h, c, url, method, r);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why) {
    (void)why;
    http_srv *h = cls;
    req_ctx *r = *con_cls;
    serve_conn_state(&h->conns, conn_of(c), 0); /* the next request's wait starts */
    if (!r) return;
    free(r->body);
    free(r);
    *con_cls = NULL;
    serve_inflight(h->s, -1);
}

/* A connection opened or closed: tracked in h->conns for the deadline, the limit and the drain. */
static void notify_conn(void *cls, struct MHD_Connection *c, void **socket_ctx,
                        enum MHD_ConnectionNotificationCode what) {
    http_srv *h = cls;
    if (what == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_ctx = ci ? serve_conns_open(&h->conns, ci->connect_fd) : NULL;
    } else {
        serve_conns_close(&h->conns, *socket_ctx);
        *socket_ctx = NULL;
    }
}

/* host:port into addr (numeric, or a name looked up). TS_OK or TS_ERR_IO with the reason. */
static ts_status resolve(const char *host, int port, struct sockaddr_storage *addr) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc) return ts_set_error(TS_ERR_IO, "host %s: %s", host, gai_strerror(rc));
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return TS_OK;
}

void *serve_http_start(serve_server *s, const serve_opts *o, int *port) {
    struct sockaddr_storage addr = {0};
    if (resolve(o->host, o->port, &addr)) return NULL;
    http_srv *h = calloc(1, sizeof *h);
    if (!h) return ts_set_error(TS_ERR_NOMEM, "out of memory"), NULL;
    h->s = s;
    if (serve_conns_init(&h->conns, o->max_connections, o->read_timeout_s)) return free(h), NULL;
    /* libmicrohttpd's own limit lies past ours, so that a connection past ours is answered 503
     * (handler, conns.c) rather than left in the accept queue; poll, not select, so that more than
     * FD_SETSIZE descriptors can be open */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC | MHD_USE_POLL;
    unsigned limit = (unsigned)o->max_connections + (unsigned)(o->max_connections > 256 ? o->max_connections : 256);
    if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, handler, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s, MHD_OPTION_CONNECTION_LIMIT, limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_NOTIFY_CONNECTION, notify_conn, h,
                            MHD_OPTION_END);
    if (!h->d) {
        serve_conns_destroy(&h->conns);
        free(h);
        ts_set_error(TS_ERR_IO, "cannot listen on %s:%d (the address is taken, or not this machine's)", o->host,
                     o->port);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    *port = o->port;
    if (info && getsockname(info->listen_fd, (struct sockaddr *)&bound, &bl) == 0)
        *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    return h;
}

ts_status serve_http_built(void) { return TS_OK; }

void serve_http_quiesce(void *http) {
    http_srv *h = http;
    MHD_socket fd = MHD_quiesce_daemon(h->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
}

int serve_http_cut(void *http) { return serve_conns_cut_all(&((http_srv *)http)->conns); }

void serve_http_stop(void *http) {
    http_srv *h = http;
    MHD_stop_daemon(h->d);
    serve_conns_destroy(&h->conns);
    free(h);
}

#else /* built without libmicrohttpd */

ts_status serve_http_built(void) {
    return ts_set_error(TS_ERR_UNSUPPORTED,
                        "this tessera was built without libmicrohttpd: no HTTP server (configure "
                        "with -DTS_WITH_SERVE=ON; needs libmicrohttpd-dev, which scripts/install-deps.sh installs)");
}

void *serve_http_start(serve_server *s, const serve_opts *o, int *port) {
    (void)s, (void)o, (void)port;
    serve_http_built();
    return NULL;
}
void serve_http_quiesce(void *http) { (void)http; }
int serve_http_cut(void *http) { return (void)http, 0; }
void serve_http_stop(void *http) { (void)http; }

#endif
