/*
 * plugin.c — the CPU backend built a second time, as a plugin (libtessera-cpuplugin.so): the same
 * kernels as the built-in "cpu" (src/backend/cpu), registered as "cpuplugin" by whichever tessera
 * loads it (ts_backend_load). It carries its own copy of tessera's objects, all of them local to
 * it (plugin.map exports the entry alone), and reports its errors through the host's services.
 * What it is for: the loader and the ABI tested end to end without any device driver —
 * tests/test_plugin_load.c and tests/test_backend_ops.c load it with dlopen.
 */
#include "backend/backend.h"

#include <string.h>

static const ts_backend_api *cpu;

/* The collectives post to a communicator of the process (src/comm), and the plugin's copy of
 * tessera has a registry of its own, without the host's communicators: they stay on the host. */
static int plugin_supports(void *dev, const ts_abi_node *node, const ts_abi_value *values) {
    if (!strcmp(node->op, "comm_start") || !strcmp(node->op, "comm_wait")) return 0;
    return cpu->supports(dev, node, values);
}

TS_PLUGIN_EXPORT const ts_backend_api *ts_backend_get_api(const ts_host_api *host);

const ts_backend_api *ts_backend_get_api(const ts_host_api *host) {
    static ts_backend_api api;
    if (!host || host->struct_size < sizeof(ts_host_api) || host->abi_major != TS_ABI_MAJOR) {
        if (host && host->struct_size >= offsetof(ts_host_api, error) + sizeof host->error && host->error)
            host->error(TS_ERR_UNSUPPORTED, "cpuplugin: built for device ABI " "2.x; the host is another major");
        return NULL;
    }
    cpu = ts_cpu_backend_api(host);
    api = *cpu;
    api.name = "cpuplugin";
    api.supports = plugin_supports;
    return &api;
}
