/*
 * sndfile_io.h — internal to the libsndfile part of apps/audio/ (sndfile.c, memio.c, mixdown.c):
 * bytes in memory as a libsndfile virtual file, and an open handle read whole. Only the sources
 * that a build without audio leaves out include it (audio.h needs no libsndfile).
 */
#ifndef TS_AUDIO_SNDFILE_IO_H
#define TS_AUDIO_SNDFILE_IO_H

#include <sndfile.h>

#include "audio/audio.h"

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

/* Read an open libsndfile handle (sf, with its info) whole, mixed down to mono and resampled to
 * `rate`: the checks (sample rate 0, no samples, too long, cut short) name `what`; `wav` is the
 * file's WAV header peek for the length its header claims. Closes sf. */
ts_audio *ts_audio_from_sndfile(SNDFILE *sf, const SF_INFO *info, const ts_wav_header *wav, const char *what,
                                int rate, double max_seconds);

#endif
