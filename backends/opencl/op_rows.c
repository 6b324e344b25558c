/*
 * op_rows.c — host side of the row ops (kernels/rows.cl; semantics in src/ops/softmax.c and
 * layernorm.c): softmax (optional additive mask), log_softmax, softmax_grad, log_softmax_grad,
 * cross_entropy, cross_entropy_grad, layer_norm, layer_norm_grad. f32; rows of C = last dim.
 * The attributes are read through tessera_ops.h's decoders (ts_attrs_<op>_of).
 */
#include "ocl.h"

static void rows_of(const ts_abi_value *x, cl_long *rows, cl_long *C) {
    *C = x->ndim ? x->shape[x->ndim - 1] : 1;
    *rows = *C ? ocl_numel(x) / *C : 0;
}

static int sup_rows(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin >= 1 && n->in[0] >= 0 && v[n->in[0]].ndim >= 1 && ocl_all_f32(n, v);
}

static ts_status launch_rows(ocl_node_ctx *c, const char *kname, int nbuf, const ts_buffer *bufs, cl_long n,
                             cl_long rows, cl_long C, ocl_args *extra_out) {
    ocl_args a = {ocl_kernel(c->d, kname), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    for (int i = 0; i < nbuf; i++) ocl_arg_buf(&a, bufs[i]);
    OCL_ARG(&a, rows);
    OCL_ARG(&a, C);
    *extra_out = a;
    (void)n;
    return TS_OK;
}

/* ------------------------------------------------------------------ softmax family */

static ts_status run_softmax(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *m = c->n->nin > 1 ? ocl_in(c, 1) : NULL;
    cl_long rows, C;
    rows_of(x, &rows, &C);
    ocl_bc g;
    memset(&g, 0, sizeof g);
    if (m) ocl_bc_init(&g, x, 1, &m);
    ocl_args a;
    ts_buffer b[3] = {x->buf, m ? m->buf : (ts_buffer){0}, ocl_outbuf(c, 0)};
    ts_status s = launch_rows(c, "softmax", 3, b, rows, rows, C, &a);
    if (s) return s;
    ocl_arg(&a, sizeof g, &g);
    return ocl_launch(c->d, &a, rows);
}

static ts_status run_log_softmax(ocl_node_ctx *c) {
    cl_long rows, C;
    rows_of(ocl_in(c, 0), &rows, &C);
    ocl_args a;
    ts_buffer b[2] = {ocl_inbuf(c, 0), ocl_outbuf(c, 0)};
    ts_status s = launch_rows(c, "log_softmax", 2, b, rows, rows, C, &a);
    return s ? s : ocl_launch(c->d, &a, rows);
}

static ts_status run_row_grad(ocl_node_ctx *c) {
    cl_long rows, C;
    rows_of(ocl_in(c, 0), &rows, &C);
    cl_int lg = strcmp(c->n->op, "log_softmax_grad") == 0;
    ocl_args a;
    ts_buffer b[3] = {ocl_inbuf(c, 0), ocl_inbuf(c, 1), ocl_outbuf(c, 0)};
    ts_status s = launch_rows(c, "row_grad", 3, b, rows, rows, C, &a);
    if (s) return s;
    OCL_ARG(&a, lg);
    return ocl_launch(c->d, &a, rows);
}

/* ------------------------------------------------------------------ cross_entropy */

static int sup_ce(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin < 2 || !ocl_is(n, v, 0, TS_F32) || v[n->in[0]].ndim < 1) return 0;
    if (!ocl_is(n, v, 1, TS_I32) && !ocl_is(n, v, 1, TS_I64)) return 0;
    return v[n->out[0]].dtype == TS_F32 && (n->nin < 3 || ocl_is(n, v, 2, TS_F32));
}

/* scratch: per-row losses and kept flags, then the gradient's scale */
static size_t ws_ce(const ts_abi_node *n, const ts_abi_value *v) {
    return (size_t)(2 * ocl_numel(&v[n->in[0]]) / (v[n->in[0]].shape[v[n->in[0]].ndim - 1] ? v[n->in[0]].shape[v[n->in[0]].ndim - 1] : 1) + 16) * 4;
}

/* cross_entropy's ignore_index (cross_entropy_grad's is the forward's) */
static int64_t ce_ignore(const ts_abi_node *n) {
    if (strcmp(n->op, TS_OPNAME_CROSS_ENTROPY) == 0) return ts_attrs_cross_entropy_of(n).ignore_index;
    return ts_attrs_cross_entropy_grad_of(n).ignore_index;
}

/* ce_rows then ce_sum into out (the loss) or, for the gradient, into the scale slot */
static ts_status ce_common(ocl_node_ctx *c, ts_buffer out, ts_buffer gl) {
    const ts_abi_value *x = ocl_in(c, 0), *l = ocl_in(c, 1);
    cl_long rows, C, ignore = ce_ignore(c->n);
    rows_of(x, &rows, &C);
    cl_int is64 = l->dtype == TS_I64, tag = (cl_int)(c->n - c->plan->nodes) + 1;
    ocl_args a;
    ts_buffer b[3] = {x->buf, l->buf, c->workspace};
    ts_status s = launch_rows(c, "ce_rows", 3, b, rows, rows, C, &a);
    if (s) return s;
    OCL_ARG(&a, is64);
    OCL_ARG(&a, ignore);
    OCL_ARG(&a, c->d->err);
    OCL_ARG(&a, tag);
    s = ocl_launch(c->d, &a, rows);
    if (s) return s;
    ocl_args z = {ocl_kernel(c->d, "ce_sum"), 0, CL_SUCCESS, c->n->op};
    if (!z.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&z, c->workspace);
    ocl_arg_buf(&z, out);
    ocl_arg_buf(&z, gl);
    OCL_ARG(&z, rows);
    return ocl_launch(c->d, &z, 1);
}

static ts_status run_ce(ocl_node_ctx *c) { return ce_common(c, ocl_outbuf(c, 0), (ts_buffer){0}); }

static ts_status run_ce_grad(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *l = ocl_in(c, 1);
    cl_long rows, C, ignore = ce_ignore(c->n);
    rows_of(x, &rows, &C);
    ts_buffer scale = c->workspace;
    scale.offset += (uint64_t)(2 * rows) * 4;
    ts_status s = ce_common(c, scale, ocl_inbuf(c, 2));
    if (s) return s;
    cl_int is64 = l->dtype == TS_I64;
    ocl_args a;
    ts_buffer b[4] = {x->buf, l->buf, scale, ocl_outbuf(c, 0)};
    s = launch_rows(c, "ce_grad", 4, b, rows, rows, C, &a);
    if (s) return s;
    OCL_ARG(&a, is64);
    OCL_ARG(&a, ignore);
    return ocl_launch(c->d, &a, rows);
}

/* ------------------------------------------------------------------ layer_norm */

static ts_status run_layer_norm(ocl_node_ctx *c) {
    cl_long rows, C;
    rows_of(ocl_in(c, 0), &rows, &C);
    cl_float eps = ts_attrs_layer_norm_of(c->n).eps;
    ocl_args a;
    ts_buffer b[4] = {ocl_inbuf(c, 0), ocl_inbuf(c, 1), ocl_inbuf(c, 2), ocl_outbuf(c, 0)};
    ts_status s = launch_rows(c, "layer_norm", 4, b, rows, rows, C, &a);
    if (s) return s;
    OCL_ARG(&a, eps);
    return ocl_launch(c->d, &a, rows);
}

static size_t ws_ln_grad(const ts_abi_node *n, const ts_abi_value *v) {
    const ts_abi_value *x = &v[n->in[0]];
    int64_t C = x->shape[x->ndim - 1];
    return (size_t)(2 * (C ? ocl_numel(x) / C : 0) + 16) * 4;
}

static ts_status ln_gx(ocl_node_ctx *c, cl_long rows, cl_long C, cl_int stats_only) {
    cl_float eps = ts_attrs_layer_norm_grad_of(c->n).eps;
    ocl_args a;
    ts_buffer b[5] = {ocl_inbuf(c, 0), ocl_inbuf(c, 1), ocl_inbuf(c, 2), ocl_outbuf(c, 0), c->workspace};
    ts_status s = launch_rows(c, "layer_norm_gx", 5, b, rows, rows, C, &a);
    if (s) return s;
    OCL_ARG(&a, eps);
    OCL_ARG(&a, stats_only);
    return ocl_launch(c->d, &a, rows);
}

static ts_status run_layer_norm_grad(ocl_node_ctx *c) {
    cl_long rows, C;
    rows_of(ocl_in(c, 0), &rows, &C);
    ts_status s = ln_gx(c, rows, C, 1);
    if (s) return s;
    if (ocl_outbuf(c, 1).mem || ocl_outbuf(c, 2).mem) {
        ocl_args a;
        ts_buffer b[5] = {ocl_inbuf(c, 0), ocl_inbuf(c, 2), ocl_outbuf(c, 1), ocl_outbuf(c, 2), c->workspace};
        s = launch_rows(c, "layer_norm_gp", 5, b, rows, rows, C, &a);
        if (!s) s = ocl_launch(c->d, &a, C);
        if (s) return s;
    }
    return ln_gx(c, rows, C, 0);
}

static int sup_ln(const ts_abi_node *n, const ts_abi_value *v) {
    if (!sup_rows(n, v)) return 0;
    int64_t C = v[n->in[0]].shape[v[n->in[0]].ndim - 1];
    for (int k = 1; k < n->nin; k++)
        if (n->in[k] >= 0 && k < 2 + (strcmp(n->op, "layer_norm") == 0) &&
            (v[n->in[k]].ndim != 1 || v[n->in[k]].shape[0] != C) && !(k == 2 && strcmp(n->op, "layer_norm_grad") == 0))
            return 0;
    return 1;
}

const ocl_op ocl_ops_rows[] = {
    {"softmax", sup_rows, NULL, run_softmax, NULL},
    {"log_softmax", sup_rows, NULL, run_log_softmax, NULL},
    {"softmax_grad", sup_rows, NULL, run_row_grad, NULL},
    {"log_softmax_grad", sup_rows, NULL, run_row_grad, NULL},
    {"cross_entropy", sup_ce, NULL, run_ce, ws_ce},
    {"cross_entropy_grad", sup_ce, NULL, run_ce_grad, ws_ce},
    {"layer_norm", sup_ln, NULL, run_layer_norm, NULL},
    {"layer_norm_grad", sup_ln, NULL, run_layer_norm_grad, ws_ln_grad},
    {NULL, NULL, NULL, NULL, NULL},
};
