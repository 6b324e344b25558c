/*
 * files.c — the command's paths and files: where it finds the data it did not get a flag for
 * (models that scripts/install-deps.sh fetches: $TESSERA_DATA, the installed data directory, the
 * build's source tree data/; cli_data_dir, for `tessera ocr` and the speech commands),
 * cli_path_join (the library's checked ts_path_join for use in an expression), and cli_read_text
 * (ts_read_file, standard input too).
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
    return dir && ts_path_join(buf, cap, dir, name) == TS_OK ? buf : NULL; /* dir NULL: cli_data_dir's error stands */
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

char *cli_read_text(const char *path, size_t *len) {
    return ts_read_file(strcmp(path, "-") ? path : "/dev/stdin", len); /* to the end: a pipe has no size */
}
