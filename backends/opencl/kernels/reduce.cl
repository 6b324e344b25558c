/*
 * reduce.cl — reductions over a set of axes (src/ops/reduce.c; sum_to of elementwise.c uses the
 * same): one work-item per output; k (kept dims: shape, st[0] strides of x) places the output's
 * slot, r (reduced dims) walks it in row-major order. mode 0 sum, 1 mean, 2 max (NaN wins).
 */
__kernel void reduce(BUFARG(float, x), BUFARG(float, y), bc_t k, bc_t r, int mode) {
    long o = get_global_id(0);
    if (o >= k.n) return;
    __global const float *x = BUF(float, x) + bc_off(&k, 0, o);
    float acc = mode == 2 ? -INFINITY : 0.f;
    for (long i = 0; i < r.n; i++) {
        float v = x[bc_off(&r, 0, i)];
        if (mode == 2) acc = (v != v || acc != acc) ? NAN : (v > acc ? v : acc);
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
