/*
 * speech_impl.h — internal to src/speech/: the pieces of the keyword spotter (openWakeWord's
 * pipeline) and of the voice activity detector (Silero VAD) that tests check on their own.
 *
 *   kws.c          ts_kws_new / ts_kws_feed: the streaming pipeline (mel frames, embeddings,
 *                  heads) and its buffers
 *   kws_heads.c    the keyword heads: files by keyword, labels of multi-class heads, scoring
 *   vad.c          ts_vad_*: Silero VAD on 512-sample chunks with its state carried
 *   vad_segments.c speech segments from per-chunk probabilities (Silero's get_speech_timestamps)
 */
#ifndef TS_SPEECH_IMPL_H
#define TS_SPEECH_IMPL_H

#include "tessera.h"

#define KWS_MELS 32      /* mel bands */
#define KWS_WINDOW 76    /* mel frames an embedding reads */
#define KWS_STEP 8       /* mel frames per 80 ms hop */
#define KWS_CONTEXT 480  /* samples before each hop the mel model also reads (3 frames of 160) */
#define KWS_EMB 96       /* embedding size */

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
} kws_head;

/* Open head `keyword` in dir (keyword_v0.1.onnx, else keyword.onnx) and compile it once. Errors
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

#endif
