/*
 * shape.c — ops that move data without arithmetic: reshape (an alias of its input, no copy),
 * transpose (an N-d permute), slice and its gradient slice_grad, concat; ts_split is built from
 * slices. Every op here takes any dtype and moves elements by their byte size.
 *
 * Attributes:
 *   reshape    i[0..nd-1] = the output shape (resolved, no -1), ni = nd
 *   transpose  i[0..nd-1] = perm, out.shape[j] = x.shape[perm[j]], ni = nd
 *   slice      i[0] = axis, i[1] = start, i[2] = end, with 0 <= start < end <= x.shape[axis]
 *   slice_grad i[0] = axis, i[1] = start, i[2] = full size of that axis
 *   concat     i[0] = axis (non-negative)
 * Gradients, for upstream gy:
 *   reshape: gy reshaped to x's shape.   transpose: gy transposed by the inverse perm.
 *   slice: slice_grad(gy).               concat: gy sliced back into the inputs' extents.
 *   slice_grad is not differentiable (grad NULL): it only appears in backward passes.
 */
#include "ops/op.h"

#include <stdio.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)
#define PAR_BYTES ((size_t)1 << 17) /* copies smaller than this stay on one thread */

static void set_out(ts_graph *g, const ts_node *n, ts_dtype dt, int nd, const int64_t *sh) {
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = dt;
    o->ndim = nd;
    if (nd) memcpy(o->shape, sh, sizeof(int64_t) * (size_t)nd);
}

/* Builders read x before adding a node: 1 when x is a value of g that can be used; 0 when the
 * call must return TS_NONE (x is TS_NONE or the graph already failed: silently; else recorded). */
static int usable(ts_graph *g, ts_value x, const char *fn) {
    if (!g || x == TS_NONE || g->status != TS_OK) return 0;
    if (!ts_val_ok(g, x)) {
        ts_graph_fail(g, TS_ERR_ARG, "%s: %d is not a value of this graph", fn, x);
        return 0;
    }
    return 1;
}

/* v viewed as [outer, v.shape[axis], inner] around axis. */
static void around_axis(const ts_val *v, int axis, int64_t *outer, int64_t *inner) {
    *outer = ts_numel(axis, v->shape);
    *inner = ts_numel(v->ndim - axis - 1, v->shape + axis + 1);
}

/* ------------------------------------------------------------------ reshape */

static ts_status infer_reshape(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    int nd = n->attr.ni;
    if (nd < 0 || nd > TS_MAX_DIMS)
        return ts_err(TS_ERR_SHAPE, "op reshape: target rank %d outside 0..%d", nd, TS_MAX_DIMS);
    int64_t cnt = 1, xn = ts_val_numel(x);
    int bad = 0;
    for (int i = 0; i < nd; i++) {
        if (n->attr.i[i] < 0) bad = 1;
        else if (__builtin_mul_overflow(cnt, n->attr.i[i], &cnt)) bad = 1;
    }
    if (bad || cnt != xn) {
        char b[128];
        return ts_err(TS_ERR_SHAPE, "op reshape: cannot reshape %s (%lld elements) to %s",
                      VS(g, n->in[0]), (long long)xn, ts_shape_str(nd, n->attr.i, b, sizeof b));
    }
    set_out(g, n, x->dtype, nd, n->attr.i);
    return TS_OK;
}

/* The memory planner gives the output the input's storage, so normally there is nothing to do;
 * when the two were placed apart (a persistent input) copy the bytes. */
static ts_status reshape_kernel(const ts_kargs *k) {
    if (k->out[0] != k->in[0])
        memcpy(k->out[0], k->in[0], ts_val_bytes(&k->g->vals[k->node->out[0]]));
    return TS_OK;
}

static ts_status grad_reshape(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    const ts_val *x = &g->vals[n->in[0]];
    int64_t sh[TS_MAX_DIMS];
    int nd = x->ndim;
    memcpy(sh, x->shape, sizeof sh);
    gi[0] = ts_reshape(g, go[0], nd, sh);
    return TS_OK;
}

const ts_op_def ts_opdef_reshape = {"reshape", 1, 1, 1, TS_OPF_ALIAS0, infer_reshape, grad_reshape,
                                    reshape_kernel, NULL};

ts_value ts_reshape(ts_graph *g, ts_value x, int ndim, const int64_t *shape) {
    if (!usable(g, x, "ts_reshape")) return TS_NONE;
    if (ndim < 0 || ndim > TS_MAX_DIMS || (ndim && !shape))
        return ts_graph_fail(g, TS_ERR_SHAPE, "ts_reshape: rank %d outside 0..%d (or shape is NULL)",
                             ndim, TS_MAX_DIMS);
    int64_t xn = ts_val_numel(&g->vals[x]), known = 1;
    int at_minus = -1, overflow = 0;
    char b[128];
    ts_shape_str(ndim, shape, b, sizeof b);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1) {
            if (at_minus >= 0)
                return ts_graph_fail(g, TS_ERR_SHAPE, "ts_reshape: shape %s for %s has more than one -1",
                                     b, VS(g, x));
            at_minus = i;
        } else if (shape[i] < 0) {
            return ts_graph_fail(g, TS_ERR_SHAPE, "ts_reshape: dim %d of shape %s for %s is %lld; dims "
                                 "must be >= 0, or one -1", i, b, VS(g, x), (long long)shape[i]);
        } else if (__builtin_mul_overflow(known, shape[i], &known)) {
            overflow = 1;
        }
    }
    ts_attrs at = {0};
    at.ni = ndim;
    for (int i = 0; i < ndim; i++) at.i[i] = shape[i];
    if (at_minus >= 0) {
        if (overflow || known == 0 || xn % known != 0)
            return ts_graph_fail(g, TS_ERR_SHAPE, "ts_reshape: cannot reshape %s (%lld elements) to %s: "
                                 "no size for the -1 gives that many", VS(g, x), (long long)xn, b);
        at.i[at_minus] = xn / known;
    } else if (overflow || known != xn) {
        return ts_graph_fail(g, TS_ERR_SHAPE, "ts_reshape: cannot reshape %s (%lld elements) to %s",
                             VS(g, x), (long long)xn, b);
    }
    return ts_node_add(g, TS_OP_RESHAPE, 1, &x, &at, NULL);
}

/* ------------------------------------------------------------------ transpose */

static ts_status infer_transpose(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    int nd = x->ndim;
    char b[128];
    if (n->attr.ni != nd)
        return ts_err(TS_ERR_ARG, "op transpose: perm %s has %d entries but %s has rank %d",
                      ts_shape_str(n->attr.ni, n->attr.i, b, sizeof b), n->attr.ni, VS(g, n->in[0]), nd);
    unsigned seen = 0;
    int64_t sh[TS_MAX_DIMS];
    for (int j = 0; j < nd; j++) {
        int64_t p = n->attr.i[j];
        if (p < 0 || p >= nd || (seen >> p & 1u))
            return ts_err(TS_ERR_ARG, "op transpose: perm %s is not a permutation of 0..%d for %s",
                          ts_shape_str(nd, n->attr.i, b, sizeof b), nd - 1, VS(g, n->in[0]));
        seen |= 1u << p;
        sh[j] = x->shape[p];
    }
    set_out(g, n, x->dtype, nd, sh);
    return TS_OK;
}

/* A permute reduced to its essentials: size-1 axes dropped, and axes that stay neighbours in the
 * output merged into one. dim[] in input order; output axis j is input axis perm[j]. */
typedef struct {
    int nd;
    int64_t dim[TS_MAX_DIMS];
    int perm[TS_MAX_DIMS];
} permute;

static void permute_simplify(int nd, const int64_t *shape, const int64_t *perm, permute *c) {
    int id[TS_MAX_DIMS], p1[TS_MAX_DIMS], pos[TS_MAX_DIMS], grp[TS_MAX_DIMS], m = 0, np = 0;
    int64_t d1[TS_MAX_DIMS];
    for (int a = 0; a < nd; a++) {
        id[a] = shape[a] == 1 ? -1 : m;
        if (shape[a] != 1) d1[m++] = shape[a];
    }
    for (int j = 0; j < nd; j++)
        if (id[perm[j]] >= 0) p1[np++] = id[perm[j]];
    for (int j = 0; j < m; j++) pos[p1[j]] = j;
    /* input axis a continues axis a-1 when it directly follows it in the output too */
    c->nd = 0;
    for (int a = 0; a < m; a++) {
        if (a > 0 && pos[a] == pos[a - 1] + 1) {
            grp[a] = c->nd - 1;
            c->dim[c->nd - 1] *= d1[a];
        } else {
            grp[a] = c->nd;
            c->dim[c->nd++] = d1[a];
        }
    }
    int k = 0;
    for (int j = 0; j < m; j++) {
        int a = p1[j];
        if (!(a > 0 && pos[a] == pos[a - 1] + 1)) c->perm[k++] = grp[a];
    }
}

/* dst[i] = src[i * stride] for i < n, elements of esz bytes (stride in elements). */
static void copy_strided(char *dst, const char *src, int64_t n, int64_t stride, size_t esz) {
#define STRIDED(T) { const T *s = (const T *)(const void *)src; T *d = (T *)(void *)dst; \
        for (int64_t i = 0; i < n; i++) d[i] = s[i * stride]; } break;
    switch (esz) {
    case 1: STRIDED(uint8_t)
    case 2: STRIDED(uint16_t)
    case 4: STRIDED(uint32_t)
    case 8: STRIDED(uint64_t)
    default:
        for (int64_t i = 0; i < n; i++) memcpy(dst + i * esz, src + i * stride * esz, esz);
    }
#undef STRIDED
}

/* out[j_0, .., j_{n-1}] = x[i] with i[perm[k]] = j_k. After permute_simplify, one of:
 *  - identity: one memcpy;
 *  - the last axis stays last (e.g. [B, T, H, D] -> [B, H, T, D]): contiguous row copies;
 *  - otherwise a batched 2-D transpose between the input's last axis (size M, output axis q)
 *    and the output's last axis (input axis a, size N), over every other axis: each TILE x TILE
 *    tile is read as contiguous input rows into a buffer, then written as contiguous output rows.
 *    Swapping the last two axes is the case where the other axes lead. */
static ts_status transpose_kernel(const ts_kargs *k) {
    enum { TILE = 32 };
    const ts_val *x = &k->g->vals[k->node->in[0]];
    size_t esz = ts_dtype_size(x->dtype), bytes = ts_val_bytes(x);
    const char *in = k->in[0];
    char *out = k->out[0];
    if (bytes == 0) return TS_OK;
    permute c;
    permute_simplify(x->ndim, x->shape, k->node->attr.i, &c);
    int nd = c.nd;
    if (nd <= 1) {
        memcpy(out, in, bytes);
        return TS_OK;
    }
    int64_t ist[TS_MAX_DIMS], od[TS_MAX_DIMS], ost[TS_MAX_DIMS], total = (int64_t)(bytes / esz);
    ist[nd - 1] = ost[nd - 1] = 1;
    for (int j = 0; j < nd; j++) od[j] = c.dim[c.perm[j]];
    for (int j = nd - 2; j >= 0; j--) {
        ist[j] = ist[j + 1] * c.dim[j + 1];
        ost[j] = ost[j + 1] * od[j + 1];
    }
    if (c.perm[nd - 1] == nd - 1) {
        int64_t L = od[nd - 1];
        size_t rowb = (size_t)L * esz;
#pragma omp parallel for schedule(static) if (bytes > PAR_BYTES)
        for (int64_t r = 0; r < total / L; r++) {
            int64_t off = 0, q = r;
            for (int j = nd - 2; j >= 0; j--) {
                off += q % od[j] * ist[c.perm[j]];
                q /= od[j];
            }
            memcpy(out + (size_t)r * rowb, in + (size_t)off * esz, rowb);
        }
        return TS_OK;
    }
    int q = 0, a = c.perm[nd - 1], nbd = 0;
    while (c.perm[q] != nd - 1) q++;
    int64_t M = c.dim[nd - 1], N = c.dim[a], sa = ist[a], sq = ost[q];
    int64_t bd[TS_MAX_DIMS], bi[TS_MAX_DIMS], bo[TS_MAX_DIMS]; /* batch axes: size, in / out stride */
    for (int j = 0; j < nd - 1; j++)
        if (j != q) {
            bd[nbd] = od[j];
            bi[nbd] = ist[c.perm[j]];
            bo[nbd++] = ost[j];
        }
    int64_t tm = (M + TILE - 1) / TILE, tn = (N + TILE - 1) / TILE, nt = total / (M * N) * tm * tn;
#pragma omp parallel for schedule(static) if (bytes > PAR_BYTES)
    for (int64_t t = 0; t < nt; t++) {
        uint64_t buf[TILE * TILE]; /* room for TILE x TILE elements of up to 8 bytes */
        int64_t b = t / (tm * tn), i0 = t / tn % tm * TILE, j0 = t % tn * TILE;
        int64_t ilen = M - i0 < TILE ? M - i0 : TILE, jlen = N - j0 < TILE ? N - j0 : TILE;
        int64_t ib = 0, ob = 0;
        for (int j = nbd - 1; j >= 0; j--) {
            ib += b % bd[j] * bi[j];
            ob += b % bd[j] * bo[j];
            b /= bd[j];
        }
        char *tb = (char *)buf;
        for (int64_t j = 0; j < jlen; j++) /* input row j0 + j, columns i0 .. i0 + ilen */
            memcpy(tb + (size_t)(j * TILE) * esz, in + (size_t)(ib + (j0 + j) * sa + i0) * esz, (size_t)ilen * esz);
        for (int64_t i = 0; i < ilen; i++) /* output row i0 + i, columns j0 .. j0 + jlen */
            copy_strided(out + (size_t)(ob + (i0 + i) * sq + j0) * esz, tb + (size_t)i * esz, jlen, TILE, esz);
    }
    return TS_OK;
}

static ts_status grad_transpose(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    int inv[TS_MAX_DIMS];
    for (int j = 0; j < n->attr.ni; j++) inv[n->attr.i[j]] = j;
    gi[0] = ts_transpose(g, go[0], inv);
    return TS_OK;
}

const ts_op_def ts_opdef_transpose = {"transpose", 1, 1, 1, 0, infer_transpose, grad_transpose,
                                      transpose_kernel, NULL};

ts_value ts_transpose(ts_graph *g, ts_value x, const int *perm) {
    if (!usable(g, x, "ts_transpose")) return TS_NONE;
    int nd = g->vals[x].ndim;
    ts_attrs at = {0};
    at.ni = nd;
    if (!perm) {
        if (nd < 2)
            return ts_graph_fail(g, TS_ERR_SHAPE, "ts_transpose: %s has rank %d; swapping the last two "
                                 "dims needs rank >= 2", VS(g, x), nd);
        for (int j = 0; j < nd; j++) at.i[j] = j;
        at.i[nd - 2] = nd - 1;
        at.i[nd - 1] = nd - 2;
    } else {
        unsigned seen = 0;
        for (int j = 0; j < nd; j++) at.i[j] = perm[j];
        for (int j = 0; j < nd; j++) {
            if (perm[j] < 0 || perm[j] >= nd || (seen >> perm[j] & 1u)) {
                char b[128];
                return ts_graph_fail(g, TS_ERR_ARG, "ts_transpose: perm %s is not a permutation of "
                                     "0..%d for %s (perm[%d] = %d)", ts_shape_str(nd, at.i, b, sizeof b),
                                     nd - 1, VS(g, x), j, perm[j]);
            }
            seen |= 1u << perm[j];
        }
    }
    return ts_node_add(g, TS_OP_TRANSPOSE, 1, &x, &at, NULL);
}

/* ------------------------------------------------------------------ slice / slice_grad */

static ts_status infer_slice(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    int64_t axis = n->attr.i[0], start = n->attr.i[1], end = n->attr.i[2];
    if (axis < 0 || axis >= x->ndim)
        return ts_err(TS_ERR_ARG, "op slice: axis %lld is out of range for %s", (long long)axis,
                      VS(g, n->in[0]));
    if (!(0 <= start && start < end && end <= x->shape[axis]))
        return ts_err(TS_ERR_SHAPE, "op slice: range [%lld, %lld) along axis %lld of %s is empty or "
                      "out of range", (long long)start, (long long)end, (long long)axis, VS(g, n->in[0]));
    int64_t sh[TS_MAX_DIMS];
    memcpy(sh, x->shape, sizeof sh);
    sh[axis] = end - start;
    set_out(g, n, x->dtype, x->ndim, sh);
    return TS_OK;
}

/* x viewed as [outer, D, inner]: out[o, :, :] = x[o, start:end, :]. */
static ts_status slice_kernel(const ts_kargs *k) {
    const ts_val *x = &k->g->vals[k->node->in[0]];
    int axis = (int)k->node->attr.i[0];
    int64_t start = k->node->attr.i[1], len = k->node->attr.i[2] - start, outer, inner;
    around_axis(x, axis, &outer, &inner);
    size_t esz = ts_dtype_size(x->dtype);
    size_t rowb = (size_t)(len * inner) * esz, srcb = (size_t)(x->shape[axis] * inner) * esz;
    size_t offb = (size_t)(start * inner) * esz;
    const char *in = k->in[0];
    char *out = k->out[0];
#pragma omp parallel for schedule(static) if (outer > 1 && (size_t)outer * rowb > PAR_BYTES)
    for (int64_t o = 0; o < outer; o++) memcpy(out + (size_t)o * rowb, in + (size_t)o * srcb + offb, rowb);
    return TS_OK;
}

static ts_status grad_slice(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE) return TS_OK;
    ts_attrs at = {0};
    at.i[0] = n->attr.i[0];
    at.i[1] = n->attr.i[1];
    at.i[2] = g->vals[n->in[0]].shape[n->attr.i[0]];
    at.ni = 3;
    gi[0] = ts_node_add(g, TS_OP_SLICE_GRAD, 1, &go[0], &at, NULL);
    return TS_OK;
}

const ts_op_def ts_opdef_slice = {"slice", 1, 1, 1, 0, infer_slice, grad_slice, slice_kernel, NULL};

static ts_status infer_slice_grad(ts_graph *g, ts_node *n) {
    const ts_val *gy = &g->vals[n->in[0]];
    int64_t axis = n->attr.i[0], start = n->attr.i[1], full = n->attr.i[2];
    if (axis < 0 || axis >= gy->ndim)
        return ts_err(TS_ERR_ARG, "op slice_grad: axis %lld is out of range for %s", (long long)axis,
                      VS(g, n->in[0]));
    if (start < 0 || start + gy->shape[axis] > full)
        return ts_err(TS_ERR_SHAPE, "op slice_grad: %s placed at %lld along axis %lld does not fit in "
                      "size %lld", VS(g, n->in[0]), (long long)start, (long long)axis, (long long)full);
    int64_t sh[TS_MAX_DIMS];
    memcpy(sh, gy->shape, sizeof sh);
    sh[axis] = full;
    set_out(g, n, gy->dtype, gy->ndim, sh);
    return TS_OK;
}

/* gy viewed as [outer, len, inner], out as [outer, full, inner]:
 * out[o, start:start+len, :] = gy[o], zero elsewhere. */
static ts_status slice_grad_kernel(const ts_kargs *k) {
    const ts_val *gy = &k->g->vals[k->node->in[0]];
    int axis = (int)k->node->attr.i[0];
    int64_t start = k->node->attr.i[1], full = k->node->attr.i[2], outer, inner;
    around_axis(gy, axis, &outer, &inner);
    size_t esz = ts_dtype_size(gy->dtype);
    size_t rowb = (size_t)(gy->shape[axis] * inner) * esz, fullb = (size_t)(full * inner) * esz;
    size_t offb = (size_t)(start * inner) * esz;
    const char *in = k->in[0];
    char *out = k->out[0];
#pragma omp parallel for schedule(static) if (outer > 1 && (size_t)outer * fullb > PAR_BYTES)
    for (int64_t o = 0; o < outer; o++) {
        char *d = out + (size_t)o * fullb;
        memset(d, 0, offb);
        memcpy(d + offb, in + (size_t)o * rowb, rowb);
        memset(d + offb + rowb, 0, fullb - offb - rowb);
    }
    return TS_OK;
}

/* Not differentiable (no double backward through slicing). */
const ts_op_def ts_opdef_slice_grad = {"slice_grad", 1, 1, 1, 0, infer_slice_grad, NULL,
                                       slice_grad_kernel, NULL};

/* python-style: negative counts from the end, then clamp to [0, d] */
static int64_t clamp_index(int64_t i, int64_t d) {
    if (i < 0) i += d;
    return i < 0 ? 0 : i > d ? d : i;
}

ts_value ts_slice(ts_graph *g, ts_value x, int axis, int64_t start, int64_t end) {
    if (!usable(g, x, "ts_slice")) return TS_NONE;
    const ts_val *v = &g->vals[x];
    int a = ts_axis(axis, v->ndim);
    if (a < 0) return ts_graph_fail(g, TS_ERR_ARG, "ts_slice: axis %d is out of range for %s", axis, VS(g, x));
    int64_t d = v->shape[a], s = clamp_index(start, d), e = clamp_index(end, d);
    if (s >= e)
        return ts_graph_fail(g, TS_ERR_SHAPE, "ts_slice: [%lld:%lld] along axis %d of %s is empty",
                             (long long)start, (long long)end, axis, VS(g, x));
    ts_attrs at = {0};
    at.i[0] = a;
    at.i[1] = s;
    at.i[2] = e;
    at.ni = 3;
    return ts_node_add(g, TS_OP_SLICE, 1, &x, &at, NULL);
}

ts_status ts_split(ts_graph *g, ts_value x, int axis, int n, const int64_t *sizes, ts_value *outs) {
    if (!g) return ts_err(TS_ERR_ARG, "ts_split: graph is NULL");
    if (outs)
        for (int i = 0; i < n; i++) outs[i] = TS_NONE;
    if (g->status != TS_OK) return ts_graph_status(g);
    if (!outs || n < 1) {
        ts_graph_fail(g, TS_ERR_ARG, "ts_split: n is %d and outs is %s; needs n >= 1 and an output array",
                      n, outs ? "set" : "NULL");
        return TS_ERR_ARG;
    }
    if (!ts_val_ok(g, x)) {
        if (x == TS_NONE) ts_graph_fail(g, TS_ERR_ARG, "ts_split: x is TS_NONE");
        else ts_graph_fail(g, TS_ERR_ARG, "ts_split: x (%d) is not a value of this graph", x);
        return TS_ERR_ARG;
    }
    const ts_val *v = &g->vals[x];
    int a = ts_axis(axis, v->ndim);
    if (a < 0) {
        ts_graph_fail(g, TS_ERR_ARG, "ts_split: axis %d is out of range for %s", axis, VS(g, x));
        return TS_ERR_ARG;
    }
    int64_t dim = v->shape[a];
    if (!sizes && dim % n != 0) {
        ts_graph_fail(g, TS_ERR_SHAPE, "ts_split: axis %d of %s (size %lld) does not divide into %d "
                      "equal parts", axis, VS(g, x), (long long)dim, n);
        return TS_ERR_SHAPE;
    }
    if (sizes) {
        int64_t sum = 0;
        for (int i = 0; i < n; i++) {
            if (sizes[i] <= 0) {
                ts_graph_fail(g, TS_ERR_SHAPE, "ts_split: sizes[%d] is %lld; parts must be non-empty", i,
                              (long long)sizes[i]);
                return TS_ERR_SHAPE;
            }
            if (__builtin_add_overflow(sum, sizes[i], &sum)) sum = INT64_MAX;
        }
        if (sum != dim) {
            ts_graph_fail(g, TS_ERR_SHAPE, "ts_split: sizes sum to %lld but axis %d of %s has size %lld",
                          (long long)sum, axis, VS(g, x), (long long)dim);
            return TS_ERR_SHAPE;
        }
    }
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        int64_t len = sizes ? sizes[i] : dim / n;
        outs[i] = ts_slice(g, x, a, off, off + len);
        if (outs[i] == TS_NONE) return g->status;
        off += len;
    }
    return TS_OK;
}

/* ------------------------------------------------------------------ concat */

static ts_status infer_concat(ts_graph *g, ts_node *n) {
    const ts_val *x0 = &g->vals[n->in[0]];
    int64_t axis = n->attr.i[0];
    if (axis < 0 || axis >= x0->ndim)
        return ts_err(TS_ERR_ARG, "op concat: axis %lld is out of range for %s", (long long)axis,
                      VS(g, n->in[0]));
    int64_t sh[TS_MAX_DIMS];
    memcpy(sh, x0->shape, sizeof sh);
    for (int j = 1; j < n->nin; j++) {
        const ts_val *x = &g->vals[n->in[j]];
        if (x->dtype != x0->dtype)
            return ts_err(TS_ERR_DTYPE, "op concat: input %d %s has a different dtype from input 0 %s", j,
                          VS(g, n->in[j]), VS(g, n->in[0]));
        int same = x->ndim == x0->ndim;
        for (int i = 0; same && i < x0->ndim; i++) same = i == axis || x->shape[i] == x0->shape[i];
        if (!same)
            return ts_err(TS_ERR_SHAPE, "op concat: input %d %s and input 0 %s differ in a dim other than "
                          "axis %lld", j, VS(g, n->in[j]), VS(g, n->in[0]), (long long)axis);
        sh[axis] += x->shape[axis];
    }
    set_out(g, n, x0->dtype, x0->ndim, sh);
    return TS_OK;
}

/* inputs viewed as [outer, D_k, inner], out as [outer, sum D_k, inner]:
 * out[o, off_k : off_k + D_k, :] = x_k[o], off_k = D_0 + ... + D_{k-1}. */
static ts_status concat_kernel(const ts_kargs *k) {
    const ts_graph *g = k->g;
    const ts_node *n = k->node;
    const ts_val *y = &g->vals[n->out[0]];
    int axis = (int)n->attr.i[0], nin = n->nin;
    int64_t outer, inner;
    around_axis(y, axis, &outer, &inner);
    size_t esz = ts_dtype_size(y->dtype), lenb[TS_MAX_IN], offb[TS_MAX_IN], off = 0;
    for (int j = 0; j < nin; j++) {
        lenb[j] = (size_t)(g->vals[n->in[j]].shape[axis] * inner) * esz;
        offb[j] = off;
        off += lenb[j];
    }
    char *out = k->out[0];
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)outer * off > PAR_BYTES)
    for (int64_t o = 0; o < outer; o++)
        for (int j = 0; j < nin; j++)
            memcpy(out + (size_t)o * off + offb[j], (const char *)k->in[j] + (size_t)o * lenb[j], lenb[j]);
    return TS_OK;
}

static ts_status grad_concat(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    int axis = (int)n->attr.i[0];
    int64_t off = 0;
    for (int j = 0; j < n->nin; j++) {
        int64_t len = g->vals[n->in[j]].shape[axis];
        gi[j] = ts_slice(g, go[0], axis, off, off + len);
        off += len;
    }
    return TS_OK;
}

const ts_op_def ts_opdef_concat = {"concat", 1, TS_MAX_IN, 1, 0, infer_concat, grad_concat,
                                   concat_kernel, NULL};

ts_value ts_concat(ts_graph *g, int n, const ts_value *xs, int axis) {
    if (!g || g->status != TS_OK) return TS_NONE;
    if (n < 1 || !xs)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_concat: needs at least one input (n = %d, xs %s)", n,
                             xs ? "set" : "NULL");
    for (int i = 0; i < n; i++) {
        if (xs[i] == TS_NONE) return TS_NONE;
        if (!ts_val_ok(g, xs[i]))
            return ts_graph_fail(g, TS_ERR_ARG, "ts_concat: xs[%d] (%d) is not a value of this graph", i, xs[i]);
    }
    int a = ts_axis(axis, g->vals[xs[0]].ndim);
    if (a < 0) return ts_graph_fail(g, TS_ERR_ARG, "ts_concat: axis %d is out of range for %s", axis, VS(g, xs[0]));
    if (n <= TS_MAX_IN) {
        ts_attrs at = {0};
        at.i[0] = a;
        at.ni = 1;
        return ts_node_add(g, TS_OP_CONCAT, n, xs, &at, NULL);
    }
    /* more inputs than a node takes: concat balanced groups of at most TS_MAX_IN, then those */
    int ng = (n + TS_MAX_IN - 1) / TS_MAX_IN;
    ts_value *part = malloc(sizeof(ts_value) * (size_t)ng), r = TS_NONE;
    if (!part) return ts_graph_fail(g, TS_ERR_NOMEM, "concat of %d values: out of memory", n);
    int i = 0;
    for (; i < ng; i++) {
        int lo = (int)((int64_t)n * i / ng), hi = (int)((int64_t)n * (i + 1) / ng);
        part[i] = ts_concat(g, hi - lo, xs + lo, a);
        if (part[i] == TS_NONE) break;
    }
    if (i == ng) r = ts_concat(g, ng, part, a);
    free(part);
    return r;
}
