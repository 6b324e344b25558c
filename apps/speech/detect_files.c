/*
 * detect_files.c — the speech pipelines on an audio file by name (tessera_speech.h): the file read
 * at 16 kHz, or "-" for raw 16 kHz s16 mono on standard input, and what is found handed to a
 * callback as it is found.
 */
#include "common/app.h"

#include <errno.h>
#include <stdio.h>

#define RATE 16000

/* Audio at 16 kHz from path, or with "-" all of standard input as raw s16; NULL with TS_ERR_IO set
 * (the reader's message, naming the file). */
static ts_audio *read_audio(const char *path) {
    ts_audio *a;
    if (strcmp(path, "-") != 0) {
        a = ts_audio_read(path, RATE);
    } else {
        size_t n = 0;
        char *buf = ts_read_file("/dev/stdin", &n);
        if (!buf) ts_set_error(TS_ERR_IO, "standard input: %s", strerror(errno));
        a = buf ? ts_audio_from_s16(buf, n & ~(size_t)1, RATE) : NULL;
        free(buf);
    }
    if (!a && ts_last_status() != TS_ERR_IO) ts_set_error(TS_ERR_IO, "%s", ts_last_error());
    return a;
}

/* The pipeline's error on path, prefixed with it; its status. */
static ts_status failed_on(const char *path) {
    return ts_set_error(ts_last_status(), "%s: %s", path, ts_last_error());
}

/* Up to cap (at most TS_KWS_HOP) samples of raw s16 from standard input into x, waiting until cap
 * samples or the end have come: how many, -1 on a read error. */
static int64_t read_s16(float *x, int64_t cap) {
    uint8_t raw[2 * TS_KWS_HOP];
    size_t got = fread(raw, 2, (size_t)cap, stdin);
    for (size_t i = 0; i < got; i++) x[i] = (int16_t)(uint16_t)(raw[2 * i] | raw[2 * i + 1] << 8) / 32768.0f;
    return got < (size_t)cap && ferror(stdin) ? -1 : (int64_t)got;
}

/* Each of det[n] to fn, by the name of its label in k. */
static void hand_over(ts_kws *k, const ts_kws_detection *det, int64_t n, ts_kws_detection_fn fn, void *ctx) {
    for (int64_t i = 0; i < n; i++) fn(ctx, ts_kws_label(k, det[i].label), &det[i]);
}

/* Standard input through k and d as it comes, 80 ms at a time, between 1 s of silence each side as
 * a file has (ts_kws_detect_start, ts_kws_detect_finish): the same frames, the same scores. */
static ts_status detect_stdin(ts_kws *k, ts_kws_detector *d, ts_kws_detection_fn fn, void *ctx) {
    const ts_kws_detection *det;
    int64_t nd, n = 0;
    float x[TS_KWS_HOP];
    ts_status st = ts_kws_detect_start(k, d, &det, &nd);
    if (!st) hand_over(k, det, nd, fn, ctx);
    while (!st && (n = read_s16(x, TS_KWS_HOP)) > 0 && !(st = ts_kws_detect(k, d, x, n, &det, &nd)))
        hand_over(k, det, nd, fn, ctx);
    if (!st && n < 0) return ts_set_error(TS_ERR_IO, "standard input: %s", strerror(errno));
    if (!st && !(st = ts_kws_detect_finish(k, d, &det, &nd))) hand_over(k, det, nd, fn, ctx);
    return st ? failed_on("-") : TS_OK;
}

ts_status ts_kws_detect_file(ts_kws *k, ts_kws_detector *d, const char *path, ts_kws_detection_fn fn, void *ctx) {
    if (!k || !d || !path || !fn) return ts_set_error(TS_ERR_ARG, "ts_kws_detect_file: bad arguments");
    if (!strcmp(path, "-")) return detect_stdin(k, d, fn, ctx);
    ts_audio *a = read_audio(path);
    if (!a) return TS_ERR_IO;
    const ts_kws_detection *det;
    int64_t nd;
    ts_status st = ts_kws_detect_clip(k, d, a->samples, a->n, &det, &nd);
    ts_audio_free(a);
    if (st) return failed_on(path);
    hand_over(k, det, nd, fn, ctx);
    return TS_OK;
}

ts_status ts_audio_clf_scan_file(ts_audio_clf *c, const char *path, float threshold, ts_kws_detection_fn fn,
                                 void *ctx) {
    if (!c || !path || !fn) return ts_set_error(TS_ERR_ARG, "ts_audio_clf_scan_file: bad arguments");
    ts_audio *a = read_audio(path);
    if (!a) return TS_ERR_IO;
    ts_kws_detection *det;
    int64_t n = ts_audio_clf_scan(c, a->samples, a->n, threshold, &det);
    ts_audio_free(a);
    if (n < 0) return failed_on(path);
    for (int64_t i = 0; i < n; i++) fn(ctx, ts_audio_clf_label(c, det[i].label), &det[i]);
    free(det);
    return TS_OK;
}

ts_status ts_vad_detect_file(ts_vad *v, const char *path, const ts_vad_params *params, ts_vad_segment_fn fn,
                             void *ctx) {
    if (!v || !path || !fn) return ts_set_error(TS_ERR_ARG, "ts_vad_detect_file: bad arguments");
    ts_audio *a = read_audio(path);
    if (!a) return TS_ERR_IO;
    ts_vad_segment *segs;
    int n = ts_vad_detect(v, a->samples, a->n, params, &segs);
    ts_audio_free(a);
    if (n < 0) return failed_on(path);
    for (int i = 0; i < n; i++) fn(ctx, &segs[i]);
    free(segs);
    return TS_OK;
}
