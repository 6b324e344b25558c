/*
 * app.h — what every source of libtessera_apps includes first: the applications' public API
 * (tessera_apps.h, which includes the core's tessera.h and tessera_support.h: errors, struct
 * versioning, files, the clock), the base layouts of the applications' growable structs
 * (struct_base.h here), Nothing under src/:
 * the applications see the core through its public headers only.
 */
#ifndef TS_APPS_APP_H
#define TS_APPS_APP_H

#include "tessera_apps.h"
#include "tessera_backend.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/struct_base.h"

/* Seconds between a log's progress lines (ts_progress_to's period; 60 before it is set): phase.c. */
double app_progress_period(void);

/* 1 when a model for device should fuse its attention (ts_device_fuses_attention: the device runs
 * the fused op, or falls back to the CPU for it); else a BERT for it sets
 * ts_bert_config.eager_attention, so a device without fallback runs the unfused ops it has kernels
 * for. An unknown device: 1 (its compile fails). */
static inline bool app_fuses_attention(const char *device) { return ts_device_fuses_attention(device) != 0; }

#endif
