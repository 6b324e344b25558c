/*
 * model_config.c — what a plan is made for (tessera_plan.h): the model (ts_plan_model_config), its
 * sizes read from a model directory or a Hugging Face config.json, or BERT-Base's, the sizes asked
 * for over them, checked; and the request's named values (ts_plan_request_names).
 */
#include "common/app.h"

ts_status ts_plan_model_config(const char *model_dir, const char *config_file, int layers, int hidden, int heads,
                               int intermediate, int vocab, ts_bert_config *cfg) {
    if (!cfg) return ts_set_error(TS_ERR_ARG, "ts_plan_model_config: cfg is NULL");
    if (model_dir && config_file)
        return ts_set_error(TS_ERR_ARG, "model_dir and config_file exclude each other (one gives the sizes)");
    char path[4200];
    const char *from = config_file;
    ts_bert_config_default(cfg);
    if (model_dir && ts_path_join(path, sizeof path, model_dir, "config.json") != TS_OK) return ts_last_status();
    if (model_dir) from = path;
    if (from && ts_bert_config_load(from, cfg) != TS_OK) return ts_last_status();
    if (layers > 0) cfg->num_hidden_layers = layers;
    if (hidden > 0) cfg->hidden_size = hidden;
    if (heads > 0) cfg->num_attention_heads = heads;
    if (intermediate > 0) cfg->intermediate_size = intermediate;
    if (vocab > 0) cfg->vocab_size = vocab;
    if (cfg->num_attention_heads > 0 && cfg->hidden_size % cfg->num_attention_heads)
        return ts_set_error(TS_ERR_ARG, "the model's hidden_size %d is not a multiple of its num_attention_heads %d",
                            cfg->hidden_size, cfg->num_attention_heads);
    if (ts_bert_config_check(cfg) != TS_OK)
        return ts_set_error(TS_ERR_ARG, "the model's config%s%s: %s", from ? " from " : "", from ? from : "",
                            ts_last_error());
    return TS_OK;
}

/* The index of `value` in words[0 .. n), or -1 after the error naming field and value and listing the words. */
static int named_value(const char *field, const char *value, const char *const *words, int n) {
    for (int k = 0; k < n; k++)
        if (!strcmp(value, words[k])) return k;
    ts_set_error(TS_ERR_ARG, "ts_plan: %s %s: expected %s%s%s or %s", field, value, words[0], n > 2 ? ", " : "",
                 n > 2 ? words[1] : "", words[n - 1]);
    return -1;
}

ts_status ts_plan_request_names(ts_plan_request *rq, const char *dtype, const char *optimizer, const char *task) {
    static const char *const dtypes[] = {"f32", "bf16", "f16"}, *const optims[] = {"adamw", "lamb"},
                             *const tasks[] = {"pretrain", "finetune", "infer"};
    int d = 0, o = 0, t = 0;
    if (!rq) return ts_set_error(TS_ERR_ARG, "ts_plan_request_names: rq is NULL");
    if (dtype && (d = named_value("dtype", strcmp(dtype, "fp16") ? dtype : "f16", dtypes, 3)) < 0) return TS_ERR_ARG;
    if (optimizer && (o = named_value("optimizer", optimizer, optims, 2)) < 0) return TS_ERR_ARG;
    if (task && (t = named_value("task", task, tasks, 3)) < 0) return TS_ERR_ARG;
    if (dtype) rq->dtype = (ts_dtype)d;
    if (optimizer) rq->optimizer = o ? TS_OPTIM_LAMB : TS_OPTIM_ADAMW;
    if (task) rq->task = (ts_plan_task)t;
    return TS_OK;
}
