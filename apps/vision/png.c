/*
 * png.c — PNG through libpng: decoding a file held in memory to 8-bit RGB, and writing an RGB
 * image. libpng reports errors by longjmp to the setjmp of the call that started it; its message
 * is kept and becomes ts_last_error(), and nothing is left allocated.
 */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/app.h"
#include "vision/vision.h"

typedef struct {
    const uint8_t *data;
    size_t n, pos;
    int truncated;
    char msg[200];
} png_source;

static void on_error(png_structp png, png_const_charp msg) {
    png_source *s = png_get_error_ptr(png);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) { (void)png, (void)msg; }

static void read_bytes(png_structp png, png_bytep out, size_t len) {
    png_source *s = png_get_io_ptr(png);
    if (len > s->n - s->pos) {
        s->truncated = 1;
        png_error(png, "the file ends early");
    }
    memcpy(out, s->data + s->pos, len);
    s->pos += len;
}

ts_image *ts_png_decode(const uint8_t *data, size_t n, const char *what) {
    png_source src = {.data = data, .n = n};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        ts_set_error(TS_ERR_NOMEM, "%s: out of memory starting libpng", what);
        return NULL;
    }
    /* Changed between setjmp and a longjmp back to it, so volatile. */
    ts_image *volatile im = NULL;
    uint8_t *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        if (src.truncated)
            ts_set_error(TS_ERR_IO, "%s: truncated PNG: the file ends after %zu bytes, before the image does", what, n);
        else
            ts_set_error(TS_ERR_IO, "%s: corrupt PNG: %s", what, src.msg);
        goto fail;
    }
    png_set_read_fn(png, &src, read_bytes);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    im = ts_image_alloc(w, h, what);
    if (!im) goto fail;
    png_set_expand(png);   /* palette -> RGB, gray < 8 bits -> 8, tRNS -> an alpha channel */
    png_set_scale_16(png); /* 16-bit samples -> 8, rounded */
    png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int channels = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if ((channels != 3 && channels != 4) || rowbytes != (size_t)w * (size_t)channels) {
        ts_set_error(TS_ERR_UNSUPPORTED, "%s: PNG decodes to %d channels of %zu bytes a row, not RGB(A)", what,
                     channels, rowbytes);
        goto fail;
    }
    pixels = channels == 3 ? im->rgb : malloc(rowbytes * h);
    rows = malloc(sizeof *rows * h);
    if (!pixels || !rows) {
        ts_set_error(TS_ERR_NOMEM, "%s: out of memory decoding a %u x %u PNG", what, (unsigned)w, (unsigned)h);
        goto fail;
    }
    for (png_uint_32 y = 0; y < h; y++) rows[y] = pixels + (size_t)y * rowbytes;
    png_read_image(png, rows);
    png_read_end(png, NULL); /* the chunks after the image, to IEND: a file cut there is truncated too */
    if (channels == 4) {
        size_t npix = (size_t)w * h;
        for (size_t i = 0; i < npix; i++) {
            const uint8_t *p = pixels + 4 * i;
            for (int c = 0; c < 3; c++) im->rgb[3 * i + c] = ts_over_white(p[c], p[3]);
        }
        free(pixels);
    }
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    return im;

fail:
    if (im && pixels != im->rgb) free(pixels);
    free(rows);
    ts_image_free(im);
    png_destroy_read_struct(&png, &info, NULL);
    return NULL;
}

typedef struct png_body {
    const ts_image *im;
    const char *path;
} png_body;

/* The image as PNG into f (ts_write_atomic_with's body). */
static ts_status write_png_body(FILE *f, void *ctx) {
    const png_body *b = ctx;
    const ts_image *im = b->im;
    png_source src = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &src, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_bytep *volatile rows = NULL;
    if (!info || setjmp(png_jmpbuf(png))) {
        ts_status s = info ? ts_set_error(TS_ERR_IO, "%s: writing the PNG failed: %s", b->path, src.msg)
                           : ts_set_error(TS_ERR_NOMEM, "%s: writing the PNG failed: out of memory", b->path);
        png_destroy_write_struct(&png, &info);
        free(rows);
        return s;
    }
    rows = malloc(sizeof *rows * (size_t)im->height);
    if (!rows) png_error(png, "out of memory");
    for (int y = 0; y < im->height; y++) rows[y] = im->rgb + (size_t)y * (size_t)im->width * 3;
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)im->width, (png_uint_32)im->height, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    return TS_OK;
}

ts_status ts_png_write(const ts_image *im, const char *path) {
    png_body b = {im, path};
    return ts_write_atomic_with(path, write_png_body, &b);
}
