/*
 * quant_config.c — the command's whole-file reader (cli_read_text), which reads standard input too.
 */
#include "cli.h"

char *cli_read_text(const char *path, size_t *len) {
    return ts_read_file(strcmp(path, "-") ? path : "/dev/stdin", len); /* to the end: a pipe has no size */
}
