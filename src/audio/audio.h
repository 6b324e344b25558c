/*
 * audio.h — internal to src/audio/: the pieces behind ts_audio_read / ts_audio_decode (a checked
 * allocation, libsndfile over memory, a WAV header peek, mixing down and resampling) and a decoder
 * with its own length cap for the fuzzer.
 */
#ifndef TS_AUDIO_H
#define TS_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#include <sndfile.h>

#include "tessera.h"

/* A new ts_audio of n samples (not set) at `rate`; NULL with an error naming `what` when it
 * cannot be allocated. */
ts_audio *ts_audio_alloc(int64_t n, int rate, const char *what);

/* ts_audio_decode, refusing audio longer than max_seconds (the fuzzer caps it lower than
 * TS_AUDIO_MAX_SECONDS so that an input stays quick). */
ts_audio *ts_audio_decode_capped(const void *data, size_t n, const char *what, int rate, double max_seconds);

/* Bytes in memory as a libsndfile virtual file (memio.c): reading from `data`, or, when writing,
 * into a buffer that grows (`buf`, `len` bytes, `cap` allocated; free(buf) after). */
typedef struct ts_memio {
    const uint8_t *data; /* what is read (NULL when writing) */
    uint8_t *buf;        /* what is written */
    size_t len, cap;     /* bytes in the file, bytes allocated for buf */
    size_t pos;          /* the current position */
    int nomem;           /* a write could not grow buf */
} ts_memio;
/* The callbacks libsndfile's sf_open_virtual takes, over a ts_memio. */
extern SF_VIRTUAL_IO ts_memio_calls;

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

/* Read an open libsndfile handle (sf, with its info) whole, mixed down to mono and resampled to
 * `rate`: the checks (sample rate 0, no samples, too long, cut short) name `what`; `wav` is the
 * file's WAV header peek for the length its header claims. Closes sf. */
ts_audio *ts_audio_from_sndfile(SNDFILE *sf, const SF_INFO *info, const ts_wav_header *wav, const char *what,
                                int rate, double max_seconds);

/* Resample n mono samples at `from` per second to `to` per second (resample.c, libsamplerate's
 * SRC_SINC_MEDIUM_QUALITY). A new ts_audio; NULL with an error naming `what`. */
ts_audio *ts_audio_resample(const float *x, int64_t n, int from, int to, const char *what);

#endif
