/*
 * vad.c — `tessera vad`: the stretches of speech in audio files, found by Silero VAD v5
 * (ts_vad_*, src/speech/vad.c) with Silero's post-processing (ts_vad_segments: threshold 0.5,
 * speech at least 250 ms, silences of at least 100 ms split it, 30 ms of padding).
 *
 *   tessera vad AUDIO... [--json] [--threshold T] [--models DIR] [--threads N]
 *
 * Prints one line per segment, "FILE<TAB>START<TAB>END" in seconds, or with --json one array of
 * {"file", "start", "end"}. "-" reads raw 16 kHz s16 mono from standard input, to its end.
 */
#include "cli.h"
#include "speech_io.h"

#define CMD "vad"

static const char *USAGE =
    "usage: tessera vad AUDIO... [--json] [--threshold T] [--models DIR] [--threads N]\n"
    "  Finds speech in audio files (WAV, FLAC, Ogg, ...; any rate, mixed to mono) with Silero VAD\n"
    "  v5 (a speech probability per 32 ms) and Silero's post-processing: speech starts at the\n"
    "  threshold, ends after 100 ms below threshold - 0.15, lasts at least 250 ms, padded by\n"
    "  30 ms. Prints FILE, START, END (seconds), tab separated, one line per segment.\n"
    "  AUDIO '-' reads raw 16 kHz signed 16-bit mono from standard input.\n"
    "  --json           print [{\"file\": f, \"start\": s, \"end\": e}, ...].\n"
    "  --threshold T    speech probability that starts a segment, in (0, 1) (default 0.5).\n"
    "  --models DIR     the speech models directory, holding silero/silero_vad.onnx (default:\n"
    "                   $TESSERA_DATA/speech when TESSERA_DATA is set, else the installed data\n"
    "                   directory's speech/ when it holds them, else data/speech of the source\n"
    "                   tree, where scripts/install-deps.sh puts them).\n"
    "  --threads N      worker threads (default: OpenMP's).\n"
    "Exit codes: 0 done (also when there is no speech), 1 failed while running, 2 bad flags or\n"
    "files (the other files are still read).\n";

/* All probabilities of audio a, appended into *probs (malloc'ed); returns the count or -1. */
static int64_t probabilities(ts_vad *v, const ts_audio *a, float **probs) {
    const float *p, *q;
    int64_t n, m;
    ts_vad_reset(v);
    *probs = NULL;
    if (ts_vad_feed(v, a->samples, a->n, &p, &n)) return -1;
    float *all = malloc((size_t)(n + 1) * sizeof *all);
    if (!all) return -1;
    memcpy(all, p, (size_t)n * sizeof *all);
    if (ts_vad_finish(v, &q, &m)) {
        free(all);
        return -1;
    }
    if (m) all[n++] = q[0];
    *probs = all;
    return n;
}

/* One file: its segments printed; 0, else the exit code. */
static int segment_file(ts_vad *v, const char *path, const ts_vad_params *params, int json, int *nprinted) {
    ts_audio *a = cli_speech_read(path);
    if (!a) return cli_fail(CMD, "", 2);
    float *probs;
    ts_vad_segment *segs = NULL;
    int64_t n = probabilities(v, a, &probs);
    int ns = n < 0 ? -1 : ts_vad_segments(probs, n, a->n, params, &segs);
    if (ns < 0) {
        fprintf(stderr, "tessera vad: %s: %s\n", path, ts_last_error());
        free(probs);
        ts_audio_free(a);
        return 1;
    }
    for (int i = 0; i < ns; i++) {
        double s = segs[i].start / 16000.0, e = segs[i].end / 16000.0;
        if (json) {
            printf("%s\n  {\"file\": ", (*nprinted)++ ? "," : "");
            cli_json_string(stdout, path);
            printf(", \"start\": %.3f, \"end\": %.3f}", s, e);
        } else {
            printf("%s\t%.3f\t%.3f\n", path, s, e);
        }
    }
    free(segs);
    free(probs);
    ts_audio_free(a);
    return 0;
}

int cli_vad(int argc, char **argv) {
    char dir_buf[4096], path[4200];
    const char *dir = cli_speech_dir(dir_buf, sizeof dir_buf), *v;
    char **files = calloc((size_t)argc, sizeof *files);
    ts_vad_params params = {0};
    int nfiles = 0, threads = 0, json = 0, bad = !files;
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(USAGE, stdout);
            free(files);
            return 0;
        } else if (!strcmp(a, "--json")) json = 1;
        else if ((v = cli_value(argc, argv, &i, "--threshold", CMD, &bad))) {
            if (cli_probability(v, "--threshold", CMD, &params.threshold)) bad = 1;
        } else if ((v = cli_value(argc, argv, &i, "--models", CMD, &bad))) dir = v;
        else if ((v = cli_value(argc, argv, &i, "--threads", CMD, &bad))) {
            if ((threads = cli_positive(v, "--threads", CMD)) < 0) bad = 1;
        } else if (!bad && a[0] == '-' && a[1]) {
            fprintf(stderr, "tessera vad: unknown flag '%s'\n%s", a, USAGE);
            bad = 1;
        } else if (!bad) files[nfiles++] = argv[i];
    }
    if (!bad && !nfiles) {
        fprintf(stderr, "tessera vad: no AUDIO given\n%s", USAGE);
        bad = 1;
    }
    if (bad) {
        free(files);
        return 2;
    }
    snprintf(path, sizeof path, "%s/silero/silero_vad.onnx", dir);
    ts_vad *vad = ts_vad_new(&(ts_vad_opts){.struct_size = sizeof(ts_vad_opts), .model = path, .num_threads = threads});
    if (!vad) {
        int io = ts_last_status() == TS_ERR_IO;
        cli_fail(CMD, "", 2);
        if (io) fprintf(stderr, "tessera vad: the models are fetched into data/speech by `bash scripts/install-deps.sh`; "
                                "--models DIR or TESSERA_DATA (DIR/speech) gives another directory\n");
        free(files);
        return 2;
    }
    int rc = 0, nprinted = 0;
    if (json) printf("[");
    for (int i = 0; i < nfiles && rc != 1; i++) {
        int frc = segment_file(vad, files[i], &params, json, &nprinted);
        if (frc) rc = frc;
    }
    if (json) printf("%s]\n", nprinted ? "\n" : "");
    free(files);
    ts_vad_free(vad);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tessera vad: writing the output failed\n");
        return 1;
    }
    return rc;
}
