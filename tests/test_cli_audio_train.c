/*
 * test_cli_audio_train.c — `tessera audio-train` (cli/audio_train.c, apps/speech/audio_clf*.c) and
 * what reads its model directory, end to end on a tiny set spoken at test time by espeak-ng
 * ("yes" and "no", 4 clips each: voices and speeds):
 *  - --from embedding trains, writes config.json and model.safetensors, the same bytes again for
 *    the same seed; `tessera eval` reads it (accuracy on its own clips, per-label lines);
 *  - --scratch from a TSV of relative paths trains and evaluates too;
 *  - `tessera export` writes each model as ONNX, and ONNX Runtime (tools/ort_run.js) on small
 *    random features gives logits whose softmax is within 1e-4 of ts_audio_clf_predict's
 *    probabilities (the logits close enough that the probabilities are not saturated);
 *  - `tessera kws --model DIR` runs the classifier over a clip;
 *  - clips longer than --clip-ms: one warning line on stderr with their count and the longest
 *    (the lengths read here with ts_audio_read); none when every clip fits;
 *  - bad input exits 2 naming it: an empty folder, an empty label folder beside full ones, one
 *    label only, an unreadable clip, no --out.
 * Skipped (77) without the models in data/speech or without espeak-ng.
 */
#include "tessera_apps.h"
#include "test_util.h"

#include "ort_util.h"

#include "cli_util.h"

#include <math.h>
#include <sys/stat.h>

#ifndef TS_SOURCE_DIR
#define TS_SOURCE_DIR "."
#endif
#define SPEECH TS_SOURCE_DIR "/data/speech"
#define ORT_RUN TS_SOURCE_DIR "/tools/ort_run.js"

static const char *path_in(const char *name) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

/* espeak-ng says `text` with voice and speed into dir/rel. */
static int say(const char *rel, const char *voice, int speed, const char *text) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "espeak-ng -v %s -s %d -w '%s/%s' '%s' 2>/dev/null", voice, speed, dir, rel, text);
    return system(cmd) == 0;
}

static const char *VOICES[] = {"en", "en-us", "en+f3", "en-gb-scotland"};

static int make_set(void) {
    const char *words[] = {"yes", "no"};
    mkdir(path_in("set"), 0755);
    for (int w = 0; w < 2; w++) {
        char sub[64], rel[128];
        snprintf(sub, sizeof sub, "set/%s", words[w]);
        mkdir(path_in(sub), 0755);
        for (int v = 0; v < 4; v++) {
            snprintf(rel, sizeof rel, "%s/%d.wav", sub, v);
            if (!say(rel, VOICES[v], 140 + 20 * v, words[w])) return 0;
        }
    }
    /* the same clips as a TSV, paths relative to it */
    char tsv[2048];
    size_t n = (size_t)snprintf(tsv, sizeof tsv, "path\tlabel\n");
    for (int w = 0; w < 2; w++)
        for (int v = 0; v < 4; v++) n += (size_t)snprintf(tsv + n, sizeof tsv - n, "set/%s/%d.wav\t%s\n", words[w], v, words[w]);
    write_str("set.tsv", tsv);
    return 1;
}

static void test_embedding(void) {
    CHECK_RAN(tessera(NULL, "audio-train --data set --out head --epochs 40 --seed 3"), 0);
    CHECK(exists("head/config.json") && exists("head/model.safetensors"), "no model directory: %s", out_text);
    CHECK(strstr(out_text, "8 clips of 2 labels"), "summary: %s", out_text);
    CHECK(!strstr(err_text, "warning"), "a warning with clips that fit 1280 ms: %s", err_text);
    CHECK_RAN(tessera(NULL, "audio-train --data set --out head2 --epochs 40 --seed 3"), 0);
    CHECK(same_bytes("head/model.safetensors", "head2/model.safetensors"), "the same seed gave other weights");
    CHECK_RAN(tessera(NULL, "eval --model head --data set"), 0);
    double acc = printed_number("accuracy ");
    CHECK(acc >= 75, "accuracy on its own clips %.2f%%:\n%s", acc, out_text);
    CHECK(strstr(out_text, "\nyes ") && strstr(out_text, "\nno "), "per-label lines:\n%s", out_text);
    CHECK_RAN(tessera(NULL, "kws --model head set/yes/0.wav --threshold 0.5"), 0);
}

static void test_scratch_tsv(void) {
    CHECK_RAN(tessera(NULL, "audio-train --data set.tsv --out cnn --scratch --epochs 3"), 0);
    CHECK(strstr(out_text, "scratch CNN"), "summary: %s", out_text);
    CHECK_RAN(tessera(NULL, "eval --model cnn --data set.tsv"), 0);
    CHECK(printed_number("accuracy ") >= 0, "eval: %s", out_text);
}

/* Export model `m`, run ORT on random input `input` [shape], compare softmax(logits) with
 * ts_audio_clf_predict. */
static void check_export(const char *m, const char *input) {
    char onnx[64], in[64], out[64];
    snprintf(onnx, sizeof onnx, "%s.onnx", m), snprintf(in, sizeof in, "%s_in.safetensors", m);
    snprintf(out, sizeof out, "%s_ort.safetensors", m);
    CHECK_RAN(tessera(NULL, "export --model %s --out %s", m, onnx), 0);
    ts_audio_clf *c = ts_audio_clf_load(path_in(m), SPEECH "/openwakeword", 1);
    CHECK(c != NULL, "load %s: %s", m, ts_last_error());
    if (!c) return;
    int64_t F = ts_audio_clf_feature_size(c), shape[4] = {1, F, 0, 0};
    int nd = 2;
    if (!strcmp(input, "mel")) shape[1] = 1, shape[2] = F / 32, shape[3] = 32, nd = 4;
    ts_tensor *x = ts_tensor_new(TS_F32, nd, shape);
    float *xd = ts_tensor_data(x), p[2];
    uint32_t s = 12345;
    for (int64_t i = 0; i < F; i++) s = s * 1664525u + 1013904223u, xd[i] = (float)(s >> 8) / 16777216.0f * 0.1f;
    CHECK_OK(ts_safetensors_save(path_in(in), 1, (const char *[]){input}, (const ts_tensor *[]){x}, NULL));
    CHECK_OK(ts_audio_clf_predict(c, 1, xd, p));
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' '%s' >'%s/ort.log' 2>&1", ORT_RUN, path_in(onnx), path_in(in),
             path_in(out), dir);
    int rc = system(cmd);
    char log[4096];
    read_into("ort.log", log, sizeof log);
    CHECK(rc == 0, "ort_run.js on %s: %s", onnx, log);
    ts_safetensors *st = rc == 0 ? ts_safetensors_open(path_in(out)) : NULL;
    ts_tensor *lg = NULL;
    if (st) CHECK_OK(ts_safetensors_get(st, "logits", &lg));
    if (lg) {
        const float *l = ts_tensor_data(lg);
        float mx = l[0] > l[1] ? l[0] : l[1], e0 = expf(l[0] - mx), e1 = expf(l[1] - mx);
        double d = fmax(fabs(e0 / (e0 + e1) - p[0]), fabs(e1 / (e0 + e1) - p[1]));
        CHECK(d <= 1e-4, "%s: ORT's probabilities differ by %g", m, d);
        CHECK(fabsf(l[0] - l[1]) < 10, "%s: logits %g, %g too far apart to compare probabilities", m, l[0], l[1]);
        printf("    %s: ONNX Runtime within %.3g of tessera (probabilities %.4f, %.4f)\n", m, d, p[0], p[1]);
    }
    ts_tensor_free(lg);
    ts_safetensors_close(st);
    ts_tensor_free(x);
    ts_audio_clf_free(c);
}

static void test_export(void) {
    if (!tu_ort_available()) {
        printf("    export: ONNX Runtime not installed, the comparison skipped\n");
        CHECK_RAN(tessera(NULL, "export --model head --out head.onnx"), 0);
        return;
    }
    check_export("head", "features");
    check_export("cnn", "mel");
}

static void test_cut_warning(void) {
    /* the clips' lengths, read as the training reads them */
    int64_t longest = 0;
    int over = 0;
    for (int w = 0; w < 2; w++)
        for (int v = 0; v < 4; v++) {
            char rel[64];
            snprintf(rel, sizeof rel, "set/%s/%d.wav", w ? "no" : "yes", v);
            ts_audio *a = ts_audio_read(path_in(rel), 16000);
            CHECK(a != NULL, "%s: %s", rel, ts_last_error());
            if (!a) return;
            over += a->n > 320 * 16;
            longest = a->n > longest ? a->n : longest;
            ts_audio_free(a);
        }
    CHECK(over == 8, "%d of the 8 clips are longer than 320 ms: the case wants all", over);
    CHECK_RAN(tessera(NULL, "audio-train --data set --out short --clip-ms 320 --epochs 1"), 0);
    char want[160];
    snprintf(want, sizeof want,
             "tessera audio-train: warning: %d clips longer than --clip-ms 320 were cut (longest %lld ms)\n", over,
             (long long)((longest + 15) / 16));
    CHECK(strstr(err_text, want) && !strchr(strchr(err_text, '\n') + 1, '\n'), "want one line \"%s\" on stderr:\n%s",
          want, err_text);
}

static void test_bad_input(void) {
    mkdir(path_in("empty"), 0755);
    CHECK_FAILS(tessera(NULL, "audio-train --data empty --out x"), "no audio clips");
    mkdir(path_in("one"), 0755);
    mkdir(path_in("one/yes"), 0755);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp '%s/set/yes/0.wav' '%s/one/yes/'", dir, dir);
    CHECK(system(cmd) == 0, "cp");
    CHECK_FAILS(tessera(NULL, "audio-train --data one --out x"), "one label only");
    /* an empty label folder beside two full ones: refused, not trained without it */
    snprintf(cmd, sizeof cmd, "cp -r '%s/set' '%s/holey' && mkdir '%s/holey/maybe'", dir, dir, dir);
    CHECK(system(cmd) == 0, "cp -r");
    int rc = tessera(NULL, "audio-train --data holey --out holey_model");
    CHECK(rc == 2 && strstr(err_text, "holey/maybe") && strstr(err_text, "empty label folder"),
          "exit %d, want 2 naming holey/maybe\nstderr: %s", rc, err_text);
    CHECK(!exists("holey_model/config.json"), "a model was written without the empty label");
    write_str("bad.tsv", "set/yes/0.wav\tyes\nnot-audio.wav\tno\n");
    write_str("not-audio.wav", "this is not audio\n");
    CHECK_FAILS(tessera(NULL, "audio-train --data bad.tsv --out x"), "not-audio.wav");
    write_str("short.tsv", "set/yes/0.wav\n");
    CHECK_FAILS(tessera(NULL, "audio-train --data short.tsv --out x"), "short.tsv:1");
    CHECK_FAILS(tessera(NULL, "audio-train --data set"), "--out");
    CHECK_FAILS(tessera(NULL, "audio-train --data set --out x --from nothing"), "--from");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (access(SPEECH "/openwakeword/melspectrogram.onnx", R_OK))
        tu_skip("no models in %s (bash scripts/install-deps.sh fetches them)", SPEECH);
    if (system("espeak-ng --version >/dev/null 2>&1") != 0) tu_skip("espeak-ng is not installed");
    int rc = cli_setup("test_cli_audio_train");
    if (rc) return rc;
    if (!make_set()) tu_skip("espeak-ng failed");
    RUN(test_embedding);
    RUN(test_scratch_tsv);
    RUN(test_export);
    RUN(test_cut_warning);
    RUN(test_bad_input);
    cli_cleanup("test_cli_audio_train");
    return tu_finish("cli_audio_train");
}
