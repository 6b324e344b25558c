/* clock.c — the monotonic clock the profile measures kernels and runs with. */
#include "core/core.h"

#include <time.h>

uint64_t ts_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
