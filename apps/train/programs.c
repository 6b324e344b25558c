/*
 * programs.c — the programs of a BERT training run (ts_bert_train_programs, "Training runs" in
 * tessera.h): the model with its head, the backward pass, the optimizer with BERT's conventions,
 * compiled for training (on one device or as a pipeline) and for evaluation. The backward
 * recomputes the GELU outputs (ts_graph_recompute_gelu), and the updates run inside it
 * (ts_optim_opts.updates_in_backward) unless clipping, accumulation, loss scaling, replicas or
 * stages need every gradient first: both keep the numbers bit for bit and use less memory.
 */
#include "common/app.h"

#include <stddef.h>
#include <stdio.h>

ts_status ts_bert_train_programs(const ts_bert_train_opts *o, ts_program **train, ts_program **infer) {
    if (train) *train = NULL;
    if (infer) *infer = NULL;
    ts_bert_train_opts oc;
    if (!o || !o->cfg) return ts_set_error(TS_ERR_ARG, "ts_bert_train_programs: NULL options or config");
    if (TS_STRUCT_READ(&oc, o, ts_bert_train_opts, "ts_bert_train_programs")) return TS_ERR_ARG;
    o = &oc;
    ts_graph *g = ts_graph_new();
    if (!g) return ts_set_error(TS_ERR_NOMEM, "ts_bert_train_programs: out of memory");
    ts_graph_set_seed(g, o->seed);
    ts_bert_outputs out;
    const char *what = "building the model";
    ts_bert_config cfg; /* attention unfused unless every device runs the fused op */
    ts_status st = TS_STRUCT_READ(&cfg, o->cfg, ts_bert_config, "ts_bert_train_programs") ? TS_ERR_ARG : TS_OK;
    cfg.struct_size = sizeof cfg;
    for (int i = 0; i < o->nstage_devices && o->stage_devices; i++)
        if (!app_fuses_attention(o->stage_devices[i])) cfg.eager_attention = 1;
    if (!o->stage_devices && !app_fuses_attention(o->device)) cfg.eager_attention = 1;
    if (!st) st = ts_bert_build(g, &cfg, o->head, o->batch, o->seq, &out);
    if (!st && o->weight_dtype != TS_F32) st = ts_graph_store_params(g, o->weight_dtype);
    int N = o->accumulation > 1 ? o->accumulation : 1, K = o->steps_per_call > 1 ? o->steps_per_call : 1;
    const char *device = !o->stage_devices ? o->device : NULL;
    int plan_only = o->plan_only;
    if (!st && train) {
        ts_value lr = ts_input(g, "lr", TS_F32, 0, NULL);
        what = "adding the backward pass";
        /* planning only: fp16 without loss scaling, which a pipeline does not run yet (same memory) */
        int scaled = cfg.compute_dtype == TS_F16 && !plan_only;
        st = ts_graph_recompute_gelu(g); /* the same bits, one [B, T, F] activation less per layer */
        if (!st) st = scaled ? ts_backward_scaled(g, out.loss, NULL) : ts_backward(g, out.loss);
        if (!st) {
            what = "adding the optimizer";
            ts_optim_opts oo = ts_optim_defaults(o->optimizer);
            static const char *const no_decay[] = {"bias", "LayerNorm.weight"};
            oo.eps = 1e-6f; /* AdamW and LAMB: BERT's */
            oo.weight_decay = o->weight_decay;
            oo.no_decay = no_decay, oo.nno_decay = 2;
            if (o->optimizer == TS_OPTIM_LAMB) oo.no_trust = no_decay, oo.nno_trust = 2;
            if (o->optimizer == TS_OPTIM_SGD) oo.momentum = o->momentum;
            oo.max_grad_norm = o->max_grad_norm;
            oo.accumulation_steps = N;
            oo.comm = o->comm, oo.shard_state = o->shard_state, oo.bucket_bytes = o->bucket_bytes;
            oo.round_nearest = o->round_nearest;
            /* the updates in the backward wherever nothing needs every gradient first: the same
             * bits, each gradient's memory reused once its update has read it */
            oo.updates_in_backward = 2;
            st = ts_optimizer(g, lr, &oo);
        }
        if (!st) {
            what = "compiling the training program";
            int profile = o->profile;
            *train = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts), .num_threads = o->threads,
                                                      .nfetch = o->ntrain_fetches, .fetches = o->train_fetches,
                                                      .device_iterations = N * K, .device = device,
                                                      .memory_limit = o->memory_limit,
                                                      .stage_devices = o->stage_devices,
                                                      .nstage_devices = o->nstage_devices, .profile = profile,
                                                      .plan_only = plan_only});
            if (!*train) st = ts_last_status() ? ts_last_status() : TS_ERR_ARG;
        }
    }
    if (!st && infer) {
        what = "compiling the inference program";
        *infer = ts_compile(g, &(ts_compile_opts){.struct_size = sizeof(ts_compile_opts),
                                                  .num_threads = o->infer_threads ? o->infer_threads : o->threads,
                                                  .nfetch = o->ninfer_fetches, .fetches = o->infer_fetches,
                                                  .inference = 1, .memory_limit = o->memory_limit, .device = device,
                                                  .plan_only = plan_only,
                                                  .quantize = o->quantize, .quant_scales = o->quant_scales,
                                                  .nquant_scales = o->nquant_scales,
                                                  .skip_param_init = !train && o->skip_param_init});
        if (!*infer) st = ts_last_status() ? ts_last_status() : TS_ERR_ARG;
    }
    ts_graph_free(g);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", ts_last_error());
        if (train && *train) ts_program_free(*train), *train = NULL;
        return ts_set_error(st, "%s: %s", what, msg);
    }
    return TS_OK;
}
