/*
 * audio_clf_train.c — training an audio classifier (ts_audio_clf_train) on features computed
 * once per clip: one static graph (the model, cross-entropy, backward, AdamW with the learning
 * rate fed each step, cosine-decayed), epochs of shuffled batches, the weights then copied into
 * the inference program.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/app.h"
#include "speech/speech_impl.h"

/* splitmix64: the shuffle's random numbers. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void shuffle(int64_t *order, int64_t n, uint64_t *s) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(next_rand(s) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j], order[j] = t;
    }
}

/* The training program for batches of B clips: fetches "loss". */
static ts_program *compile_train(const ts_audio_clf *c, int B) {
    ts_graph *g = ts_graph_new();
    if (!g) return NULL;
    ts_graph_set_seed(g, c->seed);
    const char *input;
    ts_value logits = clf_logits(g, c, B, &input);
    ts_value y = ts_input(g, "labels", TS_I32, 1, (int64_t[]){B});
    ts_value lr = ts_input(g, "lr", TS_F32, 0, NULL);
    ts_value loss = ts_name(g, ts_cross_entropy(g, logits, y, -1), "loss");
    ts_program *p = NULL;
    if (!ts_graph_status(g) && !ts_backward(g, loss) && !ts_adamw(g, lr, 0.9f, 0.999f, 1e-8f, 0.01f))
        p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .num_threads = c->num_threads,
                                             .nfetch = 1, .fetches = (const char *[]){"loss"}});
    ts_graph_free(g);
    return p;
}

/* One step on the clips order[0 .. m) (m <= B; the rest of the batch is ignored: label -1). */
static ts_status step(ts_program *p, const ts_audio_clf *c, int B, const int64_t *order, int m, const float *feat,
                      const int *y, float *xb, int32_t *yb, float lr, double *loss) {
    int64_t F = ts_audio_clf_feature_size(c), shape[4];
    int nd = clf_input_shape(c, B, shape);
    memset(xb, 0, (size_t)(B * F) * sizeof(float));
    for (int i = 0; i < B; i++) {
        yb[i] = i < m ? y[order[i]] : -1;
        if (i < m) memcpy(xb + i * F, feat + order[i] * F, (size_t)F * sizeof(float));
    }
    const char *input = c->kind == TS_AUDIO_CLF_EMBEDDING ? "features" : "mel";
    ts_tensor *l = NULL;
    if (ts_program_feed_data(p, input, TS_F32, nd, shape, xb) ||
        ts_program_feed_data(p, "labels", TS_I32, 1, (int64_t[]){B}, yb) ||
        ts_program_feed_data(p, "lr", TS_F32, 0, NULL, &lr) || ts_program_run(p) || ts_program_fetch(p, "loss", &l))
        return ts_last_status();
    *loss += *(float *)ts_tensor_data(l) * m;
    ts_tensor_free(l);
    return TS_OK;
}

ts_status ts_audio_clf_train(ts_audio_clf *c, int64_t n, const float *feat, const int *y,
                             const ts_audio_clf_train_opts *opts, double *loss) {
    ts_audio_clf_train_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_audio_clf_train_opts, "ts_audio_clf_train")) return ts_last_status();
    if (!c || n < 1 || !feat || !y || o.epochs < 0 || o.batch < 0 || !(o.lr >= 0))
        return ts_set_error(TS_ERR_ARG, "ts_audio_clf_train: bad arguments (no clips, or a negative option)");
    for (int64_t i = 0; i < n; i++)
        if (y[i] < 0 || y[i] >= c->nlabels)
            return ts_set_error(TS_ERR_ARG, "ts_audio_clf_train: clip %lld's label %d is not in [0, %d)", (long long)i,
                                y[i], c->nlabels);
    int B = o.batch ? o.batch : 32, epochs = o.epochs ? o.epochs : c->kind == TS_AUDIO_CLF_EMBEDDING ? 60 : 20;
    float lr0 = o.lr > 0 ? o.lr : 2e-3f;
    int64_t F = ts_audio_clf_feature_size(c), nbatch = (n + B - 1) / B, total = (int64_t)epochs * nbatch;
    ts_program *p = compile_train(c, B);
    if (!p) return ts_last_status();
    float *xb = malloc((size_t)(B * F) * sizeof(float));
    int32_t *yb = malloc((size_t)B * sizeof(int32_t));
    int64_t *order = malloc((size_t)n * sizeof(int64_t));
    ts_status st = xb && yb && order ? TS_OK : ts_set_error(TS_ERR_NOMEM, "audio classifier: out of memory");
    if (!st && ts_program_copy_params(p, c->infer) < 0) st = ts_last_status();
    uint64_t rng = o.seed;
    double sum = 0;
    for (int64_t i = 0; i < n && order; i++) order[i] = i;
    for (int e = 0; e < epochs && !st; e++) {
        shuffle(order, n, &rng);
        sum = 0;
        for (int64_t k = 0; k < nbatch && !st; k++) {
            int m = (int)(n - k * B < B ? n - k * B : B);
            float lr = lr0 * 0.5f * (1.0f + cosf(3.14159265f * (float)(e * nbatch + k) / (float)total));
            st = step(p, c, B, order + k * B, m, feat, y, xb, yb, lr, &sum);
        }
    }
    if (!st && ts_program_copy_params(c->infer, p) < 0) st = ts_last_status();
    if (!st && loss) *loss = sum / (double)n;
    free(xb), free(yb), free(order);
    ts_program_free(p);
    return st;
}
