/*
 * run_onnx.c — `tessera run --model MODEL.onnx`: one inference of an ONNX model through
 * ts_onnx_session, inputs read by the model's input names from a safetensors file (converted to
 * the declared dtype where no value changes meaning: ts_tensor_convert_exact), every output
 * written by name to a safetensors file. Integer inputs of one element are fixed for the import
 * (ts_onnx_session_fix), so an If on them is folded. --int8 compiles it with dynamic int8
 * quantization (ts_compile_opts.quantize).
 */
#include <math.h>

#include "cli.h"
#include "tessera.h"

int cli_run_onnx(const char *model, const char *inputs, const char *outputs, const char *device, int threads,
                    int repeat, double memory_gib, int quantize) {
    double t0 = ts_seconds();
    ts_onnx *m = ts_onnx_load(model);
    if (!m) return cli_fail("run", "--model: ", 2);
    double load_s = ts_seconds() - t0;
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
        fprintf(stderr, "tessera run: --inputs: %s\n", cli_error());
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
            fprintf(stderr, "tessera run: %s\n", cli_error());
            goto done;
        }
        ts_tensor *c = ts_tensor_convert_exact(t, want);
        if (c != t) ts_tensor_free(t);
        if (!c) {
            fprintf(stderr, "tessera run: %s: tensor \"%s\" %s\n", inputs, name, cli_error());
            goto done;
        }
        in[i] = c;
    }
    ts_safetensors_close(st);
    st = NULL;
    s = ts_onnx_session_new(m, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .device = device,
                                                  .num_threads = threads,
                                                  .memory_limit = (size_t)(memory_gib * 1073741824.0),
                                                  .quantize = quantize});
    if (!s) {
        fprintf(stderr, "tessera run: %s\n", cli_error());
        rc = 1;
        goto done;
    }
    for (int i = 0; i < nin; i++) /* one-element integer inputs fixed: see the usage text */
        if (ts_tensor_numel(in[i]) == 1 && ts_tensor_dtype(in[i]) != TS_F32 && ts_tensor_dtype(in[i]) != TS_F16 &&
            ts_tensor_dtype(in[i]) != TS_BF16 && ts_onnx_session_fix(s, ts_onnx_input_name(m, i), in[i]) != TS_OK) {
            fprintf(stderr, "tessera run: %s\n", cli_error());
            goto done;
        }
    rc = 1;
    double best = 0, first = 0;
    for (int r = 0; r < repeat; r++) {
        for (int j = 0; j < nout; j++) ts_tensor_free(out[j]), out[j] = NULL;
        double r0 = ts_seconds();
        if (ts_onnx_session_run(s, (const ts_tensor *const *)in, out) != TS_OK) {
            fprintf(stderr, "tessera run: %s\n", cli_error());
            rc = ts_last_status() == TS_ERR_UNSUPPORTED || ts_last_status() == TS_ERR_IO ||
                         ts_last_status() == TS_ERR_SHAPE || ts_last_status() == TS_ERR_DTYPE ? 2 : 1;
            goto done;
        }
        double dt = ts_seconds() - r0;
        if (r == 0) first = dt;
        else if (r == 1 || dt < best) best = dt;
    }
    for (int j = 0; j < nout; j++) names[j] = ts_onnx_output_name(m, j);
    if (ts_safetensors_save(outputs, nout, names, (const ts_tensor *const *)out, "{\"format\": \"pt\"}") != TS_OK) {
        fprintf(stderr, "tessera run: --outputs: %s\n", cli_error());
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
