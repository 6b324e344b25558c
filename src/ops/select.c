/*
 * select.c — ts_select: cond ? a : b elementwise with numpy broadcasting, for a and b of any one
 * dtype (cond u8, non-zero is true). f32 operands are built as ts_where (which has gradients);
 * the op "select" takes the other dtypes, moving each element by its byte size, and carries no
 * gradient (integer values have none).
 */
#include "ops/bcast.h"
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)
#define PAR_ELEMS 32768

static ts_status infer_select(ts_graph *g, ts_node *n) {
    const ts_val *c = &g->vals[n->in[0]], *a = &g->vals[n->in[1]], *b = &g->vals[n->in[2]];
    if (c->dtype != TS_U8)
        return ts_err(TS_ERR_DTYPE, "op select: condition %s must be u8", VS(g, n->in[0]));
    if (a->dtype != b->dtype)
        return ts_err(TS_ERR_DTYPE, "op select: %s and %s have different dtypes", VS(g, n->in[1]),
                      VS(g, n->in[2]));
    int64_t s1[TS_MAX_DIMS], s2[TS_MAX_DIMS];
    int n1 = ts_broadcast_shape(c->ndim, c->shape, a->ndim, a->shape, s1);
    int n2 = n1 < 0 ? -1 : ts_broadcast_shape(n1, s1, b->ndim, b->shape, s2);
    if (n2 < 0)
        return ts_err(TS_ERR_SHAPE, "op select: shapes of %s, %s and %s do not broadcast", VS(g, n->in[0]),
                      VS(g, n->in[1]), VS(g, n->in[2]));
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = a->dtype;
    o->ndim = n2;
    if (n2) memcpy(o->shape, s2, sizeof(int64_t) * (size_t)n2);
    return TS_OK;
}

static ts_status select_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *c = &g->vals[n->in[0]], *a = &g->vals[n->in[1]], *b = &g->vals[n->in[2]],
                 *o = &g->vals[n->out[0]];
    ts_bcast bc;
    ts_bcast_init(&bc, o->ndim, o->shape, 3, (int[]){c->ndim, a->ndim, b->ndim},
                  (const int64_t *const[]){c->shape, a->shape, b->shape});
    size_t es = ts_dtype_size(o->dtype);
    const uint8_t *C = k->in[0];
    const char *A = k->in[1], *B = k->in[2];
    char *O = k->out[0];
    int last = bc.nd - 1;
    if (bc.cols == 0) return TS_OK;
#pragma omp parallel for schedule(static) if (bc.rows * bc.cols > PAR_ELEMS)
    for (int64_t r = 0; r < bc.rows; r++) {
        const uint8_t *pc = C + ts_bcast_row(&bc, 0, r);
        const char *pa = A + ts_bcast_row(&bc, 1, r) * (int64_t)es, *pb = B + ts_bcast_row(&bc, 2, r) * (int64_t)es;
        for (int64_t j = 0; j < bc.cols; j++) {
            const char *src = pc[j * bc.st[0][last]] ? pa + j * bc.st[1][last] * (int64_t)es
                                                     : pb + j * bc.st[2][last] * (int64_t)es;
            memcpy(O + (r * bc.cols + j) * (int64_t)es, src, es);
        }
    }
    return TS_OK;
}

static ts_status grad_select(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    (void)g, (void)n, (void)go, (void)gi; /* never f32: no gradient */
    return TS_OK;
}

const ts_op_def ts_opdef_select = {"select", 3, 3, 1, TS_OPF_ELEMENTWISE, infer_select, grad_select,
                                   select_kernel, NULL};

ts_value ts_select(ts_graph *g, ts_value cond, ts_value a, ts_value b) {
    if (!g || cond == TS_NONE || a == TS_NONE || b == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!ts_val_ok(g, a) || !ts_val_ok(g, b))
        return ts_graph_fail(g, TS_ERR_ARG, "ts_select: operand %d is not a value of this graph",
                             ts_val_ok(g, a) ? b : a);
    if (g->vals[a].dtype == TS_F32 && g->vals[b].dtype == TS_F32) return ts_where(g, cond, a, b);
    return ts_node_add(g, TS_OP_SELECT, 3, (int[]){cond, a, b}, NULL, NULL);
}
