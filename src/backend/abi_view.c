/*
 * abi_view.c — tessera's IR as the device ABI shows it (include/tessera_backend.h): a node by op
 * name with its value ids and attributes, a value by dtype, shape and kind; and the question a
 * device is asked of each node, "do you run this?", with only the values the node touches.
 */
#include "backend/backend.h"

void ts_abi_node_from(const ts_node *n, ts_abi_node *a) {
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->op = ts_op_get(n->op)->name;
    a->op_id = n->op;
    a->nin = n->nin;
    a->nout = n->nout;
    for (int j = 0; j < TS_ABI_MAX_IN; j++) a->in[j] = j < n->nin ? n->in[j] : -1;
    for (int k = 0; k < TS_ABI_MAX_OUT; k++) a->out[k] = k < n->nout ? n->out[k] : -1;
    for (int i = 0; i < TS_ABI_MAX_IATTR && i < TS_MAX_DIMS + 4; i++) a->iattr[i] = n->attr.i[i];
    memcpy(a->fattr, n->attr.f, sizeof a->fattr);
    a->niattr = n->attr.ni;
}

void ts_abi_value_from(const ts_val *x, ts_abi_value *a) {
    static const int kind[] = {[TS_V_INPUT] = TS_ABI_INPUT, [TS_V_PARAM] = TS_ABI_PARAM, [TS_V_STATE] = TS_ABI_STATE,
                               [TS_V_CONST] = TS_ABI_CONST, [TS_V_NODE] = TS_ABI_ACTIVATION};
    ts_buffer buf = a->buf;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->dtype = x->dtype;
    a->ndim = x->ndim;
    memcpy(a->shape, x->shape, sizeof a->shape);
    a->buf = buf;
    a->name = x->name;
    a->kind = kind[x->kind];
}

/* The node renumbered to a table of its own values: inputs 0 .., then outputs. */
int ts_dev_supports(const ts_device *d, const ts_graph *g, const ts_node *n) {
    ts_abi_node a;
    ts_abi_value v[TS_ABI_MAX_IN + TS_ABI_MAX_OUT];
    ts_abi_node_from(n, &a);
    int k = 0;
    for (int j = 0; j < n->nin; j++) {
        if (n->in[j] < 0) continue;
        memset(&v[k], 0, sizeof v[k]);
        ts_abi_value_from(&g->vals[n->in[j]], &v[k]);
        a.in[j] = k++;
    }
    for (int o = 0; o < n->nout; o++) {
        memset(&v[k], 0, sizeof v[k]);
        ts_abi_value_from(&g->vals[n->out[o]], &v[k]);
        a.out[o] = k++;
    }
    ts_dev_enter(d, "supports of a %s node", a.op);
    int yes = d->api->supports(d->ctx, &a, v) != 0;
    ts_dev_leave(d, TS_OK);
    return yes;
}


size_t ts_dev_max_alloc(const ts_device *d) { return TS_API_HAS(d->api, max_alloc) ? d->api->max_alloc(d->ctx) : 0; }
