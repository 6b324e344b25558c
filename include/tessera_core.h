/*
 * tessera_core.h — the core of tessera's public API: version, export macro, status and errors,
 * dtypes and host tensors, graphs (values, parameters, initializers) and compiled programs (compile,
 * feed, run, fetch, memory, profile, pipeline stages).
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_CORE_H
#define TESSERA_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* no FILE * in the API; kept for the callers that relied on it */

#include "tessera_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header: major.minor.patch, as CMake's project() (CMakeLists.txt checks that
 * the two agree). The shared library's SONAME is libtessera.so.<major>: the major changes with an
 * incompatible change of this API; within a major, functions and struct fields are only added. */
#define TESSERA_VERSION_MAJOR 0
#define TESSERA_VERSION_MINOR 1
#define TESSERA_VERSION_PATCH 0
/* The version as one number, 10000 x major + 100 x minor + patch, for #if. */
#define TESSERA_VERSION_NUMBER \
    (TESSERA_VERSION_MAJOR * 10000 + TESSERA_VERSION_MINOR * 100 + TESSERA_VERSION_PATCH)

/* TS_API (the export macro): tessera_types.h. */

/* The version of the library actually loaded, "0.1.0" (which may differ from this header's when a
 * program runs against another libtessera.so of the same major). */
TS_API const char *ts_version(void);
/* The optional features this libtessera was built with, space-separated in this order: "onnx"
 * (the ONNX importer and exporter, tessera_onnx.h) and "mpi" (replicas over MPI processes,
 * tessera_devices.h); "" for neither ("onnx mpi" for both). A feature built out keeps its
 * functions, which fail with TS_ERR_UNSUPPORTED naming the build option (-DTS_WITH_ONNX,
 * -DTS_WITH_MPI; a build without MPI runs one process). Static storage; never NULL. */
TS_API const char *ts_build_features(void);


/* A communicator between the processes of a job (tessera_devices.h). */
typedef struct ts_comm ts_comm;

/* ---------------------------------------------------------------- status and errors */

/* ts_status: tessera_types.h. */

/* The message of the most recent failure on this thread ("" if none). Valid until the next call
 * that fails on this thread. */
TS_API const char *ts_last_error(void);

/* The code of that failure (TS_OK if none): what a call that returns NULL or TS_NONE failed with. */
TS_API ts_status ts_last_status(void);
/* Record a failure (its code and printf-style message) for the calling thread, as tessera's own
 * calls do: for code called back by tessera (training hooks, backends). Returns code. */
TS_API ts_status ts_set_error(ts_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A short constant name of a status code ("TS_ERR_SHAPE"). */
TS_API const char *ts_status_name(ts_status s);

/* Where text goes (a profile report, metrics rows): called with len bytes of text (not
 * NUL-terminated) and the ctx given beside it. No FILE * crosses the API. */
typedef void (*ts_write_fn)(void *ctx, const char *text, size_t len);
/* A ts_write_fn for C callers: ctx is a FILE * (stdout, a file opened for append), written and
 * flushed; a NULL ctx takes nothing. */
TS_API void ts_write_stdio(void *ctx, const char *text, size_t len);

/* ---------------------------------------------------------------- dtypes and tensors */

/* ts_dtype: tessera_types.h. */

/* "f32", "bf16", "f16", "i32", "i64", "u8". */
TS_API const char *ts_dtype_name(ts_dtype t);
/* Size of one element in bytes; 0 for an invalid dtype. */
TS_API size_t ts_dtype_size(ts_dtype t);

/* A host tensor: dtype, shape and an owned, 64-byte-aligned, contiguous buffer. */
typedef struct ts_tensor ts_tensor;

/* A new zero-filled tensor. NULL on a bad dtype/shape or out of memory. */
TS_API ts_tensor *ts_tensor_new(ts_dtype dtype, int ndim, const int64_t *shape);
/* A new tensor holding a copy of `data` (numel * dtype size bytes). */
TS_API ts_tensor *ts_tensor_from(ts_dtype dtype, int ndim, const int64_t *shape, const void *data);
TS_API void ts_tensor_free(ts_tensor *t);
TS_API ts_dtype ts_tensor_dtype(const ts_tensor *t);
TS_API int ts_tensor_ndim(const ts_tensor *t);
TS_API const int64_t *ts_tensor_shape(const ts_tensor *t);
TS_API int64_t ts_tensor_numel(const ts_tensor *t);
TS_API size_t ts_tensor_nbytes(const ts_tensor *t);
TS_API void *ts_tensor_data(ts_tensor *t);
/* t in dtype `want`, for a model input that declares it: t itself when it already is, else a new
 * tensor (the caller frees both). Only conversions that keep every value's meaning: between
 * float types, between integer types (u8 included) within range. NULL when t cannot be
 * converted: TS_ERR_DTYPE ("is f32 but the model's input is i64") or TS_ERR_RUNTIME (an element
 * out of range, named); the message reads after the tensor's name. */
TS_API ts_tensor *ts_tensor_convert_exact(ts_tensor *t, ts_dtype want);

/* f32 <-> bf16 (round to nearest even) and f32 <-> f16 conversions of n elements. */
TS_API void ts_f32_to_bf16(const float *src, uint16_t *dst, size_t n);
TS_API void ts_bf16_to_f32(const uint16_t *src, float *dst, size_t n);
TS_API void ts_f32_to_f16(const float *src, uint16_t *dst, size_t n);
TS_API void ts_f16_to_f32(const uint16_t *src, float *dst, size_t n);

/* ---------------------------------------------------------------- graphs */

typedef struct ts_graph ts_graph;
/* A value in a graph: an input, a parameter, a constant or an op's output. */
typedef int32_t ts_value;
#define TS_NONE ((ts_value)-1)

TS_API ts_graph *ts_graph_new(void);
TS_API void ts_graph_free(ts_graph *g);

/* Seed for parameter initializers and dropout masks (default 0). Set before adding parameters. */
TS_API void ts_graph_set_seed(ts_graph *g, uint64_t seed);
/* TS_OK, or the first error recorded while building (its message is in ts_last_error()). */
TS_API ts_status ts_graph_status(const ts_graph *g);
/* Record a builder error in g, as the graph's own ops do: the first one recorded wins (it is what
 * ts_graph_status and ts_compile report), and the message becomes this thread's last error. For a
 * model builder written on the graph API that finds a bad argument. Returns TS_NONE. */
TS_API ts_value ts_graph_fail(ts_graph *g, ts_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* How a parameter's initial value is drawn. Draws depend only on (graph seed, parameter name). */
typedef struct ts_init {
    enum { TS_INIT_ZEROS, TS_INIT_ONES, TS_INIT_CONST, TS_INIT_UNIFORM, TS_INIT_NORMAL } kind;
    float a, b; /* CONST: a.  UNIFORM: [a, b).  NORMAL: mean a, std b (truncated at 2 std) */
} ts_init;
/* Initializers: zeros, ones, the constant v, uniform on [lo, hi), normal(0, std) truncated at 2 std. */
TS_API ts_init ts_init_zeros(void);
TS_API ts_init ts_init_ones(void);
TS_API ts_init ts_init_const(float v);
TS_API ts_init ts_init_uniform(float lo, float hi);
TS_API ts_init ts_init_normal(float std);

/* A named input, fed before each run. Names are unique across inputs, parameters and named values. */
TS_API ts_value ts_input(ts_graph *g, const char *name, ts_dtype dtype, int ndim, const int64_t *shape);
/* A named trainable parameter with an initializer. */
TS_API ts_value ts_param(ts_graph *g, const char *name, ts_dtype dtype, int ndim, const int64_t *shape,
                  ts_init init);
/* A constant holding a copy of t. */
TS_API ts_value ts_constant(ts_graph *g, const ts_tensor *t);
/* A rank-0 f32 constant. */
TS_API ts_value ts_scalar(ts_graph *g, float v);
/* Give value v a name so it can be fetched; returns v. */
TS_API ts_value ts_name(ts_graph *g, ts_value v, const char *name);
/* The value with this name, or TS_NONE. */
TS_API ts_value ts_lookup(const ts_graph *g, const char *name);

/* Shape and dtype of a value, as inferred when it was built. Returns the rank, -1 for TS_NONE. */
TS_API int ts_value_shape(const ts_graph *g, ts_value v, int64_t shape[TS_MAX_DIMS]);
TS_API ts_dtype ts_value_dtype(const ts_graph *g, ts_value v);


/* ---------------------------------------------------------------- programs */

typedef struct ts_program ts_program;

/* A calibrated (static) activation scale: the matmul whose weight value is named `weight` (the
 * parameter's or constant's name, e.g. "bert.encoder.layer.0.attention.self.query.weight")
 * quantizes its input activations a as qa = clamp(rne(a / scale), -127, 127) (scale = the
 * largest |a| kept / 127: see ts_calib). */
typedef struct ts_quant_scale {
    const char *weight;
    float scale;
} ts_quant_scale;

typedef struct ts_compile_opts {
    size_t struct_size; /* sizeof(ts_compile_opts) (0: the 0.1.0 layout; see tessera.h) */
    const char *device;             /* "cpu" (default when NULL; every core), "cpu:N" (a device of
                                       its own: its own oneDNN engine and stream, for programs
                                       that run side by side), or a registered backend's */
    int num_threads;                /* 0: the OpenMP default; at most ts_max_threads(). Results
                                       are bitwise reproducible for a given thread count (static
                                       OpenMP schedules, no atomics, fixed reduction order);
                                       another count may change the last bits of float sums */
    int nfetch;                     /* values to be read after a run, by name */
    const char *const *fetches;
    int inference;                  /* 1: drop optimizer updates, dropout becomes identity */
    int no_fusion;                  /* 1: skip the fusion pass (for testing) */
    int device_iterations;          /* K > 1: each ts_program_run runs the step K times (see
                                       below); 0 or 1: once */
    size_t memory_limit;            /* bytes the program may take on the device; 0: the
                                       device's memory (the CPU: physical memory, or the
                                       container's limit when lower); per device in a pipeline */
    const char *const *stage_devices; /* a pipeline: the device of each stage ("cpu:0", "cpu:1",
                                       ...; two stages may share one), nstage_devices of them,
                                       at least ts_graph_num_stages(g); NULL: one device */
    int nstage_devices;
    int skip_param_init;            /* 1: parameters start at zero instead of being drawn from
                                       their initializers, for a program whose parameters are all
                                       loaded next (ts_program_load with TS_LOAD_STRICT), so
                                       the compile skips drawing them */
    int profile;                    /* 1: time every kernel call and every ts_program_run (see
                                       ts_program_profile_report); 0: off, no cost. A pipelined
                                       program (stage_devices) refuses it: TS_ERR_UNSUPPORTED */
    int strict_device;              /* 1: a node the device does not support is an error
                                       (TS_ERR_UNSUPPORTED naming every such node) instead of
                                       running on the CPU with copies (the default: CPU fallback;
                                       a device whose option "fallback" is "none" refuses so in
                                       every compile: ts_device_set_option). On a plugin's device
                                       the placement is a notice at compile (ts_set_notice_sink;
                                       ts_program_placement) */
    int plan_only;                  /* 1: compile for planning only (the planner, tessera_plan.h):
                                       the passes, the schedule and the memory plan (every stage's
                                       in a pipeline), but no buffers, no device memory and no
                                       kernels; the memory is not checked against the device's
                                       (the planner wants the figures even when they do not fit).
                                       The program reports ts_program_memory (workspace 0: no
                                       kernels), ts_program_num_stages and ts_program_stage_info;
                                       feeding, running, fetching and reading or writing values
                                       are TS_ERR_UNSUPPORTED ("compiled for planning only") */
    int quantize;                   /* TS_QUANT_DYNAMIC: int8 matmuls with dynamic quantization, in
                                       an inference program only (a training program refuses it:
                                       TS_ERR_UNSUPPORTED). Every f32 matmul of an activation by a
                                       2-D weight (with its fused bias and activation) runs on
                                       int8 weights, quantized per output channel (sw[n] =
                                       max|w[:, n]| / 127) when the program first runs and again
                                       after a weight is written, and int8 activations quantized
                                       per tensor on every run (sa = max|a| / 127), summed in
                                       int32, scaled back to f32. Matmuls of two activations
                                       (attention) stay f32. Convolutions (conv2d) by a fixed
                                       weight alike: int8 per output channel and per tensor
                                       (conv2d_i8, dynamic); on the CPU each such convolution
                                       times its int8 kernel against the f32 one on its first
                                       run (twice each, after a warm-up run of each) and keeps
                                       the faster for the program's life, so one may run f32
                                       (the profile report names which; the device option
                                       "conv_int8" "always" keeps every one int8, as TensorRT's
                                       builder may keep a layer in higher precision when its
                                       timings say so). TS_QUANT_NONE (0): f32 as built.
                                       TS_QUANT_STATIC: the same, except that a matmul whose
                                       weight is named in quant_scales takes its activations'
                                       scale from there (fixed: sa = scale, no max|a| per run;
                                       values beyond +-127 sa saturate); a quantizable matmul
                                       whose weight is not named stays dynamic */
    const ts_quant_scale *quant_scales; /* TS_QUANT_STATIC: the calibrated activation
                                       scales, by weight (see ts_quant_scale), nquant_scales of
                                       them, read during ts_compile only (and only with
                                       TS_QUANT_STATIC). A scale <= 0 or not
                                       finite, or a NULL name, fails ts_compile (TS_ERR_ARG,
                                       naming the weight); a name no quantizable matmul of the
                                       graph has is ignored (one list serves every program of a
                                       model: other batch sizes, heads, tasks) */
    int nquant_scales;
} ts_compile_opts;

/* ts_compile_opts.quantize */
#define TS_QUANT_NONE 0
#define TS_QUANT_DYNAMIC 1
#define TS_QUANT_STATIC 2

/* ---------------------------------------------------------------- calibration (static int8)
 *
 * The activation scales of TS_QUANT_STATIC, measured by running the float model on calibration
 * batches:
 *
 *   ts_calib *c = ts_calib_new(g, &opts, TS_CALIB_ENTROPY);   // g: built, opts: inference, f32
 *   for each batch: feed ts_calib_program(c), ts_program_run, ts_calib_observe(c)
 *   const ts_quant_scale *s; int n = ts_calib_scales(c, &s);   // -> ts_compile_opts.quant_scales
 *
 * The observed activations are the inputs a of the matmuls that TS_QUANT_DYNAMIC / STATIC would
 * make int8 (f32 matmuls of an activation by a named 2-D weight) among those opts' fetches need.
 * Every method works on max |a| and a histogram of |a| over everything observed (2048 bins;
 * its range doubles, merging bin pairs, when a batch exceeds it), and gives scale = t / 127 for a
 * threshold t <= max |a| (activations beyond t saturate at +-127):
 *   TS_CALIB_MINMAX      t = max |a|
 *   TS_CALIB_PERCENTILE  t = the 99.99th percentile of |a| (the upper edge of the bin where the
 *                        cumulative count reaches 99.99%)
 *   TS_CALIB_ENTROPY     TensorRT's: for each cut i = 128 .. 2048 bins, P = the first i bins with
 *                        the count beyond them added to bin i - 1, Q = those i bins merged into
 *                        128 levels and spread back evenly over their non-empty bins; t = i x
 *                        bin width for the i of least KL(P || Q)
 * Matmuls reading one activation (Q, K, V) share its scale; a weight read by several matmuls
 * gets one scale over all their activations. */
#define TS_CALIB_MINMAX 0
#define TS_CALIB_PERCENTILE 1
#define TS_CALIB_ENTROPY 2

typedef struct ts_calib ts_calib;

/* A calibrator for graph g (built, not compiled; not modified, may be freed after) with method
 * TS_CALIB_*. opts: how g's float inference program is compiled (inference = 1, quantize =
 * TS_QUANT_NONE, the outputs as fetches, no device_iterations, no plan_only); the calibrator
 * compiles it with the observed activations added to its fetches (their buffers kept to the end
 * of a run; the numbers are the same) and owns it. NULL on failure (ts_last_error). */
TS_API ts_calib *ts_calib_new(const ts_graph *g, const ts_compile_opts *opts, int method);
/* The observing program: load its weights, feed it and run it as the float program. */
TS_API ts_program *ts_calib_program(ts_calib *c);
/* The number of weights the calibrator finds scales for (0: no quantizable matmul in g). */
TS_API int ts_calib_num_weights(const ts_calib *c);
/* Add the observed activations of the program's last run to the statistics (no allocation).
 * TS_ERR_ARG naming the weight and the element when an activation is not finite. */
TS_API ts_status ts_calib_observe(ts_calib *c);
/* The scales by weight name of everything observed so far into *scales (owned by c, valid until
 * the next ts_calib_scales or ts_calib_free): returns how many, -1 on error (nothing observed
 * yet). A weight whose activations were all zero has none (its matmul stays dynamic). */
TS_API int ts_calib_scales(ts_calib *c, const ts_quant_scale **scales);
TS_API void ts_calib_free(ts_calib *c);

/* Compile graph g for a device: dead-code elimination, fusion, memory planning, kernel selection,
 * and one arena for every intermediate. The graph is not modified and may be freed afterwards.
 * Parameters start from their initializers. NULL on failure (see ts_last_error() and
 * ts_last_status()). Before anything is allocated, the planned memory (parameters, gradients,
 * optimizer state, the arena, inputs and constants; then the kernels' workspace) is compared with
 * the device's (opts->memory_limit when set): a program that does not fit is TS_ERR_NOMEM with a
 * message giving what it needs, part by part, its largest value, and what the device has. */
TS_API ts_program *ts_compile(const ts_graph *g, const ts_compile_opts *opts);
TS_API void ts_program_free(ts_program *p);

/* Copy a tensor into the named input; its dtype and shape must match the input's exactly
 * ([K, shape...] with device_iterations K > 1: K batches at once, one per iteration). */
TS_API ts_status ts_program_feed(ts_program *p, const char *name, const ts_tensor *t);
/* ts_program_feed from the caller's memory: data holds the input's elements (dtype, ndim and shape
 * as ts_program_feed requires; row-major, contiguous), copied once, straight into the program's
 * buffer (a pipelined program's: its host staging buffer, as ts_program_feed does), with no
 * ts_tensor made in between. data is read only during the call. Errors as
 * ts_program_feed's, and TS_ERR_ARG for a NULL data or shape or a rank outside 0..TS_MAX_DIMS. */
TS_API ts_status ts_program_feed_data(ts_program *p, const char *name, ts_dtype dtype, int ndim,
                                      const int64_t *shape, const void *data);
/* Feed input `input` with what value `value` (a fetch named at compile time, of the same dtype
 * and shape) holds after the last run, copied on the device (device to device; on the CPU one
 * memcpy): a state carried from run to run without a round trip through the host. A pipelined
 * program, or one with device iterations, copies through the host. */
TS_API ts_status ts_program_feed_value(ts_program *p, const char *input, const char *value);
/* Run one step: every node of the compiled schedule, in order.
 * Device iterations (Graphcore's "batches per step"): with device_iterations K > 1, one call
 * runs the step K times back to back, iteration k reading slice k of every input, as K calls
 * with one batch each would (the step counter advances by K, so dropout masks, optimizer steps
 * and schedules are the same). It saves a host round trip per step on an accelerator; fetches
 * are copied out after every iteration. If iteration k fails, iterations before it have run. */
TS_API ts_status ts_program_run(ts_program *p);
/* A new tensor holding the named value (a fetch named at compile time, or a parameter). With
 * device_iterations K > 1 a fetch named at compile time comes back as [K, shape...], one slice
 * per iteration of the last run (PopART's "anchor ALL"); parameters and state read as now. */
TS_API ts_status ts_program_fetch(ts_program *p, const char *name, ts_tensor **out);
/* The run counter (starts at 0, +1 per run); seeds dropout. Set it to resume a run exactly. */
TS_API uint64_t ts_program_step(const ts_program *p);
TS_API void ts_program_set_step(ts_program *p, uint64_t step);

/* Parameters by name: count, i-th name, read (new tensor), write (dtype and shape must match). */
TS_API int ts_program_num_params(const ts_program *p);
TS_API const char *ts_program_param_name(const ts_program *p, int i);
TS_API ts_status ts_program_get_param(const ts_program *p, const char *name, ts_tensor **out);
TS_API ts_status ts_program_set_param(ts_program *p, const char *name, const ts_tensor *t);
/* Copy every parameter of src that dst also has (same name, dtype and shape) into dst; returns
 * how many were copied, or -1 on error. Used to evaluate with an inference program. */
TS_API int ts_program_copy_params(ts_program *dst, const ts_program *src);
/* Make dst read src's parameters instead of its own, one copy in memory: every parameter of dst
 * that src has (same name, dtype and shape) is pointed at src's buffer and dst's own is freed
 * (ts_program_memory(dst).params no longer counts it). From then on a ts_program_set_param (or a
 * load) through either program is seen by both, and by every program sharing them; what a
 * program derived from the old values (prepacked weights) is remade at its next run. The
 * buffers are refcounted: the programs may be freed in any order, the buffers with the last.
 * Both must be compiled for one device (no stage_devices, not plan_only), the same device, and
 * be programs whose runs do not write their parameters (inference: ts_compile_opts.inference);
 * dst must not already share. Returns how many parameters dst now shares, or -1 with the error
 * set. Used by `tessera serve`: one model's programs for each batch and sequence length. */
TS_API int ts_program_share_params(ts_program *dst, ts_program *src);

/* Memory a program holds, in bytes. */
typedef struct ts_memory {
    size_t struct_size; /* the caller's sizeof (0: base); ts_program_memory sets what it wrote */
    size_t params;          /* parameter buffers */
    size_t grads;           /* parameter gradients kept to the end of the step */
    size_t optimizer_state; /* momentum / Adam moments */
    size_t activations;     /* the planned arena of every other intermediate */
    size_t workspace;       /* kernel scratch (largest single need) */
    size_t intermediates_total; /* sum of all intermediate sizes, as if none were reused */
    int nodes;              /* scheduled nodes after passes */
    int fused;              /* nodes removed by fusion */
    size_t grad_buckets;    /* replicas: the gradient accumulators summed over the ranks, in
                               contiguous buckets (not in optimizer_state) */
    size_t weight_copies;   /* copies of weights kept across runs where weights change only between
                               runs (a program without optimizer updates): casts of weights to a
                               compute dtype (autocast's bf16 weights) and the CPU backend's
                               prepacked matmul weights (backend/cpu/matmul_dnnl.c) */
    int quantized;          /* matmuls and convolutions made int8 by ts_compile_opts.quantize
                               (their quantized, prepacked weights count in weight_copies) */
} ts_memory;
/* Fill *m (an output struct: set m->struct_size first, to sizeof *m or 0 for the base layout; see
 * tessera.h): at most m->struct_size bytes written, m->struct_size set to the bytes written. */
TS_API ts_status ts_program_memory(const ts_program *p, ts_memory *m);
/* A stage's memory, as ts_stage_info and ts_plan_stage hold it: ts_memory's base (0.1.0) fields,
 * in their order. A fixed struct, embedded by value, so it never grows (ts_memory does:
 * ts_program_memory reports the fields added since); struct_size is sizeof(ts_stage_memory). */
typedef struct ts_stage_memory {
    size_t struct_size;
    size_t params, grads, optimizer_state, activations, workspace, intermediates_total;
    int nodes, fused;
    size_t grad_buckets, weight_copies;
} ts_stage_memory;
/* Where p's nodes run, one line: "placement: opencl:1 runs all 412 nodes", or, with a CPU
 * fallback for nodes the device does not support, how many the CPU runs (each op once, with its
 * count: "matmul x12, add x20"), in how many parts, and the copies and bytes that moves per run.
 * A pipeline's: one such line per stage, labelled "placement, stage S of N: ", joined by '\n'.
 * Owned by p (valid until it is freed); "" for NULL. */
TS_API const char *ts_program_placement(const ts_program *p);

/* Profiling (a program compiled with ts_compile_opts.profile = 1). Write (one call of write,
 * with ctx; ts_write_stdio with stdout prints it) what the
 * ts_program_run calls since compile or the last reset took: their total wall time, the time
 * inside kernels (a monotonic clock around each kernel call of the device's node loop; the CPU
 * backend, other backends report no kernel time) and the share outside them (framework overhead:
 * run loop, thread setup, copies made inside the run), then three tables of nodes, calls, total
 * ms and % of kernel time:
 *  - per op type (the node's op, after fusion; the name first), by time, largest first; where the
 *    device chose among kernels for a node, the op is named with the one it ran: "conv2d_i8
 *    (f32)" is an int8 convolution the CPU timed faster in f32 on its first run, "conv2d_i8
 *    (int8)" one it kept in int8 (see ts_compile_opts.quantize);
 *  - per layer, in the order the layers first run: a node's layer is taken from the nearest named value it reads: its inputs first
 *    (in order), then breadth-first through their producers (at most 256 values looked at);
 *    from a name ("bert.encoder.layer.3.attention.self.query.weight"; "@GRAD" and the like
 *    dropped) the layer is the prefix through its first all-digit component
 *    ("bert.encoder.layer.3"), else its first two components, the last one excluded
 *    ("bert.embeddings", "cls.predictions", "classifier"); a node reading no such name is
 *    "other";
 *  - per op and shapes, the 15 largest by time: nodes of one op whose first input and first output
 *    have the same dtypes and shapes ("matmul bf16[1024, 768] -> f32[768, 3072]", the name last).
 * TS_ERR_UNSUPPORTED for a program compiled without profile; TS_ERR_ARG for a NULL p or write. */
TS_API ts_status ts_program_profile_report(const ts_program *p, ts_write_fn write, void *ctx);
/* Zero the counters (e.g. after warm-up runs). No-op without profile. */
TS_API void ts_program_profile_reset(ts_program *p);

/* The most threads a program may use: 4 x the online CPUs (so oversubscribed runs stay possible,
 * and a typo like 100000 is refused rather than crashing the thread library). */
TS_API int ts_max_threads(void);

/* A pipelined program's stages (ts_compile_opts.stage_devices); a program on one device has one. */
typedef struct ts_stage_info {
    size_t struct_size; /* the caller's sizeof (0: base); ts_program_stage_info sets what it wrote */
    const char *device;   /* "cpu:1" */
    int threads;          /* of its device */
    ts_stage_memory mem;  /* its program: activations count every micro-batch it keeps in flight
                             (0.1.0 had a ts_memory here, of the same layout: ts_memory may grow,
                             so what is embedded is its fixed base) */
    int in_flight;        /* micro-batches whose activations it keeps at most: min(M, S - stage) */
    double busy_s;        /* time its device spent running it, over the runs so far */
} ts_stage_info;
TS_API int ts_program_num_stages(const ts_program *p);
/* Fill *info (an output struct, as ts_program_memory's m) for stage 0 .. ts_program_num_stages - 1. */
TS_API ts_status ts_program_stage_info(const ts_program *p, int stage, ts_stage_info *info);
/* Of a pipelined program's runs so far: the wall time, and the bubble: the share of the devices'
 * time spent idle, 1 - (time busy, summed over stages) / (devices x wall time). 0 and 0 for a
 * program on one device. ts_program_pipeline_reset_stats starts them over (after a warm-up). */
TS_API ts_status ts_program_pipeline_stats(const ts_program *p, double *wall_s, double *bubble);
TS_API void ts_program_pipeline_reset_stats(ts_program *p);

/* What one scheduled kernel of a compiled program computes and moves, for a cost model (the
 * planner's: docs/cost-model.md). A fixed struct, filled by value in arrays: it never grows. */
typedef struct ts_node_work {
    const char *op;  /* the op's name, "matmul" (as ts_abi_node.op of tessera_plugin.h; static) */
    int phase;       /* 0 forward, 1 backward (each once per micro-batch; gradient accumulation
                        is backward), 2 the update (once per step) */
    ts_dtype dtype;  /* of its first input (f32 when it has none) */
    double flops;    /* 2 M N K per product (batch included) for matmul and conv; attention: its products,
                        4 B H T S D forward, 10 B H T S D backward (program_work.c); 0 for other ops */
    double bytes;    /* its inputs read and outputs written, each once */
    int64_t m, n, k; /* a matmul's or conv's GEMM shape, one product of its batch (attention: T, S, D); 0 otherwise */
} ts_node_work;
/* The kernels of stage `stage` (0 .. ts_program_num_stages - 1) of p, in the order they run:
 * the first cap of them written to out, in order. Views (a reshape: an output that is its input's
 * bytes, no kernel) are left out. Any program, plan_only included. Returns how many kernels the
 * stage has (call with out NULL and cap 0 to size the array), or -1 with the error set:
 * TS_ERR_ARG for a NULL p, a stage out of range, a negative cap, or a NULL out with cap > 0.
 * Thread rule: reads only what ts_compile fixed (schedule, shapes), never a buffer: any number
 * of threads may call it on one program at once, alongside its runs; not while p is freed. */
TS_API int ts_program_stage_work(const ts_program *p, int stage, ts_node_work *out, int cap);
/* What stage `stage` of a pipelined program moves besides its kernels: into *send_bytes and
 * *nsend, the bytes and the number of the values it sends to other stages per micro-batch (made
 * in its forward or backward), and into *shared_bytes the bytes of the persistent values it keeps
 * a copy of whose master copy is on another stage of the same device (the one device holds both).
 * All 0 for a program on one device. Each output may be NULL (not wanted). TS_OK, or TS_ERR_ARG
 * (outputs untouched) for a NULL p or a stage out of range. Thread rule: as ts_program_stage_work. */
TS_API ts_status ts_program_stage_traffic(const ts_program *p, int stage, double *send_bytes, int *nsend,
                                          double *shared_bytes);

/* Names of the backends this build has, comma-separated ("cpu"); devices are "<name>" and
 * "<name>:<index>". */
TS_API const char *ts_devices(void);

/* Set option `key` of device `device` (named as ts_compile_opts.device names it; NULL or "":
 * "cpu") to `value`. The device is opened as a compile opens it, and keeps its options for the
 * life of the process; each device has its own ("cpu" and "cpu:0" are one device, "cpu:1"
 * another; the CPU fallback of a plugin's device, a context of its own, keeps the defaults). The
 * options change how the programs compiled for the device afterwards are compiled: a program
 * compiled before keeps what it was compiled with. Keys and values (the first is the default):
 *   any device:
 *     "fallback"        "cpu": a node the device has no kernel for runs on the CPU, with copies;
 *                       "none": a compile for the device refuses such a node, as
 *                       ts_compile_opts.strict_device = 1 does for one compile
 *   the built-in CPU's devices ("cpu", "cpu:N"):
 *     "conv_algorithm"  "auto": convolutions (conv2d, conv2d_grad_weight, conv_transpose2d,
 *                       conv2d_i8) on oneDNN where it has an implementation; "reference": on
 *                       the op's reference kernel (src/ops), for tests of those kernels
 *     "conv_layout"     "auto": each oneDNN convolution's layout chosen by its shape (blocked
 *                       activations with reorders, or plain NCHW; depthwise ones on a direct NCHW
 *                       kernel); "plain" or "blocked": that layout for every convolution, on
 *                       oneDNN, depthwise ones included (bench/conv.c compares)
 *     "matmul_weights"  "packed": an inference program's matmul weights prepacked in oneDNN's
 *                       layout where that is faster (a second copy: ts_memory.weight_copies);
 *                       "plain": used as stored, no copy
 *     "conv_int8"       "fastest": each int8 convolution of an inference program whose weight
 *                       is fixed (ts_compile_opts.quantize) times its int8 and its f32 kernel on
 *                       its first run and keeps the faster (both kernels' weight copies count in
 *                       ts_memory.weight_copies); "always": every one runs int8
 * Returns TS_OK, or TS_ERR_ARG for a NULL key or value, a key the device does not have or a
 * value the key does not take (the message names it and what is accepted); a device that cannot
 * be opened fails as ts_compile would (TS_ERR_ARG for a malformed name, TS_ERR_NOT_FOUND for an
 * unknown backend or index, or what opening failed with). Thread rule: not while another thread
 * compiles for the same device (a compile reads the options without a lock); other devices may
 * be set and used meanwhile. No cost per run: a compile reads the options once per node. */
TS_API ts_status ts_device_set_option(const char *device, const char *key, const char *value);

/* Where the library's notices go: lines for the user that are not errors, each a whole line
 * ("tessera: placement: opencl runs all 412 nodes\n", "tessera: warning: placement: ..." when
 * the CPU runs some nodes), written with one call of write(ctx, line, len). Today: the placement
 * of each program compiled for a device of a plugin (ts_program_placement's line, at compile;
 * one per stage of a pipeline), and the lines a plugin logs (ts_host_api.log). write NULL, the
 * default: nothing is written anywhere (the library prints nothing; ts_program_placement still
 * tells). ts_write_stdio with stderr prints them. write may be called from any thread that
 * compiles, several at once. Thread-safe; a notice racing with the change goes to the old sink
 * or the new one. */
TS_API void ts_set_notice_sink(ts_write_fn write, void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_CORE_H */
