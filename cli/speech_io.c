/*
 * speech_io.c — what `tessera kws` and `tessera vad` share: the models' directory (as `tessera
 * ocr` finds data/ocr: TESSERA_DATA, the installed data directory, the source tree's data/),
 * audio files and raw s16 from standard input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "speech_io.h"

const char *cli_speech_dir(char *buf, size_t cap) {
    return cli_data_dir("speech", "openwakeword/melspectrogram.onnx", buf, cap);
}

int64_t cli_speech_read_stdin(float *x, int64_t cap) {
    int16_t raw[4096];
    int64_t n = 0;
    while (n < cap) {
        size_t want = (size_t)(cap - n < 4096 ? cap - n : 4096);
        size_t got = fread(raw, 2, want, stdin);
        for (size_t i = 0; i < got; i++) {
            const uint8_t *b = (const uint8_t *)&raw[i];
            x[n++] = (int16_t)(uint16_t)(b[0] | b[1] << 8) / 32768.0f;
        }
        if (got < want) return ferror(stdin) ? -1 : n;
    }
    return n;
}

ts_audio *cli_speech_read(const char *path) {
    if (strcmp(path, "-") != 0) return ts_audio_read(path, 16000);
    size_t n = 0;
    char *buf = cli_read_text("-", &n);
    if (!buf) {
        int e = errno;
        ts_set_error(e == ENOMEM ? TS_ERR_NOMEM : TS_ERR_IO, "standard input: %s", e == ENOMEM ? "out of memory" : strerror(e));
        return NULL;
    }
    ts_audio *a = ts_audio_from_s16(buf, n & ~(size_t)1, 16000);
    free(buf);
    return a;
}
