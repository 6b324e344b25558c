/*
 * test_cli_plan.c — `tessera plan` and the refusal with the planner's suggestion (issue 26):
 *  - BERT-Base on 1 and 8 H200s: a layout, an estimate and the command;
 *  - the seed system's layout on an IPU-POD16 (ipu-mk2 x 16, micro-batch 32, 512 micro-batches,
 *    4 replicas, LAMB, f16, recomputation): it fits, and its stages are named as --stages names them;
 *  - --json parses (cJSON) with the same layout; --explain lists alternatives with why;
 *  - the global batch is kept: --batch x --micro-batches x --replicas unless --global-batch says
 *    otherwise, each layout splitting it (replicas x micro-batches x a micro-batch of at most --batch);
 *    the printed pretrain command runs as printed once its placeholders are files, and a finetune
 *    or inference plan prints finetune's or run's flags only;
 *  - usage errors exit 2 naming the flag (unknown flag, missing --device-profile, bad number, unknown
 *    profile, bad --dtype); the old spellings --device and --seq-len still work, with a notice;
 *    --model-config reads a Hugging Face config.json, --config the options;
 *  - pretrain under --device-profile with a profile (written here) too small for a pipeline stage:
 *    refused naming the stage, what it needs and what the device has, with the planner's
 *    suggestion, nothing written to --out but its lock; and a BERT-Base-sized step, whose arena
 *    would be gigabytes, refused without its memory ever being touched (the child's peak RSS).
 */
#include "test_util.h"
#include "cli_util.h"

#include <math.h>

#include <cjson/cJSON.h>
#include <dirent.h>
#include <sys/resource.h>

static const char *TINY = "--layers 2 --hidden 32 --heads 2 --intermediate 64 --max-len 32 --threads 1 --max-steps 2";

/* A profile like the built-in ones, of `memory` bytes per device, as dir/name. */
static void write_profile(const char *name, const char *pname, double memory) {
    char json[2048];
    snprintf(json, sizeof json,
             "{\"name\": \"%s\", \"description\": \"a small device for the test\", \"measured\": false,\n"
             " \"memory_bytes\": %.0f, \"streaming_bytes\": 0, \"streaming_bw\": 0,\n"
             " \"peak_flops\": {\"f32\": 1e12, \"bf16\": 2e12, \"f16\": 2e12}, \"mem_bw\": 100e9,\n"
             " \"link_bw\": 10e9, \"link_latency\": 1e-6, \"host_bw\": 1e9, \"host_latency\": 1e-5,\n"
             " \"devices_per_host\": 8, \"eff_matmul\": {\"f32\": 0.5, \"bf16\": 0.5, \"f16\": 0.5},\n"
             " \"eff_mem\": 0.5, \"node_overhead\": 1e-6,\n"
             " \"sources\": {\"memory_bytes\": \"test_cli_plan\", \"streaming_bytes\": \"test_cli_plan\",\n"
             "  \"streaming_bw\": \"test_cli_plan\", \"peak_flops\": \"test_cli_plan\", \"mem_bw\": \"test_cli_plan\",\n"
             "  \"link_bw\": \"test_cli_plan\", \"link_latency\": \"test_cli_plan\", \"host_bw\": \"test_cli_plan\",\n"
             "  \"host_latency\": \"test_cli_plan\", \"devices_per_host\": \"test_cli_plan\",\n"
             "  \"eff_matmul\": \"test_cli_plan\", \"eff_mem\": \"test_cli_plan\", \"node_overhead\": \"test_cli_plan\"}}\n",
             pname, memory);
    write_str(name, json);
}

/* The entries of dir/sub but . and .., one string "a b c". */
static void list_dir(const char *sub, char *buf, size_t cap) {
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    buf[0] = 0;
    DIR *d = opendir(path);
    if (!d) return;
    size_t o = 0;
    for (struct dirent *e; (e = readdir(d)) && o < cap;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? " " : "", e->d_name);
    closedir(d);
}

static void test_setup(void) {
    write_corpus("corpus.txt");
    CHECK_RAN(tessera(NULL, "vocab --out vocab.txt --size 120 corpus.txt"), 0);
}

static void test_h200(void) {
    for (int count = 1; count <= 8; count += 7) {
        int rc = tessera(NULL, "plan --device-profile h200 --count %d", count);
        CHECK_RAN(rc, 0);
        CHECK(strstr(out_text, "best layout:") && strstr(out_text, "seq/s") && strstr(out_text, "command:\n  ") &&
              strstr(out_text, "x h200") && strstr(out_text, "12 layers, hidden 768"), "count %d:\n%s", count, out_text);
        CHECK(printed_number("estimated ") > 0, "an estimate:\n%s", out_text);
    }
    int rc = tessera(NULL, "plan --device-profile h200 --count 8 --layers 24 --hidden 1024 --heads 16 --intermediate 4096 --dtype bf16");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "24 layers, hidden 1024") && printed_number("estimated ") > 0, "BERT-Large:\n%s", out_text);
}

/* --max-grad-norm (pretrain's): without clipping one device's step runs its updates inside the
 * backward pass, so the plan keeps no gradients and needs about their size less; clipping keeps
 * each to the end of the step (as replicas do, clipped or not), and the command says --max-grad-norm. */
static void test_clipping(void) {
    const char *one = "plan --device-profile h200 --json --top 1 --replicas 1 --micro-batches 1 --no-recompute";
    CHECK_RAN(tessera(NULL, "%s", one), 0);
    double params = printed_number("\"params\":\t"), grads = printed_number("\"grads\":\t");
    double need = printed_number("\"need\":\t");
    CHECK(params > 4e8 && grads == 0 && !strstr(out_text, "--max-grad-norm"), "no clipping: params %g grads %g\n%s",
          params, grads, out_text);
    CHECK_RAN(tessera(NULL, "%s --max-grad-norm 1", one), 0);
    double kept = printed_number("\"grads\":\t"), need_kept = printed_number("\"need\":\t");
    CHECK(kept == params && need_kept - need > 0.75 * params && need_kept - need < params &&
              strstr(out_text, "--max-grad-norm 1"),
          "clipped: grads %g of params %g, need %g against %g without clipping\n%s", kept, params, need_kept, need,
          out_text);
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --explain --replicas 1 --micro-batches 1 --no-recompute"), 0);
    CHECK(strstr(out_text, "the updates run inside the backward"), "the table says why grads is 0:\n%s", out_text);
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --json --top 1 --count 2 --replicas 2 --micro-batches 1"), 0);
    CHECK(printed_number("\"grads\":\t") == params, "replicas keep every gradient for the all-reduce:\n%s", out_text);
    CHECK_FAILS(tessera(NULL, "plan --device-profile h200 --max-grad-norm x"), "--max-grad-norm");
}

/* --vocab sets the model's vocabulary: the stage's parameters shrink by exactly the word embeddings'
 * and the MLM bias's rows (V x (hidden + 1) f32). */
static void test_vocab(void) {
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --json"), 0);
    double full = printed_number("\"params\":\t");
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --json --vocab 30400"), 0);
    double small = printed_number("\"params\":\t");
    CHECK(strstr(out_text, "\"vocab_size\":\t30400") && full > 0 && small > 0 &&
              full - small == (30522 - 30400) * (768 + 1) * 4.0,
          "params %.0f with 30522 tokens, %.0f with 30400:\n%s", full, small, out_text);
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --vocab 30400"), 0);
    CHECK(strstr(out_text, "vocabulary 30400"), "%s", out_text);
}

/* The number after `flag ` in text, or -1. */
static int flag_value(const char *text, const char *flag) {
    char key[64];
    snprintf(key, sizeof key, "%s ", flag);
    const char *p = strstr(text, key);
    return p ? atoi(p + strlen(key)) : -1;
}

/* s with every `from` replaced by `to`, into buf. */
static void replace_all(char *buf, size_t cap, const char *s, const char *from, const char *to) {
    size_t o = 0, nf = strlen(from);
    while (*s && o + 1 < cap) {
        if (!strncmp(s, from, nf)) o += (size_t)snprintf(buf + o, cap - o, "%s", to), s += nf;
        else buf[o++] = *s++;
    }
    buf[o < cap ? o : cap - 1] = 0;
}

static void test_global_batch(void) {
    /* 8 H200s at --batch 8: every layout keeps 8 sequences a step (the search used to take 8 replicas x 8) */
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --count 8 --json --top 20"), 0);
    cJSON *j = cJSON_Parse(out_text), *ls = cJSON_GetObjectItem(j, "layouts");
    int n = 0;
    for (cJSON *l = ls ? ls->child : NULL; l; l = l->next, n++) {
        int R = cJSON_GetObjectItem(l, "replicas")->valueint, M = cJSON_GetObjectItem(l, "micro_batches")->valueint;
        int b = cJSON_GetObjectItem(l, "batch")->valueint;
        CHECK(R * M * b == 8 && b <= 8, "layout %d: %d x %d x %d is not 8", n, R, M, b);
    }
    CHECK(n > 1, "%d layouts", n);
    cJSON_Delete(j);
    /* --global-batch asks for another: 4 replicas x 16 micro-batches x 8 */
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --count 4 --replicas 4 --global-batch 512"), 0);
    CHECK(flag_value(out_text, "mpirun -np") == 4 && flag_value(out_text, "--batch") == 8 &&
          flag_value(out_text, "--accumulation") == 16, "global batch 512 on 4 replicas:\n%s", out_text);
    CHECK(strstr(out_text, "global batch 512"), "the request says its global batch:\n%s", out_text);
    /* the printed command runs as printed once its placeholders are files */
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --layers 2 --hidden 32 --heads 2 --intermediate 64 --max-len 32 "
                            "--batch 4 --micro-batches 2 --max-predictions 5"), 0);
    const char *c = strstr(out_text, "command:\n  ");
    char line[1024] = "", a[1024], b[1024], cmd[1200];
    if (c) snprintf(line, sizeof line, "%.*s", (int)strcspn(c + 11, "\n"), c + 11);
    const char *head = "tessera pretrain --vocab VOCAB.txt --corpus CORPUS.txt --out OUT_DIR ";
    CHECK(!strncmp(line, head, strlen(head)) &&
          strstr(line, "--accumulation 2") && flag_value(line, "--batch") == 4, "the command: %s", line);
    replace_all(a, sizeof a, line + strlen("tessera "), "VOCAB.txt", "vocab.txt");
    replace_all(b, sizeof b, a, "CORPUS.txt", "corpus.txt");
    replace_all(a, sizeof a, b, "OUT_DIR", "planned");
    snprintf(cmd, sizeof cmd, "%s --max-steps 2 --threads 1", a);
    CHECK_RAN(tessera(NULL, "%s", cmd), 0);
    /* finetune and infer: the model's sizes are its directory's, so only those commands' flags */
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --task finetune --batch 16"), 0);
    CHECK(strstr(out_text, "tessera finetune --model PRETRAINED_DIR --train TRAIN.tsv --out OUT_DIR --max-len 128 "
                           "--batch 16 --optimizer adamw") && !strstr(out_text, "--layers"), "finetune:\n%s", out_text);
    CHECK_RAN(tessera(NULL, "plan --device-profile h200 --task infer --dtype bf16"), 0);
    CHECK(strstr(out_text, "tessera run --model MODEL_DIR --inputs INPUTS.safetensors --outputs OUTPUTS.safetensors "
                           "--dtype bf16"), "infer:\n%s", out_text);
}

static const char *POD16 = "plan --device-profile ipu-mk2 --count 16 --batch 32 --max-len 128 --max-predictions 20 --optimizer lamb "
                           "--dtype f16 --replicas 4 --stages \"0:emb,heads 1:0-3 2:4-7 3:8-11\" --micro-batches 512 "
                           "--recompute";

static void test_pod16(void) {
    int rc = tessera(NULL, "%s", POD16);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "best layout:") && strstr(out_text, "4 replicas") && strstr(out_text, "512 micro-batches") &&
          strstr(out_text, "recomputation on") && strstr(out_text, "16 x ipu-mk2 (0.90 GB each"), "%s", out_text);
    CHECK(!strstr(out_text, "DOES NOT FIT") && strstr(out_text, " fits"), "the seed's layout fits:\n%s", out_text);
    CHECK(strstr(out_text, "emb ") && strstr(out_text, "0-3 ") && strstr(out_text, "8-11 ") && strstr(out_text, "heads "),
          "stages named as --stages names them:\n%s", out_text);
    CHECK(strstr(out_text, "mpirun -np 4 tessera pretrain"), "the command:\n%s", out_text);
    CHECK(strstr(out_text, "all-reduce: ") && strstr(out_text, "bubble: "), "%s", out_text);
}

/* --precision: Graphcore's BERT-Large layout on a Bow Pod16 fits in fp16-sr (16-bit weights, gradients and
 * LAMB state, streamed) and not in fp16 (f32 master weights); the command it prints asks for the mode;
 * --global-batch keeps replicas x micro-batches x batch; an unknown mode is refused. */
static const char *LARGE = "plan --device-profile ipu-bow --count 16 --layers 24 --hidden 1024 --heads 16 --intermediate "
                           "4096 --vocab 30400 --batch 8 --max-len 128 --max-predictions 20 --optimizer lamb --recompute";

static void test_precision(void) {
    const char *fixed = "--replicas 4 --stages \"0:emb,0-2,heads 1:3-9 2:10-16 3:17-23\" --micro-batches 2048";
    int rc = tessera(NULL, "%s %s --precision fp16-sr", LARGE, fixed);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "precision fp16-sr") && strstr(out_text, "best layout:") && !strstr(out_text, "DOES NOT FIT") &&
          strstr(out_text, "--precision fp16-sr"), "fp16-sr fits:\n%s", out_text);
    rc = tessera(NULL, "%s %s --precision fp16", LARGE, fixed);
    CHECK_RAN(rc, 1); /* nothing fits: exit 1 */
    CHECK(strstr(out_text, "no layout fits") && strstr(out_text, "DOES NOT FIT"), "fp16 does not fit:\n%s", out_text);
    rc = tessera(NULL, "%s --precision fp16-sr --global-batch 65536 --json", LARGE);
    CHECK_RAN(rc, 0);
    double R = printed_number("\"replicas\":\t"), M = printed_number("\"micro_batches\":\t");
    CHECK(R > 0 && M > 0 && R * M * 8 == 65536, "--global-batch 65536: %g replicas x %g micro-batches x 8\n%.2000s", R, M,
          out_text);
    rc = tessera(NULL, "%s --precision f8", LARGE);
    CHECK_FAILS(rc, "bf16-sr");
    /* packed rows: the same layout, its useful sequences a second times the sequences a row */
    rc = tessera(NULL, "%s %s --precision fp16-sr", LARGE, fixed);
    double rows = printed_number("estimated ");
    rc = tessera(NULL, "%s %s --precision fp16-sr --sequences-per-row 1.25", LARGE, fixed);
    CHECK_RAN(rc, 0);
    double packed = printed_number("estimated ");
    CHECK(rows > 0 && fabs(packed / rows - 1.25) < 1e-3 && strstr(out_text, "1.250 sequences a row"),
          "packed: %.1f seq/s against %.1f a sequence a row\n%s", packed, rows, out_text);
}

static void test_json(void) {
    int rc = tessera(NULL, "%s --json", POD16);
    CHECK_RAN(rc, 0);
    cJSON *j = cJSON_Parse(out_text);
    CHECK(j != NULL, "--json is not JSON:\n%s", out_text);
    if (!j) return;
    const cJSON *best = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "layouts"), 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "fits")) && best, "fits");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(best, "replicas")) == 4 &&
          cJSON_GetNumberValue(cJSON_GetObjectItem(best, "micro_batches")) == 512 &&
          cJSON_GetNumberValue(cJSON_GetObjectItem(best, "seq_per_s")) > 0, "the layout:\n%s", out_text);
    CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "device"), "name")), "ipu-mk2"), "device");
    cJSON_Delete(j);
    /* the shell's JSON reader agrees, where python3 is there */
    if (system("command -v python3 >/dev/null 2>&1") == 0) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "python3 -m json.tool '%s/stdout.txt' >/dev/null", dir);
        CHECK(system(cmd) == 0, "python3 -m json.tool refuses the output");
    }
}

static void test_explain(void) {
    int rc = tessera(NULL, "plan --device-profile ipu-mk2 --count 4 --batch 8 --dtype f16 --optimizer lamb --explain --top 4");
    CHECK(rc == 0 || rc == 1, "exit %d\n%s%s", rc, out_text, err_text);
    CHECK(strstr(out_text, "alternatives, the next best first:\n  2. "), "--explain:\n%s", out_text);
    CHECK(strstr(out_text, "slower") || strstr(out_text, "does not fit"), "why each lost:\n%s", out_text);
}

static void test_errors(void) {
    int rc = tessera(NULL, "plan --device-profile h200 --frobnicate");
    CHECK(rc == 2 && strstr(err_text, "--frobnicate"), "unknown flag: %d %s", rc, err_text);
    rc = tessera(NULL, "plan --count 2");
    CHECK(rc == 2 && strstr(err_text, "--device-profile P is required"), "missing --device-profile: %d %s", rc,
          err_text);
    rc = tessera(NULL, "plan --device-profile h200 --count two");
    CHECK(rc == 2 && strstr(err_text, "--count") && strstr(err_text, "two"), "bad number: %d %s", rc, err_text);
    rc = tessera(NULL, "plan --device-profile no-such-device");
    CHECK(rc == 2 && strstr(err_text, "--device-profile no-such-device"), "unknown profile: %d %s", rc, err_text);
    rc = tessera(NULL, "plan --device-profile h200 --dtype f64");
    CHECK(rc == 2 && strstr(err_text, "--dtype f64"), "bad dtype: %d %s", rc, err_text);
    rc = tessera(NULL, "plan --device-profile h200 --count 6 --replicas 4");
    CHECK(rc == 2 && strstr(err_text, "--replicas 4"), "replicas: %d %s", rc, err_text);
    rc = tessera(NULL, "plan --device-profile h200 --recompute --no-recompute");
    CHECK(rc == 2 && strstr(err_text, "exclude each other"), "--recompute --no-recompute: %d %s", rc, err_text);
    rc = tessera(NULL, "plan --help");
    CHECK(rc == 0 && strstr(out_text, "usage: tessera plan") && strstr(out_text, "--model-config FILE") &&
              strstr(out_text, "--device-profile P ") && strstr(out_text, "Exit codes:"),
          "help: %d\n%s", rc, out_text);
    /* the old spellings, for one release: a notice, then the same plan */
    rc = tessera(NULL, "plan --device h200 --seq-len 64");
    CHECK(rc == 0 && strstr(err_text, "--device is now --device-profile") && strstr(out_text, "best layout:"),
          "old --device: %d %s", rc, err_text);
    CHECK(strstr(err_text, "--seq-len is now --max-len") != NULL, "old --seq-len: %s", err_text);
    /* the model's sizes from a Hugging Face config.json: --model-config (plan's --config before --config
     * became every subcommand's options file, which now says where the model's config goes) */
    write_str("hf.json", "{\"hidden_size\": 256, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, "
                         "\"intermediate_size\": 1024, \"vocab_size\": 1000, \"max_position_embeddings\": 128, "
                         "\"type_vocab_size\": 2}");
    rc = tessera(NULL, "plan --device-profile h200 --model-config hf.json");
    CHECK(rc == 0 && strstr(out_text, "4 layers, hidden 256"), "--model-config: %d %s%s", rc, out_text, err_text);
    rc = tessera(NULL, "plan --device-profile h200 --config hf.json");
    CHECK(rc == 2 && strstr(err_text, "unknown key") && strstr(err_text, "--model-config hf.json"),
          "--config hf.json: %d %s", rc, err_text);
    rc = tessera(NULL, "plan --device-profile h200 --model-config hf.json --model m");
    CHECK(rc == 2 && strstr(err_text, "--model and --model-config exclude each other"), "%d %s", rc, err_text);
    /* the options from --config FILE, the flags over them */
    write_str("plan.json", "{\"device-profile\": \"h200\", \"count\": 8, \"model-config\": \"hf.json\"}");
    rc = tessera(NULL, "plan --config plan.json --count 2");
    CHECK(rc == 0 && strstr(out_text, "2 x h200") && strstr(out_text, "4 layers, hidden 256"), "--config: %d %s%s", rc,
          out_text, err_text);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out e1 %s --device-profile no-such-device", TINY);
    CHECK(rc == 2 && strstr(err_text, "--device-profile no-such-device"), "pretrain: %d %s", rc, err_text);
}

/* A 2-stage pipeline whose first stage does not fit the small profile (0.23 GB, most of it the
 * activations of 2 micro-batches in flight, on a 0.15 GB device): refused before the corpus is
 * read, naming the stage, with a layout of 2 such devices that fits. */
static void test_refusal(void) {
    write_profile("small.json", "small", 150e6);
    int rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out r1 --layers 4 --hidden 256 --heads 4 "
                           "--intermediate 1024 --max-len 64 --threads 1 --max-steps 2 --batch 32 --devices cpu:0,cpu:1 "
                           "--stages \"0:emb,0-2 1:3,heads\" --micro-batches 4 --device-profile small.json");
    CHECK_FAILS(rc, "ts_compile: stage 0 of the pipeline's 2: the program needs 0.22 GiB");
    CHECK(strstr(err_text, "activations 0.17") && strstr(err_text, "the device has 0.14 GiB (the limit set)") &&
          strstr(err_text, "the largest value") && strstr(err_text, "the limit is --device-profile's"),
          "need, have, the largest value:\n%s", err_text);
    CHECK(strstr(err_text, "the planner: stage 0 needs 0.23 GB on small (0.15 GB): ") &&
          strstr(err_text, " fit (estimated ") &&
          strstr(err_text, "tessera pretrain --vocab VOCAB.txt --corpus CORPUS.txt --out OUT_DIR --layers 4 --hidden 256") &&
          strstr(err_text, "(tessera plan --device-profile small.json --count 2 --layers 4 --hidden 256 --heads 4 --intermediate 1024 "
                           "--batch 32 --max-len 64 --max-predictions 10 --global-batch 128 --dtype f32 --optimizer adamw "
                           "--task pretrain --explain for more)"), "the planner's suggestion:\n%s", err_text);
    /* the layout suggested keeps the run's 4 micro-batches of 32: 128 sequences a step */
    const char *sug = strstr(err_text, "the planner: ");
    int R = sug ? flag_value(sug, "mpirun -np") : -1, M = sug ? flag_value(sug, "--accumulation") : -1;
    if (sug && M < 0) M = flag_value(sug, "--micro-batches");
    CHECK((R < 0 ? 1 : R) * (M < 0 ? 1 : M) * flag_value(sug ? sug : "", "--batch") == 128,
          "the suggestion changes the global batch: %s", sug ? sug : err_text);
    char ls[512];
    list_dir("r1", ls, sizeof ls);
    CHECK(!ls[0] && !exists("r1") && strstr(err_text, "removed the unfinished --out r1"),
          "the refused run's --out is left behind: '%s'", ls);
    /* tessera run: the batch of a model directory on that device */
    write_profile("tiny.json", "tiny", 200e3);
    rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out m %s --batch 4", TINY);
    CHECK_RAN(rc, 0);
    ts_tensor *ids = ts_tensor_new(TS_I64, 2, (int64_t[]){64, 32});
    memset(ts_tensor_data(ids), 0, 64 * 32 * 8);
    char in[300];
    snprintf(in, sizeof in, "%s/in.safetensors", dir);
    CHECK_OK(ts_safetensors_save(in, 1, (const char *[]){"input_ids"}, (const ts_tensor *const *)&ids, NULL));
    ts_tensor_free(ids);
    rc = tessera(NULL, "run --model m --inputs in.safetensors --outputs out.safetensors --device-profile tiny.json");
    CHECK_FAILS(rc, "the program needs");
    CHECK(strstr(err_text, "the planner: ") && strstr(err_text, "--task infer"), "run's suggestion:\n%s", err_text);
    CHECK(!exists("out.safetensors"), "run wrote its outputs");
}

/* BERT-Base-sized (its arena: gigabytes) on one 0.9 GB device: refused, its memory never touched. */
static void test_refusal_large(void) {
    write_profile("ipu.json", "ipu-like", 900e6);
    double t0 = tu_now();
    int rc = tessera(NULL, "pretrain --vocab vocab.txt --corpus corpus.txt --out r2 --layers 12 --hidden 768 --heads 12 "
                           "--intermediate 3072 --max-len 128 --batch 32 --threads 1 --device-profile ipu.json");
    double took = tu_now() - t0;
    CHECK_FAILS(rc, "the program needs");
    CHECK(strstr(err_text, "the planner: "), "the planner's suggestion:\n%s", err_text);
    /* one device without clipping: the compiler and the planner both free the gradients in the
     * backward, and need the same */
    const char *c = strstr(err_text, "the program needs "), *p = strstr(err_text, "stage 0 needs ");
    double gib = c ? atof(c + strlen("the program needs ")) : 0, gb = p ? atof(p + strlen("stage 0 needs ")) : 0;
    CHECK(gib > 1 && fabs(gib * 1.073741824 - gb) < 0.02 && strstr(err_text, "gradients 0.00") &&
              !strstr(err_text, "the closest: no layout"),
          "the compiler's %.2f GiB against the planner's %.2f GB:\n%s", gib, gb, err_text);
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru); /* this case runs in its own process: its children are the commands */
    CHECK(ru.ru_maxrss < 300 * 1024, "peak RSS %ld MB: the arena was touched", ru.ru_maxrss / 1024);
    printf("refusal of BERT-Base batch 32: %.1f s, peak RSS %ld MB\n", took, ru.ru_maxrss / 1024);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (cli_setup("test_cli_plan")) return 1;
    RUN(test_setup);
    RUN(test_refusal_large);
    RUN(test_refusal);
    RUN(test_errors);
    RUN(test_h200);
    RUN(test_clipping);
    RUN(test_global_batch);
    RUN(test_vocab);
    RUN(test_pod16);
    RUN(test_precision);
    RUN(test_json);
    RUN(test_explain);
    cli_cleanup("test_cli_plan");
    return tu_finish("test_cli_plan");
}
