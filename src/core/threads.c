/* threads.c — ts_max_threads (public, tessera_core.h): the most threads a caller may ask for,
 * 4 x the online CPUs, which every `threads` option is checked against. */
#include "core/core.h"

#include <unistd.h>

int ts_max_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return 4 * (n > 0 ? (int)n : 1);
}
