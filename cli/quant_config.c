/*
 * quant_config.c — the "quantization" record of a model directory's config.json, which `tessera
 * quantize` writes and every command that compiles a model directory reads (cli.h):
 *   "quantization": {"mode": "dynamic", "weights": "int8 per channel", "activations": "int8 per tensor, per run"}
 *   "quantization": {"mode": "static", "method": "entropy", "samples": 256, "weights": "int8 per channel",
 *                    "activations": "int8 per tensor, calibrated", "scales": {"<weight>": 0.0123, ...}}
 * Read with a plain text scan (the keys and their order are ours; the rest of the config was
 * parsed already by ts_bert_config_load). A weight name holds no '"' or '\' (tessera's and
 * Hugging Face's names do not; the writer refuses one that does).
 */
#include <math.h>

#include "cli.h"

char *cli_read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) free(buf), buf = NULL;
        else buf[n] = 0, *len = (size_t)n;
    }
    fclose(f);
    return buf;
}

/* The "quantization" object's text in config s (NULL: none), its mode into *mode. */
static const char *record(const char *s, int *mode) {
    const char *q = s ? strstr(s, "\"quantization\"") : NULL, *end = q ? strchr(q, '}') : NULL;
    const char *m = q ? strstr(q, "\"mode\"") : NULL;
    *mode = TS_QUANT_NONE;
    if (!m || !end || m > end) return NULL;
    const char *v = strchr(m + 6, '"');
    if (v && !strncmp(v, "\"dynamic\"", 9)) *mode = TS_QUANT_DYNAMIC;
    if (v && !strncmp(v, "\"static\"", 8)) *mode = TS_QUANT_STATIC;
    return q;
}

int cli_model_quantized(const char *dir) {
    char path[4200];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *s = cli_read_text(path, &len);
    int mode;
    record(s, &mode);
    free(s);
    return mode;
}

/* Parse the scales object at p ('{' ...) into q. 0, or -1 at the first malformed entry. */
static int parse_scales(const char *p, cli_quant *q) {
    int cap = 0;
    p++;
    for (;;) {
        while (isspace((unsigned char)*p) || *p == ',') p++;
        if (*p == '}') return 0;
        const char *end = *p == '"' ? strchr(p + 1, '"') : NULL;
        if (!end) return -1;
        char *num;
        const char *colon = end + 1;
        while (isspace((unsigned char)*colon)) colon++;
        if (*colon != ':') return -1;
        double v = strtod(colon + 1, &num);
        if (num == colon + 1) return -1;
        if (q->n == cap) {
            cap = cap ? 2 * cap : 64;
            ts_quant_scale *s = realloc(q->scales, sizeof *s * (size_t)cap);
            if (!s) return -1;
            q->scales = s;
        }
        char *name = strndup(p + 1, (size_t)(end - p - 1));
        if (!name) return -1;
        q->scales[q->n++] = (ts_quant_scale){name, (float)v};
        p = num;
    }
}

int cli_model_quant_load(const char *cmd, const char *dir, cli_quant *q) {
    char path[4200];
    size_t len = 0;
    memset(q, 0, sizeof *q);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *s = cli_read_text(path, &len);
    const char *r = record(s, &q->mode);
    int rc = 0;
    if (r && q->mode == TS_QUANT_STATIC) {
        const char *sc = strstr(r, "\"scales\""), *open = sc ? strchr(sc, '{') : NULL;
        if (!open || parse_scales(open, q) || q->n == 0) {
            fprintf(stderr, "tessera %s: %s: the \"quantization\" record of mode \"static\" has no readable \"scales\" "
                            "object ({\"<weight>\": scale, ...}); quantize the model again\n", cmd, path);
            cli_quant_free(q);
            rc = 2;
        }
    }
    free(s);
    return rc;
}

void cli_quant_free(cli_quant *q) {
    for (int i = 0; i < q->n; i++) free((char *)q->scales[i].weight);
    free(q->scales);
    memset(q, 0, sizeof *q);
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
