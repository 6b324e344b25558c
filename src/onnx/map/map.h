/*
 * map.h — what the op-mapping families (map/<family>.c) share: the family record each one
 * exports (its table of ts_onnx_op entries, registered in registry.c), and small helpers for
 * axes, constants and host tensors on top of onnx_imp.h (common.c).
 */
#ifndef TS_ONNX_MAP_H
#define TS_ONNX_MAP_H

#include "onnx/onnx_imp.h"

/* One family of mappings: a file map/<name>.c defines `const onnx_family onnx_family_<name>`
 * holding its table (n entries). */
typedef struct onnx_family {
    const char *name; /* "unary" */
    const ts_onnx_op *ops;
    int n;
} onnx_family;

/* Axis a normalised against rank r (a in [-r, r - 1]); -1 after refusing the node as invalid. */
int map_axis(ts_onnx_ctx *cx, const ts_onnx_node *n, int64_t a, int r, const char *what);
/* A graph constant holding a copy of data (dtype dt, shape nd / sh). */
ts_value map_const(ts_graph *g, ts_dtype dt, int nd, const int64_t *sh, const void *data);
/* A rank-0 constant of dtype dt holding v (converted as onnx_put_f64 does). */
ts_value map_scalar(ts_graph *g, ts_dtype dt, double v);
/* 1 when d is f32, i32, i64 or u8: the dtypes tessera's ts_binary takes. */
int map_binary_dtype(ts_dtype d);
/* Refuse a node whose input k has a zero dim (tessera values are never empty). */
ts_status map_need_nonempty(ts_onnx_ctx *cx, const ts_onnx_node *n, int k);

/* A QDQ MatMul n mapped onto tessera's int8 matmul (quant_matmul.c): 1 when the pattern matched
 * (*st: the mapping's status), 0 when MatMul's own mapping should go on. */
int onnx_qdq_matmul(ts_onnx_ctx *cx, const ts_onnx_node *n, ts_status *st);
#endif
