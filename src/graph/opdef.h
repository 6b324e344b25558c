/*
 * opdef.h — the op contract: every op's id (listed once in graph/ops.def), what a kernel is
 * given, and an op's definition (shape/dtype rule, gradient rule, reference kernel), found by id
 * in one table (graph/op_registry.c). The IR and this contract are one layer: a graph is made of
 * op applications, and building one runs the op's shape rule. The definitions themselves live one
 * layer up, one file per op family in src/ops/ (docs/architecture.md).
 */
#ifndef TS_OPDEF_H
#define TS_OPDEF_H

#include "graph/ir.h"

typedef enum ts_op_id {
#define TS_OP(ID, name) TS_OP_##ID,
#include "graph/ops.def"
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
/* The id of the op called name ("matmul"), or -1 (the ABI names ops; backends/cpu maps back). */
int ts_op_find(const char *name);

/* Declared here, defined by the op family files of src/ops/. */
#define TS_OP(ID, name) extern const ts_op_def ts_opdef_##name;
#include "graph/ops.def"
#undef TS_OP

#endif
