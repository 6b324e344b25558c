/*
 * tessera_speech.h — audio in (files and raw streams, mixed to mono and resampled to 16 kHz) and
 * the speech pipelines built on imported ONNX models: keyword spotting (openWakeWord) and voice
 * activity (Silero VAD).
 * Part of the public API; include "tessera.h", which includes every part. */
#ifndef TESSERA_SPEECH_H
#define TESSERA_SPEECH_H

#include "tessera_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- audio (src/audio/)
 * Audio files read through libsndfile (WAV with PCM 16/24/32-bit or float samples, FLAC, Ogg
 * Vorbis, and whatever else the installed libsndfile reads), mixed down to mono (the mean of the
 * channels) and resampled with libsamplerate (SRC_SINC_MEDIUM_QUALITY) to the rate asked for.
 * Samples are floats in [-1, 1] as libsndfile scales them. */

typedef struct ts_audio {
    int rate;        /* samples per second of `samples` (the rate asked for) */
    int64_t n;       /* number of samples */
    float *samples;  /* n mono samples */
} ts_audio;

/* Files longer than this are refused before their samples are read (one hour). */
#define TS_AUDIO_MAX_SECONDS 3600

/* Read an audio file (or bytes; `what` names them in messages) as mono at `rate` samples per
 * second (16000 for the speech models). NULL, with ts_last_error() naming the file, when it
 * cannot be opened, is not audio libsndfile knows, is cut short or lies about its size, has no
 * samples, a sample rate of 0, or lasts longer than TS_AUDIO_MAX_SECONDS. */
TS_API ts_audio *ts_audio_read(const char *path, int rate);
TS_API ts_audio *ts_audio_decode(const void *data, size_t n, const char *what, int rate);
/* Raw little-endian signed 16-bit mono samples at `rate` (what `arecord -f S16_LE -r 16000`
 * writes), converted to floats in [-1, 1); n_bytes must be even (0 gives an empty ts_audio, n = 0). */
TS_API ts_audio *ts_audio_from_s16(const void *data, size_t n_bytes, int rate);
/* Write mono 16-bit PCM WAV, atomically; samples beyond [-1, 1] are clipped. */
TS_API ts_status ts_audio_write_wav(const ts_audio *a, const char *path);
TS_API void ts_audio_free(ts_audio *a);

/* ---------------------------------------------------------------- keyword spotting (src/speech/)
 * openWakeWord's streaming pipeline on its ONNX models: melspectrogram.onnx on 16 kHz audio,
 * embedding_model.onnx (Google's speech embedding) every 80 ms on the last 76 mel frames, and
 * keyword heads (alexa_v0.1.onnx, hey_jarvis_v0.1.onnx, ...) on the last 16 (or as many as the
 * head's input declares) embeddings. One score per label every 80 ms (1280 samples); a head with
 * several classes (timer_v0.1) gives one label per class other than its background class 0,
 * named as the model's output name maps them. Feeding audio in pieces of any size gives the
 * same scores as feeding it at once. */

typedef struct ts_kws ts_kws;

typedef struct ts_kws_opts {
    size_t struct_size;           /* sizeof(ts_kws_opts) */
    const char *models_dir;       /* melspectrogram.onnx, embedding_model.onnx and the heads */
    const char *const *keywords;  /* heads by name ("hey_jarvis" loads hey_jarvis_v0.1.onnx, or
                                     hey_jarvis.onnx); NULL: every head of TS_KWS_KEYWORDS;
                                     non-NULL with nkeywords 0: the front end alone (no labels;
                                     ts_kws_features gives its output) */
    int nkeywords;
    int num_threads;              /* 0: OpenMP's default */
} ts_kws_opts;

/* The heads openWakeWord ships, comma separated (for usage text and errors). */
#define TS_KWS_KEYWORDS "alexa,hey_jarvis,hey_mycroft,hey_rhasspy,weather,timer"
/* Samples (at 16 kHz) per score frame: 80 ms. */
#define TS_KWS_HOP 1280

/* Load the models (each compiled once, for fixed shapes). NULL with ts_last_error() naming the
 * file, or the unknown keyword and the known ones. */
TS_API ts_kws *ts_kws_new(const ts_kws_opts *opts);
TS_API void ts_kws_free(ts_kws *k);
/* The labels scored, in order: one per single-output head (its keyword), one per class of a
 * multi-class head. */
TS_API int ts_kws_num_labels(const ts_kws *k);
TS_API const char *ts_kws_label(const ts_kws *k, int i);
/* Feed n samples x[n] of 16 kHz mono audio in [-1, 1] (ts_audio's scale). Every time 1280
 * samples have gathered, one frame of scores is made: *scores (owned by k, valid until the next
 * call) receives *nframes frames of ts_kws_num_labels scores each, [nframes][nlabels], in (0, 1);
 * the scores of the first 5 frames after ts_kws_new or ts_kws_reset are 0 (as openWakeWord). */
TS_API ts_status ts_kws_feed(ts_kws *k, const float *x, int64_t n, const float **scores, int64_t *nframes);
/* Forget the audio fed so far: the next feed starts as after ts_kws_new. */
TS_API void ts_kws_reset(ts_kws *k);
/* The front end's output for the frames of the last ts_kws_feed (owned by k, valid until the next
 * call; either pointer may be NULL): *mel [nframes][8][32] the mel frames each 80 ms hop added
 * (x 1/10 + 2, as the embedding reads them), *emb [nframes][96] the embedding of each frame. */
TS_API ts_status ts_kws_features(const ts_kws *k, const float **mel, const float **emb, int64_t *nframes);

/* ---------------------------------------------------------------- voice activity (src/speech/)
 * Silero VAD v5 (silero_vad.onnx) streaming at 16 kHz: chunks of 512 samples (32 ms), each with
 * the 64 samples before it as context (zeros before the first), its LSTM state [2, 1, 128]
 * carried from chunk to chunk inside the ONNX session; one speech probability per chunk. */

typedef struct ts_vad ts_vad;

typedef struct ts_vad_opts {
    size_t struct_size;  /* sizeof(ts_vad_opts) */
    const char *model;   /* silero_vad.onnx (its sample-rate input is fixed to 16000) */
    int num_threads;     /* 0: OpenMP's default */
} ts_vad_opts;

/* Samples (at 16 kHz) per probability: 32 ms. */
#define TS_VAD_CHUNK 512

/* Load and compile the model once. NULL with ts_last_error() naming the file. */
TS_API ts_vad *ts_vad_new(const ts_vad_opts *opts);
TS_API void ts_vad_free(ts_vad *v);
/* Forget the audio fed so far (state and context back to zeros). */
TS_API void ts_vad_reset(ts_vad *v);
/* Feed n samples x[n] of 16 kHz mono audio in [-1, 1]; every 512 gathered give one speech
 * probability: *probs (owned by v, valid until the next call) receives *nchunks of them.
 * ts_vad_finish: the samples left (fewer than 512) padded with zeros into a last chunk, as
 * Silero's get_speech_timestamps pads the end of a clip (none when nothing is left). */
TS_API ts_status ts_vad_feed(ts_vad *v, const float *x, int64_t n, const float **probs, int64_t *nchunks);
TS_API ts_status ts_vad_finish(ts_vad *v, const float **probs, int64_t *nchunks);

/* Silero's post-processing (get_speech_timestamps, without a maximum speech duration). Zeros
 * take the defaults in brackets. */
typedef struct ts_vad_params {
    float threshold;      /* speech starts at a probability >= threshold (0.5) */
    float neg_threshold;  /* and may end below neg_threshold (threshold - 0.15, at least 0.01) */
    int min_speech_ms;    /* shorter segments are dropped (250) */
    int min_silence_ms;   /* a segment ends after this long below neg_threshold (100) */
    int speech_pad_ms;    /* each segment widened by this much each side, at most half the gap
                             to the next (30) */
} ts_vad_params;

typedef struct ts_vad_segment {
    int64_t start, end;   /* in samples: [start, end) */
} ts_vad_segment;

/* The speech segments of a clip of nsamples samples from its probabilities probs[nchunks] (one
 * per 512 samples, chunk i starting at sample 512 i). params NULL: the defaults. Returns the
 * count (-1 with ts_last_error() on bad arguments or out of memory); *segs is malloc'ed (NULL
 * for none), free it with free(). */
TS_API int ts_vad_segments(const float *probs, int64_t nchunks, int64_t nsamples, const ts_vad_params *params,
                           ts_vad_segment **segs);

/* ---------------------------------------------------------------- audio classifier (src/speech/)
 * A classifier of short clips (spoken digits, commands) trained with tessera on one of two front
 * ends, both openWakeWord's models run as ts_kws runs them on each clip from a fresh stream
 * (clip_samples of 16 kHz audio: the clip cut, or padded with zeros at its end):
 *   TS_AUDIO_CLF_EMBEDDING  the frozen pretrained front end: the clip's embeddings (one per 80 ms
 *                           hop, [hops][96]) pooled into their mean and max over time, 192
 *                           features; the head: 192 -> 64 -> ReLU -> labels (logits)
 *   TS_AUDIO_CLF_SCRATCH    the log-mel frames alone ([1, hops * 8, 32], not learned); a small
 *                           CNN from random weights: three 3x3 convolutions (16, 32, 32 channels,
 *                           each with ReLU and 2x2 max pooling), flattened, -> labels
 * A model directory holds config.json (kind "audio-classifier", front_end, labels, clip_samples,
 * rate) and model.safetensors (the head's or CNN's parameters, f32). */

typedef struct ts_audio_clf ts_audio_clf;

typedef enum { TS_AUDIO_CLF_EMBEDDING = 0, TS_AUDIO_CLF_SCRATCH = 1 } ts_audio_clf_kind;

typedef struct ts_audio_clf_opts {
    size_t struct_size;         /* sizeof(ts_audio_clf_opts) */
    const char *models_dir;     /* holding melspectrogram.onnx and embedding_model.onnx */
    ts_audio_clf_kind kind;
    int nlabels;                /* at least 2 */
    const char *const *labels;  /* nlabels names */
    int clip_samples;           /* 0: TS_AUDIO_CLF_CLIP; a multiple of TS_KWS_HOP */
    uint64_t seed;              /* the initial weights' */
    int num_threads;            /* 0: OpenMP's default */
} ts_audio_clf_opts;

/* The default clip: 16 hops of 80 ms, 1.28 s (the longest spoken digit of
 * tools/make_spoken_digits.sh is 1.2 s; 16 windows are one batch of the embedding model). */
#define TS_AUDIO_CLF_CLIP (16 * TS_KWS_HOP)

/* A new, untrained classifier (front end loaded, weights drawn from seed). NULL with
 * ts_last_error() naming the model file or the option at fault. */
TS_API ts_audio_clf *ts_audio_clf_new(const ts_audio_clf_opts *opts);
TS_API void ts_audio_clf_free(ts_audio_clf *c);
TS_API int ts_audio_clf_num_labels(const ts_audio_clf *c);
TS_API const char *ts_audio_clf_label(const ts_audio_clf *c, int i);
TS_API ts_audio_clf_kind ts_audio_clf_get_kind(const ts_audio_clf *c);
TS_API int ts_audio_clf_clip_samples(const ts_audio_clf *c);
/* Features per clip: 192 (embedding) or hops * 8 * 32 (scratch). */
TS_API int64_t ts_audio_clf_feature_size(const ts_audio_clf *c);
/* The front end on one clip x[n] (16 kHz, [-1, 1]) into feat[ts_audio_clf_feature_size]. */
TS_API ts_status ts_audio_clf_features(ts_audio_clf *c, const float *x, int64_t n, float *feat);

typedef struct ts_audio_clf_train_opts {
    size_t struct_size;  /* sizeof(ts_audio_clf_train_opts) */
    int epochs;          /* 0: 60 (embedding) or 20 (scratch) */
    float lr;            /* AdamW's peak learning rate, cosine-decayed to 0; 0: 2e-3 */
    int batch;           /* clips a step; 0: 32 */
    uint64_t seed;       /* the shuffling's */
} ts_audio_clf_train_opts;

/* Train on n clips' features feat[n][feature_size] with labels y[n] in [0, nlabels): AdamW
 * (weight decay 0.01), cross-entropy, shuffled batches. *loss (may be NULL): the last epoch's
 * mean. Deterministic for the seeds and thread count. */
TS_API ts_status ts_audio_clf_train(ts_audio_clf *c, int64_t n, const float *feat, const int *y,
                                    const ts_audio_clf_train_opts *opts, double *loss);
/* Class probabilities (softmax of the logits) of n clips' features into probs[n][nlabels]. */
TS_API ts_status ts_audio_clf_predict(ts_audio_clf *c, int64_t n, const float *feat, float *probs);
/* Write the model directory dir atomically (a sibling directory renamed over it; an existing dir
 * holding other files than the model's is an error). */
TS_API ts_status ts_audio_clf_save(const ts_audio_clf *c, const char *dir);
/* Read a model directory; NULL with ts_last_error() naming the file at fault. */
TS_API ts_audio_clf *ts_audio_clf_load(const char *dir, const char *models_dir, int num_threads);
/* Is dir a model directory of ts_audio_clf_save (its config.json's kind)? */
TS_API int ts_audio_clf_is_dir(const char *dir);
/* Export the head (embedding: input "features" [1, 192]) or the CNN (scratch: input "mel"
 * [1, 1, hops * 8, 32]) as ONNX (opset 17), output "logits" [1, nlabels]. */
TS_API ts_status ts_audio_clf_export_onnx(ts_audio_clf *c, const char *path);

#ifdef __cplusplus
}
#endif
#endif
