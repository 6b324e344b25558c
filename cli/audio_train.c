/*
 * audio_train.c — `tessera audio-train` (ts_audio_set_load, ts_audio_clf_fit): its flags and what it prints.
 */
#include "cli.h"
#include "options.h"
#include "speech_io.h"

#define CMD "audio-train"

static const char *USAGE =
    "  Trains a classifier of short clips on labelled audio: DIR_OR_TSV is a folder holding one\n"
    "  folder per label (its clips inside), or a TSV of PATH<TAB>LABEL lines (paths relative to the\n"
    "  TSV's folder). Each clip is read at 16 kHz and cut, or padded with silence at its end, to\n"
    "  the clip length. Writes DIR: config.json and model.safetensors, which `tessera eval --model\n"
    "  DIR`, `tessera kws --model DIR` and `tessera export --model DIR --out F` read.\n";

typedef struct at_opts {
    const char *data, *out, *models, *from;
    int scratch, epochs, batch, seed, clip_ms, threads;
    double lr; /* -1: not given (the library's default) */
} at_opts;

/* The values the parse cannot check: 1 to go on, else 2 after printing the error. */
static int check(const at_opts *o) {
    int rc = 2;
    if (o->from && strcmp(o->from, "embedding"))
        fprintf(stderr, "tessera %s: --from takes 'embedding' (or --scratch), not '%s'\n", CMD, o->from);
    else if (o->clip_ms % 80)
        fprintf(stderr, "tessera %s: --clip-ms wants a positive multiple of 80, not '%d'\n", CMD, o->clip_ms);
    else if (o->lr != -1 && !(o->lr > 0 && o->lr < 1))
        fprintf(stderr, "tessera %s: --lr wants a number in (0, 1), not '%g'\n", CMD, o->lr);
    else rc = 1;
    if (rc == 2) fprintf(stderr, "(tessera %s --help shows the usage)\n", CMD);
    return rc;
}

/* One line on stderr when clips of s (their lengths as the training read them) were longer than
 * the clip length, clip samples at 16 kHz, and so cut. */
static void warn_cut(const at_opts *o, const ts_audio_set *s, int clip) {
    int cut = 0;
    int64_t longest = 0;
    for (int i = 0; s->samples && i < s->n; i++)
        cut += s->samples[i] > clip, longest = s->samples[i] > longest ? s->samples[i] : longest;
    if (cut)
        fprintf(stderr, "tessera %s: warning: %d clip%s longer than --clip-ms %d %s cut (longest %lld ms)\n", CMD, cut,
                cut == 1 ? "" : "s", o->clip_ms, cut == 1 ? "was" : "were", (long long)((longest + 15) / 16));
}

/* The classifier trained on s and written: the exit code. */
static int train(const at_opts *o, const ts_audio_set *s) {
    char dir_buf[4096], path[4200];
    const char *models = o->models ? o->models : cli_speech_dir(dir_buf, sizeof dir_buf);
    if (!cli_path_join(path, sizeof path, models, "openwakeword"))
        return cli_fail(CMD, "", 2);
    ts_audio_clf_opts co = {.struct_size = sizeof co, .models_dir = path,
                            .kind = o->scratch ? TS_AUDIO_CLF_SCRATCH : TS_AUDIO_CLF_EMBEDDING,
                            .clip_samples = o->clip_ms * 16, .seed = (uint64_t)o->seed, .num_threads = o->threads};
    ts_audio_clf_train_opts to = {.struct_size = sizeof to, .epochs = o->epochs, .lr = o->lr < 0 ? 0 : (float)o->lr,
                                  .batch = o->batch, .seed = (uint64_t)o->seed};
    ts_audio_clf_fit_report r;
    ts_audio_clf *c = ts_audio_clf_fit(&co, s, &to, &r);
    if (c) warn_cut(o, s, ts_audio_clf_clip_samples(c));
    int rc = !c ? cli_fail(CMD, "", ts_last_status() == TS_ERR_ARG || ts_last_status() == TS_ERR_IO ? 2 : 1)
             : ts_audio_clf_save(c, o->out) ? cli_fail(CMD, "", 1) : 0;
    if (c && !rc)
        printf("tessera %s: %s, %d clips of %d labels, %.2f s each; features %.1f s, training %.1f s; "
               "loss %.4f, training accuracy %.2f%% -> %s\n", CMD, o->scratch ? "scratch CNN on log-mel frames"
               : "head on the frozen openWakeWord embedding", s->n, s->nlabels, ts_audio_clf_clip_samples(c) / 16000.0,
               r.features_s, r.train_s, r.loss, 100 * r.accuracy, o->out);
    ts_audio_clf_free(c);
    return rc;
}

int cli_audio_train(int argc, char **argv) {
    at_opts o = {.seed = 1, .clip_ms = TS_AUDIO_CLF_CLIP / 16, .lr = -1};
    const cli_opt opts[] = {
        {"data", CLI_STR, &o.data, 1, "DIR_OR_TSV", "the labelled clips: a folder per label, or a TSV", NULL},
        {"out", CLI_STR, &o.out, 1, "DIR", "the model directory written", NULL},
        {"from", CLI_STR, &o.from, 0, "embedding",
         "(default) openWakeWord's frozen front end (melspectrogram + embedding\n"
         "model): the clip's 96-d embeddings every 80 ms pooled (mean and max, 192\n"
         "features), computed once per clip; a head 192 -> 64 -> ReLU -> labels", NULL},
        {"scratch", CLI_FLAG, &o.scratch, 0, NULL,
         "a small CNN (3 convolutions, 16/32/32 channels) on the same log-mel\n"
         "frames, from random weights: the comparison without pretraining", NULL},
        {"epochs", CLI_INT, &o.epochs, 1, "N",
         "passes over the clips (default 60 with --from embedding, 20 --scratch)", NULL},
        {"lr", CLI_FLOAT, &o.lr, 0, "F", "AdamW's learning rate, cosine-decayed to 0 (default 0.002)", NULL},
        {"batch", CLI_INT, &o.batch, 1, "N", "clips a step (default 32)", NULL},
        {"seed", CLI_INT, &o.seed, 1, "N",
         "initial weights and shuffling (default 1): the same seed, data and\n"
         "threads give the same model", NULL},
        {"clip-ms", CLI_INT, &o.clip_ms, 1, "MS", "clip length in ms, a multiple of 80 (default 1280)", NULL},
        CLI_MODEL_STORE_OPT(&o.models, "openwakeword/"),
        {"threads", CLI_INT, &o.threads, 1, "N", "worker threads (default: OpenMP's; small inference runs 1)", NULL},
        {NULL, CLI_TEXT, NULL, 0, NULL,
         "Clips longer than --clip-ms are cut (a warning says how many, and the longest).\n"
         "Exit codes: 0 written, 1 failed while training, 2 bad flags or data (an empty folder, an\n"
         "empty label folder, one label only, an unreadable clip: named).\n", NULL},
    };
    cli_optset os; /* held to the end: the values from --config point into it */
    int rc = cli_opts_parse(&os, CMD, USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1 || (rc = check(&o)) != 1) goto done_opts;
    ts_audio_set *s = ts_audio_set_load(o.data);
    rc = s ? train(&o, s) : cli_fail(CMD, "", 2);
    ts_audio_set_free(s);
done_opts:
    cli_opts_free(&os);
    return rc;
}
