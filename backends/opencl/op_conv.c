/*
 * op_conv.c — host side of conv2d, conv_transpose2d, conv2d_grad_weight (src/ops/conv.c: stride,
 * pads t l b r, dilation, groups) and max_pool2d, avg_pool2d and their gradients (src/ops/pool.c:
 * kernel, stride, pads, dilation (max) or count_include_pad (avg)), as the direct loops of
 * kernels/conv.cl. f32, NCHW. The attributes are read through tessera_ops.h's decoders
 * (ts_attrs_<op>_of), as the CPU's kernels read them.
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

/* conv2d's decoder reads the attributes of all three ops, which share i[0..8] (src/graph/
 * op_attrs.def; src/ops/conv.c does the same). */
static int sup_conv(const ts_abi_node *n, const ts_abi_value *v) {
    ts_attrs_conv2d a = ts_attrs_conv2d_of(n);
    if (!rank4_f32(n, v) || a.stride_h < 1 || a.stride_w < 1 || a.dilation_h < 1 || a.dilation_w < 1 || a.groups < 1)
        return 0;
    if (strcmp(n->op, TS_OPNAME_CONV2D) == 0 && (a.act != TS_CONV_ACT_NONE || a.clamp != 0))
        return 0; /* a fused epilogue (src/ops/conv.c): the pass leaves conv2d unfused here */
    return a.pad_top >= 0 && a.pad_left >= 0 && a.pad_bottom >= 0 && a.pad_right >= 0;
}

static ts_status prep_conv(ocl_dev *d, const ts_abi_node *n, const ts_abi_value *v, void *p) {
    conv_geom *q = p;
    ts_attrs_conv2d a = ts_attrs_conv2d_of(n);
    q->sh = a.stride_h, q->sw = a.stride_w;
    q->pt = a.pad_top, q->pl = a.pad_left, q->pb = a.pad_bottom, q->pr = a.pad_right;
    q->dh = a.dilation_h, q->dw = a.dilation_w, q->G = a.groups;
    const ts_abi_value *x = &v[n->in[0]], *b = &v[n->in[1]], *o = &v[n->out[0]];
    const ts_abi_value *src = x, *dst = o, *w = b;
    if (strcmp(n->op, TS_OPNAME_CONV_TRANSPOSE2D) == 0) src = o, dst = x;
    if (strcmp(n->op, TS_OPNAME_CONV2D_GRAD_WEIGHT) == 0) src = x, dst = b, w = o;
    q->N = src->shape[0], q->C = src->shape[1], q->H = src->shape[2], q->W = src->shape[3];
    q->O = dst->shape[1], q->OH = dst->shape[2], q->OW = dst->shape[3];
    q->KH = w->shape[2], q->KW = w->shape[3];
    return TS_OK;
}

static ts_status run_conv(ocl_node_ctx *c) {
    const conv_geom *q = c->p;
    ocl_args a = {ocl_kernel(c->d, c->n->op), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    int gw = strcmp(c->n->op, TS_OPNAME_CONV2D_GRAD_WEIGHT) == 0;
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

/* The window of the four pooling ops (each its own decoder, as src/ops/pool.c reads them): kernel,
 * stride and pads; the max ops add a dilation, the avg ops count_include_pad. */
#define POOL_WINDOW(q, a)                                                                          \
    ((q)->kh = (a).kernel_h, (q)->kw = (a).kernel_w, (q)->sh = (a).stride_h, (q)->sw = (a).stride_w, \
     (q)->pt = (a).pad_top, (q)->pl = (a).pad_left, (q)->pb = (a).pad_bottom, (q)->pr = (a).pad_right)
#define POOL_MAX(q, a) (POOL_WINDOW(q, a), (q)->dh = (a).dilation_h, (q)->dw = (a).dilation_w, (q)->include_pad = 0)
#define POOL_AVG(q, a) (POOL_WINDOW(q, a), (q)->dh = (q)->dw = 1, (q)->include_pad = (a).count_include_pad != 0)

static void pool_attrs(pool_geom *q, const ts_abi_node *n) {
    if (strcmp(n->op, TS_OPNAME_MAX_POOL2D) == 0) {
        ts_attrs_max_pool2d a = ts_attrs_max_pool2d_of(n);
        POOL_MAX(q, a);
    } else if (strcmp(n->op, TS_OPNAME_MAX_POOL2D_GRAD) == 0) {
        ts_attrs_max_pool2d_grad a = ts_attrs_max_pool2d_grad_of(n);
        POOL_MAX(q, a);
    } else if (strcmp(n->op, TS_OPNAME_AVG_POOL2D) == 0) {
        ts_attrs_avg_pool2d a = ts_attrs_avg_pool2d_of(n);
        POOL_AVG(q, a);
    } else {
        ts_attrs_avg_pool2d_grad a = ts_attrs_avg_pool2d_grad_of(n);
        POOL_AVG(q, a);
    }
}

static int sup_pool(const ts_abi_node *n, const ts_abi_value *v) {
    if (!ocl_all_f32(n, v) || n->nout != 1 || v[n->out[0]].ndim != 4 || v[n->in[0]].ndim != 4) return 0;
    pool_geom q;
    pool_attrs(&q, n);
    return q.kh >= 1 && q.kw >= 1 && q.sh >= 1 && q.sw >= 1;
}

static ts_status prep_pool(ocl_dev *d, const ts_abi_node *n, const ts_abi_value *v, void *p) {
    pool_geom *q = p;
    int avg_grad = strcmp(n->op, TS_OPNAME_AVG_POOL2D_GRAD) == 0;
    pool_attrs(q, n);
    const ts_abi_value *big = avg_grad ? &v[n->out[0]] : &v[n->in[0]];
    const ts_abi_value *small = strcmp(n->op, TS_OPNAME_MAX_POOL2D_GRAD) == 0 ? &v[n->in[1]]
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
