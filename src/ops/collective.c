/*
 * collective.c — the in-graph collectives that ts_optimizer inserts for replicas (data
 * parallelism over the ranks of a communicator, src/comm/comm.c). Both are side effects with no
 * output; neither is differentiable.
 *
 *   comm_start(x, micro?)   post a collective on x's buffer and return at once:
 *                             kind 0  all-reduce:  x = sum over the ranks of x  (in place)
 *                             kind 1  broadcast:   x = x of rank `root`
 *   comm_wait(x, micro?)    block until the comm_start of the same channel and tag completed
 *                           (its timeout is the communicator's; past it, TS_ERR_COMM naming the
 *                           ranks that did not arrive).
 * x is a persistent f32 value: a gradient bucket (the "<p>@ACCUM" accumulators of several
 * parameters, contiguous) or a parameter. With micro (the micro-batch counter), both act only at
 * the last micro-batch of a step (micro + 1 == N) and are no-ops before it.
 * attrs i[0] = communicator id, i[1] = channel (1 + the pipeline stage), i[2] = kind,
 *       i[3] = root (broadcast), i[4] = N (micro-batches a step; <= 1: every run), i[5] = tag
 *       (the bucket or parameter number, unique on its channel).
 */
#include "comm/comm.h"
#include "ops/op.h"

#include <stdio.h>

static ts_status infer_comm(ts_graph *g, ts_node *n) {
    const char *name = ts_op_get(n->op)->name;
    const ts_val *x = &g->vals[n->in[0]];
    int bcast = n->attr.i[2] == 1; /* a broadcast moves bytes: 16-bit parameters too */
    if ((x->kind != TS_V_STATE && x->kind != TS_V_PARAM) ||
        (x->dtype != TS_F32 && !(bcast && (x->dtype == TS_BF16 || x->dtype == TS_F16))))
        return ts_err(TS_ERR_ARG, "op %s: %s must be an f32 parameter or state value (bf16 / f16 for a broadcast)",
                      name, ts_val_str(g, n->in[0], (char[256]){0}, 256));
    if (n->nin > 1 && n->in[1] >= 0) {
        ts_status s = ts_need_scalar(g, n, 1, "micro-batch counter");
        if (s) return s;
    }
    const ts_attrs *a = &n->attr;
    if (a->i[0] < 0 || a->i[1] < 1 || a->i[1] > TS_MAX_STAGES || (a->i[2] != 0 && a->i[2] != 1) || a->i[3] < 0 ||
        a->i[5] < 0)
        return ts_err(TS_ERR_ARG, "op %s: communicator %lld, channel %lld, kind %lld, root %lld or tag %lld out of "
                      "range", name, (long long)a->i[0], (long long)a->i[1], (long long)a->i[2], (long long)a->i[3],
                      (long long)a->i[5]);
    if (a->i[4] > 1 && (n->nin < 2 || n->in[1] < 0))
        return ts_err(TS_ERR_ARG, "op %s: %lld micro-batches a step need the micro-batch counter", name,
                      (long long)a->i[4]);
    return TS_OK;
}

/* Does node n act in this run (the step's last micro-batch, or every run)? */
static int acts(const ts_kargs *k) {
    const ts_node *n = k->node;
    if (n->attr.i[4] <= 1 || n->nin < 2 || !k->in[1]) return 1;
    return *(const float *)k->in[1] + 1.f >= (float)n->attr.i[4];
}

static ts_comm *comm_of(const ts_kargs *k, ts_status *st) {
    ts_comm *c = ts_comm_by_id((int)k->node->attr.i[0]);
    *st = c ? TS_OK : ts_err(TS_ERR_COMM, "op %s: communicator %lld does not exist (finalized?)",
                             ts_op_get(k->node->op)->name, (long long)k->node->attr.i[0]);
    return c;
}

static ts_status start_kernel(const ts_kargs *k) {
    if (!acts(k)) return TS_OK;
    ts_status st;
    ts_comm *c = comm_of(k, &st);
    if (!c) return st;
    const ts_attrs *a = &k->node->attr;
    ts_coll op = {.kind = a->i[2] == 0 ? TS_COLL_ALLREDUCE : TS_COLL_BROADCAST, .buf = k->in[0],
                  .count = ts_val_numel(&k->g->vals[k->node->in[0]]),
                  .dtype = k->g->vals[k->node->in[0]].dtype, .root = (int)a->i[3]};
    return ts_comm_post_tag(c, (int)a->i[1], (int)a->i[5], &op);
}

static ts_status wait_kernel(const ts_kargs *k) {
    if (!acts(k)) return TS_OK;
    ts_status st;
    ts_comm *c = comm_of(k, &st);
    if (!c) return st;
    const ts_attrs *a = &k->node->attr;
    char what[64];
    if (a->i[2] == 0) snprintf(what, sizeof what, "the gradient all-reduce (stage %lld, bucket %lld)",
                               (long long)a->i[1] - 1, (long long)a->i[5]);
    else snprintf(what, sizeof what, "the parameter broadcast (stage %lld)", (long long)a->i[1] - 1);
    return ts_comm_wait_tag(c, (int)a->i[1], (int)a->i[5], what);
}

const ts_op_def ts_opdef_comm_start = {"comm_start", 1, 2, 0, TS_OPF_SIDE_EFFECT, infer_comm, NULL, start_kernel, NULL};
const ts_op_def ts_opdef_comm_wait = {"comm_wait", 1, 2, 0, TS_OPF_SIDE_EFFECT, infer_comm, NULL, wait_kernel, NULL};
