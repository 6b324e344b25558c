/* version.c — the version of the library itself (ts_version), from the header's macros, and the
 * optional features it was built with (ts_build_features), which CMakeLists.txt defines as
 * TS_BUILD_FEATURES for this file alone. */
#include "tessera.h"

#define TS_STR_(x) #x
#define TS_STR(x) TS_STR_(x)

const char *ts_version(void) {
    return TS_STR(TESSERA_VERSION_MAJOR) "." TS_STR(TESSERA_VERSION_MINOR) "." TS_STR(TESSERA_VERSION_PATCH);
}

#ifndef TS_BUILD_FEATURES
#error "TS_BUILD_FEATURES is defined by CMakeLists.txt (the features of this build, e.g. \"onnx mpi\")"
#endif

const char *ts_build_features(void) { return TS_BUILD_FEATURES; }
