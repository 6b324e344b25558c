/*
 * tessera_ocr.h — images (PNG and JPEG decoded to RGB, resized, rotated) and OCR on
 * PaddleOCR's PP-OCR models.
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_OCR_H
#define TESSERA_OCR_H

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- images (apps/vision/)
 * PNG (libpng) and JPEG (libjpeg) files decoded to 8-bit RGB. The format is told by the file's
 * first bytes, never by its name. */

typedef struct ts_image {
    int width, height;
    uint8_t *rgb; /* height rows of width pixels, 3 bytes each (R, G, B); the top row first */
} ts_image;

/* Images are refused above this many pixels (a 10000 x 10000 image; 300 MB as RGB). */
#define TS_IMAGE_MAX_PIXELS 100000000

/* A new width x height image with every byte `fill` (255: white). NULL on a bad size. */
TS_API ts_image *ts_image_new(int width, int height, uint8_t fill);
TS_API void ts_image_free(ts_image *im);
/* Decode a PNG or JPEG file (or bytes; `what` names them in messages) to 8-bit RGB: gray is
 * repeated in R, G and B, a palette looked up, 16-bit samples scaled to 8 bits, transparency
 * composited on white, CMYK JPEGs converted. NULL, with ts_last_error() naming the file, when it
 * cannot be read, is neither a PNG nor a JPEG ("not a PNG or JPEG image"), is cut short or is
 * corrupt (libpng's or libjpeg's message), or is larger than TS_IMAGE_MAX_PIXELS. */
TS_API ts_image *ts_image_read(const char *path);
TS_API ts_image *ts_image_decode(const void *data, size_t n, const char *what);
/* Write an image as an 8-bit RGB PNG, atomically (a temporary file renamed over path). */
TS_API ts_status ts_image_write_png(const ts_image *im, const char *path);
/* A new image of width x height resampled from im, pixel centres aligned, no anti-aliasing when
 * shrinking: TS_INTERP_LINEAR bilinear (OpenCV's INTER_LINEAR), TS_INTERP_CUBIC bicubic (Keys,
 * a = -0.5). NULL on a bad size. */
typedef enum ts_interp { TS_INTERP_LINEAR = 0, TS_INTERP_CUBIC } ts_interp;
TS_API ts_image *ts_image_resize(const ts_image *im, int width, int height, ts_interp interp);
/* A new image: im turned by quarter_turns x 90 degrees counter-clockwise (any integer; 2: half a
 * turn). */
TS_API ts_image *ts_image_rotate(const ts_image *im, int quarter_turns);

/* ---------------------------------------------------------------- OCR (apps/ocr/)
 * Text in images read as PaddleOCR's PP-OCR system reads it, on its ONNX models run by tessera:
 * PP-OCRv4's DB detector finds the lines of text, each is cut out and straightened, a direction
 * classifier turns upside-down ones, and PP-OCRv4's recogniser reads them (CTC). The Chinese
 * ("ch") models read Chinese and English alike. */

typedef struct ts_ocr_opts {
    size_t struct_size; /* sizeof(ts_ocr_opts) (0: the 0.1.0 layout; see tessera.h) */
    const char *models_dir; /* where the four files below are, under these names (NULL: ".") */
    const char *det_model;  /* NULL: models_dir/ch_PP-OCRv4_det_infer.onnx */
    const char *rec_model;  /* NULL: models_dir/ch_PP-OCRv4_rec_infer.onnx */
    const char *cls_model;  /* NULL: models_dir/ch_ppocr_mobile_v2.0_cls_infer.onnx */
    const char *keys;       /* the recogniser's characters; NULL: models_dir/ppocr_keys_v1.txt */
    const char *lang;       /* "ch" (NULL): every character the recogniser knows (6,623 + space);
                               "en": only printable ASCII and the space, so that look-alikes
                               such as full-width punctuation cannot be read in English text */
    int no_cls;             /* 1: no direction classifier (every line is taken as upright) */
    int num_threads;        /* 0: OpenMP's default */
    int limit_side_len;     /* the detector sees the image scaled to at most this (0: 960) */
    float det_thresh;       /* 0: 0.3, a pixel is text when its probability is above this */
    float box_thresh;       /* 0: 0.6, a box is kept when its mean probability is at least this */
    float unclip_ratio;     /* 0: 1.5, how much a detected box is grown */
    float drop_score;       /* 0: 0.5, lines read with a lower confidence are left out */
    const char *device;     /* the models' device ("opencl:0"; NULL: "cpu"), nodes it lacks on the
                               CPU unless strict_device (ts_compile_opts) */
    int strict_device;
    int quantize;           /* ts_compile_opts.quantize for the three models: TS_QUANT_DYNAMIC runs
                               their convolutions and weight matmuls in int8 (0: f32) */
} ts_ocr_opts;

typedef struct ts_ocr_line {
    float box[4][2];  /* the line's corners in image pixels (x, y): top-left, top-right,
                         bottom-right, bottom-left as the text reads (whole numbers) */
    char *text;       /* UTF-8 */
    float confidence; /* the mean probability of the characters read, in (0, 1] */
} ts_ocr_line;

typedef struct ts_ocr ts_ocr;
/* Load the models and the character list. NULL, with ts_last_error() naming the file, when one
 * is missing or not what it should be. */
TS_API ts_ocr *ts_ocr_new(const ts_ocr_opts *opts);
TS_API void ts_ocr_free(ts_ocr *ocr);
/* The lines of text in im, in reading order (top to bottom, then left to right within a line):
 * *lines (free with ts_ocr_lines_free) and *nlines (0 when there is no text). */
TS_API ts_status ts_ocr_run(ts_ocr *ocr, const ts_image *im, ts_ocr_line **lines, int *nlines);
TS_API void ts_ocr_lines_free(ts_ocr_line *lines, int n);

#ifdef __cplusplus
}
#endif
#endif /* TESSERA_OCR_H */
