/*
 * tokenize.c — `tessera tokenize`: the WordPiece ids of each line of stdin, one output line per
 * input line. Each line is encoded by the library (ts_encode_line); this file reads and prints.
 */
#include <stdint.h>

#include "cli.h"
#include "options.h"

static const char *USAGE =
    "  Prints the WordPiece ids of each input line, with [CLS] and [SEP], one line per input line\n"
    "  (read from stdin); with --out, writes them as one padded batch that `tessera run --inputs` reads.\n";

typedef struct opts {
    const char *vocab, *out;
    int cased, max_len, pad, pair, tokens;
} opts;

/* The checks across flags after the parse: 1 to go on, 2 after a usage error. */
static int check(const opts *o) {
    int bad = 0;
    if (o->pad && !o->max_len) fprintf(stderr, "tessera tokenize: --pad needs --max-len N\n"), bad = 1;
    if (!bad && o->max_len && o->max_len < (o->pair ? 3 : 2)) {
        fprintf(stderr, "tessera tokenize: --max-len %d cannot hold [CLS] and [SEP]%s\n", o->max_len,
                o->pair ? " twice" : "");
        bad = 1;
    }
    if (o->out && o->tokens) fprintf(stderr, "tessera tokenize: --tokens prints; --out writes ids\n"), bad = 1;
    if (bad) fputs("(tessera tokenize --help shows the usage)\n", stderr);
    return bad ? 2 : 1;
}

static int print_ids(const ts_tokenizer *tok, const int32_t *ids, int n, int as_tokens) {
    for (int i = 0; i < n; i++) {
        if (i) putchar(' ');
        if (as_tokens) fputs(ts_id_to_token(tok, ids[i]), stdout);
        else printf("%d", ids[i]);
    }
    return putchar('\n') != EOF;
}

int cli_tokenize(int argc, char **argv) {
    opts o = {0};
    const cli_opt table[] = {
        {"vocab", CLI_STR, &o.vocab, 1, "FILE", "the WordPiece vocabulary (vocab.txt)"},
        {"cased", CLI_FLAG, &o.cased, 0, NULL, "keep case and accents (default: uncased)"},
        {"max-len", CLI_INT, &o.max_len, 1, "N", "truncate to N tokens, specials included (a pair longest-first)"},
        {"pad", CLI_FLAG, &o.pad, 0, NULL, "pad every line to N with [PAD] (needs --max-len)"},
        {"pair", CLI_FLAG, &o.pair, 0, NULL, "each line is TEXT_A<TAB>TEXT_B"},
        {"tokens", CLI_FLAG, &o.tokens, 0, NULL, "print wordpieces instead of ids"},
        {"out", CLI_STR, &o.out, 0, "FILE", "write input_ids, token_type_ids, attention_mask [lines, N] (safetensors)"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "tokenize", USAGE, table, (int)(sizeof table / sizeof *table), argc, argv);
    if (rc == 1) rc = check(&o);
    ts_tokenizer *tok = rc == 1 ? ts_tokenizer_load(o.vocab, !o.cased) : NULL;
    cli_opts_free(&os); /* the vocabulary is read: nothing else points into the config */
    if (rc != 1) return rc;
    if (!tok) return cli_fail("tokenize", "", 2);
    int b = 0, t = 0;
    if (o.out && (rc = ts_encode_lines_save(tok, NULL, o.pair, o.max_len, o.out, &b, &t) != TS_OK))
        fprintf(stderr, "tessera tokenize: %s\n", cli_error());
    else if (o.out)
        printf("tessera tokenize: wrote %s: input_ids, token_type_ids, attention_mask [%d, %d] i32\n", o.out, b, t);
    if (o.out) return ts_tokenizer_free(tok), rc;
    int cap = 0;
    int32_t *ids = NULL;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t len;
    long lineno = 0;
    rc = 0;
    while ((len = getline(&line, &lcap, stdin)) >= 0) {
        lineno++;
        if (len && line[len - 1] == '\n') line[--len] = 0;
        int n = 0;
        if (ts_encode_line(tok, line, (size_t)len, o.pair, o.max_len, o.pad, &ids, &cap, &n) != TS_OK) {
            fprintf(stderr, "tessera tokenize: stdin line %ld: %s\n", lineno, cli_error());
            rc = 1;
            break;
        }
        if (!print_ids(tok, ids, n, o.tokens)) break;
    }
    if (rc == 0 && ferror(stdin)) {
        fprintf(stderr, "tessera tokenize: reading stdin: %s\n", strerror(errno));
        rc = 1;
    }
    if (rc == 0 && (ferror(stdout) || fflush(stdout) != 0)) {
        fprintf(stderr, "tessera tokenize: writing stdout: %s\n", strerror(errno));
        rc = 1;
    }
    free(line);
    free(ids);
    ts_tokenizer_free(tok);
    return rc;
}
