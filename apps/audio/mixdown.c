/*
 * mixdown.c — the samples of an open libsndfile handle, checked and mixed down to mono (the mean
 * of the channels), then resampled: the part of ts_audio_read and ts_audio_decode after the
 * header is understood. Refuses, naming the file: a sample rate or channel count of 0, no
 * samples, a length beyond the cap (from the header before reading, and while reading when the
 * header understates it), and a file cut short (fewer frames than its header claims).
 */
#include <stdlib.h>
#include <string.h>

#include "audio/sndfile_io.h"
#include "common/app.h"

enum { CHUNK_FRAMES = 4096 };

/* The frames a WAV header claims, or -1 when it claims none or says "unknown" (0, or the
 * 0x7fff.... / 0xffffffff sizes that writers to a pipe leave), or when its samples are not one
 * block_align a frame (compressed: ADPCM, GSM, ... hold many frames a block). */
static int64_t wav_claim(const ts_wav_header *wav, const SF_INFO *info) {
    switch (info->format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8: case SF_FORMAT_PCM_U8: case SF_FORMAT_PCM_16: case SF_FORMAT_PCM_24:
    case SF_FORMAT_PCM_32: case SF_FORMAT_FLOAT: case SF_FORMAT_DOUBLE: case SF_FORMAT_ULAW: case SF_FORMAT_ALAW:
        break;
    default:
        return -1;
    }
    if (!wav || !wav->is_wav || !wav->has_data || !wav->block_align) return -1;
    if (wav->data_bytes == 0 || wav->data_bytes >= 0x7fff0000u) return -1;
    return wav->data_bytes / wav->block_align;
}

/* The header's checks, before any sample is read: TS_OK or the error. */
static ts_status check_header(const SF_INFO *info, int64_t claim, const char *what, double max_frames,
                              double max_seconds) {
    if (info->samplerate <= 0)
        return ts_set_error(TS_ERR_IO, "%s: a sample rate of %d in its header: not audio", what, info->samplerate);
    if (info->channels <= 0)
        return ts_set_error(TS_ERR_IO, "%s: %d channels in its header: not audio", what, info->channels);
    int64_t frames = info->frames == SF_COUNT_MAX ? -1 : (int64_t)info->frames;
    int64_t most = claim > frames ? claim : frames;
    if ((double)most > max_frames)
        return ts_set_error(TS_ERR_UNSUPPORTED,
                            "%s: its header gives %.1f s (%lld frames at %d Hz), longer than the "
                            "%g s tessera reads",
                            what, (double)most / info->samplerate, (long long)most, info->samplerate, max_seconds);
    if (claim > frames && frames >= 0)
        return ts_set_error(TS_ERR_IO, "%s: cut short: its header claims %lld frames, the file holds %lld", what,
                            (long long)claim, (long long)frames);
    if (frames == 0) return ts_set_error(TS_ERR_IO, "%s: no samples (its header says 0 frames)", what);
    return TS_OK;
}

/* Read up to `limit` frames, mixed to mono, into *out (malloc'd, *got of them; `hint` frames
 * expected): TS_OK, or TS_ERR_NOMEM. */
static ts_status read_mono(SNDFILE *sf, int channels, int64_t limit, int64_t hint, float **out, int64_t *got,
                           const char *what) {
    float *buf = malloc((size_t)CHUNK_FRAMES * (size_t)channels * sizeof(float));
    int64_t cap = hint > 0 && hint < (1 << 20) ? hint : 1 << 16, n = 0;
    float *mono = malloc((size_t)cap * sizeof(float));
    int oom = !buf || !mono;
    while (!oom && n < limit) {
        int64_t want = limit - n < CHUNK_FRAMES ? limit - n : CHUNK_FRAMES;
        sf_count_t k = sf_readf_float(sf, buf, want);
        if (k <= 0) break;
        if (n + k > cap) {
            while (cap < n + k) cap *= 2;
            float *bigger = realloc(mono, (size_t)cap * sizeof(float));
            oom = !bigger;
            if (oom) break;
            mono = bigger;
        }
        for (sf_count_t i = 0; i < k; i++) {
            double s = 0;
            for (int c = 0; c < channels; c++) s += buf[i * channels + c];
            mono[n + i] = (float)(s / channels);
        }
        n += k;
    }
    free(buf);
    if (oom) {
        free(mono);
        return ts_set_error(TS_ERR_NOMEM, "%s: out of memory reading its samples", what);
    }
    *out = mono;
    *got = n;
    return TS_OK;
}

ts_audio *ts_audio_from_sndfile(SNDFILE *sf, const SF_INFO *info, const ts_wav_header *wav, const char *what,
                                int rate, double max_seconds) {
    double max_frames = max_seconds * (info->samplerate > 0 ? info->samplerate : 1);
    if (check_header(info, wav_claim(wav, info), what, max_frames, max_seconds) != TS_OK) {
        sf_close(sf);
        return NULL;
    }
    int64_t frames = info->frames == SF_COUNT_MAX ? -1 : (int64_t)info->frames;
    /* one frame past the cap tells a header that understates the length */
    int64_t limit = (int64_t)max_frames + 1, n = 0;
    float *mono = NULL;
    ts_status st = read_mono(sf, info->channels, limit, frames, &mono, &n, what);
    char why[256];
    snprintf(why, sizeof why, "%s", sf_strerror(sf));
    int failed = sf_error(sf) != SF_ERR_NO_ERROR;
    sf_close(sf);
    if (st != TS_OK) return NULL;
    if (n >= limit)
        st = ts_set_error(TS_ERR_UNSUPPORTED,
                          "%s: longer than the %g s tessera reads (more than %lld frames at %d Hz, "
                          "though its header says %lld)",
                          what, max_seconds, (long long)(limit - 1), info->samplerate, (long long)frames);
    else if (frames >= 0 && n < frames)
        st = ts_set_error(TS_ERR_IO, "%s: cut short: its header claims %lld frames, the file holds %lld%s%s%s", what,
                          (long long)frames, (long long)n, failed ? " (libsndfile: " : "", failed ? why : "",
                          failed ? ")" : "");
    else if (n == 0)
        st = ts_set_error(TS_ERR_IO, "%s: no samples", what);
    if (st != TS_OK) {
        free(mono);
        return NULL;
    }
    if (info->samplerate == rate) {
        ts_audio *a = calloc(1, sizeof *a);
        if (!a) {
            free(mono);
            ts_set_error(TS_ERR_NOMEM, "%s: out of memory", what);
            return NULL;
        }
        *a = (ts_audio){.rate = rate, .n = n, .samples = mono};
        return a;
    }
    ts_audio *a = ts_audio_resample(mono, n, info->samplerate, rate, what);
    free(mono);
    if (a && a->n == 0) {
        ts_audio_free(a);
        ts_set_error(TS_ERR_IO, "%s: no samples at %d Hz (its %lld at %d Hz last less than one)", what, rate,
                     (long long)n, info->samplerate);
        return NULL;
    }
    return a;
}
