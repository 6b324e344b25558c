/*
 * bench/serve_load.c — load on `tessera serve` (issue 28): N concurrent clients against a server
 * this program starts on the loopback address, each sending KServe v2 infer requests (one row of
 * --seq tokens) on a new connection, bounded by --requests and --seconds. Three runs: one client
 * with batching off (--max-batch 1: the one-request-at-a-time rate), N clients with batching
 * off, N clients with batching on (--max-batch B, --max-delay-ms D). Each prints throughput,
 * latency p50 / p90 / p99, the mean batch the server formed (its /metrics), the server's start
 * time, the CPU seconds the server and the clients (this process) spent during the load, and the
 * server's resident memory after it. A fourth run puts the edges users hit under load beside the
 * plain one (batching on): --slow clients that send their bodies a byte every 0.5 s (each cut by
 * the server's --read-timeout 3, then sending again) and, a second into the run, --flood
 * connections at once past --max-connections (clients + slow + 8); the run lasts 6 s whatever
 * --requests says: it prints how each flood connection
 * was answered (503 with Retry-After, or 200 where a slot was free) and the slowest answer, and the
 * slow connections the server cut, while the ordinary clients' rate and latency are measured as
 * before. Beside the same model's raw ts_program_run throughput (rows a
 * second, the median of 6 runs after a warm-up) at batch 1, at B, and at the mean batch formed as
 * the server runs it (its batch sizes 1, 2, 4, ... up to B, the rows padded to the next or run in
 * parts where that is a fifth cheaper, by the same rule as apps/serve/model.c) and unpadded (a
 * program of exactly that batch).
 *
 * Usage: serve_load [--model DIR] [--clients N (32)] [--requests R (4000)] [--seconds S (30)]
 *                   [--seq T (128)] [--max-batch B (32)] [--max-delay-ms D (5)] [--threads N]
 *                   [--layers L (2) --hidden H (128): the made model's shape (heads: H / 64 from 768, else 2)]
 *                   [--slow S (16)] [--flood F (200)]
 *                   [--smoke: 4 clients, 200 requests, 5 s, a 1-layer model, 4 slow, 50 flood]
 * Without --model it makes a 2-layer, 128-wide BERT classifier with random weights (the demo
 * spam filter's shape) over data/bert/vocab.txt in a temporary folder.
 */
#include "tessera_apps.h"

#include "bench_util.h"
#include "../tests/serve_client.h"

#include <pthread.h>
#include <sys/resource.h>

static int g_clients = 32, g_requests = 4000, g_seq = 128, g_batch = 32, g_delay = 5, g_threads = 0, g_layers = 2,
           g_hidden = 128;
static double g_seconds = 30;
static int g_slow = 16, g_flood = 200;
static const char *g_model;
static char g_dir[256];

/* A random-weight classifier of g_layers x g_hidden into g_dir/model. 0 or -1. */
static int make_model(char *path, size_t cap) {
    char vocab[1024];
    snprintf(vocab, sizeof vocab, "%s/data/bert/vocab.txt", TS_SOURCE_DIR);
    snprintf(g_dir, sizeof g_dir, "/tmp/serve_load_XXXXXX");
    if (!mkdtemp(g_dir)) return perror("mkdtemp"), -1;
    snprintf(path, cap, "%s/model", g_dir);
    ts_bert_config cfg;
    ts_bert_config_default(&cfg);
    cfg.num_hidden_layers = g_layers, cfg.hidden_size = g_hidden, cfg.num_attention_heads = g_hidden >= 768 ? g_hidden / 64 : 2;
    cfg.intermediate_size = 4 * g_hidden, cfg.num_labels = 2, cfg.head = TS_BERT_SEQ_CLASSIFICATION;
    ts_bert_config run = cfg;
    ts_bert_config_inference(&run, TS_F32);
    const char *fetch[7];
    int nf;
    ts_program *p = NULL;
    ts_bert_infer_opts bo = {.struct_size = sizeof bo, .cfg = &run, .batch = 1, .seq = 16, .seed = 1, .device = "cpu",
                             .name = "serve_load", .config_path = "(made)", .inputs = "(none)"};
    char *labels[2] = {"ham", "spam"};
    ts_model_meta meta = {.max_len = g_seq, .lowercase = 1, .labels = labels, .nlabels = 2};
    if (ts_bert_infer_build(&bo, &p, fetch, &nf, NULL) != TS_OK || ts_model_save_dir(path, p, &cfg, vocab, &meta)) {
        fprintf(stderr, "serve_load: making a model: %s\n", ts_last_error());
        ts_program_free(p);
        return -1;
    }
    ts_program_free(p);
    return 0;
}

typedef struct load {
    int port, nclients, slow, flood, max_requests;
    double until;
    int slow_cut, flood_503, flood_200, flood_none; /* the edges' outcomes */
    int refused; /* ordinary requests answered 503 (the edges' run: while the flood held the free places) */
    double flood_worst;
    int next, done, errors;
    double *lat;
    char *body;
    pthread_mutex_t mu;
} load;

static void *client(void *arg) {
    load *L = arg;
    static __thread char resp[1 << 14];
    for (;;) {
        pthread_mutex_lock(&L->mu);
        int i = L->next < L->max_requests && now() < L->until ? L->next++ : -1;
        pthread_mutex_unlock(&L->mu);
        if (i < 0) break;
        double t0 = now();
        int code = sc_http(L->port, "POST", "/v2/models/m/infer", L->body, resp, sizeof resp);
        double t = now() - t0;
        pthread_mutex_lock(&L->mu);
        if (code == 200) L->lat[L->done++] = t;
        else if (code == 503 && L->flood) L->refused++;
        else L->errors++;
        pthread_mutex_unlock(&L->mu);
    }
    return NULL;
}

/* One slow sender until the load ends: a request's headers, then its body a byte every 0.5 s
 * until the server cuts it (counted), then again. */
static void *slow_main(void *arg) {
    load *L = arg;
    const char *head = "POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n";
    while (now() < L->until) {
        int fd = sc_connect(L->port);
        if (fd < 0) break;
        struct timeval tv = {0, 500000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        char buf[512];
        ssize_t k = send(fd, head, strlen(head), MSG_NOSIGNAL);
        while (k > 0 && now() < L->until) {
            if (send(fd, "1", 1, MSG_NOSIGNAL) != 1 || recv(fd, buf, sizeof buf, 0) >= 0) { /* answered or cut */
                pthread_mutex_lock(&L->mu);
                L->slow_cut++;
                pthread_mutex_unlock(&L->mu);
                break;
            }
        }
        close(fd);
    }
    return NULL;
}

/* A second into the load, L->flood connections opened at once, then a health request on each:
 * how each was answered, and the slowest answer (from the first connect). */
static void *flood_main(void *arg) {
    load *L = arg;
    usleep(1000000);
    int n = L->flood, *fd = malloc((size_t)n * sizeof *fd);
    double t0 = now();
    for (int i = 0; i < n; i++) fd[i] = sc_connect(L->port); /* all open at once, then each asks */
    usleep(100000);
    for (int i = 0; i < n; i++) {
        const char *req = "GET /v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        if (fd[i] >= 0 && send(fd[i], req, strlen(req), MSG_NOSIGNAL) < 0) close(fd[i]), fd[i] = -1;
    }
    for (int i = 0; i < n; i++) {
        char buf[1024] = "";
        int code = -1;
        if (fd[i] >= 0) {
            struct timeval tv = {5, 0};
            setsockopt(fd[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
            ssize_t k = recv(fd[i], buf, sizeof buf - 1, 0);
            buf[k > 0 ? k : 0] = 0;
            if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1) code = -1;
            close(fd[i]);
        }
        double t = now() - t0;
        L->flood_worst = t > L->flood_worst ? t : L->flood_worst;
        L->flood_503 += code == 503 && strstr(buf, "Retry-After"), L->flood_200 += code == 200;
        L->flood_none += code != 200 && code != 503;
    }
    free(fd);
    return NULL;
}

/* A v2 infer body of one row of g_seq tokens. */
static char *make_body(void) {
    size_t cap = (size_t)g_seq * 8 + 256, n = 0;
    char *b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "{\"inputs\":[{\"name\":\"input_ids\",\"shape\":[1,%d],\"datatype\":"
                                          "\"INT64\",\"data\":[101", g_seq);
    for (int t = 1; t < g_seq; t++) n += (size_t)snprintf(b + n, cap - n, ",%d", t == g_seq - 1 ? 102 : 1000 + t * 7 % 997);
    snprintf(b + n, cap - n, "]}]}");
    return b;
}

/* The mean of a histogram family in the /metrics text (its _sum over its _count). */
static double metric_mean(const char *text, const char *fam) {
    char key[128];
    snprintf(key, sizeof key, "%s_sum{model=\"m\"} ", fam);
    const char *s = strstr(text, key);
    snprintf(key, sizeof key, "%s_count{model=\"m\"} ", fam);
    const char *c = strstr(text, key);
    double sum = s ? atof(strchr(s, ' ') + 1) : 0, cnt = c ? atof(c + strlen(key)) : 0;
    return cnt > 0 ? sum / cnt : 0;
}

typedef struct result {
    double rps, p50, p90, p99, batch, compute;
    double start_s, server_cpu, client_cpu, rss_mib;
    int n, errors;
    int slow_cut, flood_503, flood_200, flood_none, refused;
    double flood_worst;
} result;

/* CPU seconds (user + system) of process pid so far, from /proc. */
static double proc_cpu(pid_t pid) {
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *at = strrchr(text, ')'); /* the fields after the command name: 3 is the state */
    unsigned long long ut = 0, st = 0;
    if (at) sscanf(at + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st);
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Resident MiB of process pid (VmRSS). */
static double proc_rss_mib(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    double kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kib = atof(line + 6);
    if (f) fclose(f);
    return kib / 1024;
}

static double self_cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

/* One run: a server with --max-batch mb, nclients clients; edges: beside them g_slow slow senders
 * and g_flood connections past the limit. */
static int run_load(const char *model, int mb, int nclients, int edges, result *r) {
    char args[2048], cli[1024], limit[96] = "";
    snprintf(cli, sizeof cli, "%s/tessera", TS_BUILD_DIR);
    if (edges) snprintf(limit, sizeof limit, " --max-connections %d --read-timeout 3", nclients + g_slow + 8);
    snprintf(args, sizeof args, "--model m=%s --port 0 --max-batch %d --max-delay-ms %d --queue %d%s%.0d%s", model, mb,
             g_delay, nclients * 2 + 8, g_threads ? " --threads " : "", g_threads, limit);
    int port, rc;
    double s0 = now();
    pid_t pid = sc_start(cli, g_dir[0] ? g_dir : "/tmp", args, &port, &rc);
    double start_s = now() - s0;
    if (pid < 0) {
        char path[512], text[2048] = "";
        snprintf(path, sizeof path, "%s/serve.err", g_dir[0] ? g_dir : "/tmp");
        FILE *f = fopen(path, "r");
        if (f) text[fread(text, 1, sizeof text - 1, f)] = 0, fclose(f);
        if (strstr(text, "without its HTTP server")) printf("serve_load: skipped, %s", text), exit(77);
        return fprintf(stderr, "serve_load: tessera serve %s did not start (exit %d): %s\n", args, rc, text), -1;
    }
    /* the edges' run lasts 6 s whatever --requests says, so that the slow senders meet the read timeout */
    int cap = edges ? 1 << 20 : g_requests;
    load L = {.port = port, .nclients = nclients, .max_requests = cap, .lat = malloc((size_t)cap * sizeof(double)),
              .body = make_body()};
    pthread_mutex_init(&L.mu, NULL);
    int nslow = edges ? g_slow : 0, nside = nslow + (edges && g_flood > 0);
    pthread_t th[nclients], side[nside > 0 ? nside : 1];
    L.flood = edges ? g_flood : 0;
    double t0 = now(), srv0 = proc_cpu(pid), cli0 = self_cpu();
    L.until = t0 + (edges ? 6 : g_seconds);
    for (int i = 0; i < nslow; i++) pthread_create(&side[i], NULL, slow_main, &L);
    if (nside > nslow) pthread_create(&side[nslow], NULL, flood_main, &L);
    for (int i = 0; i < nclients; i++) pthread_create(&th[i], NULL, client, &L);
    for (int i = 0; i < nclients; i++) pthread_join(th[i], NULL);
    L.until = 0; /* the slow senders stop */
    for (int i = 0; i < nside; i++) pthread_join(side[i], NULL);
    double took = now() - t0, srv = proc_cpu(pid) - srv0, cli_cpu = self_cpu() - cli0, rss = proc_rss_mib(pid);
    static char metrics[1 << 16];
    sc_http(port, "GET", "/metrics", NULL, metrics, sizeof metrics);
    sc_stop(pid, SIGTERM);
    *r = (result){.rps = L.done / took, .n = L.done, .errors = L.errors,
                  .batch = metric_mean(metrics, "tessera_serve_batch_size"),
                  .compute = metric_mean(metrics, "tessera_serve_compute_seconds"), .start_s = start_s,
                  .server_cpu = srv, .client_cpu = cli_cpu, .rss_mib = rss, .slow_cut = L.slow_cut,
                  .flood_503 = L.flood_503, .flood_200 = L.flood_200, .flood_none = L.flood_none,
                  .flood_worst = L.flood_worst, .refused = L.refused};
    qsort(L.lat, (size_t)L.done, sizeof *L.lat, cmp_double);
    if (L.done) {
        r->p50 = L.lat[L.done / 2] * 1e3, r->p90 = L.lat[(int)(L.done * 0.9)] * 1e3;
        r->p99 = L.lat[(int)(L.done * 0.99)] * 1e3;
    }
    free(L.lat), free(L.body);
    pthread_mutex_destroy(&L.mu);
    return 0;
}

/* Seconds per ts_program_run of the server's program for batch rows of the bucket holding g_seq. */
static double raw_run(const char *model, int batch) {
    ts_bert_config cfg = {.struct_size = sizeof cfg};
    ts_model_meta meta;
    ts_tokenizer *tok = ts_model_load_dir(model, &cfg, &meta);
    if (!tok) return fprintf(stderr, "serve_load: %s\n", ts_last_error()), -1;
    ts_bert_config_inference(&cfg, TS_F32);
    int max_seq = meta.max_len > 0 ? meta.max_len : cfg.max_position_embeddings, seq = 16;
    while (seq < g_seq && seq < max_seq) seq *= 2;
    if (seq > max_seq) seq = max_seq;
    const char *fetch[7];
    int nf;
    ts_program *p = NULL;
    ts_bert_infer_opts bo = {.struct_size = sizeof bo, .cfg = &cfg, .batch = batch, .seq = seq, .seed = 1,
                             .device = "cpu", .threads = g_threads, .name = "serve_load", .config_path = model,
                             .inputs = "(raw)"};
    double best = -1;
    ts_batch_buf bb;
    if (ts_bert_infer_build(&bo, &p, fetch, &nf, NULL) == TS_OK && ts_batch_buf_init(&bb, batch, seq, 0)) {
        for (int i = 0; i < batch * seq; i++)
            bb.b.input_ids[i] = 1000 + i % 997, bb.b.token_type_ids[i] = 0, bb.b.attention_mask[i] = 1;
        double runs[7];
        for (int k = 0; k < 7; k++) {
            double t0 = now();
            if (ts_batch_buf_feed(&bb, p, 0) != TS_OK || ts_program_run(p) != TS_OK) break;
            runs[k] = now() - t0;
        }
        best = median_inplace(runs + 1, 6);
        ts_batch_buf_free(&bb);
    }
    ts_program_free(p);
    ts_tokenizer_free(tok);
    ts_model_meta_free(&meta);
    return best;
}

/* Seconds to run `rows` rows as the server does, from t[k], the seconds of its batch size k
 * (sizes[k]; nk of them); the parts into parts[]. */
static double as_server(int rows, const int *sizes, const double *t, int nk, char *parts, size_t cap) {
    double best[rows + 1];
    int pick[rows + 1];
    best[0] = 0;
    for (int r = 1; r <= rows; r++) {
        best[r] = -1;
        for (int k = 0; k < nk; k++) {
            double c = t[k] + best[r > sizes[k] ? r - sizes[k] : 0];
            if (best[r] < 0 || c < best[r]) best[r] = c, pick[r] = k;
        }
    }
    double total = 0;
    size_t o = 0;
    parts[0] = 0;
    for (int r = rows; r > 0;) {
        int whole = 0;
        while (whole + 1 < nk && sizes[whole] < r) whole++;
        int k = best[r] < 0.8 * t[whole] ? pick[r] : whole;
        total += t[k];
        o += (size_t)snprintf(parts + o, cap - o, "%s%d", o ? " + " : "", sizes[k]);
        if (o >= cap) o = cap - 1;
        r = r > sizes[k] ? r - sizes[k] : 0;
    }
    return total;
}

static void print_row(const char *what, const result *r) {
    printf("%-28s %9.1f %8.2f %8.2f %8.2f %7.1f %6d %5d %7.1f %7.1f %7.1f %8.0f\n", what, r->rps, r->p50, r->p90, r->p99,
           r->batch, r->n, r->errors, r->start_s, r->server_cpu, r->client_cpu, r->rss_mib);
}

static int parse(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--smoke")) {
            g_clients = 4, g_requests = 200, g_seconds = 5, g_layers = 1, g_hidden = 32, g_seq = 32, g_slow = 4;
            g_flood = 50;
            continue;
        }
        if (!v) return fprintf(stderr, "serve_load: %s needs a value\n", a), 2;
        i++;
        if (!strcmp(a, "--model")) g_model = v;
        else if (!strcmp(a, "--clients")) g_clients = atoi(v);
        else if (!strcmp(a, "--requests")) g_requests = atoi(v);
        else if (!strcmp(a, "--seconds")) g_seconds = atof(v);
        else if (!strcmp(a, "--seq")) g_seq = atoi(v);
        else if (!strcmp(a, "--max-batch")) g_batch = atoi(v);
        else if (!strcmp(a, "--max-delay-ms")) g_delay = atoi(v);
        else if (!strcmp(a, "--threads")) g_threads = atoi(v);
        else if (!strcmp(a, "--layers")) g_layers = atoi(v);
        else if (!strcmp(a, "--hidden")) g_hidden = atoi(v);
        else if (!strcmp(a, "--slow")) g_slow = atoi(v);
        else if (!strcmp(a, "--flood")) g_flood = atoi(v);
        else return fprintf(stderr, "serve_load: unknown flag %s\n", a), 2;
    }
    if (g_clients < 1 || g_requests < 1 || g_seq < 2 || g_batch < 1 || g_seconds <= 0 || g_slow < 0 || g_flood < 0)
        return fprintf(stderr, "serve_load: --clients, --requests, --seq, --max-batch, --seconds must be positive\n"), 2;
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (parse(argc, argv)) return 2;
    char made[512];
    const char *model = g_model;
    if (!model) {
        if (make_model(made, sizeof made)) return 1;
        model = made;
    }
    printf("serve_load: %s, requests of 1 x %d tokens, at most %d requests and %.0f s a run\n", model, g_seq,
           g_requests, g_seconds);
    printf("%-28s %9s %8s %8s %8s %7s %6s %5s %7s %7s %7s %8s\n", "run", "req/s", "p50 ms", "p90 ms", "p99 ms", "batch",
           "done", "errs", "start s", "srv cpu", "cli cpu", "RSS MiB");
    result one, off, on, edge;
    char what[64];
    if (run_load(model, 1, 1, 0, &one)) return 1;
    print_row("1 client, batching off", &one);
    snprintf(what, sizeof what, "%d clients, batching off", g_clients);
    if (run_load(model, 1, g_clients, 0, &off)) return 1;
    print_row(what, &off);
    snprintf(what, sizeof what, "%d clients, max-batch %d", g_clients, g_batch);
    if (run_load(model, g_batch, g_clients, 0, &on)) return 1;
    print_row(what, &on);
    snprintf(what, sizeof what, "%d clients, %d slow, %d flood", g_clients, g_slow, g_flood);
    if (run_load(model, g_batch, g_clients, 1, &edge)) return 1;
    print_row(what, &edge);
    printf("  beside it: %d slow senders cut by --read-timeout 3 in all; %d flood connections past --max-connections "
           "%d (clients + slow + 8): %d answered 503 with Retry-After, %d answered 200 (a slot was free), %d not "
           "answered, the slowest answer %.0f ms after the flood began; %d of the clients' requests answered 503 "
           "while the flood held the free places (the clients do not wait the Retry-After)\n", edge.slow_cut, g_flood,
           g_clients + g_slow + 8, edge.flood_503, edge.flood_200, edge.flood_none, edge.flood_worst * 1e3,
           edge.refused);
    printf("  edges vs plain (both batching on): %.2fx the requests a second, p99 %.2fx\n",
           on.rps > 0 ? edge.rps / on.rps : 0, on.p99 > 0 ? edge.p99 / on.p99 : 0);
    /* raw: batch 1, B, and the mean batch formed run as the server runs it (the program of the next
     * batch size it compiled) and unpadded (a program of exactly that batch) */
    int formed = (int)(on.batch + 0.5) < 1 ? 1 : (int)(on.batch + 0.5), sizes[16], nk = 0, at_formed = -1;
    double t[16];
    for (int b = 1; nk < 15; b *= 2) { /* the server's batch sizes, each run raw */
        sizes[nk] = b < g_batch ? b : g_batch;
        if (sizes[nk] == formed) at_formed = nk;
        if ((t[nk] = raw_run(model, sizes[nk])) <= 0) return 1;
        if (sizes[nk++] == g_batch) break;
    }
    char parts[128];
    double t1 = t[0], tb = t[nk - 1], tp = as_server(formed, sizes, t, nk, parts, sizeof parts);
    double tf = at_formed >= 0 ? t[at_formed] : raw_run(model, formed);
    printf("raw ts_program_run: batch 1 %.1f rows/s; batch %d %.1f rows/s; the mean formed, %d rows, as the server "
           "runs them (%s) %.1f rows/s, by a batch-%d program %.1f rows/s\n",
           t1 > 0 ? 1 / t1 : 0, g_batch, tb > 0 ? g_batch / tb : 0, formed, parts, tp > 0 ? formed / tp : 0, formed,
           tf > 0 ? formed / tf : 0);
    printf("batching on vs one request at a time: %.2fx; serving vs raw at the batch formed: %.0f%% (as the server "
           "runs them), %.0f%% (unpadded); batching off vs raw batch 1: %.0f%%\n", one.rps > 0 ? on.rps / one.rps : 0,
           tp > 0 ? 100 * on.rps * tp / formed : 0, tf > 0 ? 100 * on.rps * tf / formed : 0,
           t1 > 0 ? 100 * off.rps * t1 : 0);
    if (g_dir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd) != 0) fprintf(stderr, "serve_load: could not remove %s\n", g_dir);
    }
    return on.errors + off.errors + one.errors + edge.errors + edge.flood_none ? 1 : 0;
}
