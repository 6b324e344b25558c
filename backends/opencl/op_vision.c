/*
 * op_vision.c — host side of kernels/vision.cl: clip, hard_sigmoid, hard_swish, hard_act_grad
 * (src/ops/hardact.c: f[0], f[1] bounds or alpha, beta; hard_act_grad i[0] the forward op id),
 * math and math_grad (mathfn.c: i[0] ts_math_fn, f[0] alpha, f[1] beta), binary (binary.c:
 * i[0] ts_binop), predicate (predicate.c: i[0] test 0 isnan 1 isinf 2 not, i[1], i[2] isinf's
 * detect_pos / detect_neg) and select (select.c).
 */
#include "ocl.h"

static int hard_id(const char *op) {
    return strcmp(op, "clip") == 0 ? OCL_OPID_CLIP : strcmp(op, "hard_sigmoid") == 0 ? OCL_OPID_HARD_SIGMOID
                                                                                    : OCL_OPID_HARD_SWISH;
}

static int sup_hard(const ts_abi_node *n, const ts_abi_value *v) {
    if (!ocl_all_f32(n, v) || n->nout != 1 || n->in[0] < 0) return 0;
    if (strcmp(n->op, "hard_act_grad") == 0)
        return n->nin == 2 && n->in[1] >= 0 && n->iattr[0] >= OCL_OPID_CLIP && n->iattr[0] <= OCL_OPID_HARD_SWISH;
    return n->nin == 1;
}

static ts_status run_hard(ocl_node_ctx *c) {
    int grad = strcmp(c->n->op, "hard_act_grad") == 0;
    ocl_args a = {ocl_kernel(c->d, "hard_act"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_out(c, 0));
    cl_int op = grad ? (cl_int)c->n->iattr[0] : hard_id(c->n->op);
    cl_float f0 = c->n->fattr[0], f1 = c->n->fattr[1];
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, grad ? ocl_inbuf(c, 1) : (ts_buffer){0});
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, op);
    OCL_ARG(&a, f0);
    OCL_ARG(&a, f1);
    return ocl_launch(c->d, &a, cnt);
}

static int sup_math(const ts_abi_node *n, const ts_abi_value *v) {
    int grad = strcmp(n->op, "math_grad") == 0;
    if (!ocl_all_f32(n, v) || n->nout != 1 || n->nin != (grad ? 3 : 1) || n->in[0] < 0) return 0;
    if (grad && n->in[2] < 0) return 0;
    return n->iattr[0] >= 0 && n->iattr[0] < TS_MATH_COUNT;
}

static ts_status run_math(ocl_node_ctx *c) {
    int grad = strcmp(c->n->op, "math_grad") == 0;
    ocl_args a = {ocl_kernel(c->d, "math_fn"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_out(c, 0));
    cl_int fn = (cl_int)c->n->iattr[0];
    cl_float f0 = c->n->fattr[0], f1 = c->n->fattr[1];
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, grad ? ocl_inbuf(c, 1) : (ts_buffer){0});
    ocl_arg_buf(&a, grad ? ocl_inbuf(c, 2) : (ts_buffer){0});
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, fn);
    OCL_ARG(&a, f0);
    OCL_ARG(&a, f1);
    return ocl_launch(c->d, &a, cnt);
}

/* ------------------------------------------------------------------ binary */

static const char *bin_kernel(ts_dtype t) {
    return t == TS_F32 ? "binary_f32" : t == TS_I32 ? "binary_i32" : t == TS_I64 ? "binary_i64"
                                      : t == TS_U8 ? "binary_u8" : NULL;
}

static int sup_bin(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin != 2 || n->nout != 1 || n->in[0] < 0 || n->in[1] < 0) return 0;
    ts_dtype t = v[n->in[0]].dtype;
    int64_t op = n->iattr[0];
    if (!bin_kernel(t) || v[n->in[1]].dtype != t || op < 0 || op >= TS_BIN_COUNT) return 0;
    if (t == TS_F32 && (op == TS_BIN_SHL || op == TS_BIN_SHR)) return 0;
    return 1;
}

static ts_status prep_bc2(ocl_dev *d, const ts_abi_node *n, const ts_abi_value *v, void *p) {
    const ts_abi_value *ops[3];
    for (int k = 0; k < n->nin && k < 3; k++) ops[k] = &v[n->in[k]];
    ocl_bc_init(p, &v[n->out[0]], n->nin < 3 ? n->nin : 3, ops);
    return TS_OK;
}

static ts_status run_bin(ocl_node_ctx *c) {
    const ocl_bc *g = c->p;
    ocl_args a = {ocl_kernel(c->d, bin_kernel(ocl_in(c, 0)->dtype)), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_int op = (cl_int)c->n->iattr[0], tag = (cl_int)(c->n - c->plan->nodes) + 1;
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, ocl_inbuf(c, 1));
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof *g, g);
    OCL_ARG(&a, op);
    OCL_ARG(&a, c->d->err);
    OCL_ARG(&a, tag);
    return ocl_launch(c->d, &a, g->n);
}

/* ------------------------------------------------------------------ predicate, select */

static int sup_pred(const ts_abi_node *n, const ts_abi_value *v) {
    int64_t t = n->iattr[0];
    if (n->nin != 1 || n->nout != 1 || t < 0 || t > 2 || v[n->out[0]].dtype != TS_U8) return 0;
    return ocl_is(n, v, 0, t == 2 ? TS_U8 : TS_F32);
}

static ts_status run_pred(ocl_node_ctx *c) {
    ocl_args a = {ocl_kernel(c->d, "predicate"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_out(c, 0));
    cl_int t = (cl_int)c->n->iattr[0], pos = c->n->iattr[1] != 0, neg = c->n->iattr[2] != 0;
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, t);
    OCL_ARG(&a, pos);
    OCL_ARG(&a, neg);
    return ocl_launch(c->d, &a, cnt);
}

static int sup_select(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin != 3 || n->nout != 1 || !ocl_is(n, v, 0, TS_U8) || n->in[1] < 0 || n->in[2] < 0) return 0;
    ts_dtype t = v[n->in[1]].dtype;
    return ocl_dtype_size(t) && v[n->in[2]].dtype == t && v[n->out[0]].dtype == t;
}

static ts_status run_select(ocl_node_ctx *c) {
    const ocl_bc *g = c->p;
    ocl_args a = {ocl_kernel(c->d, "select_any"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_int es = (cl_int)ocl_dtype_size(ocl_out(c, 0)->dtype);
    for (int k = 0; k < 3; k++) ocl_arg_buf(&a, ocl_inbuf(c, k));
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof *g, g);
    OCL_ARG(&a, es);
    return ocl_launch(c->d, &a, g->n);
}

const ocl_op ocl_ops_vision[] = {
    {"clip", sup_hard, NULL, run_hard, NULL},
    {"hard_sigmoid", sup_hard, NULL, run_hard, NULL},
    {"hard_swish", sup_hard, NULL, run_hard, NULL},
    {"hard_act_grad", sup_hard, NULL, run_hard, NULL},
    {"math", sup_math, NULL, run_math, NULL},
    {"math_grad", sup_math, NULL, run_math, NULL},
    {"binary", sup_bin, prep_bc2, run_bin, NULL},
    {"predicate", sup_pred, NULL, run_pred, NULL},
    {"select", sup_select, prep_bc2, run_select, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
