/*
 * ctx.c — the import context's services to the op-mapping files (onnx_imp.h): ONNX value names
 * mapped to graph values or known host tensors, a node's inputs and outputs, and the refusals
 * ("node 'x' (Op): ...") collected over the whole graph.
 */
#include "onnx/onnx_imp.h"

#include <stdarg.h>
#include <stdio.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* ------------------------------------------------------------------ names -> values */

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The slot of name in the table: its entry, or the empty slot where it would go. */
static int *slot_of(const ts_onnx_ctx *cx, const char *name) {
    int mask = cx->nslots - 1;
    for (int i = (int)(hash_str(name) & (uint64_t)mask);; i = (i + 1) & mask)
        if (cx->slots[i] < 0 || !strcmp(cx->names[cx->slots[i]], name)) return &cx->slots[i];
}

onnx_val *onnx_lookup(ts_onnx_ctx *cx, const char *name) {
    if (!name || !*name || !cx->nslots) return NULL;
    int id = *slot_of(cx, name);
    return id >= 0 ? &cx->vals[id] : NULL;
}

void onnx_nomem(ts_onnx_ctx *cx) {
    cx->nomem = 1;
    cx->graph_failed = 1; /* no more nodes: the import fails with TS_ERR_NOMEM (onnx_import_wanted) */
}

/* Out of memory defining a name: the sink, a dead value that belongs to no name (what a caller
 * writes into it is dropped; a known tensor it was given is freed). */
static onnx_val *sink(ts_onnx_ctx *cx) {
    onnx_nomem(cx);
    ts_tensor_free(cx->sink.known);
    cx->sink = (onnx_val){.v = TS_NONE, .producer = -1, .dead = 1};
    return &cx->sink;
}

/* Room for one more name: the slot table at load <= 1/2 and the arrays. 0, or -1 when out of
 * memory (the tables stay as they were). */
static int make_room(ts_onnx_ctx *cx) {
    if (2 * (cx->nvals + 1) > cx->nslots) { /* grow and rehash */
        int ns = cx->nslots ? 2 * cx->nslots : 256;
        int *slots = malloc(sizeof(int) * (size_t)ns);
        if (!slots) return -1;
        free(cx->slots);
        cx->slots = slots;
        cx->nslots = ns;
        for (int i = 0; i < ns; i++) cx->slots[i] = -1;
        for (int i = 0; i < cx->nvals; i++) *slot_of(cx, cx->names[i]) = i;
    }
    if (cx->nvals == cx->cap) {
        int cap = cx->cap ? 2 * cx->cap : 256;
        char **names = realloc(cx->names, sizeof(char *) * (size_t)cap);
        if (!names) return -1;
        cx->names = names;
        onnx_val *vals = realloc(cx->vals, sizeof(onnx_val) * (size_t)cap);
        if (!vals) return -1; /* names is larger than cap says: harmless */
        cx->vals = vals;
        cx->cap = cap;
    }
    return 0;
}

onnx_val *onnx_define(ts_onnx_ctx *cx, const char *name) {
    onnx_val *v = onnx_lookup(cx, name);
    if (v) return v;
    char *copy = make_room(cx) ? NULL : strdup(name ? name : "");
    if (!copy) return sink(cx);
    int id = cx->nvals++;
    cx->names[id] = copy;
    cx->vals[id] = (onnx_val){.v = TS_NONE, .producer = -1};
    *slot_of(cx, copy) = id;
    return &cx->vals[id];
}

void *onnx_own(ts_onnx_ctx *cx, void *p) {
    if (p && cx->nowned == cx->capowned) {
        int cap = cx->capowned ? 2 * cx->capowned : 64;
        void **owned = realloc(cx->owned, sizeof(void *) * (size_t)cap);
        if (owned) cx->owned = owned, cx->capowned = cap;
    }
    if (!p || cx->nowned == cx->capowned) { /* p's allocation, or keeping it, failed */
        free(p);
        onnx_nomem(cx);
        return NULL;
    }
    cx->owned[cx->nowned++] = p;
    return p;
}

void onnx_ctx_free(ts_onnx_ctx *cx) {
    for (int i = 0; i < cx->nvals; i++) {
        free(cx->names[i]);
        ts_tensor_free(cx->vals[i].known);
    }
    free(cx->names);
    free(cx->vals);
    free(cx->slots);
    for (int i = 0; i < cx->nowned; i++) free(cx->owned[i]);
    free(cx->owned);
    for (int i = 0; i < cx->nowned_t; i++) ts_tensor_free(cx->owned_t[i]);
    free(cx->owned_t);
    free(cx->errors);
    ts_tensor_free(cx->sink.known);
}

const ts_tensor *onnx_own_tensor(ts_onnx_ctx *cx, ts_tensor *t) {
    if (!t) { /* the tensor's allocation failed (ts_tensor_new's error) */
        if (ts_last_status() == TS_ERR_NOMEM) onnx_nomem(cx);
        return NULL;
    }
    if (cx->nowned_t == cx->capowned_t) {
        int cap = cx->capowned_t ? 2 * cx->capowned_t : 64;
        ts_tensor **owned = realloc(cx->owned_t, sizeof(ts_tensor *) * (size_t)cap);
        if (!owned) {
            ts_tensor_free(t);
            onnx_nomem(cx);
            ts_err(TS_ERR_NOMEM, "ts_onnx_import: out of memory");
            return NULL;
        }
        cx->owned_t = owned, cx->capowned_t = cap;
    }
    cx->owned_t[cx->nowned_t++] = t;
    return t;
}

/* ------------------------------------------------------------------ nodes and refusals */

const ts_onnx_node *onnx_node_at(const ts_onnx_ctx *cx, int i) {
    const Onnx__GraphProto *gp = cx->m->model->graph;
    return i >= 0 && (size_t)i < gp->n_node ? gp->node[i] : NULL;
}

const char *onnx_node_desc(const ts_onnx_node *n, int index, char *buf, size_t cap) {
    const char *op = n->op_type ? n->op_type : "?";
    if (n->name && *n->name) snprintf(buf, cap, "node '%s' (%s)", n->name, op);
    else if (index < 0 && n->n_output && n->output[0] && *n->output[0])
        snprintf(buf, cap, "node (%s, output '%s')", op, n->output[0]);
    else if (n->n_output && n->output[0] && *n->output[0])
        snprintf(buf, cap, "node #%d (%s, output '%s')", index, op, n->output[0]);
    else snprintf(buf, cap, "node #%d (%s)", index, op);
    return buf;
}

/* Index of n in the graph (the node being imported, else a search). */
static int index_of(const ts_onnx_ctx *cx, const ts_onnx_node *n) {
    if (n == cx->node) return cx->node_index;
    const Onnx__GraphProto *gp = cx->m->model->graph;
    for (size_t i = 0; i < gp->n_node; i++)
        if (gp->node[i] == n) return (int)i;
    return -1;
}

void onnx_record(ts_onnx_ctx *cx, ts_status code, const char *msg) {
    if (code == TS_ERR_NOMEM) onnx_nomem(cx); /* a builder call (or a mapping) out of memory */
    if (cx->nerrors++ == 0) cx->first_code = code;
    else if (code != TS_ERR_UNSUPPORTED && cx->first_code == TS_ERR_UNSUPPORTED) cx->first_code = code;
    if (cx->nerrors > 24) return; /* the first ones are listed; the count says how many */
    size_t add = strlen(msg) + 3;
    if (cx->errlen + add > cx->errcap) {
        char *e = realloc(cx->errors, (cx->errlen + add) * 2);
        if (!e) { /* the list stops here (the count still counts it) */
            onnx_nomem(cx);
            return;
        }
        cx->errors = e, cx->errcap = (cx->errlen + add) * 2;
    }
    cx->errlen += (size_t)snprintf(cx->errors + cx->errlen, cx->errcap - cx->errlen, "%s%s",
                                   cx->errlen ? "; " : "", msg);
}

static ts_status refuse(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_status code, const char *fmt, va_list ap) {
    char d[300], msg[1024];
    if (code == TS_ERR_NOMEM) onnx_nomem(cx); /* even when the node was refused already */
    onnx_node_desc(n, index_of(cx, n), d, sizeof d);
    int o = snprintf(msg, sizeof msg, "%s: ", d);
    vsnprintf(msg + o, sizeof msg - (size_t)o, fmt, ap);
    if (n == cx->node) {
        if (cx->node_refused) return code; /* one message per node */
        cx->node_refused = 1;
    }
    onnx_record(cx, code, msg);
    return code;
}

ts_status onnx_unsupported(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ts_status s = refuse(cx, n, TS_ERR_UNSUPPORTED, fmt, ap);
    va_end(ap);
    return s;
}

ts_status onnx_invalid(ts_onnx_ctx *cx, const ts_onnx_node *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ts_status s = refuse(cx, n, TS_ERR_IO, fmt, ap);
    va_end(ap);
    return s;
}

static ts_status refuse_fmt(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ts_status s = refuse(cx, n, code, fmt, ap);
    va_end(ap);
    return s;
}

ts_status onnx_check(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    ts_graph *g = cx->g;
    ts_status s = ts_graph_status(g);
    if (s == TS_OK) return refuse_fmt(cx, n, TS_ERR_ARG, "a builder call gave no value (internal error)");
    refuse_fmt(cx, n, s, "%s", g->status_msg ? g->status_msg : ts_last_error());
    onnx_graph_recover(g);
    return s;
}

void onnx_graph_recover(ts_graph *g) {
    /* A failed builder call added nothing (ts_node_add rolls its node back), so the graph is
     * whole: the import carries on with the next node and reports this one with the rest. */
    free(g->status_msg);
    g->status_msg = NULL;
    g->status = TS_OK;
}

/* ------------------------------------------------------------------ inputs */

int onnx_nin(const ts_onnx_node *n) { return (int)n->n_input; }
int onnx_has_in(const ts_onnx_node *n, int k) {
    return k >= 0 && (size_t)k < n->n_input && n->input[k] && n->input[k][0];
}
int onnx_nout(const ts_onnx_node *n) { return (int)n->n_output; }
int onnx_has_out(const ts_onnx_node *n, int k) {
    return k >= 0 && (size_t)k < n->n_output && n->output[k] && n->output[k][0];
}

static onnx_val *in_val(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    return onnx_has_in(n, k) ? onnx_lookup(cx, n->input[k]) : NULL;
}

/* The graph value of an ONNX value: made from its known tensor (a constant) or, for an
 * initializer made trainable, its parameter, the first time it is asked for. */
ts_value onnx_graph_value(ts_onnx_ctx *cx, onnx_val *v, const char *name) {
    if (!v || v->dead) return TS_NONE;
    if (v->v != TS_NONE) return v->v;
    if (v->param) {
        const ts_tensor *t = v->known;
        v->v = ts_param(cx->g, name, t->dtype, t->ndim, t->shape, ts_init_zeros());
    } else if (v->known) {
        const ts_tensor *t = v->known;
        if (ts_tensor_numel(t) == 0) /* graph values have positive dims */
            return ts_graph_fail(cx->g, TS_ERR_UNSUPPORTED, "value '%s' is empty (%lld elements); tessera's graphs have no "
                                 "empty tensors", name ? name : "?", (long long)ts_tensor_numel(t));
        v->v = ts_constant(cx->g, t);
    }
    return v->v;
}

ts_value onnx_in(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    return onnx_graph_value(cx, in_val(cx, n, k), onnx_has_in(n, k) ? n->input[k] : NULL);
}

const ts_tensor *onnx_known(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    onnx_val *v = in_val(cx, n, k);
    return v && !v->dead && !v->param ? v->known : NULL;
}

const ts_tensor *onnx_known_buffer(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    onnx_val *v = in_val(cx, n, k);
    return v && !v->dead ? v->known : NULL;
}

int onnx_all_known(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    for (int k = 0; k < onnx_nin(n); k++)
        if (onnx_has_in(n, k) && !onnx_known(cx, n, k)) return 0;
    return 1;
}

int onnx_in_shape(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, int64_t shape[TS_MAX_DIMS]) {
    onnx_val *v = in_val(cx, n, k);
    if (!v || v->dead) return -1;
    const ts_tensor *t = v->known;
    if (t && v->v == TS_NONE) {
        if (shape) memcpy(shape, t->shape, sizeof(int64_t) * TS_MAX_DIMS);
        return t->ndim;
    }
    return ts_value_shape(cx->g, v->v, shape);
}

ts_dtype onnx_in_dtype(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    onnx_val *v = in_val(cx, n, k);
    if (!v || v->dead) return TS_DTYPE_COUNT;
    if (v->known && v->v == TS_NONE) return v->known->dtype;
    return ts_value_dtype(cx->g, v->v);
}

int onnx_in_consumers(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    onnx_val *v = in_val(cx, n, k);
    return v ? v->consumers : 0;
}

int onnx_in_producer(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    onnx_val *v = in_val(cx, n, k);
    return v ? v->producer : -1;
}

ts_status onnx_need_dtype(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, const ts_dtype *ok, int nok) {
    ts_dtype d = onnx_in_dtype(cx, n, k);
    for (int i = 0; i < nok; i++)
        if (d == ok[i]) return TS_OK;
    char want[64] = "";
    for (int i = 0; i < nok; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? (i == nok - 1 ? " or " : ", ") : "",
                 ts_dtype_name(ok[i]));
    return onnx_unsupported(cx, n, "input %d '%s' is %s; tessera's mapping takes %s", k,
                            onnx_has_in(n, k) ? n->input[k] : "", ts_dtype_name(d), want);
}

ts_status onnx_need_f32(ts_onnx_ctx *cx, const ts_onnx_node *n, int first, int last) {
    for (int k = first; k <= last && k < onnx_nin(n); k++) {
        if (!onnx_has_in(n, k)) continue;
        ts_status s = onnx_need_dtype(cx, n, k, (const ts_dtype[]){TS_F32}, 1);
        if (s) return s;
    }
    return TS_OK;
}

int onnx_known_ints(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, int64_t *out, int cap, const char *what) {
    const ts_tensor *t = onnx_known(cx, n, k);
    if (!t) {
        onnx_unsupported(cx, n, "%s (input %d '%s') must be known when the model is imported (a constant or "
                         "computed from shapes), not computed by the graph", what, k, onnx_has_in(n, k) ? n->input[k] : "");
        return -1;
    }
    if (t->dtype != TS_I64 && t->dtype != TS_I32) {
        onnx_invalid(cx, n, "%s (input %d '%s') is %s; it must be an int64 or int32 tensor", what, k, n->input[k],
                     ts_dtype_name(t->dtype));
        return -1;
    }
    int64_t cnt = ts_tensor_numel(t);
    if (cnt > cap) {
        onnx_unsupported(cx, n, "%s (input %d '%s') has %lld values; at most %d are supported", what, k, n->input[k],
                         (long long)cnt, cap);
        return -1;
    }
    for (int64_t i = 0; i < cnt; i++) out[i] = onnx_get_i64(t, i);
    return (int)cnt;
}

int onnx_known_scalar(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, double *out, const char *what) {
    const ts_tensor *t = onnx_known(cx, n, k);
    if (!t) {
        onnx_unsupported(cx, n, "%s (input %d '%s') must be known when the model is imported, not computed by "
                         "the graph", what, k, onnx_has_in(n, k) ? n->input[k] : "");
        return 0;
    }
    if (ts_tensor_numel(t) != 1) {
        onnx_invalid(cx, n, "%s (input %d '%s') has %lld elements; it must be a scalar", what, k, n->input[k],
                     (long long)ts_tensor_numel(t));
        return 0;
    }
    *out = onnx_get_f64(t, 0);
    return 1;
}

/* ------------------------------------------------------------------ outputs */

static onnx_val *out_val(ts_onnx_ctx *cx, const ts_onnx_node *n, int k) {
    onnx_val *v = onnx_define(cx, n->output[k]);
    v->producer = index_of(cx, n);
    return v;
}

ts_status onnx_set(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, ts_value v) {
    if (v == TS_NONE) return onnx_check(cx, n);
    if (!onnx_has_out(n, k)) return TS_OK;
    onnx_val *o = out_val(cx, n, k);
    o->v = v;
    return TS_OK;
}

/* What folding makes is bounded by the model's size (and 2^24 elements at least): a few bytes
 * of ConstantOfShape / Expand must not allocate gigabytes while importing. */
static int64_t fold_cap(const ts_onnx_ctx *cx) {
    return cx->m->nbytes > ((size_t)1 << 24) ? (int64_t)cx->m->nbytes : (int64_t)1 << 24;
}

int onnx_fold_limit(ts_onnx_ctx *cx, const ts_onnx_node *n, int nd, const int64_t *shape) {
    int64_t cnt = 1, cap = fold_cap(cx);
    for (int i = 0; i < nd; i++) {
        if (shape[i] < 0) return onnx_invalid(cx, n, "dim %d of the result is %lld", i, (long long)shape[i]), 0;
        if (shape[i] > 0 && cnt > cap / shape[i]) cnt = cap + 1;
        else cnt *= shape[i];
    }
    if (cnt > cap) {
        onnx_unsupported(cx, n, "computing it at import would make more than %lld elements, the most allowed for "
                         "this model", (long long)cap);
        return 0;
    }
    return 1;
}

ts_status onnx_set_known(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, ts_tensor *t) {
    if (!t) return onnx_unsupported(cx, n, "computing output %d at import: %s", k, ts_last_error());
    if (ts_tensor_numel(t) > fold_cap(cx)) {
        int64_t cnt = ts_tensor_numel(t);
        ts_tensor_free(t);
        return onnx_unsupported(cx, n, "output %d would have %lld elements, computed at import; more than the "
                                "%lld allowed for this model", k, (long long)cnt, (long long)fold_cap(cx));
    }
    if (!onnx_has_out(n, k)) {
        ts_tensor_free(t);
        return TS_OK;
    }
    onnx_val *o = out_val(cx, n, k);
    ts_tensor_free(o->known);
    o->known = t;
    o->v = TS_NONE;
    return TS_OK;
}
