/*
 * vocab.c — `tessera vocab`: learn a WordPiece vocabulary from text files (ts_vocab_build) and
 * write it as a vocab.txt that `tessera tokenize --vocab` and ts_tokenizer_load read.
 */
#include "cli.h"
#include "options.h"

static const char *USAGE =
    "  Learns a WordPiece vocabulary of at most N tokens from the text FILEs (UTF-8, read line by\n"
    "  line): [PAD] [UNK] [CLS] [SEP] [MASK], every character seen, then merged pieces.\n";

int cli_vocab(int argc, char **argv) {
    const char *out = NULL;
    int size = 30522, cased = 0; /* BERT-Base's vocabulary size */
    cli_strlist files = {0};
    const cli_opt opts[] = {
        {"out", CLI_STR, &out, 1, "FILE", "the vocab.txt written"},
        {"size", CLI_INT, &size, 1, "N", "tokens in the vocabulary, at most (5 or more; default 30522, BERT's)"},
        {"cased", CLI_FLAG, &cased, 0, NULL, "keep case and accents (default: uncased, lower-cased and accents\n"
                                            "stripped)"},
        {"files", CLI_ARGS, &files, 1, "FILE...", "the corpus: text files, UTF-8, read line by line"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "vocab", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    static const cli_term TERMS[] = {{"vocab_size", "--size"}};
    cli_terms_use(opts, (int)(sizeof opts / sizeof *opts), TERMS, 1);
    if (rc != 1) goto done;
    rc = 0;
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
