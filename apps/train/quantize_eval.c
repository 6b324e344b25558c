/*
 * quantize_eval.c — the float and the int8 model scored side by side (ts_quantize_model_dir,
 * quantize_impl.h): a classifier's accuracy on a labelled file and how far apart the two models'
 * class probabilities are; a QA model's exact match and F1 on a SQuAD file.
 */
#include "common/app.h"

#include <math.h>

#include "train/quantize_impl.h"

/* Accuracy (percent) of the model on d, float (q NULL) or int8, its class probabilities into
 * probs [n, labels]. TS_OK or the error. */
static ts_status score_cls(const qz_run *R, const ts_quant_record *q, const ts_text_dataset *d, double *probs,
                           double *acc) {
    tr_program_opts po = qz_program_opts(R, q);
    ts_program *p = tr_model_program(R->o.model_dir, &R->cfg, &po, (const char *[]){"logits"}, 1);
    ts_status st = p ? ts_classify_add_probs(p, R->tok, d, R->o.batch, R->meta.max_len, probs) : ts_last_status();
    if (st == TS_OK) {
        int64_t total, right = ts_classify_count_right(d, probs, &total);
        *acc = total ? 100.0 * (double)right / (double)total : NAN;
    } else {
        tr_err_prefixed(st, "%s on %s", R->o.model_dir, R->o.eval_file);
    }
    ts_program_free(p);
    return st;
}

static ts_status eval_cls(qz_run *R) {
    const ts_quantize_opts *o = &R->o;
    ts_text_opts to = {.text_column = o->text_column, .text_b_column = R->meta.text_b_column,
                       .label_column = o->label_column, .labels = (const char *const *)R->meta.labels,
                       .nlabels = R->meta.nlabels};
    ts_text_dataset *d = ts_text_dataset_load(o->eval_file, &to);
    if (!d) return tr_err_prefixed(TS_ERR_ARG, "eval_file");
    int64_t n = ts_text_dataset_size(d);
    int nl = ts_text_dataset_num_labels(d);
    ts_status st = n ? TS_OK : ts_set_error(TS_ERR_ARG, "eval_file %s has no rows to score", o->eval_file);
    double *pr[2] = {calloc((size_t)(n ? n : 1) * (size_t)nl, sizeof(double)),
                     calloc((size_t)(n ? n : 1) * (size_t)nl, sizeof(double))};
    if (!st && (!pr[0] || !pr[1])) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
    double acc[2] = {NAN, NAN};
    for (int k = 0; k < 2 && !st; k++) st = score_cls(R, k ? &R->q : NULL, d, pr[k], &acc[k]);
    if (!st && (isnan(acc[0]) || isnan(acc[1])))
        st = ts_set_error(TS_ERR_ARG, "eval_file %s has no labelled rows", o->eval_file);
    if (!st) {
        double mx = 0, mean = 0;
        for (int64_t i = 0; i < n * nl; i++) {
            double e = fabs(pr[0][i] - pr[1][i]);
            mx = e > mx ? e : mx, mean += e / (double)(n * nl);
        }
        R->rep.evaluated = 1, R->rep.eval_rows = n, R->rep.float_score = acc[0], R->rep.int8_score = acc[1];
        R->rep.max_prob_diff = mx, R->rep.mean_prob_diff = mean, R->rep.drop = acc[0] - acc[1];
    }
    free(pr[0]), free(pr[1]);
    ts_text_dataset_free(d);
    return st;
}

/* EM / F1 of the model on s, float (q NULL) or int8. */
static ts_status score_qa(const qz_run *R, const ts_squad *s, const ts_quant_record *q, double *em, double *f1) {
    tr_program_opts po = qz_program_opts(R, q);
    ts_program *p = tr_model_program(R->o.model_dir, &R->cfg, &po, (const char *[]){"start_logits", "end_logits"}, 2);
    ts_status st = p ? ts_squad_score_program(p, s, R->o.batch, R->meta.max_len, TS_SQUAD_N_BEST,
                                              TS_SQUAD_MAX_ANSWER_LEN, em, f1)
                     : ts_last_status();
    ts_program_free(p);
    return st;
}

static ts_status eval_qa(qz_run *R) {
    ts_squad_opts so = qz_squad_opts(&R->meta);
    so.relocate_answers = 0;
    ts_squad *s = ts_squad_load(R->o.eval_file, R->tok, &so);
    if (s && ts_squad_check(s, R->o.eval_file, 1) != TS_OK) ts_squad_free(s), s = NULL;
    if (!s) return tr_err_prefixed(TS_ERR_ARG, "eval_file");
    double em[2], f1[2];
    ts_status st = TS_OK;
    for (int k = 0; k < 2 && !st; k++) st = score_qa(R, s, k ? &R->q : NULL, &em[k], &f1[k]);
    if (!st) {
        R->rep.evaluated = 1, R->rep.eval_rows = ts_squad_num_examples(s);
        R->rep.float_em = em[0], R->rep.int8_em = em[1], R->rep.float_score = f1[0], R->rep.int8_score = f1[1];
        R->rep.drop = f1[0] - f1[1];
    }
    ts_squad_free(s);
    return st;
}

ts_status qz_evaluate(qz_run *R) { return R->qa ? eval_qa(R) : eval_cls(R); }
