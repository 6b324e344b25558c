/*
 * run_onnx.c — `tessera run --model MODEL.onnx`: one inference of an ONNX model
 * (ts_onnx_run_file: the inputs read by the model's input names from a safetensors file, every
 * output written by name), its failures mapped to the exit codes and its report printed.
 */
#include "cli.h"
#include "tessera_apps.h"

/* The exit code and message of a failed run, by where it failed. */
static int run_failed(const ts_onnx_run_report *r, ts_status st) {
    static const char *const prefix[] = {"", "--model: ", "--inputs: ", "", "", "", "--outputs: "};
    int at = r->failed_at >= 0 && r->failed_at <= TS_ONNX_RUN_AT_OUTPUTS ? r->failed_at : 0;
    fprintf(stderr, "tessera run: %s%s\n", prefix[at], cli_error());
    if (at == TS_ONNX_RUN_AT_RUN)
        return st == TS_ERR_UNSUPPORTED || st == TS_ERR_IO || st == TS_ERR_SHAPE || st == TS_ERR_DTYPE ? 2 : 1;
    return at == TS_ONNX_RUN_AT_COMPILE || at == TS_ONNX_RUN_AT_OUTPUTS || at == TS_ONNX_RUN_AT_NONE ? 1 : 2;
}

int cli_run_onnx(const char *model, const char *inputs, const char *outputs, const char *device, int threads,
                    int repeat, double memory_gib, int quantize) {
    ts_onnx_run_opts o = {.struct_size = sizeof o, .model = model, .inputs = inputs, .outputs = outputs,
                          .device = device, .threads = threads, .repeat = repeat,
                          .memory_limit = (size_t)(memory_gib * 1073741824.0), .quantize = quantize};
    ts_onnx_run_report r = {.struct_size = sizeof r};
    ts_status st = ts_onnx_run_file(&o, &r);
    int rc = st == TS_OK ? 0 : run_failed(&r, st);
    if (!rc) {
        printf("tessera run: %s (ONNX opset %d), %d input%s on %s: load %.3f s, import+compile+run %.3f s", model,
               r.opset, r.ninputs, r.ninputs == 1 ? "" : "s", device, r.load_seconds, r.first_seconds);
        if (repeat > 1) printf(", run %.4f s (best of %d more)", r.best_seconds, repeat - 1);
        printf("\ntessera run: wrote %s:", outputs);
        for (int j = 0; j < r.noutputs; j++) {
            printf(" %s [", r.output_names[j]);
            for (int d = 0; d < ts_tensor_ndim(r.outputs[j]); d++)
                printf("%s%lld", d ? ", " : "", (long long)ts_tensor_shape(r.outputs[j])[d]);
            printf("] %s", ts_dtype_name(ts_tensor_dtype(r.outputs[j])));
        }
        printf("\n");
    }
    ts_onnx_run_report_free(&r);
    return rc;
}
