/*
 * attention_kernel.h — the CPU kernels of attention and attention_grad (ops/attention_kernel.c),
 * and the geometry of a node they read: sizes, element strides of q / k / v / y in either layout,
 * the mask's broadcast strides, and the dropout generator's key for the run step.
 */
#ifndef TS_ATTENTION_KERNEL_H
#define TS_ATTENTION_KERNEL_H

#include "graph/opdef.h"

typedef struct ts_attn_geom {
    int64_t B, H, T, S, D;
    int64_t qb, qh, qt;     /* element strides of q, y, gy, gq for batch, head, query (d: 1) */
    int64_t kb, kh, ks;     /* of k, v, gk, gv for batch, head, key */
    const float *mask;      /* NULL: none */
    int64_t mb, mh, mt, ms; /* the mask's strides (0 where it broadcasts) */
    float scale, p, keep_scale; /* keep_scale = 1 / (1 - p) */
    uint64_t key;           /* dropout: ts_rng_key(seed, salt, step) */
    uint32_t thr;           /* keep when (bits >> 8) >= thr = ceil(p 2^24) */
    int bf16;               /* compute dtype bf16 */
    int in16;               /* q, k, v are bf16 (with bf16 compute), else f32 */
} ts_attn_geom;

void ts_attn_geom_init(ts_attn_geom *geo, const ts_graph *g, const ts_node *n, const float *mask, uint64_t step);
/* The scratch bytes of the forward (backward 0) or backward (1) for omp_get_max_threads() threads:
 * each thread's tiles and packed head (O(S D), no O(T S)). */
size_t ts_attn_scratch(const ts_attn_geom *geo, int backward);
/* y = attention(q, k, v) and lse (ops/attention.c's contract). The threads use scratch (a thread
 * beyond what it holds mallocs its own). TS_ERR_NOMEM when a thread's tile buffers cannot be had. */
ts_status ts_attn_forward(const ts_attn_geom *geo, void *scratch, size_t scratch_bytes, const void *q, const void *k,
                          const void *v, float *y, float *lse);
ts_status ts_attn_backward(const ts_attn_geom *geo, void *scratch, size_t scratch_bytes, const void *q, const void *k,
                           const void *v, const float *y,
                           const float *lse, const float *gy, float *gq, float *gk, float *gv);

#endif
