/*
 * quantize.c — `tessera quantize` (ts_quantize_model_dir): its flags and what the call reports.
 */
#include "cli.h"
#include "options.h"

static const char *USAGE =
    "  Writes DIR_INT8: DIR's files, its config.json recording int8 quantization (weights int8 per\n"
    "  output channel; activations int8 per tensor), --dynamic (the activations' scales taken on\n"
    "  every run) or --calib DATA (calibrated). tessera run, eval and predict run such a\n"
    "  directory's matmuls in int8.\n";

typedef struct q_flags {
    const char *model, *out, *eval, *calib, *method, *text_col, *label_col;
    int dynamic, batch, threads, samples;
    double max_drop;
} q_flags;

/* The checks of flags the library does not see (it takes a mode, not two flags): 0 or 2 (printed). */
static int check_flags(const q_flags *o) {
    const char *bad = NULL;
    char msg[256];
    if (o->dynamic == !!o->calib)
        bad = o->dynamic ? "--dynamic and --calib DATA: give one (dynamic or calibrated static int8)"
                         : "--dynamic or --calib DATA is required (dynamic or calibrated static int8)";
    else if (o->dynamic && (o->samples != -1 || o->method))
        bad = "--samples and --method go with --calib DATA, not --dynamic";
    else if (o->samples == 0)
        bad = "--samples 0: the calibration rows, at least 1";
    else if (o->method && ts_calib_method_parse(o->method) < 0)
        snprintf(msg, sizeof msg, "--method %s: takes minmax, percentile or entropy", o->method), bad = msg;
    else if (o->max_drop >= 0 && !o->eval)
        bad = "--max-drop needs --eval DATA (the accuracy it bounds)";
    if (bad) fprintf(stderr, "tessera quantize: %s\n(tessera quantize --help shows the usage)\n", bad);
    return bad ? 2 : 0;
}

/* What the call did, printed as it went: calibration, the scores, the copy. */
static void print_report(const q_flags *o, const ts_quantize_report *r, const char *method, int ok) {
    int qa = r->task == TS_FINETUNE_QA;
    if (r->calibrated)
        printf("tessera quantize: calibrated on %lld %s of %s (%s): %d activation scales, %.1f s\n",
               (long long)r->calib_samples, qa ? "windows" : "rows", o->calib, method, r->nscales, r->calib_seconds);
    if (r->evaluated && qa)
        printf("tessera quantize: %s (%lld questions): exact match float %.2f, int8 %.2f (%+.2f); F1 float %.2f, int8 "
               "%.2f (%+.2f points)\n", o->eval, (long long)r->eval_rows, r->float_em, r->int8_em,
               r->int8_em - r->float_em, r->float_score, r->int8_score, r->int8_score - r->float_score);
    else if (r->evaluated)
        printf("tessera quantize: %s (%lld rows): accuracy float %.2f%%, int8 %.2f%% (%+.2f points); class "
               "probabilities: max |float - int8| %.4f, mean %.5f\n", o->eval, (long long)r->eval_rows, r->float_score,
               r->int8_score, r->int8_score - r->float_score, r->max_prob_diff, r->mean_prob_diff);
    if (ok && o->calib)
        printf("tessera quantize: %s -> %s (int8 static: weights per output channel, activations per tensor with %d "
               "calibrated scales, %s)\n", o->model, o->out, r->nscales, method);
    else if (ok)
        printf("tessera quantize: %s -> %s (int8 dynamic: weights per output channel, activations per tensor, "
               "per run)\n", o->model, o->out);
}

/* The int8 copy made (ts_quantize_model_dir) and what was done printed: the exit code. */
static int quantize(const q_flags *f) {
    const char *method = f->method ? f->method : "percentile";
    ts_quantize_opts o = {.struct_size = sizeof o, .model_dir = f->model, .out_dir = f->out,
                          .mode = f->calib ? TS_QUANT_STATIC : TS_QUANT_DYNAMIC, .calib_file = f->calib,
                          .method = ts_calib_method_parse(method), .samples = f->samples == -1 ? 256 : f->samples,
                          .eval_file = f->eval, .max_drop = f->max_drop, .text_column = f->text_col,
                          .label_column = f->label_col, .batch = f->batch, .threads = f->threads};
    ts_quantize_report r = {.struct_size = sizeof r};
    ts_status st = ts_quantize_model_dir(&o, &r);
    print_report(f, &r, method, st == TS_OK);
    if (st) fprintf(stderr, "tessera quantize: %s\n", cli_error());
    return st == TS_OK ? 0 : st == TS_ERR_ARG ? 2 : 1;
}

int cli_quantize(int argc, char **argv) {
    q_flags o = {.batch = 32, .max_drop = -1, .samples = -1}; /* -1: not given */
    const cli_opt opts[] = {
        {"model", CLI_STR, &o.model, 1, "DIR", "the float model directory (tessera finetune's --out)"},
        {"out", CLI_STR, &o.out, 1, "DIR_INT8", "the quantized model directory to write"},
        {"dynamic", CLI_FLAG, &o.dynamic, 0, NULL,
         "dynamic quantization: the activations' scale taken on every run"},
        {"calib", CLI_STR, &o.calib, 0, "DATA",
         "static quantization: the activations' scales calibrated on DATA, run\n"
         "through the float model (a classifier: a labelled .tsv / .csv / .jsonl\n"
         "as tessera eval takes; a QA model: a SQuAD .json or questions .jsonl)"},
        {"samples", CLI_INT, &o.samples, 0, "N",
         "calibration rows (QA: windows), a seeded shuffle of DATA's (default 256)"},
        {"method", CLI_STR, &o.method, 0, "M",
         "minmax (max |a|), percentile (99.99th of |a|) or entropy (TensorRT's KL\n"
         "threshold) (default percentile)"},
        {"eval", CLI_STR, &o.eval, 0, "DATA",
         "score the float and the int8 model on DATA (a classifier: a labelled file,\n"
         "as tessera eval: accuracy of each, and the max and mean absolute difference\n"
         "of their class probabilities; a QA model: a SQuAD file, EM and F1)"},
        {"max-drop", CLI_FLOAT, &o.max_drop, 0, "P",
         "with --eval: refuse to write DIR_INT8 when int8 loses more than P points\n"
         "of accuracy (QA: of F1)"},
        {"text-column", CLI_STR, &o.text_col, 0, "NAME", "DATA's text column (default text)"},
        {"label-column", CLI_STR, &o.label_col, 0, "NAME", "DATA's label column (default label)"},
        {"batch", CLI_INT, &o.batch, 1, "N",
         "sequences per forward pass (default 32)"},
        {"threads", CLI_INT, &o.threads, 0, "N",
         "CPU threads (default: all)"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "quantize", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc == 1 && !(rc = check_flags(&o))) rc = quantize(&o);
    cli_opts_free(&os);
    return rc;
}
