/*
 * read.c — ts_audio_read and ts_audio_decode: the arguments checked, a file or bytes peeked at for
 * what libsndfile does not say (a WAV's claimed length, a sample rate of 0), then opened with
 * libsndfile, read, mixed down and resampled (sndfile.c, mixdown.c; sndfile_off.c in a build
 * without audio).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/audio.h"
#include "common/app.h"

enum { PEEK_BYTES = 1 << 16 };

static int bad_args(const void *data, size_t n, const char *what, int rate) {
    if (!data && n) {
        ts_set_error(TS_ERR_ARG, "%s: data is NULL", what);
        return 1;
    }
    if (rate <= 0) {
        ts_set_error(TS_ERR_ARG, "%s: the sample rate asked for must be positive, not %d", what, rate);
        return 1;
    }
    return 0;
}

ts_audio *ts_audio_decode_capped(const void *data, size_t n, const char *what, int rate, double max_seconds) {
    if (!what) what = "audio";
    if (bad_args(data, n, what, rate)) return NULL;
    if (n == 0) {
        ts_set_error(TS_ERR_IO, "%s: not an audio file libsndfile reads: it is empty", what);
        return NULL;
    }
    ts_wav_header wav = ts_wav_peek(data, n);
    return ts_audio_sf_decode(data, n, &wav, what, rate, max_seconds);
}

ts_audio *ts_audio_decode(const void *data, size_t n, const char *what, int rate) {
    return ts_audio_decode_capped(data, n, what, rate, TS_AUDIO_MAX_SECONDS);
}

ts_audio *ts_audio_read(const char *path, int rate) {
    if (!path) {
        ts_set_error(TS_ERR_ARG, "ts_audio_read: path is NULL");
        return NULL;
    }
    if (bad_args("", 0, path, rate)) return NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ts_set_error(TS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && (S_ISDIR(st.st_mode) || st.st_size == 0)) {
        ts_set_error(TS_ERR_IO,
                     S_ISDIR(st.st_mode) ? "%s: cannot open: it is a directory"
                                         : "%s: not an audio file libsndfile reads: it is empty",
                     path);
        close(fd);
        return NULL;
    }
    /* the first bytes, for what the header claims (ts_wav_peek) */
    uint8_t *head = malloc(PEEK_BYTES);
    ssize_t k = head ? pread(fd, head, PEEK_BYTES, 0) : 0;
    ts_wav_header wav = ts_wav_peek(head, k > 0 ? (size_t)k : 0);
    free(head);
    ts_audio *a = ts_audio_sf_read_fd(fd, &wav, path, rate, TS_AUDIO_MAX_SECONDS);
    close(fd);
    return a;
}
