/*
 * program.c — the public ts_program: ts_compile (a program on one device, or a pipeline with
 * stage devices), feeds, runs, fetches, parameters, the memory and stage reports, freeing. Each
 * call checks its arguments against the program's views (ts_face) and hands the work to the one
 * the program holds. Calls: pipeline.c, compile.c, exec.c, share.c, profile.c; called by no runtime file
 * but checkpoint.c (ts_value_read / ts_value_write).
 */
#include "comm/comm.h"
#include "runtime/pipeline.h"
#include "runtime/program.h"

#include <stdio.h>

/* TS_OK when o's static quantization scales are usable: named, finite and > 0. */
static ts_status check_quant_scales(const ts_compile_opts *o) {
    if (o->nquant_scales < 0 || (o->nquant_scales > 0 && !o->quant_scales))
        return ts_err(TS_ERR_ARG, "ts_compile: nquant_scales is %d but quant_scales is %s", o->nquant_scales,
                      o->quant_scales ? "set" : "NULL");
    for (int i = 0; i < o->nquant_scales; i++) {
        const ts_quant_scale *q = &o->quant_scales[i];
        if (!q->weight) return ts_err(TS_ERR_ARG, "ts_compile: quant_scales[%d] has no weight name (NULL)", i);
        if (!(q->scale > 0.f && q->scale <= 3.4028235e38f))
            return ts_err(TS_ERR_ARG, "ts_compile: quant_scales[%d]: the activation scale of weight '%s' is %g; it "
                          "must be finite and > 0", i, q->weight, (double)q->scale);
    }
    return TS_OK;
}

/* TS_OK when graph and o can be compiled (what ts_compile checks before it starts). */
static ts_status check_compile(const ts_graph *graph, const ts_compile_opts *opts) {
    const ts_compile_opts o = *opts;
    if (!graph) return ts_err(TS_ERR_ARG, "ts_compile: graph is NULL");
    if (graph->status != TS_OK) {
        return ts_err(graph->status, "ts_compile: the graph has an error from building: %s", ts_graph_msg(graph));
    }
    if (o.nfetch < 0 || (o.nfetch > 0 && !o.fetches)) {
        return ts_err(TS_ERR_ARG, "ts_compile: nfetch is %d but fetches is %s", o.nfetch, o.fetches ? "set" : "NULL");
    }
    if (o.num_threads < 0 || o.num_threads > ts_max_threads()) {
        return ts_err(TS_ERR_ARG, "ts_compile: num_threads %d is outside 0..%d (4 x the %d online CPUs)", o.num_threads,
               ts_max_threads(), ts_max_threads() / 4);
    }
    if (o.device_iterations < 0) {
        return ts_err(TS_ERR_ARG, "ts_compile: device_iterations is %d; it must be >= 0", o.device_iterations);
    }
    if (o.nstage_devices < 0 || (o.nstage_devices > 0 && !o.stage_devices)) {
        return ts_err(TS_ERR_ARG, "ts_compile: nstage_devices is %d but stage_devices is %s", o.nstage_devices,
               o.stage_devices ? "set" : "NULL");
    }
    if (graph->replicas > 1 && !o.inference) { /* the collectives' channels: host, then one per stage */
        ts_comm *c = ts_comm_by_id(graph->comm_id);
        if (!c) {
            return ts_err(TS_ERR_COMM, "ts_compile: the graph's optimizer sums over communicator %d, which does not exist "
                   "(finalized?)", graph->comm_id);
        }
        if (ts_comm_channels(c, 1 + (graph->nstages > 0 ? graph->nstages : 1)) != TS_OK) return ts_last_status();
    }
    if (o.quantize != TS_QUANT_NONE && o.quantize != TS_QUANT_DYNAMIC && o.quantize != TS_QUANT_STATIC)
        return ts_err(TS_ERR_ARG, "ts_compile: quantize is %d; it takes TS_QUANT_NONE (0), TS_QUANT_DYNAMIC (1) or "
                      "TS_QUANT_STATIC (2)", o.quantize);
    if (o.quantize && !o.inference)
        return ts_err(TS_ERR_UNSUPPORTED, "ts_compile: quantize (int8 quantization) is for inference programs "
                      "only (inference = 1); a training program needs f32 gradients of its weights");
    if (check_quant_scales(&o) != TS_OK) return ts_last_status();
    if (o.profile && o.nstage_devices > 0 && !o.inference) {
        return ts_err(TS_ERR_UNSUPPORTED, "ts_compile: profile is not supported for a pipelined program (stage_devices); "
               "profile it without stages");
    }
    return TS_OK;
}

/* A ts_program over e or pl (the one not NULL); NULL (and e or pl freed) when either failed. */
static ts_program *wrap(ts_exec *e, ts_pipeline *pl, int plan_only) {
    ts_program *p = e || pl ? calloc(1, sizeof *p) : NULL;
    if (!p) {
        if (e || pl) ts_err(TS_ERR_NOMEM, "ts_compile: out of memory");
        ts_exec_free(e), ts_pipeline_free(pl);
        return NULL;
    }
    p->one = e, p->pipe = pl, p->plan_only = plan_only;
    p->f = pl ? ts_pipeline_face(pl) : ts_exec_face(e);
    return p;
}

ts_program *ts_compile(const ts_graph *graph, const ts_compile_opts *opts) {
    ts_compile_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_compile_opts, "ts_compile")) return NULL;
    if (check_compile(graph, &o) != TS_OK) return NULL;
    if (o.nstage_devices > 0 && !o.inference) return wrap(NULL, ts_pipeline_compile(graph, &o), o.plan_only);
    ts_device *dev = ts_device_get(o.nstage_devices > 0 ? o.stage_devices[0] : o.device ? o.device : "cpu");
    if (!dev) return NULL;
    ts_graph *g = ts_graph_clone(graph);
    if (!g) { ts_err(TS_ERR_NOMEM, "ts_compile: out of memory"); return NULL; }
    ts_exec *e = ts_exec_compile(g, dev, &o, NULL);
    if (e && o.profile && ts_profile_enable(e) != TS_OK) {
        ts_exec_free(e);
        return NULL;
    }
    return wrap(e, NULL, o.plan_only);
}

void ts_program_free(ts_program *p) {
    if (!p) return;
    free(p->placement);
    ts_pipeline_free(p->pipe);
    ts_exec_free(p->one);
    free(p);
}

const char *ts_program_placement(const ts_program *p) {
    if (!p) return "";
    if (p->one) return p->one->placement ? p->one->placement : "";
    if (!p->placement) {
        size_t cap = 1, o = 0;
        int S = ts_pipeline_num_stages(p->pipe);
        for (int s = 0; s < S; s++) cap += strlen(ts_pipeline_stage_exec(p->pipe, s)->placement) + 32;
        char *buf = malloc(cap);
        if (!buf) return "";
        buf[0] = 0;
        for (int s = 0; s < S; s++)
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", s ? "\n" : "", ts_pipeline_stage_exec(p->pipe, s)->placement);
        ((ts_program *)p)->placement = buf; /* made once, kept with p */
    }
    return p->placement;
}

int ts_program_num_stages(const ts_program *p) { return !p ? 0 : p->pipe ? ts_pipeline_num_stages(p->pipe) : 1; }

ts_status ts_program_stage_info(const ts_program *p, int stage, ts_stage_info *out) {
    if (!p || !out) return ts_err(TS_ERR_ARG, "ts_program_stage_info: NULL argument");
    if (stage < 0 || stage >= ts_program_num_stages(p))
        return ts_err(TS_ERR_ARG, "ts_program_stage_info: stage %d of %d", stage, ts_program_num_stages(p));
    ts_stage_info si = {.struct_size = sizeof si};
    if (p->pipe) {
        ts_pipeline_stage_info(p->pipe, stage, &si);
    } else {
        si.device = p->one->dev->name;
        si.threads = p->one->num_threads;
        si.mem = ts_stage_memory_of(&p->one->mem);
        si.in_flight = 1;
    }
    return TS_STRUCT_WRITE(out, &si, ts_stage_info, "ts_program_stage_info");
}

ts_status ts_program_pipeline_stats(const ts_program *p, double *wall_s, double *bubble) {
    if (!p || !wall_s || !bubble) return ts_err(TS_ERR_ARG, "ts_program_pipeline_stats: NULL argument");
    *wall_s = 0, *bubble = 0;
    if (p->pipe) ts_pipeline_stats(p->pipe, wall_s, bubble);
    return TS_OK;
}

void ts_program_pipeline_reset_stats(ts_program *p) {
    if (p && p->pipe) ts_pipeline_reset_stats(p->pipe);
}

static int find_named(const ts_program *p, const char *name, ts_val_kind kind, int any_kind) {
    if (!name) return -1;
    int v = ts_lookup((ts_graph *)p->f.g, name);
    if (v < 0 || !(any_kind || p->f.g->vals[v].kind == kind)) return -1;
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

/* TS_ERR_UNSUPPORTED from fn when p was compiled for planning only (it has no buffers). */
static ts_status refuse_plan_only(const ts_program *p, const char *fn) {
    if (!p->plan_only) return TS_OK;
    return ts_err(TS_ERR_UNSUPPORTED, "%s: the program was compiled for planning only (plan_only): it has no "
                  "buffers to feed, run or read", fn);
}

ts_status ts_program_feed(ts_program *p, const char *name, const ts_tensor *t) {
    if (!p || !t) return ts_err(TS_ERR_ARG, "ts_program_feed: %s is NULL", p ? "tensor" : "program");
    if (refuse_plan_only(p, "ts_program_feed")) return ts_last_status();
    int v = find_named(p, name, TS_V_INPUT, 0);
    if (v < 0) {
        int other = find_named(p, name, TS_V_INPUT, 1);
        if (other >= 0)
            return ts_err(TS_ERR_NOT_FOUND, "ts_program_feed: '%s' is not an input (it is a %s)", name,
                          p->f.g->vals[other].kind == TS_V_PARAM ? "parameter; use ts_program_set_param" : "computed value");
        return ts_err(TS_ERR_NOT_FOUND, "ts_program_feed: the program has no input named '%s'", name ? name : "(null)");
    }
    ts_status s = check_tensor(p->f.g, v, t, "ts_program_feed: input", p->f.iters > 1 ? p->f.iters : 0);
    if (s) return s;
    return p->pipe ? ts_pipeline_feed(p->pipe, v, t) : ts_exec_feed(p->one, v, t);
}

static int fetchable(const ts_program *p, int v);

ts_status ts_program_feed_value(ts_program *p, const char *input, const char *value) {
    if (!p) return ts_err(TS_ERR_ARG, "ts_program_feed_value: program is NULL");
    if (refuse_plan_only(p, "ts_program_feed_value")) return ts_last_status();
    int v = find_named(p, input, TS_V_INPUT, 0), w = find_named(p, value, TS_V_NODE, 1);
    if (v < 0) return ts_err(TS_ERR_NOT_FOUND, "ts_program_feed_value: the program has no input named '%s'", input ? input : "(null)");
    if (w < 0 || !ts_value_present(p, w) || !fetchable(p, w))
        return ts_err(TS_ERR_NOT_FOUND, "ts_program_feed_value: '%s' is not a value named in the fetches at compile time",
                      value ? value : "(null)");
    const ts_val *a = &p->f.g->vals[v], *b = &p->f.g->vals[w];
    if (a->dtype != b->dtype || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim)) {
        char s1[128], s2[128];
        return ts_err(TS_ERR_SHAPE, "ts_program_feed_value: input '%s' is %s %s but '%s' is %s %s", input,
                      ts_dtype_name(a->dtype), ts_shape_str(a->ndim, a->shape, s1, sizeof s1), value,
                      ts_dtype_name(b->dtype), ts_shape_str(b->ndim, b->shape, s2, sizeof s2));
    }
    if (!p->pipe && p->f.iters <= 1) return ts_exec_copy_value(p->one, v, w);
    ts_tensor *t = NULL; /* a pipeline's stages, device iterations' slots: through the host */
    ts_status s = ts_program_fetch(p, value, &t);
    if (!s) s = ts_program_feed(p, input, t);
    ts_tensor_free(t);
    return s;
}

ts_status ts_program_run(ts_program *p) {
    if (!p) return ts_err(TS_ERR_ARG, "ts_program_run: program is NULL");
    if (refuse_plan_only(p, "ts_program_run")) return ts_last_status();
    return p->pipe ? ts_pipeline_run(p->pipe, &p->step) : ts_exec_run(p->one, &p->step);
}

int ts_value_present(const ts_program *p, int v) {
    if (p->pipe) return 1; /* the pipeline's values are its stages' (pipeline.c checks) */
    return p->one->vals[v].buf.mem != NULL;
}

ts_status ts_value_read(const ts_program *p, int v, void *host) {
    if (refuse_plan_only(p, "reading a value")) return ts_last_status();
    return p->pipe ? ts_pipeline_read(p->pipe, v, host) : ts_exec_read(p->one, v, host);
}

ts_status ts_value_write(ts_program *p, int v, const void *host) {
    if (refuse_plan_only(p, "writing a value")) return ts_last_status();
    return p->pipe ? ts_pipeline_write(p->pipe, v, host) : ts_exec_write(p->one, v, host);
}

const ts_graph *ts_program_graph(const ts_program *p) { return p->f.g; }
int ts_program_holds(const ts_program *p, int v) { return p->f.owned[v] != 0; }

static int fetchable(const ts_program *p, int v) {
    if (p->f.g->vals[v].kind != TS_V_NODE) return 1;
    for (int i = 0; i < p->f.nfetch; i++)
        if (p->f.fetch[i] == v) return 1;
    return 0;
}

/* A new host tensor holding value v. */
static ts_status copy_out_value(const ts_program *p, int v, ts_tensor **out) {
    const ts_val *x = &p->f.g->vals[v];
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
    if (refuse_plan_only(p, "ts_program_fetch")) return ts_last_status();
    int v = find_named(p, name, TS_V_NODE, 1);
    if (v < 0) return ts_err(TS_ERR_NOT_FOUND, "ts_program_fetch: the graph has no value named '%s'", name ? name : "(null)");
    if (!ts_value_present(p, v) || !fetchable(p, v))
        return ts_err(TS_ERR_NOT_FOUND, "ts_program_fetch: '%s' was not named in the fetches at compile time", name);
    for (int i = 0; i < p->f.nfetch && p->f.iters > 1; i++) { /* one copy per device iteration */
        if (p->f.fetch[i] != v) continue;
        const ts_val *x = &p->f.g->vals[v];
        if (x->ndim == TS_MAX_DIMS)
            return ts_err(TS_ERR_SHAPE, "ts_program_fetch: '%s' has %d dims; with device iterations "
                          "it would need one more than TS_MAX_DIMS", name, x->ndim);
        int64_t shape[TS_MAX_DIMS + 1] = {p->f.iters};
        memcpy(shape + 1, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        *out = ts_tensor_from(x->dtype, x->ndim + 1, shape, p->f.fetch_host[i]);
        return *out ? TS_OK : ts_err(TS_ERR_NOMEM, "ts_program_fetch: out of memory for '%s'", name);
    }
    return copy_out_value(p, v, out);
}

uint64_t ts_program_step(const ts_program *p) { return p ? p->step : 0; }
void ts_program_set_step(ts_program *p, uint64_t step) { if (p) p->step = step; }

int ts_program_num_params(const ts_program *p) { return p ? p->f.nparams : 0; }
const char *ts_program_param_name(const ts_program *p, int i) {
    if (!p || i < 0 || i >= p->f.nparams) return NULL;
    return p->f.g->vals[p->f.params[i]].name;
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
    ts_status s = check_tensor(p->f.g, v, t, "ts_program_set_param: parameter", 0);
    if (s) return s;
    return ts_value_write(p, v, t->data);
}

int ts_program_copy_params(ts_program *dst, const ts_program *src) {
    if (!dst || !src) { ts_err(TS_ERR_ARG, "ts_program_copy_params: program is NULL"); return -1; }
    int copied = 0;
    for (int i = 0; i < src->f.nparams; i++) {
        int sv = src->f.params[i];
        const ts_val *x = &src->f.g->vals[sv];
        int dv = find_named(dst, x->name, TS_V_PARAM, 0);
        if (dv < 0) continue;
        const ts_val *y = &dst->f.g->vals[dv];
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

int ts_program_share_params(ts_program *dst, ts_program *src) {
    if (!dst || !src) { ts_err(TS_ERR_ARG, "ts_program_share_params: program is NULL"); return -1; }
    if (dst->pipe || src->pipe) {
        ts_err(TS_ERR_UNSUPPORTED, "ts_program_share_params: %s is pipelined (stage_devices); only programs on one "
               "device share parameters", dst->pipe ? "dst" : "src");
        return -1;
    }
    if (refuse_plan_only(dst->plan_only ? dst : src, "ts_program_share_params")) return -1;
    return ts_exec_share_params(dst->one, src->one);
}

ts_status ts_program_memory(const ts_program *p, ts_memory *m) {
    if (!p || !m) return ts_err(TS_ERR_ARG, "ts_program_memory: NULL argument");
    ts_memory all = *p->f.mem;
    return TS_STRUCT_WRITE(m, &all, ts_memory, "ts_program_memory");
}
