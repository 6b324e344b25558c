/*
 * test_speech_detect.c — what the speech commands' library does without the models
 * (tessera_speech.h):
 *  - ts_kws_detector, the wake-word firing rule, on synthetic score sequences: a label fires when
 *    its score reaches the threshold (also at the first frame), not again until it has fallen
 *    below it, each label on its own; the times are the ends of the 80 ms frames less the lead
 *    silence (at least 0); the peaks; a reset starts over; frames fed in pieces fire as fed at
 *    once; bad arguments;
 *  - ts_audio_set_load, labelled audio: a TSV (header, blank lines, relative and absolute paths)
 *    read in order with its labels sorted; a TSV with a bad line refused, the error naming the
 *    file and the line; a folder per label (hidden names skipped, files sorted); no clips, a
 *    missing path: errors naming them.
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
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    char dir[] = "/tmp/ts_speech_detect_XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    RUN(test_firing_rule);
    RUN(test_audio_set_tsv);
    RUN(test_audio_set_dir);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return tu_finish("test_speech_detect");
}
