/*
 * cls.c — PaddleOCR's text direction classifier (ch_ppocr_mobile_v2.0_cls): is a cropped line
 * upright (label "0") or upside down (label "180")? The model takes 3 x 48 x 192 and gives the
 * two probabilities.
 *
 * PaddleOCR squeezes a whole line into the 192 columns, whatever its length: a line 20 times as
 * wide as tall is shrunk 4-5 times across, which the model was not trained on, and it then
 * errs: "The quick brown fox jumps over 13 lazy dogs." in 32-pixel type came out "180" with
 * probability 0.91 (ONNX Runtime gives the same), and was turned over and misread. So here the
 * line, at height 48 and its own aspect ratio (line_input.c), is cut into windows of 192 columns
 * (the last one narrower, zeros after it), each classified as PaddleOCR classifies a short line.
 * The windows' evidence is pooled as log-odds, weighted by the columns of text in each:
 *
 *     z = sum_i w_i log(p_i / (1 - p_i)) / sum_i w_i,   p = 1 / (1 + exp(-z)),
 *
 * (p_i clamped to [1e-6, 1 - 1e-6]) so that a window cut through the middle of its characters,
 * which the model may find doubtful (0.42 in one upside-down line of the tests, between windows
 * above 0.999), does not outvote them as it does in a plain mean. The line is turned half a turn
 * when p > 0.9 (PaddleOCR's cls_thresh). On the line above, its five windows each gave at most
 * 0.2 upright and at least 0.999 turned. A line at most 4 times as wide as tall is one window,
 * which is exactly PaddleOCR's input.
 */
#include <math.h>
#include <string.h>

#include "ocr/ocr_impl.h"

int ocr_cls_line_width(const ts_image *line) {
    int w = (int)ceil((double)OCR_CLS_H * line->width / line->height);
    return w < 1 ? 1 : w;
}

int ocr_cls_windows(int width48) { return (width48 + OCR_CLS_W - 1) / OCR_CLS_W; }

void ocr_cls_window(const ts_image *line48, int i, float *dst, int *columns) {
    size_t plane = (size_t)OCR_CLS_H * OCR_CLS_W;
    memset(dst, 0, sizeof *dst * plane * 3);
    int x0 = i * OCR_CLS_W, n = line48->width - x0 < OCR_CLS_W ? line48->width - x0 : OCR_CLS_W;
    if (n < 0) n = 0;
    for (int y = 0; y < OCR_CLS_H && y < line48->height; y++)
        for (int x = 0; x < n; x++) {
            const uint8_t *px = line48->rgb + ((size_t)y * line48->width + x0 + x) * 3;
            for (int c = 0; c < 3; c++) dst[c * plane + (size_t)y * OCR_CLS_W + x] = ocr_norm_pixel(px[2 - c]);
        }
    *columns = n;
}

int ocr_cls_flipped(const float *p180, const int *columns, int n, float threshold) {
    double z = 0, den = 0;
    for (int i = 0; i < n; i++) {
        double p = p180[i] < 1e-6f ? 1e-6 : p180[i] > 1 - 1e-6f ? 1 - 1e-6 : p180[i];
        z += columns[i] * log(p / (1 - p));
        den += columns[i];
    }
    return den > 0 && 1 / (1 + exp(-z / den)) > threshold;
}
