/*
 * data_dir.c — where the tessera command finds the data it did not get a flag for (models that
 * scripts/install-deps.sh fetches): $TESSERA_DATA, the installed data directory, the build's
 * source tree data/ (cli.h: cli_data_dir). `tessera ocr` and the speech commands use it. And
 * the command's one checked path join (cli_path_join; the library's, ts_path_join, is not public).
 */
#include <unistd.h>

#include "cli.h"

#ifndef TS_DATA_DIR
#define TS_DATA_DIR "data"
#endif
#ifndef TS_INSTALL_DATA_DIR
#define TS_INSTALL_DATA_DIR "/usr/local/share/tessera"
#endif

const char *cli_path_join(char *buf, size_t cap, const char *dir, const char *name) {
    if (!dir) return NULL; /* a failed cli_data_dir: its error stands */
    size_t ld = strlen(dir);
    const char *sep = ld && dir[ld - 1] != '/' ? "/" : "";
    int n = snprintf(buf, cap, "%s%s%s", dir, sep, name);
    if (n >= 0 && (size_t)n < cap) return buf;
    if (cap) buf[0] = 0;
    int cut = ld > 400 ? 400 : (int)ld; /* a huge dir is named by its start */
    ts_set_error(TS_ERR_ARG, "path too long (%d bytes, more than the %zu a path may have here): '%s' in '%.*s%s'", n,
                 cap ? cap - 1 : 0, name, cut, dir, (size_t)cut < ld ? "..." : "");
    return NULL;
}

const char *cli_data_dir(const char *sub, const char *probe, char *buf, size_t cap) {
    const char *env = getenv("TESSERA_DATA");
    if (env && *env) return cli_path_join(buf, cap, env, sub);
    snprintf(buf, cap, "%s/%s/%s", TS_INSTALL_DATA_DIR, sub, probe);
    if (!access(buf, R_OK)) {
        snprintf(buf, cap, "%s/%s", TS_INSTALL_DATA_DIR, sub);
        return buf;
    }
    snprintf(buf, cap, "%s/%s", TS_DATA_DIR, sub);
    return buf;
}
