/*
 * features.c — the optional features this libtessera_apps was built with (ts_apps_build_features),
 * which CMakeLists.txt defines as TS_APPS_BUILD_FEATURES for this file alone.
 */
#include "common/app.h"

#ifndef TS_APPS_BUILD_FEATURES
#error "TS_APPS_BUILD_FEATURES is defined by CMakeLists.txt (the features of this build, e.g. \"images audio serve\")"
#endif

const char *ts_apps_build_features(void) { return TS_APPS_BUILD_FEATURES; }
