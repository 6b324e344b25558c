/*
 * export.c — ts_onnx_export: the forward graph that computes some named values of a tessera graph,
 * written as an ONNX model (opset 17, the default domain).
 *
 * What is exported: the nodes the requested outputs depend on (a backward or optimizer node among
 * them is an error), the graph's inputs they read (graph inputs with their dtype and static
 * shape), parameters (initializers holding their current values in the compiled program) and
 * constants (initializers), and the outputs under their names. Export the graph as the user built
 * it: the compiler's fusion works on its own copy, so a user's graph holds no fused nodes (a
 * fused_elementwise node is exported step by step all the same).
 *
 * Op by op (x, y: input, output; c(v): an f32 scalar initializer; ints: an int64 initializer):
 *   add sub mul div pow         Add Sub Mul Div Pow (both broadcast like numpy)
 *   sqrt exp log relu tanh sigmoid   Sqrt Exp Log Relu Tanh Sigmoid
 *   scale (alpha x + beta)      Mul(x, c(alpha)), Add(., c(beta)) (each left out when trivial)
 *   gelu, erf form              Mul(x, c(1/sqrt 2)) Erf Add(., c(1)) Mul(x, .) Mul(., c(0.5)) —
 *                               opset 17 has no Gelu (it came in opset 20)
 *   gelu, tanh form             0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in Mul/Add/Tanh
 *   matmul(a, b, bias?)         Transpose (last two dims) of a transposed operand, MatMul (its
 *                               batch dims broadcast as tessera's), Mul(., c(alpha)) when
 *                               alpha != 1, Add(., bias) when there is one, then its fused
 *                               activation (attr i[2], set only by compile-time fusion, so a
 *                               user's graph has none) as gelu / Relu below
 *   reshape / expand            Reshape(x, ints) (allowzero = 1 when a dim is 0) / Expand(x, ints)
 *   transpose                   Transpose(perm)
 *   slice(axis, start, end)     Slice(x, starts, ends, axes)
 *   concat                      Concat(axis)
 *   gather(table, indices)      Gather(axis 0)
 *   reduce_sum / mean / max     ReduceSum(x, axes) / ReduceMean / ReduceMax (axes attribute in
 *                               opset 17), keepdims as tessera's
 *   softmax(x, mask?)           Add(x, mask) when there is a mask, Softmax(axis -1)
 *   log_softmax                 LogSoftmax(axis -1)
 *   layer_norm(x, g?, b?)       LayerNormalization(axis -1, epsilon) (an absent gamma: ones)
 *   where(cond u8, a, b)        Cast(cond, BOOL), Where
 *   cast                        Cast(to)
 *   dropout                     Identity (an exported model infers)
 *   fused_elementwise           its steps, each as above
 *   conv2d / conv_transpose2d   Conv / ConvTranspose (kernel_shape, strides, pads in the same
 *                               order top, left, bottom, right, dilations, group; output_padding)
 *   max_pool2d / avg_pool2d     MaxPool (with dilations) / AveragePool (count_include_pad),
 *                               kernel_shape, strides, pads, ceil_mode
 *   clip, hard_sigmoid, hard_swish   Clip(x, lo, hi) (an infinite bound left out), HardSigmoid,
 *                               HardSwish
 * Any other op (a loss, resize2d, a gradient op) is an error listing every such op at once.
 *
 * With ts_onnx_export_opts.dynamic_batch, B (the first dim of the first input) becomes ONNX's
 * symbolic "batch": the first dim of every input and output (each must be B), a Reshape's first
 * target dim 0 ("copy", its input's first dim being B too) or -1 (B merged into it), an Expand's 1
 * (broadcast keeps the input's B); a Slice or Concat along dim 0 of a batch is an error, as is a
 * Reshape or Expand that makes the batch from something else. With int64_inputs an int32 input is
 * declared INT64 (as Hugging Face's exports declare token ids) and Cast to INT32 inside.
 *
 * ts_onnx_export_qdq: the same, except that each matmul ts_compile's TS_QUANT_STATIC would make int8
 * (f32 operands, no trans_a, a weight b of rank 2 that is a parameter or constant named in the
 * scales list) is written in QDQ form (export_qdq.c): QuantizeLinear / DequantizeLinear on its
 * activations with the listed scale, its weight as INT8 per output channel with DequantizeLinear,
 * then MatMul and the rest as above. A weight read only by such matmuls is not written in f32.
 */
#include <math.h>
#include <stdio.h>

#include "onnx/export/export_pb.h"
#include "onnx/onnx_imp.h" /* onnx_type_of */
#include "ops/op.h"

#define OPSET 17
#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

typedef struct exporter {
    const ts_graph *g;
    const ts_program *p;
    ts_ox b;
    const char **names; /* ONNX name of each value id, made on first use */
    const ts_quant_scale *scales; /* ts_onnx_export_qdq's activation scales, by weight name */
    int nscales;
    int dynamic;        /* ts_onnx_export_dynamic_int8 */
    int64_t batch;      /* dynamic_batch: the batch size B made symbolic (0: every shape static) */
    int int64_inputs;   /* int32 inputs declared INT64 */
    ts_status st;       /* the first error while emitting nodes */
} exporter;

/* The ONNX name of value v: its tessera name, or a fresh one. */
static const char *vname(exporter *e, int v) {
    if (!e->names[v]) {
        const char *n = e->g->vals[v].name;
        e->names[v] = n ? n : ts_ox_fresh(&e->b, "v");
    }
    return e->names[v];
}

static const char *tmp(exporter *e) { return ts_ox_fresh(&e->b, "t"); }

static int exportable(int op) {
    switch (op) {
    case TS_OP_ADD: case TS_OP_SUB: case TS_OP_MUL: case TS_OP_DIV: case TS_OP_POW:
    case TS_OP_SCALE: case TS_OP_SQRT: case TS_OP_EXP: case TS_OP_LOG: case TS_OP_RELU:
    case TS_OP_TANH: case TS_OP_SIGMOID: case TS_OP_GELU: case TS_OP_WHERE: case TS_OP_CAST:
    case TS_OP_EXPAND: case TS_OP_RESHAPE: case TS_OP_TRANSPOSE: case TS_OP_SLICE: case TS_OP_CONCAT:
    case TS_OP_GATHER: case TS_OP_REDUCE_SUM: case TS_OP_REDUCE_MEAN: case TS_OP_REDUCE_MAX:
    case TS_OP_SOFTMAX: case TS_OP_LOG_SOFTMAX: case TS_OP_LAYER_NORM: case TS_OP_DROPOUT:
    case TS_OP_MATMUL: case TS_OP_FUSED_ELEMENTWISE: case TS_OP_CONV2D: case TS_OP_CONV_TRANSPOSE2D:
    case TS_OP_MAX_POOL2D: case TS_OP_AVG_POOL2D: case TS_OP_CLIP: case TS_OP_HARD_SIGMOID: case TS_OP_HARD_SWISH:
        return 1;
    default:
        return 0;
    }
}

/* ------------------------------------------------------------------ elementwise */

/* y = alpha x + beta, leaving out a multiplication by 1 and an addition of 0. */
static void emit_scale(exporter *e, float alpha, float beta, const char *x, const char *y) {
    ts_ox *b = &e->b;
    if (alpha == 1.f && beta == 0.f) ts_ox_node1(b, "Identity", x, y);
    else if (beta == 0.f) ts_ox_node2(b, "Mul", x, ts_ox_const_f32(b, alpha), y);
    else if (alpha == 1.f) ts_ox_node2(b, "Add", x, ts_ox_const_f32(b, beta), y);
    else {
        const char *t = tmp(e);
        ts_ox_node2(b, "Mul", x, ts_ox_const_f32(b, alpha), t);
        ts_ox_node2(b, "Add", t, ts_ox_const_f32(b, beta), y);
    }
}

/* GELU as tessera computes it: erf form 0.5 x (1 + erf(x / sqrt 2)), or the tanh form. */
static void emit_gelu(exporter *e, int tanh_form, const char *x, const char *y) {
    ts_ox *b = &e->b;
    const char *inner = tmp(e), *t = tmp(e), *one_plus = tmp(e), *xs = tmp(e);
    if (tanh_form) { /* tanh(sqrt(2/pi) (x + 0.044715 x^3)) */
        const char *x2 = tmp(e), *x3 = tmp(e), *cx3 = tmp(e), *sum = tmp(e);
        ts_ox_node2(b, "Mul", x, x, x2);
        ts_ox_node2(b, "Mul", x2, x, x3);
        ts_ox_node2(b, "Mul", x3, ts_ox_const_f32(b, 0.044715f), cx3);
        ts_ox_node2(b, "Add", x, cx3, sum);
        ts_ox_node2(b, "Mul", sum, ts_ox_const_f32(b, (float)sqrt(2.0 / M_PI)), inner);
        ts_ox_node1(b, "Tanh", inner, t);
    } else { /* erf(x / sqrt 2) */
        ts_ox_node2(b, "Mul", x, ts_ox_const_f32(b, (float)(1.0 / sqrt(2.0))), inner);
        ts_ox_node1(b, "Erf", inner, t);
    }
    ts_ox_node2(b, "Add", t, ts_ox_const_f32(b, 1.f), one_plus);
    ts_ox_node2(b, "Mul", x, one_plus, xs);
    ts_ox_node2(b, "Mul", xs, ts_ox_const_f32(b, 0.5f), y);
}

/* One unary op of tessera's elementwise family (also a step of a fused chain). */
static void emit_unary(exporter *e, int op, int tanh_form, float alpha, float beta, const char *x, const char *y) {
    static const struct {
        int op;
        const char *onnx;
    } plain[] = {{TS_OP_SQRT, "Sqrt"}, {TS_OP_EXP, "Exp"},   {TS_OP_LOG, "Log"},
                 {TS_OP_RELU, "Relu"}, {TS_OP_TANH, "Tanh"}, {TS_OP_SIGMOID, "Sigmoid"}};
    if (op == TS_OP_SCALE) return emit_scale(e, alpha, beta, x, y);
    if (op == TS_OP_GELU) return emit_gelu(e, tanh_form, x, y);
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (plain[i].op == op) ts_ox_node1(&e->b, plain[i].onnx, x, y);
}

/* The steps of a fused_elementwise node (encoding in ops/fused.c). */
static void emit_fused(exporter *e, const ts_node *n, const char *x, const char *y) {
    int steps = n->attr.ni;
    const char *cur = x;
    for (int k = 0; k < steps; k++) {
        uint64_t bits = (uint64_t)n->attr.i[8 + k];
        uint32_t lo = (uint32_t)bits, hi = (uint32_t)(bits >> 32);
        float alpha, beta;
        memcpy(&alpha, &lo, 4);
        memcpy(&beta, &hi, 4);
        const char *next = k == steps - 1 && n->attr.f[0] == 0.f ? y : tmp(e);
        emit_unary(e, (int)n->attr.i[k], (int)n->attr.i[4 + k], alpha, beta, cur, next);
        cur = next;
    }
    if (n->attr.f[0] != 0.f) /* the result stored in bf16 */
        ts_ox_attr_int(&e->b, ts_ox_node1(&e->b, "Cast", cur, y), "to", onnx_type_of(TS_BF16));
}

/* ------------------------------------------------------------------ matmul */

/* x with its last two dims swapped. */
static const char *swap_last(exporter *e, int v) {
    int nd = e->g->vals[v].ndim;
    int64_t perm[TS_MAX_DIMS];
    for (int i = 0; i < nd; i++) perm[i] = i;
    perm[nd - 2] = nd - 1;
    perm[nd - 1] = nd - 2;
    const char *t = tmp(e);
    ts_ox_attr_ints(&e->b, ts_ox_node1(&e->b, "Transpose", vname(e, v), t), "perm", nd, perm);
    return t;
}

/* How matmul n is written: in QDQ form with its calibrated activation scale (> 0), in ONNX Runtime's
 * dynamic int8 form (-1), or in f32 (0): the matmuls ts_compile's quantization pass makes int8
 * (ts_quantizable_node) whose weight has a name, and for QDQ a listed one. */
static float qdq_scale(const exporter *e, const ts_node *n) {
    if ((!e->nscales && !e->dynamic) || !ts_quantizable_node(e->g, n)) return 0.f;
    const ts_val *b = &e->g->vals[n->in[1]];
    if (!b->name) return 0.f;
    if (e->dynamic) return -1.f;
    for (int i = 0; i < e->nscales; i++)
        if (e->scales[i].weight && !strcmp(e->scales[i].weight, b->name)) return e->scales[i].scale;
    return 0.f;
}

/* The int8 weight of a QDQ matmul (x NULL; its name returned), or y = the product x w in the
 * dynamic form (y returned): w is value v (a parameter, read from the program, or a constant). */
static const char *qdq_weight(exporter *e, int v, int trans_b, const char *x, const char *y) {
    const ts_val *val = &e->g->vals[v];
    ts_tensor *t = NULL;
    const float *w = val->kind == TS_V_CONST ? ((const ts_tensor *)val->data)->data : NULL;
    if (!w) {
        if (ts_program_get_param(e->p, val->name, &t) != TS_OK) {
            e->st = ts_err(ts_last_status(), "ts_onnx_export_qdq: parameter '%s' is not in the program: %s",
                           val->name, ts_last_error());
            return NULL;
        }
        w = t->data;
    }
    int64_t K = val->shape[trans_b ? 1 : 0], N = val->shape[trans_b ? 0 : 1];
    const char *out = NULL;
    ts_status s = x ? ts_ox_dyn_matmul(&e->b, x, val->name, w, K, N, trans_b, y)
                    : ts_ox_qdq_weight(&e->b, val->name, w, K, N, trans_b, &out);
    if (x && !s) out = y;
    if (s && !e->st) e->st = s;
    ts_tensor_free(t);
    return out;
}

static void emit_matmul(exporter *e, const ts_node *n, const char *y) {
    float alpha = n->attr.f[0] == 0.f ? 1.f : n->attr.f[0], sa = qdq_scale(e, n);
    int has_bias = n->nin > 2 && n->in[2] >= 0;
    int64_t act = n->attr.i[2]; /* 1 gelu erf, 2 gelu tanh, 3 relu (ops/matmul.c) */
    int f32_out = n->attr.i[3] != 0; /* bf16 operands, f32 product: MatMul in f32 on widened operands */
    const char *out = y;
    if (act) y = tmp(e);
    const char *a = NULL, *b = NULL;
    if (sa > 0.f) {
        a = ts_ox_qdq_act(&e->b, vname(e, n->in[0]), sa);
        b = qdq_weight(e, n->in[1], n->attr.i[1] != 0, NULL, NULL);
        if (!a || !b) return;
    } else if (sa == 0.f) {
        a = n->attr.i[0] ? swap_last(e, n->in[0]) : vname(e, n->in[0]);
        b = n->attr.i[1] ? swap_last(e, n->in[1]) : vname(e, n->in[1]);
    }
    if (f32_out) {
        const char *wa = tmp(e), *wb = tmp(e);
        ts_ox_attr_int(&e->b, ts_ox_node1(&e->b, "Cast", a, wa), "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        ts_ox_attr_int(&e->b, ts_ox_node1(&e->b, "Cast", b, wb), "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        a = wa, b = wb;
    }
    const char *prod = alpha != 1.f || has_bias ? tmp(e) : y;
    if (sa < 0.f && !qdq_weight(e, n->in[1], n->attr.i[1] != 0, vname(e, n->in[0]), prod)) return;
    if (sa >= 0.f) ts_ox_node2(&e->b, "MatMul", a, b, prod);
    if (alpha != 1.f) {
        const char *scaled = has_bias ? tmp(e) : y;
        ts_ox_node2(&e->b, "Mul", prod, ts_ox_const_f32(&e->b, alpha), scaled);
        prod = scaled;
    }
    const char *bias = has_bias ? vname(e, n->in[2]) : NULL;
    if (has_bias && f32_out && e->g->vals[n->in[2]].dtype != TS_F32) {
        const char *wc = tmp(e);
        ts_ox_attr_int(&e->b, ts_ox_node1(&e->b, "Cast", bias, wc), "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        bias = wc;
    }
    if (has_bias) ts_ox_node2(&e->b, "Add", prod, bias, y);
    if (act) emit_unary(e, act == 3 ? TS_OP_RELU : TS_OP_GELU, act == 2, 0.f, 0.f, y, out);
}

/* ------------------------------------------------------------------ vision */

/* conv2d / conv_transpose2d: attributes i[0..1] strides, i[2..5] pads (top, left, bottom, right,
 * ONNX's order too), i[6..7] dilations, i[8] groups, i[9..10] output padding (ops/conv.c). */
static void emit_conv(exporter *e, const ts_node *n, const char *x, const char *y) {
    const int64_t *a = n->attr.i;
    const ts_val *w = &e->g->vals[n->in[1]];
    const char *in[3] = {x, vname(e, n->in[1]), n->nin > 2 && n->in[2] >= 0 ? vname(e, n->in[2]) : NULL};
    int transpose = n->op == TS_OP_CONV_TRANSPOSE2D;
    Onnx__NodeProto *node = ts_ox_node(&e->b, transpose ? "ConvTranspose" : "Conv", in[2] ? 3 : 2, in, 1, &y);
    ts_ox_attr_ints(&e->b, node, "kernel_shape", 2, &w->shape[2]);
    ts_ox_attr_ints(&e->b, node, "strides", 2, &a[0]);
    ts_ox_attr_ints(&e->b, node, "pads", 4, &a[2]);
    ts_ox_attr_ints(&e->b, node, "dilations", 2, &a[6]);
    ts_ox_attr_int(&e->b, node, "group", a[8]);
    if (transpose) ts_ox_attr_ints(&e->b, node, "output_padding", 2, &a[9]);
}

/* max_pool2d / avg_pool2d: i[0..1] kernel, i[2..3] strides, i[4..7] pads, i[8..9] dilations
 * (max), i[10] ceil_mode, i[11] count_include_pad (avg) (ops/pool.c). */
static void emit_pool(exporter *e, const ts_node *n, const char *x, const char *y) {
    const int64_t *a = n->attr.i;
    int is_max = n->op == TS_OP_MAX_POOL2D;
    Onnx__NodeProto *node = ts_ox_node1(&e->b, is_max ? "MaxPool" : "AveragePool", x, y);
    ts_ox_attr_ints(&e->b, node, "kernel_shape", 2, &a[0]);
    ts_ox_attr_ints(&e->b, node, "strides", 2, &a[2]);
    ts_ox_attr_ints(&e->b, node, "pads", 4, &a[4]);
    if (is_max) ts_ox_attr_ints(&e->b, node, "dilations", 2, &a[8]); /* AveragePool has none before opset 19 */
    ts_ox_attr_int(&e->b, node, "ceil_mode", a[10] != 0);
    if (!is_max) ts_ox_attr_int(&e->b, node, "count_include_pad", a[11] != 0);
}

/* clip (f[0] lo, f[1] hi), hard_sigmoid (f[0] alpha, f[1] beta), hard_swish (ops/hardact.c). */
static void emit_hard(exporter *e, const ts_node *n, const char *x, const char *y) {
    float f0 = n->attr.f[0], f1 = n->attr.f[1];
    if (n->op == TS_OP_CLIP) {
        const char *in[3] = {x, isinf(f0) ? NULL : ts_ox_const_f32(&e->b, f0), isinf(f1) ? NULL : ts_ox_const_f32(&e->b, f1)};
        ts_ox_node(&e->b, "Clip", in[2] ? 3 : in[1] ? 2 : 1, in, 1, &y);
    } else if (n->op == TS_OP_HARD_SIGMOID) {
        Onnx__NodeProto *node = ts_ox_node1(&e->b, "HardSigmoid", x, y);
        ts_ox_attr_float(&e->b, node, "alpha", f0);
        ts_ox_attr_float(&e->b, node, "beta", f1);
    } else {
        ts_ox_node1(&e->b, "HardSwish", x, y);
    }
}

/* ------------------------------------------------------------------ one node */

static void emit_reduce(exporter *e, const ts_node *n, const char *x, const char *y) {
    int nd = e->g->vals[n->in[0]].ndim;
    int64_t axes[TS_MAX_DIMS];
    int na = 0;
    for (int i = 0; i < nd; i++)
        if (n->attr.i[0] >> i & 1) axes[na++] = i;
    if (na == 0) { /* nothing reduced: a copy */
        ts_ox_node1(&e->b, "Identity", x, y);
        return;
    }
    Onnx__NodeProto *node;
    if (n->op == TS_OP_REDUCE_SUM) { /* axes are an input since opset 13 */
        node = ts_ox_node2(&e->b, "ReduceSum", x, ts_ox_const_i64s(&e->b, na, axes), y);
    } else { /* ReduceMean / ReduceMax keep them an attribute until opset 18 */
        node = ts_ox_node1(&e->b, n->op == TS_OP_REDUCE_MEAN ? "ReduceMean" : "ReduceMax", x, y);
        ts_ox_attr_ints(&e->b, node, "axes", na, axes);
    }
    ts_ox_attr_int(&e->b, node, "keepdims", n->attr.i[1] != 0);
}

static void emit_layer_norm(exporter *e, const ts_node *n, const char *x, const char *y) {
    const char *in[3] = {x, NULL, NULL};
    int nin = 2;
    if (n->in[1] >= 0) {
        in[1] = vname(e, n->in[1]);
    } else { /* ONNX needs a scale: ones */
        const ts_val *xv = &e->g->vals[n->in[0]];
        int64_t C = xv->shape[xv->ndim - 1];
        float *ones = malloc(sizeof(float) * (size_t)(C > 0 ? C : 1));
        if (!ones) {
            e->b.oom = 1;
            return;
        }
        for (int64_t i = 0; i < C; i++) ones[i] = 1.f;
        in[1] = ts_ox_fresh(&e->b, "ones");
        ts_ox_init_copy(&e->b, in[1], TS_F32, 1, &C, ones);
        free(ones);
    }
    if (n->nin > 2 && n->in[2] >= 0) in[2] = vname(e, n->in[2]), nin = 3;
    Onnx__NodeProto *node = ts_ox_node(&e->b, "LayerNormalization", nin, in, 1, &y);
    ts_ox_attr_int(&e->b, node, "axis", -1);
    ts_ox_attr_float(&e->b, node, "epsilon", n->attr.f[0]);
}

/* The target shape of reshape or expand n into to[]: its output's shape, with a dynamic batch its
 * first dim as the ONNX op must say it (Reshape: 0 copies the input's B, -1 infers B merged with
 * the next dims; Expand: 1 keeps the input's B). Returns 1 when a target dim is 0 (Reshape's
 * allowzero). Sets e->st for a batch the op makes from something else. */
static int batch_target(exporter *e, const ts_node *n, int64_t to[TS_MAX_DIMS]) {
    const ts_val *in = &e->g->vals[n->in[0]], *out = &e->g->vals[n->out[0]];
    int zero = 0;
    for (int i = 0; i < out->ndim; i++) to[i] = out->shape[i], zero |= out->shape[i] == 0;
    if (!e->batch || out->ndim < 1 || in->ndim < 1 || (in->shape[0] != e->batch && out->shape[0] != e->batch))
        return zero;
    int expand = n->op == TS_OP_EXPAND;
    if (in->shape[0] == e->batch && out->shape[0] == e->batch && !(zero && !expand)) {
        to[0] = expand ? 1 : 0;
    } else if (!expand && in->shape[0] == e->batch && out->shape[0] % e->batch == 0 && !zero) {
        to[0] = -1; /* B times the dims merged into the first */
    } else if (!e->st) {
        e->st = ts_err(TS_ERR_UNSUPPORTED, "ts_onnx_export: with a dynamic batch (B = %lld): %s %s to %s does not "
                       "keep the batch first", (long long)e->batch, ts_op_get(n->op)->name, VS(e->g, n->in[0]),
                       VS(e->g, n->out[0]));
    }
    return zero;
}

static void emit_node(exporter *e, const ts_node *n) {
    ts_ox *b = &e->b;
    const ts_graph *g = e->g;
    const char *y = vname(e, n->out[0]), *x = vname(e, n->in[0]);
    const ts_val *out = &g->vals[n->out[0]];
    Onnx__NodeProto *node;
    switch (n->op) {
    case TS_OP_ADD: ts_ox_node2(b, "Add", x, vname(e, n->in[1]), y); break;
    case TS_OP_SUB: ts_ox_node2(b, "Sub", x, vname(e, n->in[1]), y); break;
    case TS_OP_MUL: ts_ox_node2(b, "Mul", x, vname(e, n->in[1]), y); break;
    case TS_OP_DIV: ts_ox_node2(b, "Div", x, vname(e, n->in[1]), y); break;
    case TS_OP_POW: ts_ox_node2(b, "Pow", x, vname(e, n->in[1]), y); break;
    case TS_OP_SCALE: case TS_OP_SQRT: case TS_OP_EXP: case TS_OP_LOG: case TS_OP_RELU:
    case TS_OP_TANH: case TS_OP_SIGMOID: case TS_OP_GELU:
        emit_unary(e, n->op, (int)n->attr.i[0], n->attr.f[0], n->attr.f[1], x, y);
        break;
    case TS_OP_FUSED_ELEMENTWISE: emit_fused(e, n, x, y); break;
    case TS_OP_DROPOUT: ts_ox_node1(b, "Identity", x, y); break;
    case TS_OP_WHERE: {
        const char *cond = tmp(e);
        ts_ox_attr_int(b, ts_ox_node1(b, "Cast", x, cond), "to", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL);
        const char *in[3] = {cond, vname(e, n->in[1]), vname(e, n->in[2])};
        ts_ox_node(b, "Where", 3, in, 1, &y);
        break;
    }
    case TS_OP_CAST: ts_ox_attr_int(b, ts_ox_node1(b, "Cast", x, y), "to", onnx_type_of(out->dtype)); break;
    case TS_OP_RESHAPE: {
        int64_t to[TS_MAX_DIMS];
        int zero = batch_target(e, n, to);
        node = ts_ox_node2(b, "Reshape", x, ts_ox_const_i64s(b, out->ndim, to), y);
        if (zero) ts_ox_attr_int(b, node, "allowzero", 1); /* else 0 would mean "copy that dim" */
        break;
    }
    case TS_OP_EXPAND: {
        int64_t to[TS_MAX_DIMS];
        batch_target(e, n, to);
        ts_ox_node2(b, "Expand", x, ts_ox_const_i64s(b, out->ndim, to), y);
        break;
    }
    case TS_OP_TRANSPOSE: ts_ox_attr_ints(b, ts_ox_node1(b, "Transpose", x, y), "perm", n->attr.ni, n->attr.i); break;
    case TS_OP_SLICE: {
        if (e->batch && n->attr.i[0] == 0 && g->vals[n->in[0]].shape[0] == e->batch && !e->st)
            e->st = ts_err(TS_ERR_UNSUPPORTED, "ts_onnx_export: with a dynamic batch: slice %s along the batch",
                           VS(g, n->in[0]));
        const char *in[4] = {x, ts_ox_const_i64s(b, 1, &n->attr.i[1]), ts_ox_const_i64s(b, 1, &n->attr.i[2]),
                             ts_ox_const_i64s(b, 1, &n->attr.i[0])};
        ts_ox_node(b, "Slice", 4, in, 1, &y);
        break;
    }
    case TS_OP_CONCAT: {
        if (e->batch && n->attr.i[0] == 0 && out->ndim > 0 && !e->st)
            e->st = ts_err(TS_ERR_UNSUPPORTED, "ts_onnx_export: with a dynamic batch: concat into %s along the batch",
                           VS(g, n->out[0]));
        const char *in[TS_MAX_IN];
        for (int i = 0; i < n->nin; i++) in[i] = vname(e, n->in[i]);
        ts_ox_attr_int(b, ts_ox_node(b, "Concat", n->nin, in, 1, &y), "axis", n->attr.i[0]);
        break;
    }
    case TS_OP_GATHER: ts_ox_attr_int(b, ts_ox_node2(b, "Gather", x, vname(e, n->in[1]), y), "axis", 0); break;
    case TS_OP_REDUCE_SUM: case TS_OP_REDUCE_MEAN: case TS_OP_REDUCE_MAX: emit_reduce(e, n, x, y); break;
    case TS_OP_SOFTMAX: {
        const char *s = x;
        if (n->nin > 1 && n->in[1] >= 0) { /* softmax(x + mask) */
            s = tmp(e);
            ts_ox_node2(b, "Add", x, vname(e, n->in[1]), s);
        }
        ts_ox_attr_int(b, ts_ox_node1(b, "Softmax", s, y), "axis", -1);
        break;
    }
    case TS_OP_LOG_SOFTMAX: ts_ox_attr_int(b, ts_ox_node1(b, "LogSoftmax", x, y), "axis", -1); break;
    case TS_OP_LAYER_NORM: emit_layer_norm(e, n, x, y); break;
    case TS_OP_MATMUL: emit_matmul(e, n, y); break;
    case TS_OP_CONV2D: case TS_OP_CONV_TRANSPOSE2D: emit_conv(e, n, x, y); break;
    case TS_OP_MAX_POOL2D: case TS_OP_AVG_POOL2D: emit_pool(e, n, x, y); break;
    case TS_OP_CLIP: case TS_OP_HARD_SIGMOID: case TS_OP_HARD_SWISH: emit_hard(e, n, x, y); break;
    default: break; /* refused before anything is emitted */
    }
}

/* ------------------------------------------------------------------ the graph */

/* Mark the nodes the outputs depend on (need_node) and every value they read (need_val); refuse
 * gradient and optimizer nodes and ops without an ONNX form, naming them. */
enum { NEED_F32 = 1, NEED_INT8 = 2 }; /* need_val: a value is read as itself / as a QDQ int8 weight */

static ts_status select_nodes(const exporter *e, int noutputs, const ts_value *outputs, char *need_val,
                              char *need_node) {
    const ts_graph *g = e->g;
    for (int i = 0; i < noutputs; i++) need_val[outputs[i]] = NEED_F32;
    for (int i = g->nnodes - 1; i >= 0; i--) {
        const ts_node *n = &g->nodes[i];
        for (int k = 0; k < n->nout && !need_node[i]; k++) need_node[i] = need_val[n->out[k]] != 0;
        if (!need_node[i]) continue;
        int qdq = qdq_scale(e, n) != 0.f;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0) need_val[n->in[k]] |= qdq && k == 1 ? NEED_INT8 : NEED_F32;
    }
    char list[1024] = "";
    size_t len = 0;
    int nbad = 0;
    unsigned char seen[TS_OP_COUNT] = {0};
    for (int i = 0; i < g->nnodes; i++) {
        const ts_node *n = &g->nodes[i];
        if (!need_node[i]) continue;
        int late = (g->bwd_start >= 0 && i >= g->bwd_start) || (g->opt_start >= 0 && i >= g->opt_start);
        if (late)
            return ts_err(TS_ERR_ARG, "ts_onnx_export: the outputs depend on %s, computed by op %s of the %s; only "
                          "forward values can be exported", VS(g, n->out[0]), ts_op_get(n->op)->name,
                          g->opt_start >= 0 && i >= g->opt_start ? "optimizer" : "backward pass");
        if (exportable(n->op) || seen[n->op]) continue;
        seen[n->op] = 1;
        nbad++;
        if (len < sizeof list - 200)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s (computing %s)", nbad > 1 ? ", " : "",
                                    ts_op_get(n->op)->name, VS(g, n->out[0]));
    }
    if (nbad)
        return ts_err(TS_ERR_UNSUPPORTED, "ts_onnx_export: %d op%s without an ONNX form in tessera's exporter: %s",
                      nbad, nbad > 1 ? "s" : "", list);
    return TS_OK;
}

/* Graph input v (its first dim B made "batch" with a dynamic batch; int32 declared INT64 and cast
 * inside with int64_inputs). */
static ts_status add_input(exporter *e, int v) {
    const ts_val *val = &e->g->vals[v];
    int64_t shape[TS_MAX_DIMS];
    memcpy(shape, val->shape, sizeof(int64_t) * (size_t)val->ndim);
    if (e->batch) {
        if (val->ndim < 1 || val->shape[0] != e->batch)
            return ts_err(TS_ERR_ARG, "ts_onnx_export: with a dynamic batch, input %s has no first dim of the "
                          "batch, %lld", VS(e->g, v), (long long)e->batch);
        shape[0] = -1;
    }
    if (!(e->int64_inputs && val->dtype == TS_I32)) {
        ts_ox_input(&e->b, vname(e, v), val->dtype, val->ndim, shape);
        return TS_OK;
    }
    const char *outer = vname(e, v), *inner = ts_ox_fresh(&e->b, "i32");
    ts_ox_input(&e->b, outer, TS_I64, val->ndim, shape);
    ts_ox_attr_int(&e->b, ts_ox_node1(&e->b, "Cast", outer, inner), "to", ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
    e->names[v] = inner; /* the nodes read the cast */
    return TS_OK;
}

/* Graph inputs, parameters and constants the selected nodes read. */
static ts_status add_leaves(exporter *e, const ts_program *p, const char *need_val) {
    const ts_graph *g = e->g;
    for (int v = 0; v < g->nvals; v++) {
        const ts_val *val = &g->vals[v];
        if (!(need_val[v] & NEED_F32) || val->kind == TS_V_NODE) continue;
        if (val->kind == TS_V_INPUT) {
            ts_status st = add_input(e, v);
            if (st) return st;
        } else if (val->kind == TS_V_PARAM) {
            ts_tensor *t = NULL;
            if (ts_program_get_param(p, val->name, &t) != TS_OK)
                return ts_err(ts_last_status(), "ts_onnx_export: parameter '%s' is not in the program: %s",
                              val->name, ts_last_error());
            ts_ox_init_take(&e->b, vname(e, v), t);
        } else if (val->kind == TS_V_CONST) {
            const ts_tensor *t = val->data;
            ts_ox_init_copy(&e->b, vname(e, v), t->dtype, t->ndim, t->shape, t->data);
        } else {
            return ts_err(TS_ERR_ARG, "ts_onnx_export: the outputs depend on state value %s (optimizer or "
                          "loss-scale state), which has no place in an inference model", VS(g, v));
        }
    }
    return TS_OK;
}

static ts_status export_model(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                              const ts_quant_scale *scales, int nscales, int dynamic, const ts_onnx_export_opts *o,
                              const char *path) {
    if (!g || !p || !path || !outputs || noutputs <= 0)
        return ts_err(TS_ERR_ARG, "ts_onnx_export: %s", !g ? "graph is NULL" : !p ? "program is NULL"
                      : !path ? "path is NULL" : "no outputs given");
    if (g->status != TS_OK)
        return ts_err(g->status, "ts_onnx_export: the graph has a build error: %s", g->status_msg ? g->status_msg : "");
    for (int i = 0; i < noutputs; i++) {
        if (!ts_val_ok(g, outputs[i]))
            return ts_err(TS_ERR_ARG, "ts_onnx_export: output %d (%d) is not a value of this graph", i, outputs[i]);
        if (g->vals[outputs[i]].kind != TS_V_NODE && g->vals[outputs[i]].kind != TS_V_INPUT)
            return ts_err(TS_ERR_ARG, "ts_onnx_export: output %d %s is a parameter or constant, not a computed value",
                          i, VS(g, outputs[i]));
        for (int j = 0; j < i; j++)
            if (outputs[j] == outputs[i])
                return ts_err(TS_ERR_ARG, "ts_onnx_export: output %s is listed twice", VS(g, outputs[i]));
    }
    char *need_val = calloc((size_t)g->nvals + 1, 1), *need_node = calloc((size_t)g->nnodes + 1, 1);
    exporter e = {.g = g, .p = p, .names = calloc((size_t)g->nvals + 1, sizeof(char *)), .scales = scales,
                  .nscales = nscales, .dynamic = dynamic, .int64_inputs = o && o->int64_inputs};
    for (int v = 0; o && o->dynamic_batch && v < g->nvals && !e.batch; v++) /* B: the first input's first dim */
        if (g->vals[v].kind == TS_V_INPUT && g->vals[v].ndim > 0) e.batch = g->vals[v].shape[0];
    ts_ox_init(&e.b, g);
    ts_status s = TS_OK;
    if (!need_val || !need_node || !e.names) {
        s = ts_err(TS_ERR_NOMEM, "ts_onnx_export: out of memory");
        goto done;
    }
    if ((s = select_nodes(&e, noutputs, outputs, need_val, need_node)) || (s = add_leaves(&e, p, need_val)))
        goto done;
    for (int i = 0; i < g->nnodes && !e.st; i++)
        if (need_node[i]) emit_node(&e, &g->nodes[i]);
    if ((s = e.st)) goto done;
    for (int i = 0; i < noutputs && !s; i++) {
        const ts_val *v = &g->vals[outputs[i]];
        int64_t shape[TS_MAX_DIMS];
        memcpy(shape, v->shape, sizeof(int64_t) * (size_t)v->ndim);
        if (e.batch && (v->ndim < 1 || v->shape[0] != e.batch))
            s = ts_err(TS_ERR_ARG, "ts_onnx_export: with a dynamic batch, output %s has no first dim of the batch, "
                       "%lld", VS(g, outputs[i]), (long long)e.batch);
        if (e.batch) shape[0] = -1;
        ts_ox_output(&e.b, vname(&e, outputs[i]), v->dtype, v->ndim, shape);
    }
    if (s) goto done;
    s = ts_ox_write(&e.b, OPSET, path);
done:
    ts_ox_free(&e.b);
    free(e.names);
    free(need_val);
    free(need_node);
    return s;
}

ts_status ts_onnx_export(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                         const char *path) {
    return export_model(g, p, noutputs, outputs, NULL, 0, 0, NULL, path);
}

static ts_status check_scales(const ts_quant_scale *scales, int nscales) {
    if (nscales < 0 || (nscales && !scales))
        return ts_err(TS_ERR_ARG, "ts_onnx_export_qdq: %s", nscales < 0 ? "nscales is negative" : "scales is NULL");
    for (int i = 0; i < nscales; i++)
        if (!scales[i].weight || !(scales[i].scale > 0.f) || !isfinite(scales[i].scale))
            return ts_err(TS_ERR_ARG, "ts_onnx_export_qdq: scale %d (weight '%s') is %g: a scale must be a finite "
                          "number above 0", i, scales[i].weight ? scales[i].weight : "(null)", scales[i].scale);
    return TS_OK;
}

ts_status ts_onnx_export_qdq(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                             const ts_quant_scale *scales, int nscales, const char *path) {
    ts_status st = check_scales(scales, nscales);
    return st ? st : export_model(g, p, noutputs, outputs, scales, nscales, 0, NULL, path);
}

ts_status ts_onnx_export_dynamic_int8(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                                      const char *path) {
    return export_model(g, p, noutputs, outputs, NULL, 0, 1, NULL, path);
}

ts_status ts_onnx_export_with(const ts_graph *g, const ts_program *p, int noutputs, const ts_value *outputs,
                              const ts_onnx_export_opts *opts, const char *path) {
    ts_onnx_export_opts o;
    if (!opts) return ts_err(TS_ERR_ARG, "ts_onnx_export_with: opts is NULL");
    if (TS_STRUCT_READ(&o, opts, ts_onnx_export_opts, "ts_onnx_export_with")) return TS_ERR_ARG;
    if (o.nquant_scales > 0) {
        ts_status st = check_scales(o.quant_scales, o.nquant_scales);
        if (st) return st;
    }
    return export_model(g, p, noutputs, outputs, o.nquant_scales > 0 ? o.quant_scales : NULL,
                        o.nquant_scales > 0 ? o.nquant_scales : 0, 0, &o, path);
}
