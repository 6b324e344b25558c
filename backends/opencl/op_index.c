/*
 * op_index.c — host side of kernels/index.cl: gather_elements, scatter_elements (src/ops/
 * elements.c: an axis, a ts_scatter_reduce), topk (topk.c: axis, k, largest), nll_loss and
 * nll_loss_grad (nll_loss.c: ignore_index, a ts_reduction), tfidf (tfidf.c: n-gram lengths, skip,
 * mode, O, L). The attributes are read through tessera_ops.h's decoders (ts_attrs_<op>_of).
 */
#include "ocl.h"

typedef struct ix_geom {
    cl_int nd, axis;
    cl_long n;
    cl_long a[TS_MAX_DIMS], b[TS_MAX_DIMS];
} ix_geom;

static void ix_init(ix_geom *q, const ts_abi_value *ix, const ts_abi_value *data, int axis) {
    memset(q, 0, sizeof *q);
    q->nd = data->ndim;
    q->axis = axis;
    q->n = ocl_numel(ix);
    for (int d = 0; d < data->ndim; d++) q->a[d] = ix->shape[d], q->b[d] = data->shape[d];
}

static int is_index(const ts_abi_node *n, const ts_abi_value *v, int k) {
    return ocl_is(n, v, k, TS_I32) || ocl_is(n, v, k, TS_I64);
}

static cl_int tag_of(const ocl_node_ctx *c) { return (cl_int)(c->n - c->plan->nodes) + 1; }

/* gather_elements' attributes are scatter_elements' without the reduction (TS_SCATTER_NONE). */
static ts_attrs_scatter_elements elements_attrs(const ts_abi_node *n) {
    if (strcmp(n->op, TS_OPNAME_SCATTER_ELEMENTS) == 0) return ts_attrs_scatter_elements_of(n);
    return (ts_attrs_scatter_elements){.axis = ts_attrs_gather_elements_of(n).axis, .reduction = TS_SCATTER_NONE};
}

static int sup_elements(const ts_abi_node *n, const ts_abi_value *v) {
    int scatter = strcmp(n->op, TS_OPNAME_SCATTER_ELEMENTS) == 0;
    if (n->nout != 1 || n->nin != 2 + scatter || n->in[0] < 0 || !is_index(n, v, 1)) return 0;
    const ts_abi_value *x = &v[n->in[0]];
    ts_attrs_scatter_elements at = elements_attrs(n);
    if (!ocl_dtype_size(x->dtype) || at.axis < 0 || at.axis >= x->ndim) return 0;
    if (at.reduction != TS_SCATTER_NONE && x->dtype != TS_F32) return 0;
    return v[n->in[1]].ndim == x->ndim;
}

static ts_status run_elements(ocl_node_ctx *c) {
    int scatter = strcmp(c->n->op, TS_OPNAME_SCATTER_ELEMENTS) == 0;
    const ts_abi_value *x = ocl_in(c, 0), *ix = ocl_in(c, 1), *y = ocl_out(c, 0);
    ts_attrs_scatter_elements at = elements_attrs(c->n);
    ix_geom q;
    ix_init(&q, ix, x, (int)at.axis);
    cl_int is64 = ix->dtype == TS_I64, es = (cl_int)ocl_dtype_size(x->dtype), tag = tag_of(c);
    ocl_args a = {ocl_kernel(c->d, c->n->op), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    if (scatter) {
        ts_status s = ocl_copy(c->d, y->buf, x->buf, (size_t)ocl_numel(x) * (size_t)es);
        if (s) return s;
        cl_int red = (cl_int)at.reduction;
        ocl_arg_buf(&a, ix->buf);
        ocl_arg_buf(&a, ocl_inbuf(c, 2));
        ocl_arg_buf(&a, y->buf);
        ocl_arg(&a, sizeof q, &q);
        OCL_ARG(&a, is64);
        OCL_ARG(&a, es);
        OCL_ARG(&a, red);
    } else {
        ocl_arg_buf(&a, x->buf);
        ocl_arg_buf(&a, ix->buf);
        ocl_arg_buf(&a, y->buf);
        ocl_arg(&a, sizeof q, &q);
        OCL_ARG(&a, is64);
        OCL_ARG(&a, es);
    }
    OCL_ARG(&a, c->d->err);
    OCL_ARG(&a, tag);
    return ocl_launch(c->d, &a, scatter ? (q.n ? 1 : 0) : q.n);
}

static int sup_topk(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin != 1 || n->nout != 2 || !ocl_is(n, v, 0, TS_F32)) return 0;
    const ts_abi_value *x = &v[n->in[0]];
    ts_attrs_topk at = ts_attrs_topk_of(n);
    return at.axis >= 0 && at.axis < x->ndim && at.k >= 1 && at.k <= x->shape[at.axis];
}

static ts_status run_topk(ocl_node_ctx *c) {
    const ts_abi_value *x = ocl_in(c, 0);
    ts_attrs_topk at = ts_attrs_topk_of(c->n);
    int axis = (int)at.axis;
    cl_long outer = 1, inner = 1, len = x->shape[axis], k = at.k;
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
    for (int d = axis + 1; d < x->ndim; d++) inner *= x->shape[d];
    cl_int largest = at.largest != 0;
    ocl_args a = {ocl_kernel(c->d, "topk"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    ocl_arg_buf(&a, ocl_outbuf(c, 1));
    OCL_ARG(&a, outer);
    OCL_ARG(&a, len);
    OCL_ARG(&a, inner);
    OCL_ARG(&a, k);
    OCL_ARG(&a, largest);
    return ocl_launch(c->d, &a, outer * len * inner);
}

/* nll_loss_grad's attributes are the forward's. */
static ts_attrs_nll_loss nll_attrs(const ts_abi_node *n) {
    if (strcmp(n->op, TS_OPNAME_NLL_LOSS) == 0) return ts_attrs_nll_loss_of(n);
    ts_attrs_nll_loss_grad g = ts_attrs_nll_loss_grad_of(n);
    return (ts_attrs_nll_loss){.ignore_index = g.ignore_index, .reduction = g.reduction};
}

/* nll_loss(input, target, weight?) and nll_loss_grad(input, target, gy, weight?) */
static int sup_nll(const ts_abi_node *n, const ts_abi_value *v) {
    int grad = strcmp(n->op, TS_OPNAME_NLL_LOSS_GRAD) == 0, wk = grad ? 3 : 2;
    if (n->nout != 1 || !ocl_is(n, v, 0, TS_F32) || !is_index(n, v, 1) || v[n->in[0]].ndim < 2) return 0;
    if (grad && !ocl_is(n, v, 2, TS_F32)) return 0;
    int64_t red = nll_attrs(n).reduction;
    return (n->nin <= wk || n->in[wk] < 0 || ocl_is(n, v, wk, TS_F32)) && red >= 0 && red < TS_OPS_REDUCTION_COUNT;
}

static ts_status run_nll(ocl_node_ctx *c) {
    int grad = strcmp(c->n->op, TS_OPNAME_NLL_LOSS_GRAD) == 0, wk = grad ? 3 : 2;
    ts_attrs_nll_loss at = nll_attrs(c->n);
    const ts_abi_value *x = ocl_in(c, 0), *t = ocl_in(c, 1);
    cl_long P = ocl_numel(t), C = x->shape[1], D = 1, ignore = at.ignore_index;
    for (int d = 2; d < x->ndim; d++) D *= x->shape[d];
    cl_int is64 = t->dtype == TS_I64, red = (cl_int)at.reduction, g = grad, tag = tag_of(c);
    ocl_args a = {ocl_kernel(c->d, "nll"), 0, CL_SUCCESS, c->n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, t->buf);
    ocl_arg_buf(&a, c->n->nin > wk ? ocl_inbuf(c, wk) : (ts_buffer){0});
    ocl_arg_buf(&a, grad ? ocl_inbuf(c, 2) : (ts_buffer){0});
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, P);
    OCL_ARG(&a, C);
    OCL_ARG(&a, D);
    OCL_ARG(&a, ignore);
    OCL_ARG(&a, is64);
    OCL_ARG(&a, red);
    OCL_ARG(&a, g);
    OCL_ARG(&a, c->d->err);
    OCL_ARG(&a, tag);
    return ocl_launch(c->d, &a, 1);
}

static int sup_tfidf(const ts_abi_node *n, const ts_abi_value *v) {
    if (n->nin < 3 || n->nout != 1 || !is_index(n, v, 0) || !ocl_is(n, v, 1, TS_I64) || !ocl_is(n, v, 2, TS_I64))
        return 0;
    const ts_abi_value *x = &v[n->in[0]];
    return (x->ndim == 1 || x->ndim == 2) && (n->nin < 4 || n->in[3] < 0 || ocl_is(n, v, 3, TS_F32)) &&
           ts_attrs_tfidf_of(n).ncounts >= 1 && ts_attrs_tfidf_of(n).ncounts <= v[n->in[2]].shape[0];
}

static ts_status run_tfidf(ocl_node_ctx *c) {
    const ts_abi_node *n = c->n;
    ts_attrs_tfidf at = ts_attrs_tfidf_of(n);
    const ts_abi_value *x = ocl_in(c, 0);
    cl_long rows = x->ndim == 2 ? x->shape[0] : 1, Cx = x->shape[x->ndim - 1], P = ocl_in(c, 1)->shape[0];
    cl_long L = at.ncounts, K = ocl_in(c, 2)->shape[0] - L, O = at.out_size;
    cl_long minn = at.min_gram, maxn = at.max_gram, skip = at.max_skip;
    cl_int mode = (cl_int)at.mode, is64 = x->dtype == TS_I64, tag = tag_of(c);
    ocl_args a = {ocl_kernel(c->d, "tfidf"), 0, CL_SUCCESS, n->op};
    if (!a.k) return TS_ERR_RUNTIME;
    ocl_arg_buf(&a, x->buf);
    ocl_arg_buf(&a, ocl_inbuf(c, 1));
    ocl_arg_buf(&a, ocl_inbuf(c, 2));
    ocl_arg_buf(&a, n->nin > 3 ? ocl_inbuf(c, 3) : (ts_buffer){0});
    ocl_arg_buf(&a, ocl_outbuf(c, 0));
    OCL_ARG(&a, rows);
    OCL_ARG(&a, Cx);
    OCL_ARG(&a, P);
    OCL_ARG(&a, K);
    OCL_ARG(&a, L);
    OCL_ARG(&a, O);
    OCL_ARG(&a, minn);
    OCL_ARG(&a, maxn);
    OCL_ARG(&a, skip);
    OCL_ARG(&a, mode);
    OCL_ARG(&a, is64);
    OCL_ARG(&a, c->d->err);
    OCL_ARG(&a, tag);
    return ocl_launch(c->d, &a, rows);
}

const ocl_op ocl_ops_index[] = {
    {"tfidf", sup_tfidf, NULL, run_tfidf, NULL},
    {"gather_elements", sup_elements, NULL, run_elements, NULL},
    {"scatter_elements", sup_elements, NULL, run_elements, NULL},
    {"topk", sup_topk, NULL, run_topk, NULL},
    {"nll_loss", sup_nll, NULL, run_nll, NULL},
    {"nll_loss_grad", sup_nll, NULL, run_nll, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};
