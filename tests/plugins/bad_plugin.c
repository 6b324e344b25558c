/*
 * bad_plugin.c — shared libraries that are not good plugins, one per BAD_KIND, for the loader's
 * errors (tests/test_plugin_load.c): 1, no TS_BACKEND_ENTRY at all (some other library); 2, a
 * table built for ABI 1.0; 3, a table without its required 'execute'.
 */
#include "tessera_backend.h"

#if BAD_KIND == 1
TS_PLUGIN_EXPORT int some_other_library_function(void);
int some_other_library_function(void) { return 1; }
#else
static int count(void) { return 1; }
static ts_status open_dev(const ts_device_args *a, void **dev) { (void)a; *dev = NULL; return TS_OK; }
static void close_dev(void *dev) { (void)dev; }
static ts_status alloc(void *dev, size_t n, void **mem) { (void)dev, (void)n; *mem = NULL; return TS_ERR_NOMEM; }
static void release_mem(void *dev, void *mem) { (void)dev, (void)mem; }
static ts_status to_dev(void *dev, ts_buffer d, const void *s, size_t n) { (void)dev, (void)d, (void)s, (void)n; return TS_OK; }
static ts_status to_host(void *dev, void *d, ts_buffer s, size_t n) { (void)dev, (void)d, (void)s, (void)n; return TS_OK; }
static int supports(void *dev, const ts_abi_node *n, const ts_abi_value *v) { (void)dev, (void)n, (void)v; return 0; }
static ts_status compile(void *dev, const ts_abi_plan *p, size_t *ws, void **exe) {
    (void)dev, (void)p, (void)ws, (void)exe;
    return TS_ERR_UNSUPPORTED;
}
static void release(void *dev, void *exe) { (void)dev, (void)exe; }

TS_PLUGIN_EXPORT const ts_backend_api *ts_backend_get_api(const ts_host_api *host);
const ts_backend_api *ts_backend_get_api(const ts_host_api *host) {
    (void)host;
    static ts_backend_api api;
    api.struct_size = sizeof api;
    api.abi_major = BAD_KIND == 2 ? 1 : TS_ABI_MAJOR;
    api.abi_minor = 0;
    api.name = BAD_KIND == 2 ? "oldabi" : "noexec";
    api.device_count = count, api.device_open = open_dev, api.device_close = close_dev;
    api.alloc = alloc, api.free = release_mem, api.copy_to_device = to_dev, api.copy_to_host = to_host;
    api.supports = supports, api.compile = compile, api.release = release;
    /* no execute */
    return &api;
}
#endif
