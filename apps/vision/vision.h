/*
 * vision.h — internal to apps/vision/: the per-format decoders behind ts_image_decode and the
 * checked allocation of an image.
 */
#ifndef TS_VISION_H
#define TS_VISION_H

#include <stddef.h>
#include <stdint.h>

#include "common/app.h"

/* A new width x height image, its bytes not set. NULL with an error naming `what` when the size is
 * not positive, is above TS_IMAGE_MAX_PIXELS, or cannot be allocated. */
ts_image *ts_image_alloc(int64_t width, int64_t height, const char *what);

/* Does the data start with a PNG / JPEG signature? */
int ts_is_png(const uint8_t *data, size_t n);
int ts_is_jpeg(const uint8_t *data, size_t n);

/* The codecs, the only code that calls libpng and libjpeg (apps/vision/png.c, jpeg.c; in a build
 * without images, -DTS_WITH_IMAGES=OFF, codecs_off.c instead, whose functions fail with
 * TS_ERR_UNSUPPORTED naming the option). Decode a whole PNG / JPEG held in memory; write a checked
 * image (ts_image_write_png checks it) as a PNG file at path, atomically. */
ts_image *ts_png_decode(const uint8_t *data, size_t n, const char *what);
ts_image *ts_jpeg_decode(const uint8_t *data, size_t n, const char *what);
ts_status ts_png_write(const ts_image *im, const char *path);

/* Put an opaque colour c seen through alpha a (0 transparent .. 255 opaque) over white. */
static inline uint8_t ts_over_white(unsigned c, unsigned a) {
    return (uint8_t)((c * a + 255u * (255u - a) + 127u) / 255u);
}

#endif
