/*
 * pipeline.c — a training graph run as a pipeline of stages over several devices (model
 * parallelism): ts_compile with stage devices.
 *
 * The graph (forward placed on stages by ts_graph_stage_begin, backward placed by ts_backward,
 * the optimizer built with accumulation over M >= 2 micro-batches) is cut into one program per
 * stage. Every node gets a stage and a phase:
 *   forward   the nodes before the backward pass,                once per micro-batch;
 *   backward  the backward pass and the gradient accumulation,   once per micro-batch;
 *   update    the rest of the optimizer (sum of squares, clipping coefficient, updates,
 *             counters), once per step, in segments: a maximal run of consecutive nodes of one
 *             stage, the segments in the graph's order.
 * A value used by another stage is sent there (copied device to device) into a buffer with a
 * slot per micro-batch of the step; a value a stage's forward makes for its own backward is kept
 * in a buffer with a slot per micro-batch in flight. A persistent value (parameter, optimizer
 * state) lives on every stage that uses it; the stage whose nodes write it holds the master copy,
 * and the others get a fresh copy at the start of every step (BERT's tied word embeddings: the
 * embedding on the first stage, the MLM decoder on the last; the decoder's gradient is sent back
 * and summed on the first, before the update).
 *
 * A step: for m in 0 .. M-1, each stage's forward then backward, in the 1F1B order (one forward,
 * one backward in the steady state; stage s keeps at most min(M, S - s) micro-batches in flight),
 * each device running its stages from a host thread of its own, with its own OpenMP team; then the
 * update segments in order. Every node computes what it computes on one device (the same inputs,
 * the same order of accumulation, dropout keyed by the run's step), so with the same thread count
 * per device the results are bit for bit those of the whole graph on one device.
 *
 * This file runs a compiled pipeline (the device threads, a step, feeds and reads, the reports);
 * pipeline_compile.c builds it. Calls: exec.c (running the stages' programs); called by
 * program.c and pipeline_compile.c (the threads).
 */
#include "runtime/pipeline_impl.h"

#include <stdio.h>

/* ------------------------------------------------------------------ running */

static uint8_t *done_at(ts_pipeline *pl, int s, int bwd, int m) { return &pl->done[((size_t)s * 2 + bwd) * pl->M + m]; }

/* Are task t's dependencies met in done[S][2][M]: its forward (for a backward), a free slot for
 * what its forward keeps, and every value it receives for that phase made? */
int ts_pipeline_deps_met(const ts_pipeline *pl, const uint8_t *done, const task *t) {
#define DONE(s_, b_, m_) done[((size_t)(s_) * 2 + (b_)) * pl->M + (m_)]
    int s = t->stage, m = t->m;
    if (t->bwd && !DONE(s, 0, m)) return 0;
    if (!t->bwd && m >= pl->inflight[s] && !DONE(s, 1, m - pl->inflight[s])) return 0;
    for (int i = 0; i < pl->nxf; i++) {
        const xfer *x = &pl->xf[i];
        if (x->to != s || !x->per_micro || (!t->bwd && !x->to_fwd)) continue;
        if (!DONE(x->from, x->phase, m)) return 0;
    }
    return 1;
#undef DONE
}

/* (called with the lock held) */
static int ready(ts_pipeline *pl, const task *t) { return ts_pipeline_deps_met(pl, pl->done, t); }

static ts_status fail(ts_pipeline *pl, ts_status s) {
    pthread_mutex_lock(&pl->mu);
    if (!pl->error) {
        pl->error = s;
        snprintf(pl->errmsg, sizeof pl->errmsg, "%s", ts_last_error());
    }
    pthread_cond_broadcast(&pl->cv);
    pthread_mutex_unlock(&pl->mu);
    return s;
}

/* Select the slots of micro-batch m in stage s's program: kept values at m mod in-flight, received
 * values and fed inputs at m. */
static void select_slots(ts_pipeline *pl, int s, int m) {
    ts_exec *p = pl->st[s];
    for (int i = 0; i < p->nslots; i++) {
        const ts_slotted *sl = &p->slots[i];
        ts_slot_select(p, sl, m % sl->nslots); /* kept values: in-flight slots; received: M */
    }
}

/* Copy value v of stage `from` (as it is now) to stage `to` (its current slot). */
static ts_status send(ts_pipeline *pl, int v, int from, int to) {
    ts_exec *a = pl->st[from], *b = pl->st[to];
    return ts_dev_copy(b->dev, b->vals[v].buf, a->dev, a->vals[v].buf, ts_val_bytes(&a->g->vals[v]));
}

/* Copy fetch i's value out of stage s into its host slices (micro-batches m0 .. m1). */
static ts_status fetch_out(ts_pipeline *pl, int i, int s, int m0, int m1) {
    int v = pl->fetch[i];
    size_t bytes = ts_val_bytes(&pl->g->vals[v]);
    for (int m = m0; m <= m1; m++) {
        char *dst = (char *)pl->fetch_host[i] + (size_t)(pl->step_in_call * pl->M + m) * bytes;
        ts_status st = ts_dev_copy_out(pl->st[s]->dev, dst, pl->st[s]->vals[v].buf, bytes);
        if (st) return st;
    }
    return TS_OK;
}

/* Write micro-batch index m into stage s's copy of the micro-batch counter. */
static ts_status set_micro(ts_pipeline *pl, int s, int m) {
    ts_exec *p = pl->st[s];
    if (pl->micro_v < 0 || !p->owned[pl->micro_v]) return TS_OK;
    float f = (float)m;
    return ts_dev_copy_in(p->dev, p->vals[pl->micro_v].buf, &f, sizeof f);
}

static ts_status run_task(ts_pipeline *pl, const task *t) {
    int s = t->stage, m = t->m, ph = t->bwd ? TS_PH_BWD : TS_PH_FWD;
    ts_exec *p = pl->st[s];
    ts_status st = TS_OK;
    select_slots(pl, s, m);
    for (int i = 0; i < pl->nhi && !st; i++) { /* this micro-batch's slice of what is fed */
        const host_in *h = &pl->hi[i];
        if (h->stage != s || !h->per_micro || h->first_phase != ph) continue;
        size_t bytes = ts_val_bytes(&p->g->vals[h->v]);
        st = ts_dev_copy_in(p->dev, p->vals[h->v].buf,
                            (char *)pl->feed_host[h->v] + (size_t)(pl->step_in_call * pl->M + m) * bytes, bytes);
    }
    if (!st && t->bwd) st = set_micro(pl, s, m);
    for (int i = 0; i < pl->nxf && !st; i++) { /* what other devices sent for this phase, from the host */
        const xfer *x = &pl->xf[i];
        if (x->to != s || !x->per_micro || !x->staged || x->to_fwd == t->bwd) continue;
        st = ts_dev_copy_in(p->dev, ts_buf_at(x->slot->base, (uint64_t)m * x->slot->stride),
                            x->staged + (size_t)m * x->slot->bytes, x->slot->bytes);
    }
    double t0 = ts_seconds();
    if (!st) st = ts_exec_run_phase(p, ph, pl->base_step + (uint64_t)m);
    pl->busy[s] += ts_seconds() - t0;
    for (int i = 0; i < pl->nxf && !st; i++) { /* slot m of each receiver (or of its staging), unread yet */
        const xfer *x = &pl->xf[i];
        if (x->from != s || x->phase != ph || !x->per_micro) continue;
        ts_exec *r = pl->st[x->to];
        if (x->staged)
            st = ts_dev_copy_out(p->dev, x->staged + (size_t)m * x->slot->bytes, p->vals[x->v].buf, x->slot->bytes);
        else /* a stage on the same device: this thread owns both */
            st = ts_dev_copy(r->dev, ts_buf_at(x->slot->base, (uint64_t)m * x->slot->stride), p->dev,
                             p->vals[x->v].buf, x->slot->bytes);
    }
    for (int i = 0; i < pl->nfetch && !st; i++)
        if (pl->fetch_stage[i] == s && pl->fetch_phase[i] == ph) st = fetch_out(pl, i, s, m, m);
    return st;
}

/* The loop of device d's thread: wait for a step, run its tasks in order as they become ready. */
typedef struct worker_arg {
    ts_pipeline *pl;
    int d;
} worker_arg;

static void *worker(void *arg) {
    worker_arg *wa = arg;
    ts_pipeline *pl = wa->pl;
    int d = wa->d, gen = 0;
    free(wa);
    ts_set_threads(pl->threads[d]);
    for (;;) {
        pthread_mutex_lock(&pl->mu);
        while (pl->generation == gen && !pl->quit) pthread_cond_wait(&pl->cv, &pl->mu);
        if (pl->quit) {
            pthread_mutex_unlock(&pl->mu);
            return NULL;
        }
        gen = pl->generation;
        pthread_mutex_unlock(&pl->mu);
        const task *list = pl->tasks + (size_t)d * 2 * pl->S * pl->M;
        for (int k = 0; k < pl->ntasks[d]; k++) {
            pthread_mutex_lock(&pl->mu);
            while (!pl->error && !ready(pl, &list[k])) pthread_cond_wait(&pl->cv, &pl->mu);
            int stop = pl->error != TS_OK;
            pthread_mutex_unlock(&pl->mu);
            if (stop) break;
            /* run_task touches only this stage's buffers and the receivers' current slots: the
             * receivers' slots of micro-batch m are not read before this task is marked done */
            ts_status st = run_task(pl, &list[k]);
            if (st) {
                fail(pl, st);
                break;
            }
            pthread_mutex_lock(&pl->mu);
            *done_at(pl, list[k].stage, list[k].bwd, list[k].m) = 1;
            pthread_cond_broadcast(&pl->cv);
            pthread_mutex_unlock(&pl->mu);
        }
        pthread_mutex_lock(&pl->mu);
        pl->finished++;
        pthread_cond_broadcast(&pl->cv);
        pthread_mutex_unlock(&pl->mu);
    }
}

/* One optimizer step: refresh the copies, the micro-batches through the stages, the update. */
static ts_status run_step(ts_pipeline *pl) {
    ts_status st = TS_OK;
    for (int i = 0; i < pl->nrp && !st; i++) st = send(pl, pl->rp[i].v, pl->rp[i].from, pl->rp[i].to);
    if (st) return st;
    pthread_mutex_lock(&pl->mu);
    memset(pl->done, 0, (size_t)pl->S * 2 * pl->M);
    pl->error = TS_OK;
    pl->finished = 0;
    pl->generation++;
    pthread_cond_broadcast(&pl->cv);
    while (pl->finished < pl->ndev) pthread_cond_wait(&pl->cv, &pl->mu);
    st = pl->error;
    pthread_mutex_unlock(&pl->mu);
    if (st) return ts_err(st, "%s", pl->errmsg);
    /* the update, segment by segment in the graph's order; each sees the step's last micro-batch */
    for (int s = 0; s < pl->S && !st; s++) st = set_micro(pl, s, pl->M - 1);
    for (int k = 0; k < pl->nus && !st; k++) {
        const useg *u = &pl->us[k];
        ts_exec *sp = pl->st[u->stage];
        for (int i = 0; i < pl->nhi && !st; i++) { /* fed once a step: the step's last slice */
            const host_in *h = &pl->hi[i];
            if (h->stage != u->stage || h->per_micro || h->first_phase != u->phase) continue;
            size_t bytes = ts_val_bytes(&sp->g->vals[h->v]);
            st = ts_dev_copy_in(sp->dev, sp->vals[h->v].buf,
                                (char *)pl->feed_host[h->v] + (size_t)(pl->step_in_call * pl->M + pl->M - 1) * bytes,
                                bytes);
        }
        ts_set_threads(pl->threads[pl->stage_dev[u->stage]]);
        double t0 = ts_seconds();
        if (!st) st = ts_exec_run_phase(sp, u->phase, pl->base_step + (uint64_t)pl->M - 1);
        pl->busy[u->stage] += ts_seconds() - t0;
        for (int i = 0; i < pl->nxf && !st; i++)
            if (pl->xf[i].from == u->stage && pl->xf[i].phase == u->phase) st = send(pl, pl->xf[i].v, u->stage, pl->xf[i].to);
        for (int i = 0; i < pl->nfetch && !st; i++)
            if (pl->fetch_stage[i] == u->stage && pl->fetch_phase[i] == u->phase) st = fetch_out(pl, i, u->stage, 0, pl->M - 1);
    }
    return st;
}

ts_status ts_pipeline_run(ts_pipeline *pl, uint64_t *step) {
    double t0 = ts_seconds();
    ts_status st = TS_OK;
    for (int j = 0; j * pl->M < pl->iters && !st; j++) {
        pl->step_in_call = j;
        pl->base_step = *step;
        st = run_step(pl);
        if (!st) *step += (uint64_t)pl->M;
    }
    pl->wall += ts_seconds() - t0;
    ts_set_threads(pl->num_threads);
    return st;
}

ts_status ts_pipeline_feed(ts_pipeline *pl, int v, const ts_tensor *t) {
    if (!pl->feed_host[v]) return TS_OK; /* no stage reads it */
    memcpy(pl->feed_host[v], ts_tensor_data((ts_tensor *)t), ts_tensor_nbytes(t));
    return TS_OK;
}

/* The stage holding value v's master copy: its writer's, else any stage holding it. */
static int reader_stage(const ts_pipeline *pl, int v) {
    if (pl->home[v] >= 0) return pl->home[v];
    for (int s = 0; s < pl->S; s++)
        if (pl->st[s]->owned[v]) return s;
    return -1;
}

ts_status ts_pipeline_read(const ts_pipeline *pl, int v, void *host) {
    int s = reader_stage(pl, v);
    if (s < 0) return ts_err(TS_ERR_NOT_FOUND, "'%s' is held by no stage of the pipeline",
                             pl->g->vals[v].name ? pl->g->vals[v].name : "a value");
    const ts_exec *sp = pl->st[s];
    return ts_dev_copy_out(sp->dev, host, sp->vals[v].buf, ts_val_bytes(&sp->g->vals[v]));
}

ts_status ts_pipeline_write(ts_pipeline *pl, int v, const void *host) {
    ts_status st = TS_OK;
    for (int s = 0; s < pl->S && !st; s++) {
        ts_exec *sp = pl->st[s];
        if (sp->owned[v]) st = ts_dev_copy_in(sp->dev, sp->vals[v].buf, host, ts_val_bytes(&sp->g->vals[v]));
    }
    return st;
}

void ts_pipeline_free(ts_pipeline *pl) {
    if (!pl) return;
    if (pl->th) {
        pthread_mutex_lock(&pl->mu);
        pl->quit = 1;
        pthread_cond_broadcast(&pl->cv);
        pthread_mutex_unlock(&pl->mu);
        for (int d = 0; d < pl->ndev; d++)
            if (pl->th[d]) pthread_join(pl->th[d], NULL);
        free(pl->th);
    }
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->cv);
    for (int s = 0; pl->st && s < pl->S; s++) ts_exec_free(pl->st[s]);
    if (pl->feed_host && pl->st)
        for (int v = 0; v < pl->nvals; v++) free(pl->feed_host[v]);
    free(pl->feed_host);
    free(pl->st);
    free(pl->stage_dev);
    free(pl->inflight);
    free(pl->home);
    for (int i = 0; pl->xf && i < pl->nxf; i++) free(pl->xf[i].staged);
    free(pl->xf);
    free(pl->rp);
    free(pl->hi);
    free(pl->us);
    free(pl->fetch_stage);
    free(pl->fetch_phase);
    free(pl->tasks);
    free(pl->ntasks);
    free(pl->done);
    free(pl->busy);
    if (pl->fetch_host)
        for (int i = 0; i < pl->nfetch; i++) free(pl->fetch_host[i]);
    free(pl->fetch_host);
    free(pl->fetch);
    free(pl->params);
    free(pl->owned);
    ts_graph_free(pl->g);
    free(pl);
}

ts_face ts_pipeline_face(const ts_pipeline *pl) {
    return (ts_face){pl->g, pl->fetch, pl->nfetch, pl->params, pl->nparams, pl->owned, pl->iters, pl->fetch_host, &pl->mem};
}

ts_status ts_pipeline_start_threads(ts_pipeline *pl) {
    pl->th = calloc((size_t)pl->ndev, sizeof(pthread_t));
    if (!pl->th) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory starting the pipeline's threads");
    for (int d = 0; d < pl->ndev; d++) {
        worker_arg *wa = malloc(sizeof *wa); /* the threads started so far: joined by ts_pipeline_free */
        if (!wa) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory starting the pipeline's threads");
        *wa = (worker_arg){pl, d};
        if (pthread_create(&pl->th[d], NULL, worker, wa) != 0) {
            free(wa);
            return ts_err(TS_ERR_RUNTIME, "ts_compile: cannot start the thread of device %s", pl->dev[d]->name);
        }
    }
    return TS_OK;
}

/* ------------------------------------------------------------------ what the public API reports */

int ts_pipeline_num_stages(const ts_pipeline *pl) { return pl->S; }

const ts_exec *ts_pipeline_stage_exec(const ts_pipeline *pl, int s) { return pl->st[s]; }

void ts_pipeline_stage_info(const ts_pipeline *pl, int stage, ts_stage_info *out) {
    const ts_exec *sp = pl->st[stage];
    out->device = sp->dev->name;
    out->threads = pl->threads[pl->stage_dev[stage]];
    out->mem = ts_stage_memory_of(&sp->mem);
    out->in_flight = pl->inflight[stage];
    out->busy_s = pl->busy[stage];
}

void ts_pipeline_stats(const ts_pipeline *pl, double *wall_s, double *bubble) {
    *wall_s = pl->wall, *bubble = 0;
    if (pl->wall <= 0) return;
    double busy = 0;
    for (int s = 0; s < pl->S; s++) busy += pl->busy[s];
    *bubble = 1 - busy / (pl->ndev * pl->wall);
}

void ts_pipeline_reset_stats(ts_pipeline *pl) {
    pl->wall = 0;
    for (int s = 0; s < pl->S; s++) pl->busy[s] = 0;
}
