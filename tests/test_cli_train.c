/*
 * test_cli_train.c — `tessera pretrain`, `finetune`, `eval` and `predict` end to end through the
 * command itself, on a tiny generated corpus, vocabulary and TSV in a temporary directory: each
 * step exits 0 and writes what it should; bad input (a missing flag, a missing file, a TSV row
 * with a missing column, an unknown flag, a bad config) exits non-zero with a clear message on
 * stderr and no crash.
 *
 * The command's path comes from TS_CLI (set by CMake to the built `tessera`); without it, the
 * test looks for ./tessera (ctest runs tests in the build directory) and skips when it is absent.
 */
#include "test_util.h"
#include "cli_util.h"


static void make_data(void) {
    /* A corpus of 8 documents of 6 sentences, blank lines between documents. */
    write_corpus("corpus.txt");
    /* 40 labelled rows: "pos" rows talk about cats and dogs, "neg" rows about fish and mice. */
    write_labelled("data.tsv");
    write_str("one_line.txt", "the cat runs.\n");
    write_str("empty.txt", "");
    write_str("bad.tsv", "label\ttext\npos\tthe cat runs\nneg\n");
    write_str("config.json", "{\"layers\": 1, \"hidden\": 32, \"heads\": 2, \"intermediate\": 64, \"max-len\": 32,\n"
                             " \"batch\": 4, \"max-steps\": 100, \"eval-every\": 2, \"eval-batches\": 1, \"threads\": 1}\n");
    write_str("badconfig.json", "{\"layers\": 1, \"colour\": \"blue\"}\n");
}

static void test_pipeline(void) {
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
    /* The config gives the model; --max-steps overrides its 100. */
    rc = tessera(NULL, "pretrain --config config.json --vocab vocab.txt --corpus corpus.txt --out pre --max-steps 3");
    CHECK_RAN(rc, 0);
    CHECK(exists("pre/config.json") && exists("pre/model.safetensors") && exists("pre/vocab.txt"),
          "pretrain did not write its three files");
    CHECK(strstr(out_text, "3 steps"), "pretrain did not stop at --max-steps 3: %s", out_text);
    CHECK(exists("pre/metrics.jsonl"), "no metrics.jsonl");

    rc = tessera(NULL, "finetune --model pre --train data.tsv --out ft --max-steps 3 --batch 4 --max-len 32 --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(exists("ft/config.json") && exists("ft/model.safetensors") && exists("ft/vocab.txt"),
          "finetune did not write its three files");
    CHECK(strstr(out_text, "majority baseline"), "finetune printed no baseline: %s", out_text);
    char cfg[8192];
    read_into("ft/config.json", cfg, sizeof cfg);
    CHECK(strstr(cfg, "id2label") && strstr(cfg, "\"pos\"") && strstr(cfg, "BertForSequenceClassification"),
          "ft/config.json lacks the labels: %s", cfg);

    rc = tessera(NULL, "eval --model ft --data data.tsv --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "accuracy"), "eval printed no accuracy: %s", out_text);

    rc = tessera("the cat runs\nthe fish swims\n\nthe mouse sleeps\n", "predict --model ft --threads 1");
    CHECK_RAN(rc, 0);
    int lines = 0, good = 0;
    for (char *p = out_text; *p; p++) {
        if (*p != '\n') continue;
        lines++;
    }
    for (char *l = out_text; *l; l = strchr(l, '\n') + 1) {
        char *t1 = strchr(l, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        good += t1 && t2 && (!strncmp(l, "pos\t", 4) || !strncmp(l, "neg\t", 4)) && atof(t1 + 1) >= 0.5;
        if (!strchr(l, '\n')) break;
    }
    CHECK(lines == 4 && good == 4, "predict: %d lines (%d well-formed) for 4 inputs: %s", lines, good, out_text);
    rc = tessera(NULL, "predict --model ft --text \"the dog eats\" --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "the dog eats\n"), "predict --text: %s", out_text);
}

/* A cased model end to end: vocab --cased, pretrain --cased, finetune on rows whose label is
 * only the case of a word ("the CAT runs 3" pos, "the cat runs 3" neg). The cased classifier
 * learns it; an uncased one sees each pair of rows as one text and can score no better than 50%. */
static void test_cased(void) {
    static char corpus[16384], tsv[8192];
    size_t n = 0, t = (size_t)snprintf(tsv, sizeof tsv, "label\ttext\n");
    for (int d = 0; d < 8; d++) {
        for (int s = 0; s < 6; s++)
            n += (size_t)snprintf(corpus + n, sizeof corpus - n, "The %s %s and the %s %s.\n", WORDS_A[(d + s) % 6],
                                  WORDS_B[(d * s) % 6], WORDS_A[(s + 3) % 6], WORDS_B[(d + 1) % 6]);
        n += (size_t)snprintf(corpus + n, sizeof corpus - n, "THE CAT, THE DOG, THE BIRD AND THE FISH.\n\n");
    }
    write_str("cased_corpus.txt", corpus);
    for (int i = 0; i < 40; i++) {
        const char *w = WORDS_A[(i / 2) % 4];
        char up[16];
        for (int k = 0; k < 15 && (up[k] = (char)(w[k] >= 'a' && w[k] <= 'z' ? w[k] - 32 : w[k])); k++) up[k + 1] = 0;
        t += (size_t)snprintf(tsv + t, sizeof tsv - t, "%s\tthe %s %s %d\n", i % 2 ? "neg" : "pos", i % 2 ? w : up,
                              WORDS_B[(i / 2) % 6], i / 2);
    }
    write_str("case.tsv", tsv);
    const char *how[] = {"--cased", ""};
    for (int c = 0; c < 2; c++) {
        int rc = tessera(NULL, "vocab --out v%d.txt --size 100 %s cased_corpus.txt", c, how[c]);
        CHECK_RAN(rc, 0);
        rc = tessera(NULL, "pretrain --vocab v%d.txt --corpus cased_corpus.txt --out pc%d --layers 1 --hidden 32 "
                           "--heads 2 --intermediate 64 --max-len 32 --batch 4 --max-steps 2 --threads 1 %s", c, c, how[c]);
        CHECK_RAN(rc, 0);
        rc = tessera(NULL, "finetune --model pc%d --train case.tsv --out fc%d --test-split 0 --epochs 25 --batch 8 "
                           "--max-len 16 --lr 2e-3 --threads 1", c, c);
        CHECK_RAN(rc, 0);
        char cfg[8192], path[64];
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, k ? "fc%d/config.json" : "pc%d/config.json", c);
            read_into(path, cfg, sizeof cfg);
            CHECK(strstr(cfg, c ? "\"do_lower_case\":\ttrue" : "\"do_lower_case\":\tfalse"), "%s: %s", path, cfg);
        }
        rc = tessera(NULL, "eval --model fc%d --data case.tsv --threads 1", c);
        CHECK_RAN(rc, 0);
        double acc = printed_number("accuracy ");
        if (c == 0) CHECK(acc >= 90, "cased: accuracy %.2f%% on rows told apart by case (want >= 90): %s", acc, out_text);
        else CHECK(acc >= 0 && acc <= 50, "uncased: accuracy %.2f%% (want <= 50): %s", acc, out_text);
    }
}

static void test_bad_input(void) {
    int rc = tessera(NULL, "pretrain --corpus corpus.txt --out x");
    CHECK_FAILS(rc, "--vocab");
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt no_such_corpus.txt --out x");
    CHECK_FAILS(rc, "no_such_corpus.txt");
    rc = tessera(NULL, "pretrain --vocab no_such_vocab.txt --corpus corpus.txt --out x");
    CHECK_FAILS(rc, "no_such_vocab.txt");
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus one_line.txt --out x --max-steps 1 --threads 1");
    CHECK_FAILS(rc, "one_line.txt) holds no sentence pairs");
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus empty.txt --out x --max-steps 1 --threads 1");
    CHECK_FAILS(rc, "no text");
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out x --bogus 3");
    CHECK_FAILS(rc, "unknown flag '--bogus'");
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out x --layers zero");
    CHECK_FAILS(rc, "--layers");
    rc = tessera(NULL, "pretrain --config badconfig.json --vocab vocab.txt --corpus corpus.txt --out x");
    CHECK_FAILS(rc, "badconfig.json: unknown key \"colour\"");
    rc = tessera(NULL, "finetune --model pre --train bad.tsv --out y --max-steps 1 --threads 1");
    CHECK_FAILS(rc, "bad.tsv:3");
    rc = tessera(NULL, "finetune --model no_such_model --train data.tsv --out y");
    CHECK_FAILS(rc, "no_such_model");
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out y --label-column colour --threads 1");
    CHECK_FAILS(rc, "colour");
    rc = tessera(NULL, "eval --model ft");
    CHECK_FAILS(rc, "--data");
    rc = tessera(NULL, "eval --model pre --data data.tsv");
    CHECK_FAILS(rc, "is not a fine-tuned model");
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out x --max-grad-norm -1");
    CHECK_FAILS(rc, "--max-grad-norm wants a non-negative number, not '-1'");
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out y --max-grad-norm nan");
    CHECK_FAILS(rc, "--max-grad-norm wants a non-negative number, not 'nan'");
    rc = tessera(NULL, "predict --model ft --frobnicate");
    CHECK_FAILS(rc, "unknown flag '--frobnicate'");
}

int main(void) {
    int rc = cli_setup("ts_cli_train");
    if (rc) return rc;
    make_data();
    RUN(test_pipeline);
    RUN(test_cased);
    RUN(test_bad_input);
    cli_cleanup("test_cli_train");
    return tu_finish("test_cli_train");
}
