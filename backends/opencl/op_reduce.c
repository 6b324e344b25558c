/*
 * op_reduce.c — host side of reduce_sum, reduce_mean, reduce_max, reduce_max_grad (src/ops/
 * reduce.c: a bit mask of reduced axes; keepdims the output's shape shows) and sum_to (src/ops/
 * elementwise.c: sums a broadcast gradient back to a shape), reduce_prod and reduce_prod_grad
 * (reduce_prod.c), all as kernels/reduce.cl over kept / reduced dims; and trilu (trilu.c). The
 * attributes are read through tessera_ops.h's decoders (ts_attrs_<op>_of).
 */
#include "ocl.h"

/* Split x's dims by mask into kept (k) and reduced (r) geometries. */
static void split(const ts_abi_value *x, uint64_t mask, ocl_bc *k, ocl_bc *r) {
    memset(k, 0, sizeof *k);
    memset(r, 0, sizeof *r);
    int64_t st[TS_MAX_DIMS], s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->shape[i];
    }
    k->n = r->n = 1;
    for (int i = 0; i < x->ndim; i++) {
        ocl_bc *b = (mask >> i & 1) ? r : k;
        b->shape[b->nd] = x->shape[i];
        b->st[0][b->nd++] = st[i];
        b->n *= x->shape[i];
    }
    for (ocl_bc *b = k; b; b = b == k ? r : NULL)
        if (!b->nd) {
            b->nd = 1;
            b->shape[0] = 1;
        }
}

/* The reduced axes of a reduce op or of its gradient (the forward's). */
static uint64_t axes_mask(const ts_abi_node *n) {
    const char *op = n->op;
    int64_t m = !strcmp(op, TS_OPNAME_REDUCE_SUM)       ? ts_attrs_reduce_sum_of(n).axes_mask
              : !strcmp(op, TS_OPNAME_REDUCE_MEAN)      ? ts_attrs_reduce_mean_of(n).axes_mask
              : !strcmp(op, TS_OPNAME_REDUCE_MAX)       ? ts_attrs_reduce_max_of(n).axes_mask
              : !strcmp(op, TS_OPNAME_REDUCE_MAX_GRAD)  ? ts_attrs_reduce_max_grad_of(n).axes_mask
              : !strcmp(op, TS_OPNAME_REDUCE_PROD)      ? ts_attrs_reduce_prod_of(n).axes_mask
                                                        : ts_attrs_reduce_prod_grad_of(n).axes_mask;
    return (uint64_t)m;
}

static int sup_reduce(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin >= 1 && n->nout == 1 && ocl_all_f32(n, v);
}

static ts_status run_red(ocl_node_ctx *c, uint64_t mask) {
    const ts_abi_value *x = ocl_in(c, 0);
    ocl_bc k, r;
    split(x, mask, &k, &r);
    const char *op = c->n->op;
    cl_int mode = strcmp(op, TS_OPNAME_REDUCE_MEAN) == 0 ? 1 : strcmp(op, TS_OPNAME_REDUCE_MAX) == 0 ? 2
                : strcmp(op, TS_OPNAME_REDUCE_PROD) == 0 ? 3 : 0;
    ocl_args a = {ocl_kernel(c->d, "reduce"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof k, &k);
    ocl_arg(&a, sizeof r, &r);
    OCL_ARG(&a, mode);
    return ocl_launch(c->d, &a, k.n);
}

static ts_status run_reduce(ocl_node_ctx *c) { return run_red(c, axes_mask(c->n)); }

static ts_status run_sum_to(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *o = ocl_out(c, 0);
    uint64_t mask = 0;
    int off = x->ndim - o->ndim;
    for (int i = 0; i < x->ndim; i++)
        if (i < off || (o->shape[i - off] == 1 && x->shape[i] != 1)) mask |= 1ull << i;
    return run_red(c, mask);
}

/* reduce_max_grad(x, y, gy) and reduce_prod_grad(x, gy) */
static ts_status run_max_grad(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0);
    ocl_bc k, r;
    split(x, axes_mask(c->n), &k, &r);
    ocl_args a = {ocl_kernel(c->d, c->n->op), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    for (int i = 0; i < c->n->nin; i++) ocl_arg_buf(&a, ocl_inbuf(c, i));
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof k, &k);
    ocl_arg(&a, sizeof r, &r);
    return ocl_launch(c->d, &a, k.n);
}

/* trilu(x, k?): k from the optional i64 input (read here) or the attribute; upper (src/ops/trilu.c) */
static int sup_trilu(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nout != 1 || n->nin < 1 || n->in[0] < 0 || v[n->in[0]].ndim < 2 || !ocl_dtype_size(v[n->in[0]].dtype))
        return 0;
    return n->nin < 2 || n->in[1] < 0 || (v[n->in[1]].dtype == TS_I64 && ocl_numel(&v[n->in[1]]) == 1);
}

static ts_status run_trilu(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0);
    ts_attrs_trilu at = ts_attrs_trilu_of(c->n);
    cl_long kd = at.k, n = ocl_numel(x), R = x->shape[x->ndim - 2], C = x->shape[x->ndim - 1];
    if (c->n->nin > 1 && c->n->in[1] >= 0) {
        ts_status s = ocl_copy_to_host(c->d, &kd, ocl_inbuf(c, 1), 8);
        if (s) return s;
    }
    ocl_args a = {ocl_kernel(c->d, "trilu"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_int upper = at.upper != 0, es = (cl_int)ocl_dtype_size(x->dtype);
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, n);
    OCL_ARG(&a, R);
    OCL_ARG(&a, C);
    OCL_ARG(&a, upper);
    OCL_ARG(&a, kd);
    OCL_ARG(&a, es);
    return ocl_launch(c->d, &a, n);
}

const ocl_op ocl_ops_reduce[] = {
    {"reduce_prod", sup_reduce, NULL, run_reduce, NULL},
    {"reduce_prod_grad", sup_reduce, NULL, run_max_grad, NULL},
    {"trilu", sup_trilu, NULL, run_trilu, NULL},
    {"reduce_sum", sup_reduce, NULL, run_reduce, NULL},
    {"reduce_mean", sup_reduce, NULL, run_reduce, NULL},
    {"reduce_max", sup_reduce, NULL, run_reduce, NULL},
    {"reduce_max_grad", sup_reduce, NULL, run_max_grad, NULL},
    {"sum_to", sup_reduce, NULL, run_sum_to, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
