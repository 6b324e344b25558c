/*
 * reduce.cl — reductions over a set of axes (src/ops/reduce.c; sum_to of elementwise.c uses the
 * same): one work-item per output; k (kept dims: shape, st[0] strides of x) places the output's
 * slot, r (reduced dims) walks it in row-major order. mode 0 sum, 1 mean, 2 max (NaN wins), 3 product
 * (src/ops/reduce_prod.c).
 */
__kernel void reduce(BUFARG(float, x), BUFARG(float, y), bc_t k, bc_t r, int mode) {
    long o = get_global_id(0);
    if (o >= k.n) return;
    __global const float *x = BUF(float, x) + bc_off(&k, 0, o);
    float acc = mode == 2 ? -INFINITY : mode == 3 ? 1.f : 0.f;
    for (long i = 0; i < r.n; i++) {
        float v = x[bc_off(&r, 0, i)];
        if (mode == 2) acc = (v != v || acc != acc) ? NAN : (v > acc ? v : acc);
        else if (mode == 3) acc *= v;
        else acc += v;
    }
    if (mode == 1) acc /= (float)r.n;
    BUF(float, y)[o] = acc;
}

/* gx[p] = gy[o] at the first p of o's slot with x[p] == y[o] (or both NaN), 0 elsewhere */
__kernel void reduce_max_grad(BUFARG(float, x), BUFARG(float, y), BUFARG(float, gy), BUFARG(float, gx), bc_t k,
                              bc_t r) {
    long o = get_global_id(0);
    if (o >= k.n) return;
    long base = bc_off(&k, 0, o);
    __global const float *x = BUF(float, x) + base;
    __global float *gx = BUF(float, gx) + base;
    float m = BUF(float, y)[o], g = BUF(float, gy)[o];
    int found = 0;
    for (long i = 0; i < r.n; i++) {
        long p = bc_off(&r, 0, i);
        float v = x[p];
        int hit = !found && (v == m || (v != v && m != m));
        gx[p] = hit ? g : 0.f;
        found |= hit;
    }
}

/* reduce_prod_grad: gx[i] = gy[o] * the product of the other elements of i's slot (p the product
 * of the non-zero elements, z the zeros: z = 0 p / x, z = 1 p at the zero, else 0) */
__kernel void reduce_prod_grad(BUFARG(float, x), BUFARG(float, gy), BUFARG(float, gx), bc_t k, bc_t r) {
    long o = get_global_id(0);
    if (o >= k.n) return;
    long base = bc_off(&k, 0, o);
    __global const float *x = BUF(float, x) + base;
    __global float *gx = BUF(float, gx) + base;
    float p = 1.f, g = BUF(float, gy)[o];
    long z = 0;
    for (long i = 0; i < r.n; i++) {
        float v = x[bc_off(&r, 0, i)];
        if (v == 0.f) z++;
        else p *= v;
    }
    for (long i = 0; i < r.n; i++) {
        long q = bc_off(&r, 0, i);
        float v = x[q];
        gx[q] = z == 0 ? g * (p / v) : z == 1 && v == 0.f ? g * p : 0.f;
    }
}

/* trilu: y[.., i, j] = x where (upper ? j - i >= k : j - i <= k), else 0; es bytes an element */
__kernel void trilu(BUFARG(char, x), BUFARG(char, y), long n, long R, long C, int upper, long kd, int es) {
    long p = get_global_id(0);
    if (p >= n) return;
    long j = p % C, i = p / C % R;
    int keep = upper ? j - i >= kd : j - i <= kd;
    __global const char *x = BUF(char, x) + p * es;
    __global char *y = BUF(char, y) + p * es;
    for (int b = 0; b < es; b++) y[b] = keep ? x[b] : 0;
}
