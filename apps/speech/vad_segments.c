/*
 * vad_segments.c — speech segments from Silero VAD's per-chunk probabilities, as Silero's
 * get_speech_timestamps makes them (utils_vad.py; here without its maximum speech duration,
 * which defaults to unlimited):
 *
 *   - a segment starts at the first chunk with probability >= threshold;
 *   - once a chunk falls below neg_threshold, a possible end is noted at that chunk's start; a
 *     chunk >= threshold again forgets it; when the probability has stayed below threshold for
 *     min_silence (counted from the possible end to the current chunk's start, reaching it ends
 *     the segment), the segment ends at the possible end and is kept when longer than min_speech;
 *   - a segment still open at the end of the clip ends there (kept when longer than min_speech);
 *   - padding: the first segment's start moves speech_pad earlier (not before 0); between two
 *     segments closer than 2 speech_pad, each takes half the gap; else each side moves by
 *     speech_pad; the last segment's end moves speech_pad later (not past the clip's end).
 * All in samples at 16 kHz; chunk i starts at sample 512 i.
 */
#include <stdlib.h>

#include "common/app.h"
#include "speech/speech_impl.h"

#define RATE 16000

/* Append segment [start, end) to *segs (n so far, *cap allocated). */
static int push(ts_vad_segment **segs, int n, int *cap, int64_t start, int64_t end) {
    if (n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        ts_vad_segment *p = realloc(*segs, (size_t)c * sizeof *p);
        if (!p) return -1;
        *segs = p, *cap = c;
    }
    (*segs)[n] = (ts_vad_segment){start, end};
    return n + 1;
}

static void pad(ts_vad_segment *s, int n, int64_t nsamples, int64_t pad_samples) {
    for (int i = 0; i < n; i++) {
        if (i == 0) s[i].start = s[i].start > pad_samples ? s[i].start - pad_samples : 0;
        if (i != n - 1) {
            int64_t gap = s[i + 1].start - s[i].end;
            int64_t d = gap < 2 * pad_samples ? gap / 2 : pad_samples;
            s[i].end += d;
            s[i + 1].start = s[i + 1].start > d ? s[i + 1].start - d : 0;
        } else {
            s[i].end = s[i].end + pad_samples < nsamples ? s[i].end + pad_samples : nsamples;
        }
    }
}

int ts_vad_segments(const float *probs, int64_t nchunks, int64_t nsamples, const ts_vad_params *params,
                    ts_vad_segment **segs) {
    ts_vad_params p = params ? *params : (ts_vad_params){0};
    if (!segs || nchunks < 0 || nsamples < 0 || (!probs && nchunks) || p.threshold < 0 || p.threshold > 1 ||
        p.neg_threshold < 0 || p.neg_threshold > 1 || p.min_speech_ms < 0 || p.min_silence_ms < 0 || p.speech_pad_ms < 0) {
        ts_set_error(TS_ERR_ARG, "ts_vad_segments: bad arguments (thresholds in [0, 1], durations >= 0)");
        return -1;
    }
    *segs = NULL;
    float thr = p.threshold > 0 ? p.threshold : 0.5f;
    float neg = p.neg_threshold > 0 ? p.neg_threshold : (thr - 0.15f > 0.01f ? thr - 0.15f : 0.01f);
    int64_t min_speech = (int64_t)RATE * (p.min_speech_ms ? p.min_speech_ms : 250) / 1000;
    int64_t min_silence = (int64_t)RATE * (p.min_silence_ms ? p.min_silence_ms : 100) / 1000;
    int64_t pad_samples = (int64_t)RATE * (p.speech_pad_ms ? p.speech_pad_ms : 30) / 1000;
    int n = 0, cap = 0, triggered = 0;
    int64_t start = 0, temp_end = 0;
    for (int64_t i = 0; i < nchunks && n >= 0; i++) {
        int64_t cur = (int64_t)TS_VAD_CHUNK * i;
        if (probs[i] >= thr && temp_end) temp_end = 0;
        if (probs[i] >= thr && !triggered) {
            triggered = 1, start = cur;
            continue;
        }
        if (probs[i] < neg && triggered) {
            if (!temp_end) temp_end = cur;
            if (cur - temp_end < min_silence) continue;
            if (temp_end - start > min_speech) n = push(segs, n, &cap, start, temp_end);
            triggered = 0, temp_end = 0;
        }
    }
    if (n >= 0 && triggered && nsamples - start > min_speech) n = push(segs, n, &cap, start, nsamples);
    if (n < 0) {
        free(*segs);
        *segs = NULL;
        ts_set_error(TS_ERR_NOMEM, "ts_vad_segments: out of memory");
        return -1;
    }
    pad(*segs, n, nsamples, pad_samples);
    return n;
}
