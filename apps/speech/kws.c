/*
 * kws.c — keyword spotting as openWakeWord streams it (its utils.AudioFeatures and
 * model.Model.predict), on its ONNX models:
 *
 *   1. audio in [-1, 1] is scaled by 32767 (the models take int16-valued floats) and gathered in
 *      hops of 1280 samples (80 ms);
 *   2. each hop, with the 480 samples before it (3 frames of 160: the mel model's window reaches
 *      that far back), goes through melspectrogram.onnx ([1, 1760] -> 8 frames of 32 bands); each
 *      value v becomes v / 10 + 2 (openWakeWord's transform, closer to Google's TF front end);
 *   3. the last 76 mel frames (a window advancing 8 frames a hop) go through embedding_model.onnx
 *      ([B, 76, 32, 1] -> [B, 96]); hops gathered within one ts_kws_feed go in batches of
 *      KWS_BATCH, the rest one at a time (two programs, compiled once each);
 *   4. each head scores the last `len` embeddings (kws_heads.c).
 *
 * Where tessera differs from openWakeWord, on purpose:
 *  - the initial buffers are deterministic: the 480 samples of context before the first hop are
 *    zeros (openWakeWord has none, so its first hop makes 5 mel frames, not 8); the mel buffer
 *    starts as 76 frames of ones (as openWakeWord); the embedding history starts as copies of
 *    the embedding of that all-ones window, where openWakeWord embeds 4 s of random noise;
 *  - the scores of the first 5 frames are 0, as openWakeWord's; a file is padded with 1 s of
 *    silence at both ends by the caller (openWakeWord's predict_clip), not here.
 * Hops do not depend on how the audio was cut into ts_kws_feed calls: scores for pieces of any
 * size equal those for the whole (up to the last bits that batching the embedding may change).
 */
#include <stdlib.h>
#include <string.h>

#include "common/app.h"
#include "speech/speech_impl.h"

#define KWS_BATCH 16     /* embeddings computed together when hops are waiting */
#define KWS_ZEROED 5     /* first frames whose scores are 0 */
#define MEL_IN (KWS_CONTEXT + TS_KWS_HOP)

struct ts_kws {
    char *path[2];                 /* melspectrogram.onnx, embedding_model.onnx */
    ts_onnx *model[2];
    ts_onnx_session *session[2];
    ts_onnx_session *single;       /* embedding_model.onnx for one window at a time (own threads) */
    kws_head *heads;
    int nheads;
    char **labels;
    int nlabels;
    int hist;                            /* embeddings kept: the longest head's len */
    float ctx[KWS_CONTEXT];              /* the scaled samples before the pending ones */
    float pend[TS_KWS_HOP];              /* scaled samples of the hop being gathered */
    int npend;
    float mel[KWS_WINDOW * KWS_MELS];    /* the last 76 mel frames [76][32], oldest first */
    float *emb;                          /* the last hist embeddings [hist][96], oldest first */
    float init_emb[KWS_EMB];
    float *wins;                         /* windows waiting for their embedding [KWS_BATCH][76][32] */
    int nwins;
    int64_t frames;                      /* score frames made since the start */
    float *scores;                       /* this feed's frames [nscores][nlabels] */
    int64_t nscores, cap;
    float *fmel, *femb;                  /* this feed's front end per frame: [nscores][8][32], [nscores][96] */
    int mel_only;                        /* kws_mel_only: embeddings not computed (zeros) */
    int threads[3];                      /* mel, embedding batch, embedding single (speech_threads) */
};
enum { MEL, EMB };

/* Embeddings of the B windows w[B][76][32] into out[B][96]. */
static ts_status embed(ts_kws *k, const float *w, int B, float *out) {
    ts_tensor *in = ts_tensor_from(TS_F32, 4, (int64_t[]){B, KWS_WINDOW, KWS_MELS, 1}, w), *res = NULL;
    if (!in) return ts_last_status();
    ts_status s = ts_onnx_session_run(B == 1 ? k->single : k->session[EMB], (const ts_tensor *const[]){in}, &res);
    ts_tensor_free(in);
    if (s) return kws_err_in(k->path[EMB]);
    if (ts_tensor_numel(res) != (int64_t)B * KWS_EMB) {
        ts_tensor_free(res);
        return ts_set_error(TS_ERR_SHAPE, "%s: the embedding model should give 96 values per window", k->path[EMB]);
    }
    memcpy(out, ts_tensor_data(res), (size_t)B * KWS_EMB * sizeof(float));
    ts_tensor_free(res);
    return TS_OK;
}

void ts_kws_reset(ts_kws *k) {
    if (!k) return;
    memset(k->ctx, 0, sizeof k->ctx);
    k->npend = 0;
    for (int i = 0; i < KWS_WINDOW * KWS_MELS; i++) k->mel[i] = 1.0f;
    for (int i = 0; i < k->hist; i++) memcpy(k->emb + (size_t)i * KWS_EMB, k->init_emb, sizeof k->init_emb);
    k->nwins = 0;
    k->frames = 0;
    k->nscores = 0;
}

/* Room for one more frame of this feed's scores and features. */
static ts_status grow(ts_kws *k) {
    if (k->nscores < k->cap) return TS_OK;
    int64_t cap = k->cap ? 2 * k->cap : 64;
    float *p = realloc(k->scores, (size_t)cap * (size_t)(k->nlabels + 1) * sizeof(float));
    if (p) k->scores = p;
    float *m = realloc(k->fmel, (size_t)cap * KWS_STEP * KWS_MELS * sizeof(float));
    if (m) k->fmel = m;
    float *e = realloc(k->femb, (size_t)cap * KWS_EMB * sizeof(float));
    if (e) k->femb = e;
    if (!p || !m || !e) return ts_set_error(TS_ERR_NOMEM, "kws: out of memory");
    k->cap = cap;
    return TS_OK;
}

/* A new embedding e[96] of a window whose last 8 frames mel[8][32] are new: into the history
 * and this feed's features, then one frame of scores from every head. */
static ts_status score_frame(ts_kws *k, const float *e, const float *mel) {
    memmove(k->emb, k->emb + KWS_EMB, (size_t)(k->hist - 1) * KWS_EMB * sizeof(float));
    memcpy(k->emb + (size_t)(k->hist - 1) * KWS_EMB, e, KWS_EMB * sizeof(float));
    if (grow(k)) return ts_last_status();
    memcpy(k->femb + (size_t)k->nscores * KWS_EMB, e, KWS_EMB * sizeof(float));
    memcpy(k->fmel + (size_t)k->nscores * KWS_STEP * KWS_MELS, mel, KWS_STEP * KWS_MELS * sizeof(float));
    float *row = k->scores + (size_t)k->nscores * (size_t)k->nlabels;
    for (int h = 0, j = 0; h < k->nheads; j += kws_head_nlabels(&k->heads[h]), h++) {
        const float *last = k->emb + (size_t)(k->hist - k->heads[h].len) * KWS_EMB;
        if (kws_head_score(&k->heads[h], last, row + j)) return ts_last_status();
    }
    if (k->frames < KWS_ZEROED) memset(row, 0, (size_t)k->nlabels * sizeof(float));
    k->frames++;
    k->nscores++;
    return TS_OK;
}

/* Embed the waiting windows (one batch when KWS_BATCH wait, else one by one) and score them. */
static ts_status flush(ts_kws *k) {
    float e[KWS_BATCH * KWS_EMB];
    int B = k->nwins == KWS_BATCH ? KWS_BATCH : 1;
    if (k->mel_only) memset(e, 0, sizeof e);
    for (int i = 0; i < k->nwins && !k->mel_only; i += B)
        if (embed(k, k->wins + (size_t)i * KWS_WINDOW * KWS_MELS, B, e + (size_t)i * KWS_EMB)) return ts_last_status();
    size_t win = KWS_WINDOW * KWS_MELS, fresh = (KWS_WINDOW - KWS_STEP) * KWS_MELS;
    for (int i = 0; i < k->nwins; i++)
        if (score_frame(k, e + (size_t)i * KWS_EMB, k->wins + i * win + fresh)) return ts_last_status();
    k->nwins = 0;
    return TS_OK;
}

/* A full hop in pend: 8 mel frames from context + hop, the window of the last 76 queued. */
static ts_status hop(ts_kws *k) {
    ts_tensor *in = ts_tensor_new(TS_F32, 2, (int64_t[]){1, MEL_IN}), *res = NULL;
    if (!in) return ts_last_status();
    float *x = ts_tensor_data(in);
    memcpy(x, k->ctx, sizeof k->ctx);
    memcpy(x + KWS_CONTEXT, k->pend, sizeof k->pend);
    ts_status s = ts_onnx_session_run(k->session[MEL], (const ts_tensor *const[]){in}, &res);
    ts_tensor_free(in);
    if (s) return kws_err_in(k->path[MEL]);
    if (ts_tensor_numel(res) != KWS_STEP * KWS_MELS) {
        ts_tensor_free(res);
        return ts_set_error(TS_ERR_SHAPE, "%s: the mel model should give 8 frames of 32 bands for 1760 samples",
                            k->path[MEL]);
    }
    const float *m = ts_tensor_data(res);
    size_t keep = (KWS_WINDOW - KWS_STEP) * KWS_MELS;
    memmove(k->mel, k->mel + KWS_STEP * KWS_MELS, keep * sizeof(float));
    for (int i = 0; i < KWS_STEP * KWS_MELS; i++) k->mel[keep + (size_t)i] = m[i] / 10.0f + 2.0f;
    ts_tensor_free(res);
    memcpy(k->ctx, k->pend + TS_KWS_HOP - KWS_CONTEXT, sizeof k->ctx);
    k->npend = 0;
    memcpy(k->wins + (size_t)k->nwins * KWS_WINDOW * KWS_MELS, k->mel, sizeof k->mel);
    if (++k->nwins == KWS_BATCH) return flush(k);
    return TS_OK;
}

ts_status ts_kws_feed(ts_kws *k, const float *x, int64_t n, const float **scores, int64_t *nframes) {
    if (!k || (!x && n) || n < 0 || !scores || !nframes) return ts_set_error(TS_ERR_ARG, "ts_kws_feed: bad arguments");
    k->nscores = 0;
    *scores = NULL, *nframes = 0;
    while (n > 0) {
        int take = TS_KWS_HOP - k->npend;
        if (take > n) take = (int)n;
        for (int i = 0; i < take; i++) k->pend[k->npend + i] = x[i] * 32767.0f;
        k->npend += take, x += take, n -= take;
        if (k->npend == TS_KWS_HOP && hop(k)) return ts_last_status();
    }
    if (flush(k)) return ts_last_status();
    *scores = k->scores, *nframes = k->nscores;
    return TS_OK;
}

void kws_mel_only(ts_kws *k, int on) {
    if (k) k->mel_only = k->nheads ? 0 : on;
}

ts_status ts_kws_features(const ts_kws *k, const float **mel, const float **emb, int64_t *nframes) {
    if (!k || !nframes) return ts_set_error(TS_ERR_ARG, "ts_kws_features: bad arguments");
    if (mel) *mel = k->fmel;
    if (emb) *emb = k->femb;
    *nframes = k->nscores;
    return TS_OK;
}

int ts_kws_num_labels(const ts_kws *k) { return k ? k->nlabels : 0; }
const char *ts_kws_label(const ts_kws *k, int i) { return k && i >= 0 && i < k->nlabels ? k->labels[i] : NULL; }

void ts_kws_free(ts_kws *k) {
    if (!k) return;
    for (int i = 0; i < 2; i++) {
        ts_onnx_session_free(k->session[i]);
        if (i == EMB) ts_onnx_session_free(k->single);
        ts_onnx_free(k->model[i]);
        free(k->path[i]);
    }
    for (int h = 0; h < k->nheads; h++) kws_head_close(&k->heads[h]);
    for (int i = 0; i < k->nlabels; i++) free(k->labels[i]);
    free(k->heads);
    free(k->labels);
    free(k->emb);
    free(k->wins);
    free(k->scores);
    free(k->fmel);
    free(k->femb);
    free(k);
}

int speech_threads(int asked, int64_t run_values) {
    return asked > 0 ? asked : run_values < SPEECH_SMALL_RUN ? 1 : 0;
}

ts_status ts_kws_threads(const ts_kws *k, int threads[4]) {
    if (!k || !threads) return ts_set_error(TS_ERR_ARG, "ts_kws_threads: bad arguments");
    threads[0] = k->threads[MEL], threads[1] = k->threads[2], threads[2] = k->threads[EMB], threads[3] = 0;
    for (int h = 0; h < k->nheads; h++) /* the most; 0 (OpenMP's default) counts as the most */
        if (h == 0 || k->heads[h].threads == 0 || (threads[3] && k->heads[h].threads > threads[3]))
            threads[3] = k->heads[h].threads;
    return TS_OK;
}

/* Open model `which` of dir (file name) and its session, compiled with copts but the thread count
 * speech_threads gives for its run: the mel model's [1, 1760], the embedding model's batch of
 * KWS_BATCH windows [KWS_BATCH, 76, 32, 1]; the embedding model also gets a session of its own
 * for one window [1, 76, 32, 1] (a stream fed 80 ms at a time embeds each hop alone). */
static ts_status open_model(ts_kws *k, int which, const char *dir, const char *file, const ts_compile_opts *copts) {
    size_t n = strlen(dir) + strlen(file) + 2;
    k->path[which] = malloc(n);
    if (!k->path[which]) return ts_set_error(TS_ERR_NOMEM, "kws: out of memory");
    snprintf(k->path[which], n, "%s/%s", dir, file);
    k->model[which] = ts_onnx_load(k->path[which]);
    if (!k->model[which]) return ts_last_status();
    if (ts_onnx_num_inputs(k->model[which]) != 1 || ts_onnx_num_outputs(k->model[which]) != 1)
        return ts_set_error(TS_ERR_ARG, "%s: the openWakeWord %s model should have one input and one output",
                            k->path[which], which == MEL ? "mel" : "embedding");
    ts_compile_opts own = *copts;
    own.num_threads = k->threads[which] =
        speech_threads(copts->num_threads, which == MEL ? MEL_IN : (int64_t)KWS_BATCH * KWS_WINDOW * KWS_MELS);
    k->session[which] = ts_onnx_session_new(k->model[which], &own);
    if (!k->session[which]) return ts_last_status();
    if (which != EMB) return TS_OK;
    own.num_threads = k->threads[2] = speech_threads(copts->num_threads, KWS_WINDOW * KWS_MELS);
    k->single = ts_onnx_session_new(k->model[which], &own);
    return k->single ? TS_OK : ts_last_status();
}

/* The heads named in o (every known one when none is) and their labels. */
static ts_status open_heads(ts_kws *k, const ts_kws_opts *o, const ts_compile_opts *copts) {
    char *all = NULL, *names[64];
    int n = o->nkeywords;
    if (n > 64) return ts_set_error(TS_ERR_ARG, "kws: at most 64 keywords");
    if (o->keywords)
        for (int i = 0; i < n; i++) names[i] = (char *)o->keywords[i];
    else {
        const char *list = o->keyword_list ? o->keyword_list : TS_KWS_KEYWORDS;
        if (!(all = strdup(list))) return ts_set_error(TS_ERR_NOMEM, "kws: out of memory");
        n = 0;
        for (char *p = all, *e = p; e; p = e + 1) { /* "a,b": a and b; an empty name is refused */
            if ((e = strchr(p, ','))) *e = 0;
            if (!*p || n == 64) {
                free(all);
                return ts_set_error(TS_ERR_ARG, "kws: keyword_list '%s': at most 64 names separated by commas, none "
                                    "empty (known: %s)", list, TS_KWS_KEYWORDS);
            }
            names[n++] = p;
        }
    }
    if (n < 1 && !o->keywords) {
        free(all);
        return ts_set_error(TS_ERR_ARG, "kws: no keyword given (known: %s)", TS_KWS_KEYWORDS);
    }
    k->hist = 1; /* the front end alone (keywords given, none of them) keeps one embedding */
    if (n < 1) return TS_OK;
    k->heads = calloc((size_t)n, sizeof *k->heads);
    if (!k->heads) {
        free(all);
        return ts_set_error(TS_ERR_NOMEM, "kws: out of memory");
    }
    ts_status s = TS_OK;
    for (int i = 0; i < n && !s; i++, k->nheads++) s = kws_head_open(&k->heads[i], o->models_dir, names[i], copts);
    free(all);
    if (s) return s;
    for (int h = 0; h < k->nheads; h++) {
        k->nlabels += kws_head_nlabels(&k->heads[h]);
        if (k->heads[h].len > k->hist) k->hist = k->heads[h].len;
    }
    k->labels = calloc((size_t)k->nlabels, sizeof *k->labels);
    if (!k->labels) return ts_set_error(TS_ERR_NOMEM, "kws: out of memory");
    for (int h = 0, j = 0; h < k->nheads; h++)
        for (int c = 0; c < kws_head_nlabels(&k->heads[h]); c++)
            if (!(k->labels[j++] = kws_head_label(&k->heads[h], c)))
                return ts_set_error(TS_ERR_NOMEM, "kws: out of memory");
    return TS_OK;
}

ts_kws *ts_kws_new(const ts_kws_opts *opts) {
    ts_kws_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_kws_opts, "ts_kws_new")) return NULL;
    if (!o.models_dir) o.models_dir = ".";
    if (o.num_threads < 0 || o.num_threads > ts_max_threads() || o.nkeywords < 0) {
        ts_set_error(TS_ERR_ARG, "kws: an option is out of range (threads 0..%d, nkeywords >= 0)", ts_max_threads());
        return NULL;
    }
    ts_kws *k = calloc(1, sizeof *k);
    if (!k) {
        ts_set_error(TS_ERR_NOMEM, "kws: out of memory");
        return NULL;
    }
    ts_compile_opts copts = {.struct_size = sizeof copts, .num_threads = o.num_threads, .inference = 1};
    if (open_model(k, MEL, o.models_dir, "melspectrogram.onnx", &copts) ||
        open_model(k, EMB, o.models_dir, "embedding_model.onnx", &copts) || open_heads(k, &o, &copts))
        goto fail;
    k->emb = malloc((size_t)k->hist * KWS_EMB * sizeof(float));
    k->wins = malloc((size_t)KWS_BATCH * KWS_WINDOW * KWS_MELS * sizeof(float));
    if (!k->emb || !k->wins) {
        ts_set_error(TS_ERR_NOMEM, "kws: out of memory");
        goto fail;
    }
    for (int i = 0; i < KWS_WINDOW * KWS_MELS; i++) k->wins[i] = 1.0f;
    if (embed(k, k->wins, 1, k->init_emb)) goto fail;
    ts_kws_reset(k);
    return k;
fail:
    ts_kws_free(k);
    return NULL;
}
