/*
 * cpu_view.c — the CPU backend reads a plan through the public tables alone (ts_abi_plan of
 * include/tessera_backend.h), as any plugin does: at compile it rebuilds from them the graph its
 * kernels are written against (src/ops: a ts_kargs holds a graph and a node) — each value's
 * dtype, shape, kind and name, each node's op (found by name), value ids and attributes — and a
 * ts_plan over it whose node ids are the plan's node indices, in run order.
 */
#include "backend/cpu/cpu.h"

static const ts_val_kind kind_of[] = {[TS_ABI_INPUT] = TS_V_INPUT, [TS_ABI_PARAM] = TS_V_PARAM,
                                      [TS_ABI_STATE] = TS_V_STATE, [TS_ABI_CONST] = TS_V_CONST,
                                      [TS_ABI_ACTIVATION] = TS_V_NODE};

static ts_status view_values(const ts_abi_plan *abi, ts_graph *g, uint8_t **kept) {
    g->vals = calloc((size_t)abi->nvalues + 1, sizeof *g->vals);
    uint8_t *k = calloc((size_t)abi->nvalues + 1, 1);
    if (!g->vals || !k) { free(k); return ts_err(TS_ERR_NOMEM, "cpu: out of memory"); }
    g->nvals = g->cap_vals = abi->nvalues;
    int any = 0;
    for (int v = 0; v < abi->nvalues; v++) {
        const ts_abi_value *a = &abi->values[v];
        ts_val *x = &g->vals[v];
        x->dtype = a->dtype;
        x->ndim = a->ndim;
        memcpy(x->shape, a->shape, sizeof x->shape);
        x->kind = a->kind >= TS_ABI_INPUT && a->kind <= TS_ABI_ACTIVATION ? kind_of[a->kind] : TS_V_NODE;
        x->node = x->grad = -1;
        if (a->name && !(x->name = strdup(a->name))) { free(k); return ts_err(TS_ERR_NOMEM, "cpu: out of memory"); }
        any |= k[v] = a->kept != 0;
    }
    if (any) *kept = k;
    else free(k);
    return TS_OK;
}

static ts_status view_nodes(const ts_abi_plan *abi, ts_graph *g) {
    g->nodes = calloc((size_t)abi->nnodes + 1, sizeof *g->nodes);
    if (!g->nodes) return ts_err(TS_ERR_NOMEM, "cpu: out of memory");
    g->nnodes = g->cap_nodes = abi->nnodes;
    for (int i = 0; i < abi->nnodes; i++) {
        const ts_abi_node *a = &abi->nodes[i];
        ts_node *n = &g->nodes[i];
        if ((n->op = ts_op_find(a->op)) < 0) return ts_err(TS_ERR_UNSUPPORTED, "cpu: unknown op '%s'", a->op);
        if (a->nin > TS_MAX_IN || a->nout > TS_MAX_OUT || a->nin < 0 || a->nout < 0)
            return ts_err(TS_ERR_ARG, "cpu: op %s has %d inputs and %d outputs", a->op, a->nin, a->nout);
        n->nin = a->nin, n->nout = a->nout;
        for (int j = 0; j < TS_MAX_IN; j++) n->in[j] = j < a->nin ? a->in[j] : -1;
        for (int k = 0; k < TS_MAX_OUT; k++) n->out[k] = k < a->nout ? a->out[k] : -1;
        for (int j = 0; j < n->nin + n->nout; j++) {
            int v = j < n->nin ? n->in[j] : n->out[j - n->nin];
            if (v < -1 || v >= g->nvals || (v < 0 && j >= n->nin))
                return ts_err(TS_ERR_ARG, "cpu: op %s names value %d of a plan of %d", a->op, v, g->nvals);
        }
        for (int j = 0; j < TS_ABI_MAX_IATTR && j < TS_MAX_DIMS + 4; j++) n->attr.i[j] = a->iattr[j];
        memcpy(n->attr.f, a->fattr, sizeof n->attr.f);
        n->attr.ni = a->niattr;
        n->stage = -1;
        for (int k = 0; k < n->nout; k++) g->vals[n->out[k]].node = i;
    }
    return TS_OK;
}

ts_status ts_cpu_view(const ts_abi_plan *abi, ts_graph **gp, ts_plan *plan) {
    memset(plan, 0, sizeof *plan);
    ts_graph *g = *gp = calloc(1, sizeof *g);
    int *sched = malloc(sizeof(int) * ((size_t)abi->nnodes + 1));
    uint8_t *kept = NULL;
    if (!g || !sched) { free(sched); free(g); *gp = NULL; return ts_err(TS_ERR_NOMEM, "cpu: out of memory"); }
    g->loss = g->bwd_start = g->opt_start = g->cur_stage = -1;
    ts_status s = view_values(abi, g, &kept);
    if (!s) s = view_nodes(abi, g);
    for (int i = 0; i < abi->nnodes; i++) sched[i] = i;
    *plan = (ts_plan){g, sched, abi->nnodes, (ts_abi_value *)abi->values, abi->prof_ns, abi->prof_calls,
                      abi->param_gen, kept, abi->kernel_bytes, NULL};
    if (s) ts_cpu_view_free(g, plan), *gp = NULL;
    return s;
}

void ts_cpu_view_free(ts_graph *g, ts_plan *plan) {
    free((void *)plan->sched);
    free((void *)plan->kept);
    memset(plan, 0, sizeof *plan);
    if (g) ts_graph_free(g);
}
