/*
 * tessera_backend.h — backends from the host's side: loading plugins, registering a table linked
 * into the program, listing what is registered, and ts_abi_error for a backend linked into the
 * program. The ABI itself (the table, the plan, the host's services) is tessera_plugin.h, which a
 * plugin includes instead of this: what is declared here is the library's, and a plugin loaded by
 * the static `tessera` command cannot link it.
 */
#ifndef TESSERA_BACKEND_H
#define TESSERA_BACKEND_H

#include "tessera.h"
#include "tessera_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Load the plugin at path (dlopen), call its entry with tessera's services and register the
 * table it returns. Each failure is one message naming the file: TS_ERR_NOT_FOUND when the file
 * is missing, TS_ERR_IO when it is not a shared library tessera can load (dlerror's words
 * included), TS_ERR_UNSUPPORTED when it exports no TS_BACKEND_ENTRY (not a tessera plugin), or
 * its table is for another ABI major, TS_ERR_ARG when the table lacks a required entry. Loading
 * a file already loaded returns TS_OK and does nothing. Thread-safe. */
TS_API ts_status ts_backend_load(const char *path);
/* Load backend `name` ("opencl") from the plugin directories, if it is not registered: each
 * directory of $TESSERA_PLUGIN_PATH (':'-separated), then the install's plugin directory
 * (<libdir>/tessera/plugins), as libtessera-<name>.so. TS_ERR_NOT_FOUND naming every place
 * looked when none has it. Called by the runtime when a device names an unknown backend. */
TS_API ts_status ts_backend_load_named(const char *name);

/* Register a backend (the table must outlive its use). TS_ERR_UNSUPPORTED when it was built for
 * another ABI major than this tessera's, naming both (a newer or older minor is fine: fields are
 * only appended, and what one side lacks the other does without); TS_ERR_ARG when struct_size is
 * smaller than the ABI 2.0 table, a required entry is NULL, or the name is taken. */
TS_API ts_status ts_backend_register(const ts_backend_api *api);
/* Registered backends: how many, and the i-th (NULL when out of range); by name (NULL with an
 * error listing the known names). */
TS_API int ts_backend_count(void);
TS_API const ts_backend_api *ts_backend_at(int i);
TS_API const ts_backend_api *ts_backend_find(const char *name);
/* Does backend table api have entry `field` (within the struct_size it was built with) and is it
 * set? For the optional entries: TS_API_HAS(api, copy_from_device). */
#define TS_API_HAS(api, field) \
    ((api)->struct_size >= offsetof(ts_backend_api, field) + sizeof((api)->field) && (api)->field)

/* The backend of device `device` ("cpu", "cpu:2", "opencl:1"; NULL or "": "cpu"), the device
 * opened as a program compiled for it opens it (loading the backend's plugin by name from the
 * plugin directories when it is not registered yet: ts_backend_load_named) and kept for the
 * process. The built-in CPU backend's devices give ts_backend_find("cpu"). NULL with the error
 * set: TS_ERR_ARG for a malformed name, TS_ERR_NOT_FOUND for an unknown backend or an index
 * beyond its devices, or what opening the device failed with. Thread-safe. */
TS_API const ts_backend_api *ts_device_backend(const char *device);
/* The bytes of memory device `device` (named as for ts_device_backend, opened as it does) has
 * for programs, as its backend reports them (what ts_compile checks a program against when
 * ts_compile_opts.memory_limit is 0). 0 when the backend reports none (memory_bytes absent or 0),
 * and 0 with the error set (ts_device_backend's) when there is no such device. Thread rule: as
 * ts_compile, which asks the device the same. */
TS_API size_t ts_device_memory_bytes(const char *device);
/* Whether a model for device `device` (named as for ts_device_backend) should use the fused
 * attention op (ts_attention): 1 when the device runs it natively (its backend's supports, asked
 * of a small f32 attention node with a mask), and when the device falls back to the CPU (its
 * option "fallback" is "cpu", the default: the CPU's kernel then runs the op, and the run gives
 * the CPU's bytes, as every run with fallback does); 0 when it refuses fallback ("fallback"
 * "none", ts_device_set_option) and does not run the op, so the model keeps the unfused ops
 * (matmul, softmax, dropout), which the device may run. 1 for the CPU. -1 with the error set
 * (ts_device_backend's) when there is no such device. Thread rule: as ts_compile. */
TS_API int ts_device_fuses_attention(const char *device);

/* For a backend linked into the program (ts_backend_register): record an error message for the
 * calling thread (what ts_last_error() returns) and return code. A plugin uses host->error
 * (ts_host_errorf) instead. */
TS_API ts_status ts_abi_error(ts_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_BACKEND_H */
