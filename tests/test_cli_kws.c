/*
 * test_cli_kws.c — `tessera kws` and `tessera vad` (cli/kws.c, cli/vad.c, apps/speech/) end to
 * end on clips spoken at test time by espeak-ng:
 *  - kws: "hey jarvis" and "alexa" are detected (once each, by the right keyword, at a time
 *    inside the clip), the digits "seven" and "three" are not; --scores prints a peak per file
 *    and keyword; --json parses (cJSON) with the same detections; "-" reads raw s16 from
 *    standard input and finds "alexa" there too;
 *  - kws on a 16 kHz 16-bit WAV and on its samples piped raw to "-" prints the same lines (times,
 *    scores, peaks) but for the file's name: both padded with 1 s of silence, on one 80 ms grid;
 *  - --refractory: "alexa", 2 s of silence, "alexa" fires twice with 0 and with the default
 *    (1.25 s), once with 10 s; a negative value or one above an hour exits 2 naming the flag;
 *  - vad: a sentence placed with 1 s of silence before it and 1.5 s after is found as speech
 *    starting and ending within 100 ms of where it was placed (its first and last samples above
 *    1% of full scale); --json parses;
 *  - bad input exits 2 naming what is wrong: no AUDIO, an unknown flag, --threshold 2, an
 *    unknown keyword (the known ones listed), a missing file, a text file, a models directory
 *    without the models (--model-store; vad also by the old spelling --models, with its notice).
 *  - with <build>/spoken_digits complete (tools/make_spoken_digits.sh, made by test_spoken_digits
 *    or tools/kws_acceptance.sh; not made here: it takes minutes), also its clips: of its first 8
 *    "hey jarvis" clips at least 7 detected, of its 6 "alexa" clips at least 3 (measured: 8 and 3:
 *    three espeak voices' "alexa" score low; flite-awb's fired twice, 0.72 s apart, before the
 *    refractory period), no clip more than once (the default refractory period), none of 20 held-out digits
 *    detected, and each of its 6 VAD clips (0.5-2 s of silence around a sentence) found starting
 *    within 100 ms of the speech's extent in segments.tsv and ending within 110 ms (measured:
 *    starts 2-34 ms off, ends 51-104 ms late, Silero's 30 ms of padding included). Without it that case says so and passes.
 * Skipped (77) without the models in data/speech or without espeak-ng.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include "cli_util.h"

#include <cjson/cJSON.h>
#include <glob.h>
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

/* Each line of text with its first field (up to a tab) dropped, into out[cap]. */
static void drop_first_field(const char *text, char *out, size_t cap) {
    size_t n = 0;
    for (const char *l = text; *l && n + 1 < cap;) {
        const char *tab = strchr(l, '\t'), *e = strchr(l, '\n');
        if (!e) e = l + strlen(l);
        const char *from = tab && tab < e ? tab + 1 : l;
        n += (size_t)snprintf(out + n, cap - n, "%.*s\n", (int)(e - from), from);
        l = *e ? e + 1 : e;
    }
    out[n < cap ? n : cap - 1] = 0;
}

static void test_kws_file_and_pipe(void) {
    static char from_file[1 << 14], from_pipe[1 << 14];
    char cmd[8192];
    /* a 16 kHz 16-bit mono WAV (nothing resampled) and its samples raw */
    snprintf(cmd, sizeof cmd, "cd '%s' && sox alexa.wav jarvis.wav -r 16000 -c 1 -b 16 -e signed both.wav && "
             "sox both.wav -t raw both.raw", dir);
    CHECK(system(cmd) == 0, "sox: %s", cmd);
    int rc = tessera(NULL, "kws both.wav --keyword alexa,hey_jarvis --threshold 0.2 --scores --refractory 0");
    CHECK_RAN(rc, 0);
    CHECK(lines_with("both.wav\t", "\talexa\t") >= 2, "no detection in both.wav to compare:\n%s", out_text);
    drop_first_field(out_text, from_file, sizeof from_file);
    snprintf(cmd, sizeof cmd, "cd '%s' && cat both.raw | '%s' kws - --keyword alexa,hey_jarvis --threshold 0.2 "
             "--scores --refractory 0 >stdout.txt 2>stderr.txt", dir, cli);
    rc = system(cmd);
    read_into("stdout.txt", out_text, sizeof out_text);
    read_into("stderr.txt", err_text, sizeof err_text);
    CHECK(rc == 0, "cat both.raw | tessera kws -: %d\n%s", rc, err_text);
    drop_first_field(out_text, from_pipe, sizeof from_pipe);
    CHECK(!strcmp(from_file, from_pipe), "the file and the pipe differ:\nfile:\n%s\npipe:\n%s", from_file, from_pipe);
}

static void test_kws_refractory(void) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && sox alexa.wav twice.wav pad 0 2 repeat 1", dir);
    CHECK(system(cmd) == 0, "sox: %s", cmd);
    CHECK_RAN(tessera(NULL, "kws twice.wav --keyword alexa --refractory 0"), 0);
    CHECK(lines_with("twice.wav\t", "\talexa\t") == 2, "--refractory 0, two words 2 s apart:\n%s", out_text);
    CHECK_RAN(tessera(NULL, "kws twice.wav --keyword alexa"), 0);
    CHECK(lines_with("twice.wav\t", "\talexa\t") == 2, "default refractory, two words 2 s apart:\n%s", out_text);
    CHECK_RAN(tessera(NULL, "kws twice.wav --keyword alexa --refractory 10"), 0);
    CHECK(lines_with("twice.wav\t", "\talexa\t") == 1, "--refractory 10, two words 2 s apart:\n%s", out_text);
    CHECK_FAILS(tessera(NULL, "kws twice.wav --keyword alexa --refractory -1"), "--refractory");
    CHECK_FAILS(tessera(NULL, "kws twice.wav --keyword alexa --refractory 4000"), "--refractory");
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

#define SD TS_SOURCE_DIR "/data/speech/spoken_digits" /* made by scripts/install-deps.sh */

/* The most detection lines (not "peak" lines) of out_text that one file has. */
static int most_lines_per_file(void) {
    int most = 0, run = 0;
    char last[1024] = "", file[1024];
    for (const char *l = out_text; *l;) {
        const char *e = strchr(l, '\n'), *tab = strchr(l, '\t');
        if (!e) e = l + strlen(l);
        if (tab && tab < e && strncmp(tab, "\tpeak\t", 6)) {
            snprintf(file, sizeof file, "%.*s", (int)(tab - l), l);
            run = strcmp(file, last) ? 1 : run + 1;
            snprintf(last, sizeof last, "%s", file);
            most = run > most ? run : most;
        }
        l = *e ? e + 1 : e;
    }
    return most;
}

/* Append up to max paths matching pattern under SD (absolute) to args; returns how many. */
static int add_clips(char *args, size_t cap, const char *pattern, int max) {
    char pat[PATH_MAX + 256], abs_sd[PATH_MAX];
    if (!realpath(SD, abs_sd)) return 0;
    snprintf(pat, sizeof pat, "%s/%s", abs_sd, pattern);
    glob_t g;
    int n = 0;
    if (glob(pat, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc && n < max; i++, n++)
            snprintf(args + strlen(args), cap - strlen(args), " '%s'", g.gl_pathv[i]);
        globfree(&g);
    }
    return n;
}

static void test_spoken_digits_clips(void) {
    if (access(SD "/.complete", R_OK)) {
        tu_skip_part("no complete " SD " (bash scripts/install-deps.sh makes it): its clips not used");
        return;
    }
    static char args[32768], cmd[40000];
    args[0] = 0;
    int nj = add_clips(args, sizeof args, "keywords/hey_jarvis/*.wav", 8);
    int na = add_clips(args, sizeof args, "keywords/alexa/*.wav", 6);
    int nd = add_clips(args, sizeof args, "digits/heldout/*/*.wav", 20);
    snprintf(cmd, sizeof cmd, "'%s' kws --keyword hey_jarvis,alexa %s >'%s/stdout.txt' 2>'%s/stderr.txt'", cli, args, dir,
             dir);
    int rc = system(cmd);
    read_into("stdout.txt", out_text, sizeof out_text);
    read_into("stderr.txt", err_text, sizeof err_text);
    CHECK(rc == 0, "tessera kws on the spoken_digits clips: %d\n%s", rc, err_text);
    int fj = lines_with("/keywords/hey_jarvis/", "\they_jarvis\t"), fa = lines_with("/keywords/alexa/", "\talexa\t");
    printf("  spoken_digits: hey_jarvis %d of %d, alexa %d of %d, %d detections on %d digits\n", fj, nj, fa, na,
           lines_with("/digits/", ""), nd);
    /* one detection a clip at most (each says its word once): so lines count clips */
    CHECK(most_lines_per_file() <= 1, "a clip fired more than once:\n%s", out_text);
    CHECK(nj == 8 && fj >= 7 && na == 6 && fa >= 3, "detections:\n%s", out_text);
    CHECK(nd == 20 && lines_with("/digits/", "") == 0, "digits detected:\n%s", out_text);
    /* VAD: each clip's first start and last end against segments.tsv */
    FILE *f = fopen(SD "/vad/segments.tsv", "r");
    char line[512], name[256];
    double want_s, want_e;
    int nclips = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%255s %lf %lf", name, &want_s, &want_e) == 3) {
            char abs_sd[PATH_MAX];
            if (!realpath(SD, abs_sd)) break;
            CHECK_RAN(tessera(NULL, "vad '%s/vad/%s'", abs_sd, name), 0);
            double s0 = -1, e0 = -1, a, b;
            for (const char *l = out_text; (l = strchr(l, '\t')); l++)
                if (sscanf(l, "\t%lf\t%lf", &a, &b) == 2) {
                    if (s0 < 0) s0 = a;
                    e0 = b;
                    l = strchr(l + 1, '\t');
                    if (!l) break;
                }
            printf("  %s: speech %.3f-%.3f s, found %.3f-%.3f s\n", name, want_s, want_e, s0, e0);
            /* ends come 100-104 ms late on 4 of the 6 clips: Silero's 30 ms of padding after the
             * first chunk below neg_threshold, which the LSTM reaches 2 chunks after the speech */
            CHECK(fabs(s0 - want_s) <= 0.1 && fabs(e0 - want_e) <= 0.11, "%s:\n%s", name, out_text);
            nclips++;
        }
    if (f) fclose(f);
    CHECK(nclips == 6, "%d VAD clips in " SD "/vad/segments.tsv", nclips);
}

static void test_bad_input(void) {
    write_str("text.wav", "this is not audio\n");
    CHECK_FAILS(tessera(NULL, "kws"), "AUDIO... is required");
    CHECK_FAILS(tessera(NULL, "kws alexa.wav --frobnicate"), "unknown flag '--frobnicate'");
    CHECK_FAILS(tessera(NULL, "kws alexa.wav --threshold 2"), "--threshold");
    CHECK_FAILS(tessera(NULL, "kws alexa.wav --keyword alexa,hey_siri"), "unknown keyword 'hey_siri'");
    CHECK(strstr(err_text, TS_KWS_KEYWORDS), "the known keywords are not listed: %s", err_text);
    CHECK(!strncmp(err_text, "tessera kws: unknown keyword", 28), "one prefix, the command's: %s", err_text);
    CHECK_FAILS(tessera(NULL, "kws alexa.wav --keyword alexa,,timer"), "tessera kws: --keyword: keyword_list");
    CHECK_FAILS(tessera(NULL, "kws missing.wav --keyword alexa"), "missing.wav");
    CHECK_FAILS(tessera(NULL, "kws text.wav --keyword alexa"), "text.wav");
    CHECK_FAILS(tessera(NULL, "kws alexa.wav --model-store /nonexistent-speech"), "/nonexistent-speech/openwakeword/");
    CHECK_FAILS(tessera(NULL, "vad"), "AUDIO... is required");
    CHECK_FAILS(tessera(NULL, "vad missing.wav"), "missing.wav");
    CHECK_FAILS(tessera(NULL, "vad alexa.wav --threshold 0"), "--threshold");
    CHECK_FAILS(tessera(NULL, "vad alexa.wav --model-store /nonexistent-speech"), "/nonexistent-speech/silero/");
    /* the old spelling of --model-store, accepted for one release with a notice */
    CHECK_FAILS(tessera(NULL, "vad alexa.wav --models /nonexistent-speech"), "/nonexistent-speech/silero/");
    CHECK(strstr(err_text, "--models is now --model-store"), "no notice for --models: %s", err_text);
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
    RUN(test_kws_file_and_pipe);
    RUN(test_kws_refractory);
    RUN(test_vad_segments);
    RUN(test_spoken_digits_clips);
    RUN(test_bad_input);
    cli_cleanup("test_cli_kws");
    return tu_finish("cli_kws");
}
