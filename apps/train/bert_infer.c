/*
 * bert_infer.c — a BERT model run for inference on one batch (tessera_tasks.h): its config made
 * ready for inference, the names of the outputs its head has, and a batch fed, run and fetched.
 * `tessera run` is these calls with flags and printing around them.
 */
#include "common/app.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

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
        double r0 = ts_seconds();
        if ((st = ts_program_run(p)) != TS_OK) break;
        double dt = ts_seconds() - r0;
        if (k == 0 && repeat > 1) ts_program_profile_reset(p); /* the warm-up is left out */
        best = k == 0 || dt < best ? dt : best;
        total += dt;
    }
    if (best_s) *best_s = best;
    if (total_s) *total_s = total;
    for (int i = 0; i < nfetch && st == TS_OK; i++) st = ts_program_fetch(p, fetch[i], &outs[i]);
    return st;
}

/* The compiled program of o, its parameters drawn (or left for the weights). */
static ts_status infer_compile(const ts_bert_infer_opts *o, ts_program **p, const char **fetch, int *nfetch) {
    const ts_bert_config *cfg = o->cfg;
    ts_graph *g = ts_graph_new();
    if (!g) {
        ts_writef(o->err, o->err_ctx, "%s: %s\n", o->name, ts_last_error());
        return ts_last_status() == TS_ERR_ARG ? TS_ERR_NOMEM : ts_last_status();
    }
    ts_graph_set_seed(g, o->seed);
    ts_bert_outputs out;
    ts_bert_config c; /* attention unfused on a device without the fused op */
    int bad = TS_STRUCT_READ(&c, cfg, ts_bert_config, "ts_bert_infer_build") != 0;
    c.struct_size = sizeof c;
    c.eager_attention |= !app_fuses_attention(o->device);
    if (bad || ts_bert_build(g, &c, c.head, o->batch, o->seq, &out) != TS_OK) {
        ts_writef(o->err, o->err_ctx, "%s: %s (model %s, inputs %s [%d, %d])\n", o->name, ts_last_error(),
                  o->config_path, o->inputs, o->batch, o->seq);
        ts_graph_free(g);
        return TS_ERR_ARG;
    }
    *nfetch = ts_bert_output_names(&out, fetch);
    *p = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .device = o->device,
                                          .num_threads = o->threads, .nfetch = *nfetch, .fetches = fetch, .inference = 1,
                                          .skip_param_init = o->weights != NULL, /* loaded strictly next */
                                          .profile = o->profile, .memory_limit = o->memory_limit,
                                          .quantize = o->quantize, .quant_scales = o->quant_scales,
                                          .nquant_scales = o->nquant_scales});
    ts_graph_free(g);
    if (*p) return TS_OK;
    ts_status st = ts_last_status();
    ts_writef(o->err, o->err_ctx, "%s: compiling for device %s: %s\n", o->name, o->device, ts_last_error());
    if (st == TS_ERR_NOMEM)
        ts_writef(o->err, o->err_ctx, "%s: the parameters grow with %s's sizes (vocab_size %d, hidden_size %d, "
                  "num_hidden_layers %d, intermediate_size %d), the activations with the batch of %s [%d, %d]%s\n",
                  o->name, o->config_path, cfg->vocab_size, cfg->hidden_size, cfg->num_hidden_layers,
                  cfg->intermediate_size, o->inputs, o->batch, o->seq,
                  o->memory_limit ? "; the limit is the memory limit asked for" : "");
    return st == TS_ERR_ARG || st == TS_OK ? TS_ERR_RUNTIME : st;
}

ts_status ts_bert_infer_build(const ts_bert_infer_opts *o, ts_program **p, const char **fetch, int *nfetch,
                              double seconds[2]) {
    ts_bert_infer_opts oc;
    if (!o || !p || !fetch || !nfetch) return ts_set_error(TS_ERR_ARG, "ts_bert_infer_build: NULL argument");
    if (TS_STRUCT_READ(&oc, o, ts_bert_infer_opts, "ts_bert_infer_build")) return TS_ERR_ARG;
    o = &oc;
    double t0 = ts_seconds();
    *p = NULL;
    ts_status st = infer_compile(o, p, fetch, nfetch);
    if (st != TS_OK) return st;
    double t1 = ts_seconds();
    if (o->weights && ts_bert_load_weights(*p, o->weights, o->load_flags) != TS_OK) {
        ts_writef(o->err, o->err_ctx, "%s: %s\n", o->name, ts_last_error());
        return TS_ERR_ARG;
    }
    if (seconds) seconds[0] = t1 - t0, seconds[1] = ts_seconds() - t1;
    return TS_OK;
}
