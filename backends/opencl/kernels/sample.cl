/*
 * sample.cl — grid_sample (src/ops/grid_sample.c: mode 0 bilinear 1 nearest 2 bicubic, padding
 * 0 zeros 1 border 2 reflection) and roi_align (roi_align.c), the CPU's formulas in double where
 * the device has cl_khr_fp64 (linalg.cl defines real), else in float.
 */
inline real gs_unnormalize(real c, long size, int align) {
    return align ? (c + 1) / 2 * (real)(size - 1) : ((c + 1) * (real)size - 1) / 2;
}
inline real gs_clamp(real c, long size) { return c < 0 ? 0 : c > (real)(size - 1) ? (real)(size - 1) : c; }
inline real gs_reflect(real c, real lo2, real hi2) {
    if (lo2 == hi2) return 0;
    real mn = lo2 / 2, span = (hi2 - lo2) / 2;
    c = fabs(c - mn);
    real extra = fmod(c, span), flips = floor(c / span);
    return fmod(flips, (real)2) == 0 ? extra + mn : span - extra + mn;
}
inline real gs_padded(real c, long size, int pad, int align) {
    if (pad == TS_GRID_BORDER) return gs_clamp(c, size);
    if (pad == TS_GRID_REFLECTION)
        return gs_clamp(align ? gs_reflect(c, 0, (real)2 * (real)(size - 1)) : gs_reflect(c, -1, (real)2 * (real)size - 1),
                        size);
    return c;
}
inline long gs_index(real c) { return c > -1073741824 && c < 1073741824 ? (long)c : -1; }
inline real gs_pixel(__global const float *p, long H, long W, long y, long x) {
    return y >= 0 && y < H && x >= 0 && x < W ? p[y * W + x] : 0;
}
inline void gs_cubic(real t, real *w) {
    const real A = -0.75;
    real x = t + 1;
    w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t;
    w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t;
    w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t;
    w[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

/* one work-item per output element (b, c, oh, ow) */
__kernel void grid_sample(BUFARG(float, x), BUFARG(float, g), BUFARG(float, y), long N, long C, long H, long W, long OH,
                          long OW, int mode, int pad, int align) {
    long i = get_global_id(0);
    if (i >= N * C * OH * OW) return;
    long o = i % (OH * OW), c = i / (OH * OW) % C, b = i / (OH * OW * C), q = b * OH * OW + o;
    real u = gs_unnormalize(BUF(float, g)[q * 2], W, align), v = gs_unnormalize(BUF(float, g)[q * 2 + 1], H, align);
    __global const float *p = BUF(float, x) + (b * C + c) * H * W;
    real r = 0;
    if (mode == TS_GRID_BICUBIC) {
        real fx = floor(u), fy = floor(v), wx[4], wy[4];
        gs_cubic(u - fx, wx);
        gs_cubic(v - fy, wy);
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 4; k++) {
                real tx = gs_padded(fx - 1 + k, W, pad, align), ty = gs_padded(fy - 1 + j, H, pad, align);
                r += wy[j] * wx[k] * gs_pixel(p, H, W, gs_index(floor(ty)), gs_index(floor(tx)));
            }
    } else {
        real pu = gs_padded(u, W, pad, align), pv = gs_padded(v, H, pad, align);
        if (mode == TS_GRID_NEAREST) {
            r = gs_pixel(p, H, W, gs_index(rint(pv)), gs_index(rint(pu)));
        } else {
            real fx = floor(pu), fy = floor(pv), tx = pu - fx, ty = pv - fy;
            long x0 = gs_index(fx), y0 = gs_index(fy);
            r = (1 - tx) * (1 - ty) * gs_pixel(p, H, W, y0, x0) + tx * (1 - ty) * gs_pixel(p, H, W, y0, x0 + 1) +
                (1 - tx) * ty * gs_pixel(p, H, W, y0 + 1, x0) + tx * ty * gs_pixel(p, H, W, y0 + 1, x0 + 1);
        }
    }
    BUF(float, y)[i] = (float)r;
}

inline long ra_samples(real v) {
    real c = ceil(v);
    return c >= 1 && c <= 4096 ? (long)c : c > 4096 ? 4096 : 1;
}
inline real ra_sample(__global const float *p, long H, long W, real y, real x) {
    if (!(y >= -1 && y <= (real)H && x >= -1 && x <= (real)W)) return 0;
    if (y <= 0) y = 0;
    if (x <= 0) x = 0;
    long y0 = (long)y, x0 = (long)x, y1, x1;
    if (y0 >= H - 1) {
        y0 = y1 = H - 1;
        y = (real)y0;
    } else y1 = y0 + 1;
    if (x0 >= W - 1) {
        x0 = x1 = W - 1;
        x = (real)x0;
    } else x1 = x0 + 1;
    real ly = y - (real)y0, lx = x - (real)x0, hy = 1 - ly, hx = 1 - lx;
    return hy * hx * p[y0 * W + x0] + hy * lx * p[y0 * W + x1] + ly * hx * p[y1 * W + x0] + ly * lx * p[y1 * W + x1];
}

/* one work-item per output element (r, c, i, j); a bad image index is reported */
__kernel void roi_align(BUFARG(float, x), BUFARG(float, rois), BUFARG(char, bi), BUFARG(float, y), long N, long C,
                        long H, long W, long R, long OH, long OW, long ratio, int half_px, float scale_f, int is64,
                        __global int *err, int tag) {
    long e = get_global_id(0);
    if (e >= R * C * OH * OW) return;
    long j = e % OW, i = e / OW % OH, c = e / (OW * OH) % C, r = e / (OW * OH * C);
    long b = is64 ? BUF(long, bi)[r] : BUF(int, bi)[r];
    if (b < 0 || b >= N) {
        set_err(err, tag, r, b);
        BUF(float, y)[e] = 0.f;
        return;
    }
    __global const float *roi = BUF(float, rois) + r * 4, *p = BUF(float, x) + (b * C + c) * H * W;
    real scale = scale_f, off = half_px ? (real)0.5 : (real)0;
    real sx = roi[0] * scale - off, sy = roi[1] * scale - off;
    real w = roi[2] * scale - off - sx, h = roi[3] * scale - off - sy;
    if (!half_px) {
        w = w > 1 ? w : 1;
        h = h > 1 ? h : 1;
    }
    real bh = h / (real)OH, bw = w / (real)OW;
    long gh = ratio > 0 ? ratio : ra_samples(h / (real)OH), gw = ratio > 0 ? ratio : ra_samples(w / (real)OW);
    real s = 0;
    for (long a = 0; a < gh; a++) {
        real yy = sy + (real)i * bh + ((real)a + (real)0.5) * bh / (real)gh;
        for (long k = 0; k < gw; k++)
            s += ra_sample(p, H, W, yy, sx + (real)j * bw + ((real)k + (real)0.5) * bw / (real)gw);
    }
    BUF(float, y)[e] = (float)(s / (real)(gh * gw));
}
