/*
 * layout.cl — pad and pad_grad (src/ops/pad.c), tile and tile_grad (tile.c), argreduce
 * (argreduce.c), resize2d and resize2d_grad (resize.c). pt_t holds a rank and three shapes:
 * a[] the big (output of pad / tile) shape, b[] the small one, c[] pads before (pad).
 */
typedef struct pt_t {
    int nd, mode;
    long n;
    long a[8], b[8], c[8];
} pt_t;

/* the flat source index in x of output element p, or -1 for the constant */
inline long pad_src(const pt_t *q, long p) {
    long off = 0, st = 1;
    for (int d = q->nd - 1; d >= 0; d--) {
        long c = p % q->a[d], dim = q->b[d], s = c - q->c[d];
        p /= q->a[d];
        if (s < 0 || s >= dim) {
            if (q->mode == TS_PAD_CONSTANT) return -1;
            s = q->mode == TS_PAD_EDGE ? (s < 0 ? 0 : dim - 1) : (s < 0 ? -s : 2 * (dim - 1) - s);
        }
        off += s * st;
        st *= dim;
    }
    return off;
}

__kernel void pad(BUFARG(char, x), BUFARG(char, y), pt_t q, int es, ulong cval) {
    long p = get_global_id(0);
    if (p >= q.n) return;
    long s = pad_src(&q, p);
    __global char *y = BUF(char, y) + p * es;
    __global const char *x = BUF(char, x) + s * es;
    for (int k = 0; k < es; k++) y[k] = s < 0 ? (char)(cval >> (8 * k)) : x[k];
}

/* one work-item: gx = 0, then gx[src(p)] += gy[p] in order; nx = elements of gx */
__kernel void pad_grad(BUFARG(float, gy), BUFARG(float, gx), pt_t q, long nx) {
    if (get_global_id(0) != 0) return;
    __global float *gx = BUF(float, gx);
    __global const float *gy = BUF(float, gy);
    for (long i = 0; i < nx; i++) gx[i] = 0.f;
    for (long p = 0; p < q.n; p++) {
        long s = pad_src(&q, p);
        if (s >= 0) gx[s] += gy[p];
    }
}

/* y[c] = x[c mod d]: a[] y's shape, b[] x's */
__kernel void tile(BUFARG(char, x), BUFARG(char, y), pt_t q, int es) {
    long p = get_global_id(0);
    if (p >= q.n) return;
    long r = p, off = 0, st = 1;
    for (int d = q.nd - 1; d >= 0; d--) {
        off += (r % q.a[d]) % q.b[d] * st;
        r /= q.a[d];
        st *= q.b[d];
    }
    __global char *y = BUF(char, y) + p * es;
    __global const char *x = BUF(char, x) + off * es;
    for (int k = 0; k < es; k++) y[k] = x[k];
}

/* gx[j] = sum over c with c mod d = j, c in row-major order; a[] gy's shape, b[] gx's, q.n = gx's elements */
__kernel void tile_grad(BUFARG(float, gy), BUFARG(float, gx), pt_t q) {
    long j = get_global_id(0);
    if (j >= q.n) return;
    long coord[8], rep[8], R = 1;
    long r = j;
    for (int d = q.nd - 1; d >= 0; d--) {
        coord[d] = r % q.b[d];
        r /= q.b[d];
    }
    for (int d = 0; d < q.nd; d++) {
        rep[d] = q.a[d] / q.b[d];
        R *= rep[d];
    }
    float s = 0.f;
    for (long k = 0; k < R; k++) {
        long t = k, off = 0, st = 1;
        for (int d = q.nd - 1; d >= 0; d--) {
            off += ((t % rep[d]) * q.b[d] + coord[d]) * st;
            t /= rep[d];
            st *= q.a[d];
        }
        s += BUF(float, gy)[off];
    }
    BUF(float, gx)[j] = s;
}

__kernel void argreduce(BUFARG(float, x), BUFARG(long, y), long outer, long len, long inner, int last, int is_min) {
    long o = get_global_id(0);
    if (o >= outer * inner) return;
    __global const float *p = BUF(float, x) + (o / inner) * len * inner + o % inner;
    long b = 0;
    for (long j = 1; j < len; j++) {
        float v = p[j * inner], w = p[b * inner];
        int vn = v != v, wn = w != w;
        int better = is_min ? v < w : v > w;
        if (better || (vn && !wn) || (last && (v == w || (vn && wn)))) b = j;
    }
    BUF(long, y)[o] = b;
}

typedef struct tap_t {
    int i0, i1;
    float l;
} tap_t;

/* taps: OH rows then OW columns (host-computed in double, as the CPU) */
__kernel void resize2d(BUFARG(float, x), BUFARG(tap_t, t), BUFARG(float, y), long planes, long H, long W, long OH,
                       long OW, int linear) {
    long i = get_global_id(0);
    if (i >= planes * OH * OW) return;
    long ow = i % OW, oh = i / OW % OH, p = i / (OW * OH);
    __global const tap_t *th = BUF(tap_t, t), *tw = th + OH;
    __global const float *x = BUF(float, x) + p * H * W;
    __global const float *r0 = x + th[oh].i0 * W, *r1 = x + th[oh].i1 * W;
    if (!linear) {
        BUF(float, y)[i] = r0[tw[ow].i0];
        return;
    }
    int j0 = tw[ow].i0, j1 = tw[ow].i1;
    float lx = tw[ow].l, ly = th[oh].l;
    float top = r0[j0] + lx * (r0[j1] - r0[j0]), bot = r1[j0] + lx * (r1[j1] - r1[j0]);
    BUF(float, y)[i] = top + ly * (bot - top);
}

/* one work-item per plane, outputs in order (as the CPU) */
__kernel void resize2d_grad(BUFARG(float, gy), BUFARG(tap_t, t), BUFARG(float, gx), long planes, long H, long W,
                            long OH, long OW, int linear) {
    long p = get_global_id(0);
    if (p >= planes) return;
    __global const tap_t *th = BUF(tap_t, t), *tw = th + OH;
    __global const float *gy = BUF(float, gy) + p * OH * OW;
    __global float *gx = BUF(float, gx) + p * H * W;
    for (long k = 0; k < H * W; k++) gx[k] = 0.f;
    for (long oh = 0; oh < OH; oh++) {
        __global float *r0 = gx + th[oh].i0 * W, *r1 = gx + th[oh].i1 * W;
        float ly = th[oh].l;
        for (long ow = 0; ow < OW; ow++) {
            float v = gy[oh * OW + ow];
            if (!linear) {
                r0[tw[ow].i0] += v;
                continue;
            }
            int j0 = tw[ow].i0, j1 = tw[ow].i1;
            float lx = tw[ow].l, top = v * (1.f - ly), bot = v * ly;
            r0[j0] += top * (1.f - lx);
            r0[j1] += top * lx;
            r1[j0] += bot * (1.f - lx);
            r1[j1] += bot * lx;
        }
    }
}
