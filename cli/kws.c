/*
 * kws.c — `tessera kws`: keywords spoken in audio files or a live stream, found by openWakeWord's
 * models (ts_kws_*, apps/speech/kws.c).
 *
 *   tessera kws AUDIO... [--keyword K1,K2,...] [--threshold T] [--json] [--scores]
 *                        [--model-store DIR] [--threads N] [--model DIR]
 *
 * A file is scored with 1 s of silence before and after it (as openWakeWord's predict_clip), one
 * score per keyword every 80 ms. A keyword fires when its score reaches the threshold and then not
 * again until its score has fallen below it. Each detection prints "FILE<TAB>TIME<TAB>KEYWORD<TAB>
 * SCORE" (TIME in seconds from the start of the file: the end of the 80 ms frame that fired);
 * --scores adds "FILE<TAB>peak<TAB>KEYWORD<TAB>SCORE" per file and keyword. --json prints one
 * object {"detections": [{"file", "time", "keyword", "score"}...], "peaks": [...]} instead.
 * "-" reads raw 16 kHz s16 mono from standard input as it comes (arecord -f S16_LE -r 16000 -c 1
 * | tessera kws -), printing each detection at once (without --json).
 * --model DIR runs an audio classifier from `tessera audio-train` instead (cli/kws_model.c). The
 * scoring and the firing rule are the library's (ts_kws_detect*, apps/speech/detect.c).
 * The flags are read by cli_opts_parse (cli/options.h).
 */
#include "cli.h"
#include "options.h"
#include "speech_io.h"

#define CMD "kws"

static const char *USAGE =
    "usage: tessera kws AUDIO... [--keyword K1,K2,...] [--threshold T] [--json] [--scores]\n"
    "                   [--model-store DIR] [--threads N] [--model DIR]\n"
    "  Finds wake words in audio files (WAV, FLAC, Ogg, ...; any rate, mixed to mono) with\n"
    "  openWakeWord's models, streaming as openWakeWord does: a score per keyword every 80 ms.\n"
    "  Prints FILE, TIME (s), KEYWORD, SCORE, tab separated, for each detection: a keyword fires\n"
    "  when its score reaches the threshold, and not again until it has fallen below it.\n";

typedef struct run {
    ts_kws *k;
    ts_kws_detector *d;
    int json, scores, ndet;
    const char *file;
} run;

static void print_detections(run *r, const ts_kws_detection *det, int64_t n) {
    for (int64_t i = 0; i < n; i++, r->ndet++) {
        const char *kw = ts_kws_label(r->k, det[i].label);
        if (r->json) {
            printf("%s\n    {\"file\": ", r->ndet ? "," : "");
            cli_json_string(stdout, r->file);
            printf(", \"time\": %.2f, \"keyword\": \"%s\", \"score\": %.4f}", det[i].time, kw, det[i].score);
        } else {
            printf("%s\t%.2f\t%s\t%.4f\n", r->file, det[i].time, kw, det[i].score);
            fflush(stdout);
        }
    }
}

/* Standard input as it comes, each detection printed at once: 0, else the exit code. */
static int score_stdin(run *r) {
    const ts_kws_detection *det;
    int64_t nd, n;
    float x[TS_KWS_HOP];
    ts_kws_reset(r->k);
    ts_kws_detector_reset(r->d, 0);
    while ((n = cli_speech_read_stdin(x, TS_KWS_HOP)) > 0) {
        if (ts_kws_detect(r->k, r->d, x, n, &det, &nd)) return cli_fail(CMD, "-: ", 1);
        print_detections(r, det, nd);
    }
    if (n < 0) {
        fprintf(stderr, "tessera kws: reading standard input failed\n");
        return 2;
    }
    if (ts_kws_detect_finish(r->k, r->d, &det, &nd)) return cli_fail(CMD, "-: ", 1);
    print_detections(r, det, nd);
    return 0;
}

/* One file (or "-"): 0, else the exit code. */
static int score_file(run *r, const char *path) {
    const ts_kws_detection *det;
    int64_t nd;
    r->file = path;
    if (!strcmp(path, "-")) return score_stdin(r);
    ts_audio *a = ts_audio_read(path, 16000);
    if (!a) return cli_fail(CMD, "", 2);
    ts_status s = ts_kws_detect_clip(r->k, r->d, a->samples, a->n, &det, &nd);
    ts_audio_free(a);
    if (s) return cli_fail(CMD, "", 1);
    print_detections(r, det, nd);
    return 0;
}

/* The peaks of the file just scored: printed (text) or added to the JSON array in peaks. */
static void print_peaks(run *r, FILE *peaks, int *npeaks) {
    const float *peak = ts_kws_detector_peaks(r->d);
    for (int j = 0; j < ts_kws_num_labels(r->k); j++) {
        if (!r->json) {
            printf("%s\tpeak\t%s\t%.4f\n", r->file, ts_kws_label(r->k, j), peak[j]);
            continue;
        }
        fprintf(peaks, "%s\n    {\"file\": ", (*npeaks)++ ? "," : "");
        cli_json_string(peaks, r->file);
        fprintf(peaks, ", \"keyword\": \"%s\", \"score\": %.4f}", ts_kws_label(r->k, j), peak[j]);
    }
}

/* Split "a,b,c" (modified in place) into at most cap names; returns how many, -1 for an empty one. */
static int split_keywords(char *s, const char **out, int cap) {
    int n = 0;
    for (char *p = s;; p++) {
        char *e = strchr(p, ',');
        if (e) *e = 0;
        if (!*p || n == cap) return -1;
        out[n++] = p;
        if (!e) return n;
        p = e;
    }
}

static int score_all(run *r, const char *const *files, int nfiles) {
    char *pbuf = NULL;
    size_t plen = 0;
    FILE *peaks = r->json && r->scores ? open_memstream(&pbuf, &plen) : NULL;
    int npeaks = 0, rc = 0;
    if (r->json) printf("{\"detections\": [");
    for (int i = 0; i < nfiles && rc != 1; i++) {
        int frc = score_file(r, files[i]);
        if (frc) rc = frc;
        else if (r->scores) print_peaks(r, peaks, &npeaks);
    }
    if (peaks) fclose(peaks);
    if (r->json) printf("%s]%s%s%s}\n", r->ndet ? "\n  " : "", r->scores ? ",\n \"peaks\": [" : "", pbuf ? pbuf : "",
                        r->scores ? (npeaks ? "\n  ]" : "]") : "");
    free(pbuf);
    return rc;
}

int cli_kws(int argc, char **argv) {
    char dir_buf[4096], kw_buf[4096] = "", path[4200];
    const char *dir = cli_speech_dir(dir_buf, sizeof dir_buf), *keywords[64], *keyword = NULL, *model = NULL;
    cli_strlist files = {0};
    double threshold = -1; /* not given: 0.5 */
    run r = {0};
    int nkw = 0, threads = 0;
    const cli_opt opts[] = {
        {"files", CLI_ARGS, &files, 0, "AUDIO...",
         "audio files; '-' reads raw 16 kHz signed 16-bit mono from standard input\n"
         "as it comes (arecord -f S16_LE -r 16000 -c 1 | tessera kws -).", NULL},
        {"keyword", CLI_STR, &keyword, 0, "K,...",
         "heads to run (default: all of\n"
         TS_KWS_KEYWORDS "),\n"
         "or NAME for a head DIR/openwakeword/NAME.onnx; timer reports one keyword\n"
         "per duration (1_minute_timer, ...).", NULL},
        {"threshold", CLI_FLOAT, &threshold, 0, "T", "score that fires a keyword, in (0, 1) (default 0.5).", NULL},
        {"json", CLI_FLAG, &r.json, 0, NULL,
         "print {\"detections\": [{\"file\", \"time\", \"keyword\", \"score\"}, ...]}.", NULL},
        {"scores", CLI_FLAG, &r.scores, 0, NULL,
         "also print each keyword's highest score per file (FILE, peak, KEYWORD,\n"
         "SCORE; with --json a \"peaks\" array).", NULL},
        {"model-store", CLI_STR, &dir, 0, "DIR",
         "the speech models directory, holding openwakeword/ (default:\n"
         "$TESSERA_DATA/speech when TESSERA_DATA is set, else the installed data\n"
         "directory's speech/ when it holds them, else data/speech of the source\n"
         "tree, where scripts/install-deps.sh puts them).", "models"},
        {"threads", CLI_INT, &threads, 1, "N", "worker threads (default: OpenMP's).", NULL},
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
    int rc = cli_opts_parse(&os, CMD, USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done_opts;
    rc = 2;
    if (keyword) {
        snprintf(kw_buf, sizeof kw_buf, "%s", keyword);
        if ((nkw = split_keywords(kw_buf, keywords, 64)) < 0) {
            fprintf(stderr, "tessera kws: --keyword wants names separated by commas (known: %s), not '%s'\n"
                            "(tessera kws --help shows the usage)\n",
                    TS_KWS_KEYWORDS, keyword);
            goto done_opts;
        }
    }
    if (threshold != -1 && !(threshold > 0 && threshold < 1)) {
        fprintf(stderr, "tessera kws: --threshold wants a number in (0, 1), not '%g'\n"
                        "(tessera kws --help shows the usage)\n", threshold);
        goto done_opts;
    }
    float thr = threshold == -1 ? 0.5f : (float)threshold;
    if (!files.n) {
        fprintf(stderr, "tessera kws: no AUDIO given\n(tessera kws --help shows the usage)\n");
        goto done_opts;
    }
    if (model) {
        rc = cli_kws_model(model, dir, (char **)files.v, files.n, thr, r.json, threads);
        goto done_opts;
    }
    if (!cli_path_join(path, sizeof path, dir, "openwakeword")) {
        cli_fail(CMD, "", 2);
        goto done_opts;
    }
    r.k = ts_kws_new(&(ts_kws_opts){.struct_size = sizeof(ts_kws_opts), .models_dir = path,
                                     .keywords = nkw ? keywords : NULL, .nkeywords = nkw, .num_threads = threads});
    if (!r.k) {
        int io = ts_last_status() == TS_ERR_IO;
        cli_fail(CMD, "", 2);
        if (io) fprintf(stderr, "tessera kws: the models are fetched into data/speech by `bash scripts/install-deps.sh`; "
                                "--model-store DIR or TESSERA_DATA (DIR/speech) gives another directory\n");
        goto done_opts;
    }
    r.d = ts_kws_detector_new(ts_kws_num_labels(r.k), thr);
    rc = r.d ? score_all(&r, files.v, files.n) : cli_fail(CMD, "", 1);
    ts_kws_detector_free(r.d);
    ts_kws_free(r.k);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tessera kws: writing the output failed\n");
        rc = 1;
    }
done_opts:
    cli_opts_free(&os);
    return rc;
}
