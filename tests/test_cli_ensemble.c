/*
 * test_cli_ensemble.c — ensembles of classifiers through the command, and the split they are
 * scored on:
 *  - `finetune --split-seed` holds out the same rows whatever --seed trains with, and
 *    `eval --test-split F --split-seed N` scores exactly those rows (its count equals finetune's);
 *  - `predict --model A B` prints, for each text, the label of the largest mean of A's and B's
 *    class probabilities and that mean, checked against A's and B's own predictions (the two
 *    members have different vocabularies, so each must encode the text itself);
 *  - `eval --model A B` counts the ensemble's right answers, checked against predict's labels;
 * *  - members with other labels, a missing member, a pretrained body as a member, --test-split 1:
 *    errors naming them.
 */
#include "test_util.h"
#include "cli_util.h"

#define ROWS 48

static void make_data(void) {
    static char tsv[8192], texts[8192], other[8192], flip[8192];
    write_corpus("corpus.txt");
    /* "pos" rows are about cats and dogs, "neg" rows about fish, horses and mice; the numbers
     * make every row distinct. texts.txt holds the texts alone, for predict. */
    size_t t = (size_t)snprintf(tsv, sizeof tsv, "label\ttext\n"), x = 0;
    size_t o = (size_t)snprintf(other, sizeof other, "label\ttext\n");
    size_t f = (size_t)snprintf(flip, sizeof flip, "label\ttext\n");
    for (int i = 0; i < ROWS; i++) {
        char text[64];
        snprintf(text, sizeof text, "the %s %s %d times", i % 2 ? WORDS_A[i % 4 / 2] : WORDS_A[3 + i % 3],
                 WORDS_B[i % 6], i);
        t += (size_t)snprintf(tsv + t, sizeof tsv - t, "%s\t%s\n", i % 2 ? "pos" : "neg", text);
        x += (size_t)snprintf(texts + x, sizeof texts - x, "%s\n", text);
        o += (size_t)snprintf(other + o, sizeof other - o, "%s\t%s\n", i % 3 ? "x" : "y", text);
        f += (size_t)snprintf(flip + f, sizeof flip - f, "%s\t%s\n", i % 2 && !strstr(text, "dog") ? "pos" : "neg", text);
    }
    write_str("data.tsv", tsv);
    write_str("texts.txt", texts);
    write_str("other.tsv", other);
    write_str("flip.tsv", flip); /* the dogs are "neg" here: a member trained on it disagrees */
}

/* The labels and probabilities of a predict output: n lines "label<TAB>p<TAB>prefix". Returns
 * the number of lines read (at most cap). */
static int parse_predictions(const char *s, int *pos, double *p, int cap) {
    int n = 0;
    for (const char *l = s; *l && n < cap; n++) {
        const char *tab = strchr(l, '\t'), *nl = strchr(l, '\n');
        if (!tab || !nl) break;
        pos[n] = !strncmp(l, "pos\t", 4);
        p[n] = atof(tab + 1);
        l = nl + 1;
    }
    return n;
}

static const char *FT = "finetune --test-split 0.25 --split-seed 7 --epochs 20 --batch 4 --max-len 16 --lr 2e-3 "
                        "--threads 1";

static void test_ensemble(void) {
    /* two pretrained bodies with different vocabularies */
    int rc = tessera(NULL, "vocab --out vocab_a.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "vocab --out vocab_b.txt --size 60 corpus.txt");
    CHECK_RAN(rc, 0);
    const char *pre = "--layers 1 --hidden 32 --heads 2 --intermediate 64 --max-len 32 --batch 4 --max-steps 2 "
                      "--threads 1";
    rc = tessera(NULL, "pretrain --vocab vocab_a.txt --corpus corpus.txt --out pre_a %s", pre);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain --vocab vocab_b.txt --corpus corpus.txt --out pre_b %s --seed 5", pre);
    CHECK_RAN(rc, 0);

    /* the same split (--split-seed 7) under two training seeds; B learns that dogs are "neg" */
    rc = tessera(NULL, "%s --train data.tsv --model pre_a --out ft_a --seed 1", FT);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "36 for training, 12 for testing"), "finetune A's split: %s", out_text);
    double acc_a = printed_number("finetune: test accuracy "); /* the summary: after the last epoch */
    rc = tessera(NULL, "%s --train flip.tsv --model pre_b --out ft_b --seed 2", FT);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "36 for training, 12 for testing"), "finetune B's split: %s", out_text);

    /* eval on the held-out rows: finetune's last test accuracy, row for row */
    rc = tessera(NULL, "eval --model ft_a --data data.tsv --test-split 0.25 --split-seed 7 --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "of 12)") && fabs(printed_number("accuracy ") - acc_a) < 1e-9,
          "eval of the held-out rows: %s (finetune said %.2f%%)", out_text, acc_a);
    /* B is wrong exactly on the dogs of data.tsv, A on those of flip.tsv: scored on the same
     * held-out rows both get 1 - dogs / 12; another split seed holds out other rows */
    rc = tessera(NULL, "eval --model ft_b --data data.tsv --test-split 0.25 --split-seed 7 --threads 1");
    CHECK_RAN(rc, 0);
    double acc_b7 = printed_number("accuracy ");
    rc = tessera(NULL, "eval --model ft_a --data flip.tsv --test-split 0.25 --seed 7 --threads 1"); /* the old spelling */
    CHECK_RAN(rc, 0);
    CHECK(strstr(err_text, "--seed is now --split-seed"), "the old spelling's notice: %s", err_text);
    CHECK(acc_b7 > 0 && acc_b7 < 100 && fabs(printed_number("accuracy ") - acc_b7) < 1e-9,
          "A on flip.tsv and B on data.tsv, held-out rows of seed 7: %.2f%% vs %s", acc_b7, out_text);
    int other_rows = 0;
    for (int seed = 8; seed < 16 && !other_rows; seed++) {
        rc = tessera(NULL, "eval --model ft_b --data data.tsv --test-split 0.25 --split-seed %d --threads 1", seed);
        CHECK_RAN(rc, 0);
        other_rows = fabs(printed_number("accuracy ") - acc_b7) > 1e-9;
    }
    CHECK(other_rows, "eval --split-seed 8..15 scored the same as --split-seed 7 every time");

    /* predict: the ensemble's label and probability from the members' own predictions */
    int pa[ROWS], pb[ROWS], pe[ROWS];
    double qa[ROWS], qb[ROWS], qe[ROWS];
    rc = tessera(NULL, "predict --model ft_a --data texts.txt --threads 1");
    CHECK_RAN(rc, 0);
    int na = parse_predictions(out_text, pa, qa, ROWS);
    rc = tessera(NULL, "predict --model ft_b --data texts.txt --threads 1");
    CHECK_RAN(rc, 0);
    int nb = parse_predictions(out_text, pb, qb, ROWS);
    rc = tessera(NULL, "predict --model ft_a ft_b --data texts.txt --threads 1 --batch 5");
    CHECK_RAN(rc, 0);
    int ne = parse_predictions(out_text, pe, qe, ROWS);
    CHECK(na == ROWS && nb == ROWS && ne == ROWS, "predict lines: %d, %d, ensemble %d of %d", na, nb, ne, ROWS);
    int bad = 0, right = 0, disagree = 0;
    for (int i = 0; i < ROWS && ne == ROWS && na == ROWS && nb == ROWS; i++) {
        double pos = ((pa[i] ? qa[i] : 1 - qa[i]) + (pb[i] ? qb[i] : 1 - qb[i])) / 2; /* mean P(pos) */
        int want = pos > 0.5;
        double wantp = want ? pos : 1 - pos;
        if (fabs(pos - 0.5) > 2e-4 && (pe[i] != want || fabs(qe[i] - wantp) > 2e-4)) bad++;
        right += pe[i] == (i % 2);
        disagree += pa[i] != pb[i];
    }
    CHECK(!bad, "%d ensemble predictions are not the members' mean", bad);
    CHECK(disagree > 0, "the two members agree everywhere; the test would not see a wrong mean");

    /* eval: the ensemble's accuracy on every row, as predict's labels give it */
    rc = tessera(NULL, "eval --model ft_a ft_b --data data.tsv --threads 1");
    CHECK_RAN(rc, 0);
    char want[64];
    snprintf(want, sizeof want, "(%d of %d)", right, ROWS);
    CHECK(strstr(out_text, "ensemble of 2 models") && strstr(out_text, want), "eval ensemble: %s, want %s", out_text,
          want);
    rc = tessera(NULL, "eval --model ft_a ft_b ft_a --data data.tsv --test-split 0.25 --split-seed 7 --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "ensemble of 3 models") && strstr(out_text, "of 12)"), "eval ensemble, split: %s",
          out_text);
}

static void test_bad_input(void) {
    int rc = tessera(NULL, "finetune --model pre_a --train other.tsv --out ft_other --max-steps 2 --batch 4 "
                           "--max-len 16 --threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "eval --model ft_a ft_other --data data.tsv --threads 1");
    CHECK_FAILS(rc, "not the same kind of classifier");
    rc = tessera(NULL, "predict --model ft_a ft_other --text \"the cat runs\" --threads 1");
    CHECK_FAILS(rc, "--model ft_other is not the same kind of classifier");
    rc = tessera(NULL, "predict --model ft_a no_such_model --text \"the cat runs\" --threads 1");
    CHECK_FAILS(rc, "no_such_model");
    rc = tessera(NULL, "eval --model ft_a no_such_model --data data.tsv --threads 1");
    CHECK_FAILS(rc, "no_such_model");
    rc = tessera(NULL, "eval --model ft_a pre_a --data data.tsv --threads 1");
    CHECK_FAILS(rc, "is not a fine-tuned model");
    rc = tessera(NULL, "eval --model ft_a --data data.tsv --test-split 1 --threads 1");
    CHECK_FAILS(rc, "--test-split 1");
    rc = tessera(NULL, "finetune --model pre_a --train data.tsv --out x --split-seed -3");
    CHECK_FAILS(rc, "--split-seed");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_ensemble");
    if (rc) return rc;
    make_data();
    RUN(test_ensemble);
    RUN(test_bad_input);
    cli_cleanup("test_cli_ensemble");
    return tu_finish("test_cli_ensemble");
}
