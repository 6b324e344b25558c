/*
 * profile_rates.c — the rates a device profile gives the cost model (plan.h): the FLOP/s of a GEMM
 * of a given shape and dtype (from the profile's measured GEMMs, interpolated, else its peak times
 * its calibrated efficiency) and the bytes/s of a memory-bound kernel.
 */
#include "plan/plan.h"

#include <math.h>

/* A measured size (log of m n k) and its rate (log FLOP/s). */
typedef struct point {
    double logw, logf;
} point;

/* The measured rate of a GEMM of m n k in dtype (interpolated between the measured sizes), 0 when
 * the profile has no measured GEMM of dtype. */
static double measured_rate(const ts_device_profile *p, int64_t m, int64_t n, int64_t k, ts_dtype dtype) {
    point pts[TS_PROFILE_MAX_GEMM];
    int np = 0, ng = p->ngemm < TS_PROFILE_MAX_GEMM ? p->ngemm : TS_PROFILE_MAX_GEMM;
    for (int i = 0; i < ng; i++) {
        const ts_gemm_point *g = &p->gemm[i];
        if (g->dtype != dtype || !(g->flops > 0) || g->m <= 0 || g->n <= 0 || g->k <= 0) continue;
        if (g->m == m && g->n == n && g->k == k) return g->flops; /* a measured shape: its rate */
        point q = {log((double)g->m) + log((double)g->n) + log((double)g->k), log(g->flops)};
        /* insert sorted by size; shapes of one size (m n k) share the mean of their log rates */
        int j = 0;
        while (j < np && pts[j].logw < q.logw) j++;
        if (j < np && pts[j].logw == q.logw) {
            pts[j].logf = 0.5 * (pts[j].logf + q.logf);
            continue;
        }
        for (int t = np; t > j; t--) pts[t] = pts[t - 1];
        pts[j] = q;
        np++;
    }
    if (np == 0) return 0;
    double w = log((double)m) + log((double)n) + log((double)k);
    /* smaller than every measured shape: no faster in time than the smallest (its rate scaled by
     * size); larger than every one: the largest's rate */
    if (w <= pts[0].logw) return exp(pts[0].logf + (w - pts[0].logw));
    if (w >= pts[np - 1].logw) return exp(pts[np - 1].logf);
    int j = 1;
    while (pts[j].logw < w) j++;
    double t = (w - pts[j - 1].logw) / (pts[j].logw - pts[j - 1].logw);
    return exp(pts[j - 1].logf + t * (pts[j].logf - pts[j - 1].logf));
}

/* The measured rates times eff_matmul (1 in a measured profile; a run's calibration may lower it),
 * else peak_flops x eff_matmul. */
double ts_profile_gemm_flops(const ts_device_profile *p, int64_t m, int64_t n, int64_t k, ts_dtype dtype) {
    if (!p || (unsigned)dtype >= 3 || m <= 0 || n <= 0 || k <= 0) return 0;
    double eff = p->eff_matmul[dtype], r = measured_rate(p, m, n, k, dtype);
    if (r > 0) return eff > 0 ? r * eff : r;
    return p->peak_flops[dtype] > 0 ? p->peak_flops[dtype] * eff : 0;
}

double ts_profile_mem_bw(const ts_device_profile *p) { return p ? p->mem_bw * p->eff_mem : 0; }
