/*
 * calib_stats.c — the statistics of calibration (runtime/calib.h): the range of |a| seen so far
 * for one activation, as a histogram that grows with it, and the three ways of turning it into an
 * int8 scale (minmax, percentile, entropy).
 *
 * The histogram: TS_CALIB_BINS bins of equal width over [0, range): bin j counts the |a| in
 * [j w, (j + 1) w), w = range / TS_CALIB_BINS (the largest |a| lands in the last bin). range is
 * the first batch's max |a|; when a later batch holds a larger |a|, range doubles (and bins 2j
 * and 2j + 1 merge into bin j) until it covers it: counts stay exact, only the resolution of the
 * early batches' values halves. No allocation: the bins are part of ts_calib_stats.
 */
#include "runtime/calib.h"

#include <math.h>

ts_status ts_calib_stats_add(ts_calib_stats *s, const float *x, int64_t n) {
    float m = 0.f;
    for (int64_t i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        if (!(v <= 3.4028235e38f)) return ts_err(TS_ERR_ARG, "element %lld is %g", (long long)i, (double)x[i]);
        m = v > m ? v : m;
    }
    if (m > s->amax) s->amax = m;
    if (s->range == 0.f) s->range = m; /* the first batch that is not all zeros sets the range */
    while (s->range > 0.f && m > s->range) {
        for (int j = 0; j < TS_CALIB_BINS / 2; j++) s->hist[j] = s->hist[2 * j] + s->hist[2 * j + 1];
        for (int j = TS_CALIB_BINS / 2; j < TS_CALIB_BINS; j++) s->hist[j] = 0;
        s->range *= 2.f;
    }
    float per = s->range > 0.f ? (float)TS_CALIB_BINS / s->range : 0.f;
    for (int64_t i = 0; i < n; i++) {
        int j = (int)(fabsf(x[i]) * per);
        s->hist[j < TS_CALIB_BINS ? j : TS_CALIB_BINS - 1]++;
    }
    s->count += (uint64_t)n;
    return TS_OK;
}

/* Percentile: the threshold t below which a fraction p of the |a| seen lie, read from the
 * histogram as the upper edge of the first bin where the cumulative count reaches p * count:
 *   t = (b + 1) w,  b = min { j : sum_{i <= j} hist[i] >= p * count }. */
static double percentile(const ts_calib_stats *s, double p) {
    double need = p * (double)s->count, sum = 0, w = (double)s->range / TS_CALIB_BINS;
    for (int j = 0; j < TS_CALIB_BINS; j++)
        if ((sum += (double)s->hist[j]) >= need) return (j + 1) * w;
    return s->range;
}

/* KL(P || Q) of the histogram cut at i bins (the TensorRT search below). */
static double kl_at(const ts_calib_stats *s, int i, double *p, double *q) {
    double outliers = 0, ps = 0, qs = 0;
    for (int j = i; j < TS_CALIB_BINS; j++) outliers += (double)s->hist[j];
    for (int j = 0; j < i; j++) p[j] = (double)s->hist[j];
    p[i - 1] += outliers;
    for (int l = 0; l < TS_CALIB_LEVELS; l++) { /* level l: bins [l i / 128, (l + 1) i / 128) */
        int b0 = (int)((int64_t)l * i / TS_CALIB_LEVELS), b1 = (int)((int64_t)(l + 1) * i / TS_CALIB_LEVELS);
        double total = 0;
        int nonzero = 0;
        for (int j = b0; j < b1; j++) total += (double)s->hist[j], nonzero += s->hist[j] != 0;
        for (int j = b0; j < b1; j++) q[j] = s->hist[j] && nonzero ? total / nonzero : 0;
    }
    for (int j = 0; j < i; j++) ps += p[j], qs += q[j];
    double kl = 0;
    for (int j = 0; j < i; j++) {
        if (p[j] == 0) continue;
        double pj = p[j] / ps, qj = q[j] > 0 ? q[j] / qs : 1e-12; /* an empty Q bin: a large penalty */
        kl += pj * log(pj / qj);
    }
    return kl;
}

/* Entropy (TensorRT's calibration): for every cut i in [128, 2048], the reference distribution P
 * is the first i bins with the count of every bin beyond them added to bin i - 1 (the values a
 * threshold of i w would clamp there); the candidate Q is the first i bins (no outliers) merged
 * into 128 levels of i / 128 bins each, each level's count spread evenly back over its non-empty
 * bins. Both normalised, the cut minimising KL(P || Q) = sum_j P[j] log(P[j] / Q[j]) gives the
 * threshold t = i w. */
static double entropy(const ts_calib_stats *s) {
    double p[TS_CALIB_BINS], q[TS_CALIB_BINS], best = INFINITY;
    int best_i = TS_CALIB_BINS;
    for (int i = TS_CALIB_LEVELS; i <= TS_CALIB_BINS; i++) {
        double kl = kl_at(s, i, p, q);
        if (kl < best) best = kl, best_i = i;
    }
    return best_i * ((double)s->range / TS_CALIB_BINS);
}

float ts_calib_stats_scale(const ts_calib_stats *s, int method) {
    if (!(s->amax > 0.f)) return 0.f;
    double t = method == TS_CALIB_PERCENTILE ? percentile(s, 0.9999)
               : method == TS_CALIB_ENTROPY  ? entropy(s)
                                             : (double)s->amax; /* minmax: t = max |a| */
    if (t > s->amax) t = s->amax;
    return (float)(t / 127.0);
}
