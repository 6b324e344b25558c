/*
 * core.h — internal helpers shared by every part of the library: error recording, checked
 * allocation, the host tensor struct, and shape arithmetic.
 */
#ifndef TS_CORE_H
#define TS_CORE_H

#include "tessera.h"
#include "core/fileio.h" /* ts_read_file, ts_path_join, ts_write_atomic */

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Record msg (printf-style) as this thread's last error and return code. */
ts_status ts_err(ts_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clear this thread's last error. */
void ts_err_clear(void);
/* How many errors this thread has recorded so far: a call that moved it set a message. */
unsigned long ts_err_count(void);

/* 64-byte aligned allocation (zeroed when zero != 0). NULL on failure; free with ts_free. */
void *ts_alloc(size_t bytes, int zero);
void ts_free(void *p);
/* strdup (NULL: "") that aborts on out-of-memory, and realloc-or-abort. Library code must not
 * abort: new code uses strdup / realloc and returns TS_ERR_NOMEM. What still calls these is the
 * graph builder's growable arrays and names (graph/ir.c) and the ONNX importer's context
 * (onnx/import/ctx.c, attrs.c, onnx/map/shape.c), whose builders have no out-of-memory path yet. */
char *ts_strdup(const char *s);
void *ts_xrealloc(void *p, size_t bytes);
/* A monotonic clock in nanoseconds (clock.c): the profile's kernel and run times. The same clock
 * in seconds, for every other duration, is the public ts_seconds (tessera_tasks.h, clock.c). */
uint64_t ts_now_ns(void);

struct ts_tensor {
    ts_dtype dtype;
    int ndim;
    int64_t shape[TS_MAX_DIMS];
    void *data;
};

static inline int64_t ts_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

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

/* "[8, 128, 768]" into buf (returns buf). */
const char *ts_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);

/* f16/bf16 scalar conversions. */
static inline float ts_bf16_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t ts_f32_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
float ts_f16_f32(uint16_t h);
uint16_t ts_f32_f16(float f);

/* The struct_size rule of the public header (tessera.h), the one way every function reads or
 * fills a public struct that may grow (base: TS_BASE_<type> of core/struct_base.h, the end of
 * the base layout's last field; align: the struct's alignment). A struct_size below base is
 * TS_ERR_ARG naming fn and what ("ts_compile", "ts_compile_opts"); 0 is the base layout.
 *
 * ts_struct_read: a caller's input struct into *out (out_size bytes, this library's struct):
 * zeroed, then the bytes the caller's struct_size covers copied, at most out_size, so a field
 * beyond the caller's size takes its default (0; a function with other defaults sets them after).
 * A size no larger than base rounded up to align is the base layout (its tail padding is not
 * read: a field appended there, as ts_compile_opts.strict_device, is not the caller's). in NULL:
 * all defaults, TS_OK. */
ts_status ts_struct_read(void *out, size_t out_size, const void *in, size_t base, size_t align, const char *fn,
                         const char *what);
#define TS_STRUCT_READ(out, in, type, fn) \
    ts_struct_read(out, sizeof(type), in, TS_BASE_##type, _Alignof(type), fn, #type)
/* ts_struct_write: a struct the library filled (filled, filled_size bytes) into the caller's out,
 * whose struct_size the caller set (0: base): min(that, filled_size) bytes written, never more,
 * and out->struct_size set to that count. On TS_ERR_ARG out is left as it was. */
ts_status ts_struct_write(void *out, const void *filled, size_t filled_size, size_t base, const char *fn,
                          const char *what);
#define TS_STRUCT_WRITE(out, filled, type, fn) \
    ts_struct_write(out, filled, sizeof(type), TS_BASE_##type, fn, #type)

#include "core/struct_base.h"

#endif
