/*
 * split.c — `tessera split`: the train / test split `tessera finetune --test-split F --split-seed N`
 * makes of a labelled file, written as files (ts_text_split_write) so that every step of a study
 * reads the same rows: a pretraining corpus of the training texts only, a small labelled subset
 * for a low-resource comparison, a baseline on the same test rows.
 */
#include "cli.h"
#include "options.h"

static const char *USAGE =
    "  Writes the split tessera finetune --test-split F --split-seed N makes of FILE (.tsv, .csv\n"
    "  with a header, or .jsonl; duplicates dropped, then shuffled) as DIR/train.tsv and\n"
    "  DIR/test.tsv (label<TAB>text, in the shuffled order), and the training texts as a\n"
    "  pretraining corpus DIR/train.txt (a document per text, a sentence a line), so that a\n"
    "  pretraining, a vocabulary or a baseline uses the training rows only. A tab or line break\n"
    "  inside a text becomes a space; train.txt has a sentence a line (a line ends after '.', '!'\n"
    "  or '?' followed by a space, and at \" | \").\n";

int cli_split(int argc, char **argv) {
    ts_text_split_opts o = {.struct_size = sizeof o, .text_column = "text", .label_column = "label", .test_split = 0.2};
    ts_text_split_report r = {.struct_size = sizeof r};
    int seed = 42;
    cli_strlist subsets = {0};
    const cli_opt opts[] = {
        {"data", CLI_STR, &o.data_file, 1, "FILE", "the labelled file"},
        {"out", CLI_STR, &o.out_dir, 1, "DIR", "where the files go (made if missing)"},
        {"test-split", CLI_FLOAT, &o.test_split, 0, "F", "fraction held out (default 0.2)"},
        {"split-seed", CLI_INT, &seed, 0, "N", "the split seed (default 42; finetune's --split-seed)", "seed"},
        {"subset", CLI_LIST, &subsets, 0, "N",
         "also write DIR/train-N.tsv, the first N training rows (a random N);\n"
         "several N, or the flag given more than once, write several"},
        {"text-column", CLI_STR, &o.text_column, 0, "NAME", "column / key of the text (default text)"},
        {"label-column", CLI_STR, &o.label_column, 0, "NAME", "column / key of the label (default label)"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "split", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done;
    o.split_seed = (uint64_t)seed, o.subsets = subsets.v, o.nsubsets = subsets.n;
    ts_status st = ts_text_split_files(&o, &r);
    rc = st ? cli_fail("split", "", st == TS_ERR_ARG ? 2 : 1) : 0;
    if (!st)
        printf("tessera split: %s: %lld rows (%lld duplicates dropped) -> %s/train.tsv %lld, test.tsv %lld "
               "(split seed %d), train.txt\n", o.data_file, (long long)r.nrows, (long long)r.nduplicates, o.out_dir,
               (long long)r.ntrain, (long long)r.ntest, seed);
done:
    cli_opts_free(&os);
    return rc;
}
