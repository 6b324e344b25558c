/*
 * audio.h — internal to apps/audio/: the pieces behind ts_audio_read / ts_audio_decode (a checked
 * allocation, a WAV header peek, and the part that calls libsndfile and libsamplerate: decoding,
 * writing a WAV, resampling) and a decoder with its own length cap for the fuzzer. libsndfile's
 * own types stay in sndfile_io.h, so this header needs neither library.
 */
#ifndef TS_AUDIO_H
#define TS_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#include "common/app.h"

/* A new ts_audio of n samples (not set) at `rate`; NULL with an error naming `what` when it
 * cannot be allocated. */
ts_audio *ts_audio_alloc(int64_t n, int rate, const char *what);

/* ts_audio_decode, refusing audio longer than max_seconds (the fuzzer caps it lower than
 * TS_AUDIO_MAX_SECONDS so that an input stays quick). */
ts_audio *ts_audio_decode_capped(const void *data, size_t n, const char *what, int rate, double max_seconds);

/* What a RIFF WAVE header says (wav_peek.c), from the first bytes of a file. */
typedef struct ts_wav_header {
    int is_wav;              /* 1 when the bytes start a RIFF WAVE file with a fmt chunk */
    uint32_t rate;           /* its fmt chunk's sample rate */
    uint16_t channels;       /* its fmt chunk's channel count */
    uint16_t block_align;    /* bytes per frame */
    int has_data;            /* 1 when the data chunk's header is within the bytes */
    uint32_t data_bytes;     /* the size the data chunk claims */
} ts_wav_header;
/* Read the header of a WAV file from its first n bytes; is_wav = 0 for anything else. */
ts_wav_header ts_wav_peek(const uint8_t *d, size_t n);

/* ---- libsndfile and libsamplerate: the only code that calls them (sndfile.c, mixdown.c, memio.c,
 * resample.c). In a build without audio (-DTS_WITH_AUDIO=OFF, or AUTO without the libraries)
 * sndfile_off.c is compiled instead: each of these fails with TS_ERR_UNSUPPORTED naming the option,
 * and the rest of the audio API (raw samples in, the checks above) stays. */

/* Decode the n bytes at data (n > 0; `wav` their header peek) whole, mixed down to mono and
 * resampled to `rate`: the checks (sample rate 0, no samples, too long, cut short) name `what`. */
ts_audio *ts_audio_sf_decode(const void *data, size_t n, const ts_wav_header *wav, const char *what, int rate,
                             double max_seconds);
/* The same for the file open as fd (not closed here), named `what`. */
ts_audio *ts_audio_sf_read_fd(int fd, const ts_wav_header *wav, const char *what, int rate, double max_seconds);
/* a (checked: samples, a positive rate) as a mono 16-bit PCM WAV file in memory: *buf (free it
 * after) of *len bytes; errors name `path`. */
ts_status ts_audio_sf_wav(const ts_audio *a, const char *path, uint8_t **buf, size_t *len);

/* Resample n mono samples at `from` per second to `to` per second (resample.c, libsamplerate's
 * SRC_SINC_MEDIUM_QUALITY). A new ts_audio; NULL with an error naming `what`. */
ts_audio *ts_audio_resample(const float *x, int64_t n, int from, int to, const char *what);

#endif
