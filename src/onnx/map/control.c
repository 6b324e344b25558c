/*
 * control.c — control flow: If. Its then_branch and else_branch are subgraphs without inputs
 * that read values of the enclosing graphs by name (outer-scope references). A static graph
 * takes them one of two ways:
 *  - the condition is known at import (a constant, a result the importer folded from shapes and
 *    constants, or a graph input the caller fixed to a value: ts_onnx_import_opts.values,
 *    ts_onnx_session_fix): only the taken branch is imported, inline, and the If's outputs are
 *    its outputs;
 *  - otherwise both branches are imported and each output is Where(cond, then, else): both run,
 *    so they must agree in shape and dtype (a clear refusal naming the node when they do not).
 *    When that fails, the graph inputs the condition is computed from are reported as wanted,
 *    so a session imports again with their values known (onnx_import_wanted).
 */
#include "onnx/map/map.h"

#include <stdio.h>

/* dtype and shape of the value called name (known or graph): its rank, -1 when dead or absent. */
static int val_shape(ts_onnx_ctx *cx, const char *name, ts_dtype *dt, int64_t sh[TS_MAX_DIMS]) {
    onnx_val *v = onnx_lookup(cx, name);
    if (!v || v->dead) return -1;
    if (v->known && !v->param) {
        *dt = v->known->dtype;
        memcpy(sh, v->known->shape, sizeof(int64_t) * (size_t)v->known->ndim);
        return v->known->ndim;
    }
    ts_value x = onnx_graph_value(cx, v, name);
    if (x == TS_NONE) return -1;
    *dt = ts_value_dtype(cx->g, x);
    return ts_value_shape(cx->g, x, sh);
}

/* Mark as wanted the graph inputs that value `name` is computed from (through the producing
 * nodes of the main graph, depth-bounded). */
static void want_sources(ts_onnx_ctx *cx, const char *name, int depth) {
    onnx_val *v = onnx_lookup(cx, name);
    if (!v || !cx->wanted || depth > 32) return;
    if (v->producer < 0) {
        for (int i = 0; i < cx->m->ninputs; i++)
            if (!strcmp(cx->m->inputs[i]->name, name)) cx->wanted[i] = 1;
        return;
    }
    const ts_onnx_node *p = onnx_node_at(cx, v->producer);
    for (int k = 0; p && k < onnx_nin(p); k++)
        if (onnx_has_in(p, k)) want_sources(cx, p->input[k], depth + 1);
}

/* A branch must have no inputs and as many outputs as the If. */
static ts_status check_branch(ts_onnx_ctx *cx, const ts_onnx_node *n, const Onnx__GraphProto *b, const char *which) {
    if (!b) return onnx_invalid(cx, n, "attribute '%s' is missing (an If needs both branches)", which);
    if (b->n_input) return onnx_invalid(cx, n, "%s has %zu inputs; a branch has none", which, b->n_input);
    if (b->n_output != n->n_output)
        return onnx_invalid(cx, n, "%s has %zu outputs; the If has %zu", which, b->n_output, n->n_output);
    for (size_t k = 0; k < b->n_output; k++)
        if (!b->output[k]->name || !*b->output[k]->name) return onnx_invalid(cx, n, "%s's output %zu has no name", which, k);
    return TS_OK;
}

/* The taken branch's outputs become the If's (a copy of a known one; the same graph value). */
static ts_status take(ts_onnx_ctx *cx, const ts_onnx_node *n, const Onnx__GraphProto *b) {
    if (onnx_import_branch(cx, b) != TS_OK) return onnx_check(cx, n);
    for (int k = 0; k < onnx_nout(n); k++) {
        const char *name = b->output[k]->name;
        onnx_val *v = onnx_lookup(cx, name);
        if (!v || v->dead) { /* refused inside the branch, already reported */
            cx->node_refused = 1;
            return TS_ERR_UNSUPPORTED;
        }
        ts_status s;
        if (v->known && !v->param) {
            const ts_tensor *t = v->known;
            s = onnx_set_known(cx, n, k, ts_tensor_from(t->dtype, t->ndim, t->shape, t->data));
        } else {
            s = onnx_set(cx, n, k, onnx_graph_value(cx, v, name));
        }
        if (s) return s;
    }
    return TS_OK;
}

/* Both branches imported; each output selected on the condition. */
static ts_status select_both(ts_onnx_ctx *cx, const ts_onnx_node *n, const Onnx__GraphProto *tb,
                             const Onnx__GraphProto *eb) {
    for (int k = 0; k < onnx_nout(n); k++) /* one namespace for both: ONNX names are unique across scopes */
        if (!strcmp(tb->output[k]->name, eb->output[k]->name))
            return onnx_unsupported(cx, n, "both branches name output %d '%s', and both must run (the condition is not "
                                    "known at import)", k, tb->output[k]->name);
    if (onnx_import_branch(cx, tb) != TS_OK || onnx_import_branch(cx, eb) != TS_OK) return onnx_check(cx, n);
    ts_value c = ts_reshape(cx->g, onnx_in(cx, n, 0), 0, NULL);
    for (int k = 0; k < onnx_nout(n); k++) {
        const char *tn = tb->output[k]->name, *en = eb->output[k]->name;
        ts_dtype td = TS_F32, ed = TS_F32;
        int64_t ts[TS_MAX_DIMS], es[TS_MAX_DIMS];
        int tr = val_shape(cx, tn, &td, ts), er = val_shape(cx, en, &ed, es);
        if (tr < 0 || er < 0) { /* refused inside a branch, already reported */
            cx->node_refused = 1;
            return TS_ERR_UNSUPPORTED;
        }
        if (td != ed || tr != er || memcmp(ts, es, sizeof(int64_t) * (size_t)tr)) {
            char a[160], b[160];
            return onnx_unsupported(cx, n, "the condition is not known at import, so both branches run and output %d "
                                    "is selected, but then_branch gives %s %s and else_branch %s %s; fix the "
                                    "inputs it depends on (ts_onnx_session_fix) to take one branch",
                                    k, ts_dtype_name(td), ts_shape_str(tr, ts, a, sizeof a), ts_dtype_name(ed),
                                    ts_shape_str(er, es, b, sizeof b));
        }
        ts_value x = onnx_graph_value(cx, onnx_lookup(cx, tn), tn), y = onnx_graph_value(cx, onnx_lookup(cx, en), en);
        ts_status s = onnx_set(cx, n, k, ts_select(cx->g, c, x, y));
        if (s) return s;
    }
    return TS_OK;
}

static ts_status imp_if(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const Onnx__GraphProto *tb = onnx_attr_graph(cx, n, "then_branch"), *eb = onnx_attr_graph(cx, n, "else_branch");
    if (cx->node_refused) return TS_ERR_IO;
    ts_status s = check_branch(cx, n, tb, "then_branch");
    if (!s) s = check_branch(cx, n, eb, "else_branch");
    if (s) return s;
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    if (onnx_in_dtype(cx, n, 0) != TS_U8 || ts_numel(r, sh) != 1)
        return onnx_invalid(cx, n, "the condition must be one BOOL element");
    const ts_tensor *c = onnx_known(cx, n, 0);
    if (c) return take(cx, n, onnx_get_f64(c, 0) != 0 ? tb : eb);
    s = select_both(cx, n, tb, eb);
    if (s) want_sources(cx, n->input[0], 0);
    return s;
}

static const ts_onnx_op ops[] = {
    {"If", 9, 17, imp_if},
};
const onnx_family onnx_family_control = {"control", ops, (int)(sizeof ops / sizeof *ops)};
