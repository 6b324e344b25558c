/*
 * weight_copy.h — copies of a weight buffer in a kernel's own layout (weight_copy.c), shared by
 * the kernels that read one buffer the same way: matmul_dnnl.c's prepacked f32 / bf16 weights and
 * matmul_int8.c's quantized ones.
 */
#ifndef TS_CPU_WEIGHT_COPY_H
#define TS_CPU_WEIGHT_COPY_H

#include "backend/cpu/cpu.h"

#include <oneapi/dnnl/dnnl.h>

/* A copy of weight buffer src, read as smd describes it (a transposed read of a square weight is
 * another copy; so is a read as another dtype), in layout md: data [bytes], 64-byte aligned (a
 * kernel may keep more than the reordered weights in it: matmul_int8.c keeps the scales after
 * them); stamp: the param_gen it was made at; refs: the kernels holding it. */
typedef struct ts_weight_copy {
    const void *src;
    dnnl_memory_desc_t smd, md;
    void *data;
    size_t bytes;
    ts_weight_stamp stamp;
    int refs;
    struct ts_weight_copy *next;
} ts_weight_copy;

/* The listed copy of src read as smd in layout md of bytes (a new one, stale, when none is
 * listed); src NULL: a copy of the caller's own, never listed (weights that may change during a
 * run). NULL out of memory. Thread-safe. */
ts_weight_copy *ts_weight_copy_get(const void *src, const dnnl_memory_desc_t *smd, const dnnl_memory_desc_t *md,
                                   size_t bytes);
/* Drop one hold (NULL: nothing); the last frees the copy. */
void ts_weight_copy_release(ts_weight_copy *c);

#endif
