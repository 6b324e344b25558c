/*
 * import.c — ts_onnx_import: an ONNX graph built into a tessera graph for concrete input shapes.
 * Inputs become ts_input values, initializers known host tensors (materialised as constants
 * where the graph reads them) or, for training, parameters named as in the file; then each node
 * in file order (ONNX requires a topological order) is handed to the mapping its op type and
 * opset select (map/registry.c). Refused nodes are collected over the whole graph — the nodes that
 * read their outputs are skipped — and the import fails once at the end, listing them all.
 * Graph outputs are named as in the file. An If's branches are imported by the same node loop
 * (onnx_import_branch, for map/control.c). Also ts_onnx_load_params.
 */
#include "onnx/onnx_imp.h"
#include "onnx/onnx_testing.h"

#include <stdarg.h>
#include <stdio.h>

static int is_float(ts_dtype d) { return d == TS_F32 || d == TS_F16 || d == TS_BF16; }

/* Does initializer `name` stay a constant under the import options' frozen list? */
static int frozen(const ts_onnx_import_opts *o, const char *name) {
    for (int i = 0; i < o->nfrozen; i++) {
        const char *f = o->frozen[i];
        if (!f) continue;
        size_t len = strlen(f);
        if (len && f[len - 1] == '*' ? !strncmp(f, name, len - 1) : !strcmp(f, name)) return 1;
    }
    return 0;
}

/* A record of a refusal that belongs to no node (inputs, initializers, outputs). */
static void record(ts_onnx_ctx *cx, ts_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void record(ts_onnx_ctx *cx, ts_status code, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    onnx_record(cx, code, msg);
}

static int defined(const onnx_val *v) { return v && (v->v != TS_NONE || v->known || v->dead); }

static void add_inputs(ts_onnx_ctx *cx, const int *ndims, const int64_t *const *shapes,
                       const ts_tensor *const *known) {
    const ts_onnx *m = cx->m;
    for (int i = 0; i < m->ninputs; i++) {
        const char *name = m->inputs[i]->name;
        onnx_val *v = onnx_define(cx, name);
        int nd = m->in_ndim[i];
        const int64_t *sh = m->in_shape[i];
        if (shapes && shapes[i]) {
            nd = ndims[i];
            sh = shapes[i];
        }
        if (nd < 0 || nd > TS_MAX_DIMS) {
            record(cx, TS_ERR_SHAPE, "input '%s': %s", name,
                   nd < 0 ? "the file does not give its rank; pass its shape to the import" : "rank above 8");
            v->dead = 1;
            continue;
        }
        char b[160];
        if (m->in_ndim[i] >= 0 && (nd != m->in_ndim[i] || shapes)) { /* a given shape must fit the declared one */
            int ok = nd == m->in_ndim[i];
            for (int d = 0; ok && d < nd; d++) ok = m->in_shape[i][d] < 0 || m->in_shape[i][d] == sh[d];
            if (!ok) {
                char b2[160];
                record(cx, TS_ERR_SHAPE, "input '%s': shape %s does not match the file's %s (-1: any size)", name,
                       ts_shape_str(nd, sh, b, sizeof b), ts_shape_str(m->in_ndim[i], m->in_shape[i], b2, sizeof b2));
                v->dead = 1;
                continue;
            }
        }
        int bad = -1;
        for (int d = 0; d < nd && bad < 0; d++)
            if (sh[d] <= 0) bad = d;
        if (bad >= 0) {
            record(cx, sh[bad] < 0 ? TS_ERR_SHAPE : TS_ERR_UNSUPPORTED, "input '%s' has shape %s: dim %d is %s; give the input's shape to the import", name,
                   ts_shape_str(nd, sh, b, sizeof b), bad, sh[bad] < 0 ? "dynamic" : "zero (empty tensors are not supported)");
            v->dead = 1;
            continue;
        }
        if (known && known[i]) {
            const ts_tensor *t = known[i];
            if (t->dtype != m->in_dtype[i] || t->ndim != nd || memcmp(t->shape, sh, sizeof(int64_t) * (size_t)nd)) {
                record(cx, TS_ERR_SHAPE, "input '%s': the known tensor is not %s %s", name,
                       ts_dtype_name(m->in_dtype[i]), ts_shape_str(nd, sh, b, sizeof b));
                v->dead = 1;
                continue;
            }
            v->known = ts_tensor_from(t->dtype, t->ndim, t->shape, t->data);
        } else {
            v->v = ts_input(cx->g, name, m->in_dtype[i], nd, sh);
            if (v->v == TS_NONE) {
                record(cx, ts_graph_status(cx->g), "input '%s': %s", name, ts_last_error());
                cx->graph_failed = 1;
                return;
            }
        }
    }
}

static void add_initializers(ts_onnx_ctx *cx, const ts_onnx_import_opts *o) {
    const Onnx__GraphProto *gp = cx->m->model->graph;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        onnx_val *v = onnx_define(cx, tp->name);
        if (defined(v)) continue; /* a graph input of the same name was given (IR < 4: the input wins) */
        char err[512];
        ts_err_clear();
        ts_tensor *t = onnx_tensor_decode(tp, err, sizeof err);
        if (!t) {
            if (ts_last_status() == TS_ERR_NOMEM) onnx_nomem(cx); /* its tensor's allocation failed */
            if (v->consumers) record(cx, TS_ERR_UNSUPPORTED, "initializer: %s", err);
            v->dead = 1;
            continue;
        }
        v->known = t;
        v->init = 1;
        v->i8 = tp->has_data_type && tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT8;
        v->param = o->trainable && is_float(t->dtype) && !v->i8 && !frozen(o, tp->name);
    }
}

/* Import node n, node i of the model's graph (-1: a node of an If's branch); outputs of a
 * refused node are marked dead. */
static void import_node(ts_onnx_ctx *cx, const ts_onnx_node *n, int i) {
    cx->node = n;
    cx->node_index = i;
    cx->attr_read = 0;
    cx->node_refused = 0;
    int skip = 0;
    for (int k = 0; k < onnx_nin(n); k++) {
        if (!onnx_has_in(n, k)) continue;
        onnx_val *v = onnx_lookup(cx, n->input[k]);
        if (!defined(v)) {
            onnx_invalid(cx, n, "input %d '%s' is not a graph input, an initializer or an earlier node's output", k,
                         n->input[k]);
            skip = 1;
        } else if (v->dead) {
            skip = 1; /* already reported where it failed */
        }
    }
    ts_status s = TS_OK;
    if (!skip) {
        const ts_onnx_op *op = onnx_find_op(n->op_type, cx->opset);
        int missing = -1, need = onnx_required_inputs(n->op_type, cx->opset);
        for (int k = 0; k < need && missing < 0; k++)
            if (!onnx_has_in(n, k)) missing = k;
        if (!op) s = onnx_unsupported(cx, n, "op not supported at opset %d", cx->opset);
        else if (missing >= 0) s = onnx_invalid(cx, n, "input %d is missing (%s has %d required inputs)", missing, n->op_type, need);
        else {
            ts_err_clear();
            if (!onnx_fold_node(cx, n, &s)) s = op->import(cx, n);
            /* a mapping that refused the node after an allocation failed (ts_tensor_new's
             * TS_ERR_NOMEM, often passed on as its refusal's message): the import is out of memory */
            if (s != TS_OK && ts_last_status() == TS_ERR_NOMEM) onnx_nomem(cx);
        }
        if (s == TS_OK) {
            const char *unread = onnx_attr_unread(cx, n);
            if (unread) s = onnx_unsupported(cx, n, "attribute '%s' is not supported", unread);
        }
        for (int k = 0; s == TS_OK && k < onnx_nout(n); k++)
            if (onnx_has_out(n, k) && !defined(onnx_lookup(cx, n->output[k])))
                s = onnx_unsupported(cx, n, "output %d '%s' is not produced by tessera's mapping", k, n->output[k]);
        if (ts_graph_status(cx->g) != TS_OK) { /* a builder failure the function did not check */
            if (ts_graph_status(cx->g) == TS_ERR_NOMEM) onnx_nomem(cx);
            if (!cx->node_refused) onnx_check(cx, n);
            else onnx_graph_recover(cx->g);
            if (s == TS_OK) s = TS_ERR_ARG;
        }
        if (s != TS_OK && !cx->node_refused) /* an import function that failed without saying why */
            onnx_unsupported(cx, n, "%s", ts_last_error());
    }
    if (!skip && s != TS_OK && cx->wanted) /* graph inputs the refused node read */
        for (int k = 0; k < onnx_nin(n); k++)
            for (int i = 0; onnx_has_in(n, k) && i < cx->m->ninputs; i++)
                if (!strcmp(cx->m->inputs[i]->name, n->input[k])) cx->wanted[i] = 1;
    if (skip || s != TS_OK)
        for (int k = 0; k < onnx_nout(n); k++)
            if (onnx_has_out(n, k)) {
                onnx_val *o = onnx_define(cx, n->output[k]);
                o->dead = 1;
                o->producer = i;
            }
    cx->node = NULL;
}

ts_status onnx_import_branch(ts_onnx_ctx *cx, const Onnx__GraphProto *b) {
    const ts_onnx_node *node = cx->node;
    int index = cx->node_index, refused = cx->node_refused;
    uint64_t read = cx->attr_read;
    for (size_t i = 0; i < b->n_node && !cx->graph_failed; i++) import_node(cx, b->node[i], -1);
    cx->node = node;
    cx->node_index = index;
    cx->node_refused = refused;
    cx->attr_read = read;
    return cx->graph_failed ? TS_ERR_ARG : TS_OK;
}

/* Count the readers of every value in graph gp and the subgraphs of its nodes (an If's branches
 * read values of the enclosing graph by name; a branch's outputs are read by its If). */
static void count_consumers(ts_onnx_ctx *cx, const Onnx__GraphProto *gp, int depth) {
    for (size_t i = 0; i < gp->n_node; i++) {
        const ts_onnx_node *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k] && *n->input[k]) onnx_define(cx, n->input[k])->consumers++;
        for (size_t a = 0; a < n->n_attribute && depth < 64; a++) {
            const Onnx__GraphProto *sub = n->attribute[a]->g;
            if (!sub) continue;
            count_consumers(cx, sub, depth + 1);
            for (size_t j = 0; j < sub->n_output; j++)
                if (sub->output[j]->name && *sub->output[j]->name) onnx_define(cx, sub->output[j]->name)->consumers++;
        }
    }
}

/* Name graph output j; its value in *out. */
static void add_output(ts_onnx_ctx *cx, int j, ts_value *out) {
    const char *name = cx->m->outputs[j]->name;
    onnx_val *v = onnx_lookup(cx, name);
    *out = TS_NONE;
    if (!defined(v)) {
        record(cx, TS_ERR_IO, "graph output '%s' is not produced by any node, input or initializer", name);
        return;
    }
    if (v->dead) return;
    ts_graph *g = cx->g;
    ts_value x = onnx_graph_value(cx, v, name);
    if (x == TS_NONE) {
        record(cx, ts_graph_status(g), "graph output '%s': %s", name, ts_last_error());
        cx->graph_failed = 1;
        return;
    }
    const ts_val *xv = &g->vals[x];
    if (xv->name && !strcmp(xv->name, name)) { /* an input (or parameter) that is an output itself */
        *out = x;
        return;
    }
    if (xv->kind != TS_V_NODE || xv->name) { /* a copy to carry the name */
        int64_t sh[TS_MAX_DIMS];
        int nd = ts_value_shape(g, x, sh);
        x = ts_reshape(g, x, nd, sh);
    }
    *out = ts_name(g, x, name);
    if (*out == TS_NONE) {
        record(cx, ts_graph_status(g), "graph output '%s': %s", name, ts_last_error());
        cx->graph_failed = 1;
    }
}

ts_status onnx_import_ex(const ts_onnx *m, ts_graph *g, const int *ndims, const int64_t *const *shapes,
                         const ts_onnx_import_opts *opts, ts_value *outs, const ts_tensor *const *known_inputs) {
    return onnx_import_wanted(m, g, ndims, shapes, opts, outs, known_inputs, NULL);
}

ts_status onnx_import_wanted(const ts_onnx *m, ts_graph *g, const int *ndims, const int64_t *const *shapes,
                             const ts_onnx_import_opts *opts, ts_value *outs, const ts_tensor *const *known_inputs,
                             int *wanted) {
    if (m && wanted) memset(wanted, 0, sizeof *wanted * (size_t)m->ninputs);
    if (!m || !g) return ts_err(TS_ERR_ARG, "ts_onnx_import: %s is NULL", m ? "the graph" : "the model");
    if (shapes && !ndims) return ts_err(TS_ERR_ARG, "ts_onnx_import: shapes given without ndims");
    if (ts_graph_status(g) != TS_OK)
        return ts_err(ts_graph_status(g), "ts_onnx_import: the graph already failed: %s", ts_graph_msg(g));
    ts_onnx_import_opts o = opts ? *opts : (ts_onnx_import_opts){0};
    const ts_tensor **merged = NULL; /* known_inputs, and the values the options fix */
    if (o.values) {
        merged = calloc((size_t)m->ninputs + 1, sizeof *merged);
        if (!merged) return ts_err(TS_ERR_NOMEM, "ts_onnx_import: out of memory");
        for (int i = 0; i < m->ninputs; i++) merged[i] = known_inputs && known_inputs[i] ? known_inputs[i] : o.values[i];
        known_inputs = merged;
    }
    ts_onnx_ctx cx = {.g = g, .m = m, .opset = m->opset, .trainable = o.trainable, .frozen = o.frozen,
                      .nfrozen = o.nfrozen, .wanted = wanted};
    const Onnx__GraphProto *gp = m->model->graph;
    count_consumers(&cx, gp, 0); /* who reads what: for fusions that need one consumer */
    for (int j = 0; j < m->noutputs; j++) onnx_define(&cx, m->outputs[j]->name)->consumers++;

    add_inputs(&cx, ndims, shapes, known_inputs);
    if (!cx.graph_failed) add_initializers(&cx, &o);
    for (size_t i = 0; i < gp->n_node && !cx.graph_failed; i++) import_node(&cx, gp->node[i], (int)i);
    for (int j = 0; j < m->noutputs && !cx.graph_failed; j++) {
        ts_value v;
        add_output(&cx, j, &v);
        if (outs) outs[j] = v;
    }
    ts_status s = TS_OK;
    if (cx.nomem) /* whatever else was refused: the import could not go on */
        s = ts_err(TS_ERR_NOMEM, "ts_onnx_import: out of memory importing %s (opset %d)%s%s", m->what, m->opset,
                   cx.errors ? "; the problems until then: " : "", cx.errors ? cx.errors : "");
    else if (cx.nerrors)
        s = ts_err(cx.first_code, "%s (opset %d): %d problem%s importing: %s%s", m->what, m->opset, cx.nerrors,
                   cx.nerrors == 1 ? "" : "s", cx.errors ? cx.errors : "", cx.nerrors > 24 ? "; ..." : "");
    onnx_ctx_free(&cx);
    free(merged);
    return s;
}

ts_status ts_onnx_import(const ts_onnx *m, ts_graph *g, const int *ndims, const int64_t *const *shapes,
                         const ts_onnx_import_opts *opts, ts_value *outs) {
    ts_onnx_import_opts o = {0};
    if (opts && TS_STRUCT_READ(&o, opts, ts_onnx_import_opts, "ts_onnx_import")) return TS_ERR_ARG;
    return onnx_import_ex(m, g, ndims, shapes, opts ? &o : NULL, outs, NULL);
}

/* The initializer called name, or NULL. */
const Onnx__TensorProto *onnx_initializer(const ts_onnx *m, const char *name) {
    const Onnx__GraphProto *gp = m->model->graph;
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (!strcmp(gp->initializer[i]->name, name)) return gp->initializer[i];
    return NULL;
}

ts_status ts_onnx_load_params(const ts_onnx *m, ts_program *p) {
    if (!m || !p) return ts_err(TS_ERR_ARG, "ts_onnx_load_params: %s is NULL", m ? "the program" : "the model");
    for (int i = 0, np = ts_program_num_params(p); i < np; i++) {
        const char *name = ts_program_param_name(p, i);
        const Onnx__TensorProto *tp = onnx_initializer(m, name);
        if (!tp) continue; /* a parameter the model does not hold (added after the import) */
        char err[512];
        ts_tensor *t = onnx_tensor_decode(tp, err, sizeof err);
        if (!t) return ts_err(TS_ERR_IO, "%s: %s", m->what, err);
        ts_status s = ts_program_set_param(p, name, t);
        ts_tensor_free(t);
        if (s) return ts_err(s, "%s: initializer '%s': %s", m->what, name, ts_last_error());
    }
    return TS_OK;
}
