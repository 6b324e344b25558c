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

/* Marks a declaration as part of the shared library's ABI: the library is built with
 * -fvisibility=hidden, so only what carries TS_API is exported (tests/test_exports.sh checks that
 * libtessera.so exports exactly what the headers declare so). */
#define TS_API __attribute__((visibility("default")))

/* The version of the library actually loaded, "0.1.0" (which may differ from this header's when a
 * program runs against another libtessera.so of the same major). */
TS_API const char *ts_version(void);

#define TS_MAX_DIMS 8

/* A communicator between the processes of a job (tessera_devices.h). */
typedef struct ts_comm ts_comm;

/* ---------------------------------------------------------------- status and errors */

typedef enum ts_status {
    TS_OK = 0,
    TS_ERR_ARG,         /* a bad argument: NULL handle, bad axis, bad option */
    TS_ERR_SHAPE,       /* shapes do not agree */
    TS_ERR_DTYPE,       /* a dtype the op does not accept */
    TS_ERR_NOT_FOUND,   /* unknown name: feed, fetch, parameter, device */
    TS_ERR_IO,          /* a file could not be read or written, or is malformed */
    TS_ERR_NOMEM,       /* allocation failed */
    TS_ERR_UNSUPPORTED, /* valid request that this build or device cannot do */
    TS_ERR_RUNTIME,     /* a kernel found bad data at run time (e.g. an index out of range) */
    TS_ERR_COMM,        /* a collective between ranks failed or timed out (a rank died or hung) */
} ts_status;

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

typedef enum ts_dtype {
    TS_F32 = 0,
    TS_BF16,
    TS_F16,
    TS_I32,
    TS_I64,
    TS_U8, /* bytes, and booleans (0 / 1) for ts_where */
    TS_DTYPE_COUNT
} ts_dtype;

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
                                       loaded next (ts_program_load with TS_LOAD_STRICT): the
                                       draws were 3.4 s of a 3.8 s BERT-Base compile */
    int profile;                    /* 1: time every kernel call and every ts_program_run (see
                                       ts_program_profile_report); 0: off, no cost. A pipelined
                                       program (stage_devices) refuses it: TS_ERR_UNSUPPORTED */
} ts_compile_opts;

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

/* Memory a program holds, in bytes. */
typedef struct ts_memory {
    size_t struct_size; /* the size ts_program_memory filled (see tessera.h) */
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
} ts_memory;
TS_API ts_status ts_program_memory(const ts_program *p, ts_memory *m);

/* Profiling (a program compiled with ts_compile_opts.profile = 1). Write (one call of write,
 * with ctx; ts_write_stdio with stdout prints it) what the
 * ts_program_run calls since compile or the last reset took: their total wall time, the time
 * inside kernels (a monotonic clock around each kernel call of the device's node loop; the CPU
 * backend, other backends report no kernel time) and the share outside them (framework overhead:
 * run loop, thread setup, copies made inside the run), then three tables of nodes, calls, total
 * ms and % of kernel time:
 *  - per op type (the node's op, after fusion; the name first), by time, largest first;
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
    size_t struct_size; /* the size ts_program_stage_info filled (see tessera.h) */
    const char *device;   /* "cpu:1" */
    int threads;          /* of its device */
    ts_memory mem;        /* its program: activations count every micro-batch it keeps in flight */
    int in_flight;        /* micro-batches whose activations it keeps at most: min(M, S - stage) */
    double busy_s;        /* time its device spent running it, over the runs so far */
} ts_stage_info;
TS_API int ts_program_num_stages(const ts_program *p);
TS_API ts_status ts_program_stage_info(const ts_program *p, int stage, ts_stage_info *info);
/* Of a pipelined program's runs so far: the wall time, and the bubble: the share of the devices'
 * time spent idle, 1 - (time busy, summed over stages) / (devices x wall time). 0 and 0 for a
 * program on one device. ts_program_pipeline_reset_stats starts them over (after a warm-up). */
TS_API ts_status ts_program_pipeline_stats(const ts_program *p, double *wall_s, double *bubble);
TS_API void ts_program_pipeline_reset_stats(ts_program *p);

/* Names of the backends this build has, comma-separated ("cpu"); devices are "<name>" and
 * "<name>:<index>". */
TS_API const char *ts_devices(void);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_CORE_H */
