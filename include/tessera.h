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
#include <stdio.h>

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
    TS_ERR_COMM,        /* a collective between ranks failed or timed out (a rank died or hung) */
} ts_status;

/* The message of the most recent failure on this thread ("" if none). Valid until the next call
 * that fails on this thread. */
const char *ts_last_error(void);

/* The code of that failure (TS_OK if none): what a call that returns NULL or TS_NONE failed with. */
ts_status ts_last_status(void);
/* Record a failure (its code and printf-style message) for the calling thread, as tessera's own
 * calls do: for code called back by tessera (training hooks, backends). Returns code. */
ts_status ts_set_error(ts_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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
 * the operand first. Batch dims broadcast; a 2-D b is shared by every batch. f32, bf16 or f16
 * (both operands alike; 16-bit products accumulate in f32 and round once to the output, an f16
 * result beyond +-65504 becomes +-inf). oneDNN 2.6 has no f16 matmul on CPUs without
 * AVX512_FP16, and no bf16 one on CPUs without AVX-512: there the 16-bit operands are widened
 * exactly to f32, multiplied by oneDNN's f32 matmul, and the product rounded to f16 / bf16 — the
 * same numbers, at f32 speed (plus the conversions). */
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
/* Convert to another dtype (float -> int truncates toward zero and saturates at the integer
 * type's range; NaN becomes 0). */
ts_value ts_cast(ts_graph *g, ts_value x, ts_dtype dtype);

/* ---------------------------------------------------------------- more ops (src/ops/mathfn.c, binary.c,
 * predicate.c, select.c, argreduce.c, reduce_prod.c, trilu.c, elements.c, nll_loss.c, tile.c, pad.c,
 * topk.c, grid_sample.c, det.c, tfidf.c, roi_align.c, dft.c)
 * Elementwise math, comparisons and logic, integer arithmetic, index ops, losses and a few more, as
 * ONNX defines them. Binary ops broadcast like numpy. Integer results wrap (two's complement). */

/* The elementwise functions of ts_math (y = f(x), f32). alpha / beta are used where stated. */
typedef enum ts_math_fn {
    TS_MATH_ABS = 0, TS_MATH_NEG, TS_MATH_FLOOR, TS_MATH_CEIL,
    TS_MATH_ROUND,            /* to the nearest integer, halves to even */
    TS_MATH_SIGN,             /* -1, 0 or 1 */
    TS_MATH_RECIPROCAL,       /* 1 / x */
    TS_MATH_SIN, TS_MATH_COS, TS_MATH_TAN, TS_MATH_ASIN, TS_MATH_ACOS, TS_MATH_ATAN,
    TS_MATH_SINH, TS_MATH_COSH, TS_MATH_ASINH, TS_MATH_ACOSH, TS_MATH_ATANH, TS_MATH_ERF,
    TS_MATH_SOFTPLUS,         /* log(1 + e^x) */
    TS_MATH_SOFTSIGN,         /* x / (1 + |x|) */
    TS_MATH_ELU,              /* x > 0 ? x : alpha (e^x - 1) */
    TS_MATH_SELU,             /* beta (x > 0 ? x : alpha (e^x - 1)); ONNX: alpha 1.67326, gamma = beta 1.0507 */
    TS_MATH_CELU,             /* max(0, x) + min(0, alpha (e^(x / alpha) - 1)), alpha != 0 */
    TS_MATH_LEAKY_RELU,       /* x < 0 ? alpha x : x */
    TS_MATH_THRESHOLDED_RELU, /* x > alpha ? x : 0 */
    TS_MATH_SHRINK,           /* x < -alpha ? x + beta : x > alpha ? x - beta : 0 (ONNX lambd, bias) */
    TS_MATH_COUNT
} ts_math_fn;
/* f(x) elementwise. Differentiable, except floor, ceil, round and sign (no gradient flows through
 * them: their derivative is 0 wherever it exists). */
ts_value ts_math(ts_graph *g, ts_math_fn fn, ts_value x, float alpha, float beta);
/* "abs", "leaky_relu", ...; NULL for an invalid id. */
const char *ts_math_fn_name(ts_math_fn fn);

/* Binary elementwise ops of ts_binary. Both operands have one dtype, f32, i32, i64 or u8, except
 * where stated. */
typedef enum ts_binop {
    TS_BIN_EQUAL = 0, TS_BIN_LESS, TS_BIN_LESS_EQUAL, TS_BIN_GREATER, TS_BIN_GREATER_EQUAL, /* -> u8 0 / 1 */
    TS_BIN_AND, TS_BIN_OR, TS_BIN_XOR, /* u8 operands (non-zero is true) -> u8 0 / 1 */
    TS_BIN_MIN, TS_BIN_MAX,            /* NaN if either is NaN; f32 differentiable (ties: a) */
    TS_BIN_MOD,                        /* a - b floor(a / b), the sign of b (Python's %) */
    TS_BIN_FMOD,                       /* a - b trunc(a / b), the sign of a (C's fmod and %) */
    TS_BIN_ADD, TS_BIN_SUB, TS_BIN_MUL, /* f32: ts_add, ts_sub, ts_mul */
    TS_BIN_DIV,                        /* f32: ts_div; integers: truncated toward zero */
    TS_BIN_SHL, TS_BIN_SHR,            /* integers (logical shifts; a shift >= the width gives 0) */
    TS_BIN_COUNT
} ts_binop;
/* op(a, b) elementwise. An integer division or remainder by zero fails the run with
 * TS_ERR_RUNTIME naming the op. */
ts_value ts_binary(ts_graph *g, ts_binop op, ts_value a, ts_value b);
/* u8 0 / 1 predicates: x is NaN (f32); x is +inf (detect_pos) or -inf (detect_neg) (f32); !x (u8). */
ts_value ts_isnan(ts_graph *g, ts_value x);
ts_value ts_isinf(ts_graph *g, ts_value x, int detect_pos, int detect_neg);
ts_value ts_not(ts_graph *g, ts_value x);
/* cond ? a : b for a and b of any one dtype (ts_where for f32, which it calls); cond u8. */
ts_value ts_select(ts_graph *g, ts_value cond, ts_value a, ts_value b);

/* The index (i64) of the largest / smallest element along axis of f32 x: the first one, or the
 * last with select_last; a NaN counts as the largest (and smallest) of all. keepdims keeps the
 * axis as size 1. Not differentiable. */
ts_value ts_argmax(ts_graph *g, ts_value x, int axis, int keepdims, int select_last);
ts_value ts_argmin(ts_graph *g, ts_value x, int axis, int keepdims, int select_last);
/* min and product of f32 x over axes (as ts_reduce_sum); reduce_min is -reduce_max(-x). */
ts_value ts_reduce_min(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);
ts_value ts_reduce_prod(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);

/* The upper (upper != 0: j - i >= k) or lower (j - i <= k) triangle of the last two dims of x
 * (rank >= 2, any dtype), zeros elsewhere. */
ts_value ts_trilu(ts_graph *g, ts_value x, int upper, int64_t k);
/* ts_trilu with k read at run time from k, an i64 value of one element. */
ts_value ts_trilu_k(ts_graph *g, ts_value x, int upper, ts_value k);
/* out[i..] = data[i.. with index along axis replaced by indices[i..]]: indices (i32 / i64) of
 * data's rank, each dim at most data's (except along axis); negative indices count from the end.
 * Data of any dtype; differentiable in f32 data. An index outside [-n, n) fails the run. */
ts_value ts_gather_elements(ts_graph *g, ts_value data, ts_value indices, int axis);
typedef enum ts_scatter_reduce { TS_SCATTER_NONE = 0, TS_SCATTER_ADD, TS_SCATTER_MUL } ts_scatter_reduce;
/* A copy of data with data[i.. with indices[i..] along axis] = updates[i..] (or += / *=), the
 * adjoint of ts_gather_elements; updates has the shape of indices. With TS_SCATTER_NONE, the
 * last of duplicate indices wins. f32 differentiable (not with TS_SCATTER_MUL). */
ts_value ts_scatter_elements(ts_graph *g, ts_value data, ts_value indices, ts_value updates, int axis,
                             ts_scatter_reduce reduction);

typedef enum ts_reduction { TS_REDUCE_NONE = 0, TS_REDUCE_SUM, TS_REDUCE_MEAN } ts_reduction;
/* Negative log-likelihood of f32 log-probabilities input [N, C, d1..] at integer (i32 / i64)
 * target [N, d1..]: loss = -weight[t] input[n, t, d..] (weight [C], or TS_NONE for ones), 0 where
 * t == ignore_index; NONE: the loss per element [N, d1..]; SUM: its sum; MEAN: the sum divided
 * by the sum of the weights of the targets not ignored (a rank-0 result; 0/0 is NaN, as ONNX).
 * A target outside [0, C) other than ignore_index fails the run. Differentiable in input. */
ts_value ts_nll_loss(ts_graph *g, ts_value input, ts_value target, ts_value weight, int64_t ignore_index,
                     ts_reduction reduction);

/* x (any dtype) repeated repeats[i] times along each axis i (ndim = x's rank, each >= 1).
 * Differentiable in f32 x. */
ts_value ts_tile(ts_graph *g, ts_value x, const int64_t *repeats);
typedef enum ts_pad_mode { TS_PAD_CONSTANT = 0, TS_PAD_REFLECT, TS_PAD_EDGE } ts_pad_mode;
/* x (any dtype, rank r) padded by pads[i] before and pads[r + i] after axis i (negative: cropped):
 * with `value` (converted to x's dtype), the mirror image without the edge (reflect, which needs
 * pads < the axis length) or copies of the edge; every dim of the result >= 1. Differentiable in
 * f32 x. */
ts_value ts_pad(ts_graph *g, ts_value x, const int64_t *pads, ts_pad_mode mode, double value);
/* The k (1 <= k <= the axis' size) largest (largest != 0) or smallest f32 elements along axis,
 * sorted (ties: the lower index first), and their indices (i64): values to outs[0], indices to
 * outs[1]. Differentiable in x through the values. */
ts_status ts_topk(ts_graph *g, ts_value x, int64_t k, int axis, int largest, ts_value outs[2]);
typedef enum ts_grid_mode { TS_GRID_BILINEAR = 0, TS_GRID_NEAREST, TS_GRID_BICUBIC } ts_grid_mode;
typedef enum ts_grid_padding { TS_GRID_ZEROS = 0, TS_GRID_BORDER, TS_GRID_REFLECTION } ts_grid_padding;
/* x [N, C, H, W] sampled at grid [N, OH, OW, 2] (normalised (x, y) in [-1, 1]) -> [N, C, OH, OW], as
 * PyTorch's grid_sample / ONNX GridSample (see src/ops/grid_sample.c). f32; not differentiable. */
ts_value ts_grid_sample(ts_graph *g, ts_value x, ts_value grid, ts_grid_mode mode, ts_grid_padding padding,
                        int align_corners);
/* The determinant of each f32 matrix x [.., M, M] -> [..] (LU with partial pivoting in double). Not
 * differentiable. */
ts_value ts_det(ts_graph *g, ts_value x);
typedef enum ts_tfidf_mode { TS_TFIDF_TF = 0, TS_TFIDF_IDF, TS_TFIDF_TFIDF } ts_tfidf_mode;
typedef struct ts_tfidf_opts {
    int min_gram, max_gram, max_skip; /* n-gram lengths counted; gaps between their elements */
    ts_tfidf_mode mode;
    const int64_t *pool;              /* the n-grams, by length (ONNX pool_int64s) */
    int64_t npool;
    const int64_t *ngram_counts;      /* where each length's block starts in pool */
    int ncounts;
    const int64_t *ngram_indexes;     /* the output position of each pool n-gram */
    int64_t nindexes;
    const float *weights;             /* per pool n-gram (IDF / TFIDF), NULL: ones */
} ts_tfidf_opts;
/* n-gram counts of integer (i32 / i64) sequences x [C] or [N, C] against a pool of n-grams ->
 * f32 [O] or [N, O] (O = 1 + the largest ngram_index), as ONNX TfIdfVectorizer (src/ops/tfidf.c).
 * Not differentiable. */
ts_value ts_tfidf(ts_graph *g, ts_value x, const ts_tfidf_opts *opts);
/* Region-of-interest pooling, as ONNX RoiAlign in mode avg (src/ops/roi_align.c): x [N, C, H, W]
 * f32, rois [R, 4] f32 (x1, y1, x2, y2), batch_indices [R] i32 / i64 -> [R, C, out_h, out_w]; each
 * cell the mean of bilinear samples (sampling_ratio per bin and axis, 0: adaptive);
 * half_pixel: ONNX's coordinate_transformation_mode half_pixel (else output_half_pixel). Not
 * differentiable. */
ts_value ts_roi_align(ts_graph *g, ts_value x, ts_value rois, ts_value batch_indices, int out_h, int out_w,
                      int sampling_ratio, float spatial_scale, int half_pixel);
/* The discrete Fourier transform along axis (not the last) of x [.., n, .., c], real (c = 1) or
 * complex (c = 2: re, im), f32 -> [.., K, .., 2] as ONNX DFT (src/ops/dft.c): of length `length`
 * (0: n; the signal cut or zero-padded to it), K = length, or length / 2 + 1 when onesided;
 * inverse: e^(+2 pi i ..) and 1 / length. Not differentiable. */
ts_value ts_dft(ts_graph *g, ts_value x, int axis, int inverse, int onesided, int64_t length);

/* ---------------------------------------------------------------- vision ops (src/ops/conv.c, pool.c, resize.c, hardact.c)
 * Images are NCHW f32: x [N, C, H, W]. Pads are {top, left, bottom, right}. All differentiable
 * in x (and in w and bias for convolutions) except where stated. Bad shapes or options (channels
 * that do not match, groups that do not divide them, a kernel bigger than the padded input, a
 * wrong rank, a negative pad or stride) fail the builder with a message naming the op and value.
 * On the CPU, convolutions run on oneDNN (a direct NCHW kernel for depthwise ones). */

typedef struct ts_conv_opts {
    int stride[2];   /* {sh, sw}; 0 means 1 */
    int pad[4];      /* {top, left, bottom, right} */
    int dilation[2]; /* {dh, dw}; 0 means 1 */
    int groups;      /* 0 means 1; C and O divisible by it */
} ts_conv_opts;
/* 2-D convolution (cross-correlation, as PyTorch and ONNX): x [N, C, H, W], w [O, C/groups, KH, KW],
 * bias [O] or TS_NONE -> [N, O, OH, OW] with OH = (H + pad_t + pad_b - dh (KH - 1) - 1) / sh + 1
 * (floor), OW alike. opts NULL: stride 1, no padding. */
ts_value ts_conv2d(ts_graph *g, ts_value x, ts_value w, ts_value bias, const ts_conv_opts *opts);
/* Transposed 2-D convolution (the adjoint of ts_conv2d in x): x [N, C, H, W], w [C, O/groups, KH, KW],
 * bias [O] or TS_NONE -> [N, O, OH, OW] with OH = sh (H - 1) + out_pad_h + dh (KH - 1) + 1 - pad_t
 * - pad_b. out_pad NULL: {0, 0}; each must be less than its stride. */
ts_value ts_conv_transpose2d(ts_graph *g, ts_value x, ts_value w, ts_value bias, const ts_conv_opts *opts,
                             const int out_pad[2]);

typedef struct ts_pool_opts {
    int kernel[2];          /* {kh, kw} */
    int stride[2];          /* 0 means 1 */
    int pad[4];             /* {top, left, bottom, right}, each at most half the (dilated) kernel
                               (as PyTorch); padded cells never win a max */
    int dilation[2];        /* max pool only; 0 means 1 */
    int ceil_mode;          /* 1: OH = ceil(...) + 1, less a last window that would start in the
                               bottom padding (as PyTorch and ONNX) */
    int count_include_pad;  /* average pool: 1 divides by the window's cells inside the padded
                               input (a ceil_mode window past it counts less, as PyTorch), 0 by
                               its cells inside the input */
} ts_pool_opts;
/* Max / average pooling: x [N, C, H, W] -> [N, C, OH, OW], OH = (H + pad_t + pad_b - dh (kh - 1)
 * - 1) / sh + 1 (floor or ceil). opts must not be NULL. A max's gradient goes to the first
 * maximum of its window (row by row) on ties. */
ts_value ts_max_pool2d(ts_graph *g, ts_value x, const ts_pool_opts *opts);
ts_value ts_avg_pool2d(ts_graph *g, ts_value x, const ts_pool_opts *opts);

typedef enum ts_resize_mode { TS_RESIZE_NEAREST = 0, TS_RESIZE_LINEAR } ts_resize_mode;
/* Where output pixel o samples the input, for scale s = out / in (or the given scale):
 * HALF_PIXEL (o + 0.5) / s - 0.5; ASYMMETRIC o / s; ALIGN_CORNERS o (in - 1) / (out - 1);
 * PYTORCH_HALF_PIXEL as HALF_PIXEL but 0 when out == 1. As ONNX Resize's
 * coordinate_transformation_mode. */
typedef enum ts_resize_coord {
    TS_COORD_HALF_PIXEL = 0, TS_COORD_ASYMMETRIC, TS_COORD_ALIGN_CORNERS, TS_COORD_PYTORCH_HALF_PIXEL
} ts_resize_coord;
/* Nearest mode's rounding of the sampled coordinate (ONNX nearest_mode). */
typedef enum ts_resize_round {
    TS_ROUND_PREFER_FLOOR = 0, TS_ROUND_PREFER_CEIL, TS_ROUND_FLOOR, TS_ROUND_CEIL
} ts_resize_round;
typedef struct ts_resize_opts {
    ts_resize_mode mode;
    ts_resize_coord coord;
    ts_resize_round round;   /* nearest only */
    float scale[2];          /* {sh, sw} used in the coordinate formula; 0: out / in */
} ts_resize_opts;
/* Resize the last two dims of x [..., H, W] (rank >= 2) to [..., oh, ow]: nearest (the rounded
 * coordinate clamped to [0, in - 1]) or bilinear (the coordinate clamped to [0, in - 1], as ONNX
 * Runtime and PyTorch). Differentiable in x. opts NULL: nearest, half_pixel, round_prefer_floor
 * (ONNX's defaults). */
ts_value ts_resize2d(ts_graph *g, ts_value x, int64_t oh, int64_t ow, const ts_resize_opts *opts);

/* min(max(x, lo), hi) (lo, hi may be -INFINITY / INFINITY, not NaN); the gradient is g where
 * lo <= x <= hi and 0 elsewhere (as PyTorch's clamp). */
ts_value ts_clip(ts_graph *g, ts_value x, float lo, float hi);
/* max(0, min(1, alpha x + beta)); the gradient is g alpha where 0 < alpha x + beta < 1. */
ts_value ts_hard_sigmoid(ts_graph *g, ts_value x, float alpha, float beta);
/* x * hard_sigmoid(x, 1/6, 1/2) (MobileNetV3's h-swish). */
ts_value ts_hard_swish(ts_graph *g, ts_value x);

/* ---------------------------------------------------------------- training */
/* A communicator between the processes of a job ("Replicas" below). */
typedef struct ts_comm ts_comm;


/* Append the backward pass of scalar `loss` to the graph: afterwards every trainable parameter
 * that loss depends on has a gradient value named "<param>@GRAD" (see ts_grad). Once per graph. */
ts_status ts_backward(ts_graph *g, ts_value loss);
/* The gradient of a parameter after ts_backward, or TS_NONE. */
ts_value ts_grad(const ts_graph *g, ts_value param);

/* Recomputation (activation checkpointing). Ops built between ts_graph_recompute_begin and
 * ts_graph_recompute_end form a segment whose intermediates are not kept for the backward pass:
 * ts_backward recomputes the segment's forward (clones of its ops, appended where the backward
 * reaches the segment) and differentiates the segment from those, so the forward's intermediates
 * die as soon as the forward is done with them. What stays alive is what the segment reads from
 * outside it (its input, the checkpoint) and what later ops read from it (its output). Typically
 * one segment per layer: memory for one layer's activations plus one checkpoint per layer,
 * against every layer's activations, at the cost of a second forward of each segment.
 * The clones compute what the originals did (a cloned dropout draws the same mask), so the
 * gradients are bit for bit those without segments (tests/test_recompute.c checks BERT, f32
 * and bf16). Ops with side effects are not recomputed; inference programs are unchanged.
 * Segments do not nest; begin only before ts_backward, and end each one before it (else
 * TS_ERR_ARG, recorded in the graph like a builder error). */
ts_status ts_graph_recompute_begin(ts_graph *g);
ts_status ts_graph_recompute_end(ts_graph *g);

/* Pipeline stages (model parallelism, as Paddle's ipu_shard_guard(index, stage)). Ops built between
 * ts_graph_stage_begin(g, k) and ts_graph_stage_end(g) are placed on pipeline stage k (0 ..
 * TS_MAX_STAGES - 1); stages run in order in the forward pass and in reverse in the backward.
 * ts_backward places each gradient op on the stage of the forward op it differentiates (a
 * recomputed segment's clones too); ts_optimizer places each parameter's accumulation and update
 * on its stage (the stage of the first op that reads it) and its global parts (sum of squares,
 * clipping coefficient, counters) where they are needed. Ops built outside any stage go where
 * their inputs are. A graph compiled for one device ignores the stages; compiled with
 * ts_compile_opts.stage_devices it runs as a pipeline (see there). Begin only before
 * ts_backward; stages do not nest (TS_ERR_ARG, recorded in the graph like a builder error). */
#define TS_MAX_STAGES 64
ts_status ts_graph_stage_begin(ts_graph *g, int stage);
ts_status ts_graph_stage_end(ts_graph *g);
/* 1 + the highest stage placed so far (0 when none). */
int ts_graph_num_stages(const ts_graph *g);

/* Dynamic loss scaling for fp16 training, as torch.cuda.amp.GradScaler: the backward pass starts
 * from d loss = scale instead of 1, so small gradients stay above fp16's underflow; the optimizer
 * (ts_optimizer, added after) divides the gradients by the scale again before its updates, and
 * at the end of each step (each optimizer step with gradient accumulation):
 *  - when any gradient holds an inf or NaN (the sum of their squares is not finite), the update
 *    is skipped — parameters, moments and step counters unchanged, the lr schedule's counter
 *    too — the scale is multiplied by backoff_factor and "optimizer@SKIPPED_STEPS" grows by one;
 *  - otherwise, after growth_interval such clean steps in a row, the scale is multiplied by
 *    growth_factor.
 * State, rank-0 f32 values saved and restored with the optimizer state (ts_program_save_state):
 * the scale "optimizer@LOSS_SCALE" (0 until the first run ends: init_scale is then in effect),
 * the clean steps since it last changed "optimizer@LOSS_SCALE_CLEAN_STEPS", and the skipped
 * steps "optimizer@SKIPPED_STEPS"; fetch them by name to log them. A sum of squares beyond
 * f32's range (a global norm of the scaled gradients above about 1.8e19) counts as an overflow. */
typedef struct ts_loss_scale_opts {
    float init_scale;     /* finite, > 0 */
    float growth_factor;  /* finite, > 1 */
    float backoff_factor; /* in (0, 1) */
    int growth_interval;  /* >= 1 */
} ts_loss_scale_opts;

/* torch.cuda.amp.GradScaler's defaults: init_scale 65536 (2^16), growth_factor 2,
 * backoff_factor 0.5, growth_interval 2000. */
ts_loss_scale_opts ts_loss_scale_defaults(void);

/* ts_backward with dynamic loss scaling (opts NULL: ts_loss_scale_defaults()). The gradients
 * "<param>@GRAD" are then scaled; ts_optimizer unscales what it uses. TS_ERR_ARG, naming the
 * option, for one out of range; otherwise ts_backward's errors. */
ts_status ts_backward_scaled(ts_graph *g, ts_value loss, const ts_loss_scale_opts *opts);

/* Append in-place updates of every parameter that has a gradient, run at the end of each step.
 * lr is a scalar f32 value: a ts_scalar constant, an input fed each step, or ts_lr_schedule's.
 * SGD (PyTorch semantics): g += wd * p; m = momentum * m + g; p -= lr * m. Both are ts_optimizer
 * (below) with these options and the others at their defaults. */
ts_status ts_sgd(ts_graph *g, ts_value lr, float momentum, float weight_decay);
/* AdamW (PyTorch semantics, bias-corrected, decoupled weight decay). */
ts_status ts_adamw(ts_graph *g, ts_value lr, float beta1, float beta2, float eps, float weight_decay);

/* The optimizers, with every option (ts_sgd and ts_adamw are ts_optimizer with defaults).
 * Per parameter p with gradient g (after clipping), state zero-initialised and kept across runs:
 *  SGD   (torch.optim.SGD):   d = g + wd p; with momentum: buf = d on the first step, else
 *        buf = momentum buf + (1 - dampening) d; d = nesterov ? d + momentum buf : buf;
 *        p -= lr d.   State "<p>@MOMENTUM" (and "<p>@STEP" when dampening != 0).
 *  ADAMW (torch.optim.AdamW): t += 1; p *= 1 - lr wd; m = b1 m + (1 - b1) g;
 *        v = b2 v + (1 - b2) g^2; p -= lr / (1 - b1^t) m / (sqrt(v) / sqrt(1 - b2^t) + eps).
 *  LAMB  (You et al. 2019, bias-corrected Adam moments as NVIDIA's and pytorch-optimizer's):
 *        t += 1, m and v as AdamW; r = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps) + wd p;
 *        trust = ||p|| / ||r|| (1 when either norm is 0, norms over the whole tensor);
 *        p -= lr trust r (trust 1 for a parameter matching no_trust).   ADAMW and LAMB state:
 *        "<p>@MOMENT1", "<p>@MOMENT2", "<p>@STEP".
 * Gradient clipping (max_grad_norm > 0, torch.nn.utils.clip_grad_norm_): before any update,
 * norm = sqrt(sum over every trained parameter of sum(g^2)), and each g is scaled by
 * min(1, max_norm / (norm + 1e-6)). The norm is the value named "optimizer@GRAD_NORM" (fetch it
 * to log it).
 * Gradient accumulation (accumulation_steps N > 1): each run — one micro-batch — adds the
 * parameters' gradients into f32 accumulators "<p>@ACCUM" (state; the first micro-batch of a
 * step overwrites them), and only every N-th run updates, with g = the accumulated sum / N:
 * the mean gradient, which matches a batch N times larger when the loss is a mean over its
 * micro-batch. Clipping then takes the norm of that mean; the optimizer's step counters and the
 * lr schedule's count optimizer steps, not runs. The rank-0 state "optimizer@MICRO_STEP" holds
 * the micro-batches summed so far in the current step (0 .. N - 1), so a checkpoint taken
 * between any two runs resumes exactly. "optimizer@GRAD_NORM" (there with clipping or loss
 * scaling) is the norm of the mean, unscaled gradient at the N-th run.
 * With loss scaling (ts_backward_scaled) the gradients are also divided by the scale.
 * Weight-decay exclusions: a parameter whose name matches one of no_decay gets wd 0. A pattern
 * holding * ? or [ is an fnmatch glob on the whole name ("*.bias"); any other is a substring
 * ("bias", "LayerNorm.weight": Hugging Face's convention). */
typedef enum ts_optim_kind { TS_OPTIM_SGD = 0, TS_OPTIM_ADAMW, TS_OPTIM_LAMB } ts_optim_kind;

typedef struct ts_optim_opts {
    ts_optim_kind kind;
    float weight_decay;           /* >= 0 */
    float momentum, dampening;    /* SGD: >= 0; dampening <= 1 */
    int nesterov;                 /* SGD: needs momentum > 0 and dampening 0 (as PyTorch) */
    float beta1, beta2, eps;      /* ADAMW / LAMB: betas in [0, 1), eps >= 0 */
    const char *const *no_decay;  /* weight-decay exclusions (may be NULL) */
    int nno_decay;
    float max_grad_norm;          /* > 0: clip gradients by global norm; 0: no clipping */
    int accumulation_steps;       /* micro-batches per optimizer step, <= 2^24; 0 or 1: none */
    const char *const *no_trust;  /* LAMB: parameters (patterns as no_decay) that take Adam's
                                     step unscaled, trust ratio 1: TensorFlow's LAMB
                                     exclude_from_layer_adaptation, which BERT's LAMB recipe
                                     sets like its weight-decay exclusions (may be NULL) */
    int nno_trust;
    /* Replicas (data parallelism, "Replicas" below): with comm of R > 1 ranks, each rank runs
     * this graph on its own micro-batches and the gradients are summed over the ranks before
     * any update. The accumulators "<p>@ACCUM" (made for every trained parameter, also without
     * accumulation) are laid out in contiguous buckets of about bucket_bytes, in the order the
     * backward pass completes them; each bucket's all-reduce (op comm_start) is posted as soon as
     * its last gradient is accumulated at the step's last micro-batch and runs on a progress
     * thread while the backward pass goes on; the updates wait for it (op comm_wait). The mean
     * then divides by N x R, so R ranks of N micro-batches each compute the step of one process
     * with N x R, and clipping, loss-scale skips and LAMB's trust ratios all see the global
     * gradient: every rank takes the same decision. With pipeline stages each stage's buckets
     * are reduced on a channel of their own, among the same stage of every rank.
     * shard_state (ZeRO stage 1): each trained parameter is given to one rank (balanced by size,
     * within each stage), only that rank keeps its optimizer state ("<p>@MOMENT1", ...) and
     * updates it, and then broadcasts it to the others; the optimizer state per rank is about
     * 1/R of the total. The results are those without sharding. */
    ts_comm *comm;                /* NULL or one rank: no replicas */
    size_t bucket_bytes;          /* 0: 25 MiB (PyTorch DistributedDataParallel's default) */
    int shard_state;              /* ZeRO-1: shard the optimizer state over the ranks */
} ts_optim_opts;

/* PyTorch's defaults for a kind: SGD momentum 0; AdamW betas 0.9 / 0.999, eps 1e-8, wd 0.01;
 * LAMB betas 0.9 / 0.999, eps 1e-6, wd 0.01; no exclusions, no clipping. An unknown kind gives
 * an SGD struct with kind left as given (ts_optimizer then refuses it). */
ts_optim_opts ts_optim_defaults(ts_optim_kind kind);

/* Append the updates of every parameter that has a gradient (once per graph, after
 * ts_backward), and the clipping ops when asked. lr is a rank-0 f32 value (a constant, a fed
 * input or ts_lr_schedule's value); a constant lr must be finite and >= 0, a fed or scheduled
 * one that is not fails the run with TS_ERR_RUNTIME before any parameter changes.
 * TS_ERR_ARG on an unknown kind, an option out of range, no backward pass, no parameter with a
 * gradient, or updates already present. */
ts_status ts_optimizer(ts_graph *g, ts_value lr, const ts_optim_opts *o);

/* SGD with every option: ts_optimizer with kind SGD and these fields (wd exclusions none). */
typedef struct ts_sgd_opts {
    float momentum, dampening, weight_decay;
    int nesterov;
} ts_sgd_opts;
ts_status ts_sgd_ex(ts_graph *g, ts_value lr, const ts_sgd_opts *o);

/* Learning-rate schedules computed inside the graph, so the whole step stays one program, as
 * Hugging Face transformers' get_constant_schedule_with_warmup / get_linear_schedule_with_warmup
 * / get_cosine_schedule_with_warmup / get_polynomial_decay_schedule_with_warmup (with
 * torch's LambdaLR: the lr of step t, 0-based, is lr * lambda(t), as when scheduler.step() follows
 * optimizer.step()). W = warmup_steps, T = total_steps:
 *   t < W:        lambda = t / max(1, W)                          (every kind)
 *   CONSTANT:     1
 *   LINEAR:       max(0, (T - t) / max(1, T - W))
 *   COSINE:       max(0, (1 + cos(2 pi cycles (t - W) / max(1, T - W))) / 2)
 *   POLYNOMIAL:   t > T: lr_end / lr;  else ((lr - lr_end) (1 - (t - W) / (T - W))^power + lr_end) / lr
 * t is a rank-0 f32 state value named "lr_schedule@STEP" (zero-initialised; save and restore it
 * with the program to resume), advanced by one at the end of each optimizer step, after the
 * updates: every run, except that with gradient accumulation or loss scaling a run whose update
 * is skipped (a micro-batch before the last of its step, a step whose scaled gradients
 * overflowed) leaves it, as Hugging Face's Trainer does. One schedule per graph. */
typedef enum ts_lr_kind { TS_LR_CONSTANT = 0, TS_LR_LINEAR, TS_LR_COSINE, TS_LR_POLYNOMIAL } ts_lr_kind;

typedef struct ts_lr_schedule_opts {
    ts_lr_kind kind;
    float lr;              /* the peak (base) learning rate, finite and >= 0 */
    int64_t warmup_steps;  /* >= 0 */
    int64_t total_steps;   /* >= 0; POLYNOMIAL needs total_steps > warmup_steps */
    float lr_end;          /* POLYNOMIAL: final lr, < lr (Hugging Face's default is 1e-7) */
    float power;           /* POLYNOMIAL: exponent, > 0; 0 means 1 (linear) */
    float num_cycles;      /* COSINE: cosine waves over the decay, >= 0; 0 means 0.5 (half) */
} ts_lr_schedule_opts;

/* The scheduled lr as a rank-0 f32 value (pass it to ts_optimizer / ts_sgd / ts_adamw), or
 * TS_NONE after recording TS_ERR_ARG for a bad option or a second schedule in the graph. */
ts_value ts_lr_schedule(ts_graph *g, const ts_lr_schedule_opts *o);

/* ---------------------------------------------------------------- programs */

typedef struct ts_program ts_program;

typedef struct ts_compile_opts {
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
ts_program *ts_compile(const ts_graph *g, const ts_compile_opts *opts);
void ts_program_free(ts_program *p);

/* Copy a tensor into the named input; its dtype and shape must match the input's exactly
 * ([K, shape...] with device_iterations K > 1: K batches at once, one per iteration). */
ts_status ts_program_feed(ts_program *p, const char *name, const ts_tensor *t);
/* Run one step: every node of the compiled schedule, in order.
 * Device iterations (Graphcore's "batches per step"): with device_iterations K > 1, one call
 * runs the step K times back to back, iteration k reading slice k of every input, as K calls
 * with one batch each would (the step counter advances by K, so dropout masks, optimizer steps
 * and schedules are the same). It saves a host round trip per step on an accelerator; fetches
 * are copied out after every iteration. If iteration k fails, iterations before it have run. */
ts_status ts_program_run(ts_program *p);
/* A new tensor holding the named value (a fetch named at compile time, or a parameter). With
 * device_iterations K > 1 a fetch named at compile time comes back as [K, shape...], one slice
 * per iteration of the last run (PopART's "anchor ALL"); parameters and state read as now. */
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
    size_t grad_buckets;    /* replicas: the gradient accumulators summed over the ranks, in
                               contiguous buckets (not in optimizer_state) */
    size_t weight_copies;   /* copies of weights kept across runs where weights change only between
                               runs (a program without optimizer updates): casts of weights to a
                               compute dtype (autocast's bf16 weights) and the CPU backend's
                               prepacked matmul weights (backend/cpu/matmul_dnnl.c) */
} ts_memory;
ts_status ts_program_memory(const ts_program *p, ts_memory *m);

/* Profiling (a program compiled with ts_compile_opts.profile = 1). Print to out what the
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
 * TS_ERR_UNSUPPORTED for a program compiled without profile; TS_ERR_ARG for a NULL argument. */
ts_status ts_program_profile_report(const ts_program *p, FILE *out);
/* Zero the counters (e.g. after warm-up runs). No-op without profile. */
void ts_program_profile_reset(ts_program *p);

/* The most threads a program may use: 4 x the online CPUs (so oversubscribed runs stay possible,
 * and a typo like 100000 is refused rather than crashing the thread library). */
int ts_max_threads(void);

/* A pipelined program's stages (ts_compile_opts.stage_devices); a program on one device has one. */
typedef struct ts_stage_info {
    const char *device;   /* "cpu:1" */
    int threads;          /* of its device */
    ts_memory mem;        /* its program: activations count every micro-batch it keeps in flight */
    int in_flight;        /* micro-batches whose activations it keeps at most: min(M, S - stage) */
    double busy_s;        /* time its device spent running it, over the runs so far */
} ts_stage_info;
int ts_program_num_stages(const ts_program *p);
ts_status ts_program_stage_info(const ts_program *p, int stage, ts_stage_info *info);
/* Of a pipelined program's runs so far: the wall time, and the bubble: the share of the devices'
 * time spent idle, 1 - (time busy, summed over stages) / (devices x wall time). 0 and 0 for a
 * program on one device. ts_program_pipeline_reset_stats starts them over (after a warm-up). */
ts_status ts_program_pipeline_stats(const ts_program *p, double *wall_s, double *bubble);
void ts_program_pipeline_reset_stats(ts_program *p);

/* Names of the backends this build has, comma-separated ("cpu"); devices are "<name>" and
 * "<name>:<index>". */
const char *ts_devices(void);

/* ---------------------------------------------------------------- images (src/vision/)
 * PNG (libpng) and JPEG (libjpeg) files decoded to 8-bit RGB. The format is told by the file's
 * first bytes, never by its name. */

typedef struct ts_image {
    int width, height;
    uint8_t *rgb; /* height rows of width pixels, 3 bytes each (R, G, B); the top row first */
} ts_image;

/* Images are refused above this many pixels (a 10000 x 10000 image; 300 MB as RGB). */
#define TS_IMAGE_MAX_PIXELS 100000000

/* A new width x height image with every byte `fill` (255: white). NULL on a bad size. */
ts_image *ts_image_new(int width, int height, uint8_t fill);
void ts_image_free(ts_image *im);
/* Decode a PNG or JPEG file (or bytes; `what` names them in messages) to 8-bit RGB: gray is
 * repeated in R, G and B, a palette looked up, 16-bit samples scaled to 8 bits, transparency
 * composited on white, CMYK JPEGs converted. NULL, with ts_last_error() naming the file, when it
 * cannot be read, is neither a PNG nor a JPEG ("not a PNG or JPEG image"), is cut short or is
 * corrupt (libpng's or libjpeg's message), or is larger than TS_IMAGE_MAX_PIXELS. */
ts_image *ts_image_read(const char *path);
ts_image *ts_image_decode(const void *data, size_t n, const char *what);
/* Write an image as an 8-bit RGB PNG, atomically (a temporary file renamed over path). */
ts_status ts_image_write_png(const ts_image *im, const char *path);
/* A new image of width x height resampled from im, pixel centres aligned, no anti-aliasing when
 * shrinking: TS_INTERP_LINEAR bilinear (OpenCV's INTER_LINEAR), TS_INTERP_CUBIC bicubic (Keys,
 * a = -0.5). NULL on a bad size. */
typedef enum ts_interp { TS_INTERP_LINEAR = 0, TS_INTERP_CUBIC } ts_interp;
ts_image *ts_image_resize(const ts_image *im, int width, int height, ts_interp interp);
/* A new image: im turned by quarter_turns x 90 degrees counter-clockwise (any integer; 2: half a
 * turn). */
ts_image *ts_image_rotate(const ts_image *im, int quarter_turns);

/* ---------------------------------------------------------------- ONNX (src/onnx/)
 * ONNX models (opsets 9-17 of the default domain) imported into tessera graphs, run, trained and
 * exported. The parser is protobuf-c's code generated at build time from Debian's onnx.proto. */

typedef struct ts_onnx ts_onnx;

/* Parse an ONNX file (or bytes; `what` names them in messages). NULL, with ts_last_error()
 * naming the file and the problem, for a file that is not a valid ONNX model, an opset outside
 * 9-17 or another domain, or nodes the importer cannot take: every such node is listed at once,
 * by node name and op type ("3 nodes unsupported: node 'x' (Foo): op not supported; ..."). */
ts_onnx *ts_onnx_load(const char *path);
ts_onnx *ts_onnx_load_bytes(const void *data, size_t n, const char *what);
void ts_onnx_free(ts_onnx *m);
/* The ai.onnx opset the file imports. */
int ts_onnx_opset(const ts_onnx *m);
/* The graph's inputs that are not initializers, and its outputs, in file order. */
int ts_onnx_num_inputs(const ts_onnx *m);
const char *ts_onnx_input_name(const ts_onnx *m, int i);
/* The declared dtype and shape of input i (a dynamic or unknown dimension is -1); returns the
 * rank, -1 for a bad index or an input whose rank the file does not declare. */
int ts_onnx_input_shape(const ts_onnx *m, int i, ts_dtype *dtype, int64_t shape[TS_MAX_DIMS]);
int ts_onnx_num_outputs(const ts_onnx *m);
const char *ts_onnx_output_name(const ts_onnx *m, int i);

typedef struct ts_onnx_import_opts {
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
ts_status ts_onnx_import(const ts_onnx *m, ts_graph *g, const int *ndims, const int64_t *const *shapes,
                         const ts_onnx_import_opts *opts, ts_value *outs);
/* Copy the initializers that ts_onnx_import made parameters into compiled program p. */
ts_status ts_onnx_load_params(const ts_onnx *m, ts_program *p);
/* Write m again with each initializer that is a parameter of p replaced by p's value (a model
 * fine-tuned after ts_onnx_import with trainable = 1), atomically. */
ts_status ts_onnx_save_with_params(const ts_onnx *m, const ts_program *p, const char *path);

/* Inference on an ONNX model with one compiled program per distinct set of input shapes (the
 * most recent 8 kept). The session borrows m, which must outlive it. opts may be NULL. */
typedef struct ts_onnx_session ts_onnx_session;
ts_onnx_session *ts_onnx_session_new(const ts_onnx *m, const ts_compile_opts *opts);
/* inputs[i] for ts_onnx_input i (dtype as declared); outputs[j] receive new tensors (f32 outputs
 * as f32, integer ones as their dtype) for the caller to free. */
ts_status ts_onnx_session_run(ts_onnx_session *s, const ts_tensor *const *inputs, ts_tensor **outputs);
void ts_onnx_session_free(ts_onnx_session *s);

/* The importer's op table, for documentation: entry i's ONNX op type and the opsets it covers. */
int ts_onnx_num_ops(void);
const char *ts_onnx_op_info(int i, int *since_opset, int *until_opset);

/* Export the forward graph that computes `outputs` (named values of g) as an ONNX file (opset
 * 17): inputs as graph inputs, parameters with their values in compiled program p as
 * initializers, each output under its name. Ops without an ONNX form are an error naming them. */
ts_status ts_onnx_export(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                         const char *path);

/* ---------------------------------------------------------------- OCR (src/ocr/)
 * Text in images read as PaddleOCR's PP-OCR system reads it, on its ONNX models run by tessera:
 * PP-OCRv4's DB detector finds the lines of text, each is cut out and straightened, a direction
 * classifier turns upside-down ones, and PP-OCRv4's recogniser reads them (CTC). The Chinese
 * ("ch") models read Chinese and English alike. */

typedef struct ts_ocr_opts {
    const char *models_dir; /* where the four files below are, under these names (NULL: ".") */
    const char *det_model;  /* NULL: models_dir/ch_PP-OCRv4_det_infer.onnx */
    const char *rec_model;  /* NULL: models_dir/ch_PP-OCRv4_rec_infer.onnx */
    const char *cls_model;  /* NULL: models_dir/ch_ppocr_mobile_v2.0_cls_infer.onnx */
    const char *keys;       /* the recogniser's characters; NULL: models_dir/ppocr_keys_v1.txt */
    const char *lang;       /* "ch" (NULL): every character the recogniser knows (6,623 + space);
                               "en": only printable ASCII and the space, so that look-alikes
                               such as full-width punctuation cannot be read in English text */
    int no_cls;             /* 1: no direction classifier (every line is taken as upright) */
    int num_threads;        /* 0: OpenMP's default */
    int limit_side_len;     /* the detector sees the image scaled to at most this (0: 960) */
    float det_thresh;       /* 0: 0.3, a pixel is text when its probability is above this */
    float box_thresh;       /* 0: 0.6, a box is kept when its mean probability is at least this */
    float unclip_ratio;     /* 0: 1.5, how much a detected box is grown */
    float drop_score;       /* 0: 0.5, lines read with a lower confidence are left out */
} ts_ocr_opts;

typedef struct ts_ocr_line {
    float box[4][2];  /* the line's corners in image pixels (x, y): top-left, top-right,
                         bottom-right, bottom-left as the text reads (whole numbers) */
    char *text;       /* UTF-8 */
    float confidence; /* the mean probability of the characters read, in (0, 1] */
} ts_ocr_line;

typedef struct ts_ocr ts_ocr;
/* Load the models and the character list. NULL, with ts_last_error() naming the file, when one
 * is missing or not what it should be. */
ts_ocr *ts_ocr_new(const ts_ocr_opts *opts);
void ts_ocr_free(ts_ocr *ocr);
/* The lines of text in im, in reading order (top to bottom, then left to right within a line):
 * *lines (free with ts_ocr_lines_free) and *nlines (0 when there is no text). */
ts_status ts_ocr_run(ts_ocr *ocr, const ts_image *im, ts_ocr_line **lines, int *nlines);
void ts_ocr_lines_free(ts_ocr_line *lines, int n);

/* ---------------------------------------------------------------- BERT (src/models/bert.c) */
/* BERT as Hugging Face transformers builds it (BertModel and four of its heads), made of the ops
 * above. Parameters carry transformers' state-dict names, so a Hugging Face model.safetensors
 * loads with ts_program_load and a saved program loads back into transformers:
 *   bert.embeddings.{word,position,token_type}_embeddings.weight, bert.embeddings.LayerNorm.*,
 *   bert.encoder.layer.N.attention.self.{query,key,value}.*, ...attention.output.dense.*,
 *   ...attention.output.LayerNorm.*, ...intermediate.dense.*, ...output.dense.*,
 *   ...output.LayerNorm.*, bert.pooler.dense.*, and the heads' own (see ts_bert_head).
 * Linear weights keep PyTorch's [out, in] layout (y = x W^T + b).
 * The MLM decoder is tied to the word embeddings, as in transformers: logits = h E^T + bias with
 * E = bert.embeddings.word_embeddings.weight and bias = cls.predictions.bias. There is no
 * parameter cls.predictions.decoder.weight (nor .decoder.bias): in a checkpoint those copies are
 * ignored by ts_program_load, and ts_program_save omits them (transformers re-ties them on load).
 * Every name starts with "bert." whatever the head, as in the heads' state dicts; a bare
 * BertModel checkpoint (names without the prefix) must be renamed to load.
 * One BERT per graph: inputs and outputs have fixed names (below).
 * Not supported: position_embedding_type other than "absolute", decoders / cross-attention,
 * head masks, past key values; Hugging Face's zeroing of the [PAD] embedding row at init. */

/* The activation of the FFN and of the MLM transform (config "hidden_act"). */
typedef enum ts_bert_act {
    TS_BERT_GELU = 0,  /* "gelu", "gelu_python": x Phi(x), the erf form */
    TS_BERT_GELU_TANH, /* "gelu_new", "gelu_pytorch_tanh", "gelu_fast": the tanh approximation */
    TS_BERT_RELU,      /* "relu" */
} ts_bert_act;

/* Which model ts_bert_build makes (config "architectures"). Inputs and outputs, by name (B batch,
 * T sequence, C hidden, V vocabulary): every head has the inputs input_ids, token_type_ids
 * (i32 [B, T]) and attention_mask ([B, T], 1 keep / 0 padding, i32 or f32: see
 * attention_mask_dtype) and the output last_hidden_state (f32 [B, T, C]); training heads add
 * label inputs and a scalar "loss" (a mean over the batch, as transformers' losses). An input a
 * compiled program does not read (labels in a program compiled for inference) may go unfed. */
typedef enum ts_bert_head {
    /* BertModel: pooler_output [B, C] = tanh(last_hidden_state[:, 0] Wp^T + bp). */
    TS_BERT_MODEL = 0,
    /* BertForPreTraining: prediction_logits [B, T, V] (MLM), seq_relationship_logits [B, 2]
     * (NSP, from the pooler); labels i32 [B, T] (-100: not predicted), next_sentence_label i32
     * [B] (0: B follows A); loss = mlm_loss + nsp_loss, both cross-entropies, also fetchable.
     * Parameters cls.predictions.transform.dense.*, cls.predictions.transform.LayerNorm.*,
     * cls.predictions.bias, cls.seq_relationship.*.
     * With max_predictions_per_seq P > 0 (Google's original run_pretraining.py, and Graphcore's
     * BERT), the MLM head runs on P gathered positions per sequence only: input
     * masked_lm_positions i32 [B, P] (positions in [0, T); padding entries any valid position
     * with label -100), labels i32 [B, P], prediction_logits [B, P, V]. The loss is the same
     * (a mean over the labelled positions) when the positions list every labelled one; the
     * decoder's V-wide product then costs P / T of the full head's. */
    TS_BERT_PRETRAINING,
    /* BertForMaskedLM: logits [B, T, V] (no pooler); labels i32 [B, T] (-100 ignored);
     * loss = their cross-entropy. Parameters cls.predictions.* as above. */
    TS_BERT_MASKED_LM,
    /* BertForSequenceClassification: logits [B, num_labels] = dropout(pooler_output) Wc^T + bc
     * (classifier.*); labels [B]: i32 class ids and a cross-entropy loss, or for num_labels == 1
     * f32 targets and a mean squared error (transformers' "regression"). */
    TS_BERT_SEQ_CLASSIFICATION,
    /* BertForQuestionAnswering: start_logits, end_logits [B, T] from qa_outputs.* [2, C] (no
     * pooler); start_positions, end_positions i32 [B]; loss = (CE(start) + CE(end)) / 2. A
     * position equal to T is ignored (transformers clamps positions to [0, T] and ignores T);
     * one outside [0, T] fails the run with TS_ERR_RUNTIME instead of being clamped. */
    TS_BERT_QUESTION_ANSWERING,
} ts_bert_head;

/* A BERT configuration: the fields of a Hugging Face config.json, plus build choices. */
/* Bounds on a config's sizes, far above any real BERT (bert-large: V 30522, C 1024, 24 layers,
 * FFN 4096, 512 positions) and far below sizes that would overflow or take minutes to build
 * before the memory check of ts_compile could refuse them. A config beyond one is TS_ERR_ARG,
 * naming the field, when it is read (ts_bert_config_load) or built (ts_bert_build). */
#define TS_BERT_MAX_VOCAB (1 << 24)        /* vocab_size */
#define TS_BERT_MAX_HIDDEN (1 << 16)       /* hidden_size, num_attention_heads */
#define TS_BERT_MAX_LAYERS 1024            /* num_hidden_layers */
#define TS_BERT_MAX_INTERMEDIATE (1 << 20) /* intermediate_size */
#define TS_BERT_MAX_POSITIONS (1 << 20)    /* max_position_embeddings */
#define TS_BERT_MAX_TYPES (1 << 16)        /* type_vocab_size */
#define TS_BERT_MAX_LABELS (1 << 20)       /* num_labels */

typedef struct ts_bert_config {
    int vocab_size;                     /* V: rows of the word embeddings */
    int hidden_size;                    /* C */
    int num_hidden_layers;              /* encoder layers */
    int num_attention_heads;            /* must divide hidden_size */
    int intermediate_size;              /* FFN width */
    int max_position_embeddings;        /* the longest sequence */
    int type_vocab_size;                /* segment ids: 0 .. type_vocab_size - 1 */
    ts_bert_act hidden_act;
    float hidden_dropout_prob;          /* embeddings, attention output, FFN output, in [0, 1) */
    float attention_probs_dropout_prob; /* attention probabilities, in [0, 1) */
    float classifier_dropout;           /* sequence classification; < 0: hidden_dropout_prob */
    float layer_norm_eps;               /* > 0; 1e-12 in BERT */
    float initializer_range;            /* std of the weights' normal initializer */
    int num_labels;                     /* classes of the sequence classifier */
    ts_bert_head head;                  /* from architectures[0]; TS_BERT_MODEL if absent/unknown */
    char architecture[64];              /* architectures[0] as written ("" when absent) */
    /* Not in config.json: */
    ts_dtype attention_mask_dtype;      /* of the attention_mask input: TS_I32 (default, what
                                           ts_encode writes) or TS_F32 */
    ts_dtype compute_dtype;             /* of the matmuls: TS_F32 (default), TS_BF16 or TS_F16,
                                           mixed precision as PyTorch's autocast (ts_bert_build) */
    int recompute;                      /* non-zero: each encoder layer is a recompute segment
                                           (ts_graph_recompute_begin): training keeps one
                                           [B, T, C] checkpoint per layer instead of every
                                           layer's activations; same gradients (default 0) */
    const int *layer_stages;            /* pipeline placement (ts_graph_stage_begin): the stage
                                           of each encoder layer (num_hidden_layers of them;
                                           NULL: no placement); embeddings and the attention
                                           mask go on embedding_stage, the pooler and head on
                                           head_stage; stages must not decrease along the
                                           forward pass */
    int embedding_stage, head_stage;
    int untie_word_embeddings;          /* non-zero: the MLM decoder is a weight of its own,
                                           cls.predictions.decoder.weight [V, C], not the word
                                           embeddings (config.json "tie_word_embeddings": false;
                                           default 0: tied, as BERT) */
    int max_predictions_per_seq;        /* pre-training: P > 0 runs the MLM head on P gathered
                                           positions (see TS_BERT_PRETRAINING), for batches of
                                           at most 2^24 tokens; 0: on all T */
} ts_bert_config;

/* Hugging Face's BertConfig() defaults (bert-base-uncased): V 30522, C 768, 12 layers, 12 heads,
 * FFN 3072, 512 positions, 2 segment types, GELU, dropouts 0.1, classifier_dropout -1,
 * layer_norm_eps 1e-12, initializer_range 0.02, num_labels 2, head TS_BERT_MODEL, i32 mask,
 * f32 compute, no recomputation. */
void ts_bert_config_default(ts_bert_config *cfg);

/* Read a Hugging Face config.json into *cfg. Required: vocab_size, hidden_size,
 * num_hidden_layers, num_attention_heads, intermediate_size, max_position_embeddings,
 * type_vocab_size (positive integers). Optional, with ts_bert_config_default's values when
 * absent: hidden_act, hidden_dropout_prob, attention_probs_dropout_prob, classifier_dropout (null
 * allowed), layer_norm_eps, initializer_range, architectures, num_labels or id2label (whose
 * entry count gives num_labels; both present must agree). Other keys are ignored, except that
 * position_embedding_type other than "absolute", is_decoder true and add_cross_attention true are
 * TS_ERR_UNSUPPORTED, as is an unknown hidden_act. Errors name the file and the field: an
 * unreadable file or invalid JSON (TS_ERR_IO, with the byte offset), a missing field, a wrong
 * JSON type or a non-integer where an integer is due, a non-positive size or one above its
 * TS_BERT_MAX_* bound, a probability outside
 * [0, 1), hidden_size not divisible by num_attention_heads (TS_ERR_ARG). On failure *cfg is left
 * unchanged. */
ts_status ts_bert_config_load(const char *path, ts_bert_config *cfg);

/* TS_OK when cfg is one ts_bert_build accepts (sizes positive and within the bounds above,
 * hidden_size divisible by num_attention_heads, probabilities in [0, 1), ...), else TS_ERR_ARG
 * with a message naming the field ("field \"hidden_size\" is 1000000000, above tessera's bound of
 * 65536 for it"). */
ts_status ts_bert_config_check(const ts_bert_config *cfg);

/* The values ts_bert_build made; TS_NONE for what the head does not have. */
typedef struct ts_bert_outputs {
    ts_value input_ids, token_type_ids, attention_mask;                 /* inputs */
    ts_value masked_lm_positions;           /* pre-training with max_predictions_per_seq > 0 */
    ts_value labels, next_sentence_label, start_positions, end_positions; /* label inputs */
    ts_value last_hidden_state, pooler_output;                          /* f32 [B, T, C], [B, C] */
    ts_value prediction_logits, seq_relationship_logits;                /* pre-training */
    ts_value logits;                                                    /* masked LM, classifier */
    ts_value start_logits, end_logits;                                  /* question answering */
    ts_value loss, mlm_loss, nsp_loss;                                  /* scalars */
} ts_bert_outputs;

/* Add a BERT with the given head for batches of `batch` sequences of `seq` tokens to graph g:
 * its inputs, parameters (initialised as transformers does: weights and embeddings normal(0,
 * initializer_range), here truncated at 2 std; biases 0; LayerNorm weight 1, bias 0) and outputs,
 * each named as listed under ts_bert_head. out (may be NULL) receives the values.
 *   embeddings  x = LayerNorm(word[input_ids] + position[0:T] + token_type[token_type_ids])
 *   mask        (1 - attention_mask) * -10000, as [B, 1, 1, T], added to every attention score
 *               (a padded key gets weight 0 as long as its row keeps one key; transformers now
 *               uses the dtype's minimum instead of -10000, with the same result)
 *   each layer  post-LN: h = LN(x + Attn(x)), x = LN(h + FFN(h)), FFN = W2 act(W1 h)
 * Dropout ops use the config's probabilities (none is added for 0); they are identity in a
 * program compiled with inference = 1.
 * recompute != 0 builds each encoder layer as a recompute segment (ts_graph_recompute_begin):
 * ts_backward recomputes a layer's forward before its gradients, so training keeps the layers'
 * inputs instead of all their activations (BERT-Base, batch 8 x 128, f32: 84% less activation
 * memory, README "Measured"); gradients are bitwise those without it; inference is unchanged.
 * compute_dtype TS_BF16 is mixed precision as torch.autocast(dtype=bfloat16) does it on CPU:
 * every matrix product (each Linear, the attention scores q k^T and context p v, the MLM
 * decoder h E^T) casts its two operands to bf16, multiplies in bf16 with f32 accumulation and
 * casts the product back to f32; the Linear's bias is then added in f32 (autocast rounds it
 * into the bf16 product instead). Everything else — embeddings, layer norm, softmax and mask,
 * activations, residual adds, the heads' losses — stays f32, and so do the parameters (master
 * weights, cast inside the graph on every run) and their gradients, which flow back through the
 * casts. Outputs are f32 either way; they differ from f32 compute by bf16 rounding (8 bits of
 * mantissa): cosine similarity above 0.999 on BERT-Base-sized random models.
 * compute_dtype TS_F16 is the same with f16 operands and products (11 bits of mantissa, but a
 * range of only +-65504: train it with ts_backward_scaled, whose loss scaling keeps small
 * gradients from flushing to zero and skips the steps where a product overflowed to inf). On
 * CPUs without AVX512_FP16 its matmuls run as f32 ones on widened operands (see ts_matmul), and
 * so do bf16's on CPUs without AVX-512: the numbers of bf16 / f16, the speed of f32 less the
 * casts.
 * Returns TS_OK, or the graph's first error: a bad argument or config (named field), seq above
 * max_position_embeddings (TS_ERR_SHAPE), a name already used in g. Call ts_backward(g, out.loss)
 * to train. */
ts_status ts_bert_build(ts_graph *g, const ts_bert_config *cfg, ts_bert_head head, int batch, int seq,
                        ts_bert_outputs *out);

/* ---------------------------------------------------------------- model directories (src/train/model_dir.c) */
/* A model directory as Hugging Face lays it out: config.json, model.safetensors, vocab.txt. */
typedef struct ts_tokenizer ts_tokenizer; /* the WordPiece tokenizer (see "text" below) */

/* What config.json holds besides the BERT config (keys "tessera_*" are tessera's own). */
typedef struct ts_model_meta {
    int max_len;              /* sequence length the model was trained with ("tessera_max_len") */
    int lowercase;            /* "do_lower_case" */
    char **labels;            /* id2label names, nlabels of them (NULL without a classifier) */
    int nlabels;
    char *text_b_column;      /* a text-pair classifier: the column of the second text
                                 ("tessera_text_b_column"); NULL for single texts */
    int doc_stride;           /* question answering: the windows' stride ("tessera_doc_stride") */
    int max_query_len;        /* ... and question pieces kept ("tessera_max_query_len"); 0: unset */
    int truncation;           /* how a long text is cut ("tessera_truncation"): TS_TRUNC_* */
} ts_model_meta;
void ts_model_meta_free(ts_model_meta *m);

/* Which pieces of a text too long for max_len a classifier sees: its start (the default), its
 * end, or both: the first quarter of the room from the start, the rest from the end. */
enum { TS_TRUNC_HEAD, TS_TRUNC_TAIL, TS_TRUNC_HEAD_TAIL };
extern const char *const ts_truncation_names[3]; /* "head", "tail", "head+tail" */
/* The TS_TRUNC_* of a name, or -1. */
int ts_truncation_parse(const char *value);
/* Set tok's cut (ts_tokenizer_set_truncation) for TS_TRUNC_* mode at sequence length max_len. */
void ts_truncation_apply(ts_tokenizer *tok, int mode, int max_len);

/* "BertModel", "BertForPreTraining", ... (config.json's "architectures"). */
const char *ts_bert_head_name(ts_bert_head head);
/* Write cfg and meta (may be NULL) as a Hugging Face config.json (architectures from cfg->head),
 * atomically (temp file, fsync, rename). */
ts_status ts_bert_config_save(const char *path, const ts_bert_config *cfg, const ts_model_meta *meta);
/* Write DIR/model.safetensors (ts_program_save, f32), DIR/vocab.txt (a copy of vocab_path) and
 * DIR/config.json, each atomically, config last; DIR is created. */
ts_status ts_model_save_dir(const char *dir, const ts_program *p, const ts_bert_config *cfg, const char *vocab_path,
                            const ts_model_meta *meta);
/* Read DIR/config.json into cfg and meta (free with ts_model_meta_free) and load DIR/vocab.txt
 * with the model's case and truncation. NULL on failure, the message naming the file. */
ts_tokenizer *ts_model_load_dir(const char *dir, ts_bert_config *cfg, ts_model_meta *meta);
/* mkdir -p DIR. */
ts_status ts_make_dirs(const char *dir);
/* Make DIR and lock it for this process (an flock on DIR/.tessera.lock holding the pid, kept until
 * the process exits), so that two runs never write one output directory. TS_ERR_RUNTIME with
 * *other_pid (may be NULL) set when another process holds it. */
ts_status ts_out_dir_lock(const char *dir, long *other_pid);

/* ---------------------------------------------------------------- checkpoints (safetensors) */
/* The safetensors format (Hugging Face): an 8-byte little-endian header length, a JSON header
 * {"<name>": {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}, then the raw
 * row-major little-endian data. Every error message names the file and, where there is one, the
 * tensor; a malformed or truncated file is TS_ERR_IO and never crashes. */

/* An open safetensors file: memory-mapped read-only until ts_safetensors_close. */
typedef struct ts_safetensors ts_safetensors;

/* Open, map and validate a file: header length within the file, UTF-8 JSON header, every entry's
 * dtype known, shape non-negative, data_offsets consistent with shape x dtype size and the tensors
 * tiling the data exactly (as the format's reference reader requires). Tensors of dtypes tessera
 * has no type for (F64, I8, U16, F8_*, ...) are accepted here and refused by ts_safetensors_get.
 * NULL on failure (see ts_last_error()). The file must not be truncated while it is open. */
ts_safetensors *ts_safetensors_open(const char *path);
/* Unmap and free (NULL is a no-op). */
void ts_safetensors_close(ts_safetensors *st);
/* Number of tensors, and the i-th name (sorted by name; NULL when i is out of range). */
int ts_safetensors_count(const ts_safetensors *st);
const char *ts_safetensors_name(const ts_safetensors *st, int i);
/* A "__metadata__" value by key, or NULL. Valid until close. */
const char *ts_safetensors_metadata(const ts_safetensors *st, const char *key);
/* dtype, rank and shape of a tensor without reading its data (any output may be NULL).
 * TS_ERR_NOT_FOUND for an unknown name; TS_ERR_UNSUPPORTED when the dtype has no tessera type or
 * the rank exceeds TS_MAX_DIMS. BOOL reads as TS_U8. */
ts_status ts_safetensors_info(const ts_safetensors *st, const char *name, ts_dtype *dtype, int *ndim,
                              int64_t shape[TS_MAX_DIMS]);
/* A new tensor holding a copy of the named tensor, in its stored dtype (nothing is converted).
 * Errors as ts_safetensors_info. */
ts_status ts_safetensors_get(const ts_safetensors *st, const char *name, ts_tensor **out);
/* Write n named tensors to path, atomically: a temp file in the same directory is written,
 * flushed and fsynced, then renamed over path and the directory fsynced; on any failure the
 * previous file at path is untouched and the temp file removed. The header is sorted by name and
 * padded with spaces to a multiple of 8 bytes; the data is ordered by element size, largest
 * first, then by name, so every tensor is aligned to its element size. metadata_json is NULL or a
 * JSON object of string values ("{\"format\": \"pt\"}"), stored as "__metadata__". Names must
 * be unique and not "__metadata__". */
ts_status ts_safetensors_save(const char *path, int n, const char *const *names,
                              const ts_tensor *const *tensors, const char *metadata_json);

/* Load every parameter of p by name from a safetensors file. A stored dtype among F32 / BF16 /
 * F16 converts to the parameter's dtype (so a bf16 checkpoint loads into f32 parameters and the
 * other way round); any other dtype mismatch is TS_ERR_DTYPE, a shape mismatch TS_ERR_SHAPE
 * naming the tensor and both shapes. Tensors in the file that p has no parameter for are ignored.
 * flags, or-ed:
 *   TS_LOAD_STRICT            a parameter missing from the file is TS_ERR_NOT_FOUND, naming it
 *                             (the first few) and saying how many are missing; without it,
 *                             missing parameters keep their values;
 *   TS_LOAD_ALLOW_NONFINITE   load tensors holding NaN or inf. Without it such a tensor is
 *                             TS_ERR_IO, naming the file, the tensor, how many values and the
 *                             first one's index (a model with NaN weights computes NaN).
 * (flags 0 and 1 are the non-strict and strict loads of earlier versions.)
 * Either way *nmissing (when not NULL) receives the number of p's parameters the file lacks.
 * Everything is checked before anything is copied: on an error p's parameters are unchanged. */
#define TS_LOAD_STRICT 1
#define TS_LOAD_ALLOW_NONFINITE 2
ts_status ts_program_load(ts_program *p, const char *path, int flags, int *nmissing);
/* Write every parameter of p to path (as ts_safetensors_save, atomically), converted to dtype
 * (TS_F32, TS_BF16 or TS_F16), with "__metadata__" {"format": "pt"} as Hugging Face expects. */
ts_status ts_program_save(const ts_program *p, const char *path, ts_dtype dtype);

/* The whole training state, for an exact resume (src/train/run_state.c). A checkpoint is a
 * directory DIR holding
 *   model.safetensors  every parameter in f32 (as ts_program_save; loadable by ts_program_load),
 *   state.safetensors  every persistent non-parameter value by name (optimizer state such as
 *                      "<param>@MOMENT1", "<param>@STEP"), "__metadata__" {"format":
 *                      "tessera-train-state-1", "step": the program step, which seeds dropout},
 *   trainer.json       the caller's JSON (data-loader state, loss scale, host RNG, ...).
 * Saving is atomic: DIR.tmp-XXXXXX is written, every file and the directory fsynced; then an
 * existing DIR is renamed to DIR.old, the new one renamed to DIR, the parent fsynced and DIR.old
 * deleted. A crash at any point leaves a complete DIR, or (between the two renames) no DIR and a
 * complete DIR.old. Recovery rule: every load / check / listing below takes DIR.old when DIR is
 * missing; stale DIR.tmp-* directories are never read and are deleted by the next save of DIR and
 * by ts_checkpoint_rotate. One writer per DIR at a time.
 * extra_json is NULL ("{}") or valid JSON (TS_ERR_ARG otherwise). */
ts_status ts_program_save_state(const ts_program *p, const char *dir, const char *extra_json);
/* Restore parameters (converted to the parameters' dtype), every state value and the program
 * step from a checkpoint written by ts_program_save_state. Every file is validated first (a
 * missing, truncated or corrupt file, a missing tensor, a shape or dtype mismatch is an error
 * naming the file and tensor) and on any error the program is unchanged. Tensors in the files
 * that the program lacks are ignored. *extra_json_out (when not NULL) receives a malloc'd copy of
 * trainer.json; free() it. */
ts_status ts_program_load_state(ts_program *p, const char *dir, char **extra_json_out);
/* The same with a second JSON text that is this rank's own (a data reader's position): saved
 * beside the state (rank_json may be NULL) and handed back in *rank_json_out (malloc'd; NULL when
 * the checkpoint has none). A program whose optimizer sums over replicas (ts_optim_opts.comm) is
 * saved by every rank of the communicator together — call it on each, as a collective: each rank
 * writes DIR/part-<rank>.safetensors (its rank_json, and its share of the optimizer state with
 * shard_state), rank 0 the parameters, the rest of the state and extra_json, and the directory
 * appears only once every part is written (so ts_checkpoint_check refuses one missing a part). A
 * load by such a program reads its rank's part and needs a checkpoint of as many ranks. */
ts_status ts_program_save_state_parts(const ts_program *p, const char *dir, const char *extra_json,
                                      const char *rank_json);
ts_status ts_program_load_state_parts(ts_program *p, const char *dir, char **extra_json_out, char **rank_json_out);
/* Validate a checkpoint directory without a program: both safetensors files well formed and
 * complete, trainer.json valid JSON, the step present. TS_OK or the error ts_program_load_state
 * would report for the files themselves. */
ts_status ts_checkpoint_check(const char *dir);
/* Keep the newest `keep` (>= 1) step-numbered checkpoints "<prefix><digits>" (e.g. "ckpt-000100",
 * ordered by the number) directly under parent_dir and delete the older ones (with their .old
 * copies; every such directory counts, valid or not), and any stale "<prefix><digits>.tmp-*"
 * left by interrupted saves, and a DIR.old beside its complete DIR. Other entries are left alone. */
ts_status ts_checkpoint_rotate(const char *parent_dir, const char *prefix, int keep);
/* The path ("parent_dir/<prefix><digits>", at most cap bytes with its NUL) of the newest
 * checkpoint under parent_dir that passes ts_checkpoint_check. A newer one that fails (a file
 * truncated by a crash or on purpose) is skipped with a line on stderr naming it and the reason,
 * so a run resumes from the one before. TS_ERR_NOT_FOUND when there is none. */
ts_status ts_checkpoint_latest(const char *parent_dir, const char *prefix, char *out, size_t cap);

/* ---------------------------------------------------------------- training runs (src/train/trainer.c) */
/* The loop of a training run, the same for pre-training, fine-tuning and library users, on one
 * device or a pipeline: each call into the program (compiled with accumulation_steps N and
 * device_iterations N x K) takes K optimizer steps of N micro-batches, which the fill hook puts
 * into the feeds (slice k = micro-batch k % N of step k / N) and the feed hook feeds; "lr" is fed
 * beside them ([N x K], each step's lr on its micro-batches). The losses come back per
 * micro-batch; a step's is the mean over its micro-batches that held rows. A non-finite loss
 * ends the run (unless skip_nonfinite: fp16, where the step was skipped and the scale lowered).
 * Each step writes a metrics row {"step", "time_s", <losses>, "lr", "seq_per_s", <extras>}. */
#define TS_TRAIN_MAX_LOSSES 8
typedef struct ts_train_spec {
    size_t struct_size;
    ts_program *program;
    int micro_batches;          /* N (accumulation) */
    int steps_per_call;         /* K (device iterations) */
    float lr;                   /* peak learning rate */
    double warmup;              /* fraction of the run spent warming up linearly, then linear decay
                                   to 0 at total_steps (with a time limit the run's fraction is the
                                   larger of steps done and time spent: whichever end is nearer) */
    int64_t total_steps;        /* the run ends here */
    double max_seconds;         /* > 0: a time limit */
    const char *const *losses;  /* per-micro-batch fetches, the loss first (NULL: "loss" alone) */
    int nlosses;
    const char *const *extra;   /* rank-0 values logged after each call (optimizer@LOSS_SCALE) */
    const char *const *extra_keys; /* their keys in the metrics (NULL: the names) */
    int nextra;
    int skip_nonfinite;
    int64_t save_every, stop_after; /* checkpoint hook at multiples of save_every and at stop_after,
                                       where the run then stops */
    FILE *metrics;              /* metrics.jsonl (may be NULL) */
    ts_comm *comm;              /* replicas (the program's optimizer sums over it; NULL: none):
                                   every rank runs ts_train in step; a step's losses and rows are
                                   those of every rank's micro-batches, the time limit is rank
                                   0's, and the data ends when every rank's fill came back empty */
} ts_train_spec;

typedef struct ts_train_step_report {
    int64_t step;               /* 1-based: the step just done */
    double losses[TS_TRAIN_MAX_LOSSES];
    const char *const *names;
    int nlosses;
    double extra[TS_TRAIN_MAX_LOSSES];
    const char *const *extra_names;
    int nextra;
    float lr;
    double seq_per_s, elapsed;
    int64_t rows;
} ts_train_step_report;

typedef struct ts_train_hooks {
    void *ctx;
    /* Put micro-batch `micro` of optimizer step `step` (0-based) into slice `slice` of the
     * caller's batch buffers; *rows: rows filled (0: an empty micro-batch, padding only). 0, or -1
     * with the message in ts_last_error(). */
    int (*fill)(void *ctx, int64_t step, int micro, int slice, int *rows);
    /* Feed the filled slices to p. */
    ts_status (*feed)(void *ctx, ts_program *p);
    /* After each step (optional): progress. */
    void (*on_step)(void *ctx, const ts_train_step_report *r);
    /* Optional: more members of a step's metrics row, written as ", \"key\": value". */
    void (*metrics_extra)(void *ctx, FILE *metrics);
    /* After each call (optional): evaluation, saving; `last` when the run ends with it. */
    ts_status (*after_call)(void *ctx, int64_t step, int last);
    /* Save a full-state checkpoint at step (optional). */
    ts_status (*checkpoint)(void *ctx, int64_t step);
} ts_train_hooks;

typedef struct ts_train_result {
    int64_t start_step, step;   /* where the run began and ended */
    double seconds;
    double loss_sum;            /* the finite steps' losses, for a mean */
    int64_t loss_n;
    int stopped, out_of_time, exhausted;
} ts_train_result;

/* The programs of a BERT training run. */
typedef struct ts_bert_train_opts {
    size_t struct_size;
    const ts_bert_config *cfg;   /* with layer_stages for a pipeline */
    ts_bert_head head;
    int batch, seq;              /* of one micro-batch */
    uint64_t seed;
    int threads;                 /* 0: every core (a pipeline: the cores shared among its devices) */
    int infer_threads;           /* of the evaluation program (0: threads) */
    ts_optim_kind optimizer;     /* AdamW and LAMB with eps 1e-6; biases and LayerNorm weights
                                    without weight decay (and, with LAMB, without trust ratio) */
    float weight_decay, max_grad_norm, momentum;
    int accumulation;            /* N micro-batches a step */
    int steps_per_call;          /* K: the program takes N x K micro-batches a call */
    size_t memory_limit;         /* per device (0: each device's memory) */
    const char *const *stage_devices; /* a pipeline: the device of each stage (NULL: one device) */
    int nstage_devices;
    const char *const *train_fetches, *const *infer_fetches;
    int ntrain_fetches, ninfer_fetches;
    ts_comm *comm;               /* replicas: ts_optim_opts.comm (NULL: one process) */
    int shard_state;             /* ZeRO-1 over comm (ts_optim_opts.shard_state) */
    size_t bucket_bytes;         /* gradient buckets (0: 25 MiB) */
    int skip_param_init;         /* with no training program: the inference program's parameters
                                    start at zero, to be loaded (ts_compile_opts.skip_param_init) */
    int profile;                 /* 1: the training program is compiled with ts_compile_opts.profile
                                    (see ts_program_profile_report; not with stage_devices) */
} ts_bert_train_opts;
/* Build the model (o->head) with the backward pass and the optimizer, and compile it for
 * training into *train (may be NULL: none) and for evaluation (inference, one device) into
 * *infer (may be NULL). On failure nothing is returned and the message says what failed
 * ("compiling the training program: ..."). */
ts_status ts_bert_train_programs(const ts_bert_train_opts *o, ts_program **train, ts_program **infer);

/* The learning rate of step (0-based) after `elapsed` seconds under spec's schedule. */
float ts_train_lr(const ts_train_spec *spec, int64_t step, double elapsed);
/* Run from `step` (a resumed run's; a multiple of K) until total_steps, the time limit,
 * stop_after, or the data's end (a call whose micro-batches all came back empty). The message of
 * a failure names the step. */
ts_status ts_train(const ts_train_spec *spec, const ts_train_hooks *hooks, int64_t step, ts_train_result *result);

/* A training run's checkpoints: OUT/checkpoints/step-NNNNNN (step zero-padded to 6 digits),
 * written with ts_program_save_state (trainer_json as trainer.json) and rotated to the newest
 * `keep` (ts_checkpoint_rotate). */
#define TS_CKPT_DIR "checkpoints"
#define TS_CKPT_PREFIX "step-"
ts_status ts_train_checkpoint_save(const char *out, int64_t step, const ts_program *p, const char *trainer_json,
                                   int keep);
/* The same with this rank's JSON (ts_program_save_state_parts); with replicas a collective, and
 * rank 0 rotates. */
ts_status ts_train_checkpoint_save_parts(const char *out, int64_t step, const ts_program *p, const char *trainer_json,
                                         const char *rank_json, int keep);
/* The checkpoint to resume from: `resume` itself when it is one (holds trainer.json), else the
 * newest valid one in resume/checkpoints, else in resume (a newer invalid one is skipped, with a
 * line on stderr naming it). Writes its path to path[cap]. TS_ERR_NOT_FOUND when there is none. */
ts_status ts_train_checkpoint_find(const char *resume, char *path, size_t cap);

/* ---------------------------------------------------------------- replicas (src/dist/comm.c) */
/* Data parallelism over processes: `mpirun -np R tessera pretrain ...` (or any program) starts R
 * ranks, each a replica of one training run — or, with stage devices, a whole pipeline — and the
 * world communicator connects them. tessera uses MPI (Open MPI) when it was built with it
 * (libopenmpi-dev present) and the process was started by mpirun; otherwise the world is one
 * rank, nothing touches MPI, and every collective below is a copy. A process started by mpirun
 * with more than one rank in a build without MPI gets TS_ERR_UNSUPPORTED.
 * Collectives are called by every rank, in the same order, from one thread at a time; buf, in
 * and out are host memory (the CPU device's buffers are). A collective that does not complete
 * within the timeout (default 60 s; the environment's TS_COMM_TIMEOUT; ts_comm_set_timeout)
 * asks every other rank where it is and fails with TS_ERR_COMM naming the ranks that did not
 * answer (dead or stopped) or are elsewhere, and the step (ts_comm_set_step). After any
 * TS_ERR_COMM the communicator is unusable: end the job with ts_comm_abort. */
/* The job's communicator, made (and MPI initialised) on the first call; NULL on failure. */
ts_comm *ts_comm_world(void);
int ts_comm_rank(const ts_comm *c);
int ts_comm_size(const ts_comm *c);
/* "mpi" when this build has MPI, else "none". */
const char *ts_comm_backend(void);
/* buf[0 .. count) = the sum over the ranks of their buf (f32, i32 or i64), on every rank. */
ts_status ts_comm_allreduce(ts_comm *c, void *buf, int64_t count, ts_dtype dtype);
/* The same for doubles (host statistics: loss sums, row counts). */
ts_status ts_comm_allreduce_f64(ts_comm *c, double *buf, int64_t count);
/* in is size x count elements; rank r gets out[0 .. count) = the sum over the ranks of their
 * in[r count .. (r + 1) count). count <= 2^30. */
ts_status ts_comm_reduce_scatter(ts_comm *c, const void *in, void *out, int64_t count, ts_dtype dtype);
/* out (size x count elements) = every rank's in (count), in rank order. count <= 2^30. */
ts_status ts_comm_allgather(ts_comm *c, const void *in, void *out, int64_t count, ts_dtype dtype);
/* buf[0 .. bytes) = root's, on every rank. */
ts_status ts_comm_broadcast(ts_comm *c, void *buf, size_t bytes, int root);
ts_status ts_comm_barrier(ts_comm *c);
void ts_comm_set_timeout(ts_comm *c, double seconds);
double ts_comm_timeout(const ts_comm *c);
/* The training step this rank is at, for the messages of a timeout (its own and other ranks'). */
void ts_comm_set_step(ts_comm *c, int64_t step);
/* What the collectives cost on this rank: in_graph 0 the host collectives above, 1 the
 * in-graph ones (gradient all-reduces, parameter broadcasts). busy_s: seconds the progress
 * threads spent in MPI; wait_s: seconds callers (the comm_wait ops) were blocked waiting, the
 * part not hidden behind other work. */
typedef struct ts_comm_stats {
    uint64_t ops, bytes;
    double busy_s, wait_s;
} ts_comm_stats;
void ts_comm_get_stats(const ts_comm *c, int in_graph, ts_comm_stats *s);
void ts_comm_reset_stats(ts_comm *c);
/* End the whole job now with exit code `code` (MPI_Abort; a lone process just exits). */
void ts_comm_abort(ts_comm *c, int code) __attribute__((noreturn));
/* Shut the world down (threads joined, MPI finalized) once every rank is done; called at exit
 * too. After a TS_ERR_COMM it aborts the job instead, since a collective may still hang. */
void ts_comm_finalize(void);

/* ---------------------------------------------------------------- data: batches */
/* The data readers — BERT pretraining text, text classification files, SQuAD — write batches
 * into caller-provided int32 buffers, row-major (to feed a program, pass ts_tensor_data() of
 * TS_I32 tensors of these shapes). They are deterministic: the same files, options and seed give
 * the same batches on every machine and for any number of threads. Bad input (a malformed file,
 * a bad option) returns a status whose message names the file and the line; it never crashes. */

/* The label of a position or row that takes no part in the loss: pass it to ts_cross_entropy as
 * ignore_index. */
#define TS_IGNORE_INDEX (-100)

/* The WordPiece tokenizer the readers encode with (declared with its functions below). */
typedef struct ts_tokenizer ts_tokenizer;

/* Where a reader writes one batch of B rows of T tokens. A reader fills the fields it knows of
 * and skips NULL ones (input_ids may not be NULL). Rows past those filled (at the end of the
 * data) are padding: [PAD] ids, zero masks and types, TS_IGNORE_INDEX labels and positions. */
typedef struct ts_batch {
    int32_t *input_ids;           /* [B, T] [CLS] A [SEP] (B [SEP]) then [PAD] */
    int32_t *token_type_ids;      /* [B, T] 0 on [CLS] A [SEP], 1 on B [SEP], 0 on padding */
    int32_t *attention_mask;      /* [B, T] 1 on real tokens, 0 on padding */
    int32_t *labels;              /* pretraining: [B, T] the original id at each masked position,
                                     TS_IGNORE_INDEX elsewhere; classification: [B] label ids */
    int32_t *next_sentence_label; /* pretraining: [B] 0 when B follows A (IsNext), 1 (NotNext) */
    int32_t *start_positions;     /* SQuAD: [B] token position of the answer's first and last */
    int32_t *end_positions;       /* piece in the row; 0 ([CLS]) when the answer is not inside */
} ts_batch;

/* A seeded random permutation of 0 .. n-1 into out[n] (Fisher-Yates on tessera's splitmix64
 * stream): the same on every platform. The shuffle for the batch functions' row lists. */
void ts_permutation(uint64_t seed, int64_t n, int64_t *out);

/* Batch buffers (src/train/batches.c): the three int32 [B, T] inputs and the label tensors of a
 * batch, with a ts_batch over them; or, for a program taking S micro-batches a call (device
 * iterations, accumulation), S such batches as [S, B, T] tensors, b pointing into slice k
 * (ts_batch_buf_slice). Fields are read directly; the functions return 0 on out of memory. */
typedef struct ts_batch_buf {
    ts_tensor *ids, *types, *mask, *labels, *nsp;
    ts_batch b;
    int slices, batch, seq;
    /* pre-training with max_predictions_per_seq P > 0: the labelled positions of each row and
     * their labels, [.., B, P] (ts_batch_buf_compact fills them from b.labels) */
    int predictions;
    ts_tensor *positions, *plabels;
} ts_batch_buf;

/* labels_rank: 0 none, 1 [B] (classification), 2 [B, T] (+ next_sentence_label [B]). */
int ts_batch_buf_init(ts_batch_buf *bb, int batch, int seq, int labels_rank);
/* The same with `slices` batches (> 1: tensors [slices, B, T], [slices, B]); b at slice 0; with
 * predictions P > 0 (labels_rank 2) also masked_lm_positions and labels [.., B, P]. */
int ts_batch_buf_init_slices(ts_batch_buf *bb, int batch, int seq, int labels_rank, int slices, int predictions);
/* With predictions P: list the labelled positions of slice k's rows (b.labels, [B, T]) and their
 * labels into positions / plabels, padded with position 0 and label -100. Returns the number of
 * labelled positions beyond P that were left out (0 when the masker caps at P). */
int ts_batch_buf_compact(ts_batch_buf *bb, int k);
/* Point bb->b at slice k. */
void ts_batch_buf_slice(ts_batch_buf *bb, int k);
void ts_batch_buf_free(ts_batch_buf *bb);
/* Feed input_ids, token_type_ids, attention_mask (and labels, next_sentence_label when
 * with_labels and present; with predictions, masked_lm_positions and the compacted labels). */
ts_status ts_batch_buf_feed(ts_batch_buf *bb, ts_program *p, int with_labels);

/* ---------------------------------------------------------------- data: BERT pretraining */
/* Masked-LM + next-sentence examples from plain text, as Google's create_pretraining_data.py
 * makes them, streamed from files of any size.
 *
 * Input: UTF-8 text, one sentence (or paragraph) a line; a blank line ends a document, and so
 * does the end of a file (and 2^20 tokens, so a file without blank lines still streams). Lines
 * that tokenize to nothing are skipped.
 *
 * The reader takes shuffle_docs documents at a time (a window) into memory and makes pairs from
 * each document: sentences are gathered into a chunk until it reaches a target length (max_len
 * - 3, or with probability short_seq_prob a random length from 2), A is a random number of the
 * chunk's first sentences, and B is the rest of the chunk (IsNext, label 0) or, with probability
 * random_next_prob (or when the chunk holds one sentence), sentences from a random position of
 * another document of the window (NotNext, label 1; the unused sentences of the chunk start the
 * next one). The pair is cut to max_len - 3 tokens by trimming the longer side at a random end.
 * The window's pairs are shuffled and served in batches; then the next window is read.
 * A window with a single document makes IsNext pairs only.
 *
 * Masking is dynamic (drawn when a row is served): round(mask_prob x the row's maskable tokens)
 * positions (at least 1, at most max_predictions), where every token but [PAD] [CLS] [SEP]
 * [MASK] is maskable; with whole_word a word (a token and the "##" pieces after it) is masked as
 * a whole or not at all. A chosen token becomes [MASK] (80%), a random non-special token (10%) or
 * stays (10%).
 *
 * Random numbers are a function of (seed, epoch, window, example), so a state of a few integers
 * (ts_pretrain_state) resumes a run exactly. */
typedef struct ts_pretrain_reader ts_pretrain_reader;

typedef struct ts_pretrain_opts {
    const char *const *files; /* text files, read in this order */
    int nfiles;
    int batch_size;           /* B, rows per batch (default 32) */
    int max_len;              /* T, tokens per row with [CLS] and two [SEP], at least 8 (128) */
    int shuffle_docs;         /* documents per window (1000) */
    double mask_prob;         /* 0.15 */
    int max_predictions;      /* most masked positions per row; 0: no cap (0) */
    int whole_word;           /* 1: whole-word masking (0) */
    double short_seq_prob;    /* 0.1 */
    double random_next_prob;  /* 0.5 */
    int epochs;               /* passes over the files; 0: repeat without end (0) */
    uint64_t seed;            /* (0) */
    int shard, num_shards;    /* replicas: the batches of the one stream above are dealt round-robin
                                 and this reader serves batches k with k % num_shards == shard,
                                 skipping the others' rows unmasked (0 and 0 or 1: every batch) */
} ts_pretrain_opts;

/* The defaults noted above (files NULL). */
ts_pretrain_opts ts_pretrain_defaults(void);

/* Open a reader over opts->files with tok (which must outlive the reader and have [MASK]).
 * Checks the options and that every file can be opened; NULL on failure (ts_last_error()). */
ts_pretrain_reader *ts_pretrain_open(const ts_tokenizer *tok, const ts_pretrain_opts *opts);
void ts_pretrain_close(ts_pretrain_reader *r);

/* The next batch into b (input_ids, token_type_ids, attention_mask, labels [B, T];
 * next_sentence_label [B]). *nrows (may be NULL) gets the rows filled: B, fewer only at the end
 * of the last epoch, 0 once the data is exhausted. TS_ERR_IO when a file cannot be read or the
 * files hold no sentence pair at all. */
ts_status ts_pretrain_next(ts_pretrain_reader *r, const ts_batch *b, int *nrows);

/* Where a reader stands: everything it needs to continue exactly. Plain integers, to be stored
 * in a checkpoint and handed back to ts_pretrain_restore of a reader opened on the same files
 * with the same options. */
typedef struct ts_pretrain_state {
    uint64_t fingerprint; /* of the options, seed and vocabulary size */
    uint64_t epoch;       /* passes completed */
    uint64_t window;      /* windows started in this epoch, less one */
    int64_t file;         /* the window's first line: index into files ... */
    int64_t offset;       /* ... and byte offset */
    int64_t next;         /* examples of the window already served */
    uint64_t served;      /* examples served since the start (for information) */
    uint64_t batches;     /* batches of the stream passed, served or dealt to other shards */
} ts_pretrain_state;

ts_status ts_pretrain_save(const ts_pretrain_reader *r, ts_pretrain_state *state);
/* Continue from a saved state: the batches that follow are those that followed the save.
 * TS_ERR_ARG when the state comes from a reader with other options; TS_ERR_IO when the files
 * no longer match it. On failure the reader is left at its start. */
ts_status ts_pretrain_restore(ts_pretrain_reader *r, const ts_pretrain_state *state);

/* Masked-LM accuracy: for each position of labels (as many as logits has rows: logits is
 * [..., V], f32 or bf16) that is not TS_IGNORE_INDEX, whether the argmax of its logits is the
 * label. Adds the positions to *total and the correct ones to *correct (zero them first), so
 * it sums over the batches of a held-out set. TS_ERR_RUNTIME on a label outside [0, V). */
ts_status ts_mlm_accuracy(const ts_tensor *logits, const int32_t *labels, int64_t *correct, int64_t *total);

/* ---------------------------------------------------------------- data: text classification */
/* A labelled text dataset in memory, loaded from
 *  - TSV: a header line naming the columns, then rows of tab-separated fields (no quoting: a
 *    field holds no tab or line break, as GLUE's files);
 *  - CSV (RFC 4180): comma-separated, a field in double quotes may hold commas, line breaks and
 *    doubled quotes (""); LF or CRLF line ends; a header line naming the columns;
 *  - JSONL: one JSON object a line, {"text": "...", "label": "spam"}; a number or boolean label
 *    is read as its text ("1", "true").
 * Blank lines are skipped; a UTF-8 byte order mark is ignored. Every row must have the header's
 * number of columns ("spam.tsv:1234: expected 5 columns, found 3"); a CSV row is counted on the
 * line it begins. Labels are strings mapped to ids 0 .. n-1: in the order of a given list, or
 * the sorted distinct labels of the file (by value when every label is an integer, else by
 * bytes). Subsets made by ts_text_dataset_split keep the parent's label ids. */
typedef struct ts_text_dataset ts_text_dataset;

typedef enum ts_text_format {
    TS_FORMAT_AUTO = 0, /* from the file name: .tsv, .csv, .jsonl or .json */
    TS_FORMAT_TSV,
    TS_FORMAT_CSV,
    TS_FORMAT_JSONL,
} ts_text_format;

typedef struct ts_text_opts {
    ts_text_format format;
    const char *text_column;   /* column name / JSON key of the text (default "text") */
    const char *text_b_column; /* of a second text, for pair tasks; NULL: single texts */
    const char *label_column;  /* of the label (default "label") */
    int no_header;             /* TSV/CSV without a header: columns are 0-based numbers ("0"),
                                  by default label "0" and text "1" (label<TAB>text) */
    const char *const *labels; /* label names in id order; NULL: the file's labels, sorted */
    int nlabels;
} ts_text_opts;

/* Load a whole file (opts may be NULL for the defaults). NULL on failure: the message names the
 * file and line (a missing column, a short row, an unclosed quote, bad JSON, a label not in the
 * given list). */
ts_text_dataset *ts_text_dataset_load(const char *path, const ts_text_opts *opts);
void ts_text_dataset_free(ts_text_dataset *d);
int64_t ts_text_dataset_size(const ts_text_dataset *d);
int ts_text_dataset_num_labels(const ts_text_dataset *d);
/* The name of label id, or NULL when out of range. */
const char *ts_text_dataset_label_name(const ts_text_dataset *d, int id);
/* Row i: its text, second text (NULL without pairs) and label id (any output may be NULL).
 * The strings live as long as d. */
ts_status ts_text_dataset_get(const ts_text_dataset *d, int64_t i, const char **text, const char **text_b,
                              int32_t *label);
/* Drop every row whose text (and second text) equals an earlier row's, keeping the first;
 * *nremoved (may be NULL) gets the count. */
ts_status ts_text_dataset_dedup(ts_text_dataset *d, int64_t *nremoved);
/* Split into two new datasets: first the duplicates are dropped as ts_text_dataset_dedup does
 * (so no text is in both halves), then the rows are shuffled with ts_permutation(seed) and the
 * first round(test_fraction x rows) go to *test, the rest to *train. *nduplicates (may be NULL)
 * gets the number of rows dropped. d is unchanged. */
ts_status ts_text_dataset_split(const ts_text_dataset *d, double test_fraction, uint64_t seed,
                                ts_text_dataset **train, ts_text_dataset **test, int64_t *nduplicates);
/* Encode rows[0..n) into the first n rows of a batch of batch_size rows of max_len tokens
 * (ts_encode: one text, or the pair), labels [B]; the other rows are padding. */
ts_status ts_text_dataset_batch(const ts_text_dataset *d, const ts_tokenizer *tok, const int64_t *rows, int n,
                                int batch_size, int max_len, const ts_batch *b);

/* ---------------------------------------------------------------- data: SQuAD */
/* SQuAD v1.1 question answering: the JSON file ({"data": [{"paragraphs": [{"context": ...,
 * "qas": [{"id", "question", "answers": [{"text", "answer_start"}]}]}]}]}) read into examples
 * (one a question) and features (model rows), as Hugging Face's run_squad makes them:
 *  - the question is tokenized and cut to max_query_len pieces;
 *  - the context is tokenized into pieces that each know their span of the context's bytes
 *    (the ids of ts_tokenize, except that "[MASK]" written in a context is plain text);
 *  - windows of max_seq_len - query - 3 context pieces slide over the context, each starting
 *    doc_stride pieces after the one before, until one reaches the end;
 *  - each window is a row [CLS] question [SEP] window [SEP] [PAD]..., token types 0 then 1;
 *  - the answer (the first one listed) is located from answer_start, a character offset into
 *    the context where its text must stand (see relocate_answers); start / end positions are
 *    the row positions of its first and last pieces when
 *    both lie in the window, else 0 ([CLS]). When the context does not hold the answer text,
 *    or a question has no answer, the positions are TS_IGNORE_INDEX (left out of a loss), as
 *    run_squad skips such examples in training.
 * Evaluation follows the official v1.1 script: predictions are spans of the original context. */
typedef struct ts_squad ts_squad;

typedef struct ts_squad_opts {
    int max_seq_len;   /* T, tokens per row (default 384) */
    int doc_stride;    /* pieces between the starts of a context's windows (128) */
    int max_query_len; /* question pieces kept (64) */
    int relocate_answers; /* 0 (default): every answer's text must stand at its answer_start in
                             the context, as the format says, else the file is refused
                             (TS_ERR_IO naming the file, the question's place and id, the
                             offset and what is there). 1: an answer not at its offset is taken
                             at its occurrence nearest to it (counted: ts_squad_num_relocated),
                             as Hugging Face's scripts do with a warning */
} ts_squad_opts;

/* Read and featurize a SQuAD file with tok (which must outlive s); opts may be NULL. NULL on
 * failure: invalid JSON names the file and line, a wrong structure its place in the file
 * ("data[3].paragraphs[0].qas[2]: no \"question\" string"). */
ts_squad *ts_squad_load(const char *path, const ts_tokenizer *tok, const ts_squad_opts *opts);
void ts_squad_free(ts_squad *s);
int64_t ts_squad_num_examples(const ts_squad *s);
int64_t ts_squad_num_features(const ts_squad *s);
/* Answers that were not at their answer_start and were taken at their nearest occurrence
 * (relocate_answers), and answers whose text is nowhere in the context; 0 without relocation. */
int64_t ts_squad_num_relocated(const ts_squad *s);

/* One example (question); pointers live as long as s. Its features are first_feature ..
 * first_feature + nfeatures - 1 (an empty context has none). */
typedef struct ts_squad_example {
    const char *id, *question, *context;
    int nanswers;
    const char *const *answers;   /* answer texts */
    const int64_t *answer_starts; /* their character offsets into context, as in the file */
    int64_t first_feature;
    int nfeatures;
} ts_squad_example;
ts_status ts_squad_get(const ts_squad *s, int64_t example, ts_squad_example *ex);

/* Features features[0..n) into the first n rows of a batch of batch_size rows of max_seq_len
 * tokens (input_ids, token_type_ids, attention_mask, start_positions, end_positions). */
ts_status ts_squad_batch(const ts_squad *s, const int64_t *features, int n, int batch_size, const ts_batch *b);

/* The best answer of one example from the model's start and end logits of every feature:
 * start_logits / end_logits are [F, T] (F = ts_squad_num_features, row f for feature f). As
 * run_squad: the n_best highest start and end logits of each of the example's features are
 * paired; a pair counts when both lie in the window's context, start <= end, the span has at most
 * max_answer_len pieces and the window is the one where the start piece has the most context;
 * the score is start + end logit. The answer is context bytes [*begin, *begin + *len); 0, 0 and
 * a score of -INFINITY when no span qualifies. n_best / max_answer_len <= 0: 20 / 30. */
ts_status ts_squad_best_span(const ts_squad *s, int64_t example, const float *start_logits,
                             const float *end_logits, int n_best, int max_answer_len, size_t *begin,
                             size_t *len, float *score);

/* The official SQuAD v1.1 metrics of one prediction against its ground truths (the best over
 * them): exact match (0 or 1) and token F1 (0..1), after normalizing both texts: lower case,
 * ASCII punctuation removed, the words a / an / the removed, white space collapsed. */
void ts_squad_metric(const char *prediction, const char *const *truths, int ntruths, double *em, double *f1);
/* EM and F1 in percent over every example, predictions[i] for example i (NULL counts as wrong). */
ts_status ts_squad_score(const ts_squad *s, const char *const *predictions, double *em, double *f1);
/* ts_squad_best_span for every example, then ts_squad_score. */
ts_status ts_squad_evaluate(const ts_squad *s, const float *start_logits, const float *end_logits, int n_best,
                            int max_answer_len, double *em, double *f1);

/* ---------------------------------------------------------------- data: SQuAD from memory */
/* As ts_squad_load, from the text of a SQuAD JSON document already in memory (json[0..len), not
 * necessarily NUL-terminated): for questions that do not come from a file, such as the lines
 * `tessera predict` reads. `name` stands for the file in error messages ("stdin",
 * "questions.jsonl"). Answers may be absent (an example without answers), as for prediction. */
ts_squad *ts_squad_parse(const char *name, const char *json, size_t len, const ts_tokenizer *tok,
                         const ts_squad_opts *opts);

/* ---------------------------------------------------------------- text (WordPiece) */
/* BERT's WordPiece tokenizer, id for id the same as Hugging Face tokenizers' BertWordPiece
 * (BertNormalizer, BertPreTokenizer, WordPiece with "##" pieces and words of at most 100
 * characters, BERT post-processing):
 *  - the five special tokens [PAD] [UNK] [CLS] [SEP] [MASK], written literally in the text,
 *    are taken as those tokens ("the [MASK] sat" -> the, [MASK], sat);
 *  - the rest is cleaned (control characters, U+0000 and U+FFFD dropped, white space unified),
 *    CJK ideographs become words of their own, and when uncased: NFD, accents (Mn) removed,
 *    lower case; then split on white space and around each punctuation character;
 *  - each word is matched greedily, longest piece first ("unaffable" -> un ##aff ##able); a
 *    word with an unmatched part, or longer than 100 characters, is one [UNK].
 * Text is UTF-8 and NUL-terminated; malformed bytes are dropped, never an error. Unicode data:
 * Python's unicodedata, Unicode 14 (src/text/unicode_tables.c, from
 * tools/make_unicode_tables.py); tokenizers' own tables are older (punctuation, marks and format
 * characters of about Unicode 8), so some 560 rare code points added since split differently.
 * A tokenizer is read-only after loading: one may serve many threads. */
typedef struct ts_tokenizer ts_tokenizer;

/* Load a vocab.txt: one token per line, the id of a token is its line number from 0 (as in
 * Hugging Face tokenizers, trailing white space of a line is ignored and a token listed twice
 * maps to its last line). lowercase != 0: the uncased model (bert-base-uncased); 0: cased (no
 * lower-casing, accents kept). The vocabulary must hold [PAD] [UNK] [CLS] [SEP] ([MASK] is
 * optional). NULL on failure: an unreadable or empty file, a line that is not UTF-8 (the error
 * names the file and line), a missing special token. */
ts_tokenizer *ts_tokenizer_load(const char *vocab_path, int lowercase);
void ts_tokenizer_free(ts_tokenizer *tok);
/* Number of ids (lines of vocab.txt): the rows an embedding table needs. */
int ts_tokenizer_vocab_size(const ts_tokenizer *tok);
/* Id of a token ("[MASK]", "##ing"), or -1 when it is not in the vocabulary. */
int32_t ts_token_to_id(const ts_tokenizer *tok, const char *token);
/* The token of an id (valid while tok lives), or NULL when id is out of range. */
const char *ts_id_to_token(const ts_tokenizer *tok, int32_t id);

/* The wordpiece ids of text, without [CLS] / [SEP]. Writes at most cap ids and sets *n to the
 * full count; TS_ERR_SHAPE when that is more than cap (call again with a buffer of *n). */
ts_status ts_tokenize(const ts_tokenizer *tok, const char *text, int32_t *ids, int cap, int *n);

/* BERT inputs for one sentence (text_b == NULL) or a pair, exactly max_len long:
 *   input_ids       [CLS] A [SEP]  or  [CLS] A [SEP] B [SEP], then [PAD] up to max_len
 *   token_type_ids  0 over [CLS] A [SEP], 1 over B [SEP], 0 on padding     (may be NULL)
 *   attention_mask  1 on real tokens, 0 on padding                          (may be NULL)
 * Each array holds max_len entries; *n (may be NULL) is set to the count of real tokens.
 * Inputs that do not fit are cut (at the end, unless ts_tokenizer_set_truncation says otherwise):
 * a single one to max_len - 2; a pair longest-first,
 * as Hugging Face tokenizers does (when both are long each gets half of max_len - 3, B the
 * larger half; otherwise the shorter stays whole). max_len must be at least 2 (3 for a pair). */
ts_status ts_encode(const ts_tokenizer *tok, const char *text_a, const char *text_b, int max_len,
                    int32_t *input_ids, int32_t *token_type_ids, int32_t *attention_mask, int *n);

/* Where ts_encode cuts a text that does not fit (each text of a pair is cut to its length as
 * above): keep_head < 0 (the default) keeps its start, like Hugging Face's truncation_side
 * "right"; otherwise the first keep_head pieces (or all the room, when that is less) and then the
 * text's last pieces: 0 keeps the end ("left"), and a quarter of max_len is "head+tail", which
 * Sun et al. (2019, How to Fine-Tune BERT for Text Classification) found best for long documents:
 * a mail's greeting and its signature or footer both stay in. */
void ts_tokenizer_set_truncation(ts_tokenizer *tok, int keep_head);

/* Learn a WordPiece vocabulary of at most vocab_size tokens from text files (UTF-8, read line
 * by line, so corpora larger than memory work as long as their distinct words fit) and write it
 * to out_path as a vocab.txt (atomically: a temporary file renamed into place). The method of
 * Hugging Face's BertWordPieceTokenizer.train (WordPieceTrainer, min_frequency 2,
 * limit_alphabet 1000): basic-tokenize every line (lowercase as in ts_tokenizer_load), count
 * words; the alphabet is the (at most 1000) most frequent characters seen at least twice, each as
 * "c" where it starts a word and "##c" where it continues one; then repeatedly merge the most
 * frequent adjacent pair of pieces (ties: the pair of earlier pieces) into a new piece, until
 * vocab_size or no pair occurs twice. Output order: [PAD] [UNK] [CLS] [SEP] [MASK], the "c"
 * pieces, the "##c" pieces, then the merged pieces in the order learned. Words over 100
 * characters are skipped (tokenization maps them to [UNK]). Deterministic: the same files give
 * the same file. vocab_size must be at least 5. */
ts_status ts_vocab_build(const char *const *files, int nfiles, int vocab_size, int lowercase,
                         const char *out_path);

#include "tessera_tasks.h" /* what the tessera command does, as library calls */

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_H */
