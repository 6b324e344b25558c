/*
 * main.c — the `tessera` command: dispatches `tessera SUBCOMMAND [options]` to one file per
 * subcommand (cli/<name>.c). Exit codes: 0 success, 1 failure while running, 2 usage error.
 */
#include "cli.h"
#include "options.h"
#include "tessera.h"
#include "tessera_backend.h"

#include <unistd.h>

#ifndef TS_GIT_COMMIT
#define TS_GIT_COMMIT "unknown"
#endif

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand commands[] = {
    {"tokenize", cli_tokenize, "print the WordPiece token ids of each input line"},
    {"vocab", cli_vocab, "learn a WordPiece vocabulary from text files"},
    {"split", cli_split, "write the train / test split finetune makes of a labelled file"},
    {"bow", cli_bow, "train a bag-of-words logistic regression: the baseline beside BERT"},
    {"pretrain", cli_pretrain, "pretrain a BERT (masked LM + next sentence) on text files"},
    {"finetune", cli_finetune, "fine-tune a pretrained BERT: text (pair) classifier or SQuAD QA"},
    {"eval", cli_eval, "score a fine-tuned model: accuracy, or SQuAD exact match / F1"},
    {"predict", cli_predict, "run a fine-tuned model: labels of texts, answers to questions"},
    {"run", cli_run, "run a BERT or ONNX model on a batch of inputs (safetensors in and out)"},
    {"onnx-ops", cli_onnx_ops, "print the ONNX ops and opsets the importer takes (README's table)"},
    {"ocr", cli_ocr, "read the lines of text in a PNG or JPEG image (PaddleOCR PP-OCRv4)"},
    {"kws", cli_kws, "find wake words in audio files or a live stream (openWakeWord)"},
    {"audio-train", cli_audio_train, "train a classifier of short audio clips (on openWakeWord's embedding, or from scratch)"},
    {"vad", cli_vad, "find the stretches of speech in audio files (Silero VAD)"},
    {"quantize", cli_quantize, "quantize a model directory to int8 (dynamic: weights per channel, activations per run)"},
    {"export", cli_export, "write a BERT model directory as an ONNX model (fixed batch shape)"},
    {"profile-device", cli_profile_device, "measure this machine's device for the planner; list or show device profiles"},
    {"serve", cli_serve, "serve fine-tuned models over HTTP (KServe v2 JSON), batching requests"},
    {"plan", cli_plan, "will a BERT fit a device, how to cut it, how fast: a layout and its estimate"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: tessera SUBCOMMAND [options]   (tessera --version: the version)\n\nsubcommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`tessera SUBCOMMAND --help` describes each one. Devices in this build: %s; any subcommand takes\n"
               "--backend-plugin PATH, --strict-device (no CPU fallback on its devices) and --quiet (no placement\n"
               "lines at compile) (README: Devices and plugins).\n", ts_devices());
}

static int strict_device; /* --strict-device: the devices a subcommand is given refuse a CPU fallback */

void cli_opts_device_flags(const cli_optset *s) {
    if (!strict_device) return;
    for (int i = 0; i < s->nopts; i++) {
        const cli_opt *o = &s->opts[i];
        if (o->kind != CLI_STR || !o->name || (strcmp(o->name, "device") && strcmp(o->name, "devices"))) continue;
        for (const char *p = *(const char *const *)o->ptr; p && *p;) { /* "opencl:0" or "cpu:0,opencl:0" */
            size_t n = strcspn(p, ", ");
            char name[64];
            if (n && n < sizeof name) {
                snprintf(name, sizeof name, "%.*s", (int)n, p);
                /* a device that cannot be opened is left to the subcommand, which says why */
                if (ts_device_set_option(name, "fallback", "none") != TS_OK) ts_err_clear();
            }
            p += n + (p[n] != 0);
        }
    }
}

/* Take --backend-plugin PATH (loaded), --strict-device (cli_opts_device_flags) and --quiet out of
 * argv. The library's notices (the placement line of each compile on a plugin's device) go to
 * stderr unless --quiet. */
static int device_flags(int *argc, char **argv) {
    int k = 1, quiet = 0;
    for (int i = 1; i < *argc; i++) quiet |= !strcmp(argv[i], "--quiet");
    ts_set_notice_sink(quiet ? NULL : ts_write_stdio, quiet ? NULL : stderr);
    for (int i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "--strict-device")) strict_device = 1;
        else if (!strcmp(argv[i], "--quiet")) continue;
        else if (strcmp(argv[i], "--backend-plugin")) argv[k++] = argv[i];
        else if (i + 1 == *argc) return fprintf(stderr, "tessera: --backend-plugin needs a PATH\n"), 2;
        else if (ts_backend_load(argv[++i])) return fprintf(stderr, "tessera: %s\n", cli_error()), 2;
    }
    argv[*argc = k] = NULL;
    return 0;
}

/* Run a subcommand. Under mpirun (a world of several ranks) only pretrain and finetune run, as
 * replicas: rank 0 alone prints to stdout, and a rank that fails ends the whole job (MPI_Abort), so
 * that no rank waits for it. */
static int run_command(const subcommand *c, int argc, char **argv) {
    ts_comm *w = ts_comm_world();
    if (!w) {
        fprintf(stderr, "tessera %s: %s\n", c->name, cli_error());
        return 1;
    }
    int n = ts_comm_size(w);
    if (n > 1 && strcmp(c->name, "pretrain") != 0 && strcmp(c->name, "finetune") != 0) {
        if (ts_comm_rank(w) == 0)
            fprintf(stderr, "tessera %s runs in one process; mpirun -np %d starts replicas of a training run "
                            "(tessera pretrain or finetune)\n", c->name, n);
        ts_comm_abort(w, 2);
    }
    if (n > 1 && ts_comm_rank(w) > 0 && !freopen("/dev/null", "w", stdout)) {
        fprintf(stderr, "tessera %s: cannot silence rank %d's output\n", c->name, ts_comm_rank(w));
        ts_comm_abort(w, 1);
    }
    int rc = c->run(argc, argv);
    fflush(stdout);
    if (n > 1 && rc != 0) ts_comm_abort(w, rc);
    ts_comm_finalize();
    return rc;
}

int main(int argc, char **argv) {
    /* OpenMP threads that spin while idle lose most of their time when the cores are shared
     * (measured: MNIST 305 s spinning vs 19 s passive under load). libgomp reads the policy when
     * it loads, before main, so set it and start again once, unless the user chose one. */
    if (!getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
        /* exec failed (no /proc): carry on with the default policy */
    }
    if (device_flags(&argc, argv)) return 2;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        /* the features: the libraries' own (what is loaded), then the rest of the build's options */
        const char *core = ts_build_features(), *apps = ts_apps_build_features();
        printf("tessera %s (commit %s, as configured)\ndevices in this build: %s\n"
               "features of libtessera: %s\nfeatures of libtessera_apps: %s\nalso on in this build: %s\n",
               ts_version(), TS_GIT_COMMIT, ts_devices(), *core ? core : "(none)", *apps ? apps : "(none)",
               *TS_TREE_FEATURES ? TS_TREE_FEATURES : "(none)");
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return run_command(&commands[i], argc - 1, argv + 1);
    const char *names[sizeof commands / sizeof *commands];
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) names[i] = commands[i].name;
    const char *near = cli_did_you_mean(argv[1], names, (int)(sizeof commands / sizeof *commands));
    if (near) fprintf(stderr, "tessera: unknown subcommand '%s' (did you mean '%s'?)\n\n", argv[1], near);
    else fprintf(stderr, "tessera: unknown subcommand '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
