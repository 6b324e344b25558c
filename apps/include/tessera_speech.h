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

/* ---------------------------------------------------------------- audio (apps/audio/)
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

/* ---------------------------------------------------------------- keyword spotting (apps/speech/)
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
    int num_threads;              /* 0: chosen per model from the size of its run (ts_kws_threads) */
    const char *keyword_list;     /* when keywords is NULL: the heads by name separated by commas
                                     ("alexa,hey_jarvis"; an empty name is TS_ERR_ARG); NULL: all */
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
/* The worker threads k's programs were compiled with, into threads[4]: [0] the mel model, [1] the
 * embedding model on one window (a stream fed 80 ms at a time), [2] the embedding model on a batch
 * of 16 windows, [3] the heads (the most of them, 0 counting as the most; 0 when there are none).
 * Each is num_threads when that was given (> 0); with num_threads 0, 1 for a program whose run
 * takes fewer than 32768 input values (the mel model's 1760 samples, one window's 76 x 32, a
 * head's 16 x 96: nodes so small that OpenMP's fork and join at each costs more than a second
 * thread gains, and far more on a busy machine), 0 (OpenMP's default) for a larger one (the batch
 * of 16 windows, 38912 values). TS_ERR_ARG for a NULL argument. */
TS_API ts_status ts_kws_threads(const ts_kws *k, int threads[4]);
/* The front end's output for the frames of the last ts_kws_feed (owned by k, valid until the next
 * call; either pointer may be NULL): *mel [nframes][8][32] the mel frames each 80 ms hop added
 * (x 1/10 + 2, as the embedding reads them), *emb [nframes][96] the embedding of each frame. */
TS_API ts_status ts_kws_features(const ts_kws *k, const float **mel, const float **emb, int64_t *nframes);

/* ---------------------------------------------------------------- voice activity (apps/speech/)
 * Silero VAD v5 (silero_vad.onnx) streaming at 16 kHz: chunks of 512 samples (32 ms), each with
 * the 64 samples before it as context (zeros before the first), its LSTM state [2, 1, 128]
 * carried from chunk to chunk inside the ONNX session; one speech probability per chunk. */

typedef struct ts_vad ts_vad;

typedef struct ts_vad_opts {
    size_t struct_size;  /* sizeof(ts_vad_opts) */
    const char *model;   /* silero_vad.onnx (its sample-rate input is fixed to 16000) */
    int num_threads;     /* 0: chosen from the size of its run: 1 (ts_vad_threads) */
} ts_vad_opts;

/* Samples (at 16 kHz) per probability: 32 ms. */
#define TS_VAD_CHUNK 512

/* Load and compile the model once. NULL with ts_last_error() naming the file. */
TS_API ts_vad *ts_vad_new(const ts_vad_opts *opts);
TS_API void ts_vad_free(ts_vad *v);
/* The worker threads v's model was compiled with: num_threads when given (> 0), else by the rule
 * of ts_kws_threads on its run (a chunk with its context and state, 832 values): 1. -1 for NULL. */
TS_API int ts_vad_threads(const ts_vad *v);
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

/* ---------------------------------------------------------------- audio classifier (apps/speech/)
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
    int num_threads;            /* 0: OpenMP's default for training; inference programs chosen
                                   from the size of their run (ts_audio_clf_threads) */
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
/* The worker threads c's inference programs were compiled with, into threads[4]: its front end's
 * as ts_kws_threads gives them ([0] mel, [1] one window, [2] a batch of 16 windows), [3] the
 * head's or CNN's on a batch of 32 clips' features, by ts_kws_threads's rule (embedding: 32 x 192
 * values, 1 thread; scratch: 32 x hops x 256 values, 0 (OpenMP's default) for clips of 4 hops,
 * 320 ms, and longer). num_threads when it was given (> 0). TS_ERR_ARG for a NULL argument. */
TS_API ts_status ts_audio_clf_threads(const ts_audio_clf *c, int threads[4]);
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
/* The most probable label of each of n clips' features feat[n][feature_size] into guess[n]
 * (ts_audio_clf_predict, then the largest; the first of equals). */
TS_API ts_status ts_audio_clf_guess(ts_audio_clf *c, int64_t n, const float *feat, int *guess);

/* How a classifier does on a labelled set (ts_audio_clf_evaluate); the arrays hold one entry per
 * label of the model, a clip's label matched to the model's by name. */
typedef struct ts_audio_clf_eval {
    int clips, right;     /* the set's clips, and those whose most probable label is theirs */
    int unknown;          /* clips whose label is not one of the model's */
    int *label_clips;     /* the clips of each label */
    int *label_right;     /* ... taken for it */
    int *label_confused;  /* the label its other clips were most often taken for (-1: none) */
} ts_audio_clf_eval;

/* What ts_audio_clf_fit did. */
typedef struct ts_audio_clf_fit_report {
    double features_s, train_s;  /* seconds computing the clips' features, training */
    double loss;                 /* the last epoch's mean */
    double accuracy;             /* the share of the clips whose most probable label is theirs */
} ts_audio_clf_fit_report;

/* ---------------------------------------------------------------- labelled audio (apps/speech/audio_set.c)
 * A set of labelled clips, as an audio classifier is trained and scored on: a folder holding one
 * folder per label (its name), each holding audio files, or a TSV file of "path<TAB>label" lines. */

typedef struct ts_audio_set {
    int n, nlabels;
    char **path;     /* n clips' paths (a TSV's relative paths joined to the TSV's folder) */
    int *label;      /* n labels: indices into labels */
    char **labels;   /* nlabels names, sorted (strcmp) */
    /* Fields below are added at the end (the set is allocated by ts_audio_set_load only). */
    int64_t *samples; /* n clips' lengths in samples at 16 kHz, as ts_audio_set_features (also
                         through ts_audio_clf_fit, ts_audio_clf_evaluate) last read them; -1
                         before (a clip longer than the classifier's clip was cut); may be NULL */
} ts_audio_set;

/* Read data: a folder of label folders (names starting with '.' skipped; files sorted by name,
 * labels too, so a seed gives the same run; a label folder without files is an error), or a TSV
 * of "path<TAB>label" lines (paths relative to the TSV's folder unless absolute; an optional
 * header line "path<TAB>label"; blank lines skipped). The set is the caller's
 * (ts_audio_set_free). NULL with the error set: TS_ERR_ARG "DATA: reason" when data cannot be
 * read or holds no clips, "DATA/LABEL: an empty label folder ..." for a label folder without
 * files, "DATA:LINE: wants PATH<TAB>LABEL" for a TSV line that is not a path and a label;
 * TS_ERR_NOMEM. Thread: any. */
TS_API ts_audio_set *ts_audio_set_load(const char *data);
TS_API void ts_audio_set_free(ts_audio_set *s);
/* The index of label `name` in s->labels, or -1. */
TS_API int ts_audio_set_find(const ts_audio_set *s, const char *name);
/* The classifier's features of every clip of s (ts_audio_read at 16 kHz, then
 * ts_audio_clf_features; each clip's length recorded in s->samples): a malloc'd array
 * [n][ts_audio_clf_feature_size] (free()). NULL with the error set: TS_ERR_ARG "a clip: ..."
 * naming a clip that cannot be read; TS_ERR_NOMEM; the features' own error. */
TS_API float *ts_audio_set_features(ts_audio_clf *c, const ts_audio_set *s);
/* A new classifier (ts_audio_clf_new with opts, its labels s's) trained on s's clips (their
 * features, then ts_audio_clf_train with topts); *report (may be NULL) says how it went. The
 * classifier is the caller's. NULL with the error set: ts_audio_clf_new's (TS_ERR_IO for a missing
 * front end), ts_audio_set_features's (TS_ERR_ARG naming a clip), training's ("training: ..."). */
TS_API ts_audio_clf *ts_audio_clf_fit(const ts_audio_clf_opts *opts, const ts_audio_set *s,
                                      const ts_audio_clf_train_opts *topts, ts_audio_clf_fit_report *report);
/* Classifier c on s: every clip's most probable label against its own, into *out (its arrays the
 * caller's: ts_audio_clf_eval_free). The errors of ts_audio_set_features (TS_ERR_ARG naming a
 * clip) and ts_audio_clf_guess; out is then empty. */
TS_API ts_status ts_audio_clf_evaluate(ts_audio_clf *c, const ts_audio_set *s, ts_audio_clf_eval *out);
TS_API void ts_audio_clf_eval_free(ts_audio_clf_eval *e);

/* ---------------------------------------------------------------- detections (apps/speech/detect.c) */

/* Silence fed before and after a clip (ts_kws_detect_clip): 1 s, as openWakeWord's predict_clip. */
#define TS_KWS_PAD 16000

/* A keyword (label) found in a stream. */
typedef struct ts_kws_detection {
    int label;        /* index of the label: ts_kws_label, or ts_audio_clf_label */
    float score;      /* its score (probability) */
    int64_t frame;    /* the frame (window) it fired at, from the start of the stream */
    double time;      /* seconds from the start of the audio: the end of the 80 ms frame, less the
                         silence fed before the audio, at least 0 (ts_audio_clf_scan: the window's start) */
} ts_kws_detection;

/* The firing rule over a stream of score frames: label j fires at a frame whose score reaches the
 * threshold when its score at the frame before was below it (or the frame is the stream's first),
 * and then not again until its score has fallen below the threshold, nor within the refractory
 * period after it fired: at the ceil(R / 0.08) frames after a detection at frame f (f + 1 ..
 * f + ceil(R / 0.08)) label j does not fire, as openWakeWord's Model.predict(debounce_time = R)
 * zeroes them; other labels are not held back. */
typedef struct ts_kws_detector ts_kws_detector;

/* The refractory period R of a new detector, in seconds. openWakeWord's Model.predict has it off
 * by default (debounce_time = 0.0) and leaves it to the caller; its own test of the option
 * (tests/test_models.py, test_models_with_debounce) takes debounce_time = 1.25 and wants one spoken
 * "alexa" to fire once. 1.25 s is taken here: it is longer than the 0.16-0.40 s between the
 * repeats one word makes in noise, and shorter than saying the wake word twice. */
#define TS_KWS_REFRACTORY 1.25

/* A detector of nlabels labels (>= 1) firing at threshold (> 0), its refractory period
 * TS_KWS_REFRACTORY. NULL with the error set (TS_ERR_ARG, TS_ERR_NOMEM). Free it with
 * ts_kws_detector_free. Thread: one stream at a time. */
TS_API ts_kws_detector *ts_kws_detector_new(int nlabels, float threshold);
TS_API void ts_kws_detector_free(ts_kws_detector *d);
/* Set d's refractory period to `seconds` (0 to TS_AUDIO_MAX_SECONDS; 0: none, a label may fire
 * again as soon as its score has dipped below the threshold). Applies from the next frame fed;
 * kept across ts_kws_detector_reset. TS_ERR_ARG (d unchanged) for a NULL d or seconds out of range
 * (NaN included). */
TS_API ts_status ts_kws_detector_set_refractory(ts_kws_detector *d, double seconds);
/* Start a new stream: no label above the threshold nor resting, the peaks 0, frames counted from 0; `lead`
 * samples of silence (at 16 kHz) are fed before the audio (the detections' times are counted
 * after them). */
TS_API void ts_kws_detector_reset(ts_kws_detector *d, int64_t lead);
/* Apply the rule to nframes frames of scores [nframes][nlabels]: *det (owned by d, valid until the
 * next call on d) receives the *ndet detections among them, in frame then label order. */
TS_API ts_status ts_kws_detector_feed(ts_kws_detector *d, const float *scores, int64_t nframes,
                                      const ts_kws_detection **det, int64_t *ndet);
/* The highest score of each label since the reset ([nlabels], owned by d). */
TS_API const float *ts_kws_detector_peaks(const ts_kws_detector *d);
/* Audio through the keyword spotter k (ts_kws_feed) and its scores through d (of k's labels):
 * *det and *ndet as ts_kws_detector_feed. A stream: ts_kws_detect_start, ts_kws_detect on each
 * piece, then ts_kws_detect_finish, which feeds TS_KWS_PAD samples of silence so that a keyword
 * at the very end is scored. ts_kws_detect_start resets k and d (lead TS_KWS_PAD) and feeds
 * TS_KWS_PAD samples of silence, as ts_kws_detect_clip begins: a stream so started, fed the
 * clip's samples, is scored on the same 80 ms grid as the clip, with the same scores and times
 * (up to the last bits that batching the embedding model may change; see ts_kws_feed). */
TS_API ts_status ts_kws_detect_start(ts_kws *k, ts_kws_detector *d, const ts_kws_detection **det, int64_t *ndet);
TS_API ts_status ts_kws_detect(ts_kws *k, ts_kws_detector *d, const float *x, int64_t n,
                               const ts_kws_detection **det, int64_t *ndet);
TS_API ts_status ts_kws_detect_finish(ts_kws *k, ts_kws_detector *d, const ts_kws_detection **det, int64_t *ndet);
/* A whole clip x[n]: k and d reset, TS_KWS_PAD samples of silence, the clip, TS_KWS_PAD of silence
 * (as openWakeWord's predict_clip); every detection of the clip into *det (owned by d). */
TS_API ts_status ts_kws_detect_clip(ts_kws *k, ts_kws_detector *d, const float *x, int64_t n,
                                    const ts_kws_detection **det, int64_t *ndet);

/* An audio classifier over a clip x[n] of any length: a window of its clip length every
 * TS_AUDIO_CLF_SCAN_STEP samples from the start (the last ones cut at the end of x, padded by the
 * front end); a window quieter than RMS 0.01 (about -40 dBFS) is skipped as silence. A window
 * whose most probable label reaches the threshold reports it (time: the window's start), unless
 * the window before reported the same label. Returns the count of detections, *det malloc'd (free();
 * NULL for none), or -1 with the error set. */
#define TS_AUDIO_CLF_SCAN_STEP (4 * TS_KWS_HOP)
TS_API int64_t ts_audio_clf_scan(ts_audio_clf *c, const float *x, int64_t n, float threshold, ts_kws_detection **det);

/* Voice activity over a whole clip x[n]: v reset, the clip fed and finished (ts_vad_feed,
 * ts_vad_finish), its speech segments (ts_vad_segments with params, NULL: the defaults). Returns
 * the count, *segs malloc'd (free(); NULL for none), or -1 with the error set. */
TS_API int ts_vad_detect(ts_vad *v, const float *x, int64_t n, const ts_vad_params *params, ts_vad_segment **segs);

/* ---------------------------------------------------------------- files (apps/speech/detect_files.c)
 * The pipelines on an audio file by name: read at 16 kHz (ts_audio_read), or with path "-"
 * standard input taken as raw little-endian s16 mono at 16 kHz (what `arecord -f S16_LE -r 16000
 * -c 1` writes). What is found goes to a callback as it is found. Each returns TS_OK; TS_ERR_IO
 * when the audio cannot be read (the reader's message, naming the file or "standard input"); else
 * the pipeline's status, its message prefixed with "PATH: ". */

/* A detection found; label is its name (ts_kws_label, ts_audio_clf_label). */
typedef void (*ts_kws_detection_fn)(void *ctx, const char *label, const ts_kws_detection *det);
/* A speech segment found. */
typedef void (*ts_vad_segment_fn)(void *ctx, const ts_vad_segment *seg);

/* Keywords in a file as a clip (ts_kws_detect_clip) or in standard input as it comes, 80 ms at a
 * time (a stream: ts_kws_detect_start, ts_kws_detect, then ts_kws_detect_finish: the same padding
 * and frames as the file), each detection given to fn at once; then ts_kws_detector_peaks(d) holds
 * the file's peaks. */
TS_API ts_status ts_kws_detect_file(ts_kws *k, ts_kws_detector *d, const char *path, ts_kws_detection_fn fn,
                                    void *ctx);
/* An audio classifier over a file (ts_audio_clf_scan; "-": all of standard input). */
TS_API ts_status ts_audio_clf_scan_file(ts_audio_clf *c, const char *path, float threshold, ts_kws_detection_fn fn,
                                        void *ctx);
/* Voice activity over a file (ts_vad_detect with params; "-": all of standard input). */
TS_API ts_status ts_vad_detect_file(ts_vad *v, const char *path, const ts_vad_params *params, ts_vad_segment_fn fn,
                                    void *ctx);

#ifdef __cplusplus
}
#endif
#endif
