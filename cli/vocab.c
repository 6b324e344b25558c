/*
 * vocab.c — `tessera vocab`: learn a WordPiece vocabulary from text files (ts_vocab_build) and
 * write it as a vocab.txt that `tessera tokenize --vocab` and ts_tokenizer_load read.
 *
 *   tessera vocab --out vocab.txt --size N [--cased] FILE...
 */
#include "cli.h"
#include "tessera.h"

static const char *USAGE =
    "usage: tessera vocab --out vocab.txt --size N [--cased] FILE...\n"
    "  Learns a WordPiece vocabulary of at most N tokens from the text FILEs (UTF-8, read line by\n"
    "  line): [PAD] [UNK] [CLS] [SEP] [MASK], every character seen, then merged pieces.\n"
    "  --cased  keep case and accents (default: uncased, lower-cased and accents stripped)\n";

int cli_vocab(int argc, char **argv) {
    const char *out = NULL;
    int size = 0, cased = 0, bad = 0, nfiles = 0;
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    if (!files) {
        fprintf(stderr, "tessera vocab: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            free(files);
            return 0;
        } else if ((v = cli_value(argc, argv, &i, "--out", "vocab", &bad))) {
            out = v;
        } else if ((v = cli_value(argc, argv, &i, "--size", "vocab", &bad))) {
            if ((size = cli_positive(v, "--size", "vocab")) < 0) bad = 1;
        } else if (bad) {
            break;
        } else if (!strcmp(a, "--cased")) {
            cased = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tessera vocab: unknown flag '%s'\n", a);
            bad = 1;
        } else {
            files[nfiles++] = a;
        }
    }
    if (!bad && !out) fprintf(stderr, "tessera vocab: --out FILE is required\n"), bad = 1;
    if (!bad && !size) fprintf(stderr, "tessera vocab: --size N is required\n"), bad = 1;
    if (!bad && size < 5) fprintf(stderr, "tessera vocab: --size %d is less than the 5 special tokens\n", size), bad = 1;
    if (!bad && !nfiles) fprintf(stderr, "tessera vocab: no corpus FILE given\n"), bad = 1;
    if (bad) {
        fputs("(tessera vocab --help shows the usage)\n", stderr);
        free(files);
        return 2;
    }
    ts_status st = ts_vocab_build(files, nfiles, size, !cased, out);
    free(files);
    if (st != TS_OK) {
        fprintf(stderr, "tessera vocab: %s\n", ts_last_error());
        return st == TS_ERR_NOMEM ? 1 : 2;
    }
    ts_tokenizer *tok = ts_tokenizer_load(out, !cased);
    if (!tok) {
        fprintf(stderr, "tessera vocab: wrote %s but cannot read it back: %s\n", out, ts_last_error());
        return 1;
    }
    printf("tessera vocab: wrote %s (%d tokens, %s)\n", out, ts_tokenizer_vocab_size(tok),
           cased ? "cased" : "uncased");
    ts_tokenizer_free(tok);
    return 0;
}
