/*
 * quant_record.c — the "quantization" record of a model directory's config.json, written by
 * `tessera quantize` (cli/quantize.c) and read by everything that compiles a model directory
 * (tessera run / eval / predict / export / serve):
 *   "quantization": {"mode": "dynamic", "weights": "int8 per channel", "activations": "int8 per tensor, per run"}
 *   "quantization": {"mode": "static", "method": "entropy", "samples": 256, "weights": "int8 per channel",
 *                    "activations": "int8 per tensor, calibrated", "scales": {"<weight>": 0.0123, ...}}
 */
#include "core/core.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

void ts_quant_record_free(ts_quant_record *r) {
    if (!r) return;
    for (int i = 0; i < r->nscales; i++) free((char *)r->scales[i].weight);
    free(r->scales);
    memset(r, 0, sizeof *r);
}

/* The scales object sc into r. TS_OK, or TS_ERR_ARG naming the entry that is not a number > 0. */
static ts_status read_scales(const cJSON *sc, ts_quant_record *r, const char *path) {
    int n = cJSON_GetArraySize(sc);
    r->scales = calloc((size_t)(n > 0 ? n : 1), sizeof *r->scales);
    if (!r->scales) return ts_err(TS_ERR_NOMEM, "%s: out of memory reading the scales", path);
    for (const cJSON *e = sc->child; e; e = e->next) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!(v > 0) || !isfinite(v) || !e->string)
            return ts_err(TS_ERR_ARG, "%s: \"quantization\" scale \"%s\" is not a finite number above 0", path,
                          e->string ? e->string : "?");
        char *name = strdup(e->string);
        if (!name) return ts_err(TS_ERR_NOMEM, "%s: out of memory reading the scales", path);
        r->scales[r->nscales++] = (ts_quant_scale){name, (float)v};
    }
    return TS_OK;
}

ts_status ts_quant_record_load(const char *dir, ts_quant_record *r) {
    memset(r, 0, sizeof *r);
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir ? dir : ".");
    FILE *f = fopen(path, "rb");
    if (!f) return TS_OK; /* no config: no record (the caller's own load names the missing file) */
    char *buf = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
        fread(buf, 1, (size_t)len, f) == (size_t)len)
        buf[len] = 0;
    else
        free(buf), buf = NULL;
    fclose(f);
    if (!buf) return ts_err(TS_ERR_IO, "%s: cannot be read", path);
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    const cJSON *q = root ? cJSON_GetObjectItemCaseSensitive(root, "quantization") : NULL;
    const cJSON *mode = q ? cJSON_GetObjectItemCaseSensitive(q, "mode") : NULL;
    ts_status st = TS_OK;
    if (q && !cJSON_IsString(mode)) {
        st = ts_err(TS_ERR_ARG, "%s: the \"quantization\" record has no \"mode\"", path);
    } else if (q && !strcmp(mode->valuestring, "dynamic")) {
        r->mode = TS_QUANT_DYNAMIC;
    } else if (q && !strcmp(mode->valuestring, "static")) {
        r->mode = TS_QUANT_STATIC;
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(q, "scales");
        if (!cJSON_IsObject(sc) || !sc->child)
            st = ts_err(TS_ERR_ARG, "%s: the \"quantization\" record of mode \"static\" has no \"scales\" object "
                        "({\"<weight>\": scale, ...}); quantize the model again", path);
        else
            st = read_scales(sc, r, path);
    } else if (q) {
        st = ts_err(TS_ERR_ARG, "%s: \"quantization\" mode \"%s\" is not \"dynamic\" or \"static\"", path,
                    mode->valuestring);
    }
    cJSON_Delete(root);
    if (st) ts_quant_record_free(r);
    return st;
}
