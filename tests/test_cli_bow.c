/*
 * test_cli_bow.c — `tessera bow`, the bag-of-words logistic-regression baseline, through the
 * command. A hand-written vocabulary of whole words and generated mails whose label is decided
 * by word presence: a mail that says "offer" or "free" is spam, any other ham. Trained on 40
 * rows, the classifier must get all 20 held-out rows right; missing or unknown flags,
 * a missing file, --epochs 0 and a test label the training file lacks fail with exit code 2 and
 * a message naming what is wrong.
 */
#include "test_util.h"
#include "cli_util.h"

static const char *FILLER[] = {"hello", "meeting", "today", "project", "the", "report", "lunch", "team",
                               "call", "tomorrow", "please", "review", "notes", "budget", "schedule", "thanks"};
static const char *SPAMMY[] = {"offer", "free"};

/* n rows "label<TAB>text" under a header: 4-9 filler words, and in every other row (spam) one of
 * the spam words at a random place; each ends with a full stop. */
static void write_mails(const char *name, int n, uint64_t seed) {
    static char tsv[16384];
    tu_rng r = tu_rng_seed(seed);
    size_t len = (size_t)snprintf(tsv, sizeof tsv, "label\ttext\n");
    for (int i = 0; i < n; i++) {
        int spam = i % 2, words = 4 + (int)(tu_next(&r) % 6), at = (int)(tu_next(&r) % (uint64_t)words);
        len += (size_t)snprintf(tsv + len, sizeof tsv - len, "%s\t", spam ? "spam" : "ham");
        for (int w = 0; w < words; w++) {
            const char *word = spam && w == at ? SPAMMY[tu_next(&r) % 2] : FILLER[tu_next(&r) % 16];
            len += (size_t)snprintf(tsv + len, sizeof tsv - len, "%s%s", w ? " " : "", word);
        }
        len += (size_t)snprintf(tsv + len, sizeof tsv - len, ".\n");
    }
    write_str(name, tsv);
}

static void make_data(void) {
    static char vocab[4096];
    size_t n = (size_t)snprintf(vocab, sizeof vocab, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n.\n");
    for (int i = 0; i < 16; i++) n += (size_t)snprintf(vocab + n, sizeof vocab - n, "%s\n", FILLER[i]);
    for (int i = 0; i < 2; i++) n += (size_t)snprintf(vocab + n, sizeof vocab - n, "%s\n", SPAMMY[i]);
    write_str("vocab.txt", vocab);
    write_mails("train.tsv", 40, 1);
    write_mails("test.tsv", 20, 2);
    write_str("other.tsv", "label\ttext\nham\thello team\neggs\tfree lunch today\n");
}

static void test_bow(void) {
    /* 250 steps: the default 20 epochs of 2 batches leave AdamW, which moves every weight alike at
     * first, too little time to tell the two telling words from the filler */
    int rc = tessera(NULL, "bow --vocab vocab.txt --train train.tsv --eval test.tsv --threads 1 --epochs 50 --batch 8");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "tessera bow: 40 training rows, 2 labels (ham, spam), 24 features, 50 epochs of 5 batches"),
          "summary line: %s", out_text);
    double acc = printed_number("test accuracy ");
    CHECK(acc == 100, "held-out accuracy %.2f%% (want 100): %s", acc, out_text);
    CHECK(strstr(out_text, "majority baseline 50.00% (ham)"), "baseline: %s", out_text);
    printf("  %s", out_text);
    /* a partial last batch (40 rows in batches of 16) and options read */
    rc = tessera(NULL, "bow --vocab vocab.txt --train train.tsv --eval test.tsv --threads 1 --batch 16 --epochs 30 "
                       "--lr 0.1 --weight-decay 0.01 --seed 7 --max-tokens 3");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "30 epochs of 3 batches"), "--batch 16 --epochs 30: %s", out_text);
}

static void test_bad_input(void) {
    int rc = tessera(NULL, "bow --vocab vocab.txt --train train.tsv");
    CHECK(rc == 2 && strstr(err_text, "--eval FILE is required"), "exit %d: %s", rc, err_text);
    rc = tessera(NULL, "bow --vocab vocab.txt --train train.tsv --eval test.tsv --nosuch 1");
    CHECK(rc == 2 && strstr(err_text, "unknown flag '--nosuch'"), "exit %d: %s", rc, err_text);
    /* the old spelling of --eval still works for a release, with a notice */
    rc = tessera(NULL, "bow --vocab vocab.txt --train train.tsv --test test.tsv --threads 1 --epochs 1");
    CHECK(rc == 0 && strstr(err_text, "--test is now --eval"), "exit %d: %s", rc, err_text);
    rc = tessera(NULL, "bow --vocab vocab.txt --train missing.tsv --eval test.tsv");
    CHECK(rc == 2 && strstr(err_text, "missing.tsv"), "exit %d: %s", rc, err_text);
    rc = tessera(NULL, "bow --vocab vocab.txt --train train.tsv --eval test.tsv --epochs 0");
    CHECK(rc == 2 && strstr(err_text, "--epochs"), "exit %d: %s", rc, err_text);
    rc = tessera(NULL, "bow --vocab vocab.txt --train train.tsv --eval other.tsv");
    CHECK(rc == 2 && strstr(err_text, "other.tsv") && strstr(err_text, "eggs"), "exit %d: %s", rc, err_text);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_bow");
    if (rc) return rc;
    make_data();
    RUN(test_bow);
    RUN(test_bad_input);
    cli_cleanup("test_cli_bow");
    return tu_finish("test_cli_bow");
}
