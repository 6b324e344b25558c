/*
 * ocr.c — the OCR pipeline (ts_ocr_new, ts_ocr_run): PaddleOCR's PP-OCR system on its three ONNX
 * models, each run by a tessera ONNX session (one compiled program per input shape).
 *
 *   1. detection (det.c): the image at most 960 pixels on its longer side -> DB's probability
 *      map -> boxes of text lines in image pixels, in reading order;
 *   2. each box cut out and straightened (crop.c), with a margin of CROP_MARGIN_ACROSS times its
 *      height at its ends and CROP_MARGIN_DOWN times above and below (the box itself, as DB
 *      gives it, is what ts_ocr_run reports). PaddleOCR crops the bare box, but DB's boxes hug
 *      the text (a box of 24-pixel type is about 24 pixels tall) and may stop short of a small
 *      last character. Measured on 12 English and 12 Chinese sentences drawn at 24, 32 and 48
 *      pixels (Noto Sans CJK SC): with bare boxes 19 of the 36 English lines read exactly (12
 *      lost their final ".", 4 the space between two words, 3 read "100" as "1o0" or "1oo") and
 *      35 of the 36 Chinese ones (a final "。" lost); with margins of 0.3 to 0.5 times the height
 *      across and 0.1 to 0.15 down, all 72. On 216 English lines (36 sentences, each at 24, 32
 *      and 48 pixels, as PNG and as JPEG) margins of 0.4 and 0.12 read 215 exactly (one lost a
 *      space: the recogniser gave blank 0.52 against space 0.48 at its one step), 0.3-0.5 and
 *      0.09-0.15 read 213-215, and 0.4 and 0.06 read 208. The recogniser may read the margin as
 *      a space: spaces at the ends of a line are removed;
 *   3. direction (cls.c): lines the classifier finds upside down (probability > 0.9, over
 *      windows of the line) are turned half a turn; the windows go in batches of CLS_BATCH, the
 *      last one padded, so one program serves all;
 *   4. recognition (rec.c): each line at height 48 and its own width -> CTC greedy decoding
 *      against the keys file. Lines go one at a time, in order of width: PaddleOCR batches 6,
 *      padding the narrower ones with zeros to the widest, but padding changes what the
 *      recogniser reads (a line of 48-pixel English lost the space in "bought 3" when padded by 16
 *      to 32 columns), and one at a time also took less time (on 12 lines of 24-pixel text, 1.9 s
 *      of CPU against 2.6 s in batches of 6). Each width is a program of its own, compiled once
 *      and kept by the session while it is among the 8 most recent;
 *   5. lines read with a confidence below drop_score (0.5), or as nothing, are left out.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/app.h"
#include "ocr/ocr_impl.h"

#define CLS_BATCH 6
#define CLS_THRESH 0.9f
#define REC_BATCH 1
#define CROP_MARGIN_ACROSS 0.4f
#define CROP_MARGIN_DOWN 0.12f

enum { DET, CLS, REC, NMODELS };
static const char *const MODEL_NAMES[NMODELS] = {"detector", "direction classifier", "recogniser"};
static const char *const DEFAULT_FILES[NMODELS] = {"ch_PP-OCRv4_det_infer.onnx", "ch_ppocr_mobile_v2.0_cls_infer.onnx",
                                                   "ch_PP-OCRv4_rec_infer.onnx"};

struct ts_ocr {
    ts_onnx *model[NMODELS];
    ts_onnx_session *session[NMODELS];
    char *path[NMODELS];
    ocr_charset *chars;
    char *keys_path;
    const uint8_t *allowed; /* NULL: every class; else chars->ascii */
    int use_cls;
    ocr_det_params det;
    float drop_score;
};

/* dir/name, or `given` when set (malloc'ed; NULL when out of memory). */
static char *file_in(const char *dir, const char *name, const char *given) {
    if (given) return strdup(given);
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

void ts_ocr_free(ts_ocr *ocr) {
    if (!ocr) return;
    for (int i = 0; i < NMODELS; i++) {
        ts_onnx_session_free(ocr->session[i]);
        ts_onnx_free(ocr->model[i]);
        free(ocr->path[i]);
    }
    ocr_charset_free(ocr->chars);
    free(ocr->keys_path);
    free(ocr);
}

/* The model must take one f32 image batch [N, 3, H, W] (H fixed to want_h when want_h > 0) and
 * give one output. */
static ts_status check_model(const ts_ocr *ocr, int which, int want_h) {
    const ts_onnx *m = ocr->model[which];
    const char *path = ocr->path[which];
    if (ts_onnx_num_inputs(m) != 1 || ts_onnx_num_outputs(m) != 1)
        return ts_set_error(TS_ERR_ARG, "%s: the OCR %s should have 1 input and 1 output, this model has %d and %d",
                            path, MODEL_NAMES[which], ts_onnx_num_inputs(m), ts_onnx_num_outputs(m));
    ts_dtype dt;
    int64_t sh[TS_MAX_DIMS];
    int nd = ts_onnx_input_shape(m, 0, &dt, sh);
    if (nd != 4 || dt != TS_F32 || (sh[1] != 3 && sh[1] != -1) || (want_h > 0 && sh[2] != want_h && sh[2] != -1))
        return ts_set_error(TS_ERR_ARG,
                            "%s: the OCR %s should take an f32 image batch [N, 3, %s, W], this model's input '%s' is "
                            "%s of rank %d",
                            path, MODEL_NAMES[which], want_h > 0 ? "48" : "H", ts_onnx_input_name(m, 0),
                            ts_dtype_name(dt), nd);
    return TS_OK;
}

ts_ocr *ts_ocr_new(const ts_ocr_opts *opts) {
    ts_ocr_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_ocr_opts, "ts_ocr_new")) return NULL;
    const char *dir = o.models_dir ? o.models_dir : ".";
    int ascii_only = 0;
    if (o.lang && strcmp(o.lang, "ch") != 0) {
        if (strcmp(o.lang, "en") != 0) {
            ts_set_error(TS_ERR_ARG,
                         "ocr: lang \"%s\" is not ch (every character the recogniser knows) or en (ASCII only)",
                         o.lang);
            return NULL;
        }
        ascii_only = 1;
    }
    if (o.num_threads < 0 || o.num_threads > ts_max_threads() || o.limit_side_len < 0 || o.det_thresh < 0 ||
        o.det_thresh >= 1 || o.box_thresh < 0 || o.box_thresh > 1 || o.unclip_ratio < 0 || o.drop_score < 0 ||
        o.drop_score > 1) {
        ts_set_error(TS_ERR_ARG,
                     "ocr: an option is out of range (threads 0..%d, limit_side_len >= 0, thresholds in [0, 1], "
                     "unclip_ratio >= 0)",
                     ts_max_threads());
        return NULL;
    }
    ts_ocr *ocr = calloc(1, sizeof *ocr);
    if (!ocr) {
        ts_set_error(TS_ERR_NOMEM, "ocr: out of memory");
        return NULL;
    }
    ocr->det = (ocr_det_params){
        .limit_side_len = o.limit_side_len ? o.limit_side_len : 960,
        .thresh = o.det_thresh > 0 ? o.det_thresh : 0.3f,
        .box_thresh = o.box_thresh > 0 ? o.box_thresh : 0.6f,
        .unclip_ratio = o.unclip_ratio > 0 ? o.unclip_ratio : 1.5f,
        .max_candidates = 1000,
    };
    ocr->drop_score = o.drop_score > 0 ? o.drop_score : 0.5f;
    ocr->use_cls = !o.no_cls;
    const char *given[NMODELS] = {o.det_model, o.cls_model, o.rec_model};
    ts_compile_opts copts = {.struct_size = sizeof copts, .num_threads = o.num_threads, .inference = 1, .device = o.device,
                             .strict_device = o.strict_device, .quantize = o.quantize};
    for (int i = 0; i < NMODELS; i++) {
        if (i == CLS && !ocr->use_cls) continue;
        ocr->path[i] = file_in(dir, DEFAULT_FILES[i], given[i]);
        if (!ocr->path[i]) goto oom;
        ocr->model[i] = ts_onnx_load(ocr->path[i]);
        if (!ocr->model[i] || check_model(ocr, i, i == DET ? 0 : 48) != TS_OK) goto fail;
        ocr->session[i] = ts_onnx_session_new(ocr->model[i], &copts);
        if (!ocr->session[i]) goto fail;
    }
    ocr->keys_path = file_in(dir, "ppocr_keys_v1.txt", o.keys);
    if (!ocr->keys_path) goto oom;
    ocr->chars = ocr_charset_load(ocr->keys_path);
    if (!ocr->chars) goto fail;
    ocr->allowed = ascii_only ? ocr->chars->ascii : NULL;
    return ocr;

oom:
    ts_set_error(TS_ERR_NOMEM, "ocr: out of memory");
fail:
    ts_ocr_free(ocr);
    return NULL;
}

void ts_ocr_lines_free(ts_ocr_line *lines, int n) {
    if (!lines) return;
    for (int i = 0; i < n; i++) free(lines[i].text);
    free(lines);
}

/* Run model `which` on one input; its output, or NULL (error set, naming the model). */
static ts_tensor *run_model(ts_ocr *ocr, int which, const ts_tensor *in) {
    ts_tensor *out = NULL;
    const ts_tensor *ins[1] = {in};
    if (ts_onnx_session_run(ocr->session[which], ins, &out) != TS_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", ts_last_error());
        ts_set_error(ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME, "ocr: the %s (%s) failed: %s",
                     MODEL_NAMES[which], ocr->path[which], msg);
        return NULL;
    }
    return out;
}

/* Step 1: the boxes of text in im. Returns the count, -1 on failure. */
static int detect(ts_ocr *ocr, const ts_image *im, ocr_box **boxes) {
    int rw, rh;
    ocr_det_size(im->width, im->height, ocr->det.limit_side_len, &rw, &rh);
    ts_tensor *in = ocr_det_input(im, rw, rh);
    if (!in) return -1;
    ts_tensor *prob = run_model(ocr, DET, in);
    ts_tensor_free(in);
    if (!prob) return -1;
    const int64_t *sh = ts_tensor_shape(prob);
    if (ts_tensor_ndim(prob) != 4 || sh[0] != 1 || sh[1] != 1 || sh[2] != rh || sh[3] != rw) {
        ts_set_error(TS_ERR_SHAPE,
                     "%s: the detector should give a probability map [1, 1, %d, %d] for an input [1, 3, %d, %d]",
                     ocr->path[DET], rh, rw, rh, rw);
        ts_tensor_free(prob);
        return -1;
    }
    int n = ocr_det_boxes(ts_tensor_data(prob), rw, rh, im->width, im->height, &ocr->det, boxes);
    ts_tensor_free(prob);
    return n;
}

/* Step 3: turn the lines the classifier finds upside down (cls.c): every line at height 48, cut
 * into windows of 192 columns; the windows of all lines go through the model CLS_BATCH at a time. */
static ts_status orient(ts_ocr *ocr, ts_image **crops, int n) {
    ts_image **l48 = calloc((size_t)n, sizeof *l48);
    int *first = malloc(sizeof *first * (size_t)(n + 1)); /* line i's windows: first[i] .. first[i+1) */
    ts_status s = l48 && first ? TS_OK : ts_set_error(TS_ERR_NOMEM, "ocr: out of memory");
    int total = 0;
    for (int i = 0; i < n && !s; i++) {
        int w = ocr_cls_line_width(crops[i]);
        if (!(l48[i] = ts_image_resize(crops[i], w, OCR_CLS_H, TS_INTERP_CUBIC))) s = ts_last_status();
        first[i] = total;
        total += ocr_cls_windows(w);
    }
    float *p180 = NULL;
    int *cols = NULL;
    ts_tensor *in = NULL;
    if (!s) {
        first[n] = total;
        p180 = malloc(sizeof *p180 * (size_t)total);
        cols = malloc(sizeof *cols * (size_t)total);
        in = ts_tensor_new(TS_F32, 4, (int64_t[]){CLS_BATCH, 3, OCR_CLS_H, OCR_CLS_W});
        if (!p180 || !cols || !in)
            s = ts_set_error(TS_ERR_NOMEM, "ocr: out of memory for %d classifier windows", total);
    }
    size_t one = (size_t)3 * OCR_CLS_H * OCR_CLS_W;
    for (int start = 0, line = 0; start < total && !s; start += CLS_BATCH) {
        int b = total - start < CLS_BATCH ? total - start : CLS_BATCH;
        float *x = ts_tensor_data(in);
        memset(x, 0, sizeof *x * one * CLS_BATCH); /* a short last batch: blank windows after */
        for (int j = 0; j < b; j++) {
            int k = start + j;
            while (first[line + 1] <= k) line++;
            ocr_cls_window(l48[line], k - first[line], x + one * (size_t)j, &cols[k]);
        }
        ts_tensor *out = run_model(ocr, CLS, in);
        if (!out) {
            s = ts_last_status();
            break;
        }
        if (ts_tensor_ndim(out) != 2 || ts_tensor_shape(out)[0] != CLS_BATCH || ts_tensor_shape(out)[1] != 2)
            s = ts_set_error(TS_ERR_SHAPE, "%s: the direction classifier should give [%d, 2] (labels 0 and 180)",
                             ocr->path[CLS], CLS_BATCH);
        else
            for (int j = 0; j < b; j++) p180[start + j] = ((const float *)ts_tensor_data(out))[2 * j + 1];
        ts_tensor_free(out);
    }
    for (int i = 0; i < n && !s; i++)
        if (ocr_cls_flipped(p180 + first[i], cols + first[i], first[i + 1] - first[i], CLS_THRESH)) {
            ts_image *turned = ts_image_rotate(crops[i], 2);
            if (!turned) {
                s = ts_last_status();
                break;
            }
            ts_image_free(crops[i]);
            crops[i] = turned;
        }
    for (int i = 0; i < n && l48; i++) ts_image_free(l48[i]);
    free(l48);
    free(first);
    free(p180);
    free(cols);
    ts_tensor_free(in);
    return s;
}

/* Step 4: read the lines: sorted by width, REC_BATCH at a time, each batch as wide as its widest
 * line. texts[i] and confs[i] for crops[i]; on failure the texts made so far are left for the
 * caller to free. */
static int by_width(const void *a, const void *b) {
    const int *x = a, *y = b;
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

static ts_status recognise(ts_ocr *ocr, ts_image **crops, int n, char **texts, float *confs) {
    int (*order)[2] = malloc(sizeof *order * (size_t)n); /* (width, line) */
    if (!order) return ts_set_error(TS_ERR_NOMEM, "ocr: out of memory");
    for (int i = 0; i < n; i++) order[i][0] = ocr_rec_width(crops[i]), order[i][1] = i;
    qsort(order, (size_t)n, sizeof *order, by_width);
    ts_status s = TS_OK;
    for (int start = 0; start < n && !s; start += REC_BATCH) {
        int b = n - start < REC_BATCH ? n - start : REC_BATCH;
        int w = order[start + b - 1][0];
        ts_tensor *in = ts_tensor_new(TS_F32, 4, (int64_t[]){b, 3, OCR_REC_H, w});
        if (!in) {
            s = ts_last_status();
            break;
        }
        size_t one = (size_t)3 * OCR_REC_H * (size_t)w;
        for (int j = 0; j < b; j++) ocr_rec_input(crops[order[start + j][1]], w, (float *)ts_tensor_data(in) + one * j);
        ts_tensor *out = run_model(ocr, REC, in);
        ts_tensor_free(in);
        if (!out) {
            s = ts_last_status();
            break;
        }
        const int64_t *sh = ts_tensor_shape(out);
        if (ts_tensor_ndim(out) != 3 || sh[0] != b || sh[2] != ocr->chars->n) {
            s = ts_set_error(TS_ERR_SHAPE,
                             "%s: the recogniser gives %d-d output of %lld classes, but %s has %d characters + "
                             "the blank and the space = %d classes; are they a pair?",
                             ocr->path[REC], ts_tensor_ndim(out), (long long)(ts_tensor_ndim(out) == 3 ? sh[2] : -1),
                             ocr->keys_path, ocr->chars->n - 2, ocr->chars->n);
            ts_tensor_free(out);
            break;
        }
        const float *p = ts_tensor_data(out);
        for (int j = 0; j < b && !s; j++) {
            int i = order[start + j][1];
            texts[i] = ocr_ctc_decode(p + (size_t)j * (size_t)(sh[1] * sh[2]), (int)sh[1], (int)sh[2], ocr->chars,
                                      ocr->allowed, &confs[i]);
            if (!texts[i]) s = ts_set_error(TS_ERR_NOMEM, "ocr: out of memory");
        }
        ts_tensor_free(out);
    }
    free(order);
    return s;
}

/* Step 2's box: the detected one with a margin (see the top of this file), within the image. */
static void crop_box(const ocr_pt box[4], const ts_image *im, ocr_pt out[4]) {
    float h = (hypotf(box[3].x - box[0].x, box[3].y - box[0].y) + hypotf(box[2].x - box[1].x, box[2].y - box[1].y)) / 2;
    ocr_expand_box(box, CROP_MARGIN_ACROSS * h, CROP_MARGIN_DOWN * h, out);
    for (int k = 0; k < 4; k++) {
        out[k].x = fminf(fmaxf(out[k].x, 0), (float)(im->width - 1));
        out[k].y = fminf(fmaxf(out[k].y, 0), (float)(im->height - 1));
    }
}

/* Remove the spaces at both ends of s (the recogniser may read the crop's margin as one). */
static void trim_spaces(char *s) {
    size_t a = strspn(s, " "), e = strlen(s);
    while (e > a && s[e - 1] == ' ') e--;
    memmove(s, s + a, e - a);
    s[e - a] = 0;
}

ts_status ts_ocr_run(ts_ocr *ocr, const ts_image *im, ts_ocr_line **lines, int *nlines) {
    if (lines) *lines = NULL;
    if (nlines) *nlines = 0;
    if (!ocr || !im || !im->rgb || im->width <= 0 || im->height <= 0 || !lines || !nlines)
        return ts_set_error(TS_ERR_ARG, "ts_ocr_run: %s",
                            !ocr ? "no OCR (ts_ocr_new failed?)" : "bad image or outputs");
    ocr_box *boxes = NULL;
    int n = detect(ocr, im, &boxes);
    if (n < 0) return ts_last_status();
    ts_image **crops = calloc((size_t)(n ? n : 1), sizeof *crops);
    ts_ocr_line *out = calloc((size_t)(n ? n : 1), sizeof *out);
    ts_status s = crops && out ? TS_OK : ts_set_error(TS_ERR_NOMEM, "ocr: out of memory for %d lines", n);
    int m = 0; /* boxes that could be cut out, moved to the front */
    for (int i = 0; i < n && !s; i++) {
        ocr_pt margin[4];
        crop_box(boxes[i].p, im, margin);
        if ((crops[m] = ocr_crop(im, margin))) boxes[m++] = boxes[i];
        else if (ts_last_status() != TS_ERR_ARG) s = ts_last_status(); /* TS_ERR_ARG: under a pixel, skipped */
    }
    n = m;
    if (!s && ocr->use_cls && n) s = orient(ocr, crops, n);
    char **texts = calloc((size_t)(n ? n : 1), sizeof *texts);
    float *confs = calloc((size_t)(n ? n : 1), sizeof *confs);
    if (!s && (!texts || !confs)) s = ts_set_error(TS_ERR_NOMEM, "ocr: out of memory for %d lines", n);
    if (!s && n) s = recognise(ocr, crops, n, texts, confs);
    int kept = 0;
    for (int i = 0; i < n && !s; i++) {
        trim_spaces(texts[i]);
        if (!texts[i][0] || confs[i] < ocr->drop_score) continue;
        for (int k = 0; k < 4; k++) out[kept].box[k][0] = boxes[i].p[k].x, out[kept].box[k][1] = boxes[i].p[k].y;
        out[kept].text = texts[i];
        out[kept].confidence = confs[i];
        texts[i] = NULL;
        kept++;
    }
    for (int i = 0; i < n && texts; i++) free(texts[i]);
    free(texts);
    free(confs);
    for (int i = 0; i < n && crops; i++) ts_image_free(crops[i]);
    free(crops);
    free(boxes);
    if (s) {
        ts_ocr_lines_free(out, kept);
        return s;
    }
    *lines = out;
    *nlines = kept;
    return TS_OK;
}
