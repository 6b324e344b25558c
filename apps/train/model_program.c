/*
 * model_program.c — the inference program of a fine-tuned model directory (model_program.h):
 * compiled for inference with its int8 record (or the caller's), its weights loaded strictly;
 * and the last error re-raised with a prefix.
 */
#include "common/app.h"

#include <stdarg.h>
#include <stdio.h>

#include "train/model_program.h"

ts_program *tr_model_program(const char *dir, const ts_bert_config *cfg, const tr_program_opts *o,
                             const char *const *fetches, int nfetch) {
    ts_quant_record rec = {0};
    int mode = o->quantize;
    const ts_quant_scale *scales = o->scales;
    int nscales = o->nscales;
    if (mode < 0) {
        if (ts_quant_record_load(dir, &rec) != TS_OK) return NULL;
        mode = rec.mode, scales = rec.scales, nscales = rec.nscales;
    }
    ts_bert_train_opts t = {.struct_size = sizeof t, .cfg = cfg, .head = cfg->head, .batch = o->batch, .seq = o->seq,
                            .threads = o->threads, .infer_threads = o->threads, .optimizer = TS_OPTIM_ADAMW,
                            .memory_limit = o->memory_limit, .infer_fetches = fetches, .ninfer_fetches = nfetch,
                            .skip_param_init = 1, .quantize = mode, .quant_scales = scales,
                            .nquant_scales = nscales, .device = o->device};
    ts_program *p = NULL;
    ts_status st = ts_bert_train_programs(&t, NULL, &p);
    ts_quant_record_free(&rec);
    if (st != TS_OK) return NULL;
    char path[4200];
    if (ts_path_join(path, sizeof path, dir, "model.safetensors") != TS_OK ||
        ts_program_load(p, path, TS_LOAD_STRICT | o->load_flags, NULL) != TS_OK) {
        ts_program_free(p);
        return NULL;
    }
    return p;
}

ts_status tr_err_prefixed(ts_status code, const char *fmt, ...) {
    char prefix[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    return ts_set_error(code, "%s: %s", prefix, ts_last_error());
}
