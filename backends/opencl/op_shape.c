/*
 * op_shape.c — host side of the data-movement ops (src/ops/shape.c: reshape, transpose, slice,
 * slice_grad, concat; elementwise.c: expand; gather.c: gather, gather_grad). Every copy is one
 * strided copy (kernels/shape.cl scopy) over an iteration shape; any dtype moves by its size.
 * The attributes are read through tessera_ops.h's decoders (ts_attrs_<op>_of).
 */
#include "ocl.h"

static void contiguous(const ts_abi_value *v, int64_t *st) {
    int64_t s = 1;
    for (int i = v->ndim - 1; i >= 0; i--) {
        st[i] = s;
        s *= v->shape[i];
    }
}

/* Copy over iteration shape it (rank nd), src strides ss, dst strides ds (elements), bases. */
static ts_status scopy(ocl_node_ctx *c, ts_buffer src, ts_buffer dst, int nd, const int64_t *it,
                       const int64_t *ss, const int64_t *ds, int64_t sbase, int64_t dbase, size_t es) {
    ocl_bc g;
    memset(&g, 0, sizeof g);
    g.nd = nd ? nd : 1;
    g.n = 1;
    for (int i = 0; i < g.nd; i++) {
        g.shape[i] = nd ? it[i] : 1;
        g.st[0][i] = nd ? ss[i] : 0;
        g.st[1][i] = nd ? ds[i] : 0;
        g.n *= g.shape[i];
    }
    ocl_args a = {ocl_kernel(c->d, "scopy"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long sb = sbase, db = dbase;
    cl_int e = (cl_int)es;
    ocl_arg_buf(&a, src);
    ocl_arg_buf(&a, dst);
    ocl_arg(&a, sizeof g, &g);
    OCL_ARG(&a, sb);
    OCL_ARG(&a, db);
    OCL_ARG(&a, e);
    return ocl_launch(c->d, &a, g.n);
}

static int sup_any(const ts_abi_node *n, const ts_abi_value *v) {
    for (int k = 0; k < n->nin; k++)
        if (n->in[k] < 0 || !ocl_dtype_size(v[n->in[k]].dtype)) return 0;
    return n->nout == 1 && ocl_dtype_size(v[n->out[0]].dtype);
}

static ts_status run_reshape(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    return ocl_copy(c->d, y->buf, x->buf, (size_t)ocl_numel(y) * ocl_dtype_size(y->dtype));
}

static ts_status run_transpose(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    int64_t xs[TS_MAX_DIMS], ss[TS_MAX_DIMS], ds[TS_MAX_DIMS];
    contiguous(x, xs);
    contiguous(y, ds);
    ts_attrs_transpose at = ts_attrs_transpose_of(c->n);
    for (int j = 0; j < y->ndim; j++) ss[j] = xs[at.perm[j]];
    return scopy(c, x->buf, y->buf, y->ndim, y->shape, ss, ds, 0, 0, ocl_dtype_size(y->dtype));
}

static int sup_transpose(const ts_abi_node *n, const ts_abi_value *v) {
    if (!sup_any(n, v) || n->nin != 1) return 0;
    const ts_abi_value *x = &v[n->in[0]];
    ts_attrs_transpose at = ts_attrs_transpose_of(n);
    int seen = 0;
    for (int j = 0; j < x->ndim; j++) {
        int64_t p = at.perm[j];
        if (p < 0 || p >= x->ndim || (seen >> p & 1)) return 0;
        seen |= 1 << p;
    }
    return 1;
}

static ts_status run_slice(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    int64_t xs[TS_MAX_DIMS], ds[TS_MAX_DIMS];
    contiguous(x, xs);
    contiguous(y, ds);
    ts_attrs_slice at = ts_attrs_slice_of(c->n);
    int axis = (int)at.axis;
    return scopy(c, x->buf, y->buf, y->ndim, y->shape, xs, ds, at.start * xs[axis], 0,
                 ocl_dtype_size(y->dtype));
}

static ts_status run_slice_grad(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    size_t es = ocl_dtype_size(y->dtype);
    ts_status s = ocl_fill0(c->d, y->buf, (size_t)ocl_numel(y) * es);
    if (s) return s;
    int64_t xs[TS_MAX_DIMS], ds[TS_MAX_DIMS];
    contiguous(x, xs);
    contiguous(y, ds);
    ts_attrs_slice_grad at = ts_attrs_slice_grad_of(c->n);
    int axis = (int)at.axis;
    return scopy(c, x->buf, y->buf, x->ndim, x->shape, xs, ds, 0, at.start * ds[axis], es);
}

static ts_status run_concat(ocl_node_ctx *c) {
    const ts_abi_value *y = ocl_out(c, 0);
    int64_t ds[TS_MAX_DIMS], xs[TS_MAX_DIMS], at = 0;
    contiguous(y, ds);
    int axis = (int)ts_attrs_concat_of(c->n).axis;
    for (int k = 0; k < c->n->nin; k++) {
        const ts_abi_value *x = ocl_in(c, k);
        contiguous(x, xs);
        ts_status s = scopy(c, x->buf, y->buf, x->ndim, x->shape, xs, ds, 0, at * ds[axis], ocl_dtype_size(y->dtype));
        if (s) return s;
        at += x->shape[axis];
    }
    return TS_OK;
}

static ts_status run_expand(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0), *y = ocl_out(c, 0);
    ocl_bc g;
    ocl_bc_init(&g, y, 1, &x);
    int64_t ds[TS_MAX_DIMS];
    contiguous(y, ds);
    return scopy(c, x->buf, y->buf, y->ndim, y->shape, g.st[0], ds, 0, 0, ocl_dtype_size(y->dtype));
}

/* ------------------------------------------------------------------ gather */

static int sup_gather(const ts_abi_node *n, const ts_abi_value *v) {
    return n->nin == 2 && n->nout == 1 && ocl_is(n, v, 0, TS_F32) &&
           (ocl_is(n, v, 1, TS_I32) || ocl_is(n, v, 1, TS_I64)) && v[n->out[0]].dtype == TS_F32;
}

static ts_status run_gather_k(ocl_node_ctx *c, int grad) {
    const ts_abi_value *t = ocl_in(c, 0), *ix = ocl_in(c, 1), *o = ocl_out(c, 0);
    const ts_abi_value *tab = grad ? o : t; /* [V, ...rest] */
    cl_long V = tab->shape[0], D = tab->ndim ? ocl_numel(tab) / (V ? V : 1) : 1, N = ocl_numel(ix);
    if (V == 0) D = 1;
    cl_int is64 = ix->dtype == TS_I64, tag = (cl_int)(c->n - c->plan->nodes) + 1;
    if (grad) {
        ts_status s = ocl_fill0(c->d, o->buf, (size_t)ocl_numel(o) * 4);
        if (s) return s;
    }
    ocl_args a = {ocl_kernel(c->d, grad ? "gather_grad" : "gather"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    cl_long cnt = grad ? N : ocl_numel(o);
    ocl_arg_buf(&a, t->buf);
    ocl_arg_buf(&a, ix->buf);
    ocl_arg_buf(&a, o->buf);
    OCL_ARG(&a, cnt);
    OCL_ARG(&a, D);
    OCL_ARG(&a, V);
    OCL_ARG(&a, is64);
    OCL_ARG(&a, c->d->err);
    OCL_ARG(&a, tag);
    return ocl_launch(c->d, &a, grad ? D : cnt);
}
static ts_status run_gather(ocl_node_ctx *c) { return run_gather_k(c, 0); }
static ts_status run_gather_grad(ocl_node_ctx *c) { return run_gather_k(c, 1); }

const ocl_op ocl_ops_shape[] = {
    {"reshape", sup_any, NULL, run_reshape},
    {"transpose", sup_transpose, NULL, run_transpose},
    {"slice", sup_any, NULL, run_slice},
    {"slice_grad", sup_any, NULL, run_slice_grad},
    {"concat", sup_any, NULL, run_concat},
    {"expand", sup_any, NULL, run_expand},
    {"gather", sup_gather, NULL, run_gather},
    {"gather_grad", sup_gather, NULL, run_gather_grad},
    {NULL, NULL, NULL, NULL},
};
