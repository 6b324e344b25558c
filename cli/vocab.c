/*
 * vocab.c — `tessera vocab`: learn a WordPiece vocabulary from text files (ts_vocab_build) and
 * write it as a vocab.txt that `tessera tokenize --vocab` and ts_tokenizer_load read.
 *
 *   tessera vocab --out vocab.txt --size N [--cased] FILE...
 */
#include "cli.h"
#include "options.h"
#include "tessera_apps.h"

static const char *USAGE =
    "usage: tessera vocab --out vocab.txt --size N [--cased] FILE...\n"
    "  Learns a WordPiece vocabulary of at most N tokens from the text FILEs (UTF-8, read line by\n"
    "  line): [PAD] [UNK] [CLS] [SEP] [MASK], every character seen, then merged pieces.\n";

int cli_vocab(int argc, char **argv) {
    const char *out = NULL;
    int size = 0, cased = 0;
    cli_strlist files = {0};
    const cli_opt opts[] = {
        {"out", CLI_STR, &out, 0, "FILE", "the vocab.txt written (required)"},
        {"size", CLI_INT, &size, 1, "N", "tokens in the vocabulary, at most (required; 5 or more)"},
        {"cased", CLI_FLAG, &cased, 0, NULL, "keep case and accents (default: uncased, lower-cased and accents\n"
                                            "stripped)"},
        {"files", CLI_ARGS, &files, 0, "FILE...", "the corpus: text files, UTF-8, read line by line"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "vocab", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done;
    rc = 2;
    if (!out) fprintf(stderr, "tessera vocab: --out FILE is required\n");
    else if (!size) fprintf(stderr, "tessera vocab: --size N is required\n");
    else if (size < 5) fprintf(stderr, "tessera vocab: --size %d is less than the 5 special tokens\n", size);
    else if (!files.n) fprintf(stderr, "tessera vocab: no corpus FILE given\n");
    else rc = 0;
    if (rc) {
        fputs("(tessera vocab --help shows the usage)\n", stderr);
        goto done;
    }
    ts_status st = ts_vocab_build(files.v, files.n, size, !cased, out);
    if (st != TS_OK) {
        fprintf(stderr, "tessera vocab: %s\n", cli_error());
        rc = st == TS_ERR_NOMEM ? 1 : 2;
        goto done;
    }
    ts_tokenizer *tok = ts_tokenizer_load(out, !cased);
    if (!tok) {
        fprintf(stderr, "tessera vocab: wrote %s but cannot read it back: %s\n", out, cli_error());
        rc = 1;
        goto done;
    }
    printf("tessera vocab: wrote %s (%d tokens, %s)\n", out, ts_tokenizer_vocab_size(tok),
           cased ? "cased" : "uncased");
    ts_tokenizer_free(tok);
done:
    cli_opts_free(&os);
    return rc;
}
