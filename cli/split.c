/*
 * split.c — `tessera split`: write the train / test split that `tessera finetune --test-split F
 * --split-seed N` makes of a labelled file (deduplicated, then shuffled and cut) as files, so
 * that the other steps of a study read the same rows: a pretraining corpus of the training texts
 * only, a small labelled subset for a low-resource comparison, a baseline on the same test rows.
 *
 *   tessera split --data FILE --out DIR [--test-split 0.2] [--split-seed 42] [--subset N...]
 *
 * Writes, in DIR:
 *   train.tsv, test.tsv  label<TAB>text, the rows in their shuffled order (so the first N rows
 *                        of train.tsv are a random N of them); a tab or line break inside a text
 *                        becomes a space
 *   train.txt            the training texts as a `tessera pretrain` corpus: one document per
 *                        text, one sentence a line (a line ends after '.', '!' or '?' followed by
 *                        a space, and at " | ", the mark where tools/spam_to_tsv.js joined parts)
 *   train-N.tsv          for each --subset N: the first N rows of train.tsv
 */
#include "cli.h"
#include "options.h"
#include "tessera_apps.h"

static const char *USAGE =
    "usage: tessera split --data FILE --out DIR [options]\n"
    "  Writes the split tessera finetune --test-split F --split-seed N makes of FILE (.tsv, .csv\n"
    "  with a header, or .jsonl; duplicates dropped, then shuffled) as DIR/train.tsv and\n"
    "  DIR/test.tsv (label<TAB>text, in the shuffled order), and the training texts as a\n"
    "  pretraining corpus DIR/train.txt (a document per text, a sentence a line), so that a\n"
    "  pretraining, a vocabulary or a baseline uses the training rows only.\n";

/* Split `data` and write the files in `out` (the flags checked): the exit code, its error printed. */
static int split_write(const char *data, const char *out, const char *text_col, const char *label_col,
                       double test_split, int seed, const int *sub, int nsub) {
    ts_text_opts to = {.text_column = text_col, .label_column = label_col};
    ts_text_dataset *all = ts_text_dataset_load(data, &to), *train = NULL, *test = NULL;
    if (!all) return cli_fail("split", "--data ", 2);
    int64_t ndup = 0;
    if (ts_text_dataset_split(all, test_split, (uint64_t)seed, &train, &test, &ndup) != TS_OK) {
        fprintf(stderr, "tessera split: %s\n", cli_error());
        ts_text_dataset_free(all);
        return 1;
    }
    int64_t ntrain = ts_text_dataset_size(train), ntest = ts_text_dataset_size(test);
    int rc = 0;
    for (int k = 0; k < nsub && !rc; k++)
        if (sub[k] > ntrain) {
            fprintf(stderr, "tessera split: --subset %d is more than the %lld training rows\n", sub[k],
                    (long long)ntrain);
            rc = 2;
        }
    if (!rc && ts_make_dirs(out) != TS_OK) {
        fprintf(stderr, "tessera split: %s\n", cli_error());
        rc = 1;
    }
    ts_status err = rc ? TS_OK : ts_text_split_write(train, test, out, sub, nsub);
    if (err == TS_ERR_NOMEM) fprintf(stderr, "tessera split: out of memory\n"), rc = 1;
    else if (err) fprintf(stderr, "tessera split: cannot write %s\n", cli_error()), rc = 1;
    if (!rc)
        printf("tessera split: %s: %lld rows (%lld duplicates dropped) -> %s/train.tsv %lld, test.tsv %lld "
               "(split seed %d), train.txt\n",
               data, (long long)(ntrain + ntest + ndup), (long long)ndup, out, (long long)ntrain, (long long)ntest,
               seed);
    ts_text_dataset_free(train);
    ts_text_dataset_free(test);
    ts_text_dataset_free(all);
    return rc;
}

enum { MAX_SUBSETS = 8 };

int cli_split(int argc, char **argv) {
    const char *data = NULL, *out = NULL, *text_col = "text", *label_col = "label";
    double test_split = 0.2;
    int seed = 42, nsub = 0, sub[MAX_SUBSETS];
    cli_strlist subsets = {0};
    const cli_opt opts[] = {
        {"data", CLI_STR, &data, 0, "FILE", "the labelled file (required)"},
        {"out", CLI_STR, &out, 0, "DIR", "where the files go (required; made if missing)"},
        {"test-split", CLI_FLOAT, &test_split, 0, "F", "fraction held out (default 0.2)"},
        {"split-seed", CLI_INT, &seed, 0, "N", "the split seed (default 42; finetune's --split-seed)", "seed"},
        {"subset", CLI_LIST, &subsets, 0, "N",
         "also write DIR/train-N.tsv, the first N training rows (a random N);\n"
         "several N, or the flag given more than once, write several"},
        {"text-column", CLI_STR, &text_col, 0, "NAME", "column / key of the text (default text)"},
        {"label-column", CLI_STR, &label_col, 0, "NAME", "column / key of the label (default label)"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "split", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done;
    rc = 2;
    if (!(test_split > 0 && test_split < 1)) {
        fprintf(stderr, "tessera split: --test-split '%g' is not a fraction in (0, 1)\n", test_split);
        goto usage;
    }
    if (subsets.n > MAX_SUBSETS) {
        fprintf(stderr, "tessera split: more than %d --subset\n", MAX_SUBSETS);
        goto usage;
    }
    for (int k = 0; k < subsets.n; k++) {
        const char *v = subsets.v[k];
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || end == v || *end || n <= 0 || n > INT_MAX) {
            fprintf(stderr, "tessera split: --subset wants a positive integer, not '%s'\n", v);
            goto usage;
        }
        sub[nsub++] = (int)n;
    }
    if (!data) {
        fprintf(stderr, "tessera split: --data FILE is required\n");
        goto usage;
    }
    if (!out) {
        fprintf(stderr, "tessera split: --out DIR is required\n");
        goto usage;
    }
    rc = split_write(data, out, text_col, label_col, test_split, seed, sub, nsub);
    goto done;
usage:
    fputs("(tessera split --help shows the usage)\n", stderr);
done:
    cli_opts_free(&os);
    return rc;
}
