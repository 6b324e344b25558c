/*
 * test_cli_pairs.c — text-pair classification through the `tessera` command: a tiny BERT is
 * pretrained, then fine-tuned with `finetune --text-b-column` on a TSV whose label depends only
 * on the second text (so a model that dropped it could not beat chance), and on the same rows as
 * JSON lines. The model directory remembers the pair column: `eval` scores the file without
 * being told, and `predict` reads text<TAB>text_b lines, or the file eval scores (its pairs, not
 * its header), and prints the expected labels. A
 * fine-tuning stopped mid-epoch and resumed (--stop-after, --resume) ends with the same model,
 * bit for bit. A line without the tab, a missing column, a short row fail with messages naming
 * them.
 */
#include "test_util.h"
#include "cli_util.h"

static const char *SUBJ[] = {"the cat runs", "a dog sleeps", "the bird sings", "my fish swims", "the horse eats"};
static const char *GOOD[] = {"it is happy", "that is lovely", "so very glad", "what a joy"};
static const char *BAD[] = {"it is sad", "that is awful", "so very angry", "what a pain"};

static void make_data(void) {
    static char corpus[16384], tsv[16384], jsonl[16384];
    size_t n = 0, t = 0, j = 0;
    for (int d = 0; d < 6; d++) {
        for (int s = 0; s < 5; s++)
            n += (size_t)snprintf(corpus + n, sizeof corpus - n, "%s and %s. %s.\n", SUBJ[(d + s) % 5], GOOD[s % 4],
                                  BAD[(d + s) % 4]);
        n += (size_t)snprintf(corpus + n, sizeof corpus - n, "\n");
    }
    write_str("corpus.txt", corpus);
    t = (size_t)snprintf(tsv, sizeof tsv, "sentence1\tsentence2\tlabel\n");
    for (int i = 0; i < 40; i++) {
        const char *a = SUBJ[(i * 3) % 5], *b = i % 2 ? GOOD[(i / 2) % 4] : BAD[(i / 2) % 4];
        const char *label = i % 2 ? "pos" : "neg";
        t += (size_t)snprintf(tsv + t, sizeof tsv - t, "%s\t%s\t%s\n", a, b, label);
        j += (size_t)snprintf(jsonl + j, sizeof jsonl - j, "{\"text\": \"%s\", \"text_b\": \"%s\", \"label\": \"%s\"}\n",
                              a, b, label);
    }
    write_str("pairs.tsv", tsv);
    write_str("pairs.jsonl", jsonl);
    write_str("short.tsv", "sentence1\tsentence2\tlabel\nthe cat runs\tit is happy\tpos\nthe dog sleeps\tneg\n");
}

static void test_pairs(void) {
    int rc = tessera(NULL, "vocab --out vocab.txt --size 150 corpus.txt");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out pre --layers 2 --hidden 32 --heads 2 "
                       "--intermediate 64 --max-len 32 --batch 4 --max-steps 3 --dropout 0 --threads 1");
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "finetune --model pre --train pairs.tsv --text-column sentence1 --text-b-column sentence2 "
                       "--out ft --test-split 0 --epochs 15 --batch 8 --max-len 24 --lr 2e-3 --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "40 text-pair rows"), "finetune did not read pairs: %s", out_text);
    char cfg[8192];
    read_into("ft/config.json", cfg, sizeof cfg);
    CHECK(strstr(cfg, "\"tessera_text_b_column\":\t\"sentence2\""), "ft/config.json lacks the pair column: %s", cfg);

    /* eval: the pair column comes from the model directory */
    rc = tessera(NULL, "eval --model ft --data pairs.tsv --text-column sentence1 --threads 1");
    CHECK_RAN(rc, 0);
    double acc = printed_number("accuracy ");
    CHECK(acc >= 95, "eval accuracy %.2f%% on the training pairs (want >= 95): %s", acc, out_text);
    printf("  training pairs after fine-tuning: accuracy %.2f%%\n", acc);

    /* predict: text<TAB>text_b; the first text alone says nothing about the label */
    rc = tessera("the cat runs\tit is happy\nthe cat runs\tit is sad\nmy fish swims\twhat a joy\nmy fish swims\tso very "
                 "angry\n", "predict --model ft --threads 1");
    CHECK_RAN(rc, 0);
    const char *want[] = {"pos\t", "neg\t", "pos\t", "neg\t"};
    int ok = 0, k = 0;
    for (char *l = out_text; *l && k < 4; k++) {
        ok += !strncmp(l, want[k], 4);
        char *nl = strchr(l, '\n');
        if (!nl) break;
        l = nl + 1;
    }
    CHECK(ok == 4, "predict on pairs: %d of 4 labels right:\n%s", ok, out_text);
    CHECK(strstr(out_text, "the cat runs it is happy"), "predict did not echo the pair: %s", out_text);
    rc = tessera(NULL, "predict --model ft --text \"a dog sleeps\tthat is awful\" --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(!strncmp(out_text, "neg\t", 4), "predict --text on a pair: %s", out_text);
    /* predict on eval's labelled file: each row's pair (the header and the labels left out), in order */
    rc = tessera(NULL, "predict --model ft --data pairs.tsv --text-column sentence1 --threads 1");
    CHECK_RAN(rc, 0);
    int lines = 0, right = 0, echoed = 0;
    for (char *l = out_text; *l; lines++) {
        const char *a = SUBJ[(lines * 3) % 5], *b = lines % 2 ? GOOD[(lines / 2) % 4] : BAD[(lines / 2) % 4];
        char pair[128];
        snprintf(pair, sizeof pair, "\t%s %s\n", a, b);
        right += !strncmp(l, lines % 2 ? "pos\t" : "neg\t", 4);
        char *nl = strchr(l, '\n');
        char *t1 = strchr(l, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL; /* label, probability, text */
        echoed += nl && t2 && t2 < nl && !strncmp(t2, pair, strlen(pair));
        if (!nl) break;
        l = nl + 1;
    }
    CHECK(lines == 40 && echoed == 40 && right >= 38, "predict --data pairs.tsv: %d lines (want 40), %d pairs echoed, "
          "%d labels right:\n%.400s", lines, echoed, right, out_text);

    /* JSON lines with "text_b" */
    rc = tessera(NULL, "finetune --model pre --train pairs.jsonl --text-b-column text_b --out ftj --test-split 0.25 "
                       "--epochs 15 --batch 8 --max-len 24 --lr 2e-3 --threads 1");
    CHECK_RAN(rc, 0);
    double tacc = printed_number("tessera finetune: test accuracy ");
    CHECK(tacc >= 80, "JSONL pairs: held-out accuracy %.2f%% (want >= 80): %s", tacc, out_text);
    rc = tessera(NULL, "eval --model ftj --data pairs.jsonl --threads 1");
    CHECK_RAN(rc, 0);
    CHECK(printed_number("accuracy ") >= 90, "eval on the JSONL pairs: %s", out_text);

    /* the same with fp16 matrix products (loss scaling) and recomputation */
    rc = tessera(NULL, "finetune --model pre --train pairs.jsonl --text-b-column text_b --out ftf --test-split 0.25 "
                       "--epochs 15 --batch 8 --max-len 24 --lr 2e-3 --threads 1 --fp16 --recompute");
    CHECK_RAN(rc, 0);
    tacc = printed_number("tessera finetune: test accuracy ");
    CHECK(tacc >= 80, "JSONL pairs, --fp16 --recompute: held-out accuracy %.2f%% (want >= 80): %s", tacc, out_text);
}

/* finetune --stop-after N, then --resume: the same model, bit for bit, as one run. */
static void test_resume(void) {
    const char *args = "--model pre --train pairs.tsv --text-column sentence1 --text-b-column sentence2 --epochs 3 "
                       "--batch 8 --max-len 24 --lr 2e-3 --threads 1";
    int rc = tessera(NULL, "finetune %s --out r1", args);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "finetune %s --out r2 --save-every 4 --stop-after 6", args);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "stopped after step 6") && exists("r2/checkpoints/step-000006/trainer.json"),
          "stop after 6: %s", out_text);
    rc = tessera(NULL, "finetune %s --resume r2", args);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "resuming from r2/checkpoints/step-000006 at step 6"), "resume: %s", out_text);
    CHECK(same_bytes("r1/model.safetensors", "r2/model.safetensors"),
          "stopped after 6 of 12 steps (mid-epoch) and resumed: the model differs from one run");
    rc = tessera(NULL, "finetune %s --resume r2 --batch 4", args);
    CHECK_FAILS(rc, "was made with --batch 8, not 4");
}

static void test_bad_input(void) {
    int rc = tessera("the cat runs\tit is happy\nno tab here\n", "predict --model ft --threads 1");
    CHECK_FAILS(rc, "stdin:2: the model classifies text pairs");
    rc = tessera(NULL, "finetune --model pre --train pairs.tsv --text-column sentence1 --text-b-column nosuch --out x");
    CHECK_FAILS(rc, "nosuch");
    rc = tessera(NULL, "finetune --model pre --train short.tsv --text-column sentence1 --text-b-column sentence2 --out x");
    CHECK_FAILS(rc, "short.tsv:3");
    rc = tessera(NULL, "eval --model ft --data pairs.tsv --threads 1");
    CHECK_FAILS(rc, "text");
    rc = tessera(NULL, "predict --model ft --data pairs.tsv --threads 1"); /* a header without "text" */
    CHECK_FAILS(rc, "--text-column");
    rc = tessera(NULL, "finetune --task qa --model pre --train pairs.tsv --text-b-column sentence2 --out x");
    CHECK_FAILS(rc, "--text-b-column is for --task classify");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_pairs");
    if (rc) return rc;
    make_data();
    RUN(test_pairs);
    RUN(test_resume);
    RUN(test_bad_input);
    cli_cleanup("test_cli_pairs");
    return tu_finish("test_cli_pairs");
}
