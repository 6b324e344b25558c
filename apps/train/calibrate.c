/*
 * calibrate.c — the activation scales of static int8 (ts_quantize_model_dir, quantize_impl.h),
 * measured with ts_calib on calibration data run through the float model: a classifier's labelled
 * .tsv / .csv / .jsonl (the labels unused), or a QA model's SQuAD .json or questions as .jsonl
 * lines {"question", "context"}; the first `samples` rows (QA: windows) of a seeded shuffle.
 */
#include "common/app.h"

#include "train/quantize_impl.h"

/* The calibration rows: a classifier's dataset or a QA model's windows. */
typedef struct calib_data {
    ts_text_dataset *d;
    ts_squad *s;
    int64_t n;      /* rows (windows) in the file */
    int64_t *order; /* a seeded shuffle of them */
} calib_data;

/* A QA file: SQuAD JSON, or JSON lines of questions (by the name's .jsonl). NULL, error set. */
static ts_squad *load_qa(const qz_run *R, const char *path) {
    ts_squad_opts so = qz_squad_opts(&R->meta);
    size_t len = strlen(path), n = 0;
    ts_squad *s = NULL;
    if (len < 6 || strcmp(path + len - 6, ".jsonl")) {
        if ((s = ts_squad_load(path, R->tok, &so)) && ts_squad_check(s, path, 0) != TS_OK) ts_squad_free(s), s = NULL;
    } else {
        char *text = ts_read_file(path, &n);
        if (text) s = ts_squad_parse_jsonl(path, text, n, R->tok, &so);
        free(text);
    }
    if (!s) tr_err_prefixed(TS_ERR_ARG, "calib_file %s (questions for a QA model)", path);
    return s;
}

static ts_status load_data(const qz_run *R, calib_data *cd) {
    const ts_quantize_opts *o = &R->o;
    if (R->qa) {
        if (!(cd->s = load_qa(R, o->calib_file))) return TS_ERR_ARG;
        cd->n = ts_squad_num_features(cd->s);
    } else {
        ts_text_opts to = {.text_column = o->text_column, .text_b_column = R->meta.text_b_column,
                           .label_column = o->label_column, .labels = (const char *const *)R->meta.labels,
                           .nlabels = R->meta.nlabels};
        if (!(cd->d = ts_text_dataset_load(o->calib_file, &to)))
            return tr_err_prefixed(TS_ERR_ARG, "calib_file (texts for a classifier, with columns %s and %s)",
                                   o->text_column, o->label_column);
        cd->n = ts_text_dataset_size(cd->d);
    }
    if (cd->n == 0) return ts_set_error(TS_ERR_ARG, "calib_file %s has no rows to calibrate on", o->calib_file);
    if (!(cd->order = malloc(sizeof(int64_t) * (size_t)cd->n))) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    ts_permutation(29, cd->n, cd->order);
    return TS_OK;
}

/* The observing program over the model's float graph; its weights loaded. NULL, error set. */
static ts_calib *make_calib(const qz_run *R, int seq) {
    const ts_quantize_opts *o = &R->o;
    ts_graph *g = ts_graph_new();
    ts_bert_outputs out;
    const char *fetch[7];
    ts_calib *c = NULL;
    if (g && ts_bert_build(g, &R->cfg, R->cfg.head, o->batch, seq, &out) == TS_OK) {
        int nf = ts_bert_output_names(&out, fetch);
        c = ts_calib_new(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .num_threads = o->threads,
                                               .nfetch = nf, .fetches = fetch, .inference = 1, .skip_param_init = 1,
                                               .memory_limit = o->memory_limit},
                         o->method);
    }
    ts_graph_free(g);
    if (!c) return tr_err_prefixed(ts_last_status() ? ts_last_status() : TS_ERR_NOMEM, "%s", o->model_dir), NULL;
    char path[4200];
    if (ts_path_join(path, sizeof path, o->model_dir, "model.safetensors") == TS_OK) {
        if (ts_calib_num_weights(c) == 0)
            ts_set_error(TS_ERR_ARG,
                         "model_dir %s has no quantizable op (no f32 matmul by a 2-D weight): nothing to "
                         "calibrate, no int8 copy written",
                         o->model_dir);
        else if (ts_program_load(ts_calib_program(c), path, TS_LOAD_STRICT | o->load_flags, NULL) == TS_OK)
            return c;
    }
    ts_calib_free(c);
    return NULL;
}

/* Feed, run and observe the first `samples` rows of cd's shuffle, a batch at a time. */
static ts_status observe_all(const qz_run *R, ts_calib *c, int seq, const calib_data *cd, int64_t samples) {
    int B = R->o.batch;
    ts_batch_buf bb;
    if (!ts_batch_buf_init(&bb, B, seq, R->qa ? 0 : 1)) return ts_set_error(TS_ERR_NOMEM, "out of memory");
    ts_program *p = ts_calib_program(c);
    ts_status st = TS_OK;
    for (int64_t i = 0; i < samples && st == TS_OK; i += B) {
        int n = (int)(samples - i < B ? samples - i : B);
        if (R->qa) {
            st = ts_squad_feed(p, cd->s, cd->order + i, n, B, &bb);
        } else {
            st = ts_text_dataset_batch(cd->d, R->tok, cd->order + i, n, B, seq, &bb.b);
            if (st == TS_OK) st = ts_batch_buf_feed(&bb, p, 0);
        }
        if (st == TS_OK) st = ts_program_run(p);
        if (st == TS_OK) st = ts_calib_observe(c);
    }
    ts_batch_buf_free(&bb);
    return st;
}

/* The scales of c into q (names copied). */
static ts_status take_scales(ts_calib *c, ts_quant_record *q) {
    const ts_quant_scale *sc;
    int n = ts_calib_scales(c, &sc);
    if (n < 0) return ts_last_status();
    if (n == 0) return ts_set_error(TS_ERR_RUNTIME, "every calibrated activation was zero");
    q->mode = TS_QUANT_STATIC;
    q->scales = calloc((size_t)n, sizeof *q->scales);
    for (int i = 0; q->scales && i < n; i++) {
        q->scales[i] = (ts_quant_scale){strdup(sc[i].weight), sc[i].scale};
        if (q->scales[i].weight) q->nscales++;
    }
    return q->nscales == n ? TS_OK : ts_set_error(TS_ERR_NOMEM, "out of memory");
}

ts_status qz_calibrate(qz_run *R) {
    calib_data cd = {0};
    int seq = R->meta.max_len;
    ts_status st = load_data(R, &cd);
    ts_calib *c = st ? NULL : make_calib(R, seq);
    if (!st && !c) st = ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
    int64_t samples = cd.n < R->o.samples ? cd.n : R->o.samples;
    double t0 = ts_seconds();
    if (!st && (st = observe_all(R, c, seq, &cd, samples)) != TS_OK)
        tr_err_prefixed(st, "calibrating on %s", R->o.calib_file);
    if (!st) st = take_scales(c, &R->q);
    if (!st) {
        R->rep.calibrated = 1, R->rep.calib_samples = samples, R->rep.nscales = R->q.nscales;
        R->rep.calib_seconds = ts_seconds() - t0;
    }
    ts_calib_free(c);
    free(cd.order);
    ts_text_dataset_free(cd.d);
    ts_squad_free(cd.s);
    return st;
}
