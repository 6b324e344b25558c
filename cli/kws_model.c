/*
 * kws_model.c — `tessera kws --model DIR AUDIO...`: an audio classifier from `tessera
 * audio-train` run over a sliding window of its clip length on each file (ts_audio_clf_scan: a
 * window every 320 ms, quiet windows skipped, a label reported when it reaches the threshold and
 * the window before did not report it). Prints "FILE<TAB>TIME<TAB>LABEL<TAB>SCORE" (TIME: the
 * window's start in seconds), or with --json {"detections": [{"file", "time", "keyword", "score"}...]}
 * as tessera kws does.
 */
#include "cli.h"
#include "speech_io.h"

/* One file: detections printed; 0 or the exit code. */
static int scan(ts_audio_clf *c, const char *file, float threshold, int json, int *ndet) {
    ts_audio *a = cli_speech_read(file);
    if (!a) return cli_fail("kws", "", 2);
    ts_kws_detection *det;
    int64_t n = ts_audio_clf_scan(c, a->samples, a->n, threshold, &det);
    ts_audio_free(a);
    if (n < 0) return cli_fail("kws", "", 1);
    for (int64_t i = 0; i < n; i++) {
        const char *label = ts_audio_clf_label(c, det[i].label);
        if (json) {
            printf("%s\n    {\"file\": ", (*ndet)++ ? "," : "");
            cli_json_string(stdout, file);
            printf(", \"time\": %.2f, \"keyword\": ", det[i].time);
            cli_json_string(stdout, label);
            printf(", \"score\": %.4f}", det[i].score);
        } else
            printf("%s\t%.2f\t%s\t%.4f\n", file, det[i].time, label, det[i].score);
    }
    free(det);
    return 0;
}

int cli_kws_model(const char *model, const char *models_dir, char **files, int nfiles, float threshold, int json,
                  int threads) {
    char path[4200];
    if (!cli_path_join(path, sizeof path, models_dir, "openwakeword")) return cli_fail("kws", "", 2);
    ts_audio_clf *c = ts_audio_clf_load(model, path, threads);
    if (!c) return cli_fail("kws", "--model: ", 2);
    int rc = 0, ndet = 0;
    if (json) printf("{\"detections\": [");
    for (int i = 0; i < nfiles && rc != 1; i++) {
        int frc = scan(c, files[i], threshold, json, &ndet);
        if (frc) rc = frc;
    }
    if (json) printf("%s]}\n", ndet ? "\n  " : "");
    ts_audio_clf_free(c);
    return rc;
}
