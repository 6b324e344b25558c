/*
 * op_elementwise.c — host side of the elementwise ops (kernels/elementwise.cl): add sub mul div
 * pow with broadcasting, scale and the unary activations, unary_grad, fused_elementwise, where,
 * cast, dropout and dropout_grad. Semantics: src/ops/elementwise.c, fused.c, dropout.c.
 */
#include "ocl.h"

#include <math.h>

/* ------------------------------------------------------------------ binary */

static int binary_code(const char *op) {
    static const char *names[] = {"add", "sub", "mul", "div", "pow"};
    for (int i = 0; i < 5; i++)
        if (strcmp(op, names[i]) == 0) return i;
    return -1;
}

static int sup_binary(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin == 2 && n->nout == 1 && ocl_all_f32(n, v);
}

static ts_status prep_bc(ocl_dev *d, const ts_abi_node *n, const ts_abi_value *v, void *p) {
    const ts_abi_value *ops[3];
    int k = 0;
    for (int i = 0; i < n->nin && i < 3; i++) ops[k++] = &v[n->in[i]];
    ocl_bc_init(p, &v[n->out[0]], k, ops);
    return TS_OK;
}

static ts_status run_binary(ocl_node_ctx *c) {
    ocl_args a = {ocl_kernel(c->d, "binary"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    const ocl_bc *g = c->p;
    cl_int code = binary_code(c->n->op);
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, ocl_inbuf(c, 1));
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof *g, g);
    OCL_ARG(&a, code);
    return ocl_launch(c->d, &a, g->n);
}

/* ------------------------------------------------------------------ unary, fused */

/* The unary ops the kernels evaluate (00_common.cl's unary_f), by op id; without scale, those
 * unary_grad differentiates. */
static int is_unary_op(int64_t op, int with_scale) {
    switch (op) {
    case TS_OPID_SCALE: return with_scale;
    case TS_OPID_SQRT: case TS_OPID_EXP: case TS_OPID_LOG: case TS_OPID_RELU: case TS_OPID_TANH:
    case TS_OPID_SIGMOID: case TS_OPID_GELU: return 1;
    default: return 0;
    }
}

static int sup_unary(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin == 1 && n->nout == 1 && ocl_all_f32(n, v);
}

static ts_status run_unary(ocl_node_ctx *c) {
    ocl_args a = {ocl_kernel(c->d, "unary"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_out(c, 0));
    const ts_abi_node *n = c->n;
    int is_scale = strcmp(n->op, TS_OPNAME_SCALE) == 0, is_gelu = strcmp(n->op, TS_OPNAME_GELU) == 0;
    cl_int op = ts_op_info_find(n->op)->op_id, tf = is_gelu && ts_attrs_gelu_of(n).tanh_form != 0;
    cl_float al = is_scale ? ts_attrs_scale_of(n).alpha : 0.f, be = is_scale ? ts_attrs_scale_of(n).beta : 0.f;
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, op);
    OCL_ARG(&a, tf);
    OCL_ARG(&a, al);
    OCL_ARG(&a, be);
    return ocl_launch(c->d, &a, cnt);
}

static int sup_fused(const ts_abi_node *n, const ts_abi_value *v) {
    ts_attrs_fused_elementwise f = ts_attrs_fused_elementwise_of(n);
    if (!sup_unary(n, v) || f.steps < 1 || f.steps > 4) return 0;
    for (int k = 0; k < f.steps; k++)
        if (!is_unary_op(f.step_op[k], 1)) return 0;
    return 1;
}

static ts_status run_fused(ocl_node_ctx *c) {
    ocl_args a = {ocl_kernel(c->d, "fused"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ts_attrs_fused_elementwise f = ts_attrs_fused_elementwise_of(c->n);
    cl_long cnt = ocl_numel(ocl_out(c, 0));
    cl_int ns = f.steps;
    cl_int4 ops = {{0}}, tf = {{0}};
    cl_float4 al = {{0}}, be = {{0}};
    for (int k = 0; k < ns && k < 4; k++) {
        uint64_t bits = (uint64_t)f.step_ab[k];
        uint32_t lo = (uint32_t)bits, hi = (uint32_t)(bits >> 32);
        ops.s[k] = (cl_int)f.step_op[k];
        tf.s[k] = (cl_int)f.step_tanh[k];
        memcpy(&al.s[k], &lo, 4);
        memcpy(&be.s[k], &hi, 4);
    }
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, ns);
    OCL_ARG(&a, ops);
    OCL_ARG(&a, tf);
    OCL_ARG(&a, al);
    OCL_ARG(&a, be);
    return ocl_launch(c->d, &a, cnt);
}

/* unary_grad(x or absent, y or absent, gy) -> gx */
static int sup_unary_grad(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin != 3 || n->nout != 1 || !is_unary_op(ts_attrs_unary_grad_of(n).fwd_op, 0)) return 0;
    return ocl_all_f32(n, v) && n->in[2] >= 0;
}

static ts_status run_unary_grad(ocl_node_ctx *c) {
    ocl_args a = {ocl_kernel(c->d, "unary_grad"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_out(c, 0));
    ts_attrs_unary_grad u = ts_attrs_unary_grad_of(c->n);
    cl_int op = (cl_int)u.fwd_op, tf = u.tanh_form != 0;
    for (int k = 0; k < 4; k++) ocl_arg_buf(&a, k < 3 ? ocl_inbuf(c, k) : ocl_outbuf(c, 0));
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, op);
    OCL_ARG(&a, tf);
    return ocl_launch(c->d, &a, cnt);
}

/* ------------------------------------------------------------------ where, cast */

static int sup_where(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin == 3 && n->nout == 1 && ocl_is(n, v, 0, TS_U8) && ocl_is(n, v, 1, TS_F32) &&
           ocl_is(n, v, 2, TS_F32) && v[n->out[0]].dtype == TS_F32;
}

static ts_status run_where(ocl_node_ctx *c) {
    ocl_args a = {ocl_kernel(c->d, "where_f32"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    const ocl_bc *g = c->p;
    for (int k = 0; k < 4; k++) ocl_arg_buf(&a, k < 3 ? ocl_inbuf(c, k) : ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof *g, g);
    return ocl_launch(c->d, &a, g->n);
}

static int sup_cast(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin == 1 && n->nout == 1 && ocl_dtype_size(v[n->in[0]].dtype) && ocl_dtype_size(v[n->out[0]].dtype);
}

static ts_status run_cast(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    cl_long cnt = ocl_numel(y);
    if (x->dtype == y->dtype) return ocl_copy(c->d, y->buf, x->buf, (size_t)cnt * ocl_dtype_size(y->dtype));
    ocl_args a = {ocl_kernel(c->d, "cast"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_int from = x->dtype, to = y->dtype;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, y->buf);
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, from);
    OCL_ARG(&a, to);
    return ocl_launch(c->d, &a, cnt);
}

/* ------------------------------------------------------------------ dropout */

static uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* dropout_grad's attributes are dropout's (the forward's mask and scale). */
static ts_attrs_dropout dropout_attrs(const ts_abi_node *n) {
    if (strcmp(n->op, TS_OPNAME_DROPOUT) == 0) return ts_attrs_dropout_of(n);
    ts_attrs_dropout_grad g = ts_attrs_dropout_grad_of(n);
    return (ts_attrs_dropout){.salt = g.salt, .seed = g.seed, .p = g.p};
}

static int sup_dropout(const ts_abi_node *n, const ts_abi_value *v) {
    float p = dropout_attrs(n).p;
    return sup_unary(n, v) && p >= 0.f && p < 1.f;
}

static ts_status run_dropout(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    cl_long cnt = ocl_numel(y);
    ts_attrs_dropout at = dropout_attrs(c->n);
    float p = at.p;
    if (p == 0.f) return ocl_copy(c->d, y->buf, x->buf, (size_t)cnt * 4);
    uint64_t key = mix64(mix64(mix64((uint64_t)at.seed) ^ (uint64_t)at.salt) ^ c->step);
    cl_uint k0 = (cl_uint)key, k1 = (cl_uint)(key >> 32), thr = (cl_uint)ceil((double)p * 16777216.0);
    cl_float scale = (float)(1.0 / (1.0 - (double)p));
    ocl_args a = {ocl_kernel(c->d, "dropout"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, y->buf);
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, k0);
    OCL_ARG(&a, k1);
    OCL_ARG(&a, thr);
    OCL_ARG(&a, scale);
    return ocl_launch(c->d, &a, cnt);
}

const ocl_op ocl_ops_elementwise[] = {
    {"add", sup_binary, prep_bc, run_binary},
    {"sub", sup_binary, prep_bc, run_binary},
    {"mul", sup_binary, prep_bc, run_binary},
    {"div", sup_binary, prep_bc, run_binary},
    {"pow", sup_binary, prep_bc, run_binary},
    {"scale", sup_unary, NULL, run_unary},
    {"sqrt", sup_unary, NULL, run_unary},
    {"exp", sup_unary, NULL, run_unary},
    {"log", sup_unary, NULL, run_unary},
    {"relu", sup_unary, NULL, run_unary},
    {"tanh", sup_unary, NULL, run_unary},
    {"sigmoid", sup_unary, NULL, run_unary},
    {"gelu", sup_unary, NULL, run_unary},
    {"fused_elementwise", sup_fused, NULL, run_fused},
    {"unary_grad", sup_unary_grad, NULL, run_unary_grad},
    {"where", sup_where, prep_bc, run_where},
    {"cast", sup_cast, NULL, run_cast},
    {"dropout", sup_dropout, NULL, run_dropout},
    {"dropout_grad", sup_dropout, NULL, run_dropout},
    {NULL, NULL, NULL, NULL},
};
