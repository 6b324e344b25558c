/*
 * audio_clf_fit.c — an audio classifier on a labelled set of clips (tessera_speech.h): trained on
 * it from new (ts_audio_clf_fit) and scored on it, overall and per label (ts_audio_clf_evaluate).
 */
#include "common/app.h"

/* Each clip's most probable label (malloc'd, n of them), from its features; NULL with the error
 * set. */
static int *guesses(ts_audio_clf *c, const ts_audio_set *s, const float *feat) {
    int *guess = malloc((size_t)(s->n ? s->n : 1) * sizeof *guess);
    if (!guess) return ts_set_error(TS_ERR_NOMEM, "out of memory"), NULL;
    if (ts_audio_clf_guess(c, s->n, feat, guess) == TS_OK) return guess;
    free(guess);
    return NULL;
}

/* The counts of out from each clip's guess. */
static void count(ts_audio_clf *c, const ts_audio_set *s, const int *guess, ts_audio_clf_eval *out, int *confused) {
    int L = ts_audio_clf_num_labels(c);
    for (int i = 0; i < s->n; i++) {
        int want = -1;
        for (int j = 0; j < L && want < 0; j++)
            if (!strcmp(s->labels[s->label[i]], ts_audio_clf_label(c, j))) want = j;
        out->right += guess[i] == want;
        out->unknown += want < 0;
        if (want < 0) continue;
        out->label_clips[want]++;
        out->label_right[want] += guess[i] == want;
        if (guess[i] != want) confused[want * L + guess[i]]++;
    }
    for (int j = 0; j < L; j++) {
        out->label_confused[j] = -1;
        for (int k = 0; k < L; k++)
            if (confused[j * L + k] && (out->label_confused[j] < 0 || confused[j * L + k] >
                                                                       confused[j * L + out->label_confused[j]]))
                out->label_confused[j] = k;
    }
}

/* ts_audio_clf_evaluate on features already computed. */
static ts_status evaluate(ts_audio_clf *c, const ts_audio_set *s, const float *feat, ts_audio_clf_eval *out) {
    int L = ts_audio_clf_num_labels(c);
    memset(out, 0, sizeof *out);
    out->clips = s->n;
    out->label_clips = calloc((size_t)L, sizeof(int));
    out->label_right = calloc((size_t)L, sizeof(int));
    out->label_confused = calloc((size_t)L, sizeof(int));
    int *confused = calloc((size_t)L * (size_t)L, sizeof(int));
    int *guess = out->label_clips && out->label_right && out->label_confused && confused ? guesses(c, s, feat) : NULL;
    ts_status st = guess ? TS_OK : ts_last_status() ? ts_last_status() : ts_set_error(TS_ERR_NOMEM, "out of memory");
    if (guess) count(c, s, guess, out, confused);
    free(guess), free(confused);
    if (st) ts_audio_clf_eval_free(out);
    return st;
}

ts_status ts_audio_clf_evaluate(ts_audio_clf *c, const ts_audio_set *s, ts_audio_clf_eval *out) {
    if (!c || !s || !out) return ts_set_error(TS_ERR_ARG, "ts_audio_clf_evaluate: bad arguments");
    float *feat = ts_audio_set_features(c, s);
    ts_status st = feat ? evaluate(c, s, feat, out) : ts_last_status();
    free(feat);
    return st;
}

void ts_audio_clf_eval_free(ts_audio_clf_eval *e) {
    if (!e) return;
    free(e->label_clips), free(e->label_right), free(e->label_confused);
    memset(e, 0, sizeof *e);
}

ts_audio_clf *ts_audio_clf_fit(const ts_audio_clf_opts *opts, const ts_audio_set *s,
                               const ts_audio_clf_train_opts *topts, ts_audio_clf_fit_report *report) {
    if (!opts || !s || !topts) return ts_set_error(TS_ERR_ARG, "ts_audio_clf_fit: bad arguments"), NULL;
    ts_audio_clf_opts o = *opts;
    o.nlabels = s->nlabels, o.labels = (const char *const *)s->labels;
    ts_audio_clf *c = ts_audio_clf_new(&o);
    if (!c) return NULL;
    ts_audio_clf_fit_report r = {0};
    double t0 = ts_seconds();
    float *feat = ts_audio_set_features(c, s);
    double t1 = ts_seconds();
    ts_status st = feat ? ts_audio_clf_train(c, s->n, feat, s->label, topts, &r.loss) : ts_last_status();
    if (feat && st) ts_set_error(st, "training: %s", ts_last_error());
    r.features_s = t1 - t0, r.train_s = ts_seconds() - t1;
    ts_audio_clf_eval e;
    if (!st && !(st = evaluate(c, s, feat, &e))) {
        r.accuracy = s->n ? (double)e.right / s->n : 0;
        ts_audio_clf_eval_free(&e);
    }
    free(feat);
    if (st) {
        ts_audio_clf_free(c);
        return NULL;
    }
    if (report) *report = r;
    return c;
}
