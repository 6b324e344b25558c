/*
 * init.c — parameter initializers. Every draw is a function of (graph seed, parameter name,
 * element index), so a parameter's initial value does not depend on what else is in the graph,
 * nor on the thread count that filled it.
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

void ts_init_fill(const ts_init *init, uint64_t seed, const char *name, float *dst, int64_t numel) {
    uint64_t key = mix64(seed) ^ fnv1a(name);
    switch (init->kind) {
    case TS_INIT_ZEROS: memset(dst, 0, sizeof(float) * (size_t)numel); break;
    case TS_INIT_ONES: for (int64_t i = 0; i < numel; i++) dst[i] = 1.f; break;
    case TS_INIT_CONST: for (int64_t i = 0; i < numel; i++) dst[i] = init->a; break;
    case TS_INIT_UNIFORM:
#pragma omp parallel for schedule(static) if (numel > 65536)
        for (int64_t i = 0; i < numel; i++)
            dst[i] = (float)(init->a + (init->b - init->a) * unif_at(key, (uint64_t)i, 0));
        break;
    case TS_INIT_NORMAL:
#pragma omp parallel for schedule(static) if (numel > 65536)
        for (int64_t i = 0; i < numel; i++) {
            double z;
            uint64_t k = 0;
            do { /* Box-Muller, redrawn outside 2 std (truncated normal, as BERT's initializer) */
                z = sqrt(-2.0 * log(unif_at(key, (uint64_t)i, k))) * cos(6.283185307179586 * unif_at(key, (uint64_t)i, k + 1));
                k += 2;
            } while (fabs(z) > 2.0);
            dst[i] = (float)(init->a + init->b * z);
        }
        break;
    }
}
