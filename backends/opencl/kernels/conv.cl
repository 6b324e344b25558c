/*
 * conv.cl — 2-D convolution and pooling on NCHW f32 (src/ops/conv.c, pool.c), direct loops:
 * correct rather than fast. cg_t is one convolution's geometry (op_conv.c's conv_geom): src
 * [N, C, H, W], weight [O, C/G, KH, KW], dst [N, O, OH, OW]. Pool grads run one work-item per
 * (n, c) plane, windows in order, as the CPU's loops (same sums, same order).
 */
typedef struct cg_t {
    long N, C, H, W, O, OH, OW, KH, KW, sh, sw, pt, pl, pb, pr, dh, dw, G;
} cg_t;

/* dst[n, o, oh, ow] = bias[o] + sum src * w; one work-item per dst element */
__kernel void conv2d(BUFARG(float, x), BUFARG(float, w), BUFARG(float, b), BUFARG(float, y), cg_t q) {
    long i = get_global_id(0);
    if (i >= q.N * q.O * q.OH * q.OW) return;
    long ow = i % q.OW, oh = i / q.OW % q.OH, o = i / (q.OW * q.OH) % q.O, n = i / (q.OW * q.OH * q.O);
    long cg = q.C / q.G, g = o / (q.O / q.G);
    __global const float *x = BUF(float, x), *w = BUF(float, w);
    float s = 0.f;
    for (long c = 0; c < cg; c++)
        for (long kh = 0; kh < q.KH; kh++) {
            long h = oh * q.sh - q.pt + kh * q.dh;
            if (h < 0 || h >= q.H) continue;
            for (long kw = 0; kw < q.KW; kw++) {
                long ww = ow * q.sw - q.pl + kw * q.dw;
                if (ww < 0 || ww >= q.W) continue;
                s += x[((n * q.C + g * cg + c) * q.H + h) * q.W + ww] * w[((o * cg + c) * q.KH + kh) * q.KW + kw];
            }
        }
    BUF(float, y)[i] = s + (b_p ? BUF(float, b)[o] : 0.f);
}

/* src-shaped out[n, g C/G + c, h, w] = bias[.] + sum over (o in g, kh, kw) of x[n, o, oh, ow] w[o, c, kh, kw]
 * where oh sh - pt + kh dh = h (x is dst-shaped) */
__kernel void conv_transpose2d(BUFARG(float, x), BUFARG(float, w), BUFARG(float, b), BUFARG(float, y), cg_t q) {
    long i = get_global_id(0);
    if (i >= q.N * q.C * q.H * q.W) return;
    long ww = i % q.W, h = i / q.W % q.H, ch = i / (q.W * q.H) % q.C, n = i / (q.W * q.H * q.C);
    long cg = q.C / q.G, og = q.O / q.G, g = ch / cg, c = ch % cg;
    __global const float *x = BUF(float, x), *w = BUF(float, w);
    float s = 0.f;
    for (long o = g * og; o < (g + 1) * og; o++)
        for (long kh = 0; kh < q.KH; kh++) {
            long t = h + q.pt - kh * q.dh;
            if (t < 0 || t % q.sh) continue;
            long oh = t / q.sh;
            if (oh >= q.OH) continue;
            for (long kw = 0; kw < q.KW; kw++) {
                long u = ww + q.pl - kw * q.dw;
                if (u < 0 || u % q.sw) continue;
                long ow = u / q.sw;
                if (ow >= q.OW) continue;
                s += x[((n * q.O + o) * q.OH + oh) * q.OW + ow] * w[((o * cg + c) * q.KH + kh) * q.KW + kw];
            }
        }
    BUF(float, y)[i] = s + (b_p ? BUF(float, b)[ch] : 0.f);
}

/* gw[o, c, kh, kw] = sum over n, oh, ow of gdst[n, o, oh, ow] src[n, g C/G + c, h, w] */
__kernel void conv2d_grad_weight(BUFARG(float, x), BUFARG(float, gy), BUFARG(float, gw), cg_t q) {
    long cg = q.C / q.G;
    long i = get_global_id(0);
    if (i >= q.O * cg * q.KH * q.KW) return;
    long kw = i % q.KW, kh = i / q.KW % q.KH, c = i / (q.KW * q.KH) % cg, o = i / (q.KW * q.KH * cg);
    long g = o / (q.O / q.G);
    __global const float *x = BUF(float, x), *gy = BUF(float, gy);
    float s = 0.f;
    for (long n = 0; n < q.N; n++)
        for (long oh = 0; oh < q.OH; oh++) {
            long h = oh * q.sh - q.pt + kh * q.dh;
            if (h < 0 || h >= q.H) continue;
            for (long ow = 0; ow < q.OW; ow++) {
                long ww = ow * q.sw - q.pl + kw * q.dw;
                if (ww < 0 || ww >= q.W) continue;
                s += gy[((n * q.O + o) * q.OH + oh) * q.OW + ow] * x[((n * q.C + g * cg + c) * q.H + h) * q.W + ww];
            }
        }
    BUF(float, gw)[i] = s;
}

/* ------------------------------------------------------------------ pooling */

typedef struct pg_t {
    long planes, H, W, OH, OW, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw, include_pad;
} pg_t;

inline void taps(long o, long s, long p, long d, long k, long in, long *i0, long *i1) {
    long start = o * s - p;
    long lo = start >= 0 ? 0 : (-start + d - 1) / d;
    long hi = in - start <= 0 ? 0 : (in - start - 1) / d + 1;
    *i0 = lo;
    *i1 = hi < k ? hi : k;
    if (*i1 < *i0) *i1 = *i0;
}

inline long window_argmax(const pg_t *q, __global const float *x, long oh, long ow) {
    long i0, i1, j0, j1, best = -1;
    taps(oh, q->sh, q->pt, q->dh, q->kh, q->H, &i0, &i1);
    taps(ow, q->sw, q->pl, q->dw, q->kw, q->W, &j0, &j1);
    float m = 0.f;
    for (long i = i0; i < i1; i++) {
        long h = oh * q->sh - q->pt + i * q->dh;
        for (long j = j0; j < j1; j++) {
            long at = h * q->W + ow * q->sw - q->pl + j * q->dw;
            float v = x[at];
            if (best < 0 || ((v > m) | ((v != v) & (m == m)))) {
                m = v;
                best = at;
            }
        }
    }
    return best;
}

inline float avg_window(const pg_t *q, long oh, long ow, long *i0, long *i1, long *j0, long *j1) {
    taps(oh, q->sh, q->pt, 1, q->kh, q->H, i0, i1);
    taps(ow, q->sw, q->pl, 1, q->kw, q->W, j0, j1);
    if (!q->include_pad) return (float)((*i1 - *i0) * (*j1 - *j0));
    long h0 = oh * q->sh - q->pt, w0 = ow * q->sw - q->pl;
    long h1 = h0 + q->kh < q->H + q->pb ? h0 + q->kh : q->H + q->pb;
    long w1 = w0 + q->kw < q->W + q->pr ? w0 + q->kw : q->W + q->pr;
    return (float)((h1 - h0) * (w1 - w0));
}

/* one work-item per output cell; is_max: max, else average */
__kernel void pool2d(BUFARG(float, x), BUFARG(float, y), pg_t q, int is_max) {
    long i = get_global_id(0);
    if (i >= q.planes * q.OH * q.OW) return;
    long ow = i % q.OW, oh = i / q.OW % q.OH, p = i / (q.OW * q.OH);
    __global const float *x = BUF(float, x) + p * q.H * q.W;
    if (is_max) {
        long at = window_argmax(&q, x, oh, ow);
        BUF(float, y)[i] = at >= 0 ? x[at] : -INFINITY;
        return;
    }
    long i0, i1, j0, j1;
    float d = avg_window(&q, oh, ow, &i0, &i1, &j0, &j1), s = 0.f;
    for (long a = i0; a < i1; a++)
        for (long b = j0; b < j1; b++) s += x[(oh * q.sh - q.pt + a) * q.W + ow * q.sw - q.pl + b];
    BUF(float, y)[i] = d > 0 ? s / d : 0.f;
}

/* one work-item per plane: gx = 0, then each window's gradient into its cells, in order */
__kernel void pool2d_grad(BUFARG(float, x), BUFARG(float, gy), BUFARG(float, gx), pg_t q, int is_max) {
    long p = get_global_id(0);
    if (p >= q.planes) return;
    __global const float *x = x_p ? BUF(float, x) + p * q.H * q.W : 0, *gy = BUF(float, gy) + p * q.OH * q.OW;
    __global float *gx = BUF(float, gx) + p * q.H * q.W;
    for (long k = 0; k < q.H * q.W; k++) gx[k] = 0.f;
    for (long oh = 0; oh < q.OH; oh++)
        for (long ow = 0; ow < q.OW; ow++) {
            if (is_max) {
                long at = window_argmax(&q, x, oh, ow);
                if (at >= 0) gx[at] += gy[oh * q.OW + ow];
                continue;
            }
            long i0, i1, j0, j1;
            float d = avg_window(&q, oh, ow, &i0, &i1, &j0, &j1);
            float v = d > 0 ? gy[oh * q.OW + ow] / d : 0.f;
            for (long a = i0; a < i1; a++)
                for (long b = j0; b < j1; b++) gx[(oh * q.sh - q.pt + a) * q.W + ow * q.sw - q.pl + b] += v;
        }
}
