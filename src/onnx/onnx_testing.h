/*
 * onnx_testing.h — importer entry points for tests that do not go through the public API, in a
 * header free of protobuf types: reading a serialized TensorProto file (ONNX's test data:
 * input_0.pb, output_0.pb), and importing with every graph input known (which folds the model
 * on the host as far as the mappings allow, a check of the folding paths); the op registry's
 * duplicate check.
 */
#ifndef TS_ONNX_TESTING_H
#define TS_ONNX_TESTING_H

#include "tessera.h"

/* The tensor stored in a file holding one serialized TensorProto, as a new host tensor; its
 * name (may be "") copied into name[0..cap) when name is not NULL. NULL with ts_last_error()
 * naming the file and the problem (unreadable, not a TensorProto, a dtype tessera has not). */
ts_tensor *ts_onnx_tensor_file(const char *path, char *name, size_t cap);

/* ts_onnx_import with, optionally, every graph input known (known_inputs[i] for input i; NULL:
 * graph inputs as usual). */
ts_status onnx_import_ex(const ts_onnx *m, ts_graph *g, const int *ndims, const int64_t *const *shapes,
                         const ts_onnx_import_opts *opts, ts_value *outs, const ts_tensor *const *known_inputs);

/* onnx_import_ex that also reports, in wanted[i] (ninputs entries, set to 0 first; may be NULL),
 * the graph inputs read directly by a node the import refused: importing again with those inputs
 * known may succeed (a Reshape's shape, a Resize's scales fed as inputs). ts_onnx_session does. */
ts_status onnx_import_wanted(const ts_onnx *m, ts_graph *g, const int *ndims, const int64_t *const *shapes,
                             const ts_onnx_import_opts *opts, ts_value *outs, const ts_tensor *const *known_inputs,
                             int *wanted);

/* The op type that the importer's registry (map/registry.c) lists twice, or NULL when each op
 * type is registered once. */
const char *onnx_registry_duplicate(void);
/* The registry's duplicate check on a list of n op types: the first one that repeats an earlier
 * one, or NULL. */
const char *onnx_op_types_duplicate(const char *const *op_types, int n);

/* The model's nodes: how many, and node i's op type (NULL for a bad index). */
int onnx_num_nodes(const ts_onnx *m);
const char *onnx_node_op_type(const ts_onnx *m, int i);

#endif
