/*
 * ops_shape.c — ONNX mappings of the ops that move or describe data: Shape, Size, Reshape,
 * Flatten, Squeeze, Unsqueeze, Transpose, Slice, Concat, Split, Gather, Expand, Cast, Identity,
 * Where, ConstantOfShape, Range, Constant.
 *
 * Each one computes its result on the host when its inputs are known at import time (shape
 * arithmetic: Shape -> Gather -> Concat -> Reshape), and otherwise builds graph ops. Shapes,
 * axes, starts / ends and the like must be known (they fix the output's shape); a graph value
 * there is refused. Gather on a graph value with known indices gathers along any axis (a
 * transpose around ts_gather, or a slice for one index), and so with indices computed by the
 * graph (negative ones made positive by graph ops). Slice steps other than 1 are computed on
 * known values only.
 */
#include "onnx/onnx_imp.h"

#include <math.h>
#include <stdio.h>

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

/* Set output 0 to input 0 viewed with a new shape (host or graph). */
static ts_status set_reshaped(ts_onnx_ctx *cx, const ts_onnx_node *n, int nd, const int64_t *sh) {
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, onnx_host_reshape(k, nd, sh));
    for (int i = 0; i < nd; i++)
        if (sh[i] == 0) return onnx_unsupported(cx, n, "the result has a zero dim (empty tensors are not supported)");
    return onnx_set(cx, n, 0, ts_reshape(cx->g, onnx_in(cx, n, 0), nd, sh));
}

/* Normalise axis a against rank r (a in [-r, r - 1]); -1 after refusing the node. */
static int norm_axis(ts_onnx_ctx *cx, const ts_onnx_node *n, int64_t a, int r, const char *what) {
    if (a < -r || a >= r) {
        onnx_invalid(cx, n, "%s %lld is out of range for rank %d", what, (long long)a, r);
        return -1;
    }
    return (int)(a < 0 ? a + r : a);
}

/* The axes of a node: attribute "axes" before opset `input_from`, input k from then on. The
 * count, -2 when absent, -1 after refusing. */
static int get_axes(ts_onnx_ctx *cx, const ts_onnx_node *n, int input_from, int k, int64_t *axes) {
    if (cx->opset < input_from) {
        int na = onnx_attr_ints(cx, n, "axes", axes, TS_MAX_DIMS * 2);
        return na < 0 ? (cx->node_refused ? -1 : -2) : na;
    }
    if (!onnx_has_in(n, k)) return -2;
    return onnx_known_ints(cx, n, k, axes, TS_MAX_DIMS * 2, "axes");
}

/* ------------------------------------------------------------------ Shape, Size */

static ts_status imp_shape(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t start = onnx_attr_int(cx, n, "start", 0), end = onnx_attr_int(cx, n, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    if (end < start) end = start;
    return onnx_set_known(cx, n, 0, onnx_host_ints(sh + start, (int)(end - start)));
}

static ts_status imp_size(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t cnt = ts_numel(r, sh);
    ts_tensor *t = ts_tensor_new(TS_I64, 0, NULL);
    if (t) *(int64_t *)t->data = cnt;
    return onnx_set_known(cx, n, 0, t);
}

/* ------------------------------------------------------------------ Reshape, Flatten, Squeeze, Unsqueeze */

static ts_status imp_reshape(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], want[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int allowzero = (int)onnx_attr_int(cx, n, "allowzero", 0);
    int nd = onnx_known_ints(cx, n, 1, want, TS_MAX_DIMS, "the shape");
    if (nd < 0) return TS_ERR_UNSUPPORTED;
    int64_t known = 1, total = ts_numel(r, sh);
    int minus = -1;
    for (int i = 0; i < nd; i++) {
        if (want[i] == 0 && !allowzero) {
            if (i >= r) return onnx_invalid(cx, n, "shape entry %d is 0 (copy) but the input has rank %d", i, r);
            want[i] = sh[i];
        }
        if (want[i] == -1) {
            if (minus >= 0) return onnx_invalid(cx, n, "the shape has more than one -1");
            minus = i;
        } else if (want[i] < 0) {
            return onnx_invalid(cx, n, "shape entry %d is %lld", i, (long long)want[i]);
        } else if (__builtin_mul_overflow(known, want[i], &known)) {
            return onnx_invalid(cx, n, "the shape's element count overflows (entry %d is %lld)", i, (long long)want[i]);
        }
    }
    if (minus >= 0) {
        if (known == 0 || total % known) return onnx_invalid(cx, n, "no size for the -1 makes %lld elements", (long long)total);
        want[minus] = total / known;
    } else if (known != total) {
        char a[160], b[160];
        return onnx_invalid(cx, n, "cannot reshape %s to %s", ts_shape_str(r, sh, a, sizeof a), ts_shape_str(nd, want, b, sizeof b));
    }
    return set_reshaped(cx, n, nd, want);
}

static ts_status imp_flatten(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int64_t a = onnx_attr_int(cx, n, "axis", 1);
    if (a < -r || a > r) return onnx_invalid(cx, n, "axis %lld is out of range for rank %d", (long long)a, r);
    if (a < 0) a += r;
    int64_t out[2] = {ts_numel((int)a, sh), ts_numel(r - (int)a, sh + a)};
    return set_reshaped(cx, n, 2, out);
}

static ts_status imp_squeeze(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], axes[TS_MAX_DIMS * 2], out[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh), drop[TS_MAX_DIMS] = {0};
    int na = get_axes(cx, n, 13, 1, axes);
    if (na == -1) return TS_ERR_UNSUPPORTED;
    if (na == -2) {
        for (int i = 0; i < r; i++) drop[i] = sh[i] == 1;
    } else {
        for (int i = 0; i < na; i++) {
            int a = norm_axis(cx, n, axes[i], r, "axis");
            if (a < 0) return TS_ERR_IO;
            if (sh[a] != 1) return onnx_invalid(cx, n, "axis %lld has size %lld, not 1", (long long)axes[i], (long long)sh[a]);
            drop[a] = 1;
        }
    }
    int nd = 0;
    for (int i = 0; i < r; i++)
        if (!drop[i]) out[nd++] = sh[i];
    return set_reshaped(cx, n, nd, out);
}

static ts_status imp_unsqueeze(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], axes[TS_MAX_DIMS * 2], out[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh), ins[TS_MAX_DIMS * 2] = {0};
    int na = get_axes(cx, n, 13, 1, axes);
    if (na == -1) return TS_ERR_UNSUPPORTED;
    if (na == -2) return onnx_invalid(cx, n, "no axes");
    int nd = r + na;
    if (nd > TS_MAX_DIMS) return onnx_unsupported(cx, n, "the result would have rank %d > %d", nd, TS_MAX_DIMS);
    for (int i = 0; i < na; i++) {
        int a = norm_axis(cx, n, axes[i], nd, "axis");
        if (a < 0) return TS_ERR_IO;
        if (ins[a]) return onnx_invalid(cx, n, "axis %lld is listed twice", (long long)axes[i]);
        ins[a] = 1;
    }
    for (int i = 0, j = 0; i < nd; i++) out[i] = ins[i] ? 1 : sh[j++];
    return set_reshaped(cx, n, nd, out);
}

/* ------------------------------------------------------------------ Transpose */

static ts_status imp_transpose(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], p[TS_MAX_DIMS * 2];
    int r = onnx_in_shape(cx, n, 0, sh), perm[TS_MAX_DIMS];
    int np = onnx_attr_ints(cx, n, "perm", p, TS_MAX_DIMS * 2);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (np < 0)
        for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    else if (np != r) return onnx_invalid(cx, n, "perm has %d entries for an input of rank %d", np, r);
    unsigned seen = 0;
    for (int i = 0; np >= 0 && i < r; i++) {
        if (p[i] < 0 || p[i] >= r || (seen >> p[i] & 1)) return onnx_invalid(cx, n, "perm is not a permutation");
        seen |= 1u << p[i];
        perm[i] = (int)p[i];
    }
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, onnx_host_transpose(k, perm));
    return onnx_set(cx, n, 0, ts_transpose(cx->g, onnx_in(cx, n, 0), perm));
}

/* ------------------------------------------------------------------ Slice */

static ts_status imp_slice(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], st[TS_MAX_DIMS * 2], en[TS_MAX_DIMS * 2], ax[TS_MAX_DIMS * 2], sp[TS_MAX_DIMS * 2];
    int r = onnx_in_shape(cx, n, 0, sh), ns, ne, na, nst;
    if (cx->opset < 10) {
        ns = onnx_attr_ints(cx, n, "starts", st, TS_MAX_DIMS * 2);
        ne = onnx_attr_ints(cx, n, "ends", en, TS_MAX_DIMS * 2);
        na = onnx_attr_ints(cx, n, "axes", ax, TS_MAX_DIMS * 2);
        nst = -1;
        if (cx->node_refused) return TS_ERR_UNSUPPORTED;
        if (ns < 0 || ne < 0) return onnx_invalid(cx, n, "starts and ends are required");
    } else {
        if ((ns = onnx_known_ints(cx, n, 1, st, TS_MAX_DIMS * 2, "starts")) < 0) return TS_ERR_UNSUPPORTED;
        if ((ne = onnx_known_ints(cx, n, 2, en, TS_MAX_DIMS * 2, "ends")) < 0) return TS_ERR_UNSUPPORTED;
        na = nst = -1;
        if (onnx_has_in(n, 3) && (na = onnx_known_ints(cx, n, 3, ax, TS_MAX_DIMS * 2, "axes")) < 0) return TS_ERR_UNSUPPORTED;
        if (onnx_has_in(n, 4) && (nst = onnx_known_ints(cx, n, 4, sp, TS_MAX_DIMS * 2, "steps")) < 0)
            return TS_ERR_UNSUPPORTED;
    }
    if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return onnx_invalid(cx, n, "starts, ends, axes and steps differ in length");
    int axes[TS_MAX_DIMS * 2], used = 0;
    int64_t first[TS_MAX_DIMS * 2], last[TS_MAX_DIMS * 2], step[TS_MAX_DIMS * 2];
    for (int i = 0; i < ns; i++) {
        int a = norm_axis(cx, n, na >= 0 ? ax[i] : i, r, "axis");
        if (a < 0) return TS_ERR_IO;
        if (used >> a & 1) return onnx_invalid(cx, n, "axis %d is sliced twice", a);
        used |= 1 << a;
        int64_t d = sh[a], s = st[i], e = en[i], k = nst >= 0 ? sp[i] : 1;
        if (k == 0) return onnx_invalid(cx, n, "step 0 on axis %d", a);
        if (s < 0) s += d;
        if (e < 0) e += d;
        if (k > 0) {
            s = s < 0 ? 0 : s > d ? d : s;
            e = e < 0 ? 0 : e > d ? d : e;
        } else {
            s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
        }
        axes[i] = a, first[i] = s, last[i] = e, step[i] = k;
    }
    const ts_tensor *kt = onnx_known(cx, n, 0);
    if (kt) return onnx_set_known(cx, n, 0, onnx_host_slice(kt, ns, axes, first, last, step));
    ts_value x = onnx_in(cx, n, 0);
    for (int i = 0; i < ns; i++) {
        if (step[i] != 1) return onnx_unsupported(cx, n, "step %lld on a graph value (only 1)", (long long)step[i]);
        if (last[i] <= first[i]) return onnx_unsupported(cx, n, "the slice of axis %d is empty (empty tensors are not supported)", axes[i]);
    }
    for (int i = 0; i < ns; i++)
        if (first[i] != 0 || last[i] != sh[axes[i]]) {
            x = ts_slice(cx->g, x, axes[i], first[i], last[i]);
            if (x == TS_NONE) return onnx_check(cx, n);
        }
    if (x == onnx_in(cx, n, 0)) { /* nothing cut: a copy so the output is a value of its own */
        x = ts_reshape(cx->g, x, r, sh);
    }
    return onnx_set(cx, n, 0, x);
}

/* ------------------------------------------------------------------ Concat, Split */

static ts_status imp_concat(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh0[TS_MAX_DIMS], sh[TS_MAX_DIMS];
    int nin = onnx_nin(n), r = -1;
    if (!onnx_attr_has(cx, n, "axis")) return onnx_invalid(cx, n, "no axis");
    int64_t axis = onnx_attr_int(cx, n, "axis", 0);
    const ts_tensor **ks = onnx_own(cx, ts_xrealloc(NULL, sizeof *ks * (size_t)(nin + 1)));
    ts_value *vs = onnx_own(cx, ts_xrealloc(NULL, sizeof *vs * (size_t)(nin + 1)));
    int all_known = 1, nv = 0, a = 0;
    ts_dtype dt = TS_DTYPE_COUNT;
    for (int k = 0; k < nin; k++) {
        if (!onnx_has_in(n, k)) return onnx_invalid(cx, n, "input %d is empty", k);
        int rk = onnx_in_shape(cx, n, k, sh);
        if (r < 0) {
            r = rk;
            memcpy(sh0, sh, sizeof sh);
            dt = onnx_in_dtype(cx, n, k);
            if ((a = norm_axis(cx, n, axis, r, "axis")) < 0) return TS_ERR_IO;
        }
        int same = rk == r && onnx_in_dtype(cx, n, k) == dt;
        for (int i = 0; same && i < r; i++) same = i == a || sh[i] == sh0[i];
        if (!same) return onnx_invalid(cx, n, "input %d differs from input 0 in dtype or in a dim other than the axis", k);
        ks[k] = onnx_known(cx, n, k);
        all_known &= ks[k] != NULL;
    }
    if (all_known) return onnx_set_known(cx, n, 0, onnx_host_concat(nin, ks, a));
    int64_t total = 0;
    for (int k = 0; k < nin; k++) {
        onnx_in_shape(cx, n, k, sh);
        total += sh[a];
        if (sh[a] == 0) continue; /* an empty part adds nothing */
        vs[nv++] = onnx_in(cx, n, k);
    }
    for (int i = 0; i < r; i++)
        if ((i == a ? total : sh0[i]) == 0) return onnx_unsupported(cx, n, "the result is empty (empty tensors are not supported)");
    if (nv == 1) { /* a copy, so the output is a value of its own */
        sh0[a] = total;
        return onnx_set(cx, n, 0, ts_reshape(cx->g, vs[0], r, sh0));
    }
    return onnx_set(cx, n, 0, ts_concat(cx->g, nv, vs, a));
}

static ts_status imp_split(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], sizes[64];
    int r = onnx_in_shape(cx, n, 0, sh), nout = onnx_nout(n);
    int a = norm_axis(cx, n, onnx_attr_int(cx, n, "axis", 0), r, "axis");
    if (a < 0) return TS_ERR_IO;
    if (nout > 64) return onnx_unsupported(cx, n, "%d outputs (at most 64)", nout);
    if (nout < 1) return onnx_invalid(cx, n, "no outputs to split into");
    int ns = -1;
    if (cx->opset < 13) ns = onnx_attr_ints(cx, n, "split", sizes, 64);
    else if (onnx_has_in(n, 1) && (ns = onnx_known_ints(cx, n, 1, sizes, 64, "split")) < 0) return TS_ERR_UNSUPPORTED;
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (ns < 0) {
        if (sh[a] % nout) return onnx_invalid(cx, n, "axis size %lld does not split into %d equal parts", (long long)sh[a], nout);
        for (int k = 0; k < nout; k++) sizes[k] = sh[a] / nout;
    } else if (ns != nout) {
        return onnx_invalid(cx, n, "split lists %d sizes for %d outputs", ns, nout);
    }
    int64_t off = 0;
    for (int k = 0; k < nout; k++) {
        if (sizes[k] < 0 || off + sizes[k] > sh[a]) return onnx_invalid(cx, n, "the split sizes exceed the axis");
        off += sizes[k];
    }
    if (off != sh[a]) return onnx_invalid(cx, n, "the split sizes sum to %lld, not %lld", (long long)off, (long long)sh[a]);
    const ts_tensor *kt = onnx_known(cx, n, 0);
    off = 0;
    for (int k = 0; k < nout; k++) {
        int64_t s = off, e = off + sizes[k], one = 1;
        off = e;
        if (!onnx_has_out(n, k)) continue;
        if (kt) {
            ts_status st = onnx_set_known(cx, n, k, onnx_host_slice(kt, 1, &a, &s, &e, &one));
            if (st) return st;
            continue;
        }
        if (e == s) return onnx_unsupported(cx, n, "output %d is empty (empty tensors are not supported)", k);
        ts_value x = onnx_in(cx, n, 0);
        ts_value y = s == 0 && e == sh[a] ? ts_reshape(cx->g, x, r, sh) : ts_slice(cx->g, x, a, s, e);
        ts_status st = onnx_set(cx, n, k, y);
        if (st) return st;
    }
    return TS_OK;
}

/* ------------------------------------------------------------------ Gather */

static ts_status imp_gather(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], ish[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh), ir = onnx_in_shape(cx, n, 1, ish);
    int a = norm_axis(cx, n, onnx_attr_int(cx, n, "axis", 0), r, "axis");
    if (a < 0) return TS_ERR_IO;
    ts_dtype idt = onnx_in_dtype(cx, n, 1);
    if (idt != TS_I64 && idt != TS_I32) return onnx_invalid(cx, n, "indices are %s, not int32 / int64", ts_dtype_name(idt));
    if (r + ir - 1 > TS_MAX_DIMS) return onnx_unsupported(cx, n, "the result would have rank %d > %d", r + ir - 1, TS_MAX_DIMS);
    const ts_tensor *data = onnx_known(cx, n, 0), *idx = onnx_known(cx, n, 1);
    ts_tensor *norm = NULL;
    if (idx) { /* known indices: made non-negative and checked */
        norm = onnx_host_cast(idx, TS_I64);
        if (!norm) return onnx_unsupported(cx, n, "%s", ts_last_error());
        onnx_own_tensor(cx, norm);
        int64_t *p = norm->data;
        for (int64_t i = 0, cnt = ts_tensor_numel(norm); i < cnt; i++) {
            if (p[i] < -sh[a] || p[i] >= sh[a])
                return onnx_invalid(cx, n, "index %lld is outside [-%lld, %lld)", (long long)p[i], (long long)sh[a], (long long)sh[a]);
            if (p[i] < 0) p[i] += sh[a];
        }
    }
    int64_t out[TS_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < a; i++) out[nd++] = sh[i];
    for (int i = 0; i < ir; i++) out[nd++] = ish[i];
    for (int i = a + 1; i < r; i++) out[nd++] = sh[i];
    if (data && norm) {
        if (!onnx_fold_limit(cx, n, nd, out)) return TS_ERR_UNSUPPORTED;
        return onnx_set_known(cx, n, 0, onnx_host_gather(data, norm, a));
    }
    for (int i = 0; i < nd; i++)
        if (out[i] == 0) return onnx_unsupported(cx, n, "the result is empty (empty tensors are not supported)");
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0);
    if (norm && ts_tensor_numel(norm) == 1) { /* one index: a slice of any dtype */
        int64_t i0 = ((int64_t *)norm->data)[0];
        ts_value y = ts_slice(g, x, a, i0, i0 + 1);
        return onnx_set(cx, n, 0, y == TS_NONE ? y : ts_reshape(g, y, nd, out));
    }
    if (onnx_in_dtype(cx, n, 0) != TS_F32)
        return onnx_unsupported(cx, n, "data is %s; gathering several entries takes f32 data", ts_dtype_name(onnx_in_dtype(cx, n, 0)));
    ts_value iv = norm ? ts_constant(g, norm) : onnx_in(cx, n, 1);
    if (!norm) { /* indices computed by the graph: negative ones count from the end */
        ts_value zero = ts_constant(g, onnx_own_tensor(cx, ts_tensor_new(idt, 0, NULL)));
        ts_tensor *dim = ts_tensor_new(idt, 0, NULL);
        if (dim) onnx_put_i64(dim, 0, sh[a]);
        ts_value dv = ts_constant(g, onnx_own_tensor(cx, dim));
        iv = ts_select(g, ts_binary(g, TS_BIN_LESS, iv, zero), ts_binary(g, TS_BIN_ADD, iv, dv), iv);
    }
    if (a == 0) return onnx_set(cx, n, 0, ts_gather(g, x, iv));
    /* along axis a: bring it to the front, gather, and move the index dims back to a */
    int p1[TS_MAX_DIMS], p2[TS_MAX_DIMS], k = 0;
    p1[k++] = a;
    for (int i = 0; i < r; i++)
        if (i != a) p1[k++] = i;
    ts_value t = ts_gather(g, ts_transpose(g, x, p1), iv); /* [idx..., sh[0..a), sh(a..r)] */
    k = 0;
    for (int i = 0; i < a; i++) p2[k++] = ir + i;
    for (int i = 0; i < ir; i++) p2[k++] = i;
    for (int i = a + 1; i < r; i++) p2[k++] = ir + i - 1;
    return onnx_set(cx, n, 0, ts_transpose(g, t, p2));
}

/* ------------------------------------------------------------------ Expand */

static ts_status imp_expand(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], want[TS_MAX_DIMS], out[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int nw = onnx_known_ints(cx, n, 1, want, TS_MAX_DIMS, "the shape");
    if (nw < 0) return TS_ERR_UNSUPPORTED;
    int nd = onnx_bcast(r, sh, nw, want, out);
    if (nd < 0) return onnx_invalid(cx, n, "the input's shape does not broadcast to the given shape");
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_fold_limit(cx, n, nd, out) ? onnx_set_known(cx, n, 0, onnx_host_expand(k, nd, out)) : TS_ERR_UNSUPPORTED;
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_expand(cx->g, onnx_in(cx, n, 0), nd, out));
}

/* ------------------------------------------------------------------ Cast, Identity, Where */

static ts_status imp_cast(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t to = onnx_attr_int(cx, n, "to", -1);
    onnx_attr_ignore(cx, n, "saturate"); /* opset 19's, for 8-bit floats */
    ts_dtype dt;
    if (to < 0) return onnx_invalid(cx, n, "no 'to' attribute");
    if (!onnx_dtype((int32_t)to, &dt)) return onnx_unsupported(cx, n, "cast to %s: tessera has no such dtype", onnx_type_name((int32_t)to));
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, onnx_host_cast(k, dt));
    ts_dtype from = onnx_in_dtype(cx, n, 0);
    ts_value x = onnx_in(cx, n, 0);
    if (to == 9 /* BOOL */ && from != TS_U8) { /* x != 0 */
        if (from != TS_F32 && from != TS_I32 && from != TS_I64)
            return onnx_unsupported(cx, n, "cast of a graph %s value to BOOL", ts_dtype_name(from));
        ts_value zero = ts_constant(cx->g, onnx_own_tensor(cx, ts_tensor_new(from, 0, NULL)));
        return onnx_set(cx, n, 0, ts_not(cx->g, ts_binary(cx->g, TS_BIN_EQUAL, x, zero)));
    }
    if (from == dt) { /* a copy, so the output is a value of its own */
        int64_t sh[TS_MAX_DIMS];
        int r = onnx_in_shape(cx, n, 0, sh);
        return onnx_set(cx, n, 0, ts_reshape(cx->g, x, r, sh));
    }
    return onnx_set(cx, n, 0, ts_cast(cx->g, x, dt));
}

static ts_status imp_identity(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (k) return onnx_set_known(cx, n, 0, ts_tensor_from(k->dtype, k->ndim, k->shape, k->data));
    return onnx_set(cx, n, 0, onnx_in(cx, n, 0));
}

static ts_status imp_where(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t s[3][TS_MAX_DIMS], t[TS_MAX_DIMS], u[TS_MAX_DIMS];
    int r0 = onnx_in_shape(cx, n, 0, s[0]), r1 = onnx_in_shape(cx, n, 1, s[1]), r2 = onnx_in_shape(cx, n, 2, s[2]);
    int nt = onnx_bcast(r0, s[0], r1, s[1], t);
    if (nt < 0 || onnx_bcast(nt, t, r2, s[2], u) < 0) return onnx_invalid(cx, n, "the shapes do not broadcast");
    if (onnx_in_dtype(cx, n, 0) != TS_U8) return onnx_invalid(cx, n, "the condition is not BOOL");
    if (onnx_in_dtype(cx, n, 1) != onnx_in_dtype(cx, n, 2)) return onnx_invalid(cx, n, "X and Y differ in dtype");
    if (onnx_all_known(cx, n)) {
        if (!onnx_fold_limit(cx, n, onnx_bcast(nt, t, r2, s[2], u), u)) return TS_ERR_UNSUPPORTED;
        return onnx_set_known(cx, n, 0, onnx_host_where(onnx_known(cx, n, 0), onnx_known(cx, n, 1), onnx_known(cx, n, 2)));
    }
    return onnx_set(cx, n, 0, ts_select(cx->g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), onnx_in(cx, n, 2)));
}

/* ------------------------------------------------------------------ Constant, ConstantOfShape, Range */

static ts_status imp_constant(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *v = onnx_attr_tensor(cx, n, "value");
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (v) return onnx_set_known(cx, n, 0, ts_tensor_from(v->dtype, v->ndim, v->shape, v->data));
    if (onnx_attr_has(cx, n, "value_float")) {
        float f = onnx_attr_float(cx, n, "value_float", 0);
        return onnx_set_known(cx, n, 0, ts_tensor_from(TS_F32, 0, NULL, &f));
    }
    if (onnx_attr_has(cx, n, "value_int")) {
        int64_t i = onnx_attr_int(cx, n, "value_int", 0);
        return onnx_set_known(cx, n, 0, ts_tensor_from(TS_I64, 0, NULL, &i));
    }
    for (size_t a = 0; a < n->n_attribute; a++) {
        const Onnx__AttributeProto *at = n->attribute[a];
        if (!at->name) continue;
        if (!strcmp(at->name, "value_floats")) {
            int64_t cnt = (int64_t)at->n_floats;
            onnx_attr_ignore(cx, n, "value_floats");
            return onnx_set_known(cx, n, 0, ts_tensor_from(TS_F32, 1, &cnt, at->floats));
        }
        if (!strcmp(at->name, "value_ints")) {
            onnx_attr_ignore(cx, n, "value_ints");
            return onnx_set_known(cx, n, 0, onnx_host_ints(at->ints, (int)at->n_ints));
        }
    }
    if (n->n_attribute) return TS_OK; /* value_string(s), sparse_value: the unread check names it */
    return onnx_invalid(cx, n, "no value attribute");
}

static ts_status imp_constant_of_shape(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    const ts_tensor *v = onnx_attr_tensor(cx, n, "value");
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (v && ts_tensor_numel(v) != 1) return onnx_invalid(cx, n, "value has %lld elements, not 1", (long long)ts_tensor_numel(v));
    int nd = onnx_known_ints(cx, n, 0, sh, TS_MAX_DIMS, "the shape");
    if (nd < 0) return TS_ERR_UNSUPPORTED;
    for (int i = 0; i < nd; i++)
        if (sh[i] < 0) return onnx_invalid(cx, n, "dim %d is %lld", i, (long long)sh[i]);
    if (!onnx_fold_limit(cx, n, nd, sh)) return TS_ERR_UNSUPPORTED;
    ts_tensor *t = ts_tensor_new(v ? v->dtype : TS_F32, nd, sh);
    if (t && v) {
        size_t esz = ts_dtype_size(v->dtype);
        for (int64_t i = 0, cnt = ts_tensor_numel(t); i < cnt; i++) memcpy((char *)t->data + (size_t)i * esz, v->data, esz);
    }
    return onnx_set_known(cx, n, 0, t);
}

static ts_status imp_range(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    double v[3];
    static const char *const what[3] = {"start", "limit", "delta"};
    for (int k = 0; k < 3; k++)
        if (!onnx_known_scalar(cx, n, k, &v[k], what[k])) return TS_ERR_UNSUPPORTED;
    ts_dtype dt = onnx_in_dtype(cx, n, 0);
    if (v[2] == 0) return onnx_invalid(cx, n, "delta is 0");
    double cnt = ceil((v[1] - v[0]) / v[2]);
    if (!(cnt < (double)((int64_t)1 << 40))) return onnx_unsupported(cx, n, "a range of %g elements", cnt);
    int64_t len = cnt > 0 ? (int64_t)cnt : 0;
    if (!onnx_fold_limit(cx, n, 1, &len)) return TS_ERR_UNSUPPORTED;
    ts_tensor *t = ts_tensor_new(dt, 1, &len);
    int ints = dt == TS_I32 || dt == TS_I64;
    int64_t i0 = ints ? onnx_get_i64(onnx_known(cx, n, 0), 0) : 0, di = ints ? onnx_get_i64(onnx_known(cx, n, 2), 0) : 0;
    for (int64_t i = 0; t && i < len; i++) {
        if (ints) onnx_put_i64(t, i, (int64_t)((uint64_t)i0 + (uint64_t)i * (uint64_t)di));
        else onnx_put_f64(t, i, (float)v[0] + (float)i * (float)v[2]);
    }
    return onnx_set_known(cx, n, 0, t);
}

const ts_onnx_op ts_onnx_ops_shape[] = {
    {"Shape", 9, 17, imp_shape},
    {"Size", 9, 17, imp_size},
    {"Reshape", 9, 17, imp_reshape},
    {"Flatten", 9, 17, imp_flatten},
    {"Squeeze", 9, 17, imp_squeeze},
    {"Unsqueeze", 9, 17, imp_unsqueeze},
    {"Transpose", 9, 17, imp_transpose},
    {"Slice", 9, 17, imp_slice},
    {"Concat", 9, 17, imp_concat},
    {"Split", 9, 17, imp_split},
    {"Gather", 9, 17, imp_gather},
    {"Expand", 9, 17, imp_expand},
    {"Cast", 9, 17, imp_cast},
    {"Identity", 9, 17, imp_identity},
    {"Where", 9, 17, imp_where},
    {"Constant", 9, 17, imp_constant},
    {"ConstantOfShape", 9, 17, imp_constant_of_shape},
    {"Range", 11, 17, imp_range},
    {NULL, 0, 0, NULL}, /* the end (not counted) */
};
const int ts_onnx_ops_shape_n = (int)(sizeof ts_onnx_ops_shape / sizeof *ts_onnx_ops_shape) - 1;
