/*
 * run.c — `tessera run`: one inference batch through a BERT model directory (Hugging Face
 * layout), every output of the model written by name to a safetensors file; or, when --model
 * names an ONNX file (a file rather than a directory), through the ONNX importer (run_onnx.c).
 *
 *   tessera run --model DIR --inputs IN.safetensors --outputs OUT.safetensors
 *               [--device cpu] [--dtype f32|bf16] [--threads N] [--init-random SEED] [--repeat N]
 *               [--profile]
 *   tessera run --model MODEL.onnx --inputs IN.safetensors --outputs OUT.safetensors
 *               [--device cpu] [--threads N] [--repeat N]
 *
 * DIR holds config.json (its "architectures" picks the head; BertModel when absent) and
 * model.safetensors. The batch shape [B, T] comes from the inputs, so the program is built and
 * compiled for it on each call (dropout off, compiled for inference). --init-random SEED skips
 * model.safetensors and draws the parameters as ts_bert_build initialises them, so a model can
 * be timed without a checkpoint; --repeat N runs the batch N times and reports the best time.
 */
#include <math.h>
#include <sys/stat.h>

#include "cli.h"
#include "tessera_backend.h"
#include "tessera_apps.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera run --model DIR --inputs IN.safetensors --outputs OUT.safetensors\n"
    "                   [--device cpu] [--dtype f32|bf16] [--threads N] [--init-random SEED]\n"
    "                   [--repeat N] [--allow-nonfinite] [--device-memory GIB | --device-profile P]\n"
    "                   [--profile]\n"
    "       tessera run --model MODEL.onnx --inputs IN.safetensors --outputs OUT.safetensors\n"
    "                   [--device cpu] [--threads N] [--repeat N] [--device-memory GIB] [--int8]\n"
    "  Runs a BERT model on one batch and writes every output of its head, by name, as f32.\n"
    "  With an ONNX file (a --model that is a file, not a directory), runs that model instead\n"
    "  (opsets 9-17; `tessera onnx-ops` lists the ops): the inputs are the safetensors tensors\n"
    "  named as the model's inputs, of any shape the model allows (converted to the declared\n"
    "  dtype between float types or between integer types), and every output is written under\n"
    "  its name in its own dtype. An integer input of one element (a sample rate, a flag) is\n"
    "  fixed to its value for the import (ts_onnx_session_fix): what it decides is computed\n"
    "  once, and an If on it keeps only its taken branch (Silero VAD's sr). --dtype,\n"
    "  --init-random, --allow-nonfinite and --profile are BERT-only.\n";

#define CMD "run"

/* Is `name` ("cpu", "cpu:2", "opencl:0") a device of a registered backend, or of a plugin found
 * by its backend's name (ts_backend_load_named)? */
static int known_device(const char *name) {
    char back[64];
    snprintf(back, sizeof back, "%.*s", (int)strcspn(name, ":"), name);
    return ts_backend_find(back) || ts_backend_load_named(back) == TS_OK;
}

/* ------------------------------------------------------------------ the command */

typedef struct run_args {
    const char *model, *inputs, *outputs, *device;
    const char *dtype_name, *seed_text; /* --dtype, --init-random as given */
    ts_dtype dtype;
    int threads, repeat, random_init, allow_nonfinite, profile, int8;
    uint64_t seed;
    double memory_gib;                     /* --device-memory, or --device-profile's memory */
    const char *device_profile;            /* --device-profile */
    const ts_device_profile *dev_profile;  /* ... read (by cli_opts_parse) */
} run_args;

/* The checks of the values after the parse, and the settings the shared options left in cli_dev:
 * 0, or 2 after a usage message. */
static int check_args(run_args *a) {
    int bad = 0;
    a->memory_gib = cli_dev.memory_gib, a->allow_nonfinite = cli_dev.allow_nonfinite;
    a->device_profile = cli_dev.profile, a->dev_profile = cli_dev.device_profile;
    if (a->dtype_name) {
        const char *v = a->dtype_name;
        if (!strcmp(v, "f32") || !strcmp(v, "float32")) a->dtype = TS_F32;
        else if (!strcmp(v, "bf16") || !strcmp(v, "bfloat16")) a->dtype = TS_BF16;
        else fprintf(stderr, "tessera run: --dtype must be f32 or bf16, not '%s'\n", v), bad = 1;
    }
    if (!bad && a->seed_text) {
        const char *v = a->seed_text;
        char *end;
        errno = 0;
        unsigned long long seed = strtoull(v, &end, 10);
        if (errno || end == v || *end || v[0] == '-')
            fprintf(stderr, "tessera run: --init-random wants a seed (an integer >= 0), not '%s'\n", v), bad = 1;
        a->seed = seed;
        a->random_init = 1;
    }
    if (!bad && !a->device_profile && a->memory_gib > 1e9)
        fprintf(stderr, "tessera run: --device-memory wants a positive number of GiB, not '%g'\n", a->memory_gib),
            bad = 1;
    if (!bad && !a->model) fprintf(stderr, "tessera run: --model DIR (or MODEL.onnx) is required\n"), bad = 1;
    if (!bad && !a->inputs) fprintf(stderr, "tessera run: --inputs FILE is required\n"), bad = 1;
    if (!bad && !a->outputs) fprintf(stderr, "tessera run: --outputs FILE is required\n"), bad = 1;
    if (!bad && !known_device(a->device))
        fprintf(stderr, "tessera run: --device '%s' is not a device of this build (it has: %s)\n", a->device,
                ts_devices()), bad = 1;
    if (bad) {
        fputs("(tessera run --help shows the usage)\n", stderr);
        return 2;
    }
    return 0;
}

/* Is the model an ONNX file: a path ending in .onnx, or any file that is not a directory. */
static int is_onnx_model(const char *path) {
    struct stat st;
    size_t n = strlen(path);
    if (n > 5 && !strcmp(path + n - 5, ".onnx")) return 1;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode);
}

/* A run of a BERT model directory: what it reads, builds and writes. */
typedef struct bert_run {
    char config_path[4096], weights_path[4096];
    ts_bert_config cfg;
    ts_tensor *feeds[3], *outs[8];
    const char *fetch[8];
    int nf, B, T;
    ts_program *p;
    double seconds[2], best, total; /* build+compile, load; the runs' */
} bert_run;

/* The config and the inputs. 0 or 2, with the message printed. */
static int read_model(const run_args *a, bert_run *r) {
    if (!cli_path_join(r->config_path, sizeof r->config_path, a->model, "config.json") ||
        !cli_path_join(r->weights_path, sizeof r->weights_path, a->model, "model.safetensors"))
        return cli_fail("run", "--model: ", 2);
    ts_bert_config *cfg = &r->cfg;
    cfg->struct_size = sizeof *cfg;
    if (ts_bert_config_load(r->config_path, cfg) != TS_OK) return cli_fail("run", "--model: ", 2);
    ts_bert_config_inference(cfg, a->dtype);
    if (cfg->architecture[0] && strcmp(cfg->architecture, ts_bert_head_name(cfg->head)) != 0)
        fprintf(stderr, "tessera run: note: %s: architecture \"%s\" is not one tessera builds; running "
                "BertModel\n", r->config_path, cfg->architecture);
    ts_safetensors *in = ts_safetensors_open(a->inputs);
    if (!in) return cli_fail("run", "--inputs: ", 2);
    int64_t shape[2];
    ts_status st = ts_bert_read_inputs(in, a->inputs, cfg, r->feeds, shape);
    ts_safetensors_close(in);
    if (st != TS_OK) return cli_fail("run", "", 2);
    r->B = (int)shape[0], r->T = (int)shape[1];
    return 0;
}

/* Build and compile the model for the inputs' shape, and load its weights (ts_bert_infer_build).
 * 0 or the exit code. */
static int build_model(const run_args *a, bert_run *r) {
    ts_bert_infer_opts bo = {
        .struct_size = sizeof bo, .cfg = &r->cfg, .batch = r->B, .seq = r->T, .seed = a->seed, .device = a->device,
        .threads = a->threads, .profile = a->profile, .memory_limit = (size_t)(a->memory_gib * 1073741824.0),
        .weights = a->random_init ? NULL : r->weights_path, .load_flags = a->allow_nonfinite ? TS_LOAD_ALLOW_NONFINITE : 0,
        .name = "tessera run", .err = cli_write_err, .err_ctx = stderr, .config_path = r->config_path,
        .inputs = a->inputs};
    ts_quant_record rec = {0};
    if (cli_model_quant_load("run", a->model, &rec)) return 2;
    bo.quantize = a->int8 ? TS_QUANT_DYNAMIC : rec.mode;
    bo.quant_scales = rec.scales, bo.nquant_scales = a->int8 ? 0 : rec.nscales;
    ts_status st = ts_bert_infer_build(&bo, &r->p, r->fetch, &r->nf, r->seconds);
    ts_quant_record_free(&rec);
    if (st == TS_ERR_NOMEM && a->device_profile) { /* the planner's view of this forward pass on that device */
        ts_plan_request rq;
        ts_plan_request_defaults(&rq);
        rq.cfg = &r->cfg, rq.task = TS_PLAN_INFER, rq.batch = r->B, rq.seq_len = r->T, rq.dtype = a->dtype;
        rq.device = a->dev_profile, rq.count = 1, rq.replicas = 1, rq.micro_batches = 1, rq.recompute = 0;
        rq.shard_state = 0;
        cli_plan_suggest(CMD, a->device_profile, &rq, NULL);
    }
    return st == TS_OK ? 0 : st == TS_ERR_ARG ? 2 : 1;
}

/* Feed, run --repeat times, fetch and write the outputs. 0 or 1. */
static int run_model(const run_args *a, bert_run *r) {
    if (ts_bert_run_batch(r->p, r->feeds, a->repeat, r->nf, r->fetch, r->outs, &r->best, &r->total) != TS_OK) {
        fprintf(stderr, "tessera run: %s\n", cli_error());
        return 1;
    }
    if (ts_safetensors_save(a->outputs, r->nf, r->fetch, (const ts_tensor *const *)r->outs, "{\"format\": \"pt\"}") !=
        TS_OK) {
        fprintf(stderr, "tessera run: --outputs: %s\n", cli_error());
        return 1;
    }
    return 0;
}

/* The summary lines, and --profile's report. 0 or 1. */
static int report(const run_args *a, const bert_run *r) {
    printf("tessera run: %s (%d layers, hidden %d), batch %d x seq %d, %s on %s: build+compile %.3f s, ",
           ts_bert_head_name(r->cfg.head), r->cfg.num_hidden_layers, r->cfg.hidden_size, r->B, r->T,
           ts_dtype_name(a->dtype), a->device, r->seconds[0]);
    if (a->random_init) printf("random init (seed %llu), ", (unsigned long long)a->seed);
    else printf("load %.3f s, ", r->seconds[1]);
    if (a->repeat > 1) printf("run %.4f s (best of %d, mean %.4f s)\n", r->best, a->repeat, r->total / a->repeat);
    else printf("run %.4f s\n", r->best);
    printf("tessera run: wrote %s:", a->outputs);
    for (int i = 0; i < r->nf; i++) {
        printf(" %s [", r->fetch[i]);
        for (int d = 0; d < ts_tensor_ndim(r->outs[i]); d++)
            printf("%s%lld", d ? ", " : "", (long long)ts_tensor_shape(r->outs[i])[d]);
        printf("]");
    }
    printf("\n");
    if (a->profile && ts_program_profile_report(r->p, ts_write_stdio, stdout) != TS_OK) {
        fprintf(stderr, "tessera run: --profile: %s\n", cli_error());
        return 1;
    }
    return 0;
}

/* The run of the parsed and checked flags: the exit code. */
static int run(const run_args *a) {
    if (is_onnx_model(a->model)) {
        const char *bert_only = a->dtype != TS_F32 ? "--dtype" : a->random_init ? "--init-random"
                                : a->allow_nonfinite ? "--allow-nonfinite" : a->profile ? "--profile" : NULL;
        if (bert_only) {
            fprintf(stderr, "tessera run: %s is for BERT model directories, not ONNX models (%s)\n", bert_only, a->model);
            return 2;
        }
        return cli_run_onnx(a->model, a->inputs, a->outputs, a->device, a->threads, a->repeat, a->memory_gib,
                            a->int8 ? TS_QUANT_DYNAMIC : TS_QUANT_NONE);
    }
    bert_run *r = calloc(1, sizeof *r);
    if (!r) return 1;
    int rc;
    if (!(rc = read_model(a, r)) && !(rc = build_model(a, r)) && !(rc = run_model(a, r))) rc = report(a, r);
    for (int i = 0; i < 8; i++) ts_tensor_free(r->outs[i]);
    for (int i = 0; i < 3; i++) ts_tensor_free(r->feeds[i]);
    ts_program_free(r->p);
    free(r);
    return rc;
}

int cli_run(int argc, char **argv) {
    run_args a = {.device = "cpu", .dtype = TS_F32, .repeat = 1};
    const cli_opt opts[] = {
        {"model", CLI_STR, &a.model, 0, "DIR",
         "config.json + model.safetensors (Hugging Face layout; vocab.txt unused).\n"
         "The head is config.json's \"architectures\" (BertModel when absent):\n"
         "BertModel              last_hidden_state, pooler_output\n"
         "BertForPreTraining     + prediction_logits, seq_relationship_logits\n"
         "BertForMaskedLM        last_hidden_state, logits\n"
         "BertForSequenceClassification  + pooler_output, logits\n"
         "BertForQuestionAnswering       last_hidden_state, start_logits, end_logits\n"
         "A bare BertModel checkpoint (names without \"bert.\") loads too.\n"
         "Or MODEL.onnx, an ONNX file (see above)."},
        {"inputs", CLI_STR, &a.inputs, 0, "FILE",
         "input_ids [B, T] (required), token_type_ids (default 0) and\n"
         "attention_mask (default 1), i32 or i64; other tensors are ignored."},
        {"outputs", CLI_STR, &a.outputs, 0, "FILE", "written atomically (safetensors, f32)."},
        {"device", CLI_STR, &a.device, 0, "NAME", "a device of this build (default cpu)."},
        {"dtype", CLI_STR, &a.dtype_name, 0, "f32|bf16",
         "matmul precision (default f32); bf16 multiplies in bf16 and keeps\n"
         "everything else in f32, like PyTorch's autocast."},
        {"threads", CLI_INT, &a.threads, 1, "N", "worker threads (default: OpenMP's)."},
        {"init-random", CLI_STR, &a.seed_text, 0, "SEED",
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
         "int8 inference with dynamic quantization (ts_compile_opts.quantize):\n"
         "the weight matmuls and the convolutions by a weight run on int8\n"
         "weights (per output channel) and int8 activations (per tensor, per\n"
         "run), summed in int32, the rest in f32."},
        CLI_DEVICE_OPTS,
        {NULL, CLI_TEXT, NULL, 0, NULL, "Exit codes: 0 done, 1 failed while running, 2 bad flags or files.\n"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, CMD, USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc == 1) rc = check_args(&a);
    else if (rc == 0) goto done; /* --help */
    if (rc) goto done;
    rc = run(&a);
done:
    cli_opts_free(&os);
    return rc;
}
