/*
 * bow_train.c — training and scoring the bag-of-words classifier (tessera_tasks.h:
 * ts_bow_train, ts_bow_accuracy): epochs of shuffled batches through its training program, and
 * the test rows' argmax labels counted against theirs.
 */
#include "common/app.h"

#include <stdio.h>

/* The batch tensors: ids [B, L], values x [B, L], labels y [B]. */
typedef struct bow_batch {
    ts_tensor *ids, *x, *y;
} bow_batch;

static void batch_free(bow_batch *b) {
    ts_tensor_free(b->ids), ts_tensor_free(b->x), ts_tensor_free(b->y);
}

static ts_status batch_new(bow_batch *b, int B, int L) {
    b->ids = ts_tensor_new(TS_I32, 2, (int64_t[]){B, L});
    b->x = ts_tensor_new(TS_F32, 2, (int64_t[]){B, L});
    b->y = ts_tensor_new(TS_I32, 1, (int64_t[]){B});
    if (b->ids && b->x && b->y) return TS_OK;
    batch_free(b);
    return ts_set_error(TS_ERR_NOMEM, "out of memory");
}

/* The current error, prefixed with `what` (ts_last_error is the buffer being written). */
static ts_status prefixed(const char *what) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ts_last_error());
    return ts_set_error(ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME, "%s: %s", what, msg);
}

ts_status ts_bow_train(ts_program *train, const ts_bow_features *f, const ts_text_dataset *d, int B, int L, int epochs,
                       uint64_t seed, double *loss) {
    int64_t n = ts_text_dataset_size(d), nbatch = (n + B - 1) / B;
    bow_batch b = {0};
    int64_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order || batch_new(&b, B, L) != TS_OK) {
        free(order);
        return ts_set_error(TS_ERR_NOMEM, "out of memory");
    }
    ts_status st = TS_OK;
    *loss = 0;
    for (int e = 0; e < epochs && st == TS_OK; e++) {
        ts_permutation(seed + (uint64_t)e, n, order);
        double sum = 0;
        for (int64_t k = 0; k < nbatch && st == TS_OK; k++) {
            int m = (int)(n - k * B < B ? n - k * B : B);
            ts_bow_fill(f, d, order + k * B, m, B, L, ts_tensor_data(b.ids), ts_tensor_data(b.x), ts_tensor_data(b.y));
            ts_tensor *l = NULL;
            if (ts_program_feed(train, "ids", b.ids) || ts_program_feed(train, "x", b.x) ||
                ts_program_feed(train, "labels", b.y) || ts_program_run(train) || ts_program_fetch(train, "loss", &l)) {
                st = prefixed("training step");
                break;
            }
            sum += *(float *)ts_tensor_data(l) * m;
            ts_tensor_free(l);
        }
        *loss = sum;
    }
    free(order);
    batch_free(&b);
    return st;
}

ts_status ts_bow_accuracy(ts_program *infer, const ts_bow_features *f, const ts_text_dataset *d, int B, int L,
                          int C, int64_t *hit) {
    int64_t n = ts_text_dataset_size(d);
    bow_batch b = {0};
    int64_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    if (!order || batch_new(&b, B, L) != TS_OK) {
        free(order);
        return ts_set_error(TS_ERR_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < n; i++) order[i] = i;
    ts_status st = TS_OK;
    *hit = 0;
    for (int64_t k = 0; k < n; k += B) {
        int m = (int)(n - k < B ? n - k : B);
        int32_t *yd = ts_tensor_data(b.y);
        ts_bow_fill(f, d, order + k, m, B, L, ts_tensor_data(b.ids), ts_tensor_data(b.x), yd);
        ts_tensor *lg = NULL;
        if (ts_program_feed(infer, "ids", b.ids) || ts_program_feed(infer, "x", b.x) || ts_program_run(infer) ||
            ts_program_fetch(infer, "logits", &lg)) {
            st = prefixed("scoring the test rows");
            break;
        }
        const float *p = ts_tensor_data(lg);
        for (int r = 0; r < m; r++) {
            int best = 0;
            for (int c = 1; c < C; c++)
                if (p[r * C + c] > p[r * C + best]) best = c;
            *hit += best == yd[r];
        }
        ts_tensor_free(lg);
    }
    free(order);
    batch_free(&b);
    return st;
}
