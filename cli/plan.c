/*
 * plan.c — `tessera plan`: will a BERT fit a device it may not own, how to cut it, how fast it
 * will train (apps/plan: ts_plan_model_config, ts_plan_search, ts_plan_print); here its flags, the
 * command line of each layout (cli_plan_command) and the printing.
 */
#include "cli.h"
#include "options.h"

static const char *USAGE =
    "  Plans a run before it is made: for the model on N devices of a profile, searches stages x\n"
    "  replicas x micro-batches x recomputation x optimizer sharding for the layouts that fit every\n"
    "  device's memory (the compiler's own memory plan of each stage, nothing allocated), and prints\n"
    "  the fastest by estimated throughput: per stage its device, parts, memory and busy time; the\n"
    "  pipeline's bubble; the all-reduce and how much of it the backward hides; seq/s; and the\n"
    "  tessera pretrain command that runs it. docs/cost-model.md states the model and its figures.\n";

#define CMD "plan"

typedef struct plan_args {
    const char *model, *config, *device, *stages, *dtype, *optimizer, *task, *precision;
    int count, batch, seq_len, max_predictions, replicas, micro_batches, top, global_batch;
    double per_row, max_grad_norm; /* --sequences-per-row, --max-grad-norm */
    int layers, hidden, heads, inter, vocab, explain, json;
    int recompute_on, recompute_off, shard; /* --recompute, --no-recompute, --shard-optimizer */
} plan_args;

/* Search rq's layouts, spell their commands and print them: the exit code. */
static int plan(const plan_args *a, ts_plan_request *rq) {
    rq->batch = a->batch, rq->seq_len = a->seq_len, rq->max_predictions = a->max_predictions, rq->count = a->count;
    rq->stages = a->stages, rq->replicas = a->replicas, rq->micro_batches = a->micro_batches;
    rq->sequences_per_row = a->per_row, rq->split_batch = 1; /* the global batch kept: --batch x M x R by default */
    rq->max_grad_norm = a->max_grad_norm;
    rq->global_batch = a->global_batch ? a->global_batch : a->batch * (a->micro_batches > 0 ? a->micro_batches : 1) *
                                                           (a->replicas > 0 ? a->replicas : 1);
    rq->recompute = a->recompute_on ? 1 : a->recompute_off ? 0 : -1, rq->shard_state = a->shard ? 1 : -1;
    int cap = a->top > 0 ? a->top : 1, n = 0;
    ts_plan_layout *l = calloc((size_t)cap, sizeof *l);
    if (!l) return fprintf(stderr, "tessera plan: out of memory\n"), 1;
    l->struct_size = sizeof *l; /* the array's layouts are this header's */
    ts_status st = ts_plan_search(rq, l, cap, &n);
    for (int i = 0; st == TS_OK && i < n; i++) cli_plan_command(rq, &l[i]);
    int rc = st == TS_OK ? 0 : cli_fail(CMD, "", st == TS_ERR_ARG ? 2 : 1);
    if (st == TS_OK && (a->json ? ts_plan_print_json(rq, l, n, ts_write_stdio, stdout)
                                : ts_plan_print(rq, l, n, a->explain, ts_write_stdio, stdout)) != TS_OK)
        rc = cli_fail(CMD, "", 1);
    else if (st == TS_OK && (n == 0 || !l[0].fits))
        rc = 1;
    if (st == TS_OK && !a->json && !a->explain && n > 1)
        printf(n == 2 ? "(--explain: the next layout and why it lost)\n"
                      : "(--explain: the next %d layouts and why each lost)\n", n - 1);
    free(l);
    return rc;
}

/* After a usage error: when --config named a Hugging Face config.json (plan's --config before
 * --config became every subcommand's options file), say that it is --model-config now. */
static void hf_config_hint(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *path = !strncmp(argv[i], "--config=", 9)             ? argv[i] + 9
                           : !strcmp(argv[i], "--config") && i + 1 < argc ? argv[i + 1]
                                                                          : NULL;
        char *text = path ? cli_read_text(path, NULL) : NULL;
        if (text && strstr(text, "\"hidden_size\""))
            fprintf(stderr, "tessera plan: %s looks like a model's config.json: give it as --model-config %s\n"
                            "(--config FILE now reads the options of any subcommand from a JSON file)\n", path, path);
        free(text);
    }
}

int cli_plan(int argc, char **argv) {
    plan_args a = {.count = 1, .batch = 8, .seq_len = 128, .max_predictions = 20, .top = 5};
    const cli_opt opts[] = {
        {"device-profile", CLI_STR, &a.device, 1, "P",
         "a device profile: a name (ipu-mk2, ipu-bow, h200, cpu: measured here and\n"
         "cached; `tessera profile-device --list` lists them) or a .json path",
         "device"},
        {"count", CLI_INT, &a.count, 1, "N", "devices in all (default 1): stages x replicas", NULL},
        {"model", CLI_STR, &a.model, 0, "DIR", "the model directory's config.json gives the sizes", NULL},
        {"model-config", CLI_STR, &a.config, 0, "FILE",
         "a Hugging Face config.json gives them (without either: BERT-Base);\n"
         "formerly --config, which now reads these options from a JSON file", NULL},
        {"layers", CLI_INT, &a.layers, 1, "L",
         "override the sizes: encoder layers (BERT-Large: --layers 24\n"
         "--hidden 1024 --heads 16 --intermediate 4096)", NULL},
        {"hidden", CLI_INT, &a.hidden, 1, "H", "the hidden size", NULL},
        {"heads", CLI_INT, &a.heads, 1, "A", "attention heads", NULL},
        {"intermediate", CLI_INT, &a.inter, 1, "I", "the feed-forward layers' size", NULL},
        {"vocab", CLI_INT, &a.vocab, 1, "V", "the vocabulary's size (Graphcore's BERT: 30400, MLPerf's: 30912)", NULL},
        {"batch", CLI_INT, &a.batch, 1, "B",
         "sequences per micro-batch, as pretrain's --batch (default 8; the search may take fewer)", NULL},
        {"max-len", CLI_INT, &a.seq_len, 1, "T", "tokens per sequence, as pretrain's --max-len (default 128)",
         "seq-len"},
        {"max-predictions", CLI_INT, &a.max_predictions, 1, "P",
         "masked positions per sequence in pretraining (default 20)", NULL},
        {"dtype", CLI_STR, &a.dtype, 0, "D", "f32 (default), bf16 or f16 (pretrain's --bf16 / --fp16)", NULL},
        {"precision", CLI_STR, &a.precision, 0, "MODE",
         "f32, bf16, fp16 (f32 weights) or bf16-sr, fp16-sr (16-bit weights, gradients\n"
         "and optimizer state, stochastic rounding); sets the dtype too", NULL},
        {"optimizer", CLI_STR, &a.optimizer, 0, "O", "adamw (default) or lamb", NULL},
        {"max-grad-norm", CLI_FLOAT, &a.max_grad_norm, 0, "X", "as pretrain's: clipping keeps every gradient to "
         "the end of the step\n(default 0: none; the updates then run inside the backward pass)", NULL},
        {"task", CLI_STR, &a.task, 0, "T",
         "pretrain (default: masked LM + next sentence), finetune (a sequence\n"
         "classifier) or infer (a forward pass)", NULL},
        {NULL, CLI_TEXT, NULL, 0, NULL, "  The layout, searched unless given:\n", NULL},
        {"stages", CLI_STR, &a.stages, 0, "SPEC",
         "as pretrain's: \"0:emb,heads 1:0-3 2:4-7 3:8-11\" (devices of one replica)", NULL},
        {"replicas", CLI_INT, &a.replicas, 1, "R", "data-parallel replicas (mpirun -np R); R divides --count", NULL},
        {"micro-batches", CLI_INT, &a.micro_batches, 1, "M",
         "micro-batches per optimizer step (the accumulation)", NULL},
        {"global-batch", CLI_INT, &a.global_batch, 1, "N", "sequences a step, kept by every layout (replicas x "
         "micro-batches x a micro-batch of at most --batch; default --batch x --micro-batches x --replicas)", NULL},
        {"sequences-per-row", CLI_FLOAT, &a.per_row, 0, "F", "packed rows: F sequences a row on average (seq/s x F)", NULL},
        {"recompute", CLI_FLAG, &a.recompute_on, 0, NULL,
         "recompute each encoder layer's forward in the backward", NULL},
        {"no-recompute", CLI_FLAG, &a.recompute_off, 0, NULL,
         "do not recompute (without either, the search tries both)", NULL},
        {"shard-optimizer", CLI_FLAG, &a.shard, 0, NULL, "shard the optimizer state over the replicas (ZeRO-1)", NULL},
        {NULL, CLI_TEXT, NULL, 0, NULL, "  Output:\n", NULL},
        {"explain", CLI_FLAG, &a.explain, 0, NULL,
         "also print the next best layouts, one line each, and why each lost", NULL},
        {"json", CLI_FLAG, &a.json, 0, NULL, "print the layouts as one JSON object instead", NULL},
        {"top", CLI_INT, &a.top, 1, "K", "layouts kept by the search (default 5): --explain's and --json's", NULL},
        {NULL, CLI_TEXT, NULL, 0, NULL,
         "Exit codes: 0 a layout fits, 1 none fits (the closest is printed) or planning failed, 2 bad\n"
         "flags or files.\n", NULL},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, CMD, USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    static const cli_term TERMS[] = {{"seq_len", "--max-len"}, {"replicas", "--replicas"}, {"count", "--count"},
                                     {"config_file", "--model-config"}};
    cli_terms_use(opts, (int)(sizeof opts / sizeof *opts), TERMS, (int)(sizeof TERMS / sizeof *TERMS));
    if (rc == 2) hf_config_hint(argc, argv);
    if (rc != 1) goto done;
    ts_bert_config cfg;
    ts_device_profile dev;
    ts_plan_request rq;
    double gib;
    ts_plan_request_defaults(&rq);
    rq.struct_size = sizeof rq, rq.weight_dtype = TS_F32, rq.sequences_per_row = 0; /* past the base */
    rq.cfg = &cfg, rq.device = &dev;
    if (a.recompute_on && a.recompute_off)
        rc = 2, fprintf(stderr, "tessera plan: --recompute and --no-recompute exclude each other\n"
                                "(tessera plan --help shows the usage)\n");
    else if (ts_plan_request_names(&rq, a.dtype, a.optimizer, a.task) ||
             (a.precision && ts_precision_parse(a.precision, &rq.dtype, &rq.weight_dtype)) ||
             ts_plan_model_config(a.model, a.config, a.layers, a.hidden, a.heads, a.inter, a.vocab, &cfg))
        rc = cli_fail(CMD, "", 2);
    else if (!(rc = cli_device_profile_load(CMD, a.device, &gib, &dev)))
        rc = plan(&a, &rq);
done:
    cli_opts_free(&os);
    return rc;
}
