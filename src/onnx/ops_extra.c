/*
 * ops_extra.c — the table of the breadth mappings (conformance breadth beyond the core, shape and
 * vision tables): elementwise maths, comparisons and logic (extra_math.c), arg- and other reductions
 * (extra_reduce.c), losses (extra_loss.c), indexing (extra_index.c), layout (extra_layout.c),
 * normalisations (extra_norm.c), recurrent layers (extra_rnn.c), 8-bit quantization (extra_quant.c)
 * and integer convolutions, MaxUnpool, GridSample, RoiAlign (extra_conv.c); their shared
 * declarations are in extra.h. The importer consults this table after ops_core.c's,
 * ops_shape.c's and ops_vision.c's (the first entry that matches a node's op type and opset wins).
 * Each entry spans the opsets (within 9..17) its import function handles, every form of the op
 * in that range (attributes that became inputs and the like).
 */
#include "onnx/extra.h"

const ts_onnx_op ts_onnx_ops_extra[] = {
    /* extra_math.c */
    {"Abs", 9, 17, ex_abs},
    {"Neg", 9, 17, ex_neg},
    {"Floor", 9, 17, ex_floor},
    {"Ceil", 9, 17, ex_ceil},
    {"Round", 11, 17, ex_round},
    {"Sign", 9, 17, ex_sign},
    {"Reciprocal", 9, 17, ex_reciprocal},
    {"Sin", 9, 17, ex_sin},
    {"Cos", 9, 17, ex_cos},
    {"Tan", 9, 17, ex_tan},
    {"Asin", 9, 17, ex_asin},
    {"Acos", 9, 17, ex_acos},
    {"Atan", 9, 17, ex_atan},
    {"Sinh", 9, 17, ex_sinh},
    {"Cosh", 9, 17, ex_cosh},
    {"Asinh", 9, 17, ex_asinh},
    {"Acosh", 9, 17, ex_acosh},
    {"Atanh", 9, 17, ex_atanh},
    {"Erf", 9, 17, ex_erf},
    {"Softplus", 9, 17, ex_softplus},
    {"Softsign", 9, 17, ex_softsign},
    {"Elu", 9, 17, ex_elu},
    {"Selu", 9, 17, ex_selu},
    {"Celu", 12, 17, ex_celu},
    {"LeakyRelu", 9, 17, ex_leaky_relu},
    {"ThresholdedRelu", 10, 17, ex_thresholded_relu},
    {"Shrink", 9, 17, ex_shrink},
    {"PRelu", 9, 17, ex_prelu},
    {"IsNaN", 9, 17, ex_isnan},
    {"IsInf", 10, 17, ex_isinf},
    {"Not", 9, 17, ex_not},
    {"Equal", 9, 17, ex_equal},
    {"Less", 9, 17, ex_less},
    {"LessOrEqual", 12, 17, ex_less_equal},
    {"Greater", 9, 17, ex_greater},
    {"GreaterOrEqual", 12, 17, ex_greater_equal},
    {"And", 9, 17, ex_and},
    {"Or", 9, 17, ex_or},
    {"Xor", 9, 17, ex_xor},
    {"Mod", 10, 17, ex_mod},
    {"BitShift", 11, 17, ex_bitshift},
    {"Max", 9, 17, ex_max},
    {"Min", 9, 17, ex_min},
    {"Sum", 9, 17, ex_sum},
    {"Mean", 9, 17, ex_mean},
    /* extra_reduce.c */
    {"ArgMax", 9, 17, ex_argmax},
    {"ArgMin", 9, 17, ex_argmin},
    {"Hardmax", 9, 17, ex_hardmax},
    {"ReduceL1", 9, 17, ex_reduce_l1},
    {"ReduceL2", 9, 17, ex_reduce_l2},
    {"ReduceLogSum", 9, 17, ex_reduce_log_sum},
    {"ReduceLogSumExp", 9, 17, ex_reduce_log_sum_exp},
    {"ReduceSumSquare", 9, 17, ex_reduce_sum_square},
    {"ReduceMin", 9, 17, ex_reduce_min},
    {"ReduceProd", 9, 17, ex_reduce_prod},
    {"Det", 11, 17, ex_det},
    {"DFT", 17, 17, ex_dft},
    /* extra_loss.c */
    {"NegativeLogLikelihoodLoss", 12, 17, ex_nll_loss},
    {"SoftmaxCrossEntropyLoss", 12, 17, ex_softmax_cross_entropy},
    /* extra_index.c */
    {"Trilu", 14, 17, ex_trilu},
    {"GatherElements", 11, 17, ex_gather_elements},
    {"ScatterElements", 11, 17, ex_scatter_elements},
    {"Scatter", 9, 10, ex_scatter_elements},
    {"GatherND", 11, 17, ex_gather_nd},
    {"ScatterND", 11, 17, ex_scatter_nd},
    {"TopK", 10, 17, ex_topk},
    {"OneHot", 9, 17, ex_one_hot},
    {"Compress", 9, 17, ex_compress},
    {"ReverseSequence", 10, 17, ex_reverse_sequence},
    {"NonZero", 9, 17, ex_nonzero},
    {"TfIdfVectorizer", 9, 17, ex_tfidf},
    /* extra_layout.c */
    {"Tile", 9, 17, ex_tile},
    {"Pad", 9, 17, ex_pad},
    {"DepthToSpace", 9, 17, ex_depth_to_space},
    {"SpaceToDepth", 9, 17, ex_space_to_depth},
    {"CastLike", 15, 17, ex_cast_like},
    {"EyeLike", 9, 17, ex_eye_like},
    /* extra_norm.c */
    {"LRN", 9, 17, ex_lrn},
    {"InstanceNormalization", 9, 17, ex_instance_norm},
    {"MeanVarianceNormalization", 9, 17, ex_mvn},
    /* extra_rnn.c */
    {"RNN", 9, 17, ex_rnn},
    {"GRU", 9, 17, ex_gru},
    {"LSTM", 9, 17, ex_lstm},
    /* extra_quant.c */
    {"QuantizeLinear", 10, 17, ex_quantize_linear},
    {"DequantizeLinear", 10, 17, ex_dequantize_linear},
    {"DynamicQuantizeLinear", 11, 17, ex_dynamic_quantize_linear},
    {"MatMulInteger", 10, 17, ex_matmul_integer},
    {"QLinearMatMul", 10, 17, ex_qlinear_matmul},
    /* extra_conv.c */
    {"ConvInteger", 10, 17, ex_conv_integer},
    {"QLinearConv", 10, 17, ex_qlinear_conv},
    {"MaxUnpool", 11, 17, ex_max_unpool},
    {"GridSample", 16, 17, ex_grid_sample},
    {"RoiAlign", 10, 17, ex_roi_align},
    {NULL, 0, 0, NULL}, /* the end (not counted) */
};
const int ts_onnx_ops_extra_n = (int)(sizeof ts_onnx_ops_extra / sizeof *ts_onnx_ops_extra) - 1;
