/*
 * quantize.h — what `tessera quantize` (cli/quantize.c) and its calibration and QA scoring
 * (cli/quantize_calib.c) share: the flags, and the calls between the two files.
 */
#ifndef CLI_QUANTIZE_H
#define CLI_QUANTIZE_H

#include "cli.h"

typedef struct q_opts {
    const char *model, *out, *eval, *calib, *method, *text_col, *label_col;
    int dynamic, batch, threads, samples;
    double max_drop;
} q_opts;

/* TS_CALIB_* of a --method name (minmax, percentile, entropy); -1 for another. */
int cli_quant_method(const char *name);
/* Calibrate o->model (classifier or QA) on o->calib: its first o->samples rows (QA: windows) in a
 * seeded shuffle, run through the float model, their activations observed (ts_calib) with method
 * TS_CALIB_*; the scales into out (mode TS_QUANT_STATIC; ts_quant_record_free it). 0, or the exit code
 * after printing the error (a file of the wrong task, no rows, no quantizable matmul). */
int cli_quantize_calibrate(const q_opts *o, int method, ts_quant_record *out);
/* --eval for a QA model: exact match and F1 of the float model and of the int8 one (q's mode and
 * scales) on o->eval, printed side by side; *drop: F1 points lost. 0 or the exit code. */
int cli_quantize_eval_qa(const q_opts *o, const ts_quant_record *q, double *drop);

#endif
