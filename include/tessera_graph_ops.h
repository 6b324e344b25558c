/*
 * tessera_graph_ops.h — the graph builder's ops: arithmetic, shapes, reductions, normalisation,
 * losses, ONNX-style math and index ops, vision ops (convolution, pooling, resize).
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_GRAPH_OPS_H
#define TESSERA_GRAPH_OPS_H

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- ops
 * Binary elementwise ops broadcast like numpy. Unless stated, float ops take f32. */

/* a[..., M, K] @ b[..., K, N] -> [..., M, N]; trans_a / trans_b transpose the last two dims of
 * the operand first. Batch dims broadcast; a 2-D b is shared by every batch. f32, bf16 or f16
 * (both operands alike; 16-bit products accumulate in f32 and round once to the output, an f16
 * result beyond +-65504 becomes +-inf). oneDNN 2.6 has no f16 matmul on CPUs without
 * AVX512_FP16, and no bf16 one on CPUs without AVX-512: there the 16-bit operands are widened
 * exactly to f32, multiplied by oneDNN's f32 matmul, and the product rounded to f16 / bf16 — the
 * same numbers, at f32 speed (plus the conversions). */
TS_API ts_value ts_matmul(ts_graph *g, ts_value a, ts_value b, int trans_a, int trans_b);
TS_API ts_value ts_add(ts_graph *g, ts_value a, ts_value b);
TS_API ts_value ts_sub(ts_graph *g, ts_value a, ts_value b);
TS_API ts_value ts_mul(ts_graph *g, ts_value a, ts_value b);
TS_API ts_value ts_div(ts_graph *g, ts_value a, ts_value b);
/* a ** b elementwise (a > 0 where b is not an integer). */
TS_API ts_value ts_pow(ts_graph *g, ts_value a, ts_value b);
/* alpha * x + beta. */
TS_API ts_value ts_scale(ts_graph *g, ts_value x, float alpha, float beta);
TS_API ts_value ts_sqrt(ts_graph *g, ts_value x);
TS_API ts_value ts_exp(ts_graph *g, ts_value x);
TS_API ts_value ts_log(ts_graph *g, ts_value x);
TS_API ts_value ts_relu(ts_graph *g, ts_value x);
TS_API ts_value ts_tanh(ts_graph *g, ts_value x);
TS_API ts_value ts_sigmoid(ts_graph *g, ts_value x);
/* GELU: x * Phi(x) (erf form), or the tanh approximation when tanh_approx != 0. */
TS_API ts_value ts_gelu(ts_graph *g, ts_value x, int tanh_approx);

/* Same data, new shape; one entry may be -1 (inferred). */
TS_API ts_value ts_reshape(ts_graph *g, ts_value x, int ndim, const int64_t *shape);
/* out.shape[i] = x.shape[perm[i]]. perm == NULL swaps the last two dims. */
TS_API ts_value ts_transpose(ts_graph *g, ts_value x, const int *perm);
/* x[..., start:end, ...] along axis (negative indices count from the end, python-style clamping). */
TS_API ts_value ts_slice(ts_graph *g, ts_value x, int axis, int64_t start, int64_t end);
TS_API ts_value ts_concat(ts_graph *g, int n, const ts_value *xs, int axis);
/* Split x along axis into n parts of the given sizes (sizes == NULL: equal parts). */
TS_API ts_status ts_split(ts_graph *g, ts_value x, int axis, int n, const int64_t *sizes, ts_value *outs);
/* Broadcast x to shape (numpy rules). */
TS_API ts_value ts_expand(ts_graph *g, ts_value x, int ndim, const int64_t *shape);
/* Rows of table[V, ...] picked by integer (i32/i64) indices[...] -> [..., ...]. An index outside
 * [0, V) fails the run with TS_ERR_RUNTIME. Not differentiable in indices. */
TS_API ts_value ts_gather(ts_graph *g, ts_value table, ts_value indices);

/* Reductions over the listed axes (naxes == 0: all axes). */
TS_API ts_value ts_reduce_sum(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);
TS_API ts_value ts_reduce_mean(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);
TS_API ts_value ts_reduce_max(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);

/* softmax(x + mask) over the last axis; mask (additive, broadcastable to x) may be TS_NONE. */
TS_API ts_value ts_softmax(ts_graph *g, ts_value x, ts_value mask);
TS_API ts_value ts_log_softmax(ts_graph *g, ts_value x);
/* Layer norm over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta; gamma and beta are
 * [C] (either may be TS_NONE). */
TS_API ts_value ts_layer_norm(ts_graph *g, ts_value x, ts_value gamma, ts_value beta, float eps);
/* Inverted dropout with drop probability p: a fresh mask each run, a function of (graph seed,
 * this op, run step), so runs are reproducible. Identity in programs compiled for inference. */
TS_API ts_value ts_dropout(ts_graph *g, ts_value x, float p);
/* Scaled dot-product attention as one op, PyTorch's scaled_dot_product_attention:
 *   y = dropout(softmax(q k^T scale + mask), dropout_p) v
 * run on tiles with an online softmax (FlashAttention's algorithm), so the [T, S] scores and
 * probabilities are never stored; the backward recomputes them. Shapes by layout:
 *   TS_ATTN_BHTD  q [B, H, T, D], k and v [B, H, S, D] -> y [B, H, T, D]
 *   TS_ATTN_BTHD  q [B, T, H, D], k and v [B, S, H, D] -> y [B, T, H, D] (a Linear's output
 *                 reshaped to heads: no transposes in or out)
 * q, k, v f32, or all three bf16 with compute TS_BF16 (the same numbers as from the f32 values
 * they were rounded from; y and the gradients are f32 either way). mask: TS_NONE or additive f32
 * broadcastable to [B, H, T, S] (padding [B, 1, 1, S], packed sequences' block diagonal
 * [B, 1, T, S]); it gets no gradient. compute: TS_F32, or TS_BF16 to multiply as autocast does
 * (every product's operands rounded to bf16, f32 sums). dropout_p in
 * [0, 1) drops probabilities with ts_dropout's generator; identity in programs compiled for
 * inference. Gradients for q, k, v. ts_graph_fuse_attention makes these nodes from the unfused
 * pattern. */
TS_API ts_value ts_attention(ts_graph *g, ts_value q, ts_value k, ts_value v, ts_value mask, float scale,
                             float dropout_p, int layout, ts_dtype compute);
/* Rewrite each unfused attention of g — matmul(q, k, trans_b) -> scale(alpha, 0) -> softmax(., mask?)
 * -> dropout? -> matmul(., v), with bf16 autocast's casts around both products allowed, and the
 * form ONNX models import as (matmul(q, transpose(k, {0, 1, 3, 2})), mul or div by a scalar
 * constant, softmax(add(scores, mask)); ts_onnx_session runs this pass) — into one
 * ts_attention node: TS_ATTN_BTHD when q, k, v are transpose(x, {0, 2, 1, 3}) of some x and the
 * output goes through that transpose (the transposes then unread), else TS_ATTN_BHTD; in bf16 it
 * reads q, k, v through autocast's casts, so the backward keeps their bf16 copies. The node
 * keeps the dropout's generator, so it drops exactly what the unfused ops dropped. A pattern is
 * left as it is when a value inside it has another reader or a name, its nodes span pipeline
 * stages or recompute segments, or its mask depends on a parameter. Call before ts_backward (an
 * error after it). Returns the number of attention nodes made, or -1 (ts_last_error). */
TS_API int ts_graph_fuse_attention(ts_graph *g);
/* Mean cross-entropy of logits[..., C] against integer labels[...]; labels equal to ignore_index
 * are left out of the mean (the loss is 0 when all are). Returns a scalar. A label outside
 * [0, C) that is not ignore_index fails the run with TS_ERR_RUNTIME. */
TS_API ts_value ts_cross_entropy(ts_graph *g, ts_value logits, ts_value labels, int64_t ignore_index);
/* cond ? a : b elementwise, cond u8 (0 / non-zero); all three broadcast. */
TS_API ts_value ts_where(ts_graph *g, ts_value cond, ts_value a, ts_value b);
/* Convert to another dtype (float -> int truncates toward zero and saturates at the integer
 * type's range; NaN becomes 0). */
TS_API ts_value ts_cast(ts_graph *g, ts_value x, ts_dtype dtype);
/* f32 x rounded stochastically to dtype (TS_BF16 or TS_F16), the rounding of 16-bit weights and
 * optimizer state (src/ops/cast_stochastic.c): each element becomes one of the two dtype values
 * nearest it, the one farther from zero with probability proportional to x's distance from the
 * nearer-to-zero one, so the expected result is x; values dtype holds exactly stay; NaN, inf and
 * magnitudes past dtype's largest finite value are rounded as ts_cast rounds them. The random
 * bits of element i are a pure function of (seed, step, key, i): step is read at run time from a
 * one-element value of g (i64, i32, or f32 truncated toward zero, as the optimizers' step
 * counters are); key names what is rounded and must not depend on how the graph was built or
 * split: give ts_cast_stochastic_key(parameter name), so a resumed run, each pipeline stage and
 * each replica draw the same bits for the same (parameter, step), whatever the thread count.
 * Gradient: straight through (x's is the incoming gradient cast to f32); none for step.
 * Errors (the graph's status, the message naming cast_stochastic and the value): TS_ERR_DTYPE
 * when x is not f32, dtype is not bf16 / f16 or step is not i64 / i32 / f32; TS_ERR_SHAPE when
 * step does not hold exactly one element. */
TS_API ts_value ts_cast_stochastic(ts_graph *g, ts_value x, ts_value step, ts_dtype dtype, uint64_t seed,
                                   uint64_t key);
/* dst = src, written in place at the end of the step's updates' turn (src/ops/assign.c): dst a
 * parameter or state value, src a value of its dtype and shape. The write-back of an update made on
 * a copy (16-bit parameters: ts_optimizer). A side effect: kept by dead-code elimination, dropped
 * from inference programs; not differentiable. TS_ERR_ARG / TS_ERR_SHAPE (the graph's status) for
 * another kind of dst, or a src of another dtype or shape. */
TS_API ts_status ts_assign(ts_graph *g, ts_value dst, ts_value src);
/* The key ts_cast_stochastic takes for a value named name: the 64-bit FNV-1a hash of its bytes
 * (NULL: of ""). Stable across builds, processes and machines. */
TS_API uint64_t ts_cast_stochastic_key(const char *name);

/* ---------------------------------------------------------------- more ops (src/ops/mathfn.c, binary.c,
 * predicate.c, select.c, argreduce.c, reduce_prod.c, trilu.c, elements.c, nll_loss.c, tile.c, pad.c,
 * topk.c, grid_sample.c, det.c, tfidf.c, roi_align.c, dft.c)
 * Elementwise math, comparisons and logic, integer arithmetic, index ops, losses and a few more, as
 * ONNX defines them. Binary ops broadcast like numpy. Integer results wrap (two's complement). */

/* The elementwise functions of ts_math (y = f(x), f32). alpha / beta are used where stated. */
/* ts_math_fn: tessera_types.h (the op contract fixes its numbers). */
/* f(x) elementwise. Differentiable, except floor, ceil, round and sign (no gradient flows through
 * them: their derivative is 0 wherever it exists). */
TS_API ts_value ts_math(ts_graph *g, ts_math_fn fn, ts_value x, float alpha, float beta);
/* "abs", "leaky_relu", ...; NULL for an invalid id. */
TS_API const char *ts_math_fn_name(ts_math_fn fn);

/* Binary elementwise ops of ts_binary. Both operands have one dtype, f32, i32, i64 or u8, except
 * where stated. */
/* ts_binop: tessera_types.h (the op contract fixes its numbers). */
/* op(a, b) elementwise. An integer division or remainder by zero fails the run with
 * TS_ERR_RUNTIME naming the op. */
TS_API ts_value ts_binary(ts_graph *g, ts_binop op, ts_value a, ts_value b);
/* u8 0 / 1 predicates: x is NaN (f32); x is +inf (detect_pos) or -inf (detect_neg) (f32); !x (u8). */
TS_API ts_value ts_isnan(ts_graph *g, ts_value x);
TS_API ts_value ts_isinf(ts_graph *g, ts_value x, int detect_pos, int detect_neg);
TS_API ts_value ts_not(ts_graph *g, ts_value x);
/* cond ? a : b for a and b of any one dtype (ts_where for f32, which it calls); cond u8. */
TS_API ts_value ts_select(ts_graph *g, ts_value cond, ts_value a, ts_value b);

/* The index (i64) of the largest / smallest element along axis of f32 x: the first one, or the
 * last with select_last; a NaN counts as the largest (and smallest) of all. keepdims keeps the
 * axis as size 1. Not differentiable. */
TS_API ts_value ts_argmax(ts_graph *g, ts_value x, int axis, int keepdims, int select_last);
TS_API ts_value ts_argmin(ts_graph *g, ts_value x, int axis, int keepdims, int select_last);
/* min and product of f32 x over axes (as ts_reduce_sum); reduce_min is -reduce_max(-x). */
TS_API ts_value ts_reduce_min(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);
TS_API ts_value ts_reduce_prod(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims);

/* The upper (upper != 0: j - i >= k) or lower (j - i <= k) triangle of the last two dims of x
 * (rank >= 2, any dtype), zeros elsewhere. */
TS_API ts_value ts_trilu(ts_graph *g, ts_value x, int upper, int64_t k);
/* ts_trilu with k read at run time from k, an i64 value of one element. */
TS_API ts_value ts_trilu_k(ts_graph *g, ts_value x, int upper, ts_value k);
/* out[i..] = data[i.. with index along axis replaced by indices[i..]]: indices (i32 / i64) of
 * data's rank, each dim at most data's (except along axis); negative indices count from the end.
 * Data of any dtype; differentiable in f32 data. An index outside [-n, n) fails the run. */
TS_API ts_value ts_gather_elements(ts_graph *g, ts_value data, ts_value indices, int axis);
/* ts_scatter_reduce: tessera_types.h (the op contract fixes its numbers). */
/* A copy of data with data[i.. with indices[i..] along axis] = updates[i..] (or += / *=), the
 * adjoint of ts_gather_elements; updates has the shape of indices. With TS_SCATTER_NONE, the
 * last of duplicate indices wins. f32 differentiable (not with TS_SCATTER_MUL). */
TS_API ts_value ts_scatter_elements(ts_graph *g, ts_value data, ts_value indices, ts_value updates, int axis,
                             ts_scatter_reduce reduction);

/* ts_reduction: tessera_types.h (the op contract fixes its numbers). */
/* Negative log-likelihood of f32 log-probabilities input [N, C, d1..] at integer (i32 / i64)
 * target [N, d1..]: loss = -weight[t] input[n, t, d..] (weight [C], or TS_NONE for ones), 0 where
 * t == ignore_index; NONE: the loss per element [N, d1..]; SUM: its sum; MEAN: the sum divided
 * by the sum of the weights of the targets not ignored (a rank-0 result; 0/0 is NaN, as ONNX).
 * A target outside [0, C) other than ignore_index fails the run. Differentiable in input. */
TS_API ts_value ts_nll_loss(ts_graph *g, ts_value input, ts_value target, ts_value weight, int64_t ignore_index,
                     ts_reduction reduction);

/* x (any dtype) repeated repeats[i] times along each axis i (ndim = x's rank, each >= 1).
 * Differentiable in f32 x. */
TS_API ts_value ts_tile(ts_graph *g, ts_value x, const int64_t *repeats);
/* ts_pad_mode: tessera_types.h (the op contract fixes its numbers). */
/* x (any dtype, rank r) padded by pads[i] before and pads[r + i] after axis i (negative: cropped):
 * with `value` (converted to x's dtype), the mirror image without the edge (reflect, which needs
 * pads < the axis length) or copies of the edge; every dim of the result >= 1. Differentiable in
 * f32 x. */
TS_API ts_value ts_pad(ts_graph *g, ts_value x, const int64_t *pads, ts_pad_mode mode, double value);
/* The k (1 <= k <= the axis' size) largest (largest != 0) or smallest f32 elements along axis,
 * sorted (ties: the lower index first), and their indices (i64): values to outs[0], indices to
 * outs[1]. Differentiable in x through the values. */
TS_API ts_status ts_topk(ts_graph *g, ts_value x, int64_t k, int axis, int largest, ts_value outs[2]);
/* ts_grid_mode: tessera_types.h (the op contract fixes its numbers). */
/* ts_grid_padding: tessera_types.h (the op contract fixes its numbers). */
/* x [N, C, H, W] sampled at grid [N, OH, OW, 2] (normalised (x, y) in [-1, 1]) -> [N, C, OH, OW], as
 * PyTorch's grid_sample / ONNX GridSample (see src/ops/grid_sample.c). f32; not differentiable. */
TS_API ts_value ts_grid_sample(ts_graph *g, ts_value x, ts_value grid, ts_grid_mode mode, ts_grid_padding padding,
                        int align_corners);
/* The determinant of each f32 matrix x [.., M, M] -> [..] (LU with partial pivoting in double). Not
 * differentiable. */
TS_API ts_value ts_det(ts_graph *g, ts_value x);
/* ts_tfidf_mode: tessera_types.h (the op contract fixes its numbers). */
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
TS_API ts_value ts_tfidf(ts_graph *g, ts_value x, const ts_tfidf_opts *opts);
/* Region-of-interest pooling, as ONNX RoiAlign in mode avg (src/ops/roi_align.c): x [N, C, H, W]
 * f32, rois [R, 4] f32 (x1, y1, x2, y2), batch_indices [R] i32 / i64 -> [R, C, out_h, out_w]; each
 * cell the mean of bilinear samples (sampling_ratio per bin and axis, 0: adaptive);
 * half_pixel: ONNX's coordinate_transformation_mode half_pixel (else output_half_pixel). Not
 * differentiable. */
TS_API ts_value ts_roi_align(ts_graph *g, ts_value x, ts_value rois, ts_value batch_indices, int out_h, int out_w,
                      int sampling_ratio, float spatial_scale, int half_pixel);
/* The discrete Fourier transform along axis (not the last) of x [.., n, .., c], real (c = 1) or
 * complex (c = 2: re, im), f32 -> [.., K, .., 2] as ONNX DFT (src/ops/dft.c): of length `length`
 * (0: n; the signal cut or zero-padded to it), K = length, or length / 2 + 1 when onesided;
 * inverse: e^(+2 pi i ..) and 1 / length. Not differentiable. */
TS_API ts_value ts_dft(ts_graph *g, ts_value x, int axis, int inverse, int onesided, int64_t length);

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
TS_API ts_value ts_conv2d(ts_graph *g, ts_value x, ts_value w, ts_value bias, const ts_conv_opts *opts);
/* Transposed 2-D convolution (the adjoint of ts_conv2d in x): x [N, C, H, W], w [C, O/groups, KH, KW],
 * bias [O] or TS_NONE -> [N, O, OH, OW] with OH = sh (H - 1) + out_pad_h + dh (KH - 1) + 1 - pad_t
 * - pad_b. out_pad NULL: {0, 0}; each must be less than its stride. */
TS_API ts_value ts_conv_transpose2d(ts_graph *g, ts_value x, ts_value w, ts_value bias, const ts_conv_opts *opts,
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
TS_API ts_value ts_max_pool2d(ts_graph *g, ts_value x, const ts_pool_opts *opts);
TS_API ts_value ts_avg_pool2d(ts_graph *g, ts_value x, const ts_pool_opts *opts);

/* ts_resize_mode: tessera_types.h (the op contract fixes its numbers). */
/* Where output pixel o samples the input, for scale s = out / in (or the given scale):
 * HALF_PIXEL (o + 0.5) / s - 0.5; ASYMMETRIC o / s; ALIGN_CORNERS o (in - 1) / (out - 1);
 * PYTORCH_HALF_PIXEL as HALF_PIXEL but 0 when out == 1. As ONNX Resize's
 * coordinate_transformation_mode. */
/* ts_resize_coord: tessera_types.h (the op contract fixes its numbers). */
/* Nearest mode's rounding of the sampled coordinate (ONNX nearest_mode). */
/* ts_resize_round: tessera_types.h (the op contract fixes its numbers). */
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
TS_API ts_value ts_resize2d(ts_graph *g, ts_value x, int64_t oh, int64_t ow, const ts_resize_opts *opts);

/* min(max(x, lo), hi) (lo, hi may be -INFINITY / INFINITY, not NaN); the gradient is g where
 * lo <= x <= hi and 0 elsewhere (as PyTorch's clamp). */
TS_API ts_value ts_clip(ts_graph *g, ts_value x, float lo, float hi);
/* max(0, min(1, alpha x + beta)); the gradient is g alpha where 0 < alpha x + beta < 1. */
TS_API ts_value ts_hard_sigmoid(ts_graph *g, ts_value x, float alpha, float beta);
/* x * hard_sigmoid(x, 1/6, 1/2) (MobileNetV3's h-swish). */
TS_API ts_value ts_hard_swish(ts_graph *g, ts_value x);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_GRAPH_OPS_H */
