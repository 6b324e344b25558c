/*
 * sndfile_off.c — the libsndfile and libsamplerate part of audio (audio.h) in a libtessera_apps
 * built without audio (-DTS_WITH_AUDIO=OFF, or AUTO without libsndfile or libsamplerate):
 * compiled instead of sndfile.c, memio.c, mixdown.c and resample.c. The public API stays: audio
 * from raw 16-bit samples (ts_audio_from_s16) works as ever, and reading, decoding, writing a
 * file or resampling fails with TS_ERR_UNSUPPORTED naming the option and the Debian packages.
 */
#include "audio/audio.h"
#include "common/app.h"

#define AUDIO_OFF "this libtessera_apps was built without audio (configure with -DTS_WITH_AUDIO=ON; " \
                  "needs libsndfile1-dev libsamplerate0-dev)"

ts_audio *ts_audio_sf_decode(const void *data, size_t n, const ts_wav_header *wav, const char *what, int rate,
                             double max_seconds) {
    (void)data, (void)n, (void)wav, (void)rate, (void)max_seconds;
    ts_set_error(TS_ERR_UNSUPPORTED, "%s: " AUDIO_OFF, what);
    return NULL;
}

ts_audio *ts_audio_sf_read_fd(int fd, const ts_wav_header *wav, const char *what, int rate, double max_seconds) {
    (void)fd, (void)wav, (void)rate, (void)max_seconds;
    ts_set_error(TS_ERR_UNSUPPORTED, "%s: " AUDIO_OFF, what);
    return NULL;
}

ts_status ts_audio_sf_wav(const ts_audio *a, const char *path, uint8_t **buf, size_t *len) {
    (void)a, (void)buf, (void)len;
    return ts_set_error(TS_ERR_UNSUPPORTED, "ts_audio_write_wav: %s: " AUDIO_OFF, path);
}

ts_audio *ts_audio_resample(const float *x, int64_t n, int from, int to, const char *what) {
    (void)x, (void)n;
    ts_set_error(TS_ERR_UNSUPPORTED, "%s: resampling %d Hz to %d Hz: " AUDIO_OFF, what, from, to);
    return NULL;
}
