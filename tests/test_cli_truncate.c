/*
 * test_cli_truncate.c — `tessera finetune --truncate` through the command. Every text is a long
 * run of neutral sentences, and only its last words ("it is happy" / "it is sad") say its label,
 * far past --max-len. Cut at the end (head, the default) a classifier sees filler alone and
 * scores near chance on held-out texts; with tail or head+tail it sees the ending and learns the
 * task. The model directory remembers the cut ("tessera_truncation" in config.json): eval and
 * predict use it without being told. An unknown value, --truncate with --task qa and a corrupt
 * config entry fail with messages naming them.
 */
#include "test_util.h"
#include "cli_util.h"

static const char *FILL[] = {"the cat runs home", "a dog sleeps", "the bird sings a song", "my fish swims",
                             "the horse eats hay", "a cow stands still", "the sun is warm"};
static const char *END[] = {"it is sad", "it is happy"}; /* label 0 neg, 1 pos */

/* Row i of a file: 6 filler sentences picked by (i / 2, salt), then the ending of label i % 2:
 * rows 2k and 2k + 1 differ only in their endings, so a model that cannot see the ending gives
 * both the same label and scores exactly 50% on a file of such pairs. */
static size_t row(char *buf, size_t cap, int i, int salt) {
    size_t n = 0;
    uint32_t h = (uint32_t)(i / 2) * 2654435761u + (uint32_t)salt * 40503u + 1u;
    for (int s = 0; s < 6; s++) {
        h = h * 1664525u + 1013904223u;
        n += (size_t)snprintf(buf + n, cap - n, "%s. ", FILL[(h >> 16) % 7]);
    }
    n += (size_t)snprintf(buf + n, cap - n, "%s", END[i % 2]);
    return n;
}

static void make_data(void) {
    static char corpus[32768], train[32768], test[32768], r[512];
    size_t n = 0;
    for (int d = 0; d < 8; d++) {
        for (int s = 0; s < 5; s++) n += (size_t)snprintf(corpus + n, sizeof corpus - n, "%s. %s.\n", FILL[(d + s) % 7],
                                                          END[(d * 5 + s) % 2]);
        n += (size_t)snprintf(corpus + n, sizeof corpus - n, "\n");
    }
    write_str("corpus.txt", corpus);
    size_t t = (size_t)snprintf(train, sizeof train, "text\tlabel\n"), u = t;
    memcpy(test, train, t + 1);
    for (int i = 0; i < 64; i++) {
        row(r, sizeof r, i, 0);
        t += (size_t)snprintf(train + t, sizeof train - t, "%s\t%s\n", r, i % 2 ? "pos" : "neg");
    }
    for (int i = 0; i < 24; i++) {
        row(r, sizeof r, i, 3);
        u += (size_t)snprintf(test + u, sizeof test - u, "%s\t%s\n", r, i % 2 ? "pos" : "neg");
    }
    write_str("train.tsv", train);
    write_str("test.tsv", test);
}

static const char *FT = "finetune --model pre --train train.tsv --test-split 0 --epochs 20 --batch 8 --max-len 16 "
                        "--lr 2e-3 --threads 1";

static void test_truncate(void) {
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out pre --layers 2 --hidden 32 --heads 2 "
                       "--intermediate 64 --max-len 32 --batch 4 --max-steps 3 --dropout 0 --threads 1");
    CHECK_RAN(rc, 0);

    /* head (the default): the ending is cut off */
    rc = tessera(NULL, "%s --out ft-head", FT);
    CHECK_RAN(rc, 0);
    char cfg[8192];
    read_into("ft-head/config.json", cfg, sizeof cfg);
    CHECK(!strstr(cfg, "tessera_truncation"), "a head cut is the default and not written: %s", cfg);
    rc = tessera(NULL, "eval --model ft-head --data test.tsv --threads 1");
    CHECK_RAN(rc, 0);
    double head = printed_number("accuracy ");
    CHECK(head >= 0 && head <= 60, "head: held-out accuracy %.2f%% without the ending (want 50): %s", head, out_text);

    /* head+tail and tail: the ending is in */
    const char *how[] = {"head+tail", "tail"};
    for (int k = 0; k < 2; k++) {
        rc = tessera(NULL, "%s --out ft-%d --truncate %s", FT, k, how[k]);
        CHECK_RAN(rc, 0);
        char dir_cfg[64], want[64];
        snprintf(dir_cfg, sizeof dir_cfg, "ft-%d/config.json", k);
        snprintf(want, sizeof want, "\"tessera_truncation\":\t\"%s\"", how[k]);
        read_into(dir_cfg, cfg, sizeof cfg);
        CHECK(strstr(cfg, want), "%s lacks %s: %s", dir_cfg, want, cfg);
        rc = tessera(NULL, "eval --model ft-%d --data test.tsv --threads 1", k);
        CHECK_RAN(rc, 0);
        double acc = printed_number("accuracy ");
        CHECK(acc >= 90, "%s: held-out accuracy %.2f%% (want >= 90): %s", how[k], acc, out_text);
        printf("  held-out accuracy: --truncate head %.2f%%, %s %.2f%%\n", head, how[k], acc);
    }

    /* predict cuts as the model was trained: the label is in the last words */
    static char in[2048];
    size_t n = row(in, sizeof in, 100, 5);
    in[n++] = '\n';
    row(in + n, sizeof in - n, 101, 5);
    strcat(in, "\n");
    rc = tessera(in, "predict --model ft-0 --threads 1");
    CHECK_RAN(rc, 0);
    char *second = strchr(out_text, '\n');
    CHECK(!strncmp(out_text, "neg\t", 4) && second && !strncmp(second + 1, "pos\t", 4), "predict, head+tail:\n%s",
          out_text);
}

static void test_bad_input(void) {
    int rc = tessera(NULL, "%s --out x --truncate middle", FT);
    CHECK_FAILS(rc, "--truncate middle: expected head, tail or head+tail");
    rc = tessera(NULL, "finetune --task qa --model pre --train train.tsv --truncate tail --out x");
    CHECK_FAILS(rc, "--truncate \"tail\" is for --task classify");
    /* a config.json whose cut is not one of the three */
    static char cfg[8192];
    read_into("ft-1/config.json", cfg, sizeof cfg);
    char *v = strstr(cfg, "\"tail\"");
    CHECK(v != NULL, "ft-1/config.json: %s", cfg);
    if (!v) return;
    memcpy(v, "\"tial\"", 6);
    write_str("ft-1/config.json", cfg);
    rc = tessera("some text\n", "predict --model ft-1 --threads 1");
    CHECK_FAILS(rc, "ft-1/config.json: \"tessera_truncation\" must be");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_truncate");
    if (rc) return rc;
    make_data();
    RUN(test_truncate);
    RUN(test_bad_input);
    cli_cleanup("test_cli_truncate");
    return tu_finish("test_cli_truncate");
}
