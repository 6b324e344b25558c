/*
 * test_speech_detect.c — what the speech commands' library does without the models
 * (tessera_speech.h):
 *  - ts_kws_detector, the wake-word firing rule, on synthetic score sequences: a label fires when
 *    its score reaches the threshold (also at the first frame), not again until it has fallen
 *    below it, each label on its own; the times are the ends of the 80 ms frames less the lead
 *    silence (at least 0); the peaks; a reset starts over; frames fed in pieces fire as fed at
 *    once; bad arguments (all with the refractory period off, 0 s: the rule as it was before it);
 *  - the refractory period (openWakeWord's debounce_time): a score that crosses the threshold,
 *    dips and crosses again within R fires once, crossing again after R fires again; frames
 *    f + 1 .. f + ceil(R / 80 ms) after a detection at f are held back, the next one is not
 *    (checked for R = 0.4 s and for a new detector's default, TS_KWS_REFRACTORY 1.25 s: 16
 *    frames); the other label is not held back; R = 0 fires at each crossing; a reset forgets
 *    the last detection but keeps R; bad values refused;
 *  - ts_audio_set_load, labelled audio: a TSV (header, blank lines, relative and absolute paths)
 *    read in order with its labels sorted; a TSV with a bad line refused, the error naming the
 *    file and the line; a folder per label (hidden names skipped, files sorted); no clips, a
 *    missing path, an empty label folder: errors naming them.
 */
#include <sys/stat.h>

#include "tessera_apps.h"
#include "test_util.h"

static void write_str(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0, "cannot write %s", path);
    if (f) fclose(f);
}

/* Two labels over 9 frames: label 0 rises, holds, falls, rises again; label 1 starts above. */
static const float SCORES[9][2] = {{0.1f, 0.9f}, {0.5f, 0.8f}, {0.7f, 0.2f}, {0.4f, 0.6f}, {0.5f, 0.6f},
                                   {0.49f, 0.1f}, {0.2f, 0.95f}, {0.6f, 0.3f}, {0.3f, 0.3f}};

static void test_firing_rule(void) {
    ts_kws_detector *d = ts_kws_detector_new(2, 0.5f);
    CHECK(d != NULL, "new: %s", ts_last_error());
    if (!d) return;
    CHECK_OK(ts_kws_detector_set_refractory(d, 0)); /* off: each crossing fires */
    ts_kws_detector_reset(d, TS_KWS_PAD);
    const ts_kws_detection *det;
    int64_t n;
    CHECK_OK(ts_kws_detector_feed(d, &SCORES[0][0], 9, &det, &n));
    /* label 1 fires at frame 0 (above from the start), 3 (back above after 2), 6; label 0 at 1, 4, 7 */
    static const int want_frame[] = {0, 1, 3, 4, 6, 7}, want_label[] = {1, 0, 1, 0, 1, 0};
    CHECK(n == 6, "%lld detections, want 6", (long long)n);
    for (int i = 0; i < 6 && n == 6; i++) {
        double t = ((want_frame[i] + 1) * TS_KWS_HOP - TS_KWS_PAD) / 16000.0;
        CHECK(det[i].frame == want_frame[i] && det[i].label == want_label[i] &&
              det[i].score == SCORES[want_frame[i]][want_label[i]] && fabs(det[i].time - (t < 0 ? 0 : t)) < 1e-12,
              "detection %d: frame %lld label %d score %g time %g", i, (long long)det[i].frame, det[i].label,
              det[i].score, det[i].time);
    }
    const float *peak = ts_kws_detector_peaks(d);
    CHECK(peak[0] == 0.7f && peak[1] == 0.95f, "peaks %g %g", peak[0], peak[1]);
    /* in pieces (no lead): the same frames fire */
    ts_kws_detector_reset(d, 0);
    CHECK(ts_kws_detector_peaks(d)[0] == 0, "a reset keeps the peaks");
    int64_t total = 0, frames[8];
    double last_time = -1;
    for (int f = 0; f < 9; f++) {
        CHECK_OK(ts_kws_detector_feed(d, SCORES[f], 1, &det, &n));
        for (int64_t i = 0; i < n && total < 8; i++) frames[total++] = det[i].frame, last_time = det[i].time;
    }
    CHECK(total == 6 && frames[0] == 0 && frames[5] == 7, "fed frame by frame: %lld detections", (long long)total);
    CHECK(fabs(last_time - 8 * TS_KWS_HOP / 16000.0) < 1e-12, "time without lead: %g", last_time);
    /* exactly the threshold fires; a score that stays above does not fire again */
    ts_kws_detector_reset(d, 0);
    static const float flat[4][2] = {{0.5f, 0}, {0.6f, 0}, {0.99f, 0}, {0.5f, 0}};
    CHECK_OK(ts_kws_detector_feed(d, &flat[0][0], 4, &det, &n));
    CHECK(n == 1 && det[0].frame == 0, "a held score fired %lld times", (long long)n);
    CHECK_OK(ts_kws_detector_feed(d, NULL, 0, &det, &n));
    CHECK(n == 0, "no frames, %lld detections", (long long)n);
    ts_kws_detector_free(d);
    CHECK(!ts_kws_detector_new(0, 0.5f) && ts_last_status() == TS_ERR_ARG, "no labels");
    CHECK(!ts_kws_detector_new(2, 0) && ts_last_status() == TS_ERR_ARG, "threshold 0");
    CHECK_STATUS(ts_kws_detector_feed(NULL, NULL, 0, &det, &n), TS_ERR_ARG);
}

/* The frames at which d fires over nframes frames of one label's scores s (after a reset), into
 * frames[cap]; returns how many fired. */
static int fired_at(ts_kws_detector *d, const float *s, int nframes, int64_t *frames, int cap) {
    const ts_kws_detection *det;
    int64_t n = 0;
    ts_kws_detector_reset(d, 0);
    CHECK_OK(ts_kws_detector_feed(d, s, nframes, &det, &n));
    for (int64_t i = 0; i < n && i < cap; i++) frames[i] = det[i].frame;
    return (int)n;
}

static void test_refractory(void) {
    ts_kws_detector *d = ts_kws_detector_new(1, 0.5f);
    CHECK(d != NULL, "new: %s", ts_last_error());
    if (!d) return;
    int64_t f[8];
    /* R = 0.4 s: ceil(0.4 / 0.08) = 5 frames held back after a detection */
    CHECK_OK(ts_kws_detector_set_refractory(d, 0.4));
    /* fires at 0, dips, crosses again at 2 (within R): held back; crosses at 6 (after R): fires */
    static const float again[] = {0.9f, 0.2f, 0.8f, 0.1f, 0.1f, 0.2f, 0.9f, 0.1f};
    int n = fired_at(d, again, 8, f, 8);
    CHECK(n == 2 && f[0] == 0 && f[1] == 6, "R 0.4 s: %d detections (want frames 0 and 6)", n);
    /* a crossing at frame 5, the last frame of the 5 held back, does not fire */
    static const float edge[] = {0.9f, 0.2f, 0.1f, 0.1f, 0.1f, 0.8f, 0.1f};
    n = fired_at(d, edge, 7, f, 8);
    CHECK(n == 1 && f[0] == 0, "R 0.4 s, crossing again at frame 5: %d detections (want 1)", n);
    /* R = 0: today's rule, every crossing fires */
    CHECK_OK(ts_kws_detector_set_refractory(d, 0));
    n = fired_at(d, again, 8, f, 8);
    CHECK(n == 3 && f[0] == 0 && f[1] == 2 && f[2] == 6, "R 0: %d detections (want frames 0, 2, 6)", n);
    ts_kws_detector_free(d);

    /* a new detector: TS_KWS_REFRACTORY = 1.25 s, ceil(1.25 / 0.08) = 16 frames; two labels, the
     * second crossing while the first rests */
    CHECK(TS_KWS_REFRACTORY == 1.25, "TS_KWS_REFRACTORY %g", TS_KWS_REFRACTORY);
    d = ts_kws_detector_new(2, 0.5f);
    CHECK(d != NULL, "new: %s", ts_last_error());
    if (!d) return;
    float s[20][2] = {{0}};
    s[0][0] = 0.9f, s[3][1] = 0.9f, s[16][0] = 0.9f; /* label 0 again at 16: held back */
    const ts_kws_detection *det;
    int64_t nd;
    ts_kws_detector_reset(d, 0);
    CHECK_OK(ts_kws_detector_feed(d, &s[0][0], 20, &det, &nd));
    CHECK(nd == 2 && det[0].frame == 0 && det[0].label == 0 && det[1].frame == 3 && det[1].label == 1,
          "default R, label 0 again at frame 16: %lld detections (want label 0 at 0, label 1 at 3)", (long long)nd);
    s[16][0] = 0, s[17][0] = 0.9f; /* at 17: fires */
    ts_kws_detector_reset(d, 0);
    CHECK_OK(ts_kws_detector_feed(d, &s[0][0], 20, &det, &nd));
    CHECK(nd == 3 && det[2].frame == 17 && det[2].label == 0, "default R, again at frame 17: %lld detections",
          (long long)nd);
    /* fed in pieces, across a reset: the reset forgets the detection, not R */
    ts_kws_detector_reset(d, 0);
    CHECK_OK(ts_kws_detector_feed(d, &s[0][0], 1, &det, &nd));
    ts_kws_detector_reset(d, 0);
    CHECK_OK(ts_kws_detector_feed(d, &s[0][0], 1, &det, &nd));
    CHECK(nd == 1, "after a reset the first frame fired %lld times", (long long)nd);
    int64_t total = 0;
    for (int i = 1; i < 17; i++, total += nd) CHECK_OK(ts_kws_detector_feed(d, s[i], 1, &det, &nd));
    CHECK(total == 1, "frames 1..16 fed one by one: %lld detections (want label 1's)", (long long)total);
    CHECK_STATUS(ts_kws_detector_set_refractory(d, -0.1), TS_ERR_ARG);
    CHECK_STATUS(ts_kws_detector_set_refractory(d, NAN), TS_ERR_ARG);
    CHECK_STATUS(ts_kws_detector_set_refractory(d, TS_AUDIO_MAX_SECONDS + 1), TS_ERR_ARG);
    CHECK_STATUS(ts_kws_detector_set_refractory(NULL, 1), TS_ERR_ARG);
    ts_kws_detector_free(d);
}

static void test_audio_set_tsv(void) {
    CHECK(mkdir("clips", 0777) == 0 || errno == EEXIST, "mkdir clips");
    write_str("clips/set.tsv", "path\tlabel\n"
                               "a.wav\tyes\n"
                               "\n"
                               "sub/b.wav\tno\n"
                               "/abs/c.wav\tyes\n");
    ts_audio_set *s = ts_audio_set_load("clips/set.tsv");
    CHECK(s != NULL, "load: %s", ts_last_error());
    if (!s) return;
    CHECK(s->n == 3 && s->nlabels == 2 && !strcmp(s->labels[0], "no") && !strcmp(s->labels[1], "yes"),
          "%d clips, %d labels", s->n, s->nlabels);
    CHECK(s->n == 3 && !strcmp(s->path[0], "clips/a.wav") && !strcmp(s->path[1], "clips/sub/b.wav") &&
              !strcmp(s->path[2], "/abs/c.wav") && s->label[0] == 1 && s->label[1] == 0 && s->label[2] == 1,
          "paths and labels: %s %s %s", s->path[0], s->path[1], s->path[2]);
    CHECK(ts_audio_set_find(s, "yes") == 1 && ts_audio_set_find(s, "maybe") == -1, "find");
    ts_audio_set_free(s);
    /* a bad line: the file and the line named */
    write_str("bad.tsv", "a.wav\tyes\nb.wav\tno\nc.wav no tab\nd.wav\tyes\n");
    CHECK(!ts_audio_set_load("bad.tsv"), "a TSV with a bad line was read");
    CHECK_STATUS(ts_last_status(), TS_ERR_ARG);
    CHECK_ERRMSG("bad.tsv:3", "PATH<TAB>LABEL");
    write_str("three.tsv", "a.wav\tyes\textra\n");
    CHECK(!ts_audio_set_load("three.tsv"), "three fields");
    CHECK_ERRMSG("three.tsv:1");
    write_str("empty.tsv", "path\tlabel\n\n");
    CHECK(!ts_audio_set_load("empty.tsv"), "no clips");
    CHECK_ERRMSG("empty.tsv", "no audio clips");
    CHECK(!ts_audio_set_load("missing.tsv"), "a missing file");
    CHECK_ERRMSG("missing.tsv");
}

static void test_audio_set_dir(void) {
    const char *dirs[] = {"set", "set/zero", "set/one", "set/.hidden"};
    for (int i = 0; i < 4; i++) CHECK(mkdir(dirs[i], 0777) == 0, "mkdir %s", dirs[i]);
    write_str("set/one/b.wav", "");
    write_str("set/one/a.wav", "");
    write_str("set/zero/c.wav", "");
    write_str("set/zero/.skip.wav", "");
    write_str("set/.hidden/d.wav", "");
    write_str("set/loose.wav", ""); /* a file beside the label folders: no label */
    ts_audio_set *s = ts_audio_set_load("set");
    CHECK(s != NULL, "load: %s", ts_last_error());
    if (!s) return;
    CHECK(s->n == 3 && s->nlabels == 2 && !strcmp(s->labels[0], "one") && !strcmp(s->labels[1], "zero"),
          "%d clips, %d labels", s->n, s->nlabels);
    CHECK(s->n == 3 && !strcmp(s->path[0], "set/one/a.wav") && !strcmp(s->path[1], "set/one/b.wav") &&
              !strcmp(s->path[2], "set/zero/c.wav") && s->label[0] == 0 && s->label[2] == 1,
          "clips: %s %s %s", s->path[0], s->path[1], s->path[2]);
    ts_audio_set_free(s);
    CHECK(mkdir("bare", 0777) == 0, "mkdir bare");
    CHECK(!ts_audio_set_load("bare"), "a folder without clips");
    CHECK_ERRMSG("bare: no audio clips");
    /* a label folder without files (a hidden one does not count) beside a full one */
    const char *holes[] = {"holes", "holes/full", "holes/empty"};
    for (int i = 0; i < 3; i++) CHECK(mkdir(holes[i], 0777) == 0, "mkdir %s", holes[i]);
    write_str("holes/full/a.wav", "");
    write_str("holes/empty/.b.wav", "");
    CHECK(!ts_audio_set_load("holes"), "a set with an empty label folder was read");
    CHECK_STATUS(ts_last_status(), TS_ERR_ARG);
    CHECK_ERRMSG("holes/empty", "empty label folder");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    char dir[] = "/tmp/ts_speech_detect_XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    RUN(test_firing_rule);
    RUN(test_refractory);
    RUN(test_audio_set_tsv);
    RUN(test_audio_set_dir);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return tu_finish("test_speech_detect");
}
