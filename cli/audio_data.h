/*
 * audio_data.h — labelled audio for `tessera audio-train` and `tessera eval` (cli/audio_data.c):
 * a folder per label, or a TSV of path and label, and the classifier's features of every clip.
 */
#ifndef TS_CLI_AUDIO_DATA_H
#define TS_CLI_AUDIO_DATA_H

#include "tessera.h"

/* n clips: path[i] (malloc'ed) and label[i] (an index into labels, sorted by name). */
typedef struct cli_audio_set {
    int n, nlabels;
    char **path;
    int *label;
    char **labels;
} cli_audio_set;

/* Read DATA: a folder holding one folder per label (its name), each holding audio files (names
 * starting with '.' skipped; sorted), or a TSV file of "path<TAB>label" lines (paths relative to
 * the TSV's folder; an optional header line "path<TAB>label"; blank lines skipped). Returns 0, or
 * 2 after printing "tessera CMD: ..." for no clips, a bad line or an unreadable folder. */
int cli_audio_set_load(const char *cmd, const char *data, cli_audio_set *s);
void cli_audio_set_free(cli_audio_set *s);
/* The index of label name in s->labels, or -1. */
int cli_audio_set_find(const cli_audio_set *s, const char *name);

/* The features of every clip of s (ts_audio_read at 16 kHz, then ts_audio_clf_features) into a
 * new array [n][feature size]; NULL after printing the error (naming the clip); *rc the exit code. */
float *cli_audio_features(const char *cmd, ts_audio_clf *c, const cli_audio_set *s, int *rc);

#endif
