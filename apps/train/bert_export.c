/*
 * bert_export.c — a BERT (config + weights) written as an ONNX model for one fixed batch shape:
 * built for inference, compiled, its weights loaded (or drawn from a seed), then ts_onnx_export
 * with the head's outputs by name. See "Exporting a BERT" in tessera_tasks.h.
 */
#include "common/app.h"

#include <string.h>

ts_status ts_bert_export_onnx(const ts_bert_config *config, const ts_bert_export_opts *o, const char *path,
                              ts_bert_export_info *info) {
    memset(info, 0, sizeof *info);
    ts_bert_export_opts oc;
    ts_bert_config c; /* for inference: no dropout, the mask as int32, f32 compute */
    ts_status st = TS_STRUCT_READ(&oc, o, ts_bert_export_opts, "ts_bert_export_onnx");
    if (!st) st = TS_STRUCT_READ(&c, config, ts_bert_config, "ts_bert_export_onnx");
    if (st) return st;
    o = &oc;
    info->seq = o->seq > 0 ? o->seq : c.max_position_embeddings < 128 ? c.max_position_embeddings : 128;
    ts_bert_config_inference(&c, TS_F32);
    ts_program *p = NULL;
    ts_graph *g = ts_graph_new();
    if (!g) return ts_last_status() ? ts_last_status() : TS_ERR_NOMEM;
    ts_graph_set_seed(g, o->weights ? 0 : o->seed);
    ts_bert_outputs out;
    if ((st = ts_bert_build(g, &c, c.head, o->batch, info->seq, &out)) != TS_OK) {
        info->failed_at = TS_BERT_EXPORT_BUILD;
        goto done;
    }
    const struct {
        ts_value v;
        const char *name;
    } cand[] = {
        {out.last_hidden_state, "last_hidden_state"}, {out.pooler_output, "pooler_output"},
        {out.prediction_logits, "prediction_logits"}, {out.seq_relationship_logits, "seq_relationship_logits"},
        {out.logits, "logits"},                       {out.start_logits, "start_logits"},
        {out.end_logits, "end_logits"},
    };
    ts_value outs[TS_BERT_EXPORT_MAX_OUTPUTS];
    int n = 0;
    for (size_t i = 0; i < sizeof cand / sizeof *cand; i++)
        if (cand[i].v != TS_NONE) outs[n] = cand[i].v, info->names[n++] = cand[i].name;
    p = ts_compile(g, &(ts_compile_opts){.num_threads = o->threads, .nfetch = n, .fetches = info->names,
                                         .inference = 1, .memory_limit = o->memory_limit,
                                         .skip_param_init = o->weights != NULL /* loaded strictly next */});
    if (!p) {
        st = ts_last_status() ? ts_last_status() : TS_ERR_RUNTIME;
        goto done;
    }
    if (o->weights && (st = ts_program_load(p, o->weights, o->load_flags | TS_LOAD_STRICT, NULL)) != TS_OK) {
        info->failed_at = TS_BERT_EXPORT_LOAD;
        goto done;
    }
    if ((st = o->nquant_scales > 0 ? ts_onnx_export_qdq(g, p, n, outs, o->quant_scales, o->nquant_scales, path)
                                   : ts_onnx_export(g, p, n, outs, path)) != TS_OK)
        goto done;
    info->noutputs = n;
    for (int i = 0; i < n; i++) info->ndims[i] = ts_value_shape(g, outs[i], info->shapes[i]);
done:
    ts_program_free(p);
    ts_graph_free(g);
    return st;
}
