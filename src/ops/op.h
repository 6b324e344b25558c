/*
 * op.h — what the op family files of src/ops/ share: the op contract (graph/opdef.h: op ids,
 * ts_op_def, the table) and the helpers they call. Each family file defines the ts_op_def of the
 * ops it holds; ops are listed once, in graph/ops.def. Adding an op family is local: add its
 * lines to graph/ops.def and a new file here.
 */
#ifndef TS_OP_H
#define TS_OP_H

#include "graph/opdef.h"

/* Helpers for op files. */
/* Input k of node n is a rank-0 f32 value, else TS_ERR_SHAPE naming the op and `what` (optim.c). */
ts_status ts_need_scalar(const ts_graph *g, const ts_node *n, int k, const char *what);
/* Sum gradient g (shape of a broadcast result) down to the shape of value `like`. */
ts_value ts_sum_to(ts_graph *g, ts_value grad, ts_value like);
/* s[c] = sum over r of x[r, c] for x [R, C] (sum_to's leading case, ops/elementwise.c), in an
 * order that depends on R alone; and, when y is not NULL, y = x cast to `cast` (TS_BF16 or TS_F16)
 * in the same pass (cast_sum_to, ops/cast_sum.c). scratch: ts_sum_rows_scratch(R, C) bytes. */
void ts_sum_rows(const float *x, int64_t R, int64_t C, float *s, float *scratch, uint16_t *y, ts_dtype cast);
size_t ts_sum_rows_scratch(int64_t R, int64_t C);
/* y = f(x) for a unary op (scale sqrt exp log relu tanh sigmoid gelu), n elements; the
 * evaluator of those ops (ops/elementwise.c), shared with fused chains. */
void ts_unary_f32(int op, int tanh_form, float alpha, float beta, const float *x, float *y, int64_t n);
/* Encode the steps of unary/fused node `first` followed by `second` (NULL: none) into one
 * fused_elementwise attribute set with an f32 result; 0 when the chain would be too long or
 * either is a fused node storing bf16 (ops/fused.c). */
int ts_fused_merge(const ts_node *first, const ts_node *second, ts_attrs *out);
/* conv2d's fused epilogue (ops/conv.c, attributes i[9], i[10]): 1 when node n is a conv2d (or a
 * conv2d_i8) with one; ts_conv_epilogue applies it to count outputs y in place (nothing for other nodes). */
int ts_conv_has_epilogue(const ts_node *n);
void ts_conv_epilogue(const ts_node *n, float *y, int64_t count);

/* Dynamic int8 quantization (ops/matmul_int8.c, shared with the CPU kernel): max |x[i]| over n
 * floats (NaN when one is not finite); q[i] = clamp(round-to-nearest-even(x[i] * inv), -127, 127);
 * a weight w [K, N] (stored [N, K] when trans_b) quantized per output channel n into qw (w's
 * layout) with sw[n] = max_k |w[k, n]| / 127 (NaN for a channel with a non-finite weight). */
float ts_quant_absmax(const float *x, int64_t n);
void ts_quant_s8(const float *x, int64_t n, float inv, int8_t *q);
ts_status ts_quant_weights_s8(const float *w, int64_t K, int64_t N, int trans_b, int8_t *qw, float *sw);
/* 1 when node n of g is a matmul that can run as matmul_i8dyn (ops/matmul_int8.c): f32 operands
 * and bias, no trans_a, an f32 product, a weight (input 1) that is a parameter or constant of rank
 * 2, K within the op's int32 bound. The quantization pass (graph/passes/quantize.c) rewrites these,
 * calibration (runtime/calib.c) observes their input 0, the QDQ export (onnx/export) writes them. */
int ts_quantizable_node(const ts_graph *g, const ts_node *n);
/* The activations' scale sa and its inverse ia (the multiplier ts_quant_s8 takes) for x (n floats):
 * a_scale > 0 (static quantization): sa = a_scale, ia = 1 / a_scale, x not read; 0 (dynamic):
 * sa = max |x| / 127, ia = 127 / max |x| (0 when x is all zeros). */
void ts_quant_act_scale(const float *x, int64_t n, float a_scale, float *sa, float *ia);
/* conv2d_i8's activation scale (ops/conv_int8.c) for node n over x [count]: its attribute a_scale
 * when > 0, else max |x| / 127; *inv = the factor that quantizes (1 / scale, 0 for a zero max). */
float ts_conv_i8_act_scale(const ts_node *n, const float *x, int64_t count, float *inv);
/* 1 when value v is a parameter or a constant, or a reshape of one (ONNX's Conv1d weights reach
 * conv2d through a reshape): its contents change only when a weight is written (ops/conv_int8.c;
 * the quantization pass and the CPU kernel of conv2d_i8 ask it). */
int ts_fixed_weight(const ts_graph *g, int v);

/* ts_attention with the dropout's salt given (ops/attention.c): the fusion pass passes the salt
 * of the dropout it replaces, so the fused node drops what the unfused graph dropped. */
ts_value ts_attention_node(ts_graph *g, ts_value q, ts_value k, ts_value v, ts_value mask, float scale, float dropout_p,
                           int layout, ts_dtype compute, int64_t salt);

/* A message-prefix helper: infer functions write "op 'add': ..." via this. */
#define TS_OPERR(g, n, code, ...) ts_err(code, __VA_ARGS__)

#endif
