/*
 * speech_io.h — what `tessera kws` and `tessera vad` share (cli/speech_io.c): where the speech
 * models are, and audio in from a file or standard input.
 */
#ifndef TS_CLI_SPEECH_IO_H
#define TS_CLI_SPEECH_IO_H

#include <stdio.h>

#include "tessera_apps.h"

/* The speech models' directory without --model-store: $TESSERA_DATA/speech, else the installed data
 * directory's speech/ when it holds openwakeword/melspectrogram.onnx, else the build's
 * data/speech (scripts/install-deps.sh puts them there). Written into buf. */
const char *cli_speech_dir(char *buf, size_t cap);

/* Audio at 16 kHz: a file through ts_audio_read, or with path "-" all of standard input as raw
 * 16 kHz little-endian s16 mono. NULL with ts_last_error() naming the file. */
ts_audio *cli_speech_read(const char *path);

/* Up to cap samples of raw s16 from standard input into x (floats in [-1, 1)); returns how many
 * (0 at the end of input, -1 on a read error). Blocks until cap samples or the end. */
int64_t cli_speech_read_stdin(float *x, int64_t cap);

#endif
