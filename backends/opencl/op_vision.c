/*
 * op_vision.c — host side of kernels/vision.cl: clip, hard_sigmoid, hard_swish, hard_act_grad
 * (src/ops/hardact.c: bounds or alpha, beta; hard_act_grad the forward op's id), math and
 * math_grad (mathfn.c: a ts_math_fn, alpha, beta), binary (binary.c: a ts_binop), predicate
 * (predicate.c: a ts_predicate_fn, isinf's detect_pos / detect_neg) and select (select.c). The
 * attributes are read through tessera_ops.h's decoders (ts_attrs_<op>_of).
 */
#include "ocl.h"

/* What kernels/vision.cl's hard_act computes: the forward op's id (hard_act_grad's fwd_op) and
 * its two parameters (clip's lo, hi; hard_sigmoid's alpha, beta; none for hard_swish). */
static int64_t hard_params(const ts_abi_node *n, float *f0, float *f1) {
    *f0 = *f1 = 0.f;
    if (strcmp(n->op, TS_OPNAME_CLIP) == 0) {
        ts_attrs_clip a = ts_attrs_clip_of(n);
        *f0 = a.lo, *f1 = a.hi;
        return TS_OPID_CLIP;
    }
    if (strcmp(n->op, TS_OPNAME_HARD_SIGMOID) == 0) {
        ts_attrs_hard_sigmoid a = ts_attrs_hard_sigmoid_of(n);
        *f0 = a.alpha, *f1 = a.beta;
        return TS_OPID_HARD_SIGMOID;
    }
    if (strcmp(n->op, TS_OPNAME_HARD_ACT_GRAD) == 0) {
        ts_attrs_hard_act_grad a = ts_attrs_hard_act_grad_of(n);
        *f0 = a.f0, *f1 = a.f1;
        return a.fwd_op;
    }
    return TS_OPID_HARD_SWISH;
}

static int sup_hard(const ts_abi_node *n, const ts_abi_value *v) {
    if (!ocl_all_f32(n, v) || n->nout != 1 || n->in[0] < 0) return 0;
    float f0, f1;
    int64_t op = hard_params(n, &f0, &f1);
    if (strcmp(n->op, TS_OPNAME_HARD_ACT_GRAD) == 0)
        return n->nin == 2 && n->in[1] >= 0 &&
               (op == TS_OPID_CLIP || op == TS_OPID_HARD_SIGMOID || op == TS_OPID_HARD_SWISH);
    return n->nin == 1;
}

static ts_status run_hard(ocl_node_ctx *c) {
    int grad = strcmp(c->n->op, TS_OPNAME_HARD_ACT_GRAD) == 0;
    ocl_args a = {ocl_kernel(c->d, "hard_act"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_out(c, 0));
    cl_float f0, f1;
    cl_int op = (cl_int)hard_params(c->n, &f0, &f1);
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, grad ? ocl_inbuf(c, 1) : (ts_buffer){0});
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, op);
    OCL_ARG(&a, f0);
    OCL_ARG(&a, f1);
    return ocl_launch(c->d, &a, cnt);
}

/* math_grad's attributes are math's (the forward's function and parameters). */
static ts_attrs_math math_attrs(const ts_abi_node *n) {
    if (strcmp(n->op, TS_OPNAME_MATH) == 0) return ts_attrs_math_of(n);
    ts_attrs_math_grad g = ts_attrs_math_grad_of(n);
    return (ts_attrs_math){.fn = g.fn, .alpha = g.alpha, .beta = g.beta};
}

static int sup_math(const ts_abi_node *n, const ts_abi_value *v) {
    int grad = strcmp(n->op, TS_OPNAME_MATH_GRAD) == 0;
    if (!ocl_all_f32(n, v) || n->nout != 1 || n->nin != (grad ? 3 : 1) || n->in[0] < 0) return 0;
    if (grad && n->in[2] < 0) return 0;
    int64_t fn = math_attrs(n).fn;
    return fn >= 0 && fn < TS_OPS_MATH_FN_COUNT;
}

static ts_status run_math(ocl_node_ctx *c) {
    int grad = strcmp(c->n->op, TS_OPNAME_MATH_GRAD) == 0;
    ocl_args a = {ocl_kernel(c->d, "math_fn"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_out(c, 0));
    ts_attrs_math m = math_attrs(c->n);
    cl_int fn = (cl_int)m.fn;
    cl_float f0 = m.alpha, f1 = m.beta;
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
    int64_t op = ts_attrs_binary_of(n).fn;
    if (!bin_kernel(t) || v[n->in[1]].dtype != t || op < 0 || op >= TS_OPS_BINOP_COUNT) return 0;
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
    cl_int op = (cl_int)ts_attrs_binary_of(c->n).fn, tag = (cl_int)(c->n - c->plan->nodes) + 1;
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
    int64_t t = ts_attrs_predicate_of(n).fn;
    if (n->nin != 1 || n->nout != 1 || t < 0 || t >= TS_OPS_PREDICATE_FN_COUNT || v[n->out[0]].dtype != TS_U8)
        return 0;
    return ocl_is(n, v, 0, t == TS_PRED_NOT ? TS_U8 : TS_F32);
}

static ts_status run_pred(ocl_node_ctx *c) {
    ocl_args a = {ocl_kernel(c->d, "predicate"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = ocl_numel(ocl_out(c, 0));
    ts_attrs_predicate p = ts_attrs_predicate_of(c->n);
    cl_int t = (cl_int)p.fn, pos = p.detect_pos != 0, neg = p.detect_neg != 0;
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
