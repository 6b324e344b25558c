/*
 * resize.c — ts_image_resize: resampling an RGB image, bilinear (OpenCV's INTER_LINEAR, which
 * PaddleOCR's preprocessing uses) or bicubic.
 *
 * Output pixel (x, y) has its centre at (x + 0.5, y + 0.5) in output pixels, which is
 * sx = (x + 0.5) * in_w / out_w - 0.5 in input pixel coordinates (likewise sy). With
 * x0 = floor(sx) and t = sx - x0, the output is a weighted sum of input pixels near (sx, sy),
 * separably along x and y, indices clamped to the image (edge pixels repeated):
 *
 *   bilinear: weights (1 - t, t) on x0, x0 + 1 (and sx clamped to [0, in_w - 1] first);
 *   bicubic:  weights k(1 + t), k(t), k(1 - t), k(2 - t) on x0 - 1 .. x0 + 2, with Keys' kernel
 *             (a = -0.5, Catmull-Rom)
 *               k(d) = (a + 2)|d|^3 - (a + 3)|d|^2 + 1      for |d| <= 1,
 *               k(d) = a|d|^3 - 5a|d|^2 + 8a|d| - 4a        for 1 < |d| < 2,   0 beyond;
 *
 * rounded to the nearest byte (bicubic clamped to 0..255 first: its weights can be negative).
 * Neither filters before shrinking (nor does OpenCV's INTER_LINEAR).
 */
#include <math.h>
#include <stdlib.h>

#include "common/app.h"
#include "vision/vision.h"

#define TAPS 4

typedef struct {
    int i[TAPS]; /* source indices */
    float w[TAPS];
} taps;

static float keys(float d) {
    const float a = -0.5f;
    d = fabsf(d);
    if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0;
}

static int clampi(int v, int hi) { return v < 0 ? 0 : v > hi ? hi : v; }

/* The taps of each of the n_out positions along one axis of length n_in. */
static taps *axis_taps(int n_in, int n_out, ts_interp interp) {
    taps *t = calloc((size_t)n_out, sizeof *t);
    if (!t) return NULL;
    double scale = (double)n_in / n_out;
    for (int o = 0; o < n_out; o++) {
        double s = (o + 0.5) * scale - 0.5;
        if (interp == TS_INTERP_CUBIC) {
            int i0 = (int)floor(s);
            float f = (float)(s - i0);
            for (int k = 0; k < TAPS; k++) {
                t[o].i[k] = clampi(i0 - 1 + k, n_in - 1);
                t[o].w[k] = keys(f - (float)(k - 1));
            }
            continue;
        }
        if (s < 0) s = 0;
        int i0 = (int)floor(s);
        float f = (float)(s - i0);
        if (i0 >= n_in - 1) i0 = n_in - 1, f = 0;
        t[o].i[0] = i0, t[o].w[0] = 1 - f;
        t[o].i[1] = clampi(i0 + 1, n_in - 1), t[o].w[1] = f;
        t[o].i[2] = t[o].i[3] = i0; /* weight 0 */
    }
    return t;
}

ts_image *ts_image_resize(const ts_image *im, int width, int height, ts_interp interp) {
    if (!im || !im->rgb || (interp != TS_INTERP_LINEAR && interp != TS_INTERP_CUBIC)) {
        ts_set_error(TS_ERR_ARG, "ts_image_resize: %s", !im || !im->rgb ? "not an image" : "unknown interpolation");
        return NULL;
    }
    ts_image *out = ts_image_alloc(width, height, "ts_image_resize");
    if (!out) return NULL;
    taps *tx = axis_taps(im->width, width, interp), *ty = axis_taps(im->height, height, interp);
    float *row = malloc(sizeof *row * (size_t)width * 3 * TAPS);
    if (!tx || !ty || !row) {
        free(tx), free(ty), free(row);
        ts_image_free(out);
        ts_set_error(TS_ERR_NOMEM, "ts_image_resize: out of memory");
        return NULL;
    }
    size_t in_row = (size_t)im->width * 3;
    for (int y = 0; y < height; y++) {
        /* along x in each of the source rows this output row needs, then along y */
        for (int k = 0; k < TAPS; k++) {
            const uint8_t *src = im->rgb + (size_t)ty[y].i[k] * in_row;
            float *r = row + (size_t)k * width * 3;
            for (int x = 0; x < width; x++)
                for (int c = 0; c < 3; c++) {
                    float v = 0;
                    for (int j = 0; j < TAPS; j++) v += tx[x].w[j] * src[3 * tx[x].i[j] + c];
                    r[3 * x + c] = v;
                }
        }
        uint8_t *dst = out->rgb + (size_t)y * (size_t)width * 3;
        for (int i = 0; i < width * 3; i++) {
            float v = 0;
            for (int k = 0; k < TAPS; k++) v += ty[y].w[k] * row[(size_t)k * width * 3 + i];
            v = v < 0 ? 0 : v > 255 ? 255 : v;
            dst[i] = (uint8_t)(v + 0.5f);
        }
    }
    free(tx), free(ty), free(row);
    return out;
}
