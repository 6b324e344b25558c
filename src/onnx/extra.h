/*
 * extra.h — what the breadth mappings (extra_*.c, tabled in ops_extra.c) share: their import
 * functions, and small helpers for axes, constants and host tensors on top of onnx_imp.h.
 */
#ifndef TS_ONNX_EXTRA_H
#define TS_ONNX_EXTRA_H

#include "onnx/onnx_imp.h"

/* Axis a normalised against rank r (a in [-r, r - 1]); -1 after refusing the node as invalid. */
int ex_axis(ts_onnx_ctx *cx, const ts_onnx_node *n, int64_t a, int r, const char *what);
/* A graph constant holding a copy of data (dtype dt, shape nd / sh). */
ts_value ex_const(ts_graph *g, ts_dtype dt, int nd, const int64_t *sh, const void *data);
/* A rank-0 constant of dtype dt holding v (converted as onnx_put_f64 does). */
ts_value ex_scalar(ts_graph *g, ts_dtype dt, double v);
/* 1 when d is f32, i32, i64 or u8: the dtypes tessera's ts_binary takes. */
int ex_binary_dtype(ts_dtype d);
/* Refuse a node whose input k has a zero dim (tessera values are never empty). */
ts_status ex_need_nonempty(ts_onnx_ctx *cx, const ts_onnx_node *n, int k);

/* extra_math.c: elementwise maths, comparisons, logic, variadic Max / Min / Sum / Mean. */
ts_status ex_abs(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_neg(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_floor(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_ceil(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_round(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_sign(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_reciprocal(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_sin(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_cos(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_tan(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_asin(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_acos(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_atan(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_sinh(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_cosh(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_asinh(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_acosh(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_atanh(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_erf(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_softplus(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_softsign(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_elu(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_selu(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_celu(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_leaky_relu(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_thresholded_relu(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_shrink(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_prelu(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_isnan(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_isinf(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_not(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_equal(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_less(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_less_equal(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_greater(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_greater_equal(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_and(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_or(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_xor(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_mod(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_bitshift(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_max(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_min(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_sum(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_mean(ts_onnx_ctx *, const ts_onnx_node *);

/* extra_reduce.c: ArgMax / ArgMin, Hardmax, the reductions beyond the core's, Det, DFT. */
ts_status ex_argmax(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_argmin(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_hardmax(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_reduce_l1(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_reduce_l2(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_reduce_log_sum(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_reduce_log_sum_exp(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_reduce_sum_square(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_reduce_min(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_reduce_prod(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_det(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_dft(ts_onnx_ctx *, const ts_onnx_node *);

/* extra_loss.c: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. */
ts_status ex_nll_loss(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_softmax_cross_entropy(ts_onnx_ctx *, const ts_onnx_node *);

/* extra_index.c: element-wise and N-d indexing, TopK, OneHot, Compress, ReverseSequence, NonZero,
 * TfIdfVectorizer. */
ts_status ex_trilu(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_gather_elements(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_scatter_elements(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_gather_nd(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_scatter_nd(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_topk(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_one_hot(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_compress(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_reverse_sequence(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_nonzero(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_tfidf(ts_onnx_ctx *, const ts_onnx_node *);

/* extra_layout.c: Tile, Pad, DepthToSpace, SpaceToDepth, CastLike, EyeLike. */
ts_status ex_tile(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_pad(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_depth_to_space(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_space_to_depth(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_cast_like(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_eye_like(ts_onnx_ctx *, const ts_onnx_node *);

/* extra_norm.c: LRN, InstanceNormalization, MeanVarianceNormalization. */
ts_status ex_lrn(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_instance_norm(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_mvn(ts_onnx_ctx *, const ts_onnx_node *);

/* extra_rnn.c: RNN, GRU, LSTM (unrolled). */
ts_status ex_rnn(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_gru(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_lstm(ts_onnx_ctx *, const ts_onnx_node *);

/* extra_quant.c: 8-bit quantization. */
ts_status ex_quantize_linear(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_dequantize_linear(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_dynamic_quantize_linear(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_matmul_integer(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_qlinear_matmul(ts_onnx_ctx *, const ts_onnx_node *);

/* extra_conv.c: ConvInteger, QLinearConv, MaxUnpool, GridSample, RoiAlign. */
ts_status ex_conv_integer(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_qlinear_conv(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_max_unpool(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_grid_sample(ts_onnx_ctx *, const ts_onnx_node *);
ts_status ex_roi_align(ts_onnx_ctx *, const ts_onnx_node *);

#endif
