/*
 * test_kws.c — the keyword spotter and the voice activity detector as a library (apps/speech/):
 *  - streaming: a 3 s synthetic clip (tones, a chirp, noise bursts, silence) fed in pieces of 1,
 *    333, 1280 and 16000 samples gives the same scores, frame for frame, as fed at once; the
 *    same for Silero VAD's probabilities (pieces of 1, 100, 512 and 16000);
 *  - ts_kws_reset: a second pass over the clip gives the first pass's scores;
 *  - labels: one per single-score head, the timer head's classes by the names in its model;
 *  - errors: an unknown keyword names the known ones, a missing models directory names the file;
 *  - ts_vad_segments on made-up probabilities: thresholds, minimum speech and silence, padding,
 *    a segment open at the end; bad arguments;
 *  - the thread counts chosen without num_threads (issue 41: OpenMP's fork and join made the tiny
 *    per-hop programs 1.6-3x slower than one thread): 1 for the mel model, one window of the
 *    embedding model, the heads, Silero VAD and the embedding classifier's head; OpenMP's default
 *    (0) for the embedding model's batch of 16 windows and the scratch CNN's batch of 32 clips of
 *    1.28 s, 1 again for clips of 240 ms; num_threads given is used for every program.
 * The model parts skip (77) without data/speech (bash scripts/install-deps.sh fetches it).
 */
#include "tessera_apps.h"
#include "test_util.h"

#include <math.h>
#include <unistd.h>

#ifndef TS_SOURCE_DIR
#define TS_SOURCE_DIR "."
#endif
#define OWW TS_SOURCE_DIR "/data/speech/openwakeword"
#define SILERO TS_SOURCE_DIR "/data/speech/silero/silero_vad.onnx"
#define CLIP (3 * 16000)

static float clip[CLIP];
static int have_models;

/* Tones, a chirp and bursts of noise between silences, deterministically. */
static void make_clip(void) {
    tu_rng r = tu_rng_seed(27);
    for (int i = 0; i < CLIP; i++) {
        double t = i / 16000.0, x = 0;
        if (t > 0.3 && t < 0.9) x = 0.3 * sin(2 * M_PI * 440 * t) + 0.2 * sin(2 * M_PI * 1250 * t);
        else if (t > 1.2 && t < 2.0) x = 0.4 * sin(2 * M_PI * (200 + 900 * (t - 1.2)) * t);
        else if (t > 2.2 && t < 2.7) x = 0.25 * tu_uniform(&r, -1, 1);
        clip[i] = (float)x;
    }
}

static const char *const KEYWORDS[] = {"alexa", "hey_mycroft", "weather", "timer"};

static ts_kws *new_kws(void) {
    ts_kws *k = ts_kws_new(&(ts_kws_opts){.struct_size = sizeof(ts_kws_opts), .models_dir = OWW, .keywords = KEYWORDS,
                                          .nkeywords = 4, .num_threads = 1});
    CHECK(k, "ts_kws_new: %s", ts_last_error());
    return k;
}

/* The clip fed in pieces of `piece` samples: every frame's scores into out (malloc'ed). */
static int64_t kws_scores(ts_kws *k, int piece, float **out) {
    int L = ts_kws_num_labels(k);
    int64_t total = 0;
    *out = malloc((size_t)(CLIP / TS_KWS_HOP + 1) * (size_t)L * sizeof(float));
    for (int i = 0; i < CLIP; i += piece) {
        const float *s;
        int64_t nf;
        CHECK_OK(ts_kws_feed(k, clip + i, i + piece <= CLIP ? piece : CLIP - i, &s, &nf));
        memcpy(*out + total * L, s, (size_t)(nf * L) * sizeof(float));
        total += nf;
    }
    return total;
}

static void test_kws_streaming(void) {
    if (!have_models) return tu_skip_part("no models in " OWW);
    ts_kws *k = new_kws();
    if (!k) return;
    int L = ts_kws_num_labels(k);
    ts_kws_reset(k);
    float *whole, *part;
    int64_t n = kws_scores(k, CLIP, &whole);
    CHECK(n == CLIP / TS_KWS_HOP, "%lld frames for %d samples", (long long)n, CLIP);
    static const int pieces[] = {1, 333, 1280, 16000};
    for (int p = 0; p < 4; p++) {
        ts_kws_reset(k);
        int64_t m = kws_scores(k, pieces[p], &part);
        CHECK(m == n, "pieces of %d: %lld frames, %lld at once", pieces[p], (long long)m, (long long)n);
        double worst = 0;
        for (int64_t i = 0; i < n * L && m == n; i++) worst = fmax(worst, fabs(part[i] - whole[i]));
        printf("  pieces of %5d: largest difference from the whole clip at once %.2g\n", pieces[p], worst);
        CHECK(worst <= 1e-5, "pieces of %d: scores differ by %g", pieces[p], worst);
        free(part);
    }
    for (int64_t i = 0; i < 5 * L; i++) CHECK(whole[i] == 0, "the first 5 frames score 0, frame %lld: %g", (long long)(i / L), whole[i]);
    for (int64_t i = 0; i < n * L; i++) CHECK(whole[i] >= 0 && whole[i] <= 1, "score %g", whole[i]);
    free(whole);
    ts_kws_free(k);
}

static void test_kws_labels(void) {
    if (!have_models) return tu_skip_part("no models in " OWW);
    ts_kws *k = new_kws();
    if (!k) return;
    CHECK(ts_kws_num_labels(k) == 3 + 6, "%d labels", ts_kws_num_labels(k));
    CHECK(!strcmp(ts_kws_label(k, 0), "alexa") && !strcmp(ts_kws_label(k, 2), "weather"), "%s %s", ts_kws_label(k, 0),
          ts_kws_label(k, 2));
    CHECK(!strcmp(ts_kws_label(k, 3), "1_minute_timer") && !strcmp(ts_kws_label(k, 8), "1_hour_timer"), "%s %s",
          ts_kws_label(k, 3), ts_kws_label(k, 8));
    CHECK(ts_kws_label(k, 9) == NULL && ts_kws_label(k, -1) == NULL, "labels out of range");
    ts_kws_free(k);
}

static void test_kws_errors(void) {
    if (!have_models) return tu_skip_part("no models in " OWW);
    const char *bad[] = {"alexa", "hey_siri"};
    ts_kws *k = ts_kws_new(&(ts_kws_opts){.struct_size = sizeof(ts_kws_opts), .models_dir = OWW, .keywords = bad,
                                          .nkeywords = 2});
    CHECK(!k, "an unknown keyword was taken");
    CHECK_ERRMSG("unknown keyword 'hey_siri'", "alexa,hey_jarvis");
    k = ts_kws_new(&(ts_kws_opts){.struct_size = sizeof(ts_kws_opts), .models_dir = "/nonexistent-speech"});
    CHECK(!k, "a missing directory was taken");
    CHECK_ERRMSG("/nonexistent-speech/melspectrogram.onnx");
    ts_kws_free(k);
}

/* ---------------------------------------------------------------- VAD */

static int64_t vad_probs(ts_vad *v, int piece, float *out) {
    int64_t total = 0, nc;
    const float *p;
    ts_vad_reset(v);
    for (int i = 0; i < CLIP; i += piece) {
        CHECK_OK(ts_vad_feed(v, clip + i, i + piece <= CLIP ? piece : CLIP - i, &p, &nc));
        memcpy(out + total, p, (size_t)nc * sizeof(float));
        total += nc;
    }
    CHECK_OK(ts_vad_finish(v, &p, &nc));
    memcpy(out + total, p, (size_t)nc * sizeof(float));
    return total + nc;
}

static void test_vad_streaming(void) {
    if (access(SILERO, R_OK)) return tu_skip_part("no " SILERO);
    ts_vad *v = ts_vad_new(&(ts_vad_opts){.struct_size = sizeof(ts_vad_opts), .model = SILERO, .num_threads = 1});
    CHECK(v, "ts_vad_new: %s", ts_last_error());
    if (!v) return;
    static float whole[CLIP / 512 + 2], part[CLIP / 512 + 2];
    int64_t n = vad_probs(v, CLIP, whole);
    CHECK(n == (CLIP + 511) / 512, "%lld chunks", (long long)n);
    static const int pieces[] = {1, 100, 512, 16000};
    for (int p = 0; p < 4; p++) {
        int64_t m = vad_probs(v, pieces[p], part);
        CHECK(m == n && !memcmp(part, whole, (size_t)n * sizeof(float)), "pieces of %d give other probabilities",
              pieces[p]);
    }
    for (int64_t i = 0; i < n; i++) CHECK(whole[i] >= 0 && whole[i] <= 1, "probability %g", whole[i]);
    CHECK(whole[2] < 0.1, "silence at 64 ms: probability %g", whole[2]);
    ts_vad_free(v);
    CHECK(!ts_vad_new(&(ts_vad_opts){.struct_size = sizeof(ts_vad_opts), .model = OWW "/alexa_v0.1.onnx"}),
          "a keyword head taken for Silero VAD");
    CHECK_ERRMSG("alexa_v0.1.onnx", "not Silero VAD");
}

/* Probabilities: p in chunks [a, b) of n, 0 elsewhere. */
static void fill(float *probs, int n, int a, int b, float p) {
    for (int i = 0; i < n; i++)
        if (i >= a && i < b) probs[i] = p;
}

static void test_threads(void) {
    if (!have_models) return tu_skip_part("no models in " OWW);
    int t[4];
    ts_kws *k = ts_kws_new(&(ts_kws_opts){.struct_size = sizeof(ts_kws_opts), .models_dir = OWW, .keywords = KEYWORDS,
                                          .nkeywords = 4});
    CHECK(k, "ts_kws_new: %s", ts_last_error());
    if (k) CHECK_OK(ts_kws_threads(k, t));
    if (k)
        CHECK(t[0] == 1 && t[1] == 1 && t[2] == 0 && t[3] == 1, "kws default: mel %d, one window %d, batch %d, heads %d",
              t[0], t[1], t[2], t[3]);
    ts_kws_free(k);
    k = ts_kws_new(&(ts_kws_opts){.struct_size = sizeof(ts_kws_opts), .models_dir = OWW, .keywords = KEYWORDS,
                                  .nkeywords = 4, .num_threads = 2});
    if (k) CHECK_OK(ts_kws_threads(k, t));
    if (k)
        CHECK(t[0] == 2 && t[1] == 2 && t[2] == 2 && t[3] == 2, "kws 2 threads: %d %d %d %d", t[0], t[1], t[2], t[3]);
    CHECK_STATUS(ts_kws_threads(k, NULL), TS_ERR_ARG);
    CHECK_STATUS(ts_kws_threads(NULL, t), TS_ERR_ARG);
    ts_kws_free(k);
    ts_vad *v = ts_vad_new(&(ts_vad_opts){.struct_size = sizeof(ts_vad_opts), .model = SILERO});
    CHECK(v && ts_vad_threads(v) == 1, "vad default: %d threads", ts_vad_threads(v));
    ts_vad_free(v);
    v = ts_vad_new(&(ts_vad_opts){.struct_size = sizeof(ts_vad_opts), .model = SILERO, .num_threads = 3});
    CHECK(v && ts_vad_threads(v) == 3, "vad 3 threads: %d", ts_vad_threads(v));
    ts_vad_free(v);
    CHECK(ts_vad_threads(NULL) == -1, "ts_vad_threads(NULL)");
    /* the classifiers' inference: the embedding head (32 x 192), the CNN at 1280 ms and 240 ms */
    static const char *const labels[] = {"yes", "no"};
    static const struct { ts_audio_clf_kind kind; int clip, want; } clf[] = {
        {TS_AUDIO_CLF_EMBEDDING, 0, 1}, {TS_AUDIO_CLF_SCRATCH, 0, 0}, {TS_AUDIO_CLF_SCRATCH, 3 * TS_KWS_HOP, 1}};
    for (int i = 0; i < 3; i++) {
        ts_audio_clf *c = ts_audio_clf_new(&(ts_audio_clf_opts){.struct_size = sizeof(ts_audio_clf_opts),
                                                                 .models_dir = OWW, .kind = clf[i].kind, .nlabels = 2,
                                                                 .labels = labels, .clip_samples = clf[i].clip});
        CHECK(c, "ts_audio_clf_new: %s", ts_last_error());
        if (c) CHECK_OK(ts_audio_clf_threads(c, t));
        if (c) CHECK(t[0] == 1 && t[1] == 1 && t[2] == 0 && t[3] == clf[i].want,
                     "classifier %d: front end %d %d %d, inference %d (want %d)", i, t[0], t[1], t[2], t[3],
                     clf[i].want);
        ts_audio_clf_free(c);
    }
}

static void test_vad_segments(void) {
    float probs[200] = {0};
    ts_vad_segment *s;
    /* one segment, chunks 10..40: starts at 5120, ends at 20480; padded by 480 each side */
    fill(probs, 200, 10, 40, 0.9f);
    int n = ts_vad_segments(probs, 200, 200 * 512, NULL, &s);
    CHECK(n == 1 && s[0].start == 5120 - 480 && s[0].end == 20480 + 480, "%d: %lld %lld", n,
          n ? (long long)s[0].start : 0, n ? (long long)s[0].end : 0);
    free(s);
    /* a dip of 2 chunks (64 ms < 100 ms) below neg_threshold does not split it; 0.4 (between the
     * thresholds) never ends it */
    fill(probs, 200, 20, 22, 0.1f);
    fill(probs, 200, 30, 36, 0.4f);
    n = ts_vad_segments(probs, 200, 200 * 512, NULL, &s);
    CHECK(n == 1 && s[0].end == 20480 + 480, "%d segments", n);
    free(s);
    /* a gap of 5 chunks (the silence counted from the first low chunk's start to the last's:
     * 128 ms >= 100 ms) splits it; the gap's padding: 30 ms each side */
    fill(probs, 200, 20, 25, 0.1f);
    n = ts_vad_segments(probs, 200, 200 * 512, NULL, &s);
    CHECK(n == 2 && s[0].end == 20 * 512 + 480 && s[1].start == 25 * 512 - 480, "%d segments", n);
    free(s);
    /* short speech (5 chunks = 160 ms < 250 ms) is dropped; speech open at the end runs to it */
    memset(probs, 0, sizeof probs);
    fill(probs, 200, 50, 55, 0.9f);
    fill(probs, 200, 180, 200, 0.9f);
    n = ts_vad_segments(probs, 200, 200 * 512 - 100, NULL, &s);
    CHECK(n == 1 && s[0].start == 180 * 512 - 480 && s[0].end == 200 * 512 - 100, "%d segments", n);
    free(s);
    /* a higher threshold finds nothing */
    n = ts_vad_segments(probs, 200, 200 * 512, &(ts_vad_params){.threshold = 0.95f}, &s);
    CHECK(n == 0 && !s, "%d segments at 0.95", n);
    CHECK(ts_vad_segments(probs, 200, 200 * 512, &(ts_vad_params){.threshold = 2}, &s) == -1, "threshold 2 taken");
    CHECK(ts_vad_segments(NULL, 3, 1536, NULL, &s) == -1, "no probabilities taken");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    make_clip();
    have_models = !access(OWW "/melspectrogram.onnx", R_OK);
    RUN(test_vad_segments);
    RUN(test_kws_streaming);
    RUN(test_kws_labels);
    RUN(test_kws_errors);
    RUN(test_vad_streaming);
    RUN(test_threads);
    return tu_finish("kws");
}
