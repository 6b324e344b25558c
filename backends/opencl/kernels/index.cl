/*
 * index.cl — indexing along an axis (src/ops/elements.c: gather_elements, scatter_elements;
 * topk.c), and nll_loss / nll_loss_grad (nll_loss.c). ix_t: a rank, the index tensor's shape
 * (a[]), data's shape (b[]), the axis. Indices outside [-n, n) are reported in the error slot.
 */
typedef struct ix_t {
    int nd, axis;
    long n;
    long a[8], b[8];
} ix_t;

inline long ix_at(__global const char *p, int is64, long i) {
    return is64 ? ((__global const long *)p)[i] : ((__global const int *)p)[i];
}

/* the flat offset in data (shape b) of coordinate c (of shape a) with c[axis] = v */
inline long ix_data_off(const ix_t *q, long c, long v) {
    long off = 0, st = 1;
    for (int d = q->nd - 1; d >= 0; d--) {
        long cd = c % q->a[d];
        c /= q->a[d];
        off += (d == q->axis ? v : cd) * st;
        st *= q->b[d];
    }
    return off;
}

inline long ix_norm(long v, long n) { return v < 0 ? v + n : v; }

__kernel void gather_elements(BUFARG(char, x), BUFARG(char, ix), BUFARG(char, y), ix_t q, int is64, int es,
                              __global int *err, int tag) {
    long c = get_global_id(0);
    if (c >= q.n) return;
    long n = q.b[q.axis], v = ix_at(BUF(char, ix), is64, c), w = ix_norm(v, n);
    __global char *y = BUF(char, y) + c * es;
    if (w < 0 || w >= n) {
        set_err(err, tag, c, v);
        for (int k = 0; k < es; k++) y[k] = 0;
        return;
    }
    __global const char *x = BUF(char, x) + ix_data_off(&q, c, w) * es;
    for (int k = 0; k < es; k++) y[k] = x[k];
}

/* one work-item, c in row-major order (out holds data already); red 0 set, 1 add, 2 mul; f32 for
 * add / mul, any dtype of es bytes for set */
__kernel void scatter_elements(BUFARG(char, ix), BUFARG(char, u), BUFARG(char, o), ix_t q, int is64, int es, int red,
                               __global int *err, int tag) {
    if (get_global_id(0) != 0) return;
    long n = q.b[q.axis];
    for (long c = 0; c < q.n; c++) {
        long v = ix_at(BUF(char, ix), is64, c), w = ix_norm(v, n);
        if (w < 0 || w >= n) {
            set_err(err, tag, c, v);
            return;
        }
        long off = ix_data_off(&q, c, w);
        if (red == TS_SCATTER_ADD) BUF(float, o)[off] += BUF(float, u)[c];
        else if (red == TS_SCATTER_MUL) BUF(float, o)[off] *= BUF(float, u)[c];
        else
            for (int k = 0; k < es; k++) BUF(char, o)[off * es + k] = BUF(char, u)[c * es + k];
    }
}

inline int tk_before(float a, float b, int largest) {
    int an = a != a, bn = b != b;
    if (largest) return (an && !bn) || a > b;
    return (an && !bn) || a < b;
}

/* one work-item per element of x: its rank in the stable order of its line; rank < k is written */
__kernel void topk(BUFARG(float, x), BUFARG(float, vals), BUFARG(long, idx), long outer, long len, long inner, long k,
                   int largest) {
    long e = get_global_id(0);
    if (e >= outer * len * inner) return;
    long o = e / (len * inner), i = e / inner % len, in = e % inner;
    __global const float *line = BUF(float, x) + o * len * inner + in;
    float xi = line[i * inner];
    long rank = 0;
    for (long j = 0; j < len; j++) {
        float xj = line[j * inner];
        if (tk_before(xj, xi, largest) || (j < i && !tk_before(xi, xj, largest))) rank++;
    }
    if (rank >= k) return;
    long at = (o * k + rank) * inner + in;
    BUF(float, vals)[at] = xi;
    BUF(long, idx)[at] = i;
}

/* nll_loss (gx absent) or nll_loss_grad, one work-item: input [N, C, D], target [N, D] (P
 * positions), weight [C] or absent; red 0 none, 1 sum, 2 mean */
__kernel void nll(BUFARG(float, x), BUFARG(char, t), BUFARG(float, w), BUFARG(float, gy), BUFARG(float, y), long P,
                  long C, long D, long ignore, int is64, int red, int grad, __global int *err, int tag) {
    if (get_global_id(0) != 0) return;
    float wsum = 0.f, sum = 0.f;
    for (long p = 0; p < P; p++) {
        long c = ix_at(BUF(char, t), is64, p);
        if (c == ignore) continue;
        if (c < 0 || c >= C) {
            set_err(err, tag, p, c);
            return;
        }
        wsum += w_p ? BUF(float, w)[c] : 1.f;
    }
    __global float *y = BUF(float, y);
    if (grad)
        for (long i = 0; i < P * C; i++) y[i] = 0.f;
    for (long p = 0; p < P; p++) {
        long c = ix_at(BUF(char, t), is64, p), nn = p / (D ? D : 1), d = p % (D ? D : 1);
        float wp = c == ignore ? 0.f : w_p ? BUF(float, w)[c] : 1.f;
        if (grad) {
            if (c == ignore) continue;
            float g = red == TS_REDUCE_NONE ? BUF(float, gy)[p]
                                            : BUF(float, gy)[0] * (red == TS_REDUCE_MEAN ? 1.f / wsum : 1.f);
            y[(nn * C + c) * D + d] = -wp * g;
            continue;
        }
        float l = c == ignore ? 0.f : -wp * BUF(float, x)[(nn * C + c) * D + d];
        if (red == TS_REDUCE_NONE) y[p] = l;
        else sum += l;
    }
    if (!grad && red == TS_REDUCE_SUM) y[0] = sum;
    if (!grad && red == TS_REDUCE_MEAN) y[0] = sum / wsum;
}

/* tfidf (src/ops/tfidf.c), one work-item per row of x [rows, Cx]: pool [P], meta = ngram_counts
 * [L] then ngram_indexes [K], weights [K] or absent; mode 0 TF 1 IDF 2 TFIDF */
__kernel void tfidf(BUFARG(char, x), BUFARG(long, pool), BUFARG(long, meta), BUFARG(float, wt), BUFARG(float, y),
                    long rows, long Cx, long P, long K, long L, long O, long minn, long maxn, long skip, int mode,
                    int is64, __global int *err, int tag) {
    long r = get_global_id(0);
    if (r >= rows) return;
    __global const long *pl = BUF(long, pool), *counts = BUF(long, meta), *index = counts + L;
    __global float *yr = BUF(float, y) + r * O;
    for (long o = 0; o < O; o++) yr[o] = 0.f;
    long first = 0;
    for (long len = 1; len <= L && len <= maxn; len++) {
        long lo = counts[len - 1], hi = len < L ? counts[len] : P;
        if (lo < 0 || hi > P || hi < lo) {
            set_err(err, tag, len - 1, lo);
            return;
        }
        long cnt = (hi - lo) / len;
        if (len >= minn)
            for (long i = 0; i < Cx; i++)
                for (long d = 1; d <= (len == 1 ? 1 : skip + 1); d++) {
                    if (i + (len - 1) * d >= Cx) break;
                    for (long j = 0; j < cnt; j++) {
                        long m = 0;
                        for (; m < len; m++)
                            if (ix_at(BUF(char, x), is64, r * Cx + i + m * d) != pl[lo + j * len + m]) break;
                        if (m < len) continue;
                        long id = first + j, o = id < K ? index[id] : -1;
                        if (o < 0 || o >= O) {
                            set_err(err, tag, id, o);
                            return;
                        }
                        yr[o] += 1.f;
                    }
                }
        first += cnt;
    }
    if (mode == TS_TFIDF_TF) return;
    for (long j = 0; j < K; j++) {
        long o = index[j];
        if (o < 0 || o >= O) continue;
        float w = wt_p ? BUF(float, wt)[j] : 1.f;
        yr[o] = mode == TS_TFIDF_IDF ? (yr[o] > 0 ? w : 0.f) : yr[o] * w;
    }
}
