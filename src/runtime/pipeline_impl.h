/*
 * pipeline_impl.h — a pipeline's state, shared by the two files of the pipeline: pipeline_compile.c
 * cuts the graph into stages and fills it, pipeline.c runs the steps on the device threads.
 * pipeline.c's header says what a pipeline is.
 */
#ifndef TS_PIPELINE_IMPL_H
#define TS_PIPELINE_IMPL_H

#include "runtime/pipeline.h"
#include "runtime/program.h"

#include <pthread.h>

#define MAX_DEV 64

/* A value copied from one stage to another after the producing phase of each micro-batch (or of
 * the update). */
typedef struct xfer {
    int v, from, to;
    int phase;      /* the producer's phase: TS_PH_FWD, TS_PH_BWD, or an update segment's */
    int per_micro;  /* made in a forward or backward: one slot per micro-batch at the receiver */
    int to_fwd;     /* the receiver's forward reads it (else only its backward) */
    const ts_slotted *slot; /* the receiver's slotted buffer (per_micro) */
    char *staged;   /* per_micro between two devices: [M][slot->bytes] on the host; the sender's
                       thread copies its value out into slot m, the receiver's copies slot m in
                       (each device touched only from its own thread); NULL on one device */
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
    /* the whole program, as the public API sees it (ts_pipeline_face) */
    ts_graph *g;               /* the whole graph, after dead code and fusion */
    int *fetch, nfetch;        /* fetchable value ids */
    int *params, nparams;      /* parameter value ids */
    uint8_t *owned;            /* per value: a persistent value some stage holds */
    int iters;                 /* micro-batches per call: a whole number of steps */
    void **fetch_host;         /* [nfetch]: each fetch's iters copies */
    int num_threads;           /* ts_compile_opts.num_threads, set again after a call */
    ts_memory mem;             /* the stages' added up */
    int S, M;                  /* stages; micro-batches per step */
    int nvals;                 /* of the master graph */
    int ndev;                  /* distinct devices */
    ts_device *dev[MAX_DEV];
    int threads[MAX_DEV];
    int *stage_dev;            /* [S] */
    int *inflight;             /* [S]: micro-batches a stage keeps: min(M, S - s) */
    ts_exec **st;              /* [S]: each stage's program */
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

/* Are task t's dependencies met in done[S][2][M]: its forward (for a backward), a free slot for
 * what its forward keeps, and every value it receives for that phase made? The device threads
 * wait on it; plan_tasks (pipeline_compile.c) simulates a step with it (pipeline.c). */
int ts_pipeline_deps_met(const ts_pipeline *pl, const uint8_t *done, const task *t);
/* Start one host thread per device, each waiting for the first step (pipeline.c). */
ts_status ts_pipeline_start_threads(ts_pipeline *pl);

#endif
