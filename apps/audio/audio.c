/*
 * audio.c — ts_audio: allocation, raw 16-bit samples in (ts_audio_from_s16), and writing a
 * 16-bit PCM WAV file (through libsndfile into memory, sndfile.c, then atomically to disk).
 */
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "common/app.h"

ts_audio *ts_audio_alloc(int64_t n, int rate, const char *what) {
    if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(float) - 1) {
        ts_set_error(TS_ERR_ARG, "%s: %lld samples is not a length audio can have", what, (long long)n);
        return NULL;
    }
    ts_audio *a = calloc(1, sizeof *a);
    float *x = a ? malloc((size_t)(n ? n : 1) * sizeof(float)) : NULL;
    if (!x) {
        free(a);
        ts_set_error(TS_ERR_NOMEM, "%s: out of memory for %lld samples", what, (long long)n);
        return NULL;
    }
    a->rate = rate;
    a->n = n;
    a->samples = x;
    return a;
}

void ts_audio_free(ts_audio *a) {
    if (!a) return;
    free(a->samples);
    free(a);
}

ts_audio *ts_audio_from_s16(const void *data, size_t n_bytes, int rate) {
    if ((!data && n_bytes) || rate <= 0 || n_bytes % 2) {
        ts_set_error(TS_ERR_ARG, "ts_audio_from_s16: %s",
                     !data && n_bytes ? "data is NULL"
                     : rate <= 0      ? "the sample rate must be positive"
                                      : "an odd number of bytes is not 16-bit samples");
        return NULL;
    }
    ts_audio *a = ts_audio_alloc((int64_t)(n_bytes / 2), rate, "ts_audio_from_s16");
    if (!a) return NULL;
    const uint8_t *d = data;
    for (int64_t i = 0; i < a->n; i++) {
        int16_t v = (int16_t)(uint16_t)(d[2 * i] | d[2 * i + 1] << 8);
        a->samples[i] = (float)v / 32768.0f;
    }
    return a;
}

ts_status ts_audio_write_wav(const ts_audio *a, const char *path) {
    if (!a || !path || (!a->samples && a->n) || a->n < 0 || a->rate <= 0)
        return ts_set_error(TS_ERR_ARG, "ts_audio_write_wav: %s",
                            !path          ? "path is NULL"
                            : !a           ? "audio is NULL"
                            : a->rate <= 0 ? "the sample rate must be positive"
                                           : "the audio has no samples array");
    uint8_t *buf = NULL;
    size_t len = 0;
    ts_status st = ts_audio_sf_wav(a, path, &buf, &len);
    if (st == TS_OK) st = ts_write_atomic(path, buf, len);
    free(buf);
    return st;
}
