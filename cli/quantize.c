/*
 * quantize.c — `tessera quantize`: an int8 copy of a model directory (issue 29). The copy holds
 * the same files (the f32 weights unchanged) and a config.json that records the quantization
 * (cli/quant_config.c), which `tessera run / eval / predict` read: their inference programs are
 * compiled with ts_compile_opts.quantize, so the weights are quantized when the program first runs.
 *  - --dynamic: activations quantized per tensor on every run (TS_QUANT_DYNAMIC), no data needed;
 *  - --calib DATA: static (TS_QUANT_STATIC): the activations' scales calibrated on DATA (cli/
 *    quantize_calib.c, ts_calib) and written into the record, fixed at run time.
 * With --eval DATA it scores the float and the int8 model side by side (a classifier: accuracy and
 * the class probabilities' differences; a QA model: EM and F1) and, with --max-drop P, refuses to
 * write a copy that loses more than P points (of accuracy, or of F1).
 *
 *   tessera quantize --model DIR (--dynamic | --calib DATA [--samples N] [--method M]) --out DIR_INT8
 *                    [--eval DATA [--max-drop P]]
 */
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>

#include "quantize.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera quantize --model DIR (--dynamic | --calib DATA) --out DIR_INT8 [options]\n"
    "  Writes DIR_INT8: DIR's files, its config.json recording int8 quantization (weights int8 per\n"
    "  output channel; activations int8 per tensor). tessera run, eval and predict run such a\n"
    "  directory's matmuls in int8.\n";

/* Copy file src to dst (config.json: with record, the "quantization" key, added last). 0 or the
 * exit code. */
static int copy_file(const char *src, const char *dst, const char *record) {
    size_t len = 0;
    char *s = cli_read_text(src, &len);
    if (!s) return fprintf(stderr, "tessera quantize: cannot read %s: %s\n", src, strerror(errno)), 2;
    FILE *f = fopen(dst, "wb");
    int ok = f != NULL;
    if (record) { /* the object's closing brace: the last '}' */
        char *close = strrchr(s, '}');
        if (!close) {
            fprintf(stderr, "tessera quantize: %s is not a JSON object\n", src);
            free(s);
            if (f) fclose(f);
            return 2;
        }
        ok = ok && fwrite(s, 1, (size_t)(close - s), f) == (size_t)(close - s);
        ok = ok && fprintf(f, ",\n  %s\n}\n", record) > 0;
    } else {
        ok = ok && fwrite(s, 1, len, f) == len;
    }
    if (f && fclose(f) != 0) ok = 0;
    free(s);
    if (!ok) return fprintf(stderr, "tessera quantize: cannot write %s: %s\n", dst, strerror(errno)), 1;
    return 0;
}

/* Every regular file of o->model into o->out, config.json with record. 0 or the exit code. */
static int copy_dir(const q_opts *o, const char *record) {
    if (ts_make_dirs(o->out) != TS_OK) return fprintf(stderr, "tessera quantize: --out: %s\n", cli_error()), 1;
    DIR *d = opendir(o->model);
    if (!d) return fprintf(stderr, "tessera quantize: --model %s: %s\n", o->model, strerror(errno)), 2;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        char src[4200], dst[4200];
        struct stat st;
        if (!cli_path_join(src, sizeof src, o->model, e->d_name) || !cli_path_join(dst, sizeof dst, o->out, e->d_name)) {
            fprintf(stderr, "tessera quantize: %s\n", cli_error());
            rc = 2;
            break;
        }
        if (stat(src, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        rc = copy_file(src, dst, !strcmp(e->d_name, "config.json") ? record : NULL);
    }
    closedir(d);
    return rc;
}

/* Accuracy (percent) of o->model on d, float (q NULL) or int8 (q's mode and scales), its class
 * probabilities into probs [n, nl]. NAN on failure (printed). */
static double score(const q_opts *o, const ts_quant_record *q, const ts_bert_config *cfg, const ts_model_meta *meta,
                    const ts_tokenizer *tok, const ts_text_dataset *d, double *probs) {
    if (q) cli_dev.quantize = q->mode, cli_dev.quant_scales = q->scales, cli_dev.nquant_scales = q->nscales;
    ts_program *p = cli_model_dir_program("quantize", o->model, cfg, o->batch, meta->max_len, o->threads,
                                          (const char *[]){"logits"}, 1);
    cli_dev.quantize = 0, cli_dev.quant_scales = NULL, cli_dev.nquant_scales = 0;
    double acc = NAN;
    if (p && ts_classify_add_probs(p, tok, d, o->batch, meta->max_len, probs) != TS_OK)
        fprintf(stderr, "tessera quantize: %s on %s: %s\n", o->model, o->eval, cli_error());
    else if (p) {
        int64_t total, right = ts_classify_count_right(d, probs, &total);
        acc = total ? 100.0 * (double)right / (double)total : NAN;
    }
    ts_program_free(p);
    return acc;
}

/* --eval of a classifier: float and int8 (q) side by side; *drop: points of accuracy lost. 0 or
 * the exit code. */
static int eval_cls(const q_opts *o, const ts_quant_record *q, const ts_bert_config *cfg, const ts_model_meta *meta,
                    const ts_tokenizer *tok, double *drop) {
    ts_text_opts to = {.text_column = o->text_col, .text_b_column = meta->text_b_column, .label_column = o->label_col,
                       .labels = (const char *const *)meta->labels, .nlabels = meta->nlabels};
    ts_text_dataset *d = ts_text_dataset_load(o->eval, &to);
    int rc = d ? 0 : cli_fail("quantize", "--eval ", 2);
    int64_t n = d ? ts_text_dataset_size(d) : 0;
    int nl = d ? ts_text_dataset_num_labels(d) : 1;
    if (!rc && n == 0) rc = 2, fprintf(stderr, "tessera quantize: --eval %s has no rows to score\n", o->eval);
    double *pr[2] = {calloc((size_t)(n ? n : 1) * (size_t)nl, sizeof(double)),
                     calloc((size_t)(n ? n : 1) * (size_t)nl, sizeof(double))};
    if (!rc && (!pr[0] || !pr[1])) rc = 1, fprintf(stderr, "tessera quantize: out of memory\n");
    double acc[2] = {NAN, NAN};
    for (int k = 0; k < 2 && !rc; k++)
        if (isnan(acc[k] = score(o, k ? q : NULL, cfg, meta, tok, d, pr[k]))) rc = 1;
    if (!rc) {
        double mx = 0, mean = 0;
        for (int64_t i = 0; i < n * nl; i++) {
            double e = fabs(pr[0][i] - pr[1][i]);
            mx = e > mx ? e : mx, mean += e / (double)(n * nl);
        }
        *drop = acc[0] - acc[1];
        printf("tessera quantize: %s (%lld rows): accuracy float %.2f%%, int8 %.2f%% (%+.2f points); class "
               "probabilities: max |float - int8| %.4f, mean %.5f\n", o->eval, (long long)n, acc[0], acc[1],
               acc[1] - acc[0], mx, mean);
    }
    free(pr[0]), free(pr[1]);
    ts_text_dataset_free(d);
    return rc;
}

/* --eval: the model's task's scores, float and int8 (q) side by side. 0 or the exit code. */
static int eval_both(const q_opts *o, const ts_quant_record *q, double *drop) {
    ts_bert_config cfg;
    ts_model_meta meta = {0};
    ts_tokenizer *tok = cli_model_dir_open("quantize", o->model, &cfg, &meta);
    if (!tok) return 2;
    int task = cli_task_of_model("quantize", NULL, o->model, &cfg, &meta);
    int rc = task < 0 ? 2 : task == CLI_TASK_QA ? cli_quantize_eval_qa(o, q, drop)
                                                : eval_cls(o, q, &cfg, &meta, tok, drop);
    ts_tokenizer_free(tok);
    ts_model_meta_free(&meta);
    return rc;
}

/* The flags' checks. 0 or 2 (printed). */
static int check_opts(const q_opts *o) {
    const char *miss = !o->model ? "--model DIR" : !o->out ? "--out DIR_INT8" : NULL;
    if (miss || o->dynamic == !!o->calib) {
        fprintf(stderr, "tessera quantize: %s\n(tessera quantize --help shows the usage)\n",
                miss ? miss : o->dynamic ? "--dynamic and --calib DATA: give one (dynamic or calibrated static int8)"
                            : "--dynamic or --calib DATA is required (dynamic or calibrated static int8)");
        if (miss) fprintf(stderr, "tessera quantize: %s is required\n", miss);
        return 2;
    }
    if (o->dynamic && (o->samples != -1 || o->method)) {
        fprintf(stderr, "tessera quantize: --samples and --method go with --calib DATA, not --dynamic\n");
        return 2;
    }
    if (o->calib && o->samples < 1 && o->samples != -1) {
        fprintf(stderr, "tessera quantize: --samples %d: the calibration rows, at least 1\n", o->samples);
        return 2;
    }
    if (o->calib && o->method && cli_quant_method(o->method) < 0) {
        fprintf(stderr, "tessera quantize: --method %s: takes minmax, percentile or entropy\n", o->method);
        return 2;
    }
    if (o->max_drop >= 0 && !o->eval) {
        fprintf(stderr, "tessera quantize: --max-drop needs --eval DATA (the accuracy it bounds)\n");
        return 2;
    }
    if (o->max_drop < 0 && o->max_drop != -1) {
        fprintf(stderr, "tessera quantize: --max-drop %g: points of accuracy, >= 0\n", o->max_drop);
        return 2;
    }
    if (cli_model_quantized(o->model)) {
        fprintf(stderr, "tessera quantize: --model %s is quantized already (its config.json has \"quantization\")\n",
                o->model);
        return 2;
    }
    if (!strcmp(o->model, o->out)) {
        fprintf(stderr, "tessera quantize: --out is --model (%s); write the int8 copy elsewhere\n", o->out);
        return 2;
    }
    return 0;
}

/* Calibrate (static) or not (dynamic), score, write. 0 or the exit code. */
static int quantize(q_opts *o) {
    ts_quant_record q = {.mode = TS_QUANT_DYNAMIC};
    const char *method = o->method ? o->method : "percentile";
    if (o->samples == -1) o->samples = 256;
    int rc = o->calib ? cli_quantize_calibrate(o, cli_quant_method(method), &q) : 0;
    double drop = 0;
    if (!rc && o->eval) rc = eval_both(o, &q, &drop);
    if (!rc && o->eval && o->max_drop >= 0 && drop > o->max_drop) {
        fprintf(stderr, "tessera quantize: int8 loses %.2f points on %s, more than --max-drop %g: %s not written\n",
                drop, o->eval, o->max_drop, o->out);
        rc = 1;
    }
    char *record = rc ? NULL : cli_quant_record_json(o->calib ? method : NULL, o->samples, q.scales, q.nscales);
    if (!rc && !record) rc = 1, fprintf(stderr, "tessera quantize: out of memory, or a weight name with '\"'\n");
    if (!rc) rc = copy_dir(o, record);
    if (!rc && o->calib)
        printf("tessera quantize: %s -> %s (int8 static: weights per output channel, activations per tensor with %d "
               "calibrated scales, %s)\n", o->model, o->out, q.nscales, method);
    else if (!rc)
        printf("tessera quantize: %s -> %s (int8 dynamic: weights per output channel, activations per tensor, "
               "per run)\n", o->model, o->out);
    free(record);
    if (o->calib) ts_quant_record_free(&q);
    return rc;
}

int cli_quantize(int argc, char **argv) {
    q_opts o = {.batch = 32, .max_drop = -1, .samples = -1}; /* -1: not given */
    const cli_opt opts[] = {
        {"model", CLI_STR, &o.model, 0, "DIR", "the float model directory (tessera finetune's --out)"},
        {"out", CLI_STR, &o.out, 0, "DIR_INT8", "the quantized model directory to write"},
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
    if (rc == 1 && !(rc = check_opts(&o))) rc = quantize(&o);
    cli_opts_free(&os);
    return rc;
}
