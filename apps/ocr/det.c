/*
 * det.c — text detection around the DB model (Liao et al. 2020, "Real-time Scene Text Detection
 * with Differentiable Binarization"; PP-OCRv4's detector): the model's input, and the
 * post-processing that turns its probability map into boxes, as PaddleOCR's DBPostProcess does
 * in its default ("fast" score, quadrilateral boxes) mode.
 *
 * Input: the image resized so its longer side is at most limit_side_len (960) and each side a
 * multiple of 32, then per channel x = (v / 255 - mean[c]) / std[c] with ImageNet's
 * mean = (0.485, 0.456, 0.406), std = (0.229, 0.224, 0.225), laid out [1, 3, H, W]. Channel
 * order: PaddleOCR reads images with OpenCV, as B, G, R, and normalises them with those
 * constants in that order (its NormalizeImage does not reorder channels), so channel 0 is blue
 * normalised with 0.485 / 0.229. The model was trained so; we feed it the same.
 *
 * Post-processing, with P the map [H, W] of text probabilities:
 *  1. binarise: B = P > thresh (0.3);
 *  2. for each 8-connected region of B (at most max_candidates): R = its minimum-area rectangle;
 *     drop it when R's shorter side < 3;
 *  3. score = the mean of P over the pixels inside R; drop below box_thresh (0.6);
 *  4. grow R back to the text's size (DB shrinks its targets when training): offset R by
 *     D = area(R) * unclip_ratio / perimeter(R) (1.5), take the minimum-area rectangle again, drop
 *     it when its shorter side < 5;
 *  5. scale to the image: x * img_w / W, y * img_h / H, rounded, within the image;
 *  6. drop boxes with a side of 3 pixels or less; sort in reading order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/app.h"
#include "ocr/ocr_impl.h"

#define MIN_SIZE 3

void ocr_det_size(int w, int h, int limit_side_len, int *rw, int *rh) {
    int longer = w > h ? w : h;
    double ratio = longer > limit_side_len ? (double)limit_side_len / longer : 1.0;
    int sw = (int)(w * ratio), sh = (int)(h * ratio);
    /* rounded to the nearest multiple of 32 (halves to even, as Python's round), at least 32 */
    sw = (int)nearbyint(sw / 32.0) * 32;
    sh = (int)nearbyint(sh / 32.0) * 32;
    *rw = sw < 32 ? 32 : sw;
    *rh = sh < 32 ? 32 : sh;
}

ts_tensor *ocr_det_input(const ts_image *im, int rw, int rh) {
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, stdev[3] = {0.229f, 0.224f, 0.225f};
    ts_image *r = ts_image_resize(im, rw, rh, TS_INTERP_LINEAR);
    if (!r) return NULL;
    ts_tensor *t = ts_tensor_new(TS_F32, 4, (int64_t[]){1, 3, rh, rw});
    if (!t) {
        ts_image_free(r);
        return NULL;
    }
    float *x = ts_tensor_data(t);
    size_t plane = (size_t)rw * (size_t)rh;
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < 3; c++) /* channel c holds B, G, R for c = 0, 1, 2 */
            x[c * plane + i] = (r->rgb[3 * i + (2 - c)] / 255.0f - mean[c]) / stdev[c];
    ts_image_free(r);
    return t;
}

/* The mean of prob over the pixels of the map inside the convex quadrilateral box. */
static float box_score(const float *prob, int w, int h, const ocr_pt box[4]) {
    float x0 = box[0].x, x1 = box[0].x, y0 = box[0].y, y1 = box[0].y;
    for (int k = 1; k < 4; k++) {
        x0 = fminf(x0, box[k].x), x1 = fmaxf(x1, box[k].x);
        y0 = fminf(y0, box[k].y), y1 = fmaxf(y1, box[k].y);
    }
    int xa = (int)floorf(x0), xb = (int)ceilf(x1), ya = (int)floorf(y0), yb = (int)ceilf(y1);
    xa = xa < 0 ? 0 : xa, ya = ya < 0 ? 0 : ya;
    xb = xb > w - 1 ? w - 1 : xb, yb = yb > h - 1 ? h - 1 : yb;
    double sum = 0;
    long n = 0;
    for (int y = ya; y <= yb; y++)
        for (int x = xa; x <= xb; x++)
            if (ocr_in_convex(box, 4, (ocr_pt){(float)x, (float)y})) {
                sum += prob[(size_t)y * (size_t)w + (size_t)x];
                n++;
            }
    return n ? (float)(sum / (double)n) : 0.0f;
}

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

int ocr_det_boxes(const float *prob, int mw, int mh, int img_w, int img_h, const ocr_det_params *params,
                  ocr_box **boxes) {
    *boxes = NULL;
    size_t npix = (size_t)mw * (size_t)mh;
    uint8_t *mask = malloc(npix ? npix : 1);
    if (!mask) {
        ts_set_error(TS_ERR_NOMEM, "ocr: out of memory for a %d x %d detection map", mw, mh);
        return -1;
    }
    for (size_t i = 0; i < npix; i++) mask[i] = prob[i] > params->thresh;
    ocr_region *regs = NULL;
    int nreg = ocr_find_regions(mask, mw, mh, params->max_candidates, &regs);
    free(mask);
    if (nreg < 0) return -1;
    ocr_box *out = malloc(sizeof *out * (size_t)(nreg ? nreg : 1));
    if (!out) {
        ocr_regions_free(regs, nreg);
        ts_set_error(TS_ERR_NOMEM, "ocr: out of memory for %d boxes", nreg);
        return -1;
    }
    int n = 0;
    float sx = (float)img_w / (float)mw, sy = (float)img_h / (float)mh;
    for (int i = 0; i < nreg; i++) {
        ocr_pt r[4], g[4];
        if (ocr_min_area_rect(regs[i].pts, regs[i].npts, r) < MIN_SIZE) continue;
        float score = box_score(prob, mw, mh, r);
        if (score < params->box_thresh) continue;
        if (ocr_unclip(r, params->unclip_ratio, g) < MIN_SIZE + 2) continue;
        ocr_box *b = &out[n];
        for (int k = 0; k < 4; k++) {
            b->p[k].x = clampf(nearbyintf(g[k].x * sx), 0, (float)img_w);
            b->p[k].y = clampf(nearbyintf(g[k].y * sy), 0, (float)img_h);
        }
        ocr_order_box(b->p);
        for (int k = 0; k < 4; k++) {
            b->p[k].x = clampf(b->p[k].x, 0, (float)(img_w - 1));
            b->p[k].y = clampf(b->p[k].y, 0, (float)(img_h - 1));
        }
        int bw = (int)hypotf(b->p[0].x - b->p[1].x, b->p[0].y - b->p[1].y);
        int bh = (int)hypotf(b->p[0].x - b->p[3].x, b->p[0].y - b->p[3].y);
        if (bw <= 3 || bh <= 3) continue;
        b->score = score;
        n++;
    }
    ocr_regions_free(regs, nreg);
    ocr_sort_boxes(out, n);
    *boxes = out;
    return n;
}

static int by_top_left(const void *pa, const void *pb) {
    const ocr_box *a = pa, *b = pb;
    if (a->p[0].y != b->p[0].y) return a->p[0].y < b->p[0].y ? -1 : 1;
    if (a->p[0].x != b->p[0].x) return a->p[0].x < b->p[0].x ? -1 : 1;
    return 0;
}

void ocr_sort_boxes(ocr_box *b, int n) {
    if (n < 2) return;
    qsort(b, (size_t)n, sizeof *b, by_top_left);
    /* Within a line the tops wander by a few pixels: a box whose top is within 10 pixels of the
     * one before it and that starts to its left moves before it (as far back as that holds). */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            if (fabsf(b[j].p[0].y - b[j - 1].p[0].y) < 10 && b[j].p[0].x < b[j - 1].p[0].x) {
                ocr_box t = b[j];
                b[j] = b[j - 1];
                b[j - 1] = t;
            } else {
                break;
            }
        }
}
