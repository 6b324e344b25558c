/*
 * test_cli_serve.c — `tessera serve` end to end, over sockets on the loopback address, with a
 * tiny fine-tuned classifier (a 1-layer BERT of hidden 32, made here as test_cli_ensemble does):
 *  - every endpoint: health, server and model metadata, v2 infer, /v1 :predict (the same labels
 *    and probabilities as `tessera predict`), /metrics; a QA model served beside the classifier
 *    (its answers those of `tessera predict`); the classifier exported to ONNX, served as a file;
 *    an OCR model reading an uploaded image as `tessera ocr` does;
 *  - bad requests: 4xx with a JSON error (bad JSON, an unknown input, a wrong shape, datatype or
 *    value, an unknown model or path, a wrong method, a body over --max-body, too many rows);
 *  - malformed HTTP (the server's own, apps/serve/http1.c): a garbage request line answered at once,
 *    a bad chunk size, Content-Length beside chunked, a negative Content-Length, a 64 KB header, an
 *    HTTP/2.0 request line, an unknown Transfer-Encoding or Expect: each a JSON error with its
 *    status, counted in /metrics; a chunked body, Expect: 100-continue and two pipelined requests
 *    on one connection answered as their plain forms are;
 *  - a slow client cut off by --timeout; a full queue answering 503 with Retry-After;
 *  - three requests batched run the batch-4 program, each answer bit for bit its answer alone;
 *  - SIGTERM under load: every request accepted is answered, exit 0; SIGKILL, then a restart on
 *    the same port; a model that cannot load stops the start with the reason; the same server
 *    through the library (ts_serve_start / ts_serve_port / ts_serve_stop);
 *  - test_soak (only when named: ctest cli_serve_soak): 10,000 requests, the resident memory
 *    after them within 1.1x of that after the first 1,000, no error answer.
 * Skipped (77) in a build without the HTTP server (-DTS_WITH_SERVE=OFF).
 */
#include "tessera_apps.h"
#include "test_util.h"

#include <pthread.h>

#include "cli_util.h"
#include "serve_client.h"

static char resp[1 << 16];

static void make_model(void) {
    write_corpus("corpus.txt");
    write_labelled("data.tsv");
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out pre --layers 1 --hidden 32 --heads 2 "
                       "--intermediate 64 --max-len 32 --batch 4 --max-steps 2 --threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out ft --epochs 3 --batch 4 --max-len 32 --lr 2e-3 "
                       "--threads 1");
    CHECK_RAN(rc, 0);
    write_str("qa.json", "{\"version\": \"1.1\", \"data\": [{\"title\": \"t\", \"paragraphs\": [{\"context\": "
                         "\"the cat runs and the dog sleeps and the bird sings quickly.\", \"qas\": [{\"id\": \"a\", "
                         "\"question\": \"what does the dog do?\", \"answers\": [{\"text\": \"sleeps\", "
                         "\"answer_start\": 25}]}]}]}]}\n");
    rc = tessera(NULL, "finetune --task qa --model pre --train qa.json --out qa --max-len 32 --doc-stride 8 "
                       "--max-query-len 8 --batch 4 --max-steps 3 --threads 1");
    CHECK_RAN(rc, 0);
}

/* Start `tessera serve --model m=ft ARGS` (threads 1); fails the case when it does not start. */
static pid_t start(const char *args, int *port) {
    char all[1024];
    int rc;
    snprintf(all, sizeof all, "--model m=ft --threads 1 %s", args);
    pid_t pid = sc_start(cli, dir, all, port, &rc);
    if (pid < 0) read_into("serve.err", err_text, sizeof err_text);
    CHECK(pid > 0, "tessera serve %s did not start (exit %d): %s", all, rc, err_text);
    return pid;
}

/* SIGTERM the server: it must exit 0, with no sanitizer report (leaks included) on its stderr. */
static void stop(pid_t pid) {
    int rc = sc_stop(pid, SIGTERM);
    read_into("serve.err", err_text, sizeof err_text);
    CHECK(rc == 0 && !strstr(err_text, "Sanitizer"), "tessera serve after SIGTERM: exit %d, stderr %s", rc, err_text);
}

static const char *INFER2 = "{\"id\":\"r1\",\"inputs\":[{\"name\":\"input_ids\",\"shape\":[2,4],\"datatype\":\"INT64\","
                            "\"data\":[[2,5,6,3],[2,7,8,3]]},{\"name\":\"attention_mask\",\"shape\":[2,4],"
                            "\"datatype\":\"INT32\",\"data\":[1,1,1,1,1,1,1,0]}]}";

static void test_endpoints(void) {
    int port;
    pid_t pid = start("--port 0", &port);
    if (pid < 0) return;
    CHECK(sc_http(port, "GET", "/v2/health/live", NULL, resp, sizeof resp) == 200, "live: %s", resp);
    CHECK(sc_http(port, "GET", "/v2/health/ready", NULL, resp, sizeof resp) == 200, "ready: %s", resp);
    CHECK(sc_http(port, "GET", "/v2", NULL, resp, sizeof resp) == 200 && strstr(resp, "\"name\":\"tessera\""),
          "server metadata: %s", resp);
    CHECK(sc_http(port, "GET", "/v2/models/m", NULL, resp, sizeof resp) == 200 &&
              strstr(resp, "\"labels\":[\"neg\",\"pos\"]") && strstr(resp, "\"input_ids\""),
          "model metadata: %s", resp);
    CHECK(sc_http(port, "GET", "/v2/models/m/ready", NULL, resp, sizeof resp) == 200, "model ready: %s", resp);
    /* KServe v2's version paths: the one version, 1 */
    CHECK(sc_http(port, "GET", "/v2/models/m/versions/1", NULL, resp, sizeof resp) == 200 &&
              strstr(resp, "\"versions\":[\"1\"]"),
          "model metadata at version 1: %s", resp);
    CHECK(sc_http(port, "GET", "/v2/models/m/versions/1/ready", NULL, resp, sizeof resp) == 200, "version ready: %s",
          resp);
    CHECK(sc_http(port, "POST", "/v2/models/m/versions/1/infer", INFER2, resp, sizeof resp) == 200 &&
              strstr(resp, "\"name\":\"logits\""),
          "infer at version 1: %s", resp);
    CHECK(sc_http(port, "POST", "/v2/models/m/infer", INFER2, resp, sizeof resp) == 200 &&
              strstr(resp, "\"name\":\"logits\"") && strstr(resp, "\"shape\":[2,2]") && strstr(resp, "\"id\":\"r1\""),
          "infer: %s", resp);
    /* /v1 :predict gives what tessera predict prints */
    const char *texts[2] = {"the cat runs 7 times", "the fish swims 4 times"};
    char body[256];
    snprintf(body, sizeof body, "{\"instances\":[\"%s\",\"%s\"]}", texts[0], texts[1]);
    CHECK(sc_http(port, "POST", "/v1/models/m:predict", body, resp, sizeof resp) == 200, "predict: %s", resp);
    char served[1 << 12];
    snprintf(served, sizeof served, "%s", sc_body(resp));
    char lines[128];
    snprintf(lines, sizeof lines, "%s\n%s\n", texts[0], texts[1]);
    int rc = tessera(lines, "predict --model ft --threads 1");
    CHECK_RAN(rc, 0);
    const char *line = out_text, *at = served;
    for (int i = 0; i < 2; i++) {
        char label[16] = "";
        double p = -1;
        sscanf(line, "%15[^\t]\t%lf", label, &p);
        char want[64];
        snprintf(want, sizeof want, "\"label\":\"%s\",\"probability\":", label);
        at = strstr(at, want);
        CHECK(at && fabs(atof(at + strlen(want)) - p) < 1e-4, "instance %d: predict says %s %.4f, serve %s", i, label,
              p, served);
        if (!at) break;
        at++;
        line = strchr(line, '\n') + 1;
    }
    CHECK(sc_http(port, "GET", "/metrics", NULL, resp, sizeof resp) == 200, "metrics: %s", resp);
    const char *fams[] = {"tessera_serve_requests_total{model=\"m\",code=\"200\"} 3",
                          "# TYPE tessera_serve_queue_seconds histogram", "tessera_serve_compute_seconds_bucket",
                          "tessera_serve_request_seconds_count{model=\"m\"} 3", "tessera_serve_batch_size_bucket",
                          "tessera_serve_queue_depth{model=\"m\"} 0"};
    for (size_t i = 0; i < sizeof fams / sizeof *fams; i++) CHECK(strstr(resp, fams[i]), "metrics lack %s:\n%s", fams[i], resp);
    stop(pid);
}

/* A request that must be refused with `code` and an error naming `needle`. */
static void refused(int port, const char *method, const char *path, const char *body, int code, const char *needle) {
    int got = sc_http(port, method, path, body, resp, sizeof resp);
    CHECK(got == code && strstr(sc_body(resp), "{\"error\":") && strstr(resp, needle),
          "%s %s %.80s: %d, want %d with \"%s\": %s", method, path, body ? body : "", got, code, needle, resp);
}

static void test_bad_requests(void) {
    int port;
    pid_t pid = start("--port 0 --max-body 2000 --max-batch 4", &port);
    if (pid < 0) return;
    const char *inf = "/v2/models/m/infer";
    refused(port, "POST", inf, "{\"inputs\": [", 400, "not valid JSON: at byte 11 (line 1, column 12), near '['");
    refused(port, "POST", inf, "{\"inputs\": x}", 400, "at byte 11 (line 1, column 12), near 'x}'");
    refused(port, "POST", inf, "[1, 2]", 400, "the body is an array, not a JSON object");
    refused(port, "POST", inf, "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,2],\"datatype\":\"INT64\","
            "\"data\":[1,2.5]}]}", 400, "element 1 is 2.5, not an integer");
    refused(port, "POST", inf, "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,2],\"datatype\":\"INT64\","
            "\"data\":[1,4294967296]}]}", 400, "element 1 is 4294967296, outside 0 ..");
    refused(port, "POST", inf, "{}", 400, "no \\\"inputs\\\"");
    refused(port, "POST", inf, "{\"inputs\":[{\"name\":\"pixels\",\"shape\":[1,1],\"datatype\":\"INT64\",\"data\":[1]}]}",
            400, "unknown input 'pixels'");
    refused(port, "POST", inf, "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,3],\"datatype\":\"INT64\",\"data\":[1,2]}]}",
            400, "holds 2 values");
    refused(port, "POST", inf, "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,2],\"datatype\":\"FP32\",\"data\":[1,2]}]}",
            400, "datatype FP32");
    refused(port, "POST", inf, "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,2],\"datatype\":\"INT64\",\"data\":[1,99999]}]}",
            400, "outside 0 ..");
    refused(port, "POST", inf, "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,99],\"datatype\":\"INT64\",\"data\":[1]}]}",
            400, "sequence length 99");
    refused(port, "POST", inf, "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[5,1],\"datatype\":\"INT64\",\"data\":[1,1,1,1,1]}]}",
            400, "max batch 4");
    refused(port, "POST", inf, "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,2],\"datatype\":\"INT64\",\"data\":[1,2]},"
            "{\"name\":\"attention_mask\",\"shape\":[2,1],\"datatype\":\"INT64\",\"data\":[1,1]}]}", 400, "differs");
    refused(port, "POST", "/v1/models/m:predict", "{\"instances\": [3]}", 400, "instance 0");
    refused(port, "POST", "/v1/models/m:predict", "{\"instances\": []}", 400, "instances");
    refused(port, "POST", "/v2/models/nope/infer", "{}", 404, "no model named 'nope'\"");
    refused(port, "POST", "/v2/models/mm/infer", "{}", 404, "no model named 'mm' (did you mean 'm'?)");
    refused(port, "GET", "/v2/nothing", NULL, 404, "no such endpoint");
    refused(port, "GET", inf, NULL, 405, "POST");
    refused(port, "POST", "/v2/models/m/versions/2/infer", INFER2, 404, "model m has one version, 1");
    refused(port, "DELETE", "/v2/health/live", NULL, 405, "GET");
    static char big[4096];
    memset(big, ' ', sizeof big - 1);
    refused(port, "POST", inf, big, 413, "limit of 2000 bytes");
    /* the server is fine after all that */
    CHECK(sc_http(port, "GET", "/v2/health/live", NULL, resp, sizeof resp) == 200, "live after bad requests");
    CHECK(sc_http(port, "GET", "/metrics", NULL, resp, sizeof resp) == 200 &&
              strstr(resp, "tessera_serve_errors_total{model=\"m\",code=\"400\"}") &&
              strstr(resp, "tessera_serve_errors_total{model=\"m\",code=\"405\"} 1") &&
              strstr(resp, "tessera_serve_errors_total{model=\"m\",code=\"413\"} 1") &&
              strstr(resp, "tessera_serve_errors_total{model=\"\",code=\"405\"} 1"),
          "errors counted under their model: %s", resp);
    stop(pid);
}

/* Send raw bytes on a new connection and read until the server closes (or 3 s pass): the whole
 * response into resp; the first status, or -1. */
static int raw(int port, const char *bytes, size_t n) {
    int fd = sc_connect(port);
    resp[0] = 0;
    if (fd < 0) return -1;
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (send(fd, bytes, n, MSG_NOSIGNAL) != (ssize_t)n) return close(fd), -1;
    size_t got = 0;
    for (ssize_t k; got < sizeof resp - 1 && (k = recv(fd, resp + got, sizeof resp - 1 - got, 0)) > 0;) got += (size_t)k;
    resp[got] = 0;
    close(fd);
    int code = -1;
    return sscanf(resp, "HTTP/1.1 %d", &code) == 1 ? code : -1;
}

static void raw_refused(int port, const char *bytes, int code, const char *needle) {
    double t0 = sc_now();
    int got = raw(port, bytes, strlen(bytes));
    CHECK(got == code && strstr(resp, "Content-Type: application/json") && strstr(sc_body(resp), "{\"error\":") &&
              strstr(resp, needle) && sc_now() - t0 < 2.0,
          "%.50s...: %d, want %d with \"%s\" (%.2f s): %s", bytes, got, code, needle, sc_now() - t0, resp);
}

static void test_malformed_http(void) {
    int port;
    pid_t pid = start("--port 0 --timeout 30", &port);
    if (pid < 0) return;
    raw_refused(port, "hello there\r\n\r\n", 400, "does not end in HTTP/1.0 or HTTP/1.1");
    raw_refused(port, "\x16\x03\x01\x02\x00", 400, "METHOD TARGET"); /* TLS to a plain port: no line end needed */
    raw_refused(port, "GET /v2 HTTP/2.0\r\n\r\n", 505, "HTTP/2.0 is not supported");
    raw_refused(port, "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400,
                "chunk size");
    raw_refused(port, "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "Content-Length and Transfer-Encoding");
    raw_refused(port, "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", 400,
                "Content-Length '-5'");
    raw_refused(port, "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
                "Transfer-Encoding 'gzip'");
    raw_refused(port, "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n", 417, "Expect");
    raw_refused(port, "GET /v2 HTTP/1.1\r\nHost: x\r\n folded: value\r\n\r\n", 400, "folded");
    static char big[70000];
    int n = snprintf(big, sizeof big, "GET /v2 HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(big + n, 'a', 65536);
    memcpy(big + n + 65536, "\r\n\r\n", 5);
    raw_refused(port, big, 431, "longer than 16384 bytes");
    /* a chunked body, Expect: 100-continue, and two requests on one connection: as plain ones */
    CHECK(sc_http(port, "POST", "/v2/models/m/infer", INFER2, resp, sizeof resp) == 200, "plain infer: %s", resp);
    static char plain[8192], buf[16384];
    snprintf(plain, sizeof plain, "%s", sc_body(resp));
    size_t len = strlen(INFER2);
    n = snprintf(buf, sizeof buf, "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                 "Connection: close\r\n\r\n%zx;ext=1\r\n%.*s\r\n%zx\r\n%s\r\n0\r\nX-Trailer: t\r\n\r\n", len / 2,
                 (int)(len / 2), INFER2, len - len / 2, INFER2 + len / 2);
    CHECK(raw(port, buf, (size_t)n) == 200 && !strcmp(sc_body(resp), plain), "a chunked body: %s", resp);
    /* Expect: 100-continue: the head alone, the server's 100, then the body */
    int fd = sc_connect(port);
    n = snprintf(buf, sizeof buf, "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n", len);
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t k = fd >= 0 && send(fd, buf, (size_t)n, MSG_NOSIGNAL) == n ? recv(fd, buf, sizeof buf - 1, 0) : -1;
    buf[k > 0 ? k : 0] = 0;
    CHECK(!strcmp(buf, "HTTP/1.1 100 Continue\r\n\r\n"), "100 Continue before the body: '%s'", buf);
    size_t got = 0;
    if (fd >= 0 && send(fd, INFER2, len, MSG_NOSIGNAL) == (ssize_t)len)
        while (got < sizeof resp - 1 && (k = recv(fd, resp + got, sizeof resp - 1 - got, 0)) > 0) got += (size_t)k;
    resp[got] = 0;
    if (fd >= 0) close(fd);
    CHECK(!strncmp(resp, "HTTP/1.1 200 OK", 15) && !strcmp(sc_body(resp), plain), "Expect: 100-continue: %s", resp);
    n = snprintf(buf, sizeof buf, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\nPOST /v2/models/m/infer HTTP/1.1\r\n"
                 "Host: x\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s", len, INFER2);
    CHECK(raw(port, buf, (size_t)n) == 200 && strstr(resp, "{\"live\":true}") && strstr(resp, plain),
          "two pipelined requests: %s", resp);
    CHECK(sc_http(port, "GET", "/metrics", NULL, resp, sizeof resp) == 200 &&
              strstr(resp, "tessera_serve_errors_total{model=\"\",code=\"400\"} 6") &&
              strstr(resp, "tessera_serve_errors_total{model=\"\",code=\"431\"} 1") &&
              strstr(resp, "tessera_serve_errors_total{model=\"\",code=\"505\"} 1"),
          "the malformed requests counted: %s", resp);
    stop(pid);
}

static void test_slow_client(void) {
    int port;
    pid_t pid = start("--port 0 --timeout 1", &port);
    if (pid < 0) return;
    int fd = sc_connect(port);
    CHECK(fd >= 0, "connect");
    const char *part = "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"inp";
    CHECK(send(fd, part, strlen(part), MSG_NOSIGNAL) == (ssize_t)strlen(part), "send");
    double t0 = sc_now();
    struct timeval tv = {8, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[256];
    ssize_t k = recv(fd, buf, sizeof buf, 0); /* the server closes: 0 (or an answer, then close) */
    while (k > 0) k = recv(fd, buf, sizeof buf, 0);
    double waited = sc_now() - t0;
    CHECK(k == 0 && waited < 6, "a client sending slowly is cut off after --timeout 1: recv %zd after %.1f s", k,
          waited);
    close(fd);
    CHECK(sc_http(port, "GET", "/v2/health/live", NULL, resp, sizeof resp) == 200, "live after a slow client");
    stop(pid);
}

typedef struct trickle {
    int port, sent;
    double gap_s, cut_after; /* seconds between bytes; when the server cut the connection */
    char reply[512];
} trickle;

/* A client that sends a request's headers, then its body one byte every gap_s seconds, until the
 * server closes (or 40 bytes): what it got back in reply, when in cut_after. */
static void *trickle_main(void *arg) {
    trickle *t = arg;
    int fd = sc_connect(t->port);
    t->cut_after = -1;
    if (fd < 0) return NULL;
    const char *head = "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n";
    double t0 = sc_now();
    ssize_t k = send(fd, head, strlen(head), MSG_NOSIGNAL);
    struct timeval tv = {0, (suseconds_t)(t->gap_s * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t got = 0;
    for (t->sent = 0; k > 0 && t->sent < 40; t->sent++) {
        if (send(fd, " ", 1, MSG_NOSIGNAL) != 1) break;
        ssize_t r = recv(fd, t->reply + got, sizeof t->reply - 1 - got, 0); /* waits gap_s, or the server's end */
        if (r == 0) break;
        if (r > 0) got += (size_t)r;
    }
    t->reply[got] = 0;
    t->cut_after = sc_now() - t0;
    close(fd);
    return NULL;
}

/* A client that sends its body a byte every 0.3 s (never idle, so --timeout does not cut it) is
 * cut by --read-timeout with a JSON 408, counted in /metrics; at SIGTERM such a client holds the
 * server no longer than --drain-timeout. */
static void test_read_deadline(void) {
    int port;
    pid_t pid = start("--port 0 --timeout 30 --read-timeout 2 --drain-timeout 1", &port);
    if (pid < 0) return;
    trickle t = {.port = port, .gap_s = 0.3};
    pthread_t th;
    pthread_create(&th, NULL, trickle_main, &t);
    pthread_join(th, NULL);
    CHECK(t.cut_after > 1.5 && t.cut_after < 4.0 && strstr(t.reply, "HTTP/1.1 408") && strstr(t.reply, "{\"error\":"),
          "a body trickling in is cut after --read-timeout 2: %.2f s, %d bytes sent, reply %s", t.cut_after, t.sent,
          t.reply);
    CHECK(sc_http(port, "GET", "/metrics", NULL, resp, sizeof resp) == 200 &&
              strstr(resp, "tessera_serve_connections_cut_total{reason=\"read_timeout\"} 1"),
          "the cut counted: %s", resp);
    /* SIGTERM while a client trickles: exit 0 within the drain timeout (1 s) and a little */
    t = (trickle){.port = port, .gap_s = 0.3};
    pthread_create(&th, NULL, trickle_main, &t);
    usleep(500000);
    double t0 = sc_now();
    int rc = sc_stop(pid, SIGTERM);
    double took = sc_now() - t0;
    pthread_join(th, NULL);
    read_into("serve.err", err_text, sizeof err_text);
    CHECK(rc == 0 && took < 3.0 && !strstr(err_text, "Sanitizer"),
          "SIGTERM with a client trickling: exit %d after %.2f s (drain timeout 1 s): %s", rc, took, err_text);
}

/* Past --max-connections every connection is answered 503 with Retry-After at once, never left
 * waiting, and one that sends nothing within a second too; the connections within the limit are
 * served as before, and once they close the server takes new ones. */
static void test_connection_limit(void) {
    int port;
    pid_t pid = start("--port 0 --max-connections 4", &port);
    if (pid < 0) return;
    int held[4];
    for (int i = 0; i < 4; i++) held[i] = sc_connect(port); /* open, idle: the limit reached */
    usleep(200000);
    double worst = 0;
    int answered = 0;
    for (int i = 0; i < 20; i++) {
        double t0 = sc_now();
        int code = sc_http(port, "GET", "/v2/health/live", NULL, resp, sizeof resp);
        double took = sc_now() - t0;
        worst = took > worst ? took : worst;
        answered += code == 503 && strstr(resp, "Retry-After: 1") && strstr(sc_body(resp), "{\"error\":");
    }
    CHECK(answered == 20 && worst < 1.0, "20 connections past the limit: %d answered 503 with Retry-After, the slowest "
          "in %.3f s: %s", answered, worst, resp);
    int mute = sc_connect(port); /* past the limit and silent: answered by the watchdog */
    struct timeval tv = {3, 0};
    setsockopt(mute, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    double t0 = sc_now();
    ssize_t k = recv(mute, resp, sizeof resp - 1, 0);
    resp[k > 0 ? k : 0] = 0;
    CHECK(k > 0 && strstr(resp, "HTTP/1.1 503") && sc_now() - t0 < 2.0, "a silent connection past the limit: %s",
          resp);
    close(mute);
    for (int i = 0; i < 4; i++) close(held[i]);
    usleep(300000);
    CHECK(sc_http(port, "GET", "/v2/health/live", NULL, resp, sizeof resp) == 200, "after the held ones closed: %s",
          resp);
    CHECK(sc_http(port, "GET", "/metrics", NULL, resp, sizeof resp) == 200 &&
              strstr(resp, "tessera_serve_connections_refused_total 21"),
          "the refusals counted: %s", resp);
    stop(pid);
}

typedef struct client {
    int port, code, rows;
    const char *body;
    char resp[4096];
} client;

static void *one_request(void *arg) {
    client *c = arg;
    c->code = sc_http(c->port, "POST", "/v1/models/m:predict", c->body, c->resp, sizeof c->resp);
    return NULL;
}

static void test_full_queue(void) {
    int port;
    /* a batch waits 1.5 s for 4 rows; the queue holds 2: the third request is refused */
    pid_t pid = start("--port 0 --max-batch 4 --max-delay-ms 1500 --queue 2", &port);
    if (pid < 0) return;
    client c[2];
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        c[i] = (client){.port = port, .body = "{\"instances\":[\"the dog sleeps\"]}"};
        pthread_create(&th[i], NULL, one_request, &c[i]);
    }
    usleep(400000);
    int code = sc_http(port, "POST", "/v1/models/m:predict", "{\"instances\":[\"the cat runs\"]}", resp, sizeof resp);
    CHECK(code == 503 && strstr(resp, "Retry-After: 1") && strstr(resp, "queue is full"), "a full queue: %d %s",
          code, resp);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        CHECK(c[i].code == 200, "a queued request: %d %s", c[i].code, c[i].resp);
    }
    CHECK(sc_http(port, "GET", "/metrics", NULL, resp, sizeof resp) == 200 &&
              strstr(resp, "tessera_serve_requests_total{model=\"m\",code=\"503\"} 1"),
          "503 counted: %s", resp);
    stop(pid);
}

static void *one_infer(void *arg) {
    client *c = arg;
    c->code = sc_http(c->port, "POST", "/v2/models/m/infer", c->body, c->resp, sizeof c->resp);
    return NULL;
}

/* The numbers of a v2 answer's first "data" array into v[cap]; how many. */
static int data_of(const char *text, double *v, int cap) {
    const char *at = strstr(text, "\"data\":[");
    int n = 0;
    for (at = at ? at + 8 : ""; n < cap && *at && *at != ']'; n++) {
        char *end;
        v[n] = strtod(at, &end);
        if (end == at) break;
        at = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Three requests together run the batch-4 program (the run-size histogram of /metrics), and each
 * answer equals, bit for bit, the one it gets alone (the batch-1 program): the padding rows
 * change no other row. */
static void test_batch_sizes(void) {
    int port;
    pid_t pid = start("--port 0 --max-batch 8 --max-delay-ms 1000", &port);
    if (pid < 0) return;
    static const char *const ids[3] = {"[2,5,6,3]", "[2,7,8,9,3]", "[2,11,3]"};
    static const int len[3] = {4, 5, 3};
    char bodies[3][256];
    client c[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        snprintf(bodies[i], sizeof bodies[i], "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,%d],"
                 "\"datatype\":\"INT64\",\"data\":%s}]}", len[i], ids[i]);
        c[i] = (client){.port = port, .body = bodies[i]};
        pthread_create(&th[i], NULL, one_infer, &c[i]);
    }
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    CHECK(sc_http(port, "GET", "/metrics", NULL, resp, sizeof resp) == 200 &&
              strstr(resp, "tessera_serve_batch_size_count{model=\"m\"} 1\n") &&
              strstr(resp, "tessera_serve_batch_size_sum{model=\"m\"} 3\n") &&
              strstr(resp, "tessera_serve_batch_run_size_sum{model=\"m\"} 4\n"),
          "three requests together did not run as one batch of 4 rows:\n%s", resp);
    for (int i = 0; i < 3; i++) {
        client alone = {.port = port, .body = bodies[i]};
        one_infer(&alone);
        double a[8], b[8];
        int na = data_of(c[i].resp, a, 8), nb = data_of(alone.resp, b, 8);
        CHECK(c[i].code == 200 && alone.code == 200 && na == 2 && nb == 2 && a[0] == b[0] && a[1] == b[1],
              "request %d: in a batch of 3 %d %s; alone %d %s", i, c[i].code, c[i].resp, alone.code, alone.resp);
    }
    CHECK(sc_http(port, "GET", "/metrics", NULL, resp, sizeof resp) == 200 &&
              strstr(resp, "tessera_serve_batch_run_size_sum{model=\"m\"} 7\n"),
          "a request alone did not run the batch-1 program:\n%s", resp);
    stop(pid);
}

static void test_sigterm_under_load(void) {
    int port;
    pid_t pid = start("--port 0 --max-batch 4 --max-delay-ms 300", &port);
    if (pid < 0) return;
    enum { N = 12 };
    client c[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        c[i] = (client){.port = port, .body = "{\"instances\":[\"the horse eats\", \"the bird sings\"]}"};
        pthread_create(&th[i], NULL, one_request, &c[i]);
    }
    usleep(150000); /* every request sent; the last batch still waiting for rows */
    kill(pid, SIGTERM);
    int answered = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        answered += c[i].code == 200;
        CHECK(c[i].code == 200, "request %d accepted before SIGTERM: %d %s", i, c[i].code, c[i].resp);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit 0 after SIGTERM");
    read_into("serve.err", err_text, sizeof err_text);
    CHECK(!strstr(err_text, "Sanitizer"), "tessera serve under load: %s", err_text);
    CHECK(sc_http(port, "GET", "/v2/health/live", NULL, resp, sizeof resp) == -1, "nothing listens after the stop");
    printf("  %d of %d requests answered across SIGTERM\n", answered, N);
}

/* A question-answering model beside the classifier: /v1 answers as tessera predict does (every
 * window of a long context decoded), v2 gives start and end logits. */
static void test_qa(void) {
    int port;
    pid_t pid = start("--port 0 --model q=qa --max-batch 4", &port);
    if (pid < 0) return;
    const char *q1 = "{\"question\": \"what does the dog do?\", \"context\": \"the cat runs and the dog sleeps and the "
                     "bird sings quickly and the fish swims and the horse eats and the mouse jumps.\"}";
    const char *q2 = "{\"question\": \"who sings?\", \"context\": \"the bird sings.\"}";
    char body[1024], lines[1024];
    snprintf(body, sizeof body, "{\"instances\": [%s, %s]}", q1, q2);
    CHECK(sc_http(port, "POST", "/v1/models/q:predict", body, resp, sizeof resp) == 200, "qa predict: %s", resp);
    char served[2048];
    snprintf(served, sizeof served, "%s", sc_body(resp));
    snprintf(lines, sizeof lines, "%s\n%s\n", q1, q2);
    int rc = tessera(lines, "predict --model qa --threads 1");
    CHECK_RAN(rc, 0);
    char want[2048] = "{\"predictions\":[";
    const char *l = out_text;
    for (int i = 0; i < 2 && l; i++) {
        const char *nl = strchr(l, '\n');
        size_t n = strlen(want);
        snprintf(want + n, sizeof want - n, "%s{\"answer\":\"%.*s\"}", i ? "," : "", nl ? (int)(nl - l) : 0, l);
        l = nl ? nl + 1 : NULL;
    }
    strcat(want, "]}");
    CHECK(!strcmp(served, want), "qa: serve %s, predict %s", served, want);
    CHECK(sc_http(port, "POST", "/v2/models/q/infer", INFER2, resp, sizeof resp) == 200 &&
              strstr(resp, "\"name\":\"start_logits\"") && strstr(resp, "\"name\":\"end_logits\"") &&
              strstr(resp, "\"shape\":[2,4]"),
          "qa infer: %s", resp);
    refused(port, "POST", "/v1/models/q:predict", "{\"instances\": [\"no question\"]}", 400, "question");
    /* the classifier still answers beside it */
    CHECK(sc_http(port, "POST", "/v2/models/m/infer", INFER2, resp, sizeof resp) == 200, "m beside q: %s", resp);
    stop(pid);
}

/* An ONNX file (tessera export of the classifier, a fixed batch of 2 x 8): v2 infer gives the
 * logits the model directory gives, rows padded to the file's batch. */
static void test_onnx(void) {
    int rc = tessera(NULL, "export --out ft.onnx --model ft --batch 2 --max-len 8");
    CHECK_RAN(rc, 0);
    int port;
    pid_t pid = start("--port 0 --model o=ft.onnx", &port);
    if (pid < 0) return;
    const char *body = "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,8],\"datatype\":\"INT64\",\"data\":"
                       "[2,5,6,3,0,0,0,0]},{\"name\":\"attention_mask\",\"shape\":[1,8],\"datatype\":\"INT32\","
                       "\"data\":[1,1,1,1,0,0,0,0]},{\"name\":\"token_type_ids\",\"shape\":[1,8],\"datatype\":"
                       "\"INT32\",\"data\":[0,0,0,0,0,0,0,0]}]}";
    CHECK(sc_http(port, "POST", "/v2/models/m/infer", body, resp, sizeof resp) == 200, "m: %s", resp);
    char want[256] = "";
    const char *lg = strstr(resp, "\"name\":\"logits\"");
    if (lg) snprintf(want, sizeof want, "%.*s", (int)(strchr(lg, ']') - lg), lg);
    CHECK(sc_http(port, "POST", "/v2/models/o/infer", body, resp, sizeof resp) == 200 && want[0] && strstr(resp, want),
          "onnx logits (want %s): %s", want, resp);
    CHECK(sc_http(port, "GET", "/v2/models/o", NULL, resp, sizeof resp) == 200 && strstr(resp, "\"platform\":\"onnx\"") &&
              strstr(resp, "\"max_batch\":2"),
          "onnx metadata: %s", resp);
    refused(port, "POST", "/v2/models/o/infer",
            "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[3,8],\"datatype\":\"INT64\",\"data\":[1]}]}", 400,
            "1 to 2");
    refused(port, "POST", "/v2/models/o/infer",
            "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,8],\"datatype\":\"FP32\",\"data\":[1,1,1,1,1,1,1,1]}]}",
            400, "datatype FP32");
    refused(port, "POST", "/v2/models/o/infer",
            "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,8],\"datatype\":\"INT64\",\"data\":[1,1,1,1,1,1,1,1]}]}",
            400, "token_type_ids is missing");
    refused(port, "POST", "/v1/models/o:predict", "{\"instances\":[\"x\"]}", 400, "takes tensors");
    stop(pid);
    write_str("bad.onnx", "not a model");
    rc = tessera(NULL, "serve --model b=bad.onnx --port 0");
    CHECK_FAILS(rc, "model bad.onnx: bad.onnx: not an ONNX model");
}

/* The bytes of file path into a malloc'd, NUL-terminated buffer (*n its length), or NULL. */
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    *n = b ? fread(b, 1, (size_t)len, f) : 0;
    if (b) b[*n] = 0;
    fclose(f);
    return b;
}

/* An OCR model (PaddleOCR's folder, as tessera ocr reads it): an image posted to :predict gives
 * the lines tessera ocr reads in it. */
static void test_ocr(void) {
    char models[512], img[1024];
    snprintf(models, sizeof models, "%s/data/ocr", TS_SOURCE_DIR);
    snprintf(img, sizeof img, "%s/ch_PP-OCRv4_det_infer.onnx", models);
    if (access(img, R_OK) != 0) return tu_skip_part("no OCR models in %s (scripts/install-deps.sh fetches them)", models);
    snprintf(img, sizeof img, "cd '%s' && convert -size 240x60 xc:white -font DejaVu-Sans -pointsize 32 -fill black "
                              "-annotate +10+42 'HELLO 42' hello.png 2>/dev/null", dir);
    if (system(img) != 0) return tu_skip_part("no ImageMagick to draw a line of text");
    int port;
    char args[1200];
    snprintf(args, sizeof args, "--port 0 --model ocr=%s", models);
    pid_t pid = start(args, &port);
    if (pid < 0) return;
    snprintf(img, sizeof img, "%s/hello.png", dir);
    size_t n = 0;
    char *png = slurp(img, &n);
    CHECK(png && n > 8, "hello.png");
    /* sc_http sends a string: the PNG goes through a socket of its own */
    int fd = sc_connect(port), code = -1;
    if (fd >= 0 && png) {
        char head[256];
        int hl = snprintf(head, sizeof head, "POST /v1/models/ocr:predict HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                             "Content-Type: image/png\r\nContent-Length: %zu\r\n\r\n", n);
        if (send(fd, head, (size_t)hl, MSG_NOSIGNAL) == hl && send(fd, png, n, MSG_NOSIGNAL) == (ssize_t)n) {
            size_t got = 0;
            ssize_t k;
            while ((k = recv(fd, resp + got, sizeof resp - 1 - got, 0)) > 0) got += (size_t)k;
            resp[got] = 0;
            sscanf(resp, "HTTP/1.%*d %d", &code);
        }
        close(fd);
    }
    free(png);
    int rc = tessera(NULL, "ocr hello.png --json --models '%s'", models);
    CHECK_RAN(rc, 0);
    const char *t = strstr(out_text, "\"text\": \"");
    char want[128] = "";
    if (t) snprintf(want, sizeof want, "\"text\":\"%.*s\"", (int)strcspn(t + 9, "\""), t + 9);
    CHECK(code == 200 && want[0] && strstr(resp, want), "ocr: %d %s, want %s (tessera ocr: %s)", code, resp, want,
          out_text);
    refused(port, "POST", "/v1/models/ocr:predict", "not an image", 400, "not a PNG or JPEG");
    refused(port, "POST", "/v2/models/ocr/infer", "{}", 400, "reads images");
    stop(pid);
}

static void test_kill_restart(void) {
    int port, port2;
    pid_t pid = start("--port 0", &port);
    if (pid < 0) return;
    CHECK(sc_http(port, "POST", "/v2/models/m/infer", INFER2, resp, sizeof resp) == 200, "infer: %s", resp);
    int fd = sc_connect(port); /* a connection left open across the kill */
    CHECK(sc_stop(pid, SIGKILL) == -SIGKILL, "killed");
    if (fd >= 0) close(fd);
    char args[128];
    snprintf(args, sizeof args, "--port %d", port);
    pid = start(args, &port2);
    snprintf(args, sizeof args, "--model m=ft --threads 1 --port %d", port);
    if (pid < 0) return;
    CHECK(port2 == port, "restarted on port %d, not %d", port2, port);
    CHECK(sc_http(port, "POST", "/v2/models/m/infer", INFER2, resp, sizeof resp) == 200, "infer after restart: %s",
          resp);
    /* a second server on the same port is refused */
    int rc;
    CHECK(sc_start(cli, dir, args, &port2, &rc) < 0 && rc == 1, "a second server on a taken port: exit %d", rc);
    stop(pid);
}

/* The library's server (tessera_serve.h), in this process. */
static void test_library(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/ft", dir);
    const char *names[1] = {"lib"}, *dirs[1] = {path}, *bad_names[1] = {"a b"};
    ts_serve_opts o = {.struct_size = sizeof o, .port = 0, .threads = 1};
    CHECK(!ts_serve_start(&o, bad_names, dirs, 1) && ts_last_status() == TS_ERR_ARG, "a bad name: %s", ts_last_error());
    ts_serve_opts wrong = o;
    wrong.struct_size = 8;
    CHECK(!ts_serve_start(&wrong, names, dirs, 1) && ts_last_status() == TS_ERR_ARG, "a wrong struct_size");
    const char *nowhere[1] = {"/nonexistent/model"};
    CHECK(!ts_serve_start(&o, names, nowhere, 1) && ts_last_status() == TS_ERR_ARG &&
              strstr(ts_last_error(), "/nonexistent/model"),
          "a model that cannot load: %s", ts_last_error());
    ts_serve *s = ts_serve_start(&o, names, dirs, 1);
    CHECK(s && ts_serve_port(s) > 0, "ts_serve_start: %s", ts_last_error());
    if (!s) return;
    CHECK(sc_http(ts_serve_port(s), "POST", "/v2/models/lib/infer", INFER2, resp, sizeof resp) == 200, "infer: %s",
          resp);
    /* two servers in one process, each with its own limit on a body (INFER2 is ~230 bytes) */
    ts_serve_opts small = o;
    small.max_body = 100;
    ts_serve *t = ts_serve_start(&small, names, dirs, 1);
    CHECK(t && ts_serve_port(t) > 0, "a second server: %s", ts_last_error());
    if (t) {
        CHECK(sc_http(ts_serve_port(t), "POST", "/v2/models/lib/infer", INFER2, resp, sizeof resp) == 413 &&
                  strstr(resp, "limit of 100 bytes"),
              "the server with a 100-byte limit: %s", resp);
        CHECK(sc_http(ts_serve_port(s), "POST", "/v2/models/lib/infer", INFER2, resp, sizeof resp) == 200,
              "the first server took the second's limit: %s", resp);
        ts_serve_stop(t);
    }
    ts_serve_stop(s);
    ts_serve_stop(NULL);
}

/* int8 directories from tessera quantize (calibrated and dynamic): /v1 answers as tessera predict
 * on the same directory (the same int8 programs); a broken quantization record stops the start. */
static void test_quantized(void) {
    int rc = tessera(NULL, "quantize --model ft --calib data.tsv --samples 8 --out ftq --threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "quantize --model ft --dynamic --out ftd --threads 1");
    CHECK_RAN(rc, 0);
    int port;
    pid_t pid = start("--port 0 --model q=ftq d=ftd --max-batch 4", &port); /* m=ft, then a list */
    if (pid < 0) return;
    const char *texts[2] = {"the cat runs 7 times", "the fish swims 4 times"};
    char body[256], lines[128];
    snprintf(body, sizeof body, "{\"instances\":[\"%s\",\"%s\"]}", texts[0], texts[1]);
    snprintf(lines, sizeof lines, "%s\n%s\n", texts[0], texts[1]);
    const char *names[2] = {"q", "d"}, *dirs[2] = {"ftq", "ftd"};
    for (int m = 0; m < 2; m++) {
        char path[64], cmd[128], served[1 << 12], want[64];
        snprintf(path, sizeof path, "/v2/models/%s", names[m]);
        snprintf(want, sizeof want, "\"quantization\":\"int8 %s\",\"int8_ops\":", m ? "dynamic" : "static");
        const char *q = sc_http(port, "GET", path, NULL, resp, sizeof resp) == 200 ? strstr(resp, want) : NULL;
        CHECK(q && atoi(q + strlen(want)) >= 7, "%s metadata (want 7 int8 matmuls or more): %s", names[m], resp);
        snprintf(path, sizeof path, "/v1/models/%s:predict", names[m]);
        CHECK(sc_http(port, "POST", path, body, resp, sizeof resp) == 200, "%s predict: %s", names[m], resp);
        snprintf(served, sizeof served, "%s", sc_body(resp));
        snprintf(cmd, sizeof cmd, "predict --model %s --threads 1", dirs[m]);
        rc = tessera(lines, cmd);
        CHECK_RAN(rc, 0);
        const char *line = out_text, *at = served;
        for (int i = 0; i < 2 && at; i++) {
            char label[16] = "", want[64];
            double pr = -1;
            sscanf(line, "%15[^\t]\t%lf", label, &pr);
            snprintf(want, sizeof want, "\"label\":\"%s\",\"probability\":", label);
            at = strstr(at, want);
            CHECK(at && fabs(atof(at + strlen(want)) - pr) < 1e-4, "%s instance %d: predict says %s %.4f, serve %s",
                  dirs[m], i, label, pr, served);
            if (at) at++;
            line = strchr(line, '\n') + 1;
        }
    }
    stop(pid);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp -r '%s/ftq' '%s/ftbad' && sed -i 's/\"static\"/\"bogus\"/' '%s/ftbad/config.json'", dir,
             dir, dir);
    CHECK(system(cmd) == 0, "making a broken copy: %s", cmd);
    rc = tessera(NULL, "serve --model b=ftbad --port 0");
    CHECK_FAILS(rc, "\"quantization\" mode \"bogus\"");
}

/* The model served on the randomized device (the CPU plugin claiming a seeded half of the ops,
 * tests/test_cli_fallback.c): the answers are the CPU's, byte for byte, whatever the cuts. */
static void test_random_device(void) {
    char cwd[4000], plugin[4100];
    snprintf(plugin, sizeof plugin, "%s/plugins/libtessera-cpuplugin.so", getcwd(cwd, sizeof cwd) ? cwd : ".");
    if (access(plugin, R_OK) != 0) {
        tu_skip_part("no CPU plugin built beside ./tessera: the random device not served");
        return;
    }
    const char *body = "{\"instances\":[\"the cat runs 7 times\",\"the fish swims 4 times\",\"a dog\"]}";
    int port;
    pid_t pid = start("--port 0 --max-batch 4", &port);
    if (pid < 0) return;
    static char want[1 << 12];
    CHECK(sc_http(port, "POST", "/v1/models/m:predict", body, resp, sizeof resp) == 200, "cpu: %s", resp);
    snprintf(want, sizeof want, "%s", sc_body(resp));
    stop(pid);
    setenv("TESSERA_CPUPLUGIN_FRACTION", "0.5", 1);
    for (int seed = 0; seed < 3; seed++) {
        char args[4400], s[16];
        snprintf(s, sizeof s, "%d", seed);
        setenv("TESSERA_CPUPLUGIN_SEED", s, 1);
        snprintf(args, sizeof args, "--port 0 --max-batch 4 --quiet --backend-plugin '%s' --device cpuplugin", plugin);
        if ((pid = start(args, &port)) < 0) return;
        CHECK(sc_http(port, "POST", "/v1/models/m:predict", body, resp, sizeof resp) == 200, "seed %d: %s", seed, resp);
        CHECK(want[0] && !strcmp(want, sc_body(resp)), "seed %d: the random device answered\n%s\nthe CPU\n%s", seed,
              sc_body(resp), want);
        stop(pid);
    }
}

static void test_bad_start(void) {
    int rc = tessera(NULL, "serve --model m=nowhere --port 0");
    CHECK_FAILS(rc, "model nowhere: ");
    CHECK(rc == 2, "a model that cannot load: exit %d, want 2", rc);
    rc = tessera(NULL, "serve --model m=pre --port 0"); /* pretrained, not fine-tuned */
    CHECK_FAILS(rc, "not a fine-tuned model");
    rc = tessera(NULL, "serve --model =ft");
    CHECK_FAILS(rc, "NAME=DIR");
    rc = tessera(NULL, "serve --model m=ft --max-batch 0");
    CHECK_FAILS(rc, "--max-batch");
    CHECK(rc == 2, "a bad flag: exit %d", rc);
    rc = tessera(NULL, "serve");
    CHECK_FAILS(rc, "--model NAME=DIR... is required");
    rc = tessera(NULL, "serve --model m=ft --device cpu:0,cpu:1");
    CHECK_FAILS(rc, "--device \"cpu:0,cpu:1\": one device");
    rc = tessera(NULL, "serve --model m=ft --port 70000");
    CHECK_FAILS(rc, "--port 70000 is not from 0 to 65535");
    rc = tessera(NULL, "serve --model m=ft --bogus");
    CHECK_FAILS(rc, "unknown flag '--bogus'");
    /* the old spelling of --device, for one release: the notice, then on to the model's error */
    rc = tessera(NULL, "serve --model m=nowhere --devices cpu --port 0");
    CHECK_FAILS(rc, "model nowhere: ");
    CHECK(strstr(err_text, "--devices is now --device"), "the old spelling's notice: %s", err_text);
    write_str("serve.json", "{\"model\": [\"m=nowhere\"], \"port\": 0}");
    rc = tessera(NULL, "serve --config serve.json");
    CHECK_FAILS(rc, "model nowhere: ");
}

typedef struct soaker {
    int port, n, bad;
} soaker;

static void *soak_client(void *arg) {
    soaker *s = arg;
    char r[4096];
    for (int i = 0; i < s->n; i++)
        if (sc_http(s->port, "POST", "/v1/models/m:predict", "{\"instances\":[\"the mouse jumps 3 times\"]}", r,
                    sizeof r) != 200)
            s->bad++;
    return NULL;
}

/* n requests from 4 clients at once; the answers that were not 200. */
static int soak(int port, int n) {
    soaker s[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) s[i] = (soaker){.port = port, .n = n / 4}, pthread_create(&th[i], NULL, soak_client, &s[i]);
    int bad = 0;
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL), bad += s[i].bad;
    return bad;
}

static void test_soak(void) {
    int port;
    pid_t pid = start("--port 0 --max-batch 8 --max-delay-ms 1", &port);
    if (pid < 0) return;
    double t0 = sc_now();
    int bad = soak(port, 1000);
    long rss1 = sc_rss_kb(pid);
    bad += soak(port, 9000);
    long rss2 = sc_rss_kb(pid);
    printf("  10,000 requests in %.1f s; resident memory %ld kB after 1,000, %ld kB after 10,000 (%.3fx)\n",
           sc_now() - t0, rss1, rss2, (double)rss2 / (double)rss1);
    CHECK(bad == 0, "%d of 10,000 requests not answered 200", bad);
    CHECK(rss1 > 0 && rss2 <= 1.1 * rss1, "resident memory grew from %ld to %ld kB", rss1, rss2);
    stop(pid);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    int rc = cli_setup("ts_cli_serve");
    if (rc) return rc;
    rc = tessera(NULL, "serve --model m=x --port 0");
    if (strstr(err_text, "without its HTTP server")) tu_skip("tessera was built without its HTTP server");
    make_model();
    RUN(test_endpoints);
    RUN(test_bad_requests);
    RUN(test_malformed_http);
    RUN(test_slow_client);
    RUN(test_read_deadline);
    RUN(test_connection_limit);
    RUN(test_full_queue);
    RUN(test_batch_sizes);
    RUN(test_sigterm_under_load);
    RUN(test_qa);
    RUN(test_onnx);
    RUN(test_ocr);
    RUN(test_kill_restart);
    RUN(test_quantized);
    RUN(test_library);
    RUN(test_bad_start);
    RUN(test_random_device);
    if (tu_names) RUN(test_soak); /* only when named (ctest cli_serve_soak) */
    cli_cleanup("test_cli_serve");
    return tu_finish("test_cli_serve");
}
