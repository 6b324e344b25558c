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
 */
#include "runtime/program.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "train/train.h"

#define MAX_DEV 64

/* A value copied from one stage to another after the producing phase of each micro-batch (or of
 * the update). */
typedef struct xfer {
    int v, from, to;
    int phase;      /* the producer's phase: TS_PH_FWD, TS_PH_BWD, or an update segment's */
    int per_micro;  /* made in a forward or backward: one slot per micro-batch at the receiver */
    int to_fwd;     /* the receiver's forward reads it (else only its backward) */
    const ts_slotted *slot; /* the receiver's slotted buffer (per_micro) */
} xfer;

/* A persistent value whose master copy is on stage `from`, refreshed on stage `to` each step. */
typedef struct replica {
    int v, from, to;
} replica;

/* A fed input read by a stage: per micro-batch (slot m) or once a step (the step's last slice). */
typedef struct host_in {
    int v, stage, per_micro, first_phase;
} host_in;

/* A segment of the update: stage and its program's phase, in graph order. */
typedef struct useg {
    int stage, phase;
} useg;

/* One task of a device thread: a stage's forward or backward of micro-batch m. */
typedef struct task {
    int stage, bwd, m;
} task;

struct ts_pipeline {
    int S, M;                  /* stages; micro-batches per step */
    int nvals;                 /* of the master graph */
    int ndev;                  /* distinct devices */
    ts_device *dev[MAX_DEV];
    int threads[MAX_DEV];
    int *stage_dev;            /* [S] */
    int *inflight;             /* [S]: micro-batches a stage keeps: min(M, S - s) */
    ts_program **st;           /* [S] */
    int *home;                 /* [nvals]: the stage of a persistent value's master copy, or -1 */
    xfer *xf;
    int nxf;
    replica *rp;
    int nrp;
    host_in *hi;
    int nhi;
    useg *us;
    int nus;
    int *fetch_stage, *fetch_phase; /* [nfetch] */
    int micro_v;               /* the micro-batch counter state, or -1 */
    void **feed_host;          /* [nvals]: fed input data, [iters, ...] */
    /* the step being run, and its progress */
    uint64_t base_step;        /* program step of micro-batch 0 of this step */
    int step_in_call;          /* the call's j-th step: fetch and feed slices j M .. */
    task *tasks;               /* per device: its order of tasks within a step */
    int *ntasks;
    uint8_t *done;             /* [S][2][M] */
    ts_status error;
    char errmsg[1024];
    double *busy;              /* [S]: seconds spent on each stage */
    double wall;
    /* the device threads */
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int generation, finished, quit;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ------------------------------------------------------------------ running */

static uint8_t *done_at(ts_pipeline *pl, int s, int bwd, int m) { return &pl->done[((size_t)s * 2 + bwd) * pl->M + m]; }

/* Are task t's dependencies met in done[S][2][M]: its forward (for a backward), a free slot for
 * what its forward keeps, and every value it receives for that phase made? */
static int deps_met(const ts_pipeline *pl, const uint8_t *done, const task *t) {
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
static int ready(ts_pipeline *pl, const task *t) { return deps_met(pl, pl->done, t); }

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
    ts_program *p = pl->st[s];
    for (int i = 0; i < p->nslots; i++) {
        const ts_slotted *sl = &p->slots[i];
        ts_slot_select(p, sl, m % sl->nslots); /* kept values: in-flight slots; received: M */
    }
}

/* Copy value v of stage `from` (as it is now) to stage `to` (its current slot). */
static ts_status send(ts_pipeline *pl, int v, int from, int to) {
    ts_program *a = pl->st[from], *b = pl->st[to];
    return ts_dev_copy(b->dev, b->vals[v].buf, a->dev, a->vals[v].buf, ts_val_bytes(&a->g->vals[v]));
}

/* Copy fetch i's value out of stage s into its host slices (micro-batches m0 .. m1). */
static ts_status fetch_out(ts_program *p, int i, int s, int m0, int m1) {
    ts_pipeline *pl = p->pipe;
    int v = p->fetch[i];
    size_t bytes = ts_val_bytes(&p->g->vals[v]);
    for (int m = m0; m <= m1; m++) {
        char *dst = (char *)p->fetch_host[i] + (size_t)(pl->step_in_call * pl->M + m) * bytes;
        ts_status st = ts_dev_copy_out(pl->st[s]->dev, dst, pl->st[s]->vals[v].buf, bytes);
        if (st) return st;
    }
    return TS_OK;
}

/* Write micro-batch index m into stage s's copy of the micro-batch counter. */
static ts_status set_micro(ts_pipeline *pl, int s, int m) {
    ts_program *p = pl->st[s];
    if (pl->micro_v < 0 || !p->owned[pl->micro_v]) return TS_OK;
    float f = (float)m;
    return ts_dev_copy_in(p->dev, p->vals[pl->micro_v].buf, &f, sizeof f);
}

static ts_status run_task(ts_program *master, const task *t) {
    ts_pipeline *pl = master->pipe;
    int s = t->stage, m = t->m, ph = t->bwd ? TS_PH_BWD : TS_PH_FWD;
    ts_program *p = pl->st[s];
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
    double t0 = now_s();
    if (!st) st = ts_program_run_phase(p, ph, pl->base_step + (uint64_t)m);
    pl->busy[s] += now_s() - t0;
    for (int i = 0; i < pl->nxf && !st; i++) { /* into the receiver's slot m, which no task reads yet */
        const xfer *x = &pl->xf[i];
        if (x->from != s || x->phase != ph || !x->per_micro) continue;
        ts_program *r = pl->st[x->to];
        st = ts_dev_copy(r->dev, ts_buf_at(x->slot->base, (uint64_t)m * x->slot->stride), p->dev, p->vals[x->v].buf,
                         x->slot->bytes);
    }
    for (int i = 0; i < master->nfetch && !st; i++)
        if (pl->fetch_stage[i] == s && pl->fetch_phase[i] == ph) st = fetch_out(master, i, s, m, m);
    return st;
}

/* The loop of device d's thread: wait for a step, run its tasks in order as they become ready. */
typedef struct worker_arg {
    ts_program *p;
    int d;
} worker_arg;

static void *worker(void *arg) {
    worker_arg *wa = arg;
    ts_program *p = wa->p;
    ts_pipeline *pl = p->pipe;
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
            ts_status st = run_task(p, &list[k]);
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
static ts_status run_step(ts_program *p) {
    ts_pipeline *pl = p->pipe;
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
        ts_program *sp = pl->st[u->stage];
        for (int i = 0; i < pl->nhi && !st; i++) { /* fed once a step: the step's last slice */
            const host_in *h = &pl->hi[i];
            if (h->stage != u->stage || h->per_micro || h->first_phase != u->phase) continue;
            size_t bytes = ts_val_bytes(&sp->g->vals[h->v]);
            st = ts_dev_copy_in(sp->dev, sp->vals[h->v].buf,
                                (char *)pl->feed_host[h->v] + (size_t)(pl->step_in_call * pl->M + pl->M - 1) * bytes,
                                bytes);
        }
        ts_set_threads(pl->threads[pl->stage_dev[u->stage]]);
        double t0 = now_s();
        if (!st) st = ts_program_run_phase(sp, u->phase, pl->base_step + (uint64_t)pl->M - 1);
        pl->busy[u->stage] += now_s() - t0;
        for (int i = 0; i < pl->nxf && !st; i++)
            if (pl->xf[i].from == u->stage && pl->xf[i].phase == u->phase) st = send(pl, pl->xf[i].v, u->stage, pl->xf[i].to);
        for (int i = 0; i < p->nfetch && !st; i++)
            if (pl->fetch_stage[i] == u->stage && pl->fetch_phase[i] == u->phase) st = fetch_out(p, i, u->stage, 0, pl->M - 1);
    }
    return st;
}

ts_status ts_pipeline_run(ts_program *p) {
    ts_pipeline *pl = p->pipe;
    double t0 = now_s();
    ts_status st = TS_OK;
    for (int j = 0; j * pl->M < p->iters && !st; j++) {
        pl->step_in_call = j;
        pl->base_step = p->step;
        st = run_step(p);
        if (!st) p->step += (uint64_t)pl->M;
    }
    pl->wall += now_s() - t0;
    ts_set_threads(p->num_threads);
    return st;
}

ts_status ts_pipeline_feed(ts_program *p, int v, const ts_tensor *t) {
    ts_pipeline *pl = p->pipe;
    if (!pl->feed_host[v]) return TS_OK; /* no stage reads it */
    memcpy(pl->feed_host[v], ts_tensor_data((ts_tensor *)t), ts_tensor_nbytes(t));
    return TS_OK;
}

ts_status ts_pipeline_fetch(ts_program *p, int v, ts_tensor **out) {
    const ts_val *x = &p->g->vals[v];
    for (int i = 0; i < p->nfetch; i++) {
        if (p->fetch[i] != v) continue;
        if (x->ndim == TS_MAX_DIMS)
            return ts_err(TS_ERR_SHAPE, "ts_program_fetch: '%s' has %d dims; with device iterations it would need "
                          "one more than TS_MAX_DIMS", x->name, x->ndim);
        int64_t shape[TS_MAX_DIMS + 1] = {p->iters};
        memcpy(shape + 1, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *out = ts_tensor_from(x->dtype, x->ndim + 1, shape, p->fetch_host[i]);
        return *out ? TS_OK : ts_err(TS_ERR_NOMEM, "ts_program_fetch: out of memory for '%s'", x->name);
    }
    ts_tensor *t = ts_tensor_new(x->dtype, x->ndim, x->shape);
    if (!t) return ts_err(TS_ERR_NOMEM, "ts_program_fetch: out of memory for '%s'", x->name);
    ts_status st = ts_pipeline_read(p, v, ts_tensor_data(t));
    if (st) ts_tensor_free(t), t = NULL;
    *out = t;
    return st;
}

/* The stage holding value v's master copy: its writer's, else any stage holding it. */
static int reader_stage(const ts_pipeline *pl, int v) {
    if (pl->home[v] >= 0) return pl->home[v];
    for (int s = 0; s < pl->S; s++)
        if (pl->st[s]->owned[v]) return s;
    return -1;
}

ts_status ts_pipeline_read(const ts_program *p, int v, void *host) {
    const ts_pipeline *pl = p->pipe;
    int s = reader_stage(pl, v);
    if (s < 0) return ts_err(TS_ERR_NOT_FOUND, "'%s' is held by no stage of the pipeline",
                             p->g->vals[v].name ? p->g->vals[v].name : "a value");
    const ts_program *sp = pl->st[s];
    return ts_dev_copy_out(sp->dev, host, sp->vals[v].buf, ts_val_bytes(&sp->g->vals[v]));
}

ts_status ts_pipeline_write(ts_program *p, int v, const void *host) {
    ts_pipeline *pl = p->pipe;
    ts_status st = TS_OK;
    for (int s = 0; s < pl->S && !st; s++) {
        ts_program *sp = pl->st[s];
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
    for (int s = 0; pl->st && s < pl->S; s++) ts_program_free(pl->st[s]);
    if (pl->feed_host && pl->st)
        for (int v = 0; v < pl->nvals; v++) free(pl->feed_host[v]);
    free(pl->feed_host);
    free(pl->st);
    free(pl->stage_dev);
    free(pl->inflight);
    free(pl->home);
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
    free(pl);
}

/* ------------------------------------------------------------------ compiling */

/* Per node of the master graph: stage and global phase (0 forward, 1 backward, 2 + k the k-th
 * update segment); per segment its stage. */
typedef struct placing {
    int *stage, *phase;
    int *seg_stage, nseg;
    int *local;        /* [nseg]: the segment's phase in its stage's program (2, 3, ...) */
    int *home;         /* per value: the stage of the nodes that write it (-1: none) */
} placing;

static int side_effect(const ts_node *n) { return (ts_op_get(n->op)->flags & TS_OPF_SIDE_EFFECT) != 0; }

/* The stage of value v for a node reading it: its producer's, a persistent value's home, or -1. */
static int value_stage(const ts_graph *g, const placing *pc, int v) {
    const ts_val *x = &g->vals[v];
    if (x->kind == TS_V_NODE) return pc->stage[x->node];
    return pc->home[v];
}

/* Stages and phases of the alive nodes (see the top of the file). */
static ts_status place_nodes(const ts_graph *g, const uint8_t *alive, placing *pc) {
    int nn = g->nnodes, nv = g->nvals;
    pc->stage = malloc(sizeof(int) * (size_t)(nn + 1));
    pc->phase = malloc(sizeof(int) * (size_t)(nn + 1));
    pc->home = malloc(sizeof(int) * (size_t)(nv + 1));
    pc->seg_stage = malloc(sizeof(int) * (size_t)(nn + 1));
    pc->local = malloc(sizeof(int) * (size_t)(nn + 1));
    uint8_t *micro = calloc((size_t)nv + 1, 1); /* values made once per micro-batch */
    if (!pc->stage || !pc->phase || !pc->home || !pc->seg_stage || !pc->local || !micro) abort();
    for (int v = 0; v < nv; v++) pc->home[v] = -1;
    /* parameters: where their gradient is complete */
    for (int v = 0; v < nv; v++) {
        int gv = g->vals[v].kind == TS_V_PARAM ? g->vals[v].grad : -1;
        if (gv >= 0 && g->vals[gv].kind == TS_V_NODE) pc->home[v] = g->nodes[g->vals[gv].node].stage;
    }
    int last_stage = -1, nseg_of[TS_MAX_STAGES] = {0};
    pc->nseg = 0;
    for (int i = 0; i < nn; i++) {
        pc->stage[i] = pc->phase[i] = -1;
        if (!alive[i]) continue;
        const ts_node *n = &g->nodes[i];
        /* per micro-batch: the forward, the backward, the accumulation and the gradient all-reduce's
         * start (which acts at the last micro-batch) */
        int per_micro = i < g->bwd_start || n->op == TS_OP_ACCUM_GRAD || (n->op == TS_OP_COMM_START && n->attr.i[2] == 0);
        for (int j = 0; j < n->nin && !per_micro; j++) per_micro = n->in[j] >= 0 && micro[n->in[j]];
        for (int k = 0; k < n->nout; k++) micro[n->out[k]] = (uint8_t)per_micro;
        int st = n->stage;
        if (st < 0 && side_effect(n) && n->in[0] >= 0) st = pc->home[n->in[0]];
        if (st < 0) /* where its inputs are: the latest of their stages */
            for (int j = 0; j < n->nin; j++)
                if (n->in[j] >= 0 && value_stage(g, pc, n->in[j]) > st) st = value_stage(g, pc, n->in[j]);
        if (st < 0) st = 0;
        pc->stage[i] = st;
        if (side_effect(n) && n->in[0] >= 0 && g->vals[n->in[0]].kind != TS_V_NODE) {
            int *h = &pc->home[n->in[0]];
            if (*h >= 0 && *h != st && g->vals[n->in[0]].kind != TS_V_PARAM)
                return ts_err(TS_ERR_UNSUPPORTED, "ts_compile: '%s' is written on pipeline stages %d and %d",
                              g->vals[n->in[0]].name ? g->vals[n->in[0]].name : "a state value", *h, st);
            *h = st;
        }
        if (i < g->bwd_start) {
            pc->phase[i] = TS_PH_FWD;
        } else if (per_micro) {
            pc->phase[i] = TS_PH_BWD;
        } else { /* the update: a new segment whenever the stage changes */
            if (st != last_stage) {
                pc->seg_stage[pc->nseg] = st;
                pc->local[pc->nseg] = TS_PH_UPD + nseg_of[st]++;
                pc->nseg++;
                last_stage = st;
            }
            pc->phase[i] = TS_PH_UPD + pc->nseg - 1;
        }
    }
    free(micro);
    return TS_OK;
}

static void placing_free(placing *pc) {
    free(pc->stage), free(pc->phase), free(pc->home), free(pc->seg_stage), free(pc->local);
}

/* A node's phase in its stage's program. */
static int local_phase(const placing *pc, int i) {
    return pc->phase[i] < TS_PH_UPD ? pc->phase[i] : pc->local[pc->phase[i] - TS_PH_UPD];
}

/* The order in which device d runs its stages' forwards and backwards in a step: a simulation of
 * the step where each device runs one ready task per round, backwards first (1F1B). */
static ts_status plan_tasks(ts_pipeline *pl) {
    int S = pl->S, M = pl->M, total = 2 * S * M, left = total;
    uint8_t *done = calloc((size_t)total, 1), *now = calloc((size_t)total, 1);
    int *nf = calloc((size_t)S, sizeof(int)), *nb = calloc((size_t)S, sizeof(int));
    pl->tasks = malloc(sizeof(task) * (size_t)pl->ndev * (size_t)total);
    pl->ntasks = calloc((size_t)pl->ndev, sizeof(int));
    if (!done || !now || !nf || !nb || !pl->tasks || !pl->ntasks) abort();
    ts_status st = TS_OK;
    while (left > 0) {
        int progress = 0;
        memcpy(now, done, (size_t)total);
        for (int d = 0; d < pl->ndev; d++) {
            task best = {-1, 0, 0};
            for (int s = 0; s < S; s++) { /* a backward if one is ready, the oldest micro-batch first */
                if (pl->stage_dev[s] != d || nb[s] >= M) continue;
                task t = {s, 1, nb[s]};
                if (deps_met(pl, done, &t) && (best.stage < 0 || t.m < best.m)) best = t;
            }
            for (int s = 0; s < S && best.stage < 0; s++) { /* else a forward, the earliest stage first */
                if (pl->stage_dev[s] != d || nf[s] >= M) continue;
                task t = {s, 0, nf[s]};
                if (deps_met(pl, done, &t)) best = t;
            }
            if (best.stage < 0) continue;
            pl->tasks[(size_t)d * total + pl->ntasks[d]++] = best;
            now[((size_t)best.stage * 2 + best.bwd) * M + best.m] = 1;
            (best.bwd ? nb : nf)[best.stage]++;
            left--, progress = 1;
        }
        memcpy(done, now, (size_t)total);
        if (!progress) {
            st = ts_err(TS_ERR_UNSUPPORTED, "ts_compile: the pipeline cannot be scheduled: a stage's forward reads a "
                        "value of a later stage (stages must follow the forward pass)");
            break;
        }
    }
    free(done), free(now), free(nf), free(nb);
    return st;
}

static ts_program *pipe_fail(ts_program *p, placing *pc, uint8_t *alive, uint8_t *pinned) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ts_last_error());
    ts_status code = ts_last_status();
    if (pc) placing_free(pc);
    free(alive), free(pinned);
    ts_program_free(p);
    ts_err(code ? code : TS_ERR_ARG, "%s", msg);
    return NULL;
}

ts_program *ts_pipeline_compile(const ts_graph *graph, const ts_compile_opts *o) {
    int S = graph->nstages > 0 ? graph->nstages : 1, M = graph->accum_steps;
    if (graph->opt_start < 0 || graph->bwd_start < 0) {
        ts_err(TS_ERR_ARG, "ts_compile: a pipeline (stage_devices) runs a training step: the graph needs "
               "ts_backward and ts_optimizer (compile with inference = 1 for one device)");
        return NULL;
    }
    if (M < 2) {
        ts_err(TS_ERR_ARG, "ts_compile: a pipeline runs a step as M >= 2 micro-batches: build the optimizer with "
               "accumulation_steps >= 2 (it has %d)", M);
        return NULL;
    }
    if (o->nstage_devices < S) {
        ts_err(TS_ERR_ARG, "ts_compile: the graph has %d pipeline stages but stage_devices names %d", S,
               o->nstage_devices);
        return NULL;
    }
    if (o->device_iterations < M || o->device_iterations % M) {
        ts_err(TS_ERR_ARG, "ts_compile: a pipeline's call runs whole steps: device_iterations %d must be a multiple of "
               "the %d micro-batches of a step", o->device_iterations, M);
        return NULL;
    }
    for (int i = 0; i < graph->nnodes; i++)
        if (graph->nodes[i].op == TS_OP_LOSS_SCALE) {
            ts_err(TS_ERR_UNSUPPORTED, "ts_compile: loss scaling (fp16) is not supported in a pipeline yet");
            return NULL;
        }
    ts_program *p = calloc(1, sizeof *p);
    ts_pipeline *pl = calloc(1, sizeof *pl);
    if (!p || !pl) abort();
    p->pipe = pl;
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->cv, NULL);
    pl->S = S, pl->M = M;
    p->iters = o->device_iterations;
    p->num_threads = o->num_threads;
    ts_graph *g = p->g = ts_graph_clone(graph);
    if (!g) abort();
    int nv = pl->nvals = g->nvals, nn = g->nnodes;
    placing pc = {0}, *pcp = NULL;
    uint8_t *alive = malloc((size_t)nn + 1), *pinned = calloc((size_t)nv + 1, 1);
    p->owned = calloc((size_t)nv + 1, 1);
    p->vals = calloc((size_t)nv + 1, sizeof *p->vals);
    p->params = malloc(sizeof(int) * (size_t)(nv + 1));
    p->fetch = malloc(sizeof(int) * (size_t)(o->nfetch + 1));
    pl->stage_dev = calloc((size_t)S, sizeof(int));
    pl->inflight = calloc((size_t)S, sizeof(int));
    pl->st = calloc((size_t)S, sizeof *pl->st);
    pl->busy = calloc((size_t)S, sizeof(double));
    pl->feed_host = calloc((size_t)nv + 1, sizeof(void *));
    pl->xf = malloc(sizeof(xfer) * (size_t)(nv + 1) * 2);
    pl->rp = malloc(sizeof(replica) * (size_t)(nv + 1));
    pl->hi = malloc(sizeof(host_in) * (size_t)(nv + 1));
    pl->done = calloc((size_t)S * 2 * (size_t)M, 1);
    if (!alive || !pinned || !p->owned || !p->vals || !p->params || !p->fetch || !pl->stage_dev || !pl->inflight ||
        !pl->st || !pl->busy || !pl->feed_host || !pl->xf || !pl->rp || !pl->hi || !pl->done)
        abort();
    memset(alive, 1, (size_t)nn);
    pl->micro_v = ts_lookup(g, TS_MICRO_STEP);

    /* devices: one thread each; the cores shared among the CPU devices unless a count is given */
    int ncpu = 0;
    for (int s = 0; s < S; s++) {
        ts_device *d = ts_device_get(o->stage_devices[s]);
        if (!d) return pipe_fail(p, NULL, alive, pinned);
        int k = 0;
        while (k < pl->ndev && pl->dev[k] != d) k++;
        if (k == pl->ndev) {
            if (pl->ndev == MAX_DEV) {
                ts_err(TS_ERR_ARG, "ts_compile: more than %d devices in a pipeline", MAX_DEV);
                return pipe_fail(p, NULL, alive, pinned);
            }
            pl->dev[pl->ndev++] = d;
            ncpu += d->api == &ts_backend_cpu_api;
        }
        pl->stage_dev[s] = k;
        pl->inflight[s] = M < S - s ? M : S - s;
    }
    int cores = ts_max_threads() / 4;
    for (int d = 0; d < pl->ndev; d++)
        pl->threads[d] = o->num_threads > 0 ? o->num_threads : cores / (ncpu ? ncpu : 1) > 0 ? cores / (ncpu ? ncpu : 1) : 1;

    /* fetches and gradients survive the passes; then dead code and fusion on the whole graph */
    for (int i = 0; i < o->nfetch; i++) {
        int v = ts_lookup(g, o->fetches[i] ? o->fetches[i] : "");
        if (v == TS_NONE) {
            ts_err(TS_ERR_NOT_FOUND, "ts_compile: fetch '%s' is not a named value of the graph",
                   o->fetches[i] ? o->fetches[i] : "(null)");
            return pipe_fail(p, NULL, alive, pinned);
        }
        pinned[v] = 1;
        p->fetch[p->nfetch++] = v;
    }
    for (int v = 0; v < nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM) continue;
        p->params[p->nparams++] = v;
        if (g->vals[v].grad >= 0) pinned[g->vals[v].grad] = 1;
    }
    ts_pass_dce(g, alive, pinned, 1);
    p->mem.fused = o->no_fusion ? 0 : ts_pass_fuse(g, alive, pinned, ncpu == pl->ndev); /* act: all built-in CPU */
    if (p->mem.fused) ts_pass_dce(g, alive, pinned, 1);
    if (place_nodes(g, alive, &pc) != TS_OK) return pipe_fail(p, &pc, alive, pinned);
    pcp = &pc;
    for (int i = 0; i < nn; i++)
        if (alive[i] && pc.stage[i] >= S) {
            ts_err(TS_ERR_ARG, "ts_compile: a node is on pipeline stage %d; stage_devices names %d", pc.stage[i], S);
            return pipe_fail(p, pcp, alive, pinned);
        }
    memcpy(pl->home = malloc(sizeof(int) * (size_t)(nv + 1)), pc.home, sizeof(int) * (size_t)nv);

    /* what each stage reads: received values, kept values, fed inputs, persistent values */
    uint8_t *reads = calloc((size_t)S * nv, 1), *sent = calloc((size_t)S * nv, 1), *recv = calloc((size_t)S * nv, 1);
    int *slots = calloc((size_t)S * nv, sizeof(int)), *first = malloc(sizeof(int) * (size_t)S * nv);
    int *maxread = malloc(sizeof(int) * (size_t)S * nv); /* latest node index reading it per stage */
    if (!reads || !sent || !recv || !slots || !first || !maxread) abort();
    for (size_t k = 0; k < (size_t)S * nv; k++) first[k] = 1 << 30, maxread[k] = -1;
    ts_status err = TS_OK;
    for (int i = 0; i < nn && !err; i++) {
        if (!alive[i]) continue;
        const ts_node *n = &g->nodes[i];
        int s = pc.stage[i], ph = pc.phase[i], lph = local_phase(&pc, i);
        for (int j = 0; j < n->nin && !err; j++) {
            int v = n->in[j];
            if (v < 0) continue;
            const ts_val *x = &g->vals[v];
            size_t sv = (size_t)s * nv + v;
            reads[sv] = 1;
            if (lph < first[sv]) first[sv] = lph;
            if (i > maxread[sv]) maxread[sv] = i;
            if (x->kind != TS_V_NODE) continue;
            int t = pc.stage[x->node], pph = pc.phase[x->node];
            if ((pph <= TS_PH_BWD) != (ph <= TS_PH_BWD)) {
                err = ts_err(TS_ERR_UNSUPPORTED, "ts_compile: %s is made %s and read %s: a pipeline passes values "
                             "between micro-batch phases and the update only through parameters and state",
                             x->name ? x->name : "a value", pph <= TS_PH_BWD ? "per micro-batch" : "by the update",
                             ph <= TS_PH_BWD ? "per micro-batch" : "by the update");
                break;
            }
            if (t == s) {
                if (pph == TS_PH_FWD && ph == TS_PH_BWD) slots[sv] = pl->inflight[s]; /* kept for the backward */
                continue;
            }
            if (!recv[sv]) {
                recv[sv] = 1;
                sent[(size_t)t * nv + v] = 1;
                xfer *xf = &pl->xf[pl->nxf++];
                *xf = (xfer){v, t, s, pph <= TS_PH_BWD ? pph : pc.local[pph - TS_PH_UPD], pph <= TS_PH_BWD, 0, NULL};
                if (xf->per_micro) slots[sv] = M;
            }
            if (ph == TS_PH_FWD) /* the receiver's forward reads it */
                for (int k = 0; k < pl->nxf; k++)
                    if (pl->xf[k].v == v && pl->xf[k].to == s) pl->xf[k].to_fwd = 1;
        }
    }
    pl->fetch_stage = malloc(sizeof(int) * (size_t)(p->nfetch + 1));
    pl->fetch_phase = malloc(sizeof(int) * (size_t)(p->nfetch + 1));
    if (!pl->fetch_stage || !pl->fetch_phase) abort();
    for (int i = 0; i < p->nfetch && !err; i++) {
        const ts_val *x = &g->vals[p->fetch[i]];
        pl->fetch_stage[i] = pl->fetch_phase[i] = -1;
        if (x->kind == TS_V_NODE && alive[x->node]) {
            pl->fetch_stage[i] = pc.stage[x->node];
            pl->fetch_phase[i] = local_phase(&pc, x->node);
            sent[(size_t)pl->fetch_stage[i] * nv + p->fetch[i]] = 1;
        } else if (x->kind != TS_V_PARAM && x->kind != TS_V_STATE) {
            err = ts_err(TS_ERR_UNSUPPORTED, "ts_compile: fetch '%s' is not made by the pipeline's step", x->name);
        }
    }
    /* fed inputs, and copies of persistent values whose master is on another stage */
    for (int s = 0; s < S && !err; s++)
        for (int v = 0; v < nv && !err; v++) {
            size_t sv = (size_t)s * nv + v;
            const ts_val *x = &g->vals[v];
            if (!reads[sv]) continue;
            if (x->kind == TS_V_INPUT) {
                int pm = first[sv] <= TS_PH_BWD;
                pl->hi[pl->nhi++] = (host_in){v, s, pm, first[sv]};
                if (pm) slots[sv] = M;
                if (!pl->feed_host[v] && !(pl->feed_host[v] = calloc((size_t)p->iters, ts_val_bytes(x) + 1)))
                    err = ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for input '%s'", x->name);
            } else if ((x->kind == TS_V_PARAM || x->kind == TS_V_STATE) && pc.home[v] >= 0 && pc.home[v] != s) {
                pl->rp[pl->nrp++] = (replica){v, pc.home[v], s};
                /* a copy is refreshed once a step: the update must not write it before another stage reads it */
                if (v != pl->micro_v && g->vals[v].kind == TS_V_STATE) {
                    int writer = -1;
                    for (int i = 0; i < nn; i++)
                        if (alive[i] && side_effect(&g->nodes[i]) && g->nodes[i].in[0] == v) writer = i;
                    if (writer >= 0 && maxread[sv] > writer && pc.phase[maxread[sv]] >= TS_PH_UPD)
                        err = ts_err(TS_ERR_UNSUPPORTED, "ts_compile: '%s' is written on stage %d and then read on "
                                     "stage %d in the same update", x->name ? x->name : "a state value", pc.home[v], s);
                }
            }
        }
    /* the update's segments */
    pl->us = malloc(sizeof(useg) * (size_t)(pc.nseg + 1));
    if (!pl->us) abort();
    for (int k = 0; k < pc.nseg; k++) pl->us[k] = (useg){pc.seg_stage[k], pc.local[k]};
    pl->nus = pc.nseg;

    /* each stage's program */
    int *phase = malloc(sizeof(int) * (size_t)(nn + 1));
    uint8_t *salive = malloc((size_t)nn + 1);
    if (!phase || !salive) abort();
    for (int s = 0; s < S && !err; s++) {
        int nph = TS_PH_UPD;
        for (int k = 0; k < pc.nseg; k++)
            if (pc.seg_stage[k] == s && pc.local[k] + 1 > nph) nph = pc.local[k] + 1;
        for (int i = 0; i < nn; i++) {
            salive[i] = alive[i] && pc.stage[i] == s;
            phase[i] = salive[i] ? local_phase(&pc, i) : 0;
        }
        ts_graph *gs = ts_graph_clone(g);
        if (!gs) abort();
        for (int v = 0; v < nv; v++)
            if (recv[(size_t)s * nv + v]) gs->vals[v].kind = TS_V_INPUT, gs->vals[v].node = -1;
        ts_stage_spec spec = {salive, phase, nph, slots + (size_t)s * nv, sent + (size_t)s * nv};
        ts_compile_opts so = {.num_threads = pl->threads[pl->stage_dev[s]], .memory_limit = o->memory_limit,
                              .no_fusion = 1};
        if (!(pl->st[s] = ts_compile_on(gs, pl->dev[pl->stage_dev[s]], &so, &spec))) err = ts_last_status();
    }
    free(phase), free(salive);
    for (int i = 0; i < pl->nxf && !err; i++) {
        xfer *x = &pl->xf[i];
        if (!x->per_micro) continue;
        for (int k = 0; k < pl->st[x->to]->nslots; k++)
            for (int j = 0; j < pl->st[x->to]->slots[k].nvals; j++)
                if (pl->st[x->to]->slots[k].vals[j] == x->v) x->slot = &pl->st[x->to]->slots[k];
        if (!x->slot) err = ts_err(TS_ERR_RUNTIME, "ts_compile: internal: no receive buffer for a sent value");
    }
    free(reads), free(sent), free(recv), free(slots), free(first), free(maxread);
    if (err) return pipe_fail(p, pcp, alive, pinned);

    /* the whole program: what its stages hold, its memory, its fetches */
    for (int s = 0; s < S; s++) {
        const ts_program *sp = pl->st[s];
        for (int v = 0; v < nv; v++) p->owned[v] |= sp->owned[v] && g->vals[v].kind != TS_V_NODE && g->vals[v].kind != TS_V_INPUT;
        p->mem.params += sp->mem.params, p->mem.grads += sp->mem.grads;
        p->mem.optimizer_state += sp->mem.optimizer_state, p->mem.activations += sp->mem.activations;
        p->mem.grad_buckets += sp->mem.grad_buckets;
        p->mem.workspace += sp->mem.workspace, p->mem.intermediates_total += sp->mem.intermediates_total;
        p->mem.weight_copies += sp->mem.weight_copies;
        p->mem.nodes += sp->mem.nodes;
    }
    p->fetch_host = calloc((size_t)p->nfetch + 1, sizeof(void *));
    if (!p->fetch_host) abort();
    for (int i = 0; i < p->nfetch; i++)
        if (!(p->fetch_host[i] = calloc((size_t)p->iters, ts_val_bytes(&g->vals[p->fetch[i]]) + 1))) {
            ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the fetches");
            return pipe_fail(p, pcp, alive, pinned);
        }
    if (plan_tasks(pl) != TS_OK) return pipe_fail(p, pcp, alive, pinned);
    pl->th = calloc((size_t)pl->ndev, sizeof(pthread_t));
    if (!pl->th) abort();
    for (int d = 0; d < pl->ndev; d++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) abort();
        *wa = (worker_arg){p, d};
        if (pthread_create(&pl->th[d], NULL, worker, wa) != 0) {
            free(wa);
            ts_err(TS_ERR_RUNTIME, "ts_compile: cannot start the thread of device %s", pl->dev[d]->name);
            return pipe_fail(p, pcp, alive, pinned);
        }
    }
    placing_free(&pc);
    free(alive), free(pinned);
    return p;
}

/* ------------------------------------------------------------------ what the public API reports */

int ts_program_num_stages(const ts_program *p) { return !p ? 0 : p->pipe ? p->pipe->S : 1; }

ts_status ts_program_stage_info(const ts_program *p, int stage, ts_stage_info *out) {
    if (!p || !out) return ts_err(TS_ERR_ARG, "ts_program_stage_info: NULL argument");
    if (stage < 0 || stage >= ts_program_num_stages(p))
        return ts_err(TS_ERR_ARG, "ts_program_stage_info: stage %d of %d", stage, ts_program_num_stages(p));
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    const ts_pipeline *pl = p->pipe;
    const ts_program *sp = pl ? pl->st[stage] : p;
    out->device = sp->dev->name;
    out->threads = pl ? pl->threads[pl->stage_dev[stage]] : sp->num_threads;
    out->mem = sp->mem;
    out->in_flight = pl ? pl->inflight[stage] : 1;
    out->busy_s = pl ? pl->busy[stage] : 0;
    return TS_OK;
}

ts_status ts_program_pipeline_stats(const ts_program *p, double *wall_s, double *bubble) {
    if (!p || !wall_s || !bubble) return ts_err(TS_ERR_ARG, "ts_program_pipeline_stats: NULL argument");
    const ts_pipeline *pl = p->pipe;
    *wall_s = pl ? pl->wall : 0, *bubble = 0;
    if (!pl || pl->wall <= 0) return TS_OK;
    double busy = 0;
    for (int s = 0; s < pl->S; s++) busy += pl->busy[s];
    *bubble = 1 - busy / (pl->ndev * pl->wall);
    return TS_OK;
}

void ts_program_pipeline_reset_stats(ts_program *p) {
    if (!p || !p->pipe) return;
    p->pipe->wall = 0;
    for (int s = 0; s < p->pipe->S; s++) p->pipe->busy[s] = 0;
}
