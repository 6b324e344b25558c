/*
 * quantize.c — `tessera quantize`: an int8 copy of a model directory (issue 29, dynamic
 * quantization: no calibration set). The copy holds the same files (the f32 weights unchanged)
 * and a config.json that records
 *   "quantization": {"mode": "dynamic", "weights": "int8 per channel", "activations": "int8 per tensor, per run"}
 * which `tessera run / eval / predict` read (cli_model_quantized): their inference programs are
 * compiled with ts_compile_opts.quantize = TS_QUANT_DYNAMIC, so the weights are quantized when the
 * program first runs. With --eval DATA (a classifier's labelled file) it scores the float and the
 * int8 model side by side and, with --max-drop P, refuses to write a copy that loses more than P
 * points of accuracy.
 *
 *   tessera quantize --model DIR --dynamic --out DIR_INT8 [--eval DATA [--max-drop P]]
 */
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>

#include "cli.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera quantize --model DIR --dynamic --out DIR_INT8 [options]\n"
    "  Writes DIR_INT8: DIR's files, its config.json recording int8 dynamic quantization (weights\n"
    "  int8 per output channel, activations int8 per tensor, their scale taken every run). tessera\n"
    "  run, eval and predict run such a directory's matmuls in int8.\n"
    "  --dynamic            dynamic quantization (required: calibrated quantization is not here yet)\n"
    "  --eval DATA          a classifier: score the float and the int8 model on DATA (a labelled\n"
    "                       .tsv / .csv / .jsonl, as tessera eval): accuracy of each, and the max\n"
    "                       and mean absolute difference of their class probabilities\n"
    "  --max-drop P         with --eval: refuse to write DIR_INT8 when int8 loses more than P points\n"
    "                       of accuracy\n"
    "  --text-column NAME, --label-column NAME   DATA's columns (default text, label)\n"
    "  --batch N            sequences per forward pass (default 32)\n"
    "  --threads N          CPU threads (default: all)\n";

static const char *QUANT_JSON = "\"quantization\": {\"mode\": \"dynamic\", \"weights\": \"int8 per channel\", "
                                "\"activations\": \"int8 per tensor, per run\"}";

typedef struct q_opts {
    const char *model, *out, *eval, *text_col, *label_col;
    int dynamic, batch, threads;
    double max_drop;
} q_opts;

/* The whole of file path as a string (NULL when it cannot be read). */
static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
        if (fread(buf, 1, (size_t)n, f) != (size_t)n) free(buf), buf = NULL;
        else buf[n] = 0, *len = (size_t)n;
    }
    fclose(f);
    return buf;
}

/* The config's "quantization" object names mode "dynamic" (a plain text search: the key is ours,
 * written as QUANT_JSON; the config was parsed already by ts_bert_config_load). */
int cli_model_quantized(const char *dir) {
    char path[4200];
    size_t len = 0;
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *s = read_text(path, &len);
    const char *q = s ? strstr(s, "\"quantization\"") : NULL, *end = q ? strchr(q, '}') : NULL;
    const char *mode = q ? strstr(q, "\"mode\"") : NULL;
    int yes = mode && end && mode < end && (size_t)(end - mode) > 8 && strstr(mode, "\"dynamic\"") &&
              strstr(mode, "\"dynamic\"") < end;
    free(s);
    return yes;
}

/* Copy file src to dst (config.json: with QUANT_JSON added as its last key). 0 or the exit code. */
static int copy_file(const char *src, const char *dst, int config) {
    size_t len = 0;
    char *s = read_text(src, &len);
    if (!s) return fprintf(stderr, "tessera quantize: cannot read %s: %s\n", src, strerror(errno)), 2;
    FILE *f = fopen(dst, "wb");
    int ok = f != NULL;
    if (config) { /* the object's closing brace: the last '}' */
        char *close = strrchr(s, '}');
        if (!close) {
            fprintf(stderr, "tessera quantize: %s is not a JSON object\n", src);
            free(s);
            if (f) fclose(f);
            return 2;
        }
        ok = ok && fwrite(s, 1, (size_t)(close - s), f) == (size_t)(close - s);
        ok = ok && fprintf(f, ",\n  %s\n}\n", QUANT_JSON) > 0;
    } else {
        ok = ok && fwrite(s, 1, len, f) == len;
    }
    if (f && fclose(f) != 0) ok = 0;
    free(s);
    if (!ok) return fprintf(stderr, "tessera quantize: cannot write %s: %s\n", dst, strerror(errno)), 1;
    return 0;
}

/* Every regular file of o->model into o->out. 0 or the exit code. */
static int copy_dir(const q_opts *o) {
    if (ts_make_dirs(o->out) != TS_OK) return fprintf(stderr, "tessera quantize: --out: %s\n", ts_last_error()), 1;
    DIR *d = opendir(o->model);
    if (!d) return fprintf(stderr, "tessera quantize: --model %s: %s\n", o->model, strerror(errno)), 2;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        char src[4200], dst[4200];
        struct stat st;
        snprintf(src, sizeof src, "%s/%s", o->model, e->d_name);
        snprintf(dst, sizeof dst, "%s/%s", o->out, e->d_name);
        if (stat(src, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        rc = copy_file(src, dst, !strcmp(e->d_name, "config.json"));
    }
    closedir(d);
    return rc;
}

/* Accuracy (percent) of o->model on d, float (q = 0) or int8 (q = 1), its class probabilities
 * into probs [n, nl]. NAN on failure (printed). */
static double score(const q_opts *o, int q, const ts_bert_config *cfg, const ts_model_meta *meta,
                    const ts_tokenizer *tok, const ts_text_dataset *d, double *probs) {
    cli_dev.quantize = q;
    ts_program *p = cli_model_dir_program("quantize", o->model, cfg, o->batch, meta->max_len, o->threads,
                                          (const char *[]){"logits"}, 1);
    cli_dev.quantize = 0;
    double acc = NAN;
    if (p && ts_classify_add_probs(p, tok, d, o->batch, meta->max_len, probs) != TS_OK)
        fprintf(stderr, "tessera quantize: %s on %s: %s\n", o->model, o->eval, ts_last_error());
    else if (p) {
        int64_t total, right = ts_classify_count_right(d, probs, &total);
        acc = total ? 100.0 * (double)right / (double)total : NAN;
    }
    ts_program_free(p);
    return acc;
}

/* --eval: float and int8 side by side; *drop: points of accuracy lost. 0 or the exit code. */
static int eval_both(const q_opts *o, double *drop) {
    ts_bert_config cfg;
    ts_model_meta meta = {0};
    ts_tokenizer *tok = cli_model_dir_open("quantize", o->model, &cfg, &meta);
    if (!tok) return 2;
    int rc = cli_task_of_model("quantize", "classify", o->model, &cfg, &meta) == CLI_TASK_CLASSIFY ? 0 : 2;
    ts_text_opts to = {.text_column = o->text_col, .text_b_column = meta.text_b_column, .label_column = o->label_col,
                       .labels = (const char *const *)meta.labels, .nlabels = meta.nlabels};
    ts_text_dataset *d = rc ? NULL : ts_text_dataset_load(o->eval, &to);
    if (!rc && !d) rc = cli_fail("quantize", "--eval ", 2);
    int64_t n = d ? ts_text_dataset_size(d) : 0;
    int nl = d ? ts_text_dataset_num_labels(d) : 1;
    if (!rc && n == 0) rc = 2, fprintf(stderr, "tessera quantize: --eval %s has no rows to score\n", o->eval);
    double *pr[2] = {calloc((size_t)(n ? n : 1) * (size_t)nl, sizeof(double)),
                     calloc((size_t)(n ? n : 1) * (size_t)nl, sizeof(double))};
    if (!rc && (!pr[0] || !pr[1])) rc = 1, fprintf(stderr, "tessera quantize: out of memory\n");
    double acc[2] = {NAN, NAN};
    for (int q = 0; q < 2 && !rc; q++)
        if (isnan(acc[q] = score(o, q, &cfg, &meta, tok, d, pr[q]))) rc = 1;
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
    ts_tokenizer_free(tok);
    ts_model_meta_free(&meta);
    return rc;
}

/* The flags' checks. 0 or 2 (printed). */
static int check_opts(const q_opts *o) {
    const char *miss = !o->model ? "--model DIR" : !o->out ? "--out DIR_INT8" : !o->dynamic ? "--dynamic" : NULL;
    if (miss) {
        fprintf(stderr, "tessera quantize: %s is required%s\n(tessera quantize --help shows the usage)\n", miss,
                !strcmp(miss, "--dynamic") ? " (the only mode so far: calibrated int8 is to come)" : "");
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

int cli_quantize(int argc, char **argv) {
    q_opts o = {.batch = 32, .max_drop = -1}; /* -1: no --max-drop */
    const ts_opt opts[] = {
        {"model", TS_OPT_STR, &o.model, 0},          {"out", TS_OPT_STR, &o.out, 0},
        {"dynamic", TS_OPT_FLAG, &o.dynamic, 0},     {"eval", TS_OPT_STR, &o.eval, 0},
        {"max-drop", TS_OPT_FLOAT, &o.max_drop, 0},  {"text-column", TS_OPT_STR, &o.text_col, 0},
        {"label-column", TS_OPT_STR, &o.label_col, 0}, {"batch", TS_OPT_INT, &o.batch, 1},
        {"threads", TS_OPT_INT, &o.threads, 0},
    };
    ts_optset os;
    int rc = cli_opts_parse(&os, "quantize", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done;
    rc = check_opts(&o);
    double drop = 0;
    if (!rc && o.eval) rc = eval_both(&o, &drop);
    if (!rc && o.eval && o.max_drop >= 0 && drop > o.max_drop) {
        fprintf(stderr, "tessera quantize: int8 loses %.2f points of accuracy on %s, more than --max-drop %g: %s not "
                        "written\n", drop, o.eval, o.max_drop, o.out);
        rc = 1;
    }
    if (!rc) rc = copy_dir(&o);
    if (!rc) printf("tessera quantize: %s -> %s (int8 dynamic: weights per output channel, activations per tensor, "
                    "per run)\n", o.model, o.out);
done:
    ts_options_free(&os);
    return rc;
}
