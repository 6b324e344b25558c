/*
 * quantize_impl.h — internal to apps/train/: what the files of ts_quantize_model_dir share (the
 * int8 copy of a model directory, tessera_tasks.h). quantize_dir.c checks the options, runs the
 * steps and writes the copy; calibrate.c measures the activation scales of static int8;
 * quantize_eval.c scores the float and the int8 model side by side.
 */
#ifndef TS_TRAIN_QUANTIZE_IMPL_H
#define TS_TRAIN_QUANTIZE_IMPL_H

#include "common/app.h"
#include "train/model_program.h"

/* One call of ts_quantize_model_dir: the options as read (defaults filled in), the model, what
 * was measured. */
typedef struct qz_run {
    ts_quantize_opts o;
    ts_quantize_report rep;
    ts_bert_config cfg;
    ts_model_meta meta;
    ts_tokenizer *tok;
    int qa;                  /* a question-answering model (else a classifier) */
    ts_quant_record q;       /* the int8 record: mode, and the static scales (owned) */
} qz_run;

/* The QA windows of the model's config (relocate_answers set: calibration does not need them). */
ts_squad_opts qz_squad_opts(const ts_model_meta *meta);
/* How the model's programs are built: float (q NULL) or int8 as q says. */
tr_program_opts qz_program_opts(const qz_run *R, const ts_quant_record *q);

/* calibrate.c: R->q's scales (TS_QUANT_STATIC), measured on o.calib_file; R->rep's calibration
 * fields. TS_OK or the error (TS_ERR_ARG for data or a model at fault). */
ts_status qz_calibrate(qz_run *R);
/* quantize_eval.c: the float and int8 (R->q) scores on o.eval_file into R->rep. */
ts_status qz_evaluate(qz_run *R);

#endif
