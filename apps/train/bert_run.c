/*
 * bert_run.c — one inference batch through a BERT model directory (tessera_tasks.h:
 * ts_bert_run_file, what `tessera run` does with a model directory): config.json read and made
 * ready for inference, the inputs read, the program built for their shape (its int8 record
 * followed), run `repeat` times, and every output of the head written by name.
 */
#include "common/app.h"

#include <stdio.h>

/* Fail at stage `at` with status st (its message set). */
static ts_status fail_at(ts_bert_run_report *r, int at, ts_status st) {
    r->failed_at = at;
    return st != TS_OK ? st : TS_ERR_RUNTIME;
}

/* config.json into r->cfg (ready for inference) and the inputs into feeds, r->batch x r->seq. */
static ts_status read_model(const ts_bert_run_opts *o, ts_bert_run_report *r, const char *config_path,
                            ts_tensor *feeds[3]) {
    r->cfg.struct_size = sizeof r->cfg;
    if (ts_bert_config_load(config_path, &r->cfg) != TS_OK) return fail_at(r, TS_BERT_RUN_AT_MODEL, ts_last_status());
    ts_bert_config_inference(&r->cfg, o->dtype);
    if (r->cfg.architecture[0] && strcmp(r->cfg.architecture, ts_bert_head_name(r->cfg.head)) != 0)
        ts_writef(o->err, o->err_ctx, "%s: note: %s: architecture \"%s\" is not one tessera builds; running "
                  "BertModel\n", o->name, config_path, r->cfg.architecture);
    ts_safetensors *in = ts_safetensors_open(o->inputs);
    if (!in) return fail_at(r, TS_BERT_RUN_AT_INPUTS_FILE, ts_last_status());
    int64_t shape[2];
    ts_status st = ts_bert_read_inputs(in, o->inputs, &r->cfg, feeds, shape);
    ts_safetensors_close(in);
    if (st != TS_OK) return fail_at(r, TS_BERT_RUN_AT_INPUTS, st);
    r->batch = (int)shape[0], r->seq = (int)shape[1];
    return TS_OK;
}

/* The model and batch of this thread's last ts_bert_run_file refused for memory
 * (ts_bert_run_refused_layout). */
static _Thread_local struct {
    int set, batch, seq;
    ts_bert_config cfg;
} refused;

/* The program built and compiled for the batch, its weights loaded (ts_bert_infer_build). */
static ts_status build(const ts_bert_run_opts *o, ts_bert_run_report *r, const char *config_path,
                       const char *weights_path) {
    ts_quant_record rec = {0};
    if (ts_quant_record_load(o->model_dir, &rec) != TS_OK) return fail_at(r, TS_BERT_RUN_AT_MODEL, ts_last_status());
    int int8 = o->quantize == TS_QUANT_DYNAMIC;
    ts_bert_infer_opts bo = {
        .struct_size = sizeof bo, .cfg = &r->cfg, .batch = r->batch, .seq = r->seq, .seed = o->seed,
        .device = o->device ? o->device : "cpu", .threads = o->threads, .profile = o->profile,
        .memory_limit = o->memory_limit, .weights = o->init_random ? NULL : weights_path, .load_flags = o->load_flags,
        .name = o->name, .err = o->err, .err_ctx = o->err_ctx, .config_path = config_path, .inputs = o->inputs,
        .quantize = int8 ? TS_QUANT_DYNAMIC : rec.mode, .quant_scales = rec.scales,
        .nquant_scales = int8 ? 0 : rec.nscales};
    double seconds[2] = {0, 0};
    ts_status st = ts_bert_infer_build(&bo, &r->program, r->output_names, &r->noutputs, seconds);
    ts_quant_record_free(&rec);
    r->build_seconds = seconds[0], r->load_seconds = seconds[1];
    if (st == TS_ERR_NOMEM) refused.set = 1, refused.cfg = r->cfg, refused.batch = r->batch, refused.seq = r->seq;
    return st != TS_OK ? fail_at(r, TS_BERT_RUN_AT_BUILD, st) : TS_OK;
}

/* Run the batch, fetch the outputs and write them. */
static ts_status run_and_write(const ts_bert_run_opts *o, ts_bert_run_report *r, ts_tensor *feeds[3]) {
    int repeat = o->repeat > 0 ? o->repeat : 1;
    ts_status st = ts_bert_run_batch(r->program, feeds, repeat, r->noutputs, r->output_names, r->outputs,
                                     &r->best_seconds, &r->total_seconds);
    if (st != TS_OK) return fail_at(r, TS_BERT_RUN_AT_RUN, st);
    st = ts_safetensors_save(o->outputs, r->noutputs, r->output_names, (const ts_tensor *const *)r->outputs,
                             "{\"format\": \"pt\"}");
    return st != TS_OK ? fail_at(r, TS_BERT_RUN_AT_OUTPUTS, st) : TS_OK;
}

ts_status ts_bert_run_file(const ts_bert_run_opts *opts, ts_bert_run_report *report) {
    if (!report) return ts_set_error(TS_ERR_ARG, "ts_bert_run_file: report is NULL");
    ts_bert_run_opts o;
    if (TS_STRUCT_READ(&o, opts, ts_bert_run_opts, "ts_bert_run_file")) return TS_ERR_ARG;
    if (!o.model_dir || !o.inputs || !o.outputs)
        return ts_set_error(TS_ERR_ARG, "ts_bert_run_file: model_dir, inputs and outputs are required");
    if (o.dtype != TS_F32 && o.dtype != TS_BF16)
        return ts_set_error(TS_ERR_ARG, "ts_bert_run_file: dtype %s is not f32 or bf16", ts_dtype_name(o.dtype));
    if (!o.name) o.name = "ts_bert_run_file";
    refused.set = 0;
    ts_bert_run_report r = {.struct_size = sizeof r};
    if (TS_STRUCT_WRITE(report, &r, ts_bert_run_report, "ts_bert_run_file")) return TS_ERR_ARG;
    char config_path[4200], weights_path[4200];
    ts_tensor *feeds[3] = {NULL, NULL, NULL};
    ts_status st = ts_path_join(config_path, sizeof config_path, o.model_dir, "config.json");
    if (st == TS_OK) st = ts_path_join(weights_path, sizeof weights_path, o.model_dir, "model.safetensors");
    if (st != TS_OK) st = fail_at(&r, TS_BERT_RUN_AT_MODEL, st);
    if (st == TS_OK) st = read_model(&o, &r, config_path, feeds);
    if (st == TS_OK) st = build(&o, &r, config_path, weights_path);
    if (st == TS_OK) st = run_and_write(&o, &r, feeds);
    for (int i = 0; i < 3; i++) ts_tensor_free(feeds[i]);
    if (!o.profile) ts_program_free(r.program), r.program = NULL;
    TS_STRUCT_WRITE(report, &r, ts_bert_run_report, "ts_bert_run_file");
    return st;
}

void ts_bert_run_report_free(ts_bert_run_report *r) {
    if (!r) return;
    for (int i = 0; i < TS_BERT_RUN_MAX_OUTPUTS; i++) ts_tensor_free(r->outputs[i]), r->outputs[i] = NULL;
    ts_program_free(r->program);
    r->program = NULL, r->noutputs = 0;
}

int ts_bert_run_refused_layout(struct ts_plan_request *rq, ts_bert_config *cfg, ts_stage_plan *pp) {
    if (!refused.set || !rq || !cfg) return 0;
    *cfg = refused.cfg;
    if (pp) memset(pp, 0, sizeof *pp);
    *rq = (ts_plan_request){.struct_size = sizeof *rq, .stream_state = 1}; /* as ts_plan_request_defaults */
    rq->cfg = cfg, rq->task = TS_PLAN_INFER, rq->batch = refused.batch, rq->seq_len = refused.seq;
    rq->dtype = cfg->compute_dtype, rq->count = 1, rq->replicas = 1, rq->micro_batches = 1;
    rq->recompute = 0, rq->shard_state = 0;
    return 1;
}
