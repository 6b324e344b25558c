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

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/struct_base.h"

/* 1 when device runs the fused attention op natively: the CPU (NULL, "cpu", "cpu:N"). A BERT built
 * for another device sets ts_bert_config.eager_attention, so that device runs the unfused ops it
 * has kernels for, not the fused one by CPU fallback (or a refusal, with strict_device). */
static inline bool app_fuses_attention(const char *device) { return !device || !strncmp(device, "cpu", 3); }

#endif
