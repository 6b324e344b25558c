/*
 * calib.c — ts_calib (tessera_core.h): calibration for static int8 quantization. It finds the
 * matmuls the quantization pass would rewrite (ts_quantizable_node) among those the fetches need,
 * compiles the float inference program with their input activations added to the fetches (so
 * their buffers hold them when a run ends; nothing else about the run changes), and after each
 * run reads them into one buffer made at the start and adds them to their statistics
 * (calib_stats.c). No allocation per run.
 *
 * Activations and weights form groups: Q, K and V read one activation (one group, one scale for
 * the three weights); a weight shared by two matmuls (tied) joins their activations into one
 * group. Each group's statistics are updated once per run, and every weight of the group gets
 * its scale.
 */
#include "runtime/calib.h"
#include "runtime/program.h"

#include <stdio.h>

struct ts_calib {
    ts_program *p;          /* the observing program */
    int method;             /* TS_CALIB_* */
    int nobs;
    int *obs_val, *obs_group; /* [nobs] observed value ids (in p's graph), their groups */
    char **obs_name;        /* [nobs] their fetch names (owned) */
    int ngroups;
    ts_calib_stats *stats;  /* [ngroups] */
    int nweights;
    char **wname;           /* [nweights] (owned) */
    int *wgroup;            /* [nweights] */
    ts_quant_scale *scales; /* [nweights], filled by ts_calib_scales */
    float *buf;             /* the largest observed activation */
    uint64_t runs;          /* ts_calib_observe calls that succeeded */
};

static int find(int *up, int v) {
    while (up[v] != v) v = up[v] = up[up[v]];
    return v;
}

/* needed[v] = 1 for every value the fetches of o depend on in g (a walk back over the nodes). */
static ts_status mark_needed(const ts_graph *g, const ts_compile_opts *o, uint8_t *needed, uint8_t *node_needed) {
    for (int i = 0; i < o->nfetch; i++) {
        ts_value v = ts_lookup(g, o->fetches[i]);
        if (v == TS_NONE)
            return ts_err(TS_ERR_NOT_FOUND, "ts_calib_new: fetch '%s' is not a named value of the graph", o->fetches[i]);
        needed[v] = 1;
    }
    for (int i = g->nnodes - 1; i >= 0; i--) {
        const ts_node *n = &g->nodes[i];
        for (int k = 0; k < n->nout && !node_needed[i]; k++) node_needed[i] = n->out[k] >= 0 && needed[n->out[k]];
        for (int k = 0; node_needed[i] && k < n->nin; k++)
            if (n->in[k] >= 0) needed[n->in[k]] = 1;
    }
    return TS_OK;
}

/* The observed activations and the weights of g's quantizable needed matmuls, grouped. */
static ts_status find_observed(ts_calib *c, ts_graph *g, const uint8_t *node_needed, int *up, int *obs_of) {
    for (int i = 0; i < g->nnodes; i++) {
        const ts_node *n = &g->nodes[i];
        if (!node_needed[i] || !ts_quantizable_node(g, n) || !g->vals[n->in[1]].name) continue;
        int a = n->in[0], b = n->in[1];
        up[find(up, a)] = find(up, b);
        if (obs_of[a] < 0) obs_of[a] = c->nobs, c->obs_val[c->nobs++] = a;
        int w = 0;
        while (w < c->nweights && strcmp(c->wname[w], g->vals[b].name)) w++;
        if (w == c->nweights && !(c->wname[c->nweights++] = strdup(g->vals[b].name)))
            return ts_err(TS_ERR_NOMEM, "ts_calib_new: out of memory");
    }
    int64_t most = 1;
    for (int k = 0; k < c->nobs; k++) {
        int a = c->obs_val[k];
        char name[64];
        snprintf(name, sizeof name, "calib.activation.%d", a);
        if (!g->vals[a].name && ts_val_set_name(g, a, name) != TS_OK) /* unique: no builder makes such names */
            return ts_err(TS_ERR_NOMEM, "ts_calib_new: out of memory");
        if (!(c->obs_name[k] = strdup(g->vals[a].name))) return ts_err(TS_ERR_NOMEM, "ts_calib_new: out of memory");
        most = ts_val_numel(&g->vals[a]) > most ? ts_val_numel(&g->vals[a]) : most;
    }
    int *gid = obs_of; /* reused: root value id -> group (obs_of is not needed any more) */
    for (int v = 0; v < g->nvals; v++) gid[v] = -1;
    for (int k = 0; k < c->nobs; k++) {
        int r = find(up, c->obs_val[k]);
        if (gid[r] < 0) gid[r] = c->ngroups++;
        c->obs_group[k] = gid[r];
    }
    for (int w = 0; w < c->nweights; w++) c->wgroup[w] = gid[find(up, ts_lookup(g, c->wname[w]))];
    c->stats = calloc((size_t)c->ngroups + 1, sizeof *c->stats);
    c->buf = malloc(sizeof(float) * (size_t)most);
    if (!c->stats || !c->buf) return ts_err(TS_ERR_NOMEM, "ts_calib_new: out of memory");
    return TS_OK;
}

/* Compile the observing program: o's, fetching the observed activations too. */
static ts_status compile_observer(ts_calib *c, const ts_graph *g, const ts_compile_opts *o) {
    const char **f = malloc(sizeof(char *) * (size_t)(o->nfetch + c->nobs + 1));
    if (!f) return ts_err(TS_ERR_NOMEM, "ts_calib_new: out of memory");
    for (int i = 0; i < o->nfetch; i++) f[i] = o->fetches[i];
    for (int k = 0; k < c->nobs; k++) f[o->nfetch + k] = c->obs_name[k];
    ts_compile_opts co = *o;
    co.struct_size = sizeof co, co.fetches = f, co.nfetch = o->nfetch + c->nobs;
    c->p = ts_compile(g, &co);
    free(f);
    return c->p ? TS_OK : ts_last_status();
}

static ts_status check_new(const ts_graph *g, const ts_compile_opts *o, int method) {
    if (!g || !o) return ts_err(TS_ERR_ARG, "ts_calib_new: graph or options NULL");
    if (method < TS_CALIB_MINMAX || method > TS_CALIB_ENTROPY)
        return ts_err(TS_ERR_ARG, "ts_calib_new: method %d; takes TS_CALIB_MINMAX (0), TS_CALIB_PERCENTILE (1) or "
                      "TS_CALIB_ENTROPY (2)", method);
    if (!o->inference || o->quantize != TS_QUANT_NONE || o->device_iterations > 1 || o->plan_only)
        return ts_err(TS_ERR_ARG, "ts_calib_new: calibration observes the float inference program: opts needs "
                      "inference = 1, quantize = TS_QUANT_NONE, no device_iterations, no plan_only");
    if (o->nfetch <= 0 || !o->fetches)
        return ts_err(TS_ERR_ARG, "ts_calib_new: opts names no fetches (the outputs whose matmuls are calibrated)");
    return TS_OK;
}

ts_calib *ts_calib_new(const ts_graph *graph, const ts_compile_opts *opts, int method) {
    ts_compile_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_compile_opts, "ts_calib_new")) return NULL;
    if (check_new(graph, opts ? &o : NULL, method) != TS_OK) return NULL;
    if (graph->status != TS_OK) {
        ts_err(graph->status, "ts_calib_new: the graph has an error from building: %s", ts_graph_msg(graph));
        return NULL;
    }
    ts_calib *c = calloc(1, sizeof *c);
    ts_graph *g = ts_graph_clone(graph);
    size_t nv = (size_t)graph->nvals + 1, nn = (size_t)graph->nnodes + 1;
    uint8_t *needed = calloc(nv, 1), *node_needed = calloc(nn, 1);
    int *up = malloc(sizeof(int) * nv), *obs_of = malloc(sizeof(int) * nv);
    ts_status st = c && g && needed && node_needed && up && obs_of ? TS_OK
                                                                    : ts_err(TS_ERR_NOMEM, "ts_calib_new: out of memory");
    if (st == TS_OK) {
        c->method = method;
        c->obs_val = malloc(sizeof(int) * nn), c->obs_group = malloc(sizeof(int) * nn);
        c->obs_name = calloc(nn, sizeof(char *)), c->wname = calloc(nn, sizeof(char *));
        c->wgroup = malloc(sizeof(int) * nn), c->scales = calloc(nn, sizeof(ts_quant_scale));
        if (!c->obs_val || !c->obs_group || !c->obs_name || !c->wname || !c->wgroup || !c->scales)
            st = ts_err(TS_ERR_NOMEM, "ts_calib_new: out of memory");
    }
    for (int v = 0; st == TS_OK && v < g->nvals; v++) up[v] = v, obs_of[v] = -1;
    if (st == TS_OK) st = mark_needed(g, &o, needed, node_needed);
    if (st == TS_OK) st = find_observed(c, g, node_needed, up, obs_of);
    if (st == TS_OK) st = compile_observer(c, g, &o);
    ts_graph_free(g);
    free(needed), free(node_needed), free(up), free(obs_of);
    if (st != TS_OK) {
        ts_calib_free(c);
        return NULL;
    }
    return c;
}

ts_program *ts_calib_program(ts_calib *c) { return c ? c->p : NULL; }

int ts_calib_num_weights(const ts_calib *c) { return c ? c->nweights : 0; }

ts_status ts_calib_observe(ts_calib *c) {
    if (!c) return ts_err(TS_ERR_ARG, "ts_calib_observe: NULL calibrator");
    const ts_graph *g = ts_program_graph(c->p);
    for (int k = 0; k < c->nobs; k++) {
        const ts_val *v = &g->vals[c->obs_val[k]];
        ts_status st = ts_value_read(c->p, c->obs_val[k], c->buf);
        if (st == TS_OK) st = ts_calib_stats_add(&c->stats[c->obs_group[k]], c->buf, ts_val_numel(v));
        if (st != TS_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", ts_last_error());
            int w = 0;
            while (w < c->nweights - 1 && c->wgroup[w] != c->obs_group[k]) w++;
            return ts_err(st, "ts_calib_observe: the input of the matmul by '%s' (value '%s'): %s",
                          c->nweights ? c->wname[w] : "?", c->obs_name[k], why);
        }
    }
    c->runs++;
    return TS_OK;
}

int ts_calib_scales(ts_calib *c, const ts_quant_scale **scales) {
    if (scales) *scales = NULL;
    if (!c || !scales) return ts_err(TS_ERR_ARG, "ts_calib_scales: NULL calibrator or scales"), -1;
    if (!c->runs) return ts_err(TS_ERR_ARG, "ts_calib_scales: no run observed yet (ts_calib_observe)"), -1;
    int n = 0;
    for (int w = 0; w < c->nweights; w++) {
        float s = ts_calib_stats_scale(&c->stats[c->wgroup[w]], c->method);
        if (s > 0.f) c->scales[n++] = (ts_quant_scale){c->wname[w], s};
    }
    *scales = c->scales;
    return n;
}

void ts_calib_free(ts_calib *c) {
    if (!c) return;
    ts_program_free(c->p);
    for (int k = 0; c->obs_name && k < c->nobs; k++) free(c->obs_name[k]);
    for (int w = 0; c->wname && w < c->nweights; w++) free(c->wname[w]);
    free(c->obs_val), free(c->obs_group), free(c->obs_name), free(c->wname), free(c->wgroup), free(c->scales);
    free(c->stats), free(c->buf);
    free(c);
}
