/*
 * finetune.c — `tessera finetune`: a pretrained model directory trained for a task (classify or
 * qa): ts_finetune_run's flags.
 */
#include <unistd.h>

#include "cli.h"
#include "train_common.h"

static const char *USAGE = "  Fine-tunes the model in DIR (from tessera pretrain) for a task:\n";

/* The options of this run (one command per process): the library's, and --task; their table. */
static ts_finetune_run_opts ft;
static const char *ft_task;
static const cli_opt OPTS[] = {
    {"model", CLI_STR, &ft.model_dir, 1, "DIR", "the pretrained model directory (tessera pretrain's --out)"},
    {"train", CLI_STR, &ft.train_file, 1, "FILE", "the training data (its kind: --task)"},
    {"out", CLI_STR, &ft.out_dir, 0, "DIR", "the fine-tuned model directory to write"},
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
    {"text-column", CLI_STR, &ft.text_column, 0, "NAME", "column / key of the text (default text)"},
    {"text-b-column", CLI_STR, &ft.text_b_column, 0, "NAME",
     "column / key of a second text: a text-pair classifier, rows encoded\n"
     "[CLS] text [SEP] text_b [SEP] (token types 0, then 1); remembered in\n"
     "config.json for tessera eval and predict"},
    {"label-column", CLI_STR, &ft.label_column, 0, "NAME", "column / key of the label (default label)"},
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
    {"max-query-len", CLI_INT, &ft.max_query_len, 1, "N", "question pieces kept (default min(64, max-len / 4))"},
    {"max-answer-len", CLI_INT, &ft.max_answer_len, 1, "N", "pieces in a predicted answer, at most (default 30)"},
    {"n-best", CLI_INT, &ft.n_best, 1, "N", "start / end candidates per window (default 20)"},
    {"relocate-answers", CLI_FLAG, &ft.relocate_answers, 0, NULL,
     "take an answer that is not at its answer_start at its nearest occurrence in\n"
     "the context (as Hugging Face's scripts do); by default such a file is refused"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Training:\n"},
    {"epochs", CLI_INT, &ft.epochs, 1, "N", "passes over the training rows (default 3)"},
    {"batch", CLI_INT, &ft.batch, 1, "N", "sequences per step (default 32)"},
    {"max-len", CLI_INT, &ft.max_len, 3, "N",
     "tokens per sequence (default min(128, the model's positions) for classify,\n"
     "min(384, the model's positions) for qa)"},
    {"lr", CLI_FLOAT, &ft.lr, 0, "X", "peak learning rate (default 1e-4)"},
    {"warmup", CLI_FLOAT, &ft.warmup, 0, "F", "fraction of the steps spent warming up (default 0.1)"},
    {"max-steps", CLI_INT, &ft.max_steps, 0, "N", "stop after N steps (default: epochs x batches)"},
    {"seed", CLI_INT, &ft.seed, 0, "N", "shuffling, split and dropout (default 42)"},
    {"split-seed", CLI_INT, &ft.split_seed, 0, "N",
     "the train/test split's alone (default: --seed), so that models trained\n"
     "with other seeds hold out the same rows (an ensemble for tessera eval)"},
    {"test-every", CLI_INT, &ft.test_every, 0, "N",
     "classify: score the test rows after every N-th epoch and the last (default\n"
     "1; 0: after the last only)"},
    {"random-init", CLI_FLAG, &ft.random_init, 0, NULL,
     "classify: DIR's shape and vocabulary, but not its weights: every parameter\n"
     "drawn fresh from --seed (BERT's initialisation), as a baseline of what\n"
     "pretraining buys; --max-len may then exceed DIR's positions (the new\n"
     "model gets --max-len of them)"},
    CLI_TRAIN_OPTS(ft),
    CLI_DEVICE_OPTS,
    CLI_LOAD_OPTS,
    CLI_REPLICA_OPTS,
};

int cli_finetune(int argc, char **argv) {
    ts_finetune_run_defaults(&ft); /* the flags' defaults */
    cli_optset os;
    int rc = cli_opts_parse(&os, "finetune", USAGE, OPTS, (int)(sizeof OPTS / sizeof *OPTS), argc, argv);
    if (rc == 1) {
        int task = ft_task ? cli_task_parse("finetune", ft_task) : 0;
        ft.task = !ft_task ? TS_FINETUNE_AUTO : task == CLI_TASK_QA ? TS_FINETUNE_QA : TS_FINETUNE_CLASSIFY;
        rc = task < 0 ? 2 : cli_train_start("finetune", &ft.out_dir, ft.resume, &ft.devices, &ft.threads);
        if (!rc) {
            ft.name = "tessera finetune";
            ft.out = cli_write_out, ft.out_ctx = stdout, ft.tty = isatty(fileno(stdout));
            ft.err = cli_write_err, ft.err_ctx = stderr;
            ft.memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0);
            ft.load_flags = cli_load_flags(0);
            ft.comm = cli_rep.comm, ft.shard = cli_rep.shard_optimizer;
            ts_status st = ts_finetune_run(&ft);
            if (st == TS_ERR_NOMEM) cli_train_suggest("finetune");
            rc = st == TS_OK ? 0 : st == TS_ERR_ARG || st == TS_ERR_NOT_FOUND ? 2 : 1;
        }
        cli_out_finish("finetune", rc);
    }
    cli_opts_free(&os);
    return rc;
}
