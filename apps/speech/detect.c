/*
 * detect.c — what the speech pipelines find in a stream or a clip (tessera_speech.h): keywords by
 * openWakeWord's rule over the score frames (ts_kws_detector: fire on reaching the threshold, not
 * again until below it, nor within the refractory period after a detection), a clip scored with
 * 1 s of silence each side (ts_kws_detect_clip) and a stream padded as a clip (ts_kws_detect_start), an
 * audio classifier over sliding windows (ts_audio_clf_scan), and voice activity over a clip
 * (ts_vad_detect).
 */
#include "common/app.h"

#include <math.h>

#define RATE 16000
#define QUIET 0.01f /* RMS of a window skipped as silence (about -40 dBFS) */

struct ts_kws_detector {
    int nlabels;
    float threshold;
    int64_t lead, frames;
    int64_t quiet;        /* frames after a detection in which its label cannot fire again */
    float *peak;          /* per label */
    unsigned char *above; /* per label: the score was >= threshold at the last frame */
    int64_t *fired;       /* per label: the frame of its last detection (-1: none since the reset) */
    ts_kws_detection *det;
    int64_t ndet, cap;
};

static const float SILENCE[TS_KWS_PAD];

ts_kws_detector *ts_kws_detector_new(int nlabels, float threshold) {
    if (nlabels < 1 || !(threshold > 0))
        return ts_set_error(TS_ERR_ARG,
                            "ts_kws_detector_new: nlabels %d, threshold %g: want at least 1 label and a "
                            "threshold above 0",
                            nlabels, (double)threshold),
               NULL;
    ts_kws_detector *d = calloc(1, sizeof *d);
    if (d) {
        d->peak = calloc((size_t)nlabels, sizeof *d->peak), d->above = calloc((size_t)nlabels, 1);
        d->fired = malloc((size_t)nlabels * sizeof *d->fired);
    }
    if (!d || !d->peak || !d->above || !d->fired) {
        ts_kws_detector_free(d);
        return ts_set_error(TS_ERR_NOMEM, "out of memory"), NULL;
    }
    d->nlabels = nlabels, d->threshold = threshold;
    ts_kws_detector_set_refractory(d, TS_KWS_REFRACTORY);
    ts_kws_detector_reset(d, 0);
    return d;
}

ts_status ts_kws_detector_set_refractory(ts_kws_detector *d, double seconds) {
    if (!d || !(seconds >= 0 && seconds <= TS_AUDIO_MAX_SECONDS))
        return ts_set_error(TS_ERR_ARG, "ts_kws_detector_set_refractory: %g s: want 0 to %d seconds", seconds,
                            TS_AUDIO_MAX_SECONDS);
    /* whole frames, as openWakeWord counts them: ceil(debounce_time / 0.08); the 1e-9 keeps a
     * multiple of 80 ms (0.4 / 0.08 = 5.000000000000001) at its own count */
    d->quiet = (int64_t)ceil(seconds * RATE / TS_KWS_HOP - 1e-9);
    return TS_OK;
}

void ts_kws_detector_free(ts_kws_detector *d) {
    if (!d) return;
    free(d->peak), free(d->above), free(d->fired), free(d->det), free(d);
}

void ts_kws_detector_reset(ts_kws_detector *d, int64_t lead) {
    if (!d) return;
    d->lead = lead, d->frames = 0, d->ndet = 0;
    memset(d->peak, 0, (size_t)d->nlabels * sizeof *d->peak);
    memset(d->above, 0, (size_t)d->nlabels);
    for (int j = 0; j < d->nlabels; j++) d->fired[j] = -1;
}

const float *ts_kws_detector_peaks(const ts_kws_detector *d) { return d ? d->peak : NULL; }

/* The rule over nframes frames, its detections appended to d->det. */
static ts_status rule(ts_kws_detector *d, const float *s, int64_t nframes) {
    int L = d->nlabels;
    for (int64_t f = 0; f < nframes; f++, d->frames++)
        for (int j = 0; j < L; j++) {
            float v = s[f * L + j];
            if (v > d->peak[j]) d->peak[j] = v;
            int rested = d->fired[j] < 0 || d->frames - d->fired[j] > d->quiet;
            if (v >= d->threshold && !d->above[j] && rested) {
                if (d->ndet == d->cap) {
                    int64_t cap = d->cap ? 2 * d->cap : 16;
                    ts_kws_detection *p = realloc(d->det, (size_t)cap * sizeof *p);
                    if (!p) return ts_set_error(TS_ERR_NOMEM, "out of memory");
                    d->det = p, d->cap = cap;
                }
                double t = (double)((d->frames + 1) * TS_KWS_HOP - d->lead) / RATE;
                d->det[d->ndet++] = (ts_kws_detection){j, v, d->frames, t < 0 ? 0 : t};
                d->fired[j] = d->frames;
            }
            d->above[j] = v >= d->threshold;
        }
    return TS_OK;
}

ts_status ts_kws_detector_feed(ts_kws_detector *d, const float *scores, int64_t nframes, const ts_kws_detection **det,
                               int64_t *ndet) {
    if (!d || nframes < 0 || (nframes && !scores) || !det || !ndet)
        return ts_set_error(TS_ERR_ARG, "ts_kws_detector_feed: bad arguments");
    d->ndet = 0;
    ts_status st = rule(d, scores, nframes);
    *det = d->det, *ndet = d->ndet;
    return st;
}

/* x through k, its scores through the rule (detections appended). */
static ts_status detect_more(ts_kws *k, ts_kws_detector *d, const float *x, int64_t n) {
    const float *s;
    int64_t nf;
    if (ts_kws_num_labels(k) != d->nlabels)
        return ts_set_error(TS_ERR_ARG, "ts_kws_detect: the detector has %d labels, the keyword spotter %d", d->nlabels,
                            ts_kws_num_labels(k));
    ts_status st = ts_kws_feed(k, x, n, &s, &nf);
    return st ? st : rule(d, s, nf);
}

ts_status ts_kws_detect(ts_kws *k, ts_kws_detector *d, const float *x, int64_t n, const ts_kws_detection **det,
                        int64_t *ndet) {
    if (!k || !d || !det || !ndet) return ts_set_error(TS_ERR_ARG, "ts_kws_detect: bad arguments");
    d->ndet = 0;
    ts_status st = detect_more(k, d, x, n);
    *det = d->det, *ndet = d->ndet;
    return st;
}

ts_status ts_kws_detect_finish(ts_kws *k, ts_kws_detector *d, const ts_kws_detection **det, int64_t *ndet) {
    return ts_kws_detect(k, d, SILENCE, TS_KWS_PAD, det, ndet);
}

ts_status ts_kws_detect_start(ts_kws *k, ts_kws_detector *d, const ts_kws_detection **det, int64_t *ndet) {
    if (!k || !d || !det || !ndet) return ts_set_error(TS_ERR_ARG, "ts_kws_detect_start: bad arguments");
    ts_kws_reset(k);
    ts_kws_detector_reset(d, TS_KWS_PAD);
    return ts_kws_detect(k, d, SILENCE, TS_KWS_PAD, det, ndet);
}

ts_status ts_kws_detect_clip(ts_kws *k, ts_kws_detector *d, const float *x, int64_t n, const ts_kws_detection **det,
                             int64_t *ndet) {
    if (!k || !d || !det || !ndet) return ts_set_error(TS_ERR_ARG, "ts_kws_detect_clip: bad arguments");
    ts_status st = ts_kws_detect_start(k, d, det, ndet);
    if (!st) st = detect_more(k, d, x, n);
    if (!st) st = detect_more(k, d, SILENCE, TS_KWS_PAD);
    *det = d->det, *ndet = d->ndet;
    return st;
}

/* One window of the scan at sample s: its features and most probable label into *best, *p the
 * probabilities; *best -1 for a quiet window. */
static ts_status scan_window(ts_audio_clf *c, const float *x, int64_t n, float *feat, float *p, int *best) {
    int clip = ts_audio_clf_clip_samples(c), L = ts_audio_clf_num_labels(c);
    double e = 0;
    for (int64_t i = 0; i < n; i++) e += (double)x[i] * x[i];
    *best = -1;
    if (sqrt(e / clip) < QUIET) return TS_OK;
    ts_status st = ts_audio_clf_features(c, x, n, feat);
    if (!st) st = ts_audio_clf_predict(c, 1, feat, p);
    if (st) return st;
    *best = 0;
    for (int j = 1; j < L; j++) *best = p[j] > p[*best] ? j : *best;
    return TS_OK;
}

int64_t ts_audio_clf_scan(ts_audio_clf *c, const float *x, int64_t n, float threshold, ts_kws_detection **det) {
    if (!c || !det || n < 0 || (n && !x)) return ts_set_error(TS_ERR_ARG, "ts_audio_clf_scan: bad arguments"), -1;
    *det = NULL;
    int clip = ts_audio_clf_clip_samples(c), last = -1, best;
    float *feat = malloc((size_t)ts_audio_clf_feature_size(c) * sizeof(float));
    float *p = malloc((size_t)ts_audio_clf_num_labels(c) * sizeof(float));
    ts_status st = feat && p ? TS_OK : ts_set_error(TS_ERR_NOMEM, "out of memory");
    int64_t nd = 0, cap = 0, w = 0;
    for (int64_t s = 0; !st && s < n; s += TS_AUDIO_CLF_SCAN_STEP, w++) {
        if ((st = scan_window(c, x + s, n - s < clip ? n - s : clip, feat, p, &best))) break;
        int fire = best >= 0 && p[best] >= threshold ? best : -1;
        if (fire >= 0 && fire != last) {
            if (nd == cap) {
                ts_kws_detection *q = realloc(*det, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *q);
                if (!q) {
                    st = ts_set_error(TS_ERR_NOMEM, "out of memory");
                    break;
                }
                *det = q;
            }
            (*det)[nd++] = (ts_kws_detection){fire, p[fire], w, (double)s / RATE};
        }
        last = fire;
    }
    free(feat), free(p);
    if (!st) return nd;
    free(*det), *det = NULL;
    return -1;
}

int ts_vad_detect(ts_vad *v, const float *x, int64_t n, const ts_vad_params *params, ts_vad_segment **segs) {
    if (!v || !segs || n < 0 || (n && !x)) return ts_set_error(TS_ERR_ARG, "ts_vad_detect: bad arguments"), -1;
    *segs = NULL;
    const float *p, *q;
    int64_t np, nq;
    ts_vad_reset(v);
    if (ts_vad_feed(v, x, n, &p, &np)) return -1;
    float *all = malloc((size_t)(np + 1) * sizeof *all);
    if (!all) return ts_set_error(TS_ERR_NOMEM, "out of memory"), -1;
    memcpy(all, p, (size_t)np * sizeof *all);
    int ns = -1;
    if (ts_vad_finish(v, &q, &nq) == TS_OK) {
        if (nq) all[np++] = q[0];
        ns = ts_vad_segments(all, np, n, params, segs);
    }
    free(all);
    return ns;
}
