/* clock.c — the one monotonic clock of the library: ts_now_ns for the profile's kernels and runs,
 * ts_seconds (public, tessera_support.h) for every duration in seconds (training, inference timing,
 * pipelines' busy times, communicator timeouts). */
#include "core/core.h"

#include <time.h>

uint64_t ts_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

double ts_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
