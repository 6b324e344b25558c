/*
 * speech_io.h — what the speech subcommands (kws, vad, audio-train, eval / export of an audio
 * classifier) share: where the speech models are.
 */
#ifndef TS_CLI_SPEECH_IO_H
#define TS_CLI_SPEECH_IO_H

#include "cli.h"

/* The speech models' directory without --model-store (ts_data_dir's "speech", where
 * openwakeword/melspectrogram.onnx is), written into buf. */
static inline const char *cli_speech_dir(char *buf, size_t cap) {
    return ts_data_dir("speech", "openwakeword/melspectrogram.onnx", buf, cap);
}

/* The audio classifier of dir (eval, export --model) with the speech models found as tessera kws
 * finds them; NULL after printing the error. */
static inline ts_audio_clf *cli_audio_clf_open(const char *cmd, const char *dir, int threads) {
    char dir_buf[4096], path[4200];
    if (!cli_path_join(path, sizeof path, cli_speech_dir(dir_buf, sizeof dir_buf), "openwakeword"))
        return cli_fail(cmd, "", 2), NULL;
    ts_audio_clf *c = ts_audio_clf_load(dir, path, threads);
    if (!c) cli_fail(cmd, "--model: ", 2);
    return c;
}

/* --model-store DIR (formerly --models) into *ptr, the directory holding `holding`. */
#define CLI_MODEL_STORE_OPT(ptr, holding)                                                               \
    {"model-store", CLI_STR, ptr, 0, "DIR",                                                             \
     "the speech models directory, holding " holding " (default:\n"                                    \
     "$TESSERA_DATA/speech when TESSERA_DATA is set, else the installed data\n"                        \
     "directory's speech/ when it holds them, else data/speech of the source\n"                        \
     "tree, where scripts/install-deps.sh puts them).", "models"}

#endif
