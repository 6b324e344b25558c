/*
 * bert_infer.c — a BERT model run for inference on one batch (tessera_tasks.h): its config made
 * ready for inference, the names of the outputs its head has, and a batch fed, run and fetched.
 * `tessera run` is these calls with flags and printing around them.
 */
#include "core/core.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void ts_bert_config_inference(ts_bert_config *cfg, ts_dtype compute) {
    cfg->hidden_dropout_prob = cfg->attention_probs_dropout_prob = 0.f; /* no dropout nodes at all */
    cfg->classifier_dropout = 0.f;
    cfg->attention_mask_dtype = TS_I32;
    cfg->compute_dtype = compute;
}

int ts_bert_output_names(const ts_bert_outputs *o, const char *names[7]) {
    const struct {
        ts_value v;
        const char *name;
    } cand[] = {
        {o->last_hidden_state, "last_hidden_state"}, {o->pooler_output, "pooler_output"},
        {o->prediction_logits, "prediction_logits"}, {o->seq_relationship_logits, "seq_relationship_logits"},
        {o->logits, "logits"},                       {o->start_logits, "start_logits"},
        {o->end_logits, "end_logits"},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof cand / sizeof *cand; i++)
        if (cand[i].v != TS_NONE) names[n++] = cand[i].name;
    return n;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

ts_status ts_bert_run_batch(ts_program *p, ts_tensor *const feeds[3], int repeat, int nfetch, const char *const *fetch,
                            ts_tensor **outs, double *best_s, double *total_s) {
    static const char *const feed_names[3] = {"input_ids", "token_type_ids", "attention_mask"};
    for (int i = 0; i < 3; i++)
        if (ts_program_feed(p, feed_names[i], feeds[i]) != TS_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", ts_last_error());
            return ts_set_error(ts_last_status(), "feeding %s: %s", feed_names[i], why);
        }
    double best = 0, total = 0;
    ts_status st = TS_OK;
    for (int k = 0; k < repeat && st == TS_OK; k++) {
        double r0 = now_s();
        if ((st = ts_program_run(p)) != TS_OK) break;
        double dt = now_s() - r0;
        if (k == 0 && repeat > 1) ts_program_profile_reset(p); /* the warm-up is left out */
        best = k == 0 || dt < best ? dt : best;
        total += dt;
    }
    if (best_s) *best_s = best;
    if (total_s) *total_s = total;
    for (int i = 0; i < nfetch && st == TS_OK; i++) st = ts_program_fetch(p, fetch[i], &outs[i]);
    return st;
}
