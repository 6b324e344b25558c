/*
 * batcher.c — dynamic batching: each model has one queue of jobs (bounded: a full queue answers
 * 503) and one thread that waits for the first job, gathers more until --max-batch rows or
 * --max-delay-ms after the first arrived, runs them as one batch (model.c) and wakes each job's
 * waiting request. A question-answering job from /v1 (its own windows) runs alone.
 */
#include "serve/serve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void deadline_after(struct timespec *ts, double t_first, int delay_ms) {
    double at = t_first + delay_ms / 1000.0, now = ts_seconds();
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    double wait = at > now ? at - now : 0;
    long ns = rt.tv_nsec + (long)(wait * 1e9);
    ts->tv_sec = rt.tv_sec + ns / 1000000000L;
    ts->tv_nsec = ns % 1000000000L;
}

static int queued_rows(const serve_model *m) {
    int r = 0;
    for (const serve_job *j = m->head; j; j = j->next) r += j->squad ? m->sig.max_batch : j->in.rows;
    return r;
}

/* Take the next batch off the queue (m->mu held): jobs from the head while their rows fit. */
static int take_batch(serve_model *m, serve_job **jobs) {
    int n = 0, rows = 0;
    while (m->head) {
        serve_job *j = m->head;
        if (n && (m->one_job || j->squad || jobs[0]->squad || rows + j->in.rows > m->sig.max_batch)) break;
        jobs[n++] = j;
        rows += j->in.rows;
        m->head = j->next;
        if (!m->head) m->tail = NULL;
        m->depth--;
    }
    return n;
}

static void *batcher_main(void *arg) {
    serve_model *m = arg;
    serve_job **jobs = m->batch_jobs;
    double *waited = m->batch_waited;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->head && !m->stop) pthread_cond_wait(&m->arrived, &m->mu);
        if (!m->head) break; /* stopping with the queue empty */
        struct timespec until;
        deadline_after(&until, m->head->t_enq, m->max_delay_ms);
        while (!m->stop && queued_rows(m) < m->sig.max_batch &&
               pthread_cond_timedwait(&m->arrived, &m->mu, &until) != ETIMEDOUT) {
        }
        int n = take_batch(m, jobs);
        pthread_mutex_unlock(&m->mu);
        double t0 = ts_seconds();
        for (int k = 0; k < n; k++) jobs[k]->t_start = t0, waited[k] = t0 - jobs[k]->t_enq;
        int ran = 0, rows = serve_model_run(m, jobs, n, &ran);
        double t1 = ts_seconds();
        serve_metrics_batch(&m->metrics, rows, ran, waited, n, t1 - t0);
        pthread_mutex_lock(&m->mu);
        for (int k = 0; k < n; k++) {
            jobs[k]->t_done = t1;
            jobs[k]->done = 1;
        }
        pthread_cond_broadcast(&m->finished);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

ts_status serve_batcher_start(serve_model *m) {
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->arrived, NULL);
    pthread_cond_init(&m->finished, NULL);
    serve_metrics_init(&m->metrics);
    m->batch_jobs = malloc((size_t)m->sig.max_batch * sizeof *m->batch_jobs);
    m->batch_waited = malloc((size_t)m->sig.max_batch * sizeof *m->batch_waited);
    if (!m->batch_jobs || !m->batch_waited || pthread_create(&m->thread, NULL, batcher_main, m) != 0)
        return ts_set_error(TS_ERR_RUNTIME, "cannot start a thread");
    m->started = 1;
    return TS_OK;
}

void serve_batcher_stop(serve_model *m) {
    if (!m->started) return;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_broadcast(&m->arrived);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->arrived);
    pthread_cond_destroy(&m->finished);
    serve_metrics_destroy(&m->metrics);
    free(m->batch_jobs), free(m->batch_waited);
    m->batch_jobs = NULL, m->batch_waited = NULL;
    m->started = 0;
}

ts_status serve_submit(serve_model *m, serve_job *j) {
    pthread_mutex_lock(&m->mu);
    if (m->depth >= m->queue_cap) {
        pthread_mutex_unlock(&m->mu);
        return ts_set_error(TS_ERR_RUNTIME, "model %s: the queue is full (%d requests); try again", m->name,
                            m->queue_cap);
    }
    j->t_enq = ts_seconds();
    j->next = NULL;
    if (m->tail) m->tail->next = j;
    else m->head = j;
    m->tail = j;
    m->depth++;
    pthread_cond_signal(&m->arrived);
    while (!j->done) pthread_cond_wait(&m->finished, &m->mu);
    pthread_mutex_unlock(&m->mu);
    return TS_OK;
}

void serve_job_free(serve_job *j) {
    serve_tensors_free(&j->in);
    for (int k = 0; k < SERVE_MAX_IO; k++) ts_tensor_free(j->tin[k]), ts_tensor_free(j->tout[k]);
    ts_image_free(j->image);
    ts_ocr_lines_free(j->lines, j->nlines);
    ts_squad_free(j->squad);
    free(j->out[0]), free(j->out[1]);
    memset(j, 0, sizeof *j);
}
