/*
 * program.c — using a compiled program: feeds, runs, fetches, parameters, memory report. A
 * pipelined program hands feeds, runs and fetches to pipeline.c and reads and writes its
 * persistent values through its stages (ts_value_read / ts_value_write).
 */
#include "runtime/program.h"

#include <omp.h>
#include <stdio.h>

static int find_named(const ts_program *p, const char *name, ts_val_kind kind, int any_kind) {
    if (!name) return -1;
    int v = ts_lookup(p->g, name);
    if (v < 0 || !(any_kind || p->g->vals[v].kind == kind)) return -1;
    return v;
}

/* t must have v's dtype and shape, with a leading dimension `lead` in front when lead > 0. */
static ts_status check_tensor(const ts_graph *g, int v, const ts_tensor *t, const char *what, int lead) {
    char b1[128], b2[128];
    const ts_val *x = &g->vals[v];
    if (t->dtype != x->dtype)
        return ts_err(TS_ERR_DTYPE, "%s '%s': tensor has dtype %s, expected %s", what, x->name,
                      ts_dtype_name(t->dtype), ts_dtype_name(x->dtype));
    int64_t want[TS_MAX_DIMS + 1];
    int nd = x->ndim + (lead > 0);
    if (lead > 0) want[0] = lead;
    memcpy(want + (lead > 0), x->shape, sizeof(int64_t) * (size_t)x->ndim);
    if (t->ndim != nd || memcmp(t->shape, want, sizeof(int64_t) * (size_t)nd) != 0) {
        ts_shape_str(nd, want, b2, sizeof b2);
        return ts_err(TS_ERR_SHAPE, "%s '%s': tensor has shape %s, expected %s%s", what, x->name,
                      ts_shape_str(t->ndim, t->shape, b1, sizeof b1), b2,
                      lead > 0 ? " (device iterations first)" : "");
    }
    return TS_OK;
}

ts_status ts_program_feed(ts_program *p, const char *name, const ts_tensor *t) {
    if (!p || !t) return ts_err(TS_ERR_ARG, "ts_program_feed: %s is NULL", p ? "tensor" : "program");
    int v = find_named(p, name, TS_V_INPUT, 0);
    if (v < 0) {
        int other = find_named(p, name, TS_V_INPUT, 1);
        if (other >= 0)
            return ts_err(TS_ERR_NOT_FOUND, "ts_program_feed: '%s' is not an input (it is a %s)", name,
                          p->g->vals[other].kind == TS_V_PARAM ? "parameter; use ts_program_set_param" : "computed value");
        return ts_err(TS_ERR_NOT_FOUND, "ts_program_feed: the program has no input named '%s'", name ? name : "(null)");
    }
    ts_status s = check_tensor(p->g, v, t, "ts_program_feed: input", p->iters > 1 ? p->iters : 0);
    if (s) return s;
    if (p->pipe) return ts_pipeline_feed(p, v, t);
    ts_slotted *sl = p->iters > 1 ? ts_slot_of(p, v) : NULL;
    if (sl) return ts_dev_copy_in(p->dev, sl->base, t->data, ts_tensor_nbytes(t));
    if (!p->vals[v].buf.mem) return TS_OK; /* an input this program does not read (e.g. labels at inference) */
    return ts_dev_copy_in(p->dev, p->vals[v].buf, t->data, ts_tensor_nbytes(t));
}

ts_status ts_program_run_phase(ts_program *p, int ph, uint64_t step) {
    if (!p->exe[ph]) return TS_OK;
    /* a replica's run m is micro-batch m R + r of one process's step (dropout is keyed by it) */
    if (p->g->replicas > 1) step = step * (uint64_t)p->g->replicas + (uint64_t)p->g->replica;
    return p->dev->api->execute(p->dev->ctx, p->exe[ph], &p->abi[ph], p->workspace, step);
}

/* Every phase of a plain program (it has one) at step. */
static ts_status run_once(ts_program *p, uint64_t step) {
    ts_status s = TS_OK;
    for (int ph = 0; ph < p->nphases && s == TS_OK; ph++) s = ts_program_run_phase(p, ph, step);
    return s;
}

static ts_status run_plain(ts_program *p);

ts_status ts_program_run(ts_program *p) {
    if (!p) return ts_err(TS_ERR_ARG, "ts_program_run: program is NULL");
    if (p->pipe) return ts_pipeline_run(p);
    if (!p->prof) return run_plain(p);
    uint64_t t0 = ts_now_ns();
    ts_status s = run_plain(p);
    ts_profile_add_run(p, ts_now_ns() - t0);
    return s;
}

static ts_status run_plain(ts_program *p) {
    ts_set_threads(p->num_threads);
    if (p->iters == 1) {
        ts_status s = run_once(p, p->step);
        if (s == TS_OK) p->step++;
        return s;
    }
    ts_status s = TS_OK;
    for (int k = 0; k < p->iters && s == TS_OK; k++) {
        for (int i = 0; i < p->nslots; i++) ts_slot_select(p, &p->slots[i], k);
        s = run_once(p, p->step);
        for (int i = 0; i < p->nfetch && s == TS_OK; i++) {
            size_t bytes = ts_val_bytes(&p->g->vals[p->fetch[i]]);
            s = ts_dev_copy_out(p->dev, (char *)p->fetch_host[i] + (size_t)k * bytes, p->vals[p->fetch[i]].buf, bytes);
        }
        if (s == TS_OK) p->step++;
    }
    /* back to slice 0, where ts_program_feed writes */
    for (int i = 0; i < p->nslots; i++) ts_slot_select(p, &p->slots[i], 0);
    return s;
}

int ts_value_present(const ts_program *p, int v) {
    if (p->pipe) return 1; /* the pipeline's values are its stages' (pipeline.c checks) */
    return p->vals[v].buf.mem != NULL;
}

ts_status ts_value_read(const ts_program *p, int v, void *host) {
    if (p->pipe) return ts_pipeline_read(p, v, host);
    return ts_dev_copy_out(p->dev, host, p->vals[v].buf, ts_val_bytes(&p->g->vals[v]));
}

ts_status ts_value_write(ts_program *p, int v, const void *host) {
    p->param_gen++; /* whatever a kernel derived from the old bytes is stale (ts_plan.param_gen) */
    if (p->pipe) return ts_pipeline_write(p, v, host);
    return ts_dev_copy_in(p->dev, p->vals[v].buf, host, ts_val_bytes(&p->g->vals[v]));
}

static int fetchable(const ts_program *p, int v) {
    if (p->g->vals[v].kind != TS_V_NODE) return 1;
    for (int i = 0; i < p->nfetch; i++)
        if (p->fetch[i] == v) return 1;
    return 0;
}

/* A new host tensor holding value v. */
static ts_status copy_out_value(const ts_program *p, int v, ts_tensor **out) {
    const ts_val *x = &p->g->vals[v];
    ts_tensor *t = ts_tensor_new(x->dtype, x->ndim, x->shape);
    if (!t) return ts_err(TS_ERR_NOMEM, "out of memory for a copy of '%s'", x->name ? x->name : "a value");
    ts_status s = ts_value_read(p, v, t->data);
    if (s) { ts_tensor_free(t); return s; }
    *out = t;
    return TS_OK;
}

ts_status ts_program_fetch(ts_program *p, const char *name, ts_tensor **out) {
    if (!p || !out) return ts_err(TS_ERR_ARG, "ts_program_fetch: %s is NULL", p ? "out" : "program");
    *out = NULL;
    int v = find_named(p, name, TS_V_NODE, 1);
    if (v < 0) return ts_err(TS_ERR_NOT_FOUND, "ts_program_fetch: the graph has no value named '%s'", name ? name : "(null)");
    if (!ts_value_present(p, v) || !fetchable(p, v))
        return ts_err(TS_ERR_NOT_FOUND, "ts_program_fetch: '%s' was not named in the fetches at compile time", name);
    if (p->pipe) return ts_pipeline_fetch(p, v, out);
    for (int i = 0; i < p->nfetch && p->iters > 1; i++) {
        if (p->fetch[i] != v) continue;
        const ts_val *x = &p->g->vals[v];
        if (x->ndim == TS_MAX_DIMS)
            return ts_err(TS_ERR_SHAPE, "ts_program_fetch: '%s' has %d dims; with device iterations "
                          "it would need one more than TS_MAX_DIMS", name, x->ndim);
        int64_t shape[TS_MAX_DIMS + 1] = {p->iters};
        memcpy(shape + 1, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *out = ts_tensor_from(x->dtype, x->ndim + 1, shape, p->fetch_host[i]);
        return *out ? TS_OK : ts_err(TS_ERR_NOMEM, "ts_program_fetch: out of memory for '%s'", name);
    }
    return copy_out_value(p, v, out);
}

uint64_t ts_program_step(const ts_program *p) { return p ? p->step : 0; }
void ts_program_set_step(ts_program *p, uint64_t step) { if (p) p->step = step; }

int ts_program_num_params(const ts_program *p) { return p ? p->nparams : 0; }
const char *ts_program_param_name(const ts_program *p, int i) {
    if (!p || i < 0 || i >= p->nparams) return NULL;
    return p->g->vals[p->params[i]].name;
}

ts_status ts_program_get_param(const ts_program *p, const char *name, ts_tensor **out) {
    if (!p || !out) return ts_err(TS_ERR_ARG, "ts_program_get_param: %s is NULL", p ? "out" : "program");
    *out = NULL;
    int v = find_named(p, name, TS_V_PARAM, 0);
    if (v < 0) return ts_err(TS_ERR_NOT_FOUND, "ts_program_get_param: no parameter named '%s'", name ? name : "(null)");
    return copy_out_value(p, v, out);
}

ts_status ts_program_set_param(ts_program *p, const char *name, const ts_tensor *t) {
    if (!p || !t) return ts_err(TS_ERR_ARG, "ts_program_set_param: %s is NULL", p ? "tensor" : "program");
    int v = find_named(p, name, TS_V_PARAM, 0);
    if (v < 0) return ts_err(TS_ERR_NOT_FOUND, "ts_program_set_param: no parameter named '%s'", name ? name : "(null)");
    ts_status s = check_tensor(p->g, v, t, "ts_program_set_param: parameter", 0);
    if (s) return s;
    return ts_value_write(p, v, t->data);
}

int ts_program_copy_params(ts_program *dst, const ts_program *src) {
    if (!dst || !src) { ts_err(TS_ERR_ARG, "ts_program_copy_params: program is NULL"); return -1; }
    int copied = 0;
    for (int i = 0; i < src->nparams; i++) {
        int sv = src->params[i];
        const ts_val *x = &src->g->vals[sv];
        int dv = find_named(dst, x->name, TS_V_PARAM, 0);
        if (dv < 0) continue;
        const ts_val *y = &dst->g->vals[dv];
        if (y->dtype != x->dtype || y->ndim != x->ndim || memcmp(y->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim))
            continue;
        /* both are device memory of possibly different devices: go through the host */
        size_t bytes = ts_val_bytes(x);
        void *tmp = malloc(bytes ? bytes : 1);
        if (!tmp) { ts_err(TS_ERR_NOMEM, "ts_program_copy_params: out of memory"); return -1; }
        ts_status s = ts_value_read(src, sv, tmp);
        if (!s) s = ts_value_write(dst, dv, tmp);
        free(tmp);
        if (s) return -1;
        copied++;
    }
    return copied;
}

ts_status ts_program_memory(const ts_program *p, ts_memory *m) {
    if (!p || !m) return ts_err(TS_ERR_ARG, "ts_program_memory: NULL argument");
    *m = p->mem;
    m->struct_size = sizeof *m;
    return TS_OK;
}
