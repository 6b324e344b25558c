/*
 * export_pb.h — building an ONNX ModelProto for the exporter (src/onnx/export/export.c): an arena that
 * owns every string, tensor and message until the model is written, helpers that append nodes
 * with attributes, initializers, graph inputs and outputs, and the packing of the model
 * (protobuf-c's generated code, gen/onnx/onnx.pb-c.h) into a file written atomically.
 *
 * Every helper returns NULL (or a nonzero status) only when memory runs out; the builder then
 * remembers the failure, later calls do nothing, and ts_ox_write reports it.
 */
#ifndef TS_ONNX_EXPORT_PB_H
#define TS_ONNX_EXPORT_PB_H

#include "core/core.h"
#include "graph/ir.h"
#include "onnx.pb-c.h"

typedef struct ts_ox {
    const ts_graph *g;          /* fresh names avoid its value names */
    void **owned;               /* every allocation, freed by ts_ox_free */
    size_t nowned, cap_owned;
    ts_tensor **tensors;        /* tensors whose data initializers point into */
    size_t ntensors, cap_tensors;
    Onnx__NodeProto **nodes;
    size_t nnodes, cap_nodes;
    Onnx__TensorProto **inits;
    size_t ninits, cap_inits;
    Onnx__ValueInfoProto **inputs, **outputs;
    size_t ninputs, cap_inputs, noutputs, cap_outputs;
    uint32_t *fbits;            /* the f32 scalar constants made so far (bits), and their names */
    char **fnames;
    size_t nf, cap_f;
    unsigned fresh;             /* counter of generated names */
    int oom;                    /* an allocation failed */
} ts_ox;

void ts_ox_init(ts_ox *b, const ts_graph *g);
void ts_ox_free(ts_ox *b);

/* A copy of s owned by the builder. */
char *ts_ox_str(ts_ox *b, const char *s);
/* A new name no value of the graph has and the builder has not made before: "_ts_<stem>_<n>". */
char *ts_ox_fresh(ts_ox *b, const char *stem);

/* Append node op_type(in...) -> out... (an input "" is an absent optional one); the node's name
 * is its first output. Returns the node, for attributes. */
Onnx__NodeProto *ts_ox_node(ts_ox *b, const char *op_type, int nin, const char *const *in, int nout,
                            const char *const *out);
/* Shorthands: one output; one or two inputs. */
Onnx__NodeProto *ts_ox_node1(ts_ox *b, const char *op_type, const char *x, const char *out);
Onnx__NodeProto *ts_ox_node2(ts_ox *b, const char *op_type, const char *x, const char *y, const char *out);

void ts_ox_attr_int(ts_ox *b, Onnx__NodeProto *n, const char *name, int64_t v);
void ts_ox_attr_float(ts_ox *b, Onnx__NodeProto *n, const char *name, float v);
void ts_ox_attr_ints(ts_ox *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v);

/* An initializer named `name` holding `data` (numel x dtype size bytes, copied). */
void ts_ox_init_copy(ts_ox *b, const char *name, ts_dtype dtype, int ndim, const int64_t *shape, const void *data);
/* An INT8 initializer (ONNX data type 3, which has no tessera dtype) holding a copy of data. */
void ts_ox_init_i8(ts_ox *b, const char *name, int ndim, const int64_t *shape, const int8_t *data);
/* An initializer named `name` pointing at t's data; the builder takes t and frees it. */
void ts_ox_init_take(ts_ox *b, const char *name, ts_tensor *t);
/* Fresh-named constant initializers: a rank-0 f32 (one per distinct value), a 1-D int64 list. */
const char *ts_ox_const_f32(ts_ox *b, float v);
const char *ts_ox_const_i64s(ts_ox *b, int n, const int64_t *v);

/* The QDQ form of an int8 matmul's operands (export_qdq.c, whose comment states the math):
 * ts_ox_qdq_act: QuantizeLinear(x, sa, 0) then DequantizeLinear -> the name of the f32 result
 * (NULL when out of memory). ts_ox_qdq_weight: w [K, N] f32 (stored [N, K] when trans_b) quantized
 * per output channel into an INT8 initializer [K, N] and DequantizeLinear(axis 1) -> *out;
 * TS_ERR_ARG naming wname when a channel holds a non-finite value. */
const char *ts_ox_qdq_act(ts_ox *b, const char *x, float sa);
ts_status ts_ox_qdq_weight(ts_ox *b, const char *wname, const float *w, int64_t K, int64_t N, int trans_b,
                           const char **out);
/* ts_ox_dyn_matmul: y = the product x w in ONNX Runtime's dynamic int8 form (export_qdq.c). */
ts_status ts_ox_dyn_matmul(ts_ox *b, const char *x, const char *wname, const float *w, int64_t K, int64_t N,
                           int trans_b, const char *y);

/* A graph input or output of this dtype and shape (a dim below 0: dynamic, ONNX's dim_param "batch"
 * for the first, else "dim"). */
void ts_ox_input(ts_ox *b, const char *name, ts_dtype dtype, int ndim, const int64_t *shape);
void ts_ox_output(ts_ox *b, const char *name, ts_dtype dtype, int ndim, const int64_t *shape);

/* Assemble the model (IR version 8, the default domain at `opset`, producer "tessera"), pack it
 * and write it to path atomically (a temporary file in the same directory, fsync, rename).
 * TS_ERR_NOMEM when the builder ran out of memory, TS_ERR_IO naming the file. */
ts_status ts_ox_write(ts_ox *b, int opset, const char *path);

#endif
