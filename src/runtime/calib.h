/*
 * calib.h — calibration for static int8 quantization, inside the runtime: the statistics of one
 * observed activation (calib_stats.c) behind the public ts_calib (calib.c, tessera_core.h).
 */
#ifndef TS_CALIB_H
#define TS_CALIB_H

#include "core/core.h"

enum {
    TS_CALIB_BINS = 2048,  /* the histogram of |a| */
    TS_CALIB_LEVELS = 128, /* int8's positive levels, for the entropy method */
};

/* What has been seen of |a| for one activation (zeroed to start). */
typedef struct ts_calib_stats {
    float amax;                      /* max |a| so far */
    float range;                     /* the histogram's upper end (0: nothing but zeros yet) */
    uint64_t count;                  /* elements seen */
    uint64_t hist[TS_CALIB_BINS];    /* counts of |a| in [j range / BINS, (j + 1) range / BINS) */
} ts_calib_stats;

/* Add x [n] to s. TS_ERR_ARG ("element i is nan") when an element is not finite (s unchanged but
 * for that). */
ts_status ts_calib_stats_add(ts_calib_stats *s, const float *x, int64_t n);
/* The int8 scale of s by method (TS_CALIB_*): threshold / 127, the threshold at most max |a|;
 * 0 when nothing but zeros was seen. */
float ts_calib_stats_scale(const ts_calib_stats *s, int method);

#endif
