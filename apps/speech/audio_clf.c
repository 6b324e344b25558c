/*
 * audio_clf.c — a classifier of short clips on openWakeWord's front end (tessera_speech.h:
 * ts_audio_clf_*): the features of a clip (the frozen embeddings pooled, or the log-mel frames),
 * the model's graph (a small head or a small CNN), and its class probabilities.
 * Training is in audio_clf_train.c, the model directory and the ONNX export in audio_clf_dir.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/app.h"
#include "speech/speech_impl.h"

#define HIDDEN 64            /* the head's hidden width */
#define C1 16                /* the CNN's channels */
#define C2 32

/* ---------------------------------------------------------------- the graph */

/* A parameter drawn uniformly from +-1/sqrt(fan_in) (PyTorch's Linear and Conv2d). */
static ts_value param(ts_graph *g, const char *layer, const char *what, int ndim, const int64_t *shape, int64_t fan_in) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s", layer, what);
    float bound = 1.0f / sqrtf((float)fan_in);
    return ts_param(g, name, TS_F32, ndim, shape, ts_init_uniform(-bound, bound));
}

/* y = x W^T + b: x [B, in] -> [B, out], W [out, in]. */
static ts_value linear(ts_graph *g, const char *layer, ts_value x, int64_t in, int64_t out) {
    ts_value w = param(g, layer, "weight", 2, (int64_t[]){out, in}, in);
    ts_value b = param(g, layer, "bias", 1, (int64_t[]){out}, in);
    return ts_add(g, ts_matmul(g, x, w, 0, 1), b);
}

/* relu(conv 3x3, padding 1): [B, in, H, W] -> [B, out, H, W]. */
static ts_value conv(ts_graph *g, const char *layer, ts_value x, int64_t in, int64_t out) {
    ts_value w = param(g, layer, "weight", 4, (int64_t[]){out, in, 3, 3}, in * 9);
    ts_value b = param(g, layer, "bias", 1, (int64_t[]){out}, in * 9);
    ts_conv_opts co = {.pad = {1, 1, 1, 1}};
    return ts_relu(g, ts_conv2d(g, x, w, b, &co));
}

static ts_value pool(ts_graph *g, ts_value x) {
    ts_pool_opts po = {.kernel = {2, 2}, .stride = {2, 2}};
    return ts_max_pool2d(g, x, &po);
}

int clf_input_shape(const ts_audio_clf *c, int64_t B, int64_t shape[4]) {
    if (c->kind == TS_AUDIO_CLF_EMBEDDING) {
        shape[0] = B, shape[1] = 2 * KWS_EMB;
        return 2;
    }
    shape[0] = B, shape[1] = 1, shape[2] = (int64_t)c->hops * KWS_STEP, shape[3] = KWS_MELS;
    return 4;
}

ts_value clf_logits(ts_graph *g, const ts_audio_clf *c, int64_t B, const char **input) {
    int64_t shape[4];
    int nd = clf_input_shape(c, B, shape);
    *input = c->kind == TS_AUDIO_CLF_EMBEDDING ? "features" : "mel";
    ts_value x = ts_input(g, *input, TS_F32, nd, shape), h;
    if (c->kind == TS_AUDIO_CLF_EMBEDDING) {
        h = ts_relu(g, linear(g, "head.fc1", x, 2 * KWS_EMB, HIDDEN)); /* [B, 64] */
        h = linear(g, "head.fc2", h, HIDDEN, c->nlabels);              /* [B, L] */
    } else {
        int64_t flat = C2 * (shape[2] / 8) * (KWS_MELS / 8);
        h = pool(g, conv(g, "cnn.conv1", x, 1, C1));  /* [B, 16, T/2, 16] */
        h = pool(g, conv(g, "cnn.conv2", h, C1, C2)); /* [B, 32, T/4, 8] */
        h = pool(g, conv(g, "cnn.conv3", h, C2, C2)); /* [B, 32, T/8, 4] */
        h = ts_reshape(g, h, 2, (int64_t[]){B, flat}); /* [B, 32 T/8 4] */
        h = linear(g, "cnn.fc", h, flat, c->nlabels);  /* [B, L] */
    }
    return ts_name(g, h, "logits");
}

/* ---------------------------------------------------------------- the classifier */

int64_t ts_audio_clf_feature_size(const ts_audio_clf *c) {
    if (!c) return 0;
    return c->kind == TS_AUDIO_CLF_EMBEDDING ? 2 * KWS_EMB : (int64_t)c->hops * KWS_STEP * KWS_MELS;
}

int ts_audio_clf_num_labels(const ts_audio_clf *c) { return c ? c->nlabels : 0; }
const char *ts_audio_clf_label(const ts_audio_clf *c, int i) { return c && i >= 0 && i < c->nlabels ? c->labels[i] : NULL; }
ts_audio_clf_kind ts_audio_clf_get_kind(const ts_audio_clf *c) { return c ? c->kind : TS_AUDIO_CLF_EMBEDDING; }
int ts_audio_clf_clip_samples(const ts_audio_clf *c) { return c ? c->clip : 0; }

ts_status ts_audio_clf_threads(const ts_audio_clf *c, int threads[4]) {
    if (!c || !threads || ts_kws_threads(c->front, threads))
        return ts_set_error(TS_ERR_ARG, "ts_audio_clf_threads: bad arguments");
    threads[3] = c->infer_threads; /* in place of the heads: the front end has none */
    return TS_OK;
}

ts_status ts_audio_clf_features(ts_audio_clf *c, const float *x, int64_t n, float *feat) {
    if (!c || (!x && n) || n < 0 || !feat) return ts_set_error(TS_ERR_ARG, "ts_audio_clf_features: bad arguments");
    static const float zeros[TS_KWS_HOP];
    const float *s, *mel, *emb;
    int64_t nf, got = 0;
    ts_kws_reset(c->front);
    int64_t take = n < c->clip ? n : c->clip;
    float *all_mel = malloc((size_t)c->hops * KWS_STEP * KWS_MELS * sizeof(float));
    float *all_emb = malloc((size_t)c->hops * KWS_EMB * sizeof(float));
    ts_status st = all_mel && all_emb ? TS_OK : ts_set_error(TS_ERR_NOMEM, "audio classifier: out of memory");
    /* the clip, then zeros up to clip samples; frames gathered as they come */
    for (int64_t done = 0; !st && done < c->clip;) {
        int64_t k = done < take ? take - done : (c->clip - done < TS_KWS_HOP ? c->clip - done : TS_KWS_HOP);
        st = ts_kws_feed(c->front, done < take ? x + done : zeros, k, &s, &nf);
        if (!st) st = ts_kws_features(c->front, &mel, &emb, &nf);
        if (!st && got + nf > c->hops) st = ts_set_error(TS_ERR_RUNTIME, "audio classifier: more frames than hops");
        if (!st) {
            memcpy(all_mel + got * KWS_STEP * KWS_MELS, mel, (size_t)nf * KWS_STEP * KWS_MELS * sizeof(float));
            memcpy(all_emb + got * KWS_EMB, emb, (size_t)nf * KWS_EMB * sizeof(float));
        }
        got += nf, done += k;
    }
    if (!st && got != c->hops)
        st = ts_set_error(TS_ERR_RUNTIME, "audio classifier: %lld frames for %d hops", (long long)got, c->hops);
    if (!st && c->kind == TS_AUDIO_CLF_SCRATCH)
        memcpy(feat, all_mel, (size_t)c->hops * KWS_STEP * KWS_MELS * sizeof(float));
    else if (!st) /* mean and max over time: [96] + [96] */
        for (int j = 0; j < KWS_EMB; j++) {
            double sum = 0;
            float mx = all_emb[j];
            for (int t = 0; t < c->hops; t++) {
                float v = all_emb[t * KWS_EMB + j];
                sum += v;
                if (v > mx) mx = v;
            }
            feat[j] = (float)(sum / c->hops), feat[KWS_EMB + j] = mx;
        }
    free(all_mel);
    free(all_emb);
    return st;
}

ts_status ts_audio_clf_predict(ts_audio_clf *c, int64_t n, const float *feat, float *probs) {
    if (!c || n < 0 || (n && (!feat || !probs))) return ts_set_error(TS_ERR_ARG, "ts_audio_clf_predict: bad arguments");
    int64_t F = ts_audio_clf_feature_size(c), shape[4];
    int nd = clf_input_shape(c, CLF_BATCH, shape), L = c->nlabels;
    const char *input = c->kind == TS_AUDIO_CLF_EMBEDDING ? "features" : "mel";
    for (int64_t k = 0; k < n; k += CLF_BATCH) {
        int64_t m = n - k < CLF_BATCH ? n - k : CLF_BATCH;
        memset(c->buf, 0, (size_t)(CLF_BATCH * F) * sizeof(float));
        memcpy(c->buf, feat + k * F, (size_t)(m * F) * sizeof(float));
        ts_tensor *lg = NULL;
        if (ts_program_feed_data(c->infer, input, TS_F32, nd, shape, c->buf) || ts_program_run(c->infer) ||
            ts_program_fetch(c->infer, "logits", &lg))
            return ts_last_status();
        const float *l = ts_tensor_data(lg);
        for (int64_t i = 0; i < m; i++) { /* softmax of row i */
            const float *r = l + i * L;
            float *p = probs + (k + i) * L, mx = r[0];
            double sum = 0;
            for (int j = 1; j < L; j++) mx = r[j] > mx ? r[j] : mx;
            for (int j = 0; j < L; j++) sum += (p[j] = expf(r[j] - mx));
            for (int j = 0; j < L; j++) p[j] = (float)(p[j] / sum);
        }
        ts_tensor_free(lg);
    }
    return TS_OK;
}

void ts_audio_clf_free(ts_audio_clf *c) {
    if (!c) return;
    for (int i = 0; i < c->nlabels; i++) free(c->labels[i]);
    free(c->labels);
    free(c->models_dir);
    ts_kws_free(c->front);
    ts_program_free(c->infer);
    free(c->buf);
    free(c);
}

/* The inference program (batch CLF_BATCH), its parameters drawn from c->seed. */
static ts_status compile_infer(ts_audio_clf *c) {
    ts_graph *g = ts_graph_new();
    if (!g) return ts_last_status();
    ts_graph_set_seed(g, c->seed);
    const char *input;
    clf_logits(g, c, CLF_BATCH, &input);
    if (ts_graph_status(g)) {
        ts_graph_free(g);
        return ts_last_status();
    }
    /* its threads from its run: a batch of CLF_BATCH clips' features */
    c->infer_threads = speech_threads(c->num_threads, CLF_BATCH * ts_audio_clf_feature_size(c));
    c->infer = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .num_threads = c->infer_threads,
                                                .nfetch = 1, .fetches = (const char *[]){"logits"}, .inference = 1});
    ts_graph_free(g);
    return c->infer ? TS_OK : ts_last_status();
}

ts_audio_clf *ts_audio_clf_new(const ts_audio_clf_opts *opts) {
    ts_audio_clf_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_audio_clf_opts, "ts_audio_clf_new")) return NULL;
    if (!o.clip_samples) o.clip_samples = TS_AUDIO_CLF_CLIP;
    if (o.nlabels < 2 || !o.labels || o.clip_samples < 0 || o.clip_samples % TS_KWS_HOP ||
        o.clip_samples > 30 * 16000 || (o.kind != TS_AUDIO_CLF_EMBEDDING && o.kind != TS_AUDIO_CLF_SCRATCH)) {
        if (o.nlabels == 1 && o.labels)
            ts_set_error(TS_ERR_ARG, "audio classifier: one label only ('%s'); a classifier needs at least 2",
                         o.labels[0]);
        else
            ts_set_error(TS_ERR_ARG, "audio classifier: %s",
                         o.nlabels < 2 || !o.labels ? "at least 2 labels are needed"
                         : "the clip must be a positive multiple of 1280 samples, at most 30 s");
        return NULL;
    }
    ts_audio_clf *c = calloc(1, sizeof *c);
    if (!c) {
        ts_set_error(TS_ERR_NOMEM, "audio classifier: out of memory");
        return NULL;
    }
    c->kind = o.kind, c->clip = o.clip_samples, c->hops = o.clip_samples / TS_KWS_HOP, c->seed = o.seed;
    c->num_threads = o.num_threads;
    c->models_dir = strdup(o.models_dir ? o.models_dir : ".");
    c->labels = calloc((size_t)o.nlabels, sizeof *c->labels);
    if (!c->models_dir || !c->labels) goto nomem;
    for (; c->nlabels < o.nlabels; c->nlabels++)
        if (!(c->labels[c->nlabels] = strdup(o.labels[c->nlabels] ? o.labels[c->nlabels] : ""))) goto nomem;
    c->buf = malloc((size_t)(CLF_BATCH * ts_audio_clf_feature_size(c)) * sizeof(float));
    if (!c->buf) goto nomem;
    static const char *const none[1] = {NULL};
    ts_kws_opts ko = {.struct_size = sizeof ko, .models_dir = c->models_dir, .keywords = none, .nkeywords = 0,
                      .num_threads = o.num_threads};
    if (!(c->front = ts_kws_new(&ko)) || compile_infer(c)) goto fail;
    kws_mel_only(c->front, c->kind == TS_AUDIO_CLF_SCRATCH);
    return c;
nomem:
    ts_set_error(TS_ERR_NOMEM, "audio classifier: out of memory");
fail:
    ts_audio_clf_free(c);
    return NULL;
}
