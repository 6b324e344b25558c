/*
 * request_onnx.c — a KServe v2 infer body decoded for an ONNX model: named tensors matched to the
 * model's inputs, each [b, d1, ...] with the dims after the first as declared and b at most the
 * batch the model was compiled for, the datatype of the input's kind (floats for a float input,
 * integers within range for an integer one), data flat or nested in row-major order. Every fault
 * fails with its reason as the thread's error (ts_set_error), answered as a 400. Pure, like request.c:
 * fuzz/fuzz_serve_request.c calls it.
 */
#include "serve/serve.h"

#include "common/json_number.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The KServe datatype of a dtype. */
static const char *kserve_name(ts_dtype d) {
    static const char *const names[] = {"FP32", "BF16", "FP16", "INT32", "INT64", "UINT8"};
    return (unsigned)d < sizeof names / sizeof *names ? names[d] : "?";
}

/* Whether request datatype `name` may feed an input of dtype d (the same kind: float or integer). */
static int fits(const char *name, ts_dtype d) {
    int is_float = !strcmp(name, "FP32") || !strcmp(name, "FP16") || !strcmp(name, "BF16") || !strcmp(name, "FP64");
    int is_int = !strncmp(name, "INT", 3) || !strncmp(name, "UINT", 4) || !strcmp(name, "BOOL");
    return (d == TS_F32 || d == TS_F16 || d == TS_BF16) ? is_float : is_int;
}

/* Write number v as element i of t (checked for its dtype). TS_OK or TS_ERR_ARG with the reason. */
static ts_status put(ts_tensor *t, int64_t i, double v, const char *name) {
    ts_dtype d = ts_tensor_dtype(t);
    void *p = ts_tensor_data(t);
    if (d == TS_F32) {
        if (!isfinite(v) || fabs(v) > 3.4e38)
            return ts_set_error(TS_ERR_ARG, "input %s: element %lld is not a finite f32", name, (long long)i);
        ((float *)p)[i] = (float)v;
        return TS_OK;
    }
    double lo = d == TS_U8 ? 0 : d == TS_I32 ? -2147483648.0 : -9.2e18, hi = d == TS_U8 ? 255 : d == TS_I32 ? 2147483647.0 : 9.2e18;
    if (d != TS_I32 && d != TS_I64 && d != TS_U8)
        return ts_set_error(TS_ERR_ARG, "input %s: its dtype %s is not one requests can carry", name, ts_dtype_name(d));
    char text[40];
    if (v != floor(v) || v < lo || v > hi)
        return ts_set_error(TS_ERR_ARG, "input %s: element %lld is %s, not a%s %s", name, (long long)i,
                            ts_json_number_text(v, text), v != floor(v) ? "n integer of" : "", ts_dtype_name(d));
    if (d == TS_I32) ((int32_t *)p)[i] = (int32_t)v;
    else if (d == TS_I64) ((int64_t *)p)[i] = (int64_t)v;
    else ((uint8_t *)p)[i] = (uint8_t)v;
    return TS_OK;
}

static ts_status flatten(const cJSON *data, ts_tensor *t, int64_t *n, const char *name, int depth) {
    if (depth > TS_MAX_DIMS + 1) return ts_set_error(TS_ERR_ARG, "input %s: data nested too deep", name);
    if (cJSON_IsArray(data)) {
        ts_status st = TS_OK;
        for (const cJSON *e = data->child; e && !st; e = e->next) st = flatten(e, t, n, name, depth + 1);
        return st;
    }
    if (!cJSON_IsNumber(data) && !cJSON_IsBool(data))
        return ts_set_error(TS_ERR_ARG, "input %s: data holds a value that is not a number", name);
    double v = cJSON_IsBool(data) ? cJSON_IsTrue(data) : data->valuedouble;
    ts_status st = *n < ts_tensor_numel(t) ? put(t, *n, v, name) : TS_OK;
    ++*n;
    return st;
}

/* One element of "inputs" into in[k] (k: the model input it names); *rows: the first's b. TS_OK or
 * the error (ts_set_error). */
static ts_status decode_one(const serve_onnx_sig *sig, const cJSON *e, ts_tensor **in, int *rows) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    if (!cJSON_IsString(name)) return ts_set_error(TS_ERR_ARG, "an input without a \"name\" string");
    int k = 0;
    while (k < sig->nin && strcmp(sig->in[k].name, name->valuestring)) k++;
    if (k == sig->nin)
        return ts_set_error(TS_ERR_ARG, "unknown input '%.64s' (GET the model for its inputs)", name->valuestring);
    const serve_io *io = &sig->in[k];
    if (in[k]) return ts_set_error(TS_ERR_ARG, "input %s given twice", io->name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "datatype");
    if (!cJSON_IsString(dt) || !fits(dt->valuestring, io->dtype))
        return ts_set_error(TS_ERR_ARG, "input %s: datatype %.16s, but the model's input is %s", io->name,
                            cJSON_IsString(dt) ? dt->valuestring : "missing", kserve_name(io->dtype));
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != io->ndim)
        return ts_set_error(TS_ERR_ARG, "input %s: \"shape\" must have %d dims", io->name, io->ndim);
    int64_t dims[TS_MAX_DIMS];
    int d = 0;
    for (const cJSON *x = shape->child; x; x = x->next, d++) {
        double v = x->valuedouble;
        int64_t want = d ? io->shape[d] : sig->batch;
        if (!cJSON_IsNumber(x) || v != floor(v) || v < 1 || v > (double)want || (d && v != (double)want))
            return ts_set_error(TS_ERR_ARG, "input %s: dim %d is %s; the model takes %s%lld", io->name, d,
                                cJSON_IsNumber(x) ? ts_json_number_text(v, (char[40]){0}) : "not a number",
                                d ? "" : "1 to ", (long long)want);
        dims[d] = (int64_t)v;
    }
    if (*rows && dims[0] != *rows)
        return ts_set_error(TS_ERR_ARG, "input %s: batch %lld differs from the other inputs' %d", io->name,
                            (long long)dims[0], *rows);
    *rows = (int)dims[0];
    if (!(in[k] = ts_tensor_new(io->dtype, io->ndim, dims))) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(e, "data");
    if (!cJSON_IsArray(data)) return ts_set_error(TS_ERR_ARG, "input %s: no \"data\" array", io->name);
    int64_t n = 0;
    ts_status st = flatten(data, in[k], &n, io->name, 0);
    if (st) return st;
    if (n != ts_tensor_numel(in[k]))
        return ts_set_error(TS_ERR_ARG, "input %s: data holds %lld values, its shape wants %lld", io->name,
                            (long long)n, (long long)ts_tensor_numel(in[k]));
    return TS_OK;
}

ts_status serve_decode_named(const serve_onnx_sig *sig, const char *body, size_t len, ts_tensor **in, int *rows,
                             char *id) {
    for (int k = 0; k < sig->nin; k++) in[k] = NULL;
    *rows = 0;
    id[0] = 0;
    cJSON *root = serve_json_object(body, len);
    const cJSON *inputs = root ? cJSON_GetObjectItemCaseSensitive(root, "inputs") : NULL;
    ts_status rc = TS_OK;
    if (!root)
        rc = TS_ERR_ARG;
    else if (!cJSON_IsArray(inputs) || !inputs->child)
        rc = ts_set_error(TS_ERR_ARG, "no \"inputs\" array");
    for (const cJSON *e = inputs ? inputs->child : NULL; e && !rc; e = e->next)
        rc = cJSON_IsObject(e) ? decode_one(sig, e, in, rows)
                               : ts_set_error(TS_ERR_ARG, "an element of \"inputs\" is not an object");
    for (int k = 0; k < sig->nin && !rc; k++)
        if (!in[k]) rc = ts_set_error(TS_ERR_ARG, "input %s is missing", sig->in[k].name);
    const cJSON *rid = root ? cJSON_GetObjectItemCaseSensitive(root, "id") : NULL;
    if (cJSON_IsString(rid)) snprintf(id, SERVE_NAME_MAX, "%s", rid->valuestring);
    cJSON_Delete(root);
    if (rc)
        for (int k = 0; k < sig->nin; k++) ts_tensor_free(in[k]), in[k] = NULL;
    return rc;
}
