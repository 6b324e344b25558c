/*
 * test_ocr_parity.c — the three PaddleOCR models (PP-OCRv4 detector and recogniser, mobile
 * direction classifier; data/ocr from scripts/install-deps.sh) run by tessera's ONNX importer
 * against ONNX Runtime's outputs on the same real inputs: text rendered by ImageMagick and
 * normalised as each model expects (tests/fixtures/ocr, written by tools/make_ocr_fixtures.sh
 * with onnxruntime-node). Each output must agree within 1e-3 absolute, the acceptance of
 * issue 13; the largest difference is printed. Exit 77 (skipped) without data/ocr.
 */
#include "test_util.h"

#define MODELS TS_SOURCE_DIR "/data/ocr"
#define FIX TS_SOURCE_DIR "/tests/fixtures/ocr"

/* Run `model` on fixture `fix`'s "x" and compare with its tensor `out` (the ONNX output name). */
static void check_model(const char *model, const char *fix, const char *out) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.onnx", MODELS, model);
    ts_onnx *m = ts_onnx_load(path);
    CHECK(m != NULL, "%s", ts_last_error());
    snprintf(path, sizeof path, "%s/%s.safetensors", FIX, fix);
    ts_safetensors *st = ts_safetensors_open(path);
    CHECK(st != NULL, "%s", ts_last_error());
    ts_tensor *x = NULL, *want = NULL, *got = NULL;
    if (st) {
        CHECK_OK(ts_safetensors_get(st, "x", &x));
        CHECK_OK(ts_safetensors_get(st, out, &want));
    }
    ts_onnx_session *s = m ? ts_onnx_session_new(m, NULL) : NULL;
    if (m) CHECK(s != NULL, "%s", ts_last_error());
    if (s && x && want) {
        CHECK(ts_onnx_num_outputs(m) == 1 && !strcmp(ts_onnx_output_name(m, 0), out), "%s: output '%s'", model,
              ts_onnx_output_name(m, 0));
        CHECK_OK(ts_onnx_session_run(s, (const ts_tensor *const *)&x, &got));
    }
    if (got && want) {
        CHECK(ts_tensor_numel(got) == ts_tensor_numel(want) && ts_tensor_ndim(got) == ts_tensor_ndim(want),
              "%s: %lld values, ONNX Runtime %lld", model, (long long)ts_tensor_numel(got),
              (long long)ts_tensor_numel(want));
        double worst = 0;
        const float *a = ts_tensor_data(got), *b = ts_tensor_data(want);
        for (int64_t i = 0; i < ts_tensor_numel(want) && ts_tensor_numel(got) == ts_tensor_numel(want); i++) {
            double d = fabs((double)a[i] - b[i]);
            if (!(d <= worst)) worst = d; /* NaN counts as worst */
        }
        printf("  %-40s %-18s max |tessera - onnxruntime| = %.3g\n", model, out, worst);
        CHECK(worst <= 1e-3, "%s: differs from ONNX Runtime by %g (> 1e-3)", model, worst);
    }
    ts_tensor_free(x);
    ts_tensor_free(want);
    ts_tensor_free(got);
    ts_onnx_session_free(s);
    ts_safetensors_close(st);
    ts_onnx_free(m);
}

static void test_det(void) { check_model("ch_PP-OCRv4_det_infer", "det", "sigmoid_0.tmp_0"); }
static void test_rec(void) { check_model("ch_PP-OCRv4_rec_infer", "rec", "softmax_11.tmp_0"); }
static void test_cls(void) { check_model("ch_ppocr_mobile_v2.0_cls_infer", "cls", "softmax_0.tmp_0"); }

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (access(MODELS "/ch_PP-OCRv4_det_infer.onnx", R_OK) != 0)
        tu_skip("%s is missing (run: bash scripts/install-deps.sh)", MODELS);
    RUN(test_det);
    RUN(test_rec);
    RUN(test_cls);
    return tu_finish("test_ocr_parity");
}
