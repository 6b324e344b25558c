/*
 * test_cli_kws.c — `tessera kws` and `tessera vad` (cli/kws.c, cli/vad.c, src/speech/) end to
 * end on clips spoken at test time by espeak-ng:
 *  - kws: "hey jarvis" and "alexa" are detected (once each, by the right keyword, at a time
 *    inside the clip), the digits "seven" and "three" are not; --scores prints a peak per file
 *    and keyword; --json parses (cJSON) with the same detections; "-" reads raw s16 from
 *    standard input and finds "alexa" there too;
 *  - vad: a sentence placed with 1 s of silence before it and 1.5 s after is found as speech
 *    starting and ending within 100 ms of where it was placed (its first and last samples above
 *    1% of full scale); --json parses;
 *  - bad input exits 2 naming what is wrong: no AUDIO, an unknown flag, --threshold 2, an
 *    unknown keyword (the known ones listed), a missing file, a text file, a models directory
 *    without the models.
 * Skipped (77) without the models in data/speech or without espeak-ng.
 */
#include "test_util.h"

#include "cli_util.h"

#include <cjson/cJSON.h>
#include <math.h>

#ifndef TS_SOURCE_DIR
#define TS_SOURCE_DIR "."
#endif
#define SPEECH TS_SOURCE_DIR "/data/speech"

/* espeak-ng says `text` into dir/name.wav. */
static int say(const char *name, const char *text) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "espeak-ng -w '%s/%s.wav' '%s' 2>/dev/null", dir, name, text);
    return system(cmd) == 0;
}

static const char *const CLIPS[][2] = {
    {"jarvis", "hey jarvis"}, {"alexa", "alexa"}, {"seven", "seven"}, {"three", "three"},
};

/* How many lines of out_text contain both a and b. */
static int lines_with(const char *a, const char *b) {
    int n = 0;
    for (const char *l = out_text; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), l);
        if (strstr(line, a) && strstr(line, b)) n++;
        l += len + (e ? 1 : 0);
    }
    return n;
}

static void test_kws_detects(void) {
    int rc = tessera(NULL, "kws jarvis.wav alexa.wav seven.wav three.wav --keyword hey_jarvis,alexa --scores");
    CHECK_RAN(rc, 0);
    CHECK(lines_with("jarvis.wav\t", "\they_jarvis\t") == 2, "hey_jarvis: one detection and one peak:\n%s", out_text);
    CHECK(lines_with("alexa.wav\t", "\talexa\t") == 2, "alexa: one detection and one peak:\n%s", out_text);
    CHECK(lines_with("seven.wav", "peak") == 2 && lines_with("seven.wav", "") == 2, "detections in seven.wav:\n%s",
          out_text);
    CHECK(lines_with("three.wav", "peak") == 2 && lines_with("three.wav", "") == 2, "detections in three.wav:\n%s",
          out_text);
    CHECK(lines_with("jarvis.wav", "alexa") == 1 && lines_with("alexa.wav", "hey_jarvis") == 1,
          "a keyword fired on the other's clip:\n%s", out_text);
    const char *d = strstr(out_text, "alexa.wav\t");
    double t = d ? atof(d + strlen("alexa.wav\t")) : -1;
    CHECK(t > 0.2 && t < 2.0, "alexa detected at %.2f s", t);
}

static void test_kws_json_stdin(void) {
    int rc = tessera(NULL, "kws --json alexa.wav seven.wav --keyword alexa");
    CHECK_RAN(rc, 0);
    cJSON *j = cJSON_Parse(out_text), *dets = cJSON_GetObjectItem(j, "detections");
    CHECK(cJSON_GetArraySize(dets) == 1, "--json: %s", out_text);
    cJSON *d0 = cJSON_GetArrayItem(dets, 0);
    CHECK(d0 && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d0, "keyword")), "alexa") &&
              cJSON_GetNumberValue(cJSON_GetObjectItem(d0, "score")) >= 0.5,
          "--json: %s", out_text);
    cJSON_Delete(j);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && sox alexa.wav -r 16000 -c 1 -b 16 -e signed -t raw - | '%s' kws - --keyword alexa "
             ">stdout.txt 2>stderr.txt", dir, cli);
    rc = system(cmd);
    read_into("stdout.txt", out_text, sizeof out_text);
    read_into("stderr.txt", err_text, sizeof err_text);
    CHECK(rc == 0 && lines_with("-\t", "\talexa\t") == 1, "kws - (sox | tessera kws -): %d\n%s%s", rc, out_text, err_text);
}

/* Where dir/name.wav has sound: its first and last sample above 1% of full scale, in s. */
static void speech_extent(const char *name, double *a, double *b, ts_audio **out) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.wav", dir, name);
    ts_audio *au = ts_audio_read(path, 16000);
    *a = *b = -1;
    if (!au) return;
    int64_t i = 0, j = au->n - 1;
    while (i < au->n && fabsf(au->samples[i]) < 0.01f) i++;
    while (j > i && fabsf(au->samples[j]) < 0.01f) j--;
    *a = i / 16000.0, *b = (j + 1) / 16000.0;
    *out = au;
}

static void test_vad_segments(void) {
    double a, b;
    ts_audio *s = NULL;
    speech_extent("sentence", &a, &b, &s);
    CHECK(s, "reading the sentence: %s", ts_last_error());
    if (!s) return;
    /* 1 s of silence, the sentence's sound, 1.5 s of silence */
    int64_t from = (int64_t)(a * 16000), len = (int64_t)(b * 16000) - from;
    ts_audio placed = {.rate = 16000, .n = 16000 + len + 24000};
    placed.samples = calloc((size_t)placed.n, sizeof(float));
    memcpy(placed.samples + 16000, s->samples + from, (size_t)len * sizeof(float));
    char path[512];
    snprintf(path, sizeof path, "%s/placed.wav", dir);
    CHECK_OK(ts_audio_write_wav(&placed, path));
    free(placed.samples);
    ts_audio_free(s);
    int rc = tessera(NULL, "vad placed.wav");
    CHECK_RAN(rc, 0);
    double start = -1, end = -1;
    for (const char *l = out_text; (l = strstr(l, "placed.wav\t")); l++) {
        double s0, e0;
        if (sscanf(l, "placed.wav\t%lf\t%lf", &s0, &e0) == 2) {
            if (start < 0) start = s0;
            end = e0;
        }
    }
    double want_end = 1.0 + (double)len / 16000;
    printf("  speech placed at 1.000-%.3f s, found at %.3f-%.3f s\n", want_end, start, end);
    CHECK(fabs(start - 1.0) <= 0.1 && fabs(end - want_end) <= 0.1, "segments:\n%s", out_text);
    rc = tessera(NULL, "vad --json placed.wav");
    CHECK_RAN(rc, 0);
    cJSON *j = cJSON_Parse(out_text);
    CHECK(cJSON_GetArraySize(j) >= 1 && cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "start"), "--json: %s", out_text);
    cJSON_Delete(j);
}

static void test_bad_input(void) {
    write_str("text.wav", "this is not audio\n");
    CHECK_FAILS(tessera(NULL, "kws"), "no AUDIO");
    CHECK_FAILS(tessera(NULL, "kws alexa.wav --frobnicate"), "unknown flag '--frobnicate'");
    CHECK_FAILS(tessera(NULL, "kws alexa.wav --threshold 2"), "--threshold");
    CHECK_FAILS(tessera(NULL, "kws alexa.wav --keyword alexa,hey_siri"), "unknown keyword 'hey_siri'");
    CHECK(strstr(err_text, TS_KWS_KEYWORDS), "the known keywords are not listed: %s", err_text);
    CHECK_FAILS(tessera(NULL, "kws missing.wav --keyword alexa"), "missing.wav");
    CHECK_FAILS(tessera(NULL, "kws text.wav --keyword alexa"), "text.wav");
    CHECK_FAILS(tessera(NULL, "kws alexa.wav --models /nonexistent-speech"), "/nonexistent-speech/openwakeword/");
    CHECK_FAILS(tessera(NULL, "vad"), "no AUDIO");
    CHECK_FAILS(tessera(NULL, "vad missing.wav"), "missing.wav");
    CHECK_FAILS(tessera(NULL, "vad alexa.wav --threshold 0"), "--threshold");
    CHECK_FAILS(tessera(NULL, "vad alexa.wav --models /nonexistent-speech"), "/nonexistent-speech/silero/");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (access(SPEECH "/openwakeword/melspectrogram.onnx", R_OK) || access(SPEECH "/silero/silero_vad.onnx", R_OK))
        tu_skip("no models in %s (bash scripts/install-deps.sh fetches them)", SPEECH);
    if (system("espeak-ng --version >/dev/null 2>&1") != 0 || system("sox --version >/dev/null 2>&1") != 0)
        tu_skip("espeak-ng or sox is not installed");
    int rc = cli_setup("test_cli_kws");
    if (rc) return rc;
    for (size_t i = 0; i < sizeof CLIPS / sizeof *CLIPS; i++)
        if (!say(CLIPS[i][0], CLIPS[i][1])) tu_skip("espeak-ng failed");
    if (!say("sentence", "the quick brown fox jumps over the lazy dog")) tu_skip("espeak-ng failed");
    RUN(test_kws_detects);
    RUN(test_kws_json_stdin);
    RUN(test_vad_segments);
    RUN(test_bad_input);
    cli_cleanup("test_cli_kws");
    return tu_finish("cli_kws");
}
