/*
 * profile_rates.c — TEMPORARY: the rates a device profile gives the cost model (plan.h), as peak x
 * efficiency only, until the profile half of issue 26 (measured GEMM rates) merges and replaces it.
 */
#include "plan/plan.h"

double ts_profile_gemm_flops(const ts_device_profile *p, int64_t m, int64_t n, int64_t k, ts_dtype dtype) {
    (void)m, (void)n, (void)k;
    if ((int)dtype < 0 || dtype > TS_F16) return 0;
    return p->peak_flops[dtype] * p->eff_matmul[dtype];
}

double ts_profile_mem_bw(const ts_device_profile *p) { return p->mem_bw * p->eff_mem; }
