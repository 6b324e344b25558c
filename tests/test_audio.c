/*
 * test_audio.c — audio in (apps/audio/): files written here with libsndfile's writer, read back
 * through ts_audio_read / ts_audio_decode and compared with the samples written:
 *  - WAV with PCM 16/24/32-bit and float samples, FLAC and Ogg Vorbis, at 16 kHz: the samples
 *    back (exactly up to the format's quantisation; Vorbis is lossy: close);
 *  - stereo mixed down to the mean of the channels;
 *  - 44.1 kHz and 8 kHz resampled to 16 kHz: a 440 Hz sine keeps its frequency (a fitted sine
 *    leaves a small residual), its amplitude within 1%, its length n x 16000 / rate within a
 *    few samples;
 *  - raw s16 (ts_audio_from_s16), ts_audio_write_wav written and read back, clipping;
 *  - bad files, each refused with a message naming the file and what is wrong: missing, a
 *    directory, empty, text, a WAV cut short (its header claims more than it holds), a FLAC cut
 *    short, no samples, a sample rate of 0, and a 10-hour WAV (its header over a sparse file:
 *    no disk or time spent) refused from its header; a lower cap (the fuzzer's) likewise.
 */
#define _GNU_SOURCE
#include "tessera_apps.h"
#include "test_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <sndfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/audio.h"

static char tdir[256];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static const char *at(const char *name) {
    static char pool[64][512];
    static int k;
    char *p = pool[k++ % 64];
    snprintf(p, 512, "%s/%s", tdir, name);
    return p;
}

/* A test tone: channel c of frame i at `rate` (a sine of 440 Hz, amplitude 0.5, and on a second
 * channel one of 660 Hz, amplitude 0.25). */
static double tone(int64_t i, int c, int rate) {
    double t = (double)i / rate;
    return c == 0 ? 0.5 * sin(2 * M_PI * 440 * t) : 0.25 * sin(2 * M_PI * 660 * t + 1);
}

/* Write `frames` frames of the tone as file `name` in libsndfile's `format`. */
static const char *write_tone(const char *name, int format, int rate, int channels, int64_t frames) {
    const char *path = at(name);
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = format};
    SNDFILE *sf = sf_open(path, SFM_WRITE, &info);
    CHECK(sf, "%s: libsndfile cannot write it: %s", name, sf_strerror(NULL));
    if (!sf) return path;
    float *x = malloc((size_t)(frames * channels) * sizeof(float));
    for (int64_t i = 0; i < frames; i++)
        for (int c = 0; c < channels; c++) x[i * channels + c] = (float)tone(i, c, rate);
    CHECK(sf_writef_float(sf, x, frames) == frames, "%s: short write", name);
    sf_close(sf);
    free(x);
    return path;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    CHECK(f, "cannot open %s", path);
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc(*n ? *n : 1);
    CHECK(fread(d, 1, *n, f) == *n, "cannot read %s", path);
    fclose(f);
    return d;
}

/* The largest difference between a's samples and the (mono) tone. */
static double tone_error(const ts_audio *a, int channels) {
    double worst = 0;
    for (int64_t i = 0; i < a->n; i++) {
        double want = 0;
        for (int c = 0; c < channels; c++) want += tone(i, c, a->rate);
        double e = fabs(a->samples[i] - want / channels);
        if (e > worst) worst = e;
    }
    return worst;
}

static void test_formats(void) {
    static const struct {
        const char *name;
        int format;
        double tol;
    } cases[] = {
        {"pcm16.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 1.0 / 16384},
        {"pcm24.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, 1e-6},
        {"pcm32.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_32, 1e-7},
        {"float.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 1e-7},
        {"tone.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 1.0 / 16384},
        {"tone.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 0.05},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *path = write_tone(cases[k].name, cases[k].format, 16000, 1, 8000);
        ts_audio *a = ts_audio_read(path, 16000);
        CHECK(a, "%s: %s", cases[k].name, ts_last_error());
        if (!a) continue;
        CHECK(a->rate == 16000 && a->n == 8000, "%s: %lld samples at %d Hz, not 8000 at 16000", cases[k].name,
              (long long)a->n, a->rate);
        double e = tone_error(a, 1);
        CHECK(e <= cases[k].tol, "%s: samples differ from those written by %g (at most %g)", cases[k].name, e,
              cases[k].tol);
        ts_audio_free(a);
        /* the same bytes decoded from memory */
        size_t n = 0;
        uint8_t *d = slurp(path, &n);
        ts_audio *b = ts_audio_decode(d, n, cases[k].name, 16000);
        CHECK(b && b->n == 8000, "%s from memory: %s", cases[k].name, b ? "wrong length" : ts_last_error());
        if (b) CHECK(tone_error(b, 1) <= cases[k].tol, "%s from memory: samples differ", cases[k].name);
        ts_audio_free(b);
        free(d);
    }
}

static void test_stereo(void) {
    const char *path = write_tone("stereo.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 16000, 2, 4000);
    ts_audio *a = ts_audio_read(path, 16000);
    CHECK(a && a->n == 4000, "stereo: %s", a ? "wrong length" : ts_last_error());
    if (a) CHECK(tone_error(a, 2) < 1e-6, "stereo: not the mean of the channels (off by %g)", tone_error(a, 2));
    ts_audio_free(a);
}

/* The 440 Hz sine fitted to the middle of a (least squares on sin and cos): its amplitude, and
 * the RMS of what is left after subtracting it. */
static void fit_sine(const ts_audio *a, double *amp, double *resid) {
    int64_t lo = a->n / 8, hi = a->n - a->n / 8;
    double ss = 0, sc = 0, cc = 0, ys = 0, yc = 0;
    for (int64_t i = lo; i < hi; i++) {
        double w = 2 * M_PI * 440 * (double)i / a->rate, s = sin(w), c = cos(w), y = a->samples[i];
        ss += s * s, sc += s * c, cc += c * c, ys += y * s, yc += y * c;
    }
    double det = ss * cc - sc * sc, p = (ys * cc - yc * sc) / det, q = (yc * ss - ys * sc) / det, r = 0;
    for (int64_t i = lo; i < hi; i++) {
        double w = 2 * M_PI * 440 * (double)i / a->rate, e = a->samples[i] - p * sin(w) - q * cos(w);
        r += e * e;
    }
    *amp = sqrt(p * p + q * q);
    *resid = sqrt(r / (double)(hi - lo));
}

static void test_resample(void) {
    static const int rates[] = {44100, 8000, 48000};
    for (size_t k = 0; k < sizeof rates / sizeof rates[0]; k++) {
        char name[64];
        snprintf(name, sizeof name, "tone%d.wav", rates[k]);
        const char *path = write_tone(name, SF_FORMAT_WAV | SF_FORMAT_FLOAT, rates[k], 1, rates[k]); /* 1 s */
        ts_audio *a = ts_audio_read(path, 16000);
        CHECK(a, "%s: %s", name, ts_last_error());
        if (!a) continue;
        CHECK(a->rate == 16000 && llabs(a->n - 16000) <= 4, "%s: %lld samples at %d Hz, not 16000 +- 4 at 16000",
              name, (long long)a->n, a->rate);
        double amp, resid;
        fit_sine(a, &amp, &resid);
        CHECK(fabs(amp - 0.5) <= 0.005, "%s: the sine's amplitude is %g after resampling, not 0.5 +- 1%%", name, amp);
        CHECK(resid <= 0.005, "%s: %g RMS left after fitting a 440 Hz sine (its frequency moved?)", name, resid);
        ts_audio_free(a);
    }
}

static void test_s16(void) {
    const uint8_t raw[] = {0x00, 0x00, 0xff, 0x7f, 0x00, 0x80, 0x00, 0x40, 0xff, 0xff};
    ts_audio *a = ts_audio_from_s16(raw, sizeof raw, 16000);
    CHECK(a && a->n == 5 && a->rate == 16000, "from_s16: %s", a ? "wrong length" : ts_last_error());
    if (a) {
        const float want[] = {0, 32767.0f / 32768, -1, 0.5f, -1.0f / 32768};
        for (int i = 0; i < 5; i++) CHECK(a->samples[i] == want[i], "sample %d: %g, not %g", i, a->samples[i], want[i]);
    }
    ts_audio_free(a);
    CHECK(!ts_audio_from_s16(raw, 3, 16000), "an odd byte count must be refused");
    CHECK_ERRMSG("odd");
    CHECK(!ts_audio_from_s16(raw, 4, 0), "a rate of 0 must be refused");
    ts_audio *e = ts_audio_from_s16(raw, 0, 16000);
    CHECK(e && e->n == 0, "0 bytes: an empty audio");
    ts_audio_free(e);
}

static void test_write_wav(void) {
    ts_audio *a = ts_audio_alloc(1000, 16000, "test");
    for (int i = 0; i < 1000; i++) a->samples[i] = (float)tone(i, 0, 16000);
    a->samples[10] = 1.5f, a->samples[11] = -1.5f; /* clipped, not wrapped */
    CHECK_OK(ts_audio_write_wav(a, at("written.wav")));
    ts_audio *b = ts_audio_read(at("written.wav"), 16000);
    CHECK(b && b->n == 1000, "written.wav: %s", b ? "wrong length" : ts_last_error());
    if (b) {
        double worst = 0;
        for (int i = 0; i < 1000; i++)
            if (i != 10 && i != 11) worst = fmax(worst, fabs(b->samples[i] - a->samples[i]));
        CHECK(worst < 1.0 / 16384, "written.wav: samples back differ by %g", worst);
        CHECK(b->samples[10] > 0.999f && b->samples[11] <= -0.999f, "clipping: %g %g", b->samples[10],
              b->samples[11]);
    }
    ts_audio_free(b);
    CHECK_STATUS(ts_audio_write_wav(a, at("no/such/dir/x.wav")), TS_ERR_IO);
    CHECK_ERRMSG("no/such/dir/x.wav");
    ts_audio_free(a);
}

/* Expect ts_audio_read(path) to fail with a message holding the path and `w1`, `w2`. */
static void refused(const char *path, const char *w1, const char *w2) {
    ts_audio *a = ts_audio_read(path, 16000);
    CHECK(!a, "%s: read, and should not have been", path);
    ts_audio_free(a);
    CHECK_ERRMSG(path, w1, w2);
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

static void test_bad_files(void) {
    refused(at("missing.wav"), "cannot open", "No such file");
    refused(tdir, "cannot open", "directory");
    write_bytes(at("empty.wav"), "", 0);
    refused(at("empty.wav"), "not an audio file", "empty");
    write_bytes(at("text.wav"), "hello, this is not audio at all\n", 32);
    refused(at("text.wav"), "not an audio file libsndfile reads", ":");
    /* a WAV cut short: its header claims 8000 frames */
    size_t n = 0;
    uint8_t *d = slurp(write_tone("full.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 8000), &n);
    write_bytes(at("cut.wav"), d, 44 + 2 * 3000);
    refused(at("cut.wav"), "cut short", "claims 8000 frames, the file holds 3000");
    /* the same bytes in memory */
    CHECK(!ts_audio_decode(d, 44 + 2 * 3000, "cut bytes", 16000), "cut bytes decoded");
    CHECK_ERRMSG("cut bytes", "cut short");
    /* no samples: a data chunk of 0 bytes */
    uint8_t hdr[44];
    memcpy(hdr, d, 44);
    put_le32(hdr + 4, 36), put_le32(hdr + 40, 0);
    write_bytes(at("nothing.wav"), hdr, 44);
    refused(at("nothing.wav"), "no samples", "0 frames");
    /* a sample rate of 0 */
    memcpy(hdr, d, 44);
    put_le32(hdr + 24, 0), put_le32(hdr + 28, 0);
    uint8_t *z = malloc(n);
    memcpy(z, d, n);
    memcpy(z, hdr, 44);
    write_bytes(at("rate0.wav"), z, n);
    refused(at("rate0.wav"), "sample rate of 0", "WAV header");
    free(z);
    free(d);
    /* a FLAC cut short: its STREAMINFO claims 8000 frames */
    d = slurp(write_tone("full.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, 8000), &n);
    write_bytes(at("cut.flac"), d, n / 2);
    refused(at("cut.flac"), "cut short", "claims 8000 frames");
    free(d);
}

/* 10 hours of 16 kHz mono 16-bit: the header says so and the file is that long, but sparse. */
static void test_ten_hours(void) {
    uint8_t hdr[44];
    size_t n = 0;
    uint8_t *d = slurp(write_tone("short.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 16), &n);
    memcpy(hdr, d, 44);
    free(d);
    uint32_t bytes = 10u * 3600 * 16000 * 2;
    put_le32(hdr + 4, 36 + bytes), put_le32(hdr + 40, bytes);
    const char *path = at("ten_hours.wav");
    write_bytes(path, hdr, 44);
    CHECK(truncate(path, 44 + (off_t)bytes) == 0, "cannot extend %s", path);
    double t0 = tu_now();
    refused(path, "longer than the 3600 s", "36000.0 s");
    CHECK(tu_now() - t0 < 1, "refusing a 10-hour file took %.1f s: it was read", tu_now() - t0);
}

/* A lower cap (what the fuzzer uses): a 1 s file refused at 0.5 s, from its header. */
static void test_cap(void) {
    size_t n = 0;
    uint8_t *d = slurp(write_tone("one_second.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, 16000), &n);
    ts_audio *a = ts_audio_decode_capped(d, n, "one second", 16000, 0.5);
    CHECK(!a, "a 1 s file read under a cap of 0.5 s");
    ts_audio_free(a);
    CHECK_ERRMSG("one second", "1.0 s", "longer than the 0.5 s");
    a = ts_audio_decode_capped(d, n, "one second", 8000, 1.0);
    CHECK(a && llabs(a->n - 8000) <= 4 && a->rate == 8000, "at the cap: %s", a ? "wrong length" : ts_last_error());
    ts_audio_free(a);
    free(d);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    snprintf(tdir, sizeof tdir, "/tmp/ts_audio_XXXXXX");
    if (!mkdtemp(tdir)) return 1;
    RUN(test_formats);
    RUN(test_stereo);
    RUN(test_resample);
    RUN(test_s16);
    RUN(test_write_wav);
    RUN(test_bad_files);
    RUN(test_ten_hours);
    RUN(test_cap);
    nftw(tdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return tu_finish("test_audio");
}
