/*
 * qa.c — question answering for `tessera finetune --task qa`, `eval` and `predict` (see qa.h):
 * SQuAD files read and checked, start / end logits over every window, answers and EM / F1.
 */
#include "qa.h"

#include <stdlib.h>
#include <string.h>

int ts_qa_default_stride(int max_len) { return max_len / 3 < 128 ? (max_len / 3 > 0 ? max_len / 3 : 1) : 128; }
int ts_qa_default_query(int max_len) { return max_len / 4 < 64 ? (max_len / 4 > 0 ? max_len / 4 : 1) : 64; }

/* Print at most 40 characters of s, quoted. */
static void print_short(const char *s) {
    size_t n = strlen(s);
    fprintf(stderr, "\"%.*s%s\"", n > 40 ? 40 : (int)n, s, n > 40 ? "..." : "");
}

ts_squad *ts_qa_load(const char *cmd, const char *flag, const char *path, const ts_tokenizer *tok,
                     const ts_squad_opts *so, int need_answers) {
    ts_squad *s = ts_squad_load(path, tok, so);
    if (!s) {
        fprintf(stderr, "tessera %s: %s %s\n", cmd, flag, ts_last_error());
        return NULL;
    }
    int64_t n = ts_squad_num_examples(s);
    if (need_answers && ts_squad_num_relocated(s) > 0)
        fprintf(stderr, "tessera %s: note: %s %s: %lld answer%s not at %s answer_start; taken at the nearest "
                        "occurrence (--relocate-answers)\n", cmd, flag, path, (long long)ts_squad_num_relocated(s),
                ts_squad_num_relocated(s) == 1 ? " was" : "s were", ts_squad_num_relocated(s) == 1 ? "its" : "their");
    if (n == 0) {
        fprintf(stderr, "tessera %s: %s %s: no questions in the file\n", cmd, flag, path);
        ts_squad_free(s);
        return NULL;
    }
    for (int64_t i = 0; need_answers && i < n; i++) {
        ts_squad_example ex;
        ts_squad_get(s, i, &ex);
        const char *bad = NULL;
        if (ex.nanswers == 0) {
            fprintf(stderr, "tessera %s: %s %s: question \"%s\" has no answers (SQuAD v2 unanswerable questions are "
                            "not supported)\n", cmd, flag, path, ex.id);
            ts_squad_free(s);
            return NULL;
        }
        for (int a = 0; a < ex.nanswers && !bad; a++)
            if (!ex.answers[a][0] || !strstr(ex.context, ex.answers[a])) bad = ex.answers[a];
        if (bad) {
            fprintf(stderr, "tessera %s: %s %s: question \"%s\": the answer ", cmd, flag, path, ex.id);
            print_short(bad);
            fprintf(stderr, " %s\n", bad[0] ? "does not occur in its context" : "is empty");
            ts_squad_free(s);
            return NULL;
        }
    }
    return s;
}

ts_status ts_qa_feed(ts_program *p, const ts_squad *s, const int64_t *features, int n, int batch, ts_batch_buf *bb) {
    ts_status st = ts_squad_batch(s, features, n, batch, &bb->b);
    return st != TS_OK ? st : ts_batch_buf_feed(bb, p, 0);
}

int ts_qa_logits(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, float **start,
                 float **end) {
    *start = *end = NULL;
    int64_t nf = ts_squad_num_features(s);
    size_t row = (size_t)seq * sizeof(float);
    float *st_all = malloc((size_t)(nf > 0 ? nf : 1) * row), *en_all = malloc((size_t)(nf > 0 ? nf : 1) * row);
    int64_t *rows = malloc((size_t)batch * sizeof *rows);
    ts_batch_buf bb;
    int have_bb = ts_batch_buf_init(&bb, batch, seq, 0);
    if (!st_all || !en_all || !rows || !have_bb) {
        fprintf(stderr, "tessera %s: out of memory\n", cmd);
        goto fail;
    }
    for (int64_t f = 0; f < nf; f += batch) {
        int m = (int)(nf - f < batch ? nf - f : batch);
        for (int k = 0; k < m; k++) rows[k] = f + k;
        ts_tensor *sl = NULL, *el = NULL;
        if (ts_qa_feed(infer, s, rows, m, batch, &bb) || ts_program_run(infer) ||
            ts_program_fetch(infer, "start_logits", &sl) || ts_program_fetch(infer, "end_logits", &el)) {
            fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
            ts_tensor_free(sl);
            ts_tensor_free(el);
            goto fail;
        }
        memcpy(st_all + (size_t)f * seq, ts_tensor_data(sl), (size_t)m * row);
        memcpy(en_all + (size_t)f * seq, ts_tensor_data(el), (size_t)m * row);
        ts_tensor_free(sl);
        ts_tensor_free(el);
    }
    ts_batch_buf_free(&bb);
    free(rows);
    *start = st_all;
    *end = en_all;
    return 0;
fail:
    if (have_bb) ts_batch_buf_free(&bb);
    free(rows);
    free(st_all);
    free(en_all);
    return 1;
}

char *ts_qa_answer(const ts_squad *s, int64_t i, const float *start, const float *end, int n_best,
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

int ts_qa_score(const char *cmd, ts_program *infer, const ts_squad *s, int batch, int seq, int n_best,
                int max_answer_len, double *em, double *f1) {
    float *st = NULL, *en = NULL;
    if (ts_qa_logits(cmd, infer, s, batch, seq, &st, &en)) return 1;
    ts_status rc = ts_squad_evaluate(s, st, en, n_best, max_answer_len, em, f1);
    free(st);
    free(en);
    if (rc != TS_OK) {
        fprintf(stderr, "tessera %s: %s\n", cmd, ts_last_error());
        return 1;
    }
    return 0;
}
