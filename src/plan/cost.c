/*
 * cost.c — the cost model (docs/cost-model.md "The cost model"): a scheduled node's FLOPs and
 * bytes from its shapes, its time on a device profile as node_overhead + max(compute, memory), and
 * a compiled program's stages' times per phase (forward and backward per micro-batch, the update
 * per step) with what each stage sends. Reads the runtime's programs read-only.
 */
#include "plan/cost.h"

#include "graph/op_attrs.h"
#include "runtime/pipeline_impl.h"

#include <math.h>

/* Matmul a [.., M, K] (trans_a: [.., K, M]) times b, out [.., M, N]: one product of the batch. */
static void matmul_work(const ts_graph *g, const ts_node *n, ts_node_work *w) {
    const ts_val *a = &g->vals[n->in[0]], *y = &g->vals[n->out[0]];
    ts_attrs_matmul at = ts_attrs_matmul_from(n->attr.i, n->attr.ni, n->attr.f);
    int nd = a->ndim;
    w->m = y->ndim >= 2 ? y->shape[y->ndim - 2] : 1;
    w->n = y->shape[y->ndim - 1];
    w->k = nd >= 2 ? a->shape[at.trans_a ? nd - 2 : nd - 1] : a->shape[0];
    w->flops = 2.0 * (double)ts_val_numel(y) * (double)w->k;
}

/* conv2d x [N, Cin, H, W] * w [Cout, Cin/groups, kh, kw] -> y [N, Cout, Ho, Wo]: each output
 * element a dot product of Cin/groups x kh x kw; the transposed conv and the weight gradient the
 * same products seen from their input and output. */
static void conv_work(const ts_graph *g, const ts_node *n, ts_node_work *w) {
    const ts_val *x = &g->vals[n->in[0]], *y = &g->vals[n->out[0]];
    const ts_val *wt = n->nin > 1 && n->in[1] >= 0 ? &g->vals[n->in[1]] : NULL;
    if (n->op == TS_OP_CONV2D && wt) {
        w->k = ts_val_numel(wt) / wt->shape[0];
        w->flops = 2.0 * (double)ts_val_numel(y) * (double)w->k;
    } else if (n->op == TS_OP_CONV_TRANSPOSE2D && wt) {
        w->k = ts_val_numel(wt) / wt->shape[0];
        w->flops = 2.0 * (double)ts_val_numel(x) * (double)w->k;
    } else { /* the weight gradient: one product per weight element over every output position */
        const ts_val *dy = wt ? wt : x;
        w->k = dy->ndim >= 2 ? ts_val_numel(dy) / dy->shape[1] : 1;
        w->flops = 2.0 * (double)ts_val_numel(y) * (double)w->k;
    }
    w->m = y->ndim >= 2 ? y->shape[1] : 1;
    w->n = w->k ? (int64_t)(w->flops / 2.0 / (double)w->k / (double)(w->m ? w->m : 1)) : 1;
}

void ts_cost_node_work(const ts_graph *g, const ts_node *n, ts_node_work *w) {
    memset(w, 0, sizeof *w);
    w->dtype = n->nin > 0 && n->in[0] >= 0 ? g->vals[n->in[0]].dtype : TS_F32;
    if (ts_op_get(n->op)->flags & TS_OPF_ALIAS0) return; /* a view: no kernel, no traffic */
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] >= 0) w->bytes += (double)ts_val_bytes(&g->vals[n->in[j]]);
    for (int k = 0; k < n->nout; k++) w->bytes += (double)ts_val_bytes(&g->vals[n->out[k]]);
    if (n->op == TS_OP_MATMUL) matmul_work(g, n, w);
    else if (n->op == TS_OP_CONV2D || n->op == TS_OP_CONV_TRANSPOSE2D || n->op == TS_OP_CONV2D_GRAD_WEIGHT)
        conv_work(g, n, w);
}

/* FLOP/s of a product in dtype on p; a dtype the profile has no rate for runs at f32's. */
static double gemm_rate(const ts_device_profile *p, const ts_node_work *w) {
    double r = ts_profile_gemm_flops(p, w->m, w->n, w->k, w->dtype);
    if (r <= 0 && w->dtype != TS_F32) r = ts_profile_gemm_flops(p, w->m, w->n, w->k, TS_F32);
    return r;
}

/* Node n's compute and memory times on p (both 0 for an alias; *kernel 0 then); its FLOPs in
 * *flops when not NULL. */
static void node_times(const ts_graph *g, const ts_node *n, const ts_device_profile *p, int gemm_dtype, double *compute,
                       double *memory, int *kernel, double *flops) {
    ts_node_work w;
    ts_cost_node_work(g, n, &w);
    if (flops) *flops = w.flops;
    if (gemm_dtype >= 0 && w.flops > 0) w.dtype = (ts_dtype)gemm_dtype;
    *compute = *memory = 0;
    *kernel = !(w.bytes == 0 && w.flops == 0);
    if (!*kernel) return;
    double bw = ts_profile_mem_bw(p), rate = w.flops > 0 ? gemm_rate(p, &w) : 0;
    *compute = w.flops > 0 && rate > 0 ? w.flops / rate : 0;
    *memory = bw > 0 ? w.bytes / bw : 0;
}

double ts_cost_node(const ts_graph *g, const ts_node *n, const ts_device_profile *p, int gemm_dtype) {
    double compute, memory;
    int kernel;
    node_times(g, n, p, gemm_dtype, &compute, &memory, &kernel, NULL);
    return kernel ? p->node_overhead + (compute > memory ? compute : memory) : 0;
}

double ts_phase_time(const ts_phase_split *x, double k, double q) {
    return x->ovh + fmax(x->cb_c * k, x->cb_m * q) + fmax(x->mb_c * k, x->mb_m * q);
}

/* Add a node's times to its phase's parts. */
static void split_add(ts_phase_split *x, double compute, double memory, double overhead) {
    if (compute > memory) x->cb_c += compute, x->cb_m += memory;
    else x->mb_c += compute, x->mb_m += memory;
    x->ovh += overhead;
}

/* Stage e's times: phase 0 forward, 1 backward, the rest the update's segments (a program on one
 * device: by ts_node_phase). */
static void cost_exec(const ts_exec *e, const ts_device_profile *p, int gemm_dtype, ts_stage_cost *c) {
    const ts_graph *g = e->g;
    for (int ph = 0; ph < e->nphases; ph++)
        for (int s = e->phase_begin[ph]; s < e->phase_begin[ph + 1]; s++) {
            int id = e->sched[s];
            const ts_node *n = &g->nodes[id];
            int k = e->nphases > 1 ? (ph < TS_PH_UPD ? ph : TS_PH_UPD) : ts_node_phase(g, id, n->op == TS_OP_ACCUM_GRAD);
            double compute, memory, flops;
            int kernel;
            node_times(g, n, p, gemm_dtype, &compute, &memory, &kernel, &flops);
            if (!kernel) continue;
            double t = p->node_overhead + fmax(compute, memory);
            if (k == TS_PH_FWD) c->fwd_s += t, c->fwd_flops += flops;
            else if (k == TS_PH_BWD) c->bwd_s += t, c->bwd_flops += flops;
            else c->upd_s += t;
            split_add(k == TS_PH_FWD ? &c->fwd_x : k == TS_PH_BWD ? &c->bwd_x : &c->upd_x, compute, memory,
                      p->node_overhead);
        }
}

int ts_cost_program(const ts_program *prog, const ts_device_profile *p, int gemm_dtype, ts_stage_cost *c, int cap) {
    int S = ts_program_num_stages(prog);
    if (S > cap) S = cap;
    memset(c, 0, sizeof *c * (size_t)(S > 0 ? S : 0));
    if (prog->one) {
        if (S > 0) cost_exec(prog->one, p, gemm_dtype, &c[0]);
        return S;
    }
    const ts_pipeline *pl = prog->pipe;
    for (int s = 0; s < S; s++) cost_exec(ts_pipeline_stage_exec(pl, s), p, gemm_dtype, &c[s]);
    for (int i = 0; i < pl->nxf; i++) {
        const xfer *x = &pl->xf[i];
        if (!x->per_micro || x->from >= S) continue;
        c[x->from].send_bytes += (double)ts_val_bytes(&pl->g->vals[x->v]);
        c[x->from].nsend++;
    }
    for (int i = 0; i < pl->nrp; i++) {
        const replica *r = &pl->rp[i];
        if (r->to < S && pl->stage_dev[r->from] == pl->stage_dev[r->to])
            c[r->to].shared_bytes += (double)ts_val_bytes(&pl->g->vals[r->v]);
    }
    return S;
}
