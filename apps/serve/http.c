/*
 * http.c — `tessera serve`'s HTTP/1.1 server, its own (http1.c reads the requests): a thread
 * accepts connections and gives each a thread of its own, which reads a request (its head, then
 * its body by Content-Length or chunked), answers it, and reads the next while the client keeps
 * the connection; the answer of a request waits there while its job waits in a model's queue.
 * Every answer is JSON, the malformed requests' included, and counted in /metrics. The routes: the
 * KServe v2 / Triton JSON protocol (GET /v2/health/live, /v2/health/ready, /v2,
 * /v2/models/NAME[/versions/1][/ready], POST /v2/models/NAME[/versions/1]/infer), POST
 * /v1/models/NAME:predict for texts (an OCR model: an image's bytes), GET /metrics; a body over
 * --max-body is refused with 413, a full queue with 503 and Retry-After, a bad request with 4xx
 * and {"error": ...}: the message the failing call recorded as this thread's error (ts_set_error; a
 * request is handled on one thread), read right after it. conns.c keeps the deadlines, the
 * connection limit and the drain.
 */
#include "serve/serve.h"

#ifdef TS_HAVE_SERVE
#include "serve/http1.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { MAX_HEAD = 16384 };

/* A request read: its body (NUL-ended), and when its head was in. */
typedef struct req_ctx {
    char *body;
    size_t len;
    int too_big;
    double t0;
} req_ctx;

/* An answer made by the routes: status, body (malloc'd, taken), content type. */
typedef struct http_out {
    int code;
    char *body;
    const char *ctype;
} http_out;

/* The server: its listening socket, the thread that accepts, the connections (conns.c) and the
 * threads serving them. */
typedef struct http_srv {
    serve_server *s;
    serve_conns conns;
    int listen_fd, wake[2]; /* wake: a pipe whose write end stops the accepting thread */
    double timeout_s;       /* --timeout: a connection idle this long is closed (0: never) */
    int limit;              /* connections open at most, past which one is refused at once */
    pthread_t acceptor;
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int threads, accepting; /* connection threads running; the acceptor still accepting */
} http_srv;

/* The answer: body (taken; NULL: out of memory) as content type ctype, status code; counted. */
static int answer(http_out *c, int code, char *body, const char *ctype, serve_metrics *mt, double t0) {
    if (!body) body = strdup("{\"error\":\"out of memory\"}"), code = 500;
    c->code = code, c->body = body, c->ctype = ctype;
    serve_metrics_request(mt, code, ts_seconds() - t0);
    return 0;
}

static int error(http_out *c, int code, const char *msg, serve_metrics *mt, double t0) {
    return answer(c, code, serve_reply_error(msg), "application/json", mt, t0);
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
static int run_model(serve_server *s, http_out *c, serve_model *m, int predict,
                                 const req_ctx *r) {
    serve_job j = {0};
    serve_texts t = {0};
    int code = read_job(m, predict, r, &j, &t);
    if (!code && serve_submit(m, &j) != TS_OK) code = 503;
    const char *msg = code ? ts_last_error() : j.err; /* read on this thread, right after the failure */
    if (!code) code = j.code; /* the job's failure, from the batcher's thread */
    int ok;
    if (code)
        ok = error(c, code, msg, &m->metrics, r->t0);
    else
        ok = answer(c, 200, m->ocr ? serve_reply_ocr(&j) : predict ? serve_reply_predict(m, &j, &t)
                                              : m->onnx ? serve_reply_infer_onnx(m, &j) : serve_reply_infer(m, &j),
                    "application/json", &m->metrics, r->t0);
    serve_texts_free(&t);
    serve_job_free(&j);
    return ok;
}

/* The metrics of the server and every model. */
static int metrics(http_srv *h, http_out *c, const req_ctx *r) {
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
    if (!all) return c->code = 500, c->body = strdup("{\"error\":\"out of memory\"}"), 0;
    c->code = 200, c->body = all, c->ctype = "text/plain; version=0.0.4";
    return 0;
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
static int route_model(serve_server *s, http_out *c, const char *url, int get,
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
        return error(c, 404, msg, sm, r->t0);
    }
    if (!version_ok) {
        snprintf(msg, sizeof msg, "model %s has one version, 1", m->name);
        return error(c, 404, msg, &m->metrics, r->t0);
    }
    int is_infer = !v1 && !strcmp(end, "/infer"), is_predict = v1 && !strcmp(end, ":predict");
    if ((is_infer || is_predict) && !get) return run_model(s, c, m, is_predict, r);
    if (!v1 && get && !*end)
        return answer(c, 200, m->ocr ? strdup("{\"platform\":\"tessera_ocr\",\"inputs\":[{\"name\":\"image\"}]}")
                                 : m->onnx ? serve_reply_metadata_onnx(m) : serve_reply_metadata(m),
                      "application/json", sm, r->t0);
    if (!v1 && get && !strcmp(end, "/ready"))
        return answer(c, 200, strdup("{\"ready\":true}"), "application/json", sm, r->t0);
    if (is_infer || is_predict) return error(c, 405, "use POST", &m->metrics, r->t0);
    return error(c, 404, "no such endpoint", &m->metrics, r->t0);
}

static int route(http_srv *h, http_out *c, const char *url, const char *method,
                             const req_ctx *r) {
    serve_server *s = h->s;
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST"), version_ok;
    const char *rest;
    serve_model *m = model_of(s, url, &rest, &version_ok);
    serve_metrics *sm = m ? &m->metrics : serve_server_metrics(s); /* a model's path counts under it */
    if (r->too_big) {
        char msg[96];
        snprintf(msg, sizeof msg, "the body is larger than the server's limit of %zu bytes", serve_max_body(s));
        return error(c, 413, msg, sm, r->t0);
    }
    if (!get && !post) return error(c, 405, "only GET and POST", sm, r->t0);
    if (!strncmp(url, "/v2/models/", 11) || !strncmp(url, "/v1/models/", 11)) return route_model(s, c, url, get, r);
    if (!get) return error(c, 405, "use GET", sm, r->t0);
    if (!strcmp(url, "/metrics")) return metrics(h, c, r);
    if (!strcmp(url, "/v2/health/live"))
        return answer(c, 200, strdup("{\"live\":true}"), "application/json", sm, r->t0);
    if (!strcmp(url, "/v2/health/ready"))
        return serve_draining(s) ? error(c, 503, "shutting down", sm, r->t0)
                                 : answer(c, 200, strdup("{\"ready\":true}"), "application/json", sm, r->t0);
    if (!strcmp(url, "/v2")) {
        char body[160];
        snprintf(body, sizeof body, "{\"name\":\"tessera\",\"version\":\"%s\",\"extensions\":[]}", ts_version());
        return answer(c, 200, strdup(body), "application/json", sm, r->t0);
    }
    return error(c, 404, "no such endpoint", sm, r->t0);
}

/* ------------------------------------------------------------------ a connection */

static const char *reason(int code) {
    switch (code) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

/* One connection's state: its socket, what was read of it and not yet taken. */
typedef struct conn {
    http_srv *h;
    int fd;
    serve_conn *sc;
    char *buf;
    size_t len, cap;
} conn;

/* Write all of the iovecs; 0, or -1 when the peer is gone. */
static int send_all(int fd, struct iovec *v, int nv) {
    while (nv > 0) {
        struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)nv};
        ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        while (nv > 0 && (size_t)k >= v->iov_len) k -= (ssize_t)v->iov_len, v++, nv--;
        if (nv > 0) v->iov_base = (char *)v->iov_base + k, v->iov_len -= (size_t)k;
    }
    return 0;
}

/* Send answer o (its body freed); close: say the connection ends. 0, or -1 when the peer is gone. */
static int send_answer(conn *c, http_out *o, int close) {
    char head[256];
    size_t bl = o->body ? strlen(o->body) : 0;
    int hl = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
                      o->code, reason(o->code), o->ctype ? o->ctype : "application/json", bl,
                      o->code == 503 ? "Retry-After: 1\r\n" : "", close ? "Connection: close\r\n" : "");
    struct iovec v[2] = {{head, (size_t)hl}, {o->body, bl}};
    int rc = send_all(c->fd, v, bl ? 2 : 1);
    free(o->body);
    o->body = NULL;
    return rc;
}

/* Read more of the connection into its buffer (grown to at most cap_max): the bytes read; 0 when
 * the peer closed, or the connection was cut or idle past --timeout (then nothing is answered, as
 * a closed connection reads); -1 when the buffer is full. */
static ssize_t read_more(conn *c, size_t cap_max) {
    if (c->len == c->cap) {
        if (c->cap >= cap_max) return -1;
        size_t cap = c->cap * 2 > cap_max ? cap_max : c->cap * 2;
        char *b = realloc(c->buf, cap + 1);
        if (!b) return -1;
        c->buf = b, c->cap = cap;
    }
    int ms = c->h->timeout_s > 0 ? (int)(c->h->timeout_s * 1000) : -1;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    for (;;) {
        int r = poll(&p, 1, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return 0; /* idle past --timeout */
        ssize_t k = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return 0;
        c->len += (size_t)k;
        return k;
    }
}

/* Refuse a malformed request: a JSON answer of code, counted under the server, and the connection
 * closed after it. */
static void refuse(conn *c, int code, const char *msg, double t0) {
    http_out o = {0};
    error(&o, code, msg, serve_server_metrics(c->h->s), t0);
    send_answer(c, &o, 1);
}

/* The body of a request with head hd, whose first bytes are c->buf[at ..), into r: 0 with *end the
 * end of the request in c->buf; 1 when the connection ended first (nothing to answer); -1 when
 * it was refused (answered). */
static int read_body(conn *c, const http1_head *hd, size_t at, req_ctx *r, size_t *end) {
    size_t max = serve_max_body(c->h->s);
    if (!hd->chunked) {
        size_t need = hd->content_length > 0 ? (size_t)hd->content_length : 0;
        while (c->len - at < need) {
            ssize_t k = read_more(c, at + need);
            if (k <= 0) return 1;
        }
        if (!(r->body = malloc(need + 1))) return refuse(c, 500, "out of memory", r->t0), -1;
        memcpy(r->body, c->buf + at, need);
        r->body[need] = 0, r->len = need;
        *end = at + need;
        return 0;
    }
    if (!(r->body = malloc(max + 1))) return refuse(c, 500, "out of memory", r->t0), -1;
    http1_chunks ch = {0};
    char msg[160];
    for (size_t pos = at;;) {
        size_t used = 0;
        int rc = http1_chunks_feed(&ch, c->buf + pos, c->len - pos, &used, r->body, max, &r->len, msg, sizeof msg);
        pos += used;
        if (rc == 1) {
            r->body[r->len] = 0;
            *end = pos;
            return 0;
        }
        if (rc == -2) /* answered 413 by the route, and the connection closed */
            return r->too_big = 1, r->body[r->len] = 0, *end = pos, 0;
        if (rc < 0) {
            char why[200];
            snprintf(why, sizeof why, "the chunked body: %s", msg);
            return refuse(c, 400, why, r->t0), -1;
        }
        /* all taken: keep the buffer from growing with a long body already copied out */
        memmove(c->buf + at, c->buf + pos, c->len - pos);
        c->len = at + (c->len - pos), pos = at;
        if (read_more(c, at + 65536) <= 0) return 1;
    }
}

/* Serve one request at the start of c->buf: 0 to read the next one, 1 to close. */
static int one_request(conn *c) {
    http_srv *h = c->h;
    serve_server *s = h->s;
    http1_head hd;
    int status = 0, hl;
    char msg[200];
    while ((hl = http1_parse_head(c->buf, c->len, MAX_HEAD, &hd, &status, msg, sizeof msg)) == 0)
        if (read_more(c, MAX_HEAD) <= 0) return 1; /* closed, cut, idle: no request to answer */
    double t0 = ts_seconds();
    if (hl < 0) return refuse(c, status, msg, t0), 1;
    if (c->sc && c->sc->over) { /* past --max-connections: answered at once, and closed */
        serve_conn_state(&h->conns, c->sc, 1);
        serve_conn_refused(&h->conns);
        return refuse(c, 503, SERVE_FULL_MSG, t0), 1;
    }
    req_ctx r = {.t0 = t0};
    serve_inflight(s, 1);
    int close = !hd.keep_alive, rc = 0;
    size_t end = (size_t)hl;
    if (!hd.chunked && hd.content_length > (int64_t)serve_max_body(s)) {
        r.too_big = 1, close = 1; /* answered before the body is read */
    } else {
        if (hd.expect_continue && (hd.chunked || hd.content_length > 0) && c->len == (size_t)hl) {
            struct iovec v = {"HTTP/1.1 100 Continue\r\n\r\n", 25};
            send_all(c->fd, &v, 1);
        }
        rc = read_body(c, &hd, (size_t)hl, &r, &end);
        close |= r.too_big;
    }
    if (rc == 0) {
        serve_conn_state(&h->conns, c->sc, 1); /* the body is in: no read deadline while answering */
        http_out o = {0};
        route(h, &o, hd.target, hd.method, &r);
        close |= serve_draining(s);
        if (send_answer(c, &o, close)) close = 1;
        serve_conn_state(&h->conns, c->sc, 0); /* the next request's wait starts */
    }
    free(r.body);
    serve_inflight(s, -1);
    if (rc) return 1;
    memmove(c->buf, c->buf + end, c->len - end); /* a pipelined request's bytes stay */
    c->len -= end;
    return close;
}

/* Before the socket closes: what the client still sends is read and dropped for up to a second,
 * so that an answer sent before its body was read (a 413, a refusal) is not lost to a reset. */
static void linger_read(int fd) {
    char junk[4096];
    double until = ts_seconds() + 1.0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (size_t total = 0; total < (1u << 20) && ts_seconds() < until;) {
        if (poll(&p, 1, 100) <= 0) continue;
        ssize_t k = recv(fd, junk, sizeof junk, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) break;
        if (k > 0) total += (size_t)k;
    }
}

static void *conn_main(void *arg) {
    conn *c = arg;
    http_srv *h = c->h;
    c->cap = 4096;
    c->buf = malloc(c->cap + 1);
    c->sc = serve_conns_open(&h->conns, c->fd);
    while (c->buf && c->sc && !one_request(c)) {}
    serve_conns_close(&h->conns, c->sc);
    if (shutdown(c->fd, SHUT_WR) == 0) linger_read(c->fd);
    close(c->fd);
    free(c->buf);
    free(c);
    pthread_mutex_lock(&h->mu);
    if (--h->threads == 0) pthread_cond_broadcast(&h->idle);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ------------------------------------------------------------------ the listening side */

/* Past the limit of connections open at all: a 503 written at once and the socket closed. */
static void refuse_now(http_srv *h, int fd) {
    serve_write_raw(fd, 503, "Service Unavailable", SERVE_FULL_MSG);
    serve_conn_refused(&h->conns);
    close(fd);
}

static void *accept_main(void *arg) {
    http_srv *h = arg;
    struct pollfd p[2] = {{.fd = h->listen_fd, .events = POLLIN}, {.fd = h->wake[0], .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0 && errno != EINTR) break;
        if (p[1].revents) break;
        if (!(p[0].revents & POLLIN)) continue;
        int fd = accept(h->listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) usleep(10000); /* out of descriptors: let some close */
            continue;
        }
        pthread_mutex_lock(&h->mu);
        int full = h->threads >= h->limit;
        if (!full) h->threads++;
        pthread_mutex_unlock(&h->mu);
        if (full) {
            refuse_now(h, fd);
            continue;
        }
        conn *c = calloc(1, sizeof *c);
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (c) c->h = h, c->fd = fd;
        if (!c || pthread_create(&t, &at, conn_main, c) != 0) {
            free(c);
            refuse_now(h, fd);
            pthread_mutex_lock(&h->mu);
            if (--h->threads == 0) pthread_cond_broadcast(&h->idle);
            pthread_mutex_unlock(&h->mu);
        }
        pthread_attr_destroy(&at);
    }
    return NULL;
}

/* host:port into addr (numeric, or a name looked up). TS_OK or TS_ERR_IO with the reason. */
static ts_status resolve(const char *host, int port, struct sockaddr_storage *addr, socklen_t *len) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc) return ts_set_error(TS_ERR_IO, "host %s: %s", host, gai_strerror(rc));
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return TS_OK;
}

/* The socket listening on addr, or -1. */
static int listen_on(const struct sockaddr_storage *addr, socklen_t len) {
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one); /* a restart right after a kill */
    if (bind(fd, (const struct sockaddr *)addr, len) != 0 || listen(fd, 1024) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void *serve_http_start(serve_server *s, const serve_opts *o, int *port) {
    struct sockaddr_storage addr = {0};
    socklen_t alen = 0;
    if (resolve(o->host, o->port, &addr, &alen)) return NULL;
    http_srv *h = calloc(1, sizeof *h);
    if (!h) return ts_set_error(TS_ERR_NOMEM, "out of memory"), NULL;
    h->s = s, h->timeout_s = o->timeout_s;
    /* the connections answered 503 by conns.c lie past --max-connections, up to this limit; past it
     * a connection is answered 503 as it is accepted */
    h->limit = o->max_connections + (o->max_connections > 256 ? o->max_connections : 256);
    h->wake[0] = h->wake[1] = -1;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->idle, NULL);
    if (serve_conns_init(&h->conns, o->max_connections, o->read_timeout_s)) goto fail_conns;
    if ((h->listen_fd = listen_on(&addr, alen)) < 0) {
        ts_set_error(TS_ERR_IO, "cannot listen on %s:%d (the address is taken, or not this machine's)", o->host, o->port);
        goto fail_listen;
    }
    if (pipe(h->wake) != 0 || pthread_create(&h->acceptor, NULL, accept_main, h) != 0) {
        ts_set_error(TS_ERR_RUNTIME, "cannot start the thread that accepts connections");
        goto fail_thread;
    }
    h->accepting = 1;
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    *port = o->port;
    if (getsockname(h->listen_fd, (struct sockaddr *)&bound, &bl) == 0)
        *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    return h;
fail_thread:
    if (h->wake[0] >= 0) close(h->wake[0]), close(h->wake[1]);
    close(h->listen_fd);
fail_listen:
    serve_conns_destroy(&h->conns);
fail_conns:
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->idle);
    free(h);
    return NULL;
}

ts_status serve_http_built(void) { return TS_OK; }

/* Stop accepting: the accepting thread ends, the listening socket closes (a new server may take
 * the port), the connections open go on. */
void serve_http_quiesce(void *http) {
    http_srv *h = http;
    if (!h->accepting) return;
    (void)!write(h->wake[1], "x", 1);
    pthread_join(h->acceptor, NULL);
    h->accepting = 0;
    close(h->listen_fd);
    close(h->wake[0]), close(h->wake[1]);
}

int serve_http_cut(void *http) { return serve_conns_cut_all(&((http_srv *)http)->conns); }

/* Every connection shut down and its thread ended, then the server freed. */
void serve_http_stop(void *http) {
    http_srv *h = http;
    serve_http_quiesce(h);
    pthread_mutex_lock(&h->mu);
    while (h->threads > 0) {
        pthread_mutex_unlock(&h->mu);
        serve_conns_cut_all(&h->conns); /* one opened since the last cut */
        pthread_mutex_lock(&h->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&h->idle, &h->mu, &until);
    }
    pthread_mutex_unlock(&h->mu);
    serve_conns_destroy(&h->conns);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->idle);
    free(h);
}

#else /* built with -DTS_WITH_SERVE=OFF */

ts_status serve_http_built(void) {
    return ts_set_error(TS_ERR_UNSUPPORTED, "this tessera was built without its HTTP server (configure with "
                                            "-DTS_WITH_SERVE=ON)");
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
