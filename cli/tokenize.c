/*
 * tokenize.c — `tessera tokenize`: WordPiece token ids of each line of stdin, one output line
 * per input line, [CLS] ... [SEP] included, ids separated by spaces.
 *
 *   tessera tokenize --vocab vocab.txt [--cased] [--max-len N [--pad]] [--pair] [--tokens] < text
 *
 *   --cased      keep case and accents (default: uncased, as bert-base-uncased)
 *   --max-len N  truncate to N tokens (specials included; pairs longest-first)
 *   --pad        pad to N with [PAD] (needs --max-len)
 *   --pair       each line is "TEXT_A<TAB>TEXT_B": [CLS] A [SEP] B [SEP]
 *   --tokens     print the wordpieces instead of their ids
 */
#include <stdint.h>

#include "cli.h"
#include "tessera.h"

static const char *USAGE =
    "usage: tessera tokenize --vocab vocab.txt [--cased] [--max-len N [--pad]] [--pair] [--tokens] < text\n"
    "  Prints the WordPiece ids of each input line, with [CLS] and [SEP], one line per input line.\n"
    "  --cased      keep case and accents (default: uncased)\n"
    "  --max-len N  truncate to N tokens, specials included (a pair longest-first)\n"
    "  --pad        pad every line to N with [PAD] (needs --max-len)\n"
    "  --pair       each line is TEXT_A<TAB>TEXT_B\n"
    "  --tokens     print wordpieces instead of ids\n";

typedef struct opts {
    const char *vocab;
    int cased, max_len, pad, pair, tokens;
} opts;

static int parse(int argc, char **argv, opts *o) {
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        } else if ((v = cli_value(argc, argv, &i, "--vocab", "tokenize", &bad))) {
            o->vocab = v;
        } else if ((v = cli_value(argc, argv, &i, "--max-len", "tokenize", &bad))) {
            if ((o->max_len = cli_positive(v, "--max-len", "tokenize")) < 0) bad = 1;
        } else if (bad) {
            break;
        } else if (!strcmp(a, "--cased")) {
            o->cased = 1;
        } else if (!strcmp(a, "--pad")) {
            o->pad = 1;
        } else if (!strcmp(a, "--pair")) {
            o->pair = 1;
        } else if (!strcmp(a, "--tokens")) {
            o->tokens = 1;
        } else {
            fprintf(stderr, "tessera tokenize: unknown argument '%s' (the text comes on stdin)\n", a);
            bad = 1;
        }
    }
    if (!bad && !o->vocab) fprintf(stderr, "tessera tokenize: --vocab FILE is required\n"), bad = 1;
    if (!bad && o->pad && !o->max_len) fprintf(stderr, "tessera tokenize: --pad needs --max-len N\n"), bad = 1;
    if (!bad && o->max_len && o->max_len < (o->pair ? 3 : 2)) {
        fprintf(stderr, "tessera tokenize: --max-len %d cannot hold [CLS] and [SEP]%s\n", o->max_len,
                o->pair ? " twice" : "");
        bad = 1;
    }
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

/* Ids of one line into *ids (grown as needed; ts_encode_all without --max-len); returns the
 * count, or -1 on an error (in ts_last_error()). */
static int encode_line(const ts_tokenizer *tok, const opts *o, char *line, int32_t **ids, int *cap) {
    char *text_b = NULL;
    if (o->pair && (text_b = strchr(line, '\t'))) *text_b++ = 0;
    else if (o->pair) text_b = "";
    int n = 0;
    if (!o->max_len) return ts_encode_all(tok, line, text_b, ids, cap, &n) == TS_OK ? n : -1;
    if (o->max_len > *cap) {
        int32_t *g = realloc(*ids, (size_t)o->max_len * sizeof *g);
        if (!g) {
            ts_set_error(TS_ERR_NOMEM, "out of memory");
            return -1;
        }
        *ids = g, *cap = o->max_len;
    }
    if (ts_encode(tok, line, text_b, o->max_len, *ids, NULL, NULL, &n) != TS_OK) return -1;
    return o->pad ? o->max_len : n;
}

int cli_tokenize(int argc, char **argv) {
    opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc != 1) return rc;
    ts_tokenizer *tok = ts_tokenizer_load(o.vocab, !o.cased);
    if (!tok) return cli_fail("tokenize", "", 2);
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
        if (memchr(line, 0, (size_t)len)) { /* NUL bytes: dropped, as the normalizer drops U+0000 */
            ssize_t k = 0;
            for (ssize_t j = 0; j < len; j++)
                if (line[j]) line[k++] = line[j];
            line[len = k] = 0;
        }
        int n = encode_line(tok, &o, line, &ids, &cap);
        if (n < 0) {
            fprintf(stderr, "tessera tokenize: stdin line %ld: %s\n", lineno, ts_last_error());
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
