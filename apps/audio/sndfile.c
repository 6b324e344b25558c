/*
 * sndfile.c — audio through libsndfile: bytes in memory (sf_open_virtual over memio.c) or an open
 * file (sf_open_fd) read whole (mixdown.c), and a WAV file written into memory. The arguments are
 * checked before (read.c, audio.c); a build without audio compiles sndfile_off.c instead.
 */
#include <stdio.h>
#include <stdlib.h>

#include "audio/sndfile_io.h"
#include "common/app.h"

/* The error for a file libsndfile would not open: a clearer one when the WAV header shows why. */
static void open_error(const ts_wav_header *wav, const char *what) {
    if (wav->is_wav && wav->rate == 0)
        ts_set_error(TS_ERR_IO, "%s: a sample rate of 0 in its WAV header: not audio", what);
    else if (wav->is_wav && wav->channels == 0)
        ts_set_error(TS_ERR_IO, "%s: 0 channels in its WAV header: not audio", what);
    else
        ts_set_error(TS_ERR_IO, "%s: not an audio file libsndfile reads: %s", what, sf_strerror(NULL));
}

ts_audio *ts_audio_sf_decode(const void *data, size_t n, const ts_wav_header *wav, const char *what, int rate,
                             double max_seconds) {
    ts_memio m = {.data = data, .len = n};
    SF_INFO info = {0};
    SNDFILE *sf = sf_open_virtual(&ts_memio_calls, SFM_READ, &info, &m);
    if (!sf) {
        open_error(wav, what);
        return NULL;
    }
    return ts_audio_from_sndfile(sf, &info, wav, what, rate, max_seconds);
}

ts_audio *ts_audio_sf_read_fd(int fd, const ts_wav_header *wav, const char *what, int rate, double max_seconds) {
    SF_INFO info = {0};
    SNDFILE *sf = sf_open_fd(fd, SFM_READ, &info, 0);
    if (!sf) {
        open_error(wav, what);
        return NULL;
    }
    return ts_audio_from_sndfile(sf, &info, wav, what, rate, max_seconds);
}

ts_status ts_audio_sf_wav(const ts_audio *a, const char *path, uint8_t **buf, size_t *len) {
    ts_memio m = {0};
    SF_INFO info = {.samplerate = a->rate, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *sf = sf_open_virtual(&ts_memio_calls, SFM_WRITE, &info, &m);
    if (!sf) {
        free(m.buf);
        return ts_set_error(TS_ERR_IO, "%s: libsndfile cannot write a WAV file: %s", path, sf_strerror(NULL));
    }
    sf_command(sf, SFC_SET_CLIPPING, NULL, SF_TRUE); /* a sample beyond +-1 clips, never wraps */
    sf_count_t put = sf_writef_float(sf, a->samples, a->n);
    int bad = put != a->n || sf_error(sf) != SF_ERR_NO_ERROR;
    char why[256];
    snprintf(why, sizeof why, "%s", sf_strerror(sf));
    sf_close(sf);
    ts_status st = TS_OK;
    if (m.nomem)
        st = ts_set_error(TS_ERR_NOMEM, "%s: out of memory for a WAV file of %lld samples", path, (long long)a->n);
    else if (bad)
        st = ts_set_error(TS_ERR_IO, "%s: libsndfile failed writing the samples: %s", path, why);
    if (st != TS_OK) {
        free(m.buf);
        return st;
    }
    *buf = m.buf, *len = m.len;
    return TS_OK;
}
