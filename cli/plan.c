/*
 * plan.c — `tessera plan`: will a BERT fit a device it may not own, how to cut it, how fast it
 * will train. Reads the model's sizes (a model directory --model, a Hugging Face config.json
 * --model-config, or BERT-Base, with --layers / --hidden / --heads / --intermediate over them), a
 * device profile (--device-profile) and a count, searches the layouts the flags leave open
 * (ts_plan_search) and prints the best (ts_plan_print, or ts_plan_print_json with --json). The
 * flags are one option table (cli_opts_parse). Flags shared with `tessera pretrain` mean the same:
 * --batch is the micro-batch, --max-len the sequence length, --micro-batches the accumulation.
 */
#include "cli.h"
#include "options.h"
#include "tessera_apps.h"

static const char *USAGE =
    "usage: tessera plan --device-profile P [--count N] [--model DIR | --model-config config.json]\n"
    "                    [--layers L --hidden H --heads A --intermediate I]\n"
    "                    [--batch B] [--max-len T] [--max-predictions P] [--dtype f32|bf16|f16]\n"
    "                    [--optimizer adamw|lamb] [--task pretrain|finetune|infer]\n"
    "                    [--stages SPEC] [--replicas R] [--micro-batches M] [--recompute | --no-recompute]\n"
    "                    [--shard-optimizer] [--explain] [--json] [--top K]\n"
    "  Plans a run before it is made: for the model on N devices of a profile, searches stages x\n"
    "  replicas x micro-batches x recomputation x optimizer sharding for the layouts that fit every\n"
    "  device's memory (the compiler's own memory plan of each stage, nothing allocated), and prints\n"
    "  the fastest by estimated throughput: per stage its device, parts, memory and busy time; the\n"
    "  pipeline's bubble; the all-reduce and how much of it the backward hides; seq/s; and the\n"
    "  tessera pretrain command that runs it. docs/cost-model.md states the model and its figures.\n";

#define CMD "plan"

typedef struct plan_args {
    const char *model, *config, *device, *stages, *dtype_name, *optimizer_name, *task_name;
    int count, batch, seq_len, max_predictions, replicas, micro_batches, recompute, top;
    int shard; /* --shard-optimizer: 1; then (check_args) 1, or -1: searched */
    int layers, hidden, heads, inter, explain, json;
    int recompute_on, recompute_off; /* --recompute, --no-recompute */
    ts_dtype dtype;
    ts_optim_kind optimizer;
    ts_plan_task task;
} plan_args;

/* A named value of a flag: 0, or prints the error and returns 1. */
static int parse_word(const char *flag, const char *v, const char *const *words, int nwords, int *out) {
    for (int k = 0; k < nwords; k++)
        if (!strcmp(v, words[k])) return *out = k, 0;
    fprintf(stderr, "tessera plan: %s %s: expected", flag, v);
    for (int k = 0; k < nwords; k++) fprintf(stderr, "%s%s", k ? (k + 1 == nwords ? " or " : ", ") : " ", words[k]);
    fprintf(stderr, "\n");
    return 1;
}

/* The checks after the parse (the named values, what the flags exclude): 0, or 2 after the message. */
static int check_args(plan_args *a) {
    int bad = 0, k;
    if (!a->device) fprintf(stderr, "tessera plan: --device-profile P is required\n"), bad = 1;
    if (!bad && a->dtype_name) {
        const char *v = strcmp(a->dtype_name, "fp16") ? a->dtype_name : "f16";
        if (!(bad = parse_word("--dtype", v, (const char *[]){"f32", "bf16", "f16"}, 3, &k))) a->dtype = (ts_dtype)k;
    }
    if (!bad && a->optimizer_name &&
        !(bad = parse_word("--optimizer", a->optimizer_name, (const char *[]){"adamw", "lamb"}, 2, &k)))
        a->optimizer = k ? TS_OPTIM_LAMB : TS_OPTIM_ADAMW;
    if (!bad && a->task_name &&
        !(bad = parse_word("--task", a->task_name, (const char *[]){"pretrain", "finetune", "infer"}, 3, &k)))
        a->task = (ts_plan_task)k;
    if (!bad && a->recompute_on && a->recompute_off)
        fprintf(stderr, "tessera plan: --recompute and --no-recompute exclude each other\n"), bad = 1;
    a->recompute = a->recompute_on ? 1 : a->recompute_off ? 0 : -1; /* -1: searched */
    a->shard = a->shard > 0 ? 1 : -1;                                 /* -1: searched */
    if (!bad && a->model && a->config)
        fprintf(stderr, "tessera plan: --model and --model-config exclude each other (one gives the sizes)\n"), bad = 1;
    if (!bad && a->replicas && a->count % a->replicas)
        fprintf(stderr, "tessera plan: --replicas %d does not divide --count %d\n", a->replicas, a->count), bad = 1;
    if (!bad && a->max_predictions > a->seq_len)
        fprintf(stderr, "tessera plan: --max-predictions %d is more than --max-len %d\n", a->max_predictions,
                a->seq_len), bad = 1;
    if (bad) fputs("(tessera plan --help shows the usage)\n", stderr);
    return bad ? 2 : 0;
}

/* The model's config: read, overridden by the size flags, checked. 0 or 2 with the message. */
static int model_config(const plan_args *a, ts_bert_config *cfg) {
    char path[4200];
    const char *from = a->config;
    ts_bert_config_default(cfg);
    if (a->model && !(from = cli_path_join(path, sizeof path, a->model, "config.json")))
        return fprintf(stderr, "tessera plan: --model: %s\n", cli_error()), 2;
    if (from && ts_bert_config_load(from, cfg) != TS_OK)
        return fprintf(stderr, "tessera plan: %s %s: %s\n", a->model ? "--model" : "--model-config", from,
                       cli_error()), 2;
    if (a->layers) cfg->num_hidden_layers = a->layers;
    if (a->hidden) cfg->hidden_size = a->hidden;
    if (a->heads) cfg->num_attention_heads = a->heads;
    if (a->inter) cfg->intermediate_size = a->inter;
    if (cfg->hidden_size % cfg->num_attention_heads)
        return fprintf(stderr, "tessera plan: hidden size %d is not a multiple of %d heads\n", cfg->hidden_size,
                       cfg->num_attention_heads), 2;
    if (a->seq_len > cfg->max_position_embeddings)
        return fprintf(stderr, "tessera plan: --max-len %d is more than the model's max_position_embeddings %d\n",
                       a->seq_len, cfg->max_position_embeddings), 2;
    if (ts_bert_config_check(cfg) != TS_OK)
        return fprintf(stderr, "tessera plan: the model's config%s%s: %s\n", from ? " from " : "", from ? from : "",
                       cli_error()), 2;
    return 0;
}

/* Search (or estimate) and print. The exit code. */
static int plan(const plan_args *a, const ts_bert_config *cfg, const ts_device_profile *dev) {
    ts_plan_request rq;
    ts_plan_request_defaults(&rq);
    rq.cfg = cfg, rq.task = a->task, rq.batch = a->batch, rq.seq_len = a->seq_len;
    rq.max_predictions = a->max_predictions, rq.dtype = a->dtype, rq.optimizer = a->optimizer;
    rq.device = dev, rq.count = a->count, rq.stages = a->stages, rq.replicas = a->replicas;
    rq.micro_batches = a->micro_batches, rq.recompute = a->recompute, rq.shard_state = a->shard;
    int cap = a->top > 0 ? a->top : 1, n = 0;
    ts_plan_layout *l = calloc((size_t)cap, sizeof *l);
    if (!l) return fprintf(stderr, "tessera plan: out of memory\n"), 1;
    l->struct_size = sizeof *l; /* the array's layouts are this header's */
    ts_status st = ts_plan_search(&rq, l, cap, &n);
    for (int i = 0; st == TS_OK && i < n; i++) cli_plan_command(&rq, &l[i]);
    int rc = st == TS_OK ? 0 : st == TS_ERR_ARG ? 2 : 1;
    if (st != TS_OK) fprintf(stderr, "tessera plan: %s\n", cli_error());
    else if ((a->json ? ts_plan_print_json(&rq, l, n, ts_write_stdio, stdout)
                      : ts_plan_print(&rq, l, n, a->explain, ts_write_stdio, stdout)) != TS_OK)
        rc = cli_fail(CMD, "", 1);
    else if (n == 0 || !l[0].fits)
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
        const char *path = !strncmp(argv[i], "--config=", 9) ? argv[i] + 9
                           : !strcmp(argv[i], "--config") && i + 1 < argc ? argv[i + 1] : NULL;
        if (!path) continue;
        size_t len;
        char *text = cli_read_text(path, &len);
        if (text && strstr(text, "\"hidden_size\""))
            fprintf(stderr, "tessera plan: %s looks like a model's config.json: give it as --model-config %s\n"
                            "(--config FILE now reads the options of any subcommand from a JSON file)\n", path, path);
        free(text);
        return;
    }
}

int cli_plan(int argc, char **argv) {
    plan_args a = {.count = 1, .batch = 8, .seq_len = 128, .max_predictions = 20, .top = 5, .dtype = TS_F32,
                   .optimizer = TS_OPTIM_ADAMW, .task = TS_PLAN_PRETRAIN};
    const cli_opt opts[] = {
        {"device-profile", CLI_STR, &a.device, 0, "P",
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
        {"batch", CLI_INT, &a.batch, 1, "B", "sequences per micro-batch, as pretrain's --batch (default 8)", NULL},
        {"max-len", CLI_INT, &a.seq_len, 1, "T", "tokens per sequence, as pretrain's --max-len (default 128)",
         "seq-len"},
        {"max-predictions", CLI_INT, &a.max_predictions, 1, "P",
         "masked positions per sequence in pretraining (default 20)", NULL},
        {"dtype", CLI_STR, &a.dtype_name, 0, "D", "f32 (default), bf16 or f16 (pretrain's --bf16 / --fp16)", NULL},
        {"optimizer", CLI_STR, &a.optimizer_name, 0, "O", "adamw (default) or lamb", NULL},
        {"task", CLI_STR, &a.task_name, 0, "T",
         "pretrain (default: masked LM + next sentence), finetune (a sequence\n"
         "classifier) or infer (a forward pass)", NULL},
        {NULL, CLI_TEXT, NULL, 0, NULL, "  The layout, searched unless given:\n", NULL},
        {"stages", CLI_STR, &a.stages, 0, "SPEC",
         "as pretrain's: \"0:emb,heads 1:0-3 2:4-7 3:8-11\" (devices of one replica)", NULL},
        {"replicas", CLI_INT, &a.replicas, 1, "R", "data-parallel replicas (mpirun -np R); R divides --count", NULL},
        {"micro-batches", CLI_INT, &a.micro_batches, 1, "M",
         "micro-batches per optimizer step (the accumulation)", NULL},
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
    if (rc == 2) hf_config_hint(argc, argv);
    if (rc != 1) goto done;
    ts_bert_config cfg;
    if ((rc = check_args(&a)) || (rc = model_config(&a, &cfg))) goto done;
    ts_device_profile dev = {.struct_size = sizeof dev};
    if (ts_device_profile_load(a.device, &dev) != TS_OK) {
        fprintf(stderr, "tessera plan: --device-profile %s: %s\n", a.device, cli_error());
        rc = 2;
        goto done;
    }
    rc = plan(&a, &cfg, &dev);
done:
    cli_opts_free(&os);
    return rc;
}
