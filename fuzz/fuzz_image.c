/*
 * fuzz_image.c — libFuzzer target for the image decoders (apps/vision/: image.c, png.c through
 * libpng, jpeg.c through libjpeg): the input is decoded from memory with ts_image_decode. A file
 * that is not a PNG or JPEG, or is cut short or corrupt, must be refused with a message, never
 * crash, leak, read out of bounds or longjmp past its cleanup; an image that decodes must have a
 * size within the limits and every one of its RGB bytes readable.
 */
#include "tessera_apps.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ts_image *im = ts_image_decode(data, size, "fuzz input");
    if (!im) {
        if (!ts_last_error()[0]) abort(); /* a refusal says why */
        return 0;
    }
    if (im->width <= 0 || im->height <= 0 || (int64_t)im->width * im->height > TS_IMAGE_MAX_PIXELS) abort();
    /* every byte is there (ASan checks the reads) */
    unsigned sum = 0;
    size_t n = (size_t)im->width * (size_t)im->height * 3;
    for (size_t i = 0; i < n; i++) sum += im->rgb[i];
    /* a small image goes through the other calls too */
    if (n <= 3 * 64 * 64) {
        ts_image *r = ts_image_resize(im, 1 + (int)(sum % 50), 1 + (int)(sum % 37), (ts_interp)(sum & 1));
        ts_image *t = ts_image_rotate(im, (int)(sum % 4));
        if (!r || !t) abort();
        ts_image_free(r);
        ts_image_free(t);
    }
    ts_image_free(im);
    return 0;
}
