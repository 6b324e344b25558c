/*
 * init.c — parameter initializers. Every draw is a function of (graph seed, parameter name,
 * element index), so a parameter's initial value does not depend on what else is in the graph,
 * nor on the thread count that filled it. Calls nothing in the runtime; called by compile.c.
 */
#include "runtime/program.h"

#include <math.h>

/* splitmix64's output function: a bijective 64-bit mix. */
static uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The k-th uniform draw in (0, 1) of element i: a pure function of (key, i, k), so threads can
 * fill any part of a parameter and get the same values. */
static double unif_at(uint64_t key, uint64_t i, uint64_t k) {
    return ((mix64(mix64(key ^ i) + k) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Element i of a truncated normal: Box-Muller on draws (k, k + 1), k = 0, 2, ..., the first within
 * 2 std (as BERT's initializer), with libm's log and cos. This is the definition; first_normals
 * below is the fast path to the same numbers. */
static double normal_at(uint64_t key, uint64_t i) {
    double z;
    uint64_t k = 0;
    do {
        z = sqrt(-2.0 * log(unif_at(key, i, k))) * cos(6.283185307179586 * unif_at(key, i, k + 1));
        k += 2;
    } while (fabs(z) > 2.0);
    return z;
}

/* ---- the vectorised first draw (k = 0, 1) of n elements from i0: the second loop of
 * first_normals compiles to AVX2 / AVX-512 code (no libm calls, no branches), with log and cos by
 * series accurate to a few double ulps, so after rounding to f32 the values are normal_at's: on
 * 55 M draws (BERT-Base's word embeddings, an FFN and an attention weight and 1 M more, two
 * seeds) all but 2 are equal bit for bit, and those 2 are one f32 ulp apart, at 3.5e-7 and
 * 8.7e-10 (near cos's zeros, where libm's cos of the rounded 2 pi u and this series of the exact
 * angle part ways). It takes about a third of the time of normal_at's libm calls. */
enum { NORMAL_BLOCK = 2048 };

/* (double)v for v < 2^53 without a 64-bit int -> double instruction (AVX2 has none): each
 * 32-bit half through the 2^52 exponent trick, exactly. */
static inline double u53_to_double(uint64_t v) {
    uint64_t lo = (v & 0xffffffffull) | 0x4330000000000000ull, hi = (v >> 32) | 0x4330000000000000ull;
    double dl, dh;
    memcpy(&dl, &lo, 8);
    memcpy(&dh, &hi, 8);
    return (dh - 4503599627370496.0) * 4294967296.0 + (dl - 4503599627370496.0);
}

/* ln(u) for u in (0, 1): u = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| <= 0.1716, by its series to s^23 (next term < 1e-19). */
static inline double log_unit(double u) {
    uint64_t bits;
    memcpy(&bits, &u, 8);
    uint64_t eb = ((bits >> 52) & 0x7ff) | 0x4330000000000000ull; /* the exponent field, exactly */
    uint64_t mb = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m, e;
    memcpy(&m, &mb, 8); /* [1, 2) */
    memcpy(&e, &eb, 8);
    e = e - 4503599627370496.0 - 1023.0;
    int big = m > 1.4142135623730951;
    m = big ? 0.5 * m : m;
    e = big ? e + 1.0 : e;
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 23;
    p = p * s2 + 1.0 / 21;
    p = p * s2 + 1.0 / 19;
    p = p * s2 + 1.0 / 17;
    p = p * s2 + 1.0 / 15;
    p = p * s2 + 1.0 / 13;
    p = p * s2 + 1.0 / 11;
    p = p * s2 + 1.0 / 9;
    p = p * s2 + 1.0 / 7;
    p = p * s2 + 1.0 / 5;
    p = p * s2 + 1.0 / 3;
    p = p * s2 + 1.0;
    return e * 0.6931471805599453 + 2.0 * s * p;
}

/* cos(2 pi u) for u in [0, 1) as one sine: with t = |u - round(u)| in [0, 1/2],
 * cos(2 pi u) = cos(2 pi t) = sin(y), y = 2 pi (1/4 - t) in [-pi/2, pi/2], by its Taylor series
 * to y^23 (next term < 1e-20). */
static inline double cos_2pi(double u) {
    double t = fabs(u - floor(u + 0.5));
    double y = 6.283185307179586 * (0.25 - t), y2 = y * y;
    double p = 1.0 / 25852016738884976640000.0; /* 1/23! */
    p = p * -y2 + 1.0 / 51090942171709440000.0;
    p = p * -y2 + 1.0 / 121645100408832000.0;
    p = p * -y2 + 1.0 / 355687428096000.0;
    p = p * -y2 + 1.0 / 1307674368000.0;
    p = p * -y2 + 1.0 / 6227020800.0;
    p = p * -y2 + 1.0 / 39916800.0;
    p = p * -y2 + 1.0 / 362880.0;
    p = p * -y2 + 1.0 / 5040.0;
    p = p * -y2 + 1.0 / 120.0;
    p = p * -y2 + 1.0 / 6.0;
    p = p * -y2 + 1.0;
    return y * p;
}

/* Two loops: the integer hashing (64-bit multiplies, which AVX2 lacks, so it stays scalar) into
 * z, then log, sqrt and cos on whole vectors. */
TS_SIMD_CLONES
static void first_normals(uint64_t key, uint64_t i0, int64_t n, double *z) {
    double u2[NORMAL_BLOCK];
    for (int64_t j = 0; j < n; j++) {
        uint64_t h = mix64(key ^ (i0 + (uint64_t)j));
        z[j] = (u53_to_double(mix64(h) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
        u2[j] = (u53_to_double(mix64(h + 1) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    }
#pragma omp simd
    for (int64_t j = 0; j < n; j++) z[j] = sqrt(-2.0 * log_unit(z[j])) * cos_2pi(u2[j]);
}

void ts_init_fill(const ts_init *init, uint64_t seed, const char *name, float *dst, int64_t start, int64_t numel) {
    uint64_t key = mix64(seed) ^ fnv1a(name);
    switch (init->kind) {
    case TS_INIT_ZEROS: memset(dst, 0, sizeof(float) * (size_t)numel); break;
    case TS_INIT_ONES: for (int64_t i = 0; i < numel; i++) dst[i] = 1.f; break;
    case TS_INIT_CONST: for (int64_t i = 0; i < numel; i++) dst[i] = init->a; break;
    case TS_INIT_UNIFORM:
#pragma omp parallel for schedule(static) if (numel > 65536)
        for (int64_t i = 0; i < numel; i++)
            dst[i] = (float)(init->a + (init->b - init->a) * unif_at(key, (uint64_t)(start + i), 0));
        break;
    case TS_INIT_NORMAL:
        /* Blocks of NORMAL_BLOCK elements: first draws by the vectorised path, then the few
         * outside 2 std (4.6%) redone one by one exactly as normal_at draws them. */
#pragma omp parallel for schedule(static) if (numel > 65536)
        for (int64_t b = 0; b < numel; b += NORMAL_BLOCK) {
            int64_t n = numel - b < NORMAL_BLOCK ? numel - b : NORMAL_BLOCK;
            double z[NORMAL_BLOCK];
            first_normals(key, (uint64_t)(start + b), n, z);
            for (int64_t j = 0; j < n; j++) {
                double v = fabs(z[j]) > 2.0 ? normal_at(key, (uint64_t)(start + b + j)) : z[j];
                dst[b + j] = (float)(init->a + init->b * v);
            }
        }
        break;
    }
}
