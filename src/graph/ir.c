/* ir.c — building graphs: values, nodes, names, and the sticky builder error. */
#include "graph/opdef.h"

#include <stdio.h>

ts_graph *ts_graph_new(void) {
    ts_graph *g = calloc(1, sizeof *g);
    if (!g) {
        ts_err(TS_ERR_NOMEM, "ts_graph_new: out of memory");
        return NULL;
    }
    g->loss = -1;
    g->cur_stage = -1;
    g->bwd_start = g->opt_start = -1;
    return g;
}

void ts_graph_free(ts_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->nvals; i++) {
        free(g->vals[i].name);
        ts_tensor_free(g->vals[i].data);
    }
    free(g->vals);
    free(g->nodes);
    free(g->status_msg);
    free(g->name_slots);
    free(g);
}

void ts_graph_set_seed(ts_graph *g, uint64_t seed) {
    if (g) g->seed = seed;
}

ts_status ts_graph_status(const ts_graph *g) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_graph_status: graph is NULL");
    if (g->status != TS_OK) ts_err(g->status, "%s", ts_graph_msg(g));
    return g->status;
}

ts_value ts_graph_fail(ts_graph *g, ts_status code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g && g->status == TS_OK) {
        g->status = code;
        g->status_msg = strdup(msg); /* NULL when out of memory: ts_graph_msg says so */
    }
    ts_err(code, "%s", msg);
    return TS_NONE;
}

int ts_val_add(ts_graph *g, ts_val_kind kind, ts_dtype dtype, int ndim, const int64_t *shape) {
    if (g->nvals == g->cap_vals) {
        int cap = g->cap_vals ? 2 * g->cap_vals : 64;
        ts_val *vals = realloc(g->vals, sizeof(ts_val) * (size_t)cap);
        if (!vals) return ts_graph_fail(g, TS_ERR_NOMEM, "out of memory adding value %d to the graph", g->nvals);
        g->vals = vals;
        g->cap_vals = cap;
    }
    ts_val *v = &g->vals[g->nvals];
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->dtype = dtype;
    v->ndim = ndim;
    if (ndim > 0 && shape) memcpy(v->shape, shape, sizeof(int64_t) * (size_t)ndim);
    v->node = -1;
    v->grad = -1;
    return g->nvals++;
}

const char *ts_val_str(const ts_graph *g, int v, char *buf, size_t cap) {
    if (!ts_val_ok(g, v)) {
        snprintf(buf, cap, "<no value>");
        return buf;
    }
    const ts_val *x = &g->vals[v];
    char sh[128];
    ts_shape_str(x->ndim, x->shape, sh, sizeof sh);
    if (x->name)
        snprintf(buf, cap, "'%s' %s %s", x->name, sh, ts_dtype_name(x->dtype));
    else if (x->kind == TS_V_NODE)
        snprintf(buf, cap, "%%%d (output of %s) %s %s", v, ts_op_get(g->nodes[x->node].op)->name,
                 sh, ts_dtype_name(x->dtype));
    else
        snprintf(buf, cap, "%%%d %s %s", v, sh, ts_dtype_name(x->dtype));
    return buf;
}

/* ------------------------------------------------------------------ the name index */

uint64_t ts_name_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Put value v (named) into the first free slot of its probe sequence. */
static void name_insert(ts_graph *g, int v) {
    int mask = g->name_nslots - 1;
    int i = (int)(ts_name_hash(g->vals[v].name) & (uint64_t)mask);
    while (g->name_slots[i] >= 0) i = (i + 1) & mask;
    g->name_slots[i] = v;
    g->name_used++;
}

/* Rebuild the index with room for at least `need` names at load <= 1/2. -1 when out of memory
 * (the old index stays). */
static int name_rebuild(ts_graph *g, int need) {
    int n = 64;
    while (n < 2 * need) n *= 2;
    int *slots = malloc(sizeof(int) * (size_t)n);
    if (!slots) return -1;
    free(g->name_slots);
    g->name_slots = slots;
    memset(g->name_slots, 0xff, sizeof(int) * (size_t)n);
    g->name_nslots = n;
    g->name_used = 0;
    for (int v = 0; v < g->nvals; v++)
        if (g->vals[v].name) name_insert(g, v);
    return 0;
}

ts_status ts_graph_apply_order(ts_graph *g, const int *order, int *new_index) {
    int nn = g->nnodes;
    ts_node *out = malloc(sizeof(ts_node) * (size_t)(nn ? nn : 1));
    if (!out) return ts_graph_fail(g, TS_ERR_NOMEM, "out of memory reordering %d nodes", nn), g->status;
    for (int w = 0; w < nn; w++) {
        out[w] = g->nodes[order[w]];
        if (new_index) new_index[order[w]] = w;
        for (int k = 0; k < out[w].nout; k++) g->vals[out[w].out[k]].node = w;
    }
    memcpy(g->nodes, out, sizeof(ts_node) * (size_t)nn);
    free(out);
    return TS_OK;
}

ts_status ts_val_set_name(ts_graph *g, int v, const char *name) {
    char *copy = strdup(name ? name : "");
    /* room for one more name first: on failure v keeps its old name and the index is whole */
    if (!copy || (2 * (g->name_used + 1) > g->name_nslots && name_rebuild(g, g->name_used + 1))) {
        free(copy);
        ts_graph_fail(g, TS_ERR_NOMEM, "out of memory naming value %d '%s'", v, name ? name : "");
        return TS_ERR_NOMEM;
    }
    free(g->vals[v].name);
    g->vals[v].name = copy;
    name_insert(g, v);
    return TS_OK;
}

ts_value ts_lookup(const ts_graph *g, const char *name) {
    if (!g || !name) return TS_NONE;
    if (!g->name_slots) return TS_NONE; /* no value has been named yet */
    int mask = g->name_nslots - 1;
    for (int i = (int)(ts_name_hash(name) & (uint64_t)mask);; i = (i + 1) & mask) {
        int v = g->name_slots[i];
        if (v < 0) return TS_NONE;
        if (v < g->nvals && g->vals[v].name && strcmp(g->vals[v].name, name) == 0) return v;
    }
}

static int check_new_name(ts_graph *g, const char *what, const char *name) {
    if (!name || !*name) {
        ts_graph_fail(g, TS_ERR_ARG, "%s: empty name", what);
        return 0;
    }
    if (ts_lookup(g, name) != TS_NONE) {
        ts_graph_fail(g, TS_ERR_ARG, "%s: name '%s' is already used in this graph", what, name);
        return 0;
    }
    return 1;
}

static int check_shape(ts_graph *g, const char *what, const char *name, ts_dtype dtype, int ndim,
                       const int64_t *shape) {
    if ((unsigned)dtype >= TS_DTYPE_COUNT) {
        ts_graph_fail(g, TS_ERR_DTYPE, "%s '%s': invalid dtype %d", what, name, (int)dtype);
        return 0;
    }
    if (ndim < 0 || ndim > TS_MAX_DIMS || (ndim > 0 && !shape)) {
        ts_graph_fail(g, TS_ERR_SHAPE, "%s '%s': rank %d outside 0..%d", what, name, ndim,
                      TS_MAX_DIMS);
        return 0;
    }
    for (int i = 0; i < ndim; i++)
        if (shape[i] <= 0) {
            ts_graph_fail(g, TS_ERR_SHAPE, "%s '%s': dim %d is %lld, must be positive", what,
                          name, i, (long long)shape[i]);
            return 0;
        }
    if (!ts_shape_fits(ndim, shape, ts_dtype_size(dtype))) {
        char sh[160];
        ts_graph_fail(g, TS_ERR_SHAPE, "%s '%s': shape %s %s is more than %lld TiB", what, name,
                      ts_shape_str(ndim, shape, sh, sizeof sh), ts_dtype_name(dtype),
                      (long long)(TS_MAX_VALUE_BYTES >> 40));
        return 0;
    }
    return 1;
}

ts_value ts_input(ts_graph *g, const char *name, ts_dtype dtype, int ndim, const int64_t *shape) {
    if (!g) return TS_NONE;
    if (!check_new_name(g, "ts_input", name) || !check_shape(g, "ts_input", name, dtype, ndim, shape))
        return TS_NONE;
    int v = ts_val_add(g, TS_V_INPUT, dtype, ndim, shape);
    if (v == TS_NONE) return TS_NONE;
    if (ts_val_set_name(g, v, name) != TS_OK) {
        g->nvals--; /* the value just added, unnamed: taken back */
        return TS_NONE;
    }
    return v;
}

ts_value ts_param(ts_graph *g, const char *name, ts_dtype dtype, int ndim, const int64_t *shape,
                  ts_init init) {
    if (!g) return TS_NONE;
    if (!check_new_name(g, "ts_param", name) || !check_shape(g, "ts_param", name, dtype, ndim, shape))
        return TS_NONE;
    if (dtype != TS_F32 && dtype != TS_BF16 && dtype != TS_F16)
        return ts_graph_fail(g, TS_ERR_DTYPE, "ts_param '%s': dtype %s is not a float type", name,
                             ts_dtype_name(dtype));
    int v = ts_val_add(g, TS_V_PARAM, dtype, ndim, shape);
    if (v == TS_NONE) return TS_NONE;
    if (ts_val_set_name(g, v, name) != TS_OK) {
        g->nvals--; /* the value just added, unnamed: taken back */
        return TS_NONE;
    }
    g->vals[v].init = init;
    return v;
}

ts_value ts_constant(ts_graph *g, const ts_tensor *t) {
    if (!g) return TS_NONE;
    if (!t) return ts_graph_fail(g, TS_ERR_ARG, "ts_constant: tensor is NULL");
    ts_tensor *data = ts_tensor_from(t->dtype, t->ndim, t->shape, t->data);
    if (!data) return ts_graph_fail(g, TS_ERR_NOMEM, "ts_constant: out of memory");
    int v = ts_val_add(g, TS_V_CONST, t->dtype, t->ndim, t->shape);
    if (v == TS_NONE) {
        ts_tensor_free(data);
        return TS_NONE;
    }
    g->vals[v].data = data;
    return v;
}

ts_value ts_scalar(ts_graph *g, float x) {
    if (!g) return TS_NONE;
    ts_tensor *data = ts_tensor_from(TS_F32, 0, NULL, &x);
    if (!data) return ts_graph_fail(g, TS_ERR_NOMEM, "ts_scalar: out of memory");
    int v = ts_val_add(g, TS_V_CONST, TS_F32, 0, NULL);
    if (v == TS_NONE) {
        ts_tensor_free(data);
        return TS_NONE;
    }
    g->vals[v].data = data;
    return v;
}

ts_value ts_name(ts_graph *g, ts_value v, const char *name) {
    if (!g || v == TS_NONE) return TS_NONE;
    if (!ts_val_ok(g, v)) return ts_graph_fail(g, TS_ERR_ARG, "ts_name: no value %d", v);
    if (g->vals[v].name && name && strcmp(g->vals[v].name, name) == 0) return v;
    if (!check_new_name(g, "ts_name", name)) return TS_NONE;
    if (g->vals[v].kind == TS_V_INPUT || g->vals[v].kind == TS_V_PARAM)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_name: value '%s' already has a name; cannot rename to '%s'",
                             g->vals[v].name, name);
    if (ts_val_set_name(g, v, name) != TS_OK) return TS_NONE;
    return v;
}

int ts_value_shape(const ts_graph *g, ts_value v, int64_t shape[TS_MAX_DIMS]) {
    if (!g || !ts_val_ok(g, v)) return -1;
    if (shape) memcpy(shape, g->vals[v].shape, sizeof(int64_t) * TS_MAX_DIMS);
    return g->vals[v].ndim;
}

ts_dtype ts_value_dtype(const ts_graph *g, ts_value v) {
    if (!g || !ts_val_ok(g, v)) return TS_DTYPE_COUNT;
    return g->vals[v].dtype;
}

int ts_broadcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)];
        int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) return -1;
        out[i] = da == 1 ? db : da;
    }
    return n;
}

ts_value ts_node_add(ts_graph *g, int op, int nin, const int *in, const ts_attrs *attr, int *outs) {
    if (!g) return TS_NONE;
    if (g->status != TS_OK) return TS_NONE; /* sticky: the first error stands */
    const ts_op_def *d = ts_op_get(op);
    if (!d) return ts_graph_fail(g, TS_ERR_ARG, "unknown op id %d", op);
    if (nin < d->min_in || nin > d->max_in)
        return ts_graph_fail(g, TS_ERR_ARG, "op %s: %d inputs given, takes %d..%d", d->name, nin,
                             d->min_in, d->max_in);
    for (int i = 0; i < nin; i++) {
        if (in[i] == TS_NONE && i < d->min_in)
            return ts_graph_fail(g, TS_ERR_ARG, "op %s: input %d is TS_NONE", d->name, i);
        if (in[i] != TS_NONE && !ts_val_ok(g, in[i]))
            return ts_graph_fail(g, TS_ERR_ARG, "op %s: input %d is not a value of this graph (%d)",
                                 d->name, i, in[i]);
    }
    if (g->nnodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        ts_node *nodes = realloc(g->nodes, sizeof(ts_node) * (size_t)cap);
        if (!nodes)
            return ts_graph_fail(g, TS_ERR_NOMEM, "op %s: out of memory adding node %d to the graph", d->name, g->nnodes);
        g->nodes = nodes;
        g->cap_nodes = cap;
    }
    ts_node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.nin = nin;
    for (int i = 0; i < nin; i++) n.in[i] = in[i];
    for (int i = nin; i < TS_MAX_IN; i++) n.in[i] = -1;
    if (attr) n.attr = *attr;
    n.seg = g->open_seg;
    n.stage = g->cur_stage;
    n.nout = d->nout;
    int id = g->nnodes;
    for (int k = 0; k < d->nout; k++) {
        n.out[k] = ts_val_add(g, TS_V_NODE, TS_F32, 0, NULL);
        if (n.out[k] == TS_NONE) { /* out of memory (recorded): the outputs added so far taken back */
            g->nvals -= k;
            return TS_NONE;
        }
        g->vals[n.out[k]].node = id;
    }
    g->nodes[id] = n;
    g->nnodes++;
    ts_status s = d->infer(g, &g->nodes[id]);
    for (int k = 0; k < d->nout && s == TS_OK; k++) { /* no output beyond what any buffer can be */
        const ts_val *o = &g->vals[g->nodes[id].out[k]];
        if (!ts_shape_fits(o->ndim, o->shape, ts_dtype_size(o->dtype))) {
            char sh[160];
            s = ts_err(TS_ERR_SHAPE, "op %s: output %d would have shape %s %s, more than %lld TiB", d->name, k,
                       ts_shape_str(o->ndim, o->shape, sh, sizeof sh), ts_dtype_name(o->dtype),
                       (long long)(TS_MAX_VALUE_BYTES >> 40));
        }
    }
    if (s != TS_OK) {
        /* Roll the node back so the graph stays consistent; keep the message. */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", ts_last_error());
        g->nnodes--;
        g->nvals -= d->nout;
        return ts_graph_fail(g, s, "%s", msg);
    }
    if (outs)
        for (int k = 0; k < d->nout; k++) outs[k] = g->nodes[id].out[k];
    return d->nout ? g->nodes[id].out[0] : 0; /* ops without outputs (updates) return 0 */
}

ts_graph *ts_graph_clone(const ts_graph *g) {
    ts_graph *c = calloc(1, sizeof *c);
    if (!c) goto nomem;
    *c = *g;
    c->nvals = 0; /* the values copied so far: what ts_graph_free frees if a copy fails */
    c->status_msg = NULL;
    c->name_slots = NULL;
    c->vals = malloc(sizeof(ts_val) * (size_t)(g->cap_vals ? g->cap_vals : 1));
    c->nodes = malloc(sizeof(ts_node) * (size_t)(g->cap_nodes ? g->cap_nodes : 1));
    if (!c->vals || !c->nodes) goto fail;
    if (g->nnodes) memcpy(c->nodes, g->nodes, sizeof(ts_node) * (size_t)g->nnodes);
    if (g->status_msg && !(c->status_msg = strdup(g->status_msg))) goto fail;
    if (g->name_slots) {
        if (!(c->name_slots = malloc(sizeof(int) * (size_t)g->name_nslots))) goto fail;
        memcpy(c->name_slots, g->name_slots, sizeof(int) * (size_t)g->name_nslots);
    }
    for (int i = 0; i < g->nvals; i++) {
        const ts_val *from = &g->vals[i];
        ts_val *v = &c->vals[i];
        *v = *from;
        v->name = NULL, v->data = NULL;
        c->nvals = i + 1;
        if (from->name && !(v->name = strdup(from->name))) goto fail;
        if (from->data &&
            !(v->data = ts_tensor_from(from->data->dtype, from->data->ndim, from->data->shape, from->data->data)))
            goto fail;
    }
    return c;
fail:
    ts_graph_free(c);
nomem:
    ts_err(TS_ERR_NOMEM, "ts_graph_clone: out of memory copying a graph of %d values and %d nodes", g->nvals,
           g->nnodes);
    return NULL;
}

/* ------------------------------------------------------------------ pipeline stages */

ts_status ts_graph_stage_begin(ts_graph *g, int stage) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_graph_stage_begin: graph is NULL");
    if (g->status != TS_OK) return g->status;
    if (stage < 0 || stage >= TS_MAX_STAGES)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_graph_stage_begin: stage %d is outside 0..%d", stage,
                             TS_MAX_STAGES - 1), g->status;
    if (g->cur_stage >= 0)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_graph_stage_begin(%d): stage %d is still open (stages do not "
                             "nest; call ts_graph_stage_end first)", stage, g->cur_stage), g->status;
    if (g->has_backward)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_graph_stage_begin: the graph already has its backward pass (place "
                             "the forward; ts_backward places the gradients)"), g->status;
    g->cur_stage = stage;
    if (stage + 1 > g->nstages) g->nstages = stage + 1;
    return TS_OK;
}

ts_status ts_graph_stage_end(ts_graph *g) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_graph_stage_end: graph is NULL");
    if (g->status != TS_OK) return g->status;
    if (g->cur_stage < 0)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_graph_stage_end: no stage is open"), g->status;
    g->cur_stage = -1;
    return TS_OK;
}

int ts_graph_num_stages(const ts_graph *g) { return g ? g->nstages : 0; }
