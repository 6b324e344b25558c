/*
 * fused.c — fused_elementwise: a chain of up to 4 unary f32 ops (scale sqrt exp log relu tanh
 * sigmoid gelu) applied in one pass over memory. The fusion pass (graph/passes/fuse.c) builds
 * these nodes from chains whose intermediates nobody else reads; nothing else creates them.
 *
 * Node: one input x (f32), one output y = step[n-1](... step[1](step[0](x))), same shape.
 * Attribute encoding (ts_attrs), n = attr.ni = number of steps, 1..TS_FUSED_MAX_STEPS:
 *   i[k]      op id of step k (TS_OP_SCALE, TS_OP_SQRT, ... TS_OP_GELU)
 *   i[4 + k]  gelu tanh-form flag of step k (0 for other ops)
 *   i[8 + k]  the float attributes of step k as bits: alpha in the low 32 bits, beta in the high
 *             32 bits (scale's alpha * x + beta; 0 for other ops)
 *   f[0]      1: the result is stored as bf16 (rounded as ts_f32_bf16 does, as a cast would),
 *             0: as f32; f[1..] unused
 * Kernel: OpenMP over blocks of TS_FUSED_BLOCK elements (16 KiB); each thread runs every step on
 * its block through ts_unary_f32 (the unary ops' own evaluator, so results equal the unfused
 * ops'), step 0 from x into the output block and later steps in place, so intermediates stay in
 * L1. Safe in place (output on input 0's buffer). A bf16 result is made in an f32 block on the
 * stack and converted into the output (never in place: the memory planner shares a buffer only
 * between values of one byte size).
 *
 * Not differentiable (grad NULL): fusion runs at compile time, after ts_backward has built the
 * backward pass from the original unary ops.
 */
#include "ops/op.h"

#include <omp.h>

#define TS_FUSED_MAX_STEPS 4
#define TS_FUSED_BLOCK 4096


typedef struct {
    int op, tanh_form;
    float alpha, beta;
} step;

static int is_chain_op(int op) {
    switch (op) {
    case TS_OP_SCALE: case TS_OP_SQRT: case TS_OP_EXP: case TS_OP_LOG:
    case TS_OP_RELU: case TS_OP_TANH: case TS_OP_SIGMOID: case TS_OP_GELU:
        return 1;
    default:
        return 0;
    }
}

static int64_t pack2(float lo, float hi) {
    uint32_t a, b;
    memcpy(&a, &lo, 4);
    memcpy(&b, &hi, 4);
    return (int64_t)(((uint64_t)b << 32) | a);
}
static void unpack2(int64_t v, float *lo, float *hi) {
    uint32_t a = (uint32_t)((uint64_t)v & 0xffffffffu), b = (uint32_t)((uint64_t)v >> 32);
    memcpy(lo, &a, 4);
    memcpy(hi, &b, 4);
}

static void put_step(ts_attrs *at, int k, step s) {
    at->i[k] = s.op;
    at->i[4 + k] = s.tanh_form;
    at->i[8 + k] = pack2(s.alpha, s.beta);
}
static step get_step(const ts_attrs *at, int k) {
    step s = {(int)at->i[k], (int)at->i[4 + k], 0.f, 0.f};
    unpack2(at->i[8 + k], &s.alpha, &s.beta);
    return s;
}

/* The steps node n stands for in a chain: 1 for a unary chain op, ni for a fused node, else 0. */
static int node_steps(const ts_node *n, step *out) {
    if (n->op == TS_OP_FUSED_ELEMENTWISE) {
        int ns = n->attr.ni;
        if (ns < 1 || ns > TS_FUSED_MAX_STEPS) return 0;
        for (int k = 0; k < ns; k++) out[k] = get_step(&n->attr, k);
        return ns;
    }
    if (!is_chain_op(n->op)) return 0;
    step s = {n->op, n->op == TS_OP_GELU ? (int)(n->attr.i[0] != 0) : 0, 0.f, 0.f};
    if (n->op == TS_OP_SCALE) {
        s.alpha = n->attr.f[0];
        s.beta = n->attr.f[1];
    }
    out[0] = s;
    return 1;
}

/* node_steps of a node whose result is f32: 0 for a fused node storing bf16 (no step can follow
 * its rounding). */
static int f32_steps(const ts_node *n, step *out) {
    return n->op == TS_OP_FUSED_ELEMENTWISE && n->attr.f[0] != 0.f ? 0 : node_steps(n, out);
}

/* For the fusion pass: the attributes of a fused_elementwise node computing second(first(x)),
 * where each of first and second is a unary chain op or an f32 fused_elementwise node (second
 * NULL: first(x) alone). Returns 1 and fills *out (f32 result) when they fit in
 * TS_FUSED_MAX_STEPS steps, 0 otherwise (out untouched). */
int ts_fused_merge(const ts_node *first, const ts_node *second, ts_attrs *out) {
    step s[2 * TS_FUSED_MAX_STEPS];
    int n1 = f32_steps(first, s), n2 = n1 && second ? f32_steps(second, s + n1) : 0;
    if (!n1 || (second && !n2) || n1 + n2 > TS_FUSED_MAX_STEPS) return 0;
    ts_attrs at;
    memset(&at, 0, sizeof at);
    at.ni = n1 + n2;
    for (int k = 0; k < at.ni; k++) put_step(&at, k, s[k]);
    *out = at;
    return 1;
}

static ts_status infer_fused(ts_graph *g, ts_node *n) {
    char b[256];
    const ts_val *x = &g->vals[n->in[0]];
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op fused_elementwise: input %s has dtype %s; this op takes f32",
                      ts_val_str(g, n->in[0], b, sizeof b), ts_dtype_name(x->dtype));
    if (n->attr.ni < 1 || n->attr.ni > TS_FUSED_MAX_STEPS)
        return ts_err(TS_ERR_ARG, "op fused_elementwise: %d steps, takes 1..%d", n->attr.ni,
                      TS_FUSED_MAX_STEPS);
    for (int k = 0; k < n->attr.ni; k++)
        if (!is_chain_op((int)n->attr.i[k]))
            return ts_err(TS_ERR_ARG, "op fused_elementwise: step %d has op id %lld, not a unary op",
                          k, (long long)n->attr.i[k]);
    float ob = n->attr.f[0];
    if (ob != 0.f && ob != 1.f)
        return ts_err(TS_ERR_ARG, "op fused_elementwise: out_bf16 %g is neither 0 nor 1", (double)ob);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = ob != 0.f ? TS_BF16 : TS_F32;
    o->ndim = x->ndim;
    if (x->ndim) memcpy(o->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    return TS_OK;
}

static ts_status fused_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    step st[TS_FUSED_MAX_STEPS];
    int ns = node_steps(n, st);
    int64_t cnt = ts_val_numel(&k->g->vals[n->out[0]]);
    const float *x = k->in[0];
    int bf16 = n->attr.f[0] != 0.f;
    int64_t nblocks = (cnt + TS_FUSED_BLOCK - 1) / TS_FUSED_BLOCK;
#pragma omp parallel for schedule(static) if (nblocks > 8)
    for (int64_t bi = 0; bi < nblocks; bi++) {
        float tmp[TS_FUSED_BLOCK] __attribute__((aligned(64)));
        int64_t off = bi * TS_FUSED_BLOCK, len = cnt - off < TS_FUSED_BLOCK ? cnt - off : TS_FUSED_BLOCK;
        float *blk = bf16 ? tmp : (float *)k->out[0] + off;
        const float *src = x + off;
        for (int s = 0; s < ns; s++) {
            ts_unary_f32(st[s].op, st[s].tanh_form, st[s].alpha, st[s].beta, src, blk, len);
            src = blk;
        }
        if (bf16) ts_f32_to_bf16(blk, (uint16_t *)k->out[0] + off, (size_t)len);
    }
    return TS_OK;
}

const ts_op_def ts_opdef_fused_elementwise = {"fused_elementwise", 1, 1, 1,
                                              TS_OPF_ELEMENTWISE | TS_OPF_INPLACE0,
                                              infer_fused, NULL, fused_kernel, NULL};
