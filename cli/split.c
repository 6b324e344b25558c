/*
 * split.c — `tessera split`: write the train / test split that `tessera finetune --test-split F
 * --split-seed N` makes of a labelled file (deduplicated, then shuffled and cut) as files, so
 * that the other steps of a study read the same rows: a pretraining corpus of the training texts
 * only, a small labelled subset for a low-resource comparison, a baseline on the same test rows.
 *
 *   tessera split --data FILE --out DIR [--test-split 0.2] [--seed 42] [--subset N]...
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
#include "tessera.h"

static const char *USAGE =
    "usage: tessera split --data FILE --out DIR [options]\n"
    "  Writes the split tessera finetune --test-split F --split-seed N makes of FILE (.tsv, .csv\n"
    "  with a header, or .jsonl; duplicates dropped, then shuffled) as DIR/train.tsv and\n"
    "  DIR/test.tsv (label<TAB>text, in the shuffled order), and the training texts as a\n"
    "  pretraining corpus DIR/train.txt (a document per text, a sentence a line), so that a\n"
    "  pretraining, a vocabulary or a baseline uses the training rows only.\n"
    "  --test-split F       fraction held out (default 0.2)\n"
    "  --seed N             the split seed (default 42; finetune's --split-seed)\n"
    "  --subset N           also write DIR/train-N.tsv, the first N training rows (a random N);\n"
    "                       may be given more than once\n"
    "  --text-column NAME   column / key of the text (default text)\n"
    "  --label-column NAME  column / key of the label (default label)\n";

enum { MAX_SUBSETS = 8 };

int cli_split(int argc, char **argv) {
    const char *data = NULL, *out = NULL, *text_col = "text", *label_col = "label";
    double test_split = 0.2;
    int seed = 42, bad = 0, nsub = 0, sub[MAX_SUBSETS];
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        } else if ((v = cli_value(argc, argv, &i, "--data", "split", &bad))) {
            data = v;
        } else if ((v = cli_value(argc, argv, &i, "--out", "split", &bad))) {
            out = v;
        } else if ((v = cli_value(argc, argv, &i, "--text-column", "split", &bad))) {
            text_col = v;
        } else if ((v = cli_value(argc, argv, &i, "--label-column", "split", &bad))) {
            label_col = v;
        } else if ((v = cli_value(argc, argv, &i, "--test-split", "split", &bad))) {
            char *end;
            errno = 0;
            test_split = strtod(v, &end);
            if (errno || end == v || *end || !(test_split > 0 && test_split < 1))
                fprintf(stderr, "tessera split: --test-split '%s' is not a fraction in (0, 1)\n", v), bad = 1;
        } else if ((v = cli_value(argc, argv, &i, "--seed", "split", &bad))) {
            char *end;
            errno = 0;
            long s = strtol(v, &end, 10);
            if (errno || end == v || *end || s < 0 || s > INT_MAX)
                fprintf(stderr, "tessera split: --seed '%s' is not a non-negative integer\n", v), bad = 1;
            seed = (int)s;
        } else if ((v = cli_value(argc, argv, &i, "--subset", "split", &bad))) {
            int n = cli_positive(v, "--subset", "split");
            if (n < 0) bad = 1;
            else if (nsub == MAX_SUBSETS) fprintf(stderr, "tessera split: more than %d --subset\n", MAX_SUBSETS), bad = 1;
            else sub[nsub++] = n;
        } else if (!bad) {
            fprintf(stderr, "tessera split: unknown %s '%s'\n", a[0] == '-' ? "flag" : "argument", a);
            bad = 1;
        }
    }
    if (!bad && !data) fprintf(stderr, "tessera split: --data FILE is required\n"), bad = 1;
    if (!bad && !out) fprintf(stderr, "tessera split: --out DIR is required\n"), bad = 1;
    if (bad) {
        fputs("(tessera split --help shows the usage)\n", stderr);
        return 2;
    }
    ts_text_opts to = {.text_column = text_col, .label_column = label_col};
    ts_text_dataset *all = ts_text_dataset_load(data, &to), *train = NULL, *test = NULL;
    if (!all) return cli_fail("split", "--data ", 2);
    int64_t ndup = 0;
    if (ts_text_dataset_split(all, test_split, (uint64_t)seed, &train, &test, &ndup) != TS_OK) {
        fprintf(stderr, "tessera split: %s\n", ts_last_error());
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
        fprintf(stderr, "tessera split: %s\n", ts_last_error());
        rc = 1;
    }
    ts_status err = rc ? TS_OK : ts_text_split_write(train, test, out, sub, nsub);
    if (err == TS_ERR_NOMEM) fprintf(stderr, "tessera split: out of memory\n"), rc = 1;
    else if (err) fprintf(stderr, "tessera split: cannot write %s\n", ts_last_error()), rc = 1;
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
