/*
 * tessera_speech.h — audio in (files and raw streams, mixed to mono and resampled to 16 kHz) and
 * the speech pipelines built on imported ONNX models: keyword spotting (openWakeWord) and voice
 * activity (Silero VAD).
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_SPEECH_H
#define TESSERA_SPEECH_H

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- audio (src/audio/)
 * Audio files read through libsndfile (WAV with PCM 16/24/32-bit or float samples, FLAC, Ogg
 * Vorbis, and whatever else the installed libsndfile reads), mixed down to mono (the mean of the
 * channels) and resampled with libsamplerate (SRC_SINC_MEDIUM_QUALITY) to the rate asked for.
 * Samples are floats in [-1, 1] as libsndfile scales them. */

typedef struct ts_audio {
    int rate;        /* samples per second of `samples` (the rate asked for) */
    int64_t n;       /* number of samples */
    float *samples;  /* n mono samples */
} ts_audio;

/* Files longer than this are refused before their samples are read (one hour). */
#define TS_AUDIO_MAX_SECONDS 3600

/* Read an audio file (or bytes; `what` names them in messages) as mono at `rate` samples per
 * second (16000 for the speech models). NULL, with ts_last_error() naming the file, when it
 * cannot be opened, is not audio libsndfile knows, is cut short or lies about its size, has no
 * samples, a sample rate of 0, or lasts longer than TS_AUDIO_MAX_SECONDS. */
TS_API ts_audio *ts_audio_read(const char *path, int rate);
TS_API ts_audio *ts_audio_decode(const void *data, size_t n, const char *what, int rate);
/* Raw little-endian signed 16-bit mono samples at `rate` (what `arecord -f S16_LE -r 16000`
 * writes), converted to floats in [-1, 1); n_bytes must be even (0 gives an empty ts_audio, n = 0). */
TS_API ts_audio *ts_audio_from_s16(const void *data, size_t n_bytes, int rate);
/* Write mono 16-bit PCM WAV, atomically; samples beyond [-1, 1] are clipped. */
TS_API ts_status ts_audio_write_wav(const ts_audio *a, const char *path);
TS_API void ts_audio_free(ts_audio *a);

#ifdef __cplusplus
}
#endif
#endif
