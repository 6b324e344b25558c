/*
 * op_reduce.c — host side of reduce_sum, reduce_mean, reduce_max, reduce_max_grad (src/ops/
 * reduce.c: i[0] bit mask of reduced axes, i[1] keepdims) and sum_to (src/ops/elementwise.c:
 * sums a broadcast gradient back to a shape), all as kernels/reduce.cl over kept / reduced dims.
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

static int sup_reduce(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin >= 1 && n->nout == 1 && ocl_all_f32(n, v);
}

static ts_status run_red(ocl_node_ctx *c, uint64_t mask) {
    const ts_abi_value *x = ocl_in(c, 0);
    ocl_bc k, r;
    split(x, mask, &k, &r);
    cl_int mode = strcmp(c->n->op, "reduce_mean") == 0 ? 1 : strcmp(c->n->op, "reduce_max") == 0 ? 2 : 0;
    ocl_args a = {ocl_kernel(c->d, "reduce"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof k, &k);
    ocl_arg(&a, sizeof r, &r);
    OCL_ARG(&a, mode);
    return ocl_launch(c->d, &a, k.n);
}

static ts_status run_reduce(ocl_node_ctx *c) { return run_red(c, (uint64_t)c->n->iattr[0]); }

static ts_status run_sum_to(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *o = ocl_out(c, 0);
    uint64_t mask = 0;
    int off = x->ndim - o->ndim;
    for (int i = 0; i < x->ndim; i++)
        if (i < off || (o->shape[i - off] == 1 && x->shape[i] != 1)) mask |= 1ull << i;
    return run_red(c, mask);
}

static ts_status run_max_grad(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0);
    ocl_bc k, r;
    split(x, (uint64_t)c->n->iattr[0], &k, &r);
    ocl_args a = {ocl_kernel(c->d, "reduce_max_grad"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    for (int i = 0; i < 3; i++) ocl_arg_buf(&a, ocl_inbuf(c, i));
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof k, &k);
    ocl_arg(&a, sizeof r, &r);
    return ocl_launch(c->d, &a, k.n);
}

const ocl_op ocl_ops_reduce[] = {
    {"reduce_sum", sup_reduce, NULL, run_reduce, NULL},
    {"reduce_mean", sup_reduce, NULL, run_reduce, NULL},
    {"reduce_max", sup_reduce, NULL, run_reduce, NULL},
    {"reduce_max_grad", sup_reduce, NULL, run_max_grad, NULL},
    {"sum_to", sup_reduce, NULL, run_sum_to, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
