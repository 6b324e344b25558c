/*
 * arity.c — how many leading inputs ONNX requires of each op (the operator specifications of
 * opsets 9-17): the importer refuses a node that leaves one of them out before any mapping reads
 * it. An entry holds from its opset until the next entry of the same op.
 */
#include "onnx/onnx_imp.h"

static const struct {
    const char *op;
    int since, n;
} arity[] = {
    {"Abs", 1, 1}, {"Acos", 1, 1}, {"Acosh", 1, 1}, {"Add", 1, 2}, {"And", 1, 2}, {"ArgMax", 1, 1}, {"ArgMin", 1, 1},
    {"Asin", 1, 1}, {"Asinh", 1, 1}, {"Atan", 1, 1}, {"Atanh", 1, 1}, {"AveragePool", 1, 1},
    {"BatchNormalization", 1, 5}, {"Bernoulli", 1, 1}, {"BitShift", 1, 2}, {"BlackmanWindow", 1, 1}, {"Cast", 1, 1},
    {"CastLike", 1, 2}, {"Ceil", 1, 1}, {"Celu", 1, 1}, {"Clip", 1, 1}, {"Compress", 1, 2}, {"Concat", 1, 1},
    {"Constant", 1, 0}, {"ConstantOfShape", 1, 1}, {"Conv", 1, 2}, {"ConvInteger", 1, 2}, {"ConvTranspose", 1, 2},
    {"Cos", 1, 1}, {"Cosh", 1, 1}, {"CumSum", 1, 2}, {"DFT", 1, 1}, {"DepthToSpace", 1, 1}, {"DequantizeLinear", 1, 2},
    {"Det", 1, 1}, {"Div", 1, 2}, {"Dropout", 1, 1}, {"DynamicQuantizeLinear", 1, 1}, {"Einsum", 1, 1}, {"Elu", 1, 1},
    {"Equal", 1, 2}, {"Erf", 1, 1}, {"Exp", 1, 1}, {"Expand", 1, 2}, {"EyeLike", 1, 1}, {"Flatten", 1, 1},
    {"Floor", 1, 1}, {"GRU", 1, 3}, {"Gather", 1, 2}, {"GatherElements", 1, 2}, {"GatherND", 1, 2}, {"Gemm", 1, 2},
    {"GlobalAveragePool", 1, 1}, {"GlobalLpPool", 1, 1}, {"GlobalMaxPool", 1, 1}, {"Greater", 1, 2},
    {"GreaterOrEqual", 1, 2}, {"GridSample", 1, 2}, {"HammingWindow", 1, 1}, {"HannWindow", 1, 1},
    {"HardSigmoid", 1, 1}, {"HardSwish", 1, 1}, {"Hardmax", 1, 1}, {"Identity", 1, 1},
    {"InstanceNormalization", 1, 3}, {"IsInf", 1, 1}, {"IsNaN", 1, 1}, {"LRN", 1, 1}, {"LSTM", 1, 3},
    {"LayerNormalization", 1, 2}, {"LeakyRelu", 1, 1}, {"Less", 1, 2}, {"LessOrEqual", 1, 2}, {"Log", 1, 1},
    {"LogSoftmax", 1, 1}, {"LpNormalization", 1, 1}, {"LpPool", 1, 1}, {"MatMul", 1, 2}, {"MatMulInteger", 1, 2},
    {"Max", 1, 1}, {"MaxPool", 1, 1}, {"MaxRoiPool", 1, 2}, {"MaxUnpool", 1, 2}, {"Mean", 1, 1},
    {"MeanVarianceNormalization", 1, 1}, {"MelWeightMatrix", 1, 5}, {"Min", 1, 1}, {"Mod", 1, 2}, {"Mul", 1, 2},
    {"Multinomial", 1, 1}, {"Neg", 1, 1}, {"NegativeLogLikelihoodLoss", 1, 2}, {"NonMaxSuppression", 1, 2},
    {"NonZero", 1, 1}, {"Not", 1, 1}, {"OneHot", 1, 3}, {"Or", 1, 2}, {"PRelu", 1, 2}, {"Pad", 1, 1}, {"Pad", 11, 2},
    {"Pow", 1, 2}, {"QLinearConv", 1, 8}, {"QLinearMatMul", 1, 8}, {"QuantizeLinear", 1, 2}, {"RNN", 1, 3},
    {"RandomNormalLike", 1, 1}, {"RandomUniformLike", 1, 1}, {"Range", 1, 3}, {"Reciprocal", 1, 1},
    {"ReduceL1", 1, 1}, {"ReduceL2", 1, 1}, {"ReduceLogSum", 1, 1}, {"ReduceLogSumExp", 1, 1}, {"ReduceMax", 1, 1},
    {"ReduceMean", 1, 1}, {"ReduceMin", 1, 1}, {"ReduceProd", 1, 1}, {"ReduceSum", 1, 1}, {"ReduceSumSquare", 1, 1},
    {"Relu", 1, 1}, {"Reshape", 5, 2}, {"Resize", 10, 2}, {"Resize", 11, 3}, {"Resize", 13, 1},
    {"ReverseSequence", 1, 2}, {"RoiAlign", 1, 3}, {"Round", 1, 1}, {"STFT", 1, 2}, {"Scatter", 1, 3},
    {"ScatterElements", 1, 3}, {"ScatterND", 1, 3}, {"Selu", 1, 1}, {"Shape", 1, 1}, {"Shrink", 1, 1},
    {"Sigmoid", 1, 1}, {"Sign", 1, 1}, {"Sin", 1, 1}, {"Sinh", 1, 1}, {"Size", 1, 1}, {"Slice", 1, 1},
    {"Slice", 10, 3}, {"Softmax", 1, 1}, {"SoftmaxCrossEntropyLoss", 1, 2}, {"Softplus", 1, 1}, {"Softsign", 1, 1},
    {"SpaceToDepth", 1, 1}, {"Split", 1, 1}, {"Sqrt", 1, 1}, {"Squeeze", 1, 1}, {"Sub", 1, 2}, {"Sum", 1, 1},
    {"Tan", 1, 1}, {"Tanh", 1, 1}, {"ThresholdedRelu", 1, 1}, {"Tile", 1, 2}, {"TopK", 1, 1}, {"TopK", 10, 2},
    {"Transpose", 1, 1}, {"Trilu", 1, 1}, {"Unique", 1, 1}, {"Unsqueeze", 1, 1}, {"Unsqueeze", 13, 2},
    {"Upsample", 9, 2}, {"Where", 1, 3}, {"Xor", 1, 2},
};

int onnx_required_inputs(const char *op_type, int opset) {
    int n = 0, best = -1;
    for (size_t i = 0; i < sizeof arity / sizeof *arity; i++)
        if (!strcmp(arity[i].op, op_type) && arity[i].since <= opset && arity[i].since > best) {
            best = arity[i].since;
            n = arity[i].n;
        }
    return n;
}
