/*
 * test_cli_profile.c — `tessera pretrain --profile` and `tessera finetune --profile` through the
 * command itself, on a tiny generated corpus and TSV (cli_util.h): after 3 steps each prints, at
 * the end, the heading "profile of the training step (2 steps after the first):" and the report
 * of the training program (ts_program_profile_report): 2 runs (the first step, a warm-up, left
 * out), the share outside kernels, a matmul row with calls, a row for the encoder's layer 0; with
 * --device-iterations 2 the first call (2 steps) is the warm-up; without --profile nothing of it
 * is printed; --help lists the flag; --profile with --devices and a misspelt flag are refused.
 *
 * The command's path comes from TS_CLI (set by CMake to the built `tessera`); without it, the
 * test looks for ./tessera (ctest runs tests in the build directory) and skips when it is absent.
 */
#include "test_util.h"
#include "cli_util.h"

#define TINY "--layers 1 --hidden 32 --heads 2 --intermediate 64 --max-len 32 --batch 4 --threads 1"

/* The line of out_text that starts with `name` followed by a space, or NULL. */
static const char *row(const char *name) {
    size_t n = strlen(name);
    for (const char *l = out_text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, name, n) && l[n] == ' ') return l;
    return NULL;
}

/* The report after `heading` in out_text covers `runs` runs of the program (each `iters` steps):
 * totals with the share outside kernels, a matmul row and an encoder-layer row whose calls are
 * those of runs x iters steps. */
static void check_report(const char *what, const char *heading, unsigned long long runs, unsigned long long iters) {
    const char *h = strstr(out_text, heading);
    CHECK(h != NULL, "%s: no \"%s\" on stdout:\n%s", what, heading, out_text);
    if (!h) return;
    unsigned long long n = 0;
    double wall = -1, kern = -1, kpct = -1, outside = -1, opct = -1;
    const char *p = strstr(h, "\nprofile: ");
    CHECK(p && sscanf(p + 1, "profile: %llu run%*[s,] %lf ms in ts_program_run, %lf ms in kernels (%lf%%), %lf ms "
                      "outside kernels (%lf%%)", &n, &wall, &kern, &kpct, &outside, &opct) == 6,
          "%s: no totals line after the heading:\n%s", what, out_text);
    CHECK(n == runs && wall > 0 && kern > 0 && kern <= wall + 1e-3 && outside >= 0 && kpct > 0 && kpct <= 100 &&
              opct >= 0 && opct <= 100,
          "%s: totals (want %llu runs): %llu runs, %.3f ms, kernels %.3f ms (%.1f%%), outside %.3f ms (%.1f%%)\n%s",
          what, runs, n, wall, kern, kpct, outside, opct, out_text);
    CHECK(strstr(h, "outside kernels (") && strstr(h, "% kernel") && strstr(h, "layer (first run first)"),
          "%s: no share outside kernels or table headers:\n%s", what, out_text);
    const char *names[] = {"matmul", "bert.encoder.layer.0"};
    for (int i = 0; i < 2; i++) {
        const char *l = row(names[i]);
        int nodes = 0;
        unsigned long long calls = 0;
        double ms = -1, pc = -1;
        CHECK(l && l > h && sscanf(l + strlen(names[i]), "%d %llu %lf %lf", &nodes, &calls, &ms, &pc) == 4,
              "%s: no %s row:\n%s", what, names[i], out_text);
        CHECK(nodes > 0 && calls == (unsigned long long)nodes * runs * iters && ms > 0 && pc > 0 && pc <= 100.05,
              "%s: row %s: %d nodes, %llu calls (want %llu per node), %.3f ms, %.1f%%\n%s", what, names[i], nodes,
              calls, runs * iters, ms, pc, out_text);
    }
}

static void test_pretrain(void) {
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out pre --max-steps 3 --eval-every 3 "
                       "--eval-batches 1 --profile " TINY);
    CHECK_RAN(rc, 0);
    check_report("pretrain --profile", "\nprofile of the training step (2 steps after the first):\n", 2, 1);
    /* the report comes last, after the line on what was written */
    const char *w = strstr(out_text, "wrote pre"), *h = strstr(out_text, "profile of the training step");
    CHECK(w && h && w < h, "pretrain --profile: the report is not after the last line:\n%s", out_text);

    /* --device-iterations 2: the first call (steps 1 and 2) is the warm-up; one call of 2 steps left */
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out pre_k --max-steps 4 --eval-every 4 "
                       "--eval-batches 1 --device-iterations 2 --profile " TINY);
    CHECK_RAN(rc, 0);
    check_report("pretrain --device-iterations 2 --profile",
                 "\nprofile of the training step (2 steps after the first 2, one call into the program):\n", 1, 2);

    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out pre_plain --max-steps 3 --eval-every 3 "
                       "--eval-batches 1 " TINY);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "3 steps") && !strstr(out_text, "profile") && !strstr(out_text, "outside kernels") &&
              !row("matmul"),
          "pretrain without --profile printed a report:\n%s", out_text);
}

static void test_finetune(void) {
    int rc = tessera(NULL, "finetune --model pre --train data.tsv --out ft --max-steps 3 --batch 4 --max-len 32 "
                           "--threads 1 --profile");
    CHECK_RAN(rc, 0);
    check_report("finetune --profile", "\nprofile of the training step (2 steps after the first):\n", 2, 1);
    const char *w = strstr(out_text, "wrote ft"), *h = strstr(out_text, "profile of the training step");
    CHECK(w && h && w < h, "finetune --profile: the report is not after the last line:\n%s", out_text);

    rc = tessera(NULL, "finetune --model pre --train data.tsv --out ft_plain --max-steps 3 --batch 4 --max-len 32 "
                       "--threads 1");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "3 steps") && !strstr(out_text, "profile") && !strstr(out_text, "outside kernels") &&
              !row("matmul"),
          "finetune without --profile printed a report:\n%s", out_text);
}

static void test_flags(void) {
    const char *cmds[] = {"pretrain", "finetune"};
    for (int i = 0; i < 2; i++) {
        int rc = tessera(NULL, "%s --help", cmds[i]);
        CHECK_RAN(rc, 0);
        CHECK(strstr(out_text, "--profile") && strstr(out_text, "warm-up"), "%s --help does not list --profile:\n%s",
              cmds[i], out_text);
    }
    int rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out x --profile --devices cpu:0,cpu:1 "
                           "--max-steps 2 " TINY);
    CHECK_FAILS(rc, "--profile is not supported with --devices");
    CHECK(rc == 2, "pretrain --profile --devices: exit %d, want 2", rc);
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out y --profile --devices cpu:0,cpu:1 --max-steps 2");
    CHECK_FAILS(rc, "--profile is not supported with --devices");
    CHECK(rc == 2, "finetune --profile --devices: exit %d, want 2", rc);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out x --profil");
    CHECK_FAILS(rc, "unknown flag '--profil'");
    rc = tessera(NULL, "finetune --model pre --train data.tsv --out y --profiles");
    CHECK_FAILS(rc, "unknown flag '--profiles'");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_profile");
    if (rc) return rc;
    write_corpus("corpus.txt");
    write_labelled("data.tsv");
    RUN(test_pretrain);
    RUN(test_finetune);
    RUN(test_flags);
    cli_cleanup("test_cli_profile");
    return tu_finish("test_cli_profile");
}
