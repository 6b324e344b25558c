/*
 * quant_config.c — the "quantization" record of a model directory's config.json, which `tessera
 * quantize` writes and every command that compiles a model directory reads (cli.h):
 *   "quantization": {"mode": "dynamic", "weights": "int8 per channel", "activations": "int8 per tensor, per run"}
 *   "quantization": {"mode": "static", "method": "entropy", "samples": 256, "weights": "int8 per channel",
 *                    "activations": "int8 per tensor, calibrated", "scales": {"<weight>": 0.0123, ...}}
 * Read by ts_quant_record_load (src/train/model_dir.c, which tessera serve uses too). A weight
 * name holds no '"' or '\' (tessera's and Hugging Face's names do not; the writer refuses one that
 * does).
 */
#include <math.h>

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

int cli_model_quantized(const char *dir) {
    ts_quant_record r;
    if (ts_quant_record_load(dir, &r) != TS_OK) return TS_QUANT_NONE;
    int mode = r.mode;
    ts_quant_record_free(&r);
    return mode;
}

int cli_model_quant_load(const char *cmd, const char *dir, ts_quant_record *q) {
    if (ts_quant_record_load(dir, q) == TS_OK) return 0;
    fprintf(stderr, "tessera %s: %s\n", cmd, cli_error());
    return 2;
}

char *cli_quant_record_json(const char *method, int samples, const ts_quant_scale *scales, int n) {
    size_t cap = 512 + (size_t)n * 32, len = 0;
    for (int i = 0; i < n; i++) cap += strlen(scales[i].weight);
    char *s = malloc(cap);
    if (!s) return NULL;
    if (!method) {
        snprintf(s, cap, "\"quantization\": {\"mode\": \"dynamic\", \"weights\": \"int8 per channel\", "
                         "\"activations\": \"int8 per tensor, per run\"}");
        return s;
    }
    len += (size_t)snprintf(s, cap, "\"quantization\": {\"mode\": \"static\", \"method\": \"%s\", \"samples\": %d, "
                            "\"weights\": \"int8 per channel\", \"activations\": \"int8 per tensor, calibrated\", "
                            "\"scales\": {", method, samples);
    for (int i = 0; i < n; i++) {
        if (strpbrk(scales[i].weight, "\"\\")) {
            free(s);
            return NULL;
        }
        len += (size_t)snprintf(s + len, cap - len, "%s\n    \"%s\": %.9g", i ? "," : "", scales[i].weight,
                                (double)scales[i].scale);
    }
    snprintf(s + len, cap - len, "}}");
    return s;
}
