/*
 * op_conv.c — host side of conv2d, conv_transpose2d, conv2d_grad_weight (src/ops/conv.c:
 * i[0..1] stride, i[2..5] pads t l b r, i[6..7] dilation, i[8] groups) and max_pool2d,
 * avg_pool2d and their gradients (src/ops/pool.c: i[0..1] kernel, i[2..3] stride, i[4..7] pads,
 * i[8..9] dilation (max) or H, W of x (avg_pool2d_grad), i[11] count_include_pad), as the direct
 * loops of kernels/conv.cl. f32, NCHW.
 */
#include "ocl.h"

typedef struct conv_geom {
    cl_long N, C, H, W, O, OH, OW, KH, KW, sh, sw, pt, pl, pb, pr, dh, dw, G;
} conv_geom;

static int rank4_f32(const ts_abi_node *n, const ts_abi_value *v) {
    if (!ocl_all_f32(n, v) || n->nin < 2 || n->nout != 1) return 0;
    for (int k = 0; k < 2; k++)
        if (n->in[k] < 0 || v[n->in[k]].ndim != 4) return 0;
    return v[n->out[0]].ndim == 4;
}

static int sup_conv(const ts_abi_node *n, const ts_abi_value *v) {
    const int64_t *a = n->iattr;
    if (!rank4_f32(n, v) || a[0] < 1 || a[1] < 1 || a[6] < 1 || a[7] < 1 || a[8] < 1) return 0;
    for (int k = 2; k < 6; k++)
        if (a[k] < 0) return 0;
    return 1;
}

static ts_status prep_conv(ocl_dev *d, const ts_abi_node *n, const ts_abi_value *v, void *p) {
    conv_geom *q = p;
    const int64_t *a = n->iattr;
    q->sh = a[0], q->sw = a[1], q->pt = a[2], q->pl = a[3], q->pb = a[4], q->pr = a[5];
    q->dh = a[6], q->dw = a[7], q->G = a[8];
    const ts_abi_value *x = &v[n->in[0]], *b = &v[n->in[1]], *o = &v[n->out[0]];
    const ts_abi_value *src = x, *dst = o, *w = b;
    if (strcmp(n->op, "conv_transpose2d") == 0) src = o, dst = x;
    if (strcmp(n->op, "conv2d_grad_weight") == 0) src = x, dst = b, w = o;
    q->N = src->shape[0], q->C = src->shape[1], q->H = src->shape[2], q->W = src->shape[3];
    q->O = dst->shape[1], q->OH = dst->shape[2], q->OW = dst->shape[3];
    q->KH = w->shape[2], q->KW = w->shape[3];
    return TS_OK;
}

static ts_status run_conv(ocl_node_ctx *c) {
    const conv_geom *q = c->p;
    ocl_args a = {ocl_kernel(c->d, c->n->op), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    int gw = strcmp(c->n->op, "conv2d_grad_weight") == 0;
    ocl_arg_buf(&a, ocl_inbuf(c, 0));
    ocl_arg_buf(&a, ocl_inbuf(c, 1));
    if (!gw) ocl_arg_buf(&a, ocl_inbuf(c, 2));
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof *q, q);
    return ocl_launch(c->d, &a, ocl_numel(ocl_out(c, 0)));
}

/* ------------------------------------------------------------------ pooling */

typedef struct pool_geom {
    cl_long planes, H, W, OH, OW, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, include_pad;
} pool_geom;

static int sup_pool(const ts_abi_node *n, const ts_abi_value *v) {
    if (!ocl_all_f32(n, v) || n->nout != 1 || v[n->out[0]].ndim != 4 || v[n->in[0]].ndim != 4) return 0;
    const int64_t *a = n->iattr;
    return a[0] >= 1 && a[1] >= 1 && a[2] >= 1 && a[3] >= 1;
}

static ts_status prep_pool(ocl_dev *d, const ts_abi_node *n, const ts_abi_value *v, void *p) {
    pool_geom *q = p;
    const int64_t *a = n->iattr;
    int is_max = strncmp(n->op, "max", 3) == 0, avg_grad = strcmp(n->op, "avg_pool2d_grad") == 0;
    q->kh = a[0], q->kw = a[1], q->sh = a[2], q->sw = a[3];
    q->pt = a[4], q->pl = a[5], q->pb = a[6], q->pr = a[7];
    q->dh = is_max ? a[8] : 1, q->dw = is_max ? a[9] : 1;
    q->include_pad = a[11] != 0;
    const ts_abi_value *big = avg_grad ? &v[n->out[0]] : &v[n->in[0]];
    const ts_abi_value *small = strcmp(n->op, "max_pool2d_grad") == 0 ? &v[n->in[1]]
                                : avg_grad ? &v[n->in[0]] : &v[n->out[0]];
    q->planes = big->shape[0] * big->shape[1];
    q->H = big->shape[2], q->W = big->shape[3], q->OH = small->shape[2], q->OW = small->shape[3];
    return TS_OK;
}

static ts_status run_pool(ocl_node_ctx *c) {
    const pool_geom *q = c->p;
    int grad = strstr(c->n->op, "_grad") != NULL;
    cl_int is_max = strncmp(c->n->op, "max", 3) == 0;
    ocl_args a = {ocl_kernel(c->d, grad ? "pool2d_grad" : "pool2d"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    if (grad) {
        ocl_arg_buf(&a, is_max ? ocl_inbuf(c, 0) : (ts_buffer){0});
        ocl_arg_buf(&a, ocl_inbuf(c, is_max ? 1 : 0));
    } else {
        ocl_arg_buf(&a, ocl_inbuf(c, 0));
    }
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg(&a, sizeof *q, q);
    OCL_ARG(&a, is_max);
    return ocl_launch(c->d, &a, grad ? q->planes : q->planes * q->OH * q->OW);
}

const ocl_op ocl_ops_conv[] = {
    {"conv2d", sup_conv, prep_conv, run_conv, NULL},
    {"conv_transpose2d", sup_conv, prep_conv, run_conv, NULL},
    {"conv2d_grad_weight", sup_conv, prep_conv, run_conv, NULL},
    {"max_pool2d", sup_pool, prep_pool, run_pool, NULL},
    {"max_pool2d_grad", sup_pool, prep_pool, run_pool, NULL},
    {"avg_pool2d", sup_pool, prep_pool, run_pool, NULL},
    {"avg_pool2d_grad", sup_pool, prep_pool, run_pool, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
