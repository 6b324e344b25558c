/*
 * bf16_avx512.h — f32 to bf16 with AVX-512 BF16, in ts_f32_bf16's bits: the conversions of
 * core/tensor.c (ts_f32_to_bf16) and of the attention kernel's packers (ops/attention_kernel.c).
 * Callers reach these only where the CPU has AVX512F, BW, DQ and BF16 (ts_cpu_has_bf16_cvt).
 *
 * ts_f32_bf16: round to nearest even on the upper half; a NaN keeps its top half with the quiet
 * bit set. vcvtne2ps2bf16 rounds alike but treats a denormal input as zero, so 32 floats holding
 * one (vfpclassps, rare) take the rounding written out in integer ops instead.
 */
#ifndef TS_BF16_AVX512_H
#define TS_BF16_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#define TS_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512bf16")))
#define TS_INLINE_BF16 TS_AVX512_BF16 static inline __attribute__((always_inline))

/* The 16 floats of x as bf16, ts_f32_bf16's rounding, each in the low half of its 32-bit lane
 * (high half 0): the rounding written out, denormals kept. */
TS_INLINE_BF16 __m512i ts_bf16_lanes(__m512 x) {
    __m512i u = _mm512_castps_si512(x), hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1))));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_or_epi32(_mm512_srli_epi32(r, 16), nan, hi, _mm512_set1_epi32(0x40));
}

/* lo's 16 floats then hi's as 32 bf16 in order (16-bit lanes), ts_f32_bf16's rounding. */
TS_INLINE_BF16 __m512i ts_bf16x32(__m512 lo, __m512 hi) {
    if (!(_mm512_fpclass_ps_mask(lo, 0x20) | _mm512_fpclass_ps_mask(hi, 0x20)))
        return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
    __m256i l = _mm512_cvtepi32_epi16(ts_bf16_lanes(lo)), h = _mm512_cvtepi32_epi16(ts_bf16_lanes(hi));
    return _mm512_inserti64x4(_mm512_castsi256_si512(l), h, 1);
}

#endif
