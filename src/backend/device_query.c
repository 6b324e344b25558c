/*
 * device_query.c — a device asked by name from the public API (tessera_backend.h): its backend's
 * table and its memory, for a caller outside the runtime (the device profiler, apps/plan/) that
 * sees no ts_device; and its options (ts_device_set_option: "fallback" here, the built-in CPU's
 * own in backend/cpu/cpu_backend.c); and whether it runs the fused attention op. The device is
 * opened as ts_compile opens it (registry.c's ts_device_get).
 */
#include "backend/backend.h"

#include <stdio.h>
#include <string.h>

/* Device `device` opened (ts_device_get), or NULL with its error kept, prefixed with fn. */
static const ts_device *open_named(const char *device, const char *fn) {
    const ts_device *d = ts_device_get(device);
    if (!d) ts_err(ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME, "%s: %s", fn, ts_last_error());
    return d;
}

const ts_backend_api *ts_device_backend(const char *device) {
    const ts_device *d = open_named(device, "ts_device_backend");
    return d ? d->api : NULL;
}

size_t ts_device_memory_bytes(const char *device) {
    const ts_device *d = open_named(device, "ts_device_memory_bytes");
    return d ? ts_device_memory(d) : 0;
}

ts_status ts_device_set_option(const char *device, const char *key, const char *value) {
    if (!key || !value) return ts_err(TS_ERR_ARG, "ts_device_set_option: key or value is NULL");
    ts_device *d = (ts_device *)open_named(device, "ts_device_set_option");
    if (!d) return ts_last_status();
    if (!strcmp(key, "fallback")) {
        if (strcmp(value, "cpu") && strcmp(value, "none"))
            return ts_err(TS_ERR_ARG, "ts_device_set_option: device %s: option fallback is cpu or none, not '%s'",
                          d->name, value);
        d->no_fallback = !strcmp(value, "none");
        return TS_OK;
    }
    if (ts_device_is_builtin_cpu(d)) return ts_cpu_set_option(d->ctx, d->name, key, value);
    return ts_err(TS_ERR_ARG, "ts_device_set_option: device %s has no option '%s' (its options: fallback)", d->name,
                  key);
}

/* Ask d of the node that made value v of g. */
static int runs(const ts_device *d, const ts_graph *g, ts_value v) {
    return v != TS_NONE && g->vals[v].node >= 0 && ts_dev_supports(d, g, &g->nodes[g->vals[v].node]);
}

int ts_device_fuses_attention(const char *device) {
    const ts_device *d = open_named(device, "ts_device_fuses_attention");
    if (!d) return -1;
    if (ts_device_is_builtin_cpu(d) || !d->no_fallback) return 1;
    ts_graph *g = ts_graph_new(); /* q, k, v [1, 2, 4, 8], a padding mask [1, 1, 1, 4] */
    if (!g) return ts_err(TS_ERR_NOMEM, "ts_device_fuses_attention: out of memory"), -1;
    int64_t sh[4] = {1, 2, 4, 8};
    ts_value q = ts_input(g, "q", TS_F32, 4, sh), k = ts_input(g, "k", TS_F32, 4, sh), v = ts_input(g, "v", TS_F32, 4, sh);
    ts_value m = ts_input(g, "m", TS_F32, 4, (int64_t[]){1, 1, 1, 4});
    ts_value a = ts_attention(g, q, k, v, m, 0.35f, 0.f, TS_ATTN_BHTD, TS_F32);
    int yes = a == TS_NONE ? -1 : runs(d, g, a);
    if (yes < 0) ts_err(TS_ERR_RUNTIME, "ts_device_fuses_attention: %s", ts_graph_msg(g));
    ts_graph_free(g);
    return yes;
}
