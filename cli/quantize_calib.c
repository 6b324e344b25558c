/*
 * quantize_calib.c — `tessera quantize --calib DATA`: the activation scales of static int8
 * measured on calibration data (ts_calib, tessera_core.h), for a classifier (DATA: a labelled
 * .tsv / .csv / .jsonl as tessera eval takes; the labels are not used) or a QA model (DATA: a
 * SQuAD .json, or questions as .jsonl lines {"question", "context"} as tessera predict takes);
 * and the float-vs-int8 EM / F1 of a QA model for --eval.
 */
#include "qa.h"
#include "quantize.h"
#include "train_common.h"

static const char *const METHODS[] = {"minmax", "percentile", "entropy"}; /* TS_CALIB_* order */

int cli_quant_method(const char *name) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, METHODS[i])) return i;
    return -1;
}

/* The calibration rows: a classifier's dataset or a QA model's windows. */
typedef struct calib_data {
    int task;
    ts_text_dataset *d;
    ts_squad *s;
    int64_t n;      /* rows (windows) in the file */
    int64_t *order; /* a seeded shuffle of them */
} calib_data;

static ts_squad_opts squad_opts(const ts_model_meta *meta) {
    return (ts_squad_opts){.max_seq_len = meta->max_len,
                           .doc_stride = meta->doc_stride ? meta->doc_stride : ts_squad_default_stride(meta->max_len),
                           .max_query_len = meta->max_query_len ? meta->max_query_len
                                                                : ts_squad_default_query(meta->max_len),
                           .relocate_answers = 1};
}

/* A QA file: SQuAD JSON, or JSON lines of questions (by the name's .jsonl). NULL after printing. */
static ts_squad *load_qa(const char *flag, const char *path, const ts_tokenizer *tok, const ts_model_meta *meta) {
    ts_squad_opts so = squad_opts(meta);
    size_t len = strlen(path), n = 0;
    if (len < 6 || strcmp(path + len - 6, ".jsonl")) return cli_qa_load("quantize", flag, path, tok, &so, 0);
    char *text = cli_read_text(path, &n);
    if (!text) {
        fprintf(stderr, "tessera quantize: %s %s: %s\n", flag, path, strerror(errno));
        return NULL;
    }
    ts_squad *s = ts_squad_parse_jsonl(path, text, n, tok, &so);
    free(text);
    if (!s) fprintf(stderr, "tessera quantize: %s %s (questions for a QA model): %s\n", flag, path, cli_error());
    return s;
}

static int load_data(const q_opts *o, const ts_tokenizer *tok, const ts_model_meta *meta, calib_data *cd) {
    if (cd->task == CLI_TASK_QA) {
        if (!(cd->s = load_qa("--calib", o->calib, tok, meta))) return 2;
        cd->n = ts_squad_num_features(cd->s);
    } else {
        ts_text_opts to = {.text_column = o->text_col, .text_b_column = meta->text_b_column,
                           .label_column = o->label_col, .labels = (const char *const *)meta->labels,
                           .nlabels = meta->nlabels};
        if (!(cd->d = ts_text_dataset_load(o->calib, &to))) {
            fprintf(stderr, "tessera quantize: --calib (texts for a classifier, with columns %s and %s): %s\n",
                    o->text_col ? o->text_col : "text", o->label_col ? o->label_col : "label", cli_error());
            return 2;
        }
        cd->n = ts_text_dataset_size(cd->d);
    }
    if (cd->n == 0) {
        fprintf(stderr, "tessera quantize: --calib %s has no rows to calibrate on\n", o->calib);
        return 2;
    }
    if (!(cd->order = malloc(sizeof(int64_t) * (size_t)cd->n))) return fprintf(stderr, "tessera quantize: out of memory\n"), 1;
    ts_permutation(29, cd->n, cd->order);
    return 0;
}

/* The observing program over the model's float graph; its weights loaded. NULL after printing. */
static ts_calib *make_calib(const q_opts *o, const ts_bert_config *cfg, int seq, int method) {
    ts_graph *g = ts_graph_new();
    ts_bert_outputs out;
    const char *fetch[7];
    ts_calib *c = NULL;
    if (g && ts_bert_build(g, cfg, cfg->head, o->batch, seq, &out) == TS_OK) {
        int nf = ts_bert_output_names(&out, fetch);
        c = ts_calib_new(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .num_threads = o->threads,
                                               .nfetch = nf, .fetches = fetch, .inference = 1, .skip_param_init = 1,
                                               .memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0)},
                         method);
    }
    ts_graph_free(g);
    if (!c) return fprintf(stderr, "tessera quantize: %s: %s\n", o->model, cli_error()), NULL;
    char path[4200];
    if (!cli_path_join(path, sizeof path, o->model, "model.safetensors")) {
        fprintf(stderr, "tessera quantize: --model: %s\n", cli_error());
    } else if (ts_calib_num_weights(c) == 0) {
        fprintf(stderr, "tessera quantize: %s has no quantizable op (no f32 matmul by a 2-D weight): nothing to "
                        "calibrate, no int8 copy written\n", o->model);
    } else if (ts_program_load(ts_calib_program(c), path, cli_load_flags(1), NULL) == TS_OK) {
        return c;
    } else {
        fprintf(stderr, "tessera quantize: %s\n", cli_error());
    }
    ts_calib_free(c);
    return NULL;
}

/* Feed, run and observe the first `samples` rows of cd's shuffle, a batch at a time. */
static ts_status observe_all(const q_opts *o, ts_calib *c, const ts_tokenizer *tok, int seq, const calib_data *cd,
                             int64_t samples) {
    ts_batch_buf bb;
    if (!ts_batch_buf_init(&bb, o->batch, seq, cd->task == CLI_TASK_QA ? 0 : 1))
        return ts_set_error(TS_ERR_NOMEM, "out of memory");
    ts_program *p = ts_calib_program(c);
    ts_status st = TS_OK;
    for (int64_t i = 0; i < samples && st == TS_OK; i += o->batch) {
        int n = (int)(samples - i < o->batch ? samples - i : o->batch);
        if (cd->task == CLI_TASK_QA) {
            st = ts_squad_feed(p, cd->s, cd->order + i, n, o->batch, &bb);
        } else {
            st = ts_text_dataset_batch(cd->d, tok, cd->order + i, n, o->batch, seq, &bb.b);
            if (st == TS_OK) st = ts_batch_buf_feed(&bb, p, 0);
        }
        if (st == TS_OK) st = ts_program_run(p);
        if (st == TS_OK) st = ts_calib_observe(c);
    }
    ts_batch_buf_free(&bb);
    return st;
}

/* The scales of c into out (names copied). 0 or the exit code. */
static int take_scales(ts_calib *c, ts_quant_record *out) {
    const ts_quant_scale *sc;
    int n = ts_calib_scales(c, &sc);
    if (n <= 0) {
        fprintf(stderr, "tessera quantize: %s\n", n < 0 ? cli_error() : "every calibrated activation was zero");
        return 1;
    }
    out->mode = TS_QUANT_STATIC;
    out->scales = calloc((size_t)n, sizeof *out->scales);
    for (int i = 0; out->scales && i < n; i++) {
        out->scales[i] = (ts_quant_scale){strdup(sc[i].weight), sc[i].scale};
        if (out->scales[i].weight) out->nscales++;
    }
    return out->nscales == n ? 0 : (fprintf(stderr, "tessera quantize: out of memory\n"), 1);
}

int cli_quantize_calibrate(const q_opts *o, int method, ts_quant_record *out) {
    ts_bert_config cfg;
    ts_model_meta meta = {0};
    calib_data cd = {0};
    memset(out, 0, sizeof *out);
    ts_tokenizer *tok = cli_model_dir_open("quantize", o->model, &cfg, &meta);
    if (!tok) return 2;
    int rc = (cd.task = cli_task_of_model("quantize", NULL, o->model, &cfg, &meta)) < 0 ? 2 : 0;
    if (!rc) rc = load_data(o, tok, &meta, &cd);
    ts_calib *c = rc ? NULL : make_calib(o, &cfg, meta.max_len, method);
    if (!rc && !c) rc = 2;
    int64_t samples = cd.n < o->samples ? cd.n : o->samples;
    double t0 = ts_seconds();
    if (!rc && observe_all(o, c, tok, meta.max_len, &cd, samples) != TS_OK)
        rc = 1, fprintf(stderr, "tessera quantize: calibrating on %s: %s\n", o->calib, cli_error());
    if (!rc) rc = take_scales(c, out);
    if (!rc)
        printf("tessera quantize: calibrated on %lld %s of %s (%s): %d activation scales, %.1f s\n", (long long)samples,
               cd.task == CLI_TASK_QA ? "windows" : "rows", o->calib, METHODS[method], out->nscales, ts_seconds() - t0);
    ts_calib_free(c);
    free(cd.order);
    ts_text_dataset_free(cd.d);
    ts_squad_free(cd.s);
    ts_tokenizer_free(tok);
    ts_model_meta_free(&meta);
    return rc;
}

/* EM / F1 of model dir on s, float (q NULL) or int8. 0 or the exit code. */
static int score_qa(const q_opts *o, const ts_bert_config *cfg, int seq, const ts_squad *s, const ts_quant_record *q,
                    double *em, double *f1) {
    if (q) cli_dev.quantize = q->mode, cli_dev.quant_scales = q->scales, cli_dev.nquant_scales = q->nscales;
    ts_program *p = cli_model_dir_program("quantize", o->model, cfg, o->batch, seq, o->threads,
                                          (const char *[]){"start_logits", "end_logits"}, 2);
    cli_dev.quantize = 0, cli_dev.quant_scales = NULL, cli_dev.nquant_scales = 0;
    int rc = p ? cli_qa_score("quantize", p, s, o->batch, seq, TS_SQUAD_N_BEST, TS_SQUAD_MAX_ANSWER_LEN, em, f1) : 1;
    ts_program_free(p);
    return rc;
}

int cli_quantize_eval_qa(const q_opts *o, const ts_quant_record *q, double *drop) {
    ts_bert_config cfg;
    ts_model_meta meta = {0};
    ts_tokenizer *tok = cli_model_dir_open("quantize", o->model, &cfg, &meta);
    if (!tok) return 2;
    ts_squad_opts so = squad_opts(&meta);
    so.relocate_answers = 0;
    ts_squad *s = cli_qa_load("quantize", "--eval", o->eval, tok, &so, 1);
    double em[2], f1[2];
    int rc = s ? 0 : 2;
    for (int k = 0; k < 2 && !rc; k++) rc = score_qa(o, &cfg, meta.max_len, s, k ? q : NULL, &em[k], &f1[k]);
    if (!rc) {
        *drop = f1[0] - f1[1];
        printf("tessera quantize: %s (%lld questions): exact match float %.2f, int8 %.2f (%+.2f); F1 float %.2f, int8 "
               "%.2f (%+.2f points)\n", o->eval, (long long)ts_squad_num_examples(s), em[0], em[1], em[1] - em[0], f1[0],
               f1[1], f1[1] - f1[0]);
    }
    ts_squad_free(s);
    ts_tokenizer_free(tok);
    ts_model_meta_free(&meta);
    return rc;
}
