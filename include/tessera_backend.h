/*
 * tessera_backend.h — the device ABI: what a backend (the CPU backend built in, an accelerator
 * plugin later) implements so that tessera compiles and runs programs on its devices. The
 * contract of every call — ownership, threading, errors, versioning — is in docs/backend-abi.md;
 * this header declares it.
 *
 * A backend is one ts_backend_api table, registered once (ts_backend_register; the CPU backend
 * is registered by tessera itself). It opens devices by index; each device has its own context
 * (the CPU: a oneDNN engine and stream of its own). Memory is device memory, named by a handle
 * the backend's alloc returned plus a byte offset (ts_buffer), so a backend whose memory is not
 * host-addressable (an OpenCL cl_mem) fits. The runtime plans every buffer and the schedule; the
 * backend compiles a plan (kernels chosen, library primitives made) and executes it.
 *
 * Versioning, as XLA's PJRT C API: TS_ABI_MAJOR changes only with an incompatible change, and a
 * backend built for another major is refused at registration. Within a major, fields are only
 * ever appended to the structs below; every struct starts with struct_size, the size the
 * backend (or runtime) was built with, so either side can tell which fields the other has.
 */
#ifndef TESSERA_BACKEND_H
#define TESSERA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "tessera.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_ABI_MAJOR 1
#define TS_ABI_MINOR 0

/* Device memory: the handle alloc returned, and a byte offset into it. */
typedef struct ts_buffer {
    void *mem;
    uint64_t offset;
} ts_buffer;

/* One value of a plan: its dtype and shape, and where it lives (mem NULL: never materialised). */
typedef struct ts_abi_value {
    size_t struct_size;
    ts_dtype dtype;
    int ndim;
    int64_t shape[TS_MAX_DIMS];
    ts_buffer buf;
    const char *name; /* NULL when unnamed */
} ts_abi_value;

/* One node of a plan: an op applied to values (indices into the plan's values; -1 for an absent
 * optional input), with its attributes as the op's file in src/ops documents them. */
#define TS_ABI_MAX_IN 8
#define TS_ABI_MAX_OUT 4
#define TS_ABI_MAX_IATTR 12
typedef struct ts_abi_node {
    size_t struct_size;
    const char *op;   /* the op's name: "matmul", "add", ... (stable across versions) */
    int op_id;        /* tessera's id of the op in this build (not stable: use the name) */
    int nin, nout;
    int in[TS_ABI_MAX_IN];
    int out[TS_ABI_MAX_OUT];
    int64_t iattr[TS_ABI_MAX_IATTR];
    float fattr[4];
} ts_abi_node;

/* What the runtime hands a device to compile and execute: the nodes in run order and every
 * value they touch. Buffers are set before compile and may be moved (offsets changed) between
 * executions: a device reads values[v].buf at every execute. */
typedef struct ts_abi_plan {
    size_t struct_size;
    int nvalues;
    const ts_abi_value *values;
    int nnodes;
    const ts_abi_node *nodes;
    const void *internal; /* tessera's own graph and schedule: for the backends built into tessera
                             only; a plugin must use the tables above */
} ts_abi_plan;

/* How to open device `index` of a backend. */
typedef struct ts_device_args {
    size_t struct_size;
    int index;   /* 0 .. device_count - 1 */
} ts_device_args;

/* A backend. Entries marked optional may be NULL (or absent: beyond struct_size). Every call that
 * fails returns a status and sets the message with ts_abi_error. Calls on one device come from one
 * thread at a time; different devices may be called from different threads at once. */
typedef struct ts_backend_api {
    size_t struct_size;
    int abi_major, abi_minor; /* TS_ABI_MAJOR, TS_ABI_MINOR it was built with */
    const char *name;         /* "cpu": devices are named "<name>" (index 0) and "<name>:<index>" */
    /* How many devices can be opened (index 0 .. count - 1). */
    int (*device_count)(void);
    /* Open a device: its context in *dev (owned by the backend until device_close). */
    ts_status (*device_open)(const ts_device_args *args, void **dev);
    void (*device_close)(void *dev);
    /* Bytes of memory the device has for programs (optional: 0 or NULL when unknown). */
    size_t (*memory_bytes)(void *dev);
    /* Device memory, 64-byte aligned, not initialised; *mem is the handle. free(NULL) is a no-op. */
    ts_status (*alloc)(void *dev, size_t bytes, void **mem);
    void (*free)(void *dev, void *mem);
    /* Host <-> device copies of bytes, synchronous. */
    ts_status (*copy_to_device)(void *dev, ts_buffer dst, const void *src, size_t bytes);
    ts_status (*copy_to_host)(void *dev, void *dst, ts_buffer src, size_t bytes);
    /* Device -> device copy, synchronous, from src_dev (a device of this backend) to dev
     * (optional: without it the runtime copies through host memory). */
    ts_status (*copy_from_device)(void *dev, ts_buffer dst, void *src_dev, ts_buffer src, size_t bytes);
    /* 1 when the device has a kernel for op (by name) producing dtype, else 0. The runtime asks it
     * of every node before compile and reports every unsupported one at once. */
    int (*supports)(void *dev, const char *op, ts_dtype dtype);
    /* Prepare an executable for a plan (choose kernels, make library primitives); set *workspace
     * to the scratch bytes it needs (the runtime allocates them) and *exe to the executable. Must
     * not touch the buffers' contents. */
    ts_status (*compile)(void *dev, const ts_abi_plan *plan, size_t *workspace, void **exe);
    /* Run every node of the plan once, in order. step seeds dropout (a mask is a function of the
     * graph's seed, the node and step only). workspace: the bytes compile asked for. */
    ts_status (*execute)(void *dev, void *exe, const ts_abi_plan *plan, ts_buffer workspace, uint64_t step);
    void (*release)(void *dev, void *exe);
    /* Wait until queued work is done (optional: a synchronous device needs none). */
    ts_status (*synchronize)(void *dev);
} ts_backend_api;

/* Register a backend (the table must outlive its use). TS_ERR_UNSUPPORTED when it was built for
 * another ABI major than this tessera's, naming both (a newer or older minor is fine: fields are
 * only appended, and what one side lacks the other does without); TS_ERR_ARG when struct_size is
 * smaller than the ABI 1.0 table, a required entry is NULL, or the name is taken. */
TS_API ts_status ts_backend_register(const ts_backend_api *api);
/* Registered backends: how many, and the i-th (NULL when out of range); by name (NULL with an
 * error listing the known names). */
TS_API int ts_backend_count(void);
TS_API const ts_backend_api *ts_backend_at(int i);
TS_API const ts_backend_api *ts_backend_find(const char *name);

/* For a backend: record an error message for the calling thread (what ts_last_error() returns)
 * and return code. */
TS_API ts_status ts_abi_error(ts_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_BACKEND_H */
