/*
 * backend.h — devices inside the runtime: a registered backend (include/tessera_backend.h, the
 * ABI) and one of its opened devices, with the calls the runtime makes through the ABI table.
 * Devices are opened once, by name ("cpu", "cpu:2"), and kept for the life of the process.
 */
#ifndef TS_BACKEND_H
#define TS_BACKEND_H

#include <stddef.h>

#include "ops/op.h"
#include "tessera_backend.h"

/* Does the table have entry `field` (within the struct_size it was built with) and is it set? */
#define TS_API_HAS(api, field)                                                                    \
    ((api)->struct_size >= offsetof(ts_backend_api, field) + sizeof((api)->field) && (api)->field)

typedef struct ts_device {
    const ts_backend_api *api;
    void *ctx;      /* the backend's context of this device */
    int index;
    char name[48];  /* "cpu" for index 0, else "cpu:1" */
} ts_device;

/* The device called name ("cpu", "cpu:0", "cpu:3"; "<backend>" is index 0), opened on first
 * use. NULL with a message naming the known backends or the index range. */
ts_device *ts_device_get(const char *name);
/* Its memory in bytes (0: unknown). */
size_t ts_device_memory(const ts_device *d);

/* The runtime's side of the calls, through the table. */
ts_status ts_dev_alloc(const ts_device *d, size_t bytes, ts_buffer *out);
void ts_dev_free(const ts_device *d, ts_buffer *b);
ts_status ts_dev_copy_in(const ts_device *d, ts_buffer dst, const void *src, size_t bytes);
ts_status ts_dev_copy_out(const ts_device *d, void *dst, ts_buffer src, size_t bytes);
/* Device to device (any two devices, of any backends): the backend's own copy when both are of
 * one backend and it has one, else through host memory. */
ts_status ts_dev_copy(const ts_device *dst_dev, ts_buffer dst, const ts_device *src_dev, ts_buffer src, size_t bytes);
static inline ts_buffer ts_buf_at(ts_buffer b, uint64_t off) { b.offset += off; return b; }

/* What the built-in backends read of a plan through ts_abi_plan.internal. */
typedef struct ts_plan {
    const ts_graph *g;
    const int *sched;     /* node ids in run order */
    int nsched;
    ts_abi_value *values; /* per value id: the plan's value table (buffers live here) */
    /* ts_compile_opts.profile: per scheduled node, the nanoseconds spent in its kernel and its
     * calls, added to at each execute (runtime/profile.c); NULL: not profiled */
    uint64_t *prof_ns, *prof_calls;
    /* Non-NULL when no node of the program writes a parameter or constant (no optimizer update:
     * an inference program, not a pipeline stage): then they change only between runs, through
     * ts_value_write, which bumps *param_gen. A kernel may keep something derived from a weight
     * (backend/cpu/matmul_dnnl.c: a blocked copy) and remake it when *param_gen moves. */
    const uint64_t *param_gen;
    /* Per value, 1 for a kept cast of a weight: in a forward-only program with param_gen, a cast
     * of a parameter or constant (autocast's bf16 copy) has a buffer of its own that keeps it
     * across runs, and the CPU backend remakes it only on the first run after a weight was written
     * (backend/cpu/cast_kept.c). NULL: none. */
    const uint8_t *kept;
    /* The backend adds here, at compile, the bytes its kernels keep for themselves across runs
     * (prepacked weights); reported as ts_memory.weight_copies. NULL: not counted. */
    size_t *kernel_bytes;
} ts_plan;

/* The CPU backend's table (backend/cpu). */
extern const ts_backend_api ts_backend_cpu_api;

#endif
