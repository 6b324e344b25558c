/*
 * test_cli_train.c — `tessera pretrain`, `finetune`, `eval` and `predict` end to end through the
 * command itself, on a tiny generated corpus, vocabulary and TSV in a temporary directory: each
 * step exits 0 and writes what it should; bad input (a missing flag, a missing file, a TSV row
 * with a missing column, an unknown flag, a bad config) exits non-zero with a clear message on
 * stderr and no crash. predict --data on a labelled file (eval's) classifies its text column
 * alone (TSV, CSV, JSONL; --text-column), and any other file stays one text a line.
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
    rc = tessera(NULL, "predict --model ft --text \"the dog eats\" --text \"a cat runs\" --threads 1");
    CHECK_RAN(rc, 0);
    char *first = strstr(out_text, "the dog eats\n"), *second = strstr(out_text, "a cat runs\n");
    CHECK(first && second && first < second, "--text twice: both, in order: %s", out_text);
}

/* Lines printed (a last line without its newline counts too). */
static int count_lines(const char *s) {
    int n = 0;
    for (const char *p = s; *p; p++) n += *p == '\n' || !p[1];
    return n;
}

/* predict --data on a labelled file (the one eval takes) classifies its text column, not its
 * header and label column: the same lines as predict on the texts alone, one a line (texts.txt,
 * cut from data.tsv here), whether the file is TSV, CSV or JSONL; a .txt file stays one text a
 * line, header or not; a header without the text column is refused naming --text-column. */
static void test_predict_labelled(void) {
    static char tsv[8192], texts[8192], csv[8192], jsonl[16384], want[1 << 16];
    read_into("data.tsv", tsv, sizeof tsv);
    size_t t = 0, c = (size_t)snprintf(csv, sizeof csv, "\"label\",\"text\"\r\n"), j = 0;
    int rows = 0;
    for (char *l = strchr(tsv, '\n') + 1, *nl; *l; l = nl + 1, rows++) { /* after the header: label<TAB>text */
        nl = strchr(l, '\n');
        char *tab = strchr(l, '\t');
        *nl = 0;
        t += (size_t)snprintf(texts + t, sizeof texts - t, "%s\n", tab + 1);
        c += (size_t)snprintf(csv + c, sizeof csv - c, "%.*s,\"%s\"\r\n", (int)(tab - l), l, tab + 1);
        j += (size_t)snprintf(jsonl + j, sizeof jsonl - j, "{\"label\": \"%.*s\", \"text\": \"%s\"}\n",
                              (int)(tab - l), l, tab + 1);
        *nl = '\n';
    }
    write_str("texts.txt", texts);
    write_str("data.csv", csv);
    write_str("data.jsonl", jsonl);
    int rc = tessera(NULL, "predict --model ft --data texts.txt --threads 1");
    CHECK_RAN(rc, 0);
    snprintf(want, sizeof want, "%s", out_text);
    CHECK(rows == 40 && count_lines(want) == 40, "predict on the %d texts: %d lines", rows, count_lines(want));
    const char *files[] = {"data.tsv", "data.csv", "data.jsonl"};
    for (int k = 0; k < 3; k++) {
        rc = tessera(NULL, "predict --model ft --data %s --threads 1", files[k]);
        CHECK_RAN(rc, 0);
        CHECK(!strcmp(out_text, want), "predict --data %s: not the texts' lines:\n%.300s\nwant\n%.300s", files[k],
              out_text, want);
    }
    rc = tessera(NULL, "predict --model ft --data data.tsv --text-column text --label-column label --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(!strcmp(out_text, want), "predict --text-column text: not the texts' lines:\n%.300s", out_text);
    /* GLUE's header names the text "sentence": refused, then read with --text-column */
    write_str("glue.tsv", "sentence\tlabel\nthe cat runs 1 times\tpos\n");
    rc = tessera(NULL, "predict --model ft --data glue.tsv --threads 1");
    CHECK_FAILS(rc, "--text-column");
    CHECK(rc == 2 && strstr(err_text, "glue.tsv"), "exit %d: %s", rc, err_text);
    rc = tessera(NULL, "predict --model ft --data glue.tsv --text-column sentence --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(count_lines(out_text) == 1 && strstr(out_text, "\tthe cat runs 1 times\n"), "--text-column sentence: %s",
          out_text);
    /* one text a line, as before: a .txt file (its first line is a text), a .tsv without a header, stdin */
    write_str("lines.txt", "label\ttext\nthe cat runs\n");
    rc = tessera(NULL, "predict --model ft --data lines.txt --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(count_lines(out_text) == 2 && strstr(out_text, "\tlabel text\n"), "a .txt file's lines: %s", out_text);
    write_str("plain.tsv", texts);
    rc = tessera(NULL, "predict --model ft --data plain.tsv --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(!strcmp(out_text, want), "a .tsv without a header: not one text a line:\n%.300s", out_text);
    rc = tessera(texts, "predict --model ft --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(!strcmp(out_text, want), "stdin: not one text a line:\n%.300s", out_text);
    rc = tessera(texts, "predict --model ft --text-column text --threads 1");
    CHECK_FAILS(rc, "--text-column");
    rc = tessera(NULL, "predict --model ft --data lines.txt --text-column text --threads 1");
    CHECK_FAILS(rc, "one text a line");
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

/* The pieces of the demo's study (scripts/demo.sh): `tessera split` writes finetune's split as
 * files (the same rows, duplicates dropped first, a subset, the training texts as a corpus);
 * pretrain --untie-embeddings gives the MLM decoder a weight of its own, recorded in config.json;
 * finetune --random-init loads no weights; --test-every chooses the epochs that are scored. */
static void test_study_pieces(void) {
    static char tsv[8192], buf[1 << 16];
    /* data.tsv (40 distinct rows) with rows 0-4 repeated: 45 rows, 5 duplicates */
    read_into("data.tsv", tsv, sizeof tsv);
    size_t n = strlen(tsv);
    const char *row = strchr(tsv, '\n') + 1;
    for (int i = 0; i < 5; i++) {
        const char *end = strchr(row, '\n') + 1;
        memcpy(tsv + n, row, (size_t)(end - row));
        n += (size_t)(end - row);
        row = end;
    }
    tsv[n] = 0;
    write_str("dup.tsv", tsv);
    int rc = tessera(NULL, "split --data dup.tsv --out sp --test-split 0.25 --split-seed 3 --subset 7");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "45 rows (5 duplicates dropped)") && strstr(out_text, "train.tsv 30, test.tsv 10"),
          "split: %s", out_text);
    int lines[3] = {0, 0, 0};
    const char *files[3] = {"sp/train.tsv", "sp/test.tsv", "sp/train-7.tsv"};
    static char train[8192], test[8192];
    for (int f = 0; f < 3; f++) {
        read_into(files[f], buf, sizeof buf);
        for (char *p = buf; *p; p++) lines[f] += *p == '\n';
        if (f == 0) memcpy(train, buf, strlen(buf) + 1);
        if (f == 1) memcpy(test, buf, strlen(buf) + 1);
        if (f == 2) CHECK(!strncmp(buf, train, strlen(buf)), "train-7.tsv is not the head of train.tsv");
    }
    CHECK(lines[0] == 31 && lines[1] == 11 && lines[2] == 8, "split files hold %d / %d / %d lines", lines[0],
          lines[1], lines[2]);
    for (char *l = test + strlen("label\ttext\n"); *l; l = strchr(l, '\n') + 1) { /* no test row in train */
        char one[256];
        size_t len = (size_t)(strchr(l, '\n') - l);
        snprintf(one, sizeof one, "\n%.*s\n", (int)len, l);
        CHECK(!strstr(train, one), "held-out row also in train.tsv: %s", one + 1);
    }
    read_into("sp/train.txt", buf, sizeof buf);
    CHECK(strstr(buf, " times\n\n"), "train.txt is not one document per row: %.200s", buf);
    /* finetune on the split files scores the same rows as finetune's own split. pre has 32
     * positions: a random start may read longer sequences (it gets 48), a loaded model not. */
    rc = tessera(NULL, "finetune --model pre --train sp/train.tsv --eval sp/test.tsv --out fa --max-steps 2 --batch 4 "
                       "--max-len 48 --threads 1 --epochs 3 --test-every 0");
    CHECK_FAILS(rc, "--max-len 48 exceeds the model's 32 positions");
    rc = tessera(NULL, "finetune --model pre --train sp/train.tsv --eval sp/test.tsv --out fa --max-steps 2 --batch 4 "
                       "--max-len 48 --threads 1 --random-init --epochs 3 --test-every 0");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "--random-init: pre's shape and vocabulary, no weights loaded"), "random-init: %s", out_text);
    read_into("fa/config.json", buf, sizeof buf);
    CHECK(strstr(buf, "\"max_position_embeddings\":\t48"), "random-init --max-len 48: %s", buf);
    /* the classifier's parameters are all new: "N of N parameters new" */
    const char *p = strstr(out_text, "hidden, ");
    int a = -1, b = -2;
    if (p) sscanf(p, "hidden, %d of %d parameters new", &a, &b);
    CHECK(a == b, "random-init: %d of %d parameters new: %s", a, b, out_text);
    /* --test-every: 3 epochs of 30 rows in batches of 10 */
    rc = tessera(NULL, "finetune --model pre --train sp/train.tsv --eval sp/test.tsv --out fb --batch 10 --max-len 32 "
                       "--threads 1 --epochs 3 --test-every 0");
    CHECK_RAN(rc, 0);
    int scored = 0;
    for (const char *q = out_text; (q = strstr(q, ", test accuracy ")); q++) scored++;
    CHECK(scored == 1 && strstr(out_text, "epoch 3: step 9, train loss"), "--test-every 0 scored %d epochs: %s",
          scored, out_text);
    rc = tessera(NULL, "finetune --model pre --train sp/train.tsv --dev sp/test.tsv --out fb --batch 10 --max-len 32 "
                       "--threads 1 --epochs 3 --test-every 2");
    CHECK_RAN(rc, 0);
    CHECK(strstr(err_text, "--dev is now --eval"), "the old spelling's notice: %s", err_text);
    scored = 0;
    for (const char *q = out_text; (q = strstr(q, ", test accuracy ")); q++) scored++;
    const char *e1 = strstr(out_text, "epoch 1: step 3, train loss"), *e1end = e1 ? strchr(e1, '\n') : NULL;
    const char *t1 = e1 ? strstr(e1, "test accuracy") : NULL;
    CHECK(scored == 2 && e1 && e1end && (!t1 || t1 > e1end), "--test-every 2 scored %d epochs (want 2 and 3): %s",
          scored, out_text);
    /* an untied decoder: its own tensor, remembered in config.json, and the model fine-tunes */
    rc = tessera(NULL, "pretrain --config config.json --vocab vocab.txt --corpus sp/train.txt --out preu --max-steps 2 "
                       "--untie-embeddings");
    CHECK_RAN(rc, 0);
    read_into("preu/config.json", buf, sizeof buf);
    CHECK(strstr(buf, "\"tie_word_embeddings\":\tfalse"), "preu/config.json: %s", buf);
    read_into("pre/config.json", buf, sizeof buf);
    CHECK(!strstr(buf, "tie_word_embeddings"), "a tied model's config.json names tie_word_embeddings: %s", buf);
    FILE *f = NULL;
    char path[256];
    snprintf(path, sizeof path, "%s/preu/model.safetensors", dir);
    size_t got = (f = fopen(path, "rb")) ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    int found = 0;
    for (size_t i = 0; i + 30 <= got && !found; i++) found = !memcmp(buf + i, "cls.predictions.decoder.weight", 30);
    CHECK(found, "no decoder tensor in preu/model.safetensors");
    rc = tessera(NULL, "finetune --model preu --train sp/train.tsv --out fu --max-steps 2 --batch 4 --max-len 32 "
                       "--threads 1");
    CHECK_RAN(rc, 0);
    /* bad input */
    rc = tessera(NULL, "split --data dup.tsv --out sp2 --subset 31 --test-split 0.25 --seed 3"); /* the old spelling */
    CHECK_FAILS(rc, "--subset 31 is more than the 30 training rows");
    CHECK(strstr(err_text, "--seed is now --split-seed"), "split --seed: no notice: %s", err_text);
    rc = tessera(NULL, "split --data dup.tsv --out sp2 --test-split 1.5");
    CHECK_FAILS(rc, "--test-split 1.5 is not a fraction");
    rc = tessera(NULL, "split --out sp2");
    CHECK_FAILS(rc, "--data FILE is required");
    rc = tessera(NULL, "split --data no_such.tsv --out sp2");
    CHECK_FAILS(rc, "no_such.tsv");
    write_str("qa.json", "{\"data\": []}");
    rc = tessera(NULL, "finetune --model pre --task qa --train qa.json --out fq --random-init");
    CHECK_FAILS(rc, "--random-init is for --task classify");
}

/* Defaults that fit the model: a flag the user did not give takes the model's value, and only a
 * value the user gave is refused. pre has 32 positions: finetune without --max-len trains at 32
 * (its default 128 would not fit), eval and predict read the fine-tuned model's length. */
static void test_model_defaults(void) {
    int rc = tessera(NULL, "finetune --model pre --train data.tsv --out ft32 --max-steps 1 --batch 4 --threads 1");
    CHECK_RAN(rc, 0);
    char cfg[8192];
    read_into("ft32/config.json", cfg, sizeof cfg);
    CHECK(strstr(cfg, "\"tessera_max_len\":\t32"), "finetune without --max-len did not take the model's 32: %s", cfg);
    rc = tessera(NULL, "eval --model ft32 --data data.tsv --threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera("the cat runs\n", "predict --model ft32 --threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out ft64 --max-steps 1 --batch 4 --max-len 64");
    CHECK_FAILS(rc, "--max-len 64 exceeds the model's 32 positions");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_train");
    if (rc) return rc;
    make_data();
    RUN(test_pipeline);
    RUN(test_predict_labelled);
    RUN(test_model_defaults);
    RUN(test_cased);
    RUN(test_study_pieces);
    RUN(test_bad_input);
    cli_cleanup("test_cli_train");
    return tu_finish("test_cli_train");
}
