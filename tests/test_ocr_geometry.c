/*
 * test_ocr_geometry.c — the OCR pipeline's steps on synthetic data, no models needed
 * (apps/ocr/, internal functions from ocr/ocr_impl.h):
 *  - convex hull and minimum-area rectangle of random and rotated point sets, checked against a
 *    brute-force search over angles and containment of every point;
 *  - unclip: a rectangle grows by D = area * ratio / perimeter on every side, at any angle; the
 *    crop's margin grows a box along its own sides;
 *  - 8-connected regions of synthetic maps (diagonal contact joins, a ring is one region);
 *  - DB post-processing of a synthetic probability map: boxes where the text is, grown and scaled
 *    to the image, weak and tiny regions dropped, reading order;
 *  - the perspective crop against a homography solved here by Gaussian elimination (a different
 *    method from crop.c's closed form) on an image whose pixels are a linear function, so that
 *    bilinear sampling is exact; tall boxes turned;
 *  - the models' inputs: detector sizes and normalisation (B, G, R), line inputs, the
 *    classifier's windows and its decision;
 *  - the character list and CTC greedy decoding of synthetic sequences built from random texts.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include "ocr/ocr_impl.h"

/* ------------------------------------------------------------------ helpers */

static double rect_area(const ocr_pt b[4]) { return fabs(ocr_polygon_area(b, 4)); }

static double side(ocr_pt a, ocr_pt b) { return hypot((double)a.x - b.x, (double)a.y - b.y); }

/* The smallest enclosing rectangle's area by trying angles in steps of `step` degrees. */
static double brute_min_area(const ocr_pt *p, int n, double step) {
    double best = INFINITY;
    for (double a = 0; a < 180; a += step) {
        double c = cos(a * M_PI / 180), s = sin(a * M_PI / 180);
        double lu = INFINITY, hu = -INFINITY, lv = INFINITY, hv = -INFINITY;
        for (int i = 0; i < n; i++) {
            double u = p[i].x * c + p[i].y * s, v = -p[i].x * s + p[i].y * c;
            lu = fmin(lu, u), hu = fmax(hu, u), lv = fmin(lv, v), hv = fmax(hv, v);
        }
        best = fmin(best, (hu - lu) * (hv - lv));
    }
    return best;
}

/* Is p inside the rectangle b (grown by eps)? */
static int inside_grown(const ocr_pt b[4], ocr_pt p, double eps) {
    for (int i = 0; i < 4; i++) {
        ocr_pt a = b[i], c = b[(i + 1) % 4];
        double len = side(a, c);
        if (len == 0) continue;
        /* distance of p from the edge's line, signed by the side the rectangle's centre is on */
        double cx = (b[0].x + b[2].x) / 2.0, cy = (b[0].y + b[2].y) / 2.0;
        double dp = ((c.x - a.x) * (p.y - a.y) - (c.y - a.y) * (p.x - a.x)) / len;
        double dc = ((c.x - a.x) * (cy - a.y) - (c.y - a.y) * (cx - a.x)) / len;
        if (dc * dp < 0 && fabs(dp) > eps) return 0;
    }
    return 1;
}

/* The corners of a w x h rectangle centred at (cx, cy), turned by `deg` degrees. */
static void rotated_rect(double cx, double cy, double w, double h, double deg, ocr_pt out[4]) {
    double c = cos(deg * M_PI / 180), s = sin(deg * M_PI / 180);
    double u[4] = {-w / 2, w / 2, w / 2, -w / 2}, v[4] = {-h / 2, -h / 2, h / 2, h / 2};
    for (int k = 0; k < 4; k++) out[k] = (ocr_pt){(float)(cx + u[k] * c - v[k] * s), (float)(cy + u[k] * s + v[k] * c)};
}

/* ------------------------------------------------------------------ geometry */

static void test_hull_and_min_rect(void) {
    tu_rng r = tu_rng_seed(1);
    for (int trial = 0; trial < 200; trial++) {
        int n = 3 + (int)tu_randint(&r, 60);
        ocr_pt p[64], hull[64], box[4];
        double cx = tu_uniform(&r, -50, 50), cy = tu_uniform(&r, -50, 50);
        double sx = tu_uniform(&r, 1, 40), sy = tu_uniform(&r, 1, 40), ang = tu_uniform(&r, 0, M_PI);
        for (int i = 0; i < n; i++) {
            double u = tu_uniform(&r, -sx, sx), v = tu_uniform(&r, -sy, sy);
            p[i] = (ocr_pt){(float)(cx + u * cos(ang) - v * sin(ang)), (float)(cy + u * sin(ang) + v * cos(ang))};
        }
        int m = ocr_convex_hull(p, n, hull);
        CHECK(m >= 3 && m <= n, "trial %d: hull of %d points has %d", trial, n, m);
        CHECK(ocr_polygon_area(hull, m) > 0, "trial %d: hull not counter-clockwise", trial);
        for (int i = 0; i < n; i++)
            if (!ocr_in_convex(hull, m, p[i])) {
                /* allow points a hair outside (float rounding) */
                CHECK(0, "trial %d: point %d outside its hull", trial, i);
                break;
            }
        float short_side = ocr_min_area_rect(p, n, box);
        double area = rect_area(box), brute = brute_min_area(p, n, 0.05); /* an upper bound of the optimum */
        CHECK(area <= brute * (1 + 1e-4) + 1e-3, "trial %d: min-area rect %.4f > brute force %.4f", trial, area, brute);
        CHECK(area >= brute * 0.99 - 1e-3, "trial %d: area %.4f below what encloses", trial, area);
        double s1 = side(box[0], box[1]), s2 = side(box[1], box[2]);
        CHECK(fabs(short_side - fmin(s1, s2)) < 1e-3 * (1 + s1 + s2), "trial %d: short side %g, sides %g %g", trial,
              short_side, s1, s2);
        for (int i = 0; i < n; i++)
            if (!inside_grown(box, p[i], 1e-3 * (1 + sx + sy))) {
                CHECK(0, "trial %d: point %d (%g, %g) outside the rectangle", trial, i, p[i].x, p[i].y);
                break;
            }
        /* corner order: top-left has the smallest x of the two leftmost, and is above bottom-left */
        CHECK(box[0].y <= box[3].y + 1e-4 && box[1].y <= box[2].y + 1e-4, "trial %d: corners out of order", trial);
    }
    /* degenerate sets: one point, a segment, collinear points */
    ocr_pt one[3] = {{5, 5}, {5, 5}, {5, 5}}, line[4] = {{0, 0}, {1, 1}, {2, 2}, {3, 3}}, box[4];
    CHECK(ocr_min_area_rect(one, 3, box) == 0, "a point has a short side");
    CHECK(ocr_min_area_rect(line, 4, box) == 0, "a segment has a short side");
    ocr_pt hull[4];
    CHECK(ocr_convex_hull(line, 4, hull) == 2, "collinear hull should be its 2 ends");
}

static void test_min_rect_known(void) {
    /* the pixel centres of a filled 40 x 10 block at (10, 5): the rectangle through them */
    ocr_pt p[400];
    int n = 0;
    for (int y = 5; y < 15; y++)
        for (int x = 10; x < 50; x++) p[n++] = (ocr_pt){(float)x, (float)y};
    ocr_pt b[4];
    float s = ocr_min_area_rect(p, n, b);
    CHECK(fabsf(s - 9) < 1e-4, "short side %g, want 9", s);
    const float want[4][2] = {{10, 5}, {49, 5}, {49, 14}, {10, 14}};
    for (int k = 0; k < 4; k++)
        CHECK(fabsf(b[k].x - want[k][0]) < 1e-3 && fabsf(b[k].y - want[k][1]) < 1e-3, "corner %d (%g, %g), want (%g, %g)",
              k, b[k].x, b[k].y, want[k][0], want[k][1]);
    /* a rotated rectangle's own corners (and points inside it) give it back */
    for (double deg = -60; deg <= 60; deg += 15) {
        ocr_pt c[4], q[40], out[4];
        rotated_rect(100, 80, 60, 14, deg, c);
        int m = 0;
        for (int k = 0; k < 4; k++) q[m++] = c[k];
        for (int i = 0; i < 20; i++) /* interior points */
            q[m++] = (ocr_pt){(float)(100 + (i - 10) * 2 * cos(deg * M_PI / 180)), (float)(80 + (i - 10) * 2 * sin(deg * M_PI / 180))};
        float ss = ocr_min_area_rect(q, m, out);
        CHECK(fabs(ss - 14) < 1e-3 && fabs(rect_area(out) - 60 * 14) < 0.05, "%g deg: short side %g, area %g", deg, ss,
              rect_area(out));
    }
}

static void test_unclip(void) {
    for (double deg = -30; deg <= 30; deg += 10) {
        for (double w = 20; w <= 200; w *= 3) {
            double h = 8 + w / 10, ratio = 1.5;
            ocr_pt b[4], g[4];
            rotated_rect(300, 200, w, h, deg, b);
            ocr_order_box(b);
            float s = ocr_unclip(b, (float)ratio, g);
            /* every side moves out by D = A r / L */
            double d = w * h * ratio / (2 * (w + h));
            double gw = fmax(side(g[0], g[1]), side(g[1], g[2])), gh = fmin(side(g[0], g[1]), side(g[1], g[2]));
            CHECK(fabs(gw - (w + 2 * d)) < 0.01 * (w + 2 * d) && fabs(gh - (h + 2 * d)) < 0.02 * (h + 2 * d),
                  "%g deg, %g x %g: grown to %g x %g, want %g x %g", deg, w, h, gw, gh, w + 2 * d, h + 2 * d);
            CHECK(fabs(s - gh) < 1e-3, "short side %g vs %g", s, gh);
            double cx = (g[0].x + g[2].x) / 2, cy = (g[0].y + g[2].y) / 2;
            CHECK(fabs(cx - 300) < 0.05 && fabs(cy - 200) < 0.05, "centre moved to (%g, %g)", cx, cy);
        }
    }
    /* the offset polygon of a square: every point at distance >= d from the square, the arc points
     * exactly d from their corner */
    ocr_pt sq[4] = {{0, 0}, {10, 0}, {10, 10}, {0, 10}}, out[200];
    int n = ocr_offset_polygon(sq, 4, 2.0, out, 200);
    CHECK(n >= 8, "offset square has %d points", n);
    for (int i = 0; i < n; i++) {
        double dx = fmax(fmax(-out[i].x, out[i].x - 10), 0), dy = fmax(fmax(-out[i].y, out[i].y - 10), 0);
        CHECK(fabs(hypot(dx, dy) - 2) < 1e-4, "offset point (%g, %g) is %g from the square", out[i].x, out[i].y,
              hypot(dx, dy));
    }
    CHECK(ocr_offset_polygon(sq, 4, 2.0, out, 3) == 0, "a too-small buffer was overrun or accepted");
}

static void test_expand_box(void) {
    ocr_pt b[4] = {{10, 10}, {50, 10}, {50, 20}, {10, 20}}, g[4];
    ocr_expand_box(b, 4, 2, g);
    const float want[4][2] = {{6, 8}, {54, 8}, {54, 22}, {6, 22}};
    for (int k = 0; k < 4; k++)
        CHECK(fabsf(g[k].x - want[k][0]) < 1e-4 && fabsf(g[k].y - want[k][1]) < 1e-4, "corner %d (%g, %g), want (%g, %g)", k,
              g[k].x, g[k].y, want[k][0], want[k][1]);
    for (double deg = -40; deg <= 40; deg += 20) {
        rotated_rect(200, 100, 80, 20, deg, b);
        ocr_order_box(b);
        ocr_expand_box(b, 8, 3, g);
        double w = side(g[0], g[1]), h = side(g[1], g[2]), cx = (g[0].x + g[2].x) / 2, cy = (g[0].y + g[2].y) / 2;
        CHECK(fabs(w - 96) < 1e-3 && fabs(h - 26) < 1e-3 && fabs(cx - 200) < 1e-3 && fabs(cy - 100) < 1e-3,
              "%g deg: grown to %g x %g around (%g, %g), want 96 x 26 around (200, 100)", deg, w, h, cx, cy);
    }
}

/* ------------------------------------------------------------------ regions and DB */

static void test_regions(void) {
    enum { W = 30, H = 20 };
    uint8_t m[W * H] = {0};
#define SET(x, y) m[(y) * W + (x)] = 1
    /* a 5 x 3 block */
    for (int y = 2; y < 5; y++)
        for (int x = 2; x < 7; x++) SET(x, y);
    /* two pixels touching only at a corner: one region under 8-connectivity */
    SET(10, 10);
    SET(11, 11);
    /* a ring with a hole */
    for (int y = 12; y < 19; y++)
        for (int x = 18; x < 27; x++)
            if (y == 12 || y == 18 || x == 18 || x == 26) SET(x, y);
    /* a lone pixel at the border */
    SET(29, 0);
#undef SET
    ocr_region *r = NULL;
    int n = ocr_find_regions(m, W, H, 100, &r);
    CHECK(n == 4, "%d regions, want 4", n);
    int want_pixels[4] = {1, 15, 2, 9 * 2 + 5 * 2}; /* in scan order of their first pixel */
    for (int i = 0; i < n && i < 4; i++) CHECK(r[i].npixels == want_pixels[i], "region %d: %d pixels, want %d", i, r[i].npixels, want_pixels[i]);
    if (n == 4) {
        ocr_pt b[4];
        float s = ocr_min_area_rect(r[3].pts, r[3].npts, b);
        CHECK(fabsf(s - 6) < 1e-4 && fabs(rect_area(b) - 8 * 6) < 1e-3, "ring's rectangle: short side %g, area %g", s,
              rect_area(b));
    }
    ocr_regions_free(r, n);
    n = ocr_find_regions(m, W, H, 2, &r);
    CHECK(n == 2, "max_regions 2 gave %d", n);
    ocr_regions_free(r, n);
}

static const ocr_det_params PARAMS = {960, 0.3f, 0.6f, 1.5f, 1000};

/* Fill map[y0..y1][x0..x1] (inclusive) with v. */
static void fill(float *map, int w, int x0, int y0, int x1, int y1, float v) {
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) map[y * w + x] = v;
}

static void test_det_boxes(void) {
    enum { MW = 128, MH = 64 };
    static float map[MW * MH];
    for (int i = 0; i < MW * MH; i++) map[i] = 0.02f;
    fill(map, MW, 60, 10, 100, 17, 0.9f); /* line 1, right word (its top 2 px above the left one) */
    fill(map, MW, 8, 12, 50, 19, 0.85f);  /* line 1, left word */
    fill(map, MW, 8, 40, 70, 47, 0.95f);  /* line 2 */
    fill(map, MW, 90, 40, 120, 47, 0.5f); /* above 0.3 but a mean below 0.6: dropped */
    fill(map, MW, 110, 55, 111, 56, 0.99f); /* 2 x 2: too small */
    int img_w = 2 * MW, img_h = 3 * MH;   /* the map is the image shrunk 2x across, 3x down */
    ocr_box *b = NULL;
    int n = ocr_det_boxes(map, MW, MH, img_w, img_h, &PARAMS, &b);
    CHECK(n == 3, "%d boxes, want 3", n);
    /* expected: the block's rectangle through its pixel centres, grown by D on each side, scaled */
    const int blocks[3][4] = {{8, 12, 50, 19}, {60, 10, 100, 17}, {8, 40, 70, 47}};
    const float scores[3] = {0.85f, 0.9f, 0.95f};
    for (int i = 0; i < n && i < 3; i++) {
        double w = blocks[i][2] - blocks[i][0], h = blocks[i][3] - blocks[i][1], d = w * h * 1.5 / (2 * (w + h));
        double want[4][2] = {{blocks[i][0] - d, blocks[i][1] - d}, {blocks[i][2] + d, blocks[i][1] - d},
                             {blocks[i][2] + d, blocks[i][3] + d}, {blocks[i][0] - d, blocks[i][3] + d}};
        for (int k = 0; k < 4; k++) {
            double wx = fmin(fmax(want[k][0] * 2, 0), img_w - 1), wy = fmin(fmax(want[k][1] * 3, 0), img_h - 1);
            CHECK(fabs(b[i].p[k].x - wx) <= 1.01 && fabs(b[i].p[k].y - wy) <= 1.51, "box %d corner %d: (%g, %g), want (%.1f, %.1f)",
                  i, k, b[i].p[k].x, b[i].p[k].y, wx, wy);
            CHECK(b[i].p[k].x == floorf(b[i].p[k].x) && b[i].p[k].y == floorf(b[i].p[k].y), "corners are whole pixels");
        }
        CHECK(fabsf(b[i].score - scores[i]) < 1e-4, "box %d scored %g, want %g", i, b[i].score, scores[i]);
    }
    free(b);
    /* an empty map: no boxes, no error */
    for (int i = 0; i < MW * MH; i++) map[i] = 0;
    n = ocr_det_boxes(map, MW, MH, img_w, img_h, &PARAMS, &b);
    CHECK(n == 0, "an empty map gave %d boxes", n);
    free(b);
}

static void test_sort_boxes(void) {
    /* tops: 50 (x 200), 48 (x 10), 5 (x 300), 53 (x 100); lines: {5}, {48, 50, 53} ordered by x */
    ocr_box b[4] = {0};
    const float tops[4] = {50, 48, 5, 53}, lefts[4] = {200, 10, 300, 100};
    for (int i = 0; i < 4; i++) b[i].p[0] = (ocr_pt){lefts[i], tops[i]};
    ocr_sort_boxes(b, 4);
    const float want_x[4] = {300, 10, 100, 200};
    for (int i = 0; i < 4; i++) CHECK(b[i].p[0].x == want_x[i], "position %d: box at x %g, want %g", i, b[i].p[0].x, want_x[i]);
}

/* ------------------------------------------------------------------ crop */

/* Solve the 8 x 8 system for the homography taking (0,0), (W,0), (W,H), (0,H) to q[0..3]. */
static void solve_homography(const ocr_pt q[4], double W, double H, double m[9]) {
    double A[8][9];
    const double u[4] = {0, W, W, 0}, v[4] = {0, 0, H, H};
    for (int k = 0; k < 4; k++) {
        double x = q[k].x, y = q[k].y;
        double r1[9] = {u[k], v[k], 1, 0, 0, 0, -u[k] * x, -v[k] * x, x};
        double r2[9] = {0, 0, 0, u[k], v[k], 1, -u[k] * y, -v[k] * y, y};
        memcpy(A[2 * k], r1, sizeof r1);
        memcpy(A[2 * k + 1], r2, sizeof r2);
    }
    for (int c = 0; c < 8; c++) {
        int piv = c;
        for (int r = c + 1; r < 8; r++)
            if (fabs(A[r][c]) > fabs(A[piv][c])) piv = r;
        for (int j = 0; j < 9; j++) {
            double t = A[c][j];
            A[c][j] = A[piv][j];
            A[piv][j] = t;
        }
        for (int r = 0; r < 8; r++) {
            if (r == c) continue;
            double f = A[r][c] / A[c][c];
            for (int j = c; j < 9; j++) A[r][j] -= f * A[c][j];
        }
    }
    for (int i = 0; i < 8; i++) m[i] = A[i][8] / A[i][i];
    m[8] = 1;
}

static void test_crop(void) {
    enum { IW = 200, IH = 120 };
    ts_image *im = ts_image_new(IW, IH, 0);
    /* channels linear in x and y (and inside 0..255): bilinear sampling reproduces them exactly */
    for (int y = 0; y < IH; y++)
        for (int x = 0; x < IW; x++) {
            uint8_t *p = im->rgb + 3 * (y * IW + x);
            p[0] = (uint8_t)x, p[1] = (uint8_t)(2 * y), p[2] = (uint8_t)((x + y) / 2);
        }
    /* an axis-aligned box: the crop is the block of pixels itself */
    ocr_pt box[4] = {{20, 30}, {80, 30}, {80, 50}, {20, 50}};
    ts_image *c = ocr_crop(im, box);
    CHECK(c && c->width == 60 && c->height == 20, "crop is %d x %d, want 60 x 20", c ? c->width : -1, c ? c->height : -1);
    if (c)
        for (int y = 0; y < 20; y++)
            for (int x = 0; x < 60; x++)
                if (memcmp(c->rgb + 3 * (y * 60 + x), im->rgb + 3 * ((30 + y) * IW + 20 + x), 3) != 0) {
                    CHECK(0, "crop pixel (%d, %d) differs from the image's (%d, %d)", x, y, 20 + x, 30 + y);
                    y = 20;
                    break;
                }
    ts_image_free(c);
    /* a perspective quadrilateral: each crop pixel is the image at the homography's point */
    ocr_pt quad[4] = {{30.5f, 20}, {150, 35}, {160, 90}, {25, 70.25f}};
    c = ocr_crop(im, quad);
    int W = (int)fmax(side(quad[0], quad[1]), side(quad[3], quad[2])), H = (int)fmax(side(quad[0], quad[3]), side(quad[1], quad[2]));
    CHECK(c && c->width == W && c->height == H, "quad crop %d x %d, want %d x %d", c ? c->width : -1, c ? c->height : -1, W, H);
    if (c && c->width == W && c->height == H) {
        double m[9];
        solve_homography(quad, W, H, m);
        int worst = 0;
        for (int v = 0; v < H; v++)
            for (int u = 0; u < W; u++) {
                double q = m[6] * u + m[7] * v + 1, x = (m[0] * u + m[1] * v + m[2]) / q, y = (m[3] * u + m[4] * v + m[5]) / q;
                double want[3] = {x, 2 * y, (x + y) / 2};
                for (int ch = 0; ch < 3; ch++) {
                    /* channel 2 was rounded down per pixel: allow it 1 more */
                    int d = (int)fabs(c->rgb[3 * (v * W + u) + ch] - want[ch]) - (ch == 2);
                    if (d > worst) worst = d;
                }
            }
        CHECK(worst <= 1, "quad crop off the homography by %d levels", worst);
    }
    ts_image_free(c);
    /* a tall box (vertical text) comes back turned a quarter counter-clockwise */
    ocr_pt tall[4] = {{100, 10}, {120, 10}, {120, 100}, {100, 100}};
    c = ocr_crop(im, tall);
    CHECK(c && c->width == 90 && c->height == 20, "tall crop is %d x %d, want 90 x 20", c ? c->width : -1, c ? c->height : -1);
    /* turned counter-clockwise, the box's top-right pixel (119, 10) is now the top-left one */
    if (c) CHECK(!memcmp(c->rgb, im->rgb + 3 * (10 * IW + 119), 3), "tall crop's top-left is not the box's top-right");
    ts_image_free(c);
    ocr_pt flat[4] = {{10, 10}, {10.5f, 10}, {10.5f, 10.2f}, {10, 10.2f}};
    c = ocr_crop(im, flat);
    CHECK(!c, "a sub-pixel box was cropped");
    CHECK_ERRMSG("less than a pixel");
    ts_image_free(im);
}

/* ------------------------------------------------------------------ model inputs */

static void test_inputs(void) {
    static const int sizes[][3] = {{1000, 500, 960}, {100, 50, 960}, {20, 10, 960}, {3000, 4000, 960}, {640, 200, 960}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int w = sizes[i][0], h = sizes[i][1], lim = sizes[i][2], rw, rh;
        ocr_det_size(w, h, lim, &rw, &rh);
        double ratio = fmax(w, h) > lim ? (double)lim / fmax(w, h) : 1;
        CHECK(rw % 32 == 0 && rh % 32 == 0 && rw >= 32 && rh >= 32, "%d x %d -> %d x %d", w, h, rw, rh);
        CHECK(fabs(rw - fmax(w * ratio, 32)) <= 16 + 1 && fabs(rh - fmax(h * ratio, 32)) <= 16 + 1, "%d x %d -> %d x %d",
              w, h, rw, rh);
        CHECK(fmax(rw, rh) <= lim + 16, "%d x %d -> %d x %d exceeds the limit", w, h, rw, rh);
    }
    /* normalisation: a uniform colour, channels B, G, R with ImageNet's constants in that order */
    ts_image *im = ts_image_new(50, 40, 0);
    const uint8_t rgb[3] = {200, 100, 30};
    for (int i = 0; i < 50 * 40; i++) memcpy(im->rgb + 3 * i, rgb, 3);
    ts_tensor *t = ocr_det_input(im, 64, 32);
    CHECK(t && ts_tensor_shape(t)[1] == 3 && ts_tensor_shape(t)[2] == 32 && ts_tensor_shape(t)[3] == 64, "det input shape");
    if (t) {
        const float *x = ts_tensor_data(t);
        const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
        for (int c = 0; c < 3; c++) {
            float want = (rgb[2 - c] / 255.0f - mean[c]) / sd[c];
            CHECK(fabsf(x[c * 64 * 32 + 100] - want) < 1e-5, "channel %d: %g, want %g", c, x[c * 64 * 32 + 100], want);
        }
    }
    ts_tensor_free(t);
    ts_image_free(im);
    /* a 24 x 16 line: height 48 -> width 72 of values, zeros after; rec width at least 320 */
    im = ts_image_new(24, 16, 255);
    for (int i = 0; i < 24 * 16; i++) memcpy(im->rgb + 3 * i, rgb, 3);
    static float in[3 * 48 * 320];
    ocr_line_input(im, 48, 320, in);
    int ok = 1;
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < 48; y++)
            for (int x = 0; x < 320; x++) {
                float want = x < 72 ? (rgb[2 - c] / 255.0f - 0.5f) / 0.5f : 0.0f;
                if (fabsf(in[(c * 48 + y) * 320 + x] - want) > 1e-5) ok = 0;
            }
    CHECK(ok, "line input of a uniform 24 x 16 line is not 72 columns of its colour (B, G, R) then zeros");
    CHECK(ocr_rec_width(im) == 320, "rec width of a short line %d, want 320", ocr_rec_width(im));
    CHECK(ocr_cls_line_width(im) == 72 && ocr_cls_windows(72) == 1, "classifier: a short line is one window");
    ts_image_free(im);
    /* a long line: 500 x 20 -> 1200 x 48 -> six windows of 192 columns and one of 48 */
    im = ts_image_new(500, 20, 0);
    tu_rng rr = tu_rng_seed(11);
    for (int i = 0; i < 500 * 20 * 3; i++) im->rgb[i] = (uint8_t)tu_randint(&rr, 256);
    CHECK(ocr_rec_width(im) == 1200, "rec width of a 500 x 20 line %d, want 48 * 25 = 1200", ocr_rec_width(im));
    ts_image *very = ts_image_new(3000, 10, 0);
    CHECK(ocr_rec_width(very) == OCR_REC_MAX_W, "rec width of a 3000 x 10 line %d, want the cap %d", ocr_rec_width(very),
          OCR_REC_MAX_W);
    ts_image_free(very);
    int w48 = ocr_cls_line_width(im), nwin = ocr_cls_windows(w48);
    CHECK(w48 == 1200 && nwin == 7, "classifier: %d columns in %d windows, want 1200 in 7", w48, nwin);
    ts_image *l48 = ts_image_resize(im, w48, 48, TS_INTERP_CUBIC);
    static float win[3 * 48 * 192];
    for (int i = 0; i < nwin && l48; i++) {
        int cols = -1;
        ocr_cls_window(l48, i, win, &cols);
        CHECK(cols == (i < 6 ? 192 : 48), "window %d has %d columns", i, cols);
        int bad = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 48; y++)
                for (int x = 0; x < 192; x++) {
                    float want = x < cols ? (l48->rgb[(y * 1200 + i * 192 + x) * 3 + 2 - c] / 255.0f - 0.5f) / 0.5f : 0;
                    if (fabsf(win[(c * 48 + y) * 192 + x] - want) > 1e-5) bad = 1;
                }
        CHECK(!bad, "window %d is not columns %d.. of the line at height 48 (B, G, R), zeros after", i, i * 192);
    }
    ts_image_free(l48);
    ts_image_free(im);
    /* the decision: the windows' column-weighted log-odds of "180", as a probability, above 0.9 */
    const float up[3] = {0.99f, 0.99f, 0.2f}, mixed[2] = {0.95f, 0.1f};
    const int c3[3] = {192, 192, 10}, c2[2] = {192, 192};
    CHECK(ocr_cls_flipped(up, c3, 3, 0.9f), "two confident windows and a narrow doubtful one: upside down");
    CHECK(!ocr_cls_flipped(mixed, c2, 2, 0.9f), "windows that disagree: left as it is");
    CHECK(!ocr_cls_flipped(up, c3, 0, 0.9f), "no windows: left as it is");
    /* pooled as log-odds: one doubtful window between two certain ones does not outvote them
     * (a plain mean, 0.81, would) */
    const float cut[3] = {0.99999f, 0.42f, 0.99999f};
    CHECK(ocr_cls_flipped(cut, c3 + 0, 2, 0.9f) && ocr_cls_flipped(cut, (const int[]){192, 192, 192}, 3, 0.9f),
          "a doubtful window between certain ones outvoted them");
}

/* ------------------------------------------------------------------ characters and CTC */

static char keys_path[256];

static ocr_charset *tiny_charset(void) {
    snprintf(keys_path, sizeof keys_path, "/tmp/ts_ocr_keys_%d.txt", (int)getpid());
    FILE *f = fopen(keys_path, "wb");
    fputs("a\nb\nc\r\n\xe4\xbd\xa0\n\xe5\xa5\xbd\n!", f); /* a b c 你 好 ! (CRLF once, no final newline) */
    fclose(f);
    ocr_charset *cs = ocr_charset_load(keys_path);
    remove(keys_path);
    return cs;
}

static void test_charset(void) {
    ocr_charset *cs = tiny_charset();
    CHECK(cs != NULL, "%s", ts_last_error());
    if (!cs) return;
    CHECK(cs->n == 8, "%d classes, want blank + 6 + space = 8", cs->n);
    if (cs->n == 8) {
        const char *want[8] = {"", "a", "b", "c", "\xe4\xbd\xa0", "\xe5\xa5\xbd", "!", " "};
        for (int i = 0; i < 8; i++) CHECK(!strcmp(cs->chars[i], want[i]), "class %d is \"%s\", want \"%s\"", i, cs->chars[i], want[i]);
        const int ascii[8] = {0, 1, 1, 1, 0, 0, 1, 1};
        for (int i = 0; i < 8; i++) CHECK(cs->ascii[i] == ascii[i], "class %d ascii %d", i, cs->ascii[i]);
    }
    ocr_charset_free(cs);
    CHECK(!ocr_charset_load("/nonexistent/keys.txt"), "a missing keys file loaded");
    CHECK_ERRMSG("/nonexistent/keys.txt", "cannot open");
}

static void test_ctc(void) {
    ocr_charset *cs = tiny_charset();
    if (!cs) return;
    int C = cs->n;
    tu_rng r = tu_rng_seed(3);
    for (int trial = 0; trial < 100; trial++) {
        /* a random text of classes 1..C-1, as CTC would emit it: each character held for 1-3
         * steps, blanks between some and always between two equal ones */
        int len = (int)tu_randint(&r, 12), cls[12];
        float probs[80 * 8];
        int T = 0;
        double sum = 0;
        char want[64] = "";
        for (int i = 0; i < len; i++) {
            cls[i] = 1 + (int)tu_randint(&r, C - 1);
            strcat(want, cs->chars[cls[i]]);
        }
        for (int i = 0; i < len; i++) {
            int blanks = (i > 0 && cls[i] == cls[i - 1]) ? 1 + (int)tu_randint(&r, 2) : (int)tu_randint(&r, 2);
            for (int b = 0; b < blanks; b++, T++)
                for (int c = 0; c < C; c++) probs[T * C + c] = c == 0 ? 0.9f : 0.1f / (C - 1);
            int hold = 1 + (int)tu_randint(&r, 3);
            for (int h = 0; h < hold; h++, T++) {
                float top = (float)tu_uniform(&r, 0.5, 0.99);
                for (int c = 0; c < C; c++) probs[T * C + c] = c == cls[i] ? top : (1 - top) / (C - 1);
                if (h == 0) sum += top; /* the first step of a run is the one kept */
            }
        }
        for (int b = 0; b < 2; b++, T++)
            for (int c = 0; c < C; c++) probs[T * C + c] = c == 0 ? 0.8f : 0.2f / (C - 1);
        float conf = -1;
        char *text = ocr_ctc_decode(probs, T, C, cs, NULL, &conf);
        CHECK(text && !strcmp(text, want), "trial %d: decoded \"%s\", want \"%s\"", trial, text ? text : "(null)", want);
        double want_conf = len ? sum / len : 0;
        CHECK(fabs(conf - want_conf) < 1e-5, "trial %d: confidence %g, want %g", trial, conf, want_conf);
        free(text);
    }
    /* restricted to ASCII: a step where 你 wins over 'c' reads 'c' */
    float probs[3 * 8] = {0};
    probs[0 * 8 + 4] = 0.6f, probs[0 * 8 + 3] = 0.3f, probs[0 * 8 + 0] = 0.1f;
    probs[1 * 8 + 0] = 1.0f;
    probs[2 * 8 + 5] = 0.5f, probs[2 * 8 + 0] = 0.4f, probs[2 * 8 + 7] = 0.1f;
    float conf;
    char *all = ocr_ctc_decode(probs, 3, 8, cs, NULL, &conf);
    char *ascii = ocr_ctc_decode(probs, 3, 8, cs, cs->ascii, &conf);
    CHECK(all && !strcmp(all, "\xe4\xbd\xa0\xe5\xa5\xbd"), "unrestricted: \"%s\"", all);
    CHECK(ascii && !strcmp(ascii, "c") && fabsf(conf - 0.3f) < 1e-6, "ASCII only: \"%s\" (%g), want \"c\" (0.3)", ascii, conf);
    free(all);
    free(ascii);
    ocr_charset_free(cs);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    RUN(test_hull_and_min_rect);
    RUN(test_min_rect_known);
    RUN(test_unclip);
    RUN(test_expand_box);
    RUN(test_regions);
    RUN(test_det_boxes);
    RUN(test_sort_boxes);
    RUN(test_crop);
    RUN(test_inputs);
    RUN(test_charset);
    RUN(test_ctc);
    return tu_finish("test_ocr_geometry");
}
