/*
 * squad_decode.c — a question-answering model on a SQuAD file (tessera_tasks.h): the file
 * checked for what training and scoring need, the model's start / end logits over every
 * doc-stride window, each question's answer by n-best decoding (ts_squad_best_span) and exact
 * match / F1 (ts_squad_evaluate).
 */
#include "common/app.h"

#include <stdlib.h>
#include <string.h>

int ts_squad_default_stride(int max_len) { return max_len / 3 < 128 ? (max_len / 3 > 0 ? max_len / 3 : 1) : 128; }
int ts_squad_default_query(int max_len) { return max_len / 4 < 64 ? (max_len / 4 > 0 ? max_len / 4 : 1) : 64; }

ts_squad_opts ts_squad_opts_of_model(const ts_model_meta *meta, int relocate_answers) {
    int T = meta->max_len;
    return (ts_squad_opts){.struct_size = sizeof(ts_squad_opts), .max_seq_len = T,
                           .doc_stride = meta->doc_stride ? meta->doc_stride : ts_squad_default_stride(T),
                           .max_query_len = meta->max_query_len ? meta->max_query_len : ts_squad_default_query(T),
                           .relocate_answers = relocate_answers};
}

ts_status ts_squad_check(const ts_squad *s, const char *name, int need_answers) {
    int64_t n = ts_squad_num_examples(s);
    if (n == 0) return ts_set_error(TS_ERR_ARG, "%s: no questions in the file", name);
    for (int64_t i = 0; need_answers && i < n; i++) {
        ts_squad_example ex;
        ts_squad_get(s, i, &ex);
        const char *bad = NULL;
        if (ex.nanswers == 0)
            return ts_set_error(TS_ERR_ARG, "%s: question \"%s\" has no answers (SQuAD v2 unanswerable questions are "
                                            "not supported)", name, ex.id);
        for (int a = 0; a < ex.nanswers && !bad; a++)
            if (!ex.answers[a][0] || !strstr(ex.context, ex.answers[a])) bad = ex.answers[a];
        if (bad) { /* at most 40 characters of the answer, quoted */
            size_t len = strlen(bad);
            return ts_set_error(TS_ERR_ARG, "%s: question \"%s\": the answer \"%.*s%s\" %s", name, ex.id,
                                len > 40 ? 40 : (int)len, bad, len > 40 ? "..." : "",
                                bad[0] ? "does not occur in its context" : "is empty");
        }
    }
    return TS_OK;
}

ts_status ts_squad_feed(ts_program *p, const ts_squad *s, const int64_t *features, int n, int batch,
                        ts_batch_buf *bb) {
    ts_status st = ts_squad_batch(s, features, n, batch, &bb->b);
    return st != TS_OK ? st : ts_batch_buf_feed(bb, p, 0);
}

/* Run the program on features f .. f + m and copy its logits into rows f.. of st_all, en_all. */
static ts_status logits_of(ts_program *infer, const ts_squad *s, int64_t f, int m, int batch, int seq,
                           ts_batch_buf *bb, int64_t *rows, float *st_all, float *en_all) {
    size_t row = (size_t)seq * sizeof(float);
    for (int k = 0; k < m; k++) rows[k] = f + k;
    ts_tensor *sl = NULL, *el = NULL;
    ts_status st;
    if (!(st = ts_squad_feed(infer, s, rows, m, batch, bb)) && !(st = ts_program_run(infer)) &&
        !(st = ts_program_fetch(infer, "start_logits", &sl)) && !(st = ts_program_fetch(infer, "end_logits", &el))) {
        memcpy(st_all + (size_t)f * seq, ts_tensor_data(sl), (size_t)m * row);
        memcpy(en_all + (size_t)f * seq, ts_tensor_data(el), (size_t)m * row);
    }
    ts_tensor_free(sl);
    ts_tensor_free(el);
    return st;
}

ts_status ts_squad_logits(ts_program *infer, const ts_squad *s, int batch, int seq, float **start, float **end) {
    *start = *end = NULL;
    int64_t nf = ts_squad_num_features(s);
    size_t row = (size_t)seq * sizeof(float);
    float *st_all = malloc((size_t)(nf > 0 ? nf : 1) * row), *en_all = malloc((size_t)(nf > 0 ? nf : 1) * row);
    int64_t *rows = malloc((size_t)batch * sizeof *rows);
    ts_batch_buf bb;
    int have_bb = ts_batch_buf_init(&bb, batch, seq, 0);
    ts_status st = TS_OK;
    if (!st_all || !en_all || !rows || !have_bb) st = ts_set_error(TS_ERR_NOMEM, "out of memory");
    ts_phase ph;
    ts_phase_begin(&ph, "scoring", "windows", nf);
    for (int64_t f = 0; f < nf && !st; f += batch) {
        ts_phase_step(&ph, f);
        st = logits_of(infer, s, f, (int)(nf - f < batch ? nf - f : batch), batch, seq, &bb, rows, st_all, en_all);
    }
    ts_phase_end(&ph);
    if (have_bb) ts_batch_buf_free(&bb);
    free(rows);
    if (st) {
        free(st_all);
        free(en_all);
        return st;
    }
    *start = st_all;
    *end = en_all;
    return TS_OK;
}

char *ts_squad_answer(const ts_squad *s, int64_t i, const float *start, const float *end, int n_best,
                      int max_answer_len) {
    size_t b = 0, n = 0;
    ts_squad_example ex;
    if (ts_squad_get(s, i, &ex) != TS_OK ||
        ts_squad_best_span(s, i, start, end, n_best, max_answer_len, &b, &n, NULL) != TS_OK)
        n = 0;
    char *a = malloc(n + 1);
    if (!a) return NULL;
    if (n) memcpy(a, ex.context + b, n);
    a[n] = 0;
    return a;
}

ts_status ts_squad_score_program(ts_program *infer, const ts_squad *s, int batch, int seq, int n_best,
                                 int max_answer_len, double *em, double *f1) {
    float *st = NULL, *en = NULL;
    ts_status rc = ts_squad_logits(infer, s, batch, seq, &st, &en);
    if (rc == TS_OK) rc = ts_squad_evaluate(s, st, en, n_best, max_answer_len, em, f1);
    free(st);
    free(en);
    return rc;
}
