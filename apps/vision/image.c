/*
 * image.c — ts_image: allocation, reading a file as PNG or JPEG by its first bytes, and writing
 * one as PNG (the codecs themselves are png.c and jpeg.c, or codecs_off.c in a build without
 * images).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/app.h"
#include "vision/vision.h"

ts_image *ts_image_alloc(int64_t width, int64_t height, const char *what) {
    if (width <= 0 || height <= 0) {
        ts_set_error(TS_ERR_ARG, "%s: an image must have a positive size, not %lld x %lld", what, (long long)width,
                     (long long)height);
        return NULL;
    }
    if (width > TS_IMAGE_MAX_PIXELS || height > TS_IMAGE_MAX_PIXELS || width * height > TS_IMAGE_MAX_PIXELS) {
        ts_set_error(TS_ERR_UNSUPPORTED, "%s: %lld x %lld pixels is more than the %d pixels an image may have", what,
                     (long long)width, (long long)height, TS_IMAGE_MAX_PIXELS);
        return NULL;
    }
    ts_image *im = calloc(1, sizeof *im);
    uint8_t *rgb = im ? malloc((size_t)(width * height) * 3) : NULL;
    if (!rgb) {
        free(im);
        ts_set_error(TS_ERR_NOMEM, "%s: out of memory for a %lld x %lld image", what, (long long)width,
                     (long long)height);
        return NULL;
    }
    im->width = (int)width;
    im->height = (int)height;
    im->rgb = rgb;
    return im;
}

ts_image *ts_image_new(int width, int height, uint8_t fill) {
    ts_image *im = ts_image_alloc(width, height, "ts_image_new");
    if (im) memset(im->rgb, fill, (size_t)width * (size_t)height * 3);
    return im;
}

void ts_image_free(ts_image *im) {
    if (!im) return;
    free(im->rgb);
    free(im);
}

int ts_is_png(const uint8_t *d, size_t n) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    return n >= 8 && memcmp(d, sig, 8) == 0;
}

int ts_is_jpeg(const uint8_t *d, size_t n) { return n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff; }

ts_image *ts_image_decode(const void *data, size_t n, const char *what) {
    if (!what) what = "image";
    if (!data && n) {
        ts_set_error(TS_ERR_ARG, "%s: data is NULL", what);
        return NULL;
    }
    const uint8_t *d = data;
    if (ts_is_png(d, n)) return ts_png_decode(d, n, what);
    if (ts_is_jpeg(d, n)) return ts_jpeg_decode(d, n, what);
    ts_set_error(TS_ERR_IO, "%s: not a PNG or JPEG image (%s)", what,
                 n == 0 ? "the file is empty" : "its first bytes are neither PNG's nor JPEG's signature");
    return NULL;
}

ts_status ts_image_write_png(const ts_image *im, const char *path) {
    if (!im || !im->rgb || im->width <= 0 || im->height <= 0 || !path)
        return ts_set_error(TS_ERR_ARG, "ts_image_write_png: %s", !path ? "path is NULL" : "not an image");
    return ts_png_write(im, path);
}

ts_image *ts_image_read(const char *path) {
    if (!path) {
        ts_set_error(TS_ERR_ARG, "ts_image_read: path is NULL");
        return NULL;
    }
    /* Read it whole (the decoders work on memory); a size cap keeps a huge non-image from being
     * slurped: no image within TS_IMAGE_MAX_PIXELS needs more than ~4 bytes a pixel plus headers. */
    const size_t cap = (size_t)TS_IMAGE_MAX_PIXELS * 8 + (1u << 20);
    size_t n = 0;
    char *buf = ts_read_file_max(path, cap, &n);
    if (!buf) {
        if (errno == EFBIG)
            ts_set_error(TS_ERR_IO, "%s: larger than %zu bytes, more than any image tessera reads", path, cap);
        return NULL;
    }
    ts_image *im = ts_image_decode(buf, n, path);
    free(buf);
    return im;
}
