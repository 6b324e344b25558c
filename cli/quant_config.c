/*
 * quant_config.c — the "quantization" record of a model directory's config.json (written by
 * ts_quantize_model_dir, `tessera quantize`) read for the commands that compile a model directory
 * (cli.h: cli_model_quant_load, over ts_quant_record_load), and the command's whole-file reader
 * (cli_read_text), which reads standard input too.
 */
#include "cli.h"

char *cli_read_text(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    int e = 0;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) /* to the end: a pipe has no size */
        if ((n += got) == cap) {
            char *nb = cap <= SIZE_MAX / 4 ? realloc(buf, cap * 2 + 1) : NULL;
            if (!nb) free(buf), e = ENOMEM;
            buf = nb, cap *= 2;
        }
    if (buf && ferror(f)) e = errno ? errno : EIO, free(buf), buf = NULL;
    if (f != stdin) fclose(f);
    if (!buf) {
        errno = e ? e : ENOMEM;
        return NULL;
    }
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int cli_model_quant_load(const char *cmd, const char *dir, ts_quant_record *q) {
    if (ts_quant_record_load(dir, q) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
    return 2;
}
