/*
 * regions.c — the 8-connected regions of a binary map (the text candidates of DB detection),
 * each given by the leftmost and rightmost pixel of each of its rows: the points whose convex
 * hull is the region's, which is all the minimum-area rectangle needs.
 *
 * Labelling is a breadth-first flood fill from each unlabelled set pixel in row-major order
 * (neighbours: the 8 pixels around). Regions are not told apart from holes inside them: a hole's
 * own border (which OpenCV's findContours with RETR_LIST would also list) is left out, as its
 * box would score low on the probability map and be dropped anyway.
 */
#include <stdlib.h>
#include <string.h>

#include "common/app.h"
#include "ocr/ocr_impl.h"

void ocr_regions_free(ocr_region *r, int n) {
    if (!r) return;
    for (int i = 0; i < n; i++) free(r[i].pts);
    free(r);
}

/* The row extremes of the pixels queue[0..n) (indices y * w + x) as points. */
static int row_extremes(const int32_t *queue, int n, int w, ocr_region *out) {
    int ymin = queue[0] / w, ymax = ymin;
    for (int i = 1; i < n; i++) {
        int y = queue[i] / w;
        if (y < ymin) ymin = y;
        if (y > ymax) ymax = y;
    }
    int rows = ymax - ymin + 1;
    int *lo = malloc(sizeof *lo * (size_t)rows), *hi = malloc(sizeof *hi * (size_t)rows);
    out->pts = malloc(sizeof *out->pts * (size_t)rows * 2);
    if (!lo || !hi || !out->pts) {
        free(lo), free(hi), free(out->pts);
        out->pts = NULL;
        return -1;
    }
    for (int r = 0; r < rows; r++) lo[r] = w, hi[r] = -1;
    for (int i = 0; i < n; i++) {
        int y = queue[i] / w - ymin, x = queue[i] % w;
        if (x < lo[y]) lo[y] = x;
        if (x > hi[y]) hi[y] = x;
    }
    int k = 0;
    for (int r = 0; r < rows; r++) {
        if (hi[r] < 0) continue; /* cannot happen for a connected region; kept safe */
        out->pts[k++] = (ocr_pt){(float)lo[r], (float)(ymin + r)};
        if (hi[r] != lo[r]) out->pts[k++] = (ocr_pt){(float)hi[r], (float)(ymin + r)};
    }
    out->npts = k;
    out->npixels = n;
    free(lo), free(hi);
    return 0;
}

int ocr_find_regions(const uint8_t *mask, int w, int h, int max_regions, ocr_region **out) {
    *out = NULL;
    if (w <= 0 || h <= 0 || max_regions <= 0) return 0;
    size_t npix = (size_t)w * (size_t)h;
    uint8_t *seen = calloc(npix, 1);
    int32_t *queue = malloc(sizeof *queue * npix);
    int cap = 16, n = 0;
    ocr_region *regs = malloc(sizeof *regs * (size_t)cap);
    if (!seen || !queue || !regs) goto oom;
    for (size_t start = 0; start < npix && n < max_regions; start++) {
        if (!mask[start] || seen[start]) continue;
        int head = 0, tail = 0;
        queue[tail++] = (int32_t)start;
        seen[start] = 1;
        while (head < tail) {
            int p = queue[head++], x = p % w, y = p / w;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int nx = x + dx, ny = y + dy;
                    if (nx < 0 || ny < 0 || nx >= w || ny >= h) continue;
                    size_t q = (size_t)ny * (size_t)w + (size_t)nx;
                    if (mask[q] && !seen[q]) {
                        seen[q] = 1;
                        queue[tail++] = (int32_t)q;
                    }
                }
        }
        if (n == cap) {
            ocr_region *more = realloc(regs, sizeof *regs * (size_t)cap * 2);
            if (!more) goto oom;
            regs = more;
            cap *= 2;
        }
        if (row_extremes(queue, tail, w, &regs[n]) != 0) goto oom;
        n++;
    }
    free(seen);
    free(queue);
    *out = regs;
    return n;

oom:
    free(seen);
    free(queue);
    ocr_regions_free(regs, n);
    ts_set_error(TS_ERR_NOMEM, "ocr: out of memory finding the text regions of a %d x %d map", w, h);
    return -1;
}
