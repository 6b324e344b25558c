/*
 * op_linalg.c — host side of kernels/linalg.cl: det (src/ops/det.c) and dft (dft.c: i[0] axis,
 * i[1] inverse, i[2] onesided, i[3] L).
 */
#include "ocl.h"

static int sup_det(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin != 1 || n->nout != 1 || !ocl_all_f32(n, v)) return 0;
    const ts_abi_value *x = &v[n->in[0]];
    return x->ndim >= 2 && x->shape[x->ndim - 1] == x->shape[x->ndim - 2];
}

static size_t ws_det(const ts_abi_node *n, const ts_abi_value *v) { return (size_t)ocl_numel(&v[n->in[0]]) * 8 + 64; }

static ts_status run_det(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0);
    cl_long M = x->shape[x->ndim - 1], cnt = ocl_numel(ocl_out(c, 0)); /* a 0 x 0 matrix: d = 1 */
    ocl_args a = {ocl_kernel(c->d, "det"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, c->workspace);
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, M);
    return ocl_launch(c->d, &a, cnt);
}

static int sup_dft(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin != 1 || n->nout != 1 || !ocl_all_f32(n, v)) return 0;
    const ts_abi_value *x = &v[n->in[0]];
    int64_t c = x->ndim ? x->shape[x->ndim - 1] : 0;
    return x->ndim >= 2 && (c == 1 || c == 2) && n->iattr[0] >= 0 && n->iattr[0] < x->ndim - 1 && n->iattr[3] >= 1;
}

static ts_status run_dft(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    int axis = (int)c->n->iattr[0];
    cl_long outer = 1, inner = 1, K = y->shape[axis], len = x->shape[axis], L = c->n->iattr[3];
    cl_long ch = x->shape[x->ndim - 1];
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim - 1; d++) inner *= x->shape[d];
    cl_int inv = c->n->iattr[1] != 0;
    ocl_args a = {ocl_kernel(c->d, "dft"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, y->buf);
    OCL_ARG(&a, outer);
    OCL_ARG(&a, inner);
    OCL_ARG(&a, K);
    OCL_ARG(&a, len);
    OCL_ARG(&a, L);
    OCL_ARG(&a, ch);
    OCL_ARG(&a, inv);
    return ocl_launch(c->d, &a, outer * K * inner);
}

const ocl_op ocl_ops_linalg[] = {
    {"det", sup_det, NULL, run_det, ws_det},
    {"dft", sup_dft, NULL, run_dft, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
