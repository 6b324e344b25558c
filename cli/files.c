/*
 * files.c — the command's paths and files: cli_path_join (the library's checked ts_path_join for
 * use in an expression), and cli_read_text (ts_read_file, standard input too).
 */
#include "cli.h"

const char *cli_path_join(char *buf, size_t cap, const char *dir, const char *name) {
    return dir && ts_path_join(buf, cap, dir, name) == TS_OK ? buf : NULL; /* dir NULL: ts_data_dir's error stands */
}

char *cli_read_text(const char *path, size_t *len) {
    return ts_read_file(strcmp(path, "-") ? path : "/dev/stdin", len); /* to the end: a pipe has no size */
}
