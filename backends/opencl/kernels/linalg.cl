/*
 * linalg.cl — det (src/ops/det.c: LU with partial pivoting per matrix) and dft (dft.c: the direct
 * sum with twiddles), computed in double where the device has cl_khr_fp64 (as the CPU), else in
 * float.
 */
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
#define REAL_PI 3.14159265358979323846
#else
typedef float real;
#define REAL_PI 3.14159265358979323846f
#endif

/* one work-item per matrix; a: M * M reals of scratch per matrix (8 bytes each reserved) */
__kernel void det(BUFARG(float, x), BUFARG(char, ws), BUFARG(float, y), long cnt, long M) {
    long b = get_global_id(0);
    if (b >= cnt) return;
    __global real *a = (__global real *)(BUF(char, ws) + b * M * M * 8);
    __global const float *X = BUF(float, x) + b * M * M;
    for (long i = 0; i < M * M; i++) a[i] = X[i];
    real d = 1;
    for (long c = 0; c < M && d != 0; c++) {
        long p = c;
        for (long r = c + 1; r < M; r++)
            if (fabs(a[r * M + c]) > fabs(a[p * M + c])) p = r;
        if (a[p * M + c] == 0) {
            d = 0;
            break;
        }
        if (p != c) {
            for (long j = 0; j < M; j++) {
                real t = a[c * M + j];
                a[c * M + j] = a[p * M + j];
                a[p * M + j] = t;
            }
            d = -d;
        }
        d *= a[c * M + c];
        for (long r = c + 1; r < M; r++) {
            real f = a[r * M + c] / a[c * M + c];
            for (long j = c; j < M; j++) a[r * M + j] -= f * a[c * M + j];
        }
    }
    BUF(float, y)[b] = (float)d;
}

/* one work-item per output (a, k, b): y = s sum_m x[m] e^(sgn 2 pi i k m / L) */
__kernel void dft(BUFARG(float, x), BUFARG(float, y), long outer, long inner, long K, long len, long L, long c,
                  int inv) {
    long i = get_global_id(0);
    if (i >= outer * K * inner) return;
    long b = i % inner, kk = i / inner % K, a = i / (inner * K);
    long m_end = len < L ? len : L;
    real sgn = inv ? 1 : -1, s = inv ? (real)1 / (real)L : (real)1, re = 0, im = 0;
    __global const float *X = BUF(float, x);
    for (long m = 0; m < m_end; m++) {
        __global const float *p = X + ((a * len + m) * inner + b) * c;
        real xr = p[0], xi = c == 2 ? p[1] : 0;
        long j = kk * m % L;
        real ang = 2 * REAL_PI * (real)j / (real)L, cr = cos(ang), ci = sgn * sin(ang);
        re += xr * cr - xi * ci;
        im += xr * ci + xi * cr;
    }
    __global float *o = BUF(float, y) + ((a * K + kk) * inner + b) * 2;
    o[0] = (float)(re * s);
    o[1] = (float)(im * s);
}
