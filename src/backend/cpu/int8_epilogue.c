/*
 * int8_epilogue.c — the numbers of the int8 kernels' baked epilogue (backend/cpu/matmul_int8.c,
 * conv_int8.c), whose top comment in matmul_int8.c says why it is built so:
 *   y = act(acc sa sw[i] + bias[i])  computed by oneDNN as  act(se (c[i] (acc + b[i])))
 * with c[i] = m sw[i] (m: alpha, times a fixed activation scale where there is one) the primitive's
 * constant per-channel output scales, se the run's activation scale (a [1, 1] post-op multiply) and
 * b[i] = bias[i] / (se c[i]) the bias input (oneDNN adds it before the scales). c[i] is 1 where
 * sw[i] is 0 (channel i's weights all 0: its sums are 0), se is 1 where sa is 0 (the activations
 * all 0: every sum is 0) or fixed into c, so that the bias passes unchanged; a NaN stays NaN.
 */
#include "backend/cpu/cpu.h"

#include <math.h>

void ts_cpu_i8_scales(const float *sw, int64_t n, float m, float *c) {
    for (int64_t i = 0; i < n; i++) c[i] = sw[i] == 0.f ? 1.f : m * sw[i];
}

int ts_cpu_i8_bias_scaled(const float *bias, const float *c, int64_t n, float sa, int fixed, float *b, float *se) {
    const float big = 3.4028235e38f;
    float s = fixed || sa == 0.f ? 1.f : sa;
    int over = 0;
    for (int64_t i = 0; bias && i < n; i++) {
        b[i] = bias[i] / (s * c[i]);
        over |= !(fabsf(b[i]) <= big) && fabsf(bias[i]) <= big && fabsf(s) <= big && fabsf(c[i]) <= big;
    }
    *se = s;
    return over;
}
