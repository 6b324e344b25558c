/*
 * test_bow_run.c — ts_bow_run (what `tessera bow` does) without the command: a small spam / ham
 * set learned to 100% with the report filled (rows, labels, batches, the majority baseline), and
 * each refusal's stage (failed_at) and message: a missing vocabulary, a training file with one
 * label, a test file with no rows; and the struct_size checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera_apps.h"
#include "test_util.h"

static void write_str(const char *path, const char *s) {
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(s, f) >= 0, "writing %s", path);
    if (f) fclose(f);
}

static void make_data(void) {
    write_str("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n.\nhello\nteam\nlunch\nfree\noffer\n");
    char tsv[4096];
    size_t n = (size_t)snprintf(tsv, sizeof tsv, "label\ttext\n");
    for (int i = 0; i < 16; i++)
        n += (size_t)snprintf(tsv + n, sizeof tsv - n, "%s\n", i % 2 ? "spam\tfree offer hello." : "ham\thello team lunch.");
    write_str("train.tsv", tsv);
    write_str("test.tsv", "label\ttext\nham\tteam lunch.\nspam\tfree offer.\nham\thello lunch.\n");
    write_str("one.tsv", "label\ttext\nham\thello\nham\tteam\n");
    write_str("empty.tsv", "label\ttext\n");
}

static void test_run(void) {
    make_data();
    ts_bow_run_opts o = {.struct_size = sizeof o, .vocab = "vocab.txt", .train_file = "train.tsv",
                         .test_file = "test.tsv", .epochs = 30, .batch = 8, .threads = 1, .seed = 1, .lr = 0.1};
    ts_bow_run_report r = {.struct_size = sizeof r};
    CHECK_OK(ts_bow_run(&o, &r));
    CHECK(r.failed_at == TS_BOW_RUN_AT_NONE && r.ntrain == 16 && r.ntest == 3 && r.nbatch == 2 && r.nfeatures == 11,
          "report: at %d train %lld test %lld batches %lld features %d", r.failed_at, (long long)r.ntrain,
          (long long)r.ntest, (long long)r.nbatch, r.nfeatures);
    CHECK(r.nlabels == 2 && !strcmp(r.labels[0], "ham") && !strcmp(r.labels[1], "spam"), "labels");
    CHECK(r.hit == 3, "accuracy: %lld of 3", (long long)r.hit);
    CHECK(r.majority == 0 && r.baseline > 0.66 && r.baseline < 0.67, "baseline %g of %d", r.baseline, r.majority);
    CHECK(r.loss >= 0 && r.seconds >= 0, "loss and time");
    ts_bow_run_report_free(&r);
}

static void test_refusals(void) {
    make_data();
    struct {
        const char *vocab, *train, *test, *msg;
        int at;
    } cases[] = {
        {"missing.txt", "train.tsv", "test.tsv", "missing.txt", TS_BOW_RUN_AT_VOCAB},
        {"vocab.txt", "missing.tsv", "test.tsv", "missing.tsv", TS_BOW_RUN_AT_TRAIN},
        {"vocab.txt", "one.tsv", "test.tsv", "one.tsv: 1 distinct label in column 'label'; a classifier needs two",
         TS_BOW_RUN_AT_LABELS},
        {"vocab.txt", "train.tsv", "empty.tsv", "empty.tsv has no rows", TS_BOW_RUN_AT_TEST_EMPTY},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ts_bow_run_opts o = {.struct_size = sizeof o, .vocab = cases[c].vocab, .train_file = cases[c].train,
                             .test_file = cases[c].test, .epochs = 1, .lr = 0.1};
        ts_bow_run_report r = {.struct_size = sizeof r};
        CHECK(ts_bow_run(&o, &r) != TS_OK, "case %zu ran", c);
        CHECK(r.failed_at == cases[c].at, "case %zu: failed_at %d, not %d", c, r.failed_at, cases[c].at);
        CHECK(strstr(ts_last_error(), cases[c].msg), "case %zu: %s", c, ts_last_error());
        ts_bow_run_report_free(&r);
    }
    ts_bow_run_opts o = {.struct_size = 3, .vocab = "vocab.txt", .train_file = "train.tsv", .test_file = "test.tsv"};
    ts_bow_run_report r = {.struct_size = sizeof r};
    CHECK_STATUS(ts_bow_run(&o, &r), TS_ERR_ARG);
    o.struct_size = sizeof o, r.struct_size = 3;
    CHECK_STATUS(ts_bow_run(&o, &r), TS_ERR_ARG);
    CHECK_STATUS(ts_bow_run(&o, NULL), TS_ERR_ARG);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    char dir[] = "/tmp/ts_bow_run_XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0) return fprintf(stderr, "cannot make a temporary directory\n"), 1;
    RUN(test_run);
    RUN(test_refusals);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) { /* left behind: harmless */ }
    return tu_finish("test_bow_run");
}
