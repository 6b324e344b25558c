/*
 * ocr_impl.h — internal to apps/ocr/: the steps of the OCR pipeline (PaddleOCR's PP-OCR system:
 * DB text detection, a 0/180-degree direction classifier, CTC text recognition) as separate
 * functions, so that tests/test_ocr_geometry.c can check each on synthetic data.
 *
 *   det.c       the detector's input (resize, normalise) and DB post-processing (regions of the
 *               probability map -> scored, expanded boxes), and the reading order of boxes
 *   regions.c   8-connected regions of a binary map
 *   geometry.c  convex hull, minimum-area rectangle, polygon offset (unclip), corner order
 *   crop.c      a box cut out of the image by a perspective warp
 *   line_input.c  a line image as the classifier's or the recogniser's input
 *   cls.c       the direction classifier's inputs (windows of a line) and decision
 *   charset.c   the recogniser's character list (PaddleOCR's keys file)
 *   rec.c       the recogniser's input and CTC greedy decoding
 *   ocr.c       the pipeline (ts_ocr_new / ts_ocr_run) on the three ONNX models
 */
#ifndef TS_OCR_IMPL_H
#define TS_OCR_IMPL_H

#include <stdint.h>

#include "common/app.h"

typedef struct ocr_pt {
    float x, y;
} ocr_pt;

/* ---------------------------------------------------------------- geometry.c */

/* Convex hull of n points (Andrew's monotone chain), counter-clockwise in x-right / y-up terms
 * (clockwise on screen, where y points down), without repeated or collinear points. hull must
 * hold n points. Returns the hull's size (n < 3 or all collinear: 1 or 2). */
int ocr_convex_hull(const ocr_pt *pts, int n, ocr_pt *hull);

/* Signed area (shoelace; > 0 when counter-clockwise in x-right / y-up terms) and perimeter. */
double ocr_polygon_area(const ocr_pt *p, int n);
double ocr_polygon_perimeter(const ocr_pt *p, int n);

/* The minimum-area rectangle enclosing n points (rotating calipers over their hull). Its corners
 * go to box in the order of ocr_order_box; returns its shorter side (0 for fewer than 3
 * non-collinear points, whose box is then their extent along their line). */
float ocr_min_area_rect(const ocr_pt *pts, int n, ocr_pt box[4]);

/* Order a rectangle's corners top-left, top-right, bottom-right, bottom-left (on screen): of the
 * two corners with the smallest x, the higher (smaller y) is top-left, the other bottom-left; of
 * the other two, the higher is top-right. */
void ocr_order_box(ocr_pt box[4]);

/* Offset a polygon outwards by distance d with round corners (a Minkowski sum with a disk of
 * radius d; the polygon is taken as its convex hull). Writes at most cap points to out; returns
 * how many (0 when cap is too small or the polygon is degenerate). */
int ocr_offset_polygon(const ocr_pt *poly, int n, double d, ocr_pt *out, int cap);

/* DB's "unclip": the rectangle of the text grown back to its full size. With A its area and L its
 * perimeter, the offset distance is D = A * ratio / L; the result is the minimum-area rectangle of
 * the offset polygon, ordered as ocr_order_box. Returns its shorter side (0 on a degenerate box). */
float ocr_unclip(const ocr_pt box[4], float ratio, ocr_pt out[4]);

/* The box (corners ordered as ocr_order_box) grown by `across` at its left and right ends and by
 * `down` at its top and bottom, along its own sides. */
void ocr_expand_box(const ocr_pt box[4], float across, float down, ocr_pt out[4]);

/* Is point p inside or on the convex polygon poly (any orientation)? */
int ocr_in_convex(const ocr_pt *poly, int n, ocr_pt p);

/* ---------------------------------------------------------------- regions.c */

/* One 8-connected region of a binary map: for each of its rows, its leftmost and rightmost
 * pixel (pixel centres at integer coordinates), which have the same convex hull as the whole
 * region. */
typedef struct ocr_region {
    ocr_pt *pts;
    int npts;
    int npixels;
} ocr_region;

/* The 8-connected regions of the pixels of mask[h * w] that are non-zero, in the order their
 * first pixel comes in a row-major scan, at most max_regions of them. Returns the count (-1 out of
 * memory, with ts_last_error() set); free with ocr_regions_free. */
int ocr_find_regions(const uint8_t *mask, int w, int h, int max_regions, ocr_region **out);
void ocr_regions_free(ocr_region *r, int n);

/* ---------------------------------------------------------------- det.c */

typedef struct ocr_det_params {
    int limit_side_len; /* the longer side is at most this (960) */
    float thresh;       /* binarisation of the probability map (0.3) */
    float box_thresh;   /* least mean probability inside a box (0.6) */
    float unclip_ratio; /* growth of a box (1.5) */
    int max_candidates; /* regions looked at (1000) */
} ocr_det_params;

/* The detector's input size for an image of w x h: scaled so the longer side is at most
 * limit_side_len (never enlarged), each side then rounded to a multiple of 32, at least 32. */
void ocr_det_size(int w, int h, int limit_side_len, int *rw, int *rh);

/* The detector's input [1, 3, rh, rw] f32: im resized (bilinear) and normalised per channel,
 * (v / 255 - mean) / std, in B, G, R order (see det.c). NULL on failure. */
ts_tensor *ocr_det_input(const ts_image *im, int rw, int rh);

/* A detected text box, in image pixels, corners ordered as ocr_order_box. */
typedef struct ocr_box {
    ocr_pt p[4];
    float score; /* mean probability inside the box on the map */
} ocr_box;

/* DB post-processing of the probability map prob[mh * mw] for an image of img_w x img_h: the
 * boxes of its text, sorted in reading order (ocr_sort_boxes). Returns the count (-1 on failure,
 * with ts_last_error() set); *boxes is malloc'ed. */
int ocr_det_boxes(const float *prob, int mw, int mh, int img_w, int img_h, const ocr_det_params *params,
                  ocr_box **boxes);

/* Reading order: by the top-left corner's y, then boxes whose top-left corners are less than 10
 * pixels apart vertically (one line of text) left to right. */
void ocr_sort_boxes(ocr_box *b, int n);

/* ---------------------------------------------------------------- crop.c */

/* The quadrilateral box[4] (top-left, top-right, bottom-right, bottom-left) of im warped to an
 * upright rectangle (perspective transform, bilinear, edges repeated), of width the longer of its
 * top and bottom sides and height the longer of its left and right sides; turned a quarter
 * counter-clockwise when it is at least 1.5 times as tall as wide (vertical text). NULL (error
 * set) when a side is shorter than 1 pixel. */
ts_image *ocr_crop(const ts_image *im, const ocr_pt box[4]);

/* ---------------------------------------------------------------- line_input.c */

/* One byte v as the line models' input value, (v / 255 - 0.5) / 0.5. */
static inline float ocr_norm_pixel(uint8_t v) { return (v / 255.0f - 0.5f) / 0.5f; }

/* A line image as a model input dst[3][h][w] (B, G, R): resized to height h at its aspect ratio
 * (width ceil(h * its w / its h), at most w), normalised (ocr_norm_pixel), zeros to the right. */
void ocr_line_input(const ts_image *line, int h, int w, float *dst);

/* ---------------------------------------------------------------- cls.c */

#define OCR_CLS_H 48
#define OCR_CLS_W 192
/* The width of a line resized to the classifier's height 48 at its aspect ratio. */
int ocr_cls_line_width(const ts_image *line);
/* How many windows of 192 columns a line that wide at height 48 is cut into. */
int ocr_cls_windows(int width48);
/* Window i of line48 (the line at height 48) as the classifier's input dst[3][48][192], zeros after
 * its last column; *columns: the line's columns in it. */
void ocr_cls_window(const ts_image *line48, int i, float *dst, int *columns);
/* From the windows' probabilities of "180" and their columns: is the line upside down (the
 * column-weighted mean above threshold, 0.9)? */
int ocr_cls_flipped(const float *p180, const int *columns, int n, float threshold);

/* ---------------------------------------------------------------- charset.c */

/* The recogniser's classes: 0 the CTC blank, then the lines of the keys file, then " ". */
typedef struct ocr_charset {
    int n;          /* classes, blank included */
    char **chars;   /* chars[i]: class i as UTF-8 (chars[0] = "") */
    uint8_t *ascii; /* ascii[i]: class i is printable ASCII or the space */
} ocr_charset;
/* Read a keys file (one character a line, UTF-8). NULL with an error naming the file. */
ocr_charset *ocr_charset_load(const char *path);
void ocr_charset_free(ocr_charset *cs);

/* ---------------------------------------------------------------- rec.c */

#define OCR_REC_H 48
#define OCR_REC_MIN_W 320
#define OCR_REC_MAX_W 4800
/* The recogniser's input width for a line image: 48 x its aspect ratio, within 320..4800. */
int ocr_rec_width(const ts_image *line);
/* The recogniser's input for one line, dst[3][48][width]. */
void ocr_rec_input(const ts_image *line, int width, float *dst);

/* CTC greedy decoding of probs[T][C]: the most probable class at each step (among the blank and
 * the classes where allowed[c] != 0, when allowed is not NULL), repeats collapsed, blanks
 * dropped. Returns the text (malloc'ed UTF-8) and in *confidence the mean probability of the
 * steps kept (0 for an empty text). NULL out of memory. */
char *ocr_ctc_decode(const float *probs, int T, int C, const ocr_charset *cs, const uint8_t *allowed,
                     float *confidence);

#endif
