/*
 * speech_impl.h — internal to apps/speech/: the pieces of the keyword spotter (openWakeWord's
 * pipeline) and of the voice activity detector (Silero VAD) that tests check on their own.
 *
 *   kws.c          ts_kws_new / ts_kws_feed: the streaming pipeline (mel frames, embeddings,
 *                  heads) and its buffers
 *   kws_heads.c    the keyword heads: files by keyword, labels of multi-class heads, scoring
 *   vad.c          ts_vad_*: Silero VAD on 512-sample chunks with its state carried
 *   vad_segments.c speech segments from per-chunk probabilities (Silero's get_speech_timestamps)
 *   audio_clf.c    ts_audio_clf_*: a clip classifier on the kws front end (features, the model's
 *                  graph, prediction); audio_clf_train.c its training; audio_clf_dir.c its model
 *                  directory and ONNX export
 */
#ifndef TS_SPEECH_IMPL_H
#define TS_SPEECH_IMPL_H

#include "common/app.h"

#define KWS_MELS 32      /* mel bands */
#define KWS_WINDOW 76    /* mel frames an embedding reads */
#define KWS_STEP 8       /* mel frames per 80 ms hop */
#define KWS_CONTEXT 480  /* samples before each hop the mel model also reads (3 frames of 160) */
#define KWS_EMB 96       /* embedding size */

/* ---------------------------------------------------------------- threads (kws.c)
 * A speech model runs once per 80 ms hop (kws) or 32 ms chunk (vad) on a few thousand values: its
 * nodes are so small that OpenMP's fork and join at each of them costs more than a second thread
 * gains, and far more when another process holds a core (the team waits for its descheduled
 * thread at every join). Measured (issue 41) on 2 cores already loaded by other builds (load 2),
 * 5.5 min of audio: vad 3.2-4.5 s on OpenMP's 2 threads, 1.2-1.5 s on one; kws - (a stream,
 * one window at a time) 11.9-12.5 s, 6.9 s with the small programs on one thread; kws on the
 * file (embedding batches of 16 windows) 5.7 s with the batch on 2 threads, 6.1-6.4 s on one,
 * but 6.7-7.0 s against 6.2-6.3 s with `yes` holding a core too: about even, so the batch keeps
 * OpenMP's default. So when the caller gives no thread count, a program whose runs take fewer
 * input values than SPEECH_SMALL_RUN runs on one thread, a larger one (the batch of 16 windows,
 * 38912 values; the scratch CNN's batch of 32 clips) on OpenMP's default. */
#define SPEECH_SMALL_RUN 32768
/* The thread count to compile a model with: asked when > 0, else 1 for a run of fewer than
 * SPEECH_SMALL_RUN input values (run_values), else 0 (OpenMP's default). */
int speech_threads(int asked, int64_t run_values);

/* ---------------------------------------------------------------- kws_heads.c */

/* The last error again, prefixed with the model file it happened in; returns its status. */
ts_status kws_err_in(const char *path);

/* One keyword head: an ONNX model on the last `len` embeddings [1, len, 96] giving one score or,
 * with nclasses > 1, one probability per class (class 0 the background). */
typedef struct kws_head {
    char *keyword;
    char *path;
    ts_onnx *model;
    ts_onnx_session *session;
    int len;
    int nclasses;
    int threads;   /* compiled with (speech_threads; 0: OpenMP's default) */
} kws_head;

/* Open head `keyword` in dir (keyword_v0.1.onnx, else keyword.onnx) and compile it once, with
 * copts but its thread count speech_threads(copts->num_threads, its run's values). Errors
 * name the file, or for a keyword with no file and not among TS_KWS_KEYWORDS, the known ones. */
ts_status kws_head_open(kws_head *h, const char *dir, const char *keyword, const ts_compile_opts *copts);
void kws_head_close(kws_head *h);
/* Labels the head adds: 1, or nclasses - 1. Label j's name (malloc'ed): the keyword, or for a
 * multi-class head class j + 1's name in the model's output name ({"1": "1_minute_timer", ...}),
 * else keyword_<class>. */
int kws_head_nlabels(const kws_head *h);
char *kws_head_label(const kws_head *h, int j);
/* Score emb[len][96] (the head's last len embeddings, oldest first) into out[nlabels]. */
ts_status kws_head_score(kws_head *h, const float *emb, float *out);

/* ---------------------------------------------------------------- kws.c */

/* A front end alone (no heads): on, the mel frames only, the embedding model not run
 * (ts_kws_features's embeddings are zeros); ignored when k has heads. */
void kws_mel_only(ts_kws *k, int on);

/* ---------------------------------------------------------------- audio_clf*.c */

#define CLF_BATCH 32  /* clips per inference run */

struct ts_audio_clf {
    ts_audio_clf_kind kind;
    char *models_dir;
    char **labels;
    int nlabels;
    int clip, hops;       /* samples per clip, 80 ms hops per clip */
    uint64_t seed;
    int num_threads;      /* asked for (0: chosen per program, speech_threads) */
    ts_kws *front;        /* the front end alone (no heads) */
    ts_program *infer;    /* batch CLF_BATCH, fetches "logits" */
    int infer_threads;    /* infer's (speech_threads) */
    float *buf;           /* a batch of features [CLF_BATCH][feature_size] */
};

/* The model's graph on a batch of B clips' features: inputs "features" [B, 192] or "mel"
 * [B, 1, hops * 8, 32] (the input's name in *input), logits [B, nlabels] named "logits". */
ts_value clf_logits(ts_graph *g, const ts_audio_clf *c, int64_t B, const char **input);
/* The input's shape for B clips: its rank, shape written to shape[4]. */
int clf_input_shape(const ts_audio_clf *c, int64_t B, int64_t shape[4]);

#endif
