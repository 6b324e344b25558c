/*
 * resample.c — changing the sample rate of mono audio with libsamplerate (src_simple, the
 * band-limited SRC_SINC_MEDIUM_QUALITY converter: flat to about 97% of the lower Nyquist
 * frequency, far above what speech needs, at a few times the speed of SRC_SINC_BEST_QUALITY).
 */
#include <math.h>

#include <samplerate.h>

#include "audio/audio.h"
#include "common/app.h"

ts_audio *ts_audio_resample(const float *x, int64_t n, int from, int to, const char *what) {
    double ratio = (double)to / (double)from;
    if (from <= 0 || to <= 0 || !src_is_valid_ratio(ratio)) {
        ts_set_error(TS_ERR_UNSUPPORTED,
                     "%s: a sample rate of %d Hz cannot be resampled to %d Hz (libsamplerate "
                     "changes a rate by a factor between 1/256 and 256)",
                     what, from, to);
        return NULL;
    }
    /* the output is n x ratio samples, rounded; a few more allocated than that */
    int64_t cap = (int64_t)ceil((double)n * ratio) + 16;
    ts_audio *a = ts_audio_alloc(cap, to, what);
    if (!a) return NULL;
    SRC_DATA d = {.data_in = x, .data_out = a->samples, .input_frames = (long)n, .output_frames = (long)cap,
                  .src_ratio = ratio, .end_of_input = 1};
    int e = src_simple(&d, SRC_SINC_MEDIUM_QUALITY, 1);
    if (e) {
        ts_audio_free(a);
        ts_set_error(TS_ERR_RUNTIME, "%s: resampling from %d Hz to %d Hz failed: %s", what, from, to, src_strerror(e));
        return NULL;
    }
    a->n = d.output_frames_gen;
    return a;
}
