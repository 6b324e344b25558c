/*
 * program_work.c — what a compiled program's kernels compute and move, read from its schedule for
 * a cost model (the planner's, apps/plan/cost.c; docs/cost-model.md): ts_program_stage_work, each
 * scheduled kernel of a stage with its phase, op, FLOPs, bytes and GEMM shape, and
 * ts_program_stage_traffic, what a pipeline stage sends to the others and the persistent values it
 * keeps copies of. Reads the program read-only: only what ts_compile fixed, never a buffer.
 */
#include "graph/op_attrs.h"
#include "runtime/pipeline_impl.h"

/* Matmul a [.., M, K] (trans_a: [.., K, M]) times b -> y [.., M, N]: one product of the batch is
 * M x N x K, and the node 2 K FLOPs per output element. */
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
 * element a dot product of K = Cin/groups x kh x kw (2 K FLOPs); the transposed conv the same
 * products seen from its input x (2 K per element of x), and the weight gradient one product per
 * weight element over every output position of dy [N, Cout, Ho, Wo] (K = N Ho Wo). GEMM shape:
 * M = y's channels, K as above, N = FLOPs / (2 M K). */
static void conv_work(const ts_graph *g, const ts_node *n, ts_node_work *w) {
    const ts_val *x = &g->vals[n->in[0]], *y = &g->vals[n->out[0]];
    const ts_val *wt = n->nin > 1 && n->in[1] >= 0 ? &g->vals[n->in[1]] : NULL;
    if (n->op == TS_OP_CONV2D && wt) {
        w->k = ts_val_numel(wt) / wt->shape[0];
        w->flops = 2.0 * (double)ts_val_numel(y) * (double)w->k;
    } else if (n->op == TS_OP_CONV_TRANSPOSE2D && wt) {
        w->k = ts_val_numel(wt) / wt->shape[0];
        w->flops = 2.0 * (double)ts_val_numel(x) * (double)w->k;
    } else { /* the weight gradient */
        const ts_val *dy = wt ? wt : x;
        w->k = dy->ndim >= 2 ? ts_val_numel(dy) / dy->shape[1] : 1;
        w->flops = 2.0 * (double)ts_val_numel(y) * (double)w->k;
    }
    w->m = y->ndim >= 2 ? y->shape[1] : 1;
    w->n = w->k ? (int64_t)(w->flops / 2.0 / (double)w->k / (double)(w->m ? w->m : 1)) : 1;
}

/* attention (q, k, v, ...) of B H heads, T queries, S keys, head size D (ops/attention.c): its
 * products as they run, the forward's two (q k^T, p v: 4 B H T S D FLOPs), the backward's five (the
 * scores again, gy v^T, pd^T gy, gz k, gz^T q: 10 B H T S D); GEMM shape M = T, N = S, K = D, in
 * the op's compute dtype. Its bytes are its inputs and outputs only: no [T, S] tile reaches memory. */
static void attention_work(const ts_graph *g, const ts_node *n, ts_node_work *w) {
    const int64_t *q = g->vals[n->in[0]].shape, *k = g->vals[n->in[1]].shape;
    int bhtd = n->attr.i[2] == TS_ATTN_BHTD;
    double B = (double)q[0], H = (double)(bhtd ? q[1] : q[2]), T = (double)(bhtd ? q[2] : q[1]),
           S = (double)(bhtd ? k[2] : k[1]), D = (double)q[3];
    w->m = (int64_t)T, w->n = (int64_t)S, w->k = (int64_t)D;
    w->flops = (n->op == TS_OP_ATTENTION ? 4.0 : 10.0) * B * H * T * S * D;
    w->dtype = (ts_dtype)n->attr.i[3];
}

/* Node n's work (phase left to the caller): bytes = the sizes of its inputs and outputs (each
 * read or written once), FLOPs and GEMM shape for matmul, conv and attention. 0 when n is a view (an op
 * whose output 0 is input 0's bytes: no kernel), which the caller leaves out. */
static int node_work(const ts_graph *g, const ts_node *n, ts_node_work *w) {
    const ts_op_def *def = ts_op_get(n->op);
    memset(w, 0, sizeof *w);
    w->op = def->name;
    w->dtype = n->nin > 0 && n->in[0] >= 0 ? g->vals[n->in[0]].dtype : TS_F32;
    if (def->flags & TS_OPF_ALIAS0) return 0;
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] >= 0) w->bytes += (double)ts_val_bytes(&g->vals[n->in[j]]);
    for (int k = 0; k < n->nout; k++) w->bytes += (double)ts_val_bytes(&g->vals[n->out[k]]);
    if (n->op == TS_OP_MATMUL) matmul_work(g, n, w);
    else if (n->op == TS_OP_ATTENTION || n->op == TS_OP_ATTENTION_GRAD) attention_work(g, n, w);
    else if (n->op == TS_OP_CONV2D || n->op == TS_OP_CONV_TRANSPOSE2D || n->op == TS_OP_CONV2D_GRAD_WEIGHT)
        conv_work(g, n, w);
    return 1;
}

/* The kernels of e in schedule order, up to cap into out; returns how many. A pipeline stage's
 * program (phases > 1) runs forward (phase 0), backward (1), then the update's segments (2, 3, ..:
 * all phase 2); a program on one device has one phase, its nodes placed by their index in the
 * graph (ts_node_phase; gradient accumulation runs with the backward). */
static int exec_work(const ts_exec *e, ts_node_work *out, int cap) {
    const ts_graph *g = e->g;
    int count = 0;
    for (int ph = 0; ph < e->nphases; ph++)
        for (int s = e->phase_begin[ph]; s < e->phase_begin[ph + 1]; s++) {
            int id = e->sched[s];
            const ts_node *n = &g->nodes[id];
            ts_node_work w;
            if (!node_work(g, n, &w)) continue;
            w.phase = e->nphases > 1 ? (ph < TS_PH_UPD ? ph : TS_PH_UPD)
                                     : ts_node_phase(g, id, n->op == TS_OP_ACCUM_GRAD);
            if (count < cap) out[count] = w;
            count++;
        }
    return count;
}

/* Stage `stage`'s program, or NULL with the error set (fn names the caller). */
static const ts_exec *stage_exec(const ts_program *p, int stage, const char *fn) {
    if (!p) {
        ts_err(TS_ERR_ARG, "%s: the program is NULL", fn);
        return NULL;
    }
    int S = ts_program_num_stages(p);
    if (stage < 0 || stage >= S) {
        ts_err(TS_ERR_ARG, "%s: stage %d of a program of %d stage%s", fn, stage, S, S == 1 ? "" : "s");
        return NULL;
    }
    return p->pipe ? ts_pipeline_stage_exec(p->pipe, stage) : p->one;
}

int ts_program_stage_work(const ts_program *p, int stage, ts_node_work *out, int cap) {
    static const char fn[] = "ts_program_stage_work";
    const ts_exec *e = stage_exec(p, stage, fn);
    if (!e) return -1;
    if (cap < 0 || (cap > 0 && !out)) {
        ts_err(TS_ERR_ARG, "%s: cap %d with out %s", fn, cap, out ? "set" : "NULL");
        return -1;
    }
    return exec_work(e, out, cap);
}

/* A pipeline's transfers and replicas for stage s: per micro-batch, the bytes and number of the
 * values it sends (made in its forward or backward); the bytes of the persistent values whose
 * master copy is on another stage of the same device (refreshed here each step: a second copy on
 * one device). */
static void pipe_traffic(const ts_pipeline *pl, int s, double *send, int *nsend, double *shared) {
    for (int i = 0; i < pl->nxf; i++) {
        const xfer *x = &pl->xf[i];
        if (!x->per_micro || x->from != s) continue;
        *send += (double)ts_val_bytes(&pl->g->vals[x->v]);
        (*nsend)++;
    }
    for (int i = 0; i < pl->nrp; i++) {
        const replica *r = &pl->rp[i];
        if (r->to == s && pl->stage_dev[r->from] == pl->stage_dev[r->to])
            *shared += (double)ts_val_bytes(&pl->g->vals[r->v]);
    }
}

ts_status ts_program_stage_traffic(const ts_program *p, int stage, double *send_bytes, int *nsend,
                                   double *shared_bytes) {
    if (!stage_exec(p, stage, "ts_program_stage_traffic")) return ts_last_status();
    double send = 0, shared = 0;
    int n = 0;
    if (p->pipe) pipe_traffic(p->pipe, stage, &send, &n, &shared);
    if (send_bytes) *send_bytes = send;
    if (nsend) *nsend = n;
    if (shared_bytes) *shared_bytes = shared;
    return TS_OK;
}
