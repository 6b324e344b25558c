/*
 * op_linalg.c — host side of kernels/linalg.cl and sample.cl: det (src/ops/det.c), dft (dft.c:
 * axis, inverse, onesided, L), grid_sample (grid_sample.c: mode, padding, align_corners) and
 * roi_align (roi_align.c: OH, OW, sampling ratio, half_pixel, spatial scale). The attributes are
 * read through tessera_ops.h's decoders (ts_attrs_<op>_of).
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
    ts_attrs_dft at = ts_attrs_dft_of(n);
    return x->ndim >= 2 && (c == 1 || c == 2) && at.axis >= 0 && at.axis < x->ndim - 1 && at.length >= 1;
}

static ts_status run_dft(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    ts_attrs_dft at = ts_attrs_dft_of(c->n);
    int axis = (int)at.axis;
    cl_long outer = 1, inner = 1, K = y->shape[axis], len = x->shape[axis], L = at.length;
    cl_long ch = x->shape[x->ndim - 1];
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim - 1; d++) inner *= x->shape[d];
    cl_int inv = at.inverse != 0;
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

static int sup_grid(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin != 2 || n->nout != 1 || !ocl_all_f32(n, v)) return 0;
    ts_attrs_grid_sample at = ts_attrs_grid_sample_of(n);
    return v[n->in[0]].ndim == 4 && v[n->in[1]].ndim == 4 && at.mode >= 0 && at.mode < TS_OPS_GRID_MODE_COUNT &&
           at.padding >= 0 && at.padding < TS_OPS_GRID_PADDING_COUNT;
}

static ts_status run_grid(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *g = ocl_in(c, 1);
    cl_long N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3], OH = g->shape[1], OW = g->shape[2];
    ts_attrs_grid_sample at = ts_attrs_grid_sample_of(c->n);
    cl_int mode = (cl_int)at.mode, pad = (cl_int)at.padding, align = at.align_corners != 0;
    ocl_args a = {ocl_kernel(c->d, "grid_sample"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, g->buf);
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, N);
    OCL_ARG(&a, C);
    OCL_ARG(&a, H);
    OCL_ARG(&a, W);
    OCL_ARG(&a, OH);
    OCL_ARG(&a, OW);
    OCL_ARG(&a, mode);
    OCL_ARG(&a, pad);
    OCL_ARG(&a, align);
    return ocl_launch(c->d, &a, N * C * OH * OW);
}

static int sup_roi(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin != 3 || n->nout != 1 || !ocl_is(n, v, 0, TS_F32) || !ocl_is(n, v, 1, TS_F32)) return 0;
    ts_attrs_roi_align at = ts_attrs_roi_align_of(n);
    return (ocl_is(n, v, 2, TS_I32) || ocl_is(n, v, 2, TS_I64)) && v[n->in[0]].ndim == 4 && at.out_h >= 1 &&
           at.out_w >= 1 && at.sampling_ratio >= 0;
}

static ts_status run_roi(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *bi = ocl_in(c, 2);
    cl_long N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3], R = bi->shape[0];
    ts_attrs_roi_align at = ts_attrs_roi_align_of(c->n);
    cl_long OH = at.out_h, OW = at.out_w, ratio = at.sampling_ratio;
    cl_int half = at.half_pixel != 0, is64 = bi->dtype == TS_I64, tag = (cl_int)(c->n - c->plan->nodes) + 1;
    cl_float scale = at.spatial_scale;
    ocl_args a = {ocl_kernel(c->d, "roi_align"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, ocl_inbuf(c, 1));
    ocl_arg_buf(&a, bi->buf);
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, N);
    OCL_ARG(&a, C);
    OCL_ARG(&a, H);
    OCL_ARG(&a, W);
    OCL_ARG(&a, R);
    OCL_ARG(&a, OH);
    OCL_ARG(&a, OW);
    OCL_ARG(&a, ratio);
    OCL_ARG(&a, half);
    OCL_ARG(&a, scale);
    OCL_ARG(&a, is64);
    OCL_ARG(&a, c->d->err);
    OCL_ARG(&a, tag);
    return ocl_launch(c->d, &a, R * C * OH * OW);
}

const ocl_op ocl_ops_linalg[] = {
    {"grid_sample", sup_grid, NULL, run_grid, NULL},
    {"roi_align", sup_roi, NULL, run_roi, NULL},
    {"det", sup_det, NULL, run_det, ws_det},
    {"dft", sup_dft, NULL, run_dft, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
