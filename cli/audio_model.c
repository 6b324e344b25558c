/*
 * audio_model.c — `tessera eval` and `tessera export` on an audio classifier's model directory
 * (from `tessera audio-train`; ts_audio_clf_is_dir tells it from a BERT one):
 *   eval    accuracy on labelled audio (a folder per label or a TSV, as audio-train reads it) and
 *           per label: clips, right, and the labels its clips were taken for
 *   export  the head (or CNN) on its features as ONNX, input "features" [1, 192] or "mel"
 *           [1, 1, T, 32], output "logits" [1, labels]
 */
#include "cli.h"
#include "speech_io.h"

/* The classifier of dir with the speech models found as tessera kws finds them; NULL after
 * printing the error. */
static ts_audio_clf *open_model(const char *cmd, const char *dir, int threads) {
    char dir_buf[4096], path[4200];
    if (!cli_path_join(path, sizeof path, cli_speech_dir(dir_buf, sizeof dir_buf), "openwakeword"))
        return cli_fail(cmd, "", 2), NULL;
    ts_audio_clf *c = ts_audio_clf_load(dir, path, threads);
    if (!c) cli_fail(cmd, "--model: ", 2);
    return c;
}

/* Per-label counts of the clips of s: right[j] of total[j]; wrong guesses counted in confused
 * [true][guess]. */
static void print_labels(const ts_audio_set *s, ts_audio_clf *c, const int *guess) {
    int L = ts_audio_clf_num_labels(c);
    printf("%-16s %6s %6s %8s   most taken for\n", "label", "clips", "right", "accuracy");
    for (int j = 0; j < L; j++) {
        int total = 0, right = 0, *other = calloc((size_t)L, sizeof(int)), top = -1;
        for (int i = 0; i < s->n; i++) {
            if (strcmp(s->labels[s->label[i]], ts_audio_clf_label(c, j))) continue;
            total++, right += guess[i] == j;
            if (guess[i] != j && other) other[guess[i]]++;
        }
        for (int k = 0; other && k < L; k++)
            if (other[k] && (top < 0 || other[k] > other[top])) top = k;
        if (total)
            printf("%-16s %6d %6d %7.2f%%   %s\n", ts_audio_clf_label(c, j), total, right, 100.0 * right / total,
                   top >= 0 ? ts_audio_clf_label(c, top) : "-");
        free(other);
    }
}

int cli_eval_audio(const char *model, const char *data, int threads) {
    ts_audio_clf *c = open_model("eval", model, threads);
    if (!c) return 2;
    ts_audio_set *s = ts_audio_set_load(data);
    double t0 = ts_seconds();
    float *feat = s ? ts_audio_set_features(c, s) : NULL;
    int *guess = feat ? malloc((size_t)s->n * sizeof(int)) : NULL, hit = 0, unknown = 0;
    int rc = !s ? cli_fail("eval", "", 2) : !feat ? cli_fail("eval", "", ts_last_status() == TS_ERR_ARG ? 2 : 1) : 0;
    if (feat && (!guess || ts_audio_clf_guess(c, s->n, feat, guess))) rc = cli_fail("eval", "", 1);
    for (int i = 0; feat && !rc && i < s->n; i++) {
        const char *want = s->labels[s->label[i]];
        hit += !strcmp(want, ts_audio_clf_label(c, guess[i]));
        int known = 0;
        for (int j = 0; j < ts_audio_clf_num_labels(c); j++) known |= !strcmp(want, ts_audio_clf_label(c, j));
        unknown += !known;
    }
    if (feat && !rc) {
        printf("tessera eval: %s: accuracy %.2f%% (%d of %d clips)%s, %.1f s\n", data, 100.0 * hit / s->n, hit, s->n,
               unknown ? " (some clips' labels are not the model's)" : "", ts_seconds() - t0);
        print_labels(s, c, guess);
    }
    free(feat), free(guess);
    ts_audio_set_free(s);
    ts_audio_clf_free(c);
    return rc;
}

int cli_export_audio(const char *model, const char *onnx, int threads) {
    ts_audio_clf *c = open_model("export", model, threads);
    if (!c) return 2;
    int rc = 0;
    if (ts_audio_clf_export_onnx(c, onnx)) rc = cli_fail("export", "", 1);
    else {
        int scratch = ts_audio_clf_get_kind(c) == TS_AUDIO_CLF_SCRATCH;
        int64_t F = ts_audio_clf_feature_size(c);
        printf("tessera export: audio classifier (%s) -> %s: input %s [1, %s%lld%s], output logits [1, %d]\n",
               scratch ? "scratch CNN" : "head on the openWakeWord embedding", onnx, scratch ? "mel" : "features",
               scratch ? "1, " : "", (long long)(scratch ? F / 32 : F), scratch ? ", 32" : "", ts_audio_clf_num_labels(c));
    }
    ts_audio_clf_free(c);
    return rc;
}
