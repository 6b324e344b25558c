/*
 * jpeg.c — JPEG through libjpeg(-turbo): decoding a file held in memory to 8-bit RGB (gray, RGB
 * and YCbCr files converted by libjpeg; CMYK and YCCK ones here). libjpeg's fatal errors and its
 * "Premature end of JPEG file" warning (a truncated file, which libjpeg would otherwise fill
 * with gray) come back by longjmp to the setjmp below, as an error naming the file. Other
 * warnings (e.g. extraneous bytes between markers) are ignored, as image viewers do.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "common/app.h"
#include "vision/vision.h"

typedef struct {
    struct jpeg_error_mgr mgr; /* first: libjpeg hands back a pointer to it */
    jmp_buf jump;
    int truncated;
    char msg[JMSG_LENGTH_MAX];
} jpeg_errors;

static void on_error(j_common_ptr cinfo) {
    jpeg_errors *e = (jpeg_errors *)cinfo->err;
    cinfo->err->format_message(cinfo, e->msg);
    longjmp(e->jump, 1);
}

/* level -1: a warning; 0 and up: trace messages. */
static void on_message(j_common_ptr cinfo, int level) {
    jpeg_errors *e = (jpeg_errors *)cinfo->err;
    if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
        e->truncated = 1;
        longjmp(e->jump, 1);
    }
}

ts_image *ts_jpeg_decode(const uint8_t *data, size_t n, const char *what) {
    struct jpeg_decompress_struct cinfo;
    jpeg_errors err;
    memset(&err, 0, sizeof err);
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = on_error;
    err.mgr.emit_message = on_message;
    ts_image *volatile im = NULL;
    uint8_t *volatile row = NULL;
    if (setjmp(err.jump)) {
        if (err.truncated)
            ts_set_error(TS_ERR_IO, "%s: truncated JPEG: the file ends after %zu bytes, before the image does", what,
                         n);
        else
            ts_set_error(TS_ERR_IO, "%s: corrupt JPEG: %s", what, err.msg);
        goto fail;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)n);
    jpeg_read_header(&cinfo, TRUE);
    im = ts_image_alloc(cinfo.image_width, cinfo.image_height, what);
    if (!im) goto fail;
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    if (cinfo.output_width != (JDIMENSION)im->width || cinfo.output_height != (JDIMENSION)im->height ||
        cinfo.output_components != (cmyk ? 4 : 3)) {
        ts_set_error(TS_ERR_UNSUPPORTED, "%s: JPEG decodes to %u x %u x %d, not %d x %d RGB", what, cinfo.output_width,
                     cinfo.output_height, cinfo.output_components, im->width, im->height);
        goto fail;
    }
    if (cmyk) {
        row = malloc((size_t)im->width * 4);
        if (!row) {
            ts_set_error(TS_ERR_NOMEM, "%s: out of memory decoding a JPEG", what);
            goto fail;
        }
    }
    /* Adobe's CMYK JPEGs store the inks inverted (0 = full ink); others store them as they are. */
    int inverted = cinfo.saw_Adobe_marker;
    while (cinfo.output_scanline < cinfo.output_height) {
        uint8_t *dst = im->rgb + (size_t)cinfo.output_scanline * (size_t)im->width * 3;
        JSAMPROW rows[1] = {cmyk ? row : dst};
        jpeg_read_scanlines(&cinfo, rows, 1);
        if (!cmyk) continue;
        /* The colour left after the inks: R = (1 - C)(1 - K), likewise G with M and B with Y. */
        for (int x = 0; x < im->width; x++) {
            const uint8_t *p = row + 4 * x;
            unsigned k = inverted ? p[3] : 255u - p[3];
            for (int c = 0; c < 3; c++) {
                unsigned left = inverted ? p[c] : 255u - p[c];
                dst[3 * x + c] = (uint8_t)((left * k + 127u) / 255u);
            }
        }
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    free(row);
    return im;

fail:
    jpeg_destroy_decompress(&cinfo);
    free(row);
    ts_image_free(im);
    return NULL;
}
