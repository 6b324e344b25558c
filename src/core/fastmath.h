/*
 * fastmath.h — branch-free f32 exp / tanh / erf that compilers vectorise (no libm calls), so the
 * activation and softmax loops run 16 lanes wide under AVX-512. Accuracy: exp ~2 ulp over
 * [-87, 88]; erf abs error < 2e-7 (Abramowitz & Stegun 7.1.26); tanh rel error < 1e-6.
 * Every input is defined, as libm's: exp(NaN) = NaN, exp(+inf) = +inf (also beyond 88.72, where
 * f32 overflows), exp(-inf) = 0 (also below -87.34, where f32 normals end: denormal results are
 * flushed to 0); tanh(+-inf) = +-1, sigmoid(-inf) = 0, erf(+-inf) = +-1; NaN in, NaN out.
 */
#ifndef TS_FASTMATH_H
#define TS_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* exp(x) = 2^n * e^r, n = round(x / ln2), r = x - n ln2 in [-ln2/2, ln2/2]; e^r by Taylor to r^7.
 * The polynomial runs on x clamped to [ln FLT_MIN, ln FLT_MAX] (NaN too: it fails the compares;
 * plain compares, not fminf / fmaxf, which are libm calls that stop the loop vectorising), so n
 * stays in [-126, 128]; 2^n is built from its bits as 2^min(n, 127), times 2 when
 * n is 128. The ends and NaN are put back last. ops/attention_kernel.c's exp16 is this function
 * in AVX-512 intrinsics (the same constants; 2^n by vscalefps): a change here is made there too. */
static inline float ts_expf(float x) {
    float xc = x > -87.33654f ? x : -87.33654f; /* NaN compares false: it becomes the low end */
    xc = xc < 88.72283f ? xc : 88.72283f;
    float n = floorf(xc * 1.44269504089f + 0.5f);
    float r = xc - n * 0.693145751953125f - n * 1.428606765330187e-06f;
    float p = 1.f / 5040.f;
    p = p * r + 1.f / 720.f;
    p = p * r + 1.f / 120.f;
    p = p * r + 1.f / 24.f;
    p = p * r + 1.f / 6.f;
    p = p * r + 0.5f;
    p = p * r + 1.f;
    p = p * r + 1.f;
    float nb = n < 127.f ? n : 127.f;
    uint32_t bits = (uint32_t)((int32_t)nb + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    float y = p * scale * (n > nb ? 2.f : 1.f);
    y = x > 88.72283f ? INFINITY : y;
    y = x < -87.33654f ? 0.f : y;
    return x != x ? x : y;
}

/* tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)); an odd polynomial near 0 keeps relative accuracy. */
static inline float ts_tanhf(float x) {
    float ax = fabsf(x);
    float e = ts_expf(2.f * ax);
    float t = 1.f - 2.f / (e + 1.f);
    float x2 = x * x;
    float small = ax * (1.f + x2 * (-1.f / 3.f + x2 * (2.f / 15.f + x2 * (-17.f / 315.f))));
    t = ax < 0.05f ? small : t;
    return copysignf(t, x);
}

static inline float ts_sigmoidf(float x) { return 1.f / (1.f + ts_expf(-x)); }

/* erf(x) = sign(x) (1 - p(t) e), t = 1 / (1 + 0.3275911 |x|), e = exp(-x^2), p the A&S quintic;
 * ts_erf_exp takes e from a caller that has it (GELU's backward: exp(-x^2 / 2) is also its
 * density term), ts_erff computes it. */
static inline float ts_erf_exp(float x, float e) {
    float t = 1.f / (1.f + 0.3275911f * fabsf(x));
    float p = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    return copysignf(1.f - p * e, x);
}
static inline float ts_erff(float x) {
    float ax = fabsf(x);
    return ts_erf_exp(x, ts_expf(-ax * ax));
}

#define TS_SQRT_2_OVER_PI 0.7978845608028654f
#define TS_INV_SQRT_2 0.7071067811865476f
#define TS_INV_SQRT_2PI 0.3989422804014327f

#endif
