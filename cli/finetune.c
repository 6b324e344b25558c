/*
 * finetune.c — `tessera finetune`: train a pretrained model directory for a task, --task classify
 * (a sequence classifier on a labelled TSV / CSV / JSONL file of single texts or, with
 * --text-b-column, text pairs) or --task qa (question answering on SQuAD v1.1). The run is the
 * library's (tessera_tasks.h: ts_finetune_run, apps/train/finetune_run*.c); here are its flags,
 * read into ts_finetune_run_opts and checked, --out locked, the run's lines printed with the
 * fields they name written as the flags that set them, and the exit code.
 */
#include <ctype.h>
#include <unistd.h>

#include "cli.h"
#include "pipeline_opts.h"
#include "train_common.h"

static const char *USAGE =
    "usage: tessera finetune --model DIR --train FILE --out DIR [options]\n"
    "  Fine-tunes the model in DIR (from tessera pretrain) for a task:\n";

/* The options of this run (one command per process): the library's, and --task and --device. */
static ts_finetune_run_opts ft;
static const char *ft_task, *ft_device;

/* A field of ts_finetune_run_opts as the library's lines name it, and the flag that sets it (NULL:
 * the memory limit's, --device-profile's when one was given). */
static const struct {
    const char *field, *flag;
} FLAGS[] = {
    {"model_dir", "--model"}, {"train_file", "--train"}, {"eval_file", "--eval"}, {"out_dir", "--out"},
    {"task classify", "--task classify"}, {"task qa", "--task qa"}, {"max_len", "--max-len"},
    {"max_query_len", "--max-query-len"}, {"doc_stride", "--doc-stride"}, {"max_answer_len", "--max-answer-len"},
    {"n_best", "--n-best"}, {"relocate_answers", "--relocate-answers"}, {"text_column", "--text-column"},
    {"text_b_column", "--text-b-column"}, {"label_column", "--label-column"}, {"truncate", "--truncate"},
    {"random_init", "--random-init"}, {"test_split", "--test-split"}, {"split_seed", "--split-seed"},
    {"test_every", "--test-every"}, {"max_steps", "--max-steps"}, {"max_minutes", "--max-minutes"},
    {"save_every", "--save-every"}, {"stop_after", "--stop-after"}, {"device_iterations", "--device-iterations"},
    {"micro_batches", "--micro-batches"}, {"max_grad_norm", "--max-grad-norm"}, {"weight_decay", "--weight-decay"},
    {"memory_limit", NULL}, {"stages auto", "--stages auto"}, {"tokens; batch", "tokens; --batch"},
};

static int in_word(char c) { return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == '/'; }

/* text[0 .. len) with each field that stands as a word of its own written as its flag, into
 * buf[cap] (no flag is twice as long as its field, so text up to cap / 2 fits). Its
 * length, or 0 when text is too long to map (it is then written as it is). */
static size_t as_flags(const char *text, size_t len, char *buf, size_t cap) {
    if (len > cap / 2) return 0;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t k = sizeof FLAGS / sizeof *FLAGS, m = 0;
        if (i == 0 || !in_word(text[i - 1]))
            for (k = 0; k < sizeof FLAGS / sizeof *FLAGS; k++) {
                m = strlen(FLAGS[k].field);
                if (m <= len - i && !memcmp(text + i, FLAGS[k].field, m) && (i + m == len || !in_word(text[i + m])))
                    break;
            }
        if (k < sizeof FLAGS / sizeof *FLAGS) {
            const char *flag = FLAGS[k].flag              ? FLAGS[k].flag
                               : cli_dev.device_profile ? "--device-profile's"
                                                        : "--device-memory";
            memcpy(buf + n, flag, strlen(flag));
            n += strlen(flag), i += m;
        } else {
            buf[n++] = text[i++];
        }
    }
    return n;
}

/* The run's lines (ctx stdout) and error lines (ctx stderr, through cli_write_err), in flags. */
static void write_out(void *ctx, const char *text, size_t len) {
    char buf[16384];
    size_t n = as_flags(text, len, buf, sizeof buf);
    ts_write_stdio(ctx, n ? buf : text, n ? n : len);
}
static void write_err(void *ctx, const char *text, size_t len) {
    char buf[16384];
    size_t n = as_flags(text, len, buf, sizeof buf);
    cli_write_err(ctx, n ? buf : text, n ? n : len);
}

/* A program refused for memory under --device-profile: the planner's layout that fits
 * (cli_bert_suggest) for the model of --model, the row length and precision of this run and the
 * stages of --stages (one device for --stages auto, which the run measured). */
static void suggest(void) {
    ts_bert_config cfg;
    char path[4200];
    ts_bert_config_default(&cfg);
    if (!cli_path_join(path, sizeof path, ft.model_dir, "config.json") || ts_bert_config_load(path, &cfg) != TS_OK)
        return;
    int qa = ft.task == TS_FINETUNE_QA || (ft.task == TS_FINETUNE_AUTO && cfg.head == TS_BERT_QUESTION_ANSWERING);
    int longest = qa ? 384 : 128, positions = cfg.max_position_embeddings;
    int seq = ft.max_len ? ft.max_len : positions < longest && !ft.random_init ? positions : longest;
    if (ft.random_init && seq > positions) cfg.max_position_embeddings = seq;
    cfg.compute_dtype = ft.bf16 ? TS_BF16 : ft.fp16 ? TS_F16 : cfg.compute_dtype;
    cfg.recompute = ft.recompute;
    static ts_stage_plan pp; /* cfg points into it */
    const ts_stage_plan *p = NULL;
    if (ft.devices && !cli_pipe_one_device(ft.devices, ft.stages) &&
        ts_stage_plan_parse(ft.devices, ft.stages, cfg.num_hidden_layers, &pp) == TS_OK && !pp.automatic) {
        ts_stage_plan_apply(&pp, &cfg);
        p = &pp;
    }
    cli_bert_suggest("finetune", &cfg, qa ? TS_BERT_QUESTION_ANSWERING : TS_BERT_SEQ_CLASSIFICATION, ft.batch, seq,
                     1, ts_optim_kind_parse(ft.optimizer), ft.accumulation, p);
}

/* --task NAME: TS_FINETUNE_CLASSIFY or TS_FINETUNE_QA, or -1 after printing the error. */
static int task_kind(const char *name) {
    int t = cli_task_parse("finetune", name);
    return t < 0 ? -1 : t == CLI_TASK_QA ? TS_FINETUNE_QA : TS_FINETUNE_CLASSIFY;
}

/* Lock --out, then the run (ts_finetune_run) with the settings the subcommands share. The exit
 * code: 0, 1 a failure while running, 2 bad flags or inputs. */
static int run(void) {
    int rc = cli_out_lock("finetune", ft.out_dir);
    if (rc) return rc;
    ft.name = "tessera finetune";
    ft.out = write_out, ft.out_ctx = stdout, ft.tty = isatty(fileno(stdout));
    ft.err = write_err, ft.err_ctx = stderr;
    ft.memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0);
    ft.load_flags = cli_load_flags(0);
    ft.comm = cli_rep.comm, ft.shard = cli_rep.shard_optimizer;
    ts_status st = ts_finetune_run(&ft);
    if (st == TS_ERR_NOMEM && cli_dev.device_profile) suggest();
    return st == TS_OK ? 0 : st == TS_ERR_ARG || st == TS_ERR_NOT_FOUND ? 2 : 1;
}

/* The option table. */
static const cli_opt OPTS[] = {
    {"model", CLI_STR, &ft.model_dir, 0, "DIR",
     "the pretrained model directory (tessera pretrain's --out)"},
    {"train", CLI_STR, &ft.train_file, 0, "FILE",
     "the training data (its kind: --task)"},
    {"out", CLI_STR, &ft.out_dir, 0, "DIR",
     "the fine-tuned model directory to write"},
    {"task", CLI_STR, &ft_task, 0, "classify|qa",
     "classify (default): a sequence classifier on FILE (.tsv or .csv with a\n"
     "header, or .jsonl); labels are the file's distinct values, sorted\n"
     "qa: extractive question answering (BertForQuestionAnswering) on a SQuAD\n"
     "v1.1 JSON file; the encoder's weights load from DIR, qa_outputs.* are new\n"
     "(inferred when DIR is already a question-answering model)"},
    {"eval", CLI_STR, &ft.eval_file, 0, "FILE",
     "held-out data. classify: test on FILE instead of a split of --train;\n"
     "qa: a SQuAD file scored (EM / F1, the official v1.1 way) after each epoch", "dev"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Classification:\n"},
    {"text-column", CLI_STR, &ft.text_column, 0, "NAME",
     "column / key of the text (default text)"},
    {"text-b-column", CLI_STR, &ft.text_b_column, 0, "NAME",
     "column / key of a second text: a text-pair classifier, rows encoded\n"
     "[CLS] text [SEP] text_b [SEP] (token types 0, then 1); remembered in\n"
     "config.json for tessera eval and predict"},
    {"label-column", CLI_STR, &ft.label_column, 0, "NAME",
     "column / key of the label (default label)"},
    {"test-split", CLI_FLOAT, &ft.test_split, 0, "F",
     "fraction held out for testing, after deduplication (default 0.2; 0: none)"},
    {"truncate", CLI_STR, &ft.truncate, 0, "HOW",
     "what of a text longer than --max-len the model sees: head (default: its\n"
     "start), tail (its end) or head+tail (the first quarter of the room from\n"
     "the start, the rest from the end: greeting and signature); remembered\n"
     "in config.json for tessera eval and predict"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Question answering (run_squad's windows and decoding):\n"},
    {"doc-stride", CLI_INT, &ft.doc_stride, 1, "N",
     "context pieces between the starts of a context's windows\n"
     "(default min(128, max-len / 3))"},
    {"max-query-len", CLI_INT, &ft.max_query_len, 1, "N",
     "question pieces kept (default min(64, max-len / 4))"},
    {"max-answer-len", CLI_INT, &ft.max_answer_len, 1, "N",
     "pieces in a predicted answer, at most (default 30)"},
    {"n-best", CLI_INT, &ft.n_best, 1, "N",
     "start / end candidates per window (default 20)"},
    {"relocate-answers", CLI_FLAG, &ft.relocate_answers, 0, NULL,
     "take an answer that is not at its answer_start at its nearest occurrence in\n"
     "the context (as Hugging Face's scripts do); by default such a file is refused"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Training:\n"},
    {"epochs", CLI_INT, &ft.epochs, 1, "N",
     "passes over the training rows (default 3)"},
    {"batch", CLI_INT, &ft.batch, 1, "N",
     "sequences per step (default 32)"},
    {"max-len", CLI_INT, &ft.max_len, 3, "N",
     "tokens per sequence (default min(128, the model's positions) for classify,\n"
     "min(384, the model's positions) for qa)"},
    {"lr", CLI_FLOAT, &ft.lr, 0, "X",
     "peak learning rate (default 1e-4)"},
    {"warmup", CLI_FLOAT, &ft.warmup, 0, "F",
     "fraction of the steps spent warming up (default 0.1)"},
    {"weight-decay", CLI_FLOAT, &ft.weight_decay, 0, "X",
     "AdamW decoupled weight decay (default 0.01; not on biases and LayerNorm\n"
     "weights)"},
    {"max-grad-norm", CLI_FLOAT, &ft.max_grad_norm, 0, "X",
     "clip the gradients to global norm X (Hugging Face's Trainer uses 1.0;\n"
     "default 0: no clipping)"},
    {"optimizer", CLI_STR, &ft.optimizer, 0, "NAME",
     "adamw (default), lamb (layer-wise trust ratio; biases and LayerNorm\n"
     "weights without weight decay or trust ratio) or sgd (--momentum M,\n"
     "default 0); recorded in checkpoints"},
    {"momentum", CLI_FLOAT, &ft.momentum, 0, "M",
     "sgd's momentum (default 0)"},
    {"accumulation", CLI_INT, &ft.accumulation, 1, "N",
     "micro-batches of --batch per optimizer step (default 1: the effective\n"
     "batch is batch x N; an epoch's last step may hold fewer)"},
    {"device", CLI_STR, &ft_device, 0, "DEV",
     "one device (opencl:0, a plugin's): one program on it (default cpu)"},
    {"devices", CLI_STR, &ft.devices, 0, "LIST",
     "several devices (cpu:0,cpu:1,...): a pipeline over them, stages in 1F1B\n"
     "order (one device: as --device)"},
    {"stages", CLI_STR, &ft.stages, 0, "SPEC|auto",
     "which device runs what (\"0:emb 1:0-1 2:2-3,heads\", as tessera pretrain\n"
     "--help explains; default auto: balanced by measured time)"},
    {"micro-batches", CLI_INT, &ft.micro_batches, 1, "M",
     "micro-batches per step (a pipeline: default 2 x devices; = --accumulation)"},
    {"device-iterations", CLI_INT, &ft.device_iterations, 1, "K",
     "optimizer steps per call into the compiled program (default 1; the\n"
     "rows of an epoch that do not fill a call are left out of it;\n"
     "--max-steps, --save-every, --stop-after: multiples of K)"},
    {"max-steps", CLI_INT, &ft.max_steps, 0, "N",
     "stop after N steps (default: epochs x batches)"},
    {"max-minutes", CLI_FLOAT, &ft.max_minutes, 0, "M",
     "stop training after M minutes (then test and save; 0: no limit)"},
    {"save-every", CLI_INT, &ft.save_every, 0, "N",
     "also write --out every N steps (default: only at the end), and a\n"
     "full-state checkpoint OUT/checkpoints/step-NNNNNN (parameters, AdamW\n"
     "state, step); --keep N keeps the newest N (default 3)"},
    {"keep", CLI_INT, &ft.keep, 1, "N",
     "checkpoints kept (default 3)"},
    {"resume", CLI_STR, &ft.resume, 0, "DIR",
     "continue from the newest valid checkpoint of an earlier run's --out DIR\n"
     "(--out defaults to DIR); the same options and data are required, and\n"
     "the result is the same, bit for bit, as one run (without --max-minutes)"},
    {"stop-after", CLI_INT, &ft.stop_after, 1, "N",
     "end this invocation after step N, with a checkpoint there"},
    {"seed", CLI_INT, &ft.seed, 0, "N",
     "shuffling, split and dropout (default 42)"},
    {"split-seed", CLI_INT, &ft.split_seed, 0, "N",
     "the train/test split's alone (default: --seed), so that models trained\n"
     "with other seeds hold out the same rows (an ensemble for tessera eval)"},
    {"threads", CLI_INT, &ft.threads, 0, "N",
     "CPU threads (default: all)"},
    {"bf16", CLI_FLAG, &ft.bf16, 0, NULL,
     "bf16 matrix products (mixed precision; master weights stay f32)"},
    {"fp16", CLI_FLAG, &ft.fp16, 0, NULL,
     "fp16 matrix products with dynamic loss scaling (master weights f32)"},
    CLI_PROFILE_OPT(&ft.profile),
    {"recompute", CLI_FLAG, &ft.recompute, 0, NULL,
     "recompute each layer's forward in the backward (less memory, same result)"},
    {"test-every", CLI_INT, &ft.test_every, 0, "N",
     "classify: score the test rows after every N-th epoch and the last (default\n"
     "1; 0: after the last only)"},
    {"random-init", CLI_FLAG, &ft.random_init, 0, NULL,
     "classify: DIR's shape and vocabulary, but not its weights: every parameter\n"
     "drawn fresh from --seed (BERT's initialisation), as a baseline of what\n"
     "pretraining buys; --max-len may then exceed DIR's positions (the new\n"
     "model gets --max-len of them)"},
    {"deterministic", CLI_FLAG, &ft.deterministic, 0, NULL,
     "bit-identical runs for a seed: pins --threads (default all CPUs) and\n"
     "refuses --max-minutes"},
    CLI_DEVICE_OPTS,
    CLI_LOAD_OPTS,
    CLI_REPLICA_OPTS,
};

int cli_finetune(int argc, char **argv) {
    ts_finetune_run_defaults(&ft); /* the flags' defaults */
    ft_task = ft_device = NULL;
    cli_optset os;
    int rc = cli_opts_parse(&os, "finetune", USAGE, OPTS, (int)(sizeof OPTS / sizeof *OPTS), argc, argv);
    if (rc == 1) {
        char probe[4300];
        if (!ft.out_dir && ft.resume && cli_path_join(probe, sizeof probe, ft.resume, "trainer.json") &&
            access(probe, F_OK) != 0)
            ft.out_dir = ft.resume; /* an earlier run's directory */
        const char *missing = !ft.model_dir ? "--model DIR" : !ft.train_file ? "--train FILE" : !ft.out_dir ? "--out DIR" : NULL;
        if (missing) {
            fprintf(stderr, "tessera finetune: %s is required\n(tessera finetune --help shows the usage)\n", missing);
            rc = 2;
        } else if (cli_pipe_device("finetune", ft_device, &ft.devices)) {
            rc = 2;
        } else if (ft.test_split >= 1) {
            fprintf(stderr, "tessera finetune: --test-split %g leaves nothing to train on (use a fraction below 1)\n",
                    ft.test_split);
            rc = 2;
        } else if (ft.warmup > 1) {
            fprintf(stderr, "tessera finetune: --warmup %g is a fraction of the steps, at most 1\n", ft.warmup);
            rc = 2;
        } else if (ft.truncate && cli_trunc_parse("finetune", ft.truncate) < 0) {
            rc = 2;
        } else if (ft.bf16 && ft.fp16) {
            fprintf(stderr, "tessera finetune: --bf16 and --fp16 exclude each other\n");
            rc = 2;
        } else if (ft.profile && ft.devices && !cli_pipe_one_device(ft.devices, ft.stages)) {
            fprintf(stderr, "tessera finetune: --profile is not supported with --devices (a pipelined program is not "
                            "profiled); profile the step on one device, without --devices\n");
            rc = 2;
        } else if (cli_optimizer_parse("finetune", ft.optimizer) < 0 ||
                   cli_pipe_micro("finetune", ft.devices, ft.stages, ft.micro_batches, &ft.accumulation, ft.fp16)) {
            rc = 2;
        } else if (ft.momentum >= 1 || (ft.momentum > 0 && strcmp(ft.optimizer, "sgd"))) {
            fprintf(stderr, "tessera finetune: --momentum %g: SGD's momentum, below 1 (with --optimizer sgd)\n",
                    ft.momentum);
            rc = 2;
        } else if (ft.device_iterations > 64 || ft.accumulation > 4096) {
            fprintf(stderr, "tessera finetune: --device-iterations %d is above 64 or --accumulation %d above 4096\n",
                    ft.device_iterations, ft.accumulation);
            rc = 2;
        } else if (ft.device_iterations > 1 && (ft.max_steps % ft.device_iterations || ft.save_every % ft.device_iterations ||
                                               ft.stop_after % ft.device_iterations)) {
            fprintf(stderr, "tessera finetune: --max-steps %d, --save-every %d and --stop-after %d must be multiples of "
                            "--device-iterations %d (each call into the program runs that many steps)\n",
                    ft.max_steps, ft.save_every, ft.stop_after, ft.device_iterations);
            rc = 2;
        } else if (ft_task && (ft.task = task_kind(ft_task)) < 0) {
            rc = 2;
        } else if (cli_replicas_setup("finetune", &ft.threads)) {
            rc = 2;
        } else if (!ft.deterministic || !(rc = cli_deterministic_setup("finetune", &ft.threads, ft.max_minutes))) {
            rc = run();
        }
        cli_out_finish("finetune", rc);
    }
    cli_opts_free(&os);
    return rc;
}
