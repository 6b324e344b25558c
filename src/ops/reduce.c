/*
 * reduce.c — reductions over a set of axes: reduce_sum, reduce_mean, reduce_max, and
 * reduce_max_grad, the gradient of reduce_max.
 *
 * Attributes (all four ops): i[0] = bit mask of the reduced axes of x, i[1] = keepdims.
 * y has x's shape with each reduced axis dropped, or kept as size 1 with keepdims; reducing
 * every axis without keepdims gives a rank-0 y.
 *
 * Gradients, for upstream gy:
 *   sum:  gx = expand(reshape(gy, keepdims shape), x.shape)
 *   mean: the same times 1 / (number of elements reduced into each output)
 *   max:  gx = reduce_max_grad(x, y, gy): gy goes to the FIRST position (row-major) of each
 *         reduced slot where x equals y, zero elsewhere
 * reduce_max_grad is not differentiable (grad NULL).
 *
 * The kernels look at x through an rview: size-1 axes dropped and neighbouring axes that are
 * both reduced or both kept merged, so [B, T, C] reduced over T is [B, T, C] but over (B, T)
 * is [B*T, C]. Three shapes of that view get their own path:
 *   [K, R] or [R]     reduce each row: pairwise sums; long rows in parallel chunks;
 *   [A, R, K], [R, K] reduce the middle / leading axis: column blocks accumulated row by row;
 *   anything else     per output, a walk over its slot in row-major order.
 * Sums stay in f32; each path sums in blocks so that rounding error grows slowly with length,
 * and results do not depend on the thread count.
 */
#include "ops/op.h"

#include <math.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)
#define PAR_ELEMS 32768 /* loops over fewer elements stay on one thread */
#define CW 2048         /* columns in one block of the middle-axis path (long contiguous runs) */
#define RB 64           /* rows summed into a block partial before it joins the total */

/* max that lets a NaN through: the result is NaN when any element is */
static inline float max_nan(float m, float v) { return ((v > m) | (v != v)) ? v : m; }

/* ------------------------------------------------------------------ shapes */

/* y's shape for x reduced over mask; returns its rank. */
static int reduced_shape(const ts_val *x, int64_t mask, int keep, int64_t *sh) {
    int nd = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (!(mask >> i & 1)) sh[nd++] = x->shape[i];
        else if (keep) sh[nd++] = 1;
    }
    return nd;
}

static ts_status check_mask(const ts_graph *g, const ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]];
    int64_t mask = n->attr.i[0];
    if (mask < 0 || (mask >> x->ndim) != 0)
        return ts_err(TS_ERR_ARG, "op %s: axis mask 0x%llx names axes beyond the rank of %s",
                      ts_op_get(n->op)->name, (unsigned long long)mask, VS(g, n->in[0]));
    if (x->dtype != TS_F32)
        return ts_err(TS_ERR_DTYPE, "op %s: input %s has dtype %s; this op takes f32",
                      ts_op_get(n->op)->name, VS(g, n->in[0]), ts_dtype_name(x->dtype));
    return TS_OK;
}

static ts_status infer_reduce(ts_graph *g, ts_node *n) {
    ts_status s = check_mask(g, n);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    if (n->op == TS_OP_REDUCE_MAX)
        for (int i = 0; i < x->ndim; i++)
            if ((n->attr.i[0] >> i & 1) && x->shape[i] == 0)
                return ts_err(TS_ERR_SHAPE, "op reduce_max: axis %d of %s is empty; max has no value", i,
                              VS(g, n->in[0]));
    int64_t sh[TS_MAX_DIMS];
    int nd = reduced_shape(x, n->attr.i[0], n->attr.i[1] != 0, sh);
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = nd;
    if (nd) memcpy(o->shape, sh, sizeof(int64_t) * (size_t)nd);
    return TS_OK;
}

/* x with size-1 axes dropped and neighbours of the same kind (reduced / kept) merged. */
typedef struct {
    int nd;
    int64_t dim[TS_MAX_DIMS];
    int red[TS_MAX_DIMS];  /* 1: a reduced axis */
    int64_t nout, nred;    /* outputs; elements reduced into each */
} rview;

static void rview_init(rview *v, const ts_val *x, int64_t mask) {
    v->nd = 0;
    v->nout = v->nred = 1;
    for (int i = 0; i < x->ndim; i++) {
        int64_t d = x->shape[i];
        int r = (int)(mask >> i & 1);
        if (r) v->nred *= d;
        else v->nout *= d;
        if (d == 1) continue;
        if (v->nd && v->red[v->nd - 1] == r) {
            v->dim[v->nd - 1] *= d;
        } else {
            v->dim[v->nd] = d;
            v->red[v->nd++] = r;
        }
    }
}

/* The [A, R, K] pattern (A = 1 for [R, K]): 1 and its sizes, or 0. */
static int rview_middle(const rview *v, int64_t *A, int64_t *R, int64_t *K) {
    int nd = v->nd;
    if (nd == 2 && v->red[0] && !v->red[1]) *A = 1;
    else if (nd == 3 && !v->red[0] && v->red[1] && !v->red[2]) *A = v->dim[0];
    else return 0;
    *R = v->dim[nd - 2];
    *K = v->dim[nd - 1];
    return 1;
}

/* Kept and reduced axes of the view with their element strides in x, for the walking paths. */
typedef struct {
    int nk, nr;
    int64_t kd[TS_MAX_DIMS], ks[TS_MAX_DIMS], rd[TS_MAX_DIMS], rs[TS_MAX_DIMS];
} rwalk;

static void rwalk_init(rwalk *w, const rview *v) {
    int64_t st = 1;
    w->nk = w->nr = 0;
    for (int i = v->nd - 1; i >= 0; i--) { /* counted from the back, reversed below */
        if (v->red[i]) { w->rd[w->nr] = v->dim[i]; w->rs[w->nr++] = st; }
        else { w->kd[w->nk] = v->dim[i]; w->ks[w->nk++] = st; }
        st *= v->dim[i];
    }
    for (int i = 0; i < w->nk / 2; i++) {
        int64_t t = w->kd[i]; w->kd[i] = w->kd[w->nk - 1 - i]; w->kd[w->nk - 1 - i] = t;
        t = w->ks[i]; w->ks[i] = w->ks[w->nk - 1 - i]; w->ks[w->nk - 1 - i] = t;
    }
    for (int i = 0; i < w->nr / 2; i++) {
        int64_t t = w->rd[i]; w->rd[i] = w->rd[w->nr - 1 - i]; w->rd[w->nr - 1 - i] = t;
        t = w->rs[i]; w->rs[i] = w->rs[w->nr - 1 - i]; w->rs[w->nr - 1 - i] = t;
    }
}

/* Offset in x of flat index q over n axes (last fastest) with sizes d and strides s. */
static inline int64_t offset_of(int64_t q, int n, const int64_t *d, const int64_t *s) {
    int64_t off = 0;
    for (int i = n - 1; i >= 0; i--) {
        off += q % d[i] * s[i];
        q /= d[i];
    }
    return off;
}

/* ------------------------------------------------------------------ forward kernels */

/* sum of x[0..n): 8 running partials over blocks of 512, halves above that (pairwise). */
static float sum_row(const float *x, int64_t n) {
    if (n > 512) {
        int64_t h = (n / 2) & ~(int64_t)7;
        return sum_row(x, h) + sum_row(x + h, n - h);
    }
    float a[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += x[i + j];
    float s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    for (; i < n; i++) s += x[i];
    return s;
}

/* max of x[0..n) over 8 lanes; NaN when any element is NaN */
static float max_row(const float *x, int64_t n) {
    float m[8];
    int nan = 0;
    int64_t i = 0;
    for (int j = 0; j < 8; j++) m[j] = x[0];
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            float v = x[i + j];
            m[j] = v > m[j] ? v : m[j];
            nan |= v != v;
        }
    for (; i < n; i++) {
        m[0] = x[i] > m[0] ? x[i] : m[0];
        nan |= x[i] != x[i];
    }
    float r = m[0];
    for (int j = 1; j < 8; j++) r = m[j] > r ? m[j] : r;
    return nan ? NAN : r;
}

/* x [K, R] -> y [K]: y[k] = sum / max of x[k, :]. Few long rows (K < 16) are cut into up to 64
 * chunks of at least 8192 that run in parallel; the chunk results are combined in order. */
static void reduce_rows(const float *x, float *y, int64_t K, int64_t R, int is_max) {
    if (K >= 16 || K * R <= PAR_ELEMS) {
#pragma omp parallel for schedule(static) if (K * R > PAR_ELEMS)
        for (int64_t k = 0; k < K; k++) y[k] = is_max ? max_row(x + k * R, R) : sum_row(x + k * R, R);
        return;
    }
    int64_t nc = (R + 8191) / 8192;
    if (nc > 64) nc = 64;
    int64_t len = (R + nc - 1) / nc;
    nc = (R + len - 1) / len;
    for (int64_t k = 0; k < K; k++) {
        const float *row = x + k * R;
        float part[64];
#pragma omp parallel for schedule(static)
        for (int64_t c = 0; c < nc; c++) {
            int64_t lo = c * len, m = R - lo < len ? R - lo : len;
            part[c] = is_max ? max_row(row + lo, m) : sum_row(row + lo, m);
        }
        float r = part[0];
        for (int64_t c = 1; c < nc; c++) r = is_max ? max_nan(r, part[c]) : r + part[c];
        y[k] = r;
    }
}

/* out[j] = sum / max over r < rows of x[r * ld + j], for j < w <= CW. Sums add RB rows into a
 * block partial before it joins the total. */
static void column_block(const float *x, int64_t rows, int64_t ld, int64_t w, float *out, int is_max) {
    float tot[CW], blk[CW];
    if (is_max) {
        for (int64_t j = 0; j < w; j++) tot[j] = x[j];
        for (int64_t r = 1; r < rows; r++)
#pragma omp simd
            for (int64_t j = 0; j < w; j++) tot[j] = max_nan(tot[j], x[r * ld + j]);
    } else {
        for (int64_t j = 0; j < w; j++) tot[j] = 0.f;
        for (int64_t r0 = 0; r0 < rows; r0 += RB) {
            int64_t r1 = rows - r0 < RB ? rows : r0 + RB;
            for (int64_t j = 0; j < w; j++) blk[j] = 0.f;
            for (int64_t r = r0; r < r1; r++)
#pragma omp simd
                for (int64_t j = 0; j < w; j++) blk[j] += x[r * ld + j];
#pragma omp simd
            for (int64_t j = 0; j < w; j++) tot[j] += blk[j];
        }
    }
    memcpy(out, tot, sizeof(float) * (size_t)w);
}

/* Row chunks for reduce_middle: more than 1 only when there are too few column blocks to keep
 * the threads busy; then about 32 work items, each of at least RB rows. */
static int64_t middle_chunks(int64_t A, int64_t R, int64_t K) {
    int64_t blocks = A * ((K + CW - 1) / CW);
    if (blocks >= 16 || A * R * K <= PAR_ELEMS) return 1;
    int64_t c = 32 / blocks;
    if (c > R / RB) c = R / RB;
    return c < 1 ? 1 : c;
}

/* x [A, R, K] -> y [A, K]: y[a, k] = sum / max over r of x[a, r, k]. Work items are (column
 * block of CW, chunk of rows); with several chunks their partials go to part[] (scratch) and
 * are combined in order. */
static void reduce_middle(const float *x, float *y, float *part, size_t part_bytes, int64_t A,
                          int64_t R, int64_t K, int is_max) {
    int64_t ncol = (K + CW - 1) / CW, nb = A * ncol, nc = middle_chunks(A, R, K);
    if ((size_t)(nb * nc * CW) * sizeof(float) > part_bytes) nc = 1;
    int64_t rc = (R + nc - 1) / nc;
    nc = (R + rc - 1) / rc;
#pragma omp parallel for schedule(static) if (A * R * K > PAR_ELEMS)
    for (int64_t t = 0; t < nb * nc; t++) {
        int64_t b = t / nc, c = t % nc, a = b / ncol, c0 = b % ncol * CW;
        int64_t w = K - c0 < CW ? K - c0 : CW, r0 = c * rc, r1 = R - r0 < rc ? R : r0 + rc;
        float *dst = nc == 1 ? y + a * K + c0 : part + t * CW;
        column_block(x + (a * R + r0) * K + c0, r1 - r0, K, w, dst, is_max);
    }
    if (nc == 1) return;
    for (int64_t b = 0; b < nb; b++) {
        int64_t a = b / ncol, c0 = b % ncol * CW, w = K - c0 < CW ? K - c0 : CW;
        float *dst = y + a * K + c0;
        const float *p = part + b * nc * CW;
        for (int64_t j = 0; j < w; j++) {
            float r = p[j];
            for (int64_t c = 1; c < nc; c++) r = is_max ? max_nan(r, p[c * CW + j]) : r + p[c * CW + j];
            dst[j] = r;
        }
    }
}

/* Any other pattern: y[o] = sum / max over o's slot, walked as runs of the innermost reduced
 * axis; each run is summed on its own before it joins the total. */
static void reduce_walk(const float *x, float *y, const rview *v, int is_max) {
    rwalk w;
    rwalk_init(&w, v);
    int64_t rlen = w.rd[w.nr - 1], rst = w.rs[w.nr - 1], nrun = v->nred / rlen;
#pragma omp parallel for schedule(static) if (v->nout * v->nred > PAR_ELEMS)
    for (int64_t o = 0; o < v->nout; o++) {
        int64_t base = offset_of(o, w.nk, w.kd, w.ks);
        float acc = is_max ? x[base] : 0.f;
        for (int64_t q = 0; q < nrun; q++) {
            const float *p = x + base + offset_of(q, w.nr - 1, w.rd, w.rs);
            if (rst == 1) {
                acc = is_max ? max_nan(acc, max_row(p, rlen)) : acc + sum_row(p, rlen);
            } else if (is_max) {
                for (int64_t i = 0; i < rlen; i++) acc = max_nan(acc, p[i * rst]);
            } else {
                float s = 0.f;
                for (int64_t i = 0; i < rlen; i++) s += p[i * rst];
                acc += s;
            }
        }
        y[o] = acc;
    }
}

static size_t reduce_scratch(const ts_graph *g, const ts_node *n) {
    rview v;
    int64_t A, R, K;
    rview_init(&v, &g->vals[n->in[0]], n->attr.i[0]);
    if (v.nout == 0 || v.nred <= 1 || !rview_middle(&v, &A, &R, &K)) return 0;
    int64_t nc = middle_chunks(A, R, K);
    return nc > 1 ? (size_t)(A * ((K + CW - 1) / CW) * nc * CW) * sizeof(float) : 0;
}

static ts_status reduce_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    rview v;
    int64_t A, R, K;
    rview_init(&v, &k->g->vals[n->in[0]], n->attr.i[0]);
    const float *x = k->in[0];
    float *y = k->out[0];
    int is_max = n->op == TS_OP_REDUCE_MAX;
    if (v.nout == 0) return TS_OK;
    if (v.nred == 0) /* sums over nothing (max refuses empty axes when built) */
        memset(y, 0, sizeof(float) * (size_t)v.nout);
    else if (v.nred == 1)
        memcpy(y, x, sizeof(float) * (size_t)v.nout);
    else if (v.red[v.nd - 1] && v.nd <= 2)
        reduce_rows(x, y, v.nout, v.nred, is_max);
    else if (rview_middle(&v, &A, &R, &K))
        reduce_middle(x, y, k->scratch, k->scratch ? k->scratch_bytes : 0, A, R, K, is_max);
    else
        reduce_walk(x, y, &v, is_max);
    if (n->op == TS_OP_REDUCE_MEAN) {
        float cnt = (float)v.nred;
#pragma omp parallel for schedule(static) if (v.nout > PAR_ELEMS)
        for (int64_t i = 0; i < v.nout; i++) y[i] /= cnt;
    }
    return TS_OK;
}

/* ------------------------------------------------------------------ gradients */

/* gx = expand(reshape(gy * scale, keepdims shape), x.shape), scale = 1 or 1 / count for mean */
static ts_status grad_sum_mean(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    const ts_val *x = &g->vals[n->in[0]];
    int nd = x->ndim;
    int64_t xs[TS_MAX_DIMS], ks[TS_MAX_DIMS], count = 1;
    int64_t mask = n->attr.i[0];
    for (int i = 0; i < nd; i++) {
        xs[i] = x->shape[i];
        ks[i] = mask >> i & 1 ? 1 : xs[i];
        if (mask >> i & 1) count *= xs[i];
    }
    ts_value t = go[0];
    if (n->op == TS_OP_REDUCE_MEAN) t = ts_scale(g, t, count ? 1.f / (float)count : 0.f, 0.f);
    if (!n->attr.i[1]) t = ts_reshape(g, t, nd, ks);
    gi[0] = ts_expand(g, t, nd, xs);
    return TS_OK;
}

static ts_status grad_max(ts_graph *g, const ts_node *n, const ts_value *go, ts_value *gi) {
    if (go[0] == TS_NONE) return TS_OK;
    gi[0] = ts_node_add(g, TS_OP_REDUCE_MAX_GRAD, 3, (int[]){n->in[0], n->out[0], go[0]}, &n->attr, NULL);
    return TS_OK;
}

const ts_op_def ts_opdef_reduce_sum = {"reduce_sum", 1, 1, 1, 0, infer_reduce, grad_sum_mean,
                                       reduce_kernel, reduce_scratch};
const ts_op_def ts_opdef_reduce_mean = {"reduce_mean", 1, 1, 1, 0, infer_reduce, grad_sum_mean,
                                        reduce_kernel, reduce_scratch};
const ts_op_def ts_opdef_reduce_max = {"reduce_max", 1, 1, 1, 0, infer_reduce, grad_max,
                                       reduce_kernel, reduce_scratch};

static ts_status infer_max_grad(ts_graph *g, ts_node *n) {
    ts_status s = check_mask(g, n);
    if (s) return s;
    const ts_val *x = &g->vals[n->in[0]];
    int64_t sh[TS_MAX_DIMS];
    int nd = reduced_shape(x, n->attr.i[0], n->attr.i[1] != 0, sh);
    for (int k = 1; k < 3; k++) {
        const ts_val *v = &g->vals[n->in[k]];
        if (v->dtype != TS_F32 || v->ndim != nd || memcmp(v->shape, sh, sizeof(int64_t) * (size_t)nd) != 0) {
            char b[128];
            return ts_err(TS_ERR_SHAPE, "op reduce_max_grad: input %d %s must be f32 %s, the max of %s",
                          k, VS(g, n->in[k]), ts_shape_str(nd, sh, b, sizeof b), VS(g, n->in[0]));
        }
    }
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim;
    memcpy(o->shape, x->shape, sizeof(int64_t) * TS_MAX_DIMS);
    return TS_OK;
}

/* gx = 0; for each output o, at the first position p of o's slot (row-major) with
 * x[p] == y[o] (or both NaN): gx[p] = gy[o]. */
static ts_status max_grad_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    const ts_val *xv = &k->g->vals[n->in[0]];
    const float *x = k->in[0], *y = k->in[1], *gy = k->in[2];
    float *gx = k->out[0];
    memset(gx, 0, ts_val_bytes(xv));
    rview v;
    rview_init(&v, xv, n->attr.i[0]);
    if (v.nout == 0 || v.nred == 0) return TS_OK;
    if (v.nred == 1) {
        memcpy(gx, gy, sizeof(float) * (size_t)v.nout);
        return TS_OK;
    }
    rwalk w;
    rwalk_init(&w, &v);
    int64_t rlen = w.rd[w.nr - 1], rst = w.rs[w.nr - 1], nrun = v.nred / rlen;
#pragma omp parallel for schedule(static) if (v.nout * v.nred > PAR_ELEMS)
    for (int64_t o = 0; o < v.nout; o++) {
        int64_t base = offset_of(o, w.nk, w.kd, w.ks);
        float m = y[o];
        int nan = m != m;
        for (int64_t q = 0; q < nrun; q++) {
            int64_t off = base + offset_of(q, w.nr - 1, w.rd, w.rs), i = 0;
            for (; i < rlen; i++) {
                float e = x[off + i * rst];
                if (e == m || (nan && e != e)) break;
            }
            if (i < rlen) {
                gx[off + i * rst] = gy[o];
                break;
            }
        }
    }
    return TS_OK;
}

/* Not differentiable (no double backward). */
const ts_op_def ts_opdef_reduce_max_grad = {"reduce_max_grad", 3, 3, 1, 0, infer_max_grad, NULL,
                                            max_grad_kernel, NULL};

/* ------------------------------------------------------------------ builders */

static ts_value reduce(ts_graph *g, int op, const char *fn, ts_value x, int naxes, const int *axes,
                       int keepdims) {
    if (!g || x == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!ts_val_ok(g, x)) return ts_graph_fail(g, TS_ERR_ARG, "%s: %d is not a value of this graph", fn, x);
    int nd = g->vals[x].ndim;
    if (naxes < 0 || (naxes > 0 && !axes))
        return ts_graph_fail(g, TS_ERR_ARG, "%s: naxes is %d and axes is %s", fn, naxes, axes ? "set" : "NULL");
    int64_t mask = naxes == 0 ? ((int64_t)1 << nd) - 1 : 0;
    for (int i = 0; i < naxes; i++) {
        int a = ts_axis(axes[i], nd);
        if (a < 0)
            return ts_graph_fail(g, TS_ERR_ARG, "%s: axis %d is out of range for %s", fn, axes[i], VS(g, x));
        if (mask >> a & 1)
            return ts_graph_fail(g, TS_ERR_ARG, "%s: axis %d (axis %d of %s) is listed twice", fn, axes[i],
                                 a, VS(g, x));
        mask |= (int64_t)1 << a;
    }
    ts_attrs at = {0};
    at.i[0] = mask;
    at.i[1] = keepdims != 0;
    at.ni = 2;
    return ts_node_add(g, op, 1, &x, &at, NULL);
}

ts_value ts_reduce_sum(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims) {
    return reduce(g, TS_OP_REDUCE_SUM, "ts_reduce_sum", x, naxes, axes, keepdims);
}
ts_value ts_reduce_mean(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims) {
    return reduce(g, TS_OP_REDUCE_MEAN, "ts_reduce_mean", x, naxes, axes, keepdims);
}
ts_value ts_reduce_max(ts_graph *g, ts_value x, int naxes, const int *axes, int keepdims) {
    return reduce(g, TS_OP_REDUCE_MAX, "ts_reduce_max", x, naxes, axes, keepdims);
}
