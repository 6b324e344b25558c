/*
 * crop.c — a text box cut out of the image and straightened: the quadrilateral p0..p3 (top-left,
 * top-right, bottom-right, bottom-left) is mapped onto the upright rectangle [0, W] x [0, H] by a
 * perspective transform, W = the longer of |p0 p1| and |p3 p2|, H = the longer of |p0 p3| and
 * |p1 p2| (truncated to whole pixels).
 *
 * The transform from the unit square, (s, t) -> (x, y), with (0,0), (1,0), (1,1), (0,1) going to
 * p0, p1, p2, p3 (Heckbert 1989, "Fundamentals of Texture Mapping", 2.2.3):
 *
 *     x = (a s + b t + c) / (g s + h t + 1),   y = (d s + e t + f) / (g s + h t + 1)
 *
 *   with S = p0 - p1 + p2 - p3, D1 = p1 - p2, D2 = p3 - p2, den = D1.x D2.y - D2.x D1.y:
 *     g = (S.x D2.y - D2.x S.y) / den,  h = (D1.x S.y - S.x D1.y) / den   (both 0 when S = 0),
 *     a = p1.x - p0.x + g p1.x,  b = p3.x - p0.x + h p3.x,  c = p0.x,
 *     d = p1.y - p0.y + g p1.y,  e = p3.y - p0.y + h p3.y,  f = p0.y.
 *
 * Output pixel (u, v) takes s = u / W, t = v / H (pixel u at coordinate u, as OpenCV's
 * warpPerspective) and samples the image bilinearly at (x, y), coordinates clamped to the image
 * (its edge pixels repeated). PaddleOCR's crop uses bicubic sampling; bilinear differs from it
 * by a little smoothing, which the recogniser does not mind.
 */
#include <math.h>
#include <stdlib.h>

#include "common/app.h"
#include "ocr/ocr_impl.h"
#include "vision/vision.h"

static double dist(ocr_pt a, ocr_pt b) { return hypot((double)a.x - b.x, (double)a.y - b.y); }

/* Bilinear sample of channel c at (x, y), coordinates clamped to the image. */
static float sample(const ts_image *im, double x, double y, int c) {
    double mx = im->width - 1, my = im->height - 1;
    x = x < 0 ? 0 : x > mx ? mx : x;
    y = y < 0 ? 0 : y > my ? my : y;
    int x0 = (int)x, y0 = (int)y;
    int x1 = x0 < im->width - 1 ? x0 + 1 : x0, y1 = y0 < im->height - 1 ? y0 + 1 : y0;
    float fx = (float)(x - x0), fy = (float)(y - y0);
    size_t row = (size_t)im->width * 3;
    const uint8_t *r0 = im->rgb + (size_t)y0 * row, *r1 = im->rgb + (size_t)y1 * row;
    float top = r0[3 * x0 + c] + fx * (r0[3 * x1 + c] - r0[3 * x0 + c]);
    float bottom = r1[3 * x0 + c] + fx * (r1[3 * x1 + c] - r1[3 * x0 + c]);
    return top + fy * (bottom - top);
}

ts_image *ocr_crop(const ts_image *im, const ocr_pt p[4]) {
    int W = (int)fmax(dist(p[0], p[1]), dist(p[3], p[2]));
    int H = (int)fmax(dist(p[0], p[3]), dist(p[1], p[2]));
    if (W < 1 || H < 1) {
        ts_set_error(TS_ERR_ARG, "ocr: the box (%g,%g) (%g,%g) (%g,%g) (%g,%g) is less than a pixel across", p[0].x,
                     p[0].y, p[1].x, p[1].y, p[2].x, p[2].y, p[3].x, p[3].y);
        return NULL;
    }
    double Sx = (double)p[0].x - p[1].x + p[2].x - p[3].x, Sy = (double)p[0].y - p[1].y + p[2].y - p[3].y;
    double g = 0, h = 0;
    if (fabs(Sx) > 1e-9 || fabs(Sy) > 1e-9) {
        double d1x = (double)p[1].x - p[2].x, d1y = (double)p[1].y - p[2].y;
        double d2x = (double)p[3].x - p[2].x, d2y = (double)p[3].y - p[2].y;
        double den = d1x * d2y - d2x * d1y;
        if (fabs(den) > 1e-12) {
            g = (Sx * d2y - d2x * Sy) / den;
            h = (d1x * Sy - Sx * d1y) / den;
        }
    }
    double a = (double)p[1].x - p[0].x + g * p[1].x, b = (double)p[3].x - p[0].x + h * p[3].x, c = p[0].x;
    double d = (double)p[1].y - p[0].y + g * p[1].y, e = (double)p[3].y - p[0].y + h * p[3].y, f = p[0].y;
    ts_image *out = ts_image_alloc(W, H, "ocr crop");
    if (!out) return NULL;
    for (int v = 0; v < H; v++)
        for (int u = 0; u < W; u++) {
            double s = (double)u / W, t = (double)v / H, q = g * s + h * t + 1;
            double x = (a * s + b * t + c) / q, y = (d * s + e * t + f) / q;
            uint8_t *o = out->rgb + ((size_t)v * W + u) * 3;
            for (int ch = 0; ch < 3; ch++) o[ch] = (uint8_t)(sample(im, x, y, ch) + 0.5f);
        }
    if ((double)H / W >= 1.5) { /* a vertical line of text: read it turned */
        ts_image *turned = ts_image_rotate(out, 1);
        ts_image_free(out);
        out = turned;
    }
    return out;
}
