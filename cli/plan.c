/*
 * plan.c — `tessera plan`: will a BERT fit a device it may not own, how to cut it, how fast it
 * will train. Reads the model's sizes (a model directory, a Hugging Face config.json, or BERT-Base,
 * with --layers / --hidden / --heads / --intermediate over them), a device profile and a count,
 * searches the layouts the flags leave open (ts_plan_search) and prints the best (ts_plan_print,
 * or ts_plan_print_json with --json). Flags shared with `tessera pretrain` mean the same: --batch
 * is the micro-batch, --micro-batches the accumulation.
 */
#include "cli.h"
#include "tessera.h"

static const char *USAGE =
    "usage: tessera plan --device PROFILE [--count N] [--model DIR | --config config.json]\n"
    "                    [--layers L --hidden H --heads A --intermediate I]\n"
    "                    [--batch B] [--seq-len T] [--max-predictions P] [--dtype f32|bf16|f16]\n"
    "                    [--optimizer adamw|lamb] [--task pretrain|finetune|infer]\n"
    "                    [--stages SPEC] [--replicas R] [--micro-batches M] [--recompute | --no-recompute]\n"
    "                    [--shard-optimizer] [--explain] [--json] [--top K]\n"
    "  Plans a run before it is made: for the model on N devices of a profile, searches stages x\n"
    "  replicas x micro-batches x recomputation x optimizer sharding for the layouts that fit every\n"
    "  device's memory (the compiler's own memory plan of each stage, nothing allocated), and prints\n"
    "  the fastest by estimated throughput: per stage its device, parts, memory and busy time; the\n"
    "  pipeline's bubble; the all-reduce and how much of it the backward hides; seq/s; and the\n"
    "  tessera pretrain command that runs it. docs/cost-model.md states the model and its figures.\n"
    "  --device PROFILE    a device profile: a name (ipu-mk2, ipu-bow, h200, cpu: measured here and\n"
    "                      cached; `tessera profile-device --list` lists them) or a .json path\n"
    "  --count N           devices in all (default 1): stages x replicas\n"
    "  --model DIR         the model directory's config.json gives the sizes\n"
    "  --config FILE       a Hugging Face config.json gives them (without either: BERT-Base)\n"
    "  --layers, --hidden, --heads, --intermediate  override the sizes (BERT-Large: --layers 24\n"
    "                      --hidden 1024 --heads 16 --intermediate 4096)\n"
    "  --batch B           sequences per micro-batch, as pretrain's --batch (default 8)\n"
    "  --seq-len T         tokens per sequence, as pretrain's --max-len (default 128)\n"
    "  --max-predictions P masked positions per sequence in pretraining (default 20)\n"
    "  --dtype D           f32 (default), bf16 or f16 (pretrain's --bf16 / --fp16)\n"
    "  --optimizer O       adamw (default) or lamb\n"
    "  --task T            pretrain (default: masked LM + next sentence), finetune (a sequence\n"
    "                      classifier) or infer (a forward pass)\n"
    "  The layout, searched unless given:\n"
    "  --stages SPEC       as pretrain's: \"0:emb,heads 1:0-3 2:4-7 3:8-11\" (devices of one replica)\n"
    "  --replicas R        data-parallel replicas (mpirun -np R); R divides --count\n"
    "  --micro-batches M   micro-batches per optimizer step (the accumulation)\n"
    "  --recompute, --no-recompute  recompute each encoder layer's forward in the backward, or not\n"
    "  --shard-optimizer   shard the optimizer state over the replicas (ZeRO-1)\n"
    "  Output:\n"
    "  --explain           also print the next best layouts, one line each, and why each lost\n"
    "  --json              print the layouts as one JSON object instead\n"
    "  --top K             layouts kept by the search (default 5): --explain's and --json's\n"
    "Exit codes: 0 a layout fits, 1 none fits (the closest is printed) or planning failed, 2 bad\n"
    "flags or files.\n";

#define CMD "plan"

typedef struct plan_args {
    const char *model, *config, *device, *stages;
    int count, batch, seq_len, max_predictions, replicas, micro_batches, recompute, shard, top;
    int layers, hidden, heads, inter, explain, json;
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

/* The flags that take a positive integer: where each goes. */
static int *int_flag(plan_args *a, const char *s, const char **flag) {
    static const char *names[] = {"--count", "--batch", "--seq-len", "--max-predictions", "--replicas",
                                  "--micro-batches", "--top", "--layers", "--hidden", "--heads", "--intermediate"};
    int *where[] = {&a->count, &a->batch, &a->seq_len, &a->max_predictions, &a->replicas, &a->micro_batches,
                    &a->top, &a->layers, &a->hidden, &a->heads, &a->inter};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        size_t n = strlen(names[k]);
        if (!strncmp(s, names[k], n) && (s[n] == 0 || s[n] == '=')) return *flag = names[k], where[k];
    }
    return NULL;
}

/* One flag at argv[*i]: 0, or 1 after its error. */
static int parse_one(int argc, char **argv, int *i, plan_args *a) {
    const char *s = argv[*i], *v, *flag;
    int bad = 0, k, *ip;
    if ((ip = int_flag(a, s, &flag))) {
        if ((v = cli_value(argc, argv, i, flag, CMD, &bad)) && (*ip = cli_positive(v, flag, CMD)) < 0) bad = 1;
    } else if ((v = cli_value(argc, argv, i, "--model", CMD, &bad))) a->model = v;
    else if ((v = cli_value(argc, argv, i, "--config", CMD, &bad))) a->config = v;
    else if ((v = cli_value(argc, argv, i, "--device", CMD, &bad))) a->device = v;
    else if ((v = cli_value(argc, argv, i, "--stages", CMD, &bad))) a->stages = v;
    else if ((v = cli_value(argc, argv, i, "--dtype", CMD, &bad))) {
        if (!strcmp(v, "fp16")) v = "f16";
        if (!(bad = parse_word("--dtype", v, (const char *[]){"f32", "bf16", "f16"}, 3, &k))) a->dtype = (ts_dtype)k;
    } else if ((v = cli_value(argc, argv, i, "--optimizer", CMD, &bad))) {
        if (!(bad = parse_word("--optimizer", v, (const char *[]){"adamw", "lamb"}, 2, &k)))
            a->optimizer = k ? TS_OPTIM_LAMB : TS_OPTIM_ADAMW;
    } else if ((v = cli_value(argc, argv, i, "--task", CMD, &bad))) {
        if (!(bad = parse_word("--task", v, (const char *[]){"pretrain", "finetune", "infer"}, 3, &k)))
            a->task = (ts_plan_task)k;
    } else if (!strcmp(s, "--recompute")) a->recompute = 1;
    else if (!strcmp(s, "--no-recompute")) a->recompute = 0;
    else if (!strcmp(s, "--shard-optimizer")) a->shard = 1;
    else if (!strcmp(s, "--explain")) a->explain = 1;
    else if (!strcmp(s, "--json")) a->json = 1;
    else if (!bad) fprintf(stderr, "tessera plan: unknown %s '%s'\n", s[0] == '-' ? "flag" : "argument", s), bad = 1;
    return bad;
}

/* Parse argv into *a: 0, 1 for --help (printed), or 2 after a usage message. */
static int parse_args(int argc, char **argv, plan_args *a) {
    int bad = 0;
    *a = (plan_args){.count = 1, .batch = 8, .seq_len = 128, .max_predictions = 20, .recompute = -1, .shard = -1,
                     .top = 5, .dtype = TS_F32, .optimizer = TS_OPTIM_ADAMW, .task = TS_PLAN_PRETRAIN};
    for (int i = 1; i < argc && !bad; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(USAGE, stdout);
            return 1;
        }
        bad = parse_one(argc, argv, &i, a);
    }
    if (!bad && !a->device) fprintf(stderr, "tessera plan: --device PROFILE is required\n"), bad = 1;
    if (!bad && a->model && a->config)
        fprintf(stderr, "tessera plan: --model and --config exclude each other (one gives the sizes)\n"), bad = 1;
    if (!bad && a->replicas && a->count % a->replicas)
        fprintf(stderr, "tessera plan: --replicas %d does not divide --count %d\n", a->replicas, a->count), bad = 1;
    if (!bad && a->max_predictions > a->seq_len)
        fprintf(stderr, "tessera plan: --max-predictions %d is more than --seq-len %d\n", a->max_predictions,
                a->seq_len), bad = 1;
    if (bad) {
        fputs("(tessera plan --help shows the usage)\n", stderr);
        return 2;
    }
    return 0;
}

/* The model's config: read, overridden by the size flags, checked. 0 or 2 with the message. */
static int model_config(const plan_args *a, ts_bert_config *cfg) {
    char path[4200];
    const char *from = a->config;
    ts_bert_config_default(cfg);
    if (a->model) snprintf(path, sizeof path, "%s/config.json", a->model), from = path;
    if (from && ts_bert_config_load(from, cfg) != TS_OK)
        return fprintf(stderr, "tessera plan: %s %s: %s\n", a->model ? "--model" : "--config", from, ts_last_error()), 2;
    if (a->layers) cfg->num_hidden_layers = a->layers;
    if (a->hidden) cfg->hidden_size = a->hidden;
    if (a->heads) cfg->num_attention_heads = a->heads;
    if (a->inter) cfg->intermediate_size = a->inter;
    if (cfg->hidden_size % cfg->num_attention_heads)
        return fprintf(stderr, "tessera plan: hidden size %d is not a multiple of %d heads\n", cfg->hidden_size,
                       cfg->num_attention_heads), 2;
    if (a->seq_len > cfg->max_position_embeddings)
        return fprintf(stderr, "tessera plan: --seq-len %d is more than the model's max_position_embeddings %d\n",
                       a->seq_len, cfg->max_position_embeddings), 2;
    if (ts_bert_config_check(cfg) != TS_OK)
        return fprintf(stderr, "tessera plan: the model's config%s%s: %s\n", from ? " from " : "", from ? from : "",
                       ts_last_error()), 2;
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
    ts_status st = ts_plan_search(&rq, l, cap, &n);
    int rc = st == TS_OK ? 0 : st == TS_ERR_ARG ? 2 : 1;
    if (st != TS_OK) fprintf(stderr, "tessera plan: %s\n", ts_last_error());
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

int cli_plan(int argc, char **argv) {
    plan_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    ts_bert_config cfg;
    if ((rc = model_config(&a, &cfg))) return rc;
    ts_device_profile dev = {.struct_size = sizeof dev};
    if (ts_device_profile_load(a.device, &dev) != TS_OK) {
        fprintf(stderr, "tessera plan: --device %s: %s\n", a.device, ts_last_error());
        return 2;
    }
    return plan(&a, &cfg, &dev);
}
