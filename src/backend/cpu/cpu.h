/*
 * cpu.h — the CPU backend's own kernels: ops for which it has something faster than the
 * reference kernel in src/ops (oneDNN primitives, fused AVX-512 loops).
 */
#ifndef TS_CPU_H
#define TS_CPU_H

#include "backend/backend.h"

typedef struct ts_cpu_kernel {
    int op;
    /* Called once at compile time: build per-node state and report scratch bytes. Optional. */
    ts_status (*prepare)(const ts_graph *g, const ts_node *n, void **state, size_t *scratch);
    ts_status (*run)(const ts_kargs *a);
    void (*release)(void *state); /* optional */
} ts_cpu_kernel;

/* The kernel the CPU backend uses for op, or NULL for the reference one. */
const ts_cpu_kernel *ts_cpu_kernel_for(int op);

#endif
