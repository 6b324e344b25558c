/*
 * shape.c — ONNX mappings of the ops that describe, reshape or rearrange data: Shape, Size,
 * Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, Concat, Split, Expand, Tile (ts_tile),
 * Pad (ts_pad), DepthToSpace / SpaceToDepth (reshape, transpose, reshape).
 *
 * Each one computes its result on the host when its inputs are known at import time (shape
 * arithmetic: Shape -> Gather -> Concat -> Reshape), and otherwise builds graph ops. Shapes,
 * axes, starts / ends, repeats, pads and the like must be known (they fix the output's shape); a
 * graph value there is refused. Slice steps other than 1 are computed on known values only.
 */

#include "onnx/map/map.h"

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
    const ts_tensor **ks = onnx_own(cx, malloc(sizeof *ks * (size_t)(nin + 1)));
    ts_value *vs = ks ? onnx_own(cx, malloc(sizeof *vs * (size_t)(nin + 1))) : NULL;
    if (!vs) return onnx_unsupported(cx, n, "out of memory"); /* the context is out of memory (onnx_own) */
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

/* ------------------------------------------------------------------ Tile, Pad */

static ts_status imp_tile(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], rep[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int nr = onnx_known_ints(cx, n, 1, rep, TS_MAX_DIMS, "repeats");
    if (nr < 0) return TS_ERR_UNSUPPORTED;
    if (nr != r) return onnx_invalid(cx, n, "repeats has %d values for an input of rank %d", nr, r);
    for (int i = 0; i < r; i++)
        if (rep[i] < 1) return onnx_unsupported(cx, n, "repeat %lld (an empty result)", (long long)rep[i]);
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_tile(cx->g, onnx_in(cx, n, 0), rep));
}

static ts_status imp_pad(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], pads[TS_MAX_DIMS * 2];
    int r = onnx_in_shape(cx, n, 0, sh), np;
    const char *ms = onnx_attr_string(cx, n, "mode", "constant");
    double value = 0;
    if (cx->opset < 11) {
        np = onnx_attr_ints(cx, n, "pads", pads, TS_MAX_DIMS * 2);
        value = onnx_attr_float(cx, n, "value", 0.f);
        if (np < 0 && !cx->node_refused) return onnx_invalid(cx, n, "no pads attribute");
    } else {
        np = onnx_known_ints(cx, n, 1, pads, TS_MAX_DIMS * 2, "pads");
        if (np >= 0 && onnx_has_in(n, 2) && !onnx_known_scalar(cx, n, 2, &value, "constant_value"))
            return TS_ERR_UNSUPPORTED;
    }
    if (np < 0 || cx->node_refused) return TS_ERR_UNSUPPORTED;
    ts_pad_mode mode;
    if (!strcmp(ms, "constant")) mode = TS_PAD_CONSTANT;
    else if (!strcmp(ms, "reflect")) mode = TS_PAD_REFLECT;
    else if (!strcmp(ms, "edge")) mode = TS_PAD_EDGE;
    else return onnx_unsupported(cx, n, "mode '%s'", ms);
    if (np != 2 * r) return onnx_invalid(cx, n, "%d pads for an input of rank %d", np, r);
    for (int i = 0; i < r; i++) {
        int64_t b = pads[i], e = pads[r + i];
        if (sh[i] + b + e < 1) return onnx_unsupported(cx, n, "pads that leave axis %d empty", i);
        if (mode == TS_PAD_REFLECT && (b >= sh[i] || e >= sh[i]) && (b > 0 || e > 0))
            return onnx_unsupported(cx, n, "reflect pads of axis %d as large as its size %lld", i, (long long)sh[i]);
        if (b < INT32_MIN || b > INT32_MAX || e < INT32_MIN || e > INT32_MAX)
            return onnx_unsupported(cx, n, "pads beyond 32 bits");
    }
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_pad(cx->g, onnx_in(cx, n, 0), pads, mode, value));
}

/* ------------------------------------------------------------------ DepthToSpace, SpaceToDepth */

static ts_status imp_depth_to_space(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t s[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, s);
    int64_t b = onnx_attr_int(cx, n, "blocksize", 0);
    const char *mode = onnx_attr_string(cx, n, "mode", "DCR");
    int crd = !strcmp(mode, "CRD");
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (!crd && strcmp(mode, "DCR")) return onnx_invalid(cx, n, "mode '%s' is neither DCR nor CRD", mode);
    if (r != 4 || b < 1 || b > s[1] || s[1] % (b * b))
        return onnx_invalid(cx, n, "the input must be [N, C, H, W] with C divisible by blocksize^2");
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t c = s[1] / (b * b);
    /* DCR: [N, b, b, c, H, W] -> [N, c, H, b, W, b];  CRD: [N, c, b, b, H, W] -> the same order */
    int64_t six[6] = {s[0], crd ? c : b, b, crd ? b : c, s[2], s[3]};
    int perm_dcr[6] = {0, 3, 4, 1, 5, 2}, perm_crd[6] = {0, 1, 4, 2, 5, 3};
    ts_value y = ts_transpose(g, ts_reshape(g, onnx_in(cx, n, 0), 6, six), crd ? perm_crd : perm_dcr);
    return onnx_set(cx, n, 0, ts_reshape(g, y, 4, (int64_t[]){s[0], c, s[2] * b, s[3] * b}));
}

static ts_status imp_space_to_depth(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t s[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, s);
    int64_t b = onnx_attr_int(cx, n, "blocksize", 0);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (r != 4 || b < 1 || b > s[2] || b > s[3] || s[2] % b || s[3] % b)
        return onnx_invalid(cx, n, "the input must be [N, C, H, W] with H and W divisible by blocksize");
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t six[6] = {s[0], s[1], s[2] / b, b, s[3] / b, b};
    ts_value y = ts_transpose(g, ts_reshape(g, onnx_in(cx, n, 0), 6, six), (int[]){0, 3, 5, 1, 2, 4});
    return onnx_set(cx, n, 0, ts_reshape(g, y, 4, (int64_t[]){s[0], s[1] * b * b, s[2] / b, s[3] / b}));
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
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
    {"Expand", 9, 17, imp_expand},
    {"Tile", 9, 17, imp_tile},
    {"Pad", 9, 17, imp_pad},
    {"DepthToSpace", 9, 17, imp_depth_to_space},
    {"SpaceToDepth", 9, 17, imp_space_to_depth},
};
const onnx_family onnx_family_shape = {"shape", ops, (int)(sizeof ops / sizeof *ops)};
