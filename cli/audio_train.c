/*
 * audio_train.c — `tessera audio-train`: a classifier of short clips trained on labelled audio,
 * on openWakeWord's frozen pretrained front end (--from embedding) or as a small CNN on its
 * log-mel frames from random weights (--scratch), written as a model directory (ts_audio_clf_*).
 *
 *   tessera audio-train --data DIR_OR_TSV --out DIR [--from embedding | --scratch] [--epochs N]
 *                       [--lr F] [--batch N] [--seed N] [--clip-ms MS] [--models DIR] [--threads N]
 */
#include <time.h>

#include "audio_data.h"
#include "cli.h"
#include "speech_io.h"

#define CMD "audio-train"

static const char *USAGE =
    "usage: tessera audio-train --data DIR_OR_TSV --out DIR [--from embedding | --scratch] [options]\n"
    "  Trains a classifier of short clips on labelled audio: DIR_OR_TSV is a folder holding one\n"
    "  folder per label (its clips inside), or a TSV of PATH<TAB>LABEL lines (paths relative to the\n"
    "  TSV's folder). Each clip is read at 16 kHz and cut, or padded with silence at its end, to\n"
    "  the clip length. Writes DIR: config.json and model.safetensors, which `tessera eval --model\n"
    "  DIR`, `tessera kws --model DIR` and `tessera export --model DIR --onnx F` read.\n"
    "  --from embedding  (default) openWakeWord's frozen front end (melspectrogram + embedding\n"
    "                    model): the clip's 96-d embeddings every 80 ms pooled (mean and max, 192\n"
    "                    features), computed once per clip; a head 192 -> 64 -> ReLU -> labels\n"
    "  --scratch         a small CNN (3 convolutions, 16/32/32 channels) on the same log-mel\n"
    "                    frames, from random weights: the comparison without pretraining\n"
    "  --epochs N        passes over the clips (default 60 with --from embedding, 20 --scratch)\n"
    "  --lr F            AdamW's learning rate, cosine-decayed to 0 (default 0.002)\n"
    "  --batch N         clips a step (default 32)\n"
    "  --seed N          initial weights and shuffling (default 1): the same seed, data and\n"
    "                    threads give the same model\n"
    "  --clip-ms MS      clip length in ms, a multiple of 80 (default 1280)\n"
    "  --models DIR      the speech models directory holding openwakeword/ (as tessera kws)\n"
    "  --threads N       worker threads (default: OpenMP's)\n"
    "Exit codes: 0 written, 1 failed while training, 2 bad flags or data (an empty folder, one\n"
    "label only, an unreadable clip: named).\n";

typedef struct at_opts {
    const char *data, *out, *models;
    int scratch, epochs, batch, seed, clip_ms, threads;
    float lr;
} at_opts;

/* Parse argv into o: 0 to go on, else the exit code (after printing). */
static int parse(int argc, char **argv, at_opts *o) {
    int bad = 0;
    const char *v;
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return fputs(USAGE, stdout), -1;
        if (!strcmp(a, "--scratch")) o->scratch = 1;
        else if ((v = cli_value(argc, argv, &i, "--from", CMD, &bad))) {
            if (strcmp(v, "embedding"))
                bad = fprintf(stderr, "tessera %s: --from takes 'embedding' (or --scratch), not '%s'\n", CMD, v) > 0;
        } else if ((v = cli_value(argc, argv, &i, "--data", CMD, &bad))) o->data = v;
        else if ((v = cli_value(argc, argv, &i, "--out", CMD, &bad))) o->out = v;
        else if ((v = cli_value(argc, argv, &i, "--models", CMD, &bad))) o->models = v;
        else if ((v = cli_value(argc, argv, &i, "--epochs", CMD, &bad))) bad = (o->epochs = cli_positive(v, a, CMD)) < 0;
        else if ((v = cli_value(argc, argv, &i, "--batch", CMD, &bad))) bad = (o->batch = cli_positive(v, a, CMD)) < 0;
        else if ((v = cli_value(argc, argv, &i, "--seed", CMD, &bad))) bad = (o->seed = cli_positive(v, a, CMD)) < 0;
        else if ((v = cli_value(argc, argv, &i, "--threads", CMD, &bad))) bad = (o->threads = cli_positive(v, a, CMD)) < 0;
        else if ((v = cli_value(argc, argv, &i, "--clip-ms", CMD, &bad))) {
            if ((o->clip_ms = cli_positive(v, a, CMD)) < 0 || o->clip_ms % 80)
                bad = fprintf(stderr, "tessera %s: --clip-ms wants a positive multiple of 80, not '%s'\n", CMD, v) > 0;
        } else if ((v = cli_value(argc, argv, &i, "--lr", CMD, &bad))) {
            char *end;
            o->lr = strtof(v, &end);
            if (end == v || *end || !(o->lr > 0 && o->lr < 1))
                bad = fprintf(stderr, "tessera %s: --lr wants a number in (0, 1), not '%s'\n", CMD, v) > 0;
        } else if (!bad) bad = fprintf(stderr, "tessera %s: unknown argument '%s'\n%s", CMD, a, USAGE) > 0;
    }
    if (!bad && (!o->data || !o->out))
        bad = fprintf(stderr, "tessera %s: %s is required\n%s", CMD, !o->data ? "--data" : "--out", USAGE) > 0;
    return bad ? 2 : 0;
}

/* Share of the clips whose most probable label is theirs. */
static double accuracy(ts_audio_clf *c, const cli_audio_set *s, const float *feat) {
    int L = s->nlabels, hit = 0;
    float *p = malloc((size_t)s->n * (size_t)L * sizeof(float));
    if (!p || ts_audio_clf_predict(c, s->n, feat, p)) {
        free(p);
        return -1;
    }
    for (int i = 0; i < s->n; i++) {
        int best = 0;
        for (int j = 1; j < L; j++) best = p[i * L + j] > p[i * L + best] ? j : best;
        hit += best == s->label[i];
    }
    free(p);
    return (double)hit / s->n;
}

static int train(const at_opts *o, const cli_audio_set *s) {
    char dir_buf[4096], path[4200];
    snprintf(path, sizeof path, "%s/openwakeword", o->models ? o->models : cli_speech_dir(dir_buf, sizeof dir_buf));
    ts_audio_clf_opts co = {.struct_size = sizeof co, .models_dir = path,
                            .kind = o->scratch ? TS_AUDIO_CLF_SCRATCH : TS_AUDIO_CLF_EMBEDDING,
                            .nlabels = s->nlabels, .labels = (const char *const *)s->labels,
                            .clip_samples = o->clip_ms * 16, .seed = (uint64_t)o->seed, .num_threads = o->threads};
    ts_audio_clf *c = ts_audio_clf_new(&co);
    if (!c) return cli_fail(CMD, "", 2);
    int rc = 0;
    double t0 = ts_seconds(), loss = 0;
    float *feat = cli_audio_features(CMD, c, s, &rc);
    double t1 = ts_seconds();
    ts_audio_clf_train_opts to = {.struct_size = sizeof to, .epochs = o->epochs, .lr = o->lr, .batch = o->batch,
                                  .seed = (uint64_t)o->seed};
    if (feat && ts_audio_clf_train(c, s->n, feat, s->label, &to, &loss)) rc = cli_fail(CMD, "training: ", 1);
    double t2 = ts_seconds();
    if (feat && !rc && ts_audio_clf_save(c, o->out)) rc = cli_fail(CMD, "", 1);
    if (feat && !rc)
        printf("tessera %s: %s, %d clips of %d labels, %.2f s each; features %.1f s, training %.1f s; "
               "loss %.4f, training accuracy %.2f%% -> %s\n", CMD, o->scratch ? "scratch CNN on log-mel frames"
               : "head on the frozen openWakeWord embedding", s->n, s->nlabels, ts_audio_clf_clip_samples(c) / 16000.0,
               t1 - t0, t2 - t1, loss, 100 * accuracy(c, s, feat), o->out);
    free(feat);
    ts_audio_clf_free(c);
    return rc;
}

int cli_audio_train(int argc, char **argv) {
    at_opts o = {.seed = 1, .clip_ms = TS_AUDIO_CLF_CLIP / 16};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    cli_audio_set s;
    if ((rc = cli_audio_set_load(CMD, o.data, &s))) return rc;
    if (s.nlabels < 2) {
        fprintf(stderr, "tessera %s: %s: one label only ('%s'); a classifier needs at least 2\n", CMD, o.data,
                s.labels[0]);
        rc = 2;
    } else rc = train(&o, &s);
    cli_audio_set_free(&s);
    return rc;
}
