/*
 * data_dir.c — where the data scripts/install-deps.sh fetches is found when no path is given
 * (tessera_apps.h: ts_data_dir): the OCR and speech models of `tessera ocr`, `kws` and `vad`.
 */
#include "common/app.h"

#include <stdio.h>
#include <unistd.h>

#ifndef TS_DATA_SOURCE_DIR
#define TS_DATA_SOURCE_DIR "data"
#endif
#ifndef TS_DATA_INSTALL_DIR
#define TS_DATA_INSTALL_DIR "/usr/local/share/tessera"
#endif

const char *ts_data_dir(const char *sub, const char *probe, char *buf, size_t cap) {
    if (!sub || !probe || !buf) return ts_set_error(TS_ERR_ARG, "ts_data_dir: NULL argument"), NULL;
    const char *env = getenv("TESSERA_DATA");
    if (env && *env) return ts_path_join(buf, cap, env, sub) == TS_OK ? buf : NULL;
    int n = snprintf(buf, cap, "%s/%s/%s", TS_DATA_INSTALL_DIR, sub, probe);
    if (n >= 0 && (size_t)n < cap && !access(buf, R_OK)) {
        snprintf(buf, cap, "%s/%s", TS_DATA_INSTALL_DIR, sub);
        return buf;
    }
    return ts_path_join(buf, cap, TS_DATA_SOURCE_DIR, sub) == TS_OK ? buf : NULL;
}
