/*
 * index.c — ONNX mappings of the indexing ops: Gather, Trilu, GatherElements, ScatterElements (and
 * the older Scatter), GatherND, ScatterND, TopK, OneHot, Compress, ReverseSequence, NonZero, and
 * TfIdfVectorizer's n-gram lookups (ts_tfidf).
 *
 * Gather computes on the host when its inputs are known (shape arithmetic); on a graph value with
 * known indices it gathers along any axis (a transpose around ts_gather, or a slice for one index),
 * and so with indices computed by the graph (negative ones made positive by graph ops).
 * Data of any tessera dtype moves through ts_gather_elements / ts_scatter_elements, so no value is
 * converted. GatherND / ScatterND view the data as [B, P, R] (batch dims, the dims the index
 * tuples address, the rest) and turn each tuple into one flat row number, computed by the graph
 * in i64 (negative indices count from the end), then gather or scatter whole rows.
 * Compress needs its condition known at import (it fixes the result's shape); NonZero computes on
 * known inputs only (its result's shape depends on the data).
 */

#include "onnx/map/map.h"

/* ------------------------------------------------------------------ Gather */

static ts_status imp_gather(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], ish[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh), ir = onnx_in_shape(cx, n, 1, ish);
    int a = map_axis(cx, n, onnx_attr_int(cx, n, "axis", 0), r, "axis");
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

/* ------------------------------------------------------------------ Trilu */

static ts_status imp_trilu(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int upper = onnx_attr_int(cx, n, "upper", 1) != 0;
    int64_t ksh[TS_MAX_DIMS];
    if (r < 2) return onnx_invalid(cx, n, "the input has rank %d; Trilu needs >= 2", r);
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    const ts_tensor *kk = onnx_known(cx, n, 1);
    if (!onnx_has_in(n, 1) || kk) { /* k fixed at import */
        if (kk && ts_tensor_numel(kk) != 1)
            return onnx_invalid(cx, n, "k has %lld elements", (long long)ts_tensor_numel(kk));
        return onnx_set(cx, n, 0, ts_trilu(cx->g, onnx_in(cx, n, 0), upper, kk ? onnx_get_i64(kk, 0) : 0));
    }
    if (ts_numel(onnx_in_shape(cx, n, 1, ksh), ksh) != 1 || onnx_in_dtype(cx, n, 1) != TS_I64)
        return onnx_invalid(cx, n, "k must be one int64");
    return onnx_set(cx, n, 0, ts_trilu_k(cx->g, onnx_in(cx, n, 0), upper, onnx_in(cx, n, 1)));
}

/* ------------------------------------------------------------------ GatherElements / ScatterElements */

/* data (input 0) and indices (input 1) of one rank, the index dims within data's but along axis. */
static int check_elements(ts_onnx_ctx *cx, const ts_onnx_node *n, int64_t axis_attr, int *axis) {
    int64_t d[TS_MAX_DIMS], ix[TS_MAX_DIMS];
    int rd = onnx_in_shape(cx, n, 0, d), ri = onnx_in_shape(cx, n, 1, ix);
    if (cx->node_refused) return -1;
    if ((*axis = map_axis(cx, n, axis_attr, rd, "axis")) < 0) return -1;
    if (onnx_need_dtype(cx, n, 1, (const ts_dtype[]){TS_I64, TS_I32}, 2)) return -1;
    if (ri != rd) return onnx_invalid(cx, n, "indices have rank %d, data %d", ri, rd), -1;
    for (int i = 0; i < rd; i++)
        if (i != *axis && ix[i] > d[i]) return onnx_invalid(cx, n, "dim %d of the indices exceeds the data's", i), -1;
    if (map_need_nonempty(cx, n, 0) || map_need_nonempty(cx, n, 1)) return -1;
    return 0;
}

static ts_status imp_gather_elements(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int axis;
    if (check_elements(cx, n, onnx_attr_int(cx, n, "axis", 0), &axis)) return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_gather_elements(cx->g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), axis));
}

/* The reduction attribute of ScatterElements / ScatterND (opset 16 on), -1 after refusing. */
static int scatter_reduction(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const char *red = cx->opset >= 16 ? onnx_attr_string(cx, n, "reduction", "none") : "none";
    if (!strcmp(red, "none")) return TS_SCATTER_NONE;
    if (!strcmp(red, "add")) return TS_SCATTER_ADD;
    if (!strcmp(red, "mul")) return TS_SCATTER_MUL;
    onnx_unsupported(cx, n, "reduction '%s'", red);
    return -1;
}

static ts_status imp_scatter_elements(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int axis, red = scatter_reduction(cx, n);
    int64_t ix[TS_MAX_DIMS], u[TS_MAX_DIMS];
    if (red < 0 || check_elements(cx, n, onnx_attr_int(cx, n, "axis", 0), &axis)) return TS_ERR_UNSUPPORTED;
    int ri = onnx_in_shape(cx, n, 1, ix), ru = onnx_in_shape(cx, n, 2, u);
    if (ru != ri || memcmp(ix, u, sizeof(int64_t) * (size_t)ri))
        return onnx_invalid(cx, n, "updates and indices differ in shape");
    if (onnx_in_dtype(cx, n, 2) != onnx_in_dtype(cx, n, 0))
        return onnx_invalid(cx, n, "updates and data differ in dtype");
    ts_dtype d = onnx_in_dtype(cx, n, 0);
    if (red != TS_SCATTER_NONE && d != TS_F32 && d != TS_I32 && d != TS_I64)
        return onnx_unsupported(cx, n, "reduction on %s data", ts_dtype_name(d));
    return onnx_set(cx, n, 0, ts_scatter_elements(cx->g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), onnx_in(cx, n, 2),
                                                  axis, (ts_scatter_reduce)red));
}

/* ------------------------------------------------------------------ GatherND / ScatterND */

/* The flat row number (i64, shape indices.shape[:-1]) of each index tuple of input k (the last dim
 * q of its shape) into data viewed as [B, P, R]: b * P + sum_j (i_j mod-negative d_j) stride_j,
 * where b is the tuple's position in the first `batch` dims. */
static ts_value flat_rows(ts_onnx_ctx *cx, const ts_onnx_node *n, int k, int batch, const int64_t *d) {
    ts_graph *g = cx->g;
    int64_t ix[TS_MAX_DIMS];
    int ri = onnx_in_shape(cx, n, k, ix);
    int q = (int)ix[ri - 1];
    ts_value idx = onnx_in(cx, n, k);
    if (onnx_in_dtype(cx, n, k) != TS_I64) idx = ts_cast(g, idx, TS_I64);
    int64_t P = ts_numel(q, d + batch), lead[TS_MAX_DIMS];
    memcpy(lead, ix, sizeof lead);
    ts_value rows = TS_NONE;
    int64_t stride = 1;
    for (int j = q - 1; j >= 0; j--) {
        ts_value c = ts_reshape(g, ts_slice(g, idx, ri - 1, j, j + 1), ri - 1, lead);
        ts_value neg = ts_binary(g, TS_BIN_LESS, c, map_scalar(g, TS_I64, 0));
        c = ts_select(g, neg, ts_binary(g, TS_BIN_ADD, c, map_scalar(g, TS_I64, (double)d[batch + j])), c);
        ts_value term = ts_binary(g, TS_BIN_MUL, c, map_scalar(g, TS_I64, (double)stride));
        rows = rows == TS_NONE ? term : ts_binary(g, TS_BIN_ADD, rows, term);
        stride *= d[batch + j];
    }
    if (batch > 0) { /* + b P, b the row-major position within the batch dims */
        int64_t B = ts_numel(batch, ix), sh[TS_MAX_DIMS];
        int64_t *bp = malloc(sizeof(int64_t) * (size_t)B);
        if (!bp) return ts_graph_fail(g, TS_ERR_NOMEM, "GatherND: batch offsets");
        for (int64_t b = 0; b < B; b++) bp[b] = b * P;
        for (int i = 0; i < ri - 1; i++) sh[i] = i < batch ? ix[i] : 1;
        ts_value off = map_const(g, TS_I64, ri - 1, sh, bp);
        free(bp);
        rows = ts_binary(g, TS_BIN_ADD, rows, off);
    }
    return rows;
}

/* data rank rd, indices rank ri with tuples of q <= rd - batch, batch dims equal. -1 after refusing. */
static int check_nd(ts_onnx_ctx *cx, const ts_onnx_node *n, int batch, int64_t *d, int *rd, int64_t *ix, int *ri) {
    *rd = onnx_in_shape(cx, n, 0, d);
    *ri = onnx_in_shape(cx, n, 1, ix);
    if (onnx_need_dtype(cx, n, 1, (const ts_dtype[]){TS_I64, TS_I32}, 2)) return -1;
    if (*ri < 1 || *rd < 1 || batch < 0 || batch >= *ri || batch >= *rd || ix[*ri - 1] < 1 || ix[*ri - 1] > *rd - batch)
        return onnx_invalid(cx, n, "the indices' last dim must be 1..rank(data) - batch_dims"), -1;
    for (int i = 0; i < batch; i++)
        if (ix[i] != d[i]) return onnx_invalid(cx, n, "batch dim %d differs between data and indices", i), -1;
    if (map_need_nonempty(cx, n, 0) || map_need_nonempty(cx, n, 1)) return -1;
    return 0;
}

static ts_status imp_gather_nd(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int batch = cx->opset >= 12 ? (int)onnx_attr_int(cx, n, "batch_dims", 0) : 0, rd, ri;
    int64_t d[TS_MAX_DIMS], ix[TS_MAX_DIMS];
    if (check_nd(cx, n, batch, d, &rd, ix, &ri)) return TS_ERR_UNSUPPORTED;
    int q = (int)ix[ri - 1], rr = rd - batch - q;
    int64_t R = ts_numel(rr, d + batch + q), rows_all = ts_numel(batch + q, d), M = ts_numel(ri - 1, ix);
    if (ri - 1 + rr > TS_MAX_DIMS) return onnx_unsupported(cx, n, "a result of rank %d", ri - 1 + rr);
    ts_graph *g = cx->g;
    ts_value rows = flat_rows(cx, n, 1, batch, d);
    /* out [M, R] = data [rows_all, R] at rows: gather_elements with the row numbers tiled over R */
    ts_value table = ts_reshape(g, onnx_in(cx, n, 0), 2, (int64_t[]){rows_all, R});
    ts_value idx = ts_tile(g, ts_reshape(g, rows, 2, (int64_t[]){M, 1}), (int64_t[]){1, R});
    ts_value y = ts_gather_elements(g, table, idx, 0);
    int64_t osh[TS_MAX_DIMS];
    int o = 0;
    for (int i = 0; i < ri - 1; i++) osh[o++] = ix[i];
    for (int i = 0; i < rr; i++) osh[o++] = d[batch + q + i];
    return onnx_set(cx, n, 0, ts_reshape(g, y, o, osh));
}

static ts_status imp_scatter_nd(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int red = scatter_reduction(cx, n), rd, ri;
    int64_t d[TS_MAX_DIMS], ix[TS_MAX_DIMS], u[TS_MAX_DIMS];
    if (red < 0 || check_nd(cx, n, 0, d, &rd, ix, &ri)) return TS_ERR_UNSUPPORTED;
    int q = (int)ix[ri - 1], ru = onnx_in_shape(cx, n, 2, u);
    int64_t R = ts_numel(rd - q, d + q), P = ts_numel(q, d), M = ts_numel(ri - 1, ix);
    if (ru != ri - 1 + rd - q || memcmp(u, ix, sizeof(int64_t) * (size_t)(ri - 1)) ||
        memcmp(u + ri - 1, d + q, sizeof(int64_t) * (size_t)(rd - q)))
        return onnx_invalid(cx, n, "updates must be indices.shape[:-1] + data.shape[q:]");
    ts_dtype dt = onnx_in_dtype(cx, n, 0);
    if (onnx_in_dtype(cx, n, 2) != dt) return onnx_invalid(cx, n, "updates and data differ in dtype");
    if (red != TS_SCATTER_NONE && dt != TS_F32 && dt != TS_I32 && dt != TS_I64)
        return onnx_unsupported(cx, n, "reduction on %s data", ts_dtype_name(dt));
    ts_graph *g = cx->g;
    ts_value rows = flat_rows(cx, n, 1, 0, d);
    ts_value table = ts_reshape(g, onnx_in(cx, n, 0), 2, (int64_t[]){P, R});
    ts_value upd = ts_reshape(g, onnx_in(cx, n, 2), 2, (int64_t[]){M, R});
    ts_value idx = ts_tile(g, ts_reshape(g, rows, 2, (int64_t[]){M, 1}), (int64_t[]){1, R});
    ts_value y = ts_scatter_elements(g, table, idx, upd, 0, (ts_scatter_reduce)red);
    return onnx_set(cx, n, 0, ts_reshape(g, y, rd, d));
}

/* ------------------------------------------------------------------ TopK */

static ts_status imp_topk(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int axis = map_axis(cx, n, onnx_attr_int(cx, n, "axis", -1), r, "axis");
    int largest = cx->opset >= 11 ? onnx_attr_int(cx, n, "largest", 1) != 0 : 1;
    if (cx->opset >= 11) onnx_attr_ignore(cx, n, "sorted"); /* always sorted: a valid order for 0 too */
    double k;
    if (axis < 0 || !onnx_known_scalar(cx, n, 1, &k, "K")) return TS_ERR_UNSUPPORTED;
    if (k < 1 || k > (double)sh[axis])
        return onnx_unsupported(cx, n, "K = %g (1 .. %lld are supported)", k, (long long)sh[axis]);
    if (onnx_need_f32(cx, n, 0, 0) || map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_value o[2];
    if (ts_topk(cx->g, onnx_in(cx, n, 0), (int64_t)k, axis, largest, o)) return onnx_check(cx, n);
    ts_status s = onnx_set(cx, n, 0, o[0]);
    return s ? s : onnx_set(cx, n, 1, o[1]);
}

/* ------------------------------------------------------------------ OneHot */

/* out = values[1] where the (depth-wrapped) index equals the position along axis, else values[0]. */
static ts_status imp_one_hot(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t ish[TS_MAX_DIMS], vsh[TS_MAX_DIMS];
    int ri = onnx_in_shape(cx, n, 0, ish), rv = onnx_in_shape(cx, n, 2, vsh);
    int64_t axis_attr = onnx_attr_int(cx, n, "axis", -1);
    double depth;
    if (!onnx_known_scalar(cx, n, 1, &depth, "depth")) return TS_ERR_UNSUPPORTED;
    if (ri + 1 > TS_MAX_DIMS) return onnx_unsupported(cx, n, "a result of rank %d", ri + 1);
    int axis = map_axis(cx, n, axis_attr, ri + 1, "axis");
    if (axis < 0) return TS_ERR_UNSUPPORTED;
    if (!(depth >= 1 && depth < (double)(1 << 24))) return onnx_unsupported(cx, n, "depth %g", depth);
    if (ts_numel(rv, vsh) != 2) return onnx_invalid(cx, n, "values must hold 2 elements (off, on)");
    ts_dtype vd = onnx_in_dtype(cx, n, 2), id = onnx_in_dtype(cx, n, 0);
    if (!map_binary_dtype(vd)) return onnx_need_dtype(cx, n, 2, (const ts_dtype[]){TS_F32, TS_I32, TS_I64, TS_U8}, 4);
    if (!map_binary_dtype(id)) return onnx_need_dtype(cx, n, 0, (const ts_dtype[]){TS_F32, TS_I32, TS_I64, TS_U8}, 4);
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t D = (int64_t)depth, ush[TS_MAX_DIMS], psh[TS_MAX_DIMS];
    ts_value idx = onnx_in(cx, n, 0);
    if (id != TS_I64) idx = ts_cast(g, idx, TS_I64); /* floats truncate, as ONNX casts them */
    ts_value neg = ts_binary(g, TS_BIN_LESS, idx, map_scalar(g, TS_I64, 0));
    idx = ts_select(g, neg, ts_binary(g, TS_BIN_ADD, idx, map_scalar(g, TS_I64, (double)D)), idx);
    for (int i = 0, j = 0; i <= ri; i++) {
        ush[i] = i == axis ? 1 : ish[j++];
        psh[i] = i == axis ? D : 1;
    }
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)D);
    if (!pos) return onnx_unsupported(cx, n, "out of memory");
    for (int64_t i = 0; i < D; i++) pos[i] = i;
    ts_value iota = map_const(g, TS_I64, ri + 1, psh, pos);
    free(pos);
    ts_value hit = ts_binary(g, TS_BIN_EQUAL, ts_reshape(g, idx, ri + 1, ush), iota);
    ts_value vals = ts_reshape(g, onnx_in(cx, n, 2), 1, (int64_t[]){2});
    ts_value off = ts_reshape(g, ts_slice(g, vals, 0, 0, 1), 0, NULL),
             on = ts_reshape(g, ts_slice(g, vals, 0, 1, 2), 0, NULL);
    return onnx_set(cx, n, 0, ts_select(g, hit, on, off));
}

/* ------------------------------------------------------------------ Compress, ReverseSequence */

/* x (rank r, shape sh) picked along axis at the positions src[0..cnt) for every other coordinate:
 * ts_gather_elements with the positions spread over the result's shape. */
static ts_value take_along(ts_graph *g, ts_value x, int r, const int64_t *sh, int axis, const int64_t *src,
                           int64_t cnt) {
    int64_t osh[TS_MAX_DIMS];
    memcpy(osh, sh, sizeof osh);
    osh[axis] = cnt;
    int64_t total = ts_numel(r, osh), inner = ts_numel(r - axis - 1, sh + axis + 1);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(total ? total : 1));
    if (!idx) return ts_graph_fail(g, TS_ERR_NOMEM, "an index tensor of %lld elements", (long long)total);
    for (int64_t i = 0; i < total; i++) idx[i] = src[i / inner % cnt];
    ts_value iv = map_const(g, TS_I64, r, osh, idx);
    free(idx);
    return ts_gather_elements(g, x, iv, axis);
}

static ts_status imp_compress(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh), has_axis = onnx_attr_has(cx, n, "axis");
    int64_t axis_attr = onnx_attr_int(cx, n, "axis", 0);
    const ts_tensor *c = onnx_known(cx, n, 1);
    if (!c) return onnx_unsupported(cx, n, "the condition must be known at import (it fixes the result's shape)");
    if (c->ndim != 1) return onnx_invalid(cx, n, "the condition is not 1-D");
    int axis = 0;
    if (has_axis && (axis = map_axis(cx, n, axis_attr, r, "axis")) < 0) return TS_ERR_UNSUPPORTED;
    if (map_need_nonempty(cx, n, 0)) return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    ts_value x = onnx_in(cx, n, 0);
    int64_t len = has_axis ? sh[axis] : ts_numel(r, sh);
    if (!has_axis) {
        x = ts_reshape(g, x, 1, &len);
        r = 1;
        sh[0] = len;
    }
    int64_t *src = malloc(sizeof(int64_t) * (size_t)len), cnt = 0;
    if (!src) return onnx_unsupported(cx, n, "out of memory");
    for (int64_t i = 0; i < len && i < ts_tensor_numel(c); i++)
        if (onnx_get_f64(c, i) != 0) src[cnt++] = i;
    if (cnt == 0) {
        free(src);
        return onnx_unsupported(cx, n, "an empty result (no true condition)");
    }
    ts_value y = take_along(g, x, r, sh, axis, src, cnt);
    free(src);
    return onnx_set(cx, n, 0, y);
}

/* ReverseSequence: y[t, b] = x[len[b] - 1 - t, b] for t < len[b], else x[t, b] (time / batch axes 0
 * and 1 either way round), a ts_gather_elements along time with the positions computed by the
 * graph from sequence_lens (so the lengths may come at run time; one beyond T fails the run). */
static ts_status imp_reverse_sequence(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t sh[TS_MAX_DIMS], ls[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    int ta = (int)onnx_attr_int(cx, n, "time_axis", 0), ba = (int)onnx_attr_int(cx, n, "batch_axis", 1);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (r < 2 || !((ta == 0 && ba == 1) || (ta == 1 && ba == 0)) || onnx_in_shape(cx, n, 1, ls) != 1 || ls[0] != sh[ba])
        return onnx_invalid(cx, n, "time_axis / batch_axis must be 0 and 1 and sequence_lens [batch]");
    if (onnx_need_dtype(cx, n, 1, (const ts_dtype[]){TS_I64, TS_I32}, 2) || map_need_nonempty(cx, n, 0))
        return TS_ERR_UNSUPPORTED;
    ts_graph *g = cx->g;
    int64_t T = sh[ta], B = sh[ba], tsh[2] = {1, 1}, lsh[2] = {1, 1}, rep[TS_MAX_DIMS], full[TS_MAX_DIMS];
    tsh[ta] = T;
    lsh[ba] = B;
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)T);
    if (!pos) return onnx_unsupported(cx, n, "out of memory");
    for (int64_t t = 0; t < T; t++) pos[t] = t;
    ts_value iota = map_const(g, TS_I64, 2, tsh, pos);
    free(pos);
    ts_value len = onnx_in(cx, n, 1);
    if (onnx_in_dtype(cx, n, 1) != TS_I64) len = ts_cast(g, len, TS_I64);
    len = ts_reshape(g, len, 2, lsh);
    ts_value rev = ts_binary(g, TS_BIN_SUB, ts_binary(g, TS_BIN_SUB, len, map_scalar(g, TS_I64, 1)), iota);
    ts_value idx = ts_select(g, ts_binary(g, TS_BIN_LESS, iota, len), rev, iota); /* [T, B] or [B, T] */
    for (int i = 0; i < r; i++) {
        full[i] = i < 2 ? sh[i] : 1;
        rep[i] = i < 2 ? 1 : sh[i];
    }
    idx = ts_tile(g, ts_reshape(g, idx, r, full), rep);
    return onnx_set(cx, n, 0, ts_gather_elements(g, onnx_in(cx, n, 0), idx, ta));
}

/* ------------------------------------------------------------------ NonZero */

static ts_status imp_nonzero(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const ts_tensor *k = onnx_known(cx, n, 0);
    if (!k) return onnx_unsupported(cx, n, "a graph input (the result's shape depends on its values)");
    int64_t cnt = 0, total = ts_tensor_numel(k), c[TS_MAX_DIMS];
    for (int64_t i = 0; i < total; i++) cnt += onnx_get_f64(k, i) != 0;
    if (cnt == 0) return onnx_unsupported(cx, n, "an empty result (no non-zero element)");
    int r = k->ndim ? k->ndim : 1;
    ts_tensor *t = ts_tensor_new(TS_I64, 2, (int64_t[]){r, cnt});
    if (!t) return onnx_set_known(cx, n, 0, NULL);
    for (int64_t i = 0, j = 0; i < total; i++) {
        if (onnx_get_f64(k, i) == 0) continue;
        int64_t q = i;
        for (int a = k->ndim - 1; a >= 0; a--) {
            c[a] = q % k->shape[a];
            q /= k->shape[a];
        }
        for (int a = 0; a < k->ndim; a++) ((int64_t *)t->data)[a * cnt + j] = c[a];
        if (k->ndim == 0) ((int64_t *)t->data)[j] = 0;
        j++;
    }
    return onnx_set_known(cx, n, 0, t);
}

/* ------------------------------------------------------------------ TfIdfVectorizer */

static ts_status imp_tfidf(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t counts[64], sh[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, sh);
    ts_tfidf_opts o = {0};
    o.min_gram = (int)onnx_attr_int(cx, n, "min_gram_length", 0);
    o.max_gram = (int)onnx_attr_int(cx, n, "max_gram_length", 0);
    o.max_skip = (int)onnx_attr_int(cx, n, "max_skip_count", 0);
    const char *mode = onnx_attr_string(cx, n, "mode", "");
    int nc = onnx_attr_ints(cx, n, "ngram_counts", counts, 64);
    if (onnx_attr_has(cx, n, "pool_strings")) return onnx_unsupported(cx, n, "a pool of strings");
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    const Onnx__AttributeProto *pool = NULL, *idx = NULL, *w = NULL;
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *at = n->attribute[i];
        if (!strcmp(at->name, "pool_int64s")) pool = at, onnx_attr_ignore(cx, n, at->name);
        else if (!strcmp(at->name, "ngram_indexes")) idx = at, onnx_attr_ignore(cx, n, at->name);
        else if (!strcmp(at->name, "weights")) w = at, onnx_attr_ignore(cx, n, at->name);
    }
    if (!strcmp(mode, "TF")) o.mode = TS_TFIDF_TF;
    else if (!strcmp(mode, "IDF")) o.mode = TS_TFIDF_IDF;
    else if (!strcmp(mode, "TFIDF")) o.mode = TS_TFIDF_TFIDF;
    else return onnx_invalid(cx, n, "mode '%s'", mode);
    if (!pool || !idx || nc < 1 || !pool->n_ints || !idx->n_ints || (w && w->n_floats != idx->n_ints))
        return onnx_invalid(cx, n,
                            "pool_int64s, ngram_counts and ngram_indexes (and weights, one per index) are needed");
    if (o.min_gram < 1 || o.max_gram < o.min_gram || o.max_skip < 0) return onnx_invalid(cx, n, "gram lengths / skip");
    if (r != 1 && r != 2) return onnx_unsupported(cx, n, "an input of rank %d", r);
    if (onnx_need_dtype(cx, n, 0, (const ts_dtype[]){TS_I32, TS_I64}, 2) || map_need_nonempty(cx, n, 0))
        return TS_ERR_UNSUPPORTED;
    for (size_t i = 0; i < idx->n_ints; i++)
        if (idx->ints[i] < 0 || idx->ints[i] >= ((int64_t)1 << 24))
            return onnx_invalid(cx, n, "ngram_index %lld", (long long)idx->ints[i]);
    o.pool = pool->ints;
    o.npool = (int64_t)pool->n_ints;
    o.ngram_counts = counts;
    o.ncounts = nc;
    o.ngram_indexes = idx->ints;
    o.nindexes = (int64_t)idx->n_ints;
    o.weights = w ? w->floats : NULL;
    return onnx_set(cx, n, 0, ts_tfidf(cx->g, onnx_in(cx, n, 0), &o));
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"Gather", 9, 17, imp_gather},
    {"GatherElements", 11, 17, imp_gather_elements},
    {"ScatterElements", 11, 17, imp_scatter_elements},
    {"Scatter", 9, 10, imp_scatter_elements},
    {"GatherND", 11, 17, imp_gather_nd},
    {"ScatterND", 11, 17, imp_scatter_nd},
    {"Trilu", 14, 17, imp_trilu},
    {"TopK", 10, 17, imp_topk},
    {"OneHot", 9, 17, imp_one_hot},
    {"Compress", 9, 17, imp_compress},
    {"ReverseSequence", 10, 17, imp_reverse_sequence},
    {"NonZero", 9, 17, imp_nonzero},
    {"TfIdfVectorizer", 9, 17, imp_tfidf},
};
const onnx_family onnx_family_index = {"index", ops, (int)(sizeof ops / sizeof *ops)};
