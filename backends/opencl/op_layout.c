/*
 * op_layout.c — host side of kernels/layout.cl: pad, pad_grad (src/ops/pad.c: per axis before <<
 * 32 | after (int32 each), a ts_pad_mode, the constant's double bits), tile and tile_grad (tile.c:
 * the shapes say it all), argreduce (argreduce.c: axis, select_last, is_min) and resize2d,
 * resize2d_grad (resize.c: OH, OW, mode, coordinates, rounding, scales). The attributes are read
 * through tessera_ops.h's decoders (ts_attrs_<op>_of). The resize taps are computed here in
 * double with the CPU's formulas and copied to the workspace.
 */
#include "ocl.h"

#include <math.h>
#include <stdlib.h>

typedef struct pt_geom {
    cl_int nd, mode;
    cl_long n;
    cl_long a[TS_MAX_DIMS], b[TS_MAX_DIMS], c[TS_MAX_DIMS];
} pt_geom;

static void pt_init(pt_geom *q, const ts_abi_value *big, const ts_abi_value *small) {
    memset(q, 0, sizeof *q);
    q->nd = big->ndim;
    q->n = ocl_numel(big);
    for (int d = 0; d < big->ndim; d++) q->a[d] = big->shape[d], q->b[d] = small->shape[d];
}

/* ------------------------------------------------------------------ pad */

/* pad_grad's attributes are the forward's. */
static ts_attrs_pad pad_attrs(const ts_abi_node *n) {
    if (strcmp(n->op, TS_OPNAME_PAD) == 0) return ts_attrs_pad_of(n);
    ts_attrs_pad_grad g = ts_attrs_pad_grad_of(n);
    ts_attrs_pad a = {.mode = g.mode, .value_bits = g.value_bits};
    memcpy(a.pads, g.pads, sizeof a.pads);
    return a;
}

/* The pad before axis a's data (pads[a]'s high 32 bits, signed). */
static int64_t pad_before(const ts_attrs_pad *at, int a) { return (int32_t)(uint32_t)((uint64_t)at->pads[a] >> 32); }

static int sup_pad(const ts_abi_node *n, const ts_abi_value *v) {
    int grad = strcmp(n->op, TS_OPNAME_PAD_GRAD) == 0;
    if (n->nout != 1 || n->nin != (grad ? 2 : 1) || n->in[0] < 0) return 0;
    ts_dtype t = v[n->in[0]].dtype;
    int64_t mode = pad_attrs(n).mode;
    if (mode < 0 || mode >= TS_OPS_PAD_MODE_COUNT || v[n->in[0]].ndim < 1) return 0;
    if (grad) return ocl_all_f32(n, v);
    return ocl_dtype_size(t) != 0;
}

static uint64_t constant_bits(ts_dtype t, double v) {
    uint64_t out = 0;
    switch (t) {
    case TS_F32: { float f = (float)v; memcpy(&out, &f, 4); break; }
    case TS_BF16: {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint16_t h = (u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)((u >> 16) | 0x40)
                                                     : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        out = h;
        break;
    }
    case TS_F16: { _Float16 h = (_Float16)(float)v; memcpy(&out, &h, 2); break; } /* nearest even */
    case TS_I32: { int32_t i = (int32_t)v; memcpy(&out, &i, 4); break; }
    case TS_I64: { int64_t i = (int64_t)v; memcpy(&out, &i, 8); break; }
    default: out = (uint8_t)v; break;
    }
    return out;
}

static ts_status run_pad(ocl_node_ctx *c) {
    int grad = strcmp(c->n->op, TS_OPNAME_PAD_GRAD) == 0;
    ts_attrs_pad at = pad_attrs(c->n);
    const ts_abi_value *x = ocl_in(c, 0), *y = grad ? ocl_in(c, 1) : ocl_out(c, 0);
    pt_geom q;
    pt_init(&q, y, x);
    q.mode = (cl_int)at.mode;
    for (int a = 0; a < x->ndim; a++) q.c[a] = pad_before(&at, a);
    ocl_args k = {ocl_kernel(c->d, grad ? "pad_grad" : "pad"), 0, CL_SUCCESS, c->n->op};
    if (!k.k) return TS_ERR_RUNTIME;
    if (grad) {
        cl_long nx = ocl_numel(x);
        ocl_arg_buf(&k, ocl_inbuf(c, 1));
        ocl_arg_buf(&k, ocl_outbuf(c, 0));
        ocl_arg(&k, sizeof q, &q);
        OCL_ARG(&k, nx);
        return ocl_launch(c->d, &k, 1);
    }
    double val;
    memcpy(&val, &at.value_bits, sizeof val);
    cl_ulong cv = constant_bits(x->dtype, val);
    cl_int es = (cl_int)ocl_dtype_size(x->dtype);
    ocl_arg_buf(&k, x->buf);
    ocl_arg_buf(&k, ocl_outbuf(c, 0));
    ocl_arg(&k, sizeof q, &q);
    OCL_ARG(&k, es);
    OCL_ARG(&k, cv);
    return ocl_launch(c->d, &k, q.n);
}

/* ------------------------------------------------------------------ tile */

static int sup_tile(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin != 1 || n->nout != 1 || n->in[0] < 0) return 0;
    if (strcmp(n->op, TS_OPNAME_TILE_GRAD) == 0) return ocl_all_f32(n, v);
    return ocl_dtype_size(v[n->in[0]].dtype) != 0;
}

static ts_status run_tile(ocl_node_ctx *c) {
    int grad = strcmp(c->n->op, TS_OPNAME_TILE_GRAD) == 0;
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    pt_geom q;
    pt_init(&q, grad ? x : y, grad ? y : x);
    if (grad) q.n = ocl_numel(y);
    for (int d = 0; d < q.nd; d++)
        if (q.b[d] == 0) return TS_OK; /* nothing to read or write */
    ocl_args k = {ocl_kernel(c->d, grad ? "tile_grad" : "tile"), 0, CL_SUCCESS, c->n->op};
    if (!k.k) return TS_ERR_RUNTIME;
    cl_int es = (cl_int)ocl_dtype_size(y->dtype);
    ocl_arg_buf(&k, x->buf);
    ocl_arg_buf(&k, y->buf);
    ocl_arg(&k, sizeof q, &q);
    if (!grad) OCL_ARG(&k, es);
    return ocl_launch(c->d, &k, q.n);
}

/* ------------------------------------------------------------------ argreduce */

static int sup_arg(const ts_abi_node *n, const ts_abi_value *v) {
    int64_t axis = ts_attrs_argreduce_of(n).axis;
    return n->nin == 1 && n->nout == 1 && ocl_is(n, v, 0, TS_F32) && v[n->out[0]].dtype == TS_I64 && axis >= 0 &&
           axis < v[n->in[0]].ndim;
}

static ts_status run_arg(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0);
    ts_attrs_argreduce at = ts_attrs_argreduce_of(c->n);
    int axis = (int)at.axis;
    cl_long outer = 1, inner = 1, len = x->shape[axis];
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    cl_int last = at.select_last != 0, is_min = at.is_min != 0;
    ocl_args k = {ocl_kernel(c->d, "argreduce"), 0, CL_SUCCESS, c->n->op};
    if (!k.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&k, x->buf);
    ocl_arg_buf(&k, ocl_outbuf(c, 0));
    OCL_ARG(&k, outer);
    OCL_ARG(&k, len);
    OCL_ARG(&k, inner);
    OCL_ARG(&k, last);
    OCL_ARG(&k, is_min);
    return ocl_launch(c->d, &k, len ? outer * inner : 0);
}

/* ------------------------------------------------------------------ resize2d */

typedef struct tap {
    int32_t i0, i1;
    float l;
} tap;

/* resize2d_grad's attributes are the forward's (and x's H, W, which the output's shape gives). */
static ts_attrs_resize2d resize_attrs(const ts_abi_node *n) {
    if (strcmp(n->op, TS_OPNAME_RESIZE2D) == 0) return ts_attrs_resize2d_of(n);
    ts_attrs_resize2d_grad g = ts_attrs_resize2d_grad_of(n);
    return (ts_attrs_resize2d){.out_h = g.out_h, .out_w = g.out_w, .mode = g.mode, .coord = g.coord,
                               .round = g.round, .scale_h = g.scale_h, .scale_w = g.scale_w};
}

static void axis_taps(const ts_attrs_resize2d *at, int64_t in, int64_t out, float given, tap *t) {
    int mode = (int)at->mode, coord = (int)at->coord, rnd = (int)at->round;
    double s = given > 0.f ? (double)given : (double)out / (double)in;
    for (int64_t o = 0; o < out; o++) {
        double c;
        switch (coord) {
        case TS_COORD_ASYMMETRIC: c = (double)o / s; break;
        case TS_COORD_ALIGN_CORNERS: c = out == 1 ? 0.0 : (double)o * (double)(in - 1) / (double)(out - 1); break;
        case TS_COORD_PYTORCH_HALF_PIXEL: c = out == 1 ? 0.0 : ((double)o + 0.5) / s - 0.5; break;
        default: c = ((double)o + 0.5) / s - 0.5; break;
        }
        if (mode == TS_RESIZE_NEAREST) {
            double r;
            switch (rnd) {
            case TS_ROUND_PREFER_CEIL: r = floor(c + 0.5); break;
            case TS_ROUND_FLOOR: r = floor(c); break;
            case TS_ROUND_CEIL: r = ceil(c); break;
            default: r = ceil(c - 0.5); break;
            }
            int64_t i = r < 0 ? 0 : r > (double)(in - 1) ? in - 1 : (int64_t)r;
            t[o] = (tap){(int32_t)i, (int32_t)i, 0.f};
        } else {
            if (c < 0) c = 0;
            if (c > (double)(in - 1)) c = (double)(in - 1);
            int64_t i0 = (int64_t)floor(c), i1 = i0 + 1 < in ? i0 + 1 : in - 1;
            t[o] = (tap){(int32_t)i0, (int32_t)i1, (float)(c - (double)i0)};
        }
    }
}

static int sup_resize(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin == 1 && n->nout == 1 && ocl_all_f32(n, v) && v[n->in[0]].ndim >= 2 &&
           (resize_attrs(n).mode == TS_RESIZE_NEAREST || resize_attrs(n).mode == TS_RESIZE_LINEAR);
}

static size_t ws_resize(const ts_abi_node *n, const ts_abi_value *v) {
    ts_attrs_resize2d at = resize_attrs(n);
    return sizeof(tap) * (size_t)(at.out_h + at.out_w) + 64;
}

static ts_status run_resize(ocl_node_ctx *c) {
    int grad = strcmp(c->n->op, TS_OPNAME_RESIZE2D_GRAD) == 0;
    ts_attrs_resize2d at = resize_attrs(c->n);
    const ts_abi_value *big = grad ? ocl_out(c, 0) : ocl_in(c, 0);
    cl_long H = big->shape[big->ndim - 2], W = big->shape[big->ndim - 1], OH = at.out_h, OW = at.out_w;
    cl_long planes = H && W ? ocl_numel(big) / (H * W) : 0;
    tap *t = malloc(sizeof(tap) * (size_t)(OH + OW));
    if (!t) return OCL_ERR(TS_ERR_NOMEM, "op %s: out of host memory", c->n->op);
    axis_taps(&at, H, OH, at.scale_h, t);
    axis_taps(&at, W, OW, at.scale_w, t + OH);
    ts_status s = ocl_copy_to_device(c->d, c->workspace, t, sizeof(tap) * (size_t)(OH + OW));
    free(t);
    if (s) return s;
    ocl_args k = {ocl_kernel(c->d, grad ? "resize2d_grad" : "resize2d"), 0, CL_SUCCESS, c->n->op};
    if (!k.k) return TS_ERR_RUNTIME;
    cl_int linear = at.mode == TS_RESIZE_LINEAR;
    ocl_arg_buf(&k, ocl_inbuf(c, 0));
    ocl_arg_buf(&k, c->workspace);
    ocl_arg_buf(&k, ocl_outbuf(c, 0));
    OCL_ARG(&k, planes);
    OCL_ARG(&k, H);
    OCL_ARG(&k, W);
    OCL_ARG(&k, OH);
    OCL_ARG(&k, OW);
    OCL_ARG(&k, linear);
    return ocl_launch(c->d, &k, grad ? planes : planes * OH * OW);
}

const ocl_op ocl_ops_layout[] = {
    {"pad", sup_pad, NULL, run_pad, NULL},
    {"pad_grad", sup_pad, NULL, run_pad, NULL},
    {"tile", sup_tile, NULL, run_tile, NULL},
    {"tile_grad", sup_tile, NULL, run_tile, NULL},
    {"argreduce", sup_arg, NULL, run_arg, NULL},
    {"resize2d", sup_resize, NULL, run_resize, ws_resize},
    {"resize2d_grad", sup_resize, NULL, run_resize, ws_resize},
    {NULL, NULL, NULL, NULL, NULL},
};
