/*
 * resize.c — ONNX mappings of spatial resampling: Resize / Upsample (the last two dims, nearest or
 * linear; ts_resize2d), GridSample (ts_grid_sample) and RoiAlign (ts_roi_align, mode avg).
 */

#include "onnx/map/map.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

/* ------------------------------------------------------------------ Resize, Upsample */

static ts_status resize(ts_onnx_ctx *cx, const ts_onnx_node *n, int scales_in, int sizes_in) {
    int64_t xs[TS_MAX_DIMS], sizes[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, xs);
    const char *mode = onnx_attr_string(cx, n, "mode", "nearest");
    const char *ctm = onnx_attr_string(cx, n, "coordinate_transformation_mode", cx->opset < 11 ? "asymmetric" : "half_pixel");
    const char *nm = onnx_attr_string(cx, n, "nearest_mode", "round_prefer_floor");
    float cubic = onnx_attr_float(cx, n, "cubic_coeff_a", -0.75f);
    (void)cubic; /* cubic mode is refused below, so its coefficient never matters */
    if (onnx_attr_int(cx, n, "exclude_outside", 0) != 0) return onnx_unsupported(cx, n, "exclude_outside 1");
    onnx_attr_ignore(cx, n, "extrapolation_value"); /* tf_crop_and_resize only, refused below */
    if (onnx_attr_has(cx, n, "antialias") || onnx_attr_has(cx, n, "axes") || onnx_attr_has(cx, n, "keep_aspect_ratio_policy"))
        return onnx_unsupported(cx, n, "opset 18 attributes");
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    ts_resize_opts o = {0};
    if (!strcmp(mode, "nearest")) o.mode = TS_RESIZE_NEAREST;
    else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear")) o.mode = TS_RESIZE_LINEAR;
    else return onnx_unsupported(cx, n, "mode '%s' (nearest and linear only)", mode);
    if (!strcmp(ctm, "half_pixel")) o.coord = TS_COORD_HALF_PIXEL;
    else if (!strcmp(ctm, "asymmetric")) o.coord = TS_COORD_ASYMMETRIC;
    else if (!strcmp(ctm, "align_corners")) o.coord = TS_COORD_ALIGN_CORNERS;
    else if (!strcmp(ctm, "pytorch_half_pixel")) o.coord = TS_COORD_PYTORCH_HALF_PIXEL;
    else return onnx_unsupported(cx, n, "coordinate_transformation_mode '%s'", ctm);
    if (!strcmp(nm, "round_prefer_floor")) o.round = TS_ROUND_PREFER_FLOOR;
    else if (!strcmp(nm, "round_prefer_ceil")) o.round = TS_ROUND_PREFER_CEIL;
    else if (!strcmp(nm, "floor")) o.round = TS_ROUND_FLOOR;
    else if (!strcmp(nm, "ceil")) o.round = TS_ROUND_CEIL;
    else return onnx_invalid(cx, n, "nearest_mode '%s'", nm);
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    if (r < 2) return onnx_invalid(cx, n, "the input has rank %d", r);
    /* the output size: from sizes, or floor(in x scale) with the scale used in the coordinates */
    const ts_tensor *sc = scales_in >= 0 && onnx_has_in(n, scales_in) ? onnx_known(cx, n, scales_in) : NULL;
    int have_sizes = sizes_in >= 0 && onnx_has_in(n, sizes_in);
    if (scales_in >= 0 && onnx_has_in(n, scales_in) && !sc)
        return onnx_unsupported(cx, n, "scales must be known when the model is imported");
    if (sc && ts_tensor_numel(sc) == 0) sc = NULL; /* opset 11-12: an empty scales with sizes */
    if (have_sizes) {
        int ns = onnx_known_ints(cx, n, sizes_in, sizes, TS_MAX_DIMS, "sizes");
        if (ns < 0) return TS_ERR_UNSUPPORTED;
        if (ns != r) return onnx_invalid(cx, n, "sizes has %d entries for rank %d", ns, r);
        if (sc) return onnx_invalid(cx, n, "both scales and sizes are given");
    } else if (sc) {
        if (ts_tensor_numel(sc) != r || (sc->dtype != TS_F32)) return onnx_invalid(cx, n, "scales must be %d floats", r);
        for (int i = 0; i < r; i++) {
            float s = ((const float *)sc->data)[i];
            if (!(s > 0) || isinf(s)) return onnx_invalid(cx, n, "scale %d is %g", i, (double)s);
            double sz = floor((double)xs[i] * (double)s);
            if (sz > (double)((int64_t)1 << 40)) return onnx_unsupported(cx, n, "scale %d (%g) makes a dim of %g", i, (double)s, sz);
            sizes[i] = (int64_t)sz;
        }
        o.scale[0] = ((const float *)sc->data)[r - 2];
        o.scale[1] = ((const float *)sc->data)[r - 1];
        /* ONNX's align_corners divides by (in x scale - 1), unrounded; tessera's by (out - 1) */
        for (int i = r - 2; i < r && o.coord == TS_COORD_ALIGN_CORNERS; i++)
            if ((double)xs[i] * ((const float *)sc->data)[i] != (double)sizes[i])
                return onnx_unsupported(cx, n, "align_corners with a scale that does not give a whole output size");
    } else {
        return onnx_invalid(cx, n, "neither scales nor sizes");
    }
    for (int i = 0; i < r - 2; i++)
        if (sizes[i] != xs[i]) return onnx_unsupported(cx, n, "resizing dim %d (only the last two dims)", i);
    if (sizes[r - 2] < 1 || sizes[r - 1] < 1) return onnx_unsupported(cx, n, "an empty output");
    return onnx_set(cx, n, 0, ts_resize2d(cx->g, onnx_in(cx, n, 0), sizes[r - 2], sizes[r - 1], &o));
}

/* Resize: scales at input 1 (opset 10), roi, scales and sizes at inputs 1, 2, 3 (from 11). */

static ts_status imp_resize(ts_onnx_ctx *cx, const ts_onnx_node *n) {

    return cx->opset < 11 ? resize(cx, n, 1, -1) : resize(cx, n, 2, 3);

}

/* Upsample (opset 9): scales as input 1, asymmetric coordinates, floor for nearest. */
static ts_status imp_upsample(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    const char *mode = onnx_attr_string(cx, n, "mode", "nearest");
    int64_t xs[TS_MAX_DIMS];
    int r = onnx_in_shape(cx, n, 0, xs);
    const ts_tensor *sc = onnx_known(cx, n, 1);
    if (!sc) return onnx_unsupported(cx, n, "scales must be known when the model is imported");
    if (onnx_need_f32(cx, n, 0, 0)) return TS_ERR_UNSUPPORTED;
    if (ts_tensor_numel(sc) != r || sc->dtype != TS_F32) return onnx_invalid(cx, n, "scales must be %d floats", r);
    ts_resize_opts o = {strcmp(mode, "nearest") ? TS_RESIZE_LINEAR : TS_RESIZE_NEAREST, TS_COORD_ASYMMETRIC, TS_ROUND_FLOOR,
                        {((const float *)sc->data)[r - 2], ((const float *)sc->data)[r - 1]}};
    if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "bilinear"))
        return onnx_unsupported(cx, n, "mode '%s'", mode);
    for (int i = 0; i < r - 2; i++)
        if (((const float *)sc->data)[i] != 1.f) return onnx_unsupported(cx, n, "upsampling dim %d (only the last two dims)", i);
    double fh = floor((double)xs[r - 2] * o.scale[0]), fw = floor((double)xs[r - 1] * o.scale[1]);
    if (!(fh >= 1 && fw >= 1)) return onnx_unsupported(cx, n, "an empty output (or a NaN scale)");
    if (fh > (double)((int64_t)1 << 40) || fw > (double)((int64_t)1 << 40))
        return onnx_unsupported(cx, n, "scales that make dims of %g x %g", fh, fw);
    int64_t oh = (int64_t)fh, ow = (int64_t)fw;
    return onnx_set(cx, n, 0, ts_resize2d(cx->g, onnx_in(cx, n, 0), oh, ow, &o));
}

/* ------------------------------------------------------------------ GridSample, RoiAlign */

/* GridSample (opset 16): ts_grid_sample with ONNX's attribute names and defaults. */
static ts_status imp_grid_sample(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t xs[TS_MAX_DIMS], gs[TS_MAX_DIMS];
    const char *ms = onnx_attr_string(cx, n, "mode", "bilinear"),
               *ps = onnx_attr_string(cx, n, "padding_mode", "zeros");
    int align = onnx_attr_int(cx, n, "align_corners", 0) != 0;
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    ts_grid_mode mode;
    ts_grid_padding pad;
    if (!strcmp(ms, "bilinear")) mode = TS_GRID_BILINEAR;
    else if (!strcmp(ms, "nearest")) mode = TS_GRID_NEAREST;
    else if (!strcmp(ms, "bicubic")) mode = TS_GRID_BICUBIC;
    else return onnx_invalid(cx, n, "mode '%s'", ms);
    if (!strcmp(ps, "zeros")) pad = TS_GRID_ZEROS;
    else if (!strcmp(ps, "border")) pad = TS_GRID_BORDER;
    else if (!strcmp(ps, "reflection")) pad = TS_GRID_REFLECTION;
    else return onnx_invalid(cx, n, "padding_mode '%s'", ps);
    if (onnx_in_shape(cx, n, 0, xs) != 4 || onnx_in_shape(cx, n, 1, gs) != 4 || gs[0] != xs[0] || gs[3] != 2)
        return onnx_unsupported(cx, n, "shapes other than X [N, C, H, W] and grid [N, OH, OW, 2]");
    if (onnx_need_f32(cx, n, 0, 1) || map_need_nonempty(cx, n, 0) || map_need_nonempty(cx, n, 1))
        return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_grid_sample(cx->g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), mode, pad, align));
}

/* RoiAlign (opsets 10 and 16; 10 has no coordinate_transformation_mode and behaves as
 * output_half_pixel): ts_roi_align, mode avg only. */
static ts_status imp_roi_align(ts_onnx_ctx *cx, const ts_onnx_node *n) {
    int64_t xs[TS_MAX_DIMS], rs[TS_MAX_DIMS], bs[TS_MAX_DIMS];
    const char *mode = onnx_attr_string(cx, n, "mode", "avg");
    const char *ct = cx->opset >= 16 ? onnx_attr_string(cx, n, "coordinate_transformation_mode", "half_pixel")
                                     : "output_half_pixel";
    int64_t oh = onnx_attr_int(cx, n, "output_height", 1), ow = onnx_attr_int(cx, n, "output_width", 1);
    int64_t ratio = onnx_attr_int(cx, n, "sampling_ratio", 0);
    float scale = onnx_attr_float(cx, n, "spatial_scale", 1.f);
    if (cx->node_refused) return TS_ERR_UNSUPPORTED;
    if (strcmp(mode, "avg")) return onnx_unsupported(cx, n, "mode '%s' (avg only)", mode);
    int half = !strcmp(ct, "half_pixel");
    if (!half && strcmp(ct, "output_half_pixel")) return onnx_invalid(cx, n, "coordinate_transformation_mode '%s'", ct);
    if (oh < 1 || ow < 1 || oh > 1 << 16 || ow > 1 << 16 || ratio < 0 || ratio > 4096)
        return onnx_unsupported(cx, n, "output %lld x %lld, sampling_ratio %lld", (long long)oh, (long long)ow,
                                (long long)ratio);
    if (onnx_in_shape(cx, n, 0, xs) != 4 || onnx_in_shape(cx, n, 1, rs) != 2 || rs[1] != 4 ||
        onnx_in_shape(cx, n, 2, bs) != 1 || bs[0] != rs[0])
        return onnx_invalid(cx, n, "X must be [N, C, H, W], rois [R, 4] and batch_indices [R]");
    if (onnx_need_f32(cx, n, 0, 1) || onnx_need_dtype(cx, n, 2, (const ts_dtype[]){TS_I64, TS_I32}, 2) ||
        map_need_nonempty(cx, n, 0) || map_need_nonempty(cx, n, 1))
        return TS_ERR_UNSUPPORTED;
    return onnx_set(cx, n, 0, ts_roi_align(cx->g, onnx_in(cx, n, 0), onnx_in(cx, n, 1), onnx_in(cx, n, 2), (int)oh,
                                           (int)ow, (int)ratio, scale, half));
}


/* ------------------------------------------------------------------ the family's table */

static const ts_onnx_op ops[] = {
    {"Upsample", 9, 9, imp_upsample},
    {"Resize", 10, 17, imp_resize},
    {"GridSample", 16, 17, imp_grid_sample},
    {"RoiAlign", 10, 17, imp_roi_align},
};
const onnx_family onnx_family_resize = {"resize", ops, (int)(sizeof ops / sizeof *ops)};
