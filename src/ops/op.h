/*
 * op.h — what an op is: a shape/dtype rule, a gradient rule and a reference CPU kernel, found by
 * op id in one table (registry.c). Ops are listed once, in ops.def; each op family file in
 * src/ops/ defines the ts_op_def of the ops it holds. Adding an op family is local: add its
 * lines to ops.def and a new file.
 */
#ifndef TS_OP_H
#define TS_OP_H

#include "graph/ir.h"

typedef enum ts_op_id {
#define TS_OP(ID, name) TS_OP_##ID,
#include "ops/ops.def"
#undef TS_OP
    TS_OP_COUNT
} ts_op_id;

/* What a kernel gets: the node, the graph (for shapes and dtypes), device pointers of each input
 * and output, scratch memory, the run step (for dropout), and per-node state prepared by the
 * backend at compile time (e.g. a oneDNN primitive). */
typedef struct ts_kargs {
    const ts_graph *g;
    const ts_node *node;
    void *in[TS_MAX_IN];   /* NULL for an absent optional input */
    void *out[TS_MAX_OUT];
    void *scratch;
    size_t scratch_bytes;
    uint64_t step;
    void *state;
    void *device;          /* the backend's context of the device it runs on */
    uint64_t param_gen;    /* the plan's *param_gen (0 without one): moves when weights were written */
} ts_kargs;

enum {
    TS_OPF_ELEMENTWISE = 1 << 0, /* output i depends only on input element i (after broadcast) */
    TS_OPF_INPLACE0 = 1 << 1,    /* output 0 may share input 0's buffer if input 0 dies here */
    TS_OPF_SIDE_EFFECT = 1 << 2, /* writes a persistent buffer (optimizer updates): never dead */
    TS_OPF_ALIAS0 = 1 << 3,      /* output 0 is input 0's bytes reinterpreted (reshape): no copy */
};

typedef struct ts_op_def {
    const char *name;  /* "matmul" */
    int min_in, max_in, nout;
    unsigned flags;
    /* Check inputs (dtypes, shapes, attributes) and set dtype/shape of every output value.
     * On a bad input return a ts_err(...) whose message names the op and the value. */
    ts_status (*infer)(ts_graph *g, ts_node *n);
    /* Build gradient nodes. gout[k] is the gradient of output k (TS_NONE: zero). Set gin[j] to
     * the gradient of input j, or TS_NONE when not differentiable in it. NULL: not
     * differentiable at all (documented in the op file). */
    ts_status (*grad)(ts_graph *g, const ts_node *n, const ts_value *gout, ts_value *gin);
    /* Reference kernel; the CPU backend runs it unless it has its own for this op. */
    ts_status (*kernel)(const ts_kargs *a);
    /* Scratch bytes the kernel needs (NULL: none). */
    size_t (*scratch)(const ts_graph *g, const ts_node *n);
} ts_op_def;

const ts_op_def *ts_op_get(int op);

/* Declared here, defined by the op family files. */
#define TS_OP(ID, name) extern const ts_op_def ts_opdef_##name;
#include "ops/ops.def"
#undef TS_OP

/* ts_backward with the loss's gradient seeded by `seed` (a rank-0 f32 value, the loss scale of
 * src/train/loss_scale.c) instead of 1; TS_NONE: 1 (graph/autodiff.c). */
ts_status ts_backward_seeded(ts_graph *g, ts_value loss, ts_value seed);

/* Helpers for op files. */
/* Input k of node n is a rank-0 f32 value, else TS_ERR_SHAPE naming the op and `what` (optim.c). */
ts_status ts_need_scalar(const ts_graph *g, const ts_node *n, int k, const char *what);
/* Sum gradient g (shape of a broadcast result) down to the shape of value `like`. */
ts_value ts_sum_to(ts_graph *g, ts_value grad, ts_value like);
/* y = f(x) for a unary op (scale sqrt exp log relu tanh sigmoid gelu), n elements; the
 * evaluator of those ops (ops/elementwise.c), shared with fused chains. */
void ts_unary_f32(int op, int tanh_form, float alpha, float beta, const float *x, float *y, int64_t n);
/* Encode the steps of unary/fused node `first` followed by `second` into one fused_elementwise
 * attribute set; 0 when the chain would be too long (ops/fused.c). */
int ts_fused_merge(const ts_node *first, const ts_node *second, ts_attrs *out);

/* A message-prefix helper: infer functions write "op 'add': ..." via this. */
#define TS_OPERR(g, n, code, ...) ts_err(code, __VA_ARGS__)

#endif
