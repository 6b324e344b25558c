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

/* TS_API_HAS(api, field), whether a table has an entry: tessera_backend.h. */

typedef struct ts_device {
    const ts_backend_api *api;
    void *ctx;      /* the backend's context of this device */
    int index;
    char name[48];  /* "cpu" for index 0, else "cpu:1" */
    int busy;       /* a copy or execute is in progress (atomic; the one-thread-per-device rule) */
    int guarded;    /* a device of a backend other than the built-in CPU: its calls are checked
                       and named (registry.c) */
    volatile int inflight; /* guarded: a call into the backend is running (for the crash report) */
    unsigned long err_mark; /* ts_err_count() when it started: unmoved, the backend set no message */
    char call[320]; /* what that call is: "device x:1: execute of 12 nodes (gather .. add)" */
    struct ts_device *fallback; /* the CPU context that runs the nodes this device refuses */
    int is_fallback;            /* this is such a context (never found by name) */
    int no_fallback;            /* option "fallback" "none" (ts_device_set_option): every
                                   compile for it strict, as ts_compile_opts.strict_device */
} ts_device;

/* The device called name ("cpu", "cpu:0", "cpu:3"; "<backend>" is index 0), opened on first
 * use. NULL with a message naming the known backends or the index range. */
ts_device *ts_device_get(const char *name);
/* Its memory in bytes (0: unknown). */
size_t ts_device_memory(const ts_device *d);
/* The CPU context that runs the nodes d does not (the CPU fallback): one of its own per device,
 * opened on first ask, kept for the process, named "cpu (fallback of D)". Calls on one device
 * come from one thread (the ABI's rule), and a pipeline runs each device from a thread of its
 * own: so two devices' fallbacks must not share one CPU context. NULL with the error set. */
ts_device *ts_device_fallback(ts_device *d);

/* The runtime's side of the calls, through the table. */
ts_status ts_dev_alloc(const ts_device *d, size_t bytes, ts_buffer *out);
void ts_dev_free(const ts_device *d, ts_buffer *b);
ts_status ts_dev_copy_in(const ts_device *d, ts_buffer dst, const void *src, size_t bytes);
ts_status ts_dev_copy_out(const ts_device *d, void *dst, ts_buffer src, size_t bytes);
/* Device to device (any two devices, of any backends): the backend's own copy when both are of
 * one backend and it has one, else through host memory. */
ts_status ts_dev_copy(const ts_device *dst_dev, ts_buffer dst, const ts_device *src_dev, ts_buffer src, size_t bytes);
/* Run a compiled plan (the backend's execute). */
ts_status ts_dev_execute(const ts_device *d, void *exe, const ts_abi_plan *plan, ts_buffer ws, uint64_t step);
/* Around a call into d's backend (registry.c; the wrappers here use them): enter records what
 * the call is (printf-style) and the thread's error count; leave returns the call's status, for
 * a guarded device with the failure named as below. Nothing for the built-in CPU. */
__attribute__((format(printf, 2, 3))) void ts_dev_enter(const ts_device *d, const char *fmt, ...);
ts_status ts_dev_leave(const ts_device *d, ts_status s);
/* Compile a plan (the backend's compile): *workspace bytes, *exe. */
ts_status ts_dev_compile(const ts_device *d, const ts_abi_plan *plan, size_t *workspace, void **exe);
/* The calls into a device of a plugin (any backend but the built-in CPU) are guarded: a failure
 * keeps the backend's message, prefixed with the device and the call ("device x: execute of 12
 * nodes (gather .. add): <the plugin's words>"), or says that the backend gave none; an alloc
 * that returns OK without memory is an error; and while a call runs, a fatal signal (SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE, SIGABRT) first writes which plugin, device and call were running to
 * stderr, then lets the process die as it would have (the handler before tessera's runs). */
static inline ts_buffer ts_buf_at(ts_buffer b, uint64_t off) { b.offset += off; return b; }

/* The ABI's view of tessera's IR (abi_view.c): a node (its op by name, value ids as in g) and a
 * value (dtype, shape, name, kind; no buffer). */
void ts_abi_node_from(const ts_node *n, ts_abi_node *a);
void ts_abi_value_from(const ts_val *x, ts_abi_value *a);
/* Does device d run node n of g (the backend's supports, on the node and the values it touches)? */
int ts_dev_supports(const ts_device *d, const ts_graph *g, const ts_node *n);
/* Wait for d's queued work (the backend's synchronize; nothing for a synchronous device). */
ts_status ts_dev_sync(const ts_device *d);
/* The largest single allocation d makes (0: no cap). */
size_t ts_dev_max_alloc(const ts_device *d);
/* tessera's services for backends (registry.c): what a plugin's entry is given. */
extern const ts_host_api ts_host;

/* The CPU backend's table (backend/cpu), built on the services in host (for the built-in one,
 * &ts_host; for the CPU backend built as a plugin, those the loading tessera passes). */
extern const ts_backend_api ts_backend_cpu_api;
const ts_backend_api *ts_cpu_backend_api(const ts_host_api *host);
/* The built-in CPU backend's options of device context ctx (named `device` in messages), as
 * ts_device_set_option sets them (backend/cpu/cpu_backend.c): TS_OK, or TS_ERR_ARG naming an
 * unknown key or value. */
ts_status ts_cpu_set_option(void *ctx, const char *device, const char *key, const char *value);
/* Is d one of the built-in CPU backend's devices ("cpu", "cpu:N"; not the CPU built as a plugin)? */
static inline int ts_device_is_builtin_cpu(const ts_device *d) { return d->api == &ts_backend_cpu_api; }

#endif
