/*
 * optim.cl — the element loops of the optimizer ops (src/ops/optim.c, amp.c); their scalar
 * parts (lr, step counters, bias corrections, norms) run on the host in op_optim.c.
 * Partial sums of squares are per block of SUMSQ_BLOCK elements, summed on the host in double.
 */
#define SUMSQ_BLOCK 1024

__kernel void sgd(BUFARG(float, p), BUFARG(float, g), BUFARG(float, buf), long n, float lr, float clip, float mom,
                  float wd, float damp1, int nesterov, int first) {
    long i = get_global_id(0);
    if (i >= n) return;
    __global float *p = BUF(float, p);
    float d = BUF(float, g)[i] * clip + wd * p[i];
    if (buf_p) {
        __global float *buf = BUF(float, buf);
        float b = first ? d : mom * buf[i] + damp1 * d;
        buf[i] = b;
        p[i] -= lr * (nesterov ? d + mom * b : b);
    } else {
        p[i] -= lr * d;
    }
}

__kernel void adamw(BUFARG(float, p), BUFARG(float, g), BUFARG(float, m), BUFARG(float, v), long n, float clip,
                    float decay, float b1, float b2, float step_size, float bc2_sqrt, float eps) {
    long i = get_global_id(0);
    if (i >= n) return;
    float gg = BUF(float, g)[i] * clip;
    float mi = b1 * BUF(float, m)[i] + (1.f - b1) * gg;
    float vi = b2 * BUF(float, v)[i] + (1.f - b2) * gg * gg;
    BUF(float, m)[i] = mi;
    BUF(float, v)[i] = vi;
    __global float *p = BUF(float, p);
    p[i] = p[i] * decay - step_size * mi / (sqrt(vi) / bc2_sqrt + eps);
}

inline float lamb_r(float m, float v, float p, float bc1, float bc2, float eps, float wd) {
    return (m / bc1) / (sqrt(v / bc2) + eps) + wd * p;
}

/* pass 1, one work-item per block: moments updated, partial ||p||^2 and ||r||^2 into ws */
__kernel void lamb_moments(BUFARG(float, p), BUFARG(float, g), BUFARG(float, m), BUFARG(float, v), BUFARG(float, ws),
                           long n, float clip, float b1, float b2, float bc1, float bc2, float eps, float wd) {
    long b = get_global_id(0), nb = (n + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK;
    if (b >= nb) return;
    float sp = 0.f, sr = 0.f;
    for (long i = b * SUMSQ_BLOCK; i < n && i < (b + 1) * SUMSQ_BLOCK; i++) {
        float gg = BUF(float, g)[i] * clip, pi = BUF(float, p)[i];
        float mi = b1 * BUF(float, m)[i] + (1.f - b1) * gg;
        float vi = b2 * BUF(float, v)[i] + (1.f - b2) * gg * gg;
        BUF(float, m)[i] = mi;
        BUF(float, v)[i] = vi;
        float r = lamb_r(mi, vi, pi, bc1, bc2, eps, wd);
        sp += pi * pi;
        sr += r * r;
    }
    BUF(float, ws)[b] = sp;
    BUF(float, ws)[nb + b] = sr;
}

__kernel void lamb_apply(BUFARG(float, p), BUFARG(float, m), BUFARG(float, v), long n, float bc1, float bc2, float eps,
                         float wd, float step) {
    long i = get_global_id(0);
    if (i >= n) return;
    __global float *p = BUF(float, p);
    p[i] -= step * lamb_r(BUF(float, m)[i], BUF(float, v)[i], p[i], bc1, bc2, eps, wd);
}

__kernel void sumsq(BUFARG(float, x), BUFARG(float, ws), long n) {
    long b = get_global_id(0);
    if (b >= (n + SUMSQ_BLOCK - 1) / SUMSQ_BLOCK) return;
    float s = 0.f;
    __global const float *x = BUF(float, x);
    for (long i = b * SUMSQ_BLOCK; i < n && i < (b + 1) * SUMSQ_BLOCK; i++) s += x[i] * x[i];
    BUF(float, ws)[b] = s;
}

/* acc = (first ? 0 : acc) + g */
__kernel void accum(BUFARG(float, acc), BUFARG(float, g), long n, int first) {
    long i = get_global_id(0);
    if (i >= n) return;
    BUF(float, acc)[i] = (first ? 0.f : BUF(float, acc)[i]) + BUF(float, g)[i];
}
