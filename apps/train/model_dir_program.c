/*
 * model_dir_program.c — a model directory's inference program for a caller that names it
 * (ts_model_dir_program, tessera_tasks.h): as every inference command makes it, its error lines
 * written, and a program refused for memory said and kept for the planner; and the task of a
 * fine-tuned model directory (ts_model_task).
 */
#include "common/app.h"

#include "train/train_setup.h"

ts_program *ts_model_dir_program(const char *dir, const ts_bert_config *cfg, const ts_model_program_opts *opts) {
    ts_model_program_opts o;
    if (!dir || !cfg || TS_STRUCT_READ(&o, opts, ts_model_program_opts, "ts_model_dir_program")) return NULL;
    tr_setup s = {.name = o.name ? o.name : "ts_model_dir_program", .err = o.err, .err_ctx = o.err_ctx};
    ts_quant_record rec = {0};
    if (ts_quant_record_load(dir, &rec) != TS_OK) { /* tessera quantize's record: int8 */
        ts_writef(s.err, s.err_ctx, "%s: %s\n", s.name, ts_last_error());
        return NULL;
    }
    ts_bert_train_opts bo = {.struct_size = sizeof bo, .cfg = cfg, .head = cfg->head, .batch = o.batch, .seq = o.seq,
                             .threads = o.threads, .infer_threads = o.threads, .optimizer = TS_OPTIM_ADAMW,
                             .memory_limit = o.memory_limit, .infer_fetches = o.fetches, .ninfer_fetches = o.nfetch,
                             .skip_param_init = 1, .quantize = rec.mode, .quant_scales = rec.scales,
                             .nquant_scales = rec.nscales, .device = o.device};
    char config[4300], weights[4300];
    const char *sizes_from = ts_path_join(config, sizeof config, dir, "config.json") == TS_OK ? config : dir;
    ts_program *p = NULL;
    ts_status st = tr_setup_programs(&s, &bo, NULL, sizes_from, NULL, &p);
    ts_quant_record_free(&rec);
    if (st != TS_OK) return NULL;
    if (ts_path_join(weights, sizeof weights, dir, "model.safetensors") == TS_OK &&
        ts_program_load(p, weights, TS_LOAD_STRICT | o.load_flags, NULL) == TS_OK)
        return p;
    ts_writef(s.err, s.err_ctx, "%s: %s\n", s.name, ts_last_error());
    ts_program_free(p);
    return NULL;
}

int ts_model_task(const char *dir, const ts_bert_config *cfg, const ts_model_meta *meta, int want) {
    int have = cfg->head == TS_BERT_QUESTION_ANSWERING                        ? TS_FINETUNE_QA
               : cfg->head == TS_BERT_SEQ_CLASSIFICATION && meta->nlabels > 0 ? TS_FINETUNE_CLASSIFY
                                                                               : -1;
    if (have < 0)
        ts_set_error(TS_ERR_ARG, "%s is not a fine-tuned model (architecture '%s'; a sequence classifier or a "
                     "question-answering model from tessera finetune)", dir,
                     cfg->architecture[0] ? cfg->architecture : "none");
    else if (want != TS_FINETUNE_AUTO && want != have)
        ts_set_error(TS_ERR_ARG, "task %s, but %s is a %s model (%s)", want == TS_FINETUNE_QA ? "qa" : "classify",
                     dir, have == TS_FINETUNE_QA ? "qa" : "classify", cfg->architecture);
    return have < 0 || (want != TS_FINETUNE_AUTO && want != have) ? -1 : have;
}
