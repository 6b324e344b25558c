/*
 * pretrain.c — `tessera pretrain`: a BERT pretrained from scratch on text files (masked LM + next
 * sentence prediction, a held-out set scored, checkpoints to resume from): ts_pretrain_job's flags.
 */
#include <unistd.h>

#include "cli.h"
#include "train_common.h"

static const char *USAGE = "  Pretrains a BERT on text files: one sentence a line, a blank line between documents.\n";

/* The options of this run (one command per process) and their table. */
static ts_pretrain_job_opts pt;
static cli_strlist pt_corpus;
static const cli_opt OPTS[] = {
    {"vocab", CLI_STR, &pt.vocab, 1, "FILE", "the WordPiece vocabulary (tessera vocab's --out)"},
    {"corpus", CLI_LIST, &pt_corpus, 1, "FILE", "text files: one sentence a line, a blank line between documents"},
    {"out", CLI_STR, &pt.out_dir, 0, "DIR", "the model directory to write"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Model:\n"},
    {"layers", CLI_INT, &pt.layers, 1, "N", "encoder layers (default 4)"},
    {"hidden", CLI_INT, &pt.hidden, 1, "N", "hidden size (default 256)"},
    {"heads", CLI_INT, &pt.heads, 1, "N", "attention heads (default 4)"},
    {"intermediate", CLI_INT, &pt.intermediate, 1, "N", "feed-forward size (default 1024)"},
    {"max-len", CLI_INT, &pt.max_len, 8, "N", "tokens per sequence (default 128)"},
    {"dropout", CLI_FLOAT, &pt.dropout, 0, "P", "dropout probability (default 0.1)"},
    {"untie-embeddings", CLI_FLAG, &pt.untie, 0, NULL,
     "the MLM decoder gets a weight of its own instead of the word\n"
     "embeddings', written as tie_word_embeddings false: a short pretraining then\n"
     "leaves the input embeddings to the encoder's gradient alone"},
    {"cased", CLI_FLAG, &pt.cased, 0, NULL,
     "keep case and accents, for a vocabulary from tessera vocab --cased\n"
     "(default uncased; remembered as do_lower_case in config.json)"},
    {NULL, CLI_TEXT, NULL, 0, NULL, "  Training:\n"},
    {"batch", CLI_INT, &pt.batch, 1, "N", "sequences per micro-batch (default 32)"},
    {"max-steps", CLI_INT, &pt.max_steps, 1, "N", "optimizer steps (default 1000)"},
    {"lr", CLI_FLOAT, &pt.lr, 0, "X", "peak learning rate (default 5e-4; linear warm-up, then linear decay)"},
    {"warmup", CLI_FLOAT, &pt.warmup, 0, "F", "fraction of the run spent warming up (default 0.05)"},
    {"seed", CLI_INT, &pt.seed, 0, "N", "initialisation, masking and dropout (default 0)"},
    {"wwm", CLI_FLAG, &pt.wwm, 0, NULL, "whole-word masking"},
    {"mask-prob", CLI_FLOAT, &pt.mask_prob, 0, "P", "the share of positions masked (default 0.15)"},
    {"max-predictions", CLI_INT, &pt.max_predictions, 0, "P",
     "masked positions per sequence, at most; the MLM head runs on those\n"
     "only, as Google's run_pretraining (default ceil(max-len x mask-prob),\n"
     "20 for 128; 0: no cap, the head on every position)"},
    {"eval-every", CLI_INT, &pt.eval_every, 1, "K", "score the held-out batches every K steps (default 100)"},
    {"eval-batches", CLI_INT, &pt.eval_batches, 0, "N", "held-out batches (default 4)"},
    CLI_TRAIN_OPTS(pt),
    CLI_REPLICA_OPTS,
    CLI_DEVICE_OPTS,
};

int cli_pretrain(int argc, char **argv) {
    ts_pretrain_job_defaults(&pt);
    cli_optset os;
    int rc = cli_opts_parse(&os, "pretrain", USAGE, OPTS, (int)(sizeof OPTS / sizeof *OPTS), argc, argv);
    if (rc == 1) {
        pt.corpus = pt_corpus.v, pt.ncorpus = pt_corpus.n;
        rc = cli_train_start("pretrain", &pt.out_dir, pt.resume, &pt.devices, &pt.threads);
        if (!rc) {
            pt.name = "tessera pretrain";
            pt.out = cli_write_out, pt.out_ctx = stdout, pt.tty = isatty(fileno(stdout));
            pt.err = cli_write_err, pt.err_ctx = stderr;
            pt.memory_limit = (size_t)(cli_dev.memory_gib * 1073741824.0);
            pt.comm = cli_rep.comm, pt.shard = cli_rep.shard_optimizer;
            ts_status st = ts_pretrain_job(&pt);
            if (st == TS_ERR_NOMEM) cli_train_suggest("pretrain");
            rc = st == TS_OK ? 0 : st == TS_ERR_ARG ? 2 : 1;
        }
        cli_out_finish("pretrain", rc);
    }
    cli_opts_free(&os);
    return rc;
}
