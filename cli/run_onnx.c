/*
 * run_onnx.c — `tessera run --model MODEL.onnx`: one inference of an ONNX model through
 * ts_onnx_session, inputs read by the model's input names from a safetensors file (converted to
 * the declared dtype where no value changes meaning: between float types, between integer types
 * within range, booleans from u8 0 / 1), every output written by name to a safetensors file.
 */
#include <math.h>
#include <time.h>

#include "cli.h"
#include "tessera.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int is_float(ts_dtype d) { return d == TS_F32 || d == TS_F16 || d == TS_BF16; }

static double get(const ts_tensor *t, int64_t i) {
    const void *p = ts_tensor_data((ts_tensor *)t);
    uint16_t h;
    float f;
    switch (ts_tensor_dtype(t)) {
    case TS_F32: return ((const float *)p)[i];
    case TS_F16: h = ((const uint16_t *)p)[i], ts_f16_to_f32(&h, &f, 1); return f;
    case TS_BF16: h = ((const uint16_t *)p)[i], ts_bf16_to_f32(&h, &f, 1); return f;
    case TS_I32: return ((const int32_t *)p)[i];
    case TS_I64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* t converted to dtype `want` for input `name`: t itself when it already is, a new tensor, or NULL
 * after a message (a conversion that would change values). */
static ts_tensor *convert(ts_tensor *t, ts_dtype want, const char *path, const char *name) {
    ts_dtype have = ts_tensor_dtype(t);
    if (have == want) return t;
    if (is_float(want) != is_float(have)) {
        fprintf(stderr, "tessera run: %s: tensor \"%s\" is %s but the model's input is %s\n", path, name,
                ts_dtype_name(have), ts_dtype_name(want));
        return NULL;
    }
    ts_tensor *o = ts_tensor_new(want, ts_tensor_ndim(t), ts_tensor_shape(t));
    if (!o) {
        fprintf(stderr, "tessera run: %s\n", ts_last_error());
        return NULL;
    }
    void *d = ts_tensor_data(o);
    int64_t n = ts_tensor_numel(t);
    double lo = want == TS_I32 ? -2147483648.0 : want == TS_U8 ? 0 : -9223372036854775808.0;
    double hi = want == TS_I32 ? 2147483647.0 : want == TS_U8 ? 255 : 9223372036854775807.0;
    for (int64_t i = 0; i < n; i++) {
        double v = get(t, i);
        if (!is_float(want) && (v < lo || v > hi)) {
            fprintf(stderr, "tessera run: %s: tensor \"%s\" element %lld is %.0f, outside %s's range\n", path, name,
                    (long long)i, v, ts_dtype_name(want));
            ts_tensor_free(o);
            return NULL;
        }
        switch (want) {
        case TS_F32: ((float *)d)[i] = (float)v; break;
        case TS_F16: { float f = (float)v; ts_f32_to_f16(&f, (uint16_t *)d + i, 1); break; }
        case TS_BF16: { float f = (float)v; ts_f32_to_bf16(&f, (uint16_t *)d + i, 1); break; }
        case TS_I32: ((int32_t *)d)[i] = (int32_t)v; break;
        case TS_I64: ((int64_t *)d)[i] = ts_tensor_dtype(t) == TS_I64 ? ((const int64_t *)ts_tensor_data(t))[i] : (int64_t)v; break;
        default: ((uint8_t *)d)[i] = (uint8_t)v; break;
        }
    }
    return o;
}

int cli_run_onnx(const char *model, const char *inputs, const char *outputs, const char *device, int threads,
                    int repeat, double memory_gib) {
    double t0 = now_s();
    ts_onnx *m = ts_onnx_load(model);
    if (!m) {
        fprintf(stderr, "tessera run: --model: %s\n", ts_last_error());
        return 2;
    }
    double load_s = now_s() - t0;
    int nin = ts_onnx_num_inputs(m), nout = ts_onnx_num_outputs(m), rc = 2;
    ts_tensor **in = calloc((size_t)nin + 1, sizeof *in), **out = calloc((size_t)nout + 1, sizeof *out);
    const char **names = calloc((size_t)nout + 1, sizeof *names);
    ts_onnx_session *s = NULL;
    ts_safetensors *st = ts_safetensors_open(inputs);
    if (!in || !out || !names) {
        fprintf(stderr, "tessera run: out of memory\n");
        rc = 1;
        goto done;
    }
    if (!st) {
        fprintf(stderr, "tessera run: --inputs: %s\n", ts_last_error());
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        const char *name = ts_onnx_input_name(m, i);
        ts_dtype want;
        ts_onnx_input_shape(m, i, &want, NULL);
        ts_tensor *t = NULL;
        ts_status g = ts_safetensors_get(st, name, &t);
        if (g == TS_ERR_NOT_FOUND) {
            fprintf(stderr, "tessera run: %s: no tensor \"%s\" (the model %s has the input%s", inputs, name, model,
                    nin == 1 ? "" : "s");
            for (int k = 0; k < nin; k++) fprintf(stderr, " %s", ts_onnx_input_name(m, k));
            fprintf(stderr, ")\n");
            goto done;
        }
        if (g != TS_OK) {
            fprintf(stderr, "tessera run: %s\n", ts_last_error());
            goto done;
        }
        ts_tensor *c = convert(t, want, inputs, name);
        if (c != t) ts_tensor_free(t);
        if (!c) goto done;
        in[i] = c;
    }
    ts_safetensors_close(st);
    st = NULL;
    s = ts_onnx_session_new(m, &(ts_compile_opts){.device = device, .num_threads = threads,
                                                  .memory_limit = (size_t)(memory_gib * 1073741824.0)});
    if (!s) {
        fprintf(stderr, "tessera run: %s\n", ts_last_error());
        rc = 1;
        goto done;
    }
    rc = 1;
    double best = 0, first = 0;
    for (int r = 0; r < repeat; r++) {
        for (int j = 0; j < nout; j++) ts_tensor_free(out[j]), out[j] = NULL;
        double r0 = now_s();
        if (ts_onnx_session_run(s, (const ts_tensor *const *)in, out) != TS_OK) {
            fprintf(stderr, "tessera run: %s\n", ts_last_error());
            rc = ts_last_status() == TS_ERR_UNSUPPORTED || ts_last_status() == TS_ERR_IO ||
                         ts_last_status() == TS_ERR_SHAPE || ts_last_status() == TS_ERR_DTYPE ? 2 : 1;
            goto done;
        }
        double dt = now_s() - r0;
        if (r == 0) first = dt;
        else if (r == 1 || dt < best) best = dt;
    }
    for (int j = 0; j < nout; j++) names[j] = ts_onnx_output_name(m, j);
    if (ts_safetensors_save(outputs, nout, names, (const ts_tensor *const *)out, "{\"format\": \"pt\"}") != TS_OK) {
        fprintf(stderr, "tessera run: --outputs: %s\n", ts_last_error());
        goto done;
    }
    printf("tessera run: %s (ONNX opset %d), %d input%s on %s: load %.3f s, import+compile+run %.3f s", model,
           ts_onnx_opset(m), nin, nin == 1 ? "" : "s", device, load_s, first);
    if (repeat > 1) printf(", run %.4f s (best of %d more)", best, repeat - 1);
    printf("\ntessera run: wrote %s:", outputs);
    for (int j = 0; j < nout; j++) {
        printf(" %s [", names[j]);
        for (int d = 0; d < ts_tensor_ndim(out[j]); d++) printf("%s%lld", d ? ", " : "", (long long)ts_tensor_shape(out[j])[d]);
        printf("] %s", ts_dtype_name(ts_tensor_dtype(out[j])));
    }
    printf("\n");
    rc = 0;
done:
    ts_safetensors_close(st);
    ts_onnx_session_free(s);
    for (int i = 0; in && i < nin; i++) ts_tensor_free(in[i]);
    for (int j = 0; out && j < nout; j++) ts_tensor_free(out[j]);
    free(in);
    free(out);
    free(names);
    ts_onnx_free(m);
    return rc;
}
