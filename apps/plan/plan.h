/*
 * plan.h — what the planner's files share inside the library (apps/plan/): the rates a device
 * profile gives the cost model. The public side is include/tessera_plan.h.
 */
#ifndef TS_PLAN_PLAN_H
#define TS_PLAN_PLAN_H

#include "common/app.h"

/* FLOP/s profile p reaches on C[m, n] = A[m, k] B[k, n] in dtype (batched GEMMs: one of the
 * batch): from its measured GEMMs when it has them (the nearest measured shapes of that dtype,
 * interpolated in log space; a shape smaller than every measured one is scaled down by its size)
 * times eff_matmul[dtype] (1 as measured; bench/plan's calibration lowers it), else
 * peak_flops[dtype] x eff_matmul[dtype]. 0 when the profile has no rate for dtype.
 * (profile_rates.c) */
double ts_profile_gemm_flops(const ts_device_profile *p, int64_t m, int64_t n, int64_t k, ts_dtype dtype);

/* Bytes/s a memory-bound kernel reaches on p: mem_bw x eff_mem. (profile_rates.c) */
double ts_profile_mem_bw(const ts_device_profile *p);

#endif
