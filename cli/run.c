/*
 * run.c — `tessera run`: one batch through a BERT model directory (ts_bert_run_file) or an ONNX
 * file (ts_onnx_run_file): the flags, and the printing of what the run reports.
 */
#include "cli.h"
#include "tessera_backend.h"
#include "train_common.h"

static const char *USAGE =
    "  Runs a BERT model on one batch and writes every output of its head, by name, as f32.\n"
    "  With an ONNX file (a --model that is a file, not a directory), runs that model instead\n"
    "  (opsets 9-17; `tessera onnx-ops` lists the ops): the inputs are the safetensors tensors\n"
    "  named as the model's inputs, of any shape the model allows (converted to the declared\n"
    "  dtype between float types or between integer types), and every output is written under\n"
    "  its name in its own dtype. An integer input of one element (a sample rate, a flag) is\n"
    "  fixed to its value for the import (ts_onnx_session_fix): what it decides is computed\n"
    "  once, and an If on it keeps only its taken branch (Silero VAD's sr). --dtype,\n"
    "  --init-random and --allow-nonfinite are BERT-only.\n";

#define CMD "run"

/* Is `name` ("cpu", "cpu:2", "opencl:0") a device of a registered backend, or of a plugin found
 * by its backend's name (ts_backend_load_named)? */
static int known_device(const char *name) {
    char back[64];
    snprintf(back, sizeof back, "%.*s", (int)strcspn(name, ":"), name);
    return ts_backend_find(back) || ts_backend_load_named(back) == TS_OK;
}

/* The flags (--device-memory, --device-profile and --allow-nonfinite are in cli_dev). */
typedef struct run_args {
    const char *model, *inputs, *outputs, *device, *dtype_name;
    ts_dtype dtype;
    int threads, repeat, seed, profile, int8; /* seed: --init-random's, -1 when not given */
} run_args;

/* The checks of the values after the parse: 0, or 2 after a usage message. */
static int check_args(run_args *a) {
    const char *v = a->dtype_name;
    int bad = 1;
    a->dtype = v && (!strcmp(v, "bf16") || !strcmp(v, "bfloat16")) ? TS_BF16 : TS_F32;
    if (v && a->dtype == TS_F32 && strcmp(v, "f32") && strcmp(v, "float32"))
        fprintf(stderr, "tessera run: --dtype must be f32 or bf16, not '%s'\n", v);
    else if (!cli_dev.profile && cli_dev.memory_gib > 1e9)
        fprintf(stderr, "tessera run: --device-memory wants a positive number of GiB, not '%g'\n", cli_dev.memory_gib);
    else if (!known_device(a->device))
        fprintf(stderr, "tessera run: --device '%s' is not a device of this build (it has: %s)\n", a->device,
                ts_devices());
    else
        bad = 0;
    if (bad) fputs("(tessera run --help shows the usage)\n", stderr);
    return bad ? 2 : 0;
}

/* The exit code of a run that failed at stage `at` (TS_BERT_RUN_AT_*, the same as TS_ONNX_RUN_AT_*),
 * its message printed naming the flag of the file at fault (the build wrote its own lines). */
static int run_failed(int onnx, int at, ts_status st) {
    static const char *const prefix[] = {"", "--model: ", "--inputs: ", "", "", "", "--outputs: "};
    at = at >= 0 && at <= TS_ONNX_RUN_AT_OUTPUTS ? at : 0;
    if (onnx || at != TS_BERT_RUN_AT_BUILD) fprintf(stderr, "tessera run: %s%s\n", prefix[at], cli_error());
    int bad_model = st == TS_ERR_UNSUPPORTED || st == TS_ERR_IO || st == TS_ERR_SHAPE || st == TS_ERR_DTYPE;
    if (at == TS_ONNX_RUN_AT_RUN) return onnx && bad_model ? 2 : 1;
    if (at == TS_BERT_RUN_AT_BUILD) return !onnx && st == TS_ERR_ARG ? 2 : 1;
    return at == TS_ONNX_RUN_AT_OUTPUTS || at == TS_ONNX_RUN_AT_NONE ? 1 : 2;
}

/* The outputs written, by name with their shapes (and dtypes). */
static void print_outputs(const char *path, int n, const char *const *names, ts_tensor *const *t, int dtypes) {
    printf("tessera run: wrote %s:", path);
    for (int i = 0; i < n; i++) {
        printf(" %s [", names[i]);
        for (int d = 0; d < ts_tensor_ndim(t[i]); d++)
            printf("%s%lld", d ? ", " : "", (long long)ts_tensor_shape(t[i])[d]);
        printf(dtypes ? "] %s" : "]", ts_dtype_name(ts_tensor_dtype(t[i])));
    }
    printf("\n");
}

/* An ONNX model run (ts_onnx_run_file): --profile's report as the runs end, then the summary. */
static int run_onnx(const run_args *a) {
    ts_onnx_run_opts o = {.struct_size = sizeof o, .model = a->model, .inputs = a->inputs, .outputs = a->outputs,
                          .device = a->device, .threads = a->threads, .repeat = a->repeat,
                          .memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0),
                          .quantize = a->int8 ? TS_QUANT_DYNAMIC : TS_QUANT_NONE,
                          .profile = a->profile ? cli_write_out : NULL, .profile_ctx = stdout};
    ts_onnx_run_report r = {.struct_size = sizeof r};
    ts_status st = ts_onnx_run_file(&o, &r);
    int rc = st == TS_OK ? 0 : run_failed(1, r.failed_at, st);
    if (!rc) {
        printf("tessera run: %s (ONNX opset %d), %d input%s%s on %s: load %.3f s, import+compile+run %.3f s", a->model,
               r.opset, r.ninputs, r.ninputs == 1 ? "" : "s", a->int8 ? ", int8 dynamic" : "", a->device,
               r.load_seconds, r.first_seconds);
        if (a->repeat > 1) printf(", run %.4f s (best of %d more)", r.best_seconds, a->repeat - 1);
        printf("\n");
        print_outputs(a->outputs, r.noutputs, (const char *const *)r.output_names, r.outputs, 1);
    }
    ts_onnx_run_report_free(&r);
    return rc;
}

/* A program refused for memory under --device-profile: the planner's view of this forward pass. */
static void suggest(void) {
    ts_plan_request rq;
    ts_bert_config cfg;
    if (!cli_dev.device_profile || !ts_bert_run_refused_layout(&rq, &cfg, NULL)) return;
    rq.device = cli_dev.device_profile;
    cli_plan_suggest(CMD, cli_dev.profile, &rq, NULL);
}

/* A BERT model directory run (ts_bert_run_file), its summary and --profile's report printed: the
 * exit code. */
static int run_bert(const run_args *a) {
    ts_bert_run_opts o = {.struct_size = sizeof o, .model_dir = a->model, .inputs = a->inputs, .outputs = a->outputs,
                          .dtype = a->dtype, .device = a->device, .threads = a->threads, .repeat = a->repeat,
                          .profile = a->profile, .init_random = a->seed >= 0, .seed = (uint64_t)a->seed,
                          .memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0),
                          .load_flags = cli_dev.allow_nonfinite ? TS_LOAD_ALLOW_NONFINITE : 0,
                          .quantize = a->int8 ? TS_QUANT_DYNAMIC : TS_QUANT_NONE, .name = "tessera run",
                          .err = cli_write_err, .err_ctx = stderr};
    ts_bert_run_report r = {.struct_size = sizeof r};
    ts_status st = ts_bert_run_file(&o, &r);
    int rc = st == TS_OK ? 0 : run_failed(0, r.failed_at, st);
    if (st == TS_ERR_NOMEM) suggest();
    if (!rc) {
        /* --int8 runs dynamic int8 whatever the directory's record says; without it, the record's */
        const char *prec = a->int8 ? "int8 dynamic" : ts_model_dirs_precision(&a->model, 1);
        char what[64];
        if (!strcmp(prec, "f32")) snprintf(what, sizeof what, "%s", ts_dtype_name(a->dtype));
        else snprintf(what, sizeof what, "%s%s", prec, a->dtype == TS_BF16 ? " (other matmuls bf16)" : "");
        printf("tessera run: %s (%d layers, hidden %d), batch %d x seq %d, %s on %s: build+compile %.3f s, ",
               ts_bert_head_name(r.cfg.head), r.cfg.num_hidden_layers, r.cfg.hidden_size, r.batch, r.seq, what,
               a->device, r.build_seconds);
        if (a->seed >= 0) printf("random init (seed %d), ", a->seed);
        else printf("load %.3f s, ", r.load_seconds);
        if (a->repeat > 1) printf("run %.4f s (best of %d, mean %.4f s)\n", r.best_seconds, a->repeat,
                                  r.total_seconds / a->repeat);
        else printf("run %.4f s\n", r.best_seconds);
        print_outputs(a->outputs, r.noutputs, r.output_names, r.outputs, 0);
    }
    if (!rc && a->profile && ts_program_profile_report(r.program, ts_write_stdio, stdout) != TS_OK)
        rc = cli_fail(CMD, "--profile: ", 1);
    ts_bert_run_report_free(&r);
    return rc;
}

/* The run of the parsed and checked flags: the exit code. */
static int run(const run_args *a) {
    if (!ts_onnx_model_path(a->model)) return run_bert(a);
    const char *bert_only = a->dtype != TS_F32 ? "--dtype" : a->seed >= 0 ? "--init-random"
                            : cli_dev.allow_nonfinite ? "--allow-nonfinite" : NULL;
    if (bert_only)
        return fprintf(stderr, "tessera run: %s is for BERT model directories, not ONNX models (%s)\n", bert_only,
                       a->model), 2;
    return run_onnx(a);
}

int cli_run(int argc, char **argv) {
    run_args a = {.device = "cpu", .repeat = 1, .seed = -1};
    const cli_opt opts[] = {
        {"model", CLI_STR, &a.model, 1, "DIR",
         "config.json + model.safetensors (Hugging Face layout; vocab.txt unused).\n"
         "The head is config.json's \"architectures\" (BertModel when absent):\n"
         "BertModel              last_hidden_state, pooler_output\n"
         "BertForPreTraining     + prediction_logits, seq_relationship_logits\n"
         "BertForMaskedLM        last_hidden_state, logits\n"
         "BertForSequenceClassification  + pooler_output, logits\n"
         "BertForQuestionAnswering       last_hidden_state, start_logits, end_logits\n"
         "A bare BertModel checkpoint (names without \"bert.\") loads too.\n"
         "Or MODEL.onnx, an ONNX file (see above)."},
        {"inputs", CLI_STR, &a.inputs, 1, "FILE",
         "input_ids [B, T] (required), token_type_ids (default 0) and\n"
         "attention_mask (default 1), i32 or i64; other tensors are ignored."},
        {"outputs", CLI_STR, &a.outputs, 1, "FILE", "written atomically (safetensors, f32)."},
        {"device", CLI_STR, &a.device, 0, "NAME", "a device of this build (default cpu)."},
        {"dtype", CLI_STR, &a.dtype_name, 0, "f32|bf16",
         "matmul precision (default f32); bf16 multiplies in bf16 and keeps\n"
         "everything else in f32, like PyTorch's autocast."},
        {"threads", CLI_INT, &a.threads, 1, "N", "worker threads (default: OpenMP's)."},
        {"init-random", CLI_INT, &a.seed, 0, "SEED",
         "do not read model.safetensors: random parameters drawn from SEED (the\n"
         "model's own initialisation), to time a model without a checkpoint."},
        {"repeat", CLI_INT, &a.repeat, 1, "N", "run the batch N times (default 1) and report the best time."},
        CLI_LOAD_OPTS,
        {"profile", CLI_FLAG, &a.profile, 0, NULL,
         "print to stdout, after the runs, where their time went: the share\n"
         "outside kernels, then time per op type, per layer and per shape (see\n"
         "ts_program_profile_report). With --repeat N > 1 the first run is a\n"
         "warm-up and is left out; the report covers the other N - 1."},
        {"int8", CLI_FLAG, &a.int8, 0, NULL,
         "int8 inference with dynamic quantization (ts_compile_opts.quantize): the\n"
         "weight matmuls and convolutions on int8 weights (per output channel) and\n"
         "activations (per tensor, per run), summed in int32, the rest in f32; a\n"
         "convolution timed faster in f32 on its first run runs f32 (see --profile)."},
        CLI_DEVICE_OPTS,
        {NULL, CLI_TEXT, NULL, 0, NULL, "Exit codes: 0 done, 1 failed while running, 2 bad flags or files.\n"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, CMD, USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc == 1 && !(rc = check_args(&a))) rc = run(&a);
    cli_opts_free(&os);
    return rc;
}
