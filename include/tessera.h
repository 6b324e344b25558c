/*
 * tessera.h — the whole public API of tessera, a static-graph deep-learning framework in C.
 *
 * The model of use, front to back:
 *
 *   ts_graph *g = ts_graph_new();
 *   ts_value x = ts_input(g, "x", TS_F32, 2, (int64_t[]){64, 784});
 *   ts_value w = ts_param(g, "fc.weight", TS_F32, 2, (int64_t[]){784, 10}, ts_init_normal(0.02f));
 *   ts_value y = ts_matmul(g, x, w, 0, 0);
 *   ...
 *   ts_backward(g, loss);                       // appends the backward pass to the same graph
 *   ts_sgd(g, ts_scalar(g, 0.1f), 0.9f, 0.0f);  // appends the optimizer update
 *   ts_program *p = ts_compile(g, &(ts_compile_opts){ .device = "cpu", .fetches = ... });
 *   ts_program_feed(p, "x", batch); ts_program_run(p); ts_program_fetch(p, "loss", &out);
 *
 * Conventions
 *  - Every handle is opaque. Every name has the ts_ prefix.
 *  - Calls that can fail return ts_status (TS_OK == 0) or NULL / TS_NONE; the reason is then in
 *    ts_last_error(), a message that names the op, tensor, file or flag at fault.
 *  - Graph builder calls return a ts_value. On a bad argument they return TS_NONE and record the
 *    error in the graph; later calls that receive TS_NONE also return TS_NONE, and ts_compile()
 *    refuses a graph with a recorded error, reporting the first one. So model code can build a
 *    whole graph and check once.
 *  - Shapes are int64_t arrays, row-major, at most TS_MAX_DIMS dims. A rank-0 tensor is a scalar.
 *  - Parameter names follow Hugging Face state-dict conventions; the gradient of parameter
 *    "a.b.weight" is the value named "a.b.weight@GRAD" (Paddle's convention).
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TS_MAX_DIMS 8

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
} ts_status;

/* The message of the most recent failure on this thread ("" if none). Valid until the next call
 * that fails on this thread. */
const char *ts_last_error(void);

/* A short constant name of a status code ("TS_ERR_SHAPE"). */
const char *ts_status_name(ts_status s);

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
const char *ts_dtype_name(ts_dtype t);
/* Size of one element in bytes; 0 for an invalid dtype. */
size_t ts_dtype_size(ts_dtype t);

/* A host tensor: dtype, shape and an owned, 64-byte-aligned, contiguous buffer. */
typedef struct ts_tensor ts_tensor;

/* A new zero-filled tensor. NULL on a bad dtype/shape or out of memory. */
ts_tensor *ts_tensor_new(ts_dtype dtype, int ndim, const int64_t *shape);
/* A new tensor holding a copy of `data` (numel * dtype size bytes). */
ts_tensor *ts_tensor_from(ts_dtype dtype, int ndim, const int64_t *shape, const void *data);
void ts_tensor_free(ts_tensor *t);
ts_dtype ts_tensor_dtype(const ts_tensor *t);
int ts_tensor_ndim(const ts_tensor *t);
const int64_t *ts_tensor_shape(const ts_tensor *t);
int64_t ts_tensor_numel(const ts_tensor *t);
size_t ts_tensor_nbytes(const ts_tensor *t);
void *ts_tensor_data(ts_tensor *t);

/* f32 <-> bf16 (round to nearest even) and f32 <-> f16 conversions of n elements. */
void ts_f32_to_bf16(const float *src, uint16_t *dst, size_t n);
void ts_bf16_to_f32(const uint16_t *src, float *dst, size_t n);
void ts_f32_to_f16(const float *src, uint16_t *dst, size_t n);
void ts_f16_to_f32(const uint16_t *src, float *dst, size_t n);

/* ---------------------------------------------------------------- graphs */

typedef struct ts_graph ts_graph;
/* A value in a graph: an input, a parameter, a constant or an op's output. */
typedef int32_t ts_value;
#define TS_NONE ((ts_value)-1)

ts_graph *ts_graph_new(void);
void ts_graph_free(ts_graph *g);

/* Seed for parameter initializers and dropout masks (default 0). Set before adding parameters. */
void ts_graph_set_seed(ts_graph *g, uint64_t seed);
/* TS_OK, or the first error recorded while building (its message is in ts_last_error()). */
ts_status ts_graph_status(const ts_graph *g);

/* How a parameter's initial value is drawn. Draws depend only on (graph seed, parameter name). */
typedef struct ts_init {
    enum { TS_INIT_ZEROS, TS_INIT_ONES, TS_INIT_CONST, TS_INIT_UNIFORM, TS_INIT_NORMAL } kind;
    float a, b; /* CONST: a.  UNIFORM: [a, b).  NORMAL: mean a, std b (truncated at 2 std) */
} ts_init;
static inline ts_init ts_init_zeros(void) { ts_init i = {TS_INIT_ZEROS, 0, 0}; return i; }
static inline ts_init ts_init_ones(void) { ts_init i = {TS_INIT_ONES, 0, 0}; return i; }
static inline ts_init ts_init_const(float v) { ts_init i = {TS_INIT_CONST, v, 0}; return i; }
static inline ts_init ts_init_uniform(float lo, float hi) { ts_init i = {TS_INIT_UNIFORM, lo, hi}; return i; }
static inline ts_init ts_init_normal(float std) { ts_init i = {TS_INIT_NORMAL, 0, std}; return i; }

/* A named input, fed before each run. Names are unique across inputs, parameters and named values. */
ts_value ts_input(ts_graph *g, const char *name, ts_dtype dtype, int ndim, const int64_t *shape);
/* A named trainable parameter with an initializer. */
ts_value ts_param(ts_graph *g, const char *name, ts_dtype dtype, int ndim, const int64_t *shape,
                  ts_init init);
/* A constant holding a copy of t. */
ts_value ts_constant(ts_graph *g, const ts_tensor *t);
/* A rank-0 f32 constant. */
ts_value ts_scalar(ts_graph *g, float v);
/* Give value v a name so it can be fetched; returns v. */
ts_value ts_name(ts_graph *g, ts_value v, const char *name);
/* The value with this name, or TS_NONE. */
ts_value ts_lookup(const ts_graph *g, const char *name);

/* Shape and dtype of a value, as inferred when it was built. Returns the rank, -1 for TS_NONE. */
int ts_value_shape(const ts_graph *g, ts_value v, int64_t shape[TS_MAX_DIMS]);
ts_dtype ts_value_dtype(const ts_graph *g, ts_value v);

/* ---------------------------------------------------------------- ops
 * Binary elementwise ops broadcast like numpy. Unless stated, float ops take f32. */

/* a[..., M, K] @ b[..., K, N] -> [..., M, N]; trans_a / trans_b transpose the last two dims of
 * the operand first. Batch dims broadcast; a 2-D b is shared by every batch. f32 or bf16. */
ts_value ts_matmul(ts_graph *g, ts_value a, ts_value b, int trans_a, int trans_b);
ts_value ts_add(ts_graph *g, ts_value a, ts_value b);
ts_value ts_sub(ts_graph *g, ts_value a, ts_value b);
ts_value ts_mul(ts_graph *g, ts_value a, ts_value b);
ts_value ts_div(ts_graph *g, ts_value a, ts_value b);
/* a ** b elementwise (a > 0 where b is not an integer). */
ts_value ts_pow(ts_graph *g, ts_value a, ts_value b);
/* alpha * x + beta. */
ts_value ts_scale(ts_graph *g, ts_value x, float alpha, float beta);
ts_value ts_sqrt(ts_graph *g, ts_value x);
ts_value ts_exp(ts_graph *g, ts_value x);
ts_value ts_log(ts_graph *g, ts_value x);
ts_value ts_relu(ts_graph *g, ts_value x);
ts_value ts_tanh(ts_graph *g, ts_value x);
ts_value ts_sigmoid(ts_graph *g, ts_value x);
/* GELU: x * Phi(x) (erf form), or the tanh approximation when tanh_approx != 0. */
ts_value ts_gelu(ts_graph *g, ts_value x, int tanh_approx);

/* Same data, new shape; one entry may be -1 (inferred). */
ts_value ts_reshape(ts_graph *g, ts_value x, int ndim, const int64_t *shape);
/* out.shape[i] = x.shape[perm[i]]. perm == NULL swaps the last two dims. */
ts_value ts_transpose(ts_graph *g, ts_value x, const int *perm);
/* x[..., start:end, ...] along axis (negative indices count from the end, python-style clamping). */
ts_value ts_slice(ts_graph *g, ts_value x, int axis, int64_t start, int64_t end);
ts_value ts_concat(ts_graph *g, int n, const ts_value *xs, int axis);
/* Split x along axis into n parts of the given sizes (sizes == NULL: equal parts). */
ts_status ts_split(ts_graph *g, ts_value x, int axis, int n, const int64_t *sizes, ts_value *outs);
/* Broadcast x to shape (numpy rules). */
ts_value ts_expand(ts_graph *g, ts_value x, int ndim, const int64_t *shape);
/* Rows of table[V, ...] picked by integer (i32/i64) indices[...] -> [..., ...]. An index outside
 * [0, V) fails the run with TS_ERR_RUNTIME. Not differentiable in indices. */
ts_value ts_gather(ts_graph *g, ts_value table, ts_value indices);

/* Reductions over the listed axes (naxes == 0: all axes). */
ts_value ts_reduce_sum(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);
ts_value ts_reduce_mean(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);
ts_value ts_reduce_max(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);

/* softmax(x + mask) over the last axis; mask (additive, broadcastable to x) may be TS_NONE. */
ts_value ts_softmax(ts_graph *g, ts_value x, ts_value mask);
ts_value ts_log_softmax(ts_graph *g, ts_value x);
/* Layer norm over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta; gamma and beta are
 * [C] (either may be TS_NONE). */
ts_value ts_layer_norm(ts_graph *g, ts_value x, ts_value gamma, ts_value beta, float eps);
/* Inverted dropout with drop probability p: a fresh mask each run, a function of (graph seed,
 * this op, run step), so runs are reproducible. Identity in programs compiled for inference. */
ts_value ts_dropout(ts_graph *g, ts_value x, float p);
/* Mean cross-entropy of logits[..., C] against integer labels[...]; labels equal to ignore_index
 * are left out of the mean (the loss is 0 when all are). Returns a scalar. A label outside
 * [0, C) that is not ignore_index fails the run with TS_ERR_RUNTIME. */
ts_value ts_cross_entropy(ts_graph *g, ts_value logits, ts_value labels, int64_t ignore_index);
/* cond ? a : b elementwise, cond u8 (0 / non-zero); all three broadcast. */
ts_value ts_where(ts_graph *g, ts_value cond, ts_value a, ts_value b);
/* Convert to another dtype (float -> int truncates toward zero). */
ts_value ts_cast(ts_graph *g, ts_value x, ts_dtype dtype);

/* ---------------------------------------------------------------- training */

/* Append the backward pass of scalar `loss` to the graph: afterwards every trainable parameter
 * that loss depends on has a gradient value named "<param>@GRAD" (see ts_grad). Once per graph. */
ts_status ts_backward(ts_graph *g, ts_value loss);
/* The gradient of a parameter after ts_backward, or TS_NONE. */
ts_value ts_grad(const ts_graph *g, ts_value param);

/* Append in-place updates of every parameter that has a gradient, run at the end of each step.
 * lr is a scalar f32 value: a ts_scalar constant, or an input fed each step for a schedule.
 * SGD (PyTorch semantics): g += wd * p; m = momentum * m + g; p -= lr * m. */
ts_status ts_sgd(ts_graph *g, ts_value lr, float momentum, float weight_decay);
/* AdamW (PyTorch semantics, bias-corrected, decoupled weight decay). */
ts_status ts_adamw(ts_graph *g, ts_value lr, float beta1, float beta2, float eps, float weight_decay);

/* ---------------------------------------------------------------- programs */

typedef struct ts_program ts_program;

typedef struct ts_compile_opts {
    const char *device;             /* "cpu" (default when NULL) */
    int num_threads;                /* 0: the OpenMP default */
    int nfetch;                     /* values to be read after a run, by name */
    const char *const *fetches;
    int inference;                  /* 1: drop optimizer updates, dropout becomes identity */
    int no_fusion;                  /* 1: skip the fusion pass (for testing) */
} ts_compile_opts;

/* Compile graph g for a device: dead-code elimination, fusion, memory planning, kernel selection,
 * and one arena for every intermediate. The graph is not modified and may be freed afterwards.
 * Parameters start from their initializers. NULL on failure (see ts_last_error()). */
ts_program *ts_compile(const ts_graph *g, const ts_compile_opts *opts);
void ts_program_free(ts_program *p);

/* Copy a tensor into the named input; its dtype and shape must match the input's exactly. */
ts_status ts_program_feed(ts_program *p, const char *name, const ts_tensor *t);
/* Run one step: every node of the compiled schedule, in order. */
ts_status ts_program_run(ts_program *p);
/* A new tensor holding the named value (a fetch named at compile time, or a parameter). */
ts_status ts_program_fetch(ts_program *p, const char *name, ts_tensor **out);
/* The run counter (starts at 0, +1 per run); seeds dropout. Set it to resume a run exactly. */
uint64_t ts_program_step(const ts_program *p);
void ts_program_set_step(ts_program *p, uint64_t step);

/* Parameters by name: count, i-th name, read (new tensor), write (dtype and shape must match). */
int ts_program_num_params(const ts_program *p);
const char *ts_program_param_name(const ts_program *p, int i);
ts_status ts_program_get_param(const ts_program *p, const char *name, ts_tensor **out);
ts_status ts_program_set_param(ts_program *p, const char *name, const ts_tensor *t);
/* Copy every parameter of src that dst also has (same name, dtype and shape) into dst; returns
 * how many were copied, or -1 on error. Used to evaluate with an inference program. */
int ts_program_copy_params(ts_program *dst, const ts_program *src);

/* Memory a program holds, in bytes. */
typedef struct ts_memory {
    size_t params;          /* parameter buffers */
    size_t grads;           /* parameter gradients kept to the end of the step */
    size_t optimizer_state; /* momentum / Adam moments */
    size_t activations;     /* the planned arena of every other intermediate */
    size_t workspace;       /* kernel scratch (largest single need) */
    size_t intermediates_total; /* sum of all intermediate sizes, as if none were reused */
    int nodes;              /* scheduled nodes after passes */
    int fused;              /* nodes removed by fusion */
} ts_memory;
ts_status ts_program_memory(const ts_program *p, ts_memory *m);

/* Names of the devices this build can compile for, comma-separated ("cpu"). */
const char *ts_devices(void);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_H */
