/*
 * tessera_onnx.h — ONNX models imported into graphs, run in sessions, trained and exported.
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_ONNX_H
#define TESSERA_ONNX_H

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- ONNX (src/onnx/)
 * ONNX models (opsets 9-17 of the default domain) imported into tessera graphs, run, trained and
 * exported. The parser is protobuf-c's code generated at build time from Debian's onnx.proto. */

typedef struct ts_onnx ts_onnx;

/* Parse an ONNX file (or bytes; `what` names them in messages). NULL, with ts_last_error()
 * naming the file and the problem, for a file that is not a valid ONNX model, an opset outside
 * 9-17 or another domain, or nodes the importer cannot take: every such node is listed at once,
 * by node name and op type ("3 nodes unsupported: node 'x' (Foo): op not supported; ..."). */
TS_API ts_onnx *ts_onnx_load(const char *path);
TS_API ts_onnx *ts_onnx_load_bytes(const void *data, size_t n, const char *what);
TS_API void ts_onnx_free(ts_onnx *m);
/* The ai.onnx opset the file imports. */
TS_API int ts_onnx_opset(const ts_onnx *m);
/* The graph's inputs that are not initializers, and its outputs, in file order. */
TS_API int ts_onnx_num_inputs(const ts_onnx *m);
TS_API const char *ts_onnx_input_name(const ts_onnx *m, int i);
/* The declared dtype and shape of input i (a dynamic or unknown dimension is -1); returns the
 * rank, -1 for a bad index or an input whose rank the file does not declare. */
TS_API int ts_onnx_input_shape(const ts_onnx *m, int i, ts_dtype *dtype, int64_t shape[TS_MAX_DIMS]);
TS_API int ts_onnx_num_outputs(const ts_onnx *m);
TS_API const char *ts_onnx_output_name(const ts_onnx *m, int i);

typedef struct ts_onnx_import_opts {
    size_t struct_size; /* sizeof(ts_onnx_import_opts) (0: the 0.1.0 layout; see tessera.h) */
    int trainable;              /* 1: float initializers become parameters named as in the file
                                   (values copied in by ts_onnx_load_params after compiling);
                                   0: constants, which the importer may fold (inference) */
    const char *const *frozen;  /* with trainable: initializers that stay constants; an entry
                                   ending in '*' is a prefix */
    int nfrozen;
} ts_onnx_import_opts;
/* Build model m into g for concrete input shapes: input i becomes ts_input(g, its name, its
 * dtype, ndims[i], shapes[i]) (shapes NULL or shapes[i] NULL: the declared shape, which must
 * then be static). Shape arithmetic (Shape, Gather, Concat, ... of known values) is evaluated
 * here. Output j is named as in the file and stored in outs[j] (outs may be NULL). opts NULL:
 * inference. Errors name the node, its op type and the input. */
TS_API ts_status ts_onnx_import(const ts_onnx *m, ts_graph *g, const int *ndims, const int64_t *const *shapes,
                         const ts_onnx_import_opts *opts, ts_value *outs);
/* Copy the initializers that ts_onnx_import made parameters into compiled program p. */
TS_API ts_status ts_onnx_load_params(const ts_onnx *m, ts_program *p);
/* Write m again with each initializer that is a parameter of p replaced by p's value (a model
 * fine-tuned after ts_onnx_import with trainable = 1), atomically. */
TS_API ts_status ts_onnx_save_with_params(const ts_onnx *m, const ts_program *p, const char *path);

/* Inference on an ONNX model with one compiled program per distinct set of input shapes (the
 * most recent 8 kept). The session borrows m, which must outlive it. opts may be NULL. */
typedef struct ts_onnx_session ts_onnx_session;
TS_API ts_onnx_session *ts_onnx_session_new(const ts_onnx *m, const ts_compile_opts *opts);
/* inputs[i] for ts_onnx_input i (dtype as declared); outputs[j] receive new tensors (f32 outputs
 * as f32, integer ones as their dtype) for the caller to free. */
TS_API ts_status ts_onnx_session_run(ts_onnx_session *s, const ts_tensor *const *inputs, ts_tensor **outputs);
TS_API void ts_onnx_session_free(ts_onnx_session *s);

/* The importer's op table, for documentation: entry i's ONNX op type and the opsets it covers. */
TS_API int ts_onnx_num_ops(void);
TS_API const char *ts_onnx_op_info(int i, int *since_opset, int *until_opset);

/* Export the forward graph that computes `outputs` (named values of g) as an ONNX file (opset
 * 17): inputs as graph inputs, parameters with their values in compiled program p as
 * initializers, each output under its name. Ops without an ONNX form are an error naming them. */
TS_API ts_status ts_onnx_export(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                         const char *path);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_ONNX_H */
