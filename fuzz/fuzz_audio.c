/*
 * fuzz_audio.c — libFuzzer target for the audio reader (apps/audio/: libsndfile over memory, the
 * WAV header peek, the mix-down, libsamplerate): the input is decoded from memory to mono 16 kHz.
 * Whatever the bytes, a file is refused with a message, or decoded to at least one sample at
 * 16 kHz, every sample readable; never a crash, leak or out-of-bounds read. The length is capped
 * at 4 s (ts_audio_decode_capped) instead of the hour a file may last: a few bytes of FLAC can
 * claim an hour of silence, and decoding and resampling that is slow, not wrong. The same bytes
 * also go through ts_audio_from_s16, and a short decoded clip is written as WAV and read back.
 */
#include "tessera_apps.h"
#include "fuzz_util.h"

#include "audio/audio.h"

/* libvorbis leaks what it allocated for a malformed Ogg Vorbis header when libsndfile gives the
 * file up (vorbis_info_init's 5784 bytes: libsndfile issue #922, xiph/vorbis #125): not tessera's
 * leak, and one it cannot free. Leaks allocated inside libvorbis only are not reported; tessera's
 * own allocations never pass through it. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libvorbis.so\n"; }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_dir();
    return 0;
}

/* A short clip written as WAV and read back: the same length, the samples within 16-bit steps. */
static void round_trip(const ts_audio *a) {
    char path[700];
    snprintf(path, sizeof path, "%s/clip.wav", fuzz_dir());
    if (ts_audio_write_wav(a, path) != TS_OK) abort();
    ts_audio *b = ts_audio_read(path, a->rate);
    unlink(path);
    if (!b || b->n != a->n) abort();
    for (int64_t i = 0; i < a->n; i++) {
        float x = a->samples[i] > 1 ? 1 : a->samples[i] < -1 ? -1 : a->samples[i];
        if (x == x && !(b->samples[i] - x < 1e-3f && x - b->samples[i] < 1e-3f)) abort();
    }
    ts_audio_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ts_audio *a = ts_audio_decode_capped(data, size, "fuzz input", 16000, 4.0);
    if (!a) {
        if (!ts_last_error()[0]) abort(); /* a refusal says why */
    } else {
        if (a->rate != 16000 || a->n <= 0 || a->n > 4 * 16000 + 64) abort();
        float sum = 0; /* every sample is there (ASan checks the reads) */
        for (int64_t i = 0; i < a->n; i++) sum += a->samples[i];
        if (a->n <= 4096 && sum == sum) round_trip(a);
        ts_audio_free(a);
    }
    ts_audio *r = ts_audio_from_s16(data, size & ~(size_t)1, 16000);
    if (!r || r->n != (int64_t)(size / 2)) abort();
    ts_audio_free(r);
    return 0;
}
