/*
 * line_input.c — one cropped line of text as the input of the direction classifier or the
 * recogniser, as PaddleOCR's resize_norm_img prepares it: resized (bilinear) to the model's height
 * h keeping its aspect ratio, to width min(w, ceil(h * width / height)), each value
 * x = (v / 255 - 0.5) / 0.5 in [-1, 1], channels B, G, R (PaddleOCR reads images with OpenCV, in
 * that order, and the models were trained on it), and zeros (the mean grey) to the right up to w.
 *
 * One change from PaddleOCR: the resize is bicubic, not bilinear. Lines of small text are
 * enlarged to height 48, and bilinear enlargement blurs them enough that PP-OCRv4's recogniser
 * loses the spaces between English words: on 24-pixel text rendered by ImageMagick, a crop read
 * "Shepaid$42.50fortwoticketstoBoston." after a bilinear enlargement and "She paid $42.50 for two
 * tickets to Boston." after a bicubic one (as the models' own outputs, checked against ONNX
 * Runtime, showed).
 */
#include <math.h>
#include <string.h>

#include "ocr/ocr_impl.h"

void ocr_line_input(const ts_image *line, int h, int w, float *dst) {
    size_t plane = (size_t)h * (size_t)w;
    memset(dst, 0, sizeof *dst * plane * 3);
    double scaled = ceil((double)h * line->width / line->height);
    int rw = scaled > w ? w : (int)scaled;
    if (rw < 1) rw = 1;
    ts_image *r = ts_image_resize(line, rw, h, TS_INTERP_CUBIC);
    if (!r) return; /* only out of memory: the line then reads as blank */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < rw; x++) {
            const uint8_t *px = r->rgb + ((size_t)y * rw + x) * 3;
            for (int c = 0; c < 3; c++) dst[c * plane + (size_t)y * w + x] = ocr_norm_pixel(px[2 - c]);
        }
    ts_image_free(r);
}
