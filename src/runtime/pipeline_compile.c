/*
 * pipeline_compile.c — ts_compile with stage devices: the graph cut into one program per stage
 * (what a pipeline is: pipeline.c's header). Every node gets a stage and a phase (place), the values
 * that cross stages become sends into slotted buffers (find_traffic), the fed inputs and fetches
 * find their stages, each stage's program is compiled on its device, and the device threads'
 * order of tasks is planned (1F1B). Compiled for planning only (ts_compile_opts.plan_only), it
 * stops after every stage's memory plan: no buffers, no tasks, no threads.
 *
 * Calls: compile.c (each stage's program), pipeline.c (the device threads); called by program.c.
 */
#include "optim/optim.h"
#include "runtime/pipeline_impl.h"

#include <stdio.h>

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
    if (!pc->stage || !pc->phase || !pc->home || !pc->seg_stage || !pc->local || !micro) {
        free(micro); /* pc's tables: placing_free */
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory placing %d nodes on the pipeline's stages", nn);
    }
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
    ts_status st = TS_OK;
    if (!done || !now || !nf || !nb || !pl->tasks || !pl->ntasks) /* pl's: ts_pipeline_free */
        left = 0, st = ts_err(TS_ERR_NOMEM, "ts_compile: out of memory planning the pipeline's tasks");
    while (left > 0) {
        int progress = 0;
        memcpy(now, done, (size_t)total);
        for (int d = 0; d < pl->ndev; d++) {
            task best = {-1, 0, 0};
            for (int s = 0; s < S; s++) { /* a backward if one is ready, the oldest micro-batch first */
                if (pl->stage_dev[s] != d || nb[s] >= M) continue;
                task t = {s, 1, nb[s]};
                if (ts_pipeline_deps_met(pl, done, &t) && (best.stage < 0 || t.m < best.m)) best = t;
            }
            for (int s = 0; s < S && best.stage < 0; s++) { /* else a forward, the earliest stage first */
                if (pl->stage_dev[s] != d || nf[s] >= M) continue;
                task t = {s, 0, nf[s]};
                if (ts_pipeline_deps_met(pl, done, &t)) best = t;
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

/* What the steps of a pipeline's compile share: the pipeline being built, and what each stage
 * reads, sends and receives ([S][nv], stage-major). */
typedef struct pbuild {
    ts_pipeline *pl;
    const ts_compile_opts *o;
    ts_graph *g;               /* pl->g */
    int S, M, nv, nn;
    int ncpu;                  /* devices that are the built-in CPU */
    uint8_t *alive, *pinned;   /* per node; per value */
    placing pc;
    uint8_t *reads, *sent, *recv;
    int *slots;                /* > 0: a slotted buffer of that many copies in the stage's program */
    int *first;                /* the earliest local phase reading it */
    int *maxread;              /* the latest node index reading it */
} pbuild;

/* Fusion asks the device of the merged node's stage (ts_fuse_accept, ts_device_fuses); a node
 * of no stage yet (placed later by its inputs) asks every device of the pipeline. */
static int stage_accepts(void *ctx, const ts_graph *g, const ts_node *fused, const ts_node *producer) {
    const ts_pipeline *pl = ctx;
    if (fused->stage >= 0 && fused->stage < pl->S && pl->stage_dev[fused->stage] >= 0)
        return ts_device_fuses(pl->dev[pl->stage_dev[fused->stage]], g, fused, producer);
    for (int d = 0; d < pl->ndev; d++)
        if (!ts_device_fuses(pl->dev[d], g, fused, producer)) return 0;
    return 1;
}

/* Can graph be a pipeline over the stage devices of o: a training step of M >= 2 micro-batches,
 * whole steps per call, a device per stage, no loss scaling? */
static ts_status check_pipeline(const ts_graph *graph, const ts_compile_opts *o) {
    int S = graph->nstages > 0 ? graph->nstages : 1, M = graph->accum_steps;
    if (graph->opt_start < 0 || graph->bwd_start < 0)
        return ts_err(TS_ERR_ARG, "ts_compile: a pipeline (stage_devices) runs a training step: the graph needs "
                      "ts_backward and ts_optimizer (compile with inference = 1 for one device)");
    if (M < 2)
        return ts_err(TS_ERR_ARG, "ts_compile: a pipeline runs a step as M >= 2 micro-batches: build the optimizer "
                      "with accumulation_steps >= 2 (it has %d)", M);
    if (o->nstage_devices < S)
        return ts_err(TS_ERR_ARG, "ts_compile: the graph has %d pipeline stages but stage_devices names %d", S,
                      o->nstage_devices);
    if (o->device_iterations < M || o->device_iterations % M)
        return ts_err(TS_ERR_ARG, "ts_compile: a pipeline's call runs whole steps: device_iterations %d must be a "
                      "multiple of the %d micro-batches of a step", o->device_iterations, M);
    for (int i = 0; i < graph->nnodes; i++)
        if (graph->nodes[i].op == TS_OP_LOSS_SCALE)
            return ts_err(TS_ERR_UNSUPPORTED, "ts_compile: loss scaling (fp16) is not supported in a pipeline yet");
    return TS_OK;
}

/* Start b: the pipeline, a copy of the graph, and the tables of the steps. TS_ERR_NOMEM when out
 * of memory (what was made: finish). */
static ts_status begin(pbuild *b, const ts_graph *graph, const ts_compile_opts *o) {
    int S = graph->nstages > 0 ? graph->nstages : 1, M = graph->accum_steps;
    memset(b, 0, sizeof *b);
    ts_pipeline *pl = b->pl = calloc(1, sizeof *pl);
    if (!pl) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    pthread_mutex_init(&pl->mu, NULL);
    pthread_cond_init(&pl->cv, NULL);
    b->o = o, b->S = pl->S = S, b->M = pl->M = M;
    pl->iters = o->device_iterations;
    pl->num_threads = o->num_threads;
    ts_graph *g = b->g = pl->g = ts_graph_clone(graph);
    if (!g) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory copying the graph");
    int nv = b->nv = pl->nvals = g->nvals, nn = b->nn = g->nnodes;
    size_t snv = (size_t)S * nv;
    b->alive = malloc((size_t)nn + 1), b->pinned = calloc((size_t)nv + 1, 1);
    pl->owned = calloc((size_t)nv + 1, 1);
    pl->params = malloc(sizeof(int) * (size_t)(nv + 1));
    pl->fetch = malloc(sizeof(int) * (size_t)(o->nfetch + 1));
    pl->stage_dev = calloc((size_t)S, sizeof(int));
    pl->inflight = calloc((size_t)S, sizeof(int));
    pl->st = calloc((size_t)S, sizeof *pl->st);
    pl->busy = calloc((size_t)S, sizeof(double));
    pl->feed_host = calloc((size_t)nv + 1, sizeof(void *));
    pl->xf = malloc(sizeof(xfer) * (size_t)(nv + 1) * 2);
    pl->rp = malloc(sizeof(replica) * (size_t)(nv + 1));
    pl->hi = malloc(sizeof(host_in) * (size_t)(nv + 1));
    pl->done = calloc((size_t)S * 2 * (size_t)M, 1);
    b->reads = calloc(snv, 1), b->sent = calloc(snv, 1), b->recv = calloc(snv, 1);
    b->slots = calloc(snv, sizeof(int)), b->first = malloc(sizeof(int) * snv), b->maxread = malloc(sizeof(int) * snv);
    if (!b->alive || !b->pinned || !pl->owned || !pl->params || !pl->fetch || !pl->stage_dev || !pl->inflight ||
        !pl->st || !pl->busy || !pl->feed_host || !pl->xf || !pl->rp || !pl->hi || !pl->done || !b->reads || !b->sent ||
        !b->recv || !b->slots || !b->first || !b->maxread)
        return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the pipeline's tables of %d values", nv);
    memset(b->alive, 1, (size_t)nn);
    for (size_t k = 0; k < snv; k++) b->first[k] = 1 << 30, b->maxread[k] = -1;
    pl->micro_v = ts_lookup(g, TS_MICRO_STEP);
    return TS_OK;
}

/* The stages' devices, one thread each; the cores shared among the CPU devices unless a count
 * is given. */
static ts_status open_devices(pbuild *b) {
    ts_pipeline *pl = b->pl;
    for (int s = 0; s < b->S; s++) {
        ts_device *d = ts_device_get(b->o->stage_devices[s]);
        if (!d) return ts_last_status() ? ts_last_status() : TS_ERR_ARG; /* its message is set */
        int k = 0;
        while (k < pl->ndev && pl->dev[k] != d) k++;
        if (k == pl->ndev) {
            if (pl->ndev == MAX_DEV) return ts_err(TS_ERR_ARG, "ts_compile: more than %d devices in a pipeline", MAX_DEV);
            pl->dev[pl->ndev++] = d;
            b->ncpu += d->api == &ts_backend_cpu_api;
        }
        pl->stage_dev[s] = k;
        pl->inflight[s] = b->M < b->S - s ? b->M : b->S - s;
    }
    int cores = ts_max_threads() / 4, ncpu = b->ncpu;
    for (int d = 0; d < pl->ndev; d++)
        pl->threads[d] = b->o->num_threads > 0 ? b->o->num_threads : cores / (ncpu ? ncpu : 1) > 0 ? cores / (ncpu ? ncpu : 1) : 1;
    return TS_OK;
}

/* Fetches and gradients survive the passes; then dead code and fusion on the whole graph. */
static ts_status run_passes(pbuild *b) {
    ts_pipeline *pl = b->pl;
    ts_graph *g = b->g;
    for (int i = 0; i < b->o->nfetch; i++) {
        int v = ts_lookup(g, b->o->fetches[i] ? b->o->fetches[i] : "");
        if (v == TS_NONE)
            return ts_err(TS_ERR_NOT_FOUND, "ts_compile: fetch '%s' is not a named value of the graph",
                          b->o->fetches[i] ? b->o->fetches[i] : "(null)");
        b->pinned[v] = 1;
        pl->fetch[pl->nfetch++] = v;
    }
    for (int v = 0; v < b->nv; v++) {
        if (g->vals[v].kind != TS_V_PARAM) continue;
        pl->params[pl->nparams++] = v;
        if (g->vals[v].grad >= 0) b->pinned[g->vals[v].grad] = 1;
    }
    if (ts_pass_dce(g, b->alive, b->pinned, 1) < 0) return TS_ERR_NOMEM;
    int fused = b->o->no_fusion ? 0 : ts_pass_fuse(g, b->alive, b->pinned, stage_accepts, pl);
    if (fused < 0) return TS_ERR_NOMEM;
    pl->mem.fused = fused;
    if (fused && ts_pass_dce(g, b->alive, b->pinned, 1) < 0) return TS_ERR_NOMEM;
    return TS_OK;
}

/* Every alive node's stage and phase (place_nodes), checked against the stage devices. */
static ts_status place(pbuild *b) {
    ts_status st = place_nodes(b->g, b->alive, &b->pc);
    if (st != TS_OK) return st;
    for (int i = 0; i < b->nn; i++)
        if (b->alive[i] && b->pc.stage[i] >= b->S)
            return ts_err(TS_ERR_ARG, "ts_compile: a node is on pipeline stage %d; stage_devices names %d",
                          b->pc.stage[i], b->S);
    b->pl->home = malloc(sizeof(int) * (size_t)(b->nv + 1));
    if (!b->pl->home) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    memcpy(b->pl->home, b->pc.home, sizeof(int) * (size_t)b->nv);
    return TS_OK;
}

/* What each stage reads: values it receives from other stages (a transfer each), values its
 * forward keeps for its backward, and when each is first and last read. */
static ts_status find_traffic(pbuild *b) {
    ts_pipeline *pl = b->pl;
    const ts_graph *g = b->g;
    const placing *pc = &b->pc;
    int nv = b->nv;
    for (int i = 0; i < b->nn; i++) {
        if (!b->alive[i]) continue;
        const ts_node *n = &g->nodes[i];
        int s = pc->stage[i], ph = pc->phase[i], lph = local_phase(pc, i);
        for (int j = 0; j < n->nin; j++) {
            int v = n->in[j];
            if (v < 0) continue;
            const ts_val *x = &g->vals[v];
            size_t sv = (size_t)s * nv + v;
            b->reads[sv] = 1;
            if (lph < b->first[sv]) b->first[sv] = lph;
            if (i > b->maxread[sv]) b->maxread[sv] = i;
            if (x->kind != TS_V_NODE) continue;
            int t = pc->stage[x->node], pph = pc->phase[x->node];
            if ((pph <= TS_PH_BWD) != (ph <= TS_PH_BWD))
                return ts_err(TS_ERR_UNSUPPORTED, "ts_compile: %s is made %s and read %s: a pipeline passes values "
                              "between micro-batch phases and the update only through parameters and state",
                              x->name ? x->name : "a value", pph <= TS_PH_BWD ? "per micro-batch" : "by the update",
                              ph <= TS_PH_BWD ? "per micro-batch" : "by the update");
            if (t == s) {
                if (pph == TS_PH_FWD && ph == TS_PH_BWD) b->slots[sv] = pl->inflight[s]; /* kept for the backward */
                continue;
            }
            if (!b->recv[sv]) {
                b->recv[sv] = 1;
                b->sent[(size_t)t * nv + v] = 1;
                xfer *xf = &pl->xf[pl->nxf++];
                *xf = (xfer){v, t, s, pph <= TS_PH_BWD ? pph : pc->local[pph - TS_PH_UPD], pph <= TS_PH_BWD, 0, NULL, NULL};
                if (xf->per_micro) b->slots[sv] = b->M;
            }
            if (ph == TS_PH_FWD) /* the receiver's forward reads it */
                for (int k = 0; k < pl->nxf; k++)
                    if (pl->xf[k].v == v && pl->xf[k].to == s) pl->xf[k].to_fwd = 1;
        }
    }
    return TS_OK;
}

/* The stage and phase that make each fetch (which then sends it to the host). */
static ts_status place_fetches(pbuild *b) {
    ts_pipeline *pl = b->pl;
    const ts_graph *g = b->g;
    pl->fetch_stage = malloc(sizeof(int) * (size_t)(pl->nfetch + 1));
    pl->fetch_phase = malloc(sizeof(int) * (size_t)(pl->nfetch + 1));
    if (!pl->fetch_stage || !pl->fetch_phase) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    for (int i = 0; i < pl->nfetch; i++) {
        const ts_val *x = &g->vals[pl->fetch[i]];
        pl->fetch_stage[i] = pl->fetch_phase[i] = -1;
        if (x->kind == TS_V_NODE && b->alive[x->node]) {
            pl->fetch_stage[i] = b->pc.stage[x->node];
            pl->fetch_phase[i] = local_phase(&b->pc, x->node);
            b->sent[(size_t)pl->fetch_stage[i] * b->nv + pl->fetch[i]] = 1;
        } else if (x->kind != TS_V_PARAM && x->kind != TS_V_STATE) {
            return ts_err(TS_ERR_UNSUPPORTED, "ts_compile: fetch '%s' is not made by the pipeline's step", x->name);
        }
    }
    return TS_OK;
}

/* Fed inputs (per micro-batch or once a step), copies of persistent values whose master is on
 * another stage, and the update's segments. */
static ts_status find_inputs(pbuild *b) {
    ts_pipeline *pl = b->pl;
    const ts_graph *g = b->g;
    const placing *pc = &b->pc;
    for (int s = 0; s < b->S; s++)
        for (int v = 0; v < b->nv; v++) {
            size_t sv = (size_t)s * b->nv + v;
            const ts_val *x = &g->vals[v];
            if (!b->reads[sv]) continue;
            if (x->kind == TS_V_INPUT) {
                int pm = b->first[sv] <= TS_PH_BWD;
                pl->hi[pl->nhi++] = (host_in){v, s, pm, b->first[sv]};
                if (pm) b->slots[sv] = b->M;
                if (!b->o->plan_only && !pl->feed_host[v] &&
                    !(pl->feed_host[v] = calloc((size_t)pl->iters, ts_val_bytes(x) + 1)))
                    return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for input '%s'", x->name);
            } else if ((x->kind == TS_V_PARAM || x->kind == TS_V_STATE) && pc->home[v] >= 0 && pc->home[v] != s) {
                pl->rp[pl->nrp++] = (replica){v, pc->home[v], s};
                /* a copy is refreshed once a step: the update must not write it before another stage reads it */
                if (v != pl->micro_v && g->vals[v].kind == TS_V_STATE) {
                    int writer = -1;
                    for (int i = 0; i < b->nn; i++)
                        if (b->alive[i] && side_effect(&g->nodes[i]) && g->nodes[i].in[0] == v) writer = i;
                    if (writer >= 0 && b->maxread[sv] > writer && pc->phase[b->maxread[sv]] >= TS_PH_UPD)
                        return ts_err(TS_ERR_UNSUPPORTED, "ts_compile: '%s' is written on stage %d and then read on "
                                      "stage %d in the same update", x->name ? x->name : "a state value", pc->home[v], s);
                }
            }
        }
    pl->us = malloc(sizeof(useg) * (size_t)(pc->nseg + 1));
    if (!pl->us) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    for (int k = 0; k < pc->nseg; k++) pl->us[k] = (useg){pc->seg_stage[k], pc->local[k]};
    pl->nus = pc->nseg;
    return TS_OK;
}

/* Stage s's compile failed: its error, saying which stage (a refusal for memory otherwise names
 * only the device, which several stages may share). */
static ts_status name_stage(int s, int S) {
    char msg[1024];
    const char *m = ts_last_error();
    ts_status st = ts_last_status();
    snprintf(msg, sizeof msg, "%s", strncmp(m, "ts_compile: ", 12) ? m : m + 12);
    return ts_err(st, "ts_compile: stage %d of the pipeline's %d: %s", s, S, msg);
}

/* Each stage's program on its device (compile.c), over a copy of the graph where what it receives
 * is an input; then each transfer's receiving slotted buffer. */
static ts_status compile_stages(pbuild *b) {
    ts_pipeline *pl = b->pl;
    const placing *pc = &b->pc;
    int nn = b->nn, nv = b->nv;
    ts_status err = TS_OK;
    int *phase = malloc(sizeof(int) * (size_t)(nn + 1));
    uint8_t *salive = malloc((size_t)nn + 1);
    if (!phase || !salive) err = ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
    size_t used[MAX_DEV] = {0}; /* what the stages compiled so far take on each device */
    for (int s = 0; s < b->S && !err; s++) {
        int nph = TS_PH_UPD;
        for (int k = 0; k < pc->nseg; k++)
            if (pc->seg_stage[k] == s && pc->local[k] + 1 > nph) nph = pc->local[k] + 1;
        for (int i = 0; i < nn; i++) {
            salive[i] = b->alive[i] && pc->stage[i] == s;
            phase[i] = salive[i] ? local_phase(pc, i) : 0;
        }
        ts_graph *gs = ts_graph_clone(b->g);
        if (!gs) {
            err = name_stage(s, b->S); /* ts_graph_clone's TS_ERR_NOMEM */
            break;
        }
        for (int v = 0; v < nv; v++)
            if (b->recv[(size_t)s * nv + v]) gs->vals[v].kind = TS_V_INPUT, gs->vals[v].node = -1;
        int d = pl->stage_dev[s];
        ts_stage_spec spec = {salive, phase, nph, b->slots + (size_t)s * nv, b->sent + (size_t)s * nv, used[d], s, b->S};
        ts_compile_opts so = {.num_threads = pl->threads[pl->stage_dev[s]], .memory_limit = b->o->memory_limit,
                              .no_fusion = 1, .strict_device = b->o->strict_device, .plan_only = b->o->plan_only};
        if (!(pl->st[s] = ts_exec_compile(gs, pl->dev[d], &so, &spec))) err = name_stage(s, b->S);
        else {
            const ts_memory *m = &pl->st[s]->mem;
            used[d] += m->params + m->grads + m->optimizer_state + m->grad_buckets + m->activations + m->workspace;
        }
    }
    free(phase), free(salive);
    for (int i = 0; i < pl->nxf && !err && !b->o->plan_only; i++) { /* planning only: no buffers */
        xfer *x = &pl->xf[i];
        if (!x->per_micro) continue;
        x->slot = ts_slot_of(pl->st[x->to], x->v);
        if (!x->slot) err = ts_err(TS_ERR_RUNTIME, "ts_compile: internal: no receive buffer for a sent value");
        else if (pl->stage_dev[x->from] != pl->stage_dev[x->to] && !(x->staged = malloc((size_t)pl->M * x->slot->bytes)))
            err = ts_err(TS_ERR_NOMEM, "ts_compile: out of host memory staging a transfer between stages");
    }
    return err;
}

/* The whole program: the persistent values its stages hold, its memory, its fetches' host copies. */
static ts_status gather(pbuild *b) {
    ts_pipeline *pl = b->pl;
    const ts_graph *g = b->g;
    for (int s = 0; s < b->S; s++) {
        const ts_exec *sp = pl->st[s];
        for (int v = 0; v < b->nv; v++)
            pl->owned[v] |= sp->owned[v] && g->vals[v].kind != TS_V_NODE && g->vals[v].kind != TS_V_INPUT;
        pl->mem.params += sp->mem.params, pl->mem.grads += sp->mem.grads;
        pl->mem.optimizer_state += sp->mem.optimizer_state, pl->mem.activations += sp->mem.activations;
        pl->mem.grad_buckets += sp->mem.grad_buckets;
        pl->mem.workspace += sp->mem.workspace, pl->mem.intermediates_total += sp->mem.intermediates_total;
        pl->mem.weight_copies += sp->mem.weight_copies;
        pl->mem.nodes += sp->mem.nodes;
    }
    if (b->o->plan_only) return TS_OK; /* no host copies of the fetches */
    pl->fetch_host = calloc((size_t)pl->nfetch + 1, sizeof(void *));
    if (!pl->fetch_host) return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the fetches");
    for (int i = 0; i < pl->nfetch; i++)
        if (!(pl->fetch_host[i] = calloc((size_t)pl->iters, ts_val_bytes(&g->vals[pl->fetch[i]]) + 1)))
            return ts_err(TS_ERR_NOMEM, "ts_compile: out of memory for the fetches");
    return TS_OK;
}

/* Free b's tables; on failure also the pipeline, keeping the error's message and code. */
static ts_pipeline *finish(pbuild *b, ts_status st) {
    placing_free(&b->pc);
    free(b->alive), free(b->pinned);
    free(b->reads), free(b->sent), free(b->recv), free(b->slots), free(b->first), free(b->maxread);
    if (st == TS_OK) return b->pl;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ts_last_error());
    ts_status code = ts_last_status();
    ts_pipeline_free(b->pl);
    ts_err(code ? code : TS_ERR_ARG, "%s", msg);
    return NULL;
}

ts_pipeline *ts_pipeline_compile(const ts_graph *graph, const ts_compile_opts *o) {
    if (check_pipeline(graph, o) != TS_OK) return NULL;
    pbuild b;
    ts_status st = begin(&b, graph, o);
    if (!st) st = open_devices(&b);
    if (!st) st = run_passes(&b);
    if (!st) st = place(&b);
    if (!st) st = find_traffic(&b);
    if (!st) st = place_fetches(&b);
    if (!st) st = find_inputs(&b);
    if (!st) st = compile_stages(&b);
    if (!st) st = gather(&b);
    if (!st && !o->plan_only) st = plan_tasks(b.pl); /* planning only: no runs, no device threads */
    if (!st && !o->plan_only) st = ts_pipeline_start_threads(b.pl);
    return finish(&b, st);
}
