/*
 * test_speech_parity.c — the speech models imported from ONNX against ONNX Runtime, on the
 * fixtures tools/make_speech_fixtures.js made with onnxruntime-node (tests/fixtures/speech/):
 * openWakeWord's melspectrogram (1.28 s of synthetic audio), embedding model (on the 7 windows of
 * 76 frames that ORT's mel gives, scaled as openWakeWord does), its six keyword heads (on rows of
 * ORT's embeddings), and Silero VAD, both files, run chunk by chunk (8 chunks of 512 samples + 64
 * of context, sr fixed to 16000 with ts_onnx_session_fix) with the state carried by
 * ts_onnx_session_bind. Each output within 1e-4 of ORT's: |a - b| <= 1e-4 * max(1, |b|) (absolute
 * below 1, relative above: the mel's log values reach ~100). The largest difference per model is
 * printed. Skipped (77) when data/speech/ is not installed (bash scripts/install-deps.sh).
 */
#include <math.h>
#include <stdio.h>

#include "tessera.h"
#include "test_util.h"

#define FIX TS_SOURCE_DIR "/tests/fixtures/speech/"
#define OWW TS_SOURCE_DIR "/data/speech/openwakeword/"
#define SILERO TS_SOURCE_DIR "/data/speech/silero/"
#define TOL 1e-4

static ts_tensor *fixture(const char *file, const char *name) {
    ts_safetensors *st = ts_safetensors_open(file);
    ts_tensor *t = NULL;
    CHECK(st != NULL, "%s", ts_last_error());
    if (st) CHECK_OK(ts_safetensors_get(st, name, &t));
    ts_safetensors_close(st);
    return t;
}

/* Compare n floats with the tolerance above; prints and returns the largest absolute difference. */
static double compare(const char *what, const float *got, const float *want, int64_t n) {
    double worst = 0, excess = 0;
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]), lim = TOL * fmax(1.0, fabs(want[i]));
        if (d > worst) worst = d;
        if (d - lim > excess) excess = d - lim, at = i;
    }
    printf("  %-28s max |diff| %.3g over %lld values\n", what, worst, (long long)n);
    CHECK(excess == 0, "%s: [%lld] %.7g vs ORT %.7g", what, (long long)at, got[at], want[at]);
    return worst;
}

/* One session run of a one-input model; output 0 (NULL on failure). */
static ts_tensor *run1(const char *model, const ts_tensor *in) {
    ts_onnx *m = ts_onnx_load(model);
    CHECK(m != NULL, "%s", ts_last_error());
    if (!m) return NULL;
    ts_onnx_session *s = ts_onnx_session_new(m, NULL);
    ts_tensor *out[2] = {0};
    ts_status st = ts_onnx_session_run(s, (const ts_tensor *const[]){in}, out);
    CHECK(st == TS_OK, "%s: %s", model, ts_last_error());
    ts_tensor_free(out[1]);
    ts_onnx_session_free(s);
    ts_onnx_free(m);
    return out[0];
}

static void test_mel_embedding_heads(void) {
    ts_tensor *samples = fixture(FIX "mel.safetensors", "samples"), *mel = fixture(FIX "mel.safetensors", "mel");
    ts_tensor *emb = fixture(FIX "embedding.safetensors", "emb");
    if (!samples || !mel || !emb) goto done;
    ts_tensor *got = run1(OWW "melspectrogram.onnx", samples);
    if (got) compare("melspectrogram", tu_f32(got), tu_f32(mel), ts_tensor_numel(mel));
    ts_tensor_free(got);

    int64_t F = ts_tensor_shape(mel)[2], W = (F - 76) / 8 + 1, ws[4] = {W, 76, 32, 1};
    ts_tensor *win = ts_tensor_new(TS_F32, 4, ws);
    for (int64_t w = 0; w < W; w++)
        for (int64_t i = 0; i < 76 * 32; i++) tu_f32(win)[w * 76 * 32 + i] = tu_f32(mel)[w * 8 * 32 + i] * 0.1f + 2;
    got = run1(OWW "embedding_model.onnx", win);
    if (got) compare("embedding_model", tu_f32(got), tu_f32(emb), ts_tensor_numel(emb));
    ts_tensor_free(got);
    ts_tensor_free(win);

    static const struct { const char *name; int T; } heads[] = {
        {"alexa_v0.1", 16}, {"hey_jarvis_v0.1", 16}, {"hey_mycroft_v0.1", 16},
        {"hey_rhasspy_v0.1", 16}, {"weather_v0.1", 22}, {"timer_v0.1", 34},
    };
    for (size_t h = 0; h < sizeof heads / sizeof *heads; h++) {
        int T = heads[h].T;
        ts_tensor *x = ts_tensor_new(TS_F32, 3, (int64_t[]){1, T, 96}), *want = fixture(FIX "heads.safetensors", heads[h].name);
        for (int i = 0; i < T; i++) memcpy(tu_f32(x) + i * 96, tu_f32(emb) + (i % W) * 96, 96 * sizeof(float));
        char path[512];
        snprintf(path, sizeof path, OWW "%s.onnx", heads[h].name);
        got = run1(path, x);
        if (got && want) compare(heads[h].name, tu_f32(got), tu_f32(want), ts_tensor_numel(want));
        ts_tensor_free(got);
        ts_tensor_free(want);
        ts_tensor_free(x);
    }
done:
    ts_tensor_free(samples);
    ts_tensor_free(mel);
    ts_tensor_free(emb);
}

/* Silero VAD file `name`: 8 chunks with the state bound from stateN to state. */
static void silero(const char *name) {
    char path[512], key[128];
    snprintf(path, sizeof path, SILERO "%s.onnx", name);
    ts_tensor *audio = fixture(FIX "silero.safetensors", "audio");
    snprintf(key, sizeof key, "%s.prob", name);
    ts_tensor *prob = fixture(FIX "silero.safetensors", key);
    snprintf(key, sizeof key, "%s.state", name);
    ts_tensor *state = fixture(FIX "silero.safetensors", key);
    ts_onnx *m = ts_onnx_load(path);
    CHECK(m != NULL, "%s", ts_last_error());
    if (!audio || !prob || !state || !m) goto done;
    ts_onnx_session *s = ts_onnx_session_new(m, NULL);
    int64_t sr = 16000;
    ts_tensor *srt = ts_tensor_from(TS_I64, 0, NULL, &sr), *x = ts_tensor_new(TS_F32, 2, (int64_t[]){1, 576});
    CHECK_OK(ts_onnx_session_fix(s, "sr", srt));
    CHECK_OK(ts_onnx_session_bind(s, "stateN", "state"));
    float got[8] = {0};
    ts_tensor *out[2] = {0};
    for (int k = 0; k < 8; k++) {
        for (int i = 0; i < 576; i++) {
            int j = k * 512 + i - 64;
            tu_f32(x)[i] = j >= 0 ? tu_f32(audio)[j] : 0;
        }
        ts_tensor_free(out[0]), ts_tensor_free(out[1]);
        out[0] = out[1] = NULL;
        ts_status st = ts_onnx_session_run(s, (const ts_tensor *const[]){x, NULL, NULL}, out);
        CHECK(st == TS_OK, "%s chunk %d: %s", name, k, ts_last_error());
        if (st) break;
        got[k] = tu_f32(out[0])[0];
    }
    snprintf(key, sizeof key, "%s (8 chunks)", name);
    compare(key, got, tu_f32(prob), 8);
    snprintf(key, sizeof key, "%s state", name);
    if (out[1]) compare(key, tu_f32(out[1]), tu_f32(state), ts_tensor_numel(state));
    ts_tensor_free(out[0]);
    ts_tensor_free(out[1]);
    ts_tensor_free(srt);
    ts_tensor_free(x);
    ts_onnx_session_free(s);
done:
    ts_onnx_free(m);
    ts_tensor_free(audio);
    ts_tensor_free(prob);
    ts_tensor_free(state);
}

static void test_silero(void) {
    silero("silero_vad");
    silero("silero_vad_16k_op15");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    FILE *f = fopen(SILERO "silero_vad.onnx", "rb");
    FILE *g = fopen(OWW "melspectrogram.onnx", "rb");
    if (f) fclose(f);
    if (g) fclose(g);
    if (!f || !g) tu_skip("data/speech/ is not installed (bash scripts/install-deps.sh fetches the speech models)");
    RUN(test_mel_embedding_heads);
    RUN(test_silero);
    return tu_finish("test_speech_parity");
}
