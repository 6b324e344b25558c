/*
 * bow.c — `tessera bow`: the bag-of-words logistic-regression baseline printed beside fine-tuned
 * BERT models. The model and the run are the library's (ts_bow_run, apps/models/bow.c and
 * apps/train/bow_run.c); the default lr 0.01 was chosen on a SpamAssassin split of seed 1
 * (0.002-0.02 score alike, 0.05 and more overfit the 200-mail subset: 93.7% -> 91.0%).
 */
#include <stdint.h>

#include "cli.h"
#include "train_common.h"

static const char *USAGE =
    "  Trains a bag-of-words logistic regression (features log(1 + count) of each WordPiece token\n"
    "  of the whole text, AdamW) on --train and prints its accuracy on --eval beside the majority\n"
    "  baseline. FILEs are .tsv or .csv with a header, or .jsonl; the labels are --train's distinct\n"
    "  values, sorted, and every --eval label must be one of them.\n";

typedef struct bow_opts {
    const char *vocab, *train, *test, *text_col, *label_col;
    int epochs, batch, seed, threads, cased, max_tokens;
    double lr, weight_decay;
} bow_opts;

/* Train and score (ts_bow_run), and print what it did: the exit code. */
static int run(const bow_opts *o) {
    static const char *const what[] = {"", "--vocab ", "--train ", "", "--eval ", "--eval ", "--train ",
                                       "building the model: ", ""};
    ts_bow_run_opts ro = {.struct_size = sizeof ro, .vocab = o->vocab, .cased = o->cased, .train_file = o->train,
                          .test_file = o->test, .text_column = o->text_col, .label_column = o->label_col,
                          .epochs = o->epochs, .batch = o->batch, .max_tokens = o->max_tokens, .threads = o->threads,
                          .seed = (uint64_t)o->seed, .lr = o->lr, .weight_decay = o->weight_decay};
    ts_bow_run_report r = {.struct_size = sizeof r};
    if (ts_bow_run(&ro, &r) != TS_OK) {
        int at = r.failed_at > 0 && r.failed_at <= TS_BOW_RUN_AT_RUN ? r.failed_at : TS_BOW_RUN_AT_RUN;
        ts_bow_run_report_free(&r);
        return cli_fail("bow", what[at], at >= TS_BOW_RUN_AT_BUILD ? 1 : 2);
    }
    printf("tessera bow: %lld training rows, %d labels (", (long long)r.ntrain, r.nlabels);
    for (int c = 0; c < r.nlabels; c++) printf("%s%s", c ? ", " : "", r.labels[c]);
    printf("), %d features, %d epoch%s of %lld batch%s in %.1f s (last epoch's train loss %.4f)\n", r.nfeatures,
           o->epochs, o->epochs == 1 ? "" : "s", (long long)r.nbatch, r.nbatch == 1 ? "" : "es", r.seconds,
           r.loss / (double)r.ntrain);
    printf("tessera bow: test accuracy %.2f%% (%lld of %lld), majority baseline %.2f%% (%s)\n",
           100.0 * (double)r.hit / (double)r.ntest, (long long)r.hit, (long long)r.ntest, 100 * r.baseline,
           r.labels[r.majority]);
    ts_bow_run_report_free(&r);
    return 0;
}

int cli_bow(int argc, char **argv) {
    bow_opts o = {.text_col = "text", .label_col = "label", .epochs = 20, .batch = 32, .seed = 42,
                  .max_tokens = 1024, .lr = 0.01};
    const cli_opt opts[] = {
        {"vocab", CLI_STR, &o.vocab, 1, "FILE", "the WordPiece vocabulary that tokenizes the texts"},
        {"train", CLI_STR, &o.train, 1, "FILE", "the training rows"},
        {"eval", CLI_STR, &o.test, 1, "FILE", "the held-out rows the accuracy is measured on", "test"},
        {"epochs", CLI_INT, &o.epochs, 1, "N", "passes over the training rows (default 20)"},
        {"batch", CLI_INT, &o.batch, 1, "N", "rows per step (default 32)"},
        {"lr", CLI_FLOAT, &o.lr, 0, "X", "AdamW learning rate, constant (default 0.01)"},
        {"weight-decay", CLI_FLOAT, &o.weight_decay, 0, "X", "AdamW's decoupled weight decay (default 0)"},
        {"seed", CLI_INT, &o.seed, 0, "N", "shuffle seed (default 42)"},
        {"threads", CLI_INT, &o.threads, 0, "N", "CPU threads (default: all)"},
        {"cased", CLI_FLAG, &o.cased, 0, NULL, "keep case and accents when tokenizing (default: uncased)"},
        {"max-tokens", CLI_INT, &o.max_tokens, 1, "N", "distinct tokens kept per text, its first N (default 1024)"},
        {"text-column", CLI_STR, &o.text_col, 0, "NAME", "column / key of the text (default text)"},
        {"label-column", CLI_STR, &o.label_col, 0, "NAME", "column / key of the label (default label)"},
    };
    cli_optset os;
    int rc = cli_opts_parse(&os, "bow", USAGE, opts, (int)(sizeof opts / sizeof *opts), argc, argv);
    if (rc != 1) goto done;
    if (!(o.lr > 0)) fprintf(stderr, "tessera bow: --lr %g: the learning rate must be positive\n", o.lr), rc = 2;
    else rc = run(&o);
done:
    cli_opts_free(&os);
    return rc;
}
