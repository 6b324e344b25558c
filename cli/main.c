/*
 * main.c — the `tessera` command: dispatches `tessera SUBCOMMAND [options]` to one file per
 * subcommand (cli/<name>.c); `tessera --help` lists them by group (commands[] below). Exit codes: 0
 * success, 1 failure while running, 2 usage error.
 */
#include "cli.h"
#include "options.h"
#include "tessera.h"
#include "tessera_backend.h"

#include <unistd.h>

#ifndef TS_GIT_COMMIT
#define TS_GIT_COMMIT "unknown"
#endif

/* The groups `tessera --help` lists the subcommands under, in this order. */
enum { G_TEXT, G_RUN, G_PLAN, G_MEDIA, G_REF, G_COUNT };
static const char *const GROUPS[G_COUNT] = {
    [G_TEXT] = "Text models (BERT: vocabulary, pretraining, fine-tuning, scoring)",
    [G_RUN] = "Run and deploy",
    [G_PLAN] = "Plan and devices",
    [G_MEDIA] = "Vision and speech (pretrained ONNX models, installed by scripts/install-deps.sh)",
    [G_REF] = "Reference",
};

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    int group; /* G_TEXT ... */
    const char *summary;
} subcommand;

static int cli_version(int argc, char **argv);

static const subcommand commands[] = {
    {"vocab", cli_vocab, G_TEXT, "learn a WordPiece vocabulary from text files"},
    {"tokenize", cli_tokenize, G_TEXT, "print the WordPiece token ids of each input line"},
    {"pretrain", cli_pretrain, G_TEXT, "pretrain a BERT (masked LM + next sentence) on text files"},
    {"finetune", cli_finetune, G_TEXT, "fine-tune a pretrained BERT: text (pair) classifier or SQuAD QA"},
    {"eval", cli_eval, G_TEXT, "score a fine-tuned model: accuracy, or SQuAD exact match / F1"},
    {"predict", cli_predict, G_TEXT, "run a fine-tuned model: labels of texts, answers to questions"},
    {"split", cli_split, G_TEXT, "write the train / test split finetune makes of a labelled file"},
    {"bow", cli_bow, G_TEXT, "train a bag-of-words logistic regression: the baseline beside BERT"},
    {"run", cli_run, G_RUN, "run a BERT or ONNX model on a batch of inputs (safetensors in and out)"},
    {"export", cli_export, G_RUN, "write a BERT model directory as an ONNX model (fixed or dynamic batch)"},
    {"quantize", cli_quantize, G_RUN,
     "quantize a model directory to int8 (dynamic: weights per channel, activations per run)"},
    {"serve", cli_serve, G_RUN, "serve fine-tuned models over HTTP (KServe v2 JSON), batching requests"},
    {"plan", cli_plan, G_PLAN, "will a BERT fit a device, how to cut it, how fast: a layout and its estimate"},
    {"profile-device", cli_profile_device, G_PLAN,
     "measure this machine's device for the planner; list or show device profiles"},
    {"ocr", cli_ocr, G_MEDIA, "read the lines of text in a PNG or JPEG image (PaddleOCR PP-OCRv4)"},
    {"kws", cli_kws, G_MEDIA, "find wake words in audio files or a live stream (openWakeWord)"},
    {"vad", cli_vad, G_MEDIA, "find the stretches of speech in audio files (Silero VAD)"},
    {"audio-train", cli_audio_train, G_MEDIA,
     "train a classifier of short audio clips (on openWakeWord's embedding, or from scratch)"},
    {"onnx-ops", cli_onnx_ops, G_REF, "print the ONNX ops and opsets the importer takes (docs/onnx.md's table)"},
    {"version", cli_version, G_REF, "the version, commit and features of this build (also --version, -V)"},
};
enum { NCOMMANDS = sizeof commands / sizeof *commands };

/* The examples of `tessera --help`: each line runs as it is, in order, in a directory holding a
 * labelled file reviews.tsv (tests/test_cli_front.c runs them so). */
static const char *const EXAMPLES[] = {
    "tessera split --data reviews.tsv --out split",
    "tessera vocab --out vocab.txt --size 8000 split/train.txt",
    "tessera bow --vocab vocab.txt --train split/train.tsv --eval split/test.tsv",
};

/* `tessera --help` (and `tessera` alone, on stderr): the subcommands by group, examples, the flags
 * every subcommand takes and where the documentation is. */
static void usage(FILE *f) {
    fprintf(f, "usage: tessera SUBCOMMAND [options]\n"
               "       tessera SUBCOMMAND --help    (or tessera help SUBCOMMAND): its options\n");
    for (int g = 0; g < G_COUNT; g++) {
        fprintf(f, "\n%s:\n", GROUPS[g]);
        for (int i = 0; i < NCOMMANDS; i++)
            if (commands[i].group == g) fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
    }
    fprintf(f, "\nExamples (reviews.tsv: \"label<TAB>text\" lines under a header line):\n");
    for (size_t i = 0; i < sizeof EXAMPLES / sizeof *EXAMPLES; i++) fprintf(f, "  %s\n", EXAMPLES[i]);
    fprintf(f, "\nEvery subcommand also takes --backend-plugin PATH (load a device plugin), --strict-device (no CPU\n"
               "fallback on its devices) and --quiet (no placement lines at compile). Devices in this build: %s\n"
               "(docs/devices.md).\n"
               "\nDocumentation: README.md and docs/ in tessera's source; licences: LICENSE and THIRD_PARTY.md.\n",
            ts_devices());
}

/* The version, the commit the build was configured from and the features: `tessera --version`,
 * `tessera -V` and `tessera version` all print this. */
static void print_version(void) {
    /* the features: the libraries' own (what is loaded), then the rest of the build's options */
    const char *core = ts_build_features(), *apps = ts_apps_build_features();
    printf("tessera %s (commit %s, as configured)\ndevices in this build: %s\n"
           "features of libtessera: %s\nfeatures of libtessera_apps: %s\nalso on in this build: %s\n",
           ts_version(), TS_GIT_COMMIT, ts_devices(), *core ? core : "(none)", *apps ? apps : "(none)",
           *TS_TREE_FEATURES ? TS_TREE_FEATURES : "(none)");
}

static int cli_version(int argc, char **argv) {
    cli_optset os; /* no options of its own: --help, --config, and an error for anything else */
    int rc = cli_opts_parse(&os, "version", "  Prints the version, the commit and the features of this build, as\n"
                                            "  tessera --version and tessera -V do.\n", NULL, 0, argc, argv);
    cli_opts_free(&os);
    if (rc != 1) return rc;
    print_version();
    return 0;
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
    char prefix[64]; /* long phases' progress (ts_phase_*) on standard error, rank 0's */
    snprintf(prefix, sizeof prefix, "tessera %s", c->name);
    if (ts_comm_rank(w) == 0) ts_progress_to(prefix, ts_write_stdio, stderr, isatty(2), 0);
    int rc = c->run(argc, argv);
    fflush(stdout);
    if (n > 1 && rc != 0) ts_comm_abort(w, rc);
    ts_comm_finalize();
    return rc;
}

/* An argv[1] that is no subcommand (nor --help, --version): one line naming it and the closest
 * match, exit 2. */
static int unknown_word(const char *word) {
    const char *flags[] = {"--help", "-h", "--version", "-V"};
    const char *names[NCOMMANDS + 1];
    for (int i = 0; i < NCOMMANDS; i++) names[i] = commands[i].name;
    names[NCOMMANDS] = "help";
    int flag = word[0] == '-';
    const char *near = flag ? ts_closest_name(word, flags, 4) : ts_closest_name(word, names, NCOMMANDS + 1);
    fprintf(stderr, "tessera: unknown %s '%s'%s%s%s; tessera --help lists them\n", flag ? "flag" : "subcommand", word,
            near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
    return 2;
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
    const char *word = argv[1];
    if (!strcmp(word, "--help") || !strcmp(word, "-h") || !strcmp(word, "help")) {
        if (argc < 3 || strcmp(word, "help") || argv[2][0] == '-') { /* help --help: the same */
            usage(stdout);
            return 0;
        }
        /* tessera help SUBCOMMAND: its usage, as SUBCOMMAND --help */
        word = argv[2];
        static char help_flag[] = "--help";
        char *args[] = {argv[2], help_flag, NULL};
        for (int i = 0; i < NCOMMANDS; i++)
            if (!strcmp(word, commands[i].name)) return run_command(&commands[i], 2, args);
        return unknown_word(word);
    }
    if (!strcmp(word, "--version") || !strcmp(word, "-V")) {
        print_version();
        return 0;
    }
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(word, commands[i].name)) return run_command(&commands[i], argc - 1, argv + 1);
    return unknown_word(word);
}
