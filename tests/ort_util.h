/*
 * ort_util.h — whether ONNX Runtime (onnxruntime-node) is there for the tests that compare with it
 * (through tools/ort_run.js): in $TS_ORT_MODULES (a node_modules directory), else in
 * tools/ort/node_modules, where `bash scripts/install-deps.sh` installs it; and node must run.
 * Include after test_util.h.
 */
#ifndef TS_ORT_UTIL_H
#define TS_ORT_UTIL_H

#include <unistd.h>

static inline int tu_ort_available(void) {
    char p[1024];
    const char *mods = getenv("TS_ORT_MODULES");
    snprintf(p, sizeof p, "%s/onnxruntime-node/package.json", mods && *mods ? mods : TS_SOURCE_DIR "/tools/ort/node_modules");
    return access(p, R_OK) == 0 && system("node --version >/dev/null 2>&1") == 0;
}

#endif
