/*
 * device_query.c — a device asked by name from the public API (tessera_backend.h): its backend's
 * table and its memory, for a caller outside the runtime (the device profiler, apps/plan/) that
 * sees no ts_device; and its options (ts_device_set_option: "fallback" here, the built-in CPU's
 * own in backend/cpu/cpu_backend.c). The device is opened as ts_compile opens it (registry.c's
 * ts_device_get).
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
