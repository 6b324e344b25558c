/*
 * bench/ocr.c — PaddleOCR's PP-OCRv4 detector (data/ocr/ch_PP-OCRv4_det_infer.onnx, installed by
 * scripts/install-deps.sh) on one [1, 3, S, S] image: tessera in f32, in int8 with each
 * convolution's kernel chosen by its own timings (the CPU's option conv_int8 "fastest", the
 * default), and in int8 with every convolution int8 ("always"), beside ONNX Runtime in f32 (its
 * CPU provider, graph optimisation "all": bench/ocr_ort.js in onnxruntime-node), in the same run.
 * Each tessera form is an ONNX session (ts_onnx_session, what `tessera run` and `tessera ocr` use);
 * its first run (import, compile, and for "fastest" the convolutions' timing) is printed apart, then
 * the three run in interleaved rounds after a warm-up; medians. The image is synthetic (the time
 * does not depend on it).
 *
 * Usage: bench/ocr [--size S (960)] [--runs R (7)] [--threads N (2)] [--no-peers]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tessera.h"
#include "tessera_onnx.h"

#define MODEL TS_SOURCE_DIR "/data/ocr/ch_PP-OCRv4_det_infer.onnx"

enum { NV = 3, MAX_RUNS = 64 };
static const char *const NAME[NV] = {"f32", "int8 (fastest)", "int8 (always)"};

/* One run of session s on x: seconds, or exits on failure. */
static double run_once(ts_onnx_session *s, const ts_tensor *x) {
    ts_tensor *y = NULL;
    double t = now();
    if (ts_onnx_session_run(s, (const ts_tensor *const[]){x}, &y) != TS_OK) {
        fprintf(stderr, "bench/ocr: %s\n", ts_last_error());
        exit(1);
    }
    t = now() - t;
    ts_tensor_free(y);
    return t;
}

int main(int argc, char **argv) {
    int size = 960, runs = 7, threads = 2, peers = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else {
            fprintf(stderr, "usage: bench/ocr [--size S] [--runs R (1-64)] [--threads N] [--no-peers]\n");
            return 2;
        }
    }
    if (size < 32 || size % 32 || runs < 1 || runs > MAX_RUNS || threads < 1) {
        fprintf(stderr, "bench/ocr: --size is a multiple of 32 (at least 32), --runs 1-64, --threads >= 1\n");
        return 2;
    }
    ts_onnx *m = ts_onnx_load(MODEL);
    if (!m) {
        printf("bench/ocr: skipped: %s (scripts/install-deps.sh installs it)\n", ts_last_error());
        return 0;
    }
    ts_tensor *x = ts_tensor_new(TS_F32, 4, (int64_t[]){1, 3, size, size});
    float *xv = ts_tensor_data(x);
    for (int64_t i = 0; i < ts_tensor_numel(x); i++) xv[i] = sinf((float)i * 0.001f);
    ts_onnx_session *s[NV];
    double first[NV], t[NV][MAX_RUNS];
    for (int k = 0; k < NV; k++) { /* the option is read when a session's program is compiled: its first run */
        if (ts_device_set_option("cpu", "conv_int8", k == 2 ? "always" : "fastest") != TS_OK) return 1;
        ts_compile_opts co = {.struct_size = sizeof co, .num_threads = threads, .quantize = k ? TS_QUANT_DYNAMIC : 0};
        s[k] = ts_onnx_session_new(m, &co);
        if (!s[k]) return fprintf(stderr, "bench/ocr: %s\n", ts_last_error()), 1;
        first[k] = run_once(s[k], x);
    }
    ts_device_set_option("cpu", "conv_int8", "fastest");
    for (int k = 0; k < NV; k++) run_once(s[k], x); /* warm-up */
    for (int r = 0; r < runs; r++)
        for (int k = 0; k < NV; k++) t[k][r] = run_once(s[k], x);
    double ort = NAN;
    char buf[4096] = "";
    if (peers) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "node '%s/bench/ocr_ort.js' '%s' --size %d --threads %d --runs %d 2>&1",
                 TS_SOURCE_DIR, MODEL, size, threads, runs);
        FILE *f = popen(cmd, "r");
        size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[got] = 0;
        if (f) pclose(f);
        double v;
        if (bench_numbers(buf, "\"ms\":", &v, 1)) ort = v;
    }
    printf("PP-OCRv4 detector, [1, 3, %d, %d], %d threads; median ms of %d interleaved runs after a warm-up\n", size,
           size, threads, runs);
    printf("%-26s %10s %14s %16s\n", "", "ms", "first run s", "ORT f32 / this");
    double med[NV];
    for (int k = 0; k < NV; k++) {
        med[k] = median_inplace(t[k], runs) * 1e3;
        printf("%-26s %10.1f %14.3f %16.2f\n", NAME[k], med[k], first[k], ort / med[k]);
    }
    printf("%-26s %10.1f\n", "ONNX Runtime f32", ort);
    printf("int8 (fastest) / f32 time: %.3f; int8 (always) / f32: %.3f\n", med[1] / med[0], med[2] / med[0]);
    if (peers && isnan(ort)) printf("(ONNX Runtime: not run: %s)\n", *buf ? buf : "no output from bench/ocr_ort.js");
    for (int k = 0; k < NV; k++) ts_onnx_session_free(s[k]);
    ts_tensor_free(x);
    ts_onnx_free(m);
    return 0;
}
