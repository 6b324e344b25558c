/*
 * test_cli_pack.c — `tessera pretrain --pack` and `tessera finetune --pack` through the command
 * (packed sequences, issue 39): both run on a tiny BERT and print the packing efficiency (real
 * tokens / slots) a sequence a row and packed, packed higher, and their sequences per second;
 * the fine-tuned model evaluates as any other (its config is unpacked); an unpackable --pack is
 * refused naming it.
 */
#include "test_util.h"
#include "cli_util.h"

/* The number printed right after `label` in the last command's stdout, after `from`. */
static double number_after(const char *from, const char *label) {
    const char *a = strstr(out_text, from);
    a = a ? strstr(a + strlen(from), label) : NULL;
    return a ? atof(a + strlen(label)) : -1;
}

static void test_pretrain_pack(void) {
    write_corpus("corpus.txt");
    int rc = tessera(NULL, "vocab --out vocab.txt --size 80 corpus.txt");
    CHECK_RAN(rc, 0);
    const char *PT = "pretrain --vocab vocab.txt --corpus corpus.txt --layers 1 --hidden 16 --heads 2 "
                     "--intermediate 32 --max-len 64 --batch 4 --max-steps 3 --eval-every 3 --threads 1";
    rc = tessera(NULL, "%s --out pre", PT);
    CHECK_RAN(rc, 0);
    double alone = number_after("packing efficiency", "slots) "), as = number_after("a pair a row, ", "");
    CHECK(alone > 0 && alone < 100 && fabs(as - alone) < 1e-9, "unpacked: %.1f%% and %.1f%%: %s", alone, as,
          out_text);
    rc = tessera(NULL, "%s --out pre-packed --pack 4", PT);
    CHECK_RAN(rc, 0);
    double padded = number_after("packing efficiency", "slots) "), packed = number_after("a pair a row, ", "");
    CHECK(strstr(out_text, "as trained (packed)") && packed > padded && padded > 0 && packed <= 100,
          "--pack 4: %.1f%% a pair a row, %.1f%% packed: %s", padded, packed, out_text);
    CHECK(strstr(out_text, "seq/s"), "no rate: %s", out_text);
    rc = tessera(NULL, "%s --out pre-bad --pack 17", PT);
    CHECK_FAILS(rc, "pack 17");
}

static void test_finetune_pack(void) {
    write_labelled("train.tsv");
    const char *FT = "finetune --model pre --train train.tsv --test-split 0.25 --epochs 2 --batch 4 --max-len 32 "
                     "--threads 1";
    int rc = tessera(NULL, "%s --out ft --pack 4", FT);
    CHECK_RAN(rc, 0);
    double padded = number_after("packing efficiency", "slots) "), packed = number_after("a text a row, ", "");
    CHECK(padded > 0 && packed > padded && packed <= 100, "%.1f%% a text a row, %.1f%% packed: %s", padded, packed,
          out_text);
    CHECK(strstr(out_text, "sequences/s, packed") && strstr(out_text, "test accuracy"), "%s", out_text);
    rc = tessera(NULL, "eval --model ft --data train.tsv --threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s --out ft-one", FT);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "a text a row of 32 tokens") && strstr(out_text, "sequences/s"), "%s", out_text);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_pack");
    if (rc) return rc;
    RUN(test_pretrain_pack);
    RUN(test_finetune_pack);
    cli_cleanup("test_cli_pack");
    return tu_finish("test_cli_pack");
}
