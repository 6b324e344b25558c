/*
 * eval.c — a sequence classifier scored on labelled rows (tessera_tasks.h): class probabilities
 * (the softmax of its logits, summed over the members of an ensemble), accuracy, and the
 * majority-class baseline beside it.
 */
#include "common/app.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* softmax(x)_j = exp(x_j - max x) / sum_i exp(x_i - max x) */
void ts_classify_softmax_add(const float *logits, int c, double *probs) {
    float top = logits[0];
    for (int j = 1; j < c; j++) top = logits[j] > top ? logits[j] : top;
    double z = 0;
    for (int j = 0; j < c; j++) z += exp((double)(logits[j] - top));
    for (int j = 0; j < c; j++) probs[j] += exp((double)(logits[j] - top)) / z;
}

ts_status ts_classify_add_probs(ts_program *infer, const ts_tokenizer *tok, const ts_text_dataset *d, int batch,
                                int seq, double *probs) {
    int64_t n = ts_text_dataset_size(d);
    int nl = ts_text_dataset_num_labels(d);
    ts_batch_buf bb;
    int64_t *rows = malloc((size_t)batch * sizeof *rows);
    if (!rows || !ts_batch_buf_init(&bb, batch, seq, 1)) {
        free(rows);
        return TS_ERR_NOMEM;
    }
    ts_status st = TS_OK;
    ts_phase ph;
    ts_phase_begin(&ph, "scoring", "rows", n);
    for (int64_t i = 0; i < n && st == TS_OK; i += batch) {
        ts_phase_step(&ph, i);
        int m = (int)(n - i < batch ? n - i : batch);
        for (int k = 0; k < m; k++) rows[k] = i + k;
        ts_tensor *logits = NULL;
        if ((st = ts_text_dataset_batch(d, tok, rows, m, batch, seq, &bb.b)) || (st = ts_batch_buf_feed(&bb, infer, 0)) ||
            (st = ts_program_run(infer)) || (st = ts_program_fetch(infer, "logits", &logits)))
            break;
        const float *lg = ts_tensor_data(logits);
        int c = (int)ts_tensor_shape(logits)[1];
        for (int k = 0; k < m && c == nl; k++) /* c == nl: the labels were loaded as the model's */
            ts_classify_softmax_add(lg + (size_t)k * c, c, probs + (i + k) * nl);
        ts_tensor_free(logits);
    }
    ts_phase_end(&ph);
    ts_batch_buf_free(&bb);
    free(rows);
    return st;
}

int64_t ts_classify_count_right(const ts_text_dataset *d, const double *probs, int64_t *total) {
    int64_t n = ts_text_dataset_size(d), right = 0;
    int nl = ts_text_dataset_num_labels(d);
    *total = 0;
    for (int64_t i = 0; i < n; i++) {
        int32_t label;
        if (ts_text_dataset_get(d, i, NULL, NULL, &label) != TS_OK || label < 0 || label >= nl) continue;
        int best = 0;
        for (int j = 1; j < nl; j++)
            if (probs[i * nl + j] > probs[i * nl + best]) best = j;
        right += best == label, ++*total;
    }
    return right;
}

ts_status ts_classify_accuracy(ts_program *infer, const ts_tokenizer *tok, const ts_text_dataset *d, int batch,
                               int seq, int64_t *correct, int64_t *total) {
    *correct = *total = 0;
    int64_t n = ts_text_dataset_size(d);
    double *probs = calloc((size_t)(n ? n : 1) * (size_t)ts_text_dataset_num_labels(d), sizeof *probs);
    if (!probs) return TS_ERR_NOMEM;
    ts_status st = ts_classify_add_probs(infer, tok, d, batch, seq, probs);
    if (st == TS_OK) *correct = ts_classify_count_right(d, probs, total);
    free(probs);
    return st;
}

double ts_classify_majority(const ts_text_dataset *train, const ts_text_dataset *test, int *label) {
    int nl = ts_text_dataset_num_labels(train);
    int64_t *count = calloc((size_t)(nl > 0 ? nl : 1), sizeof *count);
    if (!count) return 0;
    for (int64_t i = 0; i < ts_text_dataset_size(train); i++) {
        int32_t l;
        if (ts_text_dataset_get(train, i, NULL, NULL, &l) == TS_OK && l >= 0 && l < nl) count[l]++;
    }
    int best = 0;
    for (int i = 1; i < nl; i++)
        if (count[i] > count[best]) best = i;
    free(count);
    int64_t hit = 0, n = ts_text_dataset_size(test);
    for (int64_t i = 0; i < n; i++) {
        int32_t l;
        if (ts_text_dataset_get(test, i, NULL, NULL, &l) == TS_OK && l == best) hit++;
    }
    if (label) *label = best;
    return n ? (double)hit / (double)n : 0;
}

int ts_model_meta_same_labels(const ts_model_meta *a, const ts_model_meta *b) {
    if (a->nlabels != b->nlabels || !a->text_b_column != !b->text_b_column) return 0;
    if (a->text_b_column && strcmp(a->text_b_column, b->text_b_column)) return 0;
    for (int i = 0; i < a->nlabels; i++)
        if (!a->labels[i] || !b->labels[i] || strcmp(a->labels[i], b->labels[i])) return 0;
    return 1;
}
