/*
 * ocr.c — `tessera ocr`: the lines of text in a PNG or JPEG image, read with PaddleOCR's PP-OCRv4
 * models (apps/ocr: ts_ocr_new, ts_ocr_run); here its flags and the lines printed as text or JSON.
 */
#include "cli.h"
#include "options.h"

#ifndef TS_DATA_DIR
#define TS_DATA_DIR "data"
#endif
#ifndef TS_INSTALL_DATA_DIR
#define TS_INSTALL_DATA_DIR "/usr/local/share/tessera"
#endif

#define CMD "ocr"

static const char *USAGE =
    "  Reads the lines of text in a PNG or JPEG image with PaddleOCR's PP-OCRv4 models (text\n"
    "  detection, a 0/180-degree direction classifier, recognition) and prints one line each, top\n"
    "  to bottom: its box (4 corners x,y from top-left, clockwise, in pixels), confidence, text,\n"
    "  separated by tabs.\n";

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

/* Read the lines of image with the models of o and print them: the exit code. */
static int run_ocr(const char *image, const ts_ocr_opts *o, int json, int show_time) {
    double t0 = ts_seconds();
    if (!o->models_dir) return cli_fail("ocr", "", 2); /* $TESSERA_DATA/ocr did not fit: ts_data_dir says so */
    ts_image *im = ts_image_read(image);
    if (!im) return cli_fail("ocr", "", 2);
    ts_ocr *ocr = ts_ocr_new(o);
    if (!ocr) {
        fprintf(stderr, "tessera ocr: %s\n", cli_error());
        if (ts_last_status() == TS_ERR_IO)
            fprintf(stderr, "tessera ocr: the models are fetched into data/ocr by `bash scripts/install-deps.sh`; "
                            "--model-store DIR or TESSERA_DATA (DIR/ocr) gives another directory\n");
        ts_image_free(im);
        return 2;
    }
    double t1 = ts_seconds();
    ts_ocr_line *lines = NULL;
    int n = 0;
    ts_status s = ts_ocr_run(ocr, im, &lines, &n);
    double t2 = ts_seconds();
    if (s != TS_OK) {
        fprintf(stderr, "tessera ocr: %s: %s\n", image, cli_error());
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

int cli_ocr(int argc, char **argv) {
    char models_buf[4096];
    ts_ocr_opts o = {.struct_size = sizeof o, .lang = "ch",
                     .models_dir = ts_data_dir("ocr", "ch_PP-OCRv4_det_infer.onnx", models_buf, sizeof models_buf)};
    int json = 0, show_time = 0, int8 = 0;
    cli_strlist images = {0};
    const cli_opt opts[] = {
        {"image", CLI_ARGS, &images, 1, "IMAGE", "the PNG or JPEG image to read (one)", NULL},
        {"lang", CLI_STR, &o.lang, 0, "ch|en",
         "ch (default): Chinese and English, any of the 6,623 characters the model\n"
         "knows; en: the same model limited to printable ASCII (no full-width\n"
         "punctuation or Chinese look-alikes in English text).", NULL},
        {"json", CLI_FLAG, &json, 0, NULL,
         "print a JSON array of {\"box\": [[x, y], ...], \"confidence\": c, \"text\": t}.", NULL},
        {"threads", CLI_INT, &o.num_threads, 1, "N", "worker threads (default: OpenMP's).", NULL},
        {"model-store", CLI_STR, &o.models_dir, 0, "DIR",
         "ch_PP-OCRv4_det_infer.onnx, ch_PP-OCRv4_rec_infer.onnx,\n"
         "ch_ppocr_mobile_v2.0_cls_infer.onnx and ppocr_keys_v1.txt (default:\n"
         "$TESSERA_DATA/ocr when TESSERA_DATA is set, else\n"
         TS_INSTALL_DATA_DIR "/ocr when it holds them, else\n"
         TS_DATA_DIR "/ocr, fetched by scripts/install-deps.sh).", "models"},
        {"no-cls", CLI_FLAG, &o.no_cls, 0, NULL, "skip the direction classifier (every line taken as upright).", NULL},
        {"time", CLI_FLAG, &show_time, 0, NULL, "print the time taken on stderr.", NULL},
        {"int8", CLI_FLAG, &int8, 0, NULL,
         "run the models' convolutions and weight matmuls in int8 (dynamic\n"
         "quantization: weights per output channel, activations per tensor and run).", NULL},
        {"device", CLI_STR, &o.device, 0, "DEV", "run the models on device DEV (default cpu; e.g. opencl:0).",
         "devices"},
        {NULL, CLI_TEXT, NULL, 0, NULL,
         "Exit codes: 0 done (also when there is no text), 1 failed while running, 2 bad flags or files.\n", NULL},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, CMD, USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done_opts;
    rc = 2;
    if (images.n > 1) {
        fprintf(stderr, "tessera ocr: one image at a time ('%s' and '%s' given)\n"
                        "(tessera ocr --help shows the usage)\n", images.v[0], images.v[1]);
        goto done_opts;
    }
    o.quantize = int8 ? TS_QUANT_DYNAMIC : TS_QUANT_NONE;
    rc = run_ocr(images.v[0], &o, json, show_time);
done_opts:
    cli_opts_free(&os);
    return rc;
}
