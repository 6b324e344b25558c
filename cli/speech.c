/*
 * speech.c — `tessera kws` (ts_kws_detect_file, or ts_audio_clf_scan_file with --model) and
 * `tessera vad` (ts_vad_detect_file): their flags, and the detections printed as text or JSON.
 */
#include "cli.h"
#include "options.h"
#include "speech_io.h"

#define STR_(x) #x
#define STR(x) STR_(x) /* a macro's value as a string literal: the default in the usage text */

static const char *KWS_USAGE =
    "  Finds wake words in audio files (WAV, FLAC, Ogg, ...; any rate, mixed to mono) with\n"
    "  openWakeWord's models, streaming as openWakeWord does: a score per keyword every 80 ms.\n"
    "  Prints FILE, TIME (s), KEYWORD, SCORE, tab separated, for each detection: a keyword fires\n"
    "  when its score reaches the threshold, and not again until it has fallen below it and the\n"
    "  refractory period after the detection has passed.\n";

static const char *VAD_USAGE =
    "  Finds speech in audio files (WAV, FLAC, Ogg, ...; any rate, mixed to mono) with Silero VAD\n"
    "  v5 (a speech probability per 32 ms) and Silero's post-processing: speech starts at the\n"
    "  threshold, ends after 100 ms below threshold - 0.15, lasts at least 250 ms, padded by\n"
    "  30 ms. Prints FILE, START, END (seconds), tab separated, one line per segment.\n";

/* What printing needs. */
typedef struct run {
    int json, scores, nitems, npeaks;
    const char *file;
    FILE *peaks; /* kws --json --scores: the "peaks" array's items, printed after the detections */
} run;

/* The opening of a JSON array's item about r->file, to f, indented by `indent` spaces; *n counts the
 * items. */
static void json_item(FILE *f, const run *r, int *n, int indent) {
    fprintf(f, "%s\n%*s{\"file\": ", (*n)++ ? "," : "", indent, "");
    cli_json_string(f, r->file);
}

/* --threshold T of kws and vad (-1: not given): 0, or 2 after printing the error. */
static int check_threshold(const char *cmd, double t) {
    if (t == -1 || (t > 0 && t < 1)) return 0;
    fprintf(stderr, "tessera %s: --threshold wants a number in (0, 1), not '%g'\n(tessera %s --help shows the usage)\n",
            cmd, t, cmd);
    return 2;
}

/* A speech model that could not be loaded: the error, and where the models come from when they
 * could not be read. Returns 2. */
static int load_failed(const char *cmd, const char *what) {
    int io = ts_last_status() == TS_ERR_IO;
    cli_fail(cmd, what, 2);
    if (io)
        fprintf(stderr, "tessera %s: the models are fetched into data/speech by `bash scripts/install-deps.sh`; "
                        "--model-store DIR or TESSERA_DATA (DIR/speech) gives another directory\n", cmd);
    return 2;
}

/* The exit code rc of a run that printed to stdout: 1 when writing it failed (said). */
static int flushed(const char *cmd, int rc) {
    if (rc == 2 || (fflush(stdout) == 0 && !ferror(stdout))) return rc;
    fprintf(stderr, "tessera %s: writing the output failed\n", cmd);
    return 1;
}

/* One detection printed (a ts_kws_detection_fn). */
static void print_detection(void *ctx, const char *label, const ts_kws_detection *d) {
    run *r = ctx;
    if (!r->json) {
        printf("%s\t%.2f\t%s\t%.4f\n", r->file, d->time, label, d->score);
        return;
    }
    json_item(stdout, r, &r->nitems, 4);
    printf(", \"time\": %.2f, \"keyword\": ", d->time);
    cli_json_string(stdout, label);
    printf(", \"score\": %.4f}", d->score);
}

/* The peaks of the file just scored: printed (text) or added to the JSON array in r->peaks. */
static void print_peaks(run *r, const ts_kws *k, const ts_kws_detector *d) {
    const float *peak = ts_kws_detector_peaks(d);
    for (int j = 0; j < ts_kws_num_labels(k); j++) {
        if (!r->json) {
            printf("%s\tpeak\t%s\t%.4f\n", r->file, ts_kws_label(k, j), peak[j]);
            continue;
        }
        json_item(r->peaks, r, &r->npeaks, 4);
        fprintf(r->peaks, ", \"keyword\": \"%s\", \"score\": %.4f}", ts_kws_label(k, j), peak[j]);
    }
}

/* Each file through the heads of k with detector d, or through the classifier c: the exit code. */
static int score_files(run *r, ts_kws *k, ts_kws_detector *d, ts_audio_clf *c, float thr, const cli_strlist *files) {
    char *pbuf = NULL;
    size_t plen = 0;
    int rc = 0, scores = r->scores && k;
    r->peaks = r->json && scores ? open_memstream(&pbuf, &plen) : NULL;
    if (r->json) printf("{\"detections\": [");
    for (int i = 0; i < files->n && rc != 1; i++) {
        r->file = files->v[i];
        ts_status st = k ? ts_kws_detect_file(k, d, r->file, print_detection, r)
                         : ts_audio_clf_scan_file(c, r->file, thr, print_detection, r);
        if (st) rc = cli_fail("kws", "", st == TS_ERR_IO ? 2 : 1);
        else if (scores) print_peaks(r, k, d);
    }
    if (r->peaks) fclose(r->peaks);
    if (r->json)
        printf("%s]%s%s%s}\n", r->nitems ? "\n  " : "", scores ? ",\n \"peaks\": [" : "", pbuf ? pbuf : "",
               scores ? (r->npeaks ? "\n  ]" : "]") : "");
    free(pbuf);
    return rc;
}

/* The heads (or with model the classifier) loaded from dir, then the files scored: the exit code.
 * refractory: seconds, -1 for the library's TS_KWS_REFRACTORY. */
static int run_kws(run *r, const char *dir, const char *model, const char *keywords, float thr, double refractory,
                   int threads, const cli_strlist *files) {
    char path[4200];
    if (!cli_path_join(path, sizeof path, dir, "openwakeword")) return cli_fail("kws", "", 2);
    if (model) {
        ts_audio_clf *c = ts_audio_clf_load(model, path, threads);
        int rc = c ? score_files(r, NULL, NULL, c, thr, files) : cli_fail("kws", "--model: ", 2);
        ts_audio_clf_free(c);
        return rc;
    }
    ts_kws *k = ts_kws_new(&(ts_kws_opts){.struct_size = sizeof(ts_kws_opts), .models_dir = path,
                                          .keyword_list = keywords, .num_threads = threads});
    if (!k) return load_failed("kws", strstr(ts_last_error(), "keyword_list") ? "--keyword: " : "");
    ts_kws_detector *d = ts_kws_detector_new(ts_kws_num_labels(k), thr);
    int rc = !d                                                        ? cli_fail("kws", "", 1)
             : refractory >= 0 && ts_kws_detector_set_refractory(d, refractory) ? cli_fail("kws", "--refractory: ", 2)
                                                                        : score_files(r, k, d, NULL, thr, files);
    ts_kws_detector_free(d);
    ts_kws_free(k);
    return rc;
}

int cli_kws(int argc, char **argv) {
    char dir_buf[4096];
    const char *dir = cli_speech_dir(dir_buf, sizeof dir_buf), *keyword = NULL, *model = NULL;
    cli_strlist files = {0};
    double threshold = -1, refractory = -1; /* not given: 0.5, TS_KWS_REFRACTORY */
    run r = {0};
    int threads = 0;
    const cli_opt opts[] = {
        {"files", CLI_ARGS, &files, 1, "AUDIO...",
         "audio files; '-' reads raw 16 kHz signed 16-bit mono from standard input\n"
         "as it comes (arecord -f S16_LE -r 16000 -c 1 | tessera kws -), padded with\n"
         "1 s of silence each side as a file is: the same scores as the file.", NULL},
        {"keyword", CLI_STR, &keyword, 0, "K,...",
         "heads to run (default: all of\n"
         TS_KWS_KEYWORDS "),\n"
         "or NAME for a head DIR/openwakeword/NAME.onnx; timer reports one keyword\n"
         "per duration (1_minute_timer, ...).", NULL},
        {"threshold", CLI_FLOAT, &threshold, 0, "T", "score that fires a keyword, in (0, 1) (default 0.5).", NULL},
        {"refractory", CLI_FLOAT, &refractory, 0, "SECONDS",
         "a keyword that fired cannot fire again for this long (default " STR(TS_KWS_REFRACTORY) ", as\n"
         "openWakeWord's debounce_time in its tests; 0: off). The heads only.", NULL},
        {"json", CLI_FLAG, &r.json, 0, NULL,
         "print {\"detections\": [{\"file\", \"time\", \"keyword\", \"score\"}, ...]}.", NULL},
        {"scores", CLI_FLAG, &r.scores, 0, NULL,
         "also print each keyword's highest score per file (FILE, peak, KEYWORD,\n"
         "SCORE; with --json a \"peaks\" array).", NULL},
        CLI_MODEL_STORE_OPT(&dir, "openwakeword/"),
        {"threads", CLI_INT, &threads, 1, "N",
         "worker threads (default: 1 for each model whose runs are small, as the\n"
         "per-hop ones are, else OpenMP's; ts_kws_threads tells which).", NULL},
        {"model", CLI_STR, &model, 0, "DIR",
         "a classifier from tessera audio-train instead of the heads: run on a window\n"
         "of its clip length every 320 ms (windows quieter than -40 dBFS skipped),\n"
         "printing a window's most probable label when it reaches the threshold and\n"
         "the window before did not report it (TIME: the window's start).", NULL},
        {NULL, CLI_TEXT, NULL, 0, NULL,
         "Exit codes: 0 done (also when nothing was detected), 1 failed while running, 2 bad flags or\n"
         "files (the other files are still scored).\n", NULL},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "kws", KWS_USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc == 1 && !(rc = check_threshold("kws", threshold)))
        rc = flushed("kws", run_kws(&r, dir, model, keyword, threshold == -1 ? 0.5f : (float)threshold, refractory,
                                    threads, &files));
    cli_opts_free(&os);
    return rc;
}

/* One segment printed (a ts_vad_segment_fn). */
static void print_segment(void *ctx, const ts_vad_segment *seg) {
    run *r = ctx;
    double s = seg->start / 16000.0, e = seg->end / 16000.0;
    if (!r->json) {
        printf("%s\t%.3f\t%.3f\n", r->file, s, e);
        return;
    }
    json_item(stdout, r, &r->nitems, 2);
    printf(", \"start\": %.3f, \"end\": %.3f}", s, e);
}

/* The model loaded from dir, then each file's segments printed: the exit code. */
static int run_vad(run *r, const char *dir, const ts_vad_params *params, int threads, const cli_strlist *files) {
    char path[4200];
    if (!cli_path_join(path, sizeof path, dir, "silero/silero_vad.onnx")) return cli_fail("vad", "", 2);
    ts_vad *vad = ts_vad_new(&(ts_vad_opts){.struct_size = sizeof(ts_vad_opts), .model = path, .num_threads = threads});
    if (!vad) return load_failed("vad", "");
    int rc = 0;
    if (r->json) printf("[");
    for (int i = 0; i < files->n && rc != 1; i++) {
        ts_status st = ts_vad_detect_file(vad, r->file = files->v[i], params, print_segment, r);
        if (st) rc = cli_fail("vad", "", st == TS_ERR_IO ? 2 : 1);
    }
    if (r->json) printf("%s]\n", r->nitems ? "\n" : "");
    ts_vad_free(vad);
    return rc;
}

int cli_vad(int argc, char **argv) {
    char dir_buf[4096];
    const char *dir = cli_speech_dir(dir_buf, sizeof dir_buf);
    cli_strlist files = {0};
    double threshold = -1; /* not given: Silero's 0.5 */
    run r = {0};
    int threads = 0;
    const cli_opt opts[] = {
        {"files", CLI_ARGS, &files, 1, "AUDIO...",
         "audio files; '-' reads raw 16 kHz signed 16-bit mono from standard input.", NULL},
        {"json", CLI_FLAG, &r.json, 0, NULL, "print [{\"file\": f, \"start\": s, \"end\": e}, ...].", NULL},
        {"threshold", CLI_FLOAT, &threshold, 0, "T",
         "speech probability that starts a segment, in (0, 1) (default 0.5).", NULL},
        CLI_MODEL_STORE_OPT(&dir, "silero/silero_vad.onnx"),
        {"threads", CLI_INT, &threads, 1, "N",
         "worker threads (default: 1 for each model whose runs are small, as the\n"
         "per-hop ones are, else OpenMP's; ts_vad_threads tells which).", NULL},
        {NULL, CLI_TEXT, NULL, 0, NULL,
         "Exit codes: 0 done (also when there is no speech), 1 failed while running, 2 bad flags or\n"
         "files (the other files are still read).\n", NULL},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "vad", VAD_USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    ts_vad_params params = {.threshold = threshold == -1 ? 0 : (float)threshold};
    if (rc == 1 && !(rc = check_threshold("vad", threshold)))
        rc = flushed("vad", run_vad(&r, dir, &params, threads, &files));
    cli_opts_free(&os);
    return rc;
}
