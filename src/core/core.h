/*
 * core.h — internal helpers shared by every part of the library: error recording, checked
 * allocation, the host tensor struct, and shape arithmetic.
 */
#ifndef TS_CORE_H
#define TS_CORE_H

#include "tessera.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Record msg (printf-style) as this thread's last error and return code: the core's short name
 * of the public ts_set_error (the same function). */
ts_status ts_err(ts_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ts_err_clear, ts_struct_read / _write and TS_STRUCT_READ / _WRITE, ts_read_file,
 * ts_path_join, ts_write_atomic, ts_seconds, ts_shape_str: tessera_support.h (public). */
/* How many errors this thread has recorded so far: a call that moved it set a message. */
unsigned long ts_err_count(void);

/* 64-byte aligned allocation (zeroed when zero != 0). NULL on failure; free with ts_free. */
void *ts_alloc(size_t bytes, int zero);
void ts_free(void *p);
/* Library code never aborts on a failed allocation: it uses malloc / strdup / realloc and reports
 * TS_ERR_NOMEM (a graph builder call records it as the graph's error, graph/ir.c; the ONNX
 * importer's context marks itself out of memory, onnx/import/ctx.c). tests/test_nomem.c fails
 * allocations one by one to check it. */
/* A monotonic clock in nanoseconds (clock.c): the profile's kernel and run times. The same clock
 * in seconds, for every other duration, is the public ts_seconds (tessera_support.h). */
uint64_t ts_now_ns(void);

struct ts_tensor {
    ts_dtype dtype;
    int ndim;
    int64_t shape[TS_MAX_DIMS];
    void *data;
};


/* The most bytes one value may hold (2^48, 256 TiB): above it a shape is refused when it is
 * built, before any product of its dims could overflow int64 or size_t. */
#define TS_MAX_VALUE_BYTES ((int64_t)1 << 48)

/* Element loops that the compiler vectorises (activations, softmax, norms, optimizers, casts) are
 * built three times and the best for the CPU is picked when the library loads: AVX-512, AVX2 and
 * the x86-64 baseline (SSE2, where floorf is a libm call and the exp-based loops stay scalar).
 * The clones are chosen by instruction set ("avx2"), not by CPU model ("arch=haswell" would only
 * ever be picked on Intel Haswell parts, never on an AMD Zen). Without the AVX2 clone an AVX2-only
 * CPU ran the baseline: erf GELU over [1024, 3072] took 32.0 ms instead of 7.5 ms (AMD EPYC,
 * 2 threads, 2026-12-03). */
#define TS_SIMD_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
/* 1 when a value of these dims and element size holds at most TS_MAX_VALUE_BYTES bytes (dims
 * must not be negative; an empty shape fits). */
static inline int ts_shape_fits(int ndim, const int64_t *shape, size_t elem) {
    int64_t n = (int64_t)elem;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) return 1; /* empty: no bytes, whatever the other dims */
    for (int i = 0; i < ndim; i++) {
        if (shape[i] > TS_MAX_VALUE_BYTES / n) return 0;
        n *= shape[i];
    }
    return n <= TS_MAX_VALUE_BYTES;
}

/* f16/bf16 scalar conversions (ts_bf16_f32 and ts_numel: tessera_support.h). */
static inline uint16_t ts_f32_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
/* 1 when the CPU converts f32 to bf16 in hardware (AVX-512 F, BW, DQ and BF16: core/bf16_avx512.h
 * may be used); ts_f32_to_bf16 then does. */
int ts_cpu_has_bf16_cvt(void);
float ts_f16_f32(uint16_t h);
uint16_t ts_f32_f16(float f);

#include "core/struct_base.h"

#endif
