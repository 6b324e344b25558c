/*
 * attrs.h — the op attributes the OpenCL plugin reads (node->iattr / fattr), until tessera_ops.h
 * publishes them. Each names the src/ops file that defines it; the ops' semantics are there.
 */
#ifndef TS_OCL_ATTRS_H
#define TS_OCL_ATTRS_H

/* Op ids that appear inside attributes (unary_grad i[0], fused_elementwise i[k]): tessera's ids
 * in this build, from the order of src/graph/ops.def (scale is the 6th op). */
enum {
    OCL_OPID_SCALE = 5, OCL_OPID_SQRT, OCL_OPID_EXP, OCL_OPID_LOG, OCL_OPID_RELU, OCL_OPID_TANH,
    OCL_OPID_SIGMOID, OCL_OPID_GELU,
    OCL_OPID_CLIP = 62, OCL_OPID_HARD_SIGMOID, OCL_OPID_HARD_SWISH, /* hard_act_grad i[0] (hardact.c) */
};

/* src/ops/elementwise.c: scale f[0] alpha, f[1] beta; gelu i[0] tanh form; unary_grad i[0]
 * forward op id, i[1] gelu tanh form; cast i[0] target dtype; expand / sum_to i[0..nd-1] shape. */
#define A_GELU_TANH 0
#define A_UGRAD_OP 0
#define A_UGRAD_TANH 1
/* src/ops/fused.c: ni steps; i[k] op id, i[4 + k] tanh flag, i[8 + k] alpha bits | beta bits << 32. */
#define A_FUSED_MAX 4
/* src/ops/matmul.c: i[0] trans_a, i[1] trans_b, i[2] activation (0 none, 1 gelu erf, 2 gelu
 * tanh, 3 relu), i[3] f32 output of bf16 operands; f[0] alpha (0 means 1). */
#define A_MM_TA 0
#define A_MM_TB 1
#define A_MM_ACT 2
#define A_MM_F32OUT 3
/* src/ops/shape.c: transpose i[] perm; slice i[0] axis, i[1] start, i[2] end; slice_grad i[0]
 * axis, i[1] start, i[2] full size; concat i[0] axis. */
/* src/ops/gather.c: gather_grad i[0] = V. */
/* src/ops/reduce.c: i[0] axis bit mask, i[1] keepdims. */
/* src/ops/softmax.c: cross_entropy(_grad) i[0] ignore_index. */
/* src/ops/layernorm.c: f[0] eps. */
/* src/ops/dropout.c: f[0] p, i[0] salt, i[1] graph seed. */

#endif
