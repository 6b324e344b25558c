/*
 * conns.c — the connections a `tessera serve` has open, and the watchdog that keeps any one client
 * from holding the server (the connection's own timeout, --timeout, measures inactivity only, so a
 * client that sends a byte a second is never cut by it):
 *  - a deadline for a whole request: from the moment a connection starts waiting for a request
 *    (it opens, or its previous answer went out) until the body is in, at most --read-timeout
 *    seconds; past it the client gets a 408 with a JSON error and the connection is shut down;
 *  - a connection past --max-connections is answered 503 with Retry-After as soon as its request
 *    line and headers are in (http.c), or by the watchdog after one second if they are not;
 *  - the drain: after --drain-timeout at SIGTERM every connection still open is shut down.
 * Each is counted for /metrics. The watchdog is one thread that looks every 50 ms; it shuts a
 * socket down (shutdown(2)), which makes the connection's own thread see the end and close it, so
 * that thread keeps owning the socket. A connection is tracked from when its thread starts to when
 * it ends (serve_conns_open / _close), under the list's lock.
 */
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

void serve_write_raw(int fd, int code, const char *reason, const char *msg) {
    char body[256], all[512];
    int bl = snprintf(body, sizeof body, "{\"error\":\"%s\"}", msg);
    int n = snprintf(all, sizeof all,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n%sConnection: close\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     code, reason, code == 503 ? "Retry-After: 1\r\n" : "", bl, body);
    if (n > 0) (void)!send(fd, all, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void *watch_main(void *arg) {
    serve_conns *cs = arg;
    pthread_mutex_lock(&cs->mu);
    while (!cs->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000000L;
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&cs->wake, &cs->mu, &until);
        double now = ts_seconds();
        for (serve_conn *c = cs->head; c; c = c->next) {
            if (c->cut || c->running) continue;
            if (c->over && now - c->since > 1.0) {
                serve_write_raw(c->fd, 503, "Service Unavailable", SERVE_FULL_MSG);
                cs->refused++;
            } else if (!c->over && now - c->since > cs->read_timeout_s) {
                serve_write_raw(c->fd, 408, "Request Timeout", "the request did not arrive within the server's read timeout");
                cs->cut_read++;
            } else {
                continue;
            }
            shutdown(c->fd, SHUT_RDWR);
            c->cut = 1;
        }
    }
    pthread_mutex_unlock(&cs->mu);
    return NULL;
}

ts_status serve_conns_init(serve_conns *cs, int max_connections, double read_timeout_s) {
    memset(cs, 0, sizeof *cs);
    cs->max = max_connections;
    cs->read_timeout_s = read_timeout_s;
    pthread_mutex_init(&cs->mu, NULL);
    pthread_cond_init(&cs->wake, NULL);
    if (pthread_create(&cs->watch, NULL, watch_main, cs) != 0) {
        pthread_mutex_destroy(&cs->mu);
        pthread_cond_destroy(&cs->wake);
        return ts_set_error(TS_ERR_RUNTIME, "cannot start a thread");
    }
    cs->started = 1;
    return TS_OK;
}

void serve_conns_destroy(serve_conns *cs) {
    if (!cs->started) return;
    pthread_mutex_lock(&cs->mu);
    cs->stop = 1;
    pthread_cond_broadcast(&cs->wake);
    pthread_mutex_unlock(&cs->mu);
    pthread_join(cs->watch, NULL);
    for (serve_conn *c = cs->head, *nx; c; c = nx) nx = c->next, free(c);
    pthread_mutex_destroy(&cs->mu);
    pthread_cond_destroy(&cs->wake);
    cs->started = 0;
}

serve_conn *serve_conns_open(serve_conns *cs, int fd) {
    serve_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    c->since = ts_seconds();
    pthread_mutex_lock(&cs->mu);
    c->over = cs->open >= cs->max; /* answered 503: it takes no place of those served */
    cs->open += !c->over;
    c->next = cs->head;
    if (cs->head) cs->head->prev = c;
    cs->head = c;
    pthread_mutex_unlock(&cs->mu);
    return c;
}

void serve_conns_close(serve_conns *cs, serve_conn *c) {
    if (!c) return;
    pthread_mutex_lock(&cs->mu);
    if (c->prev) c->prev->next = c->next;
    else cs->head = c->next;
    if (c->next) c->next->prev = c->prev;
    cs->open -= !c->over;
    pthread_mutex_unlock(&cs->mu);
    free(c);
}

void serve_conn_state(serve_conns *cs, serve_conn *c, int running) {
    if (!c) return;
    pthread_mutex_lock(&cs->mu);
    c->running = running;
    if (!running) c->since = ts_seconds(); /* the next request's wait starts */
    pthread_mutex_unlock(&cs->mu);
}

void serve_conn_refused(serve_conns *cs) {
    pthread_mutex_lock(&cs->mu);
    cs->refused++;
    pthread_mutex_unlock(&cs->mu);
}

int serve_conns_cut_all(serve_conns *cs) {
    int n = 0;
    pthread_mutex_lock(&cs->mu);
    for (serve_conn *c = cs->head; c; c = c->next)
        if (!c->cut) shutdown(c->fd, SHUT_RDWR), c->cut = 1, n++;
    cs->cut_drain += (uint64_t)n;
    pthread_mutex_unlock(&cs->mu);
    return n;
}

int serve_conns_open_count(serve_conns *cs) {
    pthread_mutex_lock(&cs->mu);
    int n = cs->open;
    pthread_mutex_unlock(&cs->mu);
    return n;
}

char *serve_conns_metrics_text(serve_conns *cs) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    pthread_mutex_lock(&cs->mu);
    fprintf(f,
            "# HELP tessera_serve_connections_open Connections open now and served (within the limit).\n"
            "# TYPE tessera_serve_connections_open gauge\ntessera_serve_connections_open %d\n"
            "# HELP tessera_serve_connections_refused_total Connections past the connection limit, answered 503.\n"
            "# TYPE tessera_serve_connections_refused_total counter\ntessera_serve_connections_refused_total %llu\n"
            "# HELP tessera_serve_connections_cut_total Connections shut down by the server, by reason "
            "(read_timeout: a request slower than the read timeout; drain: still open after the drain timeout).\n"
            "# TYPE tessera_serve_connections_cut_total counter\n"
            "tessera_serve_connections_cut_total{reason=\"read_timeout\"} %llu\n"
            "tessera_serve_connections_cut_total{reason=\"drain\"} %llu\n",
            cs->open, (unsigned long long)cs->refused, (unsigned long long)cs->cut_read,
            (unsigned long long)cs->cut_drain);
    pthread_mutex_unlock(&cs->mu);
    if (fclose(f) != 0) return free(buf), NULL;
    return buf;
}
