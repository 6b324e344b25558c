/*
 * exec.c — running a program on one device (ts_exec, exec.h): its phases, its device iterations,
 * feeds into its inputs and slots, reads and writes of its values, the thread count, and freeing.
 * Calls: profile.c's counters and share.c's release only. Called by compile.c, pipeline.c and program.c.
 */
#include "runtime/exec.h"

#include <omp.h>
#include <stdio.h>
#include <unistd.h>

void ts_set_threads(int n) {
    static int default_threads = 0;
    if (!default_threads) default_threads = omp_get_max_threads(); /* before any program set it */
    omp_set_dynamic(0); /* always the count asked for: results depend on it (see ts_compile_opts) */
    omp_set_num_threads(n > 0 ? n : default_threads);
}

void ts_exec_free(ts_exec *p) {
    if (!p) return;
    ts_profile_free(p);
    ts_parts_free(p);
    free(p->phase_begin);
    if (p->vals && p->owned && p->g)
        for (int v = 0; v < p->g->nvals; v++)
            if (p->owned[v] && !(p->borrowed && p->borrowed[v])) ts_dev_free(p->dev, &p->vals[v].buf);
    ts_exec_unshare(p);
    free(p->borrowed);
    for (int i = 0; i < p->nslots; i++) {
        ts_dev_free(p->dev, &p->slots[i].base);
        free(p->slots[i].vals);
    }
    free(p->slots);
    if (p->dev) {
        ts_arena_free(p);
        ts_dev_free(p->dev, &p->workspace);
    }
    free(p->vals);
    free(p->owned);
    free(p->sched);
    free(p->nodes);
    free(p->fetch);
    free(p->params);
    free(p->kept);
    if (p->fetch_host)
        for (int i = 0; i < p->nfetch; i++) free(p->fetch_host[i]);
    free(p->fetch_host);
    ts_graph_free(p->g);
    free(p);
}

ts_face ts_exec_face(const ts_exec *e) {
    return (ts_face){e->g, e->fetch, e->nfetch, e->params, e->nparams, e->owned, e->iters, e->fetch_host, &e->mem};
}

void ts_slot_select(ts_exec *p, const ts_slotted *s, int k) {
    ts_buffer b = ts_buf_at(s->base, (uint64_t)k * s->stride);
    for (int i = 0; i < s->nvals; i++) p->vals[s->vals[i]].buf = b;
}

ts_slotted *ts_slot_of(ts_exec *p, int v) {
    for (int i = 0; i < p->nslots; i++)
        for (int j = 0; j < p->slots[i].nvals; j++)
            if (p->slots[i].vals[j] == v) return &p->slots[i];
    return NULL;
}

ts_status ts_exec_run_phase(ts_exec *p, int ph, uint64_t step) {
    /* a replica's run m is micro-batch m R + r of one process's step (dropout is keyed by it) */
    if (p->g->replicas > 1) step = step * (uint64_t)p->g->replicas + (uint64_t)p->g->replica;
    ts_status s = TS_OK;
    for (int k = p->part_begin[ph]; k < p->part_begin[ph + 1] && s == TS_OK; k++) s = ts_part_run(p, k, step);
    return s;
}

/* Every phase of a plain program (it has one) at step. */
static ts_status run_once(ts_exec *p, uint64_t step) {
    ts_status s = TS_OK;
    for (int ph = 0; ph < p->nphases && s == TS_OK; ph++) s = ts_exec_run_phase(p, ph, step);
    return s;
}

/* The iters runs of one call, each on its slot of the inputs, its fetches copied out after it. */
static ts_status run_iters(ts_exec *p, uint64_t *step) {
    ts_set_threads(p->num_threads);
    if (p->iters == 1) {
        ts_status s = run_once(p, *step);
        if (s == TS_OK) ++*step;
        return s;
    }
    ts_status s = TS_OK;
    for (int k = 0; k < p->iters && s == TS_OK; k++) {
        for (int i = 0; i < p->nslots; i++) ts_slot_select(p, &p->slots[i], k);
        s = run_once(p, *step);
        for (int i = 0; i < p->nfetch && s == TS_OK; i++) {
            size_t bytes = ts_val_bytes(&p->g->vals[p->fetch[i]]);
            s = ts_dev_copy_out(p->dev, (char *)p->fetch_host[i] + (size_t)k * bytes, p->vals[p->fetch[i]].buf, bytes);
        }
        if (s == TS_OK) ++*step;
    }
    /* back to slice 0, where ts_exec_feed writes */
    for (int i = 0; i < p->nslots; i++) ts_slot_select(p, &p->slots[i], 0);
    return s;
}

ts_status ts_exec_run(ts_exec *p, uint64_t *step) {
    if (p->share) p->param_gen = p->share->gen; /* a write through another program moved it */
    if (!p->prof) return run_iters(p, step);
    uint64_t t0 = ts_now_ns();
    ts_status s = run_iters(p, step);
    ts_profile_add_run(p, ts_now_ns() - t0);
    return s;
}

ts_status ts_exec_feed(ts_exec *p, int v, const ts_tensor *t) {
    ts_slotted *sl = p->iters > 1 ? ts_slot_of(p, v) : NULL;
    if (sl) return ts_dev_copy_in(p->dev, sl->base, t->data, ts_tensor_nbytes(t));
    if (!p->vals[v].buf.mem) return TS_OK; /* an input this program does not read (e.g. labels at inference) */
    return ts_dev_copy_in(p->dev, p->vals[v].buf, t->data, ts_tensor_nbytes(t));
}

ts_status ts_exec_copy_value(ts_exec *p, int v, int w) {
    if (!p->vals[v].buf.mem) return TS_OK; /* an input this program does not read */
    return ts_dev_copy(p->dev, p->vals[v].buf, p->dev, p->vals[w].buf, ts_val_bytes(&p->g->vals[w]));
}

ts_status ts_exec_read(const ts_exec *p, int v, void *host) {
    return ts_dev_copy_out(p->dev, host, p->vals[v].buf, ts_val_bytes(&p->g->vals[v]));
}

uint64_t ts_param_gen_next(void) {
    static uint64_t last;
    return __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED);
}

ts_status ts_exec_write(ts_exec *p, int v, const void *host) {
    p->param_gen = ts_param_gen_next(); /* whatever a kernel derived from the old bytes is stale */
    if (p->share) p->share->gen = p->param_gen; /* in every program sharing the buffers */
    return ts_dev_copy_in(p->dev, p->vals[v].buf, host, ts_val_bytes(&p->g->vals[v]));
}
