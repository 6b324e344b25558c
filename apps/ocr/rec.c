/*
 * rec.c — text recognition with PP-OCRv4's recogniser (SVTR-LCNet with a CTC head): its input and
 * the decoding of its output.
 *
 * Input: a line at height 48 and width W = max(320, floor(48 * width / height)) (PaddleOCR's
 * rec_image_shape 3,48,320 widened to the line's aspect ratio), prepared as line_input.c says.
 * W is at most 4800 (a line 100 times as wide as tall; a longer one is squeezed): the model's
 * attention over its W / 8 steps takes memory in their square, and PaddleOCR has no such limit.
 *
 * Output: probs [T, C], a softmax over the C classes at each of T steps along the line (the ONNX
 * graph ends in Softmax). CTC greedy decoding (Graves et al. 2006, best path): at each step t take
 * k_t = argmax_c probs[t][c]; drop a step whose k_t equals the previous step's (a character spans
 * several steps), then drop the blanks (k = 0); the text is the kept classes' characters, and its
 * confidence the mean of probs[t][k_t] over the kept steps.
 */
#include <stdlib.h>
#include <string.h>

#include "ocr/ocr_impl.h"

int ocr_rec_width(const ts_image *line) {
    double w = (double)OCR_REC_H * line->width / line->height;
    return w < OCR_REC_MIN_W ? OCR_REC_MIN_W : w > OCR_REC_MAX_W ? OCR_REC_MAX_W : (int)w;
}

void ocr_rec_input(const ts_image *line, int width, float *dst) { ocr_line_input(line, OCR_REC_H, width, dst); }

char *ocr_ctc_decode(const float *probs, int T, int C, const ocr_charset *cs, const uint8_t *allowed,
                     float *confidence) {
    size_t cap = 1, len = 0;
    for (int t = 0; t < T; t++) cap += 4; /* a character is at most 4 bytes of UTF-8 ... */
    char *text = malloc(cap + 64);        /* ... unless the keys file has longer lines */
    if (!text) return NULL;
    double sum = 0;
    int kept = 0, prev = -1;
    for (int t = 0; t < T; t++) {
        const float *p = probs + (size_t)t * (size_t)C;
        int best = 0;
        for (int c = 1; c < C; c++)
            if (p[c] > p[best] && (!allowed || allowed[c])) best = c;
        if (best != 0 && best != prev && best < cs->n) {
            size_t n = strlen(cs->chars[best]);
            if (len + n + 1 > cap) {
                char *more = realloc(text, (cap = 2 * cap + n + 1));
                if (!more) {
                    free(text);
                    return NULL;
                }
                text = more;
            }
            memcpy(text + len, cs->chars[best], n);
            len += n;
            sum += p[best];
            kept++;
        }
        prev = best;
    }
    text[len] = 0;
    *confidence = kept ? (float)(sum / kept) : 0.0f;
    return text;
}
