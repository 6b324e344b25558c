/* registry.c — backends by name. A new device adds one line here and a folder under backend/. */
#include "backend/backend.h"

static const ts_backend *const backends[] = {&ts_backend_cpu};

const ts_backend *ts_backend_find(const char *name) {
    for (size_t i = 0; i < sizeof backends / sizeof *backends; i++)
        if (name && strcmp(backends[i]->name, name) == 0) return backends[i];
    ts_err(TS_ERR_NOT_FOUND, "unknown device '%s' (this build has: %s)", name ? name : "(null)", ts_devices());
    return NULL;
}

const char *ts_devices(void) { return "cpu"; }
