/*
 * bert_export.c — a BERT (config + weights) written as an ONNX model for one batch shape (its batch
 * dim symbolic with dynamic_batch):
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
    c.struct_size = sizeof c, c.eager_attention = 1; /* ONNX has no attention op: the unfused ops */
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
    ts_onnx_export_opts xo = {.struct_size = sizeof xo, .dynamic_batch = o->dynamic_batch,
                              .int64_inputs = o->int64_inputs, .quant_scales = o->quant_scales,
                              .nquant_scales = o->nquant_scales};
    if ((st = ts_onnx_export_with(g, p, n, outs, &xo, path)) != TS_OK) goto done;
    info->noutputs = n;
    for (int i = 0; i < n; i++) info->ndims[i] = ts_value_shape(g, outs[i], info->shapes[i]);
done:
    ts_program_free(p);
    ts_graph_free(g);
    return st;
}

/* config.json into r->cfg (max_len checked against it) and the "quantization" record into q. */
static ts_status read_dir(const ts_bert_export_dir_opts *o, ts_bert_export_dir_report *r, const char *config_path,
                          ts_quant_record *q) {
    r->cfg.struct_size = sizeof r->cfg;
    if (ts_bert_config_load(config_path, &r->cfg) != TS_OK)
        return ts_set_error(TS_ERR_ARG, "model_dir: %s", ts_last_error());
    if (o->max_len > r->cfg.max_position_embeddings)
        return ts_set_error(TS_ERR_ARG, "max_len %d is longer than the model's max_position_embeddings %d (%s)",
                            o->max_len, r->cfg.max_position_embeddings, config_path);
    if (ts_quant_record_load(o->model_dir, q) != TS_OK) return TS_ERR_ARG;
    r->quant_mode = q->mode;
    return TS_OK;
}

ts_status ts_bert_export_dir(const ts_bert_export_dir_opts *opts, ts_bert_export_dir_report *report) {
    ts_bert_export_dir_opts o;
    if (!report) return ts_set_error(TS_ERR_ARG, "ts_bert_export_dir: report is NULL");
    if (TS_STRUCT_READ(&o, opts, ts_bert_export_dir_opts, "ts_bert_export_dir")) return TS_ERR_ARG;
    if (!o.model_dir || !o.path) return ts_set_error(TS_ERR_ARG, "ts_bert_export_dir: model_dir and path are required");
    ts_bert_export_dir_report r = {.struct_size = sizeof r};
    if (TS_STRUCT_WRITE(report, &r, ts_bert_export_dir_report, "ts_bert_export_dir")) return TS_ERR_ARG;
    char config_path[4200];
    ts_quant_record q = {0};
    ts_status st = ts_path_join(config_path, sizeof config_path, o.model_dir, "config.json");
    if (!st) st = ts_path_join(r.weights, sizeof r.weights, o.model_dir, "model.safetensors");
    if (st) st = ts_set_error(TS_ERR_ARG, "model_dir: %s", ts_last_error());
    if (!st) st = read_dir(&o, &r, config_path, &q);
    int qdq = q.mode == TS_QUANT_STATIC;
    ts_bert_export_opts eo = {.struct_size = sizeof eo, .batch = o.batch, .seq = o.max_len,
                              .weights = o.init_random ? NULL : r.weights, .seed = o.seed, .load_flags = o.load_flags,
                              .threads = o.threads, .memory_limit = o.memory_limit,
                              .quant_scales = qdq ? q.scales : NULL, .nquant_scales = qdq ? q.nscales : 0,
                              .dynamic_batch = o.dynamic_batch, .int64_inputs = o.int64_inputs};
    if (!st && (st = ts_bert_export_onnx(&r.cfg, &eo, o.path, &r.info)) != TS_OK) {
        if (r.info.failed_at == TS_BERT_EXPORT_BUILD)
            ts_set_error(TS_ERR_ARG, "%s (model %s, batch %d x seq %d)", ts_last_error(), config_path, o.batch,
                         r.info.seq);
        st = r.info.failed_at ? TS_ERR_ARG : st == TS_ERR_ARG ? TS_ERR_RUNTIME : st;
    }
    r.nquant_scales = st ? 0 : eo.nquant_scales;
    ts_quant_record_free(&q);
    TS_STRUCT_WRITE(report, &r, ts_bert_export_dir_report, "ts_bert_export_dir");
    return st;
}
