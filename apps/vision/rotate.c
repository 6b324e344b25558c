/*
 * rotate.c — ts_image_rotate: an RGB image turned by a multiple of 90 degrees.
 *
 * Counter-clockwise by one quarter (numpy's rot90): the input's right column becomes the
 * output's top row, out[y][x] = in[x][W-1-y], the output W' = H, H' = W. Half a turn:
 * out[y][x] = in[H-1-y][W-1-x]. Three quarters (clockwise): out[y][x] = in[H-1-x][y].
 */
#include <string.h>

#include "common/app.h"
#include "vision/vision.h"

ts_image *ts_image_rotate(const ts_image *im, int quarter_turns) {
    if (!im || !im->rgb) {
        ts_set_error(TS_ERR_ARG, "ts_image_rotate: not an image");
        return NULL;
    }
    int q = ((quarter_turns % 4) + 4) % 4, w = im->width, h = im->height;
    ts_image *out = q % 2 ? ts_image_alloc(h, w, "ts_image_rotate") : ts_image_alloc(w, h, "ts_image_rotate");
    if (!out) return NULL;
    int ow = out->width, oh = out->height;
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            int sx, sy;
            switch (q) {
            case 0: sx = x, sy = y; break;
            case 1: sx = w - 1 - y, sy = x; break;
            case 2: sx = w - 1 - x, sy = h - 1 - y; break;
            default: sx = y, sy = h - 1 - x; break;
            }
            memcpy(out->rgb + ((size_t)y * ow + x) * 3, im->rgb + ((size_t)sy * w + sx) * 3, 3);
        }
    return out;
}
