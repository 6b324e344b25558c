/*
 * bench/speech.c — the speech pipelines' speed: `tessera kws` (openWakeWord: mel, embedding and
 * heads every 80 ms) as milliseconds per second of audio, and `tessera vad` (Silero VAD) as
 * milliseconds per 32 ms chunk, beside ONNX Runtime running the same models in the same run
 * (bench/speech_ort.js in onnxruntime-node, one hop at a time as openWakeWord runs them).
 *
 * Rows (S seconds of synthetic audio, the models of data/speech):
 *   kws stream    ts_kws_feed 1280 samples a call (live audio), the hey_jarvis head;
 *   kws file      the whole clip in one ts_kws_feed (embeddings batched by 16), hey_jarvis;
 *   kws 6 heads   as "kws file" with every head (timer, weather, ... : what `tessera kws` runs
 *                 without --keyword);
 *   vad chunk     ts_vad_feed 512 samples a call; the median per chunk.
 * Compiling the models is not counted (ts_kws_new / ts_vad_new before the clock starts); each
 * figure is the median of --runs runs. The ONNX Runtime peer runs first, in its own process.
 *
 * Usage: bench/speech [--seconds S (10)] [--threads N (2)] [--runs R (3)] [--no-peers]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "tessera_apps.h"

#define DIR TS_SOURCE_DIR "/data/speech"

static float *make_audio(int64_t n) {
    float *x = malloc((size_t)n * sizeof *x);
    uint32_t s = 27;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        double t = i / 16000.0;
        x[i] = (float)(0.3 * sin(2 * M_PI * (300 + 200 * sin(t)) * t) + 0.05 * ((s >> 8) / 16777216.0 - 0.5));
    }
    return x;
}

/* Seconds to score x[n] with keywords kw (nkw; NULL all), `piece` samples a call; median of runs. */
static double time_kws(const float *x, int64_t n, int piece, const char *const *kw, int nkw, int threads, int runs) {
    ts_kws *k = ts_kws_new(&(ts_kws_opts){.struct_size = sizeof(ts_kws_opts), .models_dir = DIR "/openwakeword",
                                          .keywords = kw, .nkeywords = nkw, .num_threads = threads});
    if (!k) {
        fprintf(stderr, "speech: %s\n", ts_last_error());
        exit(1);
    }
    double t[16];
    for (int r = 0; r <= runs; r++) { /* run 0 warms up (compiles the batch-16 program) */
        ts_kws_reset(k);
        double t0 = now();
        for (int64_t i = 0; i < n; i += piece) {
            const float *s;
            int64_t nf;
            if (ts_kws_feed(k, x + i, n - i < piece ? n - i : piece, &s, &nf)) {
                fprintf(stderr, "speech: %s\n", ts_last_error());
                exit(1);
            }
        }
        if (r) t[r - 1] = now() - t0;
    }
    ts_kws_free(k);
    return median_inplace(t, runs);
}

static double time_vad(const float *x, int64_t n, int threads) {
    ts_vad *v = ts_vad_new(&(ts_vad_opts){.struct_size = sizeof(ts_vad_opts), .model = DIR "/silero/silero_vad.onnx",
                                          .num_threads = threads});
    if (!v) {
        fprintf(stderr, "speech: %s\n", ts_last_error());
        exit(1);
    }
    int64_t nc = n / TS_VAD_CHUNK;
    double *t = malloc((size_t)nc * sizeof *t);
    for (int64_t c = 0; c < nc; c++) {
        const float *p;
        int64_t m;
        double t0 = now();
        ts_vad_feed(v, x + c * TS_VAD_CHUNK, TS_VAD_CHUNK, &p, &m);
        t[c] = now() - t0;
    }
    double med = median_inplace(t, (int)nc);
    free(t);
    ts_vad_free(v);
    return med;
}

int main(int argc, char **argv) {
    int threads = 2, runs = 3, peers = 1;
    double seconds = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-peers")) peers = 0;
        else {
            fprintf(stderr, "usage: bench/speech [--seconds S] [--threads N] [--runs R (1-16)] [--no-peers]\n");
            return 2;
        }
    }
    if (seconds <= 0 || threads < 1 || runs < 1 || runs > 16) return 2;
    double ort_kws = NAN, ort_vad = NAN;
    char cmd[4096], buf[4096] = "";
    if (peers) {
        snprintf(cmd, sizeof cmd, "node '%s/bench/speech_ort.js' '%s' --seconds %g --threads %d", TS_SOURCE_DIR, DIR,
                 seconds, threads);
        FILE *f = popen(cmd, "r");
        size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[got] = 0;
        if (f) pclose(f);
        double v;
        if (bench_numbers(buf, "\"kws_s\":", &v, 1)) ort_kws = v / seconds * 1e3;
        if (bench_numbers(buf, "\"vad_chunk_s\":", &v, 1)) ort_vad = v * 1e3;
    }
    int64_t n = (int64_t)(seconds * 16000);
    float *x = make_audio(n);
    const char *jarvis[] = {"hey_jarvis"};
    double stream = time_kws(x, n, TS_KWS_HOP, jarvis, 1, threads, runs) / seconds * 1e3;
    double file = time_kws(x, n, (int)n, jarvis, 1, threads, runs) / seconds * 1e3;
    double all = time_kws(x, n, (int)n, NULL, 0, threads, runs) / seconds * 1e3;
    double vad = time_vad(x, n, threads) * 1e3;
    printf("speech, %g s of audio, %d threads              tessera    ONNX Runtime\n", seconds, threads);
    printf("kws stream (1280 a call), ms per s of audio  %8.2f    %8.2f\n", stream, ort_kws);
    printf("kws file (batched), ms per s of audio        %8.2f\n", file);
    printf("kws 6 heads (batched), ms per s of audio     %8.2f\n", all);
    printf("vad, ms per 32 ms chunk                      %8.3f    %8.3f\n", vad, ort_vad);
    if (peers && isnan(ort_kws)) printf("(ONNX Runtime: not run: %s)\n", *buf ? buf : "no output from bench/speech_ort.js");
    free(x);
    return 0;
}
