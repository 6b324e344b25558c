/*
 * data_dir.c — where the tessera command finds the data it did not get a flag for (models that
 * scripts/install-deps.sh fetches): $TESSERA_DATA, the installed data directory, the build's
 * source tree data/ (cli.h: cli_data_dir). `tessera ocr` and the speech commands use it.
 */
#include <unistd.h>

#include "cli.h"

#ifndef TS_DATA_DIR
#define TS_DATA_DIR "data"
#endif
#ifndef TS_INSTALL_DATA_DIR
#define TS_INSTALL_DATA_DIR "/usr/local/share/tessera"
#endif

const char *cli_data_dir(const char *sub, const char *probe, char *buf, size_t cap) {
    const char *env = getenv("TESSERA_DATA");
    if (env && *env) {
        snprintf(buf, cap, "%s/%s", env, sub);
        return buf;
    }
    snprintf(buf, cap, "%s/%s/%s", TS_INSTALL_DATA_DIR, sub, probe);
    if (!access(buf, R_OK)) {
        snprintf(buf, cap, "%s/%s", TS_INSTALL_DATA_DIR, sub);
        return buf;
    }
    snprintf(buf, cap, "%s/%s", TS_DATA_DIR, sub);
    return buf;
}
