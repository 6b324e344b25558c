/* shape.c — STUB, to be written. */
#include "ops/op.h"
static ts_status stub_infer(ts_graph *g, ts_node *n) { (void)g; return ts_err(TS_ERR_UNSUPPORTED, "op %s: not implemented yet", ts_op_get(n->op)->name); }
const ts_op_def ts_opdef_reshape = {"reshape", 0, 8, 1, 0, stub_infer, NULL, NULL, NULL};
const ts_op_def ts_opdef_transpose = {"transpose", 0, 8, 1, 0, stub_infer, NULL, NULL, NULL};
const ts_op_def ts_opdef_slice = {"slice", 0, 8, 1, 0, stub_infer, NULL, NULL, NULL};
const ts_op_def ts_opdef_slice_grad = {"slice_grad", 0, 8, 1, 0, stub_infer, NULL, NULL, NULL};
const ts_op_def ts_opdef_concat = {"concat", 0, 8, 1, 0, stub_infer, NULL, NULL, NULL};
