/*
 * backend.h — the device ABI. A backend is a struct of function pointers, found by name at run
 * time ("cpu"). The runtime plans memory and the schedule device-independently, then hands the
 * backend a ts_plan to compile and run. Entries marked optional may be NULL.
 */
#ifndef TS_BACKEND_H
#define TS_BACKEND_H

#include "ops/op.h"

/* What the runtime hands a backend: the graph after passes, the schedule, and the device
 * address of every live value (buf[v]; NULL for a value that is never materialised). */
typedef struct ts_plan {
    const ts_graph *g;
    const int *sched;   /* node ids in run order */
    int nsched;
    void **buf;         /* per value id */
    void *workspace;    /* scratch shared by all kernels, workspace_bytes long */
    size_t workspace_bytes;
} ts_plan;

typedef struct ts_backend ts_backend;
struct ts_backend {
    const char *name;
    /* Device memory, 64-byte aligned. alloc returns NULL on failure. */
    void *(*alloc)(const ts_backend *be, size_t bytes);
    void (*free)(const ts_backend *be, void *p);
    /* Host <-> device copies. */
    ts_status (*copy_in)(const ts_backend *be, void *dst, const void *src, size_t bytes);
    ts_status (*copy_out)(const ts_backend *be, void *dst, const void *src, size_t bytes);
    /* Prepare per-node state for a plan (e.g. create library primitives once). Sets *workspace
     * to the scratch bytes the plan needs (the runtime allocates it before the first run).
     * Returns the backend's compiled program in *out. Must not touch buffers yet. */
    ts_status (*compile)(const ts_backend *be, const ts_plan *plan, size_t *workspace, void **out);
    /* Run every node of the plan once; step seeds dropout. Buffers are set by then. */
    ts_status (*run)(const ts_backend *be, void *compiled, const ts_plan *plan, uint64_t step);
    void (*release)(const ts_backend *be, void *compiled);
    /* Bytes of memory the device has for programs (optional: NULL when unknown, and then no
     * program is refused for its size). */
    size_t (*memory_bytes)(const ts_backend *be);
    /* Wait for queued work (a no-op on synchronous devices). */
    ts_status (*synchronize)(const ts_backend *be);
    /* Collectives across replicas: optional, filled by the distributed work. `comm` is the
     * backend's communicator. */
    ts_status (*allreduce_sum)(const ts_backend *be, void *comm, float *buf, size_t n);
    ts_status (*broadcast)(const ts_backend *be, void *comm, void *buf, size_t bytes, int root);
    ts_status (*send)(const ts_backend *be, void *comm, const void *buf, size_t bytes, int peer);
    ts_status (*recv)(const ts_backend *be, void *comm, void *buf, size_t bytes, int peer);
};

/* The backend called name, or NULL (ts_last_error() lists the known names). */
const ts_backend *ts_backend_find(const char *name);

/* The CPU backend (backend/cpu). */
extern const ts_backend ts_backend_cpu;

#endif
