/*
 * kws_model.c — `tessera kws --model DIR AUDIO...`: an audio classifier from `tessera
 * audio-train` run over a sliding window of its clip length on each file: a window every 320 ms
 * (4 hops of 80 ms) from the start of the file, the last ones padded with silence; windows
 * quieter than RMS 0.01 (about -40 dBFS) are skipped as silence. A window whose most probable
 * label reaches the threshold reports it, unless the window before reported the same label.
 * Prints "FILE<TAB>TIME<TAB>LABEL<TAB>SCORE" (TIME: the window's start in seconds), or with
 * --json {"detections": [{"file", "time", "keyword", "score"}...]} as tessera kws does.
 */
#include <math.h>

#include "cli.h"
#include "speech_io.h"

#define STEP (4 * TS_KWS_HOP)
#define QUIET 0.01f

/* One file: detections printed; 0 or the exit code. */
static int scan(ts_audio_clf *c, const char *file, float threshold, int json, int *ndet, float *feat, float *p) {
    ts_audio *a = cli_speech_read(file);
    if (!a) return cli_fail("kws", "", 2);
    int clip = ts_audio_clf_clip_samples(c), L = ts_audio_clf_num_labels(c), last = -1;
    for (int64_t s = 0; s < a->n; s += STEP) {
        int64_t n = a->n - s < clip ? a->n - s : clip;
        double e = 0;
        for (int64_t i = 0; i < n; i++) e += (double)a->samples[s + i] * a->samples[s + i];
        if (sqrt(e / clip) < QUIET) {
            last = -1;
            continue;
        }
        if (ts_audio_clf_features(c, a->samples + s, n, feat) || ts_audio_clf_predict(c, 1, feat, p)) {
            ts_audio_free(a);
            return cli_fail("kws", "", 1);
        }
        int best = 0;
        for (int j = 1; j < L; j++) best = p[j] > p[best] ? j : best;
        int fire = p[best] >= threshold ? best : -1;
        if (fire >= 0 && fire != last) {
            double t = (double)s / 16000.0;
            if (json) {
                printf("%s\n    {\"file\": ", (*ndet)++ ? "," : "");
                cli_json_string(stdout, file);
                printf(", \"time\": %.2f, \"keyword\": ", t);
                cli_json_string(stdout, ts_audio_clf_label(c, fire));
                printf(", \"score\": %.4f}", p[fire]);
            } else
                printf("%s\t%.2f\t%s\t%.4f\n", file, t, ts_audio_clf_label(c, fire), p[fire]);
        }
        last = fire;
    }
    ts_audio_free(a);
    return 0;
}

int cli_kws_model(const char *model, const char *models_dir, char **files, int nfiles, float threshold, int json,
                  int threads) {
    char path[4200];
    if (!cli_path_join(path, sizeof path, models_dir, "openwakeword")) return cli_fail("kws", "", 2);
    ts_audio_clf *c = ts_audio_clf_load(model, path, threads);
    if (!c) return cli_fail("kws", "--model: ", 2);
    float *feat = malloc((size_t)ts_audio_clf_feature_size(c) * sizeof(float));
    float *p = malloc((size_t)ts_audio_clf_num_labels(c) * sizeof(float));
    int rc = feat && p ? 0 : cli_fail("kws", "out of memory", 1), ndet = 0;
    if (json) printf("{\"detections\": [");
    for (int i = 0; i < nfiles && rc != 1; i++) {
        int frc = scan(c, files[i], threshold, json, &ndet, feat, p);
        if (frc) rc = frc;
    }
    if (json) printf("%s]}\n", ndet ? "\n  " : "");
    free(feat), free(p);
    ts_audio_clf_free(c);
    return rc;
}
