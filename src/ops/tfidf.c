/*
 * tfidf.c — ts_tfidf: n-gram counts of integer sequences against a fixed pool of n-grams, as ONNX
 * TfIdfVectorizer (pool_int64s form).
 *
 *   tfidf(x [C] or [N, C] i32/i64, pool i64 [P], meta i64 [L + K], weights f32 [K]?) -> y [O] or [N, O]
 *   attrs: i[0] = min_gram, i[1] = max_gram, i[2] = max_skip, i[3] = ts_tfidf_mode, i[4] = O,
 *          i[5] = L; meta = ngram_counts [L] then ngram_indexes [K]
 * The pool holds the n-grams of length 1 from ngram_counts[0], of length 2 from ngram_counts[1], ...,
 * each length's block running to the next one's start (the last to P); the pool's n-grams, in
 * order, are numbered 0 .. K - 1 and n-gram number j counts into y[ngram_indexes[j]].
 * For each row, each length n in [min_gram, max_gram] and each start i, the n-grams are
 * x[i], x[i + d], .., x[i + (n - 1) d] for d = 1 .. max_skip + 1 (d = 1 only when n = 1), those
 * that fit in the row; each that equals a pool n-gram adds 1 to its count. Then
 *   TF: y = count;   IDF: y = count > 0 ? weight : 0;   TFIDF: y = count * weight   (weights 1 if absent)
 * Not differentiable (integer input).
 */
#include "ops/op.h"

#define VS(g, v) ts_val_str(g, v, (char[256]){0}, 256)

static ts_status infer_tfidf(ts_graph *g, ts_node *n) {
    const ts_val *x = &g->vals[n->in[0]], *pool = &g->vals[n->in[1]], *meta = &g->vals[n->in[2]];
    if ((x->dtype != TS_I32 && x->dtype != TS_I64) || (x->ndim != 1 && x->ndim != 2))
        return ts_err(TS_ERR_SHAPE, "op tfidf: x %s must be i32 or i64 [C] or [N, C]", VS(g, n->in[0]));
    int64_t L = n->attr.i[5], O = n->attr.i[4];
    if (pool->dtype != TS_I64 || pool->ndim != 1 || meta->dtype != TS_I64 || meta->ndim != 1 || L < 1 ||
        L > meta->shape[0] || O < 1)
        return ts_err(TS_ERR_SHAPE, "op tfidf: pool %s / meta %s do not describe an n-gram pool", VS(g, n->in[1]),
                      VS(g, n->in[2]));
    if (n->attr.i[0] < 1 || n->attr.i[1] < n->attr.i[0] || n->attr.i[2] < 0 || n->attr.i[3] < TS_TFIDF_TF ||
        n->attr.i[3] > TS_TFIDF_TFIDF)
        return ts_err(TS_ERR_ARG, "op tfidf: gram lengths %lld..%lld, skip %lld or mode %lld out of range",
                      (long long)n->attr.i[0], (long long)n->attr.i[1], (long long)n->attr.i[2],
                      (long long)n->attr.i[3]);
    if (n->nin > 3 && n->in[3] >= 0) {
        const ts_val *w = &g->vals[n->in[3]];
        if (w->dtype != TS_F32 || w->ndim != 1 || w->shape[0] != meta->shape[0] - L)
            return ts_err(TS_ERR_SHAPE, "op tfidf: weights %s must be f32, one per pool n-gram", VS(g, n->in[3]));
    }
    ts_val *o = &g->vals[n->out[0]];
    o->dtype = TS_F32;
    o->ndim = x->ndim;
    if (x->ndim == 2) o->shape[0] = x->shape[0];
    o->shape[x->ndim - 1] = O;
    return TS_OK;
}

static ts_status tfidf_kernel(const ts_kargs *k) {
    const ts_node *n = k->node;
    const ts_val *x = &k->g->vals[n->in[0]], *pool = &k->g->vals[n->in[1]], *meta = &k->g->vals[n->in[2]];
    int64_t minn = n->attr.i[0], maxn = n->attr.i[1], skip = n->attr.i[2], O = n->attr.i[4], L = n->attr.i[5];
    int mode = (int)n->attr.i[3];
    int64_t P = pool->shape[0], K = meta->shape[0] - L, rows = x->ndim == 2 ? x->shape[0] : 1;
    int64_t C = x->shape[x->ndim - 1];
    const int64_t *pl = k->in[1], *counts = k->in[2], *index = counts + L;
    const float *w = n->nin > 3 ? k->in[3] : NULL;
    float *Y = k->out[0];
    int is64 = x->dtype == TS_I64;
    memset(Y, 0, sizeof(float) * (size_t)(rows * O));
    for (int64_t r = 0; r < rows; r++) {
        float *y = Y + r * O;
        int64_t first = 0; /* the number of the first n-gram of the current length's block */
        for (int64_t len = 1; len <= L && len <= maxn; len++) {
            int64_t lo = counts[len - 1], hi = len < L ? counts[len] : P;
            if (lo < 0 || hi > P || hi < lo)
                return ts_err(TS_ERR_RUNTIME, "op tfidf: ngram_counts do not fit the pool");
            int64_t cnt = (hi - lo) / len;
            if (len >= minn)
                for (int64_t i = 0; i < C; i++)
                    for (int64_t d = 1; d <= (len == 1 ? 1 : skip + 1); d++) {
                        if (i + (len - 1) * d >= C) break;
                        for (int64_t j = 0; j < cnt; j++) {
                            int64_t m = 0;
                            for (; m < len; m++) {
                                int64_t p = r * C + i + m * d;
                                int64_t v = is64 ? ((const int64_t *)k->in[0])[p] : ((const int32_t *)k->in[0])[p];
                                if (v != pl[lo + j * len + m]) break;
                            }
                            if (m < len) continue;
                            int64_t id = first + j, o = id < K ? index[id] : -1;
                            if (o < 0 || o >= O)
                                return ts_err(TS_ERR_RUNTIME, "op tfidf: n-gram %lld has no output index",
                                              (long long)id);
                            y[o] += 1.f;
                        }
                    }
            first += cnt;
        }
        if (mode == TS_TFIDF_TF) continue;
        for (int64_t j = 0; j < K; j++) { /* the weights, by output index */
            int64_t o = index[j];
            if (o < 0 || o >= O) continue;
            float wt = w ? w[j] : 1.f;
            y[o] = mode == TS_TFIDF_IDF ? (y[o] > 0 ? wt : 0.f) : y[o] * wt;
        }
    }
    return TS_OK;
}

/* Not differentiable. */
const ts_op_def ts_opdef_tfidf = {"tfidf", 3, 4, 1, 0, infer_tfidf, NULL, tfidf_kernel, NULL};

ts_value ts_tfidf(ts_graph *g, ts_value x, const ts_tfidf_opts *o) {
    if (!g || x == TS_NONE || g->status != TS_OK) return TS_NONE;
    if (!o || !o->pool || o->npool < 1 || !o->ngram_counts || o->ncounts < 1 || !o->ngram_indexes || o->nindexes < 1)
        return ts_graph_fail(g, TS_ERR_ARG, "ts_tfidf: the options need a pool, ngram_counts and ngram_indexes");
    int64_t O = 0, nm = o->ncounts + o->nindexes;
    int64_t *meta = malloc(sizeof(int64_t) * (size_t)nm);
    if (!meta) return ts_graph_fail(g, TS_ERR_NOMEM, "ts_tfidf: out of memory");
    memcpy(meta, o->ngram_counts, sizeof(int64_t) * (size_t)o->ncounts);
    memcpy(meta + o->ncounts, o->ngram_indexes, sizeof(int64_t) * (size_t)o->nindexes);
    for (int64_t i = 0; i < o->nindexes; i++) O = o->ngram_indexes[i] + 1 > O ? o->ngram_indexes[i] + 1 : O;
    ts_tensor *tp = ts_tensor_from(TS_I64, 1, &o->npool, o->pool), *tm = ts_tensor_from(TS_I64, 1, &nm, meta);
    ts_tensor *tw = o->weights ? ts_tensor_from(TS_F32, 1, &o->nindexes, o->weights) : NULL;
    free(meta);
    int in[4] = {x, tp ? ts_constant(g, tp) : TS_NONE, tm ? ts_constant(g, tm) : TS_NONE,
                 tw ? ts_constant(g, tw) : TS_NONE};
    ts_tensor_free(tp);
    ts_tensor_free(tm);
    ts_tensor_free(tw);
    if (in[1] == TS_NONE || in[2] == TS_NONE || (o->weights && in[3] == TS_NONE))
        return ts_graph_fail(g, TS_ERR_NOMEM, "ts_tfidf: out of memory");
    ts_attrs at = {0};
    at.i[0] = o->min_gram;
    at.i[1] = o->max_gram;
    at.i[2] = o->max_skip;
    at.i[3] = o->mode;
    at.i[4] = O;
    at.i[5] = o->ncounts;
    at.ni = 6;
    return ts_node_add(g, TS_OP_TFIDF, o->weights ? 4 : 3, in, &at, NULL);
}
