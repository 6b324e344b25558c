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

/* The subcommands: cli_NAME runs `tessera NAME` (cli/NAME.c; onnx-ops: cli_onnx_ops, audio-train:
 * cli_audio_train, profile-device: cli_profile_device; kws and vad: cli/speech.c). Their flags and
 * usage: `tessera NAME --help`. */
int cli_tokenize(int argc, char **argv);
int cli_vocab(int argc, char **argv);
int cli_split(int argc, char **argv);
int cli_bow(int argc, char **argv);
int cli_pretrain(int argc, char **argv);
int cli_finetune(int argc, char **argv);
int cli_eval(int argc, char **argv);
int cli_predict(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_onnx_ops(int argc, char **argv);
int cli_ocr(int argc, char **argv);
int cli_kws(int argc, char **argv);
int cli_audio_train(int argc, char **argv);
int cli_vad(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_profile_device(int argc, char **argv);
int cli_plan(int argc, char **argv);
int cli_quantize(int argc, char **argv);
int cli_serve(int argc, char **argv);

/* --model DIR... of `tessera CMD` (predict, eval) opened as an ensemble of classifiers (cli/predict.c):
 * ts_ensemble_open with batch and threads, each member's program made as every command makes a
 * model directory's (its int8 record, the device and load flags), results to `result`. NULL after
 * printing the error ("tessera CMD: --model DIR ..."), *rc the exit code. */
ts_ensemble *cli_ensemble_open(const char *cmd, const char *const *dirs, int n, int batch, int threads,
                               ts_ensemble_result_fn result, void *result_ctx, int *rc);

/* The whole of file path ("-": standard input; cli/files.c) as a malloc'd string, NUL-terminated (the file may
 * hold NULs: *len, when len is not NULL, is its length), read to the end. NULL when it cannot be
 * opened or read, errno saying why (ENOMEM: out of memory): ts_read_file, "-" read as /dev/stdin. */
char *cli_read_text(const char *path, size_t *len);

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

/* The library's words and the command's (cli/lib_terms.c). The library names fields, never flags;
 * cli_opts_parse registers the running subcommand's table (cli_terms_use; a subcommand may call it
 * again to add exceptions: terms[k].term said as terms[k].flag), and the library's lines are then
 * said in flags (the rules: lib_terms.c): "max_len 600 is more than ..." is "--max-len 600 ...",
 * "model_dir" is "--model", "memory_limit" the memory limit's flag. */
typedef struct cli_term {
    const char *term, *flag;
} cli_term;
struct cli_opt;
void cli_terms_use(const struct cli_opt *opts, int nopts, const cli_term *terms, int nterms);
/* The library's last error (ts_last_error) in the command's words, and with the flag for a library
 * term any subcommand names ("TS_LOAD_ALLOW_NONFINITE": --allow-nonfinite). Valid until the next call. */
const char *cli_error(void);
/* ts_write_fns for a library run's error lines and its other lines (ctx: a FILE *, NULL for stderr
 * and stdout): each line as it comes, in the command's words (as cli_error; out: no values). */
void cli_write_err(void *ctx, const char *text, size_t len);
void cli_write_out(void *ctx, const char *text, size_t len);

/* How a subcommand reports a library call that failed: "tessera CMD: WHAT<the call's message>" on
 * stderr, a message that starts "CMD: " (the library's own prefix, as the speech calls' "kws: ")
 * without it, so that one prefix names the command; returns rc (the exit code: 2 bad flags or
 * files, 1 a failure while running). */
static inline int cli_fail(const char *cmd, const char *what, int rc) {
    const char *e = cli_error();
    size_t n = strlen(cmd);
    fprintf(stderr, "tessera %s: %s%s\n", cmd, what, !strncmp(e, cmd, n) && !strncmp(e + n, ": ", 2) ? e + n + 2 : e);
    return rc;
}

/* ts_path_join for an expression: buf, or NULL with its error (dir NULL, a failed ts_data_dir:
 * NULL, that error left as it is). */
const char *cli_path_join(char *buf, size_t cap, const char *dir, const char *name);

/* s to f as a JSON string, quotes included: " and \ escaped, control characters as \u00XX, UTF-8
 * as it is (cli/json_out.c). */
void cli_json_string(FILE *f, const char *s);

#endif
