/*
 * model_program.h — internal to apps/train/: the inference program of a fine-tuned model
 * directory (model_program.c), as the int8 copies (quantize_dir.c, calibrate.c, quantize_eval.c)
 * and the ensembles (ensemble.c) build it.
 */
#ifndef TS_TRAIN_MODEL_PROGRAM_H
#define TS_TRAIN_MODEL_PROGRAM_H

#include "common/app.h"

/* How tr_model_program compiles and loads. */
typedef struct tr_program_opts {
    int batch, seq, threads;
    size_t memory_limit;       /* 0: the device's */
    int load_flags;            /* ts_program_load's (TS_LOAD_STRICT added) */
    const char *device;        /* NULL: the CPU */
    int quantize;              /* -1: as the directory's "quantization" record says; else TS_QUANT_* */
    const ts_quant_scale *scales; /* quantize TS_QUANT_STATIC: the activation scales */
    int nscales;
} tr_program_opts;

/* The inference program of model directory dir (config cfg, head cfg->head) for o's batch x seq,
 * fetching fetches[0 .. nfetch), DIR/model.safetensors loaded strictly. NULL with the error set
 * (the record's, the compiler's or the load's). */
ts_program *tr_model_program(const char *dir, const ts_bert_config *cfg, const tr_program_opts *o,
                             const char *const *fetches, int nfetch);

/* ts_set_error(code, "PREFIX: <the last error>"): the last error with a prefix (printf-style), kept
 * whole; returns code. */
ts_status tr_err_prefixed(ts_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
