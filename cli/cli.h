/*
 * cli.h — the subcommands of the `tessera` command, and the small helpers they share (their flags: options.h).
 *
 * Each subcommand takes the arguments after the word `tessera`: argv[0] is the subcommand's
 * name ("tokenize"), its options follow. Each returns the process exit code: 0 success, 1 a
 * failure while running (e.g. writing the output), 2 a usage error (a missing or bad flag, a
 * missing or unreadable file), always with a message on stderr.
 */
#ifndef CLI_H
#define CLI_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera_apps.h"

/* tessera tokenize --vocab vocab.txt [--cased] [--max-len N [--pad]] [--pair] [--tokens] < text */
int cli_tokenize(int argc, char **argv);
/* tessera vocab --out vocab.txt --size N [--cased] FILE... */
int cli_vocab(int argc, char **argv);
/* tessera split --data FILE --out DIR [--test-split F] [--split-seed N] [--subset N]... (cli/split.c) */
int cli_split(int argc, char **argv);
/* tessera bow --vocab vocab.txt --train FILE --eval FILE [--epochs N] [--lr X]... (cli/bow.c) */
int cli_bow(int argc, char **argv);
/* tessera pretrain --vocab vocab.txt --corpus FILE... --out DIR [options] (cli/pretrain.c) */
int cli_pretrain(int argc, char **argv);
/* tessera finetune --model DIR --train FILE --out DIR [--task classify|qa] [options]
 * (cli/finetune.c, on ts_finetune_run) */
int cli_finetune(int argc, char **argv);
/* tessera eval --model DIR... --data FILE [--test-split F --split-seed N] [options] (cli/eval.c) */
int cli_eval(int argc, char **argv);
/* tessera predict --model DIR... [--text TEXT...] [--data FILE] [< lines] (cli/predict.c,
 * predict_qa.c) */
int cli_predict(int argc, char **argv);
/* --model DIR... of `tessera CMD` (predict, eval) opened as an ensemble of classifiers (cli/predict.c):
 * ts_ensemble_open with batch and threads, each member's program made as every command makes a
 * model directory's (its int8 record, the device and load flags), results to `result`. NULL after
 * printing the error ("tessera CMD: --model DIR ..."), *rc the exit code. */
ts_ensemble *cli_ensemble_open(const char *cmd, const char *const *dirs, int n, int batch, int threads,
                               ts_ensemble_result_fn result, void *result_ctx, int *rc);
/* tessera run --model DIR --inputs IN.safetensors --outputs OUT.safetensors [--device cpu]
 *             [--dtype f32|bf16] [--threads N] [--init-random SEED] [--repeat N] */
int cli_run(int argc, char **argv);
/* tessera run --model MODEL.onnx ...: run's ONNX path (cli/run_onnx.c); quantize is
 * ts_compile_opts.quantize (--int8). */
int cli_run_onnx(const char *model, const char *inputs, const char *outputs, const char *device, int threads,
                    int repeat, double memory_gib, int quantize);
/* tessera onnx-ops: the ONNX importer's op table as markdown (cli/onnx_ops.c). */
int cli_onnx_ops(int argc, char **argv);
/* tessera ocr IMAGE [--lang ch|en] [--json] [--threads N] [--model-store DIR] (cli/ocr.c) */
int cli_ocr(int argc, char **argv);
/* tessera kws AUDIO... [--keyword K,...] [--threshold T] [--json] [--scores] [--model-store DIR] (cli/kws.c) */
int cli_kws(int argc, char **argv);
/* tessera audio-train --data DIR_OR_TSV --out DIR [--from embedding | --scratch] ...
 * (cli/audio_train.c) */
int cli_audio_train(int argc, char **argv);
/* tessera eval / export on an audio classifier's model directory (cli/audio_model.c): the exit code. */
int cli_eval_audio(const char *model, const char *data, int threads);
int cli_export_audio(const char *model, const char *onnx, int threads);
/* tessera kws --model DIR AUDIO...: an audio classifier over sliding windows (cli/kws_model.c). */
int cli_kws_model(const char *model, const char *models_dir, char **files, int nfiles, float threshold, int json,
                  int threads);
/* tessera vad AUDIO... [--json] [--threshold T] [--model-store DIR] (cli/vad.c) */
int cli_vad(int argc, char **argv);
/* tessera export --out OUT.onnx --model DIR [--batch B] [--max-len T] [--init-random SEED]
 * (cli/export.c) */
int cli_export(int argc, char **argv);
/* tessera profile-device [--device DEV] [--seconds S] [--out FILE] | --list | --show NAME
 * (cli/profile_device.c) */
int cli_profile_device(int argc, char **argv);
/* tessera plan --device-profile P [--count N] [--model DIR | --model-config FILE] [--explain] [--json]...
 * (cli/plan.c) */
int cli_plan(int argc, char **argv);
/* tessera quantize --model DIR (--dynamic | --calib DATA [--samples N] [--method M]) --out DIR_INT8
 * [--eval DATA] [--max-drop P] (cli/quantize.c; the work: ts_quantize_model_dir) */
int cli_quantize(int argc, char **argv);

/* The "quantization" record of a model directory's config.json (cli/quant_config.c): dir's record
 * read into q (ts_quant_record_load: mode TS_QUANT_NONE when there is none; free it with
 * ts_quant_record_free). 0, or 2 after printing the error ("tessera CMD: DIR/config.json:
 * ...") when the record cannot be used. */
int cli_model_quant_load(const char *cmd, const char *dir, ts_quant_record *q);
/* The whole of file path ("-": standard input) as a malloc'd string, NUL-terminated (the file may
 * hold NULs: *len, when len is not NULL, is its length), read to the end. NULL when it cannot be
 * opened or read, errno saying why (ENOMEM: out of memory). The command's one whole-file reader
 * (the library's, ts_read_file, is not public). */
char *cli_read_text(const char *path, size_t *len);

/* tessera serve --model NAME=DIR... [--port P] [--host H] [--max-batch N] [--max-delay-ms MS] ...
 * (cli/serve.c; the engine is apps/serve/) */
int cli_serve(int argc, char **argv);

/* Fill l->command with the command line that runs layout l of request rq: `tessera pretrain` (or
 * finetune, run) with its model, batch, pipeline and precision flags, under `mpirun -np R` with
 * replicas (cli/plan_suggest.c). The library plans; the command spells the flags. */
void cli_plan_command(const ts_plan_request *rq, ts_plan_layout *l);
/* --device-profile PROFILE (cli/plan_suggest.c): read profile `name` (ts_device_profile_load) into
 * *out and set *memory_gib to its device's memory. 0, or prints the error naming the flag and
 * returns 2. */
int cli_device_profile_load(const char *cmd, const char *name, double *memory_gib, ts_device_profile *out);
/* A program refused for memory under --device-profile `profile`: print (stderr, "tessera CMD: the
 * planner: ...") the planner's estimate of the layout asked for (asked, every layout field set
 * but stages: pp's, or one device) and the fastest layout of as many devices that fits, with the
 * command that runs it and the `tessera plan ... --explain` that says more (cli/plan_suggest.c). */
void cli_plan_suggest(const char *cmd, const char *profile, const ts_plan_request *asked, const ts_stage_plan *pp);

/* The library's last error (ts_last_error) with the command's flag for a library term it names
 * ("TS_LOAD_ALLOW_NONFINITE": --allow-nonfinite), cli/lib_terms.c. Valid until the next call. */
const char *cli_error(void);
/* A ts_write_fn for the error lines of a library run (ctx: a FILE *, NULL for stderr): each line as
 * it comes, a line naming a library term with the command's flag added (as cli_error). */
void cli_write_err(void *ctx, const char *text, size_t len);

/* How a subcommand reports a library call that failed: "tessera CMD: WHAT<the call's message>" on
 * stderr; returns rc (the exit code: 2 bad flags or files, 1 a failure while running). */
static inline int cli_fail(const char *cmd, const char *what, int rc) {
    fprintf(stderr, "tessera %s: %s%s\n", cmd, what, cli_error());
    return rc;
}

/* A data folder of the installed or built tessera (cli/data_dir.c): $TESSERA_DATA/sub when set,
 * else the installed data directory's sub/ when it holds `probe` (a file in it), else the build's
 * source tree data/sub (where scripts/install-deps.sh puts what it fetches). Written into buf;
 * returns buf, or NULL (ts_last_error says why) when $TESSERA_DATA/sub does not fit in cap. */
const char *cli_data_dir(const char *sub, const char *probe, char *buf, size_t cap);
/* "dir/name" into buf (cap bytes; no '/' added when dir ends in one): the command's checked path
 * join. Returns buf, or NULL with ts_last_error() naming dir and name (TS_ERR_ARG) when it does
 * not fit: never a truncated path, which would read or write another file. dir NULL (a failed
 * cli_data_dir): NULL, that error left as it is. */
const char *cli_path_join(char *buf, size_t cap, const char *dir, const char *name);

/* s to f as a JSON string, quotes included: " and \ escaped, control characters as \u00XX, UTF-8
 * as it is (cli/json_out.c). */
void cli_json_string(FILE *f, const char *s);

#endif
