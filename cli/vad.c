/*
 * vad.c — `tessera vad`: the stretches of speech in audio files, found by Silero VAD v5
 * (ts_vad_*, apps/speech/vad.c; a clip's segments: ts_vad_detect) with Silero's post-processing
 * (ts_vad_segments: threshold 0.5, speech at least 250 ms, silences of at least 100 ms split it,
 * 30 ms of padding).
 *
 *   tessera vad AUDIO... [--json] [--threshold T] [--model-store DIR] [--threads N]
 *
 * Prints one line per segment, "FILE<TAB>START<TAB>END" in seconds, or with --json one array of
 * {"file", "start", "end"}. "-" reads raw 16 kHz s16 mono from standard input, to its end. The
 * flags are read by cli_opts_parse (cli/options.h).
 */
#include "cli.h"
#include "options.h"
#include "speech_io.h"

#define CMD "vad"

static const char *USAGE =
    "usage: tessera vad AUDIO... [--json] [--threshold T] [--model-store DIR] [--threads N]\n"
    "  Finds speech in audio files (WAV, FLAC, Ogg, ...; any rate, mixed to mono) with Silero VAD\n"
    "  v5 (a speech probability per 32 ms) and Silero's post-processing: speech starts at the\n"
    "  threshold, ends after 100 ms below threshold - 0.15, lasts at least 250 ms, padded by\n"
    "  30 ms. Prints FILE, START, END (seconds), tab separated, one line per segment.\n";

/* One file: its segments printed; 0, else the exit code. */
static int segment_file(ts_vad *v, const char *path, const ts_vad_params *params, int json, int *nprinted) {
    ts_audio *a = cli_speech_read(path);
    if (!a) return cli_fail(CMD, "", 2);
    ts_vad_segment *segs = NULL;
    int ns = ts_vad_detect(v, a->samples, a->n, params, &segs);
    if (ns < 0) {
        fprintf(stderr, "tessera vad: %s: %s\n", path, cli_error());
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
    ts_audio_free(a);
    return 0;
}

int cli_vad(int argc, char **argv) {
    char dir_buf[4096], path[4200];
    const char *dir = cli_speech_dir(dir_buf, sizeof dir_buf);
    cli_strlist files = {0};
    double threshold = -1; /* not given: Silero's 0.5 */
    ts_vad_params params = {0};
    int threads = 0, json = 0;
    const cli_opt opts[] = {
        {"files", CLI_ARGS, &files, 0, "AUDIO...",
         "audio files; '-' reads raw 16 kHz signed 16-bit mono from standard input.", NULL},
        {"json", CLI_FLAG, &json, 0, NULL, "print [{\"file\": f, \"start\": s, \"end\": e}, ...].", NULL},
        {"threshold", CLI_FLOAT, &threshold, 0, "T",
         "speech probability that starts a segment, in (0, 1) (default 0.5).", NULL},
        {"model-store", CLI_STR, &dir, 0, "DIR",
         "the speech models directory, holding silero/silero_vad.onnx (default:\n"
         "$TESSERA_DATA/speech when TESSERA_DATA is set, else the installed data\n"
         "directory's speech/ when it holds them, else data/speech of the source\n"
         "tree, where scripts/install-deps.sh puts them).", "models"},
        {"threads", CLI_INT, &threads, 1, "N", "worker threads (default: OpenMP's).", NULL},
        {NULL, CLI_TEXT, NULL, 0, NULL,
         "Exit codes: 0 done (also when there is no speech), 1 failed while running, 2 bad flags or\n"
         "files (the other files are still read).\n", NULL},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, CMD, USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done_opts;
    rc = 2;
    if (threshold != -1 && !(threshold > 0 && threshold < 1)) {
        fprintf(stderr, "tessera vad: --threshold wants a number in (0, 1), not '%g'\n"
                        "(tessera vad --help shows the usage)\n", threshold);
        goto done_opts;
    }
    if (threshold != -1) params.threshold = (float)threshold;
    if (!files.n) {
        fprintf(stderr, "tessera vad: no AUDIO given\n(tessera vad --help shows the usage)\n");
        goto done_opts;
    }
    if (!cli_path_join(path, sizeof path, dir, "silero/silero_vad.onnx")) {
        cli_fail(CMD, "", 2);
        goto done_opts;
    }
    ts_vad *vad = ts_vad_new(&(ts_vad_opts){.struct_size = sizeof(ts_vad_opts), .model = path, .num_threads = threads});
    if (!vad) {
        int io = ts_last_status() == TS_ERR_IO;
        cli_fail(CMD, "", 2);
        if (io) fprintf(stderr, "tessera vad: the models are fetched into data/speech by `bash scripts/install-deps.sh`; "
                                "--model-store DIR or TESSERA_DATA (DIR/speech) gives another directory\n");
        goto done_opts;
    }
    rc = 0;
    int nprinted = 0;
    if (json) printf("[");
    for (int i = 0; i < files.n && rc != 1; i++) {
        int frc = segment_file(vad, files.v[i], &params, json, &nprinted);
        if (frc) rc = frc;
    }
    if (json) printf("%s]\n", nprinted ? "\n" : "");
    ts_vad_free(vad);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tessera vad: writing the output failed\n");
        rc = 1;
    }
done_opts:
    cli_opts_free(&os);
    return rc;
}
