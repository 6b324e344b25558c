/*
 * test_cli_pipeline.c — `tessera pretrain` and `finetune` with --devices / --stages /
 * --micro-batches, end to end:
 *  - a BERT of 4 layers x 128 pre-trained for 20 steps on one device and as a pipeline on 2 and on
 *    4 devices (cpu:0 .. cpu:3, one thread each: more devices than cores here), 4 micro-batches a
 *    step: the same losses and the same model.safetensors, byte for byte; stopped at step 10 and
 *    resumed on the pipeline, the same again;
 *  - the seed system's layout, 12 tiny layers: embeddings and heads on device 0, layers 4 / 4 / 4
 *    on devices 1 - 3 (5 stages on 4 devices), equal to one device;
 *  - --stages auto: measured and balanced, the stages printed with their memory, the measured
 *    busy times and bubble printed and logged in metrics.jsonl;
 *  - fine-tuning a classifier on 2 devices equals one device;
 *  - bad pipeline flags are refused with the flag named.
 */
#include "test_util.h"
#include "cli_util.h"

static const char *PRE = "pretrain --vocab vocab.txt --corpus corpus.txt --max-len 32 --batch 4 --threads 1 "
                         "--micro-batches 4 --heads 2 --eval-every 10 --eval-batches 1";

static void test_setup(void) {
    write_corpus("corpus.txt");
    write_labelled("data.tsv");
    int rc = tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt");
    CHECK_RAN(rc, 0);
}

/* The "loss" of each step in DIR/metrics.jsonl, concatenated. */
static void losses_of(const char *dir_name, char *out, size_t cap) {
    char path[300], line[4096];
    snprintf(path, sizeof path, "%s/%s/metrics.jsonl", dir, dir_name);
    FILE *f = fopen(path, "r");
    size_t o = 0;
    out[0] = 0;
    while (f && fgets(line, sizeof line, f)) {
        const char *l = strstr(line, "\"loss\": ");
        if (l && o < cap) o += (size_t)snprintf(out + o, cap - o, "%.12s|", l + 8);
    }
    if (f) fclose(f);
}

static void test_equal_pretrain(void) {
    const char *m = "--layers 4 --hidden 128 --intermediate 256 --max-steps 20";
    int rc = tessera(NULL, "%s %s --out one", PRE, m);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s %s --out two --devices cpu:0,cpu:1 --stages \"0:emb,0-1 1:2-3,heads\"", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "pipeline of 2 stages on 2 devices, 4 micro-batches a step") &&
          strstr(out_text, "stage 1 on cpu:1 (1 thread): layer 2 .. heads"), "the stages: %s", out_text);
    rc = tessera(NULL, "%s %s --out four --devices cpu:0,cpu:1,cpu:2,cpu:3 --stages \"0:emb,0 1:1 2:2 3:3,heads\"", PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(same_bytes("one/model.safetensors", "two/model.safetensors"), "2 devices: another model than one device");
    CHECK(same_bytes("one/model.safetensors", "four/model.safetensors"), "4 devices: another model than one device");
    static char a[8192], b[8192];
    losses_of("one", a, sizeof a);
    losses_of("four", b, sizeof b);
    CHECK(a[0] && !strcmp(a, b), "losses differ:\n%s\n%s", a, b);
    CHECK(strstr(out_text, "idle (bubble)") && strstr(out_text, "(S-1)/(M+S-1)"), "no bubble line: %s", out_text);
    char met[1 << 16];
    read_into("four/metrics.jsonl", met, sizeof met);
    CHECK(strstr(met, "\"pipeline\": {\"micro_batches\": 4") && strstr(met, "\"bubble\": ") &&
          strstr(met, "\"device\": \"cpu:3\""), "metrics.jsonl lacks the pipeline: %.400s", met);
    /* stopped at 10 and resumed, on 4 devices */
    rc = tessera(NULL, "%s %s --out four_r --devices cpu:0,cpu:1,cpu:2,cpu:3 --stages \"0:emb,0 1:1 2:2 3:3,heads\" "
                       "--save-every 10 --stop-after 10", PRE, m);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s %s --resume four_r --devices cpu:0,cpu:1,cpu:2,cpu:3 --stages \"0:emb,0 1:1 2:2 3:3,heads\"",
                 PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(same_bytes("one/model.safetensors", "four_r/model.safetensors"), "stopped and resumed on 4 devices differs");
}

static void test_seed_layout(void) {
    const char *m = "--layers 12 --hidden 32 --intermediate 64 --max-steps 6";
    int rc = tessera(NULL, "%s %s --out s1", PRE, m);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s %s --out s4 --devices cpu:0,cpu:1,cpu:2,cpu:3 --stages \"0:emb,heads 1:0-3 2:4-7 3:8-11\"",
                 PRE, m);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "pipeline of 5 stages on 4 devices") && strstr(out_text, "stage 0 on cpu:0 (1 thread): embeddings;") &&
          strstr(out_text, "stage 2 on cpu:2 (1 thread): layers 4-7;") && strstr(out_text, "stage 4 on cpu:0 (1 thread): heads;"),
          "the seed's layout: %s", out_text);
    CHECK(same_bytes("s1/model.safetensors", "s4/model.safetensors"), "the seed's layout: another model than one device");
}

static void test_auto(void) {
    int rc = tessera(NULL, "%s --layers 4 --hidden 32 --intermediate 64 --max-steps 4 --out au --devices cpu:0,cpu:1,cpu:2",
                     PRE);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "--stages auto: timing") && strstr(out_text, "pipeline of 3 stages on 3 devices") &&
          strstr(out_text, "micro-batches in flight"), "auto: %s", out_text);
}

static void test_finetune(void) {
    int rc = tessera(NULL, "%s --layers 2 --hidden 32 --intermediate 64 --max-steps 2 --out pre --dropout 0.1", PRE);
    CHECK_RAN(rc, 0);
    const char *ft = "finetune --model pre --train data.tsv --batch 4 --max-len 32 --threads 1 --micro-batches 2 "
                     "--max-steps 6";
    rc = tessera(NULL, "%s --out f1", ft);
    CHECK_RAN(rc, 0);
    rc = tessera(NULL, "%s --out f2 --devices cpu:0,cpu:1 --stages \"0:emb,0 1:1,heads\"", ft);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "pipeline of 2 stages") && strstr(out_text, "idle (bubble)"), "finetune: %s", out_text);
    CHECK(same_bytes("f1/model.safetensors", "f2/model.safetensors"), "fine-tuning on 2 devices differs from one");
}

static void test_bad_flags(void) {
    const char *m = "--layers 2 --hidden 32 --intermediate 64 --max-steps 2 --out bad";
    int rc = tessera(NULL, "%s %s --stages \"0:emb,0-1,heads\"", PRE, m);
    CHECK_FAILS(rc, "--stages \"0:emb,0-1,heads\" needs --devices");
    rc = tessera(NULL, "%s %s --devices cpu:0,cpu:1 --stages \"0:emb,0 1:0,heads\"", PRE, m);
    CHECK_FAILS(rc, "places the layer 0 twice");
    rc = tessera(NULL, "%s %s --devices cpu:0,cpu:1 --stages \"0:emb,0 1:1\"", PRE, m);
    CHECK_FAILS(rc, "does not place the heads");
    rc = tessera(NULL, "%s %s --devices cpu:0,cpu:1 --stages \"0:emb,0 2:1,heads\"", PRE, m);
    CHECK_FAILS(rc, "DEVICE an index into the devices (0 .. 1)");
    rc = tessera(NULL, "%s %s --devices cpu:0,cpu:1 --stages \"0:emb,0-5 1:heads\"", PRE, m);
    CHECK_FAILS(rc, "within 0 .. 1");
    rc = tessera(NULL, "%s %s --devices cpu:0,cpu:1 --stages \"1:emb,0 0:1,heads\"", PRE, m);
    CHECK_RAN(rc, 0); /* any device may run any stretch: the stages follow the forward pass */
    rc = tessera(NULL, "%s %s --devices cpu:0,cpu:0", PRE, m);
    CHECK_FAILS(rc, "names cpu:0 twice");
    rc = tessera(NULL, "%s %s --devices cpu:0,cpu:1 --fp16", PRE, m);
    CHECK_FAILS(rc, "--fp16");
    rc = tessera(NULL, "%s %s --devices cpu:0,cpu:1 --accumulation 3", PRE, m);
    CHECK_FAILS(rc, "--micro-batches 4 and --accumulation 3");
    rc = tessera(NULL, "%s %s --devices gpu:0", PRE, m);
    CHECK_FAILS(rc, "unknown device 'gpu'");
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_pipeline");
    if (rc) return rc;
    RUN(test_setup);
    RUN(test_equal_pretrain);
    RUN(test_seed_layout);
    RUN(test_auto);
    RUN(test_finetune);
    RUN(test_bad_flags);
    cli_cleanup("test_cli_pipeline");
    return tu_finish("test_cli_pipeline");
}
