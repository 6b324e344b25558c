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
/* The declared element type and shape of output j, as the file declares them: *onnx_type the
 * ONNX TensorProto.DataType number (1 float, 6 int32, 7 int64, 9 bool, 11 double, ...; 0 when the
 * file does not say: outputs may have types tessera has no dtype for), shape as
 * ts_onnx_input_shape's (-1 for a dynamic dimension). Returns the rank; -1 for a bad index, an
 * output that is not a tensor, or one whose rank the file does not declare. */
TS_API int ts_onnx_output_shape(const ts_onnx *m, int j, int *onnx_type, int64_t shape[TS_MAX_DIMS]);

typedef struct ts_onnx_import_opts {
    size_t struct_size; /* sizeof(ts_onnx_import_opts) (0: the 0.1.0 layout; see tessera.h) */
    int trainable;              /* 1: float initializers become parameters named as in the file
                                   (values copied in by ts_onnx_load_params after compiling);
                                   0: constants, which the importer may fold (inference) */
    const char *const *frozen;  /* with trainable: initializers that stay constants; an entry
                                   ending in '*' is a prefix */
    int nfrozen;
    /* NULL, or one entry per model input (ts_onnx_num_inputs): a tensor fixes that
     * input to this value for the import (dtype and shape as the input's): it becomes a constant,
     * what depends on it is computed at import, and an If whose condition it decides keeps only
     * the taken branch (Silero VAD's `sr` = 16000). NULL entries stay graph inputs. Borrowed
     * during the call. */
    const ts_tensor *const *values;
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
/* inputs[i] for ts_onnx_input i (dtype as declared; NULL for an input fixed by
 * ts_onnx_session_fix or bound by ts_onnx_session_bind); outputs[j] receive new tensors (f32
 * outputs as f32, integer ones as their dtype) for the caller to free. */
TS_API ts_status ts_onnx_session_run(ts_onnx_session *s, const ts_tensor *const *inputs, ts_tensor **outputs);
TS_API void ts_onnx_session_free(ts_onnx_session *s);
/* Fix model input `input` to `value` (copied; dtype and shape as the input declares) for every
 * later run: programs are built with it as a constant, so what depends on it is computed at
 * import and an If it decides keeps only its taken branch (Silero VAD: `sr` = 16000 imports the
 * 16 kHz model alone). Runs may then pass NULL for it; a tensor passed must hold the same value
 * (else TS_ERR_ARG). value NULL: the input is fed again. Programs built before are dropped. */
TS_API ts_status ts_onnx_session_fix(ts_onnx_session *s, const char *input, const ts_tensor *value);
/* State across runs: bind model output `output` to input `input` (same dtype), so each run feeds
 * the input with what the output held after the previous run (Silero VAD: `stateN` -> `state`),
 * and the caller may pass NULL for it. The first run after the bind or a reset takes the
 * caller's tensor, or zeros in the input's declared shape (a dynamic dim counted 1) when it is
 * NULL; later runs ignore the caller's. When a run uses the same program as the run before
 * it (the same input shapes), the input is fed from the output on the device
 * (ts_program_feed_value: device to device; on the CPU one memcpy); otherwise from a host copy
 * the session keeps of the output (which it fetches for the caller anyway). Binding an input
 * again replaces its binding; output NULL unbinds it. */
TS_API ts_status ts_onnx_session_bind(ts_onnx_session *s, const char *output, const char *input);
/* Start a new stream: every bound input goes back to its initial value (see ts_onnx_session_bind). */
TS_API void ts_onnx_session_reset(ts_onnx_session *s);
/* The compiled program the last run used, for ts_program_profile_report and ts_program_memory
 * (owned by the session: valid until the next run, fix, bind or reset, or the session is freed);
 * NULL before a run and after a failed run, a fix, a bind or a reset; NULL for NULL. */
TS_API ts_program *ts_onnx_session_program(const ts_onnx_session *s);

/* The importer's op table, for documentation: entry i's ONNX op type and the opsets it covers. */
TS_API int ts_onnx_num_ops(void);
TS_API const char *ts_onnx_op_info(int i, int *since_opset, int *until_opset);

/* Export the forward graph that computes `outputs` (named values of g) as an ONNX file (opset
 * 17): inputs as graph inputs, parameters with their values in compiled program p as
 * initializers, each output under its name. Ops without an ONNX form are an error naming them. */
TS_API ts_status ts_onnx_export(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                         const char *path);

/* How ts_onnx_export_with writes the model. Zeroed fields: as ts_onnx_export. */
typedef struct ts_onnx_export_opts {
    size_t struct_size;   /* sizeof(ts_onnx_export_opts) */
    int dynamic_batch;    /* 1: the batch B (the first dim of the graph's first input) becomes ONNX's
                             symbolic "batch": the first dim of every input and output (each must be
                             B), and the Reshape / Expand targets that carry it say so; TS_ERR_UNSUPPORTED
                             for an op that makes the batch from something else or slices across it */
    int int64_inputs;     /* 1: int32 inputs are declared INT64 (as Hugging Face's exports declare token
                             ids) and Cast to INT32 inside the model */
    const ts_quant_scale *quant_scales; /* nquant_scales > 0: matmuls in QDQ form, as ts_onnx_export_qdq */
    int nquant_scales;
} ts_onnx_export_opts;

/* ts_onnx_export with the options above; TS_ERR_ARG for a NULL opts or a bad struct_size. */
TS_API ts_status ts_onnx_export_with(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                                     const ts_onnx_export_opts *opts, const char *path);

/* ts_onnx_export with int8 matmuls in QDQ form (QuantizeLinear / DequantizeLinear, opset 17), as
 * ONNX Runtime runs with its int8 kernels: each matmul that ts_compile with TS_QUANT_STATIC and
 * these scales would make int8 (f32, no transposed a, a rank-2 parameter or constant weight named
 * in scales) is written as MatMul(DequantizeLinear(QuantizeLinear(a, scale, 0)), DequantizeLinear(
 * qw, sw, 0, axis 1)), its weight quantized per output channel as ts_compile does (INT8 [K, N],
 * sw[n] = max |w[:, n]| / 127), zero points 0. Other matmuls stay f32. ONNX's QuantizeLinear
 * saturates at -128 where tessera clamps at -127: the two agree within the calibrated range.
 * TS_ERR_ARG for a scale that is not a finite number above 0 (naming its weight) or a weight with a
 * non-finite value; otherwise as ts_onnx_export. tessera's importer reads the pattern back onto its
 * int8 matmul. */
TS_API ts_status ts_onnx_export_qdq(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                                    const ts_quant_scale *scales, int nscales, const char *path);
/* ts_onnx_export with the matmuls that ts_compile's TS_QUANT_DYNAMIC would make int8 written in
 * ONNX Runtime's dynamic int8 form, as its quantize_dynamic writes them (ORT fuses it into its
 * int8 kernel): DynamicQuantizeLinear on the activations (uint8, with a zero point, per run),
 * MatMulInteger by the weight quantized as ts_compile does (INT8 per output channel), Cast, and
 * Mul by the two scales. The weights are tessera's; the activations are quantized ORT's way, not
 * tessera's (int8 symmetric), so the results differ within the quantization error. For measuring
 * ONNX Runtime's int8 beside tessera's (bench/bert.c); tessera imports the form in f32. */
TS_API ts_status ts_onnx_export_dynamic_int8(const ts_graph *g, const ts_program *p, int noutputs,
                                             const ts_value *outputs, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_ONNX_H */
