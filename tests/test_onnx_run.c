/*
 * test_onnx_run.c — ts_onnx_run_file (what `tessera run --model MODEL.onnx` does) without the
 * command: a Relu model written here (onnx_builder.h) run on a safetensors input, its output
 * written by name and kept in the report; the failures say where they happened (failed_at): a
 * model file that is missing, an inputs file that is missing, an input tensor that is missing
 * (the message names the model's inputs), an outputs file that cannot be written; and the
 * struct_size checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera_apps.h"
#include "test_util.h"
#include "onnx_builder.h"

/* relu.onnx (y = Relu(x), x f32 [2]) and x.safetensors ([1, -2]) in the current directory. */
static void write_files(void) {
    ob nodes[] = {ob_node("Relu", "r", "x", "y", OB_NONE, OB_NONE)};
    ob ins[] = {ob_value("x", OB_FLOAT, 1, (int64_t[]){2})}, outs[] = {ob_value("y", OB_FLOAT, 1, (int64_t[]){2})};
    ob m = ob_model(13, ob_graph("g", nodes, 1, ins, 1, outs, 1));
    FILE *f = fopen("relu.onnx", "wb");
    CHECK(f && fwrite(m.b, 1, m.n, f) == m.n, "writing relu.onnx");
    if (f) fclose(f);
    free(m.b);
    ts_tensor *x = ts_tensor_from(TS_F32, 1, (int64_t[]){2}, (float[]){1.f, -2.f});
    CHECK_OK(ts_safetensors_save("x.safetensors", 1, (const char *[]){"x"}, (const ts_tensor *const *)&x, NULL));
    ts_tensor_free(x);
    ts_tensor *z = ts_tensor_from(TS_F32, 1, (int64_t[]){2}, (float[]){1.f, -2.f});
    CHECK_OK(ts_safetensors_save("z.safetensors", 1, (const char *[]){"z"}, (const ts_tensor *const *)&z, NULL));
    ts_tensor_free(z);
}

static void test_run(void) {
    write_files();
    ts_onnx_run_opts o = {.struct_size = sizeof o, .model = "relu.onnx", .inputs = "x.safetensors",
                          .outputs = "y.safetensors", .repeat = 3};
    ts_onnx_run_report r = {.struct_size = sizeof r};
    CHECK_OK(ts_onnx_run_file(&o, &r));
    CHECK(r.failed_at == TS_ONNX_RUN_AT_NONE && r.opset == 13 && r.ninputs == 1 && r.noutputs == 1,
          "report: failed_at %d opset %d in %d out %d", r.failed_at, r.opset, r.ninputs, r.noutputs);
    CHECK(r.noutputs == 1 && !strcmp(r.output_names[0], "y"), "the output's name");
    if (r.noutputs == 1) {
        const float *y = ts_tensor_data(r.outputs[0]);
        CHECK(y[0] == 1.f && y[1] == 0.f, "relu: %g %g", y[0], y[1]);
    }
    CHECK(r.first_seconds >= 0 && r.best_seconds >= 0, "timings");
    ts_onnx_run_report_free(&r);
    ts_safetensors *st = ts_safetensors_open("y.safetensors");
    ts_tensor *y = NULL;
    CHECK(st && ts_safetensors_get(st, "y", &y) == TS_OK, "y.safetensors holds y");
    ts_tensor_free(y);
    ts_safetensors_close(st);
}

/* Each failure's stage, and its message. */
static void test_failures(void) {
    write_files();
    struct {
        const char *model, *inputs, *outputs, *msg;
        int at;
    } cases[] = {
        {"missing.onnx", "x.safetensors", "y.safetensors", "missing.onnx", TS_ONNX_RUN_AT_MODEL},
        {"relu.onnx", "missing.safetensors", "y.safetensors", "missing.safetensors", TS_ONNX_RUN_AT_INPUTS_FILE},
        {"relu.onnx", "z.safetensors", "y.safetensors",
         "z.safetensors: no tensor \"x\" (the model relu.onnx has the input x)", TS_ONNX_RUN_AT_INPUTS},
        {"relu.onnx", "x.safetensors", "no/such/dir/y.safetensors", "y.safetensors", TS_ONNX_RUN_AT_OUTPUTS},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ts_onnx_run_opts o = {.struct_size = sizeof o, .model = cases[c].model, .inputs = cases[c].inputs,
                              .outputs = cases[c].outputs};
        ts_onnx_run_report r = {.struct_size = sizeof r};
        CHECK(ts_onnx_run_file(&o, &r) != TS_OK, "case %zu ran", c);
        CHECK(r.failed_at == cases[c].at, "case %zu: failed_at %d, not %d", c, r.failed_at, cases[c].at);
        CHECK(strstr(ts_last_error(), cases[c].msg), "case %zu: %s", c, ts_last_error());
        ts_onnx_run_report_free(&r);
    }
    ts_onnx_run_opts o = {.struct_size = 3, .model = "relu.onnx", .inputs = "x.safetensors", .outputs = "y.safetensors"};
    ts_onnx_run_report r = {.struct_size = sizeof r};
    CHECK_STATUS(ts_onnx_run_file(&o, &r), TS_ERR_ARG);
    o.struct_size = sizeof o, r.struct_size = 3;
    CHECK_STATUS(ts_onnx_run_file(&o, &r), TS_ERR_ARG);
    CHECK_STATUS(ts_onnx_run_file(&o, NULL), TS_ERR_ARG);
    o.inputs = NULL, r.struct_size = sizeof r;
    CHECK_STATUS(ts_onnx_run_file(&o, &r), TS_ERR_ARG);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    (void)ob_const, (void)ob_attr_graph; /* onnx_builder.h's, unused here */
    char dir[] = "/tmp/ts_onnx_run_XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    RUN(test_run);
    RUN(test_failures);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) { /* left behind: harmless */ }
    return tu_finish("test_onnx_run");
}
