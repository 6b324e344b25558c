/*
 * tessera_plugin.h — the device ABI, and all of tessera that a backend plugin sees: the table a
 * backend implements (ts_backend_api), the plan and values it is handed, the host's services
 * (ts_host_api) and the entry a plugin exports. It declares no function of the library: a plugin
 * includes this header and the generated op contract (tessera_ops.h, which includes this one)
 * and links nothing of tessera, so the same .so loads into the static `tessera` command, into a
 * program linked with libtessera.so, and into Python's. Every call's contract — ownership,
 * threading, errors, versioning — is in docs/backend-abi.md.
 *
 * A backend is one ts_backend_api table. It opens devices by index; each device has its own
 * context (the CPU: a oneDNN engine and stream of its own). Devices are named "<backend>" (index
 * 0) and "<backend>:<index>", the backend's name being ts_backend_api.name ("opencl", "opencl:1").
 * Memory is device memory, named by a handle the backend's alloc returned plus a byte offset
 * (ts_buffer), so a backend whose memory is not host-addressable (an OpenCL cl_mem) fits. The
 * runtime plans every buffer and the schedule; the backend compiles a plan (kernels chosen,
 * library primitives made) and executes it.
 *
 * Versioning, as XLA's PJRT C API: TS_ABI_MAJOR changes only with an incompatible change, and a
 * backend built for another major is refused at registration. Within a major, fields are only
 * ever appended to the structs below; every struct starts with struct_size, the size the
 * backend (or runtime) was built with, so either side can tell which fields the other has.
 */
#ifndef TESSERA_PLUGIN_H
#define TESSERA_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "tessera_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TS_ABI_MAJOR 2
#define TS_ABI_MINOR 1

/* What a value of a plan is (ts_abi_value.kind): a device may treat parameters and constants as
 * weights (prepacked once), and knows that inputs are written by the host between runs. */
typedef enum ts_abi_kind {
    TS_ABI_INPUT = 0,      /* fed by the host before a run */
    TS_ABI_PARAM = 1,      /* persistent, trainable (written by optimizer nodes, or by the host) */
    TS_ABI_STATE = 2,      /* persistent, not trainable (optimizer moments, accumulators) */
    TS_ABI_CONST = 3,      /* data held in the graph */
    TS_ABI_ACTIVATION = 4, /* the output of a node */
} ts_abi_kind;

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
    /* ABI 2.0 */
    int kind;         /* ts_abi_kind */
    int kept;         /* 1: a kept cast of a weight (the output of a cast of a PARAM or CONST in a
                         plan with param_gen): its buffer keeps its bytes across runs, and the
                         device may remake it only when *param_gen has moved */
} ts_abi_value;

/* One node of a plan: an op applied to values (indices into the plan's values; -1 for an absent
 * optional input), with its attributes as the op contract (tessera_ops.h) names them. */
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
    /* ABI 2.0 */
    int niattr;       /* how many of iattr the node set (the rest are 0) */
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
    /* Non-NULL when no node of the plan writes a parameter or constant (an inference program):
     * then weights change only between runs, by the host, which moves *param_gen each time. A
     * device may keep something derived from a weight (a prepacked copy, a kept cast) and remake
     * it when *param_gen has moved since it was made. */
    const uint64_t *param_gen;
    /* Profiling (ts_compile_opts.profile): per node of the plan, the nanoseconds its kernel took
     * and its calls; the device adds to them at every execute (for an asynchronous device: the
     * time from its own event timers). NULL: not profiled; may change between executes. */
    uint64_t *prof_ns, *prof_calls;
    /* The device adds here, at compile, the bytes its kernels keep for themselves across runs
     * (prepacked weights); reported as ts_memory.weight_copies. NULL: not counted. */
    size_t *kernel_bytes;
    /* ABI 2.1. Profiling: per node of the plan, the kernel the device ran it with where it chose
     * among several for that node (a short static string, "f32" for an int8 convolution it found
     * faster in f32; NULL: its one kernel), set by the device at execute. The runtime's profile
     * report shows it beside the op. NULL: not profiled. */
    const char **prof_kernel;
} ts_abi_plan;

/* How to open device `index` of a backend. */
typedef struct ts_device_args {
    size_t struct_size;
    int index;   /* 0 .. device_count - 1 */
} ts_device_args;

/* A backend. Entries marked optional may be NULL (or absent: beyond struct_size). Every call that
 * fails returns a status and sets the message (a plugin: host->error or ts_host_errorf; a backend
 * linked into the program: ts_abi_error of tessera_backend.h). Calls on one device come from one
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
    /* 1 when the device has a kernel for node (its op by name, its attributes, and the dtypes and
     * shapes of its inputs and outputs in values, the program's value table), else 0: a device
     * may take "sin" and refuse "erf", or refuse a matmul of bf16 inputs to an f32 output. Asked
     * of every node before compile (a node refused runs on the CPU, with copies, or is refused
     * with --strict-device), and of every node fusion would make before it makes it. Buffers of
     * values are not set yet. */
    int (*supports)(void *dev, const ts_abi_node *node, const ts_abi_value *values);
    /* Prepare an executable for a plan (choose kernels, make library primitives); set *workspace
     * to the scratch bytes it needs (the runtime allocates them) and *exe to the executable. Must
     * not touch the buffers' contents. */
    ts_status (*compile)(void *dev, const ts_abi_plan *plan, size_t *workspace, void **exe);
    /* Run every node of the plan once, in order. step seeds dropout (a mask is a function of the
     * graph's seed, the node and step only). workspace: the bytes compile asked for. */
    ts_status (*execute)(void *dev, void *exe, const ts_abi_plan *plan, ts_buffer workspace, uint64_t step);
    void (*release)(void *dev, void *exe);
    /* Wait until queued work is done (optional: a synchronous device needs none). tessera calls it
     * after execute, before it reads results or hands the device's buffers to another device. */
    ts_status (*synchronize)(void *dev);
    /* ABI 2.0 */
    /* The largest single allocation the device makes (OpenCL's CL_DEVICE_MAX_MEM_ALLOC_SIZE),
     * optional: 0 or NULL, no cap. tessera splits a program's arena so that no alloc exceeds it. */
    size_t (*max_alloc)(void *dev);
} ts_backend_api;

/* ------------------------------------------------------------------ plugins
 *
 * A plugin is a shared library that exports one symbol, TS_BACKEND_ENTRY:
 *
 *     TS_PLUGIN_EXPORT const ts_backend_api *ts_backend_get_api(const ts_host_api *host);
 *
 * tessera passes its services in `host` (errors, logging, memory, a clock), so a plugin never
 * links against libtessera: it includes this header and tessera_ops.h and nothing else of
 * tessera. The table returned must live until the process ends (a plugin is never unloaded). The
 * entry returns NULL after host->error(...) when the plugin cannot serve (its driver is missing). */
#define TS_BACKEND_ENTRY "ts_backend_get_api"
#define TS_PLUGIN_EXPORT __attribute__((visibility("default")))

typedef struct ts_host_api {
    size_t struct_size;
    int abi_major, abi_minor;  /* the host's TS_ABI_MAJOR, TS_ABI_MINOR */
    /* Record msg as the calling thread's error (what ts_last_error() returns) and return code:
     * every failing call of a backend sets its message so. */
    ts_status (*error)(ts_status code, const char *msg);
    /* A line for the user (level 0: information, 1: a warning): a notice of the library's
     * ("tessera: [warning: ]msg"), given to the sink the application set (ts_set_notice_sink;
     * the tessera command prints them on stderr), and dropped when it set none. */
    void (*log)(int level, const char *msg);
    /* Host memory aligned to `align` bytes (a power of two, at most 4096; 0: 64), and its free. */
    void *(*alloc)(size_t bytes, size_t align);
    void (*free)(void *p);
    /* A monotonic clock in nanoseconds (the one tessera's profiles use). */
    uint64_t (*now_ns)(void);
} ts_host_api;

typedef const ts_backend_api *(*ts_backend_get_api_fn)(const ts_host_api *host);

/* host->error with a printf format: for plugins, which have no ts_abi_error of their own. */
static inline ts_status ts_host_errorf(const ts_host_api *host, ts_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline ts_status ts_host_errorf(const ts_host_api *host, ts_status code, const char *fmt, ...) {
    char msg[1024];
    __builtin_va_list ap;
    __builtin_va_start(ap, fmt);
    __builtin_vsnprintf(msg, sizeof msg, fmt, ap);
    __builtin_va_end(ap);
    return host->error(code, msg);
}

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_PLUGIN_H */
