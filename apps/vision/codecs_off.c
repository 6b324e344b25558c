/*
 * codecs_off.c — the PNG and JPEG codecs (vision.h) in a libtessera_apps built without images
 * (-DTS_WITH_IMAGES=OFF, or AUTO without libpng or libjpeg): compiled instead of png.c and jpeg.c.
 * The public API stays: images are made, resized, rotated and freed as ever, and reading or
 * writing a file fails with TS_ERR_UNSUPPORTED naming the option and the Debian packages.
 */
#include "common/app.h"
#include "vision/vision.h"

#define IMAGES_OFF "this libtessera_apps was built without images (configure with -DTS_WITH_IMAGES=ON; " \
                   "needs libpng-dev libjpeg-dev)"

ts_image *ts_png_decode(const uint8_t *data, size_t n, const char *what) {
    (void)data, (void)n;
    ts_set_error(TS_ERR_UNSUPPORTED, "%s: a PNG image, but " IMAGES_OFF, what);
    return NULL;
}

ts_image *ts_jpeg_decode(const uint8_t *data, size_t n, const char *what) {
    (void)data, (void)n;
    ts_set_error(TS_ERR_UNSUPPORTED, "%s: a JPEG image, but " IMAGES_OFF, what);
    return NULL;
}

ts_status ts_png_write(const ts_image *im, const char *path) {
    (void)im;
    return ts_set_error(TS_ERR_UNSUPPORTED, "ts_image_write_png: %s: " IMAGES_OFF, path);
}
