/*
 * ocr.c — `tessera ocr`: the lines of text in a PNG or JPEG image, read with PaddleOCR's PP-OCRv4
 * models (ts_ocr_new / ts_ocr_run, src/ocr/).
 *
 *   tessera ocr IMAGE [--lang ch|en] [--json] [--threads N] [--models DIR] [--no-cls] [--time] [--int8]
 *
 * Prints one line per line of text, in reading order:
 *   x0,y0 x1,y1 x2,y2 x3,y3<TAB>confidence<TAB>text
 * (the corners top-left, top-right, bottom-right, bottom-left in image pixels), or with --json
 * one JSON array of {"box": [[x, y] x 4], "confidence": c, "text": "..."}. The models are looked
 * for in --models DIR, else in $TESSERA_DATA/ocr, else in the installed data directory's ocr/
 * (TS_INSTALL_DATA_DIR, <prefix>/share/tessera, set by CMake) when it holds them, else in the
 * build's source tree data/ocr (TS_DATA_DIR), where scripts/install-deps.sh puts them.
 */
#include <unistd.h>

#include "cli.h"
#include "tessera.h"

#ifndef TS_DATA_DIR
#define TS_DATA_DIR "data"
#endif
#ifndef TS_INSTALL_DATA_DIR
#define TS_INSTALL_DATA_DIR "/usr/local/share/tessera"
#endif

#define CMD "ocr"

static const char *USAGE =
    "usage: tessera ocr IMAGE [--lang ch|en] [--json] [--threads N] [--models DIR] [--no-cls] [--time]\n"
    "                  [--int8]\n"
    "  Reads the lines of text in a PNG or JPEG image with PaddleOCR's PP-OCRv4 models (text\n"
    "  detection, a 0/180-degree direction classifier, recognition) and prints one line each, top\n"
    "  to bottom: its box (4 corners x,y from top-left, clockwise, in pixels), confidence, text,\n"
    "  separated by tabs.\n"
    "  --lang ch|en    ch (default): Chinese and English, any of the 6,623 characters the model\n"
    "                  knows; en: the same model limited to printable ASCII (no full-width\n"
    "                  punctuation or Chinese look-alikes in English text).\n"
    "  --json          print a JSON array of {\"box\": [[x, y], ...], \"confidence\": c, \"text\": t}.\n"
    "  --threads N     worker threads (default: OpenMP's).\n"
    "  --models DIR    ch_PP-OCRv4_det_infer.onnx, ch_PP-OCRv4_rec_infer.onnx,\n"
    "                  ch_ppocr_mobile_v2.0_cls_infer.onnx and ppocr_keys_v1.txt (default:\n"
    "                  $TESSERA_DATA/ocr when TESSERA_DATA is set, else\n"
    "                  " TS_INSTALL_DATA_DIR "/ocr when it holds them, else\n"
    "                  " TS_DATA_DIR "/ocr, fetched by scripts/install-deps.sh).\n"
    "  --no-cls        skip the direction classifier (every line taken as upright).\n"
    "  --time          print the time taken on stderr.\n"
    "  --int8          run the models' convolutions and weight matmuls in int8 (dynamic\n"
    "                  quantization: weights per output channel, activations per tensor and run).\n"
    "  --devices D     run the models on device D (default cpu; e.g. opencl:0).\n"
    "Exit codes: 0 done (also when there is no text), 1 failed while running, 2 bad flags or files.\n";

static void print_lines(const ts_ocr_line *lines, int n, int json) {
    if (json) printf("[");
    for (int i = 0; i < n; i++) {
        const ts_ocr_line *l = &lines[i];
        if (json) {
            printf("%s\n  {\"box\": [", i ? "," : "");
            for (int k = 0; k < 4; k++) printf("%s[%.0f, %.0f]", k ? ", " : "", l->box[k][0], l->box[k][1]);
            printf("], \"confidence\": %.4f, \"text\": ", l->confidence);
            cli_json_string(stdout, l->text);
            printf("}");
        } else {
            for (int k = 0; k < 4; k++) printf("%s%.0f,%.0f", k ? " " : "", l->box[k][0], l->box[k][1]);
            printf("\t%.4f\t%s\n", l->confidence, l->text);
        }
    }
    if (json) printf("%s]\n", n ? "\n" : "");
}

/* Where the models are without --models: $TESSERA_DATA/ocr, else the installed data directory's
 * ocr/ when it holds the detector, else the build's data/ocr. */
static const char *default_models(char *buf, size_t cap) {
    return cli_data_dir("ocr", "ch_PP-OCRv4_det_infer.onnx", buf, cap);
}

int cli_ocr(int argc, char **argv) {
    char models_buf[4096];
    const char *image = NULL, *lang = "ch", *models = default_models(models_buf, sizeof models_buf), *v, *device = NULL;
    int json = 0, threads = 0, no_cls = 0, show_time = 0, int8 = 0, bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--no-cls")) {
            no_cls = 1;
        } else if (!strcmp(a, "--time")) {
            show_time = 1;
        } else if (!strcmp(a, "--int8")) {
            int8 = 1;
        } else if ((v = cli_value(argc, argv, &i, "--lang", CMD, &bad))) {
            if (strcmp(v, "ch") != 0 && strcmp(v, "en") != 0) {
                fprintf(stderr, "tessera ocr: --lang is ch or en, not '%s'\n", v);
                return 2;
            }
            lang = v;
        } else if ((v = cli_value(argc, argv, &i, "--threads", CMD, &bad))) {
            if ((threads = cli_positive(v, "--threads", CMD)) < 0) return 2;
            if (threads > ts_max_threads()) {
                fprintf(stderr, "tessera ocr: --threads %d is more than the %d this machine allows\n", threads,
                        ts_max_threads());
                return 2;
            }
        } else if ((v = cli_value(argc, argv, &i, "--models", CMD, &bad))) {
            models = v;
        } else if ((v = cli_value(argc, argv, &i, "--devices", CMD, &bad))) {
            device = v;
        } else if (!bad && a[0] == '-' && a[1]) {
            fprintf(stderr, "tessera ocr: unknown flag '%s'\n%s", a, USAGE);
            return 2;
        } else if (!bad) {
            if (image) {
                fprintf(stderr, "tessera ocr: one image at a time ('%s' and '%s' given)\n", image, a);
                return 2;
            }
            image = a;
        }
    }
    if (bad) return 2;
    if (!image) {
        fprintf(stderr, "tessera ocr: no IMAGE given\n%s", USAGE);
        return 2;
    }
    double t0 = ts_seconds();
    ts_image *im = ts_image_read(image);
    if (!im) return cli_fail("ocr", "", 2);
    ts_ocr *ocr = ts_ocr_new(&(ts_ocr_opts){.struct_size = sizeof(ts_ocr_opts), .models_dir = models, .lang = lang,
                                              .num_threads = threads, .no_cls = no_cls, .device = device,
                                              .quantize = int8 ? TS_QUANT_DYNAMIC : TS_QUANT_NONE});
    if (!ocr) {
        fprintf(stderr, "tessera ocr: %s\n", ts_last_error());
        if (ts_last_status() == TS_ERR_IO)
            fprintf(stderr, "tessera ocr: the models are fetched into data/ocr by `bash scripts/install-deps.sh`; "
                            "--models DIR or TESSERA_DATA (DIR/ocr) gives another directory\n");
        ts_image_free(im);
        return 2;
    }
    double t1 = ts_seconds();
    ts_ocr_line *lines = NULL;
    int n = 0;
    ts_status s = ts_ocr_run(ocr, im, &lines, &n);
    double t2 = ts_seconds();
    if (s != TS_OK) {
        fprintf(stderr, "tessera ocr: %s: %s\n", image, ts_last_error());
    } else {
        print_lines(lines, n, json);
        if (show_time)
            fprintf(stderr, "tessera ocr: %s: %d x %d pixels, %d lines in %.2f s (loading the models %.2f s)\n", image,
                    im->width, im->height, n, t2 - t0, t1 - t0);
    }
    ts_ocr_lines_free(lines, n);
    ts_ocr_free(ocr);
    ts_image_free(im);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tessera ocr: writing the output failed\n");
        return 1;
    }
    return s == TS_OK ? 0 : 1;
}
