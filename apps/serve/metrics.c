/*
 * metrics.c — what `tessera serve` counts, and its Prometheus text format (GET /metrics):
 * requests by model and HTTP status, errors (status >= 400), latency histograms of the time a
 * request waited in its queue, the batch's compute and the whole request, the histograms of batch
 * sizes (rows run together) and of the rows the programs ran for it (the batch padded to the
 * batch sizes compiled, in one run or a few), and each queue's depth.
 */
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double LAT_LE[SERVE_LAT_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                 0.25,  0.5,    1,     2.5,  5,     10,  30};
static const double BATCH_LE[SERVE_BATCH_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 128, 256};

void serve_metrics_init(serve_metrics *m) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
}

void serve_metrics_destroy(serve_metrics *m) { pthread_mutex_destroy(&m->mu); }

static void observe(serve_hist *h, const double *le, int nle, double v) {
    int i = 0;
    while (i < nle && v > le[i]) i++;
    h->count[i]++;
    h->sum += v;
    h->n++;
}

void serve_metrics_request(serve_metrics *m, int code, double total_s) {
    pthread_mutex_lock(&m->mu);
    int i = 0;
    while (i < m->ncodes && m->code[i] != code) i++;
    if (i == m->ncodes && m->ncodes < 16) m->code[m->ncodes++] = code;
    if (i < m->ncodes) m->by_code[i]++;
    if (code == 200) observe(&m->total, LAT_LE, SERVE_LAT_BUCKETS, total_s);
    pthread_mutex_unlock(&m->mu);
}

void serve_metrics_batch(serve_metrics *m, int rows, int ran, const double *queue_s, int njobs, double compute_s) {
    pthread_mutex_lock(&m->mu);
    for (int k = 0; k < njobs; k++) observe(&m->queue, LAT_LE, SERVE_LAT_BUCKETS, queue_s[k]);
    observe(&m->compute, LAT_LE, SERVE_LAT_BUCKETS, compute_s);
    observe(&m->batch, BATCH_LE, SERVE_BATCH_BUCKETS, rows);
    observe(&m->ran, BATCH_LE, SERVE_BATCH_BUCKETS, ran);
    pthread_mutex_unlock(&m->mu);
}

static void hist_lines(FILE *f, const char *family, const char *model, const serve_hist *h, const double *le,
                       int nle) {
    uint64_t cum = 0;
    for (int i = 0; i < nle; i++) {
        cum += h->count[i];
        fprintf(f, "%s_bucket{model=\"%s\",le=\"%g\"} %llu\n", family, model, le[i], (unsigned long long)cum);
    }
    fprintf(f, "%s_bucket{model=\"%s\",le=\"+Inf\"} %llu\n", family, model, (unsigned long long)h->n);
    fprintf(f, "%s_sum{model=\"%s\"} %.9g\n%s_count{model=\"%s\"} %llu\n", family, model, h->sum, family, model,
            (unsigned long long)h->n);
}

/* One histogram family (which: 0 queue, 1 compute, 2 total, 3 batch, 4 ran) over every model. */
static void hist_family(FILE *f, serve_metrics *const *m, const char *const *names, int n, int which) {
    static const char *const fam[5] = {"tessera_serve_queue_seconds", "tessera_serve_compute_seconds",
                                       "tessera_serve_request_seconds", "tessera_serve_batch_size",
                                       "tessera_serve_batch_run_size"};
    static const char *const help[5] = {"Seconds a request waited in its model's queue.",
                                        "Seconds a batch took to run.",
                                        "Seconds from a request's arrival to its answer (status 200).",
                                        "Rows run together in one batch.",
                                        "Rows the programs ran for a batch (padded to the batch sizes compiled)."};
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", fam[which], help[which], fam[which]);
    for (int i = 0; i < n; i++) {
        if (!names[i][0]) continue; /* the server's own requests have no batches */
        const serve_hist *h[5] = {&m[i]->queue, &m[i]->compute, &m[i]->total, &m[i]->batch, &m[i]->ran};
        hist_lines(f, fam[which], names[i], h[which], which >= 3 ? BATCH_LE : LAT_LE,
                   which >= 3 ? SERVE_BATCH_BUCKETS : SERVE_LAT_BUCKETS);
    }
}

char *serve_metrics_text(serve_metrics *const *m, const char *const *names, const int *depth, int n) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    for (int i = 0; i < n; i++) pthread_mutex_lock(&m[i]->mu);
    fputs("# HELP tessera_serve_requests_total Requests answered, by model and HTTP status.\n"
          "# TYPE tessera_serve_requests_total counter\n", f);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < m[i]->ncodes; c++)
            fprintf(f, "tessera_serve_requests_total{model=\"%s\",code=\"%d\"} %llu\n", names[i], m[i]->code[c],
                    (unsigned long long)m[i]->by_code[c]);
    fputs("# HELP tessera_serve_errors_total Requests answered with a status of 400 or more.\n"
          "# TYPE tessera_serve_errors_total counter\n", f);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < m[i]->ncodes; c++)
            if (m[i]->code[c] >= 400)
                fprintf(f, "tessera_serve_errors_total{model=\"%s\",code=\"%d\"} %llu\n", names[i], m[i]->code[c],
                        (unsigned long long)m[i]->by_code[c]);
    for (int w = 0; w < 5; w++) hist_family(f, m, names, n, w);
    fputs("# HELP tessera_serve_queue_depth Requests waiting in a model's queue.\n"
          "# TYPE tessera_serve_queue_depth gauge\n", f);
    for (int i = 0; i < n; i++)
        if (names[i][0]) fprintf(f, "tessera_serve_queue_depth{model=\"%s\"} %d\n", names[i], depth[i]);
    for (int i = 0; i < n; i++) pthread_mutex_unlock(&m[i]->mu);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
